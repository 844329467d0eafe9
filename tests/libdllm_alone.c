/*
 * A program linked against libdllm alone (no hub, no synth, no test framework), as an
 * embedder would link it: opens a model, runs one forward pass and prints the argmax of each
 * requested row. tests/cli_libdllm.sh runs it and checks the library's dependencies.
 *
 * usage: libdllm_alone MODEL.gguf ID,ID,...
 */
#include "dllm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: libdllm_alone MODEL.gguf ID,ID,...\n");
        return 2;
    }
    int32_t ids[256], rows[256];
    int64_t n = 0;
    for (char *p = argv[2]; *p && n < 256; n++) {
        ids[n] = (int32_t)strtol(p, &p, 10);
        rows[n] = (int32_t)n;
        p += *p == ',';
    }
    struct dllm_error err = {0};
    struct dllm_model *model = NULL;
    struct dllm_threadpool *pool = NULL;
    struct dllm_forward *fwd = NULL;
    struct dllm_forward_params fp;
    dllm_forward_params_init(&fp);
    fp.max_tokens = fp.max_rows = n;
    float *logits = NULL;
    if (dllm_model_open(argv[1], NULL, &model, &err) || dllm_threadpool_new(2, &pool, &err) ||
        (fp.pool = pool, dllm_forward_new(model, &fp, &fwd, &err)))
        goto fail;
    const int64_t V = dllm_model_n_vocab(model);
    if (!(logits = malloc((size_t)(n * V) * sizeof *logits))) {
        dllm_error_set(&err, DLLM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    const struct dllm_pass pass = {
        .ids = ids, .n_tokens = n, .rows = rows, .n_rows = n, .logits = logits};
    if (dllm_forward_run(fwd, &pass, &err))
        goto fail;
    for (int64_t r = 0; r < n; r++) {
        int64_t best = 0;
        for (int64_t v = 1; v < V; v++)
            best = logits[r * V + v] > logits[r * V + best] ? v : best;
        printf("%s%lld", r ? "," : "", (long long)best);
    }
    printf("\n");
fail:
    if (err.status)
        fprintf(stderr, "libdllm_alone: %s\n", err.text);
    free(logits);
    dllm_forward_free(fwd);
    dllm_threadpool_free(pool);
    dllm_model_close(model);
    return err.status ? 1 : 0;
}
