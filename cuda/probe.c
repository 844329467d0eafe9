/* The GPUs as the CUDA runtime reports them, and the refusals of the backend (probe.h). */
#include "config.h"

#include "probe.h"

#include "call.h"

#include <stdio.h>

enum dllm_status dllm_cuda_count(int *n, struct dllm_error *err)
{
    *n = 0;
    int count = 0;
    enum dllm_status st = DLLM_CUDA(err, cudaGetDeviceCount(&count));
    if (st) {
        /* The runtime's "insufficient driver" is also what it says when there is none. */
        const bool no_device = dllm_cuda_last_code() == cudaErrorNoDevice;
        dllm_error_prefix(err, no_device ? "no CUDA GPU" : "no usable NVIDIA driver");
        return DLLM_ERR_UNSUPPORTED;
    }
    if (count < 1)
        return dllm_error_set(err, DLLM_ERR_UNSUPPORTED, "no CUDA GPU: the runtime finds none");
    *n = count;
    return DLLM_OK;
}

enum dllm_status dllm_cuda_probe(int index, struct dllm_gpu_info *out, struct dllm_error *err)
{
    int n;
    enum dllm_status st = dllm_cuda_count(&n, err);
    if (st)
        return st;
    if (index < 0 || index >= n)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "there is no GPU %d: this machine has %d (0 to %d)", index, n, n - 1);
    struct cudaDeviceProp prop;
    struct dllm_gpu_info g = {.index = index};
    size_t free_b, total_b;
    if ((st = DLLM_CUDA(err, cudaGetDeviceProperties(&prop, index))) ||
        (st = DLLM_CUDA(err, cudaSetDevice(index))) ||
        (st = DLLM_CUDA(err, cudaMemGetInfo(&free_b, &total_b))) ||
        (st = DLLM_CUDA(err, cudaDriverGetVersion(&g.driver_version))) ||
        (st = DLLM_CUDA(err, cudaRuntimeGetVersion(&g.runtime_version))))
        return st;
    snprintf(g.name, sizeof g.name, "%s", prop.name);
    g.major = prop.major;
    g.minor = prop.minor;
    g.free_bytes = free_b;
    g.total_bytes = total_b;
    *out = g;
    return DLLM_OK;
}

enum dllm_status dllm_cuda_check_capability(const struct dllm_gpu_info *gpu, struct dllm_error *err)
{
    if (gpu->major >= DLLM_GPU_MIN_MAJOR)
        return DLLM_OK;
    return dllm_error_set(err, DLLM_ERR_UNSUPPORTED,
                          "GPU %d (%s) has compute capability %d.%d; the CUDA backend needs %d.0 "
                          "or newer",
                          gpu->index, gpu->name, gpu->major, gpu->minor, DLLM_GPU_MIN_MAJOR);
}

enum dllm_status dllm_cuda_check_memory(int index, uint64_t need, uint64_t cache_bytes,
                                        uint64_t free_bytes, struct dllm_error *err)
{
    if (need <= free_bytes)
        return DLLM_OK;
    return dllm_error_set(err, DLLM_ERR_NOMEM,
                          "the model needs %.1f GB of GPU memory%s on GPU %d but %.1f GB is free",
                          (double)need / 1e9, cache_bytes ? " with its K/V cache" : "", index,
                          (double)free_bytes / 1e9);
}

enum dllm_status dllm_cuda_check_device(int index, uint64_t need, uint64_t cache_bytes,
                                        struct dllm_gpu_info *gpu, struct dllm_error *err)
{
    enum dllm_status st;
    if ((st = dllm_cuda_probe(index, gpu, err)) || (st = dllm_cuda_check_capability(gpu, err)))
        return st;
    return dllm_cuda_check_memory(index, need, cache_bytes, gpu->free_bytes, err);
}
