/* Wrapping text into rows, and rows into cells. */
#include "config.h"

#include "wrap.h"

#include <stdbool.h>
#include <string.h>

/* The columns glyph g takes at column col of a row cols wide: a tab stops at the row's end. */
static int glyph_cols(const struct ui_glyph *g, int col, int cols)
{
    if (g->space && g->width > 1 && col + g->width > cols && col < cols)
        return cols - col;
    return g->width;
}

/* Appends the row [start, end) of width w after hang blanks to rows, counting it even when
 * rows is full. */
static void emit(struct ui_row *rows, size_t max, size_t *n, size_t start, size_t end, int w,
                 int hang)
{
    if (*n < max)
        rows[*n] = (struct ui_row){start, end, w, hang};
    (*n)++;
}

/*
 * The hang UI_WRAP_HANG_ITEMS gives the line text[0 .. len-1]: the columns of its leading
 * blanks and of a list marker after them ("- ", "* ", "+ ", "\u2022 ", "12. ", "3) ") with
 * its space.
 */
static int item_hang(const char *text, size_t len)
{
    size_t lead = 0;
    while (lead < len && text[lead] == ' ')
        lead++;
    const char *s = text + lead;
    const size_t rest = len - lead;
    size_t digits = 0, bytes = 0; /* the marker's bytes; each is a column but U+2022's three */
    while (digits < rest && digits < 9 && s[digits] >= '0' && s[digits] <= '9')
        digits++;
    int width = 0;
    if (digits > 0 && digits < rest && (s[digits] == '.' || s[digits] == ')'))
        bytes = digits + 1, width = (int)bytes;
    else if (digits == 0 && rest > 0 && memchr("-*+", s[0], 3))
        bytes = 1, width = 1;
    else if (rest >= 3 && memcmp(s, "\u2022", 3) == 0)
        bytes = 3, width = 1;
    if (width > 0 && bytes < rest && s[bytes] == ' ')
        return (int)lead + width + 1;
    return (int)lead;
}

/*
 * Wraps as ui_wrap_hang does, or when words is false as ui_wrap_chars does: a line's first row
 * cols wide, the rows that continue it cols less the line's hang.
 */
static size_t wrap(const char *text, size_t len, int cols, int hang, bool words,
                   struct ui_row *rows, size_t max)
{
    if (cols < 2)
        cols = 2;
    const bool items = hang == UI_WRAP_HANG_ITEMS;
    size_t n = 0, start = 0, i = 0;
    size_t brk = 0; /* the byte after the row's last space, or 0 when it has none */
    int col = 0, brk_col = 0, lead = 0, limit = cols; /* this row's hang and width */
    int line_hang = -1; /* the hang of the line being wrapped, -1 until it starts */
    while (i < len) {
        if (line_hang < 0) {
            const char *nl = memchr(text + i, '\n', len - i);
            line_hang = items ? item_hang(text + i, nl ? (size_t)(nl - text) - i : len - i) : hang;
            if (line_hang < 0 || cols - line_hang < UI_WRAP_HANG_MIN)
                line_hang = 0;
        }
        struct ui_glyph g;
        ui_glyph_next(text + i, len - i, col, &g);
        int w = glyph_cols(&g, col, limit);
        if (g.newline || (col + w > limit && g.space && words)) {
            emit(rows, max, &n, start, i, col, lead);
            i += g.len;
        } else if (col + w > limit && brk > start) {
            emit(rows, max, &n, start, brk, brk_col, lead);
            i = brk;
        } else if (col + w > limit) {
            emit(rows, max, &n, start, i, col, lead);
        } else {
            i += g.len;
            col += w;
            if (g.space && words) {
                brk = i;
                brk_col = col;
            }
            continue;
        }
        start = i;
        col = 0;
        lead = g.newline ? 0 : line_hang;
        limit = cols - lead;
        if (g.newline)
            line_hang = -1;
    }
    emit(rows, max, &n, start, len, col, lead);
    return n;
}

size_t ui_wrap(const char *text, size_t len, int cols, struct ui_row *rows, size_t max)
{
    return wrap(text, len, cols, 0, true, rows, max);
}

size_t ui_wrap_hang(const char *text, size_t len, int cols, int hang, struct ui_row *rows,
                    size_t max)
{
    return wrap(text, len, cols, hang, true, rows, max);
}

size_t ui_wrap_chars(const char *text, size_t len, int cols, struct ui_row *rows, size_t max)
{
    return wrap(text, len, cols, 0, false, rows, max);
}

void ui_wrap_locate(const char *text, const struct ui_row *rows, size_t n, int cols, size_t pos,
                    int *row, int *col)
{
    size_t r = 0;
    while (r + 1 < n && rows[r + 1].start <= pos)
        r++;
    size_t stop = pos < rows[r].end ? pos : rows[r].end;
    int c = 0;
    struct ui_glyph g;
    for (size_t i = rows[r].start; i < stop; c += glyph_cols(&g, c, cols))
        i += ui_glyph_next(text + i, stop - i, c, &g);
    *row = (int)r;
    *col = c;
}

int ui_cells_fill(struct ui_cell *cells, int cols, const char *text, size_t start, size_t end,
                  const uint8_t *styles, uint8_t style)
{
    int col = 0;
    size_t i = start;
    while (i < end && col < cols) {
        struct ui_glyph g;
        ui_glyph_next(text + i, end - i, col, &g);
        int w = glyph_cols(&g, col, cols);
        if (g.newline || col + w > cols)
            break;
        uint8_t st = styles ? styles[i] : style;
        if (g.space && w > 1) {
            for (int k = 0; k < w; k++)
                cells[col + k] = (struct ui_cell){{' '}, 1, st};
        } else {
            cells[col] = (struct ui_cell){{0}, (uint8_t)w, st};
            memcpy(cells[col].ch, g.ch, sizeof g.ch);
            if (w == 2)
                cells[col + 1] = (struct ui_cell){{0}, 0, st};
        }
        col += w;
        i += g.len;
    }
    int used = col;
    for (; col < cols; col++)
        cells[col] = (struct ui_cell){{' '}, 1, style};
    return used;
}
