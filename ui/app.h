/*
 * The chat without curses: its state (conversation, input, sliders, the live canvas, timings,
 * focus, help, notes) and what keys and the engine's events do to it. The program feeds it
 * keys with the time, calls ui_app_poll when the frame slot's eventfd is readable, and draws
 * it with the screen module. Generations start and stop through ui/engine.h.
 */
#ifndef DLLM_UI_APP_H
#define DLLM_UI_APP_H

#include "editor.h"
#include "engine.h"
#include "frame.h"
#include "commands.h"
#include "history.h"
#include "keys.h"
#include "scrollback.h"
#include "settings.h"
#include "timing.h"
#include "transcript.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UI_INTERRUPT_QUIT_MS 1000.0 /* a second Ctrl+C within this quits */

struct ui_app {
    /* Given to ui_app_init. */
    struct ui_engine *engine;
    struct ui_frame_slot *slot;
    struct ui_engine_info info;
    char *history_path; /* NULL: the history is not kept */

    struct ui_transcript transcript;
    struct ui_history history;
    /* Ctrl+R's search of the history: the query typed, the entry shown in the input
       (history.n: none yet) and the input from before, which Esc brings back. */
    struct ui_history_search {
        bool active;
        char query[128];
        size_t at;
        char *draft;
    } hsearch;
    struct ui_editor editor;
    struct dllm_sampler_params settings; /* the sliders: the next generation's */
    struct dllm_sampler_params running;  /* the generation in progress */
    bool generating, cancelling;
    bool regen; /* the generation answers the last message again; the old answer stays till then */
    int last_end; /* how the last generation ended (enum ui_gen_end), -1 before the first */

    struct ui_frame frame; /* the live canvas; n == 0 when there is none */
    struct ui_timing timing;
    size_t timing_back; /* timing rows scrolled back from the newest; 0 follows */
    size_t timing_rows; /* step rows the timing pane showed when last drawn (the screen sets it) */

    /* The conversation as scrollback blocks, rebuilt when it changes or the width does. */
    struct ui_scrollback conv;
    struct ui_sb_block *blocks;
    char (*headers)[UI_HEADER_MAX];
    size_t n_blocks;
    bool conv_changed;
    int conv_cols;

    /* The help screen. */
    bool help;
    struct ui_scrollback help_view;
    /* the whole message (when there is one), the keys, the commands, the canvas's legend */
    struct ui_sb_block help_blocks[4];
    size_t n_help_blocks;
    char help_text[8192]; /* the keys, then from byte help_commands the commands */
    size_t help_commands;
    int help_cols;

    /* Search in the conversation (/find): the text, which occurrence is shown (SIZE_MAX: the
     * last), how many there are, and the highlighted copies of the blocks' styles. */
    char find[128];
    size_t find_i, find_n;
    uint8_t **find_styles; /* [n_blocks] or NULL */

    enum ui_focus focus;
    enum ui_slider slider; /* the selected slider */
    char typed[24];        /* a value typed into the selected slider, Enter applies it ("": none) */
    bool timing_shown;     /* the screen has room for the timing pane */
    bool paste;            /* inside a bracketed paste */
    bool quit;
    bool redraw_all;    /* Ctrl+L: repaint the whole terminal */
    bool suspend;       /* Ctrl+Z: the program is to stop itself (the screen's to do) */
    bool edit_external; /* Ctrl+O: the program is to run the user's editor on the input, then
                           hand ui_app_edited what it made of it */
    bool unsaved;       /* the conversation changed since the last /save */
    bool raw;           /* answers as the model wrote them, not rendered as Markdown (F2) */
    bool mouse;         /* the screen reports the mouse wheel (F4 switches; off, the terminal
                           selects text with the mouse) */
    char *copy;         /* text for the clipboard, sent by the screen's next draw (NULL: none) */
    bool confirm_quit;  /* Ctrl+D asked about an unsaved conversation: a second one quits */
    enum ui_cmd_kind confirm; /* a command that asked first (/load: an unsaved conversation;
                                 /save: files it would replace): if the next command is the
                                 same, it goes ahead (UI_CMD_MESSAGE: none asked) */
    char *own[2];             /* the files this chat last saved or loaded (NULL: none), which /save
                                 replaces without asking */
    char note[DLLM_ERROR_TEXT_MAX + 64]; /* the message line: the latest refusal, error or
                                            confirmation, kept until a key edits the input
                                            or Esc ("": none) */
    bool note_error;
    double last_interrupt_ms; /* when Ctrl+C was last pressed */
};

/*
 * Sets up the chat over a loaded engine and its slot, with the sliders at settings and the
 * input history kept at history_path (NULL: not kept; a file that cannot be read leaves a
 * note). False when memory ran out.
 */
bool ui_app_init(struct ui_app *app, struct ui_engine *engine, struct ui_frame_slot *slot,
                 const struct ui_engine_info *info, const struct dllm_sampler_params *settings,
                 const char *history_path);
void ui_app_fini(struct ui_app *app);

/* One key (keys.h) pressed at now_ms on a monotonic clock. */
void ui_app_key(struct ui_app *app, uint32_t key, double now_ms);

/* Takes what the engine reported since the last call. Returns whether anything changed. */
bool ui_app_poll(struct ui_app *app);

/*
 * After edit_external: the input becomes text, the cursor at its end; or, where text is NULL,
 * the message line says why (the input stays as it was).
 */
void ui_app_edited(struct ui_app *app, const char *text, const char *why);

/*
 * Lays the conversation out for a pane cols x rows (again only when it or the width changed),
 * and the help screen likewise. False when memory ran out.
 */
bool ui_app_layout_conversation(struct ui_app *app, int cols, int rows);
bool ui_app_layout_help(struct ui_app *app, int cols, int rows);

/* The engine's state for the status bar: "idle", "step 12 of 64", "cancelling", ... */
void ui_app_state_text(const struct ui_app *app, char *buf, size_t size);

#endif
