/*
 * The dequantization fixtures (fixtures/dequant/manifest.json): per quantization type one
 * tensor of a fixture model and the float32 values the `gguf` Python package dequantized from
 * it, the outside reference of every block decoder test.
 */
#ifndef DLLM_TESTS_DEQUANT_FIXTURE_H
#define DLLM_TESTS_DEQUANT_FIXTURE_H

#include "dllm.h"

#include <jansson.h>
#include <stdint.h>

/* The manifest: a non-empty array, or the program exits 1 saying what is wrong with it. */
json_t *dequant_manifest_load(void);

/* One manifest entry, opened. */
struct dequant_case {
    const json_t *entry;
    struct dllm_gguf *gguf;
    const struct dllm_gguf_tensor *t; /* the entry's tensor in its open model */
    int64_t n;                        /* its elements, as the entry says */
    float *want;                      /* [n] the gguf package's values */
    char what[512];                   /* "<model> <tensor>", for messages */
};

/* The string member key of a manifest entry; fails the test without it. */
const char *dequant_entry_str(const json_t *entry, const char *key);

/* Opens entry i's model, finds its tensor and reads its values; fails the test on a mismatch
 * of the element count or the values' size. */
void dequant_case_open(const json_t *manifest, size_t i, struct dequant_case *c);

void dequant_case_close(struct dequant_case *c);

/* Fails unless every got[i] is within 1e-6 relative of want[i] (float32 rounding). */
void dequant_expect_close(const float *got, const float *want, int64_t n, const char *what);

#endif
