/* opd/log.h: the process-wide log: levels, a replaceable handler, printf-style calls. */
#ifndef OPD_LOG_H
#define OPD_LOG_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum opd_log_level {
  OPD_LOG_DEBUG,
  OPD_LOG_INFO,
  OPD_LOG_WARN,
  OPD_LOG_ERROR,
} opd_log_level;

typedef void (*opd_log_handler)(opd_log_level level, const char *message, void *arg);

/* Messages below `level` are dropped (default: OPD_LOG_INFO). */
void opd_log_set_level(opd_log_level level);
/* Replaces the handler (default: one line on stderr); NULL restores the default. */
void opd_log_set_handler(opd_log_handler handler, void *arg);
void opd_log(opd_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "debug", "info", "warn", "error". */
const char *opd_log_level_name(opd_log_level level);

#ifdef __cplusplus
}
#endif
#endif
