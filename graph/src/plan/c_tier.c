/* c_tier.c: the C tier of fused programs: the process's compiler service
 * (opd_graph_c_tier_start and its kin) and a CPU group's program submitted to it, then
 * swapped in when it is compiled.
 *
 * [Note: The C tier of fused programs]
 * A fused CPU group first runs through the interpreter ([Note: Fused pointwise programs] in
 * fused_codegen.c), which needs nothing but the daemon. With the C tier started (the
 * daemon's graph_cc and graph_cc_dir), the group's first fused run also writes its program
 * as C (fused_c.c) and queues it for the compiler service (c_compiler.c), which compiles it
 * with the system compiler on its own thread, off every request's path, into a private,
 * content-addressed directory, and loads it; runs go on through the interpreter meanwhile.
 * When the module is loaded, the group's fused program becomes its function, and the
 * group's checks start again ([Note: Numerics and benefit of fused groups] in decisions.c):
 * the generated C is checked against the unfused nodes, and timed against them and against
 * the interpreter, so C that is not faster than the interpreter gives way to it again, and C
 * that a compiler miscompiled is caught by the same numerics check as any fused program. A
 * group whose compiled program disagrees with the unfused nodes drops it (its state
 * "dropped", counted in c_mismatches) and is checked again with the interpreter.
 * A module stays loaded until the compiled graph is freed, since a run may be inside it.
 * What can go wrong with the compiler (missing, failing, hanging: killed at timeout_ms) only
 * leaves the group on the interpreter, with the reason in its introspection.
 * The tier changes how a group computes, not what: the formulas are the interpreter's
 * ([Note: One formula per operation] in pw_formulas.h), so it is not part of a graph's cache
 * key; the compiled modules are keyed by their source and the compiler's identity.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "plan/c_compiler.h"
#include "exec/compiled.h"
#include "opd/error.h"
#include "opd/memory.h"

/* opd_graph_c_tier_options' defaults (graph_exec.h) */
#define DEFAULT_TIMEOUT_MS        30000
#define DEFAULT_QUEUE_MAX         256
#define DEFAULT_SESSION_QUEUE_MAX 16

/* The service: start and stop write it, submits and introspection read it. */
static pthread_rwlock_t service_lock = PTHREAD_RWLOCK_INITIALIZER;
static opd__cc *service;
static atomic_bool running;
static char service_dir[4096];
static _Atomic uint64_t c_mismatches;

int opd_graph_c_tier_start(const opd_graph_c_tier_options *o) {
  if (!o || !o->cc || !o->cc[0] || !o->dir || !o->dir[0])
    return opd_error(OPD_EINVAL, "the C tier needs a compiler and a directory");
  opd__cc_options co = {.cc = o->cc,
                        .dir = o->dir,
                        .timeout_ms = o->timeout_ms ? o->timeout_ms : DEFAULT_TIMEOUT_MS,
                        .queue_max = o->queue_max ? o->queue_max : DEFAULT_QUEUE_MAX,
                        .owner_queue_max =
                            o->session_queue_max ? o->session_queue_max : DEFAULT_SESSION_QUEUE_MAX,
                        .max_bytes = o->max_bytes};
  pthread_rwlock_wrlock(&service_lock);
  int rc = service ? opd_error(OPD_EEXIST, "the C tier is started already")
                   : opd__cc_start(&co, &service);
  if (rc == 0) {
    snprintf(service_dir, sizeof service_dir, "%s", o->dir);
    atomic_store(&running, true);
  }
  pthread_rwlock_unlock(&service_lock);
  return rc;
}

void opd_graph_c_tier_stop(void) {
  pthread_rwlock_wrlock(&service_lock);
  opd__cc *cc = service;
  service = NULL;
  atomic_store(&running, false);
  pthread_rwlock_unlock(&service_lock);
  opd__cc_stop(cc); /* queued compiles are cancelled: their groups are untried again */
}

void opd_graph_c_tier_drain(void) {
  pthread_rwlock_rdlock(&service_lock);
  if (service) opd__cc_drain(service);
  pthread_rwlock_unlock(&service_lock);
}

void opd__c_tier_count_mismatch(void) {
  atomic_fetch_add_explicit(&c_mismatches, 1, memory_order_relaxed);
}

void opd_graph_c_tier_stats_get(opd_graph_c_tier_stats *out) {
  *out = (opd_graph_c_tier_stats){0};
  pthread_rwlock_rdlock(&service_lock);
  if (service) opd__cc_stats_get(service, out);
  out->enabled = service != NULL;
  pthread_rwlock_unlock(&service_lock);
  out->mismatches = atomic_load_explicit(&c_mismatches, memory_order_relaxed);
}

bool opd__c_tier_describe(char *identity, size_t identity_size, char *dir, size_t dir_size) {
  pthread_rwlock_rdlock(&service_lock);
  bool on = service != NULL;
  if (on) {
    snprintf(identity, identity_size, "%s", opd__cc_identity(service));
    snprintf(dir, dir_size, "%s", service_dir);
  }
  pthread_rwlock_unlock(&service_lock);
  return on;
}

bool opd__c_tier_running(void) {
  return atomic_load_explicit(&running, memory_order_relaxed);
}

const char *opd__c_state_name(opd__c_state s) {
  switch (s) {
  case OPD__C_UNTRIED: return "untried";
  case OPD__C_COMPILING: return "compiling";
  case OPD__C_READY: return "ready";
  case OPD__C_FAILED: return "failed";
  case OPD__C_DROPPED: return "dropped";
  case OPD__C_INELIGIBLE: return "ineligible";
  }
  return "?";
}

typedef struct submitted {
  opd_compiled_graph *cg; /* a reference */
  uint32_t group;
} submitted;

/* The service's answer, on its thread. */
static void compiled(void *arg, int rc, opd__cc_module *mod, void *fn, const char *why) {
  submitted *s = arg;
  opd_compiled_graph *cg = s->cg;
  opd__group_state *st = &cg->states[s->group];
  pthread_mutex_lock(&cg->lock);
  uint64_t charged = opd__group_program_bytes(cg, s->group);
  if (rc == 0 && opd__cc_module_bytes(mod) > charged) {
    /* [Note: The programs of fused groups are charged] in footprint.c */
    st->c_state = OPD__C_FAILED;
    snprintf(st->c_why, sizeof st->c_why,
             "its module holds %llu bytes, past the %llu bytes charged for it",
             (unsigned long long)opd__cc_module_bytes(mod), (unsigned long long)charged);
    opd__cc_module_release(mod);
    mod = NULL;
  } else if (rc == 0 && st->numerics == OPD__UNFUSED) {
    st->c_state = OPD__C_DROPPED;
    snprintf(st->c_why, sizeof st->c_why, "the group is pinned unfused by its numerics check");
  } else if (rc == 0) {
    _Static_assert(sizeof fn == sizeof st->c_fn, "a function's address fits an object pointer");
    memcpy(&st->c_fn, &fn, sizeof fn); /* dlsym's answer, as POSIX lets it be used */
    st->c_state = OPD__C_READY;
    st->c_why[0] = '\0';
    opd__group_checks_restart(st);
  } else if (rc == OPD_ECANCELED) {
    st->c_state = OPD__C_UNTRIED; /* the tier stopped; a later one may try again */
  } else {
    st->c_state = OPD__C_FAILED;
    snprintf(st->c_why, sizeof st->c_why, "%s", why ? why : opd_strerror(rc));
  }
  if (mod) st->c_module = mod; /* released with the graph, ready or not */
  pthread_mutex_unlock(&cg->lock);
  opd_compiled_graph_release(cg);
  opd__free(s);
}

void opd__c_tier_submit(opd_compiled_graph *cg, uint32_t gi) {
  const opd__group *grp = &cg->plan->groups[gi];
  opd__group_state *st = &cg->states[gi];
  pthread_mutex_lock(&cg->lock);
  bool mine = st->c_state == OPD__C_UNTRIED;
  if (mine) st->c_state = OPD__C_COMPILING;
  pthread_mutex_unlock(&cg->lock);
  if (!mine) return;
  opd__sbuf src = {0};
  submitted *s = opd__malloc(sizeof *s);
  int rc = s ? opd__pw_c_source(&grp->prog, &src)
             : opd_error(OPD_ENOMEM, "out of memory submitting a fused program");
  if (rc == 0) {
    *s = (submitted){cg, gi};
    opd_compiled_graph_retain(cg);
    pthread_rwlock_rdlock(&service_lock);
    rc = service ? opd__cc_submit(service, src.data, OPD__PW_C_ENTRY, compiled, s) : OPD_ECANCELED;
    pthread_rwlock_unlock(&service_lock);
    if (rc == 0)
      s = NULL; /* the service's now */
    else
      opd_compiled_graph_release(cg);
  }
  opd__sbuf_free(&src);
  opd__free(s);
  if (rc == 0) return;
  pthread_mutex_lock(&cg->lock);
  /* a stopped tier or a full queue: a later run tries again */
  bool again = rc == OPD_ECANCELED || rc == OPD_EBUSY;
  st->c_state = again ? OPD__C_UNTRIED : rc == OPD_EINVAL ? OPD__C_INELIGIBLE : OPD__C_FAILED;
  if (!again) snprintf(st->c_why, sizeof st->c_why, "%s", opd_last_error());
  pthread_mutex_unlock(&cg->lock);
  opd_clear_error();
}
