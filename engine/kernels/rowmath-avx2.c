/*
 * The AVX2 row maths (kernels/rowmath.h): dllm_rowmath_exp and dllm_rowmath_log four lanes at
 * a time with the reference's operations in its order, two vectors (8 elements) a loop
 * iteration, the partial sums kept in two accumulators (lanes 0-3 and 4-7 of each group of 8)
 * and the last n mod 8 elements left to the scalar functions. Built with -mavx2 and
 * -ffp-contract=off: nothing is fused, so the bits are the reference's.
 */
#include "config.h"

#include "kernels/rowmath.h"
#include "kernels/rowmath-const.h"

#include <immintrin.h>
#include <math.h>

#define SET1(x)  _mm256_set1_pd(x)
#define SET1I(x) _mm256_set1_epi64x((long long)(x))

/* dllm_rowmath_exp on four lanes. */
static inline __m256d exp4(__m256d x)
{
    x = _mm256_max_pd(SET1(RM_EXP_MIN), x);
    __m256d kd = _mm256_add_pd(_mm256_mul_pd(x, SET1(RM_LOG2E)), SET1(RM_MAGIC));
    __m256i kb = _mm256_castpd_si256(kd);
    kd = _mm256_sub_pd(kd, SET1(RM_MAGIC));
    __m256d r = _mm256_sub_pd(_mm256_sub_pd(x, _mm256_mul_pd(kd, SET1(RM_LN2_HI))),
                              _mm256_mul_pd(kd, SET1(RM_LN2_LO)));
    __m256d p = SET1(RM_EXP_C13);
    p = _mm256_add_pd(_mm256_mul_pd(p, r), SET1(RM_EXP_C12));
    p = _mm256_add_pd(_mm256_mul_pd(p, r), SET1(RM_EXP_C11));
    p = _mm256_add_pd(_mm256_mul_pd(p, r), SET1(RM_EXP_C10));
    p = _mm256_add_pd(_mm256_mul_pd(p, r), SET1(RM_EXP_C9));
    p = _mm256_add_pd(_mm256_mul_pd(p, r), SET1(RM_EXP_C8));
    p = _mm256_add_pd(_mm256_mul_pd(p, r), SET1(RM_EXP_C7));
    p = _mm256_add_pd(_mm256_mul_pd(p, r), SET1(RM_EXP_C6));
    p = _mm256_add_pd(_mm256_mul_pd(p, r), SET1(RM_EXP_C5));
    p = _mm256_add_pd(_mm256_mul_pd(p, r), SET1(RM_EXP_C4));
    p = _mm256_add_pd(_mm256_mul_pd(p, r), SET1(RM_EXP_C3));
    p = _mm256_add_pd(_mm256_mul_pd(p, r), SET1(RM_EXP_C2));
    p = _mm256_add_pd(_mm256_mul_pd(p, r), SET1(1.0));
    p = _mm256_add_pd(_mm256_mul_pd(p, r), SET1(1.0));
    __m256i sb = _mm256_slli_epi64(
        _mm256_add_epi64(_mm256_sub_epi64(kb, SET1I(RM_MAGIC_BITS)), SET1I(2023)), 52);
    return _mm256_mul_pd(_mm256_mul_pd(p, _mm256_castsi256_pd(sb)), SET1(0x1p-1000));
}

/* dllm_rowmath_log on four lanes. */
static inline __m256d log4(__m256d x)
{
    __m256i b = _mm256_castpd_si256(x);
    __m256d e = _mm256_castsi256_pd(_mm256_or_si256(_mm256_srli_epi64(b, 52), SET1I(RM_2P52_BITS)));
    e = _mm256_sub_pd(_mm256_sub_pd(e, SET1(0x1p52)), SET1(1023.0));
    __m256d m = _mm256_castsi256_pd(
        _mm256_or_si256(_mm256_and_si256(b, SET1I(RM_MANT_BITS)), SET1I(RM_ONE_BITS)));
    __m256d big = _mm256_cmp_pd(m, SET1(RM_SQRT2), _CMP_GT_OQ);
    m = _mm256_blendv_pd(m, _mm256_mul_pd(m, SET1(0.5)), big);
    e = _mm256_blendv_pd(e, _mm256_add_pd(e, SET1(1.0)), big);
    __m256d f = _mm256_sub_pd(m, SET1(1.0));
    __m256d s = _mm256_div_pd(f, _mm256_add_pd(SET1(2.0), f));
    __m256d t = _mm256_add_pd(s, s), z = _mm256_mul_pd(s, s);
    __m256d p = SET1(RM_LOG_C19);
    p = _mm256_add_pd(_mm256_mul_pd(p, z), SET1(RM_LOG_C17));
    p = _mm256_add_pd(_mm256_mul_pd(p, z), SET1(RM_LOG_C15));
    p = _mm256_add_pd(_mm256_mul_pd(p, z), SET1(RM_LOG_C13));
    p = _mm256_add_pd(_mm256_mul_pd(p, z), SET1(RM_LOG_C11));
    p = _mm256_add_pd(_mm256_mul_pd(p, z), SET1(RM_LOG_C9));
    p = _mm256_add_pd(_mm256_mul_pd(p, z), SET1(RM_LOG_C7));
    p = _mm256_add_pd(_mm256_mul_pd(p, z), SET1(RM_LOG_C5));
    p = _mm256_add_pd(_mm256_mul_pd(p, z), SET1(RM_LOG_C3));
    __m256d lm = _mm256_add_pd(t, _mm256_mul_pd(_mm256_mul_pd(t, z), p));
    __m256d r = _mm256_add_pd(_mm256_mul_pd(e, SET1(RM_LN2_HI)),
                              _mm256_add_pd(_mm256_mul_pd(e, SET1(RM_LN2_LO)), lm));
    __m256d zero = _mm256_cmp_pd(x, _mm256_setzero_pd(), _CMP_EQ_OQ);
    return _mm256_blendv_pd(r, SET1(-INFINITY), zero);
}

/* Stores the two accumulators as the partial sums s[0 .. 7]. */
static inline void spill(__m256d lo, __m256d hi, double s[8])
{
    _mm256_storeu_pd(s, lo);
    _mm256_storeu_pd(s + 4, hi);
}

/* Four floats widened to doubles. */
static inline __m256d load4f(const float *x)
{
    return _mm256_cvtps_pd(_mm_loadu_ps(x));
}

float dllm_rowmath_max_avx2(const float *x, int64_t n)
{
    __m256 a = _mm256_set1_ps(-INFINITY), b = a;
    int64_t v = 0;
    for (; v + 16 <= n; v += 16) {
        a = _mm256_max_ps(_mm256_loadu_ps(x + v), a); /* MAXPS returns a when x is NaN */
        b = _mm256_max_ps(_mm256_loadu_ps(x + v + 8), b);
    }
    float lanes[8], m = -INFINITY;
    _mm256_storeu_ps(lanes, _mm256_max_ps(a, b));
    for (int i = 0; i < 8; i++)
        m = lanes[i] > m ? lanes[i] : m;
    for (; v < n; v++)
        m = x[v] > m ? x[v] : m;
    return m;
}

double dllm_rowmath_exp_avx2(const float *x, int64_t n, double shift, double scale, double *y)
{
    __m256d acc0 = _mm256_setzero_pd(), acc1 = acc0, sh = SET1(shift), sc = SET1(scale);
    int64_t v = 0;
    for (; v + 8 <= n; v += 8) {
        __m256d y0 = exp4(_mm256_mul_pd(_mm256_sub_pd(load4f(x + v), sh), sc));
        __m256d y1 = exp4(_mm256_mul_pd(_mm256_sub_pd(load4f(x + v + 4), sh), sc));
        if (y) {
            _mm256_storeu_pd(y + v, y0);
            _mm256_storeu_pd(y + v + 4, y1);
        }
        acc0 = _mm256_add_pd(acc0, y0);
        acc1 = _mm256_add_pd(acc1, y1);
    }
    double s[8];
    spill(acc0, acc1, s);
    for (; v < n; v++) {
        double e = dllm_rowmath_exp(((double)x[v] - shift) * scale);
        if (y)
            y[v] = e;
        s[v & 7] += e;
    }
    return dllm_rowmath_combine(s);
}

double dllm_rowmath_sum_avx2(const double *y, int64_t n)
{
    __m256d acc0 = _mm256_setzero_pd(), acc1 = acc0;
    int64_t v = 0;
    for (; v + 8 <= n; v += 8) {
        acc0 = _mm256_add_pd(acc0, _mm256_loadu_pd(y + v));
        acc1 = _mm256_add_pd(acc1, _mm256_loadu_pd(y + v + 4));
    }
    double s[8];
    spill(acc0, acc1, s);
    for (; v < n; v++)
        s[v & 7] += y[v];
    return dllm_rowmath_combine(s);
}

/* One cut-off's accumulation over eight elements: the sums of y0 and y1 >= c, and the count. */
struct cut_acc {
    __m256d lo, hi, c;
    __m256i cnt; /* minus the number of lanes >= c */
};

static inline void cut_add(struct cut_acc *a, __m256d y0, __m256d y1)
{
    __m256d m0 = _mm256_cmp_pd(y0, a->c, _CMP_GE_OQ), m1 = _mm256_cmp_pd(y1, a->c, _CMP_GE_OQ);
    a->lo = _mm256_add_pd(a->lo, _mm256_and_pd(m0, y0));
    a->hi = _mm256_add_pd(a->hi, _mm256_and_pd(m1, y1));
    a->cnt = _mm256_add_epi64(a->cnt,
                              _mm256_add_epi64(_mm256_castpd_si256(m0), _mm256_castpd_si256(m1)));
}

/* The sum and count of one cut-off: the accumulators, then the tail from v in scalar code. */
static inline void cut_finish(const struct cut_acc *a, const double *y, int64_t v, int64_t n,
                              double c, double *sum, int64_t *count)
{
    double s[8];
    long long c4[4];
    spill(a->lo, a->hi, s);
    _mm256_storeu_si256((__m256i *)c4, a->cnt);
    int64_t k = -(c4[0] + c4[1] + c4[2] + c4[3]);
    for (; v < n; v++) {
        s[v & 7] += y[v] >= c ? y[v] : 0.0;
        k += y[v] >= c;
    }
    *sum = dllm_rowmath_combine(s);
    *count = k;
}

void dllm_rowmath_sum_from_avx2(const double *y, int64_t n, const double *c, double *sum,
                                int64_t *count)
{
    _Static_assert(DLLM_ROWMATH_CUTS == 3, "one accumulator set per cut-off below");
    const __m256d z = _mm256_setzero_pd();
    const __m256i zi = _mm256_setzero_si256();
    struct cut_acc a0 = {z, z, SET1(c[0]), zi}, a1 = {z, z, SET1(c[1]), zi},
                   a2 = {z, z, SET1(c[2]), zi};
    int64_t v = 0;
    for (; v + 8 <= n; v += 8) {
        __m256d y0 = _mm256_loadu_pd(y + v), y1 = _mm256_loadu_pd(y + v + 4);
        cut_add(&a0, y0, y1);
        cut_add(&a1, y0, y1);
        cut_add(&a2, y0, y1);
    }
    cut_finish(&a0, y, v, n, c[0], &sum[0], &count[0]);
    cut_finish(&a1, y, v, n, c[1], &sum[1], &count[1]);
    cut_finish(&a2, y, v, n, c[2], &sum[2], &count[2]);
}

void dllm_rowmath_scale_avx2(double *y, int64_t n, double a)
{
    __m256d av = SET1(a);
    int64_t v = 0;
    for (; v + 4 <= n; v += 4)
        _mm256_storeu_pd(y + v, _mm256_mul_pd(_mm256_loadu_pd(y + v), av));
    for (; v < n; v++)
        y[v] *= a;
}

double dllm_rowmath_neg_entropy_avx2(const double *p, int64_t n)
{
    __m256d acc0 = _mm256_setzero_pd(), acc1 = acc0, tiny = SET1(1e-10), zero = acc0;
    int64_t v = 0;
    for (; v + 8 <= n; v += 8) {
        __m256d p0 = _mm256_loadu_pd(p + v), p1 = _mm256_loadu_pd(p + v + 4);
        /* Eight zeros add nothing: after top-p most of a row is zero. */
        if (_mm256_movemask_pd(_mm256_cmp_pd(_mm256_or_pd(p0, p1), zero, _CMP_NEQ_UQ)) == 0)
            continue;
        acc0 = _mm256_add_pd(acc0, _mm256_mul_pd(p0, log4(_mm256_add_pd(p0, tiny))));
        acc1 = _mm256_add_pd(acc1, _mm256_mul_pd(p1, log4(_mm256_add_pd(p1, tiny))));
    }
    double s[8];
    spill(acc0, acc1, s);
    for (; v < n; v++)
        if (p[v] > 0.0)
            s[v & 7] += p[v] * dllm_rowmath_log(p[v] + 1e-10);
    return dllm_rowmath_combine(s);
}

/* g = l - t ln(-ln u) on four lanes. */
static inline __m256d gumbel4(const float *l, const double *u, __m256d t)
{
    __m256d w = _mm256_xor_pd(log4(_mm256_loadu_pd(u)), SET1(-0.0));
    return _mm256_sub_pd(load4f(l), _mm256_mul_pd(t, log4(w)));
}

int64_t dllm_rowmath_gumbel_argmax_avx2(const float *l, const double *u, int64_t n, double t,
                                        double *best)
{
    /* Per lane the first largest g and its index; lanes see their indices in order. */
    __m256d b0 = SET1(-INFINITY), b1 = b0, tv = SET1(t);
    __m256i i0 = SET1I(-1), i1 = i0, idx = _mm256_setr_epi64x(0, 1, 2, 3), step = SET1I(8);
    int64_t v = 0;
    for (; v + 8 <= n; v += 8) {
        __m256d g0 = gumbel4(l + v, u + v, tv), g1 = gumbel4(l + v + 4, u + v + 4, tv);
        __m256d m0 = _mm256_cmp_pd(g0, b0, _CMP_GT_OQ), m1 = _mm256_cmp_pd(g1, b1, _CMP_GT_OQ);
        b0 = _mm256_blendv_pd(b0, g0, m0);
        b1 = _mm256_blendv_pd(b1, g1, m1);
        i0 = _mm256_castpd_si256(
            _mm256_blendv_pd(_mm256_castsi256_pd(i0), _mm256_castsi256_pd(idx), m0));
        i1 = _mm256_castpd_si256(_mm256_blendv_pd(
            _mm256_castsi256_pd(i1), _mm256_castsi256_pd(_mm256_add_epi64(idx, SET1I(4))), m1));
        idx = _mm256_add_epi64(idx, step);
    }
    double bl[8];
    long long il[8];
    _mm256_storeu_pd(bl, b0);
    _mm256_storeu_pd(bl + 4, b1);
    _mm256_storeu_si256((__m256i *)il, i0);
    _mm256_storeu_si256((__m256i *)(il + 4), i1);
    double b = -INFINITY;
    int64_t at = -1;
    for (int k = 0; k < 8; k++)
        if (il[k] >= 0 && (bl[k] > b || (bl[k] == b && il[k] < at))) {
            b = bl[k];
            at = il[k];
        }
    for (; v < n; v++) {
        double g = (double)l[v] - t * dllm_rowmath_log(-dllm_rowmath_log(u[v]));
        if (g > b) {
            b = g;
            at = v;
        }
    }
    *best = b;
    return at < 0 ? 0 : at;
}
