/*
 * The CUDA backend: the forward pass's operations on one NVIDIA GPU, with the kernels of
 * kernels.h and cuBLAS. The weights are uploaded once in their GGUF blocks; before each
 * product the matrix is dequantized to FP16 into one of two scratch buffers (in slices of rows
 * when it is larger, as the output matrix is) on a stream of its own, so that the next slice is
 * dequantized while the last is multiplied, and multiplied with cublasGemmEx, FP16 inputs with
 * FP32 accumulation and output. With gpu_resident the FP16 copies are made once and kept instead.
 * Activations, K/V caches and the logits rows live on the device; only the rows a pass asks
 * for and their statistics are copied back. Every runtime and cuBLAS call goes through
 * call.h; an op that fails keeps the first error, writes NaN where it owed results, and the
 * pass's finish returns the error (as every later pass's embed does). MoE models are refused
 * at create.
 */
#include "config.h"

#include "attention.h"
#include "backend.h"
#include "call.h"
#include "dllm.h"
#include "kernels.h"
#include "probe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The matrices of a layer, in enum dllm_weight's order; then the output matrix. */
#define M_PER_LAYER DLLM_W_OUTPUT

/* Room the CUDA runtime and cuBLAS take beyond the backend's own buffers (workspace, handles). */
#define DEVICE_MARGIN (256u << 20)

/*
 * The FP16 elements of the scratch (two buffers of half as many each, see struct cuda) when no
 * layer matrix is larger; in the host emulation (tests/cuda-emu) a few, so that the tiny test
 * models' matrices are multiplied in slices too, as a real model's larger ones are.
 */
#ifdef DLLM_CUDA_EMU
#define SCRATCH_MIN_ELEMS ((int64_t)64 << 10)
#else
#define SCRATCH_MIN_ELEMS ((int64_t)64 << 20)
#endif

/*
 * The most logits rows the device holds at once: a pass asking for more computes them in groups
 * of this many (each group's product dequantizes the output matrix again), so that a context
 * made for a whole canvas of rows (a chat's) does not hold gigabytes of logits. In the host
 * emulation a few, so that the tests' passes run in groups too.
 */
#ifdef DLLM_CUDA_EMU
#define LOGITS_ROWS_MAX 8
#else
#define LOGITS_ROWS_MAX 256
#endif

/* A matrix [N, K] on the device: its GGUF blocks, or (resident) its FP16 copy. */
struct dmat {
    uint32_t type;
    int64_t K, N;
    size_t row_bytes;   /* bytes of one row's blocks */
    const void *blocks; /* device; NULL in resident mode once converted (but the embedding) */
    uint16_t *f16;      /* device FP16 [N, K] in resident mode, else NULL */
};

/* A layer's vectors on the device (NULL where the model has none). */
struct dvec {
    float *attn_norm, *ffn_norm, *bq, *bk, *bv, *q_norm, *k_norm;
};

struct cuda {
    struct dllm_backend base;
    const struct dllm_model *model;
    int device;
    bool resident;
    int64_t max_tokens, max_rows;
    cudaStream_t stream;
    cublasHandle_t blas;
    void *weights; /* one allocation: the GGUF blocks of every matrix and the embedding */
    void *f16;     /* resident mode: one allocation of every matrix's FP16 copy */
    float *vectors;
    struct dmat *mats;   /* [n_layer * M_PER_LAYER + 1] */
    struct dmat embd;    /* the token embedding's blocks */
    struct dvec *layers; /* [n_layer] */
    float *output_norm;
    float *buf[DLLM_N_BUFS];
    float *own_k, *own_v;
    uint16_t *bound_k, *bound_v; /* a bound float16 cache layer, converted into own_k/v */
    void *arena;                 /* the activations, the scratch and the small arrays */
    /*
     * Default mode: FP16 slices of matrices, scratch_elems long each, used in turn (next). A
     * slice is dequantized on dq_stream once the product that last read its buffer is done
     * (multiplied[b], recorded on stream), and multiplied on stream once it is there
     * (dequantized[b], recorded on dq_stream). In the host emulation, whose streams may not
     * run side by side, dq_stream is stream.
     */
    uint16_t *scratch[2];
    int64_t scratch_elems;
    int next;
    cudaStream_t dq_stream;
    cudaEvent_t dequantized[2], multiplied[2];
    uint16_t *act;                     /* FP16 activations [max_tokens, the widest K] */
    struct dllm_cuda_attention_ws att; /* the attention's scores and operand pointers */
    float *logits;                /* [logits_rows(max_rows), n_vocab]: a group of a pass's rows */
    struct dllm_row_stats *stats; /* [max_rows]: every row's, made as its group is */
    int32_t *ids, *rows, *pos;
    /* A timed pass's laps (cuda_lap): events recorded on the stream, each ending a lap. */
    cudaEvent_t *lap_events;
    enum dllm_phase *lap_phases; /* the phase of the lap each event ends */
    int n_laps, lap_cap;         /* events recorded this pass, events made */
    enum dllm_status status;     /* the first failure, kept: the context is unusable after it */
    struct dllm_error error;     /* its text */
    struct dllm_error op_error;  /* the text of an op's last failed call */
};

/* The model's matrix w of layer il (il ignored for the output). */
static const struct dllm_gguf_tensor *tensor_of(const struct dllm_model *m, int64_t il,
                                                enum dllm_weight w)
{
    if (w == DLLM_W_OUTPUT)
        return m->output;
    const struct dllm_layer *l = &m->layers[il];
    const struct dllm_gguf_tensor *t[M_PER_LAYER] = {
        [DLLM_W_Q] = l->wq,       [DLLM_W_K] = l->wk,        [DLLM_W_V] = l->wv,
        [DLLM_W_O] = l->wo,       [DLLM_W_GATE] = l->w_gate, [DLLM_W_UP] = l->w_up,
        [DLLM_W_DOWN] = l->w_down};
    return t[w];
}

/* The tensor of mats[i]. */
static const struct dllm_gguf_tensor *mat_tensor(const struct dllm_model *m, int64_t i)
{
    return i == m->hp.n_layer * M_PER_LAYER ? m->output
                                            : tensor_of(m, i / M_PER_LAYER, i % M_PER_LAYER);
}

/* Rounds a byte count up to 256 (the runtime's allocation alignment). */
static size_t round_up(size_t n)
{
    return (n + 255) / 256 * 256;
}

/* The sizes of what the backend allocates on the device, in bytes. */
struct plan {
    size_t weights; /* GGUF blocks: the matrices (default mode) and the embedding */
    size_t f16;     /* resident FP16 copies */
    size_t staging; /* resident mode: the largest matrix's blocks while converting */
    size_t vectors; /* floats of the norms and biases */
    size_t arena;   /* activations, scratch, logits, ids */
    int64_t scratch_elems, max_k;
};

/* Whether the output matrix is the token embedding (tied weights): uploaded once. */
static bool tied(const struct dllm_model *m)
{
    return m->output->data == m->tok_embd->data;
}

/* The floats of every layer's vectors and the output norm. */
static size_t vector_floats(const struct dllm_model *m)
{
    const struct dllm_hparams *hp = &m->hp;
    const size_t dq = (size_t)(hp->n_head * hp->head_dim),
                 dkv = (size_t)(hp->n_head_kv * hp->head_dim);
    size_t n = (size_t)hp->n_embd;
    for (int64_t il = 0; il < hp->n_layer; il++) {
        const struct dllm_layer *l = &m->layers[il];
        n += 2 * (size_t)hp->n_embd;
        n += (l->bq ? dq : 0) + (l->bk ? dkv : 0) + (l->bv ? dkv : 0);
        n += l->q_norm ? 2 * (size_t)hp->head_dim : 0;
    }
    return n;
}

/* The logits rows the device holds for a context of up to R rows a pass. */
static int64_t logits_rows(int64_t R)
{
    return R < LOGITS_ROWS_MAX ? R : LOGITS_ROWS_MAX;
}

/* The arena's parts, in floats or their own units, for a config. */
static size_t arena_bytes(const struct dllm_model *m, int64_t L, int64_t R, int64_t scratch_elems,
                          int64_t max_k)
{
    const struct dllm_hparams *hp = &m->hp;
    const size_t dq = (size_t)(hp->n_head * hp->head_dim),
                 dkv = (size_t)(hp->n_head_kv * hp->head_dim);
    const size_t row = 2 * (size_t)hp->n_embd + 2 * dq + 2 * dkv + 2 * (size_t)hp->n_ff;
    const size_t scores = (size_t)dllm_cuda_attention_score_floats(hp->n_head, L, L);
    return round_up((size_t)L * row * sizeof(float)) + round_up(scores * sizeof(float)) +
           round_up((size_t)(DLLM_ATT_PTRS * hp->n_head) * sizeof(void *)) +
           round_up((size_t)R * (size_t)hp->n_embd * sizeof(float)) +
           round_up((size_t)scratch_elems * 2) + round_up((size_t)L * (size_t)max_k * 2) +
           round_up((size_t)logits_rows(R) * (size_t)hp->n_vocab * sizeof(float)) +
           round_up((size_t)R * sizeof(struct dllm_row_stats)) +
           3 * round_up((size_t)L * sizeof(int32_t));
}

/* What the backend allocates for a model, a canvas and a mode. */
static struct plan plan_of(const struct dllm_model *m, int64_t L, int64_t R, bool resident)
{
    struct plan p = {0};
    int64_t largest_layer = 0;
    const int64_t n_mats = m->hp.n_layer * M_PER_LAYER + 1;
    for (int64_t i = 0; i < n_mats; i++) {
        const struct dllm_gguf_tensor *t = mat_tensor(m, i);
        if (!t)
            continue;
        const int64_t elems = t->ne[0] * t->ne[1];
        p.max_k = t->ne[0] > p.max_k ? t->ne[0] : p.max_k;
        if (i < n_mats - 1 && elems > largest_layer)
            largest_layer = elems;
        if (resident) {
            p.f16 += round_up((size_t)elems * 2);
            p.staging = t->size > p.staging ? t->size : p.staging;
        } else if (!(i == n_mats - 1 && tied(m))) {
            p.weights += round_up(t->size);
        }
    }
    p.weights += round_up(m->tok_embd->size);
    p.staging = resident ? round_up(p.staging) : 0;
    p.scratch_elems =
        resident ? 0 : (largest_layer > SCRATCH_MIN_ELEMS ? largest_layer : SCRATCH_MIN_ELEMS);
    p.vectors = round_up(vector_floats(m) * sizeof(float));
    p.arena = arena_bytes(m, L, R, p.scratch_elems, p.max_k);
    return p;
}

/* The device memory a plan takes, the runtime's and cuBLAS's margin included. */
static uint64_t plan_bytes(const struct plan *p)
{
    return (uint64_t)p->weights + p->f16 + p->staging + p->vectors + p->arena + DEVICE_MARGIN;
}

uint64_t dllm_cuda_device_bytes(const struct dllm_model *model, int64_t max_tokens,
                                int64_t max_rows, bool resident)
{
    const struct plan p = plan_of(model, max_tokens, max_rows, resident);
    return plan_bytes(&p);
}

/*
 * Records the first failure of an op (its call's text, which the wrapper left in op_error, kept
 * in error: later failures, as a GPU fault makes every call fail, do not replace it); true
 * while nothing has failed.
 */
static bool ok(struct cuda *c, enum dllm_status st)
{
    if (st && !c->status) {
        c->status = st;
        c->error = c->op_error;
    }
    return !c->status;
}

/* Whether the context has not failed yet. */
static bool live(const struct cuda *c)
{
    return !c->status;
}

/* Refuses MoE models and matrix types the kernels lack, naming the tensor. */
enum dllm_status dllm_cuda_check_model(const struct dllm_model *m, struct dllm_error *err)
{
    if (m->hp.n_expert)
        return dllm_error_set(err, DLLM_ERR_UNSUPPORTED,
                              "%s is a mixture-of-experts model: the CUDA backend runs dense "
                              "models only (LLaDA, Dream)",
                              m->arch);
    const int64_t n_mats = m->hp.n_layer * M_PER_LAYER + 1;
    for (int64_t i = -1; i < n_mats; i++) {
        const struct dllm_gguf_tensor *t = i < 0 ? m->tok_embd : mat_tensor(m, i);
        if (t && !dllm_cuda_type_supported(t->type))
            return dllm_error_set(err, DLLM_ERR_UNSUPPORTED,
                                  "tensor %s is %s: the CUDA backend has no kernels for it",
                                  t->name, dllm_type_name(t->type));
    }
    return DLLM_OK;
}

/* The dequantization's stream (stream itself in the host emulation) and its events. */
static enum dllm_status make_dequant_stream(struct cuda *c, struct dllm_error *err)
{
    enum dllm_status st = DLLM_OK;
#ifdef DLLM_CUDA_EMU
    c->dq_stream = c->stream;
#else
    st = DLLM_CUDA(err, cudaStreamCreateWithFlags(&c->dq_stream, cudaStreamNonBlocking));
#endif
    for (int b = 0; b < 2 && !st; b++)
        if (!(st = DLLM_CUDA(err,
                             cudaEventCreateWithFlags(&c->dequantized[b], cudaEventDisableTiming))))
            st =
                DLLM_CUDA(err, cudaEventCreateWithFlags(&c->multiplied[b], cudaEventDisableTiming));
    return st;
}

static void cuda_destroy(struct dllm_backend *be)
{
    struct cuda *c = (struct cuda *)be;
    if (!c)
        return;
    struct dllm_error ignored;
    DLLM_CUDA(&ignored, cudaSetDevice(c->device));
    if (c->stream)
        DLLM_CUDA(&ignored, cudaStreamSynchronize(c->stream));
    if (c->dq_stream && c->dq_stream != c->stream) {
        DLLM_CUDA(&ignored, cudaStreamSynchronize(c->dq_stream));
        DLLM_CUDA(&ignored, cudaStreamDestroy(c->dq_stream));
    }
    for (int b = 0; b < 2; b++) {
        if (c->dequantized[b])
            DLLM_CUDA(&ignored, cudaEventDestroy(c->dequantized[b]));
        if (c->multiplied[b])
            DLLM_CUDA(&ignored, cudaEventDestroy(c->multiplied[b]));
    }
    if (c->blas)
        DLLM_CUBLAS(&ignored, cublasDestroy(c->blas));
    if (c->stream)
        DLLM_CUDA(&ignored, cudaStreamDestroy(c->stream));
    DLLM_CUDA(&ignored, cudaFree(c->weights));
    DLLM_CUDA(&ignored, cudaFree(c->f16));
    DLLM_CUDA(&ignored, cudaFree(c->vectors));
    DLLM_CUDA(&ignored, cudaFree(c->arena));
    for (int i = 0; i < c->lap_cap; i++)
        DLLM_CUDA(&ignored, cudaEventDestroy(c->lap_events[i]));
    free(c->lap_events);
    free(c->lap_phases);
    free(c->mats);
    free(c->layers);
    free(c);
}

/* Reports the upload's progress in bytes, when asked to. */
static void report(const struct dllm_backend_config *cfg, size_t done, size_t total)
{
    if (!cfg->progress)
        return;
    struct dllm_progress p = {.kind = DLLM_PROGRESS_REPACK,
                              .fraction = total ? (double)done / (double)total : 1.0,
                              .done = (int64_t)done,
                              .total = (int64_t)total};
    cfg->progress(&p, cfg->progress_user);
}

/* Copies n floats of host vector v (or nothing for NULL) to *at, advancing it. */
static float *put_vector(const float *v, size_t n, float **at, cudaStream_t stream,
                         enum dllm_status *st, struct dllm_error *err)
{
    if (!v || *st)
        return NULL;
    float *d = *at;
    *st = DLLM_CUDA(err, cudaMemcpyAsync(d, v, n * sizeof(float), cudaMemcpyHostToDevice, stream));
    *at += n;
    return d;
}

/* Uploads the norm and bias vectors. */
static enum dllm_status upload_vectors(struct cuda *c, struct dllm_error *err)
{
    const struct dllm_model *m = c->model;
    const struct dllm_hparams *hp = &m->hp;
    const size_t d = (size_t)hp->n_embd, dq = (size_t)(hp->n_head * hp->head_dim),
                 dkv = (size_t)(hp->n_head_kv * hp->head_dim), hd = (size_t)hp->head_dim;
    enum dllm_status st =
        DLLM_CUDA(err, cudaMalloc((void **)&c->vectors, vector_floats(m) * sizeof(float)));
    float *at = c->vectors;
    c->output_norm = put_vector(m->output_norm, d, &at, c->stream, &st, err);
    for (int64_t il = 0; il < hp->n_layer && !st; il++) {
        const struct dllm_layer *l = &m->layers[il];
        struct dvec *v = &c->layers[il];
        v->attn_norm = put_vector(l->attn_norm, d, &at, c->stream, &st, err);
        v->ffn_norm = put_vector(l->ffn_norm, d, &at, c->stream, &st, err);
        v->bq = put_vector(l->bq, dq, &at, c->stream, &st, err);
        v->bk = put_vector(l->bk, dkv, &at, c->stream, &st, err);
        v->bv = put_vector(l->bv, dkv, &at, c->stream, &st, err);
        v->q_norm = put_vector(l->q_norm, hd, &at, c->stream, &st, err);
        v->k_norm = put_vector(l->k_norm, hd, &at, c->stream, &st, err);
    }
    return st;
}

/*
 * Uploads the weights: every matrix's GGUF blocks into one allocation (the output once when
 * tied to the embedding), or in resident mode each matrix through a staging buffer into its
 * FP16 copy. The cancel flag is checked before each matrix.
 */
static enum dllm_status upload_weights(struct cuda *c, const struct dllm_backend_config *cfg,
                                       const struct plan *p, struct dllm_error *err)
{
    const struct dllm_model *m = c->model;
    const int64_t n_mats = m->hp.n_layer * M_PER_LAYER + 1;
    const size_t total = p->weights + p->f16;
    size_t done = 0;
    void *staging = NULL;
    enum dllm_status st;
    if ((st = DLLM_CUDA(err, cudaMalloc(&c->weights, p->weights))) ||
        (p->f16 && (st = DLLM_CUDA(err, cudaMalloc(&c->f16, p->f16)))) ||
        (p->staging && (st = DLLM_CUDA(err, cudaMalloc(&staging, p->staging)))))
        goto done;
    uint8_t *w = c->weights, *h = c->f16;
    const struct dllm_gguf_tensor *e = m->tok_embd;
    c->embd = (struct dmat){.type = e->type, .K = e->ne[0], .N = e->ne[1], .blocks = w};
    if ((st = DLLM_CUDA(err,
                        cudaMemcpyAsync(w, e->data, e->size, cudaMemcpyHostToDevice, c->stream))))
        goto done;
    w += round_up(e->size);
    report(cfg, done += e->size, total);
    for (int64_t i = 0; i < n_mats; i++) {
        const struct dllm_gguf_tensor *t = mat_tensor(m, i);
        if (!t)
            continue;
        if (cfg->cancel && atomic_load(cfg->cancel)) {
            st = dllm_error_set(err, DLLM_ERR_CANCELLED, "cancelled while uploading the weights");
            goto done;
        }
        struct dmat *d = &c->mats[i];
        *d = (struct dmat){
            .type = t->type, .K = t->ne[0], .N = t->ne[1], .row_bytes = t->size / (size_t)t->ne[1]};
        if (!c->resident && t->data == e->data) {
            d->blocks = c->embd.blocks;
            continue;
        }
        void *dst = c->resident ? staging : (void *)w;
        if ((st = DLLM_CUDA(
                 err, cudaMemcpyAsync(dst, t->data, t->size, cudaMemcpyHostToDevice, c->stream))))
            goto done;
        if (c->resident) {
            d->f16 = (uint16_t *)h;
            h += round_up((size_t)(d->N * d->K) * 2);
            if ((st = DLLM_CUDA(err, dllm_cuda_dequant_f16(t->type, staging, d->N, d->K, d->f16,
                                                           c->stream))) ||
                (st = DLLM_CUDA(err, cudaStreamSynchronize(c->stream))))
                goto done;
        } else {
            d->blocks = w;
            w += round_up(t->size);
        }
        report(cfg, done += c->resident ? (size_t)(d->N * d->K) * 2 : t->size, total);
    }
done:;
    struct dllm_error ignored;
    DLLM_CUDA(&ignored, cudaFree(staging));
    return st;
}

/* Carves the arena into the activations, the scratch, the logits and the small arrays. */
static enum dllm_status make_arena(struct cuda *c, const struct plan *p, struct dllm_error *err)
{
    const struct dllm_hparams *hp = &c->model->hp;
    const int64_t L = c->max_tokens, R = c->max_rows;
    enum dllm_status st = DLLM_CUDA(err, cudaMalloc(&c->arena, p->arena));
    if (st)
        return st;
    uint8_t *at = c->arena;
#define TAKE(ptr, bytes)                                                                           \
    do {                                                                                           \
        (ptr) = (void *)at;                                                                        \
        at += round_up(bytes);                                                                     \
    } while (0)
    const int64_t dq = hp->n_head * hp->head_dim, dkv = hp->n_head_kv * hp->head_dim;
    const int64_t cols[DLLM_N_BUFS] = {
        [DLLM_BUF_X] = hp->n_embd,  [DLLM_BUF_XN] = hp->n_embd, [DLLM_BUF_Q] = dq,
        [DLLM_BUF_K] = dkv,         [DLLM_BUF_V] = dkv,         [DLLM_BUF_ATT] = dq,
        [DLLM_BUF_GATE] = hp->n_ff, [DLLM_BUF_UP] = hp->n_ff,   [DLLM_BUF_OUT] = 0};
    /* The activations of enum dllm_buf share one part: [L, the sum of their widths]. */
    float *a = (float *)at;
    for (int b = 0; b < DLLM_N_BUFS; b++) {
        c->buf[b] = a;
        a += L * cols[b];
    }
    at += round_up((size_t)(a - (float *)at) * sizeof(float));
    TAKE(c->buf[DLLM_BUF_OUT], (size_t)(R * hp->n_embd) * sizeof(float));
    /* the scratch in two buffers of whole 256-byte units, for the dequantization kernels */
    TAKE(c->scratch[0], (size_t)p->scratch_elems * 2);
    c->scratch_elems = p->scratch_elems / 2 / 128 * 128;
    c->scratch[1] = c->scratch[0] + c->scratch_elems;
    TAKE(c->act, (size_t)(L * p->max_k) * 2);
    c->att.score_floats = dllm_cuda_attention_score_floats(hp->n_head, L, L);
    TAKE(c->att.scores, (size_t)c->att.score_floats * sizeof(float));
    TAKE(c->att.ptrs, (size_t)(DLLM_ATT_PTRS * hp->n_head) * sizeof(void *));
    TAKE(c->logits, (size_t)(logits_rows(R) * hp->n_vocab) * sizeof(float));
    TAKE(c->stats, (size_t)R * sizeof(struct dllm_row_stats));
    TAKE(c->ids, (size_t)L * sizeof(int32_t));
    TAKE(c->rows, (size_t)L * sizeof(int32_t));
    TAKE(c->pos, (size_t)L * sizeof(int32_t));
#undef TAKE
    c->own_k = c->buf[DLLM_BUF_K];
    c->own_v = c->buf[DLLM_BUF_V];
    /* Row r is at position r: RoPE's positions are the row indices. */
    int32_t *pos = malloc((size_t)L * sizeof *pos);
    if (!pos)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < L; i++)
        pos[i] = (int32_t)i;
    st = DLLM_CUDA(err, cudaMemcpyAsync(c->pos, pos, (size_t)L * sizeof *pos,
                                        cudaMemcpyHostToDevice, c->stream));
    if (!st) /* pos is freed next */
        st = DLLM_CUDA(err, cudaStreamSynchronize(c->stream));
    free(pos);
    return st;
}

/*
 * The GPU the config names, checked for the capability and the free memory the plan needs;
 * nothing in a test's dry run (call.h), which has no GPU.
 */
static enum dllm_status check_device(const struct dllm_backend_config *cfg, const struct plan *p,
                                     struct dllm_error *err)
{
    struct dllm_gpu_info gpu;
    if (dllm_cuda_dry())
        return DLLM_OK;
    return dllm_cuda_check_device(cfg->device, plan_bytes(p), 0, &gpu, err);
}

static enum dllm_status cuda_create(const struct dllm_backend_config *cfg,
                                    struct dllm_backend **out, struct dllm_error *err)
{
    const struct dllm_model *m = cfg->model;
    enum dllm_status st = dllm_cuda_check_model(m, err);
    if (st)
        return st;
    const struct plan p = plan_of(m, cfg->max_tokens, cfg->max_rows, cfg->gpu_resident);
    if ((st = check_device(cfg, &p, err)))
        return st;
    struct cuda *c = calloc(1, sizeof *c);
    if (c) {
        c->mats = calloc((size_t)(m->hp.n_layer * M_PER_LAYER + 1), sizeof *c->mats);
        c->layers = calloc((size_t)m->hp.n_layer, sizeof *c->layers);
    }
    if (!c || !c->mats || !c->layers) {
        st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    c->model = m;
    c->device = cfg->device;
    c->resident = cfg->gpu_resident;
    c->max_tokens = cfg->max_tokens;
    c->max_rows = cfg->max_rows;
    if ((st = DLLM_CUDA(err, cudaSetDevice(cfg->device))) ||
        (st = DLLM_CUDA(err, cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking))) ||
        (st = make_dequant_stream(c, err)) || (st = DLLM_CUBLAS(err, cublasCreate(&c->blas))) ||
        (st = DLLM_CUBLAS(err, cublasSetStream(c->blas, c->stream))) ||
        (st = make_arena(c, &p, err)) || (st = upload_vectors(c, err)))
        goto fail;
    report(cfg, 0, p.weights + p.f16);
    if ((st = upload_weights(c, cfg, &p, err)) ||
        (st = DLLM_CUDA(err, cudaStreamSynchronize(c->stream))))
        goto fail;
    c->base.ops = &dllm_backend_cuda;
    *out = &c->base;
    return DLLM_OK;
fail:
    cuda_destroy(c ? &c->base : NULL);
    return st;
}

/* The context's bookkeeping: the weights live on the GPU (the file is read once to upload). */
static size_t cuda_host_bytes(const struct dllm_backend_config *cfg)
{
    return sizeof(struct cuda) +
           (size_t)(cfg->model->hp.n_layer * M_PER_LAYER + 1) * sizeof(struct dmat);
}

static const char *cuda_variant(const struct dllm_backend *be)
{
    return ((const struct cuda *)be)->resident ? "cublas-resident" : "cublas";
}

static enum dllm_status cuda_kv_new(struct dllm_backend *be, int64_t n_tokens,
                                    enum dllm_cache_type type, struct dllm_kv_cache **out,
                                    struct dllm_error *err)
{
    struct dllm_kv_cache *kv = calloc(1, sizeof *kv);
    if (!kv)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    const size_t bytes = dllm_kv_storage_bytes(((const struct cuda *)be)->model, n_tokens, type);
    size_t free_bytes = SIZE_MAX, total_bytes;
    enum dllm_status st = DLLM_CUDA(err, cudaSetDevice(((struct cuda *)be)->device));
    if (!st) /* a dry run (call.h) leaves free_bytes as it was */
        st = DLLM_CUDA(err, cudaMemGetInfo(&free_bytes, &total_bytes));
    if (!st && bytes > free_bytes)
        st = dllm_error_set(err, DLLM_ERR_NOMEM,
                            "a K/V cache of %.2f GB but only %.2f GB of GPU memory is free: use a "
                            "shorter canvas or no cache",
                            (double)bytes / 1e9, (double)free_bytes / 1e9);
    if (!st)
        st = DLLM_CUDA(err, cudaMalloc(&kv->data, bytes));
    if (st) {
        free(kv);
        return st;
    }
    kv->be = be;
    kv->n_tokens = n_tokens;
    kv->type = type;
    *out = kv;
    return DLLM_OK;
}

static void cuda_kv_free(struct dllm_kv_cache *kv)
{
    if (!kv)
        return;
    struct dllm_error ignored;
    DLLM_CUDA(&ignored, cudaSetDevice(((struct cuda *)kv->be)->device));
    DLLM_CUDA(&ignored, cudaFree(kv->data));
    free(kv);
}

/* A float32 cache's layer becomes K and V; a float16 one's is converted into own_k and own_v. */
static void cuda_bind_kv(struct dllm_backend *be, struct dllm_kv_cache *kv, int64_t layer)
{
    struct cuda *c = (struct cuda *)be;
    c->buf[DLLM_BUF_K] = c->own_k;
    c->buf[DLLM_BUF_V] = c->own_v;
    c->bound_k = c->bound_v = NULL;
    if (!kv || !live(c))
        return;
    const size_t n = dllm_kv_layer_floats(c->model, kv->n_tokens);
    if (kv->type == DLLM_CACHE_F32) {
        float *k = dllm_kv_layer_data(kv, c->model, layer);
        c->buf[DLLM_BUF_K] = k;
        c->buf[DLLM_BUF_V] = k + n;
        return;
    }
    c->bound_k = dllm_kv_layer_data(kv, c->model, layer);
    c->bound_v = c->bound_k + n;
    if (ok(c, DLLM_CUDA(&c->op_error,
                        dllm_cuda_f16_to_f32(c->bound_k, (int64_t)n, c->own_k, c->stream))))
        ok(c, DLLM_CUDA(&c->op_error,
                        dllm_cuda_f16_to_f32(c->bound_v, (int64_t)n, c->own_v, c->stream)));
}

/* K and V rows [r0, r1) into the bound float16 layer, and back rounded; nothing otherwise. */
static void cuda_store_kv(struct dllm_backend *be, int64_t r0, int64_t r1)
{
    struct cuda *c = (struct cuda *)be;
    if (!c->bound_k || !live(c))
        return;
    const int64_t w = c->model->hp.n_head_kv * c->model->hp.head_dim, o = r0 * w, n = (r1 - r0) * w;
    float *const f[2] = {c->own_k, c->own_v};
    uint16_t *const h[2] = {c->bound_k, c->bound_v};
    for (int i = 0; i < 2; i++) {
        if (ok(c, DLLM_CUDA(&c->op_error, dllm_cuda_f32_to_f16(f[i] + o, n, h[i] + o, c->stream))))
            ok(c, DLLM_CUDA(&c->op_error, dllm_cuda_f16_to_f32(h[i] + o, n, f[i] + o, c->stream)));
    }
}

/* The width of a buffer's rows. */
static int64_t buf_cols(const struct cuda *c, enum dllm_buf b)
{
    const struct dllm_hparams *hp = &c->model->hp;
    switch (b) {
    case DLLM_BUF_Q:
    case DLLM_BUF_ATT: return hp->n_head * hp->head_dim;
    case DLLM_BUF_K:
    case DLLM_BUF_V: return hp->n_head_kv * hp->head_dim;
    case DLLM_BUF_GATE:
    case DLLM_BUF_UP: return hp->n_ff;
    default: return hp->n_embd;
    }
}

static enum dllm_status cuda_embed(struct dllm_backend *be, const int32_t *ids, int64_t r0,
                                   int64_t r1, struct dllm_error *err)
{
    struct cuda *c = (struct cuda *)be;
    if (c->status) {
        *err = c->error;
        return c->status;
    }
    const int64_t d = c->model->hp.n_embd, n = r1 - r0;
    /* a pass may run on another thread than the context's creator: select the GPU there */
    if (ok(c, DLLM_CUDA(&c->op_error, cudaSetDevice(c->device))) &&
        ok(c, DLLM_CUDA(&c->op_error, cudaMemcpyAsync(c->ids, ids + r0, (size_t)n * sizeof *ids,
                                                      cudaMemcpyHostToDevice, c->stream))))
        ok(c, DLLM_CUDA(&c->op_error, dllm_cuda_get_rows(c->embd.type, c->embd.blocks, d, c->ids, n,
                                                         c->buf[DLLM_BUF_X] + r0 * d, c->stream)));
    if (c->status)
        *err = c->error;
    return c->status;
}

/* The layer's vector v on the device, or NULL. */
static const float *vector(const struct cuda *c, int64_t layer, enum dllm_vector v)
{
    if (v == DLLM_V_OUTPUT_NORM)
        return c->output_norm;
    const struct dvec *l = &c->layers[layer];
    switch (v) {
    case DLLM_V_ATTN_NORM: return l->attn_norm;
    case DLLM_V_BQ: return l->bq;
    case DLLM_V_BK: return l->bk;
    case DLLM_V_BV: return l->bv;
    case DLLM_V_FFN_NORM: return l->ffn_norm;
    default: return NULL;
    }
}

static void cuda_rms_norm(struct dllm_backend *be, enum dllm_buf src, int64_t r0, int64_t r1,
                          int64_t layer, enum dllm_vector g, enum dllm_buf dst)
{
    struct cuda *c = (struct cuda *)be;
    const int64_t n = c->model->hp.n_embd;
    if (live(c))
        ok(c, DLLM_CUDA(&c->op_error, dllm_cuda_rms_norm(c->buf[src] + r0 * n, vector(c, layer, g),
                                                         r1 - r0, n, c->model->hp.norm_eps,
                                                         c->buf[dst] + r0 * n, c->stream)));
}

/* Rows rows[0 .. R) of buffer src into rows 0 .. R of dst, one device copy a row. */
static void cuda_gather(struct dllm_backend *be, enum dllm_buf src, const int32_t *rows, int64_t R,
                        enum dllm_buf dst)
{
    struct cuda *c = (struct cuda *)be;
    const int64_t n = buf_cols(c, src);
    for (int64_t i = 0; i < R && live(c); i++)
        ok(c, DLLM_CUDA(&c->op_error,
                        cudaMemcpyAsync(c->buf[dst] + i * n, c->buf[src] + (int64_t)rows[i] * n,
                                        (size_t)n * sizeof(float), cudaMemcpyDeviceToDevice,
                                        c->stream)));
}

static void cuda_gather_norm(struct dllm_backend *be, const int32_t *rows, int64_t R)
{
    struct cuda *c = (struct cuda *)be;
    const int64_t n = c->model->hp.n_embd;
    float *out = c->buf[DLLM_BUF_OUT];
    cuda_gather(be, DLLM_BUF_X, rows, R, DLLM_BUF_OUT);
    if (live(c))
        ok(c, DLLM_CUDA(&c->op_error, dllm_cuda_rms_norm(out, c->output_norm, R, n,
                                                         c->model->hp.norm_eps, out, c->stream)));
}

/*
 * Dequantizes rows [n0, n0 + n) of w into scratch buffer b on dq_stream, once the product that
 * last read that buffer is done, and has stream wait for it; the buffer, or NULL after a failure.
 */
static const uint16_t *dequant_slice(struct cuda *c, const struct dmat *w, int64_t n0, int64_t n,
                                     int b)
{
    const uint8_t *blocks = (const uint8_t *)w->blocks + (size_t)n0 * w->row_bytes;
    if (!ok(c, DLLM_CUDA(&c->op_error, cudaStreamWaitEvent(c->dq_stream, c->multiplied[b], 0))) ||
        !ok(c, DLLM_CUDA(&c->op_error, dllm_cuda_dequant_f16(w->type, blocks, n, w->K,
                                                             c->scratch[b], c->dq_stream))) ||
        !ok(c, DLLM_CUDA(&c->op_error, cudaEventRecord(c->dequantized[b], c->dq_stream))) ||
        !ok(c, DLLM_CUDA(&c->op_error, cudaStreamWaitEvent(c->stream, c->dequantized[b], 0))))
        return NULL;
    return c->scratch[b];
}

/*
 * y[L, N] (row stride ldy) = x[L, K] W^T for matrix w: x converted to FP16 unless same_input,
 * then W's rows in slices that fit a scratch buffer (all of them at once in resident mode),
 * each slice a cublasGemmEx into its columns of y, after which its buffer is free again.
 */
static void product(struct cuda *c, const struct dmat *w, const float *x, int64_t L,
                    bool same_input, float *y, int64_t ldy)
{
    if (!same_input &&
        !ok(c, DLLM_CUDA(&c->op_error, dllm_cuda_f32_to_f16_sat(x, L * w->K, c->act, c->stream))))
        return;
    const float alpha = 1.0f, beta = 0.0f;
    const int64_t slice = w->f16 ? w->N : c->scratch_elems / w->K;
    for (int64_t n0 = 0; n0 < w->N && live(c); n0 += slice) {
        const int64_t n = w->N - n0 < slice ? w->N - n0 : slice;
        const int b = c->next;
        c->next ^= w->f16 ? 0 : 1;
        const uint16_t *a = w->f16 ? w->f16 : dequant_slice(c, w, n0, n, b);
        if (!a ||
            !ok(c, DLLM_CUBLAS(&c->op_error,
                               cublasGemmEx(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)n, (int)L,
                                            (int)w->K, &alpha, a, CUDA_R_16F, (int)w->K, c->act,
                                            CUDA_R_16F, (int)w->K, &beta, y + n0, CUDA_R_32F,
                                            (int)ldy, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT))))
            return;
        if (!w->f16)
            ok(c, DLLM_CUDA(&c->op_error, cudaEventRecord(c->multiplied[b], c->stream)));
    }
}

static void cuda_matmul(struct dllm_backend *be, int64_t layer, enum dllm_weight w,
                        enum dllm_buf src, int64_t r0, int64_t r1, bool same_input,
                        enum dllm_buf dst)
{
    struct cuda *c = (struct cuda *)be;
    const int64_t K = buf_cols(c, src), N = buf_cols(c, dst);
    if (live(c))
        product(c, &c->mats[layer * M_PER_LAYER + w], c->buf[src] + r0 * K, r1 - r0, same_input,
                c->buf[dst] + r0 * N, N);
}

static void cuda_add_bias(struct dllm_backend *be, enum dllm_buf buf, int64_t layer,
                          enum dllm_vector b, int64_t r0, int64_t r1)
{
    struct cuda *c = (struct cuda *)be;
    const float *v = vector(c, layer, b);
    const int64_t n = buf_cols(c, buf);
    if (v && live(c))
        ok(c, DLLM_CUDA(&c->op_error,
                        dllm_cuda_add_bias(c->buf[buf] + r0 * n, v, r1 - r0, n, c->stream)));
}

static void cuda_qk_norm(struct dllm_backend *be, int64_t layer, int64_t r0, int64_t r1)
{
    struct cuda *c = (struct cuda *)be;
    const struct dllm_hparams *hp = &c->model->hp;
    const struct dvec *l = &c->layers[layer];
    const int64_t hd = hp->head_dim, dq = hp->n_head * hd, dkv = hp->n_head_kv * hd;
    if (!l->q_norm || !live(c))
        return;
    float *q = c->buf[DLLM_BUF_Q] + r0 * dq, *k = c->buf[DLLM_BUF_K] + r0 * dkv;
    if (ok(c, DLLM_CUDA(&c->op_error, dllm_cuda_rms_norm(q, l->q_norm, (r1 - r0) * hp->n_head, hd,
                                                         hp->norm_eps, q, c->stream))))
        ok(c, DLLM_CUDA(&c->op_error, dllm_cuda_rms_norm(k, l->k_norm, (r1 - r0) * hp->n_head_kv,
                                                         hd, hp->norm_eps, k, c->stream)));
}

static void cuda_rope(struct dllm_backend *be, int64_t r0, int64_t r1)
{
    struct cuda *c = (struct cuda *)be;
    const struct dllm_hparams *hp = &c->model->hp;
    const int64_t dq = hp->n_head * hp->head_dim, dkv = hp->n_head_kv * hp->head_dim;
    const bool neox = hp->rope_mode == DLLM_ROPE_NEOX;
    if (live(c) &&
        ok(c, DLLM_CUDA(&c->op_error, dllm_cuda_rope(c->buf[DLLM_BUF_Q] + r0 * dq, r1 - r0,
                                                     hp->n_head, hp->head_dim, hp->n_rot,
                                                     c->pos + r0, hp->rope_base, neox, c->stream))))
        ok(c, DLLM_CUDA(&c->op_error, dllm_cuda_rope(c->buf[DLLM_BUF_K] + r0 * dkv, r1 - r0,
                                                     hp->n_head_kv, hp->head_dim, hp->n_rot,
                                                     c->pos + r0, hp->rope_base, neox, c->stream)));
}

static void cuda_attention(struct dllm_backend *be, int64_t r0, int64_t r1, int64_t n_keys)
{
    struct cuda *c = (struct cuda *)be;
    const struct dllm_hparams *hp = &c->model->hp;
    const struct dllm_cuda_heads heads = {hp->n_head, hp->n_head_kv, hp->head_dim};
    const int64_t dq = hp->n_head * hp->head_dim;
    if (live(c))
        ok(c, dllm_cuda_attention(c->blas, c->stream, &c->att, &heads, c->buf[DLLM_BUF_Q] + r0 * dq,
                                  c->buf[DLLM_BUF_K], c->buf[DLLM_BUF_V],
                                  c->buf[DLLM_BUF_ATT] + r0 * dq, r1 - r0, n_keys,
                                  1.0f / sqrtf((float)hp->head_dim), &c->op_error));
}

static void cuda_swiglu(struct dllm_backend *be, int64_t r0, int64_t r1)
{
    struct cuda *c = (struct cuda *)be;
    const int64_t n = c->model->hp.n_ff;
    if (live(c))
        ok(c, DLLM_CUDA(&c->op_error,
                        dllm_cuda_swiglu(c->buf[DLLM_BUF_GATE] + r0 * n,
                                         c->buf[DLLM_BUF_UP] + r0 * n, (r1 - r0) * n, c->stream)));
}

static void cuda_add(struct dllm_backend *be, enum dllm_buf src, int64_t r0, int64_t r1)
{
    struct cuda *c = (struct cuda *)be;
    const int64_t n = c->model->hp.n_embd;
    if (live(c))
        ok(c,
           DLLM_CUDA(&c->op_error, dllm_cuda_add(c->buf[DLLM_BUF_X] + r0 * n, c->buf[src] + r0 * n,
                                                 (r1 - r0) * n, c->stream)));
}

static void cuda_add_norm(struct dllm_backend *be, enum dllm_buf src, int64_t r0, int64_t r1,
                          int64_t layer, enum dllm_vector g, enum dllm_buf dst)
{
    struct cuda *c = (struct cuda *)be;
    const int64_t n = c->model->hp.n_embd;
    if (live(c))
        ok(c, DLLM_CUDA(&c->op_error,
                        dllm_cuda_add_rms_norm(
                            c->buf[DLLM_BUF_X] + r0 * n, c->buf[src] + r0 * n, vector(c, layer, g),
                            r1 - r0, n, c->model->hp.norm_eps, c->buf[dst] + r0 * n, c->stream)));
}

/*
 * The logits of OUT's R rows in groups of at most logits_rows(max_rows): each group's product,
 * with stats its rows' statistics, with logits its rows copied out; then the statistics copied
 * out at once.
 */
static void cuda_output(struct dllm_backend *be, int64_t R, float *logits,
                        struct dllm_row_stats *stats)
{
    struct cuda *c = (struct cuda *)be;
    const int64_t V = c->model->hp.n_vocab, K = c->model->hp.n_embd;
    const int64_t group = logits_rows(c->max_rows);
    for (int64_t r0 = 0; r0 < R && live(c); r0 += group) {
        const int64_t n = R - r0 < group ? R - r0 : group;
        product(c, &c->mats[c->model->hp.n_layer * M_PER_LAYER], c->buf[DLLM_BUF_OUT] + r0 * K, n,
                false, c->logits, V);
        if (stats && live(c))
            ok(c, DLLM_CUDA(&c->op_error,
                            dllm_cuda_row_stats(c->logits, n, V, c->stats + r0, c->stream)));
        if (logits && live(c))
            ok(c, DLLM_CUDA(&c->op_error, cudaMemcpyAsync(logits + r0 * V, c->logits,
                                                          (size_t)(n * V) * sizeof(float),
                                                          cudaMemcpyDeviceToHost, c->stream)));
    }
    if (stats && live(c))
        ok(c, DLLM_CUDA(&c->op_error, cudaMemcpyAsync(stats, c->stats, (size_t)R * sizeof *stats,
                                                      cudaMemcpyDeviceToHost, c->stream)));
    if (live(c))
        ok(c, DLLM_CUDA(&c->op_error, cudaStreamSynchronize(c->stream)));
    if (logits && c->status)
        for (int64_t i = 0; i < R * V; i++)
            logits[i] = NAN;
    if (stats && c->status)
        for (int64_t i = 0; i < R; i++)
            stats[i] = (struct dllm_row_stats){
                .argmax = -1, .max = NAN, .second = NAN, .lse = NAN, .entropy = NAN};
}

/*
 * The pass's end: a launch or an asynchronous failure the GPU has not reported yet (a pass
 * without rows has no synchronisation of its own) surfaces at the stream's synchronisation.
 */
static enum dllm_status cuda_finish(struct dllm_backend *be, struct dllm_error *err)
{
    struct cuda *c = (struct cuda *)be;
    if (live(c))
        ok(c, DLLM_CUDA(&c->op_error, cudaStreamSynchronize(c->stream)));
    if (c->status)
        *err = c->error;
    return c->status;
}

/*
 * Makes more lap events (twice as many, 64 at first) on the context's GPU, whatever GPU the
 * calling thread had; false when that failed (kept by ok).
 */
static bool more_laps(struct cuda *c)
{
    const int cap = c->lap_cap ? 2 * c->lap_cap : 64;
    if (!ok(c, DLLM_CUDA(&c->op_error, cudaSetDevice(c->device))))
        return false;
    cudaEvent_t *events = realloc(c->lap_events, (size_t)cap * sizeof *events);
    if (events)
        c->lap_events = events;
    enum dllm_phase *phases = events ? realloc(c->lap_phases, (size_t)cap * sizeof *phases) : NULL;
    if (!phases)
        return ok(c, dllm_error_set(&c->op_error, DLLM_ERR_NOMEM, "out of memory"));
    c->lap_phases = phases;
    while (c->lap_cap < cap &&
           ok(c, DLLM_CUDA(&c->op_error, cudaEventCreate(&c->lap_events[c->lap_cap]))))
        c->lap_cap++;
    return live(c);
}

/*
 * Ends a lap in phase p where the stream's work now ends: an event recorded after it, whose
 * time cuda_phase_ms reads once the pass is done.
 */
static void cuda_lap(struct dllm_backend *be, enum dllm_phase p)
{
    struct cuda *c = (struct cuda *)be;
    if (!live(c) || (c->n_laps == c->lap_cap && !more_laps(c)))
        return;
    c->lap_phases[c->n_laps] = p;
    if (ok(c, DLLM_CUDA(&c->op_error, cudaEventRecord(c->lap_events[c->n_laps], c->stream))))
        c->n_laps++;
}

/*
 * Adds each lap's time, between its event and the one before, to its phase; forgets the laps.
 * Nothing when the pass failed, or when the runtime cannot time a lap (the phases are then
 * left at 0: a pass that worked is not failed for its timing).
 */
static void cuda_phase_ms(struct dllm_backend *be, double *ms)
{
    struct cuda *c = (struct cuda *)be;
    struct dllm_error ignored;
    double got[DLLM_N_PHASES] = {0};
    bool timed = live(c);
    for (int i = 1; i < c->n_laps && timed; i++) {
        float t = 0.0f;
        if (c->lap_phases[i] == DLLM_PHASE_NONE)
            continue;
        timed = DLLM_CUDA(&ignored, cudaEventElapsedTime(&t, c->lap_events[i - 1],
                                                         c->lap_events[i])) == DLLM_OK;
        got[c->lap_phases[i]] += t;
    }
    for (int p = 0; p < DLLM_N_PHASES && timed; p++)
        ms[p] += got[p];
    c->n_laps = 0;
}

/* MoE models are refused at create, so the graph never routes on this backend. */
const struct dllm_backend_ops dllm_backend_cuda = {
    .name = "cuda",
    .host_bytes = cuda_host_bytes,
    .create = cuda_create,
    .destroy = cuda_destroy,
    .variant = cuda_variant,
    .kv_on_host = false,
    .kv_new = cuda_kv_new,
    .kv_free = cuda_kv_free,
    .bind_kv = cuda_bind_kv,
    .store_kv = cuda_store_kv,
    .embed = cuda_embed,
    .rms_norm = cuda_rms_norm,
    .gather = cuda_gather,
    .gather_norm = cuda_gather_norm,
    .matmul = cuda_matmul,
    .add_bias = cuda_add_bias,
    .qk_norm = cuda_qk_norm,
    .rope = cuda_rope,
    .attention = cuda_attention,
    .swiglu = cuda_swiglu,
    .moe = NULL,
    .add = cuda_add,
    .add_norm = cuda_add_norm,
    .output = cuda_output,
    .finish = cuda_finish,
    .lap = cuda_lap,
    .phase_ms = cuda_phase_ms,
};
