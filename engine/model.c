/*
 * Model loading: the architecture and hyperparameters from GGUF metadata, the tensors of the
 * graph with their shapes and types checked against them (the keys and tensors llama.cpp's
 * convert_hf_to_gguf.py writes and src/llama-model.cpp reads for llada and dream).
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
};

static const struct arch_info archs[] = {
    {"llada", DLLM_ROPE_NORMAL, false, false},
    {"dream", DLLM_ROPE_NEOX, true, true},
};

#define KEY_MAX 128

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
    st = dllm_error_set(err, DLLM_ERR_UNSUPPORTED,
                        "unsupported model architecture: %s (supported: llada, dream)", name);
    free(name);
    return st;
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
        (st = get_dim(g, a, "feed_forward_length", &hp->n_ff, err)) ||
        (st = get_dim(g, a, "vocab_size", &hp->n_vocab, err)) ||
        (st = get_dim(g, a, "context_length", &hp->n_ctx, err)) ||
        (st = dllm_gguf_get_f32(g, arch_key(key, a, "rope.freq_base"), &hp->rope_base, err)) ||
        (st = dllm_gguf_get_f32(g, arch_key(key, a, "attention.layer_norm_rms_epsilon"),
                                &hp->norm_eps, err)) ||
        (st = dllm_gguf_get_u32(g, "tokenizer.ggml.mask_token_id", &mask, err)))
        return st;
    hp->mask_id = mask;
    hp->head_dim = hp->n_head ? hp->n_embd / hp->n_head : 0;
    hp->n_rot = hp->head_dim;
    if (dllm_gguf_find(g, arch_key(key, a, "rope.dimension_count")) &&
        (st = get_dim(g, a, "rope.dimension_count", &hp->n_rot, err)))
        return st;
    hp->shift_logits = arch->shift_logits;
    if (dllm_gguf_find(g, "diffusion.shift_logits") &&
        (st = dllm_gguf_get_bool(g, "diffusion.shift_logits", &hp->shift_logits, err)))
        return st;
    hp->rope_mode = arch->rope_mode;
    return DLLM_OK;
}

/* Checks the hyperparameters against each other; errors name the keys and their values. */
static enum dllm_status check_hparams(const char *a, const struct dllm_hparams *hp,
                                      struct dllm_error *err)
{
    const struct {
        const char *suffix;
        int64_t value;
    } positive[] = {
        {"block_count", hp->n_layer},         {"embedding_length", hp->n_embd},
        {"attention.head_count", hp->n_head}, {"attention.head_count_kv", hp->n_head_kv},
        {"feed_forward_length", hp->n_ff},    {"vocab_size", hp->n_vocab},
        {"context_length", hp->n_ctx},
    };
    for (size_t i = 0; i < sizeof positive / sizeof positive[0]; i++) {
        if (positive[i].value == 0)
            return dllm_error_set(err, DLLM_ERR_FORMAT, "%s.%s is 0: it must be at least 1", a,
                                  positive[i].suffix);
    }
    if (hp->n_embd % hp->n_head)
        return dllm_error_set(err, DLLM_ERR_FORMAT,
                              "%s.attention.head_count %" PRId64 " does not divide "
                              "%s.embedding_length %" PRId64,
                              a, hp->n_head, a, hp->n_embd);
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
    return DLLM_OK;
}

/*
 * Finds a tensor and checks its shape, ne = {ne0, ne1} (ne1 = 1 for a vector). A missing
 * optional tensor gives DLLM_OK and *out = NULL.
 */
static enum dllm_status find_tensor(struct dllm_model *m, const char *name, int64_t ne0,
                                    int64_t ne1, bool required, const struct dllm_gguf_tensor **out,
                                    struct dllm_error *err)
{
    const struct dllm_gguf_tensor *t = dllm_gguf_find_tensor(m->gguf, name);
    *out = t;
    if (!t) {
        if (required)
            return dllm_error_set(err, DLLM_ERR_MISSING, "required tensor missing: %s", name);
        return DLLM_OK;
    }
    if (t->ne[0] != ne0 || t->ne[1] != ne1 || t->ne[2] != 1 || t->ne[3] != 1) {
        char got[96];
        snprintf(got, sizeof got, "%" PRId64 ", %" PRId64, t->ne[0], t->ne[1]);
        if (t->n_dims > 2)
            snprintf(got + strlen(got), sizeof got - strlen(got), ", %" PRId64 ", %" PRId64,
                     t->ne[2], t->ne[3]);
        return dllm_error_set(err, DLLM_ERR_FORMAT,
                              "tensor %s has shape [%s] but the hyperparameters of %s give "
                              "[%" PRId64 ", %" PRId64 "]",
                              name, got, m->arch, ne0, ne1);
    }
    m->weight_bytes += t->size;
    return DLLM_OK;
}

/* A matrix [ne1 rows of ne0]: present, shaped so, and of a type the matrix kernels handle. */
static enum dllm_status find_matrix(struct dllm_model *m, const char *name, int64_t ne0,
                                    int64_t ne1, const struct dllm_gguf_tensor **out,
                                    struct dllm_error *err)
{
    enum dllm_status st = find_tensor(m, name, ne0, ne1, true, out, err);
    if (st)
        return st;
    if (!dllm_matmul_supported((*out)->type)) {
        const char *type = dllm_type_name((*out)->type);
        return dllm_error_set(err, DLLM_ERR_UNSUPPORTED,
                              "tensor %s is %s: matrix kernels exist for %s", name,
                              type ? type : "an unknown type", dllm_matmul_supported_list());
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
    enum dllm_status st = find_tensor(m, name, n, 1, required, &t, err);
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
    const int64_t dkv = hp->n_head_kv * hp->head_dim;
    const struct {
        const char *suffix;
        int64_t ne0, ne1;
        const struct dllm_gguf_tensor **dst;
    } matrices[] = {
        {"attn_q.weight", d, dq, &l->wq},
        {"attn_k.weight", d, dkv, &l->wk},
        {"attn_v.weight", d, dkv, &l->wv},
        {"attn_output.weight", dq, d, &l->wo},
        {"ffn_gate.weight", d, hp->n_ff, &l->w_gate},
        {"ffn_up.weight", d, hp->n_ff, &l->w_up},
        {"ffn_down.weight", hp->n_ff, d, &l->w_down},
    };
    const struct {
        const char *suffix;
        int64_t n;
        bool required;
        const float **dst;
    } vectors[] = {
        {"attn_norm.weight", d, true, &l->attn_norm}, {"ffn_norm.weight", d, true, &l->ffn_norm},
        {"attn_q.bias", dq, false, &l->bq},           {"attn_k.bias", dkv, false, &l->bk},
        {"attn_v.bias", dkv, false, &l->bv},
    };
    char name[KEY_MAX];
    enum dllm_status st;
    for (size_t i = 0; i < sizeof matrices / sizeof matrices[0]; i++) {
        snprintf(name, sizeof name, "blk.%" PRId64 ".%s", il, matrices[i].suffix);
        if ((st = find_matrix(m, name, matrices[i].ne0, matrices[i].ne1, matrices[i].dst, err)))
            return st;
    }
    const size_t n_vectors = arch->qkv_bias ? 5 : 2;
    for (size_t i = 0; i < n_vectors; i++) {
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
    refs = calloc(1 + 5 * (size_t)hp->n_layer, sizeof *refs);
    if (!m->layers || !refs) {
        st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory for %" PRId64 " layers",
                            hp->n_layer);
        goto fail;
    }
    if ((st = find_matrix(m, "output.weight", hp->n_embd, hp->n_vocab, &m->output, err)) ==
        DLLM_ERR_MISSING) {
        /* Untied files carry output.weight; a tied one reuses the embedding (llama.cpp). */
        st = find_matrix(m, "token_embd.weight", hp->n_embd, hp->n_vocab, &m->output, err);
    }
    if (st)
        goto fail;
    if ((st =
             find_tensor(m, "token_embd.weight", hp->n_embd, hp->n_vocab, true, &m->tok_embd, err)))
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
        (st = check_hparams(arch->name, &m->hp, err)))
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
