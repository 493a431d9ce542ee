/* values.c: Op, an operator as the extension calls it (its name, the kind of each argument,
 * whether it may be None, what it returns; made by opd/_schema.py from the schema), the
 * conversion of a call's Python arguments into the library's opd_client_values, and of
 * results back into Python objects. The conversion checks every argument's type and says
 * which one is wrong, as PyTorch's argument parser does; the daemon checks the call against
 * the schema again ([Note: Checking a call against its schema] in server/src/execute.c). */
#include <stdlib.h>
#include <string.h>

#include "opdpy.h"

/* ---- Op ---- */

static int op_init(opdpy_op *self, PyObject *args, PyObject *kw) {
  static char *names[] = {"name", "kinds", "arg_names", "nouts", "ret_form", "graph", NULL};
  PyObject *name, *arg_names;
  const char *kinds;
  int nouts, ret_form;
  unsigned long long graph = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "UsO!ii|$K", names, &name, &kinds, &PyTuple_Type,
                                   &arg_names, &nouts, &ret_form, &graph))
    return -1;
  /* kinds: one character per argument (OPDPY_K_*), followed by '?' when it may be None */
  int n = 0;
  for (const char *k = kinds; *k; k++) {
    if (*k == '?') {
      if (n == 0) goto bad;
      self->optional[n - 1] = true;
      continue;
    }
    if (!strchr("TLliIfFbBsyvSg", *k) || n == OPDPY_MAX_ARGS) goto bad;
    self->kinds[n] = *k;
    self->optional[n++] = false;
  }
  if (PyTuple_GET_SIZE(arg_names) != n) {
    PyErr_SetString(PyExc_ValueError, "Op: one name per argument kind");
    return -1;
  }
  const char *s = PyUnicode_AsUTF8(name);
  if (!s) return -1;
  char *copy = strdup(s);
  if (!copy) {
    PyErr_NoMemory();
    return -1;
  }
  free(self->name);
  self->name = copy;
  Py_INCREF(name);
  Py_XSETREF(self->name_obj, name);
  Py_INCREF(arg_names);
  Py_XSETREF(self->arg_names, arg_names);
  self->nargs = n;
  self->nouts = nouts;
  self->ret_form = ret_form;
  self->graph = graph;
  return 0;
bad:
  PyErr_Format(PyExc_ValueError, "Op: bad argument kinds '%s'", kinds);
  return -1;
}

static void op_dealloc(opdpy_op *self) {
  free(self->name);
  Py_XDECREF(self->name_obj);
  Py_XDECREF(self->arg_names);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *op_repr(opdpy_op *self) {
  return PyUnicode_FromFormat("<opd._C.Op %s>", self->name);
}

static PyObject *op_get_name(opdpy_op *self, void *closure) {
  (void)closure;
  Py_INCREF(self->name_obj);
  return self->name_obj;
}

static PyObject *op_get_nouts(opdpy_op *self, void *closure) {
  (void)closure;
  return PyLong_FromLong(self->nouts);
}

static PyGetSetDef op_getset[] = {
    {"name", (getter)op_get_name, NULL, "the operator's name with its overload", NULL},
    {"nouts", (getter)op_get_nouts, NULL, "the tensors it returns (-1: not fixed)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject opdpy_op_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "opd._C.Op",
    .tp_doc = "Op(name, kinds, arg_names, nouts, ret_form, *, graph=0): an operator's calling "
              "convention, or with graph a run of that graph (its inputs as Tensor arguments)",
    .tp_basicsize = sizeof(opdpy_op),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)op_init,
    .tp_dealloc = (destructor)op_dealloc,
    .tp_repr = (reprfunc)op_repr,
    .tp_getset = op_getset,
};

/* ---- the memory of a conversion ---- */

void opdpy_callbuf_init(opdpy_callbuf *b) {
  b->n = 0;
  b->used = 0;
  b->heap = NULL;
  b->nheap = 0;
}

void opdpy_callbuf_free(opdpy_callbuf *b) {
  for (size_t i = 0; i < b->nheap; i++) PyMem_Free(b->heap[i]);
  PyMem_Free(b->heap);
  opdpy_callbuf_init(b);
}

static void *callbuf_alloc(opdpy_callbuf *b, size_t size) {
  size = (size + 15) & ~(size_t)15;
  if (size <= sizeof b->inline_mem - b->used) {
    void *p = b->inline_mem + b->used;
    b->used += size;
    return p;
  }
  void **heap = PyMem_Realloc(b->heap, (b->nheap + 1) * sizeof *heap);
  if (!heap) return PyErr_NoMemory();
  b->heap = heap;
  void *p = PyMem_Malloc(size ? size : 1);
  if (!p) return PyErr_NoMemory();
  b->heap[b->nheap++] = p;
  return p;
}

/* ---- arguments ---- */

enum { ARG_OK = 0, ARG_PENDING = 1, ARG_FAILED = 2, ARG_BAD = -1 };

static int bad_arg(opdpy_op *op, int i, const char *expected, PyObject *got) {
  PyErr_Format(PyExc_TypeError, "%s(): argument '%U' (position %d) must be %s, not %.100s",
               op->name, PyTuple_GET_ITEM(op->arg_names, i), i + 1, expected,
               Py_TYPE(got)->tp_name);
  return ARG_BAD;
}

/* The tensor an argument names: a Tensor, or the single output of a Future. */
static opdpy_tensor *as_tensor(PyObject *o) {
  if (Py_TYPE(o) == &opdpy_tensor_type) return (opdpy_tensor *)o;
  if (Py_TYPE(o) == &opdpy_future_type) {
    PyObject *outs = ((opdpy_future *)o)->outputs;
    if (outs && PyTuple_GET_SIZE(outs) == 1) return (opdpy_tensor *)PyTuple_GET_ITEM(outs, 0);
  }
  return NULL;
}

/* A tensor's handle: ARG_OK, ARG_PENDING or ARG_FAILED (*failed set), or ARG_BAD. */
static int tensor_handle(opdpy_op *op, int i, opdpy_tensor *t, opdpy_client *cl, uint64_t *h,
                         PyObject **failed) {
  if (t->error) {
    Py_INCREF(t->error);
    *failed = t->error;
    return ARG_FAILED;
  }
  if (t->client != cl) {
    PyErr_Format(PyExc_ValueError,
                 "%s(): argument '%U' is a tensor of another connection (handles mean nothing "
                 "outside their session)",
                 op->name, PyTuple_GET_ITEM(op->arg_names, i));
    return ARG_BAD;
  }
  if (t->source) return ARG_PENDING;
  if (!t->handle) {
    PyErr_Format(PyExc_ValueError, "%s(): argument '%U' is a released tensor", op->name,
                 PyTuple_GET_ITEM(op->arg_names, i));
    return ARG_BAD;
  }
  *h = t->handle;
  return ARG_OK;
}

/* A Python number as a Scalar value: bool, int or float, keeping its kind. */
static int scalar_value(PyObject *o, opd_client_value *v) {
  if (PyBool_Check(o)) {
    *v = opd_cv_bool(o == Py_True);
    return 0;
  }
  if (PyLong_Check(o)) {
    int overflow;
    long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) {
      PyErr_SetString(PyExc_OverflowError, "a Scalar int must fit in 64 bits");
      return -1;
    }
    *v = opd_cv_int(x);
    return 0;
  }
  if (PyFloat_Check(o)) {
    *v = opd_cv_double(PyFloat_AS_DOUBLE(o));
    return 0;
  }
  /* numpy scalars and the like: an integer if it has __index__, else a float */
  if (Py_TYPE(o)->tp_as_number && Py_TYPE(o)->tp_as_number->nb_index) {
    long long x = PyLong_AsLongLong(o);
    if (x == -1 && PyErr_Occurred()) return -1;
    *v = opd_cv_int(x);
    return 0;
  }
  if (Py_TYPE(o)->tp_as_number && Py_TYPE(o)->tp_as_number->nb_float) {
    double d = PyFloat_AsDouble(o);
    if (d == -1.0 && PyErr_Occurred()) return -1;
    *v = opd_cv_double(d);
    return 0;
  }
  return 1;
}

static int int_value(PyObject *o, int64_t *out) {
  if (PyBool_Check(o) || PyFloat_Check(o)) return 1;
  if (!PyLong_Check(o) && !(Py_TYPE(o)->tp_as_number && Py_TYPE(o)->tp_as_number->nb_index))
    return 1;
  long long x = PyLong_AsLongLong(o);
  if (x == -1 && PyErr_Occurred()) return -1;
  *out = x;
  return 0;
}

static int list_arg(opdpy_op *op, int i, PyObject *o, opdpy_client *cl, opdpy_callbuf *b,
                    opd_client_value *v, PyObject **failed) {
  char k = op->kinds[i];
  static const char *what[] = {['L'] = "a sequence of Tensors",
                               ['l'] = "a sequence of Tensors or None",
                               ['I'] = "a sequence of ints",
                               ['F'] = "a sequence of floats",
                               ['B'] = "a sequence of bools"};
  if (k == OPDPY_K_INTS && !PySequence_Check(o)) { /* int[N] takes one int */
    int64_t x;
    int rc = int_value(o, &x);
    if (rc) return rc < 0 ? ARG_BAD : bad_arg(op, i, what[(int)k], o);
    *v = opd_cv_int(x);
    return ARG_OK;
  }
  if (PyUnicode_Check(o) || PyBytes_Check(o) || !PySequence_Check(o))
    return bad_arg(op, i, what[(int)k], o);
  PyObject *seq = PySequence_Fast(o, "a sequence");
  if (!seq) return ARG_BAD;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  PyObject **items = PySequence_Fast_ITEMS(seq);
  int rc = ARG_OK;
  size_t elem = k == OPDPY_K_BOOLS ? sizeof(bool) : 8;
  void *mem = callbuf_alloc(b, (size_t)n * elem);
  if (!mem) {
    Py_DECREF(seq);
    return ARG_BAD;
  }
  for (Py_ssize_t j = 0; j < n && rc >= 0 && rc != ARG_FAILED; j++) {
    PyObject *e = items[j];
    int r = 0;
    switch (k) {
    case OPDPY_K_TENSORS:
    case OPDPY_K_OPT_TENSORS: {
      uint64_t *h = mem;
      h[j] = 0;
      if (e == Py_None && k == OPDPY_K_OPT_TENSORS) break;
      if (Py_TYPE(e) == &opdpy_graph_value_type) {
        h[j] = ((opdpy_graph_value *)e)->value;
        break;
      }
      opdpy_tensor *t = as_tensor(e);
      if (!t) {
        r = bad_arg(op, i, what[(int)k], e);
        break;
      }
      r = tensor_handle(op, i, t, cl, &h[j], failed);
      if (r == ARG_PENDING) rc = ARG_PENDING, r = 0;
      break;
    }
    case OPDPY_K_INTS: {
      int q = int_value(e, (int64_t *)mem + j);
      r = q < 0 ? ARG_BAD : q ? bad_arg(op, i, what[(int)k], e) : 0;
      break;
    }
    case OPDPY_K_FLOATS:
      if (!PyFloat_Check(e) && !PyLong_Check(e)) {
        r = bad_arg(op, i, what[(int)k], e);
        break;
      }
      ((double *)mem)[j] = PyFloat_AsDouble(e);
      if (PyErr_Occurred()) r = ARG_BAD;
      break;
    case OPDPY_K_BOOLS:
      if (!PyBool_Check(e)) {
        r = bad_arg(op, i, what[(int)k], e);
        break;
      }
      ((bool *)mem)[j] = e == Py_True;
      break;
    }
    if (r < 0 || r == ARG_FAILED) rc = r;
  }
  Py_DECREF(seq);
  if (rc < 0 || rc == ARG_FAILED) return rc;
  switch (k) {
  case OPDPY_K_TENSORS: *v = opd_cv_tensors(mem, (size_t)n); break;
  case OPDPY_K_OPT_TENSORS: *v = opd_cv_opt_tensors(mem, (size_t)n); break;
  case OPDPY_K_INTS: *v = opd_cv_ints(mem, (size_t)n); break;
  case OPDPY_K_FLOATS: *v = opd_cv_doubles(mem, (size_t)n); break;
  default: *v = opd_cv_bools(mem, (size_t)n); break;
  }
  return rc;
}

static int convert_arg(opdpy_op *op, int i, PyObject *o, opdpy_client *cl, opdpy_callbuf *b,
                       opd_client_value *v, PyObject **failed) {
  if (o == Py_None) {
    if (!op->optional[i]) {
      PyErr_Format(PyExc_TypeError, "%s(): argument '%U' (position %d) must not be None", op->name,
                   PyTuple_GET_ITEM(op->arg_names, i), i + 1);
      return ARG_BAD;
    }
    *v = opd_cv_none();
    return ARG_OK;
  }
  switch (op->kinds[i]) {
  case OPDPY_K_TENSOR: {
    if (Py_TYPE(o) == &opdpy_literal_type) {
      v->kind = OPD_CV_LITERAL;
      v->u.literal = &((opdpy_literal *)o)->lit;
      return ARG_OK;
    }
    if (Py_TYPE(o) == &opdpy_graph_value_type) { /* a node of a graph being defined */
      *v = opd_cv_tensor(((opdpy_graph_value *)o)->value);
      return ARG_OK;
    }
    opdpy_tensor *t = as_tensor(o);
    if (!t) return bad_arg(op, i, "a Tensor", o);
    v->kind = OPD_CV_TENSOR;
    return tensor_handle(op, i, t, cl, &v->u.tensor, failed);
  }
  case OPDPY_K_TENSORS:
  case OPDPY_K_OPT_TENSORS:
  case OPDPY_K_INTS:
  case OPDPY_K_FLOATS:
  case OPDPY_K_BOOLS: return list_arg(op, i, o, cl, b, v, failed);
  case OPDPY_K_INT: {
    int64_t x;
    int rc = int_value(o, &x);
    if (rc) return rc < 0 ? ARG_BAD : bad_arg(op, i, "an int", o);
    *v = opd_cv_int(x);
    return ARG_OK;
  }
  case OPDPY_K_FLOAT:
    if (!PyFloat_Check(o) && !PyLong_Check(o)) {
      if (!Py_TYPE(o)->tp_as_number || !Py_TYPE(o)->tp_as_number->nb_float)
        return bad_arg(op, i, "a float", o);
    }
    *v = opd_cv_double(PyFloat_AsDouble(o));
    return PyErr_Occurred() ? ARG_BAD : ARG_OK;
  case OPDPY_K_BOOL:
    if (!PyBool_Check(o)) return bad_arg(op, i, "a bool", o);
    *v = opd_cv_bool(o == Py_True);
    return ARG_OK;
  case OPDPY_K_SCALAR: {
    int rc = scalar_value(o, v);
    return rc < 0 ? ARG_BAD : rc ? bad_arg(op, i, "a number (Scalar)", o) : ARG_OK;
  }
  case OPDPY_K_DTYPE: {
    int d = opdpy_dtype_arg(o);
    if (d < 0) return ARG_BAD;
    *v = opd_cv_dtype(d);
    return ARG_OK;
  }
  case OPDPY_K_DEVICE: {
    opd_client_device d;
    if (opdpy_device_arg(o, &d) < 0) return ARG_BAD;
    *v = opd_cv_device(d.type, d.index);
    return ARG_OK;
  }
  case OPDPY_K_STR: {
    if (!PyUnicode_Check(o)) return bad_arg(op, i, "a str", o);
    Py_ssize_t len;
    const char *s = PyUnicode_AsUTF8AndSize(o, &len);
    if (!s) return ARG_BAD;
    v->kind = OPD_CV_STR;
    v->len = (size_t)len;
    v->u.s = s; /* lives as long as the argument tuple */
    return ARG_OK;
  }
  case OPDPY_K_GENERATOR:
  default: return bad_arg(op, i, "None (generators cannot be passed to the daemon)", o);
  }
}

int opdpy_convert_args(opdpy_client *cl, opdpy_op *op, PyObject *args, opdpy_callbuf *b,
                       PyObject **failed) {
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  if (n > op->nargs) {
    PyErr_Format(PyExc_TypeError, "%s() takes at most %d arguments (%zd given)", op->name,
                 op->nargs, n);
    return ARG_BAD;
  }
  int state = ARG_OK;
  b->n = (size_t)n;
  for (Py_ssize_t i = 0; i < n; i++) {
    int rc = convert_arg(op, (int)i, PyTuple_GET_ITEM(args, i), cl, b, &b->v[i], failed);
    if (rc < 0 || rc == ARG_FAILED) return rc;
    if (rc == ARG_PENDING) state = ARG_PENDING;
  }
  return state;
}

/* ---- results ---- */

static PyObject *tuple_of(size_t n, PyObject *(*make)(const void *, size_t), const void *p) {
  PyObject *t = PyTuple_New((Py_ssize_t)n);
  for (size_t i = 0; t && i < n; i++) {
    PyObject *e = make(p, i);
    if (!e) {
      Py_CLEAR(t);
      break;
    }
    PyTuple_SET_ITEM(t, (Py_ssize_t)i, e);
  }
  return t;
}
static PyObject *make_int(const void *p, size_t i) {
  return PyLong_FromLongLong(((const int64_t *)p)[i]);
}
static PyObject *make_double(const void *p, size_t i) {
  return PyFloat_FromDouble(((const double *)p)[i]);
}
static PyObject *make_bool(const void *p, size_t i) {
  return PyBool_FromLong(((const bool *)p)[i]);
}

PyObject *opdpy_value_to_py(opdpy_client *cl, const opd_client_value *v) {
  switch (v->kind) {
  case OPD_CV_NONE: Py_RETURN_NONE;
  case OPD_CV_BOOL: return PyBool_FromLong(v->u.b);
  case OPD_CV_INT: return PyLong_FromLongLong(v->u.i);
  case OPD_CV_DOUBLE: return PyFloat_FromDouble(v->u.d);
  case OPD_CV_STR: return PyUnicode_DecodeUTF8(v->u.s, (Py_ssize_t)v->len, "replace");
  case OPD_CV_TENSOR: return (PyObject *)opdpy_tensor_new(cl, v->u.tensor, NULL);
  case OPD_CV_INTS: return tuple_of(v->len, make_int, v->u.ints);
  case OPD_CV_DOUBLES: return tuple_of(v->len, make_double, v->u.doubles);
  case OPD_CV_BOOLS: return tuple_of(v->len, make_bool, v->u.bools);
  case OPD_CV_TENSORS:
  case OPD_CV_OPT_TENSORS: {
    PyObject *l = PyList_New((Py_ssize_t)v->len);
    for (size_t i = 0; l && i < v->len; i++) {
      PyObject *e = v->u.tensors[i] ? (PyObject *)opdpy_tensor_new(cl, v->u.tensors[i], NULL)
                                    : (Py_INCREF(Py_None), Py_None);
      if (!e) {
        Py_CLEAR(l);
        break;
      }
      PyList_SET_ITEM(l, (Py_ssize_t)i, e);
    }
    return l;
  }
  case OPD_CV_DTYPE: return PyLong_FromLong(v->u.dtype);
  case OPD_CV_DEVICE: return Py_BuildValue("(ii)", v->u.device.type, v->u.device.index);
  case OPD_CV_LITERAL: break;
  }
  PyErr_Format(PyExc_RuntimeError, "unexpected result kind %d", (int)v->kind);
  return NULL;
}

PyObject *opdpy_results_to_py(opdpy_client *cl, opdpy_op *op, const opd_client_value *v, size_t n) {
  if (op && op->ret_form == OPDPY_RET_SINGLE && n == 1) return opdpy_value_to_py(cl, &v[0]);
  if (op && op->ret_form == OPDPY_RET_LIST && n == 1) return opdpy_value_to_py(cl, &v[0]);
  PyObject *t = PyTuple_New((Py_ssize_t)n);
  for (size_t i = 0; t && i < n; i++) {
    PyObject *e = opdpy_value_to_py(cl, &v[i]);
    if (!e) {
      Py_CLEAR(t);
      break;
    }
    PyTuple_SET_ITEM(t, (Py_ssize_t)i, e);
  }
  return t;
}
