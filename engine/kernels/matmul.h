/*
 * Matrix products of float activations with weights in their GGUF block format:
 * y[L, N] = x[L, K] · W[N, K]^T. Row n of W is K / block_elems blocks stored back to back.
 *
 * A product runs in two steps. The activations are first converted, once per x, to the format
 * the weight type multiplies with (its activation format, enum dllm_act_format):
 *   Q4_K, Q5_K, Q6_K             -> Q8_K128 (int8 per 256, a float scale per 128, sums)
 *   Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 -> Q8_0U (Q8_0's int8 per 32 and fp16 scale, kept as bytes
 *                                   + 128, the scale as a float and its product with their sum)
 *   F16 -> F16, BF16 -> BF16 (activations rounded to the weight's format), F32 -> F32.
 * Then any number of row ranges [n0, n1) of W multiply with the converted activations, so
 * callers can share the work between threads. The scratch buffer holds the L converted rows
 * back to back, each dllm_matmul_act_row_bytes(wtype, K) long (quant.h layouts).
 *
 * llama.cpp's CPU backend gives K-quant weights Q8_K activations, one scale per 256 elements
 * (ggml-cpu's vec_dot_type for Q4_K, Q5_K, Q6_K); an outlier in a 256-element chunk then coarsens
 * the step of its other 255 values. A scale per 128 (Q8_K128, each 128 quantised by the same rule)
 * keeps the logits of every fixture model closer to the float64 reference than llama.cpp's
 * (tests/test_forward: worst rows 0.016-0.018 relative L2 where llama.cpp's are 0.018-0.021; with
 * one scale per 256 dllm only matched llama.cpp, and one row missed the bar). A scale per 32 would
 * be closer still (0.012-0.014) but costs a float multiply for every 8 dot-product instructions: on
 * Zen 4 the Q4_K and Q6_K products of the LLaDA-8B shapes ran 10-17% slower (bench/bench_gemm, one
 * thread) than with one scale per 128, where each sub-block scale of the weights takes one FMA
 * and the activation scale one per 128 elements.
 * Q8_0 weights keep llama.cpp's Q8_0 activations, their values stored as the tiles read them.
 *
 * The *_ref functions are the scalar specification; faster variants must match them within a
 * tolerance. Inside an activation block (128 elements of Q8_K128, 32 of Q8_0) the products are
 * exact int32 sums and block contributions accumulate in float; F32, F16 and BF16 products are
 * float and their sums double.
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

/* The formats activations are converted to; none is a GGML type stored in files. */
enum dllm_act_format {
    DLLM_ACT_Q8_K128, /* struct block_q8_K128 per 256 elements */
    DLLM_ACT_Q8_0,    /* struct block_q8_0u per 32 elements */
    DLLM_ACT_F16,     /* dllm_fp16 per element */
    DLLM_ACT_BF16,    /* dllm_bf16 per element */
    DLLM_ACT_F32,     /* float per element */
};

/* The activation format a supported weight type multiplies with. */
enum dllm_act_format dllm_matmul_act_format(uint32_t wtype);

/*
 * Bytes of one activation row of K elements converted for wtype. K must be a multiple of the
 * weight type's block size (256 for K-quants, 32 for the others).
 */
size_t dllm_matmul_act_row_bytes(uint32_t wtype, int64_t K);

/* Bytes of one weight row of K elements of a GGML type, its blocks back to back. */
size_t dllm_matmul_row_bytes(uint32_t type, int64_t K);

/* Bytes of scratch for L activation rows of K elements converted for wtype. */
size_t dllm_matmul_scratch_bytes(uint32_t wtype, int64_t K, int64_t L);

/* Converts x[L, K] (row l at x + l*K) to wtype's activation format in scratch. */
void dllm_matmul_quantize_ref(uint32_t wtype, const float *x, int64_t K, int64_t L, void *scratch);

/*
 * y[l*ldy + n] = sum_k W[n, k] * x[l, k] for n in [n0, n1) and l in [0, L), where w points at
 * row 0 of W and scratch holds x as converted by dllm_matmul_quantize_ref. Other elements of y
 * are left alone. Allocates nothing.
 */
void dllm_matmul_rows_ref(uint32_t wtype, const void *w, int64_t K, int64_t n0, int64_t n1,
                          const void *scratch, int64_t L, float *y, int64_t ldy);

#endif
