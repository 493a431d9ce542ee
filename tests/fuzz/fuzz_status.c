/* fuzz_status.c: requests to the status endpoint (docs/STATUS.md), through what
 * server/src/status.c does with their bytes before it renders an answer:
 *   - the input as a whole HTTP request, read by opd__status_request_feed at once and again
 *     one byte at a time (as a slow client's segments arrive): both must agree on whether
 *     the head is whole, and then on its method and target;
 *   - a whole request's target routed by opd__status_request_target, and an operator's
 *     answer (/v1/ops/{name}, /v1/ops/{name}/dispatch?keys=&include=&exclude=) rendered by
 *     opd__status_op_answer over the built-in operators;
 *   - the input as a bare request target, parsed by opd__status_parse_target (bytes that
 *     http-parser would refuse reach it this way).
 * Every refusal has a status the endpoint documents and a UTF-8 message, a parsed operator
 * name is UTF-8 text without NUL, and every answer is a JSON object of valid UTF-8.
 */
#include "fuzz_common.h"
#include "opd/error.h"
#include "opd/kernels.h"
#include "status.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_check(opd_kernels_register() == 0, "registering the kernels: %s", opd_last_error());
  return 0;
}

static void check_target(int code, const opd__status_target *t) {
  if (code) {
    fuzz_check(code == 400 || code == 404 || code == 405 || code == 414, "status %d", code);
    fuzz_check_text("a refusal's message", t->error);
    return;
  }
  /* OPD__STATUS_GRAPH is the last route of status.h's list */
  fuzz_check(t->route >= OPD__STATUS_PAGE && t->route <= OPD__STATUS_GRAPH, "route %d",
             (int)t->route);
  if (t->route == OPD__STATUS_OP || t->route == OPD__STATUS_OP_DISPATCH ||
      t->route == OPD__STATUS_GRAPH)
    fuzz_check(opd_utf8_valid_text(t->name, strlen(t->name)), "a name in the target: %s", t->name);
}

static void answer(opd__status_target *t) {
  json_t *j = NULL;
  int code = opd__status_op_answer(t, &j);
  if (code != 200) {
    fuzz_check(code == 404 && !j, "an operator's answer: %d", code);
    fuzz_check_text("a refusal's message", t->error);
    return;
  }
  fuzz_check(j != NULL, "an operator's answer without JSON");
  char *text = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  fuzz_check(text != NULL, "an answer jansson cannot write");
  json_decref(fuzz_check_json_object("an operator's answer", text, strlen(text)));
  free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *in = (const char *)data;
  opd__status_request *whole = malloc(sizeof *whole), *bytes = malloc(sizeof *bytes);
  char error[160];
  opd__status_request_init(whole);
  opd__status_request_init(bytes);
  int a = opd__status_request_feed(whole, in, size, error, sizeof error);
  if (a > 1) fuzz_check_text("a refusal's message", error);
  int b = 0;
  for (size_t i = 0; i < size && b == 0; i++)
    b = opd__status_request_feed(bytes, in + i, 1, error, sizeof error);
  fuzz_check(a == 0 || a == 1 || a == 400 || a == 414 || a == 431, "status %d", a);
  fuzz_check((a == 1) == (b == 1), "read at once: %d, a byte at a time: %d", a, b);
  if (a == 1) {
    fuzz_check(whole->parser.method == bytes->parser.method && whole->url_len == bytes->url_len &&
                   memcmp(whole->url, bytes->url, whole->url_len) == 0,
               "the head read at once and a byte at a time differ");
    opd__status_target t;
    int code = opd__status_request_target(whole, &t);
    check_target(code, &t);
    if (code == 0 && (t.route == OPD__STATUS_OP || t.route == OPD__STATUS_OP_DISPATCH)) answer(&t);
  }
  free(whole);
  free(bytes);

  opd__status_target t;
  check_target(opd__status_parse_target(in, size, &t), &t);
  return 0;
}
