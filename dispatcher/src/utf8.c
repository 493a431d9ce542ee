/* utf8.c: UTF-8 validation, escaping and repair (see [Note: Strings on the wire are UTF-8]
 * in opd/utf8.h). */
#include "opd/utf8.h"

#include <stdint.h>
#include <string.h>

/* The length of the valid UTF-8 sequence at s[0..len), or 0 when none starts there. */
static size_t sequence_length(const unsigned char *s, size_t len) {
  unsigned char c = s[0];
  if (c < 0x80) return 1;
  size_t n;
  uint32_t cp, min;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2, cp = c & 0x1F, min = 0x80;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3, cp = c & 0x0F, min = 0x800;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4, cp = c & 0x07, min = 0x10000;
  } else {
    return 0; /* a continuation byte, an overlong lead (C0, C1) or past U+10FFFF */
  }
  if (len < n) return 0;
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = cp << 6 | (s[i] & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

bool opd_utf8_valid(const char *s, size_t len) {
  const unsigned char *p = (const unsigned char *)s;
  for (size_t i = 0; i < len;) {
    size_t n = sequence_length(p + i, len - i);
    if (!n) return false;
    i += n;
  }
  return true;
}

bool opd_utf8_valid_text(const char *s, size_t len) {
  return !memchr(s, '\0', len) && opd_utf8_valid(s, len);
}

size_t opd_utf8_escape(char *dst, size_t cap, const char *s, size_t len) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *p = (const unsigned char *)s;
  size_t out = 0;
  for (size_t i = 0; i < len;) {
    size_t n = p[i] ? sequence_length(p + i, len - i) : 0;
    if (n) {
      if (out + n >= cap) break;
      memcpy(dst + out, p + i, n);
      out += n;
      i += n;
    } else {
      if (out + 4 >= cap) break;
      dst[out++] = '\\';
      dst[out++] = 'x';
      dst[out++] = hex[p[i] >> 4];
      dst[out++] = hex[p[i] & 15];
      i++;
    }
  }
  dst[out] = '\0';
  return out;
}

size_t opd_utf8_repair(char *buf) {
  unsigned char *p = (unsigned char *)buf;
  size_t len = strlen(buf);
  for (size_t i = 0; i < len;) {
    size_t n = sequence_length(p + i, len - i);
    if (n) {
      i += n;
      continue;
    }
    /* a lead byte whose sequence the end of the buffer cut: drop it and what follows */
    size_t want = p[i] >= 0xF0 ? 4 : p[i] >= 0xE0 ? 3 : p[i] >= 0xC2 ? 2 : 0;
    bool cut = want && len - i < want;
    for (size_t k = i + 1; cut && k < len; k++) cut = (p[k] & 0xC0) == 0x80;
    if (cut) {
      p[i] = '\0';
      return i;
    }
    p[i++] = '?';
  }
  return len;
}
