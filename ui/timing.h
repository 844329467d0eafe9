/*
 * The timing pane's data: one row per denoising step (forward ms, sample ms, tokens committed,
 * masks left), a sparkline of the step times, and the totals of an answer.
 */
#ifndef DLLM_UI_TIMING_H
#define DLLM_UI_TIMING_H

#include <stdbool.h>
#include <stddef.h>

/* One denoising step, as the engine reports it. */
struct ui_step_stat {
    int step;          /* from 0, over the whole generation */
    int block;         /* the block it worked on, from 0 */
    double forward_ms; /* the forward pass */
    double sample_ms;  /* choosing and committing tokens */
    int committed;     /* positions committed in this step */
    int masks_left;    /* positions still masked after it */
    bool no_pass;      /* a quota of 0: no pass ran and nothing was committed */
};

/* Every step of the current (or last) generation, in order. */
struct ui_timing {
    struct ui_step_stat *steps; /* [n] */
    size_t n, cap;
};

/* An answer's totals: sums over its steps plus what the engine measured around them. */
struct ui_timing_totals {
    int steps;
    double forward_ms, sample_ms; /* sums over the steps */
    double total_ms;              /* the whole generation, wall clock */
    double load_ms;               /* loading the model; 0 after the first answer */
    int tokens;                   /* tokens of the answer, up to the end of generation */
};

void ui_timing_init(struct ui_timing *t);
void ui_timing_fini(struct ui_timing *t);
void ui_timing_clear(struct ui_timing *t);
/* False when memory ran out. */
bool ui_timing_add(struct ui_timing *t, const struct ui_step_stat *step);

/* Sums the steps into totals; total_ms, load_ms and tokens are the caller's to set. */
void ui_timing_sum(const struct ui_timing *t, struct ui_timing_totals *totals);

/*
 * A sparkline of values[0 .. n-1] in UTF-8: one of ▁▂▃▄▅▆▇█ per value, the level
 * floor(8 v / max) capped at 7 (a value of 0 or less is ▁), scaled to the largest value.
 * Writes at most size - 1 bytes (whole glyphs) and a NUL; returns the glyphs written.
 */
size_t ui_sparkline(const double *values, size_t n, char *buf, size_t size);

/* A sparkline of the step times (forward + sample) of the last `width` steps. */
size_t ui_timing_sparkline(const struct ui_timing *t, size_t width, char *buf, size_t size);

/*
 * Live speed while an answer is generated: the median time of the last 8 steps, the tokens
 * committed per second of step time so far, and the time left: the planned steps left
 * (n_steps, 0 with a threshold) times that median; with a threshold, masks_left over the mean
 * commits per step times it, marked "~". E.g. "412 ms/step · 9.7 tok/s · ETA 12 s" (with_ms
 * false: without the ms/step part). Empty before the first step.
 */
void ui_timing_live(const struct ui_timing *t, int n_steps, int masks_left, bool with_ms, char *buf,
                    size_t size);

/* The column headings of ui_timing_row. */
#define UI_TIMING_HEADER "step  fwd ms  smp ms  +tok  left"

/*
 * One step as a row under UI_TIMING_HEADER: "   3   812.4    10.2     4    92", or for a step
 * with a quota of 0 "   3  quota 0, no pass          92".
 */
void ui_timing_row(const struct ui_step_stat *step, char *buf, size_t size);

/*
 * The totals as one line: "32 steps, 128 tokens in 4.10 s (31.2 tok/s); per step 120.0 ms
 * forward + 8.1 ms sample", with "; load 1.20 s" when load_ms > 0.
 */
void ui_timing_format_totals(const struct ui_timing_totals *totals, char *buf, size_t size);

#endif
