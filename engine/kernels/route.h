/*
 * The router of a mixture-of-experts layer (llama.cpp src/llama-graph.cpp build_moe_ffn with
 * LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX): softmax over all experts' router logits, the k most
 * probable kept, each weighted by its probability, optionally divided by the kept ones' sum.
 */
#ifndef DLLM_KERNELS_ROUTE_H
#define DLLM_KERNELS_ROUTE_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Routes one position from its router logits[n_expert]: ids[0 .. k-1] the k experts of the
 * largest logits, largest first (equal logits: the lower id first), weights[] their softmax
 * probabilities (the sum in double), divided by their sum when normalize. *margin is the
 * logit of ids[k-1] minus the largest logit left out (+inf when k = n_expert): how far the
 * choice is from changing. Allocates nothing; 1 <= k <= n_expert.
 */
void dllm_route(const float *logits, int64_t n_expert, int64_t k, bool normalize, int32_t *ids,
                float *weights, float *margin);

#endif
