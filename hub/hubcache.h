/*
 * The Hugging Face cache on disk, in huggingface_hub's layout so that dllm, `hf` and llama.cpp
 * share one copy of each file (shared/docs/hub.md 1.6):
 *
 *   <root>/models--org--name/blobs/<etag>                  the content, named by its hash
 *   <root>/models--org--name/blobs/<etag>.incomplete       a partial download
 *   <root>/models--org--name/snapshots/<commit>/<path>     relative symlink to ../../blobs/<etag>
 *   <root>/models--org--name/refs/<revision>               the commit a branch or tag named
 *   <root>/models--org--name/trees/<commit>.json           the hub's file listing at that commit
 *   <root>/.locks/models--org--name/<etag>.lock            held while a blob is downloaded
 *
 * The etag of a file is the SHA-256 of its content for files stored in LFS, otherwise the git
 * blob SHA-1 (of "blob <size>\0" followed by the content).
 */
#ifndef DLLM_HUBCACHE_H
#define DLLM_HUBCACHE_H

#include "dllm-hub.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DLLM_HUB_COMMIT_LEN 40

/* One file of a repo at a commit, from the hub's tree listing or from a cached snapshot. */
struct dllm_hub_file {
    char *path;       /* inside the repo, checked by dllm_hubcache_path_valid */
    int64_t size;     /* bytes */
    char blob_id[41]; /* git blob SHA-1 in hex, "" when unknown */
    char sha256[65];  /* LFS SHA-256 of the content in hex, "" for files outside LFS */
};

/* A growable list of files. */
struct dllm_hub_listing {
    struct dllm_hub_file *files;
    size_t n, cap;
};

/* The cache folders of one repo. */
struct dllm_hubcache {
    char *root;  /* the cache root */
    char *repo;  /* org/name */
    char *dir;   /* <root>/models--org--name */
    char *locks; /* <root>/.locks/models--org--name */
};

/* Hashing a file's content so that the result compares with its etag. */
struct dllm_hubhash {
    void *ctx;    /* EVP_MD_CTX */
    bool git;     /* git blob SHA-1 rather than SHA-256 */
    int64_t size; /* the content's size, which the git blob header holds */
};

/* Called while a file is hashed with the bytes done so far; returning false cancels. */
typedef bool (*dllm_hubcache_tick)(void *user, int64_t done);

/* A printf-style malloc'd string, or NULL when out of memory. */
char *dllm_hubcache_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Whether s is n lowercase hex digits. */
bool dllm_hubcache_is_hex(const char *s, size_t n);

/*
 * Whether a path taken from a hub listing may be created under a snapshot folder: relative,
 * components that are not empty, "." or "..", no backslash or control character, at most
 * 1024 bytes.
 */
bool dllm_hubcache_path_valid(const char *path);

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

/* The user's home folder: $HOME, else the password database's entry. */
const char *dllm_hubcache_home(void);

/*
 * The cache root: override when not NULL, else HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE,
 * $HF_HOME/hub, $XDG_CACHE_HOME/huggingface/hub, ~/.cache/huggingface/hub. Malloc'd.
 */
char *dllm_hubcache_root(const char *override);

/* The folders of repo under root; creates nothing. */
enum dllm_status dllm_hubcache_init(struct dllm_hubcache *c, const char *root, const char *repo,
                                    struct dllm_error *err);
void dllm_hubcache_fini(struct dllm_hubcache *c);

/* Malloc'd paths: blobs/<etag>, blobs/<etag>.incomplete, snapshots/<commit>/<path>. */
char *dllm_hubcache_blob(const struct dllm_hubcache *c, const char *etag);
char *dllm_hubcache_partial(const struct dllm_hubcache *c, const char *etag);
char *dllm_hubcache_snapshot(const struct dllm_hubcache *c, const char *commit, const char *path);

/* Creates a folder and its parents. */
enum dllm_status dllm_hubcache_mkdirs(const char *path, struct dllm_error *err);

/* Writes a whole file through a temporary file, fsync and rename. */
enum dllm_status dllm_hubcache_write_atomic(const char *path, const void *data, size_t size,
                                            struct dllm_error *err);

/* fsyncs the folder holding path, so that a rename into it is durable. */
void dllm_hubcache_sync_parent(const char *path);

/* Writes the empty CACHEDIR.TAG backup tools honour, when the root has none (best effort). */
void dllm_hubcache_tag_root(const char *root);

/* The commit refs/<rev> names: DLLM_ERR_MISSING when there is no such ref. */
enum dllm_status dllm_hubcache_read_ref(const struct dllm_hubcache *c, const char *rev,
                                        char commit[DLLM_HUB_COMMIT_LEN + 1],
                                        struct dllm_error *err);
enum dllm_status dllm_hubcache_write_ref(const struct dllm_hubcache *c, const char *rev,
                                         const char *commit, struct dllm_error *err);

/* trees/<commit>.json: DLLM_ERR_MISSING when absent, DLLM_ERR_FORMAT when malformed. */
enum dllm_status dllm_hubcache_read_tree(const struct dllm_hubcache *c, const char *commit,
                                         struct dllm_hub_listing *out, struct dllm_error *err);
enum dllm_status dllm_hubcache_write_tree(const struct dllm_hubcache *c, const char *commit,
                                          const struct dllm_hub_listing *l, struct dllm_error *err);

/*
 * The files of snapshots/<commit> (following links), with the etag read from each link's
 * blob name when it has the form of one; a link whose blob is gone has size -1.
 * DLLM_ERR_MISSING when there is no such snapshot.
 */
enum dllm_status dllm_hubcache_scan(const struct dllm_hubcache *c, const char *commit,
                                    struct dllm_hub_listing *out, struct dllm_error *err);

/*
 * Makes snapshots/<commit>/<path> a relative symlink to blobs/<etag>, replacing what was
 * there atomically; copies the blob where symlinks are impossible or HF_HUB_DISABLE_SYMLINKS
 * is set.
 */
enum dllm_status dllm_hubcache_link(const struct dllm_hubcache *c, const char *commit,
                                    const char *path, const char *etag, struct dllm_error *err);

/*
 * Takes the lock of a blob (.locks/.../<etag>.lock), waiting while another process holds it.
 * tick is called about every 100 ms while waiting (with done = -1) and may cancel.
 * On file systems without flock, goes on unlocked: the final hash check still catches
 * interleaved writers. *fd is -1 in that case.
 */
enum dllm_status dllm_hubcache_lock(const struct dllm_hubcache *c, const char *etag,
                                    dllm_hubcache_tick tick, void *user, int *fd,
                                    struct dllm_error *err);
void dllm_hubcache_unlock(int fd);

/* Starts a hash comparable with etag (40 hex digits: git blob of size bytes; else SHA-256). */
enum dllm_status dllm_hubhash_init(struct dllm_hubhash *h, const char *etag, int64_t size,
                                   struct dllm_error *err);
void dllm_hubhash_update(struct dllm_hubhash *h, const void *data, size_t n);
/* Finishes the hash into hex (65 bytes); h can be started again afterwards. */
void dllm_hubhash_final(struct dllm_hubhash *h, char hex[65]);
void dllm_hubhash_fini(struct dllm_hubhash *h);

/*
 * Feeds the first limit bytes of the file at path into h (all of it when limit < 0),
 * calling tick every few MiB. DLLM_ERR_CANCELLED when tick says so.
 */
enum dllm_status dllm_hubhash_file(struct dllm_hubhash *h, const char *path, int64_t limit,
                                   dllm_hubcache_tick tick, void *user, struct dllm_error *err);

/*
 * The record of files already checked against their hub hash, keyed by real path, size and
 * modification time: $XDG_CACHE_HOME/dllm/verified.json (or ~/.cache/dllm/verified.json).
 */
struct dllm_hubmemo;

/* Loads the memo at path (NULL: the default path); a missing or unreadable one is empty. */
struct dllm_hubmemo *dllm_hubmemo_load(const char *path);
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
