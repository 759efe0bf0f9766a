// --push: each window as pprof to a Pyroscope-compatible ingest endpoint (POST /ingest,
// docs/continuous.md), from a thread of its own behind a bounded queue: a dead or slow backend
// never grows memory and never holds up sampling; what cannot be sent is counted.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "spyglass/error.hpp"

namespace spyglass::delivery {

struct PushOptions {
    std::string url;                  // http(s)://host:port[/prefix]
    std::string app;                  // the application name
    std::vector<std::string> labels;  // k=v, --tag then pid and hostname
    std::vector<std::string> headers; // 'Name: value', never logged
    double timeout_s = 10;
    double rate_hz = 100;
    std::size_t queue = 8;  // windows waiting at most; a full queue drops the oldest
    int retries = 3;        // after the first attempt, for a 5xx, 429 or network error
    double backoff_s = 0.5; // before the first retry; doubled for each next one
};

struct PushStats {
    std::uint64_t sent = 0;
    std::uint64_t failed = 0;  // given up after the retries, or refused (4xx)
    std::uint64_t dropped = 0; // the queue was full, or the recording ended first
    std::uint64_t attempts = 0;
    std::string last_error; // status or curl's reason; never a header
};

// The URL without its user information (user:password@), for anything printed.
std::string redacted(std::string_view url);

class Pusher {
  public:
    // Checks the options and loads libcurl (libcurl.so.4, at run time: the static binary has
    // no libcurl of its own), then starts the thread.
    static Result<std::unique_ptr<Pusher>> start(PushOptions options);
    ~Pusher();
    Pusher(const Pusher&) = delete;
    Pusher& operator=(const Pusher&) = delete;

    // A window's gzipped pprof, for [from, until) in Unix seconds. Never blocks.
    void submit(std::string pprof, std::uint64_t from_s, std::uint64_t until_s);
    // Sends what is queued for at most `grace_s` more, then gives up on the rest (dropped).
    // A stop request (Ctrl-C, SIGTERM) that comes meanwhile gives up at once: the request
    // under way is cut short within about a second (libcurl's progress callback).
    PushStats stop(double grace_s);

    // A label known only once the target runs (pid=), before the first window is sent.
    void add_label(std::string label);
    // "checkout{env=prod,pid=42,hostname=web-1}", as the name parameter holds it.
    [[nodiscard]] std::string name();

    struct Curl;

  private:
    struct Item {
        std::string body;
        std::uint64_t from_s, until_s;
    };
    explicit Pusher(PushOptions options, std::shared_ptr<Curl> curl);
    void run();
    void run_locked(std::unique_lock<std::mutex>& lock);
    // One request: 0 sent, 1 worth retrying, -1 not (a 4xx).
    int send(const Item& item, const std::string& name, std::string& error);
    std::string name_locked() const;
    // For libcurl's progress callback: nonzero cuts the request short.
    static int progress(void* pusher, long long, long long, long long, long long);

    PushOptions options_;
    std::shared_ptr<Curl> curl_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Item> queue_;
    bool stopping_ = false;
    std::uint64_t deadline_ns_ = 0; // when stopping: give up then
    bool sending_ = false;          // a request is under way
    bool finished_ = false;         // the thread is done
    std::condition_variable done_;
    // Read by the request under way, without the lock: give up now (a stop request came while
    // stopping), or at this deadline (0: none; set by stop()).
    std::atomic<bool> cancel_{false};
    std::atomic<std::uint64_t> cut_at_ns_{0};
    PushStats stats_;
    std::thread thread_;
};

} // namespace spyglass::delivery
