/* config.h: the daemon's options (one table, read by the JSON loader, the command line and
 * --help), listen-URL and HOST:PORT parsing, and the loopback test of an address (internal
 * to the server). */
#ifndef OPD_SERVER_CONFIG_H
#define OPD_SERVER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "opd/server.h"

typedef enum opd__opt_type {
  OPD__OPT_LISTEN,    /* array of URL strings; a flag appends one */
  OPD__OPT_U32,       /* integer in [min, max] */
  OPD__OPT_U64,       /* integer in [min, max] */
  OPD__OPT_MODE,      /* octal permission string "0600" */
  OPD__OPT_LOG_LEVEL, /* "debug", "info", "warn", "error" */
  OPD__OPT_PRIORITY,  /* "normal", "low", "high": an opd_priority */
  OPD__OPT_SIGTERM,   /* "drain", "stop": an opd_sigterm_action */
  OPD__OPT_PLUGINS,   /* array of plugin file names; a flag appends one */
  /* addresses ([Note: Addresses in the configuration] in config.c), stored in a char[max]
   * in their bare form; "": none */
  OPD__OPT_TCP_ADDRESS,  /* tcp://HOST:PORT or HOST:PORT, stored as HOST:PORT */
  OPD__OPT_HTTP_ADDRESS, /* http://HOST:PORT (a trailing / allowed) or HOST:PORT: HOST:PORT */
  OPD__OPT_UNIX_ADDRESS, /* unix:///PATH or a path, stored as the path */
  OPD__OPT_PATH,         /* a file or directory path into a char[max], or "" (none) */
} opd__opt_type;

typedef struct opd__option {
  const char *key;  /* JSON key; the flag is --key with '-' for '_' */
  const char *meta; /* the flag's argument in --help */
  opd__opt_type type;
  size_t offset;     /* in opd_server_config */
  uint64_t min, max; /* integers: the range; strings: the field's size */
  const char *help;
} opd__option;

/* The daemon's status address; opd_server_config_init leaves status "" (off) so that an
 * embedding program opts in, main.c sets this one. */
#define OPD__DEFAULT_STATUS "127.0.0.1:7471"

extern const opd__option opd__options[];
extern const size_t opd__num_options;

/* The most listen addresses, and the largest configuration file (a real one is a few
 * hundred bytes): more is refused, so a hostile file cannot make start-up slow or big. */
#define OPD__MAX_LISTEN       64
#define OPD__CONFIG_MAX_BYTES (1u << 20)

/* The checks done at start: a listener, every URL well formed. 0 or OPD_EINVAL with a
 * message. */
int opd__config_check(const opd_server_config *c);

/* max_bytes_total in bytes, its default (0) resolved: three quarters of physical memory. */
uint64_t opd__max_bytes_total(const opd_server_config *c);

typedef enum opd__listen_kind { OPD__LISTEN_TCP, OPD__LISTEN_UNIX } opd__listen_kind;

#define OPD__UNIX_PATH_MAX 107 /* sun_path holds 108 bytes with the NUL */

typedef struct opd__listen_addr {
  opd__listen_kind kind;
  char host[64];                     /* TCP: a numeric IPv4 or IPv6 address (brackets removed) */
  int port;                          /* TCP: 0..65535 (0: any free port) */
  char path[OPD__UNIX_PATH_MAX + 1]; /* Unix: the socket's path */
} opd__listen_addr;

/* tcp://HOST:PORT (HOST: IPv4, [IPv6] or localhost) or unix://PATH; 0 or OPD_EINVAL. */
int opd__parse_listen_url(const char *url, opd__listen_addr *out);
/* HOST:PORT as in a tcp:// URL (the status endpoint's and admin_tcp's form); 0 or
 * OPD_EINVAL. */
int opd__parse_host_port(const char *host_port, opd__listen_addr *out);
/* Whether only this machine can reach the address: a Unix socket, 127.0.0.0/8, ::1 or
 * ::ffff:127.0.0.0/104. (0.0.0.0 and :: are every interface: not loopback.) */
bool opd__listen_addr_is_loopback(const opd__listen_addr *a);

#endif
