/*
 * The AVX2 variant (with FMA and F16C): 8 weight rows per 256-bit vector, u8 x s8 products
 * with VPMADDUBSW. Its u8 x s8 pairs saturate at int16, so Q8_0 weights, whose products with
 * activations + 128 would, use the reference kernel. The kernels are in matmul-simd.h.
 */
#include "config.h"

#define SIMD_ISA avx2
#include "kernels/simd-ymm.h"
#include "kernels/matmul-simd.h"
