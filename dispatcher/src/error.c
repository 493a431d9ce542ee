/* error.c: opd error names and messages, and the thread-local last-error buffer. */
#include "opd/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "opd/utf8.h"

#define OPD__ERROR_MESSAGE_MAX 512

static _Thread_local char opd__last_message[OPD__ERROR_MESSAGE_MAX];
static _Thread_local int opd__last_code;

const char *opd_err_name(int err) {
  switch (err) {
#define OPD__ERR_NAME(name, value, msg) \
  case value: return #name;
    OPD_ERRNO_MAP(OPD__ERR_NAME)
#undef OPD__ERR_NAME
  default: return "UNKNOWN";
  }
}

const char *opd_strerror(int err) {
  switch (err) {
#define OPD__ERR_MSG(name, value, msg) \
  case value: return msg;
    OPD_ERRNO_MAP(OPD__ERR_MSG)
#undef OPD__ERR_MSG
  default: return "unknown error";
  }
}

const char *opd_last_error(void) {
  return opd__last_message;
}

int opd_last_error_code(void) {
  return opd__last_code;
}

int opd_error(int err, const char *fmt, ...) {
  /* formatted aside first: the arguments may include opd_last_error() itself (a message
   * that wraps the one before it) */
  char message[sizeof opd__last_message];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  memcpy(opd__last_message, message, sizeof message);
  /* [Note: Strings on the wire are UTF-8]: messages reach clients; one cut by the buffer,
   * or by a %.Ns of a name, must not end inside a character */
  opd_utf8_repair(opd__last_message);
  opd__last_code = err;
  return err;
}

void opd_clear_error(void) {
  opd__last_message[0] = '\0';
  opd__last_code = 0;
}
