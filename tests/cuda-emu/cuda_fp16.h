/*
 * A stand-in for CUDA's binary16 header (tests/cuda-emu/cuda_runtime.h says why): the
 * conversion the kernels use, to nearest even as the GPU's, by the engine's own converter, and
 * the vector types they store with.
 */
#ifndef DLLM_CUDA_EMU_FP16_H
#define DLLM_CUDA_EMU_FP16_H

#include "dllm.h"

#include <stdint.h>

struct __half {
    uint16_t bits;
};

static inline __half __float2half_rn(float f)
{
    return __half{dllm_f32_to_fp16(f)};
}

static inline uint16_t __half_as_ushort(__half h)
{
    return h.bits;
}

struct uint2 {
    unsigned x, y;
};

static inline uint2 make_uint2(unsigned x, unsigned y)
{
    return uint2{x, y};
}

struct uint4 {
    unsigned x, y, z, w;
};

static inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w)
{
    return uint4{x, y, z, w};
}

#endif
