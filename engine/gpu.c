/*
 * The public GPU queries (dllm.h): the CUDA backend's probe in a build that has it, else a
 * refusal; a build without CUDA references no CUDA symbol.
 */
#include "config.h"

#include "backend.h"
#include "dllm.h"

#ifdef DLLM_HAVE_CUDA
#include "../cuda/probe.h"
#endif

bool dllm_gpu_built(void)
{
#ifdef DLLM_HAVE_CUDA
    return true;
#else
    return false;
#endif
}

#ifdef DLLM_HAVE_CUDA
enum dllm_status dllm_gpu_count(int *n, struct dllm_error *err)
{
    return dllm_cuda_count(n, err);
}

enum dllm_status dllm_gpu_info(int index, struct dllm_gpu_info *out, struct dllm_error *err)
{
    return dllm_cuda_probe(index, out, err);
}

uint64_t dllm_gpu_bytes(const struct dllm_model *model, const struct dllm_forward_params *params)
{
    return dllm_cuda_device_bytes(model, params->max_tokens, params->max_rows,
                                  params->gpu_resident);
}

enum dllm_status dllm_gpu_check_model(const struct dllm_model *model, struct dllm_error *err)
{
    return dllm_cuda_check_model(model, err);
}

enum dllm_status dllm_gpu_check(int index, const struct dllm_model *model,
                                const struct dllm_forward_params *params, uint64_t extra_bytes,
                                struct dllm_gpu_info *gpu, struct dllm_error *err)
{
    enum dllm_status st;
    if ((st = dllm_forward_check_sizes(model, params, err)) ||
        (st = dllm_cuda_check_model(model, err)))
        return st;
    return dllm_cuda_check_device(index, dllm_gpu_bytes(model, params) + extra_bytes, extra_bytes,
                                  gpu, err);
}
#else
/* The refusal of a build without CUDA. */
static enum dllm_status not_built(struct dllm_error *err)
{
    return dllm_error_set(err, DLLM_ERR_UNSUPPORTED,
                          "this libdllm was built without the CUDA backend");
}

enum dllm_status dllm_gpu_count(int *n, struct dllm_error *err)
{
    *n = 0;
    return not_built(err);
}

enum dllm_status dllm_gpu_info(int index, struct dllm_gpu_info *out, struct dllm_error *err)
{
    return not_built(err);
}

uint64_t dllm_gpu_bytes(const struct dllm_model *model, const struct dllm_forward_params *params)
{
    return 0;
}

enum dllm_status dllm_gpu_check_model(const struct dllm_model *model, struct dllm_error *err)
{
    return not_built(err);
}

enum dllm_status dllm_gpu_check(int index, const struct dllm_model *model,
                                const struct dllm_forward_params *params, uint64_t extra_bytes,
                                struct dllm_gpu_info *gpu, struct dllm_error *err)
{
    return not_built(err);
}
#endif
