#include "spyglass/sampling/capture.hpp"

#include <bit>

namespace spyglass::sampling {

CaptureQueue::CaptureQueue(std::size_t slots, std::size_t frames)
    : slots_(std::bit_ceil(slots)), frames_(frames), spans_(slots_.size()),
      slot_mask_(slots_.size() - 1), frame_size_(frames) {}

ThreadCapture* CaptureQueue::reserve(std::uint32_t frames, python::RawFrame*& frame_space) {
    const std::uint64_t head = head_.load(std::memory_order_relaxed);
    if (head - tail_.load(std::memory_order_acquire) > slot_mask_) return nullptr;
    if (frames > frame_size_) return nullptr;
    // A capture's frames are contiguous: skip the end of the ring if they do not fit there.
    std::uint64_t start = frames_head_;
    std::uint64_t position = start % frame_size_;
    if (position + frames > frame_size_) start += frame_size_ - position;
    if (start + frames - frames_tail_.load(std::memory_order_acquire) > frame_size_) return nullptr;
    frame_space = frames_.data() + start % frame_size_;
    spans_[head & slot_mask_] = {start, frames};
    ThreadCapture* slot = &slots_[head & slot_mask_];
    *slot = ThreadCapture{};
    return slot;
}

void CaptureQueue::push() {
    const std::uint64_t head = head_.load(std::memory_order_relaxed);
    const Span& span = spans_[head & slot_mask_];
    frames_head_ = span.at + span.count;
    head_.store(head + 1, std::memory_order_release);
}

void CaptureQueue::notify() {
    signals_.fetch_add(1, std::memory_order_release);
    signals_.notify_one();
}

void CaptureQueue::close() {
    closed_.store(true, std::memory_order_release);
    notify();
}

const ThreadCapture* CaptureQueue::front(std::span<const python::RawFrame>& frames) const {
    const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
    if (tail == head_.load(std::memory_order_acquire)) return nullptr;
    const Span& span = spans_[tail & slot_mask_];
    frames = {frames_.data() + span.at % frame_size_, span.count};
    return &slots_[tail & slot_mask_];
}

void CaptureQueue::pop() {
    const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
    const Span& span = spans_[tail & slot_mask_];
    frames_tail_.store(span.at + span.count, std::memory_order_release);
    tail_.store(tail + 1, std::memory_order_release);
}

bool CaptureQueue::wait() {
    for (;;) {
        // Read before looking: a push and notify() after this changes it, and wait() returns.
        std::uint32_t signals = signals_.load(std::memory_order_acquire);
        bool closed = closed_.load(std::memory_order_acquire);
        if (head_.load(std::memory_order_acquire) != tail_.load(std::memory_order_relaxed))
            return true;
        if (closed) return false;
        signals_.wait(signals, std::memory_order_acquire);
    }
}

} // namespace spyglass::sampling
