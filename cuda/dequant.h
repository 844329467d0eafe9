/*
 * The GGUF block decoders of the CUDA backend, written once as DLLM_HD functions so that the
 * device kernels (cuda/kernels-dequant.cu) and the host test (tests/test_cuda_host.c) run the
 * same code. Each gives the same bits as engine/gguf/quant.c's decoders: the same float
 * operations in the same order, each rounded on its own (cuda/hd.h), so no fused
 * multiply-add. Block layouts: engine/gguf/blocks.h (ggml's ggml-common.h). Bytes are read one
 * at a time, little-endian, so blocks need no alignment.
 */
#ifndef DLLM_CUDA_DEQUANT_H
#define DLLM_CUDA_DEQUANT_H

#include "hd.h"

#include "dllm.h"

#include <stdbool.h>
#include <stdint.h>
#ifndef __CUDA_ARCH__
#include <string.h>
#endif

DLLM_HD float dllm_hd_float_of(uint32_t u)
{
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
#endif
}

DLLM_HD uint32_t dllm_hd_bits_of(float f)
{
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
#endif
}

DLLM_HD uint32_t dllm_hd_u16(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

DLLM_HD uint32_t dllm_hd_u32(const uint8_t *p)
{
    return dllm_hd_u16(p) | dllm_hd_u16(p + 2) << 16;
}

/* binary16 to binary32, exactly (normals rebiased, subnormals m * 2^-24, Inf/NaN kept). */
DLLM_HD float dllm_hd_fp16_to_f32(uint32_t h)
{
    uint32_t sign = (h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    if (exp == 0x1f)
        return dllm_hd_float_of(sign | 0x7f800000 | mant << 13);
    if (exp == 0) {
        float v = (float)mant * 0x1p-24f;
        return sign ? -v : v;
    }
    return dllm_hd_float_of(sign | (exp + 112) << 23 | mant << 13);
}

/* m / 2^shift rounded to nearest, ties to even (1 <= shift <= 31). */
DLLM_HD uint32_t dllm_hd_round_shift(uint32_t m, unsigned shift)
{
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    return q + (rem > half || (rem == half && (q & 1)));
}

/*
 * binary32 to binary16, to nearest even: 65520 and above become Inf, below 2^-25 zero,
 * subnormal halves from the 24-bit significand; NaNs stay NaN, quiet, with the payload's top.
 */
DLLM_HD uint16_t dllm_hd_f32_to_fp16(float f)
{
    uint32_t u = dllm_hd_bits_of(f);
    uint32_t sign = (u >> 16) & 0x8000, a = u & 0x7fffffff, exp = a >> 23;
    if (a > 0x7f800000)
        return (uint16_t)(sign | 0x7e00 | ((a >> 13) & 0x3ff));
    if (a >= 0x477ff000)
        return (uint16_t)(sign | 0x7c00);
    if (exp >= 113)
        return (uint16_t)(sign | dllm_hd_round_shift(a - (112u << 23), 13));
    if (exp < 102)
        return (uint16_t)sign;
    return (uint16_t)(sign | dllm_hd_round_shift((a & 0x7fffff) | 0x800000, 126 - exp));
}

/*
 * binary32 to binary16 for a product's activations: as dllm_hd_f32_to_fp16, but a value beyond
 * the largest finite half (65504), an infinity too, becomes that largest half of its sign, so
 * that one huge activation makes a large product, not an infinite one that turns the sums it
 * meets into NaN. NaNs stay NaN.
 */
DLLM_HD uint16_t dllm_hd_f32_to_fp16_sat(float f)
{
    return dllm_hd_f32_to_fp16(f > 65504.0f ? 65504.0f : f < -65504.0f ? -65504.0f : f);
}

/* Q4_0 / Q4_1 / Q5_x nibble of element j < 32: byte j's low half, or byte j-16's high half. */
DLLM_HD int dllm_hd_nibble32(const uint8_t *qs, int j)
{
    return j < 16 ? qs[j] & 15 : qs[j - 16] >> 4;
}

/* Q8_0 (34 bytes: fp16 d, int8 q[32]): y = d * q. */
DLLM_HD float dllm_hd_q8_0(const uint8_t *b, int j)
{
    return DLLM_FMUL(dllm_hd_fp16_to_f32(dllm_hd_u16(b)), (float)(int8_t)b[2 + j]);
}

/* Q4_0 (18 bytes: fp16 d, qs[16]): y = d * (q - 8). */
DLLM_HD float dllm_hd_q4_0(const uint8_t *b, int j)
{
    return DLLM_FMUL(dllm_hd_fp16_to_f32(dllm_hd_u16(b)), (float)(dllm_hd_nibble32(b + 2, j) - 8));
}

/* Q4_1 (20 bytes: fp16 d, m, qs[16]): y = d * q + m. */
DLLM_HD float dllm_hd_q4_1(const uint8_t *b, int j)
{
    float d = dllm_hd_fp16_to_f32(dllm_hd_u16(b)), m = dllm_hd_fp16_to_f32(dllm_hd_u16(b + 2));
    return DLLM_FADD(DLLM_FMUL(d, (float)dllm_hd_nibble32(b + 4, j)), m);
}

/* The 5-bit quant of element j: the nibble, and bit j of the little-endian 32-bit qh as 16. */
DLLM_HD int dllm_hd_q5(const uint8_t *qh, const uint8_t *qs, int j)
{
    return dllm_hd_nibble32(qs, j) | (int)((dllm_hd_u32(qh) >> j) & 1) << 4;
}

/* Q5_0 (22 bytes: fp16 d, qh[4], qs[16]): y = d * (q - 16). */
DLLM_HD float dllm_hd_q5_0(const uint8_t *b, int j)
{
    return DLLM_FMUL(dllm_hd_fp16_to_f32(dllm_hd_u16(b)),
                     (float)(dllm_hd_q5(b + 2, b + 6, j) - 16));
}

/* Q5_1 (24 bytes: fp16 d, m, qh[4], qs[16]): y = d * q + m. */
DLLM_HD float dllm_hd_q5_1(const uint8_t *b, int j)
{
    float d = dllm_hd_fp16_to_f32(dllm_hd_u16(b)), m = dllm_hd_fp16_to_f32(dllm_hd_u16(b + 2));
    return DLLM_FADD(DLLM_FMUL(d, (float)dllm_hd_q5(b + 4, b + 8, j)), m);
}

/*
 * The 6-bit scale (min false) or min (min true) of sub-block k < 8 of a Q4_K / Q5_K block's
 * 12 packed bytes: k < 4 in the low 6 bits of byte k (mins: k + 4); k >= 4 takes 4 bits from
 * byte k + 4 (mins: the high nibble) and its top 2 bits from byte k - 4 (mins: k).
 */
DLLM_HD int dllm_hd_k4_scale(const uint8_t *s, int k, bool min)
{
    if (k < 4)
        return s[k + (min ? 4 : 0)] & 63;
    int low = min ? s[k + 4] >> 4 : s[k + 4] & 15;
    return low | (s[k - (min ? 0 : 4)] >> 6) << 4;
}

/*
 * Q4_K (144 bytes: fp16 d, dmin, scales[12], qs[128]) and Q5_K (176: ... qh[32] before qs):
 * element j = 64c + 32h + l takes the low (h = 0) or high (h = 1) nibble of qs[32c + l] and,
 * for Q5_K, bit 2c + h of qh[l] as 16; sub-block k = 2c + h;
 * y = (d * sc_k) * q - dmin * mn_k.
 */

/* The quant of element l < 32 of sub-block k of a Q4_K (qh NULL) / Q5_K block. */
DLLM_HD int dllm_hd_k4_q(const uint8_t *qh, const uint8_t *qs, int k, int l)
{
    int q = k & 1 ? qs[32 * (k / 2) + l] >> 4 : qs[32 * (k / 2) + l] & 15;
    if (qh)
        q |= ((qh[l] >> k) & 1) << 4;
    return q;
}

/* d * sc_k and dmin * mn_k of sub-block k of a Q4_K / Q5_K block. */
DLLM_HD void dllm_hd_k4_sub(const uint8_t *b, int k, float *dk, float *mk)
{
    float d = dllm_hd_fp16_to_f32(dllm_hd_u16(b)), dmin = dllm_hd_fp16_to_f32(dllm_hd_u16(b + 2));
    *dk = DLLM_FMUL(d, (float)dllm_hd_k4_scale(b + 4, k, false));
    *mk = DLLM_FMUL(dmin, (float)dllm_hd_k4_scale(b + 4, k, true));
}

DLLM_HD float dllm_hd_k4(const uint8_t *b, const uint8_t *qh, const uint8_t *qs, int j)
{
    float dk, mk;
    dllm_hd_k4_sub(b, j / 32, &dk, &mk);
    return DLLM_FSUB(DLLM_FMUL(dk, (float)dllm_hd_k4_q(qh, qs, j / 32, j & 31)), mk);
}

DLLM_HD float dllm_hd_q4_K(const uint8_t *b, int j)
{
    return dllm_hd_k4(b, 0, b + 16, j);
}

DLLM_HD float dllm_hd_q5_K(const uint8_t *b, int j)
{
    return dllm_hd_k4(b, b + 16, b + 48, j);
}

/*
 * Q6_K (210 bytes: ql[128], qh[64], int8 scales[16], fp16 d): element j = 128 half + 32 k + l
 * takes ql[64 half + 32 (k & 1) + l] (low nibble for k < 2, high for k >= 2) and bits 2k,
 * 2k+1 of qh[32 half + l] as 16 and 32; scale scales[8 half + 2k + l / 16];
 * y = (d * sc) * (q - 32).
 */

/* q - 32 of element l < 32 of the block's 32-element group g = 4 half + k. */
DLLM_HD int dllm_hd_q6_q(const uint8_t *b, int g, int l)
{
    int half = g / 4, k = g & 3;
    int lo = b[64 * half + 32 * (k & 1) + l];
    lo = k < 2 ? lo & 15 : lo >> 4;
    return (lo | ((b[128 + 32 * half + l] >> (2 * k)) & 3) << 4) - 32;
}

/* d * sc of element l < 32 of group g. */
DLLM_HD float dllm_hd_q6_scale(const uint8_t *b, int g, int l)
{
    float d = dllm_hd_fp16_to_f32(dllm_hd_u16(b + 208));
    return DLLM_FMUL(d, (float)(int8_t)b[192 + 8 * (g / 4) + 2 * (g & 3) + l / 16]);
}

DLLM_HD float dllm_hd_q6_K(const uint8_t *b, int j)
{
    return DLLM_FMUL(dllm_hd_q6_scale(b, j / 32, j & 31), (float)dllm_hd_q6_q(b, j / 32, j & 31));
}

/*
 * Q2_K (84 bytes: scales[16], qs[64], fp16 d, dmin) and Q3_K (110 bytes: hmask[32], qs[64],
 * scales[12], fp16 d): element j = 128 h + 32 k + l (l < 32) takes bits 2k, 2k+1 of
 * qs[32 h + l]; its sub-block is j / 16. Q2_K: y = (d * sc) * q - dmin * mn, sc the low and mn
 * the high nibble of scales[j / 16]. Q3_K: a third bit, bit j / 32 of hmask[j % 32] (q - 4 when
 * clear), y = (d * sc) * q with the signed 6-bit scales of dllm_hd_q3_scale.
 */

/* The two low bits of element j of a Q2_K or Q3_K block whose qs start at qs. */
DLLM_HD int dllm_hd_k2_q(const uint8_t *qs, int j)
{
    return qs[32 * (j / 128) + j % 32] >> (2 * (j % 128 / 32)) & 3;
}

DLLM_HD float dllm_hd_q2_K(const uint8_t *b, int j)
{
    const int sc = b[j / 16];
    const float d = dllm_hd_fp16_to_f32(dllm_hd_u16(b + 80));
    const float dmin = dllm_hd_fp16_to_f32(dllm_hd_u16(b + 82));
    const float dl = DLLM_FMUL(d, (float)(sc & 15)), ml = DLLM_FMUL(dmin, (float)(sc >> 4));
    return DLLM_FSUB(DLLM_FMUL(dl, (float)dllm_hd_k2_q(b + 16, j)), ml);
}

/*
 * Scale g of a Q3_K block's 12 scale bytes s, less 32: a nibble of s[g % 4 + 4 (g / 4 % 2)]
 * (the low one for g < 8) and bits 4-5 from bits 2 (g / 4) of s[8 + g % 4].
 */
DLLM_HD int dllm_hd_q3_scale(const uint8_t *s, int g)
{
    const int byte = s[g % 4 + 4 * (g / 4 % 2)];
    const int lo = g < 8 ? byte & 15 : byte >> 4;
    return (lo | (s[8 + g % 4] >> (2 * (g / 4)) & 3) << 4) - 32;
}

DLLM_HD float dllm_hd_q3_K(const uint8_t *b, int j)
{
    const float d = dllm_hd_fp16_to_f32(dllm_hd_u16(b + 108));
    const float dl = DLLM_FMUL(d, (float)dllm_hd_q3_scale(b + 96, j / 16));
    const int high = b[j % 32] >> (j / 32) & 1;
    return DLLM_FMUL(dl, (float)(dllm_hd_k2_q(b + 32, j) - (high ? 0 : 4)));
}

/* Elements per block of the types below; 0 for a type they do not decode. */
DLLM_HD int dllm_hd_block_elems(uint32_t type)
{
    switch (type) {
    case DLLM_TYPE_F32:
    case DLLM_TYPE_F16:
    case DLLM_TYPE_BF16: return 1;
    case DLLM_TYPE_Q4_0:
    case DLLM_TYPE_Q4_1:
    case DLLM_TYPE_Q5_0:
    case DLLM_TYPE_Q5_1:
    case DLLM_TYPE_Q8_0: return 32;
    case DLLM_TYPE_Q2_K:
    case DLLM_TYPE_Q3_K:
    case DLLM_TYPE_Q4_K:
    case DLLM_TYPE_Q5_K:
    case DLLM_TYPE_Q6_K: return 256;
    default: return 0;
    }
}

/* Bytes per block of the types below; 0 for a type they do not decode. */
DLLM_HD int dllm_hd_block_bytes(uint32_t type)
{
    switch (type) {
    case DLLM_TYPE_F32: return 4;
    case DLLM_TYPE_F16:
    case DLLM_TYPE_BF16: return 2;
    case DLLM_TYPE_Q4_0: return 18;
    case DLLM_TYPE_Q4_1: return 20;
    case DLLM_TYPE_Q5_0: return 22;
    case DLLM_TYPE_Q5_1: return 24;
    case DLLM_TYPE_Q8_0: return 34;
    case DLLM_TYPE_Q2_K: return 84;
    case DLLM_TYPE_Q3_K: return 110;
    case DLLM_TYPE_Q4_K: return 144;
    case DLLM_TYPE_Q5_K: return 176;
    case DLLM_TYPE_Q6_K: return 210;
    default: return 0;
    }
}

/* Element j of the block of type at b (a type dllm_hd_block_elems knows; else 0). */
DLLM_HD float dllm_hd_decode(uint32_t type, const uint8_t *b, int j)
{
    switch (type) {
    case DLLM_TYPE_F32: return dllm_hd_float_of(dllm_hd_u32(b));
    case DLLM_TYPE_F16: return dllm_hd_fp16_to_f32(dllm_hd_u16(b));
    case DLLM_TYPE_BF16: return dllm_hd_float_of(dllm_hd_u16(b) << 16);
    case DLLM_TYPE_Q4_0: return dllm_hd_q4_0(b, j);
    case DLLM_TYPE_Q4_1: return dllm_hd_q4_1(b, j);
    case DLLM_TYPE_Q5_0: return dllm_hd_q5_0(b, j);
    case DLLM_TYPE_Q5_1: return dllm_hd_q5_1(b, j);
    case DLLM_TYPE_Q8_0: return dllm_hd_q8_0(b, j);
    case DLLM_TYPE_Q2_K: return dllm_hd_q2_K(b, j);
    case DLLM_TYPE_Q3_K: return dllm_hd_q3_K(b, j);
    case DLLM_TYPE_Q4_K: return dllm_hd_q4_K(b, j);
    case DLLM_TYPE_Q5_K: return dllm_hd_q5_K(b, j);
    case DLLM_TYPE_Q6_K: return dllm_hd_q6_K(b, j);
    default: return 0.0f;
    }
}

/* Whether type is a K-quant that dllm_hd_kquant_lane decodes. */
DLLM_HD bool dllm_hd_is_kquant(uint32_t type)
{
    return type == DLLM_TYPE_Q4_K || type == DLLM_TYPE_Q5_K || type == DLLM_TYPE_Q6_K;
}

/*
 * The 8 elements that lane < 32 of a warp decodes of the K-quant block of type at b, so that the
 * warp's lanes read the block's quants 4 bytes each, side by side (qs of Q4_K and Q5_K, ql of
 * Q6_K, from byte 4 lane): elements first .. first + 3 into out[0..3] and second .. second + 3
 * into out[4..7], second being first + 32 (Q4_K, Q5_K: the byte's high nibbles are the next
 * sub-block) or first + 64 (Q6_K); returns first. dllm_hd_decode's bits, the sub-blocks'
 * scales worked out once.
 */
DLLM_HD int dllm_hd_kquant_lane(uint32_t type, const uint8_t *b, int lane, float out[8],
                                int *second)
{
    if (type == DLLM_TYPE_Q6_K) {
        const int half = lane / 16, kk = lane / 8 % 2, l0 = 4 * (lane % 8);
        const int g = 4 * half + kk, first = 32 * g + l0;
        const float d_lo = dllm_hd_q6_scale(b, g, l0), d_hi = dllm_hd_q6_scale(b, g + 2, l0);
        DLLM_UNROLL
        for (int i = 0; i < 4; i++) {
            out[i] = DLLM_FMUL(d_lo, (float)dllm_hd_q6_q(b, g, l0 + i));
            out[4 + i] = DLLM_FMUL(d_hi, (float)dllm_hd_q6_q(b, g + 2, l0 + i));
        }
        *second = first + 64;
        return first;
    }
    const bool q5 = type == DLLM_TYPE_Q5_K;
    const int c = lane / 8, l0 = 4 * (lane % 8);
    float dk[2], mk[2];
    dllm_hd_k4_sub(b, 2 * c, &dk[0], &mk[0]);
    dllm_hd_k4_sub(b, 2 * c + 1, &dk[1], &mk[1]);
    DLLM_UNROLL
    for (int h = 0; h < 2; h++) {
        DLLM_UNROLL
        for (int i = 0; i < 4; i++) {
            const int q = dllm_hd_k4_q(q5 ? b + 16 : 0, b + (q5 ? 48 : 16), 2 * c + h, l0 + i);
            out[4 * h + i] = DLLM_FSUB(DLLM_FMUL(dk[h], (float)q), mk[h]);
        }
    }
    *second = 64 * c + l0 + 32;
    return 64 * c + l0;
}

/*
 * Elements 32g .. 32g + 31 of the block of type at b into out, g < block elements / 32, or for
 * the one-element types (F32, F16, BF16) the 32 elements from b on (g 0): dllm_hd_decode's bits.
 * The K-quants go by dllm_hd_kquant_lane instead.
 */
DLLM_HD void dllm_hd_decode32(uint32_t type, const uint8_t *b, int g, float out[32])
{
    if (dllm_hd_block_elems(type) == 1) {
        DLLM_UNROLL
        for (int l = 0; l < 32; l++)
            out[l] = dllm_hd_decode(type, b + l * dllm_hd_block_bytes(type), 0);
    } else {
        DLLM_UNROLL
        for (int l = 0; l < 32; l++)
            out[l] = dllm_hd_decode(type, b, 32 * g + l);
    }
}

/* Element i of a row of type's blocks that starts at row. */
DLLM_HD float dllm_hd_row_elem(uint32_t type, const uint8_t *row, int64_t i)
{
    int64_t be = dllm_hd_block_elems(type);
    return dllm_hd_decode(type, row + i / be * dllm_hd_block_bytes(type), (int)(i % be));
}

#endif
