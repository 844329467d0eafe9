/*
 * Test helper: rewrites a GGUF file's metadata and re-serialises it through the engine's GGUF
 * writer (engine/gguf_write.h), recording where each structure lands so tests can corrupt
 * exactly one field. It reads the original through the public API only to copy values.
 */
#ifndef DLLM_TESTS_GGUF_EDIT_H
#define DLLM_TESTS_GGUF_EDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gguf_edit;

/* Byte offsets of the structures in a serialised image. */
struct gguf_layout {
    size_t n_kv, n_tensors;
    size_t *kv_key;   /* [n_kv] the key's length field */
    size_t *kv_type;  /* [n_kv] the value type field */
    size_t *kv_value; /* [n_kv] the value */
    size_t *t_name;   /* [n_tensors] the name's length field */
    size_t *t_ndims;  /* [n_tensors] */
    size_t *t_dims;   /* [n_tensors] ne[0] */
    size_t *t_type;   /* [n_tensors] */
    size_t *t_offset; /* [n_tensors] */
    size_t data;      /* start of the data section */
};

/* Loads a GGUF file (aborts on failure: the inputs are fixtures). */
struct gguf_edit *gguf_edit_load(const char *path);
void gguf_edit_free(struct gguf_edit *e);

/* Removes a key (no-op when absent). */
void gguf_edit_remove(struct gguf_edit *e, const char *key);
/* Sets a key to a new value, replacing any old one in place or appending. */
void gguf_edit_set_u32(struct gguf_edit *e, const char *key, uint32_t v);
void gguf_edit_set_i32(struct gguf_edit *e, const char *key, int32_t v);
void gguf_edit_set_f32(struct gguf_edit *e, const char *key, float v);
void gguf_edit_set_bool(struct gguf_edit *e, const char *key, bool v);
void gguf_edit_set_str(struct gguf_edit *e, const char *key, const char *v);
/* Sets a key to an array of strings. */
void gguf_edit_set_str_array(struct gguf_edit *e, const char *key, const char *const *v, size_t n);
/* Sets a key to an array of int32 values. */
void gguf_edit_set_i32_array(struct gguf_edit *e, const char *key, const int32_t *v, size_t n);

/* Sets a key to a value given as raw bytes: type id and encoded value, as the file stores them. */
void gguf_edit_set_raw(struct gguf_edit *e, const char *key, const void *bytes, size_t n);

/*
 * Writes into raw (64 bytes) the raw bytes, as gguf_edit_set_raw takes them, of an array of two
 * arrays of one string each, "abc" then "xyz"; returns their length.
 */
size_t gguf_edit_nested_raw(uint8_t raw[64]);

/* Renames a tensor, or changes the recorded shape or type of one (data is kept as is). */
void gguf_edit_rename_tensor(struct gguf_edit *e, const char *name, const char *new_name);
void gguf_edit_set_tensor_shape(struct gguf_edit *e, const char *name, int n_dims,
                                const int64_t *ne);
void gguf_edit_set_tensor_type(struct gguf_edit *e, const char *name, uint32_t type);
/* Drops a tensor. */
void gguf_edit_remove_tensor(struct gguf_edit *e, const char *name);

/* Serialises to a malloc'd image; layout (if not NULL) receives the offsets (free with
 * gguf_layout_free). An edit is serialised once, by this or gguf_edit_save. */
void *gguf_edit_build(struct gguf_edit *e, size_t *size, struct gguf_layout *layout);
void gguf_layout_free(struct gguf_layout *layout);

/* Serialises to a file; returns the malloc'd path (in dir). */
char *gguf_edit_save(struct gguf_edit *e, const char *dir, const char *name);

#endif
