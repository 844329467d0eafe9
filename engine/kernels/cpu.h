/*
 * CPU feature detection and the table of matrix-kernel variants chosen from it at run time.
 *
 * Each variant is a struct dllm_kernels with the two steps of matmul.h: quantize converts
 * activations to the weight type's activation format (byte for byte what
 * dllm_matmul_quantize_ref writes, so any variant's rows can read it) and rows multiplies a
 * range of weight rows with them. Every variant takes the weights in their GGUF layout: the
 * SIMD ones unpack panels of row_align rows on the stack as they go and reuse each unpacked
 * panel for all L activation rows. The SIMD ones can also repack a quantized matrix once into
 * their panel layout (repack, rows_packed), which spares them transposing each panel on every
 * product. The reference serves the float types when K is not a multiple of 32, and conversions
 * to BF16.
 */
#ifndef DLLM_KERNELS_CPU_H
#define DLLM_KERNELS_CPU_H

#include "dllm.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Instruction-set extensions the variants need, as detected (CPU and OS register support). */
enum dllm_cpu_feature {
    DLLM_CPU_AVX2 = 1u << 0,
    DLLM_CPU_FMA = 1u << 1,
    DLLM_CPU_F16C = 1u << 2,
    DLLM_CPU_AVXVNNI = 1u << 3,
    DLLM_CPU_AVX512F = 1u << 4,
    DLLM_CPU_AVX512BW = 1u << 5,
    DLLM_CPU_AVX512VL = 1u << 6,
    DLLM_CPU_AVX512DQ = 1u << 7,
    DLLM_CPU_AVX512VNNI = 1u << 8,
};

/* The features this CPU and OS support (cpuid, and xgetbv for the saved register state). */
unsigned dllm_cpu_features(void);

/* Converts x[L, K] to wtype's activation format in scratch (see matmul.h). */
typedef void (*dllm_quantize_fn)(uint32_t wtype, const float *x, int64_t K, int64_t L,
                                 void *scratch);

/* y[l*ldy + n] = W[n, :] . x[l, :] for n in [n0, n1), l in [0, L) (see matmul.h). */
typedef void (*dllm_rows_fn)(uint32_t wtype, const void *w, int64_t K, int64_t n0, int64_t n1,
                             const void *scratch, int64_t L, float *y, int64_t ldy);

/* Bytes of W [N, K] of type wtype repacked for a variant; 0 when it does not repack wtype. */
typedef size_t (*dllm_repacked_bytes_fn)(uint32_t wtype, int64_t K, int64_t N);

/*
 * Repacks rows [n0, n1) of W [N, K] (n0 a multiple of row_align, n1 too or N) into dst, which
 * holds the whole repacked matrix, repacked_bytes long and 64-byte aligned.
 */
typedef void (*dllm_repack_fn)(uint32_t wtype, const void *w, int64_t K, int64_t N, int64_t n0,
                               int64_t n1, void *dst);

/* One kernel variant. */
struct dllm_kernels {
    const char *name;  /* "ref", "avx2", "avxvnni" or "avx512" */
    unsigned features; /* the enum dllm_cpu_feature bits it needs */
    int64_t row_align; /* row ranges are fastest when n0 and n1 are multiples of this */
    dllm_quantize_fn quantize;
    dllm_rows_fn rows;
    dllm_repacked_bytes_fn repacked_bytes; /* NULL: the variant never repacks */
    dllm_repack_fn repack;
    dllm_rows_fn rows_packed; /* rows over a repacked W; n0 a multiple of row_align */
};

/* All variants, slowest first; *n receives their count. */
const struct dllm_kernels *dllm_kernels_all(size_t *n);

/* Whether this CPU runs a variant. */
bool dllm_kernels_usable(const struct dllm_kernels *k);

/*
 * The variant named force, or the fastest this CPU runs when force is NULL or empty. An
 * unknown name is DLLM_ERR_ARG; a variant this CPU lacks is DLLM_ERR_UNSUPPORTED.
 */
enum dllm_status dllm_kernels_select(const char *force, const struct dllm_kernels **out,
                                     struct dllm_error *err);

/*
 * Running a variant on a thread pool: the conversion cuts the L activation rows into one run
 * a thread; the product and the repack share out items of whole panels of row_align weight
 * rows (4 to 16 panels a product item, 4 a repack item; the last one shorter), claimed by the
 * pool's threads as they come free. Each returns when all its work is done. pool may hold one
 * thread.
 */
struct dllm_threadpool;

/*
 * k->quantize of x[L, K] into scratch, the rows cut into one run a thread, run t on thread t
 * (as the backend's row-by-row ops cut them: each thread converts the rows it last wrote).
 */
void dllm_kernels_quantize_par(const struct dllm_kernels *k, struct dllm_threadpool *pool,
                               uint32_t wtype, const float *x, int64_t K, int64_t L, void *scratch);

/*
 * The same for L rows gathered from x, row l of the result converted from x + rows[l] * K (the
 * bytes dllm_kernels_quantize_par makes of those rows copied together, without the copy).
 */
void dllm_kernels_quantize_rows_par(const struct dllm_kernels *k, struct dllm_threadpool *pool,
                                    uint32_t wtype, const float *x, int64_t K, const int32_t *rows,
                                    int64_t L, void *scratch);

/* k->rows for all rows [0, N) of W, shared out over the pool. */
void dllm_kernels_rows_par(const struct dllm_kernels *k, struct dllm_threadpool *pool,
                           uint32_t wtype, const void *w, int64_t K, int64_t N, const void *scratch,
                           int64_t L, float *y, int64_t ldy);

/*
 * Where dllm_kernels_repack_par reads W from when it is not in memory: read(user, at, n, dst)
 * copies W's bytes [at, at + n) to dst and returns 0, or an errno value when it cannot. Each
 * thread reads its item's rows into its own part of buf, dllm_kernels_repack_buf_bytes long,
 * and repacks them from there, where they are still in its cache.
 */
struct dllm_weight_reader {
    int (*read)(void *user, size_t at, size_t n, void *dst);
    void *user;
    void *buf; /* the pool's threads x dllm_kernels_repack_buf_bytes bytes */
};

/* The bytes of a reader's buf each thread needs to repack a matrix of type wtype, K columns. */
size_t dllm_kernels_repack_buf_bytes(const struct dllm_kernels *k, uint32_t wtype, int64_t K);

/*
 * k->repack of all of W into dst, the rows shared out over the pool: from w in memory when
 * reader is NULL, else read with reader (w unused). Returns 0, or the errno value of a read
 * that failed (dst then incomplete).
 */
int dllm_kernels_repack_par(const struct dllm_kernels *k, struct dllm_threadpool *pool,
                            uint32_t wtype, const void *w, int64_t K, int64_t N, void *dst,
                            const struct dllm_weight_reader *reader);

/* k->rows_packed for all rows [0, N) of a repacked W, shared out over the pool. */
void dllm_kernels_rows_packed_par(const struct dllm_kernels *k, struct dllm_threadpool *pool,
                                  uint32_t wtype, const void *packed, int64_t K, int64_t N,
                                  const void *scratch, int64_t L, float *y, int64_t ldy);

/*
 * One matrix of a grouped product: y[L, N] = the converted activation rows [row, row + L) of
 * the shared scratch times W^T.
 */
struct dllm_kernels_part {
    const void *w; /* W, repacked when the product's packed is set */
    int64_t row, L;
    float *y;
};

/* What a grouped product does with each block of a part's output once it is computed. */
struct dllm_kernels_then {
    /* part's output columns [n0, n1), just written by the calling thread */
    void (*fn)(void *user, int64_t part, int64_t n0, int64_t n1);
    void *user;
};

/*
 * The products of n_parts matrices of one type and shape (a MoE layer's experts) over their
 * rows of one converted scratch, every part's items shared out over the pool in one run:
 * each part's output is bit for bit its own product's (k->rows_packed with packed, else
 * k->rows). With then (else NULL), an item is one block of columns of every part, the parts
 * in order, each block followed by then->fn on the same thread: what fn does to a column of
 * several parts' outputs is done in part order, on any number of threads.
 */
void dllm_kernels_rows_parts_par(const struct dllm_kernels *k, struct dllm_threadpool *pool,
                                 uint32_t wtype, bool packed, int64_t K, int64_t N,
                                 const struct dllm_kernels_part *parts, int64_t n_parts,
                                 const void *scratch, int64_t ldy,
                                 const struct dllm_kernels_then *then);

/* The SIMD variants' entry points, defined in matmul-<name>.c (avxvnni quantizes as avx2). */
void dllm_matmul_quantize_avx2(uint32_t wtype, const float *x, int64_t K, int64_t L, void *scratch);
void dllm_matmul_rows_avx2(uint32_t wtype, const void *w, int64_t K, int64_t n0, int64_t n1,
                           const void *scratch, int64_t L, float *y, int64_t ldy);
void dllm_matmul_rows_avxvnni(uint32_t wtype, const void *w, int64_t K, int64_t n0, int64_t n1,
                              const void *scratch, int64_t L, float *y, int64_t ldy);
void dllm_matmul_quantize_avx512(uint32_t wtype, const float *x, int64_t K, int64_t L,
                                 void *scratch);
void dllm_matmul_rows_avx512(uint32_t wtype, const void *w, int64_t K, int64_t n0, int64_t n1,
                             const void *scratch, int64_t L, float *y, int64_t ldy);

#define DLLM_DECLARE_REPACK(isa)                                                                   \
    size_t dllm_matmul_repacked_bytes_##isa(uint32_t wtype, int64_t K, int64_t N);                 \
    void dllm_matmul_repack_##isa(uint32_t wtype, const void *w, int64_t K, int64_t N, int64_t n0, \
                                  int64_t n1, void *dst);                                          \
    void dllm_matmul_rows_packed_##isa(uint32_t wtype, const void *w, int64_t K, int64_t n0,       \
                                       int64_t n1, const void *scratch, int64_t L, float *y,       \
                                       int64_t ldy);
DLLM_DECLARE_REPACK(avx2)
DLLM_DECLARE_REPACK(avxvnni)
DLLM_DECLARE_REPACK(avx512)

#endif
