/* conformance.c: opd-conformance, the replay runner for ATen conformance fixtures recorded
 * from PyTorch 1.13 (format: tests/fixtures/conformance/FORMAT.md).
 *
 *   opd-conformance FIXTURE.json [--device cpu|meta|cuda] [--op aten::name.overload] [-v]
 *                   [--server tcp://HOST:PORT | unix:///PATH]
 *
 * Each case is one check: its arguments are built (tensors on the chosen device, strided
 * views of a base buffer where the fixture gives one; missing arguments take the schema's
 * defaults), the operator is called through the dispatcher, and the outcome is compared:
 * dtype and shape exactly, values within the recorded tolerances (CPU), views aliasing the
 * input the fixture names with its strides and offset, and error cases failing. On Meta
 * there are no values; error cases whose error depends on the data (integer division by
 * zero, an index out of range) are skipped there. Error classes and messages are compared
 * too and mismatches reported, but they do not fail a case (FORMAT.md calls that optional).
 * The last line is "N passed, M failed"; the exit status is 0 only when M is 0. With
 * --server the cases run against a daemon instead, through the client library
 * ([Note: Conformance over RPC]). With --device cuda the tensors are built on the CPU and
 * copied to GPU 0 (views are views of the copied base; over RPC they are uploaded to the
 * daemon's cuda:0), factories run on it, and results are copied back to be compared; without
 * a usable device (here, or in the daemon with --server) the run prints why and exits with 77
 * ("skipped", ctest's SKIP_RETURN_CODE).
 */
#include <assert.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opd/client.h"
#include "opd/cuda.h"
#include "opd/dispatcher.h"
#include "opd/kernels.h"
#include "opd/log.h"
#include "opd/tensor.h"

#include "conformance.h"

/* ---- building values ---- */

/* aten::_to_copy(t, device=device): t's values on another device (NULL with why set). */
static opd_tensor *copy_to(opd_tensor *t, opd_device device, char *why, size_t wlen) {
  static const opd_operator *op;
  if (!op) op = opd_find_schema("aten::_to_copy");
  opd_stack st;
  opd_stack_init(&st);
  opd_ivalue args[] = {
      opd_iv_tensor_borrow(t), opd_iv_none(),      opd_iv_none(), opd_iv_device(device),
      opd_iv_none(),           opd_iv_bool(false), opd_iv_none()};
  int rc = op ? 0 : OPD_ENOENT;
  for (size_t i = 0; rc == 0 && i < sizeof args / sizeof *args; i++)
    rc = opd_stack_push(&st, args[i]);
  if (rc == 0) rc = opd_call_boxed(op, &st);
  opd_tensor *r = NULL;
  if (rc == 0 && st.size == 1 && st.items[0].tag == OPD_IV_TENSOR)
    opd_tensor_retain(r = st.items[0].u.t);
  else
    snprintf(why, wlen, "cannot copy to the device: %s", opd_last_error());
  opd_stack_destroy(&st);
  return r;
}

/* A tensor from the fixture's encoding (contiguous, or a strided view of a base buffer). */
static opd_tensor *build_tensor(const runner *r, const json_t *v, char *why, size_t wlen) {
  opd_dtype dtype;
  if (opd_dtype_from_name(str(v, "dtype"), &dtype) != 0) {
    snprintf(why, wlen, "bad dtype '%s'", str(v, "dtype"));
    return NULL;
  }
  const json_t *base = json_object_get(v, "base");
  const json_t *data = json_object_get(base ? base : v, "data");
  int64_t base_shape[OPD_MAX_DIMS], shape[OPD_MAX_DIMS], strides[OPD_MAX_DIMS];
  int nb = int_array(json_object_get(base ? base : v, "shape"), base_shape, OPD_MAX_DIMS);
  int n = int_array(json_object_get(v, "shape"), shape, OPD_MAX_DIMS);
  if (nb < 0 || n < 0 || !json_is_array(data)) {
    snprintf(why, wlen, "malformed tensor");
    return NULL;
  }
  opd_tensor *b;
  bool cuda = r->device.type == OPD_DEVICE_CUDA; /* built on the CPU, then copied */
  if (opd_tensor_empty(base_shape, nb, dtype, cuda ? (opd_device){OPD_DEVICE_CPU, -1} : r->device,
                       &b) != 0) {
    snprintf(why, wlen, "cannot allocate: %s", opd_last_error());
    return NULL;
  }
  if ((int64_t)json_array_size(data) != b->numel) {
    snprintf(why, wlen, "data has %zu elements for %lld", json_array_size(data),
             (long long)b->numel);
    opd_tensor_release(b);
    return NULL;
  }
  void *p = opd_tensor_data(b);
  for (int64_t i = 0; p && i < b->numel; i++) {
    if (write_element(p, i, dtype, json_array_get(data, (size_t)i)) != 0) {
      snprintf(why, wlen, "bad element %lld", (long long)i);
      opd_tensor_release(b);
      return NULL;
    }
  }
  if (cuda) {
    opd_tensor *d = copy_to(b, r->device, why, wlen);
    opd_tensor_release(b);
    if (!(b = d)) return NULL;
  }
  if (!base) return b;
  opd_tensor *view = NULL;
  if (int_array(json_object_get(v, "strides"), strides, OPD_MAX_DIMS) != n ||
      opd_tensor_view_of(b, shape, strides, n,
                         json_integer_value(json_object_get(v, "storage_offset")), &view) != 0)
    snprintf(why, wlen, "bad view: %s", opd_last_error());
  opd_tensor_release(b);
  return view;
}

/* The IValue for one fixture value; false (with a reason) if it cannot be built. */
static bool build_value(const runner *r, const json_t *v, opd_ivalue *out, char *why, size_t wlen) {
  const char *type = str(v, "type");
  const json_t *val = json_object_get(v, "value");
  if (strcmp(type, "Tensor") == 0) {
    opd_tensor *t = build_tensor(r, v, why, wlen);
    if (!t) return false;
    *out = opd_iv_tensor_steal(t);
  } else if (strcmp(type, "Tensor[]") == 0) {
    size_t n = json_array_size(val);
    opd_tensor **ts = calloc(n ? n : 1, sizeof *ts);
    bool ok = ts != NULL;
    for (size_t i = 0; ok && i < n; i++)
      ok = (ts[i] = build_tensor(r, json_array_get(val, i), why, wlen));
    if (ok) ok = opd_iv_make_tensor_list(out, ts, n, false) == 0;
    for (size_t i = 0; ts && i < n; i++)
      if (ts[i]) opd_tensor_release(ts[i]);
    free(ts);
    return ok;
  } else if (strcmp(type, "int") == 0 && json_is_integer(val)) {
    *out = opd_iv_int(json_integer_value(val));
  } else if (strcmp(type, "float") == 0) {
    double d;
    if (parse_float(val, &d)) return snprintf(why, wlen, "bad float"), false;
    *out = opd_iv_double(d);
  } else if (strcmp(type, "bool") == 0 && json_is_boolean(val)) {
    *out = opd_iv_bool(json_is_true(val));
  } else if (strcmp(type, "str") == 0 && json_is_string(val)) {
    return opd_iv_make_string(out, json_string_value(val), json_string_length(val)) == 0;
  } else if (strcmp(type, "int[]") == 0) {
    int64_t xs[OPD_MAX_DIMS];
    int n = int_array(val, xs, OPD_MAX_DIMS);
    if (n < 0) return snprintf(why, wlen, "bad int[]"), false;
    return opd_iv_make_int_list(out, xs, (size_t)n) == 0;
  } else if (strcmp(type, "bool[]") == 0) {
    bool bs[OPD_MAX_DIMS];
    int n = bool_array(val, bs, OPD_MAX_DIMS);
    if (n < 0) return snprintf(why, wlen, "bad bool[]"), false;
    return opd_iv_make_bool_list(out, bs, (size_t)n) == 0;
  } else if (strcmp(type, "float[]") == 0) {
    double ds[OPD_MAX_DIMS];
    int n = float_array(val, ds, OPD_MAX_DIMS);
    if (n < 0) return snprintf(why, wlen, "bad float[]"), false;
    return opd_iv_make_double_list(out, ds, (size_t)n) == 0;
  } else if (strcmp(type, "Tensor?[]") == 0) {
    size_t n = json_array_size(val);
    opd_tensor **ts = calloc(n ? n : 1, sizeof *ts);
    bool ok = ts != NULL;
    for (size_t i = 0; ok && i < n; i++) {
      const json_t *item = json_array_get(val, i);
      if (strcmp(str(item, "type"), "None") != 0) ok = (ts[i] = build_tensor(r, item, why, wlen));
    }
    if (ok) ok = opd_iv_make_tensor_list(out, ts, n, true) == 0;
    for (size_t i = 0; ts && i < n; i++)
      if (ts[i]) opd_tensor_release(ts[i]);
    free(ts);
    return ok;
  } else if (strcmp(type, "ScalarType") == 0) {
    opd_dtype t;
    if (opd_dtype_from_name(json_string_value(val) ? json_string_value(val) : "", &t) != 0)
      return snprintf(why, wlen, "bad ScalarType"), false;
    *out = opd_iv_dtype(t);
  } else if (strcmp(type, "None") == 0) {
    *out = opd_iv_none();
  } else {
    snprintf(why, wlen, "unsupported value type '%s'", type);
    return false;
  }
  return true;
}

/* Pushes every schema argument: the case's value or the default. Returns false (stack
 * cleared) when an argument cannot be built. */
static bool push_arguments(const runner *r, const opd_schema *schema, const json_t *args,
                           opd_stack *st, opd_tensor **inputs, const char **input_names,
                           int *num_inputs, char *why, size_t wlen) {
  *num_inputs = 0;
  for (uint32_t i = 0; i < schema->num_args; i++) {
    const opd_argument *a = &schema->args[i];
    const json_t *given = NULL;
    size_t j;
    json_t *arg;
    json_array_foreach(args, j, arg) {
      if (strcmp(str(arg, "name"), a->name) == 0) given = json_object_get(arg, "value");
    }
    opd_ivalue v;
    if (given) {
      if (!build_value(r, given, &v, why, wlen)) return false;
    } else if (a->has_default) {
      if (opd_iv_copy(&v, &a->default_value) != 0) return false;
    } else {
      snprintf(why, wlen, "argument '%s' missing and without default", a->name);
      return false;
    }
    /* factories: run on the chosen device */
    if (a->type.kind == OPD_TYPE_DEVICE && v.tag == OPD_IV_NONE && r->device.type != OPD_DEVICE_CPU)
      v = opd_iv_device(r->device);
    if (v.tag == OPD_IV_TENSOR && *num_inputs < 16) {
      input_names[*num_inputs] = a->name;
      inputs[(*num_inputs)++] = v.u.t;
    }
    if (opd_stack_push(st, v) != 0) return false;
  }
  return true;
}

/* ---- comparing ---- */

/* Compares the logical values of t (a CUDA result copied back first) with the fixture's
 * row-major `data`. */
static bool compare_values(opd_tensor *t, const json_t *expect, char *why, size_t wlen) {
  if (opd_tensor_device(t).type == OPD_DEVICE_CUDA) {
    opd_tensor *h = copy_to(t, (opd_device){OPD_DEVICE_CPU, -1}, why, wlen);
    if (!h) return false;
    bool ok = compare_values(h, expect, why, wlen);
    opd_tensor_release(h);
    return ok;
  }
  return compare_buffer(opd_tensor_data(t), opd_tensor_dtype(t), opd_tensor_sizes(t),
                        opd_tensor_strides(t), t->ndim, t->numel, expect, why, wlen);
}

static bool compare_layout(const opd_tensor *t, const json_t *expect, opd_tensor **inputs,
                           const char **names, int n, char *why, size_t wlen) {
  const char *alias = json_string_value(json_object_get(expect, "alias_of"));
  for (int i = 0; i < n; i++) {
    bool shares = opd_tensor_shares_storage(t, inputs[i]);
    bool should = alias && strcmp(alias, names[i]) == 0;
    if (shares != should) {
      snprintf(why, wlen, "result %s storage with input '%s'", shares ? "shares" : "does not share",
               names[i]);
      return false;
    }
  }
  if (!alias || t->numel == 0) return true;
  int64_t strides[OPD_MAX_DIMS];
  if (int_array(json_object_get(expect, "strides"), strides, OPD_MAX_DIMS) != t->ndim) {
    snprintf(why, wlen, "fixture strides malformed");
    return false;
  }
  for (int d = 0; d < t->ndim; d++) {
    if (opd_tensor_sizes(t)[d] != 1 && opd_tensor_strides(t)[d] != strides[d]) {
      snprintf(why, wlen, "stride of dim %d: expected %lld, got %lld", d, (long long)strides[d],
               (long long)opd_tensor_strides(t)[d]);
      return false;
    }
  }
  int64_t offset = json_integer_value(json_object_get(expect, "storage_offset"));
  if (t->storage_offset != offset) {
    snprintf(why, wlen, "storage offset: expected %lld, got %lld", (long long)offset,
             (long long)t->storage_offset);
    return false;
  }
  return true;
}

/* One result tensor against one tensor outcome. */
static bool judge_tensor(const runner *r, opd_tensor *t, const json_t *expect, opd_tensor **inputs,
                         const char **names, int n, char *why, size_t wlen) {
  if (!judge_geometry(expect, opd_tensor_dtype(t), opd_tensor_sizes(t), t->ndim, why, wlen))
    return false;
  if (opd_tensor_device(t).type != r->device.type) {
    snprintf(why, wlen, "result on the wrong device");
    return false;
  }
  if (!compare_layout(t, expect, inputs, names, n, why, wlen)) return false;
  if (is_meta(r) || !outcome_has_values(expect)) return true;
  return compare_values(t, expect, why, wlen);
}

/* The call's results (the stack) against the outcome: one tensor, a tuple of tensors and
 * undefined ones, or a Tensor[] ([Note: Outcomes of several results] in conformance.h). */
static bool judge_results(const runner *r, const opd_stack *st, const json_t *expect,
                          opd_tensor **inputs, const char **names, int n, char *why, size_t wlen) {
  outcome_kind kind = outcome_kind_of(expect);
  const json_t *values = json_object_get(expect, "values");
  if (kind == OUTCOME_TENSOR) {
    if (st->size != 1 || st->items[0].tag != OPD_IV_TENSOR)
      return snprintf(why, wlen, "expected one Tensor result"), false;
    return judge_tensor(r, st->items[0].u.t, expect, inputs, names, n, why, wlen);
  }
  size_t count = json_array_size(values);
  opd_tensor *const *items = NULL;
  if (kind == OUTCOME_LIST) {
    if (st->size != 1 || st->items[0].tag != OPD_IV_TENSOR_LIST)
      return snprintf(why, wlen, "expected one Tensor[] result"), false;
    if (st->items[0].len != count)
      return snprintf(why, wlen, "expected %zu tensors, got %u", count, st->items[0].len), false;
    items = st->items[0].u.tensors;
  } else if (st->size != count) {
    return snprintf(why, wlen, "expected %zu results, got %u", count, (unsigned)st->size), false;
  }
  for (size_t i = 0; i < count; i++) {
    const json_t *e = json_array_get(values, i);
    const opd_ivalue *v = items ? NULL : &st->items[i];
    opd_tensor *t = items ? items[i] : (v->tag == OPD_IV_TENSOR ? v->u.t : NULL);
    if (strcmp(str(e, "type"), "None") == 0) {
      if (t) return snprintf(why, wlen, "result %zu: expected an undefined tensor", i), false;
      continue;
    }
    if (!t) return snprintf(why, wlen, "result %zu: expected a Tensor", i), false;
    char sub[400];
    if (!judge_tensor(r, t, e, inputs, names, n, sub, sizeof sub))
      return snprintf(why, wlen, "result %zu: %s", i, sub), false;
  }
  return true;
}

/* Whether the case carries `tag` (a result whose shape depends on the data, such as
 * nonzero's, is tagged "data_dependent": a Meta run cannot compute it). */
static bool tagged(const json_t *c, const char *tag) {
  size_t i;
  json_t *t;
  json_array_foreach(json_object_get(c, "tags"), i, t) {
    if (json_is_string(t) && strcmp(json_string_value(t), tag) == 0) return true;
  }
  return false;
}

/* ---- one case ---- */

static void run_case(runner *r, const json_t *c) {
  const char *id = str(c, "id"), *opname = str(c, "op");
  const json_t *expect = json_object_get(c, "expect");
  if (r->only_op && strcmp(r->only_op, opname) != 0) return;
  bool expect_error = json_object_get(expect, "error") != NULL;
  if (is_meta(r) && (expect_error ? data_dependent(expect) : tagged(c, "data_dependent"))) {
    r->skipped++;
    return;
  }
  char why[512] = "";
  const opd_operator *op = opd_find_schema(opname);
  if (!op) {
    report(r, false, id, opd_last_error());
    return;
  }
  opd_stack st;
  opd_stack_init(&st);
  opd_tensor *inputs[16];
  const char *names[16];
  int n = 0;
  if (!push_arguments(r, opd_op_schema(op), json_object_get(c, "args"), &st, inputs, names, &n, why,
                      sizeof why)) {
    opd_stack_destroy(&st);
    report(r, false, id, why[0] ? why : "cannot build arguments");
    return;
  }
  /* the inputs stay alive in `kept` while the call consumes the stack */
  opd_tensor *kept[16];
  for (int i = 0; i < n; i++) opd_tensor_retain(kept[i] = inputs[i]);
  int rc = opd_call_boxed(op, &st);
  bool ok;
  if (expect_error) {
    ok = judge_error(r, id, expect, rc, opd_last_error(), why, sizeof why);
  } else if (rc != 0) {
    snprintf(why, sizeof why, "%s: %s", opd_err_name(rc), opd_last_error());
    ok = false;
  } else {
    ok = judge_results(r, &st, expect, kept, names, n, why, sizeof why);
  }
  for (int i = 0; i < n; i++) opd_tensor_release(kept[i]);
  opd_stack_destroy(&st);
  report(r, ok, id, why);
}

int main(int argc, char **argv) {
  runner r = {.device = {OPD_DEVICE_CPU, -1}};
  const char *path = NULL, *server = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      const char *d = argv[++i];
      if (strcmp(d, "cpu") == 0)
        r.device.type = OPD_DEVICE_CPU;
      else if (strcmp(d, "meta") == 0)
        r.device.type = OPD_DEVICE_META;
      else if (strcmp(d, "cuda") == 0)
        r.device = (opd_device){OPD_DEVICE_CUDA, 0};
      else {
        fprintf(stderr, "opd-conformance: unknown device '%s' (cpu, meta or cuda)\n", d);
        return 2;
      }
    } else if (strcmp(argv[i], "--op") == 0 && i + 1 < argc) {
      r.only_op = argv[++i];
    } else if (strcmp(argv[i], "--server") == 0 && i + 1 < argc) {
      server = argv[++i];
    } else if (strcmp(argv[i], "-v") == 0) {
      r.verbose = true;
    } else if (!path && argv[i][0] != '-') {
      path = argv[i];
    } else {
      path = NULL;
      break;
    }
  }
  if (!path) {
    fprintf(stderr, "usage: opd-conformance FIXTURE.json [--device cpu|meta|cuda] [--op NAME] [-v] "
                    "[--server URL]\n");
    return 2;
  }
  if (server && r.device.type == OPD_DEVICE_META) {
    fprintf(stderr, "opd-conformance: --server runs on the CPU or CUDA (Meta tensors have no "
                    "bytes to download)\n");
    return 2;
  }
  json_error_t err;
  json_t *fx = json_load_file(path, 0, &err);
  if (!fx || !json_is_array(json_object_get(fx, "cases"))) {
    fprintf(stderr, "opd-conformance: %s: %s\n", path, fx ? "not a conformance fixture" : err.text);
    json_decref(fx);
    return 2;
  }
  opd_log_set_level(OPD_LOG_ERROR);
  if (server) {
    int rc = opd_client_connect(server, &(opd_client_options){.client_name = "opd-conformance"},
                                &r.client);
    if (rc != 0) {
      fprintf(stderr, "opd-conformance: %s\n", opd_client_last_error());
      json_decref(fx);
      return 1;
    }
    char why[512];
    if (r.device.type == OPD_DEVICE_CUDA && !rpc_device_usable(&r, why, sizeof why)) {
      printf("opd-conformance: skipped: %s\n", why);
      opd_client_close(r.client);
      json_decref(fx);
      return 77;
    }
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(fx, "cases"), i, c) {
      if (!rpc_run_case(&r, json_object_get(fx, "schemas"), c)) break;
    }
    bool lost = !opd_client_connected(r.client);
    opd_client_close(r.client);
    json_decref(fx);
    printf("server %s, device %s: %ld layout checks not made over RPC (empty results, dtypes "
           "without an exact count), %ld error messages differ from PyTorch's\n",
           server, r.device.type == OPD_DEVICE_CUDA ? "cuda" : "cpu", r.layout_unchecked,
           r.message_mismatches);
    printf("%ld passed, %ld failed%s\n", r.passed, r.failed, lost ? " (connection lost)" : "");
    return r.failed || lost ? 1 : 0;
  }
  if (opd_kernels_register() != 0) {
    fprintf(stderr, "opd-conformance: registering kernels failed: %s\n", opd_last_error());
    json_decref(fx);
    return 1;
  }
  if (r.device.type == OPD_DEVICE_CUDA) {
    int n = opd_cuda_init();
    if (n <= 0) {
      printf("opd-conformance: skipped: CUDA unavailable: %s\n",
             n < 0 ? opd_last_error() : opd_cuda_unavailable_reason());
      json_decref(fx);
      return 77;
    }
  }
  size_t i;
  json_t *c;
  json_array_foreach(json_object_get(fx, "cases"), i, c) run_case(&r, c);
  json_decref(fx);
  printf("device %s: %ld skipped (errors only data reveals), %ld error messages differ from "
         "PyTorch's\n",
         is_meta(&r)                        ? "meta"
         : r.device.type == OPD_DEVICE_CUDA ? "cuda"
                                            : "cpu",
         r.skipped, r.message_mismatches);
  printf("%ld passed, %ld failed\n", r.passed, r.failed);
  return r.failed ? 1 : 0;
}
