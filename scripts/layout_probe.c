/* Prints the byte offsets spyglass reads, for the CPython whose headers it is compiled against.
 * scripts/gen_layouts.py compiles this once per installed version (-DPy_BUILD_CORE) and turns the
 * output into src/python/layout_tables.inc. Each line is "field value"; a field the version does
 * not have is not printed. Field names match SPYGLASS_LAYOUT_FIELDS in include/spyglass/python/layout.hpp. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#if PY_VERSION_HEX < 0x030B0000
#include <frameobject.h>
#include <longintrepr.h>
#endif
#if PY_VERSION_HEX >= 0x03070000 && PY_VERSION_HEX < 0x03080000
#include "internal/pystate.h"
#elif PY_VERSION_HEX >= 0x03080000
#include "internal/pycore_pystate.h"
#endif
#if PY_VERSION_HEX >= 0x03090000
#include "internal/pycore_interp.h"
#include "internal/pycore_runtime.h"
#endif
#if PY_VERSION_HEX >= 0x030B0000
#include "internal/pycore_code.h"
#include "internal/pycore_dict.h"
#include "internal/pycore_frame.h"
#endif
#if PY_VERSION_HEX >= 0x030C0000
#include "internal/pycore_gil.h"
#endif

#define P(name, value) printf("%s %lu\n", #name, (unsigned long)(value))
#define O(name, type, field) P(name, offsetof(type, field))

/* Index of the single bit that differs between two equal-sized objects. */
static int changed_bit(const void *a, const void *b, size_t n) {
    const unsigned char *x = a, *y = b;
    for (size_t i = 0; i < n; i++)
        for (int bit = 0; bit < 8; bit++)
            if (((x[i] ^ y[i]) >> bit) & 1) return (int)(i * 8 + bit);
    return -1;
}

int main(void) {
#if PY_VERSION_HEX >= 0x03070000
    P(runtime_size, sizeof(_PyRuntimeState));
    O(runtime_interpreters_head, _PyRuntimeState, interpreters.head);
    O(runtime_interpreters_main, _PyRuntimeState, interpreters.main);
#if PY_VERSION_HEX >= 0x03080000
    O(runtime_main_thread, _PyRuntimeState, main_thread);
#else
    O(runtime_main_thread, _PyRuntimeState, ceval.pending.main_thread);
#endif
#if PY_VERSION_HEX < 0x030C0000
    O(runtime_gil_locked, _PyRuntimeState, ceval.gil.locked);
    O(runtime_gil_last_holder, _PyRuntimeState, ceval.gil.last_holder);
    O(runtime_tstate_current, _PyRuntimeState, gilstate.tstate_current);
    O(runtime_gil, _PyRuntimeState, ceval.gil);
#endif
    P(gil_size, sizeof(struct _gil_runtime_state));
#endif

    P(interp_size, sizeof(PyInterpreterState));
    O(interp_next, PyInterpreterState, next);
#if PY_VERSION_HEX >= 0x030B0000
    O(interp_threads_head, PyInterpreterState, threads.head);
#else
    O(interp_threads_head, PyInterpreterState, tstate_head);
#endif
#if PY_VERSION_HEX >= 0x03070000
    O(interp_id, PyInterpreterState, id);
#endif
#if PY_VERSION_HEX >= 0x030C0000
    O(interp_modules, PyInterpreterState, imports.modules);
    O(interp_ceval_gil, PyInterpreterState, ceval.gil);
    O(gil_locked, struct _gil_runtime_state, locked);
    O(gil_last_holder, struct _gil_runtime_state, last_holder);
#else
    O(interp_modules, PyInterpreterState, modules);
#endif

    P(tstate_size, sizeof(PyThreadState));
    O(tstate_next, PyThreadState, next);
    O(tstate_interp, PyThreadState, interp);
#if PY_VERSION_HEX < 0x030B0000
    O(tstate_frame, PyThreadState, frame);
#elif PY_VERSION_HEX < 0x030D0000
    O(tstate_cframe, PyThreadState, cframe);
    O(cframe_current_frame, _PyCFrame, current_frame);
    O(cframe_previous, _PyCFrame, previous);
#else
    O(tstate_current_frame, PyThreadState, current_frame);
    O(tstate_state, PyThreadState, state);
#if PY_VERSION_HEX >= 0x030E0000
    /* 3.14 moved holds_gil out of _status into an int of its own: read as a status word whose
       bit 0 it is. */
    O(tstate_status, PyThreadState, holds_gil);
    P(tstate_holds_gil_bit, 0);
#else
    O(tstate_status, PyThreadState, _status);
    {
        PyThreadState a, b;
        memset(&a, 0, sizeof a);
        memset(&b, 0, sizeof b);
        b._status.holds_gil = 1;
        P(tstate_holds_gil_bit,
          changed_bit((char *)&a + offsetof(PyThreadState, _status),
                      (char *)&b + offsetof(PyThreadState, _status), sizeof a._status));
    }
#endif
#endif
    O(tstate_thread_id, PyThreadState, thread_id);
#if PY_VERSION_HEX >= 0x030B0000
    O(tstate_native_thread_id, PyThreadState, native_thread_id);
    O(tstate_datastack_chunk, PyThreadState, datastack_chunk);
    O(tstate_datastack_top, PyThreadState, datastack_top);
#endif

#if PY_VERSION_HEX < 0x030B0000
    O(frame_back, PyFrameObject, f_back);
    O(frame_code, PyFrameObject, f_code);
    O(frame_lasti, PyFrameObject, f_lasti);
    O(frame_localsplus, PyFrameObject, f_localsplus);
#else
    P(iframe_size, sizeof(_PyInterpreterFrame));
#if PY_VERSION_HEX >= 0x030D0000
    O(iframe_code, _PyInterpreterFrame, f_executable);
    O(iframe_instr, _PyInterpreterFrame, instr_ptr);
#else
    O(iframe_code, _PyInterpreterFrame, f_code);
    O(iframe_instr, _PyInterpreterFrame, prev_instr);
#endif
    O(iframe_previous, _PyInterpreterFrame, previous);
    O(iframe_owner, _PyInterpreterFrame, owner);
#if PY_VERSION_HEX < 0x030C0000
    O(iframe_is_entry, _PyInterpreterFrame, is_entry);
#endif
    O(iframe_localsplus, _PyInterpreterFrame, localsplus);
    P(owner_thread, FRAME_OWNED_BY_THREAD);
    P(owner_generator, FRAME_OWNED_BY_GENERATOR);
    P(owner_frame_object, FRAME_OWNED_BY_FRAME_OBJECT);
#if PY_VERSION_HEX >= 0x030E0000
    /* The first owner that is not a Python function's frame: 3.14 added the interpreter's own
       entry frames below the C-stack shims (and 3.15 dropped the shims); CPython skips
       owner >= FRAME_OWNED_BY_INTERPRETER. */
    P(owner_cstack, FRAME_OWNED_BY_INTERPRETER);
#elif PY_VERSION_HEX >= 0x030C0000
    P(owner_cstack, FRAME_OWNED_BY_CSTACK);
#endif
    O(chunk_previous, _PyStackChunk, previous);
    O(chunk_size, _PyStackChunk, size);
    O(chunk_top, _PyStackChunk, top);
    O(chunk_data, _PyStackChunk, data);
#endif

    P(code_size, sizeof(PyCodeObject));
    O(code_argcount, PyCodeObject, co_argcount);
    O(code_firstlineno, PyCodeObject, co_firstlineno);
    O(code_filename, PyCodeObject, co_filename);
    O(code_name, PyCodeObject, co_name);
#if PY_VERSION_HEX >= 0x030B0000
    O(code_nlocalsplus, PyCodeObject, co_nlocalsplus);
    O(code_qualname, PyCodeObject, co_qualname);
    O(code_linetable, PyCodeObject, co_linetable);
    O(code_code_adaptive, PyCodeObject, co_code_adaptive);
    O(code_firsttraceable, PyCodeObject, _co_firsttraceable);
    O(code_localsplusnames, PyCodeObject, co_localsplusnames);
    O(code_localspluskinds, PyCodeObject, co_localspluskinds);
#else
    O(code_nlocals, PyCodeObject, co_nlocals);
    O(code_code, PyCodeObject, co_code);
    O(code_varnames, PyCodeObject, co_varnames);
#if PY_VERSION_HEX >= 0x030A0000
    O(code_linetable, PyCodeObject, co_linetable);
#else
    O(code_linetable, PyCodeObject, co_lnotab);
#endif
#endif

    O(object_type, PyObject, ob_type);
    O(var_size, PyVarObject, ob_size);
    O(type_name, PyTypeObject, tp_name);
    O(type_flags, PyTypeObject, tp_flags);
    O(type_basicsize, PyTypeObject, tp_basicsize);
    O(type_dictoffset, PyTypeObject, tp_dictoffset);
#if PY_VERSION_HEX >= 0x03030000
    O(heaptype_cached_keys, PyHeapTypeObject, ht_cached_keys);
#endif

#if PY_MAJOR_VERSION == 2
    O(bytes_data, PyStringObject, ob_sval);
    O(py2_unicode_length, PyUnicodeObject, length);
    O(py2_unicode_str, PyUnicodeObject, str);
    P(py2_unicode_size, Py_UNICODE_SIZE);
    O(int_value, PyIntObject, ob_ival);
#else
    O(bytes_data, PyBytesObject, ob_sval);
    O(unicode_length, PyASCIIObject, length);
    O(unicode_state, PyASCIIObject, state);
    P(unicode_ascii_data, sizeof(PyASCIIObject));
    P(unicode_compact_data, sizeof(PyCompactUnicodeObject));
    /* Legacy strings are gone in 3.12, but instances of str subclasses still keep their
     * characters behind this pointer. */
    O(unicode_legacy_data, PyUnicodeObject, data);
    {
        PyASCIIObject a, b;
        memset(&a, 0, sizeof a);
        memset(&b, 0, sizeof b);
        b.state.kind = 1;
        P(unicode_kind_shift, changed_bit(&a.state, &b.state, sizeof a.state));
        b.state.kind = 0;
        b.state.compact = 1;
        P(unicode_compact_bit, changed_bit(&a.state, &b.state, sizeof a.state));
        b.state.compact = 0;
        b.state.ascii = 1;
        P(unicode_ascii_bit, changed_bit(&a.state, &b.state, sizeof a.state));
    }
#endif
#if PY_VERSION_HEX >= 0x030C0000
    O(long_tag, PyLongObject, long_value.lv_tag);
    O(long_digits, PyLongObject, long_value.ob_digit);
#else
    O(long_digits, PyLongObject, ob_digit);
#endif
    O(float_value, PyFloatObject, ob_fval);
    O(tuple_items, PyTupleObject, ob_item);
    O(list_items, PyListObject, ob_item);

    O(dict_used, PyDictObject, ma_used);
#if PY_MAJOR_VERSION == 2
    O(dict_py2_mask, PyDictObject, ma_mask);
    O(dict_py2_table, PyDictObject, ma_table);
    P(dict_py2_entry_size, sizeof(PyDictEntry));
#else
    O(dict_keys, PyDictObject, ma_keys);
    O(dict_values, PyDictObject, ma_values);
#endif
#if PY_VERSION_HEX >= 0x030B0000
    O(keys_log2_size, PyDictKeysObject, dk_log2_size);
    O(keys_log2_index_bytes, PyDictKeysObject, dk_log2_index_bytes);
    O(keys_kind, PyDictKeysObject, dk_kind);
    O(keys_nentries, PyDictKeysObject, dk_nentries);
    O(keys_indices, PyDictKeysObject, dk_indices);
    P(keys_entry_size, sizeof(PyDictKeyEntry));
    P(keys_unicode_entry_size, sizeof(PyDictUnicodeEntry));
    O(values_values, PyDictValues, values);
#endif
#if PY_VERSION_HEX >= 0x030D0000
    O(values_capacity, PyDictValues, capacity);
    O(values_valid, PyDictValues, valid);
#endif

    P(long_shift, PyLong_SHIFT);
    O(type_itemsize, PyTypeObject, tp_itemsize);
    O(cell_ref, PyCellObject, ob_ref);
    O(code_flags, PyCodeObject, co_flags);
#if PY_MAJOR_VERSION >= 3
    O(code_kwonlyargcount, PyCodeObject, co_kwonlyargcount);
    O(function_qualname, PyFunctionObject, func_qualname);
#endif
#if PY_VERSION_HEX < 0x030B0000
    O(code_cellvars, PyCodeObject, co_cellvars);
    O(code_freevars, PyCodeObject, co_freevars);
#endif
    O(function_name, PyFunctionObject, func_name);
    O(set_used, PySetObject, used);
    O(set_mask, PySetObject, mask);
    O(set_table, PySetObject, table);
    O(set_entry_key, setentry, key);
    P(set_entry_size, sizeof(setentry));
    O(exception_args, PyBaseExceptionObject, args);
    return 0;
}
