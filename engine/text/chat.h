/* Chat template internals, exposed for the tests. */
#ifndef DLLM_CHAT_H
#define DLLM_CHAT_H

#include "dllm.h"

/*
 * Trims what Jinja's `trim` filter (Python's str.strip()) removes from both ends of s[0..n-1]:
 * characters that are whitespace to Python, among them U+001C-U+001F, U+0085, U+00A0 and the
 * Unicode space separators. Sets *start and returns the trimmed length.
 */
size_t dllm_chat_trim(const char *s, size_t n, size_t *start);

#endif
