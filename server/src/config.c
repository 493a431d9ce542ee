/* config.c: the daemon's configuration: defaults, the option table, the JSON file (jansson)
 * and single options from the command line, all strictly checked: an unknown key, a value
 * of the wrong type or out of range is an error that names the key, the value and what is
 * allowed, and the daemon refuses to start. The file and the flags are hostile input: the
 * file is read up to OPD__CONFIG_MAX_BYTES, duplicate keys and NUL bytes are refused,
 * jansson bounds the nesting, a value quoted in a message is cut short. Addresses take URLs
 * ([Note: Addresses in the configuration]). docs/CONFIG.md documents every option. */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opd/error.h"
#include "opd/graph_exec.h"
#include "opd/memory.h"

#define DEFAULT_LISTEN "tcp://127.0.0.1:7470"
#define DEFAULT_STATUS OPD__DEFAULT_STATUS

#define OPT(key, meta, type, field, min, max, help) \
  { key, meta, type, offsetof(opd_server_config, field), min, max, help }
/* a string option: max is the size of its field */
#define STR_OPT(key, meta, type, field, help) \
  OPT(key, meta, type, field, 0, sizeof(((opd_server_config *)0)->field), help)

const opd__option opd__options[] = {
    OPT("listen", "URL", OPD__OPT_LISTEN, listen, 0, 0,
        "address to listen on: tcp://HOST:PORT or unix:///PATH (repeatable; default " DEFAULT_LISTEN
        ")"),
    OPT("workers", "N", OPD__OPT_U32, workers, 0, 1024,
        "CPU worker threads that run requests; 0: one per online CPU (default 0)"),
    OPT("cuda_workers_per_device", "N", OPD__OPT_U32, cuda_workers_per_device, 1, 64,
        "worker threads per CUDA device, which run its sessions' work on their streams "
        "(default 1)"),
    OPT("max_frame_bytes", "BYTES", OPD__OPT_U64, max_frame_bytes, 4096, UINT64_C(1) << 28,
        "largest frame (message) either way; a longer one closes the connection "
        "(default 1048576)"),
    OPT("max_literal_bytes", "BYTES", OPD__OPT_U64, max_literal_bytes, 0, UINT64_C(1) << 28,
        "largest inline tensor literal in a call; at most max_frame_bytes applies "
        "(default 65536)"),
    OPT("max_handles", "N", OPD__OPT_U64, max_handles, 1, UINT64_C(1) << 32,
        "most tensor handles one session may hold (default 65536)"),
    OPT("max_bytes_held", "BYTES", OPD__OPT_U64, max_bytes_held, 0, UINT64_C(1) << 60,
        "most tensor storage bytes one session's handles may keep alive (default 8 GiB)"),
    OPT("max_bytes_total", "BYTES", OPD__OPT_U64, max_bytes_total, 0, UINT64_C(1) << 62,
        "most CPU tensor bytes the whole daemon may hold, every session's together; 0: three "
        "quarters of the machine's physical memory (default 0)"),
    OPT("max_in_flight", "N", OPD__OPT_U32, max_in_flight, 1, 1u << 20,
        "most requests of one session accepted and not yet answered (default 1024)"),
    OPT("short_job_us", "US", OPD__OPT_U32, short_job_us, 1, 100000000,
        "CPU jobs estimated to take longer are long: they never run on the short-work lane "
        "(default 100)"),
    OPT("loop_call_ns", "NS", OPD__OPT_U32, loop_call_ns, 0, 1000000,
        "CPU calls estimated to take at most this many nanoseconds run on the event-loop "
        "thread when their session has nothing on workers; 0: every call goes to a worker "
        "(default 2000)"),
    OPT("worker_nice", "N", OPD__OPT_U32, worker_nice, 0, 19,
        "how much nicer than the daemon's other threads its CPU workers run, so that the "
        "event loop, the lane and the clients on the same CPUs preempt their long jobs "
        "(default 6)"),
    OPT("max_session_jobs", "N", OPD__OPT_U32, max_session_jobs, 1, 1u << 20,
        "per session: jobs queued or running on workers at which the daemon stops reading "
        "the session's requests until some are done (default 256)"),
    OPT("max_session_cost_ms", "MS", OPD__OPT_U32, max_session_cost_ms, 1, 86400000,
        "per session: estimated milliseconds of work on workers at which the daemon stops "
        "reading the session's requests until some are done (default 2000)"),
    OPT("max_priority", "CLASS", OPD__OPT_PRIORITY, max_priority, 0, 0,
        "the highest priority class a session may ask for at hello: low, normal or high "
        "(default normal)"),
    OPT("drain_timeout_ms", "MS", OPD__OPT_U32, drain_timeout_ms, 0, 3600000,
        "on SIGTERM/SIGINT, how long in-flight requests may take before connections are "
        "closed (default 5000)"),
    OPT("sigterm", "ACTION", OPD__OPT_SIGTERM, sigterm, 0, 0,
        "what SIGTERM does: drain (refuse new sessions, serve the open ones until they close "
        "or session_drain_timeout_ms passes, then stop) or stop (default drain)"),
    OPT("session_drain_timeout_ms", "MS", OPD__OPT_U32, session_drain_timeout_ms, 0, 86400000,
        "how long a session drain waits for the open sessions to close before the daemon "
        "stops (default 60000)"),
    OPT("tcp_keepalive_idle_s", "S", OPD__OPT_U32, tcp_keepalive_idle_s, 0, 32767,
        "seconds of silence on a client's TCP connection before keepalive probes start; 0: no "
        "keepalive (default 5)"),
    OPT("tcp_keepalive_interval_s", "S", OPD__OPT_U32, tcp_keepalive_interval_s, 1, 32767,
        "seconds between keepalive probes (default 2)"),
    OPT("tcp_keepalive_probes", "N", OPD__OPT_U32, tcp_keepalive_probes, 1, 127,
        "keepalive probes unanswered before the connection and its session are closed "
        "(default 3)"),
    OPT("tcp_user_timeout_ms", "MS", OPD__OPT_U32, tcp_user_timeout_ms, 0, 86400000,
        "how long data sent to a client may stay unacknowledged before the connection and its "
        "session are closed (TCP_USER_TIMEOUT); 0: the kernel's retries, about 15 minutes "
        "(default 15000)"),
    OPT("session_idle_timeout_s", "S", OPD__OPT_U32, session_idle_timeout_s, 0, 31536000,
        "a session whose client sent nothing for this long, with nothing in flight, is closed "
        "and its handles freed; 0: never (default 0)"),
    OPT("unix_socket_mode", "MODE", OPD__OPT_MODE, unix_socket_mode, 0, 0777,
        "permission bits of Unix sockets, octal (default \"0600\")"),
    OPT("log_level", "LEVEL", OPD__OPT_LOG_LEVEL, log_level, 0, 0,
        "debug, info, warn or error (default info)"),
    STR_OPT("status", "URL", OPD__OPT_HTTP_ADDRESS, status,
            "the HTTP status endpoint (docs/STATUS.md): http://HOST:PORT or HOST:PORT; \"\" "
            "disables it (default http://" DEFAULT_STATUS ")"),
    STR_OPT("admin", "URL", OPD__OPT_UNIX_ADDRESS, admin,
            "the admin Unix socket (docs/ADMIN.md), created with mode 0600: unix:///PATH or a "
            "path; \"\" disables it (default opd-admin.sock in $XDG_RUNTIME_DIR, else "
            "/tmp/opd-admin-UID.sock)"),
    STR_OPT("admin_tcp", "URL", OPD__OPT_TCP_ADDRESS, admin_tcp,
            "a TCP admin listener: tcp://HOST:PORT or HOST:PORT; it requires admin_token_file "
            "(default \"\": none)"),
    STR_OPT("admin_token_file", "FILE", OPD__OPT_PATH, admin_token_file,
            "file holding the token TCP admin requests must carry (default \"\")"),
    STR_OPT("plugin_dir", "DIR", OPD__OPT_PATH, plugin_dir,
            "directory load_plugin loads plugins from, by file name only (default \"\": none)"),
    OPT("plugins", "FILE", OPD__OPT_PLUGINS, plugins, 0, 0,
        "a plugin of plugin_dir (a file name) loaded at start, before the daemon serves; a "
        "plugin that fails to load stops the start (repeatable; default none)"),
    OPT("max_graph_nodes", "N", OPD__OPT_U32, max_graph_nodes, 1, 1u << 20,
        "most nodes in one graph a client defines; a node counts once per value it defines "
        "(default 4096)"),
    OPT("max_graph_inputs", "N", OPD__OPT_U32, max_graph_inputs, 0, 1u << 16,
        "most inputs and parameters of one graph (default 256)"),
    OPT("max_graph_outputs", "N", OPD__OPT_U32, max_graph_outputs, 1, 1u << 16,
        "most outputs of one graph (default 256)"),
    OPT("max_graph_arg_bytes", "BYTES", OPD__OPT_U64, max_graph_arg_bytes, 0, UINT64_C(1) << 28,
        "most bytes of constant arguments (lists, strings, literals) in one graph "
        "(default 1048576)"),
    OPT("max_graphs", "N", OPD__OPT_U32, max_graphs, 0, 1u << 20,
        "most graphs one session may hold defined (default 256)"),
    OPT("graph_cache_size", "N", OPD__OPT_U32, graph_cache_size, 1, 1u << 20,
        "compiled graphs the daemon's cache keeps, least recently used evicted first "
        "(default 256)"),
    OPT("graph_benefit_runs", "N", OPD__OPT_U32, graph_benefit_runs, 0, OPD_GRAPH_BENEFIT_RUNS_MAX,
        "first runs of a graph that time each fused group fused and unfused; a group not "
        "faster fused stays unfused; 0: every group stays fused (default 5)"),
    STR_OPT("graph_dump_dir", "DIR", OPD__OPT_PATH, graph_dump_dir,
            "directory where each newly compiled graph's IR after every pass is written, one "
            "file per graph named by its cache key, mode 0600 (the directory 0700); \"\": none "
            "(default \"\")"),
    OPT("graph_dump_max_bytes", "BYTES", OPD__OPT_U64, graph_dump_max_bytes, 0, UINT64_C(1) << 40,
        "most bytes the graph dumps may write in all, over the daemon's life; a dump past it is "
        "cut short and later ones are skipped (default 67108864)"),
    STR_OPT("graph_cc_dir", "DIR", OPD__OPT_PATH, graph_cc_dir,
            "turns on the C tier of fused CPU groups: their programs are compiled with graph_cc "
            "off the request path into this private directory (created 0700; refused unless the "
            "daemon's user owns it and no one else may enter it) and run in place of the "
            "interpreter once loaded; \"\": off (default \"\")"),
    STR_OPT("graph_cc", "CC", OPD__OPT_PATH, graph_cc,
            "the C compiler of the C tier: a path, or a name looked up in PATH (default \"cc\")"),
    OPT("graph_cc_timeout_ms", "MS", OPD__OPT_U32, graph_cc_timeout_ms, 100, 600000,
        "wall-clock limit of one compile of the C tier; a compiler still running is killed and "
        "the group stays interpreted (default 30000)"),
    OPT("graph_cc_session_queue", "N", OPD__OPT_U32, graph_cc_session_queue, 1, 256,
        "most programs of one session waiting to be compiled by the C tier; more stay "
        "interpreted and are tried again by a later run, so that one session's many programs "
        "never make another's wait behind them (default 16)"),
    OPT("graph_cc_max_bytes", "BYTES", OPD__OPT_U64, graph_cc_max_bytes, 0, UINT64_C(1) << 50,
        "most bytes the C tier's directory keeps of compiled programs (their source, object and "
        "log); past it the least recently used not loaded are removed after a compile; 0: no "
        "bound (default 268435456)"),
};
const size_t opd__num_options = sizeof opd__options / sizeof *opd__options;

void opd_server_config_init(opd_server_config *c) {
  *c = (opd_server_config){
      .workers = 0,
      .cuda_workers_per_device = 1,
      .max_frame_bytes = 1 << 20,
      .max_literal_bytes = 64 << 10,
      .max_handles = 65536,
      .max_bytes_held = UINT64_C(8) << 30,
      .max_in_flight = 1024,
      .short_job_us = 100,
      .loop_call_ns = 2000,
      .worker_nice = 6,
      .max_session_jobs = 256,
      .max_session_cost_ms = 2000,
      .max_priority = OPD_PRIORITY_NORMAL,
      .drain_timeout_ms = 5000,
      .sigterm = OPD_SIGTERM_DRAIN,
      .session_drain_timeout_ms = 60000,
      .tcp_keepalive_idle_s = 5,
      .tcp_keepalive_interval_s = 2,
      .tcp_keepalive_probes = 3,
      .tcp_user_timeout_ms = 15000,
      .unix_socket_mode = 0600,
      .log_level = OPD_LOG_INFO,
      .max_graph_nodes = 4096,
      .max_graph_inputs = 256,
      .max_graph_outputs = 256,
      .max_graph_arg_bytes = 1 << 20,
      .max_graphs = 256,
      .graph_cache_size = 256,
      .graph_benefit_runs = OPD_GRAPH_BENEFIT_RUNS_DEFAULT,
      .graph_dump_max_bytes = 64 << 20,
      .graph_cc = "cc",
      .graph_cc_timeout_ms = 30000,
      .graph_cc_session_queue = 16,
      .graph_cc_max_bytes = UINT64_C(268435456),
  };
  /* The default address is a constant known to parse; only memory can fail, and then the
   * server refuses to start for want of a listener. */
  (void)opd_server_config_add_listen(c, DEFAULT_LISTEN);
}

void opd_server_config_clear_listen(opd_server_config *c) {
  for (size_t i = 0; i < c->num_listen; i++) opd__free(c->listen[i]);
  opd__free(c->listen);
  c->listen = NULL;
  c->num_listen = 0;
}

void opd_server_config_destroy(opd_server_config *c) {
  opd_server_config_clear_listen(c);
}

/* ---- quoting hostile text ---- */

#define SHOWN_MAX 64

typedef struct shown_text {
  char s[SHOWN_MAX + 4];
} shown_text;

/* Text from the file or the command line as a message quotes it: its first SHOWN_MAX bytes
 * (cut at a character, then "..."), control characters as '?', so that a long or strange
 * value neither pushes the reason out of the message nor writes to the terminal
 * (opd_error makes the rest valid UTF-8). */
static shown_text shown(const char *text) {
  shown_text t;
  size_t n = 0;
  for (; text[n] && n < SHOWN_MAX; n++)
    t.s[n] = (unsigned char)text[n] < 0x20 || text[n] == 0x7f ? '?' : text[n];
  if (!text[n]) {
    t.s[n] = '\0';
    return t;
  }
  while (n > 0 && ((unsigned char)text[n] & 0xc0) == 0x80) n--; /* text[n] continues a char */
  memcpy(t.s + n, "...", 4);
  return t;
}

/* ---- listen URLs ---- */

static bool parse_port(const char *s, int *port) {
  if (!*s || strlen(s) > 5) return false;
  int p = 0;
  for (; *s; s++) {
    if (!isdigit((unsigned char)*s)) return false;
    p = p * 10 + (*s - '0');
  }
  if (p > 65535) return false;
  *port = p;
  return true;
}

int opd__parse_listen_url(const char *url, opd__listen_addr *out) {
  *out = (opd__listen_addr){0};
  if (strncmp(url, "unix://", 7) == 0) {
    const char *path = url + 7;
    if (!*path)
      return opd_error(OPD_EINVAL, "listen address '%s': the Unix socket path is empty", url);
    if (strlen(path) > OPD__UNIX_PATH_MAX)
      return opd_error(OPD_EINVAL, "listen address '%s': Unix socket paths are at most %d bytes",
                       shown(url).s, OPD__UNIX_PATH_MAX);
    out->kind = OPD__LISTEN_UNIX;
    strcpy(out->path, path);
    return 0;
  }
  if (strncmp(url, "tcp://", 6) != 0)
    return opd_error(OPD_EINVAL, "listen address '%s': expected tcp://HOST:PORT or unix:///PATH",
                     shown(url).s);
  const char *host = url + 6, *colon;
  size_t host_len;
  if (*host == '[') {
    const char *end = strchr(host, ']');
    if (!end || end[1] != ':')
      return opd_error(OPD_EINVAL, "listen address '%s': expected tcp://[IPv6]:PORT", shown(url).s);
    host++;
    host_len = (size_t)(end - host);
    colon = end + 1;
  } else {
    colon = strrchr(host, ':');
    if (!colon)
      return opd_error(OPD_EINVAL, "listen address '%s': the port is missing", shown(url).s);
    host_len = (size_t)(colon - host);
  }
  if (host_len == 0 || host_len >= sizeof out->host)
    return opd_error(OPD_EINVAL, "listen address '%s': bad host", shown(url).s);
  if (!parse_port(colon + 1, &out->port))
    return opd_error(OPD_EINVAL, "listen address '%s': the port must be a number from 0 to 65535",
                     shown(url).s);
  memcpy(out->host, host, host_len);
  out->host[host_len] = '\0';
  if (strcmp(out->host, "localhost") == 0) strcpy(out->host, "127.0.0.1");
  /* numeric addresses only: no name resolution at start-up */
  bool v6 = strchr(out->host, ':') != NULL;
  for (const char *p = out->host; *p; p++)
    if (!(isxdigit((unsigned char)*p) || *p == '.' || (v6 && *p == ':')))
      return opd_error(OPD_EINVAL,
                       "listen address '%s': the host must be a numeric IPv4 address, [IPv6] "
                       "address or localhost",
                       shown(url).s);
  out->kind = OPD__LISTEN_TCP;
  return 0;
}

int opd__parse_host_port(const char *host_port, opd__listen_addr *out) {
  char url[sizeof "tcp://" + sizeof out->host + 8];
  if (strlen(host_port) >= sizeof url - 6)
    return opd_error(OPD_EINVAL, "address '%s': too long for HOST:PORT", shown(host_port).s);
  snprintf(url, sizeof url, "tcp://%s", host_port);
  return opd__parse_listen_url(url, out);
}

bool opd__listen_addr_is_loopback(const opd__listen_addr *a) {
  if (a->kind == OPD__LISTEN_UNIX) return true;
  unsigned char b[16];
  if (inet_pton(AF_INET, a->host, b) == 1) return b[0] == 127;
  if (inet_pton(AF_INET6, a->host, b) != 1) return false;
  static const unsigned char v4_mapped[12] = {[10] = 0xff, [11] = 0xff};
  static const unsigned char loopback6[16] = {[15] = 1};
  return memcmp(b, loopback6, 16) == 0 || (memcmp(b, v4_mapped, 12) == 0 && b[12] == 127);
}

int opd_server_config_add_listen(opd_server_config *c, const char *url) {
  opd__listen_addr addr;
  int rc = opd__parse_listen_url(url, &addr);
  if (rc < 0) return rc;
  if (c->num_listen >= OPD__MAX_LISTEN)
    return opd_error(OPD_EINVAL, "at most %d listen addresses", OPD__MAX_LISTEN);
  char **list = opd__realloc(c->listen, (c->num_listen + 1) * sizeof *list);
  if (!list) return opd_error(OPD_ENOMEM, "out of memory adding a listen address");
  c->listen = list;
  if (!(list[c->num_listen] = opd__strdup(url)))
    return opd_error(OPD_ENOMEM, "out of memory adding a listen address");
  c->num_listen++;
  return 0;
}

/* ---- addresses ----
 *
 * [Note: Addresses in the configuration]
 * Every address option takes a URL, whose scheme names what is spoken there, or the bare
 * form without one:
 *   listen      tcp://HOST:PORT, unix:///PATH (URLs only: one list holds both kinds)
 *   status      http://HOST:PORT (a trailing / allowed) or HOST:PORT
 *   admin       unix:///PATH or a path
 *   admin_tcp   tcp://HOST:PORT or HOST:PORT
 * The field keeps the bare form (HOST:PORT, a path), which is what the status endpoint and
 * the admin listener take: a URL is converted here and nowhere else. A URL of a scheme the
 * option does not take is refused with a message naming the options that take it
 * (--admin tcp://... points to admin_tcp). HOST is a numeric IPv4 address, [IPv6] or
 * localhost: no name is resolved at start-up. When the server is up, every listener is
 * logged with its URL, and one that is not on loopback gets a warning (loop.c).
 */

/* The length of the scheme when text starts with "SCHEME://" (at most 16 letters, digits,
 * '+', '-', '.'), else 0. */
static size_t scheme_length(const char *text) {
  if (!isalpha((unsigned char)text[0])) return 0;
  size_t n = 1;
  while (n <= 16 &&
         (isalnum((unsigned char)text[n]) || text[n] == '+' || text[n] == '-' || text[n] == '.'))
    n++;
  return n <= 16 && strncmp(text + n, "://", 3) == 0 ? n : 0;
}

/* The schemes an option type takes, each between spaces. */
static const char *type_schemes(opd__opt_type t) {
  switch (t) {
  case OPD__OPT_LISTEN: return " tcp unix ";
  case OPD__OPT_TCP_ADDRESS: return " tcp ";
  case OPD__OPT_HTTP_ADDRESS: return " http ";
  case OPD__OPT_UNIX_ADDRESS: return " unix ";
  default: return "";
  }
}

/* What an option type takes, as its messages say it. */
static const char *type_forms(opd__opt_type t) {
  switch (t) {
  case OPD__OPT_LISTEN: return "tcp://HOST:PORT or unix:///PATH";
  case OPD__OPT_TCP_ADDRESS: return "tcp://HOST:PORT or HOST:PORT";
  case OPD__OPT_HTTP_ADDRESS: return "http://HOST:PORT or HOST:PORT";
  default: return "unix:///PATH or a path";
  }
}

static bool takes_scheme(opd__opt_type t, const char *scheme, size_t n) {
  char word[24];
  snprintf(word, sizeof word, " %.*s ", (int)n, scheme);
  return strstr(type_schemes(t), word) != NULL;
}

/* 0 when text has no scheme or one that o takes, else OPD_EINVAL naming who takes it. */
static int check_scheme(const opd__option *o, const char *text, const char *where) {
  size_t n = scheme_length(text);
  if (!n || takes_scheme(o->type, text, n)) return 0;
  char takers[128] = "";
  size_t len = 0;
  for (size_t i = 0; i < opd__num_options && len < sizeof takers; i++)
    if (takes_scheme(opd__options[i].type, text, n))
      len += (size_t)snprintf(takers + len, sizeof takers - len, "%s%s", len ? ", " : "",
                              opd__options[i].key);
  if (!len)
    return opd_error(OPD_EINVAL, "%s'%s' must be %s; no option takes %.*s:// addresses", where,
                     o->key, type_forms(o->type), (int)n, text);
  return opd_error(OPD_EINVAL, "%s'%s' must be %s; %.*s:// addresses are for %s", where, o->key,
                   type_forms(o->type), (int)n, text, takers);
}

/* Stores an address option's text in its field in the bare form. */
static int set_address(opd_server_config *c, const opd__option *o, const char *text,
                       const char *where) {
  int rc = check_scheme(o, text, where);
  if (rc < 0) return rc;
  size_t n = scheme_length(text);
  const char *bare = n ? text + n + 3 : text;
  size_t len = strlen(bare);
  if (o->type == OPD__OPT_HTTP_ADDRESS && n && len && bare[len - 1] == '/') len--;
  if (len >= o->max)
    return opd_error(OPD_EINVAL, "%s'%s' must be at most %llu bytes, got %zu", where, o->key,
                     (unsigned long long)o->max - 1, len);
  if (n && !len)
    return opd_error(OPD_EINVAL, "%s'%s': '%s' names no %s", where, o->key, shown(text).s,
                     o->type == OPD__OPT_UNIX_ADDRESS ? "socket path" : "HOST:PORT");
  char value[sizeof c->admin];
  _Static_assert(sizeof c->admin >= sizeof c->status && sizeof c->admin >= sizeof c->admin_tcp,
                 "value holds every address field");
  memcpy(value, bare, len);
  value[len] = '\0';
  opd__listen_addr addr;
  if (len && o->type != OPD__OPT_UNIX_ADDRESS && opd__parse_host_port(value, &addr) < 0)
    return opd_error(OPD_EINVAL,
                     "%s'%s' must be %s (HOST: a numeric IPv4 address, [IPv6] or localhost; "
                     "PORT: 0 to 65535) or \"\", got \"%s\"",
                     where, o->key, type_forms(o->type), shown(text).s);
  memcpy((char *)c + o->offset, value, len + 1);
  return 0;
}

static int add_listen(opd_server_config *c, const opd__option *o, const char *text,
                      const char *where) {
  int rc = check_scheme(o, text, where);
  if (rc < 0 || (rc = opd_server_config_add_listen(c, text)) == 0 || !*where) return rc;
  char msg[512];
  snprintf(msg, sizeof msg, "%s", opd_last_error());
  return opd_error(rc, "%s%s", where, msg);
}

/* Appends a plugin file name: a plain name (no '/', not hidden, ending in ".so"), as
 * load_plugin takes (plugins.c checks the file itself at start). */
static int add_plugin(opd_server_config *c, const char *text, const char *where) {
  size_t len = strlen(text);
  if (c->num_plugins >= OPD_SERVER_MAX_PLUGINS)
    return opd_error(OPD_EINVAL, "%s'plugins': at most %d plugins", where, OPD_SERVER_MAX_PLUGINS);
  if (len == 0 || len >= OPD_SERVER_PLUGIN_NAME_MAX || strchr(text, '/') || text[0] == '.' ||
      len < 4 || strcmp(text + len - 3, ".so") != 0)
    return opd_error(OPD_EINVAL,
                     "%s'plugins': \"%s\" is not a plugin file name of plugin_dir (a name "
                     "ending in .so, without '/', not starting with '.', at most %d bytes)",
                     where, shown(text).s, OPD_SERVER_PLUGIN_NAME_MAX - 1);
  for (uint32_t i = 0; i < c->num_plugins; i++)
    if (strcmp(c->plugins[i], text) == 0)
      return opd_error(OPD_EINVAL, "%s'plugins': \"%s\" is named twice", where, shown(text).s);
  memcpy(c->plugins[c->num_plugins++], text, len + 1);
  return 0;
}

/* ---- values ---- */

/* The names of a named option's values, in the order of the values. */
static const char *const level_names[] = {"debug", "info", "warn", "error"};
static const char *const priority_names[] = {"normal", "low", "high"};
static const char *const sigterm_names[] = {"drain", "stop"};

/* Stores the value of a named option (an int-sized enum) whose name is text. */
static int set_named(const opd__option *o, char *field, const char *text, const char *where) {
  bool level = o->type == OPD__OPT_LOG_LEVEL, sigterm = o->type == OPD__OPT_SIGTERM;
  const char *const *names = level ? level_names : sigterm ? sigterm_names : priority_names;
  int n = level ? 4 : sigterm ? 2 : 3, first = level ? OPD_LOG_DEBUG : 0;
  _Static_assert(sizeof(opd_log_level) == sizeof(int) && sizeof(opd_priority) == sizeof(int) &&
                     sizeof(opd_sigterm_action) == sizeof(int),
                 "named options are int-sized");
  for (int i = 0; i < n; i++)
    if (strcmp(text, names[i]) == 0) {
      int v = first + i;
      memcpy(field, &v, sizeof v);
      return 0;
    }
  char list[64] = "";
  for (int i = 0, len = 0; i < n; i++)
    len += snprintf(list + len, sizeof list - (size_t)len, "%s%s", i ? ", " : "", names[i]);
  return opd_error(OPD_EINVAL, "%s'%s' must be one of %s; got \"%s\"", where, o->key, list,
                   shown(text).s);
}

static const opd__option *find_option(const char *key) {
  for (size_t i = 0; i < opd__num_options; i++)
    if (strcmp(opd__options[i].key, key) == 0) return &opd__options[i];
  return NULL;
}

static int unknown_key(const char *where, const char *key) {
  char known[512];
  size_t n = 0;
  known[0] = '\0';
  for (size_t i = 0; i < opd__num_options && n < sizeof known; i++)
    n += (size_t)snprintf(known + n, sizeof known - n, "%s%s", i ? ", " : "", opd__options[i].key);
  return opd_error(OPD_EINVAL, "%sunknown option '%s' (the options are: %s)", where, shown(key).s,
                   known);
}

static int set_integer(opd_server_config *c, const opd__option *o, uint64_t v, const char *where) {
  if (v < o->min || v > o->max)
    return opd_error(OPD_EINVAL, "%s'%s' must be from %llu to %llu, got %llu", where, o->key,
                     (unsigned long long)o->min, (unsigned long long)o->max, (unsigned long long)v);
  char *field = (char *)c + o->offset;
  if (o->type == OPD__OPT_U32) {
    uint32_t v32 = (uint32_t)v;
    memcpy(field, &v32, sizeof v32);
  } else {
    memcpy(field, &v, sizeof v);
  }
  return 0;
}

static int set_text(opd_server_config *c, const opd__option *o, const char *text,
                    const char *where) {
  char *field = (char *)c + o->offset;
  switch (o->type) {
  case OPD__OPT_MODE: {
    char *end;
    errno = 0;
    unsigned long m = strtoul(text, &end, 8);
    /* strtoul would also take leading blanks and a sign */
    if (!isdigit((unsigned char)text[0]) || *end || errno || m > o->max)
      return opd_error(OPD_EINVAL,
                       "%s'%s' must be an octal permission mode such as \"0600\", got \"%s\"",
                       where, o->key, shown(text).s);
    uint32_t m32 = (uint32_t)m;
    memcpy(field, &m32, sizeof m32);
    return 0;
  }
  case OPD__OPT_LOG_LEVEL:
  case OPD__OPT_PRIORITY:
  case OPD__OPT_SIGTERM: return set_named(o, field, text, where);
  case OPD__OPT_U32:
  case OPD__OPT_U64: {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (!isdigit((unsigned char)text[0]) || *end || errno)
      return opd_error(OPD_EINVAL, "%s'%s' must be a whole number from %llu to %llu, got \"%s\"",
                       where, o->key, (unsigned long long)o->min, (unsigned long long)o->max,
                       shown(text).s);
    return set_integer(c, o, v, where);
  }
  case OPD__OPT_LISTEN: return add_listen(c, o, text, where);
  case OPD__OPT_PLUGINS: return add_plugin(c, text, where);
  case OPD__OPT_TCP_ADDRESS:
  case OPD__OPT_HTTP_ADDRESS:
  case OPD__OPT_UNIX_ADDRESS: return set_address(c, o, text, where);
  case OPD__OPT_PATH:
    if (strlen(text) >= o->max)
      return opd_error(OPD_EINVAL, "%s'%s' must be at most %llu bytes", where, o->key,
                       (unsigned long long)o->max - 1);
    memcpy(field, text, strlen(text) + 1);
    return 0;
  }
  return opd_error(OPD_EINTERNAL, "bad option type");
}

int opd_server_config_set(opd_server_config *c, const char *key, const char *value) {
  const opd__option *o = find_option(key);
  if (!o) return unknown_key("", key);
  return set_text(c, o, value, "");
}

static const char *json_type_name(const json_t *v) {
  switch (json_typeof(v)) {
  case JSON_OBJECT: return "an object";
  case JSON_ARRAY: return "an array";
  case JSON_STRING: return "a string";
  case JSON_INTEGER: return "an integer";
  case JSON_REAL: return "a real number";
  case JSON_TRUE:
  case JSON_FALSE: return "a boolean";
  case JSON_NULL: return "null";
  }
  return "?";
}

static int set_json(opd_server_config *c, const opd__option *o, json_t *v, const char *where) {
  switch (o->type) {
  case OPD__OPT_LISTEN: {
    if (!json_is_array(v) || json_array_size(v) == 0)
      return opd_error(OPD_EINVAL, "%s'listen' must be a non-empty array of URL strings, got %s",
                       where, json_is_array(v) ? "an empty array" : json_type_name(v));
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) {
      if (!json_is_string(e))
        return opd_error(OPD_EINVAL, "%s'listen'[%zu] must be a URL string, got %s", where, i,
                         json_type_name(e));
      int rc = add_listen(c, o, json_string_value(e), where);
      if (rc < 0) return rc;
    }
    return 0;
  }
  case OPD__OPT_PLUGINS: { /* replaces the list */
    if (!json_is_array(v))
      return opd_error(OPD_EINVAL, "%s'plugins' must be an array of file names, got %s", where,
                       json_type_name(v));
    c->num_plugins = 0;
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) {
      if (!json_is_string(e))
        return opd_error(OPD_EINVAL, "%s'plugins'[%zu] must be a file name, got %s", where, i,
                         json_type_name(e));
      int rc = add_plugin(c, json_string_value(e), where);
      if (rc < 0) return rc;
    }
    return 0;
  }
  case OPD__OPT_U32:
  case OPD__OPT_U64:
    if (!json_is_integer(v) || json_integer_value(v) < 0)
      return opd_error(OPD_EINVAL, "%s'%s' must be a whole number from %llu to %llu, got %s", where,
                       o->key, (unsigned long long)o->min, (unsigned long long)o->max,
                       json_is_integer(v) ? "a negative number" : json_type_name(v));
    return set_integer(c, o, (uint64_t)json_integer_value(v), where);
  case OPD__OPT_MODE:
  case OPD__OPT_LOG_LEVEL:
  case OPD__OPT_PRIORITY:
  case OPD__OPT_SIGTERM:
  case OPD__OPT_TCP_ADDRESS:
  case OPD__OPT_HTTP_ADDRESS:
  case OPD__OPT_UNIX_ADDRESS:
  case OPD__OPT_PATH:
    if (!json_is_string(v))
      return opd_error(OPD_EINVAL, "%s'%s' must be a string, got %s", where, o->key,
                       json_type_name(v));
    return set_text(c, o, json_string_value(v), where);
  }
  return opd_error(OPD_EINTERNAL, "bad option type");
}

/* The file's text, read up to OPD__CONFIG_MAX_BYTES (not trusting its size: it may be a
 * pipe, or grow), into *text (opd__free it). */
static int read_file(const char *path, const char *where, char **text, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return opd_error(OPD_EINVAL, "%scannot open it: %s", where, strerror(errno));
  char *buf = opd__malloc(OPD__CONFIG_MAX_BYTES + 1);
  if (!buf) {
    fclose(f);
    return opd_error(OPD_ENOMEM, "%sout of memory reading it", where);
  }
  size_t n = fread(buf, 1, OPD__CONFIG_MAX_BYTES + 1, f);
  int err = ferror(f) ? errno : 0;
  fclose(f);
  if (err || n > OPD__CONFIG_MAX_BYTES) {
    opd__free(buf);
    if (err) return opd_error(OPD_EINVAL, "%scannot read it: %s", where, strerror(err));
    return opd_error(OPD_EINVAL,
                     "%sthe file is larger than %u KiB; a configuration is a few "
                     "hundred bytes",
                     where, OPD__CONFIG_MAX_BYTES >> 10);
  }
  *text = buf;
  *len = n;
  return 0;
}

int opd_server_config_load(opd_server_config *c, const char *path) {
  char where[300];
  snprintf(where, sizeof where, "config %s: ", path);
  char *text = NULL;
  size_t len = 0;
  int rc = read_file(path, where, &text, &len);
  if (rc < 0) return rc;
  /* jansson refuses NUL bytes (in strings too, without JSON_ALLOW_NUL), invalid UTF-8 and
   * nesting deeper than JSON_PARSER_MAX_DEPTH */
  json_error_t jerr;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
  opd__free(text);
  if (!root)
    return opd_error(OPD_EINVAL, "%sline %d, column %d: %s", where, jerr.line, jerr.column,
                     jerr.text);
  /* Work on a copy so that c is unchanged on error: the copy shares c's listen list until
   * the file replaces it. */
  opd_server_config tmp = *c;
  bool own_listen = false;
  if (!json_is_object(root)) {
    rc = opd_error(OPD_EINVAL, "%sthe file must hold a JSON object, not %s", where,
                   json_type_name(root));
    goto out;
  }
  const char *key;
  json_t *v;
  json_object_foreach(root, key, v) {
    const opd__option *o = find_option(key);
    if (!o) {
      rc = unknown_key(where, key);
      goto out;
    }
    if (json_is_null(v)) continue;    /* the option keeps its value: the default */
    if (o->type == OPD__OPT_LISTEN) { /* replaces the list: start the copy's own */
      tmp.listen = NULL;
      tmp.num_listen = 0;
      own_listen = true;
    }
    if ((rc = set_json(&tmp, o, v, where)) < 0) goto out;
  }
out:
  json_decref(root);
  if (rc < 0) {
    if (own_listen) opd_server_config_clear_listen(&tmp);
    return rc;
  }
  if (own_listen) opd_server_config_clear_listen(c);
  *c = tmp;
  return 0;
}

uint64_t opd__max_bytes_total(const opd_server_config *c) {
  if (c->max_bytes_total) return c->max_bytes_total;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0; /* unknown: no cap but the sessions' */
  return (uint64_t)pages / 4 * 3 * (uint64_t)page;
}

int opd__config_check(const opd_server_config *c) {
  if (c->num_listen == 0) return opd_error(OPD_EINVAL, "no listen address configured");
  for (size_t i = 0; i < c->num_listen; i++) {
    opd__listen_addr a;
    int rc = opd__parse_listen_url(c->listen[i], &a);
    if (rc < 0) return rc;
  }
  return 0;
}
