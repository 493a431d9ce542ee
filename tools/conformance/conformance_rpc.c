/* conformance_rpc.c: opd-conformance --server URL, the replay through a running daemon
 * (see [Note: Conformance over RPC]). */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"
#include "opd/error.h"
#include "opd/schema.h"

/* ---- replaying over RPC (--server URL) ----
 *
 * [Note: Conformance over RPC]
 * The same cases run against a daemon through the client library: each input tensor is
 * uploaded (a strided one as its base, then viewed with aten::as_strided), every schema
 * argument is sent (the case's value, else the schema's default), the operator is called
 * by name with the boxed call, and the result is downloaded (contiguous) for the dtype,
 * shape and value checks. The layout checks need what a download does not tell: whether the
 * result shares storage with an input, and its strides and storage offset. They are probed
 * through the daemon: each input's contiguous base is overwritten (aten::copy_) with
 * 1, 2, 3, ... and then 0, 1, 2, ...; a result whose every element drops by exactly 1 shares
 * the base's storage, and its values under the second fill are their storage offsets: element
 * 0 gives the storage offset and the step along each dimension its stride. Not probed: an
 * empty result (no element to see); a bool base (sharing only, with fill_ true then false, no
 * strides); a base whose dtype cannot count its elements exactly (float16, bfloat16, or
 * more than 127 int8 / 255 uint8 / 2^24 float32 elements). Those checks are skipped and
 * counted.
 * With --device cuda every tensor is uploaded to the daemon's cuda:0 (the probes' counts
 * too) and factories get Device cuda:0, as in process. Meta tensors have no bytes to
 * download, so --server runs on the CPU or CUDA.
 */

typedef struct rpc_input {
  const char *name;
  opd_client_tensor base; /* contiguous, the storage the fixture's strides refer to */
  opd_dtype dtype;
  int64_t numel;
  int64_t shape[OPD_MAX_DIMS];
  int ndim;
} rpc_input;

/* What one case made in the daemon and on the heap. */
typedef struct rpc_case {
  opd_client_tensor *handles;
  size_t num_handles, cap_handles;
  void **blocks;
  size_t num_blocks, cap_blocks;
  rpc_input inputs[16];
  int num_inputs;
} rpc_case;

static bool rpc_keep(rpc_case *rc, opd_client_tensor h) {
  if (rc->num_handles == rc->cap_handles) {
    size_t cap = rc->cap_handles ? 2 * rc->cap_handles : 16;
    opd_client_tensor *p = realloc(rc->handles, cap * sizeof *p);
    if (!p) return false;
    rc->handles = p;
    rc->cap_handles = cap;
  }
  rc->handles[rc->num_handles++] = h;
  return true;
}

/* Allocates a block freed with the case. */
static void *rpc_alloc(rpc_case *rc, size_t n) {
  if (rc->num_blocks == rc->cap_blocks) {
    size_t cap = rc->cap_blocks ? 2 * rc->cap_blocks : 16;
    void **p = realloc(rc->blocks, cap * sizeof *p);
    if (!p) return NULL;
    rc->blocks = p;
    rc->cap_blocks = cap;
  }
  void *b = calloc(1, n ? n : 1);
  if (b) rc->blocks[rc->num_blocks++] = b;
  return b;
}

static void rpc_finish_case(opd_client *c, rpc_case *rc) {
  if (rc->num_handles) opd_client_release(c, rc->handles, rc->num_handles);
  free(rc->handles);
  for (size_t i = 0; i < rc->num_blocks; i++) free(rc->blocks[i]);
  free(rc->blocks);
}

/* Where the case's tensors are uploaded: NULL for the CPU, else the runner's device. */
static const opd_client_device *upload_device(const runner *r, opd_client_device *buf) {
  if (r->device.type == OPD_DEVICE_CPU) return NULL;
  *buf = (opd_client_device){r->device.type, r->device.index};
  return buf;
}

bool rpc_device_usable(runner *r, char *why, size_t wlen) {
  const float one = 1;
  const int64_t shape[1] = {1};
  opd_client_device dev;
  opd_client_tensor t;
  if (opd_client_upload(r->client, OPD_FLOAT32, shape, 1, &one, sizeof one, upload_device(r, &dev),
                        &t) != 0) {
    snprintf(why, wlen, "the daemon cannot make a tensor on the device: %s",
             opd_client_last_error());
    return false;
  }
  opd_client_release(r->client, &t, 1);
  return true;
}

static int64_t shape_numel(const int64_t *shape, int n) {
  int64_t numel = 1;
  for (int i = 0; i < n; i++) {
    if (shape[i] < 0 || (shape[i] && numel > INT64_MAX / shape[i])) return -1;
    numel *= shape[i];
  }
  return numel;
}

/* Uploads a fixture tensor: its handle (0 with a reason on failure); `in` (may be NULL)
 * gets its base. */
static opd_client_tensor rpc_tensor(const runner *r, rpc_case *rc, const json_t *v, rpc_input *in,
                                    char *why, size_t wlen) {
  opd_dtype dtype;
  if (opd_dtype_from_name(str(v, "dtype"), &dtype) != 0) {
    snprintf(why, wlen, "bad dtype '%s'", str(v, "dtype"));
    return 0;
  }
  const json_t *base = json_object_get(v, "base");
  const json_t *data = json_object_get(base ? base : v, "data");
  int64_t base_shape[OPD_MAX_DIMS], shape[OPD_MAX_DIMS], strides[OPD_MAX_DIMS];
  int nb = int_array(json_object_get(base ? base : v, "shape"), base_shape, OPD_MAX_DIMS);
  int n = int_array(json_object_get(v, "shape"), shape, OPD_MAX_DIMS);
  int64_t numel = nb < 0 ? -1 : shape_numel(base_shape, nb);
  size_t esize = opd_dtype_size(dtype);
  if (n < 0 || numel < 0 || !json_is_array(data) || (uint64_t)numel > SIZE_MAX / esize) {
    snprintf(why, wlen, "malformed tensor");
    return 0;
  }
  if ((int64_t)json_array_size(data) != numel) {
    snprintf(why, wlen, "data has %zu elements for %lld", json_array_size(data), (long long)numel);
    return 0;
  }
  void *bytes = rpc_alloc(rc, (size_t)numel * esize);
  if (!bytes) return snprintf(why, wlen, "out of memory"), 0;
  for (int64_t i = 0; i < numel; i++) {
    if (write_element(bytes, i, dtype, json_array_get(data, (size_t)i)) != 0) {
      snprintf(why, wlen, "bad element %lld", (long long)i);
      return 0;
    }
  }
  opd_client_tensor b, view;
  opd_client_device dev;
  int err = opd_client_upload(r->client, dtype, base_shape, nb, bytes, (size_t)numel * esize,
                              upload_device(r, &dev), &b);
  if (err != 0 || !rpc_keep(rc, b)) {
    snprintf(why, wlen, "upload: %s", opd_client_last_error());
    return 0;
  }
  if (in) {
    *in = (rpc_input){.base = b, .dtype = dtype, .numel = numel, .ndim = nb};
    memcpy(in->shape, base_shape, (size_t)nb * sizeof *base_shape);
  }
  if (!base) return b;
  if (int_array(json_object_get(v, "strides"), strides, OPD_MAX_DIMS) != n) {
    snprintf(why, wlen, "bad view strides");
    return 0;
  }
  int64_t offset = json_integer_value(json_object_get(v, "storage_offset"));
  if (opd_as_strided(r->client, b, shape, (size_t)n, strides, (size_t)n, &offset, &view) != 0 ||
      !rpc_keep(rc, view)) {
    snprintf(why, wlen, "as_strided: %s", opd_client_last_error());
    return 0;
  }
  return view;
}

/* The client value for one fixture value; false (with a reason) if it cannot be built. */
static bool rpc_value(const runner *r, rpc_case *rc, const json_t *v, opd_client_value *out,
                      rpc_input *in, char *why, size_t wlen) {
  const char *type = str(v, "type");
  const json_t *val = json_object_get(v, "value");
  if (strcmp(type, "Tensor") == 0) {
    opd_client_tensor t = rpc_tensor(r, rc, v, in, why, wlen);
    *out = opd_cv_tensor(t);
    return t != 0;
  }
  if (strcmp(type, "Tensor[]") == 0) {
    size_t n = json_array_size(val);
    opd_client_tensor *ts = rpc_alloc(rc, n * sizeof *ts);
    if (!ts) return snprintf(why, wlen, "out of memory"), false;
    for (size_t i = 0; i < n; i++)
      if (!(ts[i] = rpc_tensor(r, rc, json_array_get(val, i), NULL, why, wlen))) return false;
    *out = opd_cv_tensors(ts, n);
  } else if (strcmp(type, "int") == 0 && json_is_integer(val)) {
    *out = opd_cv_int(json_integer_value(val));
  } else if (strcmp(type, "float") == 0) {
    double d;
    if (parse_float(val, &d)) return snprintf(why, wlen, "bad float"), false;
    *out = opd_cv_double(d);
  } else if (strcmp(type, "bool") == 0 && json_is_boolean(val)) {
    *out = opd_cv_bool(json_is_true(val));
  } else if (strcmp(type, "str") == 0 && json_is_string(val)) {
    *out = opd_cv_str(json_string_value(val));
  } else if (strcmp(type, "int[]") == 0) {
    int64_t *xs = rpc_alloc(rc, OPD_MAX_DIMS * sizeof *xs);
    int n = xs ? int_array(val, xs, OPD_MAX_DIMS) : -1;
    if (n < 0) return snprintf(why, wlen, "bad int[]"), false;
    *out = opd_cv_ints(xs, (size_t)n);
  } else if (strcmp(type, "bool[]") == 0) {
    bool *bs = rpc_alloc(rc, OPD_MAX_DIMS * sizeof *bs);
    int n = bs ? bool_array(val, bs, OPD_MAX_DIMS) : -1;
    if (n < 0) return snprintf(why, wlen, "bad bool[]"), false;
    *out = opd_cv_bools(bs, (size_t)n);
  } else if (strcmp(type, "float[]") == 0) {
    double *ds = rpc_alloc(rc, OPD_MAX_DIMS * sizeof *ds);
    int n = ds ? float_array(val, ds, OPD_MAX_DIMS) : -1;
    if (n < 0) return snprintf(why, wlen, "bad float[]"), false;
    *out = opd_cv_doubles(ds, (size_t)n);
  } else if (strcmp(type, "Tensor?[]") == 0) {
    size_t n = json_array_size(val);
    opd_client_tensor *ts = rpc_alloc(rc, (n ? n : 1) * sizeof *ts);
    if (!ts) return snprintf(why, wlen, "out of memory"), false;
    for (size_t i = 0; i < n; i++) {
      const json_t *item = json_array_get(val, i);
      ts[i] = 0; /* handle 0 is None */
      if (strcmp(str(item, "type"), "None") != 0 &&
          !(ts[i] = rpc_tensor(r, rc, item, NULL, why, wlen)))
        return false;
    }
    *out = opd_cv_opt_tensors(ts, n);
  } else if (strcmp(type, "ScalarType") == 0) {
    opd_dtype t;
    if (opd_dtype_from_name(json_string_value(val) ? json_string_value(val) : "", &t) != 0)
      return snprintf(why, wlen, "bad ScalarType"), false;
    *out = opd_cv_dtype(t);
  } else if (strcmp(type, "None") == 0) {
    *out = opd_cv_none();
  } else {
    snprintf(why, wlen, "unsupported value type '%s'", type);
    return false;
  }
  return true;
}

/* A schema default as a client value (pointing into the schema). */
static bool rpc_default(const opd_ivalue *d, opd_client_value *out) {
  switch (d->tag) {
  case OPD_IV_NONE: *out = opd_cv_none(); return true;
  case OPD_IV_BOOL: *out = opd_cv_bool(d->u.b); return true;
  case OPD_IV_INT: *out = opd_cv_int(d->u.i); return true;
  case OPD_IV_DOUBLE: *out = opd_cv_double(d->u.d); return true;
  case OPD_IV_STRING: *out = opd_cv_str(d->u.s); return true;
  case OPD_IV_INT_LIST: *out = opd_cv_ints(d->u.ints, d->len); return true;
  case OPD_IV_DOUBLE_LIST: *out = opd_cv_doubles(d->u.doubles, d->len); return true;
  case OPD_IV_BOOL_LIST: *out = opd_cv_bools(d->u.bools, d->len); return true;
  case OPD_IV_DTYPE: *out = opd_cv_dtype((int)d->u.dtype); return true;
  case OPD_IV_DEVICE: *out = opd_cv_device(d->u.device.type, d->u.device.index); return true;
  default: return false;
  }
}

/* Every schema argument: the case's value or the default. */
static bool rpc_arguments(const runner *r, rpc_case *rc, const opd_schema *schema,
                          const json_t *args, opd_client_value *values, char *why, size_t wlen) {
  for (uint32_t i = 0; i < schema->num_args; i++) {
    const opd_argument *a = &schema->args[i];
    const json_t *given = NULL;
    size_t j;
    json_t *arg;
    json_array_foreach(args, j, arg) {
      if (strcmp(str(arg, "name"), a->name) == 0) given = json_object_get(arg, "value");
    }
    rpc_input in = {0};
    bool single_tensor = given && strcmp(str(given, "type"), "Tensor") == 0;
    if (given) {
      if (!rpc_value(r, rc, given, &values[i], single_tensor ? &in : NULL, why, wlen)) return false;
    } else if (!a->has_default || !rpc_default(&a->default_value, &values[i])) {
      snprintf(why, wlen, "argument '%s' missing and without default", a->name);
      return false;
    }
    /* factories: run on the chosen device */
    if (a->type.kind == OPD_TYPE_DEVICE && values[i].kind == OPD_CV_NONE &&
        r->device.type != OPD_DEVICE_CPU)
      values[i] = opd_cv_device(r->device.type, r->device.index);
    if (single_tensor && rc->num_inputs < 16) {
      in.name = a->name;
      rc->inputs[rc->num_inputs++] = in;
    }
  }
  return true;
}

/* Fills buf (n elements of dtype t) with start, start + 1, ... */
static void write_count(void *buf, int64_t n, opd_dtype t, int64_t start) {
  for (int64_t i = 0; i < n; i++) {
    int64_t v = start + i;
    switch (t) {
    case OPD_FLOAT32: ((float *)buf)[i] = (float)v; break;
    case OPD_FLOAT64: ((double *)buf)[i] = (double)v; break;
    case OPD_INT64: ((int64_t *)buf)[i] = v; break;
    case OPD_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case OPD_INT16: ((int16_t *)buf)[i] = (int16_t)v; break;
    case OPD_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case OPD_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    default: assert(!"a dtype without an exact count"); break;
    }
  }
}

/* Whether dtype t holds the integers 0..n exactly. */
static bool counts_exactly(opd_dtype t, int64_t n) {
  switch (t) {
  case OPD_FLOAT32: return n <= (1 << 24);
  case OPD_FLOAT64: return n <= (INT64_C(1) << 53);
  case OPD_INT64:
  case OPD_INT32: return n <= INT32_MAX;
  case OPD_INT16: return n <= INT16_MAX;
  case OPD_INT8: return n <= INT8_MAX;
  case OPD_UINT8: return n <= UINT8_MAX;
  default: return false;
  }
}

static double element(const void *buf, opd_dtype t, int64_t i) {
  const char *p = (const char *)buf + i * (int64_t)opd_dtype_size(t);
  return opd_dtype_is_floating(t) ? read_double(p, t) : (double)read_int(p, t);
}

/* The result's elements (contiguous) after the base was overwritten: 0, or a code. */
static int rpc_refill_and_read(runner *r, rpc_case *rc, const rpc_input *in, opd_client_tensor res,
                               int64_t start, void *out, size_t nbytes) {
  opd_client_tensor self;
  int err;
  if (in->dtype == OPD_BOOL) {
    err = opd_fill_(r->client, in->base, opd_cs_bool(start != 0), &self);
  } else {
    size_t bytes = (size_t)in->numel * opd_dtype_size(in->dtype);
    void *count = rpc_alloc(rc, bytes);
    opd_client_tensor src;
    if (!count) return OPD_ENOMEM;
    write_count(count, in->numel, in->dtype, start);
    opd_client_device dev;
    err = opd_client_upload(r->client, in->dtype, in->shape, in->ndim, count, bytes,
                            upload_device(r, &dev), &src);
    if (err == 0 && !rpc_keep(rc, src)) err = OPD_ENOMEM;
    if (err == 0) err = opd_copy_(r->client, in->base, src, NULL, &self);
  }
  if (err == 0 && !rpc_keep(rc, self)) err = OPD_ENOMEM;
  if (err == 0) err = opd_client_download(r->client, res, out, nbytes, NULL);
  return err;
}

typedef enum probe_result { PROBE_APART, PROBE_SHARED, PROBE_UNKNOWN } probe_result;

/* Whether result `res` (numel elements, described by info) shares the storage of in's base;
 * when the base's dtype counts exactly, *measured is set and *offset and strides get the
 * result's layout in that storage. Overwrites the base. */
static probe_result rpc_probe(runner *r, rpc_case *rc, const rpc_input *in, opd_client_tensor res,
                              const opd_client_tensor_info *info, int64_t numel, int64_t *offset,
                              int64_t *strides, bool *measured) {
  *measured = false;
  if (info->dtype != (int)in->dtype) return PROBE_APART; /* views keep their dtype */
  bool counting = counts_exactly(in->dtype, in->numel + 1);
  if (!counting && in->dtype != OPD_BOOL) return PROBE_UNKNOWN;
  size_t nbytes = (size_t)info->nbytes;
  void *first = rpc_alloc(rc, nbytes), *second = rpc_alloc(rc, nbytes);
  if (!first || !second || rpc_refill_and_read(r, rc, in, res, 1, first, nbytes) != 0 ||
      rpc_refill_and_read(r, rc, in, res, 0, second, nbytes) != 0)
    return PROBE_UNKNOWN;
  /* bool: 1 then 0; counting: 1, 2, ... then 0, 1, ...: a shared element drops by exactly 1 */
  for (int64_t i = 0; i < numel; i++)
    if (element(first, in->dtype, i) - element(second, in->dtype, i) != 1) return PROBE_APART;
  if (counting) {
    *offset = (int64_t)element(second, in->dtype, 0);
    int64_t step = 1;
    for (int d = info->ndim - 1; d >= 0; d--) {
      strides[d] = info->shape[d] > 1 ? (int64_t)element(second, in->dtype, step) - *offset : 0;
      step *= info->shape[d];
    }
    *measured = true;
  }
  return PROBE_SHARED;
}

/* The layout checks of compare_layout, over RPC. */
static bool rpc_compare_layout(runner *r, rpc_case *rc, opd_client_tensor res,
                               const opd_client_tensor_info *info, const json_t *expect, char *why,
                               size_t wlen) {
  const char *alias = json_string_value(json_object_get(expect, "alias_of"));
  int64_t numel = shape_numel(info->shape, info->ndim);
  if (numel == 0) {
    r->layout_unchecked++;
    return true;
  }
  int64_t offset = 0, strides[OPD_MAX_DIMS];
  bool measured = false, aliased_measured = false;
  int64_t alias_offset = 0, alias_strides[OPD_MAX_DIMS];
  for (int i = 0; i < rc->num_inputs; i++) {
    probe_result p =
        rpc_probe(r, rc, &rc->inputs[i], res, info, numel, &offset, strides, &measured);
    if (p == PROBE_UNKNOWN) {
      r->layout_unchecked++;
      return true;
    }
    bool should = alias && strcmp(alias, rc->inputs[i].name) == 0;
    if ((p == PROBE_SHARED) != should) {
      snprintf(why, wlen, "result %s storage with input '%s'",
               p == PROBE_SHARED ? "shares" : "does not share", rc->inputs[i].name);
      return false;
    }
    if (should && measured) {
      aliased_measured = true;
      alias_offset = offset;
      memcpy(alias_strides, strides, (size_t)info->ndim * sizeof *strides);
    }
  }
  if (!alias) return true;
  if (!aliased_measured) {
    r->layout_unchecked++;
    return true;
  }
  int64_t want[OPD_MAX_DIMS];
  if (int_array(json_object_get(expect, "strides"), want, OPD_MAX_DIMS) != info->ndim) {
    snprintf(why, wlen, "fixture strides malformed");
    return false;
  }
  for (int d = 0; d < info->ndim; d++) {
    if (info->shape[d] != 1 && alias_strides[d] != want[d]) {
      snprintf(why, wlen, "stride of dim %d: expected %lld, got %lld", d, (long long)want[d],
               (long long)alias_strides[d]);
      return false;
    }
  }
  int64_t want_offset = json_integer_value(json_object_get(expect, "storage_offset"));
  if (alias_offset != want_offset) {
    snprintf(why, wlen, "storage offset: expected %lld, got %lld", (long long)want_offset,
             (long long)alias_offset);
    return false;
  }
  return true;
}

/* Downloads the result and checks it like the in-process path: its geometry and values
 * (`values`), then its layout (`layout`), which the probes find by overwriting the inputs:
 * the results of one call are all checked for values before any is probed. */
static bool rpc_check_result(runner *r, rpc_case *rc, opd_client_tensor res, const json_t *expect,
                             bool values, bool layout, char *why, size_t wlen) {
  opd_client_tensor_info info;
  void *data = NULL;
  if (opd_client_download_alloc(r->client, res, &info, &data) != 0) {
    snprintf(why, wlen, "download: %s", opd_client_last_error());
    return false;
  }
  int64_t strides[OPD_MAX_DIMS], numel = shape_numel(info.shape, info.ndim), step = 1;
  for (int d = info.ndim - 1; d >= 0; d--) {
    strides[d] = step;
    step *= info.shape[d];
  }
  bool ok =
      !values || (judge_geometry(expect, (opd_dtype)info.dtype, info.shape, info.ndim, why, wlen) &&
                  (!outcome_has_values(expect) ||
                   compare_buffer(data, (opd_dtype)info.dtype, info.shape, strides, info.ndim,
                                  numel, expect, why, wlen)));
  free(data);
  return ok && (!layout || rpc_compare_layout(r, rc, res, &info, expect, why, wlen));
}

/* The call's results against the outcome ([Note: Outcomes of several results]). */
static bool rpc_check_results(runner *r, rpc_case *rc, const opd_client_value *res, size_t n,
                              const json_t *expect, char *why, size_t wlen) {
  outcome_kind kind = outcome_kind_of(expect);
  const json_t *values = json_object_get(expect, "values");
  if (kind == OUTCOME_TENSOR) {
    if (n != 1 || res[0].kind != OPD_CV_TENSOR)
      return snprintf(why, wlen, "expected one Tensor result"), false;
    return rpc_check_result(r, rc, res[0].u.tensor, expect, true, true, why, wlen);
  }
  size_t count = json_array_size(values);
  const opd_client_tensor *list = NULL;
  if (kind == OUTCOME_LIST) {
    if (n != 1 || res[0].kind != OPD_CV_TENSORS)
      return snprintf(why, wlen, "expected one Tensor[] result"), false;
    if (res[0].len != count)
      return snprintf(why, wlen, "expected %zu tensors, got %zu", count, (size_t)res[0].len), false;
    list = res[0].u.tensors;
  } else if (n != count) {
    return snprintf(why, wlen, "expected %zu results, got %zu", count, n), false;
  }
  for (int pass = 0; pass < 2; pass++) { /* values first, then the layout probes */
    for (size_t i = 0; i < count; i++) {
      const json_t *e = json_array_get(values, i);
      opd_client_tensor t = list ? list[i] : (res[i].kind == OPD_CV_TENSOR ? res[i].u.tensor : 0);
      if (strcmp(str(e, "type"), "None") == 0) {
        if (t) return snprintf(why, wlen, "result %zu: expected an undefined tensor", i), false;
        continue;
      }
      if (!t) return snprintf(why, wlen, "result %zu: expected a Tensor", i), false;
      char sub[400];
      if (!rpc_check_result(r, rc, t, e, pass == 0, pass == 1, sub, sizeof sub))
        return snprintf(why, wlen, "result %zu: %s", i, sub), false;
    }
  }
  return true;
}

/* One case over RPC; false when the connection is lost (the run stops). */
bool rpc_run_case(runner *r, const json_t *schemas, const json_t *c) {
  const char *id = str(c, "id"), *opname = str(c, "op");
  const json_t *expect = json_object_get(c, "expect");
  if (r->only_op && strcmp(r->only_op, opname) != 0) return true;
  char why[512] = "";
  opd_schema *schema = NULL;
  const char *text = json_string_value(json_object_get(schemas, opname));
  if (!text || opd_schema_parse(text, &schema) != 0) {
    snprintf(why, sizeof why, "no parsable schema for %s in the fixture: %s", opname,
             text ? opd_last_error() : "missing");
    report(r, false, id, why);
    return true;
  }
  rpc_case rc = {0};
  opd_client_value *values = rpc_alloc(&rc, (schema->num_args + 1) * sizeof *values);
  bool ok =
      values && rpc_arguments(r, &rc, schema, json_object_get(c, "args"), values, why, sizeof why);
  opd_future *f = NULL;
  int err =
      ok ? opd_client_call_async(r->client, opname, values, schema->num_args, NULL, NULL, &f) : 0;
  if (!ok) {
    if (!why[0]) snprintf(why, sizeof why, "cannot build arguments");
  } else if (err == 0) {
    err = opd_future_wait(f);
    size_t n;
    const opd_client_value *res = opd_future_results(f, &n);
    for (size_t i = 0; err == 0 && i < n; i++)
      if (res[i].kind == OPD_CV_TENSOR) {
        rpc_keep(&rc, res[i].u.tensor);
      } else if (res[i].kind == OPD_CV_TENSORS) {
        for (size_t k = 0; k < res[i].len; k++) rpc_keep(&rc, res[i].u.tensors[k]);
      }
    if (json_object_get(expect, "error")) {
      ok = judge_error(r, id, expect, err, opd_future_error(f), why, sizeof why);
    } else if (err != 0) {
      snprintf(why, sizeof why, "%s: %s", opd_err_name(err), opd_future_error(f));
      ok = false;
    } else {
      ok = rpc_check_results(r, &rc, res, n, expect, why, sizeof why);
    }
  } else {
    snprintf(why, sizeof why, "call: %s", opd_client_last_error());
    ok = false;
  }
  opd_future_free(f);
  opd_schema_free(schema);
  rpc_finish_case(r->client, &rc);
  report(r, ok, id, why);
  if (!opd_client_connected(r->client)) {
    fprintf(stderr, "opd-conformance: the connection to the daemon was lost: %s\n",
            opd_client_last_error());
    return false;
  }
  return true;
}
