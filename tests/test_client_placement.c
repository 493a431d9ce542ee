/* test_client_placement.c: addresses that name several daemons and the placement of a session
 * among them (client/src/placement.c, [Note: Placement]): address forms and their errors,
 * failover at connect (refused, silent, draining, refusing), random spread, the power of
 * two choices, rendezvous affinity with its load bound, an SRV name answered by a DNS server
 * of the test's own; and the session's end ([Note: A lost session is final], [Note: Never
 * hang]): a lost session's code and message, pending calls failed at once, the call
 * deadline, the TCP liveness options; the load a real daemon reports in its hello. Fake
 * daemons (one thread each, speaking the hello and ping of the protocol) say the loads the
 * tests choose; real daemons run in process. */
#define _DEFAULT_SOURCE /* usleep; _res */
#include <arpa/nameser.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <resolv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "opd.pb-c.h"
#include "opd/client.h"
#include "opd/server.h"

/* ---- fake daemons ---- */

typedef enum fake_mode {
  FAKE_SERVE,       /* hello with its load, pongs */
  FAKE_DRAINING,    /* hello says it drains */
  FAKE_UNAVAILABLE, /* hello refused with UNAVAILABLE, then closed */
  FAKE_SILENT,      /* reads the hello, never answers */
  FAKE_MUTE,        /* answers the hello, then nothing */
} fake_mode;

#define FAKE_CONNS 64

typedef struct fake_daemon {
  int listen_fd, port;
  int stop[2];
  pthread_t thread;
  fake_mode mode;
  uint64_t sessions; /* the load it reports */
  char url[64];      /* tcp://127.0.0.1:PORT */
  pthread_mutex_t mu;
  int accepted, greeted, closed; /* connections: accepted, answered hello, seen closing */
  bool drop_all;                 /* close every connection now */
  int conns[FAKE_CONNS];
  int nconns;
} fake_daemon;

static bool read_full(int fd, void *buf, size_t n) {
  uint8_t *p = buf;
  while (n) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= (size_t)r;
  }
  return true;
}

static void send_response(int fd, const Opd__V1__Response *r) {
  size_t n = opd__v1__response__get_packed_size(r);
  uint8_t *buf = malloc(n + 4);
  ck_assert_ptr_nonnull(buf);
  buf[0] = (uint8_t)n, buf[1] = (uint8_t)(n >> 8), buf[2] = (uint8_t)(n >> 16),
  buf[3] = (uint8_t)(n >> 24);
  opd__v1__response__pack(r, buf + 4);
  ssize_t w = send(fd, buf, n + 4, MSG_NOSIGNAL);
  (void)w;
  free(buf);
}

/* One request from conn: false when it closed (or must be closed). */
static bool fake_serve_one(fake_daemon *d, int fd) {
  uint8_t len_bytes[4];
  if (!read_full(fd, len_bytes, 4)) return false;
  uint32_t len = (uint32_t)len_bytes[0] | (uint32_t)len_bytes[1] << 8 |
                 (uint32_t)len_bytes[2] << 16 | (uint32_t)len_bytes[3] << 24;
  if (len > (1u << 20)) return false;
  uint8_t *body = malloc(len ? len : 1);
  bool ok = read_full(fd, body, len);
  Opd__V1__Request *req = ok ? opd__v1__request__unpack(NULL, len, body) : NULL;
  free(body);
  if (!req) return false;
  Opd__V1__Response r = OPD__V1__RESPONSE__INIT;
  r.id = req->id;
  bool keep = true;
  if (req->body_case == OPD__V1__REQUEST__BODY_HELLO) {
    Opd__V1__HelloReply h = OPD__V1__HELLO_REPLY__INIT;
    Opd__V1__Load load = OPD__V1__LOAD__INIT;
    Opd__V1__Error e = OPD__V1__ERROR__INIT;
    pthread_mutex_lock(&d->mu);
    load.sessions = d->sessions;
    fake_mode mode = d->mode;
    if (mode != FAKE_SILENT && mode != FAKE_UNAVAILABLE) d->greeted++;
    pthread_mutex_unlock(&d->mu);
    load.draining = mode == FAKE_DRAINING;
    h.protocol_version = OPD_CLIENT_PROTOCOL_VERSION;
    h.server = "fake";
    h.max_frame_bytes = 1 << 20;
    h.load = &load;
    if (mode == FAKE_UNAVAILABLE) {
      e.code = OPD__V1__ERROR_CODE__UNAVAILABLE;
      e.message = "the daemon is draining";
      e.op = "";
      r.body_case = OPD__V1__RESPONSE__BODY_ERROR;
      r.error = &e;
      send_response(fd, &r);
      keep = false;
    } else if (mode != FAKE_SILENT) {
      r.body_case = OPD__V1__RESPONSE__BODY_HELLO;
      r.hello = &h;
      send_response(fd, &r);
    }
  } else if (req->body_case == OPD__V1__REQUEST__BODY_PING && d->mode == FAKE_SERVE) {
    Opd__V1__Pong pong = OPD__V1__PONG__INIT;
    pong.payload = req->ping->payload;
    r.body_case = OPD__V1__RESPONSE__BODY_PONG;
    r.pong = &pong;
    send_response(fd, &r);
  }
  opd__v1__request__free_unpacked(req, NULL);
  return keep;
}

static void fake_close_conn(fake_daemon *d, int i) {
  close(d->conns[i]);
  d->conns[i] = d->conns[--d->nconns];
  pthread_mutex_lock(&d->mu);
  d->closed++;
  pthread_mutex_unlock(&d->mu);
}

static void *fake_main(void *arg) {
  fake_daemon *d = arg;
  for (;;) {
    struct pollfd p[FAKE_CONNS + 2];
    p[0] = (struct pollfd){d->listen_fd, POLLIN, 0};
    p[1] = (struct pollfd){d->stop[0], POLLIN, 0};
    for (int i = 0; i < d->nconns; i++) p[i + 2] = (struct pollfd){d->conns[i], POLLIN, 0};
    if (poll(p, (nfds_t)d->nconns + 2, -1) < 0) continue;
    if (p[1].revents) {
      char cmd;
      if (read(d->stop[0], &cmd, 1) != 1 || cmd == 'q') break;
      while (d->nconns) fake_close_conn(d, 0); /* 'd': drop every connection */
      continue;
    }
    for (int i = d->nconns - 1; i >= 0; i--)
      if (p[i + 2].revents && !fake_serve_one(d, d->conns[i])) fake_close_conn(d, i);
    if ((p[0].revents & POLLIN) && d->nconns < FAKE_CONNS) {
      int fd = accept(d->listen_fd, NULL, NULL);
      if (fd >= 0) {
        d->conns[d->nconns++] = fd;
        pthread_mutex_lock(&d->mu);
        d->accepted++;
        pthread_mutex_unlock(&d->mu);
      }
    }
  }
  while (d->nconns) fake_close_conn(d, 0);
  return NULL;
}

static void fake_start(fake_daemon *d, fake_mode mode, uint64_t sessions) {
  memset(d, 0, sizeof *d);
  d->mode = mode;
  d->sessions = sessions;
  pthread_mutex_init(&d->mu, NULL);
  d->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  ck_assert_int_eq(bind(d->listen_fd, (struct sockaddr *)&a, sizeof a), 0);
  ck_assert_int_eq(listen(d->listen_fd, 64), 0);
  socklen_t len = sizeof a;
  getsockname(d->listen_fd, (struct sockaddr *)&a, &len);
  d->port = ntohs(a.sin_port);
  snprintf(d->url, sizeof d->url, "tcp://127.0.0.1:%d", d->port);
  ck_assert_int_eq(pipe(d->stop), 0);
  ck_assert_int_eq(pthread_create(&d->thread, NULL, fake_main, d), 0);
}

static void fake_command(fake_daemon *d, char cmd) {
  ck_assert_int_eq(write(d->stop[1], &cmd, 1), 1);
}

static void fake_stop(fake_daemon *d) {
  fake_command(d, 'q');
  pthread_join(d->thread, NULL);
  close(d->listen_fd);
  close(d->stop[0]);
  close(d->stop[1]);
  pthread_mutex_destroy(&d->mu);
}

static int fake_count(fake_daemon *d, const int *field) {
  pthread_mutex_lock(&d->mu);
  int v = *field;
  pthread_mutex_unlock(&d->mu);
  return v;
}

/* Waits (bounded) until the fake has seen `want` connections close. */
static bool fake_wait_closed(fake_daemon *d, int want) {
  for (int i = 0; i < 2000; i++) {
    if (fake_count(d, &d->closed) >= want) return true;
    usleep(1000);
  }
  return false;
}

/* "tcp://127.0.0.1:P1,127.0.0.1:P2,..." */
static void list_url(char *out, size_t cap, fake_daemon **ds, int n) {
  size_t used = (size_t)snprintf(out, cap, "tcp://");
  for (int i = 0; i < n; i++)
    used += (size_t)snprintf(out + used, cap - used, "%s127.0.0.1:%d", i ? "," : "", ds[i]->port);
}

/* A port where nothing listens (bound, then released). */
static int closed_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  socklen_t len = sizeof a;
  getsockname(fd, (struct sockaddr *)&a, &len);
  close(fd);
  return ntohs(a.sin_port);
}

static opd_client *connect_ok(const char *url, const opd_client_options *o) {
  opd_client *c = NULL;
  int rc = opd_client_connect(url, o, &c);
  ck_assert_msg(rc == 0, "connect %s: %s", url, opd_client_last_error());
  return c;
}

/* ---- addresses ---- */

START_TEST(test_address_forms) {
  opd_client *c;
  static const struct {
    const char *url, *says;
  } bad[] = {
      {"tcp://127.0.0.1:1,", "no port"},
      {"tcp://127.0.0.1:1,:7", "no host"},
      {"tcp://127.0.0.1:0", "from 1 to 65535"},
      {"tcp://[::1:7470", "unterminated"},
      {"srv://", "srv:// takes a DNS name"},
      {"srv://a:1", "srv:// takes a DNS name"},
      {"http://127.0.0.1:7471", "status endpoint"},
      {"udp://x:1", "tcp:// or unix://, or srv://"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    ck_assert_int_eq(opd_client_connect(bad[i].url, NULL, &c), OPD_EINVAL);
    ck_assert_ptr_null(c);
    ck_assert_msg(strstr(opd_client_last_error(), bad[i].says), "%s: %s", bad[i].url,
                  opd_client_last_error());
  }
  opd_client_options o = {.placement = OPD_CLIENT_PLACE_AFFINITY};
  ck_assert_int_eq(opd_client_connect("tcp://127.0.0.1:1", &o, &c), OPD_EINVAL);
  ck_assert_ptr_nonnull(strstr(opd_client_last_error(), "affinity_key"));
  opd_client_placement p;
  ck_assert_int_eq(opd_client_placement_parse("least_loaded", &p), 0);
  ck_assert_int_eq(p, OPD_CLIENT_PLACE_LEAST_LOADED);
  ck_assert_int_eq(opd_client_placement_parse("affinity", &p), 0);
  ck_assert_int_eq(p, OPD_CLIENT_PLACE_AFFINITY);
  ck_assert_int_eq(opd_client_placement_parse("nearest", &p), OPD_EINVAL);

  /* a list, placed "first": the first listed; the endpoint names it numerically */
  fake_daemon a, b;
  fake_start(&a, FAKE_SERVE, 0);
  fake_start(&b, FAKE_SERVE, 0);
  char url[128];
  list_url(url, sizeof url, (fake_daemon *[]){&b, &a}, 2);
  c = connect_ok(url, NULL);
  ck_assert_str_eq(opd_client_endpoint(c), b.url);
  ck_assert_int_eq(opd_client_ping(c, "x", 1), 0);
  opd_client_close(c);
  /* a name: every address it has is a candidate (localhost may list ::1 first, where
   * nothing listens: then the connect moves on to 127.0.0.1) */
  snprintf(url, sizeof url, "tcp://localhost:%d", a.port);
  c = connect_ok(url, NULL);
  ck_assert_str_eq(opd_client_endpoint(c), a.url);
  opd_client_close(c);
  fake_stop(&a);
  fake_stop(&b);
}
END_TEST

/* ---- failover at connect ---- */

START_TEST(test_failover) {
  fake_daemon draining, refusing, silent, serving;
  fake_start(&draining, FAKE_DRAINING, 0);
  fake_start(&refusing, FAKE_UNAVAILABLE, 0);
  fake_start(&silent, FAKE_SILENT, 0);
  fake_start(&serving, FAKE_SERVE, 0);
  int dead = closed_port();
  char url[256];
  snprintf(url, sizeof url,
           "tcp://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", dead,
           draining.port, refusing.port, silent.port, serving.port);
  opd_client_options o = {.connect_timeout_ms = 3000};
  opd_client *c = connect_ok(url, &o);
  ck_assert_str_eq(opd_client_endpoint(c), serving.url);
  ck_assert_int_eq(opd_client_ping(c, "ok", 2), 0);
  /* the ones passed over were each tried once, and closed by the client */
  ck_assert_int_eq(fake_count(&draining, &draining.accepted), 1);
  ck_assert_int_eq(fake_count(&draining, &draining.greeted), 1);
  ck_assert(fake_wait_closed(&draining, 1));
  ck_assert(fake_wait_closed(&refusing, 1));
  ck_assert(fake_wait_closed(&silent, 1));
  ck_assert_int_eq(fake_count(&serving, &serving.closed), 0);
  opd_client_close(c);

  /* nobody takes it: every daemon named with its reason; all draining: OPD_EUNAVAILABLE */
  snprintf(url, sizeof url, "tcp://127.0.0.1:%d,127.0.0.1:%d", dead, draining.port);
  ck_assert_int_eq(opd_client_connect(url, &o, &c), OPD_ENOENT);
  const char *msg = opd_client_last_error();
  ck_assert_msg(strstr(msg, "no daemon of") && strstr(msg, "(2 tried)") &&
                    strstr(msg, "Connection refused") && strstr(msg, "draining"),
                "%s", msg);
  snprintf(url, sizeof url, "tcp://127.0.0.1:%d", draining.port);
  ck_assert_int_eq(opd_client_connect(url, &o, &c), OPD_EUNAVAILABLE);
  ck_assert_ptr_nonnull(strstr(opd_client_last_error(), "draining"));
  fake_stop(&draining);
  fake_stop(&refusing);
  fake_stop(&silent);
  fake_stop(&serving);
}
END_TEST

/* ---- policies ---- */

START_TEST(test_random_reaches_every_daemon) {
  fake_daemon d[3];
  for (int i = 0; i < 3; i++) fake_start(&d[i], FAKE_SERVE, 0);
  char url[128];
  list_url(url, sizeof url, (fake_daemon *[]){&d[0], &d[1], &d[2]}, 3);
  opd_client_options o = {.placement = OPD_CLIENT_PLACE_RANDOM};
  /* 60 sessions miss one of three daemons with probability 3 (2/3)^60, about 1e-10 */
  for (int i = 0; i < 60; i++) opd_client_close(connect_ok(url, &o));
  for (int i = 0; i < 3; i++) {
    ck_assert_int_gt(fake_count(&d[i], &d[i].greeted), 0);
    fake_stop(&d[i]);
  }
}
END_TEST

START_TEST(test_least_loaded_two_choices) {
  fake_daemon d[3];
  fake_start(&d[0], FAKE_SERVE, 5);
  fake_start(&d[1], FAKE_SERVE, 0);
  fake_start(&d[2], FAKE_SERVE, 9);
  char url[128];
  list_url(url, sizeof url, (fake_daemon *[]){&d[0], &d[1], &d[2]}, 3);
  opd_client_options o = {.placement = OPD_CLIENT_PLACE_LEAST_LOADED};
  int landed[3] = {0};
  for (int i = 0; i < 30; i++) {
    opd_client *c = connect_ok(url, &o);
    const opd_client_server_info *s = opd_client_server(c);
    int at = -1;
    for (int k = 0; k < 3; k++)
      if (strcmp(opd_client_endpoint(c), d[k].url) == 0) at = k;
    ck_assert_int_ge(at, 0);
    ck_assert_uint_eq(s->sessions, d[at].sessions);
    landed[at]++;
    opd_client_close(c);
  }
  /* the most loaded daemon is the loser of both pairs it can be in */
  ck_assert_int_eq(landed[2], 0);
  ck_assert_int_eq(landed[0] + landed[1], 30);
  /* each session greeted exactly two daemons and closed the other one */
  int greeted = 0;
  for (int k = 0; k < 3; k++) greeted += fake_count(&d[k], &d[k].greeted);
  ck_assert_int_eq(greeted, 60);
  for (int k = 0; k < 3; k++) {
    ck_assert(fake_wait_closed(&d[k], fake_count(&d[k], &d[k].greeted)));
    fake_stop(&d[k]);
  }
}
END_TEST

/* Which of ds the session of key lands on (and closes it). */
static int affinity_target(const char *url, const char *key, fake_daemon **ds, int n) {
  opd_client_options o = {.placement = OPD_CLIENT_PLACE_AFFINITY, .affinity_key = key};
  opd_client *c = connect_ok(url, &o);
  int at = -1;
  for (int k = 0; k < n; k++)
    if (strcmp(opd_client_endpoint(c), ds[k]->url) == 0) at = k;
  opd_client_close(c);
  ck_assert_int_ge(at, 0);
  return at;
}

START_TEST(test_affinity) {
  fake_daemon d[3];
  for (int i = 0; i < 3; i++) fake_start(&d[i], FAKE_SERVE, 0);
  fake_daemon *all[3] = {&d[0], &d[1], &d[2]};
  char url[128], reversed[128];
  list_url(url, sizeof url, all, 3);
  list_url(reversed, sizeof reversed, (fake_daemon *[]){&d[2], &d[1], &d[0]}, 3);
  /* a key has one daemon, whatever the order of the list */
  int home = affinity_target(url, "modelA", all, 3);
  for (int i = 0; i < 5; i++) ck_assert_int_eq(affinity_target(url, "modelA", all, 3), home);
  ck_assert_int_eq(affinity_target(reversed, "modelA", all, 3), home);
  /* keys spread: of 24 keys, every daemon is some key's home */
  int homes[3] = {0};
  for (int k = 0; k < 24; k++) {
    char key[16];
    snprintf(key, sizeof key, "model%d", k);
    homes[affinity_target(url, key, all, 3)]++;
  }
  for (int i = 0; i < 3; i++) ck_assert_int_gt(homes[i], 0);
  /* a daemon leaving the set moves only its own keys: modelA stays home */
  int other = (home + 1) % 3;
  char two[128];
  list_url(two, sizeof two, (fake_daemon *[]){&d[other], &d[home]}, 2);
  ck_assert_int_eq(affinity_target(two, "modelA", (fake_daemon *[]){&d[other], &d[home]}, 2), 1);
  /* home draining: the key's second choice takes it */
  pthread_mutex_lock(&d[home].mu);
  d[home].mode = FAKE_DRAINING;
  pthread_mutex_unlock(&d[home].mu);
  int second = affinity_target(url, "modelA", all, 3);
  ck_assert_int_ne(second, home);
  /* home loaded above the bound (10 + 1 > ceil(1.25 x (10 + 1) / 3) = 5): the second
   * choice, within it (0 + 1 <= 5), takes the key */
  pthread_mutex_lock(&d[home].mu);
  d[home].mode = FAKE_SERVE;
  d[home].sessions = 10;
  pthread_mutex_unlock(&d[home].mu);
  ck_assert_int_eq(affinity_target(url, "modelA", all, 3), second);
  /* every daemon equally loaded: home is within the bound (11 <= ceil(1.25 x 31 / 3) = 13) */
  for (int i = 0; i < 3; i++) {
    pthread_mutex_lock(&d[i].mu);
    d[i].sessions = 10;
    pthread_mutex_unlock(&d[i].mu);
  }
  ck_assert_int_eq(affinity_target(url, "modelA", all, 3), home);
  for (int i = 0; i < 3; i++) fake_stop(&d[i]);
}
END_TEST

/* ---- the end of a session ---- */

START_TEST(test_lost_session_fails_everything_at_once) {
  fake_daemon d;
  fake_start(&d, FAKE_MUTE, 0);
  opd_client *c = connect_ok(d.url, NULL);
  opd_future *f[5];
  for (int i = 0; i < 5; i++)
    ck_assert_int_eq(opd_client_ping_async(c, "p", 1, NULL, NULL, &f[i]), 0);
  fake_command(&d, 'd'); /* the daemon goes away with the requests unanswered */
  for (int i = 0; i < 5; i++) {
    ck_assert_int_eq(opd_future_wait(f[i]), OPD_ESESSION);
    const char *msg = opd_future_error(f[i]);
    ck_assert_msg(strstr(msg, "session lost") && strstr(msg, d.url) &&
                      strstr(msg, "handles and graphs are gone"),
                  "%s", msg);
    opd_future_free(f[i]);
  }
  ck_assert(!opd_client_connected(c));
  /* final: later requests fail the same way, nothing reconnects */
  ck_assert_int_eq(opd_client_ping(c, "x", 1), OPD_ESESSION);
  ck_assert_ptr_nonnull(strstr(opd_client_last_error(), "session lost"));
  ck_assert_str_eq(opd_client_err_name(OPD_ESESSION), "ESESSION");
  ck_assert_int_eq(fake_count(&d, &d.accepted), 1);
  opd_client_close(c);
  fake_stop(&d);
}
END_TEST

START_TEST(test_call_deadline) {
  fake_daemon d;
  fake_start(&d, FAKE_MUTE, 0);
  opd_client_options o = {.call_timeout_ms = 200};
  opd_client *c = connect_ok(d.url, &o);
  opd_future *pending;
  ck_assert_int_eq(opd_client_ping_async(c, "a", 1, NULL, NULL, &pending), 0);
  ck_assert_int_eq(opd_client_ping(c, "b", 1), OPD_ESESSION);
  const char *msg = opd_client_last_error();
  ck_assert_msg(strstr(msg, "call deadline of 200 ms") && strstr(msg, d.url), "%s", msg);
  ck_assert_int_eq(opd_future_wait(pending), OPD_ESESSION);
  opd_future_free(pending);
  ck_assert(!opd_client_connected(c));
  opd_client_close(c);
  ck_assert(fake_wait_closed(&d, 1));
  fake_stop(&d);
}
END_TEST

static int sockopt(int fd, int level, int name) {
  int v = -1;
  socklen_t len = sizeof v;
  ck_assert_int_eq(getsockopt(fd, level, name, &v, &len), 0);
  return v;
}

START_TEST(test_liveness_options) {
  fake_daemon d;
  fake_start(&d, FAKE_SERVE, 0);
  opd_client *c = connect_ok(d.url, NULL); /* the default: 30 s */
  int fd = opd_client_fd(c);
  ck_assert_int_eq(sockopt(fd, SOL_SOCKET, SO_KEEPALIVE), 1);
  ck_assert_int_eq(sockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT), 30000);
  /* probes start after a third, every sixth after (4 of them): 10 + 4 x 5 = 30 s */
  ck_assert_int_eq(sockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE), 10);
  ck_assert_int_eq(sockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL), 5);
  ck_assert_int_eq(sockopt(fd, IPPROTO_TCP, TCP_KEEPCNT), 4);
  opd_client_close(c);
  opd_client_options o = {.liveness_timeout_ms = 6000};
  c = connect_ok(d.url, &o);
  fd = opd_client_fd(c);
  ck_assert_int_eq(sockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT), 6000);
  ck_assert_int_eq(sockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE), 2);
  ck_assert_int_eq(sockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL), 1);
  opd_client_close(c);
  o.liveness_timeout_ms = -1;
  c = connect_ok(d.url, &o);
  ck_assert_int_eq(sockopt(opd_client_fd(c), SOL_SOCKET, SO_KEEPALIVE), 0);
  ck_assert_int_eq(sockopt(opd_client_fd(c), IPPROTO_TCP, TCP_USER_TIMEOUT), 0);
  opd_client_close(c);
  fake_stop(&d);
}
END_TEST

/* ---- srv:// against the test's own DNS server ---- */

typedef struct dns_server {
  int fd;
  pthread_t thread;
  uint16_t ports[2]; /* the two SRV records' ports: priority 20, then 10 */
} dns_server;

/* Answers one query with two SRV records for the name asked: priority 20 port ports[0]
 * and priority 10 port ports[1], both at target "localhost". */
static void *dns_main(void *arg) {
  dns_server *s = arg;
  unsigned char q[512], a[1024];
  struct sockaddr_storage from;
  socklen_t flen = sizeof from;
  ssize_t n = recvfrom(s->fd, q, sizeof q, 0, (struct sockaddr *)&from, &flen);
  if (n < 12) return NULL;
  size_t qend = 12; /* the question: name labels, type, class */
  while (qend < (size_t)n && q[qend]) qend += (size_t)q[qend] + 1;
  qend += 5;
  if (qend > (size_t)n) return NULL;
  memcpy(a, q, qend);
  a[2] = 0x81, a[3] = 0x80; /* a response, recursion desired and available, no error */
  a[6] = 0, a[7] = 2;       /* two answers */
  a[8] = a[9] = a[10] = a[11] = 0;
  size_t p = qend;
  for (int i = 0; i < 2; i++) {
    static const unsigned char target[] = "\x09localhost";
    a[p++] = 0xc0, a[p++] = 12;                                  /* the name: the question's */
    a[p++] = 0, a[p++] = ns_t_srv, a[p++] = 0, a[p++] = ns_c_in; /* type, class */
    a[p++] = 0, a[p++] = 0, a[p++] = 0, a[p++] = 5;              /* ttl */
    a[p++] = 0, a[p++] = (unsigned char)(6 + sizeof target);     /* rdlength */
    a[p++] = 0, a[p++] = i == 0 ? 20 : 10;                       /* priority */
    a[p++] = 0, a[p++] = 1;                                      /* weight */
    a[p++] = (unsigned char)(s->ports[i] >> 8), a[p++] = (unsigned char)s->ports[i];
    memcpy(a + p, target, sizeof target); /* with its terminating root label */
    p += sizeof target;
  }
  sendto(s->fd, a, p, 0, (struct sockaddr *)&from, flen);
  return NULL;
}

START_TEST(test_srv_name) {
  fake_daemon low, high;
  fake_start(&low, FAKE_SERVE, 0);
  fake_start(&high, FAKE_SERVE, 0);
  dns_server s = {.ports = {(uint16_t)high.port, (uint16_t)low.port}};
  s.fd = socket(AF_INET, SOCK_DGRAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  ck_assert_int_eq(bind(s.fd, (struct sockaddr *)&a, sizeof a), 0);
  socklen_t len = sizeof a;
  getsockname(s.fd, (struct sockaddr *)&a, &len);
  ck_assert_int_eq(pthread_create(&s.thread, NULL, dns_main, &s), 0);
  /* this thread's resolver asks the test's server (res_query reads _res, per thread) */
  ck_assert_int_eq(res_init(), 0);
  _res.nscount = 1;
  _res.nsaddr_list[0] = a;
  _res.retry = 1;
  _res.retrans = 2;
  /* "first" follows SRV priority: 10 (low.port) before 20 */
  opd_client *c = connect_ok("srv://_rpc._tcp.opd.test", NULL);
  ck_assert_str_eq(opd_client_endpoint(c), low.url);
  opd_client_close(c);
  pthread_join(s.thread, NULL);
  close(s.fd);
  fake_stop(&low);
  fake_stop(&high);
}
END_TEST

/* ---- real daemons ---- */

static opd_server *daemon_start(void) {
  opd_server_config cfg;
  opd_server_config_init(&cfg);
  opd_server_config_clear_listen(&cfg);
  ck_assert_int_eq(opd_server_config_add_listen(&cfg, "tcp://127.0.0.1:0"), 0);
  cfg.workers = 1;
  cfg.log_level = OPD_LOG_ERROR;
  opd_server *srv;
  int rc = opd_server_start(&cfg, &srv);
  opd_server_config_destroy(&cfg);
  ck_assert_msg(rc == 0, "opd_server_start: %s", opd_last_error());
  return srv;
}

START_TEST(test_daemon_load_and_lost_session) {
  opd_server *srv = daemon_start();
  const char *url = opd_server_listener_url(srv, 0);
  opd_client *c1 = connect_ok(url, NULL);
  ck_assert_uint_eq(opd_client_server(c1)->sessions, 0);
  ck_assert_int_ge((int)opd_client_server(c1)->num_devices, 1);
  ck_assert_int_eq(opd_client_server(c1)->devices[0].type, OPD_CLIENT_DEVICE_CPU);
  ck_assert(!opd_client_server(c1)->draining);
  opd_client *c2 = connect_ok(url, NULL);
  ck_assert_uint_eq(opd_client_server(c2)->sessions, 1); /* c1; not itself */
  float x[4] = {1, 2, 3, 4};
  opd_client_tensor t;
  ck_assert_int_eq(opd_client_upload(c1, OPD_FLOAT32, (int64_t[]){4}, 1, x, sizeof x, NULL, &t), 0);
  opd_client *c3 = connect_ok(url, NULL);
  ck_assert_uint_eq(opd_client_server(c3)->sessions, 2);
  ck_assert_uint_ge(opd_client_server(c3)->devices[0].bytes_held, sizeof x);
  opd_client_close(c2);
  opd_client_close(c3);
  char endpoint[128];
  snprintf(endpoint, sizeof endpoint, "%s", opd_client_endpoint(c1));
  ck_assert_str_eq(endpoint, url);
  opd_server_stop(srv); /* the daemon goes: c1's session with it */
  float back[4];
  ck_assert_int_eq(opd_client_download(c1, t, back, sizeof back, NULL), OPD_ESESSION);
  const char *msg = opd_client_last_error();
  ck_assert_msg(strstr(msg, "session lost") && strstr(msg, endpoint), "%s", msg);
  opd_client_close(c1);
}
END_TEST

START_TEST(test_least_loaded_real_daemons) {
  opd_server *srv[3];
  for (int i = 0; i < 3; i++) srv[i] = daemon_start();
  char url[160];
  snprintf(url, sizeof url, "tcp://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d",
           opd_server_listener_port(srv[0], 0), opd_server_listener_port(srv[1], 0),
           opd_server_listener_port(srv[2], 0));
  enum { BUSY = 14, PLACED = 12 };
  opd_client *busy[BUSY];
  for (int i = 0; i < BUSY; i++) busy[i] = connect_ok(opd_server_listener_url(srv[0], 0), NULL);
  /* the placed sessions are kept: the busy daemon holds more than all of them, so it is
   * never the less loaded of a pair it is in */
  opd_client_options o = {.placement = OPD_CLIENT_PLACE_LEAST_LOADED};
  opd_client *placed[PLACED];
  int on_busy = 0;
  for (int i = 0; i < PLACED; i++) {
    placed[i] = connect_ok(url, &o);
    on_busy += strcmp(opd_client_endpoint(placed[i]), opd_server_listener_url(srv[0], 0)) == 0;
  }
  ck_assert_int_eq(on_busy, 0);
  for (int i = 0; i < PLACED; i++) opd_client_close(placed[i]);
  for (int i = 0; i < BUSY; i++) opd_client_close(busy[i]);
  for (int i = 0; i < 3; i++) opd_server_stop(srv[i]);
}
END_TEST

Suite *opd_test_client_placement_suite(void) {
  Suite *s = suite_create("client_placement");
  TCase *t = tcase_create("placement");
  tcase_set_timeout(t, 60);
  tcase_add_test(t, test_address_forms);
  tcase_add_test(t, test_failover);
  tcase_add_test(t, test_random_reaches_every_daemon);
  tcase_add_test(t, test_least_loaded_two_choices);
  tcase_add_test(t, test_affinity);
  tcase_add_test(t, test_lost_session_fails_everything_at_once);
  tcase_add_test(t, test_call_deadline);
  tcase_add_test(t, test_liveness_options);
  tcase_add_test(t, test_srv_name);
  tcase_add_test(t, test_daemon_load_and_lost_session);
  tcase_add_test(t, test_least_loaded_real_daemons);
  suite_add_tcase(s, t);
  return s;
}
