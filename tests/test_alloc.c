/*
 * A forward pass allocates nothing: the buffers, the routing scratch of a MoE layer and the
 * K/V cache are all made before the first step. This program replaces the C allocator's entry
 * points with counting ones (glibc's __libc_* underneath) and runs passes of the dense and MoE
 * fixture models on every kernel variant, with and without a cache, returning the rows or only
 * their statistics (and a sampler step on those statistics), counting the allocations
 * made between the start and the end of each pass (by any thread). A build with
 * AddressSanitizer, which owns the allocator, cannot count: it says so and skips (exit 77).
 */
#include "config.h"

#include "dllm.h"
#include "fixtures.h"
#include "forward_util.h"
#include "kernels/cpu.h"
#include "sampler.h"

#include <check.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#define CAN_COUNT 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CAN_COUNT 0
#endif
#endif
#ifndef CAN_COUNT
#define CAN_COUNT 1
#endif

static atomic_bool counting;
static atomic_long n_allocs;

#if CAN_COUNT
/* glibc's own allocator, under the names it exports for replacements like these. */
void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);
void *__libc_memalign(size_t align, size_t n);
void __libc_free(void *p);

static void count(void)
{
    if (atomic_load_explicit(&counting, memory_order_relaxed))
        atomic_fetch_add(&n_allocs, 1);
}

void *malloc(size_t n)
{
    count();
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    count();
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    count();
    return __libc_realloc(p, n);
}

void *aligned_alloc(size_t align, size_t n)
{
    count();
    return __libc_memalign(align, n);
}

void *memalign(size_t align, size_t n)
{
    count();
    return __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    count();
    void *p = __libc_memalign(align, n);
    if (!p)
        return 12; /* ENOMEM */
    *out = p;
    return 0;
}

void free(void *p)
{
    __libc_free(p);
}
#endif

static const char *const models[] = {"llada-tiny-q4km", "dream-tiny-q4km", "llada-moe-tiny-q4km",
                                     "rnd1-tiny-q4km", "rnd1-tiny-q80"};
#define N_MODELS (int)(sizeof models / sizeof models[0])

enum { N = 40, ROWS = 8 };

/*
 * Runs one pass (over [begin, end) when cache is set; with logits NULL, the rows' statistics
 * alone into stats) and returns the allocations it made.
 */
static long counted_pass(struct dllm_forward *fwd, const int32_t *ids, const int32_t *rows,
                         float *logits, int32_t *experts, float *margins,
                         struct dllm_kv_cache *cache, int64_t begin, struct dllm_row_stats *stats)
{
    const struct dllm_pass pass = {.ids = ids,
                                   .n_tokens = N,
                                   .rows = rows,
                                   .n_rows = ROWS,
                                   .logits = logits,
                                   .cache = cache,
                                   .begin = begin,
                                   .end = N,
                                   .stats = stats,
                                   .experts = experts,
                                   .expert_margins = margins};
    struct dllm_error err;
    atomic_store(&n_allocs, 0);
    atomic_store(&counting, true);
    const enum dllm_status st = dllm_forward_run(fwd, &pass, &err);
    atomic_store(&counting, false);
    ck_assert_msg(st == DLLM_OK, "%s", err.text);
    return atomic_load(&n_allocs);
}

/*
 * A LLaDA step on the statistics of the ROWS masked slots at the end of ids (argmax at the
 * mask id replaced, as the session takes the rows for such a step); returns the allocations
 * the step made.
 */
static long counted_stats_step(const struct dllm_model *model, struct dllm_threadpool *pool,
                               const char *kernels, struct dllm_row_stats *stats)
{
    struct dllm_sampler *s;
    struct dllm_error err;
    const int32_t mask = dllm_model_mask_id(model);
    ck_assert(dllm_sampler_new(N, dllm_model_n_vocab(model), dllm_threadpool_size(pool), kernels,
                               &s, &err) == DLLM_OK);
    struct dllm_sampler_params p;
    dllm_sampler_params_init(&p, DLLM_SAMPLER_LLADA);
    p.gen_length = ROWS;
    p.steps = ROWS;
    p.block_length = 0;
    int32_t canvas[N];
    for (int i = 0; i < N; i++)
        canvas[i] = i < N - ROWS ? 'a' : mask;
    ck_assert(dllm_sampler_start(s, &p, N - ROWS, mask, NULL, 0, canvas, &err) == DLLM_OK);
    const int32_t *pos;
    int64_t n;
    ck_assert(dllm_sampler_next(s, canvas, &pos, &n, &err) == DLLM_OK && n == ROWS);
    for (int r = 0; r < ROWS; r++)
        stats[r].argmax = stats[r].argmax == mask ? 0 : stats[r].argmax;
    struct dllm_sampler_result res;
    atomic_store(&n_allocs, 0);
    atomic_store(&counting, true);
    const enum dllm_status st = dllm_sampler_step_stats(s, pool, canvas, stats, &res, &err);
    atomic_store(&counting, false);
    ck_assert_msg(st == DLLM_OK, "%s", err.text);
    ck_assert_int_eq(res.n_committed, 1);
    dllm_sampler_free(s);
    return atomic_load(&n_allocs);
}

START_TEST(pass_allocates_nothing)
{
    char rel[128];
    snprintf(rel, sizeof rel, "models/%s.gguf", models[_i]);
    char *path = fixture_path(rel);
    struct dllm_model *model;
    struct dllm_error err;
    ck_assert_msg(dllm_model_open(path, NULL, &model, &err) == DLLM_OK, "%s", err.text);
    const int64_t V = dllm_model_n_vocab(model), L = dllm_model_n_layer(model);
    const int64_t K = dllm_model_experts(model).n_used;
    int32_t ids[N], rows[ROWS];
    for (int i = 0; i < N; i++)
        ids[i] = i < 24 ? 'a' + i : dllm_model_mask_id(model);
    for (int r = 0; r < ROWS; r++)
        rows[r] = N - ROWS + r;
    float *logits = malloc((size_t)(ROWS * V) * sizeof *logits);
    int32_t *experts = K ? malloc((size_t)(L * N * K) * sizeof *experts) : NULL;
    float *margins = K ? malloc((size_t)(L * N) * sizeof *margins) : NULL;
    size_t n_variants;
    const struct dllm_kernels *variants = dllm_kernels_all(&n_variants);
    for (size_t v = 0; v < n_variants; v++) {
        if (!dllm_kernels_usable(&variants[v])) {
            printf("SKIP: kernel variant %s: this CPU lacks its instructions\n", variants[v].name);
            continue;
        }
        struct test_forward t = test_forward_new(model, N, ROWS, 2, variants[v].name);
        struct dllm_kv_cache *cache;
        ck_assert_msg(dllm_kv_cache_new(t.fwd, N, DLLM_CACHE_F16, true, &cache, &err) == DLLM_OK,
                      "%s", err.text);
        const long plain = counted_pass(t.fwd, ids, rows, logits, experts, margins, NULL, 0, NULL);
        const long refresh =
            counted_pass(t.fwd, ids, rows, logits, experts, margins, cache, 0, NULL);
        const long window =
            counted_pass(t.fwd, ids, rows, logits, experts, margins, cache, 24, NULL);
        struct dllm_row_stats stats[ROWS];
        const long alone = counted_pass(t.fwd, ids, rows, NULL, experts, margins, cache, 24, stats);
        const long step = counted_stats_step(model, t.pool, variants[v].name, stats);
        printf("%s, kernels %s: %ld, %ld, %ld, %ld and %ld allocations in a pass, a refresh, a "
               "cached window, a window's statistics alone and a sampler step on them\n",
               models[_i], variants[v].name, plain, refresh, window, alone, step);
        ck_assert_int_eq(plain, 0);
        ck_assert_int_eq(refresh, 0);
        ck_assert_int_eq(window, 0);
        ck_assert_int_eq(alone, 0);
        ck_assert_int_eq(step, 0);
        dllm_kv_cache_free(cache);
        test_forward_free(&t);
    }
    free(logits);
    free(experts);
    free(margins);
    dllm_model_close(model);
    free(path);
}
END_TEST

/*
 * The counter itself: an allocation inside the counted span is seen, here and inside the
 * engine (opening a model allocates its layer table and vectors).
 */
START_TEST(counter_counts)
{
    atomic_store(&n_allocs, 0);
    atomic_store(&counting, true);
    void *volatile p = malloc(16);
    atomic_store(&counting, false);
    free(p);
    ck_assert_int_eq(atomic_load(&n_allocs), 1);
    char *path = fixture_path("models/llada-moe-tiny-q4km.gguf");
    struct dllm_model *model;
    atomic_store(&n_allocs, 0);
    atomic_store(&counting, true);
    ck_assert(dllm_model_open(path, NULL, &model, NULL) == DLLM_OK);
    atomic_store(&counting, false);
    ck_assert_int_ge(atomic_load(&n_allocs), 3);
    dllm_model_close(model);
    free(path);
}
END_TEST

int main(void)
{
    if (!CAN_COUNT) {
        printf("SKIP: this build's AddressSanitizer owns the allocator, so allocations cannot be "
               "counted here (the plain build runs this test)\n");
        return 77;
    }
    fixtures_dir();
    Suite *s = suite_create("alloc");
    TCase *tc = tcase_create("pass");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, counter_counts);
    tcase_add_loop_test(tc, pass_allocates_nothing, 0, N_MODELS);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
