/*
 * Tests of the samplers' row maths (engine/kernels/rowmath.h): dllm_rowmath_exp and
 * dllm_rowmath_log against libm (another implementation) within a named ulp tolerance, their
 * special values, the reference kernels against direct computations, and every variant this
 * CPU runs against the reference bit for bit, on lengths with and without a tail.
 */
#include "config.h"

#include "fixtures.h"
#include "kernels/rowmath.h"
#include "random_data.h"

#include <check.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* The polynomials' error bound against libm, which is itself within 1 ulp. */
#define ULP_TOL 3

/* Distance in units in the last place between two finite doubles of the same sign. */
static uint64_t ulps(double a, double b)
{
    int64_t x, y;
    memcpy(&x, &a, sizeof x);
    memcpy(&y, &b, sizeof y);
    return x > y ? (uint64_t)(x - y) : (uint64_t)(y - x);
}

/* ---- the scalar functions ---------------------------------------------------------------- */

START_TEST(test_exp_accuracy)
{
    uint64_t seed = 1;
    uint64_t worst = 0;
    double worst_x = 0.0;
    for (int i = 0; i < 200000; i++) {
        /* half over the whole domain, half over [-1, 0] where most softmax terms are */
        double x = i % 2 ? -745.0 * rng_uniform(&seed) : -rng_uniform(&seed);
        uint64_t d = ulps(dllm_rowmath_exp(x), exp(x));
        if (d > worst) {
            worst = d;
            worst_x = x;
        }
    }
    printf("exp: worst %llu ulp (at %.17g)\n", (unsigned long long)worst, worst_x);
    ck_assert_msg(worst <= ULP_TOL, "exp off by %llu ulp at %.17g", (unsigned long long)worst,
                  worst_x);
}
END_TEST

START_TEST(test_log_accuracy)
{
    uint64_t seed = 2;
    uint64_t worst = 0;
    double worst_x = 0.0;
    for (int i = 0; i < 200000; i++) {
        double x;
        if (i % 3 == 0) {
            x = 1.0 + (rng_uniform(&seed) - 0.5) * 1e-6; /* near 1, where ln x is small */
        } else if (i % 3 == 1) {
            x = rng_uniform(&seed) + 0x1p-60; /* the uniform draws of the Gumbel noise */
        } else {
            /* any positive normal double: a random exponent and mantissa */
            x = dllm_rowmath_from_bits((rng_next(&seed) & UINT64_C(0x000fffffffffffff)) |
                                       ((1 + rng_next(&seed) % 2046) << 52));
        }
        double want = log(x), got = dllm_rowmath_log(x);
        /* ulps are meaningless across a sign change: ln x of either sign rounds near 0 only */
        uint64_t d = (want < 0) == (got < 0) ? ulps(got, want) : UINT64_MAX;
        if (want == 0.0 && got == 0.0)
            d = 0;
        if (d > worst) {
            worst = d;
            worst_x = x;
        }
    }
    printf("log: worst %llu ulp (at %.17g)\n", (unsigned long long)worst, worst_x);
    ck_assert_msg(worst <= ULP_TOL, "log off by %llu ulp at %.17g", (unsigned long long)worst,
                  worst_x);
}
END_TEST

/* Special values: what the samplers rely on at the edges of the domains. */
START_TEST(test_specials)
{
    ck_assert(dllm_rowmath_exp(0.0) == 1.0);
    ck_assert(dllm_rowmath_exp(-0.0) == 1.0);
    ck_assert(dllm_rowmath_exp(-INFINITY) == 0.0);
    ck_assert(dllm_rowmath_exp(-746.0) == 0.0);
    ck_assert(dllm_rowmath_exp(-1e300) == 0.0);
    ck_assert(isnan(dllm_rowmath_exp(NAN)));
    /* a subnormal result: e^-740 = 4.2e-322 */
    ck_assert_double_eq_tol(dllm_rowmath_exp(-740.0), exp(-740.0), 1e-323);
    ck_assert(dllm_rowmath_log(1.0) == 0.0);
    ck_assert(dllm_rowmath_log(0.0) == -INFINITY);
    ck_assert(dllm_rowmath_log(-0.0) == -INFINITY);
    ck_assert(dllm_rowmath_log(2.0) == M_LN2);
    ck_assert(dllm_rowmath_log(DBL_MIN) == log(DBL_MIN));
    ck_assert(ulps(dllm_rowmath_log(DBL_MAX), log(DBL_MAX)) <= ULP_TOL);
    const double s[8] = {1, 2, 4, 8, 16, 32, 64, 128};
    ck_assert(dllm_rowmath_combine(s) == 255.0);
}
END_TEST

/* ---- the reference kernels --------------------------------------------------------------- */

/* The reference kernels on small rows, against direct computation. */
START_TEST(test_reference)
{
    size_t n_variants;
    const struct dllm_rowmath *ref = dllm_rowmath_all(&n_variants);
    ck_assert_str_eq(ref->name, "ref");
    ck_assert(dllm_rowmath_usable(ref));

    const float x[5] = {1.0f, NAN, 3.0f, -INFINITY, 2.0f};
    ck_assert(ref->max(x, 5) == 3.0f);
    ck_assert(ref->max(x, 0) == -INFINITY);
    ck_assert(ref->max(x + 3, 1) == -INFINITY);

    const float l[3] = {0.0f, 1.0f, 2.0f};
    double y[3];
    double sum = ref->exp(l, 3, 2.0, 1.0, y);
    ck_assert_double_eq_tol(y[0], exp(-2.0), 1e-15);
    ck_assert_double_eq_tol(y[1], exp(-1.0), 1e-15);
    ck_assert(y[2] == 1.0);
    ck_assert_double_eq_tol(sum, 1.0 + exp(-1.0) + exp(-2.0), 1e-15);
    ck_assert(ref->exp(l, 3, 2.0, 1.0, NULL) == sum);
    ck_assert_double_eq_tol(ref->exp(l, 3, 2.0, 0.5, y), 1.0 + exp(-0.5) + exp(-1.0), 1e-15);

    const double p[4] = {0.5, 0.25, 0.25, 0.0};
    ck_assert(ref->sum(p, 4) == 1.0);
    const double c[DLLM_ROWMATH_CUTS] = {0.3, 0.25, 0.0};
    double sums[DLLM_ROWMATH_CUTS];
    int64_t counts[DLLM_ROWMATH_CUTS];
    ref->sum_from(p, 4, c, sums, counts);
    ck_assert(sums[0] == 0.5 && counts[0] == 1);
    ck_assert(sums[1] == 1.0 && counts[1] == 3);
    ck_assert(sums[2] == 1.0 && counts[2] == 4);
    /* python3: 0.5*log(0.5+1e-10) + 2*0.25*log(0.25+1e-10) = -1.0397207705399178 */
    ck_assert_double_eq_tol(ref->neg_entropy(p, 4), -1.0397207705399178, 1e-12);
    double q[3] = {1.0, 2.0, 3.0};
    ref->scale(q, 3, 0.5);
    ck_assert(q[0] == 0.5 && q[1] == 1.0 && q[2] == 1.5);
}
END_TEST

/*
 * Gumbel argmax: g = l - t ln(-ln u). With u = e^-1 the noise is 0; with u = e^-e it is -t; a
 * draw of exactly 1 gives +inf. Ties go to the first index; a row of -inf gives 0.
 */
START_TEST(test_gumbel_reference)
{
    size_t n_variants;
    const struct dllm_rowmath *ref = dllm_rowmath_all(&n_variants);
    const float l[4] = {1.0f, 2.0f, 2.0f, 1.5f};
    const double e1 = exp(-1.0), ee = exp(-M_E);
    double best;
    const double u0[4] = {e1, e1, e1, e1};
    ck_assert_int_eq(ref->gumbel_argmax(l, u0, 4, 1.0, &best), 1);
    ck_assert_double_eq_tol(best, 2.0, 1e-15);
    const double u1[4] = {e1, ee, e1, e1};
    ck_assert_int_eq(ref->gumbel_argmax(l, u1, 4, 1.0, &best), 2);
    const double u2[4] = {e1, ee, ee, e1};
    ck_assert_int_eq(ref->gumbel_argmax(l, u2, 4, 1.0, &best), 3);
    ck_assert_double_eq_tol(best, 1.5, 1e-15);
    const double u3[4] = {e1, e1, e1, 1.0};
    ck_assert_int_eq(ref->gumbel_argmax(l, u3, 4, 1.0, &best), 3);
    ck_assert(best == INFINITY);
    const float none[3] = {-INFINITY, -INFINITY, -INFINITY};
    ck_assert_int_eq(ref->gumbel_argmax(none, u0, 3, 1.0, &best), 0);
    ck_assert(best == -INFINITY);
}
END_TEST

/* ---- every variant against the reference -------------------------------------------------- */

/*
 * Row lengths: empty, shorter than a vector, tails of every size after one and after two
 * groups of 8 (loops take two groups at a time), and long rows.
 */
static const int64_t lengths[] = {0, 1, 3, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 1000, 4099, 4111};

/* Random logits of standard deviation about 3, with -inf and equal values sprinkled in. */
static void random_logits(float *x, int64_t n, uint64_t seed)
{
    for (int64_t v = 0; v < n; v++) {
        double u = rng_uniform(&seed);
        x[v] = (float)(6.0 * (u + rng_uniform(&seed) + rng_uniform(&seed) - 1.5));
        if (u < 0.03)
            x[v] = -INFINITY;
        else if (u < 0.06)
            x[v] = 1.0f;
    }
}

static bool same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/*
 * The band and keep filters of rm against the reference's, on the probabilities y (a few
 * set equal, so that ties at theta occur): counts, values and indices, and the mass above;
 * the reference's two paths (the dense and expect hints) against each other.
 */
static void check_filters(const struct dllm_rowmath *ref, const struct dllm_rowmath *rm, double *y,
                          int64_t n)
{
    if (n == 0)
        return;
    for (int64_t v = 3; v < n; v += 7)
        y[v] = y[n / 2];
    double *pa = malloc((size_t)n * sizeof *pa), *pb = malloc((size_t)n * sizeof *pb);
    int32_t *ia = malloc((size_t)n * sizeof *ia), *ib = malloc((size_t)n * sizeof *ib);
    ck_assert(pa && pb && ia && ib);
    const double bounds[][2] = {{0.0, 2.0}, {0.0, y[n / 2]}, {y[n / 3], y[n / 2]}, {1e-4, 1e-3}};
    for (size_t b = 0; b < sizeof bounds / sizeof bounds[0]; b++) {
        double lo = bounds[b][0], hi = bounds[b][1];
        if (!(lo < hi))
            continue;
        uint64_t above_a, above_b;
        int64_t ka = ref->band(y, n, lo, hi, false, pa, ia, &above_a);
        /* the reference against the definition, by value rather than by bit pattern */
        int64_t want = 0;
        uint64_t want_above = 0;
        for (int64_t v = 0; v < n; v++) {
            if (y[v] > 0.0 && y[v] >= lo && y[v] < hi)
                ck_assert(want < ka && ia[want] == v && pa[want++] == y[v]);
            if (y[v] >= hi)
                want_above += (uint64_t)(y[v] * 4611686018427387904.0); /* 2^62 */
        }
        ck_assert(want == ka && want_above == above_a);
        /* the reference's dense path, then rm with either hint, against that */
        for (int t = 0; t < 3; t++) {
            const struct dllm_rowmath *other = t == 0 ? ref : rm;
            int64_t kb = other->band(y, n, lo, hi, t != 1, pb, ib, &above_b);
            ck_assert_msg(ka == kb && above_a == above_b, "%s band n=%lld [%g, %g) dense %d",
                          other->name, (long long)n, lo, hi, t != 1);
            ck_assert(memcmp(pa, pb, (size_t)ka * sizeof *pa) == 0);
            ck_assert(memcmp(ia, ib, (size_t)ka * sizeof *ia) == 0);
        }
    }
    const double theta = y[n / 2], kths[] = {0.0, y[n / 3]};
    const int64_t lasts[] = {-1, n / 2, n};
    for (size_t k = 0; k < sizeof kths / sizeof kths[0]; k++)
        for (size_t l = 0; l < sizeof lasts / sizeof lasts[0]; l++) {
            int64_t ka = ref->keep(y, n, theta, lasts[l], kths[k], 0, pa, ia), want = 0;
            for (int64_t v = 0; v < n; v++) {
                bool ranks = y[v] > theta || (y[v] == theta && v <= lasts[l]);
                if (y[v] > 0.0 && ranks && y[v] >= kths[k])
                    ck_assert(want < ka && ia[want] == v && pa[want++] == y[v]);
            }
            ck_assert_int_eq(want, ka);
            ck_assert_int_eq(ref->keep(y, n, theta, lasts[l], kths[k], n, pb, ib), ka);
            int64_t kb = rm->keep(y, n, theta, lasts[l], kths[k], n, pb, ib);
            ck_assert_msg(ka == kb, "%s keep n=%lld: %lld vs %lld", rm->name, (long long)n,
                          (long long)ka, (long long)kb);
            ck_assert(memcmp(pa, pb, (size_t)ka * sizeof *pa) == 0);
            ck_assert(memcmp(ia, ib, (size_t)ka * sizeof *ia) == 0);
        }
    free(pa);
    free(pb);
    free(ia);
    free(ib);
}

START_TEST(test_variants)
{
    size_t n_variants;
    const struct dllm_rowmath *all = dllm_rowmath_all(&n_variants), *ref = &all[0];
    int64_t n = lengths[_i];
    float *x = malloc((size_t)(n + 1) * sizeof *x);
    double *y0 = malloc((size_t)(n + 1) * sizeof *y0), *y1 = malloc((size_t)(n + 1) * sizeof *y1);
    double *u = malloc((size_t)(n + 1) * sizeof *u);
    ck_assert(x && y0 && y1 && u);
    random_logits(x, n, 100 + (uint64_t)n);
    uint64_t seed = 7;
    for (int64_t v = 0; v < n; v++)
        u[v] = ((double)(rng_next(&seed) >> 11) + 0.5) * 0x1.0p-53;
    for (size_t k = 1; k < n_variants; k++) {
        const struct dllm_rowmath *rm = &all[k];
        if (!dllm_rowmath_usable(rm)) {
            printf("SKIP: %s n=%lld: this CPU lacks instructions the variant needs\n", rm->name,
                   (long long)n);
            continue;
        }
        float m = ref->max(x, n);
        ck_assert(same_bits(rm->max(x, n), m));
        double shift = n ? m : 0.0;
        for (int t = 0; t < 2; t++) {
            double scale = t ? 1.0 / 0.2 : 1.0;
            double s0 = ref->exp(x, n, shift, scale, y0), s1 = rm->exp(x, n, shift, scale, y1);
            ck_assert_msg(same_bits(s0, s1), "%s exp sum n=%lld", rm->name, (long long)n);
            ck_assert(same_bits(rm->exp(x, n, shift, scale, NULL), s0));
            for (int64_t v = 0; v < n; v++)
                ck_assert_msg(same_bits(y0[v], y1[v]), "%s exp n=%lld v=%lld: %a vs %a", rm->name,
                              (long long)n, (long long)v, y0[v], y1[v]);
        }
        double inv = n ? 1.0 / ref->sum(y0, n) : 1.0;
        ref->scale(y0, n, inv);
        rm->scale(y1, n, inv);
        ck_assert(memcmp(y0, y1, (size_t)n * sizeof *y0) == 0);
        ck_assert(same_bits(rm->sum(y0, n), ref->sum(y0, n)));
        const double c[DLLM_ROWMATH_CUTS] = {1e-4, 1e-3, 0.0};
        double sa[DLLM_ROWMATH_CUTS], sb[DLLM_ROWMATH_CUTS];
        int64_t ca[DLLM_ROWMATH_CUTS], cb[DLLM_ROWMATH_CUTS];
        ref->sum_from(y0, n, c, sa, ca);
        rm->sum_from(y0, n, c, sb, cb);
        for (int j = 0; j < DLLM_ROWMATH_CUTS; j++)
            ck_assert(same_bits(sa[j], sb[j]) && ca[j] == cb[j]);
        check_filters(ref, rm, y0, n);
        /* entropy over a row with runs of zeros, as top-p leaves them */
        for (int64_t v = 0; v < n; v++)
            if (y0[v] < 1e-3 || (v / 8) % 3 == 1)
                y0[v] = 0.0;
        ck_assert(same_bits(rm->neg_entropy(y0, n), ref->neg_entropy(y0, n)));
        if (n > 0) {
            for (int ti = 0; ti < 3; ti++) {
                const double ts[3] = {1.0, 0.5, 1e-3};
                double b0, b1;
                int64_t a0 = ref->gumbel_argmax(x, u, n, ts[ti], &b0);
                int64_t a1 = rm->gumbel_argmax(x, u, n, ts[ti], &b1);
                ck_assert_msg(a0 == a1 && same_bits(b0, b1), "%s gumbel n=%lld t=%g: %lld vs %lld",
                              rm->name, (long long)n, ts[ti], (long long)a0, (long long)a1);
            }
            /* every g equal: the first index */
            for (int64_t v = 0; v < n; v++)
                x[v] = 0.5f;
            for (int64_t v = 0; v < n; v++)
                y1[v] = 0.25;
            double b;
            ck_assert_int_eq(rm->gumbel_argmax(x, y1, n, 1.0, &b), 0);
        }
        printf("%s n=%lld: identical to ref\n", rm->name, (long long)n);
        random_logits(x, n, 100 + (uint64_t)n);
    }
    free(x);
    free(y0);
    free(y1);
    free(u);
}
END_TEST

/* The variant kernels "ref" selects is the reference. */
START_TEST(test_select)
{
    const struct dllm_rowmath *rm = NULL;
    struct dllm_error err = {0};
    ck_assert_int_eq(dllm_rowmath_select("ref", &rm, &err), DLLM_OK);
    ck_assert_str_eq(rm->name, "ref");
    ck_assert_int_eq(dllm_rowmath_select("nonsense", &rm, &err), DLLM_ERR_ARG);
    ck_assert_int_eq(dllm_rowmath_select(NULL, &rm, &err), DLLM_OK);
    ck_assert(dllm_rowmath_usable(rm));
    printf("selected: %s\n", rm->name);
}
END_TEST

static Suite *rowmath_suite(void)
{
    Suite *s = suite_create("rowmath");
    TCase *tc = tcase_create("scalar");
    tcase_add_test(tc, test_exp_accuracy);
    tcase_add_test(tc, test_log_accuracy);
    tcase_add_test(tc, test_specials);
    suite_add_tcase(s, tc);
    tc = tcase_create("reference");
    tcase_add_test(tc, test_reference);
    tcase_add_test(tc, test_gumbel_reference);
    suite_add_tcase(s, tc);
    tc = tcase_create("variants");
    tcase_add_loop_test(tc, test_variants, 0, N_OF(lengths));
    tcase_add_test(tc, test_select);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return test_run_suite(rowmath_suite());
}
