/* A deterministic stand-in for dllm-tui's engine, for the screen tests. */
#include "config.h"

#include "ui_mock_engine.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct ui_engine {
    struct dllm_model *model; /* NULL: manual */
    struct dllm_vocab *vocab;
    struct ui_frame_slot *slot;
    int step_ms, hold_at;
    long context;
    atomic_bool cancel;
    pthread_t worker;
    bool worker_running;
    /* The generation being played. */
    struct dllm_sampler_params settings;
    int32_t *canvas; /* [n_prompt + gen] */
    int32_t *answer; /* [gen]: the final ids of the generation area */
    int32_t *order;  /* [gen]: positions in the order they commit */
    int64_t n_prompt, gen, n_tokens;
    int dropped;
    char *notice;
    struct mock_requests requests;
    const char *fail_next;
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int env_int(const char *name, int fallback)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : fallback;
}

struct ui_engine *mock_engine_manual(struct ui_frame_slot *slot)
{
    struct ui_engine *e = calloc(1, sizeof *e);
    if (e)
        e->slot = slot;
    return e;
}

const struct mock_requests *mock_engine_requests(const struct ui_engine *engine)
{
    return &engine->requests;
}

void mock_engine_fail_next(struct ui_engine *engine, const char *message)
{
    engine->fail_next = message;
}

enum dllm_status ui_engine_open(const struct ui_engine_params *params, struct ui_frame_slot *slot,
                                struct ui_engine **out, struct dllm_error *err)
{
    *out = NULL;
    struct ui_engine *e = calloc(1, sizeof *e);
    if (!e)
        return DLLM_ERR_NOMEM;
    e->slot = slot;
    e->step_ms = env_int("DLLM_MOCK_STEP_MS", 20);
    e->hold_at = env_int("DLLM_MOCK_HOLD_AT", 0);
    e->context = env_int("DLLM_MOCK_CONTEXT", 0);
    enum dllm_status st = dllm_model_open(params->model, NULL, &e->model, err);
    if (st == DLLM_OK)
        st = dllm_vocab_load(dllm_model_gguf(e->model), &e->vocab, err);
    if (st != DLLM_OK) {
        ui_engine_close(e);
        return st;
    }
    *out = e;
    return DLLM_OK;
}

void ui_engine_info(const struct ui_engine *e, struct ui_engine_info *info)
{
    *info = (struct ui_engine_info){.threads = 1, .n_ctx = 4096};
    snprintf(info->model, sizeof info->model, "mock");
    snprintf(info->quant, sizeof info->quant, "Q4_K_M");
    snprintf(info->device, sizeof info->device, "cpu");
    if (e->model) {
        snprintf(info->arch, sizeof info->arch, "%s", dllm_model_arch(e->model));
        info->n_ctx = dllm_model_n_ctx(e->model);
    }
}

const char *ui_engine_piece(void *engine, int32_t id, size_t *len)
{
    struct ui_engine *e = engine;
    if (!e->vocab || dllm_vocab_is_eog(e->vocab, id) ||
        dllm_vocab_token_type(e->vocab, id) == DLLM_TOKEN_TYPE_CONTROL)
        return NULL;
    return dllm_vocab_token_bytes(e->vocab, id, len);
}

/* Publishes one event to the slot. */
static void emit(struct ui_engine *e, struct dllm_event *ev)
{
    ev->canvas_len = e->n_prompt + e->gen;
    ev->n_prompt = e->n_prompt;
    ui_frame_slot_event(e->slot, ev);
}

/*
 * The text of the answer's committed ids as dllm.h's DONE event gives it: each run of masks a
 * cancelled run left as " \u2026 ", gaps[0 .. *n_gaps-1] the offsets of those gaps (gaps has
 * room for one per two ids), *n_out the committed ids.
 */
static char *partial_text(struct ui_engine *e, int64_t *n_out, size_t *gaps, int64_t *n_gaps)
{
    const int32_t mask = dllm_model_mask_id(e->model);
    const int32_t *ids = e->canvas + e->n_prompt;
    char *text = calloc(1, 1);
    size_t len = 0;
    *n_out = 0;
    *n_gaps = 0;
    for (int64_t i = 0; text && i < e->n_tokens;) {
        const bool gap = ids[i] == mask;
        int64_t j = i;
        while (j < e->n_tokens && (ids[j] == mask) == gap)
            j++;
        char *piece = NULL;
        size_t n = 0;
        if (gap) {
            gaps[(*n_gaps)++] = len;
            piece = strdup(" \u2026 ");
            n = piece ? strlen(piece) : 0;
        } else if (dllm_vocab_decode(e->vocab, ids + i, j - i, 0, &piece, &n, NULL) != DLLM_OK) {
            piece = NULL;
        }
        char *grown = piece ? realloc(text, len + n + 1) : NULL;
        if (grown) {
            memcpy(grown + len, piece, n);
            len += n;
            grown[len] = '\0';
        } else {
            free(text);
        }
        text = grown;
        free(piece);
        *n_out += gap ? 0 : j - i;
        i = j;
    }
    return text ? text : strdup("");
}

/* Plays the generation: START, the steps, DONE. */
static void *play(void *arg)
{
    struct ui_engine *e = arg;
    double t0 = now_ms();
    const struct dllm_sampler_params *s = &e->settings;
    int64_t block = s->block_length > 0 ? s->block_length : e->gen;
    int64_t n_blocks = e->gen / block;
    bool threshold = s->threshold > 0;
    int64_t per_block = threshold ? (block + 3) / 4 : s->steps / n_blocks;
    struct dllm_event ev = {.kind = DLLM_EVENT_START,
                            .canvas = e->canvas,
                            .n_steps = threshold ? 0 : s->steps,
                            .n_blocks = n_blocks};
    emit(e, &ev);
    if (e->notice) {
        ev = (struct dllm_event){
            .kind = DLLM_EVENT_NOTICE, .message = e->notice, .dropped_messages = e->dropped};
        emit(e, &ev);
    }
    struct dllm_commit *commits = calloc((size_t)block, sizeof *commits);
    int64_t step = 0, done = 0;
    bool cancelled = false;
    for (int64_t b = 0; b < n_blocks && !cancelled; b++) {
        for (int64_t i = 0; i < per_block && !cancelled; i++, step++) {
            if (atomic_load(&e->cancel)) {
                cancelled = true;
                break;
            }
            struct timespec nap = {e->step_ms / 1000, (e->step_ms % 1000) * 1000000L};
            nanosleep(&nap, NULL);
            int64_t quota = threshold ? 4 : block / per_block + (i < block % per_block ? 1 : 0);
            int64_t n = 0;
            for (; n < quota && done < (b + 1) * block; n++, done++) {
                int32_t pos = e->order[done];
                e->canvas[e->n_prompt + pos] = e->answer[pos];
                commits[n] =
                    (struct dllm_commit){(int32_t)(e->n_prompt + pos), e->answer[pos], 0.9};
            }
            ev = (struct dllm_event){.kind = DLLM_EVENT_STEP,
                                     .canvas = e->canvas,
                                     .n_steps = threshold ? 0 : s->steps,
                                     .n_blocks = n_blocks,
                                     .step = step,
                                     .block = b,
                                     .committed = commits,
                                     .n_committed = n,
                                     .masks_left = e->gen - done,
                                     .forward_ms = 10.0 + (double)(step % 3),
                                     .sample_ms = 0.5};
            emit(e, &ev);
            while (e->hold_at > 0 && step + 1 == e->hold_at && !atomic_load(&e->cancel)) {
                struct timespec wait = {0, 5000000L};
                nanosleep(&wait, NULL);
            }
        }
    }
    free(commits);
    int64_t n_tokens = 0, n_gaps = 0;
    size_t *gaps = malloc(((size_t)e->n_tokens / 2 + 1) * sizeof *gaps);
    char *text = gaps ? partial_text(e, &n_tokens, gaps, &n_gaps) : NULL;
    ev = (struct dllm_event){.kind = DLLM_EVENT_DONE,
                             .canvas = e->canvas,
                             .text = text,
                             .text_before_gap = n_gaps ? gaps[0] : strlen(text ? text : ""),
                             .gaps = gaps,
                             .n_gaps = n_gaps,
                             .n_tokens = n_tokens,
                             .steps_run = step,
                             .cancelled = cancelled,
                             .total_ms = now_ms() - t0,
                             .dropped_messages = e->dropped};
    emit(e, &ev);
    free(text);
    free(gaps);
    return NULL;
}

/* Shuffles positions [from, to) of order with a 64-bit LCG seeded by seed. */
static void shuffle(int32_t *order, int64_t from, int64_t to, uint64_t *state)
{
    for (int64_t i = to - 1; i > from; i--) {
        *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
        int64_t j = from + (int64_t)((*state >> 33) % (uint64_t)(i - from + 1));
        int32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/* Lays out a generation for msgs: prompt ids, the answer, its commit order. */
static enum dllm_status prepare(struct ui_engine *e, const struct dllm_chat_message *msgs, size_t n,
                                struct dllm_error *err)
{
    /* Drop the oldest messages (after a system one) while the contents exceed the context. */
    size_t first = n > 0 && strcmp(msgs[0].role, "system") == 0 ? 1 : 0, from = first;
    long total = 0;
    for (size_t i = 0; i < n; i++)
        total += (long)strlen(msgs[i].content);
    while (e->context > 0 && total > e->context && from + 1 < n)
        total -= (long)strlen(msgs[from++].content);
    e->dropped = (int)(from - first);
    free(e->notice);
    e->notice = NULL;
    if (e->dropped) {
        e->notice = malloc(128);
        snprintf(e->notice, 128, "%d oldest messages left out to fit the context", e->dropped);
    }
    const char *last = n ? msgs[n - 1].content : "";
    char text[1024];
    snprintf(text, sizeof text,
             "You said: %.200s. Diffusion fills every mask in parallel: "
             "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xe2\x9c\x93",
             last);
    int32_t *prompt = NULL, *ans = NULL;
    int64_t n_prompt = 0, n_ans = 0;
    enum dllm_status st =
        dllm_vocab_encode(e->vocab, last, strlen(last), 0, &prompt, &n_prompt, err);
    if (st == DLLM_OK)
        st = dllm_vocab_encode(e->vocab, text, strlen(text), 0, &ans, &n_ans, err);
    if (st != DLLM_OK) {
        free(prompt);
        free(ans);
        return st;
    }
    int64_t gen = e->settings.gen_length;
    free(e->canvas);
    free(e->answer);
    free(e->order);
    e->canvas = malloc((size_t)(n_prompt + gen) * sizeof *e->canvas);
    e->answer = malloc((size_t)gen * sizeof *e->answer);
    e->order = malloc((size_t)gen * sizeof *e->order);
    int32_t mask = dllm_model_mask_id(e->model),
            eos = dllm_vocab_special(e->vocab, DLLM_SPECIAL_EOS);
    memcpy(e->canvas, prompt, (size_t)n_prompt * sizeof *prompt);
    for (int64_t p = 0; p < gen; p++) {
        e->canvas[n_prompt + p] = mask;
        e->answer[p] = p < n_ans ? ans[p] : eos;
        e->order[p] = (int32_t)p;
    }
    e->n_prompt = n_prompt;
    e->gen = gen;
    e->n_tokens = n_ans < gen ? n_ans : gen;
    int64_t block = e->settings.block_length > 0 ? e->settings.block_length : gen;
    uint64_t state = e->settings.seed + 1;
    for (int64_t b = 0; b < gen; b += block)
        shuffle(e->order, b, b + block, &state);
    free(prompt);
    free(ans);
    return DLLM_OK;
}

enum dllm_status ui_engine_start(struct ui_engine *e, const struct dllm_chat_message *msgs,
                                 size_t n, const struct dllm_sampler_params *settings,
                                 struct dllm_error *err)
{
    struct mock_requests *r = &e->requests;
    if (e->fail_next) {
        snprintf(err->text, sizeof err->text, "%s", e->fail_next);
        e->fail_next = NULL;
        return DLLM_ERR_ARG;
    }
    r->starts++;
    r->n_messages = n;
    r->settings = *settings;
    snprintf(r->last_role, sizeof r->last_role, "%s", n ? msgs[n - 1].role : "");
    snprintf(r->last_content, sizeof r->last_content, "%s", n ? msgs[n - 1].content : "");
    if (!e->model)
        return DLLM_OK;
    if (e->worker_running) {
        pthread_join(e->worker, NULL);
        e->worker_running = false;
    }
    e->settings = *settings;
    atomic_store(&e->cancel, false);
    enum dllm_status st = prepare(e, msgs, n, err);
    if (st != DLLM_OK)
        return st;
    if (pthread_create(&e->worker, NULL, play, e) != 0) {
        snprintf(err->text, sizeof err->text, "cannot start the mock worker");
        return DLLM_ERR_NOMEM;
    }
    e->worker_running = true;
    return DLLM_OK;
}

void ui_engine_cancel(struct ui_engine *e)
{
    e->requests.cancels++;
    atomic_store(&e->cancel, true);
}

void ui_engine_close(struct ui_engine *e)
{
    if (!e)
        return;
    atomic_store(&e->cancel, true);
    if (e->worker_running)
        pthread_join(e->worker, NULL);
    dllm_vocab_free(e->vocab);
    dllm_model_close(e->model);
    free(e->canvas);
    free(e->answer);
    free(e->order);
    free(e->notice);
    free(e);
}
