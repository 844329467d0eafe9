/* The generation flags shared by `dllm run`, `dllm-tui --batch` and `dllm-tui`. */
#ifndef DLLM_GEN_OPTIONS_H
#define DLLM_GEN_OPTIONS_H

#include "cli.h"
#include "device.h"
#include "dllm.h"

#include <stdbool.h>

/* What the user asked for; sampler fields apply over the architecture's defaults. */
struct gen_options {
    const char *model;
    const char *prompt; /* "-" reads standard input */
    const char *system;
    int threads;
    bool no_chat;
    bool offline;              /* hub models from the cache only */
    struct device_spec device; /* --device, --gpu-resident */
    /* Sampler overrides: each field counts only when its has_ flag is set. */
    struct dllm_sampler_params set;
    bool has_gen_length, has_steps, has_block_length, has_temperature, has_top_p, has_top_k,
        has_threshold, has_remasking, has_alg, has_alg_temp, has_eps, has_cfg_scale, has_seed,
        has_early_stop, has_cache, has_cache_type;
};

/* The getopt_long table of the generation flags (ids from 256 up). */
extern const struct option gen_long_options[];

/* The help text of the generation flags, for a command's usage. */
#define GEN_OPTIONS_HELP                                                                           \
    "  -m, --model MODEL    a LLaDA, Dream, LLaDA-MoE or RND1 GGUF file, or a hub model\n"         \
    "                       org/repo[:QUANT|:FILE.gguf], downloaded once into the cache\n"         \
    "  --offline            hub models from the cache only, no network (also\n"                    \
    "                       HF_HUB_OFFLINE=1)\n"                                                   \
    "  -p, --prompt TEXT    the user message ('-' reads it from standard input, except in\n"       \
    "                       the interactive chat, where it is the first message itself)\n"         \
    "  --system TEXT        a system message before it (not with --no-chat)\n"                     \
    "  -t, --threads N      worker threads (default: the number of cores)\n"                       \
    "  --max-tokens N       tokens to generate, the masks of the canvas (default 128)\n"           \
    "  --steps N            denoising steps in all (default: --max-tokens); with blocks, a\n"      \
    "                       multiple of the block count\n"                                         \
    "  --block-length N     semi-autoregressive blocks of N tokens, left to right\n"               \
    "                       (LLaDA default 32; Dream default: none, 0 turns blocks off)\n"         \
    "  --temperature F      0 takes the most likely token (LLaDA default 0, Dream 0.2)\n"          \
    "  --top-p F            Dream: nucleus filter in (0, 1] (default 0.95)\n"                      \
    "  --top-k N            Dream: keep the N most likely tokens (default off)\n"                  \
    "  --seed N             the one source of randomness, 0 to 2^64-1 (default 0)\n"               \
    "  --threshold T        Fast-dLLM parallel decoding: commit every masked slot of the\n"        \
    "                       block at least T confident, at least one per step; T in (0, 1];\n"     \
    "                       blocks run until full, so --steps does not apply\n"                    \
    "  --remasking R        LLaDA confidence: low_confidence (default) or random\n"                \
    "  --alg A              Dream confidence: origin, maskgit_plus, topk_margin,\n"                \
    "                       entropy (default)\n"                                                   \
    "  --alg-temp F         Dream: draw positions from softmax(confidence / F) (default 0)\n"      \
    "  --eps F              Dream: the last timestep, in [0, 1) (default 0.001)\n"                 \
    "  --cfg-scale F        classifier-free guidance weight (default 0: off)\n"                    \
    "  --cache MODE         K/V reuse between the steps of a block, an approximation:\n"           \
    "                       none (default), prefix or dual (blocks of 32 unless\n"                 \
    "                       --block-length says otherwise)\n"                                      \
    "  --cache-type T       how the cache stores keys and values: f16 (default, half the\n"        \
    "                       memory) or f32\n"                                                      \
    "  --no-chat            feed the prompt as raw text, without the chat template\n"              \
    "  --no-early-stop      run every step even once the answer is final\n" DEVICE_HELP

/* Handles one option of gen_long_options (or -m, -p, -t); false when c is not one of them. */
bool gen_options_handle(const struct cli_command *cmd, struct gen_options *o, int c,
                        const char *arg);

/*
 * The sampler settings for a model: the architecture's defaults with the user's overrides.
 * Settings that cannot run are a usage error naming the values that would work; with a
 * prompt of n_prompt tokens (0: not known yet) that includes an answer too long for the
 * canvas left. verbose: say how the defaults were chosen.
 */
void gen_options_sampler(const struct cli_command *cmd, const struct gen_options *o,
                         const struct dllm_model *model, int64_t n_prompt, bool verbose,
                         struct dllm_sampler_params *out);

#endif
