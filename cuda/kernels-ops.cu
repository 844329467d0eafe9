/*
 * The element-wise kernels of a transformer block (cuda/kernels.h): RMSNorm, RoPE, SwiGLU,
 * residual and bias additions, each the formula of its scalar reference in
 * engine/kernels/ops-ref.c with every product and sum rounded on its own (cuda/hd.h).
 */
#include "hd.h"
#include "kernels.h"
#include "launch.cuh"

#include <math.h>

/*
 * RMSNorm of one row by a block of DLLM_CUDA_THREADS: the sum of squares in double (strided
 * partials summed by halving, so the mean may differ from the reference's serial sum in its
 * last bit), s = 1 / sqrtf(mean + eps) with the mean rounded to float, y = (x * s) * g. Thread
 * t reads and writes the elements t, t + DLLM_CUDA_THREADS, ... only, so y may be x.
 */
static __device__ void norm_row(const float *x, const float *g, int64_t n, float eps, float *y)
{
    __shared__ double part[DLLM_CUDA_THREADS];
    const int t = (int)threadIdx.x;
    double sum = 0.0;
    for (int64_t j = t; j < n; j += DLLM_CUDA_THREADS)
        sum = DLLM_DADD(sum, DLLM_DMUL((double)x[j], (double)x[j]));
    part[t] = sum;
    __syncthreads();
    for (int h = DLLM_CUDA_THREADS / 2; h > 0; h /= 2) {
        if (t < h)
            part[t] = DLLM_DADD(part[t], part[t + h]);
        __syncthreads();
    }
    const float mean = (float)(part[0] / (double)n);
    const float s = 1.0f / sqrtf(DLLM_FADD(mean, eps));
    for (int64_t j = t; j < n; j += DLLM_CUDA_THREADS)
        y[j] = DLLM_FMUL(DLLM_FMUL(x[j], s), g[j]);
}

/* RMSNorm, a block per row. */
static __global__ void __launch_bounds__(DLLM_CUDA_THREADS)
    rms_norm_kernel(const float *src, const float *g, int64_t n, float eps, float *dst)
{
    norm_row(src + (int64_t)blockIdx.x * n, g, n, eps, dst + (int64_t)blockIdx.x * n);
}

extern "C" cudaError_t dllm_cuda_rms_norm(const float *src, const float *g, int64_t rows, int64_t n,
                                          float eps, float *dst, cudaStream_t s)
{
    if (rows < 0 || rows > INT32_MAX || n <= 0 || !src || !g || !dst)
        return cudaErrorInvalidValue;
    if (rows == 0)
        return cudaSuccess;
    DLLM_LAUNCH(rms_norm_kernel, (unsigned)rows, DLLM_CUDA_THREADS, s)(src, g, n, eps, dst);
    return cudaGetLastError();
}

/*
 * x += src, then dst = RMSNorm(x) * g, a block per row: each thread adds its own elements, the
 * ones norm_row has it read, so the sum needs no barrier before the norm (and dst may be src).
 */
static __global__ void __launch_bounds__(DLLM_CUDA_THREADS)
    add_rms_norm_kernel(float *x, const float *src, const float *g, int64_t n, float eps,
                        float *dst)
{
    float *xr = x + (int64_t)blockIdx.x * n;
    const float *sr = src + (int64_t)blockIdx.x * n;
    for (int64_t j = threadIdx.x; j < n; j += DLLM_CUDA_THREADS)
        xr[j] = DLLM_FADD(xr[j], sr[j]);
    norm_row(xr, g, n, eps, dst + (int64_t)blockIdx.x * n);
}

extern "C" cudaError_t dllm_cuda_add_rms_norm(float *x, const float *src, const float *g,
                                              int64_t rows, int64_t n, float eps, float *dst,
                                              cudaStream_t s)
{
    if (rows < 0 || rows > INT32_MAX || n <= 0 || !x || !src || !g || !dst)
        return cudaErrorInvalidValue;
    if (rows == 0)
        return cudaSuccess;
    DLLM_LAUNCH(add_rms_norm_kernel, (unsigned)rows, DLLM_CUDA_THREADS, s)(x, src, g, n, eps, dst);
    return cudaGetLastError();
}

/*
 * RoPE, one thread per rotated pair (row r, head h, pair j): theta = pos * step^j by j float
 * multiplications as dllm_rope_table; cos and sin in double rounded to float (within half an
 * ulp of the exact value nearly always, as libm's cosf and sinf are);
 * x'_a = x_a cos - x_b sin, x'_b = x_a sin + x_b cos.
 */
static __global__ void rope_kernel(float *x, int64_t rows, int64_t n_head, int64_t head_dim,
                                   int64_t n_rot, const int32_t *pos, float step, bool neox)
{
    const int64_t half = n_rot / 2, n = rows * n_head * half;
    for (int64_t i = dllm_cuda_first(); i < n; i += dllm_cuda_stride()) {
        const int64_t j = i % half, rh = i / half;
        float theta = (float)pos[rh / n_head];
        for (int64_t k = 0; k < j; k++)
            theta = DLLM_FMUL(theta, step);
        const float c = (float)cos((double)theta), sn = (float)sin((double)theta);
        float *xh = x + rh * head_dim;
        const int64_t a = neox ? j : 2 * j, b = neox ? j + half : 2 * j + 1;
        const float x0 = xh[a], x1 = xh[b];
        xh[a] = DLLM_FSUB(DLLM_FMUL(x0, c), DLLM_FMUL(x1, sn));
        xh[b] = DLLM_FADD(DLLM_FMUL(x0, sn), DLLM_FMUL(x1, c));
    }
}

extern "C" cudaError_t dllm_cuda_rope(float *x, int64_t rows, int64_t n_head, int64_t head_dim,
                                      int64_t n_rot, const int32_t *pos, float freq_base, bool neox,
                                      cudaStream_t s)
{
    if (rows < 0 || n_head <= 0 || head_dim <= 0 || n_rot <= 0 || n_rot % 2 != 0 ||
        n_rot > head_dim || !x || !pos)
        return cudaErrorInvalidValue;
    const int64_t n = rows * n_head * (n_rot / 2);
    if (n == 0)
        return cudaSuccess;
    /* the host's powf, as the CPU's table uses, so that every theta has the same bits */
    const float step = powf(freq_base, -2.0f / (float)n_rot);
    DLLM_LAUNCH(rope_kernel, dllm_cuda_blocks(n), DLLM_CUDA_THREADS, s)
    (x, rows, n_head, head_dim, n_rot, pos, step, neox);
    return cudaGetLastError();
}

/* gate[i] = gate[i] / (1 + e^-gate[i]) * up[i], e^x by the device's expf (within 2 ulp). */
static __global__ void swiglu_kernel(float *gate, const float *up, int64_t n)
{
    for (int64_t i = dllm_cuda_first(); i < n; i += dllm_cuda_stride())
        gate[i] = DLLM_FMUL(gate[i] / DLLM_FADD(1.0f, expf(-gate[i])), up[i]);
}

extern "C" cudaError_t dllm_cuda_swiglu(float *gate, const float *up, int64_t n, cudaStream_t s)
{
    if (n < 0 || !gate || !up)
        return cudaErrorInvalidValue;
    if (n == 0)
        return cudaSuccess;
    DLLM_LAUNCH(swiglu_kernel, dllm_cuda_blocks(n), DLLM_CUDA_THREADS, s)(gate, up, n);
    return cudaGetLastError();
}

static __global__ void add_kernel(float *x, const float *src, int64_t n)
{
    for (int64_t i = dllm_cuda_first(); i < n; i += dllm_cuda_stride())
        x[i] = DLLM_FADD(x[i], src[i]);
}

extern "C" cudaError_t dllm_cuda_add(float *x, const float *src, int64_t n, cudaStream_t s)
{
    if (n < 0 || !x || !src)
        return cudaErrorInvalidValue;
    if (n == 0)
        return cudaSuccess;
    DLLM_LAUNCH(add_kernel, dllm_cuda_blocks(n), DLLM_CUDA_THREADS, s)(x, src, n);
    return cudaGetLastError();
}

static __global__ void add_bias_kernel(float *x, const float *b, int64_t rows, int64_t n)
{
    for (int64_t i = dllm_cuda_first(); i < rows * n; i += dllm_cuda_stride())
        x[i] = DLLM_FADD(x[i], b[i % n]);
}

extern "C" cudaError_t dllm_cuda_add_bias(float *x, const float *b, int64_t rows, int64_t n,
                                          cudaStream_t s)
{
    if (rows < 0 || n <= 0 || rows > INT64_MAX / n || !x || !b)
        return cudaErrorInvalidValue;
    if (rows == 0)
        return cudaSuccess;
    DLLM_LAUNCH(add_bias_kernel, dllm_cuda_blocks(rows * n), DLLM_CUDA_THREADS, s)(x, b, rows, n);
    return cudaGetLastError();
}
