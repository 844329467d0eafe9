/*
 * HTTP with the Hugging Face hub for one repo: requests with the session's settings, API
 * answers parsed as JSON, retries with backoff, and the token-origin rule: the token is sent
 * to the hub's own origin only, never to a host a download redirects to.
 */
#ifndef DLLM_HUB_HTTP_H
#define DLLM_HUB_HTTP_H

#include "dllm-hub.h"

#include <curl/curl.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DLLM_HUBHTTP_REDIRECTS_MAX 10

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

/* A response: its status, the headers dllm reads, and an API answer's body. */
struct dllm_hubresp {
    long status;
    char *h[H_COUNT];
    char *body; /* API answers */
    size_t len, cap;
};

/* Called before each wait between attempts with the delay in seconds and the failure. */
typedef void (*dllm_hubhttp_retry_fn)(void *user, double delay, const char *why);

/* The HTTP side of a session with the hub. */
struct dllm_hubhttp {
    const struct dllm_hub_params *p;
    const char *repo; /* "org/name", for messages */
    char *endpoint;   /* without a trailing '/' */
    char *origin;     /* scheme://host:port of the endpoint */
    char *token;      /* NULL when none */
    bool unreachable; /* the last API failure was the network, not an answer */
    CURL *curl;
    char curl_err[CURL_ERROR_SIZE];
    dllm_hubhttp_retry_fn on_retry;
    void *retry_user;
};

enum req_kind { REQ_API, REQ_HEAD, REQ_FILE };

/* Where the body of a REQ_FILE request goes, and from which byte it is asked for. */
struct dllm_hubsink {
    size_t (*write)(char *data, size_t size, size_t nmemb, void *user);
    void *write_user;
    int (*progress)(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                    curl_off_t ulnow);
    void *progress_user;
    int64_t from; /* > 0: a Range request from this byte */
};

/*
 * Readies h for repo with the params: the endpoint (params->endpoint, else
 * https://huggingface.co) without its trailing '/'. Nothing is sent yet.
 */
enum dllm_status dllm_hubhttp_init(struct dllm_hubhttp *h, const struct dllm_hub_params *p,
                                   const char *repo, struct dllm_error *err);
/* Readies the network side: the endpoint's origin, a curl handle, the token. */
enum dllm_status dllm_hubhttp_connect(struct dllm_hubhttp *h, struct dllm_error *err);
void dllm_hubhttp_fini(struct dllm_hubhttp *h);

/* Whether the params' cancel flag is set. */
bool dllm_hubhttp_cancelled(const struct dllm_hubhttp *h);

void dllm_hubresp_fini(struct dllm_hubresp *r);

/*
 * libcurl's header callback: keeps the headers of enum hdr in r (user), and a status line
 * starts a new response (a redirect's).
 */
size_t dllm_hubresp_header(char *data, size_t size, size_t nmemb, void *user);

/* Sends one request with the session's settings (sink for REQ_FILE only); the curl result. */
CURLcode dllm_hubhttp_perform(struct dllm_hubhttp *h, enum req_kind kind, const char *url,
                              struct dllm_hubresp *r, const struct dllm_hubsink *sink);

/* Whether a transfer error, or an HTTP status (408, 429, 5xx), is worth another attempt. */
bool dllm_hubhttp_retryable_curl(CURLcode rc);
bool dllm_hubhttp_retryable_status(long status);
/* One line on a failed transfer into why (n bytes): the stall, or libcurl's detail. */
void dllm_hubhttp_why(const struct dllm_hubhttp *h, CURLcode rc, char *why, size_t n);
/* Retry-After in seconds (the delay form, at most 300), or 0. */
double dllm_hubhttp_retry_after(const struct dllm_hubresp *r);

/*
 * Waits before another attempt (after seconds when > 0, else the doubling backoff from
 * params->retry_base_ms), telling h->on_retry first; DLLM_ERR_CANCELLED when cancelled.
 */
enum dllm_status dllm_hubhttp_backoff(struct dllm_hubhttp *h, int failures, double after,
                                      const char *why, struct dllm_error *err);

/* The error for an HTTP answer that is not retried: what it means for the user. */
enum dllm_status dllm_hubhttp_error(const struct dllm_hubhttp *h, const struct dllm_hubresp *r,
                                    const char *what, struct dllm_error *err);

/*
 * GETs an API URL and parses the JSON answer, retrying network failures, 408, 429 and 5xx.
 * next receives the Link rel="next" URL when there is one. Sets h->unreachable when the
 * failure was the network or the server's health rather than an answer.
 */
enum dllm_status dllm_hubhttp_api_get(struct dllm_hubhttp *h, const char *url, const char *what,
                                      json_t **out, char **next, struct dllm_error *err);

/*
 * The URL of a Link header's rel="next" entry, resolved against url, into *next (malloc'd;
 * NULL when link is NULL or has none); DLLM_ERR_FORMAT when that URL is malformed.
 */
enum dllm_status dllm_hubhttp_link_next(const char *link, const char *url, char **next,
                                        struct dllm_error *err);

/*
 * libcurl's global setup, once per process, with its allocations through dllm's allocator
 * (curl_global_init_mem); dllm_hubhttp_connect calls it first.
 */
void dllm_hubhttp_global_init(void);

/* Whether url is on the hub's own origin, where the token may go. */
bool dllm_hubhttp_same_origin(const struct dllm_hubhttp *h, const char *url);
/*
 * rel resolved against base (for relative Location and Link values) into *out (malloc'd):
 * DLLM_ERR_FORMAT naming where (what) when rel is not a URL, DLLM_ERR_NOMEM without memory.
 */
enum dllm_status dllm_hubhttp_resolve_url(const char *base, const char *rel, const char *what,
                                          char **out, struct dllm_error *err);
/* The host of a URL for messages: never the query, which may hold a signature. Malloc'd. */
char *dllm_hubhttp_host(const char *url);
/* A percent-encoded copy of s; with keep_slash, '/' stays as it is. Malloc'd. */
char *dllm_hubhttp_escape(const struct dllm_hubhttp *h, const char *s, bool keep_slash);

#endif
