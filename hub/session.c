/*
 * One download session with the Hugging Face hub for one repo: the revision resolved to a
 * commit and the file listing, then each file taken from the cache when verified, else
 * downloaded resumably into it, with progress and cancel, in huggingface_hub's
 * file_download.py protocol.
 *
 * The revision is resolved to a commit (/api/models/{repo}/revision/{rev}) and the files are
 * listed with their sizes and hashes (/api/models/{repo}/tree/{commit}, following Link
 * pagination). Each file is probed with HEAD /{repo}/resolve/{commit}/{path} without following
 * absolute redirects, then fetched from the Location it names, with the token sent only to the
 * hub's own origin. Bytes go to blobs/<etag>.incomplete and into a hash as they arrive; the
 * file is renamed into blobs/ only when its size and hash match the listing.
 */
#include "config.h"

#include "session.h"

#include "cache.h"
#include "hash.h"
#include "http.h"
#include "listing.h"
#include "memo.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define TREE_PAGES_MAX  1000
#define TREE_FILES_MAX  200000
#define REPORT_INTERVAL 0.1 /* seconds between progress events */

/* One file being fetched. */
struct fetch {
    const struct dllm_hub_file *f;
    const char *etag;
    int index, n_files;
    int fd;       /* the partial file */
    int64_t have; /* bytes in the partial file and in the hash */
    int64_t got;  /* bytes received by the current attempt */
    struct dllm_hubhash hash;
    bool started, discard; /* the current response's body: seen, and not file content */
    bool bad_range, overflow, restarted;
    int write_errno;
    int attempt;
    double last_report, rate, rate_t;
    int64_t rate_bytes;
    enum dllm_hub_phase phase;
    struct dllm_hubresp r; /* the response of the current request */
};

/* A session with the hub for one repo. */
struct dllm_hubfetch {
    const struct dllm_hub_params *p;
    bool offline;
    struct dllm_hubhttp http;
    struct dllm_hubcache cache;
    struct dllm_hubmemo *memo;
    struct fetch *cur; /* the file being fetched, for progress */
    char *warning;
    int64_t downloaded;
};

/* Appends a sentence to the session's warning line. */
static void warn(struct dllm_hubfetch *hub, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void warn(struct dllm_hubfetch *hub, const char *fmt, ...)
{
    char text[DLLM_ERROR_TEXT_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    char *w = hub->warning ? dllm_hub_fmt("%s; %s", hub->warning, text) : strdup(text);
    if (w) {
        free(hub->warning);
        hub->warning = w;
    }
}

/* Sends a progress event for the current file; throttled unless the phase changed. */
static void report(struct dllm_hubfetch *hub, enum dllm_hub_phase phase, int64_t bytes,
                   double retry_in, const char *why)
{
    struct fetch *fx = hub->cur;
    double t = dllm_hub_now();
    if (fx) {
        if (phase == fx->phase && phase != DLLM_HUB_PHASE_RETRY &&
            t - fx->last_report < REPORT_INTERVAL)
            return;
        if (phase == DLLM_HUB_PHASE_DOWNLOAD && t - fx->rate_t >= 0.5) {
            double inst = (double)(fx->have - fx->rate_bytes) / (t - fx->rate_t);
            if (fx->rate_t > 0 && inst >= 0)
                fx->rate = fx->rate > 0 ? 0.7 * fx->rate + 0.3 * inst : inst;
            fx->rate_t = t;
            fx->rate_bytes = fx->have;
        }
        fx->phase = phase;
        fx->last_report = t;
    }
    if (!hub->p->progress)
        return;
    int64_t total = fx ? fx->f->size : 0;
    struct dllm_progress pr = {
        .kind = DLLM_PROGRESS_DOWNLOAD,
        .fraction = total > 0 ? (double)bytes / (double)total : 0,
        .done = bytes,
        .total = total,
        .rate = fx ? fx->rate : 0,
        .phase = (int)phase,
        .repo = hub->cache.repo,
        .file = fx ? fx->f->path : "",
        .file_index = fx ? fx->index : 0,
        .n_files = fx ? fx->n_files : 0,
        .attempt = fx ? fx->attempt : 0,
        .retry_in = retry_in,
        .why = why ? why : "",
    };
    hub->p->progress(&pr, hub->p->progress_user);
}

/* Hashing progress: reports PHASE_CHECK (or PHASE_WAIT for done < 0); false when cancelled. */
static bool check_tick(void *user, int64_t done)
{
    struct dllm_hubfetch *hub = user;
    report(hub, done < 0 ? DLLM_HUB_PHASE_WAIT : DLLM_HUB_PHASE_CHECK, done < 0 ? 0 : done, 0,
           NULL);
    return !dllm_hubhttp_cancelled(&hub->http);
}

/* A wait before another attempt: reports PHASE_RETRY with the delay and the failure. */
static void on_retry(void *user, double delay, const char *why)
{
    struct dllm_hubfetch *hub = user;
    report(hub, DLLM_HUB_PHASE_RETRY, hub->cur ? hub->cur->have : 0, delay, why);
}

/* The commit in the hub's answer about a revision (its "sha"); what names the request. */
enum dllm_status dllm_hubfetch_revision_commit(const json_t *doc, const char *what,
                                               char commit[DLLM_HUB_COMMIT_LEN + 1],
                                               struct dllm_error *err)
{
    const char *sha = json_string_value(json_object_get(doc, "sha"));
    if (!sha || !dllm_hub_is_hex(sha, DLLM_HUB_COMMIT_LEN))
        return dllm_error_set(err, DLLM_ERR_FORMAT, "the hub's answer for %s has no commit", what);
    memcpy(commit, sha, DLLM_HUB_COMMIT_LEN + 1);
    return DLLM_OK;
}

/* The commit a revision names on the hub. */
static enum dllm_status fetch_commit(struct dllm_hubfetch *hub, const char *rev,
                                     char commit[DLLM_HUB_COMMIT_LEN + 1], struct dllm_error *err)
{
    char *erev = dllm_hubhttp_escape(&hub->http, rev, false);
    char *url = erev ? dllm_hub_fmt("%s/api/models/%s/revision/%s", hub->http.endpoint,
                                    hub->cache.repo, erev)
                     : NULL;
    char *what = dllm_hub_fmt("%s revision %s", hub->cache.repo, rev);
    json_t *doc = NULL;
    char *next = NULL;
    enum dllm_status st = DLLM_OK;
    if (!url || !what) {
        st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if ((st = dllm_hubhttp_api_get(&hub->http, url, what, &doc, &next, err)) == DLLM_OK)
        st = dllm_hubfetch_revision_commit(doc, what, commit, err);
fail:
    free(next);
    json_decref(doc);
    free(what);
    free(url);
    free(erev);
    return st;
}

/* Adds the files of one page of repo's tree listing; entries with unsafe paths are skipped. */
enum dllm_status dllm_hubfetch_tree_page(const char *repo, const json_t *page,
                                         struct dllm_hub_listing *l, struct dllm_error *err)
{
    if (!json_is_array(page))
        return dllm_error_set(err, DLLM_ERR_FORMAT, "the hub's file listing of %s is not a list",
                              repo);
    size_t i;
    json_t *e;
    json_array_foreach(page, i, e)
    {
        const char *type = json_string_value(json_object_get(e, "type"));
        const char *path = json_string_value(json_object_get(e, "path"));
        json_t *size = json_object_get(e, "size");
        json_t *lfs = json_object_get(e, "lfs");
        if (!type || strcmp(type, "file") != 0 || !path || !dllm_hub_path_valid(path))
            continue;
        if (json_is_object(lfs) && json_is_integer(json_object_get(lfs, "size")))
            size = json_object_get(lfs, "size");
        if (!json_is_integer(size) || json_integer_value(size) < 0)
            return dllm_error_set(err, DLLM_ERR_FORMAT, "%s: no size for %s in the listing", repo,
                                  path);
        struct dllm_hub_file f = {.path = (char *)path, .size = json_integer_value(size)};
        const char *oid = json_string_value(json_object_get(e, "oid"));
        const char *sha = json_string_value(json_object_get(lfs, "oid"));
        if (oid && dllm_hub_is_hex(oid, 40))
            memcpy(f.blob_id, oid, 41);
        if (sha && dllm_hub_is_hex(sha, 64))
            memcpy(f.sha256, sha, 65);
        if (l->n >= TREE_FILES_MAX)
            return dllm_error_set(err, DLLM_ERR_FORMAT, "%s lists more than %d files", repo,
                                  TREE_FILES_MAX);
        enum dllm_status st = dllm_hub_listing_add(l, &f, err);
        if (st != DLLM_OK)
            return st;
    }
    return DLLM_OK;
}

/* The files at commit: the kept trees/<commit>.json, else the hub's listing (then kept). */
static enum dllm_status fetch_tree(struct dllm_hubfetch *hub, const char *commit,
                                   struct dllm_hub_listing *l, struct dllm_error *err)
{
    enum dllm_status st = dllm_hubcache_read_tree(&hub->cache, commit, l, NULL);
    if (st == DLLM_OK)
        return DLLM_OK;
    *l = (struct dllm_hub_listing){0};
    char *url = dllm_hub_fmt("%s/api/models/%s/tree/%s?recursive=true", hub->http.endpoint,
                             hub->cache.repo, commit);
    char *what = dllm_hub_fmt("the file listing of %s", hub->cache.repo);
    st = url && what ? DLLM_OK : dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    for (int page = 0; st == DLLM_OK && url; page++) {
        json_t *doc = NULL;
        char *next = NULL;
        if (page >= TREE_PAGES_MAX)
            st = dllm_error_set(err, DLLM_ERR_FORMAT, "%s: more than %d listing pages",
                                hub->cache.repo, TREE_PAGES_MAX);
        else if ((st = dllm_hubhttp_api_get(&hub->http, url, what, &doc, &next, err)) == DLLM_OK)
            st = dllm_hubfetch_tree_page(hub->cache.repo, doc, l, err);
        /* The token goes along: pages must stay on the hub. */
        if (st == DLLM_OK && next && !dllm_hubhttp_same_origin(&hub->http, next))
            st = dllm_error_set(err, DLLM_ERR_FORMAT,
                                "the hub's listing of %s continues on another host",
                                hub->cache.repo);
        json_decref(doc);
        free(url);
        url = st == DLLM_OK ? next : (free(next), NULL);
    }
    free(url);
    free(what);
    if (st == DLLM_OK) {
        dllm_hub_listing_sort(l);
        dllm_hubcache_mkdirs(hub->cache.dir, NULL);
        dllm_hubcache_tag_root(hub->cache.root);
        st = dllm_hubcache_write_tree(&hub->cache, commit, l, err);
    }
    if (st != DLLM_OK)
        dllm_hub_listing_fini(l);
    return st;
}

enum outcome { OUT_OK, OUT_RETRY, OUT_FAIL };

/* An ETag value without W/ and quotes. */
void dllm_hubfetch_etag_value(const char *v, char *out, size_t n)
{
    if (strncmp(v, "W/", 2) == 0)
        v += 2;
    size_t len = strlen(v);
    if (len >= 2 && v[0] == '"' && v[len - 1] == '"') {
        v++;
        len -= 2;
    }
    snprintf(out, n, "%.*s", (int)len, v);
}

/*
 * HEAD /resolve: follows relative redirects (repo renames), stops at an absolute one (the
 * CDN) and checks X-Repo-Commit, X-Linked-Etag and X-Linked-Size against the listing.
 * *get_url is the URL to download from.
 */
static enum outcome probe(struct dllm_hubfetch *hub, struct fetch *fx, const char *commit,
                          char **get_url, char *why, size_t why_n, double *after,
                          struct dllm_error *err)
{
    struct dllm_hubresp r = {0};
    enum outcome out = OUT_FAIL;
    char *epath = dllm_hubhttp_escape(&hub->http, fx->f->path, true);
    char *url = epath ? dllm_hub_fmt("%s/%s/resolve/%s/%s", hub->http.endpoint, hub->cache.repo,
                                     commit, epath)
                      : NULL;
    *get_url = NULL;
    if (!url) {
        dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (int hops = 0;; hops++) {
        CURLcode rc = dllm_hubhttp_perform(&hub->http, REQ_HEAD, url, &r, NULL);
        if (dllm_hubhttp_cancelled(&hub->http)) {
            dllm_error_set(err, DLLM_ERR_CANCELLED, "cancelled");
            goto fail;
        }
        if (rc != CURLE_OK) {
            dllm_hubhttp_why(&hub->http, rc, why, why_n);
            if (dllm_hubhttp_retryable_curl(rc))
                out = OUT_RETRY;
            else
                dllm_error_set(err, DLLM_ERR_IO, "cannot reach %s: %s", hub->http.endpoint, why);
            goto fail;
        }
        const char *loc = r.h[H_LOCATION];
        if (r.status >= 300 && r.status < 400 && loc) {
            bool absolute = strstr(loc, "://") || strncmp(loc, "//", 2) == 0;
            if (hops >= DLLM_HUBHTTP_REDIRECTS_MAX) {
                dllm_error_set(err, DLLM_ERR_IO, "too many redirects for %s", fx->f->path);
                goto fail;
            }
            char *next;
            if (dllm_hubhttp_resolve_url(url, loc, "a redirect (Location)", &next, err) != DLLM_OK)
                goto fail;
            free(url);
            url = next;
            if (absolute)
                break;
            continue;
        }
        if (r.status == 200)
            break;
        if (dllm_hubhttp_retryable_status(r.status)) {
            snprintf(why, why_n, "HTTP %ld", r.status);
            *after = dllm_hubhttp_retry_after(&r);
            out = OUT_RETRY;
            goto fail;
        }
        dllm_hubhttp_error(&hub->http, &r, fx->f->path, err);
        goto fail;
    }
    /* The last response (the redirect to the CDN, or the file itself) has the metadata. */
    const char *rc_commit = r.h[H_REPO_COMMIT];
    if (!rc_commit) {
        dllm_error_set(err, DLLM_ERR_IO,
                       "%s answered without X-Repo-Commit: it is not a Hugging Face hub (a "
                       "proxy or captive portal?); check HF_ENDPOINT and the network",
                       hub->http.endpoint);
        goto fail;
    }
    if (strcmp(rc_commit, commit) != 0) {
        dllm_error_set(err, DLLM_ERR_FORMAT, "%s: the hub serves commit %.40s for %s, not %s",
                       hub->cache.repo, rc_commit, fx->f->path, commit);
        goto fail;
    }
    const char *etag = r.h[H_LINKED_ETAG] ? r.h[H_LINKED_ETAG] : r.h[H_ETAG];
    const char *size = r.h[H_LINKED_SIZE];
    if (!size && r.status == 200)
        size = r.h[H_CONTENT_LENGTH];
    char tag[128];
    if (etag) {
        dllm_hubfetch_etag_value(etag, tag, sizeof tag);
        if (strcmp(tag, fx->etag) != 0) {
            dllm_error_set(err, DLLM_ERR_FORMAT,
                           "%s: the hub's metadata for %s names content %s, its listing %s",
                           hub->cache.repo, fx->f->path, tag, fx->etag);
            goto fail;
        }
    }
    if (size && strtoll(size, NULL, 10) != fx->f->size) {
        dllm_error_set(err, DLLM_ERR_FORMAT,
                       "%s: the hub's metadata gives %s %s bytes, its listing %lld",
                       hub->cache.repo, fx->f->path, size, (long long)fx->f->size);
        goto fail;
    }
    *get_url = url;
    url = NULL;
    out = OUT_OK;
fail:
    free(url);
    free(epath);
    dllm_hubresp_fini(&r);
    return out;
}

/* Empties the partial file and the hash: the download starts over. */
static bool restart_partial(struct fetch *fx)
{
    if (ftruncate(fx->fd, 0) != 0 || lseek(fx->fd, 0, SEEK_SET) != 0)
        return false;
    fx->have = 0;
    fx->rate_bytes = 0;
    char scratch[65];
    dllm_hubhash_final(&fx->hash, scratch);
    return true;
}

/* Whether a Content-Range "bytes S-E/T" starts at start and totals total. */
bool dllm_hubfetch_range_ok(const char *cr, int64_t start, int64_t total)
{
    long long s, e, t;
    return cr && sscanf(cr, "bytes %lld-%lld/%lld", &s, &e, &t) == 3 && s == start && t == total &&
           e == t - 1;
}

/*
 * Body bytes of a download: checked against the status and Content-Range of their response
 * at the first call, then appended to the partial file and the hash. A write failure cuts the
 * file back to the bytes the hash holds, so the partial file stays a valid prefix.
 */
static size_t on_file(char *data, size_t size, size_t nmemb, void *user)
{
    struct fetch *fx = user;
    const struct dllm_hubresp *r = &fx->r;
    size_t n = size * nmemb;
    if (!fx->started) {
        fx->started = true;
        fx->discard = r->status != 200 && r->status != 206;
        if (r->status == 206 &&
            !dllm_hubfetch_range_ok(r->h[H_CONTENT_RANGE], fx->have, fx->f->size)) {
            fx->bad_range = true;
            return 0;
        }
        if (r->status == 200) {
            const char *cl = r->h[H_CONTENT_LENGTH];
            if (cl && strtoll(cl, NULL, 10) != fx->f->size) {
                fx->overflow = true;
                return 0;
            }
            if (fx->have > 0) {
                /* The server ignored the range: start over cleanly. */
                fx->restarted = true;
                if (!restart_partial(fx)) {
                    fx->write_errno = errno;
                    return 0;
                }
            }
        }
    }
    if (fx->discard)
        return n;
    if ((int64_t)n > fx->f->size - fx->have) {
        fx->overflow = true;
        return 0;
    }
    const char *p = data;
    size_t left = n;
    while (left > 0) {
        ssize_t w = write(fx->fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            fx->write_errno = w < 0 ? errno : EIO;
            if (ftruncate(fx->fd, fx->have) == 0)
                lseek(fx->fd, fx->have, SEEK_SET);
            return 0;
        }
        p += w;
        left -= (size_t)w;
    }
    dllm_hubhash_update(&fx->hash, data, n);
    fx->have += (int64_t)n;
    fx->got += (int64_t)n;
    return n;
}

/* Transfer progress: cancel, and PHASE_DOWNLOAD events. */
static int on_file_progress(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                            curl_off_t ulnow)
{
    struct dllm_hubfetch *hub = user;
    if (dllm_hubhttp_cancelled(&hub->http))
        return 1;
    report(hub, DLLM_HUB_PHASE_DOWNLOAD, hub->cur->have, 0, NULL);
    return 0;
}

/* The error for a failed write into the cache: a full disk says so. */
static enum dllm_status write_error(const struct dllm_hubfetch *hub, const char *partial, int e,
                                    struct dllm_error *err)
{
    if (e == ENOSPC || e == EDQUOT || e == EFBIG)
        return dllm_error_set(err, DLLM_ERR_IO,
                              "the disk holding %s is full (%s): free some space; the partial "
                              "download is kept and the next attempt resumes it",
                              hub->cache.root, strerror(e));
    return dllm_error_set(err, DLLM_ERR_IO, "cannot write %s: %s", partial, strerror(e));
}

/* One GET of the file from url, resuming at fx->have. */
static enum outcome get_file(struct dllm_hubfetch *hub, struct fetch *fx, const char *url,
                             const char *partial, char *why, size_t why_n, double *after,
                             struct dllm_error *err)
{
    fx->started = fx->discard = fx->bad_range = fx->overflow = fx->restarted = false;
    fx->write_errno = 0;
    fx->got = 0;
    int64_t start = fx->have;
    struct dllm_hubsink sink = {on_file, fx, on_file_progress, hub, start};
    CURLcode rc = dllm_hubhttp_perform(&hub->http, REQ_FILE, url, &fx->r, &sink);
    if (dllm_hubhttp_cancelled(&hub->http) || rc == CURLE_ABORTED_BY_CALLBACK) {
        dllm_error_set(err, DLLM_ERR_CANCELLED,
                       "download of %s cancelled; the partial download is kept and the "
                       "next attempt resumes it",
                       fx->f->path);
        return OUT_FAIL;
    }
    if (fx->write_errno) {
        write_error(hub, partial, fx->write_errno, err);
        return OUT_FAIL;
    }
    if (fx->overflow) {
        dllm_error_set(err, DLLM_ERR_FORMAT,
                       "%s: the server sends a different size than the %lld bytes the hub "
                       "lists; nothing was kept",
                       fx->f->path, (long long)fx->f->size);
        return OUT_FAIL;
    }
    if (fx->bad_range) {
        snprintf(why, why_n, "wrong Content-Range for bytes %lld-", (long long)start);
        return restart_partial(fx) ? OUT_RETRY : (write_error(hub, partial, errno, err), OUT_FAIL);
    }
    if (fx->r.status == 416) {
        /* The partial is stale or already whole: whole is checked by the caller. */
        if (fx->have == fx->f->size)
            return OUT_OK;
        snprintf(why, why_n, "HTTP 416 for bytes %lld-: starting over", (long long)start);
        fx->restarted = true;
        return restart_partial(fx) ? OUT_RETRY : (write_error(hub, partial, errno, err), OUT_FAIL);
    }
    if (rc == CURLE_PARTIAL_FILE || (rc == CURLE_RECV_ERROR && fx->got > 0)) {
        snprintf(why, why_n, "the connection closed at byte %lld of %lld", (long long)fx->have,
                 (long long)fx->f->size);
        return OUT_RETRY;
    }
    if (rc != CURLE_OK) {
        dllm_hubhttp_why(&hub->http, rc, why, why_n);
        if (dllm_hubhttp_retryable_curl(rc))
            return OUT_RETRY;
        char *host = dllm_hubhttp_host(url);
        dllm_error_set(err, DLLM_ERR_IO, "downloading %s from %s: %s", fx->f->path, host, why);
        free(host);
        return OUT_FAIL;
    }
    if (dllm_hubhttp_retryable_status(fx->r.status)) {
        snprintf(why, why_n, "HTTP %ld", fx->r.status);
        *after = dllm_hubhttp_retry_after(&fx->r);
        return OUT_RETRY;
    }
    if (fx->r.status != 200 && fx->r.status != 206) {
        dllm_hubhttp_error(&hub->http, &fx->r, fx->f->path, err);
        return OUT_FAIL;
    }
    if (fx->have < fx->f->size) {
        snprintf(why, why_n, "the connection closed at byte %lld of %lld", (long long)fx->have,
                 (long long)fx->f->size);
        return OUT_RETRY;
    }
    return OUT_OK;
}

/* Fails when the disk holding dir has less than need bytes free. */
static enum dllm_status check_space(const struct dllm_hubfetch *hub, const char *dir, int64_t need,
                                    const char *file, struct dllm_error *err)
{
    struct statvfs sv;
    if (need <= 0 || statvfs(dir, &sv) != 0)
        return DLLM_OK;
    int64_t avail = (int64_t)sv.f_bavail * (int64_t)sv.f_frsize;
    if (avail >= need)
        return DLLM_OK;
    return dllm_error_set(err, DLLM_ERR_IO,
                          "not enough free space for %s: it needs %.1f MB more, %s has %.1f MB "
                          "free; free some space or point HF_HUB_CACHE at another disk",
                          file, need / 1e6, hub->cache.root, avail / 1e6);
}

/*
 * Downloads one file into blobs/<etag>: resumes a partial download (its prefix hashed
 * first), retries with backoff, and renames it into place only when size and hash match.
 * The blob's lock is held by the caller.
 */
static enum dllm_status download(struct dllm_hubfetch *hub, struct fetch *fx, const char *commit,
                                 struct dllm_error *err)
{
    enum dllm_status st = DLLM_OK;
    char *blobs = dllm_hub_fmt("%s/blobs", hub->cache.dir);
    char *partial = dllm_hubcache_partial(&hub->cache, fx->etag);
    char *blob = dllm_hubcache_blob(&hub->cache, fx->etag);
    char *url = NULL;
    char why[CURL_ERROR_SIZE + 64];
    fx->fd = -1;
    if (!blobs || !partial || !blob) {
        st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if ((st = dllm_hubcache_mkdirs(blobs, err)) != DLLM_OK)
        goto fail;
    dllm_hubcache_tag_root(hub->cache.root);
    fx->fd = open(partial, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fx->fd < 0) {
        st = dllm_error_set(err, DLLM_ERR_IO, "cannot create %s: %s", partial, strerror(errno));
        goto fail;
    }
    off_t len = lseek(fx->fd, 0, SEEK_END);
    fx->have = len > 0 ? len : 0;
    if (fx->have > fx->f->size && !restart_partial(fx)) {
        st = write_error(hub, partial, errno, err);
        goto fail;
    }
    if (fx->have > 0) {
        /* Resume: the hash needs the bytes already there. */
        if ((st = dllm_hubhash_file(&fx->hash, partial, fx->have, check_tick, hub, err)) != DLLM_OK)
            goto fail;
    }
    if ((st = check_space(hub, blobs, fx->f->size - fx->have, fx->f->path, err)) != DLLM_OK)
        goto fail;
    int failures = 0, restarts = 0, mismatches = 0;
    for (;;) {
        double after = 0;
        enum outcome out = OUT_OK;
        why[0] = 0;
        if (fx->have < fx->f->size) {
            fx->attempt++;
            free(url);
            out = probe(hub, fx, commit, &url, why, sizeof why, &after, err);
            if (out == OUT_OK)
                out = get_file(hub, fx, url, partial, why, sizeof why, &after, err);
            hub->downloaded += fx->got;
        }
        if (out == OUT_FAIL) {
            st = err ? err->status : DLLM_ERR_IO;
            if (st == DLLM_ERR_FORMAT)
                unlink(partial);
            goto fail;
        }
        if (out == OUT_OK) {
            char got[65];
            dllm_hubhash_final(&fx->hash, got);
            if (strcmp(got, fx->etag) == 0)
                break;
            if (++mismatches > 1) {
                unlink(partial);
                st = dllm_error_set(err, DLLM_ERR_FORMAT,
                                    "%s: %s mismatch after downloading twice (expected %s, got "
                                    "%s); the download was deleted: the file on the hub, or a "
                                    "proxy on the way, is corrupt",
                                    fx->f->path, strlen(fx->etag) == 40 ? "SHA-1" : "SHA-256",
                                    fx->etag, got);
                goto fail;
            }
            snprintf(why, sizeof why, "the content hash is wrong: downloading again");
            if (!restart_partial(fx)) {
                st = write_error(hub, partial, errno, err);
                goto fail;
            }
        }
        /* Another attempt. Failures count in a row without new bytes; restarts in all. */
        failures = fx->got > 0 && !fx->restarted ? 1 : failures + 1;
        restarts += fx->restarted;
        if (failures > hub->p->max_retries || restarts > hub->p->max_retries) {
            st = dllm_error_set(err, DLLM_ERR_IO,
                                "downloading %s failed %d times (%s); the partial download is "
                                "kept and the next attempt resumes it",
                                fx->f->path, failures, why);
            goto fail;
        }
        if ((st = dllm_hubhttp_backoff(&hub->http, failures, after, why, err)) != DLLM_OK)
            goto fail;
    }
    if (fsync(fx->fd) != 0) {
        st = write_error(hub, partial, errno, err);
        goto fail;
    }
    close(fx->fd);
    fx->fd = -1;
    if (rename(partial, blob) != 0) {
        st = dllm_error_set(err, DLLM_ERR_IO, "cannot rename %s to %s: %s", partial, blob,
                            strerror(errno));
        goto fail;
    }
    dllm_hubcache_sync_parent(blob);
    dllm_hubmemo_add(hub->memo, blob, fx->etag);
fail:
    if (fx->fd >= 0)
        close(fx->fd);
    free(url);
    free(blob);
    free(partial);
    free(blobs);
    return st;
}

/*
 * Checks a cached copy of a file: its size, then the verified memo or a full hash (shown as
 * PHASE_CHECK) recorded in the memo. DLLM_ERR_FORMAT when it does not match.
 */
static enum dllm_status verify_cached(struct dllm_hubfetch *hub, struct fetch *fx, const char *path,
                                      struct dllm_error *err)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return dllm_error_set(err, DLLM_ERR_MISSING, "%s is gone", path);
    if (sb.st_size != fx->f->size)
        return dllm_error_set(err, DLLM_ERR_FORMAT, "%s has %lld bytes, the hub lists %lld",
                              fx->f->path, (long long)sb.st_size, (long long)fx->f->size);
    if (dllm_hubmemo_check(hub->memo, path, fx->etag))
        return DLLM_OK;
    enum dllm_status st = dllm_hubhash_file(&fx->hash, path, -1, check_tick, hub, err);
    if (st != DLLM_OK)
        return st;
    char got[65];
    dllm_hubhash_final(&fx->hash, got);
    if (strcmp(got, fx->etag) != 0)
        return dllm_error_set(err, DLLM_ERR_FORMAT, "%s does not match the hub's hash %s",
                              fx->f->path, fx->etag);
    dllm_hubmemo_add(hub->memo, path, fx->etag);
    return DLLM_OK;
}

/* Deletes a corrupt cached file: the snapshot entry and the blob it used. */
static void drop_corrupt(struct dllm_hubfetch *hub, const char *snap, const char *blob)
{
    unlink(snap);
    unlink(blob);
}

/*
 * Makes snapshots/<commit>/<path> a verified copy of the file: from the snapshot itself, a
 * blob already there, or a download. Offline, only the first two.
 */
static enum dllm_status fetch_one(struct dllm_hubfetch *hub, struct fetch *fx, const char *commit,
                                  char **snap_out, struct dllm_error *err)
{
    enum dllm_status st = DLLM_OK;
    char *snap = dllm_hubcache_snapshot(&hub->cache, commit, fx->f->path);
    char *blob = dllm_hubcache_blob(&hub->cache, fx->etag);
    int lock = -1;
    struct stat sb;
    if (!snap || !blob) {
        st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    /* Nothing is read, replaced or deleted through a link that leaves the cache. */
    if (!dllm_hubcache_inside(&hub->cache, snap)) {
        st = dllm_error_set(err, DLLM_ERR_IO,
                            "%s: the cache entry %s leads out of the cache through a link; "
                            "remove that link and the file is downloaded again",
                            hub->cache.repo, snap);
        goto fail;
    }
    if (!fx->etag[0]) {
        /* No hash known (a snapshot without a kept listing): usable, not verifiable. */
        if (!hub->offline || stat(snap, &sb) != 0) {
            st = dllm_error_set(err, DLLM_ERR_MISSING, "%s: no hash is known for %s",
                                hub->cache.repo, fx->f->path);
            goto fail;
        }
        warn(hub, "%s could not be verified (no file listing in the cache)", fx->f->path);
        goto done;
    }
    if ((st = dllm_hubhash_init(&fx->hash, fx->etag, fx->f->size, err)) != DLLM_OK)
        goto fail;
    if (stat(snap, &sb) == 0) {
        st = verify_cached(hub, fx, snap, err);
        if (st == DLLM_OK)
            goto done;
        if (st != DLLM_ERR_FORMAT)
            goto fail;
        drop_corrupt(hub, snap, blob);
        if (hub->offline) {
            dllm_error_prefix(err, "the cached copy was corrupt and is deleted");
            goto fail;
        }
        warn(hub, "the cached %s was corrupt and was downloaded again", fx->f->path);
    }
    if (hub->offline && stat(blob, &sb) != 0) {
        st = dllm_error_set(err, DLLM_ERR_MISSING,
                            "%s of %s is not in the cache (%s) and the hub is not used "
                            "(offline)",
                            fx->f->path, hub->cache.repo, hub->cache.root);
        goto fail;
    }
    if ((st = dllm_hubcache_lock(&hub->cache, fx->etag, check_tick, hub, &lock, err)) != DLLM_OK)
        goto fail;
    /* A blob already there (another snapshot, or another process just finished it). */
    if (stat(blob, &sb) == 0) {
        st = verify_cached(hub, fx, blob, err);
        if (st == DLLM_ERR_FORMAT && !hub->offline) {
            unlink(blob);
            st = DLLM_OK;
        } else if (st != DLLM_OK) {
            goto fail;
        }
    }
    if (stat(blob, &sb) != 0 && (st = download(hub, fx, commit, err)) != DLLM_OK)
        goto fail;
    if ((st = dllm_hubcache_link(&hub->cache, commit, fx->f->path, fx->etag, err)) != DLLM_OK)
        goto fail;
    dllm_hubmemo_add(hub->memo, snap, fx->etag);
done:
    report(hub, DLLM_HUB_PHASE_DONE, fx->f->size, 0, NULL);
    *snap_out = snap;
    snap = NULL;
fail:
    dllm_hubcache_unlock(lock);
    if (fx->hash.ctx)
        dllm_hubhash_fini(&fx->hash);
    free(blob);
    free(snap);
    return st;
}

/* Starts a session for repo with the parameters (or the defaults when NULL). */
static enum dllm_status hub_init(struct dllm_hubfetch *hub, const char *repo,
                                 const struct dllm_hub_params *p, struct dllm_error *err)
{
    *hub = (struct dllm_hubfetch){.p = p};
    char *root = dllm_hubcache_root(p);
    if (!root)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    hub->offline = p->offline;
    enum dllm_status st = dllm_hubcache_init(&hub->cache, root, repo, err);
    if (st != DLLM_OK)
        goto fail;
    hub->cache.copies = p->no_symlinks;
    if ((st = dllm_hubhttp_init(&hub->http, p, hub->cache.repo, err)) != DLLM_OK)
        goto fail;
    hub->http.on_retry = on_retry;
    hub->http.retry_user = hub;
    if (!p->revision || !dllm_hub_path_valid(p->revision)) {
        st = dllm_error_set(err, DLLM_ERR_ARG, "invalid revision '%s'",
                            p->revision ? p->revision : "(null)");
        goto fail;
    }
    hub->memo = dllm_hubmemo_load(p);
    if (!hub->offline)
        st = dllm_hubhttp_connect(&hub->http, err);
fail:
    free(root);
    return st;
}

/* Frees what a session holds (not the session itself). */
static void hub_fini(struct dllm_hubfetch *hub)
{
    dllm_hubhttp_fini(&hub->http);
    dllm_hubmemo_free(hub->memo);
    dllm_hubcache_fini(&hub->cache);
    free(hub->warning);
}

/*
 * The commit and file listing from the cache alone: the revision through refs/, the kept
 * listing, else the files of the snapshot (hashes from the blob names).
 */
static enum dllm_status cached_listing(struct dllm_hubfetch *hub,
                                       char commit[DLLM_HUB_COMMIT_LEN + 1],
                                       struct dllm_hub_listing *l, struct dllm_error *err)
{
    const char *rev = hub->p->revision;
    enum dllm_status st = DLLM_OK;
    if (dllm_hub_is_hex(rev, DLLM_HUB_COMMIT_LEN))
        memcpy(commit, rev, DLLM_HUB_COMMIT_LEN + 1);
    else if ((st = dllm_hubcache_read_ref(&hub->cache, rev, commit, err)) != DLLM_OK)
        return st;
    st = dllm_hubcache_read_tree(&hub->cache, commit, l, err);
    if (st == DLLM_ERR_MISSING) {
        st = dllm_hubcache_scan(&hub->cache, commit, l, err);
        if (st == DLLM_OK)
            dllm_hub_listing_sort(l);
    }
    return st;
}

enum dllm_status dllm_hubfetch_listing(struct dllm_hubfetch *hub,
                                       char commit[DLLM_HUB_COMMIT_LEN + 1],
                                       struct dllm_hub_listing *l, struct dllm_error *err)
{
    const char *rev = hub->p->revision;
    enum dllm_status st = DLLM_OK;
    if (!hub->offline) {
        if (dllm_hub_is_hex(rev, DLLM_HUB_COMMIT_LEN))
            memcpy(commit, rev, DLLM_HUB_COMMIT_LEN + 1);
        else
            st = fetch_commit(hub, rev, commit, err);
        if (st == DLLM_OK && (st = fetch_tree(hub, commit, l, err)) == DLLM_OK)
            return DLLM_OK;
        if (!hub->http.unreachable)
            return st;
    }
    char why[DLLM_ERROR_TEXT_MAX];
    snprintf(why, sizeof why, "%s", err && !hub->offline ? err->text : "");
    enum dllm_status cst = cached_listing(hub, commit, l, NULL);
    if (cst == DLLM_OK) {
        if (!hub->offline)
            warn(hub, "the hub cannot be reached (%s); using the cached snapshot %.7s", why,
                 commit);
        hub->offline = true;
        return DLLM_OK;
    }
    if (!hub->offline)
        return st;
    return dllm_error_set(err, DLLM_ERR_MISSING,
                          "%s is not in the cache (%s) and the hub is not used (offline)",
                          hub->cache.repo, hub->cache.root);
}

enum dllm_status dllm_hubfetch_open(const char *repo, const struct dllm_hub_params *params,
                                    struct dllm_hubfetch **out, struct dllm_error *err)
{
    *out = NULL;
    struct dllm_hubfetch *hub = calloc(1, sizeof *hub);
    if (!hub)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    enum dllm_status st = hub_init(hub, repo, params, err);
    if (st != DLLM_OK) {
        dllm_hubfetch_close(hub);
        return st;
    }
    *out = hub;
    return DLLM_OK;
}

void dllm_hubfetch_close(struct dllm_hubfetch *hub)
{
    if (!hub)
        return;
    if (hub->memo)
        dllm_hubmemo_save(hub->memo, NULL);
    hub_fini(hub);
    free(hub);
}

enum dllm_status dllm_hubfetch_file(struct dllm_hubfetch *hub, const struct dllm_hub_file *file,
                                    int index, int n_files, const char *commit, char **path,
                                    struct dllm_error *err)
{
    struct fetch fx = {.f = file, .index = index, .n_files = n_files};
    fx.etag = dllm_hub_file_etag(file);
    hub->cur = &fx;
    enum dllm_status st = fetch_one(hub, &fx, commit, path, err);
    dllm_hubresp_fini(&fx.r);
    hub->cur = NULL;
    return st;
}

enum dllm_status dllm_hubfetch_finish(struct dllm_hubfetch *hub, const char *commit,
                                      struct dllm_error *err)
{
    if (hub->offline || strcmp(hub->p->revision, commit) == 0)
        return DLLM_OK;
    return dllm_hubcache_write_ref(&hub->cache, hub->p->revision, commit, err);
}

int64_t dllm_hubfetch_downloaded(const struct dllm_hubfetch *hub)
{
    return hub->downloaded;
}

char *dllm_hubfetch_take_warning(struct dllm_hubfetch *hub)
{
    char *w = hub->warning;
    hub->warning = NULL;
    return w;
}
