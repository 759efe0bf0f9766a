#include "spyglass/delivery/output_file.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spyglass/signals.hpp"

namespace spyglass::delivery {

namespace {

constexpr std::size_t kBufferSize = 64 * 1024;

// Writes all of it, again after a signal: a first Ctrl-C while the profile goes down a pipe
// must not cut it.
ssize_t cookie_write(void* cookie, const char* data, std::size_t size) {
    auto fd = static_cast<int>(reinterpret_cast<std::intptr_t>(cookie));
    std::size_t done = 0;
    while (done < size) {
        ssize_t n = ::write(fd, data + done, size - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return done > 0 ? static_cast<ssize_t>(done) : -1;
        done += static_cast<std::size_t>(n);
    }
    return static_cast<ssize_t>(done);
}

int cookie_close(void*) {
    return 0; // the descriptor is OutputFile's
}

std::string errno_text(int err) {
    return std::strerror(err);
}

} // namespace

void OutputFile::abort_cleanup(std::string_view remove_path, std::string_view outcome) const {
    if (role_ == Role::whole_file) return;
    if (role_ == Role::profile)
        set_abort_cleanup(remove_path, outcome);
    else if (remove_path.empty())
        clear_abort_also_remove();
    else
        set_abort_also_remove(remove_path);
}

void OutputFile::clear_cleanup() const {
    if (role_ == Role::whole_file) return;
    if (role_ == Role::profile)
        clear_abort_cleanup();
    else
        clear_abort_also_remove();
}

Result<OutputFile> OutputFile::open(const std::string& path, Role role) {
    OutputFile file;
    file.path_ = path;
    file.role_ = role;
    const char* what = role == Role::raw_recording ? "the raw recording" : "the output";
    auto destination = Destination::classify(path, what);
    if (!destination) return std::unexpected(destination.error());
    file.destination_ = std::move(*destination);
    const Destination& to = file.destination_;
    auto cannot = [&](int err) {
        return fail(Errc::io, "cannot write {} to {}: {}", what, path, errno_text(err));
    };
    switch (to.kind()) {
    case Destination::Kind::standard_output:
    case Destination::Kind::descriptor:
        file.kind_ =
            to.kind() == Destination::Kind::standard_output ? Kind::standard_output : Kind::direct;
        file.fd_ = ::fcntl(to.kind() == Destination::Kind::standard_output ? 1 : to.descriptor(),
                           F_DUPFD_CLOEXEC, 3);
        if (file.fd_ < 0) return cannot(errno);
        file.abort_cleanup("", "nothing was written to " + file.shown());
        return file;
    case Destination::Kind::in_place: {
        file.kind_ = Kind::direct;
        auto fd = to.open_in_place();
        if (!fd) return std::unexpected(fd.error());
        file.fd_ = *fd;
        file.abort_cleanup("", "nothing was written to " + file.shown());
        return file;
    }
    case Destination::Kind::replace:
        break;
    }
    file.existed_ = to.exists();
    auto temporary = to.create_temporary();
    if (!temporary) return std::unexpected(temporary.error());
    file.temporary_ = std::move(*temporary);
    file.fd_ = std::exchange(file.temporary_.fd, -1);
    file.abort_cleanup(file.temporary_.path, file.outcome());
    if (to.exists()) {
        // The new file keeps the old one's permissions (and owner, when we may set it).
        [[maybe_unused]] int chmod_status = ::fchmod(file.fd_, to.existing().st_mode & 07777);
        if (::geteuid() == 0) {
            [[maybe_unused]] int chown_status =
                ::fchown(file.fd_, to.existing().st_uid, to.existing().st_gid);
        }
    }
    // A disk without room for one byte is found now, not after the recording.
    if (::write(file.fd_, "\n", 1) != 1 || ::ftruncate(file.fd_, 0) != 0) return cannot(errno);
    return file;
}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : path_(std::move(other.path_)), destination_(std::move(other.destination_)),
      temporary_(std::move(other.temporary_)), fd_(std::exchange(other.fd_, -1)),
      stream_(std::exchange(other.stream_, nullptr)), kind_(other.kind_), role_(other.role_),
      existed_(other.existed_), started_(other.started_), committed_(other.committed_) {
    other.temporary_ = {};
    other.committed_ = true; // the moved-from object cleans nothing up
}

OutputFile::~OutputFile() {
    discard();
}

void OutputFile::discard() noexcept {
    if (stream_ != nullptr) std::fclose(stream_);
    stream_ = nullptr;
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (!committed_) {
        destination_.remove(temporary_);
        clear_cleanup();
    }
    temporary_ = {};
}

std::string OutputFile::shown() const {
    return kind_ == Kind::standard_output ? std::string("standard output") : path_;
}

std::string OutputFile::outcome() const {
    if (kind_ == Kind::temporary)
        return existed_ ? shown() + " is unchanged" : "nothing was written to " + shown();
    if (!started_) return "nothing was written to " + shown();
    return "the profile written to " + shown() + " is incomplete";
}

Result<std::FILE*> OutputFile::begin_write() {
    if (fd_ < 0 || stream_ != nullptr) return fail(Errc::io, "{} is not open", shown());
    if (kind_ == Kind::temporary && ::lseek(fd_, 0, SEEK_SET) != 0)
        return fail(Errc::io, "cannot write {}: {}", temporary_.path, errno_text(errno));
    // The descriptor itself is the cookie: the stream does not point into this object.
    void* cookie = reinterpret_cast<void*>(static_cast<std::intptr_t>(fd_));
    stream_ = ::fopencookie(cookie, "w", {nullptr, cookie_write, nullptr, cookie_close});
    if (stream_ == nullptr)
        return fail(Errc::io, "cannot write {}: {}", shown(), errno_text(errno));
    std::setvbuf(stream_, nullptr, _IOFBF, kBufferSize);
    started_ = true;
    if (kind_ != Kind::temporary) abort_cleanup("", outcome());
    return stream_;
}

Result<int> OutputFile::begin_write_descriptor() {
    if (fd_ < 0 || stream_ != nullptr || started_) return fail(Errc::io, "{} is not open", shown());
    if (kind_ == Kind::temporary && ::lseek(fd_, 0, SEEK_SET) != 0)
        return fail(Errc::io, "cannot write {}: {}", temporary_.path, errno_text(errno));
    started_ = true;
    if (kind_ != Kind::temporary) abort_cleanup("", outcome());
    return fd_;
}

std::string OutputFile::keep_partial() {
    if (stream_ != nullptr) std::fclose(stream_);
    stream_ = nullptr;
    if (fd_ >= 0) {
        if (kind_ == Kind::temporary) ::fsync(fd_);
        ::close(fd_);
    }
    fd_ = -1;
    std::string kept = std::exchange(temporary_, {}).path;
    committed_ = true; // nothing more to clean up: the partial file is the user's now
    clear_cleanup();
    return kept;
}

Result<void> OutputFile::commit() {
    if (fd_ < 0 || (stream_ == nullptr && !started_))
        return fail(Errc::io, "{} is not open", shown());
    errno = 0;
    bool ok = true;
    int err = EIO;
    if (stream_ != nullptr) {
        ok = std::fflush(stream_) == 0 && !std::ferror(stream_);
        err = errno != 0 ? errno : EIO;
        std::fclose(stream_);
        stream_ = nullptr;
    }
    if (ok && kind_ == Kind::temporary && ::fsync(fd_) != 0) {
        ok = false;
        err = errno;
    }
    if (::close(fd_) != 0 && ok) {
        ok = false;
        err = errno;
    }
    fd_ = -1;
    if (!ok) return fail(Errc::io, "cannot write the profile: {}", errno_text(err));
    if (kind_ == Kind::temporary) {
        if (auto replaced = destination_.replace_with(temporary_); !replaced) return replaced;
        temporary_ = {};
    }
    committed_ = true;
    if (role_ == Role::profile)
        set_abort_cleanup("", "the profile was written to " + shown());
    else if (role_ == Role::raw_recording)
        clear_abort_also_remove();
    return {};
}

Result<void> OutputFile::finish(Result<void> written) {
    if (written) written = commit();
    if (written) return {};
    std::string reason = written.error().message;
    constexpr std::string_view kPrefix = "cannot write the profile: ";
    if (reason.starts_with(kPrefix)) reason.erase(0, kPrefix.size());
    std::string what = outcome();
    discard();
    if (kind_ == Kind::standard_output && reason == errno_text(EPIPE))
        return fail(Errc::io, "standard output was closed before the whole profile was written");
    return fail(Errc::io, "cannot write the profile to {}: {}; {}", shown(), reason, what);
}

} // namespace spyglass::delivery
