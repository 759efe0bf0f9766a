#include "spyglass/handoff/capture_queue.hpp"

#include <bit>
#include <chrono>

namespace spyglass::sampling {

CaptureQueue::CaptureQueue(std::size_t slots, std::size_t frames, std::size_t bytes)
    : slots_(std::bit_ceil(slots)), frames_(frames), bytes_(bytes), spans_(slots_.size()),
      slot_mask_(slots_.size() - 1), frame_size_(frames) {}

void CaptureQueue::reserve_bytes(std::size_t bytes) {
    if (bytes_.size() < bytes) bytes_.resize(bytes);
}

ThreadCapture* CaptureQueue::reserve(std::uint32_t frames, python::RawFrame*& frame_space) {
    std::uint8_t* none = nullptr;
    return reserve(frames, frame_space, 0, none);
}

ThreadCapture* CaptureQueue::reserve(std::uint32_t frames, python::RawFrame*& frame_space,
                                     std::uint32_t bytes, std::uint8_t*& byte_space) {
    const std::uint64_t head = head_.load(std::memory_order_relaxed);
    if (head - tail_.load(std::memory_order_acquire) > slot_mask_) return nullptr;
    if (frames > frame_size_) return nullptr;
    // A capture's frames are contiguous: skip the end of the ring if they do not fit there.
    std::uint64_t start = frames_head_.load(std::memory_order_relaxed);
    std::uint64_t position = start % frame_size_;
    if (position + frames > frame_size_) start += frame_size_ - position;
    if (start + frames - frames_tail_.load(std::memory_order_acquire) > frame_size_) return nullptr;
    frame_space = frames_.data() + start % frame_size_;
    // The bytes likewise, in their own ring.
    std::uint64_t byte_start = bytes_head_.load(std::memory_order_relaxed);
    if (bytes > 0) {
        const std::uint64_t size = bytes_.size();
        if (bytes > size) return nullptr;
        if (byte_start % size + bytes > size) byte_start += size - byte_start % size;
        if (byte_start + bytes - bytes_tail_.load(std::memory_order_acquire) > size) return nullptr;
        byte_space = bytes_.data() + byte_start % size;
    }
    spans_[head & slot_mask_] = {start, frames, bytes, byte_start};
    ThreadCapture* slot = &slots_[head & slot_mask_];
    *slot = ThreadCapture{};
    return slot;
}

void CaptureQueue::push() {
    const std::uint64_t head = head_.load(std::memory_order_relaxed);
    const Span& span = spans_[head & slot_mask_];
    frames_head_.store(span.at + span.count, std::memory_order_relaxed);
    if (span.byte_count > 0)
        bytes_head_.store(span.bytes_at + span.byte_count, std::memory_order_relaxed);
    head_.store(head + 1, std::memory_order_release);
}

bool CaptureQueue::filling() const noexcept {
    std::uint64_t slots =
        head_.load(std::memory_order_relaxed) - tail_.load(std::memory_order_relaxed);
    std::uint64_t frames =
        frames_head_.load(std::memory_order_relaxed) - frames_tail_.load(std::memory_order_relaxed);
    std::uint64_t bytes =
        bytes_head_.load(std::memory_order_relaxed) - bytes_tail_.load(std::memory_order_relaxed);
    return slots > slots_.size() / 4 || frames > frame_size_ / 4 || bytes > bytes_.size() / 4;
}

void CaptureQueue::notify() {
    if (filling()) wake_.notify_one();
}

void CaptureQueue::close() {
    {
        std::lock_guard lock(wake_mutex_);
        closed_.store(true, std::memory_order_release);
    }
    wake_.notify_one();
}

const ThreadCapture* CaptureQueue::front(std::span<const python::RawFrame>& frames) const {
    std::span<const std::uint8_t> bytes;
    return front(frames, bytes);
}

const ThreadCapture* CaptureQueue::front(std::span<const python::RawFrame>& frames,
                                         std::span<const std::uint8_t>& bytes) const {
    const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
    if (tail == head_.load(std::memory_order_acquire)) return nullptr;
    const Span& span = spans_[tail & slot_mask_];
    frames = {frames_.data() + span.at % frame_size_, span.count};
    bytes = span.byte_count == 0
                ? std::span<const std::uint8_t>()
                : std::span<const std::uint8_t>(bytes_.data() + span.bytes_at % bytes_.size(),
                                                span.byte_count);
    return &slots_[tail & slot_mask_];
}

void CaptureQueue::pop() {
    const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
    const Span& span = spans_[tail & slot_mask_];
    frames_tail_.store(span.at + span.count, std::memory_order_release);
    if (span.byte_count > 0)
        bytes_tail_.store(span.bytes_at + span.byte_count, std::memory_order_release);
    tail_.store(tail + 1, std::memory_order_release);
}

bool CaptureQueue::wait() {
    std::unique_lock lock(wake_mutex_);
    // A wake-up lost between the check and the wait costs at most kIdleWakeNs.
    wake_.wait_for(lock, std::chrono::nanoseconds(kIdleWakeNs),
                   [&] { return closed_.load(std::memory_order_acquire) || filling(); });
    bool closed = closed_.load(std::memory_order_acquire);
    return !closed ||
           head_.load(std::memory_order_acquire) != tail_.load(std::memory_order_relaxed);
}

} // namespace spyglass::sampling
