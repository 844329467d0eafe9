/*
 * Dequantization kernels (cuda/kernels.h): GGUF blocks to binary16 matrices for cuBLAS (a
 * K-quant block a warp, other types 32 elements a thread, or one where a row is no whole number
 * of 32) and to float embedding rows (one element a thread), through the shared decoders of
 * cuda/dequant.h, and float to binary16.
 */
#include "dequant.h"
#include "kernels.h"
#include "launch.cuh"

#include <cuda_fp16.h>
#include <stdint.h>

extern "C" bool dllm_cuda_type_supported(uint32_t type)
{
    return dllm_hd_block_elems(type) > 0;
}

/* Bytes of a row of n_cols elements of type, or -1 when n_cols is no whole number of blocks. */
static int64_t row_bytes(uint32_t type, int64_t n_cols)
{
    int64_t be = dllm_hd_block_elems(type);
    if (be == 0 || n_cols <= 0 || n_cols % be != 0)
        return -1;
    return n_cols / be * dllm_hd_block_bytes(type);
}

/* dst[i] = element i of the row-major matrix of rows of n_cols, rows rb bytes apart. */
static __global__ void dequant_f16_kernel(uint32_t type, const uint8_t *blocks, int64_t n,
                                          int64_t n_cols, int64_t rb, uint16_t *dst)
{
    for (int64_t i = dllm_cuda_first(); i < n; i += dllm_cuda_stride()) {
        const uint8_t *row = blocks + i / n_cols * rb;
        dst[i] = dllm_hd_f32_to_fp16(dllm_hd_row_elem(type, row, i % n_cols));
    }
}

/* x as binary16: the hardware's conversion (the same rounding), the shared one for a NaN. */
static __device__ inline uint32_t half_bits(float x)
{
    return x != x ? dllm_hd_f32_to_fp16(x) : __half_as_ushort(__float2half_rn(x));
}

/*
 * The same 32 elements a thread (n_cols a multiple of 32, dst 16-byte aligned): group t is
 * elements 32t .. 32t + 31, decoded together (dllm_hd_decode32) and stored 16 bytes at a time;
 * the row and the block are worked out once a group, blocks of be = 2^be_shift elements.
 */
static __global__ void dequant_f16_groups_kernel(uint32_t type, const uint8_t *blocks,
                                                 int64_t n_groups, int64_t row_groups, int64_t rb,
                                                 int be_shift, int bb, uint16_t *dst)
{
    for (int64_t t = dllm_cuda_first(); t < n_groups; t += dllm_cuda_stride()) {
        const int64_t row = t / row_groups, col = (t - row * row_groups) * 32;
        const uint8_t *b = blocks + row * rb + (col >> be_shift) * bb;
        float v[32];
        dllm_hd_decode32(type, b, (int)(col & ((1 << be_shift) - 1)) / 32, v);
        uint4 *out = (uint4 *)(dst + t * 32);
#pragma unroll
        for (int q = 0; q < 4; q++) {
            const float *w = v + 8 * q;
            out[q] = make_uint4(
                half_bits(w[0]) | half_bits(w[1]) << 16, half_bits(w[2]) | half_bits(w[3]) << 16,
                half_bits(w[4]) | half_bits(w[5]) << 16, half_bits(w[6]) | half_bits(w[7]) << 16);
        }
    }
}

/* Four floats as binary16 (half_bits), in one 8-byte word. */
static __device__ inline uint2 halves4(const float *v)
{
    const uint32_t lo = half_bits(v[0]) | half_bits(v[1]) << 16;
    return make_uint2(lo, half_bits(v[2]) | half_bits(v[3]) << 16);
}

/*
 * K-quant blocks, a warp a block (dst 8-byte aligned): lane l reads the 4 quant bytes at 4l of
 * the block (dllm_hd_kquant_lane), so that each of the warp's loads takes 128 bytes side by side,
 * and stores its two runs of 4 elements 8 bytes each, a warp's store 4 runs of 64 bytes. Block w
 * of the matrix's n_blocks is at row w / row_blocks, and its elements at dst + 256 w.
 */
static __global__ void dequant_f16_kquant_kernel(uint32_t type, const uint8_t *blocks,
                                                 int64_t n_blocks, int64_t row_blocks, int64_t rb,
                                                 int bb, uint16_t *dst)
{
    const int lane = (int)(threadIdx.x % 32);
    for (int64_t w = dllm_cuda_first() / 32; w < n_blocks; w += dllm_cuda_stride() / 32) {
        const int64_t row = w / row_blocks;
        const uint8_t *b = blocks + row * rb + (w - row * row_blocks) * bb;
        float v[8];
        int second;
        const int first = dllm_hd_kquant_lane(type, b, lane, v, &second);
        *(uint2 *)(dst + w * 256 + first) = halves4(v);
        *(uint2 *)(dst + w * 256 + second) = halves4(v + 4);
    }
}

extern "C" cudaError_t dllm_cuda_dequant_f16(uint32_t type, const void *blocks, int64_t n_rows,
                                             int64_t n_cols, uint16_t *dst, cudaStream_t s)
{
    int64_t rb = row_bytes(type, n_cols);
    if (rb < 0 || n_rows < 0 || n_rows > INT64_MAX / n_cols || !blocks || !dst)
        return cudaErrorInvalidValue;
    int64_t n = n_rows * n_cols;
    if (n == 0)
        return cudaSuccess;
    const int be = dllm_hd_block_elems(type);
    if (dllm_hd_is_kquant(type) && (uintptr_t)dst % 8 == 0) {
        DLLM_LAUNCH(dequant_f16_kquant_kernel, dllm_cuda_blocks(n / 256 * 32), DLLM_CUDA_THREADS, s)
        (type, (const uint8_t *)blocks, n / 256, n_cols / 256, rb, dllm_hd_block_bytes(type), dst);
    } else if (n_cols % 32 == 0 && (uintptr_t)dst % 16 == 0) {
        int be_shift = 0;
        while ((1 << be_shift) < be)
            be_shift++;
        DLLM_LAUNCH(dequant_f16_groups_kernel, dllm_cuda_blocks(n / 32), DLLM_CUDA_THREADS, s)
        (type, (const uint8_t *)blocks, n / 32, n_cols / 32, rb, be_shift,
         dllm_hd_block_bytes(type), dst);
    } else {
        DLLM_LAUNCH(dequant_f16_kernel, dllm_cuda_blocks(n), DLLM_CUDA_THREADS, s)
        (type, (const uint8_t *)blocks, n, n_cols, rb, dst);
    }
    return cudaGetLastError();
}

/* dst[i, j] = element j of row ids[i]. */
static __global__ void get_rows_kernel(uint32_t type, const uint8_t *blocks, int64_t n_cols,
                                       int64_t rb, const int32_t *ids, int64_t n, float *dst)
{
    for (int64_t i = dllm_cuda_first(); i < n * n_cols; i += dllm_cuda_stride()) {
        const uint8_t *row = blocks + (int64_t)ids[i / n_cols] * rb;
        dst[i] = dllm_hd_row_elem(type, row, i % n_cols);
    }
}

extern "C" cudaError_t dllm_cuda_get_rows(uint32_t type, const void *blocks, int64_t n_cols,
                                          const int32_t *ids, int64_t n, float *dst, cudaStream_t s)
{
    int64_t rb = row_bytes(type, n_cols);
    if (rb < 0 || n < 0 || n > INT64_MAX / n_cols || !blocks || !ids || !dst)
        return cudaErrorInvalidValue;
    if (n == 0)
        return cudaSuccess;
    DLLM_LAUNCH(get_rows_kernel, dllm_cuda_blocks(n * n_cols), DLLM_CUDA_THREADS, s)
    (type, (const uint8_t *)blocks, n_cols, rb, ids, n, dst);
    return cudaGetLastError();
}

template <bool saturate>
static __global__ void f32_to_f16_kernel(const float *src, int64_t n, uint16_t *dst)
{
    for (int64_t i = dllm_cuda_first(); i < n; i += dllm_cuda_stride())
        dst[i] = saturate ? dllm_hd_f32_to_fp16_sat(src[i]) : dllm_hd_f32_to_fp16(src[i]);
}

/* The two conversions' launcher. */
template <bool saturate>
static cudaError_t f32_to_f16(const float *src, int64_t n, uint16_t *dst, cudaStream_t s)
{
    if (n < 0 || !src || !dst)
        return cudaErrorInvalidValue;
    if (n == 0)
        return cudaSuccess;
    DLLM_LAUNCH(f32_to_f16_kernel<saturate>, dllm_cuda_blocks(n), DLLM_CUDA_THREADS, s)
    (src, n, dst);
    return cudaGetLastError();
}

extern "C" cudaError_t dllm_cuda_f32_to_f16(const float *src, int64_t n, uint16_t *dst,
                                            cudaStream_t s)
{
    return f32_to_f16<false>(src, n, dst, s);
}

extern "C" cudaError_t dllm_cuda_f32_to_f16_sat(const float *src, int64_t n, uint16_t *dst,
                                                cudaStream_t s)
{
    return f32_to_f16<true>(src, n, dst, s);
}

static __global__ void f16_to_f32_kernel(const uint16_t *src, int64_t n, float *dst)
{
    for (int64_t i = dllm_cuda_first(); i < n; i += dllm_cuda_stride())
        dst[i] = dllm_hd_fp16_to_f32(src[i]);
}

extern "C" cudaError_t dllm_cuda_f16_to_f32(const uint16_t *src, int64_t n, float *dst,
                                            cudaStream_t s)
{
    if (n < 0 || !src || !dst)
        return cudaErrorInvalidValue;
    if (n == 0)
        return cudaSuccess;
    DLLM_LAUNCH(f16_to_f32_kernel, dllm_cuda_blocks(n), DLLM_CUDA_THREADS, s)(src, n, dst);
    return cudaGetLastError();
}
