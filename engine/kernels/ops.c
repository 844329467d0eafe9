/* The table of block-kernel variants (kernels/ops.h), chosen alongside the matrix kernels. */
#include "kernels/ops.h"
#include "kernels/cpu.h"

#include <stdlib.h>

#define NEED_AVX2   (DLLM_CPU_AVX2 | DLLM_CPU_FMA)
#define NEED_AVX512 (NEED_AVX2 | DLLM_CPU_AVX512F)

static const struct dllm_ops variants[] = {
    {"ref", 0, dllm_rms_norm_ref, dllm_rope_ref, dllm_attention_ref, dllm_swiglu_ref, dllm_add_ref},
    {"avx2", NEED_AVX2, dllm_rms_norm_avx2, dllm_rope_avx2, dllm_attention_avx2, dllm_swiglu_avx2,
     dllm_add_avx2},
    {"avx512", NEED_AVX512, dllm_rms_norm_avx512, dllm_rope_avx512, dllm_attention_avx512,
     dllm_swiglu_avx512, dllm_add_avx512},
};
#define N_VARIANTS (sizeof variants / sizeof variants[0])

int64_t dllm_ops_attention_scratch(int64_t L, int64_t head_dim)
{
    return DLLM_ATTN_TILE * (head_dim + L) + 2 * L * head_dim;
}

const struct dllm_ops *dllm_ops_all(size_t *n)
{
    *n = N_VARIANTS;
    return variants;
}

bool dllm_ops_usable(const struct dllm_ops *ops)
{
    return (dllm_cpu_features() & ops->features) == ops->features;
}

const struct dllm_ops *dllm_ops_for(const struct dllm_kernels *k)
{
    size_t i = N_VARIANTS;
    while ((variants[i - 1].features & k->features) != variants[i - 1].features) {
        i--; /* the reference, variants[0], needs nothing */
    }
    return &variants[i - 1];
}

enum dllm_status dllm_ops_select(const char *force, const struct dllm_ops **out,
                                 struct dllm_error *err)
{
    const struct dllm_kernels *k;
    enum dllm_status st = dllm_kernels_select(force, &k, err);
    if (st == DLLM_OK) {
        *out = dllm_ops_for(k);
    }
    return st;
}
