/*
 * Model references as programs take them (-m): parsing one without the network, hub repo ids,
 * split GGUF names, and choosing a repo's files for a tag the way llama.cpp does.
 */
#include "config.h"

#include "ref.h"

#include "util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* Whether c may appear in a repo id. */
static bool repo_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '.' || c == '-';
}

/* Whether one side of "org/name" is valid: 1..96 characters, '.' and '-' inside only. */
static bool repo_part_valid(const char *s, size_t n)
{
    if (n == 0 || n > 96 || s[0] == '.' || s[0] == '-' || s[n - 1] == '.' || s[n - 1] == '-')
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!repo_char(s[i]))
            return false;
        if (i > 0 && (s[i] == '.' || s[i] == '-') && (s[i - 1] == '.' || s[i - 1] == '-'))
            return false;
    }
    return true;
}

bool dllm_hub_repo_valid(const char *repo)
{
    const char *slash = strchr(repo, '/');
    if (!slash || strchr(slash + 1, '/'))
        return false;
    return repo_part_valid(repo, (size_t)(slash - repo)) &&
           repo_part_valid(slash + 1, strlen(slash + 1));
}

enum dllm_status dllm_hub_ref_parse(const char *text, const struct dllm_hub_params *params,
                                    struct dllm_hub_ref *out, struct dllm_error *err)
{
    struct dllm_hub_ref r = {0};
    struct stat sb;
    if (!text || !*text)
        return dllm_error_set(err, DLLM_ERR_ARG, "empty model reference");
    bool pathlike = text[0] == '/' || text[0] == '~' || strncmp(text, "./", 2) == 0 ||
                    strncmp(text, "../", 3) == 0 || strcmp(text, ".") == 0 ||
                    strcmp(text, "..") == 0;
    if (pathlike || stat(text, &sb) == 0) {
        r.local = true;
        const char *home = text[0] == '~' && (text[1] == '/' || !text[1])
                               ? dllm_hub_home(params ? params->home : NULL)
                               : NULL;
        int n = home ? snprintf(r.path, sizeof r.path, "%s%s", home, text + 1)
                     : snprintf(r.path, sizeof r.path, "%s", text);
        if (n < 0 || (size_t)n >= sizeof r.path)
            return dllm_error_set(err, DLLM_ERR_ARG, "model path too long: %.64s...", text);
        *out = r;
        return DLLM_OK;
    }
    const char *colon = strchr(text, ':');
    size_t repo_len = colon ? (size_t)(colon - text) : strlen(text);
    if (!memchr(text, '/', repo_len))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "'%s' is neither an existing file nor a hub model "
                              "(org/repo[:QUANT])",
                              text);
    if (repo_len >= sizeof r.repo) {
        return dllm_error_set(err, DLLM_ERR_ARG, "invalid hub repo id '%.*s...': too long", 64,
                              text);
    }
    memcpy(r.repo, text, repo_len);
    if (!dllm_hub_repo_valid(r.repo))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "invalid hub repo id '%s': expected org/name, each of letters, "
                              "digits, '_', '.' and '-' (not at the ends or doubled)",
                              r.repo);
    if (params && params->revision && !dllm_hub_path_valid(params->revision))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "invalid revision '%s': a branch, tag or commit (main, v1.0, "
                              "refs/pr/1), without empty, '.' or '..' parts",
                              params->revision);
    if (colon) {
        const char *tag = colon + 1;
        if (!*tag || strlen(tag) >= sizeof r.tag)
            return dllm_error_set(err, DLLM_ERR_ARG, "empty or too long tag in '%s'", text);
        snprintf(r.tag, sizeof r.tag, "%s", tag);
        r.tag_is_file = dllm_hub_ends_with_ci(tag, ".gguf");
        if (r.tag_is_file && !dllm_hub_path_valid(tag))
            return dllm_error_set(err, DLLM_ERR_ARG, "unsafe file name in '%s'", text);
        for (const char *p = tag; !r.tag_is_file && *p; p++)
            if (!repo_char(*p))
                return dllm_error_set(err, DLLM_ERR_ARG,
                                      "invalid quant '%s' in '%s': use letters, digits, '_', "
                                      "'.' and '-' (Q4_K_M), or a file name ending in .gguf",
                                      tag, text);
    }
    *out = r;
    return DLLM_OK;
}

/* The first occurrence of needle in s, ignoring ASCII case, or NULL. */
static const char *find_ci(const char *s, const char *needle)
{
    size_t m = strlen(needle);
    for (; *s; s++)
        if (strncasecmp(s, needle, m) == 0)
            return s;
    return NULL;
}

/* Whether a file is a model GGUF: not a sidecar, and part 1 when split. */
static bool model_gguf(const char *path)
{
    static const char *const sidecars[] = {"mmproj",  "imatrix", "mtp-",
                                           "eagle3-", "dflash-", "dspark-"};
    if (!dllm_hub_ends_with_ci(path, ".gguf"))
        return false;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (size_t i = 0; i < sizeof sidecars / sizeof sidecars[0]; i++)
        if (find_ci(base, sidecars[i]))
            return false;
    size_t prefix;
    int part, count;
    return !dllm_gguf_split_name(path, &prefix, &part, &count) || part == 1;
}

/* Whether path has tag followed by '.' or '-', ignoring case. */
static bool tag_matches(const char *path, const char *tag)
{
    size_t m = strlen(tag);
    for (const char *p = path; (p = find_ci(p, tag)); p++)
        if (p[m] == '.' || p[m] == '-')
            return true;
    return false;
}

/* The index of the first model GGUF matching tag (any when tag is NULL), or -1. */
static long first_match(const struct dllm_hub_listing *l, const char *tag)
{
    for (size_t i = 0; i < l->n; i++)
        if (model_gguf(l->files[i].path) && (!tag || tag_matches(l->files[i].path, tag)))
            return (long)i;
    return -1;
}

/* The chosen file by path or unique base name, or -1. */
static long file_match(const struct dllm_hub_listing *l, const char *name)
{
    long found = -1;
    for (size_t i = 0; i < l->n; i++) {
        if (strcmp(l->files[i].path, name) == 0)
            return (long)i;
        const char *base = strrchr(l->files[i].path, '/');
        if (base && strcmp(base + 1, name) == 0)
            found = found == -1 ? (long)i : -2;
    }
    return found < 0 ? -1 : found;
}

/* The "not found" error: what was asked and the GGUF files the listing has. */
static enum dllm_status no_match(const struct dllm_hub_listing *l, const char *repo,
                                 const char *tag, bool tag_is_file, struct dllm_error *err)
{
    char list[DLLM_ERROR_TEXT_MAX] = "";
    size_t used = 0, shown = 0, total = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (!dllm_hub_ends_with_ci(l->files[i].path, ".gguf"))
            continue;
        total++;
        size_t len = strlen(l->files[i].path);
        if (used + len + 3 < 300) {
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", shown ? ", " : "",
                                     l->files[i].path);
            shown++;
        }
    }
    if (total > shown)
        snprintf(list + used, sizeof list - used, ", and %zu more", total - shown);
    if (total == 0)
        return dllm_error_set(err, DLLM_ERR_MISSING, "%s has no GGUF files", repo);
    if (tag_is_file)
        return dllm_error_set(err, DLLM_ERR_MISSING, "%s has no file %s; its GGUF files: %s", repo,
                              tag, list);
    return dllm_error_set(err, DLLM_ERR_MISSING,
                          "%s has no GGUF file for quant %s; its GGUF files: %s", repo,
                          *tag ? tag : "Q4_K_M, Q8_0 or any other", list);
}

enum dllm_status dllm_hub_select(const struct dllm_hub_listing *l, const char *repo,
                                 const char *tag, bool tag_is_file, size_t *idx, size_t *n,
                                 struct dllm_error *err)
{
    long pick;
    if (tag_is_file)
        pick = file_match(l, tag);
    else if (*tag)
        pick = first_match(l, tag);
    else if ((pick = first_match(l, "Q4_K_M")) < 0 && (pick = first_match(l, "Q8_0")) < 0)
        pick = first_match(l, NULL);
    if (pick < 0)
        return no_match(l, repo, tag, tag_is_file, err);
    const char *path = l->files[pick].path;
    size_t prefix;
    int part, count;
    *n = 0;
    idx[(*n)++] = (size_t)pick;
    if (!dllm_gguf_split_name(path, &prefix, &part, &count))
        return DLLM_OK;
    /* Every part of a split model, in order; part 1 first whatever the tag named. */
    *n = 0;
    for (int k = 1; k <= count; k++) {
        char *name = dllm_gguf_split_part_path(path, prefix, k, count);
        if (!name)
            return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
        long i = -1;
        for (size_t j = 0; j < l->n && i < 0; j++)
            if (strcasecmp(l->files[j].path, name) == 0)
                i = (long)j;
        if (i < 0) {
            dllm_error_set(err, DLLM_ERR_MISSING, "%s: split model part %s is missing", repo, name);
            free(name);
            return DLLM_ERR_MISSING;
        }
        free(name);
        idx[(*n)++] = (size_t)i;
    }
    return DLLM_OK;
}
