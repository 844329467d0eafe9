/* What the benchmark programs share: clocks, random numbers, medians, lists and /proc lines. */
#ifndef DLLM_BENCH_UTIL_H
#define DLLM_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* The time of clock id in seconds. */
double clock_s(clockid_t id);

/* The next splitmix64 output of state *s. */
uint64_t rng_next(uint64_t *s);

/* A normal-ish value: the sum of four 16-bit uniforms of one rng_next, centred, unit variance. */
float rng_normal(uint64_t *s);

/* Orders doubles for qsort. */
int cmp_double(const void *a, const void *b);

/* Splits a comma-separated list in place into at most max items; returns the count. */
int split_list(char *s, char **out, int max);

/*
 * The rest of the first line of a text file that starts with prefix, newline dropped, into
 * buf; "unknown" when there is none.
 */
void read_line(const char *path, const char *prefix, char *buf, size_t size);

#endif
