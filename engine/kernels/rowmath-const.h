/*
 * The constants of dllm_rowmath_exp and dllm_rowmath_log (kernels/rowmath.h), shared by the
 * reference and the SIMD variants so that they compute the same bits.
 */
#ifndef DLLM_KERNELS_ROWMATH_CONST_H
#define DLLM_KERNELS_ROWMATH_CONST_H

/* ln 2 split in two: RM_LN2_HI has 32 significant bits, so k * RM_LN2_HI is exact for |k| < 2^21 */
#define RM_LOG2E      0x1.71547652b82fep0   /* 1 / ln 2 */
#define RM_LN2_HI     0x1.62e42fee00000p-1  /* ln 2 to 32 bits */
#define RM_LN2_LO     0x1.a39ef35793c76p-33 /* ln 2 - RM_LN2_HI */
#define RM_SQRT2      0x1.6a09e667f3bcdp0
#define RM_MAGIC      0x1.8p52 /* x + RM_MAGIC rounds x to an integer held in the low bits */
#define RM_MAGIC_BITS UINT64_C(0x4338000000000000)
#define RM_EXP_MIN    (-746.0) /* e^x rounds to 0 below about -745.13 */
#define RM_MANT_BITS  UINT64_C(0x000fffffffffffff)
#define RM_ONE_BITS   UINT64_C(0x3ff0000000000000)
#define RM_2P52_BITS  UINT64_C(0x4330000000000000) /* 2^52: its bits or an integer < 2^52 */

/* e^r = 1 + r + r^2/2! + ... + r^13/13!: the coefficients from r^13 down to r^2. */
#define RM_EXP_C13 (1.0 / 6227020800.0)
#define RM_EXP_C12 (1.0 / 479001600.0)
#define RM_EXP_C11 (1.0 / 39916800.0)
#define RM_EXP_C10 (1.0 / 3628800.0)
#define RM_EXP_C9  (1.0 / 362880.0)
#define RM_EXP_C8  (1.0 / 40320.0)
#define RM_EXP_C7  (1.0 / 5040.0)
#define RM_EXP_C6  (1.0 / 720.0)
#define RM_EXP_C5  (1.0 / 120.0)
#define RM_EXP_C4  (1.0 / 24.0)
#define RM_EXP_C3  (1.0 / 6.0)
#define RM_EXP_C2  (1.0 / 2.0)

/* P(z) = 1/3 + z/5 + ... + z^8/19, the atanh series after its first term, from z^8 down. */
#define RM_LOG_C19 (1.0 / 19.0)
#define RM_LOG_C17 (1.0 / 17.0)
#define RM_LOG_C15 (1.0 / 15.0)
#define RM_LOG_C13 (1.0 / 13.0)
#define RM_LOG_C11 (1.0 / 11.0)
#define RM_LOG_C9  (1.0 / 9.0)
#define RM_LOG_C7  (1.0 / 7.0)
#define RM_LOG_C5  (1.0 / 5.0)
#define RM_LOG_C3  (1.0 / 3.0)

#endif
