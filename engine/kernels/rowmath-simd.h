/*
 * The SIMD row maths (kernels/rowmath.h), written once over a small vector interface. Each
 * rowmath-<isa>.c defines that interface (vd: RM_LANES doubles, vl: RM_LANES 64-bit integers,
 * vm: a lane mask, vf: 2 RM_LANES floats, and the operations below) and then includes this
 * file, which defines the variant's entry points dllm_rowmath_<fn>_<isa>.
 *
 * Everything follows the reference's operations in its order, with no fused multiply-add (the
 * files are built with -ffp-contract=off), so the bits are the reference's. The reference's 8
 * partial sums (element v into partial v mod 8) are RM_ACCS = 8 / RM_LANES accumulators: a
 * group of 8 consecutive elements is RM_ACCS vectors, the i-th added to accumulator i. Loops
 * take two groups an iteration where the work per element is long (exp, log), so that two
 * independent chains overlap; the last n mod 8 elements go to the scalar functions.
 */
#include "kernels/rowmath-const.h"

#include <math.h>

#define RM_ACCS (8 / RM_LANES)

#define RM_CAT2(a, b) a##_##b
#define RM_CAT(a, b)  RM_CAT2(a, b)
#define RM_NAME(fn)   RM_CAT(fn, RM_ISA)

/* Loops over the RM_ACCS vectors of a group are unrolled, so accumulators stay in registers. */
#define RM_UNROLL _Pragma("GCC unroll 8")

#define SET1(x)  vd_set1(x)
#define SET1I(x) vl_set1((long long)(x))

/* dllm_rowmath_exp on every lane. */
RM_INLINE vd vd_exp(vd x)
{
    x = vd_max(SET1(RM_EXP_MIN), x);
    vd kd = vd_add(vd_mul(x, SET1(RM_LOG2E)), SET1(RM_MAGIC));
    vl kb = vd_bits(kd);
    kd = vd_sub(kd, SET1(RM_MAGIC));
    vd r = vd_sub(vd_sub(x, vd_mul(kd, SET1(RM_LN2_HI))), vd_mul(kd, SET1(RM_LN2_LO)));
    vd p = SET1(RM_EXP_C13);
    p = vd_add(vd_mul(p, r), SET1(RM_EXP_C12));
    p = vd_add(vd_mul(p, r), SET1(RM_EXP_C11));
    p = vd_add(vd_mul(p, r), SET1(RM_EXP_C10));
    p = vd_add(vd_mul(p, r), SET1(RM_EXP_C9));
    p = vd_add(vd_mul(p, r), SET1(RM_EXP_C8));
    p = vd_add(vd_mul(p, r), SET1(RM_EXP_C7));
    p = vd_add(vd_mul(p, r), SET1(RM_EXP_C6));
    p = vd_add(vd_mul(p, r), SET1(RM_EXP_C5));
    p = vd_add(vd_mul(p, r), SET1(RM_EXP_C4));
    p = vd_add(vd_mul(p, r), SET1(RM_EXP_C3));
    p = vd_add(vd_mul(p, r), SET1(RM_EXP_C2));
    p = vd_add(vd_mul(p, r), SET1(1.0));
    p = vd_add(vd_mul(p, r), SET1(1.0));
    vl sb = vl_slli(vl_add(vl_sub(kb, SET1I(RM_MAGIC_BITS)), SET1I(2023)), 52);
    return vd_mul(vd_mul(p, vd_from_bits(sb)), SET1(0x1p-1000));
}

/* dllm_rowmath_log on every lane. */
RM_INLINE vd vd_log(vd x)
{
    vl b = vd_bits(x);
    vd e = vd_from_bits(vl_or(vl_srli(b, 52), SET1I(RM_2P52_BITS)));
    e = vd_sub(vd_sub(e, SET1(0x1p52)), SET1(1023.0));
    vd m = vd_from_bits(vl_or(vl_and(b, SET1I(RM_MANT_BITS)), SET1I(RM_ONE_BITS)));
    vm big = vd_gt(m, SET1(RM_SQRT2));
    m = vd_select(big, vd_mul(m, SET1(0.5)), m);
    e = vd_select(big, vd_add(e, SET1(1.0)), e);
    vd f = vd_sub(m, SET1(1.0));
    vd s = vd_div(f, vd_add(SET1(2.0), f));
    vd t = vd_add(s, s), z = vd_mul(s, s);
    vd p = SET1(RM_LOG_C19);
    p = vd_add(vd_mul(p, z), SET1(RM_LOG_C17));
    p = vd_add(vd_mul(p, z), SET1(RM_LOG_C15));
    p = vd_add(vd_mul(p, z), SET1(RM_LOG_C13));
    p = vd_add(vd_mul(p, z), SET1(RM_LOG_C11));
    p = vd_add(vd_mul(p, z), SET1(RM_LOG_C9));
    p = vd_add(vd_mul(p, z), SET1(RM_LOG_C7));
    p = vd_add(vd_mul(p, z), SET1(RM_LOG_C5));
    p = vd_add(vd_mul(p, z), SET1(RM_LOG_C3));
    vd lm = vd_add(t, vd_mul(vd_mul(t, z), p));
    vd r = vd_add(vd_mul(e, SET1(RM_LN2_HI)), vd_add(vd_mul(e, SET1(RM_LN2_LO)), lm));
    return vd_select(vd_eq(x, vd_zero()), SET1(-INFINITY), r);
}

/* The accumulators of one sum, as the reference's 8 partial sums. */
struct partials {
    vd acc[RM_ACCS];
};

RM_INLINE struct partials partials_zero(void)
{
    struct partials s;
    RM_UNROLL
    for (int i = 0; i < RM_ACCS; i++)
        s.acc[i] = vd_zero();
    return s;
}

/* Stores the accumulators as the partial sums s[0 .. 7]. */
RM_INLINE void partials_spill(const struct partials *a, double s[8])
{
    RM_UNROLL
    for (int i = 0; i < RM_ACCS; i++)
        vd_storeu(s + i * RM_LANES, a->acc[i]);
}

float RM_NAME(dllm_rowmath_max)(const float *x, int64_t n)
{
    vf a = vf_set1(-INFINITY), b = a;
    int64_t v = 0;
    for (; v + 4 * RM_LANES <= n; v += 4 * RM_LANES) {
        a = vf_max(vf_loadu(x + v), a); /* MAXPS returns a when x is NaN */
        b = vf_max(vf_loadu(x + v + 2 * RM_LANES), b);
    }
    float lanes[2 * RM_LANES], m = -INFINITY;
    vf_storeu(lanes, vf_max(a, b));
    for (int i = 0; i < 2 * RM_LANES; i++)
        m = lanes[i] > m ? lanes[i] : m;
    for (; v < n; v++)
        m = x[v] > m ? x[v] : m;
    return m;
}

/* exp over the group of 8 at x + v, stored at y + v unless y is NULL, added to s. */
RM_INLINE void exp_group(const float *x, int64_t v, vd sh, vd sc, double *y, struct partials *s)
{
    RM_UNROLL
    for (int i = 0; i < RM_ACCS; i++) {
        vd e = vd_exp(vd_mul(vd_sub(vd_loadf(x + v + i * RM_LANES), sh), sc));
        if (y)
            vd_storeu(y + v + i * RM_LANES, e);
        s->acc[i] = vd_add(s->acc[i], e);
    }
}

double RM_NAME(dllm_rowmath_exp)(const float *x, int64_t n, double shift, double scale, double *y)
{
    struct partials acc = partials_zero();
    vd sh = SET1(shift), sc = SET1(scale);
    int64_t v = 0;
    for (; v + 16 <= n; v += 16) {
        exp_group(x, v, sh, sc, y, &acc);
        exp_group(x, v + 8, sh, sc, y, &acc);
    }
    for (; v + 8 <= n; v += 8)
        exp_group(x, v, sh, sc, y, &acc);
    double s[8];
    partials_spill(&acc, s);
    for (; v < n; v++) {
        double e = dllm_rowmath_exp(((double)x[v] - shift) * scale);
        if (y)
            y[v] = e;
        s[v & 7] += e;
    }
    return dllm_rowmath_combine(s);
}

double RM_NAME(dllm_rowmath_sum)(const double *y, int64_t n)
{
    struct partials acc = partials_zero();
    int64_t v = 0;
    for (; v + 8 <= n; v += 8) {
        RM_UNROLL
        for (int i = 0; i < RM_ACCS; i++)
            acc.acc[i] = vd_add(acc.acc[i], vd_loadu(y + v + i * RM_LANES));
    }
    double s[8];
    partials_spill(&acc, s);
    for (; v < n; v++)
        s[v & 7] += y[v];
    return dllm_rowmath_combine(s);
}

/* One cut-off's accumulation: the sums of the elements >= c, and per lane their count. */
struct cut_acc {
    struct partials sum;
    vd c;
    vl count;
};

/* Adds the group of 8 elements g (as RM_ACCS vectors) to a. */
RM_INLINE void cut_add(struct cut_acc *a, const vd g[RM_ACCS])
{
    RM_UNROLL
    for (int i = 0; i < RM_ACCS; i++) {
        vm ge = vd_ge(g[i], a->c);
        a->sum.acc[i] = vd_add(a->sum.acc[i], vd_keep(ge, g[i]));
        a->count = vl_count(a->count, ge);
    }
}

/* The sum and count of one cut-off: the accumulators, then the tail from v in scalar code. */
RM_INLINE void cut_finish(const struct cut_acc *a, const double *y, int64_t v, int64_t n, double c,
                          double *sum, int64_t *count)
{
    double s[8];
    long long k_lanes[RM_LANES];
    partials_spill(&a->sum, s);
    vl_storeu(k_lanes, a->count);
    int64_t k = 0;
    for (int i = 0; i < RM_LANES; i++)
        k += k_lanes[i];
    for (; v < n; v++) {
        s[v & 7] += y[v] >= c ? y[v] : 0.0;
        k += y[v] >= c;
    }
    *sum = dllm_rowmath_combine(s);
    *count = k;
}

void RM_NAME(dllm_rowmath_sum_from)(const double *y, int64_t n, const double *c, double *sum,
                                    int64_t *count)
{
    /* One named accumulator set per cut-off: the compiler keeps them in registers. */
    _Static_assert(DLLM_ROWMATH_CUTS == 3, "one accumulator set per cut-off below");
    struct cut_acc a0 = {partials_zero(), SET1(c[0]), SET1I(0)},
                   a1 = {partials_zero(), SET1(c[1]), SET1I(0)},
                   a2 = {partials_zero(), SET1(c[2]), SET1I(0)};
    int64_t v = 0;
    for (; v + 8 <= n; v += 8) {
        vd g[RM_ACCS];
        RM_UNROLL
        for (int i = 0; i < RM_ACCS; i++)
            g[i] = vd_loadu(y + v + i * RM_LANES);
        cut_add(&a0, g);
        cut_add(&a1, g);
        cut_add(&a2, g);
    }
    cut_finish(&a0, y, v, n, c[0], &sum[0], &count[0]);
    cut_finish(&a1, y, v, n, c[1], &sum[1], &count[1]);
    cut_finish(&a2, y, v, n, c[2], &sum[2], &count[2]);
}

void RM_NAME(dllm_rowmath_scale)(double *y, int64_t n, double a)
{
    vd av = SET1(a);
    int64_t v = 0;
    for (; v + RM_LANES <= n; v += RM_LANES)
        vd_storeu(y + v, vd_mul(vd_loadu(y + v), av));
    for (; v < n; v++)
        y[v] *= a;
}

/* p ln(p + 1e-10) over the group of 8 at p + v, added to s; a group of zeros adds nothing. */
RM_INLINE void entropy_group(const double *p, int64_t v, struct partials *s)
{
    vd g[RM_ACCS], any = vd_zero();
    RM_UNROLL
    for (int i = 0; i < RM_ACCS; i++) {
        g[i] = vd_loadu(p + v + i * RM_LANES);
        any = vd_or(any, g[i]);
    }
    if (vm_none(vd_ne(any, vd_zero()))) /* after top-p most of a row is zero */
        return;
    RM_UNROLL
    for (int i = 0; i < RM_ACCS; i++)
        s->acc[i] = vd_add(s->acc[i], vd_mul(g[i], vd_log(vd_add(g[i], SET1(1e-10)))));
}

double RM_NAME(dllm_rowmath_neg_entropy)(const double *p, int64_t n)
{
    struct partials acc = partials_zero();
    int64_t v = 0;
    for (; v + 16 <= n; v += 16) {
        entropy_group(p, v, &acc);
        entropy_group(p, v + 8, &acc);
    }
    for (; v + 8 <= n; v += 8)
        entropy_group(p, v, &acc);
    double s[8];
    partials_spill(&acc, s);
    for (; v < n; v++)
        if (p[v] > 0.0)
            s[v & 7] += p[v] * dllm_rowmath_log(p[v] + 1e-10);
    return dllm_rowmath_combine(s);
}

int64_t RM_NAME(dllm_rowmath_gumbel_argmax)(const float *l, const double *u, int64_t n, double t,
                                            double *best)
{
    /* Per lane of each accumulator the first largest g and its index, seen in index order. */
    vd b[RM_ACCS], tv = SET1(t);
    vl at[RM_ACCS], idx[RM_ACCS];
    RM_UNROLL
    for (int i = 0; i < RM_ACCS; i++) {
        b[i] = SET1(-INFINITY);
        at[i] = SET1I(-1);
        idx[i] = vl_add(vl_iota(), SET1I(i * RM_LANES));
    }
    int64_t v = 0;
    for (; v + 8 <= n; v += 8) {
        RM_UNROLL
        for (int i = 0; i < RM_ACCS; i++) {
            int64_t w = v + i * RM_LANES;
            vd noise = vd_mul(tv, vd_log(vd_neg(vd_log(vd_loadu(u + w)))));
            vd g = vd_sub(vd_loadf(l + w), noise);
            vm gt = vd_gt(g, b[i]);
            b[i] = vd_select(gt, g, b[i]);
            at[i] = vl_select(gt, idx[i], at[i]);
            idx[i] = vl_add(idx[i], SET1I(8));
        }
    }
    double bl[8];
    long long il[8];
    RM_UNROLL
    for (int i = 0; i < RM_ACCS; i++) {
        vd_storeu(bl + i * RM_LANES, b[i]);
        vl_storeu(il + i * RM_LANES, at[i]);
    }
    double bv = -INFINITY;
    int64_t a = -1;
    for (int k = 0; k < 8; k++)
        if (il[k] >= 0 && (bl[k] > bv || (bl[k] == bv && il[k] < a))) {
            bv = bl[k];
            a = il[k];
        }
    for (; v < n; v++) {
        double g = (double)l[v] - t * dllm_rowmath_log(-dllm_rowmath_log(u[v]));
        if (g > bv) {
            bv = g;
            a = v;
        }
    }
    *best = bv;
    return a < 0 ? 0 : a;
}
