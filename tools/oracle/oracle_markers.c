/* oracle_markers.c: the marker-kernel plugin of the daemon replay of dispatch oracles
 * (opd-oracle-dispatch --server, tools/oracle/oracle_rpc.c). It defines
 * oracle_markers::marker(Tensor[] xs) -> Tensor with one boxed CPU kernel; the replay
 * registers that kernel over the admin RPC at other operators' keys ("register" with
 * "kernel_of" and "data": the marker, e.g. "k3"). When it runs it drops its arguments and
 * returns a new one-element int64 CPU tensor holding the marker's number (3 for "k3"; -1
 * without data), so that a client sees which registration ran.
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

OPD_LIBRARY(oracle_markers, m) {
  opd_lib_def(m, "marker(Tensor[] xs) -> Tensor");
}
OPD_LIBRARY_IMPL(oracle_markers, CPU, m) {
  opd_lib_impl(m, "marker", &marker);
}
OPD_PLUGIN_INIT()
