/*
 * Generation sessions: whole generations on the fixture models, events, cancel, multi-turn;
 * and whole runs of the sampler on the rows' statistics against runs on the rows.
 */
#include "config.h"

#include "dllm.h"
#include "fixtures.h"
#include "gguf_edit.h"
#include "kernels/cpu.h"
#include "sampler.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Everything a test wants to know of a request's events. */
struct record {
    int n_start, n_step, n_done, n_error, n_notice;
    int64_t n_prompt, canvas_len, n_steps, last_masks_left, committed_total;
    bool masks_monotonic;
    int cancel_at_step;       /* cancel when this step arrives; -1 never */
    atomic_bool *cancel_flag; /* set it then (the request's flag); NULL: dllm_session_cancel */
    struct dllm_session *session;
    int32_t step_canvas[4096]; /* the canvas of the last STEP event */
    int64_t refreshes, refresh_steps, cache_bytes;
    int64_t rows_out, rows_out_steps; /* logits rows copied out, and the steps that copied any */
    int64_t computed[256];            /* per step */
    int64_t step_block[256];
    int32_t tokens[4096];
    int64_t n_tokens;
    int32_t canvas[4096];
    char text[8192];
    size_t text_before_gap;
    size_t gaps[64];
    int64_t n_gaps;
    char message[512];
    bool stopped_early, cancelled;
    int64_t steps_run, masks_left_done, dropped, dropped_done;
    int32_t mask_id;
};

static void on_event(const struct dllm_event *ev, void *user)
{
    struct record *r = user;
    switch (ev->kind) {
    case DLLM_EVENT_START:
        r->n_start++;
        r->n_prompt = ev->n_prompt;
        r->canvas_len = ev->canvas_len;
        r->n_steps = ev->n_steps;
        r->last_masks_left = ev->masks_left;
        r->dropped = ev->dropped_messages;
        r->cache_bytes = ev->cache_bytes;
        break;
    case DLLM_EVENT_STEP:
        r->n_step++;
        r->committed_total += ev->n_committed;
        if (ev->masks_left > r->last_masks_left)
            r->masks_monotonic = false;
        r->last_masks_left = ev->masks_left;
        for (int64_t i = 0; i < ev->n_committed; i++)
            if (ev->canvas[ev->committed[i].pos] != ev->committed[i].token)
                r->masks_monotonic = false;
        memcpy(r->step_canvas, ev->canvas, (size_t)ev->canvas_len * sizeof *r->step_canvas);
        r->refreshes += ev->refreshes;
        r->refresh_steps += ev->refreshes > 0;
        r->rows_out += ev->rows_out;
        r->rows_out_steps += ev->rows_out > 0;
        if (ev->step < 256) {
            r->computed[ev->step] = ev->computed;
            r->step_block[ev->step] = ev->block;
        }
        if (ev->step == r->cancel_at_step) {
            if (r->cancel_flag)
                atomic_store(r->cancel_flag, true);
            else
                dllm_session_cancel(r->session);
        }
        break;
    case DLLM_EVENT_DONE:
        r->dropped_done = ev->dropped_messages;
        r->n_done++;
        r->n_tokens = ev->n_tokens;
        memcpy(r->tokens, ev->tokens, (size_t)ev->n_tokens * sizeof *r->tokens);
        memcpy(r->canvas, ev->canvas, (size_t)ev->canvas_len * sizeof *r->canvas);
        snprintf(r->text, sizeof r->text, "%s", ev->text);
        r->text_before_gap = ev->text_before_gap;
        r->n_gaps = ev->n_gaps;
        for (int64_t i = 0; i < ev->n_gaps && i < 64; i++)
            r->gaps[i] = ev->gaps[i];
        r->stopped_early = ev->stopped_early;
        r->cancelled = ev->cancelled;
        r->steps_run = ev->steps_run;
        r->masks_left_done = ev->masks_left;
        break;
    case DLLM_EVENT_ERROR:
        r->n_error++;
        snprintf(r->message, sizeof r->message, "%s", ev->message);
        break;
    case DLLM_EVENT_NOTICE:
        r->n_notice++;
        snprintf(r->message, sizeof r->message, "%s", ev->message);
        break;
    }
}

struct fixture {
    struct dllm_model *model;
    struct dllm_session *session;
};

static struct fixture open_session_threads(const char *rel, int64_t max_canvas, int threads)
{
    struct fixture f;
    struct dllm_error err;
    char *path = fixture_path(rel);
    ck_assert_msg(dllm_model_open(path, NULL, &f.model, &err) == DLLM_OK, "%s", err.text);
    free(path);
    struct dllm_session_params sp;
    dllm_session_params_init(&sp);
    sp.max_canvas = max_canvas;
    sp.threads = threads;
    ck_assert_msg(dllm_session_new(f.model, &sp, &f.session, &err) == DLLM_OK, "%s", err.text);
    return f;
}

static struct fixture open_session(const char *rel, int64_t max_canvas)
{
    return open_session_threads(rel, max_canvas, 1);
}

static void close_session(struct fixture *f)
{
    dllm_session_free(f->session);
    dllm_model_close(f->model);
}

/* Runs one request to completion and returns what its events said. */
static void generate(struct fixture *f, const struct dllm_request *req, struct record *r)
{
    int cancel_at = r->cancel_at_step;
    atomic_bool *flag = r->cancel_flag;
    memset(r, 0, sizeof *r);
    r->masks_monotonic = true;
    r->cancel_at_step = cancel_at ? cancel_at : -1;
    r->cancel_flag = flag;
    r->session = f->session;
    r->mask_id = dllm_model_mask_id(f->model);
    struct dllm_error err;
    ck_assert_msg(dllm_session_generate(f->session, req, on_event, r, &err) == DLLM_OK, "%s",
                  err.text);
    dllm_session_wait(f->session);
}

static struct dllm_request user_request(enum dllm_sampler_kind kind, const char *prompt,
                                        struct dllm_chat_message *msg)
{
    struct dllm_request req = {0};
    msg->role = "user";
    msg->content = prompt;
    req.messages = msg;
    req.n_messages = 1;
    dllm_sampler_params_init(&req.sampler, kind);
    req.sampler.gen_length = 32;
    req.sampler.steps = 16;
    req.sampler.block_length = 8;
    return req;
}

/* The dense fixtures, then the MoE ones; odd indices run the (shifted) Dream sampler. */
static const char *const models[] = {"models/llada-tiny-q4km.gguf", "models/dream-tiny-q4km.gguf",
                                     "models/llada-moe-tiny-q4km.gguf",
                                     "models/rnd1-tiny-q4km.gguf"};

/* The same seed and settings give the same answer; the event stream is consistent. */
START_TEST(generate_deterministic)
{
    struct fixture f = open_session(models[_i], 256);
    enum dllm_sampler_kind kind = _i % 2 == 0 ? DLLM_SAMPLER_LLADA : DLLM_SAMPLER_DREAM;
    struct dllm_chat_message msg;
    struct dllm_request req = user_request(kind, "Hello there, how are you?", &msg);
    req.sampler.temperature = 0.7;
    req.sampler.seed = 1234;
    req.sampler.early_stop = false;
    static struct record a, b;
    generate(&f, &req, &a);
    generate(&f, &req, &b);
    ck_assert_int_eq(a.n_error, 0);
    ck_assert_int_eq(a.n_start, 1);
    ck_assert_int_eq(a.n_done, 1);
    ck_assert_int_eq(a.n_step, 16);
    ck_assert_int_eq(a.steps_run, 16);
    ck_assert_int_eq(a.canvas_len, a.n_prompt + 32);
    ck_assert(a.masks_monotonic);
    ck_assert_int_eq(a.committed_total, 32);
    ck_assert_int_eq(a.masks_left_done, 0);
    ck_assert(!a.cancelled);
    for (int64_t i = a.n_prompt; i < a.canvas_len; i++)
        ck_assert_int_ne(a.canvas[i], a.mask_id);
    ck_assert_int_eq(a.n_tokens, b.n_tokens);
    ck_assert(memcmp(a.canvas, b.canvas, (size_t)a.canvas_len * sizeof(int32_t)) == 0);
    ck_assert_str_eq(a.text, b.text);
    ck_assert_uint_eq(a.text_before_gap, strlen(a.text)); /* a finished answer has no gap */
    /* Two threads give the same tokens as one. */
    struct fixture f2 = open_session_threads(models[_i], 256, 2);
    generate(&f2, &req, &b);
    ck_assert(memcmp(a.canvas, b.canvas, (size_t)a.canvas_len * sizeof(int32_t)) == 0);
    close_session(&f2);
    /* Another seed changes the sampled canvas. */
    req.sampler.seed = 99;
    generate(&f, &req, &b);
    ck_assert(memcmp(a.canvas, b.canvas, (size_t)a.canvas_len * sizeof(int32_t)) != 0);
    close_session(&f);
}
END_TEST

/* dllm_session_cancel from the callback stops the run and keeps the partial canvas. */
START_TEST(generate_cancel)
{
    struct fixture f = open_session(models[0], 256);
    struct dllm_chat_message msg;
    struct dllm_request req = user_request(DLLM_SAMPLER_LLADA, "Count to ten.", &msg);
    req.sampler.early_stop = false;
    static struct record r;
    r.cancel_at_step = 2;
    generate(&f, &req, &r);
    ck_assert_int_eq(r.n_done, 1);
    ck_assert(r.cancelled);
    ck_assert_int_eq(r.steps_run, 3);
    ck_assert_int_eq(r.masks_left_done, 32 - r.committed_total);
    ck_assert_int_gt(r.masks_left_done, 0);
    /*
     * The masks left show as gaps in the text (far-apart tokens were glued together), the ids
     * stay those committed, and text_before_gap ends where the first gap starts.
     */
    const char *gap = strstr(r.text, " \u2026 ");
    ck_assert_msg(gap != NULL, "no gap in '%s'", r.text);
    ck_assert_uint_eq(r.text_before_gap, (size_t)(gap - r.text));
    ck_assert_int_le(r.n_tokens, r.committed_total);
    /* gaps gives each gap's offset: each mark of the text, in order, and nothing else. */
    ck_assert_int_gt(r.n_gaps, 0);
    ck_assert_int_le(r.n_gaps, 64);
    ck_assert_uint_eq(r.gaps[0], r.text_before_gap);
    int64_t k = 0;
    for (const char *p = r.text; (p = strstr(p, " \u2026 ")) != NULL; p += strlen(" \u2026 "))
        ck_assert_uint_eq(r.gaps[k++], (size_t)(p - r.text));
    ck_assert_int_eq(k, r.n_gaps);
    close_session(&f);
}
END_TEST

/*
 * The request's own cancel flag, set as step 2 is reported, ends the run with the canvas of
 * that step; the next request on the session, without the flag set, gives the tokens a fresh
 * session gives.
 */
START_TEST(generate_cancel_flag)
{
    struct fixture f = open_session(models[_i], 256);
    struct dllm_chat_message msg;
    struct dllm_request req =
        user_request(_i == 0 ? DLLM_SAMPLER_LLADA : DLLM_SAMPLER_DREAM, "Count to ten.", &msg);
    req.sampler.early_stop = false;
    atomic_bool flag = false;
    req.cancel = &flag;
    static struct record r, again, fresh;
    r.cancel_at_step = 2;
    r.cancel_flag = &flag;
    generate(&f, &req, &r);
    ck_assert_int_eq(r.n_done, 1);
    ck_assert(r.cancelled);
    ck_assert_int_eq(r.steps_run, 3);
    ck_assert_mem_eq(r.canvas, r.step_canvas, (size_t)r.canvas_len * sizeof *r.canvas);
    atomic_store(&flag, false);
    generate(&f, &req, &again);
    ck_assert(!again.cancelled);
    struct fixture g = open_session(models[_i], 256);
    generate(&g, &req, &fresh);
    ck_assert_int_eq(again.n_tokens, fresh.n_tokens);
    ck_assert_mem_eq(again.canvas, fresh.canvas, (size_t)fresh.canvas_len * sizeof *fresh.canvas);
    close_session(&g);
    close_session(&f);
}
END_TEST

/*
 * The K/V cache modes over whole runs: each block's first step refreshes (two passes with
 * CFG), the later ones compute the block (dual) or the block and everything after it (prefix),
 * from one slot earlier for Dream; with a threshold every block fills; the cache's bytes are
 * reported, as dllm_request_cache_bytes predicts them; a second request on the session gives the
 * tokens of a fresh session.
 */
START_TEST(generate_cache)
{
    const bool dream = _i % 2, prefix = _i / 2 % 2, cfg = _i / 4 % 2;
    const int model = dream + 2 * (_i / 8); /* dense, then MoE */
    struct fixture f = open_session(models[model], 256);
    struct dllm_chat_message msg;
    struct dllm_request req =
        user_request(dream ? DLLM_SAMPLER_DREAM : DLLM_SAMPLER_LLADA, "Count to ten.", &msg);
    req.sampler.early_stop = false;
    req.sampler.cache = prefix ? DLLM_CACHE_PREFIX : DLLM_CACHE_DUAL;
    req.sampler.cfg_scale = cfg ? 1.5 : 0;
    static struct record r, again, fresh;
    generate(&f, &req, &r);
    ck_assert_msg(r.n_error == 0, "%s", r.message);
    ck_assert_int_eq(r.n_done, 1);
    ck_assert_int_eq(r.masks_left_done, 0);
    ck_assert_int_eq(r.refresh_steps, 4); /* 32 tokens in blocks of 8 */
    ck_assert_int_eq(r.refreshes, cfg ? 8 : 4);
    ck_assert_int_gt(r.cache_bytes, 0);
    /* what a program choosing a device counts before the request is what the request took */
    ck_assert_int_eq(r.cache_bytes,
                     (int64_t)dllm_request_cache_bytes(f.model, r.canvas_len, &req.sampler));
    const int64_t passes = cfg ? 2 : 1;
    for (int64_t step = 0; step < r.steps_run; step++) {
        const int64_t b0 = r.n_prompt + 8 * r.step_block[step] - (dream ? 1 : 0);
        const int64_t want = step % 4 == 0 ? r.canvas_len : prefix ? r.canvas_len - b0 : 8 + dream;
        ck_assert_msg(r.computed[step] == passes * want, "step %lld computed %lld, not %lld",
                      (long long)step, (long long)r.computed[step], (long long)(passes * want));
    }
    generate(&f, &req, &again);
    struct fixture g = open_session(models[model], 256);
    generate(&g, &req, &fresh);
    ck_assert_int_eq(again.n_tokens, fresh.n_tokens);
    ck_assert_mem_eq(again.canvas, fresh.canvas, (size_t)fresh.canvas_len * sizeof *fresh.canvas);
    /* With a threshold, blocks run until full: each still refreshes once. */
    req.sampler.threshold = 0.9;
    req.sampler.cfg_scale = 0;
    if (dream)
        req.sampler.alg = DLLM_ALG_MASKGIT_PLUS;
    generate(&f, &req, &r);
    ck_assert_int_eq(r.masks_left_done, 0);
    ck_assert_int_eq(r.refresh_steps, 4);
    close_session(&g);
    close_session(&f);
}
END_TEST

/* What a callback that starts another request from inside the session saw. */
struct nested {
    struct dllm_session *session;
    const struct dllm_request *req;
    enum dllm_status at_start, at_step, at_done;
    int steps;
};

static void start_from_callback(const struct dllm_event *ev, void *user)
{
    struct nested *n = user;
    enum dllm_status *slot = ev->kind == DLLM_EVENT_START                     ? &n->at_start
                             : ev->kind == DLLM_EVENT_DONE                    ? &n->at_done
                             : ev->kind == DLLM_EVENT_STEP && n->steps++ == 0 ? &n->at_step
                                                                              : NULL;
    if (slot)
        *slot = dllm_session_generate(n->session, n->req, start_from_callback, n, NULL);
}

/*
 * dllm_session_generate from inside the session's own START, STEP or DONE callback is
 * refused (from DONE it waited on its own worker for ever); the session stays usable.
 */
START_TEST(generate_from_callback)
{
    struct fixture f = open_session(models[0], 256);
    struct dllm_chat_message msg;
    struct dllm_request req = user_request(DLLM_SAMPLER_LLADA, "hi", &msg);
    struct nested n = {.session = f.session, .req = &req, .at_start = DLLM_OK};
    struct dllm_error err;
    ck_assert(dllm_session_generate(f.session, &req, start_from_callback, &n, &err) == DLLM_OK);
    dllm_session_wait(f.session);
    ck_assert_int_eq(n.at_start, DLLM_ERR_ARG);
    ck_assert_int_eq(n.at_step, DLLM_ERR_ARG);
    ck_assert_int_eq(n.at_done, DLLM_ERR_ARG);
    static struct record r;
    generate(&f, &req, &r);
    ck_assert_int_eq(r.n_done, 1);
    close_session(&f);
}
END_TEST

/* A multi-turn conversation renders and runs; one that is too long drops its oldest turns. */
START_TEST(generate_multi_turn)
{
    struct fixture f = open_session(models[1], 1024);
    struct dllm_chat_message conv[5] = {
        {"system", "Be brief."},
        {"user", "The first question is long: tell me everything about the colour of the sky."},
        {"assistant", "Blue, mostly, because short wavelengths scatter more than long ones."},
        {"user", "And at sunset?"},
    };
    struct dllm_request req = {0};
    dllm_sampler_params_init(&req.sampler, DLLM_SAMPLER_DREAM);
    req.sampler.gen_length = 32;
    req.sampler.steps = 8;
    req.messages = conv;
    req.n_messages = 4;
    static struct record r;
    generate(&f, &req, &r);
    ck_assert_msg(r.n_error == 0, "%s", r.message);
    ck_assert_int_eq(r.n_done, 1);
    ck_assert_int_eq(r.dropped, 0);
    int64_t full = r.n_prompt;

    /* A canvas limit just below the full conversation drops the first exchange. */
    close_session(&f);
    f = open_session(models[1], full + 32 - 1);
    generate(&f, &req, &r);
    ck_assert_msg(r.n_error == 0, "%s", r.message);
    ck_assert_int_eq(r.dropped, 2);
    ck_assert_int_eq(r.dropped_done, 2); /* DONE carries the count as dllm.h says (it was 0) */
    ck_assert_int_eq(r.n_notice, 1);
    ck_assert(strstr(r.message, "dropped the 2 oldest messages"));
    ck_assert_int_lt(r.n_prompt, full);

    /* A single message that cannot fit is an error event. */
    char big[4000];
    memset(big, 'a', sizeof big - 1);
    for (size_t i = 0; i + 1 < sizeof big; i += 2)
        big[i] = ' ';
    big[sizeof big - 1] = 0;
    struct dllm_chat_message one = {"user", big};
    req.messages = &one;
    req.n_messages = 1;
    generate(&f, &req, &r);
    ck_assert_int_eq(r.n_error, 1);
    ck_assert(strstr(r.message, "shorten the prompt or generate fewer tokens"));
    close_session(&f);
}
END_TEST

/* Requests that cannot run are refused before anything starts. */
START_TEST(generate_refused)
{
    struct fixture f = open_session(models[0], 64);
    struct dllm_chat_message msg;
    struct dllm_request req = user_request(DLLM_SAMPLER_LLADA, "hi", &msg);
    struct dllm_error err;
    req.sampler.gen_length = 64;
    req.sampler.block_length = 0;
    ck_assert_int_eq(dllm_session_generate(f.session, &req, on_event, NULL, &err), DLLM_ERR_ARG);
    ck_assert(strstr(err.text, "canvas limit of 64"));
    req = user_request(DLLM_SAMPLER_LLADA, "hi", &msg);
    req.sampler.steps = 15;
    ck_assert_int_eq(dllm_session_generate(f.session, &req, on_event, NULL, &err), DLLM_ERR_ARG);
    req.n_messages = 0;
    req.sampler.steps = 16;
    ck_assert_int_eq(dllm_session_generate(f.session, &req, on_event, NULL, &err), DLLM_ERR_ARG);
    ck_assert_str_eq(err.text, "the request has no prompt");
    close_session(&f);
}
END_TEST

/* ---- runs on the rows' statistics --------------------------------------------------------- */

/* Every fixture model: the dense LLaDA quantizations, Dream (shifted rows), the MoE ones. */
/* The first TEST_N_REPRESENTATIVE (a dense and a MoE model) run in every build, the rest in the
 * sweep. */
static const char *const all_models[] = {"models/llada-tiny-q4km.gguf",
                                         "models/llada-moe-tiny-q4km.gguf",
                                         "models/llada-tiny-q80.gguf",
                                         "models/llada-tiny-q5km.gguf",
                                         "models/llada-tiny-q6k.gguf",
                                         "models/llada-tiny-f16.gguf",
                                         "models/llada-tiny-bf16.gguf",
                                         "models/dream-tiny-q4km.gguf",
                                         "models/dream-tiny-realvocab-q4km.gguf",
                                         "models/llada-moe-tiny-q80.gguf",
                                         "models/rnd1-tiny-q4km.gguf",
                                         "models/rnd1-tiny-q80.gguf"};

/* Settings whose steps take the rows' statistics: LLaDA at temperature 0. */
static const struct stats_case {
    enum dllm_remasking remasking;
    double threshold;
    int64_t block;
} stats_cases[] = {
    {DLLM_REMASKING_LOW_CONFIDENCE, 0.0, 8},
    {DLLM_REMASKING_RANDOM, 0.0, 0},
    {DLLM_REMASKING_LOW_CONFIDENCE, 0.02, 8}, /* random weights: confidences are small */
};

/*
 * An ordinary token of llada-tiny-q4km that generate_stats_fallback makes the mask id: after
 * FALLBACK_PROMPT, every masked row of the first pass ranks it first (found by a probe over
 * the vocabulary, not asserted).
 */
#define FALLBACK_MASK   1465
#define FALLBACK_PROMPT "abcdefghijklmnopqrstuvwxyz0123456789"

#define SPROMPT 7
#define SGEN    32

/* A whole run's canvas and commits. */
struct stats_run {
    int32_t canvas[SPROMPT + SGEN];
    struct dllm_commit commits[SGEN];
    int64_t n_commits, steps, row_steps; /* row_steps: stats runs' steps that needed the rows */
};

/*
 * Runs the sampler of case c to the end on model with the kernel variant `kernels`, driving
 * the forward pass as the session does (Dream-style models read row p - 1 for slot p): each
 * step on the logits rows (stats false), or on their statistics alone from a pass that copies
 * no row out (stats true; logits NULL), taking the rows only for a step whose statistics do
 * not suffice (a row whose argmax is the mask id).
 */
static void stats_run(const struct dllm_model *model, const char *kernels,
                      const struct stats_case *c, bool stats, struct stats_run *out)
{
    const int64_t V = dllm_model_n_vocab(model), n = SPROMPT + SGEN;
    const int32_t mask = dllm_model_mask_id(model);
    const bool shift = dllm_model_shift_logits(model);
    struct dllm_error err = {0};
    struct dllm_threadpool *pool;
    struct dllm_forward *fwd;
    struct dllm_sampler *s;
    ck_assert(dllm_threadpool_new(2, &pool, &err) == DLLM_OK);
    struct dllm_forward_params fp;
    dllm_forward_params_init(&fp);
    fp.max_tokens = n;
    fp.max_rows = n;
    fp.pool = pool;
    fp.kernels = kernels;
    ck_assert_msg(dllm_forward_new(model, &fp, &fwd, &err) == DLLM_OK, "%s", err.text);
    ck_assert_msg(dllm_sampler_new(n, V, 2, kernels, &s, &err) == DLLM_OK, "%s", err.text);
    struct dllm_sampler_params p;
    dllm_sampler_params_init(&p, DLLM_SAMPLER_LLADA);
    p.gen_length = SGEN;
    p.steps = c->threshold ? 0 : 16;
    p.block_length = c->block;
    p.remasking = c->remasking;
    p.threshold = c->threshold;
    p.seed = 77;
    p.early_stop = false;
    ck_assert(dllm_sampler_takes_stats(&p));
    memset(out, 0, sizeof *out);
    for (int64_t i = 0; i < n; i++)
        out->canvas[i] = i < SPROMPT ? (int32_t)((i * 389 + 17) % V) : mask;
    ck_assert_msg(dllm_sampler_start(s, &p, SPROMPT, mask, NULL, 0, out->canvas, &err) == DLLM_OK,
                  "%s", err.text);
    float *logits = malloc((size_t)(SGEN * V) * sizeof *logits);
    static struct dllm_row_stats st[SGEN];
    int32_t rows[SGEN];
    struct dllm_sampler_result res;
    do {
        const int32_t *pos;
        int64_t n_rows;
        ck_assert(dllm_sampler_next(s, out->canvas, &pos, &n_rows, &err) == DLLM_OK);
        for (int64_t r = 0; r < n_rows; r++)
            rows[r] = shift && pos[r] > 0 ? pos[r] - 1 : pos[r];
        struct dllm_pass pass = {
            .ids = out->canvas, .n_tokens = n, .rows = rows, .n_rows = n_rows, .logits = logits};
        if (stats) {
            pass.logits = NULL;
            pass.stats = st;
        }
        ck_assert_msg(dllm_forward_run(fwd, &pass, &err) == DLLM_OK, "%s", err.text);
        bool on_stats = stats && dllm_sampler_stats_suffice(s, st);
        if (stats && !on_stats) {
            out->row_steps++;
            pass.logits = logits;
            pass.stats = NULL;
            ck_assert_msg(dllm_forward_run(fwd, &pass, &err) == DLLM_OK, "%s", err.text);
        }
        enum dllm_status ok = on_stats
                                  ? dllm_sampler_step_stats(s, pool, out->canvas, st, &res, &err)
                                  : dllm_sampler_step(s, pool, out->canvas, logits, &res, &err);
        ck_assert_msg(ok == DLLM_OK, "%s", err.text);
        for (int64_t k = 0; k < res.n_committed; k++)
            out->commits[out->n_commits++] = res.committed[k];
        ck_assert_int_lt(++out->steps, 100);
    } while (!res.done);
    free(logits);
    dllm_sampler_free(s);
    dllm_forward_free(fwd);
    dllm_threadpool_free(pool);
}

/*
 * Whole LLaDA runs at temperature 0 on the rows' statistics commit the tokens that runs on the
 * rows commit (the rows' confidences by the sampler's row arithmetic, the statistics' by
 * e^(max - lse)), step for step and in the same order, on every fixture model and every
 * kernel variant this CPU runs; the confidences agree to rounding.
 */
START_TEST(stats_same_tokens)
{
    char *path = fixture_path(all_models[_i]);
    struct dllm_model *model;
    struct dllm_error err;
    ck_assert_msg(dllm_model_open(path, NULL, &model, &err) == DLLM_OK, "%s", err.text);
    free(path);
    size_t n_variants;
    const struct dllm_kernels *variants = dllm_kernels_all(&n_variants);
    static struct stats_run on_rows, on_stats;
    int64_t row_steps = 0, runs = 0;
    for (size_t v = 0; v < n_variants; v++) {
        if (!dllm_kernels_usable(&variants[v])) {
            printf("SKIP: kernel variant %s: this CPU lacks its instructions\n", variants[v].name);
            continue;
        }
        for (size_t c = 0; c < sizeof stats_cases / sizeof stats_cases[0]; c++) {
            stats_run(model, variants[v].name, &stats_cases[c], false, &on_rows);
            stats_run(model, variants[v].name, &stats_cases[c], true, &on_stats);
            ck_assert_msg(on_rows.n_commits == SGEN && on_stats.n_commits == SGEN &&
                              on_rows.steps == on_stats.steps,
                          "%s, %s, case %zu: %lld/%lld steps", all_models[_i], variants[v].name, c,
                          (long long)on_rows.steps, (long long)on_stats.steps);
            ck_assert_msg(memcmp(on_rows.canvas, on_stats.canvas, sizeof on_rows.canvas) == 0,
                          "%s, %s, case %zu: the canvases differ", all_models[_i], variants[v].name,
                          c);
            for (int64_t k = 0; k < SGEN; k++) {
                const struct dllm_commit *a = &on_rows.commits[k], *b = &on_stats.commits[k];
                ck_assert_msg(a->pos == b->pos && a->token == b->token,
                              "%s, %s, case %zu: commit %lld differs", all_models[_i],
                              variants[v].name, c, (long long)k);
                ck_assert_double_eq_tol(a->conf, b->conf, 1e-12);
            }
            row_steps += on_stats.row_steps;
            runs++;
        }
    }
    printf("%s: %lld runs on the statistics the same as on the rows (%lld steps needed the "
           "rows: an argmax at the mask id)\n",
           all_models[_i], (long long)runs, (long long)row_steps);
    dllm_model_close(model);
}
END_TEST

/*
 * The session takes the statistics alone at LLaDA temperature 0 (no STEP copies a logits row
 * out, unless an argmax falls on the mask id) and gives the answer it gives on the rows (which
 * check_cache makes it read), without a cache and with each cache mode; a Dream request and a
 * sampled LLaDA one read the rows at every step.
 */
START_TEST(generate_stats)
{
    struct fixture f = open_session(models[_i], 256);
    struct dllm_chat_message msg;
    struct dllm_request req = user_request(DLLM_SAMPLER_LLADA, "Count to ten.", &msg);
    req.sampler.early_stop = false;
    static struct record a, b;
    for (int mode = DLLM_CACHE_NONE; mode <= DLLM_CACHE_DUAL; mode++) {
        req.sampler.cache = (enum dllm_cache_mode)mode;
        req.check_cache = false;
        generate(&f, &req, &a);
        ck_assert_msg(a.n_error == 0, "%s", a.message);
        ck_assert_int_eq(a.masks_left_done, 0);
        ck_assert_int_le(a.rows_out_steps, 1); /* a random model's mask id may win a row */
        req.check_cache = true;
        generate(&f, &req, &b);
        ck_assert_int_eq(b.rows_out_steps, b.n_step);
        ck_assert_int_gt(b.rows_out, 0);
        ck_assert_mem_eq(a.canvas, b.canvas, (size_t)a.canvas_len * sizeof *a.canvas);
    }
    req.sampler.cache = DLLM_CACHE_NONE;
    req.check_cache = false;
    req.sampler.temperature = 0.5;
    generate(&f, &req, &a);
    ck_assert_int_eq(a.rows_out_steps, a.n_step);
    dllm_sampler_params_init(&req.sampler, DLLM_SAMPLER_DREAM);
    req.sampler.gen_length = 32;
    req.sampler.steps = 16;
    req.sampler.temperature = 0;
    req.sampler.top_p = 1;
    generate(&f, &req, &a);
    ck_assert_int_eq(a.rows_out_steps, a.n_step);
    close_session(&f);
}
END_TEST

/*
 * A step whose statistics show the mask id as a row's argmax reads the rows (the session runs
 * the pass again for them): a copy of llada-tiny-q4km whose mask id is an ordinary token its
 * masked rows rank first falls back, without a cache and with the dual one, and answers as on
 * the rows.
 */
START_TEST(generate_stats_fallback)
{
    char *src = fixture_path("models/llada-tiny-q4km.gguf"), *dir = test_tmpdir();
    struct gguf_edit *e = gguf_edit_load(src);
    gguf_edit_set_u32(e, "tokenizer.ggml.mask_token_id", FALLBACK_MASK);
    char *path = gguf_edit_save(e, dir, "mask.gguf");
    gguf_edit_free(e);
    struct fixture f;
    struct dllm_error err;
    ck_assert_msg(dllm_model_open(path, NULL, &f.model, &err) == DLLM_OK, "%s", err.text);
    ck_assert_int_eq(dllm_model_mask_id(f.model), FALLBACK_MASK);
    struct dllm_session_params sp;
    dllm_session_params_init(&sp);
    sp.max_canvas = 256;
    ck_assert_msg(dllm_session_new(f.model, &sp, &f.session, &err) == DLLM_OK, "%s", err.text);
    struct dllm_chat_message msg;
    struct dllm_request req = user_request(DLLM_SAMPLER_LLADA, "unused", &msg);
    req.raw_prompt = FALLBACK_PROMPT;
    req.sampler.early_stop = false;
    static struct record a, b;
    for (int mode = DLLM_CACHE_NONE; mode <= DLLM_CACHE_DUAL; mode += 2) {
        req.sampler.cache = (enum dllm_cache_mode)mode;
        req.check_cache = false;
        generate(&f, &req, &a);
        ck_assert_msg(a.n_error == 0, "%s", a.message);
        printf("mask id %d, cache %s: %lld of %lld steps read the rows\n", FALLBACK_MASK,
               dllm_cache_mode_name(req.sampler.cache), (long long)a.rows_out_steps,
               (long long)a.n_step);
        ck_assert_int_gt(a.rows_out_steps, 0);
        req.check_cache = true;
        generate(&f, &req, &b);
        ck_assert_int_eq(b.rows_out_steps, b.n_step);
        ck_assert_mem_eq(a.canvas, b.canvas, (size_t)a.canvas_len * sizeof *a.canvas);
    }
    close_session(&f);
    unlink(path);
    rmdir(dir);
    free(path);
    free(dir);
    free(src);
}
END_TEST

/*
 * A session made for fewer logits rows than its canvas (max_rows) runs requests whose blocks
 * fit them and refuses a longer block before it starts, naming the limit; the limit itself
 * is checked against the canvas.
 */
START_TEST(generate_max_rows)
{
    struct fixture f;
    struct dllm_error err;
    char *path = fixture_path(models[0]);
    ck_assert_msg(dllm_model_open(path, NULL, &f.model, &err) == DLLM_OK, "%s", err.text);
    free(path);
    struct dllm_session_params sp;
    dllm_session_params_init(&sp);
    sp.max_canvas = 96;
    sp.max_rows = 97;
    sp.threads = 1;
    ck_assert_int_eq(dllm_session_new(f.model, &sp, &f.session, &err), DLLM_ERR_ARG);
    ck_assert_str_eq(err.text, "97 logits rows a pass for a canvas of 96: ask for 1 to 96");
    sp.max_rows = 8;
    ck_assert_msg(dllm_session_new(f.model, &sp, &f.session, &err) == DLLM_OK, "%s", err.text);
    struct dllm_chat_message msg;
    struct dllm_request req = user_request(DLLM_SAMPLER_LLADA, "hi", &msg);
    static struct record r;
    generate(&f, &req, &r);
    ck_assert_int_eq(r.n_error, 0);
    ck_assert_int_eq(r.n_done, 1);
    req.sampler.block_length = 16;
    ck_assert_int_eq(dllm_session_generate(f.session, &req, on_event, &r, &err), DLLM_ERR_ARG);
    ck_assert_str_eq(err.text, "a block of 16 tokens needs as many logits rows a pass; the "
                               "session was made for 8 (dllm_session_params.max_rows)");
    close_session(&f);
}
END_TEST

/* A raw prompt skips the chat template. */
START_TEST(generate_raw)
{
    struct fixture f = open_session(models[0], 128);
    struct dllm_chat_message msg;
    struct dllm_request req = user_request(DLLM_SAMPLER_LLADA, "unused", &msg);
    req.raw_prompt = "plain text";
    static struct record r, c;
    generate(&f, &req, &r);
    ck_assert_int_eq(r.n_done, 1);
    req.raw_prompt = NULL;
    generate(&f, &req, &c);
    ck_assert_int_lt(r.n_prompt, c.n_prompt);
    close_session(&f);
}
END_TEST

static Suite *session_suite(void)
{
    Suite *s = suite_create("session");
    TCase *tc = tcase_create("generate");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, generate_deterministic, 0, 4);
    tcase_add_test(tc, generate_from_callback);
    tcase_add_test(tc, generate_cancel);
    tcase_add_loop_test(tc, generate_cancel_flag, 0, 2);
    tcase_add_loop_test(tc, generate_cache, 0, 16);
    tcase_add_test(tc, generate_multi_turn);
    tcase_add_test(tc, generate_refused);
    tcase_add_test(tc, generate_raw);
    tcase_add_test(tc, generate_max_rows);
    tcase_add_loop_test(tc, generate_stats, 0, 4);
    tcase_add_test(tc, generate_stats_fallback);
    suite_add_tcase(s, tc);
    tc = tcase_create("stats");
    tcase_set_tags(tc, TEST_TAG_LONG);
    tcase_add_loop_test(tc, stats_same_tokens, 0, TEST_N_REPRESENTATIVE);
    suite_add_tcase(s, tc);
    tc = tcase_create("stats-sweep");
    tcase_set_tags(tc, TEST_TAG_SWEEP);
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, stats_same_tokens, TEST_N_REPRESENTATIVE,
                        sizeof all_models / sizeof all_models[0]);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    fixtures_dir();
    return test_run_suite(session_suite());
}
