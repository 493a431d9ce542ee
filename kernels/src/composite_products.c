/* composite_products.c: the composite kernels of the vector products, written in terms of other
 * operators called through the dispatcher, as PyTorch 1.13 registers them:
 *   mv (CompositeExplicitAutograd)      = addmv(empty([mat.size(0)], vec's dtype), mat, vec,
 *                                               beta=0, alpha=1) (beta 0: the empty result's
 *                                               contents are never read)
 *   outer (CompositeImplicitAutograd)   = self.reshape([n, 1]) * vec2, both 1-D
 *   ger (CompositeImplicitAutograd)     = outer(self, vec2)
 */
#include "kernel_util.h"

int opd__cea_mv(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *vec, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *addmv;
  if (self->ndim == 0)
    return opd_error(OPD_EINDEX, "dimension specified as 0 but tensor has no dimensions");
  opd_tensor *result = NULL;
  int64_t m = opd_tensor_sizes(self)[0];
  int rc = opd__call_empty((opd_int_list){&m, 1}, opd_tensor_dtype(vec), -1, opd_tensor_device(vec),
                           (opd_opt_bool){0}, -1, &result);
  if (rc) return rc;
  opd_stack s;
  opd_stack_init(&s);
  opd_ivalue args[] = {opd_iv_tensor_borrow(result), opd_iv_tensor_borrow(self),
                       opd_iv_tensor_borrow(vec), opd_iv_int(0), opd_iv_int(1)};
  for (int i = 0; i < 5 && !rc; i++) rc = opd_stack_push(&s, args[i]);
  rc = opd__call_tensor(rc, &addmv, "aten::addmv", &s, out);
  opd_tensor_release(result);
  return rc;
}

int opd__cia_outer(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *vec2,
                   opd_tensor **out) {
  (void)ctx;
  static const opd_operator *reshape, *mul;
  opd_tensor *const args[] = {self, vec2};
  const char *names[] = {"self", "vec2"};
  for (int i = 0; i < 2; i++)
    if (args[i]->ndim != 1)
      return opd_error(OPD_EINVAL, "outer: Expected 1-D argument %s, but got %d-D", names[i],
                       args[i]->ndim);
  int64_t column[2] = {opd_tensor_sizes(self)[0], 1};
  opd_tensor *col = NULL;
  opd_stack s;
  opd_stack_init(&s);
  int rc = opd_stack_push(&s, opd_iv_tensor_borrow(self));
  if (!rc) rc = opd__push_int_list(&s, (opd_int_list){column, 2});
  rc = opd__call_tensor(rc, &reshape, "aten::reshape", &s, &col);
  if (rc) return rc;
  opd_stack_init(&s);
  rc = opd_stack_push(&s, opd_iv_tensor_borrow(col));
  if (!rc) rc = opd_stack_push(&s, opd_iv_tensor_borrow(vec2));
  rc = opd__call_tensor(rc, &mul, "aten::mul.Tensor", &s, out);
  opd_tensor_release(col);
  return rc;
}

int opd__cia_ger(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *vec2, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *outer;
  opd_stack s;
  opd_stack_init(&s);
  int rc = opd_stack_push(&s, opd_iv_tensor_borrow(self));
  if (!rc) rc = opd_stack_push(&s, opd_iv_tensor_borrow(vec2));
  return opd__call_tensor(rc, &outer, "aten::outer", &s, out);
}
