/* dllm inspect: a GGUF file's version, metadata, tensor type counts and tensors. */
#include "config.h"

#include "cli.h"
#include "commands.h"
#include "dllm.h"
#include "model_ref.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char cmd_inspect_usage[] =
    "usage: dllm inspect [--json] [-n N] PATH\n"
    "\n"
    "Prints the GGUF version, every metadata key with its type and value (arrays: element\n"
    "type, length and the first elements), a count per tensor type and every tensor with its\n"
    "type, shape (ne0 first), data offset and byte size; for a mixture-of-experts model\n"
    "also its experts (count, used per token, expert FFN size, router type). Works on any\n"
    "GGUF file. Part 1 of a split model (NAME-00001-of-0000N.gguf) shows the tensors of\n"
    "every part, each with the part that holds it and its offset there.\n"
    "\n"
    "options:\n"
    "  --json          print one JSON document instead (arrays in full)\n"
    "  -n, --array-items N\n"
    "                  array elements shown in text output (default 8)\n"
    "  -h, --help      this help\n";

/* Whether len bytes at s are well-formed UTF-8. */
static bool valid_utf8(const unsigned char *s, uint64_t len)
{
    for (uint64_t i = 0; i < len;) {
        unsigned char c = s[i];
        int n = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
        if (n < 0 || (c >= 0x80 && c < 0xc2) || c > 0xf4 || len - i <= (uint64_t)n)
            return false;
        for (int k = 1; k <= n; k++)
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
        uint32_t cp = n == 0 ? c : c & (0x3f >> n);
        for (int k = 1; k <= n; k++)
            cp = cp << 6 | (s[i + k] & 0x3f);
        if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += (uint64_t)n + 1;
    }
    return true;
}

/* A GGUF string as text: itself when valid UTF-8 without NULs, else with \xNN escapes. */
static char *string_text(const char *ptr, uint64_t len)
{
    bool plain = valid_utf8((const unsigned char *)ptr, len) && !memchr(ptr, 0, len);
    size_t cap = plain ? len + 1 : 4 * len + 1;
    char *s = malloc(cap);
    if (!s)
        cli_fail("out of memory");
    if (plain) {
        memcpy(s, ptr, len);
        s[len] = 0;
        return s;
    }
    char *o = s;
    for (uint64_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)ptr[i];
        if (c >= 0x20 && c < 0x7f && c != '\\')
            *o++ = (char)c;
        else
            o += sprintf(o, "\\x%02x", c);
    }
    *o = 0;
    return s;
}

/* ---- text output ------------------------------------------------------------------------ */

/* Prints a scalar or string value; arrays show their first max_items elements. */
static void print_value(const struct dllm_gguf_value *v, uint64_t max_items)
{
    switch (v->type) {
    case DLLM_GGUF_UINT8:
    case DLLM_GGUF_UINT16:
    case DLLM_GGUF_UINT32:
    case DLLM_GGUF_UINT64: printf("%" PRIu64, v->u64); break;
    case DLLM_GGUF_INT8:
    case DLLM_GGUF_INT16:
    case DLLM_GGUF_INT32:
    case DLLM_GGUF_INT64: printf("%" PRId64, v->i64); break;
    case DLLM_GGUF_FLOAT32: printf("%.9g", v->f64); break;
    case DLLM_GGUF_FLOAT64: printf("%.17g", v->f64); break;
    case DLLM_GGUF_BOOL: fputs(v->b ? "true" : "false", stdout); break;
    case DLLM_GGUF_STRING: {
        char *s = string_text(v->str.ptr, v->str.len);
        /* Keep one key per line: show newlines and tabs escaped. */
        putchar('"');
        for (const char *p = s; *p; p++) {
            if (*p == '\n')
                fputs("\\n", stdout);
            else if (*p == '\t')
                fputs("\\t", stdout);
            else if (*p == '"')
                fputs("\\\"", stdout);
            else
                putchar(*p);
        }
        putchar('"');
        free(s);
        break;
    }
    case DLLM_GGUF_ARRAY: {
        putchar('[');
        uint64_t n = v->arr.n < max_items ? v->arr.n : max_items;
        for (uint64_t i = 0; i < n; i++) {
            struct dllm_gguf_value e;
            dllm_gguf_array_get(v, i, &e);
            if (i)
                fputs(", ", stdout);
            print_value(&e, max_items);
        }
        if (v->arr.n > n)
            printf("%s... %" PRIu64 " more", n ? ", " : "", v->arr.n - n);
        putchar(']');
        break;
    }
    }
}

/* The type column: "uint32", or "array[string] (2048)". */
static void print_type(const struct dllm_gguf_value *v)
{
    if (v->type == DLLM_GGUF_ARRAY)
        printf("array[%s] (%" PRIu64 ")", dllm_gguf_type_name(v->arr.type), v->arr.n);
    else
        fputs(dllm_gguf_type_name(v->type), stdout);
}

static void shape_text(const struct dllm_gguf_tensor *t, char *buf, size_t size)
{
    int o = snprintf(buf, size, "[");
    for (int d = 0; d < t->n_dims; d++)
        o += snprintf(buf + o, size - (size_t)o, "%s%" PRId64, d ? ", " : "", t->ne[d]);
    snprintf(buf + o, size - (size_t)o, "]");
}

static const char *type_name_or_id(uint32_t type, char *buf, size_t size)
{
    const char *name = dllm_type_name(type);
    if (name)
        return name;
    snprintf(buf, size, "type%u", type);
    return buf;
}

static void print_text(const struct dllm_gguf *g, const struct dllm_model_experts *x,
                       uint64_t max_items)
{
    int64_t n_kv = dllm_gguf_n_kv(g), n_t = dllm_gguf_n_tensors(g);
    printf("GGUF version %u: %" PRId64 " metadata keys, %" PRId64
           " tensors, alignment %zu, data at byte %zu\n",
           dllm_gguf_version(g), n_kv, n_t, dllm_gguf_alignment(g), dllm_gguf_data_offset(g));
    if (dllm_gguf_n_parts(g) > 1)
        printf("split into %" PRId64
               " parts, which hold the tensors (each offset is in its part)\n",
               dllm_gguf_n_parts(g));
    if (x->n_expert)
        printf("experts %" PRId64 ", used %" PRId64 ", expert ffn %" PRId64 ", router %s\n",
               x->n_expert, x->n_used, x->ff, x->router_type);
    printf("\nmetadata:\n");
    for (int64_t i = 0; i < n_kv; i++) {
        const struct dllm_gguf_value *v = dllm_gguf_kv_value(g, i);
        printf("  %s  ", dllm_gguf_kv_key(g, i));
        print_type(v);
        fputs("  ", stdout);
        print_value(v, max_items);
        putchar('\n');
    }
    printf("\ntensor types:\n");
    int64_t counts[DLLM_TYPE_COUNT] = {0};
    for (int64_t i = 0; i < n_t; i++)
        counts[dllm_gguf_tensor(g, i)->type]++;
    char buf[32];
    for (uint32_t ty = 0; ty < DLLM_TYPE_COUNT; ty++)
        if (counts[ty])
            printf("  %-8s %" PRId64 "\n", type_name_or_id(ty, buf, sizeof buf), counts[ty]);
    printf("\ntensors:\n");
    for (int64_t i = 0; i < n_t; i++) {
        const struct dllm_gguf_tensor *t = dllm_gguf_tensor(g, i);
        char shape[128];
        shape_text(t, shape, sizeof shape);
        printf("  %-32s %-6s %-22s offset %-12" PRIu64 " size %zu", t->name,
               type_name_or_id(t->type, buf, sizeof buf), shape, t->offset, t->size);
        if (dllm_gguf_n_parts(g) > 1)
            printf(" part %" PRId64, dllm_gguf_tensor_part(g, t));
        putchar('\n');
    }
}

/* ---- JSON output ------------------------------------------------------------------------ */

/* An integer as a JSON number, or as a string beyond 2^53 where doubles lose precision. */
static json_t *json_int(bool is_signed, uint64_t u, int64_t i)
{
    const int64_t limit = INT64_C(1) << 53;
    char buf[32];
    if (is_signed) {
        if (i >= -limit && i <= limit)
            return json_integer(i);
        snprintf(buf, sizeof buf, "%" PRId64, i);
    } else {
        if (u <= (uint64_t)limit)
            return json_integer((json_int_t)u);
        snprintf(buf, sizeof buf, "%" PRIu64, u);
    }
    return json_string(buf);
}

static json_t *json_value(const struct dllm_gguf_value *v)
{
    switch (v->type) {
    case DLLM_GGUF_UINT8:
    case DLLM_GGUF_UINT16:
    case DLLM_GGUF_UINT32:
    case DLLM_GGUF_UINT64: return json_int(false, v->u64, 0);
    case DLLM_GGUF_INT8:
    case DLLM_GGUF_INT16:
    case DLLM_GGUF_INT32:
    case DLLM_GGUF_INT64: return json_int(true, 0, v->i64);
    case DLLM_GGUF_FLOAT32:
    case DLLM_GGUF_FLOAT64: return json_real(v->f64);
    case DLLM_GGUF_BOOL: return json_boolean(v->b);
    case DLLM_GGUF_STRING: {
        char *s = string_text(v->str.ptr, v->str.len);
        json_t *j = json_string(s);
        free(s);
        return j;
    }
    case DLLM_GGUF_ARRAY: {
        json_t *a = json_array();
        for (uint64_t i = 0; i < v->arr.n; i++) {
            struct dllm_gguf_value e;
            dllm_gguf_array_get(v, i, &e);
            json_array_append_new(a, json_value(&e));
        }
        return a;
    }
    }
    return json_null();
}

static void print_json(const struct dllm_gguf *g, const struct dllm_model_experts *x)
{
    json_t *doc = json_object();
    json_object_set_new(doc, "version", json_integer(dllm_gguf_version(g)));
    json_object_set_new(doc, "parts", json_integer(dllm_gguf_n_parts(g)));
    if (x->n_expert)
        json_object_set_new(doc, "moe",
                            json_pack("{s:I, s:I, s:I, s:s}", "n_expert", (json_int_t)x->n_expert,
                                      "n_expert_used", (json_int_t)x->n_used, "expert_ff",
                                      (json_int_t)x->ff, "router_type", x->router_type));
    json_t *meta = json_object();
    for (int64_t i = 0; i < dllm_gguf_n_kv(g); i++) {
        const struct dllm_gguf_value *v = dllm_gguf_kv_value(g, i);
        json_t *entry = json_object();
        json_object_set_new(entry, "type", json_string(dllm_gguf_type_name(v->type)));
        if (v->type == DLLM_GGUF_ARRAY) {
            json_object_set_new(entry, "element_type",
                                json_string(dllm_gguf_type_name(v->arr.type)));
            json_object_set_new(entry, "length", json_int(false, v->arr.n, 0));
        }
        json_object_set_new(entry, "value", json_value(v));
        json_object_set_new(meta, dllm_gguf_kv_key(g, i), entry);
    }
    json_object_set_new(doc, "metadata", meta);
    json_t *counts = json_object(), *tensors = json_array();
    char buf[32];
    for (int64_t i = 0; i < dllm_gguf_n_tensors(g); i++) {
        const struct dllm_gguf_tensor *t = dllm_gguf_tensor(g, i);
        const char *tn = type_name_or_id(t->type, buf, sizeof buf);
        json_t *c = json_object_get(counts, tn);
        json_object_set_new(counts, tn, json_integer(c ? json_integer_value(c) + 1 : 1));
        json_t *shape = json_array();
        for (int d = 0; d < t->n_dims; d++)
            json_array_append_new(shape, json_int(true, 0, t->ne[d]));
        json_array_append_new(tensors,
                              json_pack("{s:s, s:s, s:o, s:o, s:o, s:I}", "name", t->name, "type",
                                        tn, "shape", shape, "offset", json_int(false, t->offset, 0),
                                        "size", json_int(false, t->size, 0), "part",
                                        (json_int_t)dllm_gguf_tensor_part(g, t)));
    }
    json_object_set_new(doc, "tensor_type_counts", counts);
    json_object_set_new(doc, "tensors", tensors);
    errno = 0;
    if (json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0)
        cli_fail("cannot write the JSON document: %s", errno ? strerror(errno) : "write error");
    putchar('\n');
    json_decref(doc);
}

int cmd_inspect(const struct cli_command *cmd, int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"array-items", required_argument, NULL, 'n'},
        {0},
    };
    bool json = false;
    uint64_t max_items = 8;
    int c;
    while ((c = cli_getopt(cmd, argc, argv, "n:", opts)) != -1) {
        if (c == 'j')
            json = true;
        else if (c == 'n')
            max_items = (uint64_t)cli_parse_int(cmd, "--array-items", optarg, 0, 1000000);
    }
    if (optind != argc - 1)
        cli_usage_error(cmd, optind == argc ? "PATH is missing" : "one PATH only");
    const char *path = argv[optind];
    struct dllm_gguf *g;
    struct dllm_error err;
    enum dllm_status st = dllm_gguf_open(path, &g, &err);
    if (st != DLLM_OK)
        cli_fail("%s: %s%s", path, err.text, model_ref_fix(st));
    /* A mixture-of-experts model's experts, when the file loads as a model (the type names
     * are static strings). */
    struct dllm_model_experts experts = {0};
    struct dllm_model *model;
    if (dllm_model_open(path, NULL, &model, NULL) == DLLM_OK) {
        experts = dllm_model_experts(model);
        dllm_model_close(model);
    }
    if (json)
        print_json(g, &experts);
    else
        print_text(g, &experts, max_items);
    dllm_gguf_close(g);
    return CLI_EXIT_OK;
}
