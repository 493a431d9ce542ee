/* oracle_dispatch.c: opd-oracle-dispatch, the replay runner for dispatch oracles recorded
 * from PyTorch 1.13 (format: tests/fixtures/oracle/FORMAT.md).
 *
 *   opd-oracle-dispatch FIXTURE.json [-v]
 *   opd-oracle-dispatch FIXTURE.json --server URL --admin URL --status URL
 *                       [--plugin oracle_markers.so]
 *
 * (--server tcp://HOST:PORT or unix:///PATH; --admin unix:///PATH or a path; --status
 * http://HOST:PORT or HOST:PORT: the daemon's own address forms, docs/CONFIG.md.)
 *
 * The second form replays the scenarios through a running daemon (oracle_rpc.c) whose plugin
 * directory holds the marker plugin (oracle_markers.c); it skips the calls the client RPC
 * cannot make (opd__oracle_rpc_call), and the first form counts those apart so that the two
 * pass counts can be compared (ctest oracle.dispatch.daemon). The key
 * universe and the priority cases (key-set arithmetic) are checked in process in both.
 *
 * For each scenario it performs the registrations (marker kernels that record their marker
 * when they run), compares every table cell with opd's computed table, replays every call
 * with the recorded thread-local include/exclude sets, and then removes what it registered.
 * Priority cases check key-set arithmetic. Each cell, call and priority case is one check.
 * It also checks the fixture's description of the key universe against opd's (key values,
 * orders, alias sets, tensor key sets, default TLS); a mismatch there counts as a failure.
 * The last line is "N passed, M failed"; the exit status is 0 only when M is 0.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracle.h"
#include "opd/dispatcher.h"
#include "opd/introspect.h"
#include "opd/log.h"
#include "opd/tensor.h"

typedef opd__oracle_counts counts;

static counts cells, calls, priority, universe;
/* the in-process calls the daemon replay can make too (opd__oracle_rpc_call) */
static counts rpc_calls;
static const json_t *fixture;
static bool verbose;
static int failures_printed;

void opd__oracle_fail(counts *c, const char *fmt, ...) {
  c->failed++;
  if (failures_printed++ >= 40 && !verbose) return;
  va_list ap;
  va_start(ap, fmt);
  fputs("FAIL ", stdout);
  vprintf(fmt, ap);
  fputc('\n', stdout);
  va_end(ap);
}

const char *opd__oracle_str(const json_t *obj, const char *key) {
  const char *v = json_string_value(json_object_get(obj, key));
  return v ? v : "";
}

char *opd__oracle_dump(const json_t *j) {
  return json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
}

static bool key_named(const char *name, opd_dispatch_key *out) {
  return name && opd_key_from_name(name, out) == 0;
}

/* A key set from a list of key names; false if a name is unknown to opd. */
static bool keyset_of_names(const json_t *names, opd_keyset *out) {
  size_t i;
  json_t *n;
  *out = opd_keyset_empty();
  json_array_foreach(names, i, n) {
    opd_dispatch_key k;
    const char *name = json_string_value(n);
    if (!name || !key_named(name, &k)) return false;
    *out = opd_keyset_union(*out, opd_keyset_of(k));
  }
  return true;
}

static json_t *listed_names(opd_keyset s) {
  json_t *a = json_array();
  opd_keyset_iter it = opd_keyset_iter_begin(s);
  opd_dispatch_key k;
  while (opd_keyset_iter_next(&it, &k)) json_array_append_new(a, json_string(opd_key_name(k)));
  return a;
}

/* ---- the key universe ---- */

/* Compares; borrows `want`, takes `got`. */
static void check_universe_equal(const char *what, json_t *want, json_t *got) {
  if (json_equal(want, got)) {
    universe.passed++;
  } else {
    char *w = opd__oracle_dump(want), *g = opd__oracle_dump(got);
    opd__oracle_fail(&universe, "universe %s: fixture %s, opd %s", what, w, g);
    free(w);
    free(g);
  }
  json_decref(got);
}

static opd_dispatch_key tensor_backend_key(const json_t *kind) {
  /* the backend key is the first listed key that is not an autograd/autocast/view key */
  const json_t *keys = json_object_get(kind, "keys");
  opd_dispatch_key k = OPD_KEY_Undefined;
  if (keys && json_array_size(keys)) key_named(json_string_value(json_array_get(keys, 0)), &k);
  return k;
}

static void check_universe(const json_t *fx) {
  /* key values */
  const char *name;
  json_t *v;
  json_t *want = json_object(), *got = json_object();
  json_object_foreach((json_t *)json_object_get(fx, "key_enum"), name, v) {
    opd_dispatch_key k;
    if (!key_named(name, &k)) continue; /* placeholders and keys opd does not have */
    json_object_set(want, name, v);
    json_object_set_new(got, name, json_integer(k));
  }
  check_universe_equal("key_enum", want, got);
  json_decref(want);
  /* orders */
  json_t *funcs = json_array(), *backends = json_array();
  for (int f = 1; f <= OPD_NUM_FUNCTIONALITIES; f++)
    json_array_append_new(funcs, json_string(opd_key_name((opd_dispatch_key)f)));
  for (int b = 0; b < OPD_NUM_BACKENDS; b++)
    json_array_append_new(backends, json_string(opd_backend_name((opd_backend)b)));
  check_universe_equal("functionality_order", json_object_get(fx, "functionality_order"), funcs);
  check_universe_equal("backend_components", json_object_get(fx, "backend_components"), backends);
  /* alias sets, in the fixture's order (runtime_keys order) */
  json_t *runtime = json_object_get(fx, "runtime_keys");
  json_object_foreach((json_t *)json_object_get(fx, "alias_sets"), name, v) {
    opd_dispatch_key alias;
    if (!key_named(name, &alias)) continue;
    json_t *covered = json_array();
    size_t i;
    json_t *rk;
    json_array_foreach(runtime, i, rk) {
      opd_dispatch_key k;
      if (key_named(json_string_value(rk), &k) && k != OPD_KEY_Undefined &&
          opd_alias_covers(alias, k))
        json_array_append(covered, rk);
    }
    char what[128];
    snprintf(what, sizeof what, "alias_sets[%s]", name);
    check_universe_equal(what, v, covered);
  }
  json_object_foreach((json_t *)json_object_get(fx, "autograd_backend_keys"), name, v) {
    opd_dispatch_key k;
    if (!key_named(name, &k)) continue;
    opd_keyset want_set;
    if (!keyset_of_names(v, &want_set)) continue;
    char what[128];
    snprintf(what, sizeof what, "autograd_backend_keys[%s]", name);
    json_t *want_list = listed_names(want_set);
    check_universe_equal(what, want_list, listed_names(opd_autograd_backend_keyset(k)));
    json_decref(want_list);
  }
  json_object_foreach((json_t *)json_object_get(fx, "tensor_keysets"), name, v) {
    opd_tensor *t = opd_tensor_new(tensor_backend_key(v), false);
    char what[128];
    snprintf(what, sizeof what, "tensor_keysets[%s]", name);
    check_universe_equal(what, json_object_get(v, "keys"),
                         t ? listed_names(opd_tensor_key_set(t)) : json_null());
    if (t) opd_tensor_release(t);
  }
  const json_t *tls = json_object_get(fx, "default_tls");
  opd_local_dispatch_state d = opd_tls_get();
  opd_keyset inc, exc;
  keyset_of_names(json_object_get(tls, "include"), &inc);
  keyset_of_names(json_object_get(tls, "exclude"), &exc);
  json_t *want_inc = listed_names(inc), *want_exc = listed_names(exc);
  check_universe_equal("default_tls.include", want_inc, listed_names(d.included));
  check_universe_equal("default_tls.exclude", want_exc, listed_names(d.excluded));
  json_decref(want_inc);
  json_decref(want_exc);
}

/* ---- scenarios ---- */

#define MAX_REGS 128

typedef struct scenario {
  const char *id;
  char op_name[256];
  const opd_operator *op;
  uint32_t num_args;
  opd_reg_id ids[MAX_REGS];
  const char *markers[MAX_REGS];
  int count;
} scenario;

static const char *last_ran;
static opd_tensor *result_tensor;

/* The marker kernel: records its marker, pops the arguments, returns a tensor. */
static int marker_kernel(const opd_kernel_ctx *ctx, opd_stack *stack) {
  last_ran = ctx->data;
  opd_stack_drop(stack, opd_op_schema(ctx->op)->num_args);
  return opd_stack_push(stack, opd_iv_tensor(result_tensor));
}

static const char *marker_of(const scenario *sc, opd_reg_id id) {
  for (int i = 0; i < sc->count; i++)
    if (sc->ids[i] == id) return sc->markers[i];
  return NULL;
}

static bool perform_registrations(scenario *sc, const json_t *regs) {
  size_t i;
  json_t *r;
  char ns[256];
  const char *sep = strstr(sc->op_name, "::");
  snprintf(ns, sizeof ns, "%.*s", (int)(sep - sc->op_name), sc->op_name);
  json_array_foreach(regs, i, r) {
    const char *kind = opd__oracle_str(r, "kind");
    const char *marker = json_string_value(json_object_get(r, "marker"));
    const char *key_name = json_string_value(json_object_get(r, "key"));
    opd_provenance prov = {"oracle", sc->id, (int)i};
    opd_dispatch_key key = OPD_KEY_Undefined;
    if (key_name && !key_named(key_name, &key)) return false;
    opd_reg_id id;
    if (strcmp(kind, "def") == 0) {
      id = opd_def(ns, json_string_value(json_object_get(r, "schema")), prov);
    } else if (strcmp(kind, "impl") == 0) {
      opd_kernel k = {.boxed = marker_kernel, .data = (void *)marker, .name = marker};
      id = opd_impl(sc->op_name, key, &k, prov);
    } else if (strcmp(kind, "fallthrough") == 0) {
      id = opd_impl_fallthrough(sc->op_name, key, prov);
    } else if (strcmp(kind, "global_fallthrough") == 0) {
      id = opd_fallback_fallthrough(key, prov);
    } else if (strcmp(kind, "remove") == 0) {
      const char *target = opd__oracle_str(r, "target");
      int j = 0;
      while (j < sc->count && !(sc->markers[j] && strcmp(sc->markers[j], target) == 0)) j++;
      if (j == sc->count || opd_deregister(sc->ids[j]) != 0) {
        printf("FAIL %s: cannot remove %s: %s\n", sc->id, target, opd_last_error());
        return false;
      }
      sc->ids[j] = 0;
      continue;
    } else {
      printf("FAIL %s: unknown registration kind %s\n", sc->id, kind);
      return false;
    }
    if (id < 0) {
      printf("FAIL %s: registration %zu (%s): %s\n", sc->id, i, kind, opd_last_error());
      return false;
    }
    if (sc->count == MAX_REGS) return false;
    sc->ids[sc->count] = id;
    sc->markers[sc->count++] = marker;
  }
  sc->op = opd_find_op(sc->op_name);
  return sc->op != NULL;
}

static void remove_registrations(scenario *sc) {
  for (int i = sc->count - 1; i >= 0; i--)
    if (sc->ids[i] > 0) opd_deregister(sc->ids[i]);
}

/* opd's cell in the fixture's vocabulary (marker instead of registration id). */
static json_t *cell_of(const scenario *sc, opd_dispatch_key k) {
  json_t *j = opd_op_slot_json(sc->op, k);
  opd_reg_id id = opd_op_slot_registration(sc->op, k);
  const char *marker = id ? marker_of(sc, id) : NULL;
  json_object_del(j, "registration");
  json_object_del(j, "kernel");
  json_object_del(j, "provenance");
  if (marker) json_object_set_new(j, "marker", json_string(marker));
  return j;
}

static void check_table(const scenario *sc, const json_t *fx, const json_t *table) {
  size_t i;
  json_t *col;
  json_array_foreach(json_object_get(fx, "columns"), i, col) {
    const char *name = json_string_value(col);
    const json_t *want = json_object_get(table, name);
    opd_dispatch_key k;
    if (!key_named(name, &k)) {
      cells.skipped++;
      continue;
    }
    json_t *got = cell_of(sc, k);
    /* opd registers PyTorch's real fallback kernels only where it has their semantics */
    const char *want_src = json_string_value(json_object_get(want, "source"));
    if (want_src && strcmp(want_src, "fallback") == 0 &&
        strcmp(opd__oracle_str(got, "source"), "missing") == 0) {
      cells.skipped++;
    } else if (json_equal(want, got)) {
      cells.passed++;
    } else {
      char *w = opd__oracle_dump(want), *g = opd__oracle_dump(got);
      opd__oracle_fail(&cells, "%s table[%s]: fixture %s, opd %s", sc->id, name, w, g);
      free(w);
      free(g);
    }
    json_decref(got);
  }
}

typedef struct tensor_kinds {
  const char *names[16];
  opd_tensor *tensors[16];
  int count;
} tensor_kinds;

static opd_tensor *tensor_of_kind(const tensor_kinds *tk, const char *name) {
  for (int i = 0; i < tk->count; i++)
    if (strcmp(tk->names[i], name) == 0) return tk->tensors[i];
  return NULL;
}

static const char *error_name(int rc) {
  switch (rc) {
  case OPD_ENOTIMPL: return "NotImplemented";
  case OPD_EAMBIGUOUS: return "AmbiguousAutogradOther";
  case OPD_EFALLTHROUGH: return "FallthroughExecuted";
  default: return opd_err_name(rc);
  }
}

/* Pushes the call's inputs; accumulates their key set. false if a tensor kind is unknown. */
static bool push_inputs(const tensor_kinds *tk, const json_t *inputs, opd_stack *st,
                        opd_keyset *args) {
  size_t i;
  json_t *in;
  json_array_foreach(inputs, i, in) {
    const char *type = opd__oracle_str(in, "type");
    if (strcmp(type, "Tensor") == 0) {
      opd_tensor *t = tensor_of_kind(tk, opd__oracle_str(in, "tensor"));
      if (!t) return false;
      *args = opd_keyset_union(*args, opd_tensor_key_set(t));
      opd_stack_push(st, opd_iv_tensor(t));
    } else if (strcmp(type, "TensorList") == 0) {
      opd_tensor *ts[16];
      size_t n = 0, j;
      json_t *name;
      json_array_foreach(json_object_get(in, "tensors"), j, name) {
        const char *kind = json_string_value(name);
        if (n == 16 || !kind || !(ts[n] = tensor_of_kind(tk, kind))) return false;
        *args = opd_keyset_union(*args, opd_tensor_key_set(ts[n++]));
      }
      opd_ivalue v;
      if (opd_iv_make_tensor_list(&v, ts, n, false) != 0) return false;
      opd_stack_push(st, v);
    } else if (strcmp(type, "int") == 0) {
      opd_stack_push(st, opd_iv_int(json_integer_value(json_object_get(in, "value"))));
    } else if (strcmp(type, "None") == 0) {
      opd_stack_push(st, opd_iv_none());
    } else {
      return false;
    }
  }
  return true;
}

static void check_call(const scenario *sc, const tensor_kinds *tk, size_t index,
                       const json_t *call) {
  opd_keyset include, exclude, args = opd_keyset_empty();
  if (!keyset_of_names(json_object_get(call, "tls_include"), &include)) {
    calls.skipped++;
    return;
  }
  /* a key opd lacks in the exclude set changes nothing */
  exclude = opd_keyset_empty();
  size_t i;
  json_t *n;
  json_array_foreach(json_object_get(call, "tls_exclude"), i, n) {
    opd_dispatch_key k;
    if (key_named(json_string_value(n), &k)) exclude = opd_keyset_union(exclude, opd_keyset_of(k));
  }
  opd_stack st;
  opd_stack_init(&st);
  if (!push_inputs(tk, json_object_get(call, "inputs"), &st, &args)) {
    opd_stack_destroy(&st);
    calls.skipped++;
    return;
  }
  opd_local_dispatch_state saved = opd_tls_get();
  opd_tls_set((opd_local_dispatch_state){include, exclude});
  opd_dispatch_key dispatch_key = opd_keyset_highest_key(opd_call_keyset(sc->op, args));
  last_ran = NULL;
  int rc = opd_call_boxed(sc->op, &st);
  opd_tls_set(saved);
  opd_stack_destroy(&st);

  json_t *got = json_object(), *want = json_object();
  const char *fields[] = {"ran", "error", "error_key", "dispatch_key"};
  for (int f = 0; f < 4; f++) {
    json_t *v = json_object_get(call, fields[f]);
    if (v) json_object_set(want, fields[f], v);
  }
  json_object_set_new(
      got, "dispatch_key",
      json_string(opd_key_name(dispatch_key) ? opd_key_name(dispatch_key) : "(placeholder)"));
  if (rc == 0) {
    json_object_set_new(got, "ran", json_string(last_ran ? last_ran : "(no marker)"));
  } else {
    json_object_set_new(got, "error", json_string(error_name(rc)));
    if (rc != OPD_EFALLTHROUGH)
      json_object_set_new(
          got, "error_key",
          json_string(opd_key_name(dispatch_key) ? opd_key_name(dispatch_key) : "(placeholder)"));
  }
  bool over_rpc = opd__oracle_rpc_call(fixture, call);
  if (json_equal(want, got)) {
    calls.passed++;
    rpc_calls.passed += over_rpc;
  } else {
    rpc_calls.failed += over_rpc;
    char *w = opd__oracle_dump(want), *g = opd__oracle_dump(got);
    opd__oracle_fail(&calls, "%s call %zu (%s): fixture %s, opd %s [%s]", sc->id, index,
                     opd__oracle_str(call, "tls"), w, g, rc ? opd_last_error() : "");
    free(w);
    free(g);
  }
  json_decref(got);
  json_decref(want);
}

static void run_scenario(const json_t *fx, const json_t *js, const tensor_kinds *tk) {
  scenario sc = {.id = opd__oracle_str(js, "id")};
  snprintf(sc.op_name, sizeof sc.op_name, "%s", opd__oracle_str(js, "op"));
  const json_t *table = json_object_get(js, "table");
  const json_t *call_list = json_object_get(js, "calls");
  if (!strstr(sc.op_name, "::") ||
      !perform_registrations(&sc, json_object_get(js, "registrations"))) {
    cells.failed += (long)json_object_size(table);
    calls.failed += (long)json_array_size(call_list);
    failures_printed++;
    remove_registrations(&sc);
    return;
  }
  check_table(&sc, fx, table);
  size_t i;
  json_t *call;
  json_array_foreach(call_list, i, call) check_call(&sc, tk, i, call);
  remove_registrations(&sc);
}

/* ---- priority cases ---- */

static void run_priority(const json_t *p) {
  opd_keyset s, minus;
  const char *id = opd__oracle_str(p, "id");
  if (!keyset_of_names(json_object_get(p, "keys"), &s)) {
    priority.skipped++;
    return;
  }
  const json_t *m = json_object_get(p, "minus");
  if (m) {
    if (!keyset_of_names(m, &minus)) {
      priority.skipped++;
      return;
    }
    s = opd_keyset_minus(s, minus);
  }
  json_t *got = json_object(), *want = json_object();
  opd_dispatch_key h = opd_keyset_highest_key(s);
  json_object_set_new(got, "highest", opd_key_name(h) ? json_string(opd_key_name(h)) : json_null());
  json_object_set_new(got, "listed", listed_names(s));
  json_t *funcs = json_array(), *backends = json_array(), *has = json_object();
  for (int f = 1; f <= OPD_NUM_FUNCTIONALITIES; f++)
    if (s.repr & opd_keyset_of((opd_dispatch_key)f).repr)
      json_array_append_new(funcs, json_string(opd_key_name((opd_dispatch_key)f)));
  for (int b = 0; b < OPD_NUM_BACKENDS; b++)
    if (opd_keyset_has_backend(s, (opd_backend)b))
      json_array_append_new(backends, json_string(opd_backend_name((opd_backend)b)));
  json_object_set_new(got, "raw",
                      json_pack("{s:o, s:o}", "functionality", funcs, "backends", backends));
  const char *name;
  json_t *v;
  json_object_foreach((json_t *)json_object_get(p, "has"), name, v) {
    opd_dispatch_key k;
    if (key_named(name, &k)) json_object_set_new(has, name, json_boolean(opd_keyset_has(s, k)));
  }
  json_object_set_new(got, "has", has);
  const char *fields[] = {"highest", "listed", "raw", "has"};
  for (int f = 0; f < 4; f++) json_object_set(want, fields[f], json_object_get(p, fields[f]));
  if (json_equal(want, got)) {
    priority.passed++;
  } else {
    char *w = opd__oracle_dump(want), *g = opd__oracle_dump(got);
    opd__oracle_fail(&priority, "priority %s: fixture %s, opd %s", id, w, g);
    free(w);
    free(g);
  }
  json_decref(got);
  json_decref(want);
}

static int usage(void) {
  fprintf(stderr, "usage: opd-oracle-dispatch FIXTURE.json [-v]\n"
                  "       opd-oracle-dispatch FIXTURE.json --server URL --admin URL --status URL "
                  "[--plugin FILE.so] [-v]\n"
                  "  --server tcp://HOST:PORT or unix:///PATH, --admin unix:///PATH or a path,\n"
                  "  --status http://HOST:PORT or HOST:PORT\n");
  return 2;
}

int main(int argc, char **argv) {
  const char *path = NULL, *server = NULL, *admin = NULL, *status = NULL;
  const char *plugin = "oracle_markers.so";
  for (int i = 1; i < argc; i++) {
    const char **opt = strcmp(argv[i], "--server") == 0   ? &server
                       : strcmp(argv[i], "--admin") == 0  ? &admin
                       : strcmp(argv[i], "--status") == 0 ? &status
                       : strcmp(argv[i], "--plugin") == 0 ? &plugin
                                                          : NULL;
    if (opt && i + 1 < argc)
      *opt = argv[++i];
    else if (strcmp(argv[i], "-v") == 0)
      verbose = true;
    else if (!opt && !path && argv[i][0] != '-')
      path = argv[i];
    else
      return usage();
  }
  bool over_rpc = server || admin || status;
  if (!path || (over_rpc && !(server && admin && status))) return usage();
  json_error_t err;
  json_t *fx = json_load_file(path, 0, &err);
  if (!fx) {
    fprintf(stderr, "opd-oracle-dispatch: %s:%d: %s\n", path, err.line, err.text);
    return 2;
  }
  if (!json_is_array(json_object_get(fx, "scenarios"))) {
    fprintf(stderr, "opd-oracle-dispatch: %s is not an opd-dispatch-oracle fixture\n", path);
    json_decref(fx);
    return 2;
  }
  fixture = fx;
  if (!verbose) opd_log_set_level(OPD_LOG_ERROR); /* the fixtures override kernels on purpose */
  check_universe(fx);

  tensor_kinds tk = {.count = 0};
  const char *name;
  json_t *v;
  json_object_foreach(json_object_get(fx, "tensor_keysets"), name, v) {
    opd_tensor *t = tk.count < 16
                        ? opd_tensor_new(tensor_backend_key(v),
                                         json_is_true(json_object_get(v, "requires_grad")))
                        : NULL;
    if (!t) continue; /* calls with this kind are skipped */
    tk.names[tk.count] = name;
    tk.tensors[tk.count++] = t;
  }
  result_tensor = opd_tensor_new(OPD_KEY_CPU, false);

  size_t i;
  json_t *x;
  if (over_rpc) {
    if (!opd__oracle_rpc_run(fx, server, admin, status, plugin, &cells, &calls)) {
      json_decref(fx);
      return 2;
    }
  } else {
    json_array_foreach(json_object_get(fx, "scenarios"), i, x) run_scenario(fx, x, &tk);
  }
  /* pure key-set arithmetic: in process in both modes */
  json_array_foreach(json_object_get(fx, "priority"), i, x) run_priority(x);

  printf("universe: %ld passed, %ld failed\n", universe.passed, universe.failed);
  printf("table cells: %ld passed, %ld failed, %ld skipped (PyTorch fallback kernels opd does "
         "not have)\n",
         cells.passed, cells.failed, cells.skipped);
  if (over_rpc)
    printf("calls: %ld passed, %ld failed, %ld skipped (a key opd lacks in the include set, "
           "or a tensor kind whose backend key opd lacks)\n",
           calls.passed, calls.failed, calls.skipped);
  else
    printf("calls: %ld passed, %ld failed, %ld skipped\n", calls.passed, calls.failed,
           calls.skipped);
  printf("priority cases: %ld passed, %ld failed, %ld skipped\n", priority.passed, priority.failed,
         priority.skipped);
  long skipped = cells.skipped + calls.skipped + priority.skipped;
  printf("skipped %ld checks\n", skipped);
  long passed = cells.passed + calls.passed + priority.passed;
  long failed = cells.failed + calls.failed + priority.failed + universe.failed;
  if (!over_rpc)
    printf("the daemon replay's checks (calls it can make: %ld passed, %ld failed): %ld passed, "
           "%ld failed\n",
           rpc_calls.passed, rpc_calls.failed, cells.passed + rpc_calls.passed + priority.passed,
           cells.failed + rpc_calls.failed + priority.failed + universe.failed);
  printf("%ld passed, %ld failed\n", passed, failed);

  for (int t = 0; t < tk.count; t++) opd_tensor_release(tk.tensors[t]);
  opd_tensor_release(result_tensor);
  json_decref(fx);
  return failed ? 1 : 0;
}
