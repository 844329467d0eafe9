/*
 * --device auto|cpu|gpu[:N] and --gpu-resident, shared by every command that runs a model:
 * the choice between the CPU and a GPU, made before the model's context is created.
 */
#ifndef DLLM_DEVICE_H
#define DLLM_DEVICE_H

#include "cli.h"
#include "dllm.h"

#include <stdbool.h>
#include <stdint.h>

/* What --device asked for. */
struct device_spec {
    enum { DEVICE_AUTO, DEVICE_CPU, DEVICE_GPU } kind;
    int index;     /* DEVICE_GPU: the GPU */
    bool explicit; /* --device was given */
    bool resident; /* --gpu-resident */
};

/* The help lines of --device and --gpu-resident. */
#define DEVICE_HELP                                                                                \
    "  --device D           where the model runs: auto (default: a GPU of compute\n"               \
    "                       capability 8.0 or newer with enough free memory, else the CPU),\n"     \
    "                       cpu, or gpu[:N] (GPU N, default 0; an error if it cannot)\n"           \
    "  --gpu-resident       on a GPU, keep FP16 copies of the weights (faster, about 3.5x\n"       \
    "                       the memory of Q4_K weights)\n"

/* Parses --device's argument into spec; a usage error names the accepted forms. */
void device_parse(const struct cli_command *cmd, const char *arg, struct device_spec *spec);

/*
 * Where a model runs for a context of max_tokens tokens and max_rows logits rows, with
 * cache_bytes of K/V caches beside it (dllm_request_cache_bytes; 0 without): sets backend
 * ("cuda" or NULL for the CPU), device and gpu_resident in params, and label ("cpu",
 * "gpu:0 NVIDIA H200"). gpu[:N] that cannot run exits 1 with the reason; auto tells stderr
 * which device it chose and, when a GPU was there but not used, why.
 */
void device_choose(const struct cli_command *cmd, const struct device_spec *spec,
                   const struct dllm_model *model, int64_t max_tokens, int64_t max_rows,
                   uint64_t cache_bytes, struct dllm_forward_params *params, char *label,
                   size_t label_size);

#endif
