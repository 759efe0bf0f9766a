#include "spyglass/model/projector.hpp"

namespace spyglass::model {

namespace {

template <typename Id>
Id& slot(std::vector<Id>& map, Id id) {
    if (id.value >= map.size()) map.resize(std::size_t{id.value} + 1, Id::invalid());
    return map[id.value];
}

} // namespace

StackProjector::StackProjector(const FrameTable& from_frames, const StackTable& from_stacks,
                               FrameTransform transform)
    : from_frames_(from_frames), from_stacks_(from_stacks), transform_(transform) {}

void StackProjector::retarget(FrameTable& frames, StackTable& stacks) {
    to_frames_ = &frames;
    to_stacks_ = &stacks;
    forget();
}

void StackProjector::forget() {
    frames_.clear();
    stacks_.clear();
    strings_.clear();
    waits_.clear();
    label_sets_.clear();
}

StringId StackProjector::string(StringId id) {
    StringId& out = slot(strings_, id);
    if (out == StringId::invalid())
        out = to_frames_->strings().intern(from_frames_.strings().view(id));
    return out;
}

FrameId StackProjector::frame(FrameId id) {
    FrameId& out = slot(frames_, id);
    if (out != FrameId::invalid()) return out;
    Frame frame = from_frames_.get(id);
    frame.function = string(frame.function);
    frame.file = string(frame.file);
    if (frame.module != StringId{}) {
        std::string_view build_id = from_frames_.build_id(frame.module);
        frame.module = string(frame.module);
        to_frames_->set_build_id(frame.module, build_id);
    }
    if (frame.kind != FrameKind::marker) {
        if (transform_.no_lines)
            frame.line = 0;
        else if (transform_.function_lines)
            frame.line = frame.first_line;
    }
    return out = to_frames_->intern(frame);
}

StackId StackProjector::stack(StackId id) {
    StackId& cached = slot(stacks_, id);
    if (cached != StackId::invalid()) return cached;
    scratch_.clear();
    for (FrameId frame_id : from_stacks_.get(id))
        scratch_.push_back(frame(frame_id));
    // (frame() may have grown frames_, not stacks_: the reference is still good.)
    return stacks_[id.value] = to_stacks_->intern(scratch_);
}

WaitId StackProjector::wait(WaitId id) {
    if (id == WaitId{}) return WaitId{};
    WaitId& cached = slot(waits_, id);
    if (cached != WaitId::invalid()) return cached;
    Wait wait = from_frames_.waits().get(id);
    wait.syscall = string(wait.syscall);
    wait.target = string(wait.target);
    return waits_[id.value] = to_frames_->waits().intern(wait);
}

LabelSetId StackProjector::labels(LabelSetId id) {
    if (id == LabelSetId{}) return LabelSetId{};
    LabelSetId& cached = slot(label_sets_, id);
    if (cached != LabelSetId::invalid()) return cached;
    label_scratch_.clear();
    for (const Label& label : from_frames_.label_sets().get(id))
        label_scratch_.push_back({string(label.key), string(label.value)});
    // (string() grows strings_, not label_sets_: the reference is still good.)
    return cached = to_frames_->intern_labels(label_scratch_);
}

ProjectingSink::ProjectingSink(const FrameTable& frames, const StackTable& stacks,
                               FrameTransform transform)
    : projector_(frames, stacks, transform) {
    projector_.retarget(frames_, stacks_);
}

void ProjectingSink::sample(const Sample& sample) {
    Sample out = sample;
    out.key = projector_.key(sample.key);
    next_->sample(out);
}

} // namespace spyglass::model
