/*
 * Bidirectional grouped-query attention on the GPU, in FP32 with cuBLAS: for a chunk of query
 * rows at a time, every head's scores S_h = scale * Q_h K_g^T (g = h / (n_head / n_head_kv))
 * by one batched product, their softmax down each row (dllm_cuda_softmax_rows), and
 * out_h = P_h V_g by a second batched product: the CPU reference's formulas
 * (dllm_attention_ref), summed in another order. The scores of a chunk live in a workspace
 * the caller sizes with dllm_cuda_attention_score_floats.
 */
#ifndef DLLM_CUDA_ATTENTION_H
#define DLLM_CUDA_ATTENTION_H

#include "dllm.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdint.h>

/* The heads of a model's attention. */
struct dllm_cuda_heads {
    int64_t n_head, n_head_kv, head_dim;
};

/* Device memory the attention works in. */
struct dllm_cuda_attention_ws {
    float *scores;        /* score_floats floats: a chunk's scores */
    int64_t score_floats; /* at least n_head times the keys of a call */
    void **ptrs;          /* DLLM_ATT_PTRS * n_head pointers (cuda/kernels.h) */
};

/*
 * The floats of scores to give a workspace for calls of up to max_rows query rows over up to
 * max_keys keys: all of their scores where that is small, else a budget (64 MB) of whole rows
 * of every head, and at least one such row.
 */
int64_t dllm_cuda_attention_score_floats(int64_t n_head, int64_t max_keys, int64_t max_rows);

/*
 * out [n_q, n_head*head_dim] = softmax(scale * q k^T) v per head over n_keys keys (k, v
 * [n_keys, n_head_kv*head_dim]), in stream s with blas (bound to s), query rows in chunks of as
 * many as the workspace's scores hold. DLLM_ERR_ARG for shapes it cannot take (a workspace
 * too small for one row, heads that do not group); a failed call's status and text (call.h).
 */
enum dllm_status dllm_cuda_attention(cublasHandle_t blas, cudaStream_t s,
                                     const struct dllm_cuda_attention_ws *ws,
                                     const struct dllm_cuda_heads *heads, const float *q,
                                     const float *k, const float *v, float *out, int64_t n_q,
                                     int64_t n_keys, float scale, struct dllm_error *err);

#endif
