/* mpicoll's compiled core: issue, wait and record a collective in C.
 *
 * Built once per MPI family (MPICH ABI: MPICH, Intel MPI, Cray MPICH, MVAPICH; Open
 * MPI) as mpicoll._core_<family>, against the mpi.h of the MPI that mpi4py loads
 * (setup.py); mpicoll/_core_loader.py picks the variant at import and falls back to the
 * Python path where none matches. The communicator, datatype and op come from
 * mpi4py's objects through its C API: MPI is mpi4py's, never owned here.
 *
 * What a call does here is what the Python quick path does (mpicoll/_collectives/
 * _call.py, quick; _messages.py, issue): start the nonblocking call (call(): all_reduce,
 * broadcast) or the messages a group keeps as persistent requests (startwait(): the
 * other collectives on 2 to 8 ranks), test, test again up to `spin` times, and only
 * then register the wait with the monitor (mpicoll/_watched.py, through the callables
 * given to configure()) and block in MPI_Wait(all) with the GIL released, so the
 * monitor thread ends a job whose wait cannot finish, exactly as for the Python path.
 * Every call is noted in a ring of fixed C records (the flight recorder's: op, group,
 * sequence number, count, datatype, op or root, or what the recorder keeps of the
 * arguments; call site as code object and instruction offset, times, state), turned
 * into the Python recorder's lists only when read (mpicoll/_recorder.py, records()).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#include <structmember.h>
#include <mpi.h>
#include <stdarg.h>
#include <time.h>

/* Python 3.11's frames, read where they lie: the recorder's call site without making a
 * frame object of each frame it passes (PyEval_GetFrame and PyFrame_GetBack make them;
 * about 1,200 instructions a call). Other versions take the public API. */
#if PY_VERSION_HEX >= 0x030B00F0 && PY_VERSION_HEX < 0x030C0000 && defined(__has_include)
#if __has_include("internal/pycore_frame.h")
#define Py_BUILD_CORE 1
#include "internal/pycore_frame.h"
#undef Py_BUILD_CORE
#define FRAMES_IN_PLACE 1
#endif
#endif

#include "mpi4py/mpi4py.h"

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#ifndef CORE_NAME
#define CORE_NAME _core_mpich
#endif
#ifndef CORE_FAMILY
#define CORE_FAMILY "mpich"
#endif
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define STR_(x) #x
#define STR(x) STR_(x)

/* What mpicoll/_core_loader.py expects (its API): raised with every change to what the
 * Python side calls here, so that a core built from other sources is refused, not used */
#define CORE_API 17

enum { ISSUED = 0, FAILED = 1 };
/* what a record is of (REDUCE_ROOT: a reduce's root, in place) */
enum { ALLREDUCE = 0, BCAST = 1, MESSAGES = 2, REDUCE = 3, REDUCE_ROOT = 4 };
/* the MPI collectives of an exchange's quick entry (its method: "Iallgather", ...) */
enum { NOT_MINE = -1, ALLGATHER = 0, ALLTOALL = 1, REDUCE_SCATTER_BLOCK = 2 };

typedef struct {
    long long id;       /* from next_id: one order for both rings */
    PyObject *op;       /* the collective's name */
    PyObject *group;    /* the ProcessGroup */
    long long seq;
    long long count;
    PyObject *datatype; /* mpi4py Datatype */
    PyObject *mpi_op;   /* what follows the buffer: the mpi4py Op (ALLREDUCE), the root
                           (BCAST), (Op, root) (REDUCE) */
    PyObject *meta;     /* what the recorder keeps of the call's arguments, or NULL: made
                           from count, datatype and op when read */
    PyObject *code;     /* the call site's code object, or NULL */
    int lasti;
    long long issued, wait, done; /* ns since the epoch; 0: not yet */
    int state;
    int kind;
} Record;

static Record *ring = NULL;
static Py_ssize_t capacity = 0, next_slot = 0, filled = 0;

/* set by configure(): the Python side's objects this core uses */
/* the records' numbers, one order for both rings: the Python recorder draws its own from
 * here too (`ids`, an iterator over it) once the core is in use */
static long long next_id = 0;
static PyObject *inside = NULL;    /* dict: file name -> whether it is mpicoll's own */
static PyObject *is_inside = NULL; /* callable: file name -> bool (fills `inside`) */
static PyObject *on_block = NULL;  /* (name, group, seq, args) -> token: watched.begin */
static PyObject *on_unblock = NULL;/* (token) -> None: watched.end */
static PyObject *mpi_exception = NULL; /* mpi4py.MPI.Exception */
static PyObject *states[2] = {NULL, NULL}; /* "issued", "failed" */

/* A tuple of n new references, stolen (Py_BuildValue's "N", without its format read
 * on every call); NULL, each of them released, where one is NULL or the tuple cannot be
 * made. */
static PyObject *tuple_of(Py_ssize_t n, ...) {
    va_list ap;
    va_start(ap, n);
    PyObject *t = PyTuple_New(n);
    int bad = t == NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = va_arg(ap, PyObject *);
        if (x == NULL) bad = 1;
        else if (t != NULL) PyTuple_SET_ITEM(t, i, x);
        else Py_DECREF(x);
    }
    va_end(ap);
    if (bad) Py_CLEAR(t); /* (its empty slots are NULL: released as none) */
    return t;
}

/* Whether `obj` is the string `name` (interned): the same object, or an equal string
 * that is not interned (two interned strings that are not one object differ: an entry's
 * method, written as a literal in Python, is interned, and a comparison that can only
 * fail cost about 95 instructions, five of them a call). Never raises. */
static int same_name(PyObject *obj, PyObject *name) {
    if (obj == name) return 1;
    if (!PyUnicode_Check(obj) || (PyUnicode_CheckExact(obj) && PyUnicode_CHECK_INTERNED(obj)))
        return 0;
    int same = PyUnicode_Compare(obj, name) == 0;
    if (PyErr_Occurred()) PyErr_Clear();
    return same;
}

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts); /* wall clock, as time.time_ns: hosts compared */
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void clear_record(Record *r) {
    Py_CLEAR(r->op);
    Py_CLEAR(r->group);
    Py_CLEAR(r->datatype);
    Py_CLEAR(r->mpi_op);
    Py_CLEAR(r->meta);
    Py_CLEAR(r->code);
}

/* The first frame outside mpicoll (and torch.distributed), from the caller's caller:
 * the user's call site, as mpicoll._recorder.issued finds it. */
/* Whether the file `name` is mpicoll's own (or torch.distributed's): `inside`, filled by
 * `is_inside`. 1, 0, or -1 where it cannot tell (the error cleared). */
static int own_file(PyObject *name) {
    PyObject *known = PyDict_GetItemWithError(inside, name); /* borrowed */
    if (known == NULL) {
        if (PyErr_Occurred()) PyErr_Clear();
        known = PyObject_CallOneArg(is_inside, name);
        if (known == NULL) {
            PyErr_Clear();
            return -1;
        }
        PyDict_SetItem(inside, name, known);
        Py_DECREF(known); /* the dict holds it */
    }
    return known != Py_False;
}

/* own_file() of a code object's file, remembered for the last CODES code objects seen
 * (held, so that no other code object takes a remembered one's address): a call's walk
 * meets the same two or three each time, and a pointer compared costs less than the
 * file name's lookup (about 110 instructions a frame). */
#define CODES 4
static PyObject *codes_seen[CODES];
static int codes_own[CODES], codes_next = 0;

static int own_code(PyObject *code, PyObject *filename) {
    for (int i = 0; i < CODES; i++)
        if (codes_seen[i] == code) return codes_own[i];
    int own = own_file(filename);
    if (own >= 0) {
        Py_XSETREF(codes_seen[codes_next], Py_NewRef(code));
        codes_own[codes_next] = own;
        codes_next = (codes_next + 1) % CODES;
    }
    return own;
}

static void call_site(PyObject **code, int *lasti) {
    *code = NULL;
    *lasti = -1;
#ifdef FRAMES_IN_PLACE
    _PyInterpreterFrame *at = PyThreadState_GET()->cframe->current_frame;
    while (at != NULL && _PyFrame_IsIncomplete(at)) at = at->previous;
    if (at == NULL) return; /* (at: the Python function calling us) */
    for (at = at->previous; at != NULL; at = at->previous) {
        if (_PyFrame_IsIncomplete(at)) continue;
        int own = own_code((PyObject *)at->f_code, at->f_code->co_filename);
        if (own < 0) return;
        if (!own) {
            *code = Py_NewRef((PyObject *)at->f_code);
            int i = _PyInterpreterFrame_LASTI(at); /* (in code units: PyFrame_GetLasti's) */
            *lasti = i < 0 ? -1 : i * (int)sizeof(_Py_CODEUNIT);
            return;
        }
    }
#else
    PyFrameObject *f = PyEval_GetFrame(); /* borrowed: the Python function calling us */
    if (f == NULL) return;
    Py_INCREF(f);
    for (;;) {
        PyFrameObject *back = PyFrame_GetBack(f); /* new reference */
        Py_DECREF(f);
        f = back;
        if (f == NULL) return;
        PyCodeObject *c = PyFrame_GetCode(f); /* new reference */
        int own = own_code((PyObject *)c, c->co_filename);
        if (own < 0) {
            Py_DECREF(c);
            Py_DECREF(f);
            return;
        }
        if (!own) {
            *code = (PyObject *)c;
#if PY_VERSION_HEX >= 0x030B0000
            *lasti = PyFrame_GetLasti(f);
#endif
            Py_DECREF(f);
            return;
        }
        Py_DECREF(c);
    }
#endif
}

static Record *record(PyObject *op, PyObject *group, long long seq, long long count,
                      PyObject *datatype, PyObject *mpi_op, PyObject *meta) {
    if (capacity == 0) return NULL;
    Record *r = &ring[next_slot];
    clear_record(r);
    r->id = next_id++;
    Py_INCREF(op);
    r->op = op;
    Py_INCREF(group);
    r->group = group;
    r->seq = seq;
    r->count = count;
    Py_XINCREF(datatype);
    r->datatype = datatype;
    Py_XINCREF(mpi_op);
    r->mpi_op = mpi_op;
    Py_XINCREF(meta);
    r->meta = meta;
    call_site(&r->code, &r->lasti);
    r->issued = now_ns();
    r->wait = r->done = 0;
    r->state = ISSUED;
    r->kind = MESSAGES;
    next_slot = (next_slot + 1) % capacity;
    if (filled < capacity) filled++;
    return r;
}

static PyObject *raise_mpi(int err) {
    PyObject *e = PyObject_CallFunction(mpi_exception, "i", err);
    if (e != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(e), e);
        Py_DECREF(e);
    }
    return NULL;
}

/* Test, test again up to `spin` times, then the watched wait: MPI_Wait with the GIL
 * released, registered with the monitor for as long as it blocks. */
static int wait_for(MPI_Request *req, Record *r, long spin, PyObject *op,
                    PyObject *group, PyObject *seq, PyObject *keep) {
    int flag = 0, err = MPI_Test(req, &flag, MPI_STATUS_IGNORE);
    if (err != MPI_SUCCESS || flag) return err;
    if (r != NULL) r->wait = now_ns();
    for (long i = 0; i < spin; i++) {
        err = MPI_Test(req, &flag, MPI_STATUS_IGNORE);
        if (err != MPI_SUCCESS || flag) return err;
    }
    PyObject *token = PyObject_CallFunctionObjArgs(on_block, op, group, seq, keep, NULL);
    if (token == NULL) PyErr_Clear(); /* (the wait goes on, unwatched) */
    Py_BEGIN_ALLOW_THREADS
    err = MPI_Wait(req, MPI_STATUS_IGNORE);
    Py_END_ALLOW_THREADS
    if (token != NULL) {
        PyObject *res = PyObject_CallOneArg(on_unblock, token);
        Py_XDECREF(res);
        if (res == NULL) PyErr_Clear();
        Py_DECREF(token);
    }
    return err;
}

/* Whether `comm` holds this process alone: its collectives wait for no one, so the core
 * makes MPI's blocking call there (cheaper than a request and its tests: about 2,600
 * instructions fewer for an all_to_all_single on MPICH, 4,000 for an all_gather), which
 * can neither hang nor need the watchdog. */
static int alone(MPI_Comm comm) {
    int n = 0;
    return MPI_Comm_size(comm, &n) == MPI_SUCCESS && n == 1;
}

/* Around such a call: the GIL released where it copies LONG_COPY bytes or more (other
 * threads run meanwhile, as they do during a wait), kept for a short one (releasing it
 * costs more than the copy). The thread state to give back to retake(), or NULL. */
#define LONG_COPY (1 << 16)
static PyThreadState *release_if_long(Py_ssize_t nbytes) {
    return nbytes >= LONG_COPY ? PyEval_SaveThread() : NULL;
}

static void retake(PyThreadState *released) {
    if (released != NULL) PyEval_RestoreThread(released);
}

/* Where `obj`'s memory lies and how long it is, in bytes: a C-contiguous numpy array's
 * read directly (writable where `writable`), any other object's through the buffer
 * protocol (*view filled: the caller releases it, where view->obj is set). -1 with an
 * error where it has no such buffer. */
static int memory_of(PyObject *obj, int writable, Py_buffer *view) {
    view->obj = NULL;
    if (PyArray_CheckExact(obj)) {
        int flags = PyArray_FLAGS((PyArrayObject *)obj);
        int need = writable ? NPY_ARRAY_CARRAY : NPY_ARRAY_C_CONTIGUOUS;
        if ((flags & need) == need) {
            view->buf = PyArray_DATA((PyArrayObject *)obj);
            view->len = PyArray_NBYTES((PyArrayObject *)obj);
            return 0;
        }
    }
    return PyObject_GetBuffer(obj, view, writable ? PyBUF_WRITABLE : PyBUF_SIMPLE);
}

static void memory_done(Py_buffer *view) {
    if (view->obj != NULL) PyBuffer_Release(view);
}

/* call(kind, op, comm, array, datatype, extra, group, seq, spin): one MPI collective on
 * a C-contiguous buffer, blocking: ALLREDUCE in place (extra: the mpi4py Op), BCAST
 * (extra: the root, whose buffer may be read-only), REDUCE (extra: (the mpi4py Op, the
 * root); in place on the root, the others' buffers only read). */
static PyObject *call_in(int kind, PyObject *op, PyObject *commobj, PyObject *array,
                         PyObject *dtobj, PyObject *extra, PyObject *group,
                         PyObject *seqobj, long spin) {
    MPI_Comm *comm = PyMPIComm_Get(commobj);
    MPI_Datatype *dt = PyMPIDatatype_Get(dtobj);
    if (comm == NULL || dt == NULL) return NULL;
    MPI_Op *mop = NULL;
    int root = -1, me = -1;
    if (kind == ALLREDUCE) {
        if ((mop = PyMPIOp_Get(extra)) == NULL) return NULL;
    } else if (kind == BCAST) {
        root = (int)PyLong_AsLong(extra);
        MPI_Comm_rank(*comm, &me);
    } else if (kind == REDUCE) {
        if (!PyTuple_Check(extra) || PyTuple_GET_SIZE(extra) != 2) {
            PyErr_SetString(PyExc_TypeError, "call: a reduce's extra is (op, root)");
            return NULL;
        }
        if ((mop = PyMPIOp_Get(PyTuple_GET_ITEM(extra, 0))) == NULL) return NULL;
        root = (int)PyLong_AsLong(PyTuple_GET_ITEM(extra, 1));
        MPI_Comm_rank(*comm, &me);
    } else {
        PyErr_SetString(PyExc_ValueError, "call: unknown kind");
        return NULL;
    }
    long long seq = PyLong_AsLongLong(seqobj);
    if (PyErr_Occurred()) return NULL;
    Py_buffer view;
    int read_only = kind == BCAST ? me == root : kind == REDUCE ? me != root : 0;
    if (memory_of(array, !read_only, &view) < 0) return NULL;
    int size = 0;
    MPI_Type_size(*dt, &size);
    long long count = size > 0 ? (long long)(view.len / size) : 0;
    if (count > INT_MAX) {
        memory_done(&view);
        PyErr_SetString(PyExc_OverflowError, "call: more than 2**31-1 elements");
        return NULL;
    }
    Record *r = record(op, group, seq, count, dtobj, extra, NULL);
    if (r != NULL) r->kind = kind == REDUCE && me == root ? REDUCE_ROOT : kind;
    MPI_Request req = MPI_REQUEST_NULL;
    int err;
    if (alone(*comm)) { /* (nothing to wait for: MPI's blocking call, its cheaper path) */
        PyThreadState *released = release_if_long(view.len);
        err = kind == ALLREDUCE
            ? MPI_Allreduce(MPI_IN_PLACE, view.buf, (int)count, *dt, *mop, *comm)
            : kind == BCAST ? MPI_Bcast(view.buf, (int)count, *dt, root, *comm)
            : MPI_Reduce(MPI_IN_PLACE, view.buf, (int)count, *dt, *mop, root, *comm);
        retake(released);
    } else if ((err = kind == ALLREDUCE
              ? MPI_Iallreduce(MPI_IN_PLACE, view.buf, (int)count, *dt, *mop, *comm, &req)
              : kind == BCAST ? MPI_Ibcast(view.buf, (int)count, *dt, root, *comm, &req)
              : me == root
              ? MPI_Ireduce(MPI_IN_PLACE, view.buf, (int)count, *dt, *mop, root, *comm, &req)
              : MPI_Ireduce(view.buf, NULL, (int)count, *dt, *mop, root, *comm, &req))
             == MPI_SUCCESS)
        err = wait_for(&req, r, spin, op, group, seqobj, array);
    memory_done(&view);
    if (err != MPI_SUCCESS) {
        if (r != NULL) {
            r->done = now_ns();
            r->state = FAILED;
        }
        return raise_mpi(err);
    }
    if (r != NULL) r->done = now_ns();
    Py_RETURN_NONE;
}

static PyObject *call(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "call takes 9 arguments");
        return NULL;
    }
    int kind = (int)PyLong_AsLong(args[0]);
    long spin = PyLong_AsLong(args[8]);
    if (PyErr_Occurred()) return NULL;
    return call_in(kind, args[1], args[2], args[3], args[4], args[5], args[6], args[7],
                   spin);
}

/* this rank's own block, copied while the messages run: copy = (destination, source),
 * two buffers of one length (memcpy), else destination[...] = source */
static int own_copy(PyObject *copy) {
    if (copy == Py_None) return 0;
    PyObject *dst = PyTuple_GET_ITEM(copy, 0), *src = PyTuple_GET_ITEM(copy, 1);
    Py_buffer d, s;
    if (memory_of(dst, 1, &d) == 0) {
        if (memory_of(src, 0, &s) == 0) {
            int same = d.len == s.len;
            if (same) memmove(d.buf, s.buf, (size_t)s.len);
            memory_done(&s);
            memory_done(&d);
            if (same) return 0;
        } else {
            PyErr_Clear();
            memory_done(&d);
        }
    } else {
        PyErr_Clear();
    }
    return PyObject_SetItem(dst, Py_Ellipsis, src);
}

/* The reduction after a call's messages. fold = (op, rank, buffer, scratch), an
 * all_reduce's (mpicoll/_collectives/_all_reduce_direct.py): the scratch holds each
 * peer's block at its rank's place; the blocks are reduced in rank order, x0 op x1 op
 * ... op x(n-1), the same sequence of MPI_Reduce_local calls on every rank (the
 * accumulator in the scratch's block 0 where this rank is not 0), so every rank's result
 * is the same, bit for bit. fold = (op, rank, buffer, scratch, own), a reduce_scatter's
 * (_reduce_scatter_direct.py, combine): this rank's own chunk `own` reduced with each
 * peer's, in rank order, into `buffer`. Returns an MPI error code, or -1 with a Python
 * exception set. */
static int reduce_in_rank_order(PyObject *fold, MPI_Datatype dt) {
    MPI_Op *op = PyMPIOp_Get(PyTuple_GET_ITEM(fold, 0));
    long me = PyLong_AsLong(PyTuple_GET_ITEM(fold, 1));
    if (op == NULL || PyErr_Occurred()) return -1;
    int combine = PyTuple_GET_SIZE(fold) == 5;
    Py_buffer b, s, o;
    if (memory_of(PyTuple_GET_ITEM(fold, 2), 1, &b) < 0) return -1;
    if (memory_of(PyTuple_GET_ITEM(fold, 3), 1, &s) < 0) {
        memory_done(&b);
        return -1;
    }
    if (combine && memory_of(PyTuple_GET_ITEM(fold, 4), 0, &o) < 0) {
        memory_done(&s);
        memory_done(&b);
        return -1;
    }
    int size = 0, err = MPI_SUCCESS;
    MPI_Type_size(dt, &size);
    Py_ssize_t n = b.len > 0 ? s.len / b.len : 0;
    int count = size > 0 ? (int)(b.len / size) : 0;
    if (combine) {
        if (o.len != b.len) {
            PyErr_SetString(PyExc_ValueError, "fold: own chunk and output differ in length");
            err = -1;
        } else {
            memmove(b.buf, o.buf, (size_t)b.len);
            for (Py_ssize_t j = 0; j < n && err == MPI_SUCCESS; j++)
                if (j != me)
                    err = MPI_Reduce_local((char *)s.buf + j * b.len, b.buf, count, dt, *op);
        }
        memory_done(&o);
    } else {
        char *acc = me == 0 ? (char *)b.buf : (char *)s.buf;
        for (Py_ssize_t j = 1; j < n && err == MPI_SUCCESS; j++) {
            void *src = j == me ? b.buf : (char *)s.buf + j * b.len;
            err = MPI_Reduce_local(src, acc, count, dt, *op); /* acc = src op acc */
        }
        if (err == MPI_SUCCESS && me != 0) memcpy(b.buf, s.buf, (size_t)b.len);
    }
    memory_done(&s);
    memory_done(&b);
    return err;
}

/* startwait(op, group, seq, reqs, statuses, tags, lengths, datatype, copy, meta, spin,
 * keep, fold): a blocking call of messages kept as persistent requests (mpicoll/_collectives/
 * _messages.py, issue): start them all, copy this rank's own block, test them, test
 * again up to `spin` times, then the watched wait (MPI_Waitall with the GIL released);
 * their statuses are written into `statuses` (mpi4py Status objects). Returns None
 * where each receive's tag is the one in `tags` (its count and the call's signature)
 * and each receive in `lengths` ((index, count) of those whose count a tag cannot hold)
 * brought that many elements of `datatype`, the blocks then reduced where `fold` says
 * (reduce_in_rank_order); else the record's id (-1: not recorded), for the caller to
 * compare the counts (and mark the record failed: failed()). */
#define FEW 32

/* One message of a kept Plan, posted afresh at each run (MPI_Irecv or MPI_Isend) where
 * the Plan has them: on Open MPI, starting persistent requests measured about 1.75x
 * the cost of posting new ones (0.31 against 0.18 us a pair, 8 B, 2 ranks). */
typedef struct {
    int send, count, peer, tag;
    void *buf;
    MPI_Datatype dt;
} MsgSpec;

/* The messages of one call: start, own block, tests, watched wait, statuses written
 * back, tags and lengths compared, the blocks folded where `fold` is not None. Where
 * the messages are posted afresh (`specs`), the call adds its number on the group to
 * each tag, to the sends' and to those expected: (seq & `stamps`) << `bits`
 * (_messages.Direct.stamp).
 * Returns None (done), the record's id (a tag or length differs), or NULL (an
 * exception). */
static PyObject *messages(PyObject *op, PyObject *group, PyObject *seqobj,
                          PyObject *reqlist, PyObject *stlist, PyObject *tags,
                          PyObject *lengths, MPI_Datatype dt, PyObject *copy,
                          PyObject *meta, long spin, PyObject *keep, PyObject *fold,
                          const MsgSpec *specs, MPI_Comm comm, int bits, long stamps) {
    long long seq = PyLong_AsLongLong(seqobj);
    if (PyErr_Occurred()) return NULL;
    long stamp = specs == NULL ? 0 : (long)(seq & stamps) << bits;
    if (!PyList_Check(reqlist) || !PyList_Check(stlist) || !PyTuple_Check(tags) ||
        !PyTuple_Check(lengths) ||
        PyList_GET_SIZE(stlist) != PyList_GET_SIZE(reqlist) ||
        PyTuple_GET_SIZE(tags) > PyList_GET_SIZE(reqlist) ||
        (copy != Py_None && (!PyTuple_Check(copy) || PyTuple_GET_SIZE(copy) != 2)) ||
        (fold != Py_None && (!PyTuple_Check(fold) || PyTuple_GET_SIZE(fold) < 4 ||
                             PyTuple_GET_SIZE(fold) > 5))) {
        PyErr_SetString(PyExc_TypeError, "lists of requests and statuses, a tuple of tags, "
                                         "copy None or (destination, source), fold None or "
                                         "(op, rank, buffer, scratch[, own])");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(reqlist), ntags = PyTuple_GET_SIZE(tags);
    MPI_Request few[FEW], *reqs = few;
    MPI_Status fews[FEW], *sts = fews;
    if (n > FEW) {
        reqs = PyMem_Malloc(sizeof(MPI_Request) * (size_t)n);
        sts = PyMem_Malloc(sizeof(MPI_Status) * (size_t)n);
        if (reqs == NULL || sts == NULL) {
            PyMem_Free(reqs);
            PyMem_Free(sts);
            return PyErr_NoMemory();
        }
    }
    PyObject *result = NULL;
    for (Py_ssize_t k = 0; specs == NULL && k < n; k++) {
        MPI_Request *q = PyMPIRequest_Get(PyList_GET_ITEM(reqlist, k));
        if (q == NULL) goto out;
        reqs[k] = *q;
    }
    Record *r = record(op, group, seq, 0, NULL, NULL, meta);
    int err = MPI_SUCCESS, flag = 0;
    if (specs == NULL) {
        err = MPI_Startall((int)n, reqs);
    } else {
        for (Py_ssize_t k = 0; k < n; k++) reqs[k] = MPI_REQUEST_NULL;
        for (Py_ssize_t k = 0; k < n && err == MPI_SUCCESS; k++) {
            const MsgSpec *m = &specs[k];
            err = m->send
                ? MPI_Isend(m->buf, m->count, m->dt, m->peer, (int)(m->tag + stamp), comm,
                            &reqs[k])
                : MPI_Irecv(m->buf, m->count, m->dt, m->peer, m->tag, comm, &reqs[k]);
            if (err != MPI_SUCCESS) reqs[k] = MPI_REQUEST_NULL; /* (the earlier ones run) */
        }
    }
    if (err == MPI_SUCCESS && own_copy(copy) < 0) {
        /* (the messages run on: waited for below, then the copy's error raised) */
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        MPI_Waitall((int)n, reqs, MPI_STATUSES_IGNORE);
        PyErr_Restore(et, ev, tb);
        if (r != NULL) {
            r->done = now_ns();
            r->state = FAILED;
        }
        goto out;
    }
    if (err == MPI_SUCCESS) err = MPI_Testall((int)n, reqs, &flag, sts);
    if (err == MPI_SUCCESS && !flag) {
        if (r != NULL) r->wait = now_ns();
        for (long i = 0; i < spin && err == MPI_SUCCESS && !flag; i++)
            err = MPI_Testall((int)n, reqs, &flag, sts);
        if (err == MPI_SUCCESS && !flag) {
            PyObject *token =
                PyObject_CallFunctionObjArgs(on_block, op, group, seqobj, keep, NULL);
            if (token == NULL) PyErr_Clear(); /* (the wait goes on, unwatched) */
            Py_BEGIN_ALLOW_THREADS
            err = MPI_Waitall((int)n, reqs, sts);
            Py_END_ALLOW_THREADS
            if (token != NULL) {
                PyObject *res = PyObject_CallOneArg(on_unblock, token);
                Py_XDECREF(res);
                if (res == NULL) PyErr_Clear();
                Py_DECREF(token);
            }
        }
    }
    /* Persistent requests: the handles stay, as MPI left them. Fresh ones end as
     * MPI_REQUEST_NULL; where MPI failed (at a wait, or a post part-way), those it left
     * posted take the place of the Plan's persistent ones (inactive: freed), for the
     * caller to wait for as it waits for persistent ones (settle_core), the Plan then
     * dropped (_direct.settled). */
    for (Py_ssize_t k = 0; k < n; k++) {
        MPI_Request *q = PyMPIRequest_Get(PyList_GET_ITEM(reqlist, k));
        if (q == NULL) {
            PyErr_Clear();
        } else if (specs == NULL) {
            *q = reqs[k];
        } else if (err != MPI_SUCCESS) {
            if (*q != MPI_REQUEST_NULL) MPI_Request_free(q);
            *q = reqs[k];
        }
        if (err == MPI_SUCCESS || err == MPI_ERR_IN_STATUS) {
            MPI_Status *st = PyMPIStatus_Get(PyList_GET_ITEM(stlist, k));
            if (st != NULL) *st = sts[k];
            else PyErr_Clear();
        }
    }
    if (r != NULL) r->done = now_ns();
    if (err != MPI_SUCCESS) {
        if (r != NULL) r->state = FAILED;
        raise_mpi(err);
        goto out;
    }
    int same = 1;
    for (Py_ssize_t k = 0; same && k < ntags; k++) {
        long want = PyLong_AsLong(PyTuple_GET_ITEM(tags, k));
        same = sts[k].MPI_TAG == want + stamp;
    }
    for (Py_ssize_t i = 0; same && i < PyTuple_GET_SIZE(lengths); i++) {
        PyObject *kc = PyTuple_GET_ITEM(lengths, i); /* (index, count) */
        Py_ssize_t k = PyLong_AsSsize_t(PyTuple_GET_ITEM(kc, 0));
        long long want = PyLong_AsLongLong(PyTuple_GET_ITEM(kc, 1));
        int got = 0; /* (kept messages' counts fit an int: Direct.big ones are posted) */
        if (k < 0 || k >= n) break;
        same = MPI_Get_count(&sts[k], dt, &got) == MPI_SUCCESS && got == want;
    }
    if (PyErr_Occurred()) goto out;
    if (same && fold != Py_None && (err = reduce_in_rank_order(fold, dt)) != MPI_SUCCESS) {
        if (r != NULL) r->state = FAILED;
        if (!PyErr_Occurred()) raise_mpi(err);
        goto out;
    }
    if (same) result = Py_NewRef(Py_None);
    else result = PyLong_FromLongLong(r != NULL ? r->id : -1);
out:
    if (reqs != few) {
        PyMem_Free(reqs);
        PyMem_Free(sts);
    }
    return result;
}

/* Plan: a repeated call's messages, kept by its group (ProcessGroup.kept) under a key
 * that says where its memory lies, made once by the Python side (mpicoll/_collectives/
 * _direct.py) and run here by run() without a return to Python.
 * Its fields have names; plan[0], plan[1], plan[2] are its quick entry, requests and
 * statuses, as the Python path's kept entries' are (_direct.take, free, destroy). */
typedef struct {
    PyObject_HEAD
    PyObject *hit;      /* the quick path's entry it was made for (its key's id) */
    PyObject *reqs;     /* mpi4py requests: persistent, or empty (specs) */
    PyObject *statuses; /* list of mpi4py Status, one a request */
    PyObject *direct;   /* the Direct: tags, lengths, the counts' check */
    PyObject *tags, *lengths; /* direct.tags, direct.lengths */
    PyObject *datatype; /* mpi4py Datatype of the messages */
    PyObject *copy;     /* None or (destination, source): this rank's own block */
    PyObject *meta;     /* what the flight recorder keeps of the call */
    PyObject *fold;     /* None or (op, rank, buffer, scratch): an all_reduce's reduction */
    PyObject *args;     /* the MPI call it stands for (errors, the watchdog) */
    MPI_Datatype dt;
    MsgSpec *specs;     /* NULL, or one a request: posted afresh at each run (MsgSpec) */
    MPI_Comm comm;      /* where specs are posted */
    int bits;           /* where specs: the call's number goes above direct.bits bits, */
    long stamps;        /* direct.stamps of it (0: none) */
} Plan;


static PyTypeObject PlanType;

/* startwait(op, group, seq, plan, copy, meta, spin, keep, fold): the first run of a
 * Plan, from the Python path (mpicoll/_collectives/_messages.py, _in_core), with its own
 * block `copy`, record `meta` and reduction `fold` given there */
static PyObject *startwait(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 9 || Py_TYPE(args[3]) != &PlanType) {
        PyErr_SetString(PyExc_TypeError, "startwait(op, group, seq, plan, copy, meta, spin, "
                                         "keep, fold): plan a Plan");
        return NULL;
    }
    Plan *p = (Plan *)args[3];
    long spin = PyLong_AsLong(args[6]);
    if (PyErr_Occurred()) return NULL;
    return messages(args[0], args[1], args[2], p->reqs, p->statuses, p->tags, p->lengths,
                    p->dt, args[4], args[5], spin, args[7], args[8], p->specs, p->comm,
                    p->bits, p->stamps);
}

/* A Plan's posts = (communicator, ((send, address, count, datatype, peer, tag), ...)), one
 * a request, read into *specs (PyMem) and *comm. -1 with an error set where they are
 * not such (or not `n` of them). */
static int plan_specs(PyObject *posts, Py_ssize_t n, MsgSpec **specs, MPI_Comm *comm) {
    if (!PyTuple_Check(posts) || PyTuple_GET_SIZE(posts) != 2 ||
        !PyTuple_Check(PyTuple_GET_ITEM(posts, 1)) ||
        PyTuple_GET_SIZE(PyTuple_GET_ITEM(posts, 1)) != n) {
        PyErr_SetString(PyExc_TypeError, "Plan: posts is (comm, one tuple a request)");
        return -1;
    }
    MPI_Comm *c = PyMPIComm_Get(PyTuple_GET_ITEM(posts, 0));
    if (c == NULL) return -1;
    PyObject *items = PyTuple_GET_ITEM(posts, 1);
    MsgSpec *m = PyMem_Calloc((size_t)(n ? n : 1), sizeof(MsgSpec));
    if (m == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *t = PyTuple_GET_ITEM(items, k);
        MPI_Datatype *dt = NULL;
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 6 ||
            (dt = PyMPIDatatype_Get(PyTuple_GET_ITEM(t, 3))) == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "Plan: a post is (send, address, count, "
                                                 "datatype, peer, tag)");
            PyMem_Free(m);
            return -1;
        }
        m[k].send = (int)PyLong_AsLong(PyTuple_GET_ITEM(t, 0));
        m[k].buf = (void *)(intptr_t)PyLong_AsLongLong(PyTuple_GET_ITEM(t, 1));
        m[k].count = (int)PyLong_AsLong(PyTuple_GET_ITEM(t, 2));
        m[k].dt = *dt;
        m[k].peer = (int)PyLong_AsLong(PyTuple_GET_ITEM(t, 4));
        m[k].tag = (int)PyLong_AsLong(PyTuple_GET_ITEM(t, 5));
        if (PyErr_Occurred()) {
            PyMem_Free(m);
            return -1;
        }
    }
    *specs = m;
    *comm = *c;
    return 0;
}

static PyMemberDef plan_members[] = {
    {"hit", T_OBJECT_EX, offsetof(Plan, hit), READONLY, "the quick entry it was made for"},
    {"reqs", T_OBJECT_EX, offsetof(Plan, reqs), READONLY,
     "requests: persistent, or empty where posted afresh"},
    {"statuses", T_OBJECT_EX, offsetof(Plan, statuses), READONLY, "their statuses"},
    {"direct", T_OBJECT_EX, offsetof(Plan, direct), READONLY, "the messages' Direct"},
    {"datatype", T_OBJECT_EX, offsetof(Plan, datatype), READONLY, "MPI datatype"},
    {"copy", T_OBJECT_EX, offsetof(Plan, copy), READONLY, "own block (dst, src) or None"},
    {"meta", T_OBJECT_EX, offsetof(Plan, meta), READONLY, "the recorder's"},
    {"fold", T_OBJECT_EX, offsetof(Plan, fold), READONLY, "reduction, or None"},
    {"args", T_OBJECT_EX, offsetof(Plan, args), READONLY, "the MPI call's arguments"},
    {NULL, 0, 0, 0, NULL},
};

static void plan_dealloc(Plan *p) {
    Py_XDECREF(p->hit);
    Py_XDECREF(p->reqs);
    Py_XDECREF(p->statuses);
    Py_XDECREF(p->direct);
    Py_XDECREF(p->tags);
    Py_XDECREF(p->lengths);
    Py_XDECREF(p->datatype);
    Py_XDECREF(p->copy);
    Py_XDECREF(p->meta);
    Py_XDECREF(p->fold);
    Py_XDECREF(p->args);
    PyMem_Free(p->specs);
    Py_TYPE(p)->tp_free((PyObject *)p);
}

static PyObject *plan_new(PyTypeObject *type, PyObject *a, PyObject *kw) {
    static char *names[] = {"hit", "reqs", "statuses", "direct", "datatype", "copy", "meta",
                            "fold", "args", "posts", NULL};
    PyObject *v[9] = {NULL}, *posts = Py_None;
    if (!PyArg_ParseTupleAndKeywords(a, kw, "|$OOOOOOOOOO:Plan", names, &v[0], &v[1], &v[2],
                                     &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &posts))
        return NULL;
    for (int i = 0; i < 9; i++)
        if (v[i] == NULL) {
            PyErr_Format(PyExc_TypeError, "Plan: %s= is required", names[i]);
            return NULL;
        }
    MPI_Datatype *dt = PyMPIDatatype_Get(v[4]);
    if (dt == NULL) return NULL;
    if (!PyList_Check(v[1]) || !PyList_Check(v[2])) {
        PyErr_SetString(PyExc_TypeError, "Plan: reqs and statuses are lists");
        return NULL;
    }
    MsgSpec *specs = NULL;
    MPI_Comm comm = MPI_COMM_NULL;
    if (posts != Py_None && plan_specs(posts, PyList_GET_SIZE(v[1]), &specs, &comm) < 0)
        return NULL;
    PyObject *tags = PyObject_GetAttrString(v[3], "tags");
    PyObject *lengths = tags ? PyObject_GetAttrString(v[3], "lengths") : NULL;
    PyObject *bits = lengths ? PyObject_GetAttrString(v[3], "bits") : NULL;
    PyObject *stamps = bits ? PyObject_GetAttrString(v[3], "stamps") : NULL;
    long nbits = bits ? PyLong_AsLong(bits) : -1, nstamps = stamps ? PyLong_AsLong(stamps) : -1;
    Py_XDECREF(bits);
    Py_XDECREF(stamps);
    if (stamps == NULL || !PyTuple_Check(tags) || !PyTuple_Check(lengths) || nbits < 0 ||
        nbits > 30 || nstamps < 0) {
        Py_XDECREF(tags);
        Py_XDECREF(lengths);
        PyMem_Free(specs);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "Plan: direct.tags, .lengths are tuples, "
                                             ".bits, .stamps small ints");
        return NULL;
    }
    Plan *p = (Plan *)type->tp_alloc(type, 0);
    if (p == NULL) {
        Py_DECREF(tags);
        Py_DECREF(lengths);
        PyMem_Free(specs);
        return NULL;
    }
    p->specs = specs;
    p->comm = comm;
    p->bits = (int)nbits;
    p->stamps = nstamps;
    PyObject **slots[9] = {&p->hit, &p->reqs, &p->statuses, &p->direct, &p->datatype,
                           &p->copy, &p->meta, &p->fold, &p->args};
    for (int i = 0; i < 9; i++) *slots[i] = Py_NewRef(v[i]);
    p->tags = tags;
    p->lengths = lengths;
    p->dt = *dt;
    return (PyObject *)p;
}

static PyTypeObject PlanType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mpicoll._core.Plan",
    .tp_basicsize = sizeof(Plan),
    .tp_dealloc = (destructor)plan_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A repeated call's kept messages, run by the compiled core",
    .tp_members = plan_members,
    .tp_new = plan_new,
};

/* PlanCache: what a group keeps of its repeated calls (ProcessGroup.kept, where the core
 * is in use): a mapping of keys to entries (the core's Plans, the Python path's Kept),
 * in the order they were put in, as a dict is. It is small (a group keeps at most
 * mpicoll._collectives._direct.KEPT entries; the Python side frees the oldest beyond), so
 * its entries lie in an array: a key of three ints (plan_key's: the quick entry's id and
 * where the memory lies) is found by comparing three C integers, without a tuple made,
 * hashed and compared as a dict's lookup needs. Other keys are compared as objects. */
typedef struct {
    PyObject *key, *entry;
    long long k[3]; /* the key's three ints, where it is such a tuple (plain) */
    int plain;
} Slot;

typedef struct {
    PyObject_HEAD
    Slot *slots;
    Py_ssize_t n, cap;
} PlanCache;

static PyTypeObject PlanCacheType;

/* Whether `key` is a tuple of three ints that fit a long long (k filled), else 0. */
static int key_ints(PyObject *key, long long k[3]) {
    if (!PyTuple_CheckExact(key) || PyTuple_GET_SIZE(key) != 3) return 0;
    for (int i = 0; i < 3; i++) {
        PyObject *x = PyTuple_GET_ITEM(key, i);
        if (!PyLong_CheckExact(x)) return 0;
        int over = 0;
        k[i] = PyLong_AsLongLongAndOverflow(x, &over);
        if (over || (k[i] == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
    }
    return 1;
}

static Py_ssize_t cache_find_ints(PlanCache *c, const long long k[3]) {
    for (Py_ssize_t i = 0; i < c->n; i++) {
        Slot *s = &c->slots[i];
        if (s->plain && s->k[0] == k[0] && s->k[1] == k[1] && s->k[2] == k[2]) return i;
    }
    return -1;
}

/* The slot of `key`, -1 where there is none, -2 with an error set. A key of three ints
 * is found by comparing them; another by comparing objects, which may run Python code
 * that changes the cache: the slot's key is held meanwhile, and the search starts over
 * where the cache changed. */
static Py_ssize_t cache_find(PlanCache *c, PyObject *key) {
    long long k[3];
    if (key_ints(key, k)) return cache_find_ints(c, k);
again:
    for (Py_ssize_t i = 0; i < c->n; i++) {
        if (c->slots[i].plain) continue;
        PyObject *theirs = Py_NewRef(c->slots[i].key);
        Slot *before = c->slots;
        Py_ssize_t n = c->n;
        int eq = PyObject_RichCompareBool(theirs, key, Py_EQ);
        Py_DECREF(theirs);
        if (eq < 0) return -2;
        if (c->slots != before || c->n != n || c->slots[i].key != theirs) goto again;
        if (eq) return i;
    }
    return -1;
}

/* KeyError(key), as a dict raises it (a tuple key as one argument). */
static void key_error(PyObject *key) {
    PyObject *arg = PyTuple_Pack(1, key);
    if (arg == NULL) return;
    PyErr_SetObject(PyExc_KeyError, arg);
    Py_DECREF(arg);
}

/* Slot i taken out: its key and entry handed to the caller (new references). */
static void cache_take(PlanCache *c, Py_ssize_t i, PyObject **key, PyObject **entry) {
    *key = c->slots[i].key;
    *entry = c->slots[i].entry;
    memmove(&c->slots[i], &c->slots[i + 1], (size_t)(c->n - i - 1) * sizeof(Slot));
    c->n--;
}

/* `entry` put in under `key`, as the newest (references taken: new ones). */
static int cache_append(PlanCache *c, PyObject *key, PyObject *entry) {
    if (c->n == c->cap) {
        Py_ssize_t cap = c->cap ? 2 * c->cap : 8;
        Slot *more = PyMem_Realloc(c->slots, (size_t)cap * sizeof(Slot));
        if (more == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        c->slots = more;
        c->cap = cap;
    }
    Slot *s = &c->slots[c->n++];
    s->plain = key_ints(key, s->k);
    s->key = Py_NewRef(key);
    s->entry = Py_NewRef(entry);
    return 0;
}

static int cache_set(PlanCache *c, PyObject *key, PyObject *entry) {
    Py_ssize_t i = cache_find(c, key);
    if (i == -2) return -1;
    if (i < 0) return cache_append(c, key, entry);
    Py_SETREF(c->slots[i].entry, Py_NewRef(entry)); /* (in its place, as a dict does) */
    return 0;
}

static void cache_clear_all(PlanCache *c) {
    while (c->n > 0) {
        PyObject *key, *entry;
        cache_take(c, c->n - 1, &key, &entry);
        Py_DECREF(key);
        Py_DECREF(entry);
    }
}

static PyObject *cache_new(PyTypeObject *type, PyObject *a, PyObject *kw) {
    if ((a != NULL && PyTuple_GET_SIZE(a) > 0) || (kw != NULL && PyDict_GET_SIZE(kw) > 0)) {
        PyErr_SetString(PyExc_TypeError, "PlanCache() takes no arguments");
        return NULL;
    }
    PlanCache *c = (PlanCache *)type->tp_alloc(type, 0);
    if (c != NULL) c->slots = NULL, c->n = c->cap = 0;
    return (PyObject *)c;
}

static int cache_traverse(PlanCache *c, visitproc visit, void *arg) {
    for (Py_ssize_t i = 0; i < c->n; i++) {
        Py_VISIT(c->slots[i].key);
        Py_VISIT(c->slots[i].entry);
    }
    return 0;
}

static int cache_tp_clear(PlanCache *c) {
    cache_clear_all(c);
    return 0;
}

static void cache_dealloc(PlanCache *c) {
    PyObject_GC_UnTrack(c);
    cache_clear_all(c);
    PyMem_Free(c->slots);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static Py_ssize_t cache_len(PlanCache *c) { return c->n; }

static PyObject *cache_getitem(PlanCache *c, PyObject *key) {
    Py_ssize_t i = cache_find(c, key);
    if (i == -2) return NULL;
    if (i < 0) {
        key_error(key);
        return NULL;
    }
    return Py_NewRef(c->slots[i].entry);
}

static int cache_setitem(PlanCache *c, PyObject *key, PyObject *entry) {
    if (entry != NULL) return cache_set(c, key, entry);
    Py_ssize_t i = cache_find(c, key);
    if (i == -2) return -1;
    if (i < 0) {
        key_error(key);
        return -1;
    }
    PyObject *k, *e;
    cache_take(c, i, &k, &e);
    Py_DECREF(k);
    Py_DECREF(e);
    return 0;
}

static int cache_contains(PlanCache *c, PyObject *key) {
    Py_ssize_t i = cache_find(c, key);
    return i == -2 ? -1 : i >= 0;
}

/* get(key, default=None) */
static PyObject *cache_get(PlanCache *c, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "get(key, default=None)");
        return NULL;
    }
    Py_ssize_t i = cache_find(c, args[0]);
    if (i == -2) return NULL;
    return Py_NewRef(i >= 0 ? c->slots[i].entry : nargs == 2 ? args[1] : Py_None);
}

/* pop(key[, default]) */
static PyObject *cache_pop(PlanCache *c, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "pop(key[, default])");
        return NULL;
    }
    Py_ssize_t i = cache_find(c, args[0]);
    if (i == -2) return NULL;
    if (i < 0) {
        if (nargs == 2) return Py_NewRef(args[1]);
        key_error(args[0]);
        return NULL;
    }
    PyObject *k, *e;
    cache_take(c, i, &k, &e);
    Py_DECREF(k);
    return e;
}

/* The keys (0), entries (1) or (key, entry) pairs (2), oldest first, as a list. */
static PyObject *cache_list(PlanCache *c, int what) {
    PyObject *out = PyList_New(c->n);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < c->n; i++) {
        Slot *s = &c->slots[i];
        PyObject *x = what == 0   ? Py_NewRef(s->key)
                      : what == 1 ? Py_NewRef(s->entry)
                                  : PyTuple_Pack(2, s->key, s->entry);
        if (x == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, x);
    }
    return out;
}

static PyObject *cache_keys(PlanCache *c, PyObject *unused) { return cache_list(c, 0); }
static PyObject *cache_values(PlanCache *c, PyObject *unused) { return cache_list(c, 1); }
static PyObject *cache_items(PlanCache *c, PyObject *unused) { return cache_list(c, 2); }

static PyObject *cache_clear_method(PlanCache *c, PyObject *unused) {
    cache_clear_all(c);
    Py_RETURN_NONE;
}

static PyObject *cache_iter(PlanCache *c) {
    PyObject *keys = cache_list(c, 0);
    if (keys == NULL) return NULL;
    PyObject *it = PyObject_GetIter(keys);
    Py_DECREF(keys);
    return it;
}

static PyMethodDef cache_methods[] = {
    {"get", (PyCFunction)(void (*)(void))cache_get, METH_FASTCALL, "get(key, default=None)"},
    {"pop", (PyCFunction)(void (*)(void))cache_pop, METH_FASTCALL, "pop(key[, default])"},
    {"keys", (PyCFunction)cache_keys, METH_NOARGS, "the keys, oldest first (a list)"},
    {"values", (PyCFunction)cache_values, METH_NOARGS, "the entries, oldest first (a list)"},
    {"items", (PyCFunction)cache_items, METH_NOARGS, "(key, entry) pairs, oldest first"},
    {"clear", (PyCFunction)cache_clear_method, METH_NOARGS, "remove every entry"},
    {NULL, NULL, 0, NULL},
};

static PyMappingMethods cache_mapping = {
    .mp_length = (lenfunc)cache_len,
    .mp_subscript = (binaryfunc)cache_getitem,
    .mp_ass_subscript = (objobjargproc)cache_setitem,
};

static PySequenceMethods cache_sequence = {.sq_contains = (objobjproc)cache_contains};

static PyTypeObject PlanCacheType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mpicoll._core.PlanCache",
    .tp_basicsize = sizeof(PlanCache),
    .tp_dealloc = (destructor)cache_dealloc,
    .tp_as_mapping = &cache_mapping,
    .tp_as_sequence = &cache_sequence,
    .tp_iter = (getiterfunc)cache_iter,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "What a group keeps of its repeated calls: a small mapping, in the order its "
              "entries were put in, whose keys of three ints the core finds without "
              "hashing",
    .tp_traverse = (traverseproc)cache_traverse,
    .tp_clear = (inquiry)cache_tp_clear,
    .tp_methods = cache_methods,
    .tp_new = cache_new,
};

static PyObject *str_missed = NULL, *str_seq = NULL, *str_size = NULL, *str_kept = NULL;
static PyObject *str_direct = NULL, *str_reduced = NULL, *str_comm = NULL, *str_rank = NULL;
static PyObject *str_index = NULL, *str_counts = NULL;
/* a Sizes' and a Ring's attributes (mpicoll/_collectives/_sizes.py, _counts_ring.py) */
static PyObject *str_form = NULL, *str_sent = NULL, *str_expected = NULL, *str_relayed = NULL;
static PyObject *str_at = NULL, *str_owners = NULL, *str_reqs = NULL, *str_recvs = NULL;
static PyObject *str_sends = NULL, *str_method = NULL, *str_n = NULL, *str_send = NULL;
static PyObject *str_ring = NULL, *str_root = NULL;
static PyObject *str_methods[3] = {NULL, NULL, NULL}; /* by ALLGATHER, ALLTOALL, ... */
static PyObject *str_vmethods[5] = {NULL}; /* by V_ALLTOALLV, V_ALLGATHER, ... */

/* The attributes of a group (mpicoll/_process_group.py, ProcessGroup) the core reads or
 * writes on every call. ProcessGroup keeps them in __slots__, whose member descriptors
 * say where in the object each lies: the core reads and writes them there (what the
 * descriptor's own get and set do, without the attribute lookup: about 150 instructions
 * each, several a call). Learned from the first group's type; a group of another type
 * (a subclass, or anything else) takes Python's getattr and setattr. */
enum { G_SEQ, G_KEPT, G_DIRECT, G_COMM, G_SIZE, G_RANK, G_MISSED, G_INDEX, G_COUNTS,
       G_COUNT };
static PyObject **group_names[G_COUNT] = {&str_seq, &str_kept, &str_direct, &str_comm,
                                          &str_size, &str_rank, &str_missed, &str_index,
                                          &str_counts};
static PyTypeObject *slotted = NULL; /* the type learned (a strong reference) */
static Py_ssize_t slot_at[G_COUNT];
static PyTypeObject *tried = NULL; /* the last type learning failed on (not kept alive:
                                      only compared) */

/* Learn where `tp` keeps each attribute: every one a slot (an object member), else none
 * is read directly */
static void learn_slots(PyTypeObject *tp) {
    tried = tp;
    Py_ssize_t at[G_COUNT];
    for (int i = 0; i < G_COUNT; i++) {
        PyObject *d = PyObject_GetAttr((PyObject *)tp, *group_names[i]);
        int ok = d != NULL && Py_IS_TYPE(d, &PyMemberDescr_Type) &&
                 ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX &&
                 !(((PyMemberDescrObject *)d)->d_member->flags & READONLY);
        if (ok) at[i] = ((PyMemberDescrObject *)d)->d_member->offset;
        Py_XDECREF(d);
        if (!ok) {
            PyErr_Clear();
            return;
        }
    }
    memcpy(slot_at, at, sizeof at);
    slotted = (PyTypeObject *)Py_NewRef((PyObject *)tp);
}

/* group.<name> (a new reference), as getattr */
static PyObject *group_get(PyObject *group, int which) {
    if (slotted == NULL && Py_TYPE(group) != tried) learn_slots(Py_TYPE(group));
    if (Py_TYPE(group) == slotted) {
        PyObject *v = *(PyObject **)((char *)group + slot_at[which]);
        if (v != NULL) return Py_NewRef(v);
    }
    return PyObject_GetAttr(group, *group_names[which]); /* (or its AttributeError) */
}

/* group.<name> = value, as setattr */
static int group_set(PyObject *group, int which, PyObject *value) {
    if (Py_TYPE(group) == slotted) {
        PyObject **at = (PyObject **)((char *)group + slot_at[which]);
        Py_XSETREF(*at, Py_NewRef(value));
        return 0;
    }
    return PyObject_SetAttr(group, *group_names[which], value);
}

/* Where `obj` lies, as a key part: an int is an address already (where a list of
 * tensors end to end starts), else its buffer's address. */
static int address(PyObject *obj, long long *at) {
    if (PyLong_CheckExact(obj)) {
        *at = PyLong_AsLongLong(obj);
        return *at == -1 && PyErr_Occurred() ? -1 : 0;
    }
    Py_buffer view;
    if (memory_of(obj, 0, &view) < 0) return -1;
    *at = (long long)(intptr_t)view.buf;
    memory_done(&view);
    return 0;
}

/* A part of a kept Plan's key (_direct.plan_key's): where `obj` lies (an array's address,
 * or an int: that address), or `obj` itself where it is a tuple (the addresses of a
 * list's separate tensors). A new reference, or NULL. */
static PyObject *key_part(PyObject *obj) {
    if (PyTuple_CheckExact(obj)) return Py_NewRef(obj);
    long long at;
    if (address(obj, &at) < 0) return NULL;
    return PyLong_FromLongLong(at);
}

/* The plan the group's PlanCache `c` holds for a call of quick entry `hit` on the arrays
 * `first` and `second` (key: (id(hit), where first lies, where second lies); second None:
 * (id(hit), where first lies, its length in bytes); first or second an int: that
 * address, where a list of tensors end to end starts: _direct.plan_key's three ints,
 * compared as C integers; first or second a tuple: the addresses of a list's separate
 * tensors, the key then compared as an object), run: taken out while it runs, put back
 * as the newest. Returns False where there is none (the caller makes one), None when
 * done, or the record's id where a tag or length differs (the caller compares:
 * Direct.check); raises an MPI error as MPI gave it (the plan put back, for the caller
 * to settle). */
static PyObject *run_cached(PyObject *op, PyObject *group, PyObject *seq, PlanCache *c,
                             PyObject *hit, PyObject *firstobj, PyObject *secondobj,
                             long spin, PyObject *keep) {
    long long k[3] = {(long long)(intptr_t)hit, 0, 0};
    PyObject *objkey = NULL; /* (a key with a tuple part; NULL: the three ints in k) */
    Py_ssize_t i;
    if (PyTuple_CheckExact(firstobj) || PyTuple_CheckExact(secondobj)) {
        PyObject *first = key_part(firstobj);
        PyObject *second = first == NULL ? NULL : key_part(secondobj);
        if (second == NULL) {
            Py_XDECREF(first);
            return NULL;
        }
        objkey = tuple_of(3, PyLong_FromLongLong(k[0]), first, second);
        if (objkey == NULL) return NULL;
        if ((i = cache_find(c, objkey)) == -2) {
            Py_DECREF(objkey);
            return NULL;
        }
    } else {
        if (secondobj == Py_None) { /* (first: an array, its length in bytes in the key) */
            Py_buffer view;
            if (memory_of(firstobj, 0, &view) < 0) return NULL;
            k[1] = (long long)(intptr_t)view.buf;
            k[2] = (long long)view.len;
            memory_done(&view);
        } else if (address(firstobj, &k[1]) < 0 || address(secondobj, &k[2]) < 0) {
            return NULL;
        }
        i = cache_find_ints(c, k);
    }
    if (i < 0 || Py_TYPE(c->slots[i].entry) != &PlanType ||
        ((Plan *)c->slots[i].entry)->hit != hit) {
        Py_XDECREF(objkey);
        Py_RETURN_FALSE;
    }
    PyObject *key, *entry, *result = NULL;
    cache_take(c, i, &key, &entry); /* (taken out while in use) */
    Plan *p = (Plan *)entry;
    PyObject *missed = group_get(group, G_MISSED);
    if (missed == NULL) goto back;
    long some = PyLong_AsLong(missed);
    Py_DECREF(missed);
    if (some == -1 && PyErr_Occurred()) goto back;
    if (some > 0) { /* a call that found its messages: one miss less (_direct.take) */
        PyObject *less = PyLong_FromLong(some - 1);
        int bad = less == NULL || group_set(group, G_MISSED, less) < 0;
        Py_XDECREF(less);
        if (bad) goto back;
    }
    result = messages(op, group, seq, p->reqs, p->statuses, p->tags, p->lengths, p->dt,
                      p->copy, p->meta, spin, keep, p->fold, p->specs, p->comm, p->bits,
                      p->stamps);
back: { /* put back as the newest, unless another thread's took its place meanwhile */
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        Py_ssize_t there = objkey != NULL ? cache_find(c, objkey) : cache_find_ints(c, k);
        if (there == -1 && cache_append(c, key, entry) < 0) PyErr_Clear();
        if (there == -2) PyErr_Clear();
        PyErr_Restore(et, ev, tb);
    }
    Py_XDECREF(objkey);
    Py_DECREF(key);
    Py_DECREF(entry);
    return result;
}

static PyObject *run_plan(PyObject *op, PyObject *group, PyObject *seq, PyObject *kept,
                          PyObject *hit, PyObject *firstobj, PyObject *secondobj,
                          long spin, PyObject *keep) {
    if (Py_TYPE(kept) != &PlanCacheType) {
        PyErr_SetString(PyExc_TypeError, "run: kept is the group's PlanCache");
        return NULL;
    }
    return run_cached(op, group, seq, (PlanCache *)kept, hit, firstobj, secondobj, spin,
                      keep);
}

/* run(op, group, seq, kept, hit, first, second, spin, keep): run_plan, from Python */
static PyObject *run(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "run takes 9 arguments");
        return NULL;
    }
    long spin = PyLong_AsLong(args[7]);
    if (spin == -1 && PyErr_Occurred()) return NULL;
    return run_plan(args[0], args[1], args[2], args[3], args[4], args[5], args[6], spin,
                    args[8]);
}

/* A torch tensor's memory as numpy, remembered here: the C side of what the torch hook's
 * `quick` (mpicoll/_adapter/frameworks/torch.py) keeps in its own table. A Quicker wraps
 * that function (the QUICKERS entry of a tensor type, set by mpicoll/_adapter/views.py
 * where the core is in use) and answers as it does. A tensor it has answered for is
 * answered again, without a Python frame, while the tensor lives (a weak reference to it)
 * and still has the same data pointer, shape and dtype, needs no gradient and is
 * contiguous: the five checks of `quick`'s own table, asked of the tensor here. Anything
 * else (a tensor not seen, or changed) goes to the wrapped function. The memo is a fixed
 * table of QUICK_SLOTS entries, one per slot that a tensor's address picks: bounded
 * whatever the tensors, and an entry whose tensor is gone is never answered from. */
#define QUICK_SLOTS 64

typedef struct {
    PyObject *ref;   /* weak reference to the tensor, or NULL: an empty slot */
    long long ptr;   /* its data pointer */
    PyObject *dtype; /* its dtype (torch's object) */
    PyObject *array; /* numpy over its memory (not keeping it alive) */
} Seen;

/* How a Quicker asks its tensor type one thing: the C function behind the type's own
 * descriptor, called directly (what Python's attribute lookup would find and call, less
 * the lookup), or, where the type's is not one of these kinds, Python's lookup itself */
enum { ASK_LOOKUP = 0, ASK_GETSET, ASK_NOARGS, ASK_VARARGS, ASK_KEYWORDS };
typedef struct {
    int how;
    PyObject *descr;  /* the descriptor (held), or NULL */
    getter get;       /* ASK_GETSET's */
    void *closure;
    PyCFunction meth; /* the methods' */
} Ask;

/* what a hit asks: data_ptr(), dtype, requires_grad, shape, is_contiguous() */
enum { DATA_PTR = 0, DTYPE, REQUIRES_GRAD, SHAPE, IS_CONTIGUOUS, ASKED };

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *quick;   /* the hook's quick: tensor -> array or None */
    PyTypeObject *type; /* the tensor type `ask` was learned from (held), or NULL */
    Ask ask[ASKED];
    Seen seen[QUICK_SLOTS];
} Quicker;

static PyTypeObject QuickerType;
static PyObject *str_data_ptr = NULL, *str_shape = NULL, *str_dtype = NULL;
static PyObject *str_requires_grad = NULL, *str_is_contiguous = NULL;
static PyObject *no_args = NULL; /* () */

/* q->ask learned from `tp`: each name's descriptor on the type, where the type's
 * attribute lookup is Python's generic one (so that the descriptor is what a lookup
 * finds: data descriptors, as getset ones are, come before an instance's __dict__, and
 * a method descriptor is found there unless the instance's __dict__ holds the name,
 * which torch's tensors' does not); else, or for a name whose descriptor is of another
 * kind, Python's lookup. -1 with an error raised. */
static int quicker_learn(Quicker *q, PyTypeObject *tp) {
    PyObject **names[ASKED] = {&str_data_ptr, &str_dtype, &str_requires_grad, &str_shape,
                               &str_is_contiguous};
    for (int i = 0; i < ASKED; i++) {
        Ask *a = &q->ask[i];
        Py_CLEAR(a->descr);
        a->how = ASK_LOOKUP;
        if (tp->tp_getattro != PyObject_GenericGetAttr) continue;
        PyObject *d = PyObject_GetAttr((PyObject *)tp, *names[i]);
        if (d == NULL) return -1;
        if (Py_IS_TYPE(d, &PyGetSetDescr_Type) &&
            ((PyGetSetDescrObject *)d)->d_getset->get != NULL) {
            a->how = ASK_GETSET;
            a->get = ((PyGetSetDescrObject *)d)->d_getset->get;
            a->closure = ((PyGetSetDescrObject *)d)->d_getset->closure;
        } else if (Py_IS_TYPE(d, &PyMethodDescr_Type)) {
            PyMethodDef *ml = ((PyMethodDescrObject *)d)->d_method;
            int flags = ml->ml_flags & ~METH_COEXIST;
            a->meth = ml->ml_meth;
            a->how = flags == METH_NOARGS ? ASK_NOARGS
                   : flags == METH_VARARGS ? ASK_VARARGS
                   : flags == (METH_VARARGS | METH_KEYWORDS) ? ASK_KEYWORDS : ASK_LOOKUP;
        }
        a->descr = d; /* (held while it is called through) */
    }
    Py_INCREF(tp);
    Py_XSETREF(q->type, tp);
    return 0;
}

/* What `t` answers to the i-th thing a hit asks (a new reference), or NULL */
static PyObject *quicker_ask(Quicker *q, int i, PyObject *t) {
    Ask *a = &q->ask[i];
    switch (Py_TYPE(t) == q->type ? a->how : ASK_LOOKUP) {
    case ASK_GETSET:
        return a->get(t, a->closure);
    case ASK_NOARGS:
        return a->meth(t, NULL);
    case ASK_VARARGS:
        return a->meth(t, no_args);
    case ASK_KEYWORDS:
        return ((PyCFunctionWithKeywords)(void (*)(void))a->meth)(t, no_args, NULL);
    default:
        break;
    }
    if (i == DATA_PTR || i == IS_CONTIGUOUS) {
        PyObject *self[2] = {NULL, t};
        return PyObject_VectorcallMethod(i == DATA_PTR ? str_data_ptr : str_is_contiguous,
                                         self + 1, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    }
    return PyObject_GetAttr(t, i == DTYPE ? str_dtype : i == REQUIRES_GRAD
                               ? str_requires_grad : str_shape);
}

static Seen *seen_slot(Quicker *q, PyObject *t) {
    unsigned long long h = (unsigned long long)(uintptr_t)t >> 4;
    return &q->seen[(h * 0x9E3779B97F4A7C15ULL) >> 58]; /* 64 slots: the top 6 bits */
}

static void seen_clear(Seen *s) {
    Py_CLEAR(s->ref);
    Py_CLEAR(s->dtype);
    Py_CLEAR(s->array);
}

/* Whether the slot `s` was made for `t` (alive: t is) */
static int seen_for(Seen *s, PyObject *t) {
    if (s->ref == NULL) return 0;
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *alive;
    if (PyWeakref_GetRef(s->ref, &alive) < 0) {
        PyErr_Clear();
        return 0;
    }
    Py_XDECREF(alive); /* (t holds it, where it is t) */
    return alive == t;
#else
    return PyWeakref_GetObject(s->ref) == t;
#endif
}

/* 1: `t`, for which `s` (a copy of a slot, its objects held) was made, is unchanged; 0: it
 * is changed; -1: an error was raised asking it */
static int seen_holds(Quicker *q, Seen *s, PyObject *t) {
    PyObject *v = quicker_ask(q, DATA_PTR, t);
    if (v == NULL) return -1;
    long long ptr = PyLong_AsLongLong(v);
    Py_DECREF(v);
    if (ptr == -1 && PyErr_Occurred()) return -1;
    if (ptr != s->ptr) return 0;
    if ((v = quicker_ask(q, DTYPE, t)) == NULL) return -1;
    Py_DECREF(v); /* (compared by identity: torch's dtypes are singletons) */
    if (v != s->dtype) return 0;
    if ((v = quicker_ask(q, REQUIRES_GRAD, t)) == NULL) return -1;
    Py_DECREF(v);
    if (v != Py_False) return 0;
    if ((v = quicker_ask(q, SHAPE, t)) == NULL) return -1;
    PyArrayObject *a = (PyArrayObject *)s->array;
    int nd = PyArray_NDIM(a), same = PyTuple_Check(v) && PyTuple_GET_SIZE(v) == nd;
    for (int i = 0; same && i < nd; i++) {
        long long d = PyLong_AsLongLong(PyTuple_GET_ITEM(v, i));
        if (d == -1 && PyErr_Occurred()) {
            Py_DECREF(v);
            return -1;
        }
        same = d == (long long)PyArray_DIM(a, i);
    }
    Py_DECREF(v);
    if (!same) return 0;
    if ((v = quicker_ask(q, IS_CONTIGUOUS, t)) == NULL) return -1;
    Py_DECREF(v);
    return v == Py_True;
}

/* What the hook's quick answers for `t` (a new reference: an array, or None), from the
 * memo where it holds `t`; NULL with an error raised */
static PyObject *quicker_answer(Quicker *q, PyObject *t) {
    Seen *s = seen_slot(q, t);
    if (seen_for(s, t)) {
        /* (a copy, its objects held: asking t can run Python code, another thread's
         * included, which may fill the slot with another tensor meanwhile) */
        Seen was = {NULL, s->ptr, Py_NewRef(s->dtype), Py_NewRef(s->array)};
        int held = seen_holds(q, &was, t);
        Py_DECREF(was.dtype);
        if (held > 0) return was.array;
        Py_DECREF(was.array);
        if (held < 0) return NULL;
    }
    PyObject *a = PyObject_CallOneArg(q->quick, t);
    if (a == NULL || !PyArray_Check(a) || PyArray_NBYTES((PyArrayObject *)a) == 0)
        return a; /* (an empty tensor's array keeps the tensor alive: not remembered) */
    if (q->type != Py_TYPE(t) && quicker_learn(q, Py_TYPE(t)) < 0) {
        PyErr_Clear(); /* (not remembered: the answer stands) */
        return a;
    }
    /* remembered with what the checks compare, asked now (a miss pays for them) */
    PyObject *ref = PyWeakref_NewRef(t, NULL), *dtype = NULL;
    if (ref == NULL || (dtype = PyObject_GetAttr(t, str_dtype)) == NULL) {
        Py_XDECREF(ref);
        PyErr_Clear(); /* (not remembered: the answer stands) */
        return a;
    }
    seen_clear(s);
    s->ref = ref;
    s->dtype = dtype;
    s->ptr = (long long)(uintptr_t)PyArray_DATA((PyArrayObject *)a);
    s->array = Py_NewRef(a);
    return a;
}

static PyObject *quicker_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                    PyObject *kwnames) {
    if (PyVectorcall_NARGS(nargsf) != 1 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames)))
        return PyErr_Format(PyExc_TypeError, "a Quicker takes one tensor");
    return quicker_answer((Quicker *)self, args[0]);
}

static PyObject *quicker_new(PyTypeObject *type, PyObject *a, PyObject *kw) {
    PyObject *quick;
    if (kw != NULL && PyDict_GET_SIZE(kw))
        return PyErr_Format(PyExc_TypeError, "Quicker() takes no keyword arguments");
    if (!PyArg_UnpackTuple(a, "Quicker", 1, 1, &quick)) return NULL;
    if (!PyCallable_Check(quick)) return PyErr_Format(PyExc_TypeError,
        "Quicker(quick): quick must be callable, not %.100s", Py_TYPE(quick)->tp_name);
    Quicker *q = (Quicker *)type->tp_alloc(type, 0);
    if (q == NULL) return NULL;
    q->vectorcall = quicker_vectorcall;
    q->quick = Py_NewRef(quick);
    return (PyObject *)q;
}

static int quicker_traverse(Quicker *q, visitproc visit, void *arg) {
    Py_VISIT(q->quick);
    Py_VISIT(q->type);
    for (int i = 0; i < ASKED; i++) Py_VISIT(q->ask[i].descr);
    for (int i = 0; i < QUICK_SLOTS; i++) Py_VISIT(q->seen[i].array);
    return 0;
}

static int quicker_clear(Quicker *q) {
    Py_CLEAR(q->quick);
    Py_CLEAR(q->type);
    for (int i = 0; i < ASKED; i++) {
        Py_CLEAR(q->ask[i].descr);
        q->ask[i].how = ASK_LOOKUP;
    }
    for (int i = 0; i < QUICK_SLOTS; i++) seen_clear(&q->seen[i]);
    return 0;
}

static void quicker_dealloc(Quicker *q) {
    PyObject_GC_UnTrack(q);
    quicker_clear(q);
    Py_TYPE(q)->tp_free((PyObject *)q);
}

static PyMemberDef quicker_members[] = {
    {"quick", T_OBJECT_EX, offsetof(Quicker, quick), READONLY, "the function it wraps"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject QuickerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mpicoll._core.Quicker",
    .tp_basicsize = sizeof(Quicker),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "Quicker(quick): a tensor hook's quick, remembering what it answered for "
              "each tensor (see mpicoll/_core.c)",
    .tp_new = quicker_new,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Quicker, vectorcall),
    .tp_traverse = (traverseproc)quicker_traverse,
    .tp_clear = (inquiry)quicker_clear,
    .tp_dealloc = (destructor)quicker_dealloc,
    .tp_members = quicker_members,
};

/* `obj` as the numpy array a quick call takes (a new reference): a C-contiguous ndarray
 * (and aligned and writable where `writable`), or what `quickers` (type -> callable:
 * mpicoll._adapter.views.QUICKERS) makes of another type's tensor. NULL without an
 * error where it is none of these: the general path takes the call. */
static PyObject *quick_array(PyObject *obj, int writable, PyObject *quickers) {
    if (Py_TYPE(obj) == &PyArray_Type) {
        int flags = PyArray_FLAGS((PyArrayObject *)obj);
        int need = writable ? NPY_ARRAY_CARRAY : NPY_ARRAY_C_CONTIGUOUS;
        return (flags & need) == need ? Py_NewRef(obj) : NULL;
    }
    PyObject *q = PyDict_GetItemWithError(quickers, (PyObject *)Py_TYPE(obj));
    if (q == NULL) return NULL;
    PyObject *a = Py_IS_TYPE(q, &QuickerType) ? quicker_answer((Quicker *)q, obj)
                                               : PyObject_CallOneArg(q, obj);
    if (a != NULL && !PyArray_Check(a)) Py_CLEAR(a); /* None: not quick */
    return a;
}

static PyObject *shape_of(PyArrayObject *a) {
    int nd = PyArray_NDIM(a);
    npy_intp *dims = PyArray_DIMS(a);
    PyObject *t = PyTuple_New(nd);
    if (t == NULL) return NULL;
    for (int i = 0; i < nd; i++) {
        PyObject *d = PyLong_FromSsize_t((Py_ssize_t)dims[i]);
        if (d == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, d);
    }
    return t;
}

/* The MPI error just raised (a new reference), taken from the error indicator; NULL,
 * the indicator left as it is, where the exception is not MPI's. */
static PyObject *mpi_error_taken(void) {
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyErr_NormalizeException(&et, &ev, &tb);
    if (ev != NULL && tb != NULL) PyException_SetTraceback(ev, tb);
    if (ev == NULL || PyObject_IsInstance(ev, mpi_exception) != 1) {
        PyErr_Restore(et, ev, tb); /* (not MPI's: raised as it is) */
        return NULL;
    }
    Py_XDECREF(et);
    Py_XDECREF(tb);
    return ev;
}

/* The group's next sequence number (a new reference), or NULL; `set`: stored in the
 * group now (a call that counts whatever happens next), else left to the caller. */
static PyObject *next_seq(PyObject *group, int set) {
    PyObject *now = group_get(group, G_SEQ);
    if (now == NULL) return NULL;
    long long n = PyLong_AsLongLong(now);
    Py_DECREF(now);
    if (n == -1 && PyErr_Occurred()) return NULL;
    PyObject *seq = PyLong_FromLongLong(n + 1);
    if (seq != NULL && set && group_set(group, G_SEQ, seq) < 0) Py_CLEAR(seq);
    return seq;
}

/* The Plan the group keeps for quick entry `hit` on `first` and `second`, run as the
 * group's next call (run_plan). Returns True (done, the group's sequence number
 * advanced), False (none kept: nothing done), (hit, first, second, seq, outcome) where
 * the run did not finish (an MPI error, or the record's id where a tag or length
 * differs: the caller settles it, _direct.settled), or NULL (another error). */
static PyObject *run_kept_here(PyObject *op, PyObject *group, PyObject *hit,
                               PyObject *first, PyObject *second, long spin,
                               PyObject *keep) {
    PyObject *kept = group_get(group, G_KEPT), *result = NULL;
    PyObject *seq = kept == NULL ? NULL : next_seq(group, 0);
    if (seq == NULL) {
        Py_XDECREF(kept);
        return NULL;
    }
    PyObject *res = run_plan(op, group, seq, kept, hit, first, second, spin, keep);
    Py_DECREF(kept);
    if (res == Py_None) {
        Py_DECREF(res);
        if (group_set(group, G_SEQ, seq) == 0) result = Py_NewRef(Py_True);
    } else if (res == Py_False) {
        result = res;
    } else if (res != NULL || (res = mpi_error_taken()) != NULL) {
        /* an MPI error, or a tag that differs: the caller settles it */
        result = PyTuple_Pack(5, hit, first, second, seq, res);
        Py_DECREF(res);
    }
    Py_DECREF(seq);
    return result;
}

/* Which MPI collective an exchange's quick entry names (its method), where the core
 * makes it: NOT_MINE for the others (Ialltoallv, Iallgatherv, Ireduce_scatter, ...). */
static int method_kind(PyObject *method) {
    if (method == NULL || !PyUnicode_Check(method)) return NOT_MINE;
    for (int k = ALLGATHER; k <= REDUCE_SCATTER_BLOCK; k++)
        if (same_name(method, str_methods[k])) return k;
    return NOT_MINE;
}


#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
#define DICT_VERSIONS 1
#endif

#ifdef DICT_VERSIONS
/* Whether `part` is the part remembered, as the dict's key comparison would find it: the
 * same object, an int of the same value (both exactly int), or a tuple of such items, to
 * two levels (a reduce's (op, root), all_to_all_single's (rank, send sizes, receive
 * sizes): tuples made anew by each call). Anything else compares by identity only (a
 * miss at worst: the dict is asked). */
static int same_item(PyObject *kept, PyObject *part, int depth) {
    if (kept == part) return 1;
    if (kept == NULL) return 0;
    if (PyLong_CheckExact(kept) && PyLong_CheckExact(part)) {
        int overflow_k = 0, overflow_p = 0;
        long long k = PyLong_AsLongLongAndOverflow(kept, &overflow_k);
        long long p = PyLong_AsLongLongAndOverflow(part, &overflow_p);
        return !overflow_k && !overflow_p && k == p;
    }
    if (depth == 0 || !PyTuple_CheckExact(kept) || !PyTuple_CheckExact(part) ||
        PyTuple_GET_SIZE(kept) != PyTuple_GET_SIZE(part))
        return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(part); i++)
        if (!same_item(PyTuple_GET_ITEM(kept, i), PyTuple_GET_ITEM(part, i), depth - 1))
            return 0;
    return 1;
}

static int same_part(PyObject *kept, PyObject *part) {
    return same_item(kept, part, 2);
}
#endif

/* The quick entry an exchange's `table` holds for its key (input's dtype and shape,
 * output's dtype and shape, the group's size, `extra`), with the last one found
 * remembered, as entry() does for all_reduce: where the same table, dtypes (the same
 * descriptor objects), shapes (compared dimension by dimension), size and extra come again
 * and the dict has not changed since (its version tag, CPython 3.11), the entry is that
 * one, without two shape tuples and a key made, hashed and compared on each call. The
 * record's arguments (counts, datatype, op), the same for every call of one entry, are
 * kept with it. A borrowed reference, or NULL (none, or an error set). */
#define MEMO_DIMS 8
typedef struct {
    PyObject *table, *sdescr, *rdescr, *size, *extra, *hit, *meta; /* strong references */
    uint64_t version;
    int snd, rnd;
    npy_intp sdims[MEMO_DIMS], rdims[MEMO_DIMS];
} ExchangeMemo;

static ExchangeMemo exchange_memo;

#ifdef DICT_VERSIONS
static int same_dims(int nd, const npy_intp *dims, PyArrayObject *a) {
    if (PyArray_NDIM(a) != nd) return 0;
    return nd == 0 || memcmp(dims, PyArray_DIMS(a), (size_t)nd * sizeof(npy_intp)) == 0;
}
#endif

static PyObject *exchange_entry(PyObject *table, PyArrayObject *sa, PyArrayObject *ra,
                                PyObject *size, PyObject *extra) {
    PyObject *sd = (PyObject *)PyArray_DESCR(sa), *rd = (PyObject *)PyArray_DESCR(ra);
#ifdef DICT_VERSIONS
    ExchangeMemo *m = &exchange_memo;
    if (m->table == table && m->sdescr == sd && m->rdescr == rd && m->size == size &&
        same_part(m->extra, extra) && same_dims(m->snd, m->sdims, sa) &&
        same_dims(m->rnd, m->rdims, ra) &&
        ((PyDictObject *)table)->ma_version_tag == m->version)
        return m->hit;
#endif
    PyObject *key = tuple_of(6, Py_NewRef(sd), shape_of(sa), Py_NewRef(rd), shape_of(ra),
                             Py_NewRef(size), Py_NewRef(extra));
    if (key == NULL) return NULL;
    PyObject *hit = PyDict_GetItemWithError(table, key); /* borrowed */
    Py_DECREF(key);
#ifdef DICT_VERSIONS
    if (hit != NULL && PyArray_NDIM(sa) <= MEMO_DIMS && PyArray_NDIM(ra) <= MEMO_DIMS) {
        /* (every new reference taken before an old one goes, as in entry()) */
        PyObject *old[7] = {m->table, m->sdescr, m->rdescr, m->size, m->extra, m->hit,
                            m->meta};
        m->table = Py_NewRef(table);
        m->sdescr = Py_NewRef(sd);
        m->rdescr = Py_NewRef(rd);
        m->size = Py_NewRef(size);
        m->extra = Py_NewRef(extra);
        m->hit = Py_NewRef(hit);
        m->meta = NULL;
        m->version = ((PyDictObject *)table)->ma_version_tag;
        m->snd = PyArray_NDIM(sa);
        m->rnd = PyArray_NDIM(ra);
        memcpy(m->sdims, PyArray_DIMS(sa), (size_t)m->snd * sizeof(npy_intp));
        memcpy(m->rdims, PyArray_DIMS(ra), (size_t)m->rnd * sizeof(npy_intp));
        for (int i = 0; i < 7; i++) Py_XDECREF(old[i]);
    }
#endif
    return hit;
}

/* What the record keeps of an exchange's arguments (what the Python path's record
 * keeps: counts, datatype, op): made once for the remembered entry, a new reference */
static PyObject *exchange_meta(PyObject *hit) {
    if (exchange_memo.hit == hit && exchange_memo.meta != NULL)
        return Py_NewRef(exchange_memo.meta);
    PyObject *sc = PyTuple_GET_ITEM(hit, 1), *rc = PyTuple_GET_ITEM(hit, 2);
    PyObject *dtobj = PyTuple_GET_ITEM(hit, 3), *after = PyTuple_GET_ITEM(hit, 4);
    PyObject *meta = tuple_of(3, PyTuple_Pack(2, sc, dtobj), PyTuple_Pack(2, rc, dtobj),
                              after == Py_None ? PyTuple_New(0) : Py_NewRef(after));
    if (meta != NULL && exchange_memo.hit == hit)
        exchange_memo.meta = Py_NewRef(meta);
    return meta;
}

/* MPI's collectives as a quick entry describes them where no own block is copied, made
 * with their counts (or signature) beside them where the entry holds a Sizes (vcall_run):
 * the v-collectives, whose counts differ by rank (all_to_all_single with split sizes and
 * all_to_all's lists: Alltoallv; all_gather's list: Allgather, Allgatherv;
 * reduce_scatter's list: Reduce_scatter_block, Reduce_scatter; gather's and scatter's:
 * Gatherv, Scatterv), and the tensor forms where their signature goes beside them
 * (Alltoall, Allgather, Reduce_scatter_block: exchange_signed). Counts and displacements
 * in elements of `dt`, one a rank. */
enum { V_ALLTOALLV, V_ALLGATHER, V_ALLGATHERV, V_REDUCE_SCATTER_BLOCK, V_REDUCE_SCATTER,
       V_GATHERV, V_SCATTERV, V_ALLTOALL };
#define FEW_RANKS 64
typedef struct {
    int kind, n, root;
    void *sb, *rb;
    int scount, rcount; /* ALLTOALL, ALLGATHER(V), GATHERV: scount sent; ALLTOALL,
                         * ALLGATHER, REDUCE_SCATTER_BLOCK, SCATTERV: rcount received */
    int *sc, *sd, *rc, *rd; /* one a rank (into few[], or PyMem where more ranks) */
    int few[4 * FEW_RANKS];
    int *mem;               /* the PyMem block, or NULL */
    PyObject *held;         /* bytes the four arrays were moved into (vcall_hold), or NULL */
    PyObject *packed;       /* bytes a list of tensors apart was packed into, sent from, or
                             * NULL */
    MPI_Datatype dt;
    MPI_Op op;
} VCall;

/* Room in `v` for its four arrays of `n` ints; -1 with an error where none is left. */
static int vcall_room(VCall *v, int n);

/* `v` begun as a v-collective of `kind` in `dt` on `n` ranks, its room made (vcall_room):
 * every field set but the arrays' room, which is not cleared (a kilobyte) */
static int vcall_new(VCall *v, int kind, MPI_Datatype dt, int n) {
    v->kind = kind;
    v->root = v->scount = v->rcount = 0;
    v->sb = v->rb = NULL;
    v->held = v->packed = NULL;
    v->dt = dt;
    v->op = MPI_OP_NULL;
    return vcall_room(v, n);
}

static int vcall_room(VCall *v, int n) {
    v->n = n;
    int *at = n <= FEW_RANKS ? v->few : PyMem_Malloc(sizeof(int) * 4 * (size_t)n);
    if (at == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    v->mem = at == v->few ? NULL : at;
    v->sc = at, v->sd = at + n, v->rc = at + 2 * n, v->rd = at + 3 * n;
    return 0;
}

/* v's arrays moved into a bytes object (v->held), which can outlive the call: MPI reads
 * a nonblocking v-collective's counts until it completes, and a call whose counts
 * differ, or that failed beside them, may hand back its data still running. */
static int vcall_hold(VCall *v) {
    size_t size = sizeof(int) * 4 * (size_t)v->n;
    if ((v->held = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size)) == NULL) return -1;
    int *at = (int *)PyBytes_AS_STRING(v->held);
    memcpy(at, v->sc, size);
    v->sc = at, v->sd = at + v->n, v->rc = at + 2 * v->n, v->rd = at + 3 * v->n;
    return 0;
}

static void vcall_done(VCall *v) {
    if (v->mem != NULL) PyMem_Free(v->mem);
    v->mem = NULL;
    Py_CLEAR(v->held);
    Py_CLEAR(v->packed);
}

/* The counts beside a v-collective's data (mpicoll/_collectives/_sizes.py), as
 * _waits.with_sizes posts and compares them: they go in the next slot of the group's Ring
 * of their form (a persistent request, restarted: Ring.start), or in a nonblocking
 * collective of their own where the group keeps none (an MPI without persistent
 * collectives, a form past the first RINGS); started right after the data; waited for
 * first, compared with what this rank expects, and then the data waited for. Counts that
 * differ and MPI's errors go back to the Python side, which words them
 * (_waits.counts_left). */
enum { C_ALLTOALL = 0, C_ALLREDUCE = 1, C_GATHER = 2, C_SCATTER = 3 };
typedef struct {
    PyObject *ring;            /* the Ring (a new reference), or NULL: a call of their own */
    Py_ssize_t slot, slots;    /* the ring's slot taken, and how many it has */
    PyObject *reqobj;          /* the slot's mpi4py Request (a new reference), or NULL */
    MPI_Request *req;          /* the counts' request: in reqobj, or &own */
    MPI_Request own;
    int method, scount, rcount;/* a call of their own: C_ALLTOALL (counts a rank),
                                  C_ALLREDUCE (MPI_MAX over rcount), or C_GATHER and
                                  C_SCATTER (to and from `root`: scount and rcount
                                  where this rank sends and receives none) */
    int root;
    Py_buffer send, recv;      /* .obj NULL where this rank sends or receives none */
    PyObject *recvobj;         /* the array they are received into (a new reference) */
    PyObject *sent, *expected; /* the Sizes' bytes, or None (new references) */
    int relayed;               /* every rank compares (Agreed): data may be left running */
    int started;               /* their request started (counts_run) */
} Counts;

/* the MPI datatype mpi4py gives numpy's int64, in which the Python side posts counts */
#define COUNT_TYPE (sizeof(long) == 8 ? MPI_LONG : MPI_LONG_LONG)

static void counts_release(Counts *c) {
    if (c->send.obj != NULL) PyBuffer_Release(&c->send);
    if (c->recv.obj != NULL) PyBuffer_Release(&c->recv);
    Py_CLEAR(c->ring);
    Py_CLEAR(c->reqobj);
    Py_CLEAR(c->recvobj);
    Py_CLEAR(c->sent);
    Py_CLEAR(c->expected);
}

/* obj[i] of the list `obj`, borrowed; NULL with an error where it is no such list. */
static PyObject *item_of(PyObject *obj, Py_ssize_t i) {
    if (obj == NULL || !PyList_Check(obj) || i < 0 || i >= PyList_GET_SIZE(obj)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "a counts ring's lists");
        return NULL;
    }
    return PyList_GET_ITEM(obj, i);
}

/* The ring's next slot into `c`: 1, 0 where a call in flight still holds it (the Python
 * side completes that call first: Ring.ready), -1 with an error. */
static int counts_slot(PyObject *ring, Counts *c) {
    PyObject *at = NULL, *owners = NULL, *reqs = NULL, *recvs = NULL, *sends = NULL;
    int result = -1;
    if ((at = PyObject_GetAttr(ring, str_at)) == NULL ||
        (owners = PyObject_GetAttr(ring, str_owners)) == NULL ||
        (reqs = PyObject_GetAttr(ring, str_reqs)) == NULL ||
        (recvs = PyObject_GetAttr(ring, str_recvs)) == NULL ||
        (sends = PyObject_GetAttr(ring, str_sends)) == NULL)
        goto out;
    c->slot = PyLong_AsSsize_t(at);
    if (c->slot == -1 && PyErr_Occurred()) goto out;
    PyObject *owner = item_of(owners, c->slot), *req = item_of(reqs, c->slot);
    PyObject *recv = item_of(recvs, c->slot), *send = item_of(sends, c->slot);
    if (owner == NULL || req == NULL || recv == NULL || send == NULL) goto out;
    if (owner != Py_None) {
        result = 0;
        goto out;
    }
    c->ring = Py_NewRef(ring);
    c->slots = PyList_GET_SIZE(reqs);
    c->reqobj = Py_NewRef(req);
    c->recvobj = Py_NewRef(recv);
    if ((c->req = PyMPIRequest_Get(req)) == NULL ||
        (send != Py_None && PyObject_GetBuffer(send, &c->send, PyBUF_WRITABLE) < 0))
        goto out;
    result = 1;
out:
    Py_XDECREF(sends);
    Py_XDECREF(recvs);
    Py_XDECREF(reqs);
    Py_XDECREF(owners);
    Py_XDECREF(at);
    return result;
}

/* A nonblocking collective of the counts' own into `c` (the Sizes' method, on a group of
 * `n` ranks): 1, 0 where it is one the core does not post, -1 with an error. */
static int counts_own(PyObject *sizes, long n, Counts *c) {
    static const char *methods[] = {"Ialltoall", "Iallreduce", "Igather", "Iscatter"};
    PyObject *method = PyObject_GetAttr(sizes, str_method), *nobj = NULL, *send = NULL;
    PyObject *root = NULL;
    int result = -1;
    if (method == NULL) return -1;
    c->method = -1;
    for (int k = C_ALLTOALL; k <= C_SCATTER && PyUnicode_Check(method); k++)
        if (PyUnicode_CompareWithASCIIString(method, methods[k]) == 0) c->method = k;
    if (c->method < 0) { /* (another form: not the core's calls) */
        result = 0;
        goto out;
    }
    if ((nobj = PyObject_GetAttr(sizes, str_n)) == NULL ||
        (send = PyObject_GetAttr(sizes, str_send)) == NULL)
        goto out;
    long total = PyLong_AsLong(nobj);
    if (total == -1 && PyErr_Occurred()) goto out;
    if (send != Py_None && PyObject_GetBuffer(send, &c->send, PyBUF_SIMPLE) < 0) goto out;
    long sent = c->send.obj == NULL ? 0 : (long)(c->send.len / 8);
    if (c->method == C_GATHER || c->method == C_SCATTER) {
        if ((root = PyObject_GetAttr(sizes, str_root)) == NULL) goto out;
        long r = PyLong_AsLong(root);
        if (r == -1 && PyErr_Occurred()) goto out;
        c->root = (int)r;
        /* (a gather's: one count from each rank, `total` of them on the root, none
         * elsewhere; a scatter's: one count to each rank, sent by the root) */
        long each = c->method == C_GATHER ? total : sent;
        if (n <= 0 || r < 0 || r >= n || each % n) {
            result = 0;
            goto out;
        }
        if (c->method == C_GATHER) {
            c->scount = (int)sent, c->rcount = (int)(total / n);
        } else {
            c->scount = (int)(sent / n), c->rcount = (int)total;
        }
    } else if (c->method == C_ALLTOALL) {
        if (n <= 0 || sent % n || total % n) {
            result = 0;
            goto out;
        }
        c->scount = (int)(sent / n), c->rcount = (int)(total / n);
    } else {
        if (sent != total) {
            result = 0;
            goto out;
        }
        c->scount = c->rcount = (int)total;
    }
    npy_intp dims[1] = {total};
    if ((c->recvobj = PyArray_SimpleNew(1, dims, NPY_INT64)) == NULL) goto out;
    c->req = &c->own;
    c->own = MPI_REQUEST_NULL;
    result = 1;
out:
    Py_XDECREF(root);
    Py_XDECREF(send);
    Py_XDECREF(nobj);
    Py_DECREF(method);
    return result;
}

/* Where the counts `sizes` go on `group` (of `n` ranks) beside the call's data, into
 * `c`: the next slot of the group's ring of their form (the ring made, at its first call,
 * by the Sizes' own ring(); every rank makes it at the same call), or a call of their
 * own. 1 with `c` filled (release it with counts_release), 0 where the Python side makes
 * the call, -1 with an error. */
static int counts_take(PyObject *group, PyObject *sizes, long n, Counts *c) {
    memset(c, 0, sizeof *c);
    PyObject *rings = group_get(group, G_COUNTS), *form = NULL, *ring = NULL, *rel = NULL;
    int result = -1;
    if (rings == NULL) { /* (a group with no rings at all: as getattr(group, "counts", None)) */
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
        PyErr_Clear();
        rings = Py_NewRef(Py_None);
    }
    if (PyDict_Check(rings)) {
        if ((form = PyObject_GetAttr(sizes, str_form)) == NULL) goto out;
        ring = PyDict_GetItemWithError(rings, form);
        if (ring != NULL) {
            Py_INCREF(ring);
        } else if (PyErr_Occurred() ||
                   (ring = PyObject_CallMethodOneArg(sizes, str_ring, group)) == NULL) {
            goto out;
        }
    }
    int taken = ring != NULL && ring != Py_None ? counts_slot(ring, c) : counts_own(sizes, n, c);
    if (taken <= 0) {
        result = taken;
        goto out;
    }
    if ((c->sent = PyObject_GetAttr(sizes, str_sent)) == NULL ||
        (c->expected = PyObject_GetAttr(sizes, str_expected)) == NULL ||
        (rel = PyObject_GetAttr(sizes, str_relayed)) == NULL ||
        (c->relayed = PyObject_IsTrue(rel)) < 0)
        goto out;
    if (c->recvobj != Py_None && PyObject_GetBuffer(c->recvobj, &c->recv, PyBUF_SIMPLE) < 0)
        goto out;
    int sends_ok = c->ring == NULL || (c->send.obj == NULL
        ? c->sent == Py_None
        : PyBytes_Check(c->sent) && PyBytes_GET_SIZE(c->sent) == c->send.len);
    result = sends_ok && (c->expected == Py_None || PyBytes_Check(c->expected));
out:
    if (result != 1) counts_release(c);
    Py_XDECREF(rel);
    Py_XDECREF(ring);
    Py_XDECREF(form);
    Py_DECREF(rings);
    return result;
}

/* The ring's slot taken (Ring.start's step): its turn moved on, before any message is
 * posted (nothing can fail with a request running). 0, or -1 with an error. */
static int counts_advance(Counts *c) {
    if (c->ring == NULL) return 0;
    PyObject *next = PyLong_FromSsize_t((c->slot + 1) % c->slots);
    int bad = next == NULL || PyObject_SetAttr(c->ring, str_at, next) < 0;
    Py_XDECREF(next);
    return bad ? -1 : 0;
}

/* After the data's request `data` is posted on `comm`: the counts started (counts_take),
 * waited for first and compared, then the data waited for. Returns MPI_SUCCESS, with
 * *differ set where the counts differ from those this rank expects (the data then
 * waited for where only a receiver compares, its error ignored: the counts say more;
 * left to the caller where every rank compares and it is still running), MPI's error, or
 * -1 with an exception. */
static int counts_run(Counts *c, MPI_Comm comm, Record *rec, long spin, PyObject *op,
                      PyObject *group, PyObject *seq, PyObject *keep, MPI_Request *data,
                      int *differ) {
    int err;
    if (c->ring != NULL) {
        if (c->send.obj != NULL)
            memcpy(c->send.buf, PyBytes_AS_STRING(c->sent), (size_t)c->send.len);
        err = MPI_Start(c->req);
    } else {
        void *sb = c->send.obj != NULL ? c->send.buf : NULL;
        void *rb = c->recv.obj != NULL ? c->recv.buf : NULL;
        err = c->method == C_ALLTOALL
            ? MPI_Ialltoall(sb, c->scount, COUNT_TYPE, rb, c->rcount, COUNT_TYPE, comm, c->req)
            : c->method == C_GATHER
            ? MPI_Igather(sb, c->scount, COUNT_TYPE, rb, c->rcount, COUNT_TYPE, c->root, comm,
                          c->req)
            : c->method == C_SCATTER
            ? MPI_Iscatter(sb, c->scount, COUNT_TYPE, rb, c->rcount, COUNT_TYPE, c->root,
                           comm, c->req)
            : MPI_Iallreduce(sb, rb, c->rcount, COUNT_TYPE, MPI_MAX, comm, c->req);
    }
    if (err != MPI_SUCCESS) return err;
    c->started = 1;
    if ((err = wait_for(c->req, rec, spin, op, group, seq, keep)) != MPI_SUCCESS) return err;
    if (c->expected != Py_None &&
        (c->recv.obj == NULL || c->recv.len != PyBytes_GET_SIZE(c->expected) ||
         memcmp(c->recv.buf, PyBytes_AS_STRING(c->expected), (size_t)c->recv.len) != 0)) {
        *differ = 1;
        if (!c->relayed) (void)wait_for(data, rec, spin, op, group, seq, keep);
        return MPI_SUCCESS;
    }
    return wait_for(data, rec, spin, op, group, seq, keep);
}

/* The `n` ints of the list or tuple `seq` into `out`; -1 with an error where it is not such. */
static int ints_into(PyObject *seq, int n, int *out) {
    if (!(PyList_Check(seq) || PyTuple_Check(seq)) || PySequence_Fast_GET_SIZE(seq) != n) {
        PyErr_SetString(PyExc_TypeError, "a quick entry's counts: one int a rank");
        return -1;
    }
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (int i = 0; i < n; i++) {
        long v = PyLong_AsLong(items[i]);
        if (v == -1 && PyErr_Occurred()) return -1;
        if (v < 0 || v > INT_MAX) {
            PyErr_SetString(PyExc_OverflowError, "a quick entry's counts: outside an int");
            return -1;
        }
        out[i] = (int)v;
    }
    return 0;
}

/* The (counts, displacements) pair `pair` into `counts`, `displs`. */
static int pair_into(PyObject *pair, int n, int *counts, int *displs) {
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
        PyErr_SetString(PyExc_TypeError, "a quick entry's (counts, displacements)");
        return -1;
    }
    return ints_into(PyTuple_GET_ITEM(pair, 0), n, counts) < 0 ? -1
        : ints_into(PyTuple_GET_ITEM(pair, 1), n, displs);
}

/* Post (or, blocking, make) the call `v` on `comm`. */
static int vcall_post(const VCall *v, MPI_Comm comm, int blocking, MPI_Request *req) {
    switch (v->kind) {
    case V_ALLTOALLV:
        return blocking ? MPI_Alltoallv(v->sb, v->sc, v->sd, v->dt, v->rb, v->rc, v->rd, v->dt,
                                        comm)
                        : MPI_Ialltoallv(v->sb, v->sc, v->sd, v->dt, v->rb, v->rc, v->rd,
                                         v->dt, comm, req);
    case V_ALLTOALL:
        return blocking ? MPI_Alltoall(v->sb, v->scount, v->dt, v->rb, v->rcount, v->dt, comm)
                        : MPI_Ialltoall(v->sb, v->scount, v->dt, v->rb, v->rcount, v->dt, comm,
                                        req);
    case V_ALLGATHER:
        return blocking ? MPI_Allgather(v->sb, v->scount, v->dt, v->rb, v->rcount, v->dt, comm)
                        : MPI_Iallgather(v->sb, v->scount, v->dt, v->rb, v->rcount, v->dt, comm,
                                         req);
    case V_ALLGATHERV:
        return blocking ? MPI_Allgatherv(v->sb, v->scount, v->dt, v->rb, v->rc, v->rd, v->dt,
                                         comm)
                        : MPI_Iallgatherv(v->sb, v->scount, v->dt, v->rb, v->rc, v->rd, v->dt,
                                          comm, req);
    case V_REDUCE_SCATTER_BLOCK:
        return blocking ? MPI_Reduce_scatter_block(v->sb, v->rb, v->rcount, v->dt, v->op, comm)
                        : MPI_Ireduce_scatter_block(v->sb, v->rb, v->rcount, v->dt, v->op,
                                                    comm, req);
    case V_GATHERV:
        if (v->n == 1 && v->rd[0] == 0) /* (one process, its block where the area starts:
                                          * MPI's Gather, the same call, cheaper) */
            return blocking ? MPI_Gather(v->sb, v->scount, v->dt, v->rb, v->rc[0], v->dt,
                                         v->root, comm)
                            : MPI_Igather(v->sb, v->scount, v->dt, v->rb, v->rc[0], v->dt,
                                          v->root, comm, req);
        return blocking ? MPI_Gatherv(v->sb, v->scount, v->dt, v->rb, v->rc, v->rd, v->dt,
                                      v->root, comm)
                        : MPI_Igatherv(v->sb, v->scount, v->dt, v->rb, v->rc, v->rd, v->dt,
                                       v->root, comm, req);
    case V_SCATTERV:
        if (v->n == 1 && v->sd[0] == 0) /* (as Gatherv's: MPI's Scatter) */
            return blocking ? MPI_Scatter(v->sb, v->sc[0], v->dt, v->rb, v->rcount, v->dt,
                                          v->root, comm)
                            : MPI_Iscatter(v->sb, v->sc[0], v->dt, v->rb, v->rcount, v->dt,
                                           v->root, comm, req);
        return blocking ? MPI_Scatterv(v->sb, v->sc, v->sd, v->dt, v->rb, v->rcount, v->dt,
                                       v->root, comm)
                        : MPI_Iscatterv(v->sb, v->sc, v->sd, v->dt, v->rb, v->rcount, v->dt,
                                        v->root, comm, req);
    default:
        return blocking ? MPI_Reduce_scatter(v->sb, v->rb, v->rc, v->dt, v->op, comm)
                        : MPI_Ireduce_scatter(v->sb, v->rb, v->rc, v->dt, v->op, comm, req);
    }
}

/* The call `v` on `group`, blocking: numbered (whatever happens next), recorded (`meta`:
 * what the Python path's record keeps of its arguments; `count`: elements received),
 * posted and waited for as exchange_in's, with its counts beside it where `c` is given
 * (counts_run). Returns MPI_SUCCESS (*differ set where the counts differ), MPI's error
 * (its exception not raised: the caller explains it), or -1 with an exception set; the
 * data's request is left in *req (MPI_REQUEST_NULL once complete), the call's number in
 * *seqv. */
static int vcall_in(const VCall *v, PyObject *op, PyObject *group, PyObject *dtobj,
                    PyObject *meta, long long count, long spin, PyObject *keep, Counts *c,
                    MPI_Request *req, long long *seqv, int *differ) {
    *req = MPI_REQUEST_NULL;
    *differ = 0;
    PyObject *commobj = group_get(group, G_COMM);
    if (commobj == NULL) return -1;
    MPI_Comm *comm = PyMPIComm_Get(commobj);
    PyObject *seq = comm == NULL ? NULL : next_seq(group, 1);
    int err = -1;
    if (seq == NULL) goto out;
    *seqv = PyLong_AsLongLong(seq);
    Record *rec = capacity > 0 ? record(op, group, *seqv, count, dtobj, NULL, meta) : NULL;
    if (c == NULL && alone(*comm)) { /* (nothing to wait for: MPI's blocking call) */
        err = vcall_post(v, *comm, 1, NULL);
    } else if (c != NULL && counts_advance(c) < 0) {
        err = -1;
    } else if ((err = vcall_post(v, *comm, 0, req)) == MPI_SUCCESS) {
        err = c != NULL ? counts_run(c, *comm, rec, spin, op, group, seq, keep, req, differ)
                        : wait_for(req, rec, spin, op, group, seq, keep);
    }
    if (rec != NULL) {
        rec->done = now_ns();
        if (err != MPI_SUCCESS || *differ) rec->state = FAILED;
    }
out:
    Py_XDECREF(seq);
    Py_DECREF(commobj);
    return err;
}

/* The MPI error `err` of a v-collective as the caller hands it back: (hit, first, second,
 * error) for the Python side to explain (mpicoll/_collectives/_call.py, vcall_failed),
 * or NULL where it is not MPI's (-1: an exception already set). */
static PyObject *vcall_failed(int err, PyObject *hit, PyObject *first, PyObject *second) {
    if (err < 0 || raise_mpi(err) != NULL) return NULL;
    PyObject *e = mpi_error_taken();
    if (e == NULL) return NULL;
    PyObject *result = PyTuple_Pack(4, hit, first, second, e);
    Py_DECREF(e);
    return result;
}

/* `v` run (vcall_in) with the call's tensors (`keep_a`, `keep_b`) kept while it waits,
 * and its counts beside it where `sizes` (the entry's Sizes) is not None; then `meta` (a
 * reference taken over) and v's arrays released. Returns True; False where the Python
 * side makes the call (counts_take); (hit, first, second, error) where MPI raised; with
 * counts, (hit, first, second, (error or None where the counts differ, the data's
 * request, the counts' request and what they were received into (None where they were
 * not started), their ring or None, its slot, the call's number, the bytes holding the
 * counts MPI reads while the data runs)) where the call did not complete as expected
 * (_waits.counts_left settles it); or NULL. */
static PyObject *vcall_run(VCall *v, PyObject *op, PyObject *group, PyObject *dtobj,
                           PyObject *meta, long long count, long spin, PyObject *keep_a,
                           PyObject *keep_b, PyObject *hit, PyObject *first,
                           PyObject *second, PyObject *sizes) {
    PyObject *keep = NULL, *result = NULL;
    Counts counts, *c = NULL;
    if (sizes != NULL && sizes != Py_None) {
        int taken = counts_take(group, sizes, v->n, &counts);
        if (taken <= 0) {
            if (taken == 0) result = Py_NewRef(Py_False);
            goto out;
        }
        c = &counts;
        if (vcall_hold(v) < 0) goto out;
    }
    if ((keep = PyTuple_Pack(2, keep_a, keep_b)) == NULL) goto out;
    MPI_Request req;
    long long seq = 0;
    int differ = 0;
    int err = vcall_in(v, op, group, dtobj, meta, count, spin, keep, c, &req, &seq, &differ);
    if (err == MPI_SUCCESS && !differ) {
        result = Py_NewRef(Py_True);
    } else if (c == NULL || err < 0 || (req == MPI_REQUEST_NULL && !c->started)) {
        result = vcall_failed(err, hit, first, second); /* (nothing running: MPI's error) */
    } else { /* (the counts differ, or MPI raised beside them: the Python side settles) */
        PyObject *e = Py_None;
        if (err != MPI_SUCCESS) {
            if (raise_mpi(err) != NULL || (e = mpi_error_taken()) == NULL) goto out;
        } else {
            Py_INCREF(e);
        }
        PyObject *creq = !c->started ? Py_NewRef(Py_None)
            : c->reqobj != NULL ? Py_NewRef(c->reqobj) : PyMPIRequest_New(c->own);
        PyObject *left = tuple_of(
            8, e, PyMPIRequest_New(req), creq,
            Py_NewRef(c->started ? c->recvobj : Py_None),
            Py_NewRef(c->ring != NULL ? c->ring : Py_None), PyLong_FromSsize_t(c->slot),
            PyLong_FromLongLong(seq),
            v->packed != NULL ? PyTuple_Pack(2, v->held, v->packed) : Py_NewRef(v->held));
        result = left == NULL ? NULL
                              : tuple_of(4, Py_NewRef(hit), Py_NewRef(first),
                                         Py_NewRef(second), left);
    }
out:
    Py_XDECREF(keep);
    if (c != NULL) counts_release(c);
    Py_XDECREF(meta);
    vcall_done(v);
    return result;
}

/* Which v-collective a quick entry's `method` names (V_ALLTOALLV, ...), or -1. */
static int vmethod_kind(PyObject *method) {
    if (method == NULL || !PyUnicode_Check(method)) return -1;
    for (int k = V_ALLTOALLV; k <= V_REDUCE_SCATTER; k++)
        if (same_name(method, str_vmethods[k])) return k;
    return -1;
}

/* The record's (count, datatype) of a buffer given by counts and displacements: as
 * _recorder.kept keeps [buffer, (counts, displs), datatype], the pair `given` where the
 * entry holds it, else (counts, the displacements `displs`) made here. */
static PyObject *v_spec(PyObject *given, PyObject *counts, const int *displs, int n,
                        PyObject *dtobj) {
    if (given != NULL) return PyTuple_Pack(2, given, dtobj);
    PyObject *d = PyList_New(n);
    if (d == NULL) return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *x = PyLong_FromLong(displs[i]);
        if (x == NULL) {
            Py_DECREF(d);
            return NULL;
        }
        PyList_SET_ITEM(d, i, x);
    }
    return tuple_of(2, tuple_of(2, Py_NewRef(counts), d), Py_NewRef(dtobj));
}

/* The MPI collective of quick entry `hit` = (method, send count, receive count,
 * datatype, (op,) or None, own block, sizes) from `s` to `r`, blocking, numbered and
 * recorded (the record keeps what mpicoll._recorder.kept keeps of its arguments).
 * Returns True, or (hit, s, r, error) where MPI raised (the caller explains it). */
static PyObject *exchange_in(int kind, PyObject *op, PyObject *group, PyObject *hit,
                             PyArrayObject *s, PyArrayObject *r, long spin,
                             PyObject *keep) {
    PyObject *sc = PyTuple_GET_ITEM(hit, 1), *rc = PyTuple_GET_ITEM(hit, 2);
    PyObject *dtobj = PyTuple_GET_ITEM(hit, 3), *after = PyTuple_GET_ITEM(hit, 4);
    MPI_Datatype *dt = PyMPIDatatype_Get(dtobj);
    MPI_Op *mop = NULL;
    if (dt == NULL) return NULL;
    if (kind == REDUCE_SCATTER_BLOCK) {
        if (!PyTuple_Check(after) || PyTuple_GET_SIZE(after) != 1) {
            PyErr_SetString(PyExc_ValueError, "exchange: a reduce_scatter entry's op");
            return NULL;
        }
        if ((mop = PyMPIOp_Get(PyTuple_GET_ITEM(after, 0))) == NULL) return NULL;
    }
    long long scount = PyLong_AsLongLong(sc), rcount = PyLong_AsLongLong(rc);
    if (PyErr_Occurred()) return NULL;
    if (scount > INT_MAX || rcount > INT_MAX || scount < 0 || rcount < 0) {
        PyErr_SetString(PyExc_OverflowError, "exchange: counts outside an int");
        return NULL;
    }
    PyObject *commobj = group_get(group, G_COMM);
    if (commobj == NULL) return NULL;
    MPI_Comm *comm = PyMPIComm_Get(commobj);
    PyObject *seq = comm == NULL ? NULL : next_seq(group, 1), *result = NULL;
    if (seq == NULL) goto out;
    Record *rec = NULL;
    if (capacity > 0) { /* (what the Python path's record keeps: counts, datatype, op) */
        PyObject *meta = exchange_meta(hit);
        if (meta == NULL) goto out;
        rec = record(op, group, PyLong_AsLongLong(seq), rcount, dtobj, NULL, meta);
        Py_DECREF(meta);
    }
    void *sb = PyArray_DATA(s), *rb = PyArray_DATA(r);
    MPI_Request req = MPI_REQUEST_NULL;
    int err;
    if (alone(*comm)) { /* (nothing to wait for: MPI's blocking call, its cheaper path) */
        PyThreadState *released = release_if_long(PyArray_NBYTES(r));
        err = kind == ALLGATHER
            ? MPI_Allgather(sb, (int)scount, *dt, rb, (int)rcount, *dt, *comm)
            : kind == ALLTOALL
            ? MPI_Alltoall(sb, (int)scount, *dt, rb, (int)rcount, *dt, *comm)
            : MPI_Reduce_scatter_block(sb, rb, (int)rcount, *dt, *mop, *comm);
        retake(released);
    } else if ((err = kind == ALLGATHER
              ? MPI_Iallgather(sb, (int)scount, *dt, rb, (int)rcount, *dt, *comm, &req)
              : kind == ALLTOALL
              ? MPI_Ialltoall(sb, (int)scount, *dt, rb, (int)rcount, *dt, *comm, &req)
              : MPI_Ireduce_scatter_block(sb, rb, (int)rcount, *dt, *mop, *comm, &req))
             == MPI_SUCCESS)
        err = wait_for(&req, rec, spin, op, group, seq, keep);
    if (rec != NULL) {
        rec->done = now_ns();
        if (err != MPI_SUCCESS) rec->state = FAILED;
    }
    if (err == MPI_SUCCESS) {
        result = Py_NewRef(Py_True);
    } else if (raise_mpi(err) == NULL) {
        PyObject *e = mpi_error_taken();
        if (e != NULL) {
            result = PyTuple_Pack(4, hit, (PyObject *)s, (PyObject *)r, e);
            Py_DECREF(e);
        }
    }
out:
    Py_XDECREF(seq);
    Py_DECREF(commobj);
    return result;
}

/* exchange()'s all_to_all_single with split sizes: quick entry `hit` = ("Ialltoallv",
 * (send counts, displacements), (receive ...), datatype, None, None, None) from `s` to
 * `r`, as MPI's Alltoallv (vcall_in). Returns True, (hit, s, r, error) where MPI raised,
 * or NULL. */
static PyObject *exchange_v(PyObject *op, PyObject *group, PyObject *hit, PyArrayObject *s,
                            PyArrayObject *r, PyObject *spinobj, PyObject *output,
                            PyObject *input) {
    PyObject *sizeobj = group_get(group, G_SIZE), *meta = NULL;
    if (sizeobj == NULL) return NULL;
    long n = PyLong_AsLong(sizeobj), spin = PyLong_AsLong(spinobj);
    Py_DECREF(sizeobj);
    MPI_Datatype *dt = PyErr_Occurred() ? NULL : PyMPIDatatype_Get(PyTuple_GET_ITEM(hit, 3));
    if (dt == NULL || n <= 0 || n > INT_MAX) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "exchange: a group's size");
        return NULL;
    }
    VCall v;
    if (vcall_new(&v, V_ALLTOALLV, *dt, (int)n) < 0) return NULL;
    v.sb = PyArray_DATA(s), v.rb = PyArray_DATA(r);
    if (pair_into(PyTuple_GET_ITEM(hit, 1), v.n, v.sc, v.sd) < 0 ||
        pair_into(PyTuple_GET_ITEM(hit, 2), v.n, v.rc, v.rd) < 0)
        goto out;
    long long count = 0;
    for (int i = 0; i < v.n; i++) count += v.rc[i];
    if (capacity > 0 && (meta = exchange_meta(hit)) == NULL) goto out;
    return vcall_run(&v, op, group, PyTuple_GET_ITEM(hit, 3), meta, count, spin, output,
                     input, hit, (PyObject *)s, (PyObject *)r, PyTuple_GET_ITEM(hit, 6));
out:
    vcall_done(&v);
    return NULL;
}

/* exchange()'s tensor forms (`kind`: ALLTOALL, ALLGATHER, REDUCE_SCATTER_BLOCK) where
 * their signature goes beside the data (entry `hit` = (method, send count, receive count,
 * datatype, (op,) or None, None, sizes): more than 8 ranks, or a group without messages
 * of its own), as the v-collective of the same call (vcall_run). Returns as exchange_v. */
static PyObject *exchange_signed(int kind, PyObject *op, PyObject *group, PyObject *hit,
                                 PyArrayObject *s, PyArrayObject *r, PyObject *spinobj,
                                 PyObject *output, PyObject *input) {
    long spin = PyLong_AsLong(spinobj);
    long long sc = PyLong_AsLongLong(PyTuple_GET_ITEM(hit, 1));
    long long rc = PyLong_AsLongLong(PyTuple_GET_ITEM(hit, 2));
    MPI_Datatype *dt = PyErr_Occurred() ? NULL : PyMPIDatatype_Get(PyTuple_GET_ITEM(hit, 3));
    if (dt == NULL) return NULL;
    if (sc < 0 || rc < 0 || sc > INT_MAX || rc > INT_MAX) Py_RETURN_FALSE;
    MPI_Op mop = MPI_OP_NULL;
    if (kind == REDUCE_SCATTER_BLOCK) {
        PyObject *after = PyTuple_GET_ITEM(hit, 4);
        MPI_Op *given = PyTuple_Check(after) && PyTuple_GET_SIZE(after) == 1
            ? PyMPIOp_Get(PyTuple_GET_ITEM(after, 0)) : NULL;
        if (given == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "exchange: a reduce_scatter entry's op");
            return NULL;
        }
        mop = *given;
    }
    PyObject *sizeobj = group_get(group, G_SIZE);
    if (sizeobj == NULL) return NULL;
    long n = PyLong_AsLong(sizeobj);
    Py_DECREF(sizeobj);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (n <= 0 || n > INT_MAX) Py_RETURN_FALSE;
    VCall v; /* (its arrays unused: the group's size, for the counts beside it) */
    int vkind = kind == ALLTOALL ? V_ALLTOALL : kind == ALLGATHER ? V_ALLGATHER
                                                                  : V_REDUCE_SCATTER_BLOCK;
    if (vcall_new(&v, vkind, *dt, (int)n) < 0) return NULL;
    memset(v.sc, 0, sizeof(int) * 4 * (size_t)n);
    v.sb = PyArray_DATA(s), v.rb = PyArray_DATA(r);
    v.scount = (int)sc, v.rcount = (int)rc, v.op = mop;
    PyObject *meta = NULL;
    if (capacity > 0 && (meta = exchange_meta(hit)) == NULL) {
        vcall_done(&v);
        return NULL;
    }
    return vcall_run(&v, op, group, PyTuple_GET_ITEM(hit, 3), meta, rc, spin, output, input,
                     hit, (PyObject *)s, (PyObject *)r, PyTuple_GET_ITEM(hit, 6));
}

/* exchange(op, group, output, input, table, extra, quickers, spin, left): the quick
 * path of a call from `input` to `output` (all_to_all_single, all_gather_into_tensor,
 * reduce_scatter_tensor; mpicoll/_collectives/_call.py, quick_exchange, says when and
 * what). Both arrays (quick_array), apart, and `table` holding the entry `hit` that the
 * general path validated for their dtypes, shapes, the group's size and `extra`:
 * where the entry is a direct call whose messages the group keeps as a Plan (and no rank
 * has left: `left` false), run here (numbered, run_plan). Returns False (the general
 * path takes the call), True (done), (hit, s, r) (the arrays: the caller makes the
 * call), or (hit, s, r, seq, outcome) where the Plan's run did not finish (outcome:
 * the MPI error raised, or the record's id where a tag or length differs: the caller
 * settles it, as for run). */
static PyObject *exchange(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "exchange takes 9 arguments");
        return NULL;
    }
    PyObject *op = args[0], *group = args[1], *output = args[2], *input = args[3];
    PyObject *table = args[4], *extra = args[5], *quickers = args[6];
    if (!PyDict_Check(table) || !PyDict_Check(quickers)) {
        PyErr_SetString(PyExc_TypeError, "exchange: table and quickers are dicts");
        return NULL;
    }
    PyObject *r = quick_array(output, 1, quickers), *s = NULL, *result = NULL;
    if (r == NULL) goto no;
    if ((s = quick_array(input, 0, quickers)) == NULL) goto no;
    PyArrayObject *ra = (PyArrayObject *)r, *sa = (PyArrayObject *)s;
    { /* two contiguous arrays are apart where their byte ranges are (may_share_memory) */
        char *r0 = PyArray_BYTES(ra), *s0 = PyArray_BYTES(sa);
        Py_ssize_t rn = PyArray_NBYTES(ra), sn = PyArray_NBYTES(sa);
        if (rn && sn && r0 < s0 + sn && s0 < r0 + rn) goto no;
    }
    PyObject *size = group_get(group, G_SIZE);
    if (size == NULL) goto out;
    PyObject *hit = exchange_entry(table, sa, ra, size, extra); /* borrowed */
    Py_DECREF(size);
    if (hit == NULL) {
        if (PyErr_Occurred()) goto out;
        goto no;
    }
    Py_INCREF(hit);
    int left = PyObject_IsTrue(args[8]);
    if (left < 0) goto hit_out;
    PyObject *method = PyTuple_Check(hit) && PyTuple_GET_SIZE(hit) > 0
        ? PyTuple_GET_ITEM(hit, 0) : NULL;
    int kind = left || method == NULL || PyTuple_GET_SIZE(hit) != 7 ? NOT_MINE
        : method_kind(method);
    int direct = !left && method != NULL && kind == NOT_MINE &&
        (same_name(method, str_direct) || same_name(method, str_reduced));
    int signed_ = kind != NOT_MINE && PyTuple_GET_ITEM(hit, 5) == Py_None &&
        PyTuple_GET_ITEM(hit, 6) != Py_None;
    if (kind != NOT_MINE && (PyTuple_GET_ITEM(hit, 5) != Py_None ||
                             PyTuple_GET_ITEM(hit, 6) != Py_None))
        kind = NOT_MINE; /* (an own block to copy: Python's; a signature beside the data:
                          * exchange_signed) */
    if (signed_) {
        result = exchange_signed(method_kind(method), op, group, hit, sa, ra, args[7], output,
                                 input);
        if (result != Py_False) goto hit_out;
        Py_DECREF(result);
    } else if (direct || kind != NOT_MINE) {
        long spin = PyLong_AsLong(args[7]);
        if (spin == -1 && PyErr_Occurred()) goto hit_out;
        PyObject *keep = PyTuple_Pack(2, output, input);
        if (keep == NULL) goto hit_out;
        result = direct ? run_kept_here(op, group, hit, s, r, spin, keep)
                        : exchange_in(kind, op, group, hit, sa, ra, spin, keep);
        Py_DECREF(keep);
        if (result != Py_False) goto hit_out;
        Py_DECREF(result);
    } else if (!left && !direct && PyTuple_GET_SIZE(hit) == 7 &&
               vmethod_kind(method) == V_ALLTOALLV && PyTuple_GET_ITEM(hit, 4) == Py_None &&
               PyTuple_GET_ITEM(hit, 5) == Py_None) {
        /* (split sizes: MPI's Alltoallv, its counts beside it where they go) */
        result = exchange_v(op, group, hit, sa, ra, args[7], output, input);
        if (result != Py_False) goto hit_out;
        Py_DECREF(result);
    }
    result = PyTuple_Pack(3, hit, s, r);
hit_out:
    Py_DECREF(hit);
    goto out;
no:
    if (!PyErr_Occurred()) result = Py_NewRef(Py_False);
out:
    Py_XDECREF(r);
    Py_XDECREF(s);
    return result;
}

/* The call on `a` as messages, where the group sends them (its `direct` communicator)
 * and it has 1 to `most` elements: the group's kept Plan of quick entry `hit` run here
 * (run_kept_here). Returns 0 where the call is not messages; 1 with *result: True (done),
 * a run that did not finish (as run_kept_here's), or (hit, a) where no Plan is kept yet
 * (the caller makes one); -1 on an error. all_reduce's and broadcast's. */
static int as_messages(PyObject *op, PyObject *group, PyObject *hit, PyObject *a,
                       Py_ssize_t most, long spin, PyObject *keep, PyObject **result) {
    Py_ssize_t size = PyArray_SIZE((PyArrayObject *)a);
    if (size <= 0 || size > most) return 0;
    PyObject *direct = group_get(group, G_DIRECT);
    if (direct == NULL) return -1;
    int messages_go = direct != Py_None;
    Py_DECREF(direct);
    if (!messages_go) return 0;
    PyObject *res = run_kept_here(op, group, hit, a, Py_None, spin, keep);
    if (res == Py_False) {
        Py_DECREF(res);
        res = PyTuple_Pack(2, hit, a);
    }
    *result = res;
    return res == NULL ? -1 : 1;
}

/* MPI's collective `kind` in place on `a` (call_in: ALLREDUCE, BCAST; hit = (datatype,
 * op or root)), numbered (whatever happens next) and recorded. Returns True, or
 * (hit, a, error) where MPI raised (the caller explains it). */
static PyObject *mpi_call(int kind, PyObject *op, PyObject *group, PyObject *hit,
                          PyObject *a, long spin) {
    PyObject *comm = group_get(group, G_COMM), *result = NULL;
    PyObject *seq = comm == NULL ? NULL : next_seq(group, 1);
    PyObject *res = seq == NULL ? NULL
        : call_in(kind, op, comm, a, PyTuple_GET_ITEM(hit, 0), PyTuple_GET_ITEM(hit, 1),
                  group, seq, spin);
    int numbered = seq != NULL;
    Py_XDECREF(comm);
    Py_XDECREF(seq);
    if (res != NULL) {
        Py_DECREF(res);
        return Py_NewRef(Py_True);
    }
    if (numbered) {
        PyObject *e = mpi_error_taken();
        if (e != NULL) {
            result = PyTuple_Pack(3, hit, a, e);
            Py_DECREF(e);
        }
    }
    return result;
}

/* The quick entry `table` (a dict) holds for the key (descr, part), with the last one
 * found remembered: where the same table, dtype and part come again and the dict has not
 * changed since (its version tag, CPython 3.11), the entry is that one, without a key
 * tuple made, hashed and compared (about 450 instructions a call). A borrowed reference,
 * or NULL (none, or an error set). */
typedef struct {
    PyObject *table, *descr, *part, *hit; /* strong references */
    uint64_t version;
} Memo;

static PyObject *entry(Memo *m, PyObject *table, PyObject *descr, PyObject *part) {
#ifdef DICT_VERSIONS
    if (m->table == table && m->descr == descr && same_part(m->part, part) &&
        ((PyDictObject *)table)->ma_version_tag == m->version)
        return m->hit;
#endif
    PyObject *key = PyTuple_Pack(2, descr, part);
    if (key == NULL) return NULL;
    PyObject *hit = PyDict_GetItemWithError(table, key); /* borrowed */
    Py_DECREF(key);
#ifdef DICT_VERSIONS
    if (hit != NULL) {
        /* (every new reference taken before an old one goes: what a release runs cannot
         * free `hit`, borrowed from the dict until then) */
        PyObject *old[4] = {m->table, m->descr, m->part, m->hit};
        m->table = Py_NewRef(table);
        m->descr = Py_NewRef(descr);
        m->part = Py_NewRef(part);
        m->hit = Py_NewRef(hit);
        m->version = ((PyDictObject *)table)->ma_version_tag;
        for (int i = 0; i < 4; i++) Py_XDECREF(old[i]);
    }
#endif
    return hit;
}

static Memo reduce_memo, rooted_memo, bcast_memo; /* all_reduce's, reduce's, broadcast's */
static Memo reduce_to_memo; /* reduce's, where MPI's Ireduce makes it */

/* An all_reduce or broadcast of at least this many elements that MPI's collective makes
 * is handed back to Python, which posts its signature beside the data
 * (mpicoll/_collectives/_sizes.py, SIGNED and Signed: the same number) */
#define SIGNED (1 << 20)

/* The group rank that `global` (src=, dst=: a global rank) or `group_rank` (group_src=,
 * group_dst=) names, as mpicoll/_collectives/_validate.py's root() finds it: a borrowed
 * reference to the group's own int (its _index's value), or `group_rank` itself; NULL
 * (no error set) where either is not a plain int, both or neither are given, or the rank
 * is not in the group: Python's root() then says what is wrong. */
static PyObject *root_of(PyObject *group, PyObject *global, PyObject *group_rank) {
    if (group_rank == Py_None) {
        if (!PyLong_CheckExact(global)) return NULL;
        PyObject *index = group_get(group, G_INDEX);
        if (index == NULL) {
            PyErr_Clear();
            return NULL;
        }
        PyObject *r = PyDict_CheckExact(index) ? PyDict_GetItemWithError(index, global) : NULL;
        PyErr_Clear();
        Py_DECREF(index); /* (the group keeps the dict, and the dict its ints) */
        return r;
    }
    if (global != Py_None || !PyLong_CheckExact(group_rank)) return NULL;
    PyObject *size = group_get(group, G_SIZE);
    if (size == NULL) {
        PyErr_Clear();
        return NULL;
    }
    long r = PyLong_AsLong(group_rank), n = PyLong_AsLong(size);
    Py_DECREF(size);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return NULL;
    }
    return 0 <= r && r < n ? group_rank : NULL;
}

/* reduce(op, group, tensor, table, reduce_op, quickers, spin, left, most[, dst,
 * group_dst]): the quick path of a blocking all_reduce of `tensor` in place
 * (mpicoll/_collectives/all_reduce.py says when and what); given dst and group_dst, a
 * reduce's as messages, to the group rank they name (root_of; where it cannot say,
 * False), its entry found for (reduce_op, that rank) (mpicoll/_collectives/rooted.py).
 * The array (quick_array, writable) and `table` holding the entry `hit` the general
 * path validated for its dtype and `reduce_op`: where the group sends
 * messages (its `direct` communicator), `tensor` has 1 to `most` elements, no rank has
 * left and the group keeps the call's Plan, run here, numbered (run_plan). Returns False
 * (the general path takes the call), True (done), (hit, a) (the caller makes the call),
 * or (hit, a, None, seq, outcome), as exchange's. */
static PyObject *reduce(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 9 && nargs != 11) {
        PyErr_SetString(PyExc_TypeError, "reduce takes 9 or 11 arguments");
        return NULL;
    }
    PyObject *op = args[0], *group = args[1], *tensor = args[2], *table = args[3];
    if (!PyDict_Check(table) || !PyDict_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError, "reduce: table and quickers are dicts");
        return NULL;
    }
    PyObject *part = args[4]; /* the op (all_reduce), or (op, root) (a reduce's) */
    if (nargs == 11) { /* a reduce's dst and group_dst: its root found here */
        PyObject *root = root_of(group, args[9], args[10]); /* borrowed */
        if (root == NULL) return Py_NewRef(Py_False);
        if ((part = PyTuple_Pack(2, args[4], root)) == NULL) return NULL;
    } else {
        Py_INCREF(part);
    }
    PyObject *a = quick_array(tensor, 1, args[5]), *result = NULL;
    if (a == NULL) {
        Py_DECREF(part);
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_False);
    }
    /* (a reduce's part is (op, root), an all_reduce's the op: a memo each) */
    PyObject *hit = entry(PyTuple_CheckExact(part) ? &rooted_memo : &reduce_memo, table,
                          (PyObject *)PyArray_DESCR((PyArrayObject *)a), part); /* borrowed */
    Py_DECREF(part); /* (the memo keeps its own) */
    if (hit == NULL) {
        if (!PyErr_Occurred()) result = Py_NewRef(Py_False);
        goto out;
    }
    Py_INCREF(hit);
    Py_ssize_t size = PyArray_SIZE((PyArrayObject *)a), most = PyLong_AsSsize_t(args[8]);
    long spin = PyLong_AsLong(args[6]);
    int left = PyObject_IsTrue(args[7]);
    if (PyErr_Occurred() || left < 0) goto hit_out;
    if (!left && as_messages(op, group, hit, a, most, spin, tensor, &result) != 0)
        goto hit_out; /* (run, handed back, or an error) */
    if (!left && size < SIGNED && PyTuple_Check(hit) && PyTuple_GET_SIZE(hit) == 2)
        result = mpi_call(ALLREDUCE, op, group, hit, a, spin); /* MPI's Iallreduce in place */
    else
        result = PyTuple_Pack(2, hit, a);
hit_out:
    Py_DECREF(hit);
out:
    Py_DECREF(a);
    return result;
}

/* reduce_to(op, group, tensor, table, reduce_op, dst, group_dst, quickers, spin, left,
 * fewest): the quick path of a blocking reduce of `tensor` to the group rank `dst`
 * (global) or `group_dst` names (root_of; where it cannot say, False) that MPI's Ireduce
 * makes: a group that sends no messages (fewest -1), or more than `fewest` elements, the
 * most its messages take (mpicoll/_collectives/rooted.py says when; False for fewer).
 * The array (quick_array, writable on the root only) and `table` (all_reduce's) holding
 * the entry `hit` = (MPI datatype, MPI op) the general path validated for its dtype and
 * `reduce_op`. MPI's Ireduce, numbered (whatever happens next), recorded, waited on.
 * Returns False (the general path takes
 * the call), True (done), (hit, a) (a rank has left, or a signature goes beside the
 * data: the caller makes the call), or (hit, a, error) where MPI raised (the caller
 * explains it). */
/* The arguments mpi_call takes for a reduce of entry `hit` (datatype, op) to `root` (a
 * new reference): (datatype, (op, root)), the last one made given again while the entry
 * and the root are the same (a loop's reduces to one root make it once) */
static PyObject *reduce_call(PyObject *hit, PyObject *root) {
    static PyObject *last_hit = NULL, *last_root = NULL, *last_call = NULL;
    if (hit == last_hit && root == last_root) return Py_NewRef(last_call);
    PyObject *call = tuple_of(2, Py_NewRef(PyTuple_GET_ITEM(hit, 0)),
                              PyTuple_Pack(2, PyTuple_GET_ITEM(hit, 1), root));
    if (call == NULL) return NULL;
    /* (held: neither address can be another object's while it is compared) */
    Py_XSETREF(last_hit, Py_NewRef(hit));
    Py_XSETREF(last_root, Py_NewRef(root));
    Py_XSETREF(last_call, Py_NewRef(call));
    return call;
}

static PyObject *reduce_to(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 11) {
        PyErr_SetString(PyExc_TypeError, "reduce_to takes 11 arguments");
        return NULL;
    }
    PyObject *op = args[0], *group = args[1], *tensor = args[2], *table = args[3];
    PyObject *reduce_op = args[4], *quickers = args[7];
    if (!PyDict_Check(table) || !PyDict_Check(quickers)) {
        PyErr_SetString(PyExc_TypeError, "reduce_to: table and quickers are dicts");
        return NULL;
    }
    PyObject *root = root_of(group, args[5], args[6]); /* borrowed */
    if (root == NULL) return Py_NewRef(Py_False);
    PyObject *me = group_get(group, G_RANK);
    if (me == NULL) return NULL;
    int is_root = PyObject_RichCompareBool(me, root, Py_EQ);
    Py_DECREF(me);
    Py_ssize_t fewest = PyLong_AsSsize_t(args[10]);
    if (is_root < 0 || PyErr_Occurred()) return NULL;
    PyObject *a = quick_array(tensor, is_root, quickers), *result = NULL;
    if (a == NULL) return PyErr_Occurred() ? NULL : Py_NewRef(Py_False);
    PyObject *hit = entry(&reduce_to_memo, table, (PyObject *)PyArray_DESCR((PyArrayObject *)a),
                          reduce_op); /* borrowed */
    if (hit == NULL || !PyTuple_Check(hit) || PyTuple_GET_SIZE(hit) != 2) {
        if (!PyErr_Occurred()) result = Py_NewRef(Py_False);
        goto out;
    }
    Py_INCREF(hit);
    Py_ssize_t size = PyArray_SIZE((PyArrayObject *)a);
    long spin = PyLong_AsLong(args[8]);
    int left = PyObject_IsTrue(args[9]);
    if (PyErr_Occurred() || left < 0) goto hit_out;
    if (size <= fewest) { /* (messages take it, on the group that sends them) */
        result = Py_NewRef(Py_False);
        goto hit_out;
    }
    if (left || size >= SIGNED || size > INT_MAX) {
        result = PyTuple_Pack(2, hit, a);
        goto hit_out;
    }
    PyObject *call = reduce_call(hit, root);
    if (call == NULL) goto hit_out;
    result = mpi_call(REDUCE, op, group, call, a, spin);
    if (result != NULL && PyTuple_Check(result)) { /* (MPI raised: the caller's hit) */
        PyObject *e = Py_NewRef(PyTuple_GET_ITEM(result, 2));
        Py_SETREF(result, PyTuple_Pack(3, hit, a, e));
        Py_DECREF(e);
    }
    Py_DECREF(call);
hit_out:
    Py_DECREF(hit);
out:
    Py_DECREF(a);
    return result;
}

/* bcast(op, group, tensor, src, group_src, table, quickers, spin, left, most): the quick
 * path of a blocking broadcast of `tensor` from the group rank `src` (global) or
 * `group_src` names (root_of; where it cannot say, False: Python's general path says what
 * is wrong) (mpicoll/_collectives/rooted.py says when and what): the array
 * (quick_array, writable) and `table` holding the entry `hit` = (MPI datatype, root) the
 * general path validated for its dtype and root. Where
 * the group sends messages (its `direct` communicator) and `tensor` has 1 to `most`
 * elements, the group's kept Plan of it run here, numbered (run_plan); else MPI's
 * Ibcast, numbered (whatever happens next), recorded. Returns False (the general path
 * takes the call), True (done), (hit, a) (a rank has left, or no Plan is kept yet: the
 * caller makes the call), (hit, a, error) where MPI's Ibcast raised (the caller explains
 * it), or (hit, a, None, seq, outcome) where the Plan's run did not finish (as
 * exchange's). */
static PyObject *bcast(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 10) {
        PyErr_SetString(PyExc_TypeError, "bcast takes 10 arguments");
        return NULL;
    }
    PyObject *op = args[0], *group = args[1], *tensor = args[2], *table = args[5];
    PyObject *quickers = args[6];
    if (!PyDict_Check(table) || !PyDict_Check(quickers)) {
        PyErr_SetString(PyExc_TypeError, "bcast: table and quickers are dicts");
        return NULL;
    }
    PyObject *root = root_of(group, args[3], args[4]); /* borrowed */
    if (root == NULL) return Py_NewRef(Py_False);
    PyObject *a = quick_array(tensor, 1, quickers), *result = NULL, *hit = NULL;
    if (a == NULL) return PyErr_Occurred() ? NULL : Py_NewRef(Py_False);
    Py_ssize_t size = PyArray_SIZE((PyArrayObject *)a);
    if (size <= INT_MAX)
        hit = entry(&bcast_memo, table, (PyObject *)PyArray_DESCR((PyArrayObject *)a),
                    root); /* borrowed */
    if (hit == NULL || !PyTuple_Check(hit) || PyTuple_GET_SIZE(hit) != 2) {
        if (!PyErr_Occurred()) result = Py_NewRef(Py_False);
        goto out;
    }
    Py_INCREF(hit);
    long spin = PyLong_AsLong(args[7]);
    int left = PyObject_IsTrue(args[8]);
    Py_ssize_t most = PyLong_AsSsize_t(args[9]);
    if (PyErr_Occurred() || left < 0) goto hit_out;
    if (!left && as_messages(op, group, hit, a, most, spin, tensor, &result) != 0)
        goto hit_out; /* (run, handed back, or an error) */
    result = left || size >= SIGNED ? PyTuple_Pack(2, hit, a)
                                    : mpi_call(BCAST, op, group, hit, a, spin);
hit_out:
    Py_DECREF(hit);
out:
    Py_DECREF(a);
    return result;
}

/* A list's Layout: a tuple whose items are also named, the fields of
 * mpicoll/_collectives/_layout.py's Layout (Python reads them by name, the core by index:
 * LAY). A tuple subclass of its own rather than a struct sequence, which looks up its
 * field counts in its type's dict each time one is made and freed (about 540
 * instructions a list call). */
enum { L_READ_ONLY, L_DTYPE, L_START, L_END, L_COUNTS, L_ADDRESSES, L_ARRAYS, L_END_TO_END,
       L_FIELDS };
static const char *layout_names[L_FIELDS] = {"read_only", "dtype", "start", "end", "counts",
                                             "addresses", "arrays", "end_to_end"};

/* (made only by the core, always of L_FIELDS items: its getters read them unchecked) */
static PyObject *layout_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    (void)type, (void)args, (void)kw;
    PyErr_SetString(PyExc_TypeError, "mpicoll._core.Layout is made by the core only");
    return NULL;
}

static PyObject *layout_field(PyObject *self, void *at) {
    return Py_NewRef(PyTuple_GET_ITEM(self, (Py_ssize_t)(intptr_t)at));
}

#define LAYOUT_FIELD(i, doc) {NULL, layout_field, NULL, doc, (void *)(intptr_t)(i)}
static PyGetSetDef layout_getset[] = {
    LAYOUT_FIELD(L_READ_ONLY, "whether the list is only read"),
    LAYOUT_FIELD(L_DTYPE, "the tensors' numpy dtype"),
    LAYOUT_FIELD(L_START, "the lowest address of a tensor's memory"),
    LAYOUT_FIELD(L_END, "the highest address past a tensor's memory"),
    LAYOUT_FIELD(L_COUNTS, "each tensor's number of elements (a list)"),
    LAYOUT_FIELD(L_ADDRESSES, "each tensor's address, -1 where it is empty (a list)"),
    LAYOUT_FIELD(L_ARRAYS, "each tensor's numpy array (a list)"),
    LAYOUT_FIELD(L_END_TO_END, "whether the tensors lie end to end in list order "
                               "(x.chunk(n))"),
    {NULL}};

static PyTypeObject LayoutType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mpicoll._core.Layout",
    .tp_basicsize = sizeof(PyTupleObject) - sizeof(PyObject *),
    .tp_itemsize = sizeof(PyObject *),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_TUPLE_SUBCLASS,
    .tp_doc = "Where a list's tensors lie (mpicoll/_collectives/_layout.py)",
    .tp_getset = layout_getset,
    .tp_new = layout_new,
};

/* The type made ready, its fields named as a NamedTuple's (_fields, __match_args__). */
static int layout_ready(void) {
    for (int i = 0; i < L_FIELDS; i++) layout_getset[i].name = layout_names[i];
    LayoutType.tp_base = &PyTuple_Type;
    if (PyType_Ready(&LayoutType) < 0) return -1;
    PyObject *names = PyTuple_New(L_FIELDS);
    if (names == NULL) return -1;
    for (int i = 0; i < L_FIELDS; i++) {
        PyObject *name = PyUnicode_InternFromString(layout_names[i]);
        if (name == NULL) {
            Py_DECREF(names);
            return -1;
        }
        PyTuple_SET_ITEM(names, i, name);
    }
    int bad = PyDict_SetItemString(LayoutType.tp_dict, "_fields", names) < 0 ||
              PyDict_SetItemString(LayoutType.tp_dict, "__match_args__", names) < 0;
    Py_DECREF(names);
    PyType_Modified(&LayoutType);
    return bad ? -1 : 0;
}

#define LAY(lay, field) PyTuple_GET_ITEM(lay, field)

/* Where a list's tensors lie, as mpicoll/_collectives/_layout.py's layout() makes it
 * (the same rules, the same Layout; Python's is the path without the core):
 * layout(xs, writable, quickers, most) with xs a list or tuple, returns its Layout, or
 * None where the quick path does not serve the list: a tensor that is not a C-contiguous
 * numpy array (aligned and writable where `writable`) or a quick view (`quickers`),
 * dtypes that differ, no element at all, tensors not a whole number of elements apart, a
 * span of more than `most` elements, or written tensors that share memory. */
typedef struct {
    long long lo, hi;
} Piece;

static int by_start(const void *a, const void *b) {
    long long x = ((const Piece *)a)->lo, y = ((const Piece *)b)->lo;
    return (x > y) - (x < y);
}

static PyObject *layout_of(PyObject *xs, int writable, PyObject *quickers, long long most) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(xs);
    PyObject **items = PySequence_Fast_ITEMS(xs);
    PyObject *arrays = PyList_New(n), *counts = PyList_New(n), *addrs = PyList_New(n);
    PyObject *result = NULL;
    Piece *pieces = NULL;
    if (arrays == NULL || counts == NULL || addrs == NULL) goto out;
    PyArray_Descr *dtype = NULL;
    long long size = 0, start = -1, prev = -1, first = -1, end = 0;
    int adjacent = 1, ascending = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = quick_array(items[i], writable, quickers);
        if (a == NULL) {
            if (PyErr_Occurred()) goto out;
            goto none;
        }
        PyList_SET_ITEM(arrays, i, a); /* (stolen: freed with the list) */
        PyArray_Descr *d = PyArray_DESCR((PyArrayObject *)a);
        if (d != dtype) {
            if (dtype == NULL) {
                dtype = d;
                size = PyDataType_ELSIZE(d);
            } else if (!PyArray_EquivTypes(d, dtype)) {
                goto none;
            }
        }
        Py_ssize_t count = PyArray_SIZE((PyArrayObject *)a);
        long long nbytes = (long long)PyArray_NBYTES((PyArrayObject *)a);
        long long addr = nbytes ? (long long)(intptr_t)PyArray_DATA((PyArrayObject *)a) : -1;
        PyObject *c = PyLong_FromSsize_t(count), *at = PyLong_FromLongLong(addr);
        if (c == NULL || at == NULL) {
            Py_XDECREF(c);
            Py_XDECREF(at);
            goto out;
        }
        PyList_SET_ITEM(counts, i, c);
        PyList_SET_ITEM(addrs, i, at);
        if (!nbytes) continue;
        if (addr != prev) {
            if (start < 0) {
                start = first = addr;
            } else {
                adjacent = 0;
                if (size == 0 || (addr - first) % size) goto none; /* (not whole elements) */
                if (addr < prev) {
                    ascending = 0;
                    if (addr < start) start = addr;
                }
            }
        }
        prev = addr + nbytes;
        if (prev > end) end = prev;
    }
    if (start < 0 || (end - start) / size > most) goto none;
    if (!adjacent && writable && !ascending) { /* written tensors must be apart */
        pieces = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(Piece));
        if (pieces == NULL) {
            PyErr_NoMemory();
            goto out;
        }
        Py_ssize_t k = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyArrayObject *a = (PyArrayObject *)PyList_GET_ITEM(arrays, i);
            long long nbytes = (long long)PyArray_NBYTES(a);
            if (!nbytes) continue;
            long long lo = (long long)(intptr_t)PyArray_DATA(a);
            pieces[k].lo = lo;
            pieces[k++].hi = lo + nbytes;
        }
        qsort(pieces, (size_t)k, sizeof(Piece), by_start);
        for (Py_ssize_t i = 1; i < k; i++)
            if (pieces[i - 1].hi > pieces[i].lo) goto none;
    }
    PyObject *lo = PyLong_FromLongLong(start), *hi = PyLong_FromLongLong(end);
    if (lo == NULL || hi == NULL ||
        (result = LayoutType.tp_alloc(&LayoutType, L_FIELDS)) == NULL) {
        Py_XDECREF(lo);
        Py_XDECREF(hi);
        goto out;
    }
    PyObject *fields[L_FIELDS] = {Py_NewRef(writable ? Py_False : Py_True),
                                  Py_NewRef((PyObject *)dtype), lo, hi, Py_NewRef(counts),
                                  Py_NewRef(addrs), Py_NewRef(arrays),
                                  Py_NewRef(adjacent ? Py_True : Py_False)};
    for (int i = 0; i < L_FIELDS; i++) PyTuple_SET_ITEM(result, i, fields[i]);
    goto out;
none:
    result = Py_NewRef(Py_None);
out:
    PyMem_Free(pieces);
    Py_XDECREF(arrays);
    Py_XDECREF(counts);
    Py_XDECREF(addrs);
    return result;
}

static PyObject *layout(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 4 || !(PyList_Check(args[0]) || PyTuple_Check(args[0])) ||
        !PyDict_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "layout(xs, writable, quickers, most): xs a list "
                                         "or tuple, quickers a dict");
        return NULL;
    }
    int writable = PyObject_IsTrue(args[1]);
    long long most = PyLong_AsLongLong(args[3]);
    if (writable < 0 || (most == -1 && PyErr_Occurred())) return NULL;
    return layout_of(args[0], writable, args[2], most);
}

/* The group's kept Plan of quick entry `hit` on `first` and `second`, run here
 * (run_kept_here) where the group sends messages (its `direct` communicator) and no rank
 * has left (`left`): run_kept_here's result, or False where the call is not messages or
 * no Plan is kept (the caller makes the call). listed_in's, lists', rooted's. */
/* Whether the group sends messages of its own (its `direct` communicator): 1, 0, or -1
 * with an error */
static int sends_messages(PyObject *group) {
    PyObject *direct = group_get(group, G_DIRECT);
    if (direct == NULL) return -1;
    int messages_go = direct != Py_None;
    Py_DECREF(direct);
    return messages_go;
}

static PyObject *kept_messages(PyObject *op, PyObject *group, PyObject *hit, PyObject *first,
                               PyObject *second, long spin, PyObject *keep, int left) {
    if (left) Py_RETURN_FALSE;
    int messages_go = sends_messages(group);
    if (messages_go <= 0) return messages_go < 0 ? NULL : Py_NewRef(Py_False);
    return run_kept_here(op, group, hit, first, second, spin, keep);
}

/* The displacements of a list's tensors from where it starts (layout_of's: `lay`), in
 * elements of `itemsize` bytes; an empty tensor's (address -1) 0 (_layout.displs). */
static int displs_into(PyObject *lay, int n, Py_ssize_t itemsize, int *out) {
    PyObject *addrs = LAY(lay, L_ADDRESSES);
    long long start = PyLong_AsLongLong(LAY(lay, L_START));
    if (PyErr_Occurred()) return -1;
    if (!PyList_Check(addrs) || PyList_GET_SIZE(addrs) != n || itemsize <= 0) {
        PyErr_SetString(PyExc_TypeError, "a layout's addresses: one a rank");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        long long a = PyLong_AsLongLong(PyList_GET_ITEM(addrs, i));
        if (a == -1 && PyErr_Occurred()) return -1;
        long long d = a >= 0 ? (a - start) / itemsize : 0;
        if (d < 0 || d > INT_MAX) {
            PyErr_SetString(PyExc_OverflowError, "a list's displacements: outside an int");
            return -1;
        }
        out[i] = (int)d;
    }
    return 0;
}

/* A list's buffer for a v-collective: where it starts, and (counts, displacements) into
 * v's `counts`, `displs`: the entry's pair `given` where the list's tensors lie end to end
 * (their sizes are the entry's), else its layout's counts and displacements. */
static int list_into(PyObject *lay, PyObject *given, int n, int *counts, int *displs,
                     void **at) {
    long long start = PyLong_AsLongLong(LAY(lay, L_START));
    if (start == -1 && PyErr_Occurred()) return -1;
    *at = (void *)(intptr_t)start;
    if (LAY(lay, L_END_TO_END) == Py_True && given != NULL)
        return pair_into(given, n, counts, displs);
    Py_ssize_t itemsize = PyDataType_ELSIZE((PyArray_Descr *)LAY(lay, L_DTYPE));
    return ints_into(LAY(lay, L_COUNTS), n, counts) < 0 ? -1
        : displs_into(lay, n, itemsize, displs);
}

/* Whether none of the arrays in the list `arrays` shares memory with [lo, hi). */
#define APART_ASKED 32 /* (n * n pairs: 1,024 at most, a microsecond) */
static int pieces_apart(PyObject *arrays, long long lo, long long hi) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(arrays); i++) {
        PyArrayObject *x = (PyArrayObject *)PyList_GET_ITEM(arrays, i);
        long long b = (long long)(intptr_t)PyArray_DATA(x), e = b + PyArray_NBYTES(x);
        if (e > b && b < hi && lo < e) return 0;
    }
    return 1;
}

/* all_to_all's lists (layouts `outl`, `inl`, apart) as MPI's Alltoallv, quick entry `hit` =
 * ("Ialltoallv", (send counts, displacements), (receive ...), datatype, None, sizes): `v`
 * made for vcall_run, with the record's arguments in *meta (a new reference; NULL where
 * nothing is recorded) and the elements received in *count. 0, or -1 with an error (v
 * released). */
static int lists_v_make(PyObject *hit, PyObject *outl, PyObject *inl, int n, VCall *v,
                        PyObject **meta, long long *count) {
    PyObject *dtobj = PyTuple_GET_ITEM(hit, 3);
    PyObject *sgiven = PyTuple_GET_ITEM(hit, 1), *rgiven = PyTuple_GET_ITEM(hit, 2);
    MPI_Datatype *dt = PyMPIDatatype_Get(dtobj);
    if (dt == NULL) return -1;
    if (!PyTuple_Check(sgiven) || PyTuple_GET_SIZE(sgiven) != 2 || !PyTuple_Check(rgiven) ||
        PyTuple_GET_SIZE(rgiven) != 2) {
        PyErr_SetString(PyExc_TypeError, "lists: an Alltoallv entry's (counts, displacements)");
        return -1;
    }
    *meta = NULL;
    if (vcall_new(v, V_ALLTOALLV, *dt, n) < 0) return -1;
    /* (as the Python path: the entry's displacements where both lists lie end to end,
     * else each list's own) */
    int both = LAY(inl, L_END_TO_END) == Py_True && LAY(outl, L_END_TO_END) == Py_True;
    if (list_into(inl, both ? sgiven : NULL, n, v->sc, v->sd, &v->sb) < 0 ||
        list_into(outl, both ? rgiven : NULL, n, v->rc, v->rd, &v->rb) < 0)
        goto fail;
    *count = 0;
    for (int i = 0; i < n; i++) *count += v->rc[i];
    if (capacity > 0 &&
        (*meta = tuple_of(3, v_spec(both ? sgiven : NULL, PyTuple_GET_ITEM(sgiven, 0), v->sd,
                                    n, dtobj),
                          v_spec(both ? rgiven : NULL, PyTuple_GET_ITEM(rgiven, 0), v->rd, n,
                                 dtobj),
                          PyTuple_New(0))) == NULL)
        goto fail;
    return 0;
fail:
    vcall_done(v);
    return -1;
}

/* listed_in's MPI collective, where the core makes it: all_gather's list (`writes`,
 * entry ("Iallgather" or "Iallgatherv", None, the receive count or (counts,
 * displacements), datatype, None, sizes)) from the array `a` into the list of layout
 * `lay`, or reduce_scatter's list (entry ("Ireduce_scatter_block" or "Ireduce_scatter",
 * the count or the counts, datatype, op, sizes)) into `a`, its tensors packed end to end
 * (into v->packed) where they lie apart, as the Python path's pack: `v` made
 * for vcall_run (all_gather's: v->kind V_ALLGATHER or V_ALLGATHERV), with the record's
 * arguments in *meta (a new reference, or NULL) and the elements received in *count.
 * 1 (made), 0 (another entry: the caller makes the call), or -1 with an error. */
static int listed_v_make(PyObject *hit, PyArrayObject *a, PyObject *lay, int n, int writes,
                         VCall *v, PyObject **meta, long long *count) {
    Py_ssize_t size = PyTuple_Check(hit) ? PyTuple_GET_SIZE(hit) : 0;
    int kind = size ? vmethod_kind(PyTuple_GET_ITEM(hit, 0)) : -1;
    int gathers = writes && size == 6 && (kind == V_ALLGATHER || kind == V_ALLGATHERV) &&
        PyTuple_GET_ITEM(hit, 1) == Py_None && PyTuple_GET_ITEM(hit, 4) == Py_None;
    int scatters = !writes && size == 5 &&
        (kind == V_REDUCE_SCATTER_BLOCK || kind == V_REDUCE_SCATTER);
    if (!gathers && !scatters) return 0;
    if (PyArray_SIZE(a) > INT_MAX) return 0;
    PyObject *dtobj = PyTuple_GET_ITEM(hit, gathers ? 3 : 2);
    PyObject *given = PyTuple_GET_ITEM(hit, gathers ? 2 : 1);
    MPI_Datatype *dt = PyMPIDatatype_Get(dtobj);
    if (dt == NULL) return -1;
    *meta = NULL;
    if (vcall_new(v, kind, *dt, n) < 0) return -1;
    *count = PyArray_SIZE(a);
    if (gathers) { /* [a, a.size, dt] into the list: as the entry says where it lies end
                    * to end, else by its counts and displacements */
        int adjacent = LAY(lay, L_END_TO_END) == Py_True;
        v->sb = PyArray_DATA(a);
        v->scount = (int)PyArray_SIZE(a);
        if (adjacent && kind == V_ALLGATHER) {
            long c = PyLong_AsLong(given);
            if (c == -1 && PyErr_Occurred()) goto fail;
            v->rcount = (int)c;
            *count = (long long)c * n;
            long long start = PyLong_AsLongLong(LAY(lay, L_START));
            if (start == -1 && PyErr_Occurred()) goto fail;
            v->rb = (void *)(intptr_t)start;
        } else {
            v->kind = V_ALLGATHERV;
            if (list_into(lay, adjacent ? given : NULL, n, v->rc, v->rd, &v->rb) < 0) goto fail;
            *count = 0;
            for (int i = 0; i < n; i++) *count += v->rc[i];
        }
        if (capacity > 0) {
            PyObject *rspec = v->kind == V_ALLGATHER || adjacent
                ? PyTuple_Pack(2, given, dtobj)
                : v_spec(NULL, LAY(lay, L_COUNTS), v->rd, n, dtobj);
            *meta = tuple_of(3, Py_BuildValue("(nO)", PyArray_SIZE(a), dtobj), rspec,
                             PyTuple_New(0));
            if (*meta == NULL) goto fail;
        }
    } else { /* the list's area, end to end (packed where its tensors lie apart), reduced
              * and scattered into a */
        MPI_Op *mop = PyMPIOp_Get(PyTuple_GET_ITEM(hit, 3));
        if (mop == NULL) goto fail;
        v->op = *mop;
        if (LAY(lay, L_END_TO_END) == Py_True) {
            long long start = PyLong_AsLongLong(LAY(lay, L_START));
            if (start == -1 && PyErr_Occurred()) goto fail;
            v->sb = (void *)(intptr_t)start;
        } else {
            PyObject *arrays = LAY(lay, L_ARRAYS);
            Py_ssize_t total = 0;
            for (Py_ssize_t i = 0; i < PyList_GET_SIZE(arrays); i++)
                total += PyArray_NBYTES((PyArrayObject *)PyList_GET_ITEM(arrays, i));
            if ((v->packed = PyBytes_FromStringAndSize(NULL, total)) == NULL) goto fail;
            char *at = PyBytes_AS_STRING(v->packed);
            for (Py_ssize_t i = 0; i < PyList_GET_SIZE(arrays); i++) {
                PyArrayObject *x = (PyArrayObject *)PyList_GET_ITEM(arrays, i);
                if (PyArray_NBYTES(x) > 0)
                    memcpy(at, PyArray_DATA(x), (size_t)PyArray_NBYTES(x));
                at += PyArray_NBYTES(x);
            }
            v->sb = PyBytes_AS_STRING(v->packed);
        }
        v->rb = PyArray_DATA(a);
        if (kind == V_REDUCE_SCATTER_BLOCK) {
            long c = PyLong_AsLong(given);
            if (c == -1 && PyErr_Occurred()) goto fail;
            v->rcount = (int)c;
        } else if (ints_into(given, n, v->rc) < 0) {
            goto fail;
        }
        if (capacity > 0) { /* (as _recorder.kept keeps the Python path's arguments) */
            PyObject *mpi_op = PyTuple_GET_ITEM(hit, 3);
            *meta = kind == V_REDUCE_SCATTER_BLOCK
                ? tuple_of(3, PyTuple_Pack(2, given, dtobj), PyTuple_Pack(2, given, dtobj),
                           PyTuple_Pack(1, mpi_op))
                : tuple_of(3, PyTuple_Pack(2, Py_None, dtobj),
                           Py_BuildValue("(nO)", PyArray_SIZE(a), dtobj),
                           PyTuple_Pack(2, given, mpi_op));
            if (*meta == NULL) goto fail;
        }
    }
    return 1;
fail:
    vcall_done(v);
    return -1;
}

/* `to` made a copy of the v-collective `from` (its arrays in vcall_room's room): 0, or -1
 * with an error. */
static int vcall_copy(VCall *to, const VCall *from) {
    if (vcall_new(to, from->kind, from->dt, from->n) < 0) return -1;
    to->root = from->root, to->sb = from->sb, to->rb = from->rb;
    to->scount = from->scount, to->rcount = from->rcount, to->op = from->op;
    memcpy(to->sc, from->sc, sizeof(int) * 4 * (size_t)from->n); /* (sc, sd, rc, rd: one
                                                                   * block, in that order) */
    return 0;
}

/* The quick path's memos of lists, as entry()'s are of one tensor (CPython 3.11, where a
 * dict's version tag says it has not changed): what the last call of all_to_all's lists
 * (lists_memo), and of each of all_gather's, reduce_scatter's, gather's and scatter's
 * lists (listed_memos), made, so that the same call again runs without its layouts, key
 * and MPI arguments made anew (about 4,000 instructions a call). The same call is: the
 * same table, unchanged since its entry was found; the same group size and rank (and
 * head, where the root is named); and the same tensors in the same
 * places, each taken as the quick path takes it (quick_array: contiguous, writable where
 * written), of the same dtype descriptor, at the same address and of the same number of
 * elements, in the same order. A layout, its key, the entry, whether the tensors are
 * apart, and the call's counts, displacements and buffers are made of nothing else, so a
 * call that matches is the call remembered. The tensors are not held: another tensor at
 * the same address, of the same dtype and size, is the same call.
 *
 * A list as a memo saw it: how many tensors, their dtype (the descriptor object, held),
 * and each one's address, then each one's number of elements (n of each, PyMem). */
typedef struct {
    Py_ssize_t n;
    PyObject *descr;
    long long *seen;
} ListSeen;

static void list_seen_clear(ListSeen *s) {
    Py_CLEAR(s->descr);
    PyMem_Free(s->seen);
    s->seen = NULL;
    s->n = 0;
}

/* `s` made to hold the arrays of layout `lay` (layout_of's): 1; 0 where they are not all
 * of one descriptor object (not remembered); -1 with an error. */
static int list_seen_fill(ListSeen *s, PyObject *lay) {
    PyObject *arrays = LAY(lay, L_ARRAYS), *descr = LAY(lay, L_DTYPE);
    Py_ssize_t n = PyList_GET_SIZE(arrays);
    long long *seen = PyMem_Malloc(sizeof(long long) * 2 * (size_t)(n ? n : 1));
    if (seen == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyArrayObject *a = (PyArrayObject *)PyList_GET_ITEM(arrays, i);
        if ((PyObject *)PyArray_DESCR(a) != descr) {
            PyMem_Free(seen);
            return 0;
        }
        seen[i] = (long long)(intptr_t)PyArray_DATA(a);
        seen[n + i] = (long long)PyArray_SIZE(a);
    }
    list_seen_clear(s);
    s->n = n;
    s->descr = Py_NewRef(descr);
    s->seen = seen;
    return 1;
}

/* Whether the list `xs` is the one `s` saw (above), its tensors taken by quick_array
 * (`writable` where the call writes them): 1; 0 where it is not, or where the memo was
 * filled anew meanwhile (*fills no longer `was`: a hook's quick may run Python code, and
 * other threads with it); -1 with an error. Where `at` >= 0, tensor at's array is handed
 * back in *kept (a new reference; NULL unless 1 is returned). */
static int list_seen_same(const ListSeen *s, PyObject *xs, int writable, PyObject *quickers,
                          const unsigned long *fills, unsigned long was, Py_ssize_t at,
                          PyObject **kept) {
    Py_ssize_t n = s->n;
    if (PySequence_Fast_GET_SIZE(xs) != n) return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = Py_NewRef(PySequence_Fast_GET_ITEM(xs, i));
        PyObject *a = quick_array(item, writable, quickers);
        Py_DECREF(item);
        if (a == NULL) {
            if (at >= 0) Py_CLEAR(*kept);
            return PyErr_Occurred() ? -1 : 0;
        }
        PyArrayObject *x = (PyArrayObject *)a;
        int same = *fills == was && PySequence_Fast_GET_SIZE(xs) == n &&
            (PyObject *)PyArray_DESCR(x) == s->descr &&
            (long long)(intptr_t)PyArray_DATA(x) == s->seen[i] &&
            (long long)PyArray_SIZE(x) == s->seen[n + i];
        if (same && i == at) {
            *kept = a;
        } else {
            Py_DECREF(a);
        }
        if (!same) {
            if (at >= 0) Py_CLEAR(*kept);
            return 0;
        }
    }
    return 1;
}

/* A v-collective's outcome that vcall_run handed back with None for the layout at item
 * `i` (a memo's run, which made none), given the layout of `xs` (layout_of's, as the call
 * took it) for the Python side, which words the outcome with it. True and False pass
 * through, and so does NULL. This cannot fail: the outcome may hold the only references
 * to a request still running and the buffers it reads, which must reach the Python side
 * (a layout that cannot be made is left None, its error cleared: the wording then names
 * no tensors). */
static PyObject *laid(PyObject *result, Py_ssize_t i, PyObject *xs, int writable,
                      PyObject *quickers) {
    if (result == NULL || !PyTuple_CheckExact(result) || PyTuple_GET_SIZE(result) <= i ||
        PyTuple_GET_ITEM(result, i) != Py_None)
        return result;
    PyObject *lay = layout_of(xs, writable, quickers, INT_MAX); /* (no error is set here) */
    PyObject *t = lay == NULL || lay == Py_None ? NULL : PyTuple_New(PyTuple_GET_SIZE(result));
    if (t != NULL) {
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(result); k++)
            PyTuple_SET_ITEM(t, k, Py_NewRef(k == i ? lay : PyTuple_GET_ITEM(result, k)));
        Py_SETREF(result, t);
    }
    Py_XDECREF(lay);
    PyErr_Clear();
    return result;
}

/* A call as a memo remembers it (the part ListsMemo and ListedMemo share): the entry
 * `hit` of `table`, found at the table's version `version`, on a group of `n` ranks;
 * made as the group's kept Plan of direct messages (`direct`: the memo holds its key
 * parts) or as MPI's v-collective `v`, with its record's `meta` and the `count` of
 * elements it receives. */
typedef struct {
    PyObject *table, *hit, *meta; /* held; table NULL: nothing remembered */
    uint64_t version;
    unsigned long fills; /* how many times filled or forgotten */
    Py_ssize_t n;
    int direct;
    VCall v;
    long long count;
} Remembered;

static void remembered_forget(Remembered *r) {
    PyObject *old[3] = {r->table, r->hit, r->meta};
    r->fills++;
    r->table = r->hit = r->meta = NULL;
    vcall_done(&r->v);
    r->v = (VCall){0};
    for (int i = 0; i < 3; i++) Py_XDECREF(old[i]);
}

/* `r` set to remember the call (as Remembered says; v NULL: direct messages): 0, or -1
 * with an error (r left forgotten) */
static int remembered_set(Remembered *r, PyObject *table, uint64_t version, Py_ssize_t n,
                          PyObject *hit, const VCall *v, PyObject *meta, long long count) {
    if (v != NULL && vcall_copy(&r->v, v) < 0) return -1;
    r->hit = Py_NewRef(hit);
    r->meta = Py_XNewRef(meta);
    r->direct = v == NULL;
    r->version = version;
    r->n = n;
    r->count = count;
    r->table = Py_NewRef(table);
    return 0;
}

#ifdef DICT_VERSIONS
/* Whether `r` may hold the call on `table` for a group of `n` ranks: it remembers one
 * there, the table has not changed since, and a record's arguments are at hand where
 * the recorder is on */
static int remembered_for(const Remembered *r, PyObject *table, Py_ssize_t n) {
    return r->table == table && r->n == n &&
        ((PyDictObject *)table)->ma_version_tag == r->version &&
        !(capacity > 0 && !r->direct && r->meta == NULL);
}
#endif

/* The v-collective `r` remembers, run again (vcall_run) with its entry's datatype and
 * Sizes at hit[dt_at] and hit[sizes_at], keeping `keep_a` and `keep_b`; `first` and
 * `second` as vcall_run hands them back (None: a layout, given by laid()). `hit` is held
 * by the caller: while the call waits, another thread may fill the memo anew. */
static PyObject *remembered_run(const Remembered *r, PyObject *hit, Py_ssize_t dt_at,
                                Py_ssize_t sizes_at, PyObject *op, PyObject *group,
                                long spin, PyObject *keep_a, PyObject *keep_b,
                                PyObject *first, PyObject *second) {
    VCall v;
    long long count = r->count;
    if (capacity > 0 && r->meta == NULL) /* (the recorder turned on since: made anew) */
        Py_RETURN_FALSE;
    PyObject *meta = capacity > 0 ? Py_NewRef(r->meta) : NULL;
    if (vcall_copy(&v, &r->v) < 0) {
        Py_XDECREF(meta);
        return NULL;
    }
    return vcall_run(&v, op, group, PyTuple_GET_ITEM(hit, dt_at), meta, count, spin, keep_a,
                     keep_b, hit, first, second, PyTuple_GET_ITEM(hit, sizes_at));
}

/* all_to_all's lists as the last call lists() made of them left them: the call, on this
 * `rank`, the kept Plan's key parts s_at and r_at where it is direct messages, and the
 * two lists. */
typedef struct {
    Remembered r;
    PyObject *s_at, *r_at; /* held */
    Py_ssize_t rank;
    ListSeen outs, ins;
} ListsMemo;

static ListsMemo lists_memo;

static void lists_forget(ListsMemo *m) {
    PyObject *old[2] = {m->s_at, m->r_at};
    remembered_forget(&m->r);
    m->s_at = m->r_at = NULL;
    list_seen_clear(&m->outs);
    list_seen_clear(&m->ins);
    for (int i = 0; i < 2; i++) Py_XDECREF(old[i]);
}

/* What lists() made of a call remembered (lists_memo): as Remembered says, on this
 * `rank`, for lists of layouts `outl` and `inl`, with the kept Plan's key parts s_at and
 * r_at where v is NULL. Nothing is remembered where that fails (its error cleared: the
 * call goes on). */
static void lists_remember(PyObject *table, uint64_t version, Py_ssize_t n, Py_ssize_t rank,
                           PyObject *hit, const VCall *v, PyObject *meta, long long count,
                           PyObject *s_at, PyObject *r_at, PyObject *outl, PyObject *inl) {
#ifdef DICT_VERSIONS
    ListsMemo *m = &lists_memo;
    lists_forget(m);
    int ok = list_seen_fill(&m->outs, outl);
    if (ok > 0) ok = list_seen_fill(&m->ins, inl);
    if (ok > 0 && remembered_set(&m->r, table, version, n, hit, v, meta, count) < 0) ok = -1;
    if (ok <= 0) {
        PyErr_Clear();
        lists_forget(m);
        return;
    }
    m->s_at = Py_XNewRef(s_at);
    m->r_at = Py_XNewRef(r_at);
    m->rank = rank;
#else
    (void)table, (void)version, (void)n, (void)rank, (void)hit, (void)v, (void)meta;
    (void)count, (void)s_at, (void)r_at, (void)outl, (void)inl;
#endif
}

/* lists()'s call again where it is the call lists_memo remembers, run as it was made.
 * Returns False where it is not (lists() makes it anew), else what lists() returns. */
static PyObject *lists_again(PyObject *op, PyObject *group, PyObject *outs, PyObject *ins,
                             PyObject *table, PyObject *quickers, Py_ssize_t n,
                             Py_ssize_t rank, long spin) {
#ifdef DICT_VERSIONS
    ListsMemo *m = &lists_memo;
    if (!remembered_for(&m->r, table, n) || m->rank != rank) Py_RETURN_FALSE;
    const unsigned long *fills = &m->r.fills;
    unsigned long was = *fills;
    int same = list_seen_same(&m->outs, outs, 1, quickers, fills, was, -1, NULL);
    if (same > 0) same = list_seen_same(&m->ins, ins, 0, quickers, fills, was, -1, NULL);
    if (same <= 0 || *fills != was || !remembered_for(&m->r, table, n)) /* (asked again:
                                                   * a hook's quick may have run Python) */
        return same < 0 ? NULL : Py_NewRef(Py_False);
    /* (what the run uses, taken now: while it waits, another thread may fill the memo) */
    PyObject *hit = Py_NewRef(m->r.hit), *result = NULL;
    if (m->r.direct) {
        PyObject *s_at = Py_NewRef(m->s_at), *r_at = Py_NewRef(m->r_at);
        PyObject *keep = PyTuple_Pack(2, outs, ins);
        if (keep != NULL) result = kept_messages(op, group, hit, s_at, r_at, spin, keep, 0);
        Py_XDECREF(keep);
        Py_DECREF(s_at);
        Py_DECREF(r_at);
    } else { /* (the entry: lists_v_make's) */
        result = remembered_run(&m->r, hit, 3, 5, op, group, spin, outs, ins, Py_None,
                                Py_None);
        result = laid(laid(result, 1, outs, 1, quickers), 2, ins, 0, quickers);
    }
    Py_DECREF(hit);
    return result;
#else
    (void)op, (void)group, (void)outs, (void)ins, (void)table, (void)quickers, (void)n;
    (void)rank, (void)spin;
    Py_RETURN_FALSE;
#endif
}

/* all_gather's, reduce_scatter's, gather's or scatter's list as the last call listed_in
 * (or rooted()) made of it left it: the call, taken as `how` says with `head`, the
 * tensor's array as the quick path takes it (its descriptor object, address and element
 * count), the kept Plan's key part `at` for the list where it is direct messages, and
 * the list. */
typedef struct {
    Remembered r;
    PyObject *head, *at, *descr; /* held */
    int how;
    long long addr, size;
    ListSeen list;
} ListedMemo;

/* one a collective (its table and how it takes the list: all_gather and reduce_scatter
 * in turn, as a sharded step makes them, each keep theirs) */
#define LISTED_MEMOS 4
static ListedMemo listed_memos[LISTED_MEMOS];
static int listed_victim; /* the slot filled next where no slot is the table's */

/* The slot of listed_memos that remembers calls on `table` taken as `how` says, or where
 * `fill`, the one to fill (that slot, else the next in turn); NULL: none. */
static ListedMemo *listed_memo(PyObject *table, int how, int fill) {
    for (int i = 0; i < LISTED_MEMOS; i++)
        if (listed_memos[i].r.table == table && listed_memos[i].how == how)
            return &listed_memos[i];
    if (!fill) return NULL;
    listed_victim = (listed_victim + 1) % LISTED_MEMOS;
    return &listed_memos[listed_victim];
}

static void listed_forget(ListedMemo *m) {
    PyObject *old[3] = {m->head, m->at, m->descr};
    remembered_forget(&m->r);
    m->head = m->at = m->descr = NULL;
    list_seen_clear(&m->list);
    for (int i = 0; i < 3; i++) Py_XDECREF(old[i]);
}

/* What listed_in (or rooted()) made of a call remembered (listed_memos), as
 * lists_remember: for the array `a` and the list of layout `lay`, with the kept Plan's
 * key part `at` where v is NULL. */
static void listed_remember(PyObject *table, uint64_t version, Py_ssize_t n, int how,
                            PyObject *head, PyObject *hit, PyArrayObject *a, PyObject *lay,
                            const VCall *v, PyObject *meta, long long count, PyObject *at) {
#ifdef DICT_VERSIONS
    ListedMemo *m = listed_memo(table, how, 1);
    listed_forget(m);
    int ok = list_seen_fill(&m->list, lay);
    if (ok > 0 && remembered_set(&m->r, table, version, n, hit, v, meta, count) < 0) ok = -1;
    if (ok <= 0) {
        PyErr_Clear();
        listed_forget(m);
        return;
    }
    m->how = how;
    m->head = Py_NewRef(head);
    m->at = Py_XNewRef(at);
    m->descr = Py_NewRef((PyObject *)PyArray_DESCR(a));
    m->addr = (long long)(intptr_t)PyArray_DATA(a);
    m->size = (long long)PyArray_SIZE(a);
#else
    (void)table, (void)version, (void)n, (void)how, (void)head, (void)hit, (void)a;
    (void)lay, (void)v, (void)meta, (void)count, (void)at;
#endif
}

/* How listed() serves a call: the list is written (the tensor read), else read (the
 * tensor written); the list's start comes first in the kept Plan's key (else the
 * tensor's); the list's entry at head[0] must have the tensor's shape. */
enum { WRITES_LIST = 1, LIST_FIRST = 2, SAME_SHAPE = 4 };

/* listed_in's call again where it is the call listed_memos remember (with the same
 * shapes where `how` asks for them: they are not part of what a memo compares), run as
 * it was made. Returns False where it is not, else what listed_in returns. */
static PyObject *listed_again(PyObject *op, PyObject *group, PyObject *tensor,
                              PyObject *tensors, int how, PyObject *table, PyObject *head,
                              PyObject *quickers, Py_ssize_t n, long spin) {
#ifdef DICT_VERSIONS
    ListedMemo *m = listed_memo(table, how, 0);
    if (m == NULL || !remembered_for(&m->r, table, n) || !same_part(m->head, head))
        Py_RETURN_FALSE;
    int writes = how & WRITES_LIST;
    const unsigned long *fills = &m->r.fills;
    unsigned long was = *fills;
    PyObject *a = quick_array(tensor, !writes, quickers), *mine = NULL, *result = NULL;
    if (a == NULL) return PyErr_Occurred() ? NULL : Py_NewRef(Py_False);
    PyArrayObject *arr = (PyArrayObject *)a;
    Py_ssize_t at = -1;
    if (how & SAME_SHAPE) {
        at = PyTuple_GET_SIZE(head) ? PyLong_AsSsize_t(PyTuple_GET_ITEM(head, 0)) : -1;
        if (at == -1 && PyErr_Occurred()) goto out;
        if (at < 0 || at >= n) goto not;
    }
    int same = *fills == was && (PyObject *)PyArray_DESCR(arr) == m->descr &&
        (long long)(intptr_t)PyArray_DATA(arr) == m->addr &&
        (long long)PyArray_SIZE(arr) == m->size;
    if (same) same = list_seen_same(&m->list, tensors, writes, quickers, fills, was, at, &mine);
    if (same < 0) goto out;
    if (!same || *fills != was || !remembered_for(&m->r, table, n)) goto not; /* (asked
                                                   * again: a hook may have run Python) */
    if (mine != NULL && (PyArray_NDIM((PyArrayObject *)mine) != PyArray_NDIM(arr) ||
                         !PyArray_CompareLists(PyArray_DIMS((PyArrayObject *)mine),
                                               PyArray_DIMS(arr), PyArray_NDIM(arr))))
        goto not; /* (the general path's check of the shapes says what is wrong) */
    /* (what the run uses, taken now: while it waits, another thread may fill the memo) */
    PyObject *hit = Py_NewRef(m->r.hit);
    if (m->r.direct) {
        PyObject *where = Py_NewRef(m->at), *keep = PyTuple_Pack(2, tensor, tensors);
        if (keep != NULL)
            result = how & LIST_FIRST ? kept_messages(op, group, hit, where, a, spin, keep, 0)
                                      : kept_messages(op, group, hit, a, where, spin, keep, 0);
        Py_XDECREF(keep);
        Py_DECREF(where);
    } else { /* (the entry's datatype and Sizes: where rooted_v_make, or listed_v_make for
              * all_gather's and reduce_scatter's, finds them) */
        int kind = m->r.v.kind;
        int rooted = kind == V_GATHERV || kind == V_SCATTERV;
        int gathers = kind == V_ALLGATHER || kind == V_ALLGATHERV;
        result = remembered_run(&m->r, hit, rooted ? 1 : gathers ? 3 : 2,
                                rooted ? 2 : gathers ? 5 : 4, op, group, spin, tensor, tensors,
                                a, Py_None);
        result = laid(result, 2, tensors, writes, quickers);
    }
    Py_DECREF(hit);
    goto out;
not:
    result = Py_NewRef(Py_False);
out:
    Py_XDECREF(mine);
    Py_DECREF(a);
    return result;
#else
    (void)op, (void)group, (void)tensor, (void)tensors, (void)how, (void)table, (void)head;
    (void)quickers, (void)n, (void)spin;
    Py_RETURN_FALSE;
#endif
}

/* The quick path of a blocking call between the array of `tensor` and the list
 * `tensors` of one tensor per rank (listed(), and rooted()'s root): both as the quick
 * path takes them (quick_array, layout_of), of one dtype, and `table` holding the entry
 * `hit` that the general path validated for key (dtype, the tensor's size, *head, the
 * list's sizes). Where the list shares no memory with the tensor, the group sends
 * messages (its `direct` communicator) and no rank has left (`left`), the group's kept
 * Plan of it run here (run_kept_here: key parts the tensor and where the list lies,
 * its start where its tensors lie end to end, else the tuple of their addresses, in the
 * order `how` says). Returns False (the general path takes the call), True (done),
 * (hit, a, layout) (the caller makes the call: no Plan kept, MPI's collective), or
 * (hit, first, second, seq, outcome), as run_kept_here's. */
static PyObject *listed_in(PyObject *op, PyObject *group, PyObject *tensor,
                           PyObject *tensors, int how, PyObject *table, PyObject *head,
                           PyObject *quickers, long spin, int left) {
    if (!(PyList_CheckExact(tensors) || PyTuple_CheckExact(tensors)))
        Py_RETURN_FALSE;
    PyObject *sizeobj = group_get(group, G_SIZE);
    if (sizeobj == NULL) return NULL;
    Py_ssize_t n = PyLong_AsSsize_t(sizeobj);
    Py_DECREF(sizeobj);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (PySequence_Fast_GET_SIZE(tensors) != n) Py_RETURN_FALSE;
    if (!left) { /* (the call the memo remembers, run as it was made) */
        PyObject *again = listed_again(op, group, tensor, tensors, how, table, head,
                                       quickers, n, spin);
        if (again != Py_False) return again;
        Py_DECREF(again);
    }
    int writes = how & WRITES_LIST;
    PyObject *a = quick_array(tensor, !writes, quickers), *lay = NULL, *result = NULL;
    PyObject *key = NULL, *hit = NULL;
    uint64_t version = 0;
    if (a == NULL) goto no;
    PyArrayObject *arr = (PyArrayObject *)a;
    if (PyArray_SIZE(arr) > INT_MAX) goto no;
    lay = layout_of(tensors, writes, quickers, INT_MAX);
    if (lay == NULL) goto out;
    if (lay == Py_None) goto no;
    PyArray_Descr *d = (PyArray_Descr *)LAY(lay, L_DTYPE);
    if (d != PyArray_DESCR(arr) && !PyArray_EquivTypes(d, PyArray_DESCR(arr))) goto no;
    PyObject *counts = LAY(lay, L_COUNTS);
    Py_ssize_t nh = PyTuple_GET_SIZE(head);
    if ((key = PyTuple_New(2 + nh + n)) == NULL) goto out;
    PyObject *size = PyLong_FromSsize_t(PyArray_SIZE(arr));
    if (size == NULL) goto out;
    PyTuple_SET_ITEM(key, 0, Py_NewRef((PyObject *)PyArray_DESCR(arr)));
    PyTuple_SET_ITEM(key, 1, size);
    for (Py_ssize_t i = 0; i < nh; i++)
        PyTuple_SET_ITEM(key, 2 + i, Py_NewRef(PyTuple_GET_ITEM(head, i)));
    for (Py_ssize_t i = 0; i < n; i++)
        PyTuple_SET_ITEM(key, 2 + nh + i, Py_NewRef(PyList_GET_ITEM(counts, i)));
    hit = PyDict_GetItemWithError(table, key); /* borrowed */
    if (hit == NULL) {
        if (PyErr_Occurred()) goto out;
        goto no;
    }
    Py_INCREF(hit);
#ifdef DICT_VERSIONS
    version = ((PyDictObject *)table)->ma_version_tag;
#endif
    if (how & SAME_SHAPE) { /* (the list's entry at head[0]: as the general path's check) */
        Py_ssize_t at = nh ? PyLong_AsSsize_t(PyTuple_GET_ITEM(head, 0)) : -1;
        if (at == -1 && PyErr_Occurred()) goto out;
        if (at < 0 || at >= n) goto no;
        PyArrayObject *mine = (PyArrayObject *)PyList_GET_ITEM(LAY(lay, L_ARRAYS), at);
        if (PyArray_NDIM(mine) != PyArray_NDIM(arr) ||
            !PyArray_CompareLists(PyArray_DIMS(mine), PyArray_DIMS(arr), PyArray_NDIM(arr)))
            goto no;
    }
    long long start = PyLong_AsLongLong(LAY(lay, L_START));
    long long end = PyLong_AsLongLong(LAY(lay, L_END));
    long long lo = (long long)(intptr_t)PyArray_DATA(arr), hi = lo + PyArray_NBYTES(arr);
    int end_to_end = LAY(lay, L_END_TO_END) == Py_True;
    if (hi > lo && lo < end && start < hi) { /* (their spans meet: do they share memory?) */
        if (end_to_end || !pieces_apart(LAY(lay, L_ARRAYS), lo, hi)) goto no;
    }
    /* where the list lies: where it starts, end to end; else each tensor's address */
    PyObject *at = end_to_end ? Py_NewRef(LAY(lay, L_START))
                              : PyList_AsTuple(LAY(lay, L_ADDRESSES));
    PyObject *keep = at == NULL ? NULL : PyTuple_Pack(2, tensor, tensors);
    if (keep == NULL) {
        Py_XDECREF(at);
        goto out;
    }
    result = how & LIST_FIRST ? kept_messages(op, group, hit, at, a, spin, keep, left)
                              : kept_messages(op, group, hit, a, at, spin, keep, left);
    Py_DECREF(keep);
    if (result == Py_True)
        listed_remember(table, version, n, how, head, hit, arr, lay, NULL, NULL, 0, at);
    Py_DECREF(at);
    if (result != Py_False) goto out; /* (run, a run to settle, or an error) */
    Py_CLEAR(result);
    if (!left) { /* (MPI's collective, where the core makes it) */
        VCall v;
        PyObject *meta;
        long long count;
        int made = listed_v_make(hit, arr, lay, (int)n, writes, &v, &meta, &count);
        if (made < 0) goto out;
        if (made) {
            int gathers = v.kind == V_ALLGATHER || v.kind == V_ALLGATHERV;
            if (v.packed == NULL) /* (a packed call packs again: not remembered) */
                listed_remember(table, version, n, how, head, hit, arr, lay, &v, meta, count,
                                NULL);
            result = vcall_run(&v, op, group, PyTuple_GET_ITEM(hit, gathers ? 3 : 2), meta,
                               count, spin, tensor, tensors, hit, a, lay,
                               PyTuple_GET_ITEM(hit, gathers ? 5 : 4));
            if (result != Py_False) goto out;
            Py_CLEAR(result);
        }
    }
    result = PyTuple_Pack(3, hit, a, lay);
    goto out;
no:
    if (!PyErr_Occurred()) result = Py_NewRef(Py_False);
out:
    Py_XDECREF(hit);
    Py_XDECREF(key);
    Py_XDECREF(lay);
    Py_XDECREF(a);
    return result;
}

/* listed(op, group, tensor, tensors, how, table, head, quickers, spin, left): the quick
 * path of a blocking call between `tensor` and a list of one tensor per rank
 * (all_gather, reduce_scatter; mpicoll/_collectives/_call.py, quick_listed, says when):
 * listed_in, from Python. */
static PyObject *listed(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 10 || !PyDict_Check(args[5]) || !PyTuple_Check(args[6]) ||
        !PyDict_Check(args[7])) {
        PyErr_SetString(PyExc_TypeError, "listed(op, group, tensor, tensors, how, table, "
                                         "head, quickers, spin, left): table and quickers "
                                         "dicts, head a tuple");
        return NULL;
    }
    long how = PyLong_AsLong(args[4]), spin = PyLong_AsLong(args[8]);
    int left = PyObject_IsTrue(args[9]);
    if (PyErr_Occurred() || left < 0) return NULL;
    return listed_in(args[0], args[1], args[2], args[3], (int)how, args[5], args[6],
                     args[7], spin, left);
}

/* lists(op, group, outputs, inputs, table, quickers, spin, left): all_to_all's quick path
 * of two lists of one tensor per rank (mpicoll/_collectives/all_to_all.py, _quick_lists,
 * says when): both as the quick path takes them (layout_of: the outputs written), of one
 * dtype, and `table` holding the entry `hit` that the general path validated for key
 * (dtype, the group's size, this rank, the inputs' sizes, None, the outputs' sizes).
 * Where they share no memory (their spans apart, or each pair of tensors), the entry
 * is direct messages, the group sends them
 * and no rank has left, the group's kept Plan of it run here (run_kept_here: key parts
 * where the inputs and the outputs lie: a list's start where its tensors lie end to
 * end, else the tuple of their addresses). Returns False (the general path takes the
 * call), True (done), (hit, outputs' layout, inputs' layout) (the caller makes the
 * call), or (hit, first, second, seq, outcome), as run_kept_here's. */
static PyObject *lists(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 8 || !PyDict_Check(args[4]) || !PyDict_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError, "lists(op, group, outputs, inputs, table, quickers, "
                                         "spin, left): table and quickers dicts");
        return NULL;
    }
    PyObject *op = args[0], *group = args[1], *outs = args[2], *ins = args[3];
    PyObject *table = args[4], *quickers = args[5];
    long spin = PyLong_AsLong(args[6]);
    int left = PyObject_IsTrue(args[7]);
    if (PyErr_Occurred() || left < 0) return NULL;
    if (!(PyList_CheckExact(outs) || PyTuple_CheckExact(outs)) ||
        !(PyList_CheckExact(ins) || PyTuple_CheckExact(ins)))
        Py_RETURN_FALSE;
    PyObject *sizeobj = group_get(group, G_SIZE), *result = NULL;
    PyObject *rank = NULL, *outl = NULL, *inl = NULL, *key = NULL, *hit = NULL;
    if (sizeobj == NULL) return NULL;
    Py_ssize_t n = PyLong_AsSsize_t(sizeobj);
    if (n == -1 && PyErr_Occurred()) goto out;
    if (PySequence_Fast_GET_SIZE(outs) != n || PySequence_Fast_GET_SIZE(ins) != n) goto no;
    if ((rank = group_get(group, G_RANK)) == NULL) goto out;
    Py_ssize_t me = PyLong_AsSsize_t(rank);
    if (me == -1 && PyErr_Occurred()) goto out;
    if (!left) { /* (the call the memo remembers, run as it was made) */
        result = lists_again(op, group, outs, ins, table, quickers, n, me, spin);
        if (result != Py_False) goto out;
        Py_CLEAR(result);
    }
    if ((outl = layout_of(outs, 1, quickers, INT_MAX)) == NULL) goto out;
    if (outl == Py_None) goto no;
    if ((inl = layout_of(ins, 0, quickers, INT_MAX)) == NULL) goto out;
    if (inl == Py_None) goto no;
    PyArray_Descr *d = (PyArray_Descr *)LAY(outl, L_DTYPE);
    PyArray_Descr *e = (PyArray_Descr *)LAY(inl, L_DTYPE);
    if (d != e && !PyArray_EquivTypes(d, e)) goto no;
    PyObject *scounts = LAY(inl, L_COUNTS), *rcounts = LAY(outl, L_COUNTS);
    if ((key = PyTuple_New(4 + 2 * n)) == NULL) goto out;
    PyTuple_SET_ITEM(key, 0, Py_NewRef((PyObject *)d));
    PyTuple_SET_ITEM(key, 1, Py_NewRef(sizeobj));
    PyTuple_SET_ITEM(key, 2, Py_NewRef(rank));
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTuple_SET_ITEM(key, 3 + i, Py_NewRef(PyList_GET_ITEM(scounts, i)));
        PyTuple_SET_ITEM(key, 4 + n + i, Py_NewRef(PyList_GET_ITEM(rcounts, i)));
    }
    PyTuple_SET_ITEM(key, 3 + n, Py_NewRef(Py_None));
    hit = PyDict_GetItemWithError(table, key); /* borrowed */
    if (hit == NULL) {
        if (PyErr_Occurred()) goto out;
        goto no;
    }
    Py_INCREF(hit);
    uint64_t version = 0;
#ifdef DICT_VERSIONS
    version = ((PyDictObject *)table)->ma_version_tag;
#endif
    int radj = LAY(outl, L_END_TO_END) == Py_True, sadj = LAY(inl, L_END_TO_END) == Py_True;
    long long rlo = PyLong_AsLongLong(LAY(outl, L_START));
    long long rhi = PyLong_AsLongLong(LAY(outl, L_END));
    long long slo = PyLong_AsLongLong(LAY(inl, L_START));
    long long shi = PyLong_AsLongLong(LAY(inl, L_END));
    if (PyErr_Occurred()) goto out;
    /* (spans that meet: where both lie end to end, they share memory; else asked tensor
     * by tensor, each against the other list's, up to APART_ASKED ranks: tensors
     * allocated one by one lie among each other's; on more ranks, the Python side, which
     * keeps its answers) */
    int apart = !(slo < rhi && rlo < shi);
    if (!apart && radj && sadj) goto no;
    PyObject *method = PyTuple_Check(hit) && PyTuple_GET_SIZE(hit) > 0
        ? PyTuple_GET_ITEM(hit, 0) : NULL;
    int direct = method != NULL && same_name(method, str_direct);
    if (!apart && (direct || n <= APART_ASKED)) {
        PyObject *souts = LAY(inl, L_ARRAYS), *routs = LAY(outl, L_ARRAYS);
        apart = 1;
        for (Py_ssize_t i = 0; apart && i < PyList_GET_SIZE(routs); i++) {
            PyArrayObject *x = (PyArrayObject *)PyList_GET_ITEM(routs, i);
            long long b = (long long)(intptr_t)PyArray_DATA(x);
            apart = PyArray_NBYTES(x) == 0 || pieces_apart(souts, b, b + PyArray_NBYTES(x));
        }
    }
    if (apart && direct) { /* (where each list lies: its start, or its tensors' addresses) */
        PyObject *s_at = sadj ? Py_NewRef(LAY(inl, L_START))
                              : PyList_AsTuple(LAY(inl, L_ADDRESSES));
        PyObject *r_at = s_at == NULL ? NULL : radj ? Py_NewRef(LAY(outl, L_START))
                                                    : PyList_AsTuple(LAY(outl, L_ADDRESSES));
        PyObject *keep = r_at == NULL ? NULL : PyTuple_Pack(2, outs, ins);
        if (keep != NULL)
            result = kept_messages(op, group, hit, s_at, r_at, spin, keep, left);
        if (result == Py_True)
            lists_remember(table, version, n, me, hit, NULL, NULL, 0, s_at, r_at, outl, inl);
        Py_XDECREF(s_at);
        Py_XDECREF(r_at);
        Py_XDECREF(keep);
        if (result == NULL) goto out;
        if (result != Py_False) goto out; /* (run, a run to settle, or an error) */
        Py_CLEAR(result);
    } else if (apart && !direct && !left && PyTuple_Check(hit) && PyTuple_GET_SIZE(hit) == 6 &&
               vmethod_kind(method) == V_ALLTOALLV && PyTuple_GET_ITEM(hit, 4) == Py_None) {
        /* (MPI's Alltoallv, no own block; its counts beside it where they go) */
        VCall v;
        PyObject *meta;
        long long count;
        if (lists_v_make(hit, outl, inl, (int)n, &v, &meta, &count) < 0) goto out;
        lists_remember(table, version, n, me, hit, &v, meta, count, NULL, NULL, outl, inl);
        result = vcall_run(&v, op, group, PyTuple_GET_ITEM(hit, 3), meta, count, spin, outs,
                           ins, hit, outl, inl, PyTuple_GET_ITEM(hit, 5));
        if (result != Py_False) goto out;
        Py_CLEAR(result);
    }
    result = PyTuple_Pack(3, hit, outl, inl);
    goto out;
no:
    if (!PyErr_Occurred()) result = Py_NewRef(Py_False);
out:
    Py_XDECREF(hit);
    Py_XDECREF(key);
    Py_XDECREF(rank);
    Py_XDECREF(inl);
    Py_XDECREF(outl);
    Py_DECREF(sizeobj);
    return result;
}

/* rooted()'s root on a group that sends no messages of its own (or of one process):
 * gather into, or scatter from, its list of chunks (layout `lay`, end to end; quick entry
 * `hit` = RootList ((counts, displacements), datatype, sizes)) as MPI's Gatherv or
 * Scatterv, its counts beside it where `sizes` is not None: `v` made for vcall_run, with
 * the record's arguments in *meta (a new reference, or NULL) and the elements moved in
 * *count. 1 (made), 0 (another case: the caller's), or -1 with an error. */
static int rooted_v_make(PyObject *group, PyObject *hit, PyArrayObject *a, PyObject *lay,
                         PyObject *root, int gathering, VCall *v, PyObject **meta,
                         long long *count) {
    PyObject *sizeobj = group_get(group, G_SIZE);
    if (sizeobj == NULL) return -1;
    long n = PyLong_AsLong(sizeobj);
    Py_DECREF(sizeobj);
    if (n == -1 && PyErr_Occurred()) return -1;
    if (n <= 0 || n > INT_MAX || !PyTuple_Check(hit) || PyTuple_GET_SIZE(hit) != 3 ||
        LAY(lay, L_END_TO_END) != Py_True || PyArray_SIZE(a) > INT_MAX)
        return 0;
    if (n > 1) { /* (a group that sends messages makes them: its Plan, or Python's) */
        int messages_go = sends_messages(group);
        if (messages_go != 0) return messages_go < 0 ? -1 : 0;
    }
    PyObject *pair = PyTuple_GET_ITEM(hit, 0), *dtobj = PyTuple_GET_ITEM(hit, 1);
    MPI_Datatype *dt = PyMPIDatatype_Get(dtobj);
    long r = PyLong_AsLong(root);
    if (dt == NULL || (r == -1 && PyErr_Occurred())) return -1;
    *meta = NULL;
    *count = PyArray_SIZE(a);
    if (vcall_new(v, gathering ? V_GATHERV : V_SCATTERV, *dt, (int)n) < 0) return -1;
    v->root = (int)r;
    void *area = NULL;
    if (list_into(lay, pair, (int)n, gathering ? v->rc : v->sc, gathering ? v->rd : v->sd,
                  &area) < 0)
        goto fail;
    if (gathering) {
        v->sb = PyArray_DATA(a), v->scount = (int)PyArray_SIZE(a), v->rb = area;
    } else {
        v->sb = area, v->rb = PyArray_DATA(a), v->rcount = (int)PyArray_SIZE(a);
    }
    if (capacity > 0) { /* (as _recorder.kept keeps the Python path's (mine, theirs, root)) */
        PyObject *mine = Py_BuildValue("(nO)", PyArray_SIZE(a), dtobj);
        PyObject *theirs = PyTuple_Pack(2, pair, dtobj);
        *meta = gathering ? tuple_of(3, mine, theirs, PyTuple_Pack(1, root))
                          : tuple_of(3, theirs, mine, PyTuple_Pack(1, root));
        if (*meta == NULL) goto fail;
    }
    return 1;
fail:
    vcall_done(v);
    return -1;
}

/* rooted()'s other ranks, on a group of more than one that sends no messages of its own:
 * their part of MPI's Gatherv or Scatterv (quick entry `hit` = OffRoot (datatype, root,
 * gathering, sizes)) from or into the array `a`, its counts beside it where `sizes` is not
 * None; as rooted_v_make. */
static int rooted_off_make(PyObject *group, PyObject *hit, PyArrayObject *a, PyObject *root,
                           int gathering, VCall *v, PyObject **meta, long long *count) {
    if (!PyTuple_Check(hit) || PyTuple_GET_SIZE(hit) != 4 || PyArray_SIZE(a) > INT_MAX)
        return 0;
    int messages_go = sends_messages(group);
    if (messages_go != 0) return messages_go < 0 ? -1 : 0;
    PyObject *sizeobj = group_get(group, G_SIZE);
    if (sizeobj == NULL) return -1;
    long n = PyLong_AsLong(sizeobj);
    Py_DECREF(sizeobj);
    if (n == -1 && PyErr_Occurred()) return -1;
    if (n <= 1 || n > INT_MAX) return 0;
    PyObject *dtobj = PyTuple_GET_ITEM(hit, 0);
    MPI_Datatype *dt = PyMPIDatatype_Get(dtobj);
    long r = PyLong_AsLong(root);
    if (dt == NULL || (r == -1 && PyErr_Occurred())) return -1;
    *meta = NULL;
    *count = PyArray_SIZE(a);
    if (vcall_new(v, gathering ? V_GATHERV : V_SCATTERV, *dt, (int)n) < 0) return -1;
    v->root = (int)r;
    memset(v->sc, 0, sizeof(int) * 4 * (size_t)n); /* (the root's arrays: not read here) */
    if (gathering) {
        v->sb = PyArray_DATA(a), v->scount = (int)PyArray_SIZE(a);
    } else {
        v->rb = PyArray_DATA(a), v->rcount = (int)PyArray_SIZE(a);
    }
    if (capacity > 0) { /* (as _recorder.kept keeps the Python path's (mine, None, root)) */
        PyObject *mine = Py_BuildValue("(nO)", PyArray_SIZE(a), dtobj);
        *meta = gathering ? tuple_of(3, mine, Py_NewRef(Py_None), PyTuple_Pack(1, root))
                          : tuple_of(3, Py_NewRef(Py_None), mine, PyTuple_Pack(1, root));
        if (*meta == NULL) {
            vcall_done(v);
            return -1;
        }
    }
    return 1;
}

/* rooted(op, group, tensor, tensors, rank, group_rank, gathering, off_root, at_root,
 * quickers, spin, left): the quick path of a blocking gather (`gathering`) or scatter
 * (mpicoll/_collectives/_rooted_quick.py says when), to or from the group rank `root`
 * that `rank` (global: dst or src) or `group_rank` (group_dst, group_src) names
 * (root_of; where it cannot say, False). On the root,
 * listed_in over `at_root` with head (root,). Elsewhere, no list given, the array
 * (quick_array: written by a scatter) and `off_root` holding the entry `hit` the general
 * path validated for key (dtype, root, gathering): where the group sends messages and no
 * rank has left, its kept Plan run here (run_kept_here). Returns False (the general
 * path takes the call), True (done), (hit, a) off the root or (hit, a, layout) on it
 * (the caller makes the call), or (hit, first, second, seq, outcome), as run_kept_here's. */
static PyObject *rooted(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 12 || !PyDict_Check(args[7]) || !PyDict_Check(args[8]) ||
        !PyDict_Check(args[9])) {
        PyErr_SetString(PyExc_TypeError, "rooted(op, group, tensor, tensors, rank, group_rank, "
                                         "gathering, off_root, at_root, quickers, spin, "
                                         "left): tables and quickers dicts");
        return NULL;
    }
    PyObject *op = args[0], *group = args[1], *tensor = args[2], *tensors = args[3];
    PyObject *off_root = args[7], *at_root_table = args[8], *quickers = args[9];
    PyObject *root = root_of(group, args[4], args[5]); /* borrowed */
    if (root == NULL) return Py_NewRef(Py_False);
    int gathering = PyObject_IsTrue(args[6]), left = PyObject_IsTrue(args[11]);
    long spin = PyLong_AsLong(args[10]);
    PyObject *rankobj = group_get(group, G_RANK);
    if (rankobj == NULL) return NULL;
    int at_root = PyObject_RichCompareBool(rankobj, root, Py_EQ);
    Py_DECREF(rankobj);
    if (PyErr_Occurred() || gathering < 0 || left < 0 || at_root < 0) return NULL;
    if (at_root) {
        PyObject *head = PyTuple_Pack(1, root);
        if (head == NULL) return NULL;
        uint64_t version = 0; /* (the table's, before its lookup: a memo made from it is
                               * never newer than what was looked up) */
#ifdef DICT_VERSIONS
        version = ((PyDictObject *)at_root_table)->ma_version_tag;
#endif
        PyObject *result = listed_in(op, group, tensor, tensors,
                                     gathering ? WRITES_LIST : 0, at_root_table, head, quickers,
                                     spin, left);
        if (result != NULL && !left && PyTuple_Check(result) && PyTuple_GET_SIZE(result) == 3) {
            /* (no Plan: MPI's Gatherv or Scatterv, made here on a group that sends no
             * messages of its own, and remembered as listed_in's calls are) */
            PyObject *hit = PyTuple_GET_ITEM(result, 0), *lay = PyTuple_GET_ITEM(result, 2);
            PyArrayObject *a = (PyArrayObject *)PyTuple_GET_ITEM(result, 1);
            VCall v;
            PyObject *meta, *done = NULL;
            long long count;
            int made = rooted_v_make(group, hit, a, lay, root, gathering, &v, &meta, &count);
            if (made > 0) {
                listed_remember(at_root_table, version, v.n, gathering ? WRITES_LIST : 0,
                                head, hit, a, lay, &v, meta, count, NULL);
                done = vcall_run(&v, op, group, PyTuple_GET_ITEM(hit, 1), meta, count, spin,
                                 tensor, tensors, hit, (PyObject *)a, lay,
                                 PyTuple_GET_ITEM(hit, 2));
                if (done == Py_False) { /* (the counts: the Python side's call) */
                    Py_DECREF(done);
                    Py_DECREF(head);
                    return result;
                }
            }
            if (made != 0) {
                Py_DECREF(head);
                Py_DECREF(result);
                return done;
            }
        }
        Py_DECREF(head);
        return result;
    }
    int given = tensors == Py_None ? 0 : PyObject_IsTrue(tensors);
    if (given != 0) return given < 0 ? NULL : Py_NewRef(Py_False); /* (the general path's) */
    PyObject *a = quick_array(tensor, !gathering, quickers), *result = NULL;
    if (a == NULL) return PyErr_Occurred() ? NULL : Py_NewRef(Py_False);
    PyObject *size = PyLong_FromSsize_t(PyArray_SIZE((PyArrayObject *)a));
    PyObject *key = size == NULL ? NULL
        : PyTuple_Pack(4, (PyObject *)PyArray_DESCR((PyArrayObject *)a), root,
                       gathering ? Py_True : Py_False, size);
    Py_XDECREF(size);
    PyObject *hit = key == NULL ? NULL : PyDict_GetItemWithError(off_root, key); /* borrowed */
    Py_XDECREF(key);
    if (hit == NULL || PyArray_SIZE((PyArrayObject *)a) > INT_MAX) {
        if (!PyErr_Occurred()) result = Py_NewRef(Py_False);
        goto out;
    }
    Py_INCREF(hit);
    result = kept_messages(op, group, hit, a, Py_None, spin, tensor, left);
    if (result != Py_False) goto hit_out; /* (run, a run to settle, or an error) */
    Py_CLEAR(result);
    if (!left) { /* (MPI's Gatherv or Scatterv, where the core makes it) */
        VCall v;
        PyObject *meta;
        long long count;
        int made = rooted_off_make(group, hit, (PyArrayObject *)a, root, gathering, &v, &meta,
                                   &count);
        if (made < 0) goto hit_out;
        if (made) {
            result = vcall_run(&v, op, group, PyTuple_GET_ITEM(hit, 0), meta, count, spin,
                               tensor, Py_None, hit, a, Py_None, PyTuple_GET_ITEM(hit, 3));
            if (result != Py_False) goto hit_out;
            Py_CLEAR(result);
        }
    }
    result = PyTuple_Pack(2, hit, a);
hit_out:
    Py_DECREF(hit);
out:
    Py_DECREF(a);
    return result;
}

/* failed(id): mark the record `id` failed (a call whose counts disagreed) */
static PyObject *failed(PyObject *self, PyObject *id) {
    for (Py_ssize_t k = 0; k < filled; k++) {
        long long want = PyLong_AsLongLong(id);
        if (want == -1 && PyErr_Occurred()) return NULL;
        if (ring[k].op != NULL && ring[k].id == want) {
            ring[k].state = FAILED;
            break;
        }
    }
    Py_RETURN_NONE;
}

/* records(): the ring as the Python recorder's lists, oldest first:
 * [id, op, group, seq, peer, meta, code, lasti, issued, wait, done, state] */
static PyObject *records(PyObject *self, PyObject *unused) {
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    Py_ssize_t start = filled < capacity ? 0 : next_slot;
    for (Py_ssize_t k = 0; k < filled; k++) {
        Record *r = &ring[(start + k) % capacity];
        PyObject *meta = r->meta != NULL ? Py_NewRef(r->meta)
            : r->kind == ALLREDUCE ? Py_BuildValue("(O(LO)(O))", Py_None, r->count,
                                                   r->datatype, r->mpi_op)
            : r->kind == REDUCE_ROOT ? Py_BuildValue("(O(LO)O)", Py_None, r->count,
                                                     r->datatype, r->mpi_op)
            : r->kind == REDUCE ? Py_BuildValue("((LO)OO)", r->count, r->datatype, Py_None,
                                                r->mpi_op)
            : Py_BuildValue("((LO)O())", r->count, r->datatype, r->mpi_op);
        PyObject *wait = r->wait ? PyLong_FromLongLong(r->wait) : Py_NewRef(Py_None);
        PyObject *done = r->done ? PyLong_FromLongLong(r->done) : Py_NewRef(Py_None);
        PyObject *item = Py_BuildValue(
            "[LOOLOOOiLNNO]", r->id, r->op, r->group, r->seq, Py_None, meta,
            r->code ? r->code : Py_None, r->lasti, r->issued, wait, done,
            states[r->state]);
        Py_XDECREF(meta);
        if (item == NULL || PyList_Append(out, item) < 0) {
            Py_XDECREF(item);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(item);
    }
    return out;
}

/* ids: an iterator over next_id, the records' numbers (mpicoll._recorder draws its own
 * from it once the core is in use) */
static PyObject *ids_next(PyObject *self) {
    (void)self;
    return PyLong_FromLongLong(next_id++);
}

static PyTypeObject IdsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mpicoll._core.Ids",
    .tp_basicsize = sizeof(PyObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "the flight recorder's numbers, one order for the core's ring and Python's",
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = ids_next,
};

/* configure(capacity, ids, inside, is_inside, on_block, on_unblock, exception,
 * issued, failed): what the Python side gives the core, once, at load. */
static PyObject *configure(PyObject *self, PyObject *args) {
    Py_ssize_t cap;
    PyObject *a[8];
    if (!PyArg_ParseTuple(args, "nOOOOOOOO", &cap, &a[0], &a[1], &a[2], &a[3], &a[4],
                          &a[5], &a[6], &a[7]))
        return NULL;
    for (Py_ssize_t k = 0; k < filled; k++) clear_record(&ring[k]);
    PyMem_Free(ring);
    ring = NULL;
    capacity = next_slot = filled = 0;
    if (cap > 0) {
        ring = PyMem_Calloc((size_t)cap, sizeof(Record));
        if (ring == NULL) return PyErr_NoMemory();
        capacity = cap;
    }
    /* (the numbers the recorder's own iterator has given out come first) */
    if (!Py_IS_TYPE(a[0], &IdsType)) {
        PyObject *first = PyIter_Next(a[0]);
        if (first == NULL) return PyErr_Occurred() ? NULL : PyErr_Format(
            PyExc_ValueError, "configure: the ids iterator is exhausted");
        long long n = PyLong_AsLongLong(first);
        Py_DECREF(first);
        if (n == -1 && PyErr_Occurred()) return NULL;
        if (n > next_id) next_id = n;
    }
    for (int i = 0; i < CODES; i++) Py_CLEAR(codes_seen[i]); /* (answers of `inside`) */
    PyObject **slots[7] = {&inside, &is_inside, &on_block, &on_unblock, &mpi_exception,
                           &states[ISSUED], &states[FAILED]};
    for (int i = 0; i < 7; i++) {
        Py_INCREF(a[i + 1]);
        Py_XSETREF(*slots[i], a[i + 1]);
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"call", (PyCFunction)(void (*)(void))call, METH_FASTCALL,
     "call(kind, op, comm, array, datatype, extra, group, seq, spin): one collective, "
     "blocking (ALLREDUCE in place, extra its Op; BCAST, extra its root; REDUCE, extra "
     "(its Op, its root))"},
    {"startwait", (PyCFunction)(void (*)(void))startwait, METH_FASTCALL,
     "startwait(op, group, seq, reqs, statuses, tags, lengths, datatype, copy, meta, spin, "
     "keep, fold): "
     "kept messages started and waited for, blocking"},
    {"failed", failed, METH_O, "failed(id): mark a record failed"},
    {"run", (PyCFunction)(void (*)(void))run, METH_FASTCALL,
     "run(op, group, seq, kept, hit, first, second, spin, keep): the kept plan of a call "
     "on these arrays run; False where there is none"},
    {"exchange", (PyCFunction)(void (*)(void))exchange, METH_FASTCALL,
     "exchange(op, group, output, input, table, extra, quickers, spin, left): the quick "
     "path of a call from input to output"},
    {"reduce", (PyCFunction)(void (*)(void))reduce, METH_FASTCALL,
     "reduce(op, group, tensor, table, reduce_op, quickers, spin, left, most[, dst, "
     "group_dst]): the quick path of a blocking all_reduce in place (a reduce's, given "
     "its dst and group_dst)"},
    {"reduce_to", (PyCFunction)(void (*)(void))reduce_to, METH_FASTCALL,
     "reduce_to(op, group, tensor, table, reduce_op, dst, group_dst, quickers, spin, left, "
     "fewest): "
     "the quick path of a blocking reduce that MPI's Ireduce makes"},
    {"bcast", (PyCFunction)(void (*)(void))bcast, METH_FASTCALL,
     "bcast(op, group, tensor, src, group_src, table, quickers, spin, left, most): the "
     "quick path of a blocking broadcast"},
    {"layout", (PyCFunction)(void (*)(void))layout, METH_FASTCALL,
     "layout(xs, writable, quickers, most): where a list's tensors lie (mpicoll/"
     "_collectives/_layout.py), or None"},
    {"listed", (PyCFunction)(void (*)(void))listed, METH_FASTCALL,
     "listed(op, group, tensor, tensors, how, table, head, quickers, spin, left): the quick "
     "path of a call between a tensor and a list of one tensor per rank"},
    {"lists", (PyCFunction)(void (*)(void))lists, METH_FASTCALL,
     "lists(op, group, outputs, inputs, table, quickers, spin, left): all_to_all's quick "
     "path of two lists"},
    {"rooted", (PyCFunction)(void (*)(void))rooted, METH_FASTCALL,
     "rooted(op, group, tensor, tensors, rank, group_rank, gathering, off_root, at_root, "
     "quickers, spin, left): the quick path of a blocking gather or scatter"},
    {"records", records, METH_NOARGS, "the flight recorder's C ring, oldest first"},
    {"configure", configure, METH_VARARGS, "what the Python side gives the core"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "mpicoll." STR(CORE_NAME),
    "mpicoll's compiled core for the " CORE_FAMILY " family (mpicoll/_core.c)", -1, methods,
};

PyMODINIT_FUNC CAT(PyInit_, CORE_NAME)(void) {
    if (import_mpi4py() < 0) return NULL;
    import_array1(NULL);
    if (PyType_Ready(&PlanType) < 0 || PyType_Ready(&PlanCacheType) < 0 ||
        PyType_Ready(&IdsType) < 0 || PyType_Ready(&QuickerType) < 0 ||
        (LayoutType.tp_dict == NULL && layout_ready() < 0))
        return NULL;
    if ((no_args = PyTuple_New(0)) == NULL) return NULL;
    PyObject **names[] = {&str_missed, &str_seq, &str_size, &str_kept, &str_direct,
                          &str_reduced, &str_comm, &str_rank, &str_methods[ALLGATHER],
                          &str_methods[ALLTOALL], &str_methods[REDUCE_SCATTER_BLOCK],
                          &str_index, &str_data_ptr, &str_shape, &str_dtype,
                          &str_requires_grad, &str_is_contiguous, &str_vmethods[V_ALLTOALLV],
                          &str_vmethods[V_ALLGATHER], &str_vmethods[V_ALLGATHERV],
                          &str_vmethods[V_REDUCE_SCATTER_BLOCK],
                          &str_vmethods[V_REDUCE_SCATTER], &str_counts, &str_form,
                          &str_sent, &str_expected, &str_relayed, &str_at, &str_owners,
                          &str_reqs, &str_recvs, &str_sends, &str_method, &str_n,
                          &str_send, &str_ring, &str_root};
    const char *texts[] = {"missed", "seq", "_size", "kept", "direct", "reduced", "comm",
                           "_rank", "Iallgather", "Ialltoall", "Ireduce_scatter_block",
                           "_index", "data_ptr", "shape", "dtype", "requires_grad",
                           "is_contiguous", "Ialltoallv", "Iallgather", "Iallgatherv",
                           "Ireduce_scatter_block", "Ireduce_scatter", "counts", "form",
                           "sent", "expected", "relayed", "at", "owners", "reqs", "recvs",
                           "sends", "method", "n", "send", "ring", "root"};
    for (int i = 0; i < (int)(sizeof texts / sizeof texts[0]); i++)
        if ((*names[i] = PyUnicode_InternFromString(texts[i])) == NULL) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    PyObject *counter = PyObject_New(PyObject, &IdsType);
    if (counter == NULL || PyModule_AddObject(m, "ids", counter) < 0) {
        Py_XDECREF(counter);
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddObjectRef(m, "Plan", (PyObject *)&PlanType) < 0 ||
        PyModule_AddObjectRef(m, "PlanCache", (PyObject *)&PlanCacheType) < 0 ||
        PyModule_AddObjectRef(m, "Quicker", (PyObject *)&QuickerType) < 0 ||
        PyModule_AddObjectRef(m, "Layout", (PyObject *)&LayoutType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddStringConstant(m, "FAMILY", CORE_FAMILY) < 0 ||
        PyModule_AddIntConstant(m, "MPI_VERSION", MPI_VERSION) < 0 ||
        PyModule_AddIntConstant(m, "MPI_SUBVERSION", MPI_SUBVERSION) < 0 ||
        PyModule_AddIntConstant(m, "API", CORE_API) < 0 ||
        PyModule_AddIntConstant(m, "ALLREDUCE", ALLREDUCE) < 0 ||
        PyModule_AddIntConstant(m, "BCAST", BCAST) < 0 ||
        PyModule_AddIntConstant(m, "REDUCE", REDUCE) < 0 ||
        PyModule_AddIntConstant(m, "SIGNED", SIGNED) < 0 ||
        PyModule_AddIntConstant(m, "WRITES_LIST", WRITES_LIST) < 0 ||
        PyModule_AddIntConstant(m, "LIST_FIRST", LIST_FIRST) < 0 ||
        PyModule_AddIntConstant(m, "SAME_SHAPE", SAME_SHAPE) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
