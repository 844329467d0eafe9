/* The sliders over the generation settings. */
#include "config.h"

#include "format.h"
#include "settings.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

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
        /* Dream's confidence must be a probability under a threshold (Fast-dLLM's Dream). */
        if (s->kind == DLLM_SAMPLER_DREAM && s->threshold > 0 &&
            (s->alg == DLLM_ALG_ORIGIN || s->alg == DLLM_ALG_ENTROPY))
            s->alg = DLLM_ALG_MASKGIT_PLUS;
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

    char value[16];
    ui_slider_value(s, slider, value, sizeof value);
    note[0] = '\0';
    bool changed = old.steps != s->steps || old.gen_length != s->gen_length ||
                   old.block_length != s->block_length || old.threshold != s->threshold ||
                   old.temperature != s->temperature || old.cache != s->cache || old.alg != s->alg;
    if (!changed) {
        ui_addf(note, size, "%s stays %s: its %s valid value", ui_slider_name(slider), value,
                dir > 0 ? "highest" : "lowest");
        return false;
    }
    ui_addf(note, size, "%s %s", ui_slider_name(slider), value);
    if (slider != UI_SLIDER_STEPS && s->steps != old.steps && old.steps > s->gen_length)
        ui_addf(note, size, "; steps %" PRId64 " -> %" PRId64 ", at most max tokens", old.steps,
                s->steps);
    else if (slider != UI_SLIDER_STEPS && s->steps != old.steps)
        ui_addf(note, size, "; steps %" PRId64 " -> %" PRId64 " to fit %" PRId64 " block%s",
                old.steps, s->steps, ui_settings_blocks(s), ui_settings_blocks(s) == 1 ? "" : "s");
    if (s->alg != old.alg)
        ui_addf(note, size, "; alg %s: a threshold needs a probability as confidence",
                dllm_alg_name(s->alg));
    if (slider == UI_SLIDER_STEPS && s->threshold > 0)
        ui_addf(note, size, "; steps do not apply while a threshold is set");
    if (busy)
        ui_addf(note, size, "; applies to the next generation");
    return true;
}

const char *ui_slider_name(enum ui_slider slider)
{
    static const char *const names[UI_SLIDER_COUNT] = {"steps",     "max",  "block",
                                                       "threshold", "temp", "cache"};
    return slider < UI_SLIDER_COUNT ? names[slider] : "?";
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
