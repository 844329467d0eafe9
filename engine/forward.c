/*
 * The forward pass of LLaDA and Dream as a graph over a backend's operations (backend.h):
 * embedding lookup, n_layer pre-norm blocks with bidirectional grouped-query attention and a
 * SwiGLU feed-forward network, the final norm and the output projection of the requested rows
 * only (llama.cpp src/models/llada.cpp and src/models/dream.cpp, with the causal mask
 * removed). Which op, in what order, on which buffers is decided here; the backend owns the
 * buffers and the weights.
 */
#include "config.h"

#include "backend.h"
#include "dllm.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

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

/*
 * Refuses when the weights, the backend's buffers for the config and the caller's logits rows
 * need more memory than is available.
 */
static enum dllm_status check_memory(const struct dllm_backend_ops *ops,
                                     const struct dllm_backend_config *cfg, struct dllm_error *err)
{
    uint64_t avail;
    if (!mem_available(&avail))
        return DLLM_OK;
    const struct dllm_model *m = cfg->model;
    const double need = (double)m->weight_bytes + (double)ops->host_bytes(cfg) +
                        (double)cfg->max_rows * (double)m->hp.n_vocab * sizeof(float);
    if (need <= (double)avail)
        return DLLM_OK;
    return dllm_error_set(err, DLLM_ERR_NOMEM,
                          "model needs %.1f GB but only %.1f GB is available (for a canvas of "
                          "%" PRId64 " tokens): use a smaller model or a shorter canvas",
                          need / 1e9, (double)avail / 1e9, cfg->max_tokens);
}

enum dllm_status dllm_forward_new(const struct dllm_model *model,
                                  const struct dllm_forward_params *params,
                                  struct dllm_forward **out, struct dllm_error *err)
{
    const struct dllm_hparams *hp = &model->hp;
    *out = NULL;
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
    if (!params->pool)
        return dllm_error_set(err, DLLM_ERR_ARG, "a forward context needs a thread pool");
    const struct dllm_backend_ops *ops;
    enum dllm_status st = dllm_backend_find(params->backend, &ops, err);
    if (st)
        return st;
    const struct dllm_backend_config cfg = {.model = model,
                                            .max_tokens = params->max_tokens,
                                            .max_rows = params->max_rows,
                                            .pool = params->pool,
                                            .variant = params->kernels,
                                            .progress = params->progress,
                                            .progress_user = params->progress_user,
                                            .cancel = params->cancel};
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

const char *dllm_forward_kernels(const struct dllm_forward *fwd)
{
    return fwd->be->ops->variant(fwd->be);
}

/* X += Wo attention(rope(Wq a + bq), rope(Wk a + bk), Wv a + bv) with a = RMSNorm(X). */
static void attention_block(struct dllm_backend *be, int64_t il, int64_t L)
{
    const struct dllm_backend_ops *op = be->ops;
    op->rms_norm(be, DLLM_BUF_X, NULL, L, il, DLLM_V_ATTN_NORM, DLLM_BUF_XN);
    op->matmul(be, il, DLLM_W_Q, DLLM_BUF_XN, L, false, DLLM_BUF_Q);
    op->matmul(be, il, DLLM_W_K, DLLM_BUF_XN, L, true, DLLM_BUF_K);
    op->matmul(be, il, DLLM_W_V, DLLM_BUF_XN, L, true, DLLM_BUF_V);
    op->add_bias(be, DLLM_BUF_Q, il, DLLM_V_BQ, L);
    op->add_bias(be, DLLM_BUF_K, il, DLLM_V_BK, L);
    op->add_bias(be, DLLM_BUF_V, il, DLLM_V_BV, L);
    op->rope(be, L);
    op->attention(be, L);
    op->matmul(be, il, DLLM_W_O, DLLM_BUF_ATT, L, false, DLLM_BUF_XN);
    op->add(be, DLLM_BUF_XN, L);
}

/* X += W_down (SiLU(W_gate a) * W_up a) with a = RMSNorm(X). */
static void ffn_block(struct dllm_backend *be, int64_t il, int64_t L)
{
    const struct dllm_backend_ops *op = be->ops;
    op->rms_norm(be, DLLM_BUF_X, NULL, L, il, DLLM_V_FFN_NORM, DLLM_BUF_XN);
    op->matmul(be, il, DLLM_W_GATE, DLLM_BUF_XN, L, false, DLLM_BUF_GATE);
    op->matmul(be, il, DLLM_W_UP, DLLM_BUF_XN, L, true, DLLM_BUF_UP);
    op->swiglu(be, L);
    op->matmul(be, il, DLLM_W_DOWN, DLLM_BUF_GATE, L, false, DLLM_BUF_XN);
    op->add(be, DLLM_BUF_XN, L);
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
    for (int64_t i = 0; i < p->n_tokens; i++) {
        if (p->ids[i] < 0 || p->ids[i] >= f->model->hp.n_vocab)
            return dllm_error_set(err, DLLM_ERR_ARG,
                                  "token id %" PRId32 " at position %" PRId64 " is outside the "
                                  "vocabulary of %" PRId64 " tokens",
                                  p->ids[i], i, f->model->hp.n_vocab);
    }
    for (int64_t r = 0; r < p->n_rows; r++) {
        if (p->rows[r] < 0 || p->rows[r] >= p->n_tokens)
            return dllm_error_set(err, DLLM_ERR_ARG,
                                  "logits row %" PRId32 " is outside the %" PRId64
                                  " positions of the pass",
                                  p->rows[r], p->n_tokens);
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
    const int64_t n_layer = fwd->model->hp.n_layer, L = pass->n_tokens;
    struct dllm_backend *be = fwd->be;
    enum dllm_status st = check_run(fwd, pass, err);
    if (st || (st = be->ops->embed(be, pass->ids, L, err)))
        return st;
    for (int64_t il = 0; il < n_layer; il++) {
        if ((st = check_cancel(pass, il, n_layer, err)))
            return st;
        report_layer(fwd, il, n_layer);
        attention_block(be, il, L);
        ffn_block(be, il, L);
    }
    if ((st = check_cancel(pass, n_layer, n_layer, err)))
        return st;
    report_layer(fwd, n_layer, n_layer);
    if (pass->n_rows > 0) {
        be->ops->rms_norm(be, DLLM_BUF_X, pass->rows, pass->n_rows, 0, DLLM_V_OUTPUT_NORM,
                          DLLM_BUF_OUT);
        be->ops->output(be, pass->n_rows, pass->logits);
    }
    return DLLM_OK;
}
