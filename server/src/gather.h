/* gather.h: a strided tensor's elements in row-major order, produced a bounded chunk at a
 * time.
 *
 * [Note: Downloads of strided views]
 * A download sends a tensor's elements row-major. A contiguous tensor is written straight
 * from its storage; any other (a transpose, a slice with a step, an expand) is gathered,
 * but never whole: an expand of one element to [2^28] holds 4 bytes and would gather 1 GiB.
 * The loop writes such a download as its frame and then one chunk after another, each
 * gathered into the job's chunk buffer (at most OPD__GATHER_CHUNK bytes) when the write of
 * the previous one completes, so the memory a download takes is bounded whatever the view,
 * and the socket's pace sets how fast the view is read. The session runs nothing else
 * until the last chunk is written (the job holds the session, as every download does), so
 * no call of its own changes the elements meanwhile, and no other session can reach them.
 * The view's geometry was checked when it was made ([Note: Checked arithmetic] in
 * opd/checked.h): every element's byte offset fits, so the walk computes them unchecked.
 */
#ifndef OPD_SERVER_GATHER_H
#define OPD_SERVER_GATHER_H

#include <stddef.h>
#include <stdint.h>

#include "opd/tensor.h"

#define OPD__GATHER_CHUNK (256 * 1024)

typedef struct opd__gather opd__gather;

/* A gather of t's elements (t stays alive and unchanged while it is used; it has at least
 * one element and data on the CPU), or NULL with OPD_ENOMEM recorded. */
opd__gather *opd__gather_new(const opd_tensor *t);
void opd__gather_free(opd__gather *g); /* NULL: nothing */
/* Gathers the next chunk: its address and length (0 once every byte was produced). */
size_t opd__gather_next(opd__gather *g, const void **chunk);
/* Bytes not produced yet. */
uint64_t opd__gather_left(const opd__gather *g);

#endif
