#include "spyglass/cli/output_file.hpp"

#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdint>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "spyglass/cli/signals.hpp"

namespace spyglass::cli {

namespace {

constexpr std::size_t kBufferSize = 64 * 1024;

std::string directory_of(const std::string& path) {
    std::size_t slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

std::string name_of(const std::string& path) {
    std::size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The file a path names once every symbolic link on its last component is followed (the link
// stays, its target is replaced); a dangling link gives the path it points to.
std::string follow_links(const std::string& path) {
    std::string current = path;
    for (int hops = 0; hops < 40; ++hops) {
        struct stat info {};
        if (::lstat(current.c_str(), &info) != 0 || !S_ISLNK(info.st_mode)) return current;
        char target[PATH_MAX];
        ssize_t n = ::readlink(current.c_str(), target, sizeof target - 1);
        if (n <= 0) return current;
        std::string next(target, static_cast<std::size_t>(n));
        if (next.front() != '/') next = directory_of(current) + "/" + next;
        if (next.starts_with("/proc/")) return next; // a descriptor: written as it is
        current = std::move(next);
    }
    return current;
}

// N for /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N: an open descriptor to write to.
int descriptor_path(const std::string& path) {
    if (path == "/dev/stdout") return 1;
    if (path == "/dev/stderr") return 2;
    for (std::string_view prefix : {"/dev/fd/", "/proc/self/fd/"}) {
        if (!path.starts_with(prefix)) continue;
        int fd = -1;
        std::string_view digits = std::string_view(path).substr(prefix.size());
        auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), fd);
        if (ec == std::errc() && end == digits.data() + digits.size() && fd >= 0) return fd;
    }
    return -1;
}

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
    if (role_ == Role::profile)
        set_abort_cleanup(remove_path, outcome);
    else if (remove_path.empty())
        clear_abort_also_remove();
    else
        set_abort_also_remove(remove_path);
}

void OutputFile::clear_cleanup() const {
    if (role_ == Role::profile)
        clear_abort_cleanup();
    else
        clear_abort_also_remove();
}

Result<OutputFile> OutputFile::open(const std::string& path, Role role) {
    OutputFile file;
    file.path_ = path;
    file.role_ = role;
    const char* what = role == Role::profile ? "the output" : "the raw recording";
    auto cannot = [&](int err, std::string_view why = {}) {
        return fail(Errc::io, "cannot write {} to {}: {}{}", what, path, why, errno_text(err));
    };
    if (path == "-" || descriptor_path(path) >= 0) {
        int fd = path == "-" ? 1 : descriptor_path(path);
        file.kind_ = path == "-" ? Kind::standard_output : Kind::direct;
        file.fd_ = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (file.fd_ < 0) return cannot(errno);
        file.abort_cleanup("", "nothing was written to " + file.shown());
        return file;
    }
    file.destination_ = follow_links(path);
    struct stat existing {};
    bool exists = ::stat(file.destination_.c_str(), &existing) == 0;
    if (exists && S_ISDIR(existing.st_mode))
        return fail(Errc::io, "cannot write {} to {}: it is a directory", what, path);
    if (exists && S_ISBLK(existing.st_mode))
        return fail(Errc::io, "cannot write {} to {}: it is a block device", what, path);
    if (exists && !S_ISREG(existing.st_mode)) {
        // A FIFO, a character device, a socket: rename cannot replace it, write it directly.
        file.kind_ = Kind::direct;
        bool fifo = S_ISFIFO(existing.st_mode);
        file.fd_ = ::open(file.destination_.c_str(),
                          O_WRONLY | O_CLOEXEC | O_NOCTTY | (fifo ? O_NONBLOCK : 0));
        if (file.fd_ < 0 && fifo && errno == ENXIO)
            return fail(Errc::io,
                        "no reader on FIFO {}: start the program that reads it first (e.g. cat "
                        "{} > profile), then spyglass",
                        path, path);
        if (file.fd_ < 0) return cannot(errno);
        if (fifo) ::fcntl(file.fd_, F_SETFL, ::fcntl(file.fd_, F_GETFL) & ~O_NONBLOCK);
        // /dev/null, /dev/zero, /dev/full take one byte without harm: /dev/full refuses it.
        if (S_ISCHR(existing.st_mode) && major(existing.st_rdev) == 1 &&
            (minor(existing.st_rdev) == 3 || minor(existing.st_rdev) == 5 ||
             minor(existing.st_rdev) == 7) &&
            ::write(file.fd_, "\n", 1) != 1)
            return cannot(errno);
        file.abort_cleanup("", "nothing was written to " + file.shown());
        return file;
    }
    if (exists && ::access(file.destination_.c_str(), W_OK) != 0) return cannot(errno);
    file.existed_ = exists;
    // Beside the destination, so that rename replaces it in one step.
    std::string name = name_of(file.destination_).substr(0, 200);
    file.temporary_ = directory_of(file.destination_) + "/." + name + ".spyglass-" +
                      std::to_string(::getpid()) + ".tmp";
    for (int attempt = 0; attempt < 2; ++attempt) {
        file.fd_ = ::open(file.temporary_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        // Left by an earlier spyglass that had our PID and was killed: ours to replace.
        if (file.fd_ < 0 && errno == EEXIST && attempt == 0) {
            ::unlink(file.temporary_.c_str());
            continue;
        }
        break;
    }
    if (file.fd_ < 0) {
        int err = errno;
        file.temporary_.clear();
        if (err == ENOENT) return cannot(err);
        return cannot(err, fmt::format("cannot create a file in {} (the profile is written beside "
                                       "its destination, then renamed over it): ",
                                       directory_of(file.destination_)));
    }
    file.abort_cleanup(file.temporary_, file.outcome());
    if (exists) {
        // The new file keeps the old one's permissions (and owner, when we may set it).
        [[maybe_unused]] int chmod_status = ::fchmod(file.fd_, existing.st_mode & 07777);
        if (::geteuid() == 0) {
            [[maybe_unused]] int chown_status =
                ::fchown(file.fd_, existing.st_uid, existing.st_gid);
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
    other.temporary_.clear();
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
        if (!temporary_.empty()) ::unlink(temporary_.c_str());
        clear_cleanup();
    }
    temporary_.clear();
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
        return fail(Errc::io, "cannot write {}: {}", temporary_, errno_text(errno));
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
        return fail(Errc::io, "cannot write {}: {}", temporary_, errno_text(errno));
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
    std::string kept = std::exchange(temporary_, std::string());
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
        if (::rename(temporary_.c_str(), destination_.c_str()) != 0)
            return fail(Errc::io, "cannot rename {} to {}: {}", temporary_, destination_,
                        errno_text(errno));
        temporary_.clear();
        // The rename itself reaches the disk with its directory.
        int dir = ::open(directory_of(destination_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir >= 0) {
            ::fsync(dir);
            ::close(dir);
        }
    }
    committed_ = true;
    if (role_ == Role::profile)
        set_abort_cleanup("", "the profile was written to " + shown());
    else
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

} // namespace spyglass::cli
