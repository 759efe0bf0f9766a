#include "spyglass/model/select.hpp"

#include <algorithm>

namespace spyglass::model {

SelectingSink::SelectingSink(Selection selection, std::vector<std::vector<std::string>> names,
                             SampleSink& next, const FrameTable* frames)
    : selection_(std::move(selection)), names_(std::move(names)), next_(next), frames_(frames) {}

bool SelectingSink::labels_selected(LabelSetId id) const {
    if (selection_.labels.empty()) return true;
    if (frames_ == nullptr || id.value >= frames_->label_sets().size()) return false;
    std::span<const Label> labels = frames_->label_sets().get(id);
    const StringTable& text = frames_->strings();
    return std::all_of(
        selection_.labels.begin(), selection_.labels.end(), [&](const LabelText& wanted) {
            return std::any_of(labels.begin(), labels.end(), [&](const Label& l) {
                return text.view(l.key) == wanted.key && text.view(l.value) == wanted.value;
            });
        });
}

bool SelectingSink::thread_selected(std::uint32_t index) const {
    if (index >= threads_.size()) return false;
    const ThreadInfo& info = threads_[index];
    if (!selection_.pids.empty() && std::find(selection_.pids.begin(), selection_.pids.end(),
                                              info.pid) == selection_.pids.end())
        return false;
    if (selection_.threads.empty()) return true;
    for (const std::string& wanted : selection_.threads) {
        if (wanted == std::to_string(info.tid) || wanted == info.name) return true;
        if (index < names_.size() &&
            std::find(names_[index].begin(), names_[index].end(), wanted) != names_[index].end())
            return true;
    }
    return false;
}

void SelectingSink::process(const ProcessInfo& info) {
    if (selection_.pids.empty() || std::find(selection_.pids.begin(), selection_.pids.end(),
                                             info.pid) != selection_.pids.end())
        next_.process(info);
}

void SelectingSink::thread(std::uint32_t index, const ThreadInfo& info) {
    if (threads_.size() <= index) {
        threads_.resize(index + 1);
        selected_.resize(index + 1, 0);
    }
    threads_[index] = info;
    selected_[index] = thread_selected(index) ? 1 : 0;
    next_.thread(index, info);
}

void SelectingSink::sample(const Sample& sample) {
    if (selection_.from_ns && sample.time_ns < *selection_.from_ns) return;
    if (selection_.to_ns && sample.time_ns >= *selection_.to_ns) return;
    if (selection_.cpu_only && !sample.key.on_cpu) return;
    if (selection_.gil_only && !sample.key.gil) return;
    if (!labels_selected(sample.key.labels)) return;
    const std::uint32_t thread = sample.key.thread;
    if (thread >= selected_.size() || selected_[thread] == 0) return;
    if (kept_ == 0) first_ns_ = sample.time_ns;
    last_ns_ = sample.time_ns;
    ++kept_;
    pid_t pid = threads_[thread].pid;
    if (std::find(pids_.begin(), pids_.end(), pid) == pids_.end()) pids_.push_back(pid);
    next_.sample(sample);
}

void SelectingSink::finish(const RecordingTotals& totals) {
    if (selection_.everything()) {
        next_.finish(totals);
        return;
    }
    // The totals of the slice: its length, its samples, its processes.
    RecordingTotals slice = totals;
    std::uint64_t from = selection_.from_ns.value_or(0);
    std::uint64_t to = std::min(selection_.to_ns.value_or(totals.elapsed_ns), totals.elapsed_ns);
    slice.elapsed_ns = to > from ? to - from : 0;
    slice.samples = kept_;
    slice.errors = 0;
    slice.pids = pids_.empty() ? totals.pids : pids_;
    next_.finish(slice);
}

} // namespace spyglass::model
