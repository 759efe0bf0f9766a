// A label whose value is read from the target at every sample (record --context NAME). A
// source is its capture alone: on the sampling thread it reads the value as it is at that
// moment (what it points at may be freed a moment later) and interns its text in the session's
// LabelValues, whose number the capture carries; the resolver turns the number back into text.
// Adding a source is one file: its LabelCapture, and a line in make_label_capture().
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "spyglass/error.hpp"
#include "spyglass/process/memory.hpp"
#include "spyglass/python/interpreter.hpp"
#include "spyglass/python/target.hpp"

namespace spyglass::sampling {

// The texts of sourced labels, numbered from 1 (0: no label). Interned by the sampling thread
// (an allocation only for a text not seen before), read by the resolver. Bounded: past
// kMaxValues distinct texts, every new one is numbered as one overflow text, and counted.
class LabelValues {
  public:
    static constexpr std::size_t kMaxValues = 1u << 18;
    static constexpr std::string_view kOverflowText = "<more distinct values than kept>";

    std::uint64_t intern(std::string_view text);
    [[nodiscard]] std::string text(std::uint64_t id) const;
    [[nodiscard]] std::uint64_t overflowed() const;

  private:
    struct Hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view text) const noexcept {
            return std::hash<std::string_view>{}(text);
        }
    };
    std::unordered_map<std::string, std::uint64_t, Hash, std::equal_to<>> ids_; // sampling only
    mutable std::mutex mutex_;
    std::vector<std::string> texts_; // [id - 1], under mutex_
    std::uint64_t overflow_id_ = 0, overflowed_ = 0;
};

// Sampling thread: one source kind's labels, all its keys in one read (the keys' order is the
// order they were given in): words[k] is the number of key k's value now, 0 when there is none
// (not set). A value that could not be read is 0 too, and counted in unreadable().
class LabelCapture {
  public:
    virtual ~LabelCapture() = default;
    virtual void capture(const python::ThreadRecord& thread, LabelValues& values,
                         std::span<std::uint64_t> words) = 0;
    [[nodiscard]] std::uint64_t unreadable() const noexcept { return unreadable_; }

  protected:
    std::uint64_t unreadable_ = 0;
};

// What the command line asked for: which source, and the label's key.
struct LabelSourceSpec {
    std::string kind; // "context": a contextvars.ContextVar of that name
    std::string key;  // the label's name, and what the source looks for
};

// Checks a spec before sampling (its kind known, its key a valid label name).
Result<void> check_label_source(const LabelSourceSpec& spec);

// The capture of one source kind's keys for one process, over the sampling thread's reader;
// null, with `note` saying why, when it cannot read this interpreter.
std::unique_ptr<LabelCapture> make_label_capture(std::string_view kind,
                                                 const std::vector<std::string>& keys,
                                                 const python::TargetInfo& target,
                                                 process::RemoteMemory& memory, std::string& note);

} // namespace spyglass::sampling
