/* The scalar float16 conversions (kernels/fp16.h): the specification of the variants. */
#include "config.h"

#include "kernels/fp16.h"

#include "gguf/quant.h"

void dllm_fp16_from_f32_ref(const float *x, int64_t n, dllm_fp16 *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = dllm_f32_to_fp16(x[i]);
}

void dllm_fp16_to_f32_ref(const dllm_fp16 *x, int64_t n, float *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = dllm_fp16_to_f32(x[i]);
}
