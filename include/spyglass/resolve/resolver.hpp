// The other half of a sampling session: takes the captures off the queue, after the threads
// have run on, and turns them into samples for the sinks — code objects, names, lines and
// interned frames and stacks (StackResolver, one per process), the names of threads (the
// target's threading module), the previous stack of a thread that has not run since. It runs
// on its own thread, or inline between two passes (tests, single-threaded use).
#pragma once

#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "spyglass/handoff/capture_queue.hpp"
#include "spyglass/handoff/label_source.hpp"
#include "spyglass/handoff/native_feedback.hpp"
#include "spyglass/model/frame_table.hpp"
#include "spyglass/model/labels.hpp"
#include "spyglass/model/sample.hpp"
#include "spyglass/python/objects.hpp"
#include "spyglass/python/target.hpp"
#include "spyglass/resolve/call_identity.hpp"
#include "spyglass/resolve/native_resolve.hpp"
#include "spyglass/resolve/stack_resolve.hpp"
#include "spyglass/resolve/wait_resolve.hpp"

namespace spyglass::sampling {

// What the resolver needs of a process: its description and its own reader of its memory (the
// capture's stays on the sampling thread).
struct ProcessContext {
    python::TargetInfo target;
    std::shared_ptr<process::RemoteMemory> memory;
};

class Resolver {
  public:
    Resolver(model::FrameTable& frames, model::StackTable& stacks, StackReadOptions options,
             model::SampleSink& sink, model::WaitDetail waits = model::WaitDetail::full);
    ~Resolver();

    // Before the process_added capture for `slot` is pushed (from the sampling thread).
    void register_process(std::uint32_t slot, std::shared_ptr<const ProcessContext> context);

    // Handles every capture in the queue, then returns.
    void drain(CaptureQueue& queue);
    // Handles captures until the queue is closed and empty (the resolver's own thread).
    void run(CaptureQueue& queue);

    // Empties the frame and stack tables whenever they hold more than `entries` frames or
    // stacks (0: never), telling the sink (SampleSink::tables_reset): memory stays flat over a
    // recording of days, for sinks that keep no ids across windows.
    void bound_tables(std::size_t entries) noexcept { table_limit_ = entries; }
    [[nodiscard]] std::uint64_t table_resets() const noexcept { return table_resets_; }
    // --native: where to say what each thread's captures unwound to (stacks cut at the end of
    // their copy, unwinds without a stop that ended early), for the samplers. Null: nowhere.
    void feed_back(NativeFeedback* feedback) noexcept { native_feedback_ = feedback; }
    // record --label: labels every sample carries (validated: model::parse_label).
    void label_every_sample(std::vector<model::LabelText> labels);
    // record --context: the labels each sample's words (ThreadCapture::label_words) stand for,
    // the texts of `values` (the session's; outlives the resolver).
    void label_from_sources(std::vector<LabelSourceSpec> sources, const LabelValues* values) {
        label_sources_ = std::move(sources);
        label_values_ = values;
    }

    [[nodiscard]] ResolveStats stats() const;
    // Samples whose stack has a frame whose code object could not be read (the same-stack
    // samples of such a stack included): errors.
    [[nodiscard]] std::uint64_t unreadable_samples() const noexcept { return unreadable_samples_; }
    [[nodiscard]] NativeResolveStats native_stats() const;
    [[nodiscard]] WaitResolveStats wait_stats() const;
    // CPU time run() used (its thread's), once it has returned.
    [[nodiscard]] std::uint64_t cpu_ns() const noexcept { return cpu_ns_; }

  private:
    struct ProcessEntry {
        std::shared_ptr<const ProcessContext> context;
        std::unique_ptr<StackResolver> stacks;
        std::unique_ptr<python::ObjectReader> objects;
        std::unique_ptr<NativeResolver> native; // --native
        std::unique_ptr<WaitResolver> waits;
        std::uint64_t last_naming_ns = 0;
        bool unnamed_threads = false;
        bool retired = false;
    };
    struct ThreadEntry {
        std::uint32_t process = 0;
        model::ThreadInfo info;
        process::Address interp = 0;
        model::StackId last_stack{};
        model::WaitId last_wait{}; // of its previous sample
        bool have_last = false;
        bool last_unreadable = false; // last_stack has a frame marked kUnreadableCodeName
        bool named = false;           // by the threading module, not the OS
        // Its latest sourced labels: the words, and their set in the tables of table_resets_.
        std::array<std::uint64_t, kMaxSourcedLabels> label_words{};
        model::LabelSetId label_set{};
        std::uint64_t label_tables = ~0ull;
        CallIdentity calls; // which calls of its samples are new
    };
    ProcessEntry* process_entry(std::uint32_t slot);
    // A process added or retired, a thread seen.
    void handle_event(const ThreadCapture& capture, ProcessEntry& process);
    // The capture's frames into ids_ (Python, markers, native merged): its status.
    model::StackStatus resolve_stack(const ThreadCapture& capture,
                                     std::span<const python::RawFrame> frames,
                                     std::span<const std::uint8_t> bytes, ProcessEntry& process);
    void handle(const ThreadCapture& capture, std::span<const python::RawFrame> frames,
                std::span<const std::uint8_t> bytes);
    void name_threads(ProcessEntry& process, std::uint32_t slot, std::uint64_t now_ns);
    model::WaitId resolve_wait(const ThreadCapture& capture, ProcessEntry& process,
                               ThreadEntry& thread, model::StackId stack);
    void reset_tables();
    // The label set of every sample, in the tables as they are now.
    void intern_static_labels();
    // The static labels and the capture's sourced ones (label_resolve.cpp).
    model::LabelSetId sourced_labels(const ThreadCapture& capture, ThreadEntry& thread);

    model::FrameTable& frames_;
    model::StackTable& stacks_;
    StackReadOptions options_;
    model::SampleSink& sink_;
    model::WaitDetail waits_;
    model::FrameId torn_marker_, deeper_marker_, loops_marker_;
    std::uint64_t unreadable_samples_ = 0;
    std::mutex registered_mutex_;
    std::unordered_map<std::uint32_t, std::shared_ptr<const ProcessContext>> registered_;
    std::unordered_map<std::uint32_t, ProcessEntry> processes_;
    std::vector<ThreadEntry> threads_; // by thread index
    std::vector<model::FrameId> ids_, merged_;
    ResolveStats retired_stats_;
    NativeResolveStats retired_native_;
    WaitResolveStats retired_wait_stats_;
    std::uint64_t cpu_ns_ = 0;
    std::size_t table_limit_ = 0;
    std::uint64_t table_resets_ = 0;
    NativeFeedback* native_feedback_ = nullptr;
    std::vector<model::LabelText> static_labels_;
    model::LabelSetId static_label_set_{};
    std::vector<LabelSourceSpec> label_sources_;
    const LabelValues* label_values_ = nullptr;
    std::vector<model::Label> label_scratch_;
    std::string value_scratch_;
    std::vector<std::uint32_t> calls_; // scratch for summarize_unwind
};

} // namespace spyglass::sampling
