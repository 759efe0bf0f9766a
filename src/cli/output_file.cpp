#include "spyglass/cli/output_file.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace spyglass::cli {

Result<OutputFile> OutputFile::open(const std::string& path) {
    OutputFile file;
    file.path_ = path;
    if (path == "-") {
        file.is_stdout_ = true;
        file.stream_ = stdout;
        return file;
    }
    struct stat existing {};
    bool existed = ::stat(path.c_str(), &existing) == 0;
    if (existed && S_ISDIR(existing.st_mode))
        return fail(Errc::io, "cannot write the output to {}: it is a directory", path);
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return fail(Errc::io, "cannot write the output to {}: {}", path, std::strerror(errno));
    file.stream_ = ::fdopen(fd, "w");
    if (file.stream_ == nullptr) {
        ::close(fd);
        return fail(Errc::io, "cannot write the output to {}: {}", path, std::strerror(errno));
    }
    file.created_ = !existed;
    return file;
}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : path_(std::move(other.path_)), stream_(std::exchange(other.stream_, nullptr)),
      created_(other.created_), committed_(other.committed_), is_stdout_(other.is_stdout_) {}

OutputFile::~OutputFile() {
    if (stream_ != nullptr && !is_stdout_) std::fclose(stream_);
    if (!committed_ && created_ && !path_.empty()) ::unlink(path_.c_str());
}

Result<std::FILE*> OutputFile::begin_write() {
    if (stream_ == nullptr) return fail(Errc::io, "{} is closed", path_);
    if (!is_stdout_) {
        std::fflush(stream_);
        int fd = ::fileno(stream_);
        struct stat info {};
        if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && ::ftruncate(fd, 0) != 0)
            return fail(Errc::io, "cannot write {}: {}", path_, std::strerror(errno));
        std::rewind(stream_);
    }
    return stream_;
}

Result<void> OutputFile::commit() {
    if (stream_ == nullptr) return fail(Errc::io, "{} is closed", path_);
    bool ok = std::fflush(stream_) == 0 && !std::ferror(stream_);
    int err = errno;
    if (!is_stdout_) {
        ok = std::fclose(stream_) == 0 && ok;
        stream_ = nullptr;
    }
    committed_ = true;
    if (!ok) return fail(Errc::io, "writing {} failed: {}", path_, std::strerror(err));
    return {};
}

} // namespace spyglass::cli
