/*
 * Conversion of float arrays to IEEE binary16 and back, for K/V caches stored in float16.
 * The reference converts each element by gguf/quant.h's dllm_f32_to_fp16 (round to nearest,
 * ties to even; magnitudes from 65520 up become inf; subnormal halves exact; NaNs stay NaN,
 * quiet) and dllm_fp16_to_f32 (exact). The SIMD variants (F16C, AVX-512F) give the same bits,
 * except that a signalling NaN half comes back to float quiet (its quiet bit set). Variants
 * are chosen at run time alongside the matrix kernels (kernels/cpu.h). None allocates; n may
 * be 0.
 */
#ifndef DLLM_KERNELS_FP16_H
#define DLLM_KERNELS_FP16_H

#include "dllm.h"
#include "gguf/blocks.h"

#include <stddef.h>
#include <stdint.h>

struct dllm_kernels;

/* One variant. */
struct dllm_fp16_kernels {
    const char *name;  /* "ref", "avx2" or "avx512" */
    unsigned features; /* the enum dllm_cpu_feature bits it needs */
    /* y[i] = x[i] rounded to binary16, i < n. */
    void (*from_f32)(const float *x, int64_t n, dllm_fp16 *y);
    /* y[i] = the binary16 x[i] as float, i < n. */
    void (*to_f32)(const dllm_fp16 *x, int64_t n, float *y);
};

/* All variants, slowest (the reference) first; *n receives their count. */
const struct dllm_fp16_kernels *dllm_fp16_all(size_t *n);

/* Whether this CPU runs a variant. */
bool dllm_fp16_usable(const struct dllm_fp16_kernels *v);

/* The fastest variant that needs no CPU feature beyond those of the matrix kernels k. */
const struct dllm_fp16_kernels *dllm_fp16_for(const struct dllm_kernels *k);

/* The variants' entry points, defined in fp16-<name>.c. */
void dllm_fp16_from_f32_ref(const float *x, int64_t n, dllm_fp16 *y);
void dllm_fp16_to_f32_ref(const dllm_fp16 *x, int64_t n, float *y);
void dllm_fp16_from_f32_avx2(const float *x, int64_t n, dllm_fp16 *y);
void dllm_fp16_to_f32_avx2(const dllm_fp16 *x, int64_t n, float *y);
void dllm_fp16_from_f32_avx512(const float *x, int64_t n, dllm_fp16 *y);
void dllm_fp16_to_f32_avx512(const dllm_fp16 *x, int64_t n, float *y);

#endif
