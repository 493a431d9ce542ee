/* lib_client.c: the soak's sessions through the client library (opd/client.h): random
 * uploads of every dtype and of shapes from 0-d to 4-d (some of megabytes), calls of a mix
 * of operators (elementwise, reductions, mm, softmax, cat, clone, views of every kind,
 * in-place fill), pipelined bursts of random depth, contiguous and strided downloads,
 * releases, and failing requests whose error codes are checked. Every download is compared
 * with the local model (model.h, [Note: Exact answers in the soak]). A session ends by
 * releasing everything, by closing with its tensors held, by closing with up to 300 calls
 * queued, or by closing in the middle of a large upload. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "opd/client.h"
#include "soak.h"

#define MAX_TENSORS   48
#define MAX_ELEMS     (2u << 20) /* elements a session's table may hold (views count too) */
#define MAX_BURST     64
#define MM_MAX_DIM    48
#define SUM_MAX_NUMEL (1u << 16)

typedef struct lib_session {
  soak_client *cl;
  opd_client *c;
  soak_tensor t[MAX_TENSORS];
  size_t n;
  size_t elems;               /* sum of the table's numel */
  opd_client_tensor released; /* the last handle released, 0 if none */
} lib_session;

/* ---- bookkeeping ---- */

static bool ok_rc(lib_session *s, int rc, const char *what) {
  if (rc == 0) return true;
  soak_fail(s->cl, "%s: %s: %s", what, opd_client_err_name(rc), opd_client_last_error());
  return false;
}

static bool expect_code(lib_session *s, int rc, int want, const char *what) {
  if (rc == want) {
    SOAK_COUNT(expected_errors, 1);
    return true;
  }
  soak_fail(s->cl, "%s: %s (%s), expected %s", what, rc ? opd_client_err_name(rc) : "success",
            rc ? opd_client_last_error() : "", opd_client_err_name(want));
  return false;
}

/* True when a reference result was made (rc 0); out of memory is the run's failure. */
static bool made(lib_session *s, int rc) {
  if (rc < 0) soak_fail(s->cl, "out of memory");
  return rc == 0;
}

static bool has_room(const lib_session *s, size_t tensors, size_t elems) {
  return s->n + tensors <= MAX_TENSORS && s->elems + elems <= MAX_ELEMS;
}

/* Adds a tensor the daemon gave handle h (the caller made room). */
static soak_tensor *keep(lib_session *s, soak_tensor *t, opd_client_tensor h) {
  t->handle = h;
  s->t[s->n] = *t;
  s->elems += soak_numel(t);
  return &s->t[s->n++];
}

static void forget(lib_session *s, size_t i) {
  s->elems -= soak_numel(&s->t[i]);
  s->released = s->t[i].handle;
  soak_drop(&s->t[i]);
  s->t[i] = s->t[--s->n];
}

/* A random tensor of the table satisfying ok (NULL: any), or -1. */
static int pick(lib_session *s, bool (*ok)(const soak_tensor *)) {
  int found = -1, seen = 0;
  for (size_t i = 0; i < s->n; i++)
    if (!ok || ok(&s->t[i]))
      if (soak_rng_range(&s->cl->rng, 0, seen++) == 0) found = (int)i;
  return found;
}

static bool arithmetic(const soak_tensor *t) {
  return soak_is_arithmetic(t->dtype) && t->st->tol == 0;
}
static bool floating(const soak_tensor *t) {
  return arithmetic(t) && t->dtype != OPD_INT64;
}
static bool has_dims(const soak_tensor *t) {
  return t->ndim > 0;
}
static bool matrix(const soak_tensor *t) {
  return floating(t) && t->ndim == 2 && t->shape[0] <= MM_MAX_DIM && t->shape[1] <= MM_MAX_DIM;
}
static bool contiguous(const soak_tensor *t) {
  return soak_is_contiguous(t);
}
static bool known_layout(const soak_tensor *t) {
  return t->same_layout;
}
static bool fillable(const soak_tensor *t) {
  return !soak_overlaps(t) && t->dtype != OPD_BOOL;
}
static bool summable(const soak_tensor *t) {
  return arithmetic(t) && soak_numel(t) <= SUM_MAX_NUMEL;
}

/* ---- downloads ---- */

static bool same_values(lib_session *s, const soak_tensor *t, const void *bytes,
                        const opd_client_tensor_info *info, const char *what) {
  bool shape_ok =
      info->dtype == t->dtype && info->ndim == t->ndim && info->nbytes == soak_nbytes(t);
  for (int d = 0; shape_ok && d < t->ndim; d++) shape_ok = info->shape[d] == t->shape[d];
  if (!shape_ok) {
    soak_fail(s->cl,
              "%s: tensor %llu came back as dtype %d with %d dims and %llu bytes, expected "
              "dtype %d with %d dims and %zu bytes",
              what, (unsigned long long)t->handle, info->dtype, info->ndim,
              (unsigned long long)info->nbytes, t->dtype, t->ndim, soak_nbytes(t));
    return false;
  }
  double got, want;
  long i = soak_compare(t, bytes, &got, &want);
  if (i >= 0) {
    soak_fail(s->cl,
              "%s: tensor %llu (dtype %d, %d dims, %zu elements): element %ld is %.17g, "
              "expected %.17g",
              what, (unsigned long long)t->handle, t->dtype, t->ndim, soak_numel(t), i, got, want);
    return false;
  }
  SOAK_COUNT(values_checked, soak_numel(t));
  SOAK_COUNT(bytes_down, soak_nbytes(t));
  return true;
}

static bool check(lib_session *s, const soak_tensor *t, const char *what) {
  soak_doing(s->cl, "download");
  size_t nb = soak_nbytes(t);
  void *buf = malloc(nb ? nb : 1);
  if (!buf) {
    soak_fail(s->cl, "out of memory");
    return false;
  }
  opd_client_tensor_info info;
  int rc = opd_client_download(s->c, t->handle, buf, nb, &info);
  bool ok = ok_rc(s, rc, what) && same_values(s, t, buf, &info, what);
  free(buf);
  SOAK_COUNT(downloads, 1);
  return ok;
}

/* Keeps a call's result (model `want`, handle h), checked at once half of the time. */
static void result(lib_session *s, int rc, soak_tensor *want, opd_client_tensor h,
                   const char *what) {
  SOAK_COUNT(calls, 1);
  char geometry[120];
  want->handle = h;
  soak_describe(want, geometry, sizeof geometry);
  soak_note(s->cl, "%s -> %s", what, geometry);
  if (!ok_rc(s, rc, what)) {
    soak_drop(want);
    return;
  }
  soak_tensor *t = keep(s, want, h);
  if (soak_rng_chance(&s->cl->rng, 50)) check(s, t, what);
}

/* ---- uploads ---- */

static int random_dtype(soak_rng *r) {
  static const int all[] = {OPD_UINT8, OPD_INT8,     OPD_INT16,   OPD_INT32, OPD_FLOAT16,
                            OPD_BOOL,  OPD_BFLOAT16, OPD_FLOAT64, OPD_INT64};
  if (soak_rng_chance(r, 55)) return OPD_FLOAT32;
  return all[soak_rng_range(r, 0, (int64_t)(sizeof all / sizeof *all) - 1)];
}

static int random_arithmetic_dtype(soak_rng *r) {
  static const int all[] = {OPD_FLOAT32, OPD_FLOAT32, OPD_FLOAT64, OPD_INT64};
  return all[soak_rng_range(r, 0, 3)];
}

/* A random shape: mostly small of rank 0-4, sometimes empty, sometimes of megabytes. */
static int random_shape(soak_rng *r, int64_t *shape) {
  if (soak_rng_chance(r, 4)) { /* large: 1-D or 2-D, up to 512K elements */
    if (soak_rng_chance(r, 50)) {
      shape[0] = soak_rng_range(r, 1, 1 << 19);
      return 1;
    }
    shape[0] = soak_rng_range(r, 64, 1024);
    shape[1] = soak_rng_range(r, 64, 512);
    return 2;
  }
  int ndim = (int)soak_rng_range(r, 0, SOAK_MAX_DIMS);
  for (int d = 0; d < ndim; d++) shape[d] = soak_rng_chance(r, 3) ? 0 : soak_rng_range(r, 1, 6);
  return ndim;
}

/* Uploads a random tensor of the dtype and shape; its index, or -1. */
static int upload(lib_session *s, int dtype, int ndim, const int64_t *shape) {
  soak_doing(s->cl, "upload");
  soak_tensor t;
  if (!made(s, soak_new(&t, dtype, ndim, shape))) return -1;
  if (!has_room(s, 1, soak_numel(&t))) {
    soak_drop(&t);
    return -1;
  }
  soak_randomize(&t, &s->cl->rng);
  size_t nb = soak_nbytes(&t);
  void *buf = malloc(nb ? nb : 1);
  if (!buf) {
    soak_drop(&t);
    soak_fail(s->cl, "out of memory");
    return -1;
  }
  soak_encode(&t, buf);
  opd_client_tensor h;
  int rc = opd_client_upload(s->c, dtype, shape, ndim, buf, nb, NULL, &h);
  free(buf);
  SOAK_COUNT(uploads, 1);
  if (!ok_rc(s, rc, "upload")) {
    soak_drop(&t);
    return -1;
  }
  SOAK_COUNT(bytes_up, nb);
  char geometry[120];
  t.handle = h;
  soak_describe(&t, geometry, sizeof geometry);
  soak_note(s->cl, "upload -> %s", geometry);
  keep(s, &t, h);
  return (int)s->n - 1;
}

static void op_upload(lib_session *s) {
  int64_t shape[SOAK_MAX_DIMS];
  int ndim = random_shape(&s->cl->rng, shape);
  upload(s, random_dtype(&s->cl->rng), ndim, shape);
}

/* A tensor of the table with a's shape satisfying ok, or a new upload of one. */
static int partner(lib_session *s, const soak_tensor *a, bool (*ok)(const soak_tensor *)) {
  int found = -1, seen = 0;
  for (size_t i = 0; i < s->n; i++) {
    const soak_tensor *b = &s->t[i];
    if (b->ndim != a->ndim || !ok(b) || memcmp(b->shape, a->shape, (size_t)a->ndim * 8) != 0)
      continue;
    if (soak_rng_range(&s->cl->rng, 0, seen++) == 0) found = (int)i;
  }
  if (found < 0 || soak_rng_chance(&s->cl->rng, 20))
    found = upload(s, random_arithmetic_dtype(&s->cl->rng), a->ndim, a->shape);
  return found;
}

/* ---- calls ---- */

static void op_binary(lib_session *s) {
  int ia = pick(s, arithmetic);
  if (ia < 0) return;
  int ib = partner(s, &s->t[ia], arithmetic); /* may add a tensor: s->t does not move */
  if (ib < 0) return;
  const soak_tensor *a = &s->t[ia], *b = &s->t[ib];
  soak_binary op = (soak_binary)soak_rng_range(&s->cl->rng, 0, 2);
  int64_t alpha = op == SOAK_MUL ? 1 : soak_rng_range(&s->cl->rng, 1, 2);
  double mag, res;
  int dtype;
  soak_binary_bounds(op, a, b, alpha, &mag, &res, &dtype);
  if (!soak_exact_in(dtype, mag, res) || !has_room(s, 1, soak_numel(a))) return;
  soak_tensor want;
  if (!made(s, soak_ref_binary(&want, op, a, b, alpha))) return;
  soak_doing(s->cl, "binary call");
  opd_client_tensor h = 0;
  const opd_client_scalar *al = alpha == 1 ? NULL : OPD_SCALAR_INT(alpha);
  int rc = op == SOAK_ADD   ? opd_add(s->c, a->handle, b->handle, al, &h)
           : op == SOAK_SUB ? opd_sub(s->c, a->handle, b->handle, al, &h)
                            : opd_mul(s->c, a->handle, b->handle, &h);
  result(s, rc, &want, h,
         op == SOAK_ADD   ? "aten::add.Tensor"
         : op == SOAK_SUB ? "aten::sub.Tensor"
                          : "aten::mul.Tensor");
}

static void op_unary(lib_session *s) {
  int ia = pick(s, arithmetic);
  if (ia < 0 || !has_room(s, 1, soak_numel(&s->t[ia]))) return;
  const soak_tensor *a = &s->t[ia];
  soak_unary op = (soak_unary)soak_rng_range(&s->cl->rng, 0, 2);
  soak_tensor want;
  if (!made(s, soak_ref_unary(&want, op, a))) return;
  soak_doing(s->cl, "unary call");
  opd_client_tensor h = 0;
  int rc = op == SOAK_NEG   ? opd_neg(s->c, a->handle, &h)
           : op == SOAK_ABS ? opd_abs(s->c, a->handle, &h)
                            : opd_relu(s->c, a->handle, &h);
  result(s, rc, &want, h,
         op == SOAK_NEG   ? "aten::neg"
         : op == SOAK_ABS ? "aten::abs"
                          : "aten::relu");
}

static void op_sum(lib_session *s) {
  int ia = pick(s, summable);
  if (ia < 0 || !has_room(s, 1, soak_numel(&s->t[ia]))) return;
  const soak_tensor *a = &s->t[ia];
  int dim = a->ndim && soak_rng_chance(&s->cl->rng, 60)
                ? (int)soak_rng_range(&s->cl->rng, 0, a->ndim - 1)
                : -1;
  bool keepdim = soak_rng_chance(&s->cl->rng, 50);
  soak_tensor want;
  if (!made(s, soak_ref_sum(&want, a, dim, keepdim))) return;
  if (!soak_exact_in(want.dtype, want.st->mag, want.st->res)) {
    soak_drop(&want);
    return;
  }
  soak_doing(s->cl, "sum");
  opd_client_tensor h = 0;
  int64_t d = dim;
  int rc = dim < 0 ? opd_sum(s->c, a->handle, NULL, &h)
                   : opd_sum_dim_intlist(s->c, a->handle, &d, 1, OPD_BOOL(keepdim), NULL, &h);
  result(s, rc, &want, h, dim < 0 ? "aten::sum" : "aten::sum.dim_IntList");
}

/* a times its transpose: the transpose is a view handle of its own, an argument of mm. */
static void op_mm(lib_session *s) {
  int ia = pick(s, matrix);
  if (ia < 0 || !has_room(s, 2, 2 * MM_MAX_DIM * MM_MAX_DIM)) return;
  soak_tensor at, want;
  soak_transpose(&at, &s->t[ia], 0, 1);
  if (!made(s, soak_ref_mm_transposed(&want, &s->t[ia]))) {
    soak_drop(&at);
    return;
  }
  if (!soak_exact_in(want.dtype, want.st->mag, want.st->res)) {
    soak_drop(&at);
    soak_drop(&want);
    return;
  }
  soak_doing(s->cl, "mm");
  opd_client_tensor ht = 0, h = 0;
  int rc = opd_t(s->c, s->t[ia].handle, &ht);
  SOAK_COUNT(calls, 1);
  if (!ok_rc(s, rc, "aten::t")) {
    soak_drop(&at);
    soak_drop(&want);
    return;
  }
  const soak_tensor *a = &s->t[ia], *t = keep(s, &at, ht);
  rc = opd_mm(s->c, a->handle, t->handle, &h);
  result(s, rc, &want, h, "aten::mm");
}

static void op_softmax(lib_session *s) {
  int ia = pick(s, floating);
  if (ia < 0 || !has_room(s, 1, soak_numel(&s->t[ia]))) return;
  const soak_tensor *a = &s->t[ia];
  int dim = a->ndim ? (int)soak_rng_range(&s->cl->rng, 0, a->ndim - 1) : 0;
  soak_tensor want;
  if (a->ndim == 0 || !made(s, soak_ref_softmax(&want, a, dim))) return;
  soak_doing(s->cl, "softmax");
  opd_client_tensor h = 0;
  bool plain = soak_rng_chance(&s->cl->rng, 50);
  int rc = plain ? opd_softmax(s->c, a->handle, dim, NULL, &h)
                 : opd__softmax(s->c, a->handle, dim, false, &h);
  result(s, rc, &want, h, plain ? "aten::softmax.int" : "aten::_softmax");
}

static void op_cat(lib_session *s) {
  int ia = pick(s, has_dims);
  if (ia < 0) return;
  const soak_tensor *parts[3] = {&s->t[ia]};
  opd_client_tensor handles[3] = {s->t[ia].handle};
  size_t n = 1, want_parts = (size_t)soak_rng_range(&s->cl->rng, 1, 3);
  for (size_t i = 0; i < s->n && n < want_parts; i++) { /* others that agree past dimension 0 */
    const soak_tensor *b = &s->t[i], *a = parts[0];
    if (b->dtype != a->dtype || b->ndim != a->ndim ||
        memcmp(b->shape + 1, a->shape + 1, (size_t)(a->ndim - 1) * 8) != 0)
      continue;
    parts[n] = b;
    handles[n++] = b->handle;
  }
  size_t elems = 0;
  for (size_t i = 0; i < n; i++) elems += soak_numel(parts[i]);
  if (!has_room(s, 1, elems)) return;
  soak_tensor want;
  if (!made(s, soak_ref_cat0(&want, parts, n))) return;
  soak_doing(s->cl, "cat");
  opd_client_tensor h = 0;
  int rc = opd_cat(s->c, handles, n, soak_rng_chance(&s->cl->rng, 50) ? OPD_INT(0) : NULL, &h);
  result(s, rc, &want, h, "aten::cat");
}

/* clone copies; contiguous copies only what is not contiguous already (else it is self), so
 * it needs the layout ([Note: Layouts in the soak]). */
static void op_copy(lib_session *s) {
  bool clone = soak_rng_chance(&s->cl->rng, 50);
  int ia = pick(s, clone ? NULL : known_layout);
  if (ia < 0 || !has_room(s, 1, soak_numel(&s->t[ia]))) return;
  const soak_tensor *a = &s->t[ia];
  soak_tensor want;
  if (!clone && soak_is_contiguous(a))
    soak_view_of(&want, a, a->ndim, a->shape, a->stride, a->offset);
  else if (!made(s, soak_ref_clone(&want, a)))
    return;
  else if (!clone)
    want.same_layout = true; /* a contiguous copy */
  soak_doing(s->cl, clone ? "clone" : "contiguous");
  opd_client_tensor h = 0;
  int rc = clone ? opd_clone(s->c, a->handle, NULL, &h) : opd_contiguous(s->c, a->handle, NULL, &h);
  char what[160], geometry[120];
  soak_describe(a, geometry, sizeof geometry);
  snprintf(what, sizeof what, "%s of %s", clone ? "aten::clone" : "aten::contiguous", geometry);
  result(s, rc, &want, h, what);
}

/* One of the view operators; the result shares a's storage. */
static void op_view(lib_session *s) {
  soak_rng *r = &s->cl->rng;
  int ia = pick(s, NULL);
  if (ia < 0 || !has_room(s, 1, 4 * soak_numel(&s->t[ia]) + 64)) return;
  const soak_tensor *a = &s->t[ia];
  soak_tensor want;
  opd_client_tensor h = 0;
  int rc = 0, kind = (int)soak_rng_range(r, 0, 7);
  const char *name = "?";
  int64_t v[SOAK_MAX_DIMS];
  soak_doing(s->cl, "view");
  if (kind == 0 && a->ndim >= 2) {
    int d0 = (int)soak_rng_range(r, 0, a->ndim - 1), d1 = (int)soak_rng_range(r, 0, a->ndim - 1);
    soak_transpose(&want, a, d0, d1);
    rc = opd_transpose(s->c, a->handle, d0, d1, &h), name = "aten::transpose.int";
  } else if (kind == 1 && a->ndim >= 1) {
    for (int d = 0; d < a->ndim; d++) v[d] = d;
    for (int d = a->ndim - 1; d > 0; d--) { /* Fisher-Yates */
      int e = (int)soak_rng_range(r, 0, d);
      int64_t x = v[d];
      v[d] = v[e], v[e] = x;
    }
    soak_permute(&want, a, v);
    rc = opd_permute(s->c, a->handle, v, (size_t)a->ndim, &h), name = "aten::permute";
  } else if (kind == 2 && a->ndim >= 1) {
    int dim = (int)soak_rng_range(r, 0, a->ndim - 1);
    int64_t start = soak_rng_range(r, 0, a->shape[dim]),
            end = soak_rng_range(r, start, a->shape[dim]);
    int64_t step = soak_rng_range(r, 1, 3), d = dim;
    soak_slice(&want, a, dim, start, end, step);
    rc = opd_slice(s->c, a->handle, &d, &start, &end, &step, &h), name = "aten::slice.Tensor";
  } else if (kind == 3 && a->ndim >= 1 && a->shape[0] > 0) {
    int dim = (int)soak_rng_range(r, 0, a->ndim - 1);
    if (a->shape[dim] == 0) dim = 0;
    int64_t index = soak_rng_range(r, -a->shape[dim], a->shape[dim] - 1);
    soak_select(&want, a, dim, index);
    rc = opd_select(s->c, a->handle, dim, index, &h), name = "aten::select.int";
  } else if (kind == 4) {
    int lead = a->ndim < SOAK_MAX_DIMS && soak_rng_chance(r, 50);
    int ndim = a->ndim + lead;
    for (int d = 0; d < ndim; d++) {
      int ad = d - lead;
      if (ad < 0 || a->shape[ad] == 1)
        v[d] = soak_rng_range(r, 1, 3);
      else
        v[d] = soak_rng_chance(r, 50) ? -1 : a->shape[ad];
    }
    soak_expand(&want, a, ndim, v);
    rc = opd_expand(s->c, a->handle, v, (size_t)ndim, NULL, &h), name = "aten::expand";
  } else if (kind == 5 && a->ndim < SOAK_MAX_DIMS) {
    int dim = (int)soak_rng_range(r, 0, a->ndim);
    soak_unsqueeze(&want, a, dim);
    rc = opd_unsqueeze(s->c, a->handle, dim, &h), name = "aten::unsqueeze";
  } else if (kind == 6 && a->same_layout && soak_is_contiguous(a)) {
    size_t n = soak_numel(a);
    int ndim = 1;
    v[0] = (int64_t)n;
    for (int64_t f = 2; n && f <= 8; f++) /* split off a factor */
      if (n % (size_t)f == 0 && soak_rng_chance(r, 30)) {
        v[0] = f, v[1] = (int64_t)n / f, ndim = 2;
        break;
      }
    bool use_view = soak_rng_chance(r, 50);
    soak_reshape(&want, a, ndim, v);
    rc = use_view ? opd_view(s->c, a->handle, v, (size_t)ndim, &h)
                  : opd_reshape(s->c, a->handle, v, (size_t)ndim, &h);
    name = use_view ? "aten::view" : "aten::reshape";
  } else if (a->ndim <= 2) {
    if (a->ndim == 2)
      soak_transpose(&want, a, 0, 1);
    else
      soak_view_of(&want, a, a->ndim, a->shape, a->stride, a->offset);
    rc = opd_t(s->c, a->handle, &h), name = "aten::t";
  } else {
    return;
  }
  char what[160], geometry[120];
  soak_describe(a, geometry, sizeof geometry);
  snprintf(what, sizeof what, "%s of %s", name, geometry);
  result(s, rc, &want, h, what);
}

/* In place: the model's storage changes, and so every view of it. */
static void op_fill(lib_session *s) {
  int ia = pick(s, fillable);
  if (ia < 0 || !has_room(s, 1, soak_numel(&s->t[ia]))) return;
  soak_tensor *a = &s->t[ia];
  bool floating_point = a->dtype == OPD_FLOAT32 || a->dtype == OPD_FLOAT64 ||
                        a->dtype == OPD_FLOAT16 || a->dtype == OPD_BFLOAT16;
  int64_t k = a->dtype == OPD_UINT8 ? soak_rng_range(&s->cl->rng, 0, 255)
                                    : soak_rng_range(&s->cl->rng, -32, 32);
  double x = floating_point ? (double)k * 0.25 : (double)k;
  soak_doing(s->cl, "fill_");
  opd_client_tensor h = 0;
  int rc = opd_fill_(s->c, a->handle, floating_point ? opd_cs_double(x) : opd_cs_int(k), &h);
  SOAK_COUNT(calls, 1);
  if (!ok_rc(s, rc, "aten::fill_.Scalar")) return;
  soak_ref_fill(a, x);
  soak_tensor alias;
  soak_view_of(&alias, a, a->ndim, a->shape, a->stride, a->offset);
  soak_tensor *t = keep(s, &alias, h);
  if (soak_rng_chance(&s->cl->rng, 50)) check(s, t, "aten::fill_.Scalar");
}

static void op_download(lib_session *s) {
  int i = pick(s, NULL);
  if (i >= 0) check(s, &s->t[i], "download");
}

/* An asynchronous release's answer (a release cut off by the session's close is cancelled). */
static void released(opd_future *f, void *user) {
  int rc = opd_future_status(f);
  if (rc != 0 && rc != OPD_ECANCELED)
    soak_fail(user, "release: %s: %s", opd_client_err_name(rc), opd_future_error(f));
}

static void op_release(lib_session *s) {
  size_t n = (size_t)soak_rng_range(&s->cl->rng, 1, 4);
  opd_client_tensor h[4];
  size_t k = 0;
  soak_doing(s->cl, "release");
  while (k < n && s->n) {
    size_t i = (size_t)soak_rng_range(&s->cl->rng, 0, (int64_t)s->n - 1);
    h[k++] = s->t[i].handle;
    forget(s, i);
  }
  if (!k) return;
  int rc = soak_rng_chance(&s->cl->rng, 50)
               ? opd_client_release(s->c, h, k)
               : opd_client_release_async(s->c, h, k, released, s->cl, NULL);
  SOAK_COUNT(releases, 1);
  ok_rc(s, rc, "release");
}

static void op_ping(lib_session *s) {
  char payload[64];
  size_t n = (size_t)soak_rng_range(&s->cl->rng, 0, sizeof payload);
  for (size_t i = 0; i < n; i++) payload[i] = (char)soak_rng_next(&s->cl->rng);
  soak_doing(s->cl, "ping");
  SOAK_COUNT(pings, 1);
  ok_rc(s, opd_client_ping(s->c, payload, n), "ping");
}

/* A dispatch state that changes nothing the soak checks (autograd excluded), or reset. */
static void op_dispatch_state(lib_session *s) {
  soak_doing(s->cl, "set_dispatch_state");
  const char *exclude[] = {"AutogradCPU"};
  int rc = soak_rng_chance(&s->cl->rng, 50)
               ? opd_client_set_dispatch_state(s->c, NULL, 0, exclude, 1)
               : opd_client_change_dispatch_state(s->c, &(opd_client_dispatch_change){0});
  ok_rc(s, rc, "set_dispatch_state");
  ok_rc(s, opd_client_synchronize(s->c), "synchronize");
}

/* Requests that fail, each with its code (a kind whose operands the table lacks falls through
 * to the last one, a download into a buffer one byte short); the session goes on. */
static void op_failing(lib_session *s) {
  soak_rng *r = &s->cl->rng;
  opd_client_tensor h = 0;
  int kind = (int)soak_rng_range(r, 0, 12), ia;
  soak_doing(s->cl, "failing request");
  SOAK_COUNT(calls, 1);
  if (kind == 0 && (ia = pick(s, arithmetic)) >= 0 && s->t[ia].ndim &&
      s->t[ia].shape[s->t[ia].ndim - 1] >= 2) {
    int64_t bad[] = {s->t[ia].shape[s->t[ia].ndim - 1] + 1};
    int ib = upload(s, s->t[ia].dtype, 1, bad);
    if (ib >= 0)
      expect_code(s, opd_add(s->c, s->t[ia].handle, s->t[ib].handle, NULL, &h), OPD_EINVAL,
                  "aten::add.Tensor of shapes that do not broadcast");
  } else if (kind == 1 && (ia = pick(s, matrix)) >= 0 && s->t[ia].shape[0] != s->t[ia].shape[1]) {
    expect_code(s, opd_mm(s->c, s->t[ia].handle, s->t[ia].handle, &h), OPD_EINVAL,
                "aten::mm of shapes that do not multiply");
  } else if (kind == 2) {
    expect_code(s, opd_neg(s->c, UINT64_C(1) << 40, &h), OPD_ENOENT, "a handle never issued");
  } else if (kind == 3 && s->released) {
    expect_code(s, opd_neg(s->c, s->released, &h), OPD_ENOENT, "a released handle");
  } else if (kind == 4) {
    opd_client_value arg = opd_cv_int(1);
    expect_code(s, opd_client_call(s->c, "soak::no_such_op", &arg, 1, &h, 1, NULL), OPD_ENOENT,
                "an unknown operator");
  } else if (kind == 5 && (ia = pick(s, has_dims)) >= 0) {
    expect_code(s, opd_select(s->c, s->t[ia].handle, 0, s->t[ia].shape[0], &h), OPD_EINDEX,
                "aten::select.int out of range");
  } else if (kind == 6 && (ia = pick(s, contiguous)) >= 0) {
    int64_t size = (int64_t)soak_numel(&s->t[ia]) + 1;
    expect_code(s, opd_view(s->c, s->t[ia].handle, &size, 1, &h), OPD_EINVAL,
                "aten::view to another element count");
  } else if (kind == 7) { /* 512 MiB: over max_bytes_held, refused before it is allocated */
    int64_t size = INT64_C(1) << 27;
    expect_code(s, opd_full(s->c, &size, 1, opd_cs_double(1), NULL, NULL, NULL, NULL, &h),
                OPD_ERESOURCE, "aten::full over max_bytes_held");
  } else if (kind == 8) {
    char buf[8];
    expect_code(s, opd_client_download(s->c, UINT64_C(1) << 41, buf, sizeof buf, NULL), OPD_ENOENT,
                "download of a handle never issued");
  } else if (kind == 9) {
    opd_client_tensor never = UINT64_C(1) << 42;
    expect_code(s, opd_client_release(s->c, &never, 1), OPD_ENOENT,
                "release of a handle never issued");
  } else if (kind == 10) {
    opd_client_value arg = opd_cv_str("not a tensor");
    expect_code(s, opd_client_call(s->c, "aten::neg", &arg, 1, &h, 1, NULL), OPD_EINVAL,
                "aten::neg of a string");
  } else if (kind == 11) {
    const char *include[] = {"NoSuchDispatchKey"};
    expect_code(s, opd_client_set_dispatch_state(s->c, include, 1, NULL, 0), OPD_EINVAL,
                "an unknown dispatch key");
  } else if ((ia = pick(s, NULL)) >= 0 && soak_nbytes(&s->t[ia]) >= 2) { /* buffer too small */
    size_t nb = soak_nbytes(&s->t[ia]);
    void *buf = malloc(nb);
    opd_client_tensor_info info;
    if (buf)
      expect_code(s, opd_client_download(s->c, s->t[ia].handle, buf, nb - 1, &info), OPD_EINVAL,
                  "download into a buffer one byte short");
    free(buf);
  }
}

/* ---- pipelined bursts ---- */

typedef struct pending {
  opd_future *f;
  enum { P_CALL, P_DOWNLOAD, P_PING, P_FAIL, P_UPLOAD } kind;
  soak_tensor want; /* P_CALL, P_UPLOAD: the result */
  int index;        /* P_DOWNLOAD: the tensor downloaded */
  void *buf;        /* P_DOWNLOAD: into this; P_UPLOAD: from this */
} pending;

/* Room the burst's results will take in the table. */
typedef struct burst_room {
  size_t tensors, elems;
} burst_room;

static bool reserve_result(lib_session *s, burst_room *room, size_t elems) {
  if (!has_room(s, room->tensors + 1, room->elems + elems)) return false;
  room->tensors++;
  room->elems += elems;
  return true;
}

static void submit(lib_session *s, pending *p, burst_room *room) {
  soak_rng *r = &s->cl->rng;
  int kind = (int)soak_rng_range(r, 0, 4), ia = -1;
  int64_t shape[] = {soak_rng_range(r, 1, 8)};
  p->kind = P_PING;
  if (kind == 0 && (ia = pick(s, summable)) >= 0 &&
      soak_exact_in(s->t[ia].dtype, 2 * s->t[ia].st->mag, s->t[ia].st->res) &&
      reserve_result(s, room, soak_numel(&s->t[ia])) &&
      soak_ref_binary(&p->want, SOAK_ADD, &s->t[ia], &s->t[ia], 1) == 0) {
    p->kind = P_CALL;
    SOAK_COUNT(calls, 1);
    opd_add_async(s->c, s->t[ia].handle, s->t[ia].handle, NULL, NULL, NULL, &p->f);
  } else if (kind == 1 && (ia = pick(s, NULL)) >= 0 &&
             (p->buf = malloc(soak_nbytes(&s->t[ia]) + 1))) {
    p->kind = P_DOWNLOAD;
    p->index = ia;
    SOAK_COUNT(downloads, 1);
    opd_client_download_async(s->c, s->t[ia].handle, p->buf, soak_nbytes(&s->t[ia]), NULL, NULL,
                              &p->f);
  } else if (kind == 2) {
    p->kind = P_FAIL;
    SOAK_COUNT(calls, 1);
    opd_neg_async(s->c, UINT64_C(1) << 43, NULL, NULL, &p->f);
  } else if (kind == 3 && reserve_result(s, room, (size_t)shape[0]) &&
             soak_new(&p->want, OPD_FLOAT32, 1, shape) == 0 &&
             (p->buf = malloc(soak_nbytes(&p->want)))) {
    p->kind = P_UPLOAD;
    SOAK_COUNT(uploads, 1);
    soak_randomize(&p->want, r);
    soak_encode(&p->want, p->buf);
    opd_client_upload_async(s->c, OPD_FLOAT32, shape, 1, p->buf, soak_nbytes(&p->want), NULL, NULL,
                            NULL, &p->f);
  } else {
    SOAK_COUNT(pings, 1);
    opd_client_ping_async(s->c, "burst", 5, NULL, NULL, &p->f);
  }
  if (!p->f) soak_fail(s->cl, "a pipelined submission failed: %s", opd_client_last_error());
}

static void complete(lib_session *s, pending *p) {
  if (!p->f) return;
  int rc = opd_future_wait(p->f);
  if (p->kind == P_FAIL) {
    if (rc != OPD_ENOENT)
      soak_fail(s->cl, "pipelined aten::neg of a handle never issued: %s, expected ENOENT",
                rc ? opd_client_err_name(rc) : "success");
    else
      SOAK_COUNT(expected_errors, 1);
  } else if (rc != 0) {
    soak_fail(s->cl, "pipelined request (kind %d): %s: %s", (int)p->kind, opd_client_err_name(rc),
              opd_future_error(p->f));
  } else if (p->kind == P_DOWNLOAD) {
    same_values(s, &s->t[p->index], p->buf, opd_future_tensor_info(p->f), "pipelined download");
  } else if (p->kind == P_CALL || p->kind == P_UPLOAD) {
    opd_client_tensor h = p->kind == P_CALL ? opd_future_tensor(p->f, 0) : opd_future_handle(p->f);
    keep(s, &p->want, h);
    p->want.st = NULL; /* the table's now */
  }
  opd_future_free(p->f);
}

/* Up to 64 requests in flight at once (the client's max_in_flight may be lower: submissions
 * then wait), completed in order. Results join the end of the table as they complete, so
 * the indices that downloads name stay valid. */
static void op_burst(lib_session *s) {
  pending p[MAX_BURST];
  size_t depth = (size_t)soak_rng_range(&s->cl->rng, 1, MAX_BURST);
  burst_room room = {0};
  soak_doing(s->cl, "pipelined burst");
  for (size_t i = 0; i < depth; i++) {
    p[i] = (pending){0};
    submit(s, &p[i], &room);
  }
  for (size_t i = 0; i < depth; i++) {
    complete(s, &p[i]);
    soak_drop(&p[i].want); /* a result not kept (its request failed) */
  }
  for (size_t i = 0; i < depth; i++) free(p[i].buf);
  SOAK_COUNT(pipelined, depth);
}

/* ---- endings ---- */

/* Closing with calls queued (fire and forget: the daemon cancels what it has not run). */
static void end_with_work(lib_session *s) {
  size_t n = (size_t)soak_rng_range(&s->cl->rng, 20, 300);
  int ia = pick(s, arithmetic);
  soak_doing(s->cl, "closing with calls queued");
  for (size_t i = 0; i < n; i++) {
    int rc = ia >= 0 ? opd_add_async(s->c, s->t[ia].handle, s->t[ia].handle, NULL, NULL, NULL, NULL)
                     : opd_client_ping_async(s->c, "q", 1, NULL, NULL, NULL);
    if (rc < 0) {
      soak_fail(s->cl, "queueing calls: %s", opd_client_last_error());
      break;
    }
  }
  SOAK_COUNT(closed_with_work, 1);
}

static void release_all(lib_session *s) {
  opd_client_tensor h[MAX_TENSORS];
  for (size_t i = 0; i < s->n; i++) h[i] = s->t[i].handle;
  soak_doing(s->cl, "releasing everything");
  if (s->n) ok_rc(s, opd_client_release(s->c, h, s->n), "release of every handle");
  SOAK_COUNT(releases, 1);
}

/* ---- the episode ---- */

static const struct {
  void (*run)(lib_session *s);
  int weight;
} ops[] = {
    {op_upload, 14}, {op_download, 12}, {op_binary, 10}, {op_unary, 5},
    {op_sum, 5},     {op_mm, 4},        {op_softmax, 3}, {op_cat, 4},
    {op_copy, 4},    {op_view, 14},     {op_fill, 3},    {op_release, 8},
    {op_burst, 5},   {op_ping, 3},      {op_failing, 8}, {op_dispatch_state, 1},
};

void soak_lib_episode(soak_client *cl) {
  soak_rng *r = &cl->rng;
  lib_session s = {.cl = cl};
  const soak_daemon *d = cl->daemon;
  const char *url = soak_rng_chance(r, 50) ? d->tcp_url : d->unix_url;
  opd_client_options opt = {.client_name = "opd_soak"};
  if (soak_rng_chance(r, 20)) opt.max_in_flight = (uint32_t)soak_rng_range(r, 1, 8);
  cl->episode_kind = "library session";
  soak_doing(cl, "connect");
  int rc = opd_client_connect(url, &opt, &s.c);
  if (rc < 0) {
    soak_fail(cl, "connect %s: %s", url, opd_client_last_error());
    return;
  }
  int total = 0;
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) total += ops[i].weight;
  for (int64_t k = 0, n = soak_rng_range(r, 10, 150); k < n && !soak_client_done(cl); k++) {
    int pick_op = (int)soak_rng_range(r, 0, total - 1);
    size_t i = 0;
    while (pick_op >= ops[i].weight) pick_op -= ops[i++].weight;
    if (has_room(&s, 3, 0))
      ops[i].run(&s);
    else
      op_release(&s);
  }
  int ending = (int)soak_rng_range(r, 0, 9);
  opd_future *big = NULL;
  void *big_data = NULL;
  if (soak_stopped()) {
  } else if (ending < 4) {
    release_all(&s);
  } else if (ending < 7) {
    /* closed with every tensor held: the daemon releases them */
  } else if (ending < 9) {
    end_with_work(&s);
  } else { /* in the middle of an upload of 4-8 MiB */
    int64_t numel = soak_rng_range(r, 1 << 20, 2 << 20);
    if ((big_data = calloc((size_t)numel, 4)) &&
        opd_client_upload_async(s.c, OPD_FLOAT32, &numel, 1, big_data, (size_t)numel * 4, NULL,
                                NULL, NULL, &big) == 0)
      SOAK_COUNT(closed_mid_upload, 1);
  }
  soak_doing(cl, "close");
  opd_client_close(s.c);
  opd_future_free(big);
  free(big_data);
  for (size_t i = 0; i < s.n; i++) soak_drop(&s.t[i]);
  SOAK_COUNT(lib_sessions, 1);
}
