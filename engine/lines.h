/*
 * Memory on whole cache lines, for buffers whose parts different threads write, and mappings on
 * huge pages, for the kernels' large buffers.
 */
#ifndef DLLM_LINES_H
#define DLLM_LINES_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define DLLM_LINE 64 /* bytes in a cache line */

/*
 * Room for bytes starting on a cache line and ending on one (aligned_alloc takes only multiples
 * of its alignment), so that no other allocation shares its lines; NULL when there is none or
 * bytes is too large. free() frees it. (A product's output rows written by two threads into a
 * malloc'd buffer, 16 bytes off a line, share a line at every boundary between their columns:
 * on a 2-core Zen 5 that made bench_gemm's 2-thread products 12% slower.)
 */
static inline void *dllm_alloc_lines(size_t bytes)
{
    if (bytes > SIZE_MAX - (DLLM_LINE - 1))
        return NULL;
    return aligned_alloc(DLLM_LINE, (bytes + DLLM_LINE - 1) / DLLM_LINE * DLLM_LINE);
}

/*
 * dllm_alloc_lines, its pages touched (zeroed) now rather than by the first pass that writes
 * them: a fresh page faults on its first write, and a pass writing 16 MB of logits into fresh
 * memory took 4,000 page faults.
 */
static inline void *dllm_alloc_lines_touched(size_t bytes)
{
    void *p = dllm_alloc_lines(bytes);
    if (p)
        memset(p, 0, bytes);
    return p;
}

/*
 * An anonymous mapping of bytes, or NULL, with huge pages where the system gives them on
 * request: a 2 MB page faults once for 512. munmap(p, bytes) frees it. (The activation buffers'
 * first pass took 11,000 page faults in the products alone on the LLaDA-8B shape at canvas 160,
 * and ran 2-10% slower than the passes after it.)
 */
static inline void *dllm_map_huge(size_t bytes)
{
    void *map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED)
        return NULL;
    madvise(map, bytes, MADV_HUGEPAGE);
    return map;
}

#endif
