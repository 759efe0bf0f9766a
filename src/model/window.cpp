#include "spyglass/model/window.hpp"

#include <algorithm>

namespace spyglass::model {

Profile Window::profile(const DisplayOptions& display) const {
    Profile profile = aggregator.profile(display);
    profile.info = info;
    profile.totals = totals;
    return profile;
}

WindowCutter::WindowCutter(const FrameTable& frames, const StackTable& stacks,
                           std::uint64_t length_ns, FrameTransform transform, bool keep_timeline,
                           Done done, const std::atomic<int>* flush_requests, Snapshot snapshot)
    : projector_(frames, stacks, transform), length_ns_(length_ns == 0 ? 1 : length_ns),
      keep_timeline_(keep_timeline), done_(std::move(done)), flush_requests_(flush_requests),
      snapshot_(std::move(snapshot)),
      flushes_seen_(flush_requests != nullptr ? flush_requests->load() : 0) {}

void WindowCutter::start(const RecordingInfo& info) {
    info_ = info;
    open(0);
}

void WindowCutter::open(std::uint64_t index) {
    current_ = std::make_unique<Window>(keep_timeline_);
    current_->index = index;
    current_->start_ns = index * length_ns_;
    current_->end_ns = current_->start_ns + length_ns_;
    current_->info = info_;
    current_->info.start_unix_ns = info_.start_unix_ns + current_->start_ns;
    current_->aggregator.start(current_->info);
    projector_.retarget(current_->frames, current_->stacks);
    next_index_ = index + 1;
}

void WindowCutter::stamp(Window& window, std::uint64_t end_ns) const {
    RecordingTotals& totals = window.totals;
    totals.end = window.partial ? RecordingEnd::stopped : RecordingEnd::duration;
    totals.elapsed_ns = end_ns > window.start_ns ? end_ns - window.start_ns : 0;
    totals.samples = window.samples;
    totals.ticks = 0;
    totals.python_version = python_version_;
    totals.pids = window.pids;
    totals.found_interpreter = !window.pids.empty();
}

void WindowCutter::close(bool partial, std::uint64_t end_ns) {
    current_->partial = partial;
    stamp(*current_, end_ns);
    current_->aggregator.finish(current_->totals);
    done_(std::move(current_));
}

void WindowCutter::catch_up(std::uint64_t time_ns) {
    last_time_ns_ = std::max(last_time_ns_, time_ns);
    while (current_ && time_ns >= current_->end_ns) {
        // An empty window is a window too: "nothing ran" is worth a file in a series.
        std::uint64_t next = time_ns / length_ns_;
        std::uint64_t end = current_->end_ns;
        close(false, end);
        // Windows that passed without an event at all (a stalled resolver) are skipped: the
        // next one is where the time is now.
        open(std::max(next, end / length_ns_));
    }
    if (flush_requests_ != nullptr && snapshot_ && current_) {
        int requests = flush_requests_->load(std::memory_order_relaxed);
        if (requests != flushes_seen_) {
            flushes_seen_ = requests;
            stamp(*current_, last_time_ns_);
            snapshot_(*current_);
        }
    }
}

void WindowCutter::process(const ProcessInfo& info) {
    // The version of the first process, as the session's totals have it.
    if (python_version_.empty()) python_version_ = info.python_version;
    auto known = std::find_if(processes_.begin(), processes_.end(),
                              [&](const ProcessInfo& p) { return p.pid == info.pid; });
    if (known != processes_.end())
        *known = info; // exec'd and sampled anew
    else
        processes_.push_back(info);
}

void WindowCutter::thread(std::uint32_t index, const ThreadInfo& info) {
    if (threads_.size() <= index) {
        threads_.resize(index + 1);
        announced_.resize(index + 1, 0);
    }
    threads_[index] = info;
    // A rename reaches the window that has the thread's samples now.
    if (current_ && announced_[index] == current_->index + 1)
        current_->aggregator.thread(index, info);
}

void WindowCutter::sample(const Sample& sample) {
    catch_up(sample.time_ns);
    Window& window = *current_;
    const std::uint32_t thread = sample.key.thread;
    if (thread < threads_.size() && announced_[thread] != window.index + 1) {
        announced_[thread] = window.index + 1;
        pid_t pid = threads_[thread].pid;
        if (std::find(window.pids.begin(), window.pids.end(), pid) == window.pids.end()) {
            window.pids.push_back(pid);
            auto known = std::find_if(processes_.begin(), processes_.end(),
                                      [&](const ProcessInfo& p) { return p.pid == pid; });
            if (known != processes_.end()) window.aggregator.process(*known);
        }
        window.aggregator.thread(thread, threads_[thread]);
    }
    Sample moved = sample;
    moved.key = projector_.key(sample.key);
    moved.time_ns = sample.time_ns - std::min(sample.time_ns, window.start_ns);
    window.aggregator.sample(moved);
    ++window.samples;
}

void WindowCutter::advance(std::uint64_t time_ns) {
    catch_up(time_ns);
}

void WindowCutter::finish(const RecordingTotals& totals) {
    python_version_ = totals.python_version;
    if (!current_) return;
    // Every sample up to the end is in: windows that ended meanwhile are complete.
    catch_up(totals.elapsed_ns);
    if (!current_) return;
    // A recording that ends exactly on a boundary has no partial window after it.
    if (current_->samples == 0 && totals.elapsed_ns <= current_->start_ns) {
        current_.reset();
        return;
    }
    close(true, std::max(totals.elapsed_ns, current_->start_ns));
}

} // namespace spyglass::model
