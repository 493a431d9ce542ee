/* printer.c: a graph as text (opd_graph_print), in the spirit of torch.fx's code:
 *
 *   graph(%0: float32[5, 8], %1: float32[8] parameter):
 *     %2: float32[5, 8] = aten::exp(%0)
 *     %3: float32[5, 1] = aten::sum.dim_IntList(%2, [-1], True, dtype=None)
 *     %4: float32[5, 8] = aten::div.Tensor(%2, %3)
 *     return (%4)
 *
 * [Note: Canonical graph text]
 * Live values are numbered in order (inputs, then each live node's outputs), so the text
 * names nothing the caller chose and no pointer: two graphs that compute the same thing in
 * the same order print the same. Every value shows its dtype and sizes, strides and storage
 * offset when it is not contiguous from 0, and its device when not the CPU; arguments are
 * all printed (defaults too), keyword-only ones as name=value. Floats print with 17
 * significant digits (so exactly), strings quoted with escapes. The cache key
 * (cache_key.c) is this text printed with the data of constant tensors in hex as well.
 * Annotations that passes add (a node from the softmax pattern, its pointwise group, a
 * view) are comments at the end of the line.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ir/graph_print.h"
#include "opd/error.h"
#include "opd/memory.h"

static void print_device(opd__sbuf *sb, opd_device d) {
  const char *name = d.type == OPD_DEVICE_CPU    ? "cpu"
                     : d.type == OPD_DEVICE_CUDA ? "cuda"
                     : d.type == OPD_DEVICE_META ? "meta"
                                                 : opd_backend_name((opd_backend)d.type);
  opd__sbuf_printf(sb, "%s", name ? name : "?");
  if (d.index >= 0) opd__sbuf_printf(sb, ":%d", (int)d.index);
}

static void print_ints(opd__sbuf *sb, const int64_t *v, uint32_t n) {
  opd__sbuf_append(sb, "[", 1);
  for (uint32_t i = 0; i < n; i++) opd__sbuf_printf(sb, "%s%" PRId64, i ? ", " : "", v[i]);
  opd__sbuf_append(sb, "]", 1);
}

static void print_double(opd__sbuf *sb, double d) {
  if (isnan(d)) {
    opd__sbuf_printf(sb, "nan");
  } else if (isinf(d)) {
    opd__sbuf_printf(sb, d > 0 ? "inf" : "-inf");
  } else {
    char buf[40];
    snprintf(buf, sizeof buf, "%.17g", d);
    bool plain = !strpbrk(buf, ".en");
    opd__sbuf_printf(sb, "%s%s", buf, plain ? "." : "");
  }
}

static void print_string(opd__sbuf *sb, const char *s, size_t len) {
  opd__sbuf_append(sb, "\"", 1);
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\')
      opd__sbuf_printf(sb, "\\%c", c);
    else if (c < 0x20 || c == 0x7f)
      opd__sbuf_printf(sb, "\\x%02x", c);
    else
      opd__sbuf_append(sb, (const char *)&c, 1);
  }
  opd__sbuf_append(sb, "\"", 1);
}

/* dtype[sizes]{strides}+offset@device for a tensor's geometry. */
static void print_geometry(opd__sbuf *sb, const opd_tensor *t, opd_device device) {
  opd__sbuf_printf(sb, "%s", opd_dtype_name(opd_tensor_dtype(t)));
  print_ints(sb, opd_tensor_sizes(t), t->ndim);
  int64_t contiguous[OPD_MAX_DIMS];
  opd_contiguous_strides(opd_tensor_sizes(t), t->ndim, contiguous);
  if (memcmp(contiguous, opd_tensor_strides(t), t->ndim * sizeof *contiguous) != 0) {
    opd__sbuf_append(sb, "{", 1);
    for (int i = 0; i < t->ndim; i++)
      opd__sbuf_printf(sb, "%s%" PRId64, i ? ", " : "", opd_tensor_strides(t)[i]);
    opd__sbuf_append(sb, "}", 1);
  }
  if (t->storage_offset) opd__sbuf_printf(sb, "+%" PRId64, t->storage_offset);
  if (device.type != OPD_DEVICE_CPU) {
    opd__sbuf_append(sb, "@", 1);
    print_device(sb, device);
  }
}

/* The elements of a constant tensor in row-major order, in hex ([Note: Canonical graph
 * text]: the key tells constants apart by their data). */
static void print_data(opd__sbuf *sb, const opd_tensor *t) {
  const unsigned char *base = opd_tensor_data(t);
  size_t esize = opd_dtype_size(opd_tensor_dtype(t));
  if (!base || t->numel == 0) {
    opd__sbuf_printf(sb, "<>");
    return;
  }
  opd__sbuf_append(sb, "<", 1);
  int64_t index[OPD_MAX_DIMS] = {0};
  for (int64_t i = 0; i < t->numel; i++) {
    int64_t off = 0;
    for (int d = 0; d < t->ndim; d++) off += index[d] * opd_tensor_strides(t)[d];
    for (size_t b = 0; b < esize; b++) opd__sbuf_printf(sb, "%02x", base[(size_t)off * esize + b]);
    for (int d = t->ndim - 1; d >= 0 && ++index[d] == opd_tensor_sizes(t)[d]; d--) index[d] = 0;
  }
  opd__sbuf_append(sb, ">", 1);
}

void opd__print_ivalue(opd__sbuf *sb, const opd_ivalue *v, bool with_data) {
  switch ((opd_iv_tag)v->tag) {
  case OPD_IV_NONE: opd__sbuf_printf(sb, "None"); break;
  case OPD_IV_BOOL: opd__sbuf_printf(sb, v->u.b ? "True" : "False"); break;
  case OPD_IV_INT: opd__sbuf_printf(sb, "%" PRId64, v->u.i); break;
  case OPD_IV_DOUBLE: print_double(sb, v->u.d); break;
  case OPD_IV_STRING: print_string(sb, v->u.s, v->len); break;
  case OPD_IV_INT_LIST: print_ints(sb, v->u.ints, v->len); break;
  case OPD_IV_DOUBLE_LIST:
    opd__sbuf_append(sb, "[", 1);
    for (uint32_t i = 0; i < v->len; i++) {
      if (i) opd__sbuf_append(sb, ", ", 2);
      print_double(sb, v->u.doubles[i]);
    }
    opd__sbuf_append(sb, "]", 1);
    break;
  case OPD_IV_BOOL_LIST:
    opd__sbuf_append(sb, "[", 1);
    for (uint32_t i = 0; i < v->len; i++)
      opd__sbuf_printf(sb, "%s%s", i ? ", " : "", v->u.bools[i] ? "True" : "False");
    opd__sbuf_append(sb, "]", 1);
    break;
  case OPD_IV_TENSOR:
    opd__sbuf_printf(sb, "tensor(");
    print_geometry(sb, v->u.t, opd_tensor_device(v->u.t));
    if (with_data) print_data(sb, v->u.t);
    opd__sbuf_printf(sb, ")");
    break;
  case OPD_IV_DTYPE: opd__sbuf_printf(sb, "%s", opd_dtype_name((opd_dtype)v->u.dtype)); break;
  case OPD_IV_DEVICE: print_device(sb, v->u.device); break;
  default: opd__sbuf_printf(sb, "<%s>", opd_iv_tag_name((opd_iv_tag)v->tag)); break;
  }
}

/* Print numbers of the live values; UINT32_MAX for dead ones. */
static uint32_t *number_values(const opd_graph *g) {
  uint32_t *num = opd__malloc((g->nvalues ? g->nvalues : 1) * sizeof *num);
  if (!num) return NULL;
  uint32_t next = 0;
  for (uint32_t v = 0; v < g->nvalues; v++) {
    const opd__gnode *n = opd__gvalue_node(g, v);
    num[v] = n && n->dead ? UINT32_MAX : next++;
  }
  return num;
}

static void print_value_decl(opd__sbuf *sb, const opd_graph *g, const uint32_t *num, uint32_t v) {
  opd__sbuf_printf(sb, "%%%u: ", num[v]);
  print_geometry(sb, g->values[v].meta, g->values[v].device);
}

static void print_arg(opd__sbuf *sb, const uint32_t *num, const opd__garg *a, bool with_data) {
  switch ((opd__garg_kind)a->kind) {
  case OPD__GA_REF: opd__sbuf_printf(sb, "%%%u", num[a->ref]); break;
  case OPD__GA_REFS:
    opd__sbuf_append(sb, "[", 1);
    for (uint32_t j = 0; j < a->nrefs; j++)
      opd__sbuf_printf(sb, "%s%%%u", j ? ", " : "", num[a->refs[j]]);
    opd__sbuf_append(sb, "]", 1);
    break;
  case OPD__GA_CONST:
  case OPD__GA_WRAPPED: opd__print_ivalue(sb, &a->value, with_data); break;
  }
}

int opd__graph_print_to(const opd_graph *g, bool annotate, bool with_data, opd__sbuf *sb) {
  uint32_t *num = number_values(g);
  if (!num) return opd_error(OPD_ENOMEM, "out of memory printing a graph");
  opd__sbuf_printf(sb, "graph(");
  for (uint32_t i = 0; i < g->ninputs; i++) {
    if (i) opd__sbuf_append(sb, ", ", 2);
    print_value_decl(sb, g, num, i);
    if (g->inputs[i].kind == OPD_GRAPH_PARAMETER) opd__sbuf_printf(sb, " parameter");
  }
  opd__sbuf_printf(sb, "):\n");
  for (uint32_t n = 0; n < g->nnodes; n++) {
    const opd__gnode *node = &g->nodes[n];
    if (node->dead) continue;
    const opd__gop *op = opd__gnode_op(g, node);
    opd__sbuf_printf(sb, "  ");
    for (uint32_t o = 0; o < node->nouts; o++) {
      if (o) opd__sbuf_append(sb, ", ", 2);
      print_value_decl(sb, g, num, node->first_out + o);
    }
    if (!node->nouts) opd__sbuf_printf(sb, "()");
    opd__sbuf_printf(sb, " = %s(", op->name);
    for (uint32_t i = 0; i < node->nargs; i++) {
      if (i) opd__sbuf_append(sb, ", ", 2);
      if (op->schema->args[i].kwarg_only) opd__sbuf_printf(sb, "%s=", op->schema->args[i].name);
      print_arg(sb, num, &node->args[i], with_data);
    }
    opd__sbuf_printf(sb, ")");
    const char *sep = "  # ";
    if (node->origin == OPD__ORIGIN_SOFTMAX) {
      opd__sbuf_printf(sb, "%ssoftmax pattern", sep);
      sep = ", ";
    }
    if (annotate && node->is_view) {
      opd__sbuf_printf(sb, "%sview", sep);
      sep = ", ";
    }
    if (annotate && node->group >= 0) opd__sbuf_printf(sb, "%sgroup %d", sep, (int)node->group);
    opd__sbuf_append(sb, "\n", 1);
  }
  opd__sbuf_printf(sb, "  return (");
  for (uint32_t i = 0; i < g->noutputs; i++)
    opd__sbuf_printf(sb, "%s%%%u", i ? ", " : "", num[g->outputs[i]]);
  opd__sbuf_printf(sb, ")\n");
  opd__free(num);
  return 0;
}

int opd_graph_print(const opd_graph *g, char **text) {
  opd__sbuf sb = {0};
  int rc = opd__graph_print_to(g, true, false, &sb);
  if (rc) {
    opd__sbuf_free(&sb);
    return rc;
  }
  return opd__sbuf_take(&sb, text);
}
