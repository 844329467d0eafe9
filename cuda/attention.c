/* Attention with cuBLAS's batched products around two kernels (cuda/attention.h). */
#include "config.h"

#include "attention.h"
#include "call.h"
#include "kernels.h"

#include <inttypes.h>

/*
 * The most floats of scores a workspace holds where a call's would be more; in the host
 * emulation (tests/cuda-emu) a few rows' worth, so that the tests' calls go in chunks.
 */
#ifdef DLLM_CUDA_EMU
#define SCORES_BUDGET ((int64_t)4 << 10)
#else
#define SCORES_BUDGET ((int64_t)16 << 20)
#endif

int64_t dllm_cuda_attention_score_floats(int64_t n_head, int64_t max_keys, int64_t max_rows)
{
    const int64_t row = n_head * max_keys;
    if (row * max_rows <= SCORES_BUDGET)
        return row * max_rows;
    return row > SCORES_BUDGET ? row : SCORES_BUDGET / row * row;
}

enum dllm_status dllm_cuda_attention(cublasHandle_t blas, cudaStream_t s,
                                     const struct dllm_cuda_attention_ws *ws,
                                     const struct dllm_cuda_heads *heads, const float *q,
                                     const float *k, const float *v, float *out, int64_t n_q,
                                     int64_t n_keys, float scale, struct dllm_error *err)
{
    const int64_t n_head = heads->n_head, hd = heads->head_dim;
    const int64_t q_stride = n_head * hd, kv_stride = heads->n_head_kv * hd;
    if (n_q < 0 || n_keys <= 0 || n_head <= 0 || heads->n_head_kv <= 0 ||
        n_head % heads->n_head_kv != 0 || hd <= 0 || n_keys > INT32_MAX || q_stride > INT32_MAX ||
        ws->score_floats < n_head * n_keys)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "attention of %" PRId64 " heads over %" PRId64
                              " keys: not a shape the CUDA attention takes",
                              n_head, n_keys);
    const int64_t chunk = ws->score_floats / (n_head * n_keys);
    const float one = 1.0f, zero = 0.0f;
    void **p = ws->ptrs;
    enum dllm_status st = DLLM_OK;
    for (int64_t i0 = 0; i0 < n_q && !st; i0 += chunk) {
        const int64_t nq = n_q - i0 < chunk ? n_q - i0 : chunk;
        /* column-major views: S_h^T [n_keys, nq] = K_g (as [head_dim, n_keys])^T Q_h^T, and
         * out_h^T [head_dim, nq] = V_g^T [head_dim, n_keys] P_h^T [n_keys, nq] */
        if ((st = DLLM_CUDA(err, dllm_cuda_attention_pointers(
                                     q + i0 * q_stride, k, v, out + i0 * q_stride, ws->scores, nq,
                                     n_keys, n_head, heads->n_head_kv, hd, p, s))) ||
            (st = DLLM_CUBLAS(
                 err, cublasGemmBatchedEx(
                          blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)n_keys, (int)nq, (int)hd, &scale,
                          (const void *const *)(p + DLLM_ATT_PTR_K * n_head), CUDA_R_32F,
                          (int)kv_stride, (const void *const *)(p + DLLM_ATT_PTR_Q * n_head),
                          CUDA_R_32F, (int)q_stride, &zero, p + DLLM_ATT_PTR_S * n_head, CUDA_R_32F,
                          (int)n_keys, (int)n_head, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT))) ||
            (st = DLLM_CUDA(err, dllm_cuda_softmax_rows(ws->scores, n_head * nq, n_keys, s))))
            break;
        st = DLLM_CUBLAS(
            err, cublasGemmBatchedEx(
                     blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)hd, (int)nq, (int)n_keys, &one,
                     (const void *const *)(p + DLLM_ATT_PTR_V * n_head), CUDA_R_32F, (int)kv_stride,
                     (const void *const *)(p + DLLM_ATT_PTR_S * n_head), CUDA_R_32F, (int)n_keys,
                     &zero, p + DLLM_ATT_PTR_OUT * n_head, CUDA_R_32F, (int)q_stride, (int)n_head,
                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
    return st;
}
