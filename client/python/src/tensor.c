/* tensor.c: Tensor (a handle of the daemon's session, or the promise of one) and Future (a
 * request: queued, in flight or done). See [Note: The Python client's request engine] in
 * opdpy.h. */
#include "opdpy.h"

/* ---- Tensor ---- */

opdpy_tensor *opdpy_tensor_new(opdpy_client *cl, uint64_t handle, opdpy_future *source) {
  opdpy_tensor *t = PyObject_New(opdpy_tensor, &opdpy_tensor_type);
  if (!t) return NULL;
  Py_INCREF(cl);
  t->client = cl;
  t->handle = handle;
  Py_XINCREF(source);
  t->source = source;
  t->error = NULL;
  t->dtype = -1;
  t->shape = NULL;
  t->weakrefs = NULL;
  return t;
}

static void tensor_dealloc(opdpy_tensor *self) {
  if (self->weakrefs) PyObject_ClearWeakRefs((PyObject *)self);
  if (self->handle) opdpy_client_release_handle(self->client, self->handle);
  Py_XDECREF(self->source);
  Py_XDECREF(self->error);
  Py_XDECREF(self->shape);
  Py_DECREF(self->client);
  PyObject_Free(self);
}

/* Waits until the tensor has its handle: 0, or -1 with its producer's exception. */
static int tensor_ready(opdpy_tensor *self) {
  if (self->source) {
    opdpy_future *src = self->source;
    Py_INCREF(src);
    int rc = opdpy_client_wait(self->client, src, -1);
    Py_DECREF(src);
    if (rc < 0) return -1;
  }
  if (self->error) {
    PyErr_SetObject((PyObject *)Py_TYPE(self->error), self->error);
    return -1;
  }
  if (!self->handle) {
    if (!opdpy_client_open(self->client))
      opdpy_raise_closed();
    else
      PyErr_SetString(PyExc_ValueError, "the tensor was released");
    return -1;
  }
  return 0;
}

static PyObject *tensor_wait(opdpy_tensor *self, PyObject *unused) {
  (void)unused;
  if (tensor_ready(self) < 0) return NULL;
  Py_INCREF(self);
  return (PyObject *)self;
}

static PyObject *tensor_release(opdpy_tensor *self, PyObject *unused) {
  (void)unused;
  if (tensor_ready(self) < 0) return NULL;
  opdpy_client_release_handle(self->client, self->handle);
  self->handle = 0;
  Py_RETURN_NONE;
}

static PyObject *tensor_get_handle(opdpy_tensor *self, void *closure) {
  (void)closure;
  if (tensor_ready(self) < 0) return NULL;
  return PyLong_FromUnsignedLongLong(self->handle);
}

static PyObject *tensor_get_ready(opdpy_tensor *self, void *closure) {
  (void)closure;
  return PyBool_FromLong(self->source == NULL);
}

static PyObject *tensor_get_client(opdpy_tensor *self, void *closure) {
  (void)closure;
  Py_INCREF(self->client);
  return (PyObject *)self->client;
}

static PyObject *tensor_get_error(opdpy_tensor *self, void *closure) {
  (void)closure;
  PyObject *e = self->error ? self->error : Py_None;
  Py_INCREF(e);
  return e;
}

static PyObject *tensor_get_dtype(opdpy_tensor *self, void *closure) {
  (void)closure;
  if (self->dtype < 0) Py_RETURN_NONE;
  return PyLong_FromLong(self->dtype);
}

static int tensor_set_dtype(opdpy_tensor *self, PyObject *v, void *closure) {
  (void)closure;
  if (!v || v == Py_None) {
    self->dtype = -1;
    return 0;
  }
  int d = opdpy_dtype_arg(v);
  if (d < 0) return -1;
  self->dtype = d;
  return 0;
}

static PyObject *tensor_get_shape(opdpy_tensor *self, void *closure) {
  (void)closure;
  PyObject *s = self->shape ? self->shape : Py_None;
  Py_INCREF(s);
  return s;
}

static int tensor_set_shape(opdpy_tensor *self, PyObject *v, void *closure) {
  (void)closure;
  PyObject *t = v && v != Py_None ? PySequence_Tuple(v) : NULL;
  if (v && v != Py_None && !t) return -1;
  Py_XSETREF(self->shape, t);
  return 0;
}

static PyObject *tensor_repr(opdpy_tensor *self) {
  PyObject *url = self->client->url;
  if (self->error) return PyUnicode_FromFormat("<opd.Tensor failed at %U>", url);
  if (self->source) return PyUnicode_FromFormat("<opd.Tensor pending at %U>", url);
  if (!self->handle) return PyUnicode_FromFormat("<opd.Tensor released at %U>", url);
  if (self->shape)
    return PyUnicode_FromFormat("<opd.Tensor %llu at %U, dtype %d, shape %R>",
                                (unsigned long long)self->handle, url, self->dtype, self->shape);
  return PyUnicode_FromFormat("<opd.Tensor %llu at %U>", (unsigned long long)self->handle, url);
}

/* numpy(): the data as a numpy array over a new Buffer (bfloat16 as uint16), no copy. */
static PyObject *tensor_numpy(opdpy_tensor *self, PyObject *unused) {
  (void)unused;
  PyObject *np = PyImport_ImportModule("numpy");
  if (!np) return NULL;
  PyObject *buf = PyObject_CallMethod((PyObject *)self->client, "download", "O", self);
  PyObject *arr = buf ? PyObject_CallMethod(np, "asarray", "O", buf) : NULL;
  Py_XDECREF(buf);
  Py_DECREF(np);
  return arr;
}

static PyMethodDef tensor_methods[] = {
    {"numpy", (PyCFunction)tensor_numpy, METH_NOARGS,
     "downloads the data into a new numpy array (no copy on this side)"},
    {"wait", (PyCFunction)tensor_wait, METH_NOARGS,
     "waits until the daemon made the tensor (raises its producer's error); returns self"},
    {"release", (PyCFunction)tensor_release, METH_NOARGS,
     "drops the handle now (it is dropped anyway when the object dies)"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef tensor_getset[] = {
    {"handle", (getter)tensor_get_handle, NULL, "the daemon's handle (waits for it)", NULL},
    {"ready", (getter)tensor_get_ready, NULL, "whether the handle is known", NULL},
    {"client", (getter)tensor_get_client, NULL, "the connection it belongs to", NULL},
    {"error", (getter)tensor_get_error, NULL, "its producer's exception, or None", NULL},
    {"dtype", (getter)tensor_get_dtype, (setter)tensor_set_dtype,
     "the opd dtype when known here (uploads, downloads), else None", NULL},
    {"shape", (getter)tensor_get_shape, (setter)tensor_set_shape,
     "the shape when known here, else None", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject opdpy_tensor_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "opd._C.Tensor",
    .tp_doc = "a tensor held by the daemon (made by Client methods)",
    .tp_basicsize = sizeof(opdpy_tensor),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)tensor_dealloc,
    .tp_repr = (reprfunc)tensor_repr,
    .tp_methods = tensor_methods,
    .tp_getset = tensor_getset,
    .tp_weaklistoffset = offsetof(opdpy_tensor, weakrefs),
};

/* ---- Future ---- */

opdpy_future *opdpy_future_new(opdpy_client *cl, int kind) {
  opdpy_future *f = PyObject_New(opdpy_future, &opdpy_future_type);
  if (!f) return NULL;
  Py_INCREF(cl);
  f->client = cl;
  f->kind = kind;
  f->state = OPDPY_QUEUED;
  f->fut = NULL;
  f->next = NULL;
  f->op = NULL;
  f->args = NULL;
  f->outputs = NULL;
  f->result = NULL;
  f->error = NULL;
  f->has_buf = false;
  return f;
}

void opdpy_future_fail(opdpy_future *f, PyObject *exc) {
  f->state = OPDPY_DONE;
  Py_XSETREF(f->error, exc);
  Py_CLEAR(f->args);
  if (!f->outputs) return;
  Py_INCREF(f); /* clearing an output's source may drop the last other reference */
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(f->outputs); i++) {
    opdpy_tensor *t = (opdpy_tensor *)PyTuple_GET_ITEM(f->outputs, i);
    if (!t) continue; /* a tuple being filled */
    Py_XINCREF(exc);
    Py_XSETREF(t->error, exc);
    Py_CLEAR(t->source);
  }
  Py_DECREF(f);
}

static void future_dealloc(opdpy_future *self) {
  /* queued and in-flight futures are referenced by their client: this one is done */
  if (self->has_buf) PyBuffer_Release(&self->buf);
  Py_XDECREF(self->op);
  Py_XDECREF(self->args);
  Py_XDECREF(self->outputs);
  Py_XDECREF(self->result);
  Py_XDECREF(self->error);
  Py_DECREF(self->client);
  PyObject_Free(self);
}

static int future_timeout_ms(PyObject *timeout, int *ms) {
  *ms = -1;
  if (!timeout || timeout == Py_None) return 0;
  double s = PyFloat_AsDouble(timeout);
  if (s == -1.0 && PyErr_Occurred()) return -1;
  *ms = s <= 0 ? 0 : s * 1000 > INT32_MAX ? INT32_MAX : (int)(s * 1000);
  return 0;
}

/* The value of a successful request: its outputs shaped as the operator returns them, or
 * the results it came back with. */
static PyObject *future_value(opdpy_future *self) {
  if (self->result) {
    Py_INCREF(self->result);
    return self->result;
  }
  PyObject *outs = self->outputs;
  if (!outs) Py_RETURN_NONE;
  if (self->kind == OPDPY_REQ_UPLOAD ||
      (self->op && self->op->ret_form == OPDPY_RET_SINGLE && PyTuple_GET_SIZE(outs) == 1)) {
    PyObject *t = PyTuple_GET_ITEM(outs, 0);
    Py_INCREF(t);
    return t;
  }
  if (self->op && self->op->ret_form == OPDPY_RET_LIST) return PySequence_List(outs);
  Py_INCREF(outs);
  return outs;
}

static PyObject *future_result(opdpy_future *self, PyObject *args, PyObject *kw) {
  static char *names[] = {"timeout", NULL};
  PyObject *timeout = NULL;
  int ms;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O", names, &timeout)) return NULL;
  if (future_timeout_ms(timeout, &ms) < 0 || opdpy_client_wait(self->client, self, ms) < 0)
    return NULL;
  if (self->error) {
    PyErr_SetObject((PyObject *)Py_TYPE(self->error), self->error);
    return NULL;
  }
  return future_value(self);
}

static PyObject *future_exception(opdpy_future *self, PyObject *args, PyObject *kw) {
  static char *names[] = {"timeout", NULL};
  PyObject *timeout = NULL;
  int ms;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O", names, &timeout)) return NULL;
  if (future_timeout_ms(timeout, &ms) < 0 || opdpy_client_wait(self->client, self, ms) < 0)
    return NULL;
  PyObject *e = self->error ? self->error : Py_None;
  Py_INCREF(e);
  return e;
}

static PyObject *future_done(opdpy_future *self, PyObject *unused) {
  (void)unused;
  opdpy_client *cl = self->client;
  if (self->state != OPDPY_DONE && opdpy_client_open(cl)) {
    /* without waiting: writes what batching holds ([Note: Batched writes]) and reads what
     * came, so that a loop asking done() sees the request complete */
    opd_client *c = cl->c;
    cl->waiting++;
    Py_BEGIN_ALLOW_THREADS opd_client_poll(c, 0);
    Py_END_ALLOW_THREADS cl->waiting--;
  }
  if (self->state != OPDPY_DONE && opdpy_client_process(cl) < 0) return NULL;
  return PyBool_FromLong(self->state == OPDPY_DONE);
}

static PyObject *future_get_outputs(opdpy_future *self, void *closure) {
  (void)closure;
  PyObject *o = self->outputs ? self->outputs : Py_None;
  Py_INCREF(o);
  return o;
}

static PyObject *future_get_op(opdpy_future *self, void *closure) {
  (void)closure;
  if (!self->op) Py_RETURN_NONE;
  Py_INCREF(self->op->name_obj);
  return self->op->name_obj;
}

static PyObject *future_get_state(opdpy_future *self, void *closure) {
  (void)closure;
  static const char *names[] = {"queued", "in flight", "done"};
  return PyUnicode_FromString(names[self->state]);
}

static PyObject *future_repr(opdpy_future *self) {
  static const char *names[] = {"queued", "in flight", "done"};
  const char *state = self->state == OPDPY_DONE && self->error ? "failed" : names[self->state];
  if (self->op) return PyUnicode_FromFormat("<opd.Future %s %s>", self->op->name, state);
  return PyUnicode_FromFormat("<opd.Future upload %s>", state);
}

static PyMethodDef future_methods[] = {
    {"result", (PyCFunction)(void (*)(void))future_result, METH_VARARGS | METH_KEYWORDS,
     "result(timeout=None): waits and returns the value, or raises the request's error"},
    {"exception", (PyCFunction)(void (*)(void))future_exception, METH_VARARGS | METH_KEYWORDS,
     "exception(timeout=None): waits and returns the request's error, or None"},
    {"done", (PyCFunction)future_done, METH_NOARGS, "whether the request has completed"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef future_getset[] = {
    {"outputs", (getter)future_get_outputs, NULL,
     "the Tensors the request will make (usable as arguments at once), or None", NULL},
    {"op", (getter)future_get_op, NULL, "the operator called, or None", NULL},
    {"state", (getter)future_get_state, NULL, "'queued', 'in flight' or 'done'", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject opdpy_future_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "opd._C.Future",
    .tp_doc = "a request to the daemon (made by Client methods)",
    .tp_basicsize = sizeof(opdpy_future),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)future_dealloc,
    .tp_repr = (reprfunc)future_repr,
    .tp_methods = future_methods,
    .tp_getset = future_getset,
};
