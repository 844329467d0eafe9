#include "gguf_edit.h"

#include "dllm.h"
#include "quant.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growable byte buffer. */
struct buf {
    uint8_t *p;
    size_t len, cap;
};

static void put(struct buf *b, const void *src, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        if (!b->p)
            abort();
    }
    if (n)
        memcpy(b->p + b->len, src, n);
    b->len += n;
}

static void put_u32(struct buf *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(struct buf *b, uint64_t v) { put(b, &v, 8); }

static void put_str(struct buf *b, const char *s, uint64_t len)
{
    put_u64(b, len);
    put(b, s, len);
}

struct kv {
    char *key;
    struct buf value; /* type id followed by the value, as in the file */
};

struct tensor {
    char *name;
    int n_dims;
    int64_t ne[4];
    uint32_t type;
    const void *data;
    size_t size;
};

struct gguf_edit {
    struct dllm_gguf *src;
    uint32_t version;
    size_t alignment;
    struct kv *kvs;
    size_t n_kv;
    struct tensor *tensors;
    size_t n_tensors;
};

/* Appends a value (without its type id) as the file stores it. */
static void put_value(struct buf *b, const struct dllm_gguf_value *v)
{
    static const size_t width[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    switch (v->type) {
    case DLLM_GGUF_STRING: put_str(b, v->str.ptr, v->str.len); return;
    case DLLM_GGUF_ARRAY:
        put_u32(b, v->arr.type);
        put_u64(b, v->arr.n);
        for (uint64_t i = 0; i < v->arr.n; i++) {
            struct dllm_gguf_value e;
            dllm_gguf_array_get(v, i, &e);
            put_value(b, &e);
        }
        return;
    case DLLM_GGUF_FLOAT32: { float f = (float)v->f64; put(b, &f, 4); return; }
    case DLLM_GGUF_FLOAT64: put(b, &v->f64, 8); return;
    case DLLM_GGUF_BOOL: { uint8_t x = v->b; put(b, &x, 1); return; }
    case DLLM_GGUF_INT8: case DLLM_GGUF_INT16: case DLLM_GGUF_INT32: case DLLM_GGUF_INT64:
        put(b, &v->i64, width[v->type]); /* little-endian: the low bytes come first */
        return;
    default: put(b, &v->u64, width[v->type]); return;
    }
}

struct gguf_edit *gguf_edit_load(const char *path)
{
    struct gguf_edit *e = calloc(1, sizeof *e);
    struct dllm_error err;
    if (!e || dllm_gguf_open(path, &e->src, &err) != DLLM_OK) {
        fprintf(stderr, "gguf_edit_load %s: %s\n", path, e ? err.text : "oom");
        abort();
    }
    e->version = dllm_gguf_version(e->src);
    e->alignment = dllm_gguf_alignment(e->src);
    e->n_kv = (size_t)dllm_gguf_n_kv(e->src);
    e->kvs = calloc(e->n_kv + 1, sizeof *e->kvs);
    for (size_t i = 0; i < e->n_kv; i++) {
        const struct dllm_gguf_value *v = dllm_gguf_kv_value(e->src, (int64_t)i);
        e->kvs[i].key = strdup(dllm_gguf_kv_key(e->src, (int64_t)i));
        put_u32(&e->kvs[i].value, v->type);
        put_value(&e->kvs[i].value, v);
    }
    e->n_tensors = (size_t)dllm_gguf_n_tensors(e->src);
    e->tensors = calloc(e->n_tensors + 1, sizeof *e->tensors);
    for (size_t i = 0; i < e->n_tensors; i++) {
        const struct dllm_gguf_tensor *t = dllm_gguf_tensor(e->src, (int64_t)i);
        struct tensor *d = &e->tensors[i];
        d->name = strdup(t->name);
        d->n_dims = t->n_dims;
        memcpy(d->ne, t->ne, sizeof d->ne);
        d->type = t->type;
        d->data = t->data;
        d->size = t->size;
    }
    return e;
}

void gguf_edit_free(struct gguf_edit *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->n_kv; i++) {
        free(e->kvs[i].key);
        free(e->kvs[i].value.p);
    }
    for (size_t i = 0; i < e->n_tensors; i++)
        free(e->tensors[i].name);
    free(e->kvs);
    free(e->tensors);
    dllm_gguf_close(e->src);
    free(e);
}

void gguf_edit_remove(struct gguf_edit *e, const char *key)
{
    for (size_t i = 0; i < e->n_kv; i++) {
        if (strcmp(e->kvs[i].key, key) == 0) {
            free(e->kvs[i].key);
            free(e->kvs[i].value.p);
            memmove(&e->kvs[i], &e->kvs[i + 1], (e->n_kv - i - 1) * sizeof *e->kvs);
            e->n_kv--;
            return;
        }
    }
}

/* The value buffer of a key, emptied, created at the end when absent. */
static struct buf *slot(struct gguf_edit *e, const char *key)
{
    for (size_t i = 0; i < e->n_kv; i++) {
        if (strcmp(e->kvs[i].key, key) == 0) {
            e->kvs[i].value.len = 0;
            return &e->kvs[i].value;
        }
    }
    e->kvs = realloc(e->kvs, (e->n_kv + 1) * sizeof *e->kvs);
    e->kvs[e->n_kv] = (struct kv){strdup(key), {0}};
    return &e->kvs[e->n_kv++].value;
}

void gguf_edit_set_u32(struct gguf_edit *e, const char *key, uint32_t v)
{
    struct buf *b = slot(e, key);
    put_u32(b, DLLM_GGUF_UINT32);
    put_u32(b, v);
}

void gguf_edit_set_i32(struct gguf_edit *e, const char *key, int32_t v)
{
    struct buf *b = slot(e, key);
    put_u32(b, DLLM_GGUF_INT32);
    put(b, &v, 4);
}

void gguf_edit_set_f32(struct gguf_edit *e, const char *key, float v)
{
    struct buf *b = slot(e, key);
    put_u32(b, DLLM_GGUF_FLOAT32);
    put(b, &v, 4);
}

void gguf_edit_set_bool(struct gguf_edit *e, const char *key, bool v)
{
    struct buf *b = slot(e, key);
    uint8_t x = v;
    put_u32(b, DLLM_GGUF_BOOL);
    put(b, &x, 1);
}

void gguf_edit_set_str(struct gguf_edit *e, const char *key, const char *v)
{
    struct buf *b = slot(e, key);
    put_u32(b, DLLM_GGUF_STRING);
    put_str(b, v, strlen(v));
}

void gguf_edit_set_str_array(struct gguf_edit *e, const char *key, const char *const *v, size_t n)
{
    struct buf *b = slot(e, key);
    put_u32(b, DLLM_GGUF_ARRAY);
    put_u32(b, DLLM_GGUF_STRING);
    put_u64(b, n);
    for (size_t i = 0; i < n; i++)
        put_str(b, v[i], strlen(v[i]));
}

void gguf_edit_set_i32_array(struct gguf_edit *e, const char *key, const int32_t *v, size_t n)
{
    struct buf *b = slot(e, key);
    put_u32(b, DLLM_GGUF_ARRAY);
    put_u32(b, DLLM_GGUF_INT32);
    put_u64(b, n);
    put(b, v, 4 * n);
}

void gguf_edit_set_raw(struct gguf_edit *e, const char *key, const void *bytes, size_t n)
{
    put(slot(e, key), bytes, n);
}

static struct tensor *find_tensor(struct gguf_edit *e, const char *name)
{
    for (size_t i = 0; i < e->n_tensors; i++)
        if (strcmp(e->tensors[i].name, name) == 0)
            return &e->tensors[i];
    fprintf(stderr, "gguf_edit: no tensor %s\n", name);
    abort();
}

void gguf_edit_rename_tensor(struct gguf_edit *e, const char *name, const char *new_name)
{
    struct tensor *t = find_tensor(e, name);
    free(t->name);
    t->name = strdup(new_name);
}

void gguf_edit_set_tensor_shape(struct gguf_edit *e, const char *name, int n_dims,
                                const int64_t *ne)
{
    struct tensor *t = find_tensor(e, name);
    t->n_dims = n_dims;
    for (int d = 0; d < 4; d++)
        t->ne[d] = d < n_dims ? ne[d] : 1;
}

void gguf_edit_set_tensor_type(struct gguf_edit *e, const char *name, uint32_t type)
{
    find_tensor(e, name)->type = type;
}

void gguf_edit_remove_tensor(struct gguf_edit *e, const char *name)
{
    struct tensor *t = find_tensor(e, name);
    free(t->name);
    size_t i = (size_t)(t - e->tensors);
    memmove(t, t + 1, (e->n_tensors - i - 1) * sizeof *t);
    e->n_tensors--;
}

/* Bytes a tensor's recorded type and shape call for (its original size if unknown). */
static size_t tensor_bytes(const struct tensor *t)
{
    const struct dllm_type_traits *tr = dllm_type_traits(t->type);
    if (!tr || t->ne[0] % tr->block_elems)
        return t->size;
    int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
    return (size_t)(n / tr->block_elems) * tr->block_bytes;
}

void *gguf_edit_build(struct gguf_edit *e, size_t *size, struct gguf_layout *layout)
{
    struct buf b = {0};
    struct gguf_layout l = {0};
    l.n_kv = e->n_kv;
    l.n_tensors = e->n_tensors;
    l.kv_key = calloc(e->n_kv + 1, sizeof(size_t));
    l.kv_type = calloc(e->n_kv + 1, sizeof(size_t));
    l.kv_value = calloc(e->n_kv + 1, sizeof(size_t));
    l.t_name = calloc(e->n_tensors + 1, sizeof(size_t));
    l.t_ndims = calloc(e->n_tensors + 1, sizeof(size_t));
    l.t_dims = calloc(e->n_tensors + 1, sizeof(size_t));
    l.t_type = calloc(e->n_tensors + 1, sizeof(size_t));
    l.t_offset = calloc(e->n_tensors + 1, sizeof(size_t));
    put(&b, "GGUF", 4);
    put_u32(&b, e->version);
    put_u64(&b, e->n_tensors);
    put_u64(&b, e->n_kv);
    for (size_t i = 0; i < e->n_kv; i++) {
        l.kv_key[i] = b.len;
        put_str(&b, e->kvs[i].key, strlen(e->kvs[i].key));
        l.kv_type[i] = b.len;
        l.kv_value[i] = b.len + 4;
        put(&b, e->kvs[i].value.p, e->kvs[i].value.len);
    }
    size_t *offsets = calloc(e->n_tensors + 1, sizeof *offsets);
    size_t data_len = 0;
    for (size_t i = 0; i < e->n_tensors; i++) {
        const struct tensor *t = &e->tensors[i];
        offsets[i] = data_len;
        size_t n = tensor_bytes(t);
        data_len += (n + e->alignment - 1) / e->alignment * e->alignment;
        l.t_name[i] = b.len;
        put_str(&b, t->name, strlen(t->name));
        l.t_ndims[i] = b.len;
        put_u32(&b, (uint32_t)t->n_dims);
        l.t_dims[i] = b.len;
        for (int d = 0; d < t->n_dims; d++)
            put_u64(&b, (uint64_t)t->ne[d]);
        l.t_type[i] = b.len;
        put_u32(&b, t->type);
        l.t_offset[i] = b.len;
        put_u64(&b, offsets[i]);
    }
    static const uint8_t zeros[256];
    while (b.len % e->alignment)
        put(&b, zeros, 1);
    l.data = b.len;
    for (size_t i = 0; i < e->n_tensors; i++) {
        const struct tensor *t = &e->tensors[i];
        size_t n = tensor_bytes(t), have = n < t->size ? n : t->size;
        put(&b, t->data, have);
        for (size_t k = have; k < n; k += sizeof zeros)
            put(&b, zeros, n - k < sizeof zeros ? n - k : sizeof zeros);
        while ((b.len - l.data) % e->alignment)
            put(&b, zeros, 1);
    }
    free(offsets);
    if (layout)
        *layout = l;
    else
        gguf_layout_free(&l);
    *size = b.len;
    return b.p;
}

void gguf_layout_free(struct gguf_layout *l)
{
    free(l->kv_key);
    free(l->kv_type);
    free(l->kv_value);
    free(l->t_name);
    free(l->t_ndims);
    free(l->t_dims);
    free(l->t_type);
    free(l->t_offset);
}

char *gguf_edit_save(struct gguf_edit *e, const char *dir, const char *name)
{
    size_t size;
    void *img = gguf_edit_build(e, &size, NULL);
    size_t n = strlen(dir) + strlen(name) + 2;
    char *path = malloc(n);
    snprintf(path, n, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(img, 1, size, f) != size || fclose(f) != 0) {
        fprintf(stderr, "gguf_edit_save %s failed\n", path);
        abort();
    }
    free(img);
    return path;
}
