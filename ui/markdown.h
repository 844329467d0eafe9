/*
 * A settled answer's Markdown as styled text for the conversation: headings, emphasis, list
 * bullets, inline code and fenced code blocks. No highlighting; what is not recognised stays
 * as written. The live canvas and the raw view show the text as the model wrote it.
 */
#ifndef DLLM_UI_MARKDOWN_H
#define DLLM_UI_MARKDOWN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Renders src[0 .. len-1]: "# " to "###### " headings lose their marks and take
 * UI_STYLE_HEADER; a line "```" (with an optional language) opens or closes a code block,
 * whose lines take UI_STYLE_CODE and are not parsed; "- ", "* " and "+ " list items become
 * "• "; in other text `code` takes UI_STYLE_CODE, **strong** UI_STYLE_STRONG and *emphasis*
 * or _emphasis_ UI_STYLE_EMPH, their marks dropped (an unclosed mark stays as written).
 * *out (NUL-terminated) and *styles (one enum ui_style per byte) are malloc'd, *out_len
 * their length. False when memory ran out (nothing allocated).
 */
bool ui_markdown_render(const char *src, size_t len, char **out, uint8_t **styles, size_t *out_len);

/*
 * Where the contents of the last fenced code block of src[0 .. len-1] lie: [*start, *end),
 * without its fences and its final newline. False when there is none (an unclosed block
 * runs to the end).
 */
bool ui_markdown_last_code(const char *src, size_t len, size_t *start, size_t *end);

#endif
