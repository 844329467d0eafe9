/*
 * libFuzzer target: the Markdown renderer of settled answers (ui/markdown.c) on arbitrary
 * bytes, as the transcript calls it (the text up to its first NUL). The rendering must stay
 * inside its documented bounds: a NUL-terminated text no longer than the source plus two bytes
 * per line (a bullet "- " becomes "• ", 4 bytes), a known style for each byte, and the last
 * code block within the source.
 */
#include "fuzz.h"
#include "markdown.h"
#include "wrap.h"

#include <stdlib.h>
#include <string.h>

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
    free(out);
    free(styles);
    return 0;
}
