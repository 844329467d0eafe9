/*
 * The forward pass of LLaDA, Dream, LLaDA-MoE and RND1 as a graph over a backend's operations
 * (backend.h): embedding lookup, n_layer pre-norm blocks with bidirectional grouped-query
 * attention (MoE models: per-head Q/K norms before RoPE) and a SwiGLU feed-forward network
 * (MoE models: routed experts), the final norm and the output projection of the requested rows
 * only (llama.cpp src/models/llada.cpp, dream.cpp, llada-moe.cpp and rnd1.cpp, with the causal
 * mask removed). Which op, in what order, on which buffers is decided here; the backend owns the
 * buffers and the weights.
 */
#include "config.h"

#include "backend.h"
#include "clock.h"
#include "dllm.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct dllm_forward {
    const struct dllm_model *model;
    int64_t max_tokens, max_rows;
    struct dllm_backend *be;
    dllm_progress_fn progress;
    void *progress_user;
};

void dllm_forward_params_init(struct dllm_forward_params *params)
{
    *params = (struct dllm_forward_params){0};
}

/* MemAvailable from /proc/meminfo in bytes; false when it cannot be read. */
static bool mem_available(uint64_t *bytes)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return false;
    char line[256];
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        unsigned long long kb;
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
            *bytes = (uint64_t)kb * 1024;
            found = true;
        }
    }
    fclose(f);
    return found;
}

/* Whether need bytes exceed MemAvailable (*avail); false when it cannot be read. */
static bool exceeds_available(double need, uint64_t *avail)
{
    return mem_available(avail) && need > (double)*avail;
}

/*
 * Refuses when what the backend keeps in host memory for the config (the CPU's weights and
 * buffers) and the caller's logits rows need more memory than is available.
 */
static enum dllm_status check_memory(const struct dllm_backend_ops *ops,
                                     const struct dllm_backend_config *cfg, struct dllm_error *err)
{
    const struct dllm_model *m = cfg->model;
    const double need = (double)ops->host_bytes(cfg) +
                        (double)cfg->max_rows * (double)m->hp.n_vocab * sizeof(float);
    uint64_t avail;
    if (!exceeds_available(need, &avail))
        return DLLM_OK;
    return dllm_error_set(err, DLLM_ERR_NOMEM,
                          "model needs %.1f GB but only %.1f GB is available (for a canvas of "
                          "%" PRId64 " tokens): use a smaller model or a shorter canvas",
                          need / 1e9, (double)avail / 1e9, cfg->max_tokens);
}

enum dllm_status dllm_forward_check_sizes(const struct dllm_model *model,
                                          const struct dllm_forward_params *params,
                                          struct dllm_error *err)
{
    const struct dllm_hparams *hp = &model->hp;
    if (params->max_tokens < 1 || params->max_tokens > hp->n_ctx)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "a forward pass over %" PRId64 " tokens: the model takes 1 to "
                              "%" PRId64 " (%s.context_length)",
                              params->max_tokens, hp->n_ctx, model->arch);
    if (params->max_rows < 1 || params->max_rows > params->max_tokens)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "%" PRId64 " logits rows for %" PRId64 " tokens: ask for 1 to "
                              "%" PRId64,
                              params->max_rows, params->max_tokens, params->max_tokens);
    return DLLM_OK;
}

enum dllm_status dllm_forward_new(const struct dllm_model *model,
                                  const struct dllm_forward_params *params,
                                  struct dllm_forward **out, struct dllm_error *err)
{
    *out = NULL;
    enum dllm_status st = dllm_forward_check_sizes(model, params, err);
    if (st)
        return st;
    if (!params->pool)
        return dllm_error_set(err, DLLM_ERR_ARG, "a forward context needs a thread pool");
    const struct dllm_backend_ops *ops;
    if ((st = dllm_backend_find(params->backend, &ops, err)))
        return st;
    const struct dllm_backend_config cfg = {.model = model,
                                            .max_tokens = params->max_tokens,
                                            .max_rows = params->max_rows,
                                            .pool = params->pool,
                                            .variant = params->kernels,
                                            .progress = params->progress,
                                            .progress_user = params->progress_user,
                                            .cancel = params->cancel,
                                            .device = params->device,
                                            .gpu_resident = params->gpu_resident};
    if (!params->skip_memory_check && (st = check_memory(ops, &cfg, err)))
        return st;
    struct dllm_forward *f = calloc(1, sizeof *f);
    if (!f)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    if ((st = ops->create(&cfg, &f->be, err))) {
        free(f);
        return st;
    }
    f->model = model;
    f->max_tokens = params->max_tokens;
    f->max_rows = params->max_rows;
    f->progress = params->progress;
    f->progress_user = params->progress_user;
    *out = f;
    return DLLM_OK;
}

void dllm_forward_free(struct dllm_forward *fwd)
{
    if (!fwd)
        return;
    fwd->be->ops->destroy(fwd->be);
    free(fwd);
}

uint64_t dllm_kv_bytes(const struct dllm_model *model, int64_t n_tokens, enum dllm_cache_type type)
{
    return dllm_kv_storage_bytes(model, n_tokens, type);
}

size_t dllm_kv_cache_bytes(const struct dllm_forward *fwd, int64_t n_tokens,
                           enum dllm_cache_type type)
{
    return dllm_kv_storage_bytes(fwd->model, n_tokens, type);
}

enum dllm_status dllm_kv_cache_new(struct dllm_forward *fwd, int64_t n_tokens,
                                   enum dllm_cache_type type, bool skip_memory_check,
                                   struct dllm_kv_cache **out, struct dllm_error *err)
{
    *out = NULL;
    if (!dllm_cache_type_name(type))
        return dllm_error_set(err, DLLM_ERR_ARG, "unknown cache type %d (known: f16, f32)",
                              (int)type);
    if (n_tokens < 1 || n_tokens > fwd->max_tokens)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "a K/V cache for %" PRId64 " tokens: this forward context takes 1 "
                              "to %" PRId64,
                              n_tokens, fwd->max_tokens);
    const double need = (double)dllm_kv_cache_bytes(fwd, n_tokens, type);
    uint64_t avail;
    if (!skip_memory_check && fwd->be->ops->kv_on_host && exceeds_available(need, &avail))
        return dllm_error_set(err, DLLM_ERR_NOMEM,
                              "a K/V cache of %.2f GB but only %.2f GB is available: use a "
                              "shorter canvas or no cache",
                              need / 1e9, (double)avail / 1e9);
    return fwd->be->ops->kv_new(fwd->be, n_tokens, type, out, err);
}

void dllm_kv_cache_free(struct dllm_kv_cache *cache)
{
    if (cache)
        cache->be->ops->kv_free(cache);
}

const char *dllm_forward_kernels(const struct dllm_forward *fwd)
{
    return fwd->be->ops->variant(fwd->be);
}

/*
 * A pass's clock: each lap adds the time since the one before to a phase, on the host's clock,
 * or on the backend's when it keeps one (its lap op).
 */
struct phase_clock {
    bool on; /* false: the pass is not timed and no lap reads the clock */
    struct dllm_backend *be;
    double last, ms[DLLM_N_PHASES];
};

/* Adds the time since the last lap to phase p (to none for DLLM_PHASE_NONE). */
static void lap(struct phase_clock *clk, enum dllm_phase p)
{
    if (!clk->on)
        return;
    if (clk->be->ops->lap) {
        clk->be->ops->lap(clk->be, p);
        return;
    }
    const double t = dllm_clock_ms();
    if (p != DLLM_PHASE_NONE)
        clk->ms[p] += t - clk->last;
    clk->last = t;
}

/* Starts the next lap now: the time since the last one counts in no phase. */
static void skip_lap(struct phase_clock *clk)
{
    lap(clk, DLLM_PHASE_NONE);
}

/*
 * The norm that follows a block's residual sum, done in the same op: the next block's input
 * norm (layer's g of X into dst), or none (on = false: the sum alone).
 */
struct then_norm {
    bool on;
    int64_t layer;
    enum dllm_vector g;
    enum dllm_buf dst;
};

/*
 * A block's end: X += XN over rows [r0, r1), then the norm `next` when it is on; timed as
 * norms_rope, or as output when `next` is the final norm (the phase that holds it otherwise).
 */
static void residual(struct dllm_backend *be, struct phase_clock *clk, int64_t r0, int64_t r1,
                     struct then_norm next)
{
    if (next.on)
        be->ops->add_norm(be, DLLM_BUF_XN, r0, r1, next.layer, next.g, next.dst);
    else
        be->ops->add(be, DLLM_BUF_XN, r0, r1);
    const bool final = next.on && next.g == DLLM_V_OUTPUT_NORM;
    lap(clk, final ? DLLM_PHASE_OUTPUT : DLLM_PHASE_NORMS_ROPE);
}

/*
 * ATT = attention(rope(Wq a + bq), rope(Wk a + bk), Wv a + bv) with a = XN, which holds
 * RMSNorm(X) by the layer's attention norm, for the rows [r0, r1), whose queries attend over
 * the keys and values of rows [0, n) (all of them as the bound K/V storage holds them: those
 * outside [r0, r1) as an earlier pass left them).
 */
static void attend(struct dllm_backend *be, struct phase_clock *clk, int64_t il, int64_t r0,
                   int64_t r1, int64_t n)
{
    const struct dllm_backend_ops *op = be->ops;
    op->matmul(be, il, DLLM_W_Q, DLLM_BUF_XN, r0, r1, false, DLLM_BUF_Q);
    op->matmul(be, il, DLLM_W_K, DLLM_BUF_XN, r0, r1, true, DLLM_BUF_K);
    op->matmul(be, il, DLLM_W_V, DLLM_BUF_XN, r0, r1, true, DLLM_BUF_V);
    lap(clk, DLLM_PHASE_GEMM);
    op->add_bias(be, DLLM_BUF_Q, il, DLLM_V_BQ, r0, r1);
    op->add_bias(be, DLLM_BUF_K, il, DLLM_V_BK, r0, r1);
    op->add_bias(be, DLLM_BUF_V, il, DLLM_V_BV, r0, r1);
    op->qk_norm(be, il, r0, r1);
    op->rope(be, r0, r1);
    lap(clk, DLLM_PHASE_NORMS_ROPE);
    op->store_kv(be, r0, r1);
    op->attention(be, r0, r1, n);
    lap(clk, DLLM_PHASE_ATTENTION);
}

/*
 * X += Wo ATT over the rows [r0, r1), ATT as attend left it (XN as attend wants it), then
 * XN = RMSNorm(X) by the layer's FFN norm, as ffn_block wants it.
 */
static void attention_block(struct dllm_backend *be, struct phase_clock *clk, int64_t il,
                            int64_t r0, int64_t r1, int64_t n)
{
    attend(be, clk, il, r0, r1, n);
    be->ops->matmul(be, il, DLLM_W_O, DLLM_BUF_ATT, r0, r1, false, DLLM_BUF_XN);
    lap(clk, DLLM_PHASE_GEMM);
    residual(be, clk, r0, r1,
             (struct then_norm){.on = true, .layer = il, .g = DLLM_V_FFN_NORM, .dst = DLLM_BUF_XN});
}

/*
 * X += W_down (SiLU(W_gate a) * W_up a) with a = XN, which holds RMSNorm(X) by the layer's FFN
 * norm, for the rows [r0, r1), then the norm `next`; in a MoE model the FFN is the sum of that
 * over each row's routed experts, weighted by the router, its routing recorded where the pass
 * asks for it.
 */
static void ffn_block(struct dllm_backend *be, struct phase_clock *clk,
                      const struct dllm_hparams *hp, const struct dllm_pass *pass, int64_t il,
                      int64_t r0, int64_t r1, struct then_norm next)
{
    const struct dllm_backend_ops *op = be->ops;
    if (hp->n_expert) {
        const int64_t n = pass->n_tokens;
        op->moe(be, il, r0, r1, pass->experts ? pass->experts + il * n * hp->n_expert_used : NULL,
                pass->expert_margins ? pass->expert_margins + il * n : NULL);
    } else {
        op->matmul(be, il, DLLM_W_GATE, DLLM_BUF_XN, r0, r1, false, DLLM_BUF_GATE);
        op->matmul(be, il, DLLM_W_UP, DLLM_BUF_XN, r0, r1, true, DLLM_BUF_UP);
        lap(clk, DLLM_PHASE_GEMM);
        op->swiglu(be, r0, r1);
        lap(clk, DLLM_PHASE_NORMS_ROPE);
        op->matmul(be, il, DLLM_W_DOWN, DLLM_BUF_GATE, r0, r1, false, DLLM_BUF_XN);
    }
    lap(clk, DLLM_PHASE_GEMM);
    residual(be, clk, r0, r1, next);
}

/*
 * Whether the last layer may be computed for the asked rows alone (last_layer_rows): the
 * backend gathers rows, fewer rows are asked than the pass computes, and no MoE routing is
 * recorded (it is kept for every computed position).
 */
static bool rows_alone(const struct dllm_backend *be, const struct dllm_pass *pass, int64_t n)
{
    return be->ops->gather && pass->n_rows < n && !pass->experts && !pass->expert_margins;
}

/*
 * The last layer il for the pass's rows only, leaving OUT = their final-normed rows: the
 * attention of all rows [r0, r1) (every row's keys and values are needed; the other queries
 * are left in), then Wo, the residual and the FFN of the R asked rows gathered into rows
 * 0 .. R-1 in the pass's order. Every op works row by row, so each row gets the bits of the
 * whole layer: X row i = Wo a + x is the same sum as x + Wo a.
 */
static void last_layer_rows(struct dllm_backend *be, struct phase_clock *clk,
                            const struct dllm_hparams *hp, const struct dllm_pass *pass, int64_t il,
                            int64_t r0, int64_t r1)
{
    const struct dllm_backend_ops *op = be->ops;
    const int64_t R = pass->n_rows;
    attend(be, clk, il, r0, r1, pass->n_tokens);
    if (R == 0)
        return;
    op->gather(be, DLLM_BUF_ATT, pass->rows, R, DLLM_BUF_Q);
    op->gather(be, DLLM_BUF_X, pass->rows, R, DLLM_BUF_XN);
    lap(clk, DLLM_PHASE_NORMS_ROPE);
    op->matmul(be, il, DLLM_W_O, DLLM_BUF_Q, 0, R, false, DLLM_BUF_X);
    lap(clk, DLLM_PHASE_GEMM);
    residual(be, clk, 0, R,
             (struct then_norm){.on = true, .layer = il, .g = DLLM_V_FFN_NORM, .dst = DLLM_BUF_XN});
    ffn_block(
        be, clk, hp, pass, il, 0, R,
        (struct then_norm){.on = true, .layer = il, .g = DLLM_V_OUTPUT_NORM, .dst = DLLM_BUF_OUT});
}

/* Checks a pass's arguments against the context and the vocabulary. */
static enum dllm_status check_run(const struct dllm_forward *f, const struct dllm_pass *p,
                                  struct dllm_error *err)
{
    if (p->n_tokens < 1 || p->n_tokens > f->max_tokens)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "%" PRId64 " tokens: this forward context takes 1 to %" PRId64,
                              p->n_tokens, f->max_tokens);
    if (p->n_rows < 0 || p->n_rows > f->max_rows)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "%" PRId64 " logits rows: this forward context takes 0 to "
                              "%" PRId64,
                              p->n_rows, f->max_rows);
    if (p->n_rows > 0 && !p->logits && !p->stats)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "%" PRId64 " logits rows asked for with neither logits nor stats to "
                              "receive them",
                              p->n_rows);
    for (int64_t i = 0; i < p->n_tokens; i++) {
        if (p->ids[i] < 0 || p->ids[i] >= f->model->hp.n_vocab)
            return dllm_error_set(err, DLLM_ERR_ARG,
                                  "token id %" PRId32 " at position %" PRId64 " is outside the "
                                  "vocabulary of %" PRId64 " tokens",
                                  p->ids[i], i, f->model->hp.n_vocab);
    }
    int64_t r0 = 0, r1 = p->n_tokens;
    if (p->cache) {
        if (p->cache->be != f->be)
            return dllm_error_set(err, DLLM_ERR_ARG,
                                  "the K/V cache was made for another forward context");
        if (p->n_tokens > p->cache->n_tokens)
            return dllm_error_set(err, DLLM_ERR_ARG,
                                  "%" PRId64 " tokens: the K/V cache holds %" PRId64, p->n_tokens,
                                  p->cache->n_tokens);
        if (p->begin < 0 || p->begin >= p->end || p->end > p->n_tokens)
            return dllm_error_set(err, DLLM_ERR_ARG,
                                  "positions [%" PRId64 ", %" PRId64 ") to compute: use a "
                                  "non-empty range inside [0, %" PRId64 ")",
                                  p->begin, p->end, p->n_tokens);
        r0 = p->begin;
        r1 = p->end;
    }
    for (int64_t r = 0; r < p->n_rows; r++) {
        if (p->rows[r] >= r0 && p->rows[r] < r1)
            continue;
        if (!p->cache)
            return dllm_error_set(err, DLLM_ERR_ARG,
                                  "logits row %" PRId32 " is outside the %" PRId64
                                  " positions of the pass",
                                  p->rows[r], p->n_tokens);
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "logits row %" PRId32 " is outside the positions [%" PRId64
                              ", %" PRId64 ") the pass computes",
                              p->rows[r], r0, r1);
    }
    return DLLM_OK;
}

/* Tells the caller that layer `done` of `total` begins (done = total: the pass is over). */
static void report_layer(const struct dllm_forward *f, int64_t done, int64_t total)
{
    if (!f->progress)
        return;
    struct dllm_progress p = {.kind = DLLM_PROGRESS_FORWARD,
                              .fraction = (double)done / (double)total,
                              .done = done,
                              .total = total};
    f->progress(&p, f->progress_user);
}

/* DLLM_ERR_CANCELLED when the pass's flag is set as layer il (n_layer: the output) begins. */
static enum dllm_status check_cancel(const struct dllm_pass *pass, int64_t il, int64_t n_layer,
                                     struct dllm_error *err)
{
    if (!pass->cancel || !atomic_load(pass->cancel))
        return DLLM_OK;
    if (il == n_layer)
        return dllm_error_set(err, DLLM_ERR_CANCELLED,
                              "the forward pass was cancelled before the output projection");
    return dllm_error_set(err, DLLM_ERR_CANCELLED,
                          "the forward pass was cancelled before layer %" PRId64, il);
}

enum dllm_status dllm_forward_run(struct dllm_forward *fwd, const struct dllm_pass *pass,
                                  struct dllm_error *err)
{
    const int64_t n_layer = fwd->model->hp.n_layer, n = pass->n_tokens;
    const int64_t r0 = pass->cache ? pass->begin : 0, r1 = pass->cache ? pass->end : n;
    struct dllm_backend *be = fwd->be;
    const bool alone = rows_alone(be, pass, r1 - r0);
    struct phase_clock clk = {.on = pass->phases != NULL, .be = be};
    enum dllm_status st = check_run(fwd, pass, err);
    if (st)
        return st;
    skip_lap(&clk);
    if ((st = be->ops->embed(be, pass->ids, r0, r1, err)))
        return st;
    be->ops->rms_norm(be, DLLM_BUF_X, r0, r1, 0, DLLM_V_ATTN_NORM, DLLM_BUF_XN);
    lap(&clk, DLLM_PHASE_NORMS_ROPE);
    for (int64_t il = 0; il < n_layer; il++) {
        if ((st = check_cancel(pass, il, n_layer, err)))
            break;
        report_layer(fwd, il, n_layer);
        skip_lap(&clk);
        be->ops->bind_kv(be, pass->cache, il);
        if (alone && il == n_layer - 1) {
            last_layer_rows(be, &clk, &fwd->model->hp, pass, il, r0, r1);
            continue;
        }
        attention_block(be, &clk, il, r0, r1, n);
        const struct then_norm next = {
            .on = il + 1 < n_layer, .layer = il + 1, .g = DLLM_V_ATTN_NORM, .dst = DLLM_BUF_XN};
        ffn_block(be, &clk, &fwd->model->hp, pass, il, r0, r1, next);
    }
    be->ops->bind_kv(be, NULL, 0);
    if (!st && !(st = check_cancel(pass, n_layer, n_layer, err))) {
        report_layer(fwd, n_layer, n_layer);
        skip_lap(&clk);
        if (pass->n_rows > 0) {
            if (!alone)
                be->ops->gather_norm(be, pass->rows, pass->n_rows);
            be->ops->output(be, pass->n_rows, pass->logits, pass->stats);
        }
        lap(&clk, DLLM_PHASE_OUTPUT);
    }
    /* A failure of the backend's ops outranks a cancel: the context is unusable after it. */
    const enum dllm_status failed = be->ops->finish(be, err);
    if (clk.on && be->ops->phase_ms)
        be->ops->phase_ms(be, clk.ms);
    if (!failed && !st && pass->phases)
        *pass->phases = (struct dllm_pass_phases){.gemm_ms = clk.ms[DLLM_PHASE_GEMM],
                                                  .attention_ms = clk.ms[DLLM_PHASE_ATTENTION],
                                                  .norms_rope_ms = clk.ms[DLLM_PHASE_NORMS_ROPE],
                                                  .output_ms = clk.ms[DLLM_PHASE_OUTPUT]};
    return failed ? failed : st;
}
