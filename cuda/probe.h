/*
 * The GPUs as the CUDA runtime reports them, and the refusals of a GPU the backend cannot run
 * on: no driver, no device, a compute capability below 8.0, too little free memory.
 */
#ifndef DLLM_CUDA_PROBE_H
#define DLLM_CUDA_PROBE_H

#include "dllm.h"

#include <stdint.h>

/* dllm_gpu_count: the number of GPUs, or why there are none. */
enum dllm_status dllm_cuda_count(int *n, struct dllm_error *err);

/*
 * dllm_gpu_info: GPU index's name, capability, memory and the driver's version. A primary
 * context the probe had to make on the GPU (none was active in the process) is destroyed again.
 */
enum dllm_status dllm_cuda_probe(int index, struct dllm_gpu_info *out, struct dllm_error *err);

/* DLLM_ERR_UNSUPPORTED naming the GPU when its compute capability is below 8.0. */
enum dllm_status dllm_cuda_check_capability(const struct dllm_gpu_info *gpu,
                                            struct dllm_error *err);

/*
 * DLLM_ERR_NOMEM "the model needs X GB of GPU memory on GPU i but Y GB is free" when need >
 * free_bytes; "with its K/V cache" after "memory" when cache_bytes of need are K/V caches.
 */
enum dllm_status dllm_cuda_check_memory(int index, uint64_t need, uint64_t cache_bytes,
                                        uint64_t free_bytes, struct dllm_error *err);

/*
 * GPU index probed into gpu, then checked for the capability and for need bytes of free memory
 * (cache_bytes of them K/V caches): the refusals above, in that order. The GPU's primary context
 * is left made for its use when the check passes, and destroyed again when the check made it
 * and refuses the GPU.
 */
enum dllm_status dllm_cuda_check_device(int index, uint64_t need, uint64_t cache_bytes,
                                        struct dllm_gpu_info *gpu, struct dllm_error *err);

#endif
