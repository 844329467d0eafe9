/*
 * Tests of engine/quant.c: the type table, half-precision conversions, and the block decoders
 * against values the `gguf` Python package dequantized from the fixture models.
 */
#include "config.h"

#include "dequant_fixture.h"
#include "fixtures.h"
#include "golden_kquants.h"
#include "gguf/quant.h"

#include <check.h>
#include <float.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *manifest; /* fixtures/dequant/manifest.json: an array of tensors */

/* Decodes one manifest tensor whole, then one of its rows alone, and compares with the file. */
START_TEST(test_fixture)
{
    struct dequant_case c;
    dequant_case_open(manifest, (size_t)_i, &c);
    const struct dllm_gguf_tensor *t = c.t;
    ck_assert_str_eq(dllm_type_name(t->type), dequant_entry_str(c.entry, "type"));
    const json_t *shape = json_object_get(c.entry, "shape_gguf");
    ck_assert_int_eq(json_array_size(shape), t->n_dims);
    for (int d = 0; d < t->n_dims; d++)
        ck_assert_int_eq(t->ne[d], json_integer_value(json_array_get(shape, (size_t)d)));
    float *got = malloc((size_t)c.n * sizeof(float));
    ck_assert_ptr_nonnull(got);
    struct dllm_error err = {0};
    ck_assert_msg(dllm_gguf_tensor_decode(t, 0, c.n, got, &err) == DLLM_OK, "%s", err.text);
    dequant_expect_close(got, c.want, c.n, c.what);

    int64_t row = t->ne[0], r = c.n / row / 2 + 1;
    memset(got, 0, (size_t)row * sizeof(float));
    ck_assert_msg(dllm_gguf_tensor_decode(t, r * row, row, got, &err) == DLLM_OK, "%s", err.text);
    dequant_expect_close(got, c.want + r * row, row, c.what);
    free(got);
    dequant_case_close(&c);
}
END_TEST

/* ---- type table: block geometry from ggml's type_traits (ggml.c) ---------------------- */

static const struct {
    uint32_t id;
    const char *name;
    int64_t block_elems;
    size_t block_bytes;
    bool decodable;
} types[] = {
    {0, "F32", 1, 4, true},          {1, "F16", 1, 2, true},
    {2, "Q4_0", 32, 18, true},       {3, "Q4_1", 32, 20, true},
    {6, "Q5_0", 32, 22, true},       {7, "Q5_1", 32, 24, true},
    {8, "Q8_0", 32, 34, true},       {9, "Q8_1", 32, 36, false},
    {10, "Q2_K", 256, 84, true},     {11, "Q3_K", 256, 110, true},
    {12, "Q4_K", 256, 144, true},    {13, "Q5_K", 256, 176, true},
    {14, "Q6_K", 256, 210, true},    {15, "Q8_K", 256, 292, false},
    {16, "IQ2_XXS", 256, 66, false}, {17, "IQ2_XS", 256, 74, false},
    {18, "IQ3_XXS", 256, 98, false}, {19, "IQ1_S", 256, 50, false},
    {20, "IQ4_NL", 32, 18, false},   {21, "IQ3_S", 256, 110, false},
    {22, "IQ2_S", 256, 82, false},   {23, "IQ4_XS", 256, 136, false},
    {24, "I8", 1, 1, false},         {25, "I16", 1, 2, false},
    {26, "I32", 1, 4, false},        {27, "I64", 1, 8, false},
    {28, "F64", 1, 8, false},        {29, "IQ1_M", 256, 56, false},
    {30, "BF16", 1, 2, true},        {34, "TQ1_0", 256, 54, false},
    {35, "TQ2_0", 256, 66, false},   {39, "MXFP4", 32, 17, false},
};

START_TEST(test_type_defined)
{
    const struct dllm_type_traits *tt = dllm_type_traits(types[_i].id);
    ck_assert_ptr_nonnull(tt);
    ck_assert_str_eq(tt->name, types[_i].name);
    ck_assert_str_eq(dllm_type_name(types[_i].id), types[_i].name);
    ck_assert_int_eq(tt->block_elems, types[_i].block_elems);
    ck_assert_uint_eq(tt->block_bytes, types[_i].block_bytes);
    ck_assert(dllm_type_decodable(types[_i].id) == types[_i].decodable);
    ck_assert((tt->decode != NULL) == types[_i].decodable);
}
END_TEST

static const uint32_t undefined_types[] = {4, 5, 31, 32, 33, 36, 37, 38, 40, 41, 1000, UINT32_MAX};

START_TEST(test_type_undefined)
{
    ck_assert_ptr_null(dllm_type_traits(undefined_types[_i]));
    ck_assert_ptr_null(dllm_type_name(undefined_types[_i]));
    ck_assert(!dllm_type_decodable(undefined_types[_i]));
}
END_TEST

/* ---- fp16 and bf16 ------------------------------------------------------------------- */

/* The value of a binary16 pattern by the IEEE 754 definition. */
static double fp16_value(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return (h & 0x8000) ? -v : v;
}

/* The binary16 value nearest to a finite x, ties to even (the default rounding mode). */
static double fp16_nearest(double x)
{
    int e;
    frexp(x, &e);
    int lead = e - 1 < -14 ? -14 : e - 1; /* exponent of the leading bit; subnormals: -14 */
    double r = ldexp(nearbyint(ldexp(fabs(x), 10 - lead)), lead - 10);
    return copysign(r >= 65536.0 ? INFINITY : r, x);
}

/*
 * Every binary16 pattern widens to its exact value (a NaN to the NaN with the same payload)
 * and narrows back to itself (a NaN with the quiet bit set). The loops of this file test
 * first and abort on a failure, because each ck_assert call costs a write to a pipe.
 */
START_TEST(test_fp16_exhaustive)
{
    for (uint32_t h = 0; h < 65536; h++) {
        float f = dllm_fp16_to_f32((dllm_fp16)h);
        double v = fp16_value((uint16_t)h);
        bool nan = isnan(v);
        uint32_t nan_bits = (h & 0x8000) << 16 | 0x7f800000 | (h & 0x3ff) << 13;
        bool widened =
            nan ? dllm_f32_bits(f) == nan_bits : (double)f == v && !signbit(f) == !(h & 0x8000);
        dllm_fp16 back = dllm_f32_to_fp16(f);
        if (!widened || back != (nan ? (h | 0x200) : h))
            ck_abort_msg("0x%04x widens to %a (0x%08x), expected %a; narrows back to 0x%04x", h, f,
                         dllm_f32_bits(f), v, back);
    }
}
END_TEST

static void expect_fp16_rounding(float f)
{
    double got = fp16_value(dllm_f32_to_fp16(f));
    double want = fp16_nearest(f);
    if (got != want || !signbit(got) != !signbit(want))
        ck_abort_msg("%a (0x%08x) narrows to %a, expected %a", f, dllm_f32_bits(f), got, want);
}

/*
 * Narrowing rounds to nearest even: checked at every midpoint between neighbouring halves
 * and one float ulp either side, and at a million float patterns spread over the range.
 */
START_TEST(test_fp16_rounding)
{
    for (uint32_t h = 0; h < 0x7c00; h++) {
        double next = h == 0x7bff ? 65536.0 : fp16_value((uint16_t)(h + 1));
        float mid = (float)((fp16_value((uint16_t)h) + next) / 2);
        float probes[] = {mid, nextafterf(mid, 0.0f), nextafterf(mid, INFINITY)};
        for (int k = 0; k < 3; k++) {
            expect_fp16_rounding(probes[k]);
            expect_fp16_rounding(-probes[k]);
        }
    }
    for (uint64_t u = 0; u < 0x100000000u; u += 4093) {
        float f = dllm_bits_f32((uint32_t)u);
        if (!isnan(f) && !isinf(f))
            expect_fp16_rounding(f);
    }
    ck_assert_uint_eq(dllm_f32_to_fp16(INFINITY), 0x7c00);
    ck_assert_uint_eq(dllm_f32_to_fp16(-INFINITY), 0xfc00);
    ck_assert_uint_eq(dllm_f32_to_fp16(1.0f), 0x3c00);
    ck_assert_uint_eq(dllm_f32_to_fp16(65504.0f), 0x7bff);
    ck_assert_uint_eq(dllm_f32_to_fp16(65520.0f), 0x7c00);
    ck_assert_uint_eq(dllm_f32_to_fp16(0x1p-24f), 0x0001);
    ck_assert_uint_eq(dllm_f32_to_fp16(0x1p-25f), 0x0000);
    ck_assert_uint_eq(dllm_f32_to_fp16(dllm_bits_f32(0x7f800001)), 0x7e00);
}
END_TEST

/* float bits -> bfloat16 bits, worked out by hand from the round-to-nearest-even rule. */
static const struct {
    uint32_t f32;
    uint16_t bf16;
} bf16_cases[] = {
    {0x3f800000, 0x3f80}, /* 1 */
    {0x40490fdb, 0x4049}, /* pi rounds down */
    {0x3f808000, 0x3f80}, /* a tie stays on the even 0x3f80 */
    {0x3f818000, 0x3f82}, /* a tie leaves the odd 0x3f81 */
    {0x3f808001, 0x3f81}, /* just above a tie */
    {0x3f807fff, 0x3f80}, /* just below a tie */
    {0x7f7fffff, 0x7f80}, /* FLT_MAX overflows to Inf */
    {0xff800000, 0xff80}, /* -Inf */
    {0x80000000, 0x8000}, /* -0 */
    {0x00000001, 0x0000}, /* the smallest subnormal */
    {0x7f800001, 0x7fc0}, /* a signalling NaN becomes quiet */
    {0xffc00000, 0xffc0}, /* a quiet NaN keeps its sign */
    {0x7fffffff, 0x7fff}, /* a NaN whose rounding would carry stays NaN */
};

START_TEST(test_bf16_known)
{
    ck_assert_uint_eq(dllm_f32_to_bf16(dllm_bits_f32(bf16_cases[_i].f32)), bf16_cases[_i].bf16);
}
END_TEST

/* Every bfloat16 pattern is the top half of its float and narrows back to itself. */
START_TEST(test_bf16_exhaustive)
{
    ck_assert(dllm_bf16_to_f32(0x3f80) == 1.0f);
    ck_assert(dllm_bf16_to_f32(0xc049) == -3.140625f);
    ck_assert(dllm_bf16_to_f32(0x0001) == (float)ldexp(1.0, -133));
    ck_assert(isinf(dllm_bf16_to_f32(0x7f80)));
    for (uint32_t h = 0; h < 65536; h++) {
        float f = dllm_bf16_to_f32((dllm_bf16)h);
        dllm_bf16 back = dllm_f32_to_bf16(f);
        if (dllm_f32_bits(f) != h << 16 || back != (isnan(f) ? (h | 0x40) : h))
            ck_abort_msg("0x%04x widens to 0x%08x and narrows back to 0x%04x", h, dllm_f32_bits(f),
                         back);
    }
}
END_TEST

/* ---- hand-made blocks of the 32-element types the fixtures lack ----------------------- */

/*
 * One block each. The nibble bytes are j | (15 - j) << 4; the Q5 high bits qh = 0x00f0000f
 * set the fifth bit of elements 0-3 and 20-23. Expected values worked out by hand from the
 * layouts of llama.cpp's dequantize_row_q4_0 ... q5_1.
 */
#define NIBBLES                                                                                    \
    0xf0, 0xe1, 0xd2, 0xc3, 0xb4, 0xa5, 0x96, 0x87, 0x78, 0x69, 0x5a, 0x4b, 0x3c, 0x2d, 0x1e, 0x0f
#define QH 0x0f, 0x00, 0xf0, 0x00

static const uint8_t block_q4_0_bytes[] = {0x00, 0x38, NIBBLES};                 /* d = 0.5 */
static const uint8_t block_q4_1_bytes[] = {0x00, 0x40, 0x00, 0x3c, NIBBLES};     /* d = 2, m = 1 */
static const uint8_t block_q5_0_bytes[] = {0x00, 0x3c, QH, NIBBLES};             /* d = 1 */
static const uint8_t block_q5_1_bytes[] = {0x00, 0x38, 0x00, 0xbc, QH, NIBBLES}; /* .5, -1 */

static const struct {
    uint32_t type;
    const uint8_t *bytes;
    size_t size;
    float want[6]; /* elements 0, 3, 15, 16, 20, 31 */
} small_blocks[] = {
    {DLLM_TYPE_Q4_0, block_q4_0_bytes, sizeof block_q4_0_bytes, {-4, -2.5f, 3.5f, 3.5f, 1.5f, -4}},
    {DLLM_TYPE_Q4_1, block_q4_1_bytes, sizeof block_q4_1_bytes, {1, 7, 31, 31, 23, 1}},
    {DLLM_TYPE_Q5_0, block_q5_0_bytes, sizeof block_q5_0_bytes, {0, 3, -1, -1, 11, -16}},
    {DLLM_TYPE_Q5_1, block_q5_1_bytes, sizeof block_q5_1_bytes, {7, 8.5f, 6.5f, 6.5f, 12.5f, -1}},
};

START_TEST(test_small_block)
{
    static const int index[6] = {0, 3, 15, 16, 20, 31};
    struct dllm_gguf_tensor t = {
        .name = "hand-made",
        .type = small_blocks[_i].type,
        .n_dims = 1,
        .ne = {32, 1, 1, 1},
        .size = small_blocks[_i].size,
        .data = small_blocks[_i].bytes,
    };
    float got[32];
    struct dllm_error err = {0};
    ck_assert_msg(dllm_gguf_tensor_decode(&t, 0, 32, got, &err) == DLLM_OK, "%s", err.text);
    for (int k = 0; k < 6; k++)
        ck_assert_msg(got[index[k]] == small_blocks[_i].want[k], "%s element %d: %g, expected %g",
                      dllm_type_name(t.type), index[k], got[index[k]], small_blocks[_i].want[k]);
}
END_TEST

/* Q2_K and Q3_K blocks decode to ggml's values bit for bit (tests/golden_kquants.h). */
static const struct {
    uint32_t type;
    const void *blocks;
    size_t block_bytes;
    const float (*values)[256];
} golden[] = {
    {DLLM_TYPE_Q2_K, golden_q2_K_blocks, sizeof golden_q2_K_blocks[0], golden_q2_K_values},
    {DLLM_TYPE_Q3_K, golden_q3_K_blocks, sizeof golden_q3_K_blocks[0], golden_q3_K_values},
};

START_TEST(test_golden_kquants)
{
    const size_t n_blocks = 8;
    struct dllm_gguf_tensor t = {
        .name = "golden",
        .type = golden[_i].type,
        .n_dims = 2,
        .ne = {256, (int64_t)n_blocks, 1, 1},
        .size = n_blocks * golden[_i].block_bytes,
        .data = golden[_i].blocks,
    };
    float got[8 * 256];
    struct dllm_error err = {0};
    ck_assert_msg(dllm_gguf_tensor_decode(&t, 0, 8 * 256, got, &err) == DLLM_OK, "%s", err.text);
    for (size_t b = 0; b < n_blocks; b++)
        for (int e = 0; e < 256; e++)
            ck_assert_msg(memcmp(&got[256 * b + e], &golden[_i].values[b][e], sizeof(float)) == 0,
                          "%s block %zu element %d: %a, ggml %a", dllm_type_name(t.type), b, e,
                          got[256 * b + e], golden[_i].values[b][e]);
}
END_TEST

/* ---- errors ---------------------------------------------------------------------------- */

START_TEST(test_errors_unsupported)
{
    static const uint8_t zeros[66];
    struct dllm_gguf_tensor t = {
        .name = "blk.0.attn_q.weight",
        .type = DLLM_TYPE_IQ2_XXS,
        .n_dims = 1,
        .ne = {256, 1, 1, 1},
        .size = sizeof zeros,
        .data = zeros,
    };
    float out[256];
    struct dllm_error err = {0};
    ck_assert_int_eq(dllm_gguf_tensor_decode(&t, 0, 256, out, &err), DLLM_ERR_UNSUPPORTED);
    ck_assert_int_eq(err.status, DLLM_ERR_UNSUPPORTED);
    ck_assert_str_eq(err.text,
                     "unsupported GGUF tensor type: IQ2_XXS (tensor blk.0.attn_q.weight)");
    t.type = 4;
    ck_assert_int_eq(dllm_gguf_tensor_decode(&t, 0, 256, out, &err), DLLM_ERR_UNSUPPORTED);
    ck_assert_str_eq(err.text, "unsupported GGUF tensor type: type 4 (tensor blk.0.attn_q.weight)");
    t.type = 1000;
    ck_assert_int_eq(dllm_gguf_tensor_decode(&t, 0, 256, out, NULL), DLLM_ERR_UNSUPPORTED);
}
END_TEST

/* Ranges on a 2 x 512 Q4_K tensor of zeros: {first, n, expected status}. */
static const struct {
    int64_t first, n;
    enum dllm_status status;
} ranges[] = {
    {0, 1024, DLLM_OK},      {768, 256, DLLM_OK},
    {1024, 0, DLLM_OK},      {32, 256, DLLM_ERR_ARG},
    {0, 100, DLLM_ERR_ARG},  {-256, 256, DLLM_ERR_ARG},
    {0, -256, DLLM_ERR_ARG}, {512, 1024, DLLM_ERR_ARG},
    {1280, 0, DLLM_ERR_ARG}, {INT64_MAX - 255, 256, DLLM_ERR_ARG},
};

START_TEST(test_errors_range)
{
    static const uint8_t zeros[4 * 144];
    struct dllm_gguf_tensor t = {
        .name = "w",
        .type = DLLM_TYPE_Q4_K,
        .n_dims = 2,
        .ne = {512, 2, 1, 1},
        .size = sizeof zeros,
        .data = zeros,
    };
    float out[1024];
    struct dllm_error err = {0};
    ck_assert_int_eq(dllm_gguf_tensor_decode(&t, ranges[_i].first, ranges[_i].n, out, &err),
                     ranges[_i].status);
    if (ranges[_i].status != DLLM_OK)
        ck_assert_msg(strstr(err.text, "tensor w") != NULL, "%s", err.text);
}
END_TEST

/* A tensor whose bytes do not cover its shape is refused, not read past. */
START_TEST(test_errors_short)
{
    static const uint8_t zeros[144];
    struct dllm_gguf_tensor t = {
        .name = "w",
        .type = DLLM_TYPE_Q4_K,
        .n_dims = 2,
        .ne = {512, 2, 1, 1},
        .size = sizeof zeros,
        .data = zeros,
    };
    float out[1024];
    struct dllm_error err = {0};
    ck_assert_int_eq(dllm_gguf_tensor_decode(&t, 0, 256, out, &err), DLLM_OK);
    ck_assert_int_eq(dllm_gguf_tensor_decode(&t, 0, 512, out, &err), DLLM_ERR_FORMAT);
    ck_assert_str_eq(err.text, "tensor w holds 144 bytes, too few for its 1024 Q4_K elements");
}
END_TEST

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

static Suite *quant_suite(void)
{
    Suite *s = suite_create("quant");
    TCase *tc = tcase_create("types");
    tcase_add_loop_test(tc, test_type_defined, 0, N_OF(types));
    tcase_add_loop_test(tc, test_type_undefined, 0, N_OF(undefined_types));
    suite_add_tcase(s, tc);

    tc = tcase_create("conversions");
    tcase_add_test(tc, test_fp16_exhaustive);
    tcase_add_test(tc, test_fp16_rounding);
    tcase_add_loop_test(tc, test_bf16_known, 0, N_OF(bf16_cases));
    tcase_add_test(tc, test_bf16_exhaustive);
    suite_add_tcase(s, tc);

    tc = tcase_create("decode");
    tcase_add_loop_test(tc, test_fixture, 0, (int)json_array_size(manifest));
    tcase_add_loop_test(tc, test_small_block, 0, N_OF(small_blocks));
    tcase_add_loop_test(tc, test_golden_kquants, 0, N_OF(golden));
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_test(tc, test_errors_unsupported);
    tcase_add_loop_test(tc, test_errors_range, 0, N_OF(ranges));
    tcase_add_test(tc, test_errors_short);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    manifest = dequant_manifest_load();
    int status = test_run_suite(quant_suite());
    json_decref(manifest);
    return status;
}
