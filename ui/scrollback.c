/* The conversation's scrollback. */
#include "config.h"

#include "scrollback.h"

#include <stdlib.h>

void ui_scrollback_init(struct ui_scrollback *sb)
{
    *sb = (struct ui_scrollback){.follow = true};
}

void ui_scrollback_fini(struct ui_scrollback *sb)
{
    free(sb->rows);
    *sb = (struct ui_scrollback){0};
}

/* The greatest top row: the last rows fill the view (0 when they all fit). */
static size_t max_top(const struct ui_scrollback *sb)
{
    return sb->n_rows > sb->view ? sb->n_rows - sb->view : 0;
}

/* Puts top back in range and, when following, at the bottom. */
static void settle(struct ui_scrollback *sb)
{
    if (sb->follow || sb->top > max_top(sb))
        sb->top = max_top(sb);
}

/* The columns a block's text wraps to in a view cols wide. */
static int text_cols(const struct ui_sb_block *b, int cols)
{
    return cols - b->indent;
}

bool ui_scrollback_layout(struct ui_scrollback *sb, const struct ui_sb_block *blocks,
                          size_t n_blocks, int cols)
{
    size_t total = 0, most = 1;
    for (size_t b = 0; b < n_blocks; b++) {
        size_t n = ui_wrap_hang(blocks[b].text, blocks[b].len, text_cols(&blocks[b], cols),
                                blocks[b].hang, NULL, 0);
        total += n;
        most = n > most ? n : most;
    }
    struct ui_sb_row *rows = malloc((total ? total : 1) * sizeof *rows);
    struct ui_row *wrapped = malloc(most * sizeof *wrapped);
    if (!rows || !wrapped)
        goto fail;

    size_t k = 0;
    for (size_t b = 0; b < n_blocks; b++) {
        size_t n = ui_wrap_hang(blocks[b].text, blocks[b].len, text_cols(&blocks[b], cols),
                                blocks[b].hang, wrapped, most);
        for (size_t r = 0; r < n; r++)
            rows[k++] = (struct ui_sb_row){b, wrapped[r].start, wrapped[r].end, wrapped[r].hang};
    }
    /* The anchor: the block and byte at the top of the view, found again in the new rows. */
    size_t top = 0;
    if (!sb->follow && sb->top < sb->n_rows) {
        struct ui_sb_row anchor = sb->rows[sb->top];
        while (top + 1 < total &&
               (rows[top + 1].block < anchor.block ||
                (rows[top + 1].block == anchor.block && rows[top + 1].start <= anchor.start)))
            top++;
    }
    free(wrapped);
    free(sb->rows);
    sb->rows = rows;
    sb->n_rows = total;
    sb->top = top;
    settle(sb);
    return true;
fail:
    free(rows);
    free(wrapped);
    return false;
}

void ui_scrollback_set_view(struct ui_scrollback *sb, size_t view)
{
    sb->view = view;
    settle(sb);
}

void ui_scrollback_scroll(struct ui_scrollback *sb, long delta)
{
    long top = (long)sb->top + delta, last = (long)max_top(sb);
    sb->top = (size_t)(top < 0 ? 0 : top > last ? last : top);
    sb->follow = sb->top == max_top(sb);
}

void ui_scrollback_page(struct ui_scrollback *sb, int dir)
{
    long page = sb->view > 1 ? (long)sb->view - 1 : 1;
    ui_scrollback_scroll(sb, dir < 0 ? -page : page);
}

void ui_scrollback_home(struct ui_scrollback *sb)
{
    sb->top = 0;
    sb->follow = max_top(sb) == 0;
}

void ui_scrollback_end(struct ui_scrollback *sb)
{
    sb->follow = true;
    settle(sb);
}

void ui_scrollback_cells(const struct ui_scrollback *sb, const struct ui_sb_block *blocks, size_t i,
                         struct ui_cell *cells, int cols)
{
    const struct ui_sb_row *row = &sb->rows[i];
    const struct ui_sb_block *b = &blocks[row->block];
    int indent = b->indent + row->hang < cols ? b->indent + row->hang : cols;
    for (int c = 0; c < indent; c++)
        cells[c] = (struct ui_cell){{' '}, 1, b->style};
    ui_cells_fill(cells + indent, cols - indent, b->text, row->start, row->end, b->styles,
                  b->style);
}
