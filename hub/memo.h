/*
 * The verified memo: the record of files already checked against their hub hash, keyed by
 * real path, size and modification time, in params->verified_path (by default
 * <home>/.cache/dllm/verified.json).
 */
#ifndef DLLM_HUB_MEMO_H
#define DLLM_HUB_MEMO_H

#include "dllm-hub.h"

#include <stdbool.h>

struct dllm_hubmemo;

/* Loads the memo the params name (NULL: the defaults); a missing or unreadable one is empty. */
struct dllm_hubmemo *dllm_hubmemo_load(const struct dllm_hub_params *params);
/* Whether the file at path was verified as etag and has not changed since. */
bool dllm_hubmemo_check(const struct dllm_hubmemo *m, const char *path, const char *etag);
/* Records the file at path as verified against etag. */
void dllm_hubmemo_add(struct dllm_hubmemo *m, const char *path, const char *etag);
/* Drops the entries of files that no longer exist. */
void dllm_hubmemo_prune(struct dllm_hubmemo *m);
/* Writes the memo back atomically when it changed. */
enum dllm_status dllm_hubmemo_save(struct dllm_hubmemo *m, struct dllm_error *err);
void dllm_hubmemo_free(struct dllm_hubmemo *m);

#endif
