/*
 * Diffusion samplers (ML-GSAI/LLaDA generate.py, Dream-org generation_utils.py, NVlabs/Fast-dLLM
 * llada/generate.py): the step schedule, and one denoising step turned
 * from given logits rows into committed tokens. Nothing here knows about models: the caller
 * runs the forward pass for the positions the sampler asks for and hands the rows back.
 *
 * A run, driven by the session engine:
 *
 *     dllm_sampler_start(s, &params, n_prompt, mask_id, eog, n_eog, canvas, err);
 *     do {
 *         dllm_sampler_next(s, canvas, &pos, &n_rows, err);  // positions to read, ascending
 *         // forward pass; logits row r is for canvas slot pos[r] (Dream: output row pos[r]-1)
 *         dllm_sampler_step(s, pool, canvas, n_rows ? logits : NULL, &res, err);
 *     } while (!res.done);
 *
 * The rows of a step are proposed on the threads of pool (the forward pass's; NULL: the
 * calling thread alone), each thread with its own scratch; the commits are then chosen in one
 * place, so the thread count changes nothing.
 *
 * Randomness: every draw comes from a xoshiro256** stream keyed by (params.seed, step, canvas
 * slot, purpose) through dllm_sampler_rng_seed_at, and inside a stream draws are taken in a
 * fixed order (vocabulary ids ascending). No draw depends on another row's, on the order rows
 * are processed in or on the thread count, so a seed gives the same tokens everywhere.
 */
#ifndef DLLM_SAMPLER_H
#define DLLM_SAMPLER_H

#include "dllm.h"

#include <stdbool.h>
#include <stdint.h>

/* ---- random numbers --------------------------------------------------------------------- */

/* xoshiro256** (Blackman and Vigna, 2018): 256 bits of state, period 2^256 - 1. */
struct dllm_rng {
    uint64_t s[4];
};

/* Fills the state with four successive splitmix64 outputs of seed (never all zero). */
void dllm_sampler_rng_seed(struct dllm_rng *rng, uint64_t seed);

/* What a keyed stream is for: one canvas slot's draws at one step. */
enum dllm_draw {
    DLLM_DRAW_ROW = 0,  /* its proposal: Gumbel noise, the categorical draw, random remasking */
    DLLM_DRAW_COIN = 1, /* Dream origin: whether it commits at this step */
    DLLM_DRAW_KEY = 2,  /* alg_temp: the Gumbel key that ranks it for commitment */
};

/*
 * Seeds the stream of one slot at one step: key = seed, then for each of step, pos and
 * purpose in turn, key = splitmix64(key) ^ part (splitmix64 of the state x: the output for
 * x + 0x9e3779b97f4a7c15); then dllm_sampler_rng_seed(rng, key).
 */
void dllm_sampler_rng_seed_at(struct dllm_rng *rng, uint64_t seed, int64_t step, int64_t pos,
                              enum dllm_draw purpose);

/* The next 64-bit output: rotl(s1 * 5, 7) * 9, then the xoshiro256 state transition. */
uint64_t dllm_sampler_rng_next(struct dllm_rng *rng);

/* A uniform double in [0, 1): the top 53 bits of the next output times 2^-53. */
double dllm_sampler_rng_uniform(struct dllm_rng *rng);

/*
 * A uniform double in (0, 1): the top 52 bits plus one half, times 2^-52, so at most
 * 1 - 2^-53 (with 53 bits the largest, 2^53 - 1/2, would round to 2^53, giving 1).
 */
double dllm_sampler_rng_uniform_open(struct dllm_rng *rng);

/* ---- maths on one logits row ------------------------------------------------------------ */

/*
 * probs[v] = exp((logits[v] - max) / temperature) / sum, in float64 (temperature > 0; 1 for
 * the plain softmax), exp and the sum as kernels/rowmath.h computes them (every variant gives
 * the same bits). Entries of -inf get probability 0. A row whose maximum is not finite, or
 * that holds a NaN, gives DLLM_ERR_ARG.
 */
enum dllm_status dllm_sampler_softmax(const float *logits, int64_t n, double temperature,
                                      double *probs, struct dllm_error *err);

/* Classifier-free guidance, in place: cond <- uncond + (scale + 1) (cond - uncond). */
void dllm_sampler_cfg(float *cond, const float *uncond, int64_t n, double scale);

/* ---- schedule ----------------------------------------------------------------------------- */

/* How a run's generation area [n_prompt, n_prompt + gen_length) is cut into blocks. */
struct dllm_sampler_plan {
    int64_t n_prompt;        /* canvas slots before the generation area */
    int64_t gen_length;      /* masked slots after the prompt */
    int64_t block_length;    /* gen_length when the params ask for no blocks */
    int64_t n_blocks;        /* gen_length / block_length */
    int64_t steps_per_block; /* steps / n_blocks; 0 with a threshold (blocks run until full) */
};

/* Checks params (dllm_sampler_params_check) and derives the plan for a prompt of n_prompt. */
enum dllm_status dllm_sampler_plan_init(struct dllm_sampler_plan *plan,
                                        const struct dllm_sampler_params *params, int64_t n_prompt,
                                        struct dllm_error *err);

/* The canvas slots [*start, *end) of block b (0 <= b < n_blocks). */
void dllm_sampler_block_bounds(const struct dllm_sampler_plan *plan, int64_t b, int64_t *start,
                               int64_t *end);

/*
 * LLaDA's quota for step i of a block of `steps` steps that began with n masks:
 * floor(n / steps), plus one for the first n mod steps steps.
 */
int64_t dllm_sampler_quota_llada(int64_t n, int64_t steps, int64_t i);

/*
 * Dream's timestep tau_i (0 <= i <= steps): element i of torch.linspace(1, eps, steps + 1) in
 * float32, computed as torch does (the first half counted up from 1, the second down from
 * eps), with each product rounded to float32 before the sum (no fused multiply-add).
 */
float dllm_sampler_timestep(int64_t steps, int64_t i, float eps);

/* Dream's transfer fraction of step i, 1 - tau_{i+1} / tau_i in float32; 1 at the last step. */
float dllm_sampler_transfer_fraction(int64_t steps, int64_t i, float eps);

/*
 * Dream's quota for step i with n masks left: int(float32(n) * fraction), truncated; all n at
 * the last step. With n = steps = 256 and eps = 1e-3 this commits 0, 1, 1, ..., 1, 2.
 */
int64_t dllm_sampler_quota_dream(int64_t n, int64_t steps, int64_t i, float eps);

/*
 * The early-stop rule: true when the generation area [start, end) holds an
 * end-of-generation token (one of eog[0 .. n_eog-1]) and no mask comes before the first one.
 * Samplers never re-mask, so the text up to that token is then final.
 */
bool dllm_sampler_eog_settled(const int32_t *canvas, int64_t start, int64_t end, int32_t mask_id,
                              const int32_t *eog, int n_eog);

/* ---- the sampler -------------------------------------------------------------------------- */

struct dllm_threadpool;

#define DLLM_SAMPLER_MAX_EOG 8 /* end-of-generation ids a run can watch */

/*
 * One run's state and every buffer a step needs, sized once for canvases of up to max_canvas
 * slots and n_vocab logits per row, with row scratch (20 bytes per vocabulary entry) for each
 * of up to max_threads threads: steps allocate nothing. One thread at a time calls it.
 */
struct dllm_sampler;

/* What one step did. The committed array is the sampler's, valid until its next step. */
struct dllm_sampler_result {
    int64_t step;  /* over the whole run, from 0 */
    int64_t block; /* the block the step worked on */
    /*
     * Committed slots in selection order: confidence descending then position ascending
     * (top-k and threshold), key order (alg_temp > 0: conf / alg_temp plus Gumbel noise), or
     * position order (origin).
     * conf is the confidence the rule used (Dream origin: the proposal's probability).
     */
    const struct dllm_commit *committed;
    int64_t n_committed;
    bool has_best_left;    /* false when no confidence is known for any slot left in the block */
    double best_left_conf; /* the highest confidence among the block's candidates left masked */
    int64_t masks_left;    /* masks left in the generation area */
    bool stopped_early;    /* the early-stop rule fired (params.early_stop) */
    bool done;             /* nothing left to do: no masks, or stopped early */
};

/*
 * A sampler for canvases of up to max_canvas slots (< 2^31) and n_vocab (>= 2) logits, whose
 * steps run on pools of up to max_threads (1 .. 1024) threads. It uses the row-maths variant
 * that goes with the matrix kernels `kernels` names (NULL: the fastest; kernels/rowmath.h),
 * whose errors it returns.
 */
enum dllm_status dllm_sampler_new(int64_t max_canvas, int64_t n_vocab, int max_threads,
                                  const char *kernels, struct dllm_sampler **out,
                                  struct dllm_error *err);

void dllm_sampler_free(struct dllm_sampler *s);

/*
 * Starts a run over canvas[0 .. n_prompt + gen_length - 1]: checks params, plans the blocks
 * and counts the masks of the generation area. eog lists the ids that end
 * a generation (at most DLLM_SAMPLER_MAX_EOG; n_eog may be 0). Any previous run is dropped.
 */
enum dllm_status dllm_sampler_start(struct dllm_sampler *s,
                                    const struct dllm_sampler_params *params, int64_t n_prompt,
                                    int32_t mask_id, const int32_t *eog, int n_eog,
                                    const int32_t *canvas, struct dllm_error *err);

/* The plan of the run in progress. */
const struct dllm_sampler_plan *dllm_sampler_get_plan(const struct dllm_sampler *s);

/* The block the prepared step (dllm_sampler_next) works on. */
int64_t dllm_sampler_block(const struct dllm_sampler *s);

/*
 * Prepares the next step: *positions (ascending, owned by the sampler) receives the canvas
 * slots whose logits rows the step reads, *n_rows their count: the masked slots of the current
 * block, or for Dream origin the ones its coin flips picked. Zero rows means the step commits
 * nothing whatever the logits (a Dream quota of 0): skip the forward pass and call
 * dllm_sampler_step with NULL logits. Called once between steps, while the run is not done.
 */
enum dllm_status dllm_sampler_next(struct dllm_sampler *s, const int32_t *canvas,
                                   const int32_t **positions, int64_t *n_rows,
                                   struct dllm_error *err);

/*
 * Runs the prepared step on logits ([n_rows, n_vocab], row r for slot positions[r], the Dream
 * shift already applied by the caller): proposes a token and a confidence per row, on the
 * threads of pool (at most the sampler's max_threads; NULL: this thread), selects the rows to
 * commit, writes their tokens into canvas and reports them in *res. The mask token is never
 * proposed. A failure (a non-finite row) ends the run; the error names the first failing row.
 */
enum dllm_status dllm_sampler_step(struct dllm_sampler *s, struct dllm_threadpool *pool,
                                   int32_t *canvas, const float *logits,
                                   struct dllm_sampler_result *res, struct dllm_error *err);

/*
 * Whether a run with settings p can take each row's statistics (struct dllm_row_stats) in
 * place of the row: the LLaDA sampler at temperature 0 (the argmax, and as confidence its
 * softmax probability, low_confidence, or a uniform draw, random; with or without a
 * threshold). Sampling at temperature > 0 (Gumbel noise on every logit) and the Dream sampler
 * (its probabilities leave out the mask id and pass top-p and top-k, which the statistics
 * cannot say) read the rows.
 */
bool dllm_sampler_takes_stats(const struct dllm_sampler_params *p);

/*
 * Whether the prepared step can run on stats ([n_rows], row r for slot positions[r]): the run
 * takes statistics and no row's argmax is the mask id (LLaDA then proposes the runner-up,
 * whose id the statistics do not carry; that step needs its rows).
 */
bool dllm_sampler_stats_suffice(const struct dllm_sampler *s, const struct dllm_row_stats *stats);

/*
 * dllm_sampler_step on the rows' statistics instead of the rows, for a run that takes them:
 * the same tokens and commits as the rows give (tests/test_sampler.c runs both), each
 * confidence computed from the statistics (e^(max - lse)) rather than from the row, so that it
 * may differ from the rows' in the last bits. A row whose argmax is the mask id fails (check
 * with dllm_sampler_stats_suffice first).
 */
enum dllm_status dllm_sampler_step_stats(struct dllm_sampler *s, struct dllm_threadpool *pool,
                                         int32_t *canvas, const struct dllm_row_stats *stats,
                                         struct dllm_sampler_result *res, struct dllm_error *err);

/*
 * LLaDA's proposal for one row: the argmax (temperature 0; first of equal maxima) or the
 * Gumbel-max sample argmax_v (logits[v] - T ln(-ln u_v)) with one float64 u_v per id, drawn in
 * id order (the logs as kernels/rowmath.h computes them); and its confidence: the
 * temperature-1 softmax probability of the proposal (low_confidence) or one more uniform draw
 * (random). Uses the run's params and the first thread's scratch; draws from rng.
 */
enum dllm_status dllm_sampler_propose_llada(struct dllm_sampler *s, const float *logits,
                                            struct dllm_rng *rng, int32_t *token, double *conf,
                                            struct dllm_error *err);

/*
 * Dream's sample_tokens probabilities for one row: softmax(logits / T) (T = 1 at temperature
 * 0), the mask id zeroed, then top-p (a token is dropped when the mass ranked before it, by
 * probability descending then id ascending, exceeds top_p; masses summed exactly in whole
 * units of 2^-62, each probability truncated to one, so that the order of the sum does not
 * matter), then top-k (drop what is below the k-th largest probability; ties with it stay),
 * renormalised. *probs points into the first thread's scratch.
 */
enum dllm_status dllm_sampler_probs_dream(struct dllm_sampler *s, const float *logits,
                                          const double **probs, struct dllm_error *err);

/*
 * Dream's proposal for one row from dllm_sampler_probs_dream: a categorical sample (T > 0; one
 * uniform draw) or the argmax, and its confidence by params.alg: the proposal's probability
 * (origin, maskgit_plus), top-1 minus top-2 probability (topk_margin), or sum p ln(p + 1e-10)
 * (entropy, summed as kernels/rowmath.h does). Draws from rng.
 */
enum dllm_status dllm_sampler_propose_dream(struct dllm_sampler *s, const float *logits,
                                            struct dllm_rng *rng, int32_t *token, double *conf,
                                            struct dllm_error *err);

#endif
