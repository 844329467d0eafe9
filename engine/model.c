/*
 * Model loading: the architecture and hyperparameters from GGUF metadata, the tensors of the
 * graph with their shapes and types checked against them (the keys and tensors llama.cpp's
 * convert_hf_to_gguf.py writes and src/llama-model.cpp reads for llada, dream, llada-moe and
 * rnd1).
 */
#include "config.h"

#include "model.h"

#include "dllm.h"
#include "kernels/matmul.h"
#include "gguf/quant.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What differs between the supported architectures. */
struct arch_info {
    const char *name;
    enum dllm_rope_mode rope_mode; /* NORMAL for LLaDA: its converter permutes Q/K rows */
    bool qkv_bias;                 /* Q/K/V biases are read when present */
    bool shift_logits;             /* when diffusion.shift_logits is absent */
    bool moe;                      /* every FFN is routed experts (llama.cpp build_moe_ffn) */
    bool qk_norm;                  /* per-head RMS norms of Q and K before RoPE */
    bool expert_norm;              /* the kept experts' weights divided by their sum */
    enum dllm_sampler_kind sampler;
};

/*
 * llada-moe (LLaDA-MoE-7B-A1B) and rnd1 (RND1-30B-A3B, from Qwen3-30B-A3B): llama.cpp
 * src/models/llada-moe.cpp and rnd1.cpp. RND1's converter writes no diffusion.shift_logits,
 * which llama.cpp's diffusion example reads as true, and runs it with Dream's schedule.
 */
static const struct arch_info archs[] = {
    {"llada", DLLM_ROPE_NORMAL, false, false, false, false, false, DLLM_SAMPLER_LLADA},
    {"dream", DLLM_ROPE_NEOX, true, true, false, false, false, DLLM_SAMPLER_DREAM},
    {"llada-moe", DLLM_ROPE_NEOX, false, false, true, true, false, DLLM_SAMPLER_LLADA},
    {"rnd1", DLLM_ROPE_NEOX, false, true, true, true, true, DLLM_SAMPLER_DREAM},
};

/* llama.cpp's LLAMA_MAX_EXPERTS (src/llama-hparams.h). */
#define MAX_EXPERTS 512

#define KEY_MAX 128

/* The most norm and bias vectors a layer has (find_layer's list). */
#define VECTORS_PER_LAYER 7

/* A norm or bias vector found while checking tensors, decoded once memory is known to suffice. */
struct vec_ref {
    const struct dllm_gguf_tensor *tensor;
    const float **dst;
};

/* "<arch>.<suffix>" in buf. */
static const char *arch_key(char buf[KEY_MAX], const char *arch, const char *suffix)
{
    snprintf(buf, KEY_MAX, "%s.%s", arch, suffix);
    return buf;
}

/* An integer hyperparameter "<arch>.<suffix>". */
static enum dllm_status get_dim(const struct dllm_gguf *g, const char *arch, const char *suffix,
                                int64_t *out, struct dllm_error *err)
{
    char key[KEY_MAX];
    uint32_t v;
    enum dllm_status st = dllm_gguf_get_u32(g, arch_key(key, arch, suffix), &v, err);
    if (st == DLLM_OK)
        *out = v;
    return st;
}

/* The architecture named by general.architecture, or an error naming the supported ones. */
static enum dllm_status find_arch(const struct dllm_gguf *g, const struct arch_info **out,
                                  struct dllm_error *err)
{
    char *name = NULL;
    enum dllm_status st = dllm_gguf_get_str(g, "general.architecture", &name, err);
    if (st)
        return st;
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++) {
        if (strcmp(name, archs[i].name) == 0) {
            *out = &archs[i];
            free(name);
            return DLLM_OK;
        }
    }
    st = dllm_error_set(
        err, DLLM_ERR_UNSUPPORTED,
        "unsupported model architecture: %s (supported: llada, dream, llada-moe, rnd1)", name);
    free(name);
    return st;
}

/* An optional integer hyperparameter: *out keeps its value when the key is absent. */
static enum dllm_status get_dim_opt(const struct dllm_gguf *g, const char *arch, const char *suffix,
                                    int64_t *out, struct dllm_error *err)
{
    char key[KEY_MAX];
    if (!dllm_gguf_find(g, arch_key(key, arch, suffix)))
        return DLLM_OK;
    return get_dim(g, arch, suffix, out, err);
}

/*
 * The vocabulary size: <arch>.vocab_size, else the length of tokenizer.ggml.tokens (as
 * llama.cpp reads it; the llada-moe and rnd1 converters write no vocab_size).
 */
static enum dllm_status read_vocab_size(const struct dllm_gguf *g, const char *arch, int64_t *out,
                                        struct dllm_error *err)
{
    char key[KEY_MAX];
    if (dllm_gguf_find(g, arch_key(key, arch, "vocab_size")))
        return get_dim(g, arch, "vocab_size", out, err);
    const struct dllm_gguf_value *tokens;
    enum dllm_status st = dllm_gguf_get_array(g, "tokenizer.ggml.tokens", -1, &tokens, err);
    if (st == DLLM_ERR_MISSING)
        return dllm_error_set(err, DLLM_ERR_MISSING,
                              "required metadata key missing: %s.vocab_size (or "
                              "tokenizer.ggml.tokens)",
                              arch);
    if (st)
        return st;
    if (tokens->arr.n > INT64_MAX)
        return dllm_error_set(err, DLLM_ERR_FORMAT, "tokenizer.ggml.tokens is too long");
    *out = (int64_t)tokens->arr.n;
    return DLLM_OK;
}

/* Reads the hyperparameters; optional keys take llama.cpp's defaults. */
static enum dllm_status read_hparams(const struct dllm_gguf *g, const struct arch_info *arch,
                                     struct dllm_hparams *hp, struct dllm_error *err)
{
    const char *a = arch->name;
    char key[KEY_MAX];
    uint32_t mask;
    enum dllm_status st;
    if ((st = get_dim(g, a, "block_count", &hp->n_layer, err)) ||
        (st = get_dim(g, a, "embedding_length", &hp->n_embd, err)) ||
        (st = get_dim(g, a, "attention.head_count", &hp->n_head, err)) ||
        (st = get_dim(g, a, "attention.head_count_kv", &hp->n_head_kv, err)) ||
        (st = arch->moe ? get_dim_opt(g, a, "feed_forward_length", &hp->n_ff, err)
                        : get_dim(g, a, "feed_forward_length", &hp->n_ff, err)) ||
        (st = read_vocab_size(g, a, &hp->n_vocab, err)) ||
        (st = get_dim(g, a, "context_length", &hp->n_ctx, err)) ||
        (st = dllm_gguf_get_f32(g, arch_key(key, a, "rope.freq_base"), &hp->rope_base, err)) ||
        (st = dllm_gguf_get_f32(g, arch_key(key, a, "attention.layer_norm_rms_epsilon"),
                                &hp->norm_eps, err)) ||
        (st = dllm_gguf_get_u32(g, "tokenizer.ggml.mask_token_id", &mask, err)))
        return st;
    hp->mask_id = mask;
    hp->head_dim = hp->n_head ? hp->n_embd / hp->n_head : 0;
    if ((st = get_dim_opt(g, a, "attention.key_length", &hp->head_dim, err)))
        return st;
    int64_t value_length = hp->head_dim;
    if ((st = get_dim_opt(g, a, "attention.value_length", &value_length, err)))
        return st;
    if (value_length != hp->head_dim)
        return dllm_error_set(err, DLLM_ERR_UNSUPPORTED,
                              "%s.attention.value_length %" PRId64 " differs from the key length "
                              "%" PRId64 ": dllm supports equal key and value heads",
                              a, value_length, hp->head_dim);
    hp->n_rot = hp->head_dim;
    if ((st = get_dim_opt(g, a, "rope.dimension_count", &hp->n_rot, err)))
        return st;
    if (arch->moe) {
        if ((st = get_dim(g, a, "expert_count", &hp->n_expert, err)) ||
            (st = get_dim(g, a, "expert_used_count", &hp->n_expert_used, err)))
            return st;
        hp->n_ff_exp = hp->n_expert_used ? hp->n_ff / hp->n_expert_used : 0;
        if ((st = get_dim_opt(g, a, "expert_feed_forward_length", &hp->n_ff_exp, err)))
            return st;
        hp->expert_norm = arch->expert_norm;
    }
    hp->shift_logits = arch->shift_logits;
    if (dllm_gguf_find(g, "diffusion.shift_logits") &&
        (st = dllm_gguf_get_bool(g, "diffusion.shift_logits", &hp->shift_logits, err)))
        return st;
    hp->rope_mode = arch->rope_mode;
    hp->sampler = arch->sampler;
    return DLLM_OK;
}

/* Checks the expert counts and sizes of a MoE model. */
static enum dllm_status check_experts(const char *a, const struct dllm_hparams *hp,
                                      struct dllm_error *err)
{
    if (hp->n_expert < 2 || hp->n_expert > MAX_EXPERTS)
        return dllm_error_set(err, DLLM_ERR_FORMAT,
                              "%s.expert_count is %" PRId64 ": it must be 2 to %d", a, hp->n_expert,
                              MAX_EXPERTS);
    if (hp->n_expert_used < 1 || hp->n_expert_used > hp->n_expert)
        return dllm_error_set(err, DLLM_ERR_FORMAT,
                              "%s.expert_used_count is %" PRId64 ": it must be 1 to "
                              "%s.expert_count (%" PRId64 ")",
                              a, hp->n_expert_used, a, hp->n_expert);
    if (hp->n_ff_exp < 1)
        return dllm_error_set(err, DLLM_ERR_FORMAT,
                              "%s.expert_feed_forward_length is missing and "
                              "%s.feed_forward_length / %s.expert_used_count is 0",
                              a, a, a);
    return DLLM_OK;
}

/* Checks the hyperparameters against each other; errors name the keys and their values. */
static enum dllm_status check_hparams(const struct dllm_gguf *g, const struct arch_info *arch,
                                      const struct dllm_hparams *hp, struct dllm_error *err)
{
    const char *a = arch->name;
    const struct {
        const char *suffix;
        int64_t value;
    } positive[] = {
        {"block_count", hp->n_layer},
        {"embedding_length", hp->n_embd},
        {"attention.head_count", hp->n_head},
        {"attention.head_count_kv", hp->n_head_kv},
        {"feed_forward_length", arch->moe ? 1 : hp->n_ff},
        {"vocab_size", hp->n_vocab},
        {"context_length", hp->n_ctx},
    };
    char key[KEY_MAX];
    for (size_t i = 0; i < sizeof positive / sizeof positive[0]; i++) {
        if (positive[i].value == 0)
            return dllm_error_set(err, DLLM_ERR_FORMAT, "%s.%s is 0: it must be at least 1", a,
                                  positive[i].suffix);
    }
    if (!dllm_gguf_find(g, arch_key(key, a, "attention.key_length")) && hp->n_embd % hp->n_head)
        return dllm_error_set(err, DLLM_ERR_FORMAT,
                              "%s.attention.head_count %" PRId64 " does not divide "
                              "%s.embedding_length %" PRId64,
                              a, hp->n_head, a, hp->n_embd);
    if (hp->head_dim == 0)
        return dllm_error_set(err, DLLM_ERR_FORMAT,
                              "%s.attention.key_length is 0: it must be at least 1", a);
    if (hp->n_head % hp->n_head_kv)
        return dllm_error_set(err, DLLM_ERR_FORMAT,
                              "%s.attention.head_count_kv %" PRId64 " does not divide "
                              "%s.attention.head_count %" PRId64,
                              a, hp->n_head_kv, a, hp->n_head);
    if (hp->n_rot % 2 || hp->n_rot > hp->head_dim)
        return dllm_error_set(err, DLLM_ERR_FORMAT,
                              "%s.rope.dimension_count %" PRId64 " must be even and at most the "
                              "head size %" PRId64,
                              a, hp->n_rot, hp->head_dim);
    if (hp->n_vocab > INT32_MAX)
        return dllm_error_set(err, DLLM_ERR_UNSUPPORTED,
                              "%s.vocab_size %" PRId64 " exceeds the range of token ids", a,
                              hp->n_vocab);
    if (hp->mask_id >= hp->n_vocab)
        return dllm_error_set(err, DLLM_ERR_FORMAT,
                              "tokenizer.ggml.mask_token_id %" PRId64 " is outside the "
                              "vocabulary: %s.vocab_size is %" PRId64,
                              hp->mask_id, a, hp->n_vocab);
    if (!(hp->rope_base > 0.0f) || !isfinite(hp->rope_base))
        return dllm_error_set(err, DLLM_ERR_FORMAT, "%s.rope.freq_base %g must be positive", a,
                              (double)hp->rope_base);
    if (!(hp->norm_eps > 0.0f) || !isfinite(hp->norm_eps))
        return dllm_error_set(err, DLLM_ERR_FORMAT,
                              "%s.attention.layer_norm_rms_epsilon %g must be positive", a,
                              (double)hp->norm_eps);
    return arch->moe ? check_experts(a, hp, err) : DLLM_OK;
}

/*
 * Finds a tensor and checks its shape, ne = {ne0, ne1, ne2} (1 for the dimensions it lacks).
 * A missing optional tensor gives DLLM_OK and *out = NULL.
 */
static enum dllm_status find_tensor(struct dllm_model *m, const char *name, int64_t ne0,
                                    int64_t ne1, int64_t ne2, bool required,
                                    const struct dllm_gguf_tensor **out, struct dllm_error *err)
{
    const struct dllm_gguf_tensor *t = dllm_gguf_find_tensor(m->gguf, name);
    *out = t;
    if (!t) {
        if (required)
            return dllm_error_set(err, DLLM_ERR_MISSING, "required tensor missing: %s", name);
        return DLLM_OK;
    }
    if (t->ne[0] != ne0 || t->ne[1] != ne1 || t->ne[2] != ne2 || t->ne[3] != 1) {
        char got[96], want[64];
        snprintf(got, sizeof got, "%" PRId64 ", %" PRId64, t->ne[0], t->ne[1]);
        if (t->n_dims > 2)
            snprintf(got + strlen(got), sizeof got - strlen(got), ", %" PRId64 ", %" PRId64,
                     t->ne[2], t->ne[3]);
        snprintf(want, sizeof want, "%" PRId64 ", %" PRId64, ne0, ne1);
        if (ne2 != 1)
            snprintf(want + strlen(want), sizeof want - strlen(want), ", %" PRId64, ne2);
        return dllm_error_set(err, DLLM_ERR_FORMAT,
                              "tensor %s has shape [%s] but the hyperparameters of %s give [%s]",
                              name, got, m->arch, want);
    }
    m->weight_bytes += t->size;
    return DLLM_OK;
}

/*
 * A matrix [ne1 rows of ne0] (ne2 of them stacked: the experts of a MoE layer): present,
 * shaped so, and of a type the matrix kernels handle.
 */
static enum dllm_status find_matrix(struct dllm_model *m, const char *name, int64_t ne0,
                                    int64_t ne1, int64_t ne2, const struct dllm_gguf_tensor **out,
                                    struct dllm_error *err)
{
    enum dllm_status st = find_tensor(m, name, ne0, ne1, ne2, true, out, err);
    if (st)
        return st;
    if (!dllm_matmul_supported((*out)->type)) {
        const char *type = dllm_type_name((*out)->type);
        return dllm_error_set(err, DLLM_ERR_UNSUPPORTED,
                              "tensor %s is %s: matrix kernels exist for %s; take a file "
                              "quantized as Q4_K_M, Q5_K_M, Q6_K or Q8_0 instead",
                              name, type ? type : "an unknown type", dllm_matmul_supported_list());
    }
    return DLLM_OK;
}

/* Refuses a tensor of a type dllm cannot decode to float. */
static enum dllm_status require_decoder(const struct dllm_gguf_tensor *t, struct dllm_error *err)
{
    if (dllm_type_decodable(t->type))
        return DLLM_OK;
    const char *type = dllm_type_name(t->type);
    return dllm_error_set(err, DLLM_ERR_UNSUPPORTED, "unsupported GGUF tensor type: %s (tensor %s)",
                          type ? type : "unknown", t->name);
}

/* A norm or bias vector of n elements of a decodable type, queued in refs for decoding. */
static enum dllm_status find_vector(struct dllm_model *m, const char *name, int64_t n,
                                    bool required, const float **dst, struct vec_ref *refs,
                                    size_t *n_refs, struct dllm_error *err)
{
    const struct dllm_gguf_tensor *t;
    enum dllm_status st = find_tensor(m, name, n, 1, 1, required, &t, err);
    if (st || !t)
        return st;
    if ((st = require_decoder(t, err)))
        return st;
    refs[*n_refs].tensor = t;
    refs[*n_refs].dst = dst;
    (*n_refs)++;
    return DLLM_OK;
}

/* Finds and checks the tensors of layer il. */
static enum dllm_status find_layer(struct dllm_model *m, const struct arch_info *arch, int64_t il,
                                   struct vec_ref *refs, size_t *n_refs, struct dllm_error *err)
{
    const struct dllm_hparams *hp = &m->hp;
    struct dllm_layer *l = &m->layers[il];
    const int64_t d = hp->n_embd, dq = hp->n_head * hp->head_dim;
    const int64_t dkv = hp->n_head_kv * hp->head_dim, ne = hp->n_expert, ff = hp->n_ff_exp;
    const struct {
        const char *suffix;
        int64_t ne0, ne1, ne2;
        const struct dllm_gguf_tensor **dst;
        bool wanted;
    } matrices[] = {
        {"attn_q.weight", d, dq, 1, &l->wq, true},
        {"attn_k.weight", d, dkv, 1, &l->wk, true},
        {"attn_v.weight", d, dkv, 1, &l->wv, true},
        {"attn_output.weight", dq, d, 1, &l->wo, true},
        {"ffn_gate.weight", d, hp->n_ff, 1, &l->w_gate, !arch->moe},
        {"ffn_up.weight", d, hp->n_ff, 1, &l->w_up, !arch->moe},
        {"ffn_down.weight", hp->n_ff, d, 1, &l->w_down, !arch->moe},
        {"ffn_gate_inp.weight", d, ne, 1, &l->router, arch->moe},
        {"ffn_gate_exps.weight", d, ff, ne, &l->gate_exps, arch->moe},
        {"ffn_up_exps.weight", d, ff, ne, &l->up_exps, arch->moe},
        {"ffn_down_exps.weight", ff, d, ne, &l->down_exps, arch->moe},
    };
    const struct {
        const char *suffix;
        int64_t n;
        bool required;
        const float **dst;
        bool wanted;
    } vectors[] = {
        {"attn_norm.weight", d, true, &l->attn_norm, true},
        {"ffn_norm.weight", d, true, &l->ffn_norm, true},
        {"attn_q.bias", dq, false, &l->bq, arch->qkv_bias},
        {"attn_k.bias", dkv, false, &l->bk, arch->qkv_bias},
        {"attn_v.bias", dkv, false, &l->bv, arch->qkv_bias},
        {"attn_q_norm.weight", hp->head_dim, true, &l->q_norm, arch->qk_norm},
        {"attn_k_norm.weight", hp->head_dim, true, &l->k_norm, arch->qk_norm},
    };
    char name[KEY_MAX];
    enum dllm_status st;
    for (size_t i = 0; i < sizeof matrices / sizeof matrices[0]; i++) {
        if (!matrices[i].wanted)
            continue;
        snprintf(name, sizeof name, "blk.%" PRId64 ".%s", il, matrices[i].suffix);
        if ((st = find_matrix(m, name, matrices[i].ne0, matrices[i].ne1, matrices[i].ne2,
                              matrices[i].dst, err)))
            return st;
    }
    for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++) {
        if (!vectors[i].wanted)
            continue;
        snprintf(name, sizeof name, "blk.%" PRId64 ".%s", il, vectors[i].suffix);
        if ((st = find_vector(m, name, vectors[i].n, vectors[i].required, vectors[i].dst, refs,
                              n_refs, err)))
            return st;
    }
    return DLLM_OK;
}

/* Decodes the queued norm and bias vectors into one allocation. */
static enum dllm_status decode_vectors(struct dllm_model *m, const struct vec_ref *refs,
                                       size_t n_refs, struct dllm_error *err)
{
    size_t total = 0;
    for (size_t i = 0; i < n_refs; i++)
        total += (size_t)refs[i].tensor->ne[0];
    m->vectors = malloc(total * sizeof(float));
    if (!m->vectors)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory for the norm vectors");
    float *p = m->vectors;
    for (size_t i = 0; i < n_refs; i++) {
        const int64_t n = refs[i].tensor->ne[0];
        enum dllm_status st = dllm_gguf_tensor_decode(refs[i].tensor, 0, n, p, err);
        if (st)
            return st;
        *refs[i].dst = p;
        p += n;
    }
    return DLLM_OK;
}

/* Binds every tensor of the graph, then decodes the vectors; cancel is checked per layer. */
static enum dllm_status load(struct dllm_model *m, const struct arch_info *arch,
                             const atomic_bool *cancel, struct dllm_error *err)
{
    const struct dllm_hparams *hp = &m->hp;
    struct vec_ref *refs = NULL;
    size_t n_refs = 0;
    enum dllm_status st;
    /* Each layer has at least nine tensors: bound the allocations below by the file. */
    if (hp->n_layer > dllm_gguf_n_tensors(m->gguf) / 9) {
        return dllm_error_set(err, DLLM_ERR_FORMAT,
                              "%s.block_count is %" PRId64 " but the file has tensors for at "
                              "most %" PRId64 " layers",
                              m->arch, hp->n_layer, dllm_gguf_n_tensors(m->gguf) / 9);
    }
    m->layers = calloc((size_t)hp->n_layer, sizeof *m->layers);
    refs = calloc(1 + VECTORS_PER_LAYER * (size_t)hp->n_layer, sizeof *refs);
    if (!m->layers || !refs) {
        st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory for %" PRId64 " layers",
                            hp->n_layer);
        goto fail;
    }
    if ((st = find_matrix(m, "output.weight", hp->n_embd, hp->n_vocab, 1, &m->output, err)) ==
        DLLM_ERR_MISSING) {
        /* Untied files carry output.weight; a tied one reuses the embedding (llama.cpp). */
        st = find_matrix(m, "token_embd.weight", hp->n_embd, hp->n_vocab, 1, &m->output, err);
    }
    if (st)
        goto fail;
    if ((st = find_tensor(m, "token_embd.weight", hp->n_embd, hp->n_vocab, 1, true, &m->tok_embd,
                          err)))
        goto fail;
    if ((st = require_decoder(m->tok_embd, err)))
        goto fail;
    if (m->output == m->tok_embd)
        m->weight_bytes -= m->tok_embd->size;
    if ((st = find_vector(m, "output_norm.weight", hp->n_embd, true, &m->output_norm, refs, &n_refs,
                          err)))
        goto fail;
    for (int64_t il = 0; il < hp->n_layer; il++) {
        if (cancel && atomic_load(cancel)) {
            st = dllm_error_set(err, DLLM_ERR_CANCELLED, "cancelled while loading");
            goto fail;
        }
        if ((st = find_layer(m, arch, il, refs, &n_refs, err)))
            goto fail;
    }
    if ((st = decode_vectors(m, refs, n_refs, err)))
        goto fail;
    free(refs);
    return DLLM_OK;
fail:
    free(refs);
    return st;
}

void dllm_model_params_init(struct dllm_model_params *params)
{
    params->cancel = NULL;
}

enum dllm_status dllm_model_open(const char *path, const struct dllm_model_params *params,
                                 struct dllm_model **out, struct dllm_error *err)
{
    struct dllm_model_params defaults;
    dllm_model_params_init(&defaults);
    if (!params)
        params = &defaults;
    *out = NULL;
    const struct arch_info *arch = NULL;
    enum dllm_status st;
    struct dllm_model *m = calloc(1, sizeof *m);
    if (!m)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    if ((st = dllm_gguf_open(path, &m->gguf, err)) || (st = find_arch(m->gguf, &arch, err)) ||
        (st = read_hparams(m->gguf, arch, &m->hp, err)) ||
        (st = check_hparams(m->gguf, arch, &m->hp, err)))
        goto fail;
    m->arch = arch->name;
    if ((st = load(m, arch, params->cancel, err)))
        goto fail;
    *out = m;
    return DLLM_OK;
fail:
    dllm_error_prefix(err, "%s", path);
    dllm_model_close(m);
    return st;
}

void dllm_model_close(struct dllm_model *model)
{
    if (!model)
        return;
    dllm_gguf_close(model->gguf);
    free(model->layers);
    free(model->vectors);
    free(model);
}

const char *dllm_model_arch(const struct dllm_model *model)
{
    return model->arch;
}

int64_t dllm_model_n_vocab(const struct dllm_model *model)
{
    return model->hp.n_vocab;
}

int64_t dllm_model_n_ctx(const struct dllm_model *model)
{
    return model->hp.n_ctx;
}

int32_t dllm_model_mask_id(const struct dllm_model *model)
{
    return (int32_t)model->hp.mask_id;
}

int64_t dllm_model_n_layer(const struct dllm_model *model)
{
    return model->hp.n_layer;
}

int64_t dllm_model_n_embd(const struct dllm_model *model)
{
    return model->hp.n_embd;
}

int64_t dllm_model_n_head(const struct dllm_model *model)
{
    return model->hp.n_head;
}

int64_t dllm_model_n_head_kv(const struct dllm_model *model)
{
    return model->hp.n_head_kv;
}

int64_t dllm_model_n_ff(const struct dllm_model *model)
{
    return model->hp.n_ff;
}

bool dllm_model_shift_logits(const struct dllm_model *model)
{
    return model->hp.shift_logits;
}

enum dllm_sampler_kind dllm_model_sampler_kind(const struct dllm_model *model)
{
    return model->hp.sampler;
}

struct dllm_model_experts dllm_model_experts(const struct dllm_model *model)
{
    const struct dllm_hparams *hp = &model->hp;
    if (!hp->n_expert)
        return (struct dllm_model_experts){0};
    return (struct dllm_model_experts){.n_expert = hp->n_expert,
                                       .n_used = hp->n_expert_used,
                                       .ff = hp->n_ff_exp,
                                       .weights_normalized = hp->expert_norm,
                                       .router_type =
                                           dllm_type_name(model->layers[0].router->type)};
}

const struct dllm_gguf *dllm_model_gguf(const struct dllm_model *model)
{
    return model->gguf;
}

const char *dllm_model_file_type(const struct dllm_model *model)
{
    /* llama.cpp's enum llama_ftype, as general.file_type stores it. */
    static const char *const names[] = {
        [0] = "F32",     [1] = "F16",     [2] = "Q4_0",    [3] = "Q4_1",    [7] = "Q8_0",
        [8] = "Q5_0",    [9] = "Q5_1",    [10] = "Q2_K",   [11] = "Q3_K_S", [12] = "Q3_K_M",
        [13] = "Q3_K_L", [14] = "Q4_K_S", [15] = "Q4_K_M", [16] = "Q5_K_S", [17] = "Q5_K_M",
        [18] = "Q6_K",   [32] = "BF16",
    };
    uint32_t ft;
    if (dllm_gguf_get_u32(model->gguf, "general.file_type", &ft, NULL) != DLLM_OK ||
        ft >= sizeof names / sizeof names[0] || !names[ft])
        return "unknown";
    return names[ft];
}
