/*
 * The synthetic models' random numbers: one splitmix64 stream (Steele, Lea and Flood, "Fast
 * splittable pseudorandom number generators", 2014), seeded with any 64-bit value.
 */
#ifndef DLLM_SYNTH_RNG_H
#define DLLM_SYNTH_RNG_H

#include <stdint.h>

struct synth_rng {
    uint64_t state;
};

/* The next 64 random bits. */
static inline uint64_t synth_rng_next(struct synth_rng *rng)
{
    uint64_t z = (rng->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A uniform double in [0, 1) from the top 53 bits. */
static inline double synth_rng_uniform(struct synth_rng *rng)
{
    return (double)(synth_rng_next(rng) >> 11) * 0x1.0p-53;
}

#endif
