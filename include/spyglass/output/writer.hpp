// The output formats of `spyglass record`, behind one small interface. docs/output-formats.md
// describes every format as a consumer sees it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "spyglass/error.hpp"
#include "spyglass/model/profile.hpp"
#include "spyglass/output/formats.hpp"

namespace spyglass::output {

class ProfileWriter {
  public:
    virtual ~ProfileWriter() = default;
    // Writes the whole profile to `out` and flushes it. Errors are I/O errors (disk full,
    // closed pipe): Errc::io.
    virtual Result<void> write(const model::Profile& profile, std::FILE* out) = 0;
};

std::unique_ptr<ProfileWriter> make_writer(Format format);

// "function (file:line)" as every text format shows a frame (file shortened unless
// full_filenames; no line with --nolineno or line 0; no parentheses without a file; markers as
// they are). A native frame is "function (source.c:line)" where DWARF has its line, else
// "function (module)".
std::string frame_label(const model::Profile& profile, model::FrameId frame);
// The base name of a native frame's module ("libc.so.6").
std::string_view native_module_name(const model::Frame& frame, const model::StringTable& strings);
// Shortens a source path for display: after site-packages/ or dist-packages/, after
// lib/pythonX.Y/, else unchanged.
std::string short_filename(std::string_view path);

// The pseudo-frame that folded stacks, speedscope and the flame graph put on top of a sample
// whose thread was off-CPU (docs/output-formats.md).
inline constexpr std::string_view kOffCpuFrame = "[off-cpu]";
// The pseudo-frame those formats show for a sample without any Python frame.
inline constexpr std::string_view kNoFramesFrame = "[no Python frames]";
// The leaf pseudo-frame of a runnable thread that was waiting for a CPU (on-CPU: state R).
inline constexpr std::string_view kCpuStarvedFrame = "[cpu-starved]";

// The leaf pseudo-frame of an off-CPU sample whose wait is known, in place of kOffCpuFrame:
// "[wait SYSCALL TARGET]" ("[wait recvfrom tcp 127.0.0.1:5432]", "[wait futex GIL]"), the
// kind instead of the system call when there is none ("[wait io]", and every wait with
// --waits=kind: "[wait socket]"), no target when there is none ("[wait clock_nanosleep]");
// kCpuStarvedFrame for a cpu-starved one (docs/output-formats.md).
std::string wait_label(const model::Profile& profile, model::WaitId wait);
// What a wait is waiting on, in a few words: its target, else its system call, else its kind
// ("tcp 127.0.0.1:5432", "GIL", "clock_nanosleep", "io"): top's "Waiting on" rows.
std::string wait_summary(const model::FrameTable& frames, model::WaitId wait);

// The root frames of per_process_roots and per_thread_roots: "process 4242",
// "thread 4243 worker-1" ("thread 4243" when the thread has no name).
std::string process_root_label(pid_t pid);
std::string thread_root_label(const model::ThreadInfo& thread);

// The frames the stack formats (folded, speedscope, flame graph) show, each distinct label
// once: Python frames, markers and the pseudo-frames above. Labels are made once per frame.
class DisplayFrames {
  public:
    using Id = std::uint32_t;
    struct Entry {
        std::string label;      // frame_label, or the pseudo-frame's text
        std::string function;   // the function name (the text for the others): for colours
        std::string file;       // the full path; empty for markers and pseudo-frames
        std::int32_t line = 0;  // 0: none (or --nolineno)
        bool synthetic = false; // a root, a wait, kOffCpuFrame or kNoFramesFrame
        bool off_cpu = false;   // kOffCpuFrame, or a wait of an off-CPU sample
        bool native = false;    // a native (C/C++) frame of --native
        model::WaitId wait{};   // a wait pseudo-frame (its kind, call and target)
    };

    explicit DisplayFrames(const model::Profile& profile);

    // Replaces `out` with what to show for a sample, root first: "process <pid>"
    // (per_process_roots), "thread <tid> <name>" (per_thread_roots), the Python frames
    // outermost first (kNoFramesFrame when there are none), then when off-CPU the wait
    // (wait_label), or kOffCpuFrame when it is not known; on-CPU, kCpuStarvedFrame when the
    // thread was waiting for a CPU.
    void stack(std::uint32_t thread, model::StackId stack, bool on_cpu, model::WaitId wait,
               std::vector<Id>& out);

    [[nodiscard]] const Entry& operator[](Id id) const noexcept { return entries_[id]; }
    [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }

  private:
    static constexpr Id kUnset = ~Id{0};
    Id intern(Entry entry);
    Id frame(model::FrameId id);

    const model::Profile& profile_;
    std::vector<Entry> entries_;
    std::unordered_map<std::string, Id> index_; // label -> id
    std::vector<Id> by_frame_;                  // FrameId -> Id, kUnset until first used
    std::vector<Id> thread_roots_;              // Profile::threads index -> Id
    std::unordered_map<pid_t, Id> process_roots_;
    std::unordered_map<model::WaitId, Id> waits_;
    Id off_cpu_ = kUnset, no_frames_ = kUnset;
};

// Checked stdio for the writers: all of `bytes`, or Errc::io with the reason (errno).
Result<void> write_bytes(std::FILE* out, std::string_view bytes);
// fflush, checked the same way: the last buffered bytes' errors (ENOSPC) show here.
Result<void> flush_output(std::FILE* out);

// Text output for the XML of the flame graph: escapes &<>"', replaces invalid UTF-8 and
// characters XML cannot carry with U+FFFD.
void append_xml_escaped(std::string& out, std::string_view text);

// 1234567 -> "1,234,567", for counts people read.
std::string with_commas(std::uint64_t n);
// "1 late tick", "2,345 late ticks": `plural` defaults to `singular` + "s".
std::string count_of(std::uint64_t n, std::string_view singular, std::string_view plural = {});

// A command line for display: the words with one space between them.
std::string join_words(const std::vector<std::string>& words);

} // namespace spyglass::output
