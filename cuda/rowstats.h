/*
 * The sampler's per-row statistics (engine/dllm.h struct dllm_row_stats) as DLLM_HD pieces
 * that the device kernel (cuda/kernels-rowstats.cu) runs per element and per partial, and the
 * host test runs in the CPU's order and in the kernel's. The formulas are engine/backend-cpu.c's
 * stats_row: argmax (first index of the largest logit), max and the runner-up in one pass;
 * then S = sum e^(l - max) and T = sum e^(l - max) l in double, e^x by dllm_rowmath_exp's
 * operations (engine/kernels/rowmath-ref.c); lse = max + ln S and entropy = lse - T / S, ln
 * by dllm_rowmath_log's. Pushing a row's elements in index order into one partial gives the
 * CPU's bits exactly; the kernel's order (DLLM_HD_STATS_THREADS strided partials merged in a
 * tree, dllm_hd_stats_row) changes only the order of the two sums.
 */
#ifndef DLLM_CUDA_ROWSTATS_H
#define DLLM_CUDA_ROWSTATS_H

#include "hd.h"

#include "dllm.h"
#include "kernels/rowmath-const.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#ifndef __CUDA_ARCH__
#include <string.h>
#endif

/* Threads of the row-statistics kernel, each one partial: a power of 2. */
#define DLLM_HD_STATS_THREADS 256

DLLM_HD uint64_t dllm_hd_dbits(double x)
{
#ifdef __CUDA_ARCH__
    return (uint64_t)__double_as_longlong(x);
#else
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
#endif
}

DLLM_HD double dllm_hd_double_of(uint64_t b)
{
#ifdef __CUDA_ARCH__
    return __longlong_as_double((long long)b);
#else
    double x;
    memcpy(&x, &b, sizeof x);
    return x;
#endif
}

/*
 * e^x for x <= 0 or NaN, the operations of dllm_rowmath_exp (rowmath.h): clamp to -746,
 * k = round(x / ln 2) by the 1.5 * 2^52 trick, r = x - k ln2_hi - k ln2_lo, the Taylor
 * series to r^13 in Horner form, times 2^(k + 1000) and 2^-1000; each operation unfused.
 */
DLLM_HD double dllm_hd_exp(double x)
{
    x = RM_EXP_MIN > x ? RM_EXP_MIN : x;
    double kd = DLLM_DADD(DLLM_DMUL(x, RM_LOG2E), RM_MAGIC);
    uint64_t kb = dllm_hd_dbits(kd);
    kd = DLLM_DSUB(kd, RM_MAGIC);
    double r = DLLM_DSUB(DLLM_DSUB(x, DLLM_DMUL(kd, RM_LN2_HI)), DLLM_DMUL(kd, RM_LN2_LO));
    static const double c[13] = {RM_EXP_C12, RM_EXP_C11, RM_EXP_C10, RM_EXP_C9, RM_EXP_C8,
                                 RM_EXP_C7,  RM_EXP_C6,  RM_EXP_C5,  RM_EXP_C4, RM_EXP_C3,
                                 RM_EXP_C2,  1.0,        1.0};
    double p = RM_EXP_C13;
    for (int i = 0; i < 13; i++)
        p = DLLM_DADD(DLLM_DMUL(p, r), c[i]);
    double scale = dllm_hd_double_of((kb - RM_MAGIC_BITS + 2023) << 52);
    return DLLM_DMUL(DLLM_DMUL(p, scale), 0x1p-1000);
}

/*
 * ln x for a positive normal x (-inf for 0), the operations of dllm_rowmath_log: x = 2^e m
 * with m in [sqrt(1/2), sqrt(2)], s = (m - 1) / (m + 1), ln m = t + t z P(z) with t = 2s,
 * z = s^2, then e ln2_hi + (e ln2_lo + ln m); each operation unfused.
 */
DLLM_HD double dllm_hd_log(double x)
{
    uint64_t b = dllm_hd_dbits(x);
    double e = DLLM_DSUB(DLLM_DSUB(dllm_hd_double_of((b >> 52) | RM_2P52_BITS), 0x1p52), 1023.0);
    double m = dllm_hd_double_of((b & RM_MANT_BITS) | RM_ONE_BITS);
    if (m > RM_SQRT2) {
        m = DLLM_DMUL(m, 0.5);
        e = DLLM_DADD(e, 1.0);
    }
    double f = DLLM_DSUB(m, 1.0);
    double s = DLLM_DADD(2.0, f);
    s = f / s;
    double t = DLLM_DADD(s, s), z = DLLM_DMUL(s, s);
    static const double c[8] = {RM_LOG_C17, RM_LOG_C15, RM_LOG_C13, RM_LOG_C11,
                                RM_LOG_C9,  RM_LOG_C7,  RM_LOG_C5,  RM_LOG_C3};
    double p = RM_LOG_C19;
    for (int i = 0; i < 8; i++)
        p = DLLM_DADD(DLLM_DMUL(p, z), c[i]);
    double lm = DLLM_DADD(t, DLLM_DMUL(DLLM_DMUL(t, z), p));
    double r = DLLM_DADD(DLLM_DMUL(e, RM_LN2_HI), DLLM_DADD(DLLM_DMUL(e, RM_LN2_LO), lm));
    return x == 0.0 ? -(double)INFINITY : r;
}

/* The largest value of a run of a row and the largest at any other index of the run. */
struct dllm_hd_top {
    int64_t at;   /* index of the first largest value; -1 for an empty run */
    float max;    /* l[at] */
    float second; /* the largest l[v], v != at, in the run; -inf when none */
};

DLLM_HD struct dllm_hd_top dllm_hd_top_empty(void)
{
    struct dllm_hd_top t = {-1, -(float)INFINITY, -(float)INFINITY};
    return t;
}

/*
 * Adds element v (above every index already in t) of value x, as the CPU's loop does. That
 * loop starts from element 0 and compares every later one with it, so a NaN counts only at
 * index 0 (where it stays the max, every comparison with it false): elsewhere it is skipped,
 * which gives a partial of any other elements the CPU's result.
 */
DLLM_HD void dllm_hd_top_push(struct dllm_hd_top *t, int64_t v, float x)
{
    if (x != x && v != 0)
        return;
    if (t->at < 0) {
        t->at = v;
        t->max = x;
    } else if (x > t->max) {
        t->second = t->max;
        t->max = x;
        t->at = v;
    } else if (x > t->second) {
        t->second = x;
    }
}

/*
 * The top of two disjoint runs: the larger max wins, the lower index on a tie, and a NaN max
 * (element 0's, the only one a run keeps) always; the runner-up is the larger of the winner's
 * runner-up and the loser's max.
 */
DLLM_HD struct dllm_hd_top dllm_hd_top_merge(struct dllm_hd_top a, struct dllm_hd_top b)
{
    if (b.at < 0)
        return a;
    if (a.at < 0)
        return b;
    bool b_wins =
        b.max != b.max || (a.max == a.max && (b.max > a.max || (b.max == a.max && b.at < a.at)));
    struct dllm_hd_top w = b_wins ? b : a, l = b_wins ? a : b;
    w.second = l.max > w.second ? l.max : w.second;
    return w;
}

/* The two sums of a run: S = sum e^(l - max), T = sum e^(l - max) l. */
struct dllm_hd_sums {
    double S, T;
};

/* Adds element x to the sums, for the row's max; a term of weight 0 (x = -inf) adds nothing. */
DLLM_HD void dllm_hd_sums_push(struct dllm_hd_sums *s, float x, double max)
{
    double e = dllm_hd_exp(DLLM_DSUB((double)x, max));
    s->S = DLLM_DADD(s->S, e);
    s->T = DLLM_DADD(s->T, e > 0.0 ? DLLM_DMUL(e, (double)x) : 0.0);
}

DLLM_HD struct dllm_hd_sums dllm_hd_sums_merge(struct dllm_hd_sums a, struct dllm_hd_sums b)
{
    struct dllm_hd_sums s = {DLLM_DADD(a.S, b.S), DLLM_DADD(a.T, b.T)};
    return s;
}

/* The statistics from the row's top and sums: lse = max + ln S, entropy = lse - T / S. */
DLLM_HD struct dllm_row_stats dllm_hd_stats_finish(struct dllm_hd_top t, struct dllm_hd_sums s)
{
    struct dllm_row_stats out;
    double lse = DLLM_DADD((double)t.max, dllm_hd_log(s.S));
    out.argmax = (int32_t)t.at;
    out.max = t.max;
    out.second = t.second;
    out.lse = lse;
    out.entropy = DLLM_DSUB(lse, s.T / s.S);
    return out;
}

/* The top of partial p of the kernel: elements p, p + DLLM_HD_STATS_THREADS, ... of l[n]. */
DLLM_HD struct dllm_hd_top dllm_hd_top_partial(const float *l, int64_t n, int p)
{
    struct dllm_hd_top t = dllm_hd_top_empty();
    for (int64_t v = p; v < n; v += DLLM_HD_STATS_THREADS)
        dllm_hd_top_push(&t, v, l[v]);
    return t;
}

/* The sums of partial p of the kernel, for the row's max. */
DLLM_HD struct dllm_hd_sums dllm_hd_sums_partial(const float *l, int64_t n, int p, double max)
{
    struct dllm_hd_sums s = {0.0, 0.0};
    for (int64_t v = p; v < n; v += DLLM_HD_STATS_THREADS)
        dllm_hd_sums_push(&s, l[v], max);
    return s;
}

/* The statistics of l[n] with every element pushed in index order into one partial. */
DLLM_HD struct dllm_row_stats dllm_hd_stats_serial(const float *l, int64_t n)
{
    struct dllm_hd_top t = dllm_hd_top_empty();
    for (int64_t v = 0; v < n; v++)
        dllm_hd_top_push(&t, v, l[v]);
    struct dllm_hd_sums s = {0.0, 0.0};
    for (int64_t v = 0; v < n; v++)
        dllm_hd_sums_push(&s, l[v], (double)t.max);
    return dllm_hd_stats_finish(t, s);
}

/*
 * The statistics of l[n] in the device kernel's order: DLLM_HD_STATS_THREADS strided
 * partials, merged in a tree (partial p takes p + h for h = half the count, halving), run
 * one partial after another: the bits the device kernel gives, for host tests.
 */
DLLM_HD struct dllm_row_stats dllm_hd_stats_kernel_order(const float *l, int64_t n)
{
    struct dllm_hd_top top[DLLM_HD_STATS_THREADS];
    struct dllm_hd_sums sums[DLLM_HD_STATS_THREADS];
    for (int p = 0; p < DLLM_HD_STATS_THREADS; p++)
        top[p] = dllm_hd_top_partial(l, n, p);
    for (int h = DLLM_HD_STATS_THREADS / 2; h > 0; h /= 2)
        for (int p = 0; p < h; p++)
            top[p] = dllm_hd_top_merge(top[p], top[p + h]);
    for (int p = 0; p < DLLM_HD_STATS_THREADS; p++)
        sums[p] = dllm_hd_sums_partial(l, n, p, (double)top[0].max);
    for (int h = DLLM_HD_STATS_THREADS / 2; h > 0; h /= 2)
        for (int p = 0; p < h; p++)
            sums[p] = dllm_hd_sums_merge(sums[p], sums[p + h]);
    return dllm_hd_stats_finish(top[0], sums[0]);
}

/*
 * The largest differences in lse and entropy that the order of the sums S and T can make
 * (max_abs = max |l|): a sum
 * of n terms in any order lies within (n - 1) u sum|terms| of the exact one (u = 2^-53, half
 * DBL_EPSILON), so two orders differ by at most n DBL_EPSILON relative for S (all terms
 * positive), which moves ln S by as much; T / S moves by at most 2 n DBL_EPSILON max|l|.
 * Plus the rounding of the results themselves.
 */
DLLM_HD double dllm_hd_stats_lse_tol(int64_t n, double lse)
{
    return (double)n * DBL_EPSILON + 2 * DBL_EPSILON * fabs(lse);
}

DLLM_HD double dllm_hd_stats_entropy_tol(int64_t n, double lse, double max_abs)
{
    return dllm_hd_stats_lse_tol(n, lse) + 2 * (double)n * DBL_EPSILON * max_abs;
}

#endif
