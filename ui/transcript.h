/*
 * The conversation: its turns (the user's messages, the answers with the settings and timings
 * they were made with, and notices), the system prompt, the edits /undo /regen /clear make,
 * the messages sent to the model, and the Markdown transcript /save writes.
 * Functions that return bool return false when memory ran out or (for saving) the file could
 * not be written, with errno set; nothing has changed then.
 */
#ifndef DLLM_UI_TRANSCRIPT_H
#define DLLM_UI_TRANSCRIPT_H

#include "scrollback.h"
#include "dllm.h"
#include "timing.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum ui_role {
    UI_ROLE_USER,
    UI_ROLE_ASSISTANT,
    UI_ROLE_NOTICE, /* shown, saved, never sent to the model */
};

struct ui_turn {
    enum ui_role role;
    char *text;
    char *context; /* a stopped answer with gaps: its text before the first, the part later
                      turns send to the model (NULL: all of text) */
    size_t *gaps;  /* [n_gaps] offsets in text of a stopped answer's gaps of masks (NULL) */
    size_t n_gaps;
    char *shown;     /* a complete answer's Markdown rendered for the screen (NULL: text) */
    uint8_t *styles; /* enum ui_style of each byte of shown (a complete answer), or of text (a
                        stopped answer's gaps dim); NULL: the turn's one style */
    bool stopped;    /* an answer cancelled before it was complete: the partial text */
    bool dropped;    /* no longer sent: the conversation outgrew the model's context */
    bool has_stats;  /* an answer: settings and totals are set */
    struct dllm_sampler_params settings;
    struct ui_timing_totals totals;
};

struct ui_transcript {
    struct ui_turn *turns; /* [n], oldest first */
    size_t n, cap;
    char *system; /* the system prompt, or NULL */
};

void ui_transcript_init(struct ui_transcript *t);
void ui_transcript_fini(struct ui_transcript *t);

/* Appends a turn holding a copy of text (a user message or a notice). */
bool ui_transcript_add(struct ui_transcript *t, enum ui_role role, const char *text);

/*
 * Appends an answer with the settings it was made with and its totals. A stopped answer's
 * gaps of masks are the UI_GAP_TEXT at the n_gaps offsets gaps (ascending; a mark elsewhere is
 * the model's text), shown dim; later turns send its text before the first. A complete answer
 * is shown as rendered Markdown. False also (errno EINVAL) when a gap is not such a mark.
 */
bool ui_transcript_answer(struct ui_transcript *t, const char *text, const size_t *gaps,
                          size_t n_gaps, bool stopped, const struct dllm_sampler_params *settings,
                          const struct ui_timing_totals *totals);

/* Sets the system prompt; NULL or "" removes it. */
bool ui_transcript_set_system(struct ui_transcript *t, const char *text);

/* Removes every turn; the system prompt stays. */
void ui_transcript_clear(struct ui_transcript *t);

/*
 * Removes the last user message and everything after it, handing its text to the caller in
 * *text (to free). False with *text NULL and errno 0 when there is no user message.
 */
bool ui_transcript_undo(struct ui_transcript *t, char **text);

/*
 * Where an answer to the last user message starts: the index after it, or 0 when there is no
 * user message (nothing to answer again).
 */
size_t ui_transcript_answer_start(const struct ui_transcript *t);

/* The answer to the last user message, the turn at ui_transcript_answer_start, or NULL. */
const struct ui_turn *ui_transcript_last_answer(const struct ui_transcript *t);

/*
 * A new answer to the last message replaces the old: removes the turns after the last user
 * message (a /regen that completed). False when there is no user message.
 */
bool ui_transcript_regen(struct ui_transcript *t);

/*
 * Marks the n oldest turns still sent to the model as dropped and adds a notice after the last
 * of them saying how many were dropped. Returns false only when memory ran out.
 */
bool ui_transcript_drop_oldest(struct ui_transcript *t, size_t n);

/*
 * The messages to send, as the chat template takes them ("system", "user", "assistant"): the
 * system prompt, then the user messages and answers not dropped among the first `end` turns
 * (t->n: all of them; a /regen stops before the old answer). Writes the first `max` to msgs
 * (pointing into t) and returns how many there are (at most end + 1).
 */
size_t ui_transcript_messages(const struct ui_transcript *t, size_t end,
                              struct dllm_chat_message *msgs, size_t max);

/* How the engine marks a run of masks a cancelled answer left in its text (dllm.h DONE). */
#define UI_GAP_TEXT " \u2026 "

#define UI_HEADER_MAX 128

/*
 * The conversation as scrollback blocks: the system prompt, then for each turn a header line
 * (headers[i] receives turn i's, e.g. "dllm · 64 steps · 4.10 s · 29.3 tok/s"), its text
 * indented by two columns, and a blank line; a notice is one line. blocks must have room for
 * 3 * (n + 1) entries. raw: answers as the model wrote them, not rendered as Markdown.
 * Returns the number of blocks.
 */
size_t ui_transcript_blocks(const struct ui_transcript *t, bool raw, char (*headers)[UI_HEADER_MAX],
                            struct ui_sb_block *blocks);

/*
 * Writes the conversation as Markdown: a title, the model line (when not NULL), the system
 * prompt, then "## You" and "## dllm" sections, each answer followed by a quoted line of the
 * settings it was made with and one of its timings, and stopped and dropped turns marked.
 */
bool ui_transcript_write_markdown(const struct ui_transcript *t, const char *model, FILE *f);

/* ui_transcript_write_markdown to the file at path, replacing it whole (ui/savefile.h). */
bool ui_transcript_save(const struct ui_transcript *t, const char *model, const char *path);

#endif
