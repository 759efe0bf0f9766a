#include "spyglass/delivery/window_files.hpp"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>

#include <fmt/format.h>
#include <unistd.h>

#include "spyglass/delivery/atomic_file.hpp"
#include "spyglass/signals.hpp"

namespace spyglass::delivery {

namespace {

constexpr std::size_t kQueuedWindows = 4;

// A window's pprof for --push, as a string.
std::string pprof_bytes(const model::Profile& profile) {
    std::string bytes;
    char* buffer = nullptr;
    std::size_t size = 0;
    std::FILE* memory = ::open_memstream(&buffer, &size);
    if (memory == nullptr) return bytes;
    auto writer = output::make_writer(output::Format::pprof);
    bool ok = writer && writer->write(profile, memory).has_value();
    std::fclose(memory);
    if (ok) bytes.assign(buffer, size);
    std::free(buffer);
    return bytes;
}

} // namespace

std::string window_file_name(const std::string& pattern, std::uint64_t unix_ns) {
    std::time_t seconds = static_cast<std::time_t>(unix_ns / 1'000'000'000ull);
    std::tm local{};
    ::localtime_r(&seconds, &local);
    std::string out(pattern.size() + 256, '\0');
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral" // the user's pattern is the point
    std::size_t n = std::strftime(out.data(), out.size(), pattern.c_str(), &local);
#pragma GCC diagnostic pop
    out.resize(n);
    return n == 0 ? pattern : out;
}

Result<void> check_window_pattern(const std::string& pattern, std::uint64_t window_ns) {
    std::uint64_t now = static_cast<std::uint64_t>(std::time(nullptr)) * 1'000'000'000ull;
    // Windows of the next day or so (and across a minute, an hour, a day boundary).
    for (int k = 0; k < 200; ++k) {
        std::uint64_t t = now + static_cast<std::uint64_t>(k) * window_ns * 7;
        if (window_file_name(pattern, t) == window_file_name(pattern, t + window_ns))
            return fail(Errc::invalid_argument,
                        "-o {} names two consecutive {} s windows the same ({}): put the time "
                        "in it, down to the second if needed, e.g. prof-%Y%m%dT%H%M%S.pb.gz",
                        pattern, static_cast<double>(window_ns) / 1e9,
                        window_file_name(pattern, t));
    }
    return {};
}

WindowOutputs::WindowOutputs(std::string pattern, output::Format format,
                             model::DisplayOptions display, std::uint64_t keep_ns, Pusher* pusher)
    : pattern_(std::move(pattern)), format_(format), display_(display), keep_ns_(keep_ns),
      pusher_(pusher) {
    thread_ = std::thread([this] {
        block_signals_here();
        run();
    });
}

WindowOutputs::~WindowOutputs() {
    if (thread_.joinable()) stop();
}

void WindowOutputs::submit(std::unique_ptr<model::Window> window) {
    std::lock_guard lock(mutex_);
    ++stats_.windows;
    if (queue_.size() >= kQueuedWindows) {
        ++stats_.dropped;
        return;
    }
    queue_.push_back(std::move(window));
    wake_.notify_one();
}

void WindowOutputs::snapshot(const model::Window& window) {
    write(window, true);
}

WindowOutputStats WindowOutputs::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        wake_.notify_one();
    }
    if (thread_.joinable()) thread_.join();
    std::lock_guard lock(mutex_);
    return stats_;
}

void WindowOutputs::run() {
    std::unique_lock lock(mutex_);
    for (;;) {
        wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        std::unique_ptr<model::Window> window = std::move(queue_.front());
        queue_.pop_front();
        lock.unlock();
        write(*window, false);
        lock.lock();
    }
}

void WindowOutputs::write(const model::Window& window, bool snapshot) {
    std::lock_guard writing(write_mutex_);
    model::Profile profile = window.profile(display_);
    if (!pattern_.empty()) {
        std::string path = window_file_name(pattern_, window.info.start_unix_ns);
        auto writer = output::make_writer(format_);
        Result<void> written = write_file_atomically(
            path, [&](std::FILE* out) { return writer->write(profile, out); });
        std::lock_guard lock(mutex_);
        if (written) {
            ++stats_.written;
            if (snapshot) ++stats_.snapshots;
            stats_.last_file = path;
        } else if (stats_.error.empty()) {
            stats_.error = written.error().message;
        }
        if (written) keep(path, window.info.start_unix_ns);
    }
    // A snapshot is a part of a window that will be sent whole when it ends.
    if (pusher_ != nullptr && !snapshot) {
        std::uint64_t from = window.info.start_unix_ns / 1'000'000'000ull;
        std::uint64_t until =
            (window.info.start_unix_ns + window.totals.elapsed_ns + 999'999'999ull) /
            1'000'000'000ull;
        pusher_->submit(pprof_bytes(profile), from, std::max(until, from + 1));
    }
}

void WindowOutputs::keep(const std::string& path, std::uint64_t start_unix_ns) {
    if (files_.empty() || files_.back().first != path) files_.emplace_back(path, start_unix_ns);
    if (keep_ns_ == 0) return;
    // Windows that started more than --keep before this one: deleted, oldest first.
    while (files_.size() > 1 && files_.front().second + keep_ns_ <= start_unix_ns) {
        if (::unlink(files_.front().first.c_str()) == 0 || errno == ENOENT) ++stats_.deleted;
        files_.pop_front();
    }
}

} // namespace spyglass::delivery
