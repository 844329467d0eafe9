/*
 * The element-wise and attention kernels of a transformer block, beside the matrix products
 * of matmul.h: RMSNorm, rotary position embedding, non-causal attention, SwiGLU, addition.
 * Formulas follow llama.cpp's CPU backend (shared/docs/reference.md A.1). The *_ref functions
 * are the scalar specification that faster variants are tested against. None allocates.
 */
#ifndef DLLM_KERNELS_OPS_H
#define DLLM_KERNELS_OPS_H

#include <stdint.h>

/* How RoPE pairs the dimensions of a head: (2j, 2j+1), or (j, j + n_rot/2) for NeoX. */
enum dllm_rope_mode { DLLM_ROPE_NORMAL, DLLM_ROPE_NEOX };

/*
 * RMSNorm of one row: y[j] = (x[j] * s) * g[j] with s = 1 / sqrtf(mean(x^2) + eps), the sum
 * of squares in double. y may be x.
 */
void dllm_rms_norm_ref(const float *x, const float *g, float eps, int64_t n, float *y);

/*
 * RoPE tables for positions 0..n_pos-1: cos[p * n_rot/2 + j] = cos(theta_j(p)) and likewise
 * sin, where theta_j(p) = p * base^(-2j/n_rot), the powers formed by repeated float
 * multiplication as ggml does. n_rot is even.
 */
void dllm_rope_table(float base, int64_t n_rot, int64_t n_pos, float *cos, float *sin);

/*
 * Rotates the first n_rot dimensions of each of n_heads heads (head_dim apart) in x, one
 * token, by that token's table rows cos[n_rot/2] and sin[n_rot/2]:
 *   x'_a = x_a cos - x_b sin,  x'_b = x_a sin + x_b cos
 * for the pairs (a, b) the mode names.
 */
void dllm_rope_ref(float *x, int64_t n_heads, int64_t head_dim, int64_t n_rot,
                   enum dllm_rope_mode mode, const float *cos, const float *sin);

/*
 * Bidirectional grouped-query attention for the query rows [i0, i1) of L tokens:
 *   out[i, h] = sum_j softmax_j(scale * q[i, h] . k[j, g]) v[j, g],  g = h / (n_head/n_kv)
 * with q, out [L, n_head * head_dim] and k, v [L, n_kv * head_dim], heads contiguous inside a
 * row. Products and weighted sums in float, the softmax denominator in double. scores is
 * scratch of L floats.
 */
void dllm_attention_ref(const float *q, const float *k, const float *v, int64_t L, int64_t n_head,
                        int64_t n_kv, int64_t head_dim, float scale, int64_t i0, int64_t i1,
                        float *scores, float *out);

/* SwiGLU in place: gate[i] = silu(gate[i]) * up[i], silu(x) = x / (1 + e^-x). */
void dllm_swiglu_ref(float *gate, const float *up, int64_t n);

/* y[i] += x[i]. */
void dllm_add_ref(float *y, const float *x, int64_t n);

#endif
