/*
 * Launch geometry shared by the kernel files (cuda/kernels-*.cu): grid-stride loops over n
 * elements with DLLM_CUDA_THREADS threads a block and at most DLLM_CUDA_MAX_BLOCKS blocks.
 */
#ifndef DLLM_CUDA_LAUNCH_CUH
#define DLLM_CUDA_LAUNCH_CUH

#include <cuda_runtime.h>
#include <stdint.h>

/*
 * DLLM_LAUNCH(kernel, grid, block, stream)(args...): kernel on grid blocks of block threads in
 * stream. Built with DLLM_CUDA_EMU (tests/cuda-emu/cuda_runtime.h), for host tests, it runs the
 * blocks one after another, each block's threads as fibers.
 */
#ifdef DLLM_CUDA_EMU
#define DLLM_LAUNCH(kernel, grid, block, stream) dllm_emu_launch(kernel, grid, block, stream)
#else
#define DLLM_LAUNCH(kernel, grid, block, stream) kernel<<<grid, block, 0, stream>>>
#endif

#define DLLM_CUDA_THREADS 256
/* The host emulation caps grid-stride launches lower: fewer blocks, each going round more. */
#ifdef DLLM_CUDA_EMU
#define DLLM_CUDA_MAX_BLOCKS 4
#else
#define DLLM_CUDA_MAX_BLOCKS 65536
#endif

/* Blocks of DLLM_CUDA_THREADS for n elements (n > 0), capped; the kernels stride over the rest. */
static inline unsigned dllm_cuda_blocks(int64_t n)
{
    int64_t b = (n + DLLM_CUDA_THREADS - 1) / DLLM_CUDA_THREADS;
    return (unsigned)(b < DLLM_CUDA_MAX_BLOCKS ? b : DLLM_CUDA_MAX_BLOCKS);
}

/* The first element of this thread in a grid-stride loop, and the stride. */
static __device__ inline int64_t dllm_cuda_first(void)
{
    return (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
}

static __device__ inline int64_t dllm_cuda_stride(void)
{
    return (int64_t)gridDim.x * blockDim.x;
}

#endif
