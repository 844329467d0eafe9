/*
 * Kernel variants: CPU feature detection against the compiler's own (__builtin_cpu_supports),
 * the choice of a variant and DLLM_KERNELS, and every variant this CPU runs against the scalar
 * reference on random data of the real layer shapes: activation conversion byte for byte, and
 * products within a named tolerance; the float16 conversions bit for bit, their reference
 * against hand-checked IEEE binary16 encodings. Variants this CPU lacks print a SKIP line per
 * case.
 */
#include "fixtures.h"
#include "kernels/cpu.h"
#include "kernels/fp16.h"
#include "kernels/matmul.h"
#include "gguf/quant.h"
#include "lines.h"
#include "random_data.h"
#include "threadpool.h"

#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- deterministic random data ---------------------------------------------------------- */

/*
 * L rows of K activations: normal values, row l scaled by 4^(l%5 - 2), with an outlier of 30
 * sigma now and then (the case a per-block scale exists for) and a few all-zero 32-blocks.
 */
static float *random_acts(int64_t L, int64_t K, uint64_t *s)
{
    float *x = malloc((size_t)(L * K) * sizeof *x);
    ck_assert_ptr_nonnull(x);
    for (int64_t l = 0; l < L; l++) {
        const double scale = ldexp(1.0, 2 * ((int)(l % 5) - 2));
        for (int64_t k = 0; k < K; k++) {
            double v = rng_gauss(s);
            if (rng_next(s) % 1000 == 0) {
                v *= 30.0;
            }
            x[l * K + k] = (float)(scale * v);
        }
        if (K >= 96 && l % 2 == 1) {
            memset(x + l * K + 64, 0, 32 * sizeof *x);
        }
    }
    return x;
}

/* ---- variants --------------------------------------------------------------------------- */

/* The SIMD variants, in dllm_kernels_all's order after "ref". */
static const char *const simd_names[] = {"avx2", "avxvnni", "avx512"};
#define N_SIMD 3

static const struct dllm_kernels *variant(const char *name)
{
    size_t n;
    const struct dllm_kernels *all = dllm_kernels_all(&n);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(all[i].name, name) == 0) {
            return &all[i];
        }
    }
    ck_abort_msg("no kernel variant %s", name);
    return NULL;
}

/* The variant for a test, or NULL after printing a SKIP line when this CPU lacks it. */
static const struct dllm_kernels *variant_or_skip(const char *name, const char *what)
{
    const struct dllm_kernels *k = variant(name);
    if (!dllm_kernels_usable(k)) {
        printf("SKIP: %s %s: this CPU lacks instructions the variant needs\n", name, what);
        return NULL;
    }
    return k;
}

/* Whether the kernel lists a flag on the first "flags" line of /proc/cpuinfo. */
static bool cpuinfo_flag(const char *flag)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    ck_assert_ptr_nonnull(f);
    char line[8192];
    bool found = false, seen = false;
    const size_t n = strlen(flag);
    while (!seen && fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) != 0)
            continue;
        seen = true;
        for (char *p = strstr(line, flag); p && !found; p = strstr(p + 1, flag))
            found = p[-1] == ' ' && (p[n] == ' ' || p[n] == '\n');
    }
    fclose(f);
    return found;
}

/*
 * The features as the compiler's runtime detection sees them; AVX-VNNI as the kernel lists it
 * (clang before 16 has no "avxvnni" for __builtin_cpu_supports).
 */
static unsigned builtin_features(void)
{
    __builtin_cpu_init();
    unsigned f = 0;
    f |= __builtin_cpu_supports("avx2") ? DLLM_CPU_AVX2 : 0;
    f |= __builtin_cpu_supports("fma") ? DLLM_CPU_FMA : 0;
    f |= cpuinfo_flag("avx_vnni") ? DLLM_CPU_AVXVNNI : 0;
    f |= __builtin_cpu_supports("avx512f") ? DLLM_CPU_AVX512F : 0;
    f |= __builtin_cpu_supports("avx512bw") ? DLLM_CPU_AVX512BW : 0;
    f |= __builtin_cpu_supports("avx512vl") ? DLLM_CPU_AVX512VL : 0;
    f |= __builtin_cpu_supports("avx512dq") ? DLLM_CPU_AVX512DQ : 0;
    f |= __builtin_cpu_supports("avx512vnni") ? DLLM_CPU_AVX512VNNI : 0;
    return f;
}

/* dllm_cpu_features agrees with the compiler (F16C, which it does not report, aside). */
START_TEST(test_features)
{
    const unsigned mine = dllm_cpu_features() & ~(unsigned)DLLM_CPU_F16C;
    printf("cpu features: 0x%x (builtin 0x%x)\n", mine, builtin_features());
    ck_assert_uint_eq(mine, builtin_features());
    size_t n;
    const struct dllm_kernels *all = dllm_kernels_all(&n);
    ck_assert_uint_eq(n, 1 + N_SIMD);
    ck_assert_str_eq(all[0].name, "ref");
    ck_assert(dllm_kernels_usable(&all[0]));
    for (size_t i = 0; i < N_SIMD; i++) {
        ck_assert_str_eq(all[1 + i].name, simd_names[i]);
        printf("%s: %s\n", all[1 + i].name, dllm_kernels_usable(&all[1 + i]) ? "usable" : "SKIP");
    }
}
END_TEST

/* With no choice the fastest usable variant is picked; named ones as the CPU allows. */
START_TEST(test_select)
{
    size_t n;
    const struct dllm_kernels *all = dllm_kernels_all(&n), *k = NULL;
    struct dllm_error err = {0};
    ck_assert_int_eq(dllm_kernels_select(NULL, &k, &err), DLLM_OK);
    const struct dllm_kernels *best = &all[0];
    for (size_t i = 0; i < n; i++) {
        best = dllm_kernels_usable(&all[i]) ? &all[i] : best;
    }
    ck_assert_ptr_eq(k, best);
    ck_assert_int_eq(dllm_kernels_select("", &k, &err), DLLM_OK);
    ck_assert_ptr_eq(k, best);
    for (size_t i = 0; i < n; i++) {
        k = NULL;
        enum dllm_status st = dllm_kernels_select(all[i].name, &k, &err);
        if (dllm_kernels_usable(&all[i])) {
            ck_assert_int_eq(st, DLLM_OK);
            ck_assert_ptr_eq(k, &all[i]);
        } else {
            ck_assert_int_eq(st, DLLM_ERR_UNSUPPORTED);
            ck_assert_ptr_null(k);
            ck_assert_msg(strstr(err.text, all[i].name) && strstr(err.text, "lacks"), "%s",
                          err.text);
        }
    }
    ck_assert_int_eq(dllm_kernels_select("avx1024", &k, &err), DLLM_ERR_ARG);
    ck_assert_msg(strstr(err.text, "unknown kernel variant 'avx1024'") != NULL, "%s", err.text);
}
END_TEST

/*
 * A name forces a variant, NULL and "" pick the fastest, a bad name is an error; the library
 * never reads DLLM_KERNELS (the programs do and pass it in).
 */
START_TEST(test_select_name)
{
    const struct dllm_kernels *k = NULL, *best = NULL;
    struct dllm_error err = {0};
    ck_assert_int_eq(dllm_kernels_select(NULL, &best, &err), DLLM_OK);
    setenv("DLLM_KERNELS", "ref", 1);
    ck_assert_int_eq(dllm_kernels_select(NULL, &k, &err), DLLM_OK);
    ck_assert_ptr_eq(k, best);
    ck_assert_int_eq(dllm_kernels_select("", &k, &err), DLLM_OK);
    ck_assert_ptr_eq(k, best);
    unsetenv("DLLM_KERNELS");
    ck_assert_int_eq(dllm_kernels_select("ref", &k, &err), DLLM_OK);
    ck_assert_str_eq(k->name, "ref");
    ck_assert_int_eq(dllm_kernels_select(best->name, &k, &err), DLLM_OK);
    ck_assert_ptr_eq(k, best);
    ck_assert_int_eq(dllm_kernels_select("fast", &k, &err), DLLM_ERR_ARG);
    ck_assert_str_eq(err.text, "unknown kernel variant 'fast': use ref, avx2, avxvnni or avx512");
    const char *name;
    ck_assert_int_eq(dllm_kernels_name("ref", &name, &err), DLLM_OK);
    ck_assert_str_eq(name, "ref");
}
END_TEST

/* ---- activation conversion -------------------------------------------------------------- */

/* One weight type per activation format, and the shapes converted. */
static const struct quantize_case {
    uint32_t wtype;
    int64_t K, L;
} quantize_cases[] = {
    {DLLM_TYPE_Q4_K, 4096, 5}, {DLLM_TYPE_Q6_K, 18944, 2}, {DLLM_TYPE_Q5_K, 3584, 3},
    {DLLM_TYPE_Q8_0, 4096, 5}, {DLLM_TYPE_Q4_1, 12288, 2}, {DLLM_TYPE_F16, 3584, 3},
    {DLLM_TYPE_BF16, 4096, 2}, {DLLM_TYPE_F32, 4096, 2},
};
#define N_QUANTIZE_CASES (sizeof quantize_cases / sizeof quantize_cases[0])

/*
 * Rows that also hit the rounding corners: ties (x * 127 / max landing on k + 1/2 for Q8_0's
 * round-half-away and Q8_K128's round-half-even), a largest magnitude that is negative and one
 * that occurs twice with both signs (in the first 64 elements of a 128 and after them), and
 * all-zero blocks (128 elements, for Q8_K128 too).
 */
static void add_corners(float *x, int64_t K)
{
    for (int j = 0; j < 32; j++) {
        x[j] = (float)(j - 16) * 0.5f; /* max -8 at j = 0, ties at every odd j */
    }
    x[32] = 127.0f;
    x[33] = -127.0f;
    for (int j = 34; j < 64; j++) {
        x[j] = (float)j + 0.5f;
    }
    if (K >= 256) {
        memset(x + 128, 0, 128 * sizeof *x);
    }
    if (K >= 512) { /* a tie of both signs past the first 64 of a 128, the negative first */
        x[256 + 100] = -200.0f;
        x[256 + 120] = 200.0f;
    }
}

/* Each usable variant converts activations byte for byte as the reference does. */
START_TEST(test_quantize)
{
    const struct quantize_case *qc = &quantize_cases[_i % N_QUANTIZE_CASES];
    const char *name = simd_names[_i / N_QUANTIZE_CASES];
    char what[96];
    snprintf(what, sizeof what, "quantize for %s K=%lld L=%lld", dllm_type_traits(qc->wtype)->name,
             (long long)qc->K, (long long)qc->L);
    const struct dllm_kernels *k = variant_or_skip(name, what);
    if (k == NULL) {
        return;
    }
    uint64_t seed = 500 + (uint64_t)_i;
    float *x = random_acts(qc->L, qc->K, &seed);
    add_corners(x, qc->K);
    const size_t bytes = dllm_matmul_scratch_bytes(qc->wtype, qc->K, qc->L);
    uint8_t *want = malloc(bytes), *got = malloc(bytes);
    ck_assert(want != NULL && got != NULL);
    memset(got, 0xa5, bytes);
    dllm_matmul_quantize_ref(qc->wtype, x, qc->K, qc->L, want);
    k->quantize(qc->wtype, x, qc->K, qc->L, got);
    size_t first = bytes;
    for (size_t i = 0; i < bytes && first == bytes; i++) {
        first = want[i] != got[i] ? i : bytes;
    }
    ck_assert_msg(first == bytes, "%s %s: first difference at byte %zu of %zu (%02x, want %02x)",
                  name, what, first, bytes, first < bytes ? got[first] : 0,
                  first < bytes ? want[first] : 0);
    printf("%s %s: identical\n", name, what);
    free(got);
    free(want);
    free(x);
}
END_TEST

/* ---- products --------------------------------------------------------------------------- */

/*
 * Tolerance on the relative L2 difference of one activation row's outputs from the
 * reference's. Quantised types: the integer dot products inside a block are exact in both, so
 * only the float roundings of the block terms and their summation order differ. Float types:
 * the reference sums in double, the variants in float, in many interleaved partial sums. Either
 * way each of the up to K/8 additions rounds by 2^-24 relative, and random rounding errors add
 * up to about 2^-24 * sqrt(K/8) = 3e-6 at K = 18944 against sums whose terms do not cancel;
 * these do cancel partly, hence 1e-5. Measured differences (printed) are 1e-7 to 7e-7.
 */
#define TOL_ROWS 1e-5

static const struct product_case {
    uint32_t wtype;
    int64_t K, L;
} product_cases[] = {
    {DLLM_TYPE_Q4_K, 4096, 1},  {DLLM_TYPE_Q4_K, 4096, 9},  {DLLM_TYPE_Q4_K, 12288, 8},
    {DLLM_TYPE_Q4_K, 3584, 17}, {DLLM_TYPE_Q4_K, 18944, 3}, {DLLM_TYPE_Q6_K, 4096, 5},
    {DLLM_TYPE_Q6_K, 12288, 2}, {DLLM_TYPE_Q6_K, 3584, 13}, {DLLM_TYPE_Q6_K, 18944, 7},
    {DLLM_TYPE_Q5_K, 4096, 6},  {DLLM_TYPE_Q5_K, 18944, 3}, {DLLM_TYPE_Q8_0, 4096, 9},
    {DLLM_TYPE_Q8_0, 12288, 4}, {DLLM_TYPE_Q8_0, 3584, 1},  {DLLM_TYPE_Q4_0, 4096, 5},
    {DLLM_TYPE_Q4_1, 3584, 7},  {DLLM_TYPE_Q5_0, 4096, 3},  {DLLM_TYPE_Q5_1, 12288, 4},
    {DLLM_TYPE_F16, 4096, 9},   {DLLM_TYPE_F16, 18944, 2},  {DLLM_TYPE_BF16, 3584, 5},
    {DLLM_TYPE_F32, 4096, 3},   {DLLM_TYPE_F32, 12288, 11}, {DLLM_TYPE_Q3_K, 4096, 9},
    {DLLM_TYPE_Q3_K, 12288, 2}, {DLLM_TYPE_Q3_K, 3584, 17}, {DLLM_TYPE_Q2_K, 4096, 9},
    {DLLM_TYPE_Q2_K, 18944, 3}, {DLLM_TYPE_Q2_K, 3584, 13},
};
#define N_PRODUCT_CASES (sizeof product_cases / sizeof product_cases[0])

/* The largest relative L2 difference over rows l of y from ref, outputs [0, N) of each. */
static double max_row_diff(const float *y, const float *ref, int64_t ldy, int64_t L, int64_t N)
{
    double worst = 0.0;
    for (int64_t l = 0; l < L; l++) {
        double num = 0.0, den = 0.0;
        for (int64_t n = 0; n < N; n++) {
            const double d = (double)y[l * ldy + n] - ref[l * ldy + n];
            num += d * d;
            den += (double)ref[l * ldy + n] * ref[l * ldy + n];
        }
        ck_assert(den > 0.0);
        worst = fmax(worst, sqrt(num / den));
    }
    return worst;
}

/*
 * y = x . W^T for N = 37 random rows (two full panels and a partial one at any panel width),
 * computed as the ranges [0, 19) and [19, 37) so panels start unaligned, into a y with padding
 * columns that must stay untouched; against the reference kernel on the same activations.
 */
START_TEST(test_rows)
{
    const struct product_case *pc = &product_cases[_i % N_PRODUCT_CASES];
    const char *name = simd_names[_i / N_PRODUCT_CASES];
    char what[96];
    snprintf(what, sizeof what, "rows %s K=%lld L=%lld", dllm_type_traits(pc->wtype)->name,
             (long long)pc->K, (long long)pc->L);
    const struct dllm_kernels *k = variant_or_skip(name, what);
    if (k == NULL) {
        return;
    }
    const int64_t N = 37, ldy = N + 3, K = pc->K, L = pc->L;
    uint64_t seed = 9000 + (uint64_t)_i;
    void *w = random_weights(pc->wtype, N, K, RANDOM_SCALES_SIGNED, &seed);
    float *x = random_acts(L, K, &seed);
    void *scratch = malloc(dllm_matmul_scratch_bytes(pc->wtype, K, L));
    float *y = malloc((size_t)(L * ldy) * sizeof *y),
          *ref = malloc((size_t)(L * ldy) * sizeof *ref);
    ck_assert(scratch != NULL && y != NULL && ref != NULL);
    for (int64_t i = 0; i < L * ldy; i++) {
        y[i] = ref[i] = -1234.5f;
    }
    dllm_matmul_quantize_ref(pc->wtype, x, K, L, scratch);
    dllm_matmul_rows_ref(pc->wtype, w, K, 0, N, scratch, L, ref, ldy);
    k->rows(pc->wtype, w, K, 19, N, scratch, L, y, ldy);
    k->rows(pc->wtype, w, K, 0, 19, scratch, L, y, ldy);
    for (int64_t l = 0; l < L; l++) {
        for (int64_t n = N; n < ldy; n++) {
            ck_assert_float_eq(y[l * ldy + n], -1234.5f);
        }
    }
    const double diff = max_row_diff(y, ref, ldy, L, N);
    printf("%s %s: rel L2 difference from ref %.3g (tol %.3g)\n", name, what, diff, TOL_ROWS);
    ck_assert_double_le(diff, TOL_ROWS);
    free(ref);
    free(y);
    free(scratch);
    free(x);
    free(w);
}
END_TEST

/*
 * The largest integer products: every quantised weight byte set to one pattern (all bits set:
 * the K-quants' largest values, Q8_0 weights -1; 0x80 and 0x7f: Q8_0's -128 and 127), against
 * activation rows of one sign whose quantised values are all +-127, so that no pairwise
 * int16 sum inside a dot-product instruction may saturate. Against the reference.
 */
#define N_EXTREME_TYPES 10
START_TEST(test_rows_extremes)
{
    static const uint32_t types[] = {DLLM_TYPE_Q4_K, DLLM_TYPE_Q5_K, DLLM_TYPE_Q6_K, DLLM_TYPE_Q3_K,
                                     DLLM_TYPE_Q2_K, DLLM_TYPE_Q8_0, DLLM_TYPE_Q4_0, DLLM_TYPE_Q4_1,
                                     DLLM_TYPE_Q5_0, DLLM_TYPE_Q5_1};
    static const uint8_t patterns[] = {0xff, 0x80, 0x7f};
    const uint32_t wtype = types[_i % N_EXTREME_TYPES];
    const char *name = simd_names[_i / N_EXTREME_TYPES];
    char what[64];
    snprintf(what, sizeof what, "rows extremes %s", dllm_type_traits(wtype)->name);
    const struct dllm_kernels *k = variant_or_skip(name, what);
    if (k == NULL) {
        return;
    }
    const int64_t N = 24, K = 512, L = 2;
    uint64_t seed = 31;
    uint8_t *w = random_weights(wtype, N, K, RANDOM_SCALES_SIGNED, &seed); /* for valid scales */
    const struct dllm_type_traits *tr = dllm_type_traits(wtype);
    uint8_t *scales = malloc((size_t)(N * K / tr->block_elems) * tr->block_bytes);
    ck_assert_ptr_nonnull(scales);
    memcpy(scales, w, (size_t)(N * K / tr->block_elems) * tr->block_bytes);
    float x[2 * 512];
    for (int64_t i = 0; i < K; i++) {
        x[i] = 1.0f;
        x[K + i] = -0.5f;
    }
    void *scratch = malloc(dllm_matmul_scratch_bytes(wtype, K, L));
    float y[2 * 24], ref[2 * 24];
    ck_assert_ptr_nonnull(scratch);
    dllm_matmul_quantize_ref(wtype, x, K, L, scratch);
    double worst = 0.0;
    for (size_t pi = 0; pi < sizeof patterns; pi++) {
        /* every byte of each block the pattern, then the fp16 scales of the random blocks back */
        memset(w, patterns[pi], (size_t)(N * K / tr->block_elems) * tr->block_bytes);
        for (int64_t b = 0; b < N * K / tr->block_elems; b++) {
            uint8_t *dst = w + (size_t)b * tr->block_bytes;
            const uint8_t *src = scales + (size_t)b * tr->block_bytes;
            switch (wtype) {
            case DLLM_TYPE_Q6_K:
                memcpy(dst + offsetof(struct block_q6_K, d), src + offsetof(struct block_q6_K, d),
                       2);
                break;
            case DLLM_TYPE_Q3_K:
                memcpy(dst + offsetof(struct block_q3_K, d), src + offsetof(struct block_q3_K, d),
                       2);
                break;
            case DLLM_TYPE_Q2_K:
                memcpy(dst + offsetof(struct block_q2_K, d), src + offsetof(struct block_q2_K, d),
                       4);
                break;
            case DLLM_TYPE_Q4_K:
            case DLLM_TYPE_Q5_K:
            case DLLM_TYPE_Q4_1:
            case DLLM_TYPE_Q5_1: memcpy(dst, src, 4); break;
            default: memcpy(dst, src, 2); break;
            }
        }
        dllm_matmul_rows_ref(wtype, w, K, 0, N, scratch, L, ref, N);
        k->rows(wtype, w, K, 0, N, scratch, L, y, N);
        worst = fmax(worst, max_row_diff(y, ref, N, L, N));
    }
    printf("%s %s: rel L2 difference from ref %.3g (tol %.3g)\n", name, what, worst, TOL_ROWS);
    ck_assert_double_le(worst, TOL_ROWS);
    free(scratch);
    free(scales);
    free(w);
}
END_TEST

/* Empty row ranges and L = 0 write nothing; a zero activation row gives exact zeros. */
START_TEST(test_rows_edges)
{
    const uint32_t types[] = {DLLM_TYPE_Q4_K, DLLM_TYPE_Q6_K, DLLM_TYPE_Q8_0, DLLM_TYPE_Q4_1,
                              DLLM_TYPE_F16};
    const uint32_t wtype = types[_i % 5];
    const char *name = simd_names[_i / 5];
    char what[64];
    snprintf(what, sizeof what, "rows edges %s", dllm_type_traits(wtype)->name);
    const struct dllm_kernels *k = variant_or_skip(name, what);
    if (k == NULL) {
        return;
    }
    const int64_t N = 20, K = 512, L = 2;
    uint64_t seed = 77;
    void *w = random_weights(wtype, N, K, RANDOM_SCALES_SIGNED, &seed);
    float x[2 * 512] = {0};
    for (int64_t i = 0; i < K; i++) {
        x[K + i] = (float)rng_gauss(&seed);
    }
    void *scratch = malloc(dllm_matmul_scratch_bytes(wtype, K, L));
    ck_assert_ptr_nonnull(scratch);
    float y[2 * 20];
    for (int i = 0; i < 40; i++) {
        y[i] = 7.0f;
    }
    k->quantize(wtype, x, K, L, scratch);
    k->rows(wtype, w, K, 5, 5, scratch, L, y, N);
    k->rows(wtype, w, K, 0, N, scratch, 0, y, N);
    for (int i = 0; i < 40; i++) {
        ck_assert_float_eq(y[i], 7.0f);
    }
    k->rows(wtype, w, K, 0, N, scratch, L, y, N);
    for (int n = 0; n < N; n++) {
        ck_assert_float_eq(y[n], 0.0f);
        ck_assert(y[N + n] != 7.0f && isfinite(y[N + n]));
    }
    free(scratch);
    free(w);
}
END_TEST

/*
 * dllm_kernels_quantize_par and dllm_kernels_rows_par on pools of 1 to 3 threads give exactly
 * what one call of the variant gives (items are panel-aligned, so every output is computed the
 * same way), for every usable variant including the reference; N is no multiple of an item.
 * dllm_kernels_quantize_rows_par gives what one call gives on its rows copied together.
 */
START_TEST(test_par)
{
    size_t n;
    const struct dllm_kernels *all = dllm_kernels_all(&n);
    const struct dllm_kernels *k = &all[_i % n];
    const int threads = 1 + _i / (int)n;
    char what[64];
    snprintf(what, sizeof what, "par on %d threads", threads);
    if (variant_or_skip(k->name, what) == NULL) {
        return;
    }
    const uint32_t wtype = DLLM_TYPE_Q4_K;
    const int64_t N = 200, K = 512, L = 5;
    uint64_t seed = 4242;
    void *w = random_weights(wtype, N, K, RANDOM_SCALES_SIGNED, &seed);
    float *x = random_acts(L, K, &seed);
    const size_t sbytes = dllm_matmul_scratch_bytes(wtype, K, L);
    uint8_t *s1 = malloc(sbytes), *s2 = malloc(sbytes);
    float *y1 = malloc((size_t)(L * N) * sizeof *y1), *y2 = malloc((size_t)(L * N) * sizeof *y2);
    ck_assert(s1 != NULL && s2 != NULL && y1 != NULL && y2 != NULL);
    struct dllm_threadpool *pool = NULL;
    ck_assert_int_eq(dllm_threadpool_new(threads, &pool, NULL), DLLM_OK);
    k->quantize(wtype, x, K, L, s1);
    k->rows(wtype, w, K, 0, N, s1, L, y1, N);
    dllm_kernels_quantize_par(k, pool, wtype, x, K, L, s2);
    dllm_kernels_rows_par(k, pool, wtype, w, K, N, s2, L, y2, N);
    ck_assert_int_eq(memcmp(s1, s2, sbytes), 0);
    ck_assert_int_eq(memcmp(y1, y2, (size_t)(L * N) * sizeof *y1), 0);
    /* rows gathered in another order (one twice) convert to the bytes of those rows copied */
    const int32_t rows[] = {3, 0, 4, 3, 1};
    float *g = malloc((size_t)(L * K) * sizeof *g);
    ck_assert(g != NULL);
    for (int64_t l = 0; l < L; l++)
        memcpy(g + l * K, x + rows[l] * K, (size_t)K * sizeof *g);
    k->quantize(wtype, g, K, L, s1);
    memset(s2, 0xa5, sbytes);
    dllm_kernels_quantize_rows_par(k, pool, wtype, x, K, rows, L, s2);
    ck_assert_int_eq(memcmp(s1, s2, sbytes), 0);
    free(g);
    printf("%s %s: identical to one call, gathered rows too\n", k->name, what);
    dllm_threadpool_free(pool);
    free(y2);
    free(y1);
    free(s2);
    free(s1);
    free(x);
    free(w);
}
END_TEST

/*
 * What a grouped product's callback saw: the calls on each part's columns, and calls whose
 * part came before the one of an earlier call on the same block.
 */
struct block_calls {
    int64_t N;
    int seen[2][256];
    int next[256]; /* the part a block's next call must be for, by its first column */
    atomic_int out_of_order;
};

static void note_block(void *user, int64_t part, int64_t n0, int64_t n1)
{
    struct block_calls *b = user;
    if (b->next[n0] != part)
        atomic_fetch_add(&b->out_of_order, 1);
    b->next[n0] = (int)part + 1;
    for (int64_t n = n0; n < n1 && n < b->N; n++)
        b->seen[part][n]++;
}

/* A weight reader over bytes in memory (the weights' file, for the repack) that can fail. */
struct memory_reader {
    const uint8_t *w;
    size_t fail_from; /* reads reaching past this byte fail with EIO */
};

static int read_memory(void *user, size_t at, size_t n, void *dst)
{
    const struct memory_reader *r = user;
    if (at + n > r->fail_from) {
        return EIO;
    }
    memcpy(dst, r->w + at, n);
    return 0;
}

/*
 * Repacked matrices: every SIMD variant repacks the quantized types, the K-quants and the
 * 32-element blocks (and not the float ones, repacked_bytes 0) into exactly as many bytes as
 * N rounded up to a panel takes, and its
 * products over the repacked copy are bit for bit those over the GGUF layout, on one call and
 * shared out over a pool (items of whole panels; N = 200 ends in a partial panel), and the
 * repack shared out over a pool writes what one call writes, from memory and from a reader
 * (each thread's rows read into its buffer first); a read that fails is reported.
 */
START_TEST(test_repacked)
{
    static const uint32_t types[] = {DLLM_TYPE_Q4_K, DLLM_TYPE_Q5_K, DLLM_TYPE_Q6_K, DLLM_TYPE_Q3_K,
                                     DLLM_TYPE_Q2_K, DLLM_TYPE_Q8_0, DLLM_TYPE_Q4_0, DLLM_TYPE_Q4_1,
                                     DLLM_TYPE_Q5_0, DLLM_TYPE_Q5_1, DLLM_TYPE_F16};
    const int n_types = (int)(sizeof types / sizeof types[0]);
    const uint32_t wtype = types[_i % n_types];
    const char *name = simd_names[_i / n_types];
    char what[64];
    snprintf(what, sizeof what, "repacked %s", dllm_type_traits(wtype)->name);
    const struct dllm_kernels *k = variant_or_skip(name, what);
    if (k == NULL) {
        return;
    }
    const int64_t N = 200, K = 768, L = 11;
    const size_t bytes = k->repacked_bytes(wtype, K, N);
    const struct dllm_type_traits *tr = dllm_type_traits(wtype);
    if (wtype == DLLM_TYPE_F16) {
        ck_assert_uint_eq(bytes, 0);
        printf("%s %s: not repacked\n", name, what);
        return;
    }
    /* a panel's block: its rows' words, a last partial word (Q6_K's d, Q8_0's last quants, ...)
     * padded to 4 bytes */
    const int64_t panels = (N + k->row_align - 1) / k->row_align;
    ck_assert_uint_eq(bytes, (size_t)(panels * k->row_align * (K / tr->block_elems)) *
                                 ((tr->block_bytes + 3) / 4 * 4));
    uint64_t seed = 5150 + (uint64_t)_i;
    void *w = random_weights(wtype, N, K, RANDOM_SCALES_SIGNED, &seed);
    float *x = random_acts(L, K, &seed);
    void *scratch = malloc(dllm_matmul_scratch_bytes(wtype, K, L));
    uint8_t *packed = dllm_alloc_lines(bytes), *packed2 = dllm_alloc_lines(bytes);
    float *y = malloc((size_t)(L * N) * sizeof *y), *yp = malloc((size_t)(L * N) * sizeof *yp);
    ck_assert(scratch && packed && packed2 && y && yp);
    struct dllm_threadpool *pool = NULL;
    ck_assert_int_eq(dllm_threadpool_new(3, &pool, NULL), DLLM_OK);
    k->repack(wtype, w, K, N, 0, N, packed);
    ck_assert_int_eq(dllm_kernels_repack_par(k, pool, wtype, w, K, N, packed2, NULL), 0);
    ck_assert_int_eq(memcmp(packed, packed2, bytes), 0);
    const size_t wbytes = (size_t)(N * K / tr->block_elems) * tr->block_bytes;
    struct memory_reader mr = {.w = w, .fail_from = wbytes};
    uint8_t *rbuf = malloc(3 * dllm_kernels_repack_buf_bytes(k, wtype, K));
    ck_assert_ptr_nonnull(rbuf);
    const struct dllm_weight_reader reader = {.read = read_memory, .user = &mr, .buf = rbuf};
    memset(packed2, 0, bytes);
    ck_assert_int_eq(dllm_kernels_repack_par(k, pool, wtype, NULL, K, N, packed2, &reader), 0);
    ck_assert_int_eq(memcmp(packed, packed2, bytes), 0);
    mr.fail_from = wbytes - 1;
    ck_assert_int_eq(dllm_kernels_repack_par(k, pool, wtype, NULL, K, N, packed2, &reader), EIO);
    free(rbuf);
    k->quantize(wtype, x, K, L, scratch);
    k->rows(wtype, w, K, 0, N, scratch, L, y, N);
    k->rows_packed(wtype, packed, K, 0, N, scratch, L, yp, N);
    ck_assert_int_eq(memcmp(y, yp, (size_t)(L * N) * sizeof *y), 0);
    memset(yp, 0, (size_t)(L * N) * sizeof *yp);
    dllm_kernels_rows_packed_par(k, pool, wtype, packed, K, N, scratch, L, yp, N);
    ck_assert_int_eq(memcmp(y, yp, (size_t)(L * N) * sizeof *y), 0);
    /* a grouped product (MoE experts): rows 0..3 by W, rows 4..10 by a second matrix, each
     * part bit for bit its own product, from either layout */
    void *w2 = random_weights(wtype, N, K, RANDOM_SCALES_SIGNED, &seed);
    uint8_t *packed_w2 = dllm_alloc_lines(bytes);
    ck_assert(w2 && packed_w2);
    k->repack(wtype, w2, K, N, 0, N, packed_w2);
    const size_t arow = dllm_matmul_act_row_bytes(wtype, K);
    k->rows(wtype, w2, K, 0, N, (const uint8_t *)scratch + 4 * arow, L - 4, y + 4 * N, N);
    for (int layout = 0; layout < 2; layout++) {
        const struct dllm_kernels_part parts[] = {
            {.w = layout ? (const void *)packed : w, .row = 0, .L = 4, .y = yp},
            {.w = layout ? (const void *)packed_w2 : w2, .row = 4, .L = L - 4, .y = yp + 4 * N}};
        memset(yp, 0, (size_t)(L * N) * sizeof *yp);
        dllm_kernels_rows_parts_par(k, pool, wtype, layout == 1, K, N, parts, 2, scratch, N, NULL);
        ck_assert_msg(!memcmp(y, yp, (size_t)(L * N) * sizeof *y), "%s %s: grouped, layout %d",
                      name, what, layout);
        /* by blocks of columns, the parts of a block in order, each followed by the callback */
        struct block_calls calls = {.N = N};
        const struct dllm_kernels_then then = {.fn = note_block, .user = &calls};
        memset(yp, 0, (size_t)(L * N) * sizeof *yp);
        dllm_kernels_rows_parts_par(k, pool, wtype, layout == 1, K, N, parts, 2, scratch, N, &then);
        ck_assert_msg(!memcmp(y, yp, (size_t)(L * N) * sizeof *y), "%s %s: by blocks, layout %d",
                      name, what, layout);
        ck_assert_int_eq(calls.out_of_order, 0);
        for (int64_t n = 0; n < N; n++)
            ck_assert_msg(calls.seen[0][n] == 1 && calls.seen[1][n] == 1,
                          "column %lld: %d and %d calls", (long long)n, calls.seen[0][n],
                          calls.seen[1][n]);
    }
    free(packed_w2);
    free(w2);
    printf("%s %s: %zu bytes, products identical to the GGUF layout's, grouped too\n", name, what,
           bytes);
    dllm_threadpool_free(pool);
    free(yp);
    free(y);
    free(packed2);
    free(packed);
    free(scratch);
    free(x);
    free(w);
}
END_TEST

/* Rows [0, N) of W times the L activation rows at scratch, from W's repacked copy when packed. */
static void product_in(const struct dllm_kernels *k, bool packed, uint32_t wtype, const void *w,
                       const void *repacked, int64_t K, int64_t N, const uint8_t *scratch,
                       int64_t L, float *y)
{
    if (packed) {
        k->rows_packed(wtype, repacked, K, 0, N, scratch, L, y, N);
    } else {
        k->rows(wtype, w, K, 0, N, scratch, L, y, N);
    }
}

/*
 * A row's product is the same bits whichever tile computes it: the rows of a product are spread
 * over its tiles evenly, so a row lands in tiles of every height from 1 to the variant's (each
 * height compiled on its own, for every kind) and at every place in them. Rows [s, s + n) of the
 * first 13 for every start s < 4 and count n, in both layouts, against a product of 400 rows,
 * writing nothing past their rows; then every row of the 400 alone. The 400 rows make more than
 * FEW_TILES tiles of every kind and the parts at most 4, so where a kind packs fewer blocks at a
 * time for few tiles, the parts add up the blocks in other chunks; K = 5376 spans several chunks
 * either way, and makes 400 rows several blocks of rows for every kind that takes a long product
 * in blocks (rows_kind in matmul-simd.h: some 100 to 230 rows of activations this wide), whose
 * rows the single ones check. N = 40 ends in a panel that a two-panel variant takes alone.
 */
START_TEST(test_tile_heights)
{
    static const uint32_t types[] = {DLLM_TYPE_Q4_K, DLLM_TYPE_Q5_K, DLLM_TYPE_Q6_K, DLLM_TYPE_Q3_K,
                                     DLLM_TYPE_Q2_K, DLLM_TYPE_Q8_0, DLLM_TYPE_Q4_1, DLLM_TYPE_F16,
                                     DLLM_TYPE_BF16, DLLM_TYPE_F32};
    const int n_types = (int)(sizeof types / sizeof types[0]);
    const uint32_t wtype = types[_i % n_types];
    const char *name = simd_names[_i / n_types];
    char what[64];
    snprintf(what, sizeof what, "%s rows in tiles of any height", dllm_type_traits(wtype)->name);
    const struct dllm_kernels *k = variant_or_skip(name, what);
    if (k == NULL) {
        return;
    }
    const int64_t N = 40, K = 5376, L = 13, L_all = 400;
    uint64_t seed = 1313 + (uint64_t)_i;
    void *w = random_weights(wtype, N, K, RANDOM_SCALES_SIGNED, &seed);
    float *x = random_acts(L_all, K, &seed);
    uint8_t *scratch = malloc(dllm_matmul_scratch_bytes(wtype, K, L_all));
    const size_t bytes = k->repacked_bytes(wtype, K, N);
    uint8_t *packed = bytes > 0 ? dllm_alloc_lines(bytes) : NULL;
    float *all = malloc((size_t)(L_all * N) * sizeof *all),
          *part = malloc((size_t)(L * N) * sizeof *part);
    ck_assert(w && x && scratch && (bytes == 0 || packed) && all && part);
    if (packed != NULL) {
        k->repack(wtype, w, K, N, 0, N, packed);
    }
    k->quantize(wtype, x, K, L_all, scratch);
    const size_t arow = dllm_matmul_act_row_bytes(wtype, K);
    for (int layout = 0; layout < (packed != NULL ? 2 : 1); layout++) {
        product_in(k, layout, wtype, w, packed, K, N, scratch, L_all, all);
        for (int64_t s = 0; s < 4; s++) {
            for (int64_t n = 1; s + n <= L; n++) {
                memset(part, 0xa5, (size_t)(L * N) * sizeof *part);
                product_in(k, layout, wtype, w, packed, K, N, scratch + s * arow, n, part);
                ck_assert_msg(!memcmp(part, all + s * N, (size_t)(n * N) * sizeof *part),
                              "%s %s: rows %lld..%lld, layout %d", name, what, (long long)s,
                              (long long)(s + n - 1), layout);
                /* and nothing past its rows */
                const uint8_t *past = (const uint8_t *)(part + n * N);
                for (size_t b = 0; b < (size_t)((L - n) * N) * sizeof *part; b++)
                    ck_assert_msg(past[b] == 0xa5, "%s %s: %lld rows wrote past them", name, what,
                                  (long long)n);
            }
        }
        for (int64_t l = 0; l < L_all; l++) {
            product_in(k, layout, wtype, w, packed, K, N, scratch + l * arow, 1, part);
            ck_assert_msg(!memcmp(part, all + l * N, (size_t)N * sizeof *part),
                          "%s %s: row %lld alone, layout %d", name, what, (long long)l, layout);
        }
    }
    printf("%s %s: identical\n", name, what);
    free(part);
    free(all);
    free(packed);
    free(scratch);
    free(x);
    free(w);
}
END_TEST

/* ---- float16 conversions ---------------------------------------------------------------- */

/* IEEE binary16 encodings checked by hand: exact both ways. */
static const struct {
    float f;
    uint16_t h;
} fp16_exact[] = {
    {0.0f, 0x0000},
    {-0.0f, 0x8000},
    {1.0f, 0x3c00},
    {-2.0f, 0xc000},
    {0.5f, 0x3800},
    {3.140625f, 0x4248},
    {1.0f + 0x1p-10f, 0x3c01},
    {65504.0f, 0x7bff},
    {0x1p-14f, 0x0400},
    {0x1p-24f, 0x0001},
    {-0x1p-24f, 0x8001},
    {1023 * 0x1p-24f, 0x03ff},
    {INFINITY, 0x7c00},
    {-INFINITY, 0xfc00},
};

/* Floats that round (to nearest, ties to even), with their binary16 by hand. */
static const struct {
    float f;
    uint16_t h;
} fp16_rounded[] = {
    {0.1f, 0x2e66},                       /* 1.6 * 2^-4: mantissa 614.4 -> 614 */
    {65519.99609375f, 0x7bff},            /* just below the half-way point to 2^16 */
    {65520.0f, 0x7c00},                   /* half way from 65504 to 2^16: overflow to inf */
    {-1e6f, 0xfc00},                      /* overflow */
    {1.0f + 0x1p-11f, 0x3c00},            /* a tie: to the even 0x3c00 */
    {1.0f + 3 * 0x1p-11f, 0x3c02},        /* a tie: to the even 0x3c02 */
    {1.0f + 0x1p-11f + 0x1p-20f, 0x3c01}, /* above the tie */
    {0x1p-25f, 0x0000},                   /* half the smallest subnormal: a tie to 0 */
    {-0x1p-25f, 0x8000},                  /* the same, the sign kept */
    {1.5f * 0x1p-25f, 0x0001},            /* 0.75 of a subnormal unit */
    {3 * 0x1p-25f, 0x0002},               /* 1.5 units: a tie to the even 2 */
    {0x1p-26f, 0x0000},                   /* below half a unit */
    {0x1p-14f - 0x1p-25f, 0x0400},        /* a tie between 0x03ff and 0x0400: the normal */
};

/* The reference against the encodings above; NaN both ways. */
START_TEST(test_fp16_ieee)
{
    dllm_fp16 h;
    float f;
    for (size_t i = 0; i < sizeof fp16_exact / sizeof fp16_exact[0]; i++) {
        dllm_fp16_from_f32_ref(&fp16_exact[i].f, 1, &h);
        ck_assert_msg(h == fp16_exact[i].h, "%a -> 0x%04x, not 0x%04x", (double)fp16_exact[i].f, h,
                      fp16_exact[i].h);
        dllm_fp16_to_f32_ref(&fp16_exact[i].h, 1, &f);
        ck_assert_msg(memcmp(&f, &fp16_exact[i].f, sizeof f) == 0, "0x%04x -> %a, not %a",
                      fp16_exact[i].h, (double)f, (double)fp16_exact[i].f);
    }
    for (size_t i = 0; i < sizeof fp16_rounded / sizeof fp16_rounded[0]; i++) {
        dllm_fp16_from_f32_ref(&fp16_rounded[i].f, 1, &h);
        ck_assert_msg(h == fp16_rounded[i].h, "%a -> 0x%04x, not 0x%04x", (double)fp16_rounded[i].f,
                      h, fp16_rounded[i].h);
    }
    const float nan = NAN;
    dllm_fp16_from_f32_ref(&nan, 1, &h);
    ck_assert_msg((h & 0x7e00) == 0x7e00, "NaN -> 0x%04x, not a quiet NaN", h);
    const dllm_fp16 qnan = 0x7e00;
    dllm_fp16_to_f32_ref(&qnan, 1, &f);
    ck_assert(isnan(f));
}
END_TEST

/*
 * Variant _i (after the reference) against the reference, bit for bit: every binary16 to
 * float (a signalling NaN may come back quiet), and to binary16 every half's value, each
 * half-way point between neighbouring halves and the floats either side of it, and random
 * bit patterns (NaNs, infinities and subnormals among them); lengths that leave a tail.
 */
START_TEST(test_fp16_variants)
{
    size_t n_all;
    const struct dllm_fp16_kernels *v = &dllm_fp16_all(&n_all)[1 + _i];
    ck_assert_uint_lt(1 + (size_t)_i, n_all);
    if (!dllm_fp16_usable(v)) {
        printf("SKIP: fp16 %s: this CPU lacks instructions the variant needs\n", v->name);
        return;
    }
    enum { HALVES = 1 << 16, RANDOM = 1 << 18, N = 4 * HALVES + RANDOM + 7 };
    dllm_fp16 *h = malloc(N * sizeof *h), *h_ref = malloc(N * sizeof *h_ref);
    float *x = malloc(N * sizeof *x), *f = malloc(HALVES * sizeof *f);
    float *f_ref = malloc(HALVES * sizeof *f_ref);
    ck_assert(h && h_ref && x && f && f_ref);
    for (int i = 0; i < HALVES; i++)
        h[i] = (dllm_fp16)i;
    for (int64_t len = HALVES - 3; len <= HALVES; len += 3) {
        v->to_f32(h, len, f);
        dllm_fp16_to_f32_ref(h, len, f_ref);
        int64_t bad = -1;
        for (int64_t i = 0; i < len && bad < 0; i++) {
            const bool snan = (i & 0x7c00) == 0x7c00 && (i & 0x3ff) && !(i & 0x200);
            const uint32_t quiet = snan ? 0x400000 : 0;
            if ((dllm_f32_bits(f[i]) | quiet) != (dllm_f32_bits(f_ref[i]) | quiet))
                bad = i;
        }
        ck_assert_msg(bad < 0, "%s: 0x%04x -> 0x%08x, the reference 0x%08x", v->name, (unsigned)bad,
                      dllm_f32_bits(f[bad]), dllm_f32_bits(f_ref[bad]));
    }
    int64_t n = 0;
    for (int i = 0; i < HALVES; i++) {
        x[n++] = f_ref[i];
        if ((i & 0x7c00) == 0x7c00)
            continue; /* inf and NaN */
        /* half way to the next half of the same sign, 2^16 past the largest */
        const double next = (i & 0x7fff) == 0x7bff ? copysign(65536.0, f_ref[i]) : f_ref[i + 1];
        const float mid = (float)(((double)f_ref[i] + next) / 2);
        x[n] = mid;
        x[n + 1] = dllm_bits_f32(dllm_f32_bits(mid) - 1);
        x[n + 2] = dllm_bits_f32(dllm_f32_bits(mid) + 1);
        n += 3;
    }
    uint64_t seed = 16;
    while (n < N)
        x[n++] = dllm_bits_f32((uint32_t)rng_next(&seed));
    for (int64_t len = N - 15; len <= N; len += 5) {
        v->from_f32(x, len, h);
        dllm_fp16_from_f32_ref(x, len, h_ref);
        int64_t bad = -1;
        for (int64_t i = 0; i < len && bad < 0; i++)
            bad = h[i] != h_ref[i] ? i : -1;
        ck_assert_msg(bad < 0, "%s: 0x%08x -> 0x%04x, the reference 0x%04x", v->name,
                      dllm_f32_bits(x[bad]), h[bad], h_ref[bad]);
    }
    free(h);
    free(h_ref);
    free(x);
    free(f);
    free(f_ref);
}
END_TEST

/* Each matrix-kernel variant gets the float16 variant of its instruction set. */
START_TEST(test_fp16_for)
{
    static const char *const pairs[][2] = {
        {"ref", "ref"}, {"avx2", "avx2"}, {"avxvnni", "avx2"}, {"avx512", "avx512"}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        ck_assert_str_eq(dllm_fp16_for(variant(pairs[i][0]))->name, pairs[i][1]);
}
END_TEST

static Suite *kernels_suite(void)
{
    Suite *s = suite_create("kernels");
    TCase *tc = tcase_create("select");
    tcase_add_test(tc, test_features);
    tcase_add_test(tc, test_select);
    tcase_add_test(tc, test_select_name);
    suite_add_tcase(s, tc);

    tc = tcase_create("quantize");
    tcase_add_loop_test(tc, test_quantize, 0, (int)(N_SIMD * N_QUANTIZE_CASES));
    suite_add_tcase(s, tc);

    tc = tcase_create("rows");
    tcase_add_loop_test(tc, test_rows, 0, (int)(N_SIMD * N_PRODUCT_CASES));
    tcase_add_loop_test(tc, test_rows_extremes, 0, N_SIMD * N_EXTREME_TYPES);
    tcase_add_loop_test(tc, test_rows_edges, 0, N_SIMD * 5);
    tcase_add_loop_test(tc, test_par, 0, 3 * (1 + N_SIMD));
    tcase_add_loop_test(tc, test_repacked, 0, N_SIMD * 11);
    tcase_add_loop_test(tc, test_tile_heights, 0, N_SIMD * 10);
    suite_add_tcase(s, tc);

    tc = tcase_create("fp16");
    tcase_add_test(tc, test_fp16_ieee);
    tcase_add_loop_test(tc, test_fp16_variants, 0, 2);
    tcase_add_test(tc, test_fp16_for);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return test_run_suite(kernels_suite());
}
