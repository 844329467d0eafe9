/*
 * Split models: llama.cpp's gguf-split cuts a model into files named PREFIX-00001-of-0000N.gguf
 * to PREFIX-0000N-of-0000N.gguf. The first holds all the metadata; every part holds split.no
 * (its index from 0), split.count (N) and split.tensors.count (the tensors of all parts), and
 * its own tensors after its own metadata, aligned as in any GGUF file. The first part may hold
 * no tensor at all. A merged file keeps split.count 0.
 */
#include "config.h"

#include "dllm.h"
#include "gguf.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SPLIT_NO      "split.no"
#define SPLIT_COUNT   "split.count"
#define SPLIT_TENSORS "split.tensors.count"
#define SPLIT_DIGITS  5 /* "%05d" in the names */

/* Reads an optional integer key into *out (left as is when absent). */
static enum dllm_status optional_u32(const struct dllm_gguf *g, const char *key, uint32_t *out,
                                     struct dllm_error *err)
{
    return dllm_gguf_find(g, key) ? dllm_gguf_get_u32(g, key, out, err) : DLLM_OK;
}

bool dllm_gguf_split_name(const char *path, size_t *prefix_len, int *part, int *count)
{
    static const char form[] = "-00000-of-00000.gguf"; /* '0': a digit */
    const size_t len = strlen(path), tail = sizeof form - 1, dot = tail - 5;
    if (len <= tail || strcasecmp(path + len - 5, ".gguf") != 0)
        return false;
    const char *s = path + len - tail;
    for (size_t i = 0; i < dot; i++)
        if (form[i] == '0' ? !isdigit((unsigned char)s[i]) : s[i] != form[i])
            return false;
    *prefix_len = len - tail;
    *part = atoi(s + 1);
    *count = atoi(s + 10);
    return *part >= 1 && *part <= *count;
}

/*
 * The length of path's prefix when its name ends in -NNNNN-of-MMMMM.gguf for part `no` (from 1)
 * of `count`; 0 when it does not.
 */
static size_t split_prefix_len(const char *path, uint32_t no, uint32_t count)
{
    size_t prefix_len;
    int part, n;
    return dllm_gguf_split_name(path, &prefix_len, &part, &n) && (uint32_t)part == no &&
                   (uint32_t)n == count
               ? prefix_len
               : 0;
}

char *dllm_gguf_split_part_path(const char *path, size_t prefix_len, int part, int count)
{
    const size_t size = prefix_len + 64;
    char *p = malloc(size);
    if (p)
        snprintf(p, size, "%.*s-%0*d-of-%0*d.gguf", (int)prefix_len, path, SPLIT_DIGITS, part,
                 SPLIT_DIGITS, count);
    return p;
}

/* Opens part `no` (from 1) of `count`, checks its split keys and makes it a part of g. */
static enum dllm_status join_part(struct dllm_gguf *g, const char *path, size_t prefix_len,
                                  uint32_t no, uint32_t count, struct dllm_error *err)
{
    char *p = dllm_gguf_split_part_path(path, prefix_len, (int)no, (int)count);
    if (!p)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    const char *name = strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
    struct dllm_gguf *part;
    uint32_t part_no = UINT32_MAX, part_count = 0;
    enum dllm_status st = dllm_gguf_open_file(p, &part, err);
    if (!st && !(st = optional_u32(part, SPLIT_NO, &part_no, err)) &&
        !(st = optional_u32(part, SPLIT_COUNT, &part_count, err)) &&
        (part_no != no - 1 || part_count != count)) {
        st = dllm_error_set(err, DLLM_ERR_FORMAT,
                            "its split keys say part %lld of %u, not part %u of %u: the parts "
                            "come from different splits; download or split the model again",
                            part_no == UINT32_MAX ? 0LL : (long long)part_no + 1, part_count, no,
                            count);
        dllm_gguf_close(part);
    }
    if (!st)
        st = dllm_gguf_adopt_part(g, part, err);
    if (st == DLLM_ERR_IO && err) {
        const size_t n = strlen(err->text);
        snprintf(err->text + n, sizeof err->text - n,
                 "; all %u parts must lie in the folder of part 1", count);
    }
    if (st)
        dllm_error_prefix(err, "part %u of %u of a split model, %s", no, count, name);
    free(p);
    return st;
}

/* Joins the other parts of the split model whose part 1, at path, g is; nothing for one file. */
static enum dllm_status join_parts(struct dllm_gguf *g, const char *path, struct dllm_error *err)
{
    uint32_t count = 0, no = 0, tensors = 0;
    enum dllm_status st;
    if ((st = optional_u32(g, SPLIT_COUNT, &count, err)) ||
        (st = optional_u32(g, SPLIT_NO, &no, err)) ||
        (st = optional_u32(g, SPLIT_TENSORS, &tensors, err)))
        return st;
    if (count <= 1)
        return DLLM_OK;
    const size_t prefix_len = split_prefix_len(path, no + 1, count);
    if (no >= count)
        return dllm_error_set(err, DLLM_ERR_FORMAT, "split.no %u is not below split.count %u", no,
                              count);
    if (prefix_len == 0)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "part %u of %u of a split model, but its name does not end in "
                              "-%0*u-of-%0*u.gguf, by which the other parts are found: give it "
                              "the name gguf-split gave it",
                              no + 1, count, SPLIT_DIGITS, no + 1, SPLIT_DIGITS, count);
    if (no != 0)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "part %u of %u of a split model: open part 1, %.*s-%0*u-of-%0*u.gguf",
                              no + 1, count, (int)prefix_len, path, SPLIT_DIGITS, 1, SPLIT_DIGITS,
                              count);
    for (uint32_t k = 2; k <= count; k++)
        if ((st = join_part(g, path, prefix_len, k, count, err)))
            return st;
    if (dllm_gguf_find(g, SPLIT_TENSORS) && (int64_t)tensors != dllm_gguf_n_tensors(g))
        return dllm_error_set(err, DLLM_ERR_FORMAT,
                              "the %u parts of this split model hold %lld tensors, but "
                              "split.tensors.count says %u: a part is from another split",
                              count, (long long)dllm_gguf_n_tensors(g), tensors);
    return DLLM_OK;
}

enum dllm_status dllm_gguf_open(const char *path, struct dllm_gguf **out, struct dllm_error *err)
{
    struct dllm_gguf *g;
    enum dllm_status st = dllm_gguf_open_file(path, &g, err);
    if (st) {
        *out = NULL;
        return st;
    }
    if ((st = join_parts(g, path, err))) {
        dllm_gguf_close(g);
        g = NULL;
    }
    *out = g;
    return st;
}
