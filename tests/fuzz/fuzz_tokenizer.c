/*
 * libFuzzer target: random bytes through the tokenizer of each vocabulary fixture (qwen2,
 * gpt-2, llada-moe pre-tokenizers), with and without special-token parsing. Decoding must
 * give the input back, in one call and through the incremental decoder.
 */
#include "dllm.h"
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

static const char *const vocab_files[] = {
    "tokenizer/dream-vocab.gguf",
    "tokenizer/llamacpp-tests/ggml-vocab-gpt-2.gguf",
    "models/llada-tiny-q4km.gguf",
};
#define N_VOCABS (sizeof vocab_files / sizeof vocab_files[0])

static struct dllm_vocab *vocabs[N_VOCABS];

/* Loads the vocabularies once, from $DLLM_FIXTURES or the fixtures beside the checkout. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_load_vocabs(vocab_files, N_VOCABS, vocabs);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const struct dllm_vocab *v = vocabs[data[0] % N_VOCABS];
    unsigned flags = data[0] & 0x80 ? DLLM_ENCODE_PARSE_SPECIAL : 0;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    int32_t *ids;
    int64_t n;
    if (dllm_vocab_encode(v, text, len, flags, &ids, &n, NULL))
        abort();
    char *back;
    size_t back_len;
    if (dllm_vocab_decode(v, ids, n, DLLM_DECODE_SPECIAL, &back, &back_len, NULL) ||
        back_len != len || memcmp(back, text, len) != 0)
        abort();
    free(back);

    struct dllm_decoder *d;
    if (dllm_decoder_new(v, DLLM_DECODE_SPECIAL, &d, NULL))
        abort();
    size_t o = 0;
    for (int64_t i = 0; i < n; i++) {
        const char *piece;
        size_t k;
        if (dllm_decoder_push(d, ids[i], &piece, &k, NULL) || o + k > len ||
            memcmp(piece, text + o, k) != 0)
            abort();
        o += k;
    }
    const char *rest;
    size_t k;
    dllm_decoder_flush(d, &rest, &k);
    if (o + k != len || memcmp(rest, text + o, k) != 0)
        abort();
    dllm_decoder_free(d);
    free(ids);
    fuzz_accepted++;
    return 0;
}
