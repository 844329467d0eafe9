/*
 * The reference row maths (kernels/rowmath.h): plain C, one element at a time, the
 * specification the SIMD variants match bit for bit. Built with -ffp-contract=off.
 */
#include "config.h"

#include "kernels/rowmath.h"
#include "kernels/rowmath-const.h"

#include <math.h>

double dllm_rowmath_exp(double x)
{
    x = RM_EXP_MIN > x ? RM_EXP_MIN : x; /* as MAXPD: a NaN x stays */
    double kd = x * RM_LOG2E + RM_MAGIC;
    uint64_t kb = dllm_rowmath_bits(kd); /* RM_MAGIC_BITS + k */
    kd -= RM_MAGIC;
    double r = (x - kd * RM_LN2_HI) - kd * RM_LN2_LO;
    double p = RM_EXP_C13;
    p = p * r + RM_EXP_C12;
    p = p * r + RM_EXP_C11;
    p = p * r + RM_EXP_C10;
    p = p * r + RM_EXP_C9;
    p = p * r + RM_EXP_C8;
    p = p * r + RM_EXP_C7;
    p = p * r + RM_EXP_C6;
    p = p * r + RM_EXP_C5;
    p = p * r + RM_EXP_C4;
    p = p * r + RM_EXP_C3;
    p = p * r + RM_EXP_C2;
    p = p * r + 1.0;
    p = p * r + 1.0;
    double scale = dllm_rowmath_from_bits((kb - RM_MAGIC_BITS + 2023) << 52); /* 2^(k + 1000) */
    return p * scale * 0x1p-1000;
}

double dllm_rowmath_log(double x)
{
    uint64_t b = dllm_rowmath_bits(x);
    double e = dllm_rowmath_from_bits((b >> 52) | RM_2P52_BITS) - 0x1p52 - 1023.0;
    double m = dllm_rowmath_from_bits((b & RM_MANT_BITS) | RM_ONE_BITS);
    if (m > RM_SQRT2) {
        m = m * 0.5;
        e = e + 1.0;
    }
    double f = m - 1.0;
    double s = f / (2.0 + f);
    double t = s + s, z = s * s;
    double p = RM_LOG_C19;
    p = p * z + RM_LOG_C17;
    p = p * z + RM_LOG_C15;
    p = p * z + RM_LOG_C13;
    p = p * z + RM_LOG_C11;
    p = p * z + RM_LOG_C9;
    p = p * z + RM_LOG_C7;
    p = p * z + RM_LOG_C5;
    p = p * z + RM_LOG_C3;
    double lm = t + (t * z) * p;
    double r = e * RM_LN2_HI + (e * RM_LN2_LO + lm);
    return x == 0.0 ? -INFINITY : r;
}

double dllm_rowmath_combine(const double s[8])
{
    return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
}

float dllm_rowmath_max_ref(const float *x, int64_t n)
{
    float m = -INFINITY;
    for (int64_t v = 0; v < n; v++)
        m = x[v] > m ? x[v] : m;
    return m;
}

double dllm_rowmath_exp_ref(const float *x, int64_t n, double shift, double scale, double *y)
{
    double s[8] = {0};
    for (int64_t v = 0; v < n; v++) {
        double e = dllm_rowmath_exp(((double)x[v] - shift) * scale);
        if (y)
            y[v] = e;
        s[v & 7] += e;
    }
    return dllm_rowmath_combine(s);
}

double dllm_rowmath_sum_ref(const double *y, int64_t n)
{
    double s[8] = {0};
    for (int64_t v = 0; v < n; v++)
        s[v & 7] += y[v];
    return dllm_rowmath_combine(s);
}

void dllm_rowmath_sum_from_ref(const double *y, int64_t n, const double *c, double *sum,
                               int64_t *count)
{
    for (int j = 0; j < DLLM_ROWMATH_CUTS; j++) {
        double s[8] = {0};
        int64_t k = 0;
        for (int64_t v = 0; v < n; v++) {
            s[v & 7] += y[v] >= c[j] ? y[v] : 0.0;
            k += y[v] >= c[j];
        }
        sum[j] = dllm_rowmath_combine(s);
        count[j] = k;
    }
}

void dllm_rowmath_scale_ref(double *y, int64_t n, double a)
{
    for (int64_t v = 0; v < n; v++)
        y[v] *= a;
}

double dllm_rowmath_neg_entropy_ref(const double *p, int64_t n)
{
    double s[8] = {0};
    for (int64_t v = 0; v < n; v++)
        if (p[v] > 0.0)
            s[v & 7] += p[v] * dllm_rowmath_log(p[v] + 1e-10);
    return dllm_rowmath_combine(s);
}

int64_t dllm_rowmath_gumbel_argmax_ref(const float *l, const double *u, int64_t n, double t,
                                       double *best)
{
    double b = -INFINITY;
    int64_t at = -1;
    for (int64_t v = 0; v < n; v++) {
        double g = (double)l[v] - t * dllm_rowmath_log(-dllm_rowmath_log(u[v]));
        if (g > b) {
            b = g;
            at = v;
        }
    }
    *best = b;
    return at < 0 ? 0 : at;
}

/*
 * Where many entries lie above hi (dense), whether one does is a coin toss the CPU cannot
 * predict, so the sum masks every entry's mass instead of branching; the copy's one test (on
 * bit patterns, as unsigned distances from the smallest kept one) is predictable, the band
 * being narrow.
 */
int64_t dllm_rowmath_band_ref(const double *y, int64_t n, double lo, double hi, bool dense,
                              double *out_p, int32_t *out_id, uint64_t *above)
{
    uint64_t first = lo > 0.0 ? dllm_rowmath_bits(lo) : 1, hi_bits = dllm_rowmath_bits(hi),
             width = hi_bits - first;
    int64_t m = 0;
    uint64_t mass = 0;
    for (int64_t v = 0; v < n; v++) {
        double x = y[v];
        uint64_t b = dllm_rowmath_bits(x), up = b >= hi_bits;
        if (dense)
            mass += dllm_rowmath_fixed_mass(x) & (0 - up);
        else if (up)
            mass += dllm_rowmath_fixed_mass(x);
        if (b - first < width) {
            out_p[m] = x;
            out_id[m++] = (int32_t)v;
        }
    }
    *above = mass;
    return m;
}

/*
 * Where most entries stay (expect above n / 8), whether one does is a coin toss: then every
 * entry is stored at the next free place (never beyond its own, so within the output) and kept
 * by advancing past it, with no branch; else a branch skips the dropped ones.
 */
int64_t dllm_rowmath_keep_ref(const double *y, int64_t n, double theta, int64_t last, double kth,
                              int64_t expect, double *out_p, int32_t *out_id)
{
    int64_t m = 0;
    if (expect > n / 8) {
        for (int64_t v = 0; v < n; v++) {
            double x = y[v];
            out_p[m] = x;
            out_id[m] = (int32_t)v;
            m += dllm_rowmath_kept(x, v, theta, last, kth);
        }
        return m;
    }
    for (int64_t v = 0; v < n; v++)
        if (dllm_rowmath_kept(y[v], v, theta, last, kth)) {
            out_p[m] = y[v];
            out_id[m++] = (int32_t)v;
        }
    return m;
}
