/*
 * A loaded model: the mapped GGUF file, the hyperparameters read and checked from its
 * metadata, and the tensors of each layer. Immutable once open; shared read-only by any number
 * of forward contexts.
 */
#ifndef DLLM_MODEL_H
#define DLLM_MODEL_H

#include "dllm.h"
#include "kernels/ops.h"

#include <stdbool.h>
#include <stdint.h>

/*
 * The hyperparameters of the graph (llama.cpp src/llama-model.cpp and src/models/: llada,
 * dream, llada-moe, rnd1).
 */
struct dllm_hparams {
    int64_t n_layer;
    int64_t n_embd;        /* d_model */
    int64_t n_head;        /* query heads */
    int64_t n_head_kv;     /* key/value heads, dividing n_head */
    int64_t head_dim;      /* attention.key_length, else n_embd / n_head */
    int64_t n_rot;         /* dimensions RoPE rotates in each head, even, at most head_dim */
    int64_t n_ff;          /* hidden size of the feed-forward network (0: a MoE file without it) */
    int64_t n_expert;      /* routed experts per layer; 0 for a dense model */
    int64_t n_expert_used; /* experts each position is routed to (expert_used_count) */
    int64_t n_ff_exp;      /* hidden size of one expert's feed-forward network */
    bool expert_norm;      /* the kept experts' weights are divided by their sum (rnd1) */
    int64_t n_vocab;
    int64_t n_ctx;   /* the context length the model was trained for */
    int64_t mask_id; /* below n_vocab, which is at most INT32_MAX */
    float rope_base;
    float norm_eps;
    enum dllm_rope_mode rope_mode;
    bool shift_logits;              /* output row i predicts token i+1 (Dream) */
    enum dllm_sampler_kind sampler; /* the sampler the architecture's models are run with */
};

/*
 * One transformer block. Matrices point at their GGUF tensors (data in the mapped file, in the
 * file's type); vectors are decoded to float at load. Shapes are [rows, columns]: a matrix
 * [N, K] is ggml's ne = {K, N}, N rows of K elements.
 */
struct dllm_layer {
    const float *attn_norm;                       /* [n_embd] */
    const struct dllm_gguf_tensor *wq;            /* [n_head * head_dim, n_embd] */
    const struct dllm_gguf_tensor *wk, *wv;       /* [n_head_kv * head_dim, n_embd] */
    const float *bq;                              /* [n_head * head_dim], or NULL */
    const float *bk, *bv;                         /* [n_head_kv * head_dim], or NULL */
    const struct dllm_gguf_tensor *wo;            /* [n_embd, n_head * head_dim] */
    const float *q_norm, *k_norm;                 /* [head_dim] per-head RMS norms, or NULL */
    const float *ffn_norm;                        /* [n_embd] */
    const struct dllm_gguf_tensor *w_gate, *w_up; /* [n_ff, n_embd]; NULL in a MoE model */
    const struct dllm_gguf_tensor *w_down;        /* [n_embd, n_ff]; NULL in a MoE model */
    /* A MoE layer (else NULL): the router and n_expert experts stacked along ne2. */
    const struct dllm_gguf_tensor *router;              /* [n_expert, n_embd] */
    const struct dllm_gguf_tensor *gate_exps, *up_exps; /* [n_expert][n_ff_exp, n_embd] */
    const struct dllm_gguf_tensor *down_exps;           /* [n_expert][n_embd, n_ff_exp] */
};

struct dllm_model {
    struct dllm_gguf *gguf;
    const char *arch; /* "llada", "dream", "llada-moe" or "rnd1" */
    struct dllm_hparams hp;
    const struct dllm_gguf_tensor *tok_embd; /* [n_vocab, n_embd], rows decoded on lookup */
    const float *output_norm;                /* [n_embd] */
    const struct dllm_gguf_tensor *output;   /* [n_vocab, n_embd]; token_embd when tied */
    struct dllm_layer *layers;               /* [n_layer] */
    float *vectors;                          /* the decoded norm and bias vectors */
    uint64_t weight_bytes;                   /* bytes of the tensors the graph reads */
};

#endif
