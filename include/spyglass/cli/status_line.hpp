// The progress line `spyglass record` keeps on a terminal (stderr) while it samples: elapsed
// time, samples, the achieved rate and errors; with --duration a bar and a percentage. Not in
// launch mode, where the command owns the terminal and its output would be glued to the line
// (py-spy shows none there either), nor with --hideprogress.
#pragma once

#include <cstddef>
#include <string>

#include "spyglass/sampling/session.hpp"

namespace spyglass::cli {

// One update's text, without terminal control sequences, at most `width` columns (0: no limit):
// on a narrow terminal the Ctrl-C hint, then the rate, then the error count are left out.
// The achieved rate counts each tick's whole period, so the first update does not claim
// thousands of Hz.
std::string status_text(const sampling::Progress& progress, double duration_s, double rate_hz,
                        std::size_t width);

class StatusLine {
  public:
    // Shows nothing unless `enabled` and stderr is a terminal.
    StatusLine(double duration_s, double rate_hz, bool enabled);
    void update(const sampling::Progress& progress);
    void clear();

  private:
    double duration_s_, rate_hz_;
    bool enabled_;
    bool shown_ = false;
};

} // namespace spyglass::cli
