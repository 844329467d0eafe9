/* Deterministic random test data: splitmix64 numbers and random blocks of the weight types. */
#ifndef DLLM_TESTS_RANDOM_DATA_H
#define DLLM_TESTS_RANDOM_DATA_H

#include "gguf/quant.h"

#include <stdbool.h>
#include <stdint.h>

/* The next splitmix64 output of state *s. */
uint64_t rng_next(uint64_t *s);

/* Uniform in [0, 1), from the top 53 bits of rng_next. */
double rng_uniform(uint64_t *s);

/* Standard normal (Box-Muller on two rng_uniform draws). */
double rng_gauss(uint64_t *s);

/* An fp16 block scale in [0.5, 1.5) * 2^-6, with a random sign when signed_ok. */
dllm_fp16 rng_scale(uint64_t *s, bool signed_ok);

/* How random_weights draws the fp16 scale fields of the quantised block types. */
enum random_scales {
    /*
     * Every scale positive; the min of Q4_1 and Q5_1 is -u * 2^(bits-1) times another scale
     * (u uniform in [0, 1)), so the decoded weights straddle 0 as real ones do.
     */
    RANDOM_SCALES_POSITIVE,
    /*
     * The scales of the symmetric types (Q6_K, Q8_0, Q4_0, Q5_0) and the mins of Q4_1 and
     * Q5_1 take a random sign; the scales and mins of Q4_K and Q5_K and the scales of Q4_1
     * and Q5_1 stay positive.
     */
    RANDOM_SCALES_SIGNED,
};

/*
 * N rows of K random weights of type wtype in a malloc'd buffer: random bytes for the
 * quantised values, sub-block scales and mins (every bit pattern is valid there), fp16 block
 * scales that are sane numbers drawn as scales says, and normal values for the float types.
 * Aborts the test for a type it has no generator for.
 */
void *random_weights(uint32_t wtype, int64_t N, int64_t K, enum random_scales scales, uint64_t *s);

#endif
