/* Prints the byte position of every _Py_DebugOffsets field spyglass reads, for the descriptors in
 * src/python/debug_offsets.cpp (docs/adding-a-python-version.md, step 4). Build against a 3.13+
 * include directory:  gcc -I<include>/python3.X [-idirafter <root>/usr/include] -o probe
 * scripts/debug_offsets_probe.c && ./probe */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stdio.h>
#if PY_VERSION_HEX >= 0x030E0000
#include "internal/pycore_debug_offsets.h"
#endif
#include "internal/pycore_runtime.h"

#define Q(F) printf("%-40s %zu\n", #F, offsetof(_Py_DebugOffsets, F))

int main(void) {
    printf("%-40s %s\n", "version", PY_VERSION);
    Q(free_threaded);
    Q(runtime_state.size);
    Q(runtime_state.interpreters_head);
    Q(interpreter_state.size);
    Q(interpreter_state.id);
    Q(interpreter_state.next);
    Q(interpreter_state.threads_head);
    Q(interpreter_state.imports_modules);
    Q(interpreter_state.ceval_gil);
    Q(interpreter_state.gil_runtime_state);
    Q(interpreter_state.gil_runtime_state_locked);
    Q(interpreter_state.gil_runtime_state_holder);
    Q(thread_state.size);
    Q(thread_state.next);
    Q(thread_state.interp);
    Q(thread_state.current_frame);
    Q(thread_state.thread_id);
    Q(thread_state.native_thread_id);
    Q(thread_state.datastack_chunk);
    Q(thread_state.status);
#if PY_VERSION_HEX >= 0x030F0000
    Q(thread_state.holds_gil);
#endif
    Q(interpreter_frame.size);
    Q(interpreter_frame.previous);
    Q(interpreter_frame.executable);
    Q(interpreter_frame.instr_ptr);
    Q(interpreter_frame.localsplus);
    Q(interpreter_frame.owner);
    Q(code_object.size);
    Q(code_object.filename);
    Q(code_object.name);
    Q(code_object.qualname);
    Q(code_object.linetable);
    Q(code_object.firstlineno);
    Q(code_object.argcount);
    Q(code_object.localsplusnames);
    Q(code_object.localspluskinds);
    Q(code_object.co_code_adaptive);
    Q(pyobject.size);
    Q(pyobject.ob_type);
    Q(type_object.size);
    Q(type_object.tp_name);
    Q(type_object.tp_flags);
    Q(tuple_object.size);
    Q(tuple_object.ob_item);
    Q(tuple_object.ob_size);
    Q(list_object.size);
    Q(list_object.ob_item);
    Q(dict_object.size);
    Q(dict_object.ma_keys);
    Q(dict_object.ma_values);
    Q(float_object.size);
    Q(float_object.ob_fval);
    Q(long_object.size);
    Q(long_object.lv_tag);
    Q(long_object.ob_digit);
    Q(bytes_object.size);
    Q(bytes_object.ob_sval);
    Q(unicode_object.size);
    Q(unicode_object.state);
    Q(unicode_object.length);
    Q(unicode_object.asciiobject_size);
    printf("%-40s %zu\n", "sizeof", sizeof(_Py_DebugOffsets));
    return 0;
}
