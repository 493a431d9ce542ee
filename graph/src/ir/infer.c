/* infer.c: shape and dtype inference for graph nodes.
 *
 * [Note: Inference through the Meta kernels]
 * A node's outputs are found by calling its operator through the dispatcher on Meta
 * tensors, as torch.compile runs FakeTensors: every reference becomes the Meta tensor of
 * the value it names, constant tensors and wrapped numbers their Meta twins, a Device
 * argument the Meta device, and the call runs with the default dispatch state (a session's
 * thread-local keys must not change what a graph means). The results' dtypes, sizes and
 * strides are the node's outputs; the Meta kernels raise PyTorch's errors (shapes that do
 * not broadcast, dims out of range, element counts that overflow), which come back prefixed
 * with the node. A result that shares an argument's Meta storage is a view of it. No data
 * is touched or allocated, so inference is cheap enough to run again in the verifier.
 */
#include <stdio.h>
#include <string.h>

#include "ir/graph_internal.h"
#include "opd/error.h"
#include "opd/memory.h"

/* Pushes argument a of a node as its Meta twin. */
static int push_meta_arg(const opd_graph *g, const opd__garg *a, opd_stack *st) {
  opd_ivalue v;
  int rc = 0;
  switch ((opd__garg_kind)a->kind) {
  case OPD__GA_CONST:
    if (a->value.tag == OPD_IV_TENSOR)
      v = opd_iv_tensor_borrow(a->meta);
    else if (a->value.tag == OPD_IV_DEVICE)
      v = opd_iv_device((opd_device){OPD_DEVICE_META, -1});
    else
      rc = opd_iv_copy(&v, &a->value);
    break;
  case OPD__GA_REF: v = opd_iv_tensor_borrow(g->values[a->ref].meta); break;
  case OPD__GA_WRAPPED: v = opd_iv_tensor_borrow(a->meta); break;
  case OPD__GA_REFS: {
    opd_tensor **ts = opd__malloc((a->nrefs ? a->nrefs : 1) * sizeof *ts);
    if (!ts) return opd_error(OPD_ENOMEM, "out of memory inferring a Tensor[] argument");
    for (uint32_t j = 0; j < a->nrefs; j++) ts[j] = g->values[a->refs[j]].meta;
    rc = opd_iv_make_tensor_list(&v, ts, a->nrefs, false);
    opd__free(ts);
    break;
  }
  }
  if (rc) return rc;
  return opd_stack_push(st, v);
}

/* Takes the tensors of one result value into out. */
static int take_result(const char *label, const opd_ivalue *r, opd_tensor **out, uint32_t cap,
                       uint32_t *k) {
  opd_tensor *const *ts = r->tag == OPD_IV_TENSOR ? &r->u.t : NULL;
  uint32_t n = 1;
  if (r->tag == OPD_IV_TENSOR_LIST) {
    ts = r->u.tensors;
    n = r->len;
  }
  if (!ts)
    return opd_error(OPD_EINVAL, "%s returns a value of type '%s'; graph nodes must return tensors",
                     label, opd_iv_tag_name((opd_iv_tag)r->tag));
  if (n > cap - *k) return opd_error(OPD_EINVAL, "%s returns more than %u tensors", label, cap);
  for (uint32_t i = 0; i < n; i++) {
    opd_tensor_retain(ts[i]);
    out[(*k)++] = ts[i];
  }
  return 0;
}

int opd__graph_infer(const opd_graph *g, uint32_t n, opd_tensor **out, uint32_t cap,
                     uint32_t *nout) {
  const opd__gnode *node = &g->nodes[n];
  char label[160];
  opd__gnode_label(g, n, label, sizeof label);
  opd_stack st;
  opd_stack_init(&st);
  int rc = 0;
  for (uint32_t i = 0; i < node->nargs && rc == 0; i++) rc = push_meta_arg(g, &node->args[i], &st);
  if (rc == 0) {
    opd_local_dispatch_state saved = opd_tls_get();
    opd_tls_set(opd_default_dispatch_state);
    rc = opd_call_boxed(g->ops[node->opi].op, &st);
    opd_tls_set(saved);
  }
  if (rc) {
    char msg[400];
    snprintf(msg, sizeof msg, "%s", opd_last_error());
    opd_stack_destroy(&st);
    return opd_error(rc, "%s: %s", label, msg);
  }
  uint32_t k = 0;
  for (uint32_t i = 0; i < st.size && rc == 0; i++)
    rc = take_result(label, &st.items[i], out, cap, &k);
  for (uint32_t i = 0; i < k && rc == 0; i++)
    if (!opd_tensor_is_meta(out[i]))
      rc =
          opd_error(OPD_EINVAL, "%s: its Meta kernel returned a tensor that is not on Meta", label);
  opd_stack_destroy(&st);
  if (rc) {
    for (uint32_t i = 0; i < k; i++) opd_tensor_release(out[i]);
    k = 0;
  }
  *nout = k;
  return rc;
}
