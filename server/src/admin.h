/* admin.h: the admin listener (docs/ADMIN.md): a Unix socket created with mode 0600 and,
 * only when configured, a TCP listener that requires a token; length-prefixed JSON
 * requests to load and unload plugins, register and deregister, list, set a session's
 * priority, drain, undrain and shut down (internal to the server). The parsing and running of one
 * request is callable without a socket (opd__admin_handle), for tests and a fuzzing driver.
 */
#ifndef OPD_SERVER_ADMIN_H
#define OPD_SERVER_ADMIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "opd/server.h"

typedef struct opd__admin_config {
  const char *unix_path;  /* the admin socket; NULL or "": none */
  const char *tcp;        /* "HOST:PORT" (port 0: any); NULL or "": none */
  const char *token_file; /* required with tcp: the token, one line */
  const char *plugin_dir; /* NULL or "": loading plugins is refused */
  /* called (on the admin thread) after a shutdown request was answered */
  void (*on_shutdown)(void *arg);
  /* set_priority: puts the open session `id` in class p; OPD_ENOENT when there is none.
   * NULL: the request is refused. */
  int (*set_priority)(void *arg, uint64_t id, opd_priority p);
  /* drain (true) and undrain (false): the server's session drain. NULL: refused. */
  void (*set_draining)(void *arg, bool draining);
  void *arg;
} opd__admin_config;

/* How long a connection may take and how many may be open ([Note: Admin connections] in
 * admin.c). */
typedef struct opd__admin_limits {
  int idle_ms;         /* a connection with no request under way is closed after this */
  int request_ms;      /* a request must arrive whole, and its answer leave, within this */
  int max_connections; /* one more is answered EBUSY and closed */
} opd__admin_limits;
/* 10 s, 10 s, 16: what opd__admin_start uses. */
extern const opd__admin_limits opd__admin_default_limits;

typedef struct opd__admin opd__admin;

/* Binds the listeners and starts the admin thread. 0 or a negative opd error. With neither
 * a socket nor a TCP address, nothing listens: opd__admin_handle is then the only way in. */
int opd__admin_start(const opd__admin_config *c, opd__admin **out);
int opd__admin_start_limited(const opd__admin_config *c, const opd__admin_limits *limits,
                             opd__admin **out);
/* Loads a plugin of the plugin directory as load_plugin does (the plugins option, at start):
 * 0 or a negative opd error with the message. */
int opd__admin_load_plugin(opd__admin *a, const char *file);
/* The TCP listener's port (port 0 resolved), or -1 when there is none. */
int opd__admin_tcp_port(const opd__admin *a);
/* Stops the thread, closes and removes the socket, deregisters what plugins and the admin
 * registered and unloads the plugins. */
void opd__admin_stop(opd__admin *a);

/* What the connection does once the answer to a request has been sent. */
typedef enum opd__admin_after {
  OPD__ADMIN_KEEP,     /* read the next request */
  OPD__ADMIN_CLOSE,    /* close it (a refused token, a malformed frame) */
  OPD__ADMIN_SHUTDOWN, /* close it, then on_shutdown(arg) */
} opd__admin_after;

/* Parses and runs one request: `request` is the frame's len bytes (any bytes: hostile input
 * is answered, never trusted), `tcp` whether it must carry the token. *reply is the answer's
 * JSON text (valid UTF-8, *reply_len bytes, NUL-terminated; the caller frees it with
 * opd__free). Returns what to do next, or OPD_ENOMEM with *reply NULL when no answer could
 * be made. It runs registrations and grace periods: call it from one thread at a time (the
 * admin thread does, for its sockets; an admin without listeners leaves it to the caller). */
int opd__admin_handle(opd__admin *a, const char *request, size_t len, bool tcp, char **reply,
                      size_t *reply_len);

#endif
