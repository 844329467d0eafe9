/* Forward contexts for the tests: each with a thread pool of its own, and a pass in one call. */
#ifndef DLLM_TESTS_FORWARD_UTIL_H
#define DLLM_TESTS_FORWARD_UTIL_H

#include "dllm.h"

/* A forward context and the pool it runs on. */
struct test_forward {
    struct dllm_threadpool *pool;
    struct dllm_forward *fwd;
};

/*
 * A context for max_tokens tokens and max_rows rows on a pool of `threads` threads (0: one
 * per core) with the kernel variant `kernels` (NULL: the fastest), failing the test on error.
 */
struct test_forward test_forward_new(const struct dllm_model *model, int64_t max_tokens,
                                     int64_t max_rows, int threads, const char *kernels);

void test_forward_free(struct test_forward *t);

/*
 * dllm_forward_run over ids[0 .. n-1] for the rows rows[0 .. n_rows-1], with no cancel flag:
 * computing every position (cache NULL), or [begin, end) with the K/V cache.
 */
enum dllm_status test_forward_run(struct dllm_forward *fwd, const int32_t *ids, int64_t n,
                                  const int32_t *rows, int64_t n_rows, float *logits,
                                  struct dllm_kv_cache *cache, int64_t begin, int64_t end,
                                  struct dllm_error *err);

#endif
