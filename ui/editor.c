/* The input box's line editor. */
#include "config.h"

#include "editor.h"
#include "utf8.h"

#include <stdlib.h>
#include <string.h>
#include <wctype.h>

void ui_editor_init(struct ui_editor *ed, struct ui_history *history)
{
    *ed = (struct ui_editor){.history = history, .hist_pos = history ? history->n : 0};
}

void ui_editor_fini(struct ui_editor *ed)
{
    free(ed->buf);
    free(ed->draft);
    *ed = (struct ui_editor){0};
}

/* Makes room for a text of total bytes plus the terminating NUL. */
static bool reserve(struct ui_editor *ed, size_t total)
{
    if (total + 1 <= ed->cap)
        return true;
    size_t cap = ed->cap ? ed->cap : 64;
    while (cap < total + 1)
        cap *= 2;
    char *buf = realloc(ed->buf, cap);
    if (!buf)
        return false;
    ed->buf = buf;
    ed->cap = cap;
    return true;
}

bool ui_editor_insert(struct ui_editor *ed, const char *bytes, size_t n)
{
    if (!reserve(ed, ed->len + n))
        return false;
    memmove(ed->buf + ed->cursor + n, ed->buf + ed->cursor, ed->len - ed->cursor);
    memcpy(ed->buf + ed->cursor, bytes, n);
    ed->len += n;
    ed->cursor += n;
    ed->buf[ed->len] = '\0';
    return true;
}

bool ui_editor_insert_char(struct ui_editor *ed, uint32_t cp)
{
    char enc[4];
    return ui_editor_insert(ed, enc, ui_utf8_encode(cp, enc));
}

bool ui_editor_paste(struct ui_editor *ed, const char *bytes, size_t n)
{
    char *clean = malloc(n ? n : 1);
    if (!clean)
        return false;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)bytes[i];
        if (c == '\r') {
            clean[m++] = '\n';
            if (i + 1 < n && bytes[i + 1] == '\n')
                i++;
        } else if (c >= 0x20 || c == '\n' || c == '\t') {
            clean[m++] = (char)c;
        }
    }
    bool ok = ui_editor_insert(ed, clean, m);
    free(clean);
    return ok;
}

bool ui_editor_set(struct ui_editor *ed, const char *text)
{
    size_t n = strlen(text);
    if (!reserve(ed, n))
        return false;
    memcpy(ed->buf, text, n + 1);
    ed->len = ed->cursor = n;
    return true;
}

void ui_editor_clear(struct ui_editor *ed)
{
    ed->len = ed->cursor = 0;
    if (ed->buf)
        ed->buf[0] = '\0';
}

/* The offset where the line holding pos starts. */
static size_t line_start(const struct ui_editor *ed, size_t pos)
{
    while (pos > 0 && ed->buf[pos - 1] != '\n')
        pos--;
    return pos;
}

/* The offset of the '\n' ending the line holding pos, or len. */
static size_t line_end(const struct ui_editor *ed, size_t pos)
{
    while (pos < ed->len && ed->buf[pos] != '\n')
        pos++;
    return pos;
}

/* The glyph boundary after pos (pos < len). */
static size_t next_glyph(const struct ui_editor *ed, size_t pos)
{
    struct ui_glyph g;
    return pos + ui_glyph_next(ed->buf + pos, ed->len - pos, 0, &g);
}

/* The glyph boundary before pos (pos > 0), found by walking its line from the start. */
static size_t prev_glyph(const struct ui_editor *ed, size_t pos)
{
    size_t i = line_start(ed, pos);
    if (i == pos)
        return pos - 1; /* the '\n' ending the line above */
    size_t last = i;
    while (i < pos) {
        last = i;
        i = next_glyph(ed, i);
    }
    return last;
}

/* Whether the glyph at pos (pos < len) is part of a word. */
static bool word_at(const struct ui_editor *ed, size_t pos)
{
    uint32_t cp;
    ui_utf8_decode(ed->buf + pos, ed->len - pos, &cp);
    return cp == '_' || iswalnum((wint_t)cp);
}

/* Removes the bytes [from, to) and leaves the cursor at from. */
static void cut(struct ui_editor *ed, size_t from, size_t to)
{
    memmove(ed->buf + from, ed->buf + to, ed->len - to + 1);
    ed->len -= to - from;
    ed->cursor = from;
}

void ui_editor_left(struct ui_editor *ed)
{
    if (ed->cursor > 0)
        ed->cursor = prev_glyph(ed, ed->cursor);
}

void ui_editor_right(struct ui_editor *ed)
{
    if (ed->cursor < ed->len)
        ed->cursor = next_glyph(ed, ed->cursor);
}

void ui_editor_home(struct ui_editor *ed)
{
    ed->cursor = line_start(ed, ed->cursor);
}

void ui_editor_end(struct ui_editor *ed)
{
    ed->cursor = line_end(ed, ed->cursor);
}

/* The start of the word before pos: back over non-word glyphs, then over word glyphs. */
static size_t word_start_before(const struct ui_editor *ed, size_t pos)
{
    while (pos > 0) {
        size_t p = prev_glyph(ed, pos);
        if (word_at(ed, p))
            break;
        pos = p;
    }
    while (pos > 0) {
        size_t p = prev_glyph(ed, pos);
        if (!word_at(ed, p))
            break;
        pos = p;
    }
    return pos;
}

void ui_editor_word_left(struct ui_editor *ed)
{
    ed->cursor = word_start_before(ed, ed->cursor);
}

void ui_editor_word_right(struct ui_editor *ed)
{
    size_t pos = ed->cursor;
    while (pos < ed->len && !word_at(ed, pos))
        pos = next_glyph(ed, pos);
    while (pos < ed->len && word_at(ed, pos))
        pos = next_glyph(ed, pos);
    ed->cursor = pos;
}

void ui_editor_backspace(struct ui_editor *ed)
{
    if (ed->cursor > 0)
        cut(ed, prev_glyph(ed, ed->cursor), ed->cursor);
}

void ui_editor_delete(struct ui_editor *ed)
{
    if (ed->cursor < ed->len)
        cut(ed, ed->cursor, next_glyph(ed, ed->cursor));
}

void ui_editor_kill_end(struct ui_editor *ed)
{
    cut(ed, ed->cursor, line_end(ed, ed->cursor));
}

void ui_editor_kill_start(struct ui_editor *ed)
{
    cut(ed, line_start(ed, ed->cursor), ed->cursor);
}

void ui_editor_kill_word(struct ui_editor *ed)
{
    cut(ed, word_start_before(ed, ed->cursor), ed->cursor);
}

/* Moves the cursor to the line starting at start, at the display column it had. */
static void move_to_line(struct ui_editor *ed, size_t start)
{
    size_t from = line_start(ed, ed->cursor);
    int col = ui_text_width(ed->buf + from, ed->cursor - from);
    size_t end = line_end(ed, start), pos = start;
    while (pos < end) {
        size_t next = next_glyph(ed, pos);
        if (ui_text_width(ed->buf + start, next - start) > col)
            break;
        pos = next;
    }
    ed->cursor = pos;
}

/* Shows history entry i (history->n: the draft). */
static bool show_entry(struct ui_editor *ed, size_t i)
{
    const char *text = i < ed->history->n ? ed->history->items[i] : ed->draft ? ed->draft : "";
    if (!ui_editor_set(ed, text))
        return false;
    ed->hist_pos = i;
    return true;
}

bool ui_editor_up(struct ui_editor *ed)
{
    size_t start = line_start(ed, ed->cursor);
    if (start > 0) {
        move_to_line(ed, line_start(ed, start - 1));
        return true;
    }
    if (!ed->history || ed->hist_pos == 0)
        return false;
    if (ed->hist_pos >= ed->history->n) {
        char *draft = strdup(ed->buf ? ed->buf : "");
        if (!draft)
            return false;
        free(ed->draft);
        ed->draft = draft;
        ed->hist_pos = ed->history->n;
    }
    return show_entry(ed, ed->hist_pos - 1);
}

bool ui_editor_down(struct ui_editor *ed)
{
    size_t end = line_end(ed, ed->cursor);
    if (end < ed->len) {
        move_to_line(ed, end + 1);
        return true;
    }
    if (!ed->history || ed->hist_pos >= ed->history->n)
        return false;
    return show_entry(ed, ed->hist_pos + 1);
}

char *ui_editor_take(struct ui_editor *ed)
{
    char *text = strdup(ed->buf ? ed->buf : "");
    if (!text)
        return NULL;
    if (ed->history) {
        ui_history_add(ed->history, text);
        ed->hist_pos = ed->history->n;
    }
    free(ed->draft);
    ed->draft = NULL;
    ui_editor_clear(ed);
    return text;
}
