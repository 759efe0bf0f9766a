// Calls from samples: a run of one thread's consecutive samples in which the frame at one depth
// stays the same call is that call, and the time its samples stand for is its duration
// (docs/calls.md says how a call is told from the next one, and the estimator's error).
#pragma once

#include <cstdint>
#include <limits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "spyglass/model/frame_table.hpp"
#include "spyglass/model/sample.hpp"

namespace spyglass::model {

// Durations in log-spaced buckets (kBucketsPerOctave per doubling from 1 µs: each under 2.2%
// wide), so memory does not grow with the number of calls. Quantiles are a bucket's geometric
// middle, kept within the smallest and largest duration added.
class DurationHistogram {
  public:
    static constexpr int kBucketsPerOctave = 32;
    static constexpr int kOctaves = 42; // 1 µs .. 2^42 µs (51 days)
    static constexpr std::uint64_t kFirstNs = 1000;

    void add(std::uint64_t ns);
    void merge(const DurationHistogram& other);
    [[nodiscard]] std::uint64_t count() const noexcept { return count_; }
    [[nodiscard]] std::uint64_t min_ns() const noexcept { return count_ ? min_ns_ : 0; }
    [[nodiscard]] std::uint64_t max_ns() const noexcept { return max_ns_; }
    [[nodiscard]] std::uint64_t sum_ns() const noexcept { return sum_ns_; }
    // The duration below which a share `q` (0..1) of the durations lie (nearest rank); 0 when
    // empty.
    [[nodiscard]] std::uint64_t quantile(double q) const noexcept;
    // The lower bound of bucket `index` in ns (bucket 0: below kFirstNs).
    [[nodiscard]] static std::uint64_t bucket_lower_ns(std::size_t index) noexcept;
    [[nodiscard]] static std::size_t bucket_of(std::uint64_t ns) noexcept;
    // Non-empty buckets, merged `per_octave` to an octave (a power of two dividing
    // kBucketsPerOctave): (lower bound ns, upper bound ns, count), ascending.
    struct Bucket {
        std::uint64_t lower_ns = 0, upper_ns = 0, count = 0;
    };
    [[nodiscard]] std::vector<Bucket> buckets(int per_octave) const;

  private:
    std::vector<std::uint32_t> counts_; // grown to the highest bucket used
    std::uint64_t count_ = 0;
    std::uint64_t min_ns_ = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t max_ns_ = 0;
    std::uint64_t sum_ns_ = 0;
};

// All threads together (CallStats::thread).
inline constexpr std::uint32_t kAllThreads = std::numeric_limits<std::uint32_t>::max();

// One function's calls. Wall time in every mode but --mode cpu, where only on-CPU samples are
// taken and a call's time is the CPU time its samples measured.
struct CallStats {
    StringId function{}; // of the frame table the profile points to
    StringId file{};
    std::int32_t first_line = 0;
    std::uint32_t thread = kAllThreads; // a thread's index with --threads
    std::uint64_t calls = 0;            // calls seen begin and end (short ones included)
    std::uint64_t short_calls = 0;      // seen in fewer than 2 samples: not in the durations
    // Running at the thread's first sample or when the recording ended: their length is not
    // known, they are not in `calls` or the durations (their time is in total and self).
    std::uint64_t open_calls = 0;
    // Calls that began at the very sample after the previous call of the same function at the
    // same depth in the same thread ended: told apart only by what the frames showed (its
    // arguments, its caller); where nothing did, such calls were merged into one.
    std::uint64_t back_to_back = 0;
    DurationHistogram durations; // calls - short_calls durations
    std::uint64_t total_ns = 0;  // samples with the function anywhere on the stack (once each)
    std::uint64_t self_ns = 0;   // samples with the function as the innermost Python frame
    std::uint64_t cpu_ns = 0;    // CPU time of the samples in total_ns
    std::uint64_t self_cpu_ns = 0;
};

// What Profile::calls holds: the functions' stats and whether the samples carried call
// identity at all (a raw recording of format version 4 or older does not).
struct CallTable {
    bool known = false;
    bool per_thread = false;
    std::uint64_t samples_without_identity = 0; // torn, truncated, or of an old raw file
    std::vector<CallStats> functions;           // in no particular order
};

// Turns samples into calls, per thread, as they come (Sample::new_calls says which of a sample's
// Python frames began since the thread's previous sample). Only Python frames are calls;
// native frames and markers are skipped. Memory: per function a histogram, per thread its open
// calls.
class CallTracker {
  public:
    CallTracker(const FrameTable& frames, const StackTable& stacks, bool per_thread);
    // --mode cpu: a call's duration is the CPU time of its samples (Sample::cpu_ns), not the
    // time they stand for (a thread that is runnable and waits for a CPU is sampled as on-CPU).
    void measure_cpu_time(bool on) noexcept { cpu_time_ = on; }
    void sample(const Sample& sample);
    // The table so far: calls still running are counted as open, and stay running.
    [[nodiscard]] CallTable table() const;

  private:
    struct OpenCall {
        std::uint32_t function = 0; // index into stats_
        std::uint32_t samples = 0;
        std::uint64_t weight_ns = 0;
        bool from_start = false; // running at the thread's first sample
        bool back_to_back = false;
    };
    struct ThreadCalls {
        bool seen = false;
        std::vector<OpenCall> open; // root first
    };
    struct FunctionKey {
        StringId function{}, file{};
        std::int32_t first_line = 0;
        std::uint32_t thread = kAllThreads;
        friend bool operator==(const FunctionKey&, const FunctionKey&) = default;
    };
    struct FunctionKeyHash {
        std::size_t operator()(const FunctionKey& key) const noexcept;
    };
    std::uint32_t function_of(FrameId frame, std::uint32_t thread);
    void close(const OpenCall& call, bool open);

    const FrameTable& frames_;
    const StackTable& stacks_;
    bool per_thread_;
    std::vector<CallStats> stats_;
    std::unordered_map<FunctionKey, std::uint32_t, FunctionKeyHash> index_;
    // Merged table: FrameId -> stats_ index + 1 (0: not looked up yet; kNotPython: no call).
    std::vector<std::uint32_t> by_frame_;
    std::vector<ThreadCalls> threads_;
    std::vector<std::uint32_t> python_; // the sample's Python frames' functions, root first
    std::vector<std::uint64_t> stamp_;  // per function: the last sample counted in total
    std::vector<std::uint32_t> ended_;  // per depth: the function whose call just ended
    std::uint64_t sample_number_ = 0;
    std::uint64_t without_identity_ = 0;
    bool identified_ = false; // some sample said which of its calls were new
    bool cpu_time_ = false;
};

} // namespace spyglass::model
