/* Scalar reference kernels of a transformer block other than matrix products (kernels/ops.h). */
#include "kernels/ops.h"

#include <math.h>

void dllm_rms_norm_ref(const float *x, const float *g, float eps, int64_t n, float *y)
{
    double sum = 0.0;
    for (int64_t j = 0; j < n; j++) {
        sum += (double)x[j] * x[j];
    }
    const float mean = (float)(sum / (double)n);
    const float s = 1.0f / sqrtf(mean + eps);
    for (int64_t j = 0; j < n; j++) {
        y[j] = (x[j] * s) * g[j];
    }
}

void dllm_rope_table(float base, int64_t n_rot, int64_t n_pos, float *cos, float *sin)
{
    const float step = powf(base, -2.0f / (float)n_rot);
    for (int64_t p = 0; p < n_pos; p++) {
        float theta = (float)p;
        for (int64_t j = 0; j < n_rot / 2; j++) {
            cos[p * (n_rot / 2) + j] = cosf(theta);
            sin[p * (n_rot / 2) + j] = sinf(theta);
            theta *= step;
        }
    }
}

void dllm_rope_ref(float *x, int64_t n_heads, int64_t head_dim, int64_t n_rot,
                   enum dllm_rope_mode mode, const float *cos, const float *sin)
{
    const int64_t half = n_rot / 2;
    for (int64_t h = 0; h < n_heads; h++) {
        float *xh = x + h * head_dim;
        for (int64_t j = 0; j < half; j++) {
            const int64_t a = mode == DLLM_ROPE_NEOX ? j : 2 * j;
            const int64_t b = mode == DLLM_ROPE_NEOX ? j + half : 2 * j + 1;
            const float x0 = xh[a], x1 = xh[b];
            xh[a] = x0 * cos[j] - x1 * sin[j];
            xh[b] = x0 * sin[j] + x1 * cos[j];
        }
    }
}

void dllm_attention_ref(const float *q, const float *k, const float *v, int64_t L, int64_t n_head,
                        int64_t n_kv, int64_t head_dim, float scale, int64_t i0, int64_t i1,
                        int64_t g0, int64_t g1, float *scores, float *out)
{
    const int64_t group = n_head / n_kv;
    const int64_t q_stride = n_head * head_dim, kv_stride = n_kv * head_dim;
    for (int64_t i = i0; i < i1; i++) {
        for (int64_t h = g0 * group; h < g1 * group; h++) {
            const float *qi = q + i * q_stride + h * head_dim;
            const int64_t kv_off = (h / group) * head_dim;
            float max = -INFINITY;
            for (int64_t j = 0; j < L; j++) {
                const float *kj = k + j * kv_stride + kv_off;
                float dot = 0.0f;
                for (int64_t d = 0; d < head_dim; d++) {
                    dot += qi[d] * kj[d];
                }
                scores[j] = dot * scale;
                max = fmaxf(max, scores[j]);
            }
            double sum = 0.0;
            for (int64_t j = 0; j < L; j++) {
                scores[j] = expf(scores[j] - max);
                sum += scores[j];
            }
            const float inv = (float)(1.0 / sum);
            float *oi = out + i * q_stride + h * head_dim;
            for (int64_t d = 0; d < head_dim; d++) {
                oi[d] = 0.0f;
            }
            for (int64_t j = 0; j < L; j++) {
                const float *vj = v + j * kv_stride + kv_off;
                const float p = scores[j] * inv;
                for (int64_t d = 0; d < head_dim; d++) {
                    oi[d] += p * vj[d];
                }
            }
        }
    }
}

void dllm_swiglu_ref(float *gate, const float *up, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        gate[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
    }
}

void dllm_add_ref(float *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        y[i] += x[i];
    }
}
