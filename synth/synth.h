/*
 * Synthetic models: GGUF files of the real architectures and shapes with random weights, for
 * dllm synth, the benchmarks and the tests. Private to them (not installed). The MoE mixes
 * follow llama-quantize's rules for their shapes (an 8-expert model's attn_k and attn_v in
 * Q8_0 and attn_output in Q5_K; rows that are no multiple of 256 fall back to Q5_0, Q5_1 or
 * Q8_0); routers stay F32.
 */
#ifndef DLLM_SYNTH_H
#define DLLM_SYNTH_H

#include "dllm.h"

/* ---- synthetic models ------------------------------------------------------------------- */

/*
 * GGUF files of the real architectures and shapes with random weights, for benchmarks and
 * tests without a download. Tensor names, order, shapes and types are those llama.cpp's
 * converter and llama-quantize write (convert_hf_to_gguf.py, src/llama-quant.cpp), the metadata
 * keys those of
 * a converted model. The vocabulary is synthetic and byte-level: the 256 GPT-2 byte tokens,
 * 8 merges, [PAD<i>] fillers, and the architecture's special tokens at their real ids, or
 * when the vocabulary is smaller than those ids at the same distance from its top as in the
 * real one (LLaDA: <|startoftext|> 126080, <|endoftext|> 126081, <|mdm_mask|> 126336,
 * <|start_header_id|> 126346, <|end_header_id|> 126347, <|eot_id|> 126348 of 126464; Dream:
 * <|endoftext|> 151643, <|im_start|> 151644, <|im_end|> 151645, <|beginoftext|> 151665,
 * <|mask|> 151666 of 152064). The chat template is the model's own. Weights are random
 * blocks whose scales give every matrix a standard deviation of about 1/sqrt(ne0), norms
 * near 1 and small biases, so activations stay finite through any number of layers.
 */

/* Tensor type mixes, numbered as llama-quantize's file types (general.file_type). */
enum dllm_synth_type {
    DLLM_SYNTH_F16 = 1,     /* every matrix F16, as the converter writes with --outtype f16 */
    DLLM_SYNTH_Q8_0 = 7,    /* every matrix Q8_0 */
    DLLM_SYNTH_Q2_K = 10,   /* Q2_K; Q3_K for attn_output, ffn_down and attn_v (Q4_K with 4 or
                               more query heads a key head), Q6_K for output.weight */
    DLLM_SYNTH_Q3_K_M = 12, /* Q3_K; Q4_K for attn_output, attn_v (Q5_K in layers 0 and 1) and
                               ffn_down (Q5_K in the first sixteenth of the layers), Q6_K for
                               output.weight */
    DLLM_SYNTH_Q4_K_M = 15, /* Q4_K; Q6_K for output.weight, and for attn_v and ffn_down in the
                               layers llama-quantize's use_more_bits picks */
    DLLM_SYNTH_Q5_K_M = 17, /* the same with Q5_K in place of Q4_K */
    DLLM_SYNTH_Q6_K = 18,   /* every matrix Q6_K */
};

/* The shape and contents of a synthetic model; dllm_synth_params_init fills a preset. */
struct dllm_synth_params {
    const char *arch;  /* "llada", "dream", "llada-moe" or "rnd1" */
    int64_t n_layer;   /* 1 .. 4096 */
    int64_t n_embd;    /* a multiple of the matrices' block size (256, or 32 for Q8_0) */
    int64_t n_head;    /* divides n_embd into heads of an even size (unless head_dim is set) */
    int64_t n_head_kv; /* divides n_head */
    int64_t n_ff;      /* a multiple of the block size */
    int64_t n_vocab;   /* room for 264 byte and merge tokens below the special tokens */
    int64_t n_ctx;     /* the context length written to the file */
    int64_t head_dim;  /* even; 0: n_embd / n_head (attention.key_length for rnd1) */
    /* MoE architectures: 2 .. 512 experts of n_ff_exp (a multiple of 32), n_expert_used of
     * them per token; n_ff is then only the written feed_forward_length */
    int64_t n_expert, n_expert_used, n_ff_exp;
    enum dllm_synth_type type;
    uint64_t seed; /* the same seed and params give the same file, byte for byte */
    /* DLLM_PROGRESS_SYNTH about every megabyte of tensor data written (done/total bytes) */
    dllm_progress_fn progress;
    void *progress_user;
    const atomic_bool *cancel; /* checked between megabytes */
};

/*
 * The shape of a preset: "8b" for llada (LLaDA-8B-Instruct: 32 layers, d_model 4096, 32/32
 * heads, ffn 12288, vocab 126464, context 4096), "7b" for dream (Dream-v0-Instruct-7B: 28
 * layers, 3584, 28/4 heads, ffn 18944, vocab 152064, context 131072), "tiny" for either (the
 * test fixtures' shapes: 2 layers, d_model 256, 4/4 heads and ffn 512 for llada, 4/2 heads
 * and ffn 768 for dream, vocab 2048, context 4096); "7b-a1b" for llada-moe
 * (LLaDA-MoE-7B-A1B: 16 layers, d_model 2048, 16/16 heads, 64 experts of 1024, 8 used, vocab
 * 157184), "30b-a3b" for rnd1 (RND1-30B-A3B: 48 layers, d_model 2048, 32/4 heads of 128, 128
 * experts of 768, 8 used, vocab 151936), "tiny" for either (the MoE fixtures' shapes: 8
 * experts of 128, 2 used); type Q4_K_M, seed 0. DLLM_ERR_ARG names the presets of the
 * architecture.
 */
enum dllm_status dllm_synth_params_init(struct dllm_synth_params *params, const char *arch,
                                        const char *preset, struct dllm_error *err);

/* DLLM_ERR_ARG when params cannot make a model, with a message naming the values. */
enum dllm_status dllm_synth_params_check(const struct dllm_synth_params *params,
                                         struct dllm_error *err);

/* "Q4_K_M", ...; NULL for a value not in the enum. Parsing ignores case. */
const char *dllm_synth_type_name(enum dllm_synth_type type);
bool dllm_synth_type_parse(const char *name, enum dllm_synth_type *out);

/*
 * Writes a synthetic model to path, streaming: the tensor data is generated block by block as
 * it is written, so memory use does not grow with the model. The file appears under its name
 * only when complete (it is written as PATH.tmp and renamed; an existing file is replaced);
 * on failure or cancellation nothing is left behind. DLLM_ERR_IO names the file and the
 * problem (a full disk, a missing folder); DLLM_ERR_CANCELLED follows params->cancel.
 */
enum dllm_status dllm_synth_write(const char *path, const struct dllm_synth_params *params,
                                  struct dllm_error *err);

#endif /* DLLM_SYNTH_H */
