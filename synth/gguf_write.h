/*
 * GGUF writer: metadata keys of every type and tensor infos are collected first, then the
 * header is written and the tensor data streamed after it, tensor by tensor in the order they
 * were added, so that a file of any size is written without holding its data in memory.
 *
 * The layout is the one llama.cpp's reader expects (ggml/include/gguf.h): version 3,
 * keys in the order they were first set, tensor infos in the order added with offsets packed
 * in that order, each tensor padded with zeros to the alignment (32 unless changed), and the
 * data section starting at the first aligned byte after the header.
 *
 * A file is written as PATH.tmp and renamed to PATH once complete; on any failure, and when
 * the writer is freed before dllm_gguf_writer_finish, the temporary file is removed. A PATH
 * that exists and is not a regular file (a device, a pipe) is written in place. Images can
 * also be built in memory.
 *
 *     dllm_gguf_writer_new(&w, err);
 *     dllm_gguf_writer_set_str(w, "general.architecture", "llada", err);   // ... more keys
 *     dllm_gguf_writer_add_tensor(w, "output.weight", DLLM_TYPE_Q6_K, 2, ne, err);
 *     dllm_gguf_writer_begin(w, path, err);        // writes the header
 *     dllm_gguf_writer_write(w, bytes, n, err);    // as often as needed, in tensor order
 *     dllm_gguf_writer_finish(w, NULL, NULL, err); // checks, flushes, syncs and renames
 *     dllm_gguf_writer_free(w);
 */
#ifndef DLLM_GGUF_WRITE_H
#define DLLM_GGUF_WRITE_H

#include "dllm.h"

#include <stddef.h>
#include <stdint.h>

struct dllm_gguf_writer;

/* Where one key/value pair landed: byte offsets from the start of the file. */
struct dllm_gguf_kv_pos {
    size_t key;   /* the key's length field */
    size_t type;  /* the value type field */
    size_t value; /* the value */
};

/* Where one tensor info landed: byte offsets from the start of the file. */
struct dllm_gguf_tensor_pos {
    size_t name;   /* the name's length field */
    size_t n_dims; /* the dimension count */
    size_t dims;   /* ne[0] */
    size_t type;   /* the tensor type id */
    size_t offset; /* the data offset field */
};

/* A writer with no keys and no tensors, alignment 32. */
enum dllm_status dllm_gguf_writer_new(struct dllm_gguf_writer **out, struct dllm_error *err);

/* Frees the writer; an unfinished file's temporary is removed. Accepts NULL. */
void dllm_gguf_writer_free(struct dllm_gguf_writer *w);

/*
 * The alignment of the data section and of every tensor (a power of two, 1 to 2^20). It does
 * not write general.alignment: set that key too when it is not 32.
 */
enum dllm_status dllm_gguf_writer_set_alignment(struct dllm_gguf_writer *w, size_t alignment,
                                                struct dllm_error *err);

/*
 * Sets a key to a copy of a value of any type, replacing the value in place when the key is
 * already set, else appending the key. Arrays must come from a reader (dllm_gguf_find and
 * friends), arrays of arrays included; build new arrays with the two functions below. Every
 * setter checks that writing has not begun and that the key is not empty; on failure the key
 * is left unset.
 */
enum dllm_status dllm_gguf_writer_set(struct dllm_gguf_writer *w, const char *key,
                                      const struct dllm_gguf_value *value, struct dllm_error *err);

/* Shorthands of dllm_gguf_writer_set for the types model metadata uses. */
enum dllm_status dllm_gguf_writer_set_u32(struct dllm_gguf_writer *w, const char *key, uint32_t v,
                                          struct dllm_error *err);
enum dllm_status dllm_gguf_writer_set_i32(struct dllm_gguf_writer *w, const char *key, int32_t v,
                                          struct dllm_error *err);
enum dllm_status dllm_gguf_writer_set_f32(struct dllm_gguf_writer *w, const char *key, float v,
                                          struct dllm_error *err);
enum dllm_status dllm_gguf_writer_set_bool(struct dllm_gguf_writer *w, const char *key, bool v,
                                           struct dllm_error *err);
/* A NUL-terminated string. */
enum dllm_status dllm_gguf_writer_set_str(struct dllm_gguf_writer *w, const char *key,
                                          const char *v, struct dllm_error *err);

/*
 * Sets a key to an array of n numbers or bools of type elem, given packed as the file stores
 * them (little-endian, bools as bytes 0 or 1).
 */
enum dllm_status dllm_gguf_writer_set_array(struct dllm_gguf_writer *w, const char *key,
                                            enum dllm_gguf_type elem, const void *values,
                                            uint64_t n, struct dllm_error *err);

/* Sets a key to an array of n NUL-terminated strings. */
enum dllm_status dllm_gguf_writer_set_str_array(struct dllm_gguf_writer *w, const char *key,
                                                const char *const *values, uint64_t n,
                                                struct dllm_error *err);

/*
 * Sets a key to n bytes written as they are: the value type id and the encoded value. Nothing
 * is checked; this is for tests that build malformed files.
 */
enum dllm_status dllm_gguf_writer_set_raw(struct dllm_gguf_writer *w, const char *key,
                                          const void *bytes, size_t n, struct dllm_error *err);

/* Removes a key; nothing happens when it is not set. */
void dllm_gguf_writer_remove(struct dllm_gguf_writer *w, const char *key);

/*
 * Adds a tensor info: 1 to 4 dimensions ne[0 .. n_dims-1] (ne[0] contiguous), each at least
 * 1, ne[0] a whole number of the type's blocks, a name not used before. Its data comes after
 * the data of the tensors added before it. The 63-byte limit of ggml names is not checked.
 */
enum dllm_status dllm_gguf_writer_add_tensor(struct dllm_gguf_writer *w, const char *name,
                                             uint32_t type, int n_dims, const int64_t *ne,
                                             struct dllm_error *err);

/* Bytes of tensor i's data, without padding (0 when there is no tensor i). */
uint64_t dllm_gguf_writer_tensor_size(const struct dllm_gguf_writer *w, size_t i);

/* Bytes of the data section: every tensor's data and padding. */
uint64_t dllm_gguf_writer_data_size(const struct dllm_gguf_writer *w);

/* Bytes of the data section written so far, padding included. */
uint64_t dllm_gguf_writer_data_written(const struct dllm_gguf_writer *w);

/*
 * Writes the header to PATH.tmp (PATH in place when it exists and is not a regular file), or
 * with path NULL to a memory image. Keys and tensors can no longer change.
 */
enum dllm_status dllm_gguf_writer_begin(struct dllm_gguf_writer *w, const char *path,
                                        struct dllm_error *err);

/*
 * Appends the next n bytes of tensor data (zeros when data is NULL), in the order the tensors
 * were added; a write may span tensors, and padding goes in between by itself. More bytes
 * than the tensors hold is DLLM_ERR_ARG.
 */
enum dllm_status dllm_gguf_writer_write(struct dllm_gguf_writer *w, const void *data, size_t n,
                                        struct dllm_error *err);

/*
 * Completes the output once every tensor's data is written: a file is flushed, synced and
 * renamed into place; a memory image is returned in *image (malloc'd, the caller frees it)
 * and *size. Errors (missing data, a full disk) remove the temporary file.
 */
enum dllm_status dllm_gguf_writer_finish(struct dllm_gguf_writer *w, void **image, size_t *size,
                                         struct dllm_error *err);

/* After dllm_gguf_writer_begin: where key i and tensor i were written, and the data section. */
const struct dllm_gguf_kv_pos *dllm_gguf_writer_kv_pos(const struct dllm_gguf_writer *w, size_t i);
const struct dllm_gguf_tensor_pos *dllm_gguf_writer_tensor_pos(const struct dllm_gguf_writer *w,
                                                               size_t i);
size_t dllm_gguf_writer_data_offset(const struct dllm_gguf_writer *w);

/* The number of keys and of tensors. */
size_t dllm_gguf_writer_n_kv(const struct dllm_gguf_writer *w);
size_t dllm_gguf_writer_n_tensors(const struct dllm_gguf_writer *w);

#endif
