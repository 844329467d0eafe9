/* Random weight blocks for the synthetic models, in the GGUF block layouts. */
#include "config.h"

#include "random_blocks.h"
#include "dllm.h"
#include "gguf/blocks.h"

#include <string.h>

/* A uniform integer in [0, n). */
static uint32_t draw(struct synth_rng *rng, uint32_t n)
{
    return (uint32_t)(((synth_rng_next(rng) >> 32) * n) >> 32);
}

/* A factor in [0.75, 1.25) that varies the scale of each block. */
static float jitter(struct synth_rng *rng)
{
    return 0.75f + 0.5f * (float)synth_rng_uniform(rng);
}

static void random_bytes(struct synth_rng *rng, uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i += 8) {
        uint64_t x = synth_rng_next(rng);
        memcpy(p + i, &x, n - i < 8 ? n - i : 8);
    }
}

/*
 * Random Q4_K/Q5_K sub-block scales: even sc in [8, 30] (root mean square 20.2) and mn = sc/2,
 * packed as get_scale_min_k4 unpacks them. With dmin = levels * d the minimum d * sc * levels
 * / 2 puts the middle of the quant range at zero.
 */
static void k4_scales(struct synth_rng *rng, uint8_t s[12])
{
    uint8_t sc[8], mn[8];
    for (int j = 0; j < 8; j++) {
        sc[j] = (uint8_t)(2 * (4 + draw(rng, 12)));
        mn[j] = sc[j] / 2;
    }
    for (int j = 0; j < 4; j++) {
        s[j] = (uint8_t)(sc[j] | (sc[j + 4] >> 4) << 6);
        s[j + 4] = (uint8_t)(mn[j] | (mn[j + 4] >> 4) << 6);
        s[j + 8] = (uint8_t)((sc[j + 4] & 15) | (mn[j + 4] & 15) << 4);
    }
}

/*
 * Random Q3_K scales: signed, of size 8 to 31 (root mean square 20.7), stored plus 32 in six
 * bits as dllm_q3_K_scales unpacks them.
 */
static void q3_scales(struct synth_rng *rng, uint8_t s[12])
{
    uint8_t raw[16];
    for (int j = 0; j < 16; j++) {
        const int v = 8 + (int)draw(rng, 24);
        raw[j] = (uint8_t)(32 + (draw(rng, 2) ? v : -v));
    }
    for (int j = 0; j < 4; j++) {
        s[j] = (uint8_t)((raw[j] & 15) | (raw[j + 8] & 15) << 4);
        s[j + 4] = (uint8_t)((raw[j + 4] & 15) | (raw[j + 12] & 15) << 4);
        s[j + 8] = (uint8_t)(raw[j] >> 4 | (raw[j + 4] >> 4) << 2 | (raw[j + 8] >> 4) << 4 |
                             (raw[j + 12] >> 4) << 6);
    }
}

/*
 * n random blocks of a type whose values have mean about 0 and standard deviation about sigma:
 * uniform quants (standard deviation sqrt((levels^2 - 1) / 12)) under random scales.
 */
void synth_random_blocks(uint32_t type, float sigma, struct synth_rng *rng, void *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (type) {
        case DLLM_TYPE_Q4_K: {
            struct block_q4_K *b = (struct block_q4_K *)out + i;
            const float d = sigma / (20.2f * 4.61f) * jitter(rng);
            b->d = dllm_f32_to_fp16(d);
            b->dmin = dllm_f32_to_fp16(15.0f * d);
            k4_scales(rng, b->scales);
            random_bytes(rng, b->qs, sizeof b->qs);
            break;
        }
        case DLLM_TYPE_Q5_K: {
            struct block_q5_K *b = (struct block_q5_K *)out + i;
            const float d = sigma / (20.2f * 9.23f) * jitter(rng);
            b->d = dllm_f32_to_fp16(d);
            b->dmin = dllm_f32_to_fp16(31.0f * d);
            k4_scales(rng, b->scales);
            random_bytes(rng, b->qh, sizeof b->qh);
            random_bytes(rng, b->qs, sizeof b->qs);
            break;
        }
        case DLLM_TYPE_Q6_K: {
            /* scales of random sign and size 8 to 31 (root mean square 20.7) */
            struct block_q6_K *b = (struct block_q6_K *)out + i;
            random_bytes(rng, b->ql, sizeof b->ql);
            random_bytes(rng, b->qh, sizeof b->qh);
            for (int j = 0; j < QK_K / 16; j++) {
                int s = 8 + (int)draw(rng, 24);
                b->scales[j] = (int8_t)(draw(rng, 2) ? s : -s);
            }
            b->d = dllm_f32_to_fp16(sigma / (20.7f * 18.47f) * jitter(rng));
            break;
        }
        case DLLM_TYPE_Q3_K: {
            /* d sc (q - 4) with q uniform in [0, 7] (root mean square of q - 4: 2.35) */
            struct block_q3_K *b = (struct block_q3_K *)out + i;
            random_bytes(rng, b->hmask, sizeof b->hmask);
            random_bytes(rng, b->qs, sizeof b->qs);
            q3_scales(rng, b->scales);
            b->d = dllm_f32_to_fp16(sigma / (20.7f * 2.35f) * jitter(rng));
            break;
        }
        case DLLM_TYPE_Q2_K: {
            /* d sc q - d mn with sc in {4, 6, 8, 10} and mn = 1.5 sc, centred: d sc (q - 1.5) */
            struct block_q2_K *b = (struct block_q2_K *)out + i;
            random_bytes(rng, b->qs, sizeof b->qs);
            for (int j = 0; j < QK_K / 16; j++) {
                const int sc = 2 * (2 + (int)draw(rng, 4));
                b->scales[j] = (uint8_t)(sc | (3 * sc / 2) << 4);
            }
            const float d = sigma / (7.35f * 1.118f) * jitter(rng);
            b->d = dllm_f32_to_fp16(d);
            b->dmin = b->d;
            break;
        }
        case DLLM_TYPE_Q4_0: {
            /* d (q - 8) with q uniform in [0, 15] */
            struct block_q4_0 *b = (struct block_q4_0 *)out + i;
            b->d = dllm_f32_to_fp16(sigma / 4.61f * jitter(rng));
            random_bytes(rng, b->qs, sizeof b->qs);
            break;
        }
        case DLLM_TYPE_Q5_0: {
            /* d (q - 16) with q uniform in [0, 31] */
            struct block_q5_0 *b = (struct block_q5_0 *)out + i;
            b->d = dllm_f32_to_fp16(sigma / 9.23f * jitter(rng));
            random_bytes(rng, b->qh, sizeof b->qh);
            random_bytes(rng, b->qs, sizeof b->qs);
            break;
        }
        case DLLM_TYPE_Q5_1: {
            /* d q + m with q uniform in [0, 31] and m = -15.5 d, centred on 0 */
            struct block_q5_1 *b = (struct block_q5_1 *)out + i;
            const float d = sigma / 9.23f * jitter(rng);
            b->d = dllm_f32_to_fp16(d);
            b->m = dllm_f32_to_fp16(-15.5f * d);
            random_bytes(rng, b->qh, sizeof b->qh);
            random_bytes(rng, b->qs, sizeof b->qs);
            break;
        }
        case DLLM_TYPE_F16: {
            /* one value a block, uniform in [-sqrt(3) sigma, sqrt(3) sigma) */
            const float u = (float)synth_rng_uniform(rng) - 0.5f;
            ((uint16_t *)out)[i] = dllm_f32_to_fp16(3.4641f * sigma * u);
            break;
        }
        case DLLM_TYPE_Q8_0: {
            /* quants uniform in [-127, 127], four from each 64-bit draw */
            struct block_q8_0 *b = (struct block_q8_0 *)out + i;
            b->d = dllm_f32_to_fp16(sigma / 73.6f * jitter(rng));
            for (int j = 0; j < QK8_0; j += 4) {
                uint64_t x = synth_rng_next(rng);
                for (int k = 0; k < 4; k++, x >>= 16)
                    b->qs[j + k] = (int8_t)((int)(((x & 0xffff) * 255) >> 16) - 127);
            }
            break;
        }
        }
    }
}
