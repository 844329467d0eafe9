/* Test helper: token ids read from a GGUF file's own token list, independent of the tokenizer. */
#ifndef DLLM_TESTS_VOCAB_FIXTURE_H
#define DLLM_TESTS_VOCAB_FIXTURE_H

#include "dllm.h"

#include <stdint.h>

/* The id of the token whose text is text in g's tokenizer.ggml.tokens; aborts the test if none. */
int32_t file_token(const struct dllm_gguf *g, const char *text);

#endif
