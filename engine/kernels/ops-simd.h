/*
 * The block kernels of ops.h written once over a small float-vector interface, which the
 * including file (ops-avx2.c, ops-avx512.c) defines first:
 *
 *   ovf, ovd            vectors of OV_N floats and of OV_N / 2 doubles
 *   OPS_NAME(f)         the entry point's name for kernel f
 *   OPS_INLINE          static inline, always inlined
 *   QK_QV, QK_KB        score blocks: QK_QV vectors of queries (QK_QV * OV_N = DLLM_ATTN_TILE)
 *                       by QK_KB keys
 *   PV_M, PV_DV         weighted-sum blocks: PV_M queries by PV_DV vectors of dimensions
 *   ov_zero, ov_set1, ov_loadu, ov_storeu, ov_bcast (one float from memory in every lane)
 *   ov_load_part(p, n), ov_store_part(p, v, n): the first n < OV_N lanes only; zeros in the
 *                       others when loading; nothing beyond p[n - 1] is touched
 *   ov_add, ov_sub, ov_mul, ov_div, ov_fmadd(a, b, c) = a * b + c rounded once
 *   ov_min, ov_max      returning the second operand when either is NaN (MINPS, MAXPS)
 *   ov_round            to the nearest integer, ties to even
 *   ov_scale2(p, n)     p * 2^n for integral n in [-150, 128], rounded once
 *   ov_dup_pairs(c)     lanes (c0, c0, c1, c1, ...) from the low half of c
 *   ov_swap_pairs(v)    lanes (v1, v0, v3, v2, ...)
 *   ov_neg_even(v)      the even lanes negated
 *   ov_acc_d(a, v), ov_acc_sq_d(a, v): a[0..1] += v, v * v in double, lane by lane
 *   ovd_hsum(a)         the sum of all lanes of a[0] and a[1]
 *   ovd_recip_f(a)      the floats (float)(1.0 / a) of a[0] (low lanes) and a[1] (high lanes)
 *
 * Files that include this one are compiled with -ffp-contract=off, so that only the FMAs named
 * here are fused and the other kernels round as their references do.
 */
#ifndef DLLM_OPS_SIMD_H
#define DLLM_OPS_SIMD_H

#include "kernels/ops.h"

#include <math.h>
#include <string.h>

_Static_assert((QK_QV * OV_N) == DLLM_ATTN_TILE, "a score tile is DLLM_ATTN_TILE queries wide");
_Static_assert(DLLM_ATTN_TILE % PV_M == 0, "weighted-sum blocks tile the queries");

/* The floats p[0 .. min(n, OV_N)), zeros after them: a loop's next vector, n elements left. */
OPS_INLINE ovf ld(const float *p, int64_t n)
{
    return n >= OV_N ? ov_loadu(p) : ov_load_part(p, n);
}

/* Stores the first min(n, OV_N) lanes of v at p. */
OPS_INLINE void st(float *p, ovf v, int64_t n)
{
    if (n >= OV_N) {
        ov_storeu(p, v);
    } else {
        ov_store_part(p, v, n);
    }
}

/*
 * e^x per lane, as Cephes' expf: x = n ln2 + r with n = round(x / ln2) and |r| <= ln2 / 2
 * (ln2 split in two so that n ln2 is exact), e^r by a degree-7 polynomial, then 2^n. Clamping x
 * to [-104, 89] keeps n in ov_scale2's range while e^x still underflows to 0 and overflows to
 * inf where expf does; NaN stays NaN.
 */
OPS_INLINE ovf ov_exp(ovf x)
{
    x = ov_max(ov_set1(-104.0f), ov_min(ov_set1(89.0f), x));
    const ovf n = ov_round(ov_mul(x, ov_set1(1.44269504088896341f)));
    ovf r = ov_fmadd(n, ov_set1(-0.693359375f), x);
    r = ov_fmadd(n, ov_set1(2.12194440e-4f), r);
    ovf p = ov_set1(1.9875691500e-4f);
    p = ov_fmadd(p, r, ov_set1(1.3981999507e-3f));
    p = ov_fmadd(p, r, ov_set1(8.3334519073e-3f));
    p = ov_fmadd(p, r, ov_set1(4.1665795894e-2f));
    p = ov_fmadd(p, r, ov_set1(1.6666665459e-1f));
    p = ov_fmadd(p, r, ov_set1(5.0000001201e-1f));
    p = ov_add(ov_fmadd(p, ov_mul(r, r), r), ov_set1(1.0f));
    return ov_scale2(p, n);
}

/* The sum of squares in double lanes, then the reference's float operations lane by lane. */
void OPS_NAME(rms_norm)(const float *x, const float *g, float eps, int64_t n, float *y)
{
    ovd acc[2] = {ovd_zero(), ovd_zero()};
    for (int64_t j = 0; j < n; j += OV_N) {
        ov_acc_sq_d(acc, ld(x + j, n - j));
    }
    const float mean = (float)(ovd_hsum(acc) / (double)n);
    const ovf s = ov_set1(1.0f / sqrtf(mean + eps));
    for (int64_t j = 0; j < n; j += OV_N) {
        st(y + j, ov_mul(ov_mul(ld(x + j, n - j), s), ld(g + j, n - j)), n - j);
    }
}

/*
 * NeoX pairs (j, j + n_rot/2) rotate a vector of j at a time; normal pairs (2j, 2j + 1) sit
 * side by side, so x' = x * (c0, c0, c1, c1, ...) + (-x1 s0, x0 s0, -x3 s1, x2 s1, ...).
 */
void OPS_NAME(rope)(float *x, int64_t n_heads, int64_t head_dim, int64_t n_rot,
                    enum dllm_rope_mode mode, const float *cos, const float *sin)
{
    const int64_t half = n_rot / 2;
    for (int64_t h = 0; h < n_heads; h++) {
        float *xh = x + h * head_dim;
        if (mode == DLLM_ROPE_NEOX) {
            for (int64_t j = 0; j < half; j += OV_N) {
                const int64_t m = half - j;
                const ovf c = ld(cos + j, m), s = ld(sin + j, m);
                const ovf a = ld(xh + j, m), b = ld(xh + half + j, m);
                st(xh + j, ov_sub(ov_mul(a, c), ov_mul(b, s)), m);
                st(xh + half + j, ov_add(ov_mul(a, s), ov_mul(b, c)), m);
            }
        } else {
            for (int64_t j = 0; j < half; j += OV_N / 2) {
                const int64_t m = half - j < OV_N / 2 ? half - j : OV_N / 2;
                const ovf c = ov_dup_pairs(ld(cos + j, m)), s = ov_dup_pairs(ld(sin + j, m));
                const ovf a = ld(xh + 2 * j, 2 * m);
                const ovf r = ov_neg_even(ov_mul(ov_swap_pairs(a), s));
                st(xh + 2 * j, ov_add(ov_mul(a, c), r), 2 * m);
            }
        }
    }
}

/*
 * Scores of one block of nb keys k[nb][head_dim] against the tile's queries
 * qt[head_dim][DLLM_ATTN_TILE]: s[b][c] = scale * sum_d k[b][d] qt[d][c], the sum over d in
 * order as the reference does.
 */
OPS_INLINE void score_block(const float *qt, const float *k, int64_t head_dim, float scale, int nb,
                            float *s)
{
    ovf acc[QK_KB][QK_QV];
#pragma GCC unroll 32
    for (int b = 0; b < nb; b++) {
#pragma GCC unroll 4
        for (int c = 0; c < QK_QV; c++) {
            acc[b][c] = ov_zero();
        }
    }
    for (int64_t d = 0; d < head_dim; d++) {
        ovf qv[QK_QV];
#pragma GCC unroll 4
        for (int c = 0; c < QK_QV; c++) {
            qv[c] = ov_loadu(qt + d * DLLM_ATTN_TILE + c * OV_N);
        }
#pragma GCC unroll 32
        for (int b = 0; b < nb; b++) {
            const ovf kb = ov_bcast(k + b * head_dim + d);
#pragma GCC unroll 4
            for (int c = 0; c < QK_QV; c++) {
                acc[b][c] = ov_fmadd(kb, qv[c], acc[b][c]);
            }
        }
    }
#pragma GCC unroll 32
    for (int b = 0; b < nb; b++) {
#pragma GCC unroll 4
        for (int c = 0; c < QK_QV; c++) {
            ov_storeu(s + b * DLLM_ATTN_TILE + c * OV_N, ov_mul(acc[b][c], ov_set1(scale)));
        }
    }
}

/*
 * Softmax down each column of s[L][DLLM_ATTN_TILE], in place: e^(s - max) over the column's
 * sum in double, multiplied by its reciprocal in float, as the reference does per query.
 */
static void softmax_columns(float *s, int64_t L)
{
    ovf mx[QK_QV];
    ovd sum[QK_QV][2];
#pragma GCC unroll 4
    for (int c = 0; c < QK_QV; c++) {
        mx[c] = ov_set1(-INFINITY);
        sum[c][0] = sum[c][1] = ovd_zero();
    }
    for (int64_t j = 0; j < L; j++) {
#pragma GCC unroll 4
        for (int c = 0; c < QK_QV; c++) {
            mx[c] = ov_max(mx[c], ov_loadu(s + j * DLLM_ATTN_TILE + c * OV_N));
        }
    }
    for (int64_t j = 0; j < L; j++) {
#pragma GCC unroll 4
        for (int c = 0; c < QK_QV; c++) {
            float *p = s + j * DLLM_ATTN_TILE + c * OV_N;
            const ovf e = ov_exp(ov_sub(ov_loadu(p), mx[c]));
            ov_storeu(p, e);
            ov_acc_d(sum[c], e);
        }
    }
    ovf inv[QK_QV];
#pragma GCC unroll 4
    for (int c = 0; c < QK_QV; c++) {
        inv[c] = ovd_recip_f(sum[c]);
    }
    for (int64_t j = 0; j < L; j++) {
#pragma GCC unroll 4
        for (int c = 0; c < QK_QV; c++) {
            float *p = s + j * DLLM_ATTN_TILE + c * OV_N;
            ov_storeu(p, ov_mul(ov_loadu(p), inv[c]));
        }
    }
}

/*
 * out[m][d + e] = sum_j p[j][m] v[j][d + e] for the PV_M queries whose weights are the columns
 * p[.][0..PV_M) of the score tile, v [L, head_dim], j in order, and nv vectors of dimensions e
 * from d, the last holding n_last of them. Only the first n_out queries are stored.
 */
OPS_INLINE void weighted_block(const float *p, const float *v, int64_t head_dim, int64_t L, int nv,
                               int64_t n_last, float *const *out, int64_t d, int n_out)
{
    ovf acc[PV_M][PV_DV];
#pragma GCC unroll 16
    for (int m = 0; m < PV_M; m++) {
#pragma GCC unroll 8
        for (int x = 0; x < nv; x++) {
            acc[m][x] = ov_zero();
        }
    }
    for (int64_t j = 0; j < L; j++) {
        ovf vv[PV_DV];
#pragma GCC unroll 8
        for (int x = 0; x < nv; x++) {
            vv[x] = ld(v + j * head_dim + d + x * OV_N, x == nv - 1 ? n_last : OV_N);
        }
#pragma GCC unroll 16
        for (int m = 0; m < PV_M; m++) {
            const ovf pm = ov_bcast(p + j * DLLM_ATTN_TILE + m);
#pragma GCC unroll 8
            for (int x = 0; x < nv; x++) {
                acc[m][x] = ov_fmadd(pm, vv[x], acc[m][x]);
            }
        }
    }
#pragma GCC unroll 16
    for (int m = 0; m < PV_M; m++) {
#pragma GCC unroll 8
        for (int x = 0; x < nv; x++) {
            if (m < n_out) {
                st(out[m] + d + x * OV_N, acc[m][x], x == nv - 1 ? n_last : OV_N);
            }
        }
    }
}

/*
 * Attention of one tile of nt <= DLLM_ATTN_TILE queries q[c] of the kv head whose keys and
 * values are k and v [L, head_dim]: the queries transposed into qt[head_dim][DLLM_ATTN_TILE]
 * (zero columns beyond nt), scores s[L][DLLM_ATTN_TILE] by blocks of keys, softmax down the
 * columns, then the weighted sums of v by blocks of queries and dimensions into out[c].
 */
static void attention_tile(const float *const *q, float *const *out, int64_t nt, const float *k,
                           const float *v, int64_t L, int64_t head_dim, float scale, float *qt,
                           float *s)
{
    for (int64_t c = 0; c < DLLM_ATTN_TILE; c++) {
        for (int64_t d = 0; d < head_dim; d++) {
            qt[d * DLLM_ATTN_TILE + c] = c < nt ? q[c][d] : 0.0f;
        }
    }
    int64_t j = 0;
    for (; j + QK_KB <= L; j += QK_KB) {
        score_block(qt, k + j * head_dim, head_dim, scale, QK_KB, s + j * DLLM_ATTN_TILE);
    }
    for (; j < L; j++) {
        score_block(qt, k + j * head_dim, head_dim, scale, 1, s + j * DLLM_ATTN_TILE);
    }
    softmax_columns(s, L);
    for (int64_t m = 0; m < nt; m += PV_M) {
        int64_t d = 0;
        for (; d + PV_DV * OV_N <= head_dim; d += PV_DV * OV_N) {
            weighted_block(s + m, v, head_dim, L, PV_DV, OV_N, out + m, d, (int)(nt - m));
        }
        for (; d < head_dim; d += OV_N) {
            weighted_block(s + m, v, head_dim, L, 1, head_dim - d, out + m, d, (int)(nt - m));
        }
    }
}

/*
 * Per kv head g in [g0, g1), its queries are the pairs (token i in [i0, i1), head h of g's
 * group), taken DLLM_ATTN_TILE at a time. g's keys and values are first copied side by side,
 * kp and vp [L, head_dim]: rows n_kv * head_dim floats apart (a power of two) would fall into
 * the same few cache sets. scores holds qt, s (see attention_tile), kp and vp.
 */
void OPS_NAME(attention)(const float *q, const float *k, const float *v, int64_t L, int64_t n_head,
                         int64_t n_kv, int64_t head_dim, float scale, int64_t i0, int64_t i1,
                         int64_t g0, int64_t g1, float *scores, float *out)
{
    const int64_t group = n_head / n_kv, q_stride = n_head * head_dim;
    const int64_t kv_stride = n_kv * head_dim, nq = (i1 - i0) * group;
    float *qt = scores, *s = qt + DLLM_ATTN_TILE * head_dim, *kp = s + DLLM_ATTN_TILE * L;
    float *vp = kp + L * head_dim;
    for (int64_t g = g0; nq > 0 && g < g1; g++) {
        for (int64_t j = 0; j < L; j++) {
            memcpy(kp + j * head_dim, k + j * kv_stride + g * head_dim, head_dim * sizeof *kp);
            memcpy(vp + j * head_dim, v + j * kv_stride + g * head_dim, head_dim * sizeof *vp);
        }
        for (int64_t t0 = 0; t0 < nq; t0 += DLLM_ATTN_TILE) {
            const int64_t nt = nq - t0 < DLLM_ATTN_TILE ? nq - t0 : DLLM_ATTN_TILE;
            const float *qp[DLLM_ATTN_TILE];
            float *op[DLLM_ATTN_TILE];
            for (int64_t c = 0; c < nt; c++) {
                const int64_t i = i0 + (t0 + c) / group, h = g * group + (t0 + c) % group;
                qp[c] = q + i * q_stride + h * head_dim;
                op[c] = out + i * q_stride + h * head_dim;
            }
            attention_tile(qp, op, nt, kp, vp, L, head_dim, scale, qt, s);
        }
    }
}

/* gate = gate / (1 + e^-gate) * up, in the reference's order. */
void OPS_NAME(swiglu)(float *gate, const float *up, int64_t n)
{
    for (int64_t i = 0; i < n; i += OV_N) {
        const ovf g = ld(gate + i, n - i);
        const ovf silu = ov_div(g, ov_add(ov_set1(1.0f), ov_exp(ov_sub(ov_zero(), g))));
        st(gate + i, ov_mul(silu, ld(up + i, n - i)), n - i);
    }
}

/* y += x, lane by lane. */
void OPS_NAME(add)(float *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i += OV_N) {
        st(y + i, ov_add(ld(y + i, n - i), ld(x + i, n - i)), n - i);
    }
}

#endif
