/*
 * Where the panes go on a terminal of a given size: the conversation on top, the live canvas
 * under it while an answer is generated, the timing pane on the right when there is room,
 * then the message lines (refusals, errors and confirmations) when there is a message, the
 * input box, the slider bar and the status bar. Every pane but the two bars starts
 * with a title row.
 */
#ifndef DLLM_UI_LAYOUT_H
#define DLLM_UI_LAYOUT_H

#include <stdbool.h>

#define UI_MIN_COLS          40 /* smaller terminals get a notice instead */
#define UI_MIN_ROWS          12
#define UI_TIMING_COLS       34 /* the timing pane's width, its border included */
#define UI_TIMING_MIN_COLS   96 /* the timing pane shows from this width */
#define UI_INPUT_MAX_ROWS    6  /* the input box grows with its text up to this */
#define UI_MESSAGE_MAX_ROWS  3  /* a longer message is cut there (F1 shows all of it) */
#define UI_SETTINGS_MAX_ROWS 3  /* the slider bar wraps over at most this many rows */

struct ui_rect {
    int y, x, h, w; /* h or w 0: not shown */
};

struct ui_layout {
    bool too_small;
    struct ui_rect conversation, canvas, timing, message, input, settings, status;
};

/*
 * The panes for a terminal rows x cols, a message of message_rows wrapped rows (0: none; at
 * most UI_MESSAGE_MAX_ROWS show), an input of input_rows wrapped rows and a canvas of
 * canvas_rows (0: no generation to show), and a slider bar wrapped to settings_rows (1 to
 * UI_SETTINGS_MAX_ROWS). The canvas gets at most two thirds of the space above the message and
 * leaves the conversation three rows.
 */
void ui_layout_compute(struct ui_layout *l, int rows, int cols, int message_rows, int input_rows,
                       int canvas_rows, int settings_rows);

#endif
