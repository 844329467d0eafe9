/*
 * The Hugging Face cache on disk, in huggingface_hub's layout (its cache docs and
 * file_download.py) so that dllm, `hf` and llama.cpp share one copy of each file:
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
#ifndef DLLM_HUB_CACHE_H
#define DLLM_HUB_CACHE_H

#include "dllm-hub.h"
#include "listing.h"
#include "util.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DLLM_HUBCACHE_MAX_DEPTH 32 /* folder levels walked inside a repo's cache folder */

/* The cache folders of one repo. */
struct dllm_hubcache {
    char *root;  /* the cache root */
    char *repo;  /* org/name */
    char *dir;   /* <root>/models--org--name */
    char *locks; /* <root>/.locks/models--org--name */
    bool copies; /* snapshots get copies of the blobs, not links (params->no_symlinks) */
};

/* The cache root: params->cache_dir, else <home>/.cache/huggingface/hub. Malloc'd. */
char *dllm_hubcache_root(const struct dllm_hub_params *params);

/* The folders of repo under root; creates nothing. */
enum dllm_status dllm_hubcache_init(struct dllm_hubcache *c, const char *root, const char *repo,
                                    struct dllm_error *err);
void dllm_hubcache_fini(struct dllm_hubcache *c);

/* Malloc'd paths: blobs/<etag>, blobs/<etag>.incomplete, snapshots/<commit>/<path>. */
char *dllm_hubcache_blob(const struct dllm_hubcache *c, const char *etag);
char *dllm_hubcache_partial(const struct dllm_hubcache *c, const char *etag);
char *dllm_hubcache_snapshot(const struct dllm_hubcache *c, const char *commit, const char *path);
/* Whether path is in the repo's folder and no folder between them is a link. */
bool dllm_hubcache_folders_real(const struct dllm_hubcache *c, const char *path);
/*
 * Whether path, in the repo's folder, stays in the cache: no folder on the way there is a
 * link, and path is absent, a regular file, or a link to a file directly in blobs/.
 */
bool dllm_hubcache_inside(const struct dllm_hubcache *c, const char *path);

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
 * there atomically; copies the blob where symlinks are impossible or c->copies is set.
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
                                    dllm_hub_tick tick, void *user, int *fd,
                                    struct dllm_error *err);
void dllm_hubcache_unlock(int fd);

#endif
