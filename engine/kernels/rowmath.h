/*
 * Double-precision maths over one logits row for the samplers (engine/sampler.c): the
 * largest logit, softmax numerators and their sum, plain and cut-off sums, Dream's negative
 * entropy and LLaDA's Gumbel-max argmax. Variants are chosen at run time like the matrix
 * kernels (kernels/cpu.h) and give the same bits as the reference, so a seed samples the same
 * tokens whichever variant a CPU runs:
 *
 * - e^x and ln x come from dllm_rowmath_exp and dllm_rowmath_log below, not from libm, and
 *   the SIMD variants do the same operations in the same order (no fused multiply-add).
 * - Sums are taken in 8 partial sums, element v added to partial v mod 8 in index order, and
 *   the partials combined as ((s0 + s4) + (s1 + s5)) + ((s2 + s6) + (s3 + s7)).
 *
 * None allocates; n may be 0.
 */
#ifndef DLLM_KERNELS_ROWMATH_H
#define DLLM_KERNELS_ROWMATH_H

#include "dllm.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * e^x for x <= 0 (or NaN, which it returns), within 2 ulp: x is clamped to -746 (where e^x
 * rounds to 0), k = round(x / ln 2) by adding and subtracting 1.5 * 2^52,
 * r = x - k ln2_hi - k ln2_lo with ln 2 split so that k ln2_hi is exact, e^r by its Taylor
 * series to r^13 in Horner form, then times 2^(k + 1000) and 2^-1000 (so that results below
 * 2^-1022 round once, as subnormals).
 */
double dllm_rowmath_exp(double x);

/*
 * ln x for a positive normal x, and -inf for x = 0, within 2 ulp: x = 2^e m with m in
 * [sqrt(1/2), sqrt(2)], s = (m - 1) / (m + 1) and ln m = 2 atanh(s), the odd series
 * 2 (s + s^3/3 + ... + s^19/19) written as t + t z P(z) with t = 2s, z = s^2; then
 * e ln2_hi + (e ln2_lo + ln m).
 */
double dllm_rowmath_log(double x);

/* The sum of the 8 partial sums s[0 .. 7] in the order the header names. */
double dllm_rowmath_combine(const double s[8]);

/*
 * A probability in whole units of 2^-62, truncated (p * 2^62 is exact, and below 2^63 for
 * p < 2): fixed-point masses of up to 2 sum exactly, in any order, in 64 bits.
 */
static inline uint64_t dllm_rowmath_fixed_mass(double p)
{
    return (uint64_t)(int64_t)(p * 0x1p62);
}

/* The bit pattern of x (for x >= 0, patterns order as the values do). */
static inline uint64_t dllm_rowmath_bits(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

/* The double whose bit pattern is b. */
static inline double dllm_rowmath_from_bits(uint64_t b)
{
    double x;
    memcpy(&x, &b, sizeof x);
    return x;
}

/*
 * Whether keep keeps y = x at index v: positive, ranked no later than (theta, last), at least
 * kth. With & and | rather than && and ||, so that it compiles without branches.
 */
static inline bool dllm_rowmath_kept(double x, int64_t v, double theta, int64_t last, double kth)
{
    return (x > 0.0) & ((x > theta) | ((x == theta) & (v <= last))) & (x >= kth);
}

/* Cut-offs a sum_from pass takes. */
#define DLLM_ROWMATH_CUTS 3

/* One variant. */
struct dllm_rowmath {
    const char *name;  /* "ref", "avx2" or "avx512" */
    unsigned features; /* the enum dllm_cpu_feature bits it needs */

    /* The largest of x[0 .. n-1], NaNs ignored; -inf when there is none. */
    float (*max)(const float *x, int64_t n);

    /*
     * y[v] = dllm_rowmath_exp(((double)x[v] - shift) * scale), which must be <= 0 or NaN;
     * returns the sum of y. With y NULL only the sum.
     */
    double (*exp)(const float *x, int64_t n, double shift, double scale, double *y);

    /* The sum of y[0 .. n-1]. */
    double (*sum)(const double *y, int64_t n);

    /*
     * For each of the DLLM_ROWMATH_CUTS cut-offs c[j]: sum[j], the sum of the y[v] >= c[j]
     * (the others count as +0), and count[j], how many there are. One pass over y.
     */
    void (*sum_from)(const double *y, int64_t n, const double *c, double *sum, int64_t *count);

    /* y[v] *= a. */
    void (*scale)(double *y, int64_t n, double a);

    /*
     * The sum of p[v] * dllm_rowmath_log(p[v] + 1e-10) over probabilities p[v] >= 0 (a zero
     * adds nothing, so runs of zeros may be skipped).
     */
    double (*neg_entropy)(const double *p, int64_t n);

    /*
     * The first index of the largest g[v] = (double)l[v] - t * ln(-ln u[v]) (n >= 1,
     * u[v] in (0, 1], logs by dllm_rowmath_log); 0 when every g[v] is -inf. *best receives
     * that g.
     */
    int64_t (*gumbel_argmax)(const float *l, const double *u, int64_t n, double t, double *best);

    /*
     * The band [lo, hi) of the probabilities y[0 .. n-1] (0 <= lo < hi): copies the positive
     * y[v] with lo <= y[v] < hi to out_p and their indices v to out_id, in index order, and
     * returns their count; *above receives the sum of the fixed-point masses of the
     * y[v] >= hi. Where most y[v] lie at or above hi, say so with dense (a hint: the result is
     * the same). out_p and out_id have room for n entries.
     */
    int64_t (*band)(const double *y, int64_t n, double lo, double hi, bool dense, double *out_p,
                    int32_t *out_id, uint64_t *above);

    /*
     * Copies to out_p and out_id, in index order, the positive y[v] that rank no later than
     * (theta, last) by probability descending then index ascending (y[v] > theta, or
     * y[v] == theta and v <= last) and are at least kth; returns their count. expect, the
     * caller's estimate of that count, is a hint. out_p and out_id have room for n entries.
     */
    int64_t (*keep)(const double *y, int64_t n, double theta, int64_t last, double kth,
                    int64_t expect, double *out_p, int32_t *out_id);
};

/* All variants, slowest (the reference) first; *n receives their count. */
const struct dllm_rowmath *dllm_rowmath_all(size_t *n);

/* Whether this CPU runs a variant. */
bool dllm_rowmath_usable(const struct dllm_rowmath *rm);

/*
 * The fastest variant that goes with the matrix kernels dllm_kernels_select picks for force:
 * "ref" gives the reference; an unknown or unsupported name is its error.
 */
enum dllm_status dllm_rowmath_select(const char *force, const struct dllm_rowmath **out,
                                     struct dllm_error *err);

/* The variants' entry points, defined in rowmath-<name>.c. */
#define DLLM_ROWMATH_DECLARE(isa)                                                                  \
    float dllm_rowmath_max_##isa(const float *x, int64_t n);                                       \
    double dllm_rowmath_exp_##isa(const float *x, int64_t n, double shift, double scale,           \
                                  double *y);                                                      \
    double dllm_rowmath_sum_##isa(const double *y, int64_t n);                                     \
    void dllm_rowmath_sum_from_##isa(const double *y, int64_t n, const double *c, double *sum,     \
                                     int64_t *count);                                              \
    void dllm_rowmath_scale_##isa(double *y, int64_t n, double a);                                 \
    double dllm_rowmath_neg_entropy_##isa(const double *p, int64_t n);                             \
    int64_t dllm_rowmath_gumbel_argmax_##isa(const float *l, const double *u, int64_t n, double t, \
                                             double *best);
/* The filters, where a variant has its own (AVX2 uses the reference's). */
#define DLLM_ROWMATH_DECLARE_FILTERS(isa)                                                          \
    int64_t dllm_rowmath_band_##isa(const double *y, int64_t n, double lo, double hi, bool dense,  \
                                    double *out_p, int32_t *out_id, uint64_t *above);              \
    int64_t dllm_rowmath_keep_##isa(const double *y, int64_t n, double theta, int64_t last,        \
                                    double kth, int64_t expect, double *out_p, int32_t *out_id);
DLLM_ROWMATH_DECLARE(ref)
DLLM_ROWMATH_DECLARE(avx2)
DLLM_ROWMATH_DECLARE(avx512)
DLLM_ROWMATH_DECLARE_FILTERS(ref)
DLLM_ROWMATH_DECLARE_FILTERS(avx512)

#endif
