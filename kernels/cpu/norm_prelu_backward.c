/* norm_prelu_backward.c: the CPU kernel of prelu_backward (boxed: grad_input, grad_weight), in
 * double ([Note: Normalization and losses in double]): grad_input = x > 0 ? g : weight[c] g,
 * grad_weight[c] = the sum of x g over the elements of channel c where x <= 0 (over all of
 * them for a single weight). */
#include "meta/norm_meta.h"
#include "norm_buffers.h"
#include "opd/memory.h"

static int prelu_backward(opd_ivalue *args, opd_tensor **res) {
  if (args[0].tag != OPD_IV_TENSOR || args[1].tag != OPD_IV_TENSOR || args[2].tag != OPD_IV_TENSOR)
    return opd_error(OPD_EINVAL, "prelu_backward: expected (Tensor, Tensor, Tensor) arguments");
  opd_tensor *grad = args[0].u.t, *self = args[1].u.t, *weight = args[2].u.t;
  opd_out_spec specs[2];
  int rc = opd__prelu_backward_meta(grad, self, weight, specs);
  for (int k = 0; k < 2 && !rc; k++) rc = opd__norm_result(&specs[k], &res[k]);
  if (rc) return rc;
  const int64_t *sizes = opd_tensor_sizes(self);
  int64_t c = self->ndim >= 2 ? sizes[1] : 1, outer = self->ndim >= 2 ? sizes[0] : 1;
  int64_t inner = self->numel / (outer * c > 0 ? outer * c : 1);
  double *b[5] = {NULL};
  if (!(rc = opd__norm_load(grad, &b[0])) && !(rc = opd__norm_load(self, &b[1])) &&
      !(rc = opd__norm_load(weight, &b[2])) && !(rc = opd__norm_zeros(self->numel, &b[3])) &&
      !(rc = opd__norm_zeros(weight->numel, &b[4]))) {
    bool shared = weight->numel == 1;
    for (int64_t i = 0; i < self->numel; i++) {
      int64_t ch = shared ? 0 : (i / inner) % c;
      double g = b[0][i], x = b[1][i];
      b[3][i] = x > 0 ? g : b[2][ch] * g;
      if (!(x > 0)) b[4][ch] += x * g;
    }
    opd__norm_store(res[0], b[3]);
    opd__norm_store(res[1], b[4]);
  }
  for (int k = 0; k < 5; k++) opd__free(b[k]);
  return rc;
}

int opd__cpu_prelu_backward(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__boxed_run(stack, 3, 2, true, prelu_backward);
}
