/* The table of float16 conversion variants (kernels/fp16.h), chosen alongside the matrix kernels.
 */
#include "config.h"

#include "kernels/fp16.h"

#include "kernels/cpu.h"

static const struct dllm_fp16_kernels variants[] = {
    {"ref", 0, dllm_fp16_from_f32_ref, dllm_fp16_to_f32_ref},
    {"avx2", DLLM_CPU_AVX2 | DLLM_CPU_F16C, dllm_fp16_from_f32_avx2, dllm_fp16_to_f32_avx2},
    {"avx512", DLLM_CPU_AVX512F, dllm_fp16_from_f32_avx512, dllm_fp16_to_f32_avx512},
};
#define N_VARIANTS (sizeof variants / sizeof variants[0])

const struct dllm_fp16_kernels *dllm_fp16_all(size_t *n)
{
    *n = N_VARIANTS;
    return variants;
}

bool dllm_fp16_usable(const struct dllm_fp16_kernels *v)
{
    return (dllm_cpu_features() & v->features) == v->features;
}

const struct dllm_fp16_kernels *dllm_fp16_for(const struct dllm_kernels *k)
{
    size_t i = N_VARIANTS;
    while ((variants[i - 1].features & k->features) != variants[i - 1].features)
        i--; /* the reference, variants[0], needs nothing */
    return &variants[i - 1];
}
