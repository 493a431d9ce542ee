/* module.c: the module opd._C: errors as Python exceptions (their classes come from
 * opd/_errors.py through set_error_factory), dtype and device arguments, Literal (a small
 * tensor passed by value) and Buffer (the memory of a download, exported with the buffer
 * protocol so numpy wraps it without a copy). See [Note: The Python client's request
 * engine] in opdpy.h. */
#include <stdlib.h>
#include <string.h>

#include "opdpy.h"

static PyObject *error_factory;   /* callable(err, message, op) -> exception */
static PyObject *dtype_converter; /* callable(obj) -> int */

PyObject *opdpy_error_object(int err, const char *message, const char *op) {
  if (!error_factory) return PyObject_CallFunction(PyExc_RuntimeError, "s", message);
  PyObject *msg = PyUnicode_DecodeUTF8(message, (Py_ssize_t)strlen(message), "replace");
  PyObject *o = op ? PyUnicode_DecodeUTF8(op, (Py_ssize_t)strlen(op), "replace") : NULL;
  PyObject *exc = NULL;
  if (msg && (o || !op))
    exc = PyObject_CallFunction(error_factory, "iOO", err, msg, o ? o : Py_None);
  Py_XDECREF(msg);
  Py_XDECREF(o);
  return exc;
}

PyObject *opdpy_raise(int err, const char *message, const char *op) {
  PyObject *exc = opdpy_error_object(err, message, op);
  if (exc) {
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
  }
  return NULL;
}

PyObject *opdpy_raise_last(void) {
  return opdpy_raise(opd_client_last_error_code(), opd_client_last_error(), NULL);
}

/* c10's ScalarType values (opd/dtype.h) and their struct formats. */
static const struct {
  int dtype;
  const char *format;
} formats[] = {
    {OPD_UINT8, "B"}, {OPD_INT8, "b"},     {OPD_INT16, "h"},   {OPD_INT32, "i"},
    {OPD_INT64, "q"}, {OPD_FLOAT16, "e"},  {OPD_FLOAT32, "f"}, {OPD_FLOAT64, "d"},
    {OPD_BOOL, "?"},  {OPD_BFLOAT16, "H"}, /* no struct format: its 16 bits as uint16 */
};

const char *opdpy_dtype_format(int dtype) {
  for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
    if (formats[i].dtype == dtype) return formats[i].format;
  return NULL;
}

int opdpy_dtype_from_format(const char *fmt, Py_ssize_t itemsize) {
  if (!fmt) return OPD_UINT8; /* PyBUF_FORMAT not given: bytes */
  if (*fmt == '@' || *fmt == '=' || *fmt == '<') fmt++;
  if (!fmt[0] || fmt[1]) return -1;
  switch (fmt[0]) {
  case 'B': return OPD_UINT8;
  case 'b': return OPD_INT8;
  case 'h': return OPD_INT16;
  case 'i': return itemsize == 4 ? OPD_INT32 : -1;
  case 'l':
  case 'q': return itemsize == 8 ? OPD_INT64 : itemsize == 4 ? OPD_INT32 : -1;
  case 'e': return OPD_FLOAT16;
  case 'f': return OPD_FLOAT32;
  case 'd': return OPD_FLOAT64;
  case '?': return OPD_BOOL;
  default: return -1;
  }
}

int opdpy_dtype_arg(PyObject *o) {
  if (PyLong_Check(o) && !PyBool_Check(o)) {
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (!opdpy_dtype_format((int)v)) {
      PyErr_Format(PyExc_ValueError, "%ld is not an opd dtype", v);
      return -1;
    }
    return (int)v;
  }
  if (!dtype_converter) {
    PyErr_Format(PyExc_TypeError, "a dtype must be an int, not %.100s", Py_TYPE(o)->tp_name);
    return -1;
  }
  PyObject *r = PyObject_CallOneArg(dtype_converter, o);
  if (!r) return -1;
  long v = PyLong_AsLong(r);
  Py_DECREF(r);
  if (v == -1 && PyErr_Occurred()) return -1;
  return (int)v;
}

static int device_from_str(const char *s, opd_client_device *out) {
  const char *colon = strchr(s, ':');
  size_t n = colon ? (size_t)(colon - s) : strlen(s);
  if (n == 3 && !strncmp(s, "cpu", 3))
    out->type = OPD_CLIENT_DEVICE_CPU;
  else if (n == 4 && !strncmp(s, "cuda", 4))
    out->type = OPD_CLIENT_DEVICE_CUDA;
  else if (n == 4 && !strncmp(s, "meta", 4))
    out->type = OPD_CLIENT_DEVICE_META;
  else {
    PyErr_Format(PyExc_ValueError, "unknown device '%s' (cpu, cuda, cuda:N, meta)", s);
    return -1;
  }
  out->index = -1;
  if (colon) {
    char *end;
    long i = strtol(colon + 1, &end, 10);
    if (end == colon + 1 || *end || i < 0 || i > INT32_MAX) {
      PyErr_Format(PyExc_ValueError, "bad device index in '%s'", s);
      return -1;
    }
    out->index = (int32_t)i;
  }
  return 0;
}

int opdpy_device_arg(PyObject *o, opd_client_device *out) {
  if (PyUnicode_Check(o)) {
    const char *s = PyUnicode_AsUTF8(o);
    return s ? device_from_str(s, out) : -1;
  }
  if (PyTuple_Check(o) && PyTuple_GET_SIZE(o) == 2) {
    long t = PyLong_AsLong(PyTuple_GET_ITEM(o, 0)), i = PyLong_AsLong(PyTuple_GET_ITEM(o, 1));
    if (PyErr_Occurred()) return -1;
    *out = (opd_client_device){(int32_t)t, (int32_t)i};
    return 0;
  }
  /* torch.device and the like: .type and .index */
  PyObject *type = PyObject_GetAttrString(o, "type");
  if (!type) {
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "a device must be a str, (type, index) or a device, not %.100s",
                 Py_TYPE(o)->tp_name);
    return -1;
  }
  PyObject *index = PyObject_GetAttrString(o, "index");
  int rc = -1;
  const char *s = PyUnicode_Check(type) ? PyUnicode_AsUTF8(type) : NULL;
  if (s && index && (rc = device_from_str(s, out)) == 0 && index != Py_None) {
    long i = PyLong_AsLong(index);
    if (i == -1 && PyErr_Occurred())
      rc = -1;
    else
      out->index = (int32_t)i;
  } else if (!s && !PyErr_Occurred()) {
    PyErr_SetString(PyExc_TypeError, "a device's .type must be a str");
  }
  Py_DECREF(type);
  Py_XDECREF(index);
  return rc;
}

/* ---- Literal ---- */

static int literal_init(opdpy_literal *self, PyObject *args, PyObject *kw) {
  static char *names[] = {"dtype", "shape", "data", NULL};
  PyObject *dtype_obj, *shape, *data;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOS", names, &dtype_obj, &shape, &data)) return -1;
  int dtype = opdpy_dtype_arg(dtype_obj);
  if (dtype < 0) return -1;
  PyObject *seq = PySequence_Fast(shape, "shape must be a sequence of ints");
  if (!seq) return -1;
  Py_ssize_t nd = PySequence_Fast_GET_SIZE(seq);
  if (nd > OPD_CLIENT_MAX_DIMS) {
    Py_DECREF(seq);
    PyErr_SetString(PyExc_ValueError, "too many dimensions");
    return -1;
  }
  for (Py_ssize_t i = 0; i < nd; i++) {
    self->shape[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
    if (self->shape[i] == -1 && PyErr_Occurred()) {
      Py_DECREF(seq);
      return -1;
    }
  }
  Py_DECREF(seq);
  Py_INCREF(data);
  Py_XSETREF(self->data, data);
  self->lit = (opd_client_literal){.dtype = dtype,
                                   .ndim = (int)nd,
                                   .shape = self->shape,
                                   .data = PyBytes_AS_STRING(data),
                                   .nbytes = (size_t)PyBytes_GET_SIZE(data)};
  return 0;
}

static void literal_dealloc(opdpy_literal *self) {
  Py_XDECREF(self->data);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

PyTypeObject opdpy_literal_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "opd._C.Literal",
    .tp_doc = "Literal(dtype, shape, data): a small tensor passed by value in a call",
    .tp_basicsize = sizeof(opdpy_literal),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)literal_init,
    .tp_dealloc = (destructor)literal_dealloc,
};

/* ---- Buffer ---- */

PyObject *opdpy_buffer_new(void *data, const opd_client_tensor_info *info) {
  opdpy_buffer *b = PyObject_New(opdpy_buffer, &opdpy_buffer_type);
  if (!b) {
    free(data);
    return NULL;
  }
  b->data = data;
  b->nbytes = (Py_ssize_t)info->nbytes;
  b->dtype = info->dtype;
  b->ndim = info->ndim;
  b->exports = 0;
  Py_ssize_t stride = (Py_ssize_t)opd_client_dtype_size(info->dtype);
  for (int i = info->ndim - 1; i >= 0; i--) {
    b->shape[i] = (Py_ssize_t)info->shape[i];
    b->strides[i] = stride;
    stride *= b->shape[i] ? b->shape[i] : 1;
  }
  return (PyObject *)b;
}

static int buffer_get(opdpy_buffer *self, Py_buffer *view, int flags) {
  static char empty; /* a valid address for 0 bytes */
  view->obj = (PyObject *)self;
  Py_INCREF(self);
  view->buf = self->data ? self->data : &empty;
  view->len = self->nbytes;
  view->readonly = 0;
  view->itemsize = (Py_ssize_t)opd_client_dtype_size(self->dtype);
  view->format = (flags & PyBUF_FORMAT) ? (char *)opdpy_dtype_format(self->dtype) : NULL;
  view->ndim = self->ndim;
  view->shape = (flags & PyBUF_ND) ? self->shape : NULL;
  view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? self->strides : NULL;
  view->suboffsets = NULL;
  view->internal = NULL;
  self->exports++;
  return 0;
}

static void buffer_release(opdpy_buffer *self, Py_buffer *view) {
  (void)view;
  self->exports--;
}

static void buffer_dealloc(opdpy_buffer *self) {
  free(self->data); /* the library's malloc (opd_client_download_alloc) */
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *buffer_dtype(opdpy_buffer *self, void *closure) {
  (void)closure;
  return PyLong_FromLong(self->dtype);
}

static PyObject *buffer_shape(opdpy_buffer *self, void *closure) {
  (void)closure;
  PyObject *t = PyTuple_New(self->ndim);
  for (int i = 0; t && i < self->ndim; i++)
    PyTuple_SET_ITEM(t, i, PyLong_FromSsize_t(self->shape[i]));
  return t;
}

static PyGetSetDef buffer_getset[] = {
    {"dtype", (getter)buffer_dtype, NULL, "the opd dtype", NULL},
    {"shape", (getter)buffer_shape, NULL, "the shape", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyBufferProcs buffer_procs = {(getbufferproc)buffer_get, (releasebufferproc)buffer_release};

PyTypeObject opdpy_buffer_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "opd._C.Buffer",
    .tp_doc = "the memory of a download (buffer protocol: format, shape, writable)",
    .tp_basicsize = sizeof(opdpy_buffer),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)buffer_dealloc,
    .tp_as_buffer = &buffer_procs,
    .tp_getset = buffer_getset,
};

/* ---- the module ---- */

static PyObject *set_error_factory(PyObject *m, PyObject *fn) {
  (void)m;
  Py_INCREF(fn);
  Py_XSETREF(error_factory, fn);
  Py_RETURN_NONE;
}

static PyObject *set_dtype_converter(PyObject *m, PyObject *fn) {
  (void)m;
  Py_INCREF(fn);
  Py_XSETREF(dtype_converter, fn);
  Py_RETURN_NONE;
}

static PyObject *err_name(PyObject *m, PyObject *arg) {
  (void)m;
  long err = PyLong_AsLong(arg);
  if (err == -1 && PyErr_Occurred()) return NULL;
  return PyUnicode_FromString(opd_client_err_name((int)err));
}

static PyObject *dtype_size(PyObject *m, PyObject *arg) {
  (void)m;
  long d = PyLong_AsLong(arg);
  if (d == -1 && PyErr_Occurred()) return NULL;
  return PyLong_FromSize_t(opd_client_dtype_size((int)d));
}

static PyMethodDef module_methods[] = {
    {"set_error_factory", set_error_factory, METH_O,
     "set_error_factory(fn): fn(err, message, op) makes the exception of a failure"},
    {"set_dtype_converter", set_dtype_converter, METH_O,
     "set_dtype_converter(fn): fn(obj) -> an opd dtype code, for dtype arguments"},
    {"err_name", err_name, METH_O, "err_name(err) -> 'EINVAL'"},
    {"dtype_size", dtype_size, METH_O, "dtype_size(dtype) -> bytes per element (0: invalid)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "opd._C",
    .m_doc = "The opd client library (libopd_client) for Python: see the package opd.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__C(void) {
  PyTypeObject *types[] = {&opdpy_client_type,     &opdpy_tensor_type,  &opdpy_future_type,
                           &opdpy_op_type,         &opdpy_literal_type, &opdpy_buffer_type,
                           &opdpy_graph_value_type};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    if (PyType_Ready(types[i]) < 0) return NULL;
  PyObject *m = PyModule_Create(&module_def);
  if (!m) return NULL;
  const char *names[] = {"Client", "Tensor", "Future", "Op", "Literal", "Buffer", "GraphValue"};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
    Py_INCREF(types[i]);
    if (PyModule_AddObject(m, names[i], (PyObject *)types[i]) < 0) {
      Py_DECREF(types[i]);
      Py_DECREF(m);
      return NULL;
    }
  }
  static const struct {
    const char *name;
    int value;
  } ints[] = {
#define OPDPY_ERR(name, value, msg) {#name, OPD_##name},
      OPD_ERRNO_MAP(OPDPY_ERR)
#undef OPDPY_ERR
#define OPDPY_DTYPE(e, v, size, name, c10) {#e, OPD_##e},
          OPD_DTYPES(OPDPY_DTYPE)
#undef OPDPY_DTYPE
              {"ELOST", OPDPY_ELOST},
      {"ECONNECT", OPDPY_ECONNECT},
      {"PROTOCOL_VERSION", OPD_CLIENT_PROTOCOL_VERSION},
      {"MAX_DIMS", OPD_CLIENT_MAX_DIMS},
  };
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
    if (PyModule_AddIntConstant(m, ints[i].name, ints[i].value) < 0) {
      Py_DECREF(m);
      return NULL;
    }
  if (PyModule_AddStringConstant(m, "DEFAULT_URL", OPD_CLIENT_DEFAULT_URL) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
