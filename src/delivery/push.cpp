#include "spyglass/delivery/push.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>

#include <curl/curl.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include "spyglass/clock.hpp"
#include "spyglass/signals.hpp"

namespace spyglass::delivery {

// The few libcurl functions --push uses, looked up in libcurl.so.4 at run time.
struct Pusher::Curl {
    void* library = nullptr;
    CURLcode (*global_init)(long) = nullptr;
    CURL* (*easy_init)() = nullptr;
    CURLcode (*easy_setopt)(CURL*, CURLoption, ...) = nullptr;
    CURLcode (*easy_perform)(CURL*) = nullptr;
    CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...) = nullptr;
    void (*easy_cleanup)(CURL*) = nullptr;
    const char* (*easy_strerror)(CURLcode) = nullptr;
    curl_slist* (*slist_append)(curl_slist*, const char*) = nullptr;
    void (*slist_free_all)(curl_slist*) = nullptr;
    ~Curl() {
        if (library != nullptr) ::dlclose(library);
    }
};

namespace {

template <typename F>
bool bind(void* library, const char* name, F& out) {
    out = reinterpret_cast<F>(::dlsym(library, name));
    return out != nullptr;
}

Result<std::shared_ptr<Pusher::Curl>> load_curl() {
    auto curl = std::make_shared<Pusher::Curl>();
    for (const char* name : {"libcurl.so.4", "libcurl-gnutls.so.4", "libcurl.so"}) {
        curl->library = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
        if (curl->library != nullptr) break;
    }
    if (curl->library == nullptr)
        return fail(Errc::not_found,
                    "--push needs libcurl (libcurl.so.4), which is not installed: install "
                    "libcurl4 (Debian, Ubuntu) or libcurl (Fedora)");
    void* lib = curl->library;
    if (!bind(lib, "curl_global_init", curl->global_init) ||
        !bind(lib, "curl_easy_init", curl->easy_init) ||
        !bind(lib, "curl_easy_setopt", curl->easy_setopt) ||
        !bind(lib, "curl_easy_perform", curl->easy_perform) ||
        !bind(lib, "curl_easy_getinfo", curl->easy_getinfo) ||
        !bind(lib, "curl_easy_cleanup", curl->easy_cleanup) ||
        !bind(lib, "curl_easy_strerror", curl->easy_strerror) ||
        !bind(lib, "curl_slist_append", curl->slist_append) ||
        !bind(lib, "curl_slist_free_all", curl->slist_free_all))
        return fail(Errc::not_found, "--push: the libcurl found lacks {}", ::dlerror());
    if (curl->global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return fail(Errc::io, "--push: libcurl did not initialise");
    return curl;
}

// Percent-encoding for a query parameter's value.
std::string query_escape(std::string_view text) {
    std::string out;
    for (unsigned char c : text) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~')
            out.push_back(static_cast<char>(c));
        else
            fmt::format_to(std::back_inserter(out), "%{:02X}", c);
    }
    return out;
}

// What Pyroscope reads from a multipart body beside the profile: the units and the
// aggregation of each sample type.
constexpr std::string_view kSampleTypeConfig =
    R"({"samples":{"units":"samples","aggregation":"sum","display-name":"samples"},)"
    R"("wall":{"units":"nanoseconds","aggregation":"sum","display-name":"wall"},)"
    R"("cpu":{"units":"nanoseconds","aggregation":"sum","display-name":"cpu"}})";
constexpr std::string_view kBoundary = "spyglass-7c1e4b0a9d2f";

std::string multipart_body(std::string_view pprof) {
    std::string body;
    body += fmt::format("--{}\r\nContent-Disposition: form-data; name=\"profile\"; "
                        "filename=\"profile.pb.gz\"\r\nContent-Type: application/octet-stream"
                        "\r\n\r\n",
                        kBoundary);
    body += pprof;
    body += fmt::format("\r\n--{}\r\nContent-Disposition: form-data; name=\"sample_type_config\"; "
                        "filename=\"sample_type_config.json\"\r\nContent-Type: application/json"
                        "\r\n\r\n{}\r\n--{}--\r\n",
                        kBoundary, kSampleTypeConfig, kBoundary);
    return body;
}

std::size_t discard(char*, std::size_t size, std::size_t count, void*) {
    return size * count;
}

} // namespace

std::string redacted(std::string_view url) {
    std::size_t scheme = url.find("://");
    if (scheme == std::string_view::npos) return std::string(url);
    std::size_t host = scheme + 3;
    // The authority ends at the path, the query or the fragment; its user information at its
    // last '@' (a password may hold one).
    std::size_t end = std::min(url.find_first_of("/?#", host), url.size());
    std::size_t at = url.substr(host, end - host).rfind('@');
    if (at == std::string_view::npos) return std::string(url);
    return std::string(url.substr(0, host)) + "***@" + std::string(url.substr(host + at + 1));
}

Result<std::unique_ptr<Pusher>> Pusher::start(PushOptions options) {
    if (options.url.rfind("http://", 0) != 0 && options.url.rfind("https://", 0) != 0)
        return fail(Errc::invalid_argument, "--push {} is not an http:// or https:// URL",
                    redacted(options.url));
    while (!options.url.empty() && options.url.back() == '/')
        options.url.pop_back();
    if (options.app.empty()) return fail(Errc::invalid_argument, "--push needs an --app name");
    for (const std::string& label : options.labels) {
        std::size_t eq = label.find('=');
        if (eq == 0 || eq == std::string::npos || label.find_first_of("{},") != std::string::npos)
            return fail(Errc::invalid_argument, "--tag {} is not k=v (no braces or commas)", label);
    }
    for (const std::string& header : options.headers)
        if (header.find(':') == std::string::npos ||
            header.find_first_of("\r\n") != std::string::npos)
            return fail(Errc::invalid_argument,
                        "a --push-header is not 'Name: value' (the value is not shown)");
    auto curl = load_curl();
    if (!curl) return std::unexpected(curl.error());
    std::unique_ptr<Pusher> pusher(new Pusher(std::move(options), std::move(*curl)));
    return pusher;
}

Pusher::Pusher(PushOptions options, std::shared_ptr<Curl> curl)
    : options_(std::move(options)), curl_(std::move(curl)) {
    thread_ = std::thread([this] {
        block_signals_here();
        run();
    });
}

Pusher::~Pusher() {
    if (thread_.joinable()) stop(0);
}

void Pusher::add_label(std::string label) {
    std::lock_guard lock(mutex_);
    options_.labels.push_back(std::move(label));
}

std::string Pusher::name() {
    std::lock_guard lock(mutex_);
    return name_locked();
}

std::string Pusher::name_locked() const {
    std::string name = options_.app;
    if (!options_.labels.empty()) {
        name += '{';
        for (std::size_t i = 0; i < options_.labels.size(); ++i) {
            if (i != 0) name += ',';
            name += options_.labels[i];
        }
        name += '}';
    }
    return name;
}

void Pusher::submit(std::string pprof, std::uint64_t from_s, std::uint64_t until_s) {
    std::lock_guard lock(mutex_);
    if (stopping_) {
        ++stats_.dropped;
        return;
    }
    if (queue_.size() >= options_.queue) {
        // The newest windows matter most to someone looking now.
        queue_.pop_front();
        ++stats_.dropped;
    }
    queue_.push_back({multipart_body(pprof), from_s, until_s});
    wake_.notify_one();
}

PushStats Pusher::stop(double grace_s) {
    const int stop_requests = stop_request_count();
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        deadline_ns_ = monotonic_ns() + static_cast<std::uint64_t>(grace_s * 1e9);
        cut_at_ns_.store(deadline_ns_);
        if (!finished_ && (sending_ || !queue_.empty()))
            std::fprintf(stderr,
                         "spyglass: push: waiting up to %.1f s for the last windows to reach %s "
                         "(Ctrl-C gives up)\n",
                         grace_s, redacted(options_.url).c_str());
        wake_.notify_one();
    }
    {
        // A signal handler cannot wake a condition variable: the wait looks at the stop
        // requests ten times a second.
        std::unique_lock lock(mutex_);
        while (!finished_) {
            if (!cancel_.load() && stop_request_count() != stop_requests) {
                cancel_.store(true);
                wake_.notify_one();
            }
            done_.wait_for(lock, std::chrono::milliseconds(100));
        }
    }
    if (thread_.joinable()) thread_.join();
    std::lock_guard lock(mutex_);
    stats_.dropped += queue_.size();
    queue_.clear();
    return stats_;
}

int Pusher::progress(void* pusher, long long, long long, long long, long long) {
    auto* self = static_cast<Pusher*>(pusher);
    std::uint64_t cut_at = self->cut_at_ns_.load();
    return self->cancel_.load() || (cut_at != 0 && monotonic_ns() >= cut_at) ? 1 : 0;
}

int Pusher::send(const Item& item, const std::string& name, std::string& error) {
    Curl& c = *curl_;
    CURL* easy = c.easy_init();
    if (easy == nullptr) {
        error = "libcurl could not make a request";
        return 1;
    }
    std::string url = fmt::format("{}/ingest?name={}&from={}&until={}&format=pprof&sampleRate={}"
                                  "&spyName=spyglass",
                                  options_.url, query_escape(name), item.from_s, item.until_s,
                                  static_cast<long>(options_.rate_hz + 0.5));
    curl_slist* headers = c.slist_append(
        nullptr, fmt::format("Content-Type: multipart/form-data; boundary={}", kBoundary).c_str());
    headers = c.slist_append(headers, "Expect:"); // no 100-continue round trip
    for (const std::string& header : options_.headers)
        headers = c.slist_append(headers, header.c_str());
    const auto timeout_ms = static_cast<long>(options_.timeout_s * 1000);
    c.easy_setopt(easy, CURLOPT_URL, url.c_str());
    c.easy_setopt(easy, CURLOPT_NOSIGNAL, 1L); // a thread of its own: no SIGALRM for DNS
    c.easy_setopt(easy, CURLOPT_TIMEOUT_MS, timeout_ms);
    c.easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, std::min(timeout_ms, 5000L));
    c.easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
    c.easy_setopt(easy, CURLOPT_POST, 1L);
    c.easy_setopt(easy, CURLOPT_POSTFIELDS, item.body.data());
    c.easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(item.body.size()));
    c.easy_setopt(easy, CURLOPT_WRITEFUNCTION, discard);
    c.easy_setopt(easy, CURLOPT_USERAGENT, "spyglass");
    // Called about once a second even while nothing moves: how a stop cuts a request short.
    c.easy_setopt(easy, CURLOPT_NOPROGRESS, 0L);
    c.easy_setopt(easy, CURLOPT_XFERINFOFUNCTION, &Pusher::progress);
    c.easy_setopt(easy, CURLOPT_XFERINFODATA, static_cast<void*>(this));
    CURLcode rc = c.easy_perform(easy);
    long status = 0;
    if (rc == CURLE_OK) c.easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    c.easy_cleanup(easy);
    c.slist_free_all(headers);
    if (rc == CURLE_ABORTED_BY_CALLBACK) {
        error = fmt::format("{}: given up at the end of the recording{}", redacted(options_.url),
                            cancel_.load() ? " (Ctrl-C)" : " (its grace was over)");
        return -1;
    }
    if (rc != CURLE_OK) {
        error = fmt::format("{}: {}", redacted(options_.url), c.easy_strerror(rc));
        return 1;
    }
    if (status >= 200 && status < 300) return 0;
    error = fmt::format("{} answered HTTP {}", redacted(options_.url), status);
    return status == 408 || status == 429 || status >= 500 ? 1 : -1;
}

void Pusher::run() {
    std::unique_lock lock(mutex_);
    run_locked(lock);
    finished_ = true;
    done_.notify_all();
}

void Pusher::run_locked(std::unique_lock<std::mutex>& lock) {
    auto given_up = [&] { return cancel_.load() || (stopping_ && monotonic_ns() >= deadline_ns_); };
    for (;;) {
        wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return; // stopping, nothing left
        if (given_up()) return;
        Item item = std::move(queue_.front());
        queue_.pop_front();
        double backoff = options_.backoff_s;
        for (int attempt = 0;; ++attempt) {
            ++stats_.attempts;
            std::string error, name = name_locked();
            sending_ = true;
            lock.unlock();
            int result = send(item, name, error);
            lock.lock();
            sending_ = false;
            if (result == 0) {
                ++stats_.sent;
                break;
            }
            stats_.last_error = error;
            if (result < 0 || attempt >= options_.retries) {
                ++stats_.failed;
                break;
            }
            // Back off, but not past the end of the recording's grace. A new window in the
            // queue wakes this wait too: it does not make a dead backend any less dead, so the
            // wait goes on until the back-off is over (or stop()'s deadline or a Ctrl-C comes
            // first).
            const std::uint64_t backoff_end =
                monotonic_ns() + static_cast<std::uint64_t>(backoff * 1e9);
            for (;;) {
                std::uint64_t end = stopping_ ? std::min(backoff_end, deadline_ns_) : backoff_end;
                std::uint64_t now = monotonic_ns();
                if (now >= end || cancel_.load()) break;
                wake_.wait_for(lock, std::chrono::nanoseconds(end - now));
            }
            if (given_up()) {
                ++stats_.failed;
                return;
            }
            backoff *= 2;
        }
    }
}

} // namespace spyglass::delivery
