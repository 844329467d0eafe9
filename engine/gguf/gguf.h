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
/*
 * Maps in the pages of a mapped file's bytes [p, p + n) with one call (Linux 5.14's
 * MADV_POPULATE_READ), instead of a page fault every few pages as they are first read; a
 * kernel without it, or a file read into memory, leaves them to be faulted in.
 */
void dllm_gguf_prefault(const struct dllm_gguf *g, const void *p, size_t n);

#endif
