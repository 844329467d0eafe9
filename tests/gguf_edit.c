#include "gguf_edit.h"

#include "dllm.h"
#include "gguf_write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    struct dllm_gguf_writer *w; /* holds the keys; the tensors are added when serialising */
    struct tensor *tensors;
    size_t n_tensors;
};

/* Aborts with the writer's message unless st is DLLM_OK (the inputs are fixtures). */
static void check(enum dllm_status st, const struct dllm_error *err, const char *what)
{
    if (st != DLLM_OK) {
        fprintf(stderr, "gguf_edit %s: %s\n", what, err->text);
        abort();
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
    check(dllm_gguf_writer_new(&e->w, &err), &err, path);
    check(dllm_gguf_writer_set_alignment(e->w, dllm_gguf_alignment(e->src), &err), &err, path);
    for (int64_t i = 0; i < dllm_gguf_n_kv(e->src); i++)
        check(dllm_gguf_writer_set(e->w, dllm_gguf_kv_key(e->src, i), dllm_gguf_kv_value(e->src, i),
                                   &err),
              &err, path);
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
    for (size_t i = 0; i < e->n_tensors; i++)
        free(e->tensors[i].name);
    free(e->tensors);
    dllm_gguf_writer_free(e->w);
    dllm_gguf_close(e->src);
    free(e);
}

void gguf_edit_remove(struct gguf_edit *e, const char *key)
{
    dllm_gguf_writer_remove(e->w, key);
}

void gguf_edit_set_u32(struct gguf_edit *e, const char *key, uint32_t v)
{
    struct dllm_error err;
    check(dllm_gguf_writer_set_u32(e->w, key, v, &err), &err, key);
}

void gguf_edit_set_i32(struct gguf_edit *e, const char *key, int32_t v)
{
    struct dllm_error err;
    check(dllm_gguf_writer_set_i32(e->w, key, v, &err), &err, key);
}

void gguf_edit_set_f32(struct gguf_edit *e, const char *key, float v)
{
    struct dllm_error err;
    check(dllm_gguf_writer_set_f32(e->w, key, v, &err), &err, key);
}

void gguf_edit_set_bool(struct gguf_edit *e, const char *key, bool v)
{
    struct dllm_error err;
    check(dllm_gguf_writer_set_bool(e->w, key, v, &err), &err, key);
}

void gguf_edit_set_str(struct gguf_edit *e, const char *key, const char *v)
{
    struct dllm_error err;
    check(dllm_gguf_writer_set_str(e->w, key, v, &err), &err, key);
}

void gguf_edit_set_str_array(struct gguf_edit *e, const char *key, const char *const *v, size_t n)
{
    struct dllm_error err;
    check(dllm_gguf_writer_set_str_array(e->w, key, v, n, &err), &err, key);
}

void gguf_edit_set_i32_array(struct gguf_edit *e, const char *key, const int32_t *v, size_t n)
{
    struct dllm_error err;
    check(dllm_gguf_writer_set_array(e->w, key, DLLM_GGUF_INT32, v, n, &err), &err, key);
}

void gguf_edit_set_raw(struct gguf_edit *e, const char *key, const void *bytes, size_t n)
{
    struct dllm_error err;
    check(dllm_gguf_writer_set_raw(e->w, key, bytes, n, &err), &err, key);
}

size_t gguf_edit_nested_raw(uint8_t raw[64])
{
    size_t n = 0;
    const uint32_t t_array = DLLM_GGUF_ARRAY, t_str = DLLM_GGUF_STRING;
    const uint64_t two = 2, one = 1, len = 3;
    memcpy(raw + n, &t_array, 4), n += 4;
    memcpy(raw + n, &t_array, 4), n += 4;
    memcpy(raw + n, &two, 8), n += 8;
    for (int k = 0; k < 2; k++) {
        memcpy(raw + n, &t_str, 4), n += 4;
        memcpy(raw + n, &one, 8), n += 8;
        memcpy(raw + n, &len, 8), n += 8;
        memcpy(raw + n, k ? "xyz" : "abc", 3), n += 3;
    }
    return n;
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

/* The positions the writer recorded, as a struct gguf_layout. */
static void record_layout(const struct dllm_gguf_writer *w, struct gguf_layout *l)
{
    l->n_kv = dllm_gguf_writer_n_kv(w);
    l->n_tensors = dllm_gguf_writer_n_tensors(w);
    l->kv_key = calloc(l->n_kv + 1, sizeof(size_t));
    l->kv_type = calloc(l->n_kv + 1, sizeof(size_t));
    l->kv_value = calloc(l->n_kv + 1, sizeof(size_t));
    l->t_name = calloc(l->n_tensors + 1, sizeof(size_t));
    l->t_ndims = calloc(l->n_tensors + 1, sizeof(size_t));
    l->t_dims = calloc(l->n_tensors + 1, sizeof(size_t));
    l->t_type = calloc(l->n_tensors + 1, sizeof(size_t));
    l->t_offset = calloc(l->n_tensors + 1, sizeof(size_t));
    for (size_t i = 0; i < l->n_kv; i++) {
        const struct dllm_gguf_kv_pos *p = dllm_gguf_writer_kv_pos(w, i);
        l->kv_key[i] = p->key;
        l->kv_type[i] = p->type;
        l->kv_value[i] = p->value;
    }
    for (size_t i = 0; i < l->n_tensors; i++) {
        const struct dllm_gguf_tensor_pos *p = dllm_gguf_writer_tensor_pos(w, i);
        l->t_name[i] = p->name;
        l->t_ndims[i] = p->n_dims;
        l->t_dims[i] = p->dims;
        l->t_type[i] = p->type;
        l->t_offset[i] = p->offset;
    }
    l->data = dllm_gguf_writer_data_offset(w);
}

/*
 * Serialises the edit to path, or to a memory image (path NULL). Each tensor keeps its
 * original data, cut or padded with zeros to what its recorded type and shape call for.
 */
static void serialise(struct gguf_edit *e, const char *path, void **image, size_t *size,
                      struct gguf_layout *layout)
{
    struct dllm_error err;
    const char *what = path ? path : "build";
    for (size_t i = 0; i < e->n_tensors; i++) {
        const struct tensor *t = &e->tensors[i];
        check(dllm_gguf_writer_add_tensor(e->w, t->name, t->type, t->n_dims, t->ne, &err), &err,
              what);
    }
    check(dllm_gguf_writer_begin(e->w, path, &err), &err, what);
    if (layout)
        record_layout(e->w, layout);
    for (size_t i = 0; i < e->n_tensors; i++) {
        const struct tensor *t = &e->tensors[i];
        size_t n = (size_t)dllm_gguf_writer_tensor_size(e->w, i), have = n < t->size ? n : t->size;
        check(dllm_gguf_writer_write(e->w, t->data, have, &err), &err, what);
        check(dllm_gguf_writer_write(e->w, NULL, n - have, &err), &err, what);
    }
    check(dllm_gguf_writer_finish(e->w, image, size, &err), &err, what);
}

void *gguf_edit_build(struct gguf_edit *e, size_t *size, struct gguf_layout *layout)
{
    void *image;
    serialise(e, NULL, &image, size, layout);
    return image;
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
    size_t n = strlen(dir) + strlen(name) + 2;
    char *path = malloc(n);
    snprintf(path, n, "%s/%s", dir, name);
    serialise(e, path, NULL, NULL, NULL);
    return path;
}
