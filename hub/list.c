/* Listing the GGUF files in the cache, and removing a model from it (dllm_hub_list,
 * dllm_hub_remove). */
#include "config.h"

#include "dllm-hub.h"

#include "cache.h"
#include "listing.h"
#include "memo.h"
#include "ref.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

struct dllm_hub_list {
    char *root;
    struct dllm_hub_entry *entries;
    int64_t n, cap;
};

/* Whether a folder name is a model repo's ("models--org--name"); *org_len gets org's length. */
static bool repo_folder(const char *name, size_t *org_len)
{
    if (strncmp(name, "models--", 8) != 0)
        return false;
    const char *sep = strstr(name + 8, "--");
    if (!sep || sep == name + 8 || !sep[2])
        return false;
    *org_len = (size_t)(sep - (name + 8));
    return true;
}

/* Adds the GGUF files of one snapshot of a repo to the list. */
static enum dllm_status list_snapshot(struct dllm_hub_list *list, const struct dllm_hubcache *c,
                                      const char *commit, const struct dllm_hubmemo *memo,
                                      struct dllm_error *err)
{
    struct dllm_hub_listing files = {0}, tree = {0};
    enum dllm_status st = dllm_hubcache_scan(c, commit, &files, err);
    if (st != DLLM_OK)
        return st;
    bool have_tree = dllm_hubcache_read_tree(c, commit, &tree, NULL) == DLLM_OK;
    for (size_t i = 0; i < files.n && st == DLLM_OK; i++) {
        const struct dllm_hub_file *f = &files.files[i];
        if (!dllm_hub_ends_with_ci(f->path, ".gguf"))
            continue;
        const struct dllm_hub_file *t = have_tree ? dllm_hub_listing_find(&tree, f->path) : NULL;
        const char *etag = dllm_hub_file_etag(t ? t : f);
        if (list->n == list->cap) {
            int64_t cap = list->cap ? 2 * list->cap : 16;
            struct dllm_hub_entry *e = realloc(list->entries, (size_t)cap * sizeof *e);
            if (!e) {
                st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
                break;
            }
            list->entries = e;
            list->cap = cap;
        }
        char *path = dllm_hubcache_snapshot(c, commit, f->path);
        struct dllm_hub_entry e = {
            .repo = strdup(c->repo),
            .file = strdup(f->path),
            .commit = strdup(commit),
            .path = path,
            .size = f->size,
            .state = f->size < 0                            ? DLLM_HUB_STATE_BROKEN
                     : !*etag                               ? DLLM_HUB_STATE_NO_HASH
                     : dllm_hubmemo_check(memo, path, etag) ? DLLM_HUB_STATE_VERIFIED
                                                            : DLLM_HUB_STATE_UNCHECKED,
            .parts = 1,
        };
        list->entries[list->n++] = e;
        if (!e.repo || !e.file || !e.commit || !e.path)
            st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    }
    dllm_hub_listing_fini(&tree);
    dllm_hub_listing_fini(&files);
    return st;
}

/* Adds every snapshot of the repo whose cache folder is name. */
static enum dllm_status list_repo(struct dllm_hub_list *list, const char *name, size_t org_len,
                                  const struct dllm_hubmemo *memo, struct dllm_error *err)
{
    char *repo = dllm_hub_fmt("%.*s/%s", (int)org_len, name + 8, name + 8 + org_len + 2);
    struct dllm_hubcache c = {0};
    enum dllm_status st = repo ? dllm_hubcache_init(&c, list->root, repo, err)
                               : dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    char *snaps = st == DLLM_OK ? dllm_hub_fmt("%s/snapshots", c.dir) : NULL;
    DIR *d = snaps ? opendir(snaps) : NULL;
    struct dirent *e;
    while (d && st == DLLM_OK && (e = readdir(d)))
        if (dllm_hub_is_hex(e->d_name, DLLM_HUB_COMMIT_LEN))
            st = list_snapshot(list, &c, e->d_name, memo, err);
    if (d)
        closedir(d);
    free(snaps);
    dllm_hubcache_fini(&c);
    free(repo);
    return st;
}

/* Orders entries by repo, file, then commit. */
static int by_entry(const void *a, const void *b)
{
    const struct dllm_hub_entry *x = a, *y = b;
    int c = strcmp(x->repo, y->repo);
    if (!c)
        c = strcmp(x->file, y->file);
    return c ? c : strcmp(x->commit, y->commit);
}

static void free_entry(struct dllm_hub_entry *e)
{
    free((char *)e->repo);
    free((char *)e->file);
    free((char *)e->commit);
    free((char *)e->path);
}

/* The entry of part 1 of the split model whose part e is, among entries [0, n); NULL if none. */
static struct dllm_hub_entry *part_one(struct dllm_hub_entry *entries, int64_t n,
                                       const struct dllm_hub_entry *e)
{
    size_t prefix;
    int part, count;
    if (!dllm_gguf_split_name(e->file, &prefix, &part, &count) || part == 1)
        return NULL;
    for (int64_t i = n - 1; i >= 0 && strcmp(entries[i].repo, e->repo) == 0; i--) {
        size_t p1;
        int k, c;
        if (strcmp(entries[i].commit, e->commit) == 0 &&
            dllm_gguf_split_name(entries[i].file, &p1, &k, &c) && k == 1 && c == count &&
            p1 == prefix && strncmp(entries[i].file, e->file, prefix) == 0)
            return &entries[i];
    }
    return NULL;
}

/*
 * Folds the parts 2..N of each split model into its part 1's entry (sorted entries: part 1
 * comes before the others of its repo): sizes added (-1 when one is broken), the worst state,
 * broken when a part is missing.
 */
static void fold_split_parts(struct dllm_hub_list *list)
{
    int64_t kept = 0;
    for (int64_t i = 0; i < list->n; i++) {
        struct dllm_hub_entry *e = &list->entries[i], *one = part_one(list->entries, kept, e);
        if (!one) {
            list->entries[kept++] = *e;
            continue;
        }
        one->size = one->size < 0 || e->size < 0 ? -1 : one->size + e->size;
        one->state = e->state > one->state ? e->state : one->state;
        one->parts++;
        free_entry(e);
    }
    list->n = kept;
    for (int64_t i = 0; i < kept; i++) {
        struct dllm_hub_entry *e = &list->entries[i];
        size_t prefix;
        int part, count;
        if (dllm_gguf_split_name(e->file, &prefix, &part, &count) && part == 1 && e->parts < count)
            e->state = DLLM_HUB_STATE_BROKEN;
    }
}

enum dllm_status dllm_hub_list(const struct dllm_hub_params *params, struct dllm_hub_list **out,
                               struct dllm_error *err)
{
    *out = NULL;
    struct dllm_hub_list *list = calloc(1, sizeof *list);
    struct dllm_hubmemo *memo = dllm_hubmemo_load(params);
    enum dllm_status st = DLLM_OK;
    if (!list || !(list->root = dllm_hubcache_root(params))) {
        st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    DIR *d = opendir(list->root);
    if (!d && errno != ENOENT) {
        st = dllm_error_set(err, DLLM_ERR_IO, "cannot read the cache %s: %s", list->root,
                            strerror(errno));
        goto fail;
    }
    struct dirent *e;
    size_t org_len;
    while (d && st == DLLM_OK && (e = readdir(d)))
        if (repo_folder(e->d_name, &org_len))
            st = list_repo(list, e->d_name, org_len, memo, err);
    if (d)
        closedir(d);
    if (st != DLLM_OK)
        goto fail;
    if (list->n > 0)
        qsort(list->entries, (size_t)list->n, sizeof *list->entries, by_entry);
    fold_split_parts(list);
    *out = list;
    list = NULL;
fail:
    dllm_hubmemo_free(memo);
    dllm_hub_list_free(list);
    return st;
}

int64_t dllm_hub_list_count(const struct dllm_hub_list *list)
{
    return list->n;
}

const struct dllm_hub_entry *dllm_hub_list_get(const struct dllm_hub_list *list, int64_t i)
{
    return i >= 0 && i < list->n ? &list->entries[i] : NULL;
}

const char *dllm_hub_list_cache_dir(const struct dllm_hub_list *list)
{
    return list->root;
}

void dllm_hub_list_free(struct dllm_hub_list *list)
{
    if (!list)
        return;
    for (int64_t i = 0; i < list->n; i++)
        free_entry(&list->entries[i]);
    free(list->entries);
    free(list->root);
    free(list);
}

/* Removes path and, for a folder, all it holds (links are removed, not followed). */
static void remove_tree(const char *path, int depth)
{
    struct stat sb;
    if (lstat(path, &sb) != 0)
        return;
    if (S_ISDIR(sb.st_mode) && depth < DLLM_HUBCACHE_MAX_DEPTH) {
        DIR *d = opendir(path);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char *sub = dllm_hub_fmt("%s/%s", path, e->d_name);
            if (sub)
                remove_tree(sub, depth + 1);
            free(sub);
        }
        if (d)
            closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

/* The bytes of the regular files directly in dir. */
static int64_t folder_bytes(const char *dir)
{
    int64_t total = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char *p = dllm_hub_fmt("%s/%s", dir, e->d_name);
        struct stat sb;
        if (p && lstat(p, &sb) == 0 && S_ISREG(sb.st_mode))
            total += sb.st_size;
        free(p);
    }
    if (d)
        closedir(d);
    return total;
}

/* The names (blob etags or copies) every snapshot of the repo uses, into used. */
static enum dllm_status used_blobs(const struct dllm_hubcache *c, struct dllm_hub_listing *used,
                                   struct dllm_error *err)
{
    char *snaps = dllm_hub_fmt("%s/snapshots", c->dir);
    DIR *d = snaps ? opendir(snaps) : NULL;
    struct dirent *e;
    enum dllm_status st = DLLM_OK;
    while (d && st == DLLM_OK && (e = readdir(d))) {
        struct dllm_hub_listing files;
        if (e->d_name[0] == '.' || dllm_hubcache_scan(c, e->d_name, &files, NULL) != DLLM_OK)
            continue;
        for (size_t i = 0; i < files.n && st == DLLM_OK; i++)
            st = dllm_hub_listing_add(used, &files.files[i], err);
        dllm_hub_listing_fini(&files);
    }
    if (d)
        closedir(d);
    free(snaps);
    return st;
}

/* A lock wait that gives up at once: the blob is being downloaded. */
static bool no_wait(void *user, int64_t done)
{
    return false;
}

/* Deletes the blobs no snapshot uses, except those a download in progress holds. */
static void remove_orphans(const struct dllm_hubcache *c, const struct dllm_hub_listing *used,
                           int64_t *bytes)
{
    char *blobs = dllm_hub_fmt("%s/blobs", c->dir);
    DIR *d = blobs ? opendir(blobs) : NULL;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        const char *name = e->d_name;
        bool in_use = !dllm_hub_is_hex(name, 64) && !dllm_hub_is_hex(name, 40);
        for (size_t i = 0; i < used->n && !in_use; i++)
            in_use = strcmp(dllm_hub_file_etag(&used->files[i]), name) == 0;
        int lock;
        if (in_use || dllm_hubcache_lock(c, name, no_wait, NULL, &lock, NULL) != DLLM_OK)
            continue;
        char *path = dllm_hub_fmt("%s/%s", blobs, name);
        struct stat sb;
        if (path && lstat(path, &sb) == 0 && unlink(path) == 0)
            *bytes += sb.st_size;
        free(path);
        dllm_hubcache_unlock(lock);
    }
    if (d)
        closedir(d);
    free(blobs);
}

/*
 * Removes the files a tag names from every snapshot of the repo, then the blobs no remaining
 * link uses; the repo's folder goes when no snapshot file remains.
 */
static enum dllm_status remove_tagged(const struct dllm_hubcache *c, const struct dllm_hub_ref *r,
                                      int64_t *n_files, int64_t *bytes, struct dllm_error *err)
{
    struct dllm_hub_listing all = {0}, used = {0};
    size_t *idx = NULL, n_idx = 0;
    enum dllm_status st = used_blobs(c, &all, err);
    if (st != DLLM_OK)
        goto fail;
    if (!(idx = malloc((all.n ? all.n : 1) * sizeof *idx))) {
        st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if ((st = dllm_hub_select(&all, c->repo, r->tag, r->tag_is_file, idx, &n_idx, err)) != DLLM_OK)
        goto fail;
    char *snaps = dllm_hub_fmt("%s/snapshots", c->dir);
    DIR *d = snaps ? opendir(snaps) : NULL;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        for (size_t k = 0; k < n_idx; k++) {
            char *p = dllm_hubcache_snapshot(c, e->d_name, all.files[idx[k]].path);
            struct stat sb;
            /* Through a linked folder, the path would be outside the cache: left alone. */
            bool real = p && dllm_hubcache_folders_real(c, p);
            if (real && lstat(p, &sb) == 0 && unlink(p) == 0)
                ++*n_files;
            /* Empty folders the file was in, up to the snapshot. */
            for (char *slash; real && (slash = strrchr(p, '/')) && strlen(p) > strlen(snaps);) {
                *slash = 0;
                if (rmdir(p) != 0)
                    break;
            }
            free(p);
        }
    }
    if (d)
        closedir(d);
    free(snaps);
    if ((st = used_blobs(c, &used, err)) != DLLM_OK)
        goto fail;
    if (used.n == 0) {
        char *blobs = dllm_hub_fmt("%s/blobs", c->dir);
        *bytes += blobs ? folder_bytes(blobs) : 0;
        free(blobs);
        remove_tree(c->dir, 0);
        remove_tree(c->locks, 0);
    } else {
        remove_orphans(c, &used, bytes);
    }
fail:
    free(idx);
    dllm_hub_listing_fini(&used);
    dllm_hub_listing_fini(&all);
    return st;
}

enum dllm_status dllm_hub_remove(const char *ref, const struct dllm_hub_params *params,
                                 int64_t *n_files, int64_t *bytes, struct dllm_error *err)
{
    struct dllm_hub_ref r;
    struct dllm_hubcache c = {0};
    int64_t files = 0, freed = 0;
    char *root = NULL;
    struct dllm_hubmemo *memo = NULL;
    enum dllm_status st = dllm_hub_ref_parse(ref, params, &r, err);
    if (st != DLLM_OK)
        goto fail;
    if (r.local) {
        st = dllm_error_set(err, DLLM_ERR_ARG,
                            "'%s' is a path: remove takes a hub model (org/repo[:QUANT])", ref);
        goto fail;
    }
    root = dllm_hubcache_root(params);
    if (!root || (st = dllm_hubcache_init(&c, root, r.repo, err)) != DLLM_OK) {
        st = root ? st : dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    struct stat sb;
    if (stat(c.dir, &sb) != 0) {
        st = dllm_error_set(err, DLLM_ERR_MISSING, "%s is not in the cache (%s)", r.repo, root);
        goto fail;
    }
    if (r.tag[0]) {
        st = remove_tagged(&c, &r, &files, &freed, err);
    } else {
        struct dllm_hub_listing all = {0};
        if ((st = used_blobs(&c, &all, err)) != DLLM_OK)
            goto fail;
        files = (int64_t)all.n;
        dllm_hub_listing_fini(&all);
        char *blobs = dllm_hub_fmt("%s/blobs", c.dir);
        freed = blobs ? folder_bytes(blobs) : 0;
        free(blobs);
        remove_tree(c.dir, 0);
        remove_tree(c.locks, 0);
    }
    memo = dllm_hubmemo_load(params);
    dllm_hubmemo_prune(memo);
    dllm_hubmemo_save(memo, NULL);
fail:
    if (n_files)
        *n_files = files;
    if (bytes)
        *bytes = freed;
    dllm_hubmemo_free(memo);
    dllm_hubcache_fini(&c);
    free(root);
    return st;
}
