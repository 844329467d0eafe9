/*
 * K/V reuse between passes (dllm_pass.cache): exact where nothing the cache holds is stale, on
 * every fixture model and kernel variant, float32 and float16 caches, and within a sanity
 * bound where it is.
 */
#include "config.h"

#include "dllm.h"
#include "fixtures.h"
#include "backend.h"
#include "forward_util.h"
#include "ref_pass.h"
#include "gguf/quant.h"
#include "kernels/cpu.h"
#include "sampler.h"

#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first TEST_N_REPRESENTATIVE (a dense and a MoE model) run in every build, the rest in the
 * sweep. */
static const char *const models[] = {
    "llada-tiny-q4km",    "llada-moe-tiny-q4km", "llada-tiny-q5km",
    "llada-tiny-q6k",     "llada-tiny-q80",      "llada-tiny-f16",
    "llada-tiny-bf16",    "dream-tiny-q4km",     "dream-tiny-realvocab-q4km",
    "llada-moe-tiny-q80", "rnd1-tiny-q4km",      "rnd1-tiny-q80",
};

/* A fixture model's first case: its ids, their count and the prompt's length. */
struct fixture_case {
    struct dllm_model *model;
    int32_t *ids;
    int64_t n, n_prompt, n_vocab;
    bool shift;
};

static struct fixture_case open_case(const char *name)
{
    struct fixture_case c = {0};
    char rel[256];
    snprintf(rel, sizeof rel, "logits/%s.cases.json", name);
    size_t size;
    char *text = fixture_read(rel, &size);
    json_error_t jerr;
    json_t *cases = json_loadb(text, size, 0, &jerr);
    ck_assert_msg(json_is_array(cases), "%s: %s", rel, jerr.text);
    json_t *first = json_array_get(cases, 0), *ids = json_object_get(first, "ids");
    c.n = (int64_t)json_array_size(ids);
    c.n_prompt = json_integer_value(json_object_get(first, "prompt_len"));
    c.ids = malloc((size_t)c.n * sizeof *c.ids);
    for (int64_t i = 0; i < c.n; i++)
        c.ids[i] = (int32_t)json_integer_value(json_array_get(ids, (size_t)i));
    json_decref(cases);
    free(text);
    snprintf(rel, sizeof rel, "models/%s.gguf", name);
    char *path = fixture_path(rel);
    struct dllm_error err = {0};
    ck_assert_msg(dllm_model_open(path, NULL, &c.model, &err) == DLLM_OK, "%s", err.text);
    free(path);
    c.n_vocab = dllm_model_n_vocab(c.model);
    c.shift = dllm_model_shift_logits(c.model);
    return c;
}

static void close_case(struct fixture_case *c)
{
    dllm_model_close(c->model);
    free(c->ids);
}

static struct dllm_kv_cache *new_cache(struct dllm_forward *fwd, int64_t n,
                                       enum dllm_cache_type type)
{
    struct dllm_kv_cache *kv;
    struct dllm_error err = {0};
    ck_assert_msg(dllm_kv_cache_new(fwd, n, type, false, &kv, &err) == DLLM_OK, "%s", err.text);
    return kv;
}

/* The cache types, float32 first. */
static const enum dllm_cache_type types[] = {DLLM_CACHE_F32, DLLM_CACHE_F16};
#define N_TYPES 2

/*
 * Whole runs of the model's sampler (LLaDA or Dream, blocks of 8) where every step computes
 * the whole canvas through the cached code path (begin 0, end n: a refresh at every step):
 * every step's logits and every committed token are those of the uncached run, bit for bit,
 * on every kernel variant this CPU runs. A float32 cache: a float16 one rounds the keys and
 * values the attention reads, which a pass without a cache does not.
 */
START_TEST(test_whole_window_runs)
{
    struct fixture_case c = open_case(models[_i]);
    const int64_t gen = 32, n = c.n_prompt + gen;
    size_t n_variants;
    const struct dllm_kernels *variants = dllm_kernels_all(&n_variants);
    for (size_t v = 0; v < n_variants; v++) {
        if (!dllm_kernels_usable(&variants[v]))
            continue;
        struct test_forward t = test_forward_new(c.model, n, gen, 2, variants[v].name);
        struct dllm_kv_cache *kv = new_cache(t.fwd, n, DLLM_CACHE_F32);
        struct dllm_sampler *s[2];
        int32_t *canvas[2], rows[64];
        float *logits[2];
        struct dllm_sampler_params sp;
        dllm_sampler_params_init(&sp, c.shift ? DLLM_SAMPLER_DREAM : DLLM_SAMPLER_LLADA);
        sp.gen_length = gen;
        sp.steps = 16;
        sp.block_length = 8;
        struct dllm_error err = {0};
        for (int k = 0; k < 2; k++) {
            ck_assert_int_eq(dllm_sampler_new(n, c.n_vocab, 2, variants[v].name, &s[k], &err),
                             DLLM_OK);
            canvas[k] = malloc((size_t)n * sizeof *canvas[k]);
            logits[k] = malloc((size_t)(gen * c.n_vocab) * sizeof *logits[k]);
            memcpy(canvas[k], c.ids, (size_t)c.n_prompt * sizeof *c.ids);
            for (int64_t i = c.n_prompt; i < n; i++)
                canvas[k][i] = dllm_model_mask_id(c.model);
            ck_assert_int_eq(dllm_sampler_start(s[k], &sp, c.n_prompt, dllm_model_mask_id(c.model),
                                                NULL, 0, canvas[k], &err),
                             DLLM_OK);
        }
        struct dllm_sampler_result res[2] = {0};
        int64_t steps = 0;
        do {
            const int32_t *pos[2];
            int64_t n_rows[2];
            for (int k = 0; k < 2; k++)
                ck_assert_int_eq(dllm_sampler_next(s[k], canvas[k], &pos[k], &n_rows[k], &err),
                                 DLLM_OK);
            ck_assert_int_eq(n_rows[0], n_rows[1]);
            for (int64_t r = 0; r < n_rows[0]; r++)
                rows[r] = c.shift && pos[0][r] > 0 ? pos[0][r] - 1 : pos[0][r];
            if (n_rows[0]) {
                ck_assert_msg(test_forward_run(t.fwd, canvas[0], n, rows, n_rows[0], logits[0],
                                               NULL, 0, 0, &err) == DLLM_OK,
                              "%s", err.text);
                ck_assert_msg(test_forward_run(t.fwd, canvas[1], n, rows, n_rows[0], logits[1], kv,
                                               0, n, &err) == DLLM_OK,
                              "%s", err.text);
                ck_assert_mem_eq(logits[0], logits[1],
                                 (size_t)(n_rows[0] * c.n_vocab) * sizeof(float));
            }
            for (int k = 0; k < 2; k++)
                ck_assert_int_eq(dllm_sampler_step(s[k], t.pool, canvas[k],
                                                   n_rows[k] ? logits[k] : NULL, &res[k], &err),
                                 DLLM_OK);
            ck_assert_mem_eq(canvas[0], canvas[1], (size_t)n * sizeof *canvas[0]);
            steps++;
        } while (!res[0].done);
        ck_assert(res[1].done);
        printf("%s, kernels %s: %lld steps identical\n", models[_i], variants[v].name,
               (long long)steps);
        for (int k = 0; k < 2; k++) {
            dllm_sampler_free(s[k]);
            free(canvas[k]);
            free(logits[k]);
        }
        dllm_kv_cache_free(kv);
        test_forward_free(&t);
    }
    close_case(&c);
}
END_TEST

/*
 * The first block of a fixture case: positions [b0, b1), at most len of them after the prompt;
 * where a cached step's window starts (one slot before the block for a model that shifts its
 * logits); and the rows whose logits predict the block's slots.
 */
struct block {
    int64_t b0, b1, begin, n_rows;
    int32_t rows[32];
};

static struct block first_block(const struct fixture_case *c, int64_t len)
{
    struct block b = {.b0 = c->n_prompt};
    b.b1 = b.b0 + len < c->n ? b.b0 + len : c->n;
    b.begin = c->shift ? b.b0 - 1 : b.b0;
    for (int64_t p = b.b0; p < b.b1; p++)
        b.rows[b.n_rows++] = (int32_t)(c->shift ? p - 1 : p);
    return b;
}

/*
 * Commits up to half of the block's masks with the argmax of their logits rows [n_rows, V],
 * as a step commits them (a proposal of the mask itself becomes token 0); returns how many.
 */
static int64_t commit_half(const struct fixture_case *c, const struct block *b, const float *logits,
                           int32_t *canvas)
{
    const int32_t mask = dllm_model_mask_id(c->model);
    int64_t committed = 0;
    for (int64_t r = 0; r < b->n_rows && committed < b->n_rows / 2; r++) {
        if (canvas[b->b0 + r] != mask)
            continue;
        const float *l = logits + r * c->n_vocab;
        int64_t best = 0;
        for (int64_t j = 1; j < c->n_vocab; j++)
            best = l[j] > l[best] ? j : best;
        canvas[b->b0 + r] = best == mask ? 0 : (int32_t)best;
        committed++;
    }
    ck_assert_int_gt(committed, 0);
    return committed;
}

/* The whole storage of a K/V cache (every layer's keys, then values); *bytes its size. */
static unsigned char *cache_storage(struct dllm_forward *fwd, struct dllm_kv_cache *kv, int64_t n,
                                    size_t *bytes)
{
    *bytes = dllm_kv_cache_bytes(fwd, n, kv->type);
    return dllm_backend_cpu_kv_layer(kv, 0);
}

/* The storage of a cache as floats: a float16 one by the reference conversion. */
static void storage_floats(const struct dllm_kv_cache *kv, const void *storage, size_t bytes,
                           float *out)
{
    if (kv->type == DLLM_CACHE_F32) {
        memcpy(out, storage, bytes);
        return;
    }
    const dllm_fp16 *h = storage;
    for (size_t i = 0; i < bytes / sizeof *h; i++)
        out[i] = dllm_fp16_to_f32(h[i]);
}

/*
 * A cached step on a canvas unchanged since its refresh recomputes the window's keys and
 * values from the same inputs and reads the others as the refresh stored them, as the refresh
 * itself read them, so its logits and the cache it leaves are the refresh pass's, bit for
 * bit: the prefix window (the block to the end) and the dual one (the block alone), from one
 * slot before the block for a model that shifts its logits; every kernel variant, float32 and
 * float16 caches.
 */
START_TEST(test_unchanged_canvas)
{
    struct fixture_case c = open_case(models[_i]);
    const struct block b = first_block(&c, 8);
    size_t n_variants;
    const struct dllm_kernels *variants = dllm_kernels_all(&n_variants);
    for (size_t v = 0; v < n_variants * N_TYPES; v++) {
        const struct dllm_kernels *k = &variants[v / N_TYPES];
        const enum dllm_cache_type type = types[v % N_TYPES];
        if (!dllm_kernels_usable(k))
            continue;
        struct test_forward t = test_forward_new(c.model, c.n, c.n, 2, k->name);
        struct dllm_kv_cache *kv = new_cache(t.fwd, c.n, type);
        const size_t bytes = (size_t)(b.n_rows * c.n_vocab) * sizeof(float);
        float *want = malloc(bytes), *got = malloc(bytes);
        struct dllm_error err = {0};
        ck_assert_msg(test_forward_run(t.fwd, c.ids, c.n, b.rows, b.n_rows, want, kv, 0, c.n,
                                       &err) == DLLM_OK,
                      "%s", err.text);
        size_t kv_bytes;
        const unsigned char *cache = cache_storage(t.fwd, kv, c.n, &kv_bytes);
        unsigned char *refreshed = malloc(kv_bytes);
        memcpy(refreshed, cache, kv_bytes);
        const int64_t ends[2] = {c.n, b.b1};
        const char *names[2] = {"prefix", "dual"};
        for (int w = 0; w < 2; w++) {
            ck_assert_msg(test_forward_run(t.fwd, c.ids, c.n, b.rows, b.n_rows, got, kv, b.begin,
                                           ends[w], &err) == DLLM_OK,
                          "%s", err.text);
            ck_assert_msg(memcmp(want, got, bytes) == 0, "%s %s %s: %s window's logits differ",
                          models[_i], k->name, dllm_cache_type_name(type), names[w]);
            ck_assert_msg(memcmp(refreshed, cache, kv_bytes) == 0,
                          "%s %s %s: %s window's keys and values differ", models[_i], k->name,
                          dllm_cache_type_name(type), names[w]);
        }
        free(refreshed);
        free(want);
        free(got);
        dllm_kv_cache_free(kv);
        test_forward_free(&t);
    }
    close_case(&c);
}
END_TEST

/*
 * A float16 cache holds what a float32 one does, rounded: after a refresh, layer 0's keys and
 * values (which depend on the tokens alone) are the float32 cache's converted by the
 * reference (gguf/quant.h's dllm_f32_to_fp16), bit for bit; every kernel variant.
 */
START_TEST(test_f16_layer0)
{
    struct fixture_case c = open_case(models[_i]);
    size_t n_variants;
    const struct dllm_kernels *variants = dllm_kernels_all(&n_variants);
    for (size_t v = 0; v < n_variants; v++) {
        if (!dllm_kernels_usable(&variants[v]))
            continue;
        struct test_forward t = test_forward_new(c.model, c.n, 1, 2, variants[v].name);
        struct dllm_kv_cache *kv[N_TYPES];
        struct dllm_error err = {0};
        for (int i = 0; i < N_TYPES; i++) {
            kv[i] = new_cache(t.fwd, c.n, types[i]);
            ck_assert_msg(test_forward_run(t.fwd, c.ids, c.n, NULL, 0, NULL, kv[i], 0, c.n, &err) ==
                              DLLM_OK,
                          "%s", err.text);
        }
        const float *f32 = dllm_backend_cpu_kv_layer(kv[0], 0);
        const dllm_fp16 *f16 = dllm_backend_cpu_kv_layer(kv[1], 0);
        const size_t n = dllm_kv_cache_bytes(t.fwd, c.n, DLLM_CACHE_F32) / sizeof(float) /
                         (size_t)dllm_model_n_layer(c.model);
        ck_assert_uint_eq(dllm_kv_cache_bytes(t.fwd, c.n, DLLM_CACHE_F16) * 2,
                          dllm_kv_cache_bytes(t.fwd, c.n, DLLM_CACHE_F32));
        for (size_t i = 0; i < n; i++)
            if (f16[i] != dllm_f32_to_fp16(f32[i]))
                ck_abort_msg("%s %s: element %zu of layer 0 is 0x%04x, not %a rounded", models[_i],
                             variants[v].name, i, f16[i], (double)f32[i]);
        for (int i = 0; i < N_TYPES; i++)
            dllm_kv_cache_free(kv[i]);
        test_forward_free(&t);
    }
    close_case(&c);
}
END_TEST

/*
 * Where the cache is stale (the refresh ran before half the block's masks were committed), a
 * cached step's layer-0 keys and values for the positions it computes depend only on their
 * tokens, so they are the uncached pass's over the new canvas, bit for bit (read from a
 * refresh into a second cache of the same type: a refresh computes every position as a pass
 * without a cache does, and stores them alike); the other positions keep the refresh's keys
 * and values in every layer. Dual and prefix windows, every kernel variant, float32 and
 * float16 caches. That the committed tokens changed layer 0's keys is checked too, so the
 * comparison is not vacuous.
 */
START_TEST(test_stale_kv)
{
    struct fixture_case c = open_case(models[_i]);
    const struct block b = first_block(&c, 16);
    const int64_t n_layer = dllm_model_n_layer(c.model);
    size_t n_variants;
    const struct dllm_kernels *variants = dllm_kernels_all(&n_variants);
    for (size_t v = 0; v < n_variants * N_TYPES; v++) {
        const struct dllm_kernels *k = &variants[v / N_TYPES];
        const enum dllm_cache_type type = types[v % N_TYPES];
        if (!dllm_kernels_usable(k))
            continue;
        struct test_forward t = test_forward_new(c.model, c.n, c.n, 2, k->name);
        struct dllm_kv_cache *kv = new_cache(t.fwd, c.n, type);
        struct dllm_kv_cache *exact = new_cache(t.fwd, c.n, type);
        float *logits = malloc((size_t)(b.n_rows * c.n_vocab) * sizeof *logits);
        int32_t *canvas = malloc((size_t)c.n * sizeof *canvas);
        memcpy(canvas, c.ids, (size_t)c.n * sizeof *canvas);
        struct dllm_error err = {0};
        ck_assert_msg(test_forward_run(t.fwd, canvas, c.n, b.rows, b.n_rows, logits, kv, 0, c.n,
                                       &err) == DLLM_OK,
                      "%s", err.text);
        commit_half(&c, &b, logits, canvas);
        size_t count;
        unsigned char *cached = cache_storage(t.fwd, kv, c.n, &count);
        unsigned char *stale = malloc(count);
        memcpy(stale, cached, count);
        ck_assert_msg(test_forward_run(t.fwd, canvas, c.n, b.rows, b.n_rows, logits, exact, 0, c.n,
                                       &err) == DLLM_OK,
                      "%s", err.text);
        const unsigned char *uncached = dllm_backend_cpu_kv_layer(exact, 0);
        /* Bytes of one layer's keys (or values), and of one position's. */
        const int64_t per = (int64_t)count / (2 * n_layer), dkv = per / c.n;
        const int64_t ends[2] = {b.b1, c.n};
        for (int w = 0; w < 2; w++) {
            const int64_t r0 = b.begin, r1 = ends[w];
            memcpy(cached, stale, count);
            ck_assert_msg(test_forward_run(t.fwd, canvas, c.n, b.rows, b.n_rows, logits, kv, r0, r1,
                                           &err) == DLLM_OK,
                          "%s", err.text);
            const size_t window = (size_t)((r1 - r0) * dkv);
            for (int64_t half = 0; half < 2; half++) {
                const int64_t at = half * per + r0 * dkv;
                ck_assert_msg(memcmp(cached + at, uncached + at, window) == 0,
                              "%s %s %s [%lld, %lld): layer-0 %s differ from the uncached pass's",
                              models[_i], k->name, dllm_cache_type_name(type), (long long)r0,
                              (long long)r1, half ? "values" : "keys");
            }
            ck_assert_msg(memcmp(cached + r0 * dkv, stale + r0 * dkv, window) != 0,
                          "%s: the committed tokens left layer 0's keys as they were", models[_i]);
            for (int64_t part = 0; part < 2 * n_layer; part++) {
                const unsigned char *got = cached + part * per, *was = stale + part * per;
                ck_assert(memcmp(got, was, (size_t)(r0 * dkv)) == 0);
                ck_assert(memcmp(got + r1 * dkv, was + r1 * dkv, (size_t)((c.n - r1) * dkv)) == 0);
            }
        }
        free(stale);
        free(canvas);
        free(logits);
        dllm_kv_cache_free(kv);
        dllm_kv_cache_free(exact);
        test_forward_free(&t);
    }
    close_case(&c);
}
END_TEST

/*
 * A cached step on a stale cache against ref_pass, a cached pass written from the reference
 * kernels alone and given the same stale keys and values: with the ref kernels, the step's
 * logits and every key and value it leaves in the cache are ref_pass's, bit for bit. Dual and
 * prefix windows, float32 and float16 caches (ref_pass rounding as the float16 one stores).
 */
START_TEST(test_reference_step)
{
    struct fixture_case c = open_case(models[_i]);
    const struct block b = first_block(&c, 16);
    struct test_forward t = test_forward_new(c.model, c.n, c.n, 2, "ref");
    for (int ty = 0; ty < N_TYPES; ty++) {
        struct dllm_kv_cache *kv = new_cache(t.fwd, c.n, types[ty]);
        const size_t bytes = (size_t)(b.n_rows * c.n_vocab) * sizeof(float);
        float *got = malloc(bytes), *want = malloc(bytes);
        int32_t *canvas = malloc((size_t)c.n * sizeof *canvas);
        memcpy(canvas, c.ids, (size_t)c.n * sizeof *canvas);
        struct dllm_error err = {0};
        ck_assert_msg(test_forward_run(t.fwd, canvas, c.n, b.rows, b.n_rows, got, kv, 0, c.n,
                                       &err) == DLLM_OK,
                      "%s", err.text);
        commit_half(&c, &b, got, canvas);
        size_t count;
        unsigned char *cached = cache_storage(t.fwd, kv, c.n, &count);
        const size_t floats = dllm_kv_cache_bytes(t.fwd, c.n, DLLM_CACHE_F32);
        unsigned char *stale = malloc(count);
        float *ref_kv = malloc(floats), *now = malloc(floats);
        memcpy(stale, cached, count);
        const int64_t ends[2] = {b.b1, c.n};
        for (int w = 0; w < 2; w++) {
            memcpy(cached, stale, count);
            storage_floats(kv, stale, count, ref_kv);
            ck_assert_msg(test_forward_run(t.fwd, canvas, c.n, b.rows, b.n_rows, got, kv, b.begin,
                                           ends[w], &err) == DLLM_OK,
                          "%s", err.text);
            ref_pass(c.model, canvas, c.n, b.begin, ends[w], types[ty] == DLLM_CACHE_F16, ref_kv,
                     b.rows, b.n_rows, want);
            ck_assert_msg(memcmp(got, want, bytes) == 0, "%s %s [%lld, %lld): logits differ",
                          models[_i], dllm_cache_type_name(types[ty]), (long long)b.begin,
                          (long long)ends[w]);
            storage_floats(kv, cached, count, now);
            ck_assert_msg(memcmp(now, ref_kv, floats) == 0, "%s %s [%lld, %lld): the cache differs",
                          models[_i], dllm_cache_type_name(types[ty]), (long long)b.begin,
                          (long long)ends[w]);
        }
        printf("%s %s: cached steps over [%lld, %lld) and [%lld, %lld) equal the reference step\n",
               models[_i], dllm_cache_type_name(types[ty]), (long long)b.begin, (long long)b.b1,
               (long long)b.begin, (long long)c.n);
        free(stale);
        free(ref_kv);
        free(now);
        free(canvas);
        free(got);
        free(want);
        dllm_kv_cache_free(kv);
    }
    test_forward_free(&t);
    close_case(&c);
}
END_TEST

/* The smallest cosine between rows of a and b ([n, V] each). */
static double min_cosine(const float *a, const float *b, int64_t n, int64_t V)
{
    double worst = 1.0;
    for (int64_t r = 0; r < n; r++) {
        double ab = 0, aa = 0, bb = 0;
        for (int64_t j = 0; j < V; j++) {
            ab += (double)a[r * V + j] * b[r * V + j];
            aa += (double)a[r * V + j] * a[r * V + j];
            bb += (double)b[r * V + j] * b[r * V + j];
        }
        worst = fmin(worst, ab / sqrt(aa * bb));
    }
    return worst;
}

/*
 * Where the cache is stale: the refresh runs on a canvas, then the first half of the block's
 * masks get the refresh's argmax tokens, as a step commits them; the cached step's rows for
 * the block against an exact pass over that canvas. A sanity bound, fixed before the first
 * run and not a measure of quality: cosine at least 0.99 (random weights; bench/ measures the
 * divergence on the synthetic shapes). A float16 cache, the default.
 */
START_TEST(test_stale_bound)
{
    struct fixture_case c = open_case(models[_i]);
    const struct block b = first_block(&c, 16);
    struct test_forward t = test_forward_new(c.model, c.n, c.n, 2, NULL);
    struct dllm_kv_cache *kv = new_cache(t.fwd, c.n, DLLM_CACHE_F16);
    const size_t bytes = (size_t)(b.n_rows * c.n_vocab) * sizeof(float);
    float *fresh = malloc(bytes), *cached = malloc(bytes);
    int32_t *canvas = malloc((size_t)c.n * sizeof *canvas);
    memcpy(canvas, c.ids, (size_t)c.n * sizeof *canvas);
    struct dllm_error err = {0};
    ck_assert_msg(test_forward_run(t.fwd, canvas, c.n, b.rows, b.n_rows, fresh, kv, 0, c.n, &err) ==
                      DLLM_OK,
                  "%s", err.text);
    const int64_t committed = commit_half(&c, &b, fresh, canvas);
    ck_assert_msg(test_forward_run(t.fwd, canvas, c.n, b.rows, b.n_rows, fresh, NULL, 0, 0, &err) ==
                      DLLM_OK,
                  "%s", err.text);
    ck_assert_msg(test_forward_run(t.fwd, canvas, c.n, b.rows, b.n_rows, cached, kv, b.begin, c.n,
                                   &err) == DLLM_OK,
                  "%s", err.text);
    const double prefix = min_cosine(fresh, cached, b.n_rows, c.n_vocab);
    /* The dual window reads the prefix's stale keys again: refresh first for a fair start. */
    ck_assert_msg(test_forward_run(t.fwd, c.ids, c.n, b.rows, b.n_rows, cached, kv, 0, c.n, &err) ==
                      DLLM_OK,
                  "%s", err.text);
    ck_assert_msg(test_forward_run(t.fwd, canvas, c.n, b.rows, b.n_rows, cached, kv, b.begin, b.b1,
                                   &err) == DLLM_OK,
                  "%s", err.text);
    const double dual = min_cosine(fresh, cached, b.n_rows, c.n_vocab);
    printf("%s: %lld of the block committed; cosine min prefix %.6f, dual %.6f\n", models[_i],
           (long long)committed, prefix, dual);
    ck_assert_double_ge(prefix, 0.99);
    ck_assert_double_ge(dual, 0.99);
    free(canvas);
    free(fresh);
    free(cached);
    dllm_kv_cache_free(kv);
    test_forward_free(&t);
    close_case(&c);
}
END_TEST

/* Arguments a cached pass refuses. */
START_TEST(test_cache_errors)
{
    struct fixture_case c = open_case("llada-tiny-q4km");
    struct test_forward t = test_forward_new(c.model, 16, 16, 1, NULL);
    struct test_forward other = test_forward_new(c.model, 16, 16, 1, NULL);
    struct dllm_kv_cache *kv = new_cache(t.fwd, 8, DLLM_CACHE_F32);
    struct dllm_kv_cache *foreign = new_cache(other.fwd, 16, DLLM_CACHE_F16);
    struct dllm_error err = {0};
    struct dllm_kv_cache *none = NULL;
    ck_assert_int_eq(dllm_kv_cache_new(t.fwd, 8, (enum dllm_cache_type)2, false, &none, &err),
                     DLLM_ERR_ARG);
    ck_assert_str_eq(err.text, "unknown cache type 2 (known: f16, f32)");
    ck_assert_ptr_null(none);
    enum dllm_cache_type type = DLLM_CACHE_F32;
    ck_assert(dllm_cache_type_parse("f16", &type) && type == DLLM_CACHE_F16);
    ck_assert(dllm_cache_type_parse("f32", &type) && type == DLLM_CACHE_F32);
    ck_assert(!dllm_cache_type_parse("f64", &type) && type == DLLM_CACHE_F32);
    ck_assert_str_eq(dllm_cache_type_name(DLLM_CACHE_F16), "f16");
    ck_assert_ptr_null(dllm_cache_type_name((enum dllm_cache_type)2));
    ck_assert_int_eq(dllm_kv_cache_new(t.fwd, 17, DLLM_CACHE_F16, false, &none, &err),
                     DLLM_ERR_ARG);
    ck_assert_str_eq(err.text, "a K/V cache for 17 tokens: this forward context takes 1 to 16");
    ck_assert_ptr_null(none);
    float *logits = malloc((size_t)c.n_vocab * sizeof *logits);
    const int32_t row = 2;
    struct dllm_pass p = {.ids = c.ids,
                          .n_tokens = 8,
                          .rows = &row,
                          .n_rows = 1,
                          .logits = logits,
                          .cache = kv,
                          .begin = 4,
                          .end = 8};
    ck_assert_int_eq(dllm_forward_run(t.fwd, &p, &err), DLLM_ERR_ARG);
    ck_assert_str_eq(err.text, "logits row 2 is outside the positions [4, 8) the pass computes");
    p.begin = 5;
    p.end = 5;
    ck_assert_int_eq(dllm_forward_run(t.fwd, &p, &err), DLLM_ERR_ARG);
    ck_assert_str_eq(err.text, "positions [5, 5) to compute: use a non-empty range inside [0, 8)");
    p.begin = 0;
    p.end = 8;
    p.n_tokens = 9;
    ck_assert_int_eq(dllm_forward_run(t.fwd, &p, &err), DLLM_ERR_ARG);
    ck_assert_str_eq(err.text, "9 tokens: the K/V cache holds 8");
    p.n_tokens = 8;
    p.cache = foreign;
    ck_assert_int_eq(dllm_forward_run(t.fwd, &p, &err), DLLM_ERR_ARG);
    ck_assert_str_eq(err.text, "the K/V cache was made for another forward context");
    p.cache = kv;
    ck_assert_int_eq(dllm_forward_run(t.fwd, &p, &err), DLLM_OK);
    free(logits);
    dllm_kv_cache_free(kv);
    dllm_kv_cache_free(foreign);
    dllm_kv_cache_free(NULL);
    test_forward_free(&t);
    test_forward_free(&other);
    close_case(&c);
}
END_TEST

static Suite *cache_suite(void)
{
    Suite *s = suite_create("cache");
    const int n = (int)(sizeof models / sizeof models[0]), r = TEST_N_REPRESENTATIVE;
    TCase *tc = tcase_create("exact");
    tcase_add_loop_test(tc, test_whole_window_runs, 0, r);
    tcase_add_loop_test(tc, test_unchanged_canvas, 0, r);
    tcase_add_loop_test(tc, test_f16_layer0, 0, r);
    tcase_add_test(tc, test_cache_errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("stale");
    tcase_add_loop_test(tc, test_stale_kv, 0, r);
    tcase_add_loop_test(tc, test_reference_step, 0, r);
    tcase_add_loop_test(tc, test_stale_bound, 0, r);
    suite_add_tcase(s, tc);
    tc = tcase_create("sweep");
    tcase_set_tags(tc, TEST_TAG_SWEEP);
    tcase_add_loop_test(tc, test_whole_window_runs, r, n);
    tcase_add_loop_test(tc, test_unchanged_canvas, r, n);
    tcase_add_loop_test(tc, test_f16_layer0, r, n);
    tcase_add_loop_test(tc, test_stale_kv, r, n);
    tcase_add_loop_test(tc, test_reference_step, r, n);
    tcase_add_loop_test(tc, test_stale_bound, r, n);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    fixtures_dir();
    return test_run_suite(cache_suite());
}
