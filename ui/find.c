/* Search in the conversation. */
#include "config.h"

#include "find.h"

#include <stdbool.h>
#include <string.h>

/* c in lower case when it is an ASCII letter. */
static char lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* Whether text[0 .. qlen-1] equals query, ASCII letters in either case. */
static bool matches(const char *text, const char *query, size_t qlen)
{
    for (size_t i = 0; i < qlen; i++)
        if (lower(text[i]) != lower(query[i]))
            return false;
    return true;
}

size_t ui_find(const struct ui_sb_block *blocks, size_t n, const char *query, struct ui_match *out,
               size_t max)
{
    const size_t qlen = strlen(query);
    size_t k = 0;
    for (size_t b = 0; qlen && b < n; b++) {
        for (size_t at = 0; at + qlen <= blocks[b].len;) {
            if (!matches(blocks[b].text + at, query, qlen)) {
                at++;
                continue;
            }
            if (k < max)
                out[k] = (struct ui_match){b, at};
            k++;
            at += qlen;
        }
    }
    return k;
}

size_t ui_find_row(const struct ui_scrollback *sb, struct ui_match m)
{
    /* The last row of the block that starts at or before the match. */
    size_t found = sb->n_rows;
    for (size_t r = 0; r < sb->n_rows; r++)
        if (sb->rows[r].block == m.block && sb->rows[r].start <= m.at)
            found = r;
    return found;
}
