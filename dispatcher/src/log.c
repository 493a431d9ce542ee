/* log.c: the process-wide log (opd/log.h). Formatting uses a stack buffer; the handler
 * and level are read without a lock (they are set at start-up or in tests). */
#include "opd/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

static const char *const opd__level_names[] = {"debug", "info", "warn", "error"};

static void default_handler(opd_log_level level, const char *message, void *arg) {
  (void)arg;
  fprintf(stderr, "opd: %s: %s\n", opd__level_names[level], message);
}

static _Atomic int opd__log_level = OPD_LOG_INFO;
static opd_log_handler opd__handler = default_handler;
static void *opd__handler_arg;

void opd_log_set_level(opd_log_level level) {
  opd__log_level = (int)level;
}

void opd_log_set_handler(opd_log_handler handler, void *arg) {
  opd__handler = handler ? handler : default_handler;
  opd__handler_arg = arg;
}

const char *opd_log_level_name(opd_log_level level) {
  return (unsigned)level <= OPD_LOG_ERROR ? opd__level_names[level] : "unknown";
}

void opd_log(opd_log_level level, const char *fmt, ...) {
  if ((int)level < opd__log_level) return;
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  opd__handler(level, buf, opd__handler_arg);
}
