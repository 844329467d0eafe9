/*
 * GGUF writer (see gguf_write.h): keys and tensor infos are kept encoded in memory, the header
 * is written in one go, and tensor data then streams through a buffered stream to the file or
 * to a memory image. Sizes are overflow-checked as they are added.
 */
#define _GNU_SOURCE /* open_memstream */
#include "config.h"

#include "gguf_write.h"

#include "dllm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define GGUF_VERSION      3
#define DEFAULT_ALIGNMENT 32
#define MAX_ALIGNMENT     (1u << 20)
#define FILE_BUFFER       (4u << 20) /* stdio buffer of a file being written */

/* A growable byte buffer; failed records an allocation failure. */
struct bytes {
    uint8_t *p;
    size_t len, cap;
    bool failed;
};

/* A key and its value, encoded as the file stores it: the type id, then the value. */
struct wkv {
    char *key;
    struct bytes value;
};

struct wtensor {
    char *name;
    uint32_t type;
    int n_dims;
    int64_t ne[4];
    uint64_t size;   /* bytes of data, without padding */
    uint64_t offset; /* from the start of the data section */
};

enum wstate {
    W_DEFINE, /* keys and tensors may change */
    W_DATA,   /* the header is written, data follows */
    W_DONE,   /* finished or failed: nothing more can be written */
};

struct dllm_gguf_writer {
    size_t alignment;
    struct wkv *kvs;
    size_t n_kv;
    struct wtensor *tensors;
    size_t n_tensors;
    uint64_t data_size; /* tensor data with padding */

    enum wstate state;
    FILE *f;
    char *path;     /* what is being written: NULL for a memory image */
    char *tmp_path; /* PATH.tmp, renamed to path at the end; NULL when writing in place */
    char *mem;      /* a memory image's buffer (open_memstream) */
    size_t mem_size;
    char *io_buf; /* the stdio buffer of a file */
    struct dllm_gguf_kv_pos *kv_pos;
    struct dllm_gguf_tensor_pos *tensor_pos;
    size_t data_offset;
    size_t cur;        /* the tensor data is being written for */
    uint64_t cur_done; /* bytes of it written */
};

static void put(struct bytes *b, const void *src, size_t n)
{
    if (b->failed)
        return;
    if (n > b->cap - b->len) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap - b->len < n) {
            if (cap > SIZE_MAX / 2) {
                b->failed = true;
                return;
            }
            cap *= 2;
        }
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->failed = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->len, src, n);
    b->len += n;
}

static void put_u32(struct bytes *b, uint32_t v)
{
    put(b, &v, 4);
}

static void put_u64(struct bytes *b, uint64_t v)
{
    put(b, &v, 8);
}

static void put_str(struct bytes *b, const char *s, uint64_t len)
{
    put_u64(b, len);
    put(b, s, len);
}

static bool valid_type(int type)
{
    return type >= 0 && type < DLLM_GGUF_N_TYPES;
}

/* Encodes a value without its type id: little-endian scalars, strings, arrays recursively. */
static enum dllm_status put_value(struct bytes *b, const struct dllm_gguf_value *v,
                                  struct dllm_error *err)
{
    switch (v->type) {
    case DLLM_GGUF_STRING: put_str(b, v->str.ptr, v->str.len); return DLLM_OK;
    case DLLM_GGUF_ARRAY:
        if (!valid_type(v->arr.type))
            return dllm_error_set(err, DLLM_ERR_ARG, "invalid array element type %d",
                                  (int)v->arr.type);
        put_u32(b, v->arr.type);
        put_u64(b, v->arr.n);
        for (uint64_t i = 0; i < v->arr.n; i++) {
            struct dllm_gguf_value e;
            dllm_gguf_array_get(v, i, &e);
            enum dllm_status st = put_value(b, &e, err);
            if (st)
                return st;
        }
        return DLLM_OK;
    case DLLM_GGUF_FLOAT32: {
        float f = (float)v->f64;
        put(b, &f, 4);
        return DLLM_OK;
    }
    case DLLM_GGUF_FLOAT64: put(b, &v->f64, 8); return DLLM_OK;
    case DLLM_GGUF_BOOL: {
        uint8_t x = v->b;
        put(b, &x, 1);
        return DLLM_OK;
    }
    case DLLM_GGUF_INT8:
    case DLLM_GGUF_INT16:
    case DLLM_GGUF_INT32:
    case DLLM_GGUF_INT64:
        /* little-endian: the low bytes come first */
        put(b, &v->i64, dllm_gguf_value_size(v->type));
        return DLLM_OK;
    case DLLM_GGUF_UINT8:
    case DLLM_GGUF_UINT16:
    case DLLM_GGUF_UINT32:
    case DLLM_GGUF_UINT64: put(b, &v->u64, dllm_gguf_value_size(v->type)); return DLLM_OK;
    }
    return dllm_error_set(err, DLLM_ERR_ARG, "invalid value type %d", (int)v->type);
}

enum dllm_status dllm_gguf_writer_new(struct dllm_gguf_writer **out, struct dllm_error *err)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory for a GGUF writer");
    (*out)->alignment = DEFAULT_ALIGNMENT;
    return DLLM_OK;
}

/* Closes the output of an unfinished writer and removes its temporary file. */
static void abandon(struct dllm_gguf_writer *w)
{
    if (w->f)
        fclose(w->f);
    w->f = NULL;
    if (w->tmp_path)
        unlink(w->tmp_path);
    free(w->mem);
    w->mem = NULL;
    w->state = W_DONE;
}

void dllm_gguf_writer_free(struct dllm_gguf_writer *w)
{
    if (!w)
        return;
    if (w->state == W_DATA)
        abandon(w);
    for (size_t i = 0; i < w->n_kv; i++) {
        free(w->kvs[i].key);
        free(w->kvs[i].value.p);
    }
    for (size_t i = 0; i < w->n_tensors; i++)
        free(w->tensors[i].name);
    free(w->kvs);
    free(w->tensors);
    free(w->path);
    free(w->tmp_path);
    free(w->mem);
    free(w->io_buf);
    free(w->kv_pos);
    free(w->tensor_pos);
    free(w);
}

static enum dllm_status not_defining(const struct dllm_gguf_writer *w, struct dllm_error *err)
{
    if (w->state != W_DEFINE)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "GGUF writer: keys and tensors cannot change once writing began");
    return DLLM_OK;
}

enum dllm_status dllm_gguf_writer_set_alignment(struct dllm_gguf_writer *w, size_t alignment,
                                                struct dllm_error *err)
{
    enum dllm_status st = not_defining(w, err);
    if (st)
        return st;
    if (alignment == 0 || alignment > MAX_ALIGNMENT || (alignment & (alignment - 1)))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "GGUF alignment %zu is not a power of two from 1 to %u", alignment,
                              MAX_ALIGNMENT);
    if (w->n_tensors)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "GGUF writer: set the alignment before adding tensors");
    w->alignment = alignment;
    return DLLM_OK;
}

/*
 * The value buffer of a key, emptied: the existing key's, or a new key's at the end. NULL
 * when out of memory.
 */
static struct bytes *slot(struct dllm_gguf_writer *w, const char *key)
{
    for (size_t i = 0; i < w->n_kv; i++) {
        if (strcmp(w->kvs[i].key, key) == 0) {
            w->kvs[i].value.len = 0;
            w->kvs[i].value.failed = false;
            return &w->kvs[i].value;
        }
    }
    struct wkv *kvs = realloc(w->kvs, (w->n_kv + 1) * sizeof *kvs);
    if (!kvs)
        return NULL;
    w->kvs = kvs;
    char *copy = strdup(key);
    if (!copy)
        return NULL;
    w->kvs[w->n_kv] = (struct wkv){copy, {0}};
    return &w->kvs[w->n_kv++].value;
}

/* A key's value buffer, emptied, after checking that keys may change and the key is valid. */
static enum dllm_status open_slot(struct dllm_gguf_writer *w, const char *key, struct bytes **out,
                                  struct dllm_error *err)
{
    enum dllm_status st = not_defining(w, err);
    if (st)
        return st;
    if (!key || !*key)
        return dllm_error_set(err, DLLM_ERR_ARG, "GGUF keys must not be empty");
    *out = slot(w, key);
    if (!*out)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory for GGUF key %s", key);
    return DLLM_OK;
}

/* Finishes setting a key: an encoding that failed leaves the key out. */
static enum dllm_status close_slot(struct dllm_gguf_writer *w, const char *key, struct bytes *b,
                                   enum dllm_status st, struct dllm_error *err)
{
    if (st == DLLM_OK && b->failed)
        st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory for GGUF key %s", key);
    if (st)
        dllm_gguf_writer_remove(w, key);
    return st;
}

enum dllm_status dllm_gguf_writer_set(struct dllm_gguf_writer *w, const char *key,
                                      const struct dllm_gguf_value *value, struct dllm_error *err)
{
    struct bytes *b;
    enum dllm_status st = open_slot(w, key, &b, err);
    if (st)
        return st;
    if (!valid_type(value->type)) {
        st = dllm_error_set(err, DLLM_ERR_ARG, "invalid value type %d for GGUF key %s",
                            (int)value->type, key);
    } else {
        put_u32(b, value->type);
        st = put_value(b, value, err);
    }
    return close_slot(w, key, b, st, err);
}

enum dllm_status dllm_gguf_writer_set_u32(struct dllm_gguf_writer *w, const char *key, uint32_t v,
                                          struct dllm_error *err)
{
    struct dllm_gguf_value value = {.type = DLLM_GGUF_UINT32, .u64 = v};
    return dllm_gguf_writer_set(w, key, &value, err);
}

enum dllm_status dllm_gguf_writer_set_i32(struct dllm_gguf_writer *w, const char *key, int32_t v,
                                          struct dllm_error *err)
{
    struct dllm_gguf_value value = {.type = DLLM_GGUF_INT32, .i64 = v};
    return dllm_gguf_writer_set(w, key, &value, err);
}

enum dllm_status dllm_gguf_writer_set_f32(struct dllm_gguf_writer *w, const char *key, float v,
                                          struct dllm_error *err)
{
    struct dllm_gguf_value value = {.type = DLLM_GGUF_FLOAT32, .f64 = v};
    return dllm_gguf_writer_set(w, key, &value, err);
}

enum dllm_status dllm_gguf_writer_set_bool(struct dllm_gguf_writer *w, const char *key, bool v,
                                           struct dllm_error *err)
{
    struct dllm_gguf_value value = {.type = DLLM_GGUF_BOOL, .b = v};
    return dllm_gguf_writer_set(w, key, &value, err);
}

enum dllm_status dllm_gguf_writer_set_str(struct dllm_gguf_writer *w, const char *key,
                                          const char *v, struct dllm_error *err)
{
    struct dllm_gguf_value value = {.type = DLLM_GGUF_STRING, .str = {v, strlen(v)}};
    return dllm_gguf_writer_set(w, key, &value, err);
}

enum dllm_status dllm_gguf_writer_set_array(struct dllm_gguf_writer *w, const char *key,
                                            enum dllm_gguf_type elem, const void *values,
                                            uint64_t n, struct dllm_error *err)
{
    if (!dllm_gguf_value_size(elem)) /* 0 for strings, arrays and invalid types */
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "GGUF key %s: arrays of %s take dllm_gguf_writer_set_str_array "
                              "or a reader's array",
                              key, dllm_gguf_type_name(elem));
    const size_t width = dllm_gguf_value_size(elem);
    if (n > SIZE_MAX / width)
        return dllm_error_set(err, DLLM_ERR_ARG, "GGUF key %s: array of %llu elements is too long",
                              key, (unsigned long long)n);
    if (elem == DLLM_GGUF_BOOL) {
        for (uint64_t i = 0; i < n; i++)
            if (((const uint8_t *)values)[i] > 1)
                return dllm_error_set(err, DLLM_ERR_ARG,
                                      "GGUF key %s: bool element %llu is %u, not 0 or 1", key,
                                      (unsigned long long)i, ((const uint8_t *)values)[i]);
    }
    struct bytes *b;
    enum dllm_status st = open_slot(w, key, &b, err);
    if (st)
        return st;
    put_u32(b, DLLM_GGUF_ARRAY);
    put_u32(b, elem);
    put_u64(b, n);
    put(b, values, (size_t)n * width);
    return close_slot(w, key, b, DLLM_OK, err);
}

enum dllm_status dllm_gguf_writer_set_str_array(struct dllm_gguf_writer *w, const char *key,
                                                const char *const *values, uint64_t n,
                                                struct dllm_error *err)
{
    struct bytes *b;
    enum dllm_status st = open_slot(w, key, &b, err);
    if (st)
        return st;
    put_u32(b, DLLM_GGUF_ARRAY);
    put_u32(b, DLLM_GGUF_STRING);
    put_u64(b, n);
    for (uint64_t i = 0; i < n; i++)
        put_str(b, values[i], strlen(values[i]));
    return close_slot(w, key, b, DLLM_OK, err);
}

enum dllm_status dllm_gguf_writer_set_raw(struct dllm_gguf_writer *w, const char *key,
                                          const void *bytes, size_t n, struct dllm_error *err)
{
    struct bytes *b;
    enum dllm_status st = open_slot(w, key, &b, err);
    if (st)
        return st;
    put(b, bytes, n);
    return close_slot(w, key, b, DLLM_OK, err);
}

void dllm_gguf_writer_remove(struct dllm_gguf_writer *w, const char *key)
{
    if (w->state != W_DEFINE)
        return;
    for (size_t i = 0; i < w->n_kv; i++) {
        if (strcmp(w->kvs[i].key, key) == 0) {
            free(w->kvs[i].key);
            free(w->kvs[i].value.p);
            memmove(&w->kvs[i], &w->kvs[i + 1], (w->n_kv - i - 1) * sizeof *w->kvs);
            w->n_kv--;
            return;
        }
    }
}

/* n rounded up to a multiple of the alignment a (a power of two); false on overflow. */
static bool align_up(uint64_t n, uint64_t a, uint64_t *out)
{
    if (n > UINT64_MAX - (a - 1))
        return false;
    *out = (n + a - 1) & ~(a - 1);
    return true;
}

/* The data bytes of a tensor of a type and shape, checked; the error names the tensor. */
static enum dllm_status tensor_size(const char *name, uint32_t type, int n_dims, const int64_t *ne,
                                    uint64_t *out, struct dllm_error *err)
{
    const int64_t block_elems = dllm_type_block_elems(type);
    const size_t block_bytes = dllm_type_block_bytes(type);
    if (!block_bytes)
        return dllm_error_set(err, DLLM_ERR_ARG, "tensor %s: invalid tensor type id %u", name,
                              type);
    if (n_dims < 1 || n_dims > 4)
        return dllm_error_set(err, DLLM_ERR_ARG, "tensor %s: n_dims is %d, not 1 to 4", name,
                              n_dims);
    uint64_t elems = 1;
    for (int d = 0; d < n_dims; d++) {
        if (ne[d] < 1)
            return dllm_error_set(err, DLLM_ERR_ARG, "tensor %s: dimension %d is %lld", name, d,
                                  (long long)ne[d]);
        if ((uint64_t)ne[d] > (uint64_t)INT64_MAX / elems)
            return dllm_error_set(err, DLLM_ERR_ARG, "tensor %s: the element count overflows",
                                  name);
        elems *= (uint64_t)ne[d];
    }
    if (ne[0] % block_elems)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "tensor %s: ne[0] = %lld is not a multiple of the %s block "
                              "(%lld elements)",
                              name, (long long)ne[0], dllm_type_name(type), (long long)block_elems);
    uint64_t blocks = elems / (uint64_t)block_elems;
    if (blocks > UINT64_MAX / block_bytes)
        return dllm_error_set(err, DLLM_ERR_ARG, "tensor %s: the byte size overflows", name);
    *out = blocks * block_bytes;
    return DLLM_OK;
}

enum dllm_status dllm_gguf_writer_add_tensor(struct dllm_gguf_writer *w, const char *name,
                                             uint32_t type, int n_dims, const int64_t *ne,
                                             struct dllm_error *err)
{
    enum dllm_status st = not_defining(w, err);
    if (st)
        return st;
    if (!name || !*name)
        return dllm_error_set(err, DLLM_ERR_ARG, "GGUF tensor names must not be empty");
    for (size_t i = 0; i < w->n_tensors; i++)
        if (strcmp(w->tensors[i].name, name) == 0)
            return dllm_error_set(err, DLLM_ERR_ARG, "duplicate tensor name: %s", name);
    uint64_t size = 0, padded, end;
    if ((st = tensor_size(name, type, n_dims, ne, &size, err)))
        return st;
    if (!align_up(size, w->alignment, &padded) || padded > UINT64_MAX - w->data_size ||
        !align_up(w->data_size + padded, w->alignment, &end) || end > INT64_MAX)
        return dllm_error_set(err, DLLM_ERR_ARG, "tensor %s: the data section overflows", name);
    struct wtensor *ts = realloc(w->tensors, (w->n_tensors + 1) * sizeof *ts);
    if (!ts)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory for tensor %s", name);
    w->tensors = ts;
    struct wtensor *t = &w->tensors[w->n_tensors];
    *t = (struct wtensor){.name = strdup(name), .type = type, .n_dims = n_dims, .size = size};
    if (!t->name)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory for tensor %s", name);
    for (int d = 0; d < 4; d++)
        t->ne[d] = d < n_dims ? ne[d] : 1;
    t->offset = w->data_size;
    w->data_size = end;
    w->n_tensors++;
    return DLLM_OK;
}

uint64_t dllm_gguf_writer_tensor_size(const struct dllm_gguf_writer *w, size_t i)
{
    return i < w->n_tensors ? w->tensors[i].size : 0;
}

uint64_t dllm_gguf_writer_data_size(const struct dllm_gguf_writer *w)
{
    return w->data_size;
}

uint64_t dllm_gguf_writer_data_written(const struct dllm_gguf_writer *w)
{
    if (w->state == W_DEFINE)
        return 0;
    return w->cur < w->n_tensors ? w->tensors[w->cur].offset + w->cur_done : w->data_size;
}

/* Records an I/O failure of the output (errno describes it) and abandons the file. */
static enum dllm_status io_failed(struct dllm_gguf_writer *w, const char *what,
                                  struct dllm_error *err)
{
    int e = errno ? errno : EIO;
    const char *name = w->path ? w->path : "a memory image";
    enum dllm_status st;
    if (e == ENOSPC || e == EDQUOT)
        st = dllm_error_set(err, DLLM_ERR_IO,
                            "cannot write %s: %s (the file needs %llu bytes: free some space "
                            "or write elsewhere)",
                            name, strerror(e), (unsigned long long)(w->data_offset + w->data_size));
    else
        st = dllm_error_set(err, e == ENOMEM ? DLLM_ERR_NOMEM : DLLM_ERR_IO, "cannot %s %s: %s",
                            what, name, strerror(e));
    abandon(w);
    return st;
}

/* Opens the output: a memory stream, PATH in place, or PATH.tmp. */
static enum dllm_status open_output(struct dllm_gguf_writer *w, const char *path,
                                    struct dllm_error *err)
{
    if (!path) {
        w->f = open_memstream(&w->mem, &w->mem_size);
        return w->f ? DLLM_OK : io_failed(w, "create", err);
    }
    w->path = strdup(path);
    if (!w->path)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    struct stat sb;
    const char *target = path;
    if (stat(path, &sb) != 0 || S_ISREG(sb.st_mode)) {
        size_t n = strlen(path) + sizeof ".tmp";
        w->tmp_path = malloc(n);
        if (!w->tmp_path)
            return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
        snprintf(w->tmp_path, n, "%s.tmp", path);
        target = w->tmp_path;
    }
    errno = 0;
    w->f = fopen(target, "wb");
    if (!w->f) {
        enum dllm_status st =
            dllm_error_set(err, DLLM_ERR_IO, "cannot create %s: %s", target, strerror(errno));
        free(w->tmp_path); /* nothing was created */
        w->tmp_path = NULL;
        return st;
    }
    w->io_buf = malloc(FILE_BUFFER);
    if (w->io_buf)
        setvbuf(w->f, w->io_buf, _IOFBF, FILE_BUFFER);
    return DLLM_OK;
}

/* Serialises the header into b, recording where each structure lands. */
static enum dllm_status build_header(struct dllm_gguf_writer *w, struct bytes *b,
                                     struct dllm_error *err)
{
    w->kv_pos = calloc(w->n_kv + 1, sizeof *w->kv_pos);
    w->tensor_pos = calloc(w->n_tensors + 1, sizeof *w->tensor_pos);
    if (!w->kv_pos || !w->tensor_pos)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory for a GGUF header");
    put(b, "GGUF", 4);
    put_u32(b, GGUF_VERSION);
    put_u64(b, w->n_tensors);
    put_u64(b, w->n_kv);
    for (size_t i = 0; i < w->n_kv; i++) {
        const struct wkv *kv = &w->kvs[i];
        w->kv_pos[i].key = b->len;
        put_str(b, kv->key, strlen(kv->key));
        w->kv_pos[i].type = b->len;
        w->kv_pos[i].value = b->len + 4;
        put(b, kv->value.p, kv->value.len);
    }
    for (size_t i = 0; i < w->n_tensors; i++) {
        const struct wtensor *t = &w->tensors[i];
        struct dllm_gguf_tensor_pos *p = &w->tensor_pos[i];
        p->name = b->len;
        put_str(b, t->name, strlen(t->name));
        p->n_dims = b->len;
        put_u32(b, (uint32_t)t->n_dims);
        p->dims = b->len;
        for (int d = 0; d < t->n_dims; d++)
            put_u64(b, (uint64_t)t->ne[d]);
        p->type = b->len;
        put_u32(b, t->type);
        p->offset = b->len;
        put_u64(b, t->offset);
    }
    for (size_t pad = (w->alignment - b->len % w->alignment) % w->alignment; pad; pad--)
        put(b, "", 1);
    if (b->failed)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory for a GGUF header");
    w->data_offset = b->len;
    return DLLM_OK;
}

enum dllm_status dllm_gguf_writer_begin(struct dllm_gguf_writer *w, const char *path,
                                        struct dllm_error *err)
{
    enum dllm_status st = not_defining(w, err);
    if (st)
        return st;
    struct bytes header = {0};
    if ((st = build_header(w, &header, err)))
        goto fail;
    if ((st = open_output(w, path, err)))
        goto fail;
    w->state = W_DATA;
    w->cur = 0;
    w->cur_done = 0;
    errno = 0;
    if (fwrite(header.p, 1, header.len, w->f) != header.len) {
        st = io_failed(w, "write", err);
        goto fail;
    }
    free(header.p);
    return DLLM_OK;
fail:
    free(header.p);
    if (w->state == W_DEFINE)
        w->state = W_DONE; /* a failed begin cannot be retried with a half-built header */
    return st;
}

/* Writes n bytes of data, or of zeros when data is NULL. */
static bool emit(struct dllm_gguf_writer *w, const void *data, size_t n)
{
    static const uint8_t zeros[4096];
    if (data)
        return fwrite(data, 1, n, w->f) == n;
    while (n) {
        size_t k = n < sizeof zeros ? n : sizeof zeros;
        if (fwrite(zeros, 1, k, w->f) != k)
            return false;
        n -= k;
    }
    return true;
}

enum dllm_status dllm_gguf_writer_write(struct dllm_gguf_writer *w, const void *data, size_t n,
                                        struct dllm_error *err)
{
    if (w->state != W_DATA)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "GGUF writer: tensor data is written between begin and finish");
    const uint8_t *p = data;
    errno = 0;
    while (n) {
        if (w->cur >= w->n_tensors)
            return dllm_error_set(err, DLLM_ERR_ARG,
                                  "GGUF writer: %zu bytes of tensor data more than the tensors "
                                  "hold",
                                  n);
        const struct wtensor *t = &w->tensors[w->cur];
        uint64_t left = t->size - w->cur_done;
        size_t k = n < left ? n : (size_t)left;
        if (!emit(w, p, k))
            return io_failed(w, "write", err);
        w->cur_done += k;
        n -= k;
        if (p)
            p += k;
        if (w->cur_done == t->size) {
            if (!emit(w, NULL, (w->alignment - t->size % w->alignment) % w->alignment))
                return io_failed(w, "write", err);
            w->cur++;
            w->cur_done = 0;
        }
    }
    return DLLM_OK;
}

enum dllm_status dllm_gguf_writer_finish(struct dllm_gguf_writer *w, void **image, size_t *size,
                                         struct dllm_error *err)
{
    if (w->state != W_DATA || (!w->path && (!image || !size)))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "GGUF writer: finish follows begin, once (with image and size "
                              "for a memory image)");
    if (w->cur < w->n_tensors) {
        const struct wtensor *t = &w->tensors[w->cur];
        enum dllm_status st = dllm_error_set(
            err, DLLM_ERR_ARG, "GGUF writer: tensor %s has %llu of its %llu bytes of data", t->name,
            (unsigned long long)w->cur_done, (unsigned long long)t->size);
        abandon(w);
        return st;
    }
    errno = 0;
    if (fflush(w->f) != 0)
        return io_failed(w, "write", err);
    if (w->tmp_path && fsync(fileno(w->f)) != 0)
        return io_failed(w, "sync", err);
    FILE *f = w->f;
    w->f = NULL;
    if (fclose(f) != 0)
        return io_failed(w, "write", err);
    if (w->tmp_path && rename(w->tmp_path, w->path) != 0)
        return io_failed(w, "rename the finished file to", err);
    w->state = W_DONE;
    if (!w->path) {
        *image = w->mem;
        *size = w->mem_size;
        w->mem = NULL;
    }
    return DLLM_OK;
}

const struct dllm_gguf_kv_pos *dllm_gguf_writer_kv_pos(const struct dllm_gguf_writer *w, size_t i)
{
    return w->kv_pos && i < w->n_kv ? &w->kv_pos[i] : NULL;
}

const struct dllm_gguf_tensor_pos *dllm_gguf_writer_tensor_pos(const struct dllm_gguf_writer *w,
                                                               size_t i)
{
    return w->tensor_pos && i < w->n_tensors ? &w->tensor_pos[i] : NULL;
}

size_t dllm_gguf_writer_data_offset(const struct dllm_gguf_writer *w)
{
    return w->data_offset;
}

size_t dllm_gguf_writer_n_kv(const struct dllm_gguf_writer *w)
{
    return w->n_kv;
}

size_t dllm_gguf_writer_n_tensors(const struct dllm_gguf_writer *w)
{
    return w->n_tensors;
}
