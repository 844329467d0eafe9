/*
 * A forward pass with a K/V cache written from the reference kernels alone, for the tests that
 * check the engine's cached passes against it.
 */
#ifndef DLLM_TESTS_REF_PASS_H
#define DLLM_TESTS_REF_PASS_H

#include "model.h"

#include <stdbool.h>
#include <stdint.h>

/*
 * The logits [n_rows, n_vocab] of the rows `rows` (inside [begin, end)) of a pass of model m
 * over ids[0 .. n-1] that computes only the positions [begin, end): in each layer their
 * queries attend over the keys and values of all n positions, those of [begin, end) computed
 * and written into kv, the others read from kv. kv holds, layer after layer, the keys and then
 * the values, each [n, n_head_kv * head_dim]. With f16 the computed keys and values are rounded
 * through binary16 (gguf/quant.h) before the attention reads them, as a float16 cache keeps
 * them.
 */
void ref_pass(const struct dllm_model *m, const int32_t *ids, int64_t n, int64_t begin, int64_t end,
              bool f16, float *kv, const int32_t *rows, int64_t n_rows, float *logits);

#endif
