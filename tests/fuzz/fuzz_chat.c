/*
 * libFuzzer target: chat template recognition and rendering. The input is a template's source,
 * then messages, each a NUL, a role byte (system, user, assistant, tool or an unknown role)
 * and the content. The source is tried with the vocabulary of each fixture model (one per
 * chat format); a template it recognises renders the messages, and the encoded prompt must
 * decode back to the rendered text.
 */
#include "chat.h"
#include "dllm.h"
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

#define MSGS_MAX 16

static const char *const vocab_files[] = {
    "models/llada-tiny-q4km.gguf",     /* llama3 */
    "models/dream-tiny-q4km.gguf",     /* chatml */
    "models/llada-moe-tiny-q4km.gguf", /* ling */
    "models/rnd1-tiny-q4km.gguf",      /* qwen3 */
};
#define N_VOCABS (sizeof vocab_files / sizeof vocab_files[0])

static struct dllm_vocab *vocabs[N_VOCABS];

/* Loads the vocabularies once, from $DLLM_FIXTURES or the fixtures beside the checkout. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_load_vocabs(vocab_files, N_VOCABS, vocabs);
    return 0;
}

/* Renders and encodes the messages; aborts when the ids do not give the text back. */
static void render(const struct dllm_chat_template *t, const struct dllm_vocab *v,
                   const struct dllm_chat_message *msgs, size_t n)
{
    char *text;
    size_t len;
    if (dllm_chat_render(t, msgs, n, &text, &len, NULL) != DLLM_OK)
        return;
    if (strlen(text) != len)
        abort();
    int32_t *ids;
    int64_t n_ids;
    char *back;
    size_t back_len;
    if (dllm_chat_encode(t, msgs, n, &ids, &n_ids, NULL) != DLLM_OK ||
        dllm_vocab_decode(v, ids, n_ids, DLLM_DECODE_SPECIAL, &back, &back_len, NULL) != DLLM_OK ||
        back_len != len || memcmp(back, text, len) != 0)
        abort();
    free(back);
    free(ids);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const roles[] = {"system", "user", "assistant", "tool", "critic"};
    char *copy = malloc(size + 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    copy[size] = '\0';
    size_t src_len = strlen(copy);
    struct dllm_chat_message msgs[MSGS_MAX];
    size_t n = 0;
    for (size_t p = src_len; p < size && n < MSGS_MAX; n++) {
        const char *part = copy + p + 1;
        size_t part_len = strlen(part);
        msgs[n].role = roles[part_len ? (uint8_t)part[0] % 5 : 0];
        msgs[n].content = part_len ? part + 1 : part;
        p += 1 + part_len;
    }
    for (size_t k = 0; k < N_VOCABS; k++) {
        struct dllm_chat_template *t;
        if (dllm_chat_template_new(copy, src_len, vocabs[k], &t, NULL) != DLLM_OK)
            continue;
        fuzz_accepted++;
        if (n)
            render(t, vocabs[k], msgs, n);
        dllm_chat_template_free(t);
    }
    for (size_t i = 0; i < n; i++) {
        size_t start, len = dllm_chat_trim(msgs[i].content, strlen(msgs[i].content), &start);
        if (start + len > strlen(msgs[i].content))
            abort();
    }
    free(copy);
    return 0;
}
