/*
 * Tensor types: the engine's traits of each type and the scalar reference decoders (one row
 * of blocks to float); the file block layouts are in blocks.h.
 */
#ifndef DLLM_QUANT_H
#define DLLM_QUANT_H

#include "blocks.h"
#include "dllm.h"

#include <assert.h>
#include <stdint.h>
#include <string.h>

/* The bits of a float (IEEE 754 binary32). */
static inline uint32_t dllm_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* The float of the given bits. */
static inline float dllm_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Q8_K, the activation blocks llama.cpp multiplies K-quant weights with. */
struct block_q8_K {
    float d;
    int8_t qs[QK_K];
    int16_t bsums[QK_K / 16];
};
static_assert(sizeof(struct block_q8_K) == 292, "Q8_K block is 292 bytes");

/*
 * The activation format dllm multiplies K-quant weights with (kernels/matmul.h): int8 values
 * with a float scale per 128 elements instead of llama.cpp's one per 256. Element e has the
 * value d[e / 128] * qs[e]. Beside them, what the kernels would otherwise recompute for every
 * weight row: sums[j], the sum of qs[32j .. 32j+31] (for the mins of Q4_K and Q5_K), sums16[g],
 * the sum of qs[16g .. 16g+15], and q6off[g], -32 times sums16[g] (for Q6_K's offset of 32).
 * Only ever in scratch buffers, never in files, so it has no GGML type id.
 */
#define QK8_K128 128 /* elements per scale */
struct block_q8_K128 {
    float d[QK_K / QK8_K128];
    int16_t sums[QK_K / 32];
    int16_t sums16[QK_K / 16];
    int32_t q6off[QK_K / 16];
    int8_t qs[QK_K];
};
static_assert(sizeof(struct block_q8_K128) == 376, "Q8_K128 block is 376 bytes");

/*
 * The activation format dllm multiplies Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 weights with
 * (kernels/matmul.h): llama.cpp's Q8_0 quantization of 32 elements, kept as the kernels read
 * it. d is the block's scale after rounding to fp16, as a float; u[j] = q[j] + 128, unsigned
 * as the int8 dot products take their first operand (element j has the value
 * d * (u[j] - 128)); dsum = d * (float)(the sum of the q[j]), for the mins of Q4_1 and Q5_1.
 * Only ever in scratch buffers, so it has no GGML type id.
 */
struct block_q8_0u {
    float d;
    float dsum;
    uint8_t u[QK8_0];
};
static_assert(sizeof(struct block_q8_0u) == 40, "Q8_0U block is 40 bytes");

/* Decodes n elements (a multiple of the block size) starting at the block pointer src. */
typedef void (*dllm_decode_fn)(const void *src, float *dst, int64_t n);

/* What the engine knows of a tensor type. */
struct dllm_type_traits {
    const char *name;      /* "Q4_K"; NULL for ids no GGML version defines */
    int64_t block_elems;   /* elements per block */
    size_t block_bytes;    /* bytes per block */
    dllm_decode_fn decode; /* NULL when dllm has no decoder */
};

/* Traits of a type id, or NULL when the id is out of range or undefined. */
const struct dllm_type_traits *dllm_type_traits(uint32_t type);

/*
 * The eight 6-bit scales and mins of a Q4_K / Q5_K block. Bytes 0-3 hold scales 0-3 and bytes
 * 4-7 mins 0-3 in their low 6 bits; scales and mins 4-7 take their low nibbles from bytes 8-11
 * (scale low, min high) and their top two bits from the top of bytes 0-3 (scales) and 4-7
 * (mins). This is ggml's get_scale_min_k4.
 */
void dllm_k4_scales_mins(const uint8_t s[12], uint8_t sc[8], uint8_t mn[8]);

/*
 * The sixteen scales of a Q3_K block, less their offset of 32 (-32..31). Scale j < 4 takes the
 * low nibble of s[j], j + 4 that of s[4 + j], j + 8 the high nibble of s[j], j + 12 that of
 * s[4 + j]; each gets bits 4-5 from s[8 + j % 4], its two bits 2 * (j / 4) up. This is how
 * ggml's dequantize_row_q3_K unpacks them (kmask1, kmask2).
 */
void dllm_q3_K_scales(const uint8_t s[12], int8_t sc[16]);

/*
 * The low two bits of element e of a Q2_K or Q3_K block, from its 64 qs bytes: for
 * e = 128 h + 32 j + 16 k + l (h < 2, j < 4, k < 2, l < 16), bits 2 j of qs[32 h + 16 k + l].
 */
int dllm_k2_low_bits(const uint8_t qs[64], int e);

/* The 3-bit value (0..7, 4 more than the signed one) of element e of a Q3_K block: its low
 * two bits and, as the third, bit e / 32 of hmask[e % 32]. */
int dllm_q3_K_value(const uint8_t hmask[32], const uint8_t qs[64], int e);

float dllm_fp16_to_f32(dllm_fp16 h);
float dllm_bf16_to_f32(dllm_bf16 h);
dllm_bf16 dllm_f32_to_bf16(float f);

#endif
