/*
 * Makes a GGUF fuzz seed from a `dllm synth` model (`make fuzz-seeds`), so that no committed
 * seed is a copy or a slice of a fixture file. "vocab" keeps the tokenizer.* metadata and no
 * tensor (the vocabulary loader's input); "norms" keeps the other metadata and the F32 norm
 * vectors (a small model file for the GGUF reader).
 *
 * Usage: seed_gguf vocab|norms IN.gguf OUT.gguf
 */
#include "dllm.h"
#include "gguf_edit.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether name ends with suffix. */
static bool ends_with(const char *name, const char *suffix)
{
    size_t n = strlen(name), k = strlen(suffix);
    return n >= k && strcmp(name + n - k, suffix) == 0;
}

int main(int argc, char **argv)
{
    if (argc != 4 || (strcmp(argv[1], "vocab") != 0 && strcmp(argv[1], "norms") != 0)) {
        fprintf(stderr, "usage: seed_gguf vocab|norms IN.gguf OUT.gguf\n");
        return 2;
    }
    bool vocab = strcmp(argv[1], "vocab") == 0;
    struct dllm_gguf *g;
    struct dllm_error err;
    if (dllm_gguf_open(argv[2], &g, &err) != DLLM_OK) {
        fprintf(stderr, "seed_gguf: error: %s\n", err.text);
        return 1;
    }
    struct gguf_edit *e = gguf_edit_load(argv[2]);
    for (int64_t i = 0; i < dllm_gguf_n_kv(g); i++) {
        const char *key = dllm_gguf_kv_key(g, i);
        if ((strncmp(key, "tokenizer.", 10) == 0) != vocab)
            gguf_edit_remove(e, key);
    }
    for (int64_t i = 0; i < dllm_gguf_n_tensors(g); i++) {
        const char *name = dllm_gguf_tensor(g, i)->name;
        if (vocab || !ends_with(name, "norm.weight"))
            gguf_edit_remove_tensor(e, name);
    }
    size_t size;
    void *image = gguf_edit_build(e, &size, NULL);
    FILE *f = fopen(argv[3], "wb");
    bool ok = f && fwrite(image, 1, size, f) == size;
    if (f && fclose(f) != 0)
        ok = false;
    if (!ok)
        fprintf(stderr, "seed_gguf: error: cannot write %s\n", argv[3]);
    free(image);
    gguf_edit_free(e);
    dllm_gguf_close(g);
    return ok ? 0 : 1;
}
