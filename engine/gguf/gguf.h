/* GGUF reader internals the forward pass uses. */
#ifndef DLLM_GGUF_H
#define DLLM_GGUF_H

#include "dllm.h"

#include <stddef.h>
#include <stdint.h>

/*
 * Copies the bytes [p, p + n) of the image into dst: from a mapped file with pread, so that its
 * pages are never mapped into the process (the forward pass reads the matrices it repacks only
 * this once), from an image in memory (dllm_gguf_open_memory) with memcpy. Returns 0, or an
 * errno value when the file cannot be read (EIO when it has become shorter).
 */
int dllm_gguf_read(const struct dllm_gguf *g, const void *p, size_t n, void *dst);

#endif
