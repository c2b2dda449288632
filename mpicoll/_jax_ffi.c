/* mpicoll's XLA FFI handler: a collective compiled into a jax.jit program, on the CPU.
 *
 * XLA calls handle() on its own thread for each collective of a compiled program
 * (mpicoll/jax/_primitive.py lowers them to the custom call "mpicoll_host", typed FFI,
 * with a side effect and JAX's ordered-effect token in and out). The call's one
 * attribute, `site`, names what the lowering registered with add_site(): the host
 * function of that collective (mpicoll/jax/_host.py: the public collective that runs
 * it, its group, op and form fixed) and the numpy dtypes of its input and output.
 * The handler takes the GIL, puts numpy arrays over XLA's two buffers (no copy) and
 * calls the host function, host(input, output, fresh): `fresh` says that these two
 * buffers are not those of either of the site's last two calls (XLA hands some
 * programs new buffers each call, others the same ones in turn; a group keeps a
 * repeated call's messages by where its arrays lie, so the host function copies fresh
 * buffers through arrays of its own). An exception it raises becomes the FFI error
 * that jax raises at the caller, "TypeName: message".
 *
 * What this replaces is XLA's Python buffer callback, which builds Python objects for
 * each of its operands and calls through JAX's callback wrappers; the collective
 * itself runs as every other face's does (its checks, recorder, watched wait and, where
 * it is in use, the compiled core), so nothing here talks to MPI.
 *
 * A site registered in place (all_reduce, broadcast, reduce: the result overwrites the
 * input) gets its input copied into its output buffer here, where XLA gave two buffers
 * (where it aliased them, nothing is copied), and one array over the output passed as
 * both: the host function then works in place with no test of its own.
 *
 * Built where JAX's headers are found at build time (setup.py: jax.ffi.include_dir(),
 * the C header of XLA's FFI); where it is not, the face lowers to the buffer callback.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include "xla/ffi/api/c_api.h"

#define MAX_RANK 32

#if PY_VERSION_HEX >= 0x030D0000
#define FINALIZING() Py_IsFinalizing()
#else
#define FINALIZING() _Py_IsFinalizing()
#endif

/* every site registered in this process: (host, input dtype, output dtype, input bytes,
 * output bytes, in place) tuples, indexed by the custom call's `site` attribute; the face
 * registers each distinct collective once (mpicoll/jax/_primitive.py) */
static PyObject *sites = NULL;

/* each site's last two calls' buffers (input, output), in the order of `sites` */
typedef struct {
    void *in[2], *out[2];
    int next;
} Seen;
static Seen *seen = NULL;
static Py_ssize_t seen_room = 0;

static const char SITE[] = "site";

/* whether XLA's thread running the handler has its Python thread state kept */
static _Thread_local int thread_kept = 0;

static XLA_FFI_Error *ffi_error(const XLA_FFI_Api *api, XLA_FFI_Error_Code code,
                                const char *message) {
    XLA_FFI_Error_Create_Args args = {
        .struct_size = XLA_FFI_Error_Create_Args_STRUCT_SIZE,
        .extension_start = NULL,
        .message = message,
        .errc = code,
    };
    return api->XLA_FFI_Error_Create(&args);
}

/* The Python exception now set, as one FFI error: "TypeName: message" (the GIL held) */
static XLA_FFI_Error *raised(const XLA_FFI_Api *api) {
    PyObject *type, *exc, *tb, *text = NULL;
    PyErr_Fetch(&type, &exc, &tb);
    PyErr_NormalizeException(&type, &exc, &tb);
    if (exc != NULL)
        text = PyUnicode_FromFormat("%s: %S", _PyType_Name(Py_TYPE(exc)), exc);
    const char *message = text != NULL ? PyUnicode_AsUTF8(text) : NULL;
    if (message == NULL) {
        PyErr_Clear();
        message = "mpicoll: the collective raised an exception that could not be shown";
    }
    XLA_FFI_Error *e = ffi_error(api, XLA_FFI_Error_Code_INTERNAL, message);
    Py_XDECREF(text);
    Py_XDECREF(type);
    Py_XDECREF(exc);
    Py_XDECREF(tb);
    return e;
}

/* The first buffer of `n` that is not a token (the ordered effect's, first) */
static XLA_FFI_Buffer *data_buffer(int64_t n, void **items) {
    for (int64_t i = 0; i < n; i++) {
        XLA_FFI_Buffer *b = (XLA_FFI_Buffer *)items[i];
        if (b->dtype != XLA_FFI_DataType_TOKEN) return b;
    }
    return NULL;
}

/* A numpy array over XLA's buffer, of the dtype the lowering gave (it owns nothing),
 * where the buffer holds the `nbytes` the lowering saw (else a site that is not this
 * call's: refused, never read or written past the buffer) */
static int holds(XLA_FFI_Buffer *b, PyObject *descr, PyObject *nbytes) {
    if (b->rank > MAX_RANK) {
        PyErr_Format(PyExc_ValueError, "mpicoll: an array of rank %lld (most: %d)",
                     (long long)b->rank, MAX_RANK);
        return 0;
    }
    long long have = PyDataType_ELSIZE((PyArray_Descr *)descr);
    for (int64_t i = 0; i < b->rank; i++) have *= b->dims[i];
    long long want = PyLong_AsLongLong(nbytes);
    if (want == -1 && PyErr_Occurred()) return 0;
    if (have != want) {
        PyErr_Format(PyExc_ValueError, "mpicoll: XLA's buffer holds %lld bytes where the "
                     "collective compiled here takes %lld: a site of another program",
                     have, want);
        return 0;
    }
    return 1;
}

static PyObject *over(XLA_FFI_Buffer *b, PyObject *descr, PyObject *nbytes) {
    npy_intp dims[MAX_RANK];
    if (!holds(b, descr, nbytes)) return NULL;
    for (int64_t i = 0; i < b->rank; i++) dims[i] = (npy_intp)b->dims[i];
    Py_INCREF(descr); /* (stolen) */
    return PyArray_NewFromDescr(&PyArray_Type, (PyArray_Descr *)descr, (int)b->rank, dims,
                                NULL, b->data, NPY_ARRAY_CARRAY, NULL);
}

static int64_t site_of(const XLA_FFI_Attrs *attrs) {
    for (int64_t i = 0; i < attrs->size; i++) {
        const XLA_FFI_ByteSpan *name = attrs->names[i];
        if (attrs->types[i] != XLA_FFI_AttrType_SCALAR || name->len != sizeof SITE - 1 ||
            memcmp(name->ptr, SITE, sizeof SITE - 1) != 0)
            continue;
        const XLA_FFI_Scalar *s = (const XLA_FFI_Scalar *)attrs->attrs[i];
        if (s->dtype == XLA_FFI_DataType_S64) return *(const int64_t *)s->value;
        if (s->dtype == XLA_FFI_DataType_S32) return *(const int32_t *)s->value;
    }
    return -1;
}

static XLA_FFI_Error *run_site(const XLA_FFI_Api *api, int64_t index, XLA_FFI_Buffer *in,
                               XLA_FFI_Buffer *out) {
    if (sites == NULL || index < 0 || index >= PyList_GET_SIZE(sites))
        return ffi_error(api, XLA_FFI_Error_Code_INVALID_ARGUMENT,
                         "mpicoll: a collective compiled in another process, or an unknown "
                         "site: trace the function again in this process");
    PyObject *site = PyList_GET_ITEM(sites, index); /* borrowed: the list keeps it */
    int in_place = PyTuple_GET_ITEM(site, 5) == Py_True;
    PyObject *a = NULL, *b = over(out, PyTuple_GET_ITEM(site, 2), PyTuple_GET_ITEM(site, 4));
    if (b != NULL && in_place) {
        if (holds(in, PyTuple_GET_ITEM(site, 1), PyTuple_GET_ITEM(site, 3)))
            a = Py_NewRef(b); /* (the sizes equal: add_site) */
        if (a != NULL && in->data != out->data)
            memcpy(out->data, in->data, (size_t)PyArray_NBYTES((PyArrayObject *)b));
    } else if (b != NULL) {
        a = over(in, PyTuple_GET_ITEM(site, 1), PyTuple_GET_ITEM(site, 3));
    }
    if (a == NULL) Py_CLEAR(b);
    PyObject *res = NULL;
    if (b != NULL) {
        Seen *w = &seen[index];
        int known = (w->in[0] == in->data && w->out[0] == out->data) ||
                    (w->in[1] == in->data && w->out[1] == out->data);
        if (!known) {
            w->in[w->next] = in->data;
            w->out[w->next] = out->data;
            w->next ^= 1;
        }
        PyObject *argv[3] = {a, b, known ? Py_False : Py_True};
        res = PyObject_Vectorcall(PyTuple_GET_ITEM(site, 0), argv, 3, NULL);
    }
    Py_XDECREF(a);
    Py_XDECREF(b);
    if (res == NULL) return raised(api);
    Py_DECREF(res);
    return NULL;
}

/* The head of each extension in a call frame's chain. XLA keeps this layout for the
 * handlers built against older headers, but renamed its type (XLA_FFI_Extension_Base up
 * to jaxlib 0.10, XLA_FFI_InternalExtension from 0.11): the chain is read through this
 * copy of the layout, so that the handler builds against either header. */
typedef struct extension_head {
    size_t struct_size;
    int type; /* XLA_FFI_Extension_Type */
    struct extension_head *next;
} extension_head;

/* The handler: XLA's version query answered; else one collective run */
static XLA_FFI_Error *handle(XLA_FFI_CallFrame *frame) {
    for (extension_head *ext = (extension_head *)(void *)frame->extension_start; ext != NULL;
         ext = ext->next) {
        if (ext->type != XLA_FFI_Extension_Metadata) continue;
        XLA_FFI_Metadata *m = ((XLA_FFI_Metadata_Extension *)(void *)ext)->metadata;
        m->api_version.major_version = XLA_FFI_API_MAJOR;
        m->api_version.minor_version = XLA_FFI_API_MINOR;
        m->traits = 0;
        return NULL;
    }
    if (frame->stage != XLA_FFI_ExecutionStage_EXECUTE) return NULL;
    XLA_FFI_Buffer *in = data_buffer(frame->args.size, frame->args.args);
    XLA_FFI_Buffer *out = data_buffer(frame->rets.size, frame->rets.rets);
    int64_t index = site_of(&frame->attrs);
    if (in == NULL || out == NULL)
        return ffi_error(frame->api, XLA_FFI_Error_Code_INVALID_ARGUMENT,
                         "mpicoll: the custom call has no input or no output buffer");
    if (!Py_IsInitialized() || FINALIZING())
        return ffi_error(frame->api, XLA_FFI_Error_Code_CANCELLED,
                         "mpicoll: Python is shutting down: no collective can run");
    if (!thread_kept) {
        /* XLA's own thread: its Python state made once and kept (else each call would
         * make and free one: about a microsecond). A thread with one already (a Python
         * thread, which may even hold the GIL here) keeps what it has. */
        if (PyGILState_GetThisThreadState() == NULL) {
            PyGILState_Ensure();
            PyEval_SaveThread();
        }
        thread_kept = 1;
    }
    PyGILState_STATE gil = PyGILState_Ensure();
    XLA_FFI_Error *e = run_site(frame->api, index, in, out);
    PyGILState_Release(gil);
    return e;
}

/* handler(): the handler as the PyCapsule jax.ffi.register_ffi_target takes */
static PyObject *handler(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyCapsule_New((void *)handle, NULL, NULL);
}

/* add_site(host, input dtype, output dtype, input bytes, output bytes, in_place=False)
 * -> the index for the `site` attribute */
static PyObject *add_site(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *host, *tin, *tout, *nin, *nout, *din = NULL, *dout = NULL, *site = NULL;
    int in_place = 0;
    if (!PyArg_ParseTuple(args, "OOOO!O!|p", &host, &tin, &tout, &PyLong_Type, &nin,
                          &PyLong_Type, &nout, &in_place))
        return NULL;
    if (!PyCallable_Check(host))
        PyErr_SetString(PyExc_TypeError, "add_site: host must be callable");
    else if (in_place && PyObject_RichCompareBool(nin, nout, Py_EQ) != 1) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "add_site: in place, the sizes must be equal");
    } else if (PyArray_DescrConverter(tin, (PyArray_Descr **)&din) &&
               PyArray_DescrConverter(tout, (PyArray_Descr **)&dout))
        site = PyTuple_Pack(6, host, din, dout, nin, nout, in_place ? Py_True : Py_False);
    Py_XDECREF(din);
    Py_XDECREF(dout);
    if (site == NULL) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(sites);
    if (n >= seen_room) { /* (room for this site's last buffers first: never a site without) */
        Py_ssize_t room = seen_room ? 2 * seen_room : 64;
        Seen *more = PyMem_Realloc(seen, (size_t)room * sizeof(Seen));
        if (more == NULL) {
            Py_DECREF(site);
            return PyErr_NoMemory();
        }
        memset(more + seen_room, 0, (size_t)(room - seen_room) * sizeof(Seen));
        seen = more;
        seen_room = room;
    }
    int err = PyList_Append(sites, site);
    Py_DECREF(site);
    if (err < 0) return NULL;
    return PyLong_FromSsize_t(PyList_GET_SIZE(sites) - 1);
}

static PyMethodDef methods[] = {
    {"handler", handler, METH_NOARGS, "the FFI handler, as a PyCapsule"},
    {"add_site", add_site, METH_VARARGS,
     "register (host, input dtype, output dtype, input bytes, output bytes, in_place)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_jax_ffi", "mpicoll's XLA FFI handler (see its source)", -1,
    methods,
};

PyMODINIT_FUNC PyInit__jax_ffi(void) {
    import_array();
    sites = PyList_New(0);
    if (sites == NULL) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddIntConstant(m, "FFI_MAJOR", XLA_FFI_API_MAJOR) < 0 ||
        PyModule_AddIntConstant(m, "FFI_MINOR", XLA_FFI_API_MINOR) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
