// What an off-CPU thread waits for, as the samples carry it: a kind (the part that --waits=kind
// keeps), the system call, and what it waits on (a peer address, a path, a lock's address).
// Interned like frames: a sample refers to its wait by a small integer; 0 is "not known" (an
// on-CPU sample, --no-waits, or nothing could be read).
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "spyglass/model/ids.hpp"

namespace spyglass::model {

enum class WaitKind : std::uint8_t {
    unknown,     // no reason read
    cpu_starved, // runnable, waiting for a CPU
    sleep,       // nanosleep / clock_nanosleep / select with no descriptors
    socket,      // a socket: recv, accept, connect, send...
    pipe,        // a pipe or FIFO
    file,        // a regular file or a device
    io,          // uninterruptible disk wait (D)
    gil,         // the interpreter's GIL
    lock,        // a futex that is not the GIL (threading.Lock, Condition, queue...)
    poll,        // poll / select / epoll_wait on several descriptors
    idle_loop,   // an asyncio (or other) event loop idle in epoll_wait
    child,       // wait4 / waitid
    stopped,     // T: stopped by a signal or a tracer
    syscall,     // some other system call
    file_lock,   // flock / fcntl(F_SETLKW) on a file
    event,       // an eventfd, timerfd, signalfd or inotify descriptor
    kernel,      // blocked in the kernel outside a system call (a page fault...): wchan
};

// How much of a wait the samples carry (--no-waits, --waits=kind, the default).
enum class WaitDetail : std::uint8_t {
    off,  // no reason is read
    kind, // the kind only: no system call, no peer, path or address
    full, // kind, system call and target
};

[[nodiscard]] const char* wait_kind_name(WaitKind kind) noexcept;

struct Wait {
    WaitKind kind = WaitKind::unknown;
    StringId syscall{}; // "recvfrom", "futex"... (in the frame table's strings)
    StringId target{};  // "tcp 127.0.0.1:5432", "/var/lib/app.db", "lock 0x7f..."
    friend bool operator==(const Wait&, const Wait&) = default;
};

class WaitTable {
  public:
    WaitTable() { intern({}); } // id 0 is "not known"
    WaitId intern(const Wait& wait);
    void clear(); // back to "not known" alone
    [[nodiscard]] const Wait& get(WaitId id) const noexcept { return waits_[id.value]; }
    [[nodiscard]] std::size_t size() const noexcept { return waits_.size(); }

  private:
    struct Hash {
        std::size_t operator()(const Wait& w) const noexcept {
            return (std::size_t{w.syscall.value} * 0x9E3779B97F4A7C15ull) ^
                   (std::size_t{w.target.value} << 8) ^ static_cast<std::size_t>(w.kind);
        }
    };
    std::vector<Wait> waits_;
    std::unordered_map<Wait, WaitId, Hash> index_;
};

} // namespace spyglass::model
