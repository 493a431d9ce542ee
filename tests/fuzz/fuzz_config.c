/* fuzz_config.c: the daemon's JSON configuration file (opd_server_config_load,
 * server/src/config.c), read from an in-memory file over a configuration of defaults with
 * two listen URLs. A file refused (OPD_EINVAL) leaves the configuration exactly as it was; a
 * file taken leaves every option inside its range (opd__options: integers within [min,
 * max], addresses and paths NUL-terminated in their fields, at most 64 listen URLs that all
 * parse), and the start-up check (opd__config_check) answers 0 or OPD_EINVAL.
 */
#define _GNU_SOURCE /* memfd_create */
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "fuzz_common.h"
#include "opd/error.h"

static char path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  int fd = memfd_create("opd-fuzz-config", MFD_CLOEXEC);
  fuzz_check(fd >= 0, "memfd_create");
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  return 0;
}

static void defaults(opd_server_config *c) {
  opd_server_config_init(c);
  fuzz_check(opd_server_config_add_listen(c, "unix:///tmp/opd-fuzz.sock") == 0, "listen");
}

/* The bytes of an option's field. */
static size_t field_size(const opd__option *o) {
  switch (o->type) {
  case OPD__OPT_LISTEN: return 0; /* compared by value */
  case OPD__OPT_PLUGINS: return sizeof(((opd_server_config *)0)->plugins);
  case OPD__OPT_U64: return sizeof(uint64_t);
  case OPD__OPT_U32:
  case OPD__OPT_MODE: return sizeof(uint32_t);
  case OPD__OPT_LOG_LEVEL: return sizeof(opd_log_level);
  default: return o->max; /* a char[max] */
  }
}

/* Every option of a and b, the listen lists by value. */
static bool same_config(const opd_server_config *a, const opd_server_config *b) {
  for (size_t i = 0; i < opd__num_options; i++) {
    const opd__option *o = &opd__options[i];
    if (memcmp((const char *)a + o->offset, (const char *)b + o->offset, field_size(o)) != 0)
      return false;
  }
  if (a->num_listen != b->num_listen || a->num_plugins != b->num_plugins) return false;
  for (size_t i = 0; i < a->num_listen; i++)
    if (strcmp(a->listen[i], b->listen[i]) != 0) return false;
  return true;
}

static void check_ranges(const opd_server_config *c) {
  fuzz_check(c->num_listen <= OPD__MAX_LISTEN, "%zu listen URLs", c->num_listen);
  for (size_t i = 0; i < c->num_listen; i++) {
    opd__listen_addr addr;
    fuzz_check(opd__parse_listen_url(c->listen[i], &addr) == 0, "a listen URL '%s' taken",
               c->listen[i]);
  }
  for (size_t i = 0; i < opd__num_options; i++) {
    const opd__option *o = &opd__options[i];
    const char *field = (const char *)c + o->offset;
    uint64_t v;
    switch (o->type) {
    case OPD__OPT_U32:
      v = *(const uint32_t *)field;
      fuzz_check(v >= o->min && v <= o->max, "%s = %llu", o->key, (unsigned long long)v);
      break;
    case OPD__OPT_U64:
      v = *(const uint64_t *)field;
      fuzz_check(v >= o->min && v <= o->max, "%s = %llu", o->key, (unsigned long long)v);
      break;
    case OPD__OPT_MODE:
      fuzz_check(*(const uint32_t *)field <= 0777, "%s = %o", o->key, *(const uint32_t *)field);
      break;
    case OPD__OPT_TCP_ADDRESS:
    case OPD__OPT_HTTP_ADDRESS:
    case OPD__OPT_UNIX_ADDRESS:
    case OPD__OPT_PATH:
      fuzz_check(memchr(field, '\0', o->max) != NULL, "%s is not NUL-terminated", o->key);
      break;
    case OPD__OPT_PRIORITY:
      v = (uint64_t) * (const opd_priority *)field;
      fuzz_check(v <= OPD_PRIORITY_HIGH, "%s = %llu", o->key, (unsigned long long)v);
      break;
    case OPD__OPT_SIGTERM:
      v = (uint64_t) * (const opd_sigterm_action *)field;
      fuzz_check(v <= OPD_SIGTERM_STOP, "%s = %llu", o->key, (unsigned long long)v);
      break;
    case OPD__OPT_PLUGINS:
      fuzz_check(c->num_plugins <= OPD_SERVER_MAX_PLUGINS, "%s: %u", o->key, c->num_plugins);
      break;
    case OPD__OPT_LISTEN:
    case OPD__OPT_LOG_LEVEL: break;
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = atoi(path + strlen("/proc/self/fd/"));
  fuzz_check(ftruncate(fd, 0) == 0 && pwrite(fd, data, size, 0) == (ssize_t)size, "the file");
  opd_server_config c, before;
  defaults(&c);
  defaults(&before);
  int rc = opd_server_config_load(&c, path);
  if (rc < 0) {
    fuzz_check(rc == OPD_EINVAL, "opd_server_config_load: %d: %s", rc, opd_last_error());
    fuzz_check(same_config(&c, &before), "a refused file changed the configuration");
  } else {
    fuzz_check(rc == 0, "opd_server_config_load: %d", rc);
    check_ranges(&c);
    rc = opd__config_check(&c);
    fuzz_check(rc == 0 || rc == OPD_EINVAL, "opd__config_check: %d", rc);
  }
  opd_server_config_destroy(&c);
  opd_server_config_destroy(&before);
  return 0;
}
