/* opdpy.h: the CPython extension opd._C over the C client library (opd/client.h): the types
 * it defines and what its files share. module.c: the module, errors, dtypes, literals and
 * download buffers; client.c: Client (a connection) and the request engine; tensor.c: Tensor
 * (a handle) and Future (a request); values.c: Op (an operator's argument kinds) and the
 * conversion of Python arguments to opd_client_values and of results back; graph.c:
 * GraphValue and the definition and release of graphs (a run is a request like a call).
 *
 * [Note: The Python client's request engine]
 * Every request goes through the C library (framing, pipelining, errors are its own); the
 * extension adds what Python needs on top:
 * - A call may take tensors that do not exist yet: the results of requests still in flight
 *   (a Future's outputs, pending Tensors). The daemon names results by handles it chooses,
 *   so a call that uses one cannot be sent before that reply has come. Such a call is queued;
 *   it is sent as soon as its inputs have handles. Requests leave in program order: once one
 *   is queued, every later one queues behind it, so the daemon runs them in the order the
 *   program made them (in-place operators, views and releases need no other ordering), and
 *   a call whose inputs are ready and finds the queue empty is sent at once.
 * - Completions are reported by the library's callbacks, which run on whichever thread
 *   waits (waits release the GIL) and only append the Future to a list under a mutex. The
 *   rest (handles into Tensors, results and errors into Python objects, sending queued
 *   calls) happens under the GIL in opdpy_client_process, called after every wait and poll.
 *   A Future in flight is referenced by the client until it has been processed; nothing
 *   but opdpy_client_process frees a library future, and nobody else waits on one.
 * - A Tensor whose producer failed carries the exception; a call that takes it fails with
 *   the same exception without being sent, so the first error is the one reported.
 * - Handles are released when their Tensor dies: collected and sent in one Release request
 *   of up to OPDPY_RELEASE_BATCH handles, before any wait and on close (closing the
 *   connection releases them all anyway). A Tensor in a queued call is referenced by it,
 *   so a released handle is never used by a later request.
 * - Requests are written in batches ([Note: Batched writes] in client/src/connection.c):
 *   the connection holds a submission until OPDPY_BATCH_BYTES of them wait, or one has
 *   waited the Client's batch_us (OPDPY_BATCH_US by default), or the program waits for
 *   anything (every wait and poll writes them first), or Client.flush(). A Release request
 *   goes in the same batch as the calls around it.
 *
 * [Note: Completions at submission]
 * A program that only submits (a loop of OpdTensor operations, nothing waited for) must
 * still see its requests complete: the handles of results that died are released only once
 * their reply has been processed, so unprocessed completions pile up handles in the daemon
 * (65,536 a session by default) and memory here. So every submission that finds completions
 * on the list processes them (a check under done_mu when there are none), and the write of
 * a batch reads the replies that have come. And the queue of calls waiting for their inputs
 * (a chain of dependent calls runs at one daemon round trip per call, while Python may make
 * them faster) is bounded: a submission that leaves OPDPY_MAX_QUEUED calls queued waits
 * until fewer are, which is back-pressure, not a change of order or of results.
 * - Operations that read or change session state (download, dispatch state, synchronize,
 *   wait_all) first wait until the queue is empty, which keeps them in program order too.
 *   Uploads and pings are sent at once: they make a new tensor or touch nothing, so no
 *   queued call can depend on their order.
 */
#ifndef OPDPY_H
#define OPDPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "opd/client.h"

#define OPDPY_RELEASE_BATCH 256
#define OPDPY_MAX_ARGS      64
#define OPDPY_MAX_QUEUED    1024
/* [Note: Batched writes] (client/src/connection.c): the bytes and the time a submission may
 * be held for, to be written with the ones after it */
#define OPDPY_BATCH_BYTES   (32u << 10)
#define OPDPY_BATCH_US      500u
/* The code the error factory gets for a request that failed because the connection was lost
 * (the library's OPD_ECANCELED once the client is no longer connected). */
#define OPDPY_ELOST         (-1000)
/* ... and for a connect that found no daemon (OPD_ENOENT, or OPD_EBUSY: no answer in time). */
#define OPDPY_ECONNECT      (-1001)

typedef struct opdpy_client opdpy_client;
typedef struct opdpy_future opdpy_future;
typedef struct opdpy_op opdpy_op;

/* A tensor held by the daemon (a handle of its client's session), or one a request in
 * flight will make (handle 0, source set), or one that failed (error set). */
typedef struct opdpy_tensor {
  PyObject_HEAD opdpy_client *client; /* strong */
  uint64_t handle;                    /* 0: pending, failed, released or closed */
  opdpy_future *source;               /* strong while pending */
  PyObject *error;                    /* the exception of its producer, if it failed */
  int dtype;                          /* -1: not known on this side */
  PyObject *shape;                    /* a tuple, or NULL when not known on this side */
  PyObject *weakrefs;
} opdpy_tensor;

enum { OPDPY_QUEUED, OPDPY_IN_FLIGHT, OPDPY_DONE };
enum { OPDPY_REQ_CALL, OPDPY_REQ_UPLOAD };

struct opdpy_future {
  PyObject_HEAD opdpy_client *client; /* strong */
  int kind;                           /* OPDPY_REQ_* */
  int state;                          /* OPDPY_QUEUED ... */
  opd_future *fut;                    /* while in flight */
  opdpy_future *next;                 /* in the client's queue or completion list */
  opdpy_op *op;                       /* a call's operator (strong) */
  PyObject *args;                     /* a queued call's arguments (strong until sent) */
  PyObject *outputs;                  /* tuple of the Tensors promised, or NULL */
  PyObject *result;                   /* once done: the value */
  PyObject *error;                    /* once done: the exception */
  Py_buffer buf;                      /* an upload's source, held until it completes */
  bool has_buf;
};

struct opdpy_client {
  PyObject_HEAD opd_client *c; /* NULL once closed */
  PyObject *url;
  pthread_mutex_t done_mu; /* guards done_head/done_tail (callbacks run without the GIL) */
  opdpy_future *done_head, *done_tail;
  opdpy_future *queue_head, *queue_tail; /* queued, in program order */
  size_t queued;
  opd_client_tensor release[OPDPY_RELEASE_BATCH];
  size_t nrelease;
  int waiting;       /* threads inside the library without the GIL */
  bool processing;   /* in opdpy_client_process */
  uint64_t requests; /* requests sent (calls, uploads, releases, ...) */
  PyObject *weakrefs;
  PyObject *dict;
};

/* The kinds of an operator's arguments (values.c). */
enum {
  OPDPY_K_TENSOR = 'T',
  OPDPY_K_TENSORS = 'L',
  OPDPY_K_OPT_TENSORS = 'l',
  OPDPY_K_INT = 'i',
  OPDPY_K_INTS = 'I',
  OPDPY_K_FLOAT = 'f',
  OPDPY_K_FLOATS = 'F',
  OPDPY_K_BOOL = 'b',
  OPDPY_K_BOOLS = 'B',
  OPDPY_K_SCALAR = 's',
  OPDPY_K_DTYPE = 'y',
  OPDPY_K_DEVICE = 'v',
  OPDPY_K_STR = 'S',
  OPDPY_K_GENERATOR = 'g',
};

struct opdpy_op {
  PyObject_HEAD char *name; /* "aten::add.Tensor" */
  PyObject *name_obj;
  int nargs;
  char kinds[OPDPY_MAX_ARGS];
  bool optional[OPDPY_MAX_ARGS];
  PyObject *arg_names; /* tuple of str */
  int nouts;           /* tensors it returns when known (-1: a list or other values) */
  int ret_form;        /* OPDPY_RET_* */
  uint64_t graph;      /* nonzero: not an operator but a run of this graph (graph.c) */
};
enum { OPDPY_RET_SINGLE, OPDPY_RET_TUPLE, OPDPY_RET_LIST };

/* A small constant tensor passed by value. */
typedef struct opdpy_literal {
  PyObject_HEAD PyObject *data; /* bytes */
  int64_t shape[OPD_CLIENT_MAX_DIMS];
  opd_client_literal lit;
} opdpy_literal;

/* Memory a download allocated, exported with the buffer protocol (format, shape). */
typedef struct opdpy_buffer {
  PyObject_HEAD void *data; /* malloc'd by the library */
  Py_ssize_t nbytes;
  int dtype;
  int ndim;
  Py_ssize_t shape[OPD_CLIENT_MAX_DIMS];
  Py_ssize_t strides[OPD_CLIENT_MAX_DIMS];
  int exports;
} opdpy_buffer;

/* A value of a graph being defined (graph.c): the library's graph value
 * ([Note: Graph values] in opd/client.h). */
typedef struct opdpy_graph_value {
  PyObject_HEAD opd_client_tensor value;
} opdpy_graph_value;

extern PyTypeObject opdpy_client_type, opdpy_tensor_type, opdpy_future_type, opdpy_op_type,
    opdpy_literal_type, opdpy_buffer_type, opdpy_graph_value_type;

/* ---- module.c ---- */
/* Sets the Python exception for a library error (code err, message, operator) and returns
 * NULL; the exception object itself (new reference) with opdpy_error_object. */
PyObject *opdpy_raise(int err, const char *message, const char *op);
PyObject *opdpy_error_object(int err, const char *message, const char *op);
/* The exception for the thread's last synchronous library failure. */
PyObject *opdpy_raise_last(void);
/* The struct format character and element size of an opd dtype (NULL: none). */
const char *opdpy_dtype_format(int dtype);
/* An opd dtype from a buffer format ("f", "<f", "=d", "?"...): -1 if none. */
int opdpy_dtype_from_format(const char *fmt, Py_ssize_t itemsize);
/* An opd dtype from a Python object: an int, or what opd._dtype_code converts. -1 + error. */
int opdpy_dtype_arg(PyObject *o);
/* A device from "cpu", "cuda:1", (type, index) or an object with .type and .index. */
int opdpy_device_arg(PyObject *o, opd_client_device *out);
PyObject *opdpy_buffer_new(void *data, const opd_client_tensor_info *info);

/* ---- client.c ---- */
/* Completes what the library finished and sends what became ready. 0, or -1 with an
 * exception (only for a failure of the client itself). */
int opdpy_client_process(opdpy_client *cl);
/* Waits (releasing the GIL) until f is done. timeout_ms < 0: no limit. 0 or -1. */
int opdpy_client_wait(opdpy_client *cl, opdpy_future *f, int timeout_ms);
/* Queues a handle for release. */
void opdpy_client_release_handle(opdpy_client *cl, uint64_t handle);
/* Waits until every queued request has been sent. 0 or -1. */
int opdpy_client_wait_queue(opdpy_client *cl);
bool opdpy_client_open(opdpy_client *cl);
PyObject *opdpy_raise_closed(void);

/* ---- graph.c: Client._graph_define, Client._graph_release ---- */
PyObject *opdpy_client_graph_define(opdpy_client *cl, PyObject *args);
PyObject *opdpy_client_graph_release(opdpy_client *cl, PyObject *arg);

/* ---- tensor.c ---- */
opdpy_tensor *opdpy_tensor_new(opdpy_client *cl, uint64_t handle, opdpy_future *source);
opdpy_future *opdpy_future_new(opdpy_client *cl, int kind);
/* Marks f done with an error (steals exc) and fails its outputs. */
void opdpy_future_fail(opdpy_future *f, PyObject *exc);

/* ---- values.c ---- */
/* Where a call's arguments are converted: values plus the memory their lists point to. */
typedef struct opdpy_callbuf {
  opd_client_value v[OPDPY_MAX_ARGS];
  size_t n;
  unsigned char inline_mem[4096];
  size_t used;
  void **heap; /* blocks beyond inline_mem */
  size_t nheap;
} opdpy_callbuf;
void opdpy_callbuf_init(opdpy_callbuf *b);
void opdpy_callbuf_free(opdpy_callbuf *b);
/* Converts args (a tuple) for a call of op on cl: 0 ready, 1 an input is still pending (b is
 * incomplete), 2 an input failed (*failed: its exception, new reference), -1 a bad argument
 * (exception set). */
int opdpy_convert_args(opdpy_client *cl, opdpy_op *op, PyObject *args, opdpy_callbuf *b,
                       PyObject **failed);
/* A result value as a Python object (tensors as new Tensors of cl). */
PyObject *opdpy_value_to_py(opdpy_client *cl, const opd_client_value *v);
/* The results of a call shaped as op returns them. */
PyObject *opdpy_results_to_py(opdpy_client *cl, opdpy_op *op, const opd_client_value *v, size_t n);

#endif
