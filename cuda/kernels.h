/*
 * cuda/kernels.h: C-callable launchers of dllm's CUDA kernels. Every pointer is device memory
 * unless named host; matrices are row-major; each call enqueues work on stream s and returns
 * cudaGetLastError() after the launch (cudaSuccess, or cudaErrorInvalidValue for an argument
 * it cannot handle, such as an unsupported type). Half-precision buffers are uint16_t bit
 * patterns (IEEE binary16) so that C callers need no cuda_fp16.h.
 */
#ifndef DLLM_CUDA_KERNELS_H
#define DLLM_CUDA_KERNELS_H

#include <cuda_runtime.h>
#include <stdbool.h>
#include <stdint.h>

struct dllm_row_stats; /* engine/dllm.h */

#ifdef __cplusplus
extern "C" {
#endif

/* Whether dllm_cuda_dequant_f16 / dllm_cuda_get_rows handle this GGUF type (enum dllm_type). */
bool dllm_cuda_type_supported(uint32_t type);

/*
 * dst[n_rows, n_cols] (binary16) = the GGUF matrix of n_rows rows of n_cols elements, each row
 * its blocks back to back (n_cols a multiple of the type's block size).
 */
cudaError_t dllm_cuda_dequant_f16(uint32_t type, const void *blocks, int64_t n_rows, int64_t n_cols,
                                  uint16_t *dst, cudaStream_t s);

/* dst[i, :] (float) = row ids[i] of the GGUF matrix of n_cols-element rows (embedding). */
cudaError_t dllm_cuda_get_rows(uint32_t type, const void *blocks, int64_t n_cols,
                               const int32_t *ids, int64_t n, float *dst, cudaStream_t s);

/* dst[0..n) (binary16) = src (float), round to nearest even. */
cudaError_t dllm_cuda_f32_to_f16(const float *src, int64_t n, uint16_t *dst, cudaStream_t s);

/* The same for a product's activations: beyond +-65504 clamped (dllm_hd_f32_to_fp16_sat). */
cudaError_t dllm_cuda_f32_to_f16_sat(const float *src, int64_t n, uint16_t *dst, cudaStream_t s);

/* dst[0..n) (float) = src (binary16), exactly. */
cudaError_t dllm_cuda_f16_to_f32(const uint16_t *src, int64_t n, float *dst, cudaStream_t s);

/*
 * dst[r, :] = (src[r, :] * s_r) * g with s_r = 1 / sqrtf(mean(src[r, :]^2) + eps), the mean
 * in double rounded to float as engine/kernels/ops-ref.c's dllm_rms_norm_ref, for rows*n
 * floats, rows of n (dst may equal src). Used per head for QK-norm with n = head_dim.
 */
cudaError_t dllm_cuda_rms_norm(const float *src, const float *g, int64_t rows, int64_t n, float eps,
                               float *dst, cudaStream_t s);

/*
 * x[r, :] += src[r, :], then dst[r, :] = RMSNorm(x[r, :]) * g as dllm_cuda_rms_norm, for rows
 * rows of n (dst may equal src): the residual sum and the next block's norm in one launch.
 */
cudaError_t dllm_cuda_add_rms_norm(float *x, const float *src, const float *g, int64_t rows,
                                   int64_t n, float eps, float *dst, cudaStream_t s);

/*
 * RoPE in place on x [rows, n_head * head_dim]: row r at position pos[r]; the first n_rot
 * dims of each head rotate by theta_i = pos * step^i with step = powf(freq_base, -2/n_rot),
 * the powers formed by repeated float multiplication (engine/kernels/ops-ref.c's
 * dllm_rope_table); neox: pairs (i, i+n_rot/2), else adjacent pairs (2i, 2i+1);
 * x'_a = x_a cos - x_b sin, x'_b = x_a sin + x_b cos as dllm_rope_ref.
 */
cudaError_t dllm_cuda_rope(float *x, int64_t rows, int64_t n_head, int64_t head_dim, int64_t n_rot,
                           const int32_t *pos, float freq_base, bool neox, cudaStream_t s);

/*
 * The operands of attention's batched products (cuda/attention.c) for query rows q [n_q,
 * n_head*head_dim], keys k and values v [n_keys, n_head_kv*head_dim], scores [n_head, n_q,
 * n_keys] and out [n_q, n_head*head_dim]: ptrs[p * n_head + h] for q head h (kv head
 * h / (n_head / n_head_kv)) and the enum dllm_att_ptr p, device pointers to the head's first
 * element in each.
 */
enum dllm_att_ptr {
    DLLM_ATT_PTR_K,
    DLLM_ATT_PTR_Q,
    DLLM_ATT_PTR_S,
    DLLM_ATT_PTR_V,
    DLLM_ATT_PTR_OUT,
    DLLM_ATT_PTRS
};
cudaError_t dllm_cuda_attention_pointers(const float *q, const float *k, const float *v, float *out,
                                         float *scores, int64_t n_q, int64_t n_keys, int64_t n_head,
                                         int64_t n_head_kv, int64_t head_dim, void **ptrs,
                                         cudaStream_t s);

/*
 * Each of the rows of s (n floats each, in place) to its softmax weights as
 * engine/kernels/ops-ref.c's dllm_attention_ref forms them: p_j = e^(s_j - max) (expf), the
 * denominator summed in double (in another order), p_j times its inverse rounded to float.
 */
cudaError_t dllm_cuda_softmax_rows(float *s, int64_t rows, int64_t n, cudaStream_t st);

/* gate[i] = silu(gate[i]) * up[i], i < n, silu(x) = x / (1 + e^-x). */
cudaError_t dllm_cuda_swiglu(float *gate, const float *up, int64_t n, cudaStream_t s);

/* x[i] += src[i], i < n. */
cudaError_t dllm_cuda_add(float *x, const float *src, int64_t n, cudaStream_t s);

/* x[r, j] += b[j] for rows rows of n. */
cudaError_t dllm_cuda_add_bias(float *x, const float *b, int64_t rows, int64_t n, cudaStream_t s);

/*
 * out[r] = the statistics (engine/dllm.h struct dllm_row_stats: argmax with the lowest index
 * on ties, max, second, lse, entropy) of row r of logits [R, n_vocab]; out is device memory.
 * The formulas are engine/backend-cpu.c's row_stats (cuda/rowstats.h); the sums are taken in
 * another order, so lse and entropy may differ in their last bits.
 */
cudaError_t dllm_cuda_row_stats(const float *logits, int64_t R, int64_t n_vocab,
                                struct dllm_row_stats *out, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
