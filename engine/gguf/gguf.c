/*
 * GGUF reader: maps a file read-only and validates every structure before use.
 *
 * Layout (versions 2 and 3, little-endian): magic "GGUF", u32 version, u64 tensor count,
 * u64 metadata count, the metadata (key string, u32 value type, value), the tensor infos
 * (name string, u32 n_dims, u64 ne[n_dims], u32 type, u64 offset), padding up to
 * general.alignment (default 32), then the tensor data. A string is a u64 length and its bytes.
 * All arithmetic on sizes taken from the file is overflow-checked; nothing past the end of the
 * image is ever read.
 */
#include "config.h"

#include "dllm.h"
#include "gguf.h"
#include "quant.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define GGUF_MAGIC             "GGUF"
#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_NAME          64 /* ggml's GGML_MAX_NAME, terminator included */
#define GGUF_MAX_DEPTH         8  /* nesting of arrays of arrays */

/* Elements of string and array arrays, parsed; numeric arrays stay in the file. */
struct gguf_array {
    const uint8_t *raw;            /* numeric elements, little-endian */
    struct dllm_gguf_value *items; /* STRING and ARRAY elements */
};

struct gguf_kv {
    char *key;
    struct dllm_gguf_value value;
};

struct dllm_gguf {
    const uint8_t *base;
    size_t size;
    int fd; /* the mapped file, kept open for dllm_gguf_read; -1 for an image in memory */
    uint32_t version;
    size_t alignment;
    size_t data_offset;
    int64_t n_kv;
    struct gguf_kv *kvs;
    int64_t n_tensors;
    struct dllm_gguf_tensor *tensors;
    int64_t *tensors_by_name; /* indices into tensors, sorted by name */
    int64_t *kvs_by_key;      /* indices into kvs, sorted by key */
    /* Every gguf_array and items block allocated while parsing, freed on close. */
    void **allocs;
    size_t n_allocs, cap_allocs;
    /* A split model's other files (engine/gguf/split.c), whose tensors are listed here too. */
    struct dllm_gguf **parts;
    int64_t n_parts;
};

/* A bounds-checked read position in the image. */
struct cursor {
    const uint8_t *base;
    size_t size;
    size_t off;
    struct dllm_error *err;
};

size_t dllm_gguf_value_size(uint32_t type)
{
    static const size_t size[DLLM_GGUF_N_TYPES] = {
        [DLLM_GGUF_UINT8] = 1,   [DLLM_GGUF_INT8] = 1,    [DLLM_GGUF_UINT16] = 2,
        [DLLM_GGUF_INT16] = 2,   [DLLM_GGUF_UINT32] = 4,  [DLLM_GGUF_INT32] = 4,
        [DLLM_GGUF_FLOAT32] = 4, [DLLM_GGUF_BOOL] = 1,    [DLLM_GGUF_UINT64] = 8,
        [DLLM_GGUF_INT64] = 8,   [DLLM_GGUF_FLOAT64] = 8,
    };
    return type < DLLM_GGUF_N_TYPES ? size[type] : 0;
}

const char *dllm_gguf_type_name(enum dllm_gguf_type type)
{
    static const char *const names[DLLM_GGUF_N_TYPES] = {
        "uint8", "int8",   "uint16", "int16",  "uint32", "int32",   "float32",
        "bool",  "string", "array",  "uint64", "int64",  "float64",
    };
    return (unsigned)type < DLLM_GGUF_N_TYPES ? names[type] : "invalid";
}

static enum dllm_status truncated(struct cursor *c, size_t need, const char *what)
{
    return dllm_error_set(c->err, DLLM_ERR_FORMAT,
                          "truncated file: %s needs %zu bytes at byte %zu but the file has %zu",
                          what, need, c->off, c->size);
}

static enum dllm_status need(struct cursor *c, size_t n, const char *what)
{
    if (c->size - c->off < n)
        return truncated(c, n, what);
    return DLLM_OK;
}

static enum dllm_status read_bytes(struct cursor *c, void *out, size_t n, const char *what)
{
    enum dllm_status st = need(c, n, what);
    if (st)
        return st;
    memcpy(out, c->base + c->off, n);
    c->off += n;
    return DLLM_OK;
}

static enum dllm_status read_u32(struct cursor *c, uint32_t *out, const char *what)
{
    return read_bytes(c, out, 4, what);
}

static enum dllm_status read_u64(struct cursor *c, uint64_t *out, const char *what)
{
    return read_bytes(c, out, 8, what);
}

/* Reads a GGUF string in place: *ptr points into the image. */
static enum dllm_status read_str(struct cursor *c, const char **ptr, uint64_t *len,
                                 const char *what)
{
    size_t at = c->off;
    enum dllm_status st = read_u64(c, len, what);
    if (st)
        return st;
    if (*len > c->size - c->off) {
        c->off = at;
        return dllm_error_set(c->err, DLLM_ERR_FORMAT,
                              "truncated file: %s: string length %llu at byte %zu runs past "
                              "the end of the file (%zu bytes)",
                              what, (unsigned long long)*len, at, c->size);
    }
    *ptr = (const char *)c->base + c->off;
    c->off += *len;
    return DLLM_OK;
}

/* Remembers a parse-time allocation so close can free it. */
static void *track(struct dllm_gguf *g, void *p)
{
    if (!p)
        return NULL;
    if (g->n_allocs == g->cap_allocs) {
        size_t cap = g->cap_allocs ? 2 * g->cap_allocs : 64;
        void **a = realloc(g->allocs, cap * sizeof *a);
        if (!a) {
            free(p);
            return NULL;
        }
        g->allocs = a;
        g->cap_allocs = cap;
    }
    g->allocs[g->n_allocs++] = p;
    return p;
}

static enum dllm_status read_value(struct dllm_gguf *g, struct cursor *c, enum dllm_gguf_type type,
                                   int depth, const char *key, struct dllm_gguf_value *out);

/* Reads an array value: element type, count, then the elements. */
static enum dllm_status read_array(struct dllm_gguf *g, struct cursor *c, int depth,
                                   const char *key, struct dllm_gguf_value *out)
{
    size_t at = c->off;
    uint32_t elem;
    uint64_t n;
    enum dllm_status st;
    if ((st = read_u32(c, &elem, "array element type")) || (st = read_u64(c, &n, "array length")))
        return st;
    if (elem >= DLLM_GGUF_N_TYPES)
        return dllm_error_set(c->err, DLLM_ERR_FORMAT,
                              "metadata key %s: invalid array element type %u at byte %zu", key,
                              elem, at);
    if (elem == DLLM_GGUF_ARRAY && depth + 1 >= GGUF_MAX_DEPTH)
        return dllm_error_set(c->err, DLLM_ERR_FORMAT,
                              "metadata key %s: arrays nested deeper than %d at byte %zu", key,
                              GGUF_MAX_DEPTH, at);
    /* Every element takes at least its fixed size, or 8 bytes (a length) for strings and
     * 12 bytes (type and length) for arrays: the count cannot exceed what the file holds. */
    const size_t width = dllm_gguf_value_size(elem);
    const size_t min_elem = width ? width : elem == DLLM_GGUF_STRING ? 8 : 12;
    if (n > (c->size - c->off) / min_elem)
        return dllm_error_set(c->err, DLLM_ERR_FORMAT,
                              "metadata key %s: array of %llu %s elements at byte %zu does not "
                              "fit in the file",
                              key, (unsigned long long)n,
                              dllm_gguf_type_name((enum dllm_gguf_type)elem), at);
    struct gguf_array *impl = track(g, calloc(1, sizeof *impl));
    if (!impl)
        return dllm_error_set(c->err, DLLM_ERR_NOMEM, "out of memory reading key %s", key);
    out->type = DLLM_GGUF_ARRAY;
    out->arr.type = (enum dllm_gguf_type)elem;
    out->arr.n = n;
    out->arr.impl = impl;
    if (width) {
        impl->raw = c->base + c->off;
        c->off += n * width;
        return DLLM_OK;
    }
    if (n == 0)
        return DLLM_OK;
    impl->items = track(g, calloc(n, sizeof *impl->items));
    if (!impl->items)
        return dllm_error_set(c->err, DLLM_ERR_NOMEM, "out of memory reading key %s", key);
    for (uint64_t i = 0; i < n; i++)
        if ((st = read_value(g, c, (enum dllm_gguf_type)elem, depth + 1, key, &impl->items[i])))
            return st;
    return DLLM_OK;
}

/* Decodes a fixed-size scalar of the given type from p. */
static void decode_scalar(enum dllm_gguf_type type, const uint8_t *p, struct dllm_gguf_value *out)
{
    out->type = type;
    switch (type) {
    case DLLM_GGUF_UINT8: out->u64 = p[0]; break;
    case DLLM_GGUF_INT8: out->i64 = (int8_t)p[0]; break;
    case DLLM_GGUF_UINT16: {
        uint16_t v;
        memcpy(&v, p, 2);
        out->u64 = v;
        break;
    }
    case DLLM_GGUF_INT16: {
        int16_t v;
        memcpy(&v, p, 2);
        out->i64 = v;
        break;
    }
    case DLLM_GGUF_UINT32: {
        uint32_t v;
        memcpy(&v, p, 4);
        out->u64 = v;
        break;
    }
    case DLLM_GGUF_INT32: {
        int32_t v;
        memcpy(&v, p, 4);
        out->i64 = v;
        break;
    }
    case DLLM_GGUF_FLOAT32: {
        float v;
        memcpy(&v, p, 4);
        out->f64 = v;
        break;
    }
    case DLLM_GGUF_BOOL: out->b = p[0] != 0; break;
    case DLLM_GGUF_UINT64: memcpy(&out->u64, p, 8); break;
    case DLLM_GGUF_INT64: memcpy(&out->i64, p, 8); break;
    case DLLM_GGUF_FLOAT64: memcpy(&out->f64, p, 8); break;
    case DLLM_GGUF_STRING:
    case DLLM_GGUF_ARRAY: break;
    }
}

/* Reads one value of a known type at the cursor. */
static enum dllm_status read_value(struct dllm_gguf *g, struct cursor *c, enum dllm_gguf_type type,
                                   int depth, const char *key, struct dllm_gguf_value *out)
{
    enum dllm_status st;
    if (type == DLLM_GGUF_STRING) {
        out->type = type;
        return read_str(c, &out->str.ptr, &out->str.len, "string value");
    }
    if (type == DLLM_GGUF_ARRAY)
        return read_array(g, c, depth, key, out);
    size_t n = dllm_gguf_value_size(type);
    if ((st = need(c, n, "metadata value")))
        return st;
    if (type == DLLM_GGUF_BOOL && c->base[c->off] > 1)
        return dllm_error_set(c->err, DLLM_ERR_FORMAT,
                              "metadata key %s: bool value %u at byte %zu is neither 0 nor 1", key,
                              c->base[c->off], c->off);
    decode_scalar(type, c->base + c->off, out);
    c->off += n;
    return DLLM_OK;
}

void dllm_gguf_array_get(const struct dllm_gguf_value *array, uint64_t i,
                         struct dllm_gguf_value *out)
{
    const struct gguf_array *impl = array->arr.impl;
    if (impl->items)
        *out = impl->items[i];
    else
        decode_scalar(array->arr.type, impl->raw + i * dllm_gguf_value_size(array->arr.type), out);
}

/* A NUL-terminated copy of a GGUF string (NULL when memory ran out). */
static char *copy_name(const char *ptr, uint64_t len)
{
    char *s = malloc(len + 1);
    if (s) {
        memcpy(s, ptr, len);
        s[len] = 0;
    }
    return s;
}

/* qsort has no context argument: the file being sorted, per thread. */
static _Thread_local const struct dllm_gguf *sort_ctx;

static int cmp_kv(const void *a, const void *b)
{
    return strcmp(sort_ctx->kvs[*(const int64_t *)a].key, sort_ctx->kvs[*(const int64_t *)b].key);
}

static int cmp_tensor(const void *a, const void *b)
{
    return strcmp(sort_ctx->tensors[*(const int64_t *)a].name,
                  sort_ctx->tensors[*(const int64_t *)b].name);
}

/* Builds an index sorted by name (for look-ups) and refuses duplicate names. */
static enum dllm_status sort_index(struct dllm_gguf *g, int64_t n, int64_t **out,
                                   int (*cmp)(const void *, const void *), bool keys,
                                   struct dllm_error *err)
{
    int64_t *idx = malloc((size_t)(n ? n : 1) * sizeof *idx);
    if (!idx)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < n; i++)
        idx[i] = i;
    sort_ctx = g;
    qsort(idx, (size_t)n, sizeof *idx, cmp);
    for (int64_t i = 1; i < n; i++) {
        if (cmp(&idx[i - 1], &idx[i]) == 0) {
            const char *name = keys ? g->kvs[idx[i]].key : g->tensors[idx[i]].name;
            free(idx);
            return dllm_error_set(err, DLLM_ERR_FORMAT, "duplicate %s: %s",
                                  keys ? "metadata key" : "tensor name", name);
        }
    }
    *out = idx;
    return DLLM_OK;
}

/* Reads the metadata section and applies general.alignment. */
static enum dllm_status read_metadata(struct dllm_gguf *g, struct cursor *c)
{
    enum dllm_status st;
    g->kvs = calloc((size_t)(g->n_kv ? g->n_kv : 1), sizeof *g->kvs);
    if (!g->kvs)
        return dllm_error_set(c->err, DLLM_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < g->n_kv; i++) {
        size_t at = c->off;
        const char *kp;
        uint64_t klen;
        uint32_t type;
        if ((st = read_str(c, &kp, &klen, "metadata key")))
            return st;
        if (klen == 0 || memchr(kp, 0, klen))
            return dllm_error_set(c->err, DLLM_ERR_FORMAT,
                                  "metadata key %lld at byte %zu is empty or holds a NUL byte",
                                  (long long)i, at);
        if (!(g->kvs[i].key = copy_name(kp, klen)))
            return dllm_error_set(c->err, DLLM_ERR_NOMEM, "out of memory");
        if ((st = read_u32(c, &type, "metadata value type")))
            return st;
        if (type >= DLLM_GGUF_N_TYPES)
            return dllm_error_set(c->err, DLLM_ERR_FORMAT,
                                  "metadata key %s: invalid value type %u at byte %zu",
                                  g->kvs[i].key, type, c->off - 4);
        if ((st = read_value(g, c, (enum dllm_gguf_type)type, 0, g->kvs[i].key, &g->kvs[i].value)))
            return st;
    }
    if ((st = sort_index(g, g->n_kv, &g->kvs_by_key, cmp_kv, true, c->err)))
        return st;
    g->alignment = GGUF_DEFAULT_ALIGNMENT;
    const struct dllm_gguf_value *a = dllm_gguf_find(g, "general.alignment");
    if (a) {
        if (a->type != DLLM_GGUF_UINT32)
            return dllm_error_set(c->err, DLLM_ERR_FORMAT,
                                  "general.alignment is %s, expected uint32",
                                  dllm_gguf_type_name(a->type));
        if (a->u64 == 0 || (a->u64 & (a->u64 - 1)))
            return dllm_error_set(c->err, DLLM_ERR_FORMAT,
                                  "general.alignment is %llu, expected a power of two",
                                  (unsigned long long)a->u64);
        g->alignment = (size_t)a->u64;
    }
    return DLLM_OK;
}

/* Reads one tensor info and checks its name, shape and type; the offset is checked later. */
static enum dllm_status read_tensor_info(struct dllm_gguf *g, struct cursor *c, int64_t i)
{
    struct dllm_gguf_tensor *t = &g->tensors[i];
    size_t at = c->off;
    const char *np;
    uint64_t nlen;
    uint32_t n_dims, type;
    enum dllm_status st;
    if ((st = read_str(c, &np, &nlen, "tensor name")))
        return st;
    if (nlen == 0 || nlen >= GGUF_MAX_NAME || memchr(np, 0, nlen))
        return dllm_error_set(c->err, DLLM_ERR_FORMAT,
                              "tensor %lld at byte %zu: name is empty, longer than %d bytes or "
                              "holds a NUL byte",
                              (long long)i, at, GGUF_MAX_NAME - 1);
    if (!(t->name = copy_name(np, nlen)))
        return dllm_error_set(c->err, DLLM_ERR_NOMEM, "out of memory");
    at = c->off;
    if ((st = read_u32(c, &n_dims, "tensor n_dims")))
        return st;
    if (n_dims < 1 || n_dims > 4)
        return dllm_error_set(c->err, DLLM_ERR_FORMAT,
                              "tensor %s: n_dims is %u at byte %zu, expected 1 to 4", t->name,
                              n_dims, at);
    t->n_dims = (int)n_dims;
    int64_t total = 1;
    for (int d = 0; d < 4; d++) {
        uint64_t ne = 1;
        at = c->off;
        if (d < (int)n_dims && (st = read_u64(c, &ne, "tensor dimension")))
            return st;
        if (ne == 0 || ne > INT64_MAX)
            return dllm_error_set(c->err, DLLM_ERR_FORMAT,
                                  "tensor %s: dimension %d is %llu at byte %zu", t->name, d,
                                  (unsigned long long)ne, at);
        if (__builtin_mul_overflow(total, (int64_t)ne, &total))
            return dllm_error_set(c->err, DLLM_ERR_FORMAT,
                                  "tensor %s: element count overflows at dimension %d (byte %zu)",
                                  t->name, d, at);
        t->ne[d] = (int64_t)ne;
    }
    at = c->off;
    if ((st = read_u32(c, &type, "tensor type")))
        return st;
    const struct dllm_type_traits *tr = dllm_type_traits(type);
    if (!tr)
        return dllm_error_set(c->err, DLLM_ERR_FORMAT,
                              "tensor %s: invalid tensor type id %u at byte %zu", t->name, type,
                              at);
    t->type = type;
    if (t->ne[0] % tr->block_elems)
        return dllm_error_set(c->err, DLLM_ERR_FORMAT,
                              "tensor %s: row length %lld is not a multiple of the %s block size "
                              "%lld",
                              t->name, (long long)t->ne[0], tr->name, (long long)tr->block_elems);
    uint64_t bytes;
    if (__builtin_mul_overflow((uint64_t)(total / tr->block_elems), (uint64_t)tr->block_bytes,
                               &bytes) ||
        bytes > SIZE_MAX)
        return dllm_error_set(c->err, DLLM_ERR_FORMAT, "tensor %s: byte size overflows", t->name);
    t->size = (size_t)bytes;
    return read_u64(c, &t->offset, "tensor offset");
}

/* The byte where the last tensor's data ends (saturating at UINT64_MAX). */
static unsigned long long tensors_end(const struct dllm_gguf *g)
{
    uint64_t end = 0;
    for (int64_t i = 0; i < g->n_tensors; i++) {
        uint64_t e;
        if (__builtin_add_overflow(g->tensors[i].offset, (uint64_t)g->tensors[i].size, &e) ||
            __builtin_add_overflow(e, (uint64_t)g->data_offset, &e))
            return UINT64_MAX;
        end = e > end ? e : end;
    }
    return end;
}

/* Places the data section after the infos and checks each tensor lies inside it, aligned. */
static enum dllm_status place_tensors(struct dllm_gguf *g, struct cursor *c)
{
    size_t pad = (g->alignment - c->off % g->alignment) % g->alignment;
    g->data_offset = c->off + pad;
    if (g->n_tensors == 0)
        return DLLM_OK;
    if (g->data_offset > c->size)
        return dllm_error_set(c->err, DLLM_ERR_FORMAT,
                              "truncated file: the tensor data section starts at byte %zu but "
                              "the file has %zu",
                              g->data_offset, c->size);
    size_t data_size = c->size - g->data_offset;
    for (int64_t i = 0; i < g->n_tensors; i++) {
        struct dllm_gguf_tensor *t = &g->tensors[i];
        if (t->offset % g->alignment)
            return dllm_error_set(c->err, DLLM_ERR_FORMAT,
                                  "tensor %s: data offset %llu is not a multiple of the "
                                  "alignment %zu",
                                  t->name, (unsigned long long)t->offset, g->alignment);
        /* A tensor that starts inside the file but runs past its end: the file was cut. */
        if (t->offset <= data_size && t->size > data_size - t->offset)
            return dllm_error_set(c->err, DLLM_ERR_FORMAT,
                                  "truncated file: it has %zu bytes but its tensors need %llu "
                                  "(tensor %s ends at byte %llu)",
                                  c->size, tensors_end(g), t->name,
                                  (unsigned long long)(g->data_offset + t->offset + t->size));
        if (t->offset > data_size)
            return dllm_error_set(c->err, DLLM_ERR_FORMAT,
                                  "tensor %s: data [%llu, +%zu) lies outside the data section "
                                  "(%zu bytes from byte %zu)",
                                  t->name, (unsigned long long)t->offset, t->size, data_size,
                                  g->data_offset);
        t->data = g->base + g->data_offset + t->offset;
    }
    return DLLM_OK;
}

/* Parses and validates the whole image held by g. */
static enum dllm_status parse(struct dllm_gguf *g, struct dllm_error *err)
{
    struct cursor c = {g->base, g->size, 0, err};
    char magic[4];
    uint64_t n_tensors, n_kv;
    enum dllm_status st;
    if ((st = read_bytes(&c, magic, 4, "magic")))
        return st;
    if (memcmp(magic, GGUF_MAGIC, 4))
        return dllm_error_set(err, DLLM_ERR_FORMAT, "not a GGUF file (bad magic at byte 0)");
    if ((st = read_u32(&c, &g->version, "version")))
        return st;
    if (g->version == 1)
        return dllm_error_set(err, DLLM_ERR_UNSUPPORTED,
                              "GGUF version 1 is not supported (re-convert the model with a "
                              "current llama.cpp)");
    if (g->version != 2 && g->version != 3)
        return dllm_error_set(err, DLLM_ERR_FORMAT,
                              (g->version & 0xffff) == 0
                                  ? "big-endian GGUF files are not supported (version field %u "
                                    "at byte 4)"
                                  : "unknown GGUF version %u at byte 4 (supported: 2, 3)",
                              g->version);
    if ((st = read_u64(&c, &n_tensors, "tensor count")) || (st = read_u64(&c, &n_kv, "key count")))
        return st;
    /* A tensor info takes at least 8 + 1 + 4 + 8 + 4 + 8 bytes, a key-value pair 8 + 1 + 4 + 1. */
    size_t rest = c.size - c.off;
    if (n_tensors > rest / 33)
        return dllm_error_set(err, DLLM_ERR_FORMAT,
                              "tensor count %llu at byte 8 cannot fit in a %zu-byte file",
                              (unsigned long long)n_tensors, c.size);
    if (n_kv > rest / 14)
        return dllm_error_set(err, DLLM_ERR_FORMAT,
                              "metadata count %llu at byte 16 cannot fit in a %zu-byte file",
                              (unsigned long long)n_kv, c.size);
    g->n_tensors = (int64_t)n_tensors;
    g->n_kv = (int64_t)n_kv;
    if ((st = read_metadata(g, &c)))
        return st;
    g->tensors = calloc((size_t)(n_tensors ? n_tensors : 1), sizeof *g->tensors);
    if (!g->tensors)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < g->n_tensors; i++)
        if ((st = read_tensor_info(g, &c, i)))
            return st;
    if ((st = sort_index(g, g->n_tensors, &g->tensors_by_name, cmp_tensor, false, err)))
        return st;
    return place_tensors(g, &c);
}

/*
 * Creates the reader over an image, the mapping of the open file fd or (fd -1) bytes in memory,
 * and parses it; frees everything, the mapping and fd included, on failure.
 */
static enum dllm_status open_image(const void *data, size_t size, int fd, struct dllm_gguf **out,
                                   struct dllm_error *err)
{
    *out = NULL;
    struct dllm_gguf *g = calloc(1, sizeof *g);
    if (!g) {
        if (fd >= 0) {
            munmap((void *)data, size);
            close(fd);
        }
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    }
    g->base = data;
    g->size = size;
    g->fd = fd;
    enum dllm_status st = parse(g, err);
    if (st) {
        dllm_gguf_close(g);
        return st;
    }
    *out = g;
    return DLLM_OK;
}

enum dllm_status dllm_gguf_open_memory(const void *data, size_t size, struct dllm_gguf **out,
                                       struct dllm_error *err)
{
    return open_image(data, size, -1, out, err);
}

enum dllm_status dllm_gguf_open_file(const char *path, struct dllm_gguf **out,
                                     struct dllm_error *err)
{
    *out = NULL;
    /* O_NONBLOCK: opening a named pipe would otherwise wait for a writer; regular files,
       the only ones taken, ignore it */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return dllm_error_set(err, DLLM_ERR_IO, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return dllm_error_set(err, DLLM_ERR_IO, "cannot stat: %s", strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return dllm_error_set(err, DLLM_ERR_IO, "%s, not a GGUF file",
                              S_ISDIR(st.st_mode) ? "a directory" : "not a regular file");
    }
    if (st.st_size < 4) {
        close(fd);
        return dllm_error_set(err, DLLM_ERR_FORMAT, "not a GGUF file (%lld bytes)",
                              (long long)st.st_size);
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
        int e = errno;
        close(fd);
        return dllm_error_set(err, DLLM_ERR_IO, "cannot map: %s", strerror(e));
    }
    return open_image(map, (size_t)st.st_size, fd, out, err);
}

enum dllm_status dllm_gguf_adopt_part(struct dllm_gguf *g, struct dllm_gguf *part,
                                      struct dllm_error *err)
{
    struct dllm_gguf **parts = realloc(g->parts, (size_t)(g->n_parts + 1) * sizeof *parts);
    if (!parts) {
        dllm_gguf_close(part);
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    }
    g->parts = parts;
    g->parts[g->n_parts++] = part;
    struct dllm_gguf_tensor *t =
        realloc(g->tensors, (size_t)(g->n_tensors + part->n_tensors + 1) * sizeof *t);
    if (!t)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    g->tensors = t;
    /* The tensors move with their names; their data stays in the part's mapping. */
    memcpy(g->tensors + g->n_tensors, part->tensors, (size_t)part->n_tensors * sizeof *t);
    g->n_tensors += part->n_tensors;
    part->n_tensors = 0;
    free(g->tensors_by_name);
    g->tensors_by_name = NULL;
    return sort_index(g, g->n_tensors, &g->tensors_by_name, cmp_tensor, false, err);
}

void dllm_gguf_close(struct dllm_gguf *g)
{
    if (!g)
        return;
    for (int64_t i = 0; i < g->n_parts; i++)
        dllm_gguf_close(g->parts[i]);
    free(g->parts);
    for (int64_t i = 0; g->kvs && i < g->n_kv; i++)
        free(g->kvs[i].key);
    for (int64_t i = 0; g->tensors && i < g->n_tensors; i++)
        free((char *)g->tensors[i].name);
    for (size_t i = 0; i < g->n_allocs; i++)
        free(g->allocs[i]);
    free(g->allocs);
    free(g->kvs);
    free(g->tensors);
    free(g->kvs_by_key);
    free(g->tensors_by_name);
    if (g->fd >= 0) {
        munmap((void *)g->base, g->size);
        close(g->fd);
    }
    free(g);
}

/* Which of g's other parts maps p: its index in g->parts, or -1 for g itself. */
static int64_t part_of(const struct dllm_gguf *g, const void *p)
{
    const uintptr_t at = (uintptr_t)p;
    for (int64_t i = 0; i < g->n_parts; i++) {
        const struct dllm_gguf *part = g->parts[i];
        if (at >= (uintptr_t)part->base && at < (uintptr_t)part->base + part->size)
            return i;
    }
    return -1;
}

/* The file of g (g itself or one of its parts) whose mapping holds p. */
static const struct dllm_gguf *file_of(const struct dllm_gguf *g, const void *p)
{
    const int64_t i = part_of(g, p);
    return i < 0 ? g : g->parts[i];
}

int64_t dllm_gguf_tensor_part(const struct dllm_gguf *g, const struct dllm_gguf_tensor *t)
{
    return 2 + part_of(g, t->data);
}

int dllm_gguf_read(const struct dllm_gguf *whole, const void *p, size_t n, void *dst)
{
    const struct dllm_gguf *g = file_of(whole, p);
    if (g->fd < 0) {
        memcpy(dst, p, n);
        return 0;
    }
    off_t at = (off_t)((const uint8_t *)p - g->base);
    for (uint8_t *d = dst; n > 0;) {
        const ssize_t got = pread(g->fd, d, n, at);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return got < 0 ? errno : EIO;
        d += got, at += got, n -= (size_t)got;
    }
    return 0;
}

int64_t dllm_gguf_n_parts(const struct dllm_gguf *g)
{
    return 1 + g->n_parts;
}

uint32_t dllm_gguf_version(const struct dllm_gguf *g)
{
    return g->version;
}

size_t dllm_gguf_alignment(const struct dllm_gguf *g)
{
    return g->alignment;
}

size_t dllm_gguf_data_offset(const struct dllm_gguf *g)
{
    return g->data_offset;
}

int64_t dllm_gguf_n_kv(const struct dllm_gguf *g)
{
    return g->n_kv;
}

const char *dllm_gguf_kv_key(const struct dllm_gguf *g, int64_t i)
{
    return i >= 0 && i < g->n_kv ? g->kvs[i].key : NULL;
}

const struct dllm_gguf_value *dllm_gguf_kv_value(const struct dllm_gguf *g, int64_t i)
{
    return i >= 0 && i < g->n_kv ? &g->kvs[i].value : NULL;
}

/* Binary search of a sorted index by name; -1 when absent. */
static int64_t lookup(const int64_t *idx, int64_t n, const char *name,
                      const char *(*name_of)(const struct dllm_gguf *, int64_t),
                      const struct dllm_gguf *g)
{
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        int c = strcmp(name_of(g, idx[mid]), name);
        if (c == 0)
            return idx[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static const char *tensor_name_of(const struct dllm_gguf *g, int64_t i)
{
    return g->tensors[i].name;
}

const struct dllm_gguf_value *dllm_gguf_find(const struct dllm_gguf *g, const char *key)
{
    if (!g->kvs_by_key)
        return NULL;
    int64_t i = lookup(g->kvs_by_key, g->n_kv, key, dllm_gguf_kv_key, g);
    return i < 0 ? NULL : &g->kvs[i].value;
}

int64_t dllm_gguf_n_tensors(const struct dllm_gguf *g)
{
    return g->n_tensors;
}

const struct dllm_gguf_tensor *dllm_gguf_tensor(const struct dllm_gguf *g, int64_t i)
{
    return i >= 0 && i < g->n_tensors ? &g->tensors[i] : NULL;
}

const struct dllm_gguf_tensor *dllm_gguf_find_tensor(const struct dllm_gguf *g, const char *name)
{
    int64_t i = lookup(g->tensors_by_name, g->n_tensors, name, tensor_name_of, g);
    return i < 0 ? NULL : &g->tensors[i];
}

/* ---- typed look-ups --------------------------------------------------------------------- */

static enum dllm_status find_typed(const struct dllm_gguf *g, const char *key,
                                   const struct dllm_gguf_value **v, struct dllm_error *err)
{
    *v = dllm_gguf_find(g, key);
    if (!*v)
        return dllm_error_set(err, DLLM_ERR_MISSING, "required metadata key missing: %s", key);
    return DLLM_OK;
}

static enum dllm_status wrong_type(const char *key, const struct dllm_gguf_value *v,
                                   const char *expected, struct dllm_error *err)
{
    return dllm_error_set(err, DLLM_ERR_TYPE, "metadata key %s is %s, expected %s", key,
                          dllm_gguf_type_name(v->type), expected);
}

static bool is_unsigned(enum dllm_gguf_type t)
{
    return t == DLLM_GGUF_UINT8 || t == DLLM_GGUF_UINT16 || t == DLLM_GGUF_UINT32 ||
           t == DLLM_GGUF_UINT64;
}

static bool is_signed(enum dllm_gguf_type t)
{
    return t == DLLM_GGUF_INT8 || t == DLLM_GGUF_INT16 || t == DLLM_GGUF_INT32 ||
           t == DLLM_GGUF_INT64;
}

enum dllm_status dllm_gguf_get_u32(const struct dllm_gguf *g, const char *key, uint32_t *out,
                                   struct dllm_error *err)
{
    const struct dllm_gguf_value *v;
    enum dllm_status st = find_typed(g, key, &v, err);
    if (st)
        return st;
    if (is_unsigned(v->type) && v->u64 <= UINT32_MAX) {
        *out = (uint32_t)v->u64;
        return DLLM_OK;
    }
    if (is_signed(v->type) && v->i64 >= 0 && v->i64 <= UINT32_MAX) {
        *out = (uint32_t)v->i64;
        return DLLM_OK;
    }
    if (is_unsigned(v->type) || is_signed(v->type))
        return dllm_error_set(err, DLLM_ERR_TYPE, "metadata key %s: value out of range for uint32",
                              key);
    return wrong_type(key, v, "an integer", err);
}

enum dllm_status dllm_gguf_get_f32(const struct dllm_gguf *g, const char *key, float *out,
                                   struct dllm_error *err)
{
    const struct dllm_gguf_value *v;
    enum dllm_status st = find_typed(g, key, &v, err);
    if (st)
        return st;
    if (v->type != DLLM_GGUF_FLOAT32 && v->type != DLLM_GGUF_FLOAT64)
        return wrong_type(key, v, "float32", err);
    *out = (float)v->f64;
    return DLLM_OK;
}

enum dllm_status dllm_gguf_get_bool(const struct dllm_gguf *g, const char *key, bool *out,
                                    struct dllm_error *err)
{
    const struct dllm_gguf_value *v;
    enum dllm_status st = find_typed(g, key, &v, err);
    if (st)
        return st;
    if (v->type != DLLM_GGUF_BOOL)
        return wrong_type(key, v, "bool", err);
    *out = v->b;
    return DLLM_OK;
}

enum dllm_status dllm_gguf_get_str(const struct dllm_gguf *g, const char *key, char **out,
                                   struct dllm_error *err)
{
    const struct dllm_gguf_value *v;
    enum dllm_status st = find_typed(g, key, &v, err);
    if (st)
        return st;
    if (v->type != DLLM_GGUF_STRING)
        return wrong_type(key, v, "string", err);
    if (memchr(v->str.ptr, 0, v->str.len))
        return dllm_error_set(err, DLLM_ERR_FORMAT, "metadata key %s: string holds a NUL byte",
                              key);
    char *s = copy_name(v->str.ptr, v->str.len);
    if (!s)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    *out = s;
    return DLLM_OK;
}

enum dllm_status dllm_gguf_get_array(const struct dllm_gguf *g, const char *key, int elem,
                                     const struct dllm_gguf_value **out, struct dllm_error *err)
{
    const struct dllm_gguf_value *v;
    enum dllm_status st = find_typed(g, key, &v, err);
    if (st)
        return st;
    if (v->type != DLLM_GGUF_ARRAY)
        return wrong_type(key, v, "array", err);
    if (elem >= 0 && v->arr.type != (enum dllm_gguf_type)elem)
        return dllm_error_set(err, DLLM_ERR_TYPE, "metadata key %s is an array of %s, expected %s",
                              key, dllm_gguf_type_name(v->arr.type),
                              dllm_gguf_type_name((enum dllm_gguf_type)elem));
    *out = v;
    return DLLM_OK;
}
