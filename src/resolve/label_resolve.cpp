// record --context: a sample's labels are the static ones (record --label) and those its
// capture's numbers stand for. A thread's numbers seldom change from one sample to the next:
// the set is interned again only when they do.
#include "spyglass/resolve/resolver.hpp"

namespace spyglass::sampling {

model::LabelSetId Resolver::sourced_labels(const ThreadCapture& capture, ThreadEntry& thread) {
    if (thread.label_tables == table_resets_ && thread.label_words == capture.label_words)
        return thread.label_set;
    label_scratch_.clear();
    for (const model::LabelText& label : static_labels_)
        label_scratch_.push_back(
            {frames_.strings().intern(label.key), frames_.strings().intern(label.value)});
    for (std::size_t i = 0; i < label_sources_.size() && i < kMaxSourcedLabels; ++i) {
        if (capture.label_words[i] == 0 || label_values_ == nullptr) continue;
        value_scratch_ = label_values_->text(capture.label_words[i]);
        if (value_scratch_.empty()) continue;
        label_scratch_.push_back({frames_.strings().intern(label_sources_[i].key),
                                  frames_.strings().intern(value_scratch_)});
    }
    thread.label_words = capture.label_words;
    thread.label_tables = table_resets_;
    thread.label_set = frames_.intern_labels(label_scratch_);
    return thread.label_set;
}

} // namespace spyglass::sampling
