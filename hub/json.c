/*
 * jansson's allocations through a wrapper that notes a failed one (hub/json.h says why).
 * The wrapper is installed once per process, like libcurl's allocator (hub/http.c), and only
 * where jansson still has its default allocator: an application's own is kept, and with it
 * jansson's own reporting.
 */
#include "config.h"

#include "json.h"

#include <pthread.h>
#include <stdlib.h>

/* Whether an allocation of jansson's failed on this thread since the last parse began. */
static _Thread_local bool alloc_failed;

/* jansson's malloc: the C library's, noting a failure. */
static void *json_alloc(size_t n)
{
    void *p = malloc(n);
    if (!p)
        alloc_failed = true;
    return p;
}

static void install_allocator(void)
{
    json_malloc_t m;
    json_free_t f;
    json_get_alloc_funcs(&m, &f);
    /* (malloc): the C library's function even where a test build renames malloc calls. */
    if (m == (malloc) && f == (free))
        json_set_alloc_funcs(json_alloc, free);
}

void dllm_hubjson_init(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, install_allocator);
}

/* Readies the wrapper and forgets this thread's earlier failures. */
static void parse_begins(void)
{
    dllm_hubjson_init();
    alloc_failed = false;
}

/* root, or NULL with *nomem set when an allocation failed during its parse. */
static json_t *parse_ends(json_t *root, bool *nomem)
{
    *nomem = alloc_failed;
    if (!alloc_failed)
        return root;
    json_decref(root);
    return NULL;
}

json_t *dllm_hubjson_loadb(const char *buf, size_t len, size_t flags, json_error_t *jerr,
                           bool *nomem)
{
    parse_begins();
    return parse_ends(json_loadb(buf, len, flags, jerr), nomem);
}

json_t *dllm_hubjson_load_file(const char *path, size_t flags, json_error_t *jerr, bool *nomem)
{
    parse_begins();
    return parse_ends(json_load_file(path, flags, jerr), nomem);
}
