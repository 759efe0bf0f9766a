/* Built twice by tests/integration/test_native_modules.py, with LOOP_NAME spyglass_late_a_loop
   and spyglass_late_b_loop: two libraries of the same layout, loaded by late_library_target.py
   after spyglass attached. The loop calls back into Python until the callback returns 0. */
typedef int (*spyglass_late_callback)(int);

int LOOP_NAME(spyglass_late_callback callback) {
    int i = 0;
    while (callback(i)) /* line: loop */
        ++i;
    return i;
}
