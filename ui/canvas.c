/* The live canvas as styled text. */
#include "config.h"

#include "canvas.h"
#include "utf8.h"
#include "wrap.h"

#include <stdlib.h>
#include <string.h>

void ui_canvas_text_init(struct ui_canvas_text *ct)
{
    *ct = (struct ui_canvas_text){0};
}

void ui_canvas_text_fini(struct ui_canvas_text *ct)
{
    free(ct->text);
    free(ct->styles);
    *ct = (struct ui_canvas_text){0};
}

/* Appends n bytes, all of one style. */
static bool append(struct ui_canvas_text *ct, const char *bytes, size_t n, uint8_t style)
{
    if (ct->len + n > ct->cap) {
        size_t cap = ct->cap ? ct->cap : 256;
        while (cap < ct->len + n)
            cap *= 2;
        char *text = realloc(ct->text, cap);
        if (!text)
            return false;
        ct->text = text;
        uint8_t *styles = realloc(ct->styles, cap);
        if (!styles)
            return false;
        ct->styles = styles;
        ct->cap = cap;
    }
    memcpy(ct->text + ct->len, bytes, n);
    memset(ct->styles + ct->len, style, n);
    ct->len += n;
    return true;
}

/* The style of an unmasked position's bytes, ordered so a later state ranks higher. */
static uint8_t state_style(uint8_t state)
{
    switch (state) {
    case UI_POS_PROMPT: return UI_STYLE_PROMPT;
    case UI_POS_NEW: return UI_STYLE_NEW;
    default: return UI_STYLE_SETTLED;
    }
}

/* How recent a style's state is: NEW > SETTLED > PROMPT. */
static int rank(uint8_t style)
{
    return style == UI_STYLE_NEW ? 2 : style == UI_STYLE_SETTLED ? 1 : 0;
}

/* Gives every glyph of the unmasked run ct->text[from .. len) its most recent byte's style. */
static void unify_run(struct ui_canvas_text *ct, size_t from)
{
    struct ui_glyph g;
    for (size_t i = from; i < ct->len; i += g.len) {
        ui_glyph_next(ct->text + i, ct->len - i, 0, &g);
        uint8_t best = ct->styles[i];
        for (size_t k = i + 1; k < i + g.len; k++)
            if (rank(ct->styles[k]) > rank(best))
                best = ct->styles[k];
        memset(ct->styles + i, best, g.len);
    }
}

/* Ends the unmasked run starting at *run and appends a one-glyph marker after it. */
static bool append_marker(struct ui_canvas_text *ct, size_t *run, const char *glyph, uint8_t style)
{
    unify_run(ct, *run);
    if (!append(ct, glyph, strlen(glyph), style))
        return false;
    *run = ct->len;
    return true;
}

bool ui_canvas_render(struct ui_canvas_text *ct, const int32_t *ids, const uint8_t *states,
                      size_t first, size_t n, ui_piece_fn piece, void *ctx)
{
    ct->len = 0;
    size_t run = 0; /* where the current run of unmasked positions starts in ct->text */
    for (size_t p = first; p < first + n; p++) {
        size_t len = 0;
        const char *bytes = states[p] == UI_POS_MASKED ? NULL : piece(ctx, ids[p], &len);
        bool ok = states[p] == UI_POS_MASKED ? append_marker(ct, &run, UI_MASK_GLYPH, UI_STYLE_MASK)
                  : !bytes ? append_marker(ct, &run, UI_TEXTLESS_GLYPH, UI_STYLE_DIM)
                           : append(ct, bytes, len, state_style(states[p]));
        if (!ok)
            return false;
    }
    unify_run(ct, run);
    return true;
}
