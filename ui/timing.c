/* The timing pane's data. */
#include "config.h"

#include "format.h"
#include "timing.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ui_timing_init(struct ui_timing *t)
{
    *t = (struct ui_timing){0};
}

void ui_timing_fini(struct ui_timing *t)
{
    free(t->steps);
    *t = (struct ui_timing){0};
}

void ui_timing_clear(struct ui_timing *t)
{
    t->n = 0;
}

bool ui_timing_add(struct ui_timing *t, const struct ui_step_stat *step)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        struct ui_step_stat *steps = realloc(t->steps, cap * sizeof *steps);
        if (!steps)
            return false;
        t->steps = steps;
        t->cap = cap;
    }
    t->steps[t->n++] = *step;
    return true;
}

void ui_timing_sum(const struct ui_timing *t, struct ui_timing_totals *totals)
{
    totals->steps = (int)t->n;
    totals->forward_ms = totals->sample_ms = 0;
    for (size_t i = 0; i < t->n; i++) {
        totals->forward_ms += t->steps[i].forward_ms;
        totals->sample_ms += t->steps[i].sample_ms;
    }
}

size_t ui_sparkline(const double *values, size_t n, char *buf, size_t size)
{
    static const char *const bars[8] = {"\u2581", "\u2582", "\u2583", "\u2584",
                                        "\u2585", "\u2586", "\u2587", "\u2588"};
    double max = 0;
    for (size_t i = 0; i < n; i++)
        max = values[i] > max ? values[i] : max;
    size_t used = 0, k = 0;
    for (; k < n && used + 3 < size; k++, used += 3) {
        int level = 0;
        if (max > 0 && values[k] > 0) {
            level = (int)floor(8 * values[k] / max);
            level = level > 7 ? 7 : level;
        }
        memcpy(buf + used, bars[level], 3);
    }
    if (size)
        buf[used] = '\0';
    return k;
}

size_t ui_timing_sparkline(const struct ui_timing *t, size_t width, char *buf, size_t size)
{
    size_t n = t->n < width ? t->n : width;
    double *v = malloc((n ? n : 1) * sizeof *v);
    if (!v) {
        if (size)
            buf[0] = '\0';
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        const struct ui_step_stat *s = &t->steps[t->n - n + i];
        v[i] = s->forward_ms + s->sample_ms;
    }
    size_t k = ui_sparkline(v, n, buf, size);
    free(v);
    return k;
}

/* Orders doubles for qsort. */
static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void ui_timing_live(const struct ui_timing *t, int n_steps, int masks_left, bool with_ms, char *buf,
                    size_t size)
{
    buf[0] = '\0';
    if (t->n == 0)
        return;
    double last[8], ms = 0;
    size_t k = t->n < 8 ? t->n : 8;
    for (size_t i = 0; i < k; i++)
        last[i] = t->steps[t->n - k + i].forward_ms + t->steps[t->n - k + i].sample_ms;
    qsort(last, k, sizeof *last, cmp_double);
    const double median = k % 2 ? last[k / 2] : (last[k / 2 - 1] + last[k / 2]) / 2;
    long tokens = 0;
    for (size_t i = 0; i < t->n; i++) {
        ms += t->steps[i].forward_ms + t->steps[i].sample_ms;
        tokens += t->steps[i].committed;
    }
    double left_ms;
    const bool estimate = n_steps <= 0;
    if (!estimate) {
        const int done = t->steps[t->n - 1].step + 1;
        left_ms = (n_steps > done ? n_steps - done : 0) * median;
    } else {
        const double per_step = (double)tokens / (double)t->n;
        left_ms = per_step > 0 ? masks_left / per_step * median : 0;
    }
    char eta[32];
    const double secs = left_ms / 1000;
    if (secs < 10)
        snprintf(eta, sizeof eta, "%.1f s", secs);
    else if (secs < 60)
        snprintf(eta, sizeof eta, "%.0f s", secs);
    else
        snprintf(eta, sizeof eta, "%dm%02ds", (int)(secs / 60), (int)secs % 60);
    if (with_ms)
        ui_addf(buf, size, "%.0f ms/step \u00b7 ", median);
    ui_addf(buf, size, "%.1f tok/s \u00b7 ETA %s%s", ms > 0 ? tokens / (ms / 1000) : 0.0,
            estimate ? "~" : "", eta);
}

void ui_timing_row(const struct ui_step_stat *step, char *buf, size_t size)
{
    if (step->no_pass)
        snprintf(buf, size, "%4d  %-20s  %4d", step->step, "quota 0, no pass", step->masks_left);
    else
        snprintf(buf, size, "%4d  %6.1f  %6.1f  %4d  %4d", step->step, step->forward_ms,
                 step->sample_ms, step->committed, step->masks_left);
}

void ui_timing_format_totals(const struct ui_timing_totals *t, char *buf, size_t size)
{
    double secs = t->total_ms / 1000;
    buf[0] = '\0';
    ui_addf(buf, size, "%d step%s, %d token%s in %.2f s (%.1f tok/s)", t->steps,
            t->steps == 1 ? "" : "s", t->tokens, t->tokens == 1 ? "" : "s", secs,
            secs > 0 ? t->tokens / secs : 0.0);
    if (t->steps > 0)
        ui_addf(buf, size, "; per step %.1f ms forward + %.1f ms sample", t->forward_ms / t->steps,
                t->sample_ms / t->steps);
    if (t->load_ms > 0)
        ui_addf(buf, size, "; load %.2f s", t->load_ms / 1000);
}
