/*
 * The block kernels of ops.h for AVX-512F: ops-simd.h over 512-bit vectors. Score blocks of 12
 * keys by 16 queries and weighted-sum blocks of 4 queries by 64 dimensions keep 12 and 16
 * accumulators in the 32 registers.
 */
#include <immintrin.h>
#include <stdint.h>

typedef __m512 ovf;
typedef __m512d ovd;

#define OV_N        16
#define QK_QV       1
#define QK_KB       12
#define PV_M        4
#define PV_DV       4
#define OPS_NAME(f) dllm_##f##_avx512
#define OPS_INLINE  static inline __attribute__((always_inline))

OPS_INLINE ovf ov_zero(void)
{
    return _mm512_setzero_ps();
}

OPS_INLINE ovf ov_set1(float x)
{
    return _mm512_set1_ps(x);
}

OPS_INLINE ovf ov_loadu(const float *p)
{
    return _mm512_loadu_ps(p);
}

OPS_INLINE void ov_storeu(float *p, ovf v)
{
    _mm512_storeu_ps(p, v);
}

OPS_INLINE ovf ov_bcast(const float *p)
{
    return _mm512_set1_ps(*p);
}

OPS_INLINE ovf ov_load_part(const float *p, int64_t n)
{
    return _mm512_maskz_loadu_ps((__mmask16)((1u << n) - 1), p);
}

OPS_INLINE void ov_store_part(float *p, ovf v, int64_t n)
{
    _mm512_mask_storeu_ps(p, (__mmask16)((1u << n) - 1), v);
}

OPS_INLINE ovf ov_add(ovf a, ovf b)
{
    return _mm512_add_ps(a, b);
}

OPS_INLINE ovf ov_sub(ovf a, ovf b)
{
    return _mm512_sub_ps(a, b);
}

OPS_INLINE ovf ov_mul(ovf a, ovf b)
{
    return _mm512_mul_ps(a, b);
}

OPS_INLINE ovf ov_div(ovf a, ovf b)
{
    return _mm512_div_ps(a, b);
}

OPS_INLINE ovf ov_fmadd(ovf a, ovf b, ovf c)
{
    return _mm512_fmadd_ps(a, b, c);
}

OPS_INLINE ovf ov_min(ovf a, ovf b)
{
    return _mm512_min_ps(a, b);
}

OPS_INLINE ovf ov_max(ovf a, ovf b)
{
    return _mm512_max_ps(a, b);
}

OPS_INLINE ovf ov_round(ovf x)
{
    return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

/* VSCALEFPS: p * 2^n rounded once, overflow and underflow included. */
OPS_INLINE ovf ov_scale2(ovf p, ovf n)
{
    return _mm512_scalef_ps(p, n);
}

OPS_INLINE ovf ov_dup_pairs(ovf c)
{
    const __m512i idx = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    return _mm512_permutexvar_ps(idx, c);
}

OPS_INLINE ovf ov_swap_pairs(ovf v)
{
    return _mm512_permute_ps(v, 0xb1);
}

OPS_INLINE ovf ov_neg_even(ovf v)
{
    const __m512i sign = _mm512_set1_epi64(0x80000000);
    return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), sign));
}

OPS_INLINE ovd ovd_zero(void)
{
    return _mm512_setzero_pd();
}

/* The low and high 8 floats of v as doubles. */
OPS_INLINE __m512d lo_d(ovf v)
{
    return _mm512_cvtps_pd(_mm512_castps512_ps256(v));
}

OPS_INLINE __m512d hi_d(ovf v)
{
    return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

OPS_INLINE void ov_acc_d(ovd a[2], ovf v)
{
    a[0] = _mm512_add_pd(a[0], lo_d(v));
    a[1] = _mm512_add_pd(a[1], hi_d(v));
}

OPS_INLINE void ov_acc_sq_d(ovd a[2], ovf v)
{
    const __m512d lo = lo_d(v), hi = hi_d(v);
    a[0] = _mm512_fmadd_pd(lo, lo, a[0]);
    a[1] = _mm512_fmadd_pd(hi, hi, a[1]);
}

OPS_INLINE double ovd_hsum(const ovd a[2])
{
    return _mm512_reduce_add_pd(_mm512_add_pd(a[0], a[1]));
}

OPS_INLINE ovf ovd_recip_f(const ovd a[2])
{
    const __m512d one = _mm512_set1_pd(1.0);
    const __m256 lo = _mm512_cvtpd_ps(_mm512_div_pd(one, a[0]));
    const __m256 hi = _mm512_cvtpd_ps(_mm512_div_pd(one, a[1]));
    const __m512d both =
        _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(lo)), _mm256_castps_pd(hi), 1);
    return _mm512_castpd_ps(both);
}

#include "kernels/ops-simd.h"
