/* test_graph_ops.c: the operators traced graphs hold that opd added for them
 * (_reshape_alias, _unsafe_view, unbind.int: [Note: The views of traced graphs] in
 * kernels/src/views.c) on the CPU and Meta, that their dispatch tables send CUDA tensors to the
 * same kernels (tests/test_cuda.c runs them on a device), and the per-operator registration
 * generation ([Note: Operator generations] in opd/dispatcher.h). The expected values are
 * computed here from the index arithmetic of each view (element (i, j) of the result is
 * element offset + i * stride0 + j * stride1 of the input's storage), independently of the
 * kernels. */
#include <check.h>
#include <jansson.h>
#include <string.h>

#include "opd/dispatcher.h"
#include "opd/introspect.h"
#include "opd/kernels.h"
#include "tensor_helpers.h"

/* 0, 1, ..., n-1 as a float32 tensor of the given shape on `device` (data only on the CPU). */
static opd_tensor *iota(int nd, const int64_t *shape, bool meta) {
  if (meta) return mk_meta(OPD_FLOAT32, nd, shape);
  opd_tensor *t = mk(OPD_FLOAT32, nd, shape, NULL);
  for (int64_t i = 0; i < t->numel; i++) ((float *)opd_tensor_data(t))[i] = (float)i;
  return t;
}

/* Calls op boxed with the pushed arguments; its stack (results) in *st. */
static int call(const char *op, opd_stack *st) {
  ck_assert_int_eq(opd_kernels_register(), 0);
  const opd_operator *o = opd_find_schema(op);
  ck_assert_ptr_nonnull(o);
  return opd_call_boxed(o, st);
}

static void check_view(const opd_tensor *base, const opd_tensor *v, int nd, const int64_t *sizes,
                       const int64_t *strides, int64_t offset) {
  ck_assert(opd_tensor_shares_storage(base, v));
  ck_assert_int_eq(v->ndim, nd);
  ck_assert_mem_eq(opd_tensor_sizes(v), sizes, nd * sizeof *sizes);
  ck_assert_mem_eq(opd_tensor_strides(v), strides, nd * sizeof *strides);
  ck_assert_int_eq(v->storage_offset, offset);
  if (opd_tensor_is_meta(v)) return;
  const float *data = opd_tensor_data(base);
  for (int64_t i = 0; i < sizes[0]; i++)
    for (int64_t j = 0; j < sizes[1]; j++)
      ck_assert_float_eq(at(v, i * sizes[1] + j), data[offset + i * strides[0] + j * strides[1]]);
}

START_TEST(test_reshape_alias) {
  for (int meta = 0; meta < 2; meta++) {
    opd_tensor *x = iota(SHAPE(2, 3, 4), meta);
    opd_stack st;
    opd_stack_init(&st);
    opd_stack_push(&st, T(x));
    opd_ivalue size, stride;
    ck_assert_int_eq(opd_iv_make_int_list(&size, (int64_t[]){4, 6}, 2), 0);
    ck_assert_int_eq(opd_iv_make_int_list(&stride, (int64_t[]){1, 4}, 2), 0);
    opd_stack_push(&st, size);
    opd_stack_push(&st, stride);
    ck_assert_int_eq(call("aten::_reshape_alias", &st), 0);
    ck_assert_uint_eq(st.size, 1);
    /* any sizes and strides inside the storage, at the input's offset */
    check_view(x, st.items[0].u.t, 2, (int64_t[]){4, 6}, (int64_t[]){1, 4}, 0);
    opd_stack_clear(&st);
    /* lengths that differ, and a view past the storage, are errors */
    opd_stack_push(&st, T(x));
    ck_assert_int_eq(opd_iv_make_int_list(&size, (int64_t[]){4, 6}, 2), 0);
    ck_assert_int_eq(opd_iv_make_int_list(&stride, (int64_t[]){1}, 1), 0);
    opd_stack_push(&st, size);
    opd_stack_push(&st, stride);
    ck_assert_int_eq(call("aten::_reshape_alias", &st), OPD_EINVAL);
    ck_assert_str_eq(opd_last_error(), "_reshape_alias: 2 sizes but 1 strides");
    opd_stack_push(&st, T(x));
    ck_assert_int_eq(opd_iv_make_int_list(&size, (int64_t[]){5, 6}, 2), 0);
    ck_assert_int_eq(opd_iv_make_int_list(&stride, (int64_t[]){6, 1}, 2), 0);
    opd_stack_push(&st, size);
    opd_stack_push(&st, stride);
    ck_assert_int_eq(call("aten::_reshape_alias", &st), OPD_EINVAL);
    opd_stack_destroy(&st);
    opd_tensor_release(x);
  }
}
END_TEST

START_TEST(test_unsafe_view) {
  for (int meta = 0; meta < 2; meta++) {
    opd_tensor *x = iota(SHAPE(2, 3, 4), meta);
    opd_stack st;
    opd_stack_init(&st);
    opd_ivalue size;
    opd_stack_push(&st, T(x));
    ck_assert_int_eq(opd_iv_make_int_list(&size, (int64_t[]){-1, 8}, 2), 0);
    opd_stack_push(&st, size);
    ck_assert_int_eq(call("aten::_unsafe_view", &st), 0);
    check_view(x, st.items[0].u.t, 2, (int64_t[]){3, 8}, (int64_t[]){8, 1}, 0);
    opd_stack_clear(&st);
    /* a transposed input cannot be viewed as [12, 2] */
    opd_tensor *xt = view(x, SHAPE(4, 6), (int64_t[]){1, 4}, 0);
    opd_stack_push(&st, T(xt));
    ck_assert_int_eq(opd_iv_make_int_list(&size, (int64_t[]){12, 2}, 2), 0);
    opd_stack_push(&st, size);
    ck_assert_int_eq(call("aten::_unsafe_view", &st), OPD_EINVAL);
    ck_assert_ptr_nonnull(strstr(opd_last_error(), "view size is not compatible"));
    opd_stack_push(&st, T(x));
    ck_assert_int_eq(opd_iv_make_int_list(&size, (int64_t[]){5, 5}, 2), 0);
    opd_stack_push(&st, size);
    ck_assert_int_eq(call("aten::_unsafe_view", &st), OPD_EINVAL);
    ck_assert_str_eq(opd_last_error(), "shape '[5, 5]' is invalid for input of size 24");
    opd_stack_destroy(&st);
    opd_tensor_release(xt);
    opd_tensor_release(x);
  }
}
END_TEST

START_TEST(test_unbind) {
  for (int meta = 0; meta < 2; meta++) {
    opd_tensor *x = iota(SHAPE(2, 3, 4), meta);
    opd_stack st;
    opd_stack_init(&st);
    opd_stack_push(&st, T(x));
    opd_stack_push(&st, I(-2));
    ck_assert_int_eq(call("aten::unbind.int", &st), 0);
    ck_assert_uint_eq(st.size, 1);
    ck_assert_int_eq(st.items[0].tag, OPD_IV_TENSOR_LIST);
    ck_assert_uint_eq(st.items[0].len, 3);
    /* row k is x[:, k, :]: sizes [2, 4], strides [12, 1], offset 4 k */
    for (int k = 0; k < 3; k++)
      check_view(x, st.items[0].u.tensors[k], 2, (int64_t[]){2, 4}, (int64_t[]){12, 1}, 4 * k);
    opd_stack_clear(&st);
    /* the default dim is 0 */
    const opd_schema *s = opd_op_schema(opd_find_schema("aten::unbind.int"));
    ck_assert_int_eq(s->args[1].default_value.u.i, 0);
    ck_assert_int_eq(s->returns[0].type.is_list, true);
    /* a size-0 dim gives an empty list; a 0-d tensor and a dim out of range are errors */
    opd_tensor *empty = iota(SHAPE(0, 3), meta);
    opd_stack_push(&st, T(empty));
    opd_stack_push(&st, I(0));
    ck_assert_int_eq(call("aten::unbind.int", &st), 0);
    ck_assert_uint_eq(st.items[0].len, 0);
    opd_stack_clear(&st);
    opd_tensor *scalar = iota(0, NULL, meta);
    opd_stack_push(&st, T(scalar));
    opd_stack_push(&st, I(0));
    ck_assert_int_eq(call("aten::unbind.int", &st), OPD_EINDEX);
    ck_assert_str_eq(opd_last_error(), "Dimension specified as 0 but tensor has no dimensions");
    opd_stack_push(&st, T(x));
    opd_stack_push(&st, I(3));
    ck_assert_int_eq(call("aten::unbind.int", &st), OPD_EINDEX);
    opd_stack_destroy(&st);
    opd_tensor_release(scalar);
    opd_tensor_release(empty);
    opd_tensor_release(x);
  }
}
END_TEST

START_TEST(test_split_alias_detach) {
  for (int meta = 0; meta < 2; meta++) {
    opd_tensor *x = iota(SHAPE(2, 5, 3), meta);
    opd_stack st;
    opd_stack_init(&st);
    opd_stack_push(&st, T(x));
    opd_stack_push(&st, I(2));
    opd_stack_push(&st, I(1));
    ck_assert_int_eq(call("aten::split.Tensor", &st), 0);
    ck_assert_int_eq(st.items[0].tag, OPD_IV_TENSOR_LIST);
    ck_assert_uint_eq(st.items[0].len, 3); /* 5 rows in pieces of 2, 2, 1 */
    for (int k = 0; k < 3; k++) {
      const opd_tensor *p = st.items[0].u.tensors[k];
      ck_assert_int_eq(opd_tensor_sizes(p)[1], k < 2 ? 2 : 1);
      ck_assert_int_eq(p->storage_offset, 6 * k); /* row 2k of dim 1, stride 3 */
      ck_assert(opd_tensor_shares_storage(p, x));
      /* element (i, j, l) of piece k is x[i, 2k + j, l]: flat 15 i + 3 (2k + j) + l */
      if (!meta) ck_assert_float_eq(at(p, opd_tensor_sizes(p)[1] * 3 + 2), 15 + 3 * (2 * k) + 2);
    }
    opd_stack_clear(&st);
    opd_stack_push(&st, T(x));
    opd_stack_push(&st, I(0));
    opd_stack_push(&st, I(1));
    ck_assert_int_eq(call("aten::split.Tensor", &st), OPD_EINVAL);
    ck_assert_str_eq(
        opd_last_error(),
        "split_size can only be 0 if dimension size is 0, but got dimension size of 5");
    opd_stack_push(&st, T(x));
    opd_stack_push(&st, I(-1));
    opd_stack_push(&st, I(0));
    ck_assert_int_eq(call("aten::split.Tensor", &st), OPD_EINVAL);
    for (int k = 0; k < 2; k++) {
      opd_stack_push(&st, T(x));
      ck_assert_int_eq(call(k ? "aten::detach" : "aten::alias", &st), 0);
      const opd_tensor *a = st.items[0].u.t;
      ck_assert_ptr_ne(a, x); /* a new tensor, the same geometry and storage */
      ck_assert(opd_tensor_shares_storage(a, x));
      ck_assert_int_eq(a->ndim, 3);
      ck_assert_mem_eq(a->dims, x->dims, 6 * sizeof(int64_t));
      ck_assert_int_eq(a->storage_offset, 0);
      opd_stack_clear(&st);
    }
    opd_stack_destroy(&st);
    opd_tensor_release(x);
  }
}
END_TEST

/* The one CompositeExplicitAutograd kernel of each operator fills its CUDA slot as it fills
 * the CPU and Meta ones, in every build (with the CUDA backend or without): the table sends a
 * call on CUDA tensors, once below autograd, to that kernel. */
START_TEST(test_cuda_dispatch) {
  static const char *const ops[][2] = {{"aten::_reshape_alias", "opd__cea_reshape_alias"},
                                       {"aten::_unsafe_view", "opd__cea_unsafe_view"},
                                       {"aten::unbind.int", "opd__cea_unbind_int"}};
  ck_assert_int_eq(opd_kernels_register(), 0);
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
    const opd_operator *op = opd_find_schema(ops[i][0]);
    ck_assert_ptr_nonnull(op);
    json_t *slot = opd_op_slot_json(op, OPD_KEY_CUDA);
    ck_assert_ptr_nonnull(slot);
    ck_assert_str_eq(json_string_value(json_object_get(slot, "source")),
                     "CompositeExplicitAutograd");
    ck_assert_str_eq(json_string_value(json_object_get(slot, "kernel")), ops[i][1]);
    json_decref(slot);
    opd_reg_id reg = opd_op_slot_registration(op, OPD_KEY_CUDA);
    ck_assert_int_ne(reg, 0);
    ck_assert_int_eq(opd_op_slot_registration(op, OPD_KEY_CPU), reg);
    ck_assert_int_eq(opd_op_slot_registration(op, OPD_KEY_Meta), reg);
    /* a CUDA tensor's key set: autograd first, then the CUDA slot's kernel */
    opd_keyset ks;
    json_t *call = opd_op_dispatch_json(op, opd_tensor_keyset_for(OPD_KEY_CUDA), &ks);
    ck_assert_ptr_nonnull(call);
    ck_assert_str_eq(json_string_value(json_object_get(call, "key")), "AutogradCUDA");
    json_decref(call);
    opd_keyset below = opd_keyset_intersect(ks, opd_keyset_after(OPD_KEY_AutogradCUDA));
    ck_assert_int_eq(opd_keyset_highest_key(below), OPD_KEY_CUDA);
    const opd_kernel *k = opd_op_lookup(op, below);
    ck_assert_ptr_nonnull(k);
    ck_assert_str_eq(k->name, ops[i][1]);
  }
}
END_TEST

static int dummy_kernel(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  (void)stack;
  return 0;
}

/* Every registration change touching an operator bumps its generation; backend fallbacks
 * touch every operator. */
START_TEST(test_generations) {
  ck_assert_int_eq(opd_kernels_register(), 0);
  opd_reg_id def = opd_def("gentest", "op(Tensor a) -> Tensor", OPD_HERE);
  ck_assert_int_gt(def, 0);
  const opd_operator *op = opd_find_op("gentest::op"), *exp = opd_find_op("aten::exp");
  uint64_t g0 = opd_op_generation(op), e0 = opd_op_generation(exp);
  ck_assert_uint_gt(g0, 0);
  opd_kernel k = {.boxed = dummy_kernel, .name = "dummy"};
  opd_reg_id impl = opd_impl("gentest::op", OPD_KEY_CPU, &k, OPD_HERE);
  ck_assert_int_gt(impl, 0);
  uint64_t g1 = opd_op_generation(op);
  ck_assert_uint_gt(g1, g0);
  ck_assert_uint_eq(opd_op_generation(exp), e0); /* another operator is untouched */
  ck_assert_int_eq(opd_deregister(impl), 0);
  uint64_t g2 = opd_op_generation(op);
  ck_assert_uint_gt(g2, g1);
  opd_reg_id fb = opd_fallback(OPD_KEY_PrivateUse1, &k, OPD_HERE);
  ck_assert_int_gt(fb, 0);
  ck_assert_uint_gt(opd_op_generation(op), g2);
  ck_assert_uint_gt(opd_op_generation(exp), e0);
  uint64_t e1 = opd_op_generation(exp);
  ck_assert_int_eq(opd_deregister(fb), 0);
  ck_assert_uint_gt(opd_op_generation(exp), e1);
  uint64_t g3 = opd_op_generation(op);
  ck_assert_int_eq(opd_deregister(def), 0);
  ck_assert_uint_gt(opd_op_generation(op), g3);
}
END_TEST

Suite *opd_test_graph_ops_suite(void) {
  Suite *s = suite_create("graph_ops");
  TCase *tc = tcase_create("ops");
  tcase_add_test(tc, test_reshape_alias);
  tcase_add_test(tc, test_unsafe_view);
  tcase_add_test(tc, test_unbind);
  tcase_add_test(tc, test_split_alias_detach);
  tcase_add_test(tc, test_cuda_dispatch);
  tcase_add_test(tc, test_generations);
  suite_add_tcase(s, tc);
  return s;
}
