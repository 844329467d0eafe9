/*
 * The reference forward pass: the block kernels against float64 formulas, and every case of
 * every fixture model against the float64 logits of shared/fixtures/logits, where each row
 * must be as close as llama.cpp's own row (the figures in llamacpp_vs_f64).
 */
#include "dllm.h"
#include "fixtures.h"
#include "forward_util.h"
#include "kernels/cpu.h"
#include "kernels/ops.h"
#include "lines.h"
#include "random_data.h"
#include "synth.h"

#include <check.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- deterministic random data ---------------------------------------------------------- */

/* Uniform in [-1, 1). */
static float rng_signed(uint64_t *s)
{
    return (float)((double)(rng_next(s) >> 11) * 0x1p-52 - 1.0);
}

static float *random_vector(int64_t n, float scale, uint64_t *s)
{
    float *v = malloc((size_t)n * sizeof *v);
    ck_assert_ptr_nonnull(v);
    for (int64_t i = 0; i < n; i++)
        v[i] = scale * rng_signed(s);
    return v;
}

/* ---- kernels against float64 ------------------------------------------------------------ */

/* Relative error of float results against float64: one float rounding per operation. */
#define TOL_NORM   1e-6
#define TOL_SWIGLU 1e-6
/* Attention: float dot products and weighted sums over L terms. */
#define TOL_ATTENTION 1e-5

START_TEST(test_rms_norm)
{
    static const int64_t sizes[] = {1, 7, 256, 4096};
    uint64_t s = 1;
    for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; c++) {
        const int64_t n = sizes[c];
        const float eps = 1e-5f;
        float *x = random_vector(n, 3.0f, &s), *g = random_vector(n, 2.0f, &s);
        float *y = malloc((size_t)n * sizeof *y);
        dllm_rms_norm_ref(x, g, eps, n, y);
        double sum = 0.0;
        for (int64_t j = 0; j < n; j++)
            sum += (double)x[j] * x[j];
        const double scale = 1.0 / sqrt(sum / (double)n + eps);
        for (int64_t j = 0; j < n; j++) {
            const double want = x[j] * scale * g[j];
            ck_assert_double_eq_tol(y[j], want, TOL_NORM * fabs(want) + 1e-30);
        }
        /* In place gives the same values. */
        dllm_rms_norm_ref(x, g, eps, n, x);
        ck_assert_mem_eq(x, y, (size_t)n * sizeof *y);
        free(x);
        free(g);
        free(y);
    }
}
END_TEST

/*
 * The table's angles are built by repeated float multiplication: angle j of position p carries
 * up to (j + 2) roundings of p * base^(-2j/n_rot).
 */
START_TEST(test_rope_table)
{
    const int64_t n_rot = 64, n_pos = 700;
    const float base = 500000.0f;
    float *c = malloc(n_pos * n_rot / 2 * sizeof *c), *sn = malloc(n_pos * n_rot / 2 * sizeof *sn);
    dllm_rope_table(base, n_rot, n_pos, c, sn);
    for (int64_t p = 0; p < n_pos; p++) {
        for (int64_t j = 0; j < n_rot / 2; j++) {
            const double theta = (double)p * pow(base, -2.0 * (double)j / (double)n_rot);
            const double tol = (double)(j + 2) * theta * 0x1p-23 + 0x1p-22;
            ck_assert_double_eq_tol(c[p * n_rot / 2 + j], cos(theta), tol);
            ck_assert_double_eq_tol(sn[p * n_rot / 2 + j], sin(theta), tol);
        }
    }
    /* Position 0 is the identity, position 1 starts at angle 1 exactly. */
    ck_assert_float_eq(c[0], 1.0f);
    ck_assert_float_eq(sn[0], 0.0f);
    ck_assert_float_eq(c[n_rot / 2], cosf(1.0f));
    free(c);
    free(sn);
}
END_TEST

/*
 * RoPE pairs: NORMAL rotates (2j, 2j+1), NEOX (j, j + n_rot/2); dimensions at or past n_rot
 * are left alone. Checked against the rotation written out in float64 for each pairing.
 */
START_TEST(test_rope_pairs)
{
    const int64_t n_heads = 3, head_dim = 16, n_rot = 12, half = n_rot / 2;
    uint64_t s = 2;
    float *cs = random_vector(half, 1.0f, &s), *sn = random_vector(half, 1.0f, &s);
    for (int mode = 0; mode < 2; mode++) {
        float *x = random_vector(n_heads * head_dim, 1.0f, &s);
        float *y = malloc(n_heads * head_dim * sizeof *y);
        memcpy(y, x, n_heads * head_dim * sizeof *y);
        dllm_rope_ref(y, n_heads, head_dim, n_rot, mode ? DLLM_ROPE_NEOX : DLLM_ROPE_NORMAL, cs,
                      sn);
        for (int64_t h = 0; h < n_heads; h++) {
            const float *xh = x + h * head_dim, *yh = y + h * head_dim;
            for (int64_t j = 0; j < half; j++) {
                const int64_t a = mode ? j : 2 * j, b = mode ? j + half : 2 * j + 1;
                ck_assert_double_eq_tol(yh[a], (double)xh[a] * cs[j] - (double)xh[b] * sn[j], 1e-6);
                ck_assert_double_eq_tol(yh[b], (double)xh[a] * sn[j] + (double)xh[b] * cs[j], 1e-6);
            }
            for (int64_t d = n_rot; d < head_dim; d++)
                ck_assert_float_eq(yh[d], xh[d]);
        }
        free(x);
        free(y);
    }
    free(cs);
    free(sn);
}
END_TEST

/*
 * The LLaDA trap (convert_hf_to_gguf.py's LLaDA permute): rows permuted inside each head as the
 * converter does, GGUF (h, 2j+s) <- HF (h, s*half + j), then NORMAL RoPE, equal NEOX RoPE on the
 * original rows.
 */
START_TEST(test_rope_permuted)
{
    const int64_t n_heads = 2, head_dim = 8, half = head_dim / 2;
    uint64_t s = 3;
    float *cs = random_vector(half, 1.0f, &s), *sn = random_vector(half, 1.0f, &s);
    float *hf = random_vector(n_heads * head_dim, 1.0f, &s);
    float gguf[16];
    for (int64_t h = 0; h < n_heads; h++)
        for (int64_t j = 0; j < half; j++)
            for (int sh = 0; sh < 2; sh++)
                gguf[h * head_dim + 2 * j + sh] = hf[h * head_dim + sh * half + j];
    dllm_rope_ref(hf, n_heads, head_dim, head_dim, DLLM_ROPE_NEOX, cs, sn);
    dllm_rope_ref(gguf, n_heads, head_dim, head_dim, DLLM_ROPE_NORMAL, cs, sn);
    for (int64_t h = 0; h < n_heads; h++)
        for (int64_t j = 0; j < half; j++)
            for (int sh = 0; sh < 2; sh++)
                ck_assert_float_eq(gguf[h * head_dim + 2 * j + sh],
                                   hf[h * head_dim + sh * half + j]);
    free(cs);
    free(sn);
    free(hf);
}
END_TEST

/* Grouped-query, bidirectional attention against the formula in float64. */
START_TEST(test_attention)
{
    const int64_t L = 9, n_head = 6, n_kv = 2, hd = 16, dq = n_head * hd, dkv = n_kv * hd;
    const float scale = 1.0f / sqrtf((float)hd);
    uint64_t s = 4;
    float *q = random_vector(L * dq, 2.0f, &s), *k = random_vector(L * dkv, 2.0f, &s);
    float *v = random_vector(L * dkv, 1.0f, &s);
    float *out = calloc((size_t)(L * dq), sizeof *out), scores[9];
    /* Calls over row ranges and kv head ranges compose to the whole. */
    dllm_attention_ref(q, k, v, L, n_head, n_kv, hd, scale, 0, 4, 0, 1, scores, out);
    dllm_attention_ref(q, k, v, L, n_head, n_kv, hd, scale, 0, 4, 1, 2, scores, out);
    dllm_attention_ref(q, k, v, L, n_head, n_kv, hd, scale, 4, L, 0, n_kv, scores, out);
    for (int64_t i = 0; i < L; i++) {
        for (int64_t h = 0; h < n_head; h++) {
            const int64_t g = h / (n_head / n_kv);
            double w[9], max = -INFINITY, sum = 0.0;
            for (int64_t j = 0; j < L; j++) {
                double dot = 0.0;
                for (int64_t d = 0; d < hd; d++)
                    dot += (double)q[i * dq + h * hd + d] * k[j * dkv + g * hd + d];
                w[j] = dot / sqrt((double)hd);
                max = fmax(max, w[j]);
            }
            for (int64_t j = 0; j < L; j++)
                sum += (w[j] = exp(w[j] - max));
            for (int64_t d = 0; d < hd; d++) {
                double o = 0.0;
                for (int64_t j = 0; j < L; j++)
                    o += w[j] / sum * v[j * dkv + g * hd + d];
                ck_assert_double_eq_tol(out[i * dq + h * hd + d], o, TOL_ATTENTION);
            }
        }
    }
    free(q);
    free(k);
    free(v);
    free(out);
}
END_TEST

START_TEST(test_swiglu_add)
{
    const int64_t n = 1000;
    uint64_t s = 5;
    float *g = random_vector(n, 8.0f, &s), *u = random_vector(n, 2.0f, &s);
    float *y = malloc(n * sizeof *y);
    memcpy(y, g, n * sizeof *y);
    dllm_swiglu_ref(y, u, n);
    for (int64_t i = 0; i < n; i++) {
        const double want = g[i] / (1.0 + exp(-(double)g[i])) * u[i];
        ck_assert_double_eq_tol(y[i], want, TOL_SWIGLU * fabs(want) + 1e-30);
    }
    memcpy(y, g, n * sizeof *y);
    dllm_add_ref(y, u, n);
    for (int64_t i = 0; i < n; i++)
        ck_assert_float_eq(y[i], g[i] + u[i]);
    free(g);
    free(u);
    free(y);
}
END_TEST

/* ---- fixture models against float64 logits ---------------------------------------------- */

/* The first TEST_N_REPRESENTATIVE (a dense and a MoE model) run in every build, the rest in the
 * sweep. */
static const char *const fixture_models[] = {
    "llada-tiny-q4km",    "llada-moe-tiny-q4km", "llada-tiny-q5km",
    "llada-tiny-q6k",     "llada-tiny-q80",      "llada-tiny-f16",
    "llada-tiny-bf16",    "dream-tiny-q4km",     "dream-tiny-realvocab-q4km",
    "llada-moe-tiny-q80", "rnd1-tiny-q4km",      "rnd1-tiny-q80",
};

/* Figures of a set of rows against the float64 reference. */
struct figures {
    double cos_min, rel_max, rel_median;
};

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Cosine and relative L2 error |a - b| / |b| of one row a against the reference b. */
static void row_error(const float *a, const float *b, int64_t n, double *cos_out, double *rel)
{
    double ab = 0.0, aa = 0.0, bb = 0.0, dd = 0.0;
    for (int64_t i = 0; i < n; i++) {
        ab += (double)a[i] * b[i];
        aa += (double)a[i] * a[i];
        bb += (double)b[i] * b[i];
        dd += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    }
    *cos_out = ab / sqrt(aa * bb);
    *rel = sqrt(dd / bb);
}

/* Per-row figures of rows [n_rows, n_vocab] against ref; rel[] receives each row's error. */
static struct figures compare_rows(const float *rows, const float *ref, int64_t n_rows,
                                   int64_t n_vocab, double *cos_row, double *rel_row)
{
    struct figures f = {1.0, 0.0, 0.0};
    double *sorted = malloc((size_t)n_rows * sizeof *sorted);
    for (int64_t r = 0; r < n_rows; r++) {
        row_error(rows + r * n_vocab, ref + r * n_vocab, n_vocab, &cos_row[r], &rel_row[r]);
        f.cos_min = fmin(f.cos_min, cos_row[r]);
        f.rel_max = fmax(f.rel_max, rel_row[r]);
        sorted[r] = rel_row[r];
    }
    qsort(sorted, (size_t)n_rows, sizeof *sorted, cmp_double);
    f.rel_median =
        n_rows % 2 ? sorted[n_rows / 2] : 0.5 * (sorted[n_rows / 2 - 1] + sorted[n_rows / 2]);
    free(sorted);
    return f;
}

static float *read_logits(const char *name, const char *kind, int64_t n_floats)
{
    char rel[256];
    size_t size;
    snprintf(rel, sizeof rel, "logits/%s.%s.f32", name, kind);
    float *v = fixture_read(rel, &size);
    ck_assert_uint_eq(size, (size_t)n_floats * sizeof(float));
    return v;
}

static double json_number(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    ck_assert_msg(json_is_number(v), "cases.json: %s is not a number", key);
    return json_number_value(v);
}

/* Whether expert e is among the n ids. */
static bool has_expert(const int32_t *ids, int64_t n, int64_t e)
{
    for (int64_t i = 0; i < n; i++)
        if (ids[i] == e)
            return true;
    return false;
}

/*
 * A MoE case's routing: at every layer and position dllm chose the same set of experts as the
 * float64 pass (<case>.route.json; the order inside a set is not significant), each with a
 * margin of at least 0.1 in router logits between the last kept and the best left out.
 */
static void check_routing(const char *name, const struct dllm_model *model, int64_t n,
                          const int32_t *experts, const float *margins)
{
    char rel[256];
    size_t size;
    snprintf(rel, sizeof rel, "logits/%s.route.json", name);
    char *text = fixture_read(rel, &size);
    json_error_t jerr;
    json_t *route = json_loadb(text, size, 0, &jerr);
    ck_assert_msg(json_is_object(route), "%s: %s", rel, jerr.text);
    const struct dllm_model_experts x = dllm_model_experts(model);
    const int64_t K = x.n_used;
    ck_assert_int_eq((int64_t)json_number(route, "n_expert"), x.n_expert);
    ck_assert_int_eq((int64_t)json_number(route, "n_expert_used"), K);
    json_t *layers = json_object_get(route, "layers");
    ck_assert_int_eq((int64_t)json_array_size(layers), dllm_model_n_layer(model));
    float least = INFINITY;
    for (int64_t il = 0; il < dllm_model_n_layer(model); il++) {
        json_t *want = json_object_get(json_array_get(layers, (size_t)il), "experts");
        ck_assert_int_eq((int64_t)json_array_size(want), n);
        for (int64_t i = 0; i < n; i++) {
            const int32_t *got = experts + (il * n + i) * K;
            json_t *ids = json_array_get(want, (size_t)i);
            ck_assert_int_eq((int64_t)json_array_size(ids), K);
            for (int64_t j = 0; j < K; j++) {
                const int64_t e = json_integer_value(json_array_get(ids, (size_t)j));
                ck_assert_msg(has_expert(got, K, e),
                              "%s layer %lld position %lld: expert %lld of the float64 pass "
                              "is not among dllm's",
                              name, (long long)il, (long long)i, (long long)e);
            }
            const float margin = margins[il * n + i];
            ck_assert_msg(margin >= 0.1f, "%s layer %lld position %lld: routing margin %.4f", name,
                          (long long)il, (long long)i, (double)margin);
            least = fminf(least, margin);
        }
    }
    printf("%-32s routing: the float64 pass's experts everywhere, least margin %.3f\n", name,
           (double)least);
    json_decref(route);
    free(text);
}

/*
 * The bar: every row's relative error at most llama.cpp's worst row plus 5%, the median at most
 * llama.cpp's plus 5%, and every row's cosine distance 1 - cos at most llama.cpp's worst plus
 * the same 5% on the error (1 - cos grows as the square of the error: 1.05^2).
 */
#define REL_MARGIN 1.05

/* One case: a pass over all positions, each row against float64 and llama.cpp's figures. */
static void check_case(struct dllm_forward *fwd, const struct dllm_model *model, json_t *c)
{
    const char *name = json_string_value(json_object_get(c, "name"));
    const int64_t n = (int64_t)json_number(c, "n_tokens");
    const int64_t n_vocab = (int64_t)json_number(c, "n_vocab");
    json_t *ids_json = json_object_get(c, "ids"), *bar = json_object_get(c, "llamacpp_vs_f64");
    ck_assert_ptr_nonnull(name);
    ck_assert_int_eq(n_vocab, dllm_model_n_vocab(model));
    ck_assert_int_eq((int64_t)json_array_size(ids_json), n);
    ck_assert_int_eq((int64_t)json_number(c, "mask_id"), dllm_model_mask_id(model));
    int32_t *ids = malloc((size_t)n * sizeof *ids), *rows = malloc((size_t)n * sizeof *rows);
    for (int64_t i = 0; i < n; i++) {
        ids[i] = (int32_t)json_integer_value(json_array_get(ids_json, (size_t)i));
        rows[i] = (int32_t)i;
    }
    float *logits = malloc((size_t)(n * n_vocab) * sizeof *logits);
    const struct dllm_model_experts x = dllm_model_experts(model);
    int32_t *experts = NULL;
    float *margins = NULL;
    if (x.n_expert) {
        experts = malloc((size_t)(dllm_model_n_layer(model) * n * x.n_used) * sizeof *experts);
        margins = malloc((size_t)(dllm_model_n_layer(model) * n) * sizeof *margins);
    }
    struct dllm_error err = {0};
    const struct dllm_pass pass = {.ids = ids,
                                   .n_tokens = n,
                                   .rows = rows,
                                   .n_rows = n,
                                   .logits = logits,
                                   .experts = experts,
                                   .expert_margins = margins};
    ck_assert_msg(dllm_forward_run(fwd, &pass, &err) == DLLM_OK, "%s: %s", name, err.text);
    if (x.n_expert)
        check_routing(name, model, n, experts, margins);

    float *ref = read_logits(name, "f64ref", n * n_vocab);
    float *llama = read_logits(name, "llamacpp", n * n_vocab);
    double *cos_row = malloc((size_t)n * sizeof *cos_row),
           *rel_row = malloc((size_t)n * sizeof *rel_row);
    double *lcos = malloc((size_t)n * sizeof *lcos), *lrel = malloc((size_t)n * sizeof *lrel);
    const struct figures ours = compare_rows(logits, ref, n, n_vocab, cos_row, rel_row);
    const struct figures theirs = compare_rows(llama, ref, n, n_vocab, lcos, lrel);
    const struct figures want = {json_number(bar, "cos_min"), json_number(bar, "rel_max"),
                                 json_number(bar, "rel_median")};
    printf("%-32s dllm: cos_min %.7f rel_max %.5f rel_median %.5f | llama.cpp: cos_min %.7f "
           "rel_max %.5f rel_median %.5f\n",
           name, ours.cos_min, ours.rel_max, ours.rel_median, want.cos_min, want.rel_max,
           want.rel_median);
    fflush(stdout);
    /* The harness recomputes llama.cpp's published figures from its logits. */
    ck_assert_double_eq_tol(theirs.cos_min, want.cos_min, 1e-6);
    ck_assert_double_eq_tol(theirs.rel_max, want.rel_max, 1e-4 * want.rel_max);
    ck_assert_double_eq_tol(theirs.rel_median, want.rel_median, 1e-4 * want.rel_median);

    for (int64_t r = 0; r < n; r++) {
        ck_assert_msg(rel_row[r] <= REL_MARGIN * want.rel_max,
                      "%s row %lld: relative error %.6f above llama.cpp's worst %.6f + 5%%", name,
                      (long long)r, rel_row[r], want.rel_max);
        ck_assert_msg(1.0 - cos_row[r] <= REL_MARGIN * REL_MARGIN * (1.0 - want.cos_min),
                      "%s row %lld: cosine %.7f below llama.cpp's worst %.7f", name, (long long)r,
                      cos_row[r], want.cos_min);
    }
    ck_assert_msg(ours.rel_median <= REL_MARGIN * want.rel_median,
                  "%s: median relative error %.6f above llama.cpp's %.6f + 5%%", name,
                  ours.rel_median, want.rel_median);
    free(ids);
    free(rows);
    free(logits);
    free(ref);
    free(llama);
    free(cos_row);
    free(rel_row);
    free(lcos);
    free(lrel);
    free(experts);
    free(margins);
}

START_TEST(test_fixture_logits)
{
    const char *model_name = fixture_models[_i];
    char rel[256];
    size_t size;
    snprintf(rel, sizeof rel, "logits/%s.cases.json", model_name);
    char *text = fixture_read(rel, &size);
    json_error_t jerr;
    json_t *cases = json_loadb(text, size, 0, &jerr);
    ck_assert_msg(json_is_array(cases), "%s: %s", rel, jerr.text);
    ck_assert_uint_gt(json_array_size(cases), 0);
    int64_t max_tokens = 0;
    for (size_t i = 0; i < json_array_size(cases); i++)
        max_tokens = fmax(max_tokens, json_number(json_array_get(cases, i), "n_tokens"));

    snprintf(rel, sizeof rel, "models/%s.gguf", model_name);
    char *path = fixture_path(rel);
    struct dllm_model *model = NULL;
    struct dllm_error err = {0};
    ck_assert_msg(dllm_model_open(path, NULL, &model, &err) == DLLM_OK, "%s", err.text);
    /* Every kernel variant this CPU runs meets the bar, on one thread and on two. */
    size_t n_variants;
    const struct dllm_kernels *variants = dllm_kernels_all(&n_variants);
    for (size_t v = 0; v < n_variants; v++) {
        if (!dllm_kernels_usable(&variants[v])) {
            printf("SKIP: kernel variant %s: this CPU lacks its instructions\n", variants[v].name);
            continue;
        }
        for (int threads = 1; threads <= 2; threads++) {
            printf("kernels %s, %d thread%s:\n", variants[v].name, threads, threads > 1 ? "s" : "");
            struct test_forward t =
                test_forward_new(model, max_tokens, max_tokens, threads, variants[v].name);
            for (size_t i = 0; i < json_array_size(cases); i++)
                check_case(t.fwd, model, json_array_get(cases, i));
            test_forward_free(&t);
        }
    }
    dllm_model_close(model);
    json_decref(cases);
    free(text);
    free(path);
}
END_TEST

/*
 * Q3_K_M and Q2_K models (dllm synth's tiny LLaDA and Dream shapes: Q2_K and Q3_K matrices
 * beside Q4_K to Q6_K): every SIMD variant's logits, on one and on two threads, against the
 * reference kernels', whose products test_matmul checks against float64 products of the decoded
 * weights. (No such file by llama.cpp's tools is a fixture.) The median row within 1e-5
 * (relative L2): the float sums differ in order only. Every row within 3e-2: where such a
 * difference moves an activation across a rounding step of its int8 quantization, these random
 * networks amplify it in that row (1.3e-3 on the Q8_0 mix, 1.1e-2 on LLaDA's Q3_K_M here).
 */
START_TEST(test_low_bit_mixes)
{
    static const struct {
        const char *arch;
        enum dllm_synth_type type;
    } cases[] = {{"llada", DLLM_SYNTH_Q3_K_M},
                 {"llada", DLLM_SYNTH_Q2_K},
                 {"dream", DLLM_SYNTH_Q3_K_M},
                 {"dream", DLLM_SYNTH_Q2_K}};
    struct dllm_synth_params p;
    struct dllm_error err = {0};
    ck_assert_int_eq(dllm_synth_params_init(&p, cases[_i].arch, "tiny", &err), DLLM_OK);
    p.type = cases[_i].type;
    char *dir = test_tmpdir(), path[4096];
    snprintf(path, sizeof path, "%s/low-bit.gguf", dir);
    ck_assert_msg(dllm_synth_write(path, &p, &err) == DLLM_OK, "%s", err.text);
    struct dllm_model *model;
    ck_assert_msg(dllm_model_open(path, NULL, &model, &err) == DLLM_OK, "%s", err.text);
    enum { N = 24 };
    const int64_t V = dllm_model_n_vocab(model);
    int32_t ids[N], rows[N];
    for (int i = 0; i < N; i++) {
        ids[i] = (int32_t)((i * 577 + 11) % V);
        rows[i] = i;
    }
    float *ref = malloc((size_t)(N * V) * sizeof *ref),
          *got = malloc((size_t)(N * V) * sizeof *got);
    ck_assert(ref != NULL && got != NULL);
    struct test_forward t = test_forward_new(model, N, N, 1, "ref");
    ck_assert_msg(test_forward_run(t.fwd, ids, N, rows, N, ref, NULL, 0, N, &err) == DLLM_OK, "%s",
                  err.text);
    test_forward_free(&t);
    size_t n_variants;
    const struct dllm_kernels *variants = dllm_kernels_all(&n_variants);
    for (size_t v = 0; v < n_variants; v++) {
        if (strcmp(variants[v].name, "ref") == 0 || !dllm_kernels_usable(&variants[v]))
            continue;
        for (int threads = 1; threads <= 2; threads++) {
            t = test_forward_new(model, N, N, threads, variants[v].name);
            ck_assert_msg(test_forward_run(t.fwd, ids, N, rows, N, got, NULL, 0, N, &err) ==
                              DLLM_OK,
                          "%s", err.text);
            test_forward_free(&t);
            double rel[N];
            for (int r = 0; r < N; r++) {
                double cos;
                row_error(got + r * V, ref + r * V, V, &cos, &rel[r]);
            }
            qsort(rel, N, sizeof rel[0], cmp_double);
            printf("%s %s, %s, %d thread%s: rows from the reference kernels' median %.3g, worst "
                   "%.3g\n",
                   cases[_i].arch, dllm_synth_type_name(cases[_i].type), variants[v].name, threads,
                   threads > 1 ? "s" : "", rel[N / 2], rel[N - 1]);
            fflush(stdout);
            ck_assert_double_le(rel[N / 2], 1e-5);
            ck_assert_double_le(rel[N - 1], 3e-2);
        }
    }
    dllm_model_close(model);
    free(ref);
    free(got);
    unlink(path);
    rmdir(dir);
    free(dir);
}
END_TEST

/* ---- requested rows and arguments -------------------------------------------------------- */

/* Opens a fixture model. */
static struct dllm_model *open_model(const char *file)
{
    char rel[256];
    snprintf(rel, sizeof rel, "models/%s", file);
    char *path = fixture_path(rel);
    struct dllm_model *model;
    struct dllm_error err = {0};
    ck_assert_msg(dllm_model_open(path, NULL, &model, &err) == DLLM_OK, "%s", err.text);
    free(path);
    return model;
}

/* Opens a fixture model with a forward context for max_tokens tokens. */
static struct test_forward open_fixture(const char *file, int64_t max_tokens,
                                        struct dllm_model **model)
{
    *model = open_model(file);
    return test_forward_new(*model, max_tokens, max_tokens, 0, NULL);
}

/* Rows asked for in any order, repeated or not, equal the same rows of a pass over all. */
START_TEST(test_rows_subset)
{
    static const char *const files[] = {"llada-tiny-q4km.gguf", "dream-tiny-q4km.gguf"};
    struct dllm_model *model;
    struct test_forward t = open_fixture(files[_i], 24, &model);
    struct dllm_forward *fwd = t.fwd;
    const int64_t V = dllm_model_n_vocab(model), n = 24;
    int32_t ids[24], all[24];
    for (int i = 0; i < n; i++) {
        ids[i] = (int32_t)((i * 397 + 11) % V);
        all[i] = i;
    }
    ids[5] = ids[9] = dllm_model_mask_id(model);
    float *full = malloc((size_t)(n * V) * sizeof *full), *some = malloc(4 * V * sizeof *some);
    struct dllm_error err = {0};
    ck_assert_int_eq(test_forward_run(fwd, ids, n, all, n, full, NULL, 0, 0, &err), DLLM_OK);
    const int32_t rows[4] = {23, 0, 9, 23};
    ck_assert_int_eq(test_forward_run(fwd, ids, n, rows, 4, some, NULL, 0, 0, &err), DLLM_OK);
    for (int r = 0; r < 4; r++)
        ck_assert_mem_eq(some + r * V, full + rows[r] * V, V * sizeof *some);
    /* A shorter pass in the same context attends only over its own tokens. */
    ck_assert_int_eq(test_forward_run(fwd, ids, 10, all, 10, full, NULL, 0, 0, &err), DLLM_OK);
    ck_assert_int_eq(test_forward_run(fwd, ids, 10, rows + 2, 1, some, NULL, 0, 0, &err), DLLM_OK);
    ck_assert_mem_eq(some, full + 9 * V, V * sizeof *some);
    free(full);
    free(some);
    test_forward_free(&t);
    dllm_model_close(model);
}
END_TEST

/*
 * The last layer computes its attention output and FFN for the asked rows only: a pass asking
 * for some rows (any order, repeated, one, a run, none) gives each the bits of a pass asking
 * for every row, on every fixture model and kernel variant, with and without a K/V cache
 * window, and a pass asking for no row fills the cache as one asking for rows does.
 */
START_TEST(test_rows_tail)
{
    char file[256];
    snprintf(file, sizeof file, "%s.gguf", fixture_models[_i]);
    struct dllm_model *model = open_model(file);
    enum { N = 40, B = 8, E = 32 };
    const int64_t V = dllm_model_n_vocab(model);
    int32_t ids[N], other[N], all[N];
    for (int i = 0; i < N; i++) {
        ids[i] = i % 3 ? (int32_t)((i * 397 + 11) % V) : dllm_model_mask_id(model);
        other[i] = (int32_t)((i * 101 + 7) % V);
        all[i] = i;
    }
    static const int32_t some[][5] = {{37, 2, 19, 2, 38}, {0}, {10, 11, 12, 13, 14}};
    static const int64_t n_some[] = {5, 1, 5};
    float *full = malloc((size_t)(N * V) * sizeof *full), *part = malloc(5 * V * sizeof *part);
    size_t n_variants;
    const struct dllm_kernels *variants = dllm_kernels_all(&n_variants);
    for (size_t v = 0; v < n_variants; v++) {
        if (!dllm_kernels_usable(&variants[v])) {
            printf("SKIP: kernel variant %s: this CPU lacks its instructions\n", variants[v].name);
            continue;
        }
        struct test_forward t = test_forward_new(model, N, N, 2, variants[v].name);
        struct dllm_error err = {0};
        ck_assert_int_eq(test_forward_run(t.fwd, ids, N, all, N, full, NULL, 0, 0, &err), DLLM_OK);
        for (size_t s = 0; s < sizeof n_some / sizeof n_some[0]; s++) {
            ck_assert_int_eq(
                test_forward_run(t.fwd, ids, N, some[s], n_some[s], part, NULL, 0, 0, &err),
                DLLM_OK);
            for (int64_t r = 0; r < n_some[s]; r++)
                ck_assert_msg(!memcmp(part + r * V, full + some[s][r] * V, V * sizeof *part),
                              "%s, %s: row %d differs when asked with %lld others", file,
                              variants[v].name, some[s][r], (long long)n_some[s] - 1);
        }
        /* With a cache: the window [B, E) alone, all its rows against some of them. */
        struct dllm_kv_cache *kv;
        ck_assert_msg(dllm_kv_cache_new(t.fwd, N, DLLM_CACHE_F16, true, &kv, &err) == DLLM_OK, "%s",
                      err.text);
        ck_assert_int_eq(test_forward_run(t.fwd, ids, N, all, N, full, kv, 0, N, &err), DLLM_OK);
        ck_assert_int_eq(test_forward_run(t.fwd, ids, N, all + B, E - B, full, kv, B, E, &err),
                         DLLM_OK);
        /* Then again after other tokens' keys and values, replaced by a pass with no rows. */
        for (int round = 0; round < 2; round++) {
            ck_assert_int_eq(test_forward_run(t.fwd, ids, N, some[2], 5, part, kv, B, E, &err),
                             DLLM_OK);
            for (int64_t r = 0; r < 5; r++)
                ck_assert_msg(!memcmp(part + r * V, full + (some[2][r] - B) * V, V * sizeof *part),
                              "%s, %s: row %d differs in a cache window (round %d)", file,
                              variants[v].name, some[2][r], round);
            ck_assert_int_eq(test_forward_run(t.fwd, other, N, all, 1, part, kv, 0, N, &err),
                             DLLM_OK);
            ck_assert_int_eq(test_forward_run(t.fwd, ids, N, NULL, 0, NULL, kv, 0, N, &err),
                             DLLM_OK);
        }
        dllm_kv_cache_free(kv);
        test_forward_free(&t);
    }
    free(full);
    free(part);
    dllm_model_close(model);
}
END_TEST

/*
 * A pass's logits do not depend on how many threads share it: every op splits its work by rows
 * or by output columns, never inside a sum, so 1, 2 and 3 threads give the same bits. Without a
 * cache and through a float16 cache's refresh (which rounds K and V row by row); on a dense
 * model, one with biases (Dream) and a MoE one with QK norms.
 */
START_TEST(test_threads_same_bits)
{
    static const char *const files[] = {"llada-tiny-q4km", "dream-tiny-q4km",
                                        "llada-moe-tiny-q4km"};
    char file[64];
    snprintf(file, sizeof file, "%s.gguf", files[_i]);
    struct dllm_model *model = open_model(file);
    const int64_t V = dllm_model_n_vocab(model), n = 37;
    int32_t ids[37], rows[37];
    for (int i = 0; i < n; i++) {
        ids[i] = i % 4 ? (int32_t)((i * 977 + 11) % V) : dllm_model_mask_id(model);
        rows[i] = i;
    }
    float *want[2] = {malloc((size_t)(n * V) * sizeof(float)),
                      malloc((size_t)(n * V) * sizeof(float))};
    float *got = malloc((size_t)(n * V) * sizeof *got);
    struct dllm_error err = {0};
    for (int threads = 1; threads <= 3; threads++) {
        struct test_forward t = test_forward_new(model, n, n, threads, NULL);
        struct dllm_kv_cache *kv;
        ck_assert_msg(dllm_kv_cache_new(t.fwd, n, DLLM_CACHE_F16, true, &kv, &err) == DLLM_OK, "%s",
                      err.text);
        for (int cached = 0; cached < 2; cached++) {
            float *out = threads == 1 ? want[cached] : got;
            ck_assert_msg(test_forward_run(t.fwd, ids, n, rows, n, out, cached ? kv : NULL, 0,
                                           cached ? n : 0, &err) == DLLM_OK,
                          "%s", err.text);
            ck_assert_msg(threads == 1 || !memcmp(got, want[cached], (size_t)(n * V) * sizeof *got),
                          "%s: %d threads %s give other logits than 1", files[_i], threads,
                          cached ? "through a float16 cache" : "without a cache");
        }
        dllm_kv_cache_free(kv);
        test_forward_free(&t);
    }
    free(want[0]);
    free(want[1]);
    free(got);
    dllm_model_close(model);
}
END_TEST

/*
 * The statistics a pass computes for its rows (dllm_pass.stats) against a float64 pass over
 * the logits it returned (libm's exp and log): argmax (first of equal maxima), max, the
 * runner-up, log-sum-exp and entropy; a pass without stats leaves the array as it was.
 */
START_TEST(test_row_stats)
{
    static const char *const files[] = {"llada-tiny-q4km.gguf", "dream-tiny-q4km.gguf"};
    struct dllm_model *model;
    struct test_forward t = open_fixture(files[_i], 24, &model);
    const int64_t V = dllm_model_n_vocab(model), n = 24;
    int32_t ids[24], rows[5] = {0, 7, 12, 23, 7};
    for (int i = 0; i < n; i++)
        ids[i] = i % 3 ? (int32_t)((i * 131 + 5) % V) : dllm_model_mask_id(model);
    float *logits = malloc((size_t)(5 * V) * sizeof *logits);
    struct dllm_row_stats stats[5];
    const struct dllm_pass pass = {
        .ids = ids, .n_tokens = n, .rows = rows, .n_rows = 5, .logits = logits, .stats = stats};
    struct dllm_error err = {0};
    ck_assert_msg(dllm_forward_run(t.fwd, &pass, &err) == DLLM_OK, "%s", err.text);
    for (int r = 0; r < 5; r++) {
        const float *l = logits + r * V;
        int64_t best = 0;
        for (int64_t v = 1; v < V; v++)
            best = l[v] > l[best] ? v : best;
        float second = -INFINITY;
        double S = 0, T = 0;
        for (int64_t v = 0; v < V; v++) {
            if (v != best && l[v] > second)
                second = l[v];
            const double e = exp((double)l[v] - l[best]);
            S += e;
            T += e * ((double)l[v] - l[best]);
        }
        const double lse = l[best] + log(S), entropy = log(S) - T / S;
        ck_assert_int_eq(stats[r].argmax, best);
        ck_assert_float_eq(stats[r].max, l[best]);
        ck_assert_float_eq(stats[r].second, second);
        ck_assert_double_eq_tol(stats[r].lse, lse, 1e-9 * fabs(lse) + 1e-12);
        ck_assert_double_eq_tol(stats[r].entropy, entropy, 1e-9 * entropy + 1e-12);
        ck_assert(stats[r].entropy > 0 && stats[r].entropy <= log((double)V) + 1e-9);
    }
    /* A row asked for twice gets the same figures. */
    ck_assert_int_eq(stats[1].argmax, stats[4].argmax);
    ck_assert(stats[1].lse == stats[4].lse && stats[1].entropy == stats[4].entropy);
    memset(stats, 0x5a, sizeof stats);
    struct dllm_row_stats untouched[5];
    memcpy(untouched, stats, sizeof stats);
    ck_assert_int_eq(test_forward_run(t.fwd, ids, n, rows, 5, logits, NULL, 0, 0, &err), DLLM_OK);
    ck_assert_mem_eq(stats, untouched, sizeof stats);
    free(logits);
    test_forward_free(&t);
    dllm_model_close(model);
}
END_TEST

/* Whether two numbers have the same bits (a float widened to double keeps them apart). */
static bool same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/* Whether two rows' statistics have the same bits. */
static bool same_stats(const struct dllm_row_stats *x, const struct dllm_row_stats *y)
{
    return x->argmax == y->argmax && same_bits(x->max, y->max) && same_bits(x->second, y->second) &&
           same_bits(x->lse, y->lse) && same_bits(x->entropy, y->entropy);
}

/*
 * A pass that asks for statistics alone (logits NULL: no row leaves the backend) gives each
 * row the bits a pass that also returns the rows gives, on every kernel variant and on each
 * architecture, with more rows than the CPU backend computes at once (it works through such a
 * pass in chunks of rows). Logits into memory off a cache line (which the CPU backend computes
 * in such chunks and copies out) get the same bits as into memory on one. A pass with rows but
 * neither logits nor stats is refused.
 */
START_TEST(test_stats_only)
{
    static const char *const files[] = {"llada-tiny-q4km.gguf", "dream-tiny-q4km.gguf",
                                        "llada-moe-tiny-q4km.gguf", "rnd1-tiny-q4km.gguf"};
    struct dllm_model *model = open_model(files[_i]);
    enum { N = 80, R = 75 };
    const int64_t V = dllm_model_n_vocab(model);
    int32_t ids[N], rows[R];
    for (int i = 0; i < N; i++)
        ids[i] = i % 4 ? (int32_t)((i * 131 + 5) % V) : dllm_model_mask_id(model);
    for (int r = 0; r < R; r++)
        rows[r] = (int32_t)((r * 37 + 3) % N);
    const size_t bytes = (size_t)(R * V) * sizeof(float);
    float *logits = dllm_alloc_lines(bytes), *unaligned = dllm_alloc_lines(bytes + 64);
    static struct dllm_row_stats with_rows[R], alone[R], off_line[R];
    size_t n_variants;
    const struct dllm_kernels *variants = dllm_kernels_all(&n_variants);
    for (size_t v = 0; v < n_variants; v++) {
        if (!dllm_kernels_usable(&variants[v])) {
            printf("SKIP: kernel variant %s: this CPU lacks its instructions\n", variants[v].name);
            continue;
        }
        struct test_forward t = test_forward_new(model, N, R, 2, variants[v].name);
        struct dllm_pass pass = {.ids = ids,
                                 .n_tokens = N,
                                 .rows = rows,
                                 .n_rows = R,
                                 .logits = logits,
                                 .stats = with_rows};
        struct dllm_error err = {0};
        ck_assert_msg(dllm_forward_run(t.fwd, &pass, &err) == DLLM_OK, "%s", err.text);
        pass.logits = unaligned + 1;
        pass.stats = off_line;
        ck_assert_msg(dllm_forward_run(t.fwd, &pass, &err) == DLLM_OK, "%s", err.text);
        ck_assert_msg(!memcmp(unaligned + 1, logits, bytes),
                      "%s, %s: logits off a cache line differ", files[_i], variants[v].name);
        pass.logits = NULL;
        pass.stats = alone;
        memset(alone, 0x5a, sizeof alone);
        ck_assert_msg(dllm_forward_run(t.fwd, &pass, &err) == DLLM_OK, "%s", err.text);
        for (int r = 0; r < R; r++) {
            ck_assert_msg(same_stats(&alone[r], &with_rows[r]),
                          "%s, %s: row %d's statistics differ without the logits", files[_i],
                          variants[v].name, r);
            ck_assert_msg(same_stats(&off_line[r], &with_rows[r]),
                          "%s, %s: row %d's statistics differ with logits off a line", files[_i],
                          variants[v].name, r);
        }
        pass.stats = NULL;
        ck_assert_int_eq(dllm_forward_run(t.fwd, &pass, &err), DLLM_ERR_ARG);
        ck_assert_str_eq(err.text, "75 logits rows asked for with neither logits nor stats to "
                                   "receive them");
        test_forward_free(&t);
    }
    free(logits);
    free(unaligned);
    dllm_model_close(model);
}
END_TEST

START_TEST(test_run_errors)
{
    struct dllm_model *model;
    struct test_forward t = open_fixture("llada-tiny-q4km.gguf", 8, &model);
    struct dllm_forward *fwd = t.fwd;
    int32_t ids[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, rows[2] = {0, 7};
    float *logits = malloc(9 * dllm_model_n_vocab(model) * sizeof *logits);
    struct dllm_error err = {0};
    ck_assert_int_eq(test_forward_run(fwd, ids, 9, rows, 1, logits, NULL, 0, 0, &err),
                     DLLM_ERR_ARG);
    ck_assert_str_eq(err.text, "9 tokens: this forward context takes 1 to 8");
    ck_assert_int_eq(test_forward_run(fwd, ids, 0, rows, 1, logits, NULL, 0, 0, &err),
                     DLLM_ERR_ARG);
    ck_assert_int_eq(test_forward_run(fwd, ids, 4, rows, 9, logits, NULL, 0, 0, &err),
                     DLLM_ERR_ARG);
    ck_assert_str_eq(err.text, "9 logits rows: this forward context takes 0 to 8");
    ck_assert_int_eq(test_forward_run(fwd, ids, 4, rows, 2, logits, NULL, 0, 0, &err),
                     DLLM_ERR_ARG);
    ck_assert_str_eq(err.text, "logits row 7 is outside the 4 positions of the pass");
    ids[2] = 2048;
    ck_assert_int_eq(test_forward_run(fwd, ids, 4, rows, 1, logits, NULL, 0, 0, &err),
                     DLLM_ERR_ARG);
    ck_assert_str_eq(err.text, "token id 2048 at position 2 is outside the vocabulary of 2048 "
                               "tokens");
    ids[2] = -1;
    ck_assert_int_eq(test_forward_run(fwd, ids, 4, rows, 1, logits, NULL, 0, 0, &err),
                     DLLM_ERR_ARG);
    /* Bad sizes, pool, backend or kernels for a new context. */
    struct dllm_forward *other = NULL;
    struct dllm_forward_params fp;
    dllm_forward_params_init(&fp);
    fp.pool = t.pool;
    fp.max_rows = 1;
    ck_assert_int_eq(dllm_forward_new(model, &fp, &other, &err), DLLM_ERR_ARG);
    fp.max_tokens = 4097;
    ck_assert_int_eq(dllm_forward_new(model, &fp, &other, &err), DLLM_ERR_ARG);
    ck_assert_str_eq(err.text, "a forward pass over 4097 tokens: the model takes 1 to 4096 "
                               "(llada.context_length)");
    fp.max_tokens = 8;
    fp.max_rows = 9;
    ck_assert_int_eq(dllm_forward_new(model, &fp, &other, &err), DLLM_ERR_ARG);
    fp.max_rows = 8;
    fp.pool = NULL;
    ck_assert_int_eq(dllm_forward_new(model, &fp, &other, &err), DLLM_ERR_ARG);
    ck_assert_str_eq(err.text, "a forward context needs a thread pool");
    fp.pool = t.pool;
    fp.backend = "tpu";
    ck_assert_int_eq(dllm_forward_new(model, &fp, &other, &err), DLLM_ERR_ARG);
    ck_assert_str_eq(err.text, dllm_gpu_built()
                                   ? "unknown backend 'tpu': this build has cpu and cuda"
                                   : "unknown backend 'tpu': this build has cpu");
    fp.backend = NULL;
    fp.kernels = "neon";
    ck_assert_int_eq(dllm_forward_new(model, &fp, &other, &err), DLLM_ERR_ARG);
    ck_assert_str_eq(err.text, "unknown kernel variant 'neon': use ref, avx2, avxvnni or avx512");
    ck_assert_ptr_null(other);
    free(logits);
    test_forward_free(&t);
    dllm_model_close(model);
}
END_TEST

/* What a progress function saw, and when to set a cancel flag. */
struct progress_log {
    int n;
    double seen[4096];
    enum dllm_progress_kind kind[4096];
    int64_t max_layer;   /* the highest DLLM_PROGRESS_FORWARD done below total, or -1 */
    int cancel_at;       /* set cancel at this call (counting from 1); 0: never */
    atomic_bool *cancel; /* the flag to set */
};

static void log_progress(const struct dllm_progress *p, void *user)
{
    struct progress_log *log = user;
    if (log->n < 4096) {
        log->kind[log->n] = p->kind;
        log->seen[log->n++] = p->fraction;
    }
    if (p->kind == DLLM_PROGRESS_FORWARD && p->done < p->total && p->done > log->max_layer)
        log->max_layer = p->done;
    if (log->cancel_at && log->n == log->cancel_at)
        atomic_store(log->cancel, true);
}

/* A forward context with progress and cancel for a model on kernels, failing on error. */
static enum dllm_status new_forward(const struct dllm_model *model, struct dllm_threadpool *pool,
                                    const char *kernels, struct progress_log *log,
                                    atomic_bool *cancel, struct dllm_forward **fwd,
                                    struct dllm_error *err)
{
    struct dllm_forward_params fp;
    dllm_forward_params_init(&fp);
    fp.max_tokens = fp.max_rows = 16;
    fp.pool = pool;
    fp.kernels = kernels;
    fp.progress = log_progress;
    fp.progress_user = log;
    fp.cancel = cancel;
    return dllm_forward_new(model, &fp, fwd, err);
}

/*
 * A forward context of a repacking variant reports the repacking through its progress
 * function, from 0 to 1 in order; the reference kernels repack nothing and report nothing.
 */
START_TEST(test_repack_progress)
{
    const char *variant = _i == 0 ? "ref" : "avx2";
    const struct dllm_kernels *k;
    struct dllm_error err = {0};
    if (dllm_kernels_select(variant, &k, &err) != DLLM_OK) {
        printf("SKIP: repack progress with %s: %s\n", variant, err.text);
        return;
    }
    struct dllm_model *model = open_model("llada-tiny-q4km.gguf");
    struct progress_log log = {.max_layer = -1};
    struct dllm_threadpool *pool;
    struct dllm_forward *fwd;
    ck_assert_int_eq(dllm_threadpool_new(1, &pool, &err), DLLM_OK);
    ck_assert_msg(new_forward(model, pool, variant, &log, NULL, &fwd, &err) == DLLM_OK, "%s",
                  err.text);
    if (_i == 0) {
        ck_assert_int_eq(log.n, 0);
    } else {
        /* every Q4_K and Q6_K matrix: 7 per layer and the output */
        ck_assert_int_ge(log.n, 3);
        ck_assert_double_eq(log.seen[0], 0.0);
        ck_assert_double_eq(log.seen[log.n - 1], 1.0);
        for (int i = 0; i < log.n; i++)
            ck_assert_int_eq(log.kind[i], DLLM_PROGRESS_REPACK);
        for (int i = 1; i < log.n; i++)
            ck_assert(log.seen[i] >= log.seen[i - 1]);
    }
    printf("%s: %d progress calls\n", variant, log.n);
    dllm_forward_free(fwd);
    dllm_threadpool_free(pool);
    dllm_model_close(model);
}
END_TEST

/* The synthetic model of the cancel tests: the tiny LLaDA shape with 6 layers. */
static struct dllm_model *open_six_layers(char **path)
{
    struct dllm_synth_params p;
    struct dllm_error err = {0};
    ck_assert_int_eq(dllm_synth_params_init(&p, "llada", "tiny", &err), DLLM_OK);
    p.n_layer = 6;
    char *dir = test_tmpdir();
    *path = malloc(strlen(dir) + 16);
    sprintf(*path, "%s/six.gguf", dir);
    free(dir);
    ck_assert_msg(dllm_synth_write(*path, &p, &err) == DLLM_OK, "%s", err.text);
    struct dllm_model *model;
    ck_assert_msg(dllm_model_open(*path, NULL, &model, &err) == DLLM_OK, "%s", err.text);
    return model;
}

/* Removes the cancel tests' model file and its folder. */
static void remove_six_layers(char *path)
{
    unlink(path);
    *strrchr(path, '/') = 0;
    rmdir(path);
    free(path);
}

/* A pass over 16 tokens of the model, into logits [16, n_vocab]. */
static enum dllm_status run16(struct dllm_forward *fwd, const struct dllm_model *model,
                              const atomic_bool *cancel, float *logits, struct dllm_error *err)
{
    int32_t ids[16], rows[16];
    for (int i = 0; i < 16; i++) {
        ids[i] = (int32_t)((i * 131 + 7) % dllm_model_n_vocab(model));
        rows[i] = i;
    }
    const struct dllm_pass pass = {
        .ids = ids, .n_tokens = 16, .rows = rows, .n_rows = 16, .logits = logits, .cancel = cancel};
    return dllm_forward_run(fwd, &pass, err);
}

/*
 * Cancel inside a pass, without a clock: the pass's own per-layer progress sets the flag as
 * layer k begins; the pass returns DLLM_ERR_CANCELLED with no layer after k + 1 begun, and the
 * next pass on the same context gives the logits of an uncancelled one, bit for bit.
 */
START_TEST(test_cancel_pass)
{
    char *path;
    struct dllm_model *model = open_six_layers(&path);
    const size_t bytes = 16 * (size_t)dllm_model_n_vocab(model) * sizeof(float);
    float *want = malloc(bytes), *got = malloc(bytes);
    struct dllm_error err = {0};
    struct dllm_threadpool *pool;
    ck_assert_int_eq(dllm_threadpool_new(2, &pool, &err), DLLM_OK);
    atomic_bool cancel = false;
    struct progress_log log = {.max_layer = -1, .cancel = &cancel};
    struct dllm_forward *fwd;
    ck_assert_msg(new_forward(model, pool, NULL, &log, NULL, &fwd, &err) == DLLM_OK, "%s",
                  err.text);
    ck_assert_int_eq(run16(fwd, model, &cancel, want, &err), DLLM_OK);
    ck_assert_int_eq(log.max_layer, 5);
    for (int k = 0; k < 6; k++) {
        log = (struct progress_log){.max_layer = -1, .cancel = &cancel, .cancel_at = k + 1};
        atomic_store(&cancel, false);
        ck_assert_int_eq(run16(fwd, model, &cancel, got, &err), DLLM_ERR_CANCELLED);
        ck_assert_msg(log.max_layer <= k + 1, "layer %lld began after a cancel at %d",
                      (long long)log.max_layer, k);
        log = (struct progress_log){.max_layer = -1};
        atomic_store(&cancel, false);
        ck_assert_int_eq(run16(fwd, model, &cancel, got, &err), DLLM_OK);
        ck_assert_mem_eq(got, want, bytes);
    }
    dllm_forward_free(fwd);
    dllm_threadpool_free(pool);
    free(want);
    free(got);
    dllm_model_close(model);
    remove_six_layers(path);
}
END_TEST

/*
 * Cancel while a context repacks: the flag set from the repack's progress stops it before the
 * next matrix; the call fails with DLLM_ERR_CANCELLED and leaves no context (LeakSanitizer
 * checks that nothing stays allocated in the sanitizer build); a context made afterwards works.
 */
START_TEST(test_cancel_repack)
{
    const struct dllm_kernels *k;
    struct dllm_error err = {0};
    if (dllm_kernels_select("avx2", &k, &err) != DLLM_OK) {
        printf("SKIP: repack cancel: %s\n", err.text);
        return;
    }
    char *path;
    struct dllm_model *model = open_six_layers(&path);
    struct dllm_threadpool *pool;
    ck_assert_int_eq(dllm_threadpool_new(2, &pool, &err), DLLM_OK);
    atomic_bool cancel = false;
    struct progress_log log = {.max_layer = -1, .cancel = &cancel, .cancel_at = 3};
    struct dllm_forward *fwd = (struct dllm_forward *)&log; /* must become NULL */
    ck_assert_int_eq(new_forward(model, pool, "avx2", &log, &cancel, &fwd, &err),
                     DLLM_ERR_CANCELLED);
    ck_assert_ptr_null(fwd);
    ck_assert_str_eq(err.text, "cancelled while repacking the weights");
    ck_assert_int_eq(log.n, 3); /* no matrix repacked after the flag was seen */
    atomic_store(&cancel, false);
    log = (struct progress_log){.max_layer = -1};
    ck_assert_msg(new_forward(model, pool, "avx2", &log, &cancel, &fwd, &err) == DLLM_OK, "%s",
                  err.text);
    ck_assert_double_eq(log.seen[log.n - 1], 1.0);
    dllm_forward_free(fwd);
    dllm_threadpool_free(pool);
    dllm_model_close(model);
    remove_six_layers(path);
}
END_TEST

/*
 * A model file cut short after it was opened (rewritten while a program loads it): the repack
 * reads the matrices from the file, so the forward context fails with DLLM_ERR_IO and one line
 * naming the problem, leaves no context and touches no page past the new end (which would kill
 * the process with SIGBUS).
 */
START_TEST(test_repack_read_error)
{
    const struct dllm_kernels *k;
    struct dllm_error err = {0};
    if (dllm_kernels_select("avx2", &k, &err) != DLLM_OK) {
        printf("SKIP: repack read error: %s\n", err.text);
        return;
    }
    char *path;
    struct dllm_model *model = open_six_layers(&path);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(truncate(path, st.st_size / 2), 0);
    struct dllm_threadpool *pool;
    ck_assert_int_eq(dllm_threadpool_new(2, &pool, &err), DLLM_OK);
    struct progress_log log = {.max_layer = -1};
    struct dllm_forward *fwd = (struct dllm_forward *)&log; /* must become NULL */
    ck_assert_int_eq(new_forward(model, pool, "avx2", &log, NULL, &fwd, &err), DLLM_ERR_IO);
    ck_assert_ptr_null(fwd);
    ck_assert_str_eq(err.text, "cannot read the model file: Input/output error");
    dllm_threadpool_free(pool);
    dllm_model_close(model);
    remove_six_layers(path);
}
END_TEST

/* The other thread of test_cancel_thread: sets the flag when told to, then says so. */
struct canceller {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool go, done;
    atomic_bool flag;
};

static void *canceller_main(void *arg)
{
    struct canceller *c = arg;
    pthread_mutex_lock(&c->lock);
    while (!c->go)
        pthread_cond_wait(&c->cond, &c->lock);
    atomic_store(&c->flag, true);
    c->done = true;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

/* A progress function that, as layer 2 begins, has the other thread cancel, and waits for it. */
static void cancel_from_thread(const struct dllm_progress *p, void *user)
{
    struct canceller *c = user;
    if (p->kind != DLLM_PROGRESS_FORWARD || p->done != 2)
        return;
    pthread_mutex_lock(&c->lock);
    c->go = true;
    pthread_cond_broadcast(&c->cond);
    while (!c->done)
        pthread_cond_wait(&c->cond, &c->lock);
    pthread_mutex_unlock(&c->lock);
}

/*
 * A cancel from another thread stops the pass; the next pass on the same context is
 * bit-identical to a pass on a context that was never cancelled.
 */
START_TEST(test_cancel_thread)
{
    char *path;
    struct dllm_model *model = open_six_layers(&path);
    const size_t bytes = 16 * (size_t)dllm_model_n_vocab(model) * sizeof(float);
    float *want = malloc(bytes), *got = malloc(bytes);
    struct dllm_error err = {0};
    struct test_forward clean = test_forward_new(model, 16, 16, 2, NULL);
    ck_assert_int_eq(run16(clean.fwd, model, NULL, want, &err), DLLM_OK);

    struct canceller c = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    atomic_init(&c.flag, false);
    struct dllm_forward_params fp;
    dllm_forward_params_init(&fp);
    fp.max_tokens = fp.max_rows = 16;
    fp.pool = clean.pool;
    fp.progress = cancel_from_thread;
    fp.progress_user = &c;
    struct dllm_forward *fwd;
    ck_assert_int_eq(dllm_forward_new(model, &fp, &fwd, &err), DLLM_OK);
    pthread_t thread;
    ck_assert_int_eq(pthread_create(&thread, NULL, canceller_main, &c), 0);
    ck_assert_int_eq(run16(fwd, model, &c.flag, got, &err), DLLM_ERR_CANCELLED);
    pthread_join(thread, NULL);
    ck_assert_str_eq(err.text, "the forward pass was cancelled before layer 3");
    atomic_store(&c.flag, false); /* c.done stays true: the progress function waits no more */
    ck_assert_int_eq(run16(fwd, model, &c.flag, got, &err), DLLM_OK);
    ck_assert_mem_eq(got, want, bytes);
    dllm_forward_free(fwd);
    test_forward_free(&clean);
    free(want);
    free(got);
    dllm_model_close(model);
    remove_six_layers(path);
}
END_TEST

static Suite *forward_suite(void)
{
    Suite *s = suite_create("forward");
    TCase *tc = tcase_create("kernels");
    tcase_add_test(tc, test_rms_norm);
    tcase_add_test(tc, test_rope_table);
    tcase_add_test(tc, test_rope_pairs);
    tcase_add_test(tc, test_rope_permuted);
    tcase_add_test(tc, test_attention);
    tcase_add_test(tc, test_swiglu_add);
    suite_add_tcase(s, tc);
    tc = tcase_create("fixtures");
    tcase_add_loop_test(tc, test_fixture_logits, 0, TEST_N_REPRESENTATIVE);
    suite_add_tcase(s, tc);
    tc = tcase_create("fixtures-sweep");
    tcase_set_tags(tc, TEST_TAG_SWEEP);
    tcase_add_loop_test(tc, test_fixture_logits, TEST_N_REPRESENTATIVE,
                        sizeof fixture_models / sizeof fixture_models[0]);
    suite_add_tcase(s, tc);
    tc = tcase_create("rows");
    tcase_add_loop_test(tc, test_rows_subset, 0, 2);
    tcase_add_loop_test(tc, test_rows_tail, 0, sizeof fixture_models / sizeof fixture_models[0]);
    tcase_add_loop_test(tc, test_low_bit_mixes, 0, 4);
    tcase_add_test(tc, test_run_errors);
    tcase_add_loop_test(tc, test_threads_same_bits, 0, 3);
    tcase_add_loop_test(tc, test_row_stats, 0, 2);
    tcase_add_loop_test(tc, test_stats_only, 0, 4);
    tcase_add_loop_test(tc, test_repack_progress, 0, 2);
    suite_add_tcase(s, tc);
    tc = tcase_create("cancel");
    tcase_add_test(tc, test_cancel_pass);
    tcase_add_test(tc, test_cancel_repack);
    tcase_add_test(tc, test_repack_read_error);
    tcase_add_test(tc, test_cancel_thread);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    fixtures_dir();
    return test_run_suite(forward_suite());
}
