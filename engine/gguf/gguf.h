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

/* Maps and validates one GGUF file (dllm_gguf_open also joins a split model's parts). */
enum dllm_status dllm_gguf_open_file(const char *path, struct dllm_gguf **out,
                                     struct dllm_error *err);

/*
 * Makes part, another file of the split model g, a part of g: its tensors are listed in g from
 * then on (a name in two parts is an error) and it is closed with g, or at once on failure.
 */
enum dllm_status dllm_gguf_adopt_part(struct dllm_gguf *g, struct dllm_gguf *part,
                                      struct dllm_error *err);

#endif
