/*
 * DLLM_HD marks a function compiled for both the host and the device: __host__ __device__
 * under nvcc, plain static inline under a C compiler. Code written with it is valid C11 and
 * C++17, so the device maths is tested on the host (tests/test_cuda_host.c).
 *
 * The float helpers round each operation on its own: nvcc contracts a * b + c into one fused
 * multiply-add on the device, which the CPU reference (built without contraction) does not do,
 * so device code that must match the CPU bit for bit spells its products and sums with these.
 */
#ifndef DLLM_CUDA_HD_H
#define DLLM_CUDA_HD_H

#ifdef __CUDACC__
#define DLLM_HD static inline __host__ __device__
#else
#define DLLM_HD static inline
#endif

/* Before a loop of constant trip count whose array indices must become registers on the device. */
#if defined(__CUDA_ARCH__)
#define DLLM_UNROLL _Pragma("unroll")
#else
#define DLLM_UNROLL
#endif

#if defined(__CUDA_ARCH__)
#define DLLM_FMUL(a, b) __fmul_rn((a), (b))
#define DLLM_FADD(a, b) __fadd_rn((a), (b))
#define DLLM_FSUB(a, b) __fsub_rn((a), (b))
#define DLLM_DMUL(a, b) __dmul_rn((a), (b))
#define DLLM_DADD(a, b) __dadd_rn((a), (b))
#define DLLM_DSUB(a, b) __dsub_rn((a), (b))
#else
#define DLLM_FMUL(a, b) ((a) * (b))
#define DLLM_FADD(a, b) ((a) + (b))
#define DLLM_FSUB(a, b) ((a) - (b))
#define DLLM_DMUL(a, b) ((a) * (b))
#define DLLM_DADD(a, b) ((a) + (b))
#define DLLM_DSUB(a, b) ((a) - (b))
#endif

#endif
