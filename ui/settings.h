/*
 * The sliders over the generation settings (libdllm's sampler parameters): steps, max tokens
 * (the generation length), block length, confidence threshold, temperature and K/V cache. They keep
 * the settings runnable: the block length divides max tokens, and steps are a multiple of the
 * number of blocks. A change made while a generation runs applies to the next one, and the
 * note the adjusting function writes says so.
 */
#ifndef DLLM_UI_SETTINGS_H
#define DLLM_UI_SETTINGS_H

#include "dllm.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ui_slider {
    UI_SLIDER_STEPS,
    UI_SLIDER_MAX_TOKENS,
    UI_SLIDER_BLOCK,
    UI_SLIDER_THRESHOLD,
    UI_SLIDER_TEMPERATURE,
    UI_SLIDER_CACHE,
    UI_SLIDER_COUNT
};

#define UI_MAX_TOKENS_UNIT 16  /* max tokens moves in these when there are no blocks */
#define UI_TEMPERATURE_MAX 2.0 /* the temperature slider's top */

/*
 * Moves a slider one notch (dir > 0 up, dir < 0 down) to its next valid value: steps by the
 * number of blocks, up to max tokens; max tokens by the block length (UI_MAX_TOKENS_UNIT
 * without blocks) up to cap; the block length through the divisors of max tokens, then off;
 * the threshold through off, 0.50, 0.55 .. 1.00; the temperature by 0.1 in [0, 2]; the K/V
 * cache through none, prefix and dual. Steps that
 * no longer fit move to the nearest multiple of the blocks (ties upwards). Returns whether anything
 * changed, and writes a note such as "block 16; steps 4 -> 8 to fit 8 blocks", ending in
 * "; applies to the next generation" when busy.
 */
bool ui_settings_adjust(struct dllm_sampler_params *s, enum ui_slider slider, int dir, int64_t cap,
                        bool busy, char *note, size_t size);

/*
 * /set NAME VALUE: sets one setting by name: a slider's (steps, max, block, threshold, temp,
 * cache; "off" or 0 turns block and threshold off) or seed, alg and top-p, top-k (Dream),
 * remasking (LLaDA), cfg. Max tokens is at most cap. Other settings move along as the sliders
 * move them (steps refit to the blocks and max tokens; Dream's alg to maskgit_plus under a
 * threshold). Returns whether it changed; note says what changed (as ui_settings_adjust's), or
 * why nothing did, naming the values the setting takes: "steps takes a multiple of the 4
 * blocks from 4 to 128 (max tokens), not '30'".
 */
bool ui_settings_set(struct dllm_sampler_params *s, const char *name, const char *value,
                     int64_t cap, bool busy, char *note, size_t size);

/* The name of setting i of those /set takes for this sampler ("steps", ..., "cache-type"), or
 * NULL past the last. */
const char *ui_settings_name(const struct dllm_sampler_params *s, size_t i);

/* Word i of the words the setting `name` takes as its value for this sampler ("none", "prefix",
 * "dual" for cache; "off" for block and threshold), or NULL past the last, for a setting that
 * takes numbers only, and for a name it does not take. */
const char *ui_settings_value_word(const struct dllm_sampler_params *s, const char *name, size_t i);

/* Every setting /set takes for this sampler with its value: "steps 64, max 128, ...". */
void ui_settings_list(const struct dllm_sampler_params *s, char *buf, size_t size);

/* The number of blocks: max tokens / block length, or 1 when blocks are off. */
int64_t ui_settings_blocks(const struct dllm_sampler_params *s);

/* The slider's short name ("steps", "max", "block", "threshold", "temp", "cache"). */
const char *ui_slider_name(enum ui_slider slider);

/* The slider's value as shown: "64", "off", "0.90", "0.7", "dual". */
void ui_slider_value(const struct dllm_sampler_params *s, enum ui_slider slider, char *buf,
                     size_t size);

#endif
