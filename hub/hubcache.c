/*
 * The Hugging Face cache on disk: paths, atomic writes, refs, kept listings, snapshot links,
 * blob locks, content hashes, the verified memo, and listing and removing cached models.
 */
#include "config.h"

#include "hubcache.h"

#include "dllm-hub.h"
#include "hub.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_DEPTH  32        /* folder levels walked inside a snapshot */
#define HASH_CHUNK (1 << 20) /* bytes read at a time when hashing */

char *dllm_hubcache_fmt(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *s = malloc((size_t)n + 1);
    if (!s)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

bool dllm_hubcache_is_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return s[n] == 0;
}

bool dllm_hubcache_path_valid(const char *path)
{
    size_t len = strlen(path);
    if (len == 0 || len > 1024 || path[0] == '/' || path[len - 1] == '/')
        return false;
    for (const char *p = path; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f || *p == '\\')
            return false;
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        p += n;
        if (*p == '/')
            p++;
    }
    return true;
}

/* ---- listings --------------------------------------------------------------------------- */

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

/* ---- paths ------------------------------------------------------------------------------ */

const char *dllm_hubcache_home(void)
{
    const char *home = getenv("HOME");
    if (home && *home)
        return home;
    struct passwd *pw = getpwuid(getuid());
    return pw && pw->pw_dir ? pw->pw_dir : "/";
}

/* The value of an environment variable when set and not empty, else NULL. */
static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

char *dllm_hubcache_root(const char *override)
{
    const char *v;
    if (override && *override)
        return strdup(override);
    if ((v = env("HF_HUB_CACHE")) || (v = env("HUGGINGFACE_HUB_CACHE")))
        return strdup(v);
    if ((v = env("HF_HOME")))
        return dllm_hubcache_fmt("%s/hub", v);
    if ((v = env("XDG_CACHE_HOME")))
        return dllm_hubcache_fmt("%s/huggingface/hub", v);
    return dllm_hubcache_fmt("%s/.cache/huggingface/hub", dllm_hubcache_home());
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
    c->dir = dllm_hubcache_fmt("%s/models--%.*s--%s", root, org, repo, slash + 1);
    c->locks = dllm_hubcache_fmt("%s/.locks/models--%.*s--%s", root, org, repo, slash + 1);
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
    return dllm_hubcache_fmt("%s/blobs/%s", c->dir, etag);
}

char *dllm_hubcache_partial(const struct dllm_hubcache *c, const char *etag)
{
    return dllm_hubcache_fmt("%s/blobs/%s.incomplete", c->dir, etag);
}

char *dllm_hubcache_snapshot(const struct dllm_hubcache *c, const char *commit, const char *path)
{
    return dllm_hubcache_fmt("%s/snapshots/%s/%s", c->dir, commit, path);
}

/* A malloc'd copy of the folder part of path ("." when it has none). */
static char *parent_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    return strndup(path, (size_t)(slash - path));
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
    return dllm_hubcache_fmt("%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&counter, 1));
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
    char *dir = parent_of(path);
    if (!dir)
        return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(dir);
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
    char *path = dllm_hubcache_fmt("%s/CACHEDIR.TAG", root);
    if (path && access(path, F_OK) != 0)
        dllm_hubcache_write_atomic(path, tag, sizeof tag - 1, NULL);
    free(path);
}

/* ---- refs and kept listings ------------------------------------------------------------- */

enum dllm_status dllm_hubcache_read_ref(const struct dllm_hubcache *c, const char *rev,
                                        char commit[DLLM_HUB_COMMIT_LEN + 1],
                                        struct dllm_error *err)
{
    if (!dllm_hubcache_path_valid(rev))
        return dllm_error_set(err, DLLM_ERR_ARG, "invalid revision '%s'", rev);
    char *path = dllm_hubcache_fmt("%s/refs/%s", c->dir, rev);
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
    if (!dllm_hubcache_is_hex(buf, DLLM_HUB_COMMIT_LEN)) {
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
    if (!dllm_hubcache_path_valid(rev))
        return dllm_error_set(err, DLLM_ERR_ARG, "invalid revision '%s'", rev);
    char *path = dllm_hubcache_fmt("%s/refs/%s", c->dir, rev);
    char *dir = path ? parent_of(path) : NULL;
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
    if (s && strlen(s) == n && dllm_hubcache_is_hex(s, n))
        memcpy(out, s, n + 1);
}

enum dllm_status dllm_hubcache_read_tree(const struct dllm_hubcache *c, const char *commit,
                                         struct dllm_hub_listing *out, struct dllm_error *err)
{
    *out = (struct dllm_hub_listing){0};
    char *path = dllm_hubcache_fmt("%s/trees/%s.json", c->dir, commit);
    if (!path)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    enum dllm_status st = DLLM_OK;
    json_error_t jerr;
    json_t *root = NULL;
    if (access(path, F_OK) != 0) {
        st = dllm_error_set(err, DLLM_ERR_MISSING, "no kept listing %s", path);
        goto fail;
    }
    root = json_load_file(path, 0, &jerr);
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
        if (!dllm_hubcache_path_valid(name) || !json_is_integer(size) ||
            json_integer_value(size) < 0)
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
    char *dir = dllm_hubcache_fmt("%s/trees", c->dir);
    char *path = dllm_hubcache_fmt("%s/trees/%s.json", c->dir, commit);
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
        if (info && f->blob_id[0])
            json_object_set_new(info, "blob_id", json_string(f->blob_id));
        if (info && f->sha256[0]) {
            json_object_set_new(info, "lfs_sha256", json_string(f->sha256));
            json_object_set_new(info, "lfs_size", json_integer((json_int_t)f->size));
        }
        if (!info || json_object_set_new(files, f->path, info) != 0) {
            st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
            goto fail;
        }
    }
    text = json_dumps(root, JSON_SORT_KEYS | JSON_COMPACT);
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

/* ---- snapshots -------------------------------------------------------------------------- */

/*
 * Adds the files under dir (rel: their path prefix inside the snapshot) to out, each with its
 * size and the etag its link's blob name gives.
 */
static enum dllm_status scan_dir(const char *dir, const char *rel, int depth,
                                 struct dllm_hub_listing *out, struct dllm_error *err)
{
    if (depth > MAX_DEPTH)
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
        char *full = dllm_hubcache_fmt("%s/%s", dir, e->d_name);
        char *sub = *rel ? dllm_hubcache_fmt("%s/%s", rel, e->d_name) : strdup(e->d_name);
        struct stat ls, ts;
        if (!full || !sub) {
            st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
        } else if (lstat(full, &ls) == 0 && S_ISDIR(ls.st_mode)) {
            st = scan_dir(full, sub, depth + 1, out, err);
        } else if (dllm_hubcache_path_valid(sub)) {
            struct dllm_hub_file f = {.path = sub, .size = -1};
            if (stat(full, &ts) == 0 && S_ISREG(ts.st_mode))
                f.size = ts.st_size;
            char target[4096];
            ssize_t n = S_ISLNK(ls.st_mode) ? readlink(full, target, sizeof target - 1) : -1;
            if (n > 0) {
                target[n] = 0;
                const char *base = strrchr(target, '/');
                base = base ? base + 1 : target;
                if (dllm_hubcache_is_hex(base, 64))
                    memcpy(f.sha256, base, 65);
                else if (dllm_hubcache_is_hex(base, 40))
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
    char *dir = dllm_hubcache_fmt("%s/snapshots/%s", c->dir, commit);
    if (!dir)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    enum dllm_status st = DLLM_OK;
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        st = dllm_error_set(err, DLLM_ERR_MISSING, "no snapshot %s of %s in the cache", commit,
                            c->repo);
    else
        st = scan_dir(dir, "", 0, out, err);
    if (st != DLLM_OK)
        dllm_hub_listing_fini(out);
    free(dir);
    return st;
}

/* Copies the file src to dst (created new), fsynced. */
static enum dllm_status copy_file(const char *src, const char *dst, struct dllm_error *err)
{
    enum dllm_status st = DLLM_OK;
    char *buf = malloc(HASH_CHUNK);
    int in = open(src, O_RDONLY | O_CLOEXEC);
    int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (!buf || in < 0 || out < 0) {
        st = dllm_error_set(err, buf ? DLLM_ERR_IO : DLLM_ERR_NOMEM, "cannot copy %s to %s: %s",
                            src, dst, strerror(errno));
        goto fail;
    }
    for (;;) {
        ssize_t n = read(in, buf, HASH_CHUNK);
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
    char *dir = snap ? parent_of(snap) : NULL;
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
    const char *nolinks = getenv("HF_HUB_DISABLE_SYMLINKS");
    bool copy = nolinks && *nolinks && strcmp(nolinks, "0") != 0;
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

/* ---- locks ------------------------------------------------------------------------------ */

enum dllm_status dllm_hubcache_lock(const struct dllm_hubcache *c, const char *etag,
                                    dllm_hubcache_tick tick, void *user, int *fd,
                                    struct dllm_error *err)
{
    *fd = -1;
    enum dllm_status st = dllm_hubcache_mkdirs(c->locks, err);
    if (st != DLLM_OK)
        return st;
    char *path = dllm_hubcache_fmt("%s/%s.lock", c->locks, etag);
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

/* ---- hashes ----------------------------------------------------------------------------- */

/* Starts (or restarts) the digest, with the git blob header when hashing as git does. */
static void hash_start(struct dllm_hubhash *h, int64_t size)
{
    EVP_DigestInit_ex(h->ctx, h->git ? EVP_sha1() : EVP_sha256(), NULL);
    if (h->git) {
        char head[32];
        int n = snprintf(head, sizeof head, "blob %lld", (long long)size);
        EVP_DigestUpdate(h->ctx, head, (size_t)n + 1);
    }
}

enum dllm_status dllm_hubhash_init(struct dllm_hubhash *h, const char *etag, int64_t size,
                                   struct dllm_error *err)
{
    h->git = strlen(etag) == 40;
    h->size = size;
    h->ctx = EVP_MD_CTX_new();
    if (!h->ctx)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory for a hash");
    hash_start(h, size);
    return DLLM_OK;
}

void dllm_hubhash_update(struct dllm_hubhash *h, const void *data, size_t n)
{
    EVP_DigestUpdate(h->ctx, data, n);
}

void dllm_hubhash_final(struct dllm_hubhash *h, char hex[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_DigestFinal_ex(h->ctx, md, &n);
    for (unsigned int i = 0; i < n; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    hex[2 * n] = 0;
    hash_start(h, h->size);
}

void dllm_hubhash_fini(struct dllm_hubhash *h)
{
    EVP_MD_CTX_free(h->ctx);
    h->ctx = NULL;
}

enum dllm_status dllm_hubhash_file(struct dllm_hubhash *h, const char *path, int64_t limit,
                                   dllm_hubcache_tick tick, void *user, struct dllm_error *err)
{
    enum dllm_status st = DLLM_OK;
    char *buf = malloc(HASH_CHUNK);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (!buf || fd < 0) {
        st = buf ? dllm_error_set(err, DLLM_ERR_IO, "cannot open %s: %s", path, strerror(errno))
                 : dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    int64_t done = 0;
    while (limit < 0 || done < limit) {
        size_t want = HASH_CHUNK;
        if (limit >= 0 && (int64_t)want > limit - done)
            want = (size_t)(limit - done);
        ssize_t n = read(fd, buf, want);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            st = dllm_error_set(err, DLLM_ERR_IO, "cannot read %s: %s", path, strerror(errno));
            goto fail;
        }
        if (n == 0)
            break;
        EVP_DigestUpdate(h->ctx, buf, (size_t)n);
        done += n;
        if (tick && done % (16 * HASH_CHUNK) < n && !tick(user, done)) {
            st = dllm_error_set(err, DLLM_ERR_CANCELLED, "cancelled");
            goto fail;
        }
    }
    if (tick && !tick(user, done))
        st = dllm_error_set(err, DLLM_ERR_CANCELLED, "cancelled");
fail:
    if (fd >= 0)
        close(fd);
    free(buf);
    return st;
}

/* ---- the verified memo ------------------------------------------------------------------ */

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

struct dllm_hubmemo *dllm_hubmemo_load(const char *path)
{
    struct dllm_hubmemo *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    const char *xdg = env("XDG_CACHE_HOME");
    m->path = path && *path ? strdup(path)
              : xdg         ? dllm_hubcache_fmt("%s/dllm/verified.json", xdg)
                    : dllm_hubcache_fmt("%s/.cache/dllm/verified.json", dllm_hubcache_home());
    json_t *root = m->path ? json_load_file(m->path, 0, NULL) : NULL;
    json_t *files = json_object_get(root, "files");
    m->files = json_is_object(files) ? json_incref(files) : json_object();
    json_decref(root);
    if (!m->path || !m->files) {
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
    char *text = root ? json_dumps(root, JSON_SORT_KEYS | JSON_INDENT(1)) : NULL;
    char *dir = parent_of(m->path);
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

/* ---- listing and removing cached models ------------------------------------------------- */

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

/* Whether a file name ends in .gguf, ignoring case. */
static bool is_gguf(const char *path)
{
    size_t n = strlen(path);
    return n >= 5 && strcasecmp(path + n - 5, ".gguf") == 0;
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
        if (!is_gguf(f->path))
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
    char *repo = dllm_hubcache_fmt("%.*s/%s", (int)org_len, name + 8, name + 8 + org_len + 2);
    struct dllm_hubcache c = {0};
    enum dllm_status st = repo ? dllm_hubcache_init(&c, list->root, repo, err)
                               : dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    char *snaps = st == DLLM_OK ? dllm_hubcache_fmt("%s/snapshots", c.dir) : NULL;
    DIR *d = snaps ? opendir(snaps) : NULL;
    struct dirent *e;
    while (d && st == DLLM_OK && (e = readdir(d)))
        if (dllm_hubcache_is_hex(e->d_name, DLLM_HUB_COMMIT_LEN))
            st = list_snapshot(list, &c, e->d_name, memo, err);
    if (d)
        closedir(d);
    free(snaps);
    dllm_hubcache_fini(&c);
    free(repo);
    return st;
}

static int by_entry(const void *a, const void *b)
{
    const struct dllm_hub_entry *x = a, *y = b;
    int c = strcmp(x->repo, y->repo);
    if (!c)
        c = strcmp(x->file, y->file);
    return c ? c : strcmp(x->commit, y->commit);
}

enum dllm_status dllm_hub_list(const struct dllm_hub_params *params, struct dllm_hub_list **out,
                               struct dllm_error *err)
{
    *out = NULL;
    struct dllm_hub_list *list = calloc(1, sizeof *list);
    struct dllm_hubmemo *memo = dllm_hubmemo_load(params ? params->verified_path : NULL);
    enum dllm_status st = DLLM_OK;
    if (!list || !(list->root = dllm_hubcache_root(params ? params->cache_dir : NULL))) {
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
    for (int64_t i = 0; i < list->n; i++) {
        free((char *)list->entries[i].repo);
        free((char *)list->entries[i].file);
        free((char *)list->entries[i].commit);
        free((char *)list->entries[i].path);
    }
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
    if (S_ISDIR(sb.st_mode) && depth < MAX_DEPTH) {
        DIR *d = opendir(path);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char *sub = dllm_hubcache_fmt("%s/%s", path, e->d_name);
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
        char *p = dllm_hubcache_fmt("%s/%s", dir, e->d_name);
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
    char *snaps = dllm_hubcache_fmt("%s/snapshots", c->dir);
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
    char *blobs = dllm_hubcache_fmt("%s/blobs", c->dir);
    DIR *d = blobs ? opendir(blobs) : NULL;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        const char *name = e->d_name;
        bool in_use = !dllm_hubcache_is_hex(name, 64) && !dllm_hubcache_is_hex(name, 40);
        for (size_t i = 0; i < used->n && !in_use; i++)
            in_use = strcmp(dllm_hub_file_etag(&used->files[i]), name) == 0;
        int lock;
        if (in_use || dllm_hubcache_lock(c, name, no_wait, NULL, &lock, NULL) != DLLM_OK)
            continue;
        char *path = dllm_hubcache_fmt("%s/%s", blobs, name);
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
    char *snaps = dllm_hubcache_fmt("%s/snapshots", c->dir);
    DIR *d = snaps ? opendir(snaps) : NULL;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        for (size_t k = 0; k < n_idx; k++) {
            char *p = dllm_hubcache_snapshot(c, e->d_name, all.files[idx[k]].path);
            struct stat sb;
            if (p && lstat(p, &sb) == 0 && unlink(p) == 0)
                ++*n_files;
            /* Empty folders the file was in, up to the snapshot. */
            for (char *slash; p && (slash = strrchr(p, '/')) && strlen(p) > strlen(snaps);) {
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
        char *blobs = dllm_hubcache_fmt("%s/blobs", c->dir);
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
    enum dllm_status st = dllm_hub_ref_parse(ref, &r, err);
    if (st != DLLM_OK)
        goto fail;
    if (r.local) {
        st = dllm_error_set(err, DLLM_ERR_ARG,
                            "'%s' is a path: remove takes a hub model (org/repo[:QUANT])", ref);
        goto fail;
    }
    root = dllm_hubcache_root(params ? params->cache_dir : NULL);
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
        char *blobs = dllm_hubcache_fmt("%s/blobs", c.dir);
        freed = blobs ? folder_bytes(blobs) : 0;
        free(blobs);
        remove_tree(c.dir, 0);
        remove_tree(c.locks, 0);
    }
    memo = dllm_hubmemo_load(params ? params->verified_path : NULL);
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
