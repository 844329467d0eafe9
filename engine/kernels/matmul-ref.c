/*
 * Scalar reference matrix products: the specification the SIMD variants are tested against.
 * Activations for 32-element weight types are quantised as llama.cpp's CPU backend does
 * (ggml-quants.c quantize_row_q8_0 and quantize_row_q8_K); those for K-quants take llama.cpp's Q8_K
 * rule per 128 elements instead of per 256 (Q8_K128, see matmul.h for why).
 */
#include "kernels/matmul.h"
#include "gguf/quant.h"

#include <assert.h>
#include <math.h>
#include <string.h>

/*
 * One K-quant super-block unpacked to integers. Element e of the block has the value
 *   d * sc[s] * (q[e] - off) - dmin * mn[s],   s = e / sub,
 * which covers Q4_K and Q5_K (sub = 32, off = 0), Q6_K (sub = 16, off = 32, no min), Q3_K
 * (sub = 16, off = 4, no min) and Q2_K (sub = 16, off = 0).
 */
struct kblock {
    uint8_t q[QK_K];
    int32_t sc[QK_K / 16];
    int32_t mn[QK_K / 16];
    int sub;
    int off;
    float d, dmin;
};

/* One 32-element block unpacked to integers: element e has the value d * q[e] + m. */
struct qblock {
    int8_t q[QK8_0];
    float d, m;
};

enum matmul_kind { KIND_K, KIND_32, KIND_FLOAT };

/* How one weight type multiplies: its activation format and how to read its blocks. */
struct matmul_type {
    uint32_t wtype;
    enum dllm_act_format act;
    enum matmul_kind kind;
    void (*unpack_k)(const void *blk, struct kblock *out);  /* KIND_K */
    void (*unpack_32)(const void *blk, struct qblock *out); /* KIND_32 */
    float (*elem)(const void *row, int64_t i);              /* KIND_FLOAT: weights and x alike */
};

/* Unpacks the 6-bit scales and mins of a Q4_K or Q5_K block (get_scale_min_k4, C.4). */
static void unpack_scales_k4(const uint8_t s[12], struct kblock *out)
{
    uint8_t sc[8], mn[8];
    dllm_k4_scales_mins(s, sc, mn);
    for (int j = 0; j < 8; j++) {
        out->sc[j] = sc[j];
        out->mn[j] = mn[j];
    }
    out->sub = 32;
    out->off = 0;
}

/* Q4_K: chunk c of 64 elements takes the low nibbles of qs[32c..] then the high nibbles. */
static void unpack_q4_K(const void *blk, struct kblock *out)
{
    const struct block_q4_K *b = blk;
    unpack_scales_k4(b->scales, out);
    for (int c = 0; c < 4; c++) {
        for (int l = 0; l < 32; l++) {
            out->q[64 * c + l] = b->qs[32 * c + l] & 15;
            out->q[64 * c + 32 + l] = b->qs[32 * c + l] >> 4;
        }
    }
    out->d = dllm_fp16_to_f32(b->d);
    out->dmin = dllm_fp16_to_f32(b->dmin);
}

/* Q5_K: as Q4_K, plus a fifth bit from qh[l], bit 2c for the low half and 2c+1 for the high. */
static void unpack_q5_K(const void *blk, struct kblock *out)
{
    const struct block_q5_K *b = blk;
    unpack_scales_k4(b->scales, out);
    for (int c = 0; c < 4; c++) {
        for (int l = 0; l < 32; l++) {
            out->q[64 * c + l] = (b->qs[32 * c + l] & 15) | (((b->qh[l] >> (2 * c)) & 1) << 4);
            out->q[64 * c + 32 + l] =
                (b->qs[32 * c + l] >> 4) | (((b->qh[l] >> (2 * c + 1)) & 1) << 4);
        }
    }
    out->d = dllm_fp16_to_f32(b->d);
    out->dmin = dllm_fp16_to_f32(b->dmin);
}

/* Q6_K: 6-bit values from a nibble of ql and two bits of qh, 16 signed scales, offset 32. */
static void unpack_q6_K(const void *blk, struct kblock *out)
{
    const struct block_q6_K *b = blk;
    for (int n = 0; n < 2; n++) {
        const uint8_t *ql = b->ql + 64 * n;
        const uint8_t *qh = b->qh + 32 * n;
        uint8_t *q = out->q + 128 * n;
        for (int l = 0; l < 32; l++) {
            q[l] = (ql[l] & 15) | (((qh[l] >> 0) & 3) << 4);
            q[l + 32] = (ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4);
            q[l + 64] = (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4);
            q[l + 96] = (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4);
        }
    }
    for (int g = 0; g < QK_K / 16; g++) {
        out->sc[g] = b->scales[g];
        out->mn[g] = 0;
    }
    out->sub = 16;
    out->off = 32;
    out->d = dllm_fp16_to_f32(b->d);
    out->dmin = 0.0f;
}

/* Q2_K: 2-bit values, 16 sub-blocks of 16 with 4-bit scales (low nibble) and mins (high). */
static void unpack_q2_K(const void *blk, struct kblock *out)
{
    const struct block_q2_K *b = blk;
    for (int e = 0; e < QK_K; e++) {
        out->q[e] = (uint8_t)dllm_k2_low_bits(b->qs, e);
    }
    for (int g = 0; g < QK_K / 16; g++) {
        out->sc[g] = b->scales[g] & 15;
        out->mn[g] = b->scales[g] >> 4;
    }
    out->sub = 16;
    out->off = 0;
    out->d = dllm_fp16_to_f32(b->d);
    out->dmin = dllm_fp16_to_f32(b->dmin);
}

/* Q3_K: the two bits and a third, bit e / 32 of hmask[e % 32]; 16 signed scales, offset 4. */
static void unpack_q3_K(const void *blk, struct kblock *out)
{
    const struct block_q3_K *b = blk;
    for (int e = 0; e < QK_K; e++) {
        out->q[e] = (uint8_t)dllm_q3_K_value(b->hmask, b->qs, e);
    }
    int8_t sc[QK_K / 16];
    dllm_q3_K_scales(b->scales, sc);
    for (int g = 0; g < QK_K / 16; g++) {
        out->sc[g] = sc[g];
        out->mn[g] = 0;
    }
    out->sub = 16;
    out->off = 4;
    out->d = dllm_fp16_to_f32(b->d);
    out->dmin = 0.0f;
}

/* Q8_0: the int8 values as they are. */
static void unpack_q8_0(const void *blk, struct qblock *out)
{
    const struct block_q8_0 *b = blk;
    memcpy(out->q, b->qs, QK8_0);
    out->d = dllm_fp16_to_f32(b->d);
    out->m = 0.0f;
}

/* Q4_0 and Q4_1: element j is the low nibble of qs[j], element j+16 its high nibble. */
static void unpack_nibbles(const uint8_t qs[QK8_0 / 2], int bias, int8_t q[QK8_0])
{
    for (int j = 0; j < QK8_0 / 2; j++) {
        q[j] = (int8_t)((qs[j] & 15) - bias);
        q[j + QK8_0 / 2] = (int8_t)((qs[j] >> 4) - bias);
    }
}

/* Q5_0 and Q5_1: the nibbles plus a fifth bit, bit j of the little-endian qh for element j. */
static void unpack_nibbles5(const uint8_t qs[QK8_0 / 2], const uint8_t qh[4], int bias,
                            int8_t q[QK8_0])
{
    uint32_t h =
        (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24;
    for (int j = 0; j < QK8_0 / 2; j++) {
        q[j] = (int8_t)(((qs[j] & 15) | (((h >> j) & 1) << 4)) - bias);
        q[j + QK8_0 / 2] = (int8_t)(((qs[j] >> 4) | (((h >> (j + 16)) & 1) << 4)) - bias);
    }
}

static void unpack_q4_0(const void *blk, struct qblock *out)
{
    const struct block_q4_0 *b = blk;
    unpack_nibbles(b->qs, 8, out->q);
    out->d = dllm_fp16_to_f32(b->d);
    out->m = 0.0f;
}

static void unpack_q4_1(const void *blk, struct qblock *out)
{
    const struct block_q4_1 *b = blk;
    unpack_nibbles(b->qs, 0, out->q);
    out->d = dllm_fp16_to_f32(b->d);
    out->m = dllm_fp16_to_f32(b->m);
}

static void unpack_q5_0(const void *blk, struct qblock *out)
{
    const struct block_q5_0 *b = blk;
    unpack_nibbles5(b->qs, b->qh, 16, out->q);
    out->d = dllm_fp16_to_f32(b->d);
    out->m = 0.0f;
}

static void unpack_q5_1(const void *blk, struct qblock *out)
{
    const struct block_q5_1 *b = blk;
    unpack_nibbles5(b->qs, b->qh, 0, out->q);
    out->d = dllm_fp16_to_f32(b->d);
    out->m = dllm_fp16_to_f32(b->m);
}

static float elem_f32(const void *row, int64_t i)
{
    return ((const float *)row)[i];
}

static float elem_f16(const void *row, int64_t i)
{
    return dllm_fp16_to_f32(((const dllm_fp16 *)row)[i]);
}

static float elem_bf16(const void *row, int64_t i)
{
    return dllm_bf16_to_f32(((const dllm_bf16 *)row)[i]);
}

static const struct matmul_type matmul_types[] = {
    {DLLM_TYPE_Q4_K, DLLM_ACT_Q8_K128, KIND_K, unpack_q4_K, NULL, NULL},
    {DLLM_TYPE_Q5_K, DLLM_ACT_Q8_K128, KIND_K, unpack_q5_K, NULL, NULL},
    {DLLM_TYPE_Q6_K, DLLM_ACT_Q8_K128, KIND_K, unpack_q6_K, NULL, NULL},
    {DLLM_TYPE_Q3_K, DLLM_ACT_Q8_K128, KIND_K, unpack_q3_K, NULL, NULL},
    {DLLM_TYPE_Q2_K, DLLM_ACT_Q8_K128, KIND_K, unpack_q2_K, NULL, NULL},
    {DLLM_TYPE_Q8_0, DLLM_ACT_Q8_0, KIND_32, NULL, unpack_q8_0, NULL},
    {DLLM_TYPE_Q4_0, DLLM_ACT_Q8_0, KIND_32, NULL, unpack_q4_0, NULL},
    {DLLM_TYPE_Q4_1, DLLM_ACT_Q8_0, KIND_32, NULL, unpack_q4_1, NULL},
    {DLLM_TYPE_Q5_0, DLLM_ACT_Q8_0, KIND_32, NULL, unpack_q5_0, NULL},
    {DLLM_TYPE_Q5_1, DLLM_ACT_Q8_0, KIND_32, NULL, unpack_q5_1, NULL},
    {DLLM_TYPE_F16, DLLM_ACT_F16, KIND_FLOAT, NULL, NULL, elem_f16},
    {DLLM_TYPE_BF16, DLLM_ACT_BF16, KIND_FLOAT, NULL, NULL, elem_bf16},
    {DLLM_TYPE_F32, DLLM_ACT_F32, KIND_FLOAT, NULL, NULL, elem_f32},
};

/* The names of matmul_types, in its order. */
static const char matmul_type_names[] = "Q4_K, Q5_K, Q6_K, Q3_K, Q2_K, Q8_0, Q4_0, Q4_1, Q5_0, "
                                        "Q5_1, F16, BF16, F32";

static const struct matmul_type *matmul_type(uint32_t wtype)
{
    for (size_t i = 0; i < sizeof matmul_types / sizeof matmul_types[0]; i++) {
        if (matmul_types[i].wtype == wtype) {
            return &matmul_types[i];
        }
    }
    return NULL;
}

bool dllm_matmul_supported(uint32_t wtype)
{
    return matmul_type(wtype) != NULL;
}

const char *dllm_matmul_supported_list(void)
{
    return matmul_type_names;
}

enum dllm_act_format dllm_matmul_act_format(uint32_t wtype)
{
    const struct matmul_type *t = matmul_type(wtype);
    assert(t != NULL);
    return t->act;
}

size_t dllm_matmul_row_bytes(uint32_t type, int64_t K)
{
    const struct dllm_type_traits *tr = dllm_type_traits(type);
    assert(tr != NULL && K % tr->block_elems == 0);
    return (size_t)(K / tr->block_elems) * tr->block_bytes;
}

/* Elements and bytes per block of each activation format. */
static const struct {
    int64_t elems;
    size_t bytes;
} act_blocks[] = {
    [DLLM_ACT_Q8_K128] = {QK_K, sizeof(struct block_q8_K128)},
    [DLLM_ACT_Q8_0] = {QK8_0, sizeof(struct block_q8_0u)},
    [DLLM_ACT_F16] = {1, sizeof(dllm_fp16)},
    [DLLM_ACT_BF16] = {1, sizeof(dllm_bf16)},
    [DLLM_ACT_F32] = {1, sizeof(float)},
};

size_t dllm_matmul_act_row_bytes(uint32_t wtype, int64_t K)
{
    const enum dllm_act_format act = dllm_matmul_act_format(wtype);
    assert(K % act_blocks[act].elems == 0);
    return (size_t)(K / act_blocks[act].elems) * act_blocks[act].bytes;
}

size_t dllm_matmul_scratch_bytes(uint32_t wtype, int64_t K, int64_t L)
{
    return (size_t)L * dllm_matmul_act_row_bytes(wtype, K);
}

/*
 * Q8_K128: llama.cpp's Q8_K rule (quantize_row_q8_K_ref) applied to each 128 elements h: max is
 * the signed value of largest magnitude (the first one), q = min(127, round_half_even(-127/max
 * * x)), d[h] = max / -127 as 1 / iscale; an all-zero 128 has d[h] = 0. Then the sums of q over
 * each 32 and each 16, and -32 times the latter.
 */
static void quantize_row_q8_K128(const float *x, struct block_q8_K128 *y, int64_t K)
{
    for (int64_t b = 0; b < K / QK_K; b++, y++) {
        memset(y, 0, sizeof *y);
        for (int h = 0; h < QK_K / QK8_K128; h++, x += QK8_K128) {
            float amax = 0.0f, max = 0.0f;
            for (int e = 0; e < QK8_K128; e++) {
                if (fabsf(x[e]) > amax) {
                    amax = fabsf(x[e]);
                    max = x[e];
                }
            }
            if (amax == 0.0f) {
                continue;
            }
            const float iscale = -127.0f / max;
            int8_t *q = y->qs + QK8_K128 * h;
            for (int e = 0; e < QK8_K128; e++) {
                long v = lrintf(iscale * x[e]);
                q[e] = (int8_t)(v < 127 ? v : 127);
            }
            y->d[h] = 1.0f / iscale;
        }
        for (int e = 0; e < QK_K; e++) {
            y->sums[e / 32] = (int16_t)(y->sums[e / 32] + y->qs[e]);
            y->sums16[e / 16] = (int16_t)(y->sums16[e / 16] + y->qs[e]);
            y->q6off[e / 16] -= 32 * y->qs[e];
        }
    }
}

/*
 * Q8_0 (llama.cpp quantize_row_q8_0_ref) into struct block_q8_0u: per 32 elements d = amax/127,
 * rounded to fp16, and q = roundf(x * (1/d)) with the unrounded d, stored as q + 128; dsum =
 * d * the sum of q. An all-zero block has d = 0 and q = 0.
 */
static void quantize_row_q8_0(const float *x, struct block_q8_0u *y, int64_t K)
{
    for (int64_t b = 0; b < K / QK8_0; b++, x += QK8_0, y++) {
        float amax = 0.0f;
        for (int j = 0; j < QK8_0; j++) {
            amax = fmaxf(amax, fabsf(x[j]));
        }
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        int32_t sum = 0;
        for (int j = 0; j < QK8_0; j++) {
            const int32_t q = (int32_t)roundf(x[j] * id);
            y->u[j] = (uint8_t)(q + 128);
            sum += q;
        }
        y->d = dllm_fp16_to_f32(dllm_f32_to_fp16(d));
        y->dsum = y->d * (float)sum;
    }
}

void dllm_matmul_quantize_ref(uint32_t wtype, const float *x, int64_t K, int64_t L, void *scratch)
{
    const enum dllm_act_format act = dllm_matmul_act_format(wtype);
    const size_t stride = dllm_matmul_act_row_bytes(wtype, K);
    for (int64_t l = 0; l < L; l++) {
        const float *xl = x + l * K;
        void *dst = (uint8_t *)scratch + (size_t)l * stride;
        switch (act) {
        case DLLM_ACT_Q8_K128: quantize_row_q8_K128(xl, dst, K); break;
        case DLLM_ACT_Q8_0: quantize_row_q8_0(xl, dst, K); break;
        case DLLM_ACT_F16:
            for (int64_t k = 0; k < K; k++) {
                ((dllm_fp16 *)dst)[k] = dllm_f32_to_fp16(xl[k]);
            }
            break;
        case DLLM_ACT_BF16:
            for (int64_t k = 0; k < K; k++) {
                ((dllm_bf16 *)dst)[k] = dllm_f32_to_bf16(xl[k]);
            }
            break;
        case DLLM_ACT_F32: memcpy(dst, xl, (size_t)K * sizeof(float)); break;
        }
    }
}

/*
 * One super-block of a K-quant row times one Q8_K128 block a, with da_h = a->d[h] the scale of
 * activation elements 128h..128h+127:
 *   sum_h da_h * (d * sumi_h - dmin * summ_h),
 *   sumi_h = sum_{s in h} sc[s] * (sum_{e in s} q[e] * a[e] - off * asum_s),
 *   summ_h = sum_{s in h} mn[s] * asum_s,
 * where s runs over the weight sub-blocks inside h (four of 32 for Q4_K and Q5_K, eight of 16
 * for Q6_K, Q3_K and Q2_K) and asum_s is the sum of a over s. sumi_h and summ_h are exact int32
 * (below 2^27 in magnitude); the rest is float.
 */
static float dot_kblock(const struct kblock *w, const struct block_q8_K128 *a)
{
    float sum = 0.0f;
    for (int h = 0; h < QK_K / QK8_K128; h++) {
        int32_t sumi = 0, summ = 0;
        for (int s = QK8_K128 * h / w->sub; s < QK8_K128 * (h + 1) / w->sub; s++) {
            int32_t dot = 0, asum = 0;
            for (int e = s * w->sub; e < (s + 1) * w->sub; e++) {
                dot += (int32_t)w->q[e] * a->qs[e];
                asum += a->qs[e];
            }
            sumi += w->sc[s] * (dot - w->off * asum);
            summ += w->mn[s] * asum;
        }
        sum += a->d[h] * (w->d * (float)sumi - w->dmin * (float)summ);
    }
    return sum;
}

/* One 32-element block times a Q8_0 activation block: d*da * sum q*qa + m*da * sum qa. */
static float dot_qblock(const struct qblock *w, const struct block_q8_0u *a)
{
    const float da = a->d;
    int32_t sumi = 0, suma = 0;
    for (int e = 0; e < QK8_0; e++) {
        const int32_t qa = (int32_t)a->u[e] - 128;
        sumi += (int32_t)w->q[e] * qa;
        suma += qa;
    }
    return (w->d * da) * (float)sumi + (w->m * da) * (float)suma;
}

/*
 * Weight row wn times the L activation rows in scratch: yn[l*ldy] for l in [0, L). Each block is
 * unpacked once; its contributions add up in float, block after block, in yn.
 */
static void row_k(const struct matmul_type *t, size_t wblock, const uint8_t *wn, int64_t K,
                  const uint8_t *scratch, size_t astride, int64_t L, float *yn, int64_t ldy)
{
    struct kblock kb;
    for (int64_t l = 0; l < L; l++) {
        yn[l * ldy] = 0.0f;
    }
    for (int64_t b = 0; b < K / QK_K; b++) {
        t->unpack_k(wn + (size_t)b * wblock, &kb);
        for (int64_t l = 0; l < L; l++) {
            const struct block_q8_K128 *a = (const void *)(scratch + (size_t)l * astride);
            yn[l * ldy] += dot_kblock(&kb, &a[b]);
        }
    }
}

/* As row_k for the 32-element types. */
static void row_32(const struct matmul_type *t, size_t wblock, const uint8_t *wn, int64_t K,
                   const uint8_t *scratch, size_t astride, int64_t L, float *yn, int64_t ldy)
{
    struct qblock qb;
    for (int64_t l = 0; l < L; l++) {
        yn[l * ldy] = 0.0f;
    }
    for (int64_t b = 0; b < K / QK8_0; b++) {
        t->unpack_32(wn + (size_t)b * wblock, &qb);
        for (int64_t l = 0; l < L; l++) {
            const struct block_q8_0u *a = (const void *)(scratch + (size_t)l * astride);
            yn[l * ldy] += dot_qblock(&qb, &a[b]);
        }
    }
}

/* As row_k for F32, F16 and BF16: products in float (exact for F16 and BF16), sums in double. */
static void row_float(const struct matmul_type *t, const uint8_t *wn, int64_t K,
                      const uint8_t *scratch, size_t astride, int64_t L, float *yn, int64_t ldy)
{
    for (int64_t l = 0; l < L; l++) {
        const void *a = scratch + (size_t)l * astride;
        double acc = 0.0;
        for (int64_t k = 0; k < K; k++) {
            acc += t->elem(wn, k) * t->elem(a, k);
        }
        yn[l * ldy] = (float)acc;
    }
}

void dllm_matmul_rows_ref(uint32_t wtype, const void *w, int64_t K, int64_t n0, int64_t n1,
                          const void *scratch, int64_t L, float *y, int64_t ldy)
{
    const struct matmul_type *t = matmul_type(wtype);
    assert(t != NULL);
    const size_t wblock = dllm_type_traits(wtype)->block_bytes;
    const size_t wstride = dllm_matmul_row_bytes(wtype, K);
    const size_t astride = dllm_matmul_act_row_bytes(wtype, K);
    for (int64_t n = n0; n < n1; n++) {
        const uint8_t *wn = (const uint8_t *)w + (size_t)n * wstride;
        switch (t->kind) {
        case KIND_K: row_k(t, wblock, wn, K, scratch, astride, L, y + n, ldy); break;
        case KIND_32: row_32(t, wblock, wn, K, scratch, astride, L, y + n, ldy); break;
        case KIND_FLOAT: row_float(t, wn, K, scratch, astride, L, y + n, ldy); break;
        }
    }
}
