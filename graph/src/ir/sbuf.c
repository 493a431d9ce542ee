/* sbuf.c: the growable text buffer of sbuf.h. */
#include "ir/sbuf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "opd/error.h"
#include "opd/memory.h"

static bool reserve(opd__sbuf *sb, size_t extra) {
  if (sb->failed) return false;
  if (sb->len + extra + 1 <= sb->cap) return true;
  size_t cap = sb->cap ? sb->cap : 256;
  while (cap < sb->len + extra + 1) {
    if (cap > SIZE_MAX / 2) {
      sb->failed = true;
      return false;
    }
    cap *= 2;
  }
  char *p = opd__realloc(sb->data, cap);
  if (!p) {
    sb->failed = true;
    return false;
  }
  sb->data = p;
  sb->cap = cap;
  return true;
}

void opd__sbuf_append(opd__sbuf *sb, const char *s, size_t n) {
  if (!reserve(sb, n)) return;
  memcpy(sb->data + sb->len, s, n);
  sb->len += n;
  sb->data[sb->len] = '\0';
}

void opd__sbuf_printf(opd__sbuf *sb, const char *fmt, ...) {
  char small[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof small) {
    opd__sbuf_append(sb, small, (size_t)n);
    return;
  }
  if (!reserve(sb, (size_t)n)) return;
  va_start(ap, fmt);
  vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  sb->len += (size_t)n;
}

int opd__sbuf_take(opd__sbuf *sb, char **out) {
  if (!sb->failed && !sb->data) opd__sbuf_append(sb, "", 0);
  if (sb->failed) {
    opd__sbuf_free(sb);
    return opd_error(OPD_ENOMEM, "out of memory writing a graph's text");
  }
  *out = sb->data;
  *sb = (opd__sbuf){0};
  return 0;
}

void opd__sbuf_free(opd__sbuf *sb) {
  opd__free(sb->data);
  *sb = (opd__sbuf){0};
}
