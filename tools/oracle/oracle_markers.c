/* oracle_markers.c: the marker-kernel plugin of the daemon replay of dispatch oracles
 * (opd-oracle-dispatch --server, tools/oracle/oracle_rpc.c). It defines
 * oracle_markers::marker(Tensor[] xs) -> Tensor with one boxed CPU kernel; the replay
 * registers that kernel over the admin RPC at other operators' keys ("register" with
 * "kernel_of" and "data": the marker, e.g. "k3"). When it runs it drops its arguments and
 * returns a new one-element int64 CPU tensor holding the marker's number (3 for "k3"; -1
 * without data), so that a client sees which registration ran.
 *
 * It also defines oracle_markers::tensor_of(str key) -> Tensor, which makes a data-less
 * tensor whose key set is that of backend key `key` (SparseCPU, QuantizedCPU, MkldnnCPU,
 * ...: layouts opd dispatches but does not compute with, see opd_tensor_new), so that the
 * replay can pass the fixture's every tensor kind over the client RPC.
 */
#include <opd/library.h>
#include <opd/tensor.h>
#include <stdlib.h>

static int marker_kernel(const opd_kernel_ctx *ctx, opd_stack *stack) {
  const char *marker = ctx->data;
  int64_t number = -1;
  if (marker && marker[0]) {
    char *end;
    long long n = strtoll(marker + 1, &end, 10);
    if (*end == '\0' && end != marker + 1 && n >= 0) number = n;
  }
  opd_stack_drop(stack, opd_op_schema(ctx->op)->num_args);
  opd_tensor *t;
  int rc =
      opd_tensor_empty((const int64_t[]){1}, 1, OPD_INT64, (opd_device){OPD_DEVICE_CPU, -1}, &t);
  if (rc) return rc;
  *(int64_t *)opd_tensor_data(t) = number;
  rc = opd_stack_push(stack, opd_iv_tensor(t)); /* a reference of its own */
  opd_tensor_release(t);
  return rc;
}

static const opd_kernel marker = {.boxed = marker_kernel, .name = "oracle_marker"};

static int tensor_of_kernel(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  opd_ivalue name = opd_stack_pop(stack);
  opd_dispatch_key key;
  int rc = name.tag == OPD_IV_STRING ? opd_key_from_name(name.u.s, &key)
                                     : opd_error(OPD_EINVAL, "tensor_of: expected a key name");
  opd_iv_destroy(&name);
  if (rc) return rc;
  opd_tensor *t = opd_tensor_new(key, false);
  if (!t) return opd_last_error_code();
  return opd_stack_push(stack, opd_iv_tensor_steal(t));
}

static const opd_kernel tensor_of = {.boxed = tensor_of_kernel, .name = "oracle_tensor_of"};

OPD_LIBRARY(oracle_markers, m) {
  opd_lib_def(m, "marker(Tensor[] xs) -> Tensor");
  opd_lib_def(m, "tensor_of(str key) -> Tensor");
}
OPD_LIBRARY_IMPL(oracle_markers, CPU, m) {
  opd_lib_impl(m, "marker", &marker);
}
/* no tensor arguments: the call lands on Undefined, which CompositeExplicitAutograd covers */
OPD_LIBRARY_IMPL(oracle_markers, CompositeExplicitAutograd, m) {
  opd_lib_impl(m, "tensor_of", &tensor_of);
}
OPD_PLUGIN_INIT()
