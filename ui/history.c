/* Input history and its file. */
#include "config.h"

#include "history.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void ui_history_init(struct ui_history *h, size_t max)
{
    *h = (struct ui_history){.max = max ? max : 1};
}

void ui_history_fini(struct ui_history *h)
{
    for (size_t i = 0; i < h->n; i++)
        free(h->items[i]);
    free(h->items);
    *h = (struct ui_history){0};
}

/* Appends the malloc'd entry (taking it), dropping the oldest beyond max. */
static bool push(struct ui_history *h, char *item)
{
    if (h->n == h->max) {
        free(h->items[0]);
        memmove(h->items, h->items + 1, (h->n - 1) * sizeof *h->items);
        h->n--;
    }
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 16;
        char **items = realloc(h->items, cap * sizeof *items);
        if (!items) {
            free(item);
            return false;
        }
        h->items = items;
        h->cap = cap;
    }
    h->items[h->n++] = item;
    return true;
}

bool ui_history_add(struct ui_history *h, const char *text)
{
    if (!*text || (h->n && strcmp(h->items[h->n - 1], text) == 0))
        return true;
    char *copy = strdup(text);
    return copy && push(h, copy);
}

size_t ui_history_find(const struct ui_history *h, const char *query, size_t before)
{
    for (size_t i = before < h->n ? before : h->n; i-- > 0;)
        if (strstr(h->items[i], query))
            return i;
    return h->n;
}

/* Decodes one line of the file (without its '\n') in place: "\\" -> '\', "\n" -> newline. */
static void unescape(char *s)
{
    char *out = s;
    for (; *s; s++) {
        if (*s == '\\' && (s[1] == '\\' || s[1] == 'n')) {
            *out++ = s[1] == 'n' ? '\n' : '\\';
            s++;
        } else {
            *out++ = *s;
        }
    }
    *out = '\0';
}

bool ui_history_load(struct ui_history *h, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return errno == ENOENT;
    char *line = NULL;
    size_t size = 0;
    ssize_t got;
    bool ok = true;
    while (ok && (got = getline(&line, &size, f)) >= 0) {
        if (got > 0 && line[got - 1] == '\n')
            line[got - 1] = '\0';
        unescape(line);
        ok = ui_history_add(h, line);
    }
    int saved = errno;
    ok = ok && !ferror(f);
    free(line);
    fclose(f);
    errno = saved;
    return ok;
}

/* A malloc'd concatenation of a and b. */
static char *concat(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *s = malloc(la + lb + 1);
    if (s) {
        memcpy(s, a, la);
        memcpy(s + la, b, lb + 1);
    }
    return s;
}

/* mkdir -p for the folder holding path, with mode 0700 for the folders it makes. */
static bool make_parent(const char *path)
{
    char *dir = strdup(path);
    if (!dir)
        return false;
    bool ok = true;
    for (char *p = dir + 1; ok && (p = strchr(p, '/')); p++) {
        *p = '\0';
        ok = mkdir(dir, 0700) == 0 || errno == EEXIST;
        *p = '/';
    }
    free(dir);
    return ok;
}

bool ui_history_save(const struct ui_history *h, const char *path)
{
    char *tmp = NULL;
    FILE *f = NULL;
    char suffix[32];
    snprintf(suffix, sizeof suffix, ".%ld.tmp", (long)getpid());
    if (!make_parent(path) || !(tmp = concat(path, suffix)))
        goto fail;
    f = fopen(tmp, "w");
    if (!f)
        goto fail;
    for (size_t i = 0; i < h->n; i++) {
        for (const char *s = h->items[i]; *s; s++) {
            if (*s == '\\')
                fputs("\\\\", f);
            else if (*s == '\n')
                fputs("\\n", f);
            else
                fputc(*s, f);
        }
        fputc('\n', f);
    }
    int rc = fclose(f);
    f = NULL;
    if (rc != 0 || rename(tmp, path) != 0)
        goto fail;
    free(tmp);
    return true;
fail:;
    int saved = errno;
    if (f)
        fclose(f);
    if (tmp)
        unlink(tmp);
    free(tmp);
    errno = saved;
    return false;
}

char *ui_history_path(void)
{
    const char *state = getenv("XDG_STATE_HOME");
    if (state && state[0] == '/')
        return concat(state, "/dllm/history");
    const char *home = getenv("HOME");
    if (!home || !*home) {
        errno = ENOENT;
        return NULL;
    }
    return concat(home, "/.local/state/dllm/history");
}
