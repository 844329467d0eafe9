/*
 * The AVX-512 row maths (kernels/rowmath.h): 8 doubles per 512-bit vector, so the 8 partial
 * sums are one accumulator, and comparisons give mask registers. The functions themselves are
 * in rowmath-simd.h; this file defines its vector interface, and the band and keep filters,
 * which need VCOMPRESSPD. Built with -mavx512f -mavx512dq and -ffp-contract=off: nothing is
 * fused, so the bits are the reference's.
 */
#include "config.h"

#include "kernels/rowmath.h"

#include <immintrin.h>

#define RM_ISA    avx512
#define RM_INLINE static inline __attribute__((always_inline))
#define RM_LANES  8

typedef __m512d vd;
typedef __m512i vl;
typedef __mmask8 vm;
typedef __m512 vf;

RM_INLINE vd vd_zero(void)
{
    return _mm512_setzero_pd();
}

RM_INLINE vd vd_set1(double x)
{
    return _mm512_set1_pd(x);
}

RM_INLINE vd vd_loadu(const double *p)
{
    return _mm512_loadu_pd(p);
}

/* Eight floats widened to doubles. */
RM_INLINE vd vd_loadf(const float *p)
{
    return _mm512_cvtps_pd(_mm256_loadu_ps(p));
}

RM_INLINE void vd_storeu(double *p, vd v)
{
    _mm512_storeu_pd(p, v);
}

RM_INLINE vd vd_add(vd a, vd b)
{
    return _mm512_add_pd(a, b);
}

RM_INLINE vd vd_sub(vd a, vd b)
{
    return _mm512_sub_pd(a, b);
}

RM_INLINE vd vd_mul(vd a, vd b)
{
    return _mm512_mul_pd(a, b);
}

RM_INLINE vd vd_div(vd a, vd b)
{
    return _mm512_div_pd(a, b);
}

/* VMAXPD: b where either is NaN. */
RM_INLINE vd vd_max(vd a, vd b)
{
    return _mm512_max_pd(a, b);
}

RM_INLINE vd vd_or(vd a, vd b)
{
    return _mm512_or_pd(a, b);
}

/* The sign bit flipped. */
RM_INLINE vd vd_neg(vd a)
{
    return _mm512_xor_pd(a, _mm512_set1_pd(-0.0));
}

RM_INLINE vl vd_bits(vd a)
{
    return _mm512_castpd_si512(a);
}

RM_INLINE vd vd_from_bits(vl a)
{
    return _mm512_castsi512_pd(a);
}

RM_INLINE vm vd_gt(vd a, vd b)
{
    return _mm512_cmp_pd_mask(a, b, _CMP_GT_OQ);
}

RM_INLINE vm vd_ge(vd a, vd b)
{
    return _mm512_cmp_pd_mask(a, b, _CMP_GE_OQ);
}

RM_INLINE vm vd_eq(vd a, vd b)
{
    return _mm512_cmp_pd_mask(a, b, _CMP_EQ_OQ);
}

/* Not equal, or either NaN. */
RM_INLINE vm vd_ne(vd a, vd b)
{
    return _mm512_cmp_pd_mask(a, b, _CMP_NEQ_UQ);
}

RM_INLINE bool vm_none(vm m)
{
    return m == 0;
}

/* t where m is set, else f. */
RM_INLINE vd vd_select(vm m, vd t, vd f)
{
    return _mm512_mask_blend_pd(m, f, t);
}

/* a where m is set, else +0. */
RM_INLINE vd vd_keep(vm m, vd a)
{
    return _mm512_maskz_mov_pd(m, a);
}

RM_INLINE vl vl_set1(long long x)
{
    return _mm512_set1_epi64(x);
}

/* 0, 1, ..., 7. */
RM_INLINE vl vl_iota(void)
{
    return _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
}

RM_INLINE void vl_storeu(long long *p, vl v)
{
    _mm512_storeu_si512(p, v);
}

RM_INLINE vl vl_add(vl a, vl b)
{
    return _mm512_add_epi64(a, b);
}

RM_INLINE vl vl_sub(vl a, vl b)
{
    return _mm512_sub_epi64(a, b);
}

RM_INLINE vl vl_or(vl a, vl b)
{
    return _mm512_or_si512(a, b);
}

RM_INLINE vl vl_and(vl a, vl b)
{
    return _mm512_and_si512(a, b);
}

RM_INLINE vl vl_slli(vl a, int n)
{
    return _mm512_slli_epi64(a, (unsigned)n);
}

RM_INLINE vl vl_srli(vl a, int n)
{
    return _mm512_srli_epi64(a, (unsigned)n);
}

RM_INLINE vl vl_select(vm m, vl t, vl f)
{
    return _mm512_mask_blend_epi64(m, f, t);
}

/* c plus one in each lane m sets. */
RM_INLINE vl vl_count(vl c, vm m)
{
    return _mm512_mask_add_epi64(c, m, c, _mm512_set1_epi64(1));
}

RM_INLINE vf vf_set1(float x)
{
    return _mm512_set1_ps(x);
}

RM_INLINE vf vf_loadu(const float *p)
{
    return _mm512_loadu_ps(p);
}

RM_INLINE void vf_storeu(float *p, vf v)
{
    _mm512_storeu_ps(p, v);
}

/* VMAXPS: b where either is NaN. */
RM_INLINE vf vf_max(vf a, vf b)
{
    return _mm512_max_ps(a, b);
}

#include "kernels/rowmath-simd.h"

/*
 * The filters below copy what they keep with VCOMPRESSPD into a register and a full store at
 * the next free place (which never passes the element being read, so stays within the
 * output), not with its memory form, which Zen 4 runs slowly. The last n mod 8 elements go one
 * at a time.
 */

/* The indices v, ..., v + 7 compressed by m to the first lanes, stored as 8 int32 at id. */
RM_INLINE void store_ids(int32_t *id, vm m, int64_t v)
{
    const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 0, 0, 0, 0, 0, 0, 0, 0);
    __m512i ids = _mm512_add_epi32(lanes, _mm512_set1_epi32((int32_t)v));
    _mm256_storeu_si256((__m256i *)(void *)id,
                        _mm512_castsi512_si256(_mm512_maskz_compress_epi32(m, ids)));
}

int64_t dllm_rowmath_band_avx512(const double *y, int64_t n, double lo, double hi, bool dense,
                                 double *out_p, int32_t *out_id, uint64_t *above)
{
    (void)dense; /* no branch to predict */
    uint64_t first_bits = lo > 0.0 ? dllm_rowmath_bits(lo) : 1, hi_bits = dllm_rowmath_bits(hi);
    const vl first = vl_set1((long long)first_bits),
             width = vl_set1((long long)(hi_bits - first_bits)), top = vl_set1((long long)hi_bits);
    const vd unit = vd_set1(0x1p62);
    vl mass = vl_set1(0);
    int64_t m = 0, v = 0;
    for (; v + 8 <= n; v += 8) {
        vd x = vd_loadu(y + v);
        vl b = vd_bits(x);
        vm up = _mm512_cmpge_epu64_mask(b, top);
        mass = _mm512_mask_add_epi64(mass, up, mass, _mm512_cvttpd_epi64(vd_mul(x, unit)));
        vm in = _mm512_cmplt_epu64_mask(vl_sub(b, first), width);
        _mm512_storeu_pd(out_p + m, _mm512_maskz_compress_pd(in, x));
        store_ids(out_id + m, in, v);
        m += __builtin_popcount(in);
    }
    uint64_t lanes[8], sum = 0;
    vl_storeu((long long *)lanes, mass);
    for (int i = 0; i < 8; i++)
        sum += lanes[i];
    for (; v < n; v++) {
        uint64_t b = dllm_rowmath_bits(y[v]);
        if (b >= hi_bits)
            sum += dllm_rowmath_fixed_mass(y[v]);
        if (b - first_bits < hi_bits - first_bits) {
            out_p[m] = y[v];
            out_id[m++] = (int32_t)v;
        }
    }
    *above = sum;
    return m;
}

int64_t dllm_rowmath_keep_avx512(const double *y, int64_t n, double theta, int64_t last, double kth,
                                 int64_t expect, double *out_p, int32_t *out_id)
{
    (void)expect; /* no branch to predict */
    const vd t = vd_set1(theta), k = vd_set1(kth), zero = vd_zero();
    const vl lastv = vl_set1((long long)last);
    vl idx = vl_iota();
    int64_t m = 0, v = 0;
    for (; v + 8 <= n; v += 8) {
        vd x = vd_loadu(y + v);
        vm tie = vd_eq(x, t) & _mm512_cmple_epi64_mask(idx, lastv);
        vm keep = vd_gt(x, zero) & (vd_gt(x, t) | tie) & vd_ge(x, k);
        _mm512_storeu_pd(out_p + m, _mm512_maskz_compress_pd(keep, x));
        store_ids(out_id + m, keep, v);
        m += __builtin_popcount(keep);
        idx = vl_add(idx, vl_set1(8));
    }
    for (; v < n; v++)
        if (dllm_rowmath_kept(y[v], v, theta, last, kth)) {
            out_p[m] = y[v];
            out_id[m++] = (int32_t)v;
        }
    return m;
}
