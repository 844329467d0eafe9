#include "config.h"

#include "gen_options.h"

#include <errno.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
    OPT_SYSTEM = 256,
    OPT_MAX_TOKENS,
    OPT_STEPS,
    OPT_BLOCK_LENGTH,
    OPT_TEMPERATURE,
    OPT_TOP_P,
    OPT_TOP_K,
    OPT_SEED,
    OPT_THRESHOLD,
    OPT_REMASKING,
    OPT_ALG,
    OPT_ALG_TEMP,
    OPT_EPS,
    OPT_CFG_SCALE,
    OPT_NO_CHAT,
    OPT_NO_EARLY_STOP,
    OPT_OFFLINE,
    OPT_CACHE,
    OPT_CACHE_TYPE,
    OPT_DEVICE,
    OPT_GPU_RESIDENT,
};

const struct option gen_long_options[] = {
    {"model", required_argument, NULL, 'm'},
    {"prompt", required_argument, NULL, 'p'},
    {"threads", required_argument, NULL, 't'},
    {"system", required_argument, NULL, OPT_SYSTEM},
    {"max-tokens", required_argument, NULL, OPT_MAX_TOKENS},
    {"steps", required_argument, NULL, OPT_STEPS},
    {"block-length", required_argument, NULL, OPT_BLOCK_LENGTH},
    {"temperature", required_argument, NULL, OPT_TEMPERATURE},
    {"top-p", required_argument, NULL, OPT_TOP_P},
    {"top-k", required_argument, NULL, OPT_TOP_K},
    {"seed", required_argument, NULL, OPT_SEED},
    {"threshold", required_argument, NULL, OPT_THRESHOLD},
    {"remasking", required_argument, NULL, OPT_REMASKING},
    {"alg", required_argument, NULL, OPT_ALG},
    {"alg-temp", required_argument, NULL, OPT_ALG_TEMP},
    {"eps", required_argument, NULL, OPT_EPS},
    {"cfg-scale", required_argument, NULL, OPT_CFG_SCALE},
    {"no-chat", no_argument, NULL, OPT_NO_CHAT},
    {"no-early-stop", no_argument, NULL, OPT_NO_EARLY_STOP},
    {"offline", no_argument, NULL, OPT_OFFLINE},
    {"cache", required_argument, NULL, OPT_CACHE},
    {"cache-type", required_argument, NULL, OPT_CACHE_TYPE},
    {"device", required_argument, NULL, OPT_DEVICE},
    {"gpu-resident", no_argument, NULL, OPT_GPU_RESIDENT},
    {0},
};

/* A number in (0, 1] for flag, with one wording for every value out of it (0 and 1.5 alike). */
static double parse_fraction(const struct cli_command *cmd, const char *flag, const char *arg,
                             const char *example)
{
    char *end;
    errno = 0;
    double v = strtod(arg, &end);
    if (!cli_plain_number(arg) || errno || end == arg || *end || !(v > 0 && v <= 1))
        cli_usage_error(cmd, "%s takes a number in (0, 1], such as %s, not '%s'", flag, example,
                        arg);
    return v;
}

bool gen_options_handle(const struct cli_command *cmd, struct gen_options *o, int c,
                        const char *arg)
{
    struct dllm_sampler_params *s = &o->set;
    switch (c) {
    case 'm': o->model = arg; break;
    case 'p': o->prompt = arg; break;
    case 't': o->threads = (int)cli_parse_int(cmd, "--threads", arg, 1, 1024); break;
    case OPT_SYSTEM: o->system = arg; break;
    case OPT_NO_CHAT: o->no_chat = true; break;
    case OPT_MAX_TOKENS:
        s->gen_length = cli_parse_int(cmd, "--max-tokens", arg, 1, 1 << 20);
        o->has_gen_length = true;
        break;
    case OPT_STEPS:
        s->steps = cli_parse_int(cmd, "--steps", arg, 1, 1 << 20);
        o->has_steps = true;
        break;
    case OPT_BLOCK_LENGTH:
        s->block_length = cli_parse_int(cmd, "--block-length", arg, 0, 1 << 20);
        o->has_block_length = true;
        break;
    case OPT_TEMPERATURE:
        s->temperature = cli_parse_float(cmd, "--temperature", arg, 0, 100);
        o->has_temperature = true;
        break;
    case OPT_TOP_P:
        s->top_p = parse_fraction(cmd, "--top-p", arg, "0.95");
        o->has_top_p = true;
        break;
    case OPT_TOP_K:
        s->top_k = cli_parse_int(cmd, "--top-k", arg, 0, INT32_MAX);
        o->has_top_k = true;
        break;
    case OPT_SEED:
        s->seed = cli_parse_u64(cmd, "--seed", arg);
        o->has_seed = true;
        break;
    case OPT_THRESHOLD:
        s->threshold = parse_fraction(cmd, "--threshold", arg, "0.9");
        o->has_threshold = true;
        break;
    case OPT_REMASKING:
        if (!dllm_remasking_parse(arg, &s->remasking))
            cli_usage_error(cmd, "--remasking is low_confidence or random, not '%s'", arg);
        o->has_remasking = true;
        break;
    case OPT_ALG:
        if (!dllm_alg_parse(arg, &s->alg))
            cli_usage_error(cmd, "--alg is origin, maskgit_plus, topk_margin or entropy, not '%s'",
                            arg);
        o->has_alg = true;
        break;
    case OPT_ALG_TEMP:
        s->alg_temp = cli_parse_float(cmd, "--alg-temp", arg, 0, 100);
        o->has_alg_temp = true;
        break;
    case OPT_EPS:
        s->eps = cli_parse_float(cmd, "--eps", arg, 0, 0.999999);
        o->has_eps = true;
        break;
    case OPT_CFG_SCALE:
        s->cfg_scale = cli_parse_float(cmd, "--cfg-scale", arg, 0, 100);
        o->has_cfg_scale = true;
        break;
    case OPT_NO_EARLY_STOP:
        s->early_stop = false;
        o->has_early_stop = true;
        break;
    case OPT_OFFLINE: o->offline = true; break;
    case OPT_CACHE:
        if (!dllm_cache_mode_parse(arg, &s->cache))
            cli_usage_error(cmd, "--cache is none, prefix or dual, not '%s'", arg);
        o->has_cache = true;
        break;
    case OPT_CACHE_TYPE:
        if (!dllm_cache_type_parse(arg, &s->cache_type))
            cli_usage_error(cmd, "--cache-type is f16 or f32, not '%s'", arg);
        o->has_cache_type = true;
        break;
    case OPT_DEVICE: device_parse(cmd, arg, &o->device); break;
    case OPT_GPU_RESIDENT: o->device.resident = true; break;
    default: return false;
    }
    if (o->system && o->no_chat)
        cli_usage_error(cmd, "--system applies to chat prompts, not --no-chat");
    return true;
}

/*
 * LLaDA's blocks without --block-length: 32 when it divides the answer's length, else its
 * largest divisor from 8 to 32, else one block; --verbose says which.
 */
static void default_block(const struct cli_command *cmd, struct dllm_sampler_params *out,
                          bool verbose)
{
    const int64_t n = out->gen_length;
    int64_t b = 32;
    while (b >= 8 && n % b != 0)
        b--;
    out->block_length = b >= 8 ? b : n;
    if (!verbose)
        return;
    if (b == 32)
        fprintf(stderr, "dllm %s: blocks of 32 tokens\n", cmd->name);
    else if (b >= 8)
        fprintf(stderr, "dllm %s: blocks of %lld tokens (32 does not divide --max-tokens %lld)\n",
                cmd->name, (long long)b, (long long)n);
    else
        fprintf(stderr, "dllm %s: one block of %lld tokens (no length from 8 to 32 divides it)\n",
                cmd->name, (long long)n);
}

void gen_options_sampler(const struct cli_command *cmd, const struct gen_options *o,
                         const struct dllm_model *model, int64_t n_prompt, bool verbose,
                         struct dllm_sampler_params *out)
{
    const bool llada = dllm_model_sampler_kind(model) == DLLM_SAMPLER_LLADA;
    dllm_sampler_params_init(out, dllm_model_sampler_kind(model));
    const struct dllm_sampler_params *s = &o->set;
#define APPLY(flag, field)                                                                         \
    if (o->flag)                                                                                   \
        out->field = s->field;
    APPLY(has_gen_length, gen_length)
    APPLY(has_steps, steps)
    APPLY(has_block_length, block_length)
    APPLY(has_temperature, temperature)
    APPLY(has_top_p, top_p)
    APPLY(has_top_k, top_k)
    APPLY(has_threshold, threshold)
    APPLY(has_remasking, remasking)
    APPLY(has_alg, alg)
    APPLY(has_alg_temp, alg_temp)
    APPLY(has_eps, eps)
    APPLY(has_cfg_scale, cfg_scale)
    APPLY(has_seed, seed)
    APPLY(has_early_stop, early_stop)
    APPLY(has_cache, cache)
    APPLY(has_cache_type, cache_type)
#undef APPLY
    /*
     * Under a threshold Dream's confidence is the proposal's probability (Fast-dLLM's Dream
     * threshold decoding): maskgit_plus unless --alg says otherwise.
     */
    if (out->kind == DLLM_SAMPLER_DREAM && out->threshold > 0 && !o->has_alg)
        out->alg = DLLM_ALG_MASKGIT_PLUS;
    /* A cache works block by block: without --block-length, blocks of 32 (Fast-dLLM's). */
    if (out->cache != DLLM_CACHE_NONE && !o->has_block_length && out->block_length == 0) {
        out->block_length = 32;
        fprintf(stderr,
                "dllm %s: note: --cache %s without --block-length uses blocks of 32 tokens\n",
                cmd->name, dllm_cache_mode_name(out->cache));
    }
    /* A shorter answer than the default block keeps the default steps-per-token ratio. */
    if (o->has_gen_length && !o->has_steps)
        out->steps = out->gen_length;
    if (llada && !o->has_block_length && out->block_length > 0)
        default_block(cmd, out, verbose);
    else if (o->has_gen_length && !o->has_block_length && out->block_length > out->gen_length)
        out->block_length = out->gen_length;
    /* More steps than tokens would run steps that commit nothing. */
    if (out->threshold == 0 && out->steps > out->gen_length) {
        fprintf(stderr,
                "dllm %s: note: --steps %lld is more than --max-tokens %lld: running %lld steps\n",
                cmd->name, (long long)out->steps, (long long)out->gen_length,
                (long long)out->gen_length);
        out->steps = out->gen_length;
    }
    if (llada && (o->has_top_p || o->has_top_k || o->has_alg || o->has_alg_temp || o->has_eps))
        cli_usage_error(cmd, "--top-p, --top-k, --alg, --alg-temp and --eps are Dream settings; "
                             "this model runs the LLaDA sampler");
    if (!llada && o->has_remasking)
        cli_usage_error(cmd, "--remasking is a LLaDA setting; this model runs the Dream sampler "
                             "(see --alg)");
    struct dllm_error err;
    if (dllm_sampler_params_check(out, &err))
        cli_usage_error(cmd, "%s", err.text);
    const int64_t n_ctx = dllm_model_n_ctx(model);
    const int64_t canvas = n_ctx < DLLM_MAX_CANVAS_DEFAULT ? n_ctx : DLLM_MAX_CANVAS_DEFAULT;
    if (n_prompt > 0 && out->gen_length > canvas - n_prompt)
        cli_usage_error(cmd,
                        "--max-tokens %lld does not fit: the prompt is %lld tokens and the canvas "
                        "limit %lld; the largest --max-tokens this prompt allows is %lld",
                        (long long)out->gen_length, (long long)n_prompt, (long long)canvas,
                        (long long)(canvas - n_prompt > 0 ? canvas - n_prompt : 0));
    if (out->gen_length >= canvas)
        cli_usage_error(cmd, "--max-tokens %lld does not fit the canvas limit of %lld tokens",
                        (long long)out->gen_length, (long long)canvas);
}
