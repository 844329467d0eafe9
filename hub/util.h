/* Small helpers every part of the hub client uses: strings, hex digits, safe paths, time. */
#ifndef DLLM_HUB_UTIL_H
#define DLLM_HUB_UTIL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Called during long local work (hashing, waiting for a lock) with the bytes done so far, or
 * -1 while waiting; returning false cancels. */
typedef bool (*dllm_hub_tick)(void *user, int64_t done);

/* A printf-style malloc'd string, or NULL when out of memory. */
char *dllm_hub_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Whether s ends with suffix, ignoring case. */
bool dllm_hub_ends_with_ci(const char *s, const char *suffix);

/* Whether s is n lowercase hex digits. */
bool dllm_hub_is_hex(const char *s, size_t n);

/*
 * Whether a path taken from a hub listing may be created under a snapshot folder: relative,
 * components that are not empty, "." or ".." and at most NAME_MAX bytes, no backslash or
 * control character (C0, DEL, or C1 in UTF-8), at most 1024 bytes.
 */
bool dllm_hub_path_valid(const char *path);

/* A malloc'd copy of the folder part of path ("." when it has none), or NULL. */
char *dllm_hub_parent(const char *path);

/* home when not NULL or empty, else the user's home in the password database, else "/". */
const char *dllm_hub_home(const char *home);

/* Seconds on the monotonic clock. */
double dllm_hub_now(void);

/*
 * json_dumps, but NULL whenever memory ran out: jansson 2.14's json_dumps ignores a failure
 * while it writes an object's key and returns the text without it.
 */
char *dllm_hub_json_text(const json_t *json, size_t flags);

#endif
