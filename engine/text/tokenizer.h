/* Tokenizer internals shared with the chat templates (UTF-8 decoding). */
#ifndef DLLM_TOKENIZER_H
#define DLLM_TOKENIZER_H

#include "dllm.h"

/*
 * Decodes the UTF-8 character at the start of s (n > 0 bytes available) into *cp. Returns its
 * length (1 to 4), or 0 when the bytes are not a well-formed character (overlong forms,
 * surrogates and code points above U+10FFFF are not).
 */
size_t dllm_tokenizer_utf8_decode(const char *s, size_t n, uint32_t *cp);

#endif
