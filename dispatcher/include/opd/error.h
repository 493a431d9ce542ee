/* opd/error.h: error codes and the thread-local error message.
 *
 * Every fallible opd function returns 0 (or a non-negative value) on success and a
 * negative opd error code on failure, as libuv does. The human-readable message of the
 * last failure on this thread is kept in a fixed thread-local buffer (no allocation), in
 * the spirit of a C++ exception's what(): `opd_last_error()` reads it.
 */
#ifndef OPD_ERROR_H
#define OPD_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* X(name, value, message). The names are the protocol's error kinds too. */
#define OPD_ERRNO_MAP(X)                             \
  X(EINVAL, -1, "invalid argument")                  \
  X(ENOENT, -2, "not found")                         \
  X(EEXIST, -3, "already exists")                    \
  X(ENOTIMPL, -4, "no kernel for this dispatch key") \
  X(EAMBIGUOUS, -5, "ambiguous autograd kernel")     \
  X(EFALLTHROUGH, -6, "fallthrough kernel executed") \
  X(ENOMEM, -7, "out of memory")                     \
  X(ERESOURCE, -8, "resource exhausted")             \
  X(ECANCELED, -9, "cancelled")                      \
  X(EINTERNAL, -10, "internal error")                \
  X(ESCHEMA, -11, "bad operator schema")             \
  X(EBUSY, -12, "busy")                              \
  X(EINDEX, -13, "index out of range")               \
  X(EUNAVAILABLE, -14, "device unavailable")         \
  X(ESESSION, -15, "session lost")

typedef enum {
#define OPD__ERR_ENUM(name, value, msg) OPD_##name = value,
  OPD_ERRNO_MAP(OPD__ERR_ENUM)
#undef OPD__ERR_ENUM
} opd_errno;

/* "EINVAL" for OPD_EINVAL; "UNKNOWN" for anything else. */
const char *opd_err_name(int err);
/* "invalid argument" for OPD_EINVAL. */
const char *opd_strerror(int err);

/* The message of the last error recorded on this thread ("" if none). */
const char *opd_last_error(void);
/* The code that went with it (0 if none). */
int opd_last_error_code(void);

/* Records a formatted message for this thread and returns `err`, so that a failing
 * function can `return opd_error(OPD_EINVAL, "dim %d out of range", d);`. */
int opd_error(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Forgets the thread's last error. */
void opd_clear_error(void);

#ifdef __cplusplus
}
#endif
#endif
