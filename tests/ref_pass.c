/*
 * A cached pass from the reference kernels (ref_pass.h): the graph of forward.c written out
 * again, position by position, over plain arrays, sharing no code with forward.c or the
 * backends; only the scalar kernels of kernels/ are common.
 */
#include "config.h"

#include "ref_pass.h"

#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "kernels/route.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    ck_assert_ptr_nonnull(p);
    return p;
}

/* y[L, N] = x[L, K] W^T for the matrix W [N, K] of tensor t (expert e of a stacked one). */
static void ref_matmul(const struct dllm_gguf_tensor *t, int64_t e, const float *x, int64_t L,
                       float *y)
{
    const int64_t K = t->ne[0], N = t->ne[1];
    const uint8_t *w = (const uint8_t *)t->data + (size_t)e * (t->size / (size_t)t->ne[2]);
    void *act = xcalloc(dllm_matmul_scratch_bytes(t->type, K, L), 1);
    dllm_matmul_quantize_ref(t->type, x, K, L, act);
    dllm_matmul_rows_ref(t->type, w, K, 0, N, act, L, y, N);
    free(act);
}

/*
 * A MoE layer's FFN of one normed row xn [n_embd] into out: the experts the router keeps, in
 * the order of their index, each down(silu(gate xn) * up xn) times its weight, summed.
 */
static void ref_moe_row(const struct dllm_model *m, const struct dllm_layer *l, const float *xn,
                        float *out)
{
    const struct dllm_hparams *hp = &m->hp;
    const int64_t E = hp->n_expert, K = hp->n_expert_used, d = hp->n_embd, ff = hp->n_ff_exp;
    float *logits = xcalloc((size_t)E, sizeof *logits), *w = xcalloc((size_t)K, sizeof *w);
    float *gate = xcalloc((size_t)ff, sizeof *gate), *up = xcalloc((size_t)ff, sizeof *up);
    float *y = xcalloc((size_t)d, sizeof *y), margin;
    int32_t *ids = xcalloc((size_t)K, sizeof *ids);
    ref_matmul(l->router, 0, xn, 1, logits);
    dllm_route(logits, E, K, hp->expert_norm, ids, w, &margin);
    for (int64_t x = 0; x < d; x++)
        out[x] = 0.0f;
    for (int64_t e = 0; e < E; e++) {
        for (int64_t j = 0; j < K; j++) {
            if (ids[j] != e)
                continue;
            ref_matmul(l->gate_exps, e, xn, 1, gate);
            ref_matmul(l->up_exps, e, xn, 1, up);
            dllm_swiglu_ref(gate, up, ff);
            ref_matmul(l->down_exps, e, gate, 1, y);
            for (int64_t x = 0; x < d; x++)
                out[x] += w[j] * y[x];
        }
    }
    free(logits);
    free(w);
    free(gate);
    free(up);
    free(y);
    free(ids);
}

void ref_pass(const struct dllm_model *m, const int32_t *ids, int64_t n, int64_t begin, int64_t end,
              bool f16, float *kv, const int32_t *rows, int64_t n_rows, float *logits)
{
    const struct dllm_hparams *hp = &m->hp;
    const int64_t d = hp->n_embd, hd = hp->head_dim, half = hp->n_rot / 2, W = end - begin;
    const int64_t dq = hp->n_head * hd, dkv = hp->n_head_kv * hd;
    const int64_t ff = hp->n_expert ? 0 : hp->n_ff;
    float *x = xcalloc((size_t)(n * d), sizeof(float)),
          *xn = xcalloc((size_t)(n * d), sizeof(float));
    float *q = xcalloc((size_t)(n * dq), sizeof(float)),
          *att = xcalloc((size_t)(n * dq), sizeof(float));
    float *gate = xcalloc((size_t)(n * ff), sizeof(float)),
          *up = xcalloc((size_t)(n * ff), sizeof(float));
    float *cs = xcalloc((size_t)(n * half), sizeof(float)),
          *sn = xcalloc((size_t)(n * half), sizeof(float));
    float *scores = xcalloc((size_t)n, sizeof(float));
    float *out = xcalloc((size_t)(n_rows * d), sizeof(float));
    struct dllm_error err = {0};
    dllm_rope_table(hp->rope_base, hp->n_rot, n, cs, sn);
    for (int64_t i = begin; i < end; i++)
        ck_assert_int_eq(
            dllm_gguf_tensor_decode(m->tok_embd, (int64_t)ids[i] * d, d, x + i * d, &err), DLLM_OK);
    for (int64_t il = 0; il < hp->n_layer; il++) {
        const struct dllm_layer *l = &m->layers[il];
        float *k = kv + 2 * il * n * dkv, *v = k + n * dkv;
        for (int64_t i = begin; i < end; i++)
            dllm_rms_norm_ref(x + i * d, l->attn_norm, hp->norm_eps, d, xn + i * d);
        ref_matmul(l->wq, 0, xn + begin * d, W, q + begin * dq);
        ref_matmul(l->wk, 0, xn + begin * d, W, k + begin * dkv);
        ref_matmul(l->wv, 0, xn + begin * d, W, v + begin * dkv);
        for (int64_t i = begin; i < end; i++) {
            if (l->bq)
                dllm_add_ref(q + i * dq, l->bq, dq);
            if (l->bk)
                dllm_add_ref(k + i * dkv, l->bk, dkv);
            if (l->bv)
                dllm_add_ref(v + i * dkv, l->bv, dkv);
            for (int64_t h = 0; l->q_norm && h < hp->n_head; h++)
                dllm_rms_norm_ref(q + i * dq + h * hd, l->q_norm, hp->norm_eps, hd,
                                  q + i * dq + h * hd);
            for (int64_t h = 0; l->k_norm && h < hp->n_head_kv; h++)
                dllm_rms_norm_ref(k + i * dkv + h * hd, l->k_norm, hp->norm_eps, hd,
                                  k + i * dkv + h * hd);
            dllm_rope_ref(q + i * dq, hp->n_head, hd, hp->n_rot, hp->rope_mode, cs + i * half,
                          sn + i * half);
            dllm_rope_ref(k + i * dkv, hp->n_head_kv, hd, hp->n_rot, hp->rope_mode, cs + i * half,
                          sn + i * half);
            for (int64_t j = 0; f16 && j < dkv; j++) {
                k[i * dkv + j] = dllm_fp16_to_f32(dllm_f32_to_fp16(k[i * dkv + j]));
                v[i * dkv + j] = dllm_fp16_to_f32(dllm_f32_to_fp16(v[i * dkv + j]));
            }
        }
        dllm_attention_ref(q, k, v, n, hp->n_head, hp->n_head_kv, hd, 1.0f / sqrtf((float)hd),
                           begin, end, 0, hp->n_head_kv, scores, att);
        ref_matmul(l->wo, 0, att + begin * dq, W, xn + begin * d);
        dllm_add_ref(x + begin * d, xn + begin * d, W * d);
        for (int64_t i = begin; i < end; i++)
            dllm_rms_norm_ref(x + i * d, l->ffn_norm, hp->norm_eps, d, xn + i * d);
        if (hp->n_expert) {
            float *row = xcalloc((size_t)d, sizeof *row);
            for (int64_t i = begin; i < end; i++) {
                ref_moe_row(m, l, xn + i * d, row);
                dllm_add_ref(x + i * d, row, d);
            }
            free(row);
        } else {
            ref_matmul(l->w_gate, 0, xn + begin * d, W, gate + begin * ff);
            ref_matmul(l->w_up, 0, xn + begin * d, W, up + begin * ff);
            dllm_swiglu_ref(gate + begin * ff, up + begin * ff, W * ff);
            ref_matmul(l->w_down, 0, gate + begin * ff, W, xn + begin * d);
            dllm_add_ref(x + begin * d, xn + begin * d, W * d);
        }
    }
    for (int64_t r = 0; r < n_rows; r++)
        dllm_rms_norm_ref(x + rows[r] * d, m->output_norm, hp->norm_eps, d, out + r * d);
    ref_matmul(m->output, 0, out, n_rows, logits);
    free(x);
    free(xn);
    free(q);
    free(att);
    free(gate);
    free(up);
    free(cs);
    free(sn);
    free(scores);
    free(out);
}
