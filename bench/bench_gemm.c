/*
 * bench_gemm: times each kernel variant on the weight shapes of a LLaDA-8B layer (N x K =
 * 4096 x 4096, 12288 x 4096, 4096 x 12288) at L = 160 and 512 activation rows on 1 and 2
 * threads, and measures the machine's int8 peak with a register-only loop of its widest u8 x s8
 * multiply-add (512-bit VPDPBUSD with AVX512-VNNI, else the VEX VPDPBUSD of AVX-VNNI, else
 * VPMADDUBSW with its pairs added in int16), so that GEMM throughput can be read as a share of
 * it. Prints one JSON document.
 *
 *   bench_gemm [--variants avx2,avx512] [--types Q4_K,Q6_K] [--threads 1,2] [--rows 160,512]
 *              [--shapes 4096x4096,...] [--reps N] [--gguf-layout]
 *
 * Where a variant repacks a weight type (cpu.h), the weights are repacked first, as a forward
 * pass does, unless --gguf-layout asks for the products over the GGUF layout; each result says
 * which it timed ("layout").
 *
 * One timed product is the activation conversion of x[L, K] plus y = x . W^T, both shared
 * between the threads by dllm_kernels_quantize_par and dllm_kernels_rows_par. GOPS counts 2 N K L
 * operations; each figure is the median of --reps runs after one warm-up run. Weights are random
 * but valid blocks.
 */
#include "config.h"

#include "bench_util.h"
#include "dot_chains.h"
#include "kernels/cpu.h"
#include "kernels/matmul.h"
#include "gguf/quant.h"
#include "lines.h"
#include "threadpool.h"

#include <getopt.h>
#include <immintrin.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define MAX_LIST    16
#define MAX_THREADS 64

static double now_s(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

/*
 * Random blocks of a weight type with fp16 scales of about 2^-6 in every scale field, mapped as
 * the CPU backend maps its repacked weights (munmap(w, *bytes) frees them).
 */
static void *random_weights(uint32_t wtype, int64_t N, int64_t K, size_t *bytes_out)
{
    const struct dllm_type_traits *tr = dllm_type_traits(wtype);
    const size_t nblocks = (size_t)(N * K / tr->block_elems), bytes = nblocks * tr->block_bytes;
    *bytes_out = bytes;
    uint8_t *w = dllm_map_huge(bytes);
    if (w == NULL) {
        return NULL;
    }
    uint64_t seed = wtype * 1000003u + (uint64_t)K;
    for (size_t i = 0; i < bytes; i += 8) {
        uint64_t r = rng_next(&seed);
        memcpy(w + i, &r, bytes - i < 8 ? bytes - i : 8);
    }
    const dllm_fp16 scale = dllm_f32_to_fp16(0x1p-6f);
    for (size_t b = 0; b < nblocks; b++) {
        uint8_t *blk = w + b * tr->block_bytes;
        switch (wtype) {
        case DLLM_TYPE_Q4_K:
        case DLLM_TYPE_Q5_K:
        case DLLM_TYPE_Q4_1:
        case DLLM_TYPE_Q5_1:
            memcpy(blk, &scale, 2);
            memcpy(blk + 2, &scale, 2);
            break;
        case DLLM_TYPE_Q6_K: memcpy(blk + offsetof(struct block_q6_K, d), &scale, 2); break;
        case DLLM_TYPE_Q8_0:
        case DLLM_TYPE_Q4_0:
        case DLLM_TYPE_Q5_0: memcpy(blk, &scale, 2); break;
        case DLLM_TYPE_F16: ((dllm_fp16 *)w)[b] = dllm_f32_to_fp16(rng_normal(&seed)); break;
        case DLLM_TYPE_BF16: ((dllm_bf16 *)w)[b] = dllm_f32_to_bf16(rng_normal(&seed)); break;
        case DLLM_TYPE_F32: ((float *)w)[b] = rng_normal(&seed); break;
        default: break;
        }
    }
    return w;
}

/* ---- int8 peak --------------------------------------------------------------------------- */

#define PEAK_ITERS 20000000L

#define R12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

/* Int8 operations (2 per multiply-add) of PEAK_ITERS x 12 independent 512-bit VPDPBUSD. */
static double peak_zmm_loop(void)
{
    dot_chains_zmm(PEAK_ITERS, 12);
    return (double)PEAK_ITERS * 12 * 64 * 2;
}

/*
 * static double peak_<name>_loop(void), compiled for isa: int8 operations (2 per multiply-add)
 * of PEAK_ITERS x 12 independent 256-bit accumulators b0..b11, each updated by STEP(i), an
 * instruction of 32 multiply-adds on b##i and the operands u and s, written (as in
 * dot_chains_zmm) as the instruction in place on its accumulator, so that the compiler adds no
 * register copies.
 */
#define PEAK_LOOP_256(name, isa, STEP)                                                             \
    __attribute__((target(isa))) static double peak_##name##_loop(void)                            \
    {                                                                                              \
        R12(DECL_Y)                                                                                \
        __m256i u = _mm256_set1_epi8(3), s = _mm256_set1_epi8(-5);                                 \
        __asm__ volatile("" : "+v"(u), "+v"(s));                                                   \
        for (long k = 0; k < PEAK_ITERS; k++) {                                                    \
            R12(STEP)                                                                              \
        }                                                                                          \
        int sink = 0;                                                                              \
        R12(SINK_Y)                                                                                \
        __asm__ volatile("" : : "r"(sink));                                                        \
        return (double)PEAK_ITERS * 12 * 32 * 2;                                                   \
    }
#define DECL_Y(i) __m256i b##i = _mm256_set1_epi32(i);
#define SINK_Y(i) sink += _mm256_extract_epi32(b##i, 0);

/* 256-bit VPDPBUSD (EVEX, AVX512-VL). */
#define OP_Y(i) __asm__("vpdpbusd %2, %1, %0" : "+v"(b##i) : "v"(u), "v"(s));
PEAK_LOOP_256(ymm, "avx512f,avx512vl,avx512vnni", OP_Y)

/* The VEX-encoded 256-bit VPDPBUSD of AVX-VNNI. */
#define OP_V(i) __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(b##i) : "x"(u), "x"(s));
PEAK_LOOP_256(vex, "avxvnni", OP_V)

/*
 * Without VNNI: int16 sums of 256-bit VPMADDUBSW results (each 32 u8 x s8 products, added in
 * pairs), the most the AVX2 kernels' multiplies could do. Each product takes its sum as one
 * operand, so that it cannot be hoisted out of the loop.
 */
#define OP_M(i)                                                                                    \
    {                                                                                              \
        __m256i p;                                                                                 \
        __asm__("vpmaddubsw %2, %1, %0" : "=x"(p) : "x"(b##i), "x"(s));                            \
        __asm__("vpaddw %1, %0, %0" : "+x"(b##i) : "x"(p));                                        \
    }
PEAK_LOOP_256(maddubs, "avx2", OP_M)

struct peak_job {
    double (*loop)(void);
    int n;                   /* the pool's threads */
    _Atomic int arrived;     /* threads at the start line */
    double ops[MAX_THREADS]; /* per thread */
    double t0[MAX_THREADS];  /* when each thread's loop began and ended */
    double t1[MAX_THREADS];
};

/*
 * One thread's loop, begun once every thread of the pool has arrived: a worker woken late
 * (on a virtual machine an idle processor may take milliseconds to wake) delays every start
 * instead of running alone after the others, so the loops run at the same time.
 */
static void peak_item(void *ctx, int64_t item, int thread)
{
    (void)thread;
    struct peak_job *job = ctx;
    atomic_fetch_add(&job->arrived, 1);
    while (atomic_load(&job->arrived) < job->n) {
        __builtin_ia32_pause();
    }
    job->t0[item] = now_s();
    job->ops[item] = job->loop();
    job->t1[item] = now_s();
}

/*
 * GOPS of loop run once on each thread of the pool at the same time: all their operations over
 * the time from the first loop's start to the last one's end (the wait for the threads to
 * arrive not counted).
 */
static double peak_gops(struct dllm_threadpool *pool, double (*loop)(void))
{
    struct peak_job job = {.loop = loop, .n = dllm_threadpool_size(pool)};
    dllm_threadpool_run_each(pool, peak_item, &job);
    double ops = 0.0, first = job.t0[0], last = job.t1[0];
    for (int i = 0; i < job.n; i++) {
        ops += job.ops[i];
        first = job.t0[i] < first ? job.t0[i] : first;
        last = job.t1[i] > last ? job.t1[i] : last;
    }
    return ops / (last - first) / 1e9;
}

/* ---- GEMM timing ------------------------------------------------------------------------- */

struct gemm_job {
    const struct dllm_kernels *k;
    uint32_t wtype;
    const void *w;
    bool packed; /* w is repacked for k */
    const float *x;
    void *scratch;
    float *y;
    int64_t N, K, L;
};

/*
 * The median wall seconds of reps timed products (after one warm-up), of their conversions,
 * and of the CPU time the process used per product (which preemption by other processes does
 * not inflate).
 */
static void time_gemm(struct dllm_threadpool *pool, struct gemm_job *j, int reps, double *total,
                      double *conv, double *cpu, double *best)
{
    double t[64], c[64], u[64];
    for (int r = -1; r < reps; r++) {
        const double u0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), t0 = now_s();
        dllm_kernels_quantize_par(j->k, pool, j->wtype, j->x, j->K, j->L, j->scratch);
        const double t1 = now_s();
        if (j->packed) {
            dllm_kernels_rows_packed_par(j->k, pool, j->wtype, j->w, j->K, j->N, j->scratch, j->L,
                                         j->y, j->N);
        } else {
            dllm_kernels_rows_par(j->k, pool, j->wtype, j->w, j->K, j->N, j->scratch, j->L, j->y,
                                  j->N);
        }
        const double t2 = now_s(), u1 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        if (r >= 0) {
            t[r] = t2 - t0;
            c[r] = t1 - t0;
            u[r] = u1 - u0;
        }
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    qsort(c, (size_t)reps, sizeof *c, cmp_double);
    qsort(u, (size_t)reps, sizeof *u, cmp_double);
    *total = t[reps / 2];
    *best = t[0];
    *conv = c[reps / 2];
    *cpu = u[reps / 2];
}

/* ---- options and main -------------------------------------------------------------------- */

static uint32_t type_by_name(const char *name)
{
    for (uint32_t t = 0; t < DLLM_TYPE_COUNT; t++) {
        const struct dllm_type_traits *tr = dllm_type_traits(t);
        if (tr != NULL && tr->name != NULL && strcmp(tr->name, name) == 0 &&
            dllm_matmul_supported(t)) {
            return t;
        }
    }
    return UINT32_MAX;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: bench_gemm [--variants LIST] [--types LIST] [--threads LIST] [--rows LIST]\n"
               "                  [--shapes NxK,...] [--reps N] [--gguf-layout]\n");
}

int main(int argc, char **argv)
{
    char variants_s[256] = "", types_s[256] = "Q4_K,Q6_K,Q5_K,Q8_0", threads_s[64] = "1,2",
         rows_s[64] = "160,512", shapes_s[256] = "4096x4096,12288x4096,4096x12288";
    int reps = 3;
    bool gguf_layout = false;
    static const struct option opts[] = {
        {"variants", required_argument, NULL, 'v'},
        {"types", required_argument, NULL, 't'},
        {"threads", required_argument, NULL, 'j'},
        {"rows", required_argument, NULL, 'l'},
        {"shapes", required_argument, NULL, 's'},
        {"reps", required_argument, NULL, 'r'},
        {"gguf-layout", no_argument, NULL, 'g'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (c) {
        case 'v': snprintf(variants_s, sizeof variants_s, "%s", optarg); break;
        case 't': snprintf(types_s, sizeof types_s, "%s", optarg); break;
        case 'j': snprintf(threads_s, sizeof threads_s, "%s", optarg); break;
        case 'l': snprintf(rows_s, sizeof rows_s, "%s", optarg); break;
        case 's': snprintf(shapes_s, sizeof shapes_s, "%s", optarg); break;
        case 'r': reps = atoi(optarg); break;
        case 'g': gguf_layout = true; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (reps < 1 || reps > 64 || optind != argc) {
        usage(stderr);
        return 2;
    }
    char *variants[MAX_LIST], *types[MAX_LIST], *threads[MAX_LIST], *rows[MAX_LIST],
        *shapes[MAX_LIST];
    int n_variants = split_list(variants_s, variants, MAX_LIST),
        n_types = split_list(types_s, types, MAX_LIST),
        n_threads = split_list(threads_s, threads, MAX_LIST),
        n_rows = split_list(rows_s, rows, MAX_LIST),
        n_shapes = split_list(shapes_s, shapes, MAX_LIST);
    if (n_variants == 0) {
        size_t n;
        const struct dllm_kernels *all = dllm_kernels_all(&n);
        for (size_t i = 1; i < n; i++) {
            if (dllm_kernels_usable(&all[i])) {
                variants[n_variants++] = (char *)all[i].name;
            }
        }
    }

    char cpu_model[128];
    read_line("/proc/cpuinfo", "model name\t: ", cpu_model, sizeof cpu_model);
    const bool has_vnni512 =
        (dllm_cpu_features() & (DLLM_CPU_AVX512F | DLLM_CPU_AVX512VL | DLLM_CPU_AVX512VNNI)) ==
        (DLLM_CPU_AVX512F | DLLM_CPU_AVX512VL | DLLM_CPU_AVX512VNNI);
    const bool has_avxvnni = dllm_cpu_features() & DLLM_CPU_AVXVNNI;
    printf("{\n  \"what\": \"y = x . W^T with activation conversion, LLaDA-8B layer shapes\",\n");
    printf("  \"cpu\": \"%s\",\n  \"cpu_features\": \"0x%x\",\n", cpu_model, dllm_cpu_features());
    printf("  \"method\": \"median of %d after 1 warm-up; gops = 2 N K L / time\",\n", reps);

    /* the peaks, per thread count; int8_peak is the one of the widest instruction there is */
    double peak[MAX_LIST] = {0};
    printf("  \"int8_peak_gops\": [");
    for (int i = 0; i < n_threads; i++) {
        struct dllm_threadpool *pool = NULL;
        if (atoi(threads[i]) > MAX_THREADS ||
            dllm_threadpool_new(atoi(threads[i]), &pool, NULL) != DLLM_OK) {
            fprintf(stderr, "bench_gemm: bad thread count %s\n", threads[i]);
            return 2;
        }
        double zmm = 0.0, ymm = 0.0, vex = 0.0;
        if (has_vnni512) {
            zmm = peak_gops(pool, peak_zmm_loop);
            ymm = peak_gops(pool, peak_ymm_loop);
        }
        if (has_avxvnni) {
            vex = peak_gops(pool, peak_vex_loop);
        }
        const double maddubs = peak_gops(pool, peak_maddubs_loop);
        peak[i] = has_vnni512 ? zmm : has_avxvnni ? vex : maddubs;
        printf("%s\n    {\"threads\": %s, \"zmm_vpdpbusd\": %.1f, \"ymm_vpdpbusd\": %.1f, "
               "\"vex_vpdpbusd\": %.1f, \"ymm_vpmaddubsw\": %.1f, \"int8_peak\": %.1f}",
               i ? "," : "", threads[i], zmm, ymm, vex, maddubs, peak[i]);
        dllm_threadpool_free(pool);
    }
    printf("\n  ],\n  \"results\": [");

    int first = 1;
    for (int si = 0; si < n_shapes; si++) {
        long long N = 0, K = 0;
        if (sscanf(shapes[si], "%lldx%lld", &N, &K) != 2 || N <= 0 || K <= 0 || K % 256 != 0) {
            fprintf(stderr, "bench_gemm: bad shape %s (NxK, K a multiple of 256)\n", shapes[si]);
            return 2;
        }
        for (int ti = 0; ti < n_types; ti++) {
            const uint32_t wtype = type_by_name(types[ti]);
            if (wtype == UINT32_MAX) {
                fprintf(stderr, "bench_gemm: no kernel for type %s\n", types[ti]);
                return 2;
            }
            size_t wbytes;
            void *w = random_weights(wtype, N, K, &wbytes);
            int64_t Lmax = 0;
            for (int li = 0; li < n_rows; li++) {
                Lmax = atoll(rows[li]) > Lmax ? atoll(rows[li]) : Lmax;
            }
            /* on the pages the CPU backend's activation arena has */
            const size_t xbytes = (size_t)(Lmax * K) * sizeof(float),
                         sbytes = dllm_matmul_scratch_bytes(wtype, K, Lmax),
                         ybytes = (size_t)(Lmax * N) * sizeof(float);
            float *x = dllm_map_huge(xbytes);
            void *scratch = dllm_map_huge(sbytes);
            float *y = dllm_map_huge(ybytes);
            if (w == NULL || x == NULL || scratch == NULL || y == NULL) {
                fprintf(stderr, "bench_gemm: out of memory\n");
                return 1;
            }
            uint64_t seed = 42;
            for (int64_t i = 0; i < Lmax * K; i++) {
                x[i] = rng_normal(&seed);
            }
            for (int vi = 0; vi < n_variants; vi++) {
                const struct dllm_kernels *k = NULL;
                struct dllm_error err;
                if (dllm_kernels_select(variants[vi], &k, &err) != DLLM_OK) {
                    fprintf(stderr, "bench_gemm: %s\n", err.text);
                    return 2;
                }
                const size_t pbytes =
                    k->repacked_bytes == NULL || gguf_layout ? 0 : k->repacked_bytes(wtype, K, N);
                void *packed = pbytes > 0 ? dllm_map_huge(pbytes) : NULL;
                if (pbytes > 0 && packed == NULL) {
                    fprintf(stderr, "bench_gemm: out of memory\n");
                    return 1;
                }
                for (int hi = 0; hi < n_threads; hi++) {
                    struct dllm_threadpool *pool = NULL;
                    dllm_threadpool_new(atoi(threads[hi]), &pool, NULL);
                    if (packed != NULL && hi == 0) {
                        dllm_kernels_repack_par(k, pool, wtype, w, K, N, packed, NULL);
                    }
                    for (int li = 0; li < n_rows; li++) {
                        struct gemm_job job = {.k = k,
                                               .wtype = wtype,
                                               .w = packed != NULL ? packed : w,
                                               .packed = packed != NULL,
                                               .x = x,
                                               .scratch = scratch,
                                               .y = y,
                                               .N = N,
                                               .K = K,
                                               .L = atoll(rows[li])};
                        double total, conv, cpu, best;
                        time_gemm(pool, &job, reps, &total, &conv, &cpu, &best);
                        const double ops = 2.0 * (double)N * (double)K * (double)job.L;
                        const double gops = ops / total / 1e9;
                        printf(
                            "%s\n    {\"variant\": \"%s\", \"layout\": \"%s\", \"type\": \"%s\", "
                            "\"N\": %lld, "
                            "\"K\": %lld, \"L\": %lld, \"threads\": %s, \"ms\": %.3f, "
                            "\"convert_ms\": %.3f, \"cpu_ms\": %.3f, \"gops\": %.1f, "
                            "\"pct_int8_peak\": %.1f, \"gops_per_cpu_s\": %.1f, \"best_gops\": "
                            "%.1f}",
                            first ? "" : ",", k->name, packed != NULL ? "repacked" : "gguf",
                            types[ti], N, K, (long long)job.L, threads[hi], total * 1e3, conv * 1e3,
                            cpu * 1e3, gops, peak[hi] > 0 ? 100.0 * gops / peak[hi] : 0.0,
                            ops / cpu / 1e9, ops / best / 1e9);
                        fflush(stdout);
                        first = 0;
                    }
                    dllm_threadpool_free(pool);
                }
                if (packed != NULL) {
                    munmap(packed, pbytes);
                }
            }
            munmap(y, ybytes);
            munmap(scratch, sbytes);
            munmap(x, xbytes);
            munmap(w, wbytes);
        }
    }
    printf("\n  ]\n}\n");
    return 0;
}
