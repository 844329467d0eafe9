/*
 * libFuzzer target: the model loader's hyperparameter and tensor cross-checks on GGUF files
 * that parse but lie. A fixture model (FUZZ_MODELS: dense or mixture-of-experts ones) is
 * edited as the input says and the result opened as a model. The input is a byte choosing the
 * model, then 12-byte edits: an operation, an argument byte, a 16-bit index (little-endian)
 * of the key or tensor, and 8 value bytes:
 *   0  sets a metadata key to a value of its own type (with bit 7 of the argument: of another
 *      scalar type); a string becomes up to 8 of the value bytes, an array one of int32s
 *   1  removes a key
 *   2  reshapes a tensor: 1 + argument % 4 dimensions, each a dimension found in the model
 *   3  gives a tensor a type found in the model
 *   4  removes a tensor
 * Edits the GGUF writer would refuse (a shape its type cannot hold) are skipped.
 */
#define _GNU_SOURCE /* memfd_create */
#include "dllm.h"
#include "fuzz.h"
#include "gguf_edit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define EDIT_BYTES 12
#define EDITS_MAX  16
#define ELEMS_MAX  (64 << 20) /* elements of a reshaped tensor */
#define DIMS_MAX   64         /* distinct dimensions kept per model */
#define TYPES_MAX  16

#ifndef FUZZ_MODELS
#define FUZZ_MODELS "models/llada-tiny-q4km.gguf", "models/dream-tiny-q4km.gguf"
#endif

static const char *const model_files[] = {FUZZ_MODELS};
#define N_MODELS (sizeof model_files / sizeof model_files[0])

/* What edits draw from: a model's keys, tensors, dimensions and tensor types. */
struct base {
    char *path;
    struct dllm_gguf *g;
    int64_t dims[DIMS_MAX];
    size_t n_dims;
    uint32_t types[TYPES_MAX];
    size_t n_types;
};

static struct base bases[N_MODELS];
static int memfd = -1;
static char memfd_path[64];

/* A tensor as the edits so far left it. */
struct shape {
    int n_dims;
    int64_t ne[4];
    uint32_t type;
    bool gone;
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    for (size_t i = 0; i < N_MODELS; i++) {
        struct base *b = &bases[i];
        struct dllm_error err;
        b->path = fuzz_fixture(model_files[i]);
        if (dllm_gguf_open(b->path, &b->g, &err) != DLLM_OK) {
            fprintf(stderr, "fuzz_model: %s\n", err.text);
            exit(1);
        }
        for (int64_t t = 0; t < dllm_gguf_n_tensors(b->g); t++) {
            const struct dllm_gguf_tensor *tn = dllm_gguf_tensor(b->g, t);
            for (int d = 0; d < tn->n_dims; d++) {
                size_t k = 0;
                while (k < b->n_dims && b->dims[k] != tn->ne[d])
                    k++;
                if (k == b->n_dims && k < DIMS_MAX)
                    b->dims[b->n_dims++] = tn->ne[d];
            }
            size_t k = 0;
            while (k < b->n_types && b->types[k] != tn->type)
                k++;
            if (k == b->n_types && k < TYPES_MAX)
                b->types[b->n_types++] = tn->type;
        }
    }
    memfd = memfd_create("fuzz_model", 0);
    if (memfd < 0) {
        perror("fuzz_model: memfd_create");
        exit(1);
    }
    snprintf(memfd_path, sizeof memfd_path, "/proc/self/fd/%d", memfd);
    return 0;
}

/* Operation 0: key k set to a value of its type, or of the scalar type the argument names. */
static void set_key(struct gguf_edit *e, const struct base *b, int64_t k, uint8_t arg,
                    const uint8_t *val)
{
    const char *key = dllm_gguf_kv_key(b->g, k);
    uint32_t type = dllm_gguf_kv_value(b->g, k)->type;
    if (arg & 0x80) {
        type = arg % DLLM_GGUF_N_TYPES;
        if (type == DLLM_GGUF_STRING || type == DLLM_GGUF_ARRAY)
            type = DLLM_GGUF_UINT32;
    }
    if (type == DLLM_GGUF_STRING) {
        char s[9];
        memcpy(s, val, 8);
        s[8] = '\0';
        gguf_edit_set_str(e, key, s);
    } else if (type == DLLM_GGUF_ARRAY) {
        int32_t v[2];
        memcpy(v, val, sizeof v);
        gguf_edit_set_i32_array(e, key, v, arg % 3);
    } else {
        uint8_t raw[4 + 8];
        memcpy(raw, &type, 4);
        memcpy(raw + 4, val, 8);
        if (type == DLLM_GGUF_BOOL)
            raw[4] &= 1;
        gguf_edit_set_raw(e, key, raw, 4 + dllm_gguf_value_size(type));
    }
}

/* Whether a tensor of type with these dimensions is one the writer stores. */
static bool storable(uint32_t type, int n_dims, const int64_t *ne)
{
    int64_t elems = 1;
    for (int d = 0; d < n_dims; d++) {
        if (ne[d] < 1 || ne[d] > ELEMS_MAX / elems)
            return false;
        elems *= ne[d];
    }
    return ne[0] % dllm_type_block_elems(type) == 0;
}

/* Applies one edit to e, whose tensors are as cur says. */
static void apply(struct gguf_edit *e, const struct base *b, const uint8_t *p, struct shape *cur)
{
    uint8_t op = p[0] % 5, arg = p[1];
    unsigned idx = (unsigned)p[2] | (unsigned)p[3] << 8;
    const uint8_t *val = p + 4;
    int64_t n_kv = dllm_gguf_n_kv(b->g), n_t = dllm_gguf_n_tensors(b->g);
    if (op <= 1) {
        int64_t k = idx % n_kv;
        if (op == 0)
            set_key(e, b, k, arg, val);
        else
            gguf_edit_remove(e, dllm_gguf_kv_key(b->g, k));
        return;
    }
    int64_t t = idx % n_t;
    const char *name = dllm_gguf_tensor(b->g, t)->name;
    struct shape *c = &cur[t];
    if (c->gone)
        return;
    if (op == 2) {
        struct shape next = *c;
        next.n_dims = 1 + arg % 4;
        for (int d = 0; d < next.n_dims; d++)
            next.ne[d] = b->dims[val[d] % b->n_dims];
        if (storable(next.type, next.n_dims, next.ne)) {
            *c = next;
            gguf_edit_set_tensor_shape(e, name, c->n_dims, c->ne);
        }
    } else if (op == 3) {
        uint32_t type = b->types[arg % b->n_types];
        if (storable(type, c->n_dims, c->ne)) {
            c->type = type;
            gguf_edit_set_tensor_type(e, name, type);
        }
    } else {
        gguf_edit_remove_tensor(e, name);
        c->gone = true;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct base *b = &bases[size ? data[0] % N_MODELS : 0];
    int64_t n_t = dllm_gguf_n_tensors(b->g);
    struct shape *cur = calloc((size_t)n_t, sizeof *cur);
    if (!cur)
        return 0;
    for (int64_t t = 0; t < n_t; t++) {
        const struct dllm_gguf_tensor *tn = dllm_gguf_tensor(b->g, t);
        cur[t] = (struct shape){.n_dims = tn->n_dims, .type = tn->type};
        memcpy(cur[t].ne, tn->ne, sizeof cur[t].ne);
    }
    struct gguf_edit *e = gguf_edit_load(b->path);
    for (size_t i = 1, k = 0; i + EDIT_BYTES <= size && k < EDITS_MAX; i += EDIT_BYTES, k++)
        apply(e, b, data + i, cur);
    size_t n;
    void *image = gguf_edit_build(e, &n, NULL);
    gguf_edit_free(e);
    free(cur);
    if (ftruncate(memfd, 0) != 0 || pwrite(memfd, image, n, 0) != (ssize_t)n)
        abort();
    free(image);

    struct dllm_model *m;
    if (dllm_model_open(memfd_path, NULL, &m, NULL) != DLLM_OK)
        return 0;
    fuzz_accepted++;
    struct dllm_model_experts x = dllm_model_experts(m);
    if (dllm_model_n_layer(m) < 1 || dllm_model_n_embd(m) < 1 || dllm_model_n_vocab(m) < 1 ||
        dllm_model_n_head(m) < 1 || dllm_model_n_head_kv(m) < 1 ||
        dllm_model_n_head(m) % dllm_model_n_head_kv(m) != 0 ||
        dllm_model_mask_id(m) >= dllm_model_n_vocab(m) || x.n_used > x.n_expert)
        abort();
    dllm_model_close(m);
    return 0;
}
