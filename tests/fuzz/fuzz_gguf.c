/* libFuzzer target: the GGUF reader on arbitrary bytes, then every look-up it offers. */
#include "dllm.h"
#include "fuzz.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct dllm_gguf *g;
    struct dllm_error err;
    if (dllm_gguf_open_memory(data, size, &g, &err) != DLLM_OK)
        return 0;
    fuzz_accepted++;
    for (int64_t i = 0; i < dllm_gguf_n_kv(g); i++) {
        const struct dllm_gguf_value *v = dllm_gguf_kv_value(g, i);
        if (v->type == DLLM_GGUF_ARRAY && v->arr.n) {
            struct dllm_gguf_value e;
            dllm_gguf_array_get(v, v->arr.n - 1, &e);
        }
        uint32_t u;
        char *s = NULL;
        dllm_gguf_get_u32(g, dllm_gguf_kv_key(g, i), &u, &err);
        if (dllm_gguf_get_str(g, dllm_gguf_kv_key(g, i), &s, &err) == DLLM_OK)
            free(s);
    }
    static float out[4096];
    for (int64_t i = 0; i < dllm_gguf_n_tensors(g); i++) {
        const struct dllm_gguf_tensor *t = dllm_gguf_tensor(g, i);
        int64_t n = t->ne[0] < 4096 ? t->ne[0] : 0;
        if (n)
            dllm_gguf_tensor_decode(t, 0, n, out, &err);
    }
    dllm_gguf_close(g);
    return 0;
}
