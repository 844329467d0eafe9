#include "config.h"

#include "device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void device_parse(const struct cli_command *cmd, const char *arg, struct device_spec *spec)
{
    spec->explicit = true;
    spec->index = 0;
    if (strcmp(arg, "auto") == 0) {
        spec->kind = DEVICE_AUTO;
        return;
    }
    if (strcmp(arg, "cpu") == 0) {
        spec->kind = DEVICE_CPU;
        return;
    }
    spec->kind = DEVICE_GPU;
    if (strcmp(arg, "gpu") == 0)
        return;
    char *end;
    if (strncmp(arg, "gpu:", 4) == 0 && arg[4] >= '0' && arg[4] <= '9') {
        long n = strtol(arg + 4, &end, 10);
        if (*end == '\0' && n <= 1024) {
            spec->index = (int)n;
            return;
        }
    }
    cli_usage_error(cmd, "--device is auto, cpu, gpu or gpu:N, not '%s'", arg);
}

/*
 * Whether GPU index can run the model: present, compute capability 8.0 or newer, a model the
 * CUDA backend runs (dense, tensor types it has kernels for), enough free memory for the
 * params and cache_bytes of K/V caches; else err says why. gpu holds what the runtime
 * reported.
 */
static bool gpu_fits(int index, const struct dllm_model *model,
                     const struct dllm_forward_params *params, uint64_t cache_bytes,
                     struct dllm_gpu_info *gpu, struct dllm_error *err)
{
    if (dllm_gpu_info(index, gpu, err) != DLLM_OK)
        return false;
    if (gpu->major < DLLM_GPU_MIN_MAJOR) {
        dllm_error_set(err, DLLM_ERR_UNSUPPORTED,
                       "GPU %d (%s) has compute capability %d.%d; dllm needs %d.0 or newer", index,
                       gpu->name, gpu->major, gpu->minor, DLLM_GPU_MIN_MAJOR);
        return false;
    }
    if (dllm_gpu_check_model(model, err) != DLLM_OK)
        return false;
    const uint64_t need = dllm_gpu_bytes(model, params) + cache_bytes;
    if (need > gpu->free_bytes) {
        dllm_error_set(err, DLLM_ERR_NOMEM,
                       "the model needs %.1f GB of GPU memory%s on GPU %d but %.1f GB is free",
                       (double)need / 1e9, cache_bytes ? " with its K/V cache" : "", index,
                       (double)gpu->free_bytes / 1e9);
        return false;
    }
    return true;
}

/* Sets params and label for GPU gpu. */
static void use_gpu(const struct device_spec *spec, const struct dllm_gpu_info *gpu,
                    struct dllm_forward_params *params, char *label, size_t label_size)
{
    params->backend = "cuda";
    params->device = gpu->index;
    params->gpu_resident = spec->resident;
    snprintf(label, label_size, "gpu:%d %s", gpu->index, gpu->name);
}

void device_choose(const struct cli_command *cmd, const struct device_spec *spec,
                   const struct dllm_model *model, int64_t max_tokens, int64_t max_rows,
                   uint64_t cache_bytes, struct dllm_forward_params *params, char *label,
                   size_t label_size)
{
    params->backend = NULL;
    params->gpu_resident = spec->resident;
    snprintf(label, label_size, "cpu");
    if (spec->kind == DEVICE_CPU)
        return;
    struct dllm_forward_params need = *params;
    need.max_tokens = max_tokens;
    need.max_rows = max_rows;
    struct dllm_gpu_info gpu;
    struct dllm_error err;
    if (spec->kind == DEVICE_GPU) {
        if (!gpu_fits(spec->index, model, &need, cache_bytes, &gpu, &err))
            cli_fail("--device gpu:%d: %s: use --device cpu", spec->index, err.text);
        use_gpu(spec, &gpu, params, label, label_size);
        return;
    }
    int n = 0;
    if (dllm_gpu_count(&n, &err) != DLLM_OK) {
        /* A build or a machine without GPUs runs on the CPU; say why when asked for auto. */
        if (spec->explicit)
            fprintf(stderr, "dllm %s: --device auto: running on the CPU (%s)\n", cmd->name,
                    err.text);
        return;
    }
    for (int i = 0; i < n; i++) {
        if (gpu_fits(i, model, &need, cache_bytes, &gpu, &err)) {
            use_gpu(spec, &gpu, params, label, label_size);
            fprintf(stderr, "dllm %s: running on GPU %d (%s)\n", cmd->name, i, gpu.name);
            return;
        }
        fprintf(stderr, "dllm %s: not on GPU %d: %s\n", cmd->name, i, err.text);
    }
    fprintf(stderr, "dllm %s: running on the CPU\n", cmd->name);
}
