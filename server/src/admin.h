/* admin.h: the admin listener (docs/ADMIN.md): a Unix socket created with mode 0600 and,
 * only when configured, a TCP listener that requires a token; length-prefixed JSON
 * requests to load and unload plugins, register and deregister, list, drain and shut down
 * (internal to the server).
 */
#ifndef OPD_SERVER_ADMIN_H
#define OPD_SERVER_ADMIN_H

#include <stdbool.h>

typedef struct opd__admin_config {
  const char *unix_path;  /* the admin socket; NULL or "": none */
  const char *tcp;        /* "HOST:PORT" (port 0: any); NULL or "": none */
  const char *token_file; /* required with tcp: the token, one line */
  const char *plugin_dir; /* NULL or "": loading plugins is refused */
  /* called (on the admin thread) after a drain or shutdown request was answered */
  void (*on_shutdown)(void *arg, bool drain);
  void *arg;
} opd__admin_config;

typedef struct opd__admin opd__admin;

/* Binds the listeners and starts the admin thread. 0 or a negative opd error. */
int opd__admin_start(const opd__admin_config *c, opd__admin **out);
/* The TCP listener's port (port 0 resolved), or -1 when there is none. */
int opd__admin_tcp_port(const opd__admin *a);
/* Stops the thread, closes and removes the socket, deregisters what plugins and the admin
 * registered and unloads the plugins. */
void opd__admin_stop(opd__admin *a);

#endif
