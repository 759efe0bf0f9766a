// Calls from samples: the duration histogram, the tracker that turns a thread's samples into
// calls (model/calls.hpp) and the resolver's rule for which calls are new
// (resolve/call_identity.hpp).
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "spyglass/model/calls.hpp"
#include "spyglass/python/arg_slots.hpp"
#include "spyglass/resolve/call_identity.hpp"

namespace {

using namespace spyglass;
using model::CallStats;
using model::Sample;

TEST(DurationHistogram, QuantilesAreWithinABucket) {
    model::DurationHistogram histogram;
    for (int i = 0; i < 90; ++i)
        histogram.add(20'000'000 + static_cast<std::uint64_t>(i) * 10'000); // 20.00-20.89 ms
    for (int i = 0; i < 10; ++i)
        histogram.add(200'000'000 + static_cast<std::uint64_t>(i) * 100'000);
    EXPECT_EQ(histogram.count(), 100u);
    EXPECT_NEAR(static_cast<double>(histogram.quantile(0.5)), 20.45e6, 0.025 * 20.45e6);
    EXPECT_NEAR(static_cast<double>(histogram.quantile(0.9)), 20.9e6, 0.025 * 20.9e6);
    EXPECT_NEAR(static_cast<double>(histogram.quantile(0.99)), 200.9e6, 0.025 * 200.9e6);
    EXPECT_EQ(histogram.quantile(1.0), histogram.max_ns());
    EXPECT_EQ(histogram.max_ns(), 200'900'000u);
    EXPECT_EQ(histogram.min_ns(), 20'000'000u);
    // Buckets are under 2.2% wide, edges belong to the bucket they start.
    for (std::size_t i = 1; i < 400; ++i) {
        std::uint64_t lower = model::DurationHistogram::bucket_lower_ns(i);
        std::uint64_t upper = model::DurationHistogram::bucket_lower_ns(i + 1);
        EXPECT_LT(static_cast<double>(upper), 1.022 * static_cast<double>(lower) + 1) << i;
        EXPECT_EQ(model::DurationHistogram::bucket_of(upper - 1), i) << i;
    }
    EXPECT_EQ(model::DurationHistogram::bucket_of(0), 0u);
    EXPECT_EQ(model::DurationHistogram::bucket_of(~0ull),
              model::DurationHistogram::bucket_of(~0ull - 1));
    // Coarse buckets add up to the count, ascending and disjoint.
    std::uint64_t total = 0, last_upper = 0;
    for (const auto& bucket : histogram.buckets(4)) {
        EXPECT_GE(bucket.lower_ns, last_upper);
        EXPECT_LT(bucket.lower_ns, bucket.upper_ns);
        last_upper = bucket.upper_ns;
        total += bucket.count;
    }
    EXPECT_EQ(total, 100u);
    EXPECT_EQ(model::DurationHistogram{}.quantile(0.5), 0u);
}

// A thread's samples, 1 ms apart, built from function names (root first) and new-call counts.
class Tracker : public ::testing::Test {
  protected:
    model::FrameTable frames;
    model::StackTable stacks;
    model::CallTracker tracker{frames, stacks, false};
    std::uint64_t time_ns = 0;

    model::FrameId frame(const char* function, int line) {
        model::Frame f;
        f.function = frames.strings().intern(function);
        f.file = frames.strings().intern("shop.py");
        f.first_line = 1;
        f.line = line;
        return frames.intern(f);
    }
    // `root_first`: function names; `fresh`: how many innermost ones are new calls.
    void sample(std::vector<const char*> root_first, std::uint16_t fresh, std::uint32_t thread = 0,
                model::StackStatus status = model::StackStatus::ok,
                std::uint64_t weight_ns = 1'000'000) {
        std::vector<model::FrameId> ids;
        for (std::size_t i = root_first.size(); i-- > 0;)
            ids.push_back(frame(root_first[i], static_cast<int>(i) * 10));
        Sample s;
        s.key.thread = thread;
        s.key.stack = stacks.intern(ids);
        time_ns += weight_ns;
        s.time_ns = time_ns;
        s.weight_ns = weight_ns;
        s.cpu_ns = 250'000;
        s.status = status;
        s.new_calls = fresh;
        tracker.sample(s);
    }
    const CallStats& stats(const model::CallTable& table, const char* function) {
        for (const CallStats& s : table.functions)
            if (frames.strings().view(s.function) == function) return s;
        static CallStats none;
        ADD_FAILURE() << function << " not in the table";
        return none;
    }
};

TEST_F(Tracker, RunsOfSamplesAreCalls) {
    // main -> place -> record: three calls of record (20, 1 and 3 samples), the last two of
    // them back to back; place is one call of 25 samples; main runs throughout.
    sample({"main", "place", "record"}, 3); // the thread's first sample: all open from before
    sample({"main", "loop"}, 1);
    for (int i = 0; i < 20; ++i)
        sample({"main", "place", "record"}, i == 0 ? 2 : 0);
    sample({"main", "place"}, 0);
    sample({"main", "place", "record"}, 1);
    for (int i = 0; i < 3; ++i)
        sample({"main", "place", "record"}, i == 0 ? 1 : 0);
    sample({"main", "loop"}, 1);
    model::CallTable table = tracker.table();
    EXPECT_TRUE(table.known);
    const CallStats& record = stats(table, "record");
    EXPECT_EQ(record.calls, 3u);
    EXPECT_EQ(record.short_calls, 1u);
    EXPECT_EQ(record.back_to_back, 1u);
    EXPECT_EQ(record.open_calls, 1u); // the one running at the first sample
    EXPECT_EQ(record.durations.count(), 2u);
    EXPECT_EQ(record.durations.max_ns(), 20'000'000u);
    EXPECT_EQ(record.durations.min_ns(), 3'000'000u);
    EXPECT_EQ(record.total_ns, 25'000'000u);
    EXPECT_EQ(record.self_ns, 25'000'000u);
    EXPECT_EQ(record.cpu_ns, 25 * 250'000u);
    const CallStats& place = stats(table, "place");
    EXPECT_EQ(place.calls, 1u);
    EXPECT_EQ(place.durations.max_ns(), 25'000'000u);
    EXPECT_EQ(place.self_ns, 1'000'000u); // the one sample where it was innermost
    EXPECT_EQ(place.total_ns, 26'000'000u);
    const CallStats& main = stats(table, "main");
    EXPECT_EQ(main.calls, 0u);
    EXPECT_EQ(main.open_calls, 1u); // still running: no duration
    EXPECT_EQ(stats(table, "loop").calls, 1u);
    EXPECT_EQ(stats(table, "loop").open_calls, 1u);
}

TEST_F(Tracker, UnknownSamplesNeitherEndNorBeginCalls) {
    sample({"main"}, 1);
    sample({"main", "work"}, 1);
    sample({"main", "work"}, 0);
    sample({}, model::kCallsUnknown, 0, model::StackStatus::torn);
    sample({"main", "work"}, 0);
    sample({"main"}, 0);
    model::CallTable table = tracker.table();
    EXPECT_EQ(table.samples_without_identity, 1u);
    EXPECT_EQ(stats(table, "work").calls, 1u);
    EXPECT_EQ(stats(table, "work").durations.max_ns(), 4'000'000u); // the torn sample's time too
    // A count larger than the stack, or a kept frame of another function, ends calls all the same.
    sample({"main", "work"}, 1);
    sample({"main", "other"}, 0); // said to continue, but another function: a new call
    sample({"main", "work"}, 40);
    sample({"main"}, 0);
    table = tracker.table();
    EXPECT_EQ(stats(table, "other").calls, 1u);
    EXPECT_EQ(stats(table, "work").calls, 3u);
}

TEST_F(Tracker, TheTimeOfASampleWhereCallsChangeIsSplitBetweenThem) {
    // 10 samples of a, then 30 ms of late ticks in which a ended and b began, 10 samples of b.
    sample({"main"}, 1);
    for (int i = 0; i < 10; ++i)
        sample({"main", "a"}, i == 0 ? 1 : 0);
    sample({"main", "b"}, 1, 0, model::StackStatus::ok, 30'000'000);
    for (int i = 0; i < 9; ++i)
        sample({"main", "b"}, 0);
    sample({"main"}, 0);
    model::CallTable table = tracker.table();
    // a: half a period before its first sample, 9 periods, 15 ms of the gap; b: the other 15 ms,
    // 9 periods, half a period after its last.
    EXPECT_EQ(stats(table, "a").durations.max_ns(), 500'000u + 9'000'000u + 15'000'000u);
    EXPECT_EQ(stats(table, "b").durations.max_ns(), 15'000'000u + 9'000'000u + 500'000u);
    // Total and self are the samples' whole time, as in every other output.
    EXPECT_EQ(stats(table, "b").total_ns, 39'000'000u);
}

TEST_F(Tracker, ThreadsAreFollowedApartAndRecursionCountsOnce) {
    sample({"main"}, 1, 0);
    sample({"main"}, 1, 1);
    sample({"main", "f", "f"}, 2, 0);
    sample({"main", "g"}, 1, 1);
    sample({"main", "f", "f"}, 0, 0);
    sample({"main", "g"}, 0, 1);
    sample({"main"}, 0, 0);
    sample({"main"}, 0, 1);
    model::CallTable table = tracker.table();
    const CallStats& f = stats(table, "f");
    EXPECT_EQ(f.calls, 2u);            // the outer call and the inner one
    EXPECT_EQ(f.total_ns, 2'000'000u); // once per sample
    EXPECT_EQ(f.self_ns, 2'000'000u);
    EXPECT_EQ(stats(table, "g").calls, 1u); // thread 1's, not ended by thread 0's samples
    EXPECT_EQ(stats(table, "g").durations.max_ns(), 2'000'000u);
    EXPECT_FALSE(model::CallTracker(frames, stacks, false).table().known);
}

TEST(CallIdentity, NewFramesArgumentsAndCallers) {
    auto frame = [](python::Address at, python::Address code, std::int32_t offset,
                    std::uint8_t arg0, std::uint8_t arg1) {
        python::RawFrame raw;
        raw.frame = at;
        raw.code = code;
        raw.offset = offset;
        raw.code_check = code * 3;
        raw.flags = python::RawFrame::args;
        raw.arg_hash[0] = arg0;
        raw.arg_hash[1] = arg1;
        return raw;
    };
    // slow (0x300) takes one argument; the handler (0x200) two, the second of which it
    // assigns to itself: only its first slot tells calls apart; main takes none.
    auto stable = [](python::Address code) -> std::uint8_t {
        return code == 0x300 ? 0b1 : code == 0x200 ? 0b01 : 0;
    };
    sampling::CallIdentity identity;
    const std::uint32_t kept[] = {0, 1, 2}; // innermost first
    // handler(self, request) at 0x2000 calls slow() at 0x3000; main at 0x1000.
    std::vector<python::RawFrame> stack = {frame(0x3000, 0x300, 10, 1, 9),
                                           frame(0x2000, 0x200, 8, 5, 6),
                                           frame(0x1000, 0x100, 4, 0, 0)};
    EXPECT_EQ(identity.next(stack, kept, stable), 3u); // the first sample: all new
    EXPECT_EQ(identity.next(stack, kept, stable), 0u);
    // slow's second slot is not an argument: not a new call.
    stack[0].arg_hash[1] = 7;
    EXPECT_EQ(identity.next(stack, kept, stable), 0u);
    // The handler's own assignment to its second slot is not a new call either, wherever it is.
    stack[1].arg_hash[1] = 7;
    stack[1].offset = 4;
    EXPECT_EQ(identity.next(stack, kept, stable), 0u);
    // Another object in its first slot is: the handler and slow are new, at any offset.
    stack[1].arg_hash[0] = 77;
    stack[1].offset = 30;
    EXPECT_EQ(identity.next(stack, kept, stable), 2u);
    EXPECT_EQ(identity.next(stack, kept, stable), 0u);
    // Another code object at the same frame address; then another frame address.
    stack[0].code = 0x301;
    EXPECT_EQ(identity.next(stack, kept, stable), 1u);
    stack[2].frame = 0x1008;
    EXPECT_EQ(identity.next(stack, kept, stable), 3u);
    // Without the arguments (a generator frame, 3.10 and older): frames and code only.
    for (auto& raw : stack)
        raw.flags = 0;
    EXPECT_EQ(identity.next(stack, kept, stable), 0u);
    stack[1].arg_hash[0] = 99;
    EXPECT_EQ(identity.next(stack, kept, stable), 0u);
    // Only the kept frames count: a frame left out (not started) is not compared.
    const std::uint32_t outer_two[] = {1, 2};
    EXPECT_EQ(identity.next(stack, outer_two, stable), 0u);
}

TEST(ArgumentSlots, SlotsTheCodeWritesDoNotTellCallsApart) {
    using python::stable_argument_slots;
    const python::PythonVersion v311{3, 11, 0}, v312{3, 12, 0}, v313{3, 13, 0}, v315{3, 15, 0};
    // LOAD_FAST 0, RETURN_VALUE: no writes; up to three arguments count.
    const std::uint8_t reads[] = {124, 0, 83, 0};
    EXPECT_EQ(stable_argument_slots(v311, reads, 2), 0b011);
    EXPECT_EQ(stable_argument_slots(v311, reads, 5), 0b111);
    EXPECT_EQ(stable_argument_slots(v311, reads, 0), 0);
    // 3.11/3.12 STORE_FAST 1, 3.12 LOAD_FAST_AND_CLEAR 2, 3.11 MAKE_CELL 0.
    const std::uint8_t store1[] = {125, 1, 83, 0};
    EXPECT_EQ(stable_argument_slots(v312, store1, 3), 0b101);
    const std::uint8_t clear2[] = {143, 2};
    EXPECT_EQ(stable_argument_slots(v312, clear2, 3), 0b011);
    const std::uint8_t cell0[] = {135, 0};
    EXPECT_EQ(stable_argument_slots(v311, cell0, 3), 0b110);
    // 3.12's specialized STORE_FAST__STORE_FAST in adaptive code.
    const std::uint8_t super[] = {158, 0, 125, 2};
    EXPECT_EQ(stable_argument_slots(v312, super, 3), 0b010);
    // 3.13 STORE_FAST_STORE_FAST (0 << 4 | 2): two slots in one argument; 3.15's STORE_FAST.
    const std::uint8_t pair[] = {112, 0x02};
    EXPECT_EQ(stable_argument_slots(v313, pair, 3), 0b010);
    const std::uint8_t store315[] = {111, 1};
    EXPECT_EQ(stable_argument_slots(v315, store315, 3), 0b101);
    // 3.11's STORE_FAST number is not 3.13's: the table is per minor.
    EXPECT_EQ(stable_argument_slots(v313, store1, 3), 0b111);
    // A version whose opcodes are not known: no argument tells calls apart.
    EXPECT_EQ(stable_argument_slots({3, 16, 0}, reads, 3), 0);
    EXPECT_EQ(stable_argument_slots({3, 10, 0}, reads, 3), 0);
}

} // namespace
