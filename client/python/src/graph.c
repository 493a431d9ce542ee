/* graph.c: graphs in the extension, over the C library's graph API ([Note: Graphs in the
 * client] in opd/client.h): GraphValue (a value of a graph being defined: an input or a
 * node's result, by position), Client._graph_define and Client._graph_release. A run is an
 * ordinary request of the engine ([Note: The Python client's request engine] in opdpy.h):
 * an Op made with graph=ID (its arguments the graph's inputs, all Tensors) is submitted
 * like a call, waits in the queue for its inputs' handles like one, and its outputs are
 * pending Tensors like a call's (send_call in client.c sends it as run_graph). opd.Client's
 * _define_graph (opd/_graph.py) turns a traced torch.fx graph into these. */
#include "opdpy.h"

/* ---- GraphValue ---- */

static int graph_value_init(opdpy_graph_value *self, PyObject *args, PyObject *kw) {
  static char *names[] = {"position", "output", NULL};
  unsigned int position, output = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "I|I", names, &position, &output)) return -1;
  if (position > 0x7fffffffu) {
    PyErr_SetString(PyExc_ValueError, "GraphValue: a position below 2**31");
    return -1;
  }
  self->value =
      opd_graph_output(OPD_CLIENT_GRAPH_VALUE_BIT | (opd_client_tensor)position << 32, output);
  return 0;
}

static PyObject *graph_value_repr(opdpy_graph_value *self) {
  return PyUnicode_FromFormat("<opd._C.GraphValue %u:%u>", opd_graph_value_position(self->value),
                              (unsigned)(uint32_t)self->value);
}

static PyObject *graph_value_get_position(opdpy_graph_value *self, void *closure) {
  (void)closure;
  return PyLong_FromUnsignedLong(opd_graph_value_position(self->value));
}

static PyObject *graph_value_get_output(opdpy_graph_value *self, void *closure) {
  (void)closure;
  return PyLong_FromUnsignedLong((uint32_t)self->value);
}

static PyGetSetDef graph_value_getset[] = {
    {"position", (getter)graph_value_get_position, NULL, "input i is i, node j k + j", NULL},
    {"output", (getter)graph_value_get_output, NULL, "which result of its node", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject opdpy_graph_value_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "opd._C.GraphValue",
    .tp_doc = "GraphValue(position, output=0): a value of a graph being defined",
    .tp_basicsize = sizeof(opdpy_graph_value),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)graph_value_init,
    .tp_repr = (reprfunc)graph_value_repr,
    .tp_getset = graph_value_getset,
};

/* ---- define ---- */

static int add_input(opd_graph_builder *b, PyObject *spec, Py_ssize_t i) {
  PyObject *dtype_obj, *shape;
  int parameter = 0;
  if (!PyTuple_Check(spec) || !PyArg_ParseTuple(spec, "OO|p", &dtype_obj, &shape, &parameter)) {
    if (!PyErr_Occurred())
      PyErr_Format(PyExc_TypeError, "graph input %zd: (dtype, shape, parameter)", i);
    return -1;
  }
  int dtype = opdpy_dtype_arg(dtype_obj);
  if (dtype < 0) return -1;
  PyObject *seq = PySequence_Fast(shape, "a graph input's shape must be a sequence of ints");
  if (!seq) return -1;
  int64_t dims[OPD_CLIENT_MAX_DIMS];
  Py_ssize_t nd = PySequence_Fast_GET_SIZE(seq);
  int rc = 0;
  if (nd > OPD_CLIENT_MAX_DIMS) {
    PyErr_Format(PyExc_ValueError, "graph input %zd: %zd dimensions", i, nd);
    rc = -1;
  }
  for (Py_ssize_t d = 0; rc == 0 && d < nd; d++) {
    dims[d] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, d));
    if (dims[d] == -1 && PyErr_Occurred()) rc = -1;
  }
  Py_DECREF(seq);
  opd_client_tensor value;
  if (rc == 0 && opd_graph_input(b, dtype, dims, (int)nd, NULL, parameter, &value) != 0) {
    opdpy_raise_last();
    rc = -1;
  }
  return rc;
}

static int add_node(opdpy_client *cl, opd_graph_builder *b, PyObject *node, Py_ssize_t j) {
  PyObject *op_obj, *args;
  if (!PyTuple_Check(node) ||
      !PyArg_ParseTuple(node, "O!O!", &opdpy_op_type, &op_obj, &PyTuple_Type, &args)) {
    if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "graph node %zd: (Op, args)", j);
    return -1;
  }
  opdpy_op *op = (opdpy_op *)op_obj;
  opdpy_callbuf buf;
  opdpy_callbuf_init(&buf);
  PyObject *failed = NULL;
  int rc = opdpy_convert_args(cl, op, args, &buf, &failed);
  if (rc == 1 || rc == 2) { /* a tensor of the session: a graph holds none */
    Py_XDECREF(failed);
    PyErr_Format(PyExc_ValueError,
                 "graph node %zd (%s): a tensor of the session as an argument; a graph holds "
                 "none (make it an input)",
                 j, op->name);
    rc = -1;
  }
  opd_client_tensor value;
  if (rc == 0 && opd_graph_node(b, op->name, buf.v, buf.n, &value) != 0) {
    opdpy_raise_last();
    rc = -1;
  }
  opdpy_callbuf_free(&buf);
  return rc;
}

static PyObject *info_dict(opd_client_graph g, const opd_client_graph_info *i) {
  return Py_BuildValue(
      "{s:K,s:K,s:O,s:I,s:I,s:I,s:I,s:I,s:I,s:K,s:K,s:s}", "graph", (unsigned long long)g,
      "compiled", (unsigned long long)i->compiled, "cache_hit", i->cache_hit ? Py_True : Py_False,
      "nodes_before", i->nodes_before, "nodes_after", i->nodes_after, "kernels", i->kernels,
      "kernels_last_run", i->kernels_last_run, "softmax_patterns", i->softmax_patterns, "groups",
      i->groups, "runs", (unsigned long long)i->runs, "compile_us",
      (unsigned long long)i->compile_us, "key", i->key);
}

/* _graph_define(inputs, nodes, outputs): inputs as (dtype, shape[, parameter]), nodes as
 * (Op, args) with GraphValues for tensors, outputs as GraphValues; defines the graph and
 * waits: (graph id, what the daemon made of it as a dict). */
PyObject *opdpy_client_graph_define(opdpy_client *cl, PyObject *args) {
  PyObject *inputs, *nodes, *outputs;
  if (!PyArg_ParseTuple(args, "O!O!O!", &PyList_Type, &inputs, &PyList_Type, &nodes, &PyList_Type,
                        &outputs))
    return NULL;
  if (!opdpy_client_open(cl)) return opdpy_raise_closed();
  opd_graph_builder *b;
  if (opd_graph_builder_new(cl->c, &b) != 0) return opdpy_raise_last();
  int rc = 0;
  for (Py_ssize_t i = 0; rc == 0 && i < PyList_GET_SIZE(inputs); i++)
    rc = add_input(b, PyList_GET_ITEM(inputs, i), i);
  for (Py_ssize_t j = 0; rc == 0 && j < PyList_GET_SIZE(nodes); j++)
    rc = add_node(cl, b, PyList_GET_ITEM(nodes, j), j);
  Py_ssize_t nout = PyList_GET_SIZE(outputs);
  opd_client_tensor *outs = PyMem_Calloc((size_t)(nout ? nout : 1), sizeof *outs);
  if (!outs && rc == 0) {
    PyErr_NoMemory();
    rc = -1;
  }
  for (Py_ssize_t i = 0; rc == 0 && i < nout; i++) {
    PyObject *o = PyList_GET_ITEM(outputs, i);
    if (Py_TYPE(o) != &opdpy_graph_value_type) {
      PyErr_Format(PyExc_TypeError, "graph output %zd must be a GraphValue, not %.100s", i,
                   Py_TYPE(o)->tp_name);
      rc = -1;
    } else {
      outs[i] = ((opdpy_graph_value *)o)->value;
    }
  }
  PyObject *result = NULL;
  if (rc == 0) {
    opd_client_graph g = 0;
    opd_client_graph_info info;
    cl->waiting++;
    Py_BEGIN_ALLOW_THREADS rc = opd_graph_define(b, outs, (size_t)nout, &g, &info);
    Py_END_ALLOW_THREADS cl->waiting--;
    PyObject *info_obj = NULL;
    if (rc != 0)
      opdpy_raise_last();
    else if ((info_obj = info_dict(g, &info)) != NULL) /* the tuple takes it ("N") */
      result = Py_BuildValue("(KN)", (unsigned long long)g, info_obj);
    opdpy_client_process(cl);
  }
  PyMem_Free(outs);
  opd_graph_builder_free(b);
  return result;
}

/* _graph_release(graph): releases it after every request made before (fire and forget: the
 * connection's end releases it anyway). */
PyObject *opdpy_client_graph_release(opdpy_client *cl, PyObject *arg) {
  unsigned long long g = PyLong_AsUnsignedLongLong(arg);
  if (g == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
  if (!opdpy_client_open(cl)) Py_RETURN_NONE; /* closing released it */
  if (opdpy_client_wait_queue(cl) < 0) return NULL;
  if (opd_graph_release_async(cl->c, g, NULL, NULL, NULL) != 0) return opdpy_raise_last();
  cl->requests++;
  Py_RETURN_NONE;
}
