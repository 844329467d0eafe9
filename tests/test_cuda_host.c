/*
 * Host tests of the CUDA backend's device maths (cuda/dequant.h, cuda/rowstats.h): the
 * DLLM_HD functions compiled by the C compiler give the same bits as the CPU decoders
 * (engine/gguf/quant.c) and the CPU backend's row statistics, and the fixture models'
 * tensors decode to the values the `gguf` Python package dequantized. No GPU or nvcc needed.
 */
#include "config.h"

#include "../cuda/dequant.h"
#include "../cuda/rowstats.h"
#include "dequant_fixture.h"
#include "fixtures.h"
#include "forward_util.h"
#include "gguf/quant.h"
#include "kernels/rowmath.h"
#include "random_data.h"

#include <check.h>
#include <float.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static json_t *manifest; /* fixtures/dequant/manifest.json: an array of tensors */

/* Decodes n elements of a row of blocks with dllm_hd_row_elem. */
static void hd_decode(uint32_t type, const void *blocks, int64_t n, float *dst)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = dllm_hd_row_elem(type, blocks, i);
}

/*
 * The same n elements (a multiple of 32) as the dequantization kernels take them: a K-quant
 * block by the 32 lanes of a warp (dllm_hd_kquant_lane; each element written once, checked),
 * other types 32 at a time.
 */
static void hd_decode_as_kernel(uint32_t type, const void *blocks, int64_t n, float *dst)
{
    const int64_t be = dllm_hd_block_elems(type), bb = dllm_hd_block_bytes(type);
    if (!dllm_hd_is_kquant(type)) {
        for (int64_t i = 0; i < n; i += 32)
            dllm_hd_decode32(type, (const uint8_t *)blocks + i / be * bb, (int)(i % be / 32),
                             dst + i);
        return;
    }
    for (int64_t blk = 0; blk < n / be; blk++) {
        int written[256] = {0};
        for (int lane = 0; lane < 32; lane++) {
            float v[8];
            int second;
            const int first =
                dllm_hd_kquant_lane(type, (const uint8_t *)blocks + blk * bb, lane, v, &second);
            for (int i = 0; i < 8; i++) {
                const int at = (i < 4 ? first : second - 4) + i;
                if (at < 0 || at >= 256)
                    ck_abort_msg("lane %d writes element %d of a block", lane, at);
                written[at]++;
                dst[blk * 256 + at] = v[i];
            }
        }
        for (int j = 0; j < 256; j++)
            if (written[j] != 1)
                ck_abort_msg("element %d of a block written %d times", j, written[j]);
    }
}

/*
 * Fails unless got and want hold the same bits everywhere, but where both are NaN: which NaN an
 * operation on a NaN returns (sign, payload) is the compiler's and the hardware's choice (clang
 * and gcc order the operands of the decoders' d * q - m differently).
 */
static void expect_bits(const float *got, const float *want, int64_t n, const char *what)
{
    for (int64_t i = 0; i < n; i++)
        if (dllm_f32_bits(got[i]) != dllm_f32_bits(want[i]) && !(isnan(got[i]) && isnan(want[i])))
            ck_abort_msg("%s: element %" PRId64
                         " is %a (0x%08x), the CPU decoder gives %a (0x%08x)",
                         what, i, got[i], dllm_f32_bits(got[i]), want[i], dllm_f32_bits(want[i]));
}

/* ---- decoders against the CPU decoders, random blocks ---------------------------------- */

static const uint32_t hd_types[] = {
    DLLM_TYPE_F32,  DLLM_TYPE_F16,  DLLM_TYPE_BF16, DLLM_TYPE_Q4_0, DLLM_TYPE_Q4_1,
    DLLM_TYPE_Q5_0, DLLM_TYPE_Q5_1, DLLM_TYPE_Q8_0, DLLM_TYPE_Q2_K, DLLM_TYPE_Q3_K,
    DLLM_TYPE_Q4_K, DLLM_TYPE_Q5_K, DLLM_TYPE_Q6_K,
};

/*
 * Decodes a tensor's blocks through the CPU's tensor decoder, the HD decoders element by
 * element and 32 elements at a time, and compares.
 */
static void expect_as_cpu(uint32_t type, const void *blocks, int64_t n, const char *what)
{
    struct dllm_gguf_tensor t = {.name = what, .type = type, .n_dims = 1};
    t.ne[0] = n;
    t.ne[1] = t.ne[2] = t.ne[3] = 1;
    t.data = blocks;
    t.size = (size_t)(n / dllm_type_block_elems(type)) * dllm_type_block_bytes(type);
    float *want = malloc((size_t)n * sizeof *want), *got = malloc((size_t)n * sizeof *got);
    ck_assert_ptr_nonnull(want);
    ck_assert_ptr_nonnull(got);
    struct dllm_error err = {0};
    ck_assert_msg(dllm_gguf_tensor_decode(&t, 0, n, want, &err) == DLLM_OK, "%s", err.text);
    hd_decode(type, blocks, n, got);
    expect_bits(got, want, n, what);
    char what32[200];
    snprintf(what32, sizeof what32, "%s, as the kernels take it", what);
    hd_decode_as_kernel(type, blocks, n, got);
    expect_bits(got, want, n, what32);
    free(want);
    free(got);
}

/* The geometry the HD decoders use is the type table's, for every type they decode. */
START_TEST(test_geometry)
{
    uint32_t type = hd_types[_i];
    ck_assert_int_eq(dllm_hd_block_elems(type), dllm_type_block_elems(type));
    ck_assert_int_eq(dllm_hd_block_bytes(type), (int)dllm_type_block_bytes(type));
    ck_assert(dllm_type_decodable(type));
}
END_TEST

/* Every type the CPU decodes and the HD decoders do not: they say so by a block size of 0. */
START_TEST(test_geometry_unsupported)
{
    for (uint32_t type = 0; type < 64; type++) {
        bool listed = false;
        for (size_t i = 0; i < N_OF(hd_types); i++)
            listed |= hd_types[i] == type;
        ck_assert_msg((dllm_hd_block_elems(type) != 0) == listed, "type %u", type);
        ck_assert_msg((dllm_hd_block_bytes(type) != 0) == listed, "type %u", type);
    }
}
END_TEST

/* Random blocks with sane scales (both sign conventions): 64 rows of 512 elements. */
START_TEST(test_random_blocks)
{
    uint32_t type = hd_types[_i];
    uint64_t seed = 0xc0da0000u + type;
    for (int signs = 0; signs < 2; signs++) {
        void *w = random_weights(type, 64, 512,
                                 signs ? RANDOM_SCALES_SIGNED : RANDOM_SCALES_POSITIVE, &seed);
        expect_as_cpu(type, w, 64 * 512, dllm_type_name(type));
        free(w);
    }
}
END_TEST

/*
 * Blocks of random bytes, scales included: Inf, NaN, subnormal and zero scales decode to the
 * same bits too (the host's NaN propagation is the same for both decoders).
 */
START_TEST(test_random_bytes)
{
    uint32_t type = hd_types[_i];
    uint64_t seed = 0xb17e0000u + type;
    const int64_t n = 4096 * 256;
    size_t size = (size_t)(n / dllm_type_block_elems(type)) * dllm_type_block_bytes(type);
    uint8_t *w = malloc(size);
    ck_assert_ptr_nonnull(w);
    for (size_t i = 0; i < size; i++)
        w[i] = (uint8_t)rng_next(&seed);
    expect_as_cpu(type, w, n, dllm_type_name(type));
    free(w);
}
END_TEST

/* Every binary16 pattern widens as dllm_fp16_to_f32 does. */
START_TEST(test_fp16_widen)
{
    for (uint32_t h = 0; h < 65536; h++) {
        float got = dllm_hd_fp16_to_f32(h), want = dllm_fp16_to_f32((dllm_fp16)h);
        if (dllm_f32_bits(got) != dllm_f32_bits(want))
            ck_abort_msg("0x%04x widens to 0x%08x, expected 0x%08x", h, dllm_f32_bits(got),
                         dllm_f32_bits(want));
    }
}
END_TEST

/*
 * Narrowing gives dllm_f32_to_fp16's bits for every float whose low 7 bits are 0 or 0x7f, and
 * the saturating narrowing those bits within +-65504 and the largest half of the sign beyond.
 */
START_TEST(test_fp16_narrow)
{
    for (uint64_t hi = 0; hi < (1u << 25); hi++) {
        for (uint32_t lo = 0; lo < 2; lo++) {
            uint32_t u = (uint32_t)hi << 7 | (lo ? 0x7f : 0);
            float f = dllm_bits_f32(u);
            uint16_t got = dllm_hd_f32_to_fp16(f), want = dllm_f32_to_fp16(f);
            if (got != want)
                ck_abort_msg("0x%08x narrows to 0x%04x, expected 0x%04x", u, got, want);
            /* saturating: the same within +-65504, the largest half of the sign beyond */
            uint16_t sat = dllm_hd_f32_to_fp16_sat(f), sat_want = want;
            if (!isnan(f) && fabsf(f) > 65504.0f)
                sat_want = f > 0 ? 0x7bff : 0xfbff;
            if (sat != sat_want)
                ck_abort_msg("0x%08x saturates to 0x%04x, expected 0x%04x", u, sat, sat_want);
        }
    }
}
END_TEST

/* ---- decoders against the fixtures ------------------------------------------------------ */

/*
 * One manifest tensor decoded whole by the HD decoders: within 1e-6 relative of the values
 * the `gguf` package dequantized (the bar test_quant sets for the CPU decoders), and bit for
 * bit the CPU decoder's.
 */
START_TEST(test_fixture)
{
    struct dequant_case c;
    dequant_case_open(manifest, (size_t)_i, &c);
    const struct dllm_gguf_tensor *t = c.t;
    ck_assert_msg(dllm_hd_block_elems(t->type) > 0, "%s: type %u not decoded", c.what, t->type);
    float *got = malloc((size_t)c.n * sizeof(float));
    ck_assert_ptr_nonnull(got);
    hd_decode(t->type, t->data, c.n, got);
    dequant_expect_close(got, c.want, c.n, c.what);
    expect_as_cpu(t->type, t->data, c.n, c.what);
    free(got);
    dequant_case_close(&c);
}
END_TEST

/* Fixture models whose every tensor the HD decoders must decode as the CPU does. */
static const char *const models[] = {
    "llada-tiny-q4km.gguf", "llada-tiny-q80.gguf",      "llada-tiny-q5km.gguf",
    "llada-tiny-q6k.gguf",  "llada-tiny-f16.gguf",      "llada-tiny-bf16.gguf",
    "dream-tiny-q4km.gguf", "llada-moe-tiny-q4km.gguf", "rnd1-tiny-q4km.gguf",
};

/* Every tensor of a fixture model, HD decoders against the CPU decoder, bit for bit. */
START_TEST(test_fixture_model)
{
    char rel[512];
    snprintf(rel, sizeof rel, "models/%s", models[_i]);
    char *path = fixture_path(rel);
    struct dllm_gguf *gguf = NULL;
    struct dllm_error err = {0};
    ck_assert_msg(dllm_gguf_open(path, &gguf, &err) == DLLM_OK, "%s: %s", path, err.text);
    free(path);
    int64_t n_tensors = dllm_gguf_n_tensors(gguf);
    ck_assert_int_gt(n_tensors, 0);
    for (int64_t i = 0; i < n_tensors; i++) {
        const struct dllm_gguf_tensor *t = dllm_gguf_tensor(gguf, i);
        ck_assert_msg(dllm_hd_block_elems(t->type) > 0, "%s %s: type %s not decoded", models[_i],
                      t->name, dllm_type_name(t->type));
        char what[512];
        snprintf(what, sizeof what, "%s %s", models[_i], t->name);
        expect_as_cpu(t->type, t->data, t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3], what);
    }
    dllm_gguf_close(gguf);
}
END_TEST

/* ---- row statistics ------------------------------------------------------------------ */

/* e^x and ln x give dllm_rowmath_exp's and dllm_rowmath_log's bits. */
START_TEST(test_exp_log)
{
    uint64_t seed = 0xe4b0;
    static const double special[] = {0.0,    -0.0,      -1e-300, -745.0,     -745.2, -746.0,
                                     -800.0, -INFINITY, NAN,     -0x1p-1074, -708.5, -1.0};
    for (size_t i = 0; i < N_OF(special) + 2000000; i++) {
        double x = i < N_OF(special) ? special[i]
                   : i & 1           ? -800.0 * rng_uniform(&seed)
                                     : -ldexp(rng_uniform(&seed), -(int)(rng_next(&seed) % 60));
        double got = dllm_hd_exp(x), want = dllm_rowmath_exp(x);
        if (dllm_rowmath_bits(got) != dllm_rowmath_bits(want))
            ck_abort_msg("e^%a is %a, dllm_rowmath_exp gives %a", x, got, want);
    }
    static const double pos[] = {
        0.0, 1.0, 2.0, 0.5, 0x1p-1022, DBL_MAX, 1.4142135623730951, 1.4142135623730950, 152064.0};
    for (size_t i = 0; i < N_OF(pos) + 2000000; i++) {
        uint64_t b = (rng_next(&seed) % (2046 * (UINT64_C(1) << 52))) + (UINT64_C(1) << 52);
        double x = i < N_OF(pos) ? pos[i] : i & 1 ? 1.0 + 1e6 * rng_uniform(&seed) : 0.0;
        if (i >= N_OF(pos) && !(i & 1))
            x = dllm_rowmath_from_bits(b);
        double got = dllm_hd_log(x), want = dllm_rowmath_log(x);
        if (dllm_rowmath_bits(got) != dllm_rowmath_bits(want))
            ck_abort_msg("ln %a is %a, dllm_rowmath_log gives %a", x, got, want);
    }
}
END_TEST

/* Fails unless the kernel-order statistics match want: the top exactly, the sums within tol. */
static void expect_kernel_order(const float *l, int64_t n, struct dllm_row_stats want,
                                const char *what)
{
    struct dllm_row_stats got = dllm_hd_stats_kernel_order(l, n);
    ck_assert_msg(got.argmax == want.argmax, "%s: argmax %d, expected %d", what, got.argmax,
                  want.argmax);
    ck_assert_msg(dllm_f32_bits(got.max) == dllm_f32_bits(want.max) &&
                      dllm_f32_bits(got.second) == dllm_f32_bits(want.second),
                  "%s: max %a second %a, expected %a %a", what, got.max, got.second, want.max,
                  want.second);
    double max_abs = 0;
    for (int64_t v = 0; v < n; v++)
        if (isfinite(l[v])) /* -inf terms add nothing to the sums */
            max_abs = fmax(max_abs, fabs(l[v]));
    ck_assert_msg(fabs(got.lse - want.lse) <= dllm_hd_stats_lse_tol(n, want.lse),
                  "%s: lse %.17g, expected %.17g", what, got.lse, want.lse);
    ck_assert_msg(fabs(got.entropy - want.entropy) <=
                      dllm_hd_stats_entropy_tol(n, want.lse, max_abs),
                  "%s: entropy %.17g, expected %.17g", what, got.entropy, want.entropy);
}

/*
 * Rows of the fixture models' logits: the statistics the CPU backend computes with the pass
 * equal the HD pieces' in index order bit for bit, and the kernel's order within the named
 * tolerances.
 */
START_TEST(test_stats_cpu)
{
    static const char *const files[] = {"llada-tiny-q4km.gguf", "dream-tiny-q4km.gguf",
                                        "dream-tiny-realvocab-q4km.gguf"};
    char rel[256];
    snprintf(rel, sizeof rel, "models/%s", files[_i]);
    char *path = fixture_path(rel);
    struct dllm_model_params mp;
    dllm_model_params_init(&mp);
    struct dllm_model *model = NULL;
    struct dllm_error err = {0};
    ck_assert_msg(dllm_model_open(path, &mp, &model, &err) == DLLM_OK, "%s: %s", path, err.text);
    free(path);
    struct test_forward t = test_forward_new(model, 16, 16, 2, NULL);
    const int64_t V = dllm_model_n_vocab(model), n = 16;
    int32_t ids[16], rows[16];
    for (int i = 0; i < n; i++) {
        ids[i] = i % 3 ? (int32_t)((i * 131 + 5) % V) : dllm_model_mask_id(model);
        rows[i] = i;
    }
    float *logits = malloc((size_t)(n * V) * sizeof *logits);
    ck_assert_ptr_nonnull(logits);
    struct dllm_row_stats stats[16];
    const struct dllm_pass pass = {
        .ids = ids, .n_tokens = n, .rows = rows, .n_rows = n, .logits = logits, .stats = stats};
    ck_assert_msg(dllm_forward_run(t.fwd, &pass, &err) == DLLM_OK, "%s", err.text);
    for (int r = 0; r < n; r++) {
        char what[300];
        snprintf(what, sizeof what, "%s row %d", files[_i], r);
        struct dllm_row_stats got = dllm_hd_stats_serial(logits + r * V, V);
        ck_assert_msg(got.argmax == stats[r].argmax &&
                          dllm_f32_bits(got.max) == dllm_f32_bits(stats[r].max) &&
                          dllm_f32_bits(got.second) == dllm_f32_bits(stats[r].second) &&
                          dllm_rowmath_bits(got.lse) == dllm_rowmath_bits(stats[r].lse) &&
                          dllm_rowmath_bits(got.entropy) == dllm_rowmath_bits(stats[r].entropy),
                      "%s: %d %a %a %a %a, the CPU gives %d %a %a %a %a", what, got.argmax, got.max,
                      got.second, got.lse, got.entropy, stats[r].argmax, stats[r].max,
                      stats[r].second, stats[r].lse, stats[r].entropy);
        expect_kernel_order(logits + r * V, V, stats[r], what);
    }
    free(logits);
    test_forward_free(&t);
    dllm_model_close(model);
}
END_TEST

/*
 * Ties and infinities, in the kernel's order against the index order: equal maxima in one
 * partial and in two (the lowest index wins, the runner-up is the same value), a single
 * finite value among -inf, rows shorter than the partials, and the real vocabulary sizes.
 */
START_TEST(test_stats_ties)
{
    static const int64_t sizes[] = {1, 3, 255, 256, 257, 2048, 126464, 152064};
    uint64_t seed = 0x71e5;
    for (size_t k = 0; k < N_OF(sizes); k++) {
        const int64_t n = sizes[k];
        float *l = malloc((size_t)n * sizeof *l);
        ck_assert_ptr_nonnull(l);
        for (int c = 0; c < 5; c++) {
            for (int64_t v = 0; v < n; v++)
                l[v] = c == 3 ? -INFINITY : (float)(8.0 * rng_gauss(&seed));
            int64_t a = n / 3, b = n - 1 - n / 7;
            if (c == 0 || c == 1) { /* a tie of maxima at a < b: same partial for c == 1 */
                if (c == 1)
                    b = a + DLLM_HD_STATS_THREADS < n ? a + DLLM_HD_STATS_THREADS : a;
                l[a] = l[b] = 100.0f;
            } else if (c == 2) { /* every element equal */
                for (int64_t v = 0; v < n; v++)
                    l[v] = 1.5f;
            } else if (c == 3) {
                l[b] = 2.0f;
            }
            char what[64];
            snprintf(what, sizeof what, "n %" PRId64 " case %d", n, c);
            struct dllm_row_stats want = dllm_hd_stats_serial(l, n);
            if (c <= 1 && a != b)
                ck_assert_msg(want.argmax == a && want.second == 100.0f, "%s", what);
            /* one finite logit among -inf: all the mass on it, lse 2 and entropy 0 */
            if (c == 3)
                ck_assert_msg(want.argmax == b && want.lse == 2.0 && want.entropy == 0.0,
                              "%s: argmax %d lse %g entropy %g", what, want.argmax, want.lse,
                              want.entropy);
            expect_kernel_order(l, n, want, what);
        }
        free(l);
    }
}
END_TEST

/*
 * NaN logits, as the CPU treats them: its loop compares every element with element 0's
 * running best, so a NaN elsewhere never counts and a NaN at index 0 stays the max (every
 * comparison with it false) with the largest other value as the runner-up. The kernel's order
 * must agree, wherever the NaN's partial falls in its tree (its sums are as meaningless as
 * the CPU's).
 */
START_TEST(test_stats_nan)
{
    static const int64_t sizes[] = {600, 152064};
    for (size_t k = 0; k < N_OF(sizes); k++) {
        const int64_t n = sizes[k];
        float *l = calloc((size_t)n, sizeof *l);
        ck_assert_ptr_nonnull(l);
        /* a NaN at index 1 (first in its partial), 255 (the tree's last partial) and 0 */
        for (int c = 0; c < 3; c++) {
            memset(l, 0, (size_t)n * sizeof *l);
            const int64_t nan_at = c == 0 ? 1 : c == 1 ? 255 : 0, top = 257;
            l[nan_at] = NAN;
            l[top] = 100.0f;
            l[n - 2] = 7.0f;
            struct dllm_row_stats want = dllm_hd_stats_serial(l, n);
            struct dllm_row_stats got = dllm_hd_stats_kernel_order(l, n);
            if (nan_at == 0) {
                ck_assert_msg(want.argmax == 0 && isnan(want.max) && want.second == 100.0f,
                              "n %lld NaN at 0: argmax %d max %g second %g", (long long)n,
                              want.argmax, want.max, want.second);
            } else {
                ck_assert_msg(want.argmax == top && want.max == 100.0f && want.second == 7.0f,
                              "n %lld NaN at %lld: argmax %d max %g second %g", (long long)n,
                              (long long)nan_at, want.argmax, want.max, want.second);
            }
            ck_assert_msg(got.argmax == want.argmax &&
                              dllm_f32_bits(got.max) == dllm_f32_bits(want.max) &&
                              dllm_f32_bits(got.second) == dllm_f32_bits(want.second),
                          "n %lld NaN at %lld, kernel order: argmax %d max %g second %g",
                          (long long)n, (long long)nan_at, got.argmax, got.max, got.second);
        }
        free(l);
    }
}
END_TEST

static Suite *cuda_host_suite(void)
{
    Suite *s = suite_create("cuda_host");
    TCase *tc = tcase_create("dequant");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_geometry, 0, N_OF(hd_types));
    tcase_add_test(tc, test_geometry_unsupported);
    tcase_add_loop_test(tc, test_random_blocks, 0, N_OF(hd_types));
    tcase_add_loop_test(tc, test_random_bytes, 0, N_OF(hd_types));
    tcase_add_test(tc, test_fp16_widen);
    tcase_add_test(tc, test_fp16_narrow);
    suite_add_tcase(s, tc);

    tc = tcase_create("fixtures");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_fixture, 0, (int)json_array_size(manifest));
    tcase_add_loop_test(tc, test_fixture_model, 0, N_OF(models));
    suite_add_tcase(s, tc);

    tc = tcase_create("row_stats");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_exp_log);
    tcase_add_loop_test(tc, test_stats_cpu, 0, 3);
    tcase_add_test(tc, test_stats_ties);
    tcase_add_test(tc, test_stats_nan);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    manifest = dequant_manifest_load();
    int status = test_run_suite(cuda_host_suite());
    json_decref(manifest);
    return status;
}
