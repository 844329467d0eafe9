#include "dot_chains.h"

#include <immintrin.h>

const int dot_chain_counts[8] = {1, 2, 4, 6, 8, 10, 12, 16};

/* One dot product on accumulator a, with the same two operand registers every time. */
#define DOT(a) __asm__("vpdpbusd %2, %1, %0" : "+v"(a) : "v"(u), "v"(s));
#define LOOP(...)                                                                                  \
    for (long k = 0; k < iters; k++) {                                                             \
        __VA_ARGS__                                                                                \
    }                                                                                              \
    break;

/*
 * Written as asm statements rather than intrinsics: left to the compiler, the loops carried two
 * register copies per dot product (GCC 12), which on a CPU that issues two 512-bit VPDPBUSD a
 * cycle (Zen 5) held them to about 70% of what the instruction does.
 */
__attribute__((target("avx512f,avx512vnni"), noinline)) void dot_chains_zmm(long iters, int n)
{
    __m512i u = _mm512_set1_epi8(3), s = _mm512_set1_epi8(-5);
    __m512i a0 = u, a1 = u, a2 = u, a3 = u, a4 = u, a5 = u, a6 = u, a7 = u;
    __m512i a8 = u, a9 = u, a10 = u, a11 = u, a12 = u, a13 = u, a14 = u, a15 = u;
    __asm__ volatile("" : "+v"(u), "+v"(s));
    switch (n) {
    case 1: LOOP(DOT(a0))
    case 2: LOOP(DOT(a0) DOT(a1))
    case 4: LOOP(DOT(a0) DOT(a1) DOT(a2) DOT(a3))
    case 6: LOOP(DOT(a0) DOT(a1) DOT(a2) DOT(a3) DOT(a4) DOT(a5))
    case 8: LOOP(DOT(a0) DOT(a1) DOT(a2) DOT(a3) DOT(a4) DOT(a5) DOT(a6) DOT(a7))
    case 10: LOOP(DOT(a0) DOT(a1) DOT(a2) DOT(a3) DOT(a4) DOT(a5) DOT(a6) DOT(a7) DOT(a8) DOT(a9))
    case 12:
        LOOP(DOT(a0) DOT(a1) DOT(a2) DOT(a3) DOT(a4) DOT(a5) DOT(a6) DOT(a7) DOT(a8) DOT(a9)
                 DOT(a10) DOT(a11))
    default:
        LOOP(DOT(a0) DOT(a1) DOT(a2) DOT(a3) DOT(a4) DOT(a5) DOT(a6) DOT(a7) DOT(a8) DOT(a9)
                 DOT(a10) DOT(a11) DOT(a12) DOT(a13) DOT(a14) DOT(a15))
    }
    /* the results are used, so that no dot product is dropped */
    __asm__ volatile(""
                     :
                     : "v"(a0), "v"(a1), "v"(a2), "v"(a3), "v"(a4), "v"(a5), "v"(a6), "v"(a7),
                       "v"(a8), "v"(a9), "v"(a10), "v"(a11), "v"(a12), "v"(a13), "v"(a14),
                       "v"(a15));
}
