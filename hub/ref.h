/*
 * Model references and file choice, without the network: hub repo ids and the files a tag names in
 * a listing (dllm_hub_ref_parse is public, in dllm-hub.h).
 */
#ifndef DLLM_HUB_REF_H
#define DLLM_HUB_REF_H

#include "dllm-hub.h"
#include "listing.h"

#include <stdbool.h>
#include <stddef.h>

/*
 * Whether repo is a hub repo id "org/name": exactly one '/', letters, digits and '_' with
 * '.' and '-' only between them (no "--" or ".."), each side 1 to 96 characters.
 */
bool dllm_hub_repo_valid(const char *repo);

/*
 * Chooses the files a model tag names in a listing, in listing order:
 *   tag_is_file: the file with that path, or the one file with that base name;
 *   tag not empty: the first model GGUF whose path has TAG followed by '.' or '-'
 *                  (case-insensitive);
 *   tag empty: Q4_K_M, else Q8_0, else the first model GGUF.
 * A model GGUF ends in .gguf, is not a sidecar (mmproj, imatrix, mtp-, eagle3-, dflash-,
 * dspark-) and, when split, is part 1; every part of a split model is chosen, part 1 first.
 * idx (room for l->n entries) receives the chosen indices and *n their count. When nothing
 * matches, DLLM_ERR_MISSING names the GGUF files of the listing.
 */
enum dllm_status dllm_hub_select(const struct dllm_hub_listing *l, const char *repo,
                                 const char *tag, bool tag_is_file, size_t *idx, size_t *n,
                                 struct dllm_error *err);

#endif
