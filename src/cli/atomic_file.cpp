#include "spyglass/cli/atomic_file.hpp"

#include <atomic>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

namespace spyglass::cli {

namespace {

std::string directory_of(const std::string& path) {
    std::size_t slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_of(const std::string& path) {
    std::size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

} // namespace

Result<void> write_file_atomically(const std::string& path,
                                   const std::function<Result<void>(std::FILE*)>& write) {
    if (path == "-") {
        if (auto written = write(stdout); !written) return written;
        if (std::fflush(stdout) != 0)
            return fail(Errc::io, "cannot write to standard output: {}", std::strerror(errno));
        return {};
    }
    static std::atomic<unsigned> counter{0};
    const std::string directory = directory_of(path);
    // Hidden, and named after the file: a glob for the real names does not match it.
    std::string temp = directory + "/." + base_of(path) + ".tmp-" + std::to_string(::getpid()) +
                       "-" + std::to_string(counter.fetch_add(1));
    int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return fail(Errc::io, "cannot write {}: {}", path, std::strerror(errno));
    std::FILE* stream = ::fdopen(fd, "w");
    if (stream == nullptr) {
        int error = errno;
        ::close(fd);
        ::unlink(temp.c_str());
        return fail(Errc::io, "cannot write {}: {}", path, std::strerror(error));
    }
    Result<void> written = write(stream);
    if (written) {
        bool ok = std::fflush(stream) == 0 && !std::ferror(stream) && ::fsync(fd) == 0;
        int error = errno;
        if (std::fclose(stream) != 0 && ok) {
            ok = false;
            error = errno;
        }
        stream = nullptr;
        if (!ok) written = fail(Errc::io, "writing {} failed: {}", path, std::strerror(error));
    }
    if (stream != nullptr) std::fclose(stream);
    if (written && ::rename(temp.c_str(), path.c_str()) != 0)
        written = fail(Errc::io, "cannot write {}: {}", path, std::strerror(errno));
    if (!written) {
        ::unlink(temp.c_str());
        return written;
    }
    // The rename itself on disk, so a crash right after cannot bring the old file back.
    int dir = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
        ::fsync(dir);
        ::close(dir);
    }
    return {};
}

} // namespace spyglass::cli
