/* decode.c: the wire decoder of IValues against a schema, shared by calls ([Note: Prepared
 * calls] in prepared.h) and the nodes of graphs (graphs.c).
 *
 * [Note: Checking a call against its schema]
 * A Call names an operator and gives a stack of wire IValues. Before any kernel runs, each
 * is checked against the schema's argument and converted: the count (at most the schema's
 * arguments; missing trailing ones take their defaults, a missing argument without a default
 * is an error, keyword-only ones included); None only for optional types; Tensor from a
 * handle of this session (borrowed from the handle table: the table's reference outlives
 * the call) or an inline literal (at most max_literal_bytes, its byte count checked against
 * dtype x shape); int (also SymInt, Layout, MemoryFormat) from an int; float from a float or
 * an int; Scalar from an int, float or bool, keeping its kind; ScalarType from a valid
 * dtype; Device from a backend component and index; lists by their element type (int[N]
 * also takes one int, repeated N times); Tensor[] and Tensor?[] from handles (0 is None in
 * Tensor?[]). The IValues built are exactly the tags the kernels' boxed wrappers read.
 *
 * A graph node's arguments go through the same conversions with three differences: a
 * tensor is a reference to an earlier value of the graph (IValue.ref, IValue.refs), never a
 * handle (a graph holds none); a Python number (int, float, bool) for a Tensor is taken, as
 * PyTorch wraps it in a 0-d tensor; and errors name the node ("graph node 3
 * (aten::add.Tensor): argument 'other': ..."). The graph builder then checks the values
 * again against the schema and infers the node's shapes (opd/graph.h).
 */
#include "decode.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "opd/error.h"
#include "session.h"

/* ---- wire values ---- */

static const char *wire_type_name(const Opd__V1__IValue *w) {
  switch (w->value_case) {
  case OPD__V1__IVALUE__VALUE_NONE: return "None";
  case OPD__V1__IVALUE__VALUE_B: return "bool";
  case OPD__V1__IVALUE__VALUE_I: return "int";
  case OPD__V1__IVALUE__VALUE_D: return "float";
  case OPD__V1__IVALUE__VALUE_S: return "str";
  case OPD__V1__IVALUE__VALUE_TENSOR: return "Tensor (handle)";
  case OPD__V1__IVALUE__VALUE_INTS: return "int[]";
  case OPD__V1__IVALUE__VALUE_DOUBLES: return "float[]";
  case OPD__V1__IVALUE__VALUE_BOOLS: return "bool[]";
  case OPD__V1__IVALUE__VALUE_TENSORS: return "Tensor[]";
  case OPD__V1__IVALUE__VALUE_OPTIONAL_TENSORS: return "Tensor?[]";
  case OPD__V1__IVALUE__VALUE_DTYPE: return "ScalarType";
  case OPD__V1__IVALUE__VALUE_DEVICE: return "Device";
  case OPD__V1__IVALUE__VALUE_LITERAL: return "Tensor (literal)";
  case OPD__V1__IVALUE__VALUE_REF: return "a graph value reference";
  case OPD__V1__IVALUE__VALUE_REFS: return "a list of graph value references";
  default: return "an empty value (no field set)";
  }
}

/* The schema's spelling of a type: "SymInt[]", "int[2]", "Tensor?[]", "float?". */
static void type_name(const opd_type *t, char *buf, size_t len) {
  const char *base = t->symint ? "SymInt" : opd_type_kind_name((opd_type_kind)t->kind);
  if (!t->is_list)
    snprintf(buf, len, "%s%s", base, t->optional ? "?" : "");
  else if (t->fixed_size)
    snprintf(buf, len, "%s%s[%d]%s", base, t->elem_optional ? "?" : "", (int)t->fixed_size,
             t->optional ? "?" : "");
  else
    snprintf(buf, len, "%s%s[]%s", base, t->elem_optional ? "?" : "", t->optional ? "?" : "");
}

/* What an argument's decoding needs: the job (its session's handles and limits, its arena),
 * what errors name first ("aten::add.Tensor()" for a call, "graph node 3
 * (aten::add.Tensor)" for a graph node), the schema's argument, and the prepared call whose
 * key set and devices the tensors join (a call), or NULL (a graph node: no handles, and a
 * Python number for a Tensor is a wrapped number). */
typedef struct arg_ctx {
  opd__job *job;
  const char *where, *parens; /* errors begin with both: "aten::add.Tensor" "()" */
  const opd_argument *arg;
  opd__prepared_call *call;
} arg_ctx;

static int type_mismatch(const arg_ctx *a, const Opd__V1__IValue *w) {
  char tn[64];
  type_name(&a->arg->type, tn, sizeof tn);
  return opd_error(OPD_EINVAL,
                   "%s%s: expected a value of type '%s' for argument '%s' but instead found type "
                   "'%s'",
                   a->where, a->parens, tn, a->arg->name, wire_type_name(w));
}

/* A tensor of the call joins its key set and, on a CUDA device, its devices. */
static void join(opd__prepared_call *call, opd_device d) {
  if (d.type != OPD_DEVICE_CUDA) return;
  if (call->device.type != OPD_DEVICE_CUDA)
    call->device = (opd_device){OPD_DEVICE_CUDA, (int16_t)(d.index < 0 ? 0 : d.index)};
  call->cuda_devices |= opd_device_cuda_bit(d);
}

static void join_tensor(opd__prepared_call *call, const opd_tensor *t) {
  if (!call) return;
  call->keys = opd_keyset_union(call->keys, opd_tensor_key_set(t));
  join(call, opd_tensor_device(t));
}

static int handle_tensor(const arg_ctx *a, uint64_t handle, opd_tensor **out) {
  if (__builtin_expect(!a->call, 0))
    return opd_error(OPD_EINVAL,
                     "%s%s: argument '%s': tensor handle %" PRIu64
                     " in a graph: a graph holds no handle; refer to an earlier value "
                     "(IValue.ref) or make the tensor an input of the graph",
                     a->where, a->parens, a->arg->name, handle);
  if (__builtin_expect(handle == 0, 0))
    return opd_error(OPD_EINVAL,
                     "%s%s: argument '%s': tensor handle 0 is never valid (0 is None "
                     "only in a Tensor?[] list)",
                     a->where, a->parens, a->arg->name);
  if (__builtin_expect(!(*out = opd__session_lookup(a->job->session, handle)), 0))
    return opd_error(OPD_ENOENT,
                     "%s%s: argument '%s': unknown tensor handle %" PRIu64
                     " (never issued to this session, or released)",
                     a->where, a->parens, a->arg->name, handle);
  join_tensor(a->call, *out);
  return 0;
}

static void normalize_bools(uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) p[i] = p[i] != 0;
}

static int literal_tensor(const arg_ctx *a, const Opd__V1__TensorLiteral *l, opd_tensor **out) {
  char what[200];
  snprintf(what, sizeof what, "%s%s: argument '%s': tensor literal", a->where, a->parens,
           a->arg->name);
  uint64_t max = a->job->session->cfg->max_literal_bytes;
  if (l->data.len > max)
    return opd_error(OPD_EINVAL,
                     "%s of %zu bytes is over max_literal_bytes (%" PRIu64 "): upload it", what,
                     l->data.len, max);
  uint64_t nbytes = 0;
  int rc = opd__checked_nbytes((opd_dtype)l->dtype, l->shape, l->n_shape, &nbytes, what);
  if (rc < 0) return rc;
  if (nbytes != l->data.len)
    return opd_error(OPD_EINVAL, "%s: dtype %s and shape need %" PRIu64 " bytes but %zu were given",
                     what, opd_dtype_name((opd_dtype)l->dtype), nbytes, l->data.len);
  rc = opd_tensor_empty(l->shape, (int)l->n_shape, (opd_dtype)l->dtype,
                        (opd_device){OPD_DEVICE_CPU, -1}, out);
  if (rc < 0) return rc;
  if (nbytes) {
    memcpy(opd_tensor_data(*out), l->data.data, nbytes);
    if (l->dtype == OPD__V1__DTYPE__BOOL) normalize_bools(opd_tensor_data(*out), nbytes);
  }
  return 0;
}

static int device_value(const arg_ctx *a, const Opd__V1__Device *d, opd_device *out) {
  if (d->type < 0 || d->type >= OPD_NUM_BACKENDS || d->index < -1 || d->index > INT16_MAX)
    return opd_error(OPD_EINVAL, "%s%s: argument '%s': invalid device (type %d, index %d)",
                     a->where, a->parens, a->arg->name, (int)d->type, (int)d->index);
  *out = (opd_device){(int16_t)d->type, (int16_t)d->index};
  return 0;
}

/* A decoded list's array from the job's arena failed: for want of memory, or past the
 * request's decoding limit, which a list the frame holds never reaches. */
static int list_alloc_failed(const arg_ctx *a, const char *what, size_t n) {
  const opd__arena *arena = &a->job->arena;
  if (!arena->exceeded)
    return opd_error(OPD_ENOMEM, "%s%s: argument '%s': out of memory decoding a %s of %zu",
                     a->where, a->parens, a->arg->name, what, n);
  return opd_error(OPD_EINVAL,
                   "%s%s: argument '%s': a %s of %zu takes the request past its decoding limit "
                   "of %zu bytes (%d per byte of frame, plus 16 KiB)",
                   a->where, a->parens, a->arg->name, what, n, arena->limit,
                   OPD__DECODE_BYTES_PER_FRAME_BYTE);
}

static int decode_list(const arg_ctx *a, const Opd__V1__IValue *w, opd_ivalue *out) {
  const opd_type *t = &a->arg->type;
  opd__arena *arena = &a->job->arena;
  switch ((opd_type_kind)t->kind) {
  case OPD_TYPE_INT:
    if (w->value_case == OPD__V1__IVALUE__VALUE_INTS)
      return opd_iv_make_int_list(out, w->ints->values, w->ints->n_values);
    if (w->value_case == OPD__V1__IVALUE__VALUE_I && t->fixed_size > 0) {
      int64_t v[OPD_SCHEMA_MAX_FIXED_SIZE];
      for (int i = 0; i < t->fixed_size; i++) v[i] = w->i;
      return opd_iv_make_int_list(out, v, (size_t)t->fixed_size);
    }
    break;
  case OPD_TYPE_FLOAT:
    if (w->value_case == OPD__V1__IVALUE__VALUE_DOUBLES)
      return opd_iv_make_double_list(out, w->doubles->values, w->doubles->n_values);
    break;
  case OPD_TYPE_BOOL:
    if (w->value_case == OPD__V1__IVALUE__VALUE_BOOLS) {
      size_t n = w->bools->n_values;
      bool *v = opd__arena_alloc(arena, n * sizeof *v);
      if (!v) return list_alloc_failed(a, "bool list", n);
      for (size_t i = 0; i < n; i++) v[i] = w->bools->values[i] != 0;
      return opd_iv_make_bool_list(out, v, n);
    }
    break;
  case OPD_TYPE_TENSOR: {
    bool optional = t->elem_optional;
    size_t n;
    const uint64_t *handles;
    if (!optional && w->value_case == OPD__V1__IVALUE__VALUE_TENSORS) {
      n = w->tensors->n_handles;
      handles = w->tensors->handles;
    } else if (optional && w->value_case == OPD__V1__IVALUE__VALUE_OPTIONAL_TENSORS) {
      n = w->optional_tensors->n_handles;
      handles = w->optional_tensors->handles;
    } else {
      break;
    }
    opd_tensor **v = opd__arena_alloc(arena, n * sizeof *v);
    if (!v) return list_alloc_failed(a, "tensor list", n);
    for (size_t i = 0; i < n; i++) {
      v[i] = NULL;
      if (optional && handles[i] == 0) continue;
      int rc = handle_tensor(a, handles[i], &v[i]);
      if (rc < 0) return rc;
    }
    return opd_iv_make_tensor_list(out, v, n, optional);
  }
  default:
    return opd_error(OPD_EINVAL,
                     "%s%s: argument '%s': lists of %s cannot be passed over the "
                     "protocol",
                     a->where, a->parens, a->arg->name, opd_type_kind_name((opd_type_kind)t->kind));
  }
  return type_mismatch(a, w);
}

/* Converts one wire value to the IValue the schema's argument takes. */
static int decode_arg(const arg_ctx *a, const Opd__V1__IValue *w, opd_ivalue *out) {
  const opd_type *t = &a->arg->type;
  if (w->value_case == OPD__V1__IVALUE__VALUE_REF || w->value_case == OPD__V1__IVALUE__VALUE_REFS)
    return opd_error(OPD_EINVAL,
                     "%s%s: argument '%s': %s is only valid in a graph node (define_graph), not "
                     "in a call",
                     a->where, a->parens, a->arg->name, wire_type_name(w));
  if (w->value_case == OPD__V1__IVALUE__VALUE_NONE) {
    if (!t->optional) return type_mismatch(a, w);
    *out = opd_iv_none();
    return 0;
  }
  if (t->is_list) return decode_list(a, w, out);
  switch ((opd_type_kind)t->kind) {
  case OPD_TYPE_TENSOR: {
    opd_tensor *tensor;
    int rc;
    if (w->value_case == OPD__V1__IVALUE__VALUE_TENSOR) {
      if ((rc = handle_tensor(a, w->tensor, &tensor)) < 0) return rc;
      *out = opd_iv_tensor_borrow(tensor);
      return 0;
    }
    if (w->value_case == OPD__V1__IVALUE__VALUE_LITERAL) {
      if ((rc = literal_tensor(a, w->literal, &tensor)) < 0) return rc;
      join_tensor(a->call, tensor);
      *out = opd_iv_tensor_steal(tensor);
      return 0;
    }
    if (!a->call &&
        (w->value_case == OPD__V1__IVALUE__VALUE_I || w->value_case == OPD__V1__IVALUE__VALUE_D ||
         w->value_case == OPD__V1__IVALUE__VALUE_B)) { /* a wrapped number */
      *out = w->value_case == OPD__V1__IVALUE__VALUE_I   ? opd_iv_int(w->i)
             : w->value_case == OPD__V1__IVALUE__VALUE_D ? opd_iv_double(w->d)
                                                         : opd_iv_bool(w->b);
      return 0;
    }
    break;
  }
  case OPD_TYPE_INT:
  case OPD_TYPE_LAYOUT:
  case OPD_TYPE_MEMORY_FORMAT:
    if (w->value_case != OPD__V1__IVALUE__VALUE_I) break;
    *out = opd_iv_int(w->i);
    return 0;
  case OPD_TYPE_FLOAT:
    if (w->value_case == OPD__V1__IVALUE__VALUE_D) {
      *out = opd_iv_double(w->d);
      return 0;
    }
    if (w->value_case != OPD__V1__IVALUE__VALUE_I) break;
    *out = opd_iv_double((double)w->i);
    return 0;
  case OPD_TYPE_BOOL:
    if (w->value_case != OPD__V1__IVALUE__VALUE_B) break;
    *out = opd_iv_bool(w->b);
    return 0;
  case OPD_TYPE_STR:
    if (w->value_case != OPD__V1__IVALUE__VALUE_S) break;
    return opd_iv_make_string(out, w->s, strlen(w->s));
  case OPD_TYPE_SCALAR:
    if (w->value_case == OPD__V1__IVALUE__VALUE_I)
      *out = opd_iv_int(w->i);
    else if (w->value_case == OPD__V1__IVALUE__VALUE_D)
      *out = opd_iv_double(w->d);
    else if (w->value_case == OPD__V1__IVALUE__VALUE_B)
      *out = opd_iv_bool(w->b);
    else
      break;
    return 0;
  case OPD_TYPE_SCALAR_TYPE:
    if (w->value_case != OPD__V1__IVALUE__VALUE_DTYPE) break;
    if (!opd_dtype_valid((int)w->dtype))
      return opd_error(OPD_EINVAL, "%s%s: argument '%s': invalid dtype %d", a->where, a->parens,
                       a->arg->name, (int)w->dtype);
    *out = opd_iv_dtype(w->dtype);
    return 0;
  case OPD_TYPE_DEVICE: {
    if (w->value_case != OPD__V1__IVALUE__VALUE_DEVICE) break;
    opd_device d = {0, 0};
    int rc = device_value(a, w->device, &d);
    if (rc < 0) return rc;
    if (a->call) join(a->call, d);
    *out = opd_iv_device(d);
    return 0;
  }
  case OPD_TYPE_GENERATOR:
    return opd_error(OPD_EINVAL,
                     "%s%s: argument '%s': generators cannot be passed over the "
                     "protocol; pass None",
                     a->where, a->parens, a->arg->name);
  case OPD_TYPE_NUM_KINDS: break;
  }
  return type_mismatch(a, w);
}

static int declaration_error(const char *op, const opd_schema *schema, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int declaration_error(const char *op, const opd_schema *schema, const char *fmt, ...) {
  char what[160], decl[OPD_SCHEMA_MAX_LEN + 1];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  opd_schema_format(schema, decl, sizeof decl);
  return opd_error(OPD_EINVAL, "%s() %s. Declaration: %s", op, what, decl);
}

/* Builds the argument stack of a call. On error the stack holds what was pushed. */
static int decode_args(opd__job *job, const char *op, const opd_schema *schema,
                       opd__prepared_call *call) {
  const Opd__V1__Call *c = job->req->call;
  if (c->n_args > schema->num_args)
    return declaration_error(op, schema,
                             "expected at most %u argument(s) but received %zu argument(s)",
                             schema->num_args, c->n_args);
  for (uint32_t i = 0; i < schema->num_args; i++) {
    const opd_argument *arg = &schema->args[i];
    opd_ivalue v;
    int rc;
    if (i < c->n_args)
      rc = decode_arg(&(arg_ctx){job, op, "()", arg, call}, c->args[i], &v);
    else if (arg->has_default)
      rc = opd_iv_copy(&v, &arg->default_value);
    else
      return declaration_error(op, schema, "is missing value for %sargument '%s'",
                               arg->kwarg_only ? "keyword-only " : "", arg->name);
    if (rc < 0) return rc;
    if ((rc = opd_stack_push(&call->stack, v)) < 0)
      return opd_error(rc, "out of memory pushing the arguments of %s", op);
  }
  return 0;
}

int opd__call_prepare(opd__job *job) {
  opd__prepared_call *call = &job->call;
  assert(call->state == OPD__CALL_NONE);
  const char *op = job->req->call->op;
  /* found once: the loop or the estimate may have ([Note: The cost of a job] in cost.h);
   * operators are never freed */
  if (!call->op) call->op = opd_find_op(op);
  call->keys = opd_keyset_empty();
  call->device = (opd_device){OPD_DEVICE_CPU, -1};
  call->cuda_devices = 0;
  opd_stack_init(&call->stack);
  const opd_schema *schema = call->op ? opd_op_schema(call->op) : NULL;
  /* [Note: Memory reserved before it is allocated]: literals, intermediates and outputs are
   * charged to the session as they are made */
  opd_mem_budget_install(&job->session->budget);
  int rc = schema ? decode_args(job, op, schema, call)
                  : opd_error(OPD_ENOENT, "unknown operator '%.200s'", op);
  if (rc == 0) {
    call->state = OPD__CALL_READY;
    return 0;
  }
  opd_stack_destroy(&call->stack);
  opd_mem_budget_uninstall();
  call->state = OPD__CALL_FAILED;
  opd__job_error(job, opd__error_code(rc), op, "%s", opd_last_error());
  return rc;
}

void opd__call_unprepare(opd__job *job) {
  if (job->call.state != OPD__CALL_READY) return;
  opd_stack_destroy(&job->call.stack);
  opd_mem_budget_uninstall();
  job->call.state = OPD__CALL_NONE;
}

static int graph_ref(const char *where, const opd_argument *arg, const Opd__V1__ValueRef *r,
                     opd_graph_ref *out) {
  if (r->all && r->output)
    return opd_error(OPD_EINVAL,
                     "%s: argument '%s': a reference to the whole list of position %u names no "
                     "output (output %u)",
                     where, arg->name, r->position, r->output);
  *out = (opd_graph_ref){r->position, r->all ? OPD_GRAPH_ALL_OUTPUTS : r->output};
  return 0;
}

int opd__decode_graph_arg(opd__job *job, const char *where, const opd_argument *arg,
                          const Opd__V1__IValue *w, opd_graph_arg *out) {
  if (w->value_case == OPD__V1__IVALUE__VALUE_REF) {
    *out = (opd_graph_arg){.kind = OPD_GRAPH_ARG_REF};
    return graph_ref(where, arg, w->ref, &out->ref);
  }
  if (w->value_case == OPD__V1__IVALUE__VALUE_REFS) {
    const Opd__V1__ValueRefList *l = w->refs;
    size_t n = l->n_refs;
    opd_graph_ref *refs = opd__arena_alloc(&job->arena, (n ? n : 1) * sizeof *refs);
    if (!refs) return opd_error(OPD_ENOMEM, "%s: out of memory decoding a Tensor[]", where);
    if (n > UINT32_MAX)
      return opd_error(OPD_EINVAL, "%s: argument '%s': %zu references", where, arg->name, n);
    for (size_t i = 0; i < n; i++) {
      int rc = graph_ref(where, arg, l->refs[i], &refs[i]);
      if (rc < 0) return rc;
    }
    *out = (opd_graph_arg){.kind = OPD_GRAPH_ARG_REFS, .refs = refs, .nrefs = (uint32_t)n};
    return 0;
  }
  *out = (opd_graph_arg){.kind = OPD_GRAPH_ARG_VALUE};
  return decode_arg(&(arg_ctx){job, where, "", arg, NULL}, w, &out->value);
}
