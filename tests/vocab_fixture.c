#include "vocab_fixture.h"

#include <check.h>
#include <string.h>

int32_t file_token(const struct dllm_gguf *g, const char *text)
{
    const struct dllm_gguf_value *tokens = dllm_gguf_find(g, "tokenizer.ggml.tokens");
    for (uint64_t i = 0; i < tokens->arr.n; i++) {
        struct dllm_gguf_value e;
        dllm_gguf_array_get(tokens, i, &e);
        if (e.str.len == strlen(text) && memcmp(e.str.ptr, text, e.str.len) == 0)
            return (int32_t)i;
    }
    ck_abort_msg("no token '%s' in the file", text);
    return -1;
}
