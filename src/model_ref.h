/*
 * Models as the programs take them with -m: a local path or a hub model (org/repo[:QUANT]),
 * resolved to a local file with the download progress shown on stderr, and loaded.
 */
#ifndef DLLM_MODEL_REF_H
#define DLLM_MODEL_REF_H

#include "dllm-hub.h"
#include "dllm.h"

#include <stdbool.h>

/* A byte count for people in buf: "950 B", "12.3 kB", "4.92 GB". Returns buf. */
const char *model_ref_bytes(char buf[16], double bytes);

/* How dllm ls and dllm doctor name a cached file's state: "verified", "unchecked", ... */
const char *model_ref_state_name(enum dllm_hub_state state);

/*
 * The hub params every program uses: dllm_hub_params_init, then dllm_hub_params_from_env
 * (the strings it sets point into env), then dllm's own test knobs DLLM_HUB_RETRY_BASE_MS
 * (the first backoff in ms) and DLLM_HUB_STALL_SECONDS. A failure ends the program.
 */
void model_ref_params(struct dllm_hub_params *params, struct dllm_hub_env *env);

/*
 * dllm_hub_resolve with the program's progress display: a bar with bytes, rate and ETA on a
 * terminal, throttled log lines otherwise, nothing when quiet; retries are always said.
 * Ctrl+C cancels, keeping the partial download for the next run. params->progress,
 * progress_user and cancel are set here (and cleared after). Prints the library's warning line, if
 * any. On failure err says what to do, an interrupted download included, and offline a missing
 * or corrupt cached file ("run 'dllm pull REF' while online").
 */
enum dllm_status model_ref_resolve(const char *ref, struct dllm_hub_params *params, bool quiet,
                                   struct dllm_hub_model **out, struct dllm_error *err);

/*
 * The local file to load for a -m argument (NULL: the default model, DLLM_HUB_DEFAULT_MODEL),
 * downloaded first when it is a hub model missing from the cache. Split models are refused.
 * Any failure ends the program with "dllm: error: ...". Free the result with free().
 */
char *model_ref_path(const char *ref, bool offline);

/* Says "dllm: loading FILE (SIZE)" on stderr when it is a terminal or verbose is set. */
void model_ref_announce(const char *path, bool verbose);

/*
 * A progress function for the weights' preparation (DLLM_PROGRESS_REPACK; other kinds are
 * ignored): on a terminal "dllm: preparing the weights  NN%" redrawn in place, ended by a
 * newline at 100%; elsewhere one line when done, if user is model_ref_progress_user(true).
 */
void model_ref_progress(const struct dllm_progress *p, void *user);

/* The progress_user to give model_ref_progress. */
void *model_ref_progress_user(bool verbose);

/*
 * The fix to name after a model file's error of status st, as "; ..." (empty where the
 * library's message names one already, or for a status a file does not cause): a malformed
 * file is damaged, cut short or not a model; a missing or mistyped key or tensor means a file
 * made by something other than llama.cpp's converter, or by an old one.
 */
const char *model_ref_fix(enum dllm_status st);

/*
 * Opens a model, first saying "dllm: loading FILE (SIZE)" on stderr when it is a terminal or
 * verbose is set. A failure ends the program with "dllm: error: ..." and the fix.
 */
struct dllm_model *model_ref_open(const char *path, bool verbose);

#endif
