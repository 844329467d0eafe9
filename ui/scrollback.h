/*
 * The conversation's scrollback: blocks of text wrapped into one list of rows, the window of
 * rows in view, and sticky autoscroll (the view follows new rows only while it is already at
 * the bottom). Rewrapping for a new width keeps the row at the top of the view in place.
 */
#ifndef DLLM_UI_SCROLLBACK_H
#define DLLM_UI_SCROLLBACK_H

#include "wrap.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A block of text to show: wrapped at the view's width less its indent. */
struct ui_sb_block {
    const char *text;
    size_t len;
    uint8_t style;         /* enum ui_style: the indent's, and the text's without styles */
    uint8_t indent;        /* blank columns before each row */
    const uint8_t *styles; /* [len] enum ui_style of each byte, or NULL: all `style` */
    int8_t hang;           /* more blank columns before the rows that continue a line
                              (ui_wrap_hang), such as a description under its own column, or
                              UI_WRAP_HANG_ITEMS: list items continue under their text */
};

/* A row of the scrollback: the bytes [start, end) of block `block`, after hang more blanks. */
struct ui_sb_row {
    size_t block;
    size_t start, end;
    int hang;
};

struct ui_scrollback {
    struct ui_sb_row *rows; /* [n_rows] */
    size_t n_rows;
    size_t top;  /* the first row in view */
    size_t view; /* rows in view */
    bool follow; /* at the bottom: keep the newest rows in view */
};

void ui_scrollback_init(struct ui_scrollback *sb);
void ui_scrollback_fini(struct ui_scrollback *sb);

/*
 * Rewraps the blocks for a view cols wide. When following, the view stays at the bottom;
 * otherwise the text at its top stays at its top. False when memory ran out (nothing changed).
 */
bool ui_scrollback_layout(struct ui_scrollback *sb, const struct ui_sb_block *blocks,
                          size_t n_blocks, int cols);

/* Sets the number of rows in view (a resize). */
void ui_scrollback_set_view(struct ui_scrollback *sb, size_t view);

/*
 * Moves the view by delta rows (negative: up, towards older text), clamped to the rows;
 * following resumes exactly when the view reaches the bottom.
 */
void ui_scrollback_scroll(struct ui_scrollback *sb, long delta);

/* A page up (dir < 0) or down: the view less one row, so one row of context stays. */
void ui_scrollback_page(struct ui_scrollback *sb, int dir);

/* To the first row, or the bottom (following). */
void ui_scrollback_home(struct ui_scrollback *sb);
void ui_scrollback_end(struct ui_scrollback *sb);

/* Cells for row i of the scrollback (i < n_rows), cols wide, as it was laid out. */
void ui_scrollback_cells(const struct ui_scrollback *sb, const struct ui_sb_block *blocks, size_t i,
                         struct ui_cell *cells, int cols);

#endif
