/*
 * UTF-8 text as the terminal shows it: decoding into glyphs (a base character with the
 * combining marks drawn over it) and their widths in columns, measured with wcwidth(3).
 * The program must have called setlocale(LC_ALL, "") with a UTF-8 locale.
 */
#ifndef DLLM_UI_UTF8_H
#define DLLM_UI_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UI_GLYPH_CHARS 5      /* a base and up to four marks: what one curses cell holds */
#define UI_TAB_STOP    8      /* tabs advance to the next multiple of this many columns */
#define UI_REPLACEMENT 0xFFFD /* drawn for invalid bytes and control characters */

/* One glyph of text: what occupies one or two terminal columns (a tab: up to UI_TAB_STOP). */
struct ui_glyph {
    uint32_t ch[UI_GLYPH_CHARS]; /* ch[0] the base, then marks; unused entries are 0 */
    size_t len;                  /* bytes of text it covers */
    int width;                   /* columns; 0 for a newline */
    bool newline;                /* a '\n': ends the row */
    bool space;                  /* a space or tab: where a row may break */
};

/*
 * Decodes the code point at s[0 .. n-1] (n >= 1) into *cp and returns the bytes it covers.
 * An invalid or truncated sequence gives U+FFFD and covers its longest valid-looking prefix
 * (at least one byte), so decoding never stops and never swallows a following character.
 */
size_t ui_utf8_decode(const char *s, size_t n, uint32_t *cp);

/* Writes the UTF-8 encoding of cp (at most U+10FFFF, not a surrogate) and returns its length. */
size_t ui_utf8_encode(uint32_t cp, char out[4]);

/*
 * The glyph at s[0 .. n-1] (n >= 1) drawn at column col of a row (col matters for tabs).
 * Control characters other than '\n' and '\t', and invalid bytes, become U+FFFD; combining
 * marks (wcwidth 0) join the preceding base, or a space when there is none; marks beyond the
 * fourth are covered but not kept. Returns g->len.
 */
size_t ui_glyph_next(const char *s, size_t n, int col, struct ui_glyph *g);

/* The width in columns of text[0 .. len-1] drawn on one row from column 0 (newlines ignored). */
int ui_text_width(const char *text, size_t len);

#endif
