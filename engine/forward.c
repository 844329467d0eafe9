/*
 * The reference forward pass of LLaDA and Dream (shared/docs/reference.md A.1): embedding
 * lookup, n_layer pre-norm blocks with bidirectional grouped-query attention and a SwiGLU
 * feed-forward network, the final norm and the output projection of the requested rows only.
 * The pass is a plain sequence of kernel calls (kernels/matmul.h, kernels/ops.h) over buffers
 * sized once by dllm_forward_new.
 */
#include "config.h"

#include "forward.h"

#include "dllm.h"
#include "gguf/gguf.h"
#include "kernels/cpu.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "threadpool.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define BUFFER_ALIGN 64

/* A weight matrix as the pass multiplies it: the model's tensor, and its repacked copy or NULL. */
struct matrix {
    const struct dllm_gguf_tensor *t;
    const void *packed;
};

/* The matrices of a layer, in the order of struct dllm_forward's mats. */
enum { M_Q, M_K, M_V, M_O, M_GATE, M_UP, M_DOWN, M_PER_LAYER };

struct dllm_forward {
    const struct dllm_model *model;
    int64_t max_tokens, max_rows;
    void *arena;   /* every buffer below, each 64-byte aligned */
    float *x;      /* [max_tokens, n_embd] the residual stream */
    float *xn;     /* [max_tokens, n_embd] a block's normed input, then its projected output */
    float *q;      /* [max_tokens, n_head * head_dim] */
    float *k, *v;  /* [max_tokens, n_head_kv * head_dim] */
    float *att;    /* [max_tokens, n_head * head_dim] attention output, heads side by side */
    float *gate;   /* [max_tokens, n_ff] gate projection, then SwiGLU */
    float *up;     /* [max_tokens, n_ff] */
    float *scores; /* [n_threads, dllm_ops_attention_scratch(max_tokens, head_dim)] each thread's
                      attention scratch */
    float *cos;    /* [max_tokens, n_rot / 2] RoPE table for positions 0 .. max_tokens-1 */
    float *sin;    /* [max_tokens, n_rot / 2] */
    float *out;    /* [max_rows, n_embd] the final-normed rows to project to logits */
    void *act;     /* [max_tokens] rows of activations converted for a matrix kernel, each
                      as long as the largest dllm_matmul_scratch_bytes(type, K, 1) */
    const struct dllm_kernels *kernels; /* the matrix-kernel variant (DLLM_KERNELS or the CPU) */
    const struct dllm_ops *ops;         /* the block kernels of the same instruction set */
    struct dllm_threadpool *pool;       /* n_threads threads, the caller of a pass included */
    int n_threads;
    struct matrix *mats; /* layer il's at mats[il * M_PER_LAYER + M_Q ...], then the output */
    void *packed;        /* the repacked copies of mats, one anonymous mapping, or NULL */
    size_t packed_bytes;
};

enum {
    BUF_X,
    BUF_XN,
    BUF_Q,
    BUF_K,
    BUF_V,
    BUF_ATT,
    BUF_GATE,
    BUF_UP,
    BUF_SCORES,
    BUF_COS,
    BUF_SIN,
    BUF_OUT,
    BUF_ACT,
    N_BUFS
};

/* Bytes of one activation row converted for the matrix of the model that needs the most. */
static size_t act_row_bytes(const struct dllm_model *m)
{
    size_t most = dllm_matmul_scratch_bytes(m->output->type, m->output->ne[0], 1);
    for (int64_t il = 0; il < m->hp.n_layer; il++) {
        const struct dllm_layer *l = &m->layers[il];
        const struct dllm_gguf_tensor *w[] = {l->wq,     l->wk,   l->wv,    l->wo,
                                              l->w_gate, l->w_up, l->w_down};
        for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
            size_t b = dllm_matmul_scratch_bytes(w[i]->type, w[i]->ne[0], 1);
            most = b > most ? b : most;
        }
    }
    return most;
}

/* Byte sizes of the buffers for L tokens, R rows and T threads, each rounded up to the
 * alignment. */
static bool buffer_sizes(const struct dllm_model *m, int64_t L, int64_t R, int T,
                         size_t size[N_BUFS])
{
    const struct dllm_hparams *hp = &m->hp;
    const int64_t dq = hp->n_head * hp->head_dim, dkv = hp->n_head_kv * hp->head_dim;
    const struct {
        int64_t rows, cols;
        size_t elem;
    } shape[N_BUFS] = {
        [BUF_X] = {L, hp->n_embd, sizeof(float)},
        [BUF_XN] = {L, hp->n_embd, sizeof(float)},
        [BUF_Q] = {L, dq, sizeof(float)},
        [BUF_K] = {L, dkv, sizeof(float)},
        [BUF_V] = {L, dkv, sizeof(float)},
        [BUF_ATT] = {L, dq, sizeof(float)},
        [BUF_GATE] = {L, hp->n_ff, sizeof(float)},
        [BUF_UP] = {L, hp->n_ff, sizeof(float)},
        [BUF_SCORES] = {T, dllm_ops_attention_scratch(L, hp->head_dim), sizeof(float)},
        [BUF_COS] = {L, hp->n_rot / 2, sizeof(float)},
        [BUF_SIN] = {L, hp->n_rot / 2, sizeof(float)},
        [BUF_OUT] = {R, hp->n_embd, sizeof(float)},
        [BUF_ACT] = {L, 1, act_row_bytes(m)},
    };
    for (int i = 0; i < N_BUFS; i++) {
        size_t n;
        if (__builtin_mul_overflow((size_t)shape[i].rows, (size_t)shape[i].cols, &n) ||
            __builtin_mul_overflow(n, shape[i].elem, &n) ||
            __builtin_add_overflow(n, (size_t)BUFFER_ALIGN - 1, &n))
            return false;
        size[i] = n / BUFFER_ALIGN * BUFFER_ALIGN;
    }
    return true;
}

/* The threads a pass uses when the caller asks for 0: the online cores, at most 1024. */
static int default_threads(void)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores < 1 ? 1 : cores > 1024 ? 1024 : (int)cores;
}

/* Bytes of the arena for L tokens, R rows and T threads; SIZE_MAX when it overflows. */
static size_t arena_bytes(const struct dllm_model *model, int64_t L, int64_t R, int T)
{
    size_t size[N_BUFS], total = 0;
    if (!buffer_sizes(model, L, R, T, size))
        return SIZE_MAX;
    for (int i = 0; i < N_BUFS; i++) {
        if (__builtin_add_overflow(total, size[i], &total))
            return SIZE_MAX;
    }
    return total;
}

size_t dllm_forward_bytes(const struct dllm_model *model, int64_t max_tokens, int64_t max_rows)
{
    return arena_bytes(model, max_tokens, max_rows, default_threads());
}

/*
 * Lists the model's matrices in f->mats and, where the kernel variant repacks their types,
 * repacks them into one anonymous mapping and releases the pages of the originals, so the weights
 * stay resident once. The repacked copies are as large as the originals, plus a few bytes per Q6_K
 * block.
 */
static enum dllm_status repack_matrices(struct dllm_forward *f, struct dllm_error *err)
{
    const struct dllm_model *m = f->model;
    const int64_t n = m->hp.n_layer * M_PER_LAYER + 1;
    if (!(f->mats = calloc((size_t)n, sizeof *f->mats)))
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    for (int64_t il = 0; il < m->hp.n_layer; il++) {
        const struct dllm_layer *l = &m->layers[il];
        const struct dllm_gguf_tensor *w[M_PER_LAYER] = {
            [M_Q] = l->wq,        [M_K] = l->wk,    [M_V] = l->wv,       [M_O] = l->wo,
            [M_GATE] = l->w_gate, [M_UP] = l->w_up, [M_DOWN] = l->w_down};
        for (int i = 0; i < M_PER_LAYER; i++)
            f->mats[il * M_PER_LAYER + i].t = w[i];
    }
    f->mats[n - 1].t = m->output;
    if (!f->kernels->repacked_bytes)
        return DLLM_OK;
    size_t total = 0;
    for (int64_t i = 0; i < n; i++) {
        const struct dllm_gguf_tensor *t = f->mats[i].t;
        total += f->kernels->repacked_bytes(t->type, t->ne[0], t->ne[1]);
    }
    if (total == 0)
        return DLLM_OK;
    void *map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED)
        return dllm_error_set(err, DLLM_ERR_NOMEM,
                              "out of memory for the repacked weights (%.1f GB): close other "
                              "programs or use a smaller model",
                              (double)total / 1e9);
    f->packed = map;
    f->packed_bytes = total;
    uint8_t *dst = map;
    if (m->progress)
        m->progress(0.0, m->progress_user);
    for (int64_t i = 0; i < n; i++) {
        const struct dllm_gguf_tensor *t = f->mats[i].t;
        const size_t bytes = f->kernels->repacked_bytes(t->type, t->ne[0], t->ne[1]);
        if (bytes == 0)
            continue;
        dllm_kernels_repack_par(f->kernels, f->pool, t->type, t->data, t->ne[0], t->ne[1], dst);
        f->mats[i].packed = dst;
        if (t != m->tok_embd)
            dllm_gguf_release_pages(m->gguf, t->data, t->size);
        dst += bytes;
        if (m->progress)
            m->progress((double)(dst - (uint8_t *)map) / (double)total, m->progress_user);
    }
    return DLLM_OK;
}

enum dllm_status dllm_forward_new(const struct dllm_model *model, int64_t max_tokens,
                                  int64_t max_rows, int n_threads, struct dllm_forward **out,
                                  struct dllm_error *err)
{
    const struct dllm_hparams *hp = &model->hp;
    *out = NULL;
    if (max_tokens < 1 || max_tokens > hp->n_ctx)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "a forward pass over %" PRId64 " tokens: the model takes 1 to "
                              "%" PRId64 " (%s.context_length)",
                              max_tokens, hp->n_ctx, model->arch);
    if (max_rows < 1 || max_rows > max_tokens)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "%" PRId64 " logits rows for %" PRId64 " tokens: ask for 1 to "
                              "%" PRId64,
                              max_rows, max_tokens, max_tokens);
    if (n_threads == 0)
        n_threads = default_threads();
    if (n_threads < 0 || n_threads > 1024)
        return dllm_error_set(err, DLLM_ERR_ARG, "%d threads: use 1 to 1024 (0: one per core)",
                              n_threads);
    const struct dllm_kernels *kernels;
    enum dllm_status st = dllm_kernels_select_env(&kernels, err);
    if (st)
        return st;
    size_t size[N_BUFS];
    const size_t total = arena_bytes(model, max_tokens, max_rows, n_threads);
    struct dllm_forward *f = calloc(1, sizeof *f);
    if (f && total != SIZE_MAX && buffer_sizes(model, max_tokens, max_rows, n_threads, size))
        f->arena = aligned_alloc(BUFFER_ALIGN, total);
    if (!f || !f->arena) {
        free(f);
        return dllm_error_set(err, DLLM_ERR_NOMEM,
                              "out of memory for a forward pass over %" PRId64 " tokens",
                              max_tokens);
    }
    if ((st = dllm_threadpool_new(n_threads, &f->pool, err))) {
        free(f->arena);
        free(f);
        return st;
    }
    f->kernels = kernels;
    f->ops = dllm_ops_for(kernels);
    f->n_threads = n_threads;
    void *bufs[N_BUFS];
    char *p = f->arena;
    for (int i = 0; i < N_BUFS; i++) {
        bufs[i] = p;
        p += size[i];
    }
    f->model = model;
    f->max_tokens = max_tokens;
    f->max_rows = max_rows;
    f->x = bufs[BUF_X];
    f->xn = bufs[BUF_XN];
    f->q = bufs[BUF_Q];
    f->k = bufs[BUF_K];
    f->v = bufs[BUF_V];
    f->att = bufs[BUF_ATT];
    f->gate = bufs[BUF_GATE];
    f->up = bufs[BUF_UP];
    f->scores = bufs[BUF_SCORES];
    f->cos = bufs[BUF_COS];
    f->sin = bufs[BUF_SIN];
    f->out = bufs[BUF_OUT];
    f->act = bufs[BUF_ACT];
    dllm_rope_table(hp->rope_base, hp->n_rot, max_tokens, f->cos, f->sin);
    if ((st = repack_matrices(f, err))) {
        dllm_forward_free(f);
        return st;
    }
    *out = f;
    return DLLM_OK;
}

void dllm_forward_free(struct dllm_forward *fwd)
{
    if (!fwd)
        return;
    if (fwd->packed)
        munmap(fwd->packed, fwd->packed_bytes);
    free(fwd->mats);
    dllm_threadpool_free(fwd->pool);
    free(fwd->arena);
    free(fwd);
}

/*
 * y[L, N] = x[L, K] W^T for the matrix W [N, K] at mats[i]: converts x for W's type, then
 * multiplies, from W's repacked copy where it has one. With prev >= 0, x is the input of the
 * product just done with mats[prev], and is converted again only if W's type takes another
 * activation format.
 */
static void linear_after(struct dllm_forward *f, int64_t i, int64_t prev, const float *x, int64_t L,
                         float *y, int64_t ldy)
{
    const struct matrix *mat = &f->mats[i];
    const struct dllm_gguf_tensor *w = mat->t;
    const int64_t K = w->ne[0], N = w->ne[1];
    if (prev < 0 ||
        dllm_matmul_act_format(f->mats[prev].t->type) != dllm_matmul_act_format(w->type))
        dllm_kernels_quantize_par(f->kernels, f->pool, w->type, x, K, L, f->act);
    if (mat->packed)
        dllm_kernels_rows_packed_par(f->kernels, f->pool, w->type, mat->packed, K, N, f->act, L, y,
                                     ldy);
    else
        dllm_kernels_rows_par(f->kernels, f->pool, w->type, w->data, K, N, f->act, L, y, ldy);
}

/* linear_after for a product whose input is new. */
static void linear(struct dllm_forward *f, int64_t i, const float *x, int64_t L, float *y,
                   int64_t ldy)
{
    linear_after(f, i, -1, x, L, y, ldy);
}

/* Adds a bias b[n] to each of L rows of y [L, n]; no-op when b is NULL. */
static void add_bias(const struct dllm_forward *f, float *y, const float *b, int64_t L, int64_t n)
{
    if (!b)
        return;
    for (int64_t i = 0; i < L; i++)
        f->ops->add(y + i * n, b, n);
}

/* RMSNorm of L rows of n elements, x to y. */
static void rms_norm_rows(const struct dllm_forward *f, const float *x, const float *g, float eps,
                          int64_t L, int64_t n, float *y)
{
    for (int64_t i = 0; i < L; i++)
        f->ops->rms_norm(x + i * n, g, eps, n, y + i * n);
}

#define ATTENTION_ROWS 16 /* query rows per attention work item (a multiple of the ops' tile) */

struct attention_job {
    struct dllm_forward *f;
    int64_t L;
};

/* One work item of the attention: ATTENTION_ROWS query rows, with the thread's scratch. */
static void attention_rows(void *ctx, int64_t item, int thread)
{
    const struct attention_job *job = ctx;
    const struct dllm_forward *f = job->f;
    const struct dllm_hparams *hp = &f->model->hp;
    int64_t i0 = item * ATTENTION_ROWS,
            i1 = i0 + ATTENTION_ROWS < job->L ? i0 + ATTENTION_ROWS : job->L;
    const size_t scratch = (size_t)dllm_ops_attention_scratch(f->max_tokens, hp->head_dim);
    f->ops->attention(f->q, f->k, f->v, job->L, hp->n_head, hp->n_head_kv, hp->head_dim,
                      1.0f / sqrtf((float)hp->head_dim), i0, i1,
                      f->scores + (size_t)thread * scratch, f->att);
}

/* x += Wo attention(rope(Wq a + bq), rope(Wk a + bk), Wv a + bv) with a = RMSNorm(x). */
static void attention_block(struct dllm_forward *f, int64_t il, int64_t L)
{
    const struct dllm_layer *l = &f->model->layers[il];
    const int64_t mi = il * M_PER_LAYER;
    const struct dllm_hparams *hp = &f->model->hp;
    const int64_t dq = hp->n_head * hp->head_dim, dkv = hp->n_head_kv * hp->head_dim;
    const int64_t half = hp->n_rot / 2;
    rms_norm_rows(f, f->x, l->attn_norm, hp->norm_eps, L, hp->n_embd, f->xn);
    linear(f, mi + M_Q, f->xn, L, f->q, dq);
    linear_after(f, mi + M_K, mi + M_Q, f->xn, L, f->k, dkv);
    linear_after(f, mi + M_V, mi + M_K, f->xn, L, f->v, dkv);
    add_bias(f, f->q, l->bq, L, dq);
    add_bias(f, f->k, l->bk, L, dkv);
    add_bias(f, f->v, l->bv, L, dkv);
    for (int64_t i = 0; i < L; i++) {
        f->ops->rope(f->q + i * dq, hp->n_head, hp->head_dim, hp->n_rot, hp->rope_mode,
                     f->cos + i * half, f->sin + i * half);
        f->ops->rope(f->k + i * dkv, hp->n_head_kv, hp->head_dim, hp->n_rot, hp->rope_mode,
                     f->cos + i * half, f->sin + i * half);
    }
    struct attention_job job = {f, L};
    dllm_threadpool_run(f->pool, (L + ATTENTION_ROWS - 1) / ATTENTION_ROWS, attention_rows, &job);
    linear(f, mi + M_O, f->att, L, f->xn, hp->n_embd);
    f->ops->add(f->x, f->xn, L * hp->n_embd);
}

/* x += W_down (SiLU(W_gate a) * W_up a) with a = RMSNorm(x). */
static void ffn_block(struct dllm_forward *f, int64_t il, int64_t L)
{
    const struct dllm_layer *l = &f->model->layers[il];
    const int64_t mi = il * M_PER_LAYER;
    const struct dllm_hparams *hp = &f->model->hp;
    rms_norm_rows(f, f->x, l->ffn_norm, hp->norm_eps, L, hp->n_embd, f->xn);
    linear(f, mi + M_GATE, f->xn, L, f->gate, hp->n_ff);
    linear_after(f, mi + M_UP, mi + M_GATE, f->xn, L, f->up, hp->n_ff);
    f->ops->swiglu(f->gate, f->up, L * hp->n_ff);
    linear(f, mi + M_DOWN, f->gate, L, f->xn, hp->n_embd);
    f->ops->add(f->x, f->xn, L * hp->n_embd);
}

/* Checks a pass's arguments against the context and the vocabulary. */
static enum dllm_status check_run(const struct dllm_forward *f, const int32_t *ids, int64_t n,
                                  const int32_t *rows, int64_t n_rows, struct dllm_error *err)
{
    if (n < 1 || n > f->max_tokens)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "%" PRId64 " tokens: this forward context takes 1 to %" PRId64, n,
                              f->max_tokens);
    if (n_rows < 0 || n_rows > f->max_rows)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "%" PRId64 " logits rows: this forward context takes 0 to "
                              "%" PRId64,
                              n_rows, f->max_rows);
    for (int64_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= f->model->hp.n_vocab)
            return dllm_error_set(err, DLLM_ERR_ARG,
                                  "token id %" PRId32 " at position %" PRId64 " is outside the "
                                  "vocabulary of %" PRId64 " tokens",
                                  ids[i], i, f->model->hp.n_vocab);
    }
    for (int64_t r = 0; r < n_rows; r++) {
        if (rows[r] < 0 || rows[r] >= n)
            return dllm_error_set(err, DLLM_ERR_ARG,
                                  "logits row %" PRId32 " is outside the %" PRId64
                                  " positions of the pass",
                                  rows[r], n);
    }
    return DLLM_OK;
}

enum dllm_status dllm_forward_run(struct dllm_forward *fwd, const int32_t *ids, int64_t n,
                                  const int32_t *rows, int64_t n_rows, float *logits,
                                  struct dllm_error *err)
{
    const struct dllm_model *m = fwd->model;
    const struct dllm_hparams *hp = &m->hp;
    const int64_t d = hp->n_embd;
    enum dllm_status st = check_run(fwd, ids, n, rows, n_rows, err);
    if (st)
        return st;
    for (int64_t i = 0; i < n; i++) {
        if ((st =
                 dllm_gguf_tensor_decode(m->tok_embd, (int64_t)ids[i] * d, d, fwd->x + i * d, err)))
            return st;
    }
    for (int64_t il = 0; il < hp->n_layer; il++) {
        attention_block(fwd, il, n);
        ffn_block(fwd, il, n);
    }
    for (int64_t r = 0; r < n_rows; r++)
        fwd->ops->rms_norm(fwd->x + rows[r] * d, m->output_norm, hp->norm_eps, d, fwd->out + r * d);
    if (n_rows > 0)
        linear(fwd, hp->n_layer * M_PER_LAYER, fwd->out, n_rows, logits, hp->n_vocab);
    return DLLM_OK;
}

struct dllm_threadpool *dllm_forward_pool(struct dllm_forward *fwd)
{
    return fwd->pool;
}
