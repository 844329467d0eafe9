/*
 * Model loading: the fixture models' hyperparameters (as the fixtures README lists them), and
 * every refusal, each from a copy of a fixture whose metadata or tensor table was edited.
 */
#include "dllm.h"
#include "fixtures.h"
#include "gguf_edit.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Opens a fixture model, failing the test on error. */
static struct dllm_model *open_fixture(const char *file)
{
    char rel[256];
    snprintf(rel, sizeof rel, "models/%s", file);
    char *path = fixture_path(rel);
    struct dllm_model *m = NULL;
    struct dllm_error err = {0};
    ck_assert_msg(dllm_model_open(path, NULL, &m, &err) == DLLM_OK, "%s", err.text);
    free(path);
    return m;
}

/* ---- the fixture models ------------------------------------------------------------------ */

static const struct {
    const char *file, *arch;
    int64_t n_layer, n_embd, n_head, n_head_kv, n_ff, n_vocab, n_ctx;
    int32_t mask_id;
    bool shift;
    enum dllm_sampler_kind sampler;
    int64_t n_expert, n_used, expert_ff; /* 0 for a dense model */
    bool weights_normalized;
} fixtures[] = {
    {"llada-tiny-q4km.gguf", "llada", 2, 256, 4, 4, 512, 2048, 4096, 1920, false,
     DLLM_SAMPLER_LLADA, 0, 0, 0, false},
    {"llada-tiny-q80.gguf", "llada", 2, 256, 4, 4, 512, 2048, 4096, 1920, false, DLLM_SAMPLER_LLADA,
     0, 0, 0, false},
    {"llada-tiny-q5km.gguf", "llada", 2, 256, 4, 4, 512, 2048, 4096, 1920, false,
     DLLM_SAMPLER_LLADA, 0, 0, 0, false},
    {"llada-tiny-q6k.gguf", "llada", 2, 256, 4, 4, 512, 2048, 4096, 1920, false, DLLM_SAMPLER_LLADA,
     0, 0, 0, false},
    {"llada-tiny-f16.gguf", "llada", 2, 256, 4, 4, 512, 2048, 4096, 1920, false, DLLM_SAMPLER_LLADA,
     0, 0, 0, false},
    {"llada-tiny-bf16.gguf", "llada", 2, 256, 4, 4, 512, 2048, 4096, 1920, false,
     DLLM_SAMPLER_LLADA, 0, 0, 0, false},
    {"dream-tiny-q4km.gguf", "dream", 2, 256, 4, 2, 768, 2048, 4096, 1671, true, DLLM_SAMPLER_DREAM,
     0, 0, 0, false},
    {"dream-tiny-realvocab-q4km.gguf", "dream", 2, 256, 4, 2, 768, 152064, 4096, 151666, true,
     DLLM_SAMPLER_DREAM, 0, 0, 0, false},
    /* fixtures/README.md: 8 experts of 128, top-2; rnd1 without diffusion.shift_logits. */
    {"llada-moe-tiny-q4km.gguf", "llada-moe", 2, 256, 4, 4, 512, 2048, 4096, 1759, false,
     DLLM_SAMPLER_LLADA, 8, 2, 128, false},
    {"llada-moe-tiny-q80.gguf", "llada-moe", 2, 256, 4, 4, 512, 2048, 4096, 1759, false,
     DLLM_SAMPLER_LLADA, 8, 2, 128, false},
    {"rnd1-tiny-q4km.gguf", "rnd1", 2, 256, 4, 2, 768, 2048, 4096, 1781, true, DLLM_SAMPLER_DREAM,
     8, 2, 128, true},
    {"rnd1-tiny-q80.gguf", "rnd1", 2, 256, 4, 2, 768, 2048, 4096, 1781, true, DLLM_SAMPLER_DREAM, 8,
     2, 128, true},
};

START_TEST(test_hparams)
{
    struct dllm_model *m = open_fixture(fixtures[_i].file);
    ck_assert_str_eq(dllm_model_arch(m), fixtures[_i].arch);
    ck_assert_int_eq(dllm_model_n_layer(m), fixtures[_i].n_layer);
    ck_assert_int_eq(dllm_model_n_embd(m), fixtures[_i].n_embd);
    ck_assert_int_eq(dllm_model_n_head(m), fixtures[_i].n_head);
    ck_assert_int_eq(dllm_model_n_head_kv(m), fixtures[_i].n_head_kv);
    ck_assert_int_eq(dllm_model_n_ff(m), fixtures[_i].n_ff);
    ck_assert_int_eq(dllm_model_n_vocab(m), fixtures[_i].n_vocab);
    ck_assert_int_eq(dllm_model_n_ctx(m), fixtures[_i].n_ctx);
    ck_assert_int_eq(dllm_model_mask_id(m), fixtures[_i].mask_id);
    ck_assert(dllm_model_shift_logits(m) == fixtures[_i].shift);
    ck_assert_int_eq(dllm_model_sampler_kind(m), fixtures[_i].sampler);
    const struct dllm_model_experts x = dllm_model_experts(m);
    ck_assert_int_eq(x.n_expert, fixtures[_i].n_expert);
    ck_assert_int_eq(x.n_used, fixtures[_i].n_used);
    ck_assert_int_eq(x.ff, fixtures[_i].expert_ff);
    ck_assert(x.weights_normalized == fixtures[_i].weights_normalized);
    if (x.n_expert)
        ck_assert_str_eq(x.router_type, "F32");
    else
        ck_assert_ptr_null(x.router_type);
    ck_assert_ptr_nonnull(dllm_model_gguf(m));
    ck_assert_ptr_nonnull(dllm_gguf_find(dllm_model_gguf(m), "tokenizer.ggml.tokens"));
    dllm_model_close(m);
}
END_TEST

/* ---- edited copies of the fixtures -------------------------------------------------------- */

enum edit_op { DEL_KEY, SET_U32, SET_F32, SET_STR, SET_BOOL, SET_TYPE, DEL_TENSOR };

/* One edit of a fixture, then what dllm_model_open says (after "<path>: "), or DLLM_OK. */
struct edit_case {
    const char *model;
    enum edit_op op;
    const char *name; /* a key or a tensor */
    double num;       /* SET_U32, SET_F32, SET_BOOL, SET_TYPE */
    const char *str;  /* SET_STR */
    enum dllm_status status;
    const char *message;
};

#define LLADA "llada-tiny-q4km.gguf"
#define DREAM "dream-tiny-q4km.gguf"
#define MOE   "llada-moe-tiny-q4km.gguf"
#define RND1  "rnd1-tiny-q4km.gguf"
#define MISSING(model, key)                                                                        \
    {                                                                                              \
        model, DEL_KEY, key, 0, NULL, DLLM_ERR_MISSING, "required metadata key missing: " key      \
    }

static const struct edit_case edits[] = {
    {LLADA, SET_STR, "general.architecture", 0, "gpt2", DLLM_ERR_UNSUPPORTED,
     "unsupported model architecture: gpt2 (supported: llada, dream, llada-moe, rnd1)"},
    {DREAM, SET_STR, "general.architecture", 0, "qwen2", DLLM_ERR_UNSUPPORTED,
     "unsupported model architecture: qwen2 (supported: llada, dream, llada-moe, rnd1)"},
    MISSING(LLADA, "general.architecture"),
    MISSING(LLADA, "llada.block_count"),
    MISSING(LLADA, "llada.embedding_length"),
    MISSING(LLADA, "llada.attention.head_count"),
    MISSING(LLADA, "llada.attention.head_count_kv"),
    MISSING(LLADA, "llada.feed_forward_length"),
    MISSING(LLADA, "llada.context_length"),
    MISSING(LLADA, "llada.rope.freq_base"),
    MISSING(LLADA, "llada.attention.layer_norm_rms_epsilon"),
    MISSING(LLADA, "tokenizer.ggml.mask_token_id"),
    MISSING(DREAM, "dream.rope.freq_base"),
    MISSING(DREAM, "dream.attention.head_count_kv"),
    {LLADA, SET_STR, "llada.block_count", 0, "two", DLLM_ERR_TYPE,
     "metadata key llada.block_count is string, expected an integer"},
    {LLADA, SET_U32, "llada.block_count", 0, NULL, DLLM_ERR_FORMAT,
     "llada.block_count is 0: it must be at least 1"},
    {LLADA, SET_U32, "llada.attention.head_count", 0, NULL, DLLM_ERR_FORMAT,
     "llada.attention.head_count is 0: it must be at least 1"},
    {DREAM, SET_U32, "dream.attention.head_count_kv", 0, NULL, DLLM_ERR_FORMAT,
     "dream.attention.head_count_kv is 0: it must be at least 1"},
    {LLADA, SET_U32, "llada.attention.head_count", 3, NULL, DLLM_ERR_FORMAT,
     "llada.attention.head_count 3 does not divide llada.embedding_length 256"},
    {DREAM, SET_U32, "dream.attention.head_count_kv", 3, NULL, DLLM_ERR_FORMAT,
     "dream.attention.head_count_kv 3 does not divide dream.attention.head_count 4"},
    {LLADA, SET_U32, "tokenizer.ggml.mask_token_id", 2048, NULL, DLLM_ERR_FORMAT,
     "tokenizer.ggml.mask_token_id 2048 is outside the vocabulary: llada.vocab_size is 2048"},
    {DREAM, SET_U32, "tokenizer.ggml.mask_token_id", 4000000000.0, NULL, DLLM_ERR_FORMAT,
     "tokenizer.ggml.mask_token_id 4000000000 is outside the vocabulary: dream.vocab_size is "
     "2048"},
    {LLADA, SET_U32, "llada.rope.dimension_count", 65, NULL, DLLM_ERR_FORMAT,
     "llada.rope.dimension_count 65 must be even and at most the head size 64"},
    {LLADA, SET_U32, "llada.rope.dimension_count", 128, NULL, DLLM_ERR_FORMAT,
     "llada.rope.dimension_count 128 must be even and at most the head size 64"},
    {LLADA, SET_F32, "llada.rope.freq_base", -1.0, NULL, DLLM_ERR_FORMAT,
     "llada.rope.freq_base -1 must be positive"},
    {LLADA, SET_F32, "llada.attention.layer_norm_rms_epsilon", 0.0, NULL, DLLM_ERR_FORMAT,
     "llada.attention.layer_norm_rms_epsilon 0 must be positive"},
    {LLADA, SET_U32, "llada.block_count", 3, NULL, DLLM_ERR_FORMAT,
     "llada.block_count is 3 but the file has tensors for at most 2 layers"},
    /* Tensor shapes against the hyperparameters. */
    {LLADA, SET_U32, "llada.vocab_size", 2000, NULL, DLLM_ERR_FORMAT,
     "tensor output.weight has shape [256, 2048] but the hyperparameters of llada give "
     "[256, 2000]"},
    {LLADA, SET_U32, "llada.attention.head_count_kv", 2, NULL, DLLM_ERR_FORMAT,
     "tensor blk.0.attn_k.weight has shape [256, 256] but the hyperparameters of llada give "
     "[256, 128]"},
    {DREAM, SET_U32, "dream.attention.head_count_kv", 4, NULL, DLLM_ERR_FORMAT,
     "tensor blk.0.attn_k.weight has shape [256, 128] but the hyperparameters of dream give "
     "[256, 256]"},
    {LLADA, SET_U32, "llada.feed_forward_length", 500, NULL, DLLM_ERR_FORMAT,
     "tensor blk.0.ffn_gate.weight has shape [256, 512] but the hyperparameters of llada give "
     "[256, 500]"},
    {DREAM, SET_U32, "dream.embedding_length", 512, NULL, DLLM_ERR_FORMAT,
     "tensor output.weight has shape [256, 2048] but the hyperparameters of dream give "
     "[512, 2048]"},
    /* Tensors missing, or of a type without a matrix kernel or a decoder. */
    {LLADA, DEL_TENSOR, "blk.1.ffn_down.weight", 0, NULL, DLLM_ERR_MISSING,
     "required tensor missing: blk.1.ffn_down.weight"},
    {DREAM, DEL_TENSOR, "output_norm.weight", 0, NULL, DLLM_ERR_MISSING,
     "required tensor missing: output_norm.weight"},
    {DREAM, DEL_TENSOR, "blk.0.attn_norm.weight", 0, NULL, DLLM_ERR_MISSING,
     "required tensor missing: blk.0.attn_norm.weight"},
    {LLADA, SET_TYPE, "blk.0.attn_q.weight", 16 /* IQ2_XXS */, NULL, DLLM_ERR_UNSUPPORTED,
     "tensor blk.0.attn_q.weight is IQ2_XXS: matrix kernels exist for Q4_K, Q5_K, Q6_K, Q3_K, "
     "Q2_K, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, F16, BF16, F32; take a file quantized as Q4_K_M, "
     "Q5_K_M, Q6_K or Q8_0 instead"},
    {DREAM, SET_TYPE, "output.weight", 23 /* IQ4_XS */, NULL, DLLM_ERR_UNSUPPORTED,
     "tensor output.weight is IQ4_XS: matrix kernels exist for Q4_K, Q5_K, Q6_K, Q3_K, Q2_K, "
     "Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, F16, BF16, F32; take a file quantized as Q4_K_M, Q5_K_M, "
     "Q6_K or Q8_0 instead"},
    {LLADA, SET_TYPE, "blk.1.attn_norm.weight", 16, NULL, DLLM_ERR_UNSUPPORTED,
     "unsupported GGUF tensor type: IQ2_XXS (tensor blk.1.attn_norm.weight)"},
    /* Mixture-of-experts files: counts, sizes, expert tensors. */
    MISSING(MOE, "llada-moe.expert_count"),
    MISSING(RND1, "rnd1.expert_used_count"),
    {MOE, DEL_KEY, "tokenizer.ggml.tokens", 0, NULL, DLLM_ERR_MISSING,
     "required metadata key missing: llada-moe.vocab_size (or tokenizer.ggml.tokens)"},
    {MOE, SET_U32, "llada-moe.expert_count", 1, NULL, DLLM_ERR_FORMAT,
     "llada-moe.expert_count is 1: it must be 2 to 512"},
    {MOE, SET_U32, "llada-moe.expert_count", 513, NULL, DLLM_ERR_FORMAT,
     "llada-moe.expert_count is 513: it must be 2 to 512"},
    {MOE, SET_U32, "llada-moe.expert_used_count", 0, NULL, DLLM_ERR_FORMAT,
     "llada-moe.expert_used_count is 0: it must be 1 to llada-moe.expert_count (8)"},
    {RND1, SET_U32, "rnd1.expert_used_count", 9, NULL, DLLM_ERR_FORMAT,
     "rnd1.expert_used_count is 9: it must be 1 to rnd1.expert_count (8)"},
    {MOE, SET_U32, "llada-moe.expert_count", 16, NULL, DLLM_ERR_FORMAT,
     "tensor blk.0.ffn_gate_inp.weight has shape [256, 8] but the hyperparameters of llada-moe "
     "give [256, 16]"},
    {MOE, SET_U32, "llada-moe.expert_feed_forward_length", 256, NULL, DLLM_ERR_FORMAT,
     "tensor blk.0.ffn_gate_exps.weight has shape [256, 128, 8, 1] but the hyperparameters of "
     "llada-moe give [256, 256, 8]"},
    /* Without the key, the expert FFN is feed_forward_length / expert_used_count = 256. */
    {MOE, DEL_KEY, "llada-moe.expert_feed_forward_length", 0, NULL, DLLM_ERR_FORMAT,
     "tensor blk.0.ffn_gate_exps.weight has shape [256, 128, 8, 1] but the hyperparameters of "
     "llada-moe give [256, 256, 8]"},
    {RND1, SET_U32, "rnd1.attention.key_length", 64, NULL, DLLM_ERR_UNSUPPORTED,
     "rnd1.attention.value_length 128 differs from the key length 64: dllm supports equal key "
     "and value heads"},
    {RND1, SET_U32, "rnd1.embedding_length", 512, NULL, DLLM_ERR_FORMAT,
     "tensor output.weight has shape [256, 2048] but the hyperparameters of rnd1 give "
     "[512, 2048]"},
    {MOE, DEL_TENSOR, "blk.1.ffn_down_exps.weight", 0, NULL, DLLM_ERR_MISSING,
     "required tensor missing: blk.1.ffn_down_exps.weight"},
    {MOE, DEL_TENSOR, "blk.0.ffn_gate_inp.weight", 0, NULL, DLLM_ERR_MISSING,
     "required tensor missing: blk.0.ffn_gate_inp.weight"},
    {RND1, DEL_TENSOR, "blk.0.attn_k_norm.weight", 0, NULL, DLLM_ERR_MISSING,
     "required tensor missing: blk.0.attn_k_norm.weight"},
    {RND1, SET_TYPE, "blk.1.ffn_up_exps.weight", 16 /* IQ2_XXS */, NULL, DLLM_ERR_UNSUPPORTED,
     "tensor blk.1.ffn_up_exps.weight is IQ2_XXS: matrix kernels exist for Q4_K, Q5_K, Q6_K, "
     "Q3_K, Q2_K, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, F16, BF16, F32; take a file quantized as "
     "Q4_K_M, Q5_K_M, Q6_K or Q8_0 instead"},
    /* Accepted edits: optional keys and tensors. */
    {LLADA, DEL_KEY, "llada.vocab_size", 0, NULL, DLLM_OK, NULL},
    {RND1, DEL_TENSOR, "output.weight", 0, NULL, DLLM_OK, NULL},
    {LLADA, DEL_KEY, "llada.rope.dimension_count", 0, NULL, DLLM_OK, NULL},
    {DREAM, DEL_KEY, "diffusion.shift_logits", 0, NULL, DLLM_OK, NULL},
    {LLADA, DEL_KEY, "diffusion.shift_logits", 0, NULL, DLLM_OK, NULL},
    {DREAM, DEL_TENSOR, "blk.0.attn_q.bias", 0, NULL, DLLM_OK, NULL},
    {LLADA, DEL_TENSOR, "output.weight", 0, NULL, DLLM_OK, NULL},
    {LLADA, SET_TYPE, "blk.0.attn_norm.weight", 1 /* F16 */, NULL, DLLM_OK, NULL},
};

/* Saves an edited copy of a fixture in dir and returns its path. */
static char *edited_copy(const struct edit_case *c, const char *dir)
{
    char rel[256];
    snprintf(rel, sizeof rel, "models/%s", c->model);
    char *src = fixture_path(rel);
    struct gguf_edit *e = gguf_edit_load(src);
    switch (c->op) {
    case DEL_KEY: gguf_edit_remove(e, c->name); break;
    case SET_U32: gguf_edit_set_u32(e, c->name, (uint32_t)c->num); break;
    case SET_F32: gguf_edit_set_f32(e, c->name, (float)c->num); break;
    case SET_STR: gguf_edit_set_str(e, c->name, c->str); break;
    case SET_BOOL: gguf_edit_set_bool(e, c->name, c->num != 0); break;
    case SET_TYPE: gguf_edit_set_tensor_type(e, c->name, (uint32_t)c->num); break;
    case DEL_TENSOR: gguf_edit_remove_tensor(e, c->name); break;
    }
    char *path = gguf_edit_save(e, dir, "edited.gguf");
    gguf_edit_free(e);
    free(src);
    return path;
}

START_TEST(test_edits)
{
    const struct edit_case *c = &edits[_i];
    char *dir = test_tmpdir();
    char *path = edited_copy(c, dir);
    struct dllm_model *m = (struct dllm_model *)&m; /* must come back NULL on failure */
    struct dllm_error err = {0};
    enum dllm_status st = dllm_model_open(path, NULL, &m, &err);
    if (c->status == DLLM_OK) {
        ck_assert_msg(st == DLLM_OK, "%s", err.text);
        dllm_model_close(m);
    } else {
        char want[DLLM_ERROR_TEXT_MAX];
        snprintf(want, sizeof want, "%s: %s", path, c->message);
        ck_assert_str_eq(err.text, want);
        ck_assert_int_eq(st, c->status);
        ck_assert_int_eq(err.status, c->status);
        ck_assert_ptr_null(m);
    }
    unlink(path);
    rmdir(dir);
    free(path);
    free(dir);
}
END_TEST

/* Edits that change what a loaded model reports. */
START_TEST(test_defaults)
{
    static const struct {
        const char *model, *key;
        int value; /* -1: remove the key */
        bool shift;
    } cases[] = {
        {DREAM, "diffusion.shift_logits", -1, true},
        {LLADA, "diffusion.shift_logits", -1, false},
        {LLADA, "diffusion.shift_logits", 1, true},
        {DREAM, "diffusion.shift_logits", 0, false},
    };
    char *dir = test_tmpdir();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct edit_case c = {cases[i].model,
                              cases[i].value < 0 ? DEL_KEY : SET_BOOL,
                              cases[i].key,
                              cases[i].value,
                              NULL,
                              DLLM_OK,
                              NULL};
        char *path = edited_copy(&c, dir);
        struct dllm_model *m = NULL;
        struct dllm_error err = {0};
        ck_assert_msg(dllm_model_open(path, NULL, &m, &err) == DLLM_OK, "%s", err.text);
        ck_assert(dllm_model_shift_logits(m) == cases[i].shift);
        dllm_model_close(m);
        unlink(path);
        free(path);
    }
    rmdir(dir);
    free(dir);
}
END_TEST

/*
 * The memory check, where the canvas is known (dllm_forward_new): a canvas of 2^30 tokens (the
 * context length allows it) needs terabytes; skip_memory_check turns it off; a forward
 * context for a short canvas of the same file is made.
 */
START_TEST(test_memory)
{
    struct edit_case c = {LLADA, SET_U32, "llada.context_length", 1 << 30, NULL, DLLM_OK, NULL};
    char *dir = test_tmpdir();
    char *path = edited_copy(&c, dir);
    struct dllm_model *m = NULL;
    struct dllm_error err = {0};
    ck_assert_msg(dllm_model_open(path, NULL, &m, &err) == DLLM_OK, "%s", err.text);
    struct dllm_forward_params fp;
    dllm_forward_params_init(&fp);
    fp.max_tokens = 1 << 30;
    fp.max_rows = 1;
    ck_assert_int_eq(dllm_threadpool_new(1, &fp.pool, &err), DLLM_OK);
    struct dllm_forward *fwd = NULL;
    ck_assert_int_eq(dllm_forward_new(m, &fp, &fwd, &err), DLLM_ERR_NOMEM);
    ck_assert_ptr_null(fwd);
    double need, avail;
    char tail[DLLM_ERROR_TEXT_MAX];
    ck_assert_msg(sscanf(err.text, "model needs %lf GB but only %lf GB is available%[^\n]", &need,
                         &avail, tail) == 3,
                  "%s", err.text);
    ck_assert_double_gt(need, 1000.0);
    ck_assert_double_gt(avail, 0.0);
    ck_assert_double_lt(avail, need);
    ck_assert_str_eq(tail, " (for a canvas of 1073741824 tokens): use a smaller model or a "
                           "shorter canvas");
    /* Without the check the allocation itself is refused, with its own message. */
    fp.skip_memory_check = true;
    ck_assert_int_eq(dllm_forward_new(m, &fp, &fwd, &err), DLLM_ERR_NOMEM);
    ck_assert_str_eq(err.text, "out of memory for a forward pass over 1073741824 tokens");
    ck_assert_ptr_null(fwd);
    fp.skip_memory_check = false;
    fp.max_tokens = 600;
    ck_assert_msg(dllm_forward_new(m, &fp, &fwd, &err) == DLLM_OK, "%s", err.text);
    dllm_forward_free(fwd);
    dllm_threadpool_free(fp.pool);
    dllm_model_close(m);
    unlink(path);
    rmdir(dir);
    free(path);
    free(dir);
}
END_TEST

START_TEST(test_open_errors)
{
    struct dllm_model *m = NULL;
    struct dllm_error err = {0};
    ck_assert_int_eq(dllm_model_open("/nonexistent/model.gguf", NULL, &m, &err), DLLM_ERR_IO);
    ck_assert_str_eq(err.text, "/nonexistent/model.gguf: cannot open: No such file or directory");
    ck_assert_ptr_null(m);

    /* A cancel flag already set stops the load at its first check, leaving nothing. */
    char *path = fixture_path("models/" LLADA);
    atomic_bool cancel = true;
    struct dllm_model_params params;
    dllm_model_params_init(&params);
    params.cancel = &cancel;
    ck_assert_int_eq(dllm_model_open(path, &params, &m, &err), DLLM_ERR_CANCELLED);
    ck_assert_ptr_null(m);
    atomic_store(&cancel, false);
    ck_assert_msg(dllm_model_open(path, &params, &m, &err) == DLLM_OK, "%s", err.text);
    dllm_model_close(m);
    dllm_model_close(NULL);
    free(path);
}
END_TEST

static Suite *model_suite(void)
{
    Suite *s = suite_create("model");
    TCase *tc = tcase_create("fixtures");
    tcase_add_loop_test(tc, test_hparams, 0, sizeof fixtures / sizeof fixtures[0]);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_loop_test(tc, test_edits, 0, sizeof edits / sizeof edits[0]);
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_memory);
    tcase_add_test(tc, test_open_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    fixtures_dir(); /* SKIP (or fail under CI) before forking when the fixtures are absent */
    return test_run_suite(model_suite());
}
