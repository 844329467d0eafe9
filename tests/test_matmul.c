/*
 * Reference matrix kernels: activation quantisers against their definitions (ggml-quants.c
 * quantize_row_q8_0, quantize_row_q8_K), and y = x · W^T against float64 products of the weights
 * decoded by quant.c.
 */
#include "fixtures.h"
#include "kernels/matmul.h"
#include "gguf/quant.h"
#include "random_data.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- deterministic random data ---------------------------------------------------------- */

/* L rows of K normal activations; row l is scaled by 4^(l-2) so rows differ in magnitude. */
static float *random_acts(int64_t L, int64_t K, uint64_t *s)
{
    float *x = malloc((size_t)(L * K) * sizeof *x);
    ck_assert_ptr_nonnull(x);
    for (int64_t l = 0; l < L; l++) {
        for (int64_t k = 0; k < K; k++) {
            x[l * K + k] = (float)(ldexp(rng_gauss(s), 2 * ((int)l - 2)));
        }
    }
    return x;
}

/* Decodes n rows of K elements of type from src into a malloc'd float array. */
static float *decode_rows(uint32_t type, const void *src, int64_t n, int64_t K)
{
    const struct dllm_type_traits *tr = dllm_type_traits(type);
    ck_assert_ptr_nonnull(tr);
    ck_assert_msg(tr->decode != NULL, "quant.c has no decoder for %s", tr->name);
    float *dst = malloc((size_t)(n * K) * sizeof *dst);
    ck_assert_ptr_nonnull(dst);
    tr->decode(src, dst, n * K);
    return dst;
}

/*
 * The activations in scratch as floats: Q8_K128 is d[e / 128] * qs[e] and Q8_0U d * (u[e] - 128)
 * (quant.h; they are no GGML types, so quant.c has no decoders for them); the other formats
 * use quant.c's decoders.
 */
static float *dequantise_acts(enum dllm_act_format act, const void *scratch, int64_t L, int64_t K)
{
    switch (act) {
    case DLLM_ACT_F16: return decode_rows(DLLM_TYPE_F16, scratch, L, K);
    case DLLM_ACT_BF16: return decode_rows(DLLM_TYPE_BF16, scratch, L, K);
    case DLLM_ACT_F32: return decode_rows(DLLM_TYPE_F32, scratch, L, K);
    case DLLM_ACT_Q8_0:
    case DLLM_ACT_Q8_K128: break;
    }
    float *x = malloc((size_t)(L * K) * sizeof *x);
    ck_assert_ptr_nonnull(x);
    const struct block_q8_K128 *k = scratch;
    const struct block_q8_0u *q = scratch;
    for (int64_t i = 0; i < L * K; i++) {
        x[i] = act == DLLM_ACT_Q8_0 ? q[i / QK8_0].d * (float)(q[i / QK8_0].u[i % QK8_0] - 128)
                                    : k[i / QK_K].d[i % QK_K / QK8_K128] * k[i / QK_K].qs[i % QK_K];
    }
    return x;
}

/* ---- supported types -------------------------------------------------------------------- */

/* The weight types the kernels cover and the activation format each takes (matmul.h). */
static const struct {
    uint32_t wtype;
    enum dllm_act_format act;
} supported[] = {
    {DLLM_TYPE_Q4_K, DLLM_ACT_Q8_K128}, {DLLM_TYPE_Q5_K, DLLM_ACT_Q8_K128},
    {DLLM_TYPE_Q6_K, DLLM_ACT_Q8_K128}, {DLLM_TYPE_Q3_K, DLLM_ACT_Q8_K128},
    {DLLM_TYPE_Q2_K, DLLM_ACT_Q8_K128}, {DLLM_TYPE_Q8_0, DLLM_ACT_Q8_0},
    {DLLM_TYPE_Q4_0, DLLM_ACT_Q8_0},    {DLLM_TYPE_Q4_1, DLLM_ACT_Q8_0},
    {DLLM_TYPE_Q5_0, DLLM_ACT_Q8_0},    {DLLM_TYPE_Q5_1, DLLM_ACT_Q8_0},
    {DLLM_TYPE_F16, DLLM_ACT_F16},      {DLLM_TYPE_BF16, DLLM_ACT_BF16},
    {DLLM_TYPE_F32, DLLM_ACT_F32},
};
#define N_SUPPORTED (sizeof supported / sizeof supported[0])

START_TEST(test_supported_set)
{
    for (uint32_t t = 0; t < DLLM_TYPE_COUNT + 4; t++) {
        bool expect = false;
        for (size_t i = 0; i < N_SUPPORTED; i++) {
            expect = expect || supported[i].wtype == t;
        }
        ck_assert_msg(dllm_matmul_supported(t) == expect, "type %u", t);
    }
    for (size_t i = 0; i < N_SUPPORTED; i++) {
        ck_assert_int_eq(dllm_matmul_act_format(supported[i].wtype), supported[i].act);
    }
}
END_TEST

/* The list names every supported type once, separated by ", ", and nothing else. */
START_TEST(test_supported_list)
{
    char *list = strdup(dllm_matmul_supported_list());
    ck_assert_ptr_nonnull(list);
    size_t count = 0;
    for (char *save = NULL, *name = strtok_r(list, ", ", &save); name != NULL;
         name = strtok_r(NULL, ", ", &save)) {
        bool found = false;
        for (size_t i = 0; i < N_SUPPORTED; i++) {
            found = found || strcmp(dllm_type_traits(supported[i].wtype)->name, name) == 0;
        }
        ck_assert_msg(found, "listed type %s is not supported", name);
        count++;
    }
    ck_assert_uint_eq(count, N_SUPPORTED);
    free(list);
}
END_TEST

/* Row and scratch sizes from the block layouts: Q8_K128 376 bytes per 256, Q8_0U 40 per 32. */
START_TEST(test_scratch_bytes)
{
    ck_assert_uint_eq(dllm_matmul_act_row_bytes(DLLM_TYPE_Q5_K, 256), 376);
    ck_assert_uint_eq(dllm_matmul_act_row_bytes(DLLM_TYPE_Q4_0, 32), 40);
    ck_assert_uint_eq(dllm_matmul_act_row_bytes(DLLM_TYPE_F16, 32), 64);
    ck_assert_uint_eq(dllm_matmul_act_row_bytes(DLLM_TYPE_F32, 32), 128);
    ck_assert_uint_eq(dllm_matmul_scratch_bytes(DLLM_TYPE_Q4_K, 4096, 3), 3 * 16 * 376);
    ck_assert_uint_eq(dllm_matmul_scratch_bytes(DLLM_TYPE_Q6_K, 12288, 1), 48 * 376);
    ck_assert_uint_eq(dllm_matmul_scratch_bytes(DLLM_TYPE_Q8_0, 4096, 2), 2 * 128 * 40);
    ck_assert_uint_eq(dllm_matmul_scratch_bytes(DLLM_TYPE_Q5_1, 64, 5), 5 * 2 * 40);
    ck_assert_uint_eq(dllm_matmul_scratch_bytes(DLLM_TYPE_F16, 4096, 7), 7 * 4096 * 2);
    ck_assert_uint_eq(dllm_matmul_scratch_bytes(DLLM_TYPE_BF16, 3584, 2), 2 * 3584 * 2);
    ck_assert_uint_eq(dllm_matmul_scratch_bytes(DLLM_TYPE_F32, 4096, 3), 3 * 4096 * 4);
}
END_TEST

/* ---- activation quantisers -------------------------------------------------------------- */

/*
 * Rows of 4 blocks of 256 that exercise the corner cases: normal values, an all-zero block, a
 * block whose largest magnitude is negative, and a block with one non-zero element.
 */
static float *corner_acts(int64_t K, uint64_t *s)
{
    float *x = random_acts(1, K, s);
    memset(x + 256, 0, 256 * sizeof *x);
    x[512 + 17] = -40.0f;
    memset(x + 768, 0, 256 * sizeof *x);
    x[768 + 200] = 0.375f;
    return x;
}

/*
 * Q8_K128: per 128 elements h the dequantised d[h]*q lies within |d[h]|/2 of x, d[h] is the
 * signed largest magnitude over -127 and that element maps to -127, an all-zero 128 has d[h] = 0
 * and q = 0 (both of block 1, and one of block 3); sums are the 32-element sums of q, sums16
 * the 16-element ones and q6off -32 times those.
 */
START_TEST(test_quantize_q8_K128)
{
    const int64_t K = 1024;
    uint64_t seed = 11;
    float *x = corner_acts(K, &seed);
    struct block_q8_K128 y[4];
    ck_assert_uint_eq(dllm_matmul_scratch_bytes(DLLM_TYPE_Q4_K, K, 1), sizeof y);
    dllm_matmul_quantize_ref(DLLM_TYPE_Q4_K, x, K, 1, y);
    int zero_groups = 0;
    for (int b = 0; b < 4; b++) {
        for (int h = 0; h < 2; h++) {
            const float *xh = x + 256 * b + 128 * h;
            const int8_t *q = y[b].qs + 128 * h;
            const float d = y[b].d[h];
            float amax = 0.0f, max = 0.0f;
            for (int e = 0; e < 128; e++) {
                if (fabsf(xh[e]) > amax) {
                    amax = fabsf(xh[e]);
                    max = xh[e];
                }
            }
            if (amax == 0.0f) {
                zero_groups++;
                ck_assert_float_eq(d, 0.0f);
            } else {
                ck_assert_float_eq_tol(d, max / -127.0f, 1e-6f * amax / 127.0f);
            }
            for (int e = 0; e < 128; e++) {
                ck_assert_int_ge(q[e], -127);
                ck_assert_float_le(fabsf(xh[e] - d * q[e]), fabsf(d) * 0.50001f);
                if (xh[e] == max && amax != 0.0f) {
                    ck_assert_int_eq(q[e], -127);
                }
            }
        }
        for (int g = 0; g < 16; g++) {
            int sum = 0;
            for (int e = 0; e < 16; e++) {
                sum += y[b].qs[16 * g + e];
            }
            ck_assert_int_eq(y[b].sums16[g], sum);
            ck_assert_int_eq(y[b].q6off[g], -32 * sum);
        }
        for (int j = 0; j < 8; j++) {
            int sum = 0;
            for (int e = 0; e < 32; e++) {
                sum += y[b].qs[32 * j + e];
            }
            ck_assert_int_eq(y[b].sums[j], sum);
        }
    }
    ck_assert_int_eq(zero_groups, 2 + 1);
    free(x);
}
END_TEST

/*
 * Round half to even: with max = 127 the step d[0] is -1 and q = round_half_even(-x); the later
 * -127 of equal magnitude maps to +127. The other 128 is zero.
 */
START_TEST(test_quantize_q8_K128_ties)
{
    float x[256] = {0};
    struct block_q8_K128 y;
    x[0] = 127.0f;
    x[1] = 2.5f;
    x[2] = 3.5f;
    x[3] = -0.5f;
    x[4] = 126.5f;
    x[5] = -127.0f;
    x[100] = 1.5f;
    dllm_matmul_quantize_ref(DLLM_TYPE_Q6_K, x, 256, 1, &y);
    ck_assert_float_eq(y.d[0], -1.0f);
    ck_assert_float_eq(y.d[1], 0.0f);
    /* q = round_half_even(-x) */
    ck_assert_int_eq(y.qs[0], -127);
    ck_assert_int_eq(y.qs[1], -2);
    ck_assert_int_eq(y.qs[2], -4);
    ck_assert_int_eq(y.qs[3], 0);
    ck_assert_int_eq(y.qs[4], -126);
    ck_assert_int_eq(y.qs[5], 127);
    ck_assert_int_eq(y.qs[100], -2);
    ck_assert_int_eq(y.sums[0], -127 - 2 - 4 - 126 + 127);
    ck_assert_int_eq(y.sums16[0], -127 - 2 - 4 - 126 + 127);
    ck_assert_int_eq(y.q6off[0], -32 * (-127 - 2 - 4 - 126 + 127));
    ck_assert_int_eq(y.sums[3], -2);
    ck_assert_int_eq(y.sums16[6], -2);
    ck_assert_int_eq(y.q6off[6], 64);
    for (int j = 4; j < 8; j++) {
        ck_assert_int_eq(y.sums[j], 0);
    }
}
END_TEST

/*
 * Q8_0 (as struct block_q8_0u): per 32, d = fp16(amax/127) (a value fp16 holds) and q =
 * round(x / (amax/127)) stored as u = q + 128, so d*q lies within (1/2 + 127 * 2^-11) * d of x
 * (the second term is fp16's rounding of d); dsum = d * the sum of q.
 */
START_TEST(test_quantize_q8_0)
{
    const int64_t K = 1024;
    uint64_t seed = 12;
    float *x = corner_acts(K, &seed);
    struct block_q8_0u y[32];
    ck_assert_uint_eq(dllm_matmul_scratch_bytes(DLLM_TYPE_Q8_0, K, 1), sizeof y);
    dllm_matmul_quantize_ref(DLLM_TYPE_Q4_1, x, K, 1, y);
    for (int b = 0; b < 32; b++) {
        const float *xb = x + 32 * b;
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) {
            amax = fmaxf(amax, fabsf(xb[j]));
        }
        const float d = y[b].d;
        ck_assert_float_eq(dllm_fp16_to_f32(dllm_f32_to_fp16(d)), d);
        ck_assert_float_le(fabsf(d - amax / 127.0f), amax / 127.0f * 0x1p-11f);
        int32_t sum = 0;
        for (int j = 0; j < 32; j++) {
            const int q = y[b].u[j] - 128;
            ck_assert_int_ge(q, -127);
            ck_assert_float_le(fabsf(xb[j] - d * (float)q), (0.5f + 127 * 0x1p-11f) * d);
            if (amax == 0.0f) {
                ck_assert_int_eq(q, 0);
            }
            sum += q;
        }
        ck_assert_float_eq(y[b].dsum, d * (float)sum);
    }
    ck_assert_float_eq(y[8].d, 0.0f);
    free(x);
}
END_TEST

/* F16 and BF16 activations are x rounded to the format; F32 activations are x itself. */
START_TEST(test_quantize_float)
{
    const int64_t K = 256, L = 3;
    uint64_t seed = 13;
    float *x = random_acts(L, K, &seed);
    void *scratch = malloc(dllm_matmul_scratch_bytes(DLLM_TYPE_F32, K, L));
    ck_assert_ptr_nonnull(scratch);
    const struct {
        uint32_t type;
        float rel; /* unit roundoff */
        float abs; /* half the smallest subnormal, for tiny x */
    } cases[] = {{DLLM_TYPE_F16, 0x1p-11f, 0x1p-25f},
                 {DLLM_TYPE_BF16, 0x1p-8f, 0.0f},
                 {DLLM_TYPE_F32, 0.0f, 0.0f}};
    for (size_t c = 0; c < 3; c++) {
        dllm_matmul_quantize_ref(cases[c].type, x, K, L, scratch);
        float *back = decode_rows(cases[c].type, scratch, L, K);
        for (int64_t i = 0; i < L * K; i++) {
            ck_assert_float_le(fabsf(back[i] - x[i]), cases[c].rel * fabsf(x[i]) + cases[c].abs);
        }
        free(back);
    }
    free(scratch);
    free(x);
}
END_TEST

/* ---- products --------------------------------------------------------------------------- */

/*
 * Tolerances on the relative L2 error of one output row (N outputs) against float64 x.
 * Q8_0 and Q8_K128: each activation is rounded to a step |d| = amax/127 with amax the largest
 * magnitude of its 32 (128); the error is uniform in ±|d|/2, rms |d|/sqrt(12). amax of 32
 * normal values is about 2.1 sigma (of 128, 2.9), so the relative rms error per element, and
 * that of a product with independent weights, is r = 2.1/(127*sqrt(12)) = 4.8e-3 (6.6e-3;
 * Q8_0's fp16 scale adds 2^-11 relative at most). F16 / BF16: x rounded with unit roundoff u,
 * r about u/sqrt(3). With 8 outputs a row's squared error and squared norm are both about
 * chi-square with 8 degrees of freedom, so their ratio squared is F(8, 8) distributed: about 1
 * typically, 12 at the 99.9th percentile. Each tolerance is 4 r (so 16 in F), rounded up,
 * except Q8_K128's: the random Q4_K and Q5_K weights have a mean far from 0 (their mins), common
 * to all N outputs, so fewer effective degrees of freedom and a heavier tail; over 100 other
 * seed sets the worst K-quant row was 0.0248 (0.0246 with a scale per 32, 0.0291 with the
 * per-256 Q8_K activations), hence 3e-2, about 4.5 r.
 * F32: float products summed in double, a few float roundings.
 */
#define TOL_Q8_K128 3e-2
#define TOL_Q8_0    2e-2
#define TOL_F16     0x1p-10
#define TOL_BF16    0x1p-7
#define TOL_F32     1e-6

/*
 * Tolerance against float64 products of the decoded weights and the dequantised activations:
 * the integer parts are exact, leaving float roundings of the block scales and of the sum of
 * up to 592 contributions of 32-element blocks.
 */
#define TOL_ARITH 1e-5

static const struct product_case {
    uint32_t wtype;
    int64_t K, L;
    double tol;
} product_cases[] = {
    {DLLM_TYPE_Q4_K, 4096, 3, TOL_Q8_K128},  {DLLM_TYPE_Q4_K, 12288, 7, TOL_Q8_K128},
    {DLLM_TYPE_Q4_K, 3584, 4, TOL_Q8_K128},  {DLLM_TYPE_Q5_K, 4096, 5, TOL_Q8_K128},
    {DLLM_TYPE_Q5_K, 12288, 3, TOL_Q8_K128}, {DLLM_TYPE_Q6_K, 4096, 7, TOL_Q8_K128},
    {DLLM_TYPE_Q6_K, 12288, 4, TOL_Q8_K128}, {DLLM_TYPE_Q6_K, 18944, 3, TOL_Q8_K128},
    {DLLM_TYPE_Q8_0, 4096, 3, TOL_Q8_0},     {DLLM_TYPE_Q8_0, 12288, 6, TOL_Q8_0},
    {DLLM_TYPE_Q4_0, 4096, 4, TOL_Q8_0},     {DLLM_TYPE_Q4_1, 4096, 5, TOL_Q8_0},
    {DLLM_TYPE_Q5_0, 4096, 6, TOL_Q8_0},     {DLLM_TYPE_Q5_1, 4096, 7, TOL_Q8_0},
    {DLLM_TYPE_F16, 4096, 3, TOL_F16},       {DLLM_TYPE_F16, 12288, 4, TOL_F16},
    {DLLM_TYPE_BF16, 4096, 5, TOL_BF16},     {DLLM_TYPE_BF16, 12288, 3, TOL_BF16},
    {DLLM_TYPE_F32, 4096, 6, TOL_F32},       {DLLM_TYPE_F32, 12288, 7, TOL_F32},
    {DLLM_TYPE_Q3_K, 4096, 5, TOL_Q8_K128},  {DLLM_TYPE_Q3_K, 12288, 3, TOL_Q8_K128},
    {DLLM_TYPE_Q2_K, 4096, 6, TOL_Q8_K128},  {DLLM_TYPE_Q2_K, 18944, 3, TOL_Q8_K128},
};

/* The largest relative L2 error over rows l of y[l*ldy + n] against ref[l*N + n], n < N. */
static double max_row_error(const float *y, int64_t ldy, const double *ref, int64_t L, int64_t N)
{
    double worst = 0.0;
    for (int64_t l = 0; l < L; l++) {
        double num = 0.0, den = 0.0;
        for (int64_t n = 0; n < N; n++) {
            double diff = y[l * ldy + n] - ref[l * N + n];
            num += diff * diff;
            den += ref[l * N + n] * ref[l * N + n];
        }
        ck_assert(den > 0.0);
        worst = fmax(worst, sqrt(num / den));
    }
    return worst;
}

/* ref[l*N + n] = sum_k w[n*K + k] * x[l*K + k] in float64. */
static void product_f64(const float *w, const float *x, int64_t N, int64_t K, int64_t L,
                        double *ref)
{
    for (int64_t l = 0; l < L; l++) {
        for (int64_t n = 0; n < N; n++) {
            double acc = 0.0;
            for (int64_t k = 0; k < K; k++) {
                acc += (double)w[n * K + k] * x[l * K + k];
            }
            ref[l * N + n] = acc;
        }
    }
}

/*
 * y = x · W^T for N = 8 random weight rows, computed as two row ranges into a y with padding
 * columns, against float64 products with x (the named tolerance) and with the dequantised
 * activations (TOL_ARITH). The padding must stay untouched.
 */
START_TEST(test_product)
{
    const struct product_case *pc = &product_cases[_i];
    const int64_t N = 8, ldy = N + 3, K = pc->K, L = pc->L;
    uint64_t seed = 1000 + (uint64_t)_i;
    void *w = random_weights(pc->wtype, N, K, RANDOM_SCALES_POSITIVE, &seed);
    float *x = random_acts(L, K, &seed);
    void *scratch = malloc(dllm_matmul_scratch_bytes(pc->wtype, K, L));
    float *y = malloc((size_t)(L * ldy) * sizeof *y);
    double *ref = malloc((size_t)(L * N) * sizeof *ref);
    ck_assert(scratch != NULL && y != NULL && ref != NULL);
    for (int64_t i = 0; i < L * ldy; i++) {
        y[i] = -1234.5f;
    }

    dllm_matmul_quantize_ref(pc->wtype, x, K, L, scratch);
    dllm_matmul_rows_ref(pc->wtype, w, K, 3, N, scratch, L, y, ldy);
    dllm_matmul_rows_ref(pc->wtype, w, K, 0, 3, scratch, L, y, ldy);
    for (int64_t l = 0; l < L; l++) {
        for (int64_t n = N; n < ldy; n++) {
            ck_assert_float_eq(y[l * ldy + n], -1234.5f);
        }
    }

    float *wf = decode_rows(pc->wtype, w, N, K);
    product_f64(wf, x, N, K, L, ref);
    const double err_x = max_row_error(y, ldy, ref, L, N);
    float *xq = dequantise_acts(dllm_matmul_act_format(pc->wtype), scratch, L, K);
    product_f64(wf, xq, N, K, L, ref);
    const double err_arith = max_row_error(y, ldy, ref, L, N);

    printf("%-4s K=%-5lld L=%lld: rel L2 error %.3g vs float64 x (tol %.3g), %.3g vs "
           "dequantised x (tol %.3g)\n",
           dllm_type_traits(pc->wtype)->name, (long long)K, (long long)L, err_x, pc->tol, err_arith,
           TOL_ARITH);
    ck_assert_double_le(err_x, pc->tol);
    ck_assert_double_le(err_arith, TOL_ARITH);

    free(xq);
    free(wf);
    free(ref);
    free(y);
    free(scratch);
    free(x);
    free(w);
}
END_TEST

/* A zero activation row gives exact zeros; L = 0 and empty row ranges write nothing. */
START_TEST(test_product_zero)
{
    const uint32_t wtype = supported[_i].wtype;
    const int64_t N = 4, K = 512, L = 2;
    uint64_t seed = 77;
    void *w = random_weights(wtype, N, K, RANDOM_SCALES_POSITIVE, &seed);
    float x[2 * 512] = {0};
    for (int64_t k = 0; k < K; k++) {
        x[K + k] = (float)rng_gauss(&seed);
    }
    void *scratch = malloc(dllm_matmul_scratch_bytes(wtype, K, L));
    ck_assert_ptr_nonnull(scratch);
    float y[2 * 4];
    for (int i = 0; i < 8; i++) {
        y[i] = 7.0f;
    }
    dllm_matmul_quantize_ref(wtype, x, K, L, scratch);
    dllm_matmul_rows_ref(wtype, w, K, 2, 2, scratch, L, y, N);
    dllm_matmul_rows_ref(wtype, w, K, 0, N, scratch, 0, y, N);
    for (int i = 0; i < 8; i++) {
        ck_assert_float_eq(y[i], 7.0f);
    }
    dllm_matmul_rows_ref(wtype, w, K, 0, N, scratch, L, y, N);
    for (int n = 0; n < N; n++) {
        ck_assert_float_eq(y[n], 0.0f);
        ck_assert(y[N + n] != 7.0f);
    }
    free(scratch);
    free(w);
}
END_TEST

static Suite *matmul_suite(void)
{
    Suite *s = suite_create("matmul");
    TCase *tc = tcase_create("types");
    tcase_add_test(tc, test_supported_set);
    tcase_add_test(tc, test_supported_list);
    tcase_add_test(tc, test_scratch_bytes);
    suite_add_tcase(s, tc);

    tc = tcase_create("quantize");
    tcase_add_test(tc, test_quantize_q8_K128);
    tcase_add_test(tc, test_quantize_q8_K128_ties);
    tcase_add_test(tc, test_quantize_q8_0);
    tcase_add_test(tc, test_quantize_float);
    suite_add_tcase(s, tc);

    tc = tcase_create("product");
    tcase_add_loop_test(tc, test_product, 0, (int)(sizeof product_cases / sizeof product_cases[0]));
    tcase_add_loop_test(tc, test_product_zero, 0, (int)N_SUPPORTED);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return test_run_suite(matmul_suite());
}
