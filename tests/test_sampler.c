/*
 * Tests of engine/sampler.c on synthetic logits. Golden values were derived independently
 * with the python3 standard library (the derivation is quoted beside each table): splitmix64
 * and xoshiro256** from their published definitions, float32 arithmetic by rounding every
 * operation through struct.pack('f'), and probabilities, entropies and chi-square bounds by
 * hand. Nothing here is computed by the code under test. The top-p and top-k filters are also
 * checked against a brute-force implementation of their definitions (a full sort) in this
 * file, and runs on thread pools and on every row-maths variant against the one-thread run
 * with the reference variant, bit for bit.
 */
#include "config.h"

#include "fixtures.h"
#include "kernels/cpu.h"
#include "sampler.h"
#include "threadpool.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define TOL     1e-6

/* ---- helpers ------------------------------------------------------------------------------ */

static struct dllm_sampler *new_sampler(int64_t max_canvas, int64_t n_vocab)
{
    struct dllm_sampler *s = NULL;
    struct dllm_error err = {0};
    ck_assert_msg(dllm_sampler_new(max_canvas, n_vocab, 1, NULL, &s, &err) == DLLM_OK, "%s",
                  err.text);
    return s;
}

/* A row of n logits ln(p[v]); ids at or past np get -inf (the mask id among them). */
static void row_from_probs(float *row, int64_t n, const double *p, int np)
{
    for (int64_t v = 0; v < n; v++)
        row[v] = v < np ? logf((float)p[v]) : -INFINITY;
}

/*
 * A row of 8 logits (ids 0..6 tokens, 7 the mask) whose argmax is `token` with temperature-1
 * probability c; the other six tokens share 1 - c (c >= 0.15 keeps `token` the argmax).
 */
#define V8    8
#define MASK8 7
static void row_conf(float *row, int32_t token, double c)
{
    for (int v = 0; v < V8; v++)
        row[v] = logf((float)((1.0 - c) / 6.0));
    row[token] = logf((float)c);
    row[MASK8] = -INFINITY;
}

/* Starts a run, failing the test on error. */
static void start(struct dllm_sampler *s, const struct dllm_sampler_params *p, int64_t n_prompt,
                  int32_t mask, const int32_t *eog, int n_eog, const int32_t *canvas)
{
    struct dllm_error err = {0};
    ck_assert_msg(dllm_sampler_start(s, p, n_prompt, mask, eog, n_eog, canvas, &err) == DLLM_OK,
                  "%s", err.text);
}

/* Prepares a step, failing the test on error; returns the row count. */
static int64_t next(struct dllm_sampler *s, const int32_t *canvas, const int32_t **pos)
{
    struct dllm_error err = {0};
    int64_t n = -1;
    ck_assert_msg(dllm_sampler_next(s, canvas, pos, &n, &err) == DLLM_OK, "%s", err.text);
    return n;
}

static void step(struct dllm_sampler *s, int32_t *canvas, const float *logits,
                 struct dllm_sampler_result *res)
{
    struct dllm_error err = {0};
    ck_assert_msg(dllm_sampler_step(s, NULL, canvas, logits, res, &err) == DLLM_OK, "%s", err.text);
}

/* A canvas of n_prompt ids 1 followed by gen masks. */
static void fill_canvas(int32_t *canvas, int64_t n_prompt, int64_t gen, int32_t mask)
{
    for (int64_t i = 0; i < n_prompt; i++)
        canvas[i] = 1;
    for (int64_t i = 0; i < gen; i++)
        canvas[n_prompt + i] = mask;
}

static struct dllm_sampler_params llada(int64_t gen, int64_t steps, int64_t block)
{
    struct dllm_sampler_params p;
    dllm_sampler_params_init(&p, DLLM_SAMPLER_LLADA);
    p.gen_length = gen;
    p.steps = steps;
    p.block_length = block;
    return p;
}

static struct dllm_sampler_params dream(int64_t gen, int64_t steps, enum dllm_alg alg)
{
    struct dllm_sampler_params p;
    dllm_sampler_params_init(&p, DLLM_SAMPLER_DREAM);
    p.gen_length = gen;
    p.steps = steps;
    p.alg = alg;
    p.temperature = 0.0;
    p.top_p = 1.0;
    return p;
}

/* ---- random numbers ----------------------------------------------------------------------- */

/*
 * python3: splitmix64 (x += 0x9e3779b97f4a7c15; z ^= z >> 30; z *= 0xbf58476d1ce4e5b9;
 * z ^= z >> 27; z *= 0x94d049bb133111eb; z ^= z >> 31) fills s[0..3]; xoshiro256** returns
 * rotl(s1 * 5, 7) * 9. splitmix64's first output from 0 is the published 0xe220a8397b1dcdaf.
 */
static const struct {
    uint64_t seed;
    uint64_t out[3];
} rng_cases[] = {
    {0, {0x99ec5f36cb75f2b4, 0xbf6e1f784956452a, 0x1a5f849d4933e6e0}},
    {12345, {0xbe6a36374160d49b, 0x214aaa0637a688c6, 0xf69d16de9954d388}},
};

START_TEST(test_rng_known)
{
    struct dllm_rng rng;
    dllm_sampler_rng_seed(&rng, rng_cases[_i].seed);
    if (rng_cases[_i].seed == 0)
        ck_assert_uint_eq(rng.s[0], 0xe220a8397b1dcdaf);
    for (int k = 0; k < 3; k++)
        ck_assert_uint_eq(dllm_sampler_rng_next(&rng), rng_cases[_i].out[k]);
}
END_TEST

/*
 * python3, the same splitmix64 and xoshiro256**: key = seed, then key = splitmix64(key) ^ part
 * for step, pos, purpose in turn (pos -1 as 2^64 - 1); the stream's first two outputs.
 */
static const struct {
    uint64_t seed;
    int64_t step, pos;
    enum dllm_draw purpose;
    uint64_t out[2];
} keyed_cases[] = {
    {0, 0, 0, DLLM_DRAW_ROW, {0x8a21cd34a214a917, 0x9c507e12243e64d0}},
    {7, 3, 11, DLLM_DRAW_KEY, {0x8745513450acec81, 0xe0eefea664d27578}},
    {5, 1, -1, DLLM_DRAW_COIN, {0x40bc930ff32c7e1d, 0x9ee4e696ee9dad58}},
};

START_TEST(test_rng_keyed)
{
    struct dllm_rng rng;
    dllm_sampler_rng_seed_at(&rng, keyed_cases[_i].seed, keyed_cases[_i].step, keyed_cases[_i].pos,
                             keyed_cases[_i].purpose);
    for (int k = 0; k < 2; k++)
        ck_assert_uint_eq(dllm_sampler_rng_next(&rng), keyed_cases[_i].out[k]);
}
END_TEST

/* Uniform draws stay in their intervals and average 1/2 (sd of the mean 0.0009). */
START_TEST(test_rng_uniform)
{
    struct dllm_rng rng;
    dllm_sampler_rng_seed(&rng, 7);
    double sum = 0.0;
    for (int k = 0; k < 100000; k++) {
        double u = dllm_sampler_rng_uniform(&rng), w = dllm_sampler_rng_uniform_open(&rng);
        if (!(u >= 0.0 && u < 1.0) || !(w > 0.0 && w < 1.0))
            ck_abort_msg("draw %d: uniform %.17g, open %.17g", k, u, w);
        sum += u;
    }
    ck_assert_double_eq_tol(sum / 100000, 0.5, 0.005);
}
END_TEST

/*
 * The extreme outputs stay inside (0, 1): a state whose next output is all ones (s1 such that
 * rotl(s1 * 5, 7) * 9 = 2^64 - 1, found with the inverses of 5 and 9 modulo 2^64) and one whose
 * next output is zero.
 */
START_TEST(test_rng_uniform_open_ends)
{
    uint64_t inv5 = 1, inv9 = 1;
    for (int k = 0; k < 6; k++) { /* Newton's iteration doubles the correct low bits */
        inv5 *= 2 - 5 * inv5;
        inv9 *= 2 - 9 * inv9;
    }
    ck_assert_uint_eq(5 * inv5, 1);
    ck_assert_uint_eq(9 * inv9, 1);
    const uint64_t r = UINT64_MAX * inv9, s1 = ((r >> 7) | (r << 57)) * inv5;
    struct dllm_rng rng = {{1, s1, 2, 3}};
    struct dllm_rng copy = rng;
    ck_assert_uint_eq(dllm_sampler_rng_next(&copy), UINT64_MAX);
    const double top = dllm_sampler_rng_uniform_open(&rng);
    ck_assert(top < 1.0 && top > 0.999);
    struct dllm_rng zero = {{1, 0, 2, 3}};
    const double bottom = dllm_sampler_rng_uniform_open(&zero);
    ck_assert(bottom > 0.0 && bottom < 1e-15);
}
END_TEST

/* ---- softmax and CFG ---------------------------------------------------------------------- */

START_TEST(test_softmax_values)
{
    /* ln 1, ln 2, ln 3, -inf: 1/6, 2/6, 3/6, 0. */
    float row[4] = {0.0f, logf(2.0f), logf(3.0f), -INFINITY};
    double p[4];
    ck_assert_int_eq(dllm_sampler_softmax(row, 4, 1.0, p, NULL), DLLM_OK);
    ck_assert_double_eq_tol(p[0], 1.0 / 6, TOL);
    ck_assert_double_eq_tol(p[1], 2.0 / 6, TOL);
    ck_assert_double_eq_tol(p[2], 3.0 / 6, TOL);
    ck_assert_double_eq(p[3], 0.0);
    /* Temperature 2 takes square roots: 1, sqrt 2, sqrt 3 over their sum. */
    ck_assert_int_eq(dllm_sampler_softmax(row, 4, 2.0, p, NULL), DLLM_OK);
    double z = 1.0 + sqrt(2.0) + sqrt(3.0);
    ck_assert_double_eq_tol(p[1], sqrt(2.0) / z, TOL);
    /* Large logits do not overflow: 1000 and 1001 give 1/(1+e), e/(1+e). */
    float big[2] = {1000.0f, 1001.0f};
    ck_assert_int_eq(dllm_sampler_softmax(big, 2, 1.0, p, NULL), DLLM_OK);
    ck_assert_double_eq_tol(p[0], 1.0 / (1.0 + M_E), 1e-12);
    ck_assert_double_eq_tol(p[1], M_E / (1.0 + M_E), 1e-12);
}
END_TEST

static const float bad_rows[][3] = {
    {0.0f, NAN, 1.0f},
    {0.0f, INFINITY, 1.0f},
    {-INFINITY, -INFINITY, -INFINITY},
};

START_TEST(test_softmax_nonfinite)
{
    double p[3];
    struct dllm_error err = {0};
    ck_assert_int_eq(dllm_sampler_softmax(bad_rows[_i], 3, 1.0, p, &err), DLLM_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.text, "logits row"));
}
END_TEST

START_TEST(test_cfg)
{
    /* 0.5 + 2.5 (1 - 0.5) = 1.75; 3 + 2.5 (2 - 3) = 0.5. */
    float cond[2] = {1.0f, 2.0f};
    const float uncond[2] = {0.5f, 3.0f};
    dllm_sampler_cfg(cond, uncond, 2, 1.5);
    ck_assert_float_eq_tol(cond[0], 1.75f, 1e-6f);
    ck_assert_float_eq_tol(cond[1], 0.5f, 1e-6f);
    float same[2] = {1.0f, 2.0f};
    dllm_sampler_cfg(same, uncond, 2, 0.0);
    ck_assert_float_eq_tol(same[0], 1.0f, 1e-6f);
    ck_assert_float_eq_tol(same[1], 2.0f, 1e-6f);
}
END_TEST

/* ---- schedule ----------------------------------------------------------------------------- */

/* k_i = floor(n/s) + [i < n mod s], by hand. */
static const struct {
    int64_t n, steps;
    int64_t k[8];
} llada_quotas[] = {
    {32, 4, {8, 8, 8, 8}}, {10, 4, {3, 3, 2, 2}},
    {7, 3, {3, 2, 2}},     {5, 8, {1, 1, 1, 1, 1, 0, 0, 0}},
    {32, 1, {32}},
};

START_TEST(test_quota_llada)
{
    int64_t sum = 0;
    for (int64_t i = 0; i < llada_quotas[_i].steps; i++) {
        int64_t k = dllm_sampler_quota_llada(llada_quotas[_i].n, llada_quotas[_i].steps, i);
        ck_assert_int_eq(k, llada_quotas[_i].k[i]);
        sum += k;
    }
    ck_assert_int_eq(sum, llada_quotas[_i].n);
}
END_TEST

/*
 * Dream's schedule (generation_utils.py, eps 1e-3): commits at step 0, at every middle step, at the
 * last. python3 float32 simulation of torch.linspace(1, eps, steps + 1) and int(N (1 - s/t)) with N
 * the masks left gives the same rows, and the full lists for the small cases below.
 */
static const struct {
    int64_t gen, steps, first, middle, last;
} dream_table[] = {
    {256, 256, 0, 1, 2},
    {512, 256, 1, 2, 3},
    {256, 64, 3, 4, 5},
    {128, 32, 3, 4, 5},
};

START_TEST(test_quota_dream_table)
{
    int64_t n = dream_table[_i].gen, steps = dream_table[_i].steps;
    for (int64_t i = 0; i < steps; i++) {
        int64_t k = dllm_sampler_quota_dream(n, steps, i, 1e-3f);
        int64_t want = i == 0           ? dream_table[_i].first
                       : i == steps - 1 ? dream_table[_i].last
                                        : dream_table[_i].middle;
        ck_assert_msg(k == want, "G %lld steps %lld: step %lld commits %lld, expected %lld",
                      (long long)dream_table[_i].gen, (long long)steps, (long long)i, (long long)k,
                      (long long)want);
        n -= k;
    }
    ck_assert_int_eq(n, 0);
}
END_TEST

static const struct {
    int64_t gen, steps;
    int64_t k[4];
} dream_small[] = {
    {4, 4, {0, 1, 1, 2}},
    {10, 4, {2, 2, 2, 4}},
    {8, 4, {1, 2, 2, 3}},
    {3, 3, {0, 1, 2}},
};

START_TEST(test_quota_dream_small)
{
    int64_t n = dream_small[_i].gen;
    for (int64_t i = 0; i < dream_small[_i].steps; i++) {
        int64_t k = dllm_sampler_quota_dream(n, dream_small[_i].steps, i, 1e-3f);
        ck_assert_int_eq(k, dream_small[_i].k[i]);
        n -= k;
    }
    ck_assert_int_eq(n, 0);
}
END_TEST

/* python3 float32: linspace(1, 1e-3, steps + 1) and 1 - tau[i+1]/tau[i], as hex floats. */
START_TEST(test_timesteps)
{
    const float tau[5] = {0x1p+0f, 0x1.8020c4p-1f, 0x1.00418ap-1f, 0x1.00c49cp-2f, 0x1.0624dep-10f};
    const float frac[3] = {0x1.ff7cfp-3f, 0x1.54e0d8p-2f, 0x1.fefa2p-2f};
    for (int i = 0; i < 5; i++)
        ck_assert_msg(dllm_sampler_timestep(4, i, 1e-3f) == tau[i], "tau_%d = %a, expected %a", i,
                      (double)dllm_sampler_timestep(4, i, 1e-3f), (double)tau[i]);
    for (int i = 0; i < 3; i++)
        ck_assert(dllm_sampler_transfer_fraction(4, i, 1e-3f) == frac[i]);
    ck_assert(dllm_sampler_transfer_fraction(4, 3, 1e-3f) == 1.0f);

    /*
     * Steps 8: tau_3 and tau_5 are where a fused multiply-add would round differently
     * (python3: fused 0x1.403126p-1 and 0x1.80a3d8p-2).
     */
    const float tau8[9] = {0x1p+0f,        0x1.c01062p-1f, 0x1.8020c4p-1f,
                           0x1.403128p-1f, 0x1.00418ap-1f, 0x1.80a3d6p-2f,
                           0x1.00c49cp-2f, 0x1.01cacp-3f,  0x1.0624dep-10f};
    for (int i = 0; i < 9; i++)
        ck_assert_msg(dllm_sampler_timestep(8, i, 1e-3f) == tau8[i], "tau_%d = %a, expected %a", i,
                      (double)dllm_sampler_timestep(8, i, 1e-3f), (double)tau8[i]);
}
END_TEST

START_TEST(test_plan)
{
    struct dllm_sampler_plan plan;
    struct dllm_sampler_params p = llada(128, 64, 32);
    ck_assert_int_eq(dllm_sampler_plan_init(&plan, &p, 10, NULL), DLLM_OK);
    ck_assert_int_eq(plan.n_blocks, 4);
    ck_assert_int_eq(plan.steps_per_block, 16);
    int64_t a, b;
    dllm_sampler_block_bounds(&plan, 0, &a, &b);
    ck_assert_int_eq(a, 10);
    ck_assert_int_eq(b, 42);
    dllm_sampler_block_bounds(&plan, 3, &a, &b);
    ck_assert_int_eq(a, 106);
    ck_assert_int_eq(b, 138);

    /* Dream: no blocks unless asked, one region over the whole generation area. */
    p = dream(64, 48, DLLM_ALG_ENTROPY);
    ck_assert_int_eq(dllm_sampler_plan_init(&plan, &p, 5, NULL), DLLM_OK);
    ck_assert_int_eq(plan.n_blocks, 1);
    ck_assert_int_eq(plan.steps_per_block, 48);
    dllm_sampler_block_bounds(&plan, 0, &a, &b);
    ck_assert_int_eq(a, 5);
    ck_assert_int_eq(b, 69);
    p.block_length = 16;
    ck_assert_int_eq(dllm_sampler_plan_init(&plan, &p, 5, NULL), DLLM_OK);
    ck_assert_int_eq(plan.n_blocks, 4);
    ck_assert_int_eq(plan.steps_per_block, 12);

    /* A threshold frees steps from the block count: 7 steps over 4 blocks is fine. */
    p = llada(128, 7, 32);
    p.threshold = 0.9;
    ck_assert_int_eq(dllm_sampler_plan_init(&plan, &p, 0, NULL), DLLM_OK);
    ck_assert_int_eq(plan.steps_per_block, 0);
}
END_TEST

/* Each bad setting and the message that says what would work. */
static const char *const bad_messages[] = {
    "block length 30 does not divide gen length 128: use one of 1, 2, 4, 8, 16, 32, 64, 128, "
    "or 0 for no blocks",
    "steps 30 is not a multiple of the 4 blocks (gen length 128 / block length 32): use 28 or 32",
    "steps 2 is fewer than the 4 blocks (gen length 128 / block length 32): use 4 or a multiple "
    "of it",
    "threshold 1.5 is out of range: use a value in (0, 1], or 0 for off",
    "threshold -0.1 is out of range: use a value in (0, 1], or 0 for off",
    "top-p and top-k apply to the Dream sampler only",
    "top-p 0 is out of range: use a value in (0, 1], 1 for off",
    "a threshold needs a probability-like confidence, which alg entropy lacks: use alg "
    "maskgit_plus or topk_margin",
    "a threshold needs a probability-like confidence, which remasking random lacks: use "
    "remasking low_confidence",
    "alg temp 0.5 does not combine with a threshold",
    "temperature -1 is out of range",
    "eps 1 is out of range",
    "gen length 0 is out of range",
    "unknown remasking 7",
    "unknown alg 9",
    "cfg scale -1 is out of range",
    "block length 7 does not divide gen length 1000: use one of 1, 2, 4, 5, 8, 10, 20, 25, 40, "
    "50, 100, 125, ..., 1000, or 0 for no blocks",
    "temperature nan is out of range",
    "steps 0 is out of range",
    "top-k -1 is out of range",
    "alg temp -2 is out of range",
};

static struct dllm_sampler_params bad_params(int i)
{
    struct dllm_sampler_params p = llada(128, 128, 32);
    switch (i) {
    case 0: p.block_length = 30; break;
    case 1: p.steps = 30; break;
    case 2: p.steps = 2; break;
    case 3: p.threshold = 1.5; break;
    case 4: p.threshold = -0.1; break;
    case 5: p.top_k = 40; break;
    case 6:
        p = dream(128, 128, DLLM_ALG_ENTROPY);
        p.top_p = 0.0;
        break;
    case 7:
        p = dream(128, 128, DLLM_ALG_ENTROPY);
        p.threshold = 0.9;
        break;
    case 8:
        p.remasking = DLLM_REMASKING_RANDOM;
        p.threshold = 0.9;
        break;
    case 9:
        p.threshold = 0.9;
        p.alg_temp = 0.5;
        break;
    case 10: p.temperature = -1.0; break;
    case 11:
        p = dream(128, 128, DLLM_ALG_ENTROPY);
        p.eps = 1.0;
        break;
    case 12: p.gen_length = 0; break;
    case 13: p.remasking = (enum dllm_remasking)7; break;
    case 14: p.alg = (enum dllm_alg)9; break;
    case 15: p.cfg_scale = -1.0; break;
    case 16:
        p.gen_length = 1000;
        p.block_length = 7;
        break;
    case 17: p.temperature = NAN; break;
    case 18: p.steps = 0; break;
    case 19:
        p = dream(128, 128, DLLM_ALG_ENTROPY);
        p.top_k = -1;
        break;
    case 20: p.alg_temp = -2.0; break;
    }
    return p;
}

START_TEST(test_params_bad)
{
    struct dllm_sampler_params p = bad_params(_i);
    struct dllm_error err = {0};
    ck_assert_int_eq(dllm_sampler_params_check(&p, &err), DLLM_ERR_ARG);
    ck_assert_msg(strncmp(err.text, bad_messages[_i], strlen(bad_messages[_i])) == 0,
                  "case %d: \"%s\" does not start with \"%s\"", _i, err.text, bad_messages[_i]);
}
END_TEST

START_TEST(test_params_good)
{
    struct dllm_sampler_params p;
    dllm_sampler_params_init(&p, DLLM_SAMPLER_LLADA);
    ck_assert_int_eq(dllm_sampler_params_check(&p, NULL), DLLM_OK);
    ck_assert_int_eq(p.block_length, 32);
    ck_assert(p.early_stop);
    dllm_sampler_params_init(&p, DLLM_SAMPLER_DREAM);
    ck_assert_int_eq(dllm_sampler_params_check(&p, NULL), DLLM_OK);
    ck_assert_int_eq(p.block_length, 0);
    ck_assert_int_eq(p.alg, DLLM_ALG_ENTROPY);
    p.threshold = 1.0;
    p.alg = DLLM_ALG_MASKGIT_PLUS;
    ck_assert_int_eq(dllm_sampler_params_check(&p, NULL), DLLM_OK);
}
END_TEST

START_TEST(test_names)
{
    enum dllm_alg alg;
    enum dllm_remasking r;
    ck_assert(dllm_alg_parse("topk_margin", &alg) && alg == DLLM_ALG_TOPK_MARGIN);
    ck_assert(!dllm_alg_parse("margin", &alg));
    ck_assert_str_eq(dllm_alg_name(DLLM_ALG_MASKGIT_PLUS), "maskgit_plus");
    ck_assert_ptr_null(dllm_alg_name((enum dllm_alg)4));
    ck_assert(dllm_remasking_parse("random", &r) && r == DLLM_REMASKING_RANDOM);
    ck_assert(!dllm_remasking_parse("low", &r));
    ck_assert_str_eq(dllm_remasking_name(DLLM_REMASKING_LOW_CONFIDENCE), "low_confidence");
}
END_TEST

/* ---- one step ----------------------------------------------------------------------------- */

/* Equal confidences: the lower positions commit first. */
START_TEST(test_tie_break)
{
    struct dllm_sampler *s = new_sampler(16, V8);
    struct dllm_sampler_params p = _i == 0 ? llada(4, 2, 0) : dream(4, 3, DLLM_ALG_MASKGIT_PLUS);
    int32_t canvas[7];
    fill_canvas(canvas, 3, 4, MASK8);
    start(s, &p, 3, MASK8, NULL, 0, canvas);
    const int32_t *pos;
    int64_t n = next(s, canvas, &pos);
    ck_assert_int_eq(n, 4);
    float logits[4 * V8];
    for (int r = 0; r < 4; r++)
        row_conf(logits + r * V8, 2, 0.6);
    struct dllm_sampler_result res;
    step(s, canvas, logits, &res);
    /* LLaDA 4 masks over 2 steps: 2. Dream G 4, 3 steps: python3 float32 gives 1. */
    int64_t want = _i == 0 ? 2 : 1;
    ck_assert_int_eq(res.n_committed, want);
    for (int64_t k = 0; k < want; k++) {
        ck_assert_int_eq(res.committed[k].pos, 3 + k);
        ck_assert_int_eq(res.committed[k].token, 2);
        ck_assert_int_eq(canvas[3 + k], 2);
    }
    ck_assert(res.has_best_left);
    ck_assert_double_eq_tol(res.best_left_conf, 0.6, TOL);
    ck_assert_int_eq(res.masks_left, 4 - want);
    dllm_sampler_free(s);
}
END_TEST

/* Deterministic pseudo-random logits for the determinism tests (a 32-bit LCG). */
static void noise_logits(float *x, int64_t n, uint32_t seed)
{
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)(seed >> 8) / (float)(1u << 24) * 8.0f;
    }
}

#define DV    50
#define DMASK 49

/* Runs a whole generation of 8 slots after a 2-slot prompt; writes the final canvas. */
static void run_whole(struct dllm_sampler_params p, uint64_t seed, int32_t *canvas)
{
    struct dllm_sampler *s = new_sampler(10, DV);
    p.seed = seed;
    fill_canvas(canvas, 2, 8, DMASK);
    start(s, &p, 2, DMASK, NULL, 0, canvas);
    float logits[8 * DV];
    struct dllm_sampler_result res;
    int guard = 0;
    do {
        const int32_t *pos;
        int64_t n = next(s, canvas, &pos);
        for (int64_t r = 0; r < n; r++)
            noise_logits(logits + r * DV, DV, (uint32_t)(pos[r] * 31 + guard));
        step(s, canvas, n ? logits : NULL, &res);
        ck_assert_int_lt(++guard, 100);
    } while (!res.done);
    ck_assert_int_eq(res.masks_left, 0);
    dllm_sampler_free(s);
}

START_TEST(test_determinism)
{
    struct dllm_sampler_params ps[4] = {
        llada(8, 4, 0),
        dream(8, 4, DLLM_ALG_ENTROPY),
        llada(8, 4, 4),
        dream(8, 8, DLLM_ALG_TOPK_MARGIN),
    };
    struct dllm_sampler_params p = ps[_i % 4];
    int32_t a[10], b[10];
    if (_i < 4) {
        /* Temperature 0: the seed does not matter. */
        run_whole(p, 1, a);
        run_whole(p, 999, b);
        ck_assert_mem_eq(a, b, sizeof a);
    } else {
        /* Temperature 1: the same seed repeats, another seed differs. */
        p.temperature = 1.0;
        run_whole(p, 5, a);
        run_whole(p, 5, b);
        ck_assert_mem_eq(a, b, sizeof a);
        run_whole(p, 6, b);
        ck_assert(memcmp(a, b, sizeof a) != 0);
    }
}
END_TEST

/*
 * A slot's draws are its own: at temperature 1 with a threshold low enough to commit every
 * row, slot 5 gets the same sample whether slots 3 and 4 are in the step or not, and for
 * either sampler kind.
 */
START_TEST(test_draws_per_slot)
{
    int32_t tokens[2];
    for (int run = 0; run < 2; run++) {
        struct dllm_sampler *s = new_sampler(6, DV);
        struct dllm_sampler_params p =
            _i == 0 ? llada(3, 1, 0) : dream(3, 1, DLLM_ALG_MASKGIT_PLUS);
        p.temperature = 1.0;
        p.threshold = 1e-9;
        p.seed = 11;
        int32_t canvas[6];
        fill_canvas(canvas, 3, 3, DMASK);
        if (run == 1)
            canvas[3] = canvas[4] = 7;
        start(s, &p, 3, DMASK, NULL, 0, canvas);
        const int32_t *pos;
        int64_t n = next(s, canvas, &pos);
        ck_assert_int_eq(n, run == 0 ? 3 : 1);
        float logits[3 * DV];
        for (int64_t r = 0; r < n; r++)
            for (int v = 0; v < DV; v++)
                logits[r * DV + v] = 0.0f; /* uniform: the draw alone decides */
        struct dllm_sampler_result res;
        step(s, canvas, logits, &res);
        ck_assert_int_eq(res.n_committed, n);
        tokens[run] = canvas[5];
        dllm_sampler_free(s);
    }
    ck_assert_int_eq(tokens[0], tokens[1]);
}
END_TEST

/*
 * Gumbel-max at temperature T samples softmax(l / T) over the non-mask ids. Logits 0, 1, 2,
 * -1 and a mask of logit 5 (never proposed); 20000 draws; Pearson chi-square with 3 degrees
 * of freedom must stay below 16.27 (p = 0.001). The confidence is always the temperature-1
 * probability of the proposal: e^l / (1 + e + e^2 + e^-1 + e^5).
 */
static const double gumbel_temps[] = {1.0, 0.5, 2.0};

START_TEST(test_gumbel_statistics)
{
    const float row[5] = {0.0f, 1.0f, 2.0f, -1.0f, 5.0f};
    double t = gumbel_temps[_i];
    struct dllm_sampler *s = new_sampler(4, 5);
    struct dllm_sampler_params p = llada(1, 1, 0);
    p.temperature = t;
    p.seed = 42;
    int32_t canvas[1] = {4};
    start(s, &p, 0, 4, NULL, 0, canvas);
    struct dllm_rng rng;
    dllm_sampler_rng_seed(&rng, 42);
    double z1 = 1 + M_E + exp(2) + exp(-1) + exp(5), zt = 0.0, want[4];
    for (int v = 0; v < 4; v++)
        zt += exp(row[v] / t);
    for (int v = 0; v < 4; v++)
        want[v] = exp(row[v] / t) / zt;
    int count[4] = {0};
    const int n = 20000;
    for (int k = 0; k < n; k++) {
        int32_t tok;
        double conf;
        if (dllm_sampler_propose_llada(s, row, &rng, &tok, &conf, NULL) != DLLM_OK)
            ck_abort_msg("draw %d: the proposal failed", k);
        if (!(tok >= 0 && tok < 4))
            ck_abort_msg("draw %d: token %d outside the row", k, (int)tok);
        if (!(fabs(conf - exp(row[tok]) / z1) < 1e-9))
            ck_abort_msg("draw %d: confidence %.17g, expected %.17g", k, conf, exp(row[tok]) / z1);
        count[tok]++;
    }
    double chi2 = 0.0;
    for (int v = 0; v < 4; v++)
        chi2 += (count[v] - n * want[v]) * (count[v] - n * want[v]) / (n * want[v]);
    ck_assert_msg(chi2 < 16.27, "T %g: chi-square %g (counts %d %d %d %d)", t, chi2, count[0],
                  count[1], count[2], count[3]);
    dllm_sampler_free(s);
}
END_TEST

/* Random remasking at temperature 0: the confidence is the stream's next uniform draw. */
START_TEST(test_random_remasking)
{
    const float row[3] = {0.0f, 3.0f, 1.0f};
    struct dllm_sampler *s = new_sampler(1, 3);
    struct dllm_sampler_params p = llada(1, 1, 0);
    p.remasking = DLLM_REMASKING_RANDOM;
    p.seed = 77;
    int32_t canvas[1] = {2};
    start(s, &p, 0, 2, NULL, 0, canvas);
    struct dllm_rng rng, copy;
    dllm_sampler_rng_seed(&rng, 77);
    copy = rng;
    for (int k = 0; k < 3; k++) {
        int32_t tok;
        double conf;
        ck_assert_int_eq(dllm_sampler_propose_llada(s, row, &rng, &tok, &conf, NULL), DLLM_OK);
        ck_assert_int_eq(tok, 1);
        ck_assert(conf == dllm_sampler_rng_uniform(&copy));
    }
    dllm_sampler_free(s);
}
END_TEST

/* The mask token is never proposed, even when it has the largest logit. */
START_TEST(test_mask_never_proposed)
{
    const float row[4] = {0.0f, 1.0f, 9.0f, 2.0f}; /* mask id 2 */
    struct dllm_sampler *s = new_sampler(1, 4);
    struct dllm_sampler_params p = _i == 0 ? llada(1, 1, 0) : dream(1, 1, DLLM_ALG_MASKGIT_PLUS);
    int32_t canvas[1] = {2};
    start(s, &p, 0, 2, NULL, 0, canvas);
    struct dllm_rng rng;
    dllm_sampler_rng_seed(&rng, 1);
    int32_t tok;
    double conf;
    if (_i == 0) {
        ck_assert_int_eq(dllm_sampler_propose_llada(s, row, &rng, &tok, &conf, NULL), DLLM_OK);
        /* The probability still counts the mask: e^2 / (1 + e + e^9 + e^2). */
        ck_assert_double_eq_tol(conf, exp(2) / (1 + M_E + exp(9) + exp(2)), 1e-9);
    } else {
        ck_assert_int_eq(dllm_sampler_propose_dream(s, row, &rng, &tok, &conf, NULL), DLLM_OK);
        ck_assert_double_eq_tol(conf, exp(2) / (1 + M_E + exp(2)), 1e-9);
    }
    ck_assert_int_eq(tok, 3);
    dllm_sampler_free(s);
}
END_TEST

/*
 * Dream confidences on p = (0.5, 0.3, 0.2), mask id 3 at -inf; python3:
 *   entropy sum p ln(p + 1e-10)            = -1.0296530137645736
 *   top-p 0.6 keeps (0.625, 0.375): entropy -0.6615632379579821, margin 0.25
 *   top-k 1 keeps (1): entropy ln(1 + 1e-10) = 1.000000082690371e-10, margin 1
 *   temperature 2: sqrt(p) / sum = (0.41544591325034014, 0.32180302065369965,
 *   0.26275106609596016), margin 0.09364289259664049, entropy -1.0809736432470225
 */
static const struct {
    enum dllm_alg alg;
    double temperature, top_p;
    int64_t top_k;
    double conf; /* NaN: the probability of whichever token was sampled */
} dream_algs[] = {
    {DLLM_ALG_ORIGIN, 0.0, 1.0, 0, 0.5},
    {DLLM_ALG_MASKGIT_PLUS, 0.0, 1.0, 0, 0.5},
    {DLLM_ALG_TOPK_MARGIN, 0.0, 1.0, 0, 0.2},
    {DLLM_ALG_ENTROPY, 0.0, 1.0, 0, -1.0296530137645736},
    {DLLM_ALG_MASKGIT_PLUS, 0.0, 0.6, 0, 0.625},
    {DLLM_ALG_TOPK_MARGIN, 0.0, 0.6, 0, 0.25},
    {DLLM_ALG_ENTROPY, 0.0, 0.6, 0, -0.6615632379579821},
    {DLLM_ALG_MASKGIT_PLUS, 0.0, 1.0, 1, 1.0},
    {DLLM_ALG_TOPK_MARGIN, 0.0, 1.0, 1, 1.0},
    {DLLM_ALG_ENTROPY, 0.0, 1.0, 1, 1.000000082690371e-10},
    {DLLM_ALG_TOPK_MARGIN, 2.0, 1.0, 0, 0.09364289259664049},
    {DLLM_ALG_ENTROPY, 2.0, 1.0, 0, -1.0809736432470225},
    {DLLM_ALG_MASKGIT_PLUS, 2.0, 1.0, 0, NAN},
};

START_TEST(test_dream_algs)
{
    const double probs[3] = {0.5, 0.3, 0.2};
    const double tempered[3] = {0.41544591325034014, 0.32180302065369965, 0.26275106609596016};
    float row[4];
    row_from_probs(row, 4, probs, 3);
    struct dllm_sampler *s = new_sampler(1, 4);
    struct dllm_sampler_params p = dream(1, 1, dream_algs[_i].alg);
    p.temperature = dream_algs[_i].temperature;
    p.top_p = dream_algs[_i].top_p;
    p.top_k = dream_algs[_i].top_k;
    int32_t canvas[1] = {3};
    start(s, &p, 0, 3, NULL, 0, canvas);
    struct dllm_rng rng;
    dllm_sampler_rng_seed(&rng, (uint64_t)_i);
    int32_t tok;
    double conf;
    ck_assert_int_eq(dllm_sampler_propose_dream(s, row, &rng, &tok, &conf, NULL), DLLM_OK);
    if (p.temperature == 0.0)
        ck_assert_int_eq(tok, 0);
    ck_assert(tok >= 0 && tok < 3);
    double want = isnan(dream_algs[_i].conf) ? tempered[tok] : dream_algs[_i].conf;
    ck_assert_double_eq_tol(conf, want, TOL);
    dllm_sampler_free(s);
}
END_TEST

/*
 * top-p keeps a token while the mass ranked before it is at most top_p, so the token that
 * crosses the threshold stays; equal probabilities rank by id. Rows by hand:
 *   p (0.5, 0.3, 0.2): 0.4 -> {0}; 0.6 -> {0, 1} = (0.625, 0.375); 0.85 -> all
 *   logits (2, 2, 0): 0.1 -> {0} (the tie splits by id)
 *   logits (0, 0, 0, 0), p exactly 1/4: 0.5 -> {0, 1, 2}: the mass before id 2 is 0.5,
 *   which does not exceed 0.5
 * top-k drops what is below the k-th largest, keeping ties with it:
 *   logits (1, 2, 2, 0), k 1 -> {1, 2} = (0.5, 0.5); k 3 -> softmax(1, 2, 2) over {0, 1, 2}
 * Order temperature -> top-p -> top-k:
 *   p (0.4, 0.3, 0.3), top-p 0.5 then top-k 2 -> (0.4, 0.3)/0.7 = (0.5714285714285715,
 *   0.4285714285714285); top-k first would renormalise to (0.57, 0.43) and keep only {0}.
 *   p (0.5, 0.3, 0.2) at T 0.5 -> (0.25, 0.09, 0.04)/0.38 = (0.658, 0.237, 0.105): top-p 0.6
 *   then keeps {0} alone; top-p before the temperature would keep {0, 1}.
 */
struct filter_case {
    int n;        /* ids; id n is the mask at -inf */
    double in[4]; /* probabilities, or logits when `logits` */
    bool logits;
    double temperature, top_p;
    int64_t top_k;
    double out[4];
};

#define E1 2.718281828459045
#define E2 7.38905609893065
static const struct filter_case filter_cases[] = {
    {3, {0.5, 0.3, 0.2}, false, 0.0, 0.4, 0, {1.0, 0.0, 0.0}},
    {3, {0.5, 0.3, 0.2}, false, 0.0, 0.6, 0, {0.625, 0.375, 0.0}},
    {3, {0.5, 0.3, 0.2}, false, 0.0, 0.85, 0, {0.5, 0.3, 0.2}},
    {3, {0.5, 0.3, 0.2}, false, 0.0, 1.0, 0, {0.5, 0.3, 0.2}},
    {4, {0.0, 0.0, 0.0, 0.0}, true, 0.0, 0.5, 0, {1.0 / 3, 1.0 / 3, 1.0 / 3, 0.0}},
    {3, {2.0, 2.0, 0.0}, true, 0.0, 0.1, 0, {1.0, 0.0, 0.0}},
    {4, {1.0, 2.0, 2.0, 0.0}, true, 0.0, 1.0, 1, {0.0, 0.5, 0.5, 0.0}},
    {4, {1.0, 2.0, 2.0, 0.0}, true, 0.0, 1.0, 2, {0.0, 0.5, 0.5, 0.0}},
    {4,
     {1.0, 2.0, 2.0, 0.0},
     true,
     0.0,
     1.0,
     3,
     {E1 / (E1 + 2 * E2), E2 / (E1 + 2 * E2), E2 / (E1 + 2 * E2), 0.0}},
    {3, {0.4, 0.3, 0.3}, false, 0.0, 0.5, 2, {0.5714285714285715, 0.4285714285714285, 0.0}},
    {3, {0.5, 0.3, 0.2}, false, 0.5, 0.6, 0, {1.0, 0.0, 0.0}},
    {3, {0.5, 0.3, 0.2}, false, 0.5, 1.0, 0, {0.25 / 0.38, 0.09 / 0.38, 0.04 / 0.38}},
};

START_TEST(test_filters)
{
    const struct filter_case *c = &filter_cases[_i];
    float row[5];
    if (c->logits) {
        for (int v = 0; v < c->n; v++)
            row[v] = (float)c->in[v];
        row[c->n] = -INFINITY;
    } else {
        row_from_probs(row, c->n + 1, c->in, c->n);
    }
    struct dllm_sampler *s = new_sampler(1, c->n + 1);
    struct dllm_sampler_params p = dream(1, 1, DLLM_ALG_MASKGIT_PLUS);
    p.temperature = c->temperature;
    p.top_p = c->top_p;
    p.top_k = c->top_k;
    int32_t canvas[1] = {c->n};
    start(s, &p, 0, c->n, NULL, 0, canvas);
    const double *probs;
    ck_assert_int_eq(dllm_sampler_probs_dream(s, row, &probs, NULL), DLLM_OK);
    for (int v = 0; v <= c->n; v++)
        if (!(fabs(probs[v] - (v < c->n ? c->out[v] : 0.0)) < TOL))
            ck_abort_msg("case %d: p[%d] = %.9g, expected %.9g", _i, v, probs[v], c->out[v]);
    dllm_sampler_free(s);
}
END_TEST

/*
 * A flat row over 4999 tokens (the mask, id 4999, at -inf): each has p = 1/4999; top-p 0.5
 * keeps ranks r with r/4999 <= 0.5, i.e. ids 0..2499, each then 1/2500. No entry reaches the
 * first cut-offs (1/64, 1/4096), so this walks the lowered cut-off path.
 */
START_TEST(test_top_p_flat)
{
    enum { V = 5000 };
    static float row[V];
    for (int v = 0; v < V; v++)
        row[v] = v == V - 1 ? -INFINITY : 0.0f;
    struct dllm_sampler *s = new_sampler(1, V);
    struct dllm_sampler_params p = dream(1, 1, DLLM_ALG_MASKGIT_PLUS);
    p.top_p = 0.5;
    int32_t canvas[1] = {V - 1};
    start(s, &p, 0, V - 1, NULL, 0, canvas);
    const double *probs;
    ck_assert_int_eq(dllm_sampler_probs_dream(s, row, &probs, NULL), DLLM_OK);
    for (int v = 0; v < V; v++)
        if (!(fabs(probs[v] - (v < 2500 ? 1.0 / 2500 : 0.0)) <= 1e-12))
            ck_abort_msg("p[%d] = %.17g, expected %s", v, probs[v], v < 2500 ? "1/2500" : "0");
    dllm_sampler_free(s);
}
END_TEST

/* Dream's categorical sample at T 1 over p (0.5, 0.3, 0.2): chi-square, 2 dof, < 13.82. */
START_TEST(test_dream_sampling_statistics)
{
    const double probs[3] = {0.5, 0.3, 0.2};
    float row[4];
    row_from_probs(row, 4, probs, 3);
    struct dllm_sampler *s = new_sampler(1, 4);
    struct dllm_sampler_params p = dream(1, 1, DLLM_ALG_MASKGIT_PLUS);
    p.temperature = 1.0;
    p.seed = 3;
    int32_t canvas[1] = {3};
    start(s, &p, 0, 3, NULL, 0, canvas);
    struct dllm_rng rng;
    dllm_sampler_rng_seed(&rng, 3);
    int count[3] = {0};
    const int n = 20000;
    for (int k = 0; k < n; k++) {
        int32_t tok;
        double conf;
        if (dllm_sampler_propose_dream(s, row, &rng, &tok, &conf, NULL) != DLLM_OK)
            ck_abort_msg("draw %d: the proposal failed", k);
        if (!(tok >= 0 && tok < 3))
            ck_abort_msg("draw %d: token %d outside the row", k, (int)tok);
        if (!(fabs(conf - probs[tok]) < TOL))
            ck_abort_msg("draw %d: confidence %.17g, expected %.17g", k, conf, probs[tok]);
        count[tok]++;
    }
    double chi2 = 0.0;
    for (int v = 0; v < 3; v++)
        chi2 += (count[v] - n * probs[v]) * (count[v] - n * probs[v]) / (n * probs[v]);
    ck_assert_msg(chi2 < 13.82, "chi-square %g (%d %d %d)", chi2, count[0], count[1], count[2]);
    dllm_sampler_free(s);
}
END_TEST

/*
 * A threshold over four candidates: every confidence at least the threshold commits, best
 * first, ties to the lower slot; when none reaches it the best one alone commits. A
 * confidence of exactly 1 (a row with one finite logit) meets a threshold of 1.
 */
static const struct {
    double threshold;
    double conf[4];
    int n_commit;
    int order[4];
    double best_left;
} threshold_cases[] = {
    {0.9, {0.95, 0.5, 0.92, 0.3}, 2, {0, 2}, 0.5},
    {0.9, {0.5, 0.6, 0.4, 0.2}, 1, {1}, 0.5},
    {0.9, {0.905, 0.99, 0.95, 0.91}, 4, {1, 2, 3, 0}, NAN},
    {1.0, {1.0, 0.95, 1.0, 0.5}, 2, {0, 2}, 0.95},
};

START_TEST(test_threshold)
{
    struct dllm_sampler *s = new_sampler(8, V8);
    struct dllm_sampler_params p = llada(4, 1, 0);
    p.threshold = threshold_cases[_i].threshold;
    int32_t canvas[6];
    fill_canvas(canvas, 2, 4, MASK8);
    start(s, &p, 2, MASK8, NULL, 0, canvas);
    const int32_t *pos;
    ck_assert_int_eq(next(s, canvas, &pos), 4);
    float logits[4 * V8];
    for (int r = 0; r < 4; r++)
        row_conf(logits + r * V8, (int32_t)r, threshold_cases[_i].conf[r]);
    struct dllm_sampler_result res;
    step(s, canvas, logits, &res);
    ck_assert_int_eq(res.n_committed, threshold_cases[_i].n_commit);
    for (int k = 0; k < res.n_committed; k++) {
        int r = threshold_cases[_i].order[k];
        ck_assert_int_eq(res.committed[k].pos, 2 + r);
        ck_assert_int_eq(res.committed[k].token, r);
        ck_assert_double_eq_tol(res.committed[k].conf, threshold_cases[_i].conf[r], TOL);
    }
    ck_assert(res.has_best_left == !isnan(threshold_cases[_i].best_left));
    if (res.has_best_left)
        ck_assert_double_eq_tol(res.best_left_conf, threshold_cases[_i].best_left, TOL);
    ck_assert(res.done == (res.n_committed == 4));
    dllm_sampler_free(s);
}
END_TEST

/* With a threshold each block runs until full: two blocks of 2 at one commit a step. */
START_TEST(test_threshold_blocks)
{
    struct dllm_sampler *s = new_sampler(8, V8);
    struct dllm_sampler_params p = llada(4, 1, 2);
    p.threshold = 0.9;
    int32_t canvas[5];
    fill_canvas(canvas, 1, 4, MASK8);
    start(s, &p, 1, MASK8, NULL, 0, canvas);
    const int64_t blocks[4] = {0, 0, 1, 1}, rows[4] = {2, 1, 2, 1};
    struct dllm_sampler_result res;
    for (int k = 0; k < 4; k++) {
        const int32_t *pos;
        int64_t n = next(s, canvas, &pos);
        ck_assert_int_eq(n, rows[k]);
        float logits[2 * V8];
        for (int64_t r = 0; r < n; r++)
            row_conf(logits + r * V8, 3, 0.5);
        step(s, canvas, logits, &res);
        ck_assert_int_eq(res.step, k);
        ck_assert_int_eq(res.block, blocks[k]);
        ck_assert_int_eq(res.n_committed, 1);
        ck_assert(res.done == (k == 3));
    }
    dllm_sampler_free(s);
}
END_TEST

/*
 * A whole LLaDA run, 8 slots in blocks of 4, 4 steps: 2 commits a step, the most confident
 * first (slot j has confidence 0.3 + 0.05 j), block by block.
 */
START_TEST(test_llada_run)
{
    struct dllm_sampler *s = new_sampler(16, V8);
    struct dllm_sampler_params p = llada(8, 4, 4);
    int32_t canvas[11];
    fill_canvas(canvas, 3, 8, MASK8);
    start(s, &p, 3, MASK8, NULL, 0, canvas);
    ck_assert_int_eq(dllm_sampler_get_plan(s)->steps_per_block, 2);
    const int32_t order[4][2] = {{6, 5}, {4, 3}, {10, 9}, {8, 7}};
    struct dllm_sampler_result res;
    for (int k = 0; k < 4; k++) {
        const int32_t *pos;
        int64_t n = next(s, canvas, &pos);
        ck_assert_int_eq(n, 4 - 2 * (k % 2));
        float logits[4 * V8];
        for (int64_t r = 0; r < n; r++)
            row_conf(logits + r * V8, 1, 0.3 + 0.05 * (pos[r] - 3));
        step(s, canvas, logits, &res);
        ck_assert_int_eq(res.block, k / 2);
        ck_assert_int_eq(res.n_committed, 2);
        ck_assert_int_eq(res.committed[0].pos, order[k][0]);
        ck_assert_int_eq(res.committed[1].pos, order[k][1]);
        ck_assert_int_eq(res.masks_left, 6 - 2 * k);
        if (k % 2 == 0)
            ck_assert_double_eq_tol(res.best_left_conf, 0.3 + 0.05 * (order[k][1] - 4), TOL);
        else
            ck_assert(!res.has_best_left);
    }
    ck_assert(res.done && !res.stopped_early);
    for (int i = 3; i < 11; i++)
        ck_assert_int_eq(canvas[i], 1);
    struct dllm_error err = {0};
    const int32_t *pos;
    int64_t n;
    ck_assert_int_eq(dllm_sampler_next(s, canvas, &pos, &n, &err), DLLM_ERR_ARG);
    dllm_sampler_free(s);
}
END_TEST

/* Dream G 4 over 4 steps commits 0, 1, 1, 2: the first step asks for no rows at all. */
START_TEST(test_dream_zero_quota)
{
    struct dllm_sampler *s = new_sampler(8, V8);
    struct dllm_sampler_params p = dream(4, 4, DLLM_ALG_MASKGIT_PLUS);
    int32_t canvas[6];
    fill_canvas(canvas, 2, 4, MASK8);
    start(s, &p, 2, MASK8, NULL, 0, canvas);
    const int64_t rows[4] = {0, 4, 3, 2}, commits[4] = {0, 1, 1, 2};
    struct dllm_sampler_result res;
    for (int k = 0; k < 4; k++) {
        const int32_t *pos;
        int64_t n = next(s, canvas, &pos);
        ck_assert_int_eq(n, rows[k]);
        float logits[4 * V8];
        for (int64_t r = 0; r < n; r++)
            row_conf(logits + r * V8, 4, 0.2 + 0.1 * pos[r]);
        step(s, canvas, n ? logits : NULL, &res);
        ck_assert_int_eq(res.n_committed, commits[k]);
        ck_assert(res.done == (k == 3));
    }
    ck_assert_int_eq(res.masks_left, 0);
    dllm_sampler_free(s);
}
END_TEST

/*
 * Dream origin: each of 64 masks commits with probability 1 - tau_1/tau_0 = 0x1.ff7cfp-3
 * (python3 float32, steps 4) at step 0. Over 200 seeds the mean count is 64 times that,
 * 15.984, with a standard error of 0.245. With one step everything commits at once.
 */
START_TEST(test_origin)
{
    struct dllm_sampler *s = new_sampler(64, V8);
    int32_t canvas[64];
    float *logits = malloc(64 * V8 * sizeof *logits);
    ck_assert_ptr_nonnull(logits);
    for (int r = 0; r < 64; r++)
        row_conf(logits + r * V8, 5, 0.7);
    struct dllm_sampler_params p = dream(64, 4, DLLM_ALG_ORIGIN);
    double total = 0.0;
    for (int seed = 0; seed < 200; seed++) {
        p.seed = (uint64_t)seed;
        fill_canvas(canvas, 0, 64, MASK8);
        start(s, &p, 0, MASK8, NULL, 0, canvas);
        const int32_t *pos;
        int64_t n = next(s, canvas, &pos);
        for (int64_t r = 1; r < n; r++)
            ck_assert_int_lt(pos[r - 1], pos[r]);
        struct dllm_sampler_result res;
        step(s, canvas, n ? logits : NULL, &res);
        ck_assert_int_eq(res.n_committed, n);
        for (int64_t r = 0; r < n; r++) {
            ck_assert_int_eq(res.committed[r].pos, pos[r]);
            ck_assert_int_eq(canvas[pos[r]], 5);
        }
        total += (double)n;
    }
    ck_assert_double_eq_tol(total / 200, 64 * 0x1.ff7cfp-3, 1.25);

    p = dream(64, 1, DLLM_ALG_ORIGIN);
    fill_canvas(canvas, 0, 64, MASK8);
    start(s, &p, 0, MASK8, NULL, 0, canvas);
    const int32_t *pos;
    ck_assert_int_eq(next(s, canvas, &pos), 64);
    struct dllm_sampler_result res;
    step(s, canvas, logits, &res);
    ck_assert(res.done && res.n_committed == 64);
    free(logits);
    dllm_sampler_free(s);
}
END_TEST

/*
 * alg_temp 0.1 draws the committed position from softmax(conf / 0.1) over confidences 0.5,
 * 0.3, 0.2 = (0.8437947344813397, 0.11419519938459444, 0.04201006613406606) by python3.
 * 3000 seeded runs; chi-square, 2 dof, < 13.82. Two commits are always distinct positions.
 */
START_TEST(test_alg_temp)
{
    const double conf[3] = {0.5, 0.3, 0.2};
    const double want[3] = {0.8437947344813397, 0.11419519938459444, 0.04201006613406606};
    struct dllm_sampler *s = new_sampler(3, V8);
    float logits[3 * V8];
    for (int r = 0; r < 3; r++)
        row_conf(logits + r * V8, 2, conf[r]);
    int count[3] = {0};
    const int n = 3000;
    for (int seed = 0; seed < n; seed++) {
        struct dllm_sampler_params p = llada(3, 3 - (seed % 2 == 0 ? 0 : 1), 0);
        p.alg_temp = 0.1;
        p.seed = (uint64_t)seed;
        int32_t canvas[3];
        fill_canvas(canvas, 0, 3, MASK8);
        start(s, &p, 0, MASK8, NULL, 0, canvas);
        const int32_t *pos;
        ck_assert_int_eq(next(s, canvas, &pos), 3);
        struct dllm_sampler_result res;
        step(s, canvas, logits, &res);
        /* 3 steps: 1 commit; 2 steps: 2 commits. */
        ck_assert_int_eq(res.n_committed, p.steps == 3 ? 1 : 2);
        if (res.n_committed == 2)
            ck_assert_int_ne(res.committed[0].pos, res.committed[1].pos);
        count[res.committed[0].pos]++;
    }
    double chi2 = 0.0;
    for (int v = 0; v < 3; v++)
        chi2 += (count[v] - n * want[v]) * (count[v] - n * want[v]) / (n * want[v]);
    ck_assert_msg(chi2 < 13.82, "chi-square %g (%d %d %d)", chi2, count[0], count[1], count[2]);
    dllm_sampler_free(s);
}
END_TEST

/* ---- early stop --------------------------------------------------------------------------- */

/* Prompt of 2, then 4 generated slots; mask 9, end-of-generation ids 5 and 6. */
static const struct {
    int32_t canvas[6];
    bool settled;
} eog_cases[] = {
    {{1, 5, 2, 3, 5, 9}, true},  /* EOS with nothing masked before it */
    {{1, 2, 2, 9, 5, 9}, false}, /* EOS committed while an earlier mask remains */
    {{1, 2, 2, 3, 4, 9}, false}, /* no end-of-generation yet */
    {{1, 2, 6, 9, 9, 9}, true},  /* the second id, in the first slot */
    {{5, 6, 9, 9, 9, 9}, false}, /* ids in the prompt do not count */
    {{1, 2, 9, 6, 5, 9}, false}, {{1, 2, 2, 3, 4, 5}, true},
};

START_TEST(test_eog_settled)
{
    const int32_t eog[2] = {5, 6};
    ck_assert(dllm_sampler_eog_settled(eog_cases[_i].canvas, 2, 6, 9, eog, 2) ==
              eog_cases[_i].settled);
}
END_TEST

/*
 * One block of 6 slots, 6 steps (one commit each). Slot 1 proposes EOS (5) at 0.99 and
 * commits first, while slot 0 is still masked: no stop. Slot 0 (0.9) commits next: now the
 * text before the first EOS is final and the run stops with 4 masks left, unless early stop
 * is off.
 */
START_TEST(test_early_stop_run)
{
    bool early = _i == 0;
    struct dllm_sampler *s = new_sampler(8, V8);
    struct dllm_sampler_params p = llada(6, 6, 0);
    p.early_stop = early;
    const int32_t eog[2] = {5, 6};
    int32_t canvas[8];
    fill_canvas(canvas, 2, 6, MASK8);
    start(s, &p, 2, MASK8, eog, 2, canvas);
    struct dllm_sampler_result res;
    int steps = 0;
    do {
        const int32_t *pos;
        int64_t n = next(s, canvas, &pos);
        float logits[6 * V8];
        for (int64_t r = 0; r < n; r++) {
            int slot = pos[r] - 2;
            row_conf(logits + r * V8, slot == 1 ? 5 : 1,
                     slot == 1   ? 0.99
                     : slot == 0 ? 0.9
                                 : 0.2 + 0.01 * slot);
        }
        step(s, canvas, logits, &res);
        steps++;
        if (steps == 1) {
            ck_assert_int_eq(res.committed[0].pos, 3);
            ck_assert_int_eq(res.committed[0].token, 5);
            ck_assert(!res.stopped_early && !res.done);
        }
    } while (!res.done);
    if (early) {
        ck_assert_int_eq(steps, 2);
        ck_assert(res.stopped_early);
        ck_assert_int_eq(res.masks_left, 4);
    } else {
        ck_assert_int_eq(steps, 6);
        ck_assert(!res.stopped_early);
        ck_assert_int_eq(res.masks_left, 0);
    }
    dllm_sampler_free(s);
}
END_TEST

/* ---- threads, kernel variants and exact filters ------------------------------------------- */

/*
 * Runs that the thread count and the row-maths variant must not change: both kinds, every
 * confidence rule, temperatures 0 and above, top-p and top-k, a threshold and alg_temp.
 */
static const struct run_case {
    enum dllm_sampler_kind kind;
    double temperature, top_p, threshold, alg_temp;
    int64_t top_k, block;
    int rule; /* enum dllm_remasking (LLaDA) or enum dllm_alg (Dream) */
} run_cases[] = {
    {DLLM_SAMPLER_LLADA, 0.0, 1.0, 0.0, 0.0, 0, 12, DLLM_REMASKING_LOW_CONFIDENCE},
    {DLLM_SAMPLER_LLADA, 1.0, 1.0, 0.0, 0.0, 0, 0, DLLM_REMASKING_LOW_CONFIDENCE},
    {DLLM_SAMPLER_LLADA, 0.7, 1.0, 0.0, 0.0, 0, 12, DLLM_REMASKING_RANDOM},
    {DLLM_SAMPLER_LLADA, 0.5, 1.0, 0.05, 0.0, 0, 12, DLLM_REMASKING_LOW_CONFIDENCE},
    {DLLM_SAMPLER_DREAM, 0.2, 0.95, 0.0, 0.0, 0, 0, DLLM_ALG_ENTROPY},
    {DLLM_SAMPLER_DREAM, 1.0, 0.9, 0.0, 0.0, 50, 0, DLLM_ALG_MASKGIT_PLUS},
    {DLLM_SAMPLER_DREAM, 0.0, 0.5, 0.0, 0.0, 0, 12, DLLM_ALG_TOPK_MARGIN},
    {DLLM_SAMPLER_DREAM, 0.5, 1.0, 0.0, 0.0, 0, 0, DLLM_ALG_ORIGIN},
    {DLLM_SAMPLER_DREAM, 0.4, 0.95, 0.0, 0.1, 0, 0, DLLM_ALG_ENTROPY},
};

#define RV      3001 /* an odd vocabulary: the kernels' tails run */
#define RMASK   3000
#define RPROMPT 3
#define RGEN    24

/*
 * Logits for slot pos at a step: flat rows (standard deviation 0.05, the nucleus holds most
 * of the vocabulary) on even slots, peaked ones (3) on odd slots, with repeated values.
 */
static void run_logits(float *x, int64_t pos, int64_t step)
{
    uint32_t seed = (uint32_t)(pos * 7919 + step * 104729 + 1);
    double sd = pos % 2 ? 3.0 : 0.05;
    for (int v = 0; v < RV; v++) {
        seed = seed * 1664525u + 1013904223u;
        double u = (double)(seed >> 8) / (double)(1u << 24);
        x[v] = (float)(sd * 3.4641 * (u - 0.5));
        if (v % 97 == 0)
            x[v] = x[v / 2]; /* ties */
    }
}

/* What a whole run committed, step by step. */
struct run_record {
    int32_t canvas[RPROMPT + RGEN];
    int64_t steps;
    struct dllm_commit commits[RGEN];
    int64_t step_of[RGEN]; /* the step of each commit */
    int64_t n_commits;
};

/*
 * Runs case c to the end with a pool of n_threads (0: none) and the row maths of the kernel
 * variant `kernels` (NULL: the fastest), recording every commit.
 */
static void record_run(const struct run_case *c, int n_threads, const char *kernels,
                       struct run_record *rec)
{
    struct dllm_sampler *s = NULL;
    struct dllm_threadpool *pool = NULL;
    struct dllm_error err = {0};
    ck_assert_msg(dllm_sampler_new(RPROMPT + RGEN, RV, n_threads ? n_threads : 1, kernels, &s,
                                   &err) == DLLM_OK,
                  "%s", err.text);
    if (n_threads)
        ck_assert(dllm_threadpool_new(n_threads, &pool, &err) == DLLM_OK);
    struct dllm_sampler_params p;
    dllm_sampler_params_init(&p, c->kind);
    p.gen_length = RGEN;
    p.steps = 12;
    p.block_length = c->block;
    p.temperature = c->temperature;
    p.top_p = c->top_p;
    p.top_k = c->top_k;
    p.threshold = c->threshold;
    p.alg_temp = c->alg_temp;
    p.seed = 1234;
    if (c->kind == DLLM_SAMPLER_LLADA)
        p.remasking = (enum dllm_remasking)c->rule;
    else
        p.alg = (enum dllm_alg)c->rule;
    memset(rec, 0, sizeof *rec);
    fill_canvas(rec->canvas, RPROMPT, RGEN, RMASK);
    start(s, &p, RPROMPT, RMASK, NULL, 0, rec->canvas);
    static float logits[RGEN * RV];
    struct dllm_sampler_result res;
    do {
        const int32_t *pos;
        int64_t n = next(s, rec->canvas, &pos);
        for (int64_t r = 0; r < n; r++)
            run_logits(logits + r * RV, pos[r], rec->steps);
        ck_assert_msg(dllm_sampler_step(s, pool, rec->canvas, n ? logits : NULL, &res, &err) ==
                          DLLM_OK,
                      "%s", err.text);
        for (int64_t k = 0; k < res.n_committed; k++) {
            rec->step_of[rec->n_commits] = res.step;
            rec->commits[rec->n_commits++] = res.committed[k];
        }
        ck_assert_int_lt(++rec->steps, 100);
    } while (!res.done);
    dllm_threadpool_free(pool);
    dllm_sampler_free(s);
}

/* Two records are the same run: every commit, its step, order, token and confidence bits. */
static void assert_same_run(const struct run_record *a, const struct run_record *b,
                            const char *what)
{
    ck_assert_msg(a->steps == b->steps && a->n_commits == b->n_commits, "%s: %lld/%lld steps", what,
                  (long long)a->steps, (long long)b->steps);
    ck_assert_msg(memcmp(a->canvas, b->canvas, sizeof a->canvas) == 0, "%s: canvases differ", what);
    for (int64_t k = 0; k < a->n_commits; k++) {
        const struct dllm_commit *x = &a->commits[k], *y = &b->commits[k];
        ck_assert_msg(a->step_of[k] == b->step_of[k] && x->pos == y->pos && x->token == y->token &&
                          memcmp(&x->conf, &y->conf, sizeof x->conf) == 0,
                      "%s: commit %lld differs: slot %d token %d conf %a vs slot %d token %d "
                      "conf %a",
                      what, (long long)k, (int)x->pos, (int)x->token, x->conf, (int)y->pos,
                      (int)y->token, y->conf);
    }
}

/* Rows proposed on 2 or 3 threads commit bit for bit what one thread does. */
START_TEST(test_threads_same)
{
    static struct run_record serial, threaded;
    record_run(&run_cases[_i], 0, NULL, &serial);
    for (int t = 1; t <= 3; t++) {
        char what[64];
        snprintf(what, sizeof what, "case %d, %d threads", _i, t);
        record_run(&run_cases[_i], t, NULL, &threaded);
        assert_same_run(&serial, &threaded, what);
    }
}
END_TEST

/* Every row-maths variant this CPU runs (chosen by kernel name) commits what the reference does.
 */
START_TEST(test_variants_same)
{
    static struct run_record ref, other;
    record_run(&run_cases[_i], 2, "ref", &ref);
    size_t n;
    const struct dllm_kernels *all = dllm_kernels_all(&n);
    for (size_t k = 1; k < n; k++) {
        if (!dllm_kernels_usable(&all[k])) {
            printf("SKIP: kernels %s: this CPU lacks instructions the variant needs\n",
                   all[k].name);
            continue;
        }
        record_run(&run_cases[_i], 2, all[k].name, &other);
        char what[64];
        snprintf(what, sizeof what, "case %d, kernels %s", _i, all[k].name);
        assert_same_run(&ref, &other, what);
    }
}
END_TEST

/* Ranks two (probability, id) pairs for the brute-force filters: probability descending. */
static int cmp_pair(const void *a, const void *b)
{
    const double *x = a, *y = b; /* {p, id} */
    if (x[0] != y[0])
        return x[0] > y[0] ? -1 : 1;
    return (x[1] > y[1]) - (x[1] < y[1]);
}

/*
 * The filters against a brute-force implementation of their definitions on rows of 20000 ids
 * of several shapes: the probabilities before filtering from dllm_sampler_softmax, the mask
 * zeroed; every entry sorted by probability descending then id; top-p keeps an entry while the
 * mass before it, summed as whole units of 2^-62 (each probability truncated), does not exceed
 * top_p; top-k then drops what is below the k-th largest kept probability; the rest is
 * renormalised. The kept set must match exactly, the values to 1e-15 (the order of the sum).
 * With spikes, ids 0 .. spikes-1 get the logit spike: those hold 93% of the mass and every
 * other id less than 2^-18, so no first cut-off of the nucleus search holds and it starts
 * from its bound (1 - top_p) / n.
 */
static const struct exact_case {
    double sd, temperature, top_p;
    int64_t top_k;
    int spikes;
    double spike;
} exact_cases[] = {
    {0.05, 1.0, 0.95, 0, 0, 0.0}, /* flat: the bracket is halved until it is narrow */
    {1.0, 0.2, 0.95, 0, 0, 0.0},  /* a few thousand ids */
    {3.0, 0.2, 0.9, 0, 0, 0.0},   /* a handful */
    {0.0, 1.0, 0.5, 0, 0, 0.0},   /* all equal: the boundary splits equal probabilities by id */
    {0.02, 1.0, 0.999, 0, 0, 0.0},    {1.0, 1.0, 1.0, 700, 0, 0.0},
    {0.05, 1.0, 0.9, 5000, 0, 0.0},   {2.0, 0.5, 0.8, 3, 0, 0.0},
    {0.05, 1.0, 0.95, 0, 10, 10.2}, /* the boundary among the small ids */
    {0.05, 1.0, 0.95, 100, 10, 10.2},
};

#define EV 20000

START_TEST(test_filters_exact)
{
    const struct exact_case *c = &exact_cases[_i];
    static float row[EV];
    static double p[EV], pairs[EV][2];
    uint32_t seed = 99 + (uint32_t)_i;
    for (int v = 0; v < EV; v++) {
        seed = seed * 1664525u + 1013904223u;
        row[v] = (float)(c->sd * 3.4641 * ((double)(seed >> 8) / (double)(1u << 24) - 0.5));
        if (v % 50 == 0)
            row[v] = row[v / 3]; /* ties */
    }
    for (int v = 0; v < c->spikes; v++)
        row[v] = (float)c->spike;
    const int32_t mask = EV - 1;
    ck_assert_int_eq(dllm_sampler_softmax(row, EV, c->temperature, p, NULL), DLLM_OK);
    p[mask] = 0.0;
    if (c->spikes) {
        double big = 0.0;
        for (int v = 0; v < EV; v++)
            big += p[v] >= 0x1p-18 ? p[v] : 0.0;
        ck_assert_msg(big < c->top_p - 1e-3, "the spikes hold %g", big);
    }
    for (int v = 0; v < EV; v++) {
        pairs[v][0] = p[v];
        pairs[v][1] = v;
    }
    qsort(pairs, EV, sizeof pairs[0], cmp_pair);
    int64_t keep_n = EV;
    if (c->top_p < 1.0) {
        uint64_t limit = (uint64_t)floor(c->top_p * 0x1p62), before = 0;
        for (keep_n = 0; keep_n < EV && before <= limit && pairs[keep_n][0] > 0.0; keep_n++)
            before += (uint64_t)(pairs[keep_n][0] * 0x1p62);
    }
    double kth = 0.0;
    if (c->top_k > 0 && c->top_k < keep_n)
        kth = pairs[c->top_k - 1][0];
    static bool kept[EV];
    memset(kept, 0, sizeof kept);
    double sum = 0.0;
    for (int64_t r = 0; r < keep_n; r++)
        if (pairs[r][0] >= kth && pairs[r][0] > 0.0) {
            kept[(int)pairs[r][1]] = true;
            sum += pairs[r][0];
        }

    struct dllm_sampler *s = new_sampler(1, EV);
    struct dllm_sampler_params par = dream(1, 1, DLLM_ALG_MASKGIT_PLUS);
    par.temperature = c->temperature;
    par.top_p = c->top_p;
    par.top_k = c->top_k;
    int32_t canvas[1] = {mask};
    start(s, &par, 0, mask, NULL, 0, canvas);
    const double *probs;
    ck_assert_int_eq(dllm_sampler_probs_dream(s, row, &probs, NULL), DLLM_OK);
    int n_kept = 0;
    for (int v = 0; v < EV; v++) {
        if ((probs[v] > 0.0) != kept[v])
            ck_abort_msg("case %d id %d: %s, expected %s", _i, v,
                         probs[v] > 0.0 ? "kept" : "dropped", kept[v] ? "kept" : "dropped");
        if (kept[v] && !(fabs(probs[v] - p[v] / sum) <= 1e-15))
            ck_abort_msg("case %d id %d: p %.17g, expected %.17g", _i, v, probs[v], p[v] / sum);
        n_kept += kept[v];
    }
    printf("filters case %d: %d of %d kept\n", _i, n_kept, EV);
    dllm_sampler_free(s);
}
END_TEST

/*
 * On a pool, the error names the first failing row whichever thread met it; a pool larger
 * than the sampler's scratch is refused.
 */
START_TEST(test_threads_errors)
{
    struct dllm_sampler *s = new_sampler(16, V8);
    struct dllm_threadpool *pool = NULL, *big = NULL;
    ck_assert(dllm_threadpool_new(2, &pool, NULL) == DLLM_OK);
    ck_assert(dllm_threadpool_new(3, &big, NULL) == DLLM_OK);
    struct dllm_sampler *s2 = NULL;
    struct dllm_error err = {0};
    ck_assert_int_eq(dllm_sampler_new(16, V8, 2, NULL, &s2, &err), DLLM_OK);
    struct dllm_sampler_params p = llada(8, 8, 0);
    int32_t canvas[10];
    fill_canvas(canvas, 2, 8, MASK8);
    start(s2, &p, 2, MASK8, NULL, 0, canvas);
    const int32_t *pos;
    ck_assert_int_eq(next(s2, canvas, &pos), 8);
    float logits[8 * V8];
    for (int r = 0; r < 8; r++)
        row_conf(logits + r * V8, 1, 0.5);
    struct dllm_sampler_result res;
    ck_assert_int_eq(dllm_sampler_step(s2, big, canvas, logits, &res, &err), DLLM_ERR_ARG);
    ck_assert_str_eq(err.text,
                     "a pool of 3 threads is more than the 2 the sampler has scratch for");
    logits[6 * V8 + 2] = NAN;
    logits[3 * V8 + 1] = INFINITY;
    ck_assert_int_eq(dllm_sampler_step(s2, pool, canvas, logits, &res, &err), DLLM_ERR_ARG);
    ck_assert_str_eq(err.text, "step 0, canvas slot 5: logits row has no finite maximum (inf)");
    dllm_sampler_free(s2);
    dllm_sampler_free(s);
    dllm_threadpool_free(pool);
    dllm_threadpool_free(big);
}
END_TEST

/* ---- errors ------------------------------------------------------------------------------- */

START_TEST(test_errors)
{
    struct dllm_sampler *s = NULL;
    struct dllm_error err = {0};
    ck_assert_int_eq(dllm_sampler_new(0, 8, 1, NULL, &s, &err), DLLM_ERR_ARG);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(dllm_sampler_new(8, 1, 1, NULL, &s, &err), DLLM_ERR_ARG);
    dllm_sampler_free(NULL);

    s = new_sampler(6, V8);
    struct dllm_sampler_params p = llada(4, 4, 0);
    int32_t canvas[8];
    fill_canvas(canvas, 2, 4, MASK8);
    const int32_t *pos;
    int64_t n;
    struct dllm_sampler_result res;
    ck_assert_int_eq(dllm_sampler_next(s, canvas, &pos, &n, &err), DLLM_ERR_ARG);
    ck_assert_int_eq(dllm_sampler_start(s, &p, 3, MASK8, NULL, 0, canvas, &err), DLLM_ERR_ARG);
    ck_assert_str_eq(err.text, "canvas of 3 prompt + 4 generated slots exceeds the sampler's 6");
    ck_assert_int_eq(dllm_sampler_start(s, &p, 2, V8, NULL, 0, canvas, &err), DLLM_ERR_ARG);
    const int32_t eog[9] = {0};
    ck_assert_int_eq(dllm_sampler_start(s, &p, 2, MASK8, eog, 9, canvas, &err), DLLM_ERR_ARG);
    int32_t full[6] = {1, 1, 1, 1, 1, 1};
    ck_assert_int_eq(dllm_sampler_start(s, &p, 2, MASK8, NULL, 0, full, &err), DLLM_ERR_ARG);
    ck_assert_str_eq(err.text, "the generation area [2, 6) holds no mask");

    start(s, &p, 2, MASK8, NULL, 0, canvas);
    ck_assert_int_eq(dllm_sampler_step(s, NULL, canvas, NULL, &res, &err), DLLM_ERR_ARG);
    ck_assert_int_eq(next(s, canvas, &pos), 4);
    ck_assert_int_eq(dllm_sampler_next(s, canvas, &pos, &n, &err), DLLM_ERR_ARG);
    ck_assert_int_eq(dllm_sampler_step(s, NULL, canvas, NULL, &res, &err), DLLM_ERR_ARG);
    float logits[4 * V8];
    for (int r = 0; r < 4; r++)
        row_conf(logits + r * V8, 1, 0.5);
    logits[2 * V8 + 3] = NAN;
    ck_assert_int_eq(dllm_sampler_step(s, NULL, canvas, logits, &res, &err), DLLM_ERR_ARG);
    ck_assert_str_eq(err.text, "step 0, canvas slot 4: logits row holds a NaN");
    /* The failed step ended the run; a new one starts cleanly. */
    ck_assert_int_eq(dllm_sampler_next(s, canvas, &pos, &n, &err), DLLM_ERR_ARG);
    start(s, &p, 2, MASK8, NULL, 0, canvas);
    ck_assert_int_eq(next(s, canvas, &pos), 4);
    dllm_sampler_free(s);
}
END_TEST

/*
 * Which settings take the rows' statistics; a LLaDA step on statistics proposes each row's
 * argmax with confidence e^(max - lse) (golden values: python3 math.exp) and commits the most
 * confident; a row whose argmax is the mask id, or whose figures are not finite, is refused,
 * and so is a run whose settings need the rows.
 */
START_TEST(test_stats_step)
{
    struct dllm_sampler_params p = llada(4, 4, 0);
    ck_assert(dllm_sampler_takes_stats(&p));
    p.remasking = DLLM_REMASKING_RANDOM;
    ck_assert(dllm_sampler_takes_stats(&p));
    p.temperature = 0.5;
    ck_assert(!dllm_sampler_takes_stats(&p));
    p = dream(4, 4, DLLM_ALG_MASKGIT_PLUS);
    p.temperature = 0;
    p.top_p = 1;
    ck_assert(!dllm_sampler_takes_stats(&p));

    struct dllm_sampler *s = new_sampler(6, V8);
    struct dllm_error err = {0};
    struct dllm_sampler_result res;
    const int32_t *pos;
    int32_t canvas[6];
    fill_canvas(canvas, 2, 4, MASK8);
    p = llada(4, 4, 0);
    start(s, &p, 2, MASK8, NULL, 0, canvas);
    ck_assert_int_eq(next(s, canvas, &pos), 4);
    struct dllm_row_stats st[4] = {
        {.argmax = 3, .max = -0.5f, .second = -1.0f, .lse = 0.25, .entropy = 1.0},
        {.argmax = 5, .max = -1.0f, .second = -2.0f, .lse = 0.5, .entropy = 1.0},
        {.argmax = 0, .max = -2.0f, .second = -2.5f, .lse = 0.0, .entropy = 1.0},
        {.argmax = 6, .max = 1.0f, .second = -2.0f, .lse = 3.0, .entropy = 1.0},
    };
    ck_assert(dllm_sampler_stats_suffice(s, st));
    ck_assert_msg(dllm_sampler_step_stats(s, NULL, canvas, st, &res, &err) == DLLM_OK, "%s",
                  err.text);
    ck_assert_int_eq(res.n_committed, 1);
    ck_assert_int_eq(res.committed[0].pos, 2);
    ck_assert_int_eq(res.committed[0].token, 3);
    ck_assert_double_eq_tol(res.committed[0].conf, 0.4723665527410147, 1e-15);
    ck_assert(res.has_best_left);
    ck_assert_double_eq_tol(res.best_left_conf, 0.22313016014842982, 1e-15);
    ck_assert_int_eq(canvas[2], 3);

    /* The mask id as a row's argmax: the statistics do not suffice, and the step refuses. */
    ck_assert_int_eq(next(s, canvas, &pos), 3);
    st[1].argmax = MASK8;
    ck_assert(!dllm_sampler_stats_suffice(s, st));
    ck_assert_int_eq(dllm_sampler_step_stats(s, NULL, canvas, st, &res, &err), DLLM_ERR_ARG);
    ck_assert_str_eq(err.text, "step 1, canvas slot 4: the row's largest logit is the mask "
                               "token's: the step needs the logits row itself");
    fill_canvas(canvas, 2, 4, MASK8);
    start(s, &p, 2, MASK8, NULL, 0, canvas);
    ck_assert_int_eq(next(s, canvas, &pos), 4);
    st[1].argmax = 5;
    st[2].lse = NAN;
    ck_assert_int_eq(dllm_sampler_step_stats(s, NULL, canvas, st, &res, &err), DLLM_ERR_ARG);
    ck_assert_str_eq(err.text, "step 0, canvas slot 4: logits row holds a NaN");
    fill_canvas(canvas, 2, 4, MASK8);
    start(s, &p, 2, MASK8, NULL, 0, canvas);
    ck_assert_int_eq(next(s, canvas, &pos), 4);
    st[2].lse = 0.0;
    st[0].max = INFINITY;
    ck_assert_int_eq(dllm_sampler_step_stats(s, NULL, canvas, st, &res, &err), DLLM_ERR_ARG);
    ck_assert_str_eq(err.text, "step 0, canvas slot 2: logits row has no finite maximum (inf)");

    /* Settings that need the rows refuse statistics and leave the step prepared. */
    p.temperature = 1.0;
    fill_canvas(canvas, 2, 4, MASK8);
    start(s, &p, 2, MASK8, NULL, 0, canvas);
    ck_assert_int_eq(next(s, canvas, &pos), 4);
    st[0].max = -0.5f;
    ck_assert(!dllm_sampler_stats_suffice(s, st));
    ck_assert_int_eq(dllm_sampler_step_stats(s, NULL, canvas, st, &res, &err), DLLM_ERR_ARG);
    ck_assert_str_eq(err.text, "the run's settings need the logits rows, not their statistics");
    float logits[4 * V8];
    for (int r = 0; r < 4; r++)
        row_conf(logits + r * V8, 1, 0.5);
    step(s, canvas, logits, &res);
    ck_assert_int_eq(res.n_committed, 1);
    dllm_sampler_free(s);
}
END_TEST

static Suite *sampler_suite(void)
{
    Suite *s = suite_create("sampler");
    TCase *tc = tcase_create("rng");
    tcase_add_loop_test(tc, test_rng_known, 0, N_OF(rng_cases));
    tcase_add_loop_test(tc, test_rng_keyed, 0, N_OF(keyed_cases));
    tcase_add_test(tc, test_rng_uniform);
    tcase_add_test(tc, test_rng_uniform_open_ends);
    suite_add_tcase(s, tc);

    tc = tcase_create("maths");
    tcase_add_test(tc, test_softmax_values);
    tcase_add_loop_test(tc, test_softmax_nonfinite, 0, N_OF(bad_rows));
    tcase_add_test(tc, test_cfg);
    suite_add_tcase(s, tc);

    tc = tcase_create("schedule");
    tcase_add_loop_test(tc, test_quota_llada, 0, N_OF(llada_quotas));
    tcase_add_loop_test(tc, test_quota_dream_table, 0, N_OF(dream_table));
    tcase_add_loop_test(tc, test_quota_dream_small, 0, N_OF(dream_small));
    tcase_add_test(tc, test_timesteps);
    tcase_add_test(tc, test_plan);
    tcase_add_loop_test(tc, test_params_bad, 0, N_OF(bad_messages));
    tcase_add_test(tc, test_params_good);
    tcase_add_test(tc, test_names);
    suite_add_tcase(s, tc);

    tc = tcase_create("step");
    tcase_add_loop_test(tc, test_tie_break, 0, 2);
    tcase_add_loop_test(tc, test_determinism, 0, 8);
    tcase_add_loop_test(tc, test_draws_per_slot, 0, 2);
    tcase_add_loop_test(tc, test_gumbel_statistics, 0, N_OF(gumbel_temps));
    tcase_add_test(tc, test_random_remasking);
    tcase_add_loop_test(tc, test_mask_never_proposed, 0, 2);
    tcase_add_loop_test(tc, test_dream_algs, 0, N_OF(dream_algs));
    tcase_add_loop_test(tc, test_filters, 0, N_OF(filter_cases));
    tcase_add_test(tc, test_top_p_flat);
    tcase_add_test(tc, test_dream_sampling_statistics);
    tcase_add_loop_test(tc, test_threshold, 0, N_OF(threshold_cases));
    tcase_add_test(tc, test_threshold_blocks);
    tcase_add_test(tc, test_llada_run);
    tcase_add_test(tc, test_dream_zero_quota);
    tcase_add_test(tc, test_origin);
    tcase_add_test(tc, test_alg_temp);
    suite_add_tcase(s, tc);

    tc = tcase_create("early_stop");
    tcase_add_loop_test(tc, test_eog_settled, 0, N_OF(eog_cases));
    tcase_add_loop_test(tc, test_early_stop_run, 0, 2);
    suite_add_tcase(s, tc);

    tc = tcase_create("threads");
    tcase_add_loop_test(tc, test_threads_same, 0, N_OF(run_cases));
    tcase_add_loop_test(tc, test_variants_same, 0, N_OF(run_cases));
    tcase_add_loop_test(tc, test_filters_exact, 0, N_OF(exact_cases));
    tcase_add_test(tc, test_threads_errors);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_stats_step);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return test_run_suite(sampler_suite());
}
