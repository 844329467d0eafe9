/* Random weight blocks for the synthetic models (synth.c). */
#ifndef DLLM_SYNTH_RANDOM_BLOCKS_H
#define DLLM_SYNTH_RANDOM_BLOCKS_H

#include "rng.h"

#include <stddef.h>
#include <stdint.h>

/*
 * n random blocks of a tensor type (Q4_K, Q5_K, Q6_K, Q8_0, or the fallbacks Q5_0 and Q5_1 of
 * rows that are no multiple of 256) into out, whose values have mean
 * about 0 and standard deviation about sigma: uniform quants (standard deviation
 * sqrt((levels^2 - 1) / 12)) under random scales.
 */
void synth_random_blocks(uint32_t type, float sigma, struct synth_rng *rng, void *out, size_t n);

#endif
