/* opd/graph.h: graphs of ATen operator calls: the SSA IR, its builder and validation, the
 * printer and the verifier ([Note: The graph IR] in graph/src/ir/graph_internal.h).
 *
 * A graph is built once, in order: its inputs, then its nodes, then its outputs. Values are
 * named by *position*: the inputs are positions 0..k-1 and node j defines position k+j (one
 * value, or several: native_layer_norm returns 3 tensors, unbind.int a list, told apart by an
 * output index). A node's arguments are constants or references to positions before it, so a
 * graph is acyclic by construction and holds no handle or pointer of its caller.
 *
 * Everything is checked as it arrives, and each error names what it is about ("graph node 3
 * (aten::expand), argument 'size': ..."): the operator must be defined, every argument must
 * have its schema's type (opd_graph_check_value), references must point backwards, and each
 * node's shapes and dtypes are inferred at once by running its Meta kernel through the
 * dispatcher on Meta tensors (as torch.compile's fake tensors do), so a shape error is found
 * at its node when the graph is defined. Limits bound what a (hostile) caller can make the
 * builder hold. opd_graph_finish then runs the verifier; a finished graph is what
 * opd_graph_compile (opd/graph_exec.h) takes.
 *
 * How the daemon builds a graph from a decoded request:
 *   opd_graph_new(&limits, &g);
 *   for each input:  opd_graph_add_input(g, &(opd_graph_input_spec){dtype, sizes, ndim, device,
 *                                                                   OPD_GRAPH_INPUT});
 *   for each node:   opd_graph_add_node(g, "aten::exp", args, nargs);  (args in schema order)
 *   opd_graph_set_outputs(g, refs, n);
 *   opd_graph_finish(g);
 * then opd_graph_compile (which takes g) or opd_graph_free(g).
 *
 * Every function returns 0 (or a non-negative position) or a negative opd error, with the
 * message in opd_last_error(). A graph is used by one thread at a time while it is built.
 */
#ifndef OPD_GRAPH_H
#define OPD_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "opd/dtype.h"
#include "opd/ivalue.h"
#include "opd/schema.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct opd_graph opd_graph;

/* What the builder accepts; every one is a clear error when passed. */
typedef struct opd_graph_limits {
  uint32_t max_nodes;     /* default 4096 */
  uint32_t max_inputs;    /* default 256 */
  uint32_t max_outputs;   /* default 256 */
  uint64_t max_arg_bytes; /* bytes of all constant arguments (strings, lists, tensors, the
                             references of Tensor[] arguments), default 1 MiB */
} opd_graph_limits;
#define OPD_GRAPH_DEFAULT_MAX_NODES     4096
#define OPD_GRAPH_DEFAULT_MAX_INPUTS    256
#define OPD_GRAPH_DEFAULT_MAX_OUTPUTS   256
#define OPD_GRAPH_DEFAULT_MAX_ARG_BYTES (1u << 20)
void opd_graph_limits_default(opd_graph_limits *limits);

typedef enum opd_graph_input_kind {
  OPD_GRAPH_INPUT,     /* the program's argument: a new tensor each run */
  OPD_GRAPH_PARAMETER, /* a weight, bias or buffer: uploaded once, the same tensor every run */
} opd_graph_input_kind;

/* An input: a tensor of this dtype, shape and device (contiguous; a run given another
 * layout copies it first). */
typedef struct opd_graph_input_spec {
  opd_dtype dtype;
  const int64_t *sizes;
  uint32_t ndim;
  opd_device device;
  opd_graph_input_kind kind;
} opd_graph_input_spec;

/* A value: the input or node at `position`, and for a node with several outputs the one at
 * `output` (0 otherwise). As a Tensor[] argument, a reference to a node whose result is a
 * list with `output` = OPD_GRAPH_ALL_OUTPUTS stands for the whole list. */
typedef struct opd_graph_ref {
  uint32_t position;
  uint32_t output;
} opd_graph_ref;
#define OPD_GRAPH_ALL_OUTPUTS UINT32_MAX

typedef enum opd_graph_arg_kind {
  OPD_GRAPH_ARG_DEFAULT, /* absent: the schema's default */
  OPD_GRAPH_ARG_VALUE,   /* a constant IValue (copied; a Scalar for a Tensor argument is a
                            Python number, wrapped as PyTorch wraps it) */
  OPD_GRAPH_ARG_REF,     /* a reference to a tensor value */
  OPD_GRAPH_ARG_REFS,    /* a Tensor[] of references */
} opd_graph_arg_kind;

typedef struct opd_graph_arg {
  opd_graph_arg_kind kind;
  opd_ivalue value;          /* VALUE; borrowed for the call */
  opd_graph_ref ref;         /* REF */
  const opd_graph_ref *refs; /* REFS */
  uint32_t nrefs;
} opd_graph_arg;

static inline opd_graph_arg opd_graph_arg_value(opd_ivalue v) {
  return (opd_graph_arg){.kind = OPD_GRAPH_ARG_VALUE, .value = v};
}
static inline opd_graph_arg opd_graph_arg_ref(uint32_t position, uint32_t output) {
  return (opd_graph_arg){.kind = OPD_GRAPH_ARG_REF, .ref = {position, output}};
}
static inline opd_graph_arg opd_graph_arg_default(void) {
  return (opd_graph_arg){.kind = OPD_GRAPH_ARG_DEFAULT};
}

/* A new, empty graph (limits NULL: the defaults). */
int opd_graph_new(const opd_graph_limits *limits, opd_graph **out);
void opd_graph_free(opd_graph *g);

/* Adds an input (all inputs come before the first node): its position, or OPD_EINVAL (bad
 * dtype, device or shape, an element count that overflows, max_inputs) naming the input. */
int opd_graph_add_input(opd_graph *g, const opd_graph_input_spec *spec);

/* Adds a node calling operator `op` ("aten::add.Tensor") with `nargs` arguments in schema
 * order (missing trailing ones take their defaults): its position, or an error naming the
 * node, its operator and the argument: OPD_ENOENT (unknown operator), OPD_EINVAL (too many
 * arguments, a missing one without a default, a type that does not match, a reference that
 * is not to an earlier value, an operator that writes its arguments or returns something
 * other than tensors, max_nodes or max_arg_bytes passed), or the error of the node's Meta
 * kernel (a shape that does not broadcast, an element count that overflows, ...). After an
 * error the graph is unchanged, and the caller may go on or free it. */
int opd_graph_add_node(opd_graph *g, const char *op, const opd_graph_arg *args, uint32_t nargs);

/* The number of values node position `position` defines (1 for most operators). */
int opd_graph_num_outputs(const opd_graph *g, uint32_t position);

/* Sets what the graph returns (once, after the last node). */
int opd_graph_set_outputs(opd_graph *g, const opd_graph_ref *refs, uint32_t n);

/* Ends building: runs the verifier. The graph is then read-only. */
int opd_graph_finish(opd_graph *g);

/* Checks one constant against a schema argument's type, as a call's arguments are checked
 * ([Note: Checking a call against its schema] in server/src/execute.c): 0, or OPD_EINVAL
 * with "expected a value of type 'int[]' for argument 'dim' but found 'str'". A Scalar
 * (int, float, bool) is accepted for a Tensor argument (a wrapped number). */
int opd_graph_check_value(const opd_argument *arg, const opd_ivalue *v);

/* Counts. */
uint32_t opd_graph_num_inputs(const opd_graph *g);
/* Nodes that are live (not removed by a pass). */
uint32_t opd_graph_num_nodes(const opd_graph *g);

/* The graph as readable text (like torch.fx's code): one line per live node, values
 * numbered in order, every value with its dtype and shape (and strides when not
 * contiguous), pattern and group annotations as comments. *text is opd__malloc'd (free with
 * opd__free). */
int opd_graph_print(const opd_graph *g, char **text);

/* Checks the graph's invariants: references point backwards to live values of the right
 * kind, users lists match the arguments, outputs are live, every constant has its
 * argument's type, and (re-running the Meta kernels) every value's dtype and shape is what
 * its node computes. 0 or OPD_EINTERNAL naming the broken invariant. */
int opd_graph_verify(const opd_graph *g);

#ifdef __cplusplus
}
#endif
#endif
