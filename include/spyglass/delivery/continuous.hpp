// What `record` writes besides the profile of the whole recording: the raw file (--raw),
// windows (--window, --keep, SIGUSR1) and --push. One object that record_command asks for the
// session's sink and tells when the recording is over (docs/continuous.md).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

#include "spyglass/delivery/output_file.hpp"
#include "spyglass/delivery/push.hpp"
#include "spyglass/delivery/window_files.hpp"
#include "spyglass/error.hpp"
#include "spyglass/model/aggregator.hpp"
#include "spyglass/model/projector.hpp"
#include "spyglass/model/tee.hpp"
#include "spyglass/model/window.hpp"
#include "spyglass/output/raw.hpp"
#include "spyglass/output/writer.hpp"

namespace spyglass::delivery {

// What record's command line asks to be delivered besides the profile of the whole recording
// (the options' values, checked by the command line).
struct RecordDeliveryOptions {
    std::string raw;                       // --raw FILE
    double window = 0;                     // --window SECONDS
    std::string keep;                      // --keep DURATION, as given (for messages)
    std::uint64_t keep_ns = 0;             // and as nanoseconds
    std::string push;                      // --push URL
    std::string app;                       // --app NAME
    std::vector<std::string> tags;         // --tag k=v
    std::vector<std::string> push_headers; // --push-header 'Name: value'
    double push_timeout = 10;              // seconds per request
    pid_t pid = 0;                         // --pid; 0 for a launched command
    double rate = 100;                     // Hz
    bool function = false;                 // --function
    bool nolineno = false;                 // --nolineno
    model::DisplayOptions display;         // how the profiles are shown
};

class RecordExtras {
  public:
    // Checks and opens what the options ask for before anything is attached: the raw file,
    // the window pattern and --keep, --push (libcurl, its URL, labels and headers).
    static Result<std::unique_ptr<RecordExtras>> open(const RecordDeliveryOptions& options,
                                                      output::Format format,
                                                      const std::string& output_path,
                                                      const model::FrameTable& frames,
                                                      const model::StackTable& stacks);
    ~RecordExtras();

    // What the session must sample for: a raw file and windows keep every line (they apply
    // --function / --nolineno themselves); windows bound the tables (0: unbounded).
    [[nodiscard]] bool keeps_every_line() const noexcept { return raw_ || cutter_; }
    [[nodiscard]] std::size_t table_limit() const;
    // The tables the profile of the whole recording is built on.
    [[nodiscard]] const model::FrameTable& whole_frames() const noexcept { return *whole_frames_; }
    [[nodiscard]] const model::StackTable& whole_stacks() const noexcept { return *whole_stacks_; }
    // What the session sends its samples to; `whole` gets them unless --window.
    model::SampleSink& sink(model::Aggregator& whole);
    // The program is known (launch mode: after start_session).
    void set_target(pid_t pid);

    [[nodiscard]] bool windowed() const noexcept { return cutter_ != nullptr; }
    // A SIGUSR1 wrote the output file during the recording (record_command then writes the
    // final one the same way).
    [[nodiscard]] bool flushed() const noexcept { return flushes_ > 0; }
    // Writes the last window, stops the threads, tells what was written; false when a
    // file could not be written.
    bool finish(double recording_s);

    class FlushWhole;

  private:
    RecordExtras() = default;
    void flush_whole(const model::Aggregator& whole);

    RecordDeliveryOptions options_;
    output::Format format_ = output::Format::flamegraph;
    std::string output_path_;
    model::DisplayOptions display_;
    const std::atomic<int>* flush_requests_ = nullptr;
    const model::FrameTable* whole_frames_ = nullptr;
    const model::StackTable* whole_stacks_ = nullptr;
    std::optional<OutputFile> raw_file_; // the raw recording's temporary file, renamed at the end
    std::unique_ptr<output::RawWriter> raw_;
    std::unique_ptr<model::ProjectingSink> projector_; // in front of `whole`, when lines differ
    std::unique_ptr<FlushWhole> flush_;
    std::unique_ptr<Pusher> pusher_;
    std::unique_ptr<WindowOutputs> windows_;
    std::unique_ptr<model::WindowCutter> cutter_;
    model::TeeSink tee_;
    std::uint64_t flushes_ = 0;
    std::uint64_t elapsed_ns_ = 0; // of the recording at the last flush
    std::string flush_error_;
};

} // namespace spyglass::delivery
