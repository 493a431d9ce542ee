/* decisions.c: running a fused group (opd__run_group), fused or unfused, and the checks that
 * decide which.
 *
 * [Note: Numerics and benefit of fused groups]
 * A group starts undecided on both counts. While it is (its first runs), a run computes it
 * both ways on the same inputs, unfused (its nodes through the dispatcher, whose results the
 * run goes on with) and fused (into its own outputs), alternating which goes first:
 *   - numerics, on the first such run (opd_graph_options.check_numerics): every value the
 *     program stores must equal the unfused one within rtol 1e-5 and atol 1e-6 (NaN where
 *     the unfused has NaN, infinities exactly, bools exactly; the programs use the kernels'
 *     formulas, so they agree to the bit unless a kernel changes); a group that disagrees is
 *     pinned unfused, counted (opd_graph_numerics_mismatches: opd_graph_numerics_mismatches_total
 *     in /metrics), and the largest difference is kept;
 *   - benefit, over the first benefit_runs runs (none when it is 0: the check is off and every
 *     group stays fused, as the conformance tests run): each way is timed (wall clock) and the
 *     fastest of each kept; then a group that is not faster fused than unfused stays unfused,
 *     "not faster" meaning slower by more than BENEFIT_NOISE (10%) and by more than
 *     BENEFIT_FLOOR_NS (5 us): a run of a few microseconds on a shared machine varies more
 *     than either between two measurements (more still under a sanitizer on a loaded
 *     machine, where a group of a few elements could lose its fusion to the noise alone), and
 *     a group whose fused and unfused times are within them saves memory traffic and kernel
 *     launches the timer cannot see, so it stays fused. The cost of a wrong "fused" is then
 *     at most 5 us a run.
 * While a group's fused program is its compiled C ([Note: The C tier of fused programs] in
 * c_tier.c), the benefit check's runs also time the interpreter beside it (not in the
 * numerics check's run: the interpreter would write the planned buffers the check reads);
 * C that is not faster than the interpreter, by the same rule, is dropped for it, and the
 * interpreter's time is the one judged against the unfused nodes.
 * Once decided, a run computes the group one way only. Both decisions, the times and the
 * difference are in the graph's introspection. A fused run whose inputs have a layout the
 * program cannot read in place (geometry.c) runs unfused instead, and says why.
 * On CUDA ([Note: Fused programs on CUDA] in fused_cuda.c) the first fused run compiles the
 * program (a group whose program does not compile is pinned unfused, the compiler's first
 * words kept as why); the numerics check compares copies of both results brought to the
 * host; the benefit check is not run, since launches return before the kernels finish and
 * timing them would need a synchronisation per run: a fused group there is decided fused
 * (it saves a launch and a round trip through device memory per member).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/compiled.h"
#include "opd/clock.h"
#include "opd/cuda.h"
#include "opd/cuda_nvrtc.h"
#include "opd/error.h"
#include "opd/memory.h"

#define NUMERICS_RTOL    1e-5
#define NUMERICS_ATOL    1e-6
#define BENEFIT_NOISE    0.10
#define BENEFIT_FLOOR_NS 5000

static int run_unfused(opd_compiled_graph *cg, opd__run_ctx *ctx, const opd__group *grp) {
  int rc = 0;
  for (uint32_t i = 0; i < grp->nnodes && rc == 0; i++) rc = opd__run_node(cg, ctx, grp->nodes[i]);
  return rc;
}

/* The device a group runs on: that of the values it stores. */
static opd_device group_device(const opd_compiled_graph *cg, const opd__group *grp) {
  return cg->g->values[grp->prog.stores[0].value].device;
}

/* A CUDA group's compiled program, compiled by the first run that needs it: 0 with *fn, or
 * OPD_EINVAL (the group is then pinned unfused, and the caller runs it unfused) or another
 * error. A program that does not compile (OPD_EINVAL) or whose image the runtime does not
 * load (OPD_EINTERNAL: the same image fails the same way again) is pinned: trying again
 * would compile it with NVRTC on every run, and a fused run would fail instead of running
 * the nodes. Running out of memory, or an unhealthy device, decides nothing. */
static int cuda_function(opd_compiled_graph *cg, uint32_t gi, const opd_nvrtc_function **fn) {
  opd__group_state *st = &cg->states[gi];
  pthread_mutex_lock(&cg->lock);
  *fn = st->cuda_fn;
  bool failed = st->cuda_failed;
  pthread_mutex_unlock(&cg->lock);
  if (*fn) return 0;
  if (failed) return opd_error(OPD_EINVAL, "its CUDA program did not compile or load");
  opd__sbuf src = {0};
  char *log = NULL;
  opd_nvrtc_function *made = NULL;
  int rc = opd__pw_cuda_source(&cg->plan->groups[gi].prog, &src);
  if (rc == 0) rc = opd_nvrtc_function_create(src.data, OPD__PW_CUDA_ENTRY, &made, &log);
  opd__sbuf_free(&src);
  char why[sizeof st->why];
  bool pinned = rc == OPD_EINVAL || rc == OPD_EINTERNAL;
  if (pinned)
    snprintf(why, sizeof why, "its CUDA program did not %s: %.100s",
             rc == OPD_EINVAL ? "compile" : "load", log ? log : opd_last_error());
  pthread_mutex_lock(&cg->lock);
  if (rc == 0 && !st->cuda_fn) {
    st->cuda_fn = made;
    made = NULL;
  } else if (pinned) {
    st->cuda_failed = true;
    st->benefit = OPD__UNFUSED;
    snprintf(st->why, sizeof st->why, "%s", why);
  }
  *fn = st->cuda_fn;
  pthread_mutex_unlock(&cg->lock);
  opd__free(log);                /* the log's copy is opd__malloc'ed (nvrtc_kernel.c) */
  opd_nvrtc_function_free(made); /* another run installed one first */
  return pinned ? opd_error(OPD_EINVAL, "%s", why) : rc;
}

/* The fused program into outs (planned buffers or new tensors; references): on the CPU
 * through cfn, the program compiled to C, or the interpreter when NULL. */
static int run_fused(opd_compiled_graph *cg, opd__run_ctx *ctx, uint32_t gi, opd__pw_tile_fn cfn,
                     opd_tensor **outs) {
  const opd__group *grp = &cg->plan->groups[gi];
  const opd__pw_program *p = &grp->prog;
  const opd_graph *g = cg->g;
  opd_device dev = group_device(cg, grp);
  const opd_nvrtc_function *fn = NULL;
  if (dev.type == OPD_DEVICE_CUDA) {
    int rc = cuda_function(cg, gi, &fn);
    if (rc) return rc;
  }
  opd_tensor *ins[p->nloads ? p->nloads : 1];
  for (uint32_t i = 0; i < p->nloads; i++) {
    const opd__pw_load *l = &p->loads[i];
    ins[i] = l->constant ? l->constant : ctx->vals[l->value];
    if (!ins[i]) return opd_error(OPD_EINTERNAL, "a fused group reads a value not computed yet");
  }
  int rc = 0;
  for (uint32_t k = 0; k < p->nstores; k++) outs[k] = NULL;
  for (uint32_t k = 0; k < p->nstores && rc == 0; k++) {
    uint32_t v = p->stores[k].value;
    const opd_tensor *m = g->values[v].meta;
    if (ctx->planned[v]) {
      opd_tensor_retain(outs[k] = ctx->planned[v]);
    } else {
      rc = opd_tensor_empty(opd_tensor_sizes(m), m->ndim, opd_tensor_dtype(m), dev, &outs[k]);
    }
  }
  if (rc == 0) rc = fn ? opd__pw_cuda_run(p, fn, ins, outs) : opd__pw_run(p, cfn, ins, outs);
  if (rc)
    for (uint32_t k = 0; k < p->nstores; k++)
      if (outs[k]) opd_tensor_release(outs[k]), outs[k] = NULL;
  return rc;
}

/* Hands a fused run's outputs to the run, then makes the group's views used outside it. */
static int deliver(opd_compiled_graph *cg, opd__run_ctx *ctx, const opd__group *grp,
                   opd_tensor **outs) {
  for (uint32_t k = 0; k < grp->prog.nstores; k++) ctx->vals[grp->prog.stores[k].value] = outs[k];
  int rc = 0;
  for (uint32_t i = 0; i < grp->nafter && rc == 0; i++) rc = opd__run_node(cg, ctx, grp->after[i]);
  return rc;
}

/* The largest |a - b| of two tensors of one shape, whose elements are read at pa and pb,
 * or INFINITY when they disagree past the tolerance (NaN against a number, different
 * infinities, different bools). */
static double difference_at(const opd_tensor *a, const char *pa, const opd_tensor *b,
                            const char *pb) {
  int nd = a->ndim;
  int64_t idx[OPD_MAX_DIMS] = {0};
  bool is_bool = opd_tensor_dtype(a) == OPD_BOOL;
  double worst = 0;
  for (int64_t i = 0; i < a->numel; i++) {
    int64_t oa = 0, ob = 0;
    for (int d = 0; d < nd; d++) {
      oa += idx[d] * opd_tensor_strides(a)[d];
      ob += idx[d] * opd_tensor_strides(b)[d];
    }
    if (is_bool) {
      if ((pa[oa] != 0) != (pb[ob] != 0)) return INFINITY;
    } else {
      double x = ((const float *)pa)[oa], y = ((const float *)pb)[ob];
      if (isnan(y) || isinf(y)) {
        if (!(isnan(x) && isnan(y)) && x != y) return INFINITY;
      } else {
        double diff = fabs(x - y);
        if (!(diff <= NUMERICS_ATOL + NUMERICS_RTOL * fabs(y))) return INFINITY;
        if (diff > worst) worst = diff;
      }
    }
    for (int d = nd - 1; d >= 0 && ++idx[d] == opd_tensor_sizes(a)[d]; d--) idx[d] = 0;
  }
  return worst;
}

/* The bytes of storage a tensor's elements span from its first one (strides >= 0, as the
 * values of a graph have). */
static size_t span_bytes(const opd_tensor *t) {
  int64_t last = 0;
  for (int d = 0; d < t->ndim; d++) last += (opd_tensor_sizes(t)[d] - 1) * opd_tensor_strides(t)[d];
  return (size_t)(last + 1) * opd_dtype_size(opd_tensor_dtype(t));
}

/* difference_at, reading device tensors through copies on the host. */
static int difference(const opd_tensor *a, const opd_tensor *b, double *out) {
  if (a->numel == 0) return *out = 0, 0;
  bool da = opd_tensor_device(a).type == OPD_DEVICE_CUDA;
  bool db = opd_tensor_device(b).type == OPD_DEVICE_CUDA;
  char *ha = da ? opd__malloc(span_bytes(a)) : NULL, *hb = db ? opd__malloc(span_bytes(b)) : NULL;
  int rc = (da && !ha) || (db && !hb)
               ? opd_error(OPD_ENOMEM, "out of memory comparing a fused group's results")
               : 0;
  if (rc == 0 && da) rc = opd_cuda_copy_to_host(ha, a, 0, span_bytes(a));
  if (rc == 0 && db) rc = opd_cuda_copy_to_host(hb, b, 0, span_bytes(b));
  if (rc == 0)
    *out = difference_at(a, da ? ha : opd_tensor_data(a), b, db ? hb : opd_tensor_data(b));
  opd__free(ha);
  opd__free(hb);
  return rc;
}

/* groups pinned unfused by the numerics check, over the process's life */
static _Atomic uint64_t numerics_mismatches;

uint64_t opd_graph_numerics_mismatches(void) {
  return atomic_load_explicit(&numerics_mismatches, memory_order_relaxed);
}

void opd__group_checks_restart(opd__group_state *st) {
  st->numerics = st->benefit = OPD__PENDING;
  st->timed = st->interpreter_timed = 0;
  st->interpreter_ns = 0;
  st->fused_ns = st->unfused_ns = 0;
  st->max_abs_diff = 0;
  st->why[0] = '\0';
  st->generation++;
}

static int64_t measured(const opd_compiled_graph *cg, uint32_t gi, bool fused, int64_t ns) {
  return cg->has_hooks && cg->hooks.measured ? cg->hooks.measured(gi, fused, ns, cg->hooks.data)
                                             : ns;
}

static int64_t measured_interpreter(const opd_compiled_graph *cg, uint32_t gi, int64_t ns) {
  return cg->has_hooks && cg->hooks.measured_interpreter
             ? cg->hooks.measured_interpreter(gi, ns, cg->hooks.data)
             : ns;
}

/* Whether a way that took a_ns is not faster than one that took b_ns: slower by more than
 * BENEFIT_NOISE and by more than BENEFIT_FLOOR_NS ([Note: Numerics and benefit of fused
 * groups]). */
static bool slower(int64_t a_ns, int64_t b_ns) {
  return (double)a_ns > (1 + BENEFIT_NOISE) * (double)b_ns && a_ns - b_ns > BENEFIT_FLOOR_NS;
}

/* The interpreter's program run and timed beside the compiled C of a checking run (the
 * tiers' benefit check): its time, or -1 when it could not run (its outputs are dropped). */
static int64_t time_interpreter(opd_compiled_graph *cg, opd__run_ctx *ctx, uint32_t gi) {
  uint32_t n = cg->plan->groups[gi].prog.nstores;
  opd_tensor *outs[n ? n : 1];
  uint64_t t0 = opd_monotonic_ns();
  int rc = run_fused(cg, ctx, gi, NULL, outs);
  int64_t ns = (int64_t)(opd_monotonic_ns() - t0);
  if (rc) {
    opd_clear_error();
    return -1;
  }
  for (uint32_t k = 0; k < n; k++) opd_tensor_release(outs[k]);
  return ns;
}

/* One checking run: both ways, compared and timed. The unfused results go on. */
static int check_run(opd_compiled_graph *cg, opd__run_ctx *ctx, uint32_t gi, bool numerics) {
  const opd__group *grp = &cg->plan->groups[gi];
  opd__group_state *st = &cg->states[gi];
  uint32_t n = grp->prog.nstores;
  opd_tensor *outs[n ? n : 1];
  pthread_mutex_lock(&cg->lock);
  bool fused_first = st->timed % 2 == 1;
  uint32_t generation = st->generation;
  opd__pw_tile_fn cfn = st->c_fn;
  /* not beside the numerics check: the interpreter writes the planned buffers the check
   * reads the compiled C's results from */
  bool timing_tiers = cfn && !numerics && cg->options.benefit_runs && st->benefit == OPD__PENDING;
  pthread_mutex_unlock(&cg->lock);
  int64_t tf = 0, tu = 0;
  uint64_t t0;
  int rc = 0, frc = OPD_EINVAL; /* the fused run's result, until it ran */
  if (fused_first) {
    t0 = opd_monotonic_ns();
    frc = run_fused(cg, ctx, gi, cfn, outs);
    tf = (int64_t)(opd_monotonic_ns() - t0);
  }
  t0 = opd_monotonic_ns();
  rc = run_unfused(cg, ctx, grp);
  tu = (int64_t)(opd_monotonic_ns() - t0);
  if (!fused_first && rc == 0) {
    t0 = opd_monotonic_ns();
    frc = run_fused(cg, ctx, gi, cfn, outs);
    tf = (int64_t)(opd_monotonic_ns() - t0);
  }
  if (rc) {
    if (frc == 0)
      for (uint32_t k = 0; k < n; k++) opd_tensor_release(outs[k]);
    return rc;
  }
  int64_t ti = timing_tiers && frc == 0 ? time_interpreter(cg, ctx, gi) : -1;
  pthread_mutex_lock(&cg->lock);
  /* false when the group's fused program changed during this run: it checked the old one */
  bool current = st->generation == generation;
  if (current && frc) {
    snprintf(st->why, sizeof st->why, "%s", opd_last_error());
    opd_clear_error();
  } else if (current) {
    if (cg->has_hooks && cg->hooks.after_fused) cg->hooks.after_fused(gi, outs, n, cg->hooks.data);
    if (numerics && st->numerics == OPD__PENDING) {
      double worst = 0;
      for (uint32_t k = 0; k < n && rc == 0; k++) {
        double d = 0;
        rc = difference(outs[k], ctx->vals[grp->prog.stores[k].value], &d);
        if (d > worst) worst = d;
      }
      st->max_abs_diff = worst;
      /* results that could not be compared (no memory, a device error) decide nothing */
      if (rc == 0 && isinf(worst) && cfn) {
        /* the program compiled to C disagrees: the interpreter's is checked again
         * ([Note: The C tier of fused programs] in c_tier.c) */
        st->c_fn = NULL;
        st->c_state = OPD__C_DROPPED;
        snprintf(st->c_why, sizeof st->c_why,
                 "its results differ from the unfused ones past rtol %g, atol %g", NUMERICS_RTOL,
                 NUMERICS_ATOL);
        opd__c_tier_count_mismatch();
        opd__group_checks_restart(st);
      } else if (rc == 0 && isinf(worst)) {
        st->numerics = OPD__UNFUSED;
        snprintf(st->why, sizeof st->why,
                 "fused results differ from the unfused ones past rtol %g, atol %g", NUMERICS_RTOL,
                 NUMERICS_ATOL);
        atomic_fetch_add_explicit(&numerics_mismatches, 1, memory_order_relaxed);
      } else if (rc == 0) {
        st->numerics = OPD__FUSED;
      }
    }
  }
  /* still current: the numerics check above may have dropped the compiled C */
  if (st->generation == generation && frc == 0) {
    tf = measured(cg, gi, true, tf);
    tu = measured(cg, gi, false, tu);
    if (ti >= 0 && st->c_fn) {
      ti = measured_interpreter(cg, gi, ti);
      if (st->interpreter_timed == 0 || ti < st->interpreter_ns) st->interpreter_ns = ti;
      st->interpreter_timed++;
    }
    if (st->timed == 0 || tf < st->fused_ns) st->fused_ns = tf;
    if (st->timed == 0 || tu < st->unfused_ns) st->unfused_ns = tu;
    st->timed++;
    if (group_device(cg, grp).type == OPD_DEVICE_CUDA) {
      if (st->benefit == OPD__PENDING) st->benefit = OPD__FUSED; /* not timed: see the Note */
    } else if (cg->options.benefit_runs && st->benefit == OPD__PENDING &&
               st->timed >= cg->options.benefit_runs) { /* 0: no benefit check at all */
      if (st->c_fn && st->interpreter_timed && slower(st->fused_ns, st->interpreter_ns)) {
        /* the compiled C is not faster than the interpreter: the interpreter it is */
        st->c_fn = NULL;
        st->c_state = OPD__C_DROPPED;
        snprintf(st->c_why, sizeof st->c_why,
                 "slower than the interpreter: %lld ns against %lld ns a run",
                 (long long)st->fused_ns, (long long)st->interpreter_ns);
        st->fused_ns = st->interpreter_ns;
      }
      st->benefit = slower(st->fused_ns, st->unfused_ns) ? OPD__UNFUSED : OPD__FUSED;
    }
  }
  st->unfused_runs++;
  pthread_mutex_unlock(&cg->lock);
  if (frc == 0)
    for (uint32_t k = 0; k < n; k++) opd_tensor_release(outs[k]);
  return rc;
}

int opd__run_group(opd_compiled_graph *cg, opd__run_ctx *ctx, uint32_t gi, uint32_t *kernels) {
  const opd__group *grp = &cg->plan->groups[gi];
  opd__group_state *st = &cg->states[gi];
  pthread_mutex_lock(&cg->lock);
  bool numerics = cg->options.check_numerics && st->numerics == OPD__PENDING;
  bool benefit = cg->options.benefit_runs && st->benefit == OPD__PENDING;
  bool fused = st->numerics != OPD__UNFUSED && st->benefit != OPD__UNFUSED;
  bool untried = st->c_state == OPD__C_UNTRIED;
  opd__pw_tile_fn cfn = st->c_fn;
  pthread_mutex_unlock(&cg->lock);
  if (untried && fused && opd__c_tier_running()) {
    if (group_device(cg, grp).type == OPD_DEVICE_CPU && cg->c_tier) {
      opd__c_tier_submit(cg, gi);
    } else if (group_device(cg, grp).type == OPD_DEVICE_CPU) {
      pthread_mutex_lock(&cg->lock);
      st->c_state = OPD__C_INELIGIBLE; /* [Note: The programs of fused groups are charged] */
      snprintf(st->c_why, sizeof st->c_why, "compiled while the C tier was off: no module charged");
      pthread_mutex_unlock(&cg->lock);
    } else {
      pthread_mutex_lock(&cg->lock);
      st->c_state = OPD__C_INELIGIBLE;
      snprintf(st->c_why, sizeof st->c_why, "a CUDA group (NVRTC compiles it)");
      pthread_mutex_unlock(&cg->lock);
    }
  }
  if (fused && (numerics || benefit)) {
    *kernels = grp->ncompute;
    return check_run(cg, ctx, gi, numerics);
  }
  if (fused) {
    uint32_t n = grp->prog.nstores;
    opd_tensor *outs[n ? n : 1];
    int rc = run_fused(cg, ctx, gi, cfn, outs);
    if (rc == 0) {
      *kernels = 1;
      pthread_mutex_lock(&cg->lock);
      st->fused_runs++;
      pthread_mutex_unlock(&cg->lock);
      return deliver(cg, ctx, grp, outs);
    }
    if (rc != OPD_EINVAL) return rc;
    pthread_mutex_lock(&cg->lock);
    snprintf(st->why, sizeof st->why, "%s", opd_last_error());
    pthread_mutex_unlock(&cg->lock);
    opd_clear_error();
  }
  *kernels = grp->ncompute;
  pthread_mutex_lock(&cg->lock);
  st->unfused_runs++;
  pthread_mutex_unlock(&cg->lock);
  return run_unfused(cg, ctx, grp);
}
