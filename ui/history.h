/*
 * Input history: the prompts sent, oldest first, capped, and kept in a file between runs
 * ($XDG_STATE_HOME/dllm/history). The file holds one entry per line with '\' written "\\" and
 * a newline inside an entry written "\n".
 * Functions that return bool leave errno set when they return false.
 */
#ifndef DLLM_UI_HISTORY_H
#define DLLM_UI_HISTORY_H

#include <stdbool.h>
#include <stddef.h>

#define UI_HISTORY_MAX 1000 /* entries kept by default */

struct ui_history {
    char **items; /* [n], oldest first */
    size_t n, cap;
    size_t max; /* entries kept: adding past it drops the oldest */
};

void ui_history_init(struct ui_history *h, size_t max);
void ui_history_fini(struct ui_history *h);

/* Adds a copy of text unless it is empty or equal to the newest entry. */
bool ui_history_add(struct ui_history *h, const char *text);

/* The newest entry before entry `before` (h->n: the newest of all) that holds query (every entry
 * holds ""), or h->n when none does. */
size_t ui_history_find(const struct ui_history *h, const char *query, size_t before);

/* Adds the entries of the file at path (the newest `max` of them); a missing file adds none. */
bool ui_history_load(struct ui_history *h, const char *path);

/* Replaces the file at path with the entries, creating its folder (mode 0700) when missing. */
bool ui_history_save(const struct ui_history *h, const char *path);

/*
 * The history file's path: $XDG_STATE_HOME/dllm/history, or ~/.local/state/dllm/history when
 * XDG_STATE_HOME is unset or not absolute; NULL (errno ENOENT) when HOME is unset too.
 * The caller frees it.
 */
char *ui_history_path(void);

#endif
