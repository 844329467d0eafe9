/*
 * Allocation-failure torture. Built with -DDLLM_TORTURE and included first (-include) into
 * every file of the engine copy that tests/test_torture links, and of the ui/ and hub/ modules
 * it tortures, it renames the C allocator's entry points to counting wrappers (tests/torture.c)
 * that fail the Nth allocation of an operation. Without DLLM_TORTURE (the test itself) it
 * declares the controls only. The installed libraries are built without it.
 */
#ifndef DLLM_TORTURE_H
#define DLLM_TORTURE_H

/* The feature macros two engine files set themselves, before the system headers below. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>

/* Counts allocations from now on; the fail_at-th fails (0: none does). */
void dllm_torture_start(long fail_at);
/* Stops counting; the number of allocations since dllm_torture_start. */
long dllm_torture_stop(void);
/* Whether the allocation to fail has been reached since dllm_torture_start. */
bool dllm_torture_failed(void);

void *dllm_torture_malloc(size_t n);
void *dllm_torture_calloc(size_t n, size_t size);
void *dllm_torture_realloc(void *p, size_t n);
char *dllm_torture_strdup(const char *s);
char *dllm_torture_strndup(const char *s, size_t n);
void *dllm_torture_aligned_alloc(size_t align, size_t n);
int dllm_torture_posix_memalign(void **p, size_t align, size_t n);
void *dllm_torture_mmap(void *addr, size_t n, int prot, int flags, int fd, off_t off);

#ifdef DLLM_TORTURE
#undef strdup
#undef strndup
#define malloc(n)                   dllm_torture_malloc(n)
#define calloc(n, size)             dllm_torture_calloc(n, size)
#define realloc(p, n)               dllm_torture_realloc(p, n)
#define strdup(s)                   dllm_torture_strdup(s)
#define strndup(s, n)               dllm_torture_strndup(s, n)
#define aligned_alloc(align, n)     dllm_torture_aligned_alloc(align, n)
#define posix_memalign(p, align, n) dllm_torture_posix_memalign(p, align, n)
#define mmap(a, n, prot, fl, fd, o) dllm_torture_mmap(a, n, prot, fl, fd, o)

#endif /* DLLM_TORTURE */

#endif
