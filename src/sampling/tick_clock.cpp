#include "spyglass/sampling/tick_clock.hpp"

namespace spyglass::sampling {

TickClock::TickClock(std::uint64_t period_ns, std::uint64_t duration_ns, bool jitter)
    : period_(period_ns), duration_(duration_ns), jitter_(jitter),
      spread_(-static_cast<std::int64_t>(period_ns / 4), static_cast<std::int64_t>(period_ns / 4)) {
}

void TickClock::start(std::uint64_t now_ns) noexcept {
    start_ = now_ns;
    end_ = duration_ != 0 ? now_ns + duration_ : 0;
    tick_ = 0;
}

std::uint64_t TickClock::wake_at() {
    deadline_ = start_ + tick_ * period_;
    if (jitter_ && tick_ > 0) deadline_ += static_cast<std::uint64_t>(spread_(random_));
    last_ = end_ != 0 && deadline_ >= end_;
    return last_ ? end_ : deadline_;
}

bool TickClock::over(std::uint64_t now_ns) const noexcept {
    return last_ || (end_ != 0 && now_ns >= end_ && tick_ > 0);
}

std::uint64_t TickClock::take(std::uint64_t now_ns) noexcept {
    std::uint64_t missed = 0;
    if (now_ns > deadline_ + period_) missed = (now_ns - deadline_) / period_;
    tick_ += missed + 1;
    return missed;
}

} // namespace spyglass::sampling
