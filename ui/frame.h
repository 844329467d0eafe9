/*
 * The hand-over from the engine's worker thread to the UI thread: a mutex-guarded slot that
 * receives the session's events and holds the latest canvas (a newer one overwrites one not
 * yet drawn), every step's statistics in order (never dropped), the latest notice and the end
 * of a generation, plus an eventfd the UI polls beside stdin. The worker never blocks on the
 * UI, and allocates only at the start of a generation.
 */
#ifndef DLLM_UI_FRAME_H
#define DLLM_UI_FRAME_H

#include "dllm.h"
#include "timing.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How a generation ended. */
enum ui_gen_end {
    UI_GEN_FINISHED,  /* every step ran, or it stopped early with the answer final */
    UI_GEN_CANCELLED, /* cancelled: text is the partial answer */
    UI_GEN_FAILED,    /* an error: error says what */
};

struct ui_gen_result {
    enum ui_gen_end end;
    char *text;   /* the answer up to the end of generation (owned by the holder) */
    size_t *gaps; /* [n_gaps] offsets in text of a cancelled run's gaps of masks
                     (dllm.h DONE), owned by the holder; NULL when none */
    size_t n_gaps;
    bool stopped_early;             /* the early-stop rule ended the run */
    int dropped;                    /* oldest messages left out of the prompt to fit the context */
    struct ui_timing_totals totals; /* steps, total_ms and tokens; the UI adds the rest */
    char error[DLLM_ERROR_TEXT_MAX];
};

/* A canvas: the UI thread's copy of the latest one, or the slot's own. */
struct ui_frame {
    int32_t *ids;    /* [n] token ids */
    uint8_t *states; /* [n] enum ui_pos_state */
    size_t n, cap;
    size_t n_prompt; /* positions [0, n_prompt) hold the prompt */
    int step;        /* the step that produced it, from 0; -1 before the first */
    int n_steps;     /* the steps planned (0 with a threshold: blocks run until full) */
};

struct ui_frame_slot {
    pthread_mutex_t lock;
    int wake_fd; /* eventfd: readable when there is something new */
    /* Guarded by lock: */
    struct ui_frame canvas;
    bool canvas_new;
    struct ui_step_stat *stats; /* [n_stats] steps not yet taken, oldest first */
    size_t n_stats, cap_stats;
    char notice[DLLM_ERROR_TEXT_MAX];
    bool notice_new;
    int dropped;  /* from the latest notice */
    bool running; /* a START was taken and its end has not come */
    bool done;    /* result holds the end of a generation not yet taken */
    struct ui_gen_result result;
};

/* Creates the slot's eventfd and mutex. False (errno set) when they could not be made. */
bool ui_frame_slot_init(struct ui_frame_slot *slot);
void ui_frame_slot_fini(struct ui_frame_slot *slot);

/* ---- the worker's side ---- */

/*
 * Takes one session event (a dllm_event_fn can pass its events straight here) and wakes the
 * UI. START sizes the buffers and lays out the canvas (prompt, then masks); STEP updates the
 * canvas (the positions it committed are new, those new before are settled) and queues its
 * statistics; NOTICE keeps the message; DONE and ERROR end the generation. Should memory run
 * out at START, the generation ends as failed.
 */
void ui_frame_slot_event(struct ui_frame_slot *slot, const struct dllm_event *event);

/* ---- the UI's side ---- */

enum {
    UI_TAKE_CANVAS = 1, /* frame holds a newer canvas */
    UI_TAKE_STEPS = 2,  /* step statistics were appended to timing */
    UI_TAKE_NOTICE = 4, /* a notice arrived */
    UI_TAKE_DONE = 8,   /* a generation ended */
};

/* What ui_frame_slot_take hands over besides the canvas and the steps. */
struct ui_frame_news {
    char notice[DLLM_ERROR_TEXT_MAX];
    int dropped;                 /* with a notice */
    struct ui_gen_result result; /* with UI_TAKE_DONE; the caller frees result.text */
};

/*
 * Drains the eventfd and takes what is new: copies the latest canvas into frame, appends the
 * pending step statistics to timing, and fills news. The end of a generation is handed over
 * only after all its steps. Returns the UI_TAKE_* bits of what was taken; what could not be
 * copied for want of memory stays for the next call.
 */
int ui_frame_slot_take(struct ui_frame_slot *slot, struct ui_frame *frame, struct ui_timing *timing,
                       struct ui_frame_news *news);

void ui_frame_init(struct ui_frame *frame);
void ui_frame_fini(struct ui_frame *frame);

#endif
