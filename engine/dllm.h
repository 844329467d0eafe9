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
#include <atomic>
typedef std::atomic_bool atomic_bool;
#else
#include <stdatomic.h>
#endif

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
    DLLM_ERR_DEVICE,      /* the GPU failed: a kernel launch, a cuBLAS call */
};

#define DLLM_ERROR_TEXT_MAX 512

/* Caller-owned error detail: the status of the last failure and one line of text. */
struct dllm_error {
    enum dllm_status status;
    char text[DLLM_ERROR_TEXT_MAX];
};

/* The name of a status code ("ok", "malformed input", ...). */
DLLM_API const char *dllm_status_str(enum dllm_status status);

/*
 * Records status and a printf-style message in err (which may be NULL); returns status. For
 * the libraries built on libdllm (the hub client, the synthetic-model writer), whose errors
 * take the same form.
 */
DLLM_API enum dllm_status dllm_error_set(struct dllm_error *err, enum dllm_status status,
                                         const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepends "prefix: " to the text already in err (which may be NULL). */
DLLM_API void dllm_error_prefix(struct dllm_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The library version string, e.g. "0.1.0". */
DLLM_API const char *dllm_version(void);

/* ---- cancel and progress --------------------------------------------------------------- */

/*
 * Every long operation (opening a model, repacking its weights, a forward pass, a generation,
 * and beside libdllm a download and writing a synthetic model) takes the same two things in
 * its params:
 *   const atomic_bool *cancel   may be NULL; when it becomes true (from any thread, or a
 *                               signal handler) the operation stops at its next check and
 *                               returns DLLM_ERR_CANCELLED, keeping what its documentation
 *                               says it keeps and leaving nothing half-made allocated;
 *   dllm_progress_fn progress   may be NULL; called from the thread doing the work, with
 *                               progress_user, as the work goes on (each operation says when).
 * Where the flag is checked: between the layers of a forward pass, between matrices of a
 * repack, between denoising steps, at least once a second in a download, between chunks of a
 * synthetic model.
 */
enum dllm_progress_kind {
    DLLM_PROGRESS_REPACK,   /* the weights repacked for the kernels: done/total bytes */
    DLLM_PROGRESS_FORWARD,  /* a forward pass: done layers begun of total */
    DLLM_PROGRESS_DOWNLOAD, /* a hub download: done/total bytes of one file (dllm-hub.h) */
    DLLM_PROGRESS_SYNTH,    /* a synthetic model written: done/total bytes of tensor data */
};

/*
 * One progress report. Strings are valid during the callback only. The download fields are
 * set for DLLM_PROGRESS_DOWNLOAD only (0 or NULL otherwise).
 */
struct dllm_progress {
    enum dllm_progress_kind kind;
    double fraction; /* of the operation done: 0 first, 1 last */
    int64_t done;    /* in the operation's unit (bytes, layers) */
    int64_t total;
    double rate;      /* units a second over the last seconds; 0 unknown */
    int phase;        /* download: an enum dllm_hub_phase */
    const char *repo; /* download: "org/name" */
    const char *file; /* download: the path inside the repo */
    int file_index;   /* download: 0 .. n_files-1 among the files this call fetches */
    int n_files;
    int attempt;     /* download: 1 for the first request of the file */
    double retry_in; /* download, retry phase: seconds until the next attempt */
    const char *why; /* download, retry phase: the failure ("HTTP 503", ...) */
};

typedef void (*dllm_progress_fn)(const struct dllm_progress *progress, void *user);

/* ---- this machine and this build (dllm doctor) ------------------------------------------ */

/*
 * Writes the instruction-set extensions the matrix kernels use that this CPU and its OS
 * support into buf (size bytes), separated by spaces: "AVX2 FMA F16C AVX512F ...", or ""
 * when it has none of them.
 */
DLLM_API void dllm_cpu_features_text(char *buf, size_t size);

/*
 * The matrix-kernel variant a forward context given kernels = force runs: that one, else
 * (force NULL or "") the fastest this CPU supports ("ref", "avx2", "avxvnni" or "avx512").
 * DLLM_ERR_ARG for an unknown name, DLLM_ERR_UNSUPPORTED for a variant this CPU lacks.
 */
DLLM_API enum dllm_status dllm_kernels_name(const char *force, const char **out,
                                            struct dllm_error *err);

/* Writes the versions of the libraries libdllm runs with into buf: "PCRE2 10.42 2022-12-11". */
DLLM_API void dllm_library_versions(char *buf, size_t size);

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

/* Elements and bytes of one block of a tensor type; 0 for an id no GGML version defines. */
DLLM_API int64_t dllm_type_block_elems(uint32_t type);
DLLM_API size_t dllm_type_block_bytes(uint32_t type);

/* The IEEE binary16 bits nearest to f (ties to even), as GGML's FP16 fields hold them. */
DLLM_API uint16_t dllm_f32_to_fp16(float f);

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

/* How many metadata value types GGUF has: the ids 0 to DLLM_GGUF_N_TYPES - 1. */
#define DLLM_GGUF_N_TYPES 13

/* Bytes of one element of a scalar value type; 0 for strings, arrays and unknown ids. */
DLLM_API size_t dllm_gguf_value_size(uint32_t type);

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
        } arr;                        /* ARRAY */
    };
};

/* One tensor of a GGUF file. */
struct dllm_gguf_tensor {
    const char *name; /* NUL-terminated */
    uint32_t type;    /* enum dllm_type */
    int n_dims;       /* 1..4 */
    int64_t ne[4];    /* shape, ne[0] contiguous; unused dimensions are 1 */
    uint64_t offset;  /* from the start of the data section (of its part, when split) */
    size_t size;      /* bytes */
    const void *data; /* in the mapped file */
};

struct dllm_gguf;

/*
 * Maps and validates a GGUF file. On failure *out is NULL and err says what and where. Part 1 of
 * a split model (NAME-00001-of-0000N.gguf, as llama.cpp's gguf-split writes it) opens every part
 * from the same folder: the metadata are part 1's, the tensors all parts' (each tensor's offset
 * counts from the data section of its own part).
 */
DLLM_API enum dllm_status dllm_gguf_open(const char *path, struct dllm_gguf **out,
                                         struct dllm_error *err);

/* The number of files the model was read from: 1, or a split model's parts. */
DLLM_API int64_t dllm_gguf_n_parts(const struct dllm_gguf *gguf);
/* The part (from 1) whose file holds tensor t of gguf; 1 for a model in one file. */
DLLM_API int64_t dllm_gguf_tensor_part(const struct dllm_gguf *gguf,
                                       const struct dllm_gguf_tensor *t);
/*
 * Whether path names a part of a model split by llama.cpp's gguf-split,
 * "PREFIX-NNNNN-of-MMMMM.gguf" (".gguf" in any case, PREFIX not empty, 1 <= NNNNN <= MMMMM):
 * then *prefix_len is the length of PREFIX, *part NNNNN and *count MMMMM. Reads only the name.
 */
DLLM_API bool dllm_gguf_split_name(const char *path, size_t *prefix_len, int *part, int *count);
/*
 * The path of part `part` (from 1) of `count` of the split model one of whose parts is path,
 * PREFIX being its first prefix_len bytes (from dllm_gguf_split_name): a malloc'd string the
 * caller frees with free(), or NULL when out of memory.
 */
DLLM_API char *dllm_gguf_split_part_path(const char *path, size_t prefix_len, int part, int count);

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
DLLM_API const struct dllm_gguf_value *dllm_gguf_kv_value(const struct dllm_gguf *gguf, int64_t i);
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
DLLM_API const struct dllm_gguf_tensor *dllm_gguf_tensor(const struct dllm_gguf *gguf, int64_t i);
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

/* ---- tokenizer -------------------------------------------------------------------------- */

/*
 * A vocabulary and its byte-level BPE tokenizer (tokenizer.ggml.model = "gpt2"), read from a
 * GGUF file's tokenizer.ggml.* keys. Pre-tokenizers (tokenizer.ggml.pre): qwen2 (Dream),
 * bailingmoe, bailingmoe2 and llada-moe (LLaDA), llama-bpe, llama3 and llama-v3 (Llama 3),
 * gpt-2. Encoding matches llama.cpp's tokenizer id for id on valid UTF-8; bytes that are not
 * valid UTF-8 are kept as pieces of their own, so decoding any encoding gives back its input.
 * A loaded vocabulary is immutable and may be shared by threads.
 */
struct dllm_vocab;

/* Token types, as tokenizer.ggml.token_type stores them. */
enum dllm_token_type {
    DLLM_TOKEN_TYPE_UNDEFINED = 0,
    DLLM_TOKEN_TYPE_NORMAL = 1, /* text of the byte-level alphabet */
    DLLM_TOKEN_TYPE_UNKNOWN = 2,
    DLLM_TOKEN_TYPE_CONTROL = 3,      /* <|im_start|>, <|eot_id|>, BOS, EOS, mask */
    DLLM_TOKEN_TYPE_USER_DEFINED = 4, /* added tokens that are always matched: <tool_call> */
    DLLM_TOKEN_TYPE_UNUSED = 5,       /* [PAD<i>] fillers */
    DLLM_TOKEN_TYPE_BYTE = 6,
};

/* The special tokens a vocabulary may name. */
enum dllm_special_token {
    DLLM_SPECIAL_BOS,  /* tokenizer.ggml.bos_token_id */
    DLLM_SPECIAL_EOS,  /* tokenizer.ggml.eos_token_id */
    DLLM_SPECIAL_EOT,  /* tokenizer.ggml.eot_token_id, else <|eot_id|> or <|im_end|> */
    DLLM_SPECIAL_PAD,  /* tokenizer.ggml.padding_token_id */
    DLLM_SPECIAL_MASK, /* tokenizer.ggml.mask_token_id */
};

/*
 * Builds the tokenizer from a GGUF file's metadata; the vocabulary copies what it needs, so
 * the file may be closed afterwards. Errors name the key and the problem:
 * "unknown pre-tokenizer 'falcon' in tokenizer.ggml.pre (supported: ...)",
 * "required metadata key missing: tokenizer.ggml.merges",
 * "tokenizer.ggml.bos_token_id is 50257, outside the vocabulary of 50257 tokens".
 */
DLLM_API enum dllm_status dllm_vocab_load(const struct dllm_gguf *gguf, struct dllm_vocab **out,
                                          struct dllm_error *err);

DLLM_API void dllm_vocab_free(struct dllm_vocab *vocab);

/* The number of tokens; valid ids are 0 .. size-1. */
DLLM_API int32_t dllm_vocab_size(const struct dllm_vocab *vocab);

/* The id of a special token, or -1 when the vocabulary has none. */
DLLM_API int32_t dllm_vocab_special(const struct dllm_vocab *vocab, enum dllm_special_token which);

/*
 * Whether generation ends at this token: EOS, EOT, and the control tokens <|endoftext|>,
 * <|im_end|>, <|eot_id|> and <|eom_id|>. False for ids out of range.
 */
DLLM_API bool dllm_vocab_is_eog(const struct dllm_vocab *vocab, int32_t id);

/* The type of a token (DLLM_TOKEN_TYPE_UNDEFINED for ids out of range). */
DLLM_API enum dllm_token_type dllm_vocab_token_type(const struct dllm_vocab *vocab, int32_t id);

/*
 * A token's text as the GGUF file stores it ("Ġthe" for " the"), NUL-terminated, with its
 * length in *len (may be NULL); NULL for ids out of range.
 */
DLLM_API const char *dllm_vocab_token_text(const struct dllm_vocab *vocab, int32_t id, size_t *len);

/*
 * The bytes a token stands for: the decoded byte-level text of a normal token (" the"), the
 * text itself of any other token ("<|im_end|>"). A piece may end or start inside a UTF-8
 * character. Not NUL-terminated; NULL for ids out of range.
 */
DLLM_API const char *dllm_vocab_token_bytes(const struct dllm_vocab *vocab, int32_t id,
                                            size_t *len);

/*
 * The length (1 to 4) of the well-formed UTF-8 character at the start of s (n > 0 bytes), or 0
 * when the bytes there do not form one: a check for text that pieces may have split.
 */
DLLM_API size_t dllm_utf8_char_len(const char *s, size_t n);

/*
 * Writes to out the UTF-8 text (1 or 2 bytes, no terminator) of the character that stands for
 * byte b in GPT-2's byte-level BPE, which is the text of b's token; returns its length.
 */
DLLM_API size_t dllm_tokenizer_byte_text(unsigned char b, char *out);

/* The id of the token whose GGUF text is exactly these len bytes, or -1. */
DLLM_API int32_t dllm_vocab_find(const struct dllm_vocab *vocab, const char *text, size_t len);

/* Flags of dllm_vocab_encode, or-ed together. */
enum dllm_encode_flags {
    /* Add BOS before (EOS after) the text when tokenizer.ggml.add_bos_token (add_eos_token)
     * says so; the default of add_bos is false, except for the Llama 3 pre-tokenizers. */
    DLLM_ENCODE_ADD_SPECIAL = 1 << 0,
    /* Match the text of control tokens as those tokens (chat-template text). Otherwise it is
     * ordinary text. User-defined tokens are matched either way, as llama.cpp and Hugging
     * Face tokenizers do. */
    DLLM_ENCODE_PARSE_SPECIAL = 1 << 1,
};

/*
 * Tokenizes len bytes of text (any bytes; NUL is ordinary). *ids receives a malloc'd array
 * the caller frees with free(), *n_ids its length (0 for empty text without BOS/EOS).
 */
DLLM_API enum dllm_status dllm_vocab_encode(const struct dllm_vocab *vocab, const char *text,
                                            size_t len, unsigned flags, int32_t **ids,
                                            int64_t *n_ids, struct dllm_error *err);

/* Flags of dllm_vocab_decode and dllm_decoder_new. */
enum dllm_decode_flags {
    /* Render control, unknown, unused and byte tokens as their text; otherwise they are
     * skipped (normal and user-defined tokens always render). */
    DLLM_DECODE_SPECIAL = 1 << 0,
};

/*
 * The bytes that n token ids stand for, concatenated: a malloc'd, NUL-terminated buffer the
 * caller frees with free(), its length (without the NUL) in *len. An id out of range is
 * DLLM_ERR_ARG.
 */
DLLM_API enum dllm_status dllm_vocab_decode(const struct dllm_vocab *vocab, const int32_t *ids,
                                            int64_t n, unsigned flags, char **text, size_t *len,
                                            struct dllm_error *err);

/*
 * Incremental decoding for display: tokens go in one at a time and only whole UTF-8
 * characters come out. Bytes that begin a character the next token may complete are held
 * back; bytes that can never form a character are passed through as they are.
 */
struct dllm_decoder;

DLLM_API enum dllm_status dllm_decoder_new(const struct dllm_vocab *vocab, unsigned flags,
                                           struct dllm_decoder **out, struct dllm_error *err);

DLLM_API void dllm_decoder_free(struct dllm_decoder *dec);

/*
 * Feeds one token. *text receives the bytes now ready to show (valid until the next call on
 * this decoder), *len their count, possibly 0. An id out of range is DLLM_ERR_ARG and changes
 * nothing.
 */
DLLM_API enum dllm_status dllm_decoder_push(struct dllm_decoder *dec, int32_t id, const char **text,
                                            size_t *len, struct dllm_error *err);

/* Ends the stream: returns the bytes still held (an unfinished character) and forgets them. */
DLLM_API void dllm_decoder_flush(struct dllm_decoder *dec, const char **text, size_t *len);

/* ---- chat templates --------------------------------------------------------------------- */

/*
 * The chat formats dllm renders, recognised from tokenizer.chat_template:
 * LLAMA3 is LLaDA-8B-Instruct's template (that of Llama-3-Instruct): BOS before the first
 * message, "<|start_header_id|>ROLE<|end_header_id|>\n\n" + content with surrounding
 * whitespace trimmed + "<|eot_id|>" per message, then the assistant header.
 * CHATML is Dream-v0-Instruct's (that of Qwen2.5-Instruct): "<|im_start|>ROLE\n" + content +
 * "<|im_end|>\n" per message, after the system message "You are a helpful assistant." when
 * the conversation does not start with one, then "<|im_start|>assistant\n".
 * LING is LLaDA-MoE-Instruct's (Ling 2.0's role tags): "<role>SYSTEM</role>" + the first
 * message's content and "\n" if it is a system message + "detailed thinking off<|role_end|>",
 * then "<role>HUMAN</role>" (user), "<role>ASSISTANT</role>" or "<role>SYSTEM</role>" + content
 * + "<|role_end|>" per message, then "<role>ASSISTANT</role>".
 * QWEN3 is RND1's (that of Qwen3): CHATML without a default system message, an assistant
 * message's text before "</think>" dropped (kept, in "<think>\n...\n</think>\n\n", only after
 * the last user message), and no thinking switch (enable_thinking undefined).
 */
enum dllm_chat_format {
    DLLM_CHAT_LLAMA3,
    DLLM_CHAT_CHATML,
    DLLM_CHAT_LING,
    DLLM_CHAT_QWEN3,
};

/* "llama3", "chatml", "ling" or "qwen3". */
DLLM_API const char *dllm_chat_format_name(enum dllm_chat_format format);

/*
 * One message of a conversation: role "system", "user", "assistant" (or "tool" for CHATML and
 * QWEN3).
 */
struct dllm_chat_message {
    const char *role;    /* NUL-terminated */
    const char *content; /* NUL-terminated, UTF-8 */
};

struct dllm_chat_template;

/*
 * Recognises a chat template's source (Jinja text). The vocabulary supplies the BOS text a
 * LLAMA3 template inserts and must outlive the template. An unrecognised source is
 * DLLM_ERR_UNSUPPORTED.
 */
DLLM_API enum dllm_status dllm_chat_template_new(const char *source, size_t len,
                                                 const struct dllm_vocab *vocab,
                                                 struct dllm_chat_template **out,
                                                 struct dllm_error *err);

/* The same for a GGUF file's tokenizer.chat_template (DLLM_ERR_MISSING when absent). */
DLLM_API enum dllm_status dllm_chat_template_load(const struct dllm_gguf *gguf,
                                                  const struct dllm_vocab *vocab,
                                                  struct dllm_chat_template **out,
                                                  struct dllm_error *err);

DLLM_API void dllm_chat_template_free(struct dllm_chat_template *tmpl);

DLLM_API enum dllm_chat_format dllm_chat_template_format(const struct dllm_chat_template *tmpl);

/*
 * Renders a conversation (n >= 1 messages) as the model's template does with the generation
 * prompt, the text ending where the assistant's answer begins. *text receives a malloc'd,
 * NUL-terminated string the caller frees with free(), *len its length. A role the template
 * would drop is DLLM_ERR_ARG.
 */
DLLM_API enum dllm_status dllm_chat_render(const struct dllm_chat_template *tmpl,
                                           const struct dllm_chat_message *msgs, size_t n,
                                           char **text, size_t *len, struct dllm_error *err);

/*
 * The ids a model is prompted with: the rendered conversation encoded with
 * DLLM_ENCODE_PARSE_SPECIAL and no added BOS (the template already holds it), as the
 * reference implementations do. *ids is malloc'd; the caller frees it with free().
 */
DLLM_API enum dllm_status dllm_chat_encode(const struct dllm_chat_template *tmpl,
                                           const struct dllm_chat_message *msgs, size_t n,
                                           int32_t **ids, int64_t *n_ids, struct dllm_error *err);

/* ---- models ----------------------------------------------------------------------------- */

/*
 * Supported architectures (general.architecture): "llada" (LLaDA-8B) and "dream" (Dream-v0-7B).
 * Matrix weights may be Q4_K, Q5_K, Q6_K, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, F16, BF16 or F32, mixed
 * freely (a Q4_K_M file holds Q4_K, Q6_K and F32).
 */

/*
 * The longest canvas (prompt plus generation area) that model loading and sessions plan for
 * when not told otherwise, or the model's context length when that is shorter. Dream's
 * context length is 131072, far beyond what a diffusion canvas uses.
 */
#define DLLM_MAX_CANVAS_DEFAULT 4096

/* Options of dllm_model_open; dllm_model_params_init fills the defaults. */
struct dllm_model_params {
    const atomic_bool *cancel; /* checked between layers while the tensors are checked */
};

DLLM_API void dllm_model_params_init(struct dllm_model_params *params);

struct dllm_model;

/*
 * Maps a LLaDA, Dream, LLaDA-MoE or RND1 GGUF file and checks it: the architecture, the
 * hyperparameters and their consistency, every tensor's presence, shape and type. params may be
 * NULL for the defaults. Errors name the key or tensor and the values that disagree, e.g.
 * "unsupported model architecture: gpt2 (supported: llada, dream, llada-moe, rnd1)",
 * "required metadata key missing: llada.rope.freq_base",
 * "tensor blk.0.attn_q.weight is Q2_K: matrix kernels exist for Q4_K, ...". The memory check
 * comes later, where the canvas is known (dllm_forward_new). On failure *out is NULL.
 * A model is immutable: any number of forward contexts may share it.
 */
DLLM_API enum dllm_status dllm_model_open(const char *path, const struct dllm_model_params *params,
                                          struct dllm_model **out, struct dllm_error *err);

DLLM_API void dllm_model_close(struct dllm_model *model);

/* "llada", "dream", "llada-moe" or "rnd1". */
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
/* The hidden size of the feed-forward networks (a MoE file's feed_forward_length, or 0). */
DLLM_API int64_t dllm_model_n_ff(const struct dllm_model *model);

/*
 * The routed experts of a mixture-of-experts model (llada-moe, rnd1): each layer's FFN is
 * n_expert experts of hidden size ff, of which each position uses the n_used its router
 * ranks highest, weighted by their softmax probabilities (divided by the kept ones' sum when
 * weights_normalized). All zero (router_type NULL) for a dense model.
 */
struct dllm_model_experts {
    int64_t n_expert, n_used, ff;
    bool weights_normalized;
    const char *router_type; /* the router matrix's tensor type, "F32" */
};

DLLM_API struct dllm_model_experts dllm_model_experts(const struct dllm_model *model);
/*
 * Whether output row i predicts token i+1 rather than token i, so that a sampler reads the
 * row before a slot: diffusion.shift_logits, or by architecture when absent (Dream and RND1
 * true, LLaDA and LLaDA-MoE false).
 */
DLLM_API bool dllm_model_shift_logits(const struct dllm_model *model);
/* The quantization the file says it has (general.file_type): "Q4_K_M", "Q8_0", ... or
 * "unknown". */
DLLM_API const char *dllm_model_file_type(const struct dllm_model *model);
/* The model's GGUF file (metadata for the tokenizer and chat template). */
DLLM_API const struct dllm_gguf *dllm_model_gguf(const struct dllm_model *model);

/* ---- thread pools ----------------------------------------------------------------------- */

/*
 * The threads forward passes and the sampler run on: the caller of a pass plus n - 1 workers.
 * A pool is owned by whoever creates it (a session creates its own; dllm bench and dllm
 * logits make one for their forward context) and must outlive the contexts that use it. One
 * thread at a time may run work on it.
 */
struct dllm_threadpool;

/* A pool of n_threads threads in all (0: one per online core, at most 1024). DLLM_ERR_ARG
 * outside 0 .. 1024. */
DLLM_API enum dllm_status dllm_threadpool_new(int n_threads, struct dllm_threadpool **out,
                                              struct dllm_error *err);

/* Stops and joins the workers. Accepts NULL. */
DLLM_API void dllm_threadpool_free(struct dllm_threadpool *pool);

/* The number of threads that run work, the caller included. */
DLLM_API int dllm_threadpool_size(const struct dllm_threadpool *pool);

/* ---- forward pass ----------------------------------------------------------------------- */

/* ---- GPUs (the CUDA backend) ------------------------------------------------------------ */

/* The CUDA backend needs compute capability 8.0 (Ampere) or newer. */
#define DLLM_GPU_MIN_MAJOR 8

/* What the CUDA runtime reports of a GPU and of the driver. */
struct dllm_gpu_info {
    int index;
    char name[256];
    int major, minor;     /* compute capability */
    uint64_t free_bytes;  /* device memory free now */
    uint64_t total_bytes; /* device memory in all */
    int driver_version;   /* the CUDA version the driver supports, 1000 * major + 10 * minor */
    int runtime_version;  /* the CUDA runtime libdllm runs with, the same way */
};

/* Whether this libdllm was built with the CUDA backend (the "cuda" backend). */
DLLM_API bool dllm_gpu_built(void);

/*
 * The number of CUDA GPUs. DLLM_ERR_UNSUPPORTED without the CUDA backend ("this libdllm was
 * built without CUDA"), without a usable NVIDIA driver ("no usable NVIDIA driver: ...") or
 * with no GPU ("no CUDA GPU: ..."), the CUDA runtime's words in the text.
 */
DLLM_API enum dllm_status dllm_gpu_count(int *n, struct dllm_error *err);

/* What the runtime reports of GPU index; the errors of dllm_gpu_count, or DLLM_ERR_ARG. */
DLLM_API enum dllm_status dllm_gpu_info(int index, struct dllm_gpu_info *out,
                                        struct dllm_error *err);

/*
 * The device memory a forward context of the CUDA backend needs for these params (the weights
 * as their GGUF blocks, the FP16 scratch or resident copies, the activations, the logits
 * rows); 0 in a build without CUDA. dllm_forward_new refuses with DLLM_ERR_NOMEM ("needs X
 * GB of GPU memory but Y GB is free") when the GPU has less free.
 */
struct dllm_forward_params;
DLLM_API uint64_t dllm_gpu_bytes(const struct dllm_model *model,
                                 const struct dllm_forward_params *params);

/*
 * Whether the CUDA backend runs the model: DLLM_OK, else DLLM_ERR_UNSUPPORTED saying why (a
 * mixture-of-experts model, a tensor type its kernels lack, a build without CUDA), the
 * refusal dllm_forward_new would give; a choice of device (auto) can fall back on it.
 */
DLLM_API enum dllm_status dllm_gpu_check_model(const struct dllm_model *model,
                                               struct dllm_error *err);

/*
 * Whether GPU index runs a forward context of the CUDA backend for model and params with
 * extra_bytes of device memory besides (a request's K/V caches, dllm_request_cache_bytes):
 * DLLM_OK, else the refusal, checked in this order: dllm_forward_new's of out-of-range
 * max_tokens or max_rows (DLLM_ERR_ARG); dllm_gpu_check_model's; dllm_gpu_info's;
 * DLLM_ERR_UNSUPPORTED "GPU i (NAME) has compute capability 7.5; the CUDA backend needs 8.0 or
 * newer"; DLLM_ERR_NOMEM "the model needs X GB of GPU memory [with its K/V cache] on GPU i but
 * Y GB is free". gpu gets what the runtime reported of the GPU once it got that far.
 */
DLLM_API enum dllm_status dllm_gpu_check(int index, const struct dllm_model *model,
                                         const struct dllm_forward_params *params,
                                         uint64_t extra_bytes, struct dllm_gpu_info *gpu,
                                         struct dllm_error *err);

/*
 * A forward context: every buffer one pass over up to max_tokens tokens needs, allocated once,
 * so that passes allocate nothing. One context serves one thread at a time.
 */
struct dllm_forward;

/* Options of dllm_forward_new; dllm_forward_params_init fills the defaults. */
struct dllm_forward_params {
    int64_t max_tokens;           /* tokens a pass may take, 1 .. the context length */
    int64_t max_rows;             /* logits rows a pass may return, 1 .. max_tokens */
    struct dllm_threadpool *pool; /* the threads passes run on (required; not owned) */
    const char *backend;          /* NULL or "cpu"; "cuda" in a build with the CUDA backend */
    const char *kernels;          /* NULL: the fastest the CPU runs; "ref", "avx2", ... */
    int device;                   /* the CUDA backend's GPU, 0 .. dllm_gpu_count() - 1 */
    /* The CUDA backend keeps FP16 copies of the matrices resident instead of dequantizing
     * each one into a scratch buffer before its product (faster, about 3.5x the memory of
     * Q4_K weights). */
    bool gpu_resident;
    /*
     * Before allocating, the context checks that what it keeps in host memory (on the CPU
     * the weights, and its buffers) and the caller's logits rows (max_rows of them) fit in the
     * memory available (MemAvailable in /proc/meminfo), else DLLM_ERR_NOMEM "model needs 9.1
     * GB but only 6.0 GB is available"; true skips the check.
     */
    bool skip_memory_check;
    /*
     * Progress: DLLM_PROGRESS_REPACK while the context is created (0 first, 1 last), and
     * DLLM_PROGRESS_FORWARD in every pass as each layer begins (done = the layer's index,
     * total = n_layer) and once at the end (done = total). Called on the thread that creates
     * the context or runs the pass.
     */
    dllm_progress_fn progress;
    void *progress_user;
    const atomic_bool *cancel; /* checked between matrices while repacking */
};

DLLM_API void dllm_forward_params_init(struct dllm_forward_params *params);

/*
 * A context for passes of a model on a backend. Results do not depend on the thread count.
 * The SIMD CPU variants repack the model's quantized matrices into the context (their panel
 * layout, about as large as the file's tensors: up to a ninth larger for the 32-element
 * types) and release the file's pages of them, so the weights stay resident once per context;
 * this reads the whole model, which takes seconds for a 5 GB file. On failure (a cancel
 * included) nothing is left allocated.
 */
DLLM_API enum dllm_status dllm_forward_new(const struct dllm_model *model,
                                           const struct dllm_forward_params *params,
                                           struct dllm_forward **out, struct dllm_error *err);

/*
 * K/V reuse between passes (Fast-dLLM's prefix and dual caches, NVlabs/Fast-dLLM
 * llada/generate.py): every layer's keys and values for n_tokens positions, kept by a pass
 * that computes some positions for the passes after it that compute others. A cache belongs to
 * the forward context it was made for; one pass at a time uses it.
 */
struct dllm_kv_cache;

/*
 * How a cache stores keys and values. Every pass that uses a float16 cache reads all its keys
 * and values as stored: those of the positions it computes are rounded to binary16 too before
 * its attention reads them, so a cached pass on a canvas unchanged since its refresh gives the
 * refresh's logits, as with float32.
 */
enum dllm_cache_type {
    DLLM_CACHE_F16, /* "f16": IEEE binary16, rounded to nearest even; half the bytes (default) */
    DLLM_CACHE_F32, /* "f32": float32, the values as computed */
};

DLLM_API const char *dllm_cache_type_name(enum dllm_cache_type type);
DLLM_API bool dllm_cache_type_parse(const char *name, enum dllm_cache_type *out);

/* Bytes of a cache of a type for n_tokens positions of the model (on every backend). */
DLLM_API uint64_t dllm_kv_bytes(const struct dllm_model *model, int64_t n_tokens,
                                enum dllm_cache_type type);

/* Bytes of a cache of a type for n_tokens positions of a context's model. */
DLLM_API size_t dllm_kv_cache_bytes(const struct dllm_forward *fwd, int64_t n_tokens,
                                    enum dllm_cache_type type);

/*
 * A cache of a type for n_tokens (1 .. max_tokens) positions. Unless skip_memory_check,
 * DLLM_ERR_NOMEM when its bytes exceed MemAvailable ("a K/V cache of X GB but only Y GB is
 * available"); on a GPU, whatever skip_memory_check says, when they exceed the GPU's free
 * memory ("... GB of GPU memory is free"). It needs no memory beyond its bytes: a float16 cache's
 * layer is converted into the context's own K/V buffers while a pass computes that layer.
 */
DLLM_API enum dllm_status dllm_kv_cache_new(struct dllm_forward *fwd, int64_t n_tokens,
                                            enum dllm_cache_type type, bool skip_memory_check,
                                            struct dllm_kv_cache **out, struct dllm_error *err);

DLLM_API void dllm_kv_cache_free(struct dllm_kv_cache *cache);

/* What a sampler reads of one logits row l[0 .. n_vocab-1]. */
struct dllm_row_stats {
    int32_t argmax; /* the first index of the largest logit */
    float max;      /* l[argmax] */
    float second;   /* the largest logit at any other index (the top-2 margin is max - second) */
    double lse;     /* ln sum_v e^l[v] */
    double entropy; /* -sum_v p[v] ln p[v] of p = softmax(l), in nats */
};

/*
 * Where a pass's time went, in milliseconds. The CPU backend's ops run to completion on the
 * calling thread (its pool's workers helping), timed by its clock, so the four add up to the
 * pass; the CUDA backend's ops return before the GPU is done, so it times them by events
 * recorded on its stream between the same groups of ops (the GPU's time, read when the pass
 * is done; recording them costs the host about a microsecond each, a dozen a layer). The
 * progress callback's time is left out.
 */
struct dllm_pass_phases {
    double gemm_ms;       /* matrix products: Q, K, V, O and the FFN's (MoE: routers, experts) */
    double attention_ms;  /* the queries over the keys and values */
    double norms_rope_ms; /* the rest of the layers: embedding, norms, biases, RoPE, SwiGLU,
                             residual adds, row gathers */
    double output_ms;     /* the final norm, the output projection and the rows' statistics */
};

/* One pass: what to compute and where its logits go. */
struct dllm_pass {
    const int32_t *ids;  /* [n_tokens] token ids at positions 0 .. n_tokens-1 */
    int64_t n_tokens;    /* 1 .. max_tokens */
    const int32_t *rows; /* [n_rows] positions whose logits are wanted, in [begin, end) */
    int64_t n_rows;      /* 0 .. max_rows */
    /*
     * [n_rows, n_vocab] row-major, in rows' order; NULL with stats: no row is copied out. Give
     * it 64-byte alignment (aligned_alloc): the CPU backend writes such memory in place, and
     * other memory through a buffer of its own (a copy, so that no two threads write one line)
     */
    float *logits;
    /* checked between layers: DLLM_ERR_CANCELLED, logits unset, the context usable */
    const atomic_bool *cancel;
    /*
     * NULL: every position is computed (begin and end are ignored). A cache (of at least
     * n_tokens positions): only the positions [begin, end) are computed, their keys and values
     * are written into the cache, and their queries attend over all n_tokens positions, the
     * others' keys and values read from the cache as an earlier pass left them. A pass with
     * begin 0 and end n_tokens computes everything exactly and fills the cache (a refresh).
     * With a float16 cache every key and value the attention reads is rounded to binary16.
     */
    struct dllm_kv_cache *cache;
    int64_t begin, end;
    /*
     * NULL, or [n_rows]: each row's statistics, computed where the logits are (the same with
     * logits NULL, when they are all that leaves the backend)
     */
    struct dllm_row_stats *stats;
    /*
     * A mixture-of-experts model's routing (ignored for a dense one), each NULL or filled for
     * the positions the pass computes: experts [n_layer, n_tokens, n_used] the experts each
     * position's FFN used, most probable first; expert_margins [n_layer, n_tokens] the router
     * logit of the last kept expert minus that of the best one left out.
     */
    int32_t *experts;
    float *expert_margins;
    /* NULL, or set to the pass's time by phase (left as it was when the pass fails) */
    struct dllm_pass_phases *phases;
};

/*
 * One bidirectional forward pass. The logits are the model's raw output rows: no Dream shift
 * is applied (see dllm_model_shift_logits). A failure on a GPU (a kernel launch, a cuBLAS call,
 * an error the device reports asynchronously) ends the pass that met it with DLLM_ERR_DEVICE,
 * the text naming the call and the CUDA error string; the context then refuses every pass.
 */
DLLM_API enum dllm_status dllm_forward_run(struct dllm_forward *fwd, const struct dllm_pass *pass,
                                           struct dllm_error *err);

/* The kernel variant the context runs ("avx512", ...). */
DLLM_API const char *dllm_forward_kernels(const struct dllm_forward *fwd);

DLLM_API void dllm_forward_free(struct dllm_forward *fwd);

/* ---- sampler settings ------------------------------------------------------------------- */

/*
 * The reference a generation follows. Both fill the generation area's
 * masks over a number of steps and never re-mask a committed token.
 *   LLADA: LLaDA generate.py. Blocks of block_length tile the generation area, left to right;
 *          a block that began with n masks commits floor(n/s) + [i < n mod s] tokens at its
 *          step i (s = steps / blocks). Proposals: argmax, or at temperature > 0 a float64
 *          Gumbel-max sample; confidence by `remasking`. top_p and top_k must be off.
 *   DREAM: Dream diffusion_generate. No blocks unless block_length is set. Step i commits
 *          int(N (1 - tau_{i+1}/tau_i)) of the N masks left, with tau = float32
 *          linspace(1, eps, s + 1), and the last step all of them. Proposals and confidences
 *          by `alg` after temperature, top-p and top-k, in that order.
 * Candidates are the masked slots of the current block; the quota's most confident commit,
 * ties to the lower position. With alg_temp > 0 the positions are instead drawn without
 * replacement from softmax(confidence / alg_temp). With a threshold, every candidate at
 * least that confident commits, and always the most confident one; each block then runs until
 * it is full and steps do not apply.
 */
enum dllm_sampler_kind {
    DLLM_SAMPLER_LLADA,
    DLLM_SAMPLER_DREAM,
};

/* LLaDA's confidence of a proposal. */
enum dllm_remasking {
    DLLM_REMASKING_LOW_CONFIDENCE, /* "low_confidence": its temperature-1 softmax probability */
    DLLM_REMASKING_RANDOM,         /* "random": a uniform draw in [0, 1) */
};

/* Dream's confidence of a proposal, from the filtered distribution p. */
enum dllm_alg {
    DLLM_ALG_ORIGIN,       /* "origin": none; each mask commits with probability 1 - s/t */
    DLLM_ALG_MASKGIT_PLUS, /* "maskgit_plus": p of the proposal */
    DLLM_ALG_TOPK_MARGIN,  /* "topk_margin": top-1 minus top-2 probability */
    DLLM_ALG_ENTROPY,      /* "entropy": sum p ln(p + 1e-10), larger is more certain */
};

/*
 * K/V reuse between the steps of a block (NVlabs/Fast-dLLM llada/generate.py,
 * generate_with_prefix_cache and generate_with_dual_cache). An approximation: the keys and
 * values taken from the cache are those of the block's first step, not of the current canvas.
 * Each block's first step is a refresh: an exact pass over the whole canvas that fills the
 * cache and gives that step's logits. Dream's passes start one slot before the block, whose
 * row predicts the block's first slot.
 */
enum dllm_cache_mode {
    DLLM_CACHE_NONE,   /* "none": every step computes every position exactly (the default) */
    DLLM_CACHE_PREFIX, /* "prefix": later steps compute the block and everything after it */
    DLLM_CACHE_DUAL,   /* "dual": later steps compute the block only */
};

/* Sampler settings; dllm_sampler_params_init fills the defaults of a kind. */
struct dllm_sampler_params {
    enum dllm_sampler_kind kind;
    int64_t gen_length;            /* masked slots after the prompt */
    int64_t steps;                 /* denoising steps in all (not used with a threshold) */
    int64_t block_length;          /* 0: one block over the whole generation area */
    double temperature;            /* 0: argmax proposals */
    double top_p;                  /* DREAM; in (0, 1], 1: off */
    int64_t top_k;                 /* DREAM; 0: off */
    double threshold;              /* 0: off, else in (0, 1] */
    enum dllm_remasking remasking; /* LLADA */
    enum dllm_alg alg;             /* DREAM */
    double alg_temp;               /* 0: the most confident positions commit */
    double eps;                    /* DREAM; the last timestep, in [0, 1) */
    double cfg_scale;              /* guidance weight >= 0, 0: off; adds a prompt-masked pass */
    uint64_t seed;                 /* the one source of randomness of a run */
    bool early_stop;               /* stop once the text before the first end-of-generation
                                      is final */
    enum dllm_cache_mode cache;    /* K/V reuse between the steps of a block; NONE: off */
    /* How that cache stores keys and values; F16 (the default) */
    enum dllm_cache_type cache_type;
};

/*
 * The defaults: LLADA gen_length 128, steps 128, block_length 32, temperature 0,
 * low_confidence (LLaDA's chat demo); DREAM gen_length 128, steps 128, no blocks, temperature
 * 0.2, top_p 0.95, entropy, eps 1e-3 (Dream's README example). Both: no threshold, alg_temp 0,
 * cfg_scale 0, seed 0, early_stop on.
 */
DLLM_API void dllm_sampler_params_init(struct dllm_sampler_params *params,
                                       enum dllm_sampler_kind kind);

/* The sampler a model's architecture runs with: LLADA for llada and llada-moe, else DREAM. */
DLLM_API enum dllm_sampler_kind dllm_model_sampler_kind(const struct dllm_model *model);

/*
 * DLLM_ERR_ARG when params cannot run, with a message that names the values that would work,
 * e.g. "steps 30 is not a multiple of the 4 blocks (gen length 128 / block length 32): use 28
 * or 32".
 */
DLLM_API enum dllm_status dllm_sampler_params_check(const struct dllm_sampler_params *params,
                                                    struct dllm_error *err);

/* Names as the references spell them ("low_confidence", "maskgit_plus"), and back. */
DLLM_API const char *dllm_remasking_name(enum dllm_remasking remasking);
DLLM_API bool dllm_remasking_parse(const char *name, enum dllm_remasking *out);
DLLM_API const char *dllm_alg_name(enum dllm_alg alg);
DLLM_API bool dllm_alg_parse(const char *name, enum dllm_alg *out);
DLLM_API const char *dllm_cache_mode_name(enum dllm_cache_mode mode);
DLLM_API bool dllm_cache_mode_parse(const char *name, enum dllm_cache_mode *out);

/* One token a denoising step wrote: canvas slot (prompt included), token id, confidence. */
struct dllm_commit {
    int32_t pos;
    int32_t token;
    double conf;
};

/* ---- generation sessions ---------------------------------------------------------------- */

/*
 * A session generates answers with one model on its own worker thread and reports every
 * denoising step through a callback. It owns its tokenizer, chat template, forward context
 * and sampler; the model is shared read-only and must outlive the session.
 */
struct dllm_session;

/* Options of dllm_session_new; dllm_session_params_init fills the defaults. */
struct dllm_session_params {
    /* The longest canvas (prompt plus generation area) a request may use; 0 (the default):
     * DLLM_MAX_CANVAS_DEFAULT, or the model's context length when shorter. The memory check
     * of dllm_forward_new runs for it. */
    int64_t max_canvas;
    /* The logits rows one pass may return, 1 .. max_canvas: a request's block length (its
     * gen_length without blocks) may not exceed it; 0 (the default): max_canvas. A GPU holds
     * that many rows of n_vocab floats up to 256, and computes more in groups of 256. */
    int64_t max_rows;
    /* Threads of the session's own pool, the worker included; 0 (the default): one per core. */
    int threads;
    const char *kernels;    /* as struct dllm_forward_params' */
    const char *backend;    /* as struct dllm_forward_params' */
    int device;             /* as struct dllm_forward_params' */
    bool gpu_resident;      /* as struct dllm_forward_params' */
    bool skip_memory_check; /* as struct dllm_forward_params' */
    /* DLLM_PROGRESS_REPACK while dllm_session_new prepares the weights; cancel stops it. */
    dllm_progress_fn progress;
    void *progress_user;
    const atomic_bool *cancel;
};

DLLM_API void dllm_session_params_init(struct dllm_session_params *params);

/* One generation request. The session copies what it needs before dllm_session_generate
 * returns. */
struct dllm_request {
    /* The conversation, rendered through the model's chat template; the answer continues it
     * as the assistant. */
    const struct dllm_chat_message *messages;
    size_t n_messages;
    /* Instead of messages: raw text, encoded as plain text (BOS only where the model's
     * add_bos_token says so, control-token text not parsed). NULL to use messages. */
    const char *raw_prompt;
    /* Sampler settings; gen_length is the answer's length in tokens (the canvas masks). */
    struct dllm_sampler_params sampler;
    /*
     * May be NULL. When it becomes true (any thread, or a signal handler) the run stops inside
     * the forward pass at the next layer: the canvas of the last finished step is kept and
     * reported by DLLM_EVENT_DONE with cancelled set. dllm_session_cancel does the same.
     */
    const atomic_bool *cancel;
    /*
     * With a cache: at every step that reads the cache, also run the exact pass over the same
     * canvas and report how far the cached step's logits rows are from it (DLLM_EVENT_STEP's
     * check_* fields; the exact pass's time is left out of forward_ms). The run itself is
     * unchanged: the cached logits are the ones sampled. It adds a full pass to those steps.
     */
    bool check_cache;
};

enum dllm_event_kind {
    DLLM_EVENT_START,  /* the prompt is encoded and the canvas laid out */
    DLLM_EVENT_NOTICE, /* something the user should know: turns dropped to fit the context */
    DLLM_EVENT_STEP,   /* one denoising step finished */
    DLLM_EVENT_DONE,   /* the answer, complete, stopped early or cancelled */
    DLLM_EVENT_ERROR,  /* the request failed; message says why */
};

/*
 * What a session reports. Pointers are valid only during the callback. The canvas is the
 * whole sequence the model sees: n_prompt prompt ids, then the generation area, where masks
 * (dllm_model_mask_id) are slots not yet committed.
 */
struct dllm_event {
    enum dllm_event_kind kind;
    const char *message;   /* NOTICE and ERROR: one line */
    const int32_t *canvas; /* START, STEP, DONE: [canvas_len] */
    int64_t canvas_len, n_prompt;
    int64_t n_steps; /* planned steps; 0 with a threshold (blocks run until
                        full) */
    int64_t n_blocks;
    int64_t step, block;                 /* STEP: from 0, over the whole run */
    const struct dllm_commit *committed; /* STEP: what this step wrote, selection order */
    int64_t n_committed;
    bool has_best_left;           /* STEP: whether best_left_conf is known */
    double best_left_conf;        /* STEP: best confidence left masked in the block */
    int64_t masks_left;           /* STEP, DONE */
    double forward_ms, sample_ms; /* STEP: this step's forward pass(es) and sampling */
    const char *text;             /* DONE: the answer up to its first end-of-generation
                                     token, control tokens left out, NUL-terminated; each
                                     run of masks a cancelled run left shows as " \u2026 " */
    size_t text_before_gap;       /* DONE: bytes of text before its first such gap (its
                                     length when it has none): what a next turn may keep */
    const size_t *gaps;           /* DONE: [n_gaps] byte offsets in text of each such gap,
                                     ascending (text may hold the same characters elsewhere) */
    int64_t n_gaps;
    const int32_t *tokens; /* DONE: the committed ids before that token (masks a
                              cancelled run left are not among them) */
    int64_t n_tokens;
    int64_t steps_run;        /* DONE */
    bool stopped_early;       /* DONE: the early-stop rule ended the run */
    bool cancelled;           /* DONE: dllm_session_cancel ended the run */
    double total_ms;          /* DONE: from the request to the answer */
    int64_t dropped_messages; /* NOTICE, DONE: oldest messages left out to fit */
    int64_t refreshes;        /* STEP: passes that refreshed a K/V cache (with CFG, two a block) */
    int64_t computed;         /* STEP: canvas positions the step's passes computed, summed */
    int64_t cache_bytes;      /* START: bytes of the request's K/V caches (0 without a cache) */
    /* STEP, with check_cache, at a step that read the cache: the cached rows against the
     * exact pass's (conditional rows, before CFG): the smallest cosine, the largest relative
     * L2 error |cached - exact| / |exact|, how many of check_rows have the same argmax. */
    bool checked;
    double check_cos_min, check_rel_max, check_ms;
    int64_t check_argmax_same, check_rows;
    /* STEP: logits rows the step's passes copied out, summed (0 when the rows' statistics
     * sufficed; docs/api.md says when) */
    int64_t rows_out;
};

/* Receives a session's events on its worker thread; it must not call back into the session
 * except dllm_session_cancel. */
typedef void (*dllm_event_fn)(const struct dllm_event *event, void *user);

/*
 * Creates a session: loads the tokenizer and (when the file has one) the chat template,
 * sizes the forward context and sampler for params->max_canvas (params may be NULL), and
 * starts the worker thread.
 */
DLLM_API enum dllm_status dllm_session_new(const struct dllm_model *model,
                                           const struct dllm_session_params *params,
                                           struct dllm_session **out, struct dllm_error *err);

/* Cancels and waits for a running request, stops the worker and frees everything. */
DLLM_API void dllm_session_free(struct dllm_session *session);

/* Whether the model's file has a chat template dllm recognises (requests with messages). */
DLLM_API bool dllm_session_has_template(const struct dllm_session *session);

/* The session's tokenizer. */
DLLM_API const struct dllm_vocab *dllm_session_vocab(const struct dllm_session *session);

/* The longest canvas (prompt plus answer) a request may use. */
DLLM_API int64_t dllm_session_max_canvas(const struct dllm_session *session);

/*
 * Bytes of the K/V caches a request with these sampler settings keeps for a canvas of
 * canvas_len tokens of the model, where the session's backend keeps them (the GPU's memory for
 * the CUDA backend): 0 without a cache mode, two caches with classifier-free guidance.
 */
DLLM_API uint64_t dllm_request_cache_bytes(const struct dllm_model *model, int64_t canvas_len,
                                           const struct dllm_sampler_params *sampler);

/*
 * Starts a request on the worker and returns at once; events go to fn. Checks what it can
 * first (DLLM_ERR_ARG: settings that cannot run, no chat template for messages, a session
 * already busy) and then reports nothing. Later failures arrive as DLLM_EVENT_ERROR.
 */
DLLM_API enum dllm_status dllm_session_generate(struct dllm_session *session,
                                                const struct dllm_request *request,
                                                dllm_event_fn fn, void *user,
                                                struct dllm_error *err);

/* Stops the running request as its cancel flag would (inside the forward pass, at the next
 * layer), keeping the canvas of the last finished step; any thread may call it; nothing
 * happens when idle. */
DLLM_API void dllm_session_cancel(struct dllm_session *session);

/* Waits until the session has no request running (after its DONE or ERROR event). */
DLLM_API void dllm_session_wait(struct dllm_session *session);

#ifdef __cplusplus
}
#endif

#endif /* DLLM_H */
