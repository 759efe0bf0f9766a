// The sampling clock: when each tick is due (a fixed period from the start, optionally jittered
// by up to a quarter period against aliasing), when the recording's duration is over, and how
// many whole ticks a late pass missed. It only computes: the session sleeps and reads the time.
#pragma once

#include <cstdint>
#include <random>

namespace spyglass::sampling {

class TickClock {
  public:
    // `duration_ns` 0: no end.
    TickClock(std::uint64_t period_ns, std::uint64_t duration_ns, bool jitter);

    void start(std::uint64_t now_ns) noexcept;
    // When to wake for the current tick: its deadline, or the recording's end when that comes
    // first (a recording ends at its duration, not at the first tick after it).
    std::uint64_t wake_at();
    // Woken at `now_ns` for the current tick: whether the duration is over. Tick 0 is always
    // taken.
    [[nodiscard]] bool over(std::uint64_t now_ns) const noexcept;
    // The pass at `now_ns` is taken for the current tick: moves on to the next, skipping the
    // whole ticks the pass came too late for. Returns how many were skipped (late ticks: the
    // samples of this pass stand for them by their weight).
    std::uint64_t take(std::uint64_t now_ns) noexcept;

    [[nodiscard]] std::uint64_t start_ns() const noexcept { return start_; }
    // The end of the recording's duration (0: none).
    [[nodiscard]] std::uint64_t end_ns() const noexcept { return end_; }
    [[nodiscard]] std::uint64_t tick() const noexcept { return tick_; }

  private:
    std::uint64_t period_, duration_;
    bool jitter_;
    std::uint64_t start_ = 0, end_ = 0, tick_ = 0, deadline_ = 0;
    bool last_ = false; // the current wake is the recording's end
    std::mt19937_64 random_{0x5eed};
    std::uniform_int_distribution<std::int64_t> spread_;
};

} // namespace spyglass::sampling
