/*
 * Diffusion samplers: LLaDA's generate.py, Dream's diffusion_generate and Fast-dLLM's
 * confidence threshold (NVlabs/Fast-dLLM llada/generate.py), as a schedule plus one step on given
 * logits.
 */
#include "config.h"

#include "sampler.h"

#include "dllm.h"
#include "kernels/rowmath.h"
#include "threadpool.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One candidate slot of a step: its proposal, its confidence and its selection key. */
struct candidate {
    double key; /* what selection ranks by: conf, or conf / alg_temp plus Gumbel noise */
    double conf;
    int32_t pos;
    int32_t token;
};

/*
 * Vocabulary entries ranked for top-p and top-k, in two arrays (copying an entry then stores
 * and loads like-sized values, which the CPU forwards without a stall).
 */
struct ranked {
    double *p;   /* [n_vocab] probabilities; LLaDA's uniform draws */
    int32_t *id; /* [n_vocab] */
};

/* One thread's scratch for the rows it proposes. */
struct row_scratch {
    double *probs;        /* [n_vocab] a Dream row's softmax numerators, then probabilities */
    struct ranked ranked; /* Dream's filters; ranked.p holds LLaDA's draws */
    int64_t failed_row;   /* the first row of the step that failed here; -1: none */
    struct dllm_error failed_err; /* its error */
};

struct dllm_sampler {
    int64_t max_canvas, n_vocab;
    const struct dllm_rowmath *rm; /* the row-maths variant (DLLM_KERNELS or the CPU) */

    /* the run */
    bool running;
    struct dllm_sampler_params params;
    struct dllm_sampler_plan plan;
    int32_t mask_id;
    int32_t eog[DLLM_SAMPLER_MAX_EOG];
    int n_eog;
    int64_t step;        /* steps done in the run */
    int64_t block;       /* the current block */
    int64_t block_step;  /* steps done in the current block */
    int64_t block_masks; /* masks the current block began with */
    int64_t masks_left;  /* masks in the generation area */
    bool prepared;       /* dllm_sampler_next ran, dllm_sampler_step not yet */
    int64_t n_rows;      /* rows of the prepared step */
    int64_t block_left;  /* masks in the current block when the step was prepared */
    int64_t quota;       /* commits of the prepared step; -1: the rule decides (threshold) */

    /* scratch, sized at creation */
    int32_t *positions;          /* [max_canvas] rows of the prepared step */
    struct candidate *cands;     /* [max_canvas] */
    struct dllm_commit *commits; /* [max_canvas] */
    struct row_scratch *scratch; /* [max_threads] */
    int max_threads;
};

/* ---- random numbers --------------------------------------------------------------------- */

/* splitmix64 (Steele, Lea and Flood, 2014): the increment, then two xor-shift-multiplies. */
static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

void dllm_sampler_rng_seed(struct dllm_rng *rng, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        rng->s[i] = splitmix64(&x);
}

void dllm_sampler_rng_seed_at(struct dllm_rng *rng, uint64_t seed, int64_t step, int64_t pos,
                              enum dllm_draw purpose)
{
    const uint64_t parts[3] = {(uint64_t)step, (uint64_t)pos, (uint64_t)purpose};
    uint64_t key = seed;
    for (int i = 0; i < 3; i++) {
        uint64_t x = key;
        key = splitmix64(&x) ^ parts[i];
    }
    dllm_sampler_rng_seed(rng, key);
}

uint64_t dllm_sampler_rng_next(struct dllm_rng *rng)
{
    uint64_t *s = rng->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

double dllm_sampler_rng_uniform(struct dllm_rng *rng)
{
    return (double)(dllm_sampler_rng_next(rng) >> 11) * 0x1.0p-53;
}

double dllm_sampler_rng_uniform_open(struct dllm_rng *rng)
{
    return ((double)(dllm_sampler_rng_next(rng) >> 12) + 0.5) * 0x1.0p-52;
}

/* ---- maths on one logits row ------------------------------------------------------------ */

/*
 * The softmax numerators of a row by the row maths rm, given its largest entry max:
 * y[v] = e^((logits[v] - max) / T) (y may be NULL), and their sum in *sum. A row without a
 * finite maximum, or with a NaN, is DLLM_ERR_ARG.
 */
static enum dllm_status softmax_numerators(const struct dllm_rowmath *rm, const float *logits,
                                           int64_t n, float max, double temperature, double *y,
                                           double *sum, struct dllm_error *err)
{
    if (!isfinite(max))
        return dllm_error_set(err, DLLM_ERR_ARG, "logits row has no finite maximum (%g)",
                              (double)max);
    *sum = rm->exp(logits, n, max, 1.0 / temperature, y);
    if (!isfinite(*sum))
        return dllm_error_set(err, DLLM_ERR_ARG, "logits row holds a NaN");
    return DLLM_OK;
}

enum dllm_status dllm_sampler_softmax(const float *logits, int64_t n, double temperature,
                                      double *probs, struct dllm_error *err)
{
    size_t n_variants;
    const struct dllm_rowmath *ref = dllm_rowmath_all(&n_variants);
    double sum;
    enum dllm_status st =
        softmax_numerators(ref, logits, n, ref->max(logits, n), temperature, probs, &sum, err);
    if (st == DLLM_OK)
        ref->scale(probs, n, 1.0 / sum);
    return st;
}

void dllm_sampler_cfg(float *cond, const float *uncond, int64_t n, double scale)
{
    for (int64_t i = 0; i < n; i++)
        cond[i] = (float)(uncond[i] + (scale + 1.0) * ((double)cond[i] - uncond[i]));
}

/* ---- schedule ----------------------------------------------------------------------------- */

enum dllm_status dllm_sampler_plan_init(struct dllm_sampler_plan *plan,
                                        const struct dllm_sampler_params *params, int64_t n_prompt,
                                        struct dllm_error *err)
{
    enum dllm_status st = dllm_sampler_params_check(params, err);
    if (st != DLLM_OK)
        return st;
    if (n_prompt < 0)
        return dllm_error_set(err, DLLM_ERR_ARG, "prompt length %" PRId64 " is negative", n_prompt);
    int64_t block = params->block_length ? params->block_length : params->gen_length;
    *plan = (struct dllm_sampler_plan){
        .n_prompt = n_prompt,
        .gen_length = params->gen_length,
        .block_length = block,
        .n_blocks = params->gen_length / block,
    };
    if (params->threshold == 0.0)
        plan->steps_per_block = params->steps / plan->n_blocks;
    return DLLM_OK;
}

void dllm_sampler_block_bounds(const struct dllm_sampler_plan *plan, int64_t b, int64_t *start,
                               int64_t *end)
{
    *start = plan->n_prompt + b * plan->block_length;
    *end = *start + plan->block_length;
}

int64_t dllm_sampler_quota_llada(int64_t n, int64_t steps, int64_t i)
{
    return n / steps + (i < n % steps ? 1 : 0);
}

/* The float32 product a * i, rounded once: exact in double (24-bit by < 2^24), then to float. */
static float mul_f32(float a, int64_t i)
{
    return (float)((double)a * (double)i);
}

float dllm_sampler_timestep(int64_t steps, int64_t i, float eps)
{
    int64_t n = steps + 1, halfway = n / 2;
    float start = 1.0f;
    float delta = (eps - start) / (float)(n - 1);
    if (i < halfway)
        return start + mul_f32(delta, i);
    return eps - mul_f32(delta, n - 1 - i);
}

float dllm_sampler_transfer_fraction(int64_t steps, int64_t i, float eps)
{
    if (i >= steps - 1)
        return 1.0f;
    float t = dllm_sampler_timestep(steps, i, eps);
    float s = dllm_sampler_timestep(steps, i + 1, eps);
    float ratio = s / t;
    return 1.0f - ratio;
}

int64_t dllm_sampler_quota_dream(int64_t n, int64_t steps, int64_t i, float eps)
{
    if (i >= steps - 1)
        return n;
    float k = (float)n * dllm_sampler_transfer_fraction(steps, i, eps);
    return (int64_t)k;
}

/* Whether token is one of the end-of-generation ids. */
static bool is_eog(int32_t token, const int32_t *eog, int n_eog)
{
    for (int j = 0; j < n_eog; j++)
        if (token == eog[j])
            return true;
    return false;
}

bool dllm_sampler_eog_settled(const int32_t *canvas, int64_t start, int64_t end, int32_t mask_id,
                              const int32_t *eog, int n_eog)
{
    for (int64_t i = start; i < end; i++) {
        if (canvas[i] == mask_id)
            return false;
        if (is_eog(canvas[i], eog, n_eog))
            return true;
    }
    return false;
}

/* ---- the sampler -------------------------------------------------------------------------- */

enum dllm_status dllm_sampler_new(int64_t max_canvas, int64_t n_vocab, int max_threads,
                                  const char *kernels, struct dllm_sampler **out,
                                  struct dllm_error *err)
{
    *out = NULL;
    if (max_canvas < 1 || max_canvas > INT32_MAX || n_vocab < 2 || n_vocab > INT32_MAX ||
        max_threads < 1 || max_threads > 1024)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "sampler sizes out of range: %" PRId64 " canvas slots (1 .. 2^31-1)"
                              ", %" PRId64 " vocabulary entries (2 .. 2^31-1), %d threads "
                              "(1 .. 1024)",
                              max_canvas, n_vocab, max_threads);
    const struct dllm_rowmath *rm;
    enum dllm_status st = dllm_rowmath_select(kernels, &rm, err);
    if (st != DLLM_OK)
        return st;
    struct dllm_sampler *s = calloc(1, sizeof *s);
    if (!s)
        goto fail;
    s->max_canvas = max_canvas;
    s->n_vocab = n_vocab;
    s->rm = rm;
    size_t c = (size_t)max_canvas, v = (size_t)n_vocab;
    s->positions = malloc(c * sizeof *s->positions);
    s->cands = malloc(c * sizeof *s->cands);
    s->commits = malloc(c * sizeof *s->commits);
    s->scratch = calloc((size_t)max_threads, sizeof *s->scratch);
    if (!s->positions || !s->cands || !s->commits || !s->scratch)
        goto fail;
    s->max_threads = max_threads;
    for (int t = 0; t < max_threads; t++) {
        struct row_scratch *w = &s->scratch[t];
        w->probs = malloc(v * sizeof *w->probs);
        w->ranked.p = malloc(v * sizeof *w->ranked.p);
        w->ranked.id = malloc(v * sizeof *w->ranked.id);
        if (!w->probs || !w->ranked.p || !w->ranked.id)
            goto fail;
    }
    *out = s;
    return DLLM_OK;
fail:
    dllm_sampler_free(s);
    return dllm_error_set(err, DLLM_ERR_NOMEM,
                          "out of memory for a sampler (%" PRId64 " slots, %" PRId64
                          " ids, %d threads)",
                          max_canvas, n_vocab, max_threads);
}

void dllm_sampler_free(struct dllm_sampler *s)
{
    if (!s)
        return;
    free(s->positions);
    free(s->cands);
    free(s->commits);
    for (int t = 0; t < s->max_threads; t++) {
        free(s->scratch[t].probs);
        free(s->scratch[t].ranked.p);
        free(s->scratch[t].ranked.id);
    }
    free(s->scratch);
    free(s);
}

/* Counts the masks of canvas[start, end). */
static int64_t count_masks(const int32_t *canvas, int64_t start, int64_t end, int32_t mask_id)
{
    int64_t n = 0;
    for (int64_t i = start; i < end; i++)
        n += canvas[i] == mask_id;
    return n;
}

/* Moves to the first block from b on that holds a mask; false when there is none. */
static bool enter_block(struct dllm_sampler *s, const int32_t *canvas, int64_t b)
{
    for (; b < s->plan.n_blocks; b++) {
        int64_t start, end;
        dllm_sampler_block_bounds(&s->plan, b, &start, &end);
        int64_t n = count_masks(canvas, start, end, s->mask_id);
        if (n > 0) {
            s->block = b;
            s->block_step = 0;
            s->block_masks = n;
            return true;
        }
    }
    return false;
}

enum dllm_status dllm_sampler_start(struct dllm_sampler *s,
                                    const struct dllm_sampler_params *params, int64_t n_prompt,
                                    int32_t mask_id, const int32_t *eog, int n_eog,
                                    const int32_t *canvas, struct dllm_error *err)
{
    s->running = false;
    struct dllm_sampler_plan plan;
    enum dllm_status st = dllm_sampler_plan_init(&plan, params, n_prompt, err);
    if (st != DLLM_OK)
        return st;
    if (n_prompt > s->max_canvas - params->gen_length)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "canvas of %" PRId64 " prompt + %" PRId64 " generated slots exceeds "
                              "the sampler's %" PRId64,
                              n_prompt, params->gen_length, s->max_canvas);
    if (mask_id < 0 || mask_id >= s->n_vocab)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "mask id %" PRId32 " is outside the %" PRId64 "-entry vocabulary",
                              mask_id, s->n_vocab);
    if (n_eog < 0 || n_eog > DLLM_SAMPLER_MAX_EOG)
        return dllm_error_set(err, DLLM_ERR_ARG, "%d end-of-generation ids: at most %d", n_eog,
                              DLLM_SAMPLER_MAX_EOG);
    s->params = *params;
    s->plan = plan;
    s->mask_id = mask_id;
    s->n_eog = n_eog;
    if (n_eog)
        memcpy(s->eog, eog, (size_t)n_eog * sizeof *eog);
    s->step = 0;
    s->prepared = false;
    int64_t end = n_prompt + params->gen_length;
    s->masks_left = count_masks(canvas, n_prompt, end, mask_id);
    s->block = plan.n_blocks;
    s->running = s->masks_left > 0 && enter_block(s, canvas, 0);
    if (!s->running)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "the generation area [%" PRId64 ", %" PRId64 ") holds no mask",
                              n_prompt, end);
    return DLLM_OK;
}

const struct dllm_sampler_plan *dllm_sampler_get_plan(const struct dllm_sampler *s)
{
    return &s->plan;
}

int64_t dllm_sampler_block(const struct dllm_sampler *s)
{
    return s->block;
}

enum dllm_status dllm_sampler_next(struct dllm_sampler *s, const int32_t *canvas,
                                   const int32_t **positions, int64_t *n_rows,
                                   struct dllm_error *err)
{
    if (!s->running)
        return dllm_error_set(err, DLLM_ERR_ARG, "the sampler has no run in progress");
    if (s->prepared)
        return dllm_error_set(err, DLLM_ERR_ARG, "a step is already prepared: run it first");
    const struct dllm_sampler_params *p = &s->params;
    int64_t start, end, n = 0;
    dllm_sampler_block_bounds(&s->plan, s->block, &start, &end);
    for (int64_t i = start; i < end; i++)
        if (canvas[i] == s->mask_id)
            s->positions[n++] = (int32_t)i;
    s->block_left = n;

    int64_t spb = s->plan.steps_per_block;
    float eps = (float)p->eps;
    if (p->threshold != 0.0) {
        s->quota = -1;
    } else if (p->kind == DLLM_SAMPLER_LLADA) {
        s->quota = dllm_sampler_quota_llada(s->block_masks, spb, s->block_step);
    } else if (p->alg == DLLM_ALG_ORIGIN) {
        /* Each mask flips its own coin; the picked ones all commit. */
        double frac = dllm_sampler_transfer_fraction(spb, s->block_step, eps);
        int64_t m = 0;
        for (int64_t r = 0; r < n; r++) {
            struct dllm_rng rng;
            dllm_sampler_rng_seed_at(&rng, p->seed, s->step, s->positions[r], DLLM_DRAW_COIN);
            if (dllm_sampler_rng_uniform(&rng) < frac)
                s->positions[m++] = s->positions[r];
        }
        n = m;
        s->quota = m;
    } else {
        s->quota = dllm_sampler_quota_dream(n, spb, s->block_step, eps);
    }
    if (s->quota == 0)
        n = 0;
    s->n_rows = n;
    s->prepared = true;
    *positions = s->positions;
    *n_rows = n;
    return DLLM_OK;
}

/* The largest entry of x[0 .. n-1] other than x[skip] (NaNs ignored; -inf when none). */
static float max_but(const struct dllm_rowmath *rm, const float *x, int64_t n, int32_t skip)
{
    float a = rm->max(x, skip), b = rm->max(x + skip + 1, n - skip - 1);
    return a > b ? a : b;
}

/* The first index other than skip where x[0 .. n-1] holds m; the first other than skip if none. */
static int32_t first_equal(const float *x, int64_t n, int32_t skip, float m)
{
    for (int64_t v = 0; v < n; v++)
        if (x[v] == m && v != skip)
            return (int32_t)v;
    return skip == 0 ? 1 : 0;
}

/*
 * The Gumbel-max proposal over every id but skip: the kernel on the ids before skip and on
 * those after it, the earlier range winning ties.
 */
static int32_t gumbel_argmax(const struct dllm_rowmath *rm, const float *logits, const double *u,
                             int64_t n, double t, int32_t skip)
{
    double b0 = -INFINITY, b1 = -INFINITY;
    int64_t a0 = -1, a1 = -1;
    if (skip > 0)
        a0 = rm->gumbel_argmax(logits, u, skip, t, &b0);
    if (skip + 1 < n)
        a1 = skip + 1 + rm->gumbel_argmax(logits + skip + 1, u + skip + 1, n - skip - 1, t, &b1);
    return (int32_t)(a0 >= 0 && !(b1 > b0) ? a0 : a1);
}

/* dllm_sampler_propose_llada on the scratch w. */
static enum dllm_status propose_llada(const struct dllm_sampler *s, struct row_scratch *w,
                                      const float *logits, struct dllm_rng *rng, int32_t *token,
                                      double *conf, struct dllm_error *err)
{
    int64_t nv = s->n_vocab;
    float rest = max_but(s->rm, logits, nv, s->mask_id);
    float max = logits[s->mask_id] > rest ? logits[s->mask_id] : rest;
    double sum;
    enum dllm_status st = softmax_numerators(s->rm, logits, nv, max, 1.0, NULL, &sum, err);
    if (st != DLLM_OK)
        return st;
    double t = s->params.temperature;
    int32_t x;
    if (t == 0.0) {
        x = first_equal(logits, nv, s->mask_id, rest);
    } else {
        /* argmax of exp(l) / (-ln u)^T, taken in the log domain: l - T ln(-ln u). */
        double *u = w->ranked.p;
        for (int64_t v = 0; v < nv; v++)
            u[v] = dllm_sampler_rng_uniform_open(rng);
        x = gumbel_argmax(s->rm, logits, u, nv, t, s->mask_id);
    }
    *token = x;
    /* The softmax numerator of x, as the kernel computed it. */
    *conf = s->params.remasking == DLLM_REMASKING_RANDOM
                ? dllm_sampler_rng_uniform(rng)
                : dllm_rowmath_exp(((double)logits[x] - max) * 1.0) * (1.0 / sum);
    return DLLM_OK;
}

/*
 * LLaDA's proposal at temperature 0 from a row's statistics: its argmax, with the softmax
 * probability e^(max - lse) (low_confidence) or one uniform draw (random) as confidence. A row
 * whose argmax is the mask id is refused (its proposal is the runner-up, whose id the
 * statistics do not carry).
 */
static enum dllm_status propose_llada_stats(const struct dllm_sampler *s,
                                            const struct dllm_row_stats *st, struct dllm_rng *rng,
                                            int32_t *token, double *conf, struct dllm_error *err)
{
    if (!isfinite(st->max))
        return dllm_error_set(err, DLLM_ERR_ARG, "logits row has no finite maximum (%g)",
                              (double)st->max);
    if (!isfinite(st->lse))
        return dllm_error_set(err, DLLM_ERR_ARG, "logits row holds a NaN");
    if (st->argmax == s->mask_id)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "the row's largest logit is the mask token's: the step needs the "
                              "logits row itself");
    *token = st->argmax;
    *conf = s->params.remasking == DLLM_REMASKING_RANDOM
                ? dllm_sampler_rng_uniform(rng)
                : dllm_rowmath_exp((double)st->max - st->lse);
    return DLLM_OK;
}

enum dllm_status dllm_sampler_propose_llada(struct dllm_sampler *s, const float *logits,
                                            struct dllm_rng *rng, int32_t *token, double *conf,
                                            struct dllm_error *err)
{
    return propose_llada(s, &s->scratch[0], logits, rng, token, conf, err);
}

/* Whether entry i of r ranks before entry j: probability descending, then id ascending. */
static bool ranks_before(struct ranked r, int64_t i, int64_t j)
{
    return r.p[i] > r.p[j] || (r.p[i] == r.p[j] && r.id[i] < r.id[j]);
}

static void swap_ranked(struct ranked r, int64_t i, int64_t j)
{
    double p = r.p[i];
    int32_t id = r.id[i];
    r.p[i] = r.p[j];
    r.id[i] = r.id[j];
    r.p[j] = p;
    r.id[j] = id;
}

/*
 * Partitions entries [lo, hi) of r (at least 3) around the median by rank of the first,
 * middle and last: returns the pivot's final index k, with the entries ranked before it in
 * [lo, k) and those after it in (k, hi). Ids are distinct, so no two entries rank equal. The
 * scan has no data-dependent branch (nearly flat rows would mispredict half of them): each
 * entry is swapped with the first one not ranked before the pivot, and that boundary advances
 * by the comparison's 0 or 1.
 */
static int64_t partition(struct ranked r, int64_t lo, int64_t hi)
{
    int64_t mid = lo + (hi - lo) / 2, last = hi - 1;
    if (ranks_before(r, mid, lo))
        swap_ranked(r, mid, lo);
    if (ranks_before(r, last, mid))
        swap_ranked(r, last, mid);
    if (ranks_before(r, mid, lo))
        swap_ranked(r, mid, lo);
    swap_ranked(r, mid, last);
    const double pivot_p = r.p[last];
    const int32_t pivot_id = r.id[last];
    int64_t k = lo;
    for (int64_t j = lo; j < last; j++) {
        double p = r.p[j];
        int32_t id = r.id[j];
        int before = (p > pivot_p) | ((p == pivot_p) & (id < pivot_id));
        r.p[j] = r.p[k];
        r.id[j] = r.id[k];
        r.p[k] = p;
        r.id[k] = id;
        k += before;
    }
    swap_ranked(r, k, last);
    return k;
}

/* Restores the heap below node i of the n entries from base (the entry ranked last on top). */
static void sift_down(struct ranked r, int64_t base, int64_t n, int64_t i)
{
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= n)
            return;
        if (c + 1 < n && ranks_before(r, base + c, base + c + 1))
            c++;
        if (!ranks_before(r, base + i, base + c))
            return;
        swap_ranked(r, base + i, base + c);
        i = c;
    }
}

/* Sorts entries [lo, hi) of r by rank (heapsort: no allocation, O(n log n) whatever the data). */
static void sort_ranked(struct ranked r, int64_t lo, int64_t hi)
{
    int64_t n = hi - lo;
    for (int64_t i = n / 2 - 1; i >= 0; i--)
        sift_down(r, lo, n, i);
    for (int64_t m = n - 1; m > 0; m--) {
        swap_ranked(r, lo, lo + m);
        sift_down(r, lo, m, 0);
    }
}

/*
 * Ranges this short are sorted rather than partitioned, and so is any range left after
 * PARTITION_ROUNDS rounds (pivots that keep splitting badly), so that the cost stays
 * O(n log n) whatever the row.
 */
#define PARTITION_SHORT  16
#define PARTITION_ROUNDS 64

/*
 * The index among the n entries of r (reordered) of the last entry of the top-p nucleus, when
 * `before` is the fixed-point mass of the entries ranked before all of them: the first by
 * rank at which the mass up to and including it exceeds top_p; -1 when none does (all stay).
 * Partitions narrow the range holding it without sorting the rest: an entry ranked before a
 * kept pivot is kept, one ranked after a dropped pivot is dropped.
 */
static int64_t nucleus_end(struct ranked r, int64_t n, uint64_t before, double top_p)
{
    /* For a whole number m, m > top_p 2^62 exactly when m > floor(top_p 2^62). */
    uint64_t limit = (uint64_t)floor(top_p * 0x1p62);
    int64_t lo = 0, hi = n; /* before: the mass ranked before entry lo */
    for (int round = 0; hi - lo > PARTITION_SHORT && round < PARTITION_ROUNDS; round++) {
        int64_t k = partition(r, lo, hi);
        uint64_t left = 0;
        for (int64_t i = lo; i < k; i++)
            left += dllm_rowmath_fixed_mass(r.p[i]);
        if (before + left > limit) {
            hi = k;
            continue;
        }
        before += left + dllm_rowmath_fixed_mass(r.p[k]);
        if (before > limit)
            return k;
        lo = k + 1;
    }
    sort_ranked(r, lo, hi);
    for (int64_t i = lo; i < hi; i++) {
        before += dllm_rowmath_fixed_mass(r.p[i]);
        if (before > limit)
            return i;
    }
    return -1;
}

/* Reorders the n entries of r so that entry k is the one of rank k (0 <= k < n). */
static void select_rank(struct ranked r, int64_t n, int64_t k)
{
    int64_t lo = 0, hi = n;
    for (int round = 0; hi - lo > PARTITION_SHORT && round < PARTITION_ROUNDS; round++) {
        int64_t m = partition(r, lo, hi);
        if (m == k)
            return;
        if (k < m)
            hi = m;
        else
            lo = m + 1;
    }
    sort_ranked(r, lo, hi);
}

/*
 * The margin by which a floating-point mass must clear top_p to decide a side: far above its
 * rounding (n 2^-53) and the fixed-point truncation (n 2^-62) for any vocabulary below 2^31.
 */
#define TOP_P_SLACK 1e-6

/* Entries of the bracket around the nucleus boundary few enough to rank directly. */
#define TOP_P_BAND 1024

/*
 * Narrows the bracket [*lo, *hi) of the nucleus boundary by one sum_from pass over the
 * cut-offs c (ascending): the largest whose mass exceeds top_p by TOP_P_SLACK becomes lo, the
 * smallest whose mass is below it by as much becomes hi, with their entry counts.
 */
static void narrow(const struct dllm_rowmath *rm, const double *p, int64_t n, double top_p,
                   const double *c, double *lo, int64_t *n_lo, double *hi, int64_t *n_hi)
{
    double sum[DLLM_ROWMATH_CUTS];
    int64_t count[DLLM_ROWMATH_CUTS];
    rm->sum_from(p, n, c, sum, count);
    for (int j = 0; j < DLLM_ROWMATH_CUTS; j++) {
        if (sum[j] > top_p + TOP_P_SLACK && c[j] > *lo) {
            *lo = c[j];
            *n_lo = count[j];
        }
        int k = DLLM_ROWMATH_CUTS - 1 - j;
        if (sum[k] < top_p - TOP_P_SLACK && c[k] < *hi) {
            *hi = c[k];
            *n_hi = count[k];
        }
    }
}

/*
 * The last entry of the top-p nucleus of p (w->probs), by probability *theta and id *last, and
 * the nucleus's size in *size; false when every entry stays. Its probability is first
 * bracketed in [lo, hi): the mass of the entries >= lo exceeds top_p (so the boundary is not
 * below lo) and that of the entries >= hi does not (so all of those stay), the masses summed
 * in floating point and required to clear top_p by TOP_P_SLACK. A first pass tries the
 * cut-offs 2^-18, 2^-12, 2^-6; when none holds, lo becomes the bound
 * (1 - top_p - 2 TOP_P_SLACK) / n, which needs no pass: the n or fewer entries below it hold
 * less than n times it, so those >= it hold more than top_p + 2 TOP_P_SLACK less the rounding
 * of the normalisation (below n 2^-52, far under TOP_P_SLACK). While more than TOP_P_BAND
 * entries lie in the bracket, passes at the DLLM_ROWMATH_CUTS points that split its bit
 * patterns (which order positive doubles) evenly narrow it. Only the entries of the bracket
 * are then ranked, after the exact mass of those above it.
 */
static bool nucleus(const struct dllm_sampler *s, struct row_scratch *w, double top_p,
                    double *theta, int32_t *last, int64_t *size)
{
    const double *p = w->probs, first[DLLM_ROWMATH_CUTS] = {0x1p-18, 0x1p-12, 0x1p-6};
    double lo = 0.0, hi = 2.0;                  /* no probability reaches 2 */
    int64_t n = s->n_vocab, n_lo = n, n_hi = 0; /* entries >= lo, >= hi */
    narrow(s->rm, p, n, top_p, first, &lo, &n_lo, &hi, &n_hi);
    double bound = (1.0 - top_p - 2.0 * TOP_P_SLACK) / (double)n;
    if (lo == 0.0 && bound > 0.0 && bound < hi)
        lo = bound; /* n_lo stays n, an upper bound */
    while (lo > 0.0 && n_lo - n_hi > TOP_P_BAND) {
        uint64_t a = dllm_rowmath_bits(lo), b = dllm_rowmath_bits(hi);
        double c[DLLM_ROWMATH_CUTS], was_lo = lo, was_hi = hi;
        for (int j = 0; j < DLLM_ROWMATH_CUTS; j++)
            c[j] =
                dllm_rowmath_from_bits(a + (b - a) / (DLLM_ROWMATH_CUTS + 1) * (uint64_t)(j + 1));
        narrow(s->rm, p, n, top_p, c, &lo, &n_lo, &hi, &n_hi);
        if (lo == was_lo && hi == was_hi)
            break; /* the boundary is within rounding of the cut-offs: rank the bracket */
    }
    uint64_t above;
    int64_t n_band = s->rm->band(p, n, lo, hi, n_hi > n / 8, w->ranked.p, w->ranked.id, &above);
    int64_t end = nucleus_end(w->ranked, n_band, above, top_p);
    if (end < 0)
        return false;
    *theta = w->ranked.p[end];
    *last = w->ranked.id[end];
    *size = n_hi + end + 1;
    return true;
}

/*
 * The k-th largest probability of p (w->probs) among the `size` entries the top-p nucleus
 * (theta, last) keeps, in *kth; false when k or fewer are positive (then it is 0 or the
 * smallest positive one, and nothing drops).
 */
static bool kth_largest(const struct dllm_sampler *s, struct row_scratch *w, int64_t k,
                        double theta, int32_t last, int64_t size, double *kth)
{
    int64_t n =
        s->rm->keep(w->probs, s->n_vocab, theta, last, 0.0, size, w->ranked.p, w->ranked.id);
    if (n <= k)
        return false;
    select_rank(w->ranked, n, k - 1);
    *kth = w->ranked.p[k - 1];
    return true;
}

/*
 * The entries a Dream row keeps after its filters, in id order: p[i] for id id[i]; or, with
 * id NULL, the whole row (p[v] for id v, zeros included).
 */
struct kept {
    double *p;
    const int32_t *id;
    int64_t n;
};

/*
 * dllm_sampler_probs_dream on the scratch w, as the kept entries: the whole of w->probs when
 * no filter drops anything, else the survivors of both filters in w->ranked.
 */
static enum dllm_status probs_dream(const struct dllm_sampler *s, struct row_scratch *w,
                                    const float *logits, struct kept *kept, struct dllm_error *err)
{
    const struct dllm_sampler_params *par = &s->params;
    const struct dllm_rowmath *rm = s->rm;
    int64_t nv = s->n_vocab;
    double t = par->temperature > 0.0 ? par->temperature : 1.0, sum;
    double *p = w->probs;
    enum dllm_status st = softmax_numerators(rm, logits, nv, rm->max(logits, nv), t, p, &sum, err);
    if (st != DLLM_OK)
        return st;
    rm->scale(p, nv, 1.0 / sum);
    p[s->mask_id] = 0.0;
    double theta = 0.0, kth = 0.0;
    int32_t last = INT32_MAX;
    int64_t size = nv; /* the entries the filters keep, at most */
    bool filtered = par->top_p < 1.0 && nucleus(s, w, par->top_p, &theta, &last, &size);
    if (par->top_k > 0 && par->top_k < nv &&
        kth_largest(s, w, par->top_k, theta, last, size, &kth)) {
        filtered = true;
        size = par->top_k; /* ties with the k-th aside */
    }
    *kept = (struct kept){p, NULL, nv};
    if (filtered)
        *kept = (struct kept){w->ranked.p, w->ranked.id,
                              rm->keep(p, nv, theta, last, kth, size, w->ranked.p, w->ranked.id)};
    sum = rm->sum(kept->p, kept->n);
    if (!(sum > 0.0))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "logits row puts all its probability on the mask token");
    rm->scale(kept->p, kept->n, 1.0 / sum);
    return DLLM_OK;
}

enum dllm_status dllm_sampler_probs_dream(struct dllm_sampler *s, const float *logits,
                                          const double **probs, struct dllm_error *err)
{
    struct row_scratch *w = &s->scratch[0];
    struct kept kept;
    enum dllm_status st = probs_dream(s, w, logits, &kept, err);
    if (st != DLLM_OK)
        return st;
    if (kept.id) {
        memset(w->probs, 0, (size_t)s->n_vocab * sizeof *w->probs);
        for (int64_t i = 0; i < kept.n; i++)
            w->probs[kept.id[i]] = kept.p[i];
    }
    *probs = w->probs;
    return DLLM_OK;
}

/* dllm_sampler_propose_dream on the scratch w. */
static enum dllm_status propose_dream(const struct dllm_sampler *s, struct row_scratch *w,
                                      const float *logits, struct dllm_rng *rng, int32_t *token,
                                      double *conf, struct dllm_error *err)
{
    struct kept k;
    enum dllm_status st = probs_dream(s, w, logits, &k, err);
    if (st != DLLM_OK)
        return st;
    int64_t at = 0; /* the proposal's place among the kept entries */
    if (s->params.temperature > 0.0) {
        /* Inverse CDF in id order; rounding can leave u above the total: take the last id. */
        double u = dllm_sampler_rng_uniform(rng), cum = 0.0;
        for (int64_t i = 0; i < k.n; i++) {
            if (k.p[i] <= 0.0)
                continue;
            at = i;
            cum += k.p[i];
            if (cum > u)
                break;
        }
    } else {
        for (int64_t i = 1; i < k.n; i++)
            if (k.p[i] > k.p[at])
                at = i;
    }
    *token = k.id ? k.id[at] : (int32_t)at;
    switch (s->params.alg) {
    case DLLM_ALG_TOPK_MARGIN: {
        double first = 0.0, second = 0.0;
        for (int64_t i = 0; i < k.n; i++) {
            if (k.p[i] > first) {
                second = first;
                first = k.p[i];
            } else if (k.p[i] > second) {
                second = k.p[i];
            }
        }
        *conf = first - second;
        break;
    }
    case DLLM_ALG_ENTROPY: *conf = s->rm->neg_entropy(k.p, k.n); break;
    default: *conf = k.p[at]; break;
    }
    return DLLM_OK;
}

enum dllm_status dllm_sampler_propose_dream(struct dllm_sampler *s, const float *logits,
                                            struct dllm_rng *rng, int32_t *token, double *conf,
                                            struct dllm_error *err)
{
    return propose_dream(s, &s->scratch[0], logits, rng, token, conf, err);
}

/* Orders candidates by key descending, then position ascending. */
static int cmp_candidate(const void *a, const void *b)
{
    const struct candidate *x = a, *y = b;
    if (x->key != y->key)
        return x->key > y->key ? -1 : 1;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

/*
 * Chooses the candidates to commit and moves them to the front of s->cands, in selection
 * order; returns their count. Threshold: the best, then every other at least that confident.
 * alg_temp > 0: the top quota by conf / alg_temp plus Gumbel noise, which draws positions
 * without replacement from softmax(conf / alg_temp). Otherwise the top quota by confidence.
 */
static int64_t select_commits(struct dllm_sampler *s, int64_t n)
{
    const struct dllm_sampler_params *p = &s->params;
    struct candidate *c = s->cands;
    if (p->kind == DLLM_SAMPLER_DREAM && p->alg == DLLM_ALG_ORIGIN)
        return n;
    for (int64_t r = 0; r < n && p->alg_temp > 0.0; r++) {
        struct dllm_rng rng;
        dllm_sampler_rng_seed_at(&rng, p->seed, s->step, c[r].pos, DLLM_DRAW_KEY);
        c[r].key = c[r].conf / p->alg_temp - log(-log(dllm_sampler_rng_uniform_open(&rng)));
    }
    qsort(c, (size_t)n, sizeof *c, cmp_candidate);
    if (s->quota >= 0)
        return s->quota < n ? s->quota : n;
    int64_t k = 1;
    while (k < n && c[k].conf >= p->threshold)
        k++;
    return k;
}

/* One step's proposals: the sampler and the logits rows, or their statistics. */
struct step_job {
    struct dllm_sampler *s;
    const float *logits;                /* [n_rows, n_vocab], or NULL */
    const struct dllm_row_stats *stats; /* [n_rows] when logits is NULL */
};

/*
 * Proposes row r into candidate r on thread's scratch (a dllm_work_fn). A failure is kept in
 * the scratch when it is the first row to fail there.
 */
static void propose_row(void *ctx, int64_t r, int thread)
{
    const struct step_job *job = ctx;
    struct dllm_sampler *s = job->s;
    struct row_scratch *w = &s->scratch[thread];
    struct candidate *c = &s->cands[r];
    c->pos = s->positions[r];
    struct dllm_rng rng;
    dllm_sampler_rng_seed_at(&rng, s->params.seed, s->step, c->pos, DLLM_DRAW_ROW);
    struct dllm_error row_err;
    enum dllm_status st;
    if (!job->logits)
        st = propose_llada_stats(s, &job->stats[r], &rng, &c->token, &c->conf, &row_err);
    else if (s->params.kind == DLLM_SAMPLER_LLADA)
        st = propose_llada(s, w, job->logits + r * s->n_vocab, &rng, &c->token, &c->conf, &row_err);
    else
        st = propose_dream(s, w, job->logits + r * s->n_vocab, &rng, &c->token, &c->conf, &row_err);
    c->key = c->conf;
    if (st != DLLM_OK && (w->failed_row < 0 || r < w->failed_row)) {
        w->failed_row = r;
        w->failed_err = row_err;
    }
}

bool dllm_sampler_takes_stats(const struct dllm_sampler_params *p)
{
    return p->kind == DLLM_SAMPLER_LLADA && p->temperature == 0.0;
}

bool dllm_sampler_stats_suffice(const struct dllm_sampler *s, const struct dllm_row_stats *stats)
{
    if (!s->prepared || !dllm_sampler_takes_stats(&s->params))
        return false;
    for (int64_t r = 0; r < s->n_rows; r++)
        if (stats[r].argmax == s->mask_id)
            return false;
    return true;
}

/*
 * dllm_sampler_step on the rows (logits) or on their statistics (stats, with logits NULL):
 * the proposals on the pool, then the commits.
 */
static enum dllm_status run_step(struct dllm_sampler *s, struct dllm_threadpool *pool,
                                 int32_t *canvas, const float *logits,
                                 const struct dllm_row_stats *stats,
                                 struct dllm_sampler_result *res, struct dllm_error *err)
{
    enum dllm_status st = DLLM_OK;
    if (!s->running || !s->prepared)
        return dllm_error_set(err, DLLM_ERR_ARG, "no step is prepared: call dllm_sampler_next");
    int64_t n = s->n_rows;
    if (n > 0 && !logits && !stats)
        return dllm_error_set(err, DLLM_ERR_ARG, "the step needs %" PRId64 " logits rows", n);
    if (n > 0 && !logits && !dllm_sampler_takes_stats(&s->params))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "the run's settings need the logits rows, not their statistics");
    int n_threads = pool ? dllm_threadpool_size(pool) : 1;
    if (n_threads > s->max_threads)
        return dllm_error_set(
            err, DLLM_ERR_ARG,
            "a pool of %d threads is more than the %d the sampler has scratch for", n_threads,
            s->max_threads);
    s->prepared = false;
    struct step_job job = {s, logits, stats};
    for (int t = 0; t < n_threads; t++)
        s->scratch[t].failed_row = -1;
    if (pool)
        dllm_threadpool_run(pool, n, propose_row, &job);
    else
        for (int64_t r = 0; r < n; r++)
            propose_row(&job, r, 0);
    const struct row_scratch *failed = NULL;
    for (int t = 0; t < n_threads; t++)
        if (s->scratch[t].failed_row >= 0 &&
            (!failed || s->scratch[t].failed_row < failed->failed_row))
            failed = &s->scratch[t];
    if (failed) {
        st = failed->failed_err.status;
        if (err)
            *err = failed->failed_err;
        dllm_error_prefix(err, "step %" PRId64 ", canvas slot %" PRId32, s->step,
                          s->cands[failed->failed_row].pos);
        goto fail;
    }

    int64_t k = select_commits(s, n);
    for (int64_t r = 0; r < k; r++) {
        const struct candidate *c = &s->cands[r];
        canvas[c->pos] = c->token;
        s->commits[r] = (struct dllm_commit){c->pos, c->token, c->conf};
    }
    double best = -INFINITY;
    for (int64_t r = k; r < n; r++)
        if (s->cands[r].conf > best)
            best = s->cands[r].conf;

    s->masks_left -= k;
    int64_t start = s->plan.n_prompt, end = start + s->plan.gen_length;
    bool stop = s->params.early_stop &&
                dllm_sampler_eog_settled(canvas, start, end, s->mask_id, s->eog, s->n_eog);
    *res = (struct dllm_sampler_result){
        .step = s->step,
        .block = s->block,
        .committed = s->commits,
        .n_committed = k,
        .has_best_left = k < n,
        .best_left_conf = k < n ? best : 0.0,
        .masks_left = s->masks_left,
        .stopped_early = stop && s->masks_left > 0,
    };
    s->step++;
    s->block_step++;
    bool block_over = s->block_left == k ||
                      (s->params.threshold == 0.0 && s->block_step == s->plan.steps_per_block);
    if (block_over && !enter_block(s, canvas, s->block + 1))
        s->running = false;
    if (s->masks_left == 0 || res->stopped_early)
        s->running = false;
    res->done = !s->running;
    return DLLM_OK;
fail:
    s->running = false;
    return st;
}

enum dllm_status dllm_sampler_step(struct dllm_sampler *s, struct dllm_threadpool *pool,
                                   int32_t *canvas, const float *logits,
                                   struct dllm_sampler_result *res, struct dllm_error *err)
{
    return run_step(s, pool, canvas, logits, NULL, res, err);
}

enum dllm_status dllm_sampler_step_stats(struct dllm_sampler *s, struct dllm_threadpool *pool,
                                         int32_t *canvas, const struct dllm_row_stats *stats,
                                         struct dllm_sampler_result *res, struct dllm_error *err)
{
    return run_step(s, pool, canvas, NULL, stats, res, err);
}
