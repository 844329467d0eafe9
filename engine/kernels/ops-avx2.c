/*
 * The block kernels of ops.h for AVX2 and FMA: ops-simd.h over 256-bit vectors. Score blocks
 * of 6 keys by 16 queries and weighted-sum blocks of 4 queries by 16 dimensions keep 12 and 8
 * accumulators in the 16 registers.
 */
#include <immintrin.h>
#include <stdint.h>

typedef __m256 ovf;
typedef __m256d ovd;

#define OV_N        8
#define QK_QV       2
#define QK_KB       6
#define PV_M        4
#define PV_DV       2
#define OPS_NAME(f) dllm_##f##_avx2
#define OPS_INLINE  static inline __attribute__((always_inline))

OPS_INLINE ovf ov_zero(void)
{
    return _mm256_setzero_ps();
}

OPS_INLINE ovf ov_set1(float x)
{
    return _mm256_set1_ps(x);
}

OPS_INLINE ovf ov_loadu(const float *p)
{
    return _mm256_loadu_ps(p);
}

OPS_INLINE void ov_storeu(float *p, ovf v)
{
    _mm256_storeu_ps(p, v);
}

OPS_INLINE ovf ov_bcast(const float *p)
{
    return _mm256_broadcast_ss(p);
}

/* All ones in the lanes below n. */
OPS_INLINE __m256i lanes_below(int64_t n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

OPS_INLINE ovf ov_load_part(const float *p, int64_t n)
{
    return _mm256_maskload_ps(p, lanes_below(n));
}

OPS_INLINE void ov_store_part(float *p, ovf v, int64_t n)
{
    _mm256_maskstore_ps(p, lanes_below(n), v);
}

OPS_INLINE ovf ov_add(ovf a, ovf b)
{
    return _mm256_add_ps(a, b);
}

OPS_INLINE ovf ov_sub(ovf a, ovf b)
{
    return _mm256_sub_ps(a, b);
}

OPS_INLINE ovf ov_mul(ovf a, ovf b)
{
    return _mm256_mul_ps(a, b);
}

OPS_INLINE ovf ov_div(ovf a, ovf b)
{
    return _mm256_div_ps(a, b);
}

OPS_INLINE ovf ov_fmadd(ovf a, ovf b, ovf c)
{
    return _mm256_fmadd_ps(a, b, c);
}

OPS_INLINE ovf ov_min(ovf a, ovf b)
{
    return _mm256_min_ps(a, b);
}

OPS_INLINE ovf ov_max(ovf a, ovf b)
{
    return _mm256_max_ps(a, b);
}

OPS_INLINE ovf ov_round(ovf x)
{
    return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

/* p * 2^h * 2^(n-h) with h = floor(n/2): both factors are normal floats for n in range. */
OPS_INLINE ovf ov_scale2(ovf p, ovf n)
{
    const __m256i ni = _mm256_cvtps_epi32(n), h = _mm256_srai_epi32(ni, 1);
    const __m256i bias = _mm256_set1_epi32(127);
    const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(h, bias), 23));
    const __m256i e2 = _mm256_add_epi32(_mm256_sub_epi32(ni, h), bias);
    const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(e2, 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

OPS_INLINE ovf ov_dup_pairs(ovf c)
{
    return _mm256_permutevar8x32_ps(c, _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
}

OPS_INLINE ovf ov_swap_pairs(ovf v)
{
    return _mm256_permute_ps(v, 0xb1);
}

OPS_INLINE ovf ov_neg_even(ovf v)
{
    return _mm256_xor_ps(v, _mm256_setr_ps(-0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f));
}

OPS_INLINE ovd ovd_zero(void)
{
    return _mm256_setzero_pd();
}

OPS_INLINE void ov_acc_d(ovd a[2], ovf v)
{
    a[0] = _mm256_add_pd(a[0], _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    a[1] = _mm256_add_pd(a[1], _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
}

OPS_INLINE void ov_acc_sq_d(ovd a[2], ovf v)
{
    const __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
    const __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
    a[0] = _mm256_fmadd_pd(lo, lo, a[0]);
    a[1] = _mm256_fmadd_pd(hi, hi, a[1]);
}

OPS_INLINE double ovd_hsum(const ovd a[2])
{
    const __m256d s = _mm256_add_pd(a[0], a[1]);
    const __m128d t = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
    return _mm_cvtsd_f64(_mm_add_sd(t, _mm_unpackhi_pd(t, t)));
}

OPS_INLINE ovf ovd_recip_f(const ovd a[2])
{
    const __m256d one = _mm256_set1_pd(1.0);
    const __m128 lo = _mm256_cvtpd_ps(_mm256_div_pd(one, a[0]));
    const __m128 hi = _mm256_cvtpd_ps(_mm256_div_pd(one, a[1]));
    return _mm256_set_m128(hi, lo);
}

#include "kernels/ops-simd.h"
