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

/* The hyperparameters of the graph (llama.cpp src/llama-model.cpp, llada and dream). */
struct dllm_hparams {
    int64_t n_layer;
    int64_t n_embd;    /* d_model */
    int64_t n_head;    /* query heads */
    int64_t n_head_kv; /* key/value heads, dividing n_head */
    int64_t head_dim;  /* n_embd / n_head */
    int64_t n_rot;     /* dimensions RoPE rotates in each head, even, at most head_dim */
    int64_t n_ff;      /* hidden size of the feed-forward network */
    int64_t n_vocab;
    int64_t n_ctx;   /* the context length the model was trained for */
    int64_t mask_id; /* below n_vocab, which is at most INT32_MAX */
    float rope_base;
    float norm_eps;
    enum dllm_rope_mode rope_mode;
    bool shift_logits; /* output row i predicts token i+1 (Dream) */
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
    const float *ffn_norm;                        /* [n_embd] */
    const struct dllm_gguf_tensor *w_gate, *w_up; /* [n_ff, n_embd] */
    const struct dllm_gguf_tensor *w_down;        /* [n_embd, n_ff] */
};

struct dllm_model {
    struct dllm_gguf *gguf;
    const char *arch; /* "llada" or "dream" */
    struct dllm_hparams hp;
    const struct dllm_gguf_tensor *tok_embd; /* [n_vocab, n_embd], rows decoded on lookup */
    const float *output_norm;                /* [n_embd] */
    const struct dllm_gguf_tensor *output;   /* [n_vocab, n_embd]; token_embd when tied */
    struct dllm_layer *layers;               /* [n_layer] */
    float *vectors;                          /* the decoded norm and bias vectors */
    uint64_t weight_bytes;                   /* bytes of the tensors the graph reads */
};

#endif
