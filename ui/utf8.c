/* UTF-8 decoding into glyphs and their terminal widths. */
#include "config.h"

#include "utf8.h"

#include <string.h>
#include <wchar.h>

/* Whether b is a continuation byte 10xxxxxx. */
static bool is_cont(unsigned char b)
{
    return (b & 0xC0) == 0x80;
}

size_t ui_utf8_decode(const char *s, size_t n, uint32_t *cp)
{
    const unsigned char *u = (const unsigned char *)s;
    unsigned char b = u[0];
    if (b < 0x80) {
        *cp = b;
        return 1;
    }
    size_t need;
    uint32_t v;
    /* The second byte's range excludes overlong forms, surrogates and values past U+10FFFF. */
    unsigned char lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) {
        need = 2;
        v = b & 0x1F;
    } else if (b >= 0xE0 && b <= 0xEF) {
        need = 3;
        v = b & 0x0F;
        if (b == 0xE0)
            lo = 0xA0;
        if (b == 0xED)
            hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
        need = 4;
        v = b & 0x07;
        if (b == 0xF0)
            lo = 0x90;
        if (b == 0xF4)
            hi = 0x8F;
    } else {
        *cp = UI_REPLACEMENT;
        return 1;
    }
    size_t i = 1;
    for (; i < need && i < n; i++) {
        unsigned char c = u[i];
        if (i == 1 ? (c < lo || c > hi) : !is_cont(c))
            break;
        v = (v << 6) | (c & 0x3F);
    }
    if (i < need) {
        *cp = UI_REPLACEMENT;
        return i;
    }
    *cp = v;
    return need;
}

size_t ui_utf8_encode(uint32_t cp, char out[4])
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* The columns a code point takes: 0 for marks, 1 or 2, or -1 for a control character. */
static int char_width(uint32_t cp)
{
    if (cp < 0x20 || (cp >= 0x7F && cp < 0xA0))
        return -1;
    return wcwidth((wchar_t)cp);
}

size_t ui_glyph_next(const char *s, size_t n, int col, struct ui_glyph *g)
{
    memset(g, 0, sizeof *g);
    uint32_t cp;
    size_t len = ui_utf8_decode(s, n, &cp);
    int nch = 0;
    if (cp == '\n') {
        g->newline = true;
        g->ch[nch++] = ' ';
    } else if (cp == '\t') {
        g->space = true;
        g->ch[nch++] = ' ';
        g->width = UI_TAB_STOP - col % UI_TAB_STOP;
    } else {
        int w = char_width(cp);
        if (w < 0) {
            cp = UI_REPLACEMENT;
            w = 1;
        }
        if (w == 0) {
            g->ch[nch++] = ' ';
            w = 1;
        }
        g->ch[nch++] = cp;
        g->width = w;
        g->space = cp == ' ';
    }
    /* Marks that follow a printable base are part of its cell. */
    while (!g->newline && len < n) {
        uint32_t mark;
        size_t mlen = ui_utf8_decode(s + len, n - len, &mark);
        if (char_width(mark) != 0)
            break;
        if (nch < UI_GLYPH_CHARS)
            g->ch[nch++] = mark;
        len += mlen;
    }
    g->len = len;
    return len;
}

int ui_text_width(const char *text, size_t len)
{
    int col = 0;
    struct ui_glyph g;
    for (size_t i = 0; i < len; col += g.width)
        i += ui_glyph_next(text + i, len - i, col, &g);
    return col;
}
