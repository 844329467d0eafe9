/* The vocabularies of fixture files, for the targets that encode with them (see fuzz.h). */
#include "dllm.h"
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>

void fuzz_load_vocabs(const char *const *rels, size_t n, struct dllm_vocab **out)
{
    for (size_t i = 0; i < n; i++) {
        char *path = fuzz_fixture(rels[i]);
        struct dllm_gguf *g;
        struct dllm_error err;
        if (dllm_gguf_open(path, &g, &err) || dllm_vocab_load(g, &out[i], &err)) {
            fprintf(stderr, "fuzz: %s: %s\n", path, err.text);
            exit(1);
        }
        dllm_gguf_close(g);
        free(path);
    }
}
