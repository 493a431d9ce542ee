/* c_compiler.h: the C compiler service (internal to the graph library): generated C source
 * compiled with the system compiler into a private content-addressed cache directory, off the
 * request path, and loaded with dlopen ([Note: The C compiler service] in c_compiler.c). */
#ifndef OPD_GRAPH_C_COMPILER_H
#define OPD_GRAPH_C_COMPILER_H

#include <stddef.h>
#include <stdint.h>

#include "opd/graph_exec.h"

typedef struct opd__cc opd__cc;               /* a compiler service: its directory, thread, queue */
typedef struct opd__cc_module opd__cc_module; /* a loaded shared object, reference counted */

typedef struct opd__cc_options {
  const char *cc;           /* the compiler: a path, or a name looked up in PATH (e.g. "cc") */
  const char *dir;          /* the private cache directory (created 0700 if missing) */
  uint32_t timeout_ms;      /* one compiler run's wall-clock limit: killed past it (at least 1) */
  uint32_t queue_max;       /* most compiles waiting in the queue (at least 1) */
  uint32_t owner_queue_max; /* most of one owner's (opd_mem_owner_current) waiting (0: queue_max) */
  uint64_t max_bytes; /* the directory's modules, least recently used removed past it (0: none) */
} opd__cc_options;

/* Creates/checks the directory, probes the compiler's identity, starts the service's thread.
 * OPD_EINVAL with a clear message when the directory is not private (not a directory, not
 * owned by the effective user, or any group/other permission bit set; a symlink is refused)
 * or the compiler cannot be run / its probe fails. */
int opd__cc_start(const opd__cc_options *o, opd__cc **out);
/* Cancels queued compiles (their done callbacks run with OPD_ECANCELED), waits for the one
 * running, joins the thread, frees the service. Modules still referenced stay loaded. NULL ok.
 * No opd__cc_build, submit or drain may be running or start. */
void opd__cc_stop(opd__cc *cc);
/* The compiler's identity: its `-dumpfullversion` and `-dumpmachine` output, the flags, and
 * the CPU (vendor, family, model and feature words from cpuid; -march=native code is only
 * valid on it). */
const char *opd__cc_identity(const opd__cc *cc);

/* Compiles `source` in the calling thread and loads it: 0 with *mod (a new reference) and
 * *fn (the address of `entry` in it), or an error with the reason in why (the compiler's
 * first words of output, or what failed; also opd_last_error()): OPD_EINTERNAL (the compiler
 * failed, a file could not be written, dlopen failed), OPD_ERESOURCE (the compiler ran past
 * timeout_ms), OPD_ENOENT (the module has no `entry`), OPD_ENOMEM. */
int opd__cc_build(opd__cc *cc, const char *source, const char *entry, opd__cc_module **mod,
                  void **fn, char *why, size_t why_size);

typedef void (*opd__cc_done_fn)(void *arg, int rc, opd__cc_module *mod, void *fn, const char *why);
/* Queues a compile (source and entry copied). `done` runs once on the service's thread:
 * rc 0 with a module reference it now owns (it must release it), or an error (mod NULL), or
 * OPD_ECANCELED from opd__cc_stop. OPD_EBUSY when queue_max compiles already wait (done is
 * then not called). A callback must not call opd__cc_drain or opd__cc_stop. */
int opd__cc_submit(opd__cc *cc, const char *source, const char *entry, opd__cc_done_fn done,
                   void *arg);
/* Waits until no compile is queued or running. */
void opd__cc_drain(opd__cc *cc);

void opd__cc_module_release(opd__cc_module *m);           /* dlclose at the last reference */
const char *opd__cc_module_name(const opd__cc_module *m); /* its content address (hex) */
/* What a loaded module holds: its mapped segments (page-rounded), the loader's records and
 * the registry's entry. */
uint64_t opd__cc_module_bytes(const opd__cc_module *m);

/* The service's counts, in the tier's stats (graph_exec.h): compiles, disk_hits, failures,
 * timeouts, rejected (submits refused with OPD_EBUSY), queued; `enabled` and `mismatches`
 * are the tier's (c_tier.c), false and 0 here. */
void opd__cc_stats_get(opd__cc *cc, opd_graph_c_tier_stats *out);

#endif
