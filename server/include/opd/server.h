/* opd/server.h: the opd daemon as a library: its configuration, and a server started on a
 * background thread and stopped (drained) on request.
 *
 * The `opd` program is a thin command line around this API; tests and other programs embed
 * the daemon with it:
 *
 *   opd_server_config cfg;
 *   opd_server_config_init(&cfg);                   // defaults: see docs/CONFIG.md
 *   opd_server_config_clear_listen(&cfg);
 *   opd_server_config_add_listen(&cfg, "tcp://127.0.0.1:0");   // port 0: any free port
 *   opd_server *srv;
 *   if (opd_server_start(&cfg, &srv) < 0) fail(opd_last_error());
 *   opd_server_config_destroy(&cfg);                // the server keeps its own copy
 *   const char *url = opd_server_listener_url(srv, 0);  // "tcp://127.0.0.1:40123"
 *   ...
 *   opd_server_stop(srv);                           // drains, joins, frees
 *
 * Errors are negative opd error codes with the message in opd_last_error().
 */
#ifndef OPD_SERVER_H
#define OPD_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "opd/log.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A session's class for sharing the workers, with Hello.priority's values
 * (proto/opd.proto; docs/ARCHITECTURE.md, "Fair sharing"). */
typedef enum opd_priority {
  OPD_PRIORITY_NORMAL = 0,
  OPD_PRIORITY_LOW = 1,
  OPD_PRIORITY_HIGH = 2,
} opd_priority;

/* What the opd daemon does on SIGTERM (the option `sigterm`; docs/CONFIG.md, "Stopping"). */
typedef enum opd_sigterm_action {
  OPD_SIGTERM_DRAIN = 0, /* drain the sessions (opd_server_set_draining), then stop */
  OPD_SIGTERM_STOP = 1,  /* stop: requests in flight finish, sessions are closed */
} opd_sigterm_action;

#define OPD_SERVER_MAX_PLUGINS     16 /* entries of the plugins option */
#define OPD_SERVER_PLUGIN_NAME_MAX 64 /* bytes of one, its NUL included */

/* Every option of the daemon (docs/CONFIG.md documents each, config/opd.json holds the
 * defaults). */
typedef struct opd_server_config {
  char **listen;              /* listen URLs: tcp://HOST:PORT, unix:///path (owned) */
  size_t num_listen;          /* at least one to start */
  uint32_t workers;           /* CPU worker threads; 0: one per online CPU */
  uint64_t max_frame_bytes;   /* largest frame payload, either direction */
  uint64_t max_literal_bytes; /* largest inline tensor literal (capped by the frame) */
  uint64_t max_handles;       /* per session */
  uint64_t max_bytes_held;    /* per session: tensor storage bytes its handles keep alive */
  uint64_t max_bytes_total;   /* the daemon's CPU tensor bytes; 0: 3/4 of physical memory */
  uint32_t max_in_flight;     /* per session: requests accepted and not yet answered */
  uint32_t drain_timeout_ms;  /* on stop: how long in-flight requests may take */
  /* the opd daemon's SIGTERM, and how long its session drain waits for the sessions to
   * close before it stops (docs/CONFIG.md, "Stopping") */
  opd_sigterm_action sigterm;
  uint32_t session_drain_timeout_ms;
  /* accepted TCP connections: keepalive probes after tcp_keepalive_idle_s of silence, every
   * tcp_keepalive_interval_s, tcp_keepalive_probes of them unanswered close it (idle 0: no
   * keepalive); data unacknowledged for tcp_user_timeout_ms closes it (0: the kernel's) */
  uint32_t tcp_keepalive_idle_s;
  uint32_t tcp_keepalive_interval_s;
  uint32_t tcp_keepalive_probes;
  uint32_t tcp_user_timeout_ms;
  uint32_t session_idle_timeout_s; /* a session silent this long is closed (0: never) */
  uint32_t unix_socket_mode;       /* permission bits of Unix sockets (0600) */
  opd_log_level log_level;
  /* The addresses below are kept bare (HOST:PORT, a path): opd_server_config_set and
   * opd_server_config_load also take them as URLs (http://, unix://, tcp://) and store
   * them so (docs/CONFIG.md, "Addresses"); a program that fills the fields itself writes
   * the bare form. */
  char status[72]; /* status endpoint HOST:PORT (docs/STATUS.md); "": none (the default
                    * of opd_server_config_init; the opd daemon's is 127.0.0.1:7471) */
  /* the admin listener (docs/ADMIN.md): a Unix socket (mode 0600) at the path `admin`
   * ("": none, the default of opd_server_config_init; the opd daemon's: opd-admin.sock in
   * $XDG_RUNTIME_DIR, else /tmp/opd-admin-UID.sock), and a TCP listener at admin_tcp
   * (HOST:PORT; "": none, the default) that requires the token in admin_token_file */
  char admin[108];
  char admin_tcp[72];
  char admin_token_file[256];
  char plugin_dir[256]; /* where load_plugin finds plugins by file name; "": none */
  /* plugins of plugin_dir loaded at start, before the server serves (docs/CONFIG.md) */
  char plugins[OPD_SERVER_MAX_PLUGINS][OPD_SERVER_PLUGIN_NAME_MAX];
  uint32_t num_plugins;
  /* worker threads per CUDA device (1; docs/CONFIG.md) */
  uint32_t cuda_workers_per_device;
  /* fair sharing of the workers (docs/CONFIG.md, "Fair sharing") */
  uint32_t short_job_us;        /* CPU jobs estimated above it are long */
  uint32_t loop_call_ns;        /* CPU calls estimated at most this run on the loop (0: none) */
  uint32_t worker_nice;         /* the CPU workers' nice value above the daemon's (0: the same) */
  uint32_t max_session_jobs;    /* per session: jobs on workers before reading stops */
  uint32_t max_session_cost_ms; /* per session: their estimated cost before reading stops */
  opd_priority max_priority;    /* the highest class a hello may ask for */
  /* graphs (docs/GRAPHS.md, "The daemon"): what one define may hold, how many graphs a
   * session may hold, the compiled-graph cache's capacity, and the per-pass IR dumps */
  uint32_t max_graph_nodes; /* nodes (a node counts once per value it defines) */
  uint32_t max_graph_inputs;
  uint32_t max_graph_outputs;
  uint64_t max_graph_arg_bytes;  /* constant argument bytes of one graph */
  uint32_t max_graphs;           /* per session */
  uint32_t graph_cache_size;     /* compiled graphs the cache keeps */
  uint32_t graph_benefit_runs;   /* runs that time fused groups both ways; 0: no benefit check */
  char graph_dump_dir[256];      /* "": no dumps */
  uint64_t graph_dump_max_bytes; /* what the dumps may write in all */
  /* the C tier of fused CPU groups (docs/GRAPHS.md, "The C tier"): the compiler, its
   * private cache directory ("": the tier is off, the default) and one compile's limit */
  char graph_cc[256];
  char graph_cc_dir[256];
  uint32_t graph_cc_timeout_ms;
  uint32_t graph_cc_session_queue; /* most of one session's programs waiting to compile */
  uint64_t graph_cc_max_bytes;     /* of the C tier's directory (0: no bound) */
} opd_server_config;

/* Fills in the defaults (listening on tcp://127.0.0.1:7470). */
void opd_server_config_init(opd_server_config *c);
void opd_server_config_destroy(opd_server_config *c);
/* Reads a JSON configuration file over c: every key it names replaces c's value ("listen"
 * replaces the whole list; null keeps the value). Unknown or duplicate keys, wrong types,
 * out-of-range values, addresses of the wrong scheme and files over 1 MiB are errors
 * (OPD_EINVAL, "config FILE: ..."); c is unchanged on error. */
int opd_server_config_load(opd_server_config *c, const char *path);
/* Sets option `key` (a JSON key: "max_handles") from text, as a command-line flag gives
 * it; "listen" appends a URL (at most 64). OPD_EINVAL with a message for a bad key or
 * value. */
int opd_server_config_set(opd_server_config *c, const char *key, const char *value);
/* Appends a listen URL (checked: OPD_EINVAL for a malformed one). */
int opd_server_config_add_listen(opd_server_config *c, const char *url);
void opd_server_config_clear_listen(opd_server_config *c);

typedef struct opd_server opd_server;

/* Registers the built-in operators (opd_kernels_register), binds every listener, starts the
 * worker threads and the event-loop thread. Binding happens before it returns: an address
 * in use, a bad path or a live server on a Unix socket fail here with a message. */
int opd_server_start(const opd_server_config *c, opd_server **out);
size_t opd_server_num_listeners(const opd_server *s);
/* The bound address of listener i, port 0 resolved: "tcp://127.0.0.1:40123". */
const char *opd_server_listener_url(const opd_server *s, size_t i);
/* Its TCP port, or -1 for a Unix socket. */
int opd_server_listener_port(const opd_server *s, size_t i);
/* The status endpoint's bound address, port 0 resolved ("127.0.0.1:40124"), or NULL when
 * it is disabled; its port, or -1. */
const char *opd_server_status_address(const opd_server *s);
int opd_server_status_port(const opd_server *s);
/* Session drain (docs/DEPLOY.md): while draining, GET /v1/ready answers 503, a new hello
 * is refused with UNAVAILABLE ("draining") and the sessions open go on; the embedder stops
 * the server when they are gone (opd_server_num_sessions) or its patience ends. undrain:
 * false. Any thread. */
void opd_server_set_draining(opd_server *s, bool draining);
bool opd_server_draining(const opd_server *s);
/* Connections open on the RPC listeners (a session each once its hello is answered). */
size_t opd_server_num_sessions(opd_server *s);
/* Stops accepting, lets in-flight requests finish and their responses go out (at most
 * drain_timeout_ms; then connections are closed, queued requests cancelled and running
 * ones awaited), joins every thread and frees the server. */
void opd_server_stop(opd_server *s);

#ifdef __cplusplus
}
#endif
#endif
