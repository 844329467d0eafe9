/* The dequantization fixtures' manifest and cases (dequant_fixture.h). */
#include "config.h"

#include "dequant_fixture.h"

#include "fixtures.h"

#include <check.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

json_t *dequant_manifest_load(void)
{
    size_t size;
    char *text = fixture_read("dequant/manifest.json", &size);
    json_error_t jerr;
    json_t *manifest = json_loadb(text, size, 0, &jerr);
    free(text);
    if (!json_is_array(manifest) || json_array_size(manifest) == 0) {
        fprintf(stderr, "dequant/manifest.json: not a non-empty array (%s)\n", jerr.text);
        exit(EXIT_FAILURE);
    }
    return manifest;
}

const char *dequant_entry_str(const json_t *entry, const char *key)
{
    const char *s = json_string_value(json_object_get(entry, key));
    ck_assert_msg(s != NULL, "manifest entry lacks string \"%s\"", key);
    return s;
}

void dequant_case_open(const json_t *manifest, size_t i, struct dequant_case *c)
{
    c->entry = json_array_get(manifest, i);
    const char *model = dequant_entry_str(c->entry, "model");
    const char *name = dequant_entry_str(c->entry, "tensor");
    char rel[512];
    snprintf(rel, sizeof rel, "models/%s", model);
    snprintf(c->what, sizeof c->what, "%s %s", model, name);
    char *path = fixture_path(rel);
    struct dllm_error err = {0};
    c->gguf = NULL;
    ck_assert_msg(dllm_gguf_open(path, &c->gguf, &err) == DLLM_OK, "%s: %s", path, err.text);
    free(path);
    c->t = dllm_gguf_find_tensor(c->gguf, name);
    ck_assert_msg(c->t != NULL, "%s: no such tensor", c->what);
    c->n = json_integer_value(json_object_get(c->entry, "n"));
    ck_assert_int_eq(c->n, c->t->ne[0] * c->t->ne[1] * c->t->ne[2] * c->t->ne[3]);
    snprintf(rel, sizeof rel, "dequant/%s", dequant_entry_str(c->entry, "values"));
    size_t size;
    c->want = fixture_read(rel, &size);
    ck_assert_uint_eq(size, (size_t)c->n * sizeof(float));
}

void dequant_case_close(struct dequant_case *c)
{
    free(c->want);
    dllm_gguf_close(c->gguf);
}

void dequant_expect_close(const float *got, const float *want, int64_t n, const char *what)
{
    for (int64_t i = 0; i < n; i++) {
        double tol = 1e-6 * fmax(fabs(want[i]), FLT_MIN);
        if (!(fabs((double)got[i] - want[i]) <= tol))
            ck_abort_msg("%s: element %" PRId64 " decodes to %.9g, expected %.9g", what, i, got[i],
                         want[i]);
    }
}
