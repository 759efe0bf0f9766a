// What `spyglass top` shows and how: the header and the rows as text (shared by the full-screen
// view and the plain tables printed when stdout is not a terminal), what each key does, and
// the ncurses screen itself.
#pragma once

#include <cstddef>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <sys/types.h>

#include "spyglass/output/top_model.hpp"

namespace spyglass::output {

// What is being watched, for the header.
struct TopTarget {
    std::vector<pid_t> pids;
    std::vector<std::string> command;
    std::string python_version;                       // empty: not known yet
    double rate_hz = 100;                             // as asked
    model::SampleMode mode = model::SampleMode::wall; // --mode
    bool gil_only = false;                            // --gil
};

// What the user chose to see.
struct TopView {
    TopQuery query;
    double interval_s = 1; // the refresh interval, for the header of the interval window
    bool full_filenames = false;
    bool paused = false;
    bool help = false;
    bool calls_available = false; // the model follows calls (--calls): key k shows them
};

enum class TopAction : std::uint8_t { none, redraw, pause, reset, quit };

inline constexpr int kTopKeyResize = 0x110000; // a terminal resize, as a key

// Applies a key to the view: sort keys 1-6 (and < > to move along the columns), l, i, t/T
// (the thread filter cycles through `threads`), v (the "Waiting on" view), w/W (the wait filter
// cycles through `waits`), c, k (the calls view, when available), p/space, r, h/?, q. The action
// says what the caller has to do beyond redrawing; while the help shows, any key closes it.
TopAction apply_key(TopView& view, int key, const std::vector<TopThread>& threads,
                    const std::vector<TopWait>& waits = {});

// The header lines: the process, the counts, the on/off-CPU and GIL shares, the view.
std::vector<std::string> top_header(const TopTable& table, const TopTarget& target,
                                    const TopView& view, const std::vector<TopThread>& threads);
// The column titles for a terminal `width` wide (0: no limit), aligned with top_row;
// `name_column` is where the function name starts. Narrow terminals get no time columns.
std::string top_titles(std::size_t width, std::size_t* name_column = nullptr);
// One row for a terminal `width` wide, the label fitted to it (0: not shortened).
std::string top_row(const TopRow& row, const TopTable& table, bool full_filenames,
                    std::size_t width);
// The "Waiting on" view: its titles, and one row fitted to `width` (0: not shortened).
std::string top_wait_titles();
std::string top_wait_row(const TopWaitRow& row, const TopTable& table, std::size_t width);
std::vector<std::string> top_help();
// The calls view (top --calls): the column titles of -f calls' table, then its rows (at most
// `max_rows`, 0: all) fitted to `width` (0: not shortened), then "(N more rows)" and the notes
// under the table. `waiting`: no Python process yet.
std::vector<std::string> top_calls_lines(const CallsView& view, bool full_filenames,
                                         std::size_t width, std::size_t max_rows, bool waiting);

// The whole table as plain text: header, titles, then the rows (at most `max_rows`, 0: all).
std::string plain_table(const TopTable& table, const TopTarget& target, const TopView& view,
                        const std::vector<TopThread>& threads, std::size_t width,
                        std::size_t max_rows);

// The full-screen view. Opening switches the terminal to the alternate screen without echo or
// cursor; destroying the screen restores it exactly as it was.
class TopScreen {
  public:
    // nullptr when the terminal cannot be driven (no description for TERM, no /dev/tty).
    static std::unique_ptr<TopScreen> open();
    ~TopScreen();
    TopScreen(const TopScreen&) = delete;
    TopScreen& operator=(const TopScreen&) = delete;

    // The next key within `timeout_ms`, else -1. Arrows come as '<' and '>'.
    int read_key(int timeout_ms);
    // `message`: a line to show above the key hints (a warning), or empty. `repaint`: paint
    // every cell again, for when something else wrote to the terminal.
    void draw(const TopTable& table, const TopTarget& target, const TopView& view,
              const std::vector<TopThread>& threads, const std::string& message, bool repaint);

  private:
    TopScreen(void* screen, std::FILE* input) : screen_(screen), input_(input) {}
    void* screen_;     // ncurses' SCREEN
    std::FILE* input_; // /dev/tty when stdin is not the terminal, else null
};

} // namespace spyglass::output
