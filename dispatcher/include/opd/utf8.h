/* opd/utf8.h: UTF-8 checks for the strings opd receives and sends.
 *
 * [Note: Strings on the wire are UTF-8]
 * proto3 `string` fields must hold valid UTF-8, and conformant decoders (Python's protobuf,
 * Go's) refuse a message that breaks this; JSON (the status endpoint, the admin RPC) must be
 * valid UTF-8 too. So: a request string that is not valid UTF-8, or holds a NUL byte, is
 * refused where it is decoded (a C string would silently end at the NUL: "aten::add\0x"
 * must not run aten::add); and every string the daemon sends is valid UTF-8, whatever it
 * echoes: bytes that are not are escaped as \xNN, and a message cut to fit a buffer is cut
 * at a character boundary.
 */
#ifndef OPD_UTF8_H
#define OPD_UTF8_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Whether s[0..len) is valid UTF-8 (no overlong forms, no surrogates, at most U+10FFFF).
 * NUL bytes are valid UTF-8; opd_utf8_valid_text refuses them too. */
bool opd_utf8_valid(const char *s, size_t len);
bool opd_utf8_valid_text(const char *s, size_t len);

/* Copies s[0..len) into dst (capacity cap >= 1, always NUL-terminated) as valid UTF-8: each
 * byte that is not part of a valid sequence, and each NUL, becomes the four characters
 * \xNN; the copy is cut at a character boundary (never inside a sequence or an escape)
 * when dst is full. Returns the length written. */
size_t opd_utf8_escape(char *dst, size_t cap, const char *s, size_t len);

/* Makes the NUL-terminated string in buf valid UTF-8 in place, as a message cut by
 * snprintf may not be: a truncated sequence at its end is removed, and any other invalid
 * byte is replaced by '?'. Returns its new length. */
size_t opd_utf8_repair(char *buf);

#ifdef __cplusplus
}
#endif
#endif
