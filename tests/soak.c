/*
 * The soak test (make soak): one session on a fixture model runs 200 generations of a growing
 * conversation with settings drawn at random (gen length 8-96, steps valid for them, block
 * length 0/8/16/32, threshold off or 0.5-0.95, temperature 0-1, CFG 0 or 1), cancels some at
 * a random step, and with a canvas of at most 512 drops the oldest messages within a few
 * turns, as dllm-tui does when the session says so. It fails on any error, when no turn was
 * ever dropped, and when VmRSS after the last generation exceeds VmRSS after the 20th by more
 * than 4 MB (not under AddressSanitizer, whose quarantine holds freed memory); leaks show as
 * LeakSanitizer's report in the sanitizer build. Usage: soak [SEED [GENERATIONS]] (default:
 * the time, 200); the seed is printed first, so that a failing run can be repeated.
 */
#include "dllm.h"
#include "fixtures.h"
#include "random_data.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GENERATIONS  200
#define RSS_FIRST    20
#define RSS_SLACK_KB 4096
#define MAX_CANVAS   512
#define MESSAGES_MAX 256
#define MODEL        "models/llada-tiny-q4km.gguf"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

/* What the event callback saw of one generation. */
struct run {
    struct dllm_session *session;
    int64_t cancel_at; /* the step at which to cancel, or -1 */
    bool done, cancelled;
    int64_t dropped;
    int64_t canvas_len;
    char *text; /* the answer up to its first gap */
    char error[DLLM_ERROR_TEXT_MAX];
};

static void on_event(const struct dllm_event *ev, void *user)
{
    struct run *r = user;
    switch (ev->kind) {
    case DLLM_EVENT_STEP:
        if (ev->step == r->cancel_at)
            dllm_session_cancel(r->session);
        break;
    case DLLM_EVENT_DONE:
        r->done = true;
        r->cancelled = ev->cancelled;
        r->dropped = ev->dropped_messages;
        r->canvas_len = ev->canvas_len;
        r->text = strndup(ev->text, ev->text_before_gap);
        break;
    case DLLM_EVENT_ERROR: snprintf(r->error, sizeof r->error, "%s", ev->message); break;
    default: break;
    }
}

/* VmRSS of this process in kB, from /proc/self/status. */
static long vm_rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

/* A uniform integer in [lo, hi]. */
static int64_t draw(uint64_t *rng, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rng_next(rng) % (uint64_t)(hi - lo + 1));
}

/* Settings drawn for one generation; valid by construction. */
static void draw_settings(uint64_t *rng, struct dllm_sampler_params *sp)
{
    static const int64_t blocks[] = {0, 8, 16, 32};
    sp->gen_length = draw(rng, 8, 96);
    do
        sp->block_length = blocks[draw(rng, 0, 3)];
    while (sp->block_length && sp->gen_length % sp->block_length);
    int64_t n_blocks = sp->block_length ? sp->gen_length / sp->block_length : 1;
    sp->steps = n_blocks * draw(rng, 1, sp->gen_length / n_blocks);
    sp->threshold = draw(rng, 0, 1) ? 0 : 0.5 + 0.45 * rng_uniform(rng);
    sp->temperature = rng_uniform(rng);
    sp->cfg_scale = (double)draw(rng, 0, 1);
    sp->seed = rng_next(rng);
}

/* A user message of 5 to 25 words: short enough to fit the canvas with any answer. */
static char *draw_message(uint64_t *rng)
{
    static const char *const words[] = {"the",       "model",  "masks",  "every", "token", "and",
                                        "then",      "fills",  "them",   "over",  "steps", "why",
                                        "diffusion", "canvas", "blocks", "of",    "text"};
    size_t n = (size_t)draw(rng, 5, 25), len = 0;
    char *s = malloc(n * 12 + 2);
    if (!s)
        abort();
    for (size_t i = 0; i < n; i++)
        len += (size_t)sprintf(s + len, "%s ", words[rng_next(rng) % 17]);
    s[len - 1] = '?';
    return s;
}

int main(int argc, char **argv)
{
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : (uint64_t)time(NULL);
    int generations = argc > 2 ? atoi(argv[2]) : GENERATIONS;
    if (generations < 1) {
        printf("usage: soak [SEED [GENERATIONS]]\n");
        return 2;
    }
    printf("soak: seed %" PRIu64 " (repeat with: make soak SOAK_SEED=%" PRIu64 ")\n", seed, seed);
    fflush(stdout);
    uint64_t rng = seed;
    char *path = fixture_path(MODEL);
    struct dllm_error err;
    struct dllm_model *model;
    struct dllm_session *session;
    struct dllm_session_params params;
    dllm_session_params_init(&params);
    params.max_canvas = MAX_CANVAS;
    params.threads = 2;
    if (dllm_model_open(path, NULL, &model, &err) ||
        dllm_session_new(model, &params, &session, &err)) {
        printf("FAIL: %s\n", err.text);
        return 1;
    }
    struct dllm_chat_message msgs[MESSAGES_MAX];
    size_t n_msgs = 0;
    long rss_first = 0, rss_last = 0;
    /* the baseline: the 20th generation, or the last of a shorter soak (then nothing to compare) */
    int rss_at = generations < RSS_FIRST ? generations : RSS_FIRST;
    int cancelled = 0, dropping = 0;
    int64_t longest = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int gen = 1; gen <= generations; gen++) {
        struct dllm_request req = {0};
        dllm_sampler_params_init(&req.sampler, dllm_model_sampler_kind(model));
        draw_settings(&rng, &req.sampler);
        if (dllm_sampler_params_check(&req.sampler, &err) != DLLM_OK) {
            printf("FAIL: generation %d: drawn settings refused: %s\n", gen, err.text);
            return 1;
        }
        msgs[n_msgs++] = (struct dllm_chat_message){"user", draw_message(&rng)};
        req.messages = msgs;
        req.n_messages = n_msgs;
        struct run run = {.session = session, .cancel_at = -1};
        if (draw(&rng, 0, 3) == 0)
            run.cancel_at = draw(&rng, 0, req.sampler.threshold > 0 ? 8 : req.sampler.steps - 1);
        if (dllm_session_generate(session, &req, on_event, &run, &err) != DLLM_OK) {
            printf("FAIL: generation %d: %s\n", gen, err.text);
            return 1;
        }
        dllm_session_wait(session);
        if (run.error[0] || !run.done || run.canvas_len > MAX_CANVAS) {
            printf("FAIL: generation %d (gen %" PRId64 ", steps %" PRId64 ", block %" PRId64
                   "): %s\n",
                   gen, req.sampler.gen_length, req.sampler.steps, req.sampler.block_length,
                   run.error[0] ? run.error : "no DONE event, or a canvas over the maximum");
            return 1;
        }
        cancelled += run.cancelled;
        dropping += run.dropped > 0;
        longest = run.canvas_len > longest ? run.canvas_len : longest;
        /* The messages the session left out are not sent again (dllm-tui's dropped turns). */
        for (int64_t i = 0; i < run.dropped; i++)
            free((char *)msgs[i].content);
        memmove(msgs, msgs + run.dropped, (n_msgs - (size_t)run.dropped) * sizeof *msgs);
        n_msgs -= (size_t)run.dropped;
        msgs[n_msgs++] = (struct dllm_chat_message){"assistant", run.text};
        if (n_msgs + 1 >= MESSAGES_MAX) {
            printf("FAIL: %zu messages kept: the session drops none\n", n_msgs);
            return 1;
        }
        if (gen == rss_at)
            rss_first = vm_rss_kb();
    }
    rss_last = vm_rss_kb();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("soak: %d generations in %.1f s, %d cancelled, %d dropped old messages, longest "
           "canvas %" PRId64 "; VmRSS %ld kB after %d, %ld kB after %d\n",
           generations, (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9,
           cancelled, dropping, longest, rss_first, rss_at, rss_last, generations);
    for (size_t i = 0; i < n_msgs; i++)
        free((char *)msgs[i].content);
    dllm_session_free(session);
    dllm_model_close(model);
    free(path);
    if (!dropping) {
        printf("FAIL: no generation dropped old messages: the canvas never filled\n");
        return 1;
    }
#ifndef UNDER_ASAN
    if (generations > RSS_FIRST && (rss_first < 0 || rss_last > rss_first + RSS_SLACK_KB)) {
        printf("FAIL: VmRSS grew from %ld kB to %ld kB (at most %d kB allowed)\n", rss_first,
               rss_last, RSS_SLACK_KB);
        return 1;
    }
#endif
    printf("PASS: soak\n");
    return 0;
}
