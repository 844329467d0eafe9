/* Markdown answers as styled text. */
#include "config.h"

#include "markdown.h"
#include "wrap.h"

#include <stdlib.h>
#include <string.h>

/* The text being built: bytes and their styles. */
struct md_out {
    char *text;
    uint8_t *styles;
    size_t len, cap;
    bool failed;
};

/* Appends n bytes of s in style st. */
static void put(struct md_out *o, const char *s, size_t n, uint8_t st)
{
    if (o->failed)
        return;
    if (o->len + n + 1 > o->cap) {
        size_t cap = o->cap ? o->cap : 64;
        while (o->len + n + 1 > cap)
            cap *= 2;
        char *text = realloc(o->text, cap);
        if (text)
            o->text = text;
        uint8_t *styles = text ? realloc(o->styles, cap) : NULL;
        if (styles)
            o->styles = styles;
        if (!text || !styles) {
            o->failed = true;
            return;
        }
        o->cap = cap;
    }
    memcpy(o->text + o->len, s, n);
    memset(o->styles + o->len, st, n);
    o->len += n;
}

/* Where the mark m (1 or 2 bytes) closes in line[from, end), or end when it does not. */
static size_t closing(const char *line, size_t from, size_t end, const char *m, size_t mlen)
{
    for (size_t i = from; i + mlen <= end; i++)
        if (memcmp(line + i, m, mlen) == 0 && i > from)
            return i;
    return end;
}

/* Inline Markdown of line[0 .. n-1]: code spans, strong and emphasis, in style base. */
static void inline_text(struct md_out *o, const char *line, size_t n, uint8_t base)
{
    size_t i = 0;
    while (i < n) {
        const char c = line[i];
        const bool strong = (c == '*' || c == '_') && i + 1 < n && line[i + 1] == c;
        const char mark[2] = {c, c};
        size_t mlen = strong ? 2 : 1, close = n;
        uint8_t st = UI_STYLE_TEXT;
        if (c == '`') {
            close = closing(line, i + 1, n, "`", 1);
            st = UI_STYLE_CODE;
        } else if ((c == '*' || c == '_') && i + mlen < n && line[i + mlen] != ' ') {
            close = closing(line, i + mlen, n, mark, mlen);
            st = strong ? UI_STYLE_STRONG : UI_STYLE_EMPH;
        }
        if (close < n && line[close - 1] != ' ') {
            put(o, line + i + mlen, close - i - mlen, st);
            i = close + mlen;
        } else {
            put(o, line + i, 1, base);
            i++;
        }
    }
}

/*
 * Whether line[0 .. n-1] (its indent taken off) fences a code block: "```" opens one, with a
 * language after it or not; inside a block only "```" and blanks close it.
 */
static bool fence(const char *line, size_t n, bool inside)
{
    if (n < 3 || memcmp(line, "```", 3) != 0)
        return false;
    for (size_t i = 3; inside && i < n; i++)
        if (line[i] != ' ' && line[i] != '\r')
            return false;
    return true;
}

bool ui_markdown_last_code(const char *src, size_t len, size_t *start, size_t *end)
{
    bool code = false, found = false;
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(src + at, '\n', len - at);
        const size_t stop = nl ? (size_t)(nl - src) : len, next = nl ? stop + 1 : len;
        size_t lead = at;
        while (lead < stop && src[lead] == ' ')
            lead++;
        if (fence(src + lead, stop - lead, code)) {
            if (!code)
                *start = next;
            else
                *end = at > *start ? at - 1 : *start;
            found |= code;
            code = !code;
        }
        at = next;
    }
    if (code) {
        *end = len;
        found = true;
    }
    return found;
}

bool ui_markdown_render(const char *src, size_t len, char **out, uint8_t **styles, size_t *out_len)
{
    struct md_out o = {0};
    bool code = false;
    for (size_t start = 0; start < len;) {
        const char *nl = memchr(src + start, '\n', len - start);
        size_t end = nl ? (size_t)(nl - src) : len;
        const char *line = src + start;
        size_t n = end - start, lead = 0;
        while (lead < n && line[lead] == ' ')
            lead++;
        if (fence(line + lead, n - lead, code)) {
            code = !code; /* the fence line itself is not shown */
        } else if (code) {
            put(&o, line, n, UI_STYLE_CODE);
            put(&o, "\n", nl ? 1 : 0, UI_STYLE_TEXT);
        } else {
            size_t h = 0;
            while (h < n && h < 6 && line[h] == '#')
                h++;
            if (h > 0 && h < n && line[h] == ' ') {
                inline_text(&o, line + h + 1, n - h - 1, UI_STYLE_HEADER);
            } else if (n - lead >= 2 && strchr("-*+", line[lead]) && line[lead + 1] == ' ') {
                put(&o, line, lead, UI_STYLE_TEXT);
                put(&o, "\u2022 ", strlen("\u2022 "), UI_STYLE_TEXT);
                inline_text(&o, line + lead + 2, n - lead - 2, UI_STYLE_TEXT);
            } else {
                inline_text(&o, line, n, UI_STYLE_TEXT);
            }
            put(&o, "\n", nl ? 1 : 0, UI_STYLE_TEXT);
        }
        if (!nl)
            break;
        start = end + 1;
    }
    put(&o, "", 0, UI_STYLE_TEXT); /* room for the NUL, even for an empty text */
    if (o.failed || !o.text) {
        free(o.text);
        free(o.styles);
        return false;
    }
    o.text[o.len] = '\0';
    *out = o.text;
    *styles = o.styles;
    *out_len = o.len;
    return true;
}
