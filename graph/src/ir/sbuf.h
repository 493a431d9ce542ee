/* sbuf.h: a growable text buffer (internal to the graph library) for the printer, the cache
 * key and the pass dumps. Appends never fail visibly: the first allocation failure sticks
 * (sb->failed) and later appends do nothing, so a writer checks once at the end. */
#ifndef OPD_GRAPH_SBUF_H
#define OPD_GRAPH_SBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct opd__sbuf {
  char *data; /* NUL-terminated once anything was appended */
  size_t len, cap;
  bool failed;
} opd__sbuf;

void opd__sbuf_printf(opd__sbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void opd__sbuf_append(opd__sbuf *sb, const char *s, size_t n);
/* Hands the text over (opd__malloc'd; "" when empty): 0, or OPD_ENOMEM (freed). */
int opd__sbuf_take(opd__sbuf *sb, char **out);
void opd__sbuf_free(opd__sbuf *sb);

#endif
