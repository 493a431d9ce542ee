/* main.c: the `opd` daemon: command line, configuration, signals.
 *
 *   opd [--config FILE] [--listen URL]... [--OPTION VALUE]... | --help | --version
 *
 * The configuration is the defaults, then FILE, then the flags (each option of
 * docs/CONFIG.md is a flag: max_handles is --max-handles; written whole, getopt's
 * abbreviations are refused). --listen flags replace the file's addresses. A bad option or
 * value, or a start that fails (an address in use), is reported and opd exits with status
 * 2. Signals (uv_signal) end it with status 0 ([Note: Stopping the daemon]).
 *
 * [Note: Stopping the daemon]
 * SIGINT, and SIGTERM with `sigterm: "stop"`, stop the server: the listeners close, requests
 * in flight finish (drain_timeout_ms) and every connection is closed. SIGTERM with `sigterm:
 * "drain"` (the default), and the admin's drain, start a session drain first ([Note:
 * Session drain] in loop.c): new sessions are refused, and the daemon stops when the last
 * open session is gone or session_drain_timeout_ms has passed; a check every
 * DRAIN_CHECK_MS watches for either. The admin's undrain ends a drain the admin started;
 * one SIGTERM started goes on (the process was asked to end; a SIGTERM during the admin's
 * drain makes it so). A second SIGTERM, or a SIGINT, during it stops at once.
 */
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "config.h"
#include "opd/error.h"
#include "opd/log.h"
#include "opd/server.h"

enum { FLAG_CONFIG = 1000, FLAG_HELP, FLAG_VERSION, FLAG_OPTION };

static void usage(FILE *f) {
  fprintf(f, "usage: opd [--config FILE] [--listen URL]... [--OPTION VALUE]...\n"
             "\n"
             "opd serves PyTorch ATen operators over its protocol (proto/opd.proto).\n"
             "\n"
             "  --config FILE        read options from a JSON file (see config/opd.json)\n"
             "  --help               print this help and exit\n"
             "  --version            print the version and exit\n"
             "\n"
             "Options (flags override the file; docs/CONFIG.md describes each):\n");
  for (size_t i = 0; i < opd__num_options; i++) {
    char flag[64];
    snprintf(flag, sizeof flag, "--%s %s", opd__options[i].key, opd__options[i].meta);
    for (char *p = flag; *p && *p != ' '; p++)
      if (*p == '_') *p = '-';
    fprintf(f, "  %-28s %s\n", flag, opd__options[i].help);
  }
}

static opd_server *server;

#define DRAIN_CHECK_MS 100

/* The daemon's signal watchers and the drain check ([Note: Stopping the daemon]). */
static struct {
  uv_signal_t sigterm, sigint;
  uv_timer_t drain_check;
  uint32_t session_drain_timeout_ms;
  opd_sigterm_action sigterm_action;
  bool sigterm_drain; /* SIGTERM started a drain: undrain does not end it */
  bool drain_seen;    /* the check saw the drain: since drain_since_ms */
  uint64_t drain_since_ms;
} daemon_state;

/* Ends the main loop: main() then stops the server. */
static void stop_main_loop(void) {
  uv_handle_t *handles[] = {(uv_handle_t *)&daemon_state.sigterm,
                            (uv_handle_t *)&daemon_state.sigint,
                            (uv_handle_t *)&daemon_state.drain_check};
  for (size_t i = 0; i < sizeof handles / sizeof *handles; i++)
    if (!uv_is_closing(handles[i])) uv_close(handles[i], NULL);
}

static void on_drain_check(uv_timer_t *t) {
  if (daemon_state.sigterm_drain) opd_server_set_draining(server, true);
  if (!opd_server_draining(server)) {
    daemon_state.drain_seen = false;
    return;
  }
  uint64_t now = uv_now(t->loop);
  if (!daemon_state.drain_seen) daemon_state.drain_since_ms = now;
  daemon_state.drain_seen = true;
  size_t open = opd_server_num_sessions(server);
  if (open == 0) {
    opd_log(OPD_LOG_INFO, "drained: no session is open; stopping");
  } else if (now - daemon_state.drain_since_ms >= daemon_state.session_drain_timeout_ms) {
    opd_log(OPD_LOG_WARN, "session drain timeout (%u ms): stopping with %zu sessions open",
            daemon_state.session_drain_timeout_ms, open);
  } else {
    return;
  }
  stop_main_loop();
}

/* Whether the flag "--NAME" or "--NAME=VALUE" spells NAME whole (getopt_long also takes a
 * unique prefix: --work for --workers, which would break when an option is added). */
static bool flag_is_whole(const char *flag, const char *name) {
  size_t n = strcspn(flag + 2, "=");
  return strncmp(flag + 2, name, n) == 0 && name[n] == '\0';
}

static void on_signal(uv_signal_t *h, int signum) {
  (void)h;
  bool drain = signum == SIGTERM && daemon_state.sigterm_action == OPD_SIGTERM_DRAIN &&
               !daemon_state.sigterm_drain;
  opd_log(OPD_LOG_INFO, "%s received: %s", signum == SIGTERM ? "SIGTERM" : "SIGINT",
          drain ? "draining the sessions" : "stopping");
  if (!drain) {
    stop_main_loop(); /* main() stops the server */
    return;
  }
  daemon_state.sigterm_drain = true;
  opd_server_set_draining(server, true);
  on_drain_check(&daemon_state.drain_check);
}

/* "unknown option" for a flag getopt_long refused; an abbreviation of several options
 * names them all (a unique one is refused with its option's name above). */
static void unknown_option(const char *flag, const struct option *longopts) {
  size_t len = strcspn(flag, "=");
  fprintf(stderr, "opd: unknown option '%.*s'", (int)len, flag);
  int found = 0;
  if (len > 2 && flag[0] == '-' && flag[1] == '-')
    for (const struct option *o = longopts; o->name; o++)
      if (strncmp(o->name, flag + 2, len - 2) == 0)
        fprintf(stderr, "%s--%s", found++ ? " or " : " (did you mean ", o->name);
  fprintf(stderr, "%s\n", found ? "?)" : "");
}

int main(int argc, char **argv) {
  /* flags: one per option, plus --config, --help, --version */
  struct option longopts[64];
  char names[64][48];
  size_t n = 0;
  for (; n < opd__num_options && n < 60; n++) {
    snprintf(names[n], sizeof names[n], "%s", opd__options[n].key);
    for (char *p = names[n]; *p; p++)
      if (*p == '_') *p = '-';
    longopts[n] = (struct option){names[n], required_argument, NULL, FLAG_OPTION + (int)n};
  }
  longopts[n++] = (struct option){"config", required_argument, NULL, FLAG_CONFIG};
  longopts[n++] = (struct option){"help", no_argument, NULL, FLAG_HELP};
  longopts[n++] = (struct option){"version", no_argument, NULL, FLAG_VERSION};
  longopts[n] = (struct option){0};

  const char *config_file = NULL;
  struct {
    const char *key, *value;
  } flags[256];
  size_t nflags = 0;
  int ch, index, at = 1;
  opterr = 0;
  /* "+": no permutation, so that argv[at] is the flag just read */
  while ((ch = getopt_long(argc, argv, "+:", longopts, &index)) != -1) {
    const char *flag = argv[at];
    at = optind;
    if (ch != '?' && ch != ':' && !flag_is_whole(flag, longopts[index].name)) {
      fprintf(stderr, "opd: unknown option '%.*s' (did you mean --%s?)\nTry 'opd --help'.\n",
              (int)strcspn(flag, "="), flag, longopts[index].name);
      return 2;
    }
    if (ch == FLAG_HELP) {
      usage(stdout);
      return 0;
    }
    if (ch == FLAG_VERSION) {
      printf("opd %s\n", OPD_VERSION);
      return 0;
    }
    if (ch == FLAG_CONFIG) {
      config_file = optarg;
    } else if (ch >= FLAG_OPTION && nflags < sizeof flags / sizeof *flags) {
      flags[nflags].key = opd__options[ch - FLAG_OPTION].key;
      flags[nflags++].value = optarg;
    } else {
      if (ch == ':')
        fprintf(stderr, "opd: option '%s' needs a value\n", argv[optind - 1]);
      else if (ch == '?')
        unknown_option(argv[optind - 1], longopts);
      else
        fprintf(stderr, "opd: too many options\n");
      fprintf(stderr, "Try 'opd --help'.\n");
      return 2;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "opd: unexpected argument '%s'\nTry 'opd --help'.\n", argv[optind]);
    return 2;
  }

  opd_server_config cfg;
  opd_server_config_init(&cfg);
  snprintf(cfg.status, sizeof cfg.status, "%s", OPD__DEFAULT_STATUS);
  /* the admin socket (docs/ADMIN.md): in the user's runtime directory, else /tmp */
  const char *runtime = getenv("XDG_RUNTIME_DIR");
  if (runtime && runtime[0] == '/' && strlen(runtime) < sizeof cfg.admin - 16) {
    memcpy(cfg.admin, runtime, strlen(runtime));
    memcpy(cfg.admin + strlen(runtime), "/opd-admin.sock", 16);
  } else {
    snprintf(cfg.admin, sizeof cfg.admin, "/tmp/opd-admin-%u.sock", (unsigned)getuid());
  }
  char default_admin[sizeof cfg.admin];
  memcpy(default_admin, cfg.admin, sizeof cfg.admin);
  int rc = 0;
  if (config_file) rc = opd_server_config_load(&cfg, config_file);
  bool listen_cleared = false;
  for (size_t i = 0; i < nflags && rc == 0; i++) {
    if (strcmp(flags[i].key, "listen") == 0 && !listen_cleared) {
      opd_server_config_clear_listen(&cfg);
      listen_cleared = true;
    }
    rc = opd_server_config_set(&cfg, flags[i].key, flags[i].value);
  }
  if (rc < 0) {
    fprintf(stderr, "opd: %s\n", opd_last_error());
    opd_server_config_destroy(&cfg);
    return 2;
  }

  /* the signal watchers exist before the server's threads, which block every signal */
  uv_loop_t *loop = uv_default_loop();
  uv_signal_init(loop, &daemon_state.sigterm);
  uv_signal_init(loop, &daemon_state.sigint);
  uv_timer_init(loop, &daemon_state.drain_check);
  daemon_state.sigterm_action = cfg.sigterm;
  daemon_state.session_drain_timeout_ms = cfg.session_drain_timeout_ms;
  /* handled once uv_run runs, when `server` exists */
  uv_signal_start(&daemon_state.sigterm, on_signal, SIGTERM);
  uv_signal_start(&daemon_state.sigint, on_signal, SIGINT);
  signal(SIGPIPE, SIG_IGN);

  rc = opd_server_start(&cfg, &server);
  if (rc == OPD_EEXIST && strcmp(cfg.admin, default_admin) == 0) {
    /* another daemon of this user holds the default admin socket: run without one */
    opd_log(OPD_LOG_WARN, "%s; starting without an admin socket (--admin URL names another)",
            opd_last_error());
    cfg.admin[0] = '\0';
    rc = opd_server_start(&cfg, &server);
  }
  opd_server_config_destroy(&cfg);
  if (rc < 0) {
    fprintf(stderr, "opd: %s\n", opd_last_error());
    return 2;
  }
  uv_timer_start(&daemon_state.drain_check, on_drain_check, DRAIN_CHECK_MS, DRAIN_CHECK_MS);
  opd_log(OPD_LOG_INFO, "opd %s ready", OPD_VERSION);
  uv_run(loop, UV_RUN_DEFAULT);
  opd_server_stop(server);
  uv_loop_close(loop);
  return 0;
}
