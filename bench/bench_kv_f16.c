/*
 * bench_kv_f16: what storing a K/V cache in float16 adds to the cache's own divergence.
 * One block after the prompt: a refresh pass fills a float32 cache and a float16 one, then the
 * block's masks are committed over --steps steps (left to right, each the exact pass's argmax;
 * a measurement, not a sampler). At each step the candidate rows (the block's masked slots) of
 * the exact pass over the canvas (no cache) are compared with those of a cached step of each
 * window (dual: the block; prefix: the block to the end) on each cache, restored to what its
 * refresh left. The float16 cache runs as dllm does: every key and value its passes' attention
 * reads, the refresh's included, is rounded to binary16, so its step-0 rows already differ
 * from the exact pass's. Prints one JSON object: per step and window, the largest and mean
 * relative L2 error |a - e| / |e| of the rows against the exact pass and the smallest cosine,
 * for float32 and float16, and the float16 rows' error against the float32 ones.
 *
 *   bench_kv_f16 MODEL (--ids I0,I1,... --prompt P | --prompt P --canvas N) [--block 32]
 *                [--steps 4] [--threads 2]
 */
#include "config.h"

#include "backend.h"
#include "bench_util.h"
#include "dllm.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What is measured and how. */
struct setup {
    struct dllm_model *model;
    struct dllm_forward *fwd;
    int32_t *canvas;
    int64_t n, b0, b1, n_vocab;
    bool shift;
};

/* Relative L2 error and cosine of a row a against e. */
static void row_error(const float *a, const float *e, int64_t V, double *rel, double *cos)
{
    double d = 0, ee = 0, aa = 0, ae = 0;
    for (int64_t j = 0; j < V; j++) {
        d += ((double)a[j] - e[j]) * ((double)a[j] - e[j]);
        ee += (double)e[j] * e[j];
        aa += (double)a[j] * a[j];
        ae += (double)a[j] * e[j];
    }
    *rel = sqrt(d / ee);
    *cos = ae / sqrt(aa * ee);
}

/* Prints the figures of rows a [R, V] against e as a JSON object's members. */
static void print_figures(const char *name, const float *a, const float *e, int64_t R, int64_t V)
{
    double worst = 0, sum = 0, cos_min = 1;
    for (int64_t r = 0; r < R; r++) {
        double rel, cos;
        row_error(a + r * V, e + r * V, V, &rel, &cos);
        worst = fmax(worst, rel);
        sum += rel;
        cos_min = fmin(cos_min, cos);
    }
    printf("\"%s\": {\"rel_l2_max\": %.9g, \"rel_l2_mean\": %.9g, \"cos_min\": %.9g}", name, worst,
           sum / (double)R, cos_min);
}

/* Runs a pass over the canvas for rows (cache NULL: uncached), exiting on failure. */
static void run_pass(const struct setup *s, const int32_t *rows, int64_t R, float *logits,
                     struct dllm_kv_cache *kv, int64_t begin, int64_t end)
{
    struct dllm_error err = {0};
    const struct dllm_pass p = {.ids = s->canvas,
                                .n_tokens = s->n,
                                .rows = rows,
                                .n_rows = R,
                                .logits = logits,
                                .cache = kv,
                                .begin = begin,
                                .end = end};
    if (dllm_forward_run(s->fwd, &p, &err) != DLLM_OK) {
        fprintf(stderr, "bench_kv_f16: %s\n", err.text);
        exit(1);
    }
}

/* Parses a comma-separated list of token ids into a new array; *n receives the count. */
static int32_t *parse_ids(const char *text, int64_t *n)
{
    int64_t cap = 1;
    for (const char *p = text; *p; p++)
        cap += *p == ',';
    int32_t *ids = malloc((size_t)cap * sizeof *ids);
    char *end;
    *n = 0;
    for (const char *p = text; ids && *p; p = *end ? end + 1 : end) {
        ids[(*n)++] = (int32_t)strtol(p, &end, 10);
        if (end == p)
            return NULL;
    }
    return ids;
}

/* A new cache of a type for the whole canvas, exiting on failure. */
static struct dllm_kv_cache *new_cache(const struct setup *s, enum dllm_cache_type type)
{
    struct dllm_kv_cache *kv;
    struct dllm_error err = {0};
    if (dllm_kv_cache_new(s->fwd, s->n, type, false, &kv, &err) != DLLM_OK) {
        fprintf(stderr, "bench_kv_f16: %s\n", err.text);
        exit(1);
    }
    return kv;
}

/*
 * The measured block: refresh, then at each step the exact rows and the cached ones of both
 * windows on the float32 and the float16 cache, then the step's commits.
 */
static void measure(struct setup *s, int64_t steps)
{
    const int32_t mask = (int32_t)dllm_model_mask_id(s->model);
    const int64_t V = s->n_vocab, W = s->b1 - s->b0, begin = s->shift ? s->b0 - 1 : s->b0;
    struct dllm_kv_cache *kv = new_cache(s, DLLM_CACHE_F32), *kv16 = new_cache(s, DLLM_CACHE_F16);
    const size_t bytes = dllm_kv_cache_bytes(s->fwd, s->n, DLLM_CACHE_F32),
                 bytes16 = dllm_kv_cache_bytes(s->fwd, s->n, DLLM_CACHE_F16);
    void *cache = dllm_backend_cpu_kv_layer(kv, 0), *cache16 = dllm_backend_cpu_kv_layer(kv16, 0);
    void *f32 = malloc(bytes), *f16 = malloc(bytes16);
    float *exact = malloc((size_t)(W * V) * sizeof *exact);
    float *a32 = malloc((size_t)(W * V) * sizeof *a32),
          *a16 = malloc((size_t)(W * V) * sizeof *a16);
    int32_t *rows = malloc((size_t)W * sizeof *rows), *slots = malloc((size_t)W * sizeof *slots);
    run_pass(s, NULL, 0, NULL, kv, 0, s->n);
    run_pass(s, NULL, 0, NULL, kv16, 0, s->n);
    memcpy(f32, cache, bytes);
    memcpy(f16, cache16, bytes16);
    printf("\"steps\": [");
    for (int64_t k = 0; k < steps; k++) {
        int64_t R = 0, left;
        for (int64_t p = s->b0; p < s->b1; p++) {
            if (s->canvas[p] != mask)
                continue;
            slots[R] = (int32_t)p;
            rows[R++] = (int32_t)(s->shift ? p - 1 : p);
        }
        if (R == 0)
            break;
        run_pass(s, rows, R, exact, NULL, 0, 0);
        printf("%s\n  {\"step\": %lld, \"rows\": %lld", k ? "," : "", (long long)k, (long long)R);
        const int64_t ends[2] = {s->b1, s->n};
        const char *names[2] = {"dual", "prefix"};
        for (int w = 0; w < 2; w++) {
            memcpy(cache, f32, bytes);
            run_pass(s, rows, R, a32, kv, begin, ends[w]);
            memcpy(cache16, f16, bytes16);
            run_pass(s, rows, R, a16, kv16, begin, ends[w]);
            printf(", \"%s\": {", names[w]);
            print_figures("f32", a32, exact, R, V);
            printf(", ");
            print_figures("f16", a16, exact, R, V);
            printf(", ");
            print_figures("f16_vs_f32", a16, a32, R, V);
            printf("}");
        }
        printf("}");
        left = steps - k;
        for (int64_t r = 0; r < (R + left - 1) / left; r++) {
            const float *l = exact + r * V;
            int64_t best = 0;
            for (int64_t j = 1; j < V; j++)
                best = l[j] > l[best] ? j : best;
            s->canvas[slots[r]] = best == mask ? 0 : (int32_t)best;
        }
    }
    printf("]");
    dllm_kv_cache_free(kv);
    dllm_kv_cache_free(kv16);
    free(f32);
    free(f16);
    free(exact);
    free(a32);
    free(a16);
    free(rows);
    free(slots);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"ids", required_argument, NULL, 'i'},
                                         {"prompt", required_argument, NULL, 'p'},
                                         {"canvas", required_argument, NULL, 'c'},
                                         {"block", required_argument, NULL, 'b'},
                                         {"steps", required_argument, NULL, 's'},
                                         {"threads", required_argument, NULL, 't'},
                                         {NULL, 0, NULL, 0}};
    const char *ids_text = NULL;
    int64_t prompt = 0, canvas = 0, block = 32, steps = 4;
    int threads = 2, c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'i': ids_text = optarg; break;
        case 'p': prompt = atoll(optarg); break;
        case 'c': canvas = atoll(optarg); break;
        case 'b': block = atoll(optarg); break;
        case 's': steps = atoll(optarg); break;
        case 't': threads = atoi(optarg); break;
        default: return 2;
        }
    }
    if (optind != argc - 1 || prompt < 1 || block < 1 || steps < 1 ||
        (!ids_text && canvas <= prompt)) {
        fprintf(stderr, "usage: bench_kv_f16 MODEL (--ids I0,I1,... --prompt P | --prompt P "
                        "--canvas N) [--block 32] [--steps 4] [--threads 2]\n");
        return 2;
    }
    struct setup s = {0};
    struct dllm_error err = {0};
    struct dllm_threadpool *pool;
    struct dllm_forward_params fp;
    if (dllm_model_open(argv[optind], NULL, &s.model, &err) ||
        dllm_threadpool_new(threads, &pool, &err)) {
        fprintf(stderr, "bench_kv_f16: %s\n", err.text);
        return 1;
    }
    s.n_vocab = dllm_model_n_vocab(s.model);
    s.shift = dllm_model_shift_logits(s.model);
    if (ids_text) {
        s.canvas = parse_ids(ids_text, &s.n);
    } else {
        uint64_t seed = 42;
        s.n = canvas;
        s.canvas = malloc((size_t)canvas * sizeof *s.canvas);
        for (int64_t i = 0; s.canvas && i < canvas; i++)
            s.canvas[i] = i < prompt ? (int32_t)(rng_next(&seed) % (uint64_t)s.n_vocab)
                                     : (int32_t)dllm_model_mask_id(s.model);
        for (int64_t i = 0; s.canvas && i < prompt; i++)
            s.canvas[i] = s.canvas[i] == dllm_model_mask_id(s.model) ? 0 : s.canvas[i];
    }
    if (!s.canvas || s.n <= prompt) {
        fprintf(stderr, "bench_kv_f16: --ids must hold more than --prompt token ids\n");
        return 2;
    }
    s.b0 = prompt;
    s.b1 = prompt + block < s.n ? prompt + block : s.n;
    dllm_forward_params_init(&fp);
    fp.max_tokens = s.n;
    fp.max_rows = s.b1 - s.b0;
    fp.pool = pool;
    if (dllm_forward_new(s.model, &fp, &s.fwd, &err)) {
        fprintf(stderr, "bench_kv_f16: %s\n", err.text);
        return 1;
    }
    printf("{\"tokens\": %lld, \"prompt\": %lld, \"block\": [%lld, %lld], ", (long long)s.n,
           (long long)prompt, (long long)s.b0, (long long)s.b1);
    measure(&s, steps);
    printf("}\n");
    dllm_forward_free(s.fwd);
    dllm_threadpool_free(pool);
    dllm_model_close(s.model);
    free(s.canvas);
    return 0;
}
