/*
 * Byte-level BPE (GPT-2 style) from GGUF metadata.
 *
 * Encoding runs in three stages. Special tokens are cut out of the text first (user-defined
 * ones always, control ones on request), longest token first, as llama.cpp does. Each
 * remaining span is split into words by the pre-tokenizer's regular expression (PCRE2,
 * UTF + UCP, JIT); text between matches, such as bytes that are not valid UTF-8, forms words
 * of its own. Each word's bytes then start as one byte token each and are merged pairwise,
 * always the pair of lowest merge rank first (leftmost on ties), until no pair of adjacent
 * tokens has a merge. Tokens stand for bytes through GPT-2's byte-to-character table, so
 * decoding maps each character of a token's text back to its byte.
 */
#define _GNU_SOURCE /* memmem */
#include "config.h"

#include "tokenizer.h"

#include "dllm.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- pre-tokenizers ----------------------------------------------------------------------- */

/*
 * The regular expressions of the Hugging Face tokenizers these vocabularies come from, with
 * two adjustments llama.cpp makes too: case-insensitive contractions spelled out as classes
 * (so that only ASCII letters qualify) and possessive quantifiers made greedy (equivalent
 * here). \s is written out as Unicode White_Space (WS), which is what llama.cpp and the
 * Hugging Face tokenizers match; PCRE2's own \s would add U+180E.
 */
#define WS           "\\t-\\r\\x{85}\\p{Z}"
#define CONTRACTIONS "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
#define WS_TAIL      "[" WS "]*[\\r\\n]+|[" WS "]+(?![^" WS "])|[" WS "]+"

static const char re_qwen2[] = CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
                                            "| ?[^" WS "\\p{L}\\p{N}]+[\\r\\n]*|" WS_TAIL;
static const char re_llama3[] = CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}"
                                             "| ?[^" WS "\\p{L}\\p{N}]+[\\r\\n]*|" WS_TAIL;
static const char re_bailing[] = "'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])"
                                 "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
                                 "| ?[^" WS "\\p{L}\\p{N}]+[\\r\\n]*|[" WS "]*[\\r\\n]"
                                 "|[" WS "]+(?![^" WS "])|[" WS "]+";
static const char re_gpt2[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+"
                              "| ?[^" WS "\\p{L}\\p{N}]+|[" WS "]+(?![^" WS "])";

struct pre_tokenizer {
    const char *name; /* the value of tokenizer.ggml.pre */
    const char *regex;
    bool add_bos;       /* the default when tokenizer.ggml.add_bos_token is absent */
    bool ignore_merges; /* a word that is a token as a whole is that token */
};

static const struct pre_tokenizer pre_tokenizers[] = {
    {"qwen2", re_qwen2, false, false},         {"bailingmoe", re_bailing, false, false},
    {"bailingmoe2", re_bailing, false, false}, {"llada-moe", re_bailing, false, false},
    {"llama-bpe", re_llama3, true, true},      {"llama3", re_llama3, true, true},
    {"llama-v3", re_llama3, true, true},       {"gpt-2", re_gpt2, false, false},
};
#define N_PRE (sizeof pre_tokenizers / sizeof pre_tokenizers[0])

/* ---- the vocabulary ----------------------------------------------------------------------- */

#define ATTR_TYPE 0x07 /* enum dllm_token_type */
#define ATTR_EOG  0x80 /* generation ends here */
#define N_SPECIAL (DLLM_SPECIAL_MASK + 1)

/* One merge rule: the pair (left, right) of token ids becomes result. */
struct merge {
    uint64_t key; /* left << 32 | right; MERGE_EMPTY in a free slot */
    int32_t rank;
    int32_t result;
};
#define MERGE_EMPTY UINT64_MAX

struct dllm_vocab {
    int32_t n_tokens;
    const struct pre_tokenizer *pre;
    pcre2_general_context *regex_mem; /* PCRE2's allocator: regex_malloc and regex_free */
    pcre2_code *regex;
    bool add_bos, add_eos;
    int32_t special[N_SPECIAL]; /* -1 when absent */
    uint8_t *attr;              /* [n_tokens] type | ATTR_EOG */
    char *text;                 /* GGUF texts, each NUL-terminated */
    size_t *text_off;           /* [n_tokens + 1] */
    char *piece;                /* the bytes of each token */
    size_t *piece_off;          /* [n_tokens + 1] */
    size_t max_piece;           /* the longest piece */
    int32_t *index;             /* [index_mask + 1] text hash -> id, -1 when free */
    uint64_t index_mask;
    struct merge *merges; /* [merge_mask + 1] */
    uint64_t merge_mask;
    int32_t byte_token[256]; /* the token of each single byte */
    int32_t *specials;       /* ids matched in text, longest text first */
    int32_t n_specials;
};

/*
 * GPT-2's table from bytes to characters: printable Latin-1 bytes stand for themselves and the
 * other 68 (0x00-0x20, 0x7f-0xa0, 0xad) for U+0100 upwards, in byte order.
 */
static uint32_t byte_char(unsigned b)
{
    if (b <= 0x20)
        return 0x100 + b;
    if (b >= 0x7f && b <= 0xa0)
        return 0x100 + 0x21 + (b - 0x7f);
    if (b == 0xad)
        return 0x100 + 0x21 + 0x22;
    return b;
}

/* The inverse of byte_char, or -1 for characters outside the table. */
static int char_byte(uint32_t c)
{
    if (c < 0x100)
        return (c > 0x20 && c < 0x7f) || (c > 0xa0 && c != 0xad) ? (int)c : -1;
    if (c < 0x100 + 0x21)
        return (int)(c - 0x100);
    if (c < 0x100 + 0x21 + 0x22)
        return (int)(c - 0x100 - 0x21 + 0x7f);
    return c == 0x100 + 0x21 + 0x22 ? 0xad : -1;
}

size_t dllm_tokenizer_utf8_decode(const char *str, size_t n, uint32_t *cp)
{
    const unsigned char *s = (const unsigned char *)str;
    unsigned c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t len = c >= 0xc2 && c <= 0xdf   ? 2
                 : c >= 0xe0 && c <= 0xef ? 3
                 : c >= 0xf0 && c <= 0xf4 ? 4
                                          : 0;
    if (len == 0 || n < len)
        return 0;
    uint32_t v = c & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        v = v << 6 | (s[i] & 0x3f);
    }
    if ((len == 3 && v < 0x800) || (len == 4 && (v < 0x10000 || v > 0x10ffff)) ||
        (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return len;
}

size_t dllm_utf8_char_len(const char *s, size_t n)
{
    uint32_t c;
    return dllm_tokenizer_utf8_decode(s, n, &c);
}

size_t dllm_tokenizer_byte_text(unsigned char b, char *out)
{
    const uint32_t c = byte_char(b); /* below U+0800: one or two UTF-8 bytes */
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    out[0] = (char)(0xc0 | c >> 6);
    out[1] = (char)(0x80 | (c & 0x3f));
    return 2;
}

/*
 * How many bytes at the end of s[0..n-1] begin a UTF-8 character that more bytes could still
 * complete (0 to 3).
 */
static size_t utf8_unfinished(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    for (size_t k = 1; k <= 3 && k <= n; k++) {
        unsigned c = s[n - k];
        if ((c & 0xc0) == 0x80)
            continue;
        size_t need = c >= 0xc2 && c <= 0xdf   ? 2
                      : c >= 0xe0 && c <= 0xef ? 3
                      : c >= 0xf0 && c <= 0xf4 ? 4
                                               : 0;
        if (need <= k)
            return 0;
        if (k >= 2) {
            unsigned d = s[n - k + 1];
            unsigned lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
            unsigned hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
            if (d < lo || d > hi)
                return 0;
        }
        return k;
    }
    return 0;
}

/* FNV-1a over n bytes. */
static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3u;
    return h;
}

static uint64_t hash_pair(uint64_t key)
{
    return (key * 0x9e3779b97f4a7c15u) >> 17;
}

/* A table size: the smallest power of two of at least twice n entries. */
static uint64_t table_size(uint64_t n)
{
    uint64_t size = 16;
    while (size < 2 * n)
        size *= 2;
    return size;
}

int32_t dllm_vocab_find(const struct dllm_vocab *v, const char *text, size_t len)
{
    for (uint64_t i = hash_bytes(text, len) & v->index_mask;; i = (i + 1) & v->index_mask) {
        int32_t id = v->index[i];
        if (id < 0)
            return -1;
        size_t off = v->text_off[id];
        if (v->text_off[id + 1] - off - 1 == len && memcmp(v->text + off, text, len) == 0)
            return id;
    }
}

/* The merge of the pair (left, right), or NULL. */
static const struct merge *find_merge(const struct dllm_vocab *v, int32_t left, int32_t right)
{
    uint64_t key = (uint64_t)left << 32 | (uint32_t)right;
    for (uint64_t i = hash_pair(key) & v->merge_mask;; i = (i + 1) & v->merge_mask) {
        if (v->merges[i].key == key)
            return &v->merges[i];
        if (v->merges[i].key == MERGE_EMPTY)
            return NULL;
    }
}

/* Up to 40 bytes of s for an error message, with bytes outside printable ASCII as \xNN. */
static const char *quoted(const char *s, size_t n, char buf[static 176])
{
    size_t o = 0;
    for (size_t i = 0; i < n && i < 40; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '\\')
            buf[o++] = (char)c;
        else
            o += (size_t)snprintf(buf + o, 5, "\\x%02x", c);
    }
    if (n > 40)
        o += (size_t)snprintf(buf + o, 4, "...");
    buf[o] = 0;
    return buf;
}

/* The GGUF text of token id. */
static const char *text_of(const struct dllm_vocab *v, int32_t id, size_t *len)
{
    *len = v->text_off[id + 1] - v->text_off[id] - 1;
    return v->text + v->text_off[id];
}

/* Reads the token texts and types, and indexes the texts. */
static enum dllm_status load_tokens(struct dllm_vocab *v, const struct dllm_gguf *gguf,
                                    struct dllm_error *err)
{
    const struct dllm_gguf_value *tokens, *types = NULL;
    enum dllm_status st;
    if ((st = dllm_gguf_get_array(gguf, "tokenizer.ggml.tokens", DLLM_GGUF_STRING, &tokens, err)))
        return st;
    if (tokens->arr.n == 0 || tokens->arr.n > INT32_MAX)
        return dllm_error_set(err, DLLM_ERR_FORMAT, "tokenizer.ggml.tokens has %llu entries",
                              (unsigned long long)tokens->arr.n);
    v->n_tokens = (int32_t)tokens->arr.n;
    if (dllm_gguf_find(gguf, "tokenizer.ggml.token_type")) {
        st = dllm_gguf_get_array(gguf, "tokenizer.ggml.token_type", DLLM_GGUF_INT32, &types, err);
        if (st)
            return st;
        if (types->arr.n != tokens->arr.n)
            return dllm_error_set(err, DLLM_ERR_FORMAT,
                                  "tokenizer.ggml.token_type has %llu entries for %d tokens",
                                  (unsigned long long)types->arr.n, v->n_tokens);
    }
    size_t n = (size_t)v->n_tokens, total = 0;
    for (size_t i = 0; i < n; i++) {
        struct dllm_gguf_value e;
        dllm_gguf_array_get(tokens, i, &e);
        total += (size_t)e.str.len + 1; /* bounded by the mapped file's size */
    }
    v->attr = malloc(n);
    v->text = malloc(total);
    v->text_off = malloc((n + 1) * sizeof *v->text_off);
    v->index_mask = table_size(n) - 1;
    v->index = malloc((v->index_mask + 1) * sizeof *v->index);
    if (!v->attr || !v->text || !v->text_off || !v->index)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory for %zu tokens", n);
    memset(v->index, 0xff, (v->index_mask + 1) * sizeof *v->index);
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        struct dllm_gguf_value e;
        dllm_gguf_array_get(tokens, i, &e);
        int64_t type = DLLM_TOKEN_TYPE_NORMAL;
        if (types) {
            struct dllm_gguf_value t;
            dllm_gguf_array_get(types, i, &t);
            type = t.i64;
        }
        if (type < DLLM_TOKEN_TYPE_UNDEFINED || type > DLLM_TOKEN_TYPE_BYTE)
            return dllm_error_set(err, DLLM_ERR_FORMAT,
                                  "tokenizer.ggml.token_type[%zu] is %lld, not a token type", i,
                                  (long long)type);
        v->attr[i] = (uint8_t)type;
        v->text_off[i] = off;
        memcpy(v->text + off, e.str.ptr, e.str.len);
        v->text[off + e.str.len] = 0;
        off += (size_t)e.str.len + 1;
        if (e.str.len == 0)
            continue; /* an empty token can never be produced */
        uint64_t h = hash_bytes(e.str.ptr, e.str.len) & v->index_mask;
        for (;; h = (h + 1) & v->index_mask) {
            int32_t other = v->index[h];
            if (other < 0)
                break;
            size_t olen;
            const char *otext = text_of(v, other, &olen);
            if (olen == e.str.len && memcmp(otext, e.str.ptr, olen) == 0) {
                char q[176];
                return dllm_error_set(err, DLLM_ERR_FORMAT,
                                      "tokenizer.ggml.tokens holds '%s' twice (ids %d and %zu)",
                                      quoted(otext, olen, q), other, i);
            }
        }
        v->index[h] = (int32_t)i;
    }
    v->text_off[n] = off;
    return DLLM_OK;
}

/* Reads the merge rules into a table keyed by the pair of token ids. */
static enum dllm_status load_merges(struct dllm_vocab *v, const struct dllm_gguf *gguf,
                                    struct dllm_error *err)
{
    const struct dllm_gguf_value *merges;
    enum dllm_status st;
    if ((st = dllm_gguf_get_array(gguf, "tokenizer.ggml.merges", DLLM_GGUF_STRING, &merges, err)))
        return st;
    if (merges->arr.n > INT32_MAX)
        return dllm_error_set(err, DLLM_ERR_FORMAT, "tokenizer.ggml.merges has %llu entries",
                              (unsigned long long)merges->arr.n);
    v->merge_mask = table_size(merges->arr.n) - 1;
    v->merges = malloc((v->merge_mask + 1) * sizeof *v->merges);
    if (!v->merges)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory for %llu merges",
                              (unsigned long long)merges->arr.n);
    for (uint64_t i = 0; i <= v->merge_mask; i++)
        v->merges[i].key = MERGE_EMPTY;
    for (uint64_t r = 0; r < merges->arr.n; r++) {
        struct dllm_gguf_value e;
        dllm_gguf_array_get(merges, r, &e);
        const char *s = e.str.ptr,
                   *space = e.str.len > 1 ? memchr(s + 1, ' ', e.str.len - 1) : NULL;
        int32_t left = -1, right = -1, result = -1;
        if (space) {
            size_t nl = (size_t)(space - s), nr = (size_t)e.str.len - nl - 1;
            char *joined = malloc(nl + nr + 1);
            if (!joined)
                return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
            memcpy(joined, s, nl);
            memcpy(joined + nl, space + 1, nr);
            left = dllm_vocab_find(v, s, nl);
            right = dllm_vocab_find(v, space + 1, nr);
            result = dllm_vocab_find(v, joined, nl + nr);
            free(joined);
        }
        if (left < 0 || right < 0 || result < 0) {
            char q[176];
            return dllm_error_set(err, DLLM_ERR_FORMAT,
                                  "tokenizer.ggml.merges[%llu] '%s' is not two tokens whose "
                                  "concatenation is a token",
                                  (unsigned long long)r, quoted(s, (size_t)e.str.len, q));
        }
        uint64_t key = (uint64_t)left << 32 | (uint32_t)right;
        uint64_t h = hash_pair(key) & v->merge_mask;
        while (v->merges[h].key != MERGE_EMPTY && v->merges[h].key != key)
            h = (h + 1) & v->merge_mask;
        if (v->merges[h].key == key)
            continue; /* a repeated rule keeps its first rank */
        v->merges[h] = (struct merge){key, (int32_t)r, result};
    }
    return DLLM_OK;
}

/* Reads an optional token id key into *id, checking it names a token. */
static enum dllm_status load_special(struct dllm_vocab *v, const struct dllm_gguf *gguf,
                                     const char *key, int32_t *id, struct dllm_error *err)
{
    if (!dllm_gguf_find(gguf, key))
        return DLLM_OK;
    uint32_t u;
    enum dllm_status st = dllm_gguf_get_u32(gguf, key, &u, err);
    if (st)
        return st;
    if (u >= (uint32_t)v->n_tokens)
        return dllm_error_set(err, DLLM_ERR_FORMAT, "%s is %u, outside the vocabulary of %d tokens",
                              key, u, v->n_tokens);
    *id = (int32_t)u;
    return DLLM_OK;
}

/* Reads the special token ids and the add_bos/add_eos flags; marks the end-of-generation set. */
static enum dllm_status load_specials(struct dllm_vocab *v, const struct dllm_gguf *gguf,
                                      struct dllm_error *err)
{
    static const char *const keys[N_SPECIAL] = {
        [DLLM_SPECIAL_BOS] = "tokenizer.ggml.bos_token_id",
        [DLLM_SPECIAL_EOS] = "tokenizer.ggml.eos_token_id",
        [DLLM_SPECIAL_EOT] = "tokenizer.ggml.eot_token_id",
        [DLLM_SPECIAL_PAD] = "tokenizer.ggml.padding_token_id",
        [DLLM_SPECIAL_MASK] = "tokenizer.ggml.mask_token_id",
    };
    static const char *const eot_texts[] = {"<|eot_id|>", "<|im_end|>"};
    static const char *const eog_texts[] = {"<|endoftext|>", "<|im_end|>", "<|eot_id|>",
                                            "<|eom_id|>"};
    enum dllm_status st;
    for (int i = 0; i < N_SPECIAL; i++) {
        v->special[i] = -1;
        if ((st = load_special(v, gguf, keys[i], &v->special[i], err)))
            return st;
    }
    for (size_t i = 0; i < sizeof eot_texts / sizeof *eot_texts && v->special[DLLM_SPECIAL_EOT] < 0;
         i++)
        v->special[DLLM_SPECIAL_EOT] = dllm_vocab_find(v, eot_texts[i], strlen(eot_texts[i]));
    for (size_t i = 0; i < sizeof eog_texts / sizeof *eog_texts; i++) {
        int32_t id = dllm_vocab_find(v, eog_texts[i], strlen(eog_texts[i]));
        if (id >= 0 && (v->attr[id] & ATTR_TYPE) == DLLM_TOKEN_TYPE_CONTROL)
            v->attr[id] |= ATTR_EOG;
    }
    for (int i = DLLM_SPECIAL_EOS; i <= DLLM_SPECIAL_EOT; i++)
        if (v->special[i] >= 0)
            v->attr[v->special[i]] |= ATTR_EOG;

    v->add_bos = v->pre->add_bos;
    v->add_eos = false;
    if (dllm_gguf_find(gguf, "tokenizer.ggml.add_bos_token") &&
        (st = dllm_gguf_get_bool(gguf, "tokenizer.ggml.add_bos_token", &v->add_bos, err)))
        return st;
    if (dllm_gguf_find(gguf, "tokenizer.ggml.add_eos_token") &&
        (st = dllm_gguf_get_bool(gguf, "tokenizer.ggml.add_eos_token", &v->add_eos, err)))
        return st;
    if (v->add_bos && v->special[DLLM_SPECIAL_BOS] < 0)
        return dllm_error_set(err, DLLM_ERR_MISSING,
                              "tokenizer.ggml.add_bos_token is true but "
                              "tokenizer.ggml.bos_token_id is missing");
    if (v->add_eos && v->special[DLLM_SPECIAL_EOS] < 0)
        return dllm_error_set(err, DLLM_ERR_MISSING,
                              "tokenizer.ggml.add_eos_token is true but "
                              "tokenizer.ggml.eos_token_id is missing");
    return DLLM_OK;
}

/* A special token while sorting: longest text first, then lowest id. */
struct special_key {
    size_t len;
    int32_t id;
};

static int special_cmp(const void *a, const void *b)
{
    const struct special_key *x = a, *y = b;
    if (x->len != y->len)
        return x->len > y->len ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/*
 * Lists the tokens matched in text before pre-tokenization (control, user-defined and unknown
 * ones), longest first so that a token containing another wins.
 */
static enum dllm_status load_special_list(struct dllm_vocab *v, struct dllm_error *err)
{
    struct special_key *keys = malloc((size_t)v->n_tokens * sizeof *keys);
    if (!keys)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    int32_t n = 0;
    for (int32_t id = 0; id < v->n_tokens; id++) {
        int type = v->attr[id] & ATTR_TYPE;
        size_t len = v->text_off[id + 1] - v->text_off[id] - 1;
        if (len > 0 && (type == DLLM_TOKEN_TYPE_CONTROL || type == DLLM_TOKEN_TYPE_USER_DEFINED ||
                        type == DLLM_TOKEN_TYPE_UNKNOWN))
            keys[n++] = (struct special_key){len, id};
    }
    qsort(keys, (size_t)n, sizeof *keys, special_cmp);
    v->specials = malloc(((size_t)n + 1) * sizeof *v->specials);
    if (!v->specials) {
        free(keys);
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    }
    for (int32_t i = 0; i < n; i++)
        v->specials[i] = keys[i].id;
    v->n_specials = n;
    free(keys);
    return DLLM_OK;
}

/*
 * Finds the token of each byte and works out every token's bytes: a normal token's text read
 * back through the byte table (characters outside it are kept as they are), any other
 * token's text unchanged.
 */
static enum dllm_status load_pieces(struct dllm_vocab *v, struct dllm_error *err)
{
    for (unsigned b = 0; b < 256; b++) {
        char buf[4];
        v->byte_token[b] = dllm_vocab_find(v, buf, dllm_tokenizer_byte_text((unsigned char)b, buf));
        if (v->byte_token[b] < 0)
            return dllm_error_set(err, DLLM_ERR_FORMAT,
                                  "tokenizer.ggml.tokens lacks the token of byte 0x%02x, which "
                                  "byte-level BPE needs",
                                  b);
    }
    size_t n = (size_t)v->n_tokens;
    v->piece = malloc(v->text_off[n]);
    v->piece_off = malloc((n + 1) * sizeof *v->piece_off);
    if (!v->piece || !v->piece_off)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory for %zu tokens", n);
    size_t o = 0;
    v->max_piece = 0;
    for (size_t id = 0; id < n; id++) {
        size_t len;
        const char *t = text_of(v, (int32_t)id, &len);
        v->piece_off[id] = o;
        if ((v->attr[id] & ATTR_TYPE) != DLLM_TOKEN_TYPE_NORMAL) {
            memcpy(v->piece + o, t, len);
            o += len;
        } else {
            for (size_t i = 0; i < len;) {
                uint32_t c;
                size_t k = dllm_tokenizer_utf8_decode(t + i, len - i, &c);
                int b = k ? char_byte(c) : -1;
                if (b >= 0) {
                    v->piece[o++] = (char)b;
                } else {
                    k = k ? k : 1;
                    memcpy(v->piece + o, t + i, k);
                    o += k;
                }
                i += k;
            }
        }
        if (o - v->piece_off[id] > v->max_piece)
            v->max_piece = o - v->piece_off[id];
    }
    v->piece_off[n] = o;
    return DLLM_OK;
}

/* PCRE2 allocates through these: the C allocator as this file names it (a test build counts
 * and fails its calls). */
static void *regex_malloc(PCRE2_SIZE n, void *user)
{
    (void)user;
    return malloc(n);
}

static void regex_free(void *p, void *user)
{
    (void)user;
    free(p);
}

/* Chooses the pre-tokenizer named by tokenizer.ggml.pre and compiles its expression. */
static enum dllm_status load_pre(struct dllm_vocab *v, const struct dllm_gguf *gguf,
                                 struct dllm_error *err)
{
    char *model = NULL, *pre = NULL;
    enum dllm_status st = dllm_gguf_get_str(gguf, "tokenizer.ggml.model", &model, err);
    if (st)
        goto fail;
    if (strcmp(model, "gpt2") != 0) {
        st = dllm_error_set(err, DLLM_ERR_UNSUPPORTED,
                            "tokenizer.ggml.model '%s' is not supported (only gpt2, byte-level "
                            "BPE)",
                            model);
        goto fail;
    }
    if ((st = dllm_gguf_get_str(gguf, "tokenizer.ggml.pre", &pre, err)))
        goto fail;
    for (size_t i = 0; i < N_PRE && !v->pre; i++)
        if (strcmp(pre, pre_tokenizers[i].name) == 0)
            v->pre = &pre_tokenizers[i];
    if (!v->pre) {
        char list[256] = "";
        for (size_t i = 0, o = 0; i < N_PRE; i++)
            o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "",
                                  pre_tokenizers[i].name);
        char q[176];
        st = dllm_error_set(err, DLLM_ERR_UNSUPPORTED,
                            "unknown pre-tokenizer '%s' in tokenizer.ggml.pre (supported: %s)",
                            quoted(pre, strlen(pre), q), list);
        goto fail;
    }
    int code;
    PCRE2_SIZE at;
    v->regex_mem = pcre2_general_context_create(regex_malloc, regex_free, NULL);
    pcre2_compile_context *cc = v->regex_mem ? pcre2_compile_context_create(v->regex_mem) : NULL;
    if (cc)
        v->regex = pcre2_compile((PCRE2_SPTR)v->pre->regex, PCRE2_ZERO_TERMINATED,
                                 PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &code, &at, cc);
    pcre2_compile_context_free(cc);
    if (!cc || (!v->regex && code == PCRE2_ERROR_HEAP_FAILED)) {
        st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if (!v->regex) {
        PCRE2_UCHAR msg[128];
        pcre2_get_error_message(code, msg, sizeof msg);
        st = dllm_error_set(err, DLLM_ERR_UNSUPPORTED,
                            "PCRE2 cannot compile the %s pre-tokenizer: %s at offset %zu",
                            v->pre->name, (const char *)msg, (size_t)at);
        goto fail;
    }
    /* Without JIT support PCRE2 interprets the pattern: slower, same result. Memory running
     * out is a failure all the same. */
    if (pcre2_jit_compile(v->regex, PCRE2_JIT_COMPLETE) == PCRE2_ERROR_NOMEMORY)
        st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
fail:
    free(model);
    free(pre);
    return st;
}

enum dllm_status dllm_vocab_load(const struct dllm_gguf *gguf, struct dllm_vocab **out,
                                 struct dllm_error *err)
{
    *out = NULL;
    struct dllm_vocab *v = calloc(1, sizeof *v);
    if (!v)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    enum dllm_status st;
    if ((st = load_pre(v, gguf, err)) || (st = load_tokens(v, gguf, err)) ||
        (st = load_merges(v, gguf, err)) || (st = load_specials(v, gguf, err)) ||
        (st = load_special_list(v, err)) || (st = load_pieces(v, err)))
        goto fail;
    *out = v;
    return DLLM_OK;
fail:
    dllm_vocab_free(v);
    return st;
}

void dllm_vocab_free(struct dllm_vocab *v)
{
    if (!v)
        return;
    pcre2_code_free(v->regex);
    pcre2_general_context_free(v->regex_mem);
    free(v->attr);
    free(v->text);
    free(v->text_off);
    free(v->piece);
    free(v->piece_off);
    free(v->index);
    free(v->merges);
    free(v->specials);
    free(v);
}

int32_t dllm_vocab_size(const struct dllm_vocab *v)
{
    return v->n_tokens;
}

int32_t dllm_vocab_special(const struct dllm_vocab *v, enum dllm_special_token which)
{
    return (unsigned)which < N_SPECIAL ? v->special[which] : -1;
}

static bool in_range(const struct dllm_vocab *v, int32_t id)
{
    return id >= 0 && id < v->n_tokens;
}

bool dllm_vocab_is_eog(const struct dllm_vocab *v, int32_t id)
{
    return in_range(v, id) && (v->attr[id] & ATTR_EOG);
}

enum dllm_token_type dllm_vocab_token_type(const struct dllm_vocab *v, int32_t id)
{
    return in_range(v, id) ? (enum dllm_token_type)(v->attr[id] & ATTR_TYPE)
                           : DLLM_TOKEN_TYPE_UNDEFINED;
}

const char *dllm_vocab_token_text(const struct dllm_vocab *v, int32_t id, size_t *len)
{
    if (!in_range(v, id))
        return NULL;
    size_t n;
    const char *t = text_of(v, id, &n);
    if (len)
        *len = n;
    return t;
}

const char *dllm_vocab_token_bytes(const struct dllm_vocab *v, int32_t id, size_t *len)
{
    if (!in_range(v, id))
        return NULL;
    if (len)
        *len = v->piece_off[id + 1] - v->piece_off[id];
    return v->piece + v->piece_off[id];
}

/* ---- encoding ----------------------------------------------------------------------------- */

/* A growing array of token ids. */
struct ids {
    int32_t *v;
    size_t n, cap;
};

static bool ids_push(struct ids *a, int32_t id)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 64;
        int32_t *p = realloc(a->v, cap * sizeof *p);
        if (!p)
            return false;
        a->v = p;
        a->cap = cap;
    }
    a->v[a->n++] = id;
    return true;
}

/* One symbol of a word being merged: a token and its neighbours (-1 at the ends). */
struct symbol {
    int32_t id; /* -1 once merged into its left neighbour */
    int32_t prev, next;
};

/* A candidate merge of the adjacent symbols left and right, valid while both keep their ids. */
struct candidate {
    int32_t rank, left, right;
    int32_t left_id, right_id, result;
};

/* Scratch space of one encoding call, grown to the longest word. */
struct bpe {
    struct symbol *sym;
    struct candidate *heap;
    size_t n_heap, cap; /* cap: symbols; the heap holds up to 3 * cap */
    char *word;         /* the word in byte-level characters, 2 * cap bytes */
};

static bool cand_less(const struct candidate *a, const struct candidate *b)
{
    return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

static void heap_push(struct bpe *w, struct candidate c)
{
    size_t i = w->n_heap++;
    while (i > 0 && cand_less(&c, &w->heap[(i - 1) / 2])) {
        w->heap[i] = w->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    w->heap[i] = c;
}

static struct candidate heap_pop(struct bpe *w)
{
    struct candidate top = w->heap[0], last = w->heap[--w->n_heap];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= w->n_heap)
            break;
        if (c + 1 < w->n_heap && cand_less(&w->heap[c + 1], &w->heap[c]))
            c++;
        if (!cand_less(&w->heap[c], &last))
            break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (w->n_heap)
        w->heap[i] = last;
    return top;
}

/* Queues the merge of symbols left and right, when they are both present and have one. */
static void try_pair(const struct dllm_vocab *v, struct bpe *w, int32_t left, int32_t right)
{
    if (left < 0 || right < 0)
        return;
    const struct merge *m = find_merge(v, w->sym[left].id, w->sym[right].id);
    if (m)
        heap_push(w, (struct candidate){m->rank, left, right, w->sym[left].id, w->sym[right].id,
                                        m->result});
}

static bool bpe_reserve(struct bpe *w, size_t n)
{
    if (n <= w->cap)
        return true;
    struct symbol *sym = realloc(w->sym, n * sizeof *sym);
    if (sym)
        w->sym = sym;
    struct candidate *heap = realloc(w->heap, 3 * n * sizeof *heap);
    if (heap)
        w->heap = heap;
    char *word = realloc(w->word, 2 * n);
    if (word)
        w->word = word;
    if (!sym || !heap || !word)
        return false;
    w->cap = n;
    return true;
}

/* Appends the tokens of one pre-tokenized word of n bytes. */
static bool encode_word(const struct dllm_vocab *v, struct bpe *w, const unsigned char *s, size_t n,
                        struct ids *out)
{
    if (n == 1)
        return ids_push(out, v->byte_token[s[0]]);
    if (!bpe_reserve(w, n))
        return false;
    if (v->pre->ignore_merges) {
        size_t len = 0;
        for (size_t i = 0; i < n; i++)
            len += dllm_tokenizer_byte_text(s[i], w->word + len);
        int32_t id = dllm_vocab_find(v, w->word, len);
        if (id >= 0)
            return ids_push(out, id);
    }
    for (size_t i = 0; i < n; i++)
        w->sym[i] =
            (struct symbol){v->byte_token[s[i]], (int32_t)i - 1, i + 1 < n ? (int32_t)i + 1 : -1};
    w->n_heap = 0;
    for (size_t i = 0; i + 1 < n; i++)
        try_pair(v, w, (int32_t)i, (int32_t)i + 1);
    while (w->n_heap) {
        struct candidate c = heap_pop(w);
        struct symbol *l = &w->sym[c.left], *r = &w->sym[c.right];
        if (l->id != c.left_id || r->id != c.right_id || l->next != c.right)
            continue; /* one of the two has merged since */
        l->id = c.result;
        r->id = -1;
        l->next = r->next;
        if (r->next >= 0)
            w->sym[r->next].prev = c.left;
        try_pair(v, w, l->prev, c.left);
        try_pair(v, w, c.left, l->next);
    }
    for (int32_t i = 0; i >= 0; i = w->sym[i].next)
        if (!ids_push(out, w->sym[i].id))
            return false;
    return true;
}

/*
 * Splits n bytes of ordinary text into words with the pre-tokenizer's expression and appends
 * their tokens. Text between two matches is a word too.
 */
static enum dllm_status encode_text(const struct dllm_vocab *v, pcre2_match_data *md, struct bpe *w,
                                    const char *text, size_t n, struct ids *out,
                                    struct dllm_error *err)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t done = 0, from = 0;
    while (from < n) {
        int rc = pcre2_match(v->regex, s, n, from, 0, md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH)
            break;
        if (rc < 0) {
            PCRE2_UCHAR msg[128];
            pcre2_get_error_message(rc, msg, sizeof msg);
            return dllm_error_set(err, DLLM_ERR_UNSUPPORTED, "the %s pre-tokenizer failed: %s",
                                  v->pre->name, (const char *)msg);
        }
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t start = ov[0], end = ov[1];
        if (end == start) { /* no alternative matches empty text; be safe anyway */
            from = start + 1;
            continue;
        }
        if ((start > done && !encode_word(v, w, s + done, start - done, out)) ||
            !encode_word(v, w, s + start, end - start, out))
            return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
        done = from = end;
    }
    if (done < n && !encode_word(v, w, s + done, n - done, out))
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    return DLLM_OK;
}

/* A span of the input: ordinary text (id -1) or one special token. */
struct fragment {
    size_t start, len;
    int32_t id;
};

struct fragments {
    struct fragment *v;
    size_t n, cap;
};

static bool frag_push(struct fragments *a, struct fragment f)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 16;
        struct fragment *p = realloc(a->v, cap * sizeof *p);
        if (!p)
            return false;
        a->v = p;
        a->cap = cap;
    }
    a->v[a->n++] = f;
    return true;
}

/*
 * Cuts the special tokens out of the text: for each token, longest first, every occurrence in
 * the spans still ordinary text becomes that token. *frags receives the spans in order.
 */
static bool split_specials(const struct dllm_vocab *v, const char *text, size_t len,
                           bool parse_control, struct fragments *frags)
{
    struct fragments next = {0};
    frags->n = 0;
    if (!frag_push(frags, (struct fragment){0, len, -1}))
        return false;
    for (int32_t k = 0; k < v->n_specials; k++) {
        int32_t id = v->specials[k];
        if (!parse_control && (v->attr[id] & ATTR_TYPE) != DLLM_TOKEN_TYPE_USER_DEFINED)
            continue;
        size_t tlen;
        const char *t = text_of(v, id, &tlen);
        next.n = 0;
        for (size_t i = 0; i < frags->n; i++) {
            struct fragment f = frags->v[i];
            const char *p;
            while (f.id < 0 && f.len >= tlen && (p = memmem(text + f.start, f.len, t, tlen))) {
                size_t at = (size_t)(p - text);
                if ((at > f.start &&
                     !frag_push(&next, (struct fragment){f.start, at - f.start, -1})) ||
                    !frag_push(&next, (struct fragment){at, tlen, id})) {
                    free(next.v);
                    return false;
                }
                f.len -= at + tlen - f.start;
                f.start = at + tlen;
            }
            if (f.len > 0 && !frag_push(&next, f)) {
                free(next.v);
                return false;
            }
        }
        struct fragments swap = *frags;
        *frags = next;
        next = swap;
    }
    free(next.v);
    return true;
}

enum dllm_status dllm_vocab_encode(const struct dllm_vocab *v, const char *text, size_t len,
                                   unsigned flags, int32_t **ids, int64_t *n_ids,
                                   struct dllm_error *err)
{
    *ids = NULL;
    *n_ids = 0;
    struct ids out = {0};
    struct fragments frags = {0};
    struct bpe w = {0};
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(v->regex, v->regex_mem);
    enum dllm_status st = DLLM_OK;
    bool add = flags & DLLM_ENCODE_ADD_SPECIAL;
    if (!md || !split_specials(v, text, len, flags & DLLM_ENCODE_PARSE_SPECIAL, &frags) ||
        (add && v->add_bos && !ids_push(&out, v->special[DLLM_SPECIAL_BOS]))) {
        st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < frags.n; i++) {
        const struct fragment *f = &frags.v[i];
        if (f->id >= 0 && !ids_push(&out, f->id)) {
            st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
            goto fail;
        }
        if (f->id < 0 && (st = encode_text(v, md, &w, text + f->start, f->len, &out, err)))
            goto fail;
    }
    if (add && v->add_eos && !ids_push(&out, v->special[DLLM_SPECIAL_EOS])) {
        st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    *ids = out.v;
    *n_ids = (int64_t)out.n;
    out.v = NULL;
fail:
    free(out.v);
    free(frags.v);
    free(w.sym);
    free(w.heap);
    free(w.word);
    pcre2_match_data_free(md);
    return st;
}

/* ---- decoding ----------------------------------------------------------------------------- */

/* The bytes token id renders as under the decoding flags (none for a skipped token). */
static const char *rendered(const struct dllm_vocab *v, int32_t id, unsigned flags, size_t *len)
{
    int type = v->attr[id] & ATTR_TYPE;
    if (!(flags & DLLM_DECODE_SPECIAL) && type != DLLM_TOKEN_TYPE_NORMAL &&
        type != DLLM_TOKEN_TYPE_USER_DEFINED) {
        *len = 0;
        return v->piece;
    }
    return dllm_vocab_token_bytes(v, id, len);
}

enum dllm_status dllm_vocab_decode(const struct dllm_vocab *v, const int32_t *ids, int64_t n,
                                   unsigned flags, char **text, size_t *len, struct dllm_error *err)
{
    *text = NULL;
    *len = 0;
    size_t total = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!in_range(v, ids[i]))
            return dllm_error_set(err, DLLM_ERR_ARG,
                                  "token id %d (at %lld) is outside the vocabulary of %d tokens",
                                  ids[i], (long long)i, v->n_tokens);
        size_t k;
        rendered(v, ids[i], flags, &k);
        total += k;
    }
    char *s = malloc(total + 1);
    if (!s)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory for %zu bytes", total);
    size_t o = 0;
    for (int64_t i = 0; i < n; i++) {
        size_t k;
        const char *p = rendered(v, ids[i], flags, &k);
        memcpy(s + o, p, k);
        o += k;
    }
    s[o] = 0;
    *text = s;
    *len = o;
    return DLLM_OK;
}

struct dllm_decoder {
    const struct dllm_vocab *vocab;
    unsigned flags;
    char held[4]; /* the start of an unfinished character */
    size_t n_held;
    char *buf; /* held bytes plus the longest piece */
};

enum dllm_status dllm_decoder_new(const struct dllm_vocab *vocab, unsigned flags,
                                  struct dllm_decoder **out, struct dllm_error *err)
{
    *out = NULL;
    struct dllm_decoder *d = calloc(1, sizeof *d);
    char *buf = malloc(vocab->max_piece + sizeof d->held);
    if (!d || !buf) {
        free(d);
        free(buf);
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    }
    d->vocab = vocab;
    d->flags = flags;
    d->buf = buf;
    *out = d;
    return DLLM_OK;
}

void dllm_decoder_free(struct dllm_decoder *d)
{
    if (!d)
        return;
    free(d->buf);
    free(d);
}

enum dllm_status dllm_decoder_push(struct dllm_decoder *d, int32_t id, const char **text,
                                   size_t *len, struct dllm_error *err)
{
    *text = d->buf;
    *len = 0;
    if (!in_range(d->vocab, id))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "token id %d is outside the vocabulary of %d "
                              "tokens",
                              id, d->vocab->n_tokens);
    size_t k;
    const char *p = rendered(d->vocab, id, d->flags, &k);
    memcpy(d->buf, d->held, d->n_held);
    memcpy(d->buf + d->n_held, p, k);
    size_t n = d->n_held + k;
    d->n_held = utf8_unfinished(d->buf, n);
    memcpy(d->held, d->buf + n - d->n_held, d->n_held);
    *len = n - d->n_held;
    return DLLM_OK;
}

void dllm_decoder_flush(struct dllm_decoder *d, const char **text, size_t *len)
{
    memcpy(d->buf, d->held, d->n_held);
    *text = d->buf;
    *len = d->n_held;
    d->n_held = 0;
}
