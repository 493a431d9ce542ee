/* status.c: the soak's view of the daemon through its status endpoint (docs/STATUS.md):
 * plain HTTP/1.1 GETs over a socket, the JSON answers read with jansson. */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <jansson.h>

#include "soak.h"

/* GET path: the parsed JSON body of a 200 answer, or NULL with *why set. */
static json_t *get_json(const soak_daemon *d, const char *path, char *why, size_t whylen) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    snprintf(why, whylen, "socket: %s", strerror(errno));
    return NULL;
  }
  struct timeval tv = {10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)d->status_port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  char req[256];
  int n = snprintf(req, sizeof req,
                   "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0 ||
      send(fd, req, (size_t)n, MSG_NOSIGNAL) != n) {
    snprintf(why, whylen, "GET %s: %s", path, strerror(errno));
    close(fd);
    return NULL;
  }
  char *buf = soak_read_all(fd);
  int err = errno;
  close(fd);
  if (!buf) {
    snprintf(why, whylen, "GET %s: %s", path, strerror(err));
    return NULL;
  }
  const char *body = strstr(buf, "\r\n\r\n");
  json_t *j = NULL;
  if (strncmp(buf, "HTTP/1.1 200 ", 13) != 0 || !body) {
    snprintf(why, whylen, "GET %s: '%.100s'", path, buf);
  } else {
    json_error_t err;
    if (!(j = json_loads(body + 4, 0, &err)))
      snprintf(why, whylen, "GET %s: not JSON: %s", path, err.text);
  }
  free(buf);
  return j;
}

long soak_status_sessions(const soak_daemon *d, char *why, size_t whylen) {
  json_t *j = get_json(d, "/v1/sessions", why, whylen);
  if (!j) return -1;
  json_t *count = json_object_get(j, "count");
  long n = json_is_integer(count) ? (long)json_integer_value(count) : -1;
  if (n < 0) snprintf(why, whylen, "/v1/sessions has no count");
  json_decref(j);
  return n;
}

int soak_status_cpu_memory(const soak_daemon *d, soak_memory *m, char *why, size_t whylen) {
  json_t *j = get_json(d, "/v1/memory", why, whylen);
  if (!j) return -1;
  int rc = -1;
  size_t i;
  json_t *dev;
  json_array_foreach(json_object_get(j, "devices"), i, dev) {
    const char *name = json_string_value(json_object_get(dev, "device"));
    if (!name || strcmp(name, "cpu") != 0) continue;
    m->in_use = (uint64_t)json_integer_value(json_object_get(dev, "in_use"));
    m->cached = (uint64_t)json_integer_value(json_object_get(dev, "cached"));
    m->peak = (uint64_t)json_integer_value(json_object_get(dev, "peak"));
    rc = 0;
  }
  if (rc < 0) snprintf(why, whylen, "/v1/memory lists no cpu device");
  json_decref(j);
  return rc;
}

bool soak_status_healthy(const soak_daemon *d, char *why, size_t whylen) {
  json_t *j = get_json(d, "/v1/health", why, whylen);
  if (!j) return false;
  const char *s = json_string_value(json_object_get(j, "status"));
  bool ok = s && strcmp(s, "ok") == 0;
  if (!ok) snprintf(why, whylen, "/v1/health: status '%s'", s ? s : "(none)");
  json_decref(j);
  return ok;
}
