/*
 * libFuzzer target: a GGUF file's tokenizer metadata (tokenizer.ggml.* and
 * tokenizer.chat_template) through the vocabulary loader and the chat template's recognition.
 * A vocabulary that loads must give a fixed text back through encoding and decoding (it has
 * every byte token: the loader checks that) unless a byte's token is not a normal one, and
 * every id must be readable.
 */
#define _GNU_SOURCE /* memmem */
#include "dllm.h"
#include "fuzz.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static const char sample[] = "Hello, world! <|im_end|> <|eot_id|> caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c"
                             "\xac 12345\n\t  x\x80y";

/*
 * Whether decoding ids must give the sample back: each is a normal token (its bytes read back
 * through the byte table) or one whose text occurs in the sample (matched before BPE). A byte's
 * token of another type decodes to its text, as in llama.cpp, which is not that byte.
 */
static bool must_round_trip(const struct dllm_vocab *v, const int32_t *ids, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        size_t len;
        const char *text = dllm_vocab_token_text(v, ids[i], &len);
        if (dllm_vocab_token_type(v, ids[i]) != DLLM_TOKEN_TYPE_NORMAL &&
            (len == 0 || !memmem(sample, sizeof sample - 1, text, len)))
            return false;
    }
    return true;
}

/* Encodes the sample with flags and aborts unless decoding gives it back where it must. */
static void round_trip(const struct dllm_vocab *v, unsigned flags)
{
    int32_t *ids;
    int64_t n;
    char *back;
    size_t len;
    if (dllm_vocab_encode(v, sample, sizeof sample - 1, flags, &ids, &n, NULL) != DLLM_OK)
        abort();
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= dllm_vocab_size(v))
            abort();
    if (dllm_vocab_decode(v, ids, n, DLLM_DECODE_SPECIAL, &back, &len, NULL) != DLLM_OK)
        abort();
    if (must_round_trip(v, ids, n) && (len != sizeof sample - 1 || memcmp(back, sample, len) != 0))
        abort();
    free(back);
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct dllm_gguf *g;
    struct dllm_vocab *v;
    if (dllm_gguf_open_memory(data, size, &g, NULL) != DLLM_OK)
        return 0;
    if (dllm_vocab_load(g, &v, NULL) != DLLM_OK) {
        dllm_gguf_close(g);
        return 0;
    }
    fuzz_accepted++;
    round_trip(v, 0);
    round_trip(v, DLLM_ENCODE_PARSE_SPECIAL);
    for (int32_t id = 0; id < dllm_vocab_size(v); id++) {
        size_t len;
        if (!dllm_vocab_token_text(v, id, &len) || !dllm_vocab_token_bytes(v, id, &len))
            abort();
        dllm_vocab_is_eog(v, id);
    }
    for (int s = DLLM_SPECIAL_BOS; s <= DLLM_SPECIAL_MASK; s++)
        if (dllm_vocab_special(v, s) >= dllm_vocab_size(v))
            abort();

    struct dllm_chat_template *t;
    if (dllm_chat_template_load(g, v, &t, NULL) == DLLM_OK) {
        const struct dllm_chat_message msgs[] = {{"system", "Be brief."}, {"user", "Hi"}};
        char *text;
        size_t len;
        if (dllm_chat_render(t, msgs, 2, &text, &len, NULL) == DLLM_OK)
            free(text);
        dllm_chat_template_free(t);
    }
    dllm_vocab_free(v);
    dllm_gguf_close(g);
    return 0;
}
