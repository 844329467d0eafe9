/* Small helpers every part of the hub client uses: strings, hex digits, safe paths, time. */
#include "config.h"

#include "util.h"

#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

char *dllm_hub_fmt(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *s = malloc((size_t)n + 1);
    if (!s)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

bool dllm_hub_is_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return s[n] == 0;
}

bool dllm_hub_path_valid(const char *path)
{
    size_t len = strlen(path);
    if (len == 0 || len > 1024 || path[0] == '/' || path[len - 1] == '/')
        return false;
    for (const char *p = path; *p; p++) {
        if ((unsigned char)*p < 0x20 || *p == 0x7f || *p == '\\')
            return false;
        /* U+0080 to U+009F in UTF-8: C1 controls (U+009B is a terminal's CSI). */
        if ((unsigned char)p[0] == 0xc2 && (unsigned char)p[1] >= 0x80 &&
            (unsigned char)p[1] <= 0x9f)
            return false;
    }
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 0 || n > NAME_MAX || (n == 1 && p[0] == '.') ||
            (n == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        p += n;
        if (*p == '/')
            p++;
    }
    return true;
}

/* A malloc'd copy of the folder part of path ("." when it has none). */
char *dllm_hub_parent(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

double dllm_hub_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

const char *dllm_hub_home(const char *home)
{
    if (home && *home)
        return home;
    struct passwd *pw = getpwuid(getuid());
    return pw && pw->pw_dir ? pw->pw_dir : "/";
}

bool dllm_hub_ends_with_ci(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

/* The text json_dump_callback writes, and whether any piece of it could not be stored. */
struct json_text {
    char *buf;
    size_t len, cap;
    bool failed;
};

static int json_text_add(const char *piece, size_t n, void *user)
{
    struct json_text *t = user;
    if (!t->failed && t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap < t->len + n + 1)
            cap *= 2;
        char *b = realloc(t->buf, cap);
        if (b) {
            t->buf = b;
            t->cap = cap;
        } else {
            t->failed = true;
        }
    }
    if (t->failed)
        return -1;
    memcpy(t->buf + t->len, piece, n);
    t->len += n;
    t->buf[t->len] = 0;
    return 0;
}

char *dllm_hub_json_text(const json_t *json, size_t flags)
{
    struct json_text t = {0};
    if (json_dump_callback(json, json_text_add, &t, flags) != 0 || t.failed || !t.buf) {
        free(t.buf);
        return NULL;
    }
    return t.buf;
}
