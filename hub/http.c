/*
 * HTTP with the Hugging Face hub (see http.h): the requests huggingface_hub's
 * file_download.py makes, with libcurl, and its retry and token rules.
 */
#include "config.h"

#include "http.h"
#include "json.h"

#include "util.h"

#include <ctype.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define DEFAULT_ENDPOINT "https://huggingface.co"
#define USER_AGENT       "dllm/" PACKAGE_VERSION
#define API_BODY_MAX     (64 << 20) /* bytes of one API answer */
#define RETRY_AFTER_MAX  300.0      /* seconds of Retry-After honoured */
#define BACKOFF_MAX      60.0       /* seconds */

static const char *const hdr_names[H_COUNT] = {
    "location",       "x-repo-commit", "x-linked-etag", "x-linked-size", "etag",
    "content-length", "content-range", "retry-after",   "link",          "x-error-code"};

static void resp_clear_headers(struct dllm_hubresp *r)
{
    for (int i = 0; i < H_COUNT; i++) {
        free(r->h[i]);
        r->h[i] = NULL;
    }
}

void dllm_hubresp_fini(struct dllm_hubresp *r)
{
    resp_clear_headers(r);
    free(r->body);
    *r = (struct dllm_hubresp){0};
}

/* Keeps the headers dllm reads; a status line starts a new response (a redirect's). */
size_t dllm_hubresp_header(char *data, size_t size, size_t nmemb, void *user)
{
    struct dllm_hubresp *r = user;
    size_t n = size * nmemb;
    if (n >= 5 && strncmp(data, "HTTP/", 5) == 0) {
        resp_clear_headers(r);
        /* The line is not NUL-terminated: the status is the 3 digits after the first space. */
        const char *sp = memchr(data, ' ', n);
        r->status = 0;
        for (size_t i = sp ? (size_t)(sp - data) + 1 : n, k = 0;
             i < n && k < 3 && isdigit((unsigned char)data[i]); i++, k++)
            r->status = r->status * 10 + (data[i] - '0');
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
    struct dllm_hubresp *r = user;
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
    return dllm_hubhttp_cancelled(user) ? 1 : 0;
}

/*
 * "scheme://host:port" of a URL (lowercase host, default port filled in) into *out; libcurl's
 * result (*out NULL unless CURLUE_OK), CURLUE_OUT_OF_MEMORY when an allocation failed.
 */
static CURLUcode origin_of(const char *url, char **out)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL;
    CURLUcode rc = CURLUE_OUT_OF_MEMORY;
    *out = NULL;
    if (u && (rc = curl_url_set(u, CURLUPART_URL, url, 0)) == CURLUE_OK &&
        (rc = curl_url_get(u, CURLUPART_SCHEME, &scheme, 0)) == CURLUE_OK &&
        (rc = curl_url_get(u, CURLUPART_HOST, &host, 0)) == CURLUE_OK &&
        (rc = curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT)) == CURLUE_OK) {
        for (char *p = host; *p; p++)
            *p = (char)tolower((unsigned char)*p);
        if (!(*out = dllm_hub_fmt("%s://%s:%s", scheme, host, port)))
            rc = CURLUE_OUT_OF_MEMORY;
    }
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);
    return rc;
}

/* Whether url is on the hub's own origin, where the token may go. */
bool dllm_hubhttp_same_origin(const struct dllm_hubhttp *http, const char *url)
{
    char *o;
    bool same = origin_of(url, &o) == CURLUE_OK && strcmp(o, http->origin) == 0;
    free(o);
    return same;
}

/* rel resolved against base into *out (NULL on failure); libcurl's result. */
static CURLUcode resolve_once(const char *base, const char *rel, char **out)
{
    CURLU *u = curl_url();
    char *full = NULL;
    CURLUcode rc = CURLUE_OUT_OF_MEMORY;
    *out = NULL;
    if (u && (rc = curl_url_set(u, CURLUPART_URL, base, 0)) == CURLUE_OK &&
        (rc = curl_url_set(u, CURLUPART_URL, rel, 0)) == CURLUE_OK)
        rc = curl_url_get(u, CURLUPART_URL, &full, 0);
    if (rc == CURLUE_OK && !(*out = strdup(full)))
        rc = CURLUE_OUT_OF_MEMORY;
    curl_free(full);
    curl_url_cleanup(u);
    return rc;
}

/*
 * rel resolved against base (for relative Location and Link values) into *out: DLLM_ERR_FORMAT
 * naming where (what) when rel is not a URL, DLLM_ERR_NOMEM when memory runs out.
 */
enum dllm_status dllm_hubhttp_resolve_url(const char *base, const char *rel, const char *what,
                                          char **out, struct dllm_error *err)
{
    CURLUcode rc = resolve_once(base, rel, out);
    if (rc != CURLUE_OK && rc != CURLUE_OUT_OF_MEMORY) {
        /*
         * libcurl (7.88) reports some failed allocations as a parse error ("Bad scheme" when
         * copying the base fails): a URL that resolves on a second try met one of those.
         */
        char *again;
        if (resolve_once(base, rel, &again) == CURLUE_OK)
            rc = CURLUE_OUT_OF_MEMORY;
        free(again);
    }
    if (rc == CURLUE_OUT_OF_MEMORY)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    if (rc != CURLUE_OK)
        return dllm_error_set(err, DLLM_ERR_FORMAT, "malformed URL in %s: %s", what,
                              curl_url_strerror(rc));
    return DLLM_OK;
}

/* The host of a URL for messages: never the query, which may hold a signature. */
char *dllm_hubhttp_host(const char *url)
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

/* Sends one request with the session's settings; the curl result. */
CURLcode dllm_hubhttp_perform(struct dllm_hubhttp *http, enum req_kind kind, const char *url,
                              struct dllm_hubresp *r, const struct dllm_hubsink *sink)
{
    CURL *c = http->curl;
    struct curl_slist *headers = NULL;
    char *auth = NULL;
    resp_clear_headers(r);
    r->status = 0;
    r->len = 0;
    curl_easy_reset(c);
    http->curl_err[0] = 0;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_USERAGENT, USER_AGENT);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, http->curl_err);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, (long)http->p->connect_timeout_s);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (long)http->p->stall_seconds);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, dllm_hubresp_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    if (http->token && dllm_hubhttp_same_origin(http, url)) {
        auth = dllm_hub_fmt("Authorization: Bearer %s", http->token);
        headers = curl_slist_append(headers, auth);
    }
    if (kind == REQ_FILE) {
        /* The signed URL may redirect again; libcurl keeps custom Authorization headers
         * to the original host (CURLOPT_UNRESTRICTED_AUTH stays off). */
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
        curl_easy_setopt(c, CURLOPT_MAXREDIRS, (long)DLLM_HUBHTTP_REDIRECTS_MAX);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink->write);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, sink->write_user);
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, sink->progress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, sink->progress_user);
        if (sink->from > 0) {
            char range[32];
            snprintf(range, sizeof range, "%lld-", (long long)sink->from);
            curl_easy_setopt(c, CURLOPT_RANGE, range);
        }
    } else {
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_api_progress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, http);
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
bool dllm_hubhttp_retryable_curl(CURLcode rc)
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

bool dllm_hubhttp_retryable_status(long status)
{
    return status == 408 || status == 429 || status >= 500;
}

/* One line on a failed transfer: the stall, or libcurl's detail. */
void dllm_hubhttp_why(const struct dllm_hubhttp *http, CURLcode rc, char *why, size_t n)
{
    if (rc == CURLE_OPERATION_TIMEDOUT && strstr(http->curl_err, "too slow"))
        snprintf(why, n, "stalled: no data for %d s", http->p->stall_seconds);
    else
        snprintf(why, n, "%s", http->curl_err[0] ? http->curl_err : curl_easy_strerror(rc));
}

/* Retry-After in seconds (the delay form), or 0. */
double dllm_hubhttp_retry_after(const struct dllm_hubresp *r)
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
enum dllm_status dllm_hubhttp_backoff(struct dllm_hubhttp *http, int failures, double after,
                                      const char *why, struct dllm_error *err)
{
    double delay = after;
    if (delay <= 0) {
        delay = http->p->retry_base_ms / 1000.0;
        for (int i = 1; i < failures && delay < BACKOFF_MAX; i++)
            delay *= 2;
        if (delay > BACKOFF_MAX)
            delay = BACKOFF_MAX;
    }
    if (http->on_retry)
        http->on_retry(http->retry_user, delay, why);
    double end = dllm_hub_now() + delay;
    while (dllm_hub_now() < end) {
        if (dllm_hubhttp_cancelled(http))
            return dllm_error_set(err, DLLM_ERR_CANCELLED, "cancelled");
        double left = end - dllm_hub_now();
        long ns = left > 0.05 ? 50000000L : (long)(left * 1e9);
        if (ns > 0)
            nanosleep(&(struct timespec){0, ns}, NULL);
    }
    return DLLM_OK;
}

/* The error for an HTTP answer that is not retried: what it means for the user. */
enum dllm_status dllm_hubhttp_error(const struct dllm_hubhttp *http, const struct dllm_hubresp *r,
                                    const char *what, struct dllm_error *err)
{
    const char *repo = http->repo;
    const char *code = r->h[H_ERROR_CODE] ? r->h[H_ERROR_CODE] : "";
    switch (r->status) {
    case 401:
        if (http->token)
            return dllm_error_set(err, DLLM_ERR_IO,
                                  "HTTP 401 for %s: the hub refused the token, or %s does not "
                                  "exist: check the name and the token (HF_TOKEN or "
                                  "$HF_HOME/token)",
                                  what, repo);
        return dllm_error_set(err, DLLM_ERR_IO,
                              "HTTP 401 for %s: %s does not exist, or it is private or gated: "
                              "check the name; if it is gated, accept its licence at %s/%s "
                              "and set HF_TOKEN to an access token",
                              what, repo, http->endpoint, repo);
    case 403:
        return dllm_error_set(err, DLLM_ERR_IO,
                              "HTTP 403 for %s: %s is gated or the token may not read it: "
                              "accept its licence at %s/%s with the account of the token in "
                              "HF_TOKEN (or $HF_HOME/token)",
                              what, repo, http->endpoint, repo);
    case 404:
        if (strcmp(code, "RepoNotFound") == 0)
            return dllm_error_set(err, DLLM_ERR_MISSING, "%s: no such repo on %s", repo,
                                  http->endpoint);
        if (strcmp(code, "RevisionNotFound") == 0)
            return dllm_error_set(err, DLLM_ERR_MISSING, "%s has no revision '%s'", repo,
                                  http->p->revision);
        if (strcmp(code, "EntryNotFound") == 0)
            return dllm_error_set(err, DLLM_ERR_MISSING, "%s: %s does not exist", repo, what);
        return dllm_error_set(err, DLLM_ERR_MISSING, "HTTP 404 for %s", what);
    default: return dllm_error_set(err, DLLM_ERR_IO, "HTTP %ld for %s", r->status, what);
    }
}

/* The URL of a Link header's rel="next" entry, resolved against url, or NULL when none. */
enum dllm_status dllm_hubhttp_link_next(const char *link, const char *url, char **next,
                                        struct dllm_error *err)
{
    *next = NULL;
    /* Link: <url>; rel="next", possibly among other links. */
    for (const char *p = link; p && (p = strchr(p, '<'));) {
        const char *end = strchr(p, '>');
        if (!end)
            break;
        const char *stop = strchr(end, ',');
        size_t rest = stop ? (size_t)(stop - end) : strlen(end);
        char *params = strndup(end, rest);
        if (!params)
            return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
        if (strstr(params, "rel=\"next\"") || strstr(params, "rel=next")) {
            free(params);
            char *rel = strndup(p + 1, (size_t)(end - p - 1));
            if (!rel)
                return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
            enum dllm_status st =
                dllm_hubhttp_resolve_url(url, rel, "the hub's Link header", next, err);
            free(rel);
            return st;
        }
        free(params);
        p = end;
    }
    return DLLM_OK;
}

/*
 * GETs an API URL and parses the JSON answer, retrying network failures, 408, 429 and 5xx.
 * next receives the Link rel="next" URL when there is one. Sets http->unreachable when the
 * failure was the network or the server's health rather than an answer.
 */
enum dllm_status dllm_hubhttp_api_get(struct dllm_hubhttp *http, const char *url, const char *what,
                                      json_t **out, char **next, struct dllm_error *err)
{
    struct dllm_hubresp r = {0};
    enum dllm_status st = DLLM_OK;
    char why[CURL_ERROR_SIZE + 32];
    *out = NULL;
    http->unreachable = false;
    for (int failures = 1;; failures++) {
        CURLcode rc = dllm_hubhttp_perform(http, REQ_API, url, &r, NULL);
        if (dllm_hubhttp_cancelled(http)) {
            st = dllm_error_set(err, DLLM_ERR_CANCELLED, "cancelled");
            goto fail;
        }
        double after = 0;
        if (rc != CURLE_OK) {
            dllm_hubhttp_why(http, rc, why, sizeof why);
            /* A refused or unresolvable host gets one more try: offline use should not wait. */
            int limit = rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST
                            ? 1
                            : http->p->max_retries;
            if (!dllm_hubhttp_retryable_curl(rc) || failures > limit) {
                http->unreachable = dllm_hubhttp_retryable_curl(rc);
                st = dllm_error_set(err, DLLM_ERR_IO, "cannot reach %s for %s: %s", http->endpoint,
                                    what, why);
                goto fail;
            }
        } else if (dllm_hubhttp_retryable_status(r.status)) {
            snprintf(why, sizeof why, "HTTP %ld", r.status);
            after = dllm_hubhttp_retry_after(&r);
            if (failures > http->p->max_retries) {
                http->unreachable = true;
                st = dllm_error_set(err, DLLM_ERR_IO, "HTTP %ld from %s for %s, %d times", r.status,
                                    http->endpoint, what, failures);
                goto fail;
            }
        } else if (r.status != 200) {
            st = dllm_hubhttp_error(http, &r, what, err);
            goto fail;
        } else {
            break;
        }
        if ((st = dllm_hubhttp_backoff(http, failures, after, why, err)) != DLLM_OK)
            goto fail;
    }
    json_error_t jerr;
    bool nomem;
    *out = dllm_hubjson_loadb(r.body ? r.body : "", r.len, 0, &jerr, &nomem);
    if (!*out) {
        st = nomem ? dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory")
                   : dllm_error_set(err, DLLM_ERR_FORMAT, "malformed JSON from %s for %s: %s",
                                    http->endpoint, what, jerr.text);
        goto fail;
    }
    st = dllm_hubhttp_link_next(r.h[H_LINK], url, next, err);
fail:
    if (st != DLLM_OK) {
        json_decref(*out);
        *out = NULL;
    }
    dllm_hubresp_fini(&r);
    return st;
}

/* A percent-encoded copy of s; with keep_slash, '/' stays as it is. */
char *dllm_hubhttp_escape(const struct dllm_hubhttp *http, const char *s, bool keep_slash)
{
    size_t cap = 3 * strlen(s) + 1, used = 0;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    while (*s) {
        size_t n = keep_slash ? strcspn(s, "/") : strlen(s);
        char *e = curl_easy_escape(http->curl, s, (int)n);
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

/*
 * The token of the params without surrounding white space (*out NULL when there is none);
 * DLLM_ERR_ARG when a space or control character is left in it, which a header cannot carry.
 */
static enum dllm_status load_token(const struct dllm_hub_params *p, char **out,
                                   struct dllm_error *err)
{
    const char *v = p->token ? p->token : "";
    *out = NULL;
    size_t n = strlen(v);
    while (n > 0 && isspace((unsigned char)v[n - 1]))
        n--;
    while (n > 0 && isspace((unsigned char)*v)) {
        v++;
        n--;
    }
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)v[i] < 0x21 || v[i] == 0x7f)
            return dllm_error_set(err, DLLM_ERR_ARG,
                                  "the access token (HF_TOKEN, HUGGING_FACE_HUB_TOKEN or the "
                                  "token file) has a space or control character in it: set it "
                                  "to the token alone");
    if (n > 0 && !(*out = strndup(v, n)))
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    return DLLM_OK;
}

/*
 * libcurl's allocator: the C library's, through these functions so that the allocation-failure
 * torture (tests/torture.h renames malloc and the others here) counts and fails libcurl's too.
 */
static void *curl_mem_malloc(size_t n)
{
    return malloc(n);
}

static void curl_mem_free(void *p)
{
    free(p);
}

static void *curl_mem_realloc(void *p, size_t n)
{
    return realloc(p, n);
}

static char *curl_mem_strdup(const char *s)
{
    return strdup(s);
}

static void *curl_mem_calloc(size_t n, size_t size)
{
    return calloc(n, size);
}

/* libcurl's global setup with dllm's allocator, once per process. */
static void curl_init_once(void)
{
    curl_global_init_mem(CURL_GLOBAL_DEFAULT, curl_mem_malloc, curl_mem_free, curl_mem_realloc,
                         curl_mem_strdup, curl_mem_calloc);
}

void dllm_hubhttp_global_init(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, curl_init_once);
}

/* Readies the network side of a session: the endpoint's origin, a curl handle, the token. */
enum dllm_status dllm_hubhttp_connect(struct dllm_hubhttp *http, struct dllm_error *err)
{
    if (strncasecmp(http->endpoint, "http://", 7) != 0 &&
        strncasecmp(http->endpoint, "https://", 8) != 0) {
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "hub endpoint '%s' is not an http:// or https:// URL "
                              "(HF_ENDPOINT)",
                              http->endpoint);
    }
    dllm_hubhttp_global_init();
    CURLUcode rc = origin_of(http->endpoint, &http->origin);
    if (rc == CURLUE_OUT_OF_MEMORY)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    if (rc != CURLUE_OK)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "hub endpoint '%s' is not a usable URL: %s (HF_ENDPOINT)",
                              http->endpoint, curl_url_strerror(rc));
    if (!(http->curl = curl_easy_init()))
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory (libcurl could not start)");
    return load_token(http->p, &http->token, err);
}

/* Whether the params' cancel flag is set. */
bool dllm_hubhttp_cancelled(const struct dllm_hubhttp *http)
{
    return http->p->cancel && atomic_load(http->p->cancel);
}

enum dllm_status dllm_hubhttp_init(struct dllm_hubhttp *http, const struct dllm_hub_params *p,
                                   const char *repo, struct dllm_error *err)
{
    *http = (struct dllm_hubhttp){.p = p, .repo = repo};
    const char *ep = p->endpoint && *p->endpoint ? p->endpoint : DEFAULT_ENDPOINT;
    if (!(http->endpoint = strdup(ep)))
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    size_t n = strlen(http->endpoint);
    while (n > 0 && http->endpoint[n - 1] == '/')
        http->endpoint[--n] = 0;
    return DLLM_OK;
}

void dllm_hubhttp_fini(struct dllm_hubhttp *http)
{
    if (http->token) {
        OPENSSL_cleanse(http->token, strlen(http->token));
        free(http->token);
    }
    if (http->curl)
        curl_easy_cleanup(http->curl);
    free(http->origin);
    free(http->endpoint);
    *http = (struct dllm_hubhttp){0};
}
