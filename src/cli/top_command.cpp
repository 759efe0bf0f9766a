// spyglass top: a live table of the functions a process spends its time in. The session runs
// on a worker thread and feeds the model; the main thread reads keys and draws the screen (or
// prints plain tables), so neither a slow terminal nor a full pipe ever delays a tick.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "command_line.hpp"
#include <fmt/format.h>
#include <pthread.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "spyglass/cli/launcher.hpp"
#include "spyglass/cli/options.hpp"
#include "spyglass/output/top_screen.hpp"
#include "spyglass/output/writer.hpp"
#include "spyglass/signals.hpp"

namespace spyglass::cli {

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr int kWakeSignal = SIGUSR1;
constexpr std::size_t kPlainRows = 25; // rows of each table printed while sampling goes on

void on_wake(int) {}

// Runs the session with every signal blocked on its thread except the one that wakes it from
// the clock's sleep: Ctrl-C, SIGTERM and SIGWINCH go to the main thread.
class SessionWorker {
  public:
    SessionWorker(sampling::Session& session, output::TopModel& model, double rate_hz) {
        struct sigaction action {};
        action.sa_handler = on_wake;
        sigemptyset(&action.sa_mask);
        sigaction(kWakeSignal, &action, nullptr);
        sigset_t blocked, previous;
        sigfillset(&blocked);
        sigdelset(&blocked, kWakeSignal);
        pthread_sigmask(SIG_SETMASK, &blocked, &previous);
        // Like the session's own totals at the end, a tick covers its whole period.
        const auto period = static_cast<std::uint64_t>(1e9 / rate_hz);
        thread_ = std::thread([this, &session, &model, period] {
            result_ = session.run(model, stop_, [&model, period](sampling::Progress progress) {
                if (progress.ticks > 0) progress.elapsed_ns += period;
                model.progress(progress);
            });
            model.progress(result_.totals);
            done_.store(true);
        });
        pthread_sigmask(SIG_SETMASK, &previous, nullptr);
        // The session takes SIGCHLD in its sleep; the terminal loop has no use for it.
        sigset_t child;
        sigemptyset(&child);
        sigaddset(&child, SIGCHLD);
        pthread_sigmask(SIG_BLOCK, &child, nullptr);
    }
    ~SessionWorker() { finish(); }
    SessionWorker(const SessionWorker&) = delete;
    SessionWorker& operator=(const SessionWorker&) = delete;

    [[nodiscard]] bool done() const noexcept { return done_.load(); }

    // Stops the session if it still runs, and waits for it.
    const sampling::SessionResult& finish() {
        if (!thread_.joinable()) return result_;
        stop_.store(1);
        // Sent again in case the first one came before the worker went to sleep.
        while (!done_.load()) {
            pthread_kill(thread_.native_handle(), kWakeSignal);
            std::this_thread::sleep_for(10ms);
        }
        thread_.join();
        return result_;
    }

  private:
    std::atomic<int> stop_{0};
    std::atomic<bool> done_{false};
    sampling::SessionResult result_;
    std::thread thread_;
};

// While the full-screen view shows, log messages would write over it: they are kept (the latest
// shows in the view for a while) and printed once the terminal is back.
class LogCapture {
  public:
    LogCapture()
        : logger_(spdlog::default_logger()),
          sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(32)) {
        if (!logger_) return;
        sink_->set_formatter(make_log_formatter());
        saved_ = logger_->sinks();
        logger_->sinks() = {sink_};
    }
    ~LogCapture() { restore(); }
    LogCapture(const LogCapture&) = delete;
    LogCapture& operator=(const LogCapture&) = delete;

    // The latest message, for a while after it came.
    std::string recent() {
        auto messages = sink_->last_raw(1);
        if (messages.empty() || std::chrono::system_clock::now() - messages.front().time > 10s)
            return {};
        const auto& message = messages.front();
        return fmt::format("spyglass: {}: {}", spdlog::level::to_string_view(message.level),
                           std::string_view(message.payload.data(), message.payload.size()));
    }
    // Only once nothing logs from another thread any more.
    void restore() {
        if (!logger_) return;
        logger_->sinks() = saved_;
        for (const std::string& line : sink_->last_formatted())
            std::fputs(line.c_str(), stderr);
        logger_.reset();
    }

  private:
    std::shared_ptr<spdlog::logger> logger_;
    std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
    std::vector<spdlog::sink_ptr> saved_;
};

struct TerminalSize {
    std::size_t width = 0, height = 0; // 0: not a terminal
};

TerminalSize terminal_size(int fd) {
    winsize size{};
    if (::ioctl(fd, TIOCGWINSZ, &size) != 0) return {};
    return {size.ws_col, size.ws_row};
}

// What the header says about the target.
class TargetHeader {
  public:
    TargetHeader(const TopOptions& options, const Started& started) {
        target_.command = started.command;
        target_.rate_hz = options.sampling.rate;
        target_.mode =
            options.sampling.mode == "cpu" ? model::SampleMode::cpu : model::SampleMode::wall;
        target_.gil_only = options.sampling.gil;
        if (options.sampling.pid != 0)
            fallback_ = options.sampling.pid;
        else if (started.child)
            fallback_ = started.child->pid();
    }
    const output::TopTarget& update(const output::TopModel& model) {
        target_.pids = model.pids();
        if (target_.pids.empty() && fallback_ != 0) target_.pids = {fallback_};
        if (target_.python_version.empty()) target_.python_version = model.python_version();
        return target_;
    }
    const output::TopTarget& finish(const output::TopModel& model,
                                    const sampling::SessionResult& result) {
        update(model);
        if (!result.totals.python_version.empty())
            target_.python_version = result.totals.python_version;
        return target_;
    }

  private:
    output::TopTarget target_;
    pid_t fallback_ = 0;
};

enum class Printed : std::uint8_t { ok, closed, failed };

// Writes to stdout; says why when it failed, unless the reader went away.
Printed print(const std::string& text) {
    auto written = output::write_bytes(stdout, text);
    if (written) written = output::flush_output(stdout);
    if (written) return Printed::ok;
    if (errno == EPIPE) return Printed::closed;
    print_error(written.error().message);
    return Printed::failed;
}

void say_how_it_ended(const sampling::SessionResult& result, const Started& started) {
    if (result.totals.end != model::RecordingEnd::targets_exited) return;
    std::fputs(result.totals.pids.empty()
                   ? "spyglass: the command exited before its Python interpreter "
                     "started\n"
               : started.child ? "spyglass: the command exited\n"
                               : "spyglass: the target exited\n",
               stderr);
}

struct Run {
    const TopOptions& options;
    Started& started;
    output::TopModel& model;
    const std::atomic<int>& signals;
    output::TopView view;
};

int run_plain(Run& run) {
    TargetHeader header(run.options, run.started);
    TerminalSize size = ::isatty(1) != 0 ? terminal_size(1) : TerminalSize{};
    Printed printed = Printed::ok;
    {
        SessionWorker worker(*run.started.session, run.model, run.options.sampling.rate);
        auto delay = std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(run.options.delay));
        Clock::time_point next = Clock::now() + delay;
        while (!worker.done() && run.signals.load() == 0) {
            std::this_thread::sleep_for(std::min<Clock::duration>(50ms, next - Clock::now()));
            if (run.options.once || Clock::now() < next) continue;
            run.model.next_interval();
            printed =
                print(output::plain_table(run.model.table(run.view.query), header.update(run.model),
                                          run.view, run.model.threads(), size.width, kPlainRows) +
                      '\n');
            if (printed != Printed::ok) break;
            next = std::max(next + delay, Clock::now());
        }
        const sampling::SessionResult& result = worker.finish();
        if (printed == Printed::ok)
            printed = print(output::plain_table(
                run.model.table(run.view.query), header.finish(run.model, result), run.view,
                run.model.threads(), size.width, run.options.once ? 0 : kPlainRows));
        say_how_it_ended(result, run.started);
    }
    int status = finish(run.started);
    return printed == Printed::failed ? 1 : status;
}

int run_screen(Run& run, std::unique_ptr<output::TopScreen> screen, LogCapture& logs) {
    TargetHeader header(run.options, run.started);
    const bool launched = run.started.child != nullptr;
    bool quit = false;
    SessionWorker worker(*run.started.session, run.model, run.options.sampling.rate);
    auto draw = [&](bool repaint) {
        const output::TopTarget& target = header.update(run.model);
        screen->draw(run.model.table(run.view.query), target, run.view, run.model.threads(),
                     logs.recent(), repaint);
    };
    auto delay = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(run.options.delay));
    Clock::time_point next = Clock::now() + delay;
    draw(false);
    while (!quit && !worker.done() && run.signals.load() == 0) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now());
        int key =
            screen->read_key(static_cast<int>(std::clamp<std::int64_t>(left.count(), 0, 100)));
        if (key >= 0) {
            switch (output::apply_key(run.view, key, run.model.threads(), run.model.waits())) {
            case output::TopAction::quit:
                quit = true;
                continue;
            case output::TopAction::pause:
                run.model.set_paused(run.view.paused);
                break;
            case output::TopAction::reset:
                run.model.reset();
                break;
            case output::TopAction::redraw:
                break;
            case output::TopAction::none:
                continue;
            }
            draw(key == output::kTopKeyResize);
        }
        if (Clock::now() >= next) {
            run.model.next_interval();
            // A launched command may have written to the terminal: paint every cell again.
            draw(launched);
            next = std::max(next + delay, Clock::now());
        }
    }
    // The terminal comes back first: a second Ctrl-C while stopping aborts at once.
    screen.reset();
    // q stops a launched command as Ctrl-C would have.
    if (quit && launched) run.started.child->signal(SIGINT);
    const sampling::SessionResult& result = worker.finish();
    logs.restore();
    if (result.totals.end != model::RecordingEnd::stopped) {
        // It ended by itself: what was on the screen stays readable.
        run.model.set_paused(false);
        run.view.paused = false;
        TerminalSize size = terminal_size(1);
        std::size_t rows = size.height > 12 ? size.height - 8 : 5;
        print(output::plain_table(run.model.table(run.view.query), header.finish(run.model, result),
                                  run.view, run.model.threads(), size.width, rows));
        say_how_it_ended(result, run.started);
    }
    return finish(run.started);
}

} // namespace

int run_top(const TopOptions& options) {
    ignore_sigpipe();
    const std::atomic<int>& signals = install_stop_handlers();
    SamplingOptions sampling_options = options.sampling;
    if (options.once && sampling_options.duration == 0) sampling_options.duration = 5;
    model::FrameTable frames;
    model::StackTable stacks;
    auto started = start_session(sampling_options, frames, stacks);
    if (!started) {
        print_error(started.error().message);
        return started.error().code == Errc::invalid_argument ? 2 : 1;
    }
    output::TopModelOptions model_options;
    model_options.rate_hz = options.sampling.rate;
    model_options.line_numbers = !options.sampling.nolineno;
    model_options.calls = options.calls;
    model_options.cpu_calls = options.sampling.mode == "cpu";
    output::TopModel model(frames, stacks, model_options);

    Run run{options, *started, model, signals, {}};
    run.view.query.by_line = options.lines;
    run.view.query.waits = options.waiting;
    run.view.query.calls = options.calls && !options.waiting;
    run.view.calls_available = options.calls;
    run.view.query.view =
        options.sampling.mode == "cpu" ? model::SampleMode::cpu : model::SampleMode::wall;
    run.view.interval_s = options.delay;
    run.view.full_filenames = options.full_filenames;

    if (options.once || ::isatty(1) == 0) return run_plain(run);
    LogCapture logs;
    auto screen = output::TopScreen::open();
    if (!screen) {
        logs.restore();
        spdlog::warn("cannot drive this terminal (TERM={}): printing tables instead",
                     std::getenv("TERM") != nullptr ? std::getenv("TERM") : "");
        return run_plain(run);
    }
    return run_screen(run, std::move(screen), logs);
}

} // namespace spyglass::cli
