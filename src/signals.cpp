#include "spyglass/signals.hpp"

#include <algorithm>
#include <csignal>
#include <cstring>

#include <pthread.h>
#include <unistd.h>

namespace spyglass {

namespace {

std::atomic<int> stop_requests{0};
std::atomic<int> flush_requests{0};
std::atomic<pid_t> forward_to{0};

// Read by the handler, written only while `cleanup_ready` is false.
struct AbortCleanup {
    char remove_path[4096] = {};
    char outcome[4096] = {};
};
AbortCleanup cleanup;
std::atomic<bool> cleanup_ready{false};
// A second output's temporary file (the raw recording beside the profile).
char also_remove[4096] = {};
std::atomic<bool> also_remove_ready{false};

void copy_text(char* to, std::size_t room, std::string_view text) {
    std::size_t n = std::min(text.size(), room - 1);
    std::memcpy(to, text.data(), n);
    to[n] = '\0';
}

void write_text(const char* text) {
    std::size_t left = std::strlen(text);
    while (left > 0) {
        ssize_t n = ::write(2, text, left);
        if (n <= 0) return;
        text += n;
        left -= static_cast<std::size_t>(n);
    }
}

// Only async-signal-safe calls: unlink, write, _exit.
[[noreturn]] void abort_now(int signal_number) {
    bool ready = cleanup_ready.load();
    if (ready && cleanup.remove_path[0] != '\0') ::unlink(cleanup.remove_path);
    if (also_remove_ready.load() && also_remove[0] != '\0') ::unlink(also_remove);
    write_text(signal_number == SIGINT ? "\nspyglass: aborted by a second Ctrl-C (SIGINT)"
                                       : "\nspyglass: aborted by a second stop signal (SIGTERM)");
    if (ready && cleanup.outcome[0] != '\0') {
        write_text(": ");
        write_text(cleanup.outcome);
    }
    write_text("\n");
    ::_exit(128 + signal_number);
}

void on_stop_signal(int signal_number, siginfo_t* info, void*) {
    int previous = stop_requests.fetch_add(1);
    pid_t child = forward_to.load();
    bool from_terminal = info != nullptr && info->si_code == SI_KERNEL;
    if (child > 0 && (signal_number == SIGTERM || !from_terminal)) ::kill(child, signal_number);
    if (previous >= 1) abort_now(signal_number); // the second stop signal aborts
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
    // One handler at a time: the second signal's handler runs after the first's has counted.
    sigaddset(&action.sa_mask, SIGINT);
    sigaddset(&action.sa_mask, SIGTERM);
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
    return stop_requests;
}

int stop_request_count() {
    return stop_requests.load();
}

void set_forward_target(pid_t pid) {
    forward_to.store(pid);
}

void ignore_sigpipe() {
    ::signal(SIGPIPE, SIG_IGN);
}

void set_abort_cleanup(std::string_view remove_path, std::string_view outcome) {
    cleanup_ready.store(false);
    copy_text(cleanup.remove_path, sizeof cleanup.remove_path, remove_path);
    copy_text(cleanup.outcome, sizeof cleanup.outcome, outcome);
    cleanup_ready.store(true);
}

void clear_abort_cleanup() {
    cleanup_ready.store(false);
}

void set_abort_also_remove(std::string_view path) {
    also_remove_ready.store(false);
    copy_text(also_remove, sizeof also_remove, path);
    also_remove_ready.store(true);
}

void clear_abort_also_remove() {
    also_remove_ready.store(false);
}

} // namespace spyglass
