#include "spyglass/output/dump.hpp"

#include <fmt/format.h>

#include "spyglass/output/json_writer.hpp"
#include "spyglass/output/writer.hpp"
#include "spyglass/terminal_text.hpp"

namespace spyglass::output {

namespace {

std::string thread_state(const model::ThreadSnapshot& thread) {
    std::string state = thread.on_cpu ? "active" : "idle";
    if (thread.holds_gil) state += ", +gil";
    return state;
}

// "socket: recvfrom tcp 127.0.0.1:5432 (fd 5, local 127.0.0.1:40312, ...)"; empty when the
// wait is not known.
std::string wait_text(const model::WaitSnapshot& wait) {
    if (wait.kind == model::WaitKind::unknown) return {};
    std::string text = model::wait_kind_name(wait.kind);
    if (!wait.syscall.empty() || !wait.target.empty()) text += ':';
    for (const std::string* part : {&wait.syscall, &wait.target})
        if (!part->empty()) text += ' ' + *part;
    if (!wait.detail.empty()) text += " (" + wait.detail + ")";
    return text;
}

} // namespace

// Every name, path and value here comes from the target (or its /proc files): each goes
// through terminal_safe, since the text is for root's terminal.
std::string format_dump_text(const model::ProcessSnapshot& snapshot,
                             const model::FrameTable& frames, bool full_filenames) {
    std::string out;
    auto it = std::back_inserter(out);
    auto safe = [](std::string_view text) { return terminal_safe(text); };
    fmt::format_to(it, "Process {}: {}\n", snapshot.pid, safe(join_words(snapshot.command)));
    fmt::format_to(it, "Python {} ({})\n", safe(snapshot.python_version),
                   safe(snapshot.executable));
    for (const std::string& note : snapshot.notes)
        fmt::format_to(it, "note: {}\n", safe(note));
    const model::StringTable& strings = frames.strings();
    for (const model::ThreadSnapshot& thread : snapshot.threads) {
        fmt::format_to(it, "\nThread {} [0x{:x}] \"{}\" ({}){}\n", thread.tid, thread.thread_id,
                       safe(thread.name), thread_state(thread),
                       thread.interp_index > 0
                           ? fmt::format(" in sub-interpreter {}", thread.interp_index)
                           : "");
        // Two spaces, not a frame's four: scripts that read frames by their indent skip it.
        if (std::string wait = wait_text(thread.wait); !wait.empty())
            fmt::format_to(it, "  Waiting: {}\n", safe(wait));
        if (thread.frames.empty()) out += "    (no Python frames)\n";
        for (std::size_t i = 0; i < thread.frames.size(); ++i) {
            const model::Frame& frame = frames.get(thread.frames[i]);
            std::string function = safe(strings.view(frame.function));
            if (frame.kind == model::FrameKind::marker) {
                fmt::format_to(it, "    {}\n", function);
                continue;
            }
            if (frame.kind == model::FrameKind::native) {
                std::string module = safe(native_module_name(frame, strings));
                if (frame.line > 0) {
                    std::string_view source = strings.view(frame.file);
                    if (!full_filenames) source = source.substr(source.rfind('/') + 1);
                    fmt::format_to(it, "    {} ({}, {}:{})\n", function, module, safe(source),
                                   frame.line);
                } else {
                    fmt::format_to(it, "    {} ({})\n", function, module);
                }
                continue;
            }
            std::string_view file = strings.view(frame.file);
            fmt::format_to(it, "    {} ({}:{})\n", function,
                           safe(full_filenames ? std::string(file) : short_filename(file)),
                           frame.line);
            if (i < thread.locals.size()) {
                bool any_argument = false, any_local = false;
                for (const auto& local : thread.locals[i])
                    (local.argument ? any_argument : any_local) = true;
                for (int pass = 0; pass < 2; ++pass) {
                    bool arguments = pass == 0;
                    if (arguments ? !any_argument : !any_local) continue;
                    out += arguments ? "        Arguments:\n" : "        Locals:\n";
                    for (const auto& local : thread.locals[i])
                        if (local.argument == arguments)
                            fmt::format_to(it, "            {} = {}\n", safe(local.name),
                                           safe(local.value));
                }
            }
        }
        if (thread.status == model::StackStatus::torn)
            out += "    <the stack kept changing while it was read; frames may be mixed>\n";
        else if (thread.paused)
            out += "    (read while the thread was paused)\n";
    }
    return out;
}

std::string format_dump_json(const model::ProcessSnapshot& snapshot,
                             const model::FrameTable& frames) {
    std::string out;
    JsonWriter json(out);
    const model::StringTable& strings = frames.strings();
    json.begin_object();
    json.field("pid", static_cast<std::int64_t>(snapshot.pid));
    json.key("command").begin_array();
    for (const std::string& word : snapshot.command)
        json.value(word);
    json.end_array();
    json.field("python_version", snapshot.python_version);
    json.field("executable", snapshot.executable);
    json.field("python_binary", snapshot.python_binary);
    json.key("notes").begin_array();
    for (const std::string& note : snapshot.notes)
        json.value(note);
    json.end_array();
    json.key("threads").begin_array();
    for (const model::ThreadSnapshot& thread : snapshot.threads) {
        json.begin_object();
        json.field("tid", static_cast<std::int64_t>(thread.tid));
        json.field("thread_id", thread.thread_id);
        json.field("name", thread.name);
        json.field("state", thread.on_cpu ? "active" : "idle");
        json.field("os_state", std::string_view(&thread.os_state, 1));
        json.field("gil", thread.holds_gil);
        json.field("interpreter", thread.interp_index);
        json.field("stack", model::stack_status_name(thread.status));
        json.field("paused", thread.paused);
        // null when nothing is known (on a CPU, --no-waits); "syscall", "target", "detail"
        // only when known (and not with --waits=kind).
        if (thread.wait.kind == model::WaitKind::unknown) {
            json.key("wait").null();
        } else {
            json.key("wait").begin_object();
            json.field("kind", model::wait_kind_name(thread.wait.kind));
            if (!thread.wait.syscall.empty()) json.field("syscall", thread.wait.syscall);
            if (!thread.wait.target.empty()) json.field("target", thread.wait.target);
            if (!thread.wait.detail.empty()) json.field("detail", thread.wait.detail);
            json.end_object();
        }
        json.key("frames").begin_array();
        for (std::size_t i = 0; i < thread.frames.size(); ++i) {
            const model::Frame& frame = frames.get(thread.frames[i]);
            json.begin_object();
            json.field("function", strings.view(frame.function));
            if (frame.kind == model::FrameKind::marker) {
                json.field("marker", true);
            } else if (frame.kind == model::FrameKind::native) {
                json.field("native", true);
                json.field("module", native_module_name(frame, strings));
                if (frame.module.value != 0) {
                    json.field("path", strings.view(frame.module));
                    if (std::string_view id = frames.build_id(frame.module); !id.empty())
                        json.field("build_id", id);
                }
                if (frame.line > 0) {
                    json.field("file", strings.view(frame.file));
                    json.field("line", frame.line);
                }
            } else {
                json.field("file", strings.view(frame.file));
                json.field("line", frame.line);
                json.field("first_line", frame.first_line);
            }
            if (i < thread.locals.size()) {
                json.key("locals").begin_array();
                for (const auto& local : thread.locals[i]) {
                    json.begin_object();
                    json.field("name", local.name);
                    json.field("value", local.value);
                    json.field("argument", local.argument);
                    json.end_object();
                }
                json.end_array();
            }
            json.end_object();
        }
        json.end_array();
        json.end_object();
    }
    json.end_array();
    json.end_object();
    out.push_back('\n');
    return out;
}

} // namespace spyglass::output
