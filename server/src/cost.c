/* cost.c: a job's estimated cost before it runs (see [Note: The cost of a job] in cost.h). */
#include "cost.h"

#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "opd/checked.h"
#include "opd/dispatcher.h"
#include "opd/graph_exec.h"
#include "opd/schema.h"
#include "session.h"

#define CPU_BYTES_PER_NS      4
#define CPU_FLOPS_PER_NS      32
#define GPU_BYTES_PER_NS      1000
#define GPU_FLOPS_PER_NS      30000
#define FACTORY_ELEMENT_BYTES 4
/* the tensor arguments whose shapes the operator rules read (a product's operands) */
#define SHAPES                3

static uint64_t sat_add(uint64_t a, uint64_t b) {
  uint64_t r;
  return opd_ckd_add(&r, a, b) ? UINT64_MAX : r;
}

static uint64_t sat_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  return opd_ckd_mul(&r, a, b) ? UINT64_MAX : r;
}

/* What a job's work touches and computes, and where ([Note: The cost of a job]). */
typedef struct work {
  uint64_t bytes, flops;
  bool gpu; /* on a CUDA device */
} work;

/* ---- the operators with rules of their own ---- */

typedef enum rule {
  RULE_DEFAULT,
  RULE_MM,     /* mm(a[m,k], b[k,n]) */
  RULE_BMM,    /* bmm(a[B,m,k], b[B,k,n]) */
  RULE_ADDMM,  /* addmm(self, a[m,k], b[k,n]) */
  RULE_MATMUL, /* matmul(a[..., m, k], b[..., k, n]), either side 1-d */
  RULE_LINEAR, /* linear(input[..., k], weight[n, k]) */
  RULE_COPY_IF_STRIDED,
  RULE_INDEX_SELECT, /* index_select(self, dim, index) */
  RULE_EMBEDDING,    /* embedding(weight[V, D], indices) */
  RULE_ARANGE_END,   /* arange(end) */
  RULE_ARANGE_START, /* arange.start(start, end) */
  RULE_ARANGE,       /* arange.start_step(start, end, step=1) */
  RULE_VIEW,         /* every return aliases an argument and none is written */
} rule;

static const struct {
  const char *name;
  rule rule;
} named_rules[] = {
    {"aten::mm", RULE_MM},
    {"aten::bmm", RULE_BMM},
    {"aten::addmm", RULE_ADDMM},
    {"aten::matmul", RULE_MATMUL},
    {"aten::linear", RULE_LINEAR},
    {"aten::contiguous", RULE_COPY_IF_STRIDED},
    {"aten::reshape", RULE_COPY_IF_STRIDED},
    {"aten::index_select", RULE_INDEX_SELECT},
    {"aten::embedding", RULE_EMBEDDING},
    {"aten::arange", RULE_ARANGE_END},
    {"aten::arange.start", RULE_ARANGE_START},
    {"aten::arange.start_step", RULE_ARANGE},
};
#define NUM_RULES (sizeof named_rules / sizeof *named_rules)

/* Operators are never freed: their addresses, looked up once, identify them. */
static const opd_operator *rule_ops[NUM_RULES];
static pthread_once_t rules_once = PTHREAD_ONCE_INIT;

static void find_rule_ops(void) {
  for (size_t i = 0; i < NUM_RULES; i++) rule_ops[i] = opd_find_op(named_rules[i].name);
}

/* Every return aliases an argument and none is written: a view, which touches no data. */
static bool is_view(const opd_schema *s) {
  if (s->num_returns == 0) return false;
  for (uint32_t i = 0; i < s->num_returns; i++)
    if (!s->returns[i].alias.set[0] || s->returns[i].alias.is_write) return false;
  return true;
}

/* The rule of an operator, remembered per thread for the operator and schema asked about
 * last (a pipelining client calls one operator many times; a definition removed and made
 * again has a new schema). At worst a stale answer misjudges one estimate, nothing else. */
static rule rule_of(const opd_operator *op, const opd_schema *schema) {
  static _Thread_local const opd_operator *last_op;
  static _Thread_local const opd_schema *last_schema;
  static _Thread_local rule last_rule;
  if (op == last_op && schema == last_schema) return last_rule;
  pthread_once(&rules_once, find_rule_ops);
  rule r = is_view(schema) ? RULE_VIEW : RULE_DEFAULT;
  for (size_t i = 0; i < NUM_RULES; i++)
    if (rule_ops[i] == op) r = named_rules[i].rule;
  last_op = op;
  last_schema = schema;
  last_rule = r;
  return r;
}

/* ---- what a call's arguments hold ---- */

typedef struct shape {
  const int64_t *sizes;
  int ndim;
  const opd_tensor *tensor; /* NULL for a literal (contiguous) */
} shape;

typedef struct call_sum {
  uint64_t bytes;  /* of the tensor arguments */
  uint64_t numel;  /* of the broadcast of their shapes */
  size_t elem_max; /* the largest element size among them */
  int bdims;
  int ntensors;
  int nscalars;
  bool gpu;                  /* a tensor is on a CUDA device */
  bool to_cpu;               /* a Device argument names the CPU */
  const int64_t *first_ints; /* the first int list (a factory's size) */
  size_t n_first_ints;
  /* from here on not cleared: each entry is written before it is read (the counts above
   * say how many are) */
  shape shapes[SHAPES]; /* the first tensor arguments, in order */
  double scalars[3];    /* the first numbers (arange's start, end, step) */
  /* the broadcast shape, right-aligned: bcast[64 - bdims ..] */
  int64_t bcast[64];
} call_sum;

/* A tensor argument: a handle's tensor (its numel is known) or a literal's shape. */
static inline void add_shape(call_sum *c, const int64_t *sizes, int ndim, size_t esize,
                             const opd_tensor *tensor, bool gpu) {
  uint64_t numel = 1;
  if (tensor)
    numel = (uint64_t)tensor->numel;
  else
    for (int d = 0; d < ndim; d++) numel = sat_mul(numel, sizes[d] > 0 ? (uint64_t)sizes[d] : 0);
  c->bytes = sat_add(c->bytes, sat_mul(numel, esize));
  if (esize > c->elem_max) c->elem_max = esize;
  c->gpu = c->gpu || gpu;
  if (c->ntensors < SHAPES) c->shapes[c->ntensors] = (shape){sizes, ndim, tensor};
  c->ntensors++;
  for (int d = 0; d < ndim && d < 64; d++) { /* right-aligned, as broadcasting aligns */
    int64_t *b = &c->bcast[63 - d];
    int64_t s = sizes[ndim - 1 - d];
    if (d >= c->bdims)
      *b = s;
    else if (s > *b)
      *b = s;
  }
  if (ndim > c->bdims) c->bdims = ndim > 64 ? 64 : ndim;
}

static inline void add_tensor(call_sum *c, const opd_tensor *t) {
  add_shape(c, opd_tensor_sizes(t), t->ndim, opd_dtype_size(opd_tensor_dtype(t)), t,
            opd_tensor_device(t).type == OPD_DEVICE_CUDA);
}

static inline void add_handle(call_sum *c, opd__session *s, uint64_t handle) {
  opd_tensor *t = handle ? opd__session_lookup(s, handle) : NULL;
  if (t) add_tensor(c, t);
}

static void add_scalar(call_sum *c, double v) {
  if (c->nscalars < 3) c->scalars[c->nscalars++] = v;
}

/* The element count of the broadcast shape. */
static void sum_broadcast(call_sum *c) {
  uint64_t numel = c->bdims ? 1 : 0;
  for (int d = 64 - c->bdims; d < 64; d++)
    numel = sat_mul(numel, c->bcast[d] > 0 ? (uint64_t)c->bcast[d] : 0);
  c->numel = numel;
}

static void sum_args(call_sum *c, opd__session *s, const Opd__V1__Call *call) {
  for (size_t i = 0; i < call->n_args; i++) {
    const Opd__V1__IValue *w = call->args[i];
    switch (w->value_case) {
    case OPD__V1__IVALUE__VALUE_TENSOR: add_handle(c, s, w->tensor); break;
    case OPD__V1__IVALUE__VALUE_TENSORS:
      for (size_t k = 0; w->tensors && k < w->tensors->n_handles; k++)
        add_handle(c, s, w->tensors->handles[k]);
      break;
    case OPD__V1__IVALUE__VALUE_OPTIONAL_TENSORS:
      for (size_t k = 0; w->optional_tensors && k < w->optional_tensors->n_handles; k++)
        add_handle(c, s, w->optional_tensors->handles[k]);
      break;
    case OPD__V1__IVALUE__VALUE_LITERAL:
      if (w->literal && opd_dtype_valid((opd_dtype)w->literal->dtype))
        add_shape(c, w->literal->shape, (int)w->literal->n_shape,
                  opd_dtype_size((opd_dtype)w->literal->dtype), NULL, false);
      break;
    case OPD__V1__IVALUE__VALUE_INTS:
      if (!c->first_ints && w->ints) {
        c->first_ints = w->ints->values;
        c->n_first_ints = w->ints->n_values;
      }
      break;
    case OPD__V1__IVALUE__VALUE_DEVICE:
      c->to_cpu = c->to_cpu || (w->device && w->device->type == OPD_DEVICE_CPU);
      break;
    case OPD__V1__IVALUE__VALUE_I: add_scalar(c, (double)w->i); break;
    case OPD__V1__IVALUE__VALUE_D: add_scalar(c, w->d); break;
    default: break;
    }
  }
  sum_broadcast(c);
}

/* The same from a prepared call's stack (schema order, defaults filled in: the leading
 * numbers are the same ones, a literal is a tensor). */
static void sum_stack(call_sum *c, const opd_stack *st) {
  for (uint32_t i = 0; i < st->size; i++) {
    const opd_ivalue *v = &st->items[i];
    switch ((opd_iv_tag)v->tag) {
    case OPD_IV_TENSOR: add_tensor(c, v->u.t); break;
    case OPD_IV_TENSOR_LIST:
    case OPD_IV_OPT_TENSOR_LIST:
      for (uint32_t k = 0; k < v->len; k++)
        if (v->u.tensors[k]) add_tensor(c, v->u.tensors[k]);
      break;
    case OPD_IV_INT_LIST:
      if (!c->first_ints) {
        c->first_ints = v->u.ints;
        c->n_first_ints = v->len;
      }
      break;
    case OPD_IV_DEVICE: c->to_cpu = c->to_cpu || v->u.device.type == OPD_DEVICE_CPU; break;
    case OPD_IV_INT: add_scalar(c, (double)v->u.i); break;
    case OPD_IV_DOUBLE: add_scalar(c, v->u.d); break;
    default: break;
    }
  }
  sum_broadcast(c);
}

/* Size ndim - d of a shape (d = 1: the last), 1 past its rank (a 1-d operand of a
 * product); a negative size (a literal's, not checked yet) counts as 0. */
static uint64_t dim_from_end(const shape *s, int d) {
  if (d > s->ndim) return 1;
  int64_t v = s->sizes[s->ndim - d];
  return v > 0 ? (uint64_t)v : 0;
}

static uint64_t numel_of(const shape *s) {
  uint64_t n = 1;
  for (int d = 0; d < s->ndim; d++) n = sat_mul(n, s->sizes[d] > 0 ? (uint64_t)s->sizes[d] : 0);
  return n;
}

/* 2 x batch x m x k x n for operands a [..., m, k] and b [..., k, n] (batch: the larger
 * operand's leading elements); their bytes are counted already, the output's are added. */
static void product(const shape *a, const shape *b, size_t esize, uint64_t *bytes,
                    uint64_t *flops) {
  uint64_t k = dim_from_end(a, 1), m = a->ndim >= 2 ? dim_from_end(a, 2) : 1;
  uint64_t n = b->ndim >= 2 ? dim_from_end(b, 1) : 1;
  uint64_t mk = sat_mul(m, k), kn = sat_mul(dim_from_end(b, 1), dim_from_end(b, 2));
  uint64_t ba = mk ? numel_of(a) / mk : 0, bb = b->ndim > 2 && kn ? numel_of(b) / kn : 1;
  uint64_t batch = ba > bb ? ba : bb;
  uint64_t out = sat_mul(sat_mul(batch, m), n);
  *bytes = sat_add(*bytes, sat_mul(out, esize));
  *flops = sat_mul(2, sat_mul(out, k));
}

/* Bytes and operations of a call of rule r whose arguments sum to c ([Note: The cost of a
 * job]); a call that copies CUDA tensors to the CPU waits for their stream. */
static void call_cost(opd__job *job, rule r, const call_sum *c, uint64_t *bytes, uint64_t *flops,
                      bool *gpu) {
  *gpu = c->gpu;
  job->waits = c->gpu && c->to_cpu;
  const shape *sh = c->shapes;
  switch (r) {
  case RULE_MM:
  case RULE_BMM:
  case RULE_MATMUL:
    *bytes = c->bytes;
    if (c->ntensors >= 2) product(&sh[0], &sh[1], c->elem_max, bytes, flops);
    return;
  case RULE_ADDMM:
    *bytes = c->bytes;
    if (c->ntensors >= 3) product(&sh[1], &sh[2], c->elem_max, bytes, flops);
    return;
  case RULE_LINEAR:
    *bytes = c->bytes;
    if (c->ntensors >= 2 && sh[1].ndim == 2) {
      shape w_t = {(const int64_t[]){sh[1].sizes[1], sh[1].sizes[0]}, 2, NULL};
      product(&sh[0], &w_t, c->elem_max, bytes, flops);
    }
    return;
  case RULE_COPY_IF_STRIDED:
    if (c->ntensors >= 1 && sh[0].tensor && !opd_tensor_is_contiguous(sh[0].tensor)) {
      *bytes = sat_mul(c->bytes, 2);
      *flops = c->numel;
    }
    return;
  case RULE_INDEX_SELECT:
  case RULE_EMBEDDING: {
    /* index_select(self, dim, index): index's count of self's slices along dim;
     * embedding(weight, indices): indices' count of weight's rows. The rows are read and
     * written once each. */
    if (c->ntensors < 2) return;
    const shape *src = &sh[0];
    int d = 0;
    if (r == RULE_INDEX_SELECT && c->nscalars >= 1 && src->ndim > 0) {
      double dim = c->scalars[0] < 0 ? c->scalars[0] + src->ndim : c->scalars[0];
      d = dim >= 0 && dim < src->ndim ? (int)dim : 0;
    }
    uint64_t along = src->ndim ? dim_from_end(src, src->ndim - d) : 1;
    uint64_t out = sat_mul(numel_of(&sh[1]), along ? numel_of(src) / along : 0);
    *bytes = sat_mul(out, 2 * c->elem_max);
    *flops = out;
    return;
  }
  case RULE_ARANGE_END:
  case RULE_ARANGE_START:
  case RULE_ARANGE: {
    /* the leading Scalar arguments, those left out being the defaults (start 0, step 1);
     * numbers after them (a layout) are not theirs */
    double start = 0, end = 0, step = 1;
    if (r == RULE_ARANGE_END) {
      if (c->nscalars >= 1) end = c->scalars[0];
    } else if (c->nscalars >= 2) {
      start = c->scalars[0];
      end = c->scalars[1];
      if (r == RULE_ARANGE && c->nscalars >= 3) step = c->scalars[2];
    }
    double n = step != 0 ? (end - start) / step : 0;
    uint64_t elems = !(n > 0) ? 0 : n >= 0x1p62 ? UINT64_C(1) << 62 : (uint64_t)ceil(n);
    *bytes = sat_mul(elems, FACTORY_ELEMENT_BYTES);
    *flops = elems;
    return;
  }
  case RULE_VIEW: return;
  case RULE_DEFAULT: break;
  }
  if (c->ntensors == 0) { /* a factory: its size list */
    uint64_t elems = c->first_ints ? 1 : 0;
    for (size_t i = 0; i < c->n_first_ints; i++)
      elems = sat_mul(elems, c->first_ints[i] > 0 ? (uint64_t)c->first_ints[i] : 0);
    *bytes = sat_mul(elems, FACTORY_ELEMENT_BYTES);
    *flops = elems;
    return;
  }
  *bytes = sat_add(c->bytes, sat_mul(c->numel, c->elem_max));
  *flops = c->numel;
}

/* A graph run: each element its kernels write (opd_compiled_graph_cost) as one of a default
 * operator's outputs, written and read once at 4 bytes, one operation; on a GPU when it
 * computes on one (opd_compiled_graph_cuda_devices, as it is routed). A graph that is not
 * defined costs nothing (the run fails). */
static void estimate_graph_run(opd__job *job, work *w) {
  /* found when it was routed, or looked up (a run queued behind others) */
  opd_compiled_graph *cg =
      job->graph ? job->graph : opd__session_graph(job->session, job->req->run_graph->graph);
  if (!cg) return;
  uint64_t elems = opd_compiled_graph_cost(cg);
  w->bytes = sat_mul(elems, 2 * FACTORY_ELEMENT_BYTES);
  w->flops = elems;
  w->gpu = opd_compiled_graph_cuda_devices(cg) != 0;
}

/* Nanoseconds of one thread of the device for these bytes and operations. */
static uint64_t estimate_ns(uint64_t bytes, uint64_t flops, bool gpu) {
  if (gpu) return sat_add(bytes / GPU_BYTES_PER_NS, flops / GPU_FLOPS_PER_NS);
  return sat_add(bytes / CPU_BYTES_PER_NS, flops / CPU_FLOPS_PER_NS);
}

/* A call: from its prepared stack when it is prepared (on the loop, or routed on this
 * worker: no handle is looked up again), else from its request, whose handles it looks up
 * (a job queued behind others cannot be prepared yet: its handles may be made or released
 * by the jobs before it); a call that failed to prepare is answered and costs nothing. The
 * operator, once found, stays with the call for its prepare. */
static void estimate_call(opd__job *job, work *w) {
  opd__prepared_call *call = &job->call;
  if (call->state == OPD__CALL_FAILED) return;
  if (!call->op) call->op = opd_find_op(job->req->call->op);
  const opd_schema *schema = call->op ? opd_op_schema(call->op) : NULL;
  if (!schema) return; /* an unknown operator: the call fails at once */
  call_sum c;
  memset(&c, 0, offsetof(call_sum, shapes));
  if (call->state == OPD__CALL_READY)
    sum_stack(&c, &call->stack);
  else
    sum_args(&c, job->session, job->req->call);
  call_cost(job, rule_of(call->op, schema), &c, &w->bytes, &w->flops, &w->gpu);
}

/* Copied to the device by its worker. */
static void estimate_upload(opd__job *job, work *w) {
  if (job->device.type != OPD_DEVICE_CUDA) return;
  w->gpu = true;
  if (job->tensor) {
    w->bytes = sat_mul((uint64_t)job->tensor->numel, opd_dtype_size(opd_tensor_dtype(job->tensor)));
    job->waits = true;
  }
}

/* Copied from the device after the stream's work. */
static void estimate_download(opd__job *job, work *w) {
  opd_tensor *t = opd__session_lookup(job->session, job->req->download->handle);
  if (t && opd_tensor_device(t).type == OPD_DEVICE_CUDA) {
    w->gpu = job->waits = true;
    w->bytes = sat_mul((uint64_t)t->numel, opd_dtype_size(opd_tensor_dtype(t)));
  }
}

/* It waits for the session's streams. */
static void estimate_synchronize(opd__job *job, work *w) {
  (void)w;
  job->waits = job->session->gpu != NULL;
}

/* The ESTIMATE column of requests.def ([Note: The request table]). */
static void (*const estimators[OPD__NUM_JOB_KINDS])(opd__job *job, work *w) = {
#define NONE NULL
#define OPD__REQUEST(kind, body, session, accept, on_loop, estimate, ...) \
  [OPD__JOB_##kind] = estimate,
#include "requests.def"
#undef OPD__REQUEST
#undef NONE
};

uint64_t opd__job_estimate(opd__job *job) {
  work w = {0, 0, false};
  job->waits = false;
  if (estimators[job->kind]) estimators[job->kind](job, &w);
  return estimate_ns(w.bytes, w.flops, w.gpu);
}
