/* opd/memory.h: the allocator every opd library allocates its own memory from, replaceable
 * as libuv's uv_replace_allocator is.
 *
 * [Note: The replaceable allocator]
 * The dispatcher, the kernels, the protocol code and the daemon allocate through
 * opd__malloc / opd__calloc / opd__realloc / opd__free (and opd__strdup, opd__aligned_alloc
 * built on them), never through libc directly; the daemon also installs them as libuv's and
 * jansson's allocators when it starts, so that one replacement sees every allocation the
 * daemon makes. A program replaces them with opd_replace_allocator before it calls any other
 * opd function (the blocks of one allocator must not reach the other). The tests use this
 * to fail the Nth allocation (tests/test_fault.c), as SQLite's fault profiles do: every
 * allocation failure must become a clear error, never a crash or a leak.
 *
 * CPU tensor storage takes aligned blocks (opd__aligned_alloc / opd__aligned_free): they
 * come from the same malloc, over-allocated by the alignment, the original pointer kept in
 * the word before the aligned address. The client library (client/) keeps libc's
 * allocator: it is linked into applications, which own their process's allocator.
 */
#ifndef OPD_MEMORY_H
#define OPD_MEMORY_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void *(*opd_malloc_func)(size_t size);
typedef void *(*opd_realloc_func)(void *ptr, size_t size);
typedef void *(*opd_calloc_func)(size_t count, size_t size);
typedef void (*opd_free_func)(void *ptr);

/* Replaces the allocator (all four functions, or NULLs for libc's). 0, or OPD_EINVAL when
 * only some are given. */
int opd_replace_allocator(opd_malloc_func malloc_func, opd_realloc_func realloc_func,
                          opd_calloc_func calloc_func, opd_free_func free_func);

void *opd__malloc(size_t size);
void *opd__calloc(size_t count, size_t size);
void *opd__realloc(void *ptr, size_t size);
void opd__free(void *ptr);
char *opd__strdup(const char *s);
/* How many allocations have failed on this thread: a library that reports an allocation
 * failure as something else (jansson's parser reports a syntax error) is told apart by
 * comparing the count before and after the call. */
unsigned opd__alloc_failures(void);
/* A transparent huge page of x86-64 and arm64 (4 KiB granules). */
#define OPD__HUGE_PAGE ((size_t)2 << 20)
/* `size` bytes aligned to `alignment` (a power of two, at most OPD__HUGE_PAGE); freed with
 * opd__aligned_free. */
void *opd__aligned_alloc(size_t alignment, size_t size);
/* The same, zeroed (from opd__calloc: memory the kernel has just mapped is not written). */
void *opd__aligned_calloc(size_t alignment, size_t size);
void opd__aligned_free(void *ptr);

#ifdef __cplusplus
}
#endif
#endif
