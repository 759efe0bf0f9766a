#include "spyglass/native/frame_role.hpp"

#include <array>

namespace spyglass::native {

namespace {

// The name without a compiler's clone suffix: "_PyEval_EvalFrameDefault.cold" is the same
// function as far as a stack is concerned.
std::string_view base_name(std::string_view function) noexcept {
    std::size_t dot = function.find('.');
    return dot == std::string_view::npos ? function : function.substr(0, dot);
}

constexpr std::array<std::string_view, 7> kStartup = {
    "_start", "__libc_start_main", "__libc_start_call_main", "start_thread", "clone",
    "clone3", "__clone",
};

// The C API entry points and the interpreter's static helpers that call a callable, run a code
// object or start a thread or the program.
constexpr std::array<std::string_view, 30> kInterpreterPlumbing = {
    "Py",
    "_Py",
    "cfunction_",
    "method_vectorcall",
    "vectorcall_",
    "call_function",
    "function_call", // 3.6's tp_call of functions
    "do_call_core",
    "function_code_fastcall",
    "fast_function",
    "slot_tp_call",
    "slot_tp_init",
    "type_call",
    "builtin_exec",
    "exec_code_in_module",
    "run_mod",
    "run_eval_code_obj",
    "run_file",
    "pymain_",
    "t_bootstrap",
    "thread_run",
    "pythread_wrapper",
    "method_call",
    "partial_call",
    "partial_vectorcall",
    "wrapper_call",
    "wrapperdescr_call",
    "gen_send_ex",
    "instancemethod_call",
    "object_vacall",
};

// Interpreter functions with a C-API-like name that are where a thread waits: a profile must
// show them.
constexpr std::array<std::string_view, 4> kWaiting = {
    "PyThread_",
    "PyGILState_",
    "_PyTime_",
    "PyOS_",
};

bool starts_with_any(std::string_view name, auto const& prefixes) noexcept {
    for (std::string_view prefix : prefixes)
        if (name.starts_with(prefix)) return true;
    return false;
}

} // namespace

std::string_view eval_function(int python_major) noexcept {
    return python_major >= 3 ? "_PyEval_EvalFrameDefault" : "PyEval_EvalFrameEx";
}

FrameRole frame_role(std::string_view function, const FrameOrigin& origin) noexcept {
    std::string_view name = base_name(function);
    if (origin.known)
        for (std::string_view start : kStartup)
            if (name == start || (start == "__clone" && name.starts_with(start)))
                return FrameRole::startup;
    if (origin.in_interpreter) {
        if (origin.in_eval_loop) return FrameRole::eval;
        if (!origin.known) return FrameRole::plumbing; // a stripped interpreter's static helper
        if (name == eval_function(origin.python_major)) return FrameRole::eval;
        if (starts_with_any(name, kWaiting)) return FrameRole::shown;
        if (name == "main" || starts_with_any(name, kInterpreterPlumbing))
            return FrameRole::plumbing;
        return FrameRole::shown;
    }
    // A stripped C library's unnamed functions: at a stack's bottom they are its start-up.
    if (origin.in_libc && !origin.known) return FrameRole::startup;
    return FrameRole::shown;
}

} // namespace spyglass::native
