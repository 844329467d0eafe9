/*
 * Chat templates: the Jinja templates of the supported models (LLaDA's Llama-3 style, Dream's
 * ChatML, LLaDA-MoE's Ling role tags, RND1's Qwen3 ChatML), recognised by the statements or
 * markers that decide their output and rendered here in C, byte for byte as Jinja does with
 * add_generation_prompt set.
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

/* LLaDA-MoE-Instruct, Ling 2.0's role tags (llama.cpp calls it bailing2): by its markers. */
static const char *const ling_pieces[] = {
    "<role>SYSTEM</role>", "<role>HUMAN</role>", "<role>ASSISTANT</role>",
    "<|role_end|>",        "detailed thinking ", NULL,
};
static const char *const ling_tokens[] = {"<role>", "</role>", "<|role_end|>", NULL};

/* RND1, as Qwen3 (no default system message; thinking kept only after the last query). */
static const char *const qwen3_pieces[] = {
    "{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}",
    "{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}",
    "{{- '<|im_start|>' + message.role + '\\n<think>\\n' + reasoning_content.strip('\\n') + "
    "'\\n</think>\\n\\n' + content.lstrip('\\n') }}",
    "{{- '\\n<tool_response>\\n' }}\n        {{- message.content }}\n"
    "        {{- '\\n</tool_response>' }}",
    "{%- if add_generation_prompt %}\n    {{- '<|im_start|>assistant\\n' }}",
    NULL,
};

static const struct template_kind kinds[] = {
    {DLLM_CHAT_LLAMA3, "llama3", llama3_pieces, 2, llama3_tokens},
    {DLLM_CHAT_CHATML, "chatml", chatml_pieces, -1, chatml_tokens},
    {DLLM_CHAT_LING, "ling", ling_pieces, -1, ling_tokens},
    {DLLM_CHAT_QWEN3, "qwen3", qwen3_pieces, -1, chatml_tokens},
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
                              "template, Dream's ChatML, LLaDA-MoE's Ling role tags and RND1's "
                              "Qwen3 ChatML)");
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

/* A run of tool results as one user message, as ChatML and Qwen3 render message i. */
static void put_tool(const struct dllm_chat_message *m, size_t n, size_t i, struct text *out)
{
    if (i == 0 || strcmp(m[i - 1].role, "tool"))
        put_str(out, "<|im_start|>user");
    put_str(out, "\n<tool_response>\n");
    put_str(out, m[i].content);
    put_str(out, "\n</tool_response>");
    if (i + 1 == n || strcmp(m[i + 1].role, "tool"))
        put_str(out, "<|im_end|>\n");
}

/* "<|im_start|>ROLE\n" + content + "<|im_end|>\n". */
static void put_chatml(const char *role, const char *content, struct text *out)
{
    put_str(out, "<|im_start|>");
    put_str(out, role);
    put_str(out, "\n");
    put_str(out, content);
    put_str(out, "<|im_end|>\n");
}

/* The error for a message whose role a template drops. */
static enum dllm_status dropped_role(size_t i, const char *role, const char *format,
                                     const char *roles, struct dllm_error *err)
{
    return dllm_error_set(err, DLLM_ERR_ARG,
                          "message %zu has role '%s', which the %s template drops (roles: %s)", i,
                          role, format, roles);
}

/*
 * Dream: the first message if it is a system message, else the default system prompt; every
 * other message in ChatML; a run of tool results as one user message; the answer's header.
 */
static enum dllm_status render_chatml(const struct dllm_chat_message *m, size_t n, struct text *out,
                                      struct dllm_error *err)
{
    if (!strcmp(m[0].role, "system"))
        put_chatml("system", m[0].content, out);
    else
        put_str(out, "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n");
    for (size_t i = 0; i < n; i++) {
        const char *role = m[i].role;
        if (!strcmp(role, "user") || !strcmp(role, "assistant") ||
            (!strcmp(role, "system") && i > 0))
            put_chatml(role, m[i].content, out);
        else if (!strcmp(role, "tool"))
            put_tool(m, n, i, out);
        else if (strcmp(role, "system"))
            return dropped_role(i, role, "ChatML", "system, user, assistant, tool", err);
    }
    put_str(out, "<|im_start|>assistant\n");
    return DLLM_OK;
}

/* Whether s starts with prefix and ends with suffix (Python's startswith and endswith). */
static bool wrapped_in(const char *s, const char *prefix, const char *suffix)
{
    const size_t n = strlen(s), a = strlen(prefix), b = strlen(suffix);
    return n >= a && n >= b && !memcmp(s, prefix, a) && !memcmp(s + n - b, suffix, b);
}

/* The last occurrence of needle in s[0..n-1], or NULL. */
static const char *last_of(const char *s, size_t n, const char *needle)
{
    const size_t k = strlen(needle);
    const char *found = NULL;
    for (const char *p = s; (p = memmem(p, n - (size_t)(p - s), needle, k)); p++)
        found = p;
    return found;
}

/* Appends s[0..n-1] without the newlines Python's strip('\n') removes from both ends. */
static void put_strip_newlines(const char *s, size_t n, struct text *out)
{
    while (n && *s == '\n')
        s++, n--;
    while (n && s[n - 1] == '\n')
        n--;
    put(out, s, n);
}

/*
 * One assistant message of Qwen3's template: the text after the last "</think>" (leading
 * newlines dropped); after the last user query, when it is the last message or has reasoning
 * (the text before the first "</think>", after the last "<think>" in it), that reasoning first
 * inside "<think>\n...\n</think>\n\n".
 */
static void put_qwen3_assistant(const char *content, bool after_query, bool last, struct text *out)
{
    const size_t n = strlen(content);
    const char *close = memmem(content, n, "</think>", 8);
    const char *answer = content, *reasoning = "";
    size_t answer_len = n, reasoning_len = 0;
    if (close) {
        const char *last_close = last_of(content, n, "</think>");
        answer = last_close + 8;
        answer_len = n - (size_t)(answer - content);
        /* The reasoning: before the first </think> (newlines stripped), after the last
         * <think> there; put_strip_newlines strips its leading ones. */
        size_t before = (size_t)(close - content);
        while (before && content[before - 1] == '\n')
            before--;
        const char *open = last_of(content, before, "<think>");
        reasoning = open ? open + 7 : content;
        reasoning_len = before - (size_t)(reasoning - content);
    }
    while (answer_len && *answer == '\n')
        answer++, answer_len--;
    put_str(out, "<|im_start|>assistant\n");
    if (after_query && (last || reasoning_len)) {
        put_str(out, "<think>\n");
        put_strip_newlines(reasoning, reasoning_len, out);
        put_str(out, "\n</think>\n\n");
    }
    put(out, answer, answer_len);
    put_str(out, "<|im_end|>\n");
}

/*
 * RND1 (Qwen3): the first message if it is a system message (no default); users, later system
 * messages and tool results as ChatML; assistants as put_qwen3_assistant; the answer's header
 * (enable_thinking is undefined, so no empty thinking block).
 */
static enum dllm_status render_qwen3(const struct dllm_chat_message *m, size_t n, struct text *out,
                                     struct dllm_error *err)
{
    if (!strcmp(m[0].role, "system"))
        put_chatml("system", m[0].content, out);
    /* The last user message that is not a wrapped tool response (the template's ns). */
    size_t last_query = n - 1;
    for (size_t i = n; i-- > 0;) {
        if (!strcmp(m[i].role, "user") &&
            !wrapped_in(m[i].content, "<tool_response>", "</tool_response>")) {
            last_query = i;
            break;
        }
    }
    for (size_t i = 0; i < n; i++) {
        const char *role = m[i].role;
        if (!strcmp(role, "user") || (!strcmp(role, "system") && i > 0))
            put_chatml(role, m[i].content, out);
        else if (!strcmp(role, "assistant"))
            put_qwen3_assistant(m[i].content, i > last_query, i + 1 == n, out);
        else if (!strcmp(role, "tool"))
            put_tool(m, n, i, out);
        else if (strcmp(role, "system"))
            return dropped_role(i, role, "Qwen3", "system, user, assistant, tool", err);
    }
    put_str(out, "<|im_start|>assistant\n");
    return DLLM_OK;
}

/*
 * LLaDA-MoE (Ling): the system header with the first message's content when it is a system
 * message, "detailed thinking off"; each message in role tags; the answer's tag.
 */
static enum dllm_status render_ling(const struct dllm_chat_message *m, size_t n, struct text *out,
                                    struct dllm_error *err)
{
    put_str(out, "<role>SYSTEM</role>");
    if (!strcmp(m[0].role, "system")) {
        put_str(out, m[0].content);
        put_str(out, "\n");
    }
    put_str(out, "detailed thinking off<|role_end|>");
    for (size_t i = 0; i < n; i++) {
        const char *role = m[i].role, *tag;
        if (!strcmp(role, "user"))
            tag = "<role>HUMAN</role>";
        else if (!strcmp(role, "assistant"))
            tag = "<role>ASSISTANT</role>";
        else if (!strcmp(role, "system") && i > 0)
            tag = "<role>SYSTEM</role>";
        else if (!strcmp(role, "system"))
            continue;
        else
            return dropped_role(i, role, "Ling", "system, user, assistant", err);
        put_str(out, tag);
        put_str(out, m[i].content);
        put_str(out, "<|role_end|>");
    }
    put_str(out, "<role>ASSISTANT</role>");
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
    switch (t->kind->format) {
    case DLLM_CHAT_LLAMA3: render_llama3(t, msgs, n, &out); break;
    case DLLM_CHAT_CHATML: st = render_chatml(msgs, n, &out, err); break;
    case DLLM_CHAT_LING: st = render_ling(msgs, n, &out, err); break;
    case DLLM_CHAT_QWEN3: st = render_qwen3(msgs, n, &out, err); break;
    }
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
