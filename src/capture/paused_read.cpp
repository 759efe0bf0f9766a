#include "spyglass/capture/paused_read.hpp"

#include <bit>
#include <ctime>

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

CaptureOutcome capture_stack(python::PythonProcess& process, StackCapturer& capturer,
                             process::ThreadTracer& tracer, PauseMode mode,
                             python::ThreadRecord record, int retries, PauseStats& stats,
                             bool& paused, const std::function<void(CaptureOutcome)>* while_stopped,
                             const AsleepThread* asleep) {
    paused = false;
    auto done = [&](CaptureOutcome outcome) {
        if (while_stopped != nullptr && outcome != CaptureOutcome::gone) (*while_stopped)(outcome);
        return outcome;
    };
    // Torn, or cut by a read that failed (the thread had freed what it pointed to): a thread
    // that changes faster than it can be read.
    auto raced = [&](CaptureOutcome outcome) { return capturer.raced(outcome); };
    if (mode == PauseMode::always && asleep != nullptr && asleep->stat != nullptr &&
        while_stopped == nullptr) {
        CaptureOutcome outcome = capturer.capture(record, {.thread_stopped = false});
        auto run = asleep->stat->read_run_mark();
        if (!run) return CaptureOutcome::gone;
        if (!raced(outcome) && *run == asleep->run) {
            ++stats.asleep;
            return outcome;
        }
    }
    if (mode != PauseMode::always) {
        CaptureOutcome outcome =
            capturer.capture(record, {.thread_stopped = false, .retries = retries});
        if (!raced(outcome) || mode == PauseMode::never || record.tid == 0) return done(outcome);
    }
    // A thread stopped at a bad moment (3.12+: between pushing an eval loop and setting its
    // current frame) reads as torn even when stopped: let it run on and stop it once more.
    CaptureOutcome outcome = CaptureOutcome::torn;
    for (int pauses = 0; pauses < 2; ++pauses) {
        auto stopped = tracer.pause(record.tid);
        if (!stopped) {
            if (stopped.error() == process::PauseFailure::gone) return CaptureOutcome::gone;
            ++stats.failed;
            if (stopped.error() == process::PauseFailure::timed_out) ++stats.timed_out;
            if (stopped.error() == process::PauseFailure::refused) {
                ++stats.refused;
                if (stats.refusal.empty()) stats.refusal = tracer.refusal();
            }
            // Read it running after all: the share of torn samples says what this cost.
            if (mode == PauseMode::always && pauses == 0) outcome = capturer.capture(record);
            return done(outcome);
        }
        outcome = CaptureOutcome::gone;
        auto status = process.reread_thread(record);
        // dump reads more of the thread while it is stopped, which needs the outcome first.
        const bool check_stopped = while_stopped != nullptr;
        if (!status) {
            if (status.error().code != Errc::process_gone) outcome = CaptureOutcome::torn;
        } else if (check_stopped) {
            outcome = capturer.capture(record, {.thread_stopped = true, .retries = 0});
        } else {
            capturer.walk_stopped(record);
        }
        if (check_stopped && (pauses == 1 || !raced(outcome))) done(outcome);
        tracer.resume(record.tid);
        ++stats.pauses;
        stats.durations.record(tracer.last_pause_ns());
        paused = true;
        if (status && !check_stopped) outcome = capturer.finish_stopped();
        bool last = pauses == 1 || !raced(outcome);
        if (last) break;
        // Stopped again at once, the thread would not have moved: let it run a little.
        timespec step{0, 50'000};
        nanosleep(&step, nullptr);
    }
    return outcome;
}

} // namespace spyglass::sampling
