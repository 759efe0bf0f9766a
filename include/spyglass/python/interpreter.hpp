// A CPython process seen from outside: its thread states, their OS thread ids, the GIL holder,
// and a stack walker for its frame model. Built by attach() (discovery) or, in tests, from a
// TargetInfo over fake memory.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <sys/types.h>

#include "spyglass/error.hpp"
#include "spyglass/process/memory.hpp"
#include "spyglass/process/pid_namespace.hpp"
#include "spyglass/python/stack_walker.hpp"
#include "spyglass/python/struct_view.hpp"
#include "spyglass/python/target.hpp"

namespace spyglass::python {

inline constexpr std::size_t kMaxInterpreters = 64;
inline constexpr std::size_t kMaxThreads = 4096;

struct ThreadRecord {
    Address tstate = 0;
    Address interp = 0;
    std::uint64_t thread_id = 0;    // pthread_t, as threading.get_ident() reports it
    pid_t tid = 0;                  // kernel thread id; 0 if it could not be found
    Address frame = 0;              // the innermost frame (3.11 / 3.12: cframe->current_frame)
    Address cframe = 0;             // 3.11 / 3.12: tstate->cframe
    Address datastack_chunk = 0;    // 3.11+
    Address datastack_top = 0;      // 3.11+
    std::int8_t holds_gil = -1;     // 1 / 0, or -1 when the GIL could not be read
    std::uint32_t interp_index = 0; // 0 = newest interpreter
};

// Which thread states a read of the thread list must fetch again: a thread that has not run
// since the previous read cannot have changed its own state (the sampler knows from the
// scheduler's events).
class ThreadRefresh {
  public:
    virtual ~ThreadRefresh() = default;
    [[nodiscard]] virtual bool stale(pid_t tid) const = 0;
};

enum class ThreadListFault : std::uint8_t { none, loops, empty };
// What the fault means, for a warning or a note: `threads` is how many were read.
std::string thread_list_fault_text(ThreadListFault fault, std::size_t threads);

class PythonProcess {
  public:
    PythonProcess(std::shared_ptr<process::RemoteMemory> memory, TargetInfo target);
    ~PythonProcess();

    // Finds the interpreter in a live process (see discovery.hpp) and reads it through
    // process_vm_readv.
    static Result<std::unique_ptr<PythonProcess>> attach(pid_t pid);
    // Attaches with what an earlier discovery learned (a launched interpreter that was not
    // initialized yet: no need to read its ELF files again). Fails with not_found while the
    // interpreter is still not initialized.
    static Result<std::unique_ptr<PythonProcess>> attach(TargetInfo target);

    [[nodiscard]] const TargetInfo& target() const noexcept { return target_; }
    [[nodiscard]] const Layout& layout() const noexcept { return target_.layout; }
    [[nodiscard]] process::RemoteMemory& memory() noexcept { return *memory_; }
    [[nodiscard]] const std::shared_ptr<process::RemoteMemory>& shared_memory() const noexcept {
        return memory_;
    }
    [[nodiscard]] StackWalker& walker() noexcept { return *walker_; }
    [[nodiscard]] pid_t pid() const noexcept { return target_.pid; }

    // Every thread state of every interpreter (newest interpreter first, each list newest thread
    // first), with each thread's innermost frame and whether it holds the GIL. Bounded by
    // kMaxInterpreters and kMaxThreads; a cycle ends a list. After the first call, one batched
    // read fetches everything when the lists have not changed since the previous call.
    // With `refresh`, the batch skips the thread states it says are not stale and keeps what
    // the previous read found for them (new or gone threads need a read without it: the
    // shape of the lists is then only checked at their heads).
    process::ReadStatus read_threads(std::vector<ThreadRecord>& out,
                                     const ThreadRefresh* refresh = nullptr);
    // For one-shot reads (attach, dump): a target that starts and ends threads thousands of
    // times a second frees a thread state while its list is walked, which reads as a racing
    // error (bad address, corrupt data). Walks again, up to `attempts` times in all; other
    // errors are returned at once.
    process::ReadStatus read_threads_settled(std::vector<ThreadRecord>& out, int attempts = 64);

    // Reads one thread state again (and, on 3.11 / 3.12, its cframe's current frame): the
    // pointers a stack walk starts from, after the thread moved on. Keeps the GIL flag when the
    // thread state does not carry it.
    process::ReadStatus reread_thread(ThreadRecord& record);

    // What the latest walk of the thread lists found wrong with them (corrupt memory): a list
    // that points back into itself (the threads past that point cannot be reached), or no
    // thread state at all (a live interpreter has one per thread, the main one included).
    [[nodiscard]] ThreadListFault thread_list_fault() const noexcept { return list_fault_; }
    // How often read_threads could use its one-batch path, and how often it had to walk.
    [[nodiscard]] std::uint64_t fast_thread_reads() const noexcept { return fast_reads_; }
    [[nodiscard]] std::uint64_t slow_thread_reads() const noexcept { return slow_reads_; }

    // The addresses of the interpreter states, newest first.
    process::ReadStatus read_interpreters(std::vector<Address>& out);

    // The thread state holding `interp`'s GIL, 0 when nobody holds it.
    std::expected<Address, ReadError> gil_holder(Address interp);

  private:
    pid_t tid_for(Address tstate, std::uint64_t thread_id);
    process::ReadStatus read_threads_slowly(std::vector<ThreadRecord>& out);
    bool read_threads_fast(std::vector<ThreadRecord>& out, const ThreadRefresh* refresh);
    void decode_tstate(StructView bytes, Address tstate, Address interp, std::uint32_t index,
                       ThreadRecord& record);
    // Where the GIL's `locked` and `last_holder` words are. Their addresses come from the target
    // (3.12+: a pointer in the interpreter state; _PyRuntime from its ELF file), so every sum
    // that makes them is checked: a pair that wraps is no GIL (nothing).
    struct GilAddresses {
        Address locked = 0, holder = 0;
    };
    static std::optional<GilAddresses> gil_words(Address locked, Address holder);
    static std::optional<GilAddresses> gil_addresses(Address base, std::uint32_t locked,
                                                     std::uint32_t holder);
    // Those of `interp`'s GIL, as far as they are known without a read (the one-batch path).
    std::optional<GilAddresses> known_gil(Address interp) const;
    // Where the GIL of an interpreter can be read (0 = unknown), and the span to read there.
    struct GilSpan {
        Address at = 0;
        std::uint64_t length = 0;
    };
    static GilSpan covering(const GilAddresses& at);
    // The holder (0 when the GIL is not held) from the bytes read at `at`; nothing unless both
    // words lie in them.
    static std::optional<Address> holder_in(std::span<const std::uint8_t> bytes, Address at,
                                            const GilAddresses& gil);
    GilSpan gil_span(Address interp);
    std::int8_t decode_gil(const std::uint8_t* bytes, const GilSpan& span, Address interp,
                           Address tstate) const;
    void remember(const std::vector<ThreadRecord>& records);

    std::shared_ptr<process::RemoteMemory> memory_;
    TargetInfo target_;
    std::unique_ptr<StackWalker> walker_;
    std::vector<Address> read_tstates_; // the thread states the batch of read_threads_fast reads
    std::size_t tstate_read_size_ = 0;
    std::vector<std::uint8_t> tstate_buffer_;
    std::vector<Address> interps_;
    // The shape seen by the last full read, for the one-batch fast path.
    struct Cached {
        std::vector<Address> interps;
        std::vector<std::uint32_t> thread_counts; // per interpreter
        std::vector<Address> tstates;
        std::vector<Address> cframes;      // per tstate (3.11 / 3.12)
        std::vector<ThreadRecord> records; // what the last read found, per tstate
    } cached_;
    std::vector<process::ReadOp> batch_;
    std::vector<GilSpan> fast_gils_;
    struct FastBytes {
        std::vector<const std::uint8_t*> interps, gils, tstates, cframes;
    } fast_bytes_;
    std::uint64_t fast_reads_ = 0, slow_reads_ = 0;
    ThreadListFault list_fault_ = ThreadListFault::none;
    std::vector<std::uint8_t> batch_bytes_;
    std::unordered_map<Address, Address> gil_of_interp_; // 3.12+: interp -> its gil struct
    struct TidEntry {
        std::uint64_t thread_id;
        pid_t tid;
    };
    std::unordered_map<Address, TidEntry> tid_cache_;        // tstate -> tid
    std::unique_ptr<process::NamespaceTids> namespace_tids_; // a target in a container
};

} // namespace spyglass::python
