/* geometry.c: carrying a tensor's geometry (sizes, strides in elements, offset) through
 * broadcasts and views, so that a fused program can read any operand straight from its
 * memory in the group's iteration space ([Note: Fused pointwise programs] in
 * fused_codegen.c). A view is as PyTorch computes it: sizes and strides permuted, a
 * broadcast giving stride 0 to new and size-1 dimensions, and a reshape by computeStride
 * (which fails when the reshape would have to span non-contiguous chunks). */
#include <string.h>

#include "plan/plan.h"

static int broadcast(opd__geo *g, const int64_t *sizes, int nd) {
  if (nd < g->ndim || nd > OPD__PW_MAX_DIMS) return -1;
  int64_t st[OPD__PW_MAX_DIMS];
  for (int d = nd - 1; d >= 0; d--) {
    int e = d - (nd - g->ndim);
    if (e < 0 || (g->sizes[e] == 1 && sizes[d] != 1))
      st[d] = 0;
    else if (g->sizes[e] == sizes[d])
      st[d] = g->strides[e];
    else
      return -1;
  }
  memcpy(g->sizes, sizes, (size_t)nd * sizeof *sizes);
  memcpy(g->strides, st, (size_t)nd * sizeof *st);
  g->ndim = nd;
  return 0;
}

static int permute(opd__geo *g, const uint8_t *perm, int nd) {
  if (nd != g->ndim) return -1;
  int64_t sz[OPD__PW_MAX_DIMS], st[OPD__PW_MAX_DIMS];
  for (int i = 0; i < nd; i++) {
    if (perm[i] >= nd) return -1;
    sz[i] = g->sizes[perm[i]];
    st[i] = g->strides[perm[i]];
  }
  memcpy(g->sizes, sz, (size_t)nd * sizeof *sz);
  memcpy(g->strides, st, (size_t)nd * sizeof *st);
  return 0;
}

/* PyTorch's computeStride: strides viewing (sizes, strides) as `sizes` (same numel). */
static int reshape(opd__geo *g, const int64_t *sizes, int nd) {
  int64_t numel = 1, want = 1, st[OPD__PW_MAX_DIMS];
  for (int d = 0; d < g->ndim; d++) numel *= g->sizes[d];
  for (int d = 0; d < nd; d++) want *= sizes[d];
  if (numel != want) return -1;
  if (g->ndim == 0 || numel == 0) {
    for (int d = nd - 1; d >= 0; d--)
      st[d] = d == nd - 1 ? 1 : st[d + 1] * (sizes[d + 1] ? sizes[d + 1] : 1);
  } else {
    int view_d = nd - 1;
    int64_t chunk = g->strides[g->ndim - 1], tensor_numel = 1, view_numel = 1;
    for (int d = g->ndim - 1; d >= 0; d--) {
      tensor_numel *= g->sizes[d];
      if (d == 0 || (g->sizes[d - 1] != 1 && g->strides[d - 1] != tensor_numel * chunk)) {
        while (view_d >= 0 && (view_numel < tensor_numel || sizes[view_d] == 1)) {
          st[view_d] = view_numel * chunk;
          view_numel *= sizes[view_d];
          view_d--;
        }
        if (view_numel != tensor_numel) return -1;
        if (d > 0) {
          chunk = g->strides[d - 1];
          tensor_numel = 1;
          view_numel = 1;
        }
      }
    }
    if (view_d != -1) return -1;
  }
  memcpy(g->sizes, sizes, (size_t)nd * sizeof *sizes);
  memcpy(g->strides, st, (size_t)nd * sizeof *st);
  g->ndim = nd;
  return 0;
}

int opd__geo_apply(opd__geo *geo, const opd__geo_step *steps, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    const opd__geo_step *s = &steps[i];
    int rc = s->kind == OPD__GEO_BROADCAST ? broadcast(geo, s->sizes, s->ndim)
             : s->kind == OPD__GEO_PERMUTE ? permute(geo, s->perm, s->ndim)
                                           : reshape(geo, s->sizes, s->ndim);
    if (rc) return rc;
  }
  return 0;
}
