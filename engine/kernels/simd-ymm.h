/*
 * The 256-bit vector interface of matmul-simd.h, shared by the AVX2 and AVX-VNNI variants: 8
 * weight rows per vector. With SIMD_VNNI defined the u8 x s8 dot products are the VEX-encoded
 * VPDPBUSD of AVX-VNNI; without it, VPMADDUBSW and VPMADDWD. The including file defines
 * SIMD_ISA first.
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#define SIMD_INLINE static inline __attribute__((always_inline))
#define NR          8 /* weight rows (int32 or float lanes) per vector */
#define TT_K        4 /* activation rows per tile: K-quants */
#define TT_Q        4 /* 32-element blocks */
#define TT_F        8 /* float types */
#ifdef SIMD_VNNI
#define SIMD_DOT_ANY_U8 1 /* vi_dot2 is exact for any u8 and s8 */
#else
#define SIMD_DOT_ANY_U8 0 /* vi_dot2 needs pair sums within int16 (see there) */
#endif

typedef __m256i vi;
typedef __m256 vf;

SIMD_INLINE vi vi_zero(void)
{
    return _mm256_setzero_si256();
}

SIMD_INLINE vi vi_set1(int32_t x)
{
    return _mm256_set1_epi32(x);
}

SIMD_INLINE vi vi_load(const void *p)
{
    return _mm256_load_si256(p);
}

SIMD_INLINE vi vi_loadu(const void *p)
{
    return _mm256_loadu_si256(p);
}

/* NR / 2 words from p, then zeros. */
SIMD_INLINE vi vi_loadu_half(const void *p)
{
    return _mm256_zextsi128_si256(_mm_loadu_si128(p));
}

/*
 * Transposes the 8 x 8 matrix of 32-bit words in v: afterwards lane r of v[c] holds what lane
 * c of v[r] held. Within 128-bit lanes first (words, then pairs), then across them.
 */
SIMD_INLINE void vi_transpose(vi v[NR])
{
    vi t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_epi32(v[2 * i], v[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_epi32(v[2 * i], v[2 * i + 1]);
    }
    /* u[4i + k], 128-bit lane L: rows 4i..4i+3 of column 4L + k */
    for (int i = 0; i < 2; i++) {
        u[4 * i] = _mm256_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 1] = _mm256_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 2] = _mm256_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        u[4 * i + 3] = _mm256_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    for (int k = 0; k < 4; k++) {
        v[k] = _mm256_permute2x128_si256(u[k], u[4 + k], 0x20);
        v[4 + k] = _mm256_permute2x128_si256(u[k], u[4 + k], 0x31);
    }
}

/* The 4 bytes at p (any alignment) in every lane. */
SIMD_INLINE vi vi_bcast32(const void *p)
{
    int32_t x;
    memcpy(&x, p, sizeof x);
    return _mm256_set1_epi32(x);
}

/* Lane r: the 32-bit word at base + off[r]. */
SIMD_INLINE vi vi_gather(const void *base, vi off)
{
    return _mm256_i32gather_epi32(base, off, 1);
}

SIMD_INLINE vi vi_and(vi a, vi b)
{
    return _mm256_and_si256(a, b);
}

SIMD_INLINE vi vi_or(vi a, vi b)
{
    return _mm256_or_si256(a, b);
}

SIMD_INLINE vi vi_add(vi a, vi b)
{
    return _mm256_add_epi32(a, b);
}

SIMD_INLINE vi vi_sub(vi a, vi b)
{
    return _mm256_sub_epi32(a, b);
}

/* Bytewise a - b. */
SIMD_INLINE vi vi_sub8(vi a, vi b)
{
    return _mm256_sub_epi8(a, b);
}

SIMD_INLINE vi vi_srl(vi v, int n)
{
    return _mm256_srl_epi32(v, _mm_cvtsi32_si128(n));
}

SIMD_INLINE vi vi_sll(vi v, int n)
{
    return _mm256_sll_epi32(v, _mm_cvtsi32_si128(n));
}

SIMD_INLINE vi vi_sra(vi v, int n)
{
    return _mm256_sra_epi32(v, _mm_cvtsi32_si128(n));
}

SIMD_INLINE vi vi_mullo(vi a, vi b)
{
    return _mm256_mullo_epi32(a, b);
}

SIMD_INLINE vi vi_min(vi a, vi b)
{
    return _mm256_min_epi32(a, b);
}

/*
 * acc + in each lane the sum of the four u8 x s8 products of u0 . s0 and of u1 . s1. Without
 * VNNI the products are summed in pairs with int16 saturation, so each pair of u0 . s0 and of
 * u1 . s1, and the two pair sums added, must stay within int16.
 */
SIMD_INLINE vi vi_dot2(vi acc, vi u0, vi s0, vi u1, vi s1)
{
#ifdef SIMD_VNNI
    return _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(acc, u0, s0), u1, s1);
#else
    const vi p = _mm256_add_epi16(_mm256_maddubs_epi16(u0, s0), _mm256_maddubs_epi16(u1, s1));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
#endif
}

#ifdef SIMD_VNNI
/* acc + in each lane the sum of the four u8 x s8 products of w and the 4 bytes at a. */
SIMD_INLINE vi vi_dot_bcast(vi acc, vi w, const void *a)
{
    return _mm256_dpbusd_avx_epi32(acc, w, vi_bcast32(a));
}

SIMD_INLINE vi vi_dot_bcast_first(vi w, const void *a)
{
    return vi_dot_bcast(vi_zero(), w, a);
}
#else
/*
 * Without VNNI, dot products can be summed as int16 pairs for a while and widened once
 * (VPMADDWD), which saves a multiply and an add per vi_dot2. vi_dot2_pairs_bcast adds to each
 * int16 lane of p the two pairs of products vi_dot2 would add to its int32 lane with w0 and w1
 * against the 4 bytes at a and the 4 at a + 4, broadcast (vi_dot2_pairs_first_bcast: to
 * zero); the caller keeps every partial sum within int16.
 * vi_add_pairs widens p into acc, each int16 times the one in the same place of sc (a scale
 * in both halves of a lane, or ones).
 */

/*
 * p + d in int16 lanes, written as the instruction so that the compiler keeps a run of them a
 * chain: reassociated into a tree over an unrolled sub-block, the products would wait in more
 * registers than there are.
 */
SIMD_INLINE vi vi_add16_chained(vi p, vi d)
{
    __asm__("vpaddw %1, %0, %0" : "+x"(p) : "x"(d));
    return p;
}

SIMD_INLINE vi vi_dot2_pairs_first_bcast(vi w0, vi w1, const void *a)
{
    const vi d0 = _mm256_maddubs_epi16(w0, vi_bcast32(a));
    return vi_add16_chained(d0, _mm256_maddubs_epi16(w1, vi_bcast32((const uint8_t *)a + 4)));
}

SIMD_INLINE vi vi_dot2_pairs_bcast(vi p, vi w0, vi w1, const void *a)
{
    p = vi_add16_chained(p, _mm256_maddubs_epi16(w0, vi_bcast32(a)));
    return vi_add16_chained(p, _mm256_maddubs_epi16(w1, vi_bcast32((const uint8_t *)a + 4)));
}

SIMD_INLINE vi vi_add_pairs(vi acc, vi p, vi sc)
{
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p, sc));
}
#endif

/* acc + in each lane the sum of the two int16 x int16 products of w and the two int16 at a. */
SIMD_INLINE vi vi_dot16_bcast(vi acc, vi w, const void *a)
{
#ifdef SIMD_VNNI
    return _mm256_dpwssd_avx_epi32(acc, w, vi_bcast32(a));
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(w, vi_bcast32(a)));
#endif
}

SIMD_INLINE int32_t vi_hsum(vi v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    return _mm_cvtsi128_si32(s);
}

/*
 * The lanes of q[0 .. 4) (each in -128..127) as 4 NR bytes at p, and the sums of each 8 of
 * them, each plus 8 * 128, into sums8[0 .. NR / 2).
 */
SIMD_INLINE void vi_store4_i8_sums8(int8_t *p, const vi *q, uint64_t *sums8)
{
    /* packed, word j of the i-th 128 bits holds elements 4i .. 4i + 3 of q[j] */
    const __m256i b =
        _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
    const __m256i bytes = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i *)(void *)p, bytes);
    const __m256i u = _mm256_xor_si256(bytes, _mm256_set1_epi8((char)0x80));
    _mm256_storeu_si256((__m256i *)(void *)sums8, _mm256_sad_epu8(u, _mm256_setzero_si256()));
}

/* The lanes (each in 0..255) as NR bytes at p. */
SIMD_INLINE void vi_store_u8(uint8_t *p, vi v)
{
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    _mm_storel_epi64((__m128i *)(void *)p, _mm_packus_epi16(w, w));
}

/* Float to int32, rounding half to even (the default MXCSR mode, as lrintf). */
SIMD_INLINE vi vi_cvt_round(vf v)
{
    return _mm256_cvtps_epi32(v);
}

SIMD_INLINE vf vf_zero(void)
{
    return _mm256_setzero_ps();
}

SIMD_INLINE vf vf_set1(float x)
{
    return _mm256_set1_ps(x);
}

SIMD_INLINE vf vf_loadu(const float *p)
{
    return _mm256_loadu_ps(p);
}

/* Lanes r < n all ones, the others zero. */
SIMD_INLINE vi first_lanes(int n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* The first n lanes from p, zero beyond. */
SIMD_INLINE vf vf_loadu_n(const float *p, int n)
{
    return _mm256_maskload_ps(p, first_lanes(n));
}

/* Stores the first n lanes at p. */
SIMD_INLINE void vf_storeu_n(float *p, vf v, int n)
{
    _mm256_maskstore_ps(p, first_lanes(n), v);
}

SIMD_INLINE vf vf_add(vf a, vf b)
{
    return _mm256_add_ps(a, b);
}

SIMD_INLINE vf vf_sub(vf a, vf b)
{
    return _mm256_sub_ps(a, b);
}

SIMD_INLINE vf vf_mul(vf a, vf b)
{
    return _mm256_mul_ps(a, b);
}

/* a * b + c */
SIMD_INLINE vf vf_fmadd(vf a, vf b, vf c)
{
    return _mm256_fmadd_ps(a, b, c);
}

SIMD_INLINE vf vf_cvt(vi v)
{
    return _mm256_cvtepi32_ps(v);
}

SIMD_INLINE vf vf_from_bits(vi v)
{
    return _mm256_castsi256_ps(v);
}

/* The fp16 value in the low 16 bits of each lane, as float. */
SIMD_INLINE vf vf_half_lo(vi v)
{
    const vi lo = _mm256_and_si256(v, _mm256_set1_epi32(0xffff));
    return _mm256_cvtph_ps(
        _mm_packus_epi32(_mm256_castsi256_si128(lo), _mm256_extracti128_si256(lo, 1)));
}

SIMD_INLINE vf vf_abs(vf v)
{
    return _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(INT32_MAX)));
}

SIMD_INLINE vf vf_max(vf a, vf b)
{
    return _mm256_max_ps(a, b);
}

SIMD_INLINE vf vf_min(vf a, vf b)
{
    return _mm256_min_ps(a, b);
}

SIMD_INLINE float vf_reduce_max(vf v)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

SIMD_INLINE float vf_reduce_min(vf v)
{
    __m128 m = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_min_ps(m, _mm_movehl_ps(m, m));
    m = _mm_min_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

/* Bit r set where lane r of a equals lane r of b. */
SIMD_INLINE unsigned vf_eq_mask(vf a, vf b)
{
    return (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_EQ_OQ));
}

SIMD_INLINE vf vf_trunc(vf v)
{
    return _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
}

/* +1 or -1 with the sign of v. */
SIMD_INLINE vf vf_sign_one(vf v)
{
    const vf sign = _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(INT32_MIN)));
    return _mm256_or_ps(sign, _mm256_set1_ps(1.0f));
}

/* a where x >= thr, else 0. */
SIMD_INLINE vf vf_select_ge(vf x, float thr, vf a)
{
    return _mm256_and_ps(_mm256_cmp_ps(x, _mm256_set1_ps(thr), _CMP_GE_OQ), a);
}

/* Stores the lanes as fp16 (round to nearest even) at p. */
SIMD_INLINE void vf_store_f16(void *p, vf v)
{
    _mm_storeu_si128(p, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
