/*
 * The F16C float16 conversions (kernels/fp16.h), 8 elements an instruction: vcvtps2ph with
 * round to nearest even (the immediate, not MXCSR) and vcvtph2ps; the last n mod 8 elements
 * by the reference.
 */
#include "config.h"

#include "kernels/fp16.h"

#include <immintrin.h>

void dllm_fp16_from_f32_avx2(const float *x, int64_t n, dllm_fp16 *y)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h =
            _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm_storeu_si128((__m128i *)(y + i), h);
    }
    dllm_fp16_from_f32_ref(x + i, n - i, y + i);
}

void dllm_fp16_to_f32_avx2(const dllm_fp16 *x, int64_t n, float *y)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i))));
    dllm_fp16_to_f32_ref(x + i, n - i, y + i);
}
