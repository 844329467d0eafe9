/*
 * Wrapping UTF-8 text into rows of a given width, and turning a row into terminal cells.
 * Rows break at newlines, after spaces when a word would overflow, and inside a word only when
 * it is longer than a row; a glyph (a wide character, or a base with its marks) is never split.
 */
#ifndef DLLM_UI_WRAP_H
#define DLLM_UI_WRAP_H

#include "utf8.h"

#include <stddef.h>
#include <stdint.h>

/* What a cell shows, not how: the screen maps each style to colours or attributes. */
enum ui_style {
    UI_STYLE_TEXT,     /* ordinary text */
    UI_STYLE_DIM,      /* hints and secondary text */
    UI_STYLE_TITLE,    /* pane titles and rules */
    UI_STYLE_FOCUS,    /* the focused pane's title */
    UI_STYLE_USER,     /* the user's turns */
    UI_STYLE_HEADER,   /* the header line of a turn */
    UI_STYLE_NOTICE,   /* notices in the conversation */
    UI_STYLE_PROMPT,   /* canvas: a prompt position */
    UI_STYLE_MASK,     /* canvas: a masked position */
    UI_STYLE_NEW,      /* canvas: a token committed in the latest step */
    UI_STYLE_SETTLED,  /* canvas: a token committed earlier */
    UI_STYLE_STATUS,   /* the status bar */
    UI_STYLE_SELECTED, /* the selected slider; a match of the search */
    UI_STYLE_ERROR,    /* errors */
    UI_STYLE_CODE,     /* Markdown: code spans and blocks, on a distinct background */
    UI_STYLE_STRONG,   /* Markdown: **strong** */
    UI_STYLE_EMPH,     /* Markdown: *emphasis* */
    UI_STYLE_COUNT
};

/* One terminal column. A wide glyph fills two: itself (width 2), then a cell of width 0. */
struct ui_cell {
    uint32_t ch[UI_GLYPH_CHARS]; /* as struct ui_glyph; all 0 in the right half of a wide glyph */
    uint8_t width;               /* 1, 2, or 0 for the right half of a wide glyph */
    uint8_t style;               /* enum ui_style */
};

/*
 * One row of wrapped text: the bytes [start, end) of the text, `width` columns wide, after
 * `hang` blank columns the caller draws first (ui_wrap_hang).
 */
struct ui_row {
    size_t start, end;
    int width;
    int hang;
};

/*
 * Wraps text[0 .. len-1] into rows of at most cols columns (cols < 2 counts as 2). A space that
 * overflows a row ends it and is not drawn; a tab is cut at the row's end. Always at least one
 * row (an empty text, or a text ending in '\n', ends with an empty row). Returns the number of
 * rows and writes the first `max` of them to rows (which may be NULL when max is 0).
 */
size_t ui_wrap(const char *text, size_t len, int cols, struct ui_row *rows, size_t max);

/*
 * Wraps like ui_wrap with a hanging indent: the rows that continue a line (all but the first
 * after each newline) are hang columns narrower and say so in their hang, for the caller to
 * draw them that much further right. Where that would leave fewer than UI_WRAP_HANG_MIN
 * columns, the line's rows do not hang. With hang UI_WRAP_HANG_ITEMS each line hangs by its
 * own leading blanks and list marker ("- ", "* ", "+ ", "\u2022 ", "1. ", "1) "), so that a
 * list item continues under its text and an indented line under its indent.
 */
#define UI_WRAP_HANG_MIN   16
#define UI_WRAP_HANG_ITEMS (-1)
size_t ui_wrap_hang(const char *text, size_t len, int cols, int hang, struct ui_row *rows,
                    size_t max);

/*
 * Wraps like ui_wrap but breaks rows where they fill, between any two glyphs (a space is drawn
 * like any character): for the live canvas, where a committed space must not reflow the rows.
 */
size_t ui_wrap_chars(const char *text, size_t len, int cols, struct ui_row *rows, size_t max);

/*
 * Where byte offset pos of the text falls in its wrapped rows[0 .. n-1] (as ui_wrap made them
 * for cols): the row and the column. A position at the end of a row that broke there is on
 * that row, at its width.
 */
void ui_wrap_locate(const char *text, const struct ui_row *rows, size_t n, int cols, size_t pos,
                    int *row, int *col);

/*
 * Fills cells[0 .. cols-1] with the glyphs of text[start .. end) from column 0 and blanks after
 * them. Each glyph takes the style of its first byte in styles, or `style` when styles is NULL;
 * the blanks take `style`. A glyph that does not fit is left out. Returns the columns of text.
 */
int ui_cells_fill(struct ui_cell *cells, int cols, const char *text, size_t start, size_t end,
                  const uint8_t *styles, uint8_t style);

#endif
