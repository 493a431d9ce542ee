/* requests.c: the client's requests: boxed values to protobuf IValues and back, and the
 * public calls that build each request (call, upload, download, release, dispatch state,
 * synchronize, ping) in their asynchronous and synchronous forms. */
#include <assert.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"

opd_client_value opd_cv_str(const char *s) {
  return (opd_client_value){.kind = OPD_CV_STR, .len = s ? strlen(s) : 0, .u.s = s};
}

/* ---- arguments ---- */

void opd__client_args_free(opd__client_args *a) {
  for (size_t i = 0; i < a->n; i++) free(a->owned[i]);
  free(a->heap);
}

static int arg_error(size_t i, const char *why) {
  return opd__client_error(OPD_EINVAL, "argument %zu: %s", i, why);
}

/* Checks a Tensor argument: a handle in a call, a graph value in a graph's node (graph).
 * 0 or OPD_EINVAL. */
static int check_tensor(size_t i, opd_client_tensor t, bool graph) {
  if (t == 0) return arg_error(i, "tensor handle 0 (None is opd_cv_none())");
  if (graph && !opd_graph_is_value(t))
    return arg_error(i, "a tensor handle in a graph node: a graph holds no handle (make the "
                        "tensor an input, opd_graph_input)");
  if (!graph && opd_graph_is_value(t))
    return arg_error(i, "a value of a graph being built, not a tensor handle: it is an argument "
                        "only of calls captured into its graph");
  return 0;
}

/* Checks a literal's geometry: 0 or OPD_EINVAL. */
static int check_literal(size_t i, const opd_client_literal *l) {
  if (!l) return arg_error(i, "NULL literal");
  size_t esize = opd_client_dtype_size(l->dtype);
  if (esize == 0) return arg_error(i, "literal with an invalid dtype");
  if (l->ndim < 0 || l->ndim > OPD_CLIENT_MAX_DIMS || (l->ndim && !l->shape))
    return arg_error(i, "literal with a bad rank or shape");
  size_t bytes = esize;
  for (int d = 0; d < l->ndim; d++) {
    if (l->shape[d] < 0) return arg_error(i, "literal with a negative size");
    if (bytes && (uint64_t)l->shape[d] > SIZE_MAX / bytes) return arg_error(i, "literal too large");
    bytes = l->shape[d] ? bytes * (size_t)l->shape[d] : 0;
  }
  if (bytes != l->nbytes) return arg_error(i, "literal nbytes does not match its shape and dtype");
  if (bytes && !l->data) return arg_error(i, "literal without data");
  return 0;
}

static void set_ref(Opd__V1__ValueRef *r, opd_client_tensor v) {
  r->position = opd_graph_value_position(v);
  uint32_t out = (uint32_t)v;
  r->all = out == OPD_CLIENT_GRAPH_ALL_OUTPUTS;
  r->output = r->all ? 0 : out;
}

/* A Tensor[] of graph values: a ValueRefList, its references in one block. */
static int graph_refs(opd__client_args *a, size_t i, const opd_client_value *v) {
  Opd__V1__IValue *iv = &a->values[i];
  opd__client_sub_message *sub = &a->subs[i];
  size_t n = v->len;
  Opd__V1__ValueRef *refs = malloc((n ? n : 1) * (sizeof *refs + sizeof(Opd__V1__ValueRef *)));
  if (!refs) return opd__client_error(OPD_ENOMEM, "out of memory");
  a->owned[i] = refs;
  Opd__V1__ValueRef **ptrs = (Opd__V1__ValueRef **)(refs + n);
  for (size_t k = 0; k < n; k++) {
    opd__v1__value_ref__init(&refs[k]);
    set_ref(&refs[k], v->u.tensors[k]);
    ptrs[k] = &refs[k];
  }
  opd__v1__value_ref_list__init(&sub->refs);
  sub->refs.n_refs = n;
  sub->refs.refs = ptrs;
  iv->value_case = OPD__V1__IVALUE__VALUE_REFS;
  iv->refs = &sub->refs;
  return 0;
}

static int build_one(opd__client_args *a, size_t i, const opd_client_value *v) {
  Opd__V1__IValue *iv = &a->values[i];
  opd__client_sub_message *sub = &a->subs[i];
  opd__v1__ivalue__init(iv);
  if (v->kind >= OPD_CV_INTS && v->kind <= OPD_CV_OPT_TENSORS && v->len && !v->u.ints)
    return arg_error(i, "NULL list with a nonzero length");
  switch (v->kind) {
  case OPD_CV_NONE:
    iv->value_case = OPD__V1__IVALUE__VALUE_NONE;
    iv->none = 1;
    break;
  case OPD_CV_BOOL:
    iv->value_case = OPD__V1__IVALUE__VALUE_B;
    iv->b = v->u.b;
    break;
  case OPD_CV_INT:
    iv->value_case = OPD__V1__IVALUE__VALUE_I;
    iv->i = v->u.i;
    break;
  case OPD_CV_DOUBLE:
    iv->value_case = OPD__V1__IVALUE__VALUE_D;
    iv->d = v->u.d;
    break;
  case OPD_CV_STR:
    if (!v->u.s) return arg_error(i, "NULL string");
    if (strlen(v->u.s) != v->len) return arg_error(i, "string length differs from strlen");
    iv->value_case = OPD__V1__IVALUE__VALUE_S;
    iv->s = (char *)v->u.s;
    break;
  case OPD_CV_TENSOR: {
    int rc = check_tensor(i, v->u.tensor, a->graph);
    if (rc) return rc;
    if (a->graph) {
      opd__v1__value_ref__init(&sub->ref);
      set_ref(&sub->ref, v->u.tensor);
      iv->value_case = OPD__V1__IVALUE__VALUE_REF;
      iv->ref = &sub->ref;
      break;
    }
    iv->value_case = OPD__V1__IVALUE__VALUE_TENSOR;
    iv->tensor = v->u.tensor;
    break;
  }
  case OPD_CV_INTS:
    opd__v1__int_list__init(&sub->ints);
    sub->ints.n_values = v->len;
    sub->ints.values = (int64_t *)v->u.ints;
    iv->value_case = OPD__V1__IVALUE__VALUE_INTS;
    iv->ints = &sub->ints;
    break;
  case OPD_CV_DOUBLES:
    opd__v1__double_list__init(&sub->doubles);
    sub->doubles.n_values = v->len;
    sub->doubles.values = (double *)v->u.doubles;
    iv->value_case = OPD__V1__IVALUE__VALUE_DOUBLES;
    iv->doubles = &sub->doubles;
    break;
  case OPD_CV_BOOLS: {
    opd__v1__bool_list__init(&sub->bools);
    protobuf_c_boolean *b = NULL;
    if (v->len) {
      if (!(a->owned[i] = b = malloc(v->len * sizeof *b)))
        return opd__client_error(OPD_ENOMEM, "out of memory");
      for (size_t k = 0; k < v->len; k++) b[k] = v->u.bools[k];
    }
    sub->bools.n_values = v->len;
    sub->bools.values = b;
    iv->value_case = OPD__V1__IVALUE__VALUE_BOOLS;
    iv->bools = &sub->bools;
    break;
  }
  case OPD_CV_TENSORS:
    for (size_t k = 0; k < v->len; k++) {
      if (v->u.tensors[k] == 0) return arg_error(i, "handle 0 in a Tensor[] (Tensor?[] allows it)");
      if (opd_graph_is_value(v->u.tensors[k]) != a->graph)
        return arg_error(i, a->graph ? "a tensor handle in a graph node's Tensor[]"
                                     : "a graph value in a Tensor[] of a call");
    }
    if (a->graph) return graph_refs(a, i, v);
    opd__v1__handle_list__init(&sub->handles);
    sub->handles.n_handles = v->len;
    sub->handles.handles = (uint64_t *)v->u.tensors;
    iv->value_case = OPD__V1__IVALUE__VALUE_TENSORS;
    iv->tensors = &sub->handles;
    break;
  case OPD_CV_OPT_TENSORS:
    if (a->graph) return arg_error(i, "a Tensor?[] in a graph node (graphs take Tensor[] lists)");
    opd__v1__optional_handle_list__init(&sub->optional_handles);
    sub->optional_handles.n_handles = v->len;
    sub->optional_handles.handles = (uint64_t *)v->u.tensors;
    iv->value_case = OPD__V1__IVALUE__VALUE_OPTIONAL_TENSORS;
    iv->optional_tensors = &sub->optional_handles;
    break;
  case OPD_CV_DTYPE:
    if (opd_client_dtype_size(v->u.dtype) == 0) return arg_error(i, "invalid dtype");
    iv->value_case = OPD__V1__IVALUE__VALUE_DTYPE;
    iv->dtype = (Opd__V1__DType)v->u.dtype;
    break;
  case OPD_CV_DEVICE:
    opd__v1__device__init(&sub->device);
    sub->device.type = v->u.device.type;
    sub->device.index = v->u.device.index;
    iv->value_case = OPD__V1__IVALUE__VALUE_DEVICE;
    iv->device = &sub->device;
    break;
  case OPD_CV_LITERAL: {
    const opd_client_literal *l = v->u.literal;
    int rc = check_literal(i, l);
    if (rc) return rc;
    opd__v1__tensor_literal__init(&sub->literal);
    sub->literal.dtype = (Opd__V1__DType)l->dtype;
    sub->literal.n_shape = (size_t)l->ndim;
    sub->literal.shape = (int64_t *)l->shape;
    sub->literal.data.len = l->nbytes;
    sub->literal.data.data = (uint8_t *)l->data;
    iv->value_case = OPD__V1__IVALUE__VALUE_LITERAL;
    iv->literal = &sub->literal;
    break;
  }
  default: return arg_error(i, "unknown value kind");
  }
  return 0;
}

/* Converts a call's arguments into protobuf IValues in `a` (freed with args_free after
 * success): 0 or OPD_EINVAL / OPD_ENOMEM. */
int opd__client_args_build(const opd_client_value *args, size_t nargs, bool graph,
                           opd__client_args *a) {
  a->n = 0;
  a->heap = NULL;
  a->graph = graph;
  if (nargs > OPD__CLIENT_MAX_ARGS)
    return opd__client_error(OPD_EINVAL, "%zu arguments (at most %d)", nargs, OPD__CLIENT_MAX_ARGS);
  if (nargs && !args) return opd__client_error(OPD_EINVAL, "NULL arguments");
  if (nargs <= OPD__CLIENT_ARGS_INLINE) {
    a->subs = a->own_subs;
    a->values = a->own_values;
    a->pointers = a->own_pointers;
    a->owned = a->own_owned;
    memset(a->own_owned, 0, sizeof a->own_owned);
  } else { /* nargs <= OPD__CLIENT_MAX_ARGS: no overflow */
    _Static_assert(_Alignof(opd__client_sub_message) <= _Alignof(max_align_t) &&
                       sizeof(opd__client_sub_message) % _Alignof(Opd__V1__IValue) == 0 &&
                       sizeof(Opd__V1__IValue) % _Alignof(Opd__V1__IValue *) == 0 &&
                       sizeof(Opd__V1__IValue *) % _Alignof(void *) == 0,
                   "the arrays follow each other aligned");
    a->heap =
        calloc(nargs, sizeof *a->subs + sizeof *a->values + sizeof *a->pointers + sizeof *a->owned);
    if (!a->heap) return opd__client_error(OPD_ENOMEM, "out of memory");
    a->subs = a->heap;
    a->values = (Opd__V1__IValue *)(a->subs + nargs);
    a->pointers = (Opd__V1__IValue **)(a->values + nargs);
    a->owned = (void **)(a->pointers + nargs);
  }
  a->n = nargs;
  for (size_t i = 0; i < nargs; i++) {
    int rc = build_one(a, i, &args[i]);
    if (rc) {
      opd__client_args_free(a);
      return rc;
    }
    a->pointers[i] = &a->values[i];
  }
  return 0;
}

/* ---- results ---- */

void opd__client_free_values(opd_client_value *v, size_t n) {
  for (size_t i = 0; v && i < n; i++) {
    switch (v[i].kind) {
    case OPD_CV_STR: free((char *)v[i].u.s); break;
    case OPD_CV_INTS: free((int64_t *)v[i].u.ints); break;
    case OPD_CV_DOUBLES: free((double *)v[i].u.doubles); break;
    case OPD_CV_BOOLS: free((bool *)v[i].u.bools); break;
    case OPD_CV_TENSORS:
    case OPD_CV_OPT_TENSORS: free((opd_client_tensor *)v[i].u.tensors); break;
    case OPD_CV_LITERAL: free((opd_client_literal *)v[i].u.literal); break;
    default: break;
    }
  }
}

static void *copy_array(const void *src, size_t n, size_t size) {
  void *p = malloc(n ? n * size : 1);
  if (p && n) memcpy(p, src, n * size);
  return p;
}

/* One reply value; 0, OPD_ENOMEM, or OPD_EINTERNAL for a value the client cannot read. */
static int copy_result(const Opd__V1__IValue *in, opd_client_value *out) {
  void *mem = NULL;
  switch (in->value_case) {
  case OPD__V1__IVALUE__VALUE_NONE: *out = opd_cv_none(); return 0;
  case OPD__V1__IVALUE__VALUE_B: *out = opd_cv_bool(in->b); return 0;
  case OPD__V1__IVALUE__VALUE_I: *out = opd_cv_int(in->i); return 0;
  case OPD__V1__IVALUE__VALUE_D: *out = opd_cv_double(in->d); return 0;
  case OPD__V1__IVALUE__VALUE_TENSOR: *out = opd_cv_tensor(in->tensor); return 0;
  case OPD__V1__IVALUE__VALUE_DTYPE: *out = opd_cv_dtype((int)in->dtype); return 0;
  case OPD__V1__IVALUE__VALUE_DEVICE:
    *out = opd_cv_device(in->device->type, in->device->index);
    return 0;
  case OPD__V1__IVALUE__VALUE_S: {
    size_t len = strlen(in->s);
    *out = (opd_client_value){
        .kind = OPD_CV_STR, .len = len, .u.s = mem = copy_array(in->s, len + 1, 1)};
    break;
  }
  case OPD__V1__IVALUE__VALUE_INTS:
    mem = copy_array(in->ints->values, in->ints->n_values, sizeof(int64_t));
    *out = opd_cv_ints(mem, in->ints->n_values);
    break;
  case OPD__V1__IVALUE__VALUE_DOUBLES:
    mem = copy_array(in->doubles->values, in->doubles->n_values, sizeof(double));
    *out = opd_cv_doubles(mem, in->doubles->n_values);
    break;
  case OPD__V1__IVALUE__VALUE_BOOLS: {
    size_t n = in->bools->n_values;
    bool *b = mem = malloc(n ? n : 1);
    for (size_t k = 0; b && k < n; k++) b[k] = in->bools->values[k] != 0;
    *out = opd_cv_bools(b, n);
    break;
  }
  case OPD__V1__IVALUE__VALUE_TENSORS:
    mem = copy_array(in->tensors->handles, in->tensors->n_handles, sizeof(uint64_t));
    *out = opd_cv_tensors(mem, in->tensors->n_handles);
    break;
  case OPD__V1__IVALUE__VALUE_OPTIONAL_TENSORS:
    mem = copy_array(in->optional_tensors->handles, in->optional_tensors->n_handles,
                     sizeof(uint64_t));
    *out = opd_cv_opt_tensors(mem, in->optional_tensors->n_handles);
    break;
  case OPD__V1__IVALUE__VALUE_LITERAL: {
    /* one block: the literal, its shape, its data */
    const Opd__V1__TensorLiteral *l = in->literal;
    if (l->n_shape > OPD_CLIENT_MAX_DIMS) return OPD_EINTERNAL;
    size_t shape_bytes = l->n_shape * sizeof(int64_t);
    opd_client_literal *lit = mem = malloc(sizeof *lit + shape_bytes + l->data.len);
    if (!lit) break;
    int64_t *shape = (int64_t *)(lit + 1);
    if (shape_bytes) memcpy(shape, l->shape, shape_bytes);
    if (l->data.len) memcpy((uint8_t *)shape + shape_bytes, l->data.data, l->data.len);
    *lit = (opd_client_literal){(int)l->dtype, (int)l->n_shape, shape,
                                (uint8_t *)shape + shape_bytes, l->data.len};
    *out = opd_cv_literal(lit);
    break;
  }
  default: return OPD_EINTERNAL;
  }
  if (!mem) {
    *out = opd_cv_none();
    return OPD_ENOMEM;
  }
  return 0;
}

/* Room for n results: f's own storage for a few, else calloc'd; NULL when out of memory. */
static opd_client_value *results_storage(opd_future *f, size_t n) {
  return n <= OPD__FUTURE_RESULTS ? f->results_inline : calloc(n, sizeof(opd_client_value));
}

int opd__client_results_copy(Opd__V1__IValue **in, size_t n, opd_future *f) {
  opd_client_value *v = results_storage(f, n);
  if (!v) return OPD_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    int rc = copy_result(in[i], &v[i]);
    if (rc) {
      opd__client_free_values(v, i + 1);
      if (v != f->results_inline) free(v);
      return rc;
    }
  }
  f->results = v;
  f->num_results = n;
  return 0;
}

int opd__client_results_handles(const uint64_t *handles, size_t n, opd_future *f) {
  opd_client_value *v = results_storage(f, n);
  if (!v) return OPD_ENOMEM;
  for (size_t i = 0; i < n; i++) v[i] = opd_cv_tensor(handles[i]);
  f->results = v;
  f->num_results = n;
  return 0;
}

/* ---- submitting requests ---- */

/* A future for a request of `kind` whose operator, for messages, is op (or NULL), with
 * cb, user and, when out is asked for, owned by the user; NULL when out of memory (with the
 * thread's message set). */
static opd_future *request_future(opd_client *c, opd__req_kind kind, const char *op,
                                  opd_future_cb cb, void *user, opd_future **out) {
  opd_future *f = opd__future_new(c, kind, cb, user, out != NULL);
  size_t op_len = op ? strnlen(op, 256) : 0;
  if (f && op && op_len < sizeof f->op_inline) {
    memcpy(f->op_inline, op, op_len);
    f->op_inline[op_len] = 0;
    f->op = f->op_inline;
  } else if (f && op) {
    f->op = strndup(op, 256);
  }
  if (!f || (op && !f->op)) {
    if (f) opd__future_discard(f);
    opd__client_error(OPD_ENOMEM, "out of memory");
    return NULL;
  }
  return f;
}

int opd__client_submit_request(opd_client *c, opd__req_kind kind, Opd__V1__Request *req,
                               const char *op, const void *raw, size_t raw_len, opd_future_cb cb,
                               void *user, opd_future **out) {
  if (out) *out = NULL;
  opd_future *f = request_future(c, kind, op, cb, user, out);
  if (!f) return OPD_ENOMEM;
  f->raw = raw;
  f->raw_len = raw_len;
  int rc = opd__client_submit(c, f, req);
  if (rc == 0 && out) *out = f;
  return rc;
}

/* [Note: Typed calls packed directly]
 * A call's arguments used to become protobuf-c IValues (opd__client_args_build), which the
 * hand packer then read twice, once for the size and once for the bytes: 800 of the 2,400
 * instructions a call that callgrind counted in opd-bench's 16 x 64 add. A call whose arguments
 * are all plain (None, bool, int, float, tensor handle: every typed call of tensors and
 * scalars) now goes from opd_client_value to opd__wire_arg on the stack and is packed from
 * there into the future's frame ([Note: Hand-packed messages]), with the same checks and
 * the same bytes. Calls with lists, strings, dtypes, devices or literals, and more than
 * PLAIN_ARGS_MAX arguments, are built as protobuf-c messages as before. */
#define PLAIN_ARGS_MAX 8

/* args as opd__wire_args: 1, 0 when one is not of a plain kind, or an error (a bad handle) */
static int plain_args(const opd_client_value *args, size_t n, opd__wire_arg *out) {
  for (size_t i = 0; i < n; i++) {
    const opd_client_value *v = &args[i];
    opd__wire_arg *a = &out[i];
    switch (v->kind) {
    case OPD_CV_NONE: *a = (opd__wire_arg){OPD__V1__IVALUE__VALUE_NONE, {.b = true}}; break;
    case OPD_CV_BOOL: *a = (opd__wire_arg){OPD__V1__IVALUE__VALUE_B, {.b = v->u.b}}; break;
    case OPD_CV_INT: *a = (opd__wire_arg){OPD__V1__IVALUE__VALUE_I, {.i = v->u.i}}; break;
    case OPD_CV_DOUBLE: *a = (opd__wire_arg){OPD__V1__IVALUE__VALUE_D, {.d = v->u.d}}; break;
    case OPD_CV_TENSOR: {
      int rc = check_tensor(i, v->u.tensor, false);
      if (rc) return rc;
      *a = (opd__wire_arg){OPD__V1__IVALUE__VALUE_TENSOR, {.tensor = v->u.tensor}};
      break;
    }
    default: return 0;
    }
  }
  return 1;
}

int opd_client_call_async(opd_client *c, const char *op, const opd_client_value *args, size_t nargs,
                          opd_future_cb cb, void *user, opd_future **out) {
  if (out) *out = NULL;
  if (!op || !*op) return opd__client_error(OPD_EINVAL, "no operator name");
  if (opd__client_capturing(c))
    return opd__client_error(OPD_EINVAL,
                             "%s: an asynchronous call during a graph capture (captures record "
                             "the synchronous calls: [Note: Graphs in the client])",
                             op);
  opd__wire_arg plain[PLAIN_ARGS_MAX];
  int rc = nargs <= PLAIN_ARGS_MAX && args ? plain_args(args, nargs, plain) : 0;
  if (rc < 0) return rc;
  if (rc == 1) { /* [Note: Typed calls packed directly] */
    opd__client_plain_call call = {op, strlen(op), plain, nargs, 0};
    call.call_size = opd__wire_call_size(call.oplen, plain, nargs);
    opd_future *f = request_future(c, OPD__REQ_CALL, op, cb, user, out);
    if (!f) return OPD_ENOMEM;
    rc = opd__client_submit_call(c, f, &call);
    if (rc == 0 && out) *out = f;
    return rc;
  }
  opd__client_args arena;
  rc = opd__client_args_build(args, nargs, false, &arena);
  if (rc) return rc;
  Opd__V1__Call call = OPD__V1__CALL__INIT;
  call.op = (char *)op;
  call.n_args = nargs;
  call.args = arena.pointers;
  Opd__V1__Request req = OPD__V1__REQUEST__INIT;
  req.body_case = OPD__V1__REQUEST__BODY_CALL;
  req.call = &call;
  rc = opd__client_submit_request(c, OPD__REQ_CALL, &req, op, NULL, 0, cb, user, out);
  opd__client_args_free(&arena);
  return rc;
}

/* Takes the tensor results of a completed call: up to max into outs (exactly max if exact).
 * Otherwise the tensors it made are released and the call fails. */
int opd__client_take_tensors(opd_client *c, const opd_future *f, opd_client_tensor *outs,
                             size_t max, size_t *num, bool exact) {
  size_t n;
  const opd_client_value *v = opd_future_results(f, &n);
  if (num) *num = n;
  bool all_tensors = true;
  for (size_t i = 0; i < n; i++) all_tensors &= v[i].kind == OPD_CV_TENSOR;
  if (all_tensors && (exact ? n == max : n <= max)) {
    for (size_t i = 0; i < n; i++) outs[i] = v[i].u.tensor;
    return 0;
  }
  opd_client_tensor drop[64];
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (v[i].kind == OPD_CV_TENSOR) drop[k++] = v[i].u.tensor;
    if (k && (k == 64 || i + 1 == n)) {
      opd_client_release_async(c, drop, k, NULL, NULL, NULL);
      k = 0;
    }
  }
  if (num) *num = 0;
  if (!all_tensors)
    return opd__client_error(OPD_EINVAL, "%s: a result is not a Tensor (see opd_client_call_async)",
                             f->op);
  return opd__client_error(exact ? OPD_EINTERNAL : OPD_EINVAL, "%s returned %zu tensors, %s %zu",
                           f->op, n, exact ? "its schema says" : "with room for", max);
}

static int call_sync(opd_client *c, const char *op, const opd_client_value *args, size_t nargs,
                     opd_client_tensor *outs, size_t max, size_t *num, bool exact) {
  if (num) *num = 0;
  if (max && !outs) return opd__client_error(OPD_EINVAL, "NULL result array");
  if (opd__client_capturing(c)) { /* [Note: Graphs in the client] */
    if (!exact && max == 0)
      return opd__client_error(OPD_EINVAL, "%s: a captured call needs room for a result", op);
    int rc = opd__client_capture_call(op, args, nargs, outs, exact ? max : 1);
    if (rc == 0 && num) *num = exact ? max : 1;
    return rc;
  }
  int rc = opd__client_may_block(c);
  if (rc) return rc;
  opd_future *f;
  rc = opd_client_call_async(c, op, args, nargs, NULL, NULL, &f);
  if (rc) return rc;
  rc = opd__future_wait_sync(f);
  if (rc == 0) rc = opd__client_take_tensors(c, f, outs, max, num, exact);
  opd_future_free(f);
  return rc;
}

int opd_client_call(opd_client *c, const char *op, const opd_client_value *args, size_t nargs,
                    opd_client_tensor *outs, size_t max_outs, size_t *num_outs) {
  return call_sync(c, op, args, nargs, outs, max_outs, num_outs, false);
}

int opd__client_call_typed(opd_client *c, const char *op, const opd_client_value *args,
                           size_t nargs, opd_client_tensor *result, size_t nresults) {
  return call_sync(c, op, args, nargs, result, nresults, NULL, true);
}

int opd__client_bad_arg(const char *op, const char *arg, const char *why) {
  return opd__client_error(OPD_EINVAL, "%s: argument '%s' %s", op, arg, why);
}

/* ---- tensors ---- */

int opd_client_upload_async(opd_client *c, int dtype, const int64_t *shape, int ndim,
                            const void *data, size_t nbytes, const opd_client_device *device,
                            opd_future_cb cb, void *user, opd_future **out) {
  if (out) *out = NULL;
  size_t esize = opd_client_dtype_size(dtype), bytes = esize;
  if (esize == 0) return opd__client_error(OPD_EINVAL, "upload: invalid dtype %d", dtype);
  if (ndim < 0 || ndim > OPD_CLIENT_MAX_DIMS || (ndim && !shape))
    return opd__client_error(OPD_EINVAL, "upload: bad rank %d", ndim);
  for (int d = 0; d < ndim; d++) {
    if (shape[d] < 0) return opd__client_error(OPD_EINVAL, "upload: negative size in dim %d", d);
    if (bytes && (uint64_t)shape[d] > SIZE_MAX / bytes)
      return opd__client_error(OPD_EINVAL, "upload: the shape overflows");
    bytes = shape[d] ? bytes * (size_t)shape[d] : 0;
  }
  if (bytes != nbytes)
    return opd__client_error(OPD_EINVAL, "upload: %zu bytes given, the shape and dtype need %zu",
                             nbytes, bytes);
  if (nbytes && !data) return opd__client_error(OPD_EINVAL, "upload: NULL data");
  Opd__V1__Device dev = OPD__V1__DEVICE__INIT;
  dev.type = device ? device->type : OPD_CLIENT_DEVICE_CPU;
  dev.index = device ? device->index : -1;
  Opd__V1__Upload up = OPD__V1__UPLOAD__INIT;
  up.dtype = (Opd__V1__DType)dtype;
  up.n_shape = (size_t)ndim;
  up.shape = (int64_t *)shape;
  up.device = &dev;
  up.nbytes = nbytes;
  Opd__V1__Request req = OPD__V1__REQUEST__INIT;
  req.body_case = OPD__V1__REQUEST__BODY_UPLOAD;
  req.upload = &up;
  return opd__client_submit_request(c, OPD__REQ_UPLOAD, &req, NULL, data, nbytes, cb, user, out);
}

int opd_client_upload(opd_client *c, int dtype, const int64_t *shape, int ndim, const void *data,
                      size_t nbytes, const opd_client_device *device, opd_client_tensor *out) {
  *out = 0;
  opd_future *f;
  int rc = opd__client_may_block(c);
  if (rc) return rc;
  rc = opd_client_upload_async(c, dtype, shape, ndim, data, nbytes, device, NULL, NULL, &f);
  if (rc) return rc;
  rc = opd__future_wait_sync(f);
  if (rc == 0) *out = f->handle;
  opd_future_free(f);
  return rc;
}

static int download_submit(opd_client *c, opd_client_tensor t, void *buf, size_t capacity,
                           bool alloc, opd_future_cb cb, void *user, opd_future **out) {
  if (out) *out = NULL;
  if (t == 0) return opd__client_error(OPD_EINVAL, "download: tensor handle 0");
  if (!alloc && capacity && !buf) return opd__client_error(OPD_EINVAL, "download: NULL buffer");
  Opd__V1__Download d = OPD__V1__DOWNLOAD__INIT;
  d.handle = t;
  Opd__V1__Request req = OPD__V1__REQUEST__INIT;
  req.body_case = OPD__V1__REQUEST__BODY_DOWNLOAD;
  req.download = &d;
  /* the future's destination is set before submission: the reply may come at once */
  opd_future *f = opd__future_new(c, OPD__REQ_DOWNLOAD, cb, user, out != NULL);
  if (!f) return opd__client_error(OPD_ENOMEM, "out of memory");
  f->buf = alloc ? NULL : buf;
  f->capacity = alloc ? 0 : capacity;
  f->alloc = alloc;
  int rc = opd__client_submit(c, f, &req);
  if (rc == 0 && out) *out = f;
  return rc;
}

int opd_client_download_async(opd_client *c, opd_client_tensor t, void *buf, size_t capacity,
                              opd_future_cb cb, void *user, opd_future **out) {
  return download_submit(c, t, buf, capacity, buf == NULL, cb, user, out);
}

static int download_sync(opd_client *c, opd_client_tensor t, void *buf, size_t capacity, bool alloc,
                         opd_client_tensor_info *info, void **data) {
  opd_future *f;
  int rc = opd__client_may_block(c);
  if (rc) return rc;
  rc = download_submit(c, t, buf, capacity, alloc, NULL, NULL, &f);
  if (rc) return rc;
  rc = opd__future_wait_sync(f);
  if (info && f->info) *info = *f->info;
  if (rc == 0 && data) *data = opd_future_take_data(f);
  opd_future_free(f);
  return rc;
}

int opd_client_download(opd_client *c, opd_client_tensor t, void *buf, size_t capacity,
                        opd_client_tensor_info *info) {
  if (info) memset(info, 0, sizeof *info);
  if (!buf && capacity) return opd__client_error(OPD_EINVAL, "download: NULL buffer");
  return download_sync(c, t, buf, capacity, false, info, NULL);
}

int opd_client_download_alloc(opd_client *c, opd_client_tensor t, opd_client_tensor_info *info,
                              void **data) {
  *data = NULL;
  if (info) memset(info, 0, sizeof *info);
  return download_sync(c, t, NULL, 0, true, info, data);
}

int opd_client_release_async(opd_client *c, const opd_client_tensor *handles, size_t n,
                             opd_future_cb cb, void *user, opd_future **out) {
  if (out) *out = NULL;
  if (n && !handles) return opd__client_error(OPD_EINVAL, "release: NULL handles");
  Opd__V1__Release rel = OPD__V1__RELEASE__INIT;
  rel.n_handles = n;
  rel.handles = (uint64_t *)handles;
  Opd__V1__Request req = OPD__V1__REQUEST__INIT;
  req.body_case = OPD__V1__REQUEST__BODY_RELEASE;
  req.release = &rel;
  return opd__client_submit_request(c, OPD__REQ_RELEASE, &req, NULL, NULL, 0, cb, user, out);
}

/* A synchronous form of an asynchronous request without results (submitted only after
 * opd__client_may_block said yes). */
int opd__client_wait_and_free(int rc, opd_future *f) {
  if (rc) return rc;
  rc = opd__future_wait_sync(f);
  opd_future_free(f);
  return rc;
}

int opd_client_release(opd_client *c, const opd_client_tensor *handles, size_t n) {
  opd_future *f = NULL;
  int rc = opd__client_may_block(c);
  if (rc == 0) rc = opd_client_release_async(c, handles, n, NULL, NULL, &f);
  return opd__client_wait_and_free(rc, f);
}

/* ---- the session ---- */

static bool names_ok(const char *const *names, size_t n) {
  if (n && !names) return false;
  for (size_t i = 0; i < n; i++)
    if (!names[i]) return false;
  return true;
}

int opd_client_change_dispatch_state_async(opd_client *c, const opd_client_dispatch_change *d,
                                           opd_future_cb cb, void *user, opd_future **out) {
  if (out) *out = NULL;
  if (!d) return opd__client_error(OPD_EINVAL, "dispatch state: NULL change");
  if (!names_ok(d->include, d->num_include) || !names_ok(d->exclude, d->num_exclude) ||
      !names_ok(d->remove_include, d->num_remove_include) ||
      !names_ok(d->remove_exclude, d->num_remove_exclude))
    return opd__client_error(OPD_EINVAL, "dispatch state: NULL key list or key name");
  Opd__V1__DispatchState st = OPD__V1__DISPATCH_STATE__INIT;
  st.n_include = d->num_include;
  st.include = (char **)d->include;
  st.n_exclude = d->num_exclude;
  st.exclude = (char **)d->exclude;
  st.n_remove_include = d->num_remove_include;
  st.remove_include = (char **)d->remove_include;
  st.n_remove_exclude = d->num_remove_exclude;
  st.remove_exclude = (char **)d->remove_exclude;
  Opd__V1__Request req = OPD__V1__REQUEST__INIT;
  req.body_case = OPD__V1__REQUEST__BODY_SET_DISPATCH_STATE;
  req.set_dispatch_state = &st;
  return opd__client_submit_request(c, OPD__REQ_DISPATCH_STATE, &req, NULL, NULL, 0, cb, user, out);
}

int opd_client_change_dispatch_state(opd_client *c, const opd_client_dispatch_change *d) {
  opd_future *f = NULL;
  int rc = opd__client_may_block(c);
  if (rc == 0) rc = opd_client_change_dispatch_state_async(c, d, NULL, NULL, &f);
  return opd__client_wait_and_free(rc, f);
}

int opd_client_set_dispatch_state_async(opd_client *c, const char *const *include,
                                        size_t num_include, const char *const *exclude,
                                        size_t num_exclude, opd_future_cb cb, void *user,
                                        opd_future **out) {
  opd_client_dispatch_change d = {.include = include,
                                  .num_include = num_include,
                                  .exclude = exclude,
                                  .num_exclude = num_exclude};
  return opd_client_change_dispatch_state_async(c, &d, cb, user, out);
}

int opd_client_set_dispatch_state(opd_client *c, const char *const *include, size_t num_include,
                                  const char *const *exclude, size_t num_exclude) {
  opd_client_dispatch_change d = {.include = include,
                                  .num_include = num_include,
                                  .exclude = exclude,
                                  .num_exclude = num_exclude};
  return opd_client_change_dispatch_state(c, &d);
}

int opd_client_synchronize(opd_client *c) {
  Opd__V1__Synchronize s = OPD__V1__SYNCHRONIZE__INIT;
  Opd__V1__Request req = OPD__V1__REQUEST__INIT;
  req.body_case = OPD__V1__REQUEST__BODY_SYNCHRONIZE;
  req.synchronize = &s;
  opd_future *f = NULL;
  int rc = opd__client_may_block(c);
  if (rc == 0)
    rc = opd__client_submit_request(c, OPD__REQ_SYNCHRONIZE, &req, NULL, NULL, 0, NULL, NULL, &f);
  return opd__client_wait_and_free(rc, f);
}

int opd_client_ping_async(opd_client *c, const void *payload, size_t len, opd_future_cb cb,
                          void *user, opd_future **out) {
  if (out) *out = NULL;
  if (len && !payload) return opd__client_error(OPD_EINVAL, "ping: NULL payload");
  Opd__V1__Ping p = OPD__V1__PING__INIT;
  p.payload.len = len;
  p.payload.data = (uint8_t *)payload;
  Opd__V1__Request req = OPD__V1__REQUEST__INIT;
  req.body_case = OPD__V1__REQUEST__BODY_PING;
  req.ping = &p;
  opd_future *f = opd__future_new(c, OPD__REQ_PING, cb, user, out != NULL);
  if (f) f->pong = len <= sizeof f->pong_inline ? f->pong_inline : malloc(len);
  if (!f || !f->pong) {
    if (f) opd__future_discard(f);
    return opd__client_error(OPD_ENOMEM, "out of memory");
  }
  if (len) memcpy(f->pong, payload, len);
  f->pong_len = len;
  int rc = opd__client_submit(c, f, &req);
  if (rc == 0 && out) *out = f;
  return rc;
}

int opd_client_ping(opd_client *c, const void *payload, size_t len) {
  opd_future *f = NULL;
  int rc = opd__client_may_block(c);
  if (rc == 0) rc = opd_client_ping_async(c, payload, len, NULL, NULL, &f);
  return opd__client_wait_and_free(rc, f);
}
