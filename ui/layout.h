/*
 * Where the panes go on a terminal of a given size: the conversation on top, the live canvas
 * under it while an answer is generated, the timing pane on the right when there is room,
 * then the input box, the slider bar and the status bar. Every pane but the two bars starts
 * with a title row.
 */
#ifndef DLLM_UI_LAYOUT_H
#define DLLM_UI_LAYOUT_H

#include <stdbool.h>

#define UI_MIN_COLS        40 /* smaller terminals get a notice instead */
#define UI_MIN_ROWS        12
#define UI_TIMING_COLS     34 /* the timing pane's width, its border included */
#define UI_TIMING_MIN_COLS 96 /* the timing pane shows from this width */
#define UI_INPUT_MAX_ROWS  6  /* the input box grows with its text up to this */

struct ui_rect {
    int y, x, h, w; /* h or w 0: not shown */
};

struct ui_layout {
    bool too_small;
    struct ui_rect conversation, canvas, timing, input, settings, status;
};

/*
 * The panes for a terminal rows x cols, an input of input_rows wrapped rows and a canvas of
 * canvas_rows (0: no generation to show). The canvas gets at most two thirds of the space
 * above the input and leaves the conversation three rows.
 */
void ui_layout_compute(struct ui_layout *l, int rows, int cols, int input_rows, int canvas_rows);

#endif
