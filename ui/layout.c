/* Where the panes go. */
#include "config.h"

#include "layout.h"

static int clamp(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

void ui_layout_compute(struct ui_layout *l, int rows, int cols, int message_rows, int input_rows,
                       int canvas_rows, int settings_rows)
{
    *l = (struct ui_layout){.too_small = rows < UI_MIN_ROWS || cols < UI_MIN_COLS};
    if (l->too_small)
        return;
    l->status = (struct ui_rect){rows - 1, 0, 1, cols};
    int set_h = clamp(settings_rows, 1, UI_SETTINGS_MAX_ROWS);
    l->settings = (struct ui_rect){rows - 1 - set_h, 0, set_h, cols};
    int in_h = 1 + clamp(input_rows, 1, UI_INPUT_MAX_ROWS);
    l->input = (struct ui_rect){l->settings.y - in_h, 0, in_h, cols};

    int msg_h = clamp(message_rows, 0, UI_MESSAGE_MAX_ROWS);
    if (msg_h > 0)
        l->message = (struct ui_rect){l->input.y - msg_h, 0, msg_h, cols};

    int body = l->input.y - msg_h, left = cols;
    if (cols >= UI_TIMING_MIN_COLS) {
        left = cols - UI_TIMING_COLS;
        l->timing = (struct ui_rect){0, left, body, UI_TIMING_COLS};
    }
    int canvas_h = 0;
    if (canvas_rows > 0)
        canvas_h = clamp(canvas_rows + 1, 2, clamp(body * 2 / 3, 2, body - 3));
    l->canvas = (struct ui_rect){body - canvas_h, 0, canvas_h, canvas_h ? left : 0};
    l->conversation = (struct ui_rect){0, 0, body - canvas_h, left};
}
