/*
 * libdllm: local inference for diffusion language models.
 *
 * The one public header. Every fallible function returns enum dllm_status and, when given a
 * struct dllm_error, writes one line of detail text into it. The library never prints and
 * never exits.
 */
#ifndef DLLM_H
#define DLLM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define DLLM_API __attribute__((visibility("default")))
#else
#define DLLM_API
#endif

/* ---- status and errors ------------------------------------------------------------------ */

enum dllm_status {
    DLLM_OK = 0,
    DLLM_ERR_IO,          /* a file could not be opened, read or written */
    DLLM_ERR_FORMAT,      /* malformed input: a GGUF file, a vocabulary, JSON */
    DLLM_ERR_UNSUPPORTED, /* well-formed but not supported: tensor type, architecture */
    DLLM_ERR_MISSING,     /* a required metadata key or tensor is absent */
    DLLM_ERR_TYPE,        /* a metadata value has the wrong type */
    DLLM_ERR_NOMEM,       /* out of memory, or the model would not fit */
    DLLM_ERR_ARG,         /* a caller passed an invalid argument */
    DLLM_ERR_CANCELLED,   /* the operation was cancelled */
};

#define DLLM_ERROR_TEXT_MAX 512

/* Caller-owned error detail: the status of the last failure and one line of text. */
struct dllm_error {
    enum dllm_status status;
    char text[DLLM_ERROR_TEXT_MAX];
};

/* The name of a status code ("ok", "malformed input", ...). */
DLLM_API const char *dllm_status_str(enum dllm_status status);

/* The library version string, e.g. "0.1.0". */
DLLM_API const char *dllm_version(void);

/* ---- tensor types ----------------------------------------------------------------------- */

/* GGML tensor type ids, as stored in GGUF files. */
enum dllm_type {
    DLLM_TYPE_F32 = 0,
    DLLM_TYPE_F16 = 1,
    DLLM_TYPE_Q4_0 = 2,
    DLLM_TYPE_Q4_1 = 3,
    DLLM_TYPE_Q5_0 = 6,
    DLLM_TYPE_Q5_1 = 7,
    DLLM_TYPE_Q8_0 = 8,
    DLLM_TYPE_Q8_1 = 9,
    DLLM_TYPE_Q2_K = 10,
    DLLM_TYPE_Q3_K = 11,
    DLLM_TYPE_Q4_K = 12,
    DLLM_TYPE_Q5_K = 13,
    DLLM_TYPE_Q6_K = 14,
    DLLM_TYPE_Q8_K = 15,
    DLLM_TYPE_IQ2_XXS = 16,
    DLLM_TYPE_IQ2_XS = 17,
    DLLM_TYPE_IQ3_XXS = 18,
    DLLM_TYPE_IQ1_S = 19,
    DLLM_TYPE_IQ4_NL = 20,
    DLLM_TYPE_IQ3_S = 21,
    DLLM_TYPE_IQ2_S = 22,
    DLLM_TYPE_IQ4_XS = 23,
    DLLM_TYPE_I8 = 24,
    DLLM_TYPE_I16 = 25,
    DLLM_TYPE_I32 = 26,
    DLLM_TYPE_I64 = 27,
    DLLM_TYPE_F64 = 28,
    DLLM_TYPE_IQ1_M = 29,
    DLLM_TYPE_BF16 = 30,
    DLLM_TYPE_TQ1_0 = 34,
    DLLM_TYPE_TQ2_0 = 35,
    DLLM_TYPE_MXFP4 = 39,
    DLLM_TYPE_COUNT = 40,
};

/* The GGML name of a tensor type ("Q4_K"), or NULL for an id no GGML version defines. */
DLLM_API const char *dllm_type_name(uint32_t type);

/* Whether dllm can decode tensors of this type to float. */
DLLM_API bool dllm_type_decodable(uint32_t type);

/* ---- GGUF files ------------------------------------------------------------------------- */

/* GGUF metadata value types, as stored in the file. */
enum dllm_gguf_type {
    DLLM_GGUF_UINT8 = 0,
    DLLM_GGUF_INT8 = 1,
    DLLM_GGUF_UINT16 = 2,
    DLLM_GGUF_INT16 = 3,
    DLLM_GGUF_UINT32 = 4,
    DLLM_GGUF_INT32 = 5,
    DLLM_GGUF_FLOAT32 = 6,
    DLLM_GGUF_BOOL = 7,
    DLLM_GGUF_STRING = 8,
    DLLM_GGUF_ARRAY = 9,
    DLLM_GGUF_UINT64 = 10,
    DLLM_GGUF_INT64 = 11,
    DLLM_GGUF_FLOAT64 = 12,
};

/* The GGUF name of a value type ("uint32", "string", ...). */
DLLM_API const char *dllm_gguf_type_name(enum dllm_gguf_type type);

/*
 * One metadata value. Strings point into the mapped file and are not NUL-terminated.
 * Arrays are read element by element with dllm_gguf_array_get().
 */
struct dllm_gguf_value {
    enum dllm_gguf_type type;
    union {
        uint64_t u64; /* UINT8, UINT16, UINT32, UINT64 */
        int64_t i64;  /* INT8, INT16, INT32, INT64 */
        double f64;   /* FLOAT32, FLOAT64 */
        bool b;       /* BOOL */
        struct {
            const char *ptr;
            uint64_t len;
        } str; /* STRING */
        struct {
            enum dllm_gguf_type type; /* element type */
            uint64_t n;               /* element count */
            const void *impl;         /* private to the reader */
        } arr; /* ARRAY */
    };
};

/* One tensor of a GGUF file. */
struct dllm_gguf_tensor {
    const char *name; /* NUL-terminated */
    uint32_t type;    /* enum dllm_type */
    int n_dims;       /* 1..4 */
    int64_t ne[4];    /* shape, ne[0] contiguous; unused dimensions are 1 */
    uint64_t offset;  /* from the start of the data section */
    size_t size;      /* bytes */
    const void *data; /* in the mapped file */
};

struct dllm_gguf;

/* Maps and validates a GGUF file. On failure *out is NULL and err says what and where. */
DLLM_API enum dllm_status dllm_gguf_open(const char *path, struct dllm_gguf **out,
                                         struct dllm_error *err);

/* Validates a GGUF image held in memory, which must outlive the returned object. */
DLLM_API enum dllm_status dllm_gguf_open_memory(const void *data, size_t size,
                                                struct dllm_gguf **out, struct dllm_error *err);

DLLM_API void dllm_gguf_close(struct dllm_gguf *gguf);

DLLM_API uint32_t dllm_gguf_version(const struct dllm_gguf *gguf);
DLLM_API size_t dllm_gguf_alignment(const struct dllm_gguf *gguf);
/* Byte offset of the tensor data section from the start of the file. */
DLLM_API size_t dllm_gguf_data_offset(const struct dllm_gguf *gguf);

DLLM_API int64_t dllm_gguf_n_kv(const struct dllm_gguf *gguf);
/* The i-th key (NUL-terminated) and its value, in file order. */
DLLM_API const char *dllm_gguf_kv_key(const struct dllm_gguf *gguf, int64_t i);
DLLM_API const struct dllm_gguf_value *dllm_gguf_kv_value(const struct dllm_gguf *gguf,
                                                          int64_t i);
/* The value of a key, or NULL when absent. */
DLLM_API const struct dllm_gguf_value *dllm_gguf_find(const struct dllm_gguf *gguf,
                                                      const char *key);

/* Element i of an array value (i < arr.n). */
DLLM_API void dllm_gguf_array_get(const struct dllm_gguf_value *array, uint64_t i,
                                  struct dllm_gguf_value *out);

/*
 * Typed look-ups. A missing key gives DLLM_ERR_MISSING ("required metadata key missing: K"),
 * a value of another type or out of range DLLM_ERR_TYPE. Integers of any width are accepted
 * where they fit; floats of either width for f32.
 */
DLLM_API enum dllm_status dllm_gguf_get_u32(const struct dllm_gguf *gguf, const char *key,
                                            uint32_t *out, struct dllm_error *err);
DLLM_API enum dllm_status dllm_gguf_get_f32(const struct dllm_gguf *gguf, const char *key,
                                            float *out, struct dllm_error *err);
DLLM_API enum dllm_status dllm_gguf_get_bool(const struct dllm_gguf *gguf, const char *key,
                                             bool *out, struct dllm_error *err);
/* A string value as a new NUL-terminated copy the caller frees; NUL bytes in it are refused. */
DLLM_API enum dllm_status dllm_gguf_get_str(const struct dllm_gguf *gguf, const char *key,
                                            char **out, struct dllm_error *err);
/* An array value whose elements have type elem (or any type when elem is -1). */
DLLM_API enum dllm_status dllm_gguf_get_array(const struct dllm_gguf *gguf, const char *key,
                                              int elem, const struct dllm_gguf_value **out,
                                              struct dllm_error *err);

DLLM_API int64_t dllm_gguf_n_tensors(const struct dllm_gguf *gguf);
DLLM_API const struct dllm_gguf_tensor *dllm_gguf_tensor(const struct dllm_gguf *gguf,
                                                         int64_t i);
/* The tensor of that name, or NULL. */
DLLM_API const struct dllm_gguf_tensor *dllm_gguf_find_tensor(const struct dllm_gguf *gguf,
                                                              const char *name);

/*
 * Decodes `n` elements of a tensor, starting at element `first` (a multiple of the type's
 * block size), to float. Unsupported types give
 * "unsupported GGUF tensor type: <TYPE> (tensor <name>)".
 */
DLLM_API enum dllm_status dllm_gguf_tensor_decode(const struct dllm_gguf_tensor *tensor,
                                                  int64_t first, int64_t n, float *out,
                                                  struct dllm_error *err);

/* ---- models ----------------------------------------------------------------------------- */

/*
 * Supported architectures (general.architecture): "llada" (LLaDA-8B) and "dream" (Dream-v0-7B).
 * Matrix weights may be Q4_K, Q5_K, Q6_K, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, F16, BF16 or F32, mixed
 * freely (a Q4_K_M file holds Q4_K, Q6_K and F32).
 */

/* Options of dllm_model_open; dllm_model_params_init fills the defaults. */
struct dllm_model_params {
    /*
     * The longest canvas (prompt plus generation area) the caller will run, at most the
     * context length. The memory check counts the weights, a forward context for this many
     * tokens and their logits. 0 (the default) means the model's context length.
     */
    int64_t max_tokens;
};

DLLM_API void dllm_model_params_init(struct dllm_model_params *params);

struct dllm_model;

/*
 * Maps a LLaDA or Dream GGUF file and checks it: the architecture, the hyperparameters and
 * their consistency, every tensor's presence, shape and type, and that the memory needed
 * (params->max_tokens) is available (MemAvailable in /proc/meminfo). params may be NULL for
 * the defaults. Errors name the key or tensor and the values that disagree, e.g.
 * "unsupported model architecture: gpt2 (supported: llada, dream)",
 * "required metadata key missing: llada.rope.freq_base",
 * "tensor blk.0.attn_q.weight is Q2_K: matrix kernels exist for Q4_K, ...",
 * "model needs 9.1 GB but only 6.0 GB is available". On failure *out is NULL.
 * A model is immutable: any number of forward contexts may share it.
 */
DLLM_API enum dllm_status dllm_model_open(const char *path, const struct dllm_model_params *params,
                                          struct dllm_model **out, struct dllm_error *err);

DLLM_API void dllm_model_close(struct dllm_model *model);

/* "llada" or "dream". */
DLLM_API const char *dllm_model_arch(const struct dllm_model *model);
DLLM_API int64_t dllm_model_n_vocab(const struct dllm_model *model);
/* The context length the model was trained for (<arch>.context_length). */
DLLM_API int64_t dllm_model_n_ctx(const struct dllm_model *model);
/* The id of the mask token (tokenizer.ggml.mask_token_id). */
DLLM_API int32_t dllm_model_mask_id(const struct dllm_model *model);
DLLM_API int64_t dllm_model_n_layer(const struct dllm_model *model);
/* d_model, the width of the residual stream. */
DLLM_API int64_t dllm_model_n_embd(const struct dllm_model *model);
DLLM_API int64_t dllm_model_n_head(const struct dllm_model *model);
DLLM_API int64_t dllm_model_n_head_kv(const struct dllm_model *model);
/* The hidden size of the feed-forward networks. */
DLLM_API int64_t dllm_model_n_ff(const struct dllm_model *model);
/*
 * Whether output row i predicts token i+1 rather than token i, so that a sampler reads the
 * row before a slot: diffusion.shift_logits, or by architecture when absent (Dream true,
 * LLaDA false).
 */
DLLM_API bool dllm_model_shift_logits(const struct dllm_model *model);
/* The model's GGUF file (metadata for the tokenizer and chat template). */
DLLM_API const struct dllm_gguf *dllm_model_gguf(const struct dllm_model *model);

/* ---- forward pass ----------------------------------------------------------------------- */

/*
 * A forward context: every buffer one pass over up to max_tokens tokens needs, allocated once,
 * so that passes allocate nothing. One context serves one thread at a time.
 */
struct dllm_forward;

/*
 * A context for passes over at most max_tokens tokens (1 .. the context length) producing
 * at most max_rows logits rows (1 .. max_tokens).
 */
DLLM_API enum dllm_status dllm_forward_new(const struct dllm_model *model, int64_t max_tokens,
                                           int64_t max_rows, struct dllm_forward **out,
                                           struct dllm_error *err);

/*
 * One bidirectional forward pass over the token ids[0 .. n-1] at positions 0 .. n-1 (n at
 * most max_tokens), writing the logits of the positions rows[0 .. n_rows-1] (each in
 * [0, n), n_rows at most max_rows) to logits, row-major [n_rows, n_vocab]. These are the
 * model's raw output rows: no Dream shift is applied (see dllm_model_shift_logits).
 */
DLLM_API enum dllm_status dllm_forward_run(struct dllm_forward *fwd, const int32_t *ids, int64_t n,
                                           const int32_t *rows, int64_t n_rows, float *logits,
                                           struct dllm_error *err);

DLLM_API void dllm_forward_free(struct dllm_forward *fwd);

#ifdef __cplusplus
}
#endif

#endif /* DLLM_H */
