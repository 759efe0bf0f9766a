// The files of --window: one per window, named by a strftime pattern from the window's start,
// written atomically on a thread of their own (a big flame graph must not hold up the
// resolver), the oldest deleted past --keep, each window also handed to --push.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "spyglass/delivery/push.hpp"
#include "spyglass/error.hpp"
#include "spyglass/model/window.hpp"
#include "spyglass/output/writer.hpp"

namespace spyglass::delivery {

// The pattern, formatted for a Unix time in ns (local time, as the default output name).
std::string window_file_name(const std::string& pattern, std::uint64_t unix_ns);

// An error when the pattern would give two consecutive windows the same name.
Result<void> check_window_pattern(const std::string& pattern, std::uint64_t window_ns);

struct WindowOutputStats {
    std::uint64_t windows = 0; // handed over
    std::uint64_t written = 0; // files
    std::uint64_t deleted = 0; // by --keep
    std::uint64_t dropped = 0; // the writer fell behind by more than its queue
    std::uint64_t snapshots = 0;
    std::string last_file;
    std::string error; // the first write error
};

class WindowOutputs {
  public:
    // `pattern` empty: no files (--push alone). `pusher` may be null.
    WindowOutputs(std::string pattern, output::Format format, model::DisplayOptions display,
                  std::uint64_t keep_ns, Pusher* pusher);
    ~WindowOutputs();

    // From the resolver's thread: never waits for the disk.
    void submit(std::unique_ptr<model::Window> window);
    // SIGUSR1: the window so far, written now on the caller's thread (its tables are live).
    void snapshot(const model::Window& window);
    // Writes what is queued, then stops the thread.
    WindowOutputStats stop();

  private:
    void run();
    void write(const model::Window& window, bool snapshot);
    void keep(const std::string& path, std::uint64_t start_unix_ns);

    std::string pattern_;
    output::Format format_;
    model::DisplayOptions display_;
    std::uint64_t keep_ns_;
    Pusher* pusher_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::unique_ptr<model::Window>> queue_;
    bool stopping_ = false;
    std::mutex write_mutex_; // a snapshot and a finished window never write at once
    // Files written, oldest first, with their window's start: what --keep deletes.
    std::deque<std::pair<std::string, std::uint64_t>> files_;
    WindowOutputStats stats_;
    std::thread thread_;
};

} // namespace spyglass::delivery
