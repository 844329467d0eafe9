/* The reference forward pass (engine/forward.c), private parts. */
#ifndef DLLM_FORWARD_H
#define DLLM_FORWARD_H

#include "model.h"

#include <stddef.h>
#include <stdint.h>

struct dllm_threadpool;

/*
 * Bytes of the buffers a forward context for max_tokens tokens and max_rows logits rows
 * allocates, alignment included; SIZE_MAX when the size does not fit in size_t.
 */
size_t dllm_forward_bytes(const struct dllm_model *model, int64_t max_tokens, int64_t max_rows);

/* The thread pool a forward context runs its passes on, for other work between passes. */
struct dllm_threadpool *dllm_forward_pool(struct dllm_forward *fwd);

#endif
