/*
 * The AVX2 row maths (kernels/rowmath.h): 4 doubles per 256-bit vector, so the 8 partial sums
 * are two accumulators (lanes 0-3 and 4-7 of each group of 8). The functions themselves are in
 * rowmath-simd.h; this file defines its vector interface. Built with -mavx2 and
 * -ffp-contract=off: nothing is fused, so the bits are the reference's.
 */
#include "config.h"

#include "kernels/rowmath.h"

#include <immintrin.h>

#define RM_ISA    avx2
#define RM_INLINE static inline __attribute__((always_inline))
#define RM_LANES  4

typedef __m256d vd;
typedef __m256i vl;
typedef __m256d vm; /* all ones in a lane that is set */
typedef __m256 vf;

RM_INLINE vd vd_zero(void)
{
    return _mm256_setzero_pd();
}

RM_INLINE vd vd_set1(double x)
{
    return _mm256_set1_pd(x);
}

RM_INLINE vd vd_loadu(const double *p)
{
    return _mm256_loadu_pd(p);
}

/* Four floats widened to doubles. */
RM_INLINE vd vd_loadf(const float *p)
{
    return _mm256_cvtps_pd(_mm_loadu_ps(p));
}

RM_INLINE void vd_storeu(double *p, vd v)
{
    _mm256_storeu_pd(p, v);
}

RM_INLINE vd vd_add(vd a, vd b)
{
    return _mm256_add_pd(a, b);
}

RM_INLINE vd vd_sub(vd a, vd b)
{
    return _mm256_sub_pd(a, b);
}

RM_INLINE vd vd_mul(vd a, vd b)
{
    return _mm256_mul_pd(a, b);
}

RM_INLINE vd vd_div(vd a, vd b)
{
    return _mm256_div_pd(a, b);
}

/* MAXPD: b where either is NaN. */
RM_INLINE vd vd_max(vd a, vd b)
{
    return _mm256_max_pd(a, b);
}

RM_INLINE vd vd_or(vd a, vd b)
{
    return _mm256_or_pd(a, b);
}

/* The sign bit flipped. */
RM_INLINE vd vd_neg(vd a)
{
    return _mm256_xor_pd(a, _mm256_set1_pd(-0.0));
}

RM_INLINE vl vd_bits(vd a)
{
    return _mm256_castpd_si256(a);
}

RM_INLINE vd vd_from_bits(vl a)
{
    return _mm256_castsi256_pd(a);
}

RM_INLINE vm vd_gt(vd a, vd b)
{
    return _mm256_cmp_pd(a, b, _CMP_GT_OQ);
}

RM_INLINE vm vd_ge(vd a, vd b)
{
    return _mm256_cmp_pd(a, b, _CMP_GE_OQ);
}

RM_INLINE vm vd_eq(vd a, vd b)
{
    return _mm256_cmp_pd(a, b, _CMP_EQ_OQ);
}

/* Not equal, or either NaN. */
RM_INLINE vm vd_ne(vd a, vd b)
{
    return _mm256_cmp_pd(a, b, _CMP_NEQ_UQ);
}

RM_INLINE bool vm_none(vm m)
{
    return _mm256_movemask_pd(m) == 0;
}

/* t where m is set, else f. */
RM_INLINE vd vd_select(vm m, vd t, vd f)
{
    return _mm256_blendv_pd(f, t, m);
}

/* a where m is set, else +0. */
RM_INLINE vd vd_keep(vm m, vd a)
{
    return _mm256_and_pd(m, a);
}

RM_INLINE vl vl_set1(long long x)
{
    return _mm256_set1_epi64x(x);
}

/* 0, 1, 2, 3. */
RM_INLINE vl vl_iota(void)
{
    return _mm256_setr_epi64x(0, 1, 2, 3);
}

RM_INLINE void vl_storeu(long long *p, vl v)
{
    _mm256_storeu_si256((__m256i *)(void *)p, v);
}

RM_INLINE vl vl_add(vl a, vl b)
{
    return _mm256_add_epi64(a, b);
}

RM_INLINE vl vl_sub(vl a, vl b)
{
    return _mm256_sub_epi64(a, b);
}

RM_INLINE vl vl_or(vl a, vl b)
{
    return _mm256_or_si256(a, b);
}

RM_INLINE vl vl_and(vl a, vl b)
{
    return _mm256_and_si256(a, b);
}

RM_INLINE vl vl_slli(vl a, int n)
{
    return _mm256_slli_epi64(a, n);
}

RM_INLINE vl vl_srli(vl a, int n)
{
    return _mm256_srli_epi64(a, n);
}

RM_INLINE vl vl_select(vm m, vl t, vl f)
{
    return _mm256_castpd_si256(_mm256_blendv_pd(_mm256_castsi256_pd(f), _mm256_castsi256_pd(t), m));
}

/* c plus one in each lane m sets (a set lane is -1 as an integer). */
RM_INLINE vl vl_count(vl c, vm m)
{
    return _mm256_sub_epi64(c, _mm256_castpd_si256(m));
}

RM_INLINE vf vf_set1(float x)
{
    return _mm256_set1_ps(x);
}

RM_INLINE vf vf_loadu(const float *p)
{
    return _mm256_loadu_ps(p);
}

RM_INLINE void vf_storeu(float *p, vf v)
{
    _mm256_storeu_ps(p, v);
}

/* MAXPS: b where either is NaN. */
RM_INLINE vf vf_max(vf a, vf b)
{
    return _mm256_max_ps(a, b);
}

#include "kernels/rowmath-simd.h"
