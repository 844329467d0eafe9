/*
 * Matrix products of float activations with weights in their GGUF block format:
 * y[L, N] = x[L, K] · W[N, K]^T. Row n of W is K / block_elems blocks stored back to back.
 *
 * A product runs in two steps. The activations are first converted, once per x, to the format
 * the weight type multiplies with (its activation type):
 *   Q4_K, Q5_K, Q6_K             -> Q8_K (int8 per 256, float scale, 16-element sums)
 *   Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 -> Q8_0 (int8 per 32, fp16 scale)
 *   F16 -> F16, BF16 -> BF16 (activations rounded to the weight's format), F32 -> F32.
 * Then any number of row ranges [n0, n1) of W multiply with the converted activations, so
 * callers can share the work between threads. The scratch buffer holds the L converted rows
 * back to back, each row K / block_elems blocks of the activation type (quant.h layouts).
 *
 * The *_ref functions are the scalar specification; faster variants must match them within a
 * tolerance. Inside a quantised block the products are exact int32 sums and block contributions
 * accumulate in float; F32, F16 and BF16 products are float and their sums double. See
 * shared/docs/reference.md C.5 and C.6.
 */
#ifndef DLLM_KERNELS_MATMUL_H
#define DLLM_KERNELS_MATMUL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether a weight type (enum dllm_type) has a matrix kernel. */
bool dllm_matmul_supported(uint32_t wtype);

/* The supported weight types as text, "Q4_K, Q5_K, ...", for error messages. */
const char *dllm_matmul_supported_list(void);

/* The activation type (enum dllm_type) a supported weight type multiplies with. */
uint32_t dllm_matmul_act_type(uint32_t wtype);

/*
 * Bytes of scratch for L activation rows of K elements converted for wtype. K must be a
 * multiple of the weight type's block size (256 for K-quants, 32 for the others).
 */
size_t dllm_matmul_scratch_bytes(uint32_t wtype, int64_t K, int64_t L);

/* Converts x[L, K] (row l at x + l*K) to wtype's activation type in scratch. */
void dllm_matmul_quantize_ref(uint32_t wtype, const float *x, int64_t K, int64_t L, void *scratch);

/*
 * y[l*ldy + n] = sum_k W[n, k] * x[l, k] for n in [n0, n1) and l in [0, L), where w points at
 * row 0 of W and scratch holds x as converted by dllm_matmul_quantize_ref. Other elements of y
 * are left alone. Allocates nothing.
 */
void dllm_matmul_rows_ref(uint32_t wtype, const void *w, int64_t K, int64_t n0, int64_t n1,
                          const void *scratch, int64_t L, float *y, int64_t ldy);

#endif
