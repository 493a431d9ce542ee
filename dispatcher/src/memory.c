/* memory.c: the replaceable allocator (see [Note: The replaceable allocator] in
 * opd/memory.h). */
#include "opd/memory.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "opd/error.h"

static struct {
  opd_malloc_func malloc;
  opd_realloc_func realloc;
  opd_calloc_func calloc;
  opd_free_func free;
} funcs = {malloc, realloc, calloc, free};

int opd_replace_allocator(opd_malloc_func malloc_func, opd_realloc_func realloc_func,
                          opd_calloc_func calloc_func, opd_free_func free_func) {
  if (!malloc_func && !realloc_func && !calloc_func && !free_func) {
    funcs.malloc = malloc, funcs.realloc = realloc, funcs.calloc = calloc, funcs.free = free;
    return 0;
  }
  if (!malloc_func || !realloc_func || !calloc_func || !free_func)
    return opd_error(OPD_EINVAL, "opd_replace_allocator: give all four functions or none");
  funcs.malloc = malloc_func;
  funcs.realloc = realloc_func;
  funcs.calloc = calloc_func;
  funcs.free = free_func;
  return 0;
}

static _Thread_local unsigned failures;

unsigned opd__alloc_failures(void) {
  return failures;
}

static void *counted(void *p) {
  if (!p) failures++;
  return p;
}

void *opd__malloc(size_t size) {
  return counted(funcs.malloc(size));
}

void *opd__calloc(size_t count, size_t size) {
  return counted(funcs.calloc(count, size));
}

void *opd__realloc(void *ptr, size_t size) {
  return counted(funcs.realloc(ptr, size));
}

void opd__free(void *ptr) {
  funcs.free(ptr);
}

char *opd__strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *copy = opd__malloc(n);
  if (copy) memcpy(copy, s, n);
  return copy;
}

static void *aligned_block(size_t alignment, size_t size, bool zeroed) {
  if (alignment < sizeof(void *) || alignment > OPD__HUGE_PAGE || (alignment & (alignment - 1)) ||
      size > SIZE_MAX - alignment)
    return NULL;
  char *raw = zeroed ? opd__calloc(1, size + alignment) : opd__malloc(size + alignment);
  if (!raw) return NULL;
  uintptr_t aligned = ((uintptr_t)raw + alignment) & ~(uintptr_t)(alignment - 1);
  ((void **)aligned)[-1] = raw; /* at least one word lies between raw and aligned */
  return (void *)aligned;
}

void *opd__aligned_alloc(size_t alignment, size_t size) {
  return aligned_block(alignment, size, false);
}

void *opd__aligned_calloc(size_t alignment, size_t size) {
  return aligned_block(alignment, size, true);
}

void opd__aligned_free(void *ptr) {
  if (ptr) opd__free(((void **)ptr)[-1]);
}
