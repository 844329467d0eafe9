/*
 * The input box's line editor: a multi-line UTF-8 buffer with a cursor that moves by glyph,
 * readline-style editing, bracketed-paste insertion, and Up/Down through the history.
 * Functions that return bool return false only when memory ran out (the buffer is unchanged).
 */
#ifndef DLLM_UI_EDITOR_H
#define DLLM_UI_EDITOR_H

#include "history.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ui_editor {
    char *buf; /* [len] bytes of UTF-8, NUL-terminated */
    size_t len, cap;
    size_t cursor;              /* byte offset, always at a glyph boundary */
    struct ui_history *history; /* may be NULL */
    size_t hist_pos;            /* the entry shown; history->n while editing a new text */
    char *draft;                /* the new text put aside while browsing the history */
};

void ui_editor_init(struct ui_editor *ed, struct ui_history *history);
void ui_editor_fini(struct ui_editor *ed);

/* Inserts bytes at the cursor, as typed, and moves the cursor after them. */
bool ui_editor_insert(struct ui_editor *ed, const char *bytes, size_t n);
/* Inserts one typed character (a code point). */
bool ui_editor_insert_char(struct ui_editor *ed, uint32_t cp);
/*
 * Inserts pasted text: CR LF and lone CR become '\n'; control characters other than '\n' and
 * '\t' are dropped.
 */
bool ui_editor_paste(struct ui_editor *ed, const char *bytes, size_t n);

/* Replaces the whole text and puts the cursor at its end. */
bool ui_editor_set(struct ui_editor *ed, const char *text);

void ui_editor_left(struct ui_editor *ed);
void ui_editor_right(struct ui_editor *ed);
/* To the start / end of the cursor's line. */
void ui_editor_home(struct ui_editor *ed);
void ui_editor_end(struct ui_editor *ed);
/* To the start of the previous word / the end of the next word (letters, digits and '_'). */
void ui_editor_word_left(struct ui_editor *ed);
void ui_editor_word_right(struct ui_editor *ed);

/* Deletes the glyph before / at the cursor. */
void ui_editor_backspace(struct ui_editor *ed);
void ui_editor_delete(struct ui_editor *ed);
/* Deletes from the cursor to the end / start of its line, or back to the previous word. */
void ui_editor_kill_end(struct ui_editor *ed);
void ui_editor_kill_start(struct ui_editor *ed);
void ui_editor_kill_word(struct ui_editor *ed);

/*
 * Up: to the line above at the same column, or on the first line, the previous history entry
 * (the new text is kept as a draft). Down: the line below, or on the last line, the next entry
 * and finally the draft. Return whether anything moved.
 */
bool ui_editor_up(struct ui_editor *ed);
bool ui_editor_down(struct ui_editor *ed);

/*
 * Takes the text: returns it (the caller frees it), adds it to the history and empties the
 * editor. NULL when memory ran out.
 */
char *ui_editor_take(struct ui_editor *ed);

void ui_editor_clear(struct ui_editor *ed);

#endif
