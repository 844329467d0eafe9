/*
 * The AVX-512 variant (F, BW, VL, DQ, VNNI): 16 weight rows per 512-bit vector, u8 x s8 dot
 * products with VPDPBUSD, its activation operand broadcast from memory, or for the K-quants
 * broadcast into a register once for a tile of two panels (KQ_PANELS): on a Zen 5 every load
 * beside the dot products slows them, and 10 chains of them keep the pipes busier than 8 (which
 * leave them a tenth idle); 6 rows of two panels ran 3% slower than 5, their float sums spilling.
 * The kernels themselves are in matmul-simd.h; this file defines its vector interface.
 */
#include "config.h"

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#define SIMD_ISA        avx512
#define SIMD_INLINE     static inline __attribute__((always_inline))
#define NR              16 /* weight rows (int32 or float lanes) per vector */
#define TT_K            5  /* activation rows per tile: K-quants, ... */
#define KQ_PANELS       2  /* ... of two panels: 10 dot-product chains, each word loaded once */
#define TT_Q            8  /* 32-element blocks */
#define TT_F            12 /* float types */
#define SIMD_DOT_ANY_U8 1  /* vi_dot2 is exact for any u8 and s8 */

typedef __m512i vi;
typedef __m512 vf;

SIMD_INLINE vi vi_zero(void)
{
    return _mm512_setzero_si512();
}

SIMD_INLINE vi vi_set1(int32_t x)
{
    return _mm512_set1_epi32(x);
}

SIMD_INLINE vi vi_load(const void *p)
{
    return _mm512_load_si512(p);
}

SIMD_INLINE vi vi_loadu(const void *p)
{
    return _mm512_loadu_si512(p);
}

/* NR / 2 words from p, then zeros. */
SIMD_INLINE vi vi_loadu_half(const void *p)
{
    return _mm512_zextsi256_si512(_mm256_loadu_si256(p));
}

/*
 * Transposes the 16 x 16 matrix of 32-bit words in v: afterwards lane r of v[c] holds what
 * lane c of v[r] held. Within 128-bit lanes first (words, then pairs), then across them.
 */
SIMD_INLINE void vi_transpose(vi v[NR])
{
    vi t[16], u[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_epi32(v[2 * i], v[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(v[2 * i], v[2 * i + 1]);
    }
    /* u[4i + k], 128-bit lane L: rows 4i..4i+3 of column 4L + k */
    for (int i = 0; i < 4; i++) {
        u[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    for (int k = 0; k < 4; k++) {
        const vi a = _mm512_shuffle_i32x4(u[k], u[4 + k], 0x44);
        const vi b = _mm512_shuffle_i32x4(u[k], u[4 + k], 0xee);
        const vi c = _mm512_shuffle_i32x4(u[8 + k], u[12 + k], 0x44);
        const vi d = _mm512_shuffle_i32x4(u[8 + k], u[12 + k], 0xee);
        v[k] = _mm512_shuffle_i32x4(a, c, 0x88);
        v[4 + k] = _mm512_shuffle_i32x4(a, c, 0xdd);
        v[8 + k] = _mm512_shuffle_i32x4(b, d, 0x88);
        v[12 + k] = _mm512_shuffle_i32x4(b, d, 0xdd);
    }
}

/* The 4 bytes at p (any alignment) in every lane. */
SIMD_INLINE vi vi_bcast32(const void *p)
{
    int32_t x;
    memcpy(&x, p, sizeof x);
    return _mm512_set1_epi32(x);
}

/* Lane r: the 32-bit word at base + off[r]. */
SIMD_INLINE vi vi_gather(const void *base, vi off)
{
    return _mm512_i32gather_epi32(off, base, 1);
}

SIMD_INLINE vi vi_and(vi a, vi b)
{
    return _mm512_and_si512(a, b);
}

SIMD_INLINE vi vi_or(vi a, vi b)
{
    return _mm512_or_si512(a, b);
}

SIMD_INLINE vi vi_add(vi a, vi b)
{
    return _mm512_add_epi32(a, b);
}

SIMD_INLINE vi vi_sub(vi a, vi b)
{
    return _mm512_sub_epi32(a, b);
}

/* Bytewise a - b. */
SIMD_INLINE vi vi_sub8(vi a, vi b)
{
    return _mm512_sub_epi8(a, b);
}

SIMD_INLINE vi vi_srl(vi v, int n)
{
    return _mm512_srl_epi32(v, _mm_cvtsi32_si128(n));
}

SIMD_INLINE vi vi_sll(vi v, int n)
{
    return _mm512_sll_epi32(v, _mm_cvtsi32_si128(n));
}

SIMD_INLINE vi vi_sra(vi v, int n)
{
    return _mm512_sra_epi32(v, _mm_cvtsi32_si128(n));
}

SIMD_INLINE vi vi_mullo(vi a, vi b)
{
    return _mm512_mullo_epi32(a, b);
}

SIMD_INLINE vi vi_min(vi a, vi b)
{
    return _mm512_min_epi32(a, b);
}

/* acc + in each lane the sum of the four u8 x s8 products of u0 . s0 and of u1 . s1. */
SIMD_INLINE vi vi_dot2(vi acc, vi u0, vi s0, vi u1, vi s1)
{
    return _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(acc, u0, s0), u1, s1);
}

/*
 * The 4 bytes at a in every lane, as one VPBROADCASTD into a register (which the compiler
 * would otherwise fold into each dot product that reads it, loading the word once a use).
 */
SIMD_INLINE vi vi_bcast_reg(const void *a)
{
    vi b;
    __asm__("vpbroadcastd %1, %0" : "=v"(b) : "m"(*(const int32_t *)a));
    return b;
}

/* acc + in each lane the sum of the four u8 x s8 products of w and b. */
SIMD_INLINE vi vi_dot(vi acc, vi w, vi b)
{
    return _mm512_dpbusd_epi32(acc, w, b);
}

/*
 * vi_dot(zero, w, b), into a register zeroed by an idiom the CPU resolves without executing it
 * (left to itself, GCC copies a zero register: one more instruction a chain).
 */
SIMD_INLINE vi vi_dot_first(vi w, vi b)
{
    vi acc;
    __asm__("vpxord %0, %0, %0\n\tvpdpbusd %2, %1, %0" : "=&v"(acc) : "v"(w), "v"(b));
    return acc;
}

/* acc + in each lane the sum of the two int16 x int16 products of w and the two int16 at a. */
SIMD_INLINE vi vi_dot16_bcast(vi acc, vi w, const void *a)
{
    const int32_t *p = a;
    __asm__("vpdpwssd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(p[0]));
    return acc;
}

SIMD_INLINE int32_t vi_hsum(vi v)
{
    return _mm512_reduce_add_epi32(v);
}

/*
 * The lanes of q[0 .. 4) (each in -128..127) as 4 NR bytes at p, and the sums of each 8 of
 * them, each plus 8 * 128, into sums8[0 .. NR / 2).
 */
SIMD_INLINE void vi_store4_i8_sums8(int8_t *p, const vi *q, uint64_t *sums8)
{
    /* packed, word j of the i-th 128 bits holds elements 4i .. 4i + 3 of q[j] */
    const __m512i b =
        _mm512_packs_epi16(_mm512_packs_epi32(q[0], q[1]), _mm512_packs_epi32(q[2], q[3]));
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    const __m512i bytes = _mm512_permutexvar_epi32(order, b);
    _mm512_storeu_si512(p, bytes);
    const __m512i u = _mm512_xor_si512(bytes, _mm512_set1_epi8((char)0x80));
    _mm512_storeu_si512(sums8, _mm512_sad_epu8(u, _mm512_setzero_si512()));
}

/* The lanes (each in 0..255) as NR bytes at p. */
SIMD_INLINE void vi_store_u8(uint8_t *p, vi v)
{
    _mm_storeu_si128((__m128i *)(void *)p, _mm512_cvtepi32_epi8(v));
}

/* Float to int32, rounding half to even (the default MXCSR mode, as lrintf). */
SIMD_INLINE vi vi_cvt_round(vf v)
{
    return _mm512_cvtps_epi32(v);
}

SIMD_INLINE vf vf_zero(void)
{
    return _mm512_setzero_ps();
}

SIMD_INLINE vf vf_set1(float x)
{
    return _mm512_set1_ps(x);
}

SIMD_INLINE vf vf_loadu(const float *p)
{
    return _mm512_loadu_ps(p);
}

/* The first n lanes from p, zero beyond. */
SIMD_INLINE vf vf_loadu_n(const float *p, int n)
{
    return _mm512_maskz_loadu_ps((__mmask16)((1u << n) - 1), p);
}

/* Stores the first n lanes at p. */
SIMD_INLINE void vf_storeu_n(float *p, vf v, int n)
{
    _mm512_mask_storeu_ps(p, (__mmask16)((1u << n) - 1), v);
}

SIMD_INLINE vf vf_add(vf a, vf b)
{
    return _mm512_add_ps(a, b);
}

SIMD_INLINE vf vf_sub(vf a, vf b)
{
    return _mm512_sub_ps(a, b);
}

SIMD_INLINE vf vf_mul(vf a, vf b)
{
    return _mm512_mul_ps(a, b);
}

/* a * b + c */
SIMD_INLINE vf vf_fmadd(vf a, vf b, vf c)
{
    return _mm512_fmadd_ps(a, b, c);
}

SIMD_INLINE vf vf_cvt(vi v)
{
    return _mm512_cvtepi32_ps(v);
}

SIMD_INLINE vf vf_from_bits(vi v)
{
    return _mm512_castsi512_ps(v);
}

/* The fp16 value in the low 16 bits of each lane, as float. */
SIMD_INLINE vf vf_half_lo(vi v)
{
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(v));
}

SIMD_INLINE vf vf_abs(vf v)
{
    return _mm512_abs_ps(v);
}

SIMD_INLINE vf vf_max(vf a, vf b)
{
    return _mm512_max_ps(a, b);
}

SIMD_INLINE vf vf_min(vf a, vf b)
{
    return _mm512_min_ps(a, b);
}

SIMD_INLINE float vf_reduce_max(vf v)
{
    return _mm512_reduce_max_ps(v);
}

SIMD_INLINE float vf_reduce_min(vf v)
{
    return _mm512_reduce_min_ps(v);
}

/* Bit r set where lane r of a equals lane r of b. */
SIMD_INLINE unsigned vf_eq_mask(vf a, vf b)
{
    return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ);
}

SIMD_INLINE vf vf_trunc(vf v)
{
    return _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
}

/* +1 or -1 with the sign of v. */
SIMD_INLINE vf vf_sign_one(vf v)
{
    const vi sign = _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(INT32_MIN));
    return _mm512_castsi512_ps(_mm512_or_si512(sign, _mm512_castps_si512(_mm512_set1_ps(1.0f))));
}

/* a where x >= thr, else 0. */
SIMD_INLINE vf vf_select_ge(vf x, float thr, vf a)
{
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(thr), _CMP_GE_OQ), a);
}

/* Stores the lanes as fp16 (round to nearest even) at p. */
SIMD_INLINE void vf_store_f16(void *p, vf v)
{
    _mm256_storeu_si256(p, _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

#include "kernels/matmul-simd.h"
