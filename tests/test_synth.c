/*
 * The GGUF writer (values of every type and tensors read back through the reader, the
 * positions it reports, temporary files, a full disk, bad paths) and synthetic models: their
 * layout against the fixture models llama.cpp's tools wrote, the Q4_K_M type mix against the
 * layer sets of llama-quant.cpp's use_more_bits formula, the chat templates against the
 * published tokenizer_config.json files, loading, a forward pass and a chat prompt.
 */
#include "dllm.h"
#include "synth.h"
#include "fixtures.h"
#include "forward_util.h"
#include "gguf_edit.h"
#include "gguf_write.h"

#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- helpers ---------------------------------------------------------------------------- */

static char *join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static bool exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

static bool tmp_exists(const char *path)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    return exists(tmp);
}

/* Finishes a memory image and opens it with the reader; *image must be freed after close. */
static struct dllm_gguf *finish_and_open(struct dllm_gguf_writer *w, void **image)
{
    size_t size;
    struct dllm_error err;
    ck_assert_msg(dllm_gguf_writer_finish(w, image, &size, &err) == DLLM_OK, "%s", err.text);
    struct dllm_gguf *g;
    ck_assert_msg(dllm_gguf_open_memory(*image, size, &g, &err) == DLLM_OK, "%s", err.text);
    return g;
}

static struct dllm_gguf *open_path(const char *path)
{
    struct dllm_gguf *g;
    struct dllm_error err;
    ck_assert_msg(dllm_gguf_open(path, &g, &err) == DLLM_OK, "%s: %s", path, err.text);
    return g;
}

static struct dllm_gguf *open_fixture(const char *rel)
{
    char *path = fixture_path(rel);
    struct dllm_gguf *g = open_path(path);
    free(path);
    return g;
}

/* ---- the writer: values ------------------------------------------------------------------- */

/* One key of each scalar type, with extreme values. */
static const struct dllm_gguf_value scalars[] = {
    {.type = DLLM_GGUF_UINT8, .u64 = 255},
    {.type = DLLM_GGUF_INT8, .i64 = -128},
    {.type = DLLM_GGUF_UINT16, .u64 = 65535},
    {.type = DLLM_GGUF_INT16, .i64 = -32768},
    {.type = DLLM_GGUF_UINT32, .u64 = UINT32_MAX},
    {.type = DLLM_GGUF_INT32, .i64 = INT32_MIN},
    {.type = DLLM_GGUF_FLOAT32, .f64 = -1.5},
    {.type = DLLM_GGUF_BOOL, .b = true},
    {.type = DLLM_GGUF_STRING, .str = {"a\0b\xc3\xa9", 5}},
    {.type = DLLM_GGUF_UINT64, .u64 = UINT64_MAX},
    {.type = DLLM_GGUF_INT64, .i64 = INT64_MIN},
    {.type = DLLM_GGUF_FLOAT64, .f64 = 3.141592653589793},
};
#define N_SCALARS (int)(sizeof scalars / sizeof scalars[0])

static void assert_same_value(const struct dllm_gguf_value *want, const struct dllm_gguf_value *got,
                              const char *key)
{
    ck_assert_msg(got->type == want->type, "%s: type %d, want %d", key, got->type, want->type);
    switch (want->type) {
    case DLLM_GGUF_STRING:
        ck_assert_uint_eq(got->str.len, want->str.len);
        ck_assert(memcmp(got->str.ptr, want->str.ptr, want->str.len) == 0);
        break;
    case DLLM_GGUF_FLOAT32:
    case DLLM_GGUF_FLOAT64: ck_assert_msg(got->f64 == want->f64, "%s: %g", key, got->f64); break;
    case DLLM_GGUF_BOOL: ck_assert_int_eq(got->b, want->b); break;
    case DLLM_GGUF_INT8:
    case DLLM_GGUF_INT16:
    case DLLM_GGUF_INT32:
    case DLLM_GGUF_INT64: ck_assert_msg(got->i64 == want->i64, "%s", key); break;
    default: ck_assert_msg(got->u64 == want->u64, "%s", key); break;
    }
}

/* Arrays of every scalar element type, as the file stores them. */
static const uint8_t a_u8[] = {1, 2, 255};
static const int8_t a_i8[] = {-128, 0, 127};
static const uint16_t a_u16[] = {0, 1, 65535};
static const int16_t a_i16[] = {-32768, 5, 32767};
static const uint32_t a_u32[] = {0, 7, UINT32_MAX};
static const int32_t a_i32[] = {INT32_MIN, -1, INT32_MAX};
static const float a_f32[] = {1.5f, -0.25f, 3e38f};
static const uint8_t a_bool[] = {1, 0, 1};
static const uint64_t a_u64[] = {0, 1, UINT64_MAX};
static const int64_t a_i64[] = {INT64_MIN, 0, INT64_MAX};
static const double a_f64[] = {3.141592653589793, -1e300, 0};

static const struct {
    enum dllm_gguf_type type;
    const void *values;
} arrays[] = {
    {DLLM_GGUF_UINT8, a_u8},    {DLLM_GGUF_INT8, a_i8},     {DLLM_GGUF_UINT16, a_u16},
    {DLLM_GGUF_INT16, a_i16},   {DLLM_GGUF_UINT32, a_u32},  {DLLM_GGUF_INT32, a_i32},
    {DLLM_GGUF_FLOAT32, a_f32}, {DLLM_GGUF_BOOL, a_bool},   {DLLM_GGUF_UINT64, a_u64},
    {DLLM_GGUF_INT64, a_i64},   {DLLM_GGUF_FLOAT64, a_f64},
};
#define N_ARRAYS (int)(sizeof arrays / sizeof arrays[0])

/* Element i of one of the arrays above, as a reader value. */
static struct dllm_gguf_value array_elem(int a, int i)
{
    struct dllm_gguf_value v = {.type = arrays[a].type};
    switch (arrays[a].type) {
    case DLLM_GGUF_UINT8: v.u64 = a_u8[i]; break;
    case DLLM_GGUF_INT8: v.i64 = a_i8[i]; break;
    case DLLM_GGUF_UINT16: v.u64 = a_u16[i]; break;
    case DLLM_GGUF_INT16: v.i64 = a_i16[i]; break;
    case DLLM_GGUF_UINT32: v.u64 = a_u32[i]; break;
    case DLLM_GGUF_INT32: v.i64 = a_i32[i]; break;
    case DLLM_GGUF_FLOAT32: v.f64 = a_f32[i]; break;
    case DLLM_GGUF_BOOL: v.b = a_bool[i]; break;
    case DLLM_GGUF_UINT64: v.u64 = a_u64[i]; break;
    case DLLM_GGUF_INT64: v.i64 = a_i64[i]; break;
    default: v.f64 = a_f64[i]; break;
    }
    return v;
}

/* Every value type, the shorthands, arrays, replacement and removal read back as written. */
START_TEST(writer_values)
{
    struct dllm_gguf_writer *w;
    struct dllm_error err;
    char key[64];
    ck_assert_int_eq(dllm_gguf_writer_new(&w, &err), DLLM_OK);
    ck_assert_int_eq(dllm_gguf_writer_set_u32(w, "test.replaced", 1, &err), DLLM_OK);
    for (int i = 0; i < N_SCALARS; i++) {
        snprintf(key, sizeof key, "test.scalar.%d", i);
        ck_assert_msg(dllm_gguf_writer_set(w, key, &scalars[i], &err) == DLLM_OK, "%s", err.text);
    }
    for (int a = 0; a < N_ARRAYS; a++) {
        snprintf(key, sizeof key, "test.array.%d", a);
        ck_assert_msg(dllm_gguf_writer_set_array(w, key, arrays[a].type, arrays[a].values, 3,
                                                 &err) == DLLM_OK,
                      "%s", err.text);
    }
    static const char *const strs[] = {"", "two words", "\xe2\x82\xac"};
    ck_assert_int_eq(dllm_gguf_writer_set_str_array(w, "test.strings", strs, 3, &err), DLLM_OK);
    ck_assert_int_eq(dllm_gguf_writer_set_i32(w, "test.i32", -7, &err), DLLM_OK);
    ck_assert_int_eq(dllm_gguf_writer_set_f32(w, "test.f32", 0.125f, &err), DLLM_OK);
    ck_assert_int_eq(dllm_gguf_writer_set_bool(w, "test.bool", false, &err), DLLM_OK);
    ck_assert_int_eq(dllm_gguf_writer_set_str(w, "test.gone", "x", &err), DLLM_OK);
    ck_assert_int_eq(dllm_gguf_writer_set_str(w, "test.replaced", "now a string", &err), DLLM_OK);
    dllm_gguf_writer_remove(w, "test.gone");
    dllm_gguf_writer_remove(w, "test.never.set");
    ck_assert_int_eq(dllm_gguf_writer_begin(w, NULL, &err), DLLM_OK);
    void *image;
    struct dllm_gguf *g = finish_and_open(w, &image);

    ck_assert_int_eq(dllm_gguf_version(g), 3);
    ck_assert_int_eq(dllm_gguf_n_kv(g), 1 + N_SCALARS + N_ARRAYS + 4);
    ck_assert_str_eq(dllm_gguf_kv_key(g, 0), "test.replaced"); /* replaced in place */
    char *s;
    ck_assert_int_eq(dllm_gguf_get_str(g, "test.replaced", &s, &err), DLLM_OK);
    ck_assert_str_eq(s, "now a string");
    free(s);
    ck_assert_ptr_null(dllm_gguf_find(g, "test.gone"));
    for (int i = 0; i < N_SCALARS; i++) {
        snprintf(key, sizeof key, "test.scalar.%d", i);
        ck_assert_str_eq(dllm_gguf_kv_key(g, 1 + i), key); /* in the order set */
        const struct dllm_gguf_value *v = dllm_gguf_find(g, key);
        ck_assert_ptr_nonnull(v);
        assert_same_value(&scalars[i], v, key);
    }
    for (int a = 0; a < N_ARRAYS; a++) {
        snprintf(key, sizeof key, "test.array.%d", a);
        const struct dllm_gguf_value *v = dllm_gguf_find(g, key);
        ck_assert_int_eq(v->type, DLLM_GGUF_ARRAY);
        ck_assert_int_eq(v->arr.type, arrays[a].type);
        ck_assert_uint_eq(v->arr.n, 3);
        for (int i = 0; i < 3; i++) {
            struct dllm_gguf_value e, want = array_elem(a, i);
            dllm_gguf_array_get(v, (uint64_t)i, &e);
            assert_same_value(&want, &e, key);
        }
    }
    const struct dllm_gguf_value *v = dllm_gguf_find(g, "test.strings");
    ck_assert_int_eq(v->arr.type, DLLM_GGUF_STRING);
    for (int i = 0; i < 3; i++) {
        struct dllm_gguf_value e;
        dllm_gguf_array_get(v, (uint64_t)i, &e);
        ck_assert(e.str.len == strlen(strs[i]) && memcmp(e.str.ptr, strs[i], e.str.len) == 0);
    }
    ck_assert_int_eq(dllm_gguf_find(g, "test.i32")->i64, -7);
    ck_assert(dllm_gguf_find(g, "test.f32")->f64 == 0.125);
    ck_assert_int_eq(dllm_gguf_find(g, "test.bool")->b, false);
    ck_assert_int_eq(dllm_gguf_n_tensors(g), 0);
    dllm_gguf_close(g);
    free(image);
    dllm_gguf_writer_free(w);
}
END_TEST

/* Arrays of arrays, as a reader holds them, are copied whole. */
START_TEST(writer_nested_copy)
{
    uint8_t raw[64];
    const size_t n = gguf_edit_nested_raw(raw);
    struct dllm_gguf_writer *w1, *w2;
    struct dllm_error err;
    void *image1, *image2;
    ck_assert_int_eq(dllm_gguf_writer_new(&w1, &err), DLLM_OK);
    ck_assert_int_eq(dllm_gguf_writer_set_raw(w1, "test.nested", raw, n, &err), DLLM_OK);
    ck_assert_int_eq(dllm_gguf_writer_begin(w1, NULL, &err), DLLM_OK);
    struct dllm_gguf *g1 = finish_and_open(w1, &image1);
    ck_assert_int_eq(dllm_gguf_writer_new(&w2, &err), DLLM_OK);
    ck_assert_int_eq(dllm_gguf_writer_set(w2, "test.copy", dllm_gguf_find(g1, "test.nested"), &err),
                     DLLM_OK);
    ck_assert_int_eq(dllm_gguf_writer_begin(w2, NULL, &err), DLLM_OK);
    struct dllm_gguf *g2 = finish_and_open(w2, &image2);
    const struct dllm_gguf_value *v = dllm_gguf_find(g2, "test.copy");
    ck_assert_int_eq(v->arr.type, DLLM_GGUF_ARRAY);
    ck_assert_uint_eq(v->arr.n, 2);
    for (int k = 0; k < 2; k++) {
        struct dllm_gguf_value inner, s;
        dllm_gguf_array_get(v, (uint64_t)k, &inner);
        ck_assert_int_eq(inner.arr.type, DLLM_GGUF_STRING);
        ck_assert_uint_eq(inner.arr.n, 1);
        dllm_gguf_array_get(&inner, 0, &s);
        ck_assert(s.str.len == 3 && memcmp(s.str.ptr, k ? "xyz" : "abc", 3) == 0);
    }
    dllm_gguf_close(g1);
    dllm_gguf_close(g2);
    free(image1);
    free(image2);
    dllm_gguf_writer_free(w1);
    dllm_gguf_writer_free(w2);
}
END_TEST

/* ---- the writer: tensors and positions ---------------------------------------------------- */

static uint64_t read_u64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static uint32_t read_u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/*
 * Tensors of several types with alignment 64, their data written in pieces that span tensors:
 * the reader finds each tensor's bytes at an aligned offset, and the positions the writer
 * reports hold the fields they name.
 */
START_TEST(writer_tensors)
{
    static const struct {
        const char *name;
        uint32_t type;
        int n_dims;
        int64_t ne[3];
        size_t size;
    } ts[] = {
        {"vec", DLLM_TYPE_F32, 1, {5}, 20},
        {"blk.0.q4k", DLLM_TYPE_Q4_K, 2, {256, 3}, 3 * 144},
        {"q80", DLLM_TYPE_Q8_0, 3, {64, 1, 2}, 4 * 34},
        {"q6k", DLLM_TYPE_Q6_K, 2, {512, 1}, 2 * 210},
    };
    enum { N = sizeof ts / sizeof ts[0] };
    struct dllm_gguf_writer *w;
    struct dllm_error err;
    ck_assert_int_eq(dllm_gguf_writer_new(&w, &err), DLLM_OK);
    ck_assert_int_eq(dllm_gguf_writer_set_alignment(w, 64, &err), DLLM_OK);
    ck_assert_int_eq(dllm_gguf_writer_set_u32(w, "general.alignment", 64, &err), DLLM_OK);
    ck_assert_int_eq(dllm_gguf_writer_set_str(w, "general.name", "t", &err), DLLM_OK);
    size_t total = 0;
    for (int i = 0; i < N; i++) {
        ck_assert_msg(dllm_gguf_writer_add_tensor(w, ts[i].name, ts[i].type, ts[i].n_dims, ts[i].ne,
                                                  &err) == DLLM_OK,
                      "%s", err.text);
        ck_assert_uint_eq(dllm_gguf_writer_tensor_size(w, (size_t)i), ts[i].size);
        total += ts[i].size;
    }
    uint8_t *data = malloc(total);
    for (size_t i = 0; i < total; i++)
        data[i] = (uint8_t)(i * 7 + 3);
    ck_assert_int_eq(dllm_gguf_writer_begin(w, NULL, &err), DLLM_OK);
    for (size_t at = 0; at < total; at += 101) {
        size_t k = total - at < 101 ? total - at : 101;
        ck_assert_msg(dllm_gguf_writer_write(w, data + at, k, &err) == DLLM_OK, "%s", err.text);
    }
    ck_assert_uint_eq(dllm_gguf_writer_data_written(w), dllm_gguf_writer_data_size(w));
    void *image;
    struct dllm_gguf *g = finish_and_open(w, &image);
    const uint8_t *p = image;
    ck_assert_uint_eq(dllm_gguf_alignment(g), 64);
    ck_assert_uint_eq(dllm_gguf_data_offset(g), dllm_gguf_writer_data_offset(w));
    ck_assert_uint_eq(dllm_gguf_data_offset(g) % 64, 0);
    ck_assert_int_eq(dllm_gguf_n_tensors(g), N);
    size_t at = 0;
    for (int i = 0; i < N; i++) {
        const struct dllm_gguf_tensor *t = dllm_gguf_tensor(g, i);
        ck_assert_str_eq(t->name, ts[i].name);
        ck_assert_uint_eq(t->type, ts[i].type);
        ck_assert_int_eq(t->n_dims, ts[i].n_dims);
        ck_assert_uint_eq(t->size, ts[i].size);
        ck_assert_uint_eq(t->offset % 64, 0);
        ck_assert(memcmp(t->data, data + at, t->size) == 0);
        at += t->size;
        const struct dllm_gguf_tensor_pos *pos = dllm_gguf_writer_tensor_pos(w, (size_t)i);
        ck_assert_uint_eq(read_u64(p + pos->name), strlen(ts[i].name));
        ck_assert(memcmp(p + pos->name + 8, ts[i].name, strlen(ts[i].name)) == 0);
        ck_assert_uint_eq(read_u32(p + pos->n_dims), (uint32_t)ts[i].n_dims);
        ck_assert_uint_eq(read_u64(p + pos->dims), (uint64_t)ts[i].ne[0]);
        ck_assert_uint_eq(read_u32(p + pos->type), ts[i].type);
        ck_assert_uint_eq(read_u64(p + pos->offset), t->offset);
    }
    for (size_t i = 0; i < dllm_gguf_writer_n_kv(w); i++) {
        const struct dllm_gguf_kv_pos *pos = dllm_gguf_writer_kv_pos(w, i);
        const char *key = dllm_gguf_kv_key(g, (int64_t)i);
        ck_assert_uint_eq(read_u64(p + pos->key), strlen(key));
        ck_assert(memcmp(p + pos->key + 8, key, strlen(key)) == 0);
        ck_assert_uint_eq(read_u32(p + pos->type), dllm_gguf_kv_value(g, (int64_t)i)->type);
        ck_assert_uint_eq(pos->value, pos->type + 4);
    }
    ck_assert_ptr_null(dllm_gguf_writer_kv_pos(w, dllm_gguf_writer_n_kv(w)));
    dllm_gguf_close(g);
    free(image);
    free(data);
    dllm_gguf_writer_free(w);
}
END_TEST

/* ---- the writer: errors ------------------------------------------------------------------- */

static enum dllm_status e_empty_key(struct dllm_gguf_writer *w, struct dllm_error *err)
{
    return dllm_gguf_writer_set_u32(w, "", 1, err);
}
static enum dllm_status e_alignment(struct dllm_gguf_writer *w, struct dllm_error *err)
{
    return dllm_gguf_writer_set_alignment(w, 48, err);
}
static enum dllm_status e_row_blocks(struct dllm_gguf_writer *w, struct dllm_error *err)
{
    return dllm_gguf_writer_add_tensor(w, "t", DLLM_TYPE_Q4_K, 1, (int64_t[]){100}, err);
}
static enum dllm_status e_zero_dim(struct dllm_gguf_writer *w, struct dllm_error *err)
{
    return dllm_gguf_writer_add_tensor(w, "t", DLLM_TYPE_F32, 2, (int64_t[]){4, 0}, err);
}
static enum dllm_status e_five_dims(struct dllm_gguf_writer *w, struct dllm_error *err)
{
    return dllm_gguf_writer_add_tensor(w, "t", DLLM_TYPE_F32, 5, (int64_t[]){1, 1, 1, 1, 1}, err);
}
static enum dllm_status e_type_200(struct dllm_gguf_writer *w, struct dllm_error *err)
{
    return dllm_gguf_writer_add_tensor(w, "t", 200, 1, (int64_t[]){32}, err);
}
static enum dllm_status e_type_removed(struct dllm_gguf_writer *w, struct dllm_error *err)
{
    return dllm_gguf_writer_add_tensor(w, "t", 4 /* Q4_2, removed from ggml */, 1, (int64_t[]){32},
                                       err);
}
static enum dllm_status e_overflow(struct dllm_gguf_writer *w, struct dllm_error *err)
{
    return dllm_gguf_writer_add_tensor(w, "t", DLLM_TYPE_F32, 2,
                                       (int64_t[]){INT64_C(1) << 40, INT64_C(1) << 40}, err);
}
static enum dllm_status e_bytes_overflow(struct dllm_gguf_writer *w, struct dllm_error *err)
{
    return dllm_gguf_writer_add_tensor(w, "t", DLLM_TYPE_F32, 1, (int64_t[]){INT64_MAX}, err);
}
static enum dllm_status e_duplicate(struct dllm_gguf_writer *w, struct dllm_error *err)
{
    dllm_gguf_writer_add_tensor(w, "a", DLLM_TYPE_F32, 1, (int64_t[]){4}, err);
    return dllm_gguf_writer_add_tensor(w, "a", DLLM_TYPE_F32, 1, (int64_t[]){4}, err);
}
static enum dllm_status e_bool_array(struct dllm_gguf_writer *w, struct dllm_error *err)
{
    return dllm_gguf_writer_set_array(w, "k", DLLM_GGUF_BOOL, (uint8_t[]){0, 2}, 2, err);
}
static enum dllm_status e_string_array(struct dllm_gguf_writer *w, struct dllm_error *err)
{
    return dllm_gguf_writer_set_array(w, "k", DLLM_GGUF_STRING, "", 0, err);
}
static enum dllm_status e_value_type(struct dllm_gguf_writer *w, struct dllm_error *err)
{
    return dllm_gguf_writer_set(w, "k", &(struct dllm_gguf_value){.type = 13}, err);
}
static enum dllm_status e_too_much(struct dllm_gguf_writer *w, struct dllm_error *err)
{
    dllm_gguf_writer_add_tensor(w, "t", DLLM_TYPE_F32, 1, (int64_t[]){4}, err);
    dllm_gguf_writer_begin(w, NULL, err);
    return dllm_gguf_writer_write(w, NULL, 20, err);
}
static enum dllm_status e_too_little(struct dllm_gguf_writer *w, struct dllm_error *err)
{
    void *image;
    size_t size;
    dllm_gguf_writer_add_tensor(w, "t", DLLM_TYPE_F32, 1, (int64_t[]){4}, err);
    dllm_gguf_writer_begin(w, NULL, err);
    dllm_gguf_writer_write(w, NULL, 8, err);
    return dllm_gguf_writer_finish(w, &image, &size, err);
}
static enum dllm_status e_key_after_begin(struct dllm_gguf_writer *w, struct dllm_error *err)
{
    dllm_gguf_writer_begin(w, NULL, err);
    return dllm_gguf_writer_set_u32(w, "k", 1, err);
}
static enum dllm_status e_write_before_begin(struct dllm_gguf_writer *w, struct dllm_error *err)
{
    return dllm_gguf_writer_write(w, "x", 1, err);
}

static const struct {
    const char *name;
    enum dllm_status (*run)(struct dllm_gguf_writer *w, struct dllm_error *err);
    const char *fragment;
} writer_errors[] = {
    {"empty key", e_empty_key, "must not be empty"},
    {"alignment 48", e_alignment, "not a power of two"},
    {"row not whole blocks", e_row_blocks, "ne[0] = 100 is not a multiple of the Q4_K block"},
    {"zero dimension", e_zero_dim, "dimension 1 is 0"},
    {"five dimensions", e_five_dims, "n_dims is 5"},
    {"type 200", e_type_200, "invalid tensor type id 200"},
    {"removed type", e_type_removed, "invalid tensor type id 4"},
    {"element count overflow", e_overflow, "element count overflows"},
    {"data section overflow", e_bytes_overflow, "overflows"},
    {"duplicate tensor", e_duplicate, "duplicate tensor name: a"},
    {"bool array", e_bool_array, "bool element 1 is 2, not 0 or 1"},
    {"string array as numbers", e_string_array, "arrays of string"},
    {"value type 13", e_value_type, "invalid value type 13"},
    {"more data than tensors", e_too_much, "4 bytes of tensor data more than the tensors hold"},
    {"missing data", e_too_little, "tensor t has 8 of its 16 bytes"},
    {"key after begin", e_key_after_begin, "cannot change once writing began"},
    {"write before begin", e_write_before_begin, "between begin and finish"},
};
#define N_WRITER_ERRORS (int)(sizeof writer_errors / sizeof writer_errors[0])

START_TEST(writer_error_cases)
{
    struct dllm_gguf_writer *w;
    struct dllm_error err = {0};
    ck_assert_int_eq(dllm_gguf_writer_new(&w, &err), DLLM_OK);
    enum dllm_status st = writer_errors[_i].run(w, &err);
    ck_assert_msg(st == DLLM_ERR_ARG, "%s: status %s (%s)", writer_errors[_i].name,
                  dllm_status_str(st), err.text);
    ck_assert_msg(strstr(err.text, writer_errors[_i].fragment), "%s: '%s' lacks '%s'",
                  writer_errors[_i].name, err.text, writer_errors[_i].fragment);
    dllm_gguf_writer_free(w);
}
END_TEST

/* A writer of one F32 tensor of n elements, with its header written to path. */
static struct dllm_gguf_writer *begun(const char *path, int64_t n, struct dllm_error *err,
                                      enum dllm_status *st)
{
    struct dllm_gguf_writer *w;
    ck_assert_int_eq(dllm_gguf_writer_new(&w, err), DLLM_OK);
    ck_assert_int_eq(dllm_gguf_writer_set_str(w, "general.name", "t", err), DLLM_OK);
    ck_assert_int_eq(dllm_gguf_writer_add_tensor(w, "t", DLLM_TYPE_F32, 1, &n, err), DLLM_OK);
    *st = dllm_gguf_writer_begin(w, path, err);
    return w;
}

/* A file appears under its name only when finished; an unfinished one leaves nothing. */
START_TEST(writer_temp_file)
{
    char *dir = test_tmpdir();
    char *path = join(dir, "x.gguf");
    struct dllm_error err;
    enum dllm_status st;
    struct dllm_gguf_writer *w = begun(path, 4, &err, &st);
    ck_assert_int_eq(st, DLLM_OK);
    ck_assert(tmp_exists(path) && !exists(path));
    dllm_gguf_writer_free(w); /* abandoned */
    ck_assert(!tmp_exists(path) && !exists(path));

    FILE *f = fopen(path, "w");
    fputs("an older file", f);
    fclose(f);
    w = begun(path, 4, &err, &st);
    ck_assert_int_eq(st, DLLM_OK);
    ck_assert_int_eq(dllm_gguf_writer_write(w, (float[]){1, 2, 3, 4}, 16, &err), DLLM_OK);
    ck_assert_int_eq(dllm_gguf_writer_finish(w, NULL, NULL, &err), DLLM_OK);
    dllm_gguf_writer_free(w);
    ck_assert(!tmp_exists(path));
    struct dllm_gguf *g = open_path(path); /* replaced */
    ck_assert(memcmp(dllm_gguf_tensor(g, 0)->data, (float[]){1, 2, 3, 4}, 16) == 0);
    dllm_gguf_close(g);
    unlink(path);
    rmdir(dir);
    free(path);
    free(dir);
}
END_TEST

/* Writing to /dev/full fails with the disk error, in place, and leaves the device alone. */
START_TEST(writer_full_disk)
{
    struct dllm_error err = {0};
    enum dllm_status st;
    struct dllm_gguf_writer *w = begun("/dev/full", 3 << 20, &err, &st); /* 12 MiB of data */
    if (st == DLLM_OK)
        st = dllm_gguf_writer_write(w, NULL, (size_t)12 << 20, &err);
    if (st == DLLM_OK)
        st = dllm_gguf_writer_finish(w, NULL, NULL, &err);
    ck_assert_int_eq(st, DLLM_ERR_IO);
    ck_assert_msg(strstr(err.text, "cannot write /dev/full: No space left on device"), "%s",
                  err.text);
    dllm_gguf_writer_free(w);
    struct stat sb;
    ck_assert(stat("/dev/full", &sb) == 0 && S_ISCHR(sb.st_mode));
    ck_assert(!exists("/dev/full.tmp"));
}
END_TEST

/* A missing folder and a folder as the path are I/O errors that name the file. */
START_TEST(writer_bad_paths)
{
    struct dllm_error err = {0};
    enum dllm_status st;
    struct dllm_gguf_writer *w = begun("/nonexistent-dllm-dir/x.gguf", 4, &err, &st);
    ck_assert_int_eq(st, DLLM_ERR_IO);
    ck_assert_str_eq(err.text,
                     "cannot create /nonexistent-dllm-dir/x.gguf.tmp: No such file or directory");
    dllm_gguf_writer_free(w);
    char *dir = test_tmpdir();
    w = begun(dir, 4, &err, &st);
    ck_assert_int_eq(st, DLLM_ERR_IO);
    ck_assert(strstr(err.text, "Is a directory"));
    dllm_gguf_writer_free(w);
    struct dllm_synth_params p;
    ck_assert_int_eq(dllm_synth_params_init(&p, "llada", "tiny", &err), DLLM_OK);
    ck_assert_int_eq(dllm_synth_write("/nonexistent-dllm-dir/x.gguf", &p, &err), DLLM_ERR_IO);
    ck_assert_int_eq(dllm_synth_write("/dev/full", &p, &err), DLLM_ERR_IO);
    ck_assert(strstr(err.text, "No space left on device"));
    rmdir(dir);
    free(dir);
}
END_TEST

/* ---- synthetic models --------------------------------------------------------------------- */

static char *synth_dir; /* a temporary folder for the synthetic files of this process */

static void synth_setup(void)
{
    synth_dir = test_tmpdir();
}

static void synth_teardown(void)
{
    rmdir(synth_dir);
    free(synth_dir);
}

/* Writes a synthetic model into synth_dir and returns its path. */
static char *synth(const struct dllm_synth_params *p, const char *name)
{
    char *path = join(synth_dir, name);
    struct dllm_error err;
    ck_assert_msg(dllm_synth_write(path, p, &err) == DLLM_OK, "%s", err.text);
    return path;
}

static struct dllm_synth_params preset(const char *arch, const char *name)
{
    struct dllm_synth_params p;
    struct dllm_error err;
    ck_assert_msg(dllm_synth_params_init(&p, arch, name, &err) == DLLM_OK, "%s", err.text);
    return p;
}

static void remove_file(char *path)
{
    unlink(path);
    free(path);
}

/* The fixture written by llama.cpp's tools for each preset and type mix. */
static const struct {
    const char *arch;
    enum dllm_synth_type type;
    const char *fixture;
} fixture_twins[] = {
    {"llada", DLLM_SYNTH_Q4_K_M, "models/llada-tiny-q4km.gguf"},
    {"llada", DLLM_SYNTH_Q5_K_M, "models/llada-tiny-q5km.gguf"},
    {"llada", DLLM_SYNTH_Q6_K, "models/llada-tiny-q6k.gguf"},
    {"llada", DLLM_SYNTH_Q8_0, "models/llada-tiny-q80.gguf"},
    {"llada", DLLM_SYNTH_F16, "models/llada-tiny-f16.gguf"},
    {"dream", DLLM_SYNTH_Q4_K_M, "models/dream-tiny-q4km.gguf"},
    {"llada-moe", DLLM_SYNTH_Q4_K_M, "models/llada-moe-tiny-q4km.gguf"},
    {"llada-moe", DLLM_SYNTH_Q8_0, "models/llada-moe-tiny-q80.gguf"},
    {"rnd1", DLLM_SYNTH_Q4_K_M, "models/rnd1-tiny-q4km.gguf"},
    {"rnd1", DLLM_SYNTH_Q8_0, "models/rnd1-tiny-q80.gguf"},
};
#define N_TWINS (int)(sizeof fixture_twins / sizeof fixture_twins[0])

/*
 * A tiny synthetic model has the fixture's keys (same names, order and types), tensors (names,
 * order, shapes, types, offsets: for the MoE fixtures the types of llama-quantize's 8-expert
 * and fallback rules) and, for all but Dream, whose fixture's special ids differ, the very
 * same header bytes.
 */
START_TEST(synth_matches_fixture)
{
    struct dllm_synth_params p = preset(fixture_twins[_i].arch, "tiny");
    p.type = fixture_twins[_i].type;
    char *path = synth(&p, "twin.gguf");
    struct dllm_gguf *a = open_fixture(fixture_twins[_i].fixture), *b = open_path(path);
    ck_assert_int_eq(dllm_gguf_n_kv(b), dllm_gguf_n_kv(a));
    for (int64_t i = 0; i < dllm_gguf_n_kv(a); i++) {
        const char *key = dllm_gguf_kv_key(a, i);
        const struct dllm_gguf_value *va = dllm_gguf_kv_value(a, i), *vb = dllm_gguf_kv_value(b, i);
        ck_assert_str_eq(dllm_gguf_kv_key(b, i), key);
        ck_assert_msg(va->type == vb->type, "%s: %s, want %s", key, dllm_gguf_type_name(vb->type),
                      dllm_gguf_type_name(va->type));
        if (va->type == DLLM_GGUF_ARRAY) {
            ck_assert_int_eq(vb->arr.type, va->arr.type);
            ck_assert_uint_eq(vb->arr.n, va->arr.n);
        } else if (!strstr(key, "_token_id")) {
            assert_same_value(va, vb, key); /* hyperparameters, template, flags */
        }
    }
    ck_assert_int_eq(dllm_gguf_n_tensors(b), dllm_gguf_n_tensors(a));
    for (int64_t i = 0; i < dllm_gguf_n_tensors(a); i++) {
        const struct dllm_gguf_tensor *ta = dllm_gguf_tensor(a, i), *tb = dllm_gguf_tensor(b, i);
        ck_assert_str_eq(tb->name, ta->name);
        ck_assert_msg(tb->type == ta->type, "%s: %s, want %s", ta->name, dllm_type_name(tb->type),
                      dllm_type_name(ta->type));
        ck_assert_int_eq(tb->n_dims, ta->n_dims);
        for (int d = 0; d < 4; d++)
            ck_assert_int_eq(tb->ne[d], ta->ne[d]);
        ck_assert_uint_eq(tb->offset, ta->offset);
        ck_assert_uint_eq(tb->size, ta->size);
    }
    if (strcmp(fixture_twins[_i].arch, "dream") != 0) {
        size_t na, nb;
        char *fa = fixture_path(fixture_twins[_i].fixture);
        FILE *f1 = fopen(fa, "rb"), *f2 = fopen(path, "rb");
        ck_assert_uint_eq(dllm_gguf_data_offset(b), dllm_gguf_data_offset(a));
        size_t n = dllm_gguf_data_offset(a);
        char *ha = malloc(n), *hb = malloc(n);
        na = fread(ha, 1, n, f1);
        nb = fread(hb, 1, n, f2);
        ck_assert(na == n && nb == n && memcmp(ha, hb, n) == 0);
        fclose(f1);
        fclose(f2);
        free(ha);
        free(hb);
        free(fa);
    }
    dllm_gguf_close(a);
    dllm_gguf_close(b);
    remove_file(path);
}
END_TEST

/* llama-quant.cpp use_more_bits: the layers whose attn_v and ffn_down are Q6_K in a Q4_K_M file. */
static const int s32[] = {0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31};
static const int s28[] = {0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 24, 25, 26, 27};

/* The type llama-quantize gives a tensor of a file type, worked out from C.7's rules (F16: the
 * converter's, every matrix F16). */
static uint32_t expected_type(const char *name, enum dllm_synth_type type, int n_layer)
{
    uint32_t base = type == DLLM_SYNTH_Q4_K_M   ? DLLM_TYPE_Q4_K
                    : type == DLLM_SYNTH_Q5_K_M ? DLLM_TYPE_Q5_K
                    : type == DLLM_SYNTH_Q6_K   ? DLLM_TYPE_Q6_K
                    : type == DLLM_SYNTH_F16    ? DLLM_TYPE_F16
                                                : DLLM_TYPE_Q8_0;
    size_t len = strlen(name);
    if (strstr(name, "_norm.weight") || (len > 5 && strcmp(name + len - 5, ".bias") == 0))
        return DLLM_TYPE_F32;
    if (strcmp(name, "output.weight") == 0)
        return base == DLLM_TYPE_Q8_0 || base == DLLM_TYPE_F16 ? base : DLLM_TYPE_Q6_K;
    int i;
    if ((strstr(name, ".attn_v.weight") || strstr(name, ".ffn_down.weight")) &&
        sscanf(name, "blk.%d.", &i) == 1 &&
        (type == DLLM_SYNTH_Q4_K_M || type == DLLM_SYNTH_Q5_K_M)) {
        const int n = n_layer;
        if (i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2)
            return DLLM_TYPE_Q6_K;
    }
    return base;
}

/*
 * The full layer counts (32 LLaDA, 28 Dream) with tiny widths: every tensor's type follows
 * the formula for each mix, and the Q4_K_M Q6_K layers are exactly C.7's sets.
 */
START_TEST(synth_type_mix)
{
    const bool llada = _i == 0;
    const int n_layer = llada ? 32 : 28;
    const int *set = llada ? s32 : s28;
    const size_t n_set = llada ? sizeof s32 / sizeof *s32 : sizeof s28 / sizeof *s28;
    static const enum dllm_synth_type types[] = {DLLM_SYNTH_Q4_K_M, DLLM_SYNTH_Q5_K_M,
                                                 DLLM_SYNTH_Q6_K, DLLM_SYNTH_Q8_0, DLLM_SYNTH_F16};
    for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
        struct dllm_synth_params p = preset(llada ? "llada" : "dream", "tiny");
        p.n_layer = n_layer;
        p.n_vocab = 1024;
        p.type = types[k];
        char *path = synth(&p, "mix.gguf");
        struct dllm_gguf *g = open_path(path);
        ck_assert_int_eq(dllm_gguf_n_tensors(g), 3 + n_layer * (llada ? 9 : 12));
        int q6_layers[2][64], n_q6[2] = {0, 0};
        for (int64_t i = 0; i < dllm_gguf_n_tensors(g); i++) {
            const struct dllm_gguf_tensor *t = dllm_gguf_tensor(g, i);
            uint32_t want = expected_type(t->name, types[k], n_layer);
            ck_assert_msg(t->type == want, "%s %s: %s, want %s", dllm_synth_type_name(types[k]),
                          t->name, dllm_type_name(t->type), dllm_type_name(want));
            int layer, which = strstr(t->name, "attn_v.weight") ? 0 : 1;
            if (types[k] == DLLM_SYNTH_Q4_K_M && t->type == DLLM_TYPE_Q6_K &&
                sscanf(t->name, "blk.%d.", &layer) == 1)
                q6_layers[which][n_q6[which]++] = layer;
        }
        if (types[k] == DLLM_SYNTH_Q4_K_M) {
            for (int which = 0; which < 2; which++) {
                ck_assert_int_eq(n_q6[which], (int)n_set);
                for (size_t j = 0; j < n_set; j++)
                    ck_assert_int_eq(q6_layers[which][j], set[j]);
            }
        }
        uint32_t file_type;
        struct dllm_error err;
        ck_assert_int_eq(dllm_gguf_get_u32(g, "general.file_type", &file_type, &err), DLLM_OK);
        ck_assert_uint_eq(file_type, (uint32_t)types[k]);
        dllm_gguf_close(g);
        remove_file(path);
    }
}
END_TEST

/* The chat template is the model's own, as its tokenizer_config.json publishes it. */
START_TEST(synth_chat_template)
{
    const char *arch = _i == 0 ? "llada" : "dream";
    struct dllm_synth_params p = preset(arch, "tiny");
    char *path = synth(&p, "chat.gguf");
    struct dllm_gguf *g = open_path(path);
    char rel[128];
    snprintf(rel, sizeof rel, "tokenizer/%s-hf/tokenizer_config.json", arch);
    size_t size;
    char *text = fixture_read(rel, &size);
    json_error_t jerr;
    json_t *cfg = json_loadb(text, size, JSON_DECODE_INT_AS_REAL, &jerr); /* LLaDA has 1e30 */
    ck_assert_ptr_nonnull(cfg);
    const char *want = json_string_value(json_object_get(cfg, "chat_template"));
    ck_assert_ptr_nonnull(want);
    char *got;
    struct dllm_error err;
    ck_assert_int_eq(dllm_gguf_get_str(g, "tokenizer.chat_template", &got, &err), DLLM_OK);
    ck_assert_str_eq(got, want);
    free(got);
    json_decref(cfg);
    free(text);
    dllm_gguf_close(g);
    remove_file(path);
}
END_TEST

/* The special tokens: real ids in a full vocabulary, kept at their distance from the top in
 * a smaller one; their texts at the ids the keys name. */
static const struct {
    const char *arch;
    int64_t n_vocab;
    int64_t bos, eos, mask; /* expected ids */
    const char *bos_text, *eos_text, *mask_text;
} special_cases[] = {
    {"llada", 126349, 126080, 126081, 126336, "<|startoftext|>", "<|endoftext|>", "<|mdm_mask|>"},
    {"llada", 2048, 1664, 1665, 1920, "<|startoftext|>", "<|endoftext|>", "<|mdm_mask|>"},
    {"llada", 648, 264, 265, 520, "<|startoftext|>", "<|endoftext|>", "<|mdm_mask|>"},
    {"dream", 151667, 151665, 151643, 151666, "<|beginoftext|>", "<|endoftext|>", "<|mask|>"},
    {"dream", 700, 700 - 152064 + 151665, 700 - 152064 + 151643, 700 - 152064 + 151666,
     "<|beginoftext|>", "<|endoftext|>", "<|mask|>"},
};
#define N_SPECIAL_CASES (int)(sizeof special_cases / sizeof special_cases[0])

START_TEST(synth_special_ids)
{
    struct dllm_synth_params p = preset(special_cases[_i].arch, "tiny");
    p.n_vocab = special_cases[_i].n_vocab;
    p.n_layer = 1;
    char *path = synth(&p, "vocab.gguf");
    struct dllm_gguf *g = open_path(path);
    struct dllm_vocab *v;
    struct dllm_error err;
    ck_assert_msg(dllm_vocab_load(g, &v, &err) == DLLM_OK, "%s", err.text);
    ck_assert_int_eq(dllm_vocab_size(v), p.n_vocab);
    const struct {
        enum dllm_special_token which;
        int64_t id;
        const char *text;
    } want[] = {
        {DLLM_SPECIAL_BOS, special_cases[_i].bos, special_cases[_i].bos_text},
        {DLLM_SPECIAL_EOS, special_cases[_i].eos, special_cases[_i].eos_text},
        {DLLM_SPECIAL_MASK, special_cases[_i].mask, special_cases[_i].mask_text},
    };
    for (int k = 0; k < 3; k++) {
        ck_assert_int_eq(dllm_vocab_special(v, want[k].which), want[k].id);
        ck_assert_str_eq(dllm_vocab_token_text(v, (int32_t)want[k].id, NULL), want[k].text);
        ck_assert_int_eq(dllm_vocab_token_type(v, (int32_t)want[k].id), DLLM_TOKEN_TYPE_CONTROL);
    }
    for (int b = 0; b < 256; b++) { /* token b stands for byte b */
        size_t len;
        const char *bytes = dllm_vocab_token_bytes(v, b, &len);
        ck_assert(len == 1 && (uint8_t)bytes[0] == b);
    }
    ck_assert_str_eq(dllm_vocab_token_text(v, 258, NULL), "\xc4\xa0the");
    int n_control = 0;
    for (int32_t id = 256; id < dllm_vocab_size(v); id++) {
        enum dllm_token_type type = dllm_vocab_token_type(v, id);
        char pad[32];
        snprintf(pad, sizeof pad, "[PAD%d]", id);
        if (type == DLLM_TOKEN_TYPE_CONTROL)
            n_control++;
        else if (id >= 264)
            ck_assert(type == DLLM_TOKEN_TYPE_UNUSED &&
                      strcmp(dllm_vocab_token_text(v, id, NULL), pad) == 0);
        else
            ck_assert_int_eq(type, DLLM_TOKEN_TYPE_NORMAL);
    }
    ck_assert_int_eq(n_control, strcmp(special_cases[_i].arch, "llada") == 0 ? 6 : 5);
    dllm_vocab_free(v);
    dllm_gguf_close(g);
    remove_file(path);
}
END_TEST

/* The architectures synth writes. */
static const char *const synth_archs[] = {"llada", "dream", "llada-moe", "rnd1"};

/* A model loads, and a forward pass over prompt text, specials and masks gives finite logits
 * of about unit size (every block type of the mix, the MoE fallbacks Q5_0 and Q8_0 too). */
START_TEST(synth_forward)
{
    const char *arch = synth_archs[_i];
    struct dllm_synth_params p = preset(arch, "tiny");
    char *path = synth(&p, "fwd.gguf");
    struct dllm_model *m;
    struct dllm_error err;
    ck_assert_msg(dllm_model_open(path, NULL, &m, &err) == DLLM_OK, "%s", err.text);
    ck_assert_str_eq(dllm_model_arch(m), arch);
    ck_assert_int_eq(dllm_model_n_layer(m), 2);
    const int32_t mask = dllm_model_mask_id(m);
    struct test_forward t = test_forward_new(m, 16, 16, 0, NULL);
    int32_t ids[16], rows[16];
    for (int i = 0; i < 16; i++) {
        ids[i] = i < 8 ? 'a' + i : i < 10 ? 258 : mask;
        rows[i] = i;
    }
    const int64_t n_vocab = dllm_model_n_vocab(m);
    float *logits = malloc((size_t)(16 * n_vocab) * sizeof *logits);
    ck_assert_msg(test_forward_run(t.fwd, ids, 16, rows, 16, logits, NULL, 0, 0, &err) == DLLM_OK,
                  "%s", err.text);
    double sum2 = 0;
    for (int64_t i = 0; i < 16 * n_vocab; i++) {
        if (!isfinite(logits[i]))
            ck_abort_msg("logit %lld is %g", (long long)i, logits[i]);
        sum2 += (double)logits[i] * logits[i];
    }
    const double rms = sqrt(sum2 / (double)(16 * n_vocab));
    ck_assert_msg(rms > 0.1 && rms < 10, "logits rms %g", rms);
    free(logits);
    test_forward_free(&t);
    dllm_model_close(m);
    remove_file(path);
}
END_TEST

/* The template renders and encodes a conversation; its control tokens become single ids. */
START_TEST(synth_chat_prompt)
{
    const bool llada = _i == 0;
    struct dllm_synth_params p = preset(llada ? "llada" : "dream", "tiny");
    char *path = synth(&p, "prompt.gguf");
    struct dllm_gguf *g = open_path(path);
    struct dllm_vocab *v;
    struct dllm_chat_template *t;
    struct dllm_error err;
    ck_assert_msg(dllm_vocab_load(g, &v, &err) == DLLM_OK, "%s", err.text);
    ck_assert_msg(dllm_chat_template_load(g, v, &t, &err) == DLLM_OK, "%s", err.text);
    ck_assert_int_eq(dllm_chat_template_format(t), llada ? DLLM_CHAT_LLAMA3 : DLLM_CHAT_CHATML);
    const struct dllm_chat_message msg = {"user", "Hello there"};
    int32_t *ids;
    int64_t n;
    char *rendered, *decoded;
    size_t rlen, dlen;
    ck_assert_int_eq(dllm_chat_render(t, &msg, 1, &rendered, &rlen, &err), DLLM_OK);
    ck_assert_msg(dllm_chat_encode(t, &msg, 1, &ids, &n, &err) == DLLM_OK, "%s", err.text);
    ck_assert_int_eq(dllm_vocab_decode(v, ids, n, DLLM_DECODE_SPECIAL, &decoded, &dlen, &err),
                     DLLM_OK);
    ck_assert_str_eq(decoded, rendered);
    static const char *const llada_controls[] = {"<|startoftext|>",     "<|start_header_id|>",
                                                 "<|end_header_id|>",   "<|eot_id|>",
                                                 "<|start_header_id|>", "<|end_header_id|>"};
    static const char *const dream_controls[] = {"<|im_start|>", "<|im_end|>", "<|im_start|>",
                                                 "<|im_end|>", "<|im_start|>"};
    const char *const *controls = llada ? llada_controls : dream_controls;
    const int n_controls = llada ? 6 : 5;
    int k = 0;
    for (int64_t i = 0; i < n; i++) {
        if (dllm_vocab_token_type(v, ids[i]) != DLLM_TOKEN_TYPE_CONTROL)
            continue;
        ck_assert_int_lt(k, n_controls);
        ck_assert_str_eq(dllm_vocab_token_text(v, ids[i], NULL), controls[k++]);
    }
    ck_assert_int_eq(k, n_controls);
    if (llada)
        ck_assert_int_eq(ids[0], dllm_vocab_special(v, DLLM_SPECIAL_BOS));
    free(ids);
    free(rendered);
    free(decoded);
    dllm_chat_template_free(t);
    dllm_vocab_free(v);
    dllm_gguf_close(g);
    remove_file(path);
}
END_TEST

/* Decoded weights: mean near 0 and standard deviation near 1/sqrt(ne0), for every block type. */
START_TEST(synth_weight_scale)
{
    static const enum dllm_synth_type types[] = {DLLM_SYNTH_Q4_K_M, DLLM_SYNTH_Q5_K_M,
                                                 DLLM_SYNTH_Q6_K, DLLM_SYNTH_Q8_0, DLLM_SYNTH_F16};
    static const char *const names[] = {"blk.0.attn_q.weight", "blk.1.ffn_down.weight",
                                        "blk.0.ffn_down.weight", "output.weight"};
    struct dllm_synth_params p = preset("llada", "tiny");
    p.type = types[_i];
    char *path = synth(&p, "scale.gguf");
    struct dllm_gguf *g = open_path(path);
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        const struct dllm_gguf_tensor *t = dllm_gguf_find_tensor(g, names[k]);
        const int64_t n = t->ne[0] * t->ne[1];
        float *x = malloc((size_t)n * sizeof *x);
        struct dllm_error err;
        ck_assert_int_eq(dllm_gguf_tensor_decode(t, 0, n, x, &err), DLLM_OK);
        double s = 0, s2 = 0;
        for (int64_t i = 0; i < n; i++) {
            s += x[i];
            s2 += (double)x[i] * x[i];
        }
        const double mean = s / (double)n, sd = sqrt(s2 / (double)n - mean * mean);
        const double sigma = 1 / sqrt((double)t->ne[0]);
        ck_assert_msg(fabs(mean) < 0.05 * sigma && sd > 0.8 * sigma && sd < 1.25 * sigma,
                      "%s %s: mean %g, sd %g, want about 0 and %g", dllm_type_name(t->type),
                      names[k], mean, sd, sigma);
        free(x);
    }
    dllm_gguf_close(g);
    remove_file(path);
}
END_TEST

/* The same seed gives the same bytes; another seed the same header and other weights. */
START_TEST(synth_seed)
{
    struct dllm_synth_params p = preset("dream", "tiny");
    p.seed = 42;
    char *a = synth(&p, "a.gguf"), *b = synth(&p, "b.gguf");
    p.seed = 43;
    char *c = synth(&p, "c.gguf");
    size_t na, nb, nc;
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb"), *fc = fopen(c, "rb");
    static char ba[2 << 20], bb[2 << 20], bc[2 << 20];
    na = fread(ba, 1, sizeof ba, fa);
    nb = fread(bb, 1, sizeof bb, fb);
    nc = fread(bc, 1, sizeof bc, fc);
    fclose(fa);
    fclose(fb);
    fclose(fc);
    ck_assert(na == nb && nb == nc && na < sizeof ba);
    ck_assert(memcmp(ba, bb, na) == 0);
    struct dllm_gguf *g = open_path(a);
    const size_t header = dllm_gguf_data_offset(g);
    dllm_gguf_close(g);
    ck_assert(memcmp(ba, bc, header) == 0);
    ck_assert(memcmp(ba + header, bc + header, na - header) != 0);
    remove_file(a);
    remove_file(b);
    remove_file(c);
}
END_TEST

struct progress_log {
    int calls, cancel_at; /* cancel_at: set the flag at that call */
    uint64_t last_done, last_total;
    bool monotonic;
    atomic_bool cancel;
};

static void log_progress(const struct dllm_progress *p, void *user)
{
    struct progress_log *l = user;
    const uint64_t done = (uint64_t)p->done, total = (uint64_t)p->total;
    l->monotonic &= p->kind == DLLM_PROGRESS_SYNTH && done >= l->last_done && done <= total &&
                    (!l->calls || total == l->last_total);
    l->last_done = done;
    l->last_total = total;
    if (++l->calls == l->cancel_at)
        atomic_store(&l->cancel, true);
}

/* Progress counts up to the data section's size; a cancel leaves no file behind. */
START_TEST(synth_progress_cancel)
{
    struct dllm_synth_params p = preset("llada", "tiny");
    char *path = join(synth_dir, "p.gguf");
    struct dllm_error err;
    struct progress_log l = {.monotonic = true};
    p.progress = log_progress;
    p.progress_user = &l;
    ck_assert_int_eq(dllm_synth_write(path, &p, &err), DLLM_OK);
    ck_assert(l.monotonic && l.calls > 3);
    struct dllm_gguf *g = open_path(path);
    struct stat sb;
    ck_assert(stat(path, &sb) == 0);
    ck_assert_uint_eq(l.last_done, l.last_total);
    ck_assert_uint_eq(l.last_total, (uint64_t)sb.st_size - dllm_gguf_data_offset(g));
    dllm_gguf_close(g);
    unlink(path);
    struct progress_log c = {.monotonic = true, .cancel_at = 3};
    p.progress_user = &c;
    p.cancel = &c.cancel;
    ck_assert_int_eq(dllm_synth_write(path, &p, &err), DLLM_ERR_CANCELLED);
    ck_assert_int_eq(c.calls, 3);
    ck_assert(!exists(path) && !tmp_exists(path));
    free(path);
}
END_TEST

/* Parameters that cannot make a model, and the message naming the values. */
static const struct {
    const char *arch, *preset;
    int field; /* 0 none, 1 n_layer, 2 n_embd, 3 n_head, 4 n_head_kv, 5 n_ff, 6 n_vocab, 7 type,
                  8 n_expert, 9 n_expert_used, 10 n_ff_exp */
    int64_t value;
    const char *message;
} param_errors[] = {
    {"gpt2", "tiny", 0, 0,
     "unknown architecture 'gpt2' (synthetic models: llada, dream, llada-moe, rnd1)"},
    {"llada", "7b", 0, 0, "unknown llada preset '7b' (presets: 8b, tiny)"},
    {"dream", "8b", 0, 0, "unknown dream preset '8b' (presets: 7b, tiny)"},
    {"llada", "tiny", 1, 0, "0 layers: from 1 to 4096"},
    {"llada", "tiny", 2, 300, "d_model 300 must be a multiple of 256 for Q4_K_M, at most 2^20"},
    {"dream", "tiny", 5, 1000, "ffn size 1000 must be a multiple of 256 for Q4_K_M, at most 2^20"},
    {"llada", "tiny", 3, 3, "3 heads must divide d_model 256 into heads of an even size"},
    {"llada", "tiny", 3, 256, "256 heads must divide d_model 256 into heads of an even size"},
    {"dream", "tiny", 4, 3, "3 KV heads must divide 4 heads"},
    {"llada", "tiny", 6, 647,
     "vocabulary of 647 tokens: llada needs at least 648 (264 byte and merge tokens, then its "
     "special tokens)"},
    {"dream", "tiny", 6, 684,
     "vocabulary of 684 tokens: dream needs at least 685 (264 byte and merge tokens, then its "
     "special tokens)"},
    {"dream", "tiny", 7, 99, "unknown type mix 99 (Q4_K_M, Q5_K_M, Q6_K, Q8_0 or F16)"},
    {"rnd1", "8b", 0, 0, "unknown rnd1 preset '8b' (presets: 30b-a3b, tiny)"},
    {"llada-moe", "tiny", 8, 1, "1 experts, 2 used: from 2 to 512 experts, 1 to all of them used"},
    {"llada-moe", "tiny", 9, 9, "8 experts, 9 used: from 2 to 512 experts, 1 to all of them used"},
    {"rnd1", "tiny", 10, 100, "expert ffn size 100 must be a multiple of 32, at most 2^20"},
};
#define N_PARAM_ERRORS (int)(sizeof param_errors / sizeof param_errors[0])

START_TEST(synth_param_errors)
{
    struct dllm_synth_params p;
    struct dllm_error err = {0};
    enum dllm_status st =
        dllm_synth_params_init(&p, param_errors[_i].arch, param_errors[_i].preset, &err);
    if (st == DLLM_OK) {
        const int64_t v = param_errors[_i].value;
        switch (param_errors[_i].field) {
        case 1: p.n_layer = v; break;
        case 2: p.n_embd = v; break;
        case 3: p.n_head = v; break;
        case 4: p.n_head_kv = v; break;
        case 5: p.n_ff = v; break;
        case 6: p.n_vocab = v; break;
        case 7: p.type = (enum dllm_synth_type)v; break;
        case 8: p.n_expert = v; break;
        case 9: p.n_expert_used = v; break;
        case 10: p.n_ff_exp = v; break;
        }
        st = dllm_synth_params_check(&p, &err);
        ck_assert_int_eq(st, DLLM_ERR_ARG);
        ck_assert_int_eq(dllm_synth_write("/nonexistent-dllm-dir/x.gguf", &p, &err),
                         DLLM_ERR_ARG); /* checked before anything is created */
    }
    ck_assert_int_eq(st, DLLM_ERR_ARG);
    ck_assert_str_eq(err.text, param_errors[_i].message);
}
END_TEST

START_TEST(synth_type_names)
{
    enum dllm_synth_type t;
    ck_assert(dllm_synth_type_parse("q4_k_m", &t) && t == DLLM_SYNTH_Q4_K_M);
    ck_assert(dllm_synth_type_parse("Q8_0", &t) && t == DLLM_SYNTH_Q8_0);
    ck_assert(dllm_synth_type_parse("f16", &t) && t == DLLM_SYNTH_F16);
    ck_assert(!dllm_synth_type_parse("Q4_K", &t));
    ck_assert_str_eq(dllm_synth_type_name(DLLM_SYNTH_Q5_K_M), "Q5_K_M");
    ck_assert_ptr_null(dllm_synth_type_name((enum dllm_synth_type)3));
    struct dllm_synth_params p = preset("dream", "7b");
    ck_assert(p.n_layer == 28 && p.n_embd == 3584 && p.n_head == 28 && p.n_head_kv == 4 &&
              p.n_ff == 18944 && p.n_vocab == 152064 && p.n_ctx == 131072);
    p = preset("llada", "8b");
    ck_assert(p.n_layer == 32 && p.n_embd == 4096 && p.n_head == 32 && p.n_head_kv == 32 &&
              p.n_ff == 12288 && p.n_vocab == 126464 && p.n_ctx == 4096);
    ck_assert_int_eq(p.type, DLLM_SYNTH_Q4_K_M);
}
END_TEST

static Suite *synth_suite(void)
{
    Suite *s = suite_create("synth");
    TCase *tc = tcase_create("writer");
    tcase_add_test(tc, writer_values);
    tcase_add_test(tc, writer_nested_copy);
    tcase_add_test(tc, writer_tensors);
    tcase_add_loop_test(tc, writer_error_cases, 0, N_WRITER_ERRORS);
    tcase_add_test(tc, writer_temp_file);
    tcase_add_test(tc, writer_full_disk);
    tcase_add_test(tc, writer_bad_paths);
    suite_add_tcase(s, tc);
    tc = tcase_create("models");
    tcase_add_checked_fixture(tc, synth_setup, synth_teardown);
    tcase_add_loop_test(tc, synth_matches_fixture, 0, N_TWINS);
    tcase_add_loop_test(tc, synth_type_mix, 0, 2);
    tcase_add_loop_test(tc, synth_chat_template, 0, 2);
    tcase_add_loop_test(tc, synth_special_ids, 0, N_SPECIAL_CASES);
    tcase_add_loop_test(tc, synth_forward, 0, 4);
    tcase_add_loop_test(tc, synth_chat_prompt, 0, 2);
    tcase_add_loop_test(tc, synth_weight_scale, 0, 5);
    tcase_add_test(tc, synth_seed);
    tcase_add_test(tc, synth_progress_cancel);
    suite_add_tcase(s, tc);
    tc = tcase_create("params");
    tcase_add_loop_test(tc, synth_param_errors, 0, N_PARAM_ERRORS);
    tcase_add_test(tc, synth_type_names);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    fixtures_dir(); /* SKIP (or fail under CI) before forking when the fixtures are absent */
    return test_run_suite(synth_suite());
}
