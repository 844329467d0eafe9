/* The conversation as JSON lines: writing and parsing. */
#include "config.h"

#include "jsonl.h"
#include "utf8.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define JSONL_FORMAT  "dllm-chat"
#define JSONL_VERSION 1

json_t *ui_jsonl_settings(const struct dllm_sampler_params *s)
{
    json_t *seed = s->seed <= INT64_MAX ? json_integer((json_int_t)s->seed) : NULL;
    if (!seed) {
        char digits[24];
        snprintf(digits, sizeof digits, "%" PRIu64, s->seed);
        seed = json_string(digits);
    }
    return json_pack("{s:s, s:I, s:I, s:I, s:f, s:f, s:I, s:f, s:s, s:s, s:f, s:f, s:f, s:o, "
                     "s:b, s:s, s:s}",
                     "kind", s->kind == DLLM_SAMPLER_LLADA ? "llada" : "dream", "max_tokens",
                     (json_int_t)s->gen_length, "steps", (json_int_t)s->steps, "block_length",
                     (json_int_t)s->block_length, "temperature", s->temperature, "top_p", s->top_p,
                     "top_k", (json_int_t)s->top_k, "threshold", s->threshold, "remasking",
                     dllm_remasking_name(s->remasking), "alg", dllm_alg_name(s->alg), "alg_temp",
                     s->alg_temp, "eps", s->eps, "cfg_scale", s->cfg_scale, "seed", seed,
                     "early_stop", s->early_stop, "cache", dllm_cache_mode_name(s->cache),
                     "cache_type", dllm_cache_type_name(s->cache_type));
}

/*
 * text as the valid UTF-8 a JSON string must be: each invalid or truncated sequence (a token
 * piece may split a character) becomes U+FFFD. The n offsets gaps move to where their bytes
 * land, into moved. NULL when memory ran out.
 */
static char *valid_text(const char *text, const size_t *gaps, size_t n, size_t *moved)
{
    const size_t len = strlen(text);
    char *out = malloc(3 * len + 1); /* a byte becomes at most U+FFFD's 3 */
    size_t o = 0, g = 0;
    for (size_t i = 0; out && i < len;) {
        for (; g < n && gaps[g] <= i; g++)
            moved[g] = o;
        uint32_t cp;
        i += ui_utf8_decode(text + i, len - i, &cp);
        o += ui_utf8_encode(cp, out + o);
    }
    for (; g < n; g++)
        moved[g] = o;
    if (out)
        out[o] = '\0';
    return out;
}

/* One turn as a JSON object. */
static json_t *turn_json(const struct ui_turn *turn)
{
    static const char *const roles[] = {"user", "assistant", "notice"};
    size_t *gaps = malloc((turn->n_gaps ? turn->n_gaps : 1) * sizeof *gaps);
    char *text = gaps ? valid_text(turn->text, turn->gaps, turn->n_gaps, gaps) : NULL;
    json_t *o = text ? json_pack("{s:s, s:s}", "role", roles[turn->role], "text", text) : NULL;
    free(text);
    if (!o) {
        free(gaps);
        return NULL;
    }
    bool ok = true;
    if (turn->dropped)
        ok = ok && json_object_set_new(o, "dropped", json_true()) == 0;
    if (turn->stopped)
        ok = ok && json_object_set_new(o, "stopped", json_true()) == 0;
    if (turn->n_gaps > 0) {
        json_t *list = json_array();
        for (size_t i = 0; list && i < turn->n_gaps; i++)
            ok = ok && json_array_append_new(list, json_integer((json_int_t)gaps[i])) == 0;
        ok = ok && json_object_set_new(o, "gaps", list) == 0;
    }
    if (turn->has_stats) {
        const struct ui_timing_totals *s = &turn->totals;
        ok = ok && json_object_set_new(o, "settings", ui_jsonl_settings(&turn->settings)) == 0;
        ok = ok && json_object_set_new(
                       o, "timings",
                       json_pack("{s:i, s:i, s:f, s:f, s:f, s:f}", "steps", s->steps, "tokens",
                                 s->tokens, "forward_ms", s->forward_ms, "sample_ms", s->sample_ms,
                                 "total_ms", s->total_ms, "load_ms", s->load_ms)) == 0;
    }
    free(gaps);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* Writes o as one line and frees it; false when o is NULL (no memory) or writing failed. */
static bool put_line(json_t *o, FILE *f)
{
    if (!o) {
        errno = ENOMEM;
        return false;
    }
    bool ok = json_dumpf(o, f, JSON_COMPACT | JSON_ENSURE_ASCII) == 0 && fputc('\n', f) != EOF;
    json_decref(o);
    return ok;
}

bool ui_jsonl_write(const struct ui_transcript *t, const char *model, FILE *f)
{
    json_t *head = json_pack("{s:s, s:i}", "format", JSONL_FORMAT, "version", JSONL_VERSION);
    if (head && model && json_object_set_new(head, "model", json_string(model)) != 0) {
        json_decref(head);
        head = NULL;
    }
    if (!put_line(head, f))
        return false;
    if (t->system) {
        size_t none;
        char *text = valid_text(t->system, NULL, 0, &none);
        json_t *o = text ? json_pack("{s:s, s:s}", "role", "system", "text", text) : NULL;
        free(text);
        if (!put_line(o, f))
            return false;
    }
    for (size_t i = 0; i < t->n; i++)
        if (!put_line(turn_json(&t->turns[i]), f))
            return false;
    return !ferror(f);
}

/* ---- parsing ------------------------------------------------------------------------------ */

/* The parser's state: where it is, and the first error. */
struct parse {
    size_t line;
    char *err;
    size_t size;
};

/* Records an error on the current line; returns false. */
static bool fail(struct parse *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(struct parse *p, const char *fmt, ...)
{
    int n = snprintf(p->err, p->size, "line %zu: ", p->line);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < p->size)
        vsnprintf(p->err + n, p->size - (size_t)n, fmt, ap);
    va_end(ap);
    return false;
}

/* A member that must be a string, or absent (NULL) when optional. */
static bool get_string(struct parse *p, json_t *o, const char *key, bool required, const char **out)
{
    json_t *v = json_object_get(o, key);
    *out = NULL;
    if (!v && !required)
        return true;
    if (!json_is_string(v))
        return fail(p, "\"%s\" %s: it must be a string", key, v ? "is not a string" : "is missing");
    *out = json_string_value(v);
    return true;
}

/* An optional boolean member (false when absent). */
static bool get_bool(struct parse *p, json_t *o, const char *key, bool *out)
{
    json_t *v = json_object_get(o, key);
    *out = false;
    if (!v)
        return true;
    if (!json_is_boolean(v))
        return fail(p, "\"%s\" must be true or false", key);
    *out = json_is_true(v);
    return true;
}

/* An optional finite number member at least 0 (unchanged when absent). */
static bool get_real(struct parse *p, json_t *o, const char *key, double *out)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return true;
    if (!json_is_number(v) || !(json_number_value(v) >= 0) || !isfinite(json_number_value(v)))
        return fail(p, "\"%s\" must be a number, 0 or more", key);
    *out = json_number_value(v);
    return true;
}

/* An optional whole number member in [0, max] (unchanged when absent). */
static bool get_int(struct parse *p, json_t *o, const char *key, int64_t max, int64_t *out)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return true;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max)
        return fail(p, "\"%s\" must be a whole number from 0 to %" PRId64, key, max);
    *out = json_integer_value(v);
    return true;
}

/* The seed: a whole number, or a string of digits (above INT64_MAX). */
static bool get_seed(struct parse *p, json_t *o, uint64_t *out)
{
    json_t *v = json_object_get(o, "seed");
    if (!v)
        return true;
    const char *digits = json_string_value(v);
    char *end = NULL;
    errno = 0;
    if (json_is_integer(v) && json_integer_value(v) >= 0)
        *out = (uint64_t)json_integer_value(v);
    else if (digits && digits[0] >= '0' && digits[0] <= '9' &&
             (*out = strtoull(digits, &end, 10), !*end && !errno))
        ;
    else
        return fail(p, "settings: \"seed\" must be a whole number from 0 to %" PRIu64, UINT64_MAX);
    return true;
}

/* An answer's "settings": every member optional (the kind's defaults), the whole runnable. */
static bool get_settings(struct parse *p, json_t *o, struct dllm_sampler_params *s)
{
    if (!json_is_object(o))
        return fail(p, "an answer needs \"settings\", an object");
    const char *kind, *name;
    if (!get_string(p, o, "kind", true, &kind))
        return false;
    if (strcmp(kind, "llada") != 0 && strcmp(kind, "dream") != 0)
        return fail(p, "settings: \"kind\" must be llada or dream");
    dllm_sampler_params_init(s,
                             strcmp(kind, "llada") == 0 ? DLLM_SAMPLER_LLADA : DLLM_SAMPLER_DREAM);
    if (!get_int(p, o, "max_tokens", INT32_MAX, &s->gen_length) ||
        !get_int(p, o, "steps", INT32_MAX, &s->steps) ||
        !get_int(p, o, "block_length", INT32_MAX, &s->block_length) ||
        !get_int(p, o, "top_k", INT32_MAX, &s->top_k) ||
        !get_real(p, o, "temperature", &s->temperature) || !get_real(p, o, "top_p", &s->top_p) ||
        !get_real(p, o, "threshold", &s->threshold) || !get_real(p, o, "alg_temp", &s->alg_temp) ||
        !get_real(p, o, "eps", &s->eps) || !get_real(p, o, "cfg_scale", &s->cfg_scale) ||
        !get_seed(p, o, &s->seed) || !get_bool(p, o, "early_stop", &s->early_stop))
        return false;
    if (!json_object_get(o, "early_stop"))
        s->early_stop = true;
    if (!get_string(p, o, "remasking", false, &name) ||
        (name && !dllm_remasking_parse(name, &s->remasking)))
        return fail(p, "settings: \"remasking\" must be low_confidence or random");
    if (!get_string(p, o, "alg", false, &name) || (name && !dllm_alg_parse(name, &s->alg)))
        return fail(p, "settings: \"alg\" must be origin, maskgit_plus, topk_margin or entropy");
    if (!get_string(p, o, "cache", false, &name) ||
        (name && !dllm_cache_mode_parse(name, &s->cache)))
        return fail(p, "settings: \"cache\" must be none, prefix or dual");
    if (!get_string(p, o, "cache_type", false, &name) ||
        (name && !dllm_cache_type_parse(name, &s->cache_type)))
        return fail(p, "settings: \"cache_type\" must be f16 or f32");
    struct dllm_error err = {0};
    if (dllm_sampler_params_check(s, &err) != DLLM_OK)
        return fail(p, "settings: %s", err.text);
    return true;
}

/* An answer's "timings": every member optional (0). */
static bool get_timings(struct parse *p, json_t *o, struct ui_timing_totals *t)
{
    *t = (struct ui_timing_totals){0};
    if (!o)
        return true;
    if (!json_is_object(o))
        return fail(p, "\"timings\" must be an object");
    int64_t steps = 0, tokens = 0;
    if (!get_int(p, o, "steps", INT32_MAX, &steps) ||
        !get_int(p, o, "tokens", INT32_MAX, &tokens) ||
        !get_real(p, o, "forward_ms", &t->forward_ms) ||
        !get_real(p, o, "sample_ms", &t->sample_ms) || !get_real(p, o, "total_ms", &t->total_ms) ||
        !get_real(p, o, "load_ms", &t->load_ms))
        return false;
    t->steps = (int)steps;
    t->tokens = (int)tokens;
    return true;
}

/* An answer's "gaps": ascending offsets of gap marks in its text; *n 0 when absent. */
static bool get_gaps(struct parse *p, json_t *o, size_t len, size_t **gaps, size_t *n)
{
    json_t *v = json_object_get(o, "gaps");
    *gaps = NULL;
    *n = 0;
    if (!v)
        return true;
    if (!json_is_array(v) || json_array_size(v) == 0)
        return fail(p, "\"gaps\" must be a list of byte offsets into the text");
    *gaps = malloc(json_array_size(v) * sizeof **gaps);
    if (!*gaps)
        return fail(p, "out of memory");
    for (size_t i = 0; i < json_array_size(v); i++) {
        json_t *g = json_array_get(v, i);
        if (!json_is_integer(g) || json_integer_value(g) < 0 ||
            (uint64_t)json_integer_value(g) > len) {
            free(*gaps);
            *gaps = NULL;
            return fail(p, "\"gaps\" must be a list of byte offsets into the text");
        }
        (*gaps)[i] = (size_t)json_integer_value(g);
    }
    *n = json_array_size(v);
    return true;
}

/* Adds an answer line to t. */
static bool add_answer(struct parse *p, json_t *o, const char *text, struct ui_transcript *t)
{
    struct dllm_sampler_params s;
    struct ui_timing_totals totals;
    bool stopped, dropped;
    size_t *gaps, n_gaps;
    if (!get_settings(p, json_object_get(o, "settings"), &s) ||
        !get_timings(p, json_object_get(o, "timings"), &totals) ||
        !get_bool(p, o, "stopped", &stopped) || !get_bool(p, o, "dropped", &dropped) ||
        !get_gaps(p, o, strlen(text), &gaps, &n_gaps))
        return false;
    if (n_gaps && !stopped) {
        free(gaps);
        return fail(p, "\"gaps\" are only in a stopped answer (\"stopped\": true)");
    }
    errno = 0;
    bool ok = ui_transcript_answer(t, text, gaps, n_gaps, stopped, &s, &totals);
    free(gaps);
    if (!ok)
        return fail(p, errno == EINVAL ? "\"gaps\" must be offsets of \" \\u2026 \" marks in the "
                                         "text, ascending"
                                       : "out of memory");
    t->turns[t->n - 1].dropped = dropped;
    return true;
}

/* One message line into t. */
static bool add_line(struct parse *p, json_t *o, struct ui_transcript *t)
{
    const char *role, *text;
    bool dropped;
    if (!get_string(p, o, "role", true, &role) || !get_string(p, o, "text", true, &text))
        return false;
    if (strcmp(role, "assistant") == 0)
        return add_answer(p, o, text, t);
    if (strcmp(role, "system") == 0)
        return ui_transcript_set_system(t, text) || fail(p, "out of memory");
    const bool user = strcmp(role, "user") == 0;
    if (!user && strcmp(role, "notice") != 0)
        return fail(p, "\"role\" is \"%.40s\": use user, assistant, notice or system", role);
    if (!get_bool(p, o, "dropped", &dropped))
        return false;
    if (!ui_transcript_add(t, user ? UI_ROLE_USER : UI_ROLE_NOTICE, text))
        return fail(p, "out of memory");
    t->turns[t->n - 1].dropped = user && dropped;
    return true;
}

/* The header line: this format, a version this code reads. */
static bool check_header(struct parse *p, json_t *o)
{
    const char *format;
    json_t *version = json_object_get(o, "format") ? json_object_get(o, "version") : NULL;
    if (!get_string(p, o, "format", false, &format) || !format || strcmp(format, JSONL_FORMAT) != 0)
        return fail(p, "not a dllm conversation: the first line has no \"format\": \"" JSONL_FORMAT
                       "\" (/save writes FILE.jsonl)");
    if (!json_is_integer(version) || json_integer_value(version) != JSONL_VERSION)
        return fail(p, "\"version\" must be %d, the version this dllm-tui reads", JSONL_VERSION);
    return true;
}

bool ui_jsonl_parse(const char *data, size_t len, struct ui_transcript *out, char *err, size_t size)
{
    struct parse p = {.err = err, .size = size};
    ui_transcript_init(out);
    bool ok = true, header = false;
    for (size_t at = 0; ok && at < len;) {
        const char *nl = memchr(data + at, '\n', len - at);
        const size_t end = nl ? (size_t)(nl - data) : len;
        p.line++;
        size_t i = at;
        while (i < end && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r'))
            i++;
        if (i < end) {
            json_error_t jerr;
            json_t *o = json_loadb(data + at, end - at, JSON_REJECT_DUPLICATES, &jerr);
            if (!json_is_object(o))
                ok = o ? fail(&p, "not a JSON object")
                       : fail(&p, "not JSON: %s (column %d)", jerr.text, jerr.column);
            else if (!header)
                ok = header = check_header(&p, o);
            else
                ok = add_line(&p, o, out);
            json_decref(o);
        }
        at = end + 1;
    }
    if (ok && !header) {
        p.line = 1;
        ok = fail(&p, "the file is empty: /save FILE writes a conversation to FILE.jsonl");
    }
    if (!ok)
        ui_transcript_fini(out);
    return ok;
}

bool ui_jsonl_load(const char *path, struct ui_transcript *out, char *err, size_t size)
{
    ui_transcript_init(out);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, size, "cannot read %s: %s", path, strerror(errno));
        return false;
    }
    char *data = malloc(UI_JSONL_MAX_BYTES + 1);
    size_t len = data ? fread(data, 1, UI_JSONL_MAX_BYTES + 1, f) : 0;
    const bool bad = !data || ferror(f);
    const int saved = errno;
    fclose(f);
    bool ok = false;
    if (!data)
        snprintf(err, size, "out of memory reading %s", path);
    else if (bad)
        snprintf(err, size, "cannot read %s: %s", path, strerror(saved));
    else if (len > UI_JSONL_MAX_BYTES)
        snprintf(err, size, "%s is larger than %u MiB: not a conversation /save wrote", path,
                 UI_JSONL_MAX_BYTES >> 20);
    else {
        char why[DLLM_ERROR_TEXT_MAX];
        ok = ui_jsonl_parse(data, len, out, why, sizeof why);
        if (!ok)
            snprintf(err, size, "%s %s", path, why);
    }
    free(data);
    return ok;
}
