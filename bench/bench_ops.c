/*
 * bench_ops: times each block-kernel variant (kernels/ops.h) this CPU runs on one layer of
 * LLaDA-8B (32 heads of 128 over 32 kv heads, d_model 4096, ffn 12288) and Dream-7B (28 heads
 * over 4, d_model 3584, ffn 18944), on one thread:
 *   attention    all L query rows of the layer, GFLOP/s counting 4 L^2 n_head head_dim
 *   elementwise  the layer's other block kernels: two RMSNorms and two additions of L rows,
 *                RoPE of q and k for each token, SwiGLU of L ffn rows
 * Each figure is the median of --reps runs after one warm-up run, in ms, with the speedup
 * over the reference. With --threads N, then the attention of the fastest variant on a pool of
 * 1 and of N threads, in work items of one kv head (as the CPU backend cuts it on 2 threads),
 * wall time, in two states: its inputs resident (the same run again), and rewritten before each run
 * by the pool's threads, each a share of the columns as the matrix products leave them, so that a
 * thread reads the rows another core wrote.
 *
 *   bench_ops [--rows 160,512] [--reps N] [--threads N]
 */
#include "config.h"

#include "bench_util.h"
#include "kernels/ops.h"
#include "lines.h"
#include "threadpool.h"

#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_ROWS 16
#define MAX_REPS 101

struct layer {
    const char *name;
    int64_t n_head, n_kv, head_dim, n_embd, n_ff;
    float rope_base;
    enum dllm_rope_mode mode;
};

static const struct layer layers[] = {
    {"llada-8b", 32, 32, 128, 4096, 12288, 500000.0f, DLLM_ROPE_NORMAL},
    {"dream-7b", 28, 4, 128, 3584, 18944, 1e6f, DLLM_ROPE_NEOX},
};

/* The buffers of one layer at L tokens. */
struct buffers {
    float *q, *k, *v, *out, *scores; /* [L, n_head hd], [L, n_kv hd] twice, [L, n_head hd] */
    float *x, *xn, *g;               /* [L, n_embd] twice, [n_embd] */
    float *gate, *up;                /* [L, n_ff] */
    float *cos, *sin;                /* [L, hd / 2] */
};

/* n floats uniform in [-1, 1) from a xorshift stream, 64-byte aligned; NULL when out of memory. */
static float *random_floats(int64_t n, uint64_t *s)
{
    float *x = dllm_alloc_lines((size_t)n * sizeof *x);
    for (int64_t i = 0; x != NULL && i < n; i++) {
        *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
        x[i] = (float)((double)(*s >> 11) * 0x1p-52 - 1.0);
    }
    return x;
}

static void buffers_free(struct buffers *b)
{
    float *all[] = {b->q,  b->k, b->v,    b->out, b->scores, b->x,
                    b->xn, b->g, b->gate, b->up,  b->cos,    b->sin};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        free(all[i]);
    }
}

static int buffers_init(struct buffers *b, const struct layer *ly, int64_t L)
{
    uint64_t s = 0x9e3779b97f4a7c15u;
    const int64_t dq = ly->n_head * ly->head_dim, dkv = ly->n_kv * ly->head_dim;
    b->q = random_floats(L * dq, &s);
    b->k = random_floats(L * dkv, &s);
    b->v = random_floats(L * dkv, &s);
    b->out = random_floats(L * dq, &s);
    b->scores = random_floats(dllm_ops_attention_scratch(L, ly->head_dim), &s);
    b->x = random_floats(L * ly->n_embd, &s);
    b->xn = random_floats(L * ly->n_embd, &s);
    b->g = random_floats(ly->n_embd, &s);
    b->gate = random_floats(L * ly->n_ff, &s);
    b->up = random_floats(L * ly->n_ff, &s);
    b->cos = random_floats(L * ly->head_dim / 2, &s);
    b->sin = random_floats(L * ly->head_dim / 2, &s);
    if (!b->q || !b->k || !b->v || !b->out || !b->scores || !b->x || !b->xn || !b->g || !b->gate ||
        !b->up || !b->cos || !b->sin) {
        buffers_free(b);
        return -1;
    }
    dllm_rope_table(ly->rope_base, ly->head_dim, L, b->cos, b->sin);
    return 0;
}

static void run_attention(const struct dllm_ops *ops, const struct layer *ly, int64_t L,
                          struct buffers *b)
{
    ops->attention(b->q, b->k, b->v, L, ly->n_head, ly->n_kv, ly->head_dim,
                   1.0f / sqrtf((float)ly->head_dim), 0, L, 0, ly->n_kv, b->scores, b->out);
}

static void run_elementwise(const struct dllm_ops *ops, const struct layer *ly, int64_t L,
                            struct buffers *b)
{
    const int64_t d = ly->n_embd, hd = ly->head_dim, half = hd / 2;
    for (int64_t i = 0; i < L; i++) {
        ops->rms_norm(b->x + i * d, b->g, 1e-5f, d, b->xn + i * d);
        ops->rope(b->q + i * ly->n_head * hd, ly->n_head, hd, hd, ly->mode, b->cos + i * half,
                  b->sin + i * half);
        ops->rope(b->k + i * ly->n_kv * hd, ly->n_kv, hd, hd, ly->mode, b->cos + i * half,
                  b->sin + i * half);
        ops->add(b->x + i * d, b->xn + i * d, d);
        ops->rms_norm(b->x + i * d, b->g, 1e-5f, d, b->xn + i * d);
    }
    ops->swiglu(b->gate, b->up, L * ly->n_ff);
    ops->add(b->x, b->xn, L * d);
}

/* The median time of reps runs of fn after a warm-up run, in ms. */
static double median_ms(void (*fn)(const struct dllm_ops *, const struct layer *, int64_t,
                                   struct buffers *),
                        const struct dllm_ops *ops, const struct layer *ly, int64_t L,
                        struct buffers *b, int reps)
{
    double t[MAX_REPS];
    fn(ops, ly, L, b);
    for (int r = 0; r < reps; r++) {
        const double t0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
        fn(ops, ly, L, b);
        t[r] = 1e3 * (clock_s(CLOCK_THREAD_CPUTIME_ID) - t0);
    }
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    return t[reps / 2];
}

/* The attention of a layer on a pool: one kv head an item, each thread its own scratch. */
struct pool_attention {
    struct dllm_threadpool *pool;
    const struct dllm_ops *ops;
    const struct layer *ly;
    int64_t L;
    struct buffers *b;
    float *scratch; /* [threads][per_thread] */
    int64_t per_thread;
};

static void attention_item(void *ctx, int64_t g, int thread)
{
    const struct pool_attention *j = ctx;
    const struct layer *ly = j->ly;
    j->ops->attention(j->b->q, j->b->k, j->b->v, j->L, ly->n_head, ly->n_kv, ly->head_dim,
                      1.0f / sqrtf((float)ly->head_dim), 0, j->L, g, g + 1,
                      j->scratch + thread * j->per_thread, j->b->out);
}

/*
 * Thread t's share of the columns of q, k and v negated in every row (a write that keeps the
 * scores and flips the outputs' sign): the rows as the products leave them, each row written
 * by every core.
 */
static void rewrite_item(void *ctx, int64_t t, int thread)
{
    (void)thread;
    const struct pool_attention *j = ctx;
    const int64_t hd = j->ly->head_dim;
    float *m[] = {j->b->q, j->b->k, j->b->v};
    const int64_t width[] = {j->ly->n_head * hd, j->ly->n_kv * hd, j->ly->n_kv * hd};
    for (int x = 0; x < 3; x++) {
        int64_t c0, c1;
        dllm_threadpool_part(j->pool, width[x], (int)t, &c0, &c1);
        for (int64_t i = 0; i < j->L; i++) {
            for (int64_t c = c0; c < c1; c++) {
                m[x][i * width[x] + c] = -m[x][i * width[x] + c];
            }
        }
    }
}

/*
 * The median wall time in ms of reps runs of the job's attention on its pool after a warm-up
 * run, the inputs rewritten by the pool's threads before each run when rewrite is set (that
 * time not counted).
 */
static double pool_attention_ms(struct pool_attention *j, bool rewrite, int reps)
{
    const int64_t items = j->ly->n_kv;
    double t[MAX_REPS];
    dllm_threadpool_run(j->pool, items, attention_item, j);
    for (int r = 0; r < reps; r++) {
        if (rewrite) {
            dllm_threadpool_run_each(j->pool, rewrite_item, j);
        }
        const double t0 = clock_s(CLOCK_MONOTONIC);
        dllm_threadpool_run(j->pool, items, attention_item, j);
        t[r] = 1e3 * (clock_s(CLOCK_MONOTONIC) - t0);
    }
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    return t[reps / 2];
}

/*
 * Prints the attention of ops at L rows on pools of 1 and of `threads` threads, with its
 * inputs resident and rewritten (pool_attention_ms); 1 when out of memory.
 */
static int print_pool_attention(const struct dllm_ops *ops, const struct layer *ly, int64_t L,
                                struct buffers *b, int threads, int reps)
{
    const int counts[] = {1, threads};
    double ms[2][2];
    for (int k = 0; k < 2; k++) {
        struct pool_attention j = {.ops = ops, .ly = ly, .L = L, .b = b};
        j.per_thread = dllm_ops_attention_scratch(L, ly->head_dim);
        j.scratch = dllm_alloc_lines((size_t)(counts[k] * j.per_thread) * sizeof(float));
        if (!j.scratch || dllm_threadpool_new(counts[k], &j.pool, NULL) != DLLM_OK) {
            free(j.scratch);
            return 1;
        }
        ms[k][0] = pool_attention_ms(&j, false, reps);
        ms[k][1] = pool_attention_ms(&j, true, reps);
        dllm_threadpool_free(j.pool);
        free(j.scratch);
    }
    printf("%s L=%ld %-6s attention, wall ms: resident %.2f on 1 thread, %.2f on %d (%.2f); "
           "rewritten %.2f on 1, %.2f on %d (%.2f)\n",
           ly->name, (long)L, ops->name, ms[0][0], ms[1][0], threads, ms[1][0] / ms[0][0], ms[0][1],
           ms[1][1], threads, ms[1][1] / ms[0][1]);
    fflush(stdout);
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bench_ops [--rows LIST] [--reps N] [--threads N]\n"
            "  --rows LIST  canvas lengths, comma-separated (default 160,512)\n"
            "  --reps N     timed runs per figure, the median printed (default 3, at most %d)\n"
            "  --threads N  then the fastest variant's attention on 1 and N threads, its\n"
            "               inputs resident and rewritten by the threads (default 1: not run)\n",
            MAX_REPS);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"rows", required_argument, NULL, 'r'},
        {"reps", required_argument, NULL, 'n'},
        {"threads", required_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int64_t rows[MAX_ROWS] = {160, 512};
    int n_rows = 2, reps = 3, threads = 1;
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (c) {
        case 'r':
            n_rows = 0;
            for (char *tok = strtok(optarg, ","); tok != NULL; tok = strtok(NULL, ",")) {
                const long v = strtol(tok, NULL, 10);
                if (v < 1 || n_rows == MAX_ROWS) {
                    usage(stderr);
                    return 2;
                }
                rows[n_rows++] = v;
            }
            break;
        case 'n': reps = atoi(optarg); break;
        case 't': threads = atoi(optarg); break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc || n_rows == 0 || reps < 1 || reps > MAX_REPS || threads < 1 ||
        threads > 1024) {
        usage(stderr);
        return 2;
    }
    size_t n_ops;
    const struct dllm_ops *all = dllm_ops_all(&n_ops);
    for (size_t li = 0; li < sizeof layers / sizeof layers[0]; li++) {
        const struct layer *ly = &layers[li];
        for (int ri = 0; ri < n_rows; ri++) {
            const int64_t L = rows[ri];
            struct buffers b;
            if (buffers_init(&b, ly, L) != 0) {
                fprintf(stderr, "bench_ops: out of memory\n");
                return 1;
            }
            const double flop = 4.0 * (double)(L * L * ly->n_head * ly->head_dim);
            double ref_att = 0.0, ref_elt = 0.0;
            const struct dllm_ops *fastest = &all[0];
            for (size_t oi = 0; oi < n_ops; oi++) {
                if (!dllm_ops_usable(&all[oi])) {
                    printf("%s L=%ld %s: SKIP (this CPU lacks it)\n", ly->name, (long)L,
                           all[oi].name);
                    continue;
                }
                fastest = &all[oi];
                const double att = median_ms(run_attention, &all[oi], ly, L, &b, reps);
                const double elt = median_ms(run_elementwise, &all[oi], ly, L, &b, reps);
                ref_att = oi == 0 ? att : ref_att;
                ref_elt = oi == 0 ? elt : ref_elt;
                printf("%s L=%ld %-6s attention %9.2f ms (%6.1f GFLOP/s, %5.1fx)  elementwise "
                       "%8.2f ms (%5.1fx)\n",
                       ly->name, (long)L, all[oi].name, att, flop / att * 1e-6, ref_att / att, elt,
                       ref_elt / elt);
                fflush(stdout);
            }
            if (threads > 1 && print_pool_attention(fastest, ly, L, &b, threads, reps) != 0) {
                fprintf(stderr, "bench_ops: out of memory\n");
                buffers_free(&b);
                return 1;
            }
            buffers_free(&b);
        }
    }
    return 0;
}
