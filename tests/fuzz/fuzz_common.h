/* fuzz_common.h: what the libFuzzer drivers of tests/fuzz share: a check that aborts (libFuzzer
 * then records the input as a crash), and checks of what the daemon sends back (a Response
 * frame, a JSON text) that every driver applies to every answer.
 */
#ifndef OPD_FUZZ_COMMON_H
#define OPD_FUZZ_COMMON_H

#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opd.pb-c.h"
#include "opd/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* An invariant of the code under test: when it fails, the input is a crash. */
__attribute__((format(printf, 2, 3), unused)) static void fuzz_check(bool ok, const char *fmt,
                                                                     ...) {
  if (ok) return;
  va_list ap;
  va_start(ap, fmt);
  fputs("fuzz check failed: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  abort();
}

/* A string the daemon sends: valid UTF-8 ([Note: Strings on the wire are UTF-8]). */
__attribute__((unused)) static void fuzz_check_text(const char *what, const char *s) {
  fuzz_check(s != NULL, "%s: NULL", what);
  fuzz_check(opd_utf8_valid(s, strlen(s)), "%s is not valid UTF-8: \"%s\"", what, s);
}

/* A JSON answer: valid UTF-8 text that holds one JSON object. Returns it (the caller
 * decrefs). */
__attribute__((unused)) static json_t *fuzz_check_json_object(const char *what, const char *text,
                                                              size_t len) {
  fuzz_check(text != NULL, "%s: no text", what);
  fuzz_check(opd_utf8_valid(text, len), "%s is not valid UTF-8: %.*s", what, (int)len, text);
  json_error_t err;
  json_t *j = json_loadb(text, len, 0, &err);
  fuzz_check(json_is_object(j), "%s is not a JSON object (%s): %.*s", what, err.text, (int)len,
             text);
  return j;
}

/* A Response frame (its 4-byte little-endian length, then the message) that answers request
 * `id`: the length matches, protobuf-c decodes it, its id is `id`, it has a body, and an
 * error's strings are UTF-8 and its code is not INTERNAL (a hostile request is the client's
 * fault, never the server's). Returns the response (free it with fuzz_response_free). */
__attribute__((unused)) static Opd__V1__Response *fuzz_check_response(const uint8_t *frame,
                                                                      size_t len, uint64_t id) {
  fuzz_check(len >= 4, "a response frame of %zu bytes", len);
  uint32_t n = (uint32_t)frame[0] | (uint32_t)frame[1] << 8 | (uint32_t)frame[2] << 16 |
               (uint32_t)frame[3] << 24;
  fuzz_check(n == len - 4, "a response frame of %zu bytes says %u", len - 4, n);
  Opd__V1__Response *r = opd__v1__response__unpack(NULL, n, frame + 4);
  fuzz_check(r != NULL, "a response that protobuf-c cannot decode");
  fuzz_check(r->id == id, "the response to request %llu has id %llu", (unsigned long long)id,
             (unsigned long long)r->id);
  fuzz_check(r->body_case != OPD__V1__RESPONSE__BODY__NOT_SET, "a response without a body");
  if (r->body_case == OPD__V1__RESPONSE__BODY_ERROR) {
    fuzz_check_text("an error's message", r->error->message);
    fuzz_check_text("an error's op", r->error->op);
    fuzz_check(r->error->code != OPD__V1__ERROR_CODE__INTERNAL &&
                   r->error->code != OPD__V1__ERROR_CODE__UNKNOWN,
               "an internal error (code %d): %s", (int)r->error->code, r->error->message);
  }
  return r;
}

__attribute__((unused)) static void fuzz_response_free(Opd__V1__Response *r) {
  opd__v1__response__free_unpacked(r, NULL);
}

#endif
