/* File listings: the files of a repo at a commit, with their sizes and hashes. */
#ifndef DLLM_HUB_LISTING_H
#define DLLM_HUB_LISTING_H

#include "dllm-hub.h"

#include <stddef.h>
#include <stdint.h>

#define DLLM_HUB_COMMIT_LEN 40

/* One file of a repo at a commit, from the hub's tree listing or from a cached snapshot. */
struct dllm_hub_file {
    char *path;       /* inside the repo, checked by dllm_hub_path_valid */
    int64_t size;     /* bytes */
    char blob_id[41]; /* git blob SHA-1 in hex, "" when unknown */
    char sha256[65];  /* LFS SHA-256 of the content in hex, "" for files outside LFS */
};

/* A growable list of files. */
struct dllm_hub_listing {
    struct dllm_hub_file *files;
    size_t n, cap;
};

void dllm_hub_listing_fini(struct dllm_hub_listing *l);
/* Appends a copy of f (path duplicated). */
enum dllm_status dllm_hub_listing_add(struct dllm_hub_listing *l, const struct dllm_hub_file *f,
                                      struct dllm_error *err);
/* The file named path, or NULL. */
const struct dllm_hub_file *dllm_hub_listing_find(const struct dllm_hub_listing *l,
                                                  const char *path);
/* Sorts the files by path. */
void dllm_hub_listing_sort(struct dllm_hub_listing *l);
/* The etag a file is stored under: its SHA-256 when in LFS, else its blob id ("" if none). */
const char *dllm_hub_file_etag(const struct dllm_hub_file *f);

#endif
