/*
 * Bidirectional grouped-query attention without a stored score matrix (cuda/kernels.h). A
 * block of ATT_THREADS threads takes ATT_ROWS query rows of one head and walks the keys in
 * tiles of ATT_KEYS, each tile's K and then its V rows staged in shared memory (read once for
 * all the block's rows, coalesced; rows padded by one float so that threads reading one
 * dimension of different rows hit different banks), with an online softmax per query row: the
 * tile's scores s_j = scale * q . k_j, the row's running maximum m raised to m', the running
 * sums rescaled by e^(m - m'), p_j = e^(s_j - m') added, the output accumulating p_j v_j in
 * the dimensions each thread owns (d = t, t + ATT_THREADS). The denominator sums the p_j in
 * double, as the reference's does; at the end out = acc / denominator. FP32 on CUDA cores
 * (tensor cores are a follow-up).
 */
#include "kernels.h"
#include "launch.cuh"

#include <math.h>

#define ATT_THREADS 128
#define ATT_ROWS    8   /* query rows a block takes */
#define ATT_KEYS    32  /* keys a tile holds */
#define ATT_DIMS    2   /* output dimensions a thread owns: head_dim <= ATT_THREADS * ATT_DIMS */
#define ATT_MAX_DIM (ATT_THREADS * ATT_DIMS)

/* Rows [0, n) of src (row stride src_stride floats) into dst, dim floats each, dst's rows
 * dim + 1 floats apart; thread t copies dimensions t, t + ATT_THREADS, ... of every row. */
static __device__ void stage_rows(float *dst, const float *src, int n, int dim,
                                  int64_t src_stride, int t)
{
    for (int r = 0; r < n; r++)
        for (int d = t; d < dim; d += ATT_THREADS)
            dst[r * (dim + 1) + d] = src[r * src_stride + d];
}

static __global__ void __launch_bounds__(ATT_THREADS)
    attention_kernel(const float *q, const float *k, const float *v, float *out, int64_t n_q,
                     int64_t n_keys, int64_t n_head, int64_t group, int head_dim,
                     int64_t kv_stride, float scale)
{
    __shared__ float qs[ATT_ROWS * (ATT_MAX_DIM + 1)];
    __shared__ float tile[ATT_KEYS * (ATT_MAX_DIM + 1)]; /* the tile's K rows, then its V rows */
    __shared__ float p[ATT_ROWS * ATT_KEYS];            /* scores, then weights */
    __shared__ float row_max[ATT_ROWS], corr[ATT_ROWS];
    __shared__ double denom[ATT_ROWS];
    const int t = (int)threadIdx.x, stride = head_dim + 1;
    const int64_t i0 = (int64_t)(blockIdx.x / n_head) * ATT_ROWS, h = blockIdx.x % n_head;
    const int64_t q_stride = n_head * head_dim, kv_off = (h / group) * head_dim;
    const int n_rows = n_q - i0 < ATT_ROWS ? (int)(n_q - i0) : ATT_ROWS;
    stage_rows(qs, q + i0 * q_stride + h * head_dim, n_rows, head_dim, q_stride, t);
    for (int r = n_rows; r < ATT_ROWS; r++) /* rows past the last query: zeros, never written */
        for (int d = t; d < head_dim; d += ATT_THREADS)
            qs[r * stride + d] = 0.0f;
    if (t < ATT_ROWS) {
        row_max[t] = -INFINITY;
        denom[t] = 0.0;
    }
    float acc[ATT_ROWS][ATT_DIMS] = {{0.0f}};
    const int jj = t % ATT_KEYS; /* the key this thread scores, for rows t / ATT_KEYS + 4n */
    for (int64_t j0 = 0; j0 < n_keys; j0 += ATT_KEYS) {
        const int n_tile = n_keys - j0 < ATT_KEYS ? (int)(n_keys - j0) : ATT_KEYS;
        stage_rows(tile, k + j0 * kv_stride + kv_off, n_tile, head_dim, kv_stride, t);
        __syncthreads();
        for (int r = t / ATT_KEYS; r < ATT_ROWS; r += ATT_THREADS / ATT_KEYS) {
            float s = -INFINITY;
            if (jj < n_tile) {
                float dot = 0.0f;
                for (int d = 0; d < head_dim; d++)
                    dot = fmaf(qs[r * stride + d], tile[jj * stride + d], dot);
                s = dot * scale;
            }
            p[r * ATT_KEYS + jj] = s;
        }
        __syncthreads();
        /* each row's new maximum and its rescale factor (0 on the first tile: m is -inf),
         * while the tile's V rows replace its K rows */
        if (t < ATT_ROWS) {
            float m = row_max[t];
            for (int u = 0; u < n_tile; u++)
                m = fmaxf(m, p[t * ATT_KEYS + u]);
            corr[t] = expf(row_max[t] - m);
            row_max[t] = m;
        }
        stage_rows(tile, v + j0 * kv_stride + kv_off, n_tile, head_dim, kv_stride, t);
        __syncthreads();
        for (int r = t / ATT_KEYS; r < ATT_ROWS; r += ATT_THREADS / ATT_KEYS)
            p[r * ATT_KEYS + jj] = jj < n_tile ? expf(p[r * ATT_KEYS + jj] - row_max[r]) : 0.0f;
        __syncthreads();
        if (t < ATT_ROWS) {
            double sum = 0.0;
            for (int u = 0; u < n_tile; u++)
                sum += (double)p[t * ATT_KEYS + u];
            denom[t] = denom[t] * (double)corr[t] + sum;
        }
        /* unrolled, so that acc stays in registers */
#pragma unroll
        for (int r = 0; r < ATT_ROWS; r++) {
#pragma unroll
            for (int x = 0; x < ATT_DIMS; x++) {
                const int d = t + x * ATT_THREADS;
                if (d < head_dim) {
                    float a = acc[r][x] * corr[r];
                    for (int u = 0; u < n_tile; u++)
                        a = fmaf(p[r * ATT_KEYS + u], tile[u * stride + d], a);
                    acc[r][x] = a;
                }
            }
        }
        __syncthreads(); /* the next tile rewrites tile, p and corr; denom is read below */
    }
#pragma unroll
    for (int r = 0; r < ATT_ROWS; r++) {
        const float inv = r < n_rows ? (float)(1.0 / denom[r]) : 0.0f;
#pragma unroll
        for (int x = 0; x < ATT_DIMS; x++) {
            const int d = t + x * ATT_THREADS;
            if (r < n_rows && d < head_dim)
                out[(i0 + r) * q_stride + h * head_dim + d] = acc[r][x] * inv;
        }
    }
}

extern "C" cudaError_t dllm_cuda_attention(const float *q, const float *k, const float *v,
                                           float *out, int64_t n_q, int64_t n_keys, int64_t n_head,
                                           int64_t n_head_kv, int64_t head_dim, float scale,
                                           cudaStream_t s)
{
    if (n_q < 0 || n_keys <= 0 || n_head <= 0 || n_head_kv <= 0 || n_head % n_head_kv != 0 ||
        head_dim <= 0 || head_dim > ATT_MAX_DIM ||
        (n_q + ATT_ROWS - 1) / ATT_ROWS > INT32_MAX / n_head || !q || !k || !v || !out)
        return cudaErrorInvalidValue;
    if (n_q == 0)
        return cudaSuccess;
    DLLM_LAUNCH(attention_kernel, (unsigned)((n_q + ATT_ROWS - 1) / ATT_ROWS * n_head),
                ATT_THREADS, s)
    (q, k, v, out, n_q, n_keys, n_head, n_head / n_head_kv, (int)head_dim, n_head_kv * head_dim,
     scale);
    return cudaGetLastError();
}
