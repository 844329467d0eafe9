/*
 * One download session with the Hugging Face hub for one repo: the listing at a revision and
 * verified, resumable downloads into the cache.
 */
#ifndef DLLM_HUB_SESSION_H
#define DLLM_HUB_SESSION_H

#include "dllm-hub.h"
#include "listing.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A session with the hub (or only the cache, offline) for one repo. */
struct dllm_hubfetch;

/* Opens a session for repo. */
enum dllm_status dllm_hubfetch_open(const char *repo, const struct dllm_hub_params *params,
                                    struct dllm_hubfetch **out, struct dllm_error *err);
/* Saves the verified memo and ends the session; accepts NULL. */
void dllm_hubfetch_close(struct dllm_hubfetch *hub);

/*
 * The commit of the revision and the files at it: from the hub (the listing then kept in the
 * cache), or from the cache alone when offline or when the hub cannot be reached and the cache
 * has a snapshot (the session then turns offline and warns).
 */
enum dllm_status dllm_hubfetch_listing(struct dllm_hubfetch *hub,
                                       char commit[DLLM_HUB_COMMIT_LEN + 1],
                                       struct dllm_hub_listing *l, struct dllm_error *err);

/*
 * Makes snapshots/<commit>/<file> a verified copy of the file, the index-th of n_files: from
 * the cache, or downloaded; *path gets the snapshot path (malloc'd).
 */
enum dllm_status dllm_hubfetch_file(struct dllm_hubfetch *hub, const struct dllm_hub_file *file,
                                    int index, int n_files, const char *commit, char **path,
                                    struct dllm_error *err);

/* Records refs/<revision> = commit when online and the revision is not the commit itself. */
enum dllm_status dllm_hubfetch_finish(struct dllm_hubfetch *hub, const char *commit,
                                      struct dllm_error *err);

/* Bytes received so far, and the warning line (malloc'd, NULL if none) for the caller. */
int64_t dllm_hubfetch_downloaded(const struct dllm_hubfetch *hub);
char *dllm_hubfetch_take_warning(struct dllm_hubfetch *hub);

/*
 * The parsers of the hub's answers that a session uses, exposed for the fuzz targets.
 * The commit in the answer about a revision ("sha"); what names the request in the error.
 */
enum dllm_status dllm_hubfetch_revision_commit(const json_t *doc, const char *what,
                                               char commit[DLLM_HUB_COMMIT_LEN + 1],
                                               struct dllm_error *err);
/* The files of one page of repo's tree listing, added to l (unsafe paths are skipped). */
enum dllm_status dllm_hubfetch_tree_page(const char *repo, const json_t *page,
                                         struct dllm_hub_listing *l, struct dllm_error *err);
/* An ETag header's value without W/ and quotes, into out (n bytes). */
void dllm_hubfetch_etag_value(const char *v, char *out, size_t n);
/* Whether a Content-Range "bytes S-E/T" starts at start and totals total. */
bool dllm_hubfetch_range_ok(const char *cr, int64_t start, int64_t total);

#endif
