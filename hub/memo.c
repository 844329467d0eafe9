/*
 * The verified memo: which cached files were hashed and matched their hub hash, keyed by real
 * path, size and modification time, so that a file is hashed once and not at every use.
 */
#include "config.h"

#include "memo.h"

#include "cache.h"
#include "json.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct dllm_hubmemo {
    char *path;
    json_t *files; /* {realpath: {"size", "mtime_ns", "etag"}} */
    bool dirty;
};

/* The real path of a file with its size and modification time; false if it is not there. */
static bool file_key(const char *path, char real[4096], int64_t *size, int64_t *mtime)
{
    struct stat sb;
    if (!realpath(path, real) || stat(real, &sb) != 0)
        return false;
    *size = sb.st_size;
    *mtime = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
    return true;
}

struct dllm_hubmemo *dllm_hubmemo_load(const struct dllm_hub_params *p)
{
    struct dllm_hubmemo *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    const char *path = p ? p->verified_path : NULL;
    m->path = path && *path
                  ? strdup(path)
                  : dllm_hub_fmt("%s/.cache/dllm/verified.json", dllm_hub_home(p ? p->home : NULL));
    bool nomem = false;
    json_t *root = m->path ? dllm_hubjson_load_file(m->path, 0, NULL, &nomem) : NULL;
    json_t *files = json_object_get(root, "files");
    m->files = json_is_object(files) ? json_incref(files) : json_object();
    json_decref(root);
    if (!m->path || !m->files || nomem) {
        dllm_hubmemo_free(m);
        return NULL;
    }
    return m;
}

bool dllm_hubmemo_check(const struct dllm_hubmemo *m, const char *path, const char *etag)
{
    char real[4096];
    int64_t size, mtime;
    if (!m || !file_key(path, real, &size, &mtime))
        return false;
    json_t *e = json_object_get(m->files, real);
    const char *memo_etag = json_string_value(json_object_get(e, "etag"));
    return memo_etag && strcmp(memo_etag, etag) == 0 &&
           json_integer_value(json_object_get(e, "size")) == size &&
           json_integer_value(json_object_get(e, "mtime_ns")) == mtime;
}

void dllm_hubmemo_add(struct dllm_hubmemo *m, const char *path, const char *etag)
{
    char real[4096];
    int64_t size, mtime;
    if (!m || !file_key(path, real, &size, &mtime))
        return;
    json_t *e = json_pack("{s:I, s:I, s:s}", "size", (json_int_t)size, "mtime_ns",
                          (json_int_t)mtime, "etag", etag);
    if (e && json_object_set_new(m->files, real, e) == 0)
        m->dirty = true;
}

void dllm_hubmemo_prune(struct dllm_hubmemo *m)
{
    const char *key;
    json_t *value;
    void *tmp;
    if (!m)
        return;
    json_object_foreach_safe(m->files, tmp, key, value)
    {
        if (access(key, F_OK) != 0) {
            json_object_del(m->files, key);
            m->dirty = true;
        }
    }
}

enum dllm_status dllm_hubmemo_save(struct dllm_hubmemo *m, struct dllm_error *err)
{
    if (!m || !m->dirty)
        return DLLM_OK;
    enum dllm_status st = DLLM_OK;
    json_t *root = json_pack("{s:i, s:O}", "version", 1, "files", m->files);
    char *text = root ? dllm_hub_json_text(root, JSON_SORT_KEYS | JSON_INDENT(1)) : NULL;
    char *dir = dllm_hub_parent(m->path);
    if (!text || !dir) {
        st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if ((st = dllm_hubcache_mkdirs(dir, err)) == DLLM_OK &&
        (st = dllm_hubcache_write_atomic(m->path, text, strlen(text), err)) == DLLM_OK)
        m->dirty = false;
fail:
    free(dir);
    free(text);
    json_decref(root);
    return st;
}

void dllm_hubmemo_free(struct dllm_hubmemo *m)
{
    if (!m)
        return;
    json_decref(m->files);
    free(m->path);
    free(m);
}
