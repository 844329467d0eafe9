/*
 * libFuzzer target: the hub's HTTP response headers. The input is a response's header block
 * (a status line, then header lines), handed line by line to the header callback libcurl
 * calls; then each header dllm reads goes through its parser: Retry-After, ETag and
 * X-Linked-Etag, Content-Range, Location (resolved against a download URL, and its host for
 * messages), Link (the next page of a listing), and the status with X-Error-Code into the
 * error for the user.
 */
#include "fuzz.h"
#include "http.h"
#include "session.h"

#include <stdlib.h>
#include <string.h>

#define BASE "https://huggingface.co/org/name/resolve/main/model-Q4_K_M.gguf"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct dllm_hubresp r = {0};
    for (size_t i = 0; i < size;) {
        size_t end = i;
        while (end < size && data[end] != '\n')
            end++;
        if (end < size)
            end++;
        /* libcurl hands over a copy of exactly one line, not NUL-terminated. */
        char *line = malloc(end - i ? end - i : 1);
        if (!line)
            abort();
        memcpy(line, data + i, end - i);
        if (dllm_hubresp_header(line, 1, end - i, &r) != end - i)
            abort();
        free(line);
        i = end;
    }
    bool any = r.status > 0;
    for (int h = 0; h < H_COUNT; h++)
        any = any || r.h[h];
    if (any)
        fuzz_accepted++;

    double after = dllm_hubhttp_retry_after(&r);
    if (!(after >= 0 && after <= 300))
        abort();
    char tag[128];
    for (int h = H_LINKED_ETAG; h <= H_ETAG; h++)
        if (r.h[h] && h != H_LINKED_SIZE) {
            dllm_hubfetch_etag_value(r.h[h], tag, sizeof tag);
            if (strlen(tag) >= sizeof tag)
                abort();
        }
    int64_t total = r.h[H_CONTENT_LENGTH] ? strtoll(r.h[H_CONTENT_LENGTH], NULL, 10) : 0;
    dllm_hubfetch_range_ok(r.h[H_CONTENT_RANGE], 0, total);
    dllm_hubfetch_range_ok(r.h[H_CONTENT_RANGE], total / 2, total);
    if (r.h[H_LOCATION]) {
        char *next = NULL;
        dllm_hubhttp_resolve_url(BASE, r.h[H_LOCATION], "Location", &next, NULL);
        char *host = dllm_hubhttp_host(next ? next : r.h[H_LOCATION]);
        if (!host)
            abort();
        free(host);
        free(next);
    }
    char *next;
    if (dllm_hubhttp_link_next(r.h[H_LINK], BASE, &next, NULL) == DLLM_OK)
        free(next);

    struct dllm_hub_params p;
    dllm_hub_params_init(&p);
    struct dllm_hubhttp http;
    struct dllm_error err;
    if (dllm_hubhttp_init(&http, &p, "org/name", NULL) == DLLM_OK) {
        if (dllm_hubhttp_error(&http, &r, "model-Q4_K_M.gguf", &err) == DLLM_OK || !err.text[0])
            abort();
        dllm_hubhttp_fini(&http);
    }
    dllm_hubresp_fini(&r);
    return 0;
}
