/*
 * dllm's CUDA kernels built for the host (tests/cuda-emu/cuda_runtime.h): tests/kernel_check_emu
 * runs tests/gpu/kernel_check's checks over them in make check.
 */
#include "../../cuda/kernels-attention.cu"
#include "../../cuda/kernels-dequant.cu"
#include "../../cuda/kernels-ops.cu"
#include "../../cuda/kernels-rowstats.cu"
