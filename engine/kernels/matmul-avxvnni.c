/*
 * The AVX-VNNI variant: the AVX2 kernels with the VEX-encoded VPDPBUSD. Its
 * activation conversion is the AVX2 one (dllm_matmul_quantize_avx2). The kernels are in
 * matmul-simd.h.
 */
#include "config.h"

#define SIMD_ISA avxvnni
#define SIMD_VNNI
#define SIMD_ROWS_ONLY
#include "kernels/simd-ymm.h"
#include "kernels/matmul-simd.h"
