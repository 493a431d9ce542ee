/* graphs.h: the daemon's side of graphs (graphs.c): the define_graph, run_graph,
 * release_graph and describe_graph requests on the workers, the compiled-graph cache the
 * sessions share, the passes the admin disabled, the per-pass IR dumps and the counters of
 * /metrics (internal to the server). docs/GRAPHS.md, "The daemon", explains it.
 */
#ifndef OPD_SERVER_GRAPHS_H
#define OPD_SERVER_GRAPHS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "job.h"
#include "opd/graph_exec.h"
#include "opd/server.h"

typedef struct opd__graphs opd__graphs;

/* At server start: the cache (graph_cache_size graphs) and, with graph_dump_dir, the dump
 * directory (made 0700 when missing; refused when it is not a directory). 0 or an error. */
int opd__graphs_start(const opd_server_config *cfg, opd__graphs **out);
/* After the workers stopped and every session ended. NULL is a no-op. */
void opd__graphs_stop(opd__graphs *g);
opd_graph_cache *opd__graphs_cache(opd__graphs *g);

/* The counters /metrics shows. */
typedef struct opd__graphs_counters {
  uint64_t defines, define_errors, cache_hits, runs, run_errors, run_ns, dump_bytes;
} opd__graphs_counters;
void opd__graphs_counters_get(opd__graphs *g, opd__graphs_counters *out);

/* [Note: Disabling a pass from the admin]
 * The admin op graph_pass {name, enabled} (admin.c) adds a pass to, or takes it off, the
 * process's set of disabled passes; every later define compiles without the passes in the
 * set (opd_graph_options.disabled_passes). The set is part of every cache key, so a graph
 * defined with a pass disabled is another compiled graph, and enabling it again brings the
 * first one back from the cache; graphs already defined keep running as they were
 * compiled. The name must be a pass that can be disabled (opd_graph_pass_check_name):
 * 0, or OPD_EINVAL / OPD_ENOENT naming the passes; OPD_ERESOURCE past 64 disabled passes.
 * The set is the process's, like the registry of passes, for every server in it. */
int opd__graph_pass_set_enabled(const char *name, bool enabled);
/* The disabled passes, in the order they were disabled: a JSON array of names. */
json_t *opd__graph_passes_disabled_json(void);

/* ---- requests, on a worker that owns the job's session ---- */

/* A run's route: finds its graph (job->graph) and the device its inputs are on (*device):
 * 0, or an error with nothing found (the run reports it). */
int opd__graph_route(opd__job *job, opd_device *device);
/* Each runs a request and packs its response into job->out, or returns an error (`*op`,
 * when set, is the operator a define's error is about). */
int opd__graph_define(opd__job *job, Opd__V1__Response *resp, const char **op);
int opd__graph_run(opd__job *job);
int opd__graph_release(opd__job *job);
int opd__graph_describe(opd__job *job, Opd__V1__Response *resp);

#endif
