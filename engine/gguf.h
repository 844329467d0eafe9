/* GGUF internals shared by the reader (gguf.c) and the writer (gguf_write.c). */
#ifndef DLLM_GGUF_H
#define DLLM_GGUF_H

#include "dllm.h"

#include <stddef.h>
#include <stdint.h>

/* How many metadata value types GGUF has: the ids 0 to DLLM_GGUF_N_TYPES - 1. */
#define DLLM_GGUF_N_TYPES 13

/* Bytes of one element of a scalar value type; 0 for strings, arrays and unknown ids. */
size_t dllm_gguf_value_size(uint32_t type);

/*
 * Tells the kernel that the bytes [p, p + n) of a mapped file's image will not be read for a
 * while, so their pages leave the process's resident set (a later read maps them in again
 * from the file). Does nothing for an image in memory (dllm_gguf_open_memory).
 */
void dllm_gguf_release_pages(const struct dllm_gguf *g, const void *p, size_t n);

#endif
