/* The curses side of dllm-tui: terminal set-up, keys, drawing, and dumps. */
#include "config.h"

#include "clipboard.h"
#include "format.h"
#include "screen.h"
#include "utf8.h"

#include <curses.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <term.h>
#include <unistd.h>
#include <wchar.h>

/* Key codes given to define_key for sequences terminfo does not name. */
enum {
    CODE_PASTE_BEGIN = KEY_MAX + 1,
    CODE_PASTE_END,
    CODE_CTRL_LEFT,
    CODE_CTRL_RIGHT,
};

#define RULE  "\u2500"   /* ─ */
#define VRULE "\u2502"   /* │ */
#define DOT   " \u00b7 " /* · between items */

#define UI_HEADLESS_MAX 1000 /* rows or columns of a headless screen, at most */

/* The colour pairs: foreground on the default background, or black (code: white) on a colour. */
enum {
    PAIR_CYAN = 1,
    PAIR_YELLOW,
    PAIR_GREEN,
    PAIR_BLUE,
    PAIR_RED,
    PAIR_ON_GREEN,
    PAIR_ON_YELLOW,
    PAIR_CODE
};

/* Fills the attribute and colour pair of each style for the colour mode. */
static void set_styles(struct ui_screen *s)
{
    static const struct {
        attr_t attr;
        short pair;
        attr_t mono; /* without colours */
    } table[UI_STYLE_COUNT] = {
        [UI_STYLE_TEXT] = {A_NORMAL, 0, A_NORMAL},
        [UI_STYLE_DIM] = {A_DIM, 0, A_DIM},
        [UI_STYLE_TITLE] = {A_NORMAL, PAIR_CYAN, A_NORMAL},
        [UI_STYLE_FOCUS] = {A_BOLD, PAIR_YELLOW, A_BOLD},
        [UI_STYLE_USER] = {A_NORMAL, PAIR_GREEN, A_BOLD},
        [UI_STYLE_HEADER] = {A_BOLD, PAIR_CYAN, A_UNDERLINE},
        [UI_STYLE_NOTICE] = {A_NORMAL, PAIR_YELLOW, A_UNDERLINE},
        [UI_STYLE_PROMPT] = {A_NORMAL, PAIR_BLUE, A_UNDERLINE},
        [UI_STYLE_MASK] = {A_DIM, 0, A_DIM},
        [UI_STYLE_NEW] = {A_BOLD, PAIR_ON_GREEN, A_REVERSE | A_BOLD},
        [UI_STYLE_SETTLED] = {A_NORMAL, 0, A_NORMAL},
        [UI_STYLE_STATUS] = {A_REVERSE, 0, A_REVERSE},
        [UI_STYLE_SELECTED] = {A_BOLD, PAIR_ON_YELLOW, A_REVERSE | A_BOLD},
        [UI_STYLE_ERROR] = {A_BOLD, PAIR_RED, A_BOLD},
        [UI_STYLE_CODE] = {A_NORMAL, PAIR_CODE, A_REVERSE},
        [UI_STYLE_STRONG] = {A_BOLD, 0, A_BOLD},
        [UI_STYLE_EMPH] = {A_ITALIC, 0, A_UNDERLINE},
    };
    for (int i = 0; i < UI_STYLE_COUNT; i++) {
        s->attrs[i] = s->plain ? A_NORMAL : s->colors ? table[i].attr : table[i].mono;
        s->pairs[i] = s->colors ? table[i].pair : 0;
    }
    if (s->colors) {
        use_default_colors();
        init_pair(PAIR_CYAN, COLOR_CYAN, -1);
        init_pair(PAIR_YELLOW, COLOR_YELLOW, -1);
        init_pair(PAIR_GREEN, COLOR_GREEN, -1);
        init_pair(PAIR_BLUE, COLOR_BLUE, -1);
        init_pair(PAIR_RED, COLOR_RED, -1);
        init_pair(PAIR_ON_GREEN, COLOR_BLACK, COLOR_GREEN);
        init_pair(PAIR_ON_YELLOW, COLOR_BLACK, COLOR_YELLOW);
        init_pair(PAIR_CODE, COLOR_WHITE, COLOR_BLUE);
    }
}

bool ui_screen_check_terminal(char *err, size_t size)
{
    const char *term = getenv("TERM");
    if (!term || !*term) {
        snprintf(err, size, "TERM is not set: dllm-tui needs to know the terminal");
        return false;
    }
    int found;
    if (setupterm(term, STDOUT_FILENO, &found) != OK) {
        snprintf(err, size, "cannot set up the terminal: TERM=%s is not in the terminfo database",
                 term);
        return false;
    }
    const char *cup = tigetstr("cup");
    const bool moves = cup && cup != (char *)-1;
    del_curterm(cur_term);
    if (!moves) {
        snprintf(err, size,
                 "TERM=%s cannot move the cursor: dllm-tui needs a full-screen terminal "
                 "(dllm run prints plain text)",
                 term);
        return false;
    }
    return true;
}

/*
 * Whether LINES and COLUMNS, which size a headless screen (ncurses reads them and allocates
 * every cell up front), are within UI_HEADLESS_MAX; else the error names the one too large.
 */
static bool headless_size_ok(char *err, size_t size)
{
    static const char *const names[] = {"LINES", "COLUMNS"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const char *v = getenv(names[i]);
        if (v && strtol(v, NULL, 10) > UI_HEADLESS_MAX) {
            snprintf(err, size, "%s=%s is too large for a headless screen: use at most %d",
                     names[i], v, UI_HEADLESS_MAX);
            return false;
        }
    }
    return true;
}

bool ui_screen_open(struct ui_screen *s, enum ui_color_mode mode, bool headless, int rows, int cols,
                    char *err, size_t size)
{
    *s = (struct ui_screen){.headless = headless};
    if (!headless && !ui_screen_check_terminal(err, size))
        return false;
    if (headless && !headless_size_ok(err, size))
        return false;
    const char *term = getenv("TERM");
    if (!term || !*term)
        term = "xterm-256color"; /* headless */
    s->out = headless ? fopen("/dev/null", "w") : stdout;
    s->in = headless ? fopen("/dev/null", "r") : stdin;
    if (!s->out || !s->in) {
        snprintf(err, size, "cannot open /dev/null: %s", strerror(errno));
        goto fail;
    }
    SCREEN *scr = newterm(term, s->out, s->in);
    if (!scr) {
        snprintf(err, size, "cannot set up the terminal: TERM=%s is not in the terminfo database",
                 term);
        goto fail;
    }
    s->term = scr;
    set_term(scr);
    if (headless && rows > 0 && cols > 0)
        resizeterm(rows, cols);
    raw();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    nodelay(stdscr, TRUE);
    set_escdelay(25);
    define_key("\033[200~", CODE_PASTE_BEGIN);
    define_key("\033[201~", CODE_PASTE_END);
    define_key("\033[1;5D", CODE_CTRL_LEFT);
    define_key("\033[1;5C", CODE_CTRL_RIGHT);
    if (!headless) {
        fputs("\033[?2004h", s->out); /* bracketed paste on */
        fflush(s->out);
    }
    s->plain = strcmp(term, "dumb") == 0;
    const char *no_color = getenv("NO_COLOR");
    bool want = mode == UI_COLOR_ALWAYS || (mode == UI_COLOR_AUTO && !(no_color && *no_color));
    s->colors = !s->plain && want && has_colors() && start_color() == OK;
    set_styles(s);
    return true;
fail:
    ui_screen_close(s);
    return false;
}

void ui_screen_close(struct ui_screen *s)
{
    if (s->term) {
        if (!s->headless) {
            fputs("\033[?2004l", s->out); /* bracketed paste off */
            fflush(s->out);
        }
        endwin();
        delscreen(s->term);
        s->term = NULL;
    }
    if (s->headless) {
        if (s->out)
            fclose(s->out);
        if (s->in)
            fclose(s->in);
    }
    s->out = s->in = NULL;
    free(s->styles);
    free(s->cells);
    s->styles = NULL;
    s->cells = NULL;
    ui_canvas_text_fini(&s->canvas);
}

void ui_screen_leave(struct ui_screen *s)
{
    if (s->headless || !s->term)
        return;
    fputs("\033[?2004l", s->out); /* bracketed paste off */
    fflush(s->out);
    endwin();
}

void ui_screen_return(struct ui_screen *s)
{
    if (s->headless || !s->term)
        return;
    fputs("\033[?2004h", s->out);
    fflush(s->out);
    clearok(curscr, TRUE);
    refresh();
}

void ui_screen_suspend(struct ui_screen *s)
{
    if (s->headless || !s->term)
        return;
    ui_screen_leave(s);
    struct sigaction dfl = {.sa_handler = SIG_DFL}, old;
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGTSTP, &dfl, &old);
    raise(SIGTSTP); /* stops here until SIGCONT */
    sigaction(SIGTSTP, &old, NULL);
    ui_screen_return(s);
}

void ui_screen_resize(struct ui_screen *s, int rows, int cols)
{
    (void)s;
    resizeterm(rows, cols);
}

/* ---- keys --------------------------------------------------------------------------------- */

/* The keys.h code of a curses function key, or 0 for one dllm-tui does not use. */
static uint32_t function_key(wint_t code)
{
    switch (code) {
    case KEY_ENTER: return UI_KEY_ENTER;
    case KEY_BACKSPACE: return UI_KEY_BACKSPACE;
    case KEY_DC: return UI_KEY_DELETE;
    case KEY_IC: return UI_KEY_INSERT;
    case KEY_UP: return UI_KEY_UP;
    case KEY_DOWN: return UI_KEY_DOWN;
    case KEY_LEFT: return UI_KEY_LEFT;
    case KEY_RIGHT: return UI_KEY_RIGHT;
    case KEY_HOME: return UI_KEY_HOME;
    case KEY_END: return UI_KEY_END;
    case KEY_PPAGE: return UI_KEY_PGUP;
    case KEY_NPAGE: return UI_KEY_PGDN;
    case KEY_BTAB: return UI_KEY_BTAB;
    case KEY_RESIZE: return UI_KEY_RESIZE;
    case CODE_PASTE_BEGIN: return UI_KEY_PASTE_BEGIN;
    case CODE_PASTE_END: return UI_KEY_PASTE_END;
    case CODE_CTRL_LEFT: return UI_KEY_CTRL_LEFT;
    case CODE_CTRL_RIGHT: return UI_KEY_CTRL_RIGHT;
    default:
        if (code >= (wint_t)KEY_F(1) && code <= (wint_t)KEY_F(12))
            return UI_KEY_F1 + (uint32_t)(code - KEY_F(1));
        return 0;
    }
}

/* The keys.h code of the mouse event curses has read: a notch of the wheel, or 0. */
static uint32_t mouse_key(void)
{
    MEVENT ev;
    if (getmouse(&ev) != OK)
        return 0;
    return ev.bstate & BUTTON4_PRESSED   ? UI_KEY_WHEEL_UP
           : ev.bstate & BUTTON5_PRESSED ? UI_KEY_WHEEL_DOWN
                                         : 0;
}

/* The keys.h code of a character read: Enter, Tab, Backspace and Esc have their own. */
static uint32_t char_key(wint_t ch)
{
    switch (ch) {
    case '\r': return UI_KEY_ENTER;
    case '\t': return UI_KEY_TAB;
    case 8:
    case 127: return UI_KEY_BACKSPACE;
    case 27: return UI_KEY_ESC;
    default: return (uint32_t)ch;
    }
}

bool ui_screen_read_key(struct ui_screen *s, uint32_t *key)
{
    (void)s;
    for (;;) {
        wint_t ch;
        int rc = wget_wch(stdscr, &ch);
        if (rc == ERR)
            return false;
        uint32_t k = rc == KEY_CODE_YES && ch == KEY_MOUSE ? mouse_key()
                     : rc == KEY_CODE_YES                  ? function_key(ch)
                                                           : char_key(ch);
        if (k == UI_KEY_ESC) {
            /* Esc with another key right behind it is Alt held with that key. */
            wint_t next;
            int rc2 = wget_wch(stdscr, &next);
            if (rc2 != ERR) {
                uint32_t k2 = rc2 == KEY_CODE_YES ? function_key(next) : char_key(next);
                if (k2)
                    k = k2 | UI_KEY_ALT;
            }
        }
        if (k) {
            *key = k;
            return true;
        }
    }
}

/* ---- drawing ------------------------------------------------------------------------------ */

/* Draws cells[0 .. n-1] at row y from column x, recording their styles. */
static void put_cells(struct ui_screen *s, int y, int x, const struct ui_cell *cells, int n)
{
    for (int i = 0; i < n && x + i < s->cols; i++) {
        const struct ui_cell *c = &cells[i];
        s->styles[y * s->cols + x + i] = c->style;
        if (c->width == 0)
            continue;
        wchar_t wch[UI_GLYPH_CHARS + 1] = {0};
        for (int k = 0; k < UI_GLYPH_CHARS && c->ch[k]; k++)
            wch[k] = (wchar_t)c->ch[k];
        cchar_t cc;
        setcchar(&cc, wch, (attr_t)s->attrs[c->style], s->pairs[c->style], NULL);
        mvadd_wch(y, x + i, &cc);
    }
}

/* Draws text in a field of w columns at (y, x), blanks after it; returns the columns used. */
static int put_text(struct ui_screen *s, int y, int x, int w, const char *text, uint8_t style)
{
    if (w <= 0)
        return 0;
    int used = ui_cells_fill(s->cells, w, text, 0, strlen(text), NULL, style);
    put_cells(s, y, x, s->cells, w);
    return used;
}

/* Draws text at (y, *x) within the row up to column end, moving *x past it. */
static void put_segment(struct ui_screen *s, int y, int *x, int end, const char *text,
                        uint8_t style)
{
    if (*x >= end)
        return;
    int used = ui_cells_fill(s->cells, end - *x, text, 0, strlen(text), NULL, style);
    put_cells(s, y, *x, s->cells, used);
    *x += used;
}

/* A pane's title row: a rule with the label on it, in the focus style when focused. */
static void title_row(struct ui_screen *s, const struct ui_rect *r, const char *label, bool focused)
{
    uint8_t style = focused ? UI_STYLE_FOCUS : UI_STYLE_TITLE;
    char text[512];
    snprintf(text, sizeof text, RULE " %s ", label);
    int x = r->x;
    put_segment(s, r->y, &x, r->x + r->w, text, style);
    while (x < r->x + r->w)
        put_segment(s, r->y, &x, r->x + r->w, RULE, style);
}

/* The conversation: the transcript's rows in view, or a welcome line when it is empty. */
static void draw_conversation(struct ui_screen *s, struct ui_app *app, const struct ui_rect *r)
{
    int body = r->h - 1;
    ui_app_layout_conversation(app, r->w, body);
    const struct ui_scrollback *sb = &app->conv;
    char label[128] = "conversation";
    size_t below = sb->n_rows - (sb->top + sb->view < sb->n_rows ? sb->top + sb->view : sb->n_rows);
    if (below > 0)
        ui_addf(label, sizeof label, DOT "%zu more row%s below (End follows)", below,
                below == 1 ? "" : "s");
    title_row(s, r, label, app->focus == UI_FOCUS_CONVERSATION);
    bool empty = app->transcript.n == 0 && !app->transcript.system;
    for (int i = 0; i < body; i++) {
        int y = r->y + 1 + i;
        size_t row = sb->top + (size_t)i;
        if (empty && i == 0) {
            put_text(s, y, r->x, r->w,
                     "Type a message and press Enter; F1 or ? shows the keys and commands.",
                     UI_STYLE_DIM);
        } else if (!empty && row < sb->n_rows) {
            ui_scrollback_cells(sb, app->blocks, row, s->cells, r->w);
            put_cells(s, y, r->x, s->cells, r->w);
        } else {
            put_text(s, y, r->x, r->w, "", UI_STYLE_TEXT);
        }
    }
}

/* The number of positions of the live canvas still masked. */
static size_t masks_left(const struct ui_frame *f)
{
    size_t n = 0;
    for (size_t p = f->n_prompt; p < f->n; p++)
        n += f->states[p] == UI_POS_MASKED;
    return n;
}

/* The live canvas wrapped for width cols: rows in *rows (malloc'd), their count returned. */
static size_t canvas_rows(struct ui_screen *s, struct ui_app *app, int cols, struct ui_row **rows)
{
    const struct ui_frame *f = &app->frame;
    *rows = NULL;
    if (f->n == 0 || !ui_canvas_render(&s->canvas, f->ids, f->states, f->n_prompt,
                                       f->n - f->n_prompt, ui_engine_piece, app->engine))
        return 0;
    size_t n = ui_wrap_chars(s->canvas.text, s->canvas.len, cols, NULL, 0);
    *rows = malloc(n * sizeof **rows);
    if (!*rows)
        return 0;
    return ui_wrap_chars(s->canvas.text, s->canvas.len, cols, *rows, n);
}

/* The canvas pane: the rows around the first masked position when they do not all fit. */
static void draw_canvas(struct ui_screen *s, struct ui_app *app, const struct ui_rect *r,
                        const struct ui_row *rows, size_t n)
{
    const struct ui_frame *f = &app->frame;
    char label[128], state[64];
    ui_app_state_text(app, state, sizeof state);
    snprintf(label, sizeof label, "answer" DOT "%s" DOT "%zu mask%s left", state, masks_left(f),
             masks_left(f) == 1 ? "" : "s");
    title_row(s, r, label, false);
    size_t body = (size_t)(r->h - 1), top = 0;
    if (n > body) {
        size_t first = 0;
        while (first < s->canvas.len && s->canvas.styles[first] != UI_STYLE_MASK)
            first++;
        size_t row = 0;
        while (row + 1 < n && rows[row + 1].start <= first)
            row++;
        top = row > 0 ? row - 1 : 0;
        top = top + body > n ? n - body : top;
    }
    for (size_t i = 0; i < body; i++) {
        int y = r->y + 1 + (int)i;
        if (top + i < n) {
            const struct ui_row *row = &rows[top + i];
            ui_cells_fill(s->cells, r->w, s->canvas.text, row->start, row->end, s->canvas.styles,
                          UI_STYLE_TEXT);
            put_cells(s, y, r->x, s->cells, r->w);
        } else {
            put_text(s, y, r->x, r->w, "", UI_STYLE_TEXT);
        }
    }
}

/* The timing pane: a row per step, the sparkline of step times, and the totals. */
static void draw_timing(struct ui_screen *s, struct ui_app *app, const struct ui_rect *r)
{
    const struct ui_timing *t = &app->timing;
    title_row(s, r, "timing", app->focus == UI_FOCUS_TIMING);
    int x = r->x + 1, w = r->w - 1;
    for (int y = r->y + 1; y < r->y + r->h; y++) {
        int bx = r->x;
        put_segment(s, y, &bx, r->x + 1, VRULE, UI_STYLE_TITLE);
    }
    int y = r->y + 1, bottom = r->y + r->h;
    put_text(s, y++, x, w, UI_TIMING_HEADER, UI_STYLE_DIM);
    int list = bottom - y - 3; /* rows for steps; three stay for the sparkline and totals */
    size_t shown = list > 0 ? (size_t)list : 0;
    app->timing_rows = shown;
    /* A pane grown since the last scroll shows step 0 first rather than empty rows. */
    size_t most = t->n > shown ? t->n - shown : 0, back = app->timing_back;
    if (back > most)
        app->timing_back = back = most;
    size_t end = t->n > back ? t->n - back : 0;
    size_t first = end > shown ? end - shown : 0;
    for (size_t i = 0; i < shown; i++, y++) {
        char row[64] = "";
        if (first + i < end)
            ui_timing_row(&t->steps[first + i], row, sizeof row);
        put_text(s, y, x, w, row, UI_STYLE_TEXT);
    }
    char line[256];
    ui_timing_sparkline(t, (size_t)w, line, sizeof line);
    if (y < bottom)
        put_text(s, y++, x, w, line, UI_STYLE_TEXT);
    struct ui_timing_totals sum = {0};
    ui_timing_sum(t, &sum);
    double ms = sum.forward_ms + sum.sample_ms;
    snprintf(line, sizeof line, "%d step%s" DOT "%.2f s" DOT "%.0f ms/step", sum.steps,
             sum.steps == 1 ? "" : "s", ms / 1000, sum.steps ? ms / sum.steps : 0.0);
    if (y < bottom)
        put_text(s, y++, x, w, t->n ? line : "", UI_STYLE_TEXT);
    line[0] = '\0';
    const struct ui_transcript *tr = &app->transcript;
    const struct ui_turn *last = tr->n ? &tr->turns[tr->n - 1] : NULL;
    if (!app->generating && last && last->has_stats && last->totals.total_ms > 0)
        snprintf(line, sizeof line, "%d tokens" DOT "%.1f tok/s", last->totals.tokens,
                 last->totals.tokens / (last->totals.total_ms / 1000));
    else if (app->generating)
        ui_timing_live(t, app->frame.n_steps, (int)masks_left(&app->frame), false, line,
                       sizeof line);
    if (y < bottom)
        put_text(s, y++, x, w, line, UI_STYLE_TEXT);
}

/* The input box; returns where the cursor goes. */
static void draw_input(struct ui_screen *s, struct ui_app *app, const struct ui_rect *r,
                       const struct ui_row *rows, size_t n, int *cy, int *cx)
{
    bool focused = app->focus == UI_FOCUS_INPUT;
    title_row(s, r,
              app->paste ? "message" DOT "pasting"
                         : "message" DOT "Enter sends" DOT "Alt+Enter newline" DOT "F1 help",
              focused);
    const char *text = app->editor.buf ? app->editor.buf : "";
    int tw = r->w - 2, body = r->h - 1, row = 0, col = 0;
    ui_wrap_locate(text, rows, n, tw, app->editor.cursor, &row, &col);
    int top = row >= body ? row - body + 1 : 0;
    for (int i = 0; i < body; i++) {
        int y = r->y + 1 + i;
        size_t k = (size_t)(top + i);
        put_text(s, y, r->x, 2, top + i == 0 ? ">" : "", UI_STYLE_DIM);
        if (app->editor.len == 0 && i == 0) {
            put_text(s, y, r->x + 2, tw, "a message, or /help", UI_STYLE_DIM);
        } else if (k < n) {
            ui_cells_fill(s->cells, tw, text, rows[k].start, rows[k].end, NULL, UI_STYLE_TEXT);
            put_cells(s, y, r->x + 2, s->cells, tw);
        } else {
            put_text(s, y, r->x + 2, tw, "", UI_STYLE_TEXT);
        }
    }
    *cy = r->y + 1 + row - top;
    *cx = r->x + 2 + (col < tw ? col : tw - 1);
}

/* One slider of the slider bar as drawn: its text and style, and the bar row it goes on. */
struct bar_item {
    char text[80];
    uint8_t style;
    int row;
};

/*
 * The slider bar's items, each slider's name and value (the selected one marked, with a value
 * being typed into it), laid out over rows of cols columns two spaces apart, an item moving
 * whole to the next row when it does not fit. Returns the rows they take.
 */
static int settings_items(const struct ui_app *app, int cols, struct bar_item *items)
{
    const bool focused = app->focus == UI_FOCUS_SETTINGS;
    int row = 0, x = 0;
    for (int k = 0; k < UI_SLIDER_COUNT; k++) {
        char value[32];
        ui_slider_value(&app->settings, (enum ui_slider)k, value, sizeof value);
        const bool sel = focused && app->slider == (enum ui_slider)k;
        if (sel && app->typed[0])
            snprintf(value, sizeof value, "%s_", app->typed);
        snprintf(items[k].text, sizeof items[k].text, "%s%s%s %s%s",
                 focused && k == 0 ? "sliders: " : "", sel ? "\u25c2 " : "",
                 ui_slider_name((enum ui_slider)k), value, sel ? " \u25b8" : "");
        /* Steps do not apply while a threshold decides the commits. */
        const bool dim = k == UI_SLIDER_STEPS && app->settings.threshold > 0;
        items[k].style = sel ? UI_STYLE_SELECTED : dim ? UI_STYLE_DIM : UI_STYLE_TEXT;
        const int w = ui_text_width(items[k].text, strlen(items[k].text));
        if (x > 0 && x + 2 + w > cols) {
            row++;
            x = 0;
        }
        x += (x > 0 ? 2 : 0) + w;
        items[k].row = row;
    }
    return row + 1;
}

/* The slider bar, wrapped as settings_items lays it out; a hint follows where it fits. */
static void draw_settings(struct ui_screen *s, struct ui_app *app, const struct ui_rect *r)
{
    static const char hint[] = "   (Tab to the sliders)";
    struct bar_item items[UI_SLIDER_COUNT];
    settings_items(app, r->w, items);
    const int end = r->x + r->w;
    int x = r->x, row = 0;
    for (int k = 0; k < UI_SLIDER_COUNT && items[k].row < r->h; k++) {
        if (items[k].row != row) {
            put_text(s, r->y + row, x, end - x, "", UI_STYLE_TEXT);
            row = items[k].row;
            x = r->x;
        }
        put_segment(s, r->y + row, &x, end, x > r->x ? "  " : "", UI_STYLE_TEXT);
        put_segment(s, r->y + row, &x, end, items[k].text, items[k].style);
    }
    if (app->focus != UI_FOCUS_SETTINGS && x + ui_text_width(hint, strlen(hint)) <= end)
        put_segment(s, r->y + row, &x, end, hint, UI_STYLE_DIM);
    put_text(s, r->y + row, x, end - x, "", UI_STYLE_TEXT);
}

/*
 * The message line: the message wrapped to the width, at most r->h rows; a longer one ends in
 * a dim mark that F1 shows the rest.
 */
static void draw_message(struct ui_screen *s, struct ui_app *app, const struct ui_rect *r,
                         const struct ui_row *rows, size_t n)
{
    static const char more[] = " \u2026 F1 shows all";
    const uint8_t style = app->note_error ? UI_STYLE_ERROR : UI_STYLE_NOTICE;
    for (int i = 0; i < r->h && (size_t)i < n; i++) {
        const bool cut = i == r->h - 1 && n > (size_t)r->h;
        int w = cut ? r->w - ui_text_width(more, strlen(more)) : r->w;
        int x =
            r->x + ui_cells_fill(s->cells, w, app->note, rows[i].start, rows[i].end, NULL, style);
        put_cells(s, r->y + i, r->x, s->cells, x - r->x);
        if (cut)
            put_segment(s, r->y + i, &x, r->x + r->w, more, UI_STYLE_DIM);
        put_text(s, r->y + i, x, r->x + r->w - x, "", UI_STYLE_TEXT);
    }
}

/*
 * The status bar: model, quantization, device, threads, the sampler's alg and cache when they
 * matter, the state, and while generating without the timing pane the live speed. When they do not
 * fit, the threads go first, then the quantization, the model and the rest, so that the device and
 * the state ("step N of M") always show.
 */
static void draw_status(struct ui_screen *s, struct ui_app *app, const struct ui_rect *r)
{
    const struct ui_engine_info *i = &app->info;
    enum { MODEL, QUANT, DEVICE, THREADS, ALG, CACHE, STATE, SPEED, N_ITEMS };
    char items[N_ITEMS][128] = {{0}};
    snprintf(items[MODEL], sizeof items[MODEL], "%.120s", i->model);
    snprintf(items[QUANT], sizeof items[QUANT], "%s", i->quant);
    snprintf(items[DEVICE], sizeof items[DEVICE], "%s", i->device);
    snprintf(items[THREADS], sizeof items[THREADS], "%d thread%s", i->threads,
             i->threads == 1 ? "" : "s");
    /* Dream's confidence under a threshold, and the K/V cache, when they are on. */
    if (app->settings.kind == DLLM_SAMPLER_DREAM && app->settings.threshold > 0)
        snprintf(items[ALG], sizeof items[ALG], "alg %s", dllm_alg_name(app->settings.alg));
    if (app->settings.cache != DLLM_CACHE_NONE)
        snprintf(items[CACHE], sizeof items[CACHE], "cache %s",
                 dllm_cache_mode_name(app->settings.cache));
    ui_app_state_text(app, items[STATE], sizeof items[STATE]);
    /* Live speed here when the timing pane, which has it, is not shown. */
    if (app->generating && s->layout.timing.w == 0)
        ui_timing_live(&app->timing, app->frame.n_steps, (int)masks_left(&app->frame), true,
                       items[SPEED], sizeof items[SPEED]);
    static const int drop_order[] = {THREADS, QUANT, MODEL, CACHE, ALG};
    char text[1024];
    for (size_t dropped = 0;; dropped++) {
        text[0] = '\0';
        for (int k = 0; k < N_ITEMS; k++)
            if (items[k][0])
                ui_addf(text, sizeof text, "%s%s", text[0] ? DOT : " ", items[k]);
        ui_addf(text, sizeof text, " ");
        if (ui_text_width(text, strlen(text)) <= r->w ||
            dropped == sizeof drop_order / sizeof *drop_order)
            break;
        items[drop_order[dropped]][0] = '\0';
    }
    put_text(s, r->y, r->x, r->w, text, UI_STYLE_STATUS);
}

/* The help screen over the panes above the slider bar, in the top h rows. */
static void draw_help(struct ui_screen *s, struct ui_app *app, int h, int cols)
{
    struct ui_rect r = {0, 0, h, cols};
    ui_app_layout_help(app, cols, r.h - 1);
    title_row(s, &r, "help" DOT "Up/Down/PgUp/PgDn scroll" DOT "Esc closes", true);
    const struct ui_scrollback *v = &app->help_view;
    for (int i = 0; i < r.h - 1; i++) {
        size_t row = v->top + (size_t)i;
        if (row < v->n_rows) {
            ui_scrollback_cells(v, app->help_blocks, row, s->cells, cols);
            put_cells(s, i + 1, 0, s->cells, cols);
        } else {
            put_text(s, i + 1, 0, cols, "", UI_STYLE_TEXT);
        }
    }
}

/* The notice shown instead of the panes on a terminal too small for them. */
static void draw_too_small(struct ui_screen *s, int rows, int cols)
{
    char msg[128];
    snprintf(msg, sizeof msg, "The terminal is %dx%d; dllm-tui needs at least %dx%d.", cols, rows,
             UI_MIN_COLS, UI_MIN_ROWS);
    struct ui_row wrapped[8];
    size_t n = ui_wrap(msg, strlen(msg), cols, wrapped, 8);
    n = n < 8 ? n : 8;
    int y = rows > (int)n ? (rows - (int)n) / 2 : 0;
    for (size_t i = 0; i < n && y + (int)i < rows; i++) {
        ui_cells_fill(s->cells, cols, msg, wrapped[i].start, wrapped[i].end, NULL, UI_STYLE_ERROR);
        put_cells(s, y + (int)i, 0, s->cells, cols);
    }
}

/* Makes the style grid and row buffer fit the terminal's size. */
static bool fit_size(struct ui_screen *s)
{
    if (s->rows == LINES && s->cols == COLS && s->styles)
        return true;
    uint8_t *styles = calloc((size_t)LINES * (size_t)COLS + 1, 1);
    struct ui_cell *cells = malloc(((size_t)COLS + 1) * sizeof *cells);
    if (!styles || !cells) {
        free(styles);
        free(cells);
        return false;
    }
    free(s->styles);
    free(s->cells);
    s->styles = styles;
    s->cells = cells;
    s->rows = LINES;
    s->cols = COLS;
    return true;
}

void ui_screen_draw(struct ui_screen *s, struct ui_app *app)
{
    if (!s->headless && s->mouse != app->mouse) {
        /* Reports of the wheel's notches only (a press, no click resolution): the terminal
         * turns its own selection over to Shift+drag while any are asked for. */
        mouseinterval(0);
        mousemask(app->mouse ? BUTTON4_PRESSED | BUTTON5_PRESSED : 0, NULL);
        s->mouse = app->mouse;
    }
    if (!fit_size(s))
        return;
    if (app->redraw_all) {
        clearok(curscr, TRUE);
        app->redraw_all = false;
    }
    int rows = s->rows, cols = s->cols;
    /* The input's and the canvas's rows decide the layout. */
    const char *text = app->editor.buf ? app->editor.buf : "";
    size_t n_in = ui_wrap(text, app->editor.len, cols - 2, NULL, 0);
    struct ui_row *in_rows = malloc(n_in * sizeof *in_rows);
    int left = cols >= UI_TIMING_MIN_COLS ? cols - UI_TIMING_COLS : cols;
    struct ui_row *cv_rows = NULL;
    size_t n_cv = app->generating ? canvas_rows(s, app, left, &cv_rows) : 0;
    if (!in_rows) {
        free(cv_rows);
        return;
    }
    ui_wrap(text, app->editor.len, cols - 2, in_rows, n_in);
    struct ui_row msg_rows[UI_MESSAGE_MAX_ROWS + 1];
    size_t n_msg = app->note[0] ? ui_wrap(app->note, strlen(app->note), cols, msg_rows,
                                          UI_MESSAGE_MAX_ROWS + 1)
                                : 0;
    struct ui_layout *l = &s->layout;
    struct bar_item bar[UI_SLIDER_COUNT];
    ui_layout_compute(l, rows, cols, (int)n_msg, (int)n_in, (int)n_cv,
                      settings_items(app, cols, bar));
    app->timing_shown = l->timing.w > 0;
    erase();
    memset(s->styles, UI_STYLE_TEXT, (size_t)rows * (size_t)cols);
    int cy = -1, cx = -1;
    if (l->too_small) {
        draw_too_small(s, rows, cols);
    } else if (app->help) {
        draw_help(s, app, l->settings.y, cols);
        draw_settings(s, app, &l->settings);
        draw_status(s, app, &l->status);
    } else {
        draw_conversation(s, app, &l->conversation);
        if (l->canvas.h > 0)
            draw_canvas(s, app, &l->canvas, cv_rows, n_cv);
        if (l->timing.w > 0)
            draw_timing(s, app, &l->timing);
        if (l->message.h > 0)
            draw_message(s, app, &l->message, msg_rows, n_msg);
        draw_input(s, app, &l->input, in_rows, n_in, &cy, &cx);
        draw_settings(s, app, &l->settings);
        draw_status(s, app, &l->status);
    }
    free(in_rows);
    free(cv_rows);
    if (cy >= 0 && app->focus == UI_FOCUS_INPUT) {
        curs_set(1);
        move(cy, cx);
    } else {
        curs_set(0);
    }
    wnoutrefresh(stdscr);
    doupdate();
    if (app->copy) {
        /* The clipboard request goes straight to the terminal, after the frame. */
        char *seq = s->headless ? NULL : ui_clipboard_osc52(app->copy, strlen(app->copy));
        if (seq) {
            fputs(seq, s->out);
            fflush(s->out);
        }
        free(seq);
        free(app->copy);
        app->copy = NULL;
    }
}

/* ---- dumps -------------------------------------------------------------------------------- */

bool ui_screen_dump(const struct ui_screen *s, const char *path, bool styles)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    char *line = malloc((size_t)s->cols * UI_GLYPH_CHARS * 4 + 2);
    if (!line) {
        fclose(f);
        return false;
    }
    for (int y = 0; y < s->rows; y++) {
        size_t len = 0, kept = 0; /* kept: the length without trailing blanks */
        for (int x = 0; x < s->cols; x++) {
            if (styles) {
                line[len++] = UI_STYLE_LETTERS[s->styles[y * s->cols + x]];
                kept = len;
                continue;
            }
            cchar_t cc;
            wchar_t wch[CCHARW_MAX + 1] = {0};
            attr_t attr;
            short pair;
            mvwin_wch(stdscr, y, x, &cc);
            getcchar(&cc, wch, &attr, &pair, NULL);
            for (int k = 0; k < CCHARW_MAX && wch[k]; k++) {
                char enc[4];
                size_t n = ui_utf8_encode((uint32_t)wch[k], enc);
                memcpy(line + len, enc, n);
                len += n;
            }
            if (!(wch[0] == L' ' && !wch[1]))
                kept = len;
            if (wcwidth(wch[0]) == 2)
                x++;
        }
        fwrite(line, 1, kept, f);
        fputc('\n', f);
    }
    free(line);
    bool ok = !ferror(f);
    return fclose(f) == 0 && ok;
}
