/* test_plugin.c: the plugin API (opd/library.h) with the example plugin
 * kernels/examples/scaled_add.c, loaded with dlopen as the daemon loads plugins: its
 * registrations carry the plugin's provenance and are reported to the loader, the CPU
 * kernel and the CompositeImplicitAutograd kernel (on Meta) compute self + alpha * other,
 * a second load fails on the second def and leaves nothing behind, and after removing its
 * registrations the plugin unmaps cleanly.
 */
#include <check.h>
#include <dlfcn.h>
#include <jansson.h>
#include <string.h>

#include "opd/allocator.h"
#include "opd/introspect.h"
#include "opd/kernels.h"
#include "opd/library.h"
#include "opd/tensor.h"

Suite *opd_test_plugin_suite(void);

#ifndef OPD_EXAMPLE_PLUGIN
#error "OPD_EXAMPLE_PLUGIN (the path of scaled_add.so) must be defined"
#endif

typedef struct recorded {
  opd_reg_id ids[16];
  int n;
} recorded;

static void record(void *arg, opd_reg_id id) {
  recorded *r = arg;
  ck_assert_int_lt(r->n, 16);
  r->ids[r->n++] = id;
}

static void remove_all(recorded *r) {
  while (r->n > 0) ck_assert_int_eq(opd_deregister(r->ids[--r->n]), 0);
}

static void *load(recorded *r, int *rc) {
  void *h = dlopen(OPD_EXAMPLE_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  ck_assert_msg(h != NULL, "dlopen: %s", dlerror());
  opd_plugin_init_fn init = (opd_plugin_init_fn)dlsym(h, OPD_PLUGIN_INIT_SYMBOL);
  ck_assert_ptr_nonnull(init);
  opd_plugin_host host = {"plugin scaled_add.so", record, r, NULL};
  *rc = init(&host);
  return h;
}

OPD_DEFINE_TYPED_CALL(call_scaled_add, Tensor, Tensor, Tensor, Double)

static opd_tensor *tensor_of(const float *v, int64_t n, int64_t stride, opd_device device) {
  opd_tensor *t = NULL;
  int64_t size = n * stride;
  ck_assert_int_eq(opd_tensor_empty(&size, 1, OPD_FLOAT32, device, &t), 0);
  if (device.type == OPD_DEVICE_CPU) {
    float *d = opd_tensor_data(t);
    for (int64_t i = 0; i < n; i++) d[i * stride] = v[i];
  }
  if (stride == 1) return t;
  opd_tensor *view = NULL;
  ck_assert_int_eq(opd_tensor_view_of(t, &n, &stride, 1, 0, &view), 0);
  opd_tensor_release(t);
  return view;
}

START_TEST(test_scaled_add_plugin) {
  ck_assert_int_eq(opd_kernels_register(), 0); /* aten::add.Tensor */
  recorded r = {0};
  int rc;
  void *h = load(&r, &rc);
  ck_assert_int_eq(rc, 0);
  ck_assert_int_eq(r.n, 3); /* def, CPU, CompositeImplicitAutograd */

  const opd_operator *op =
      opd_find_typed("myops::scaled_add", OPD_SIGNATURE(Tensor, Tensor, Tensor, Double));
  ck_assert_ptr_nonnull(op);
  /* provenance: every registration is the plugin's */
  json_t *j = opd_op_json(op);
  size_t i;
  json_t *reg;
  json_array_foreach(json_object_get(j, "registrations"), i, reg) {
    json_t *prov = json_object_get(reg, "provenance");
    ck_assert_str_eq(json_string_value(json_object_get(prov, "origin")), "plugin scaled_add.so");
  }
  ck_assert_uint_eq(json_array_size(json_object_get(j, "registrations")), 3);
  json_decref(j);

  /* CPU, the second input strided: [1, 2, 3] + 0.5 * [10, 20, 30] = [6, 12, 18] */
  opd_device cpu = {OPD_DEVICE_CPU, -1}, meta = {OPD_DEVICE_META, -1};
  const float a[] = {1, 2, 3}, b[] = {10, 20, 30};
  opd_tensor *ta = tensor_of(a, 3, 1, cpu), *tb = tensor_of(b, 3, 2, cpu), *out = NULL;
  ck_assert_int_eq(call_scaled_add(op, ta, tb, 0.5, &out), 0);
  const float *o = opd_tensor_data(out);
  ck_assert_float_eq(o[0], 6.0f);
  ck_assert_float_eq(o[1], 12.0f);
  ck_assert_float_eq(o[2], 18.0f);
  opd_tensor_release(out);
  /* boxed, and an error from the CPU kernel */
  opd_stack st;
  opd_stack_init(&st);
  opd_stack_push(&st, opd_iv_tensor_borrow(ta));
  opd_stack_push(&st, opd_iv_tensor_borrow(tb));
  opd_stack_push(&st, opd_iv_double(-1.0));
  ck_assert_int_eq(opd_call_boxed(op, &st), 0);
  ck_assert_uint_eq(st.size, 1);
  ck_assert_float_eq(((const float *)opd_tensor_data(st.items[0].u.t))[2], -27.0f);
  opd_stack_destroy(&st);
  opd_tensor *short_b = tensor_of(b, 2, 1, cpu);
  ck_assert_int_eq(call_scaled_add(op, ta, short_b, 1.0, &out), OPD_EINVAL);
  opd_tensor_release(short_b);

  /* Meta: the CompositeImplicitAutograd kernel, through aten::add.Tensor's Meta kernel */
  opd_tensor *ma = tensor_of(a, 3, 1, meta), *mb = tensor_of(b, 3, 1, meta);
  ck_assert_int_eq(call_scaled_add(op, ma, mb, 2.0, &out), 0);
  ck_assert(opd_tensor_is_meta(out));
  ck_assert_int_eq(out->ndim, 1);
  ck_assert_int_eq(opd_tensor_sizes(out)[0], 3);
  opd_tensor_release(out);
  opd_tensor_release(ma);
  opd_tensor_release(mb);

  /* a second load: the def fails, nothing of the second load stays */
  recorded r2 = {0};
  void *h2 = load(&r2, &rc);
  ck_assert_int_eq(rc, OPD_EEXIST);
  remove_all(&r2);
  ck_assert_int_eq(dlclose(h2), 0);

  /* removing the registrations (after a grace period) lets the code go */
  remove_all(&r);
  ck_assert_ptr_null(opd_op_schema(op));
  ck_assert_int_eq(dlclose(h), 0);
  ck_assert_int_eq(call_scaled_add(op, ta, tb, 1.0, &out), OPD_ENOTIMPL);
  opd_tensor_release(ta);
  opd_tensor_release(tb);
}
END_TEST

Suite *opd_test_plugin_suite(void) {
  Suite *s = suite_create("plugin");
  TCase *tc = tcase_create("plugin");
  tcase_add_test(tc, test_scaled_add_plugin);
  suite_add_tcase(s, tc);
  return s;
}
