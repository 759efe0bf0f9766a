/* A C extension for the --native tests, built by the test against each interpreter's own
 * headers (Python 2.7 and 3.6+). Two ways time is spent in C:
 *
 *   spin_forever()      loops in C with the GIL released, never returning: the leaf of its
 *                       thread is spyglass_cext_spin, under its Python caller.
 *   call_back(fn)       calls fn() from C again and again, never returning: the Python frames
 *                       of fn sit above spyglass_cext_call_back, which sits above its caller.
 *
 * The functions are not static and not inlined so that their names are in .symtab whatever
 * the compiler does. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

volatile unsigned long spyglass_cext_counter;

__attribute__((noinline)) void spyglass_cext_spin(void) {
    for (;;)
        spyglass_cext_counter = spyglass_cext_counter * 3 + 1;
}

__attribute__((noinline)) PyObject* spyglass_cext_call_back(PyObject* fn) {
    for (;;) {
        PyObject* result = PyObject_CallObject(fn, NULL);
        if (result == NULL) return NULL;
        Py_DECREF(result);
    }
}

static PyObject* spin_forever(PyObject* self, PyObject* args) {
    (void)self;
    (void)args;
    PyThreadState* saved = PyEval_SaveThread();
    spyglass_cext_spin();
    PyEval_RestoreThread(saved);
    Py_RETURN_NONE;
}

static PyObject* call_back(PyObject* self, PyObject* fn) {
    (void)self;
    return spyglass_cext_call_back(fn);
}

static PyMethodDef methods[] = {
    {"spin_forever", spin_forever, METH_NOARGS, "Spins in C, without the GIL, forever."},
    {"call_back", call_back, METH_O, "Calls fn() from C forever."},
    {NULL, NULL, 0, NULL},
};

#if PY_MAJOR_VERSION >= 3
static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "spyglass_cext", NULL, -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_spyglass_cext(void) { return PyModule_Create(&module); }
#else
PyMODINIT_FUNC initspyglass_cext(void) { Py_InitModule("spyglass_cext", methods); }
#endif
