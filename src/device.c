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
        if (dllm_gpu_check(spec->index, model, &need, cache_bytes, &gpu, &err) != DLLM_OK)
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
        if (dllm_gpu_check(i, model, &need, cache_bytes, &gpu, &err) == DLLM_OK) {
            use_gpu(spec, &gpu, params, label, label_size);
            fprintf(stderr, "dllm %s: running on GPU %d (%s)\n", cmd->name, i, gpu.name);
            return;
        }
        fprintf(stderr, "dllm %s: not on GPU %d: %s\n", cmd->name, i, err.text);
    }
    fprintf(stderr, "dllm %s: running on the CPU\n", cmd->name);
}
