#include "spyglass/capture/native_capture.hpp"

#include <algorithm>
#include <cstring>
#include <ctime>
#include <optional>

#include <sched.h>

#include "spyglass/clock.hpp"

namespace spyglass::sampling {

namespace {

// Copies the stack from `sp` into `context` after the header (less where the mapping ends),
// `below` bytes under `sp` first (when they can be read: else none), all within `size`.
void copy_stack(process::RemoteMemory& memory, std::uint64_t sp, std::uint32_t size,
                std::vector<std::uint8_t>& context, std::uint32_t below = 0) {
    if (below >= size || below > sp) below = 0;
    context.resize(sizeof(native::ContextHeader) + size);
    std::uint8_t* to = context.data() + sizeof(native::ContextHeader);
    auto got = memory.read_prefix(sp - below, to, size);
    if (below != 0 && (!got || *got < below)) {
        below = 0;
        got = memory.read_prefix(sp, to, size);
    }
    std::uint32_t copied = got ? static_cast<std::uint32_t>(*got) : 0;
    context.resize(sizeof(native::ContextHeader) + copied);
    native::ContextHeader header;
    std::memcpy(&header, context.data(), sizeof header);
    header.below = below;
    header.stack_size = copied - below;
    std::memcpy(context.data(), &header, sizeof header);
}

void set_header(std::vector<std::uint8_t>& context, const native::ContextHeader& header) {
    native::ContextHeader with = header;
    native::ContextHeader current;
    std::memcpy(&current, context.data(), sizeof current);
    with.stack_size = current.stack_size;
    with.below = current.below;
    std::memcpy(context.data(), &with, sizeof with);
}

native::ContextHeader from_registers(const user_regs_struct& regs) {
    native::ContextHeader header;
    const std::uint64_t values[native::kRegisterCount] = {
        regs.rax, regs.rdx, regs.rcx, regs.rbx, regs.rsi, regs.rdi, regs.rbp, regs.rsp, regs.r8,
        regs.r9,  regs.r10, regs.r11, regs.r12, regs.r13, regs.r14, regs.r15, regs.rip};
    for (unsigned reg = 0; reg < native::kRegisterCount; ++reg)
        header.regs[reg] = values[reg];
    header.valid = (1u << native::kRegisterCount) - 1;
    return header;
}

} // namespace

NativePolicy::Change NativePolicy::learn(std::uint32_t flags) noexcept {
    Change change;
    if ((flags & NativeFeedback::cut) && stack_copy < native::kMaxStackCopy) {
        stack_copy = std::min(native::kMaxStackCopy, stack_copy * 2);
        change.grown = change.retake = true;
    }
    if ((flags & NativeFeedback::short_stopped) && stop_when_blocked) {
        stop_when_blocked = false;
        stop_useless = true;
        change.gave_up = true;
    } else if ((flags & NativeFeedback::short_unstopped) && !stop_when_blocked && !stop_useless) {
        stop_when_blocked = true;
        change.fell_back = change.retake = true;
    }
    return change;
}

namespace {

// A thread blocked in a system call, read without a stop: its stack pointer and program counter
// from its syscall file, its stack copied, its Python frames read; the read stands when /proc
// then says it stayed in that same call without running. Nothing when it moved.
std::optional<CaptureOutcome> read_blocked(const CaptureContext& where, python::ThreadRecord record,
                                           NativeThread& thread, std::vector<std::uint8_t>& context,
                                           NativeStats& stats) {
    auto before = thread.syscall->read();
    if (!before || before->running || before->sp == 0) return std::nullopt;
    copy_stack(where.process.memory(), before->sp, thread.stack_copy, context);
    CaptureOutcome outcome = where.capturer.capture(record, {.thread_stopped = false});
    auto after = thread.syscall->read();
    auto run = thread.stat->read_run_mark();
    // Still in the same call, at the same place, without having run: the copy, the Python
    // frames and the registers are one moment of it.
    if (after && *after == *before && run && *run == thread.run &&
        outcome != CaptureOutcome::torn) {
        native::ContextHeader header;
        header.regs[native::rsp] = before->sp;
        header.regs[native::rip] = before->pc;
        header.valid = (1u << native::rsp) | (1u << native::rip);
        set_header(context, header);
        ++stats.unstopped;
        return outcome;
    }
    ++stats.moved;
    return std::nullopt;
}

} // namespace

Captured capture_native(const CaptureContext& where, python::ThreadRecord record,
                        NativeThread& thread, std::vector<std::uint8_t>& context,
                        NativeStats& stats) {
    context.assign(sizeof(native::ContextHeader), 0);
    // A blocked thread whose registers from the syscall file did not unwind is stopped too
    // (unless nothing may be stopped: then they are still better than no native frames).
    // --blocking stops no blocked thread either: the read below is one moment of it, checked,
    // as a Python-only read of a thread asleep in the kernel is (a stop would wake it).
    const bool stop_anyway = thread.stop_when_blocked && where.mode != PauseMode::never;
    if (!thread.on_cpu && thread.syscall != nullptr && !stop_anyway)
        if (auto outcome = read_blocked(where, record, thread, context, stats)) return {*outcome};
    if (where.mode == PauseMode::never) {
        ++stats.skipped;
        context.clear();
        return {where.capturer.capture(record)};
    }
    // A running thread last seen on the core this thread runs on is not running now: it was
    // preempted (by us, or before). It can reach its stop only once we give the core up, so
    // polling for the stop would only delay it: sleep at once.
    const bool shares_our_core = thread.cpu >= 0 && thread.cpu == ::sched_getcpu();
    auto paused = where.tracer.pause(record.tid, {.poll_first = !shares_our_core});
    if (!paused) {
        context.clear();
        if (paused.error() == process::PauseFailure::gone) return {CaptureOutcome::gone};
        ++stats.failed;
        count_failed_pause(where.pauses, paused.error(), where.tracer);
        return {where.capturer.capture(record)};
    }
    user_regs_struct regs{};
    bool have_registers = where.tracer.registers(record.tid, regs);
    if (have_registers)
        copy_stack(where.process.memory(), regs.rsp, thread.stack_copy, context, native::kRedZone);
    Captured result{CaptureOutcome::gone, true};
    auto status = where.process.reread_thread(record);
    if (status)
        where.capturer.walk_stopped(record);
    else if (status.error().code != Errc::process_gone)
        result.outcome = CaptureOutcome::torn;
    where.tracer.resume(record.tid);
    where.pauses.durations.record(where.tracer.last_pause_ns());
    if (status) result.outcome = where.capturer.finish_stopped();
    ++where.pauses.pauses;
    ++stats.stopped;
    if (stop_anyway && !thread.on_cpu) ++stats.fallback;
    if (have_registers) {
        set_header(context, from_registers(regs));
    } else {
        ++stats.failed;
        context.clear();
    }
    return result;
}

} // namespace spyglass::sampling
