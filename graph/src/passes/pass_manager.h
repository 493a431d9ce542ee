/* pass_manager.h: the pass list of one compilation and its run (pass_manager.c,
 * [Note: The pass pipeline]). */
#ifndef OPD_GRAPH_PASS_MANAGER_H
#define OPD_GRAPH_PASS_MANAGER_H

#include <stdbool.h>
#include <stdint.h>

#include "passes/compile.h"
#include "opd/graph_pass.h"

/* One pass of a compilation, and what it did. */
typedef struct opd__pass_entry {
  char name[64];
  uint32_t version;
  bool enabled;
  opd__pass_fn builtin;     /* a built-in pass, or */
  opd_graph_pass_fn plugin; /* a plugin's, with its data */
  void *data;
  void *registered; /* the plugin pass this compilation holds a use of, until detached */
  uint64_t hits;
  uint64_t ns;
  char *ir; /* the IR after the pass (NULL when it did not run) */
} opd__pass_entry;

typedef struct opd__pipeline {
  opd__pass_entry *passes;
  uint32_t n;
} opd__pipeline;

/* The passes a compilation with these options runs (plugins as registered now). */
int opd__pipeline_snapshot(const opd_graph_options *options, opd__pipeline *p);
/* Runs them on c; an error names the pass. */
int opd__pipeline_run(opd__pipeline *p, opd__compile *c);
/* Drops the compilation's uses of plugin passes, once they have run: the entries keep their
 * names, versions and records ([Note: Removing a plugin pass under compilation]). */
void opd__pipeline_detach(opd__pipeline *p);
/* Detaches and frees. */
void opd__pipeline_free(opd__pipeline *p);

#endif
