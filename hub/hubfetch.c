/*
 * Fetching from the Hugging Face hub for one repo (shared/docs/hub.md 1.2 to 1.9b): the HTTP
 * session, the revision and file listing, and verified, resumable downloads into the cache.
 *
 * The revision is resolved to a commit (/api/models/{repo}/revision/{rev}) and the files are
 * listed with their sizes and hashes (/api/models/{repo}/tree/{commit}, following Link
 * pagination). Each file is probed with HEAD /{repo}/resolve/{commit}/{path} without following
 * absolute redirects, then fetched from the Location it names, with the token sent only to the
 * hub's own origin. Bytes go to blobs/<etag>.incomplete and into a hash as they arrive; the
 * file is renamed into blobs/ only when its size and hash match the listing.
 */
#include "config.h"

#include "hubfetch.h"

#include "dllm-hub.h"
#include "hubcache.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_ENDPOINT "https://huggingface.co"
#define USER_AGENT       "dllm/" PACKAGE_VERSION
#define API_BODY_MAX     (64 << 20) /* bytes of one API answer */
#define TREE_PAGES_MAX   1000
#define TREE_FILES_MAX   200000
#define REDIRECTS_MAX    10
#define RETRY_AFTER_MAX  300.0 /* seconds of Retry-After honoured */
#define BACKOFF_MAX      60.0  /* seconds */
#define REPORT_INTERVAL  0.1   /* seconds between progress events */
/* ---- session state and progress --------------------------------------------------------- */

/* The response headers dllm reads, of the last response of a request. */
enum hdr {
    H_LOCATION,
    H_REPO_COMMIT,
    H_LINKED_ETAG,
    H_LINKED_SIZE,
    H_ETAG,
    H_CONTENT_LENGTH,
    H_CONTENT_RANGE,
    H_RETRY_AFTER,
    H_LINK,
    H_ERROR_CODE,
    H_COUNT
};
static const char *const hdr_names[H_COUNT] = {
    "location",       "x-repo-commit", "x-linked-etag", "x-linked-size", "etag",
    "content-length", "content-range", "retry-after",   "link",          "x-error-code"};

struct resp {
    long status;
    char *h[H_COUNT];
    char *body; /* API answers */
    size_t len, cap;
};

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
    struct resp r; /* the response of the current request */
};

/* A session with the hub for one repo. */
struct dllm_hubfetch {
    const struct dllm_hub_params *p;
    const char *ref; /* as the user wrote it, for messages */
    char *endpoint;  /* without a trailing '/' */
    char *origin;    /* scheme://host:port of the endpoint */
    char *token;     /* NULL when none */
    bool offline;
    bool unreachable; /* the last API failure was the network, not an answer */
    CURL *curl;
    char curl_err[CURL_ERROR_SIZE];
    struct dllm_hubcache cache;
    struct dllm_hubmemo *memo;
    struct fetch *cur; /* the file being fetched, for progress */
    char *warning;
    int64_t downloaded;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static bool cancelled(const struct dllm_hubfetch *hub)
{
    return hub->p->cancel && *hub->p->cancel;
}

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
    char *w = hub->warning ? dllm_hubcache_fmt("%s; %s", hub->warning, text) : strdup(text);
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
    double t = now_s();
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
    struct dllm_hub_progress pr = {
        .phase = phase,
        .repo = hub->cache.repo,
        .file = fx ? fx->f->path : "",
        .file_index = fx ? fx->index : 0,
        .n_files = fx ? fx->n_files : 0,
        .bytes = bytes,
        .total = fx ? fx->f->size : 0,
        .rate = fx ? fx->rate : 0,
        .attempt = fx ? fx->attempt : 0,
        .retry_in = retry_in,
        .why = why ? why : "",
    };
    hub->p->progress(&pr, hub->p->user);
}

/* Hashing progress: reports PHASE_CHECK (or PHASE_WAIT for done < 0); false when cancelled. */
static bool check_tick(void *user, int64_t done)
{
    struct dllm_hubfetch *hub = user;
    report(hub, done < 0 ? DLLM_HUB_PHASE_WAIT : DLLM_HUB_PHASE_CHECK, done < 0 ? 0 : done, 0,
           NULL);
    return !cancelled(hub);
}

/* ---- HTTP ------------------------------------------------------------------------------- */

static void resp_clear_headers(struct resp *r)
{
    for (int i = 0; i < H_COUNT; i++) {
        free(r->h[i]);
        r->h[i] = NULL;
    }
}

static void resp_fini(struct resp *r)
{
    resp_clear_headers(r);
    free(r->body);
    *r = (struct resp){0};
}

/* Keeps the headers dllm reads; a status line starts a new response (a redirect's). */
static size_t on_header(char *data, size_t size, size_t nmemb, void *user)
{
    struct resp *r = user;
    size_t n = size * nmemb;
    if (n >= 5 && strncmp(data, "HTTP/", 5) == 0) {
        resp_clear_headers(r);
        const char *sp = memchr(data, ' ', n);
        r->status = sp ? strtol(sp + 1, NULL, 10) : 0;
        return n;
    }
    const char *colon = memchr(data, ':', n);
    if (!colon)
        return n;
    size_t name_len = (size_t)(colon - data);
    for (int i = 0; i < H_COUNT; i++) {
        if (strlen(hdr_names[i]) != name_len || strncasecmp(data, hdr_names[i], name_len) != 0)
            continue;
        const char *v = colon + 1, *end = data + n;
        while (v < end && (*v == ' ' || *v == '\t'))
            v++;
        while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
            end--;
        free(r->h[i]);
        r->h[i] = strndup(v, (size_t)(end - v));
    }
    return n;
}

/* Collects an API answer's body, up to API_BODY_MAX. */
static size_t on_body(char *data, size_t size, size_t nmemb, void *user)
{
    struct resp *r = user;
    size_t n = size * nmemb;
    if (r->len + n + 1 > API_BODY_MAX)
        return 0;
    if (r->len + n + 1 > r->cap) {
        size_t cap = r->cap ? r->cap : 4096;
        while (cap < r->len + n + 1)
            cap *= 2;
        char *b = realloc(r->body, cap);
        if (!b)
            return 0;
        r->body = b;
        r->cap = cap;
    }
    memcpy(r->body + r->len, data, n);
    r->len += n;
    r->body[r->len] = 0;
    return n;
}

/* Cancel for metadata requests. */
static int on_api_progress(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                           curl_off_t ulnow)
{
    return cancelled(user) ? 1 : 0;
}

/* "scheme://host:port" of a URL (lowercase host, default port filled in), or NULL. */
static char *origin_of(const char *url)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL, *out = NULL;
    if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK) {
        for (char *p = host; *p; p++)
            *p = (char)tolower((unsigned char)*p);
        out = dllm_hubcache_fmt("%s://%s:%s", scheme, host, port);
    }
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);
    return out;
}

/* Whether url is on the hub's own origin, where the token may go. */
static bool same_origin(const struct dllm_hubfetch *hub, const char *url)
{
    char *o = origin_of(url);
    bool same = o && strcmp(o, hub->origin) == 0;
    free(o);
    return same;
}

/* url resolved against base (for relative Location and Link values), or NULL. */
static char *resolve_url(const char *base, const char *rel)
{
    CURLU *u = curl_url();
    char *full = NULL, *out = NULL;
    if (u && curl_url_set(u, CURLUPART_URL, base, 0) == CURLUE_OK &&
        curl_url_set(u, CURLUPART_URL, rel, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_URL, &full, 0) == CURLUE_OK)
        out = strdup(full);
    curl_free(full);
    curl_url_cleanup(u);
    return out;
}

/* The host of a URL for messages: never the query, which may hold a signature. */
static char *host_of(const char *url)
{
    CURLU *u = curl_url();
    char *host = NULL, *out = NULL;
    if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK)
        out = strdup(host);
    curl_free(host);
    curl_url_cleanup(u);
    return out ? out : strdup("?");
}

enum req_kind { REQ_API, REQ_HEAD, REQ_FILE };

/* Sends one request with the session's settings; the curl result. */
static CURLcode
perform(struct dllm_hubfetch *hub, enum req_kind kind, const char *url, struct resp *r,
        struct fetch *fx, size_t (*on_file)(char *, size_t, size_t, void *),
        int (*on_file_progress)(void *, curl_off_t, curl_off_t, curl_off_t, curl_off_t))
{
    CURL *c = hub->curl;
    struct curl_slist *headers = NULL;
    char *auth = NULL;
    resp_clear_headers(r);
    r->status = 0;
    r->len = 0;
    curl_easy_reset(c);
    hub->curl_err[0] = 0;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_USERAGENT, USER_AGENT);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, hub->curl_err);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, (long)hub->p->connect_timeout_s);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (long)hub->p->stall_seconds);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    if (hub->token && same_origin(hub, url)) {
        auth = dllm_hubcache_fmt("Authorization: Bearer %s", hub->token);
        headers = curl_slist_append(headers, auth);
    }
    if (kind == REQ_FILE) {
        /* The signed URL may redirect again; libcurl keeps custom Authorization headers
         * to the original host (CURLOPT_UNRESTRICTED_AUTH stays off). */
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
        curl_easy_setopt(c, CURLOPT_MAXREDIRS, (long)REDIRECTS_MAX);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_file);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, fx);
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_file_progress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, hub);
        if (fx->have > 0) {
            char range[32];
            snprintf(range, sizeof range, "%lld-", (long long)fx->have);
            curl_easy_setopt(c, CURLOPT_RANGE, range);
        }
    } else {
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_api_progress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, hub);
        curl_easy_setopt(c, CURLOPT_NOBODY, kind == REQ_HEAD ? 1L : 0L);
        headers = curl_slist_append(headers, "Accept-Encoding: identity");
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    CURLcode rc = curl_easy_perform(c);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(headers);
    if (auth) {
        OPENSSL_cleanse(auth, strlen(auth));
        free(auth);
    }
    return rc;
}

/* Whether a transfer error is worth another attempt. */
static bool retryable_curl(CURLcode rc)
{
    switch (rc) {
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_PARTIAL_FILE:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM: return true;
    default: return false;
    }
}

static bool retryable_status(long status)
{
    return status == 408 || status == 429 || status >= 500;
}

/* One line on a failed transfer: the stall, or libcurl's detail. */
static void curl_why(const struct dllm_hubfetch *hub, CURLcode rc, char *why, size_t n)
{
    if (rc == CURLE_OPERATION_TIMEDOUT && strstr(hub->curl_err, "too slow"))
        snprintf(why, n, "stalled: no data for %d s", hub->p->stall_seconds);
    else
        snprintf(why, n, "%s", hub->curl_err[0] ? hub->curl_err : curl_easy_strerror(rc));
}

/* Retry-After in seconds (the delay form), or 0. */
static double retry_after(const struct resp *r)
{
    const char *v = r->h[H_RETRY_AFTER];
    if (!v)
        return 0;
    char *end;
    double s = strtod(v, &end);
    return end != v && s > 0 ? (s < RETRY_AFTER_MAX ? s : RETRY_AFTER_MAX) : 0;
}

/*
 * Waits before another attempt (Retry-After when given, else the doubling backoff), reporting
 * PHASE_RETRY; DLLM_ERR_CANCELLED when cancelled meanwhile.
 */
static enum dllm_status backoff(struct dllm_hubfetch *hub, int failures, double after,
                                const char *why, struct dllm_error *err)
{
    double delay = after;
    if (delay <= 0) {
        delay = hub->p->retry_base_ms / 1000.0;
        for (int i = 1; i < failures && delay < BACKOFF_MAX; i++)
            delay *= 2;
        if (delay > BACKOFF_MAX)
            delay = BACKOFF_MAX;
    }
    report(hub, DLLM_HUB_PHASE_RETRY, hub->cur ? hub->cur->have : 0, delay, why);
    double end = now_s() + delay;
    while (now_s() < end) {
        if (cancelled(hub))
            return dllm_error_set(err, DLLM_ERR_CANCELLED, "cancelled");
        double left = end - now_s();
        long ns = left > 0.05 ? 50000000L : (long)(left * 1e9);
        if (ns > 0)
            nanosleep(&(struct timespec){0, ns}, NULL);
    }
    return DLLM_OK;
}

/* The error for an HTTP answer that is not retried: what it means for the user. */
static enum dllm_status http_error(const struct dllm_hubfetch *hub, const struct resp *r,
                                   const char *what, struct dllm_error *err)
{
    const char *repo = hub->cache.repo;
    const char *code = r->h[H_ERROR_CODE] ? r->h[H_ERROR_CODE] : "";
    switch (r->status) {
    case 401:
        if (hub->token)
            return dllm_error_set(err, DLLM_ERR_IO,
                                  "HTTP 401 for %s: the hub refused the token, or %s does not "
                                  "exist: check the name and the token (HF_TOKEN or "
                                  "$HF_HOME/token)",
                                  what, repo);
        return dllm_error_set(err, DLLM_ERR_IO,
                              "HTTP 401 for %s: %s does not exist, or it is private or gated: "
                              "check the name; if it is gated, accept its licence at %s/%s "
                              "and set HF_TOKEN to an access token",
                              what, repo, hub->endpoint, repo);
    case 403:
        return dllm_error_set(err, DLLM_ERR_IO,
                              "HTTP 403 for %s: %s is gated or the token may not read it: "
                              "accept its licence at %s/%s with the account of the token in "
                              "HF_TOKEN (or $HF_HOME/token)",
                              what, repo, hub->endpoint, repo);
    case 404:
        if (strcmp(code, "RepoNotFound") == 0)
            return dllm_error_set(err, DLLM_ERR_MISSING, "%s: no such repo on %s", repo,
                                  hub->endpoint);
        if (strcmp(code, "RevisionNotFound") == 0)
            return dllm_error_set(err, DLLM_ERR_MISSING, "%s has no revision '%s'", repo,
                                  hub->p->revision);
        if (strcmp(code, "EntryNotFound") == 0)
            return dllm_error_set(err, DLLM_ERR_MISSING, "%s: %s does not exist", repo, what);
        return dllm_error_set(err, DLLM_ERR_MISSING, "HTTP 404 for %s", what);
    default: return dllm_error_set(err, DLLM_ERR_IO, "HTTP %ld for %s", r->status, what);
    }
}

/*
 * GETs an API URL and parses the JSON answer, retrying network failures, 408, 429 and 5xx.
 * next receives the Link rel="next" URL when there is one. Sets hub->unreachable when the
 * failure was the network or the server's health rather than an answer.
 */
static enum dllm_status api_get(struct dllm_hubfetch *hub, const char *url, const char *what,
                                json_t **out, char **next, struct dllm_error *err)
{
    struct resp r = {0};
    enum dllm_status st = DLLM_OK;
    char why[CURL_ERROR_SIZE + 32];
    *out = NULL;
    hub->unreachable = false;
    for (int failures = 1;; failures++) {
        CURLcode rc = perform(hub, REQ_API, url, &r, NULL, NULL, NULL);
        if (cancelled(hub)) {
            st = dllm_error_set(err, DLLM_ERR_CANCELLED, "cancelled");
            goto fail;
        }
        double after = 0;
        if (rc != CURLE_OK) {
            curl_why(hub, rc, why, sizeof why);
            /* A refused or unresolvable host gets one more try: offline use should not wait. */
            int limit = rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST
                            ? 1
                            : hub->p->max_retries;
            if (!retryable_curl(rc) || failures > limit) {
                hub->unreachable = retryable_curl(rc);
                st = dllm_error_set(err, DLLM_ERR_IO, "cannot reach %s for %s: %s", hub->endpoint,
                                    what, why);
                goto fail;
            }
        } else if (retryable_status(r.status)) {
            snprintf(why, sizeof why, "HTTP %ld", r.status);
            after = retry_after(&r);
            if (failures > hub->p->max_retries) {
                hub->unreachable = true;
                st = dllm_error_set(err, DLLM_ERR_IO, "HTTP %ld from %s for %s, %d times", r.status,
                                    hub->endpoint, what, failures);
                goto fail;
            }
        } else if (r.status != 200) {
            st = http_error(hub, &r, what, err);
            goto fail;
        } else {
            break;
        }
        if ((st = backoff(hub, failures, after, why, err)) != DLLM_OK)
            goto fail;
    }
    json_error_t jerr;
    *out = json_loadb(r.body ? r.body : "", r.len, 0, &jerr);
    if (!*out) {
        st = dllm_error_set(err, DLLM_ERR_FORMAT, "malformed JSON from %s for %s: %s",
                            hub->endpoint, what, jerr.text);
        goto fail;
    }
    *next = NULL;
    /* Link: <url>; rel="next", possibly among other links. */
    for (const char *p = r.h[H_LINK]; p && (p = strchr(p, '<'));) {
        const char *end = strchr(p, '>');
        if (!end)
            break;
        const char *stop = strchr(end, ',');
        size_t rest = stop ? (size_t)(stop - end) : strlen(end);
        char *params = strndup(end, rest);
        if (params && (strstr(params, "rel=\"next\"") || strstr(params, "rel=next"))) {
            char *rel = strndup(p + 1, (size_t)(end - p - 1));
            *next = rel ? resolve_url(url, rel) : NULL;
            free(rel);
            free(params);
            if (!*next) {
                st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
                goto fail;
            }
            break;
        }
        free(params);
        p = end;
    }
fail:
    if (st != DLLM_OK) {
        json_decref(*out);
        *out = NULL;
    }
    resp_fini(&r);
    return st;
}

/* A percent-encoded copy of s; with keep_slash, '/' stays as it is. */
static char *escape(CURL *c, const char *s, bool keep_slash)
{
    size_t cap = 3 * strlen(s) + 1, used = 0;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    while (*s) {
        size_t n = keep_slash ? strcspn(s, "/") : strlen(s);
        char *e = curl_easy_escape(c, s, (int)n);
        if (!e) {
            free(out);
            return NULL;
        }
        used += (size_t)snprintf(out + used, cap - used, "%s", e);
        curl_free(e);
        s += n;
        if (*s == '/') {
            out[used++] = '/';
            out[used] = 0;
            s++;
        }
    }
    out[used] = 0;
    return out;
}

/* ---- metadata --------------------------------------------------------------------------- */

/* The commit a revision names on the hub. */
static enum dllm_status fetch_commit(struct dllm_hubfetch *hub, const char *rev,
                                     char commit[DLLM_HUB_COMMIT_LEN + 1], struct dllm_error *err)
{
    char *erev = escape(hub->curl, rev, false);
    char *url = erev ? dllm_hubcache_fmt("%s/api/models/%s/revision/%s", hub->endpoint,
                                         hub->cache.repo, erev)
                     : NULL;
    char *what = dllm_hubcache_fmt("%s revision %s", hub->cache.repo, rev);
    json_t *doc = NULL;
    char *next = NULL;
    enum dllm_status st = DLLM_OK;
    if (!url || !what) {
        st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if ((st = api_get(hub, url, what, &doc, &next, err)) != DLLM_OK)
        goto fail;
    const char *sha = json_string_value(json_object_get(doc, "sha"));
    if (!sha || !dllm_hubcache_is_hex(sha, DLLM_HUB_COMMIT_LEN)) {
        st = dllm_error_set(err, DLLM_ERR_FORMAT, "the hub's answer for %s has no commit", what);
        goto fail;
    }
    memcpy(commit, sha, DLLM_HUB_COMMIT_LEN + 1);
fail:
    free(next);
    json_decref(doc);
    free(what);
    free(url);
    free(erev);
    return st;
}

/* Adds the files of one page of a tree listing; entries with unsafe paths are skipped. */
static enum dllm_status add_tree_page(struct dllm_hubfetch *hub, json_t *page,
                                      struct dllm_hub_listing *l, struct dllm_error *err)
{
    if (!json_is_array(page))
        return dllm_error_set(err, DLLM_ERR_FORMAT, "the hub's file listing of %s is not a list",
                              hub->cache.repo);
    size_t i;
    json_t *e;
    json_array_foreach(page, i, e)
    {
        const char *type = json_string_value(json_object_get(e, "type"));
        const char *path = json_string_value(json_object_get(e, "path"));
        json_t *size = json_object_get(e, "size");
        json_t *lfs = json_object_get(e, "lfs");
        if (!type || strcmp(type, "file") != 0 || !path || !dllm_hubcache_path_valid(path))
            continue;
        if (json_is_object(lfs) && json_is_integer(json_object_get(lfs, "size")))
            size = json_object_get(lfs, "size");
        if (!json_is_integer(size) || json_integer_value(size) < 0)
            return dllm_error_set(err, DLLM_ERR_FORMAT, "%s: no size for %s in the listing",
                                  hub->cache.repo, path);
        struct dllm_hub_file f = {.path = (char *)path, .size = json_integer_value(size)};
        const char *oid = json_string_value(json_object_get(e, "oid"));
        const char *sha = json_string_value(json_object_get(lfs, "oid"));
        if (oid && dllm_hubcache_is_hex(oid, 40))
            memcpy(f.blob_id, oid, 41);
        if (sha && dllm_hubcache_is_hex(sha, 64))
            memcpy(f.sha256, sha, 65);
        if (l->n >= TREE_FILES_MAX)
            return dllm_error_set(err, DLLM_ERR_FORMAT, "%s lists more than %d files",
                                  hub->cache.repo, TREE_FILES_MAX);
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
    char *url = dllm_hubcache_fmt("%s/api/models/%s/tree/%s?recursive=true", hub->endpoint,
                                  hub->cache.repo, commit);
    char *what = dllm_hubcache_fmt("the file listing of %s", hub->cache.repo);
    st = url && what ? DLLM_OK : dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    for (int page = 0; st == DLLM_OK && url; page++) {
        json_t *doc = NULL;
        char *next = NULL;
        if (page >= TREE_PAGES_MAX)
            st = dllm_error_set(err, DLLM_ERR_FORMAT, "%s: more than %d listing pages",
                                hub->cache.repo, TREE_PAGES_MAX);
        else if ((st = api_get(hub, url, what, &doc, &next, err)) == DLLM_OK)
            st = add_tree_page(hub, doc, l, err);
        /* The token goes along: pages must stay on the hub. */
        if (st == DLLM_OK && next && !same_origin(hub, next))
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

/* ---- downloading one file --------------------------------------------------------------- */

enum outcome { OUT_OK, OUT_RETRY, OUT_FAIL };

/* An ETag value without W/ and quotes. */
static void etag_value(const char *v, char *out, size_t n)
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
    struct resp r = {0};
    enum outcome out = OUT_FAIL;
    char *epath = escape(hub->curl, fx->f->path, true);
    char *url = epath ? dllm_hubcache_fmt("%s/%s/resolve/%s/%s", hub->endpoint, hub->cache.repo,
                                          commit, epath)
                      : NULL;
    *get_url = NULL;
    if (!url) {
        dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (int hops = 0;; hops++) {
        CURLcode rc = perform(hub, REQ_HEAD, url, &r, NULL, NULL, NULL);
        if (cancelled(hub)) {
            dllm_error_set(err, DLLM_ERR_CANCELLED, "cancelled");
            goto fail;
        }
        if (rc != CURLE_OK) {
            curl_why(hub, rc, why, why_n);
            if (retryable_curl(rc))
                out = OUT_RETRY;
            else
                dllm_error_set(err, DLLM_ERR_IO, "cannot reach %s: %s", hub->endpoint, why);
            goto fail;
        }
        const char *loc = r.h[H_LOCATION];
        if (r.status >= 300 && r.status < 400 && loc) {
            char *next = resolve_url(url, loc);
            bool absolute = strstr(loc, "://") || strncmp(loc, "//", 2) == 0;
            if (!next || hops >= REDIRECTS_MAX) {
                free(next);
                dllm_error_set(err, DLLM_ERR_IO, "too many redirects for %s", fx->f->path);
                goto fail;
            }
            free(url);
            url = next;
            if (absolute)
                break;
            continue;
        }
        if (r.status == 200)
            break;
        if (retryable_status(r.status)) {
            snprintf(why, why_n, "HTTP %ld", r.status);
            *after = retry_after(&r);
            out = OUT_RETRY;
            goto fail;
        }
        http_error(hub, &r, fx->f->path, err);
        goto fail;
    }
    /* The last response (the redirect to the CDN, or the file itself) has the metadata. */
    const char *rc_commit = r.h[H_REPO_COMMIT];
    if (!rc_commit) {
        dllm_error_set(err, DLLM_ERR_IO,
                       "%s answered without X-Repo-Commit: it is not a Hugging Face hub (a "
                       "proxy or captive portal?); check HF_ENDPOINT and the network",
                       hub->endpoint);
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
        etag_value(etag, tag, sizeof tag);
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
    resp_fini(&r);
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
static bool range_ok(const char *cr, int64_t start, int64_t total)
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
    const struct resp *r = &fx->r;
    size_t n = size * nmemb;
    if (!fx->started) {
        fx->started = true;
        fx->discard = r->status != 200 && r->status != 206;
        if (r->status == 206 && !range_ok(r->h[H_CONTENT_RANGE], fx->have, fx->f->size)) {
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
    if (cancelled(hub))
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
                              "the disk holding %s is full (%s): free some space and run the "
                              "same command again, the download resumes where it stopped",
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
    CURLcode rc = perform(hub, REQ_FILE, url, &fx->r, fx, on_file, on_file_progress);
    if (cancelled(hub) || rc == CURLE_ABORTED_BY_CALLBACK) {
        dllm_error_set(err, DLLM_ERR_CANCELLED,
                       "download of %s cancelled; run the same command again to resume",
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
        curl_why(hub, rc, why, why_n);
        if (retryable_curl(rc))
            return OUT_RETRY;
        char *host = host_of(url);
        dllm_error_set(err, DLLM_ERR_IO, "downloading %s from %s: %s", fx->f->path, host, why);
        free(host);
        return OUT_FAIL;
    }
    if (retryable_status(fx->r.status)) {
        snprintf(why, why_n, "HTTP %ld", fx->r.status);
        *after = retry_after(&fx->r);
        return OUT_RETRY;
    }
    if (fx->r.status != 200 && fx->r.status != 206) {
        http_error(hub, &fx->r, fx->f->path, err);
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
    char *blobs = dllm_hubcache_fmt("%s/blobs", hub->cache.dir);
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
                                "downloading %s failed %d times (%s); run the same command "
                                "again to resume",
                                fx->f->path, failures, why);
            goto fail;
        }
        if ((st = backoff(hub, failures, after, why, err)) != DLLM_OK)
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
            dllm_error_prefix(err,
                              "the cached copy was corrupt and is deleted; run 'dllm "
                              "pull %s' online to fetch it again",
                              hub->ref);
            goto fail;
        }
        warn(hub, "the cached %s was corrupt and was downloaded again", fx->f->path);
    }
    if (hub->offline && stat(blob, &sb) != 0) {
        st = dllm_error_set(err, DLLM_ERR_MISSING,
                            "%s of %s is not in the cache (%s) and the hub is not used "
                            "(offline): run 'dllm pull %s' while online",
                            fx->f->path, hub->cache.repo, hub->cache.root, hub->ref);
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

/* ---- opening, resolving, closing -------------------------------------------------------- */

/* Whether an environment variable holds a true value: 1, ON, YES or TRUE. */
static bool env_true(const char *name)
{
    const char *v = getenv(name);
    return v && (strcmp(v, "1") == 0 || strcasecmp(v, "on") == 0 || strcasecmp(v, "yes") == 0 ||
                 strcasecmp(v, "true") == 0);
}

/* The token: the parameter, HF_TOKEN, HUGGING_FACE_HUB_TOKEN, then the token file. */
static enum dllm_status load_token(const struct dllm_hub_params *p, char **out,
                                   struct dllm_error *err)
{
    const char *v = p->token && *p->token ? p->token : getenv("HF_TOKEN");
    if (!v || !*v)
        v = getenv("HUGGING_FACE_HUB_TOKEN");
    char buf[4096] = "";
    char *path = NULL;
    *out = NULL;
    if (!v || !*v) {
        const char *tp = getenv("HF_TOKEN_PATH"), *home = getenv("HF_HOME");
        const char *xdg = getenv("XDG_CACHE_HOME");
        path = tp && *tp       ? strdup(tp)
               : home && *home ? dllm_hubcache_fmt("%s/token", home)
               : xdg && *xdg
                   ? dllm_hubcache_fmt("%s/huggingface/token", xdg)
                   : dllm_hubcache_fmt("%s/.cache/huggingface/token", dllm_hubcache_home());
        FILE *f = path ? fopen(path, "rb") : NULL;
        if (f) {
            size_t n = fread(buf, 1, sizeof buf - 1, f);
            buf[n] = 0;
            fclose(f);
        }
        v = buf;
    }
    size_t n = strlen(v);
    while (n > 0 && isspace((unsigned char)v[n - 1]))
        n--;
    while (n > 0 && isspace((unsigned char)*v)) {
        v++;
        n--;
    }
    enum dllm_status st = DLLM_OK;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)v[i] < 0x21 || v[i] == 0x7f)
            st = dllm_error_set(err, DLLM_ERR_ARG,
                                "the access token %s%s has a space or "
                                "control character in it",
                                path ? "in " : "(HF_TOKEN)", path ? path : "");
    if (st == DLLM_OK && n > 0 && !(*out = strndup(v, n)))
        st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    OPENSSL_cleanse(buf, sizeof buf);
    free(path);
    return st;
}

static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* Readies the network side of a session: the endpoint's origin, a curl handle, the token. */
static enum dllm_status hub_connect(struct dllm_hubfetch *hub, struct dllm_error *err)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    if (strncasecmp(hub->endpoint, "http://", 7) != 0 &&
        strncasecmp(hub->endpoint, "https://", 8) != 0) {
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "hub endpoint '%s' is not an http:// or https:// URL "
                              "(HF_ENDPOINT)",
                              hub->endpoint);
    }
    pthread_once(&once, curl_init_once);
    hub->origin = origin_of(hub->endpoint);
    hub->curl = curl_easy_init();
    if (!hub->origin || !hub->curl)
        return dllm_error_set(err, DLLM_ERR_ARG, "cannot use hub endpoint '%s'", hub->endpoint);
    return load_token(hub->p, &hub->token, err);
}

/* Starts a session for repo with the parameters (or the defaults when NULL). */
static enum dllm_status hub_init(struct dllm_hubfetch *hub, const char *ref, const char *repo,
                                 const struct dllm_hub_params *p, struct dllm_error *err)
{
    *hub = (struct dllm_hubfetch){.p = p, .ref = ref};
    const char *ep = p->endpoint && *p->endpoint ? p->endpoint : getenv("HF_ENDPOINT");
    if (!ep || !*ep)
        ep = DEFAULT_ENDPOINT;
    enum dllm_status st = DLLM_OK;
    char *root = dllm_hubcache_root(p->cache_dir);
    hub->endpoint = strdup(ep);
    if (!root || !hub->endpoint)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    size_t n = strlen(hub->endpoint);
    while (n > 0 && hub->endpoint[n - 1] == '/')
        hub->endpoint[--n] = 0;
    hub->offline = p->offline || env_true("HF_HUB_OFFLINE") || env_true("TRANSFORMERS_OFFLINE");
    if ((st = dllm_hubcache_init(&hub->cache, root, repo, err)) != DLLM_OK)
        goto fail;
    if (!p->revision || !dllm_hubcache_path_valid(p->revision)) {
        st = dllm_error_set(err, DLLM_ERR_ARG, "invalid revision '%s'",
                            p->revision ? p->revision : "(null)");
        goto fail;
    }
    hub->memo = dllm_hubmemo_load(p->verified_path);
    if (!hub->offline)
        st = hub_connect(hub, err);
fail:
    free(root);
    return st;
}

static void hub_fini(struct dllm_hubfetch *hub)
{
    if (hub->token) {
        OPENSSL_cleanse(hub->token, strlen(hub->token));
        free(hub->token);
    }
    if (hub->curl)
        curl_easy_cleanup(hub->curl);
    dllm_hubmemo_free(hub->memo);
    dllm_hubcache_fini(&hub->cache);
    free(hub->warning);
    free(hub->origin);
    free(hub->endpoint);
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
    if (dllm_hubcache_is_hex(rev, DLLM_HUB_COMMIT_LEN))
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
        if (dllm_hubcache_is_hex(rev, DLLM_HUB_COMMIT_LEN))
            memcpy(commit, rev, DLLM_HUB_COMMIT_LEN + 1);
        else
            st = fetch_commit(hub, rev, commit, err);
        if (st == DLLM_OK && (st = fetch_tree(hub, commit, l, err)) == DLLM_OK)
            return DLLM_OK;
        if (!hub->unreachable)
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
                          "%s is not in the cache (%s) and the hub is not used (offline): run "
                          "'dllm pull %s' while online",
                          hub->cache.repo, hub->cache.root, hub->ref);
}

enum dllm_status dllm_hubfetch_open(const char *ref, const char *repo,
                                    const struct dllm_hub_params *params,
                                    struct dllm_hubfetch **out, struct dllm_error *err)
{
    *out = NULL;
    struct dllm_hubfetch *hub = calloc(1, sizeof *hub);
    if (!hub)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    enum dllm_status st = hub_init(hub, ref, repo, params, err);
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
    resp_fini(&fx.r);
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
