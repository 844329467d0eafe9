/*
 * The live canvas as text: the positions of a diffusion canvas turned into UTF-8 with a style
 * per byte, ready for ui_wrap and ui_cells_fill. A masked position shows as one dim glyph;
 * runs of unmasked positions are joined before decoding, so a character whose bytes span
 * several tokens is drawn whole once all of them are committed (a run cut short by a mask ends
 * in one U+FFFD).
 */
#ifndef DLLM_UI_CANVAS_H
#define DLLM_UI_CANVAS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UI_MASK_GLYPH     "\xe2\x96\x91" /* U+2591 LIGHT SHADE: a masked position */
#define UI_TEXTLESS_GLYPH "\xc2\xb7"     /* U+00B7 MIDDLE DOT: a token without text (EOS) */

/* The state of a canvas position, as the step events report it. */
enum ui_pos_state {
    UI_POS_PROMPT,  /* part of the prompt */
    UI_POS_MASKED,  /* still masked */
    UI_POS_NEW,     /* committed in the latest step */
    UI_POS_SETTLED, /* committed in an earlier step */
};

/*
 * The bytes token `id` stands for (*len of them, not NUL-terminated), or NULL for a token
 * shown without text (an end-of-generation or other control token).
 */
typedef const char *(*ui_piece_fn)(void *ctx, int32_t id, size_t *len);

struct ui_canvas_text {
    char *text;      /* [len] */
    uint8_t *styles; /* [len] enum ui_style of each byte; equal over the bytes of one glyph */
    size_t len, cap;
};

void ui_canvas_text_init(struct ui_canvas_text *ct);
void ui_canvas_text_fini(struct ui_canvas_text *ct);

/*
 * Renders positions [first, first + n) of the canvas ids[] / states[] (enum ui_pos_state) into
 * ct, replacing its contents. A glyph made of bytes from tokens in different states takes the
 * most recent state's style (committed this step over earlier over prompt); a token without
 * text shows as a dim UI_TEXTLESS_GLYPH. False when memory ran out.
 */
bool ui_canvas_render(struct ui_canvas_text *ct, const int32_t *ids, const uint8_t *states,
                      size_t first, size_t n, ui_piece_fn piece, void *ctx);

#endif
