/* fuzz_admin.c: admin requests (docs/ADMIN.md), one per line of the input, answered by
 * opd__admin_handle (server/src/admin.c) on an admin started without listeners or a plugin
 * directory (loading plugins is refused), over the built-in operators. The first line is also
 * sent as over TCP, where it must carry a token (none is configured: it is refused and the
 * connection closed).
 *
 * Every answer must be one JSON object of valid UTF-8 with "ok" true, or false with a "code"
 * and an "error" that are strings; only a lack of memory may answer ENOMEM, and this process
 * has memory. Stopping the admin after each input deregisters everything its requests made
 * (admin.h), so inputs do not pile up registrations. Two things the admin rightly does would
 * still change later inputs, so the driver does not send them: a forced deregistration of a
 * registration the input did not make (a built-in one), and a def or registration that names
 * a new operator outside fuzz::[a-z] and fuzz::[a-z].[a-z] (operators are never freed,
 * [Note: The operator map]); the operator count is checked to stay within that room. Nor
 * does it send more than MAX_LISTS list of every operator in one input: each answers every
 * operator's table, which in this build takes up to a second on a loaded machine, so an input
 * of sixteen ran past the timeout (corpus/admin/regress-many-lists).
 *
 * The registry must stay consistent through what the requests do and undo ([Note: Filling
 * the dispatch table]): after each request the tables of the operator it names, and of
 * aten::add.Tensor, have no stale slot (opd_op_count_stale_slots), and a call of
 * aten::add.Tensor on Meta tensors runs or fails with a dispatch error (the requests may
 * have registered fallthroughs and fallbacks anywhere); once the admin has stopped and undone
 * what the requests registered, no operator has a stale slot and that call runs again.
 */
#include "admin.h"
#include "fuzz_common.h"
#include "opd/dispatcher.h"
#include "opd/error.h"
#include "opd/introspect.h"
#include "opd/kernels.h"
#include "opd/log.h"
#include "opd/memory.h"
#include "opd/schema.h"
#include "opd/tensor.h"
#include "worker.h"

#define MAX_LINES 16
#define MAX_LISTS 1 /* of every operator (the file's comment) */
#define MAX_MADE  64
#define NEW_OPS   (26 * 27) /* fuzz::[a-z] and fuzz::[a-z].[a-z] */

static size_t builtin_ops;
static const opd_operator *add;
static opd_tensor *meta;

static void count_op(const opd_operator *op, void *arg) {
  (void)op;
  ++*(size_t *)arg;
}

static size_t num_ops(void) {
  size_t n = 0;
  opd_for_each_op(count_op, &n);
  return n;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  opd_log_set_level(OPD_LOG_ERROR);
  fuzz_check(opd_kernels_register() == 0, "registering the kernels: %s", opd_last_error());
  /* as the daemon: jansson allocates from opd's allocator, and answers are opd__free'd */
  json_set_alloc_funcs(opd__malloc, opd__free);
  builtin_ops = num_ops();
  add = opd_find_op("aten::add.Tensor");
  const int64_t sizes[] = {2, 3};
  fuzz_check(
      add && opd_tensor_empty(sizes, 2, OPD_FLOAT32, (opd_device){OPD_DEVICE_META, -1}, &meta) == 0,
      "the probe's operator and tensor");
  return 0;
}

/* aten::add.Tensor(meta, meta, alpha=1), boxed: its result code. */
static int call_add(void) {
  opd_stack st;
  opd_stack_init(&st);
  opd_ivalue args[3] = {opd_iv_tensor_borrow(meta), opd_iv_tensor_borrow(meta), opd_iv_int(1)};
  for (int i = 0; i < 3; i++) fuzz_check(opd_stack_push(&st, args[i]) == 0, "a push");
  int rc = opd_call_boxed(add, &st);
  opd_stack_destroy(&st);
  return rc;
}

static void check_op(const opd_operator *op, void *arg) {
  (void)arg;
  int stale = opd_op_count_stale_slots(op);
  fuzz_check(stale == 0, "%s has %d stale slots", opd_op_name(op), stale);
}

/* The registry after a request (the file's comment). */
static void check_registry(json_t *req) {
  const char *name = json_string_value(json_object_get(req, "name"));
  const opd_operator *op = name ? opd_find_op(name) : NULL;
  if (op) check_op(op, NULL);
  check_op(add, NULL);
  int rc = call_add();
  fuzz_check(rc == 0 || rc == OPD_ENOTIMPL || rc == OPD_EFALLTHROUGH || rc == OPD_EAMBIGUOUS,
             "aten::add.Tensor on Meta tensors: %d: %s", rc, opd_last_error());
}

/* Whether a request naming operator `name` keeps within the room for new operators (the
 * file's comment): the operator exists, or it is fuzz::[a-z] or fuzz::[a-z].[a-z]. */
static bool room_for(const char *name) {
  if (!name || opd_find_op(name)) return true;
  size_t n = strlen(name);
  return strncmp(name, "fuzz::", 6) == 0 && (n == 7 || (n == 9 && name[7] == '.')) &&
         name[6] >= 'a' && name[6] <= 'z' && (n == 7 || (name[8] >= 'a' && name[8] <= 'z'));
}

/* Whether the operator a def would define keeps within the room (a def refused before its
 * schema names an operator defines none). */
static bool def_has_room(json_t *req) {
  const char *ns = json_string_value(json_object_get(req, "namespace"));
  const char *text = json_string_value(json_object_get(req, "schema"));
  opd_schema *schema;
  if (!ns || !text || opd_schema_parse(text, &schema) != 0) return true;
  char name[512];
  bool room = true;
  if (opd_schema_set_namespace(schema, ns) == 0 &&
      opd_schema_qualified_name(schema, name, sizeof name) < (int)sizeof name)
    room = room_for(name);
  opd_schema_free(schema);
  return room;
}

/* Whether the driver sends this request (the file's comment); `lists` counts the lists of
 * every operator sent. */
static bool sendable(const char *line, size_t len, const json_int_t *made, size_t nmade,
                     int *lists) {
  json_t *req = json_loadb(line, len, JSON_REJECT_DUPLICATES, NULL);
  const char *op = json_string_value(json_object_get(req, "op"));
  bool ok = true;
  if (op && strcmp(op, "deregister") == 0 && json_is_true(json_object_get(req, "force"))) {
    json_t *id = json_object_get(req, "id");
    ok = false;
    for (size_t i = 0; i < nmade && !ok; i++)
      ok = json_is_integer(id) && json_integer_value(id) == made[i];
  } else if (op && strcmp(op, "def") == 0) {
    ok = def_has_room(req);
  } else if (op && strcmp(op, "register") == 0) {
    ok = room_for(json_string_value(json_object_get(req, "name")));
  } else if (op && strcmp(op, "list") == 0 && !json_is_string(json_object_get(req, "name"))) {
    ok = ++*lists <= MAX_LISTS;
  }
  json_decref(req);
  return ok;
}

/* Checks an answer; returns it. */
static json_t *check_answer(const char *reply, size_t len) {
  json_t *j = fuzz_check_json_object("an admin answer", reply, len);
  json_t *ok = json_object_get(j, "ok");
  fuzz_check(json_is_boolean(ok), "an answer without \"ok\": %s", reply);
  if (json_is_false(ok)) {
    const char *code = json_string_value(json_object_get(j, "code"));
    fuzz_check(code && json_is_string(json_object_get(j, "error")),
               "a refusal without a code and an error: %s", reply);
    fuzz_check(strcmp(code, "ENOMEM") != 0 && strcmp(code, "EINTERNAL") != 0,
               "a refusal for want of memory, or internal: %s", reply);
  }
  return j;
}

static void handle(opd__admin *a, const char *line, size_t len, bool tcp, json_int_t *made,
                   size_t *nmade) {
  char *reply = NULL;
  size_t reply_len = 0;
  int after = opd__admin_handle(a, line, len, tcp, &reply, &reply_len);
  fuzz_check(after >= OPD__ADMIN_KEEP && after <= OPD__ADMIN_SHUTDOWN, "opd__admin_handle: %d",
             after);
  fuzz_check(reply && reply[reply_len] == '\0' && strlen(reply) == reply_len,
             "an answer that is not a string of its length");
  json_t *j = check_answer(reply, reply_len);
  if (tcp)
    fuzz_check(after == OPD__ADMIN_CLOSE && json_is_false(json_object_get(j, "ok")),
               "a TCP request without a token answered: %s", reply);
  const char *keys[] = {"id", "def"};
  for (size_t i = 0; i < 2 && json_is_true(json_object_get(j, "ok")); i++) {
    json_t *id = json_object_get(j, keys[i]);
    if (json_is_integer(id) && *nmade < MAX_MADE) made[(*nmade)++] = json_integer_value(id);
  }
  json_decref(j);
  opd__free(reply);
  if (!tcp) {
    json_t *req = json_loadb(line, len, 0, NULL);
    check_registry(req);
    json_decref(req);
  }
}

/* The daemon's set_priority, with one open session, id 1: the admin hands over only a
 * positive id and a class. */
static int set_priority(void *arg, uint64_t id, opd_priority p) {
  (void)arg;
  fuzz_check(id > 0 && opd__priority_name(p), "set_priority(%llu, %d)", (unsigned long long)id,
             (int)p);
  return id == 1
             ? 0
             : opd_error(OPD_ENOENT, "set_priority: no open session %llu", (unsigned long long)id);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const opd__admin_config cfg = {"", "", NULL, "", NULL, set_priority, NULL, NULL};
  opd__admin *a;
  fuzz_check(opd__admin_start(&cfg, &a) == 0, "starting the admin: %s", opd_last_error());
  json_int_t made[MAX_MADE];
  size_t nmade = 0;
  int lists = 0;
  const char *p = (const char *)data, *end = p + size;
  for (int n = 0; n < MAX_LINES && p < end; n++) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t len = (size_t)((nl ? nl : end) - p);
    if (n == 0) handle(a, p, len, true, made, &nmade);
    if (sendable(p, len, made, nmade, &lists)) handle(a, p, len, false, made, &nmade);
    p += len + (nl != NULL);
  }
  opd__admin_stop(a);
  /* every change to a table is a registration, answered with its id: when none was made,
   * stopping undid nothing, and checking every table (most of a run's time) would find
   * nothing new */
  if (nmade) opd_for_each_op(check_op, NULL);
  fuzz_check(call_add() == 0, "aten::add.Tensor on Meta tensors after the admin stopped: %s",
             opd_last_error());
  size_t ops = num_ops();
  fuzz_check(ops <= builtin_ops + NEW_OPS, "%zu operators, %zu built in", ops, builtin_ops);
  return 0;
}
