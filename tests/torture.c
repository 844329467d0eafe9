/*
 * The counting allocator of the torture build (tests/torture.h): every wrapper counts one
 * allocation while an operation is watched, fails the one the test chose as the allocator
 * would (NULL, ENOMEM, MAP_FAILED) and otherwise calls the real function. Threads count too.
 */
#include "config.h"

#include "torture.h"

#include <errno.h>
#include <execinfo.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

static atomic_bool counting;
static atomic_long n_allocs;
static atomic_long fail_at;

void dllm_torture_start(long n)
{
    atomic_store(&n_allocs, 0);
    atomic_store(&fail_at, n);
    atomic_store(&counting, true);
}

long dllm_torture_stop(void)
{
    atomic_store(&counting, false);
    return atomic_load(&n_allocs);
}

bool dllm_torture_failed(void)
{
    long n = atomic_load(&fail_at);
    return n > 0 && atomic_load(&n_allocs) >= n;
}

/*
 * Counts one allocation; whether it is the one to fail. With DLLM_TORTURE_TRACE set, the
 * failing call's stack goes to stderr (to find the code a failure reached).
 */
static bool fails(void)
{
    if (!atomic_load_explicit(&counting, memory_order_relaxed))
        return false;
    if (atomic_fetch_add(&n_allocs, 1) + 1 != atomic_load(&fail_at))
        return false;
    if (getenv("DLLM_TORTURE_TRACE")) {
        void *frames[32];
        fprintf(stderr, "torture: failing allocation %ld\n", atomic_load(&fail_at));
        backtrace_symbols_fd(frames, backtrace(frames, 32), STDERR_FILENO);
    }
    return true;
}

void *dllm_torture_malloc(size_t n)
{
    if (fails()) {
        errno = ENOMEM;
        return NULL;
    }
    return malloc(n);
}

void *dllm_torture_calloc(size_t n, size_t size)
{
    if (fails()) {
        errno = ENOMEM;
        return NULL;
    }
    return calloc(n, size);
}

void *dllm_torture_realloc(void *p, size_t n)
{
    if (fails()) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, n);
}

char *dllm_torture_strdup(const char *s)
{
    if (fails()) {
        errno = ENOMEM;
        return NULL;
    }
    return strdup(s);
}

char *dllm_torture_strndup(const char *s, size_t n)
{
    if (fails()) {
        errno = ENOMEM;
        return NULL;
    }
    return strndup(s, n);
}

void *dllm_torture_aligned_alloc(size_t align, size_t n)
{
    if (fails()) {
        errno = ENOMEM;
        return NULL;
    }
    return aligned_alloc(align, n);
}

int dllm_torture_posix_memalign(void **p, size_t align, size_t n)
{
    if (fails())
        return ENOMEM;
    return posix_memalign(p, align, n);
}

/* Only anonymous mappings are allocations; a file's mapping passes uncounted. */
void *dllm_torture_mmap(void *addr, size_t n, int prot, int flags, int fd, off_t off)
{
    if ((flags & MAP_ANONYMOUS) && fails()) {
        errno = ENOMEM;
        return MAP_FAILED;
    }
    return mmap(addr, n, prot, flags, fd, off);
}
