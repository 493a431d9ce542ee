/* arena.h: a bounded bump allocator for decoding one request, also usable as protobuf-c's
 * allocator.
 *
 * Each request decodes into the arena of its job: protobuf-c's unpack allocates every
 * message, array, string and byte field from it, and nothing is freed one by one; the whole
 * arena is reset when the job is recycled. The first block is kept across resets (grown to
 * what the last request needed, up to OPD__ARENA_KEEP), so a connection's steady traffic
 * decodes without calling malloc. A limit bounds what one request may make the server
 * allocate: past it an allocation fails (and protobuf-c's unpack fails cleanly), so a small
 * hostile frame cannot expand into a large amount of memory.
 */
#ifndef OPD_SERVER_ARENA_H
#define OPD_SERVER_ARENA_H

#include <stdbool.h>
#include <stddef.h>

#include <protobuf-c/protobuf-c.h>

/* Bytes of first block kept across resets. */
#define OPD__ARENA_KEEP (256 * 1024)

typedef struct opd__arena_chunk opd__arena_chunk;

typedef struct opd__arena {
  ProtobufCAllocator pb; /* allocator_data points back here */
  char *base;            /* the first block */
  size_t cap, used;
  opd__arena_chunk *extra; /* blocks beyond the first, freed at reset */
  size_t total;            /* bytes handed out since the reset */
  size_t limit;            /* most bytes handed out before allocations fail */
  bool exceeded;           /* an allocation failed for the limit */
  bool out_of_memory;      /* an allocation failed for want of memory */
} opd__arena;

void opd__arena_init(opd__arena *a);
/* Gives an arena with nothing handed out a first block of at least n bytes: 0, or
 * OPD_ENOMEM (the arena is unchanged). */
int opd__arena_reserve_first(opd__arena *a, size_t n);
/* Forgets every allocation and sets the limit for the next ones. */
void opd__arena_reset(opd__arena *a, size_t limit);
/* 16-byte aligned memory, or NULL (over the limit: a->exceeded is set; out of memory:
 * a->out_of_memory). */
void *opd__arena_alloc(opd__arena *a, size_t n);
void opd__arena_destroy(opd__arena *a);

#endif
