// The progress line of spyglass record (src/cli/status_line.cpp).
#include <gtest/gtest.h>

#include "spyglass/cli/status_line.hpp"

namespace {

using spyglass::cli::status_text;
using spyglass::sampling::Progress;

Progress progress(std::uint64_t elapsed_ns, std::uint64_t ticks, std::uint64_t samples) {
    Progress p;
    p.elapsed_ns = elapsed_ns;
    p.ticks = ticks;
    p.samples = samples;
    return p;
}

TEST(StatusLine, FirstUpdateClaimsTheAskedRateNotThousands) {
    // The first tick comes right at the start: 1 tick in 50 us used to read as 20,000 Hz.
    EXPECT_EQ(status_text(progress(50'000, 1, 3), 0, 100, 0),
              "spyglass: 0.0 s  3 samples  0 errors  99.5 Hz (of 100)  (Ctrl-C to stop)");
}

TEST(StatusLine, DurationShowsABarAPercentageAndTheDurationAsGiven) {
    EXPECT_EQ(status_text(progress(1'250'000'000, 126, 250), 2.5, 100, 0),
              "spyglass: [##########----------]  50%  1.2 s / 2.5 s  250 samples  0 errors  "
              "100.0 Hz (of 100)  (Ctrl-C to stop)");
    EXPECT_NE(status_text(progress(0, 0, 0), 30, 100, 0).find("/ 30 s"), std::string::npos);
    EXPECT_NE(status_text(progress(9'000'000'000, 900, 9), 2.5, 100, 0)
                  .find("[####################] 100%"),
              std::string::npos);
}

TEST(StatusLine, NarrowTerminalsLoseTheLeastImportantPartsFirst) {
    Progress p = progress(1'000'000'000, 100, 1234);
    std::string wide = status_text(p, 0, 100, 0);
    for (std::size_t width : {79u, 60u, 40u, 30u, 20u}) {
        std::string text = status_text(p, 0, 100, width);
        EXPECT_LE(text.size(), width) << text;
        EXPECT_EQ(wide.rfind(text.substr(0, 20), 0), 0u) << text;
    }
    EXPECT_EQ(status_text(p, 0, 100, 40), "spyglass: 1.0 s  1,234 samples  0 errors");
    EXPECT_EQ(status_text(p, 5, 100, 56),
              "spyglass: [##--------]  20%  1.0 s / 5 s  1,234 samples");
}

TEST(StatusLine, OneSampleOneError) {
    Progress p = progress(10'000'000, 1, 1);
    p.errors = 1;
    EXPECT_EQ(status_text(p, 0, 100, 0),
              "spyglass: 0.0 s  1 sample  1 error  50.0 Hz (of 100)  (Ctrl-C to stop)");
}

TEST(StatusLine, WaitingForTheInterpreter) {
    Progress p = progress(3'000'000'000, 0, 0);
    p.waiting = true;
    EXPECT_EQ(status_text(p, 0, 100, 0),
              "spyglass: 3.0 s  waiting for a Python interpreter...  (Ctrl-C to stop)");
}

} // namespace
