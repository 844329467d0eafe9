/*
 * The CPU backend: the forward pass's operations on the kernels of kernels/ (one variant of
 * the matrix kernels, "ref", "avx2", "avxvnni" or "avx512", and the block kernels of the same
 * instruction set), over buffers in one page-aligned arena, run on the caller's thread
 * pool. The SIMD variants repack the model's quantized matrices into their panel layout once.
 */
#include "config.h"

#include "backend.h"
#include "dllm.h"
#include "gguf/gguf.h"
#include "kernels/cpu.h"
#include "kernels/fp16.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "kernels/route.h"
#include "kernels/rowmath.h"
#include "lines.h"
#include "threadpool.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define ATTENTION_ROWS 16 /* attention work items' rows are a multiple of it (of the ops' tile) */
#define OUTPUT_CHUNK   32 /* logits rows an output into the chunk buffer computes at once */

/*
 * A weight matrix [N, K] as the backend multiplies it: its blocks in the model's file (a
 * tensor, or one expert of a stacked MoE tensor), and its repacked copy.
 */
struct matrix {
    uint32_t type;
    const void *data; /* NULL: the model has no such matrix (a MoE model's dense FFN) */
    int64_t K, N;
    const void *packed; /* NULL when not repacked */
};

/* The matrices of a layer, in the order of struct cpu's mats (enum dllm_weight's order). */
#define M_PER_LAYER DLLM_W_OUTPUT

/* A MoE layer's stacked expert matrices, in the order of struct cpu's mats. */
enum expert_weight { EXPERT_GATE, EXPERT_UP, EXPERT_DOWN, N_EXPERT_WEIGHTS };

/* The arena's parts: the activations of enum dllm_buf, then the backend's own scratch. */
enum {
    SCRATCH_SCORES = DLLM_N_BUFS, /* [n_threads, attention scratch] */
    SCRATCH_COS,                  /* [max_tokens, n_rot / 2] RoPE table */
    SCRATCH_SIN,                  /* [max_tokens, n_rot / 2] */
    SCRATCH_ACT,                  /* [max_tokens] activation rows converted for a kernel */
    SCRATCH_LOGITS, /* [min(max_rows, OUTPUT_CHUNK), n_vocab] an output's rows, chunk by chunk,
                       when the caller takes statistics only or its memory is off a line */
    /* MoE models only (else empty): */
    SCRATCH_ROUTER,     /* [max_tokens, n_expert] router logits */
    SCRATCH_ROUTE_IDS,  /* [max_tokens, n_used] int32 experts of each row */
    SCRATCH_ROUTE_W,    /* [max_tokens, n_used] their weights */
    SCRATCH_SLOTS,      /* [max_tokens * n_used] int32 (row, slot) pairs grouped by expert */
    SCRATCH_FIRST_SLOT, /* [n_expert + 1] int32 where each expert's group starts */
    SCRATCH_MOE_ROWS,   /* [max_tokens] int32 the XN rows of a group of experts' rows */
    SCRATCH_MOE_PARTS,  /* [n_expert] struct dllm_kernels_part, a group's products */
    SCRATCH_MOE_IN,     /* [max_tokens, n_embd] a group of experts' output */
    SCRATCH_MOE_SUM,    /* [max_tokens, n_embd] the weighted sum of the experts' outputs */
    N_PARTS
};

struct cpu {
    struct dllm_backend base;
    const struct dllm_model *model;
    int64_t max_tokens;
    void *arena; /* an anonymous mapping of arena_bytes */
    size_t arena_bytes;
    float *buf[DLLM_N_BUFS];
    float *own_k, *own_v; /* the arena's K and V, which buf[] names unless a cache is bound */
    /* the bound float16 cache layer's K and V, converted into own_k and own_v; else NULL */
    dllm_fp16 *bound_k, *bound_v;
    const struct dllm_fp16_kernels *fp16;
    float *chunk; /* SCRATCH_LOGITS */
    float *scores, *cos, *sin;
    void *act;
    const struct dllm_kernels *kernels;
    const struct dllm_ops *ops;
    struct dllm_threadpool *pool;
    float *router; /* SCRATCH_ROUTER .. SCRATCH_MOE_SUM */
    int32_t *route_ids, *slots, *first_slot, *moe_rows;
    float *route_w, *moe_in, *moe_sum;
    struct dllm_kernels_part *moe_parts;
    /*
     * Layer il's at mats[il * M_PER_LAYER + w], then the output; in a MoE model then each
     * layer's router and its experts (router_index, expert_index).
     */
    struct matrix *mats;
    int64_t n_mats;
    uint32_t act_type; /* the weight type whose activation format act holds */
    void *packed;      /* the repacked copies of mats, one anonymous mapping, or NULL */
    size_t packed_bytes;
};

/* Bytes of one activation row converted for the matrix of the model that needs the most. */
static size_t act_row_bytes(const struct dllm_model *m)
{
    size_t most = dllm_matmul_scratch_bytes(m->output->type, m->output->ne[0], 1);
    for (int64_t il = 0; il < m->hp.n_layer; il++) {
        const struct dllm_layer *l = &m->layers[il];
        const struct dllm_gguf_tensor *w[] = {l->wq,      l->wk,        l->wv,       l->wo,
                                              l->w_gate,  l->w_up,      l->w_down,   l->router,
                                              l->up_exps, l->gate_exps, l->down_exps};
        for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
            if (!w[i])
                continue;
            size_t b = dllm_matmul_scratch_bytes(w[i]->type, w[i]->ne[0], 1);
            most = b > most ? b : most;
        }
    }
    return most;
}

/* The width of the FFN's hidden rows: one expert's in a MoE model. */
static int64_t ffn_width(const struct dllm_hparams *hp)
{
    return hp->n_expert ? hp->n_ff_exp : hp->n_ff;
}

/* Byte sizes of the arena's parts for a config, each rounded up to the alignment. */
static bool part_sizes(const struct dllm_backend_config *cfg, size_t size[N_PARTS])
{
    const struct dllm_hparams *hp = &cfg->model->hp;
    const int64_t L = cfg->max_tokens, R = cfg->max_rows;
    const int T = dllm_threadpool_size(cfg->pool);
    const int64_t dq = hp->n_head * hp->head_dim, dkv = hp->n_head_kv * hp->head_dim;
    const bool moe = hp->n_expert > 0;
    const struct {
        int64_t rows, cols;
        size_t elem;
    } shape[N_PARTS] = {
        [DLLM_BUF_X] = {L, hp->n_embd, sizeof(float)},
        [DLLM_BUF_XN] = {L, hp->n_embd, sizeof(float)},
        [DLLM_BUF_Q] = {L, dq, sizeof(float)},
        [DLLM_BUF_K] = {L, dkv, sizeof(float)},
        [DLLM_BUF_V] = {L, dkv, sizeof(float)},
        [DLLM_BUF_ATT] = {L, dq, sizeof(float)},
        [DLLM_BUF_GATE] = {L, ffn_width(hp), sizeof(float)},
        [DLLM_BUF_UP] = {L, ffn_width(hp), sizeof(float)},
        [DLLM_BUF_OUT] = {R, hp->n_embd, sizeof(float)},
        [SCRATCH_SCORES] = {T, dllm_ops_attention_scratch(L, hp->head_dim), sizeof(float)},
        [SCRATCH_COS] = {L, hp->n_rot / 2, sizeof(float)},
        [SCRATCH_SIN] = {L, hp->n_rot / 2, sizeof(float)},
        [SCRATCH_ACT] = {L, 1, act_row_bytes(cfg->model)},
        [SCRATCH_LOGITS] = {R < OUTPUT_CHUNK ? R : OUTPUT_CHUNK, hp->n_vocab, sizeof(float)},
        [SCRATCH_ROUTER] = {moe ? L : 0, hp->n_expert, sizeof(float)},
        [SCRATCH_ROUTE_IDS] = {moe ? L : 0, hp->n_expert_used, sizeof(int32_t)},
        [SCRATCH_ROUTE_W] = {moe ? L : 0, hp->n_expert_used, sizeof(float)},
        [SCRATCH_SLOTS] = {moe ? L : 0, hp->n_expert_used, sizeof(int32_t)},
        [SCRATCH_FIRST_SLOT] = {moe ? 1 : 0, hp->n_expert + 1, sizeof(int32_t)},
        [SCRATCH_MOE_ROWS] = {moe ? L : 0, 1, sizeof(int32_t)},
        [SCRATCH_MOE_PARTS] = {moe ? 1 : 0, hp->n_expert, sizeof(struct dllm_kernels_part)},
        [SCRATCH_MOE_IN] = {moe ? L : 0, hp->n_embd, sizeof(float)},
        [SCRATCH_MOE_SUM] = {moe ? L : 0, hp->n_embd, sizeof(float)},
    };
    for (int i = 0; i < N_PARTS; i++) {
        size_t n;
        if (__builtin_mul_overflow((size_t)shape[i].rows, (size_t)shape[i].cols, &n) ||
            __builtin_mul_overflow(n, shape[i].elem, &n) ||
            __builtin_add_overflow(n, (size_t)DLLM_LINE - 1, &n))
            return false;
        size[i] = n / DLLM_LINE * DLLM_LINE;
    }
    return true;
}

/* Bytes of the arena for a config; SIZE_MAX when it overflows. */
static size_t arena_bytes(const struct dllm_backend_config *cfg)
{
    size_t size[N_PARTS], total = 0;
    if (!part_sizes(cfg, size))
        return SIZE_MAX;
    for (int i = 0; i < N_PARTS; i++) {
        if (__builtin_add_overflow(total, size[i], &total))
            return SIZE_MAX;
    }
    return total;
}

/*
 * The host bytes of a config: the weights (the repacked copies replace the file's pages of
 * them, so they count once) and the arena.
 */
static size_t cpu_host_bytes(const struct dllm_backend_config *cfg)
{
    return (size_t)cfg->model->weight_bytes + arena_bytes(cfg);
}

/* Reports the repack's progress, when asked to. */
static void report_repack(const struct dllm_backend_config *cfg, size_t done, size_t total)
{
    if (!cfg->progress)
        return;
    struct dllm_progress p = {.kind = DLLM_PROGRESS_REPACK,
                              .fraction = total ? (double)done / (double)total : 1.0,
                              .done = (int64_t)done,
                              .total = (int64_t)total};
    cfg->progress(&p, cfg->progress_user);
}

/* The matrix [ne1, ne0] of tensor t (expert e of a stacked one), or an absent one for NULL. */
static struct matrix matrix_of(const struct dllm_gguf_tensor *t, int64_t e)
{
    if (!t)
        return (struct matrix){0};
    const size_t bytes = t->size / (size_t)t->ne[2];
    return (struct matrix){.type = t->type,
                           .data = (const uint8_t *)t->data + (size_t)e * bytes,
                           .K = t->ne[0],
                           .N = t->ne[1]};
}

/* Where a MoE model's router of layer il is in c->mats. */
static int64_t router_index(const struct cpu *c, int64_t il)
{
    return c->model->hp.n_layer * M_PER_LAYER + 1 + il;
}

/* Where expert e's matrix w of layer il is in c->mats. */
static int64_t expert_index(const struct cpu *c, int64_t il, enum expert_weight w, int64_t e)
{
    const struct dllm_hparams *hp = &c->model->hp;
    return hp->n_layer * (M_PER_LAYER + 1) + 1 + (il * N_EXPERT_WEIGHTS + w) * hp->n_expert + e;
}

/* Lists the model's matrices in c->mats (every expert of a MoE layer its own). */
static enum dllm_status list_matrices(struct cpu *c, struct dllm_error *err)
{
    const struct dllm_model *m = c->model;
    const struct dllm_hparams *hp = &m->hp;
    c->n_mats = hp->n_layer * M_PER_LAYER + 1;
    if (hp->n_expert)
        c->n_mats += hp->n_layer * (1 + N_EXPERT_WEIGHTS * hp->n_expert);
    if (!(c->mats = calloc((size_t)c->n_mats, sizeof *c->mats)))
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    for (int64_t il = 0; il < hp->n_layer; il++) {
        const struct dllm_layer *l = &m->layers[il];
        const struct dllm_gguf_tensor *w[M_PER_LAYER] = {
            [DLLM_W_Q] = l->wq,       [DLLM_W_K] = l->wk,        [DLLM_W_V] = l->wv,
            [DLLM_W_O] = l->wo,       [DLLM_W_GATE] = l->w_gate, [DLLM_W_UP] = l->w_up,
            [DLLM_W_DOWN] = l->w_down};
        for (int i = 0; i < M_PER_LAYER; i++)
            c->mats[il * M_PER_LAYER + i] = matrix_of(w[i], 0);
        if (!hp->n_expert)
            continue;
        c->mats[router_index(c, il)] = matrix_of(l->router, 0);
        const struct dllm_gguf_tensor *x[N_EXPERT_WEIGHTS] = {
            [EXPERT_GATE] = l->gate_exps, [EXPERT_UP] = l->up_exps, [EXPERT_DOWN] = l->down_exps};
        for (int i = 0; i < N_EXPERT_WEIGHTS; i++)
            for (int64_t e = 0; e < hp->n_expert; e++)
                c->mats[expert_index(c, il, i, e)] = matrix_of(x[i], e);
    }
    c->mats[hp->n_layer * M_PER_LAYER] = matrix_of(m->output, 0);
    return DLLM_OK;
}

/* Bytes of a matrix repacked for c's kernels; 0 when they do not repack it. */
static size_t repacked_bytes(const struct cpu *c, const struct matrix *mat)
{
    if (!mat->data || !c->kernels->repacked_bytes)
        return 0;
    return c->kernels->repacked_bytes(mat->type, mat->K, mat->N);
}

/* A matrix's bytes as dllm_kernels_repack_par reads them: from the model's file. */
struct matrix_source {
    const struct dllm_gguf *gguf;
    const uint8_t *data;
};

static int read_matrix(void *user, size_t at, size_t n, void *dst)
{
    const struct matrix_source *src = user;
    return dllm_gguf_read(src->gguf, src->data + at, n, dst);
}

/*
 * Lists the model's matrices and, where the kernel variant repacks their types, repacks them
 * into one anonymous mapping. Each thread reads the rows it repacks from the file into a buffer
 * of its own (see dllm_gguf_read), so the file's pages of those matrices are never mapped and
 * the weights are resident once. The repacked copies are as large as the originals, plus a few
 * bytes per Q6_K block. The cancel flag is checked before each matrix.
 */
static enum dllm_status repack_matrices(struct cpu *c, const struct dllm_backend_config *cfg,
                                        struct dllm_error *err)
{
    const struct dllm_model *m = c->model;
    enum dllm_status st = list_matrices(c, err);
    if (st)
        return st;
    size_t total = 0, buf_bytes = 0;
    for (int64_t i = 0; i < c->n_mats; i++) {
        const struct matrix *mat = &c->mats[i];
        const size_t bytes = repacked_bytes(c, mat);
        total += bytes;
        if (bytes) {
            const size_t b = dllm_kernels_repack_buf_bytes(c->kernels, mat->type, mat->K);
            buf_bytes = b > buf_bytes ? b : buf_bytes;
        }
    }
    if (total == 0)
        return DLLM_OK;
    const int threads = dllm_threadpool_size(c->pool);
    void *buf = dllm_alloc_lines(buf_bytes * (size_t)threads);
    void *map = dllm_map_huge(total);
    if (!buf || !map) {
        free(buf);
        if (map)
            munmap(map, total);
        return dllm_error_set(err, DLLM_ERR_NOMEM,
                              "out of memory for the repacked weights (%.1f GB): close other "
                              "programs or use a smaller model",
                              (double)total / 1e9);
    }
    c->packed = map;
    c->packed_bytes = total;
    uint8_t *dst = map;
    report_repack(cfg, 0, total);
    for (int64_t i = 0; i < c->n_mats && !st; i++) {
        struct matrix *mat = &c->mats[i];
        const size_t bytes = repacked_bytes(c, mat);
        if (bytes == 0)
            continue;
        if (cfg->cancel && atomic_load(cfg->cancel)) {
            st = dllm_error_set(err, DLLM_ERR_CANCELLED, "cancelled while repacking the weights");
            break;
        }
        struct matrix_source src = {.gguf = m->gguf, .data = mat->data};
        const struct dllm_weight_reader reader = {.read = read_matrix, .user = &src, .buf = buf};
        const int e = dllm_kernels_repack_par(c->kernels, c->pool, mat->type, NULL, mat->K, mat->N,
                                              dst, &reader);
        if (e) {
            st = dllm_error_set(err, DLLM_ERR_IO, "cannot read the model file: %s", strerror(e));
            break;
        }
        mat->packed = dst;
        dst += bytes;
        report_repack(cfg, (size_t)(dst - (uint8_t *)map), total);
    }
    free(buf);
    return st;
}

static void cpu_destroy(struct dllm_backend *be)
{
    struct cpu *c = (struct cpu *)be;
    if (!c)
        return;
    if (c->packed)
        munmap(c->packed, c->packed_bytes);
    free(c->mats);
    if (c->arena)
        munmap(c->arena, c->arena_bytes);
    free(c);
}

static enum dllm_status cpu_create(const struct dllm_backend_config *cfg, struct dllm_backend **out,
                                   struct dllm_error *err)
{
    const struct dllm_kernels *kernels;
    enum dllm_status st = dllm_kernels_select(cfg->variant, &kernels, err);
    if (st)
        return st;
    size_t size[N_PARTS];
    const size_t total = arena_bytes(cfg);
    struct cpu *c = calloc(1, sizeof *c);
    if (c && total != SIZE_MAX && part_sizes(cfg, size)) {
        c->arena = dllm_map_huge(total);
        c->arena_bytes = total;
    }
    if (!c || !c->arena) {
        free(c);
        return dllm_error_set(err, DLLM_ERR_NOMEM,
                              "out of memory for a forward pass over %lld tokens",
                              (long long)cfg->max_tokens);
    }
    c->base.ops = &dllm_backend_cpu;
    c->model = cfg->model;
    c->max_tokens = cfg->max_tokens;
    c->kernels = kernels;
    c->ops = dllm_ops_for(kernels);
    c->fp16 = dllm_fp16_for(kernels);
    c->pool = cfg->pool;
    void *parts[N_PARTS];
    char *p = c->arena;
    for (int i = 0; i < N_PARTS; i++) {
        parts[i] = p;
        p += size[i];
    }
    for (int i = 0; i < DLLM_N_BUFS; i++)
        c->buf[i] = parts[i];
    c->own_k = c->buf[DLLM_BUF_K];
    c->own_v = c->buf[DLLM_BUF_V];
    c->scores = parts[SCRATCH_SCORES];
    c->cos = parts[SCRATCH_COS];
    c->sin = parts[SCRATCH_SIN];
    c->act = parts[SCRATCH_ACT];
    c->chunk = parts[SCRATCH_LOGITS];
    c->router = parts[SCRATCH_ROUTER];
    c->route_ids = parts[SCRATCH_ROUTE_IDS];
    c->route_w = parts[SCRATCH_ROUTE_W];
    c->slots = parts[SCRATCH_SLOTS];
    c->first_slot = parts[SCRATCH_FIRST_SLOT];
    c->moe_rows = parts[SCRATCH_MOE_ROWS];
    c->moe_parts = parts[SCRATCH_MOE_PARTS];
    c->moe_in = parts[SCRATCH_MOE_IN];
    c->moe_sum = parts[SCRATCH_MOE_SUM];
    const struct dllm_hparams *hp = &cfg->model->hp;
    dllm_rope_table(hp->rope_base, hp->n_rot, cfg->max_tokens, c->cos, c->sin);
    if ((st = repack_matrices(c, cfg, err))) {
        cpu_destroy(&c->base);
        return st;
    }
    *out = &c->base;
    return DLLM_OK;
}

static const char *cpu_variant(const struct dllm_backend *be)
{
    return ((const struct cpu *)be)->kernels->name;
}

/* The width of a buffer's rows. */
static int64_t buf_cols(const struct cpu *c, enum dllm_buf b)
{
    const struct dllm_hparams *hp = &c->model->hp;
    switch (b) {
    case DLLM_BUF_Q:
    case DLLM_BUF_ATT: return hp->n_head * hp->head_dim;
    case DLLM_BUF_K:
    case DLLM_BUF_V: return hp->n_head_kv * hp->head_dim;
    case DLLM_BUF_GATE:
    case DLLM_BUF_UP: return ffn_width(hp);
    default: return hp->n_embd;
    }
}

/* The model's vector of a layer, or NULL when it has none (biases of LLaDA). */
static const float *vector(const struct cpu *c, int64_t layer, enum dllm_vector v)
{
    const struct dllm_model *m = c->model;
    if (v == DLLM_V_OUTPUT_NORM)
        return m->output_norm;
    const struct dllm_layer *l = &m->layers[layer];
    switch (v) {
    case DLLM_V_ATTN_NORM: return l->attn_norm;
    case DLLM_V_BQ: return l->bq;
    case DLLM_V_BK: return l->bk;
    case DLLM_V_BV: return l->bv;
    case DLLM_V_FFN_NORM: return l->ffn_norm;
    default: return NULL;
    }
}

static enum dllm_status cpu_kv_new(struct dllm_backend *be, int64_t n_tokens,
                                   enum dllm_cache_type type, struct dllm_kv_cache **out,
                                   struct dllm_error *err)
{
    const size_t bytes = dllm_kv_storage_bytes(((const struct cpu *)be)->model, n_tokens, type);
    struct dllm_kv_cache *kv = calloc(1, sizeof *kv);
    if (kv)
        kv->data = dllm_alloc_lines_touched(bytes);
    if (!kv || !kv->data) {
        free(kv);
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory for a K/V cache of %.2f GB",
                              (double)bytes / 1e9);
    }
    kv->be = be;
    kv->n_tokens = n_tokens;
    kv->type = type;
    *out = kv;
    return DLLM_OK;
}

static void cpu_kv_free(struct dllm_kv_cache *kv)
{
    if (!kv)
        return;
    free(kv->data);
    free(kv);
}

void *dllm_backend_cpu_kv_layer(struct dllm_kv_cache *kv, int64_t layer)
{
    return dllm_kv_layer_data(kv, ((const struct cpu *)kv->be)->model, layer);
}

static void cpu_bind_kv(struct dllm_backend *be, struct dllm_kv_cache *kv, int64_t layer)
{
    struct cpu *c = (struct cpu *)be;
    c->buf[DLLM_BUF_K] = c->own_k;
    c->buf[DLLM_BUF_V] = c->own_v;
    c->bound_k = c->bound_v = NULL;
    if (!kv)
        return;
    const size_t n = dllm_kv_layer_floats(c->model, kv->n_tokens);
    if (kv->type == DLLM_CACHE_F32) {
        float *k = dllm_backend_cpu_kv_layer(kv, layer);
        c->buf[DLLM_BUF_K] = k;
        c->buf[DLLM_BUF_V] = k + n;
        return;
    }
    c->bound_k = dllm_backend_cpu_kv_layer(kv, layer);
    c->bound_v = c->bound_k + n;
    c->fp16->to_f32(c->bound_k, (int64_t)n, c->own_k);
    c->fp16->to_f32(c->bound_v, (int64_t)n, c->own_v);
}

/*
 * An op that works row by row, over rows [r0, r1) cut into one run a thread of the pool:
 * body(job, i0, i1) does the rows [i0, i1). Each row's result is the same on any number of
 * threads.
 */
struct rows_job {
    const struct cpu *c;
    void (*body)(const struct rows_job *job, int64_t i0, int64_t i1);
    int64_t r0, r1;
    enum dllm_buf src, dst;
    const float *vec;               /* a norm's weights, a bias */
    const struct dllm_layer *layer; /* qk_norm's */
    const int32_t *ids;             /* embed's token ids */
};

static void rows_item(void *ctx, int64_t item, int thread)
{
    (void)thread;
    const struct rows_job *job = ctx;
    int64_t i0, i1;
    dllm_threadpool_part(job->c->pool, job->r1 - job->r0, (int)item, &i0, &i1);
    if (i0 < i1)
        job->body(job, job->r0 + i0, job->r0 + i1);
}

/*
 * The work items a run over the pool is cut into: two a thread, so that a thread woken late is
 * made up for.
 */
static int64_t pool_items(const struct cpu *c)
{
    return 2 * (int64_t)dllm_threadpool_size(c->pool);
}

/*
 * Runs job over its rows, part t (dllm_threadpool_part) on thread t: the ops that work row by
 * row follow one another (and the products' activation conversion, dllm_kernels_quantize_par,
 * cuts the rows the same way), so each finds the rows the one before wrote in its own core's
 * cache.
 */
static void run_rows(struct rows_job *job)
{
    if (job->r1 > job->r0)
        dllm_threadpool_run_each(job->c->pool, rows_item, job);
}

/* Rounds rows [r0, r1) of a float buffer through binary16, the rounded rows into h as well. */
static void round_rows(const struct cpu *c, float *buf, dllm_fp16 *h, int64_t r0, int64_t r1)
{
    const int64_t w = c->model->hp.n_head_kv * c->model->hp.head_dim;
    c->fp16->from_f32(buf + r0 * w, (r1 - r0) * w, h + r0 * w);
    c->fp16->to_f32(h + r0 * w, (r1 - r0) * w, buf + r0 * w);
}

static void store_kv_rows(const struct rows_job *job, int64_t i0, int64_t i1)
{
    round_rows(job->c, job->c->own_k, job->c->bound_k, i0, i1);
    round_rows(job->c, job->c->own_v, job->c->bound_v, i0, i1);
}

static void cpu_store_kv(struct dllm_backend *be, int64_t r0, int64_t r1)
{
    struct cpu *c = (struct cpu *)be;
    if (!c->bound_k)
        return;
    struct rows_job job = {.c = c, .body = store_kv_rows, .r0 = r0, .r1 = r1};
    run_rows(&job);
}

/* X row i = the embedding of token ids[i], for rows [i0, i1). */
static enum dllm_status embed_rows(const struct cpu *c, const int32_t *ids, int64_t i0, int64_t i1,
                                   struct dllm_error *err)
{
    const struct dllm_model *m = c->model;
    const int64_t d = m->hp.n_embd;
    for (int64_t i = i0; i < i1; i++) {
        enum dllm_status st = dllm_gguf_tensor_decode(m->tok_embd, (int64_t)ids[i] * d, d,
                                                      c->buf[DLLM_BUF_X] + i * d, err);
        if (st)
            return st;
    }
    return DLLM_OK;
}

static void embed_job_rows(const struct rows_job *job, int64_t i0, int64_t i1)
{
    embed_rows(job->c, job->ids, i0, i1, NULL);
}

/*
 * The embeddings of rows [r0, r1) on every thread. The first row is decoded first, alone: a
 * decoding failure depends on the tensor's type only (the ids are in range), so it shows
 * there, with its message, before the other rows are shared out.
 */
static enum dllm_status cpu_embed(struct dllm_backend *be, const int32_t *ids, int64_t r0,
                                  int64_t r1, struct dllm_error *err)
{
    struct cpu *c = (struct cpu *)be;
    enum dllm_status st = embed_rows(c, ids, r0, r0 + 1, err);
    if (st)
        return st;
    struct rows_job job = {.c = c, .body = embed_job_rows, .r0 = r0 + 1, .r1 = r1, .ids = ids};
    run_rows(&job);
    return DLLM_OK;
}

static void rms_norm_rows(const struct rows_job *job, int64_t i0, int64_t i1)
{
    const struct cpu *c = job->c;
    const int64_t n = c->model->hp.n_embd;
    for (int64_t i = i0; i < i1; i++)
        c->ops->rms_norm(c->buf[job->src] + i * n, job->vec, c->model->hp.norm_eps, n,
                         c->buf[job->dst] + i * n);
}

/* Runs body, a norm's row loop, over rows [r0, r1) from src into dst with layer's norm g. */
static void run_norm_rows(struct dllm_backend *be,
                          void (*body)(const struct rows_job *job, int64_t i0, int64_t i1),
                          enum dllm_buf src, int64_t r0, int64_t r1, int64_t layer,
                          enum dllm_vector g, enum dllm_buf dst)
{
    struct cpu *c = (struct cpu *)be;
    struct rows_job job = {.c = c,
                           .body = body,
                           .r0 = r0,
                           .r1 = r1,
                           .src = src,
                           .dst = dst,
                           .vec = vector(c, layer, g)};
    run_rows(&job);
}

static void cpu_rms_norm(struct dllm_backend *be, enum dllm_buf src, int64_t r0, int64_t r1,
                         int64_t layer, enum dllm_vector g, enum dllm_buf dst)
{
    run_norm_rows(be, rms_norm_rows, src, r0, r1, layer, g, dst);
}

static void cpu_gather(struct dllm_backend *be, enum dllm_buf src, const int32_t *rows, int64_t R,
                       enum dllm_buf dst)
{
    struct cpu *c = (struct cpu *)be;
    const int64_t n = buf_cols(c, src);
    for (int64_t i = 0; i < R; i++)
        memcpy(c->buf[dst] + i * n, c->buf[src] + (int64_t)rows[i] * n, (size_t)n * sizeof(float));
}

static void cpu_gather_norm(struct dllm_backend *be, const int32_t *rows, int64_t R)
{
    struct cpu *c = (struct cpu *)be;
    const int64_t n = c->model->hp.n_embd;
    for (int64_t i = 0; i < R; i++)
        c->ops->rms_norm(c->buf[DLLM_BUF_X] + rows[i] * n, c->model->output_norm,
                         c->model->hp.norm_eps, n, c->buf[DLLM_BUF_OUT] + i * n);
}

/*
 * Converts L rows of x for w's type into act (row l is x + rows[l] * K; rows NULL: x's first
 * L), unless same_input says they are the last conversion's rows and it made the same
 * activation format.
 */
static void convert_for(struct cpu *c, const struct matrix *w, const float *x, const int32_t *rows,
                        int64_t L, bool same_input)
{
    if (!same_input || dllm_matmul_act_format(c->act_type) != dllm_matmul_act_format(w->type))
        dllm_kernels_quantize_rows_par(c->kernels, c->pool, w->type, x, w->K, rows, L, c->act);
    c->act_type = w->type;
}

/*
 * y[L, N] = x[L, K] W^T for the matrix at mats[i]: converts x for W's type unless it was
 * converted for the last product already in the same activation format, then multiplies,
 * from W's repacked copy where it has one.
 */
static void product(struct cpu *c, int64_t i, const float *x, int64_t L, bool same_input, float *y,
                    int64_t ldy)
{
    const struct matrix *w = &c->mats[i];
    convert_for(c, w, x, NULL, L, same_input);
    if (w->packed)
        dllm_kernels_rows_packed_par(c->kernels, c->pool, w->type, w->packed, w->K, w->N, c->act, L,
                                     y, ldy);
    else
        dllm_kernels_rows_par(c->kernels, c->pool, w->type, w->data, w->K, w->N, c->act, L, y, ldy);
}

static void cpu_matmul(struct dllm_backend *be, int64_t layer, enum dllm_weight w,
                       enum dllm_buf src, int64_t r0, int64_t r1, bool same_input,
                       enum dllm_buf dst)
{
    struct cpu *c = (struct cpu *)be;
    const int64_t K = buf_cols(c, src), N = buf_cols(c, dst);
    product(c, layer * M_PER_LAYER + w, c->buf[src] + r0 * K, r1 - r0, same_input,
            c->buf[dst] + r0 * N, N);
}

static void add_bias_rows(const struct rows_job *job, int64_t i0, int64_t i1)
{
    const int64_t n = buf_cols(job->c, job->dst);
    for (int64_t i = i0; i < i1; i++)
        job->c->ops->add(job->c->buf[job->dst] + i * n, job->vec, n);
}

static void cpu_add_bias(struct dllm_backend *be, enum dllm_buf buf, int64_t layer,
                         enum dllm_vector b, int64_t r0, int64_t r1)
{
    struct cpu *c = (struct cpu *)be;
    struct rows_job job = {
        .c = c, .body = add_bias_rows, .r0 = r0, .r1 = r1, .dst = buf, .vec = vector(c, layer, b)};
    if (job.vec)
        run_rows(&job);
}

static void rope_rows(const struct rows_job *job, int64_t i0, int64_t i1)
{
    const struct cpu *c = job->c;
    const struct dllm_hparams *hp = &c->model->hp;
    const int64_t dq = hp->n_head * hp->head_dim, dkv = hp->n_head_kv * hp->head_dim;
    const int64_t half = hp->n_rot / 2;
    for (int64_t i = i0; i < i1; i++) {
        c->ops->rope(c->buf[DLLM_BUF_Q] + i * dq, hp->n_head, hp->head_dim, hp->n_rot,
                     hp->rope_mode, c->cos + i * half, c->sin + i * half);
        c->ops->rope(c->buf[DLLM_BUF_K] + i * dkv, hp->n_head_kv, hp->head_dim, hp->n_rot,
                     hp->rope_mode, c->cos + i * half, c->sin + i * half);
    }
}

static void cpu_rope(struct dllm_backend *be, int64_t r0, int64_t r1)
{
    struct rows_job job = {.c = (struct cpu *)be, .body = rope_rows, .r0 = r0, .r1 = r1};
    run_rows(&job);
}

static void qk_norm_rows(const struct rows_job *job, int64_t i0, int64_t i1)
{
    const struct cpu *c = job->c;
    const struct dllm_hparams *hp = &c->model->hp;
    const struct dllm_layer *l = job->layer;
    const int64_t hd = hp->head_dim;
    for (int64_t i = i0; i < i1; i++) {
        float *q = c->buf[DLLM_BUF_Q] + i * hp->n_head * hd;
        float *k = c->buf[DLLM_BUF_K] + i * hp->n_head_kv * hd;
        for (int64_t h = 0; h < hp->n_head; h++)
            c->ops->rms_norm(q + h * hd, l->q_norm, hp->norm_eps, hd, q + h * hd);
        for (int64_t h = 0; h < hp->n_head_kv; h++)
            c->ops->rms_norm(k + h * hd, l->k_norm, hp->norm_eps, hd, k + h * hd);
    }
}

static void cpu_qk_norm(struct dllm_backend *be, int64_t layer, int64_t r0, int64_t r1)
{
    struct cpu *c = (struct cpu *)be;
    struct rows_job job = {
        .c = c, .body = qk_norm_rows, .r0 = r0, .r1 = r1, .layer = &c->model->layers[layer]};
    if (job.layer->q_norm)
        run_rows(&job);
}

struct attention_job {
    struct cpu *c;
    int64_t r0, r1, n_keys;
    int64_t rows, chunks; /* query rows per work item; items per kv head */
};

/* One work item of the attention: one kv head over one chunk of rows, with the thread's scratch. */
static void attention_item(void *ctx, int64_t item, int thread)
{
    const struct attention_job *job = ctx;
    const struct cpu *c = job->c;
    const struct dllm_hparams *hp = &c->model->hp;
    const int64_t g = item / job->chunks, i0 = job->r0 + item % job->chunks * job->rows;
    const int64_t i1 = i0 + job->rows < job->r1 ? i0 + job->rows : job->r1;
    const size_t scratch = (size_t)dllm_ops_attention_scratch(c->max_tokens, hp->head_dim);
    c->ops->attention(c->buf[DLLM_BUF_Q], c->buf[DLLM_BUF_K], c->buf[DLLM_BUF_V], job->n_keys,
                      hp->n_head, hp->n_head_kv, hp->head_dim, 1.0f / sqrtf((float)hp->head_dim),
                      i0, i1, g, g + 1, c->scores + (size_t)thread * scratch, c->buf[DLLM_BUF_ATT]);
}

/*
 * The attention of rows [r0, r1) in work items of one kv head and one chunk of rows: each item
 * copies its head's keys and values once, so the rows are cut into as few chunks (of a multiple
 * of ATTENTION_ROWS) as still give pool_items items.
 */
static void cpu_attention(struct dllm_backend *be, int64_t r0, int64_t r1, int64_t n_keys)
{
    struct cpu *c = (struct cpu *)be;
    const int64_t n = r1 - r0, heads = c->model->hp.n_head_kv, items = pool_items(c);
    if (n <= 0)
        return;
    const int64_t cut = (items + heads - 1) / heads, least = (n + cut - 1) / cut;
    const int64_t rows = (least + ATTENTION_ROWS - 1) / ATTENTION_ROWS * ATTENTION_ROWS;
    struct attention_job job = {c, r0, r1, n_keys, rows, (n + rows - 1) / rows};
    dllm_threadpool_run(c->pool, heads * job.chunks, attention_item, &job);
}

static void swiglu_rows(const struct rows_job *job, int64_t i0, int64_t i1)
{
    const struct cpu *c = job->c;
    const int64_t n = ffn_width(&c->model->hp);
    c->ops->swiglu(c->buf[DLLM_BUF_GATE] + i0 * n, c->buf[DLLM_BUF_UP] + i0 * n, (i1 - i0) * n);
}

static void cpu_swiglu(struct dllm_backend *be, int64_t r0, int64_t r1)
{
    struct rows_job job = {.c = (struct cpu *)be, .body = swiglu_rows, .r0 = r0, .r1 = r1};
    run_rows(&job);
}

/* The routing of a pass's rows [r0, r0 + n), whose router logits are in router. */
struct route_job {
    struct cpu *c;
    int64_t r0, n;
    int32_t *experts; /* the pass's record of each row's experts, or NULL */
    float *margins;   /* and of its routing margin, or NULL */
};

/* Routes thread item's part of the job's rows (dllm_threadpool_part) by their router logits. */
static void route_item(void *ctx, int64_t item, int thread)
{
    (void)thread;
    const struct route_job *job = ctx;
    const struct cpu *c = job->c;
    const struct dllm_hparams *hp = &c->model->hp;
    const int64_t E = hp->n_expert, K = hp->n_expert_used;
    int64_t i0, i1;
    dllm_threadpool_part(c->pool, job->n, (int)item, &i0, &i1);
    for (int64_t i = i0; i < i1; i++) {
        float margin;
        dllm_route(c->router + i * E, E, K, hp->expert_norm, c->route_ids + i * K,
                   c->route_w + i * K, &margin);
        if (job->experts)
            memcpy(job->experts + (job->r0 + i) * K, c->route_ids + i * K,
                   (size_t)K * sizeof *job->experts);
        if (job->margins)
            job->margins[job->r0 + i] = margin;
    }
}

/*
 * Routes XN rows [r0, r1) and groups the (row, slot) pairs by expert: slots[first_slot[e] ..
 * first_slot[e + 1]) hold the pairs, as row * n_used + slot with rows counted from r0, of
 * expert e, in row order.
 */
static void route_rows(struct cpu *c, int64_t layer, int64_t r0, int64_t r1, int32_t *experts,
                       float *margins)
{
    const struct dllm_hparams *hp = &c->model->hp;
    const int64_t n = r1 - r0, E = hp->n_expert, K = hp->n_expert_used;
    product(c, router_index(c, layer), c->buf[DLLM_BUF_XN] + r0 * hp->n_embd, n, false, c->router,
            E);
    struct route_job job = {.c = c, .r0 = r0, .n = n, .experts = experts, .margins = margins};
    dllm_threadpool_run_each(c->pool, route_item, &job);
    for (int64_t e = 0; e <= E; e++)
        c->first_slot[e] = 0;
    for (int64_t i = 0; i < n * K; i++)
        c->first_slot[c->route_ids[i] + 1]++;
    for (int64_t e = 0; e < E; e++)
        c->first_slot[e + 1] += c->first_slot[e];
    /* Each pair goes to its expert's next free place, first_slot[e] counting up as it fills. */
    for (int64_t i = 0; i < n * K; i++)
        c->slots[c->first_slot[c->route_ids[i]]++] = (int32_t)i;
    /* Filled, first_slot[e] is where expert e + 1 starts: shift the starts back by one. */
    for (int64_t e = E; e > 0; e--)
        c->first_slot[e] = c->first_slot[e - 1];
    c->first_slot[0] = 0;
}

/*
 * A group of a layer's experts [e0, e1) whose rows together fit the activation buffers: in
 * the group's order (by expert, then row) its row j is moe_rows[j], an XN row, of the (row,
 * slot) pair slot[j] (route_w's index).
 */
struct expert_group {
    struct cpu *c;
    int64_t layer, e0, e1;
    const int32_t *slot;
    int64_t n, r0; /* its rows; the pass's first XN row */
};

/*
 * The product by weight w of each expert of the group over its rows, y's rows in the group's
 * order, in one run of the pool: x's rows `rows` (NULL: its first n) converted unless
 * same_input finds them converted already; then, if not NULL, called on each expert's block
 * of output columns as it is computed (the experts of a block in order, dllm_kernels_then).
 */
static void experts_product(const struct expert_group *g, enum expert_weight w, const float *x,
                            const int32_t *rows, bool same_input, float *y, int64_t ldy,
                            const struct dllm_kernels_then *then)
{
    struct cpu *c = g->c;
    const struct matrix *m = &c->mats[expert_index(c, g->layer, w, g->e0)];
    convert_for(c, m, x, rows, g->n, same_input);
    int64_t n_parts = 0;
    for (int64_t e = g->e0; e < g->e1; e++) {
        const int64_t row = c->first_slot[e] - c->first_slot[g->e0];
        const int64_t L = c->first_slot[e + 1] - c->first_slot[e];
        const struct matrix *me = &c->mats[expert_index(c, g->layer, w, e)];
        if (L > 0)
            c->moe_parts[n_parts++] = (struct dllm_kernels_part){
                .w = me->packed ? me->packed : me->data, .row = row, .L = L, .y = y + row * ldy};
    }
    dllm_kernels_rows_parts_par(c->kernels, c->pool, m->type, m->packed != NULL, m->K, m->N,
                                c->moe_parts, n_parts, c->act, ldy, then);
}

/*
 * moe_sum's columns [n0, n1) of each row of the group's part-th expert with an output row (its
 * first is moe_parts[part].row in the group's order) += its weight times that output row's:
 * the DOWN product's then, so that each block is added while the thread that computed it
 * holds it in cache.
 */
static void expert_sum_block(void *user, int64_t part, int64_t n0, int64_t n1)
{
    const struct expert_group *g = user;
    const struct cpu *c = g->c;
    const int64_t d = c->model->hp.n_embd, j0 = c->moe_parts[part].row;
    for (int64_t j = j0; j < j0 + c->moe_parts[part].L; j++) {
        const float w = c->route_w[g->slot[j]];
        float *sum = c->moe_sum + (c->moe_rows[j] - g->r0) * d;
        for (int64_t x = n0; x < n1; x++)
            sum[x] += w * c->moe_in[j * d + x];
    }
}

/* moe_sum's rows for XN rows [i0, i1) of the job's [r0, r1) set to 0. */
static void moe_sum_zero_rows(const struct rows_job *job, int64_t i0, int64_t i1)
{
    const int64_t d = job->c->model->hp.n_embd;
    memset(job->c->moe_sum + (i0 - job->r0) * d, 0, (size_t)((i1 - i0) * d) * sizeof(float));
}

/* XN rows [i0, i1) = their moe_sum rows. */
static void moe_sum_copy_rows(const struct rows_job *job, int64_t i0, int64_t i1)
{
    const int64_t d = job->c->model->hp.n_embd;
    memcpy(job->c->buf[DLLM_BUF_XN] + i0 * d, job->c->moe_sum + (i0 - job->r0) * d,
           (size_t)((i1 - i0) * d) * sizeof(float));
}

/*
 * The experts in groups of consecutive experts whose rows fit the activation buffers
 * (max_tokens rows; one expert's never exceed the pass's): for each group, GATE and UP from
 * its experts' matrices (one conversion of the rows, read from XN where they are, for both),
 * SwiGLU, then DOWN into moe_in, each block of it added times its row's weight into moe_sum
 * as it is computed; then XN = moe_sum. Every step runs on the whole pool, all the group's
 * experts in one run, so that an expert with many rows does not hold up the others; each
 * element of the sum adds its experts in the same order (by expert) on any number of threads.
 */
static void cpu_moe(struct dllm_backend *be, int64_t layer, int64_t r0, int64_t r1,
                    int32_t *experts, float *margins)
{
    struct cpu *c = (struct cpu *)be;
    const struct dllm_hparams *hp = &c->model->hp;
    const int64_t d = hp->n_embd, ff = hp->n_ff_exp, K = hp->n_expert_used;
    float *gate = c->buf[DLLM_BUF_GATE], *up = c->buf[DLLM_BUF_UP];
    const float *xn = c->buf[DLLM_BUF_XN];
    route_rows(c, layer, r0, r1, experts, margins);
    struct rows_job sum_rows = {.c = c, .body = moe_sum_zero_rows, .r0 = r0, .r1 = r1};
    run_rows(&sum_rows);
    for (int64_t e0 = 0, e1; e0 < hp->n_expert; e0 = e1) {
        for (e1 = e0 + 1; e1 < hp->n_expert; e1++)
            if (c->first_slot[e1 + 1] - c->first_slot[e0] > c->max_tokens)
                break;
        struct expert_group g = {.c = c,
                                 .layer = layer,
                                 .e0 = e0,
                                 .e1 = e1,
                                 .slot = c->slots + c->first_slot[e0],
                                 .n = c->first_slot[e1] - c->first_slot[e0],
                                 .r0 = r0};
        if (g.n == 0)
            continue;
        for (int64_t j = 0; j < g.n; j++)
            c->moe_rows[j] = (int32_t)(r0 + g.slot[j] / K);
        experts_product(&g, EXPERT_GATE, xn, c->moe_rows, false, gate, ff, NULL);
        experts_product(&g, EXPERT_UP, xn, c->moe_rows, true, up, ff, NULL);
        struct rows_job swiglu = {.c = c, .body = swiglu_rows, .r0 = 0, .r1 = g.n};
        run_rows(&swiglu);
        const struct dllm_kernels_then sum = {.fn = expert_sum_block, .user = &g};
        experts_product(&g, EXPERT_DOWN, gate, NULL, false, c->moe_in, d, &sum);
    }
    sum_rows.body = moe_sum_copy_rows;
    run_rows(&sum_rows);
}

static void add_rows(const struct rows_job *job, int64_t i0, int64_t i1)
{
    const struct cpu *c = job->c;
    const int64_t n = c->model->hp.n_embd;
    c->ops->add(c->buf[DLLM_BUF_X] + i0 * n, c->buf[job->src] + i0 * n, (i1 - i0) * n);
}

static void cpu_add(struct dllm_backend *be, enum dllm_buf src, int64_t r0, int64_t r1)
{
    struct rows_job job = {.c = (struct cpu *)be, .body = add_rows, .r0 = r0, .r1 = r1, .src = src};
    run_rows(&job);
}

/* X += src, then dst = RMSNorm(X) * the job's norm, a row at a time (the row in cache for both). */
static void add_norm_rows(const struct rows_job *job, int64_t i0, int64_t i1)
{
    const struct cpu *c = job->c;
    const int64_t n = c->model->hp.n_embd;
    for (int64_t i = i0; i < i1; i++) {
        float *x = c->buf[DLLM_BUF_X] + i * n;
        c->ops->add(x, c->buf[job->src] + i * n, n);
        c->ops->rms_norm(x, job->vec, c->model->hp.norm_eps, n, c->buf[job->dst] + i * n);
    }
}

static void cpu_add_norm(struct dllm_backend *be, enum dllm_buf src, int64_t r0, int64_t r1,
                         int64_t layer, enum dllm_vector g, enum dllm_buf dst)
{
    run_norm_rows(be, add_norm_rows, src, r0, r1, layer, g, dst);
}

struct stats_job {
    const struct cpu *c;
    const float *logits; /* [R, n_vocab] */
    struct dllm_row_stats *out;
};

/*
 * One row's statistics: argmax, max and runner-up in one pass; then S = sum e^(l - max) and
 * T = sum e^(l - max) l in double (e^x by dllm_rowmath_exp), lse = max + ln S and the entropy
 * lse - T / S, which is -sum p ln p with p = e^(l - lse). A term whose e^(l - max) is 0 adds
 * nothing to T (a -inf logit would make it 0 * -inf, a NaN).
 */
static void stats_row(void *ctx, int64_t r, int thread)
{
    const struct stats_job *job = ctx;
    const int64_t V = job->c->model->hp.n_vocab;
    const float *l = job->logits + r * V;
    int64_t best = 0;
    float second = -INFINITY;
    for (int64_t v = 1; v < V; v++) {
        if (l[v] > l[best]) {
            second = l[best];
            best = v;
        } else if (l[v] > second) {
            second = l[v];
        }
    }
    const double max = l[best];
    double S = 0, T = 0;
    for (int64_t v = 0; v < V; v++) {
        const double e = dllm_rowmath_exp((double)l[v] - max);
        S += e;
        T += e > 0.0 ? e * l[v] : 0.0;
    }
    const double lse = max + dllm_rowmath_log(S);
    job->out[r] = (struct dllm_row_stats){.argmax = (int32_t)best,
                                          .max = l[best],
                                          .second = second,
                                          .lse = lse,
                                          .entropy = lse - T / S};
}

/*
 * The logits of the R rows of OUT into the caller's memory and their statistics from them; with
 * logits NULL, into the backend's chunk buffer OUTPUT_CHUNK rows at a time, each chunk's
 * statistics taken before the next (each row's product and statistics are those of the whole
 * call). Caller's memory off a cache line goes through the chunk buffer too, each chunk copied
 * out: the product's threads write each row's columns side by side, and where a line holds two
 * threads' columns they slow each other (by 12% on a 2-core Zen 5).
 */
static void cpu_output(struct dllm_backend *be, int64_t R, float *logits,
                       struct dllm_row_stats *stats)
{
    struct cpu *c = (struct cpu *)be;
    const int64_t V = c->model->hp.n_vocab, E = c->model->hp.n_embd;
    const int64_t w = c->model->hp.n_layer * M_PER_LAYER;
    if (logits && (uintptr_t)logits % DLLM_LINE == 0) {
        product(c, w, c->buf[DLLM_BUF_OUT], R, false, logits, V);
        struct stats_job job = {c, logits, stats};
        if (stats)
            dllm_threadpool_run(c->pool, R, stats_row, &job);
        return;
    }
    for (int64_t r0 = 0; r0 < R; r0 += OUTPUT_CHUNK) {
        const int64_t n = R - r0 < OUTPUT_CHUNK ? R - r0 : OUTPUT_CHUNK;
        product(c, w, c->buf[DLLM_BUF_OUT] + r0 * E, n, false, c->chunk, V);
        if (stats) {
            struct stats_job job = {c, c->chunk, stats + r0};
            dllm_threadpool_run(c->pool, n, stats_row, &job);
        }
        if (logits)
            memcpy(logits + r0 * V, c->chunk, (size_t)(n * V) * sizeof *logits);
    }
}

/* The CPU's ops run to completion and cannot fail. */
static enum dllm_status cpu_finish(struct dllm_backend *be, struct dllm_error *err)
{
    return DLLM_OK;
}

const struct dllm_backend_ops dllm_backend_cpu = {
    .name = "cpu",
    .host_bytes = cpu_host_bytes,
    .create = cpu_create,
    .destroy = cpu_destroy,
    .variant = cpu_variant,
    .kv_on_host = true,
    .kv_new = cpu_kv_new,
    .kv_free = cpu_kv_free,
    .bind_kv = cpu_bind_kv,
    .store_kv = cpu_store_kv,
    .embed = cpu_embed,
    .rms_norm = cpu_rms_norm,
    .gather = cpu_gather,
    .gather_norm = cpu_gather_norm,
    .matmul = cpu_matmul,
    .add_bias = cpu_add_bias,
    .qk_norm = cpu_qk_norm,
    .rope = cpu_rope,
    .attention = cpu_attention,
    .swiglu = cpu_swiglu,
    .moe = cpu_moe,
    .add = cpu_add,
    .add_norm = cpu_add_norm,
    .output = cpu_output,
    .finish = cpu_finish,
};
