/* conformance.h: shared by the parts of opd-conformance (conformance.c: the program and the
 * in-process replay; conformance_check.c: reading fixture values and judging results;
 * conformance_rpc.c: the replay over RPC). */
#ifndef OPD_TOOLS_CONFORMANCE_H
#define OPD_TOOLS_CONFORMANCE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "opd/client.h"
#include "opd/dtype.h"
#include "opd/tensor.h"

typedef struct runner {
  opd_device device;
  const char *only_op;
  bool verbose;
  long passed, failed, skipped, message_mismatches;
  opd_client *client; /* --server: replay over RPC */
  long layout_unchecked;
} runner;

/* [Note: Outcomes of several results]
 * The shared format records one tensor per case (FORMAT.md section 6). The operator
 * families' fixtures (tools/conformance/opgen.py) also record operators with several
 * results: a tuple is {"type": "Tuple", "values": [E, ...]} (one E per result, on the stack
 * in order), a Tensor[] result {"type": "Tensor[]", "values": [E, ...]}, an undefined
 * tensor in a tuple (a backward operator's output_mask false) {"type": "None"}; each E is a
 * tensor outcome as in section 6, judged like a single result. An outcome with
 * "values_unspecified": true records only dtype, shape and layout: PyTorch leaves the values
 * unspecified (empty, ...). Arguments may also be bool[], float[] and Tensor?[] lists. */
typedef enum outcome_kind { OUTCOME_TENSOR, OUTCOME_TUPLE, OUTCOME_LIST } outcome_kind;
outcome_kind outcome_kind_of(const json_t *expect);
bool outcome_has_values(const json_t *expect);
int bool_array(const json_t *a, bool *out, int max);
int float_array(const json_t *a, double *out, int max);

const char *str(const json_t *obj, const char *key);
bool is_meta(const runner *r);
int parse_float(const json_t *v, double *out);
int write_element(void *base, int64_t i, opd_dtype t, const json_t *v);
int int_array(const json_t *a, int64_t *out, int max);
const char *format_sizes(const int64_t *sizes, int n, char *buf, size_t len);
double read_double(const void *p, opd_dtype t);
int64_t read_int(const void *p, opd_dtype t);
bool compare_buffer(const char *base, opd_dtype dtype, const int64_t *sizes, const int64_t *strides,
                    int ndim, int64_t numel, const json_t *expect, char *why, size_t wlen);
bool judge_error(runner *r, const char *id, const json_t *expect, int rc, const char *message,
                 char *why, size_t wlen);
bool judge_geometry(const json_t *expect, opd_dtype dtype, const int64_t *sizes, int ndim,
                    char *why, size_t wlen);
void report(runner *r, bool ok, const char *id, const char *why);
bool data_dependent(const json_t *expect);
/* --server: replays one case over RPC; false when the connection is lost. */
bool rpc_run_case(runner *r, const json_t *schemas, const json_t *c);
/* --server --device cuda: whether the daemon makes CUDA tensors (an upload of one element to
 * cuda:0); false with why set when it cannot. */
bool rpc_device_usable(runner *r, char *why, size_t wlen);

#endif
