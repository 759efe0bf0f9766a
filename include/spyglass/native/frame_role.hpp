// What a native frame is to a merged stack. Each activation of the interpreter's eval loop is
// where Python frames ran, so it gives way to them; the interpreter's calling machinery
// between two Python frames (the C API, vectorcall, its static call helpers) is plumbing; the
// start-up code under the outermost Python frame (main, the C library's thread start) is
// start-up; everything else, in the interpreter or not, is where native time is spent.
#pragma once

#include <string_view>

namespace spyglass::native {

enum class FrameRole : unsigned char {
    eval,     // one C-level call of the eval loop: replaced by the Python frames it ran
    plumbing, // the interpreter's calling machinery: hidden between Python frames
    startup,  // process and thread start-up: hidden below the outermost Python frame
    shown,
};

struct FrameOrigin {
    bool known = false;          // a symbol covers the address
    bool in_interpreter = false; // the python executable or its libpython
    bool in_libc = false;        // the C library (stripped on most systems)
    bool in_eval_loop = false;   // in the eval loop's code as its module's ELF shows it (its
                                 // symbol and the parts split off it: function_parts.hpp)
    int python_major = 3;        // 2.7's eval loop is PyEval_EvalFrameEx; 3's is
                                 // _PyEval_EvalFrameDefault, which PyEval_EvalFrameEx wraps
};

// The eval loop's function: _PyEval_EvalFrameDefault on 3, PyEval_EvalFrameEx on 2.
std::string_view eval_function(int python_major) noexcept;

// `function`: the symbol's name (a compiler's ".cold" or ".part.N" suffix allowed).
FrameRole frame_role(std::string_view function, const FrameOrigin& origin) noexcept;

} // namespace spyglass::native
