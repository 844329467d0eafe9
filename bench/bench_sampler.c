/*
 * bench_sampler: times one denoising step of the samplers, dllm_sampler_step (all the work
 * outside the forward pass), on random logits over the real vocabularies:
 *
 *   llada-t0    LLaDA, 126464 ids, one block of 32 masks (32 rows), temperature 0
 *   llada-t1    the same at temperature 1 (Gumbel-max with float64 noise)
 *   dream       Dream, 152064 ids, 128 masks without blocks (128 rows), temperature 0.2,
 *               top-p 0.95, alg entropy (the Dream defaults), on logits of standard deviation
 *               1, as a synthetic model's random weights give: a nucleus of a few dozen ids
 *   dream-flat  the same on nearly flat rows (standard deviation 0.05), the hard case for
 *               top-p: the nucleus holds most of the vocabulary
 *   dream-t1    dream at temperature 1 (`--temperature 1`): the nucleus holds about two
 *               thirds of the vocabulary
 *
 * on each thread count of --threads. Prints one JSON document: for each case and thread
 * count, the median over --reps steps (after one warm-up) of the wall time in ms per step and
 * per row, and of the process's CPU time per step (all threads; on a busy machine the wall
 * time also counts the time other programs held the cores).
 *
 *   bench_sampler [--cases LIST] [--threads LIST] [--reps N]
 */
#include "config.h"

#include "bench_util.h"
#include "kernels/rowmath.h"
#include "sampler.h"
#include "threadpool.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_LIST 16
#define MAX_REPS 101

struct bench_case {
    const char *name;
    enum dllm_sampler_kind kind;
    int64_t n_vocab;
    int32_t mask_id;
    int64_t rows;       /* masks of the canvas, all rows of the first step */
    double temperature; /* -1: the kind's default */
    double sigma;       /* standard deviation of the random logits */
};

static const struct bench_case cases[] = {
    {"llada-t0", DLLM_SAMPLER_LLADA, 126464, 126336, 32, 0.0, 2.0},
    {"llada-t1", DLLM_SAMPLER_LLADA, 126464, 126336, 32, 1.0, 2.0},
    {"dream", DLLM_SAMPLER_DREAM, 152064, 151666, 128, -1.0, 1.0},
    {"dream-flat", DLLM_SAMPLER_DREAM, 152064, 151666, 128, -1.0, 0.05},
    {"dream-t1", DLLM_SAMPLER_DREAM, 152064, 151666, 128, 1.0, 1.0},
};
#define N_CASES (sizeof cases / sizeof cases[0])

/*
 * Times reps + 1 first steps of case c on a pool of n_threads (the first is the warm-up):
 * returns the median wall time in ms, or a negative value on error, and the median CPU time
 * in *cpu_ms.
 */
static double time_case(const struct bench_case *c, int n_threads, int reps, const float *logits,
                        double *cpu_ms)
{
    struct dllm_error err = {0};
    struct dllm_threadpool *pool = NULL;
    struct dllm_sampler *s = NULL;
    int64_t n_prompt = 16, canvas_len = n_prompt + c->rows;
    int32_t *canvas = malloc((size_t)canvas_len * sizeof *canvas);
    double times[MAX_REPS + 1], cpu[MAX_REPS + 1], median = -1.0;
    if (!canvas || dllm_threadpool_new(n_threads, &pool, &err) ||
        dllm_sampler_new(canvas_len, c->n_vocab, n_threads, getenv("DLLM_KERNELS"), &s, &err))
        goto fail;
    struct dllm_sampler_params p;
    dllm_sampler_params_init(&p, c->kind);
    p.gen_length = c->rows;
    p.block_length = c->kind == DLLM_SAMPLER_LLADA ? c->rows : 0;
    /* LLaDA: one commit a step; Dream: half as many steps as masks, so step 0 commits one. */
    p.steps = c->kind == DLLM_SAMPLER_LLADA ? c->rows : c->rows / 2;
    if (c->temperature >= 0.0)
        p.temperature = c->temperature;
    for (int k = 0; k <= reps; k++) {
        for (int64_t i = 0; i < canvas_len; i++)
            canvas[i] = i < n_prompt ? 1 : c->mask_id;
        const int32_t *pos;
        int64_t n_rows;
        struct dllm_sampler_result res;
        if (dllm_sampler_start(s, &p, n_prompt, c->mask_id, NULL, 0, canvas, &err) ||
            dllm_sampler_next(s, canvas, &pos, &n_rows, &err))
            goto fail;
        if (n_rows != c->rows) {
            fprintf(stderr, "bench_sampler: %s: %lld rows, expected %lld\n", c->name,
                    (long long)n_rows, (long long)c->rows);
            goto done;
        }
        double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        if (dllm_sampler_step(s, pool, canvas, logits, &res, &err))
            goto fail;
        times[k] = 1e3 * (clock_s(CLOCK_MONOTONIC) - t0);
        cpu[k] = 1e3 * (clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0);
    }
    qsort(times + 1, (size_t)reps, sizeof *times, cmp_double);
    qsort(cpu + 1, (size_t)reps, sizeof *cpu, cmp_double);
    median = times[1 + reps / 2];
    *cpu_ms = cpu[1 + reps / 2];
    goto done;
fail:
    fprintf(stderr, "bench_sampler: %s: %s\n", c->name, err.text);
done:
    dllm_sampler_free(s);
    dllm_threadpool_free(pool);
    free(canvas);
    return median;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: bench_sampler [--cases llada-t0,llada-t1,dream,dream-flat,dream-t1] "
               "[--threads 1,2] [--reps N]\n");
}

int main(int argc, char **argv)
{
    char cases_s[256] = "llada-t0,llada-t1,dream,dream-flat,dream-t1", threads_s[64] = "1,2";
    int reps = 9;
    static const struct option opts[] = {
        {"cases", required_argument, NULL, 'c'},
        {"threads", required_argument, NULL, 'j'},
        {"reps", required_argument, NULL, 'r'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (c) {
        case 'c': snprintf(cases_s, sizeof cases_s, "%s", optarg); break;
        case 'j': snprintf(threads_s, sizeof threads_s, "%s", optarg); break;
        case 'r': reps = atoi(optarg); break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    char *names[MAX_LIST], *threads[MAX_LIST];
    int n_names = split_list(cases_s, names, MAX_LIST),
        n_threads = split_list(threads_s, threads, MAX_LIST);
    if (reps < 1 || reps > MAX_REPS || optind != argc || n_names == 0 || n_threads == 0) {
        usage(stderr);
        return 2;
    }
    const struct bench_case *run[MAX_LIST];
    for (int i = 0; i < n_names; i++) {
        run[i] = NULL;
        for (size_t k = 0; k < N_CASES; k++)
            if (strcmp(names[i], cases[k].name) == 0)
                run[i] = &cases[k];
        if (!run[i]) {
            fprintf(stderr, "bench_sampler: unknown case %s\n", names[i]);
            usage(stderr);
            return 2;
        }
    }
    for (int i = 0; i < n_threads; i++)
        if (atoi(threads[i]) < 1 || atoi(threads[i]) > 1024) {
            fprintf(stderr, "bench_sampler: bad thread count %s (1 .. 1024)\n", threads[i]);
            return 2;
        }
    const struct dllm_rowmath *rm;
    struct dllm_error err = {0};
    if (dllm_rowmath_select(getenv("DLLM_KERNELS"), &rm, &err)) {
        fprintf(stderr, "bench_sampler: %s\n", err.text);
        return 1;
    }

    char cpu_model[128], load[128];
    read_line("/proc/cpuinfo", "model name\t: ", cpu_model, sizeof cpu_model);
    read_line("/proc/loadavg", "", load, sizeof load);
    printf("{\n  \"what\": \"one dllm_sampler_step on random logits\",\n");
    printf("  \"cpu\": \"%s\",\n  \"loadavg_at_start\": \"%s\",\n", cpu_model, load);
    printf("  \"rowmath\": \"%s\",\n", rm->name);
    printf("  \"method\": \"median of %d steps after 1 warm-up\",\n  \"results\": [", reps);
    for (int i = 0; i < n_names; i++) {
        const struct bench_case *c = run[i];
        size_t n = (size_t)(c->rows * c->n_vocab);
        float *logits = malloc(n * sizeof *logits);
        if (!logits) {
            fprintf(stderr, "bench_sampler: out of memory\n");
            return 1;
        }
        uint64_t seed = 42;
        for (size_t k = 0; k < n; k++)
            logits[k] = (float)c->sigma * rng_normal(&seed);
        for (int t = 0; t < n_threads; t++) {
            double cpu_ms, ms = time_case(c, atoi(threads[t]), reps, logits, &cpu_ms);
            if (ms < 0.0)
                return 1;
            printf("%s\n    {\"case\": \"%s\", \"n_vocab\": %lld, \"rows\": %lld, \"threads\": %d, "
                   "\"ms_per_step\": %.3f, \"ms_per_row\": %.4f, \"cpu_ms_per_step\": %.3f}",
                   i || t ? "," : "", c->name, (long long)c->n_vocab, (long long)c->rows,
                   atoi(threads[t]), ms, ms / (double)c->rows, cpu_ms);
            fflush(stdout);
        }
        free(logits);
    }
    printf("\n  ]\n}\n");
    return 0;
}
