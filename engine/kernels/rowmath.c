/* The table of row-maths variants (kernels/rowmath.h), chosen alongside the matrix kernels. */
#include "config.h"

#include "kernels/rowmath.h"

#include "kernels/cpu.h"

static const struct dllm_rowmath variants[] = {
    {"ref", 0, dllm_rowmath_max_ref, dllm_rowmath_exp_ref, dllm_rowmath_sum_ref,
     dllm_rowmath_sum_from_ref, dllm_rowmath_scale_ref, dllm_rowmath_neg_entropy_ref,
     dllm_rowmath_gumbel_argmax_ref, dllm_rowmath_band_ref, dllm_rowmath_keep_ref},
    {"avx2", DLLM_CPU_AVX2, dllm_rowmath_max_avx2, dllm_rowmath_exp_avx2, dllm_rowmath_sum_avx2,
     dllm_rowmath_sum_from_avx2, dllm_rowmath_scale_avx2, dllm_rowmath_neg_entropy_avx2,
     dllm_rowmath_gumbel_argmax_avx2, dllm_rowmath_band_ref, dllm_rowmath_keep_ref},
    {"avx512", DLLM_CPU_AVX2 | DLLM_CPU_AVX512F | DLLM_CPU_AVX512DQ, dllm_rowmath_max_avx512,
     dllm_rowmath_exp_avx512, dllm_rowmath_sum_avx512, dllm_rowmath_sum_from_avx512,
     dllm_rowmath_scale_avx512, dllm_rowmath_neg_entropy_avx512, dllm_rowmath_gumbel_argmax_avx512,
     dllm_rowmath_band_avx512, dllm_rowmath_keep_avx512},
};
#define N_VARIANTS (sizeof variants / sizeof variants[0])

const struct dllm_rowmath *dllm_rowmath_all(size_t *n)
{
    *n = N_VARIANTS;
    return variants;
}

bool dllm_rowmath_usable(const struct dllm_rowmath *rm)
{
    return (dllm_cpu_features() & rm->features) == rm->features;
}

enum dllm_status dllm_rowmath_select(const char *force, const struct dllm_rowmath **out,
                                     struct dllm_error *err)
{
    const struct dllm_kernels *k;
    enum dllm_status st = dllm_kernels_select(force, &k, err);
    if (st != DLLM_OK)
        return st;
    size_t i = N_VARIANTS;
    while ((variants[i - 1].features & k->features) != variants[i - 1].features)
        i--; /* the reference, variants[0], needs nothing */
    *out = &variants[i - 1];
    return DLLM_OK;
}
