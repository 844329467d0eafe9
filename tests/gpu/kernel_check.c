/*
 * kernel_check: every launcher of cuda/kernels.h against the CPU reference on random data of
 * the real model shapes (LLaDA-8B: d_model 4096, 32 heads of 128, ffn 12288, vocab 126464;
 * Dream-7B: 3584, 28 / 4 heads of 128, ffn 18944, vocab 152064; canvases of 160 and 512
 * tokens), each within a named tolerance printed beside the measured error, and the time of
 * each dequantization and attention (median of 5, GB/s moved). Results go as JSON to the path
 * given; exit 1 on any failure, or when there is no GPU. tests/gpu/run.sh runs it
 * on a GPU. --small takes small shapes of the same kinds instead: make check runs it so on
 * the host, the kernels built with tests/cuda-emu's stand-in runtime (tests/kernel_check_emu).
 *
 *   usage: kernel_check [--small] RESULTS.json
 *
 * Built when configure finds CUDA; by hand, from a configured build folder `build`:
 *   for f in cuda/kernels-*.cu; do nvcc -std=c++17 -O2 -arch=sm_90 -Icuda -Iengine \
 *       -c $f -o build/$(basename $f .cu).o; done
 *   cc -std=c11 -O2 -ffp-contract=off -Ibuild -Iengine -Itests -I/usr/local/cuda/include \
 *       tests/gpu/kernel_check.c tests/random_data.c build/kernels-*.o \
 *       build/engine/.libs/libdllm-engine.a -L/usr/local/cuda/lib64 -lcublas -lcudart -lcheck \
 *       -lpcre2-8 -lstdc++ -lm -lpthread -o build/kernel_check
 */
#include "config.h"

#include "../../cuda/attention.h"
#include "../../cuda/dequant.h"
#include "../../cuda/kernels.h"
#include "../../cuda/rowstats.h"
#include "gguf/quant.h"
#include "kernels/ops.h"
#include "random_data.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One model shape. */
struct shape {
    const char *name;
    int64_t d_model, n_head, n_head_kv, head_dim, ffn, vocab;
    float rope_base;
    bool neox;
};

static const struct shape real_shapes[] = {
    {"llada-8b", 4096, 32, 32, 128, 12288, 126464, 500000.0f, false},
    {"dream-7b", 3584, 28, 4, 128, 18944, 152064, 1000000.0f, true},
};
static const int64_t real_canvases[] = {160, 512};

/*
 * --small: shapes of the same kinds (heads equal or grouped, both RoPE layouts; and a head wider
 * than 128, whose attention output a thread owns two dimensions of) for emulation,
 * on canvases of one partial attention tile, of one whole and a partial query block, and of
 * several tiles of keys.
 */
static const struct shape small_shapes[] = {
    {"small-llada", 256, 4, 4, 64, 512, 1000, 10000.0f, false},
    {"small-dream", 256, 4, 2, 64, 768, 1200, 10000.0f, true},
    {"small-wide", 512, 2, 1, 160, 768, 900, 10000.0f, false}, /* head_dim over 128 */
};
static const int64_t small_canvases[] = {8, 19, 70};

/* The shapes and canvases of this run, and the embedding rows get_rows fetches. */
static const struct shape *shapes = real_shapes;
static size_t n_shapes = 2;
static const int64_t *canvases = real_canvases;
static size_t n_canvases = 2;
static int64_t n_ids = 160;

/* The cuBLAS handle of the attention's products, on the legacy stream as the launches. */
static cublasHandle_t blas;

/* The run's results: the JSON file and whether every check passed. */
struct run {
    FILE *json;
    int n_checks;
    bool failed;
};

/* Exits 1 with one line naming the CUDA call that failed. */
static void cuda_or_die(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "kernel_check: error: %s: %s\n", what, cudaGetErrorString(e));
        exit(1);
    }
}

static void *dev_alloc(size_t bytes)
{
    void *p = NULL;
    cuda_or_die(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc");
    return p;
}

static void *dev_copy(const void *host, size_t bytes)
{
    void *p = dev_alloc(bytes);
    cuda_or_die(cudaMemcpy(p, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to the device");
    return p;
}

static void *host_alloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "kernel_check: error: out of host memory (%zu bytes)\n", bytes);
        exit(1);
    }
    return p;
}

/* Copies n bytes back after the launch's status and the stream's completion are checked. */
static void fetch(void *host, const void *dev, size_t bytes, cudaError_t launch, const char *what)
{
    cuda_or_die(launch, what);
    cuda_or_die(cudaDeviceSynchronize(), what);
    cuda_or_die(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to the host");
}

/*
 * Timings of some launches on the shapes checked, for the results beside the checks: what ran,
 * the median milliseconds, and the device memory it read and wrote per millisecond (GB/s).
 */
static struct {
    char what[128];
    double ms, gbs;
} timings[64];
static int n_timings;

/*
 * The median of 5 timed runs of launch(ctx) after an untimed one, by events on the legacy
 * stream, recorded under what with bytes moved; exits 1 when a run or an event fails.
 */
static void time_launch(const char *what, double bytes, cudaError_t (*launch)(void *ctx), void *ctx)
{
    cudaEvent_t ev[2];
    cuda_or_die(cudaEventCreate(&ev[0]), "cudaEventCreate");
    cuda_or_die(cudaEventCreate(&ev[1]), "cudaEventCreate");
    float ms[5];
    cuda_or_die(launch(ctx), what);
    for (int r = 0; r < 5; r++) {
        cuda_or_die(cudaEventRecord(ev[0], 0), "cudaEventRecord");
        cuda_or_die(launch(ctx), what);
        cuda_or_die(cudaEventRecord(ev[1], 0), "cudaEventRecord");
        cuda_or_die(cudaDeviceSynchronize(), what);
        cuda_or_die(cudaEventElapsedTime(&ms[r], ev[0], ev[1]), "cudaEventElapsedTime");
    }
    for (int i = 1; i < 5; i++) /* insertion sort of five */
        for (int j = i; j > 0 && ms[j] < ms[j - 1]; j--) {
            const float t = ms[j];
            ms[j] = ms[j - 1];
            ms[j - 1] = t;
        }
    cudaEventDestroy(ev[0]);
    cudaEventDestroy(ev[1]);
    if (n_timings == (int)(sizeof timings / sizeof timings[0]))
        return;
    snprintf(timings[n_timings].what, sizeof timings[n_timings].what, "%s", what);
    timings[n_timings].ms = ms[2];
    timings[n_timings].gbs = ms[2] > 0 ? bytes / (ms[2] * 1e6) : 0;
    printf("time %-62s %9.3f ms %8.1f GB/s\n", what, timings[n_timings].ms, timings[n_timings].gbs);
    n_timings++;
}

/* Records one check: its measured error against its tolerance (pass when err <= tol). */
static void report(struct run *run, const char *name, const char *shape, const char *tol_name,
                   double err, double tol)
{
    bool pass = err <= tol; /* a NaN error fails */
    printf("%-4s %-22s %-44s error %.3g <= %.3g (%s)\n", pass ? "ok" : "FAIL", name, shape, err,
           tol, tol_name);
    fprintf(run->json,
            "%s\n  {\"kernel\": \"%s\", \"shape\": \"%s\", \"tolerance\": \"%s\", "
            "\"tolerance_value\": %.6g, \"error\": %.6g, \"pass\": %s}",
            run->n_checks++ ? "," : "", name, shape, tol_name, tol, err, pass ? "true" : "false");
    run->failed |= !pass;
}

static float *random_floats(int64_t n, double sigma, uint64_t *seed)
{
    float *x = host_alloc((size_t)n * sizeof *x);
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)(sigma * rng_gauss(seed));
    return x;
}

/* The number of elements whose bits differ. */
static double bits_differ(const void *a, const void *b, int64_t n, size_t elem)
{
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++)
        k += memcmp((const char *)a + i * elem, (const char *)b + i * elem, elem) != 0;
    return (double)k;
}

/* ---- dequantization ------------------------------------------------------------------- */

static const uint32_t types[] = {
    DLLM_TYPE_F32,  DLLM_TYPE_F16,  DLLM_TYPE_BF16, DLLM_TYPE_Q4_0, DLLM_TYPE_Q4_1,
    DLLM_TYPE_Q5_0, DLLM_TYPE_Q5_1, DLLM_TYPE_Q8_0, DLLM_TYPE_Q2_K, DLLM_TYPE_Q3_K,
    DLLM_TYPE_Q4_K, DLLM_TYPE_Q5_K, DLLM_TYPE_Q6_K,
};

/* The CPU decoder over a whole buffer of rows. */
static void cpu_decode(uint32_t type, const void *w, int64_t first, int64_t n, float *out)
{
    struct dllm_gguf_tensor t = {.name = "random", .type = type, .n_dims = 1};
    t.ne[0] = first + n;
    t.ne[1] = t.ne[2] = t.ne[3] = 1;
    t.data = w;
    t.size = (size_t)((first + n) / dllm_type_block_elems(type)) * dllm_type_block_bytes(type);
    struct dllm_error err = {0};
    if (dllm_gguf_tensor_decode(&t, first, n, out, &err) != DLLM_OK) {
        fprintf(stderr, "kernel_check: error: CPU decoder: %s\n", err.text);
        exit(1);
    }
}

/* A random [N, K] matrix of type: its GGUF blocks on the host and the device, decoded by the CPU.
 */
struct matrix {
    void *w, *dw;
    float *ref;
};

static struct matrix random_matrix(uint32_t type, int64_t N, int64_t K, uint64_t *seed)
{
    struct matrix m = {random_weights(type, N, K, RANDOM_SCALES_SIGNED, seed), NULL,
                       host_alloc((size_t)(N * K) * sizeof(float))};
    m.dw =
        dev_copy(m.w, (size_t)(N * K / dllm_type_block_elems(type)) * dllm_type_block_bytes(type));
    cpu_decode(type, m.w, 0, N * K, m.ref);
    return m;
}

static void matrix_free(struct matrix *m)
{
    cudaFree(m->dw);
    free(m->ref);
    free(m->w);
}

/* A dequantization to time: dllm_cuda_dequant_f16's arguments. */
struct dequant_args {
    uint32_t type;
    const void *blocks;
    int64_t N, K;
    uint16_t *dst;
};

static cudaError_t run_dequant(void *ctx)
{
    const struct dequant_args *a = ctx;
    return dllm_cuda_dequant_f16(a->type, a->blocks, a->N, a->K, a->dst, 0);
}

/*
 * The elements of dllm_cuda_dequant_f16 of m whose bits differ from the CPU decoder's floats
 * rounded by dllm_f32_to_fp16, the result written offset halves into its buffer (1: unaligned);
 * the launch timed as time_as unless NULL.
 */
static double dequant_differ(uint32_t type, const struct matrix *m, int64_t N, int64_t K,
                             int64_t offset, const char *time_as)
{
    const int64_t n = N * K;
    uint16_t *dh = dev_alloc((size_t)(n + offset) * 2);
    uint16_t *want = host_alloc((size_t)n * 2), *got = host_alloc((size_t)n * 2);
    for (int64_t i = 0; i < n; i++)
        want[i] = dllm_f32_to_fp16(m->ref[i]);
    fetch(got, dh + offset, (size_t)n * 2, dllm_cuda_dequant_f16(type, m->dw, N, K, dh + offset, 0),
          "dllm_cuda_dequant_f16");
    const double differ = bits_differ(got, want, n, 2);
    if (time_as) {
        struct dequant_args a = {type, m->dw, N, K, dh};
        char what[128];
        snprintf(what, sizeof what, "dequant_f16 %s", time_as);
        const double block_bytes = (double)dllm_type_traits(type)->block_bytes,
                     block_elems = (double)dllm_type_traits(type)->block_elems;
        time_launch(what, (double)n * (block_bytes / block_elems + 2), run_dequant, &a);
    }
    cudaFree(dh);
    free(got);
    free(want);
    return differ;
}

/*
 * dequant_f16's element-at-a-time kernel, which rows of no whole number of 32 elements (an
 * F16 [7, 33]) and a destination not 16-byte aligned (a Q4_K [64, 512]) take: the CPU
 * decoder's bits, as the 32-at-a-time kernel of the real shapes.
 */
static void check_dequant_elementwise(struct run *run, uint64_t *seed)
{
    static const struct {
        uint32_t type;
        int64_t N, K, offset; /* dst's offset in halves */
    } cases[] = {{DLLM_TYPE_F16, 7, 33, 0}, {DLLM_TYPE_Q4_K, 64, 512, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const uint32_t type = cases[c].type;
        const int64_t N = cases[c].N, K = cases[c].K;
        struct matrix m = random_matrix(type, N, K, seed);
        char label[96];
        snprintf(label, sizeof label, "%s [%" PRId64 ", %" PRId64 "]%s", dllm_type_name(type), N, K,
                 cases[c].offset ? ", unaligned" : "");
        report(run, "dequant_f16 element-wise", label, "elements whose bits differ",
               dequant_differ(type, &m, N, K, cases[c].offset, NULL), 0);
        matrix_free(&m);
    }
}

/*
 * dequant_f16 of an [N, K] matrix: the same binary16 bits as the CPU decoder's floats rounded
 * by dllm_f32_to_fp16 (tolerance: 0 elements differ); get_rows of n_ids rows of a [vocab, d]
 * embedding: the CPU decoder's float bits.
 */
static void check_dequant(struct run *run, uint64_t *seed)
{
    for (size_t s = 0; s < n_shapes; s++) {
        const struct shape *sh = &shapes[s];
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
            const uint32_t type = types[ti];
            const bool big = type == DLLM_TYPE_Q4_K || type == DLLM_TYPE_Q6_K;
            const int64_t N = big ? sh->ffn : sh->d_model, K = sh->d_model;
            char label[96];
            snprintf(label, sizeof label, "%s %s [%" PRId64 ", %" PRId64 "]", sh->name,
                     dllm_type_name(type), N, K);
            struct matrix m = random_matrix(type, N, K, seed);
            report(run, "dequant_f16", label, "elements whose bits differ",
                   dequant_differ(type, &m, N, K, 0, label), 0);

            /* get_rows over the first N rows as a table, n_ids ids */
            int32_t ids[160];
            for (int64_t i = 0; i < n_ids; i++)
                ids[i] = (int32_t)(rng_next(seed) % (uint64_t)N);
            int32_t *dids = dev_copy(ids, sizeof ids);
            float *dout = dev_alloc((size_t)(n_ids * K) * sizeof(float));
            float *rows = host_alloc((size_t)(n_ids * K) * sizeof *rows);
            fetch(rows, dout, (size_t)(n_ids * K) * sizeof(float),
                  dllm_cuda_get_rows(type, m.dw, K, dids, n_ids, dout, 0), "dllm_cuda_get_rows");
            double differ = 0;
            for (int64_t i = 0; i < n_ids; i++)
                differ += bits_differ(rows + i * K, m.ref + (int64_t)ids[i] * K, K, sizeof(float));
            snprintf(label, sizeof label, "%s %s %" PRId64 " rows of %" PRId64, sh->name,
                     dllm_type_name(type), n_ids, K);
            report(run, "get_rows", label, "elements whose bits differ", differ, 0);
            cudaFree(dids);
            cudaFree(dout);
            free(rows);
            matrix_free(&m);
        }
    }
    check_dequant_elementwise(run, seed);
}

/*
 * f32_to_f16 of a [canvas, ffn] activation (the largest of each): dllm_f32_to_fp16's bits (0
 * elements differ), and f32_to_f16_sat's dllm_hd_f32_to_fp16_sat's.
 */
static void check_f32_to_f16(struct run *run, uint64_t *seed)
{
    const int64_t rows = canvases[n_canvases - 1], cols = shapes[n_shapes - 1].ffn, n = rows * cols;
    char label[64];
    snprintf(label, sizeof label, "[%" PRId64 ", %" PRId64 "]", rows, cols);
    float *x = random_floats(n, 4.0, seed);
    for (int64_t i = 0; i < n; i += 97) /* overflow, subnormal halves, zero */
        x[i] = i % 3 == 0 ? 70000.0f : i % 3 == 1 ? 3e-6f : -0.0f;
    uint16_t *want = host_alloc((size_t)n * 2), *got = host_alloc((size_t)n * 2);
    for (int64_t i = 0; i < n; i++)
        want[i] = dllm_f32_to_fp16(x[i]);
    float *dx = dev_copy(x, (size_t)n * sizeof *x);
    uint16_t *dy = dev_alloc((size_t)n * 2);
    fetch(got, dy, (size_t)n * 2, dllm_cuda_f32_to_f16(dx, n, dy, 0), "dllm_cuda_f32_to_f16");
    report(run, "f32_to_f16", label, "elements whose bits differ", bits_differ(got, want, n, 2), 0);
    for (int64_t i = 0; i < n; i++)
        want[i] = dllm_hd_f32_to_fp16_sat(x[i]);
    fetch(got, dy, (size_t)n * 2, dllm_cuda_f32_to_f16_sat(dx, n, dy, 0),
          "dllm_cuda_f32_to_f16_sat");
    report(run, "f32_to_f16_sat", label, "elements whose bits differ", bits_differ(got, want, n, 2),
           0);
    cudaFree(dx);
    cudaFree(dy);
    free(x);
    free(want);
    free(got);
}

/* ---- element-wise ops ----------------------------------------------------------------- */

/* max_i |a_i - b_i| / max(|b_i|, FLT_MIN): the largest relative difference. */
static double max_rel(const float *a, const float *b, int64_t n)
{
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]) / fmax(fabs(b[i]), FLT_MIN);
        m = d > m || isnan(d) ? d : m;
    }
    return m;
}

/* max_i |a_i - b_i| / max_i |b_i|: the largest difference relative to the largest value. */
static double max_abs_rel(const float *a, const float *b, int64_t n)
{
    double m = 0, scale = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        m = d > m || isnan(d) ? d : m;
        scale = fmax(scale, fabs(b[i]));
    }
    return m / fmax(scale, FLT_MIN);
}

/*
 * RMSNorm of [L, d_model] rows and of QK-norm heads ([L * n_head, head_dim]): the mean of
 * squares may differ in its last bit (another order of the double sum), which moves s by an
 * ulp, so each y within 4 FLT_EPSILON relative of dllm_rms_norm_ref's.
 */
static void check_rms_norm(struct run *run, const struct shape *sh, int64_t L, uint64_t *seed)
{
    for (int qk = 0; qk < 2; qk++) {
        const int64_t n = qk ? sh->head_dim : sh->d_model, rows = qk ? L * sh->n_head : L;
        float *x = random_floats(rows * n, 2.0, seed), *g = random_floats(n, 1.0, seed);
        float *want = host_alloc((size_t)(rows * n) * sizeof *want);
        float *got = host_alloc((size_t)(rows * n) * sizeof *got);
        for (int64_t r = 0; r < rows; r++)
            dllm_rms_norm_ref(x + r * n, g, 1e-5f, n, want + r * n);
        float *dx = dev_copy(x, (size_t)(rows * n) * sizeof *x), *dg = dev_copy(g, (size_t)n * 4);
        fetch(got, dx, (size_t)(rows * n) * sizeof *got,
              dllm_cuda_rms_norm(dx, dg, rows, n, 1e-5f, dx, 0), "dllm_cuda_rms_norm");
        char label[96];
        snprintf(label, sizeof label, "%s [%" PRId64 ", %" PRId64 "]%s", sh->name, rows, n,
                 qk ? " qk-norm" : "");
        report(run, "rms_norm", label, "4 FLT_EPSILON relative", max_rel(got, want, rows * n),
               4 * FLT_EPSILON);
        cudaFree(dx);
        cudaFree(dg);
        free(x);
        free(g);
        free(want);
        free(got);
    }
}

/*
 * The residual sum and the next norm of [L, d_model] rows in one launch, its norm written over
 * its src as the pass does: X bit for bit dllm_add_ref's, the norm within rms_norm's tolerance
 * of dllm_rms_norm_ref's on that sum.
 */
static void check_add_rms_norm(struct run *run, const struct shape *sh, int64_t L, uint64_t *seed)
{
    const int64_t n = sh->d_model, m = L * n;
    float *x = random_floats(m, 2.0, seed), *src = random_floats(m, 2.0, seed);
    float *g = random_floats(n, 1.0, seed);
    float *want = host_alloc((size_t)m * 4), *got = host_alloc((size_t)m * 4);
    float *want_x = host_alloc((size_t)m * 4), *got_x = host_alloc((size_t)m * 4);
    memcpy(want_x, x, (size_t)m * 4);
    dllm_add_ref(want_x, src, m);
    for (int64_t r = 0; r < L; r++)
        dllm_rms_norm_ref(want_x + r * n, g, 1e-5f, n, want + r * n);
    float *dx = dev_copy(x, (size_t)m * 4), *ds = dev_copy(src, (size_t)m * 4);
    float *dg = dev_copy(g, (size_t)n * 4);
    fetch(got, ds, (size_t)m * 4, dllm_cuda_add_rms_norm(dx, ds, dg, L, n, 1e-5f, ds, 0),
          "dllm_cuda_add_rms_norm");
    cuda_or_die(cudaMemcpy(got_x, dx, (size_t)m * 4, cudaMemcpyDeviceToHost),
                "cudaMemcpy to the host");
    char label[96];
    snprintf(label, sizeof label, "%s [%" PRId64 ", %" PRId64 "] sum", sh->name, L, n);
    report(run, "add_rms_norm", label, "elements whose bits differ",
           bits_differ(got_x, want_x, m, 4), 0);
    snprintf(label, sizeof label, "%s [%" PRId64 ", %" PRId64 "] norm", sh->name, L, n);
    report(run, "add_rms_norm", label, "4 FLT_EPSILON relative", max_rel(got, want, m),
           4 * FLT_EPSILON);
    cudaFree(dx);
    cudaFree(ds);
    cudaFree(dg);
    free(x);
    free(src);
    free(g);
    free(want);
    free(got);
    free(want_x);
    free(got_x);
}

/*
 * RoPE of Q [L, n_head * head_dim] at shuffled positions 0..L-1: theta has the reference's
 * bits, cos and sin may differ from libm's cosf and sinf in the last bit, so each element
 * within 4 FLT_EPSILON of the largest |x| of the data.
 */
static void check_rope(struct run *run, const struct shape *sh, int64_t L, uint64_t *seed)
{
    const int64_t w = sh->n_head * sh->head_dim, half = sh->head_dim / 2;
    float *x = random_floats(L * w, 1.0, seed);
    float *want = host_alloc((size_t)(L * w) * sizeof *want);
    float *got = host_alloc((size_t)(L * w) * sizeof *got);
    float *cs = host_alloc((size_t)(L * half) * sizeof *cs);
    float *sn = host_alloc((size_t)(L * half) * sizeof *sn);
    int32_t *pos = host_alloc((size_t)L * sizeof *pos);
    for (int64_t i = 0; i < L; i++)
        pos[i] = (int32_t)i;
    for (int64_t i = L - 1; i > 0; i--) {
        int64_t j = (int64_t)(rng_next(seed) % (uint64_t)(i + 1));
        int32_t t = pos[i];
        pos[i] = pos[j];
        pos[j] = t;
    }
    dllm_rope_table(sh->rope_base, sh->head_dim, L, cs, sn);
    memcpy(want, x, (size_t)(L * w) * sizeof *want);
    for (int64_t r = 0; r < L; r++)
        dllm_rope_ref(want + r * w, sh->n_head, sh->head_dim, sh->head_dim,
                      sh->neox ? DLLM_ROPE_NEOX : DLLM_ROPE_NORMAL, cs + pos[r] * half,
                      sn + pos[r] * half);
    float *dx = dev_copy(x, (size_t)(L * w) * sizeof *x);
    int32_t *dpos = dev_copy(pos, (size_t)L * sizeof *pos);
    fetch(got, dx, (size_t)(L * w) * sizeof *got,
          dllm_cuda_rope(dx, L, sh->n_head, sh->head_dim, sh->head_dim, dpos, sh->rope_base,
                         sh->neox, 0),
          "dllm_cuda_rope");
    char label[96];
    snprintf(label, sizeof label, "%s [%" PRId64 ", %" PRId64 "] %s", sh->name, L, w,
             sh->neox ? "neox" : "normal");
    report(run, "rope", label, "4 FLT_EPSILON of max |x|", max_abs_rel(got, want, L * w),
           4 * FLT_EPSILON);
    cudaFree(dx);
    cudaFree(dpos);
    free(x);
    free(want);
    free(got);
    free(cs);
    free(sn);
    free(pos);
}

/* An attention to time: dllm_cuda_attention's arguments. */
struct attention_args {
    const struct dllm_cuda_attention_ws *ws;
    const struct dllm_cuda_heads *heads;
    const float *q, *k, *v;
    float *out;
    int64_t n_q, n_keys;
    float scale;
};

static cudaError_t run_attention(void *ctx)
{
    const struct attention_args *a = ctx;
    struct dllm_error err = {0};
    if (dllm_cuda_attention(blas, 0, a->ws, a->heads, a->q, a->k, a->v, a->out, a->n_q, a->n_keys,
                            a->scale, &err)) {
        fprintf(stderr, "kernel_check: error: dllm_cuda_attention: %s\n", err.text);
        exit(1);
    }
    return cudaSuccess;
}

/*
 * Attention over the whole canvas, and for the queries of a window (rows L/3 to L, as a cached
 * pass asks) over every key; the whole canvas again with a workspace of 7 query rows, so that
 * it goes in chunks (a partial one last). Scores and weighted sums in another order, e^x by
 * the device's expf (2 ulp); each output within 1e-5 of the largest |v| (a weighted mean of v
 * rows, weights summing to 1, each weight off by a few ulp).
 */
static void check_attention(struct run *run, const struct shape *sh, int64_t L, uint64_t *seed)
{
    const int64_t wq = sh->n_head * sh->head_dim, wkv = sh->n_head_kv * sh->head_dim;
    float *q = random_floats(L * wq, 1.0, seed), *k = random_floats(L * wkv, 1.0, seed);
    float *v = random_floats(L * wkv, 1.0, seed);
    float *want = host_alloc((size_t)(L * wq) * sizeof *want);
    float *got = host_alloc((size_t)(L * wq) * sizeof *got);
    float *scores = host_alloc((size_t)L * sizeof *scores);
    const float scale = 1.0f / sqrtf((float)sh->head_dim);
    dllm_attention_ref(q, k, v, L, sh->n_head, sh->n_head_kv, sh->head_dim, scale, 0, L, 0,
                       sh->n_head_kv, scores, want);
    float *dq = dev_copy(q, (size_t)(L * wq) * 4), *dk = dev_copy(k, (size_t)(L * wkv) * 4);
    float *dv = dev_copy(v, (size_t)(L * wkv) * 4), *dout = dev_alloc((size_t)(L * wq) * 4);
    const struct dllm_cuda_heads heads = {sh->n_head, sh->n_head_kv, sh->head_dim};
    struct dllm_cuda_attention_ws ws = {.score_floats =
                                            dllm_cuda_attention_score_floats(sh->n_head, L, L)};
    ws.scores = dev_alloc((size_t)ws.score_floats * sizeof(float));
    ws.ptrs = dev_alloc((size_t)(DLLM_ATT_PTRS * sh->n_head) * sizeof(void *));
    double vmax = 0;
    for (int64_t i = 0; i < L * wkv; i++)
        vmax = fmax(vmax, fabs(v[i]));
    for (int run_i = 0; run_i < 3; run_i++) {
        const int64_t i0 = run_i == 1 ? L / 3 : 0;
        const int64_t floats = run_i == 2 ? sh->n_head * L * 7 : ws.score_floats;
        if (floats > ws.score_floats)
            continue; /* a canvas of at most 7 rows: the first run went in one chunk already */
        const struct dllm_cuda_attention_ws w = {ws.scores, floats, ws.ptrs};
        const size_t off = (size_t)(i0 * wq), bytes = (size_t)((L - i0) * wq) * 4;
        memset(got, 0xff, (size_t)(L * wq) * 4); /* NaN wherever a run leaves a row unwritten */
        cuda_or_die(cudaMemcpy(dout, got, (size_t)(L * wq) * 4, cudaMemcpyHostToDevice),
                    "cudaMemcpy to the device");
        struct attention_args a = {&w, &heads, dq + off, dk, dv, dout + off, L - i0, L, scale};
        fetch(got + off, dout + off, bytes, run_attention(&a), "dllm_cuda_attention");
        double err_max = 0;
        for (int64_t i = (int64_t)off; i < L * wq; i++)
            err_max =
                fmax(err_max, fabs((double)got[i] - want[i])) + (isnan(got[i]) ? INFINITY : 0);
        char label[128];
        snprintf(label, sizeof label, "%s L=%" PRId64 "%s%s %" PRId64 "/%" PRId64 "x%" PRId64,
                 sh->name, L, i0 ? " rows L/3.." : "", run_i == 2 ? " chunks of 7 rows" : "",
                 sh->n_head, sh->n_head_kv, sh->head_dim);
        report(run, "attention", label, "1e-5 of max |v|", err_max / vmax, 1e-5);
    }
    struct attention_args a = {&ws, &heads, dq, dk, dv, dout, L, L, scale};
    char what[96];
    snprintf(what, sizeof what, "attention %s L=%" PRId64, sh->name, L);
    time_launch(what, (double)(2 * L * wq + 2 * L * wkv) * 4, run_attention, &a);
    cudaFree(ws.scores);
    cudaFree(ws.ptrs);
    cudaFree(dq);
    cudaFree(dk);
    cudaFree(dv);
    cudaFree(dout);
    free(q);
    free(k);
    free(v);
    free(want);
    free(got);
    free(scores);
}

/*
 * SwiGLU of [L, ffn]: e^-x by the device's expf (2 ulp) against the host's (1 ulp), at most 3
 * FLT_EPSILON apart, then 1 + e, the division and the product each rounded on both sides (up
 * to FLT_EPSILON apart each): within 6 FLT_EPSILON relative; add and add_bias of [L, d_model]:
 * the same float sums (0 elements differ).
 */
static void check_pointwise(struct run *run, const struct shape *sh, int64_t L, uint64_t *seed)
{
    const int64_t n = L * sh->ffn, m = L * sh->d_model;
    float *gate = random_floats(n, 3.0, seed), *up = random_floats(n, 1.0, seed);
    float *want = host_alloc((size_t)n * 4), *got = host_alloc((size_t)n * 4);
    memcpy(want, gate, (size_t)n * 4);
    dllm_swiglu_ref(want, up, n);
    float *dg = dev_copy(gate, (size_t)n * 4), *du = dev_copy(up, (size_t)n * 4);
    fetch(got, dg, (size_t)n * 4, dllm_cuda_swiglu(dg, du, n, 0), "dllm_cuda_swiglu");
    char label[96];
    snprintf(label, sizeof label, "%s [%" PRId64 ", %" PRId64 "]", sh->name, L, sh->ffn);
    report(run, "swiglu", label, "6 FLT_EPSILON relative", max_rel(got, want, n), 6 * FLT_EPSILON);

    /* add and add_bias reuse the first m floats of the buffers */
    memcpy(want, gate, (size_t)m * 4);
    dllm_add_ref(want, up, m);
    cuda_or_die(cudaMemcpy(dg, gate, (size_t)m * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
    fetch(got, dg, (size_t)m * 4, dllm_cuda_add(dg, du, m, 0), "dllm_cuda_add");
    snprintf(label, sizeof label, "%s [%" PRId64 ", %" PRId64 "]", sh->name, L, sh->d_model);
    report(run, "add", label, "elements whose bits differ", bits_differ(got, want, m, 4), 0);

    memcpy(want, gate, (size_t)m * 4);
    for (int64_t r = 0; r < L; r++)
        dllm_add_ref(want + r * sh->d_model, up, sh->d_model);
    cuda_or_die(cudaMemcpy(dg, gate, (size_t)m * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
    fetch(got, dg, (size_t)m * 4, dllm_cuda_add_bias(dg, du, L, sh->d_model, 0),
          "dllm_cuda_add_bias");
    report(run, "add_bias", label, "elements whose bits differ", bits_differ(got, want, m, 4), 0);
    cudaFree(dg);
    cudaFree(du);
    free(gate);
    free(up);
    free(want);
    free(got);
}

/*
 * Row statistics of 32 rows of [vocab] logits: argmax, max and second exactly the CPU's (the
 * index-order statistics of cuda/rowstats.h, which tests/test_cuda_host.c proves equal to the
 * CPU backend's); lse and entropy within dllm_hd_stats_*_tol of them (the largest change a
 * different order of the sums can make); and all five bit for bit the host's run of the
 * kernel's order.
 */
static void check_row_stats(struct run *run, const struct shape *sh, uint64_t *seed)
{
    const int64_t R = 32, V = sh->vocab;
    float *l = random_floats(R * V, 4.0, seed);
    l[5 * V + 17] = l[5 * V + V / 2] = 60.0f; /* a tie: index 17 wins */
    struct dllm_row_stats got[32];
    float *dl = dev_copy(l, (size_t)(R * V) * 4);
    struct dllm_row_stats *dout = dev_alloc(sizeof got);
    fetch(got, dout, sizeof got, dllm_cuda_row_stats(dl, R, V, dout, 0), "dllm_cuda_row_stats");
    double top_differ = 0, sums_excess = 0, order_differ = 0;
    for (int64_t r = 0; r < R; r++) {
        const float *lr = l + r * V;
        struct dllm_row_stats cpu = dllm_hd_stats_serial(lr, V);
        struct dllm_row_stats ko = dllm_hd_stats_kernel_order(lr, V);
        double max_abs = 0;
        for (int64_t v = 0; v < V; v++)
            max_abs = fmax(max_abs, fabs(lr[v]));
        top_differ +=
            got[r].argmax != cpu.argmax || got[r].max != cpu.max || got[r].second != cpu.second;
        double e1 = fabs(got[r].lse - cpu.lse) / dllm_hd_stats_lse_tol(V, cpu.lse);
        double e2 =
            fabs(got[r].entropy - cpu.entropy) / dllm_hd_stats_entropy_tol(V, cpu.lse, max_abs);
        sums_excess = fmax(sums_excess, fmax(e1, e2)) + (isnan(e1 + e2) ? INFINITY : 0);
        order_differ += memcmp(&got[r].lse, &ko.lse, sizeof ko.lse) != 0 ||
                        memcmp(&got[r].entropy, &ko.entropy, sizeof ko.entropy) != 0 ||
                        got[r].argmax != ko.argmax;
    }
    char label[96];
    snprintf(label, sizeof label, "%s [32, %" PRId64 "]", sh->name, V);
    report(run, "row_stats top", label, "rows whose argmax/max/second differ", top_differ, 0);
    report(run, "row_stats sums", label, "lse/entropy error / order bound", sums_excess, 1);
    report(run, "row_stats order", label, "rows differing from the kernel order", order_differ, 0);
    cudaFree(dl);
    cudaFree(dout);
    free(l);
}

/*
 * Unsupported arguments are refused with cudaErrorInvalidValue before anything is launched
 * (the buffer passed is a valid 4 KiB device buffer, so a launch that slipped through would
 * not fault).
 */
static void check_refusals(struct run *run)
{
    void *buf = dev_alloc(4096);
    float *f = buf;
    int bad = 0;
    bad += dllm_cuda_type_supported(DLLM_TYPE_IQ2_XXS);
    bad += dllm_cuda_dequant_f16(DLLM_TYPE_IQ2_XXS, buf, 1, 256, buf, 0) != cudaErrorInvalidValue;
    bad += dllm_cuda_dequant_f16(DLLM_TYPE_Q4_K, buf, 1, 100, buf, 0) != cudaErrorInvalidValue;
    bad += dllm_cuda_get_rows(DLLM_TYPE_Q8_0, buf, 33, buf, 1, f, 0) != cudaErrorInvalidValue;
    bad += dllm_cuda_attention_pointers(f, f, f, f, f, 1, 1, 3, 2, 128, buf, 0) !=
           cudaErrorInvalidValue;
    bad += dllm_cuda_softmax_rows(f, 1, 0, 0) != cudaErrorInvalidValue;
    /* a workspace of scores for 2 heads over 8 keys is too small for 4 heads */
    const struct dllm_cuda_attention_ws ws = {f, 16, buf};
    const struct dllm_cuda_heads heads = {4, 4, 16};
    struct dllm_error err = {0};
    bad += dllm_cuda_attention(blas, 0, &ws, &heads, f, f, f, f, 1, 8, 1.0f, &err) != DLLM_ERR_ARG;
    bad += dllm_cuda_rope(f, 1, 1, 128, 127, buf, 1e4f, false, 0) != cudaErrorInvalidValue;
    bad += dllm_cuda_rms_norm(f, f, 1, 0, 1e-5f, f, 0) != cudaErrorInvalidValue;
    bad += dllm_cuda_swiglu(f, NULL, 4, 0) != cudaErrorInvalidValue;
    bad += dllm_cuda_add(f, f, -1, 0) != cudaErrorInvalidValue;
    bad += dllm_cuda_add_rms_norm(f, NULL, f, 1, 4, 1e-5f, f, 0) != cudaErrorInvalidValue;
    bad += dllm_cuda_add_bias(f, f, 2, 0, 0) != cudaErrorInvalidValue;
    bad += dllm_cuda_f32_to_f16(f, 4, NULL, 0) != cudaErrorInvalidValue;
    bad += dllm_cuda_row_stats(NULL, 1, 10, buf, 0) != cudaErrorInvalidValue;
    cuda_or_die(cudaDeviceSynchronize(), "the refused calls");
    cudaFree(buf);
    report(run, "argument checks", "bad type, shape, pointer", "calls not refused", bad, 0);
}

int main(int argc, char **argv)
{
    const bool small = argc == 3 && strcmp(argv[1], "--small") == 0;
    if (argc != 2 && !small) {
        fprintf(stderr, "usage: kernel_check [--small] RESULTS.json\n");
        return 2;
    }
    if (small) {
        shapes = small_shapes;
        n_shapes = sizeof small_shapes / sizeof small_shapes[0];
        canvases = small_canvases;
        n_canvases = sizeof small_canvases / sizeof small_canvases[0];
        n_ids = 16;
    }
    const char *results = argv[argc - 1];
    int n_dev = 0;
    cudaError_t e = cudaGetDeviceCount(&n_dev);
    if (e != cudaSuccess || n_dev == 0) {
        fprintf(stderr,
                "kernel_check: error: no CUDA GPU (%s); run it on a machine with an NVIDIA GPU "
                "and its driver (tests/gpu/run.sh)\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "no device found");
        return 1;
    }
    struct cudaDeviceProp prop;
    cuda_or_die(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    struct run run = {fopen(results, "w"), 0, false};
    if (!run.json) {
        fprintf(stderr, "kernel_check: error: cannot write %s\n", results);
        return 1;
    }
    printf("kernel_check on %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
    fprintf(run.json, "{\"device\": \"%s\", \"capability\": \"%d.%d\", \"checks\": [", prop.name,
            prop.major, prop.minor);
    if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "kernel_check: error: cublasCreate failed\n");
        return 1;
    }
    uint64_t seed = 0x6b65726e;
    check_refusals(&run);
    check_dequant(&run, &seed);
    check_f32_to_f16(&run, &seed);
    for (size_t s = 0; s < n_shapes; s++) {
        for (size_t c = 0; c < n_canvases; c++) {
            check_rms_norm(&run, &shapes[s], canvases[c], &seed);
            check_add_rms_norm(&run, &shapes[s], canvases[c], &seed);
            check_rope(&run, &shapes[s], canvases[c], &seed);
            check_attention(&run, &shapes[s], canvases[c], &seed);
            check_pointwise(&run, &shapes[s], canvases[c], &seed);
        }
        check_row_stats(&run, &shapes[s], &seed);
    }
    cublasDestroy(blas);
    fprintf(run.json, "\n], \"timings\": [");
    for (int i = 0; i < n_timings; i++)
        fprintf(run.json, "%s\n  {\"what\": \"%s\", \"ms\": %.4f, \"gb_per_s\": %.1f}",
                i ? "," : "", timings[i].what, timings[i].ms, timings[i].gbs);
    fprintf(run.json, "\n], \"pass\": %s}\n", run.failed ? "false" : "true");
    fclose(run.json);
    printf("%d checks, %s\n", run.n_checks, run.failed ? "FAILED" : "all passed");
    return run.failed ? 1 : 0;
}
