/*
 * Tensor types: the table of every GGML type id, exact half-precision conversions, and the
 * scalar reference decoders that turn a run of blocks into floats.
 *
 * Blocks are copied out of the mapped file with memcpy before use, so a tensor need not be
 * aligned in memory. The host is little-endian (x86-64), like the files.
 */
#include "config.h"

#include "quant.h"

#include "dllm.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* m / 2^shift rounded to the nearest integer, ties to even (1 <= shift <= 31). */
static uint32_t shift_round_even(uint32_t m, unsigned shift)
{
    uint32_t q = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    return q + (rem > half || (rem == half && (q & 1)));
}

/*
 * binary16 to binary32, exactly: normal numbers rebias the exponent (15 -> 127), subnormals
 * are mantissa * 2^-24, and Inf/NaN keep their payload.
 */
float dllm_fp16_to_f32(dllm_fp16 h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    if (exp == 0x1f)
        return dllm_bits_f32(sign | 0x7f800000 | mant << 13);
    if (exp == 0) {
        float v = (float)mant * 0x1p-24f;
        return sign ? -v : v;
    }
    return dllm_bits_f32(sign | (exp + 112) << 23 | mant << 13);
}

/*
 * binary32 to binary16, rounding to nearest with ties to even. Magnitudes from 65520 (half
 * way from the largest half, 65504, to 2^16) up become Inf; NaNs stay NaN with the quiet bit
 * set and the top of their payload kept.
 */
dllm_fp16 dllm_f32_to_fp16(float f)
{
    uint32_t u = dllm_f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000;
    uint32_t a = u & 0x7fffffff;
    uint32_t exp = a >> 23;
    if (a > 0x7f800000)
        return (dllm_fp16)(sign | 0x7e00 | ((a >> 13) & 0x3ff));
    if (a >= 0x477ff000)
        return (dllm_fp16)(sign | 0x7c00);
    if (exp >= 113) /* a normal half: rebias, then drop 13 mantissa bits (a carry is fine) */
        return (dllm_fp16)(sign | shift_round_even(a - (112u << 23), 13));
    if (exp < 102) /* below 2^-25, half the smallest subnormal: zero */
        return (dllm_fp16)sign;
    /* a subnormal half: the 24-bit significand in units of 2^-24 */
    return (dllm_fp16)(sign | shift_round_even((a & 0x7fffff) | 0x800000, 126 - exp));
}

float dllm_bf16_to_f32(dllm_bf16 h)
{
    return dllm_bits_f32((uint32_t)h << 16);
}

/* binary32 to bfloat16: the top 16 bits, rounded to nearest even; NaNs are forced quiet. */
dllm_bf16 dllm_f32_to_bf16(float f)
{
    uint32_t u = dllm_f32_bits(f);
    if ((u & 0x7fffffff) > 0x7f800000)
        return (dllm_bf16)((u >> 16) | 0x40);
    return (dllm_bf16)shift_round_even(u, 16);
}

/* ---- decoders: n elements, a multiple of the block size, from src to dst ------------------ */

static void decode_f32(const void *src, float *dst, int64_t n)
{
    memcpy(dst, src, (size_t)n * sizeof *dst);
}

static void decode_f16(const void *src, float *dst, int64_t n)
{
    const uint8_t *p = src;
    for (int64_t i = 0; i < n; i++) {
        dllm_fp16 h;
        memcpy(&h, p + 2 * i, sizeof h);
        dst[i] = dllm_fp16_to_f32(h);
    }
}

static void decode_bf16(const void *src, float *dst, int64_t n)
{
    const uint8_t *p = src;
    for (int64_t i = 0; i < n; i++) {
        dllm_bf16 h;
        memcpy(&h, p + 2 * i, sizeof h);
        dst[i] = dllm_bf16_to_f32(h);
    }
}

/* Q8_0: y = d * q. */
static void decode_q8_0(const void *src, float *dst, int64_t n)
{
    const uint8_t *p = src;
    for (int64_t i = 0; i < n / QK8_0; i++, p += sizeof(struct block_q8_0), dst += QK8_0) {
        struct block_q8_0 b;
        memcpy(&b, p, sizeof b);
        float d = dllm_fp16_to_f32(b.d);
        for (int j = 0; j < QK8_0; j++)
            dst[j] = d * b.qs[j];
    }
}

/* Q4_0: byte j holds element j (low nibble) and j + 16 (high nibble); y = d * (q - 8). */
static void decode_q4_0(const void *src, float *dst, int64_t n)
{
    const uint8_t *p = src;
    for (int64_t i = 0; i < n / QK8_0; i++, p += sizeof(struct block_q4_0), dst += QK8_0) {
        struct block_q4_0 b;
        memcpy(&b, p, sizeof b);
        float d = dllm_fp16_to_f32(b.d);
        for (int j = 0; j < QK8_0 / 2; j++) {
            dst[j] = d * ((b.qs[j] & 15) - 8);
            dst[j + QK8_0 / 2] = d * ((b.qs[j] >> 4) - 8);
        }
    }
}

/* Q4_1: nibbles as in Q4_0, unsigned; y = d * q + m. */
static void decode_q4_1(const void *src, float *dst, int64_t n)
{
    const uint8_t *p = src;
    for (int64_t i = 0; i < n / QK8_0; i++, p += sizeof(struct block_q4_1), dst += QK8_0) {
        struct block_q4_1 b;
        memcpy(&b, p, sizeof b);
        float d = dllm_fp16_to_f32(b.d);
        float m = dllm_fp16_to_f32(b.m);
        for (int j = 0; j < QK8_0 / 2; j++) {
            dst[j] = d * (b.qs[j] & 15) + m;
            dst[j + QK8_0 / 2] = d * (b.qs[j] >> 4) + m;
        }
    }
}

/*
 * The 5-bit quants of a Q5_0 / Q5_1 block: nibbles as in Q4_0, and bit e of the little-endian
 * 32-bit qh is the fifth bit (value 16) of element e.
 */
static void q5_quants(const uint8_t qh_bytes[4], const uint8_t qs[QK8_0 / 2], int q[QK8_0])
{
    uint32_t qh;
    memcpy(&qh, qh_bytes, sizeof qh);
    for (int j = 0; j < QK8_0 / 2; j++) {
        q[j] = (qs[j] & 15) | (int)(((qh >> j) & 1) << 4);
        q[j + QK8_0 / 2] = (qs[j] >> 4) | (int)(((qh >> (j + QK8_0 / 2)) & 1) << 4);
    }
}

/* Q5_0: y = d * (q - 16). */
static void decode_q5_0(const void *src, float *dst, int64_t n)
{
    const uint8_t *p = src;
    for (int64_t i = 0; i < n / QK8_0; i++, p += sizeof(struct block_q5_0), dst += QK8_0) {
        struct block_q5_0 b;
        memcpy(&b, p, sizeof b);
        float d = dllm_fp16_to_f32(b.d);
        int q[QK8_0];
        q5_quants(b.qh, b.qs, q);
        for (int j = 0; j < QK8_0; j++)
            dst[j] = d * (q[j] - 16);
    }
}

/* Q5_1: y = d * q + m. */
static void decode_q5_1(const void *src, float *dst, int64_t n)
{
    const uint8_t *p = src;
    for (int64_t i = 0; i < n / QK8_0; i++, p += sizeof(struct block_q5_1), dst += QK8_0) {
        struct block_q5_1 b;
        memcpy(&b, p, sizeof b);
        float d = dllm_fp16_to_f32(b.d);
        float m = dllm_fp16_to_f32(b.m);
        int q[QK8_0];
        q5_quants(b.qh, b.qs, q);
        for (int j = 0; j < QK8_0; j++)
            dst[j] = d * q[j] + m;
    }
}

void dllm_k4_scales_mins(const uint8_t s[12], uint8_t sc[8], uint8_t mn[8])
{
    for (int j = 0; j < 4; j++) {
        sc[j] = s[j] & 63;
        mn[j] = s[j + 4] & 63;
        sc[j + 4] = (s[j + 8] & 15) | ((s[j] >> 6) << 4);
        mn[j + 4] = (s[j + 8] >> 4) | ((s[j + 4] >> 6) << 4);
    }
}

/*
 * One Q4_K or Q5_K block: 8 sub-blocks of 32. Chunk c (0..3) of 32 qs bytes holds sub-block 2c
 * in its low nibbles and 2c+1 in its high nibbles; Q5_K adds a fifth bit (value 16): element
 * 32k + l of the block takes bit k of qh[l] (qh is NULL for Q4_K). y = (d * sc) * q - dmin * mn.
 */
static void decode_k4_block(dllm_fp16 d16, dllm_fp16 dmin16, const uint8_t scales[12],
                            const uint8_t *qs, const uint8_t *qh, float *dst)
{
    float d = dllm_fp16_to_f32(d16);
    float dmin = dllm_fp16_to_f32(dmin16);
    uint8_t sc[8], mn[8];
    dllm_k4_scales_mins(scales, sc, mn);
    for (int c = 0; c < 4; c++) {
        const uint8_t *q = qs + 32 * c;
        float d0 = d * sc[2 * c], m0 = dmin * mn[2 * c];
        float d1 = d * sc[2 * c + 1], m1 = dmin * mn[2 * c + 1];
        for (int l = 0; l < 32; l++) {
            int lo = q[l] & 15, hi = q[l] >> 4;
            if (qh) {
                lo |= ((qh[l] >> (2 * c)) & 1) << 4;
                hi |= ((qh[l] >> (2 * c + 1)) & 1) << 4;
            }
            dst[64 * c + l] = d0 * lo - m0;
            dst[64 * c + 32 + l] = d1 * hi - m1;
        }
    }
}

static void decode_q4_K(const void *src, float *dst, int64_t n)
{
    const uint8_t *p = src;
    for (int64_t i = 0; i < n / QK_K; i++, p += sizeof(struct block_q4_K), dst += QK_K) {
        struct block_q4_K b;
        memcpy(&b, p, sizeof b);
        decode_k4_block(b.d, b.dmin, b.scales, b.qs, NULL, dst);
    }
}

static void decode_q5_K(const void *src, float *dst, int64_t n)
{
    const uint8_t *p = src;
    for (int64_t i = 0; i < n / QK_K; i++, p += sizeof(struct block_q5_K), dst += QK_K) {
        struct block_q5_K b;
        memcpy(&b, p, sizeof b);
        decode_k4_block(b.d, b.dmin, b.scales, b.qs, b.qh, dst);
    }
}

/*
 * Q6_K: 16 sub-blocks of 16 with signed 8-bit scales; y = (d * sc) * (q - 32). Each half of
 * 128 elements uses 64 ql bytes (low nibbles), 32 qh bytes (2 bits each) and 8 scales:
 * element 32k + l of the half takes ql[l + 32 (k & 1)] (low nibble for k < 2, high for
 * k >= 2) and bits 2k..2k+1 of qh[l].
 */
static void decode_q6_K(const void *src, float *dst, int64_t n)
{
    const uint8_t *p = src;
    for (int64_t i = 0; i < n / QK_K; i++, p += sizeof(struct block_q6_K), dst += QK_K) {
        struct block_q6_K b;
        memcpy(&b, p, sizeof b);
        float d = dllm_fp16_to_f32(b.d);
        for (int half = 0; half < 2; half++) {
            const uint8_t *ql = b.ql + 64 * half;
            const uint8_t *qh = b.qh + 32 * half;
            const int8_t *sc = b.scales + 8 * half;
            float *y = dst + 128 * half;
            for (int l = 0; l < 32; l++) {
                int g = l / 16;
                int q0 = ((ql[l] & 15) | (((qh[l] >> 0) & 3) << 4)) - 32;
                int q1 = ((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) - 32;
                int q2 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                int q3 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l] = d * sc[g] * q0;
                y[l + 32] = d * sc[g + 2] * q1;
                y[l + 64] = d * sc[g + 4] * q2;
                y[l + 96] = d * sc[g + 6] * q3;
            }
        }
    }
}

void dllm_q3_K_scales(const uint8_t s[12], int8_t sc[16])
{
    for (int j = 0; j < 4; j++) {
        const int hi = s[8 + j];
        sc[j] = (int8_t)(((s[j] & 15) | (hi & 3) << 4) - 32);
        sc[j + 4] = (int8_t)(((s[4 + j] & 15) | (hi >> 2 & 3) << 4) - 32);
        sc[j + 8] = (int8_t)(((s[j] >> 4) | (hi >> 4 & 3) << 4) - 32);
        sc[j + 12] = (int8_t)(((s[4 + j] >> 4) | (hi >> 6) << 4) - 32);
    }
}

int dllm_k2_low_bits(const uint8_t qs[64], int e)
{
    return qs[32 * (e / 128) + e % 32] >> (2 * (e % 128 / 32)) & 3;
}

int dllm_q3_K_value(const uint8_t hmask[32], const uint8_t qs[64], int e)
{
    return dllm_k2_low_bits(qs, e) | (hmask[e % 32] >> (e / 32) & 1) << 2;
}

/* Q2_K: 16 sub-blocks of 16; y = (d * sc) * q - dmin * mn, sc and mn 4-bit, q 2-bit. */
static void decode_q2_K(const void *src, float *dst, int64_t n)
{
    const uint8_t *p = src;
    for (int64_t i = 0; i < n / QK_K; i++, p += sizeof(struct block_q2_K), dst += QK_K) {
        struct block_q2_K b;
        memcpy(&b, p, sizeof b);
        const float d = dllm_fp16_to_f32(b.d), dmin = dllm_fp16_to_f32(b.dmin);
        for (int e = 0; e < QK_K; e++) {
            const int sc = b.scales[e / 16];
            const float dl = d * (sc & 15), ml = dmin * (sc >> 4);
            dst[e] = dl * dllm_k2_low_bits(b.qs, e) - ml;
        }
    }
}

/* Q3_K: 16 sub-blocks of 16 with signed 6-bit scales; y = (d * sc) * q, q = 3-bit - 4. */
static void decode_q3_K(const void *src, float *dst, int64_t n)
{
    const uint8_t *p = src;
    for (int64_t i = 0; i < n / QK_K; i++, p += sizeof(struct block_q3_K), dst += QK_K) {
        struct block_q3_K b;
        memcpy(&b, p, sizeof b);
        const float d = dllm_fp16_to_f32(b.d);
        int8_t sc[16];
        dllm_q3_K_scales(b.scales, sc);
        for (int e = 0; e < QK_K; e++) {
            const float dl = d * sc[e / 16];
            dst[e] = dl * (dllm_q3_K_value(b.hmask, b.qs, e) - 4);
        }
    }
}

/*
 * Every type id GGML has defined, with its block geometry (ggml type_traits). Ids 4 and 5
 * (Q4_2, Q4_3), 31-33 (Q4_0_4_4, Q4_0_4_8, Q4_0_8_8) and 36-38 (IQ4_NL_4_4, IQ4_NL_4_8,
 * IQ4_NL_8_8) were removed and are left empty.
 */
static const struct dllm_type_traits type_table[DLLM_TYPE_COUNT] = {
    [DLLM_TYPE_F32] = {"F32", 1, 4, decode_f32},
    [DLLM_TYPE_F16] = {"F16", 1, 2, decode_f16},
    [DLLM_TYPE_Q4_0] = {"Q4_0", QK8_0, sizeof(struct block_q4_0), decode_q4_0},
    [DLLM_TYPE_Q4_1] = {"Q4_1", QK8_0, sizeof(struct block_q4_1), decode_q4_1},
    [DLLM_TYPE_Q5_0] = {"Q5_0", QK8_0, sizeof(struct block_q5_0), decode_q5_0},
    [DLLM_TYPE_Q5_1] = {"Q5_1", QK8_0, sizeof(struct block_q5_1), decode_q5_1},
    [DLLM_TYPE_Q8_0] = {"Q8_0", QK8_0, sizeof(struct block_q8_0), decode_q8_0},
    [DLLM_TYPE_Q8_1] = {"Q8_1", 32, 36, NULL}, /* fp16 d, s; 32 int8 */
    [DLLM_TYPE_Q2_K] = {"Q2_K", QK_K, sizeof(struct block_q2_K), decode_q2_K},
    [DLLM_TYPE_Q3_K] = {"Q3_K", QK_K, sizeof(struct block_q3_K), decode_q3_K},
    [DLLM_TYPE_Q4_K] = {"Q4_K", QK_K, sizeof(struct block_q4_K), decode_q4_K},
    [DLLM_TYPE_Q5_K] = {"Q5_K", QK_K, sizeof(struct block_q5_K), decode_q5_K},
    [DLLM_TYPE_Q6_K] = {"Q6_K", QK_K, sizeof(struct block_q6_K), decode_q6_K},
    [DLLM_TYPE_Q8_K] = {"Q8_K", QK_K, sizeof(struct block_q8_K), NULL},
    [DLLM_TYPE_IQ2_XXS] = {"IQ2_XXS", QK_K, 66, NULL}, /* fp16 d, u16 qs[32] */
    [DLLM_TYPE_IQ2_XS] = {"IQ2_XS", QK_K, 74, NULL},   /* fp16 d, u16 qs[32], scales[8] */
    [DLLM_TYPE_IQ3_XXS] = {"IQ3_XXS", QK_K, 98, NULL}, /* fp16 d, qs[96] */
    [DLLM_TYPE_IQ1_S] = {"IQ1_S", QK_K, 50, NULL},     /* fp16 d, qs[32], u16 qh[8] */
    [DLLM_TYPE_IQ4_NL] = {"IQ4_NL", 32, 18, NULL},     /* fp16 d, qs[16] */
    [DLLM_TYPE_IQ3_S] = {"IQ3_S", QK_K, 110, NULL},    /* d, qs[64], qh[8], signs[32], scales[4] */
    [DLLM_TYPE_IQ2_S] = {"IQ2_S", QK_K, 82, NULL},     /* fp16 d, qs[64], qh[8], scales[8] */
    [DLLM_TYPE_IQ4_XS] = {"IQ4_XS", QK_K, 136, NULL},  /* d, u16 scales_h, scales_l[4], qs[128] */
    [DLLM_TYPE_I8] = {"I8", 1, 1, NULL},
    [DLLM_TYPE_I16] = {"I16", 1, 2, NULL},
    [DLLM_TYPE_I32] = {"I32", 1, 4, NULL},
    [DLLM_TYPE_I64] = {"I64", 1, 8, NULL},
    [DLLM_TYPE_F64] = {"F64", 1, 8, NULL},
    [DLLM_TYPE_IQ1_M] = {"IQ1_M", QK_K, 56, NULL}, /* qs[32], qh[16], scales[8] */
    [DLLM_TYPE_BF16] = {"BF16", 1, 2, decode_bf16},
    [DLLM_TYPE_TQ1_0] = {"TQ1_0", QK_K, 54, NULL}, /* qs[48], qh[4], fp16 d */
    [DLLM_TYPE_TQ2_0] = {"TQ2_0", QK_K, 66, NULL}, /* qs[64], fp16 d */
    [DLLM_TYPE_MXFP4] = {"MXFP4", 32, 17, NULL},   /* e8m0 exponent, qs[16] */
};

const struct dllm_type_traits *dllm_type_traits(uint32_t type)
{
    if (type >= DLLM_TYPE_COUNT || !type_table[type].name)
        return NULL;
    return &type_table[type];
}

const char *dllm_type_name(uint32_t type)
{
    const struct dllm_type_traits *traits = dllm_type_traits(type);
    return traits ? traits->name : NULL;
}

bool dllm_type_decodable(uint32_t type)
{
    const struct dllm_type_traits *traits = dllm_type_traits(type);
    return traits && traits->decode;
}

int64_t dllm_type_block_elems(uint32_t type)
{
    const struct dllm_type_traits *traits = dllm_type_traits(type);
    return traits ? traits->block_elems : 0;
}

size_t dllm_type_block_bytes(uint32_t type)
{
    const struct dllm_type_traits *traits = dllm_type_traits(type);
    return traits ? traits->block_bytes : 0;
}

/*
 * Decodes elements [first, first + n) of a tensor after checking that the type has a
 * decoder, that the range lies inside the tensor on block boundaries, and that the tensor's
 * bytes cover it.
 */
enum dllm_status dllm_gguf_tensor_decode(const struct dllm_gguf_tensor *tensor, int64_t first,
                                         int64_t n, float *out, struct dllm_error *err)
{
    const struct dllm_type_traits *traits = dllm_type_traits(tensor->type);
    if (!traits || !traits->decode) {
        char id[24];
        snprintf(id, sizeof id, "type %" PRIu32, tensor->type);
        return dllm_error_set(err, DLLM_ERR_UNSUPPORTED,
                              "unsupported GGUF tensor type: %s (tensor %s)",
                              traits ? traits->name : id, tensor->name);
    }
    int64_t total = 1;
    for (int d = 0; d < 4; d++) {
        if (tensor->ne[d] < 0 || __builtin_mul_overflow(total, tensor->ne[d], &total))
            return dllm_error_set(err, DLLM_ERR_FORMAT, "tensor %s has an invalid shape",
                                  tensor->name);
    }
    if (first < 0 || n < 0 || first > total || n > total - first)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "elements %" PRId64 "..+%" PRId64 " lie outside tensor %s (%" PRId64
                              " elements)",
                              first, n, tensor->name, total);
    int64_t block = traits->block_elems;
    if (first % block != 0 || n % block != 0)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "elements %" PRId64 "..+%" PRId64 " of tensor %s do not fall on "
                              "%s block boundaries (%" PRId64 " elements a block)",
                              first, n, tensor->name, traits->name, block);
    uint64_t end;
    if (__builtin_mul_overflow((uint64_t)((first + n) / block), traits->block_bytes, &end) ||
        end > tensor->size)
        return dllm_error_set(err, DLLM_ERR_FORMAT,
                              "tensor %s holds %zu bytes, too few for its %" PRId64 " %s elements",
                              tensor->name, tensor->size, total, traits->name);
    const uint8_t *src =
        (const uint8_t *)tensor->data + (size_t)(first / block) * traits->block_bytes;
    if (n > 0)
        traits->decode(src, out, n);
    return DLLM_OK;
}
