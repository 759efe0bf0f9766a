// The writer of a format, frame labels, the display frames shared by the stack formats, and checked
// writes.
#include "spyglass/output/writer.hpp"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace spyglass::output {

namespace {

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

// The length of "lib/pythonX.Y/" (or "lib/pythonX.Yt/", "lib/python2.7/") at `at`, else 0.
std::size_t lib_python_prefix(std::string_view path, std::size_t at) {
    constexpr std::string_view lib = "lib/python";
    if (path.substr(at, lib.size()) != lib) return 0;
    std::size_t i = at + lib.size();
    std::size_t digits = i;
    while (i < path.size() && is_digit(path[i]))
        ++i;
    if (i == digits || i >= path.size() || path[i] != '.') return 0;
    digits = ++i;
    while (i < path.size() && is_digit(path[i]))
        ++i;
    if (i == digits) return 0;
    while (i < path.size() && path[i] >= 'a' && path[i] <= 'z') // 3.13t, 3.6m
        ++i;
    if (i >= path.size() || path[i] != '/') return 0;
    return i + 1 - at;
}

} // namespace

std::unique_ptr<ProfileWriter> make_writer(Format format) {
    return format_info(format).make_writer();
}

std::string short_filename(std::string_view path) {
    std::size_t best = std::string_view::npos;
    for (std::string_view dir : {"site-packages/", "dist-packages/"}) {
        std::size_t at = path.rfind(dir);
        if (at != std::string_view::npos && (at == 0 || path[at - 1] == '/') &&
            (best == std::string_view::npos || at + dir.size() > best))
            best = at + dir.size();
    }
    if (best != std::string_view::npos && best < path.size()) return std::string(path.substr(best));
    for (std::size_t at = path.rfind("lib/python"); at != std::string_view::npos;
         at = at == 0 ? std::string_view::npos : path.rfind("lib/python", at - 1)) {
        if (at != 0 && path[at - 1] != '/') continue;
        std::size_t length = lib_python_prefix(path, at);
        if (length != 0 && at + length < path.size()) return std::string(path.substr(at + length));
    }
    return std::string(path);
}

std::string_view native_module_name(const model::Frame& frame, const model::StringTable& strings) {
    // Frames of a raw recording of format 1 have no module path: their file is the module.
    std::string_view path = strings.view(frame.module.value != 0 ? frame.module : frame.file);
    return path.substr(path.rfind('/') + 1);
}

std::string frame_label(const model::Profile& profile, model::FrameId id) {
    const model::Frame& frame = profile.frames->get(id);
    const model::StringTable& strings = profile.frames->strings();
    std::string label(strings.view(frame.function));
    if (frame.kind == model::FrameKind::marker) return label;
    std::string_view file = strings.view(frame.file);
    if (file.empty()) return label;
    label += " (";
    if (profile.display.labels.full_filenames)
        label += file;
    else if (frame.kind == model::FrameKind::native)
        label += file.substr(file.rfind('/') + 1); // a source file's directory is the build's
    else
        label += short_filename(file);
    if (profile.display.labels.line_numbers && frame.line > 0)
        fmt::format_to(std::back_inserter(label), ":{}", frame.line);
    label += ')';
    return label;
}

std::string process_root_label(pid_t pid) {
    return fmt::format("process {}", pid);
}

std::string thread_root_label(const model::ThreadInfo& thread) {
    if (thread.name.empty()) return fmt::format("thread {}", thread.tid);
    return fmt::format("thread {} {}", thread.tid, thread.name);
}

DisplayFrames::DisplayFrames(const model::Profile& profile)
    : profile_(profile), by_frame_(profile.frames->size(), kUnset),
      thread_roots_(profile.threads.size(), kUnset) {}

DisplayFrames::Id DisplayFrames::intern(Entry entry) {
    auto it = index_.find(entry.label);
    if (it != index_.end()) return it->second;
    auto id = static_cast<Id>(entries_.size());
    index_.emplace(entry.label, id);
    entries_.push_back(std::move(entry));
    return id;
}

DisplayFrames::Id DisplayFrames::frame(model::FrameId id) {
    if (id.value >= by_frame_.size()) by_frame_.resize(profile_.frames->size(), kUnset);
    Id& cached = by_frame_[id.value];
    if (cached != kUnset) return cached;
    const model::Frame& frame = profile_.frames->get(id);
    const model::StringTable& strings = profile_.frames->strings();
    Entry entry;
    entry.label = frame_label(profile_, id);
    entry.function = strings.view(frame.function);
    entry.native = frame.kind == model::FrameKind::native;
    if (frame.kind != model::FrameKind::marker) {
        entry.file = strings.view(frame.file);
        if (profile_.display.labels.line_numbers) entry.line = frame.line;
    }
    return cached = intern(std::move(entry));
}

namespace {

// The system call a wait names, and " sleep" after it when the call does not say so itself: up
// to 3.10 time.sleep is select() on no descriptors (pselect6), which must read as the sleep it
// is, as clock_nanosleep does on 3.11+.
std::string wait_call(const model::Wait& wait, const model::StringTable& strings) {
    if (wait.syscall.value == 0) return std::string(model::wait_kind_name(wait.kind));
    std::string call(strings.view(wait.syscall));
    if (wait.kind == model::WaitKind::sleep && wait.target.value == 0 &&
        call.find("sleep") == std::string::npos)
        call += " sleep";
    return call;
}

} // namespace

std::string wait_label(const model::Profile& profile, model::WaitId id) {
    const model::Wait& wait = profile.frames->waits().get(id);
    if (wait.kind == model::WaitKind::cpu_starved) return std::string(kCpuStarvedFrame);
    const model::StringTable& strings = profile.frames->strings();
    std::string label = "[wait ";
    label += wait_call(wait, strings);
    if (wait.target.value != 0) {
        label += ' ';
        label += strings.view(wait.target);
    }
    label += ']';
    return label;
}

std::string wait_summary(const model::FrameTable& frames, model::WaitId id) {
    const model::Wait& wait = frames.waits().get(id);
    if (wait.target.value != 0) return std::string(frames.strings().view(wait.target));
    return wait_call(wait, frames.strings());
}

void DisplayFrames::stack(std::uint32_t thread, model::StackId stack, bool on_cpu,
                          model::WaitId wait, std::vector<Id>& out) {
    out.clear();
    auto synthetic = [&](std::string label, bool off_cpu = false) {
        Entry entry;
        entry.function = label;
        entry.label = std::move(label);
        entry.synthetic = true;
        entry.off_cpu = off_cpu;
        return intern(std::move(entry));
    };
    const model::ThreadInfo* info =
        thread < profile_.threads.size() ? &profile_.threads[thread] : nullptr;
    if (profile_.per_process_roots() && info != nullptr) {
        auto it = process_roots_.find(info->pid);
        if (it == process_roots_.end())
            it = process_roots_.emplace(info->pid, synthetic(process_root_label(info->pid))).first;
        out.push_back(it->second);
    }
    if (profile_.display.per_thread_roots && info != nullptr) {
        Id& root = thread_roots_[thread];
        if (root == kUnset) root = synthetic(thread_root_label(*info));
        out.push_back(root);
    }
    std::span<const model::FrameId> frames = profile_.stacks->get(stack);
    for (auto it = frames.rbegin(); it != frames.rend(); ++it)
        out.push_back(frame(*it));
    if (frames.empty()) {
        if (no_frames_ == kUnset) no_frames_ = synthetic(std::string(kNoFramesFrame));
        out.push_back(no_frames_);
    }
    if (wait.value >= profile_.frames->waits().size()) wait = {}; // not a wait of this recording
    const bool starved =
        wait.value != 0 && profile_.frames->waits().get(wait).kind == model::WaitKind::cpu_starved;
    if (wait.value != 0 && on_cpu != starved) wait = {}; // a stray: running with a reason to wait
    if (wait.value != 0) {
        auto it = waits_.find(wait);
        if (it == waits_.end()) {
            Entry entry;
            entry.label = entry.function = wait_label(profile_, wait);
            entry.synthetic = true;
            entry.off_cpu = !on_cpu;
            entry.wait = wait;
            it = waits_.emplace(wait, intern(std::move(entry))).first;
        }
        out.push_back(it->second);
    } else if (!on_cpu) {
        if (off_cpu_ == kUnset) off_cpu_ = synthetic(std::string(kOffCpuFrame), true);
        out.push_back(off_cpu_);
    }
}

std::string join_words(const std::vector<std::string>& words) {
    std::string out;
    for (const std::string& word : words) {
        if (!out.empty()) out.push_back(' ');
        out += word;
    }
    return out;
}

std::string with_commas(std::uint64_t n) {
    std::string digits = std::to_string(n), out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
        out.push_back(digits[i]);
    }
    return out;
}

std::string count_of(std::uint64_t n, std::string_view singular, std::string_view plural) {
    std::string noun = n == 1
                           ? std::string(singular)
                           : (plural.empty() ? std::string(singular) + "s" : std::string(plural));
    return with_commas(n) + " " + noun;
}

Result<void> write_bytes(std::FILE* out, std::string_view bytes) {
    if (bytes.empty()) return {};
    errno = 0;
    if (std::fwrite(bytes.data(), 1, bytes.size(), out) != bytes.size() || std::ferror(out)) {
        int error = errno;
        return fail(Errc::io, "cannot write the profile: {}",
                    error != 0 ? std::strerror(error) : "write error");
    }
    return {};
}

Result<void> flush_output(std::FILE* out) {
    errno = 0;
    if (std::fflush(out) != 0 || std::ferror(out)) {
        int error = errno;
        return fail(Errc::io, "cannot write the profile: {}",
                    error != 0 ? std::strerror(error) : "write error");
    }
    return {};
}

void append_xml_escaped(std::string& out, std::string_view text) {
    constexpr std::string_view replacement = "\xEF\xBF\xBD";
    const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
    std::size_t i = 0, n = text.size();
    while (i < n) {
        unsigned char c = bytes[i];
        if (c < 0x80) {
            switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&apos;";
                break;
            case '\t':
            case '\n':
            case '\r':
                out.push_back(static_cast<char>(c));
                break;
            default:
                if (c < 0x20 || c == 0x7f)
                    out += replacement;
                else
                    out.push_back(static_cast<char>(c));
            }
            ++i;
            continue;
        }
        // A complete, shortest-form UTF-8 sequence of a character XML allows, else U+FFFD.
        std::size_t len = (c & 0xE0) == 0xC0   ? 2
                          : (c & 0xF0) == 0xE0 ? 3
                          : (c & 0xF8) == 0xF0 ? 4
                                               : 0;
        bool ok = len != 0 && i + len <= n;
        std::uint32_t cp = len == 2 ? c & 0x1Fu : len == 3 ? c & 0x0Fu : c & 0x07u;
        for (std::size_t k = 1; ok && k < len; ++k) {
            ok = (bytes[i + k] & 0xC0) == 0x80;
            cp = (cp << 6) | (bytes[i + k] & 0x3Fu);
        }
        constexpr std::uint32_t min_of[] = {0, 0, 0x80, 0x800, 0x10000};
        ok = ok && cp >= min_of[len] && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF) &&
             cp != 0xFFFE && cp != 0xFFFF && !(cp >= 0x80 && cp <= 0x9F);
        if (ok) {
            out.append(text.substr(i, len));
            i += len;
        } else {
            out += replacement;
            ++i;
        }
    }
}

} // namespace spyglass::output
