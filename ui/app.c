/* The chat's state and behaviour. */
#include "config.h"

#include "app.h"
#include "clipboard.h"
#include "commands.h"
#include "complete.h"
#include "find.h"
#include "format.h"
#include "jsonl.h"
#include "markdown.h"
#include "savefile.h"
#include "utf8.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * The legend of the canvas, after the keys and commands on the help screen; what a line says
 * continues from column LEGEND_COLUMN.
 */
#define LEGEND_COLUMN 5
static const char legend[] =
    "The live canvas\n"
    "  \u2591  a masked position, not decided yet\n"
    "  highlighted text: committed in the latest step; plain: committed earlier\n"
    "  \u00b7  an end-of-text token\n";

/* Writes the message line; an error is shown as one. */
static void note(struct ui_app *app, bool error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void note(struct ui_app *app, bool error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(app->note, sizeof app->note, fmt, ap);
    va_end(ap);
    app->note_error = error;
}

/* Frees the highlighted copies of the blocks' styles. */
static void free_find_styles(struct ui_app *app)
{
    if (app->find_styles)
        for (size_t b = 0; b < app->n_blocks; b++)
            free(app->find_styles[b]);
    free(app->find_styles);
    app->find_styles = NULL;
}

/*
 * Highlights every match of the search in blocks just laid out (their styles replaced by
 * copies with the matches selected) and counts them; false when memory ran out.
 */
static bool find_apply(struct ui_app *app)
{
    free_find_styles(app);
    app->find_n = 0;
    if (!app->find[0])
        return true;
    const size_t n = ui_find(app->blocks, app->n_blocks, app->find, NULL, 0);
    const size_t qlen = strlen(app->find);
    struct ui_match *m = malloc((n ? n : 1) * sizeof *m);
    app->find_styles = calloc(app->n_blocks ? app->n_blocks : 1, sizeof *app->find_styles);
    if (!m || !app->find_styles) {
        free(m);
        return false;
    }
    ui_find(app->blocks, app->n_blocks, app->find, m, n);
    for (size_t k = 0; k < n; k++) {
        struct ui_sb_block *b = &app->blocks[m[k].block];
        uint8_t **copy = &app->find_styles[m[k].block];
        if (!*copy) {
            if (!(*copy = malloc(b->len))) {
                free(m);
                return false;
            }
            if (b->styles)
                memcpy(*copy, b->styles, b->len);
            else
                memset(*copy, b->style, b->len);
            b->styles = *copy;
        }
        memset(*copy + m[k].at, UI_STYLE_SELECTED, qlen);
    }
    free(m);
    app->find_n = n;
    if (app->find_i >= n)
        app->find_i = n ? n - 1 : 0;
    return true;
}

/*
 * Moves the search by dir matches (0: stays) and scrolls the conversation so that the match is
 * in the middle of the view, saying which one it is.
 */
static void find_show(struct ui_app *app, int dir)
{
    if (!app->find[0]) {
        note(app, true, "no search: /find TEXT or Ctrl+F starts one");
        return;
    }
    app->conv_changed = true; /* laid out afresh, the blocks take the highlights */
    if (!ui_app_layout_conversation(app, app->conv_cols > 0 ? app->conv_cols : 80,
                                    (int)app->conv.view)) {
        note(app, true, "out of memory");
        return;
    }
    if (app->find_n == 0) {
        note(app, true, "'%s' is not in the conversation", app->find);
        return;
    }
    const size_t n = app->find_n;
    app->find_i = (app->find_i + n + (size_t)(dir > 0) - (size_t)(dir < 0)) % n;
    struct ui_match m;
    struct ui_match *all = malloc(n * sizeof *all);
    if (!all) {
        note(app, true, "out of memory");
        return;
    }
    ui_find(app->blocks, app->n_blocks, app->find, all, n);
    m = all[app->find_i];
    free(all);
    struct ui_scrollback *v = &app->conv;
    const size_t row = ui_find_row(v, m);
    if (row < v->n_rows) {
        size_t top = row > v->view / 2 ? row - v->view / 2 : 0;
        const size_t most = v->n_rows > v->view ? v->n_rows - v->view : 0;
        v->top = top < most ? top : most;
        v->follow = v->top == most;
    }
    note(app, false, "match %zu of %zu for '%s' (n, N: next, previous; Esc ends the search)",
         app->find_i + 1, n, app->find);
}

/* /find TEXT starts a search at the last match; /find alone ends it. */
static void find(struct ui_app *app, const char *arg, size_t len)
{
    snprintf(app->find, sizeof app->find, "%.*s",
             (int)(len < sizeof app->find ? len : sizeof app->find - 1), arg);
    app->find_i = SIZE_MAX;
    app->conv_changed = true; /* the highlights go with a fresh layout */
    if (!app->find[0]) {
        note(app, false, "search ended");
        return;
    }
    app->focus = UI_FOCUS_CONVERSATION;
    find_show(app, 0);
}

bool ui_app_init(struct ui_app *app, struct ui_engine *engine, struct ui_frame_slot *slot,
                 const struct ui_engine_info *info, const struct dllm_sampler_params *settings,
                 const char *history_path)
{
    *app = (struct ui_app){
        .engine = engine,
        .slot = slot,
        .info = *info,
        .settings = *settings,
        .last_end = -1,
        .focus = UI_FOCUS_INPUT,
        .last_interrupt_ms = -1e12,
        .conv_changed = true,
    };
    ui_transcript_init(&app->transcript);
    ui_history_init(&app->history, UI_HISTORY_MAX);
    ui_editor_init(&app->editor, &app->history);
    ui_frame_init(&app->frame);
    ui_timing_init(&app->timing);
    ui_scrollback_init(&app->conv);
    ui_scrollback_init(&app->help_view);

    char commands[4096];
    ui_keys_help(app->help_text, sizeof app->help_text);
    app->help_commands = strlen(app->help_text);
    ui_commands_help(commands, sizeof commands);
    ui_addf(app->help_text, sizeof app->help_text, "Commands\n%s", commands);

    if (history_path) {
        app->history_path = strdup(history_path);
        if (!app->history_path)
            return false;
        if (!ui_history_load(&app->history, history_path))
            note(app, true, "cannot read the input history %s: %s", history_path, strerror(errno));
        app->editor.hist_pos = app->history.n;
    }
    return true;
}

void ui_app_fini(struct ui_app *app)
{
    ui_transcript_fini(&app->transcript);
    ui_editor_fini(&app->editor);
    ui_history_fini(&app->history);
    ui_frame_fini(&app->frame);
    ui_timing_fini(&app->timing);
    ui_scrollback_fini(&app->conv);
    ui_scrollback_fini(&app->help_view);
    free_find_styles(app);
    free(app->blocks);
    free(app->headers);
    free(app->history_path);
    free(app->copy);
    free(app->hsearch.draft);
    free(app->own[0]);
    free(app->own[1]);
}

/*
 * Asks the engine to answer the first `end` turns of the conversation with settings s; false
 * (noted) when it did not start.
 */
static bool start_generation(struct ui_app *app, const struct dllm_sampler_params *s, size_t end)
{
    size_t n = ui_transcript_messages(&app->transcript, end, NULL, 0);
    struct dllm_chat_message *msgs = malloc((n ? n : 1) * sizeof *msgs);
    if (!msgs) {
        note(app, true, "out of memory");
        return false;
    }
    ui_transcript_messages(&app->transcript, end, msgs, n);
    struct dllm_error err = {0};
    enum dllm_status st = ui_engine_start(app->engine, msgs, n, s, &err);
    free(msgs);
    if (st != DLLM_OK) {
        note(app, true, "%s", err.text[0] ? err.text : dllm_status_str(st));
        return false;
    }
    app->generating = true;
    app->cancelling = false;
    app->regen = false;
    app->running = *s;
    ui_timing_clear(&app->timing);
    app->timing_back = 0;
    app->frame.n = 0;
    app->frame.step = -1;
    app->note[0] = '\0';
    return true;
}

/* Asks the running generation to stop; its partial answer will be kept. */
static void cancel(struct ui_app *app, const char *extra)
{
    ui_engine_cancel(app->engine);
    app->cancelling = true;
    note(app, false, "cancelling inside this step; the answer of the last finished step is kept%s",
         extra);
}

/* Shows the help screen from its top, under the whole message when there is one. */
static void open_help(struct ui_app *app)
{
    const size_t split = app->help_commands;
    app->n_help_blocks = 0;
    if (app->note[0])
        app->help_blocks[app->n_help_blocks++] =
            (struct ui_sb_block){app->note,
                                 strlen(app->note),
                                 app->note_error ? UI_STYLE_ERROR : UI_STYLE_NOTICE,
                                 1,
                                 NULL,
                                 0};
    /* each part's descriptions wrap under their own column */
    app->help_blocks[app->n_help_blocks++] =
        (struct ui_sb_block){app->help_text, split, UI_STYLE_TEXT, 1, NULL, UI_KEYS_HELP_COLUMN};
    app->help_blocks[app->n_help_blocks++] = (struct ui_sb_block){
        app->help_text + split, strlen(app->help_text) - split, UI_STYLE_TEXT, 1, NULL,
        UI_COMMANDS_HELP_COLUMN};
    app->help_blocks[app->n_help_blocks++] =
        (struct ui_sb_block){legend, strlen(legend), UI_STYLE_TEXT, 1, NULL, LEGEND_COLUMN};
    app->help = true;
    app->help_cols = 0; /* lay the blocks out again */
    app->help_view.top = 0;
    app->help_view.follow = false;
}

/* Whether action act for key changes the input's text (which clears the message line). */
static bool edits_input(const struct ui_app *app, enum ui_action act, uint32_t key)
{
    switch (act) {
    case UI_ACT_NEWLINE:
    case UI_ACT_BACKSPACE:
    case UI_ACT_DELETE:
    case UI_ACT_EOF_OR_DELETE:
    case UI_ACT_KILL_END:
    case UI_ACT_KILL_START:
    case UI_ACT_KILL_WORD: return true;
    case UI_ACT_HELP_IF_EMPTY: return app->editor.len > 0;
    case UI_ACT_NONE: return key >= 0x20 && key < 0x110000 && key != 0x7F;
    default: return false;
    }
}

/* Empties the input, keeping what it held in the history. */
static void consume_input(struct ui_app *app)
{
    free(ui_editor_take(&app->editor));
    if (app->history_path && !ui_history_save(&app->history, app->history_path))
        note(app, true, "cannot save the input history %s: %s", app->history_path, strerror(errno));
}

/* Whether the text has anything but white space. */
static bool blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
            return false;
    return true;
}

/* Refuses (with a note) what cannot be done while a generation runs. */
static bool busy(struct ui_app *app)
{
    if (app->generating)
        note(app, true, "a generation is running: wait for it, or cancel it with Esc");
    return app->generating;
}

/* The JSON lines of a save. */
struct jsonl_save {
    const struct ui_transcript *t;
    const char *model;
};

/* Writes the JSON lines of a save. */
static bool write_jsonl(FILE *f, const void *ctx)
{
    const struct jsonl_save *j = ctx;
    return ui_jsonl_write(j->t, j->model, f);
}

/* Makes the files this chat owns md (NULL: none) and jsonl: those it saved or loaded last. */
static void own_files(struct ui_app *app, const char *md, const char *jsonl)
{
    const char *paths[2] = {md, jsonl};
    for (int i = 0; i < 2; i++) {
        free(app->own[i]);
        app->own[i] = paths[i] ? strdup(paths[i]) : NULL; /* NULL also when memory ran out */
    }
}

/* Whether writing path would replace a file that this chat did not save or load last. */
static bool replaces_other(const struct ui_app *app, const char *path)
{
    for (int i = 0; i < 2; i++)
        if (app->own[i] && strcmp(app->own[i], path) == 0)
            return false;
    return access(path, F_OK) == 0;
}

/*
 * /save FILE: the Markdown to FILE and the JSON lines /load reads to FILE.jsonl; a FILE that
 * ends in ".jsonl" gets only the JSON lines. Each file is replaced whole or not at all, and
 * replacing one this chat did not save or load last takes a second /save. False when it asked
 * (the command stays in the input).
 */
static bool save(struct ui_app *app, const char *arg, size_t len, bool confirmed)
{
    char path[4096], jsonl[4200];
    ui_file_path(arg, len, path, sizeof path);
    const size_t n = strlen(path);
    const bool only_jsonl = n > 6 && strcmp(path + n - 6, ".jsonl") == 0;
    snprintf(jsonl, sizeof jsonl, only_jsonl ? "%s" : "%s.jsonl", path);
    const char *other = !only_jsonl && replaces_other(app, path) ? path
                        : replaces_other(app, jsonl)             ? jsonl
                                                                 : NULL;
    if (other && !confirmed) {
        app->confirm = UI_CMD_SAVE;
        note(app, true, "%s exists: Enter replaces it, /save OTHER-FILE keeps it", other);
        return false;
    }
    char model[512];
    snprintf(model, sizeof model, "%s (%s, %s)", app->info.model, app->info.arch, app->info.quant);
    if (!only_jsonl && !ui_transcript_save(&app->transcript, model, path)) {
        note(app, true, "cannot write %s: %s", path, strerror(errno));
        return true;
    }
    const struct jsonl_save j = {&app->transcript, model};
    if (!ui_save_file(jsonl, write_jsonl, &j)) {
        note(app, true, "cannot write %s: %s", jsonl, strerror(errno));
        return true;
    }
    if (only_jsonl)
        note(app, false, "saved the conversation to %s (/load reads it)", jsonl);
    else
        note(app, false, "saved the conversation to %s and %s (/load reads it)", path, jsonl);
    app->unsaved = false;
    own_files(app, only_jsonl ? NULL : path, jsonl);
    return true;
}

/*
 * /load FILE: the conversation a /save wrote replaces this one, which, when not saved, takes a
 * second /load. A file that cannot be read or parsed changes nothing.
 */
static bool load(struct ui_app *app, const char *arg, size_t len, bool confirmed)
{
    char path[4096], err[DLLM_ERROR_TEXT_MAX + 64];
    ui_file_path(arg, len, path, sizeof path);
    if (app->unsaved && !confirmed) {
        app->confirm = UI_CMD_LOAD;
        note(app, true,
             "the conversation is not saved: Enter loads %s anyway, /save FILE keeps it first",
             path);
        return false;
    }
    struct ui_transcript t;
    if (!ui_jsonl_load(path, &t, err, sizeof err)) {
        note(app, true, "%s", err);
        return true;
    }
    ui_transcript_fini(&app->transcript);
    app->transcript = t;
    ui_timing_clear(&app->timing);
    app->timing_back = 0;
    app->last_end = -1;
    app->conv_changed = true;
    app->unsaved = false;
    own_files(app, NULL, path);
    ui_scrollback_end(&app->conv);
    size_t answers = 0;
    for (size_t i = 0; i < t.n; i++)
        answers += t.turns[i].role == UI_ROLE_ASSISTANT;
    note(app, false, "loaded %zu message%s and %zu answer%s from %s", t.n - answers,
         t.n - answers == 1 ? "" : "s", answers, answers == 1 ? "" : "s", path);
    return true;
}

/*
 * /system: alone, shows the system prompt; "off" removes it; else sets it. Set or removed
 * after the conversation started, a notice marks where the change applies from.
 */
static void system_prompt(struct ui_app *app, const char *arg, size_t len)
{
    const char *now = app->transcript.system;
    if (len == 0) {
        note(app, false, now ? "system prompt: %s" : "no system prompt (/system TEXT sets one)",
             now ? now : "");
        return;
    }
    const bool off = len == 3 && strncmp(arg, "off", 3) == 0;
    char *text = off ? NULL : strndup(arg, len);
    char mark[600];
    snprintf(mark, sizeof mark,
             off ? "system prompt removed from here on" : "system prompt from here on: %.500s",
             text ? text : "");
    if ((!off && !text) || !ui_transcript_set_system(&app->transcript, text) ||
        (app->transcript.n > 0 && !ui_transcript_add(&app->transcript, UI_ROLE_NOTICE, mark))) {
        free(text);
        note(app, true, "out of memory");
        return;
    }
    free(text);
    app->conv_changed = true;
    app->unsaved |= app->transcript.n > 0;
    note(app, false,
         off ? "system prompt removed" : "system prompt set; it applies from the next answer");
}

/* The most max tokens the model's context allows. */
static int64_t max_cap(const struct ui_app *app)
{
    return app->info.n_ctx > 1 ? app->info.n_ctx - 1 : 1;
}

/* /set NAME VALUE sets a setting for the next generation; /set alone lists them. */
static void set(struct ui_app *app, const char *arg, size_t len)
{
    char name[32], value[64], text[DLLM_ERROR_TEXT_MAX];
    if (len == 0) {
        ui_settings_list(&app->settings, text, sizeof text);
        note(app, false, "%s (/set NAME VALUE changes one)", text);
        return;
    }
    size_t n = 0;
    while (n < len && arg[n] != ' ' && arg[n] != '\t')
        n++;
    size_t v = n;
    while (v < len && (arg[v] == ' ' || arg[v] == '\t'))
        v++;
    snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), arg);
    snprintf(value, sizeof value, "%.*s",
             (int)(len - v < sizeof value ? len - v : sizeof value - 1), arg + v);
    const bool ok = ui_settings_set(&app->settings, name, value, max_cap(app), app->generating,
                                    text, sizeof text);
    note(app, !ok, "%s", text);
}

/* /copy [code]: the last answer, or the last code block in it, for the clipboard. */
static void copy(struct ui_app *app, const char *arg, size_t len)
{
    const bool code = len == 4 && strncmp(arg, "code", 4) == 0;
    if (len > 0 && !code) {
        note(app, true, "/copy takes nothing or 'code', not '%.*s'", (int)(len > 40 ? 40 : len),
             arg);
        return;
    }
    const struct ui_turn *last = NULL;
    for (size_t i = app->transcript.n; i-- > 0 && !last;)
        if (app->transcript.turns[i].role == UI_ROLE_ASSISTANT)
            last = &app->transcript.turns[i];
    if (!last) {
        note(app, true, "there is no answer to copy yet");
        return;
    }
    size_t start = 0, end = strlen(last->text);
    if (code && !ui_markdown_last_code(last->text, end, &start, &end)) {
        note(app, true, "the last answer has no code block (/copy copies all of it)");
        return;
    }
    if (end - start > UI_CLIPBOARD_MAX) {
        note(app, true,
             "%s is %zu bytes, more than the %d a terminal takes in one copy (OSC 52): "
             "/save FILE keeps it",
             code ? "the last code block" : "the last answer", end - start, UI_CLIPBOARD_MAX);
        return;
    }
    free(app->copy);
    app->copy = strndup(last->text + start, end - start);
    if (!app->copy)
        note(app, true, "out of memory");
    else
        note(app, false, "copied %s (%zu bytes) to the clipboard",
             code ? "the last code block" : "the last answer", end - start);
}

/* Enter: sends the input as a message, or runs it as a command. */
static void send(struct ui_app *app)
{
    const char *line = app->editor.buf ? app->editor.buf : "";
    struct ui_cmd cmd;
    ui_command_parse(line, &cmd);
    const enum ui_cmd_kind confirmed = app->confirm; /* only the very next command confirms */
    app->confirm = UI_CMD_MESSAGE;
    switch (cmd.kind) {
    case UI_CMD_MESSAGE: {
        if (blank(cmd.arg, cmd.arg_len) || busy(app))
            return;
        char *text = strndup(cmd.arg, cmd.arg_len);
        if (!text || !ui_transcript_add(&app->transcript, UI_ROLE_USER, text)) {
            free(text);
            note(app, true, "out of memory");
            return;
        }
        free(text);
        app->conv_changed = true;
        app->unsaved = true;
        ui_scrollback_end(&app->conv);
        if (start_generation(app, &app->settings, app->transcript.n)) {
            consume_input(app);
        } else {
            /* Nothing was sent: the message goes back to the input. */
            char *back;
            if (ui_transcript_undo(&app->transcript, &back))
                free(back);
        }
        return;
    }
    case UI_CMD_CLEAR:
        if (busy(app))
            return;
        ui_transcript_clear(&app->transcript);
        ui_timing_clear(&app->timing);
        app->conv_changed = true;
        app->unsaved = false; /* nothing left to lose */
        ui_scrollback_end(&app->conv);
        note(app, false, "conversation cleared");
        break;
    case UI_CMD_REGEN: {
        /*
         * The old answer stays until the new one is complete; the new one takes the old
         * one's seed plus 1, so that it differs.
         */
        if (busy(app))
            return;
        const size_t end = ui_transcript_answer_start(&app->transcript);
        if (!end) {
            note(app, true, "there is no message to answer again");
            break;
        }
        const struct ui_turn *old = ui_transcript_last_answer(&app->transcript);
        struct dllm_sampler_params s = app->settings;
        s.seed = (old && old->has_stats ? old->settings.seed : app->settings.seed) + 1;
        if (start_generation(app, &s, end)) {
            app->regen = true;
            note(app, false,
                 "answering again with seed %" PRIu64 "; the previous answer stays until the "
                 "new one is complete",
                 s.seed);
        }
        break;
    }
    case UI_CMD_UNDO: {
        if (busy(app))
            return;
        char *text;
        if (!ui_transcript_undo(&app->transcript, &text)) {
            note(app, true, "there is nothing to undo");
            break;
        }
        app->conv_changed = true;
        app->unsaved = true;
        consume_input(app);
        ui_editor_set(&app->editor, text);
        free(text);
        note(app, false,
             "removed the last message and its answer; the message is back in the "
             "input");
        return;
    }
    case UI_CMD_SAVE:
        if (!save(app, cmd.arg, cmd.arg_len, confirmed == UI_CMD_SAVE))
            return; /* the command stays in the input: Enter runs it again */
        break;
    case UI_CMD_LOAD:
        if (busy(app) || !load(app, cmd.arg, cmd.arg_len, confirmed == UI_CMD_LOAD))
            return; /* the command stays in the input: Enter runs it again */
        break;
    case UI_CMD_SYSTEM: system_prompt(app, cmd.arg, cmd.arg_len); break;
    case UI_CMD_SET: set(app, cmd.arg, cmd.arg_len); break;
    case UI_CMD_FIND: find(app, cmd.arg, cmd.arg_len); break;
    case UI_CMD_COPY: copy(app, cmd.arg, cmd.arg_len); break;
    case UI_CMD_HELP: open_help(app); break;
    case UI_CMD_QUIT: app->quit = true; break;
    case UI_CMD_ERROR: note(app, true, "%s", cmd.error); return;
    }
    consume_input(app);
}

/* Ctrl+C: cancel a generation, else clear the input; a second press within a second quits. */
static void interrupt(struct ui_app *app, double now_ms)
{
    if (now_ms - app->last_interrupt_ms < UI_INTERRUPT_QUIT_MS) {
        app->quit = true;
        return;
    }
    app->last_interrupt_ms = now_ms;
    if (app->generating) {
        cancel(app, " (Ctrl+C again within 1 s quits)");
    } else if (app->editor.len > 0) {
        ui_editor_clear(&app->editor);
        note(app, false, "input cleared; Ctrl+C again within 1 s quits");
    } else {
        note(app, false, "Ctrl+C again within 1 s quits (or /quit, or Ctrl+D)");
    }
}

/* Moves a slider of the settings pane. */
static void adjust(struct ui_app *app, int dir)
{
    char text[200];
    ui_settings_adjust(&app->settings, app->slider, dir, max_cap(app), app->generating, text,
                       sizeof text);
    note(app, false, "%s", text);
}

/* Scrolls the focused pane: the conversation, or the timing pane's rows. */
static void scroll(struct ui_app *app, enum ui_action act)
{
    if (app->focus == UI_FOCUS_TIMING) {
        /* Scrolled back at most until step 0 is the pane's first row. */
        const size_t n = app->timing.n, rows = app->timing_rows;
        const size_t most = n > rows ? n - rows : 0;
        size_t back = app->timing_back < most ? app->timing_back : most;
        if (act == UI_ACT_SCROLL_UP && back < most)
            back++;
        else if (act == UI_ACT_SCROLL_DOWN && back > 0)
            back--;
        else if (act == UI_ACT_SCROLL_TOP)
            back = most;
        else if (act == UI_ACT_SCROLL_BOTTOM)
            back = 0;
        app->timing_back = back;
        return;
    }
    if (act == UI_ACT_SCROLL_UP || act == UI_ACT_SCROLL_DOWN)
        ui_scrollback_scroll(&app->conv, act == UI_ACT_SCROLL_UP ? -1 : 1);
    else if (act == UI_ACT_SCROLL_TOP)
        ui_scrollback_home(&app->conv);
    else
        ui_scrollback_end(&app->conv);
}

/*
 * PgUp (dir < 0) or PgDn on the focused pane: the timing pane scrolls a page of step rows, a
 * slider moves by 10 of its steps (PgUp up), the conversation scrolls a page otherwise.
 */
static void page(struct ui_app *app, int dir)
{
    if (app->focus == UI_FOCUS_TIMING) {
        const size_t n = app->timing.n, rows = app->timing_rows;
        const size_t most = n > rows ? n - rows : 0, by = rows > 1 ? rows - 1 : 1;
        size_t back = app->timing_back < most ? app->timing_back : most;
        back = dir < 0 ? (most - back > by ? back + by : most) : (back > by ? back - by : 0);
        app->timing_back = back;
    } else if (app->focus == UI_FOCUS_SETTINGS) {
        for (int i = 0; i < 10; i++)
            adjust(app, -dir);
    } else {
        ui_scrollback_page(&app->conv, dir);
    }
}

/*
 * A key for a value typed into the selected slider: digits and '.' add to it, Backspace takes
 * one back, Enter applies it as /set would, Esc drops it. Returns whether the key was one of
 * these; any other key drops the typed value and acts as usual.
 */
static bool typed_key(struct ui_app *app, uint32_t key)
{
    const size_t n = strlen(app->typed);
    if (app->focus != UI_FOCUS_SETTINGS) {
        app->typed[0] = '\0';
        return false;
    }
    if ((key >= '0' && key <= '9') || key == '.') {
        if (n + 1 < sizeof app->typed) {
            app->typed[n] = (char)key;
            app->typed[n + 1] = '\0';
        }
        return true;
    }
    if (n == 0)
        return false;
    const char *name = ui_slider_name(app->slider);
    if (key == UI_KEY_BACKSPACE) {
        app->typed[n - 1] = '\0';
    } else if (key == UI_KEY_ENTER) {
        char text[DLLM_ERROR_TEXT_MAX];
        const bool ok = ui_settings_set(&app->settings, name, app->typed, max_cap(app),
                                        app->generating, text, sizeof text);
        note(app, !ok, "%s", text);
        app->typed[0] = '\0';
    } else if (key == UI_KEY_ESC) {
        char value[24];
        ui_slider_value(&app->settings, app->slider, value, sizeof value);
        note(app, false, "typed value dropped: %s stays %s", name, value);
        app->typed[0] = '\0';
    } else {
        app->typed[0] = '\0';
        return false;
    }
    return true;
}

/*
 * Shows the newest message sent before entry `before` that holds the search's query in the
 * input, and the search on the message line; or says that none does (the input stays).
 */
static void history_search_find(struct ui_app *app, size_t before)
{
    struct ui_history_search *hs = &app->hsearch;
    const size_t at = ui_history_find(&app->history, hs->query, before);
    if (at == app->history.n) {
        note(app, true, "history search '%s': no %smessage sent holds it (Backspace, Esc)",
             hs->query, before < app->history.n ? "older " : "");
        return;
    }
    hs->at = at;
    if (!ui_editor_set(&app->editor, app->history.items[at]))
        note(app, true, "out of memory");
    else
        note(app, false, "history search '%s': Ctrl+R older, Enter takes it, Esc drops it",
             hs->query);
}

/* Ctrl+R: starts a search of the messages sent before, the input put aside. */
static void history_search_start(struct ui_app *app)
{
    char *draft = strdup(app->editor.buf ? app->editor.buf : "");
    if (!draft) {
        note(app, true, "out of memory");
        return;
    }
    free(app->hsearch.draft);
    app->hsearch = (struct ui_history_search){.active = true, .at = app->history.n, .draft = draft};
    note(app, false, "history search: type part of a message sent before (Esc drops it)");
}

/* Ends the search: the input keeps the match shown, or (keep false) is what it was before. */
static void history_search_end(struct ui_app *app, bool keep)
{
    struct ui_history_search *hs = &app->hsearch;
    if (!keep && !ui_editor_set(&app->editor, hs->draft))
        note(app, true, "out of memory");
    free(hs->draft);
    *hs = (struct ui_history_search){0};
}

/*
 * A key during Ctrl+R's search: typed text and Backspace change the query, Ctrl+R looks for an
 * older match, Enter takes the match, Esc (Ctrl+G, Ctrl+C) drops the search. Another key ends
 * the search with its match in the input and acts as usual: false then.
 */
static bool history_search_key(struct ui_app *app, uint32_t key)
{
    struct ui_history_search *hs = &app->hsearch;
    if (!hs->active || key == UI_KEY_RESIZE || key == UI_KEY_WHEEL_UP || key == UI_KEY_WHEEL_DOWN)
        return false;
    size_t n = strlen(hs->query);
    if (key == UI_KEY_CTRL('r')) {
        history_search_find(app, hs->at);
    } else if (key == UI_KEY_BACKSPACE) {
        while (n > 0 && (hs->query[n - 1] & 0xC0) == 0x80) /* a character's continuation bytes */
            n--;
        hs->query[n > 0 ? n - 1 : 0] = '\0';
        history_search_find(app, app->history.n);
    } else if (key == UI_KEY_ESC || key == UI_KEY_CTRL('g') || key == UI_KEY_CTRL('c')) {
        history_search_end(app, false);
        note(app, false, "history search dropped: the input is as it was");
    } else if (key == UI_KEY_ENTER) {
        history_search_end(app, true);
        app->note[0] = '\0';
    } else if (key >= 0x20 && key < 0x110000 && key != 0x7F) {
        char enc[4];
        const size_t len = ui_utf8_encode(key, enc);
        if (n + len < sizeof hs->query) {
            memcpy(hs->query + n, enc, len);
            hs->query[n + len] = '\0';
        }
        history_search_find(app, app->history.n);
    } else {
        history_search_end(app, true);
        app->note[0] = '\0';
        return false;
    }
    return true;
}

/* A key while the help screen shows: scroll it, close it, or Ctrl+C. */
static void help_key(struct ui_app *app, uint32_t key, double now_ms)
{
    struct ui_scrollback *v = &app->help_view;
    switch (key) {
    case UI_KEY_UP: ui_scrollback_scroll(v, -1); break;
    case UI_KEY_DOWN: ui_scrollback_scroll(v, 1); break;
    case UI_KEY_WHEEL_UP: ui_scrollback_scroll(v, -UI_WHEEL_ROWS); break;
    case UI_KEY_WHEEL_DOWN: ui_scrollback_scroll(v, UI_WHEEL_ROWS); break;
    case UI_KEY_PGUP: ui_scrollback_page(v, -1); break;
    case UI_KEY_PGDN: ui_scrollback_page(v, 1); break;
    case UI_KEY_HOME: ui_scrollback_home(v); break;
    case UI_KEY_END: ui_scrollback_end(v); break;
    case UI_KEY_CTRL('c'): interrupt(app, now_ms); break;
    case UI_KEY_RESIZE: break;
    default: app->help = false; break;
    }
}

/* A key inside a bracketed paste: text into the input, whatever the focus. */
static void paste_key(struct ui_app *app, uint32_t key)
{
    char enc[4];
    size_t n = 0;
    if (key == UI_KEY_ENTER || key == UI_KEY_CTRL('j'))
        enc[n++] = '\n';
    else if (key == UI_KEY_TAB)
        enc[n++] = '\t';
    else if (key >= 0x20 && key < 0x110000)
        n = ui_utf8_encode(key, enc);
    if (n && !ui_editor_paste(&app->editor, enc, n))
        note(app, true, "out of memory");
}

void ui_app_edited(struct ui_app *app, const char *text, const char *why)
{
    if (!text)
        note(app, true, "%s", why);
    else if (!ui_editor_set(&app->editor, text))
        note(app, true, "out of memory");
    else
        note(app, false, "the message as the editor left it: Enter sends it");
}

/* Moves the focus to the next pane (dir 1) or the previous (-1), past a hidden timing pane. */
static void focus_step(struct ui_app *app, int dir)
{
    const int step = dir > 0 ? 1 : UI_FOCUS_COUNT - 1;
    do
        app->focus = (enum ui_focus)((app->focus + step) % UI_FOCUS_COUNT);
    while (app->focus == UI_FOCUS_TIMING && !app->timing_shown);
}

/*
 * Tab in the input box: completes the /command, /set's setting name or a setting's word value
 * being typed at the end of the input, naming the choices where several remain; with anything
 * else typed it moves the focus.
 */
static void complete(struct ui_app *app)
{
    struct ui_editor *ed = &app->editor;
    struct ui_completion c;
    if (ed->cursor != ed->len || !ui_complete(ed->buf ? ed->buf : "", &app->settings, &c)) {
        focus_step(app, 1);
        return;
    }
    if (c.n == 0) {
        if (c.kind == UI_COMPLETE_VALUE)
            note(app, true, "%s takes no such word: Tab after '%s ' lists those it takes",
                 c.setting, c.setting);
        else
            note(app, true,
                 c.kind == UI_COMPLETE_SETTING ? "no setting starts so: /set lists them"
                 : c.kind == UI_COMPLETE_FILE  ? "no file or folder there starts so"
                                               : "no command starts so: /help lists them");
        return;
    }
    if (strcmp(c.line, ed->buf) != 0 && !ui_editor_set(ed, c.line)) {
        note(app, true, "out of memory");
        return;
    }
    if (c.n > 1)
        note(app, false, "%s", c.names);
    else
        app->note[0] = '\0';
}

void ui_app_key(struct ui_app *app, uint32_t key, double now_ms)
{
    if (app->paste) {
        if (key == UI_KEY_PASTE_END)
            app->paste = false;
        else
            paste_key(app, key);
        return;
    }
    if (key == UI_KEY_PASTE_BEGIN) {
        app->paste = true;
        app->focus = UI_FOCUS_INPUT;
        app->note[0] = '\0';
        return;
    }
    if (app->help) {
        help_key(app, key, now_ms);
        return;
    }
    if (history_search_key(app, key) || typed_key(app, key))
        return;
    struct ui_editor *ed = &app->editor;
    enum ui_action act = ui_keys_lookup(app->focus, key);
    const bool confirm = app->confirm_quit; /* only the very next key confirms */
    app->confirm_quit = false;
    if (act == UI_ACT_CANCEL || edits_input(app, act, key))
        app->note[0] = '\0';
    switch (act) {
    case UI_ACT_HELP: open_help(app); break;
    case UI_ACT_HELP_IF_EMPTY:
        if (ed->len == 0)
            open_help(app);
        else
            ui_editor_insert_char(ed, key);
        break;
    case UI_ACT_INTERRUPT: interrupt(app, now_ms); break;
    case UI_ACT_CANCEL:
        if (app->generating && !app->cancelling) {
            cancel(app, "");
        } else if (app->find[0]) {
            app->find[0] = '\0';
            app->conv_changed = true;
        }
        break;
    case UI_ACT_FIND_OR_RIGHT:
        if (ed->len > 0) {
            ui_editor_right(ed);
            break;
        }
        /* fall through */
    case UI_ACT_FIND:
        app->focus = UI_FOCUS_INPUT;
        ui_editor_set(ed, "/find ");
        break;
    case UI_ACT_FIND_NEXT:
    case UI_ACT_FIND_PREV: find_show(app, act == UI_ACT_FIND_NEXT ? 1 : -1); break;
    case UI_ACT_COMPLETE_OR_FOCUS: complete(app); break;
    case UI_ACT_FOCUS_NEXT:
    case UI_ACT_FOCUS_PREV: focus_step(app, act == UI_ACT_FOCUS_NEXT ? 1 : -1); break;
    case UI_ACT_PAGE_UP:
    case UI_ACT_PAGE_DOWN: page(app, act == UI_ACT_PAGE_UP ? -1 : 1); break;
    case UI_ACT_REDRAW: app->redraw_all = true; break;
    case UI_ACT_SUSPEND: app->suspend = true; break;
    case UI_ACT_EDIT_EXTERNAL: app->edit_external = true; break;
    case UI_ACT_HISTORY_SEARCH: history_search_start(app); break;
    case UI_ACT_MOUSE:
        app->mouse = !app->mouse;
        note(app, false,
             app->mouse ? "mouse wheel on: it scrolls the conversation (Shift+drag selects text)"
                        : "mouse wheel off: the terminal selects text with the mouse (F4: on)");
        break;
    case UI_ACT_WHEEL_UP:
    case UI_ACT_WHEEL_DOWN:
        ui_scrollback_scroll(&app->conv, act == UI_ACT_WHEEL_UP ? -UI_WHEEL_ROWS : UI_WHEEL_ROWS);
        break;
    case UI_ACT_COPY: copy(app, "", 0); break;
    case UI_ACT_RAW:
        app->raw = !app->raw;
        app->conv_changed = true;
        note(app, false,
             app->raw ? "answers as written (F2: rendered as Markdown)"
                      : "answers rendered as Markdown (F2: as written)");
        break;
    case UI_ACT_SEND: send(app); break;
    case UI_ACT_NEWLINE: ui_editor_insert_char(ed, '\n'); break;
    case UI_ACT_LEFT: ui_editor_left(ed); break;
    case UI_ACT_RIGHT: ui_editor_right(ed); break;
    case UI_ACT_WORD_LEFT: ui_editor_word_left(ed); break;
    case UI_ACT_WORD_RIGHT: ui_editor_word_right(ed); break;
    case UI_ACT_HOME: ui_editor_home(ed); break;
    case UI_ACT_END: ui_editor_end(ed); break;
    case UI_ACT_BACKSPACE: ui_editor_backspace(ed); break;
    case UI_ACT_DELETE: ui_editor_delete(ed); break;
    case UI_ACT_EOF_OR_DELETE:
        if (ed->len > 0) {
            ui_editor_delete(ed);
        } else if (app->unsaved && !confirm) {
            app->confirm_quit = true;
            note(app, true,
                 "the conversation is not saved: Ctrl+D again quits, /save FILE keeps it");
        } else {
            app->quit = true;
        }
        break;
    case UI_ACT_KILL_END: ui_editor_kill_end(ed); break;
    case UI_ACT_KILL_START: ui_editor_kill_start(ed); break;
    case UI_ACT_KILL_WORD: ui_editor_kill_word(ed); break;
    case UI_ACT_UP: ui_editor_up(ed); break;
    case UI_ACT_DOWN: ui_editor_down(ed); break;
    case UI_ACT_SCROLL_UP:
    case UI_ACT_SCROLL_DOWN:
    case UI_ACT_SCROLL_TOP:
    case UI_ACT_SCROLL_BOTTOM: scroll(app, act); break;
    case UI_ACT_SLIDER_PREV:
        app->slider = (enum ui_slider)((app->slider + UI_SLIDER_COUNT - 1) % UI_SLIDER_COUNT);
        break;
    case UI_ACT_SLIDER_NEXT:
        app->slider = (enum ui_slider)((app->slider + 1) % UI_SLIDER_COUNT);
        break;
    case UI_ACT_SLIDER_INC: adjust(app, 1); break;
    case UI_ACT_SLIDER_DEC: adjust(app, -1); break;
    case UI_ACT_SLIDER_APPLY:
        note(app, true, "type a value for %s first (digits), then Enter",
             ui_slider_name(app->slider));
        break;
    case UI_ACT_NONE:
        /* Typing from another pane goes to the input. */
        if (key >= 0x20 && key < 0x110000 && key != 0x7F) {
            app->focus = UI_FOCUS_INPUT;
            ui_editor_insert_char(ed, key);
        }
        break;
    }
}

/* The end of a generation: the answer (or its part) joins the conversation. */
static void finish(struct ui_app *app, struct ui_gen_result *r)
{
    app->generating = app->cancelling = false;
    app->last_end = (int)r->end;
    app->frame.n = 0;
    app->conv_changed = true;
    if (r->dropped > 0 && !ui_transcript_drop_oldest(&app->transcript, (size_t)r->dropped))
        note(app, true, "out of memory");
    const bool regen = app->regen;
    app->regen = false;
    if (r->end == UI_GEN_FAILED) {
        note(app, true, "the generation failed: %s", r->error);
        return;
    }
    if (regen && r->end == UI_GEN_CANCELLED) {
        note(app, false, "the new answer was cancelled: the previous one stays");
        return;
    }
    if (regen)
        ui_transcript_regen(&app->transcript);
    struct ui_timing_totals totals = r->totals;
    ui_timing_sum(&app->timing, &totals);
    const char *text = r->text ? r->text : "";
    if (!ui_transcript_answer(&app->transcript, text, r->gaps, r->n_gaps,
                              r->end == UI_GEN_CANCELLED, &app->running, &totals)) {
        note(app, true, "out of memory");
        return;
    }
    app->unsaved = true;
    char line[256];
    ui_timing_format_totals(&totals, line, sizeof line);
    if (r->end == UI_GEN_CANCELLED)
        note(app, false, "stopped after %d step%s: the partial answer is kept", totals.steps,
             totals.steps == 1 ? "" : "s");
    else
        note(app, false, "%s%s", line,
             r->stopped_early ? " (stopped early: the answer was final)" : "");
}

bool ui_app_poll(struct ui_app *app)
{
    struct ui_frame_news news = {0};
    int got = ui_frame_slot_take(app->slot, &app->frame, &app->timing, &news);
    if (got & UI_TAKE_NOTICE)
        note(app, false, "%s", news.notice);
    if (got & UI_TAKE_DONE) {
        finish(app, &news.result);
        free(news.result.text);
        free(news.result.gaps);
    }
    return got != 0;
}

bool ui_app_layout_conversation(struct ui_app *app, int cols, int rows)
{
    ui_scrollback_set_view(&app->conv, rows > 0 ? (size_t)rows : 0);
    if (!app->conv_changed && cols == app->conv_cols)
        return true;
    const struct ui_transcript *t = &app->transcript;
    struct ui_sb_block *blocks = malloc(3 * (t->n + 1) * sizeof *blocks);
    char(*headers)[UI_HEADER_MAX] = malloc((t->n ? t->n : 1) * sizeof *headers);
    if (!blocks || !headers)
        goto fail;
    size_t n = ui_transcript_blocks(t, app->raw, headers, blocks);
    if (!ui_scrollback_layout(&app->conv, blocks, n, cols))
        goto fail;
    free_find_styles(app);
    free(app->blocks);
    free(app->headers);
    app->blocks = blocks;
    app->headers = headers;
    app->n_blocks = n;
    app->conv_changed = false;
    app->conv_cols = cols;
    return find_apply(app);
fail:
    free(blocks);
    free(headers);
    return false;
}

bool ui_app_layout_help(struct ui_app *app, int cols, int rows)
{
    ui_scrollback_set_view(&app->help_view, rows > 0 ? (size_t)rows : 0);
    if (cols == app->help_cols)
        return true;
    if (!ui_scrollback_layout(&app->help_view, app->help_blocks, app->n_help_blocks, cols))
        return false;
    app->help_cols = cols;
    return true;
}

void ui_app_state_text(const struct ui_app *app, char *buf, size_t size)
{
    const struct ui_frame *f = &app->frame;
    if (app->cancelling)
        snprintf(buf, size, "cancelling");
    else if (app->generating && f->step < 0)
        snprintf(buf, size, "starting");
    else if (app->generating && f->n_steps > 0)
        snprintf(buf, size, "step %d of %d", f->step + 1, f->n_steps);
    else if (app->generating)
        snprintf(buf, size, "step %d", f->step + 1);
    else if (app->last_end == UI_GEN_CANCELLED)
        snprintf(buf, size, "cancelled");
    else if (app->last_end == UI_GEN_FAILED)
        snprintf(buf, size, "error");
    else
        snprintf(buf, size, "idle");
}
