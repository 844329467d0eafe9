/*
 * The Hugging Face cache on disk, in huggingface_hub's layout (see cache.h): its root, the
 * folders and paths of a repo, atomic writes, refs, kept listings, snapshot links, blob locks.
 */
#include "config.h"

#include "cache.h"

#include "json.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define COPY_CHUNK (1 << 20) /* bytes read at a time when copying a blob */

char *dllm_hubcache_root(const struct dllm_hub_params *p)
{
    if (p && p->cache_dir && *p->cache_dir)
        return strdup(p->cache_dir);
    return dllm_hub_fmt("%s/.cache/huggingface/hub", dllm_hub_home(p ? p->home : NULL));
}

enum dllm_status dllm_hubcache_init(struct dllm_hubcache *c, const char *root, const char *repo,
                                    struct dllm_error *err)
{
    *c = (struct dllm_hubcache){0};
    const char *slash = strchr(repo, '/');
    if (!slash)
        return dllm_error_set(err, DLLM_ERR_ARG, "invalid hub repo id '%s'", repo);
    int org = (int)(slash - repo);
    c->root = strdup(root);
    c->repo = strdup(repo);
    c->dir = dllm_hub_fmt("%s/models--%.*s--%s", root, org, repo, slash + 1);
    c->locks = dllm_hub_fmt("%s/.locks/models--%.*s--%s", root, org, repo, slash + 1);
    if (!c->root || !c->repo || !c->dir || !c->locks) {
        dllm_hubcache_fini(c);
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    }
    return DLLM_OK;
}

void dllm_hubcache_fini(struct dllm_hubcache *c)
{
    free(c->root);
    free(c->repo);
    free(c->dir);
    free(c->locks);
    *c = (struct dllm_hubcache){0};
}

char *dllm_hubcache_blob(const struct dllm_hubcache *c, const char *etag)
{
    return dllm_hub_fmt("%s/blobs/%s", c->dir, etag);
}

char *dllm_hubcache_partial(const struct dllm_hubcache *c, const char *etag)
{
    return dllm_hub_fmt("%s/blobs/%s.incomplete", c->dir, etag);
}

char *dllm_hubcache_snapshot(const struct dllm_hubcache *c, const char *commit, const char *path)
{
    return dllm_hub_fmt("%s/snapshots/%s/%s", c->dir, commit, path);
}

/* Whether the link at path leads to a file directly in the repo's blobs/ folder. */
static bool links_to_blob(const struct dllm_hubcache *c, const char *path)
{
    char *blobs = dllm_hub_fmt("%s/blobs", c->dir);
    char *real_blobs = blobs ? realpath(blobs, NULL) : NULL;
    char *real = realpath(path, NULL);
    size_t n = real_blobs ? strlen(real_blobs) : 0;
    bool ok = real_blobs && real && strncmp(real, real_blobs, n) == 0 && real[n] == '/' &&
              !strchr(real + n + 1, '/');
    free(real);
    free(real_blobs);
    free(blobs);
    return ok;
}

bool dllm_hubcache_folders_real(const struct dllm_hubcache *c, const char *path)
{
    size_t n = strlen(c->dir);
    if (strncmp(path, c->dir, n) != 0 || path[n] != '/')
        return false;
    char *p = strdup(path);
    if (!p)
        return false;
    struct stat sb;
    bool ok = true;
    for (char *s = p + n + 1; ok && (s = strchr(s, '/')); s++) {
        *s = 0;
        ok = lstat(p, &sb) != 0 || S_ISDIR(sb.st_mode);
        *s = '/';
    }
    free(p);
    return ok;
}

bool dllm_hubcache_inside(const struct dllm_hubcache *c, const char *path)
{
    struct stat sb;
    if (!dllm_hubcache_folders_real(c, path))
        return false;
    if (lstat(path, &sb) != 0 || S_ISREG(sb.st_mode))
        return true;
    return S_ISLNK(sb.st_mode) && links_to_blob(c, path);
}

enum dllm_status dllm_hubcache_mkdirs(const char *path, struct dllm_error *err)
{
    char *p = strdup(path);
    if (!p)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    enum dllm_status st = DLLM_OK;
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s != 0)
            continue;
        char c = *s;
        *s = 0;
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            st =
                dllm_error_set(err, DLLM_ERR_IO, "cannot create folder %s: %s", p, strerror(errno));
            break;
        }
        *s = c;
        if (c == 0)
            break;
    }
    struct stat sb;
    if (st == DLLM_OK && (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)))
        st = dllm_error_set(err, DLLM_ERR_IO, "%s is not a folder", path);
    free(p);
    return st;
}

/* A name beside path for a temporary file no other thread or process uses. */
static char *temp_name(const char *path)
{
    static atomic_uint counter;
    return dllm_hub_fmt("%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&counter, 1));
}

/* Writes all n bytes to fd; false with errno set on failure. */
static bool write_all(int fd, const void *data, size_t n)
{
    const char *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

void dllm_hubcache_sync_parent(const char *path)
{
    /* On the stack: this runs after a rename, where nothing may fail any more. */
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    size_t n = !slash ? 0 : slash == path ? 1 : (size_t)(slash - path);
    if (n >= sizeof dir)
        return;
    memcpy(dir, slash ? path : ".", slash ? n : 1);
    dir[slash ? n : 1] = 0;
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

enum dllm_status dllm_hubcache_write_atomic(const char *path, const void *data, size_t size,
                                            struct dllm_error *err)
{
    enum dllm_status st = DLLM_OK;
    char *tmp = temp_name(path);
    if (!tmp)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) {
        st = dllm_error_set(err, DLLM_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
        goto fail;
    }
    if (!write_all(fd, data, size) || fsync(fd) != 0) {
        st = dllm_error_set(err, DLLM_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        goto fail;
    }
    close(fd);
    if (rename(tmp, path) != 0) {
        st = dllm_error_set(err, DLLM_ERR_IO, "cannot rename %s to %s: %s", tmp, path,
                            strerror(errno));
        unlink(tmp);
        goto fail;
    }
    dllm_hubcache_sync_parent(path);
fail:
    free(tmp);
    return st;
}

void dllm_hubcache_tag_root(const char *root)
{
    static const char tag[] = "Signature: 8a477f597d28d172789f06886806bc55\n"
                              "# This file is a cache directory tag created by dllm.\n"
                              "# For information about cache directory tags, see:\n"
                              "#\thttps://bford.info/cachedir/\n";
    char *path = dllm_hub_fmt("%s/CACHEDIR.TAG", root);
    if (path && access(path, F_OK) != 0)
        dllm_hubcache_write_atomic(path, tag, sizeof tag - 1, NULL);
    free(path);
}

enum dllm_status dllm_hubcache_read_ref(const struct dllm_hubcache *c, const char *rev,
                                        char commit[DLLM_HUB_COMMIT_LEN + 1],
                                        struct dllm_error *err)
{
    if (!dllm_hub_path_valid(rev))
        return dllm_error_set(err, DLLM_ERR_ARG, "invalid revision '%s'", rev);
    char *path = dllm_hub_fmt("%s/refs/%s", c->dir, rev);
    if (!path)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    enum dllm_status st = DLLM_OK;
    char buf[DLLM_HUB_COMMIT_LEN + 8] = {0};
    FILE *f = fopen(path, "rb");
    if (!f) {
        st = dllm_error_set(err, DLLM_ERR_MISSING, "no cached ref %s for %s", rev, c->repo);
        goto fail;
    }
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
        buf[--n] = 0;
    if (!dllm_hub_is_hex(buf, DLLM_HUB_COMMIT_LEN)) {
        st = dllm_error_set(err, DLLM_ERR_FORMAT, "%s does not hold a commit hash", path);
        goto fail;
    }
    memcpy(commit, buf, DLLM_HUB_COMMIT_LEN + 1);
fail:
    free(path);
    return st;
}

enum dllm_status dllm_hubcache_write_ref(const struct dllm_hubcache *c, const char *rev,
                                         const char *commit, struct dllm_error *err)
{
    if (!dllm_hub_path_valid(rev))
        return dllm_error_set(err, DLLM_ERR_ARG, "invalid revision '%s'", rev);
    char *path = dllm_hub_fmt("%s/refs/%s", c->dir, rev);
    char *dir = path ? dllm_hub_parent(path) : NULL;
    enum dllm_status st = DLLM_OK;
    if (!dir) {
        st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if ((st = dllm_hubcache_mkdirs(dir, err)) == DLLM_OK)
        st = dllm_hubcache_write_atomic(path, commit, strlen(commit), err);
fail:
    free(dir);
    free(path);
    return st;
}

/* A string member of obj when it is n hex digits, else "" (for optional hashes). */
static void hex_member(json_t *obj, const char *key, size_t n, char *out)
{
    const char *s = json_string_value(json_object_get(obj, key));
    out[0] = 0;
    if (s && strlen(s) == n && dllm_hub_is_hex(s, n))
        memcpy(out, s, n + 1);
}

enum dllm_status dllm_hubcache_read_tree(const struct dllm_hubcache *c, const char *commit,
                                         struct dllm_hub_listing *out, struct dllm_error *err)
{
    *out = (struct dllm_hub_listing){0};
    char *path = dllm_hub_fmt("%s/trees/%s.json", c->dir, commit);
    if (!path)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    enum dllm_status st = DLLM_OK;
    json_error_t jerr;
    json_t *root = NULL;
    if (access(path, F_OK) != 0) {
        st = dllm_error_set(err, DLLM_ERR_MISSING, "no kept listing %s", path);
        goto fail;
    }
    bool nomem;
    root = dllm_hubjson_load_file(path, 0, &jerr, &nomem);
    if (nomem) {
        st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    json_t *files = json_object_get(root, "files");
    if (!root || json_integer_value(json_object_get(root, "format_version")) != 1 ||
        !json_is_object(files)) {
        st = dllm_error_set(err, DLLM_ERR_FORMAT, "%s is not a file listing", path);
        goto fail;
    }
    const char *name;
    json_t *info;
    json_object_foreach(files, name, info)
    {
        json_t *size = json_object_get(info, "size");
        if (!dllm_hub_path_valid(name) || !json_is_integer(size) || json_integer_value(size) < 0)
            continue;
        struct dllm_hub_file f = {.path = (char *)name, .size = json_integer_value(size)};
        hex_member(info, "blob_id", 40, f.blob_id);
        hex_member(info, "lfs_sha256", 64, f.sha256);
        if ((st = dllm_hub_listing_add(out, &f, err)) != DLLM_OK)
            goto fail;
    }
fail:
    if (st != DLLM_OK)
        dllm_hub_listing_fini(out);
    json_decref(root);
    free(path);
    return st;
}

enum dllm_status dllm_hubcache_write_tree(const struct dllm_hubcache *c, const char *commit,
                                          const struct dllm_hub_listing *l, struct dllm_error *err)
{
    enum dllm_status st = DLLM_OK;
    char *dir = dllm_hub_fmt("%s/trees", c->dir);
    char *path = dllm_hub_fmt("%s/trees/%s.json", c->dir, commit);
    json_t *files = json_object();
    json_t *root = json_pack("{s:i, s:o}", "format_version", 1, "files", files);
    char *text = NULL;
    if (!dir || !path || !root) {
        st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < l->n; i++) {
        const struct dllm_hub_file *f = &l->files[i];
        json_t *info = json_pack("{s:I}", "size", (json_int_t)f->size);
        bool ok = info != NULL;
        if (ok && f->blob_id[0])
            ok = json_object_set_new(info, "blob_id", json_string(f->blob_id)) == 0;
        if (ok && f->sha256[0])
            ok = json_object_set_new(info, "lfs_sha256", json_string(f->sha256)) == 0 &&
                 json_object_set_new(info, "lfs_size", json_integer((json_int_t)f->size)) == 0;
        if (!ok)
            json_decref(info);
        if (!ok || json_object_set_new(files, f->path, info) != 0) {
            st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
            goto fail;
        }
    }
    text = dllm_hub_json_text(root, JSON_SORT_KEYS | JSON_COMPACT);
    if (!text) {
        st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if ((st = dllm_hubcache_mkdirs(dir, err)) == DLLM_OK)
        st = dllm_hubcache_write_atomic(path, text, strlen(text), err);
fail:
    free(text);
    json_decref(root);
    free(path);
    free(dir);
    return st;
}

/*
 * Adds the files under dir (rel: their path prefix inside the snapshot) to out, each with its
 * size and the etag its link's blob name gives.
 */
static enum dllm_status scan_dir(const struct dllm_hubcache *c, const char *dir, const char *rel,
                                 int depth, struct dllm_hub_listing *out, struct dllm_error *err)
{
    if (depth > DLLM_HUBCACHE_MAX_DEPTH)
        return DLLM_OK;
    DIR *d = opendir(dir);
    if (!d)
        return DLLM_OK;
    enum dllm_status st = DLLM_OK;
    struct dirent *e;
    while (st == DLLM_OK && (e = readdir(d))) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
            continue;
        if (strstr(e->d_name, ".tmp."))
            continue;
        char *full = dllm_hub_fmt("%s/%s", dir, e->d_name);
        char *sub = *rel ? dllm_hub_fmt("%s/%s", rel, e->d_name) : strdup(e->d_name);
        struct stat ls, ts;
        if (!full || !sub) {
            st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
        } else if (lstat(full, &ls) == 0 && S_ISDIR(ls.st_mode)) {
            st = scan_dir(c, full, sub, depth + 1, out, err);
        } else if (dllm_hub_path_valid(sub)) {
            /* A link out of the cache is listed as broken and never followed. */
            bool inside = dllm_hubcache_inside(c, full);
            struct dllm_hub_file f = {.path = sub, .size = -1};
            if (inside && stat(full, &ts) == 0 && S_ISREG(ts.st_mode))
                f.size = ts.st_size;
            char target[4096];
            ssize_t n =
                inside && S_ISLNK(ls.st_mode) ? readlink(full, target, sizeof target - 1) : -1;
            if (n > 0) {
                target[n] = 0;
                const char *base = strrchr(target, '/');
                base = base ? base + 1 : target;
                if (dllm_hub_is_hex(base, 64))
                    memcpy(f.sha256, base, 65);
                else if (dllm_hub_is_hex(base, 40))
                    memcpy(f.blob_id, base, 41);
            }
            if (S_ISLNK(ls.st_mode) || f.size >= 0)
                st = dllm_hub_listing_add(out, &f, err);
        }
        free(full);
        free(sub);
    }
    closedir(d);
    return st;
}

enum dllm_status dllm_hubcache_scan(const struct dllm_hubcache *c, const char *commit,
                                    struct dllm_hub_listing *out, struct dllm_error *err)
{
    *out = (struct dllm_hub_listing){0};
    char *dir = dllm_hub_fmt("%s/snapshots/%s", c->dir, commit);
    if (!dir)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    enum dllm_status st = DLLM_OK;
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        st = dllm_error_set(err, DLLM_ERR_MISSING, "no snapshot %s of %s in the cache", commit,
                            c->repo);
    else
        st = scan_dir(c, dir, "", 0, out, err);
    if (st != DLLM_OK)
        dllm_hub_listing_fini(out);
    free(dir);
    return st;
}

/* Copies the file src to dst (created new), fsynced. */
static enum dllm_status copy_file(const char *src, const char *dst, struct dllm_error *err)
{
    enum dllm_status st = DLLM_OK;
    char *buf = malloc(COPY_CHUNK);
    int in = open(src, O_RDONLY | O_CLOEXEC);
    int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (!buf || in < 0 || out < 0) {
        st = dllm_error_set(err, buf ? DLLM_ERR_IO : DLLM_ERR_NOMEM, "cannot copy %s to %s: %s",
                            src, dst, strerror(errno));
        goto fail;
    }
    for (;;) {
        ssize_t n = read(in, buf, COPY_CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0)
            break;
        if (n < 0 || !write_all(out, buf, (size_t)n)) {
            st = dllm_error_set(err, DLLM_ERR_IO, "cannot copy %s to %s: %s", src, dst,
                                strerror(errno));
            goto fail;
        }
    }
    if (fsync(out) != 0)
        st = dllm_error_set(err, DLLM_ERR_IO, "cannot write %s: %s", dst, strerror(errno));
fail:
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
    if (st != DLLM_OK)
        unlink(dst);
    free(buf);
    return st;
}

enum dllm_status dllm_hubcache_link(const struct dllm_hubcache *c, const char *commit,
                                    const char *path, const char *etag, struct dllm_error *err)
{
    enum dllm_status st = DLLM_OK;
    char *snap = dllm_hubcache_snapshot(c, commit, path);
    char *dir = snap ? dllm_hub_parent(snap) : NULL;
    char *tmp = snap ? temp_name(snap) : NULL;
    char *blob = dllm_hubcache_blob(c, etag);
    /* From snapshots/<commit>/<dirs...>/ up to the repo folder. */
    size_t depth = 2;
    for (const char *p = path; *p; p++)
        depth += *p == '/';
    char *target = malloc(3 * depth + strlen(etag) + 8);
    if (!snap || !dir || !tmp || !blob || !target) {
        st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    target[0] = 0;
    for (size_t i = 0; i < depth; i++)
        strcat(target, "../");
    strcat(target, "blobs/");
    strcat(target, etag);
    if ((st = dllm_hubcache_mkdirs(dir, err)) != DLLM_OK)
        goto fail;
    bool copy = c->copies;
    if (!copy && symlink(target, tmp) != 0) {
        if (errno != EPERM && errno != EOPNOTSUPP && errno != ENOSYS) {
            st =
                dllm_error_set(err, DLLM_ERR_IO, "cannot create link %s: %s", tmp, strerror(errno));
            goto fail;
        }
        copy = true;
    }
    if (copy && (st = copy_file(blob, tmp, err)) != DLLM_OK)
        goto fail;
    if (rename(tmp, snap) != 0) {
        st = dllm_error_set(err, DLLM_ERR_IO, "cannot rename %s to %s: %s", tmp, snap,
                            strerror(errno));
        unlink(tmp);
        goto fail;
    }
    dllm_hubcache_sync_parent(snap);
fail:
    free(target);
    free(blob);
    free(tmp);
    free(dir);
    free(snap);
    return st;
}

enum dllm_status dllm_hubcache_lock(const struct dllm_hubcache *c, const char *etag,
                                    dllm_hub_tick tick, void *user, int *fd, struct dllm_error *err)
{
    *fd = -1;
    enum dllm_status st = dllm_hubcache_mkdirs(c->locks, err);
    if (st != DLLM_OK)
        return st;
    char *path = dllm_hub_fmt("%s/%s.lock", c->locks, etag);
    if (!path)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    int lfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (lfd < 0) {
        st = dllm_error_set(err, DLLM_ERR_IO, "cannot open lock %s: %s", path, strerror(errno));
        goto fail;
    }
    for (;;) {
        if (flock(lfd, LOCK_EX | LOCK_NB) == 0) {
            *fd = lfd;
            break;
        }
        if (errno != EWOULDBLOCK && errno != EINTR) {
            close(lfd); /* no flock here: go on unlocked */
            break;
        }
        if (tick && !tick(user, -1)) {
            close(lfd);
            st = dllm_error_set(err, DLLM_ERR_CANCELLED, "cancelled");
            break;
        }
        nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
    }
fail:
    free(path);
    return st;
}

void dllm_hubcache_unlock(int fd)
{
    if (fd >= 0)
        close(fd);
}
