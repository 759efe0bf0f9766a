// What CPython's own structures say about a thread blocked in futex(): whether the word it waits
// on belongs to the GIL, and which synchronisation primitive its innermost Python frames are
// in (queue.Queue.get, threading.Event.wait...).
//
// Where the GIL's futex words are, per version: a thread that waits for the GIL blocks on the
// condition variable or the mutex of `struct _gil_runtime_state` (3.7+; FORCE_SWITCHING adds a
// second pair, in the same struct), so every word of that struct is the GIL's. The struct is
// _PyRuntime.ceval.gil on 3.7 - 3.11 and *interp->ceval.gil on 3.12+ (one per interpreter that
// has its own); on 3.6 its fields are four statics (gil_cond, gil_mutex, switch_cond,
// switch_mutex); on 2.7 the GIL is an ordinary lock, `interpreter_lock`, a pointer to a sem_t.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "spyglass/process/memory.hpp"
#include "spyglass/python/target.hpp"

namespace spyglass::python {

class GilWords {
  public:
    GilWords(process::RemoteMemory& memory, const TargetInfo& target);

    // Whether the futex word at `futex` belongs to the GIL of `interp` (the waiting thread's
    // interpreter). The first time, reads what it needs of the target (2.7's lock pointer,
    // 3.12+'s interpreter GIL pointer) and remembers it once it is set.
    bool is_gil(Address futex, Address interp);
    // Whether the GIL's words can be known at all for this target (a stripped 2.7 or 3.6
    // has no symbols for them).
    [[nodiscard]] bool known() const noexcept;

  private:
    struct Range {
        Address at = 0;
        std::uint64_t size = 0;
        [[nodiscard]] bool contains(Address a) const noexcept { return a >= at && a - at < size; }
    };
    process::RemoteMemory& memory_;
    const TargetInfo& target_;
    std::vector<Range> fixed_;                      // known at attach
    std::optional<Range> lock_;                     // 2.7, once interpreter_lock is set
    std::unordered_map<Address, Range> per_interp_; // 3.12+
};

// Whether a futex word other than the GIL's identifies the lock a thread waits for: up to
// 3.12 a threading.Lock's futex word is its own sem_t; from 3.13 threads park on a semaphore of
// their own (Python/parking_lot.c), whose address says nothing of the lock.
[[nodiscard]] bool futex_identifies_lock(const TargetInfo& target) noexcept;

// The primitive a frame of the standard library's synchronisation modules is: "queue.Queue.get",
// "threading.Event.wait", "threading.Thread.join"; nullopt for any other frame. `function` is the
// code object's (qualified, on 3.11+) name, `file` its file name. Of the innermost frames of a
// thread blocked on a lock, the outermost that is one of these says what it waits in.
[[nodiscard]] std::optional<std::string> sync_primitive(std::string_view function,
                                                        std::string_view file);

// Whether a frame is an asyncio event loop's wait for its next event (BaseEventLoop._run_once):
// a thread blocked in epoll_wait / select under it is an idle loop, not a wait on one peer.
[[nodiscard]] bool is_event_loop_frame(std::string_view function, std::string_view file) noexcept;

} // namespace spyglass::python
