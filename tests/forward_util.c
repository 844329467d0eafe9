/* Forward contexts for the tests (forward_util.h). */
#include "config.h"

#include "forward_util.h"

#include <check.h>

struct test_forward test_forward_new(const struct dllm_model *model, int64_t max_tokens,
                                     int64_t max_rows, int threads, const char *kernels)
{
    struct test_forward t = {0};
    struct dllm_error err = {0};
    struct dllm_forward_params fp;
    dllm_forward_params_init(&fp);
    fp.max_tokens = max_tokens;
    fp.max_rows = max_rows;
    fp.kernels = kernels;
    ck_assert_msg(dllm_threadpool_new(threads, &t.pool, &err) == DLLM_OK, "%s", err.text);
    fp.pool = t.pool;
    ck_assert_msg(dllm_forward_new(model, &fp, &t.fwd, &err) == DLLM_OK, "%s", err.text);
    return t;
}

void test_forward_free(struct test_forward *t)
{
    dllm_forward_free(t->fwd);
    dllm_threadpool_free(t->pool);
    t->fwd = NULL;
    t->pool = NULL;
}

enum dllm_status test_forward_run(struct dllm_forward *fwd, const int32_t *ids, int64_t n,
                                  const int32_t *rows, int64_t n_rows, float *logits,
                                  struct dllm_kv_cache *cache, int64_t begin, int64_t end,
                                  struct dllm_error *err)
{
    const struct dllm_pass pass = {.ids = ids,
                                   .n_tokens = n,
                                   .rows = rows,
                                   .n_rows = n_rows,
                                   .logits = logits,
                                   .cache = cache,
                                   .begin = begin,
                                   .end = end};
    return dllm_forward_run(fwd, &pass, err);
}
