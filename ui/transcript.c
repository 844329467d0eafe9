/* The conversation and its Markdown transcript. */
#include "config.h"

#include "format.h"
#include "markdown.h"
#include "savefile.h"
#include "settings.h"
#include "transcript.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void ui_transcript_init(struct ui_transcript *t)
{
    *t = (struct ui_transcript){0};
}

void ui_transcript_fini(struct ui_transcript *t)
{
    ui_transcript_clear(t);
    free(t->turns);
    free(t->system);
    *t = (struct ui_transcript){0};
}

/* Inserts a copy of *turn (its text copied too) at index at. */
static bool insert(struct ui_transcript *t, size_t at, const struct ui_turn *turn)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 16;
        struct ui_turn *turns = realloc(t->turns, cap * sizeof *turns);
        if (!turns)
            return false;
        t->turns = turns;
        t->cap = cap;
    }
    char *text = strdup(turn->text);
    if (!text)
        return false;
    memmove(t->turns + at + 1, t->turns + at, (t->n - at) * sizeof *t->turns);
    t->turns[at] = *turn;
    t->turns[at].text = text;
    t->n++;
    return true;
}

/* Removes the turns from index `from` on. */
static void truncate_at(struct ui_transcript *t, size_t from)
{
    while (t->n > from) {
        t->n--;
        free(t->turns[t->n].text);
        free(t->turns[t->n].context);
        free(t->turns[t->n].styles);
        free(t->turns[t->n].shown);
        free(t->turns[t->n].gaps);
    }
}

bool ui_transcript_add(struct ui_transcript *t, enum ui_role role, const char *text)
{
    return insert(t, t->n, &(struct ui_turn){.role = role, .text = (char *)text});
}

/*
 * The styles of a stopped answer's bytes on screen: the UI_GAP_TEXT at each of the n offsets
 * at dim, the rest plain text. NULL when memory ran out, or (errno EINVAL) when an offset does
 * not hold the mark or the offsets are not ascending.
 */
static uint8_t *gap_styles(const char *text, const size_t *at, size_t n)
{
    const size_t len = strlen(text), gap = strlen(UI_GAP_TEXT);
    for (size_t i = 0; i < n; i++) {
        if (at[i] > len || len - at[i] < gap || memcmp(text + at[i], UI_GAP_TEXT, gap) != 0 ||
            (i > 0 && at[i] < at[i - 1] + gap)) {
            errno = EINVAL;
            return NULL;
        }
    }
    uint8_t *styles = malloc(len ? len : 1);
    if (!styles)
        return NULL;
    memset(styles, UI_STYLE_TEXT, len);
    for (size_t i = 0; i < n; i++)
        memset(styles + at[i], UI_STYLE_DIM, gap);
    return styles;
}

bool ui_transcript_answer(struct ui_transcript *t, const char *text, const size_t *gaps,
                          size_t n_gaps, bool stopped, const struct dllm_sampler_params *settings,
                          const struct ui_timing_totals *totals)
{
    struct ui_turn turn = {.role = UI_ROLE_ASSISTANT,
                           .text = (char *)text,
                           .stopped = stopped,
                           .has_stats = true,
                           .settings = *settings,
                           .totals = *totals};
    char *context = NULL, *shown = NULL;
    size_t *at = NULL;
    uint8_t *styles = NULL;
    size_t shown_len;
    if (n_gaps > 0 && (!(styles = gap_styles(text, gaps, n_gaps)) ||
                       !(context = strndup(text, gaps[0])) || !(at = malloc(n_gaps * sizeof *at))))
        goto fail;
    if (n_gaps > 0)
        memcpy(at, gaps, n_gaps * sizeof *at);
    if (!stopped && !n_gaps && !ui_markdown_render(text, strlen(text), &shown, &styles, &shown_len))
        goto fail;
    if (!insert(t, t->n, &turn))
        goto fail;
    struct ui_turn *added = &t->turns[t->n - 1];
    added->context = context;
    added->styles = styles;
    added->shown = shown;
    added->gaps = at;
    added->n_gaps = at ? n_gaps : 0;
    return true;
fail:
    free(context);
    free(styles);
    free(shown);
    free(at);
    return false;
}

bool ui_transcript_set_system(struct ui_transcript *t, const char *text)
{
    char *copy = NULL;
    if (text && *text && !(copy = strdup(text)))
        return false;
    free(t->system);
    t->system = copy;
    return true;
}

void ui_transcript_clear(struct ui_transcript *t)
{
    truncate_at(t, 0);
}

/* The index of the last user message, or t->n when there is none. */
static size_t last_user(const struct ui_transcript *t)
{
    for (size_t i = t->n; i-- > 0;)
        if (t->turns[i].role == UI_ROLE_USER)
            return i;
    return t->n;
}

bool ui_transcript_undo(struct ui_transcript *t, char **text)
{
    *text = NULL;
    size_t u = last_user(t);
    if (u == t->n) {
        errno = 0;
        return false;
    }
    *text = t->turns[u].text;
    t->turns[u].text = NULL;
    truncate_at(t, u);
    return true;
}

size_t ui_transcript_answer_start(const struct ui_transcript *t)
{
    size_t u = last_user(t);
    return u == t->n ? 0 : u + 1;
}

const struct ui_turn *ui_transcript_last_answer(const struct ui_transcript *t)
{
    size_t a = ui_transcript_answer_start(t);
    return a && a < t->n && t->turns[a].role == UI_ROLE_ASSISTANT ? &t->turns[a] : NULL;
}

bool ui_transcript_regen(struct ui_transcript *t)
{
    size_t u = last_user(t);
    if (u == t->n)
        return false;
    truncate_at(t, u + 1);
    return true;
}

bool ui_transcript_drop_oldest(struct ui_transcript *t, size_t n)
{
    size_t marked = 0, last = 0;
    for (size_t i = 0; i < t->n && marked < n; i++) {
        struct ui_turn *turn = &t->turns[i];
        if (turn->dropped || turn->role == UI_ROLE_NOTICE)
            continue;
        turn->dropped = true;
        marked++;
        last = i;
    }
    if (marked == 0)
        return true;
    char text[160];
    snprintf(text, sizeof text,
             "%zu earlier message%s no longer fit%s the model's context and %s not sent to it",
             marked, marked == 1 ? "" : "s", marked == 1 ? "s" : "", marked == 1 ? "is" : "are");
    return insert(t, last + 1, &(struct ui_turn){.role = UI_ROLE_NOTICE, .text = text});
}

size_t ui_transcript_messages(const struct ui_transcript *t, size_t end,
                              struct dllm_chat_message *msgs, size_t max)
{
    size_t k = 0;
    if (t->system) {
        if (k < max)
            msgs[k] = (struct dllm_chat_message){"system", t->system};
        k++;
    }
    for (size_t i = 0; i < end && i < t->n; i++) {
        const struct ui_turn *turn = &t->turns[i];
        if (turn->dropped || turn->role == UI_ROLE_NOTICE)
            continue;
        if (k < max)
            msgs[k] = (struct dllm_chat_message){turn->role == UI_ROLE_USER ? "user" : "assistant",
                                                 turn->context ? turn->context : turn->text};
        k++;
    }
    return k;
}

/* The header line of a turn in the conversation. */
static void turn_header(const struct ui_turn *turn, char *buf, size_t size)
{
    buf[0] = '\0';
    ui_addf(buf, size, "%s", turn->role == UI_ROLE_USER ? "you" : "dllm");
    if (turn->has_stats) {
        const struct ui_timing_totals *s = &turn->totals;
        double secs = s->total_ms / 1000;
        ui_addf(buf, size, " \u00b7 %d step%s \u00b7 %d token%s \u00b7 %.2f s", s->steps,
                s->steps == 1 ? "" : "s", s->tokens, s->tokens == 1 ? "" : "s", secs);
        if (secs > 0)
            ui_addf(buf, size, " \u00b7 %.1f tok/s", s->tokens / secs);
    }
    if (turn->stopped)
        ui_addf(buf, size, " \u00b7 stopped");
    if (turn->dropped)
        ui_addf(buf, size, " \u00b7 not in context");
}

size_t ui_transcript_blocks(const struct ui_transcript *t, bool raw, char (*headers)[UI_HEADER_MAX],
                            struct ui_sb_block *blocks)
{
    size_t k = 0;
    if (t->system) {
        blocks[k++] = (struct ui_sb_block){"system prompt", 13, UI_STYLE_HEADER, 0, NULL, 0};
        blocks[k++] = (struct ui_sb_block){t->system, strlen(t->system), UI_STYLE_DIM, 2,
                                           NULL,      UI_WRAP_HANG_ITEMS};
        blocks[k++] = (struct ui_sb_block){"", 0, UI_STYLE_TEXT, 0, NULL, 0};
    }
    for (size_t i = 0; i < t->n; i++) {
        const struct ui_turn *turn = &t->turns[i];
        size_t len = strlen(turn->text);
        if (turn->role == UI_ROLE_NOTICE) {
            blocks[k++] = (struct ui_sb_block){turn->text, len, UI_STYLE_NOTICE, 0, NULL, 0};
        } else {
            turn_header(turn, headers[i], UI_HEADER_MAX);
            blocks[k++] =
                (struct ui_sb_block){headers[i], strlen(headers[i]), UI_STYLE_HEADER, 0, NULL, 0};
            uint8_t style = turn->dropped                ? UI_STYLE_DIM
                            : turn->role == UI_ROLE_USER ? UI_STYLE_USER
                                                         : UI_STYLE_TEXT;
            /* Dropped turns are all dim; the raw view shows answers without Markdown. */
            const bool plain = turn->dropped || (raw && turn->shown);
            const char *text = turn->shown && !plain ? turn->shown : turn->text;
            blocks[k++] = (struct ui_sb_block){
                text, strlen(text), style, 2, plain ? NULL : turn->styles, UI_WRAP_HANG_ITEMS};
        }
        blocks[k++] = (struct ui_sb_block){"", 0, UI_STYLE_TEXT, 0, NULL, 0};
    }
    return k;
}

/* The settings an answer was made with, as one line. */
static void settings_line(const struct dllm_sampler_params *s, char *buf, size_t size)
{
    char v[UI_SLIDER_COUNT][16];
    for (int k = 0; k < UI_SLIDER_COUNT; k++)
        ui_slider_value(s, (enum ui_slider)k, v[k], sizeof v[k]);
    buf[0] = '\0';
    ui_addf(buf, size, "steps %s, max tokens %s, block length %s, threshold %s, temperature %s",
            v[UI_SLIDER_STEPS], v[UI_SLIDER_MAX_TOKENS], v[UI_SLIDER_BLOCK], v[UI_SLIDER_THRESHOLD],
            v[UI_SLIDER_TEMPERATURE]);
    if (s->cache != DLLM_CACHE_NONE)
        ui_addf(buf, size, ", cache %s", v[UI_SLIDER_CACHE]);
    if (s->kind == DLLM_SAMPLER_LLADA) {
        ui_addf(buf, size, ", remasking %s", dllm_remasking_name(s->remasking));
    } else {
        ui_addf(buf, size, ", top-p %.2f, top-k %" PRId64 ", alg %s, eps %g", s->top_p, s->top_k,
                dllm_alg_name(s->alg), s->eps);
    }
    if (s->alg_temp > 0)
        ui_addf(buf, size, ", alg temp %g", s->alg_temp);
    if (s->cfg_scale > 0)
        ui_addf(buf, size, ", cfg scale %g", s->cfg_scale);
    ui_addf(buf, size, ", seed %" PRIu64 "%s", s->seed, s->early_stop ? "" : ", no early stop");
}

bool ui_transcript_write_markdown(const struct ui_transcript *t, const char *model, FILE *f)
{
    fputs("# dllm conversation\n\n", f);
    if (model)
        fprintf(f, "Model: %s\n\n", model);
    if (t->system)
        fprintf(f, "## System\n\n%s\n\n", t->system);
    for (size_t i = 0; i < t->n; i++) {
        const struct ui_turn *turn = &t->turns[i];
        if (turn->role == UI_ROLE_NOTICE) {
            const size_t len = strlen(turn->text);
            fprintf(f, "*%s%s*\n\n", turn->text, len && turn->text[len - 1] == '.' ? "" : ".");
            continue;
        }
        fprintf(f, "## %s%s\n\n%s\n\n", turn->role == UI_ROLE_USER ? "You" : "dllm",
                turn->dropped ? " (not in the model's context)" : "", turn->text);
        if (turn->stopped)
            fputs("*Stopped before the answer was complete.*\n\n", f);
        if (turn->has_stats) {
            char line[512];
            settings_line(&turn->settings, line, sizeof line);
            fprintf(f, "> Settings: %s.  \n", line);
            ui_timing_format_totals(&turn->totals, line, sizeof line);
            fprintf(f, "> Timings: %s.\n\n", line);
        }
    }
    return !ferror(f);
}

/* The arguments of a Markdown save. */
struct markdown_save {
    const struct ui_transcript *t;
    const char *model;
};

/* Writes the Markdown of a save. */
static bool write_markdown(FILE *f, const void *ctx)
{
    const struct markdown_save *m = ctx;
    return ui_transcript_write_markdown(m->t, m->model, f);
}

bool ui_transcript_save(const struct ui_transcript *t, const char *model, const char *path)
{
    const struct markdown_save m = {t, model};
    return ui_save_file(path, write_markdown, &m);
}
