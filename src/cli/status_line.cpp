#include "spyglass/cli/status_line.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "spyglass/cli/summary.hpp"

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
    auto head = [&](std::size_t bar) {
        if (duration_s <= 0) return fmt::format("spyglass: {:.1f} s", elapsed);
        double done = std::clamp(elapsed / duration_s, 0.0, 1.0);
        auto filled = static_cast<std::size_t>(std::floor(done * static_cast<double>(bar)));
        return fmt::format("spyglass: [{}{}] {:3.0f}%  {:.1f} s / {:g} s", std::string(filled, '#'),
                           std::string(bar - filled, '-'), std::floor(done * 100), elapsed,
                           duration_s);
    };
    // What follows the time, most important first: on a narrow terminal the last ones go.
    std::vector<std::string> parts;
    if (progress.waiting) {
        parts.push_back("waiting for a Python interpreter...");
    } else {
        // Tick n comes n periods after the start, so n ticks cover n whole periods.
        double covered = elapsed + (progress.ticks > 0 ? 1.0 / rate_hz : 0.0);
        double achieved = covered > 0 ? static_cast<double>(progress.ticks) / covered : 0.0;
        parts.push_back(count_of(progress.samples, "sample"));
        parts.push_back(count_of(progress.errors, "error"));
        parts.push_back(fmt::format("{:.1f} Hz (of {:g})", achieved, rate_hz));
    }
    parts.push_back("(Ctrl-C to stop)");
    // A shorter bar before the sample count goes.
    std::string text = head(kBarWidth);
    if (width > 0 && text.size() + 2 + parts[0].size() > width) text = head(kBarWidth / 2);
    auto length = [&](std::size_t count) {
        std::size_t n = text.size();
        for (std::size_t i = 0; i < count; ++i)
            n += 2 + parts[i].size();
        return n;
    };
    std::size_t shown = parts.size();
    while (width > 0 && shown > 1 && length(shown) > width)
        --shown;
    for (std::size_t i = 0; i < shown; ++i)
        text += "  " + parts[i];
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
