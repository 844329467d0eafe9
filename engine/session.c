/*
 * Generation sessions: a worker thread that turns a conversation into an answer, one
 * denoising step at a time (forward pass, then sampler step), reporting each step.
 *
 * The caller's thread only hands a request over (under the mutex) and may cancel it; the
 * worker owns every buffer while a request runs. Buffers are sized when the session is made
 * (forward context, sampler) or when a request needs more logits rows than any before it, so
 * a step never allocates.
 */
#include "config.h"

#include "clock.h"
#include "dllm.h"
#include "lines.h"
#include "sampler.h"
#include "threadpool.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A request as the worker keeps it: deep copies of the caller's strings. */
struct owned_request {
    struct dllm_chat_message *messages;
    size_t n_messages;
    char *raw_prompt;
    struct dllm_sampler_params sampler;
    const atomic_bool *cancel; /* the caller's flag, or NULL */
    bool check_cache;
    dllm_event_fn fn;
    void *user;
};

struct dllm_session {
    const struct dllm_model *model;
    struct dllm_vocab *vocab;
    struct dllm_chat_template *tmpl; /* NULL when the file has none dllm recognises */
    char tmpl_error[DLLM_ERROR_TEXT_MAX];
    struct dllm_threadpool *pool; /* the session's own */
    struct dllm_forward *fwd;
    struct dllm_sampler *sampler;
    dllm_progress_fn progress; /* the creator's, for the repack */
    void *progress_user;
    bool skip_memory_check; /* the creator's, for the K/V caches too */
    int64_t max_canvas, n_vocab;
    int64_t max_rows; /* logits rows a pass may return: the longest block a request may use */
    int32_t mask_id;
    int32_t eog[DLLM_SAMPLER_MAX_EOG];
    int n_eog;

    int32_t *canvas;  /* [max_canvas] prompt, then the generation area */
    int32_t *uncond;  /* [max_canvas] the canvas with the prompt masked, for CFG */
    int32_t *rows;    /* [max_canvas] output rows the forward pass projects; at the end,
                         the answer's ids */
    float *logits;    /* [cap_rows, n_vocab] */
    float *logits_un; /* [cap_rows, n_vocab] unconditional logits, for CFG */
    /* [max_canvas] the rows' statistics, for the steps they suffice for (stats_only) */
    struct dllm_row_stats *stats;
    int64_t cap_rows;
    /* The running request's K/V caches (conditional, unconditional with CFG) or NULL, and the
     * block they were last refreshed for (-1: none yet). */
    struct dllm_kv_cache *kv[2];
    int64_t kv_block;
    float *logits_check; /* [cap_check, n_vocab] the exact rows, with check_cache */
    int64_t cap_check;
    struct dllm_event check; /* the check_* fields of the step being run */

    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool busy, quit;
    bool finishing;           /* the running request has sent its last event */
    struct owned_request req; /* valid while busy */
    atomic_bool cancel;       /* the flag the forward passes check; set by dllm_session_cancel, or
                                 from req.cancel as each layer begins */
};

/* Carries the caller's cancel flag of the running request over to the session's. */
static void mirror_cancel(struct dllm_session *s)
{
    if (s->req.cancel && atomic_load(s->req.cancel))
        atomic_store(&s->cancel, true);
}

/*
 * The forward context's progress: the repack's goes to the session's creator; as each layer
 * of a pass begins, the request's cancel flag is carried over, so that a pass stops at the
 * next layer.
 */
static void on_progress(const struct dllm_progress *p, void *user)
{
    struct dllm_session *s = user;
    if (p->kind == DLLM_PROGRESS_FORWARD)
        mirror_cancel(s);
    else if (s->progress)
        s->progress(p, s->progress_user);
}

void dllm_session_params_init(struct dllm_session_params *params)
{
    memset(params, 0, sizeof *params);
}

bool dllm_session_has_template(const struct dllm_session *s)
{
    return s->tmpl != NULL;
}

const struct dllm_vocab *dllm_session_vocab(const struct dllm_session *s)
{
    return s->vocab;
}

int64_t dllm_session_max_canvas(const struct dllm_session *s)
{
    return s->max_canvas;
}

static void free_request(struct owned_request *r)
{
    for (size_t i = 0; i < r->n_messages; i++) {
        free((char *)r->messages[i].role);
        free((char *)r->messages[i].content);
    }
    free(r->messages);
    free(r->raw_prompt);
    memset(r, 0, sizeof *r);
}

/*
 * Hands an event to the request's callback. Before the last one (DONE or ERROR) the request
 * is marked finishing, so that a caller who submits the next request from that callback's
 * news waits the moment it takes the worker to let go, instead of finding it busy.
 */
static void emit(struct dllm_session *s, struct dllm_event *ev)
{
    if (ev->kind == DLLM_EVENT_DONE || ev->kind == DLLM_EVENT_ERROR) {
        pthread_mutex_lock(&s->lock);
        s->finishing = true;
        pthread_mutex_unlock(&s->lock);
    }
    s->req.fn(ev, s->req.user);
}

static void emit_error(struct dllm_session *s, const char *text)
{
    struct dllm_event ev = {.kind = DLLM_EVENT_ERROR, .message = text};
    emit(s, &ev);
}

/*
 * Encodes the request's prompt into s->canvas. When a conversation is too long for
 * gen_length more slots, the oldest messages after a leading system message are dropped,
 * whole user/assistant exchanges at a time, keeping the last message; *dropped counts them.
 */
static enum dllm_status encode_prompt(struct dllm_session *s, int64_t *n_prompt, int64_t *dropped,
                                      struct dllm_error *err)
{
    const struct owned_request *r = &s->req;
    int64_t room = s->max_canvas - r->sampler.gen_length;
    int32_t *ids = NULL;
    int64_t n = 0;
    enum dllm_status st;
    *dropped = 0;
    if (r->raw_prompt) {
        st = dllm_vocab_encode(s->vocab, r->raw_prompt, strlen(r->raw_prompt),
                               DLLM_ENCODE_ADD_SPECIAL, &ids, &n, err);
    } else {
        size_t first = r->n_messages > 1 && strcmp(r->messages[0].role, "system") == 0 ? 1 : 0;
        struct dllm_chat_message *kept = malloc(r->n_messages * sizeof *kept);
        if (!kept)
            return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
        size_t skip = 0; /* messages dropped after the system message */
        for (;;) {
            size_t k = 0;
            for (size_t i = 0; i < r->n_messages; i++)
                if (i < first || i >= first + skip)
                    kept[k++] = r->messages[i];
            free(ids);
            ids = NULL;
            if ((st = dllm_chat_encode(s->tmpl, kept, k, &ids, &n, err)) || n <= room ||
                first + skip + 1 >= r->n_messages)
                break;
            /* Drop the oldest exchange: a message and the assistant answer after it. */
            skip++;
            if (first + skip + 1 < r->n_messages &&
                strcmp(r->messages[first + skip].role, "assistant") == 0)
                skip++;
        }
        free(kept);
        *dropped = (int64_t)skip;
    }
    if (st)
        return st;
    if (n > room) {
        free(ids);
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "the prompt is %lld tokens and the answer %lld: together more "
                              "than the canvas limit of %lld; shorten the prompt or generate "
                              "fewer tokens",
                              (long long)n, (long long)r->sampler.gen_length,
                              (long long)s->max_canvas);
    }
    memcpy(s->canvas, ids, (size_t)n * sizeof *ids);
    free(ids);
    *n_prompt = n;
    return DLLM_OK;
}

/*
 * Replaces *buf, whose contents are not kept, with room for rows logits rows of n_vocab, on whole
 * cache lines (the output product's threads then write no line together, cpu_output) and
 * touched, so that the first step does not take its page faults. Keeps the old buffer and
 * returns false when there is no room.
 */
static bool renew_rows(float **buf, int64_t rows, int64_t n_vocab)
{
    const size_t bytes = (size_t)rows * (size_t)n_vocab * sizeof(float);
    float *a = dllm_alloc_lines_touched(bytes);
    if (!a)
        return false;
    free(*buf);
    *buf = a;
    return true;
}

/* Makes room for rows logits rows (twice with CFG); only between requests. */
static enum dllm_status reserve_rows(struct dllm_session *s, int64_t rows, struct dllm_error *err)
{
    if (rows <= s->cap_rows)
        return DLLM_OK;
    if (!renew_rows(&s->logits, rows, s->n_vocab) || !renew_rows(&s->logits_un, rows, s->n_vocab))
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory for %lld logits rows of %lld",
                              (long long)rows, (long long)s->n_vocab);
    s->cap_rows = rows;
    return DLLM_OK;
}

/* Grows the exact rows' buffer of check_cache to rows rows. */
static enum dllm_status reserve_check(struct dllm_session *s, int64_t rows, struct dllm_error *err)
{
    if (rows <= s->cap_check)
        return DLLM_OK;
    if (!renew_rows(&s->logits_check, rows, s->n_vocab))
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory for %lld logits rows of %lld",
                              (long long)rows, (long long)s->n_vocab);
    s->cap_check = rows;
    return DLLM_OK;
}

/* The check_* figures of n cached rows against the exact ones, into s->check. */
static void compare_rows(struct dllm_session *s, const float *cached, const float *exact, int64_t n)
{
    const int64_t V = s->n_vocab;
    struct dllm_event *c = &s->check;
    c->checked = true;
    c->check_cos_min = 1.0;
    c->check_rel_max = 0.0;
    c->check_argmax_same = 0;
    c->check_rows = n;
    for (int64_t r = 0; r < n; r++) {
        const float *a = cached + r * V, *b = exact + r * V;
        double ab = 0, aa = 0, bb = 0, dd = 0;
        int64_t ia = 0, ib = 0;
        for (int64_t j = 0; j < V; j++) {
            ab += (double)a[j] * b[j];
            aa += (double)a[j] * a[j];
            bb += (double)b[j] * b[j];
            dd += ((double)a[j] - b[j]) * ((double)a[j] - b[j]);
            ia = a[j] > a[ia] ? j : ia;
            ib = b[j] > b[ib] ? j : ib;
        }
        const double cos = aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : 1.0;
        const double rel = bb > 0 ? sqrt(dd / bb) : 0.0;
        c->check_cos_min = cos < c->check_cos_min ? cos : c->check_cos_min;
        c->check_rel_max = rel > c->check_rel_max ? rel : c->check_rel_max;
        c->check_argmax_same += ia == ib;
    }
}

/* The K/V caches a request keeps: none without a cache mode, one per pass of a step (two with
 * classifier-free guidance). */
static int n_caches(const struct dllm_sampler_params *sp)
{
    return sp->cache == DLLM_CACHE_NONE ? 0 : sp->cfg_scale > 0 ? 2 : 1;
}

uint64_t dllm_request_cache_bytes(const struct dllm_model *model, int64_t canvas_len,
                                  const struct dllm_sampler_params *sampler)
{
    return (uint64_t)n_caches(sampler) * dllm_kv_bytes(model, canvas_len, sampler->cache_type);
}

/* Allocates the running request's K/V caches (none without a cache mode); *bytes gets their
 * size. */
static enum dllm_status new_caches(struct dllm_session *s, int64_t canvas_len, int64_t *bytes,
                                   struct dllm_error *err)
{
    *bytes = 0;
    s->kv_block = -1;
    const int n = n_caches(&s->req.sampler);
    for (int i = 0; i < n; i++) {
        const enum dllm_cache_type type = s->req.sampler.cache_type;
        enum dllm_status st =
            dllm_kv_cache_new(s->fwd, canvas_len, type, s->skip_memory_check, &s->kv[i], err);
        if (st)
            return st;
        *bytes += (int64_t)dllm_kv_cache_bytes(s->fwd, canvas_len, type);
    }
    return DLLM_OK;
}

static void free_caches(struct dllm_session *s)
{
    for (int i = 0; i < 2; i++) {
        dllm_kv_cache_free(s->kv[i]);
        s->kv[i] = NULL;
    }
}

/*
 * The positions [*begin, *end) the step's pass computes: all of them without a cache, or at a
 * block's first pass (a refresh, *refresh set); else the block and everything after it
 * (prefix) or the block alone (dual), from one slot before the block when row p predicts slot
 * p + 1 (Dream), so that the block's first slot has its exact row.
 */
static void plan_pass(struct dllm_session *s, int64_t canvas_len, int64_t *begin, int64_t *end,
                      bool *refresh)
{
    const enum dllm_cache_mode mode = s->req.sampler.cache;
    const int64_t block = dllm_sampler_block(s->sampler);
    *begin = 0;
    *end = canvas_len;
    *refresh = mode != DLLM_CACHE_NONE && block != s->kv_block;
    if (mode == DLLM_CACHE_NONE || *refresh)
        return;
    int64_t b0, b1;
    dllm_sampler_block_bounds(dllm_sampler_get_plan(s->sampler), block, &b0, &b1);
    *begin = dllm_model_shift_logits(s->model) ? b0 - 1 : b0;
    if (mode == DLLM_CACHE_DUAL)
        *end = b1;
}

/*
 * Whether the running request's steps take only the rows' statistics from the forward pass
 * (no logits row copied out): the sampler's settings allow it (dllm_sampler_takes_stats: LLaDA
 * at temperature 0), there is no classifier-free guidance (which mixes two passes' rows) and
 * no check_cache (which compares rows). Every other request reads the rows.
 */
static bool stats_only(const struct dllm_session *s)
{
    return dllm_sampler_takes_stats(&s->req.sampler) && s->req.sampler.cfg_scale == 0 &&
           !s->req.check_cache;
}

/*
 * The logits rows for canvas slots pos[0 .. n-1] (or with stats_only their statistics alone in
 * s->stats, *on_rows false): one forward pass over the canvas (and a second over the canvas with
 * the prompt masked, mixed in by classifier-free guidance), each computing the positions
 * plan_pass says with its own cache. When the statistics do not suffice (a row's argmax is the
 * mask id), the pass runs again for the rows: it recomputes the same positions from the same
 * ids, so the cache ends as it was. Models that shift their logits predict slot p from output
 * row p - 1. *refreshes, *computed and *rows_out count the passes that refreshed a cache, the
 * positions computed and the logits rows copied out (the check pass's not among them).
 */
static enum dllm_status step_logits(struct dllm_session *s, int64_t canvas_len, int64_t n_prompt,
                                    const int32_t *pos, int64_t n, bool *on_rows,
                                    int64_t *refreshes, int64_t *computed, int64_t *rows_out,
                                    struct dllm_error *err)
{
    bool shift = dllm_model_shift_logits(s->model), refresh;
    for (int64_t i = 0; i < n; i++)
        s->rows[i] = shift && pos[i] > 0 ? pos[i] - 1 : pos[i];
    struct dllm_pass pass = {.ids = s->canvas,
                             .n_tokens = canvas_len,
                             .rows = s->rows,
                             .n_rows = n,
                             .logits = s->logits,
                             .cancel = &s->cancel,
                             .cache = s->kv[0]};
    plan_pass(s, canvas_len, &pass.begin, &pass.end, &refresh);
    const bool cfg = s->req.sampler.cfg_scale > 0;
    int passes = cfg ? 2 : 1;
    *on_rows = !stats_only(s);
    if (!*on_rows) {
        pass.logits = NULL;
        pass.stats = s->stats;
    }
    enum dllm_status st = dllm_forward_run(s->fwd, &pass, err);
    if (!st && !*on_rows && !dllm_sampler_stats_suffice(s->sampler, s->stats)) {
        *on_rows = true;
        pass.logits = s->logits;
        pass.stats = NULL;
        passes++;
        st = dllm_forward_run(s->fwd, &pass, err);
    }
    if (!st && s->req.check_cache && pass.cache && !refresh) {
        const double t = dllm_clock_ms();
        struct dllm_pass exact = pass;
        exact.cache = NULL;
        exact.logits = s->logits_check;
        if (!(st = dllm_forward_run(s->fwd, &exact, err)))
            compare_rows(s, s->logits, s->logits_check, n);
        s->check.check_ms = dllm_clock_ms() - t;
    }
    if (!st && cfg) {
        memcpy(s->uncond, s->canvas, (size_t)canvas_len * sizeof *s->canvas);
        for (int64_t i = 0; i < n_prompt; i++)
            s->uncond[i] = s->mask_id;
        pass.ids = s->uncond;
        pass.logits = s->logits_un;
        pass.cache = s->kv[1];
        st = dllm_forward_run(s->fwd, &pass, err);
    }
    if (st)
        return st;
    *refreshes = refresh ? (cfg ? 2 : 1) : 0;
    *computed = passes * (pass.end - pass.begin);
    *rows_out = *on_rows ? (cfg ? 2 : 1) * n : 0;
    if (refresh)
        s->kv_block = dllm_sampler_block(s->sampler);
    if (!cfg)
        return DLLM_OK;
    for (int64_t i = 0; i < n; i++)
        dllm_sampler_cfg(s->logits + i * s->n_vocab, s->logits_un + i * s->n_vocab, s->n_vocab,
                         s->req.sampler.cfg_scale);
    return DLLM_OK;
}

/* The mark a run of masks left in a cancelled answer becomes in its text. */
#define GAP_TEXT " \u2026 "

/*
 * The text of the answer in canvas[from, to): each run of committed ids decoded, each run of
 * masks (a cancelled run leaves some) as GAP_TEXT, so that far-apart tokens are not glued
 * together; *gaps receives (malloc'd) the byte offset in the text of each of the *n_gaps gaps.
 */
static enum dllm_status answer_text(struct dllm_session *s, int64_t from, int64_t to, char **out,
                                    size_t **gaps, size_t *n_gaps, struct dllm_error *err)
{
    size_t len = 0, cap = 64, n_gap = 0;
    char *text = malloc(cap);
    /* At most one gap per two canvas positions: runs of masks alternate with other runs. */
    size_t *at = malloc(((size_t)(to - from) / 2 + 1) * sizeof *at);
    if (!text || !at) {
        free(text);
        free(at);
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory for the answer");
    }
    bool after_gap = false; /* the text ends with a gap: runs that decode to nothing join it */
    for (int64_t i = from; i < to;) {
        int64_t j = i;
        const bool gap = s->canvas[i] == s->mask_id;
        while (j < to && (s->canvas[j] == s->mask_id) == gap)
            j++;
        char *piece = NULL;
        size_t n = 0;
        if (gap && !after_gap) {
            at[n_gap++] = len;
            n = strlen(GAP_TEXT);
        } else if (!gap) {
            enum dllm_status st =
                dllm_vocab_decode(s->vocab, s->canvas + i, j - i, 0, &piece, &n, err);
            if (st) {
                free(text);
                free(at);
                return st;
            }
        }
        if (len + n + 1 > cap) {
            while (len + n + 1 > cap)
                cap *= 2;
            char *grown = realloc(text, cap);
            if (!grown) {
                free(piece);
                free(text);
                free(at);
                return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory for the answer");
            }
            text = grown;
        }
        if (n)
            memcpy(text + len, gap ? GAP_TEXT : piece, n);
        len += n;
        after_gap = gap || (after_gap && n == 0);
        free(piece);
        i = j;
    }
    text[len] = '\0';
    *out = text;
    *gaps = at;
    *n_gaps = n_gap;
    return DLLM_OK;
}

/*
 * Reports the answer: the committed ids before the first end-of-generation token (a cancelled
 * run may have left masks among them; they are left out), gathered in s->rows, its text with
 * the gaps marked, and the messages dropped to fit the canvas.
 */
static void finish(struct dllm_session *s, int64_t canvas_len, int64_t n_prompt, int64_t dropped,
                   int64_t steps_run, const struct dllm_sampler_result *last, bool cancelled,
                   double t0)
{
    int64_t n = 0, end = n_prompt;
    for (; end < canvas_len && !dllm_vocab_is_eog(s->vocab, s->canvas[end]); end++)
        if (s->canvas[end] != s->mask_id)
            s->rows[n++] = s->canvas[end];
    char *text = NULL;
    size_t *gaps = NULL, n_gaps = 0;
    struct dllm_error err;
    if (answer_text(s, n_prompt, end, &text, &gaps, &n_gaps, &err)) {
        emit_error(s, err.text);
        return;
    }
    struct dllm_event ev = {
        .kind = DLLM_EVENT_DONE,
        .canvas = s->canvas,
        .canvas_len = canvas_len,
        .n_prompt = n_prompt,
        .masks_left = last ? last->masks_left : canvas_len - n_prompt,
        .text = text,
        .text_before_gap = n_gaps ? gaps[0] : strlen(text),
        .gaps = gaps,
        .n_gaps = (int64_t)n_gaps,
        .tokens = s->rows,
        .n_tokens = n,
        .steps_run = steps_run,
        .stopped_early = last && last->stopped_early,
        .cancelled = cancelled,
        .total_ms = dllm_clock_ms() - t0,
        .dropped_messages = dropped,
    };
    emit(s, &ev);
    free(text);
    free(gaps);
}

/* Runs the request in s->req to its DONE or ERROR event. */
static void run_request(struct dllm_session *s)
{
    double t0 = dllm_clock_ms();
    struct dllm_error err;
    const struct dllm_sampler_params *p = &s->req.sampler;
    int64_t n_prompt = 0, dropped = 0;
    if (encode_prompt(s, &n_prompt, &dropped, &err)) {
        emit_error(s, err.text);
        return;
    }
    int64_t canvas_len = n_prompt + p->gen_length;
    for (int64_t i = n_prompt; i < canvas_len; i++)
        s->canvas[i] = s->mask_id;
    if (dllm_sampler_start(s->sampler, p, n_prompt, s->mask_id, s->eog, s->n_eog, s->canvas,
                           &err)) {
        emit_error(s, err.text);
        return;
    }
    int64_t cache_bytes;
    if (new_caches(s, canvas_len, &cache_bytes, &err)) {
        emit_error(s, err.text);
        return;
    }
    const struct dllm_sampler_plan *plan = dllm_sampler_get_plan(s->sampler);
    int64_t n_steps = plan->steps_per_block * plan->n_blocks;
    struct dllm_event ev = {.kind = DLLM_EVENT_START,
                            .canvas = s->canvas,
                            .canvas_len = canvas_len,
                            .n_prompt = n_prompt,
                            .n_steps = n_steps,
                            .n_blocks = plan->n_blocks,
                            .masks_left = p->gen_length,
                            .dropped_messages = dropped,
                            .cache_bytes = cache_bytes};
    emit(s, &ev);
    if (dropped) {
        char note[160];
        snprintf(note, sizeof note,
                 "dropped the %lld oldest message%s so the conversation fits the canvas",
                 (long long)dropped, dropped == 1 ? "" : "s");
        struct dllm_event nv = {
            .kind = DLLM_EVENT_NOTICE, .message = note, .dropped_messages = dropped};
        emit(s, &nv);
    }
    struct dllm_sampler_result res = {0};
    bool have_res = false;
    int64_t steps = 0;
    while (!have_res || !res.done) {
        mirror_cancel(s);
        if (atomic_load(&s->cancel))
            break;
        const int32_t *pos;
        int64_t n_rows;
        double t_fwd = dllm_clock_ms();
        int64_t refreshes = 0, computed = 0, rows_out = 0;
        bool on_rows = true;
        s->check = (struct dllm_event){0};
        enum dllm_status st = dllm_sampler_next(s->sampler, s->canvas, &pos, &n_rows, &err);
        if (!st && n_rows > 0)
            st = step_logits(s, canvas_len, n_prompt, pos, n_rows, &on_rows, &refreshes, &computed,
                             &rows_out, &err);
        if (st == DLLM_ERR_CANCELLED)
            break; /* the canvas is the last finished step's */
        if (st) {
            emit_error(s, err.text);
            return;
        }
        double t_sample = dllm_clock_ms();
        st = on_rows
                 ? dllm_sampler_step(s->sampler, s->pool, s->canvas, n_rows ? s->logits : NULL,
                                     &res, &err)
                 : dllm_sampler_step_stats(s->sampler, s->pool, s->canvas, s->stats, &res, &err);
        if (st) {
            emit_error(s, err.text);
            return;
        }
        have_res = true;
        steps++;
        struct dllm_event sv = {.kind = DLLM_EVENT_STEP,
                                .canvas = s->canvas,
                                .canvas_len = canvas_len,
                                .n_prompt = n_prompt,
                                .n_steps = n_steps,
                                .n_blocks = plan->n_blocks,
                                .step = res.step,
                                .block = res.block,
                                .committed = res.committed,
                                .n_committed = res.n_committed,
                                .has_best_left = res.has_best_left,
                                .best_left_conf = res.best_left_conf,
                                .masks_left = res.masks_left,
                                .forward_ms = t_sample - t_fwd - s->check.check_ms,
                                .sample_ms = dllm_clock_ms() - t_sample,
                                .refreshes = refreshes,
                                .computed = computed,
                                .rows_out = rows_out,
                                .checked = s->check.checked,
                                .check_cos_min = s->check.check_cos_min,
                                .check_rel_max = s->check.check_rel_max,
                                .check_ms = s->check.check_ms,
                                .check_argmax_same = s->check.check_argmax_same,
                                .check_rows = s->check.check_rows};
        emit(s, &sv);
    }
    finish(s, canvas_len, n_prompt, dropped, steps, have_res ? &res : NULL, atomic_load(&s->cancel),
           t0);
}

static void *worker(void *arg)
{
    struct dllm_session *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->quit && !(s->busy && s->req.fn))
            pthread_cond_wait(&s->cond, &s->lock);
        if (s->quit)
            break;
        pthread_mutex_unlock(&s->lock);
        run_request(s);
        free_caches(s);
        pthread_mutex_lock(&s->lock);
        free_request(&s->req);
        s->busy = false;
        s->finishing = false;
        pthread_cond_broadcast(&s->cond);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* Frees what a session owns besides its thread and locks, and the session itself. */
static void free_buffers(struct dllm_session *s)
{
    dllm_sampler_free(s->sampler);
    dllm_forward_free(s->fwd);
    dllm_threadpool_free(s->pool);
    dllm_chat_template_free(s->tmpl);
    dllm_vocab_free(s->vocab);
    free(s->canvas);
    free(s->uncond);
    free(s->rows);
    free(s->logits);
    free(s->stats);
    free(s->logits_un);
    free(s->logits_check);
    free(s);
}

enum dllm_status dllm_session_new(const struct dllm_model *model,
                                  const struct dllm_session_params *params,
                                  struct dllm_session **out, struct dllm_error *err)
{
    *out = NULL;
    struct dllm_session_params defaults;
    if (!params) {
        dllm_session_params_init(&defaults);
        params = &defaults;
    }
    int64_t n_ctx = dllm_model_n_ctx(model);
    int64_t max_canvas = params->max_canvas                ? params->max_canvas
                         : n_ctx < DLLM_MAX_CANVAS_DEFAULT ? n_ctx
                                                           : DLLM_MAX_CANVAS_DEFAULT;
    if (max_canvas < 2 || max_canvas > n_ctx)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "a canvas of %lld tokens does not fit the model's context of %lld",
                              (long long)max_canvas, (long long)n_ctx);
    const int64_t max_rows = params->max_rows ? params->max_rows : max_canvas;
    if (max_rows < 1 || max_rows > max_canvas)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "%lld logits rows a pass for a canvas of %lld: ask for 1 to %lld",
                              (long long)max_rows, (long long)max_canvas, (long long)max_canvas);
    struct dllm_session *s = calloc(1, sizeof *s);
    if (!s)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    s->model = model;
    s->max_canvas = max_canvas;
    s->max_rows = max_rows;
    s->n_vocab = dllm_model_n_vocab(model);
    s->mask_id = dllm_model_mask_id(model);
    atomic_init(&s->cancel, false);
    enum dllm_status st;
    if ((st = dllm_vocab_load(dllm_model_gguf(model), &s->vocab, err)))
        goto fail;
    /* A file without a usable template still serves raw prompts; memory running out fails. */
    struct dllm_error terr;
    if ((st = dllm_chat_template_load(dllm_model_gguf(model), s->vocab, &s->tmpl, &terr))) {
        if (st == DLLM_ERR_NOMEM) {
            *err = terr;
            goto fail;
        }
        snprintf(s->tmpl_error, sizeof s->tmpl_error, "%s", terr.text);
        st = DLLM_OK;
    }
    for (int32_t id = 0; id < dllm_vocab_size(s->vocab) && s->n_eog < DLLM_SAMPLER_MAX_EOG; id++)
        if (dllm_vocab_is_eog(s->vocab, id))
            s->eog[s->n_eog++] = id;
    s->progress = params->progress;
    s->progress_user = params->progress_user;
    s->skip_memory_check = params->skip_memory_check;
    struct dllm_forward_params fp;
    dllm_forward_params_init(&fp);
    fp.max_tokens = max_canvas;
    fp.max_rows = max_rows;
    fp.kernels = params->kernels;
    fp.backend = params->backend;
    fp.device = params->device;
    fp.gpu_resident = params->gpu_resident;
    fp.skip_memory_check = params->skip_memory_check;
    fp.progress = on_progress;
    fp.progress_user = s;
    fp.cancel = params->cancel;
    if ((st = dllm_threadpool_new(params->threads, &s->pool, err)) ||
        (fp.pool = s->pool, st = dllm_forward_new(model, &fp, &s->fwd, err)) ||
        (st = dllm_sampler_new(max_canvas, s->n_vocab, dllm_threadpool_size(s->pool),
                               params->kernels, &s->sampler, err)))
        goto fail;
    s->canvas = malloc((size_t)max_canvas * sizeof *s->canvas);
    s->uncond = malloc((size_t)max_canvas * sizeof *s->uncond);
    s->rows = malloc((size_t)max_canvas * sizeof *s->rows);
    s->stats = malloc((size_t)max_canvas * sizeof *s->stats);
    if (!s->canvas || !s->uncond || !s->rows || !s->stats) {
        st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    if (pthread_create(&s->thread, NULL, worker, s) != 0) {
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->cond);
        st = dllm_error_set(err, DLLM_ERR_NOMEM, "cannot start the session's worker thread");
        goto fail;
    }
    *out = s;
    return DLLM_OK;
fail:
    free_buffers(s);
    return st;
}

void dllm_session_free(struct dllm_session *s)
{
    if (!s)
        return;
    dllm_session_cancel(s);
    pthread_mutex_lock(&s->lock);
    s->quit = true;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    free_request(&s->req);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free_buffers(s);
}

/* Copies the caller's request; false when out of memory. */
static bool copy_request(struct owned_request *dst, const struct dllm_request *src)
{
    memset(dst, 0, sizeof *dst);
    dst->sampler = src->sampler;
    dst->cancel = src->cancel;
    dst->check_cache = src->check_cache;
    if (src->raw_prompt)
        return (dst->raw_prompt = strdup(src->raw_prompt)) != NULL;
    dst->messages = calloc(src->n_messages, sizeof *dst->messages);
    if (!dst->messages)
        return false;
    dst->n_messages = src->n_messages;
    for (size_t i = 0; i < src->n_messages; i++) {
        dst->messages[i].role = strdup(src->messages[i].role);
        dst->messages[i].content = strdup(src->messages[i].content);
        if (!dst->messages[i].role || !dst->messages[i].content)
            return false;
    }
    return true;
}

enum dllm_status dllm_session_generate(struct dllm_session *s, const struct dllm_request *request,
                                       dllm_event_fn fn, void *user, struct dllm_error *err)
{
    const struct dllm_sampler_params *p = &request->sampler;
    enum dllm_status st = dllm_sampler_params_check(p, err);
    if (st)
        return st;
    if (!request->raw_prompt && (!request->messages || request->n_messages == 0))
        return dllm_error_set(err, DLLM_ERR_ARG, "the request has no prompt");
    if (!request->raw_prompt && !s->tmpl)
        return dllm_error_set(err, DLLM_ERR_ARG, "%s; a raw_prompt request needs no template",
                              s->tmpl_error);
    if (p->gen_length >= s->max_canvas)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "%lld tokens to generate do not fit the canvas limit of %lld",
                              (long long)p->gen_length, (long long)s->max_canvas);
    /* From the worker's own callback the wait below would never end. */
    if (pthread_equal(pthread_self(), s->thread))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "a request was started from inside the session's own event "
                              "callback: start it after dllm_session_wait, from another thread");
    int64_t rows = p->block_length ? p->block_length : p->gen_length;
    if (rows > s->max_rows)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "a block of %lld tokens needs as many logits rows a pass; the "
                              "session was made for %lld (dllm_session_params.max_rows)",
                              (long long)rows, (long long)s->max_rows);
    pthread_mutex_lock(&s->lock);
    while (s->busy && s->finishing)
        pthread_cond_wait(&s->cond, &s->lock);
    if (s->busy) {
        pthread_mutex_unlock(&s->lock);
        return dllm_error_set(err, DLLM_ERR_ARG, "the session is already generating");
    }
    if ((st = reserve_rows(s, rows, err)) ||
        (request->check_cache && (st = reserve_check(s, rows, err)))) {
        pthread_mutex_unlock(&s->lock);
        return st;
    }
    if (!copy_request(&s->req, request)) {
        free_request(&s->req);
        pthread_mutex_unlock(&s->lock);
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    }
    s->req.fn = fn;
    s->req.user = user;
    atomic_store(&s->cancel, false);
    s->busy = true;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    return DLLM_OK;
}

void dllm_session_cancel(struct dllm_session *s)
{
    atomic_store(&s->cancel, true);
}

void dllm_session_wait(struct dllm_session *s)
{
    pthread_mutex_lock(&s->lock);
    while (s->busy)
        pthread_cond_wait(&s->cond, &s->lock);
    pthread_mutex_unlock(&s->lock);
}
