/*
 * The element-wise and attention kernels of a transformer block, beside the matrix products
 * of matmul.h: RMSNorm, rotary position embedding, non-causal attention, SwiGLU, addition.
 * Formulas follow llama.cpp's CPU backend (ggml/src/ggml-cpu/ops.cpp: rms_norm, rope, soft_max).
 * The *_ref functions are the scalar specification that faster variants are tested against. None
 * allocates.
 */
#ifndef DLLM_KERNELS_OPS_H
#define DLLM_KERNELS_OPS_H

#include "dllm.h"

#include <stddef.h>
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
 * Bidirectional grouped-query attention for the query rows [i0, i1) of L tokens and the query
 * heads of the kv heads [g0, g1):
 *   out[i, h] = sum_j softmax_j(scale * q[i, h] . k[j, g]) v[j, g],  g = h / (n_head/n_kv)
 * with q, out [L, n_head * head_dim] and k, v [L, n_kv * head_dim], heads contiguous inside a
 * row. Products and weighted sums in float, the softmax denominator in double. scores is
 * scratch of L floats.
 */
void dllm_attention_ref(const float *q, const float *k, const float *v, int64_t L, int64_t n_head,
                        int64_t n_kv, int64_t head_dim, float scale, int64_t i0, int64_t i1,
                        int64_t g0, int64_t g1, float *scores, float *out);

/* SwiGLU in place: gate[i] = silu(gate[i]) * up[i], silu(x) = x / (1 + e^-x). */
void dllm_swiglu_ref(float *gate, const float *up, int64_t n);

/* y[i] += x[i]. */
void dllm_add_ref(float *y, const float *x, int64_t n);

/*
 * Vectorized variants of the kernels above, chosen at run time like the matrix kernels
 * (kernels/cpu.h). Each computes what its *_ref function does, in the same order of operations
 * where it can; tests/test_ops.c names the tolerances that remain:
 * - rms_norm and rope: the same float operations; the sum of squares still in double, in
 *   another order, so the mean may differ in its last bit.
 * - attention: dot products and weighted sums by FMA (one rounding instead of two per term,
 *   terms in the reference's order); e^x by a polynomial within 2 ulp of expf over the whole
 *   float range (0 below about -103.9, inf above 88.72); the denominator still in double.
 * - swiglu: the same e^x.
 * Attention copies each kv head's keys and values side by side once per call, then processes
 * that head's queries (token, head) in tiles of DLLM_ATTN_TILE, so a call is fastest when
 * (i1 - i0) * n_head / n_kv is a multiple of the tile and large beside L (splitting work over
 * threads by kv head before splitting it by rows copies less); each thread needs its own
 * scratch.
 */
#define DLLM_ATTN_TILE 16

struct dllm_kernels;

/* One variant: the name and CPU features as in struct dllm_kernels, the *_ref signatures. */
struct dllm_ops {
    const char *name;  /* "ref", "avx2" or "avx512" */
    unsigned features; /* the enum dllm_cpu_feature bits it needs */
    void (*rms_norm)(const float *x, const float *g, float eps, int64_t n, float *y);
    void (*rope)(float *x, int64_t n_heads, int64_t head_dim, int64_t n_rot,
                 enum dllm_rope_mode mode, const float *cos, const float *sin);
    void (*attention)(const float *q, const float *k, const float *v, int64_t L, int64_t n_head,
                      int64_t n_kv, int64_t head_dim, float scale, int64_t i0, int64_t i1,
                      int64_t g0, int64_t g1, float *scores, float *out);
    void (*swiglu)(float *gate, const float *up, int64_t n);
    void (*add)(float *y, const float *x, int64_t n);
};

/*
 * Floats of scratch (the scores argument) any variant's attention needs for L tokens:
 * DLLM_ATTN_TILE * (head_dim + L) + 2 * L * head_dim (a query tile, its scores, and one kv
 * head's keys and values packed). 64-byte alignment is best.
 */
int64_t dllm_ops_attention_scratch(int64_t L, int64_t head_dim);

/* All variants, slowest first; *n receives their count. */
const struct dllm_ops *dllm_ops_all(size_t *n);

/* Whether this CPU runs a variant. */
bool dllm_ops_usable(const struct dllm_ops *ops);

/* The fastest variant that needs no CPU feature beyond those of the matrix kernels k. */
const struct dllm_ops *dllm_ops_for(const struct dllm_kernels *k);

/*
 * The variant that goes with the matrix kernels dllm_kernels_select picks for force (so
 * "ref" gives the reference and "avxvnni" gives avx2), with its errors.
 */
enum dllm_status dllm_ops_select(const char *force, const struct dllm_ops **out,
                                 struct dllm_error *err);

/* The SIMD variants' entry points, defined in ops-<name>.c. */
void dllm_rms_norm_avx2(const float *x, const float *g, float eps, int64_t n, float *y);
void dllm_rope_avx2(float *x, int64_t n_heads, int64_t head_dim, int64_t n_rot,
                    enum dllm_rope_mode mode, const float *cos, const float *sin);
void dllm_attention_avx2(const float *q, const float *k, const float *v, int64_t L, int64_t n_head,
                         int64_t n_kv, int64_t head_dim, float scale, int64_t i0, int64_t i1,
                         int64_t g0, int64_t g1, float *scores, float *out);
void dllm_swiglu_avx2(float *gate, const float *up, int64_t n);
void dllm_add_avx2(float *y, const float *x, int64_t n);
void dllm_rms_norm_avx512(const float *x, const float *g, float eps, int64_t n, float *y);
void dllm_rope_avx512(float *x, int64_t n_heads, int64_t head_dim, int64_t n_rot,
                      enum dllm_rope_mode mode, const float *cos, const float *sin);
void dllm_attention_avx512(const float *q, const float *k, const float *v, int64_t L,
                           int64_t n_head, int64_t n_kv, int64_t head_dim, float scale, int64_t i0,
                           int64_t i1, int64_t g0, int64_t g1, float *scores, float *out);
void dllm_swiglu_avx512(float *gate, const float *up, int64_t n);
void dllm_add_avx512(float *y, const float *x, int64_t n);

#endif
