#include "spyglass/cli/status_line.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "spyglass/output/writer.hpp"

namespace spyglass::cli {

namespace {

constexpr std::size_t kBarWidth = 20;

std::size_t terminal_width() {
    winsize size{};
    if (::ioctl(2, TIOCGWINSZ, &size) != 0 || size.ws_col == 0) return 80;
    return size.ws_col;
}

} // namespace

std::string status_text(const sampling::Progress& progress, double duration_s, double rate_hz,
                        std::size_t width) {
    double elapsed = static_cast<double>(progress.elapsed_ns) / 1e9;
    std::string text = "spyglass: ";
    if (duration_s > 0) {
        double done = std::clamp(elapsed / duration_s, 0.0, 1.0);
        auto filled = static_cast<std::size_t>(std::floor(done * kBarWidth));
        text += fmt::format("[{}{}] {:3.0f}%  {:.1f} s / {:g} s", std::string(filled, '#'),
                            std::string(kBarWidth - filled, '-'), std::floor(done * 100), elapsed,
                            duration_s);
    } else {
        text += fmt::format("{:.1f} s", elapsed);
    }
    if (progress.waiting) {
        text += "  waiting for a Python interpreter...";
    } else {
        // Tick n comes n periods after the start, so n ticks cover n whole periods.
        double covered = elapsed + (progress.ticks > 0 ? 1.0 / rate_hz : 0.0);
        double achieved = covered > 0 ? static_cast<double>(progress.ticks) / covered : 0.0;
        text += fmt::format("  {} samples  {:.1f} Hz (of {:g})  {} errors  (Ctrl-C to stop)",
                            output::with_commas(progress.samples), achieved, rate_hz,
                            output::with_commas(progress.errors));
    }
    if (width > 0 && text.size() > width) text.resize(width);
    return text;
}

StatusLine::StatusLine(double duration_s, double rate_hz, bool enabled)
    : duration_s_(duration_s), rate_hz_(rate_hz), enabled_(enabled && ::isatty(2) != 0) {}

void StatusLine::update(const sampling::Progress& progress) {
    if (!enabled_) return;
    // One column short of the width: a full line would wrap, and \r would not go back to it.
    std::size_t width = terminal_width();
    std::string text = status_text(progress, duration_s_, rate_hz_, width > 1 ? width - 1 : 0);
    std::fprintf(stderr, "\r\033[K%s", text.c_str());
    shown_ = true;
}

void StatusLine::clear() {
    if (shown_) std::fprintf(stderr, "\r\033[K");
    shown_ = false;
}

} // namespace spyglass::cli
