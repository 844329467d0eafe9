/*
 * The sampler's row statistics on the device (cuda/kernels.h): one block of
 * DLLM_HD_STATS_THREADS threads per row, each thread one strided partial of cuda/rowstats.h,
 * merged in shared memory by halving (partial p takes p + h), first the top, then with the
 * row's max the two sums. Only the statistics are written.
 */
#include "kernels.h"
#include "launch.cuh"
#include "rowstats.h"

static __global__ void __launch_bounds__(DLLM_HD_STATS_THREADS)
    row_stats_kernel(const float *logits, int64_t n_vocab, struct dllm_row_stats *out)
{
    __shared__ struct dllm_hd_top top[DLLM_HD_STATS_THREADS];
    __shared__ struct dllm_hd_sums sums[DLLM_HD_STATS_THREADS];
    const float *l = logits + (int64_t)blockIdx.x * n_vocab;
    const int p = (int)threadIdx.x;
    top[p] = dllm_hd_top_partial(l, n_vocab, p);
    __syncthreads();
    for (int h = DLLM_HD_STATS_THREADS / 2; h > 0; h /= 2) {
        if (p < h)
            top[p] = dllm_hd_top_merge(top[p], top[p + h]);
        __syncthreads();
    }
    sums[p] = dllm_hd_sums_partial(l, n_vocab, p, (double)top[0].max);
    __syncthreads();
    for (int h = DLLM_HD_STATS_THREADS / 2; h > 0; h /= 2) {
        if (p < h)
            sums[p] = dllm_hd_sums_merge(sums[p], sums[p + h]);
        __syncthreads();
    }
    if (p == 0)
        out[blockIdx.x] = dllm_hd_stats_finish(top[0], sums[0]);
}

extern "C" cudaError_t dllm_cuda_row_stats(const float *logits, int64_t R, int64_t n_vocab,
                                           struct dllm_row_stats *out, cudaStream_t s)
{
    if (R < 0 || R > INT32_MAX || n_vocab <= 0 || n_vocab > INT32_MAX || !logits || !out)
        return cudaErrorInvalidValue;
    if (R == 0)
        return cudaSuccess;
    DLLM_LAUNCH(row_stats_kernel, (unsigned)R, DLLM_HD_STATS_THREADS, s)(logits, n_vocab, out);
    return cudaGetLastError();
}
