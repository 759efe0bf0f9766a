#include "spyglass/output/top_screen.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include "spyglass/output/writer.hpp"
#include "spyglass/terminal_text.hpp"

// Without its macros, curses.h does not turn erase(), clear() or refresh() into macros that
// break the standard library's members of the same names.
#define NCURSES_NOMACROS
#include <curses.h>

namespace spyglass::output {

namespace {

struct Column {
    const char* title;
    int width;
    int dropped_at; // the first narrowness (shown_columns) that leaves the column out
};
constexpr std::size_t kWaitWidth = 22;
constexpr int kAlways = 3;
constexpr Column kColumns[] = {{"%Own", 6, kAlways},
                               {"%Total", 7, kAlways},
                               {"OwnTime", 9, 1},
                               {"TotalTime", 10, 1},
                               {"OnCPU", 6, kAlways},
                               {"Waiting on", static_cast<int>(kWaitWidth), 2},
                               {"Function (file:line)", 0, kAlways}};
// The cells before the label; the last of them (the wait) is text, the others numbers.
constexpr std::size_t kNumberColumns = 6;
constexpr std::size_t kWaitColumn = 5;
constexpr std::size_t kWideNameColumn = 6 + 1 + 7 + 1 + 9 + 1 + 10 + 1 + 6 + 1 + kWaitWidth + 2;
constexpr std::size_t kNoTimesNameColumn = kWideNameColumn - (9 + 1 + 10 + 1);
constexpr std::size_t kMinLabel = 24; // narrower than this beside the columns: drop some

// The column a sort key sorts by (the wait column is not one of them).
std::size_t column_of(TopSort sort) {
    auto index = static_cast<std::size_t>(sort);
    return index < kWaitColumn ? index : kNumberColumns;
}

// At most `width` code points of `text`, ".." at the end when cut.
std::string cut(std::string_view text, std::size_t width) {
    if (text_width(text) <= width) return std::string(text);
    std::string out;
    std::size_t count = 0;
    for (char c : text) {
        bool starts = (static_cast<unsigned char>(c) & 0xC0) != 0x80;
        if (starts && ++count > width - 2) break;
        out.push_back(c);
    }
    return out + "..";
}

// 0: every column; 1: no time columns; 2: no wait column either.
int narrowness(std::size_t width) {
    if (width == 0 || width >= kWideNameColumn + kMinLabel) return 0;
    return width >= kNoTimesNameColumn + kMinLabel ? 1 : 2;
}

bool shown(std::size_t column, std::size_t width) {
    return narrowness(width) < kColumns[column].dropped_at;
}

// Where each column starts (-1: not shown) and where the label starts.
struct Layout {
    int start[kNumberColumns + 1];
};

Layout layout(std::size_t width) {
    Layout out{};
    int at = 0;
    for (std::size_t i = 0; i < kNumberColumns; ++i) {
        if (!shown(i, width)) {
            out.start[i] = -1;
            continue;
        }
        out.start[i] = at;
        at += kColumns[i].width + 1;
    }
    out.start[kNumberColumns] = at + 1;
    return out;
}

std::string line_of(const std::string (&cells)[kNumberColumns], std::string_view label,
                    std::size_t width) {
    std::string out;
    for (std::size_t i = 0; i < kNumberColumns; ++i) {
        if (!shown(i, width)) continue;
        if (!out.empty()) out += ' ';
        if (i == kWaitColumn) {
            std::string text = cut(cells[i], kWaitWidth);
            out += text + std::string(kWaitWidth - std::min(kWaitWidth, text_width(text)), ' ');
        } else {
            out += fmt::format("{:>{}}", cells[i], kColumns[i].width);
        }
    }
    out += "  ";
    out += label;
    return out;
}

constexpr const char* kHints = " q quit  h help  1-6 sort  l lines  i interval  t thread  "
                               "v waits  w wait  c cpu/wall  p pause  r reset";

std::string percent(std::uint64_t part, std::uint64_t whole) {
    if (whole == 0) return "-";
    return fmt::format("{:.1f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

std::string duration(double s) {
    if (s < 10) return fmt::format("{:.2f}s", s);
    if (s < 100) return fmt::format("{:.1f}s", s);
    if (s < 100000) return fmt::format("{:.0f}s", s);
    return fmt::format("{:.0f}h", s / 3600);
}

std::string thread_label(const TopThread& thread, bool with_pid) {
    std::string label = fmt::format("Thread {}", thread.info.tid);
    if (!thread.info.name.empty()) label += fmt::format(" ({})", terminal_safe(thread.info.name));
    if (with_pid) label += fmt::format(" of pid {}", thread.info.pid);
    return label;
}

// One '?' per character the screen cannot show: the narrow ncurses shows ASCII only.
std::string screen_text(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        auto byte = static_cast<unsigned char>(text[i]);
        // The calls view's units and its header's "±".
        if (text.substr(i, 2) == "\u00b5") {
            out.push_back('u');
            ++i;
            continue;
        }
        if (text.substr(i, 2) == "\u00b1") {
            out += "+-";
            ++i;
            continue;
        }
        if ((byte & 0xC0) == 0x80) continue;
        out.push_back(byte >= 0x20 && byte < 0x7F ? text[i] : '?');
    }
    return out;
}

} // namespace

TopAction apply_key(TopView& view, int key, const std::vector<TopThread>& threads,
                    const std::vector<TopWait>& waits) {
    if (key == 'q' || key == 'Q') return TopAction::quit;
    if (key == kTopKeyResize) return TopAction::redraw;
    if (view.help) {
        view.help = false;
        return TopAction::redraw;
    }
    TopQuery& query = view.query;
    auto sort = static_cast<int>(query.sort);
    switch (key) {
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6':
        query.sort = static_cast<TopSort>(key - '1');
        break;
    case '<':
        query.sort = static_cast<TopSort>((sort + kTopSortCount - 1) % kTopSortCount);
        break;
    case '>':
        query.sort = static_cast<TopSort>((sort + 1) % kTopSortCount);
        break;
    case 'l':
    case 'L':
        query.by_line = !query.by_line;
        break;
    case 'i':
    case 'I':
        query.interval = !query.interval;
        break;
    case 'c':
    case 'C':
        query.view = query.view == model::SampleMode::wall ? model::SampleMode::cpu
                                                           : model::SampleMode::wall;
        break;
    case 't':
    case 'T': {
        // All threads, then each thread in turn, then all again.
        auto at = std::find_if(threads.begin(), threads.end(), [&](const TopThread& t) {
            return query.thread && t.index == *query.thread;
        });
        std::ptrdiff_t position = at == threads.end() ? -1 : at - threads.begin();
        auto count = static_cast<std::ptrdiff_t>(threads.size());
        position = key == 't' ? position + 1 : (position < 0 ? count - 1 : position - 1);
        if (position < 0 || position >= count)
            query.thread.reset();
        else
            query.thread = threads[static_cast<std::size_t>(position)].index;
        break;
    }
    case 'v':
    case 'V':
        query.waits = !query.waits;
        query.calls = false;
        break;
    case 'k':
    case 'K':
        if (!view.calls_available) return TopAction::none;
        query.calls = !query.calls;
        query.waits = false;
        break;
    case 'w':
    case 'W': {
        // All samples, then only those of each wait in turn, then all again.
        auto at = std::find_if(waits.begin(), waits.end(), [&](const TopWait& w) {
            return query.wait && w.wait == *query.wait;
        });
        std::ptrdiff_t position = at == waits.end() ? -1 : at - waits.begin();
        auto count = static_cast<std::ptrdiff_t>(waits.size());
        position = key == 'w' ? position + 1 : (position < 0 ? count - 1 : position - 1);
        if (position < 0 || position >= count)
            query.wait.reset();
        else
            query.wait = waits[static_cast<std::size_t>(position)].wait;
        break;
    }
    case 'p':
    case 'P':
    case ' ':
        view.paused = !view.paused;
        return TopAction::pause;
    case 'r':
    case 'R':
        return TopAction::reset;
    case 'h':
    case 'H':
    case '?':
        view.help = true;
        break;
    default:
        return TopAction::none;
    }
    return TopAction::redraw;
}

std::vector<std::string> top_header(const TopTable& table, const TopTarget& target,
                                    const TopView& view, const std::vector<TopThread>& threads) {
    const TopStats& stats = table.stats;
    std::vector<std::string> lines;

    std::string process;
    if (target.pids.empty()) {
        process = "waiting for a Python interpreter";
    } else {
        process = fmt::format("{} {}", target.pids.size() == 1 ? "pid" : "pids",
                              fmt::join(target.pids, ", "));
    }
    std::string line = fmt::format("spyglass top  {}", process);
    if (!target.python_version.empty()) line += "  Python " + target.python_version;
    if (!target.command.empty()) line += "  " + terminal_safe(join_words(target.command));
    lines.push_back(std::move(line));

    double seconds = static_cast<double>(stats.elapsed_ns) / 1e9;
    // Each tick covers its whole period: never more than asked (-r 0.2 -d 2, -d 0.0001).
    double covered_ns =
        target.rate_hz > 0 ? static_cast<double>(stats.session_ticks) * 1e9 / target.rate_hz : 0;
    std::string rate =
        stats.session_ns == 0
            ? std::string("-")
            : fmt::format("{:.1f}",
                          static_cast<double>(stats.session_ticks) * 1e9 /
                              std::max(static_cast<double>(stats.session_ns), covered_ns));
    std::string errors = with_commas(stats.errors);
    if (stats.errors > 0) errors += fmt::format(" ({})", percent(stats.errors, stats.samples));
    lines.push_back(fmt::format("{} {:.1f}s  Samples {}  Rate {} Hz (asked {:g})  Errors {}  "
                                "Threads {} ({} on-CPU)",
                                view.query.interval ? "Last" : "Elapsed", seconds,
                                with_commas(stats.samples), rate, target.rate_hz, errors,
                                stats.threads, stats.threads_on_cpu));

    // With a thread filter, the GIL share is that thread's; else the share of the passes in
    // which any thread held it.
    std::string gil = view.query.thread ? percent(stats.gil, stats.samples)
                                        : percent(stats.gil_ticks, stats.ticks);
    line = fmt::format("On-CPU {}  Waiting {}  GIL {}", percent(stats.on_cpu, stats.samples),
                       percent(stats.samples - stats.on_cpu, stats.samples), gil);
    if (target.mode == model::SampleMode::cpu) line += "  (--mode cpu: running threads only)";
    if (target.gil_only) line += "  (--gil: GIL holders only)";
    lines.push_back(std::move(line));

    std::string who = "All threads";
    if (view.query.thread) {
        who = fmt::format("Thread index {}", *view.query.thread);
        for (const TopThread& thread : threads)
            if (thread.index == *view.query.thread)
                who = thread_label(thread, target.pids.size() > 1);
    }
    const bool calls = view.query.calls && !view.query.waits;
    line = fmt::format("View {} | {} | {} | {} | {}",
                       view.query.view == model::SampleMode::cpu && !calls ? "cpu" : "wall",
                       view.query.waits     ? "Waiting on"
                       : calls              ? "Calls"
                       : view.query.by_line ? "By line"
                                            : "By function",
                       view.query.interval && !calls ? fmt::format("Last {:g}s", view.interval_s)
                                                     : std::string("Cumulative"),
                       who,
                       view.query.waits ? std::string("Sort time")
                       : calls          ? std::string("Sort total")
                                        : fmt::format("Sort {}", top_sort_name(view.query.sort)));
    if (view.query.wait) {
        std::string label = fmt::format("wait #{}", view.query.wait->value);
        for (const TopWaitRow& wait : table.waits)
            if (wait.wait == *view.query.wait) label = wait.label;
        line += " | Waiting on " + label;
    }
    if (view.paused) line += "  [paused]";
    lines.push_back(std::move(line));
    if (calls && target.rate_hz > 0)
        lines.push_back(
            calls_header(static_cast<std::uint64_t>(1e9 / target.rate_hz + 0.5), target.mode));
    return lines;
}

std::string top_titles(std::size_t width, std::size_t* name_column) {
    if (name_column != nullptr)
        *name_column = static_cast<std::size_t>(layout(width).start[kNumberColumns]);
    std::string cells[kNumberColumns];
    for (std::size_t i = 0; i < kNumberColumns; ++i)
        cells[i] = kColumns[i].title;
    return line_of(cells, kColumns[kNumberColumns].title, width);
}

std::string top_row(const TopRow& row, const TopTable& table, bool full_filenames,
                    std::size_t width) {
    std::string cells[kNumberColumns] = {
        percent(row.own, table.samples),
        percent(row.total, table.samples),
        duration(static_cast<double>(row.own) * table.period_s),
        duration(static_cast<double>(row.total) * table.period_s),
        row.own == 0 ? std::string("-")
                     : fmt::format("{:.0f}%", 100.0 * static_cast<double>(row.own_on_cpu) /
                                                  static_cast<double>(row.own)),
        row.wait.empty()
            ? std::string("-")
            : fmt::format("{:.0f}% {}",
                          100.0 * static_cast<double>(row.wait_time) / static_cast<double>(row.own),
                          row.wait)};
    std::size_t name_column = static_cast<std::size_t>(layout(width).start[kNumberColumns]);
    std::size_t room = width == 0 ? std::numeric_limits<std::size_t>::max()
                                  : (width > name_column + 1 ? width - name_column : 1);
    std::string file = full_filenames || row.file.empty() ? row.file : short_filename(row.file);
    return line_of(cells, fit_label(row.function, file, row.line, room), width);
}

std::string top_wait_titles() {
    return fmt::format("{:>6} {:>9} {:>7} {:<11}  {}", "%Wall", "Time", "Threads", "Kind",
                       "Waiting on  (mostly under)");
}

std::string top_wait_row(const TopWaitRow& row, const TopTable& table, std::size_t width) {
    std::string line =
        fmt::format("{:>6} {:>9} {:>7} {:<11}  {}  ({})", percent(row.time, table.samples),
                    duration(static_cast<double>(row.time) * table.period_s), row.threads, row.kind,
                    row.label, row.top_function);
    return width == 0 ? line : cut(line, width);
}

std::vector<std::string> top_help() {
    return {
        "Keys",
        "  1 2 3 4 5 6  sort by %Own, %Total, OwnTime, TotalTime, OnCPU, Function",
        "  < >          sort by the previous / next column (arrow keys too)",
        "  l            a row per line / per function",
        "  i            the last refresh interval / everything since the start (or reset)",
        "  t T          next / previous thread: all threads, then each thread in turn",
        "  v            the \"Waiting on\" view: what threads waited for, longest first",
        "  w W          next / previous wait: only the samples that waited for it",
        "  c            wall view (running and waiting) / cpu view (running only)",
        "  k            the calls view (--calls): each function's calls and their durations",
        "  p space      pause the display (sampling goes on)",
        "  r            reset the counts",
        "  h ?          this help; any key closes it",
        "  q Ctrl-C     quit",
        "",
        "Columns",
        "  %Own, OwnTime      samples where the function itself was running (innermost frame)",
        "  %Total, TotalTime  samples where it was on the stack (once per sample if recursive)",
        "  OnCPU              the share of its own samples whose thread was on a CPU; the",
        "                     rest is waiting (I/O, locks, sleep, the GIL)",
        "  Waiting on         what most of its own waiting time waited for, and its share",
        "  GIL (header)       the share of passes in which some thread held the GIL",
        "  calls, short       (calls view) calls seen to begin and end; of them, those seen in",
        "                     one sample only: counted, not timed",
        "  p50 ... max        (calls view) durations of the other calls, +- half a period each end",
        "  total, self, cpu   (calls view) time on the stack, innermost, and its CPU time",
    };
}

std::string plain_table(const TopTable& table, const TopTarget& target, const TopView& view,
                        const std::vector<TopThread>& threads, std::size_t width,
                        std::size_t max_rows) {
    std::string out;
    for (const std::string& line : top_header(table, target, view, threads))
        out += line + '\n';
    out += '\n';
    if (view.query.calls && !view.query.waits) {
        for (const std::string& line : top_calls_lines(table.calls, view.full_filenames, width,
                                                       max_rows, table.stats.waiting))
            out += line + '\n';
        return out;
    }
    if (view.query.waits) {
        out += top_wait_titles() + '\n';
        std::size_t count = table.waits.size();
        std::size_t shown = max_rows == 0 ? count : std::min(max_rows, count);
        for (std::size_t i = 0; i < shown; ++i)
            out += top_wait_row(table.waits[i], table, width) + '\n';
        if (count == 0)
            out += table.stats.waiting ? "(waiting for a Python interpreter)\n"
                                       : "(no thread waited)\n";
        if (shown < count) out += fmt::format("({} more rows)\n", count - shown);
        return out;
    }
    out += top_titles(width) + '\n';
    std::size_t shown = max_rows == 0 ? table.rows.size() : std::min(max_rows, table.rows.size());
    for (std::size_t i = 0; i < shown; ++i)
        out += top_row(table.rows[i], table, view.full_filenames, width) + '\n';
    if (table.rows.empty())
        out += table.stats.waiting ? "(waiting for a Python interpreter)\n" : "(no samples)\n";
    if (shown < table.rows.size())
        out += fmt::format("({} more rows)\n", table.rows.size() - shown);
    return out;
}

std::unique_ptr<TopScreen> TopScreen::open() {
    // Keys come from the terminal even when stdin is something else.
    std::FILE* input = isatty(0) != 0 ? stdin : std::fopen("/dev/tty", "r");
    if (input == nullptr) return nullptr;
    SCREEN* screen = newterm(nullptr, stdout, input);
    if (screen == nullptr) {
        if (input != stdin) std::fclose(input);
        return nullptr;
    }
    set_term(screen);
    cbreak(); // Ctrl-C stays a signal
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    intrflush(stdscr, FALSE);
    set_escdelay(25);
    curs_set(0);
    return std::unique_ptr<TopScreen>(new TopScreen(screen, input != stdin ? input : nullptr));
}

TopScreen::~TopScreen() {
    endwin();
    delscreen(static_cast<SCREEN*>(screen_));
    if (input_ != nullptr) std::fclose(input_);
}

int TopScreen::read_key(int timeout_ms) {
    wtimeout(stdscr, timeout_ms);
    int key = wgetch(stdscr);
    switch (key) {
    case ERR:
        return -1;
    case KEY_RESIZE:
        return kTopKeyResize;
    case KEY_LEFT:
        return '<';
    case KEY_RIGHT:
        return '>';
    default:
        return key;
    }
}

void TopScreen::draw(const TopTable& table, const TopTarget& target, const TopView& view,
                     const std::vector<TopThread>& threads, const std::string& message,
                     bool repaint) {
    int height = 0, width = 0;
    getmaxyx(stdscr, height, width);
    werase(stdscr);
    auto put = [&](int y, std::string_view text, attr_t attributes) {
        if (y < 0 || y >= height) return;
        std::string shown = screen_text(text);
        wattron(stdscr, attributes);
        mvwaddnstr(stdscr, y, 0, shown.c_str(), width);
        wattroff(stdscr, attributes);
    };
    int y = 0;
    std::vector<std::string> header = top_header(table, target, view, threads);
    for (std::size_t i = 0; i < header.size(); ++i)
        put(y++, header[i], i == 0 ? A_BOLD : A_NORMAL);
    ++y;

    auto columns = static_cast<std::size_t>(std::max(width, 0));
    const Layout positions = layout(columns);
    const auto name_column = static_cast<std::size_t>(positions.start[kNumberColumns]);
    const bool calls = view.query.calls && !view.query.waits;
    std::vector<std::string> call_lines;
    if (calls)
        call_lines =
            top_calls_lines(table.calls, view.full_filenames, columns,
                            static_cast<std::size_t>(std::max(height, 1)), table.stats.waiting);
    std::string titles = view.query.waits ? top_wait_titles()
                         : calls          ? call_lines.front()
                                          : top_titles(columns);
    titles.resize(columns, ' ');
    put(y, titles, A_REVERSE);
    const std::size_t sorted = column_of(view.query.sort);
    int start = positions.start[sorted];
    int length = kColumns[sorted].width != 0
                     ? kColumns[sorted].width
                     : static_cast<int>(std::string_view(kColumns[sorted].title).size());
    if (!view.query.waits && !calls && start >= 0 && start < width)
        mvwchgat(stdscr, y, start, std::min(length, width - start),
                 A_REVERSE | A_BOLD | A_UNDERLINE, 0, nullptr);
    ++y;

    int bottom = height - 1 - (message.empty() ? 0 : 1);
    if (view.help) {
        for (const std::string& line : top_help())
            if (y < bottom) put(y++, line, A_NORMAL);
    } else if (calls) {
        for (std::size_t i = 1; i < call_lines.size() && y < bottom; ++i)
            put(y++, call_lines[i], A_NORMAL);
    } else if (view.query.waits) {
        if (table.waits.empty()) put(y, "  no thread waited yet", A_NORMAL);
        for (const TopWaitRow& row : table.waits) {
            if (y >= bottom) break;
            put(y++, top_wait_row(row, table, columns), A_NORMAL);
        }
    } else if (table.rows.empty()) {
        put(y, table.stats.waiting ? "  waiting for a Python interpreter..." : "  no samples yet",
            A_NORMAL);
    } else {
        for (const TopRow& row : table.rows) {
            if (y >= bottom) break;
            std::string text = screen_text(top_row(row, table, view.full_filenames, columns));
            put(y, text, A_NORMAL);
            std::size_t name_end = text.find(" (", name_column);
            if (name_end == std::string::npos) name_end = text.size();
            if (name_end > name_column && name_column < columns)
                mvwchgat(stdscr, y, static_cast<int>(name_column),
                         static_cast<int>(std::min(name_end, columns) - name_column), A_BOLD, 0,
                         nullptr);
            ++y;
        }
    }
    if (!message.empty()) put(height - 2, message, A_BOLD);
    std::string hints = kHints;
    hints.resize(static_cast<std::size_t>(std::max(width - 1, 0)), ' ');
    put(height - 1, hints, A_REVERSE);
    if (repaint) redrawwin(stdscr);
    wrefresh(stdscr);
}

} // namespace spyglass::output
