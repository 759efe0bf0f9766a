// The label sources' registry and the values they share with the resolver.
#include "spyglass/handoff/label_source.hpp"

#include "spyglass/model/labels.hpp"

namespace spyglass::sampling {

// Each source's file (context_label.cpp: "context").
std::unique_ptr<LabelCapture> make_context_capture(const std::vector<std::string>& keys,
                                                   const python::TargetInfo& target,
                                                   process::RemoteMemory& memory,
                                                   std::string& note);

namespace {

using MakeCapture = std::unique_ptr<LabelCapture> (*)(const std::vector<std::string>&,
                                                      const python::TargetInfo&,
                                                      process::RemoteMemory&, std::string&);
struct SourceKind {
    std::string_view kind;
    MakeCapture make;
};
constexpr SourceKind kSources[] = {
    {"context", make_context_capture},
};

const SourceKind* find_source(std::string_view kind) {
    for (const SourceKind& source : kSources)
        if (source.kind == kind) return &source;
    return nullptr;
}

} // namespace

Result<void> check_label_source(const LabelSourceSpec& spec) {
    if (find_source(spec.kind) == nullptr)
        return fail(Errc::invalid_argument, "no label source called {}", spec.kind);
    if (!model::valid_label_key(spec.key))
        return fail(Errc::invalid_argument,
                    "--{} {}: a label's name is 1 to {} of A-Z a-z 0-9 _ . -", spec.kind, spec.key,
                    model::kMaxLabelKey);
    return {};
}

std::unique_ptr<LabelCapture> make_label_capture(std::string_view kind,
                                                 const std::vector<std::string>& keys,
                                                 const python::TargetInfo& target,
                                                 process::RemoteMemory& memory, std::string& note) {
    if (const SourceKind* source = find_source(kind))
        return source->make(keys, target, memory, note);
    note = fmt::format("no label source called {}", kind);
    return nullptr;
}

std::uint64_t LabelValues::intern(std::string_view text) {
    if (auto it = ids_.find(text); it != ids_.end()) return it->second;
    std::lock_guard lock(mutex_);
    if (texts_.size() >= kMaxValues) {
        ++overflowed_;
        if (overflow_id_ == 0) {
            texts_.emplace_back(kOverflowText);
            overflow_id_ = texts_.size();
        }
        return overflow_id_;
    }
    texts_.emplace_back(text);
    ids_.emplace(std::string(text), texts_.size());
    return texts_.size();
}

std::string LabelValues::text(std::uint64_t id) const {
    std::lock_guard lock(mutex_);
    if (id == 0 || id > texts_.size()) return {};
    return texts_[id - 1];
}

std::uint64_t LabelValues::overflowed() const {
    std::lock_guard lock(mutex_);
    return overflowed_;
}

} // namespace spyglass::sampling
