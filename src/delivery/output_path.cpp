#include "spyglass/delivery/output_path.hpp"

#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <pwd.h>
#include <sys/random.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace spyglass::delivery {

namespace {

constexpr int kMaxLinks = 40;          // the kernel's own limit
constexpr int kTemporaryAttempts = 16; // names taken already before we give up

std::string directory_of(const std::string& path) {
    std::size_t slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

std::string name_of(const std::string& path) {
    std::size_t slash = path.rfind('/');
    std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    return name.empty() ? "." : name;
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

std::string user_name(uid_t uid) {
    struct passwd entry {};
    struct passwd* found = nullptr;
    char buffer[1024];
    if (::getpwuid_r(uid, &entry, buffer, sizeof buffer, &found) == 0 && found != nullptr)
        return fmt::format("{} (uid {})", found->pw_name, uid);
    return fmt::format("uid {}", uid);
}

std::string random_suffix() {
    static constexpr std::string_view kAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
    unsigned char bytes[12] = {};
    std::size_t got = 0;
    while (got < sizeof bytes) {
        ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += static_cast<std::size_t>(n);
    }
    std::string suffix;
    for (unsigned char byte : bytes)
        suffix += kAlphabet[byte % kAlphabet.size()];
    return suffix;
}

// Opens the directory `path` names, walking it one component at a time so that every link on
// the way, not only the last component's, meets the protected_symlinks rule: /tmp/d/prof.txt
// with /tmp/d another user's link to /etc must not write into /etc. The descriptor, or the
// reason it cannot be opened.
std::expected<int, std::string> open_directory(const std::string& path) {
    std::vector<std::string> pending; // components still to walk, the next one last
    auto push_components = [&pending](std::string_view text) {
        std::vector<std::string> parts;
        for (std::size_t at = 0; at < text.size();) {
            std::size_t slash = text.find('/', at);
            if (slash == std::string_view::npos) slash = text.size();
            if (slash > at) parts.emplace_back(text.substr(at, slash - at));
            at = slash + 1;
        }
        pending.insert(pending.end(), parts.rbegin(), parts.rend());
    };
    auto reason = [](int err) { return std::unexpected(std::string(std::strerror(err))); };
    int fd = ::open(path.starts_with('/') ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return reason(errno);
    std::string walked = path.starts_with('/') ? "" : ".";
    push_components(path);
    for (int links = 0; !pending.empty();) {
        std::string name = std::move(pending.back());
        pending.pop_back();
        if (name == ".") continue;
        struct stat info {};
        if (::fstatat(fd, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) {
            int err = errno;
            ::close(fd);
            return reason(err);
        }
        if (S_ISLNK(info.st_mode)) {
            auto fail_with = [&fd](auto error) {
                ::close(fd);
                return error;
            };
            if (++links > kMaxLinks) return fail_with(reason(ELOOP));
            struct stat directory {};
            if (::fstat(fd, &directory) != 0) return fail_with(reason(errno));
            if (!may_follow_link(directory, info.st_uid, ::geteuid()))
                return fail_with(std::unexpected(fmt::format(
                    "{}/{} is a symbolic link owned by {} in the sticky world-writable directory "
                    "{}: not followed, as it is neither yours nor the directory owner's (the "
                    "kernel's protected_symlinks rule)",
                    walked, name, user_name(info.st_uid), walked.empty() ? "/" : walked)));
            char target[PATH_MAX];
            ssize_t n = ::readlinkat(fd, name.c_str(), target, sizeof target - 1);
            if (n <= 0) return fail_with(reason(n < 0 ? errno : EINVAL));
            std::string_view link(target, static_cast<std::size_t>(n));
            push_components(link);
            if (link.starts_with('/')) {
                ::close(fd);
                fd = ::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0) return reason(errno);
                walked.clear();
            }
            continue;
        }
        int next = ::openat(fd, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int err = errno;
        ::close(fd);
        if (next < 0) return reason(err);
        fd = next;
        walked += "/" + name;
    }
    return fd;
}

} // namespace

bool may_follow_link(const struct stat& directory, uid_t link_owner, uid_t user) noexcept {
    bool shared = (directory.st_mode & S_ISVTX) != 0 && (directory.st_mode & S_IWOTH) != 0;
    return !shared || link_owner == user || link_owner == directory.st_uid;
}

template <class... Args>
Error Destination::cannot(fmt::format_string<Args...> format, Args&&... args) const {
    return Error{Errc::io,
                 fmt::format("cannot write {}{}{}: {}", what_, what_.empty() ? "" : " to ", path_,
                             fmt::format(format, std::forward<Args>(args)...))};
}

Result<Destination> Destination::classify(const std::string& path, std::string_view what) {
    Destination out;
    out.path_ = path;
    out.what_ = what;
    if (path == "-") return out;
    if (int fd = descriptor_path(path); fd >= 0) {
        out.kind_ = Kind::descriptor;
        out.descriptor_ = fd;
        return out;
    }
    std::string current = path;
    for (int hops = 0;; ++hops) {
        if (hops == kMaxLinks) return std::unexpected(out.cannot("{}", std::strerror(ELOOP)));
        if (out.directory_ >= 0) ::close(out.directory_);
        auto opened = open_directory(directory_of(current));
        if (!opened) return std::unexpected(out.cannot("{}", opened.error()));
        out.directory_ = *opened;
        out.file_ = current;
        out.name_ = name_of(current);
        struct stat info {};
        if (::fstatat(out.directory_, out.name_.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno != ENOENT) return std::unexpected(out.cannot("{}", std::strerror(errno)));
            out.kind_ = Kind::replace;
            return out;
        }
        if (!S_ISLNK(info.st_mode)) {
            out.exists_ = true;
            out.existing_ = info;
            break;
        }
        struct stat directory {};
        if (::fstat(out.directory_, &directory) != 0)
            return std::unexpected(out.cannot("{}", std::strerror(errno)));
        if (!may_follow_link(directory, info.st_uid, ::geteuid()))
            return std::unexpected(out.cannot(
                "{} is a symbolic link owned by {} in the sticky world-writable directory {}: "
                "not followed, as it is neither yours nor the directory owner's (the kernel's "
                "protected_symlinks rule)",
                current, user_name(info.st_uid), directory_of(current)));
        char target[PATH_MAX];
        ssize_t n = ::readlinkat(out.directory_, out.name_.c_str(), target, sizeof target - 1);
        if (n <= 0) return std::unexpected(out.cannot("{}", std::strerror(n < 0 ? errno : EINVAL)));
        std::string next(target, static_cast<std::size_t>(n));
        if (next.front() != '/') next = directory_of(current) + "/" + next;
        if (int fd = descriptor_path(next); fd >= 0) {
            ::close(std::exchange(out.directory_, -1));
            out.kind_ = Kind::descriptor;
            out.descriptor_ = fd;
            out.file_ = next;
            return out;
        }
        // Another process's descriptors: what they point to is not a path we can check.
        if (next.starts_with("/proc/"))
            return std::unexpected(out.cannot("{} links to {}: only /proc/self/fd/N is written "
                                              "through a link into /proc",
                                              current, next));
        current = std::move(next);
    }
    const mode_t mode = out.existing_.st_mode;
    if (S_ISDIR(mode)) return std::unexpected(out.cannot("it is a directory"));
    if (S_ISBLK(mode)) return std::unexpected(out.cannot("it is a block device"));
    if (!S_ISREG(mode)) {
        out.kind_ = Kind::in_place;
        return out;
    }
    if (::faccessat(out.directory_, out.name_.c_str(), W_OK, 0) != 0)
        return std::unexpected(out.cannot("{}", std::strerror(errno)));
    out.kind_ = Kind::replace;
    return out;
}

Destination::Destination(Destination&& other) noexcept
    : kind_(other.kind_), path_(std::move(other.path_)), what_(std::move(other.what_)),
      file_(std::move(other.file_)), name_(std::move(other.name_)),
      directory_(std::exchange(other.directory_, -1)), descriptor_(other.descriptor_),
      exists_(other.exists_), existing_(other.existing_) {}

Destination& Destination::operator=(Destination&& other) noexcept {
    if (this == &other) return *this;
    if (directory_ >= 0) ::close(directory_);
    kind_ = other.kind_;
    path_ = std::move(other.path_);
    what_ = std::move(other.what_);
    file_ = std::move(other.file_);
    name_ = std::move(other.name_);
    directory_ = std::exchange(other.directory_, -1);
    descriptor_ = other.descriptor_;
    exists_ = other.exists_;
    existing_ = other.existing_;
    return *this;
}

Destination::~Destination() {
    if (directory_ >= 0) ::close(directory_);
}

Result<int> Destination::open_in_place() const {
    const bool fifo = S_ISFIFO(existing_.st_mode);
    // O_NOFOLLOW: a link put in its place since classify() is not followed.
    int fd = ::openat(directory_, name_.c_str(),
                      O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | (fifo ? O_NONBLOCK : 0));
    if (fd < 0 && fifo && errno == ENXIO)
        return fail(Errc::io,
                    "no reader on FIFO {}: start the program that reads it first (e.g. cat {} > "
                    "profile), then spyglass",
                    path_, path_);
    if (fd < 0) return std::unexpected(cannot("{}", std::strerror(errno)));
    struct stat opened {};
    if (::fstat(fd, &opened) != 0 || (opened.st_mode & S_IFMT) != (existing_.st_mode & S_IFMT) ||
        opened.st_rdev != existing_.st_rdev) {
        ::close(fd);
        return std::unexpected(cannot("{} was replaced while it was opened", file_));
    }
    if (fifo) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    // /dev/null, /dev/zero, /dev/full take one byte without harm: /dev/full refuses it.
    const dev_t device = opened.st_rdev;
    if (S_ISCHR(opened.st_mode) && major(device) == 1 &&
        (minor(device) == 3 || minor(device) == 5 || minor(device) == 7) &&
        ::write(fd, "\n", 1) != 1) {
        int err = errno;
        ::close(fd);
        return std::unexpected(cannot("{}", std::strerror(err)));
    }
    return fd;
}

Result<TemporaryFile> Destination::create_temporary() const {
    // Hidden, and named after the file: a glob for the real names does not match it.
    const std::string prefix =
        "." + name_.substr(0, 200) + ".spyglass-" + std::to_string(::getpid()) + "-";
    TemporaryFile temporary;
    int err = EEXIST;
    for (int attempt = 0; attempt < kTemporaryAttempts && err == EEXIST; ++attempt) {
        temporary.name = prefix + random_suffix() + ".tmp";
        temporary.fd = ::openat(directory_, temporary.name.c_str(),
                                O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (temporary.fd >= 0) {
            temporary.path = directory_of(file_) + "/" + temporary.name;
            return temporary;
        }
        err = errno;
    }
    if (err == ENOENT) return std::unexpected(cannot("{}", std::strerror(err)));
    return std::unexpected(cannot("cannot create a file in {} (the profile is written beside "
                                  "its destination, then renamed over it): {}",
                                  directory_of(file_), std::strerror(err)));
}

Result<void> Destination::replace_with(const TemporaryFile& temporary) const {
    if (::renameat(directory_, temporary.name.c_str(), directory_, name_.c_str()) != 0)
        return fail(Errc::io, "cannot rename {} to {}: {}", temporary.path, file_,
                    std::strerror(errno));
    // The rename itself reaches the disk with its directory.
    int directory = ::openat(directory_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (directory >= 0) {
        ::fsync(directory);
        ::close(directory);
    }
    return {};
}

void Destination::remove(const TemporaryFile& temporary) const noexcept {
    if (!temporary.name.empty()) ::unlinkat(directory_, temporary.name.c_str(), 0);
}

} // namespace spyglass::delivery
