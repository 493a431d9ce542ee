/* fuzz_schema.c: ATen schema text (dispatcher/src/schema.c), which the admin's def and
 * cuda_register take from a peer and plugins from their code. opd_schema_parse must refuse
 * bad text with OPD_ESCHEMA and a UTF-8 message (the admin sends it back); a schema it takes
 * must print (opd_schema_format, c10's format) as text that parses back to an equal schema and
 * prints the same again, and its qualified name must fit that text.
 */
#include "fuzz_common.h"
#include "opd/error.h"
#include "opd/schema.h"

static char *format(const opd_schema *s) {
  int n = opd_schema_format(s, NULL, 0);
  fuzz_check(n >= 0, "opd_schema_format: %d", n);
  char *text = malloc((size_t)n + 1);
  fuzz_check(opd_schema_format(s, text, (size_t)n + 1) == n, "opd_schema_format sized it wrong");
  fuzz_check(strlen(text) == (size_t)n, "a printed schema with a NUL");
  return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  memcpy(text, data, size);
  text[size] = '\0';
  opd_schema *s = NULL;
  int rc = opd_schema_parse(text, &s);
  if (rc < 0) {
    fuzz_check(rc == OPD_ESCHEMA && s == NULL, "opd_schema_parse: %d", rc);
    fuzz_check_text("a refusal's message", opd_last_error());
    free(text);
    return 0;
  }
  fuzz_check(rc == 0 && s != NULL, "opd_schema_parse: %d", rc);
  char *printed = format(s);
  opd_schema *again = NULL;
  rc = opd_schema_parse(printed, &again);
  fuzz_check(rc == 0, "the printed schema '%s' (of '%s') does not parse: %s", printed, text,
             opd_last_error());
  fuzz_check(opd_schema_equal(s, again), "'%s' parses back to another schema than '%s'", printed,
             text);
  char *reprinted = format(again);
  fuzz_check(strcmp(printed, reprinted) == 0, "'%s' prints as '%s'", printed, reprinted);
  int n = opd_schema_qualified_name(s, NULL, 0);
  fuzz_check(n > 0 && (size_t)n < strlen(printed), "a qualified name of %d bytes", n);
  fuzz_check(s->ns && s->name && s->overload, "a schema with a NULL name part");
  free(reprinted);
  free(printed);
  opd_schema_free(again);
  opd_schema_free(s);
  free(text);
  return 0;
}
