#include "spyglass/capture/paused_read.hpp"

#include <bit>
#include <ctime>
#include <optional>

namespace spyglass::sampling {

void LatencyHistogram::record(std::uint64_t ns) noexcept {
    unsigned bucket = 0;
    if (ns < kSub) {
        bucket = static_cast<unsigned>(ns);
    } else {
        unsigned power = 63u - static_cast<unsigned>(std::countl_zero(ns)); // >= 4
        unsigned sub = static_cast<unsigned>((ns >> (power - 4)) & (kSub - 1));
        bucket = (power - 3) * kSub + sub;
    }
    ++buckets_[bucket];
    ++count_;
    if (ns > max_) max_ = ns;
}

std::uint64_t LatencyHistogram::quantile(double fraction) const noexcept {
    if (count_ == 0) return 0;
    auto rank = static_cast<std::uint64_t>(fraction * static_cast<double>(count_));
    if (rank >= count_) rank = count_ - 1;
    std::uint64_t seen = 0;
    for (unsigned bucket = 0; bucket < buckets_.size(); ++bucket) {
        seen += buckets_[bucket];
        if (seen > rank) {
            if (bucket < kSub) return bucket;
            unsigned power = bucket / kSub + 3;
            std::uint64_t sub = bucket % kSub;
            std::uint64_t upper = ((kSub + sub + 1) << (power - 4)) - 1;
            return std::min(upper, max_);
        }
    }
    return max_;
}

void LatencyHistogram::merge(const LatencyHistogram& other) noexcept {
    for (std::size_t i = 0; i < buckets_.size(); ++i)
        buckets_[i] += other.buckets_[i];
    count_ += other.count_;
    max_ = std::max(max_, other.max_);
}

model::PauseSummary PauseStats::summary() const {
    model::PauseSummary out;
    out.pauses = pauses;
    out.failed = failed;
    out.timed_out = timed_out;
    out.refused = refused;
    out.p50_ns = durations.quantile(0.5);
    out.p99_ns = durations.quantile(0.99);
    out.max_ns = durations.max();
    out.refusal = refusal;
    return out;
}

void PauseStats::merge(const PauseStats& other) {
    pauses += other.pauses;
    asleep += other.asleep;
    failed += other.failed;
    timed_out += other.timed_out;
    refused += other.refused;
    durations.merge(other.durations);
    if (refusal.empty()) refusal = other.refusal;
}

void count_failed_pause(PauseStats& stats, process::PauseFailure failure,
                        const process::ThreadTracer& tracer) {
    ++stats.failed;
    if (failure == process::PauseFailure::timed_out) ++stats.timed_out;
    if (failure == process::PauseFailure::refused) {
        ++stats.refused;
        if (stats.refusal.empty()) stats.refusal = tracer.refusal();
    }
}

namespace {

// --blocking, a thread asleep in the kernel: read without a stop, and the read stands when
// not a single instruction ran meanwhile. Nothing when it did (or the read raced): stop it.
std::optional<Captured> read_asleep(const CaptureContext& where, python::ThreadRecord record,
                                    const AsleepThread& asleep) {
    CaptureOutcome outcome = where.capturer.capture(record, {.thread_stopped = false});
    auto run = asleep.stat->read_run_mark();
    if (!run) return Captured{CaptureOutcome::gone};
    if (where.capturer.raced(outcome) || !(*run == asleep.run)) return std::nullopt;
    ++where.pauses.asleep;
    return Captured{outcome};
}

// Reads the thread stopped. A thread stopped at a bad moment (3.12+: between pushing an eval
// loop and setting its current frame) reads as torn even when stopped: it is let run on and
// stopped once more.
Captured read_stopped(const CaptureContext& where, python::ThreadRecord record,
                      const CaptureRequest& request) {
    StackCapturer& capturer = where.capturer;
    auto done = [&](CaptureOutcome outcome) {
        if (request.while_stopped != nullptr && outcome != CaptureOutcome::gone)
            (*request.while_stopped)(outcome);
        return outcome;
    };
    Captured result{CaptureOutcome::torn};
    for (int pauses = 0; pauses < 2; ++pauses) {
        auto stopped = where.tracer.pause(record.tid);
        if (!stopped) {
            if (stopped.error() == process::PauseFailure::gone) {
                result.outcome = CaptureOutcome::gone;
                return result;
            }
            count_failed_pause(where.pauses, stopped.error(), where.tracer);
            // Read it running after all: the share of torn samples says what this cost.
            if (where.mode == PauseMode::always && pauses == 0)
                result.outcome = capturer.capture(record);
            result.outcome = done(result.outcome);
            return result;
        }
        result.outcome = CaptureOutcome::gone;
        auto status = where.process.reread_thread(record);
        // dump reads more of the thread while it is stopped, which needs the outcome first.
        const bool check_stopped = request.while_stopped != nullptr;
        if (!status) {
            if (status.error().code != Errc::process_gone) result.outcome = CaptureOutcome::torn;
        } else if (check_stopped) {
            result.outcome = capturer.capture(record, {.thread_stopped = true, .retries = 0});
        } else {
            capturer.walk_stopped(record);
        }
        if (check_stopped && (pauses == 1 || !capturer.raced(result.outcome))) done(result.outcome);
        where.tracer.resume(record.tid);
        ++where.pauses.pauses;
        where.pauses.durations.record(where.tracer.last_pause_ns());
        result.paused = true;
        if (status && !check_stopped) result.outcome = capturer.finish_stopped();
        if (pauses == 1 || !capturer.raced(result.outcome)) break;
        // Stopped again at once, the thread would not have moved: let it run a little.
        timespec step{0, 50'000};
        nanosleep(&step, nullptr);
    }
    return result;
}

} // namespace

Captured capture_stack(const CaptureContext& where, python::ThreadRecord record,
                       const CaptureRequest& request) {
    if (where.mode == PauseMode::always && request.asleep != nullptr &&
        request.asleep->stat != nullptr && request.while_stopped == nullptr)
        if (auto asleep = read_asleep(where, record, *request.asleep)) return *asleep;
    if (where.mode != PauseMode::always) {
        // Torn, or cut by a read that failed (the thread had freed what it pointed to): a
        // thread that changes faster than it can be read.
        CaptureOutcome outcome =
            where.capturer.capture(record, {.thread_stopped = false, .retries = request.retries});
        if (!where.capturer.raced(outcome) || where.mode == PauseMode::never || record.tid == 0) {
            if (request.while_stopped != nullptr && outcome != CaptureOutcome::gone)
                (*request.while_stopped)(outcome);
            return {outcome};
        }
    }
    return read_stopped(where, record, request);
}

} // namespace spyglass::sampling
