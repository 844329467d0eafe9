/*
 * Diffusion samplers: LLaDA's generate.py, Dream's diffusion_generate and Fast-dLLM's
 * confidence threshold (reference.md part B), as a schedule plus one step on given logits.
 */
#include "config.h"

#include "sampler.h"

#include "error.h"

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

/* A vocabulary entry ranked for top-p. */
struct ranked {
    double p;
    int32_t id;
};

struct dllm_sampler {
    int64_t max_canvas, n_vocab;

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
    double *probs;               /* [n_vocab] one row's probabilities */
    struct ranked *ranked;       /* [n_vocab] top-p candidates */
    double *heap;                /* [n_vocab] top-k min-heap */
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
    return ((double)(dllm_sampler_rng_next(rng) >> 11) + 0.5) * 0x1.0p-53;
}

/* ---- maths on one logits row ------------------------------------------------------------ */

enum dllm_status dllm_sampler_softmax(const float *logits, int64_t n, double temperature,
                                      double *probs, struct dllm_error *err)
{
    float max = -INFINITY;
    for (int64_t v = 0; v < n; v++)
        if (logits[v] > max)
            max = logits[v];
    if (!isfinite(max))
        return dllm_error_set(err, DLLM_ERR_ARG, "logits row has no finite maximum (%g)",
                              (double)max);
    double inv_t = 1.0 / temperature, sum = 0.0;
    for (int64_t v = 0; v < n; v++) {
        probs[v] = exp(((double)logits[v] - max) * inv_t);
        sum += probs[v];
    }
    if (!isfinite(sum))
        return dllm_error_set(err, DLLM_ERR_ARG, "logits row holds a NaN");
    double inv_sum = 1.0 / sum;
    for (int64_t v = 0; v < n; v++)
        probs[v] *= inv_sum;
    return DLLM_OK;
}

void dllm_sampler_cfg(float *cond, const float *uncond, int64_t n, double scale)
{
    for (int64_t i = 0; i < n; i++)
        cond[i] = (float)(uncond[i] + (scale + 1.0) * ((double)cond[i] - uncond[i]));
}

/* ---- settings ----------------------------------------------------------------------------- */

static const char *const remasking_names[] = {"low_confidence", "random"};
static const char *const alg_names[] = {"origin", "maskgit_plus", "topk_margin", "entropy"};

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

const char *dllm_remasking_name(enum dllm_remasking remasking)
{
    return (int)remasking >= 0 && (int)remasking < N_OF(remasking_names)
               ? remasking_names[remasking]
               : NULL;
}

bool dllm_remasking_parse(const char *name, enum dllm_remasking *out)
{
    for (int i = 0; i < N_OF(remasking_names); i++)
        if (strcmp(name, remasking_names[i]) == 0) {
            *out = (enum dllm_remasking)i;
            return true;
        }
    return false;
}

const char *dllm_alg_name(enum dllm_alg alg)
{
    return (int)alg >= 0 && (int)alg < N_OF(alg_names) ? alg_names[alg] : NULL;
}

bool dllm_alg_parse(const char *name, enum dllm_alg *out)
{
    for (int i = 0; i < N_OF(alg_names); i++)
        if (strcmp(name, alg_names[i]) == 0) {
            *out = (enum dllm_alg)i;
            return true;
        }
    return false;
}

void dllm_sampler_params_init(struct dllm_sampler_params *params, enum dllm_sampler_kind kind)
{
    bool dream = kind == DLLM_SAMPLER_DREAM;
    *params = (struct dllm_sampler_params){
        .kind = kind,
        .gen_length = 128,
        .steps = 128,
        .block_length = dream ? 0 : 32,
        .temperature = dream ? 0.2 : 0.0,
        .top_p = dream ? 0.95 : 1.0,
        .top_k = 0,
        .threshold = 0.0,
        .remasking = DLLM_REMASKING_LOW_CONFIDENCE,
        .alg = DLLM_ALG_ENTROPY,
        .alg_temp = 0.0,
        .eps = 1e-3,
        .cfg_scale = 0.0,
        .seed = 0,
        .early_stop = true,
    };
}

/*
 * Writes the divisors of n to buf, ascending: all of them, or the first 12, "..." and n. The
 * divisors up to sqrt(n) are found by trial division, the others are n over those.
 */
static void list_divisors(char *buf, size_t size, int64_t n)
{
    int64_t small[128], div[13];
    int n_small = 0, n_div = 0;
    for (int64_t d = 1; d * d <= n && n_small < N_OF(small); d++)
        if (n % d == 0)
            small[n_small++] = d;
    for (int i = 0; i < n_small && n_div < N_OF(div); i++)
        div[n_div++] = small[i];
    for (int i = n_small - 1; i >= 0 && n_div < N_OF(div); i--)
        if (n / small[i] != small[i])
            div[n_div++] = n / small[i];
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n_div && i < 12 && used < size; i++) {
        int w = snprintf(buf + used, size - used, "%s%" PRId64, i ? ", " : "", div[i]);
        used += w > 0 ? (size_t)w : 0;
    }
    if (n_div > 12 && used < size)
        snprintf(buf + used, size - used, ", ..., %" PRId64, n);
}

/* The confidence rule's name for messages: "remasking random" or "alg entropy". */
static const char *rule_name(const struct dllm_sampler_params *p, char *buf, size_t size)
{
    if (p->kind == DLLM_SAMPLER_LLADA)
        snprintf(buf, size, "remasking %s", dllm_remasking_name(p->remasking));
    else
        snprintf(buf, size, "alg %s", dllm_alg_name(p->alg));
    return buf;
}

enum dllm_status dllm_sampler_params_check(const struct dllm_sampler_params *p,
                                           struct dllm_error *err)
{
    char buf[160];
    bool llada = p->kind == DLLM_SAMPLER_LLADA;
    if (!llada && p->kind != DLLM_SAMPLER_DREAM)
        return dllm_error_set(err, DLLM_ERR_ARG, "unknown sampler kind %d", (int)p->kind);
    if (!dllm_remasking_name(p->remasking))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "unknown remasking %d (known: low_confidence, random)",
                              (int)p->remasking);
    if (!dllm_alg_name(p->alg))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "unknown alg %d (known: origin, maskgit_plus, topk_margin, entropy)",
                              (int)p->alg);
    if (p->gen_length < 1 || p->gen_length > INT32_MAX)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "gen length %" PRId64 " is out of range: use 1 or more",
                              p->gen_length);
    if (p->block_length < 0 || p->block_length > p->gen_length ||
        (p->block_length > 0 && p->gen_length % p->block_length != 0)) {
        list_divisors(buf, sizeof buf, p->gen_length);
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "block length %" PRId64 " does not divide gen length %" PRId64
                              ": use one of %s, or 0 for no blocks",
                              p->block_length, p->gen_length, buf);
    }
    bool threshold = p->threshold != 0.0;
    if (threshold && !(p->threshold > 0.0 && p->threshold <= 1.0))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "threshold %g is out of range: use a value in (0, 1], or 0 for off",
                              p->threshold);
    if (!threshold) {
        int64_t n_blocks = p->block_length ? p->gen_length / p->block_length : 1;
        if (p->steps < 1)
            return dllm_error_set(err, DLLM_ERR_ARG,
                                  "steps %" PRId64 " is out of range: use %" PRId64
                                  " or a multiple of it",
                                  p->steps, n_blocks);
        if (p->steps % n_blocks != 0) {
            int64_t lo = p->steps / n_blocks * n_blocks;
            if (lo == 0)
                return dllm_error_set(err, DLLM_ERR_ARG,
                                      "steps %" PRId64 " is fewer than the %" PRId64
                                      " blocks (gen length %" PRId64 " / block length %" PRId64
                                      "): use %" PRId64 " or a multiple of it",
                                      p->steps, n_blocks, p->gen_length, p->block_length, n_blocks);
            return dllm_error_set(
                err, DLLM_ERR_ARG,
                "steps %" PRId64 " is not a multiple of the %" PRId64 " blocks (gen length %" PRId64
                " / block length %" PRId64 "): use %" PRId64 " or %" PRId64,
                p->steps, n_blocks, p->gen_length, p->block_length, lo, lo + n_blocks);
        }
    }
    if (!(p->temperature >= 0.0 && isfinite(p->temperature)))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "temperature %g is out of range: use 0 (argmax) or more",
                              p->temperature);
    if (!(p->top_p > 0.0 && p->top_p <= 1.0))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "top-p %g is out of range: use a value in (0, 1], 1 for off",
                              p->top_p);
    if (p->top_k < 0)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "top-k %" PRId64 " is out of range: use 1 or more, 0 for off",
                              p->top_k);
    if (llada && (p->top_p < 1.0 || p->top_k > 0))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "top-p and top-k apply to the Dream sampler only: LLaDA proposes "
                              "from the full vocabulary (use top-p 1 and top-k 0)");
    if (!(p->alg_temp >= 0.0 && isfinite(p->alg_temp)))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "alg temp %g is out of range: use 0 (most confident first) or "
                              "more",
                              p->alg_temp);
    if (!(p->eps >= 0.0 && p->eps < 1.0))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "eps %g is out of range: use a value in [0, 1), e.g. 1e-3", p->eps);
    if (!(p->cfg_scale >= 0.0 && isfinite(p->cfg_scale)))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "cfg scale %g is out of range: use 0 (off) or more", p->cfg_scale);
    if (threshold) {
        bool confident = llada ? p->remasking == DLLM_REMASKING_LOW_CONFIDENCE
                               : p->alg == DLLM_ALG_MASKGIT_PLUS || p->alg == DLLM_ALG_TOPK_MARGIN;
        if (!confident)
            return dllm_error_set(err, DLLM_ERR_ARG,
                                  "a threshold needs a probability-like confidence, which %s "
                                  "lacks: use %s",
                                  rule_name(p, buf, sizeof buf),
                                  llada ? "remasking low_confidence"
                                        : "alg maskgit_plus or topk_margin");
        if (p->alg_temp > 0.0)
            return dllm_error_set(err, DLLM_ERR_ARG,
                                  "alg temp %g does not combine with a threshold: use alg temp 0",
                                  p->alg_temp);
    }
    return DLLM_OK;
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

enum dllm_status dllm_sampler_new(int64_t max_canvas, int64_t n_vocab, struct dllm_sampler **out,
                                  struct dllm_error *err)
{
    *out = NULL;
    if (max_canvas < 1 || max_canvas > INT32_MAX || n_vocab < 2 || n_vocab > INT32_MAX)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "sampler sizes out of range: %" PRId64 " canvas slots (1 .. 2^31-1)"
                              ", %" PRId64 " vocabulary entries (2 .. 2^31-1)",
                              max_canvas, n_vocab);
    struct dllm_sampler *s = calloc(1, sizeof *s);
    if (!s)
        goto fail;
    s->max_canvas = max_canvas;
    s->n_vocab = n_vocab;
    size_t c = (size_t)max_canvas, v = (size_t)n_vocab;
    s->positions = malloc(c * sizeof *s->positions);
    s->cands = malloc(c * sizeof *s->cands);
    s->commits = malloc(c * sizeof *s->commits);
    s->probs = malloc(v * sizeof *s->probs);
    s->ranked = malloc(v * sizeof *s->ranked);
    s->heap = malloc(v * sizeof *s->heap);
    if (!s->positions || !s->cands || !s->commits || !s->probs || !s->ranked || !s->heap)
        goto fail;
    *out = s;
    return DLLM_OK;
fail:
    dllm_sampler_free(s);
    return dllm_error_set(err, DLLM_ERR_NOMEM,
                          "out of memory for a sampler (%" PRId64 " slots, %" PRId64 " ids)",
                          max_canvas, n_vocab);
}

void dllm_sampler_free(struct dllm_sampler *s)
{
    if (!s)
        return;
    free(s->positions);
    free(s->cands);
    free(s->commits);
    free(s->probs);
    free(s->ranked);
    free(s->heap);
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

/* Index of the largest entry of x[0 .. n-1] other than skip (the first of equal maxima). */
static int32_t argmax_f32(const float *x, int64_t n, int32_t skip)
{
    int32_t best = skip == 0 ? 1 : 0;
    for (int64_t v = best + 1; v < n; v++)
        if (x[v] > x[best] && v != skip)
            best = (int32_t)v;
    return best;
}

enum dllm_status dllm_sampler_propose_llada(struct dllm_sampler *s, const float *logits,
                                            struct dllm_rng *rng, int32_t *token, double *conf,
                                            struct dllm_error *err)
{
    enum dllm_status st = dllm_sampler_softmax(logits, s->n_vocab, 1.0, s->probs, err);
    if (st != DLLM_OK)
        return st;
    double t = s->params.temperature;
    int32_t x;
    if (t == 0.0) {
        x = argmax_f32(logits, s->n_vocab, s->mask_id);
    } else {
        /* argmax of exp(l) / (-ln u)^T, taken in the log domain: l - T ln(-ln u). */
        double best = -INFINITY;
        x = s->mask_id == 0 ? 1 : 0;
        for (int64_t v = 0; v < s->n_vocab; v++) {
            double g = logits[v] - t * log(-log(dllm_sampler_rng_uniform_open(rng)));
            if (g > best && v != s->mask_id) {
                best = g;
                x = (int32_t)v;
            }
        }
    }
    *token = x;
    *conf =
        s->params.remasking == DLLM_REMASKING_RANDOM ? dllm_sampler_rng_uniform(rng) : s->probs[x];
    return DLLM_OK;
}

/* Orders top-p candidates by probability descending, then id ascending. */
static int cmp_ranked(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;
    if (x->p != y->p)
        return x->p > y->p ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/*
 * Zeroes the probabilities outside the top-p nucleus. Only entries of at least a cut-off c
 * are ranked; c is lowered (1/64, 1/4096, 1/262144, then 0) until their cumulative mass
 * exceeds top_p, which places the nucleus boundary among them, since every lower entry ranks
 * after them.
 */
static void filter_top_p(struct dllm_sampler *s, double top_p)
{
    double *p = s->probs;
    struct ranked *r = s->ranked;
    int64_t n, keep;
    double cum;
    for (double c = 1.0 / 64;; c = c > 1e-6 ? c / 64 : 0.0) {
        n = 0;
        for (int64_t v = 0; v < s->n_vocab; v++)
            if (p[v] >= c && p[v] > 0.0)
                r[n++] = (struct ranked){p[v], (int32_t)v};
        qsort(r, (size_t)n, sizeof *r, cmp_ranked);
        cum = 0.0;
        for (keep = 0; keep < n && !(cum > top_p); keep++)
            cum += r[keep].p;
        if (cum > top_p || c == 0.0)
            break;
    }
    if (keep == 0)
        return;
    double theta = r[keep - 1].p;
    int32_t last = r[keep - 1].id;
    for (int64_t v = 0; v < s->n_vocab; v++)
        if (p[v] < theta || (p[v] == theta && v > last))
            p[v] = 0.0;
}

/* Restores the min-heap property below node i of heap[0 .. n-1]. */
static void sift_down(double *heap, int64_t n, int64_t i)
{
    for (;;) {
        int64_t l = 2 * i + 1, m = i;
        if (l < n && heap[l] < heap[m])
            m = l;
        if (l + 1 < n && heap[l + 1] < heap[m])
            m = l + 1;
        if (m == i)
            return;
        double t = heap[i];
        heap[i] = heap[m];
        heap[m] = t;
        i = m;
    }
}

/* Zeroes the probabilities below the k-th largest one (k < n_vocab), keeping ties with it. */
static void filter_top_k(struct dllm_sampler *s, int64_t k)
{
    double *p = s->probs, *heap = s->heap;
    for (int64_t v = 0; v < k; v++)
        heap[v] = p[v];
    for (int64_t i = k / 2 - 1; i >= 0; i--)
        sift_down(heap, k, i);
    for (int64_t v = k; v < s->n_vocab; v++)
        if (p[v] > heap[0]) {
            heap[0] = p[v];
            sift_down(heap, k, 0);
        }
    double kth = heap[0];
    for (int64_t v = 0; v < s->n_vocab; v++)
        if (p[v] < kth)
            p[v] = 0.0;
}

enum dllm_status dllm_sampler_probs_dream(struct dllm_sampler *s, const float *logits,
                                          const double **probs, struct dllm_error *err)
{
    const struct dllm_sampler_params *par = &s->params;
    double t = par->temperature > 0.0 ? par->temperature : 1.0;
    enum dllm_status st = dllm_sampler_softmax(logits, s->n_vocab, t, s->probs, err);
    if (st != DLLM_OK)
        return st;
    double *p = s->probs;
    p[s->mask_id] = 0.0;
    if (par->top_p < 1.0)
        filter_top_p(s, par->top_p);
    if (par->top_k > 0 && par->top_k < s->n_vocab)
        filter_top_k(s, par->top_k);
    double sum = 0.0;
    for (int64_t v = 0; v < s->n_vocab; v++)
        sum += p[v];
    if (!(sum > 0.0))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "logits row puts all its probability on the mask token");
    double inv = 1.0 / sum;
    for (int64_t v = 0; v < s->n_vocab; v++)
        p[v] *= inv;
    *probs = p;
    return DLLM_OK;
}

enum dllm_status dllm_sampler_propose_dream(struct dllm_sampler *s, const float *logits,
                                            struct dllm_rng *rng, int32_t *token, double *conf,
                                            struct dllm_error *err)
{
    const double *p;
    enum dllm_status st = dllm_sampler_probs_dream(s, logits, &p, err);
    if (st != DLLM_OK)
        return st;
    int64_t nv = s->n_vocab;
    int32_t x = -1;
    if (s->params.temperature > 0.0) {
        /* Inverse CDF in id order; rounding can leave u above the total: take the last id. */
        double u = dllm_sampler_rng_uniform(rng), cum = 0.0;
        for (int64_t v = 0; v < nv; v++) {
            if (p[v] <= 0.0)
                continue;
            x = (int32_t)v;
            cum += p[v];
            if (cum > u)
                break;
        }
    } else {
        x = 0;
        for (int64_t v = 1; v < nv; v++)
            if (p[v] > p[x])
                x = (int32_t)v;
    }
    *token = x;
    switch (s->params.alg) {
    case DLLM_ALG_TOPK_MARGIN: {
        double first = 0.0, second = 0.0;
        for (int64_t v = 0; v < nv; v++) {
            if (p[v] > first) {
                second = first;
                first = p[v];
            } else if (p[v] > second) {
                second = p[v];
            }
        }
        *conf = first - second;
        break;
    }
    case DLLM_ALG_ENTROPY: {
        double h = 0.0;
        for (int64_t v = 0; v < nv; v++)
            if (p[v] > 0.0)
                h += p[v] * log(p[v] + 1e-10);
        *conf = h;
        break;
    }
    default: *conf = p[x]; break;
    }
    return DLLM_OK;
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

enum dllm_status dllm_sampler_step(struct dllm_sampler *s, int32_t *canvas, const float *logits,
                                   struct dllm_sampler_result *res, struct dllm_error *err)
{
    enum dllm_status st = DLLM_OK;
    if (!s->running || !s->prepared)
        return dllm_error_set(err, DLLM_ERR_ARG, "no step is prepared: call dllm_sampler_next");
    int64_t n = s->n_rows;
    if (n > 0 && !logits)
        return dllm_error_set(err, DLLM_ERR_ARG, "the step needs %" PRId64 " logits rows", n);
    s->prepared = false;
    bool llada = s->params.kind == DLLM_SAMPLER_LLADA;
    for (int64_t r = 0; r < n; r++) {
        struct candidate *c = &s->cands[r];
        const float *row = logits + r * s->n_vocab;
        c->pos = s->positions[r];
        struct dllm_rng rng;
        dllm_sampler_rng_seed_at(&rng, s->params.seed, s->step, c->pos, DLLM_DRAW_ROW);
        st = llada ? dllm_sampler_propose_llada(s, row, &rng, &c->token, &c->conf, err)
                   : dllm_sampler_propose_dream(s, row, &rng, &c->token, &c->conf, err);
        if (st != DLLM_OK) {
            dllm_error_prefix(err, "step %" PRId64 ", canvas slot %" PRId32, s->step, c->pos);
            goto fail;
        }
        c->key = c->conf;
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
