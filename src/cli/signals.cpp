#include "spyglass/cli/signals.hpp"

#include <csignal>

#include <pthread.h>
#include <unistd.h>

namespace spyglass::cli {

namespace {

std::atomic<int> stop_requests{0};
std::atomic<int> flush_requests{0};
std::atomic<pid_t> forward_to{0};

void on_stop_signal(int signal_number, siginfo_t* info, void*) {
    int previous = stop_requests.fetch_add(1);
    pid_t child = forward_to.load();
    bool from_terminal = info != nullptr && info->si_code == SI_KERNEL;
    if (child > 0 && (signal_number == SIGTERM || !from_terminal)) ::kill(child, signal_number);
    if (previous >= 1 && signal_number == SIGINT) ::_exit(130); // the second Ctrl-C aborts
}

void on_flush_signal(int) {
    flush_requests.fetch_add(1);
}

} // namespace

const std::atomic<int>& install_flush_handler() {
    struct sigaction action {};
    action.sa_handler = on_flush_signal;
    action.sa_flags = SA_RESTART; // reads and writes go on; the clock's sleep wakes anyway
    sigemptyset(&action.sa_mask);
    sigaction(SIGUSR1, &action, nullptr);
    return flush_requests;
}

void block_signals_here() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, nullptr);
}

const std::atomic<int>& install_stop_handlers() {
    struct sigaction action {};
    action.sa_sigaction = on_stop_signal;
    action.sa_flags = SA_SIGINFO; // no SA_RESTART: sleeps wake up and see the request
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
    return stop_requests;
}

void set_forward_target(pid_t pid) {
    forward_to.store(pid);
}

void ignore_sigpipe() {
    ::signal(SIGPIPE, SIG_IGN);
}

} // namespace spyglass::cli
