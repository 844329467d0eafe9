/* File listings: the files of a repo at a commit, with their sizes and hashes. */
#include "config.h"

#include "listing.h"

#include <stdlib.h>
#include <string.h>

void dllm_hub_listing_fini(struct dllm_hub_listing *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->files[i].path);
    free(l->files);
    *l = (struct dllm_hub_listing){0};
}

enum dllm_status dllm_hub_listing_add(struct dllm_hub_listing *l, const struct dllm_hub_file *f,
                                      struct dllm_error *err)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        struct dllm_hub_file *files = realloc(l->files, cap * sizeof *files);
        if (!files)
            return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory for a file listing");
        l->files = files;
        l->cap = cap;
    }
    struct dllm_hub_file copy = *f;
    copy.path = strdup(f->path);
    if (!copy.path)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory for a file listing");
    l->files[l->n++] = copy;
    return DLLM_OK;
}

const struct dllm_hub_file *dllm_hub_listing_find(const struct dllm_hub_listing *l,
                                                  const char *path)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->files[i].path, path) == 0)
            return &l->files[i];
    return NULL;
}

/* Orders files by path. */
static int by_path(const void *a, const void *b)
{
    return strcmp(((const struct dllm_hub_file *)a)->path, ((const struct dllm_hub_file *)b)->path);
}

void dllm_hub_listing_sort(struct dllm_hub_listing *l)
{
    if (l->n > 0)
        qsort(l->files, l->n, sizeof *l->files, by_path);
}

const char *dllm_hub_file_etag(const struct dllm_hub_file *f)
{
    return f->sha256[0] ? f->sha256 : f->blob_id;
}
