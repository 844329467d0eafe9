/*
 * libFuzzer target: the Markdown renderer of settled answers (ui/markdown.c) on arbitrary
 * bytes, as the transcript calls it (the text up to its first NUL). The rendering must stay
 * inside its documented bounds: a NUL-terminated text no longer than the source plus two bytes
 * per line (a bullet "- " becomes "• ", 4 bytes), a known style for each byte, and the last
 * code block within the source. The rendered text then wraps as the conversation wraps it
 * (each line hanging by its list marker, UI_WRAP_HANG_ITEMS) into rows that follow each other
 * through the text, each within the columns its hang leaves.
 */
#include "fuzz.h"
#include "markdown.h"
#include "wrap.h"

#include <stdlib.h>
#include <string.h>

/* Aborts unless text[0 .. len-1] wraps at cols into rows within their bounds. */
static void check_wrap(const char *text, size_t len, int cols)
{
    const size_t n = ui_wrap_hang(text, len, cols, UI_WRAP_HANG_ITEMS, NULL, 0);
    struct ui_row *rows = malloc(n * sizeof *rows);
    if (!rows || n == 0 || ui_wrap_hang(text, len, cols, UI_WRAP_HANG_ITEMS, rows, n) != n)
        abort();
    for (size_t r = 0; r < n; r++) {
        const struct ui_row *row = &rows[r];
        if (row->start > row->end || row->end > len || (r > 0 && row->start < rows[r - 1].end) ||
            row->hang < 0 || (row->hang > 0 && cols - row->hang < UI_WRAP_HANG_MIN) ||
            row->width > cols - row->hang)
            abort();
    }
    free(rows);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *src = (const char *)data;
    const size_t len = strnlen(src, size);
    size_t lines = 1;
    for (size_t i = 0; i < len; i++)
        lines += src[i] == '\n';
    char *out;
    uint8_t *styles;
    size_t out_len;
    if (!ui_markdown_render(src, len, &out, &styles, &out_len))
        return 0;
    fuzz_accepted++;
    if (out_len > len + 2 * lines || out[out_len] != '\0' || strlen(out) != out_len)
        abort();
    for (size_t i = 0; i < out_len; i++)
        if (styles[i] >= UI_STYLE_COUNT)
            abort();
    size_t start, end;
    if (ui_markdown_last_code(src, len, &start, &end) && !(start <= end && end <= len))
        abort();
    check_wrap(out, out_len, 20);
    check_wrap(out, out_len, 80);
    free(out);
    free(styles);
    return 0;
}
