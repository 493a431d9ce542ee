/* placement.c: opd_client_connect: an address that names one daemon or several, resolved
 * to endpoints (tcp:// names and lists, srv:// DNS SRV names, unix:// sockets), and the
 * placement of the session among them with connect-time failover.
 *
 * [Note: Placement]
 * One session is one connection to one daemon, and its tensors and graphs live there, so
 * the only moment a client chooses a daemon is when it connects. The address resolves to a
 * set of endpoints: every A and AAAA record of each name (getaddrinfo without AI_ADDRCONFIG,
 * which would drop every address inside a network namespace that has only loopback), or the
 * targets of a DNS SRV name in priority order. The policy orders them:
 *   first         the address's order (SRV: priority, then weight);
 *   random        a random order;
 *   least_loaded  a random order, and two daemons greeted: the session stays on the one
 *                 with the lower load and the other connection is closed (power of two
 *                 choices: close to the best spread for the price of one extra hello);
 *   affinity      rendezvous (highest random weight) hashing of the key over the set, so
 *                 sessions with one key meet on one daemon, where the graphs they define
 *                 are compiled already, and only the keys of a daemon that leaves the set
 *                 move; every daemon is greeted, and one whose load is above the bound of
 *                 consistent hashing with bounded loads (load + 1 at most
 *                 ceil(1.25 x (total + 1) / daemons), HAProxy's hash-balance-factor 125)
 *                 is passed over for the next in the key's order.
 * A daemon's load is what its hello reply says (HelloReply.load: its other sessions plus
 * the jobs queued or running); a daemon that says it drains, refuses the hello, refuses
 * the connection or does not answer within its share of connect_timeout_ms is passed over
 * for the next. After the hello there is no failover ([Note: A lost session is final] in
 * connection.c).
 */
#define _DEFAULT_SOURCE /* h_errno, hstrerror; res_query */
#include <arpa/nameser.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <resolv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "client_internal.h"

#define DEFAULT_CONNECT_MS 10000
/* A daemon's share of connect_timeout_ms: what is left divided among the daemons left,
 * but at least this (or what is left), so a silent first daemon does not take it all and a
 * long list still gives each a real chance. */
#define MIN_ATTEMPT_MS     1000
/* The largest SRV answer read (a TCP DNS message's limit). */
#define SRV_ANSWER_MAX     65535

int opd_client_placement_parse(const char *name, opd_client_placement *out) {
  static const char *const names[] = {"first", "random", "least_loaded", "affinity"};
  for (int i = 0; name && i < 4; i++)
    if (strcmp(name, names[i]) == 0) {
      *out = (opd_client_placement)i;
      return 0;
    }
  return opd__client_error(OPD_EINVAL,
                           "unknown placement '%s' (first, random, least_loaded or affinity)",
                           name ? name : "(null)");
}

/* ---- resolving an address into endpoints ---- */

typedef struct endpoint_set {
  opd__endpoint *v;
  size_t n;
} endpoint_set;

/* Adds a, unless the set has it already or is full. */
static void add_endpoint(endpoint_set *set, const struct sockaddr *a, socklen_t len,
                         const char *scheme_name) {
  for (size_t i = 0; i < set->n; i++)
    if (set->v[i].addrlen == len && memcmp(&set->v[i].addr, a, len) == 0) return;
  if (set->n == OPD__CLIENT_MAX_ENDPOINTS || len > sizeof set->v[0].addr) return;
  opd__endpoint *e = &set->v[set->n++];
  memset(e, 0, sizeof *e);
  memcpy(&e->addr, a, len);
  e->addrlen = len;
  if (scheme_name) {
    snprintf(e->name, sizeof e->name, "%s", scheme_name);
    return;
  }
  char host[INET6_ADDRSTRLEN] = "?", port[8] = "?";
  getnameinfo(a, len, host, sizeof host, port, sizeof port, NI_NUMERICHOST | NI_NUMERICSERV);
  snprintf(e->name, sizeof e->name, a->sa_family == AF_INET6 ? "tcp://[%s]:%s" : "tcp://%s:%s",
           host, port);
}

/* Every address of host:port (IPv4 and IPv6; no AI_ADDRCONFIG: [Note: Placement]). */
static int resolve_host(const char *url, const char *host, const char *port, endpoint_set *set) {
  struct addrinfo hints = {.ai_flags = 0, .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
  struct addrinfo *ai;
  int g = getaddrinfo(host, port, &hints, &ai);
  if (g != 0)
    return opd__client_error(OPD_ENOENT, "cannot connect to %s: cannot resolve '%s': %s", url, host,
                             gai_strerror(g));
  for (struct addrinfo *a = ai; a; a = a->ai_next)
    add_endpoint(set, a->ai_addr, a->ai_addrlen, NULL);
  freeaddrinfo(ai);
  return 0;
}

/* A port of 1 to 65535 in decimal, the whole of [p, end): its value, or 0. */
static unsigned parse_port(const char *p, const char *end) {
  unsigned value = 0;
  if (p == end) return 0;
  for (; p < end; p++) {
    if (*p < '0' || *p > '9') return 0;
    value = value * 10 + (unsigned)(*p - '0');
    if (value > 65535) return 0;
  }
  return value;
}

/* One HOST:PORT of a tcp:// list, [begin, end). */
static int resolve_hostport(const char *url, const char *begin, const char *end,
                            endpoint_set *set) {
  const char *hend, *colon;
  const char *h = begin;
  if (*h == '[') {
    hend = memchr(h, ']', (size_t)(end - h));
    if (!hend) return opd__client_error(OPD_EINVAL, "'%s': unterminated [IPv6 address]", url);
    h++;
    colon = hend + 1;
    if (colon == end || *colon != ':')
      return opd__client_error(OPD_EINVAL, "'%s': no port (tcp://HOST:PORT)", url);
  } else {
    colon = NULL;
    for (const char *p = h; p < end; p++)
      if (*p == ':') colon = p;
    if (!colon) return opd__client_error(OPD_EINVAL, "'%s': no port (tcp://HOST:PORT)", url);
    hend = colon;
  }
  size_t hlen = (size_t)(hend - h);
  char host[256], port[8];
  if (hlen == 0) return opd__client_error(OPD_EINVAL, "'%s': no host (tcp://HOST:PORT)", url);
  if (hlen >= sizeof host) return opd__client_error(OPD_EINVAL, "'%s': host name too long", url);
  memcpy(host, h, hlen);
  host[hlen] = '\0';
  unsigned value = parse_port(colon + 1, end);
  if (value == 0)
    return opd__client_error(OPD_EINVAL, "'%s': the port must be a number from 1 to 65535", url);
  snprintf(port, sizeof port, "%u", value);
  return resolve_host(url, host, port, set);
}

typedef struct srv_record {
  unsigned priority, weight;
  char port[8];
  char target[NS_MAXDNAME];
} srv_record;

static int srv_order(const void *a, const void *b) {
  const srv_record *x = a, *y = b;
  if (x->priority != y->priority) return x->priority < y->priority ? -1 : 1;
  return x->weight == y->weight ? 0 : x->weight > y->weight ? -1 : 1;
}

/* The targets of the SRV records of name, by priority (then weight), each resolved. */
static int resolve_srv(const char *url, const char *name, endpoint_set *set) {
  unsigned char *answer = malloc(SRV_ANSWER_MAX);
  srv_record *records = calloc(OPD__CLIENT_MAX_ENDPOINTS, sizeof *records);
  int rc = 0;
  if (!answer || !records) {
    rc = opd__client_error(OPD_ENOMEM, "out of memory");
    goto out;
  }
  int len = res_query(name, ns_c_in, ns_t_srv, answer, SRV_ANSWER_MAX);
  ns_msg msg;
  if (len < 0) {
    rc = opd__client_error(OPD_ENOENT, "cannot connect to %s: no SRV records for '%s': %s", url,
                           name, hstrerror(h_errno));
    goto out;
  }
  if (ns_initparse(answer, len, &msg) < 0) {
    rc = opd__client_error(OPD_ENOENT, "cannot connect to %s: an unreadable DNS answer for '%s'",
                           url, name);
    goto out;
  }
  size_t n = 0;
  for (int i = 0; i < ns_msg_count(msg, ns_s_an) && n < OPD__CLIENT_MAX_ENDPOINTS; i++) {
    ns_rr rr;
    if (ns_parserr(&msg, ns_s_an, i, &rr) < 0) break;
    if (ns_rr_type(rr) != ns_t_srv || ns_rr_rdlen(rr) < 7) continue;
    const unsigned char *rd = ns_rr_rdata(rr);
    srv_record *r = &records[n];
    r->priority = ns_get16(rd);
    r->weight = ns_get16(rd + 2);
    unsigned port = ns_get16(rd + 4);
    if (port == 0 ||
        dn_expand(ns_msg_base(msg), ns_msg_end(msg), rd + 6, r->target, sizeof r->target) < 0 ||
        r->target[0] == '\0' || strcmp(r->target, ".") == 0) /* "." : no service there */
      continue;
    snprintf(r->port, sizeof r->port, "%u", (unsigned)(uint16_t)port);
    n++;
  }
  if (n == 0) {
    rc = opd__client_error(OPD_ENOENT, "cannot connect to %s: no usable SRV record for '%s'", url,
                           name);
    goto out;
  }
  qsort(records, n, sizeof *records, srv_order);
  /* a target that does not resolve is left out while others do */
  for (size_t i = 0; i < n; i++) {
    int r = resolve_host(url, records[i].target, records[i].port, set);
    if (r != 0 && set->n == 0 && i + 1 == n) rc = r;
  }
out:
  free(answer);
  free(records);
  return rc;
}

/* The endpoints that url names: 0, or OPD_EINVAL / OPD_ENOENT with the message. */
static int resolve(const char *url, endpoint_set *set) {
  if (!url) return opd__client_error(OPD_EINVAL, "no URL (tcp://HOST:PORT or unix:///PATH)");
  if (strncmp(url, "unix://", 7) == 0) {
    const char *path = url + 7;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (!*path) return opd__client_error(OPD_EINVAL, "'%s': no socket path (unix:///PATH)", url);
    if (strlen(path) >= sizeof sa.sun_path)
      return opd__client_error(OPD_EINVAL, "'%s': the socket path is longer than %zu bytes", url,
                               sizeof sa.sun_path - 1);
    if (strlen(url) >= sizeof set->v[0].name)
      return opd__client_error(OPD_EINVAL, "'%s': the URL is longer than %zu bytes", url,
                               sizeof set->v[0].name - 1);
    memcpy(sa.sun_path, path, strlen(path) + 1);
    add_endpoint(set, (struct sockaddr *)&sa, sizeof sa, url);
    return 0;
  }
  if (strncmp(url, "srv://", 6) == 0) {
    const char *name = url + 6;
    if (!*name || strlen(name) >= NS_MAXDNAME || strpbrk(name, ":/,"))
      return opd__client_error(OPD_EINVAL,
                               "'%s': srv:// takes a DNS name (srv://_rpc._tcp.opd.example)", url);
    return resolve_srv(url, name, set);
  }
  if (strncmp(url, "http://", 7) == 0)
    return opd__client_error(OPD_EINVAL,
                             "'%s': the URL must start with tcp:// or unix:// (http:// is the "
                             "daemon's status endpoint, not its client port), or srv://",
                             url);
  if (strncmp(url, "tcp://", 6) != 0)
    return opd__client_error(OPD_EINVAL,
                             "'%s': the URL must start with tcp:// or unix://, or srv://", url);
  /* a name of the list that does not resolve is left out while others do (failover) */
  int unresolved = 0;
  for (const char *p = url + 6;;) {
    const char *comma = strchr(p, ',');
    const char *end = comma ? comma : p + strlen(p);
    int rc = resolve_hostport(url, p, end, set);
    if (rc == OPD_ENOENT)
      unresolved = rc;
    else if (rc)
      return rc;
    if (!comma) return set->n == 0 ? unresolved : 0;
    p = comma + 1;
  }
}

/* ---- ordering ---- */

static uint64_t mix64(uint64_t x) { /* splitmix64's finalizer */
  x ^= x >> 30;
  x *= UINT64_C(0xbf58476d1ce4e5b9);
  x ^= x >> 27;
  x *= UINT64_C(0x94d049bb133111eb);
  return x ^ (x >> 31);
}

static uint64_t random_seed(void) {
  uint64_t seed;
  if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) == (ssize_t)sizeof seed) return seed;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return mix64((uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30 ^ (uint64_t)getpid() << 20);
}

static void shuffle(opd__endpoint *v, size_t n) {
  uint64_t state = random_seed();
  for (size_t i = n; i > 1; i--) {
    state += UINT64_C(0x9e3779b97f4a7c15);
    size_t j = (size_t)(mix64(state) % i);
    opd__endpoint t = v[i - 1];
    v[i - 1] = v[j];
    v[j] = t;
  }
}

/* The rendezvous weight of (key, endpoint): FNV-1a over both, mixed. */
static uint64_t rendezvous_weight(const char *key, const char *endpoint) {
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  for (const char *p = key; *p; p++) h = (h ^ (unsigned char)*p) * UINT64_C(0x100000001b3);
  h = (h ^ 0xff) * UINT64_C(0x100000001b3); /* a separator no name contains */
  for (const char *p = endpoint; *p; p++) h = (h ^ (unsigned char)*p) * UINT64_C(0x100000001b3);
  return mix64(h);
}

typedef struct ranked {
  opd__endpoint e;
  uint64_t weight;
} ranked;

static int by_weight(const void *a, const void *b) {
  const ranked *x = a, *y = b;
  return x->weight == y->weight ? strcmp(x->e.name, y->e.name) : x->weight > y->weight ? -1 : 1;
}

static int order_by_key(opd__endpoint *v, size_t n, const char *key) {
  ranked *r = malloc(n * sizeof *r);
  if (!r) return opd__client_error(OPD_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) r[i] = (ranked){v[i], rendezvous_weight(key, v[i].name)};
  qsort(r, n, sizeof *r, by_weight);
  for (size_t i = 0; i < n; i++) v[i] = r[i].e;
  free(r);
  return 0;
}

/* ---- greeting candidates ---- */

typedef struct attempts {
  const char *url;
  const opd_client_options *o;
  int64_t deadline; /* negative: none */
  int last_rc;      /* of the last failure other than draining */
  size_t tried, draining;
  char why[OPD__CLIENT_MSG_MAX]; /* "tcp://a:p: why; tcp://b:p: why" */
} attempts;

static int load_of(const opd_client *c) {
  const opd_client_server_info *s = opd_client_server(c);
  uint64_t load = s->sessions + s->jobs_queued;
  return load > INT32_MAX - 1 ? INT32_MAX - 1 : (int)load;
}

static void note_failure(attempts *t, int rc, const char *what) {
  if (rc == OPD_EUNAVAILABLE) /* draining, or a hello refused as unavailable */
    t->draining++;
  else
    t->last_rc = rc;
  size_t used = strlen(t->why);
  snprintf(t->why + used, sizeof t->why - used, "%s%s", used ? "; " : "", what);
}

/* Connects to e and says hello within its share of the time left (`left`: the candidates
 * not tried yet, e included): the client, or NULL when e was passed over (why noted). */
static opd_client *greet(attempts *t, const opd__endpoint *e, size_t left) {
  int budget = -1;
  if (t->deadline >= 0) {
    int64_t remaining = t->deadline - opd__client_now_ms();
    if (remaining <= 0) {
      note_failure(t, OPD_EBUSY, "no time left for the others");
      return NULL;
    }
    int64_t share = remaining / (int64_t)left;
    if (share < MIN_ATTEMPT_MS) share = remaining < MIN_ATTEMPT_MS ? remaining : MIN_ATTEMPT_MS;
    budget = share > INT32_MAX ? INT32_MAX : (int)share;
  }
  t->tried++;
  opd_client *c;
  int rc = opd__client_connect_endpoint(e, t->o, budget, &c);
  if (rc != 0) {
    note_failure(t, rc, opd_client_last_error());
    return NULL;
  }
  if (opd_client_server(c)->draining) {
    char msg[OPD__CLIENT_ENDPOINT_NAME + 32];
    snprintf(msg, sizeof msg, "%s: draining", e->name);
    opd_client_close(c);
    note_failure(t, OPD_EUNAVAILABLE, msg);
    return NULL;
  }
  return c;
}

/* The failure when no candidate took the session. */
static int no_daemon(attempts *t, size_t n) {
  /* every one draining: OPD_EUNAVAILABLE; else the last other failure's code */
  int rc = t->last_rc ? t->last_rc : t->draining ? OPD_EUNAVAILABLE : OPD_EBUSY;
  if (n == 1) { /* one daemon: its own message */
    char saved[OPD__CLIENT_MSG_MAX];
    snprintf(saved, sizeof saved, "%s", t->why);
    return opd__client_error(rc, "%s", saved);
  }
  return opd__client_error(rc, "no daemon of %s took the session (%zu tried): %s", t->url, t->tried,
                           t->why);
}

/* first, random: the first candidate that takes the session. */
static int place_first(attempts *t, const opd__endpoint *v, size_t n, opd_client **out) {
  for (size_t i = 0; i < n; i++)
    if ((*out = greet(t, &v[i], n - i))) return 0;
  return no_daemon(t, n);
}

/* least_loaded: the less loaded of the first two that take it (v in a random order). */
static int place_least_loaded(attempts *t, const opd__endpoint *v, size_t n, opd_client **out) {
  opd_client *chosen = NULL;
  for (size_t i = 0; i < n; i++) {
    opd_client *c = greet(t, &v[i], n - i);
    if (!c) continue;
    if (!chosen) {
      chosen = c;
      continue;
    }
    if (load_of(c) < load_of(chosen)) {
      opd_client *t2 = chosen;
      chosen = c;
      c = t2;
    }
    opd_client_close(c);
    break;
  }
  if (!chosen) return no_daemon(t, n);
  *out = chosen;
  return 0;
}

/* affinity: every candidate greeted (v in the key's order), then the first within the bound
 * of [Note: Placement]. */
static int place_affinity(attempts *t, const opd__endpoint *v, size_t n, opd_client **out) {
  opd_client **greeted = calloc(n, sizeof *greeted);
  if (!greeted) return opd__client_error(OPD_ENOMEM, "out of memory");
  uint64_t total = 0, live = 0;
  for (size_t i = 0; i < n; i++) {
    greeted[i] = greet(t, &v[i], n - i);
    if (!greeted[i]) continue;
    total += (uint64_t)load_of(greeted[i]);
    live++;
  }
  size_t pick = n;
  if (live > 0) {
    /* load + 1 <= ceil(1.25 (total + 1) / live) = ceil(5 (total + 1) / (4 live)) */
    uint64_t bound = (5 * (total + 1) + 4 * live - 1) / (4 * live);
    for (size_t i = 0; i < n && pick == n; i++)
      if (greeted[i] && (uint64_t)load_of(greeted[i]) + 1 <= bound) pick = i;
    for (size_t i = 0; i < n && pick == n; i++) /* (the bound always admits the least loaded) */
      if (greeted[i]) pick = i;
  }
  for (size_t i = 0; i < n; i++)
    if (i != pick) opd_client_close(greeted[i]);
  int rc = 0;
  if (pick == n)
    rc = no_daemon(t, n);
  else
    *out = greeted[pick];
  free(greeted);
  return rc;
}

int opd_client_connect(const char *url, const opd_client_options *options, opd_client **out) {
  static const opd_client_options defaults;
  const opd_client_options *o = options ? options : &defaults;
  *out = NULL;
  if ((unsigned)o->placement > OPD_CLIENT_PLACE_AFFINITY)
    return opd__client_error(OPD_EINVAL, "unknown placement %d", (int)o->placement);
  if (o->placement == OPD_CLIENT_PLACE_AFFINITY && !o->affinity_key)
    return opd__client_error(OPD_EINVAL, "the affinity placement needs an affinity_key");
  endpoint_set set = {calloc(OPD__CLIENT_MAX_ENDPOINTS, sizeof(opd__endpoint)), 0};
  if (!set.v) return opd__client_error(OPD_ENOMEM, "out of memory");
  int rc = resolve(url, &set);
  if (rc == 0 && set.n == 0)
    rc = opd__client_error(OPD_ENOENT, "cannot connect to %s: the name has no address", url);
  int timeout = o->connect_timeout_ms == 0 ? DEFAULT_CONNECT_MS : o->connect_timeout_ms;
  attempts t = {.url = url, .o = o, .deadline = timeout < 0 ? -1 : opd__client_now_ms() + timeout};
  if (rc == 0) switch (o->placement) {
    case OPD_CLIENT_PLACE_FIRST: rc = place_first(&t, set.v, set.n, out); break;
    case OPD_CLIENT_PLACE_RANDOM:
      shuffle(set.v, set.n);
      rc = place_first(&t, set.v, set.n, out);
      break;
    case OPD_CLIENT_PLACE_LEAST_LOADED:
      shuffle(set.v, set.n);
      rc = place_least_loaded(&t, set.v, set.n, out);
      break;
    case OPD_CLIENT_PLACE_AFFINITY:
      rc = order_by_key(set.v, set.n, o->affinity_key);
      if (rc == 0) rc = place_affinity(&t, set.v, set.n, out);
      break;
    }
  free(set.v);
  return rc;
}
