/*
 * The two kernels of the attention that cuda/attention.c builds around cuBLAS's batched
 * products (cuda/kernels.h): the arrays of per-head operand pointers those products take, and
 * the softmax of each row of scores, as the CPU reference forms it (engine/kernels/ops-ref.c's
 * dllm_attention_ref): e^(s - max) in float, the denominator summed in double, each weight the
 * exponential times the denominator's inverse rounded to float.
 */
#include "kernels.h"
#include "launch.cuh"

#include <math.h>

#define SOFTMAX_THREADS 128 /* threads a row of scores takes; a power of two */

/* The pointers of dllm_cuda_attention_pointers, head h by thread h of the grid. */
static __global__ void attention_pointers_kernel(const float *q, const float *k, const float *v,
                                                 float *out, float *scores, int64_t n_q,
                                                 int64_t n_keys, int64_t n_head, int64_t group,
                                                 int64_t head_dim, void **ptrs)
{
    for (int64_t h = dllm_cuda_first(); h < n_head; h += dllm_cuda_stride()) {
        const int64_t kv = (h / group) * head_dim;
        float *s = scores + h * n_q * n_keys;
        ptrs[DLLM_ATT_PTR_K * n_head + h] = (void *)(k + kv);
        ptrs[DLLM_ATT_PTR_Q * n_head + h] = (void *)(q + h * head_dim);
        ptrs[DLLM_ATT_PTR_S * n_head + h] = s;
        ptrs[DLLM_ATT_PTR_V * n_head + h] = (void *)(v + kv);
        ptrs[DLLM_ATT_PTR_OUT * n_head + h] = out + h * head_dim;
    }
}

extern "C" cudaError_t dllm_cuda_attention_pointers(const float *q, const float *k, const float *v,
                                                    float *out, float *scores, int64_t n_q,
                                                    int64_t n_keys, int64_t n_head,
                                                    int64_t n_head_kv, int64_t head_dim,
                                                    void **ptrs, cudaStream_t s)
{
    if (n_q <= 0 || n_keys <= 0 || n_head <= 0 || n_head_kv <= 0 || n_head % n_head_kv != 0 ||
        head_dim <= 0 || !q || !k || !v || !out || !scores || !ptrs)
        return cudaErrorInvalidValue;
    DLLM_LAUNCH(attention_pointers_kernel, dllm_cuda_blocks(n_head), DLLM_CUDA_THREADS, s)
    (q, k, v, out, scores, n_q, n_keys, n_head, n_head / n_head_kv, head_dim, ptrs);
    return cudaGetLastError();
}

/* Row blockIdx.x of s (n floats): the softmax weights in place. */
static __global__ void __launch_bounds__(SOFTMAX_THREADS) softmax_rows_kernel(float *s, int64_t n)
{
    __shared__ float top[SOFTMAX_THREADS];
    __shared__ double sum[SOFTMAX_THREADS];
    float *row = s + (int64_t)blockIdx.x * n;
    const int t = (int)threadIdx.x;
    float m = -INFINITY;
    for (int64_t j = t; j < n; j += SOFTMAX_THREADS)
        m = fmaxf(m, row[j]);
    top[t] = m;
    __syncthreads();
    for (int h = SOFTMAX_THREADS / 2; h > 0; h /= 2) {
        if (t < h)
            top[t] = fmaxf(top[t], top[t + h]);
        __syncthreads();
    }
    const float max = top[0];
    double part = 0.0;
    for (int64_t j = t; j < n; j += SOFTMAX_THREADS) {
        const float e = expf(row[j] - max);
        row[j] = e;
        part += (double)e;
    }
    sum[t] = part;
    __syncthreads();
    for (int h = SOFTMAX_THREADS / 2; h > 0; h /= 2) {
        if (t < h)
            sum[t] += sum[t + h];
        __syncthreads();
    }
    const float inv = (float)(1.0 / sum[0]);
    for (int64_t j = t; j < n; j += SOFTMAX_THREADS)
        row[j] *= inv;
}

extern "C" cudaError_t dllm_cuda_softmax_rows(float *s, int64_t rows, int64_t n, cudaStream_t st)
{
    if (rows < 0 || rows > INT32_MAX || n <= 0 || !s)
        return cudaErrorInvalidValue;
    if (rows == 0)
        return cudaSuccess;
    DLLM_LAUNCH(softmax_rows_kernel, (unsigned)rows, SOFTMAX_THREADS, st)(s, n);
    return cudaGetLastError();
}
