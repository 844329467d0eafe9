/*
 * The block layouts of GGML's quantized tensor types as GGUF files store them (ggml's
 * ggml-common.h): types only, shared by the decoders and kernels and by the synthetic-model
 * writer's encoders.
 */
#ifndef DLLM_GGUF_BLOCKS_H
#define DLLM_GGUF_BLOCKS_H

#include <assert.h>
#include <stdint.h>

#define QK_K  256 /* elements per K-quant super-block */
#define QK8_0 32  /* elements per Q8_0 / Q4_0 / Q5_0 block */

typedef uint16_t dllm_fp16; /* IEEE binary16 bits */
typedef uint16_t dllm_bf16; /* bfloat16 bits */

struct block_q8_0 {
    dllm_fp16 d;
    int8_t qs[QK8_0];
};
static_assert(sizeof(struct block_q8_0) == 34, "Q8_0 block is 34 bytes");

struct block_q4_0 {
    dllm_fp16 d;
    uint8_t qs[QK8_0 / 2];
};
static_assert(sizeof(struct block_q4_0) == 18, "Q4_0 block is 18 bytes");

struct block_q4_1 {
    dllm_fp16 d, m;
    uint8_t qs[QK8_0 / 2];
};
static_assert(sizeof(struct block_q4_1) == 20, "Q4_1 block is 20 bytes");

struct block_q5_0 {
    dllm_fp16 d;
    uint8_t qh[4];
    uint8_t qs[QK8_0 / 2];
};
static_assert(sizeof(struct block_q5_0) == 22, "Q5_0 block is 22 bytes");

struct block_q5_1 {
    dllm_fp16 d, m;
    uint8_t qh[4];
    uint8_t qs[QK8_0 / 2];
};
static_assert(sizeof(struct block_q5_1) == 24, "Q5_1 block is 24 bytes");

struct block_q2_K {
    uint8_t scales[QK_K / 16]; /* per sub-block of 16: scale in the low nibble, min high */
    uint8_t qs[QK_K / 4];
    dllm_fp16 d, dmin;
};
static_assert(sizeof(struct block_q2_K) == 84, "Q2_K block is 84 bytes");

struct block_q3_K {
    uint8_t hmask[QK_K / 8]; /* the third bit of each element */
    uint8_t qs[QK_K / 4];    /* the low two bits */
    uint8_t scales[12];      /* 16 6-bit scales (dllm_q3_K_scales) */
    dllm_fp16 d;
};
static_assert(sizeof(struct block_q3_K) == 110, "Q3_K block is 110 bytes");

struct block_q4_K {
    dllm_fp16 d, dmin;
    uint8_t scales[12];
    uint8_t qs[QK_K / 2];
};
static_assert(sizeof(struct block_q4_K) == 144, "Q4_K block is 144 bytes");

struct block_q5_K {
    dllm_fp16 d, dmin;
    uint8_t scales[12];
    uint8_t qh[QK_K / 8];
    uint8_t qs[QK_K / 2];
};
static_assert(sizeof(struct block_q5_K) == 176, "Q5_K block is 176 bytes");

struct block_q6_K {
    uint8_t ql[QK_K / 2];
    uint8_t qh[QK_K / 4];
    int8_t scales[QK_K / 16];
    dllm_fp16 d;
};
static_assert(sizeof(struct block_q6_K) == 210, "Q6_K block is 210 bytes");

#endif
