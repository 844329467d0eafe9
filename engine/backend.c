/* The table of backends a forward context can run on (backend.h). */
#include "config.h"

#include "backend.h"

#include <string.h>

static const struct dllm_backend_ops *const backends[] = {
    &dllm_backend_cpu,
#ifdef DLLM_HAVE_CUDA
    &dllm_backend_cuda,
#endif
};
#define N_BACKENDS (sizeof backends / sizeof backends[0])

enum dllm_status dllm_backend_find(const char *name, const struct dllm_backend_ops **out,
                                   struct dllm_error *err)
{
    if (!name || !*name)
        name = "cpu";
    for (size_t i = 0; i < N_BACKENDS; i++) {
        if (strcmp(backends[i]->name, name) == 0) {
            *out = backends[i];
            return DLLM_OK;
        }
    }
    return dllm_error_set(err, DLLM_ERR_ARG, "unknown backend '%s': this build has %s", name,
                          N_BACKENDS > 1 ? "cpu and cuda" : "cpu");
}

size_t dllm_kv_layer_floats(const struct dllm_model *model, int64_t n_tokens)
{
    const struct dllm_hparams *hp = &model->hp;
    return (size_t)n_tokens * (size_t)(hp->n_head_kv * hp->head_dim);
}

size_t dllm_kv_elem_bytes(enum dllm_cache_type type)
{
    return type == DLLM_CACHE_F16 ? sizeof(uint16_t) : sizeof(float);
}

void *dllm_kv_layer_data(const struct dllm_kv_cache *kv, const struct dllm_model *model,
                         int64_t layer)
{
    return (char *)kv->data + 2 * (size_t)layer * dllm_kv_layer_floats(model, kv->n_tokens) *
                                  dllm_kv_elem_bytes(kv->type);
}

size_t dllm_kv_storage_bytes(const struct dllm_model *model, int64_t n_tokens,
                             enum dllm_cache_type type)
{
    return 2 * (size_t)model->hp.n_layer * dllm_kv_layer_floats(model, n_tokens) *
           dllm_kv_elem_bytes(type);
}
