/*
 * The AVX-512F float16 conversions (kernels/fp16.h), 16 elements an instruction: vcvtps2ph
 * with round to nearest even (the immediate, not MXCSR) and vcvtph2ps; the last n mod 16
 * elements by the reference.
 */
#include "config.h"

#include "kernels/fp16.h"

#include <immintrin.h>

void dllm_fp16_from_f32_avx512(const float *x, int64_t n, dllm_fp16 *y)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256i h =
            _mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm256_storeu_si256((__m256i *)(y + i), h);
    }
    dllm_fp16_from_f32_ref(x + i, n - i, y + i);
}

void dllm_fp16_to_f32_avx512(const dllm_fp16 *x, int64_t n, float *y)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(x + i))));
    dllm_fp16_to_f32_ref(x + i, n - i, y + i);
}
