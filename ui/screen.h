/*
 * The curses side of dllm-tui: the terminal set up and restored, keys read and translated to
 * keys.h codes, the app drawn into panes, and the screen dumped as text for headless tests.
 * Only the UI thread calls it. A headless screen (for --script) is a curses screen of a given
 * size writing to /dev/null, so it runs with no terminal.
 */
#ifndef DLLM_UI_SCREEN_H
#define DLLM_UI_SCREEN_H

#include "app.h"
#include "canvas.h"
#include "layout.h"
#include "wrap.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum ui_color_mode {
    UI_COLOR_AUTO,   /* colours when the terminal has them and NO_COLOR is unset or empty */
    UI_COLOR_ALWAYS, /* colours when the terminal has them */
    UI_COLOR_NEVER,  /* attributes only (bold, dim, reverse) */
};

struct ui_screen {
    void *term; /* the curses SCREEN */
    FILE *out, *in;
    bool headless;
    bool plain;                          /* TERM=dumb: no colours and no attributes */
    bool colors;                         /* colour pairs in use */
    bool mouse;                          /* the terminal reports the mouse wheel (app->mouse) */
    unsigned long attrs[UI_STYLE_COUNT]; /* per enum ui_style: curses attributes */
    short pairs[UI_STYLE_COUNT];         /* and colour pairs (0: the default colours) */
    int rows, cols;
    uint8_t *styles;       /* [rows * cols] the style drawn in each cell, for dumps */
    struct ui_cell *cells; /* [cols] one row being drawn */
    struct ui_canvas_text canvas;
    struct ui_layout layout;
};

/*
 * Whether TERM names a terminal dllm-tui can draw on (set, in the terminfo database, able to
 * move the cursor), without taking the terminal over: checked before the model loads. err
 * receives the reason.
 */
bool ui_screen_check_terminal(char *err, size_t size);

/*
 * Sets up the terminal: full screen, no echo, keys one at a time (Ctrl+C as a key), Esc with a
 * short delay, bracketed paste. Headless: a virtual screen of rows x cols (0: from LINES and
 * COLUMNS, else 24 x 80). False with a message in err (e.g. a terminal that cannot address the
 * cursor) and the terminal untouched.
 */
bool ui_screen_open(struct ui_screen *s, enum ui_color_mode mode, bool headless, int rows, int cols,
                    char *err, size_t size);

/* Restores the terminal. Safe to call twice, and with a screen that failed to open. */
void ui_screen_close(struct ui_screen *s);

/* Redraws everything from the app and shows it. */
void ui_screen_draw(struct ui_screen *s, struct ui_app *app);

/* The next key typed (keys.h code), or false when none is waiting. */
bool ui_screen_read_key(struct ui_screen *s, uint32_t *key);

/*
 * Hands the terminal back as it was before the chat (for another program to use it), and
 * takes it again (the next draw repaints all of it). Nothing for a headless screen.
 */
void ui_screen_leave(struct ui_screen *s);
void ui_screen_return(struct ui_screen *s);

/*
 * Ctrl+Z: leaves the terminal and stops the program (SIGTSTP) until the shell continues it,
 * then takes the terminal back. Nothing for a headless screen.
 */
void ui_screen_suspend(struct ui_screen *s);

/* A headless screen takes a new size (the next draw lays out for it). */
void ui_screen_resize(struct ui_screen *s, int rows, int cols);

/*
 * Writes the screen to path: as text, one line per row without trailing blanks; or with
 * styles, one letter per cell (the UI_STYLE_LETTERS, in the order of enum ui_style). False
 * (errno set) when the file could not be written.
 */
bool ui_screen_dump(const struct ui_screen *s, const char *path, bool styles);

#define UI_STYLE_LETTERS ".dtfuhnpmNsbSEcBi"

#endif
