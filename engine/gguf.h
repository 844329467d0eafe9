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

#endif
