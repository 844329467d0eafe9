/*
 * CPU feature detection (cpuid, xgetbv) and the kernel variant table.
 */
#include "config.h"

#include "dllm.h"
#include "kernels/cpu.h"
#include "kernels/matmul.h"
#include "threadpool.h"

#include <cpuid.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* XCR0 bits: SSE and AVX state (1, 2); AVX-512 opmask, upper ZMM0-15 and ZMM16-31 (5, 6, 7). */
#define XCR0_AVX    0x06u
#define XCR0_AVX512 0xe0u

/* The OS-enabled register state, XCR0; only valid when cpuid reports OSXSAVE. */
static uint64_t read_xcr0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (uint64_t)hi << 32 | lo;
}

unsigned dllm_cpu_features(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) {
        return 0;
    }
    const bool osxsave = c & bit_OSXSAVE, avx = c & bit_AVX, fma = c & bit_FMA, f16c = c & bit_F16C;
    if (!osxsave || !avx || (read_xcr0() & XCR0_AVX) != XCR0_AVX) {
        return 0;
    }
    const bool zmm_state = (read_xcr0() & XCR0_AVX512) == XCR0_AVX512;
    unsigned features = (fma ? DLLM_CPU_FMA : 0) | (f16c ? DLLM_CPU_F16C : 0);
    if (__get_cpuid_max(0, NULL) < 7) {
        return features;
    }
    __cpuid_count(7, 0, a, b, c, d);
    const unsigned max_sub = a;
    features |= (b & bit_AVX2) ? DLLM_CPU_AVX2 : 0;
    if (zmm_state) {
        features |= (b & bit_AVX512F) ? DLLM_CPU_AVX512F : 0;
        features |= (b & bit_AVX512BW) ? DLLM_CPU_AVX512BW : 0;
        features |= (b & bit_AVX512VL) ? DLLM_CPU_AVX512VL : 0;
        features |= (b & bit_AVX512DQ) ? DLLM_CPU_AVX512DQ : 0;
        features |= (c & bit_AVX512VNNI) ? DLLM_CPU_AVX512VNNI : 0;
    }
    if (max_sub >= 1) {
        __cpuid_count(7, 1, a, b, c, d);
        features |= (a & (1u << 4)) ? DLLM_CPU_AVXVNNI : 0; /* CPUID.(7,1):EAX[4] */
    }
    return features;
}

/* Feature names, in the order of enum dllm_cpu_feature's bits. */
static const char *const feature_names[] = {
    "AVX2", "FMA", "F16C", "AVX-VNNI", "AVX512F", "AVX512BW", "AVX512VL", "AVX512DQ", "AVX512-VNNI",
};

/* The names of the feature bits set in bits, separated by spaces, into buf of size bytes. */
static void feature_list(unsigned bits, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t f = 0; f < sizeof feature_names / sizeof feature_names[0]; f++) {
        if ((bits & (1u << f)) && n < size) {
            int k = snprintf(buf + n, size - n, "%s%s", n ? " " : "", feature_names[f]);
            n += k > 0 ? (size_t)k : 0;
        }
    }
}

void dllm_cpu_features_text(char *buf, size_t size)
{
    if (size > 0) {
        feature_list(dllm_cpu_features(), buf, size);
    }
}

#define NEED_AVX2 (DLLM_CPU_AVX2 | DLLM_CPU_FMA | DLLM_CPU_F16C)
#define NEED_AVX512                                                                                \
    (NEED_AVX2 | DLLM_CPU_AVX512F | DLLM_CPU_AVX512BW | DLLM_CPU_AVX512VL | DLLM_CPU_AVX512DQ |    \
     DLLM_CPU_AVX512VNNI)

#define REPACK(isa)                                                                                \
    dllm_matmul_repacked_bytes_##isa, dllm_matmul_repack_##isa, dllm_matmul_rows_packed_##isa

static const struct dllm_kernels variants[] = {
    {"ref", 0, 1, dllm_matmul_quantize_ref, dllm_matmul_rows_ref, NULL, NULL, NULL},
    {"avx2", NEED_AVX2, 8, dllm_matmul_quantize_avx2, dllm_matmul_rows_avx2, REPACK(avx2)},
    {"avxvnni", NEED_AVX2 | DLLM_CPU_AVXVNNI, 8, dllm_matmul_quantize_avx2,
     dllm_matmul_rows_avxvnni, REPACK(avxvnni)},
    {"avx512", NEED_AVX512, 16, dllm_matmul_quantize_avx512, dllm_matmul_rows_avx512,
     REPACK(avx512)},
};
#define N_VARIANTS (sizeof variants / sizeof variants[0])

const struct dllm_kernels *dllm_kernels_all(size_t *n)
{
    *n = N_VARIANTS;
    return variants;
}

bool dllm_kernels_usable(const struct dllm_kernels *k)
{
    return (dllm_cpu_features() & k->features) == k->features;
}

enum dllm_status dllm_kernels_select(const char *force, const struct dllm_kernels **out,
                                     struct dllm_error *err)
{
    if (force == NULL || force[0] == '\0') {
        size_t i = N_VARIANTS;
        while (!dllm_kernels_usable(&variants[i - 1])) {
            i--; /* the reference, variants[0], is always usable */
        }
        *out = &variants[i - 1];
        return DLLM_OK;
    }
    for (size_t i = 0; i < N_VARIANTS; i++) {
        if (strcmp(variants[i].name, force) != 0) {
            continue;
        }
        const unsigned missing = variants[i].features & ~dllm_cpu_features();
        if (missing != 0) {
            char names[128];
            feature_list(missing, names, sizeof names);
            return dllm_error_set(err, DLLM_ERR_UNSUPPORTED,
                                  "kernel variant '%s' needs %s, which this CPU lacks: choose "
                                  "another or leave the choice to dllm",
                                  force, names);
        }
        *out = &variants[i];
        return DLLM_OK;
    }
    return dllm_error_set(err, DLLM_ERR_ARG,
                          "unknown kernel variant '%s': use ref, avx2, avxvnni or avx512", force);
}

/* ---- running on a pool ------------------------------------------------------------------- */

/* One product or conversion shared out over a pool. */
struct par_job {
    const struct dllm_kernels *k;
    uint32_t wtype;
    const void *w;
    const float *x;
    int64_t K, N, L;
    void *scratch;
    size_t arow; /* bytes per converted activation row */
    float *y;
    int64_t ldy;
    int64_t item_rows;                       /* weight rows per item */
    bool packed;                             /* w is repacked (k->rows_packed) */
    const struct dllm_weight_reader *reader; /* a repack's source, when not w */
    atomic_int read_error;                   /* the errno value of a failed read, or 0 */
    const struct dllm_threadpool *pool;      /* a conversion's, which cuts the L rows */
    const int32_t *rows;                     /* a conversion's rows of x, or NULL: x's first L */
    const struct dllm_kernels_part *parts;   /* a grouped product's, each of part_items items */
    int64_t n_parts, part_items;
    const struct dllm_kernels_then *then; /* a grouped product's block callback, or NULL */
};

/* Converts thread item's part of the activation rows (dllm_threadpool_part), gathered or not. */
static void quantize_item(void *ctx, int64_t item, int thread)
{
    (void)thread;
    const struct par_job *j = ctx;
    int64_t l0, l1;
    dllm_threadpool_part(j->pool, j->L, (int)item, &l0, &l1);
    if (j->rows) {
        for (int64_t l = l0; l < l1; l++)
            j->k->quantize(j->wtype, j->x + j->rows[l] * j->K, j->K, 1,
                           (uint8_t *)j->scratch + (size_t)l * j->arow);
    } else if (l0 < l1) {
        j->k->quantize(j->wtype, j->x + l0 * j->K, j->K, l1 - l0,
                       (uint8_t *)j->scratch + (size_t)l0 * j->arow);
    }
}

/* Panels of row_align weight rows per repack item. */
#define REPACK_PANELS 4

/* The weight rows [*n0, *n1) of a product's or repack's item. */
static void item_rows(const struct par_job *j, int64_t item, int64_t *n0, int64_t *n1)
{
    *n0 = item * j->item_rows;
    *n1 = *n0 + j->item_rows < j->N ? *n0 + j->item_rows : j->N;
}

static void rows_item(void *ctx, int64_t item, int thread)
{
    const struct par_job *j = ctx;
    int64_t n0, n1;
    item_rows(j, item, &n0, &n1);
    (j->packed ? j->k->rows_packed : j->k->rows)(j->wtype, j->w, j->K, n0, n1, j->scratch, j->L,
                                                 j->y, j->ldy);
}

/*
 * Repacks an item's rows, from w or, with a reader, from the thread's part of its buf once
 * read there (as a matrix of n1 - n0 rows whose repacked panels start at panel n0 / row_align).
 */
static void repack_item(void *ctx, int64_t item, int thread)
{
    struct par_job *j = ctx;
    int64_t n0, n1;
    item_rows(j, item, &n0, &n1);
    if (!j->reader) {
        j->k->repack(j->wtype, j->w, j->K, j->N, n0, n1, j->scratch);
        return;
    }
    const size_t rb = dllm_matmul_row_bytes(j->wtype, j->K);
    uint8_t *rows = (uint8_t *)j->reader->buf + (size_t)(thread * j->item_rows) * rb;
    const int e = j->reader->read(j->reader->user, (size_t)n0 * rb, (size_t)(n1 - n0) * rb, rows);
    if (e) {
        atomic_store(&j->read_error, e);
        return;
    }
    j->k->repack(j->wtype, rows, j->K, n1 - n0, 0, n1 - n0,
                 (uint8_t *)j->scratch + j->k->repacked_bytes(j->wtype, j->K, n0));
}

void dllm_kernels_quantize_rows_par(const struct dllm_kernels *k, struct dllm_threadpool *pool,
                                    uint32_t wtype, const float *x, int64_t K, const int32_t *rows,
                                    int64_t L, void *scratch)
{
    struct par_job j = {.k = k,
                        .wtype = wtype,
                        .x = x,
                        .K = K,
                        .L = L,
                        .scratch = scratch,
                        .arow = dllm_matmul_act_row_bytes(wtype, K),
                        .pool = pool,
                        .rows = rows};
    dllm_threadpool_run_each(pool, quantize_item, &j);
}

void dllm_kernels_quantize_par(const struct dllm_kernels *k, struct dllm_threadpool *pool,
                               uint32_t wtype, const float *x, int64_t K, int64_t L, void *scratch)
{
    dllm_kernels_quantize_rows_par(k, pool, wtype, x, K, NULL, L, scratch);
}

/* Runs fn over the pool for items of panels * row_align weight rows of j's N. */
static void run_row_items(struct dllm_threadpool *pool, struct par_job *j, int64_t panels,
                          void (*fn)(void *ctx, int64_t item, int thread))
{
    j->item_rows = panels * j->k->row_align;
    dllm_threadpool_run(pool, (j->N + j->item_rows - 1) / j->item_rows, fn, j);
}

/*
 * Panels of row_align weight rows per product item: 16, and fewer (not under 4) where N would
 * then give a thread fewer than 2 items to balance with. Threads on neighbouring items write
 * neighbouring columns of the same output rows, which slows both: on a 2-core Zen 5, items of
 * 4 panels made bench_gemm's 2-thread products 4-7% slower at L = 160 and 10-13% at L = 512
 * than items of 16 (32 and 64 were no faster than 16), and Dream-7B's K and V (N = 512) ran
 * 12-14% faster in 4 items of 8 panels than in 8 of 4.
 */
static int64_t product_panels(const struct dllm_kernels *k, int64_t N, int threads)
{
    const int64_t panels = N / (k->row_align * 2 * threads);
    return panels < 4 ? 4 : panels > 16 ? 16 : panels;
}

/* The product of rows_par and rows_packed_par: rows_item over the pool. */
static void rows_run(const struct dllm_kernels *k, struct dllm_threadpool *pool, uint32_t wtype,
                     const void *w, bool packed, int64_t K, int64_t N, const void *scratch,
                     int64_t L, float *y, int64_t ldy)
{
    struct par_job j = {.k = k,
                        .wtype = wtype,
                        .w = w,
                        .K = K,
                        .N = N,
                        .L = L,
                        .scratch = (void *)scratch,
                        .y = y,
                        .ldy = ldy,
                        .packed = packed};
    run_row_items(pool, &j, product_panels(k, N, dllm_threadpool_size(pool)), rows_item);
}

void dllm_kernels_rows_packed_par(const struct dllm_kernels *k, struct dllm_threadpool *pool,
                                  uint32_t wtype, const void *packed, int64_t K, int64_t N,
                                  const void *scratch, int64_t L, float *y, int64_t ldy)
{
    rows_run(k, pool, wtype, packed, true, K, N, scratch, L, y, ldy);
}

size_t dllm_kernels_repack_buf_bytes(const struct dllm_kernels *k, uint32_t wtype, int64_t K)
{
    return (size_t)(REPACK_PANELS * k->row_align) * dllm_matmul_row_bytes(wtype, K);
}

int dllm_kernels_repack_par(const struct dllm_kernels *k, struct dllm_threadpool *pool,
                            uint32_t wtype, const void *w, int64_t K, int64_t N, void *dst,
                            const struct dllm_weight_reader *reader)
{
    struct par_job j = {
        .k = k, .wtype = wtype, .w = w, .K = K, .N = N, .scratch = dst, .reader = reader};
    atomic_init(&j.read_error, 0);
    run_row_items(pool, &j, REPACK_PANELS, repack_item);
    return atomic_load(&j.read_error);
}

/* Part p's block of weight rows [n0, n1). */
static void part_block(const struct par_job *j, int64_t p, int64_t n0, int64_t n1)
{
    const struct dllm_kernels_part *part = &j->parts[p];
    const uint8_t *act = (const uint8_t *)j->scratch + (size_t)part->row * j->arow;
    (j->packed ? j->k->rows_packed : j->k->rows)(j->wtype, part->w, j->K, n0, n1, act, part->L,
                                                 part->y, j->ldy);
}

/*
 * An item of a grouped product: one part's block of item_rows weight rows or, with a
 * callback, that block of every part in order, each followed by the callback.
 */
static void part_item(void *ctx, int64_t item, int thread)
{
    const struct par_job *j = ctx;
    const int64_t block = j->then ? item : item % j->part_items;
    const int64_t n0 = block * j->item_rows;
    const int64_t n1 = n0 + j->item_rows < j->N ? n0 + j->item_rows : j->N;
    if (!j->then) {
        part_block(j, item / j->part_items, n0, n1);
        return;
    }
    for (int64_t p = 0; p < j->n_parts; p++) {
        part_block(j, p, n0, n1);
        j->then->fn(j->then->user, p, n0, n1);
    }
}

void dllm_kernels_rows_parts_par(const struct dllm_kernels *k, struct dllm_threadpool *pool,
                                 uint32_t wtype, bool packed, int64_t K, int64_t N,
                                 const struct dllm_kernels_part *parts, int64_t n_parts,
                                 const void *scratch, int64_t ldy,
                                 const struct dllm_kernels_then *then)
{
    struct par_job j = {.k = k,
                        .wtype = wtype,
                        .K = K,
                        .N = N,
                        .scratch = (void *)scratch,
                        .arow = dllm_matmul_act_row_bytes(wtype, K),
                        .ldy = ldy,
                        .packed = packed,
                        .parts = parts,
                        .n_parts = n_parts,
                        .then = then};
    j.item_rows = product_panels(k, N, dllm_threadpool_size(pool)) * k->row_align;
    j.part_items = (N + j.item_rows - 1) / j.item_rows;
    dllm_threadpool_run(pool, then ? j.part_items : n_parts * j.part_items, part_item, &j);
}

void dllm_kernels_rows_par(const struct dllm_kernels *k, struct dllm_threadpool *pool,
                           uint32_t wtype, const void *w, int64_t K, int64_t N, const void *scratch,
                           int64_t L, float *y, int64_t ldy)
{
    rows_run(k, pool, wtype, w, false, K, N, scratch, L, y, ldy);
}

enum dllm_status dllm_kernels_name(const char *force, const char **out, struct dllm_error *err)
{
    const struct dllm_kernels *k;
    enum dllm_status st = dllm_kernels_select(force, &k, err);
    if (st == DLLM_OK) {
        *out = k->name;
    }
    return st;
}
