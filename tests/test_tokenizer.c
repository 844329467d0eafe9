/*
 * Tokenizer: llama.cpp's test vectors id for id, decoding back to the input, special tokens,
 * the incremental decoder, and malformed vocabulary metadata.
 */
#define _GNU_SOURCE /* memmem */
#include "dllm.h"
#include "fixtures.h"
#include "gguf_edit.h"
#include "vocab_fixture.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DREAM "tokenizer/dream-vocab.gguf"
#define GPT2  "tokenizer/llamacpp-tests/ggml-vocab-gpt-2.gguf"
#define LLADA "models/llada-tiny-q4km.gguf"

static struct dllm_gguf *open_gguf(const char *rel)
{
    char *path = fixture_path(rel);
    struct dllm_gguf *g;
    struct dllm_error err;
    ck_assert_msg(dllm_gguf_open(path, &g, &err) == DLLM_OK, "%s: %s", rel, err.text);
    free(path);
    return g;
}

static struct dllm_vocab *load_vocab(const struct dllm_gguf *g)
{
    struct dllm_vocab *v;
    struct dllm_error err;
    ck_assert_msg(dllm_vocab_load(g, &v, &err) == DLLM_OK, "%s", err.text);
    return v;
}

static uint32_t file_u32(const struct dllm_gguf *g, const char *key)
{
    uint32_t v;
    struct dllm_error err;
    ck_assert_msg(dllm_gguf_get_u32(g, key, &v, &err) == DLLM_OK, "%s", err.text);
    return v;
}

static void encode_ok(const struct dllm_vocab *v, const char *text, size_t len, unsigned flags,
                      int32_t **ids, int64_t *n)
{
    struct dllm_error err;
    ck_assert_msg(dllm_vocab_encode(v, text, len, flags, ids, n, &err) == DLLM_OK, "%s", err.text);
}

/* Decodes and checks the result is exactly len bytes of want. */
static void assert_decodes_to(const struct dllm_vocab *v, const int32_t *ids, int64_t n,
                              unsigned flags, const char *want, size_t len)
{
    char *text;
    size_t got;
    struct dllm_error err;
    ck_assert_msg(dllm_vocab_decode(v, ids, n, flags, &text, &got, &err) == DLLM_OK, "%s",
                  err.text);
    ck_assert_uint_eq(got, len);
    ck_assert_msg(memcmp(text, want, len) == 0, "decoded text differs");
    ck_assert_int_eq(text[got], 0);
    free(text);
}

/* ---- llama.cpp's vectors ------------------------------------------------------------------ */

/* One test string and the ids llama.cpp gives it. */
struct vector {
    const char *text;
    size_t len;
    int32_t ids[512];
    int n;
};

struct vector_set {
    const char *vocab;
    const char *inp, *out; /* under tokenizer/llamacpp-tests/ */
    struct dllm_gguf *gguf;
    struct dllm_vocab *v;
    char *inp_data, *out_data;
    struct vector cases[64];
    int n;
};

static struct vector_set sets[] = {
    {.vocab = DREAM, .inp = "ggml-vocab-qwen2.gguf.inp", .out = "ggml-vocab-qwen2.gguf.out"},
    {.vocab = GPT2, .inp = "ggml-vocab-gpt-2.gguf.inp", .out = "ggml-vocab-gpt-2.gguf.out"},
};
#define N_SETS        (int)(sizeof sets / sizeof sets[0])
#define CASES_PER_SET 46

/*
 * Reads a vector file pair as llama.cpp's test does: strings separated by the line
 * "__ggml_vocab_test__", ids one line per string.
 */
static void read_vectors(struct vector_set *s)
{
    char rel[256];
    size_t n;
    snprintf(rel, sizeof rel, "tokenizer/llamacpp-tests/%s", s->inp);
    s->inp_data = fixture_read(rel, &n);
    snprintf(rel, sizeof rel, "tokenizer/llamacpp-tests/%s", s->out);
    size_t n_out;
    char *out = s->out_data = fixture_read(rel, &n_out);
    static const char sep[] = "\n__ggml_vocab_test__\n";
    char *p = s->inp_data, *end = s->inp_data + n, *o = out, *o_end = out + n_out;
    s->n = 0;
    while (p < end) {
        char *q = memmem(p, (size_t)(end - p), sep, strlen(sep));
        ck_assert_ptr_nonnull(q);
        ck_assert_int_lt(s->n, 64);
        struct vector *c = &s->cases[s->n++];
        c->text = p;
        c->len = (size_t)(q - p);
        char *eol = memchr(o, '\n', (size_t)(o_end - o));
        ck_assert_ptr_nonnull(eol);
        *eol = 0;
        c->n = 0;
        for (char *t = strtok(o, " "); t; t = strtok(NULL, " ")) {
            ck_assert_int_lt(c->n, 512);
            c->ids[c->n++] = (int32_t)strtol(t, NULL, 10);
        }
        o = eol + 1;
        p = q + strlen(sep);
    }
}

static void vectors_setup(void)
{
    for (int i = 0; i < N_SETS; i++) {
        sets[i].gguf = open_gguf(sets[i].vocab);
        sets[i].v = load_vocab(sets[i].gguf);
        read_vectors(&sets[i]);
        ck_assert_int_eq(sets[i].n, CASES_PER_SET);
    }
}

static void vectors_teardown(void)
{
    for (int i = 0; i < N_SETS; i++) {
        dllm_vocab_free(sets[i].v);
        dllm_gguf_close(sets[i].gguf);
        free(sets[i].inp_data);
        free(sets[i].out_data);
    }
}

/* Case _i: the same ids as llama.cpp, and decoding them gives the input back. */
START_TEST(vector_case)
{
    const struct vector_set *s = &sets[_i / CASES_PER_SET];
    const struct vector *c = &s->cases[_i % CASES_PER_SET];
    int32_t *ids;
    int64_t n;
    encode_ok(s->v, c->text, c->len, 0, &ids, &n);
    ck_assert_msg(n == c->n, "%s case %d: %lld ids, llama.cpp has %d", s->inp, _i % CASES_PER_SET,
                  (long long)n, c->n);
    for (int64_t k = 0; k < n; k++)
        ck_assert_msg(ids[k] == c->ids[k], "%s case %d: id %lld is %d, llama.cpp has %d", s->inp,
                      _i % CASES_PER_SET, (long long)k, ids[k], c->ids[k]);
    assert_decodes_to(s->v, ids, n, 0, c->text, c->len);
    assert_decodes_to(s->v, ids, n, DLLM_DECODE_SPECIAL, c->text, c->len);
    free(ids);
}
END_TEST

/* ---- special tokens and accessors --------------------------------------------------------- */

static struct dllm_gguf *dream_gguf;
static struct dllm_vocab *dream;

static void dream_setup(void)
{
    dream_gguf = open_gguf(DREAM);
    dream = load_vocab(dream_gguf);
}

static void dream_teardown(void)
{
    dllm_vocab_free(dream);
    dllm_gguf_close(dream_gguf);
}

/* Ids of Dream's added tokens, as dream-hf/added_tokens.json lists them. */
#define IM_START  151644
#define IM_END    151645
#define ENDOFTEXT 151643
#define TOOL_CALL 151657 /* user-defined */

START_TEST(special_parse)
{
    static const char text[] = "<|im_start|>user\nhi<|im_end|>";
    int32_t *ids;
    int64_t n;
    encode_ok(dream, text, strlen(text), DLLM_ENCODE_PARSE_SPECIAL, &ids, &n);
    ck_assert_int_ge(n, 4);
    ck_assert_int_eq(ids[0], IM_START);
    ck_assert_int_eq(ids[n - 1], IM_END);
    assert_decodes_to(dream, ids, n, DLLM_DECODE_SPECIAL, text, strlen(text));
    /* Control tokens render only on request. */
    assert_decodes_to(dream, ids, n, 0, "user\nhi", 7);
    free(ids);

    /* Without parsing, the same text is ordinary text. */
    encode_ok(dream, text, strlen(text), 0, &ids, &n);
    for (int64_t i = 0; i < n; i++)
        ck_assert_int_lt(ids[i], ENDOFTEXT);
    assert_decodes_to(dream, ids, n, 0, text, strlen(text));
    free(ids);

    /* Adjacent and embedded in words. */
    static const char packed[] = "a<|im_end|><|im_end|>b";
    encode_ok(dream, packed, strlen(packed), DLLM_ENCODE_PARSE_SPECIAL, &ids, &n);
    ck_assert_int_eq(n, 4);
    ck_assert_int_eq(ids[1], IM_END);
    ck_assert_int_eq(ids[2], IM_END);
    assert_decodes_to(dream, ids, n, DLLM_DECODE_SPECIAL, packed, strlen(packed));
    free(ids);
}
END_TEST

/* User-defined tokens are matched with or without parsing, as in llama.cpp and HF. */
START_TEST(special_user_defined)
{
    static const char text[] = "x<tool_call>y";
    for (unsigned flags = 0; flags <= DLLM_ENCODE_PARSE_SPECIAL;
         flags += DLLM_ENCODE_PARSE_SPECIAL) {
        int32_t *ids;
        int64_t n;
        encode_ok(dream, text, strlen(text), flags, &ids, &n);
        ck_assert_int_eq(n, 3);
        ck_assert_int_eq(ids[1], TOOL_CALL);
        assert_decodes_to(dream, ids, n, 0, text, strlen(text));
        free(ids);
    }
}
END_TEST

/* BOS is added when the file says so: Dream no, LLaDA yes. */
START_TEST(special_add_bos)
{
    int32_t *ids;
    int64_t n;
    encode_ok(dream, "hi", 2, DLLM_ENCODE_ADD_SPECIAL, &ids, &n);
    ck_assert_int_eq(n, 1);
    free(ids);
    struct dllm_gguf *g = open_gguf(LLADA);
    struct dllm_vocab *v = load_vocab(g);
    encode_ok(v, "hi", 2, DLLM_ENCODE_ADD_SPECIAL, &ids, &n);
    ck_assert_int_eq(n, 3);
    ck_assert_int_eq(ids[0], (int32_t)file_u32(g, "tokenizer.ggml.bos_token_id"));
    free(ids);
    encode_ok(v, "", 0, DLLM_ENCODE_ADD_SPECIAL, &ids, &n);
    ck_assert_int_eq(n, 1);
    free(ids);
    encode_ok(v, "", 0, 0, &ids, &n);
    ck_assert_int_eq(n, 0);
    free(ids);
    dllm_vocab_free(v);
    dllm_gguf_close(g);
}
END_TEST

START_TEST(special_ids)
{
    ck_assert_int_eq(dllm_vocab_size(dream), 152064);
    /* dream-hf: bos <|beginoftext|> 151665, eos <|endoftext|> 151643, mask <|mask|> 151666. */
    ck_assert_int_eq(dllm_vocab_special(dream, DLLM_SPECIAL_BOS), 151665);
    ck_assert_int_eq(dllm_vocab_special(dream, DLLM_SPECIAL_EOS), ENDOFTEXT);
    ck_assert_int_eq(dllm_vocab_special(dream, DLLM_SPECIAL_MASK), 151666);
    ck_assert_int_eq(dllm_vocab_special(dream, DLLM_SPECIAL_EOT), IM_END);
    ck_assert_int_eq(dllm_vocab_special(dream, DLLM_SPECIAL_PAD), -1);
    ck_assert(dllm_vocab_is_eog(dream, ENDOFTEXT));
    ck_assert(dllm_vocab_is_eog(dream, IM_END));
    ck_assert(!dllm_vocab_is_eog(dream, IM_START));
    ck_assert(!dllm_vocab_is_eog(dream, 9707));
    ck_assert(!dllm_vocab_is_eog(dream, -1));
    ck_assert(!dllm_vocab_is_eog(dream, 152064));

    struct dllm_gguf *g = open_gguf(LLADA);
    struct dllm_vocab *v = load_vocab(g);
    ck_assert_int_eq(dllm_vocab_special(v, DLLM_SPECIAL_BOS),
                     (int32_t)file_u32(g, "tokenizer.ggml.bos_token_id"));
    ck_assert_int_eq(dllm_vocab_special(v, DLLM_SPECIAL_EOT),
                     (int32_t)file_u32(g, "tokenizer.ggml.eot_token_id"));
    ck_assert_int_eq(dllm_vocab_special(v, DLLM_SPECIAL_MASK),
                     (int32_t)file_u32(g, "tokenizer.ggml.mask_token_id"));
    ck_assert(dllm_vocab_is_eog(v, (int32_t)file_u32(g, "tokenizer.ggml.eos_token_id")));
    ck_assert(dllm_vocab_is_eog(v, (int32_t)file_u32(g, "tokenizer.ggml.eot_token_id")));
    dllm_vocab_free(v);
    dllm_gguf_close(g);
}
END_TEST

START_TEST(token_accessors)
{
    size_t len;
    /* llama.cpp's vectors: "Hello world" is 9707 1879. */
    ck_assert_str_eq(dllm_vocab_token_text(dream, 9707, &len), "Hello");
    ck_assert_uint_eq(len, 5);
    ck_assert_str_eq(dllm_vocab_token_text(dream, 1879, NULL), "\xc4\xa0world");
    const char *b = dllm_vocab_token_bytes(dream, 1879, &len);
    ck_assert_uint_eq(len, 6);
    ck_assert(memcmp(b, " world", 6) == 0);
    b = dllm_vocab_token_bytes(dream, IM_START, &len);
    ck_assert(len == 12 && memcmp(b, "<|im_start|>", 12) == 0);
    ck_assert_int_eq(dllm_vocab_find(dream, "\xc4\xa0world", 7), 1879);
    ck_assert_int_eq(dllm_vocab_find(dream, "<|im_end|>", 10), IM_END);
    ck_assert_int_eq(dllm_vocab_find(dream, "no such token at all", 20), -1);
    ck_assert_int_eq(dllm_vocab_token_type(dream, 9707), DLLM_TOKEN_TYPE_NORMAL);
    ck_assert_int_eq(dllm_vocab_token_type(dream, IM_START), DLLM_TOKEN_TYPE_CONTROL);
    ck_assert_int_eq(dllm_vocab_token_type(dream, TOOL_CALL), DLLM_TOKEN_TYPE_USER_DEFINED);
    ck_assert_int_eq(dllm_vocab_token_type(dream, 152063), DLLM_TOKEN_TYPE_UNUSED);
    ck_assert_int_eq(dllm_vocab_token_type(dream, 152064), DLLM_TOKEN_TYPE_UNDEFINED);
    ck_assert_ptr_null(dllm_vocab_token_text(dream, -1, NULL));
    ck_assert_ptr_null(dllm_vocab_token_bytes(dream, 152064, NULL));

    /* Unused tokens render only with DLLM_DECODE_SPECIAL. */
    int32_t pad = 152063;
    assert_decodes_to(dream, &pad, 1, 0, "", 0);
    assert_decodes_to(dream, &pad, 1, DLLM_DECODE_SPECIAL, "[PAD152063]", 11);

    int32_t bad[] = {9707, 152064};
    char *text = (char *)1;
    struct dllm_error err;
    ck_assert_int_eq(dllm_vocab_decode(dream, bad, 2, 0, &text, &len, &err), DLLM_ERR_ARG);
    ck_assert_ptr_null(text);
    ck_assert_ptr_nonnull(strstr(err.text, "152064"));
}
END_TEST

/* Bytes that are not UTF-8, NUL bytes, long runs: all survive encoding and decoding. */
START_TEST(round_trip_bytes)
{
    char text[4096];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof text; i++) {
        x = x * 1103515245u + 12345u;
        text[i] = (char)(x >> 16);
    }
    memcpy(text + 100, "<|im_start|>", 12);
    memset(text + 1000, ' ', 500);
    memset(text + 2000, '\n', 300);
    for (unsigned flags = 0; flags <= DLLM_ENCODE_PARSE_SPECIAL;
         flags += DLLM_ENCODE_PARSE_SPECIAL) {
        int32_t *ids;
        int64_t n;
        encode_ok(dream, text, sizeof text, flags, &ids, &n);
        assert_decodes_to(dream, ids, n, DLLM_DECODE_SPECIAL, text, sizeof text);
        free(ids);
    }
}
END_TEST

/* ---- the incremental decoder -------------------------------------------------------------- */

/* The id of the token of one byte. */
static int32_t byte_id(const struct dllm_vocab *v, unsigned char b)
{
    int32_t *ids;
    int64_t n;
    char c = (char)b;
    encode_ok(v, &c, 1, 0, &ids, &n);
    ck_assert_int_eq(n, 1);
    int32_t id = ids[0];
    free(ids);
    return id;
}

static struct dllm_decoder *new_decoder(const struct dllm_vocab *v, unsigned flags)
{
    struct dllm_decoder *d;
    struct dllm_error err;
    ck_assert_msg(dllm_decoder_new(v, flags, &d, &err) == DLLM_OK, "%s", err.text);
    return d;
}

static size_t push(struct dllm_decoder *d, int32_t id, const char **text)
{
    size_t len;
    struct dllm_error err;
    ck_assert_msg(dllm_decoder_push(d, id, text, &len, &err) == DLLM_OK, "%s", err.text);
    return len;
}

/* A character split over byte tokens comes out whole, once its last byte arrives. */
START_TEST(decoder_split_character)
{
    struct dllm_decoder *d = new_decoder(dream, 0);
    const char *t;
    static const unsigned char han[] = {0xe6, 0x97, 0xa5}; /* U+65E5 */
    ck_assert_uint_eq(push(d, byte_id(dream, 'a'), &t), 1);
    ck_assert_int_eq(t[0], 'a');
    ck_assert_uint_eq(push(d, byte_id(dream, han[0]), &t), 0);
    ck_assert_uint_eq(push(d, byte_id(dream, han[1]), &t), 0);
    ck_assert_uint_eq(push(d, byte_id(dream, han[2]), &t), 3);
    ck_assert(memcmp(t, han, 3) == 0);
    /* A 4-byte character, then the stream ends in the middle of another. */
    static const unsigned char emoji[] = {0xf0, 0x9f, 0xa6, 0x99}; /* U+1F999 */
    for (int i = 0; i < 3; i++)
        ck_assert_uint_eq(push(d, byte_id(dream, emoji[i]), &t), 0);
    ck_assert_uint_eq(push(d, byte_id(dream, emoji[3]), &t), 4);
    ck_assert(memcmp(t, emoji, 4) == 0);
    ck_assert_uint_eq(push(d, byte_id(dream, emoji[0]), &t), 0);
    ck_assert_uint_eq(push(d, byte_id(dream, emoji[1]), &t), 0);
    size_t len;
    dllm_decoder_flush(d, &t, &len);
    ck_assert_uint_eq(len, 2);
    ck_assert(memcmp(t, emoji, 2) == 0);
    dllm_decoder_flush(d, &t, &len);
    ck_assert_uint_eq(len, 0);
    dllm_decoder_free(d);
}
END_TEST

/* Bytes that can never become a character pass through at once. */
START_TEST(decoder_invalid_bytes)
{
    struct dllm_decoder *d = new_decoder(dream, 0);
    const char *t;
    ck_assert_uint_eq(push(d, byte_id(dream, 0xff), &t), 1);
    ck_assert_uint_eq(push(d, byte_id(dream, 0x80), &t), 1); /* a lone continuation byte */
    ck_assert_uint_eq(push(d, byte_id(dream, 0xe6), &t), 0);
    ck_assert_uint_eq(push(d, byte_id(dream, 'x'), &t), 2); /* the held byte cannot continue */
    ck_assert(memcmp(t, "\xe6x", 2) == 0);
    ck_assert_uint_eq(push(d, byte_id(dream, 0xe0), &t), 0);
    ck_assert_uint_eq(push(d, byte_id(dream, 0x80), &t), 2); /* E0 80 is never well-formed */
    /* A control token renders as nothing without DLLM_DECODE_SPECIAL. */
    ck_assert_uint_eq(push(d, IM_END, &t), 0);
    struct dllm_error err;
    size_t len = 9;
    ck_assert_int_eq(dllm_decoder_push(d, 152064, &t, &len, &err), DLLM_ERR_ARG);
    ck_assert_uint_eq(len, 0);
    dllm_decoder_free(d);
    dllm_decoder_free(NULL);
}
END_TEST

/* Streaming a text's tokens gives the text, and no chunk ends inside a character. */
START_TEST(decoder_stream)
{
    static const char text[] = "Grüße, 世界! 🦙🦙 ok <|im_end|> done";
    int32_t *ids;
    int64_t n;
    encode_ok(dream, text, strlen(text), DLLM_ENCODE_PARSE_SPECIAL, &ids, &n);
    struct dllm_decoder *d = new_decoder(dream, DLLM_DECODE_SPECIAL);
    char out[256];
    size_t o = 0;
    for (int64_t i = 0; i < n; i++) {
        const char *t;
        size_t len = push(d, ids[i], &t);
        for (size_t k = 0; k < len;) {
            size_t c = dllm_utf8_char_len(t + k, len - k);
            ck_assert_msg(c > 0, "chunk %lld splits a character", (long long)i);
            k += c;
        }
        memcpy(out + o, t, len);
        o += len;
    }
    const char *t;
    size_t len;
    dllm_decoder_flush(d, &t, &len);
    ck_assert_uint_eq(len, 0);
    ck_assert_uint_eq(o, strlen(text));
    ck_assert(memcmp(out, text, o) == 0);
    dllm_decoder_free(d);
    free(ids);
}
END_TEST

/* ---- pre-tokenizers ----------------------------------------------------------------------- */

/* Encodes with a vocabulary whose pre-tokenizer is replaced, as a list of token texts. */
static void assert_words(const char *rel, const char *pre, const char *text,
                         const char *const *want)
{
    struct gguf_edit *e;
    char *path = fixture_path(rel);
    e = gguf_edit_load(path);
    free(path);
    if (pre)
        gguf_edit_set_str(e, "tokenizer.ggml.pre", pre);
    size_t size;
    void *image = gguf_edit_build(e, &size, NULL);
    struct dllm_gguf *g;
    struct dllm_error err;
    ck_assert_msg(dllm_gguf_open_memory(image, size, &g, &err) == DLLM_OK, "%s", err.text);
    struct dllm_vocab *v = load_vocab(g);
    int32_t *ids;
    int64_t n;
    encode_ok(v, text, strlen(text), 0, &ids, &n);
    int64_t k = 0;
    for (; want[k]; k++) {
        ck_assert_msg(k < n, "%s: only %lld tokens", pre, (long long)n);
        ck_assert_msg(ids[k] == file_token(g, want[k]), "%s: token %lld is '%s', expected '%s'",
                      pre, (long long)k, dllm_vocab_token_text(v, ids[k], NULL), want[k]);
    }
    ck_assert_int_eq(n, k);
    free(ids);
    dllm_vocab_free(v);
    dllm_gguf_close(g);
    free(image);
    gguf_edit_free(e);
}

/*
 * Digits: llama-bpe groups up to three, gpt-2 keeps a run with its leading space, qwen2
 * splits every digit ("Ġ" stands for a space in token texts).
 */
START_TEST(pre_digits)
{
    static const char *const llama3[] = {"x", "Ġ", "123", "45", NULL};
    static const char *const gpt2[] = {"x", "Ġ123", NULL};
    static const char *const qwen2[] = {"x", "Ġ", "1", "2", "3", NULL};
    assert_words(GPT2, "llama-bpe", "x 12345", llama3);
    assert_words(GPT2, NULL, "x 123", gpt2);
    assert_words(GPT2, "qwen2", "x 123", qwen2);
}
END_TEST

/*
 * The synthetic LLaDA vocabulary (llada-moe, 256 byte tokens and 8 merges: Ġ t, h e, Ġt he,
 * i n, Ġ a, e r, o n, r e): " the" merges to "Ġthe", "in" and "er" merge, the rest stay bytes;
 * a space before a letter joins its word, before a digit it does not.
 */
START_TEST(pre_llada)
{
    static const char *const want[] = {"Ġthe", "Ġ", "w", "in", "t", "er", "Ġ", "4", "2", NULL};
    assert_words(LLADA, NULL, " the winter 42", want);
}
END_TEST

/* ---- malformed vocabularies --------------------------------------------------------------- */

/* The edits of one malformed-vocabulary case. */
struct bad_vocab {
    const char *name;
    const char *rel;
    void (*edit)(struct gguf_edit *e);
    enum dllm_status status;
    const char *message; /* a part of the error text */
};

static void unknown_pre(struct gguf_edit *e)
{
    gguf_edit_set_str(e, "tokenizer.ggml.pre", "falcon");
}
static void missing_pre(struct gguf_edit *e)
{
    gguf_edit_remove(e, "tokenizer.ggml.pre");
}
static void other_model(struct gguf_edit *e)
{
    gguf_edit_set_str(e, "tokenizer.ggml.model", "llama");
}
static void missing_merges(struct gguf_edit *e)
{
    gguf_edit_remove(e, "tokenizer.ggml.merges");
}
static void bad_merge(struct gguf_edit *e)
{
    static const char *const merges[] = {"\xc4\xa0 t", "nosuch token"};
    gguf_edit_set_str_array(e, "tokenizer.ggml.merges", merges, 2);
}
static void merge_without_space(struct gguf_edit *e)
{
    static const char *const merges[] = {"ab"};
    gguf_edit_set_str_array(e, "tokenizer.ggml.merges", merges, 1);
}
static void bos_out_of_range(struct gguf_edit *e)
{
    gguf_edit_set_u32(e, "tokenizer.ggml.bos_token_id", 50257);
}
static void eos_wrong_type(struct gguf_edit *e)
{
    gguf_edit_set_str(e, "tokenizer.ggml.eos_token_id", "50256");
}
static void mask_out_of_range(struct gguf_edit *e)
{
    gguf_edit_set_u32(e, "tokenizer.ggml.mask_token_id", 2048);
}
static void short_token_types(struct gguf_edit *e)
{
    static const int32_t types[] = {1, 1, 1};
    gguf_edit_set_i32_array(e, "tokenizer.ggml.token_type", types, 3);
}

/* Replaces the token list of the LLaDA fixture (2048 tokens) after editing one entry. */
static void set_llada_tokens(struct gguf_edit *e, int32_t id, const char *text)
{
    char *path = fixture_path(LLADA);
    struct dllm_gguf *g;
    ck_assert(dllm_gguf_open(path, &g, NULL) == DLLM_OK);
    free(path);
    const struct dllm_gguf_value *tokens = dllm_gguf_find(g, "tokenizer.ggml.tokens");
    char **list = calloc(tokens->arr.n, sizeof *list);
    for (uint64_t i = 0; i < tokens->arr.n; i++) {
        struct dllm_gguf_value s;
        dllm_gguf_array_get(tokens, i, &s);
        list[i] = strndup(s.str.ptr, s.str.len);
    }
    free(list[id]);
    list[id] = strdup(text);
    gguf_edit_set_str_array(e, "tokenizer.ggml.tokens", (const char *const *)list, tokens->arr.n);
    for (uint64_t i = 0; i < tokens->arr.n; i++)
        free(list[i]);
    free(list);
    dllm_gguf_close(g);
}
static void duplicate_token(struct gguf_edit *e)
{
    set_llada_tokens(e, 2000, "<|eot_id|>");
}
static void missing_byte_token(struct gguf_edit *e)
{
    set_llada_tokens(e, 0, "[no byte 0]"); /* token 0 is the byte 0x00, as U+0100 */
}
static void bad_token_type(struct gguf_edit *e)
{
    int32_t *types = malloc(2048 * sizeof *types);
    for (int i = 0; i < 2048; i++)
        types[i] = i == 7 ? 9 : 1;
    gguf_edit_set_i32_array(e, "tokenizer.ggml.token_type", types, 2048);
    free(types);
}
static void add_bos_without_bos(struct gguf_edit *e)
{
    gguf_edit_remove(e, "tokenizer.ggml.bos_token_id");
}
static void no_tokens(struct gguf_edit *e)
{
    gguf_edit_set_str_array(e, "tokenizer.ggml.tokens", NULL, 0);
}

static const struct bad_vocab bad_vocabs[] = {
    {"unknown pre", GPT2, unknown_pre, DLLM_ERR_UNSUPPORTED,
     "unknown pre-tokenizer 'falcon' in tokenizer.ggml.pre (supported: qwen2, bailingmoe, "
     "bailingmoe2, llada-moe, llama-bpe, llama3, llama-v3, gpt-2)"},
    {"missing pre", GPT2, missing_pre, DLLM_ERR_MISSING, "tokenizer.ggml.pre"},
    {"other model", GPT2, other_model, DLLM_ERR_UNSUPPORTED, "tokenizer.ggml.model 'llama'"},
    {"missing merges", GPT2, missing_merges, DLLM_ERR_MISSING, "tokenizer.ggml.merges"},
    {"unknown merge token", GPT2, bad_merge, DLLM_ERR_FORMAT,
     "tokenizer.ggml.merges[1] 'nosuch token'"},
    {"merge without space", GPT2, merge_without_space, DLLM_ERR_FORMAT, "tokenizer.ggml.merges[0]"},
    {"bos out of range", GPT2, bos_out_of_range, DLLM_ERR_FORMAT,
     "tokenizer.ggml.bos_token_id is 50257, outside the vocabulary of 50257 tokens"},
    {"eos wrong type", GPT2, eos_wrong_type, DLLM_ERR_TYPE, "tokenizer.ggml.eos_token_id"},
    {"mask out of range", LLADA, mask_out_of_range, DLLM_ERR_FORMAT, "mask_token_id is 2048"},
    {"short token types", GPT2, short_token_types, DLLM_ERR_FORMAT,
     "tokenizer.ggml.token_type has 3 entries for 50257 tokens"},
    {"bad token type", LLADA, bad_token_type, DLLM_ERR_FORMAT, "token_type[7] is 9"},
    {"duplicate token", LLADA, duplicate_token, DLLM_ERR_FORMAT,
     "holds '<|eot_id|>' twice (ids 1932 and 2000)"},
    {"missing byte token", LLADA, missing_byte_token, DLLM_ERR_FORMAT, "byte 0x00"},
    {"add_bos without bos", LLADA, add_bos_without_bos, DLLM_ERR_MISSING,
     "add_bos_token is true but tokenizer.ggml.bos_token_id is missing"},
    {"no tokens", GPT2, no_tokens, DLLM_ERR_FORMAT, "tokenizer.ggml.tokens has 0 entries"},
};
#define N_BAD (int)(sizeof bad_vocabs / sizeof bad_vocabs[0])

START_TEST(bad_vocab)
{
    const struct bad_vocab *b = &bad_vocabs[_i];
    char *path = fixture_path(b->rel);
    struct gguf_edit *e = gguf_edit_load(path);
    free(path);
    b->edit(e);
    size_t size;
    void *image = gguf_edit_build(e, &size, NULL);
    struct dllm_gguf *g;
    struct dllm_error err = {0};
    ck_assert_msg(dllm_gguf_open_memory(image, size, &g, &err) == DLLM_OK, "%s", err.text);
    struct dllm_vocab *v = (struct dllm_vocab *)1;
    enum dllm_status st = dllm_vocab_load(g, &v, &err);
    ck_assert_msg(st == b->status, "%s: status %s (%s)", b->name, dllm_status_str(st), err.text);
    ck_assert_ptr_null(v);
    ck_assert_msg(strstr(err.text, b->message), "%s: '%s' lacks '%s'", b->name, err.text,
                  b->message);
    dllm_gguf_close(g);
    free(image);
    gguf_edit_free(e);
}
END_TEST

static Suite *tokenizer_suite(void)
{
    Suite *s = suite_create("tokenizer");
    TCase *tc = tcase_create("vectors");
    tcase_add_unchecked_fixture(tc, vectors_setup, vectors_teardown);
    tcase_add_loop_test(tc, vector_case, 0, N_SETS * CASES_PER_SET);
    suite_add_tcase(s, tc);

    tc = tcase_create("special");
    tcase_add_unchecked_fixture(tc, dream_setup, dream_teardown);
    tcase_add_test(tc, special_parse);
    tcase_add_test(tc, special_user_defined);
    tcase_add_test(tc, special_add_bos);
    tcase_add_test(tc, special_ids);
    tcase_add_test(tc, token_accessors);
    tcase_add_test(tc, round_trip_bytes);
    suite_add_tcase(s, tc);

    tc = tcase_create("decoder");
    tcase_add_unchecked_fixture(tc, dream_setup, dream_teardown);
    tcase_add_test(tc, decoder_split_character);
    tcase_add_test(tc, decoder_invalid_bytes);
    tcase_add_test(tc, decoder_stream);
    suite_add_tcase(s, tc);

    tc = tcase_create("pretokenizers");
    tcase_add_test(tc, pre_digits);
    tcase_add_test(tc, pre_llada);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_loop_test(tc, bad_vocab, 0, N_BAD);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    fixtures_dir();
    return test_run_suite(tokenizer_suite());
}
