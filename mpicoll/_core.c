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
#include <time.h>

#include "mpi4py/mpi4py.h"

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
#define CORE_API 2

enum { ISSUED = 0, FAILED = 1 };
enum { ALLREDUCE = 0, BCAST = 1, MESSAGES = 2 }; /* what a record is of */

typedef struct {
    PyObject *id;       /* from the recorder's own counter: one order for both rings */
    PyObject *op;       /* the collective's name */
    PyObject *group;    /* the ProcessGroup */
    long long seq;
    long long count;
    PyObject *datatype; /* mpi4py Datatype */
    PyObject *mpi_op;   /* mpi4py Op */
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
static PyObject *ids = NULL;       /* itertools.count shared with mpicoll._recorder */
static PyObject *inside = NULL;    /* dict: file name -> whether it is mpicoll's own */
static PyObject *is_inside = NULL; /* callable: file name -> bool (fills `inside`) */
static PyObject *on_block = NULL;  /* (name, group, seq, args) -> token: watched.begin */
static PyObject *on_unblock = NULL;/* (token) -> None: watched.end */
static PyObject *mpi_exception = NULL; /* mpi4py.MPI.Exception */
static PyObject *states[2] = {NULL, NULL}; /* "issued", "failed" */

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts); /* wall clock, as time.time_ns: hosts compared */
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void clear_record(Record *r) {
    Py_CLEAR(r->id);
    Py_CLEAR(r->op);
    Py_CLEAR(r->group);
    Py_CLEAR(r->datatype);
    Py_CLEAR(r->mpi_op);
    Py_CLEAR(r->meta);
    Py_CLEAR(r->code);
}

/* The first frame outside mpicoll (and torch.distributed), from the caller's caller:
 * the user's call site, as mpicoll._recorder.issued finds it. */
static void call_site(PyObject **code, int *lasti) {
    *code = NULL;
    *lasti = -1;
    PyFrameObject *f = PyEval_GetFrame(); /* borrowed: the Python function calling us */
    if (f == NULL) return;
    Py_INCREF(f);
    for (;;) {
        PyFrameObject *back = PyFrame_GetBack(f); /* new reference */
        Py_DECREF(f);
        f = back;
        if (f == NULL) return;
        PyCodeObject *c = PyFrame_GetCode(f); /* new reference */
        PyObject *name = c->co_filename;
        PyObject *known = PyDict_GetItemWithError(inside, name); /* borrowed */
        if (known == NULL) {
            if (PyErr_Occurred()) PyErr_Clear();
            known = PyObject_CallOneArg(is_inside, name);
            if (known == NULL) {
                PyErr_Clear();
                Py_DECREF(c);
                Py_DECREF(f);
                return;
            }
            PyDict_SetItem(inside, name, known);
            Py_DECREF(known); /* the dict holds it */
        }
        if (known == Py_False) {
            *code = (PyObject *)c;
#if PY_VERSION_HEX >= 0x030B0000
            *lasti = PyFrame_GetLasti(f);
#endif
            Py_DECREF(f);
            return;
        }
        Py_DECREF(c);
    }
}

static Record *record(PyObject *op, PyObject *group, long long seq, long long count,
                      PyObject *datatype, PyObject *mpi_op, PyObject *meta) {
    if (capacity == 0) return NULL;
    Record *r = &ring[next_slot];
    clear_record(r);
    r->id = PyIter_Next(ids);
    if (r->id == NULL) {
        PyErr_Clear();
        r->id = PyLong_FromLong(-1);
    }
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

/* call(kind, op, comm, array, datatype, extra, group, seq, spin): one MPI collective on
 * a C-contiguous buffer, blocking: ALLREDUCE in place (extra: the mpi4py Op), BCAST
 * (extra: the root, whose buffer may be read-only). */
static PyObject *call(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "call takes 9 arguments");
        return NULL;
    }
    int kind = (int)PyLong_AsLong(args[0]);
    PyObject *op = args[1], *array = args[3], *dtobj = args[4], *extra = args[5];
    PyObject *group = args[6], *seqobj = args[7];
    MPI_Comm *comm = PyMPIComm_Get(args[2]);
    MPI_Datatype *dt = PyMPIDatatype_Get(dtobj);
    if (comm == NULL || dt == NULL) return NULL;
    MPI_Op *mop = NULL;
    int root = -1, me = -1;
    if (kind == ALLREDUCE) {
        if ((mop = PyMPIOp_Get(extra)) == NULL) return NULL;
    } else if (kind == BCAST) {
        root = (int)PyLong_AsLong(extra);
        MPI_Comm_rank(*comm, &me);
    } else {
        PyErr_SetString(PyExc_ValueError, "call: unknown kind");
        return NULL;
    }
    long long seq = PyLong_AsLongLong(seqobj);
    long spin = PyLong_AsLong(args[8]);
    if (PyErr_Occurred()) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(array, &view, me == root && kind == BCAST ? PyBUF_SIMPLE
                                                                      : PyBUF_WRITABLE) < 0)
        return NULL;
    int size = 0;
    MPI_Type_size(*dt, &size);
    long long count = size > 0 ? (long long)(view.len / size) : 0;
    if (count > INT_MAX) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_OverflowError, "call: more than 2**31-1 elements");
        return NULL;
    }
    Record *r = record(op, group, seq, count, dtobj, extra, NULL);
    if (r != NULL) r->kind = kind;
    MPI_Request req = MPI_REQUEST_NULL;
    int err = kind == ALLREDUCE
        ? MPI_Iallreduce(MPI_IN_PLACE, view.buf, (int)count, *dt, *mop, *comm, &req)
        : MPI_Ibcast(view.buf, (int)count, *dt, root, *comm, &req);
    if (err == MPI_SUCCESS) err = wait_for(&req, r, spin, op, group, seqobj, array);
    PyBuffer_Release(&view);
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

/* this rank's own block, copied while the messages run: copy = (destination, source),
 * two buffers of one length (memcpy), else destination[...] = source */
static int own_copy(PyObject *copy) {
    if (copy == Py_None) return 0;
    PyObject *dst = PyTuple_GET_ITEM(copy, 0), *src = PyTuple_GET_ITEM(copy, 1);
    Py_buffer d, s;
    if (PyObject_GetBuffer(dst, &d, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) == 0) {
        if (PyObject_GetBuffer(src, &s, PyBUF_C_CONTIGUOUS) == 0) {
            int same = d.len == s.len;
            if (same) memmove(d.buf, s.buf, (size_t)s.len);
            PyBuffer_Release(&s);
            PyBuffer_Release(&d);
            if (same) return 0;
        } else {
            PyErr_Clear();
            PyBuffer_Release(&d);
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
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(fold, 2), &b, PyBUF_WRITABLE) < 0) return -1;
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(fold, 3), &s, PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&b);
        return -1;
    }
    if (combine && PyObject_GetBuffer(PyTuple_GET_ITEM(fold, 4), &o, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&s);
        PyBuffer_Release(&b);
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
        PyBuffer_Release(&o);
    } else {
        char *acc = me == 0 ? (char *)b.buf : (char *)s.buf;
        for (Py_ssize_t j = 1; j < n && err == MPI_SUCCESS; j++) {
            void *src = j == me ? b.buf : (char *)s.buf + j * b.len;
            err = MPI_Reduce_local(src, acc, count, dt, *op); /* acc = src op acc */
        }
        if (err == MPI_SUCCESS && me != 0) memcpy(b.buf, s.buf, (size_t)b.len);
    }
    PyBuffer_Release(&s);
    PyBuffer_Release(&b);
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
/* The messages of one call: start, own block, tests, watched wait, statuses written
 * back, tags and lengths compared, the blocks folded where `fold` is not None. Returns
 * None (done), the record's id (a tag or length differs), or NULL (an exception). */
static PyObject *messages(PyObject *op, PyObject *group, PyObject *seqobj,
                          PyObject *reqlist, PyObject *stlist, PyObject *tags,
                          PyObject *lengths, MPI_Datatype dt, PyObject *copy,
                          PyObject *meta, long spin, PyObject *keep, PyObject *fold) {
    long long seq = PyLong_AsLongLong(seqobj);
    if (PyErr_Occurred()) return NULL;
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
    for (Py_ssize_t k = 0; k < n; k++) {
        MPI_Request *q = PyMPIRequest_Get(PyList_GET_ITEM(reqlist, k));
        if (q == NULL) goto out;
        reqs[k] = *q;
    }
    Record *r = record(op, group, seq, 0, NULL, NULL, meta);
    int err = MPI_Startall((int)n, reqs), flag = 0;
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
    for (Py_ssize_t k = 0; k < n; k++) { /* (persistent: the handles stay; as MPI left them) */
        MPI_Request *q = PyMPIRequest_Get(PyList_GET_ITEM(reqlist, k));
        if (q != NULL) *q = reqs[k];
        else PyErr_Clear();
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
        same = sts[k].MPI_TAG == want;
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
    else result = r != NULL ? Py_NewRef(r->id) : PyLong_FromLong(-1);
out:
    if (reqs != few) {
        PyMem_Free(reqs);
        PyMem_Free(sts);
    }
    return result;
}

static PyObject *startwait(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 13) {
        PyErr_SetString(PyExc_TypeError, "startwait takes 13 arguments");
        return NULL;
    }
    MPI_Datatype *dt = PyMPIDatatype_Get(args[7]);
    long spin = PyLong_AsLong(args[10]);
    if (dt == NULL || PyErr_Occurred()) return NULL;
    return messages(args[0], args[1], args[2], args[3], args[4], args[5], args[6], *dt,
                    args[8], args[9], spin, args[11], args[12]);
}

/* Plan: a repeated call's messages, kept by its group (ProcessGroup.kept) under a key
 * that says where its memory lies, made once by the Python side (mpicoll/_collectives/
 * _direct.py) and run here by run() without a return to Python.
 * Its fields have names; plan[0], plan[1], plan[2] are its quick entry, requests and
 * statuses, as the Python path's kept entries' are (_direct.take, free, destroy). */
typedef struct {
    PyObject_HEAD
    PyObject *hit;      /* the quick path's entry it was made for (its key's id) */
    PyObject *reqs;     /* list of mpi4py persistent requests */
    PyObject *statuses; /* list of mpi4py Status, one a request */
    PyObject *direct;   /* the Direct: tags, lengths, the counts' check */
    PyObject *tags, *lengths; /* direct.tags, direct.lengths */
    PyObject *datatype; /* mpi4py Datatype of the messages */
    PyObject *copy;     /* None or (destination, source): this rank's own block */
    PyObject *meta;     /* what the flight recorder keeps of the call */
    PyObject *fold;     /* None or (op, rank, buffer, scratch): an all_reduce's reduction */
    PyObject *args;     /* the MPI call it stands for (errors, the watchdog) */
    MPI_Datatype dt;
} Plan;

static PyMemberDef plan_members[] = {
    {"hit", T_OBJECT_EX, offsetof(Plan, hit), READONLY, "the quick entry it was made for"},
    {"reqs", T_OBJECT_EX, offsetof(Plan, reqs), READONLY, "persistent requests"},
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
    Py_TYPE(p)->tp_free((PyObject *)p);
}

static PyObject *plan_new(PyTypeObject *type, PyObject *a, PyObject *kw) {
    static char *names[] = {"hit", "reqs", "statuses", "direct", "datatype", "copy", "meta",
                            "fold", "args", NULL};
    PyObject *v[9];
    if (!PyArg_ParseTupleAndKeywords(a, kw, "$OOOOOOOOO:Plan", names, &v[0], &v[1], &v[2],
                                     &v[3], &v[4], &v[5], &v[6], &v[7], &v[8]))
        return NULL;
    MPI_Datatype *dt = PyMPIDatatype_Get(v[4]);
    if (dt == NULL) return NULL;
    if (!PyList_Check(v[1]) || !PyList_Check(v[2])) {
        PyErr_SetString(PyExc_TypeError, "Plan: reqs and statuses are lists");
        return NULL;
    }
    PyObject *tags = PyObject_GetAttrString(v[3], "tags");
    PyObject *lengths = tags ? PyObject_GetAttrString(v[3], "lengths") : NULL;
    if (lengths == NULL || !PyTuple_Check(tags) || !PyTuple_Check(lengths)) {
        Py_XDECREF(tags);
        Py_XDECREF(lengths);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "Plan: direct.tags, .lengths are tuples");
        return NULL;
    }
    Plan *p = (Plan *)type->tp_alloc(type, 0);
    if (p == NULL) {
        Py_DECREF(tags);
        Py_DECREF(lengths);
        return NULL;
    }
    PyObject **slots[9] = {&p->hit, &p->reqs, &p->statuses, &p->direct, &p->datatype,
                           &p->copy, &p->meta, &p->fold, &p->args};
    for (int i = 0; i < 9; i++) *slots[i] = Py_NewRef(v[i]);
    p->tags = tags;
    p->lengths = lengths;
    p->dt = *dt;
    return (PyObject *)p;
}

static Py_ssize_t plan_len(PyObject *self) {
    (void)self;
    return 3;
}

static PyObject *plan_item(PyObject *self, Py_ssize_t i) {
    Plan *p = (Plan *)self;
    if (i == 0) return Py_NewRef(p->hit);
    if (i == 1) return Py_NewRef(p->reqs);
    if (i == 2) return Py_NewRef(p->statuses);
    PyErr_SetString(PyExc_IndexError, "Plan index out of range (0: hit, 1: reqs, 2: statuses)");
    return NULL;
}

static PySequenceMethods plan_sequence = {.sq_length = plan_len, .sq_item = plan_item};

static PyTypeObject PlanType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mpicoll._core.Plan",
    .tp_basicsize = sizeof(Plan),
    .tp_dealloc = (destructor)plan_dealloc,
    .tp_as_sequence = &plan_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A repeated call's kept messages, run by the compiled core",
    .tp_members = plan_members,
    .tp_new = plan_new,
};

static PyObject *str_missed = NULL;

/* run(op, group, seq, kept, hit, first, second, spin, keep): the plan `kept` holds for a
 * call of quick entry `hit` on the arrays `first` and `second` (key: (id(hit), where
 * first lies, where second lies); second None: (id(hit), where first lies, its length
 * in bytes)), run: taken out while it runs, put back as the newest. Returns False where
 * there is none (the caller makes one), None when done, or the record's id where a tag
 * or length differs (the caller compares: Direct.check); raises an MPI error as MPI gave
 * it (the plan put back, for the caller to settle). */
static PyObject *run(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "run takes 9 arguments");
        return NULL;
    }
    PyObject *kept = args[3], *hit = args[4];
    if (!PyDict_Check(kept)) {
        PyErr_SetString(PyExc_TypeError, "run: kept is a dict");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[5], &view, PyBUF_SIMPLE) < 0) return NULL;
    void *first = view.buf;
    Py_ssize_t length = view.len;
    PyBuffer_Release(&view);
    PyObject *key;
    if (args[6] == Py_None) {
        key = Py_BuildValue("(NNn)", PyLong_FromVoidPtr(hit), PyLong_FromVoidPtr(first),
                            length);
    } else {
        if (PyObject_GetBuffer(args[6], &view, PyBUF_SIMPLE) < 0) return NULL;
        key = Py_BuildValue("(NNN)", PyLong_FromVoidPtr(hit), PyLong_FromVoidPtr(first),
                            PyLong_FromVoidPtr(view.buf));
        PyBuffer_Release(&view);
    }
    if (key == NULL) return NULL;
    PyObject *found = PyDict_GetItemWithError(kept, key); /* borrowed */
    if (found == NULL || Py_TYPE(found) != &PlanType || ((Plan *)found)->hit != hit) {
        Py_DECREF(key);
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_FALSE;
    }
    Plan *p = (Plan *)Py_NewRef(found);
    PyObject *result = NULL;
    if (PyDict_DelItem(kept, key) < 0) goto out; /* (taken out while in use) */
    PyObject *missed = PyObject_GetAttr(args[1], str_missed);
    if (missed == NULL) goto back;
    long some = PyLong_AsLong(missed);
    Py_DECREF(missed);
    if (some == -1 && PyErr_Occurred()) goto back;
    if (some > 0) { /* a call that found its messages: one miss less (_direct.take) */
        PyObject *less = PyLong_FromLong(some - 1);
        int bad = less == NULL || PyObject_SetAttr(args[1], str_missed, less) < 0;
        Py_XDECREF(less);
        if (bad) goto back;
    }
    long spin = PyLong_AsLong(args[7]);
    if (spin == -1 && PyErr_Occurred()) goto back;
    result = messages(args[0], args[1], args[2], p->reqs, p->statuses, p->tags, p->lengths,
                      p->dt, p->copy, p->meta, spin, args[8], p->fold);
back: { /* put back as the newest, unless another thread's took its place meanwhile */
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        int there = PyDict_Contains(kept, key);
        if (there == 0) PyDict_SetItem(kept, key, (PyObject *)p);
        PyErr_Clear();
        PyErr_Restore(et, ev, tb);
    }
out:
    Py_DECREF(key);
    Py_DECREF(p);
    return result;
}

/* failed(id): mark the record `id` failed (a call whose counts disagreed) */
static PyObject *failed(PyObject *self, PyObject *id) {
    for (Py_ssize_t k = 0; k < filled; k++) {
        if (ring[k].id != NULL && PyObject_RichCompareBool(ring[k].id, id, Py_EQ) == 1) {
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
            : Py_BuildValue("((LO)O())", r->count, r->datatype, r->mpi_op);
        PyObject *wait = r->wait ? PyLong_FromLongLong(r->wait) : Py_NewRef(Py_None);
        PyObject *done = r->done ? PyLong_FromLongLong(r->done) : Py_NewRef(Py_None);
        PyObject *item = Py_BuildValue(
            "[OOOLOOOiLNNO]", r->id, r->op, r->group, r->seq, Py_None, meta,
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
    PyObject **slots[8] = {&ids, &inside, &is_inside, &on_block, &on_unblock,
                           &mpi_exception, &states[ISSUED], &states[FAILED]};
    for (int i = 0; i < 8; i++) {
        Py_INCREF(a[i]);
        Py_XSETREF(*slots[i], a[i]);
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"call", (PyCFunction)(void (*)(void))call, METH_FASTCALL,
     "call(kind, op, comm, array, datatype, extra, group, seq, spin): one collective, "
     "blocking (ALLREDUCE in place, extra its Op; BCAST, extra its root)"},
    {"startwait", (PyCFunction)(void (*)(void))startwait, METH_FASTCALL,
     "startwait(op, group, seq, reqs, statuses, tags, lengths, datatype, copy, meta, spin, "
     "keep, fold): "
     "kept messages started and waited for, blocking"},
    {"failed", failed, METH_O, "failed(id): mark a record failed"},
    {"run", (PyCFunction)(void (*)(void))run, METH_FASTCALL,
     "run(op, group, seq, kept, hit, first, second, spin, keep): the kept plan of a call "
     "on these arrays run; False where there is none"},
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
    if (PyType_Ready(&PlanType) < 0) return NULL;
    str_missed = PyUnicode_InternFromString("missed");
    if (str_missed == NULL) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "Plan", (PyObject *)&PlanType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddStringConstant(m, "FAMILY", CORE_FAMILY) < 0 ||
        PyModule_AddIntConstant(m, "MPI_VERSION", MPI_VERSION) < 0 ||
        PyModule_AddIntConstant(m, "MPI_SUBVERSION", MPI_SUBVERSION) < 0 ||
        PyModule_AddIntConstant(m, "API", CORE_API) < 0 ||
        PyModule_AddIntConstant(m, "ALLREDUCE", ALLREDUCE) < 0 ||
        PyModule_AddIntConstant(m, "BCAST", BCAST) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
