/*
 * Search in the conversation (/find, Ctrl+F): the occurrences of a text in the scrollback's
 * blocks, and the row that shows one.
 */
#ifndef DLLM_UI_FIND_H
#define DLLM_UI_FIND_H

#include "scrollback.h"

#include <stddef.h>

/* An occurrence: byte `at` of block `block`. */
struct ui_match {
    size_t block, at;
};

/*
 * Finds each occurrence of query (ASCII letters match either case; occurrences do not
 * overlap) in the texts of blocks[0 .. n-1], in order; writes the first max to out and
 * returns how many there are. An empty query matches nothing.
 */
size_t ui_find(const struct ui_sb_block *blocks, size_t n, const char *query, struct ui_match *out,
               size_t max);

/* The row of sb that shows match m, or sb->n_rows when none does. */
size_t ui_find_row(const struct ui_scrollback *sb, struct ui_match m);

#endif
