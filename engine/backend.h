/*
 * The seam between the forward pass's graph (forward.c) and the hardware that runs it. A
 * backend prepares a model's weights its own way (the CPU backends repack K-quant matrices
 * for their kernels) and allocates the activation buffers of a pass; the graph names them
 * only by enum dllm_buf and never touches their memory. Only the logits rows a pass asks for,
 * or only their statistics, leave a backend, into the caller's memory. A new backend adds a
 * struct dllm_backend_ops and an entry in backend.c's table; forward.c does not change.
 */
#ifndef DLLM_BACKEND_H
#define DLLM_BACKEND_H

#include "dllm.h"
#include "model.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The activation buffers of a pass, each [max_tokens rows] wide as the comment says. */
enum dllm_buf {
    DLLM_BUF_X,    /* [L, n_embd] the residual stream */
    DLLM_BUF_XN,   /* [L, n_embd] a block's normed input, then its projected output */
    DLLM_BUF_Q,    /* [L, n_head * head_dim] */
    DLLM_BUF_K,    /* [L, n_head_kv * head_dim] */
    DLLM_BUF_V,    /* [L, n_head_kv * head_dim] */
    DLLM_BUF_ATT,  /* [L, n_head * head_dim] attention output, heads side by side */
    DLLM_BUF_GATE, /* [L, n_ff] gate projection, then SwiGLU (MoE: n_ff_exp wide) */
    DLLM_BUF_UP,   /* [L, n_ff] (MoE: n_ff_exp wide) */
    DLLM_BUF_OUT,  /* [max_rows, n_embd] the final-normed rows to project to logits */
    DLLM_N_BUFS
};

/* The matrices of a layer; DLLM_W_OUTPUT is the output projection (layer ignored). */
enum dllm_weight {
    DLLM_W_Q,
    DLLM_W_K,
    DLLM_W_V,
    DLLM_W_O,
    DLLM_W_GATE,
    DLLM_W_UP,
    DLLM_W_DOWN,
    DLLM_W_OUTPUT
};

/* The vectors of a layer; DLLM_V_OUTPUT_NORM is the final norm's (layer ignored). */
enum dllm_vector {
    DLLM_V_ATTN_NORM,
    DLLM_V_BQ, /* biases: absent (the op does nothing) unless the model has them */
    DLLM_V_BK,
    DLLM_V_BV,
    DLLM_V_FFN_NORM,
    DLLM_V_OUTPUT_NORM
};

/* What a backend is created for. */
struct dllm_backend_config {
    const struct dllm_model *model;
    int64_t max_tokens, max_rows;
    struct dllm_threadpool *pool; /* the CPU threads it may use; not owned */
    const char *variant;          /* the backend's own variant name, or NULL for its best */
    dllm_progress_fn progress;    /* DLLM_PROGRESS_REPACK while preparing the weights */
    void *progress_user;
    const atomic_bool *cancel; /* checked while preparing the weights */
    int device;                /* the CUDA backend's GPU */
    bool gpu_resident;         /* the CUDA backend keeps FP16 copies of the matrices */
};

struct dllm_backend;
struct dllm_kv_cache;

/* The phases a timed pass's time is split into (struct dllm_pass_phases), and none. */
enum dllm_phase {
    DLLM_PHASE_NONE = -1,
    DLLM_PHASE_GEMM,
    DLLM_PHASE_ATTENTION,
    DLLM_PHASE_NORMS_ROPE,
    DLLM_PHASE_OUTPUT,
    DLLM_N_PHASES
};

/*
 * A backend's operations. Rows are canvas positions: an op on [r0, r1) reads and writes rows
 * r0 .. r1-1 of its buffers, so a pass may compute a window of the canvas and leave the rest.
 * DLLM_BUF_K and DLLM_BUF_V are the K/V storage bind_kv names: the backend's own buffers, or a
 * layer of a K/V cache that outlives the pass (a float16 cache's layer converted into the own
 * buffers, store_kv writing the computed rows back). Ops run on the calling thread (using the
 * pool as they like) and return nothing but embed's status: a backend whose ops can fail (a
 * GPU's) keeps the first failure, does nothing after it, and returns it from finish, which the
 * graph calls at the end of every pass.
 */
struct dllm_backend_ops {
    const char *name; /* "cpu" */
    /*
     * Bytes of host memory the backend keeps for a config (the memory check): the weights when
     * they stay in host memory, and the backend's buffers.
     */
    size_t (*host_bytes)(const struct dllm_backend_config *cfg);
    /* Prepares the weights and allocates the buffers; DLLM_ERR_CANCELLED leaves nothing. */
    enum dllm_status (*create)(const struct dllm_backend_config *cfg, struct dllm_backend **out,
                               struct dllm_error *err);
    void (*destroy)(struct dllm_backend *be);
    /* The variant it runs ("avx512", ...). */
    const char *(*variant)(const struct dllm_backend *be);
    /*
     * K/V storage of a type for every layer and n_tokens positions (dllm_kv_storage_bytes of
     * them, on every backend). kv_on_host: the storage is host memory, which
     * dllm_kv_cache_new checks against MemAvailable; a backend whose storage is a device's
     * checks that itself in kv_new.
     */
    bool kv_on_host;
    enum dllm_status (*kv_new)(struct dllm_backend *be, int64_t n_tokens, enum dllm_cache_type type,
                               struct dllm_kv_cache **out, struct dllm_error *err);
    void (*kv_free)(struct dllm_kv_cache *kv);
    /*
     * From now on DLLM_BUF_K and DLLM_BUF_V hold layer `layer` of kv (NULL: the own buffers
     * and nothing else): a float32 cache's layer itself; a float16 cache's layer converted to
     * float32 into the own buffers, which store_kv writes back.
     */
    void (*bind_kv)(struct dllm_backend *be, struct dllm_kv_cache *kv, int64_t layer);
    /*
     * K and V rows [r0, r1), just computed, as the bound storage keeps them: into a float16
     * cache rounded to binary16, and rounded the same way in DLLM_BUF_K and DLLM_BUF_V, which
     * the attention reads. Nothing for float32 storage or the own buffers.
     */
    void (*store_kv)(struct dllm_backend *be, int64_t r0, int64_t r1);
    /* X = the embedding rows of ids[r0 .. r1-1]. */
    enum dllm_status (*embed)(struct dllm_backend *be, const int32_t *ids, int64_t r0, int64_t r1,
                              struct dllm_error *err);
    /* dst = RMSNorm(src) * g, row by row over [r0, r1). */
    void (*rms_norm)(struct dllm_backend *be, enum dllm_buf src, int64_t r0, int64_t r1,
                     int64_t layer, enum dllm_vector g, enum dllm_buf dst);
    /*
     * dst row i = src row rows[i], for i < R: two distinct buffers of the same width. NULL in
     * a backend without it (the forward pass then computes the last layer for every row).
     */
    void (*gather)(struct dllm_backend *be, enum dllm_buf src, const int32_t *rows, int64_t R,
                   enum dllm_buf dst);
    /* OUT row i = RMSNorm(X row rows[i]) * the output norm, for i < R. */
    void (*gather_norm)(struct dllm_backend *be, const int32_t *rows, int64_t R);
    /*
     * dst[r0..r1, N] = src[r0..r1, K] W^T for the layer's matrix W [N, K]. same_input: src is
     * the input of the product just done, over the same rows and unchanged since, so a
     * conversion of it may be reused.
     */
    void (*matmul)(struct dllm_backend *be, int64_t layer, enum dllm_weight w, enum dllm_buf src,
                   int64_t r0, int64_t r1, bool same_input, enum dllm_buf dst);
    /* buf rows [r0, r1) += b; nothing when the model has no such bias. */
    void (*add_bias)(struct dllm_backend *be, enum dllm_buf buf, int64_t layer, enum dllm_vector b,
                     int64_t r0, int64_t r1);
    /* Q and K rows [r0, r1) head by head = RMSNorm * the layer's Q and K norms; nothing when
     * the model has none. */
    void (*qk_norm)(struct dllm_backend *be, int64_t layer, int64_t r0, int64_t r1);
    /* RoPE of Q and K rows [r0, r1), each at its own position, in place. */
    void (*rope)(struct dllm_backend *be, int64_t r0, int64_t r1);
    /* ATT rows [r0, r1) = bidirectional attention of those Q rows over K/V rows [0, n_keys). */
    void (*attention)(struct dllm_backend *be, int64_t r0, int64_t r1, int64_t n_keys);
    /* GATE = SiLU(GATE) * UP over rows [r0, r1). */
    void (*swiglu)(struct dllm_backend *be, int64_t r0, int64_t r1);
    /*
     * A MoE layer's FFN over XN rows [r0, r1), in place: each row routed by the layer's router
     * to its n_expert_used experts, XN = the weighted sum of their SwiGLU FFNs. experts
     * [n_tokens, n_used] and margins [n_tokens], when not NULL, receive each row's routing
     * (dllm_pass.experts and expert_margins of the layer).
     */
    void (*moe)(struct dllm_backend *be, int64_t layer, int64_t r0, int64_t r1, int32_t *experts,
                float *margins);
    /* X += src over rows [r0, r1). */
    void (*add)(struct dllm_backend *be, enum dllm_buf src, int64_t r0, int64_t r1);
    /*
     * X += src, then dst = RMSNorm(X) * g, row by row over [r0, r1) (dst may be src): add and
     * rms_norm in one op, so that each row is read once for both.
     */
    void (*add_norm)(struct dllm_backend *be, enum dllm_buf src, int64_t r0, int64_t r1,
                     int64_t layer, enum dllm_vector g, enum dllm_buf dst);
    /*
     * logits[R, n_vocab] = OUT[R, n_embd] times the output matrix, and stats[0 .. R-1] their
     * statistics, in the caller's memory; either may be NULL (not both): without logits the
     * rows stay in the backend, which may compute them a group at a time.
     */
    void (*output)(struct dllm_backend *be, int64_t R, float *logits, struct dllm_row_stats *stats);
    /*
     * Waits until the pass's work is done; the first failure of an op since create (DLLM_OK
     * when none), its text in err. After a failure the context refuses every pass (embed
     * returns it) and is only good for destroy.
     */
    enum dllm_status (*finish)(struct dllm_backend *be, struct dllm_error *err);
    /*
     * A timed pass's clock, for a backend whose ops return before their work is done (a GPU's:
     * the host's clock would time their launch); NULL: the graph times the ops on the host.
     * lap ends a lap at this point of the backend's work: the time since the last one counts
     * in phase p (in none for DLLM_PHASE_NONE, which also starts the pass's first lap).
     * phase_ms, after finish, adds each phase's laps to ms[DLLM_N_PHASES] and forgets them.
     */
    void (*lap)(struct dllm_backend *be, enum dllm_phase p);
    void (*phase_ms)(struct dllm_backend *be, double *ms);
};

/*
 * A K/V cache: the backend that made it, its length, its element type and its storage (host or
 * device memory, the backend's): per layer, K [n_tokens, n_head_kv * head_dim], then V.
 */
struct dllm_kv_cache {
    struct dllm_backend *be;
    int64_t n_tokens;
    enum dllm_cache_type type;
    void *data;
};

/* Every backend starts with its ops. */
struct dllm_backend {
    const struct dllm_backend_ops *ops;
};

/* The backend named name ("cpu"; NULL is "cpu"), or DLLM_ERR_ARG naming the known ones. */
enum dllm_status dllm_backend_find(const char *name, const struct dllm_backend_ops **out,
                                   struct dllm_error *err);

/* Floats of one layer's K (or V) for n_tokens positions of the model. */
size_t dllm_kv_layer_floats(const struct dllm_model *model, int64_t n_tokens);

/* Bytes of one stored K or V element of a cache type (2 or 4). */
size_t dllm_kv_elem_bytes(enum dllm_cache_type type);

/* Where layer `layer`'s K starts in the cache's storage (its V follows, as many elements on). */
void *dllm_kv_layer_data(const struct dllm_kv_cache *kv, const struct dllm_model *model,
                         int64_t layer);

/* Bytes of K and V of a cache type for every layer of the model and n_tokens positions. */
size_t dllm_kv_storage_bytes(const struct dllm_model *model, int64_t n_tokens,
                             enum dllm_cache_type type);

/*
 * DLLM_ERR_ARG when params' max_tokens (1 to the model's context) or max_rows (1 to
 * max_tokens) are out of range: dllm_forward_new's first refusals, which dllm_gpu_check gives
 * too.
 */
enum dllm_status dllm_forward_check_sizes(const struct dllm_model *model,
                                          const struct dllm_forward_params *params,
                                          struct dllm_error *err);

/* The CPU backend: the kernels of kernels/ on the thread pool; variant names a kernel set. */
extern const struct dllm_backend_ops dllm_backend_cpu;

/*
 * Layer `layer` of a CPU backend's K/V cache: its keys [n_tokens, n_head_kv * head_dim] as
 * float (DLLM_CACHE_F32) or dllm_fp16 (DLLM_CACHE_F16), the values of the same shape right
 * after them. For the tests and benchmarks that read the cache or alter it between passes.
 */
void *dllm_backend_cpu_kv_layer(struct dllm_kv_cache *kv, int64_t layer);

#ifdef DLLM_HAVE_CUDA
/* The CUDA backend (cuda/): kernels.h and cuBLAS on one GPU; variant "cublas". */
extern const struct dllm_backend_ops dllm_backend_cuda;

/* The device bytes it needs for a model, a canvas, logits rows and a mode (dllm_gpu_bytes). */
uint64_t dllm_cuda_device_bytes(const struct dllm_model *model, int64_t max_tokens,
                                int64_t max_rows, bool resident);

/* Whether it runs the model (dllm_gpu_check_model): its refusal of MoE models and types. */
enum dllm_status dllm_cuda_check_model(const struct dllm_model *model, struct dllm_error *err);
#endif

#endif
