// Resolving captured stacks, after the thread has run on: code objects (names, file, line
// table; read from the target once per code object and kept while its header hash says it is
// the same object), line numbers, interned frames. A raw stack already resolved maps straight
// to its frames.
#pragma once

#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "spyglass/model/frame_table.hpp"
#include "spyglass/model/sample.hpp"
#include "spyglass/python/code.hpp"
#include "spyglass/python/stack_walker.hpp"
#include "spyglass/python/target.hpp"

namespace spyglass::sampling {

struct StackReadOptions {
    bool function_lines = false; // --function: a frame's line is its function's first line
    bool no_lines = false;       // --nolineno
    int retries = 3;             // extra attempts for a stack that changed while it was read
    bool native = false;         // --native: merge each capture's native frames
    bool native_all = false;     // --native-all: keep the interpreter's own frames too
};

struct ResolveStats {
    std::uint64_t code_misses = 0;   // code objects read and decoded
    std::uint64_t code_stale = 0;    // a cached code object whose address was reused
    std::uint64_t code_gone = 0;     // changed between capture and resolution: not resolved
    std::uint64_t resolved_hits = 0; // stacks whose frames came from the resolved-stack cache
    // Code objects still there (their header as captured) whose name, file name or line table
    // could not be read: corrupt. Their frames are marked, the others of the stack kept.
    std::uint64_t code_unreadable = 0;
};

// The name of a frame whose code object is there but cannot be read.
inline constexpr const char* kUnreadableCodeName = "<unreadable code object>";
// The last frame of a stack whose frame chain points back into itself (corrupt memory).
inline constexpr const char* kLoopsMarker = "<frame chain loops>";

class StackResolver {
  public:
    StackResolver(std::shared_ptr<process::RemoteMemory> memory, const python::TargetInfo& target,
                  model::FrameTable& frames, StackReadOptions options);

    // The frames of a captured chain (innermost first; frames not started yet are left out),
    // with a marker frame after them when the chain was cut. `truncated`: the capture could
    // not read the chain to its end.
    model::StackStatus resolve(std::span<const python::RawFrame> raw, bool truncated,
                               std::vector<model::FrameId>& out);

    // For --locals: which raw frames `out` received (by index), and their code objects.
    [[nodiscard]] const std::vector<std::uint32_t>& kept() const noexcept { return kept_; }
    // Whether the stack of the latest resolve() has a frame marked kUnreadableCodeName.
    [[nodiscard]] bool unreadable() const noexcept { return unreadable_; }
    [[nodiscard]] const python::CodeInfo* code(process::Address code) const;
    [[nodiscard]] const ResolveStats& stats() const noexcept { return stats_; }
    // The frame table was emptied (bounded tables): the code objects read stay, their names
    // are interned again when next used.
    void tables_reset();

  private:
    struct CodeEntry {
        python::CodeInfo info;
        std::uint64_t hash = 0;
        model::StringId function{};
        model::StringId file{};
        std::uint32_t generation = 0; // of the frame table the two ids above belong to
        bool unreadable = false;      // info holds kUnreadableCodeName and no line table
        std::unordered_map<std::int32_t, std::int32_t> lines; // offset -> line
    };
    struct ResolvedStack {
        std::vector<python::RawFrame> raw;
        std::vector<model::FrameId> frames;
        std::vector<std::uint32_t> kept;
        bool unreadable = false;
    };
    CodeEntry* code_for(const python::RawFrame& raw);
    std::int32_t line_of(CodeEntry& entry, std::int32_t offset);

    std::shared_ptr<process::RemoteMemory> memory_;
    const python::TargetInfo& target_;
    model::FrameTable& frames_;
    StackReadOptions options_;
    model::FrameId truncated_marker_, unknown_code_marker_;
    std::unordered_map<process::Address, CodeEntry> codes_;
    std::unordered_map<std::uint64_t, ResolvedStack> resolved_;
    std::vector<std::uint32_t> kept_;
    bool unreadable_ = false;
    std::uint32_t generation_ = 0;
    ResolveStats stats_;
};

} // namespace spyglass::sampling
