/*
 * Block-kernel variants (kernels/ops.h): the choice of a variant with the matrix kernels and
 * DLLM_KERNELS, and every variant this CPU runs against the scalar reference on random data of
 * the real shapes (LLaDA-8B: 32 heads of 128 over 32 kv heads, d_model 4096, ffn 12288;
 * Dream-7B: 28 heads over 4, d_model 3584, ffn 18944; the fixture models; odd sizes for the
 * vector tails), each within a named tolerance. Variants this CPU lacks print a SKIP line per
 * case.
 */
#include "fixtures.h"
#include "kernels/cpu.h"
#include "kernels/ops.h"
#include "kernels/route.h"
#include "lines.h"
#include "random_data.h"

#include <check.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The unit roundoff of float, 2^-24. */
#define U 0x1p-24

/*
 * rms_norm: the variants form the same float products; only the sum of squares runs in
 * another order (in double, so its relative error stays near 1e-16), and the mean rounded to
 * float may land one ulp away, which moves s by at most an ulp and y by at most 2 ulp. The
 * tolerance is 4 ulp of |y|.
 */
#define RMS_NORM_TOL (4 * U)

/*
 * rope: the same two products and one sum or difference per output, so the results are the
 * same bits unless a compiler contracts the reference into an FMA (say under -march=native);
 * a contracted product rounds once less. The tolerance is 2 ulp of |x_a| + |x_b|.
 */
#define ROPE_TOL (2 * U)

/*
 * swiglu: e^-x within 2 ulp of expf (itself within 1 ulp of e^-x), then the same addition,
 * division and product: 8 ulp of |y| covers it, plus FLT_MIN for results that underflow.
 */
#define SWIGLU_TOL (8 * U)

/*
 * attention, relative to max |v| (every output is a convex combination of v rows). A score is
 * a dot product of head_dim terms rounded once each by FMA instead of twice: random-walk
 * rounding differences of about sqrt(head_dim) u |score|, a few 1e-6 for scores up to 10; the
 * softmax turns a score difference ds into a weight difference of p ds, and e^x adds 2 ulp.
 * The weighted sum over L rows, again with FMAs, adds about sqrt(L) u. Measured: at most
 * 1.4e-6 on these cases with scores of standard deviation 1 and 9 (the larger for the peaked
 * softmax). The tolerance, 1e-5, leaves a sevenfold margin; a wrong key, head, row or weight
 * errs by 1e-2 or more. (A relative error of e^x that does not depend on x cancels in the
 * softmax: test_swiglu checks e^x itself.)
 */
#define ATTENTION_TOL 1e-5

/* ---- deterministic random data ---------------------------------------------------------- */

/* n normal values of standard deviation sd, in a 64-byte aligned buffer. */
static float *random_floats(int64_t n, double sd, uint64_t *s)
{
    float *x = dllm_alloc_lines((size_t)n * sizeof(float));
    ck_assert_ptr_nonnull(x);
    for (int64_t i = 0; i < n; i++) {
        x[i] = (float)(sd * rng_gauss(s));
    }
    return x;
}

static float *copy_floats(const float *x, int64_t n)
{
    float *y = dllm_alloc_lines((size_t)n * sizeof(float));
    ck_assert_ptr_nonnull(y);
    memcpy(y, x, (size_t)n * sizeof *y);
    return y;
}

/* ---- variants --------------------------------------------------------------------------- */

/* The SIMD variants, in dllm_ops_all's order after "ref". */
static const char *const simd_names[] = {"avx2", "avx512"};
#define N_SIMD 2

static const struct dllm_ops *variant(const char *name)
{
    size_t n;
    const struct dllm_ops *all = dllm_ops_all(&n);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(all[i].name, name) == 0) {
            return &all[i];
        }
    }
    ck_abort_msg("no ops variant %s", name);
    return NULL;
}

/* The variant for a test, or NULL after printing a SKIP line when this CPU lacks it. */
static const struct dllm_ops *variant_or_skip(const char *name, const char *what)
{
    const struct dllm_ops *ops = variant(name);
    if (!dllm_ops_usable(ops)) {
        printf("SKIP: %s %s: this CPU lacks instructions the variant needs\n", name, what);
        return NULL;
    }
    return ops;
}

/* The table: the reference first, each SIMD variant's entry points, usability from cpuid. */
START_TEST(test_table)
{
    size_t n;
    const struct dllm_ops *all = dllm_ops_all(&n);
    ck_assert_uint_eq(n, 1 + N_SIMD);
    ck_assert_str_eq(all[0].name, "ref");
    ck_assert(dllm_ops_usable(&all[0]));
    ck_assert_ptr_eq(all[0].attention, dllm_attention_ref);
    for (size_t i = 0; i < N_SIMD; i++) {
        ck_assert_str_eq(all[1 + i].name, simd_names[i]);
        ck_assert_ptr_nonnull(all[1 + i].rms_norm);
        ck_assert_ptr_nonnull(all[1 + i].rope);
        ck_assert_ptr_nonnull(all[1 + i].attention);
        ck_assert_ptr_nonnull(all[1 + i].swiglu);
        ck_assert_ptr_nonnull(all[1 + i].add);
        const bool usable = (dllm_cpu_features() & all[1 + i].features) == all[1 + i].features;
        ck_assert(dllm_ops_usable(&all[1 + i]) == usable);
        printf("ops %s: %s\n", all[1 + i].name, usable ? "usable" : "SKIP");
    }
    ck_assert_int_ge(dllm_ops_attention_scratch(600, 128), 600);
}
END_TEST

/*
 * Each matrix-kernel variant gets the fastest block-kernel variant within its features: ref
 * with ref, avx2 with avx2 and avxvnni, avx512 with avx512; a name dllm_kernels_select
 * refuses is refused with its error.
 */
START_TEST(test_select)
{
    static const struct {
        const char *kernels, *ops;
    } pairs[] = {{"ref", "ref"}, {"avx2", "avx2"}, {"avxvnni", "avx2"}, {"avx512", "avx512"}};
    size_t nk;
    const struct dllm_kernels *kall = dllm_kernels_all(&nk);
    ck_assert_uint_eq(nk, sizeof pairs / sizeof pairs[0]);
    struct dllm_error err = {0};
    for (size_t i = 0; i < nk; i++) {
        ck_assert_str_eq(kall[i].name, pairs[i].kernels);
        ck_assert_str_eq(dllm_ops_for(&kall[i])->name, pairs[i].ops);
        const struct dllm_ops *ops = NULL;
        enum dllm_status st = dllm_ops_select(pairs[i].kernels, &ops, &err);
        if (dllm_kernels_usable(&kall[i])) {
            ck_assert_int_eq(st, DLLM_OK);
            ck_assert_str_eq(ops->name, pairs[i].ops);
            ck_assert(dllm_ops_usable(ops));
        } else {
            ck_assert_int_eq(st, DLLM_ERR_UNSUPPORTED);
            ck_assert_ptr_null(ops);
        }
    }
    const struct dllm_kernels *best;
    const struct dllm_ops *ops = NULL;
    ck_assert_int_eq(dllm_kernels_select(NULL, &best, &err), DLLM_OK);
    ck_assert_int_eq(dllm_ops_select(NULL, &ops, &err), DLLM_OK);
    ck_assert_ptr_eq(ops, dllm_ops_for(best));
    ck_assert_int_eq(dllm_ops_select("avx1024", &ops, &err), DLLM_ERR_ARG);
    ck_assert_msg(strstr(err.text, "unknown kernel variant 'avx1024'") != NULL, "%s", err.text);
}
END_TEST

/* "ref" gives the reference block kernels, "avxvnni" those of avx2; a bad name is an error. */
START_TEST(test_select_name)
{
    const struct dllm_ops *ops = NULL;
    struct dllm_error err = {0};
    ck_assert_int_eq(dllm_ops_select("ref", &ops, &err), DLLM_OK);
    ck_assert_str_eq(ops->name, "ref");
    ck_assert_ptr_eq(ops->rms_norm, dllm_rms_norm_ref);
    if (dllm_ops_select("avxvnni", &ops, &err) == DLLM_OK)
        ck_assert_str_eq(ops->name, "avx2");
    ck_assert_int_eq(dllm_ops_select("fast", &ops, &err), DLLM_ERR_ARG);
    ck_assert_str_eq(err.text, "unknown kernel variant 'fast': use ref, avx2, avxvnni or avx512");
}
END_TEST

/* ---- attention -------------------------------------------------------------------------- */

/*
 * Shapes: heads, kv heads, head_dim, L, the query rows [i0, i1) and kv heads [g0, g1) computed
 * (the real canvases trimmed to a few rows so that the scalar reference stays fast; g1 = 0 for
 * all kv heads), and the standard deviation of q and k entries: 1 gives scores of deviation 1,
 * 3 gives 9 (a peaked softmax).
 */
static const struct attention_case {
    const char *name;
    int64_t n_head, n_kv, head_dim, L, i0, i1, g0, g1;
    double sd;
} attention_cases[] = {
    {"llada L=1", 32, 32, 128, 1, 0, 1, 0, 0, 1.0},
    {"llada L=7", 32, 32, 128, 7, 0, 7, 0, 0, 1.0},
    {"llada L=160 rows 40..77", 32, 32, 128, 160, 40, 77, 0, 0, 1.0},
    {"llada L=160 rows 0..16 peaked", 32, 32, 128, 160, 0, 16, 0, 0, 3.0},
    {"llada L=160 rows 0..160 heads 5..7", 32, 32, 128, 160, 0, 160, 5, 7, 1.0},
    {"llada L=600 rows 300..309", 32, 32, 128, 600, 300, 309, 0, 0, 1.0},
    {"dream L=1", 28, 4, 128, 1, 0, 1, 0, 0, 1.0},
    {"dream L=7", 28, 4, 128, 7, 0, 7, 0, 0, 1.0},
    {"dream L=160 rows 0..33", 28, 4, 128, 160, 0, 33, 0, 0, 1.0},
    {"dream L=160 rows 100..110 peaked", 28, 4, 128, 160, 100, 110, 0, 0, 3.0},
    {"dream L=160 rows 16..48 kv head 3", 28, 4, 128, 160, 16, 48, 3, 4, 1.0},
    {"dream L=600 rows 591..600", 28, 4, 128, 600, 591, 600, 0, 0, 1.0},
    {"dream-tiny L=23", 4, 2, 64, 23, 0, 23, 0, 0, 1.0},
    {"odd head_dim 40 L=13", 6, 3, 40, 13, 2, 11, 0, 0, 1.0},
    {"odd head_dim 40 L=13 kv heads 1..2", 6, 3, 40, 13, 2, 11, 1, 2, 1.0},
    {"odd head_dim 8 L=5", 2, 1, 8, 5, 0, 5, 0, 0, 1.0},
};
#define N_ATTENTION_CASES (sizeof attention_cases / sizeof attention_cases[0])

/* Each variant on the rows [i0, i1) and kv heads [g0, g1); the other outputs stay as they were. */
START_TEST(test_attention)
{
    const struct attention_case *c = &attention_cases[_i % N_ATTENTION_CASES];
    const struct dllm_ops *ops = variant_or_skip(simd_names[_i / N_ATTENTION_CASES], c->name);
    if (ops == NULL) {
        return;
    }
    uint64_t seed = 77 + (uint64_t)_i % N_ATTENTION_CASES;
    const int64_t dq = c->n_head * c->head_dim, dkv = c->n_kv * c->head_dim;
    float *q = random_floats(c->L * dq, c->sd, &seed);
    float *k = random_floats(c->L * dkv, c->sd, &seed);
    float *v = random_floats(c->L * dkv, 1.0, &seed);
    float *want = random_floats(c->L * dq, 1.0, &seed);
    float *got = copy_floats(want, c->L * dq);
    const int64_t n_scratch = dllm_ops_attention_scratch(c->L, c->head_dim);
    float *scratch = random_floats(n_scratch, 1.0, &seed);
    const float scale = 1.0f / sqrtf((float)c->head_dim);
    const int64_t g1 = c->g1 ? c->g1 : c->n_kv, group = c->n_head / c->n_kv;

    dllm_attention_ref(q, k, v, c->L, c->n_head, c->n_kv, c->head_dim, scale, c->i0, c->i1, c->g0,
                       g1, scratch, want);
    ops->attention(q, k, v, c->L, c->n_head, c->n_kv, c->head_dim, scale, c->i0, c->i1, c->g0, g1,
                   scratch, got);

    float vmax = 0.0f;
    for (int64_t i = 0; i < c->L * dkv; i++) {
        vmax = fmaxf(vmax, fabsf(v[i]));
    }
    double worst = 0.0; /* NaN stays NaN through fmax's other argument */
    int64_t at = c->i0 * dq + c->g0 * group * c->head_dim, changed = -1;
    for (int64_t i = 0; i < c->L * dq; i++) {
        const int64_t row = i / dq, head = i % dq / c->head_dim;
        if (row < c->i0 || row >= c->i1 || head < c->g0 * group || head >= g1 * group) {
            /* asserted once below: a check assertion per element costs a message to the runner */
            if (changed < 0 && memcmp(&got[i], &want[i], sizeof got[i]) != 0) {
                changed = i;
            }
            continue;
        }
        const double e = fabs((double)got[i] - want[i]);
        if (!(e <= worst)) {
            worst = e, at = i;
        }
    }
    ck_assert_msg(changed < 0, "%s %s: out[%ld] outside the rows and heads changed", ops->name,
                  c->name, (long)changed);
    printf("attention %s %s: max error %.2g of max|v| (tolerance %.2g)\n", ops->name, c->name,
           worst / vmax, ATTENTION_TOL);
    ck_assert_msg(worst <= ATTENTION_TOL * vmax, "%s %s: out[%ld] = %.9g, want %.9g", ops->name,
                  c->name, (long)at, got[at], want[at]);
    free(scratch);
    free(got);
    free(want);
    free(v);
    free(k);
    free(q);
}
END_TEST

/*
 * The work split between threads: any partition of [0, L) into row ranges and of the kv heads
 * into head ranges, each call with its own scratch, gives exactly what one call over all rows
 * and heads gives.
 */
START_TEST(test_attention_split)
{
    const struct dllm_ops *ops = variant_or_skip(simd_names[_i], "attention split");
    if (ops == NULL) {
        return;
    }
    const int64_t n_head = 28, n_kv = 4, hd = 128, L = 45, dq = n_head * hd, dkv = n_kv * hd;
    uint64_t seed = 5;
    float *q = random_floats(L * dq, 1.0, &seed), *k = random_floats(L * dkv, 1.0, &seed);
    float *v = random_floats(L * dkv, 1.0, &seed);
    float *whole = random_floats(L * dq, 1.0, &seed), *parts = random_floats(L * dq, 1.0, &seed);
    float *s1 = random_floats(dllm_ops_attention_scratch(L, hd), 1.0, &seed);
    float *s2 = random_floats(dllm_ops_attention_scratch(L, hd), 1.0, &seed);
    const float scale = 1.0f / sqrtf((float)hd);
    ops->attention(q, k, v, L, n_head, n_kv, hd, scale, 0, L, 0, n_kv, s1, whole);
    static const int64_t cuts[] = {0, 1, 3, 16, 17, 40, 45}, head_cuts[] = {0, 1, 3, 4};
    for (size_t r = 0; r + 1 < sizeof cuts / sizeof cuts[0]; r++) {
        for (size_t g = 0; g + 1 < sizeof head_cuts / sizeof head_cuts[0]; g++) {
            ops->attention(q, k, v, L, n_head, n_kv, hd, scale, cuts[r], cuts[r + 1], head_cuts[g],
                           head_cuts[g + 1], (r + g) % 2 ? s1 : s2, parts);
        }
    }
    ck_assert(memcmp(whole, parts, (size_t)(L * dq) * sizeof *whole) == 0);
    free(s2);
    free(s1);
    free(parts);
    free(whole);
    free(v);
    free(k);
    free(q);
}
END_TEST

/* ---- RMSNorm, RoPE, SwiGLU, addition ------------------------------------------------------ */

/* Row lengths: d_model of LLaDA-8B, Dream-7B and the fixtures, and odd ones for the tails. */
static const int64_t norm_sizes[] = {4096, 3584, 256, 13, 1};
#define N_NORM_SIZES (sizeof norm_sizes / sizeof norm_sizes[0])

/* Rows of several magnitudes (1e-3 to 1e3), both epsilons, out of place and in place. */
START_TEST(test_rms_norm)
{
    const int64_t n = norm_sizes[_i % N_NORM_SIZES];
    char what[64];
    snprintf(what, sizeof what, "rms_norm n=%ld", (long)n);
    const struct dllm_ops *ops = variant_or_skip(simd_names[_i / N_NORM_SIZES], what);
    if (ops == NULL) {
        return;
    }
    uint64_t seed = 11 + (uint64_t)n;
    float *g = random_floats(n, 1.0, &seed), *want = random_floats(n, 1.0, &seed);
    float *got = random_floats(n, 1.0, &seed);
    double worst = 0.0;
    for (int r = 0; r < 14; r++) {
        float *x = random_floats(n, pow(10.0, r % 7 - 3), &seed);
        const float eps = r % 2 ? 1e-5f : 1e-6f;
        dllm_rms_norm_ref(x, g, eps, n, want);
        ops->rms_norm(x, g, eps, n, got);
        if (r >= 7) {
            ops->rms_norm(x, g, eps, n, x); /* y may be x */
            ck_assert(memcmp(x, got, (size_t)n * sizeof *x) == 0);
        }
        for (int64_t j = 0; j < n; j++) {
            const double e = fabs((double)got[j] - want[j]) / fmax(fabs(want[j]), FLT_MIN);
            worst = e <= worst ? worst : e;
        }
        free(x);
    }
    printf("%s %s: max relative error %.2g (tolerance %.2g)\n", ops->name, what, worst,
           RMS_NORM_TOL);
    ck_assert_msg(worst <= RMS_NORM_TOL, "%s %s: relative error %g", ops->name, what, worst);
    free(got);
    free(want);
    free(g);
}
END_TEST

/* RoPE shapes: heads, head_dim, rotated dimensions, rope base. */
static const struct rope_case {
    int64_t n_heads, head_dim, n_rot;
    float base;
} rope_cases[] = {
    {32, 128, 128, 500000.0f}, /* LLaDA-8B q and k */
    {28, 128, 128, 1e6f},      /* Dream-7B q */
    {4, 128, 128, 1e6f},       /* Dream-7B k */
    {4, 64, 64, 10000.0f},     /* the fixture models */
    {3, 40, 24, 10000.0f},     /* part of each head, vector tails */
    {2, 8, 2, 10000.0f},
};
#define N_ROPE_CASES (sizeof rope_cases / sizeof rope_cases[0])

/* Both modes at positions 0, 1, 159 and 599; dimensions past n_rot stay as they were. */
START_TEST(test_rope)
{
    const int64_t per_variant = 2 * N_ROPE_CASES;
    const struct rope_case *c = &rope_cases[(_i % per_variant) / 2];
    const enum dllm_rope_mode mode = _i % 2 ? DLLM_ROPE_NEOX : DLLM_ROPE_NORMAL;
    char what[96];
    snprintf(what, sizeof what, "rope %s heads=%ld head_dim=%ld n_rot=%ld",
             mode == DLLM_ROPE_NEOX ? "neox" : "normal", (long)c->n_heads, (long)c->head_dim,
             (long)c->n_rot);
    const struct dllm_ops *ops = variant_or_skip(simd_names[_i / per_variant], what);
    if (ops == NULL) {
        return;
    }
    static const int64_t positions[] = {0, 1, 159, 599};
    const int64_t half = c->n_rot / 2, n = c->n_heads * c->head_dim;
    float *cos = malloc(600 * (size_t)half * sizeof *cos);
    float *sin = malloc(600 * (size_t)half * sizeof *sin);
    ck_assert(cos != NULL && sin != NULL);
    dllm_rope_table(c->base, c->n_rot, 600, cos, sin);
    uint64_t seed = 3 + (uint64_t)_i;
    double worst = 0.0;
    for (size_t p = 0; p < sizeof positions / sizeof positions[0]; p++) {
        float *x = random_floats(n, 2.0, &seed);
        float *want = copy_floats(x, n), *got = copy_floats(x, n);
        const int64_t off = positions[p] * half;
        dllm_rope_ref(want, c->n_heads, c->head_dim, c->n_rot, mode, cos + off, sin + off);
        ops->rope(got, c->n_heads, c->head_dim, c->n_rot, mode, cos + off, sin + off);
        bool kept = true;
        for (int64_t h = 0; h < c->n_heads; h++) {
            const float *xh = x + h * c->head_dim;
            for (int64_t j = 0; j < c->head_dim; j++) {
                const int64_t at = h * c->head_dim + j;
                if (j >= c->n_rot) {
                    kept = kept && got[at] == x[at];
                    continue;
                }
                /* the other member of j's pair */
                const int64_t o = mode == DLLM_ROPE_NEOX ? (j < half ? j + half : j - half) : j ^ 1;
                const double e = fabs((double)got[at] - want[at]) / (fabs(xh[j]) + fabs(xh[o]));
                worst = e <= worst ? worst : e;
            }
        }
        ck_assert_msg(kept, "%s %s: dimensions past n_rot changed", ops->name, what);
        free(got);
        free(want);
        free(x);
    }
    printf("%s %s: max error %.2g of |x_a| + |x_b| (tolerance %.2g)\n", ops->name, what, worst,
           ROPE_TOL);
    ck_assert_msg(worst <= ROPE_TOL, "%s %s: error %g", ops->name, what, worst);
    free(sin);
    free(cos);
}
END_TEST

/* Whether a and b agree within SWIGLU_TOL, NaN with NaN and infinities exactly. */
static bool swiglu_close(float a, float b)
{
    if (isnan(a) || isnan(b) || isinf(a) || isinf(b)) {
        return (isnan(a) && isnan(b)) || a == b;
    }
    return fabs((double)a - b) <= SWIGLU_TOL * fabs(b) + FLT_MIN;
}

/*
 * The ffn rows of LLaDA-8B and Dream-7B (and an odd length) with gates of deviation 4, a sweep
 * of gates over [-110, 110] through exp's whole range, and special values.
 */
START_TEST(test_swiglu)
{
    static const int64_t sizes[] = {12288, 18944, 1000, 37};
    const int64_t n = sizes[_i % 4];
    char what[64];
    snprintf(what, sizeof what, "swiglu n=%ld", (long)n);
    const struct dllm_ops *ops = variant_or_skip(simd_names[_i / 4], what);
    if (ops == NULL) {
        return;
    }
    uint64_t seed = 19 + (uint64_t)n;
    float *gate = random_floats(n, 4.0, &seed), *up = random_floats(n, 1.0, &seed);
    if (n == 1000) {
        for (int64_t i = 0; i < n; i++) {
            gate[i] = -110.0f + 220.0f * (float)i / (float)(n - 1);
        }
    } else if (n == 37) {
        static const float special[] = {0.0f,  -0.0f,    1e-30f,    -1e-30f, 20.0f,   -20.0f,
                                        87.0f, -87.0f,   88.5f,     -88.5f,  88.75f,  -88.75f,
                                        89.0f, -89.0f,   100.0f,    -100.0f, 103.5f,  -103.5f,
                                        104.f, -104.0f,  200.0f,    -200.0f, 1e30f,   -1e30f,
                                        NAN,   INFINITY, -INFINITY, FLT_MIN, -FLT_MIN};
        memcpy(gate, special, sizeof special);
    }
    float *want = copy_floats(gate, n), *got = copy_floats(gate, n);
    dllm_swiglu_ref(want, up, n);
    ops->swiglu(got, up, n);
    double worst = 0.0;
    int64_t bad = -1;
    for (int64_t i = 0; i < n; i++) {
        bad = bad < 0 && !swiglu_close(got[i], want[i]) ? i : bad;
        if (isfinite(want[i]) && want[i] != 0.0f) {
            worst = fmax(worst, fabs((double)got[i] - want[i]) / fabs(want[i]));
        }
    }
    printf("%s %s: max relative error %.2g (tolerance %.2g)\n", ops->name, what, worst, SWIGLU_TOL);
    const int64_t b = bad < 0 ? 0 : bad;
    ck_assert_msg(bad < 0, "%s %s: gate %g up %g: %.9g, want %.9g", ops->name, what, gate[b], up[b],
                  got[b], want[b]);
    free(got);
    free(want);
    free(up);
    free(gate);
}
END_TEST

/* Addition is exact. */
START_TEST(test_add)
{
    const int64_t n = norm_sizes[_i % N_NORM_SIZES];
    char what[64];
    snprintf(what, sizeof what, "add n=%ld", (long)n);
    const struct dllm_ops *ops = variant_or_skip(simd_names[_i / N_NORM_SIZES], what);
    if (ops == NULL) {
        return;
    }
    uint64_t seed = 23 + (uint64_t)n;
    float *x = random_floats(n + 1, 1.0, &seed), *want = random_floats(n + 1, 1.0, &seed);
    float *got = copy_floats(want, n + 1);
    dllm_add_ref(want, x, n);
    ops->add(got, x, n);
    ck_assert(memcmp(got, want, (size_t)(n + 1) * sizeof *got) == 0);
    free(got);
    free(want);
    free(x);
}
END_TEST

/* ---- the MoE router ------------------------------------------------------------------------ */

/* Expert counts and kept counts of the routing cases: the fixtures', the real models', edges. */
static const struct {
    int64_t n_expert, k;
} route_cases[] = {{8, 2}, {64, 8}, {128, 8}, {2, 1}, {4, 4}, {512, 16}};
#define N_ROUTE_CASES (int)(sizeof route_cases / sizeof route_cases[0])

/*
 * dllm_route against a brute force over the same logits: k passes each picking the largest
 * logit not yet taken (the lower id on a tie), the probabilities from a softmax in long double,
 * the margin between the k-th and the best remaining logit. Rows with ties are included (logits
 * rounded to a coarse grid), so the tie rule is exercised.
 */
START_TEST(test_route)
{
    const int64_t E = route_cases[_i / 2].n_expert, K = route_cases[_i / 2].k;
    const bool normalize = _i % 2;
    uint64_t seed = 41 + (uint64_t)_i;
    float *logits = malloc((size_t)E * sizeof *logits), *w = malloc((size_t)K * sizeof *w);
    int32_t *ids = malloc((size_t)K * sizeof *ids);
    bool *taken = malloc((size_t)E * sizeof *taken);
    for (int row = 0; row < 50; row++) {
        for (int64_t e = 0; e < E; e++) {
            logits[e] = (float)(2.0 * rng_gauss(&seed));
            if (row % 5 == 0)
                logits[e] = roundf(logits[e] * 2.0f) / 2.0f;
        }
        float margin;
        dllm_route(logits, E, K, normalize, ids, w, &margin);
        long double sum = 0, kept = 0;
        for (int64_t e = 0; e < E; e++) {
            sum += expl((long double)logits[e]);
            taken[e] = false;
        }
        for (int64_t j = 0; j < K; j++) {
            int64_t best = -1;
            for (int64_t e = 0; e < E; e++)
                if (!taken[e] && (best < 0 || logits[e] > logits[best]))
                    best = e;
            taken[best] = true;
            ck_assert_int_eq(ids[j], best);
            kept += expl((long double)logits[best]) / sum;
        }
        float best_out = -INFINITY;
        for (int64_t e = 0; e < E; e++)
            if (!taken[e])
                best_out = fmaxf(best_out, logits[e]);
        if (K == E)
            ck_assert(isinf(margin) && margin > 0);
        else
            ck_assert_float_eq(margin, logits[ids[K - 1]] - best_out);
        for (int64_t j = 0; j < K; j++) {
            long double p = expl((long double)logits[ids[j]]) / sum;
            if (normalize)
                p /= kept;
            ck_assert_msg(fabsl((long double)w[j] - p) <= 4 * U * p, "weight %lld: %g, want %Lg",
                          (long long)j, (double)w[j], p);
        }
    }
    free(logits);
    free(w);
    free(ids);
    free(taken);
}
END_TEST

static Suite *ops_suite(void)
{
    Suite *s = suite_create("ops");
    TCase *tc = tcase_create("select");
    tcase_add_test(tc, test_table);
    tcase_add_test(tc, test_select);
    tcase_add_test(tc, test_select_name);
    suite_add_tcase(s, tc);

    tc = tcase_create("attention");
    tcase_add_loop_test(tc, test_attention, 0, (int)(N_SIMD * N_ATTENTION_CASES));
    tcase_add_loop_test(tc, test_attention_split, 0, N_SIMD);
    suite_add_tcase(s, tc);

    tc = tcase_create("elementwise");
    tcase_add_loop_test(tc, test_rms_norm, 0, (int)(N_SIMD * N_NORM_SIZES));
    tcase_add_loop_test(tc, test_rope, 0, (int)(N_SIMD * 2 * N_ROPE_CASES));
    tcase_add_loop_test(tc, test_swiglu, 0, N_SIMD * 4);
    tcase_add_loop_test(tc, test_add, 0, (int)(N_SIMD * N_NORM_SIZES));
    suite_add_tcase(s, tc);

    tc = tcase_create("route");
    tcase_add_loop_test(tc, test_route, 0, 2 * N_ROUTE_CASES);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return test_run_suite(ops_suite());
}
