/*
 * The SIMD matrix kernels, written once over a small vector interface. Each matmul-<isa>.c
 * defines that interface for its instruction set (vi: NR int32 lanes, vf: NR float lanes, and
 * the operations below) and then includes this file, which defines
 *   SIMD_NAME(dllm_matmul_rows)      y = x . W^T for a row range, as dllm_matmul_rows_ref
 *   SIMD_NAME(dllm_matmul_repacked_bytes), SIMD_NAME(dllm_matmul_repack),
 *   SIMD_NAME(dllm_matmul_rows_packed)  the same over a K-quant matrix repacked once
 *   SIMD_NAME(dllm_matmul_quantize)  the activation conversion, byte for byte as the reference
 * (the last unless SIMD_ROWS_ONLY is defined). Every variant also has AVX2, so code here
 * may use 256-bit AVX2 intrinsics directly.
 *
 * The product works on panels of NR weight rows. A call unpacks each panel once, a few blocks
 * at a time, into a stack buffer where vector i holds, in lane r, the i-th group of four
 * consecutive weights of row r: K-quant, Q8_0 and float blocks are loaded row by row and
 * transposed in registers (a repacked K-quant matrix holds its blocks already transposed), the
 * small Q4_0, Q4_1, Q5_0 and Q5_1 blocks and a few scale words gathered. One 4-byte group of an
 * activation row, broadcast to every lane, then multiplies a whole vector with one u8 x s8
 * dot-product instruction, and each unpacked vector serves a tile of TT activation rows while it is
 * in a register (where a variant sets KQ_PANELS 2, a K-quant tile spans two panels and each
 * broadcast word serves both); a few panels share each tile's prepared activations. Block results
 * accumulate in float, so the results differ from the reference by float rounding and summation
 * order only: the integer dot products inside a block are exact.
 *
 * Three kinds of weight types:
 *   K-quants (Q4_K, Q5_K, Q6_K) x Q8_K128: weights unsigned (0..63) against signed
 *     activations. Each weight sub-block's integer dot product (8 dot-product instructions for
 *     16 rows x 32 elements; without VNNI summed in int16 first, see PAIRS_SPAN) is scaled into
 *     a sum over the 128 elements that share an activation scale, which multiplies that sum
 *     once: with VNNI by one FMA each, without it by the VPMADDWD that widens the int16 sums
 *     (KSCALE_INT). The Q4_K/Q5_K mins enter per 128 as integer products of the mins with the
 *     activation sums (VPDPWSSD); Q6_K's offset of 32 through the initial value of each
 *     integer sum, or with KSCALE_INT as products of -32 times the scales.
 *   32-element blocks (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1) x Q8_0: weights signed (offset removed)
 *     against activations made unsigned by adding 128 (a copy per tile); the 128 * sum(w) this
 *     adds is subtracted by starting each block's sum at -128 * sum(w).
 *   F32, F16, BF16: weights and activations converted to float, one FMA per weight and row.
 */
#include "kernels/cpu.h"
#include "kernels/matmul.h"
#include "gguf/quant.h"

#include <stdbool.h>
#include <string.h>

#define SIMD_CAT2(a, b) a##_##b
#define SIMD_CAT(a, b)  SIMD_CAT2(a, b)
#define SIMD_NAME(fn)   SIMD_CAT(fn, SIMD_ISA)

/* ---- shared helpers ---------------------------------------------------------------------- */

/*
 * Where the NR rows of a panel are, as byte offsets from its first row: off for gathers, roff
 * for loads. Rows past the last real one repeat it. packed: the panel is repacked (see
 * SIMD_NAME(dllm_matmul_repack)) and its blocks lie as kwords reads them.
 */
struct panel_rows {
    vi off;
    size_t roff[NR];
    bool packed;
};

SIMD_INLINE void panel_rows_init(struct panel_rows *pr, size_t stride, int nr)
{
    int32_t off[NR] __attribute__((aligned(64)));
    for (int r = 0; r < NR; r++) {
        pr->roff[r] = (size_t)(r < nr ? r : nr - 1) * stride;
        off[r] = (int32_t)pr->roff[r];
    }
    pr->off = vi_load(off);
    pr->packed = false;
}

/*
 * The 32-bit word at byte offset at (even) of the block in each panel row: gathered, or from a
 * repacked panel, whose vector i holds word i of each row's block, one vector or the halves of
 * two.
 */
SIMD_INLINE vi gather_at(const uint8_t *blk, const struct panel_rows *pr, size_t at)
{
    if (pr->packed) {
        const vi *w = (const vi *)(const void *)blk;
        return at % 4 == 0 ? w[at / 4] : vi_or(vi_srl(w[at / 4], 16), vi_sll(w[at / 4 + 1], 16));
    }
    return vi_gather(blk + at, pr->off);
}

/*
 * Words [0, nd) of the block in each panel row, transposed: lane r of d[i] is word i of row r.
 * Loads NR words of each row at a time (the last span ends at word nd, overlapping the one
 * before), or NR / 2 when that is nd, so nothing past the words asked for is read; fewer words
 * than those (the small blocks of Q4_1, Q5_0, Q5_1) are gathered.
 */
SIMD_INLINE void block_words(const uint8_t *blk, const struct panel_rows *pr, int nd, vi *d)
{
    if (nd < NR && nd != NR / 2) {
        for (int i = 0; i < nd; i++) {
            d[i] = vi_gather(blk + 4 * (size_t)i, pr->off);
        }
        return;
    }
    for (int i0 = 0; i0 < nd; i0 += NR) {
        const int at = i0 + NR <= nd || nd < NR ? i0 : nd - NR;
        vi v[NR];
        for (int r = 0; r < NR; r++) {
            const uint8_t *src = blk + pr->roff[r] + 4 * (size_t)at;
            v[r] = nd < NR ? vi_loadu_half(src) : vi_loadu(src);
        }
        vi_transpose(v);
        for (int c = 0; c < NR && at + c < nd; c++) {
            d[at + c] = v[c];
        }
    }
}

/*
 * The words of a K-quant block of each panel row as block_words gives them, for a block of
 * nd words and a trailing half word (nd + 1 words in all, the last with the block's final two
 * bytes in its low half) when tail: gathered into buf, or, from a repacked panel, which stores
 * exactly these, where they lie.
 */
SIMD_INLINE const vi *kwords(const uint8_t *blk, const struct panel_rows *pr, int nd, bool tail,
                             vi *buf)
{
    if (pr->packed) {
        return (const vi *)(const void *)blk;
    }
    block_words(blk, pr, nd, buf);
    if (tail) {
        buf[nd] = vi_srl(vi_gather(blk + 4 * (size_t)nd - 2, pr->off), 16);
    }
    return buf;
}

/* The fp16 value in the low (hi = false) or high half of each lane, as float. */
SIMD_INLINE vf half_of(vi v, bool hi)
{
    return vf_half_lo(hi ? vi_srl(v, 16) : v);
}

/* Byte j (0..3) of each lane, zero-extended. */
SIMD_INLINE vi byte_of(vi v, int j)
{
    return vi_and(vi_srl(v, 8 * j), vi_set1(0xff));
}

/* The low (hi = false) or high nibbles of the four bytes of each lane. */
SIMD_INLINE vi nibbles(vi v, bool hi)
{
    return vi_and(hi ? vi_srl(v, 4) : v, vi_set1(0x0f0f0f0f));
}

/* Bits [shift, shift + width) of each byte of v (mask = 2^width - 1) moved to bits 4.. */
SIMD_INLINE vi high_bits(vi v, int shift, int mask)
{
    return vi_sll(vi_and(vi_srl(v, shift), vi_set1(mask * 0x01010101)), 4);
}

/*
 * Where a tile row's sums start: y[0..nr) when accumulate (the blocks before), else 0. Each
 * block's products are then added to the sums of all the blocks before it, so a row is the same
 * bits however the blocks are split into chunks (FEW_TILES).
 */
SIMD_INLINE vf start_row(const float *y, int nr, bool accumulate)
{
    return accumulate ? vf_loadu_n(y, nr) : vf_zero();
}

/* Writes a tile row whose sums started at 0: y[0..nr) = v, or y[0..nr) += v when accumulate. */
SIMD_INLINE void store_row(float *y, vf v, int nr, bool accumulate)
{
    if (accumulate) {
        v = vf_add(v, vf_loadu_n(y, nr));
    }
    vf_storeu_n(y, v, nr);
}

/*
 * y, hidden from the compiler, from which a tile computes its rows' addresses again to store
 * them: without it GCC kept the addresses start_row read from in registers through the tile's
 * loops, spilled others, and the K-quant tiles ran 1-3% slower.
 */
SIMD_INLINE float *rows_again(float *y)
{
    __asm__("" : "+r"(y));
    return y;
}

/*
 * TILE(h) for a tile of nt activation rows, nt from 1 to max (at most 16): h is nt as a
 * constant, so that each height is compiled on its own and a tile computes only the rows it
 * has (one of 4 rows costs about 4/5 of one of 5, one of 1 row 0.3 of it). Heights over max
 * are unreachable cases, which GCC drops.
 */
#define TILE_HEIGHT(h, max) ((h) < (max) ? (h) : (max))
#define BY_HEIGHT(nt, max, TILE)                                                                   \
    switch ((nt) < (max) ? (nt) : (max)) {                                                         \
    case 1: TILE(1); break;                                                                        \
    case 2: TILE(TILE_HEIGHT(2, max)); break;                                                      \
    case 3: TILE(TILE_HEIGHT(3, max)); break;                                                      \
    case 4: TILE(TILE_HEIGHT(4, max)); break;                                                      \
    case 5: TILE(TILE_HEIGHT(5, max)); break;                                                      \
    case 6: TILE(TILE_HEIGHT(6, max)); break;                                                      \
    case 7: TILE(TILE_HEIGHT(7, max)); break;                                                      \
    case 8: TILE(TILE_HEIGHT(8, max)); break;                                                      \
    case 9: TILE(TILE_HEIGHT(9, max)); break;                                                      \
    case 10: TILE(TILE_HEIGHT(10, max)); break;                                                    \
    case 11: TILE(TILE_HEIGHT(11, max)); break;                                                    \
    case 12: TILE(TILE_HEIGHT(12, max)); break;                                                    \
    case 13: TILE(TILE_HEIGHT(13, max)); break;                                                    \
    case 14: TILE(TILE_HEIGHT(14, max)); break;                                                    \
    case 15: TILE(TILE_HEIGHT(15, max)); break;                                                    \
    default: TILE(max); break;                                                                     \
    }

/* ---- K-quants ---------------------------------------------------------------------------- */

#define KQ_CHUNK 2 /* super-blocks unpacked per panel at a time */
#define KQ_GROUP 4 /* panels sharing one prepared activation tile */
#ifndef KQ_PANELS
#define KQ_PANELS 1 /* panels a K-quant tile multiplies at once (2 possible with VNNI) */
#endif
static_assert(KQ_PANELS == 1 || (KQ_PANELS == 2 && SIMD_DOT_ANY_U8 && KQ_GROUP % 2 == 0),
              "two panels a tile need VNNI and whole pairs in a group");

/*
 * Where sub-block scales apply. Without VNNI a sub-block's products end as int16 pair sums that
 * VPMADDWD widens; multiplying them by the sub-block's scale there instead of by ones costs
 * nothing, so the sums over each 128 elements stay exact integers, converted to float once
 * (KSCALE_INT). With VNNI the dot products are int32 already, and each sub-block's sum is
 * converted and scaled in float.
 */
#define KSCALE_INT (!SIMD_DOT_ANY_U8)

/* One super-block of NR rows, unpacked. */
struct kpanel {
    vi q[QK_K / 4]; /* lane r of q[i]: elements 4i..4i+3 of row r, unsigned */
#if KSCALE_INT
    vi sc[QK_K / 16]; /* the scale of each sub-block (8 of 32 or 16 of 16 elements), as two int16 */
    vf d;             /* the super-block scale */
#else
    vf dsc[QK_K / 16]; /* d * scale of each sub-block */
#endif
    /*
     * Two int16 a lane for sub-blocks 2i and 2i + 1: the mins of Q4_K and Q5_K, and with
     * KSCALE_INT -32 times the scales of Q6_K (its offset)
     */
    vi mn[QK_K / 32];
    vf ndmin; /* Q4_K, Q5_K: -dmin */
};

/* The low int16 of each lane of lo and of hi, as the two halves of each lane. */
SIMD_INLINE vi int16_pair(vi lo, vi hi)
{
    return vi_or(vi_and(lo, vi_set1(0xffff)), vi_sll(hi, 16));
}

/* Sets sub-block s's scale, sc in int32 lanes, under a super-block scale d. */
SIMD_INLINE void set_scale(struct kpanel *p, int s, vf d, vi sc)
{
#if KSCALE_INT
    (void)d;
    p->sc[s] = int16_pair(sc, sc);
#else
    p->dsc[s] = vf_mul(d, vf_cvt(sc));
#endif
}

/*
 * Q4_K and Q5_K scales and mins from the block's first four words w (fp16 d and dmin, then
 * 6-bit values packed in 12 bytes s, as ggml-quants.c get_scale_min_k4 unpacks them):
 *   sc[j] = s[j] & 63, mn[j] = s[j+4] & 63 for j < 4,
 *   sc[j+4] = (s[j+8] & 15) | (s[j] >> 6) << 4, mn[j+4] = (s[j+8] >> 4) | (s[j+4] >> 6) << 4.
 */
SIMD_INLINE void pack_scales_k4(struct kpanel *p, const vi *w)
{
    const vf d = half_of(w[0], false);
    const vi m63 = vi_set1(63), m15 = vi_set1(15);
    vi mn[8];
    for (int j = 0; j < 4; j++) {
        const vi b0 = byte_of(w[1], j), b1 = byte_of(w[2], j), b2 = byte_of(w[3], j);
        const vi sc_hi = vi_or(vi_and(b2, m15), vi_sll(vi_srl(b0, 6), 4));
        set_scale(p, j, d, vi_and(b0, m63));
        set_scale(p, j + 4, d, sc_hi);
        mn[j] = vi_and(b1, m63);
        mn[j + 4] = vi_or(vi_srl(b2, 4), vi_sll(vi_srl(b1, 6), 4));
    }
    for (int i = 0; i < 4; i++) {
        p->mn[i] = int16_pair(mn[2 * i], mn[2 * i + 1]);
    }
#if KSCALE_INT
    p->d = d;
#endif
    p->ndmin = vf_sub(vf_zero(), half_of(w[0], true));
}

/* Q4_K: element 64c + l is the low nibble of qs[32c + l], element 64c + 32 + l its high one. */
static void pack_q4_K(void *panel, const uint8_t *blk, const struct panel_rows *pr)
{
    struct kpanel *p = panel;
    vi buf[sizeof(struct block_q4_K) / 4];
    const vi *w = kwords(blk, pr, sizeof(struct block_q4_K) / 4, false, buf);
    pack_scales_k4(p, w);
    const vi *qs = w + offsetof(struct block_q4_K, qs) / 4;
    for (int c = 0; c < 4; c++) {
        for (int j = 0; j < 8; j++) {
            p->q[16 * c + j] = nibbles(qs[8 * c + j], false);
            p->q[16 * c + 8 + j] = nibbles(qs[8 * c + j], true);
        }
    }
}

/* Q5_K: as Q4_K with a fifth bit from qh[l]: bit 2c for the low nibble, 2c + 1 for the high. */
static void pack_q5_K(void *panel, const uint8_t *blk, const struct panel_rows *pr)
{
    struct kpanel *p = panel;
    vi buf[sizeof(struct block_q5_K) / 4];
    const vi *w = kwords(blk, pr, sizeof(struct block_q5_K) / 4, false, buf);
    pack_scales_k4(p, w);
    const vi *qh = w + offsetof(struct block_q5_K, qh) / 4;
    const vi *qs = w + offsetof(struct block_q5_K, qs) / 4;
    for (int c = 0; c < 4; c++) {
        for (int j = 0; j < 8; j++) {
            p->q[16 * c + j] = vi_or(nibbles(qs[8 * c + j], false), high_bits(qh[j], 2 * c, 1));
            p->q[16 * c + 8 + j] =
                vi_or(nibbles(qs[8 * c + j], true), high_bits(qh[j], 2 * c + 1, 1));
        }
    }
}

/*
 * With KSCALE_INT, the super-block scale d of a Q6_K or Q3_K block and its offset of 32 as mn:
 * -32 times each of the 16 scales, against the activation sums over its sub-block.
 */
SIMD_INLINE void set_offsets32(struct kpanel *p, vf d, const vi scale[QK_K / 16])
{
#if KSCALE_INT
    p->d = d;
    for (int i = 0; i < QK_K / 32; i++) {
        p->mn[i] = int16_pair(vi_sub(vi_zero(), vi_sll(scale[2 * i], 5)),
                              vi_sub(vi_zero(), vi_sll(scale[2 * i + 1], 5)));
    }
#else
    (void)p, (void)d, (void)scale;
#endif
}

/*
 * Q6_K: in each half n, element 128n + 32i + l (i < 4, l < 32) takes a nibble of
 * ql[64n + 32(i & 1) + l] (the high one for i >= 2) and bits 2i, 2i+1 of qh[32n + l]; its value
 * is d * sc[g] * (q - 32) with 16 signed scales for sub-blocks g of 16. With KSCALE_INT the
 * offset enters through mn, -32 * sc[g] against the activation sums over g.
 */
static void pack_q6_K(void *panel, const uint8_t *blk, const struct panel_rows *pr)
{
    struct kpanel *p = panel;
    /* 52 words, then d, which ends the 210-byte block, in the low half of the last */
    vi buf[offsetof(struct block_q6_K, d) / 4 + 1];
    const vi *w = kwords(blk, pr, offsetof(struct block_q6_K, d) / 4, true, buf);
    const vi *ql = w + offsetof(struct block_q6_K, ql) / 4;
    const vi *qh = w + offsetof(struct block_q6_K, qh) / 4;
    const vi *sc = w + offsetof(struct block_q6_K, scales) / 4;
    for (int n = 0; n < 2; n++) {
        for (int j = 0; j < 8; j++) {
            const vi l0 = ql[16 * n + j], l1 = ql[16 * n + 8 + j], h = qh[8 * n + j];
            p->q[32 * n + j] = vi_or(nibbles(l0, false), high_bits(h, 0, 3));
            p->q[32 * n + 8 + j] = vi_or(nibbles(l1, false), high_bits(h, 2, 3));
            p->q[32 * n + 16 + j] = vi_or(nibbles(l0, true), high_bits(h, 4, 3));
            p->q[32 * n + 24 + j] = vi_or(nibbles(l1, true), high_bits(h, 6, 3));
        }
    }
    const vf d = half_of(w[offsetof(struct block_q6_K, d) / 4], false);
    vi scale[QK_K / 16];
    for (int g = 0; g < QK_K / 16; g++) {
        scale[g] = vi_sra(vi_sll(sc[g / 4], 24 - 8 * (g % 4)), 24);
        set_scale(p, g, d, scale[g]);
    }
    set_offsets32(p, d, scale);
}

/*
 * Q3_K: element 128h + 32j + m (m < 32) takes bits 2j of qs[32h + m] and, as its third bit, bit
 * 4h + j of hmask[m]; its value is d * sc[g] * (q - 4), g = e / 16, with 16 signed 6-bit scales
 * (dllm_q3_K_scales). Packed as q + 28, Q6_K's q with its offset of 32, so that Q6_K's tile
 * multiplies it: (q + 28) - 32 = q - 4.
 */
static void pack_q3_K(void *panel, const uint8_t *blk, const struct panel_rows *pr)
{
    struct kpanel *p = panel;
    /* 27 words, then d, which ends the 110-byte block, in the low half of the last */
    vi buf[offsetof(struct block_q3_K, d) / 4 + 1];
    const vi *w = kwords(blk, pr, offsetof(struct block_q3_K, d) / 4, true, buf);
    const vi *hm = w + offsetof(struct block_q3_K, hmask) / 4;
    const vi *qs = w + offsetof(struct block_q3_K, qs) / 4;
    const vi *sc = w + offsetof(struct block_q3_K, scales) / 4;
    const vi m3 = vi_set1(0x03030303), m1 = vi_set1(0x01010101), bias = vi_set1(28 * 0x01010101);
    for (int i = 0; i < QK_K / 4; i++) {
        const int h = i / 32, j = i % 32 / 8, c = i % 8;
        const vi low = vi_and(vi_srl(qs[8 * h + c], 2 * j), m3);
        const vi high = vi_sll(vi_and(vi_srl(hm[c], 4 * h + j), m1), 2);
        p->q[i] = vi_add(vi_or(low, high), bias);
    }
    const vf d = half_of(w[offsetof(struct block_q3_K, d) / 4], false);
    vi scale[QK_K / 16];
    for (int g = 0; g < QK_K / 16; g++) {
        const vi lo = vi_and(vi_srl(byte_of(sc[g / 4 % 2], g % 4), g < 8 ? 0 : 4), vi_set1(15));
        const vi hi = vi_and(vi_srl(byte_of(sc[2], g % 4), 2 * (g / 4)), vi_set1(3));
        scale[g] = vi_sub(vi_or(lo, vi_sll(hi, 4)), vi_set1(32));
        set_scale(p, g, d, scale[g]);
    }
    set_offsets32(p, d, scale);
}

/*
 * Q2_K: element 128h + 32j + m takes bits 2j of qs[32h + m]; its value is d * sc[g] * q -
 * dmin * mn[g], g = e / 16, sc the low and mn the high nibble of scales[g].
 */
static void pack_q2_K(void *panel, const uint8_t *blk, const struct panel_rows *pr)
{
    struct kpanel *p = panel;
    vi buf[sizeof(struct block_q2_K) / 4];
    const vi *w = kwords(blk, pr, sizeof(struct block_q2_K) / 4, false, buf);
    const vi *qs = w + offsetof(struct block_q2_K, qs) / 4;
    const vi *sc = w + offsetof(struct block_q2_K, scales) / 4;
    const vi m3 = vi_set1(0x03030303);
    for (int i = 0; i < QK_K / 4; i++) {
        p->q[i] = vi_and(vi_srl(qs[8 * (i / 32) + i % 8], 2 * (i % 32 / 8)), m3);
    }
    const vi dd = w[offsetof(struct block_q2_K, d) / 4];
    const vf d = half_of(dd, false);
    vi mn[QK_K / 16];
    for (int g = 0; g < QK_K / 16; g++) {
        const vi b = byte_of(sc[g / 4], g % 4);
        set_scale(p, g, d, vi_and(b, vi_set1(15)));
        mn[g] = vi_srl(b, 4);
    }
    for (int i = 0; i < QK_K / 32; i++) {
        p->mn[i] = int16_pair(mn[2 * i], mn[2 * i + 1]);
    }
#if KSCALE_INT
    p->d = d;
#endif
    p->ndmin = vf_sub(vf_zero(), half_of(dd, true));
}

#if KSCALE_INT
/*
 * Without VNNI a sub-block's integer dot products are taken two weight vectors a call as int16
 * pair sums (vi_dot2_pairs_bcast), widened into the int32 sums by vi_add_pairs (times the
 * sub-block's scale) every PAIRS_SPAN(wmax) calls, as rarely as weights 0..wmax against
 * activations within +-128 allow (a call adds at most 4 * 128 * wmax to an int16 lane): every
 * 4 calls for Q4_K, 2 for Q5_K, each call for Q6_K. Spans of 4, 2 or 1 divide a sub-block.
 */
#define PAIRS_FIT(n, wmax) ((n)*4 * 128 * (wmax) <= INT16_MAX)
#define PAIRS_SPAN(wmax)   (PAIRS_FIT(4, wmax) ? 4 : PAIRS_FIT(2, wmax) ? 2 : 1)
static_assert(PAIRS_FIT(1, 63), "a Q6_K call fits int16 pair sums");

/*
 * acc[t] + sc times the dot products of the n weight vectors w with the activations of row t
 * < tt at a[t] + at (n a multiple of 2 * PAIRS_SPAN(wmax) or equal to it).
 */
SIMD_INLINE void subblock_dots(vi acc[TT_K], const vi *w, int n, int wmax, vi sc,
                               const uint8_t *const *a, size_t at, int tt)
{
    const int run = 2 * PAIRS_SPAN(wmax) < n ? 2 * PAIRS_SPAN(wmax) : n; /* vectors */
#pragma GCC unroll 4
    for (int i0 = 0; i0 < n; i0 += run) {
        vi ps[TT_K];
#pragma GCC unroll 16
        for (int t = 0; t < tt; t++) {
            ps[t] = vi_dot2_pairs_first_bcast(w[i0], w[i0 + 1], a[t] + at + 4 * i0);
        }
#pragma GCC unroll 4
        for (int i = 2; i < run; i += 2) {
#pragma GCC unroll 16
            for (int t = 0; t < tt; t++) {
                ps[t] =
                    vi_dot2_pairs_bcast(ps[t], w[i0 + i], w[i0 + i + 1], a[t] + at + 4 * (i0 + i));
            }
        }
#pragma GCC unroll 16
        for (int t = 0; t < tt; t++) {
            acc[t] = vi_add_pairs(acc[t], ps[t], sc);
        }
    }
}
#else
#if KQ_PANELS > 1
/* An activation word broadcast into a register once, for the tile's panels to share. */
typedef vi aword;
SIMD_INLINE aword aword_at(const void *a)
{
    return vi_bcast_reg(a);
}
SIMD_INLINE vi dot_word(vi acc, vi w, aword b)
{
    return vi_dot(acc, w, b);
}
SIMD_INLINE vi dot_word_first(vi w, aword b)
{
    return vi_dot_first(w, b);
}
#else
/* An activation word's address: each dot product broadcasts it from memory. */
typedef const void *aword;
SIMD_INLINE aword aword_at(const void *a)
{
    return a;
}
SIMD_INLINE vi dot_word(vi acc, vi w, aword b)
{
    return vi_dot_bcast(acc, w, b);
}
SIMD_INLINE vi dot_word_first(vi w, aword b)
{
    return vi_dot_bcast_first(w, b);
}
#endif

/*
 * With VNNI, acc[j][t] = init[t] (0 when init is NULL) + the dot products of the n weight
 * vectors from q0 of panel p[j] (j < np) with the activations of row t < tt at a[t] + at, exact
 * in int32. One vector a step for every row and panel, so that the np * tt sums are independent
 * chains in program order too (two dot products of one row in a row left the scheduler short of
 * ready work: 4-10% slower on a Zen 5), each started from a broadcast of init[t] or by a dot
 * product into a zeroed register rather than a copy of one.
 */
SIMD_INLINE void subblock_dots(vi acc[KQ_PANELS][TT_K], const struct kpanel *const *p, int np,
                               int q0, int n, const uint8_t *const *a, size_t at,
                               const int32_t *init, int tt)
{
#pragma GCC unroll 16
    for (int t = 0; t < tt; t++) {
        const aword b = aword_at(a[t] + at);
        const vi start = init ? vi_set1(init[t]) : vi_zero();
#pragma GCC unroll 2
        for (int j = 0; j < np; j++) {
            acc[j][t] = init ? dot_word(start, p[j]->q[q0], b) : dot_word_first(p[j]->q[q0], b);
        }
    }
#pragma GCC unroll 8
    for (int i = 1; i < n; i++) {
#pragma GCC unroll 16
        for (int t = 0; t < tt; t++) {
            const aword b = aword_at(a[t] + at + 4 * i);
#pragma GCC unroll 2
            for (int j = 0; j < np; j++) {
                acc[j][t] = dot_word(acc[j][t], p[j]->q[q0 + i], b);
            }
        }
    }
}
#endif

/*
 * A tile of tt activation rows a[t] (Q8_K128, from the panel's first super-block) times nb
 * packed super-blocks with nsub sub-blocks each, of weights 0..wmax, with mins or not, of np
 * panels (panel j's super-blocks from p + j * KQ_CHUNK; np is 1 without VNNI). Per activation
 * scale da_h of 128 elements and row, with dot_s the integer dot product of sub-block s, sc[s]
 * its scale, d the super-block's and sums over s in h:
 *   mins (Q4_K, Q5_K: nsub 8; Q2_K: nsub 16):
 *                        y += da_h * (d * sum sc[s] * dot_s - dmin * sum mn[s] * sums[s])
 *   no mins (Q6_K and Q3_K, packed as Q6_K: nsub 16):
 *                        y += da_h * d * sum sc[s] * (dot_s + q6off[s])
 * (sums[s] the sum of the activations of s, q6off[s] -32 times it). The sums over s are exact in
 * int32 with KSCALE_INT, else d * sc[s] * dot_s is summed in float. Results go to y rows t < tt,
 * panel j's to columns j * NR on, nr columns in all.
 */
SIMD_INLINE void ktile(const struct kpanel *p, int np, int nb, const uint8_t *const *a, int nsub,
                       int wmax, bool mins, float *y, int64_t ldy, int tt, int nr, bool accumulate)
{
    const int len = QK_K / nsub; /* elements per sub-block */
    vf facc[KQ_PANELS][TT_K];
#pragma GCC unroll 2
    for (int j = 0; j < np; j++) {
#pragma GCC unroll 16
        for (int t = 0; t < tt; t++) {
            facc[j][t] =
                start_row(y + t * ldy + j * NR, nr - j * NR < NR ? nr - j * NR : NR, accumulate);
        }
    }
    for (int b = 0; b < nb; b++) {
        const struct kpanel *pb[KQ_PANELS];
#pragma GCC unroll 2
        for (int j = 0; j < np; j++) {
            pb[j] = p + j * KQ_CHUNK + b;
        }
        const size_t ab = (size_t)b * sizeof(struct block_q8_K128);
        for (int h = 0; h < QK_K / QK8_K128; h++) {
            vf f[KQ_PANELS][TT_K];
#pragma GCC unroll 2
            for (int j = 0; j < np; j++) {
#pragma GCC unroll 16
                for (int t = 0; t < tt; t++) {
                    f[j][t] = vf_zero();
                }
            }
#if KSCALE_INT
            (void)np;
            vi acc[TT_K]; /* the integer sums over h */
#pragma GCC unroll 16
            for (int t = 0; t < tt; t++) {
                acc[t] = vi_zero();
            }
            /*
             * The sub-blocks' loop is not unrolled: unrolled, GCC kept more sums live than there
             * are registers, and the Q4_K and Q6_K tiles ran 8-10% slower.
             */
#pragma GCC unroll 1
            for (int sh = 0; sh < QK8_K128 / len; sh++) {
                const int s = h * QK8_K128 / len + sh;
                const size_t at = ab + offsetof(struct block_q8_K128, qs) + (size_t)(s * len);
                subblock_dots(acc, pb[0]->q + s * len / 4, len / 4, wmax, pb[0]->sc[s], a, at, tt);
            }
#else
            (void)wmax;
            /*
             * Unrolled twice: fully unrolled, the two-panel tile's code outgrew what the Zen 5
             * ran fastest (Q4_K 2-5% slower, Q6_K as fast; on the Intel Xeon of
             * docs/benchmarks.md Q4_K 3% faster, Q6_K 1-4% slower); not at all, Q6_K's short
             * sub-blocks ran 5% slower.
             */
#pragma GCC unroll 2
            for (int s = h * QK8_K128 / len; s < (h + 1) * QK8_K128 / len; s++) {
                const size_t at = ab + offsetof(struct block_q8_K128, qs) + (size_t)(s * len);
                /*
                 * Q6_K's sums start at their offsets: adding them after was 2% faster on a Zen 5
                 * but lengthens each short chain, and llvm-mca's Zen 4 model rates it 71% of the
                 * peak against 84%.
                 */
                int32_t q6off[TT_K];
#pragma GCC unroll 16
                for (int t = 0; t < tt && !mins; t++) {
                    q6off[t] = ((const struct block_q8_K128 *)(const void *)(a[t] + ab))->q6off[s];
                }
                vi dots[KQ_PANELS][TT_K];
                subblock_dots(dots, pb, np, s * len / 4, len / 4, a, at, mins ? NULL : q6off, tt);
#pragma GCC unroll 2
                for (int j = 0; j < np; j++) {
#pragma GCC unroll 16
                    for (int t = 0; t < tt; t++) {
                        f[j][t] = vf_fmadd(vf_cvt(dots[j][t]), pb[j]->dsc[s], f[j][t]);
                    }
                }
            }
#endif
#pragma GCC unroll 16
            for (int t = 0; t < tt; t++) {
                const struct block_q8_K128 *blk = (const void *)(a[t] + ab);
#pragma GCC unroll 2
                for (int j = 0; j < np; j++) {
                    if (nsub == 8) {
                        /* the mins of the four sub-blocks of h against their activation sums */
                        vi m = vi_dot16_bcast(vi_zero(), pb[j]->mn[2 * h], blk->sums + 4 * h);
                        m = vi_dot16_bcast(m, pb[j]->mn[2 * h + 1], blk->sums + 4 * h + 2);
                        f[j][t] = vf_fmadd(vf_cvt(m), pb[j]->ndmin, f[j][t]);
                    } else if (mins) {
                        /*
                         * Q2_K: the mins of the eight sub-blocks of h against their sums. Kept
                         * apart from the branch above on purpose: one loop over nsub / 4 dot
                         * products changed the Q4_K tile's register allocation (objdump).
                         */
                        const int16_t *sums = blk->sums16 + 8 * h;
                        vi m = vi_dot16_bcast(vi_zero(), pb[j]->mn[4 * h], sums);
#pragma GCC unroll 4
                        for (int i = 1; i < 4; i++) {
                            m = vi_dot16_bcast(m, pb[j]->mn[4 * h + i], sums + 2 * i);
                        }
                        f[j][t] = vf_fmadd(vf_cvt(m), pb[j]->ndmin, f[j][t]);
                    }
#if KSCALE_INT
                    if (!mins) {
                        /* the offset: -32 times the scales of h's 8 sub-blocks by their sums */
                        const int16_t *sums = blk->sums16 + 8 * h;
#pragma GCC unroll 4
                        for (int i = 0; i < 4; i++) {
                            acc[t] = vi_dot16_bcast(acc[t], pb[j]->mn[4 * h + i], sums + 2 * i);
                        }
                    }
                    f[j][t] = vf_fmadd(vf_cvt(acc[t]), pb[j]->d, f[j][t]);
#endif
                    facc[j][t] = vf_fmadd(f[j][t], vf_set1(blk->d[h]), facc[j][t]);
                }
            }
        }
    }
    y = rows_again(y);
#pragma GCC unroll 2
    for (int j = 0; j < np; j++) {
#pragma GCC unroll 16
        for (int t = 0; t < tt; t++) {
            vf_storeu_n(y + t * ldy + j * NR, facc[j][t], nr - j * NR < NR ? nr - j * NR : NR);
        }
    }
}

/*
 * ktile over the panels of one call, two where the variant pairs them and nr spans a second,
 * for a tile of nt rows.
 */
SIMD_INLINE void ktile_call(const void *panel, int nb, const uint8_t *const *a, int nsub, int wmax,
                            bool mins, float *y, int64_t ldy, int nt, int nr, bool accumulate)
{
#define KTILE(np, h) ktile(panel, np, nb, a, nsub, wmax, mins, y, ldy, h, nr, accumulate)
#define KTILE_2(h)   KTILE(2, h)
#define KTILE_1(h)   KTILE(1, h)
    if (KQ_PANELS > 1 && nr > NR) {
        BY_HEIGHT(nt, TT_K, KTILE_2);
    } else {
        BY_HEIGHT(nt, TT_K, KTILE_1);
    }
#undef KTILE_1
#undef KTILE_2
#undef KTILE
}

static void ktile_q4(const void *panel, int nb, const void *acts, const uint8_t *const *a, float *y,
                     int64_t ldy, int nt, int nr, bool accumulate)
{
    (void)acts;
    ktile_call(panel, nb, a, 8, 15, true, y, ldy, nt, nr, accumulate);
}

static void ktile_q5(const void *panel, int nb, const void *acts, const uint8_t *const *a, float *y,
                     int64_t ldy, int nt, int nr, bool accumulate)
{
    (void)acts;
    ktile_call(panel, nb, a, 8, 31, true, y, ldy, nt, nr, accumulate);
}

static void ktile_q6(const void *panel, int nb, const void *acts, const uint8_t *const *a, float *y,
                     int64_t ldy, int nt, int nr, bool accumulate)
{
    (void)acts;
    ktile_call(panel, nb, a, 16, 63, false, y, ldy, nt, nr, accumulate);
}

static void ktile_q2(const void *panel, int nb, const void *acts, const uint8_t *const *a, float *y,
                     int64_t ldy, int nt, int nr, bool accumulate)
{
    (void)acts;
    ktile_call(panel, nb, a, 16, 3, true, y, ldy, nt, nr, accumulate);
}

/* ---- 32-element blocks ------------------------------------------------------------------- */

#define Q32_CHUNK 16 /* blocks unpacked per panel at a time */
#define Q32_GROUP 4  /* panels sharing one prepared activation tile */

/* One 32-element block of NR rows, unpacked. */
struct qpanel {
    vi q[QK8_0 / 4]; /* lane r of q[i]: weights 4i..4i+3 of row r, signed (offset removed) */
    vi corr;         /* -128 * the sum of the row's 32 weights */
    vf d;            /* the block scale */
    vf m;            /* the block minimum (Q4_1, Q5_1), else 0 */
};

/*
 * How qtile treats the activations: PLAIN; SUM adds the m * sum term of Q4_1 and Q5_1; SPLIT
 * takes a + 128 as 16 * hi + lo, for Q8_0 weights where vi_dot2 would otherwise saturate
 * (products up to 255 * 128), at twice the dot products.
 */
enum qmode { Q_PLAIN, Q_SUM, Q_SPLIT };

/* SPLIT's tile of activation rows over Q32_CHUNK blocks: each u of struct block_q8_0u split. */
struct qacts {
    uint8_t lo[TT_Q][Q32_CHUNK][QK8_0]; /* the low nibbles */
    uint8_t hi[TT_Q][Q32_CHUNK][QK8_0]; /* the high nibbles */
};

/* corr from the packed weights: -128 * their sum, taken as dot products with ones. */
SIMD_INLINE void qpanel_corr(struct qpanel *p)
{
    const vi ones = vi_set1(0x01010101);
    vi sum = vi_zero();
    for (int i = 0; i < QK8_0 / 4; i += 2) {
        sum = vi_dot2(sum, ones, p->q[i], ones, p->q[i + 1]);
    }
    p->corr = vi_sub(vi_zero(), vi_sll(sum, 7));
}

/* Four bits of h from bit shift on, one to bit 0 of each of the four bytes of the lane. */
SIMD_INLINE vi spread4(vi h, int shift)
{
    const vi x = vi_and(vi_srl(h, shift), vi_set1(15));
    return vi_and(vi_mullo(x, vi_set1(0x00204081)), vi_set1(0x01010101));
}

/*
 * Q4_0, Q4_1, Q5_0 and Q5_1: element j < 16 is the low nibble of qs[j], element j + 16 the high
 * nibble, with bit j of the 32-bit qh (when qh > 0) as fifth bit; minus bias. d (and m) are
 * the fp16 values at the block's start.
 */
SIMD_INLINE void pack_nibbles(struct qpanel *p, const uint8_t *blk, const struct panel_rows *pr,
                              size_t qs, size_t qh, int bias, bool with_m)
{
    const vi h = qh > 0 ? gather_at(blk, pr, qh) : vi_zero();
    const vi b = vi_set1(bias * 0x01010101);
    for (int j = 0; j < 4; j++) {
        const vi v = gather_at(blk, pr, qs + 4 * (size_t)j);
        vi lo = nibbles(v, false), hi = nibbles(v, true);
        if (qh > 0) {
            lo = vi_or(lo, vi_sll(spread4(h, 4 * j), 4));
            hi = vi_or(hi, vi_sll(spread4(h, 16 + 4 * j), 4));
        }
        p->q[j] = vi_sub8(lo, b);
        p->q[j + 4] = vi_sub8(hi, b);
    }
    qpanel_corr(p);
    const vi dm = gather_at(blk, pr, 0);
    p->d = half_of(dm, false);
    p->m = with_m ? half_of(dm, true) : vf_zero();
}

static void pack_q8_0(void *panel, const uint8_t *blk, const struct panel_rows *pr)
{
    struct qpanel *p = panel;
    static_assert(QK8_0 / 4 == NR || QK8_0 / 4 == NR / 2, "Q8_0 words fit block_words");
    if (pr->packed) {
        for (int i = 0; i < QK8_0 / 4; i++) {
            p->q[i] = gather_at(blk, pr, offsetof(struct block_q8_0, qs) + 4 * (size_t)i);
        }
    } else {
        block_words(blk + offsetof(struct block_q8_0, qs), pr, QK8_0 / 4, p->q);
    }
    qpanel_corr(p);
    p->d = half_of(gather_at(blk, pr, 0), false);
    p->m = vf_zero();
}

static void pack_q4_0(void *panel, const uint8_t *blk, const struct panel_rows *pr)
{
    pack_nibbles(panel, blk, pr, offsetof(struct block_q4_0, qs), 0, 8, false);
}

static void pack_q5_0(void *panel, const uint8_t *blk, const struct panel_rows *pr)
{
    pack_nibbles(panel, blk, pr, offsetof(struct block_q5_0, qs), offsetof(struct block_q5_0, qh),
                 16, false);
}

static void pack_q4_1(void *panel, const uint8_t *blk, const struct panel_rows *pr)
{
    pack_nibbles(panel, blk, pr, offsetof(struct block_q4_1, qs), 0, 0, true);
}

static void pack_q5_1(void *panel, const uint8_t *blk, const struct panel_rows *pr)
{
    pack_nibbles(panel, blk, pr, offsetof(struct block_q5_1, qs), offsetof(struct block_q5_1, qh),
                 0, true);
}

#if !SIMD_DOT_ANY_U8
/* Fills qacts from blocks [0, nb) of the activation rows a[t], t < nt. */
static void qprep_split(void *acts, const uint8_t *const *a, int nt, int nb)
{
    struct qacts *qa = acts;
    const __m256i low = _mm256_set1_epi8(15);
    for (int t = 0; t < nt; t++) {
        const struct block_q8_0u *blk = (const void *)a[t];
        for (int b = 0; b < nb; b++) {
            const __m256i u = _mm256_loadu_si256((const void *)blk[b].u);
            _mm256_storeu_si256((void *)qa->lo[t][b], _mm256_and_si256(u, low));
            _mm256_storeu_si256((void *)qa->hi[t][b],
                                _mm256_and_si256(_mm256_srli_epi16(u, 4), low));
        }
    }
}
#endif

/*
 * A tile of tt rows of activations a[t] (struct block_q8_0u; SPLIT: as qa holds them) times nb
 * packed blocks: y += d * da * dot (+ m * da * sum a).
 */
SIMD_INLINE void qtile_rows(const struct qpanel *p, int nb, const struct qacts *qa,
                            const uint8_t *const *a, enum qmode mode, float *y, int64_t ldy, int tt,
                            int nr, bool accumulate)
{
    const struct block_q8_0u *blk[TT_Q];
    vf facc[TT_Q];
#pragma GCC unroll 16
    for (int t = 0; t < tt; t++) {
        blk[t] = (const void *)a[t];
        facc[t] = start_row(y + t * ldy, nr, accumulate);
    }
    for (int b = 0; b < nb; b++, p++) {
        vi acc[TT_Q], acc_hi[TT_Q];
#pragma GCC unroll 16
        for (int t = 0; t < tt; t++) {
            acc[t] = p->corr;
            acc_hi[t] = vi_zero();
        }
#pragma GCC unroll 4
        for (int j = 0; j < QK8_0 / 4; j += 2) {
            const vi w0 = p->q[j], w1 = p->q[j + 1];
#pragma GCC unroll 16
            for (int t = 0; t < tt; t++) {
                const uint8_t *u = mode == Q_SPLIT ? qa->lo[t][b] + 4 * j : blk[t][b].u + 4 * j;
                acc[t] = vi_dot2(acc[t], vi_bcast32(u), w0, vi_bcast32(u + 4), w1);
                if (mode == Q_SPLIT) {
                    const uint8_t *h = qa->hi[t][b] + 4 * j;
                    acc_hi[t] = vi_dot2(acc_hi[t], vi_bcast32(h), w0, vi_bcast32(h + 4), w1);
                }
            }
        }
#pragma GCC unroll 16
        for (int t = 0; t < tt; t++) {
            if (mode == Q_SPLIT) {
                acc[t] = vi_add(acc[t], vi_sll(acc_hi[t], 4));
            }
            facc[t] = vf_fmadd(vf_mul(p->d, vf_set1(blk[t][b].d)), vf_cvt(acc[t]), facc[t]);
            if (mode == Q_SUM) {
                facc[t] = vf_fmadd(p->m, vf_set1(blk[t][b].dsum), facc[t]);
            }
        }
    }
    y = rows_again(y);
#pragma GCC unroll 16
    for (int t = 0; t < tt; t++) {
        vf_storeu_n(y + t * ldy, facc[t], nr);
    }
}

/* qtile_rows for a tile of nt rows. */
SIMD_INLINE void qtile(const struct qpanel *p, int nb, const struct qacts *qa,
                       const uint8_t *const *a, enum qmode mode, float *y, int64_t ldy, int nt,
                       int nr, bool accumulate)
{
#define QTILE(h) qtile_rows(p, nb, qa, a, mode, y, ldy, h, nr, accumulate)
    BY_HEIGHT(nt, TT_Q, QTILE);
#undef QTILE
}

static void qtile_plain(const void *panel, int nb, const void *acts, const uint8_t *const *a,
                        float *y, int64_t ldy, int nt, int nr, bool accumulate)
{
    qtile(panel, nb, acts, a, Q_PLAIN, y, ldy, nt, nr, accumulate);
}

static void qtile_sum(const void *panel, int nb, const void *acts, const uint8_t *const *a,
                      float *y, int64_t ldy, int nt, int nr, bool accumulate)
{
    qtile(panel, nb, acts, a, Q_SUM, y, ldy, nt, nr, accumulate);
}

#if !SIMD_DOT_ANY_U8
static void qtile_split(const void *panel, int nb, const void *acts, const uint8_t *const *a,
                        float *y, int64_t ldy, int nt, int nr, bool accumulate)
{
    qtile(panel, nb, acts, a, Q_SPLIT, y, ldy, nt, nr, accumulate);
}
#endif

/* ---- float types ------------------------------------------------------------------------- */

#define FB      32 /* elements per float block */
#define F_CHUNK 4  /* blocks unpacked per panel at a time, for few tiles too (FEW_TILES) */
#define F_GROUP 4  /* panels sharing one prepared activation tile */

/* One block of FB elements of NR rows: lane r of w[k] is element k of row r. */
struct fpanel {
    vf w[FB];
};

/* A tile of activation rows over F_CHUNK blocks, as float. */
struct facts {
    float x[TT_F][F_CHUNK * FB];
};

static void pack_f32(void *panel, const uint8_t *blk, const struct panel_rows *pr)
{
    struct fpanel *p = panel;
    vi w[FB];
    block_words(blk, pr, FB, w);
    for (int k = 0; k < FB; k++) {
        p->w[k] = vf_from_bits(w[k]);
    }
}

/* F16 and BF16: word i holds elements 2i (low half) and 2i + 1. */
static void pack_f16(void *panel, const uint8_t *blk, const struct panel_rows *pr)
{
    struct fpanel *p = panel;
    vi w[FB / 2];
    block_words(blk, pr, FB / 2, w);
    for (int i = 0; i < FB / 2; i++) {
        p->w[2 * i] = half_of(w[i], false);
        p->w[2 * i + 1] = half_of(w[i], true);
    }
}

static void pack_bf16(void *panel, const uint8_t *blk, const struct panel_rows *pr)
{
    struct fpanel *p = panel;
    vi w[FB / 2];
    block_words(blk, pr, FB / 2, w);
    for (int i = 0; i < FB / 2; i++) {
        p->w[2 * i] = vf_from_bits(vi_sll(w[i], 16));
        p->w[2 * i + 1] = vf_from_bits(vi_and(w[i], vi_set1((int32_t)0xffff0000u)));
    }
}

/* Fills facts from blocks [0, nb) of the activation rows a[t], t < nt, of the given type. */
SIMD_INLINE void fprep(struct facts *fa, const uint8_t *const *a, int nt, int nb,
                       enum dllm_act_format act)
{
    for (int t = 0; t < nt; t++) {
        for (int k = 0; k < nb * FB; k += 8) {
            __m256 v;
            switch (act) {
            case DLLM_ACT_F16:
                v = _mm256_cvtph_ps(_mm_loadu_si128((const void *)(a[t] + 2 * k)));
                break;
            case DLLM_ACT_BF16: {
                const __m256i h =
                    _mm256_cvtepu16_epi32(_mm_loadu_si128((const void *)(a[t] + 2 * k)));
                v = _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
                break;
            }
            default: v = _mm256_loadu_ps((const float *)(const void *)a[t] + k); break;
            }
            _mm256_storeu_ps(fa->x[t] + k, v);
        }
    }
}

static void fprep_f32(void *acts, const uint8_t *const *a, int nt, int nb)
{
    fprep(acts, a, nt, nb, DLLM_ACT_F32);
}

static void fprep_f16(void *acts, const uint8_t *const *a, int nt, int nb)
{
    fprep(acts, a, nt, nb, DLLM_ACT_F16);
}

static void fprep_bf16(void *acts, const uint8_t *const *a, int nt, int nb)
{
    fprep(acts, a, nt, nb, DLLM_ACT_BF16);
}

/*
 * A tile of tt rows of fa times nb packed float blocks, added to y when accumulate: the float
 * kinds pack as many blocks at a time for few tiles as for many (F_CHUNK), so that a row is the
 * same bits in a product of any size without starting from y (start_row).
 */
SIMD_INLINE void ftile_rows(const struct fpanel *p, int nb, const struct facts *fa, float *y,
                            int64_t ldy, int tt, int nr, bool accumulate)
{
    vf facc[TT_F];
#pragma GCC unroll 16
    for (int t = 0; t < tt; t++) {
        facc[t] = vf_zero();
    }
    for (int b = 0; b < nb; b++, p++) {
        for (int k = 0; k < FB; k++) {
            const vf wk = p->w[k];
#pragma GCC unroll 16
            for (int t = 0; t < tt; t++) {
                facc[t] = vf_fmadd(wk, vf_set1(fa->x[t][b * FB + k]), facc[t]);
            }
        }
    }
#pragma GCC unroll 16
    for (int t = 0; t < tt; t++) {
        store_row(y + t * ldy, facc[t], nr, accumulate);
    }
}

static void ftile(const void *panel, int nb, const void *acts, const uint8_t *const *a, float *y,
                  int64_t ldy, int nt, int nr, bool accumulate)
{
    (void)a;
#define FTILE(h) ftile_rows(panel, nb, acts, y, ldy, h, nr, accumulate)
    BY_HEIGHT(nt, TT_F, FTILE);
#undef FTILE
}

/* ---- the driver -------------------------------------------------------------------------- */

/*
 * A group's packed chunk of over 32 kB (the AVX-512 K-quant and 32-element kinds: some 45 kB)
 * does not stay in L1 beside the tile's other data. A product of many tiles amortizes that; one
 * of at most FEW_TILES tiles packs half as many blocks of each panel at a time instead
 * (docs/benchmarks.md).
 */
#define FEW_TILES 8
#define FEW_CHUNK(chunk, group, panel_bytes)                                                       \
    ((group) * (chunk) * (panel_bytes) > 32768 ? (chunk) / 2 : (chunk))

/* How one weight type is multiplied. */
struct kind {
    int64_t block_elems; /* weight elements per block */
    size_t wblock;       /* bytes per weight block */
    size_t ablock;       /* bytes per activation block of block_elems elements */
    size_t panel_bytes;  /* one packed block of NR rows */
    int chunk;           /* blocks packed per panel at a time */
    int few;             /* the same in a product of at most FEW_TILES tiles, at most chunk */
    int group;           /* panels sharing one prepared activation tile */
    int tt;              /* activation rows per tile, at most */
    int panels;          /* panels a tile call multiplies at once (nr up to panels * NR) */
    int pwords;          /* vectors per repacked block (kwords), 0 when the type is not repacked */
    bool row_blocks;     /* a long product is taken in blocks of rows (rows_kind) */
    void (*pack)(void *panel, const uint8_t *blk, const struct panel_rows *pr);
    void (*prep)(void *acts, const uint8_t *const *a, int nt, int nb);
    void (*tile)(const void *panel, int nb, const void *acts, const uint8_t *const *a, float *y,
                 int64_t ldy, int nt, int nr, bool accumulate);
};

#define KQ(type, pack, prep, tile)                                                                 \
    {                                                                                              \
        QK_K, sizeof(struct block_##type), sizeof(struct block_q8_K128), sizeof(struct kpanel),    \
            KQ_CHUNK, FEW_CHUNK(KQ_CHUNK, KQ_GROUP, sizeof(struct kpanel)), KQ_GROUP, TT_K,        \
            KQ_PANELS, (sizeof(struct block_##type) + 3) / 4, true, pack, prep, tile               \
    }
#define Q32(type, pack, prep, tile)                                                                \
    {                                                                                              \
        QK8_0, sizeof(struct block_##type), sizeof(struct block_q8_0u), sizeof(struct qpanel),     \
            Q32_CHUNK, FEW_CHUNK(Q32_CHUNK, Q32_GROUP, sizeof(struct qpanel)), Q32_GROUP, TT_Q, 1, \
            (sizeof(struct block_##type) + 3) / 4, true, pack, prep, tile                          \
    }
#define FLT(esize, pack, prep)                                                                     \
    {                                                                                              \
        FB, FB *(esize), FB *(esize), sizeof(struct fpanel), F_CHUNK, F_CHUNK, F_GROUP, TT_F, 1,   \
            0, false, pack, prep, ftile                                                            \
    }

static const struct kind kind_q4_K = KQ(q4_K, pack_q4_K, NULL, ktile_q4);
static const struct kind kind_q5_K = KQ(q5_K, pack_q5_K, NULL, ktile_q5);
static const struct kind kind_q6_K = KQ(q6_K, pack_q6_K, NULL, ktile_q6);
static const struct kind kind_q3_K = KQ(q3_K, pack_q3_K, NULL, ktile_q6);
static const struct kind kind_q2_K = KQ(q2_K, pack_q2_K, NULL, ktile_q2);
#if SIMD_DOT_ANY_U8
static const struct kind kind_q8_0 = Q32(q8_0, pack_q8_0, NULL, qtile_plain);
#else
static const struct kind kind_q8_0 = Q32(q8_0, pack_q8_0, qprep_split, qtile_split);
#endif
static const struct kind kind_q4_0 = Q32(q4_0, pack_q4_0, NULL, qtile_plain);
static const struct kind kind_q5_0 = Q32(q5_0, pack_q5_0, NULL, qtile_plain);
static const struct kind kind_q4_1 = Q32(q4_1, pack_q4_1, NULL, qtile_sum);
static const struct kind kind_q5_1 = Q32(q5_1, pack_q5_1, NULL, qtile_sum);
static const struct kind kind_f32 = FLT(4, pack_f32, fprep_f32);
static const struct kind kind_f16 = FLT(2, pack_f16, fprep_f16);
static const struct kind kind_bf16 = FLT(2, pack_bf16, fprep_bf16);

/*
 * Asks for the line at p to be brought into L1 (l1) or into L2. Written as the instruction:
 * GCC 12 deletes the loops of prefetch_rows as having no effect when they call _mm_prefetch.
 */
SIMD_INLINE void prefetch_line(const uint8_t *p, bool l1)
{
    if (l1) {
        __asm__ volatile("prefetcht0 %0" : : "m"(*(const char *)p));
    } else {
        __asm__ volatile("prefetcht1 %0" : : "m"(*(const char *)p));
    }
}

/*
 * Asks for bytes [at, at + len) of the weight rows [n0, n1) to be brought into L1 (l1) or into
 * L2; of a repacked matrix (wstride the bytes of a repacked panel, n0 and n1 multiples of NR),
 * the bytes [at * NR, (at + len) * NR) of its panels.
 */
static void prefetch_rows(const uint8_t *w, size_t wstride, int64_t n0, int64_t n1, size_t at,
                          size_t len, bool packed, bool l1)
{
    if (packed) {
        for (int64_t p = n0 / NR; p < (n1 + NR - 1) / NR; p++) {
            for (size_t off = at * NR; off < (at + len) * NR; off += 64) {
                prefetch_line(w + (size_t)p * wstride + off, l1);
            }
        }
        return;
    }
    for (int64_t n = n0; n < n1; n++) {
        const uint8_t *row = w + (size_t)n * wstride + at;
        for (size_t off = 0; off < len; off += 64) {
            prefetch_line(row + off, l1);
        }
    }
}

/* Stack space for a group of packed panels and one prepared activation tile, of any kind. */
union panels {
    struct kpanel k[KQ_GROUP][KQ_CHUNK];
    struct qpanel q[Q32_GROUP][Q32_CHUNK];
    struct fpanel f[F_GROUP][F_CHUNK];
};
union acts {
    struct qacts q;
    struct facts f;
};
#define TT_MAX 16
static_assert(TT_K <= TT_MAX && TT_Q <= TT_MAX && TT_F <= TT_MAX, "tiles fit TT_MAX");

/*
 * Rows [n0, n1) of W times the L activation rows in scratch, as one block of rows. Groups of up
 * to k->group panels of NR rows are packed k->chunk blocks at a time (k->few for few tiles); each
 * tile of k->tt activation rows is then prepared once and multiplied with every panel of the
 * group, k->panels at a call. The L rows are spread evenly over the fewest tiles of at most k->tt
 * rows, and each tile computes only the rows it has (BY_HEIGHT).
 */
static void rows_block(const struct kind *k, const uint8_t *w, bool packed, int64_t K, int64_t n0,
                       int64_t n1, const uint8_t *scratch, int64_t L, float *y, int64_t ldy)
{
    const int64_t nbk = K / k->block_elems;
    const size_t astride = (size_t)nbk * k->ablock;
    /* a row, or a repacked panel of NR rows; a block in it, as the prefetches count it */
    const size_t wblock = packed ? (size_t)k->pwords * sizeof(vi) / NR : k->wblock;
    const size_t wstride = (size_t)nbk * wblock * (packed ? NR : 1);
    const int64_t ntiles = (L + k->tt - 1) / k->tt;
    const int chunk = ntiles <= FEW_TILES ? k->few : k->chunk;
    union panels panels __attribute__((aligned(64)));
    union acts acts __attribute__((aligned(64)));
    for (int64_t g0 = n0; g0 < n1; g0 += k->group * NR) {
        const int np =
            (int)((n1 - g0 + NR - 1) / NR < k->group ? (n1 - g0 + NR - 1) / NR : k->group);
        for (int64_t b0 = 0; b0 < nbk; b0 += chunk) {
            const int nb = (int)(nbk - b0 < chunk ? nbk - b0 : chunk);
            for (int i = 0; i < np; i++) {
                const int64_t p0 = g0 + i * NR;
                /*
                 * The next panel's blocks into L1 while this one is packed (the first panel's
                 * were asked for at the last tile of the chunk before): from L2, where the
                 * prefetches below left them, they would hold up its packing.
                 */
                if (i + 1 < np) {
                    prefetch_rows(w, wstride, p0 + NR, n1 < p0 + 2 * NR ? n1 : p0 + 2 * NR,
                                  (size_t)b0 * wblock, (size_t)nb * wblock, packed, true);
                }
                struct panel_rows pr;
                panel_rows_init(&pr, wstride, (int)(n1 - p0 < NR ? n1 - p0 : NR));
                pr.packed = packed;
                const uint8_t *blk =
                    packed ? w + (size_t)(p0 / NR) * wstride + (size_t)b0 * NR * wblock
                           : w + (size_t)p0 * wstride + (size_t)b0 * wblock;
                for (int b = 0; b < nb; b++) {
                    k->pack((uint8_t *)&panels + (size_t)(i * k->chunk + b) * k->panel_bytes,
                            blk + (size_t)b * (packed ? NR : 1) * wblock, &pr);
                }
            }
            /* the chunk packed next: rows [q0, q1), bytes [at, at + len) of each */
            const int64_t gend = n1 < g0 + np * NR ? n1 : g0 + np * NR;
            const bool same = b0 + nb < nbk;
            const int64_t q0 = same ? g0 : gend,
                          q1 =
                              same ? gend : (n1 < gend + k->group * NR ? n1 : gend + k->group * NR);
            const int64_t qb = same ? b0 + nb : 0;
            const size_t at = (size_t)qb * wblock,
                         len = (size_t)(nbk - qb < chunk ? nbk - qb : chunk) * wblock;
            for (int64_t ti = 0; ti < ntiles; ti++) {
                /* the rows spread evenly: tiles of nt and nt + 1 rows, none over k->tt */
                const int64_t l0 = L * ti / ntiles;
                const int nt = (int)(L * (ti + 1) / ntiles - l0);
                /* spread over the tiles, so the prefetches do not queue up */
                int64_t f0 = q0 + (q1 - q0) * ti / ntiles, f1 = q0 + (q1 - q0) * (ti + 1) / ntiles;
                if (packed) { /* whole panels */
                    f0 = q0 + (f0 - q0) / NR * NR;
                    f1 = ti + 1 == ntiles ? q1 : q0 + (f1 - q0) / NR * NR;
                }
                prefetch_rows(w, wstride, f0, f1, at, len, packed, false);
                if (ti + 1 == ntiles) { /* the first panel packed next, into L1 */
                    prefetch_rows(w, wstride, q0, q1 < q0 + NR ? q1 : q0 + NR, at, len, packed,
                                  true);
                }
                const uint8_t *a[TT_MAX];
                for (int t = 0; t < nt; t++) {
                    a[t] = scratch + (size_t)(l0 + t) * astride + (size_t)b0 * k->ablock;
                }
                if (k->prep != NULL) {
                    k->prep(&acts, a, nt, nb);
                }
                for (int i = 0; i < np; i += k->panels) {
                    const int64_t p0 = g0 + i * NR, span = (int64_t)k->panels * NR;
                    k->tile((uint8_t *)&panels + (size_t)(i * k->chunk) * k->panel_bytes, nb, &acts,
                            a, y + l0 * ldy + p0, ldy, nt, (int)(n1 - p0 < span ? n1 - p0 : span),
                            b0 > 0);
                }
            }
        }
    }
}

/*
 * A long product of a quantized kind is taken in blocks of rows, each packing the weights again.
 * In one block every group of panels reads all L rows' activations, which on the Intel Xeon of
 * docs/benchmarks.md then no longer stay in its L2: a product of K = 4096 ran 6-8% slower at L =
 * 512 and 12% at 1024 than at 160. A block holds the rows whose activations take ROW_BLOCK_BYTES,
 * up to twice as many (the blocks even, none short). Rows too wide for ROW_BLOCK_ROWS of them to
 * fit (K-quants of K over about 5500) are not split: in blocks of fewer rows their products ran
 * 4-18% slower at L = 160 and 512 (the packing repeated too often), no faster at 2048. Nor are
 * the float kinds', whose tiles convert their activations on the stack (2-5% slower in blocks).
 */
#define ROW_BLOCK_BYTES (768 * 1024)
#define ROW_BLOCK_ROWS  96

/* Rows [n0, n1) of W times the L activation rows in scratch, in blocks where k takes them. */
static void rows_kind(const struct kind *k, const uint8_t *w, bool packed, int64_t K, int64_t n0,
                      int64_t n1, const uint8_t *scratch, int64_t L, float *y, int64_t ldy)
{
    const size_t astride = (size_t)(K / k->block_elems) * k->ablock;
    const int64_t rows = (int64_t)(ROW_BLOCK_BYTES / astride);
    const int64_t nblocks = k->row_blocks && rows >= ROW_BLOCK_ROWS && L / rows > 1 ? L / rows : 1;
    for (int64_t i = 0; i < nblocks; i++) {
        const int64_t l0 = L * i / nblocks, l1 = L * (i + 1) / nblocks;
        rows_block(k, w, packed, K, n0, n1, scratch + (size_t)l0 * astride, l1 - l0, y + l0 * ldy,
                   ldy);
    }
}

/* The kind of a weight type, or NULL where the reference kernel serves. */
static const struct kind *kind_of(uint32_t wtype, int64_t K)
{
    switch (wtype) {
    case DLLM_TYPE_Q4_K: return &kind_q4_K;
    case DLLM_TYPE_Q5_K: return &kind_q5_K;
    case DLLM_TYPE_Q6_K: return &kind_q6_K;
    case DLLM_TYPE_Q3_K: return &kind_q3_K;
    case DLLM_TYPE_Q2_K: return &kind_q2_K;
    case DLLM_TYPE_Q8_0: return &kind_q8_0;
    case DLLM_TYPE_Q4_0: return &kind_q4_0;
    case DLLM_TYPE_Q5_0: return &kind_q5_0;
    case DLLM_TYPE_Q4_1: return &kind_q4_1;
    case DLLM_TYPE_Q5_1: return &kind_q5_1;
    case DLLM_TYPE_F32: return K % FB == 0 ? &kind_f32 : NULL;
    case DLLM_TYPE_F16: return K % FB == 0 ? &kind_f16 : NULL;
    case DLLM_TYPE_BF16: return K % FB == 0 ? &kind_bf16 : NULL;
    default: return NULL;
    }
}

void SIMD_NAME(dllm_matmul_rows)(uint32_t wtype, const void *w, int64_t K, int64_t n0, int64_t n1,
                                 const void *scratch, int64_t L, float *y, int64_t ldy)
{
    const struct kind *k = kind_of(wtype, K);
    if (k == NULL) {
        dllm_matmul_rows_ref(wtype, w, K, n0, n1, scratch, L, y, ldy);
    } else if (n0 < n1 && L > 0) {
        rows_kind(k, w, false, K, n0, n1, scratch, L, y, ldy);
    }
}

/* ---- repacked weights -------------------------------------------------------------------- */

/*
 * A repacked matrix: for each panel of NR rows (the last one's missing rows repeat its last
 * row), for each block, the pwords vectors kwords reads, lane r of vector i holding word i of
 * row r's block (the last word of a block of no whole number of words padded). The quantized
 * types are repacked: their panels then need no transposing or gathering.
 */
size_t SIMD_NAME(dllm_matmul_repacked_bytes)(uint32_t wtype, int64_t K, int64_t N)
{
    const struct kind *k = kind_of(wtype, K);
    if (k == NULL || k->pwords == 0) {
        return 0;
    }
    return (size_t)((N + NR - 1) / NR) * (size_t)(K / k->block_elems) * (size_t)k->pwords *
           sizeof(vi);
}

void SIMD_NAME(dllm_matmul_repack)(uint32_t wtype, const void *w, int64_t K, int64_t N, int64_t n0,
                                   int64_t n1, void *dst)
{
    const struct kind *k = kind_of(wtype, K);
    const int64_t nbk = K / k->block_elems;
    const size_t wstride = (size_t)nbk * k->wblock;
    const int nd = (int)(k->wblock / 4);
    const bool tail = k->wblock % 4 != 0;
    for (int64_t p0 = n0; p0 < n1; p0 += NR) {
        struct panel_rows pr;
        panel_rows_init(&pr, wstride, (int)(N - p0 < NR ? N - p0 : NR));
        vi *out = (vi *)dst + (size_t)(p0 / NR) * (size_t)nbk * (size_t)k->pwords;
        for (int64_t b = 0; b < nbk; b++, out += k->pwords) {
            vi buf[64];
            const vi *words =
                kwords((const uint8_t *)w + (size_t)p0 * wstride + (size_t)b * k->wblock, &pr, nd,
                       tail, buf);
            for (int i = 0; i < k->pwords; i++) {
                out[i] = words[i];
            }
        }
    }
}

void SIMD_NAME(dllm_matmul_rows_packed)(uint32_t wtype, const void *w, int64_t K, int64_t n0,
                                        int64_t n1, const void *scratch, int64_t L, float *y,
                                        int64_t ldy)
{
    if (n0 < n1 && L > 0) {
        rows_kind(kind_of(wtype, K), w, true, K, n0, n1, scratch, L, y, ldy);
    }
}

/* ---- activation conversion --------------------------------------------------------------- */
#ifndef SIMD_ROWS_ONLY

/*
 * Q8_K128 exactly as the reference: per 128 elements max is the first element of largest
 * magnitude, q = min(127, round_half_even(-127/max * x)), d = 1 / (-127/max) (0 for zeros);
 * then the sums over 32 and 16, and -32 times the latter.
 */
static void quantize_q8_K128(const float *x, struct block_q8_K128 *y, int64_t nb)
{
    for (int64_t b = 0; b < nb; b++, y++) {
        uint64_t sums8[QK_K / 8]; /* each 8 quants' sum + 8 * 128 */
        for (int h = 0; h < QK_K / QK8_K128; h++, x += QK8_K128) {
            vf top0 = vf_zero(), top1 = vf_zero(), bottom0 = vf_zero(), bottom1 = vf_zero();
            for (int v = 0; v < QK8_K128 / NR; v += 2) {
                const vf x0 = vf_loadu(x + v * NR), x1 = vf_loadu(x + (v + 1) * NR);
                top0 = vf_max(top0, x0);
                top1 = vf_max(top1, x1);
                bottom0 = vf_min(bottom0, x0);
                bottom1 = vf_min(bottom1, x1);
            }
            const float top = vf_reduce_max(vf_max(top0, top1));
            const float bottom = vf_reduce_min(vf_min(bottom0, bottom1));
            /* the value of largest magnitude; where both signs have it, the first one */
            float max = top > -bottom ? top : bottom;
            if (top == -bottom) {
                for (int v = 0; v < QK8_K128 / NR && top != 0.0f; v++) {
                    const unsigned hit = vf_eq_mask(vf_abs(vf_loadu(x + v * NR)), vf_set1(top));
                    if (hit != 0) {
                        max = x[v * NR + __builtin_ctz(hit)];
                        break;
                    }
                }
            }
            const float iscale = max != 0.0f ? -127.0f / max : 0.0f;
            const vf vs = vf_set1(iscale);
            for (int v = 0; v < QK8_K128 / NR; v += 4) {
                vi q[4];
                for (int i = 0; i < 4; i++) {
                    q[i] =
                        vi_min(vi_cvt_round(vf_mul(vf_loadu(x + (v + i) * NR), vs)), vi_set1(127));
                }
                vi_store4_i8_sums8(y->qs + QK8_K128 * h + v * NR, q,
                                   sums8 + (QK8_K128 * h + v * NR) / 8);
            }
            y->d[h] = max != 0.0f ? 1.0f / iscale : 0.0f;
        }
        for (int g = 0; g < QK_K / 16; g++) {
            const int32_t sum16 = (int32_t)(sums8[2 * g] + sums8[2 * g + 1]) - 16 * 128;
            y->sums16[g] = (int16_t)sum16;
            y->q6off[g] = -32 * sum16;
        }
        for (int j = 0; j < QK_K / 32; j++) {
            y->sums[j] = (int16_t)(y->sums16[2 * j] + y->sums16[2 * j + 1]);
        }
    }
}

/*
 * Q8_0 exactly as the reference, into struct block_q8_0u: d = amax / 127 rounded to fp16, q =
 * round_half_away(x / d) with the unrounded d, stored + 128; dsum = d * the sum of q. The
 * rounding: t = trunc(v), plus the sign of v when |v - t| >= 1/2. d goes to fp16 and back by
 * F16C, which every variant has: the bits of dllm_f32_to_fp16, without the call.
 */
static void quantize_q8_0(const float *x, struct block_q8_0u *y, int64_t nb)
{
    for (int64_t b = 0; b < nb; b++, x += QK8_0, y++) {
        vf amaxv = vf_zero();
        for (int v = 0; v < QK8_0 / NR; v++) {
            amaxv = vf_max(amaxv, vf_abs(vf_loadu(x + v * NR)));
        }
        const float d = vf_reduce_max(amaxv) / 127.0f;
        const vf id = vf_set1(d != 0.0f ? 1.0f / d : 0.0f);
        vi sum = vi_zero();
        for (int v = 0; v < QK8_0 / NR; v++) {
            const vf s = vf_mul(vf_loadu(x + v * NR), id);
            const vf t = vf_trunc(s);
            const vf up = vf_select_ge(vf_abs(vf_sub(s, t)), 0.5f, vf_sign_one(s));
            const vi q = vi_cvt_round(vf_add(t, up));
            vi_store_u8(y->u + v * NR, vi_add(q, vi_set1(128)));
            sum = vi_add(sum, q);
        }
        y->d = _cvtsh_ss(_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT));
        y->dsum = y->d * (float)vi_hsum(sum);
    }
}

void SIMD_NAME(dllm_matmul_quantize)(uint32_t wtype, const float *x, int64_t K, int64_t L,
                                     void *scratch)
{
    const enum dllm_act_format act = dllm_matmul_act_format(wtype);
    if (act == DLLM_ACT_BF16 || K % NR != 0) {
        dllm_matmul_quantize_ref(wtype, x, K, L, scratch);
        return;
    }
    const size_t stride = dllm_matmul_act_row_bytes(wtype, K);
    for (int64_t l = 0; l < L; l++, x += K) {
        uint8_t *dst = (uint8_t *)scratch + (size_t)l * stride;
        switch (act) {
        case DLLM_ACT_Q8_K128: quantize_q8_K128(x, (void *)dst, K / QK_K); break;
        case DLLM_ACT_Q8_0: quantize_q8_0(x, (void *)dst, K / QK8_0); break;
        case DLLM_ACT_F16:
            for (int64_t k = 0; k < K; k += NR) {
                vf_store_f16(dst + 2 * k, vf_loadu(x + k));
            }
            break;
        default: memcpy(dst, x, (size_t)K * sizeof *x); break;
        }
    }
}

#endif
