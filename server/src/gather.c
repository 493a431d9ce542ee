/* gather.c: row-major chunks of a strided tensor (see [Note: Downloads of strided views] in
 * gather.h). */
#include "gather.h"

#include <string.h>

#include "opd/error.h"
#include "opd/memory.h"

struct opd__gather {
  const opd_tensor *t;
  const char *base; /* element 0 */
  size_t esize;
  int ndim;
  uint64_t left;                /* bytes not produced yet */
  int64_t idx[OPD_MAX_DIMS];    /* the next element's index */
  int64_t stride[OPD_MAX_DIMS]; /* in bytes */
  size_t cap;
  char chunk[];
};

opd__gather *opd__gather_new(const opd_tensor *t) {
  size_t esize = opd_dtype_size(opd_tensor_dtype(t));
  uint64_t total = (uint64_t)t->numel * esize;
  size_t cap = total < OPD__GATHER_CHUNK ? (size_t)total : OPD__GATHER_CHUNK;
  opd__gather *g = opd__malloc(sizeof *g + cap);
  if (!g) {
    opd_error(OPD_ENOMEM, "out of memory for a download's chunk of %zu bytes", cap);
    return NULL;
  }
  g->t = t;
  g->base = opd_tensor_data(t);
  g->esize = esize;
  g->ndim = t->ndim;
  g->left = total;
  g->cap = cap;
  for (int d = 0; d < t->ndim; d++) {
    g->idx[d] = 0;
    g->stride[d] = opd_tensor_strides(t)[d] * (int64_t)esize;
  }
  return g;
}

void opd__gather_free(opd__gather *g) {
  opd__free(g);
}

uint64_t opd__gather_left(const opd__gather *g) {
  return g->left;
}

/* Copies n elements `stride` bytes apart to dst. */
static void copy_strided(char *dst, const char *src, int64_t stride, size_t n, size_t esize) {
  switch (esize) {
  case 1:
    for (size_t i = 0; i < n; i++) dst[i] = src[(int64_t)i * stride];
    return;
  case 2:
    for (size_t i = 0; i < n; i++) memcpy(dst + 2 * i, src + (int64_t)i * stride, 2);
    return;
  case 4:
    for (size_t i = 0; i < n; i++) memcpy(dst + 4 * i, src + (int64_t)i * stride, 4);
    return;
  default:
    for (size_t i = 0; i < n; i++) memcpy(dst + esize * i, src + (int64_t)i * stride, esize);
    return;
  }
}

size_t opd__gather_next(opd__gather *g, const void **chunk) {
  *chunk = g->chunk;
  if (g->left == 0) return 0;
  size_t room = g->cap < g->left ? g->cap : (size_t)g->left, out = 0;
  if (g->ndim == 0) { /* a 0-d tensor is one element */
    memcpy(g->chunk, g->base, g->esize);
    g->left = 0;
    return g->esize;
  }
  const int64_t *sizes = opd_tensor_sizes(g->t);
  int last = g->ndim - 1;
  while (out < room) {
    const char *src = g->base;
    for (int d = 0; d < last; d++) src += g->idx[d] * g->stride[d];
    src += g->idx[last] * g->stride[last];
    size_t run = (size_t)(sizes[last] - g->idx[last]);
    if (run > (room - out) / g->esize) run = (room - out) / g->esize;
    if (g->stride[last] == (int64_t)g->esize)
      memcpy(g->chunk + out, src, run * g->esize);
    else
      copy_strided(g->chunk + out, src, g->stride[last], run, g->esize);
    out += run * g->esize;
    g->idx[last] += (int64_t)run;
    for (int d = last; d > 0 && g->idx[d] == sizes[d]; d--) {
      g->idx[d] = 0;
      g->idx[d - 1]++;
    }
  }
  g->left -= out;
  return out;
}
