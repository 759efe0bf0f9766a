// Where an output goes: the one rule every output path follows (record -o, --raw, report -o,
// diff -o, the --window files, the SIGUSR1 flush).
//
// The symbolic links of the last component are followed here, one hop at a time, so that a
// link stays a link and its target is replaced. A hop is refused where the kernel's own
// fs.protected_symlinks would refuse it: a link in a sticky world-writable directory (/tmp)
// owned neither by us (the effective user) nor by the directory's owner. What the path names
// then decides how it is written:
// - a regular file, or nothing yet: a temporary file beside it (a random name, created with
//   O_CREAT|O_EXCL|O_NOFOLLOW in the directory opened once), renamed over it;
// - a FIFO, a character device, a socket: written in place, never replaced;
// - "-", /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N: that descriptor;
// - a directory, a block device: refused.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <sys/stat.h>

#include "spyglass/error.hpp"

namespace spyglass::delivery {

// A temporary file created beside a destination.
struct TemporaryFile {
    int fd = -1;
    std::string name; // in the destination's directory
    std::string path; // the directory and the name, for messages and the abort cleanup
};

class Destination {
  public:
    enum class Kind : std::uint8_t {
        standard_output, // "-"
        descriptor,      // a descriptor path: descriptor() is written
        in_place,        // a FIFO, a character device, a socket: opened and written where it is
        replace,         // a regular file or a new name: a temporary renamed over it
    };

    // `what` names the output in messages ("the output": "cannot write the output to P: ...").
    // Refuses (Errc::io, one line) a directory, a block device, a link we may not follow, a
    // directory that cannot be opened, an existing file we may not write.
    static Result<Destination> classify(const std::string& path, std::string_view what);

    Destination() = default;
    Destination(Destination&& other) noexcept;
    Destination& operator=(Destination&& other) noexcept;
    Destination(const Destination&) = delete;
    Destination& operator=(const Destination&) = delete;
    ~Destination();

    [[nodiscard]] Kind kind() const noexcept { return kind_; }
    [[nodiscard]] const std::string& path() const noexcept { return path_; } // as given
    // What is written or replaced, the links followed.
    [[nodiscard]] const std::string& file() const noexcept { return file_; }
    [[nodiscard]] bool exists() const noexcept { return exists_; }
    [[nodiscard]] const struct stat& existing() const noexcept { return existing_; }
    [[nodiscard]] int descriptor() const noexcept { return descriptor_; }

    // Kind::in_place: opens it for writing. A FIFO without a reader is said at once; /dev/full
    // refuses a probe byte (/dev/null and /dev/zero take it).
    [[nodiscard]] Result<int> open_in_place() const;
    // Kind::replace: a new file beside file(), `.NAME.spyglass-PID-RANDOM.tmp`; a name that
    // exists already (planted, or left by a killed run) is passed over for another.
    [[nodiscard]] Result<TemporaryFile> create_temporary() const;
    // Kind::replace: renames the temporary over file() and syncs the directory.
    [[nodiscard]] Result<void> replace_with(const TemporaryFile& temporary) const;
    void remove(const TemporaryFile& temporary) const noexcept;

  private:
    template <class... Args>
    [[nodiscard]] Error cannot(fmt::format_string<Args...> format, Args&&... args) const;

    Kind kind_ = Kind::standard_output;
    std::string path_;
    std::string what_;
    std::string file_;
    std::string name_;   // file()'s last component
    int directory_ = -1; // file()'s directory (O_PATH), Kind::in_place and Kind::replace
    int descriptor_ = -1;
    bool exists_ = false;
    struct stat existing_ {};
};

// Whether a hop through a symbolic link owned by `link_owner` in a directory `directory` is
// followed by a process whose effective user is `user` (the kernel's protected_symlinks).
[[nodiscard]] bool may_follow_link(const struct stat& directory, uid_t link_owner,
                                   uid_t user) noexcept;

} // namespace spyglass::delivery
