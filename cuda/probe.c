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

/* The driver's calls behind primary_active (CUdevice and CUresult are ints). */
typedef int (*device_get_fn)(int *device, int ordinal);
typedef int (*primary_state_fn)(int device, unsigned *flags, int *active);

/* The driver's function symbol (its CUDA 12 form) through the runtime, or NULL. */
static void *driver_function(const char *symbol)
{
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    struct dllm_error ignored;
    if (DLLM_CUDA(&ignored, cudaGetDriverEntryPointByVersion(symbol, &fn, 12000, cudaEnableDefault,
                                                             &found)) ||
        found != cudaDriverEntryPointSuccess)
        return NULL;
    return fn;
}

/*
 * Whether GPU index's primary context is active: retained in this process, by a backend or by
 * the application around the library. *known is false where the driver cannot say.
 */
static bool primary_active(int index, bool *known)
{
    const device_get_fn device_get = (device_get_fn)driver_function("cuDeviceGet");
    const primary_state_fn state = (primary_state_fn)driver_function("cuDevicePrimaryCtxGetState");
    int device, active = 0;
    unsigned flags;
    *known = device_get && state && device_get(&device, index) == 0 &&
             state(device, &flags, &active) == 0;
    return *known && active;
}

/*
 * GPU index into *out. Reading its free memory makes the device's primary context (the
 * runtime's cudaSetDevice does, since CUDA 12), which holds some hundreds of megabytes of the
 * GPU until the process ends; *made says whether this probe made it, so that a caller that
 * will not use the GPU can let it go (release_context).
 */
static enum dllm_status probe(int index, struct dllm_gpu_info *out, bool *made,
                              struct dllm_error *err)
{
    *made = false;
    int n;
    enum dllm_status st = dllm_cuda_count(&n, err);
    if (st)
        return st;
    if (index < 0 || index >= n)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "there is no GPU %d: this machine has %d (0 to %d)", index, n, n - 1);
    bool known;
    const bool had = primary_active(index, &known);
    struct cudaDeviceProp prop;
    struct dllm_gpu_info g = {.index = index};
    size_t free_b, total_b;
    if ((st = DLLM_CUDA(err, cudaGetDeviceProperties(&prop, index))))
        return st;
    if ((st = DLLM_CUDA(err, cudaSetDevice(index))))
        return st;
    *made = known && !had;
    if ((st = DLLM_CUDA(err, cudaMemGetInfo(&free_b, &total_b))) ||
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

/* Destroys the primary context a probe made on the current device, when it made one. */
static void release_context(bool made)
{
    struct dllm_error ignored;
    if (made)
        DLLM_CUDA(&ignored, cudaDeviceReset());
}

enum dllm_status dllm_cuda_probe(int index, struct dllm_gpu_info *out, struct dllm_error *err)
{
    bool made;
    const enum dllm_status st = probe(index, out, &made, err);
    release_context(made);
    return st;
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
    bool made;
    enum dllm_status st;
    if ((st = probe(index, gpu, &made, err)) || (st = dllm_cuda_check_capability(gpu, err)) ||
        (st = dllm_cuda_check_memory(index, need, cache_bytes, gpu->free_bytes, err)))
        release_context(made);
    return st;
}
