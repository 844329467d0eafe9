/* GGUF reader internals the forward pass uses. */
#ifndef DLLM_GGUF_H
#define DLLM_GGUF_H

#include "dllm.h"

#include <stddef.h>
#include <stdint.h>

/*
 * Tells the kernel that the bytes [p, p + n) of a mapped file's image will not be read for a
 * while, so their pages leave the process's resident set (a later read maps them in again
 * from the file). Does nothing for an image in memory (dllm_gguf_open_memory).
 */
void dllm_gguf_release_pages(const struct dllm_gguf *g, const void *p, size_t n);

#endif
