/*
 * Bidirectional grouped-query attention without a stored score matrix (cuda/kernels.h): one
 * block of ATT_THREADS threads per (query row, head), keys in tiles of ATT_THREADS with an
 * online softmax. For each tile, thread t scores key j0 + t, s_j = scale * q . k_j; the tile's
 * maximum m' updates the running maximum m, the running sums are rescaled by e^(m - m'), and
 * thread t adds p_j v_j[d] (p_j = e^(s_j - m')) to the output dimensions d = t, t + ATT_THREADS
 * it owns; the denominator sums the p_j in double, as the reference's does. At the end
 * out = acc / denominator. All in FP32 on CUDA cores (tensor cores are a follow-up).
 */
#include "kernels.h"
#include "launch.cuh"

#include <math.h>

#define ATT_THREADS 128
#define ATT_DIMS    2 /* output dimensions a thread owns: head_dim <= ATT_THREADS * ATT_DIMS */

static __global__ void __launch_bounds__(ATT_THREADS)
    attention_kernel(const float *q, const float *k, const float *v, float *out, int64_t n_keys,
                     int64_t n_head, int64_t group, int64_t head_dim, int64_t kv_stride,
                     float scale)
{
    __shared__ float qs[ATT_THREADS * ATT_DIMS];
    __shared__ float p[ATT_THREADS];
    __shared__ double red[ATT_THREADS];
    __shared__ float tile_max;
    const int t = (int)threadIdx.x;
    const int64_t i = blockIdx.x / n_head, h = blockIdx.x % n_head;
    const int64_t q_off = (i * n_head + h) * head_dim, kv_off = (h / group) * head_dim;
    for (int64_t d = t; d < head_dim; d += ATT_THREADS)
        qs[d] = q[q_off + d];
    float acc[ATT_DIMS] = {0.0f};
    float m = -INFINITY;
    double denom = 0.0;
    __syncthreads();
    for (int64_t j0 = 0; j0 < n_keys; j0 += ATT_THREADS) {
        const int64_t j = j0 + t;
        float s = -INFINITY;
        if (j < n_keys) {
            const float *kj = k + j * kv_stride + kv_off;
            float dot = 0.0f;
            for (int64_t d = 0; d < head_dim; d++)
                dot = fmaf(qs[d], kj[d], dot);
            s = dot * scale;
        }
        p[t] = s;
        __syncthreads();
        if (t == 0) {
            float mx = p[0];
            for (int u = 1; u < ATT_THREADS; u++)
                mx = fmaxf(mx, p[u]);
            tile_max = mx;
        }
        __syncthreads();
        const float m_new = fmaxf(m, tile_max);
        const float corr = expf(m - m_new); /* 0 on the first tile: m is -inf */
        const float e = j < n_keys ? expf(s - m_new) : 0.0f;
        /* thread 0 read the scores in p before the barrier above: p now takes the weights */
        p[t] = e;
        red[t] = (double)e;
        __syncthreads();
        for (int hh = ATT_THREADS / 2; hh > 0; hh /= 2) {
            if (t < hh)
                red[t] += red[t + hh];
            __syncthreads();
        }
        denom = denom * (double)corr + red[0];
        const int64_t n_tile = n_keys - j0 < ATT_THREADS ? n_keys - j0 : ATT_THREADS;
        for (int r = 0; r < ATT_DIMS; r++) {
            const int64_t d = t + (int64_t)r * ATT_THREADS;
            if (d >= head_dim)
                break;
            float a = acc[r] * corr;
            for (int64_t u = 0; u < n_tile; u++)
                a = fmaf(p[u], v[(j0 + u) * kv_stride + kv_off + d], a);
            acc[r] = a;
        }
        m = m_new;
        __syncthreads(); /* p and red are rewritten by the next tile */
    }
    const float inv = (float)(1.0 / denom);
    for (int r = 0; r < ATT_DIMS; r++) {
        const int64_t d = t + (int64_t)r * ATT_THREADS;
        if (d < head_dim)
            out[q_off + d] = acc[r] * inv;
    }
}

extern "C" cudaError_t dllm_cuda_attention(const float *q, const float *k, const float *v,
                                           float *out, int64_t n_q, int64_t n_keys, int64_t n_head,
                                           int64_t n_head_kv, int64_t head_dim, float scale,
                                           cudaStream_t s)
{
    if (n_q < 0 || n_keys <= 0 || n_head <= 0 || n_head_kv <= 0 || n_head % n_head_kv != 0 ||
        head_dim <= 0 || head_dim > ATT_THREADS * ATT_DIMS || n_q > INT32_MAX / n_head || !q ||
        !k || !v || !out)
        return cudaErrorInvalidValue;
    if (n_q == 0)
        return cudaSuccess;
    DLLM_LAUNCH(attention_kernel, (unsigned)(n_q * n_head), ATT_THREADS, s)
    (q, k, v, out, n_keys, n_head, n_head / n_head_kv, head_dim, n_head_kv * head_dim, scale);
    return cudaGetLastError();
}
