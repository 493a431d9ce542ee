/* graph_internal.h: the graph IR's data structures and the helpers that the builder, the
 * passes, lowering and the printer share (internal to the graph library).
 *
 * [Note: The graph IR]
 * A graph is SSA: every value is defined once, by a graph input or by a node, and never
 * changes. Values live in one array: the k inputs first (value i is input i), then the
 * outputs of node 0, node 1, ... in order (a node defines `nouts` consecutive values,
 * from `first_out`). Positions, as callers name values (opd/graph.h), map to values
 * through the node array: position p < k is value p, position k + j is node j's outputs.
 * Each value carries what inference found out about it: a Meta tensor with its dtype,
 * sizes, strides and storage offset (the node's Meta kernel made it), the device it lives
 * on when the graph runs, its *root* (the value whose storage it shares: itself, or for a
 * view the root of the argument it aliases, as the Meta kernel's result shares that
 * argument's Meta storage) and its users: the distinct live nodes that take it as an
 * argument, and how many graph outputs name it.
 * A node is an operator (from the graph's table of distinct operators, each with a private
 * copy of its schema and the registration generation it had when the graph was built) and
 * one argument per schema argument, defaults filled in: a constant IValue (owned), a
 * reference to an earlier value, a list of references (Tensor[]), or a Python number passed
 * for a Tensor (a "wrapped number": its scalar and the dtype of the 0-d tensor PyTorch
 * makes of it). Constants that are tensors, and wrapped numbers, keep a Meta twin for
 * inference.
 * Passes never reorder nodes or add them; they rewrite arguments, replace a node's operator
 * in place (the softmax pattern) and mark nodes dead. Node order is therefore always a
 * topological order, and a reference always points to an earlier value.
 */
#ifndef OPD_GRAPH_INTERNAL_H
#define OPD_GRAPH_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "opd/dispatcher.h"
#include "opd/graph.h"
#include "opd/tensor.h"

#define OPD__NO_NODE UINT32_MAX

typedef enum opd__garg_kind {
  OPD__GA_CONST,   /* value */
  OPD__GA_REF,     /* ref */
  OPD__GA_REFS,    /* refs[nrefs] */
  OPD__GA_WRAPPED, /* value (INT, DOUBLE or BOOL) for a Tensor: a 0-d tensor of wrapped_dtype */
} opd__garg_kind;

typedef struct opd__garg {
  uint8_t kind;         /* opd__garg_kind */
  int8_t wrapped_dtype; /* WRAPPED */
  uint32_t ref;         /* REF: a value index */
  uint32_t nrefs;       /* REFS */
  uint32_t *refs;       /* REFS: value indices (owned) */
  opd_ivalue value;     /* CONST (owned), WRAPPED (the scalar) */
  opd_tensor *meta;     /* CONST tensors and WRAPPED: the Meta twin (owned); else NULL */
  opd_tensor *cpu;      /* WRAPPED: the 0-d CPU tensor runs pass (made by lower; owned) */
} opd__garg;

typedef enum opd__gnode_origin {
  OPD__ORIGIN_TRACED,  /* as the caller built it */
  OPD__ORIGIN_SOFTMAX, /* a softmax pattern replaced by one _softmax (pass_softmax.c) */
} opd__gnode_origin;

typedef struct opd__gnode {
  uint32_t opi; /* index into the graph's operators */
  uint32_t nargs;
  opd__garg *args; /* one per schema argument */
  uint32_t first_out, nouts;
  uint8_t origin; /* opd__gnode_origin */
  bool dead;
  bool is_view;  /* every output shares the storage of an argument: it runs no kernel */
  int32_t group; /* pointwise group (pass_fuse.c), -1 for none */
} opd__gnode;

typedef struct opd__gvalue {
  uint32_t node;   /* the defining node, OPD__NO_NODE for an input */
  uint32_t output; /* which output of it (the input index for an input) */
  uint32_t root;   /* the value whose storage this one shares (itself if its own) */
  opd_device device;
  opd_tensor *meta; /* dtype, sizes, strides, offset */
  uint32_t *users;  /* distinct live user nodes */
  uint32_t nusers, cap_users;
  uint32_t output_uses; /* how many graph outputs name it */
} opd__gvalue;

typedef struct opd__gop {
  const opd_operator *op;
  opd_schema *schema; /* a private copy: a deregistration frees the dispatcher's */
  uint64_t generation;
  const char *name; /* opd_op_name(op): operators are never freed */
} opd__gop;

typedef struct opd__ginput {
  opd_graph_input_kind kind;
} opd__ginput;

struct opd_graph {
  opd_graph_limits limits;
  bool finished, has_outputs;
  uint32_t ninputs, cap_inputs;
  opd__ginput *inputs;
  opd__gvalue *values;
  uint32_t nvalues, cap_values;
  opd__gnode *nodes;
  uint32_t nnodes, cap_nodes;
  opd__gop *ops;
  uint32_t nops, cap_ops;
  uint32_t *outputs; /* value indices */
  uint32_t noutputs;
  uint64_t arg_bytes;
};

/* ---- values and users ---- */

static inline opd__gvalue *opd__gv(const opd_graph *g, uint32_t v) {
  return &g->values[v];
}
static inline const opd__gop *opd__gnode_op(const opd_graph *g, const opd__gnode *n) {
  return &g->ops[n->opi];
}
static inline bool opd__gvalue_is_input(const opd_graph *g, uint32_t v) {
  return g->values[v].node == OPD__NO_NODE;
}
/* Users, counting the graph's outputs as one more (as torch.fx's output node is). */
static inline uint32_t opd__gvalue_num_users(const opd_graph *g, uint32_t v) {
  return g->values[v].nusers + (g->values[v].output_uses ? 1 : 0);
}
/* The node defining value v, NULL for an input. */
static inline opd__gnode *opd__gvalue_node(const opd_graph *g, uint32_t v) {
  uint32_t n = g->values[v].node;
  return n == OPD__NO_NODE ? NULL : &g->nodes[n];
}
/* The node's single (tensor) argument referencing a value, or NULL: args[i] must be REF. */
static inline bool opd__garg_is_ref(const opd__gnode *n, uint32_t i) {
  return i < n->nargs && n->args[i].kind == OPD__GA_REF;
}

/* Iterates over the values a node's arguments reference (REF, and each element of REFS):
 *   opd__ref_iter it = {node}; uint32_t v; while (opd__next_ref(&it, &v)) ... */
typedef struct opd__ref_iter {
  const opd__gnode *n;
  uint32_t arg, elem;
} opd__ref_iter;
static inline bool opd__next_ref(opd__ref_iter *it, uint32_t *v) {
  for (; it->arg < it->n->nargs; it->arg++, it->elem = 0) {
    const opd__garg *a = &it->n->args[it->arg];
    if (a->kind == OPD__GA_REF && it->elem == 0) {
      it->elem = 1;
      *v = a->ref;
      return true;
    }
    if (a->kind == OPD__GA_REFS && it->elem < a->nrefs) {
      *v = a->refs[it->elem++];
      return true;
    }
  }
  return false;
}

/* Adds node n to value v's users (once). */
int opd__gvalue_add_user(opd_graph *g, uint32_t v, uint32_t n);
/* Removes node n from value v's users. */
void opd__gvalue_remove_user(opd_graph *g, uint32_t v, uint32_t n);
/* Adds node n to the users of every value its arguments reference. */
int opd__gnode_add_uses(opd_graph *g, uint32_t n);
/* Whether node n references value v in any argument. */
bool opd__gnode_uses(const opd_graph *g, const opd__gnode *n, uint32_t v);

/* ---- mutation (passes) ---- */

/* Every use of value `from` (arguments of live nodes, graph outputs) becomes a use of `to`,
 * which must be defined before each of them. */
int opd__graph_replace_uses(opd_graph *g, uint32_t from, uint32_t to);
/* Marks node n dead and drops its arguments; none of its outputs may have users. */
void opd__graph_erase_node(opd_graph *g, uint32_t n);
/* Replaces node n's operator and arguments in place (args taken over, the old ones
 * dropped) and re-infers its outputs, which must keep their number. 0, or the inference
 * error with the node unchanged... except that the arguments are consumed. */
int opd__graph_rewrite_node(opd_graph *g, uint32_t n, const opd_operator *op, opd__garg *args,
                            uint32_t nargs, uint8_t origin);

/* ---- building blocks shared with the passes ---- */

/* The graph's operator-table index of op (added, with its schema copied, when new). */
int opd__graph_op_index(opd_graph *g, const opd_operator *op, uint32_t *index);
/* The operator of that name, or NULL when it is not defined now. */
const opd_operator *opd__graph_find_op(const char *name);
/* Runs node n's Meta kernel on its arguments' Meta twins: the results (owned) in out[0..*n),
 * at most `cap`. Errors name the node. */
int opd__graph_infer(const opd_graph *g, uint32_t n, opd_tensor **out, uint32_t cap,
                     uint32_t *nout);
/* Destroys what an argument owns; the second form n arguments and their array. */
void opd__garg_destroy(opd__garg *a);
void opd__gargs_destroy(opd__garg *args, uint32_t n);
/* "graph node 3 (aten::exp)" into buf, for messages. */
const char *opd__gnode_label(const opd_graph *g, uint32_t n, char *buf, size_t len);

/* Scalars of constant arguments. */
bool opd__garg_int(const opd__garg *a, int64_t *out);
bool opd__garg_bool(const opd__garg *a, bool *out);
/* An int[] constant (or a single int for int[N]): its elements. */
bool opd__garg_int_list(const opd__garg *a, const int64_t **data, uint32_t *len);
/* A constant that is a number (wrapped, or a 0-d constant tensor is not): its value. */
bool opd__garg_number(const opd__garg *a, double *out);

/* Geometry of a value. */
static inline int opd__gvalue_ndim(const opd_graph *g, uint32_t v) {
  return g->values[v].meta->ndim;
}
static inline opd_dtype opd__gvalue_dtype(const opd_graph *g, uint32_t v) {
  return opd_tensor_dtype(g->values[v].meta);
}
/* Same dtype, sizes, strides, storage offset and device (Inductor's same_meta). */
bool opd__gvalue_same_meta(const opd_graph *g, uint32_t a, uint32_t b);

#endif
