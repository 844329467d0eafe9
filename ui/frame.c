/* The hand-over of session events from the engine's worker to the UI thread. */
#include "config.h"

#include "canvas.h"
#include "frame.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

void ui_frame_init(struct ui_frame *frame)
{
    *frame = (struct ui_frame){.step = -1};
}

void ui_frame_fini(struct ui_frame *frame)
{
    free(frame->ids);
    free(frame->states);
    ui_frame_init(frame);
}

bool ui_frame_slot_init(struct ui_frame_slot *slot)
{
    *slot = (struct ui_frame_slot){0};
    ui_frame_init(&slot->canvas);
    slot->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (slot->wake_fd < 0)
        return false;
    int rc = pthread_mutex_init(&slot->lock, NULL);
    if (rc != 0) {
        close(slot->wake_fd);
        errno = rc;
        return false;
    }
    return true;
}

void ui_frame_slot_fini(struct ui_frame_slot *slot)
{
    pthread_mutex_destroy(&slot->lock);
    close(slot->wake_fd);
    ui_frame_fini(&slot->canvas);
    free(slot->stats);
    free(slot->result.text);
    free(slot->result.gaps);
    *slot = (struct ui_frame_slot){.wake_fd = -1};
}

/* Makes frame hold n positions. */
static bool frame_reserve(struct ui_frame *frame, size_t n)
{
    if (n <= frame->cap)
        return true;
    int32_t *ids = realloc(frame->ids, n * sizeof *ids);
    if (!ids)
        return false;
    frame->ids = ids;
    uint8_t *states = realloc(frame->states, n);
    if (!states)
        return false;
    frame->states = states;
    frame->cap = n;
    return true;
}

/* Wakes the UI thread. A full counter (2^64 - 2 wakes pending) already wakes it. */
static void wake(struct ui_frame_slot *slot)
{
    uint64_t one = 1;
    ssize_t rc = write(slot->wake_fd, &one, sizeof one);
    (void)rc;
}

/* Ends the generation (locked): result from a DONE or ERROR event, or an error message. */
static void finish(struct ui_frame_slot *slot, const struct dllm_event *ev, const char *error)
{
    free(slot->result.text);
    free(slot->result.gaps);
    slot->result = (struct ui_gen_result){.end = UI_GEN_FAILED, .dropped = slot->dropped};
    if (ev && ev->kind == DLLM_EVENT_DONE) {
        slot->result.text = strdup(ev->text ? ev->text : "");
        /* Only a cancelled run leaves gaps. */
        const size_t n_gaps = ev->cancelled && ev->n_gaps > 0 ? (size_t)ev->n_gaps : 0;
        if (n_gaps && (slot->result.gaps = malloc(n_gaps * sizeof *ev->gaps)) != NULL) {
            memcpy(slot->result.gaps, ev->gaps, n_gaps * sizeof *ev->gaps);
            slot->result.n_gaps = n_gaps;
        }
        if (!slot->result.text || (n_gaps && !slot->result.gaps))
            error = "out of memory copying the answer";
        slot->result.end = ev->cancelled ? UI_GEN_CANCELLED : UI_GEN_FINISHED;
        slot->result.stopped_early = ev->stopped_early;
        slot->result.dropped = (int)ev->dropped_messages;
        slot->result.totals.steps = (int)ev->steps_run;
        slot->result.totals.total_ms = ev->total_ms;
        slot->result.totals.tokens = (int)ev->n_tokens;
    } else if (ev) {
        error = ev->message ? ev->message : "the generation failed";
    }
    if (error) {
        slot->result.end = UI_GEN_FAILED;
        snprintf(slot->result.error, sizeof slot->result.error, "%s", error);
    }
    slot->done = true;
    slot->running = false;
}

/* START (locked): sizes the buffers and lays out the prompt and the masks. */
static void start(struct ui_frame_slot *slot, const struct dllm_event *ev)
{
    size_t n = (size_t)ev->canvas_len, n_prompt = (size_t)ev->n_prompt;
    /* Each step commits at least one position; steps may also outnumber the positions. */
    size_t most = n - n_prompt > (size_t)ev->n_steps ? n - n_prompt : (size_t)ev->n_steps;
    if (most > slot->cap_stats) {
        struct ui_step_stat *stats = realloc(slot->stats, most * sizeof *stats);
        if (stats) {
            slot->stats = stats;
            slot->cap_stats = most;
        }
    }
    if (!frame_reserve(&slot->canvas, n) || most > slot->cap_stats) {
        finish(slot, NULL, "out of memory for the canvas");
        return;
    }
    struct ui_frame *c = &slot->canvas;
    memcpy(c->ids, ev->canvas, n * sizeof *c->ids);
    for (size_t p = 0; p < n; p++)
        c->states[p] = p < n_prompt ? UI_POS_PROMPT : UI_POS_MASKED;
    c->n = n;
    c->n_prompt = n_prompt;
    c->step = -1;
    c->n_steps = (int)ev->n_steps;
    slot->canvas_new = true;
    slot->n_stats = 0;
    slot->dropped = 0;
    slot->running = true;
}

/* STEP (locked): the new canvas, its states, and the step's statistics. */
static void step(struct ui_frame_slot *slot, const struct dllm_event *ev)
{
    struct ui_frame *c = &slot->canvas;
    if (!slot->running || (size_t)ev->canvas_len != c->n)
        return; /* no START laid the canvas out */
    memcpy(c->ids, ev->canvas, c->n * sizeof *c->ids);
    for (size_t p = c->n_prompt; p < c->n; p++)
        if (c->states[p] == UI_POS_NEW)
            c->states[p] = UI_POS_SETTLED;
    for (int64_t k = 0; k < ev->n_committed; k++) {
        int32_t pos = ev->committed[k].pos;
        if (pos >= (int32_t)c->n_prompt && (size_t)pos < c->n)
            c->states[pos] = UI_POS_NEW;
    }
    c->step = (int)ev->step;
    slot->canvas_new = true;
    if (slot->n_stats < slot->cap_stats)
        slot->stats[slot->n_stats++] = (struct ui_step_stat){
            .step = (int)ev->step,
            .block = (int)ev->block,
            .forward_ms = ev->forward_ms,
            .sample_ms = ev->sample_ms,
            .committed = (int)ev->n_committed,
            .masks_left = (int)ev->masks_left,
            .no_pass = ev->n_committed == 0 && ev->computed == 0,
        };
}

void ui_frame_slot_event(struct ui_frame_slot *slot, const struct dllm_event *ev)
{
    pthread_mutex_lock(&slot->lock);
    switch (ev->kind) {
    case DLLM_EVENT_START: start(slot, ev); break;
    case DLLM_EVENT_STEP: step(slot, ev); break;
    case DLLM_EVENT_NOTICE:
        snprintf(slot->notice, sizeof slot->notice, "%s", ev->message ? ev->message : "");
        slot->dropped = (int)ev->dropped_messages;
        slot->notice_new = true;
        break;
    case DLLM_EVENT_DONE:
    case DLLM_EVENT_ERROR: finish(slot, ev, NULL); break;
    }
    pthread_mutex_unlock(&slot->lock);
    wake(slot);
}

int ui_frame_slot_take(struct ui_frame_slot *slot, struct ui_frame *frame, struct ui_timing *timing,
                       struct ui_frame_news *news)
{
    uint64_t count;
    while (read(slot->wake_fd, &count, sizeof count) == (ssize_t)sizeof count)
        continue;
    int got = 0;
    pthread_mutex_lock(&slot->lock);
    const struct ui_frame *c = &slot->canvas;
    if (slot->canvas_new && frame_reserve(frame, c->n)) {
        memcpy(frame->ids, c->ids, c->n * sizeof *c->ids);
        memcpy(frame->states, c->states, c->n);
        frame->n = c->n;
        frame->n_prompt = c->n_prompt;
        frame->step = c->step;
        frame->n_steps = c->n_steps;
        slot->canvas_new = false;
        got |= UI_TAKE_CANVAS;
    }
    size_t taken = 0;
    while (taken < slot->n_stats && ui_timing_add(timing, &slot->stats[taken]))
        taken++;
    if (taken) {
        memmove(slot->stats, slot->stats + taken, (slot->n_stats - taken) * sizeof *slot->stats);
        slot->n_stats -= taken;
        got |= UI_TAKE_STEPS;
    }
    if (slot->notice_new) {
        memcpy(news->notice, slot->notice, sizeof news->notice);
        news->dropped = slot->dropped;
        slot->notice_new = false;
        got |= UI_TAKE_NOTICE;
    }
    if (slot->done && slot->n_stats == 0) {
        news->result = slot->result;
        slot->result.text = NULL;
        slot->result.gaps = NULL;
        slot->done = false;
        got |= UI_TAKE_DONE;
    }
    pthread_mutex_unlock(&slot->lock);
    return got;
}
