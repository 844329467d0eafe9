/* The sliders over the generation settings. */
#include "config.h"

#include "format.h"
#include "settings.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int64_t ui_settings_blocks(const struct dllm_sampler_params *s)
{
    return s->block_length > 0 ? s->gen_length / s->block_length : 1;
}

/*
 * Moves steps to the nearest positive multiple of the blocks, ties upwards, and to at most
 * max tokens (a step commits at least one token: more steps than tokens would run empty).
 */
static void fit_steps(struct dllm_sampler_params *s)
{
    int64_t nb = ui_settings_blocks(s);
    if (s->steps > s->gen_length)
        s->steps = s->gen_length / nb * nb;
    if (s->steps % nb == 0 && s->steps >= nb)
        return;
    int64_t lo = s->steps / nb * nb, hi = lo + nb;
    int64_t v = s->steps - lo < hi - s->steps ? lo : hi;
    s->steps = v < nb ? nb : v;
}

/* The next multiple of unit above (dir > 0) or below v. */
static int64_t next_multiple(int64_t v, int64_t unit, int dir)
{
    return dir > 0 ? (v / unit + 1) * unit : (v - 1) / unit * unit;
}

/* The block length one notch from bl: the divisors of max ascending, then off (0). */
static int64_t next_block(int64_t bl, int64_t max, int dir)
{
    if (dir > 0) {
        if (bl == 0)
            return 0;
        for (int64_t d = bl + 1; d <= max; d++)
            if (max % d == 0)
                return d;
        return 0;
    }
    for (int64_t d = (bl == 0 ? max + 1 : bl) - 1; d >= 1; d--)
        if (max % d == 0)
            return d;
    return bl;
}

/* Whether any setting differs between a and b. */
static bool differs(const struct dllm_sampler_params *a, const struct dllm_sampler_params *b)
{
    return a->steps != b->steps || a->gen_length != b->gen_length ||
           a->block_length != b->block_length || a->threshold != b->threshold ||
           a->temperature != b->temperature || a->cache != b->cache || a->alg != b->alg ||
           a->remasking != b->remasking || a->seed != b->seed || a->top_p != b->top_p ||
           a->top_k != b->top_k || a->cfg_scale != b->cfg_scale || a->cache_type != b->cache_type;
}

/*
 * The note of a change from old to s of the setting `name`, now `value`: "block 16; steps 4 -> 8
 * to fit 8 blocks", with what else moved along and "; applies to the next generation" when busy.
 */
static void describe(const struct dllm_sampler_params *old, const struct dllm_sampler_params *s,
                     const char *name, const char *value, bool busy, char *note, size_t size)
{
    const bool steps = strcmp(name, "steps") == 0;
    note[0] = '\0';
    ui_addf(note, size, "%s %s", name, value);
    if (!steps && s->steps != old->steps && old->steps > s->gen_length)
        ui_addf(note, size, "; steps %" PRId64 " -> %" PRId64 ", at most max tokens", old->steps,
                s->steps);
    else if (!steps && s->steps != old->steps)
        ui_addf(note, size, "; steps %" PRId64 " -> %" PRId64 " to fit %" PRId64 " block%s",
                old->steps, s->steps, ui_settings_blocks(s), ui_settings_blocks(s) == 1 ? "" : "s");
    if (s->alg != old->alg && strcmp(name, "alg") != 0)
        ui_addf(note, size, "; alg %s: a threshold needs a probability as confidence",
                dllm_alg_name(s->alg));
    if (steps && s->threshold > 0)
        ui_addf(note, size, "; steps do not apply while a threshold is set");
    if (busy)
        ui_addf(note, size, "; applies to the next generation");
}

/* Dream's confidence must be a probability under a threshold (Fast-dLLM's Dream): maskgit_plus. */
static void fit_alg(struct dllm_sampler_params *s)
{
    if (s->kind == DLLM_SAMPLER_DREAM && s->threshold > 0 &&
        (s->alg == DLLM_ALG_ORIGIN || s->alg == DLLM_ALG_ENTROPY))
        s->alg = DLLM_ALG_MASKGIT_PLUS;
}

bool ui_settings_adjust(struct dllm_sampler_params *s, enum ui_slider slider, int dir, int64_t cap,
                        bool busy, char *note, size_t size)
{
    struct dllm_sampler_params old = *s;
    int64_t v;
    switch (slider) {
    case UI_SLIDER_STEPS:
        v = next_multiple(s->steps, ui_settings_blocks(s), dir);
        if (v >= ui_settings_blocks(s) && v <= s->gen_length)
            s->steps = v;
        break;
    case UI_SLIDER_MAX_TOKENS: {
        int64_t unit = s->block_length > 0 ? s->block_length : UI_MAX_TOKENS_UNIT;
        v = next_multiple(s->gen_length, unit, dir);
        if (v >= unit && v <= cap)
            s->gen_length = v;
        break;
    }
    case UI_SLIDER_BLOCK: s->block_length = next_block(s->block_length, s->gen_length, dir); break;
    case UI_SLIDER_THRESHOLD: {
        /* Notches of 0.05; notch 9 (below 0.50) is off. */
        long k = s->threshold > 0 ? lround(s->threshold * 20) : 9;
        k += dir > 0 ? 1 : -1;
        k = k < 9 ? 9 : k > 20 ? 20 : k;
        s->threshold = k == 9 ? 0 : k / 20.0;
        fit_alg(s);
        break;
    }
    case UI_SLIDER_TEMPERATURE: {
        long k = lround(s->temperature * 10) + (dir > 0 ? 1 : -1);
        long top = lround(UI_TEMPERATURE_MAX * 10);
        s->temperature = (k < 0 ? 0 : k > top ? top : k) / 10.0;
        break;
    }
    case UI_SLIDER_CACHE: {
        int k = (int)s->cache + (dir > 0 ? 1 : -1);
        s->cache = (enum dllm_cache_mode)(k < 0 ? 0 : k > DLLM_CACHE_DUAL ? DLLM_CACHE_DUAL : k);
        break;
    }
    default: return false;
    }
    fit_steps(s);

    char value[24];
    ui_slider_value(s, slider, value, sizeof value);
    if (!differs(&old, s)) {
        snprintf(note, size, "%s stays %s: its %s valid value", ui_slider_name(slider), value,
                 dir > 0 ? "highest" : "lowest");
        return false;
    }
    describe(&old, s, ui_slider_name(slider), value, busy, note, size);
    return true;
}

/* The settings /set takes: the sliders' (in enum ui_slider's order), then the sampler's others. */
enum {
    SET_SEED = UI_SLIDER_COUNT,
    SET_ALG,
    SET_REMASKING,
    SET_TOP_P,
    SET_TOP_K,
    SET_CFG,
    SET_CACHE_TYPE,
    SET_COUNT
};

static const char *const set_names[SET_COUNT] = {"steps", "max",  "block",     "threshold", "temp",
                                                 "cache", "seed", "alg",       "remasking", "top-p",
                                                 "top-k", "cfg",  "cache-type"};

/* Whether setting k applies to a sampler of this kind (alg, top-p, top-k: Dream; remasking: LLaDA).
 */
static bool applies(int k, enum dllm_sampler_kind kind)
{
    if (k == SET_ALG || k == SET_TOP_P || k == SET_TOP_K)
        return kind == DLLM_SAMPLER_DREAM;
    if (k == SET_REMASKING)
        return kind == DLLM_SAMPLER_LLADA;
    return true;
}

/* Setting k's value as shown: "64", "off", "0.90", "maskgit_plus". */
static void value_text(const struct dllm_sampler_params *s, int k, char *buf, size_t size)
{
    if (k < UI_SLIDER_COUNT) {
        ui_slider_value(s, (enum ui_slider)k, buf, size);
        return;
    }
    switch (k) {
    case SET_SEED: snprintf(buf, size, "%" PRIu64, s->seed); break;
    case SET_ALG: snprintf(buf, size, "%s", dllm_alg_name(s->alg)); break;
    case SET_REMASKING: snprintf(buf, size, "%s", dllm_remasking_name(s->remasking)); break;
    case SET_TOP_P: snprintf(buf, size, "%.2f", s->top_p); break;
    case SET_TOP_K: snprintf(buf, size, "%" PRId64, s->top_k); break;
    case SET_CACHE_TYPE: snprintf(buf, size, "%s", dllm_cache_type_name(s->cache_type)); break;
    default: snprintf(buf, size, "%g", s->cfg_scale); break;
    }
}

/* Word i of the words setting k takes as its value (libdllm's names; "off" for the block length
 * and the threshold), or NULL past the last and for a setting that takes numbers only. */
static const char *value_word(int k, size_t i)
{
    switch (k) {
    case UI_SLIDER_BLOCK:
    case UI_SLIDER_THRESHOLD: return i == 0 ? "off" : NULL;
    case UI_SLIDER_CACHE: return dllm_cache_mode_name((enum dllm_cache_mode)i);
    case SET_ALG: return dllm_alg_name((enum dllm_alg)i);
    case SET_REMASKING: return dllm_remasking_name((enum dllm_remasking)i);
    case SET_CACHE_TYPE: return dllm_cache_type_name((enum dllm_cache_type)i);
    default: return NULL;
    }
}

/* The words setting k takes, as a refusal names them: "none, prefix or dual". */
static void words_text(int k, char *buf, size_t size)
{
    buf[0] = '\0';
    for (size_t i = 0; value_word(k, i); i++)
        ui_addf(buf, size, "%s%s",
                i == 0                 ? ""
                : value_word(k, i + 1) ? ", "
                                       : " or ",
                value_word(k, i));
}

/* The values setting k takes with the settings s and a max tokens cap, for a refusal. */
static void range_text(const struct dllm_sampler_params *s, int k, int64_t cap, char *buf,
                       size_t size)
{
    const int64_t nb = ui_settings_blocks(s), bl = s->block_length;
    switch (k) {
    case UI_SLIDER_STEPS:
        if (nb == 1)
            snprintf(buf, size, "a whole number from 1 to %" PRId64 " (max tokens)", s->gen_length);
        else
            snprintf(buf, size,
                     "a multiple of the %" PRId64 " blocks from %" PRId64 " to %" PRId64
                     " (max tokens)",
                     nb, nb, s->gen_length);
        break;
    case UI_SLIDER_MAX_TOKENS:
        if (bl > 0)
            snprintf(buf, size,
                     "a multiple of the block length %" PRId64 " from %" PRId64 " to %" PRId64, bl,
                     bl, cap / bl * bl);
        else
            snprintf(buf, size, "a whole number from 1 to %" PRId64, cap);
        break;
    case UI_SLIDER_BLOCK:
        snprintf(buf, size, "off (0) or a divisor of max tokens %" PRId64, s->gen_length);
        break;
    case UI_SLIDER_THRESHOLD: snprintf(buf, size, "off (0) or a number in (0, 1]"); break;
    case UI_SLIDER_TEMPERATURE:
        snprintf(buf, size, "a number from 0 to %.0f", UI_TEMPERATURE_MAX);
        break;
    case UI_SLIDER_CACHE:
    case SET_ALG:
    case SET_REMASKING:
    case SET_CACHE_TYPE: words_text(k, buf, size); break;
    case SET_SEED: snprintf(buf, size, "a whole number from 0 to %" PRIu64, UINT64_MAX); break;
    case SET_TOP_P: snprintf(buf, size, "a number in (0, 1] (1: off)"); break;
    case SET_TOP_K: snprintf(buf, size, "a whole number, 0 (off) or more"); break;
    default: snprintf(buf, size, "a number, 0 (off) or more"); break;
    }
}

/* Parses a whole number written in decimal digits only; false when it is not one or too big. */
static bool parse_uint(const char *v, uint64_t *out)
{
    if (*v < '0' || *v > '9')
        return false;
    errno = 0;
    char *end;
    unsigned long long n = strtoull(v, &end, 10);
    if (*end || errno)
        return false;
    *out = n;
    return true;
}

/* Parses a finite decimal number ("0.9", ".5", "2", "1e-3"); false when it is not one (hex). */
static bool parse_real(const char *v, double *out)
{
    if (((*v < '0' || *v > '9') && *v != '.') || v[strspn(v, "0123456789.eE+-")])
        return false;
    char *end;
    double d = strtod(v, &end);
    if (*end || !isfinite(d))
        return false;
    *out = d;
    return true;
}

/* Writes value into setting k of s when it is in k's range (range_text); false when not. */
static bool parse_value(struct dllm_sampler_params *s, int k, const char *v, int64_t cap)
{
    const bool off = strcmp(v, "off") == 0;
    const int64_t nb = ui_settings_blocks(s), unit = s->block_length > 0 ? s->block_length : 1;
    uint64_t n = 0;
    double d = 0;
    switch (k) {
    case UI_SLIDER_STEPS:
        if (!parse_uint(v, &n) || n < (uint64_t)nb || n > (uint64_t)s->gen_length ||
            n % (uint64_t)nb)
            return false;
        s->steps = (int64_t)n;
        return true;
    case UI_SLIDER_MAX_TOKENS:
        if (!parse_uint(v, &n) || n < (uint64_t)unit || n > (uint64_t)cap || n % (uint64_t)unit)
            return false;
        s->gen_length = (int64_t)n;
        return true;
    case UI_SLIDER_BLOCK:
        if (!off && (!parse_uint(v, &n) || n > (uint64_t)s->gen_length ||
                     (n && s->gen_length % (int64_t)n)))
            return false;
        s->block_length = (int64_t)n;
        return true;
    case UI_SLIDER_THRESHOLD:
        if (!off && (!parse_real(v, &d) || d > 1))
            return false;
        s->threshold = d;
        return true;
    case UI_SLIDER_TEMPERATURE:
        if (!parse_real(v, &d) || d > UI_TEMPERATURE_MAX)
            return false;
        s->temperature = d;
        return true;
    case UI_SLIDER_CACHE: return dllm_cache_mode_parse(v, &s->cache);
    case SET_SEED:
        if (!parse_uint(v, &n))
            return false;
        s->seed = n;
        return true;
    case SET_ALG: return dllm_alg_parse(v, &s->alg);
    case SET_REMASKING: return dllm_remasking_parse(v, &s->remasking);
    case SET_TOP_P:
        if (!parse_real(v, &d) || d <= 0 || d > 1)
            return false;
        s->top_p = d;
        return true;
    case SET_TOP_K:
        if (!parse_uint(v, &n) || n > INT32_MAX)
            return false;
        s->top_k = (int64_t)n;
        return true;
    case SET_CACHE_TYPE: return dllm_cache_type_parse(v, &s->cache_type);
    default:
        if (!parse_real(v, &d))
            return false;
        s->cfg_scale = d;
        return true;
    }
}

bool ui_settings_set(struct dllm_sampler_params *s, const char *name, const char *value,
                     int64_t cap, bool busy, char *note, size_t size)
{
    int k = 0;
    while (k < SET_COUNT && strcmp(set_names[k], name) != 0)
        k++;
    if (k == SET_COUNT || !applies(k, s->kind)) {
        char names[160] = "";
        for (int i = 0; i < SET_COUNT; i++)
            if (applies(i, s->kind))
                ui_addf(names, sizeof names, "%s%s", names[0] ? ", " : "", set_names[i]);
        snprintf(note, size, "%s setting '%.40s': this model's are %s",
                 k == SET_COUNT ? "no" : "this model samples without the", name, names);
        return false;
    }
    struct dllm_sampler_params t = *s;
    char range[160], shown[32];
    range_text(s, k, cap, range, sizeof range);
    if (!value[0]) {
        snprintf(note, size, "/set %s needs a value: %s", name, range);
        return false;
    }
    if (!parse_value(&t, k, value, cap)) {
        snprintf(note, size, "%s takes %s, not '%.40s'", name, range, value);
        return false;
    }
    if (k != UI_SLIDER_STEPS)
        fit_steps(&t);
    if (k == UI_SLIDER_THRESHOLD)
        fit_alg(&t);
    struct dllm_error err = {0};
    if (dllm_sampler_params_check(&t, &err) != DLLM_OK) {
        snprintf(note, size, "%s", err.text);
        return false;
    }
    value_text(&t, k, shown, sizeof shown);
    if (!differs(s, &t)) {
        snprintf(note, size, "%s is %s already", name, shown);
        return false;
    }
    describe(s, &t, name, shown, busy, note, size);
    *s = t;
    return true;
}

void ui_settings_list(const struct dllm_sampler_params *s, char *buf, size_t size)
{
    buf[0] = '\0';
    for (int k = 0; k < SET_COUNT; k++) {
        char value[32];
        if (!applies(k, s->kind))
            continue;
        value_text(s, k, value, sizeof value);
        ui_addf(buf, size, "%s%s %s", buf[0] ? ", " : "", set_names[k], value);
    }
}

const char *ui_settings_name(const struct dllm_sampler_params *s, size_t i)
{
    for (int k = 0; k < SET_COUNT; k++)
        if (applies(k, s->kind) && i-- == 0)
            return set_names[k];
    return NULL;
}

const char *ui_settings_value_word(const struct dllm_sampler_params *s, const char *name, size_t i)
{
    for (int k = 0; k < SET_COUNT; k++)
        if (applies(k, s->kind) && strcmp(set_names[k], name) == 0)
            return value_word(k, i);
    return NULL;
}

const char *ui_slider_name(enum ui_slider slider)
{
    return slider < UI_SLIDER_COUNT ? set_names[slider] : "?";
}

void ui_slider_value(const struct dllm_sampler_params *s, enum ui_slider slider, char *buf,
                     size_t size)
{
    switch (slider) {
    case UI_SLIDER_STEPS: snprintf(buf, size, "%" PRId64, s->steps); break;
    case UI_SLIDER_MAX_TOKENS: snprintf(buf, size, "%" PRId64, s->gen_length); break;
    case UI_SLIDER_BLOCK:
        if (s->block_length > 0)
            snprintf(buf, size, "%" PRId64, s->block_length);
        else
            snprintf(buf, size, "off");
        break;
    case UI_SLIDER_THRESHOLD:
        if (s->threshold > 0)
            snprintf(buf, size, "%.2f", s->threshold);
        else
            snprintf(buf, size, "off");
        break;
    case UI_SLIDER_TEMPERATURE: snprintf(buf, size, "%.1f", s->temperature); break;
    case UI_SLIDER_CACHE: snprintf(buf, size, "%s", dllm_cache_mode_name(s->cache)); break;
    default: snprintf(buf, size, "?"); break;
    }
}
