#include "random_data.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

double rng_uniform(uint64_t *s)
{
    return (double)(rng_next(s) >> 11) * 0x1p-53;
}

double rng_gauss(uint64_t *s)
{
    double u = 1.0 - rng_uniform(s), v = rng_uniform(s);
    return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

dllm_fp16 rng_scale(uint64_t *s, bool signed_ok)
{
    float v = (float)((0.5 + rng_uniform(s)) * 0x1p-6);
    return dllm_f32_to_fp16(signed_ok && (rng_next(s) & 1) ? -v : v);
}

/*
 * The min of a Q4_1 or Q5_1 block whose quantised values span 2 * half: a signed scale, or
 * -u * half times a positive scale.
 */
static dllm_fp16 rng_min(uint64_t *s, float half, enum random_scales scales)
{
    if (scales == RANDOM_SCALES_SIGNED) {
        return rng_scale(s, true);
    }
    const float u = (float)rng_uniform(s);
    return dllm_f32_to_fp16(-half * u * dllm_fp16_to_f32(rng_scale(s, false)));
}

void *random_weights(uint32_t wtype, int64_t N, int64_t K, enum random_scales scales, uint64_t *s)
{
    const bool sym_signed = scales == RANDOM_SCALES_SIGNED;
    const struct dllm_type_traits *tr = dllm_type_traits(wtype);
    const int64_t nblocks = N * K / tr->block_elems;
    uint8_t *w = malloc((size_t)nblocks * tr->block_bytes);
    /* not ck_assert: kernel_check uses this outside the check framework, where it exits */
    if (!w) {
        fprintf(stderr, "random_weights: out of memory\n");
        abort();
    }
    for (size_t i = 0; i < (size_t)nblocks * tr->block_bytes; i++) {
        w[i] = (uint8_t)rng_next(s);
    }
    for (int64_t b = 0; b < nblocks; b++) {
        void *blk = w + (size_t)b * tr->block_bytes;
        switch (wtype) {
        case DLLM_TYPE_Q4_K:
            ((struct block_q4_K *)blk)->d = rng_scale(s, false);
            ((struct block_q4_K *)blk)->dmin = rng_scale(s, false);
            break;
        case DLLM_TYPE_Q5_K:
            ((struct block_q5_K *)blk)->d = rng_scale(s, false);
            ((struct block_q5_K *)blk)->dmin = rng_scale(s, false);
            break;
        case DLLM_TYPE_Q6_K: ((struct block_q6_K *)blk)->d = rng_scale(s, sym_signed); break;
        case DLLM_TYPE_Q3_K: ((struct block_q3_K *)blk)->d = rng_scale(s, sym_signed); break;
        case DLLM_TYPE_Q2_K:
            ((struct block_q2_K *)blk)->d = rng_scale(s, false);
            ((struct block_q2_K *)blk)->dmin = rng_scale(s, false);
            break;
        case DLLM_TYPE_Q8_0: ((struct block_q8_0 *)blk)->d = rng_scale(s, sym_signed); break;
        case DLLM_TYPE_Q4_0: ((struct block_q4_0 *)blk)->d = rng_scale(s, sym_signed); break;
        case DLLM_TYPE_Q5_0: ((struct block_q5_0 *)blk)->d = rng_scale(s, sym_signed); break;
        case DLLM_TYPE_Q4_1:
            ((struct block_q4_1 *)blk)->d = rng_scale(s, false);
            ((struct block_q4_1 *)blk)->m = rng_min(s, 8.0f, scales);
            break;
        case DLLM_TYPE_Q5_1:
            ((struct block_q5_1 *)blk)->d = rng_scale(s, false);
            ((struct block_q5_1 *)blk)->m = rng_min(s, 16.0f, scales);
            break;
        case DLLM_TYPE_F16: ((dllm_fp16 *)w)[b] = dllm_f32_to_fp16((float)rng_gauss(s)); break;
        case DLLM_TYPE_BF16: ((dllm_bf16 *)w)[b] = dllm_f32_to_bf16((float)rng_gauss(s)); break;
        case DLLM_TYPE_F32: ((float *)w)[b] = (float)rng_gauss(s); break;
        default:
            fprintf(stderr, "random_weights: no weight generator for type %u\n", wtype);
            abort();
        }
    }
    return w;
}
