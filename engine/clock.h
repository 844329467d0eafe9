/* The engine's one clock: monotonic milliseconds, for step and phase timings. */
#ifndef DLLM_CLOCK_H
#define DLLM_CLOCK_H

#include <time.h>

/* Milliseconds on the monotonic clock (its origin is arbitrary: only differences mean anything). */
static inline double dllm_clock_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

#endif
