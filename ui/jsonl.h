/*
 * The conversation as JSON lines, the file /save writes beside the Markdown and /load reads
 * back: a header line {"format": "dllm-chat", "version": 1, "model": ...}, then one object per
 * message: {"role": "system" | "user" | "assistant" | "notice", "text": ...}, with "dropped"
 * on messages no longer in the model's context, and on answers "stopped", "gaps" (the offsets
 * of the gap marks a cancelled run left), "settings" (the sampler's, "seed" included) and
 * "timings" (steps, tokens, forward_ms, sample_ms, total_ms, load_ms).
 */
#ifndef DLLM_UI_JSONL_H
#define DLLM_UI_JSONL_H

#include "transcript.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define UI_JSONL_MAX_BYTES (64u << 20) /* a larger file is refused by ui_jsonl_load */

/*
 * The sampler settings as an answer's "settings" object: "kind" (llada or dream), every setting
 * by its name, the seed a number or, above INT64_MAX, a string of its digits. The programs'
 * JSON records carry the same object. NULL when memory ran out.
 */
json_t *ui_jsonl_settings(const struct dllm_sampler_params *s);

/* Writes the conversation as JSON lines to f (model: the header's, or NULL). */
bool ui_jsonl_write(const struct ui_transcript *t, const char *model, FILE *f);

/*
 * Parses data[0 .. len-1] into *out, which it initialises (ui_transcript_fini frees it). False
 * when the text is not such a file, with err naming the line and what is wrong with it
 * ("line 3: \"role\" is \"bot\": use user, assistant, notice or system"); *out is then empty.
 */
bool ui_jsonl_parse(const char *data, size_t len, struct ui_transcript *out, char *err,
                    size_t size);

/* Reads the file at path and parses it; err names the file when it cannot be read. */
bool ui_jsonl_load(const char *path, struct ui_transcript *out, char *err, size_t size);

#endif
