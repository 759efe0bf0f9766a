#include "spyglass/capture/thread_schedule.hpp"

namespace spyglass::sampling {

std::expected<process::TaskStatReader::Reading, Errc>
ThreadSchedule::read_stat(process::TaskStatReader& stat, const ScheduleQuery& query) {
    auto reading = stat.read();
    if (!reading) return reading;
    if (reading->state == 't' && query.tracer != nullptr && query.tracer->seized() > 0 &&
        query.serviced != nullptr && !*query.serviced) {
        // Stopped by ptrace: ours, with a signal (or a late interrupt) waiting to be passed
        // on that this pass came before the wake-up for. Pass it on, look again: the thread
        // was held by spyglass, not by the program.
        query.tracer->service();
        *query.serviced = true;
        if (auto again = stat.read(); again) reading = again;
    }
    return reading;
}

std::optional<process::TaskStatReader::RunMark> ThreadSchedule::run_on(const ScheduleQuery& query,
                                                                       pid_t tid) const {
    if (query.sched == nullptr || query.want_last_cpu || !have_run_ || !on_cpu_ || starved_ ||
        !since_ || pass_ns_ == 0 || query.now_ns <= pass_ns_)
        return std::nullopt;
    if (query.sched->on_cpu_since(tid) != since_) return std::nullopt;
    // Estimated: the next schedstat read's difference corrects what this one got wrong.
    return process::TaskStatReader::RunMark{run_.run_ns + (query.now_ns - pass_ns_), run_.slices};
}

std::expected<ThreadSchedule::Pass, Errc>
ThreadSchedule::observe(process::TaskStatReader& stat, pid_t tid, const ScheduleQuery& query) {
    process::SchedWatch* sched = query.sched;
    Pass pass;
    process::TaskStatReader::RunMark run{};
    std::uint64_t delay_ns = 0;
    char state = 0;
    // A thread that was off the CPU and has not run since is still off it: the scheduler's
    // events say so without a read, else its run time alone does, without its stat. (One that
    // was on a CPU at the previous poll may have run on after it: not idle, whatever the events
    // say now. Not "starved" instead: that is a share of the interval, and a thread that waited
    // for a CPU most of it may hold one at the poll, then run and go to sleep elsewhere.)
    if (sched != nullptr && query.reuse_idle && have_run_ && !running_at_poll_ &&
        sched->seen(tid) == process::SchedWatch::Seen::idle) {
        pass.idle_by_events = true;
        run = run_;
        state = sched->runnable(tid) ? 'R' : 'S';
    }
    const bool known_idle = pass.idle_by_events;
    // Still on the CPU it was on at the previous pass, never switched out: no read at all.
    if (!known_idle) {
        if (auto mark = run_on(query, tid)) {
            state = 'R';
            run = *mark;
            pass.running_by_events = true;
        }
    }
    // On a CPU, or preempted and waiting for one, by the same events: /proc's 'R' without
    // stat's 52 formatted fields; schedstat still gives the run time and the delay. (Not when
    // the CPU it last ran on is wanted: that is stat's.)
    bool delay_read = false;
    if (state == 0 && !known_idle && sched != nullptr && !query.want_last_cpu && have_run_ &&
        sched->runnable(tid)) {
        auto reading = stat.read_schedstat();
        if (!reading) return std::unexpected(reading.error());
        state = 'R';
        run = {reading->run_ns, reading->slices};
        delay_ns = reading->delay_ns;
        delay_read = pass.runnable_by_events = true;
    }
    if (state == 0 && !known_idle && query.reuse_idle && have_run_ && !on_cpu_) {
        auto mark = stat.read_run_mark();
        if (!mark) return std::unexpected(mark.error());
        run = *mark;
        if (run == run_) state = 'S';
    }
    if (state == 'S' && query.want_state_letter) state = 0;
    int last_cpu = -1;
    if (state == 0) {
        auto reading = read_stat(stat, query);
        if (!reading) return std::unexpected(reading.error());
        state = reading->state;
        last_cpu = reading->cpu;
        run = {reading->run_ns, reading->slices};
        delay_ns = reading->delay_ns;
        delay_read = true;
        pass.idle_by_events = false; // read after all, for its state letter
    }
    pass.state = state;
    pass.on_cpu = state == 'R';
    if (sched != nullptr && !known_idle && !pass.on_cpu) sched->note_off_cpu(tid);
    pass.cpu_ns = have_run_ && run.run_ns >= run_.run_ns ? run.run_ns - run_.run_ns : 0;
    pass.ran = !known_idle && (!have_run_ || run != run_ || pass.on_cpu);
    // Runnable but not running: a thread that spent more of the interval waiting for a CPU
    // than on one (schedstat), or that the scheduler's events saw preempted and not back on a
    // CPU since. Not what the events say of the moment of the sample: then the sampling
    // thread itself often holds the CPU the target was preempted from.
    if (pass.on_cpu) {
        if (known_idle)
            pass.starved = true;
        else if (delay_read && have_delay_ && delay_ns >= delay_ns_)
            pass.starved = delay_ns - delay_ns_ > pass.cpu_ns;
    }
    if (delay_read) {
        delay_ns_ = delay_ns;
        have_delay_ = true;
    }
    run_ = run;
    have_run_ = true;
    pass_ns_ = query.now_ns;
    since_ = sched != nullptr ? sched->on_cpu_since(tid) : std::nullopt;
    running_at_poll_ = sched != nullptr ? since_.has_value() : on_cpu_;
    on_cpu_ = pass.on_cpu;
    cpu_ = last_cpu;
    starved_ = pass.starved;
    return pass;
}

} // namespace spyglass::sampling
