/*
 * Generation settings: the names of the sampler's and the cache's enumerations (as flags, saved
 * conversations and the TUI write them), their defaults, and the check that names what is wrong
 * and what to use instead. Nothing here runs a model: a program that only reads or writes
 * settings links this file alone.
 */
#include "config.h"

#include "dllm.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static const char *const remasking_names[] = {"low_confidence", "random"};
static const char *const alg_names[] = {"origin", "maskgit_plus", "topk_margin", "entropy"};
static const char *const cache_names[] = {"none", "prefix", "dual"};
static const char *const cache_type_names[] = {[DLLM_CACHE_F16] = "f16", [DLLM_CACHE_F32] = "f32"};

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* The index of name in names[0 .. n-1], or -1. */
static int name_index(const char *const *names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

const char *dllm_remasking_name(enum dllm_remasking remasking)
{
    return (int)remasking >= 0 && (int)remasking < N_OF(remasking_names)
               ? remasking_names[remasking]
               : NULL;
}

bool dllm_remasking_parse(const char *name, enum dllm_remasking *out)
{
    const int i = name_index(remasking_names, N_OF(remasking_names), name);
    if (i >= 0)
        *out = (enum dllm_remasking)i;
    return i >= 0;
}

const char *dllm_alg_name(enum dllm_alg alg)
{
    return (int)alg >= 0 && (int)alg < N_OF(alg_names) ? alg_names[alg] : NULL;
}

bool dllm_alg_parse(const char *name, enum dllm_alg *out)
{
    const int i = name_index(alg_names, N_OF(alg_names), name);
    if (i >= 0)
        *out = (enum dllm_alg)i;
    return i >= 0;
}

const char *dllm_cache_mode_name(enum dllm_cache_mode mode)
{
    return (int)mode >= 0 && (int)mode < N_OF(cache_names) ? cache_names[mode] : NULL;
}

bool dllm_cache_mode_parse(const char *name, enum dllm_cache_mode *out)
{
    const int i = name_index(cache_names, N_OF(cache_names), name);
    if (i >= 0)
        *out = (enum dllm_cache_mode)i;
    return i >= 0;
}

const char *dllm_cache_type_name(enum dllm_cache_type type)
{
    return (int)type >= 0 && (int)type < N_OF(cache_type_names) ? cache_type_names[type] : NULL;
}

bool dllm_cache_type_parse(const char *name, enum dllm_cache_type *out)
{
    const int i = name_index(cache_type_names, N_OF(cache_type_names), name);
    if (i >= 0)
        *out = (enum dllm_cache_type)i;
    return i >= 0;
}

void dllm_sampler_params_init(struct dllm_sampler_params *params, enum dllm_sampler_kind kind)
{
    bool dream = kind == DLLM_SAMPLER_DREAM;
    *params = (struct dllm_sampler_params){
        .kind = kind,
        .gen_length = 128,
        .steps = 128,
        .block_length = dream ? 0 : 32,
        .temperature = dream ? 0.2 : 0.0,
        .top_p = dream ? 0.95 : 1.0,
        .top_k = 0,
        .threshold = 0.0,
        .remasking = DLLM_REMASKING_LOW_CONFIDENCE,
        .alg = DLLM_ALG_ENTROPY,
        .alg_temp = 0.0,
        .eps = 1e-3,
        .cfg_scale = 0.0,
        .seed = 0,
        .early_stop = true,
        .cache = DLLM_CACHE_NONE,
        .cache_type = DLLM_CACHE_F16,
    };
}

/*
 * Writes the divisors of n to buf, ascending: all of them, or the first 12, "..." and n. The
 * divisors up to sqrt(n) are found by trial division, the others are n over those.
 */
static void list_divisors(char *buf, size_t size, int64_t n)
{
    int64_t small[128], div[13];
    int n_small = 0, n_div = 0;
    for (int64_t d = 1; d * d <= n && n_small < N_OF(small); d++)
        if (n % d == 0)
            small[n_small++] = d;
    for (int i = 0; i < n_small && n_div < N_OF(div); i++)
        div[n_div++] = small[i];
    for (int i = n_small - 1; i >= 0 && n_div < N_OF(div); i--)
        if (n / small[i] != small[i])
            div[n_div++] = n / small[i];
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n_div && i < 12 && used < size; i++) {
        int w = snprintf(buf + used, size - used, "%s%" PRId64, i ? ", " : "", div[i]);
        used += w > 0 ? (size_t)w : 0;
    }
    if (n_div > 12 && used < size)
        snprintf(buf + used, size - used, ", ..., %" PRId64, n);
}

/* The confidence rule's name for messages: "remasking random" or "alg entropy". */
static const char *rule_name(const struct dllm_sampler_params *p, char *buf, size_t size)
{
    if (p->kind == DLLM_SAMPLER_LLADA)
        snprintf(buf, size, "remasking %s", dllm_remasking_name(p->remasking));
    else
        snprintf(buf, size, "alg %s", dllm_alg_name(p->alg));
    return buf;
}

enum dllm_status dllm_sampler_params_check(const struct dllm_sampler_params *p,
                                           struct dllm_error *err)
{
    char buf[160];
    bool llada = p->kind == DLLM_SAMPLER_LLADA;
    if (!llada && p->kind != DLLM_SAMPLER_DREAM)
        return dllm_error_set(err, DLLM_ERR_ARG, "unknown sampler kind %d", (int)p->kind);
    if (!dllm_remasking_name(p->remasking))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "unknown remasking %d (known: low_confidence, random)",
                              (int)p->remasking);
    if (!dllm_alg_name(p->alg))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "unknown alg %d (known: origin, maskgit_plus, topk_margin, entropy)",
                              (int)p->alg);
    if (!dllm_cache_mode_name(p->cache))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "unknown cache mode %d (known: none, prefix, dual)", (int)p->cache);
    if (!dllm_cache_type_name(p->cache_type))
        return dllm_error_set(err, DLLM_ERR_ARG, "unknown cache type %d (known: f16, f32)",
                              (int)p->cache_type);
    if (p->gen_length < 1 || p->gen_length > INT32_MAX)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "gen length %" PRId64 " is out of range: use 1 or more",
                              p->gen_length);
    if (p->block_length < 0 || p->block_length > p->gen_length ||
        (p->block_length > 0 && p->gen_length % p->block_length != 0)) {
        list_divisors(buf, sizeof buf, p->gen_length);
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "block length %" PRId64 " does not divide gen length %" PRId64
                              ": use one of %s, or 0 for no blocks",
                              p->block_length, p->gen_length, buf);
    }
    bool threshold = p->threshold != 0.0;
    if (threshold && !(p->threshold > 0.0 && p->threshold <= 1.0))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "threshold %g is out of range: use a value in (0, 1], or 0 for off",
                              p->threshold);
    if (!threshold) {
        int64_t n_blocks = p->block_length ? p->gen_length / p->block_length : 1;
        if (p->steps < 1)
            return dllm_error_set(err, DLLM_ERR_ARG,
                                  "steps %" PRId64 " is out of range: use %" PRId64
                                  " or a multiple of it",
                                  p->steps, n_blocks);
        if (p->steps % n_blocks != 0) {
            int64_t lo = p->steps / n_blocks * n_blocks;
            if (lo == 0)
                return dllm_error_set(err, DLLM_ERR_ARG,
                                      "steps %" PRId64 " is fewer than the %" PRId64
                                      " blocks (gen length %" PRId64 " / block length %" PRId64
                                      "): use %" PRId64 " or a multiple of it",
                                      p->steps, n_blocks, p->gen_length, p->block_length, n_blocks);
            return dllm_error_set(
                err, DLLM_ERR_ARG,
                "steps %" PRId64 " is not a multiple of the %" PRId64 " blocks (gen length %" PRId64
                " / block length %" PRId64 "): use %" PRId64 " or %" PRId64,
                p->steps, n_blocks, p->gen_length, p->block_length, lo, lo + n_blocks);
        }
    }
    if (!(p->temperature >= 0.0 && isfinite(p->temperature)))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "temperature %g is out of range: use 0 (argmax) or more",
                              p->temperature);
    if (!(p->top_p > 0.0 && p->top_p <= 1.0))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "top-p %g is out of range: use a value in (0, 1], 1 for off",
                              p->top_p);
    if (p->top_k < 0)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "top-k %" PRId64 " is out of range: use 1 or more, 0 for off",
                              p->top_k);
    if (llada && (p->top_p < 1.0 || p->top_k > 0))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "top-p and top-k apply to the Dream sampler only: LLaDA proposes "
                              "from the full vocabulary (use top-p 1 and top-k 0)");
    if (!(p->alg_temp >= 0.0 && isfinite(p->alg_temp)))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "alg temp %g is out of range: use 0 (most confident first) or "
                              "more",
                              p->alg_temp);
    if (!(p->eps >= 0.0 && p->eps < 1.0))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "eps %g is out of range: use a value in [0, 1), e.g. 1e-3", p->eps);
    if (!(p->cfg_scale >= 0.0 && isfinite(p->cfg_scale)))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "cfg scale %g is out of range: use 0 (off) or more", p->cfg_scale);
    if (threshold) {
        bool confident = llada ? p->remasking == DLLM_REMASKING_LOW_CONFIDENCE
                               : p->alg == DLLM_ALG_MASKGIT_PLUS || p->alg == DLLM_ALG_TOPK_MARGIN;
        if (!confident)
            return dllm_error_set(err, DLLM_ERR_ARG,
                                  "a threshold needs a probability-like confidence, which %s "
                                  "lacks: use %s",
                                  rule_name(p, buf, sizeof buf),
                                  llada ? "remasking low_confidence"
                                        : "alg maskgit_plus or topk_margin");
        if (p->alg_temp > 0.0)
            return dllm_error_set(err, DLLM_ERR_ARG,
                                  "alg temp %g does not combine with a threshold: use alg temp 0",
                                  p->alg_temp);
    }
    return DLLM_OK;
}
