/* GGUF reader: every fixture parses; every malformed image fails cleanly. */
#include "dllm.h"
#include "fixtures.h"
#include "gguf/gguf.h"
#include "gguf_edit.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const fixture_files[] = {
    "models/llada-tiny-q4km.gguf", "models/llada-tiny-q80.gguf",
    "models/llada-tiny-q5km.gguf", "models/llada-tiny-q6k.gguf",
    "models/llada-tiny-f16.gguf",  "models/llada-tiny-bf16.gguf",
    "models/dream-tiny-q4km.gguf", "models/dream-tiny-realvocab-q4km.gguf",
    "tokenizer/dream-vocab.gguf",  "tokenizer/llamacpp-tests/ggml-vocab-gpt-2.gguf",
};
#define N_FIXTURES (int)(sizeof fixture_files / sizeof fixture_files[0])

static struct dllm_gguf *open_fixture(const char *rel)
{
    char *path = fixture_path(rel);
    struct dllm_gguf *g = NULL;
    struct dllm_error err = {0};
    enum dllm_status st = dllm_gguf_open(path, &g, &err);
    ck_assert_msg(st == DLLM_OK, "%s: %s", rel, err.text);
    free(path);
    return g;
}

/* Every fixture parses, and every tensor lies inside the file, aligned. */
START_TEST(parse_fixture)
{
    const char *rel = fixture_files[_i];
    struct dllm_gguf *g = open_fixture(rel);
    ck_assert_uint_eq(dllm_gguf_version(g), 3);
    ck_assert_int_gt(dllm_gguf_n_kv(g), 5);
    ck_assert_ptr_nonnull(dllm_gguf_find(g, "general.architecture"));
    size_t align = dllm_gguf_alignment(g);
    for (int64_t i = 0; i < dllm_gguf_n_tensors(g); i++) {
        const struct dllm_gguf_tensor *t = dllm_gguf_tensor(g, i);
        ck_assert_uint_eq(t->offset % align, 0);
        ck_assert_ptr_eq(dllm_gguf_find_tensor(g, t->name), t);
        ck_assert_int_gt(t->size, 0);
    }
    /* Key order is the file's; look-ups by key find each of them. */
    for (int64_t i = 0; i < dllm_gguf_n_kv(g); i++)
        ck_assert_ptr_eq(dllm_gguf_find(g, dllm_gguf_kv_key(g, i)), dllm_gguf_kv_value(g, i));
    dllm_gguf_close(g);
}
END_TEST

/* Facts the fixture README states about the tiny models. */
START_TEST(parse_known_shapes)
{
    struct dllm_gguf *g = open_fixture("models/llada-tiny-q4km.gguf");
    struct dllm_error err;
    uint32_t layers, embd;
    char *arch;
    ck_assert_int_eq(dllm_gguf_get_str(g, "general.architecture", &arch, &err), DLLM_OK);
    ck_assert_str_eq(arch, "llada");
    free(arch);
    ck_assert_int_eq(dllm_gguf_get_u32(g, "llada.block_count", &layers, &err), DLLM_OK);
    ck_assert_uint_eq(layers, 2);
    ck_assert_int_eq(dllm_gguf_get_u32(g, "llada.embedding_length", &embd, &err), DLLM_OK);
    ck_assert_uint_eq(embd, 256);
    const struct dllm_gguf_tensor *t = dllm_gguf_find_tensor(g, "token_embd.weight");
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(t->n_dims, 2);
    ck_assert_int_eq(t->ne[0], 256);
    ck_assert_int_eq(t->ne[1], 2048);
    ck_assert_uint_eq(t->type, DLLM_TYPE_Q4_K);
    ck_assert_uint_eq(t->size, 2048 * 144);
    t = dllm_gguf_find_tensor(g, "output.weight");
    ck_assert_uint_eq(t->type, DLLM_TYPE_Q6_K);
    const struct dllm_gguf_value *tokens;
    ck_assert_int_eq(
        dllm_gguf_get_array(g, "tokenizer.ggml.tokens", DLLM_GGUF_STRING, &tokens, &err), DLLM_OK);
    ck_assert_uint_eq(tokens->arr.n, 2048);
    dllm_gguf_close(g);

    g = open_fixture("tokenizer/dream-vocab.gguf");
    ck_assert_int_eq(dllm_gguf_n_tensors(g), 0);
    ck_assert_int_eq(
        dllm_gguf_get_array(g, "tokenizer.ggml.tokens", DLLM_GGUF_STRING, &tokens, &err), DLLM_OK);
    ck_assert_uint_eq(tokens->arr.n, 152064);
    struct dllm_gguf_value v;
    dllm_gguf_array_get(tokens, 151645, &v);
    ck_assert_int_eq(v.type, DLLM_GGUF_STRING);
    ck_assert_int_eq((int)v.str.len, 10);
    ck_assert(memcmp(v.str.ptr, "<|im_end|>", 10) == 0);
    dllm_gguf_close(g);
}
END_TEST

START_TEST(typed_lookups)
{
    struct dllm_gguf *g = open_fixture("models/dream-tiny-q4km.gguf");
    struct dllm_error err;
    uint32_t u;
    float f;
    bool b;
    char *s;
    const struct dllm_gguf_value *a;
    ck_assert_int_eq(dllm_gguf_get_u32(g, "no.such.key", &u, &err), DLLM_ERR_MISSING);
    ck_assert_str_eq(err.text, "required metadata key missing: no.such.key");
    ck_assert_int_eq(dllm_gguf_get_u32(g, "general.architecture", &u, &err), DLLM_ERR_TYPE);
    ck_assert_str_eq(err.text, "metadata key general.architecture is string, expected an integer");
    ck_assert_int_eq(dllm_gguf_get_f32(g, "dream.rope.freq_base", &f, &err), DLLM_OK);
    ck_assert_float_gt(f, 0);
    ck_assert_int_eq(dllm_gguf_get_bool(g, "dream.block_count", &b, &err), DLLM_ERR_TYPE);
    ck_assert_int_eq(dllm_gguf_get_str(g, "dream.block_count", &s, &err), DLLM_ERR_TYPE);
    ck_assert_int_eq(dllm_gguf_get_array(g, "tokenizer.ggml.tokens", DLLM_GGUF_INT32, &a, &err),
                     DLLM_ERR_TYPE);
    ck_assert_str_eq(err.text,
                     "metadata key tokenizer.ggml.tokens is an array of string, expected int32");
    dllm_gguf_close(g);
}
END_TEST

/* An image rebuilt by the test helper parses to the same keys and tensors (checks the helper). */
START_TEST(rebuild_roundtrip)
{
    char *path = fixture_path("models/dream-tiny-q4km.gguf");
    struct gguf_edit *e = gguf_edit_load(path);
    size_t size;
    void *img = gguf_edit_build(e, &size, NULL);
    struct dllm_gguf *a = open_fixture("models/dream-tiny-q4km.gguf"), *b;
    struct dllm_error err;
    ck_assert_int_eq(dllm_gguf_open_memory(img, size, &b, &err), DLLM_OK);
    ck_assert_int_eq(dllm_gguf_n_kv(a), dllm_gguf_n_kv(b));
    ck_assert_int_eq(dllm_gguf_n_tensors(a), dllm_gguf_n_tensors(b));
    for (int64_t i = 0; i < dllm_gguf_n_tensors(a); i++) {
        const struct dllm_gguf_tensor *ta = dllm_gguf_tensor(a, i), *tb = dllm_gguf_tensor(b, i);
        ck_assert_str_eq(ta->name, tb->name);
        ck_assert_uint_eq(ta->size, tb->size);
        ck_assert(memcmp(ta->data, tb->data, ta->size) == 0);
    }
    dllm_gguf_close(a);
    dllm_gguf_close(b);
    free(img);
    gguf_edit_free(e);
    free(path);
}
END_TEST

/* ---- malformed images ------------------------------------------------------------------- */

struct image {
    uint8_t *p;
    size_t size;
    struct gguf_layout l;
};

/* The llada Q4_K_M fixture re-serialised, with two extra keys and known tensor names. */
static struct image base_image(void (*edit)(struct gguf_edit *))
{
    char *path = fixture_path("models/llada-tiny-q4km.gguf");
    struct gguf_edit *e = gguf_edit_load(path);
    if (edit)
        edit(e);
    struct image im;
    im.p = gguf_edit_build(e, &im.size, &im.l);
    gguf_edit_free(e);
    free(path);
    return im;
}

static void put64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8);
}
static void put32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, 4);
}

/* Opens an exact-size copy (so a sanitizer sees any over-read) and expects failure. */
static void expect_error(const uint8_t *img, size_t size, enum dllm_status want,
                         const char *fragment, const char *what)
{
    uint8_t *copy = malloc(size ? size : 1);
    memcpy(copy, img, size);
    struct dllm_gguf *g = (struct dllm_gguf *)1;
    struct dllm_error err = {0};
    enum dllm_status st = dllm_gguf_open_memory(copy, size, &g, &err);
    ck_assert_msg(st != DLLM_OK, "%s: parsed without error", what);
    ck_assert_ptr_null(g);
    if (want != DLLM_OK)
        ck_assert_msg(st == want, "%s: status %s, want %s (%s)", what, dllm_status_str(st),
                      dllm_status_str(want), err.text);
    if (fragment)
        ck_assert_msg(strstr(err.text, fragment), "%s: error '%s' lacks '%s'", what, err.text,
                      fragment);
    free(copy);
}

static int64_t kv_index(struct image *im, const char *key)
{
    for (size_t i = 0; i < im->l.n_kv; i++) {
        uint64_t len;
        memcpy(&len, im->p + im->l.kv_key[i], 8);
        if (len == strlen(key) && memcmp(im->p + im->l.kv_key[i] + 8, key, len) == 0)
            return (int64_t)i;
    }
    ck_abort_msg("no key %s", key);
    return -1;
}

static void add_test_keys(struct gguf_edit *e)
{
    gguf_edit_set_u32(e, "test.key_a", 1);
    gguf_edit_set_u32(e, "test.key_b", 2);
    gguf_edit_rename_tensor(e, "output_norm.weight", "dup.name_a");
    gguf_edit_rename_tensor(e, "blk.0.attn_norm.weight", "dup.name_b");
}

/* Truncation at every structural boundary (and one byte past it) fails cleanly. */
START_TEST(malformed_truncation)
{
    struct image im = base_image(NULL);
    size_t cuts[4096];
    size_t n = 0;
    for (size_t off = 0; off <= 24; off += 4)
        cuts[n++] = off;
    for (size_t i = 0; i < im.l.n_kv; i++) {
        cuts[n++] = im.l.kv_key[i];
        cuts[n++] = im.l.kv_key[i] + 8;
        cuts[n++] = im.l.kv_type[i];
        cuts[n++] = im.l.kv_value[i];
        cuts[n++] = im.l.kv_value[i] + 4;
        cuts[n++] = im.l.kv_value[i] + 12;
    }
    for (size_t i = 0; i < im.l.n_tensors; i++) {
        cuts[n++] = im.l.t_name[i];
        cuts[n++] = im.l.t_ndims[i];
        cuts[n++] = im.l.t_dims[i];
        cuts[n++] = im.l.t_type[i];
        cuts[n++] = im.l.t_offset[i];
    }
    cuts[n++] = im.l.data;
    cuts[n++] = im.size - 1;
    for (size_t i = 0; i < n; i++) {
        for (size_t extra = 0; extra < 2; extra++) {
            size_t cut = cuts[i] + extra;
            if (cut >= im.size)
                continue;
            char what[64];
            snprintf(what, sizeof what, "truncated at byte %zu", cut);
            expect_error(im.p, cut, DLLM_ERR_FORMAT, NULL, what);
        }
    }
    gguf_layout_free(&im.l);
    free(im.p);
}
END_TEST

/* One corruption per case: where to write what, the status and a fragment of the message. */
struct corruption {
    const char *name;
    void (*apply)(struct image *im);
    enum dllm_status status;
    const char *fragment;
};

static void c_magic(struct image *im)
{
    im->p[0] = 'X';
}
static void c_version1(struct image *im)
{
    put32(im->p + 4, 1);
}
static void c_version4(struct image *im)
{
    put32(im->p + 4, 4);
}
static void c_big_endian(struct image *im)
{
    put32(im->p + 4, 0x03000000);
}
static void c_huge_tensors(struct image *im)
{
    put64(im->p + 8, UINT64_MAX);
}
static void c_huge_kv(struct image *im)
{
    put64(im->p + 16, UINT64_MAX / 2);
}
static void c_key_len(struct image *im)
{
    put64(im->p + im->l.kv_key[0], UINT64_MAX);
}
static void c_key_empty(struct image *im)
{
    put64(im->p + im->l.kv_key[0], 0);
}
static void c_value_type(struct image *im)
{
    put32(im->p + im->l.kv_type[0], 13);
}
static void c_string_len(struct image *im)
{
    put64(im->p + im->l.kv_value[kv_index(im, "general.architecture")], 1ull << 40);
}
static void c_array_type(struct image *im)
{
    put32(im->p + im->l.kv_value[kv_index(im, "tokenizer.ggml.tokens")], 99);
}
static void c_array_len(struct image *im)
{
    put64(im->p + im->l.kv_value[kv_index(im, "tokenizer.ggml.token_type")] + 4, 1ull << 60);
}
static void c_bool(struct image *im)
{
    int64_t i = kv_index(im, "llada.attention.causal");
    im->p[im->l.kv_value[i]] = 2;
}
static void c_dup_key(struct image *im)
{
    im->p[im->l.kv_key[kv_index(im, "test.key_b")] + 8 + 9] = 'a';
}
static void c_dup_tensor(struct image *im)
{
    for (size_t i = 0; i < im->l.n_tensors; i++)
        if (memcmp(im->p + im->l.t_name[i] + 8, "dup.name_b", 10) == 0)
            im->p[im->l.t_name[i] + 8 + 9] = 'a';
}
static void c_tensor_type(struct image *im)
{
    put32(im->p + im->l.t_type[0], 200);
}
static void c_tensor_type_removed(struct image *im)
{
    put32(im->p + im->l.t_type[0], 4);
}
static void c_ndims0(struct image *im)
{
    put32(im->p + im->l.t_ndims[0], 0);
}
static void c_ndims5(struct image *im)
{
    put32(im->p + im->l.t_ndims[0], 5);
}
static void c_dim_zero(struct image *im)
{
    put64(im->p + im->l.t_dims[0], 0);
}
static void c_dim_overflow(struct image *im)
{
    put64(im->p + im->l.t_dims[0], 1ull << 62);
}
static void c_dim_huge(struct image *im)
{
    put64(im->p + im->l.t_dims[0], UINT64_MAX);
}
static void c_row_blocks(struct image *im)
{
    for (size_t i = 0; i < im->l.n_tensors; i++) {
        uint32_t type;
        memcpy(&type, im->p + im->l.t_type[i], 4);
        if (type == DLLM_TYPE_Q4_K) {
            put64(im->p + im->l.t_dims[i], 100);
            return;
        }
    }
}
static void c_misaligned(struct image *im)
{
    uint64_t off;
    memcpy(&off, im->p + im->l.t_offset[1], 8);
    put64(im->p + im->l.t_offset[1], off + 1);
}
static void c_out_of_file(struct image *im)
{
    put64(im->p + im->l.t_offset[im->l.n_tensors - 1], 1ull << 40);
}
static void c_offset_overflow(struct image *im)
{
    put64(im->p + im->l.t_offset[0], UINT64_MAX - 31);
}

static const struct corruption corruptions[] = {
    {"bad magic", c_magic, DLLM_ERR_FORMAT, "bad magic"},
    {"version 1", c_version1, DLLM_ERR_UNSUPPORTED, "version 1"},
    {"version 4", c_version4, DLLM_ERR_FORMAT, "unknown GGUF version 4"},
    {"big endian", c_big_endian, DLLM_ERR_FORMAT, "big-endian"},
    {"huge tensor count", c_huge_tensors, DLLM_ERR_FORMAT, "tensor count"},
    {"huge key count", c_huge_kv, DLLM_ERR_FORMAT, "metadata count"},
    {"huge key length", c_key_len, DLLM_ERR_FORMAT, "runs past the end"},
    {"empty key", c_key_empty, DLLM_ERR_FORMAT, "empty"},
    {"bad value type", c_value_type, DLLM_ERR_FORMAT, "invalid value type 13"},
    {"huge string length", c_string_len, DLLM_ERR_FORMAT, "runs past the end"},
    {"bad array element type", c_array_type, DLLM_ERR_FORMAT, "invalid array element type 99"},
    {"huge array length", c_array_len, DLLM_ERR_FORMAT, "does not fit"},
    {"bool neither 0 nor 1", c_bool, DLLM_ERR_FORMAT, "neither 0 nor 1"},
    {"duplicate key", c_dup_key, DLLM_ERR_FORMAT, "duplicate metadata key: test.key_a"},
    {"duplicate tensor", c_dup_tensor, DLLM_ERR_FORMAT, "duplicate tensor name: dup.name_a"},
    {"bad tensor type", c_tensor_type, DLLM_ERR_FORMAT, "invalid tensor type id 200"},
    {"removed tensor type", c_tensor_type_removed, DLLM_ERR_FORMAT, "invalid tensor type id 4"},
    {"n_dims 0", c_ndims0, DLLM_ERR_FORMAT, "n_dims is 0"},
    {"n_dims 5", c_ndims5, DLLM_ERR_FORMAT, "n_dims is 5"},
    {"zero dimension", c_dim_zero, DLLM_ERR_FORMAT, "dimension 0 is 0"},
    {"overflowing dimensions", c_dim_overflow, DLLM_ERR_FORMAT, "overflows"},
    {"dimension beyond int64", c_dim_huge, DLLM_ERR_FORMAT, "dimension 0 is"},
    {"row not whole blocks", c_row_blocks, DLLM_ERR_FORMAT, "not a multiple of the Q4_K block"},
    {"misaligned offset", c_misaligned, DLLM_ERR_FORMAT, "not a multiple of the alignment"},
    {"offset out of file", c_out_of_file, DLLM_ERR_FORMAT, "outside the data section"},
    {"offset overflow", c_offset_overflow, DLLM_ERR_FORMAT, "outside the data section"},
};
#define N_CORRUPTIONS (int)(sizeof corruptions / sizeof corruptions[0])

START_TEST(malformed_fields)
{
    const struct corruption *c = &corruptions[_i];
    struct image im = base_image(add_test_keys);
    c->apply(&im);
    expect_error(im.p, im.size, c->status, c->fragment, c->name);
    gguf_layout_free(&im.l);
    free(im.p);
}
END_TEST

static void bad_alignment(struct gguf_edit *e)
{
    gguf_edit_set_u32(e, "general.alignment", 48);
}
static void alignment_type(struct gguf_edit *e)
{
    gguf_edit_set_str(e, "general.alignment", "32");
}
static void long_name(struct gguf_edit *e)
{
    gguf_edit_rename_tensor(
        e, "output_norm.weight",
        "a.tensor.name.that.is.far.longer.than.sixty.three.bytes.allows.in.ggml");
}

/* Arrays of arrays nested nine deep. */
static void deep_nesting(struct gguf_edit *e)
{
    uint8_t raw[256];
    size_t n = 0;
    uint32_t t_array = DLLM_GGUF_ARRAY, t_u8 = DLLM_GGUF_UINT8;
    uint64_t one = 1;
    memcpy(raw + n, &t_array, 4), n += 4;
    for (int d = 0; d < 9; d++) {
        memcpy(raw + n, d < 8 ? &t_array : &t_u8, 4), n += 4;
        memcpy(raw + n, &one, 8), n += 8;
    }
    raw[n++] = 7;
    gguf_edit_set_raw(e, "test.deep", raw, n);
}

static void nesting_ok(struct gguf_edit *e)
{
    uint8_t raw[64];
    const size_t n = gguf_edit_nested_raw(raw);
    gguf_edit_set_raw(e, "test.nested", raw, n);
}

struct edit_case {
    const char *name;
    void (*edit)(struct gguf_edit *);
    const char *fragment;
};

static const struct edit_case edit_cases[] = {
    {"alignment not a power of two", bad_alignment, "power of two"},
    {"alignment of the wrong type", alignment_type, "expected uint32"},
    {"tensor name too long", long_name, "longer than 63 bytes"},
    {"arrays nested too deep", deep_nesting, "nested deeper"},
};
#define N_EDIT_CASES (int)(sizeof edit_cases / sizeof edit_cases[0])

START_TEST(malformed_edits)
{
    const struct edit_case *c = &edit_cases[_i];
    struct image im = base_image(c->edit);
    expect_error(im.p, im.size, DLLM_ERR_FORMAT, c->fragment, c->name);
    gguf_layout_free(&im.l);
    free(im.p);
}
END_TEST

/* Nested arrays within the limit parse and read back. */
START_TEST(nested_arrays)
{
    struct image im = base_image(nesting_ok);
    struct dllm_gguf *g;
    struct dllm_error err;
    ck_assert_int_eq(dllm_gguf_open_memory(im.p, im.size, &g, &err), DLLM_OK);
    const struct dllm_gguf_value *v = dllm_gguf_find(g, "test.nested"), *inner;
    ck_assert_ptr_nonnull(v);
    ck_assert_int_eq(v->arr.type, DLLM_GGUF_ARRAY);
    ck_assert_uint_eq(v->arr.n, 2);
    struct dllm_gguf_value a, s;
    dllm_gguf_array_get(v, 1, &a);
    inner = &a;
    ck_assert_int_eq(inner->arr.type, DLLM_GGUF_STRING);
    dllm_gguf_array_get(inner, 0, &s);
    ck_assert(s.str.len == 3 && memcmp(s.str.ptr, "xyz", 3) == 0);
    dllm_gguf_close(g);
    gguf_layout_free(&im.l);
    free(im.p);
}
END_TEST

/*
 * Reading a model's tensor data (as a forward pass reads the matrices it repacks) gives the
 * file's bytes, from a mapped file (pread) and from an image in memory (memcpy), in pieces
 * from any offset; a mapped file that has become shorter since it was opened fails with EIO.
 */
START_TEST(read_tensor_data)
{
    size_t size;
    uint8_t *image = (uint8_t *)fixture_read("models/llada-tiny-q4km.gguf", &size);
    struct dllm_gguf *mapped = open_fixture("models/llada-tiny-q4km.gguf"), *mem = NULL;
    struct dllm_error err;
    ck_assert_int_eq(dllm_gguf_open_memory(image, size, &mem, &err), DLLM_OK);
    struct dllm_gguf *both[] = {mapped, mem};
    uint8_t *got = malloc(size);
    ck_assert_ptr_nonnull(got);
    for (int i = 0; i < 2; i++) {
        for (int64_t t = 0; t < dllm_gguf_n_tensors(both[i]); t++) {
            const struct dllm_gguf_tensor *tt = dllm_gguf_tensor(both[i], t);
            const size_t at = dllm_gguf_data_offset(both[i]) + tt->offset, half = tt->size / 3;
            memset(got, 0xa5, tt->size);
            ck_assert_int_eq(dllm_gguf_read(both[i], tt->data, half, got), 0);
            ck_assert_int_eq(dllm_gguf_read(both[i], (const uint8_t *)tt->data + half,
                                            tt->size - half, got + half),
                             0);
            ck_assert_int_eq(memcmp(got, image + at, tt->size), 0);
        }
    }
    dllm_gguf_close(mem);
    dllm_gguf_close(mapped);

    /* a copy of the file, opened, then cut short before its last tensor is read */
    char *dir = test_tmpdir(), path[4200];
    snprintf(path, sizeof path, "%s/cut.gguf", dir);
    FILE *f = fopen(path, "wb");
    ck_assert(f && fwrite(image, 1, size, f) == size && fclose(f) == 0);
    struct dllm_gguf *g;
    ck_assert_int_eq(dllm_gguf_open(path, &g, &err), DLLM_OK);
    const struct dllm_gguf_tensor *last = dllm_gguf_tensor(g, 0);
    for (int64_t t = 1; t < dllm_gguf_n_tensors(g); t++) {
        const struct dllm_gguf_tensor *tt = dllm_gguf_tensor(g, t);
        last = tt->offset > last->offset ? tt : last;
    }
    ck_assert_int_eq(truncate(path, (off_t)(dllm_gguf_data_offset(g) + last->offset)), 0);
    ck_assert_int_eq(dllm_gguf_read(g, last->data, last->size, got), EIO);
    dllm_gguf_close(g);
    unlink(path);
    rmdir(dir);
    free(dir);
    free(got);
    free(image);
}
END_TEST

START_TEST(file_errors)
{
    struct dllm_gguf *g;
    struct dllm_error err;
    ck_assert_int_eq(dllm_gguf_open("/nonexistent/model.gguf", &g, &err), DLLM_ERR_IO);
    ck_assert_ptr_null(g);
    ck_assert(strstr(err.text, "No such file"));
    ck_assert_int_eq(dllm_gguf_open("/", &g, &err), DLLM_ERR_IO);
    /* A directory says so (the text once ended in a stale errno: "Inappropriate ioctl"). */
    ck_assert_str_eq(err.text, "a directory, not a GGUF file");
    ck_assert_int_eq(dllm_gguf_open("/dev/null", &g, &err), DLLM_ERR_IO);
    ck_assert_str_eq(err.text, "not a regular file, not a GGUF file");
    char *dir = test_tmpdir();
    char path[4200];
    /* A named pipe with no writer is refused at once, not waited on (open blocked on it). */
    snprintf(path, sizeof path, "%s/pipe.gguf", dir);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    ck_assert_int_eq(dllm_gguf_open(path, &g, &err), DLLM_ERR_IO);
    ck_assert_str_eq(err.text, "not a regular file, not a GGUF file");
    unlink(path);
    snprintf(path, sizeof path, "%s/empty.gguf", dir);
    FILE *f = fopen(path, "wb");
    fclose(f);
    ck_assert_int_eq(dllm_gguf_open(path, &g, &err), DLLM_ERR_FORMAT);
    unlink(path);
    /* A model cut inside its tensor data is a truncated file, with the sizes. */
    size_t size;
    char *whole = fixture_read("models/llada-tiny-q4km.gguf", &size);
    struct dllm_gguf *full;
    ck_assert(dllm_gguf_open_memory(whole, size, &full, &err) == DLLM_OK);
    size_t need = 0;
    for (int64_t i = 0; i < dllm_gguf_n_tensors(full); i++) {
        const struct dllm_gguf_tensor *t = dllm_gguf_tensor(full, i);
        if (t->offset + t->size > need)
            need = t->offset + t->size;
    }
    need += dllm_gguf_data_offset(full);
    const size_t cut = size - 100000;
    char want[200];
    ck_assert_int_eq(dllm_gguf_open_memory(whole, cut, &g, &err), DLLM_ERR_FORMAT);
    snprintf(want, sizeof want, "truncated file: it has %zu bytes but its tensors need %zu", cut,
             need);
    ck_assert_msg(strncmp(err.text, want, strlen(want)) == 0, "%s", err.text);
    dllm_gguf_close(full);
    free(whole);
    rmdir(dir);
    free(dir);
}
END_TEST

/*
 * Names of the parts llama.cpp's gguf-split writes ("%s-%05d-of-%05d.gguf", llama_split_path in
 * llama.cpp's src/llama.cpp) are recognised, with the prefix, part and count; other names are not.
 */
START_TEST(split_names)
{
    static const struct {
        const char *path;
        bool split;
        size_t prefix_len;
        int part, count;
    } cases[] = {
        {"m/LLaDA-8B-Q4_K_M-00001-of-00003.gguf", true, 17, 1, 3},
        {"x-00003-of-00003.gguf", true, 1, 3, 3},
        {"/a/b-00002-of-00010.GGUF", true, 4, 2, 10},
        {"-00001-of-00002.gguf", false, 0, 0, 0},  /* no prefix */
        {"x-00004-of-00003.gguf", false, 0, 0, 0}, /* part past the count */
        {"x-00000-of-00003.gguf", false, 0, 0, 0}, /* parts count from 1 */
        {"x-00001-of-00000.gguf", false, 0, 0, 0}, /* no parts */
        {"x-0001-of-00003.gguf", false, 0, 0, 0},  /* four digits */
        {"x-00001-of-00003.gguf.part", false, 0, 0, 0},
        {"x-00001_of-00003.gguf", false, 0, 0, 0},
        {"x-0000a-of-00003.gguf", false, 0, 0, 0},
        {"model.gguf", false, 0, 0, 0},
        {"", false, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t prefix_len = 99;
        int part = 99, count = 99;
        const bool split = dllm_gguf_split_name(cases[i].path, &prefix_len, &part, &count);
        ck_assert_msg(split == cases[i].split, "%s: %s a part", cases[i].path,
                      split ? "read as" : "not read as");
        if (split)
            ck_assert_msg(prefix_len == cases[i].prefix_len && part == cases[i].part &&
                              count == cases[i].count,
                          "%s: prefix %zu, part %d of %d", cases[i].path, prefix_len, part, count);
    }
    /* The other parts' paths, as gguf-split names them. */
    char *p = dllm_gguf_split_part_path("m/LLaDA-8B-Q4_K_M-00001-of-00003.gguf", 17, 2, 3);
    ck_assert_str_eq(p, "m/LLaDA-8B-Q4_K_M-00002-of-00003.gguf");
    free(p);
    p = dllm_gguf_split_part_path("x-00003-of-00012.gguf", 1, 10, 12);
    ck_assert_str_eq(p, "x-00010-of-00012.gguf");
    free(p);
}
END_TEST

static Suite *gguf_suite(void)
{
    Suite *s = suite_create("gguf");
    TCase *tc = tcase_create("parse");
    tcase_add_loop_test(tc, parse_fixture, 0, N_FIXTURES);
    tcase_add_test(tc, parse_known_shapes);
    tcase_add_test(tc, typed_lookups);
    tcase_add_test(tc, rebuild_roundtrip);
    tcase_add_test(tc, nested_arrays);
    tcase_add_test(tc, read_tensor_data);
    tcase_add_test(tc, split_names);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, malformed_truncation);
    tcase_add_loop_test(tc, malformed_fields, 0, N_CORRUPTIONS);
    tcase_add_loop_test(tc, malformed_edits, 0, N_EDIT_CASES);
    tcase_add_test(tc, file_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    fixtures_dir(); /* SKIP (or fail under CI) before forking when the fixtures are absent */
    return test_run_suite(gguf_suite());
}
