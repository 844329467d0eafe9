/*
 * Chat templates: the two Jinja templates of the supported models, recognised by the
 * statements that decide their output and rendered here in C, byte for byte as Jinja does
 * with add_generation_prompt set.
 */
#define _GNU_SOURCE /* memmem */
#include "config.h"

#include "chat.h"

#include "dllm.h"
#include "tokenizer.h"

#include <stdlib.h>
#include <string.h>

/*
 * What identifies each template: pieces of its Jinja source (in the source, "\n" inside a
 * string literal is a backslash and an n, while LLaDA's template holds real newlines), the
 * number of output statements it has, and the special tokens its text uses.
 */
struct template_kind {
    enum dllm_chat_format format;
    const char *name;
    const char *const *pieces;
    int n_outputs; /* occurrences of "{{", or -1 for any */
    const char *const *tokens;
};

/* LLaDA-8B-Instruct, as Llama-3-Instruct (which only wraps the last header in a condition). */
static const char *const llama3_pieces[] = {
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | "
    "trim + '<|eot_id|>'",
    "{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}",
    "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}",
    NULL,
};
static const char *const llama3_tokens[] = {"<|start_header_id|>", "<|end_header_id|>",
                                            "<|eot_id|>", NULL};

/* Dream-v0-Instruct, as Qwen2.5-Instruct (the tools branch is never taken). */
static const char *const chatml_pieces[] = {
    "{%- if messages[0]['role'] == 'system' %}\n"
    "        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}\n"
    "    {%- else %}\n"
    "        {{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}",
    "{%- if (message.role == \"user\") or (message.role == \"system\" and not loop.first) or "
    "(message.role == \"assistant\" and not message.tool_calls) %}\n"
    "        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}",
    "{{- '<|im_start|>user' }}",
    "{{- '\\n<tool_response>\\n' }}\n        {{- message.content }}\n"
    "        {{- '\\n</tool_response>' }}",
    "{%- if add_generation_prompt %}\n    {{- '<|im_start|>assistant\\n' }}",
    NULL,
};
static const char *const chatml_tokens[] = {"<|im_start|>", "<|im_end|>", NULL};

static const struct template_kind kinds[] = {
    {DLLM_CHAT_LLAMA3, "llama3", llama3_pieces, 2, llama3_tokens},
    {DLLM_CHAT_CHATML, "chatml", chatml_pieces, -1, chatml_tokens},
};

struct dllm_chat_template {
    const struct template_kind *kind;
    const struct dllm_vocab *vocab;
    const char *bos; /* the BOS token's text, for LLAMA3 */
    size_t bos_len;
};

const char *dllm_chat_format_name(enum dllm_chat_format format)
{
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        if (kinds[i].format == format)
            return kinds[i].name;
    return "unknown";
}

/* Whether n bytes of src hold every piece of the kind and its number of output statements. */
static bool matches(const struct template_kind *k, const char *src, size_t n)
{
    for (const char *const *p = k->pieces; *p; p++)
        if (!memmem(src, n, *p, strlen(*p)))
            return false;
    if (k->n_outputs < 0)
        return true;
    int outputs = 0;
    for (const char *s = src; (s = memmem(s, n - (size_t)(s - src), "{{", 2)); s += 2)
        outputs++;
    return outputs == k->n_outputs;
}

enum dllm_status dllm_chat_template_new(const char *source, size_t len,
                                        const struct dllm_vocab *vocab,
                                        struct dllm_chat_template **out, struct dllm_error *err)
{
    *out = NULL;
    const struct template_kind *kind = NULL;
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds && !kind; i++)
        if (matches(&kinds[i], source, len))
            kind = &kinds[i];
    if (!kind)
        return dllm_error_set(err, DLLM_ERR_UNSUPPORTED,
                              "unrecognised chat template (dllm renders LLaDA's Llama-3 style "
                              "template and Dream's ChatML template)");
    for (const char *const *t = kind->tokens; *t; t++)
        if (dllm_vocab_find(vocab, *t, strlen(*t)) < 0)
            return dllm_error_set(err, DLLM_ERR_FORMAT,
                                  "the chat template uses %s, which is not a token of the "
                                  "vocabulary",
                                  *t);
    size_t bos_len = 0;
    const char *bos = NULL;
    if (kind->format == DLLM_CHAT_LLAMA3) {
        bos = dllm_vocab_token_text(vocab, dllm_vocab_special(vocab, DLLM_SPECIAL_BOS), &bos_len);
        if (!bos)
            return dllm_error_set(err, DLLM_ERR_MISSING,
                                  "the chat template starts with the BOS token, but "
                                  "tokenizer.ggml.bos_token_id is missing");
    }
    struct dllm_chat_template *t = calloc(1, sizeof *t);
    if (!t)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    *t = (struct dllm_chat_template){kind, vocab, bos, bos_len};
    *out = t;
    return DLLM_OK;
}

enum dllm_status dllm_chat_template_load(const struct dllm_gguf *gguf,
                                         const struct dllm_vocab *vocab,
                                         struct dllm_chat_template **out, struct dllm_error *err)
{
    *out = NULL;
    char *src;
    enum dllm_status st = dllm_gguf_get_str(gguf, "tokenizer.chat_template", &src, err);
    if (st)
        return st;
    st = dllm_chat_template_new(src, strlen(src), vocab, out, err);
    free(src);
    return st;
}

void dllm_chat_template_free(struct dllm_chat_template *t)
{
    free(t);
}

enum dllm_chat_format dllm_chat_template_format(const struct dllm_chat_template *t)
{
    return t->kind->format;
}

/* Whether the code point is whitespace to Python's str.isspace(). */
static bool py_space(uint32_t c)
{
    return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
           c == 0x202f || c == 0x205f || c == 0x3000;
}

size_t dllm_chat_trim(const char *s, size_t n, size_t *start)
{
    size_t a = 0, b = n;
    uint32_t c;
    size_t k;
    while (a < b && (k = dllm_tokenizer_utf8_decode(s + a, b - a, &c)) && py_space(c))
        a += k;
    /* Step back over one character at a time: find where the last one starts. */
    while (b > a) {
        size_t p = b - 1;
        while (p > a && b - p < 4 && ((unsigned char)s[p] & 0xc0) == 0x80)
            p--;
        if (dllm_tokenizer_utf8_decode(s + p, b - p, &c) != b - p || !py_space(c))
            break;
        b = p;
    }
    *start = a;
    return b - a;
}

/* A growing string. */
struct text {
    char *s;
    size_t n, cap;
    bool failed;
};

static void put(struct text *t, const char *s, size_t n)
{
    if (t->failed)
        return;
    if (t->n + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap < t->n + n + 1)
            cap *= 2;
        char *p = realloc(t->s, cap);
        if (!p) {
            t->failed = true;
            return;
        }
        t->s = p;
        t->cap = cap;
    }
    memcpy(t->s + t->n, s, n);
    t->n += n;
    t->s[t->n] = 0;
}

static void put_str(struct text *t, const char *s)
{
    put(t, s, strlen(s));
}

/* LLaDA: BOS, then a header, the trimmed content and <|eot_id|> per message; the answer's
 * header. */
static void render_llama3(const struct dllm_chat_template *t, const struct dllm_chat_message *m,
                          size_t n, struct text *out)
{
    for (size_t i = 0; i < n; i++) {
        if (i == 0)
            put(out, t->bos, t->bos_len);
        put_str(out, "<|start_header_id|>");
        put_str(out, m[i].role);
        put_str(out, "<|end_header_id|>\n\n");
        size_t start, len = dllm_chat_trim(m[i].content, strlen(m[i].content), &start);
        put(out, m[i].content + start, len);
        put_str(out, "<|eot_id|>");
    }
    put_str(out, "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

/*
 * Dream: the first message if it is a system message, else the default system prompt; every
 * other message in ChatML; a run of tool results as one user message; the answer's header.
 */
static enum dllm_status render_chatml(const struct dllm_chat_message *m, size_t n, struct text *out,
                                      struct dllm_error *err)
{
    if (!strcmp(m[0].role, "system")) {
        put_str(out, "<|im_start|>system\n");
        put_str(out, m[0].content);
        put_str(out, "<|im_end|>\n");
    } else {
        put_str(out, "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n");
    }
    for (size_t i = 0; i < n; i++) {
        const char *role = m[i].role;
        if (!strcmp(role, "user") || !strcmp(role, "assistant") ||
            (!strcmp(role, "system") && i > 0)) {
            put_str(out, "<|im_start|>");
            put_str(out, role);
            put_str(out, "\n");
            put_str(out, m[i].content);
            put_str(out, "<|im_end|>\n");
        } else if (!strcmp(role, "tool")) {
            if (i == 0 || strcmp(m[i - 1].role, "tool"))
                put_str(out, "<|im_start|>user");
            put_str(out, "\n<tool_response>\n");
            put_str(out, m[i].content);
            put_str(out, "\n</tool_response>");
            if (i + 1 == n || strcmp(m[i + 1].role, "tool"))
                put_str(out, "<|im_end|>\n");
        } else if (strcmp(role, "system")) {
            return dllm_error_set(err, DLLM_ERR_ARG,
                                  "message %zu has role '%s', which the ChatML template drops "
                                  "(roles: system, user, assistant, tool)",
                                  i, role);
        }
    }
    put_str(out, "<|im_start|>assistant\n");
    return DLLM_OK;
}

enum dllm_status dllm_chat_render(const struct dllm_chat_template *t,
                                  const struct dllm_chat_message *msgs, size_t n, char **text,
                                  size_t *len, struct dllm_error *err)
{
    *text = NULL;
    *len = 0;
    if (n == 0)
        return dllm_error_set(err, DLLM_ERR_ARG, "a conversation needs at least one message");
    for (size_t i = 0; i < n; i++)
        if (!msgs[i].role || !msgs[i].content)
            return dllm_error_set(err, DLLM_ERR_ARG, "message %zu has no %s", i,
                                  msgs[i].role ? "content" : "role");
    struct text out = {0};
    enum dllm_status st = DLLM_OK;
    if (t->kind->format == DLLM_CHAT_LLAMA3)
        render_llama3(t, msgs, n, &out);
    else
        st = render_chatml(msgs, n, &out, err);
    if (!st && out.failed)
        st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    if (st) {
        free(out.s);
        return st;
    }
    *text = out.s;
    *len = out.n;
    return DLLM_OK;
}

enum dllm_status dllm_chat_encode(const struct dllm_chat_template *t,
                                  const struct dllm_chat_message *msgs, size_t n, int32_t **ids,
                                  int64_t *n_ids, struct dllm_error *err)
{
    *ids = NULL;
    *n_ids = 0;
    char *text;
    size_t len;
    enum dllm_status st = dllm_chat_render(t, msgs, n, &text, &len, err);
    if (st)
        return st;
    st = dllm_vocab_encode(t->vocab, text, len, DLLM_ENCODE_PARSE_SPECIAL, ids, n_ids, err);
    free(text);
    return st;
}
