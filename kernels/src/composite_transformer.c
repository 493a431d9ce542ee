/* composite_transformer.c: the fused transformer operators PyTorch 1.13 calls in eval mode
 * (nn.MultiheadAttention and nn.TransformerEncoderLayer with batch_first), written in terms
 * of other operators called through the dispatcher.
 *
 * [Note: Fused transformer operators]
 * PyTorch 1.13 has CPU kernels for _native_multi_head_attention and
 * _transformer_encoder_layer_fwd (and NestedTensor ones, which opd does not have). opd
 * registers them at CompositeExplicitAutograd: the same computation through linear, matmul,
 * _softmax and layer_norm, so that they run on every backend, have Meta shapes and can be
 * graph nodes.
 *   _native_multi_head_attention(query, key, value, D, H, qkv_weight, qkv_bias, proj_weight,
 *       proj_bias, mask, need_weights, average_attn_weights, mask_type):
 *     q, k, v = linear(query/key/value, the thirds of qkv_weight and qkv_bias)
 *     q scaled by 1 / sqrt(D / H); each of shape (B, H, T, D / H)
 *     attn = softmax(q k^T) over the last dim, where a true mask entry (or a nonzero one)
 *            hides a key: a 2-d mask is a (B, T) padding mask, another has attn's shape
 *            (mask_type 1 or 2; a row with every key hidden is NaN, as in PyTorch)
 *     out = linear(attn v back to (B, T, D), proj_weight, proj_bias)
 *     weights: attn averaged over the heads (average_attn_weights), attn, or None when
 *            need_weights is false
 *   _transformer_encoder_layer_fwd: with x = src,
 *     norm_first: x = src + mha(ln1(x)); x = x + ffn(ln2(x))
 *     otherwise:  x = ln1(src + mha(x));  x = ln2(x + ffn(x))
 *     with ffn(x) = linear(act(linear(x, w1, b1)), w2, b2), act gelu or relu; an empty src
 *     gives its clone.
 * PyTorch takes a faster path through _scaled_dot_product_attention when query, key and
 * value are one tensor, D / H is a multiple of 8 and no weights are asked for: the same
 * formula, its float32 rounding in another order.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "src/kernel_util.h"

/* Calls `name` with the arguments pushed on s (rc: the first push error) and takes its
 * first result (the others, an attention's weights, dropped). Destroys s. */
static int call_first(int rc, const opd_operator **cache, const char *name, opd_stack *s,
                      opd_tensor **out) {
  if (!rc) rc = opd__call(cache, name, s);
  if (!rc && (s->size < 1 || s->items[0].tag != OPD_IV_TENSOR))
    rc = opd_error(OPD_EINTERNAL, "%s did not return a tensor", name);
  if (!rc) {
    opd_stack_drop(s, s->size - 1);
    rc = opd__pop_tensor_return(s, out);
  }
  opd_stack_destroy(s);
  return rc;
}

static int push2(opd_stack *s, opd_ivalue a, opd_ivalue b) {
  int rc = opd_stack_push(s, a);
  return rc ? rc : opd_stack_push(s, b);
}

static opd_ivalue opt_tensor(opd_tensor *t) {
  return t ? opd_iv_tensor_borrow(t) : opd_iv_none();
}

static int linear(opd_tensor *x, opd_tensor *w, opd_tensor *b, opd_tensor **out) {
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = push2(&s, opd_iv_tensor_borrow(x), opd_iv_tensor_borrow(w));
  if (!rc) rc = opd_stack_push(&s, opt_tensor(b));
  return call_first(rc, &op, "aten::linear", &s, out);
}

static int narrow(opd_tensor *t, int64_t start, int64_t length, opd_tensor **out) {
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = push2(&s, opd_iv_tensor_borrow(t), opd_iv_int(0));
  if (!rc) rc = push2(&s, opd_iv_int(start), opd_iv_int(length));
  return call_first(rc, &op, "aten::narrow", &s, out);
}

static int reshape(opd_tensor *t, const int64_t *sizes, int n, opd_tensor **out) {
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = opd_stack_push(&s, opd_iv_tensor_borrow(t));
  if (!rc) rc = opd__push_int_list(&s, (opd_int_list){sizes, n});
  return call_first(rc, &op, "aten::reshape", &s, out);
}

static int transpose(opd_tensor *t, int64_t d0, int64_t d1, opd_tensor **out) {
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = push2(&s, opd_iv_tensor_borrow(t), opd_iv_int(d0));
  if (!rc) rc = opd_stack_push(&s, opd_iv_int(d1));
  return call_first(rc, &op, "aten::transpose.int", &s, out);
}

static int binary(const opd_operator **op, const char *name, opd_tensor *a, opd_ivalue b,
                  opd_tensor **out) {
  opd_stack s;
  opd_stack_init(&s);
  int rc = push2(&s, opd_iv_tensor_borrow(a), b);
  return call_first(rc, op, name, &s, out);
}

static int add(opd_tensor *a, opd_tensor *b, opd_tensor **out) {
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = push2(&s, opd_iv_tensor_borrow(a), opd_iv_tensor_borrow(b));
  if (!rc) rc = opd_stack_push(&s, opd_iv_int(1));
  return call_first(rc, &op, "aten::add.Tensor", &s, out);
}

static int softmax_last(opd_tensor *t, opd_tensor **out) {
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = push2(&s, opd_iv_tensor_borrow(t), opd_iv_int(-1));
  if (!rc) rc = opd_stack_push(&s, opd_iv_bool(false));
  return call_first(rc, &op, "aten::_softmax", &s, out);
}

static int layer_norm(opd_tensor *x, int64_t d, opd_tensor *w, opd_tensor *b, double eps,
                      opd_tensor **out) {
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = opd_stack_push(&s, opd_iv_tensor_borrow(x));
  if (!rc) rc = opd__push_int_list(&s, (opd_int_list){&d, 1});
  if (!rc) rc = push2(&s, opt_tensor(w), opt_tensor(b));
  if (!rc) rc = push2(&s, opd_iv_double(eps), opd_iv_bool(true));
  return call_first(rc, &op, "aten::layer_norm", &s, out);
}

static void release_all(opd_tensor **t, int n) {
  for (int i = 0; i < n; i++)
    if (t[i]) {
      opd_tensor_release(t[i]);
      t[i] = NULL;
    }
}

/* ---- _native_multi_head_attention ---- */

typedef struct mha_args {
  opd_tensor *query, *key, *value;
  int64_t embed_dim, num_head;
  opd_tensor *qkv_weight, *qkv_bias, *proj_weight, *proj_bias, *mask;
  bool need_weights, average_attn_weights;
  bool has_mask_type;
  int64_t mask_type;
} mha_args;

static bool same_sizes(const opd_tensor *a, const opd_tensor *b) {
  return a->ndim == b->ndim &&
         !memcmp(opd_tensor_sizes(a), opd_tensor_sizes(b), (size_t)a->ndim * sizeof(int64_t));
}

/* PyTorch 1.13's checks, in its order. */
static int mha_check(const mha_args *a) {
  int64_t d = a->embed_dim;
  if (a->query->ndim != 3)
    return opd_error(OPD_EINVAL, "expected 3-D `query`, got %d-D tensor", a->query->ndim);
  if (opd_tensor_sizes(a->query)[2] != d)
    return opd_error(OPD_EINVAL, "passed-in embed_dim %lld didn't match last dim of query %lld",
                     (long long)d, (long long)opd_tensor_sizes(a->query)[2]);
  if (a->key->ndim != 3)
    return opd_error(OPD_EINVAL, "expected 3-D `key`, got %d-D tensor", a->key->ndim);
  if (a->value->ndim != 3)
    return opd_error(OPD_EINVAL, "expected 3-D `value`, got %d-D tensor", a->value->ndim);
  if (!same_sizes(a->query, a->key) || !same_sizes(a->key, a->value))
    return opd_error(OPD_EINVAL, "expected `query`/`key`/`value` shapes to match");
  if (a->qkv_weight->ndim != 2)
    return opd_error(OPD_EINVAL, "expected 2-D `qkv_weight`, got %d-D tensor", a->qkv_weight->ndim);
  if (opd_tensor_sizes(a->qkv_weight)[0] != 3 * d)
    return opd_error(OPD_EINVAL, "expected `qkv_weight` first dim to be 3x embed_dim");
  if (opd_tensor_sizes(a->qkv_weight)[1] != d)
    return opd_error(OPD_EINVAL, "expected `qkv_weight` second dim to be embed_Dim");
  if (a->qkv_bias->ndim != 1)
    return opd_error(OPD_EINVAL, "expected 1-D `qkv_bias`, got %d-D tensor", a->qkv_bias->ndim);
  if (opd_tensor_sizes(a->qkv_bias)[0] != 3 * d)
    return opd_error(OPD_EINVAL,
                     "expected `qkv_bias` first dim and first dim of query to be equal");
  if (a->num_head <= 0 || d % a->num_head != 0)
    return opd_error(OPD_EINVAL, "`embed_dim` must divide evenly by `num_heads`");
  return 0;
}

/* One of q, k, v: linear with the i-th third of the weight and bias, split into heads:
 * (B, H, T, D / H). */
static int project_heads(const mha_args *a, opd_tensor *x, int i, opd_tensor **out) {
  const int64_t *s = opd_tensor_sizes(x);
  int64_t d = a->embed_dim, heads[4] = {s[0], s[1], a->num_head, d / a->num_head};
  opd_tensor *t[4] = {NULL, NULL, NULL, NULL}; /* w, b, linear, heads */
  int rc = narrow(a->qkv_weight, i * d, d, &t[0]);
  if (!rc) rc = narrow(a->qkv_bias, i * d, d, &t[1]);
  if (!rc) rc = linear(x, t[0], t[1], &t[2]);
  if (!rc) rc = reshape(t[2], heads, 4, &t[3]);
  if (!rc) rc = transpose(t[3], 1, 2, out);
  release_all(t, 4);
  return rc;
}

/* The boolean mask broadcast to the scores' (B, H, T, T), with PyTorch 1.13's CPU rules: a
 * 2-d mask is a (B, T) key padding mask, any other has the scores' shape; mask_type must be
 * given, and 0 (a (T, T) attention mask) is refused as PyTorch's CPU kernel refuses it. A
 * non-boolean mask is true where nonzero. */
static int scores_mask(const mha_args *a, opd_tensor *scores, opd_tensor **out) {
  static const opd_operator *ne, *expand;
  const int64_t *ss = opd_tensor_sizes(scores), *ms = opd_tensor_sizes(a->mask);
  if (a->mask->ndim == 2 && ms[0] != ss[0])
    return opd_error(OPD_EINVAL,
                     "Expected attn_mask->sizes()[0] == batch_size to be true, but got false.  "
                     "(Could this error message be improved?  If so, please report an "
                     "enhancement request to PyTorch.)");
  if (a->mask->ndim == 2 && ms[1] != ss[3])
    return opd_error(OPD_EINVAL, "For mask_type == 1 mask shape should be (B, L)");
  if (a->mask->ndim != 2 && !same_sizes(a->mask, scores))
    return opd_error(OPD_EINVAL, "Mask shape should match input shape");
  if (!a->has_mask_type) return opd_error(OPD_EINVAL, "Mask Type should be defined");
  if (a->mask_type < 0 || a->mask_type > 2)
    return opd_error(OPD_EINVAL, "Mask Type should be 0 (src_mask), 1 (src_key_padding_mask), "
                                 "or 2 (default_mask)");
  if (a->mask_type == 0) return opd_error(OPD_EINVAL, "src_mask not currently supported on CPU");
  opd_tensor *m = NULL, *shaped = NULL;
  int rc = 0;
  if (opd_tensor_dtype(a->mask) == OPD_BOOL) {
    opd_tensor_retain(a->mask);
    m = a->mask;
  } else {
    rc = binary(&ne, "aten::ne.Scalar", a->mask, opd_iv_int(0), &m);
  }
  if (!rc && a->mask->ndim == 2) {
    rc = reshape(m, (int64_t[]){ss[0], 1, 1, ss[3]}, 4, &shaped);
  } else if (!rc) {
    opd_tensor_retain(m);
    shaped = m;
  }
  if (!rc) {
    opd_stack s;
    opd_stack_init(&s);
    rc = opd_stack_push(&s, opd_iv_tensor_borrow(shaped));
    if (!rc) rc = opd__push_int_list(&s, (opd_int_list){ss, 4});
    if (!rc) rc = opd_stack_push(&s, opd_iv_bool(false));
    rc = call_first(rc, &expand, "aten::expand", &s, out);
  }
  if (shaped) opd_tensor_release(shaped);
  if (m) opd_tensor_release(m);
  return rc;
}

/* softmax over the keys, hidden ones -inf (a row with every key hidden is NaN, as in
 * PyTorch 1.13 on the CPU). */
static int masked_softmax(const mha_args *a, opd_tensor *scores, opd_tensor **out) {
  static const opd_operator *fill;
  if (!a->mask) return softmax_last(scores, out);
  opd_tensor *t[2] = {NULL, NULL}; /* mask, filled */
  int rc = scores_mask(a, scores, &t[0]);
  if (!rc) {
    opd_stack s;
    opd_stack_init(&s);
    rc = push2(&s, opd_iv_tensor_borrow(scores), opd_iv_tensor_borrow(t[0]));
    if (!rc) rc = opd_stack_push(&s, opd_iv_double(-INFINITY));
    rc = call_first(rc, &fill, "aten::masked_fill.Scalar", &s, &t[1]);
  }
  if (!rc) rc = softmax_last(t[1], out);
  release_all(t, 2);
  return rc;
}

static int mha(const mha_args *a, opd_tensor **out, opd_tensor **weights) {
  static const opd_operator *mul, *matmul, *sum, *div, *clone;
  *out = *weights = NULL;
  int rc = mha_check(a);
  if (rc) return rc;
  const int64_t *qs = opd_tensor_sizes(a->query);
  int64_t b = qs[0], t = qs[1], d = a->embed_dim, dh = d / a->num_head;
  if (b == 0 || t == 0 || d == 0) {
    opd_stack s;
    opd_stack_init(&s);
    rc = push2(&s, opd_iv_tensor_borrow(a->query), opd_iv_none());
    return call_first(rc, &clone, "aten::clone", &s, out);
  }
  /* q, k, v, q scaled, k^T, scores, attn, attn v, back to (B, T, H, dh), (B, T, D) */
  opd_tensor *x[10] = {NULL};
  rc = project_heads(a, a->query, 0, &x[0]);
  if (!rc) rc = project_heads(a, a->key, 1, &x[1]);
  if (!rc) rc = project_heads(a, a->value, 2, &x[2]);
  if (!rc)
    rc = binary(&mul, "aten::mul.Scalar", x[0], opd_iv_double(1.0 / sqrt((double)dh)), &x[3]);
  if (!rc) rc = transpose(x[1], 2, 3, &x[4]);
  if (!rc) rc = binary(&matmul, "aten::matmul", x[3], opd_iv_tensor_borrow(x[4]), &x[5]);
  if (!rc) rc = masked_softmax(a, x[5], &x[6]);
  if (!rc) rc = binary(&matmul, "aten::matmul", x[6], opd_iv_tensor_borrow(x[2]), &x[7]);
  if (!rc) rc = transpose(x[7], 1, 2, &x[8]);
  if (!rc) rc = reshape(x[8], (int64_t[]){b, t, d}, 3, &x[9]);
  if (!rc) rc = linear(x[9], a->proj_weight, a->proj_bias, out);
  if (!rc && a->need_weights && a->average_attn_weights) {
    opd_tensor *summed = NULL;
    opd_stack s;
    opd_stack_init(&s);
    int64_t heads_dim = 1;
    rc = opd_stack_push(&s, opd_iv_tensor_borrow(x[6]));
    if (!rc) rc = opd__push_int_list(&s, (opd_int_list){&heads_dim, 1});
    if (!rc) rc = push2(&s, opd_iv_bool(false), opd_iv_none());
    rc = call_first(rc, &sum, "aten::sum.dim_IntList", &s, &summed);
    if (!rc) rc = binary(&div, "aten::div.Scalar", summed, opd_iv_int(a->num_head), weights);
    if (summed) opd_tensor_release(summed);
  } else if (!rc && a->need_weights) {
    opd_tensor_retain(x[6]);
    *weights = x[6];
  }
  release_all(x, 10);
  if (rc) release_all((opd_tensor *[]){*out, *weights}, 2);
  if (rc) *out = *weights = NULL;
  return rc;
}

static opd_tensor *tensor_at(const opd_ivalue *v) {
  return v->tag == OPD_IV_TENSOR ? v->u.t : NULL;
}

int opd__cea_native_multi_head_attention(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  opd_ivalue *v = opd_stack_last(stack, 13);
  mha_args a = {.query = tensor_at(&v[0]),
                .key = tensor_at(&v[1]),
                .value = tensor_at(&v[2]),
                .embed_dim = v[3].u.i,
                .num_head = v[4].u.i,
                .qkv_weight = tensor_at(&v[5]),
                .qkv_bias = tensor_at(&v[6]),
                .proj_weight = tensor_at(&v[7]),
                .proj_bias = tensor_at(&v[8]),
                .mask = tensor_at(&v[9]),
                .need_weights = v[10].tag == OPD_IV_BOOL && v[10].u.b,
                .average_attn_weights = v[11].tag == OPD_IV_BOOL && v[11].u.b,
                .has_mask_type = v[12].tag == OPD_IV_INT,
                .mask_type = v[12].tag == OPD_IV_INT ? v[12].u.i : 0};
  int rc = 0;
  if (!a.query || !a.key || !a.value || v[3].tag != OPD_IV_INT || v[4].tag != OPD_IV_INT ||
      !a.qkv_weight || !a.qkv_bias || !a.proj_weight || !a.proj_bias)
    rc = opd_error(OPD_EINVAL, "_native_multi_head_attention: unexpected argument types");
  opd_tensor *res[2] = {NULL, NULL};
  if (!rc) rc = mha(&a, &res[0], &res[1]);
  opd_stack_drop(stack, 13);
  if (!rc)
    rc = opd_stack_push(stack, opd_iv_tensor_steal(res[0]));
  else
    release_all(res, 2);
  if (!rc) {
    rc = opd_stack_push(stack, res[1] ? opd_iv_tensor_steal(res[1]) : opd_iv_none());
    if (rc) opd_stack_drop(stack, 1);
  }
  return rc;
}

/* ---- _transformer_encoder_layer_fwd ---- */

static int ffn(opd_tensor *x, opd_tensor *w1, opd_tensor *b1, opd_tensor *w2, opd_tensor *b2,
               bool use_gelu, opd_tensor **out) {
  static const opd_operator *gelu, *relu;
  opd_tensor *t[2] = {NULL, NULL};
  int rc = linear(x, w1, b1, &t[0]);
  if (!rc && use_gelu) {
    opd_stack s;
    opd_stack_init(&s);
    opd_ivalue none_approx;
    rc = opd_iv_make_string(&none_approx, "none", 4);
    if (!rc) rc = push2(&s, opd_iv_tensor_borrow(t[0]), none_approx);
    rc = call_first(rc, &gelu, "aten::gelu", &s, &t[1]);
  } else if (!rc) {
    opd_stack s;
    opd_stack_init(&s);
    rc = opd_stack_push(&s, opd_iv_tensor_borrow(t[0]));
    rc = call_first(rc, &relu, "aten::relu", &s, &t[1]);
  }
  if (!rc) rc = linear(t[1], w2, b2, out);
  release_all(t, 2);
  return rc;
}

int opd__cea_transformer_encoder_layer_fwd(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  static const opd_operator *clone;
  opd_ivalue *v = opd_stack_last(stack, 20);
  opd_tensor *src = tensor_at(&v[0]);
  bool ok = src && v[1].tag == OPD_IV_INT && v[2].tag == OPD_IV_INT && v[7].tag == OPD_IV_BOOL &&
            v[8].tag == OPD_IV_BOOL && v[9].tag == OPD_IV_DOUBLE;
  for (int i = 3; ok && i < 18; i++)
    if (i < 7 || i > 9) ok = tensor_at(&v[i]) != NULL;
  int rc = ok ? 0 : opd_error(OPD_EINVAL, "_transformer_encoder_layer_fwd: unexpected arguments");
  opd_tensor *result = NULL;
  if (!rc && src->numel == 0) {
    opd_stack s;
    opd_stack_init(&s);
    rc = push2(&s, opd_iv_tensor_borrow(src), opd_iv_none());
    rc = call_first(rc, &clone, "aten::clone", &s, &result);
  } else if (!rc) {
    int64_t d = v[1].u.i;
    bool use_gelu = v[7].u.b, norm_first = v[8].u.b;
    double eps = v[9].u.d;
    opd_tensor *ln1_w = v[10].u.t, *ln1_b = v[11].u.t, *ln2_w = v[12].u.t, *ln2_b = v[13].u.t;
    mha_args a = {.embed_dim = d,
                  .num_head = v[2].u.i,
                  .qkv_weight = v[3].u.t,
                  .qkv_bias = v[4].u.t,
                  .proj_weight = v[5].u.t,
                  .proj_bias = v[6].u.t,
                  .mask = tensor_at(&v[18]),
                  .has_mask_type = v[19].tag == OPD_IV_INT,
                  .mask_type = v[19].tag == OPD_IV_INT ? v[19].u.i : 0};
    /* normed input, attention, weights, residual sum, its norm, ffn input norm, ffn,
       residual sum */
    opd_tensor *t[8] = {NULL};
    opd_tensor *x = src;
    if (norm_first) {
      rc = layer_norm(src, d, ln1_w, ln1_b, eps, &t[0]);
      x = t[0];
    }
    a.query = a.key = a.value = x;
    if (!rc) rc = mha(&a, &t[1], &t[2]);
    if (!rc) rc = add(t[1], src, &t[3]);
    opd_tensor *pre_ffn = t[3];
    if (!rc && !norm_first) {
      rc = layer_norm(t[3], d, ln1_w, ln1_b, eps, &t[4]);
      pre_ffn = t[4];
    }
    x = pre_ffn;
    if (!rc && norm_first) {
      rc = layer_norm(pre_ffn, d, ln2_w, ln2_b, eps, &t[5]);
      x = t[5];
    }
    if (!rc) rc = ffn(x, v[14].u.t, v[15].u.t, v[16].u.t, v[17].u.t, use_gelu, &t[6]);
    if (!rc) rc = add(t[6], pre_ffn, norm_first ? &result : &t[7]);
    if (!rc && !norm_first) rc = layer_norm(t[7], d, ln2_w, ln2_b, eps, &result);
    release_all(t, 8);
  }
  opd_stack_drop(stack, 20);
  return rc ? rc : opd_stack_push(stack, opd_iv_tensor_steal(result));
}
