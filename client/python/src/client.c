/* client.c: Client, one connection to the daemon (an opd_client), and the request engine of
 * [Note: The Python client's request engine] (opdpy.h): submission in program order, the
 * queue of calls waiting for their inputs' handles, completion under the GIL, waiting with
 * the GIL released, batched releases, closing. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opdpy.h"

bool opdpy_client_open(opdpy_client *cl) {
  return cl->c != NULL;
}

PyObject *opdpy_raise_closed(void) {
  return opdpy_raise(OPD_ECANCELED, "the client is closed", NULL);
}

static PyObject *request_error(opdpy_client *cl, int err, const char *msg, const char *op) {
  if (err == OPD_ECANCELED && cl->c && !opd_client_connected(cl->c)) err = OPDPY_ELOST;
  return opdpy_error_object(err, msg, op && *op ? op : NULL);
}

/* The exception raised now, taken (new reference). */
static PyObject *take_exception(void) {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (tb) PyException_SetTraceback(value, tb);
  Py_XDECREF(type);
  Py_XDECREF(tb);
  return value;
}

/* Runs on the thread doing the library's I/O, without the GIL. */
static void on_done(opd_future *f, void *user) {
  (void)f;
  opdpy_future *pf = user;
  opdpy_client *cl = pf->client;
  pthread_mutex_lock(&cl->done_mu);
  pf->next = NULL;
  if (cl->done_tail)
    cl->done_tail->next = pf;
  else
    cl->done_head = pf;
  cl->done_tail = pf;
  pthread_mutex_unlock(&cl->done_mu);
}

static void flush_releases(opdpy_client *cl) {
  if (!cl->nrelease || !cl->c) {
    cl->nrelease = 0;
    return;
  }
  /* fire and forget: the frame is built now, an unknown handle is the only possible error */
  if (opd_client_release_async(cl->c, cl->release, cl->nrelease, NULL, NULL, NULL) == 0)
    cl->requests++;
  cl->nrelease = 0;
}

void opdpy_client_release_handle(opdpy_client *cl, uint64_t handle) {
  if (!cl->c) return; /* closing released everything */
  cl->release[cl->nrelease++] = handle;
  if (cl->nrelease == OPDPY_RELEASE_BATCH) flush_releases(cl);
}

/* Completes what the library finished, if anything: at submissions, which a program that
 * never waits makes all the time ([Note: Completions at submission] in opdpy.h). */
static void process_if_done(opdpy_client *cl) {
  pthread_mutex_lock(&cl->done_mu);
  bool any = cl->done_head != NULL;
  pthread_mutex_unlock(&cl->done_mu);
  if (any) opdpy_client_process(cl);
}

/* ---- submission ---- */

/* Sends a converted call; pf is in flight afterwards (referenced by the client) or failed. */
static void send_call(opdpy_client *cl, opdpy_future *pf, opdpy_callbuf *b) {
  int rc = OPD_ECANCELED;
  if (cl->c && pf->op->graph) { /* a graph run: its arguments are the inputs (graph.c) */
    opd_client_tensor inputs[OPDPY_MAX_ARGS];
    for (size_t i = 0; i < b->n; i++) inputs[i] = b->v[i].u.tensor;
    rc = opd_graph_run_async(cl->c, pf->op->graph, inputs, b->n, on_done, pf, &pf->fut);
  } else if (cl->c) {
    rc = opd_client_call_async(cl->c, pf->op->name, b->v, b->n, on_done, pf, &pf->fut);
  }
  if (rc < 0) {
    PyObject *exc = cl->c ? request_error(cl, rc, opd_client_last_error(), pf->op->name)
                          : opdpy_error_object(OPD_ECANCELED, "the client is closed", NULL);
    if (!exc) exc = take_exception();
    opdpy_future_fail(pf, exc);
    return;
  }
  cl->requests++;
  pf->state = OPDPY_IN_FLIGHT;
  Py_INCREF(pf);      /* the in-flight reference, dropped by complete() */
  Py_CLEAR(pf->args); /* the frame is built: the arguments may go */
}

static void enqueue(opdpy_client *cl, opdpy_future *pf) {
  Py_INCREF(pf); /* the queue's reference */
  pf->next = NULL;
  if (cl->queue_tail)
    cl->queue_tail->next = pf;
  else
    cl->queue_head = pf;
  cl->queue_tail = pf;
  cl->queued++;
}

/* Fails every queued call with err and message (the connection is gone or closing). */
static void fail_queue(opdpy_client *cl, int err, const char *message) {
  while (cl->queue_head) {
    opdpy_future *pf = cl->queue_head;
    cl->queue_head = pf->next;
    if (!cl->queue_head) cl->queue_tail = NULL;
    cl->queued--;
    pf->next = NULL;
    PyObject *exc = opdpy_error_object(err, message, NULL);
    if (!exc) exc = take_exception();
    opdpy_future_fail(pf, exc);
    Py_DECREF(pf); /* the queue's reference */
  }
}

/* Sends the queued calls whose inputs became ready, in order, up to the first that waits. */
static void drain(opdpy_client *cl) {
  while (cl->queue_head) {
    opdpy_future *pf = cl->queue_head;
    opdpy_callbuf b;
    opdpy_callbuf_init(&b);
    PyObject *failed = NULL;
    int rc = opdpy_convert_args(cl, pf->op, pf->args, &b, &failed);
    if (rc == 1) {
      opdpy_callbuf_free(&b);
      break;
    }
    cl->queue_head = pf->next;
    if (!cl->queue_head) cl->queue_tail = NULL;
    cl->queued--;
    pf->next = NULL;
    if (rc == 2)
      opdpy_future_fail(pf, failed);
    else if (rc < 0)
      opdpy_future_fail(pf, take_exception());
    else
      send_call(cl, pf, &b);
    opdpy_callbuf_free(&b);
    Py_DECREF(pf); /* the queue's reference */
  }
}

/* Moves a tensor result's handle into the output Tensors it was promised to. */
static int fill_outputs(opdpy_client *cl, opdpy_future *pf, const opd_client_value *v, size_t n) {
  Py_ssize_t want = PyTuple_GET_SIZE(pf->outputs), got = 0;
  for (size_t i = 0; i < n; i++) {
    if (v[i].kind == OPD_CV_TENSOR)
      got++;
    else if (v[i].kind == OPD_CV_TENSORS)
      got += (Py_ssize_t)v[i].len;
    else
      got = -1 - want; /* not a tensor: a mismatch */
  }
  if (got != want) {
    for (size_t i = 0; i < n; i++) { /* the daemon made them: release them */
      if (v[i].kind == OPD_CV_TENSOR) opdpy_client_release_handle(cl, v[i].u.tensor);
      if (v[i].kind == OPD_CV_TENSORS)
        for (size_t k = 0; k < v[i].len; k++) opdpy_client_release_handle(cl, v[i].u.tensors[k]);
    }
    char msg[160];
    snprintf(msg, sizeof msg, "%s returned results that are not the %zd tensors expected",
             pf->op->name, want);
    opdpy_future_fail(pf, opdpy_error_object(OPD_EINTERNAL, msg, pf->op->name));
    return -1;
  }
  Py_ssize_t k = 0;
  for (size_t i = 0; i < n; i++) {
    size_t m = v[i].kind == OPD_CV_TENSOR ? 1 : v[i].len;
    for (size_t j = 0; j < m; j++, k++) {
      opdpy_tensor *t = (opdpy_tensor *)PyTuple_GET_ITEM(pf->outputs, k);
      t->handle = v[i].kind == OPD_CV_TENSOR ? v[i].u.tensor : v[i].u.tensors[j];
      Py_CLEAR(t->source); /* pf is kept alive by the caller's reference */
    }
  }
  return 0;
}

/* A request the library finished: its results or error into Python objects. */
static void complete(opdpy_client *cl, opdpy_future *pf) {
  opd_future *f = pf->fut;
  int st = opd_future_status(f);
  if (st != 0) {
    PyObject *exc = request_error(cl, st, opd_future_error(f), opd_future_error_op(f));
    if (!exc) exc = take_exception();
    opdpy_future_fail(pf, exc);
  } else if (pf->kind == OPDPY_REQ_UPLOAD) {
    opdpy_tensor *t = (opdpy_tensor *)PyTuple_GET_ITEM(pf->outputs, 0);
    t->handle = opd_future_handle(f);
    Py_CLEAR(t->source);
  } else {
    size_t n;
    const opd_client_value *v = opd_future_results(f, &n);
    if (pf->outputs)
      fill_outputs(cl, pf, v, n);
    else if (!(pf->result = opdpy_results_to_py(cl, pf->op, v, n)))
      opdpy_future_fail(pf, take_exception());
  }
  opd_future_free(f);
  pf->fut = NULL;
  if (pf->has_buf) {
    PyBuffer_Release(&pf->buf);
    pf->has_buf = false;
  }
  pf->state = OPDPY_DONE;
  Py_CLEAR(pf->args);
  Py_DECREF(pf); /* the in-flight reference */
}

int opdpy_client_process(opdpy_client *cl) {
  if (cl->processing) return 0; /* reentered from a destructor: the outer call goes on */
  cl->processing = true;        /* the caller holds cl: what completes here may drop references */
  for (;;) {
    pthread_mutex_lock(&cl->done_mu);
    opdpy_future *list = cl->done_head;
    cl->done_head = cl->done_tail = NULL;
    pthread_mutex_unlock(&cl->done_mu);
    if (!list) break;
    while (list) {
      opdpy_future *next = list->next;
      list->next = NULL;
      complete(cl, list);
      list = next;
    }
    drain(cl);
  }
  drain(cl);
  cl->processing = false;
  return 0;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int opdpy_client_wait(opdpy_client *cl, opdpy_future *f, int timeout_ms) {
  flush_releases(cl);
  int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
  opdpy_client_process(cl);
  while (f->state != OPDPY_DONE) {
    if (!cl->c) { /* close fails every request: not reached */
      opdpy_raise_closed();
      return -1;
    }
    int slice = 100; /* wake up to see signals (Ctrl-C) */
    if (deadline >= 0) {
      int64_t left = deadline - now_ms();
      if (left <= 0) {
        opdpy_raise(OPD_EBUSY, "timed out waiting for the daemon", NULL);
        return -1;
      }
      if (left < slice) slice = (int)left;
    }
    opd_client *c = cl->c;
    int rc;
    cl->waiting++;
    Py_BEGIN_ALLOW_THREADS rc = opd_client_poll(c, slice);
    Py_END_ALLOW_THREADS cl->waiting--;
    opdpy_client_process(cl);
    if (f->state == OPDPY_DONE) break;
    if (rc < 0 && opd_client_pending(c) == 0) { /* lost: nothing in flight will send them */
      fail_queue(cl, OPDPY_ELOST, "the connection to the daemon was lost");
      break;
    }
    if (PyErr_CheckSignals() < 0) return -1;
  }
  return 0;
}

/* [Note: Completions at submission] (opdpy.h): waits until fewer than limit calls are
 * queued. Not while completing (a destructor that submits): the outer wait goes on. */
static int wait_queue_below(opdpy_client *cl, size_t limit) {
  while (cl->queued >= limit && !cl->processing && cl->queue_head) {
    opdpy_future *head = cl->queue_head;
    Py_INCREF(head);
    int rc = opdpy_client_wait(cl, head, -1);
    Py_DECREF(head);
    if (rc < 0) return -1;
  }
  return 0;
}

int opdpy_client_wait_queue(opdpy_client *cl) {
  while (cl->queue_tail) {
    opdpy_future *tail = cl->queue_tail;
    Py_INCREF(tail);
    int rc = opdpy_client_wait(cl, tail, -1);
    Py_DECREF(tail);
    if (rc < 0) return -1;
  }
  return 0;
}

/* ---- the type ---- */

static int check_open(opdpy_client *cl) {
  if (cl->c) return 0;
  opdpy_raise_closed();
  return -1;
}

static PyObject *client_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  (void)args;
  (void)kw;
  opdpy_client *cl = (opdpy_client *)type->tp_alloc(type, 0);
  if (!cl) return NULL;
  pthread_mutex_init(&cl->done_mu, NULL);
  cl->url = PyUnicode_FromString("");
  return (PyObject *)cl;
}

static int client_init(opdpy_client *self, PyObject *args, PyObject *kw) {
  static char *names[] = {
      "url",          "client_name",         "connect_timeout_ms", "max_in_flight", "placement",
      "affinity_key", "liveness_timeout_ms", "call_timeout_ms",    "batch_us",      NULL};
  PyObject *url;
  const char *name = "opd-python", *placement = "first", *affinity_key = NULL;
  int timeout_ms = 0, liveness_ms = 0, call_ms = 0;
  unsigned int max_in_flight = 0, batch_us = OPDPY_BATCH_US;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "U|siIsziiI", names, &url, &name, &timeout_ms,
                                   &max_in_flight, &placement, &affinity_key, &liveness_ms,
                                   &call_ms, &batch_us))
    return -1;
  opd_client_placement place;
  if (opd_client_placement_parse(placement, &place) != 0) {
    PyErr_SetString(PyExc_ValueError, opd_client_last_error());
    return -1;
  }
  if (self->c) {
    PyErr_SetString(PyExc_RuntimeError, "the client is already connected");
    return -1;
  }
  const char *u = PyUnicode_AsUTF8(url);
  if (!u) return -1;
  opd_client_options opts = {.client_name = name,
                             .connect_timeout_ms = timeout_ms,
                             .max_in_flight = max_in_flight,
                             .placement = place,
                             .affinity_key = affinity_key,
                             .liveness_timeout_ms = liveness_ms,
                             .call_timeout_ms = call_ms,
                             .write_batch_bytes = batch_us ? OPDPY_BATCH_BYTES : 0,
                             .write_batch_us = batch_us};
  opd_client *c = NULL;
  int rc;
  Py_BEGIN_ALLOW_THREADS rc = opd_client_connect(u, &opts, &c);
  Py_END_ALLOW_THREADS if (rc < 0) {
    /* no daemon there (refused, no such socket) or no answer in time */
    opdpy_raise(rc == OPD_ENOENT || rc == OPD_EBUSY ? OPDPY_ECONNECT : rc, opd_client_last_error(),
                NULL);
    return -1;
  }
  self->c = c;
  Py_INCREF(url);
  Py_XSETREF(self->url, url);
  return 0;
}

/* Fails the queued calls, closes the connection (the library fails what is in flight) and
 * completes everything. */
static int client_shutdown(opdpy_client *cl) {
  if (!cl->c) return 0;
  if (cl->waiting) {
    PyErr_SetString(PyExc_RuntimeError, "close() while another thread waits on the client");
    return -1;
  }
  cl->nrelease = 0; /* closing releases every handle */
  opd_client *c = cl->c;
  cl->c = NULL;
  fail_queue(cl, OPD_ECANCELED, "the client was closed");
  opd_client_close(c); /* runs the callbacks of the requests in flight */
  opdpy_client_process(cl);
  return 0;
}

static void client_dealloc(opdpy_client *self) {
  if (self->weakrefs) PyObject_ClearWeakRefs((PyObject *)self);
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  if (client_shutdown(self) < 0) PyErr_Clear();
  PyErr_Restore(type, value, tb);
  pthread_mutex_destroy(&self->done_mu);
  Py_XDECREF(self->url);
  Py_XDECREF(self->dict);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *client_close(opdpy_client *self, PyObject *unused) {
  (void)unused;
  if (client_shutdown(self) < 0) return NULL;
  Py_RETURN_NONE;
}

/* _call(op, args): a synchronous call; its value as the operator returns it. */
static PyObject *client_call(opdpy_client *self, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 2 || Py_TYPE(args[0]) != &opdpy_op_type || !PyTuple_Check(args[1])) {
    PyErr_SetString(PyExc_TypeError, "_call(op: Op, args: tuple)");
    return NULL;
  }
  if (check_open(self) < 0) return NULL;
  opdpy_op *op = (opdpy_op *)args[0];
  opdpy_callbuf b;
  opdpy_callbuf_init(&b);
  PyObject *failed = NULL, *value = NULL;
  int rc = opdpy_convert_args(self, op, args[1], &b, &failed);
  if (rc == 2) {
    PyErr_SetObject((PyObject *)Py_TYPE(failed), failed);
    Py_DECREF(failed);
  } else if (rc == 0 && !self->queue_head) { /* the direct path: nothing to wait for first */
    opd_future *f;
    int st = opd_client_call_async(self->c, op->name, b.v, b.n, NULL, NULL, &f);
    if (st < 0) {
      opdpy_raise(st, opd_client_last_error(), op->name);
    } else {
      self->requests++;
      flush_releases(self);
      self->waiting++;
      Py_BEGIN_ALLOW_THREADS st = opd_future_wait(f);
      Py_END_ALLOW_THREADS self->waiting--;
      if (st < 0) {
        PyObject *exc = request_error(self, st, opd_future_error(f), opd_future_error_op(f));
        if (exc) {
          PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
          Py_DECREF(exc);
        }
      } else {
        size_t n;
        const opd_client_value *v = opd_future_results(f, &n);
        value = opdpy_results_to_py(self, op, v, n);
      }
      opd_future_free(f);
      opdpy_client_process(self);
    }
  } else if (rc >= 0) { /* queued: behind the others, or until its inputs exist */
    opdpy_future *pf = opdpy_future_new(self, OPDPY_REQ_CALL);
    if (pf) {
      Py_INCREF(op);
      pf->op = op;
      Py_INCREF(args[1]);
      pf->args = args[1];
      enqueue(self, pf);
      if (opdpy_client_wait(self, pf, -1) == 0) {
        if (pf->error)
          PyErr_SetObject((PyObject *)Py_TYPE(pf->error), pf->error);
        else {
          value = pf->result;
          pf->result = NULL;
        }
      }
      Py_DECREF(pf);
    }
  }
  opdpy_callbuf_free(&b);
  return value;
}

/* _submit(op, args, nouts=None): an asynchronous call; a Future whose outputs are nouts
 * pending Tensors (default: op.nouts; -1: none, the results come with result()). */
static PyObject *client_submit(opdpy_client *self, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs < 2 || nargs > 3 || Py_TYPE(args[0]) != &opdpy_op_type || !PyTuple_Check(args[1])) {
    PyErr_SetString(PyExc_TypeError, "_submit(op: Op, args: tuple, nouts: int = None)");
    return NULL;
  }
  if (check_open(self) < 0) return NULL;
  opdpy_op *op = (opdpy_op *)args[0];
  long nouts = op->nouts;
  if (nargs == 3 && args[2] != Py_None) {
    nouts = PyLong_AsLong(args[2]);
    if (nouts == -1 && PyErr_Occurred()) return NULL;
  }
  opdpy_callbuf b;
  opdpy_callbuf_init(&b);
  PyObject *failed = NULL;
  int rc = opdpy_convert_args(self, op, args[1], &b, &failed);
  if (rc < 0) {
    opdpy_callbuf_free(&b);
    return NULL;
  }
  opdpy_future *pf = opdpy_future_new(self, OPDPY_REQ_CALL);
  if (!pf) goto fail;
  Py_INCREF(op);
  pf->op = op;
  if (nouts >= 0) {
    if (!(pf->outputs = PyTuple_New(nouts))) goto fail;
    for (long i = 0; i < nouts; i++) {
      opdpy_tensor *t = opdpy_tensor_new(self, 0, pf);
      if (!t) goto fail;
      PyTuple_SET_ITEM(pf->outputs, i, (PyObject *)t);
    }
  }
  if (rc == 2) {
    opdpy_future_fail(pf, failed);
    failed = NULL;
  } else if (rc == 0 && !self->queue_head) {
    send_call(self, pf, &b);
  } else {
    Py_INCREF(args[1]);
    pf->args = args[1];
    enqueue(self, pf);
    /* see what came back meanwhile, without waiting: it may let the queue move */
    if (opd_client_poll(self->c, 0) > 0) opdpy_client_process(self);
  }
  opdpy_callbuf_free(&b);
  process_if_done(self);
  if (self->queued >= OPDPY_MAX_QUEUED && wait_queue_below(self, OPDPY_MAX_QUEUED) < 0) {
    Py_DECREF(pf);
    return NULL;
  }
  return (PyObject *)pf;
fail:
  Py_XDECREF(failed);
  if (pf) opdpy_future_fail(pf, NULL);
  Py_XDECREF(pf);
  opdpy_callbuf_free(&b);
  return NULL;
}

/* The source of an upload: a C-contiguous buffer, its dtype and shape. */
typedef struct upload_args {
  Py_buffer view;
  int dtype;
  int ndim;
  int64_t shape[OPD_CLIENT_MAX_DIMS];
  opd_client_device device;
  bool has_device;
} upload_args;

static int parse_upload(PyObject *args, PyObject *kw, upload_args *u) {
  static char *names[] = {"data", "dtype", "shape", "device", NULL};
  PyObject *data, *dtype = Py_None, *shape = Py_None, *device = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OOO", names, &data, &dtype, &shape, &device))
    return -1;
  if (PyObject_GetBuffer(data, &u->view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError,
                 "upload() takes a C-contiguous object with the buffer protocol (a numpy array, "
                 "bytes...), not %.100s",
                 Py_TYPE(data)->tp_name);
    return -1;
  }
  u->has_device = device != Py_None;
  if (u->has_device && opdpy_device_arg(device, &u->device) < 0) goto fail;
  if (dtype != Py_None) {
    if ((u->dtype = opdpy_dtype_arg(dtype)) < 0) goto fail;
  } else if ((u->dtype = opdpy_dtype_from_format(u->view.format, u->view.itemsize)) < 0) {
    PyErr_Format(PyExc_TypeError,
                 "upload(): no opd dtype for the buffer format '%s'; pass dtype=", u->view.format);
    goto fail;
  }
  if (shape != Py_None) {
    PyObject *seq = PySequence_Fast(shape, "shape must be a sequence of ints");
    if (!seq) goto fail;
    u->ndim = (int)PySequence_Fast_GET_SIZE(seq);
    for (int i = 0; i < u->ndim && i < OPD_CLIENT_MAX_DIMS; i++)
      u->shape[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
    Py_DECREF(seq);
    if (PyErr_Occurred()) goto fail;
  } else {
    u->ndim = u->view.ndim;
    if ((size_t)u->view.itemsize != opd_client_dtype_size(u->dtype)) {
      PyErr_Format(PyExc_ValueError,
                   "upload(): the buffer's items are %zd bytes, an element of dtype %d %zu; "
                   "pass shape=",
                   u->view.itemsize, u->dtype, opd_client_dtype_size(u->dtype));
      goto fail;
    }
    for (int i = 0; i < u->ndim && i < OPD_CLIENT_MAX_DIMS; i++) u->shape[i] = u->view.shape[i];
  }
  if (u->ndim > OPD_CLIENT_MAX_DIMS) {
    PyErr_SetString(PyExc_ValueError, "upload(): too many dimensions");
    goto fail;
  }
  return 0;
fail:
  PyBuffer_Release(&u->view);
  return -1;
}

static PyObject *shape_tuple(const int64_t *shape, int ndim) {
  PyObject *t = PyTuple_New(ndim);
  for (int i = 0; t && i < ndim; i++) PyTuple_SET_ITEM(t, i, PyLong_FromLongLong(shape[i]));
  return t;
}

static PyObject *client_upload(opdpy_client *self, PyObject *args, PyObject *kw) {
  if (check_open(self) < 0) return NULL;
  upload_args u;
  if (parse_upload(args, kw, &u) < 0) return NULL;
  opd_client_tensor h = 0;
  int rc;
  opd_client *c = self->c;
  self->waiting++;
  Py_BEGIN_ALLOW_THREADS rc =
      opd_client_upload(c, u.dtype, u.shape, u.ndim, u.view.buf, (size_t)u.view.len,
                        u.has_device ? &u.device : NULL, &h);
  Py_END_ALLOW_THREADS self->waiting--;
  PyBuffer_Release(&u.view);
  self->requests++;
  opdpy_client_process(self);
  if (rc < 0) return opdpy_raise(rc, opd_client_last_error(), NULL);
  opdpy_tensor *t = opdpy_tensor_new(self, h, NULL);
  if (!t) return NULL;
  t->dtype = u.dtype;
  t->shape = shape_tuple(u.shape, u.ndim);
  return (PyObject *)t;
}

/* upload_async(data, dtype=None, shape=None, device=None): a Future whose output is the
 * tensor; data must not change until it completes (the buffer is held until then). */
static PyObject *client_upload_async(opdpy_client *self, PyObject *args, PyObject *kw) {
  if (check_open(self) < 0) return NULL;
  upload_args u;
  if (parse_upload(args, kw, &u) < 0) return NULL;
  opdpy_future *pf = opdpy_future_new(self, OPDPY_REQ_UPLOAD);
  opdpy_tensor *t = pf ? opdpy_tensor_new(self, 0, pf) : NULL;
  if (!t || !(pf->outputs = PyTuple_Pack(1, (PyObject *)t))) {
    PyBuffer_Release(&u.view);
    if (pf) opdpy_future_fail(pf, NULL);
    Py_XDECREF(t);
    Py_XDECREF(pf);
    return NULL;
  }
  t->dtype = u.dtype;
  t->shape = shape_tuple(u.shape, u.ndim);
  Py_DECREF(t);
  pf->buf = u.view;
  pf->has_buf = true;
  int rc =
      opd_client_upload_async(self->c, u.dtype, u.shape, u.ndim, u.view.buf, (size_t)u.view.len,
                              u.has_device ? &u.device : NULL, on_done, pf, &pf->fut);
  if (rc < 0) {
    PyBuffer_Release(&pf->buf);
    pf->has_buf = false;
    PyObject *exc = request_error(self, rc, opd_client_last_error(), NULL);
    if (!exc) exc = take_exception();
    opdpy_future_fail(pf, exc);
  } else {
    self->requests++;
    pf->state = OPDPY_IN_FLIGHT;
    Py_INCREF(pf);
  }
  process_if_done(self);
  return (PyObject *)pf;
}

/* download(tensor, out=None): the tensor's data, contiguous row-major, read straight into
 * out (a writable C-contiguous buffer of exactly its size: returned) or into a new Buffer. */
static PyObject *client_download(opdpy_client *self, PyObject *args, PyObject *kw) {
  static char *names[] = {"tensor", "out", NULL};
  PyObject *tobj, *out = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|O", names, &opdpy_tensor_type, &tobj, &out))
    return NULL;
  opdpy_tensor *t = (opdpy_tensor *)tobj;
  if (check_open(self) < 0) return NULL;
  if (t->client != self) {
    PyErr_SetString(PyExc_ValueError, "download(): a tensor of another connection");
    return NULL;
  }
  PyObject *w = PyObject_CallMethod(tobj, "wait", NULL);
  if (!w) return NULL;
  Py_DECREF(w);
  if (opdpy_client_wait_queue(self) < 0 || check_open(self) < 0) return NULL;
  flush_releases(self);
  opd_client_tensor_info info;
  opd_client *c = self->c;
  opd_client_tensor h = t->handle;
  int rc;
  if (out == Py_None) {
    void *data = NULL;
    self->waiting++;
    Py_BEGIN_ALLOW_THREADS rc = opd_client_download_alloc(c, h, &info, &data);
    Py_END_ALLOW_THREADS self->waiting--;
    self->requests++;
    opdpy_client_process(self);
    if (rc < 0) return opdpy_raise(rc, opd_client_last_error(), NULL);
    t->dtype = info.dtype;
    Py_XSETREF(t->shape, shape_tuple(info.shape, info.ndim));
    return opdpy_buffer_new(data, &info);
  }
  Py_buffer view;
  if (PyObject_GetBuffer(out, &view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE | PyBUF_FORMAT) < 0)
    return NULL;
  self->waiting++;
  Py_BEGIN_ALLOW_THREADS rc = opd_client_download(c, h, view.buf, (size_t)view.len, &info);
  Py_END_ALLOW_THREADS self->waiting--;
  self->requests++;
  int fmt_dtype = opdpy_dtype_from_format(view.format, view.itemsize);
  char fmt[8];
  snprintf(fmt, sizeof fmt, "%s", view.format ? view.format : "B");
  PyBuffer_Release(&view);
  opdpy_client_process(self);
  if (rc < 0) return opdpy_raise(rc, opd_client_last_error(), NULL);
  if (info.nbytes != (uint64_t)view.len ||
      (fmt_dtype >= 0 && fmt_dtype != OPD_UINT8 && fmt_dtype != info.dtype &&
       !(info.dtype == OPD_BFLOAT16 && fmt_dtype == OPD_INT16)))
    return PyErr_Format(PyExc_ValueError,
                        "download(): the tensor has %llu bytes of dtype %d; out has %zd bytes of "
                        "format '%s'",
                        (unsigned long long)info.nbytes, info.dtype, view.len, fmt);
  t->dtype = info.dtype;
  Py_XSETREF(t->shape, shape_tuple(info.shape, info.ndim));
  Py_INCREF(out);
  return out;
}

/* A sequence of str as an array of UTF-8 pointers (kept alive by seq). */
static int str_array(PyObject *o, PyObject **seq, const char ***out, size_t *n) {
  *seq = NULL;
  *out = NULL;
  *n = 0;
  if (!o || o == Py_None) return 0;
  if (!(*seq = PySequence_Fast(o, "dispatch keys must be a sequence of str"))) return -1;
  *n = (size_t)PySequence_Fast_GET_SIZE(*seq);
  *out = PyMem_Malloc((*n ? *n : 1) * sizeof **out);
  if (!*out) {
    PyErr_NoMemory();
    return -1;
  }
  for (size_t i = 0; i < *n; i++)
    if (!((*out)[i] = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(*seq, i)))) return -1;
  return 0;
}

static PyObject *client_set_dispatch_state(opdpy_client *self, PyObject *args, PyObject *kw) {
  static char *names[] = {"include", "exclude", "remove_include", "remove_exclude", NULL};
  PyObject *lists[4] = {NULL, NULL, NULL, NULL}, *seqs[4] = {NULL, NULL, NULL, NULL};
  const char **arrays[4] = {NULL, NULL, NULL, NULL};
  size_t counts[4] = {0, 0, 0, 0};
  PyObject *result = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOOO", names, &lists[0], &lists[1], &lists[2],
                                   &lists[3]))
    return NULL;
  if (check_open(self) < 0) return NULL;
  for (int i = 0; i < 4; i++)
    if (str_array(lists[i], &seqs[i], &arrays[i], &counts[i]) < 0) goto done;
  if (opdpy_client_wait_queue(self) < 0 || check_open(self) < 0) goto done;
  opd_client_dispatch_change change = {arrays[0], counts[0], arrays[1], counts[1],
                                       arrays[2], counts[2], arrays[3], counts[3]};
  opd_client *c = self->c;
  int rc;
  self->waiting++;
  Py_BEGIN_ALLOW_THREADS rc = opd_client_change_dispatch_state(c, &change);
  Py_END_ALLOW_THREADS self->waiting--;
  self->requests++;
  opdpy_client_process(self);
  if (rc < 0)
    opdpy_raise(rc, opd_client_last_error(), NULL);
  else
    result = (Py_INCREF(Py_None), Py_None);
done:
  for (int i = 0; i < 4; i++) {
    PyMem_Free(arrays[i]);
    Py_XDECREF(seqs[i]);
  }
  return result;
}

static PyObject *client_synchronize(opdpy_client *self, PyObject *unused) {
  (void)unused;
  if (check_open(self) < 0 || opdpy_client_wait_queue(self) < 0 || check_open(self) < 0)
    return NULL;
  opd_client *c = self->c;
  int rc;
  self->waiting++;
  Py_BEGIN_ALLOW_THREADS rc = opd_client_synchronize(c);
  Py_END_ALLOW_THREADS self->waiting--;
  self->requests++;
  opdpy_client_process(self);
  if (rc < 0) return opdpy_raise(rc, opd_client_last_error(), NULL);
  Py_RETURN_NONE;
}

static PyObject *client_ping(opdpy_client *self, PyObject *args) {
  Py_buffer payload = {0};
  if (!PyArg_ParseTuple(args, "|y*", &payload)) return NULL;
  if (check_open(self) < 0) {
    PyBuffer_Release(&payload);
    return NULL;
  }
  opd_client *c = self->c;
  int rc;
  self->waiting++;
  Py_BEGIN_ALLOW_THREADS rc = opd_client_ping(c, payload.buf, (size_t)payload.len);
  Py_END_ALLOW_THREADS self->waiting--;
  self->requests++;
  PyBuffer_Release(&payload);
  opdpy_client_process(self);
  if (rc < 0) return opdpy_raise(rc, opd_client_last_error(), NULL);
  Py_RETURN_NONE;
}

/* flush(): writes the requests held for batching now ([Note: Batched writes]). */
static PyObject *client_flush(opdpy_client *self, PyObject *unused) {
  (void)unused;
  if (check_open(self) < 0) return NULL;
  flush_releases(self);
  int rc = opd_client_flush(self->c);
  opdpy_client_process(self);
  if (rc < 0)
    return opdpy_raise(rc == OPD_ECANCELED ? OPDPY_ELOST : rc, opd_client_last_error(), NULL);
  Py_RETURN_NONE;
}

/* poll(timeout=0.0): completes what has come back (waiting up to timeout seconds for
 * something); the number of requests the library completed. */
static PyObject *client_poll(opdpy_client *self, PyObject *args) {
  double timeout = 0;
  if (!PyArg_ParseTuple(args, "|d", &timeout)) return NULL;
  if (check_open(self) < 0) return NULL;
  flush_releases(self);
  opd_client *c = self->c;
  int rc, ms = timeout <= 0 ? 0 : timeout * 1000 > INT32_MAX ? INT32_MAX : (int)(timeout * 1000);
  self->waiting++;
  Py_BEGIN_ALLOW_THREADS rc = opd_client_poll(c, ms);
  Py_END_ALLOW_THREADS self->waiting--;
  opdpy_client_process(self);
  return PyLong_FromLong(rc > 0 ? rc : 0);
}

/* wait_all(): waits until every request made so far has completed, the releases of the
 * tensors that died meanwhile (also those that completing requests let go) included. */
static PyObject *client_wait_all(opdpy_client *self, PyObject *unused) {
  (void)unused;
  do {
    if (check_open(self) < 0 || opdpy_client_wait_queue(self) < 0 || check_open(self) < 0)
      return NULL;
    flush_releases(self);
    opd_client *c = self->c;
    int rc;
    self->waiting++;
    Py_BEGIN_ALLOW_THREADS rc = opd_client_wait_all(c);
    Py_END_ALLOW_THREADS self->waiting--;
    opdpy_client_process(self);
    if (rc < 0)
      return opdpy_raise(rc == OPD_ECANCELED ? OPDPY_ELOST : rc, opd_client_last_error(), NULL);
  } while (self->nrelease || self->queue_head);
  Py_RETURN_NONE;
}

static PyObject *client_get_connected(opdpy_client *self, void *closure) {
  (void)closure;
  return PyBool_FromLong(self->c && opd_client_connected(self->c));
}

static PyObject *client_get_closed(opdpy_client *self, void *closure) {
  (void)closure;
  return PyBool_FromLong(self->c == NULL);
}

static PyObject *client_get_url(opdpy_client *self, void *closure) {
  (void)closure;
  Py_INCREF(self->url);
  return self->url;
}

static PyObject *client_get_endpoint(opdpy_client *self, void *closure) {
  (void)closure;
  if (check_open(self) < 0) return NULL;
  return PyUnicode_FromString(opd_client_endpoint(self->c));
}

static PyObject *client_get_pending(opdpy_client *self, void *closure) {
  (void)closure;
  return PyLong_FromSize_t((self->c ? opd_client_pending(self->c) : 0) + self->queued);
}

static PyObject *client_get_requests(opdpy_client *self, void *closure) {
  (void)closure;
  return PyLong_FromUnsignedLongLong(self->requests);
}

static PyObject *client_get_server(opdpy_client *self, void *closure) {
  (void)closure;
  if (check_open(self) < 0) return NULL;
  const opd_client_server_info *s = opd_client_server(self->c);
  return Py_BuildValue("{sIsssKsKsKsKsI}", "protocol_version", s->protocol_version, "server",
                       s->server, "max_frame_bytes", (unsigned long long)s->max_frame_bytes,
                       "max_literal_bytes", (unsigned long long)s->max_literal_bytes, "max_handles",
                       (unsigned long long)s->max_handles, "max_bytes_held",
                       (unsigned long long)s->max_bytes_held, "max_in_flight", s->max_in_flight);
}

static PyMethodDef client_methods[] = {
    {"close", (PyCFunction)client_close, METH_NOARGS,
     "cancels what is pending and closes the connection (the daemon releases every handle)"},
    {"_call", (PyCFunction)(void (*)(void))client_call, METH_FASTCALL,
     "_call(op, args): calls an operator and waits for its value"},
    {"_submit", (PyCFunction)(void (*)(void))client_submit, METH_FASTCALL,
     "_submit(op, args, nouts=None): calls an operator without waiting: a Future"},
    {"upload", (PyCFunction)(void (*)(void))client_upload, METH_VARARGS | METH_KEYWORDS,
     "upload(data, dtype=None, shape=None, device=None): a Tensor made from a buffer"},
    {"upload_async", (PyCFunction)(void (*)(void))client_upload_async, METH_VARARGS | METH_KEYWORDS,
     "upload_async(data, dtype=None, shape=None, device=None): a Future of the Tensor"},
    {"download", (PyCFunction)(void (*)(void))client_download, METH_VARARGS | METH_KEYWORDS,
     "download(tensor, out=None): the data into out, or a new Buffer"},
    {"set_dispatch_state", (PyCFunction)(void (*)(void))client_set_dispatch_state,
     METH_VARARGS | METH_KEYWORDS,
     "set_dispatch_state(include=(), exclude=(), remove_include=(), remove_exclude=())"},
    {"synchronize", (PyCFunction)client_synchronize, METH_NOARGS,
     "waits until the session's work is finished on every device"},
    {"ping", (PyCFunction)client_ping, METH_VARARGS, "ping(payload=b''): a round trip"},
    {"flush", (PyCFunction)client_flush, METH_NOARGS,
     "writes the requests held to be sent together now (a wait or poll writes them too)"},
    {"poll", (PyCFunction)client_poll, METH_VARARGS,
     "poll(timeout=0.0): completes what came back; the count"},
    {"wait_all", (PyCFunction)client_wait_all, METH_NOARGS,
     "waits until every request made so far has completed"},
    {"_graph_define", (PyCFunction)opdpy_client_graph_define, METH_VARARGS,
     "_graph_define(inputs, nodes, outputs): defines a graph and waits: (id, info)"},
    {"_graph_release", (PyCFunction)opdpy_client_graph_release, METH_O,
     "_graph_release(id): releases a graph after the requests made before"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef client_getset[] = {
    {"url", (getter)client_get_url, NULL, "the daemon's URL", NULL},
    {"endpoint", (getter)client_get_endpoint, NULL, "the daemon the session landed on", NULL},
    {"connected", (getter)client_get_connected, NULL, "False once lost or closed", NULL},
    {"closed", (getter)client_get_closed, NULL, "whether close() was called", NULL},
    {"pending", (getter)client_get_pending, NULL, "requests queued or in flight", NULL},
    {"requests", (getter)client_get_requests, NULL, "requests sent so far", NULL},
    {"server", (getter)client_get_server, NULL, "what the daemon said in its hello", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject opdpy_client_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "opd._C.Client",
    .tp_doc = "Client(url, client_name='opd-python', connect_timeout_ms=0, max_in_flight=0, "
              "placement='first', affinity_key=None, liveness_timeout_ms=0, call_timeout_ms=0, "
              "batch_us=500)",
    .tp_basicsize = sizeof(opdpy_client),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_new = client_new,
    .tp_init = (initproc)client_init,
    .tp_dealloc = (destructor)client_dealloc,
    .tp_methods = client_methods,
    .tp_getset = client_getset,
    .tp_weaklistoffset = offsetof(opdpy_client, weakrefs),
    .tp_dictoffset = offsetof(opdpy_client, dict),
};
