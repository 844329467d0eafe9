/*
 * Chat templates: recognition, rendering byte for byte as the models' Jinja templates (the
 * expected texts are worked out by hand from tokenizer.chat_template in llada-hf/ and
 * dream-hf/, and in the llada-moe and rnd1 fixture models), the prompt ids against the
 * published special-token ids, and errors.
 */
#include "text/chat.h"
#include "dllm.h"
#include "fixtures.h"
#include "vocab_fixture.h"

#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LLADA "models/llada-tiny-q4km.gguf"
#define DREAM "models/dream-tiny-realvocab-q4km.gguf"
#define GPT2  "tokenizer/llamacpp-tests/ggml-vocab-gpt-2.gguf"
#define MOE   "models/llada-moe-tiny-q4km.gguf"
#define RND1  "models/rnd1-tiny-q4km.gguf"

/* A model's GGUF file, vocabulary and chat template. */
struct chat_model {
    struct dllm_gguf *gguf;
    struct dllm_vocab *vocab;
    struct dllm_chat_template *tmpl;
};

static struct chat_model llada, dream, moe, rnd1;

static void open_model(struct chat_model *m, const char *rel)
{
    char *path = fixture_path(rel);
    struct dllm_error err;
    ck_assert_msg(dllm_gguf_open(path, &m->gguf, &err) == DLLM_OK, "%s", err.text);
    ck_assert_msg(dllm_vocab_load(m->gguf, &m->vocab, &err) == DLLM_OK, "%s", err.text);
    ck_assert_msg(dllm_chat_template_load(m->gguf, m->vocab, &m->tmpl, &err) == DLLM_OK, "%s",
                  err.text);
    free(path);
}

static void close_model(struct chat_model *m)
{
    dllm_chat_template_free(m->tmpl);
    dllm_vocab_free(m->vocab);
    dllm_gguf_close(m->gguf);
}

static void setup(void)
{
    open_model(&llada, LLADA);
    open_model(&dream, DREAM);
    open_model(&moe, MOE);
    open_model(&rnd1, RND1);
}

static void teardown(void)
{
    close_model(&llada);
    close_model(&dream);
    close_model(&moe);
    close_model(&rnd1);
}

#define MSG(role, content) ((struct dllm_chat_message){role, content})

/* One conversation and the text its template renders. */
struct render_case {
    const char *name;
    struct chat_model *model;
    struct dllm_chat_message msgs[6];
    size_t n;
    const char *want;
};

static const struct render_case render_cases[] = {
    {"llada single turn",
     &llada,
     {MSG("user", "What is 2+2?")},
     1,
     "<|startoftext|><|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>"
     "<|start_header_id|>assistant<|end_header_id|>\n\n"},
    /* | trim removes Python whitespace at both ends: spaces, newlines, U+3000, U+00A0, U+001C. */
    {"llada trims content",
     &llada,
     {MSG("user", " \n\xe3\x80\x80 a  b\xc2\xa0\x1c\t ")},
     1,
     "<|startoftext|><|start_header_id|>user<|end_header_id|>\n\na  b<|eot_id|>"
     "<|start_header_id|>assistant<|end_header_id|>\n\n"},
    /* BOS before the first message only, whatever its role; roles pass through unchanged. */
    {"llada multi-turn",
     &llada,
     {MSG("system", "Be terse. "), MSG("user", "Hi"), MSG("assistant", " Hello!\n"),
      MSG("user", "Bye")},
     4,
     "<|startoftext|><|start_header_id|>system<|end_header_id|>\n\nBe terse.<|eot_id|>"
     "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
     "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
     "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>"
     "<|start_header_id|>assistant<|end_header_id|>\n\n"},
    {"llada empty content",
     &llada,
     {MSG("user", "")},
     1,
     "<|startoftext|><|start_header_id|>user<|end_header_id|>\n\n<|eot_id|>"
     "<|start_header_id|>assistant<|end_header_id|>\n\n"},
    /* No system message: the template's default one. Content is not trimmed. */
    {"dream single turn",
     &dream,
     {MSG("user", " Hello world ")},
     1,
     "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
     "<|im_start|>user\n Hello world <|im_end|>\n<|im_start|>assistant\n"},
    {"dream own system",
     &dream,
     {MSG("system", "Be brief."), MSG("user", "Hi")},
     2,
     "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
     "<|im_start|>assistant\n"},
    {"dream multi-turn",
     &dream,
     {MSG("user", "Hi"), MSG("assistant", "Hello!"), MSG("user", "How are you?")},
     3,
     "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
     "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n"
     "<|im_start|>user\nHow are you?<|im_end|>\n<|im_start|>assistant\n"},
    /* A later system message is rendered where it stands. */
    {"dream later system",
     &dream,
     {MSG("user", "a"), MSG("system", "b")},
     2,
     "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
     "<|im_start|>user\na<|im_end|>\n<|im_start|>system\nb<|im_end|>\n<|im_start|>assistant\n"},
    /* Consecutive tool results share one user message. */
    {"dream tool results",
     &dream,
     {MSG("user", "q"), MSG("tool", "r1"), MSG("tool", "r2"), MSG("user", "thanks")},
     4,
     "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nq<|im_end|>\n"
     "<|im_start|>user\n<tool_response>\nr1\n</tool_response>\n<tool_response>\nr2\n"
     "</tool_response><|im_end|>\n<|im_start|>user\nthanks<|im_end|>\n<|im_start|>assistant\n"},
    /*
     * LLaDA-MoE's Ling template: thinking_option is 'off'; a first system message goes inside
     * the system header before "detailed thinking off". Checked once against llama.cpp
     * (upstream 3f545becc; d32676d was not at hand) by a program calling
     * llama_chat_apply_template(llama_model_chat_template(model, NULL), msgs, n, true, ...) on
     * the fixture: its bailing2 handler gives "ling single turn" and "ling multi-turn" byte for
     * byte, and for "ling own system" writes "<role>SYSTEM</role>Be brief.<|role_end|>..."
     * without "detailed thinking off", where the Jinja text, which rules here, keeps it. The
     * same program on the rnd1 fixture (llama.cpp's ChatML handler) gives "qwen3 single turn"
     * (with 'What is 2+2?'), "qwen3 own system" and a plain multi-turn history byte for byte.
     */
    {"ling single turn",
     &moe,
     {MSG("user", "What is 2+2?")},
     1,
     "<role>SYSTEM</role>detailed thinking off<|role_end|><role>HUMAN</role>What is 2+2?"
     "<|role_end|><role>ASSISTANT</role>"},
    {"ling own system",
     &moe,
     {MSG("system", "Be brief."), MSG("user", "Hi")},
     2,
     "<role>SYSTEM</role>Be brief.\ndetailed thinking off<|role_end|><role>HUMAN</role>Hi"
     "<|role_end|><role>ASSISTANT</role>"},
    {"ling multi-turn",
     &moe,
     {MSG("user", "Hi"), MSG("assistant", " Hello!\n"), MSG("user", "Bye")},
     3,
     "<role>SYSTEM</role>detailed thinking off<|role_end|><role>HUMAN</role>Hi<|role_end|>"
     "<role>ASSISTANT</role> Hello!\n<|role_end|><role>HUMAN</role>Bye<|role_end|>"
     "<role>ASSISTANT</role>"},
    {"ling later system",
     &moe,
     {MSG("user", "a"), MSG("system", "b")},
     2,
     "<role>SYSTEM</role>detailed thinking off<|role_end|><role>HUMAN</role>a<|role_end|>"
     "<role>SYSTEM</role>b<|role_end|><role>ASSISTANT</role>"},
    /* RND1's Qwen3 template: no default system message, enable_thinking undefined. */
    {"qwen3 single turn",
     &rnd1,
     {MSG("user", " Hello world ")},
     1,
     "<|im_start|>user\n Hello world <|im_end|>\n<|im_start|>assistant\n"},
    {"qwen3 own system",
     &rnd1,
     {MSG("system", "Be brief."), MSG("user", "Hi")},
     2,
     "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
     "<|im_start|>assistant\n"},
    /* Before the last user query an answer keeps only its text after "</think>". */
    {"qwen3 history drops thinking",
     &rnd1,
     {MSG("user", "Hi"), MSG("assistant", "<think>\nhmm\n</think>\n\nHello!"),
      MSG("user", "More?")},
     3,
     "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n"
     "<|im_start|>user\nMore?<|im_end|>\n<|im_start|>assistant\n"},
    /* The last message, after the last query: an (empty) thinking block is written. */
    {"qwen3 last answer",
     &rnd1,
     {MSG("user", "Hi"), MSG("assistant", "Hello!")},
     2,
     "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nHello!"
     "<|im_end|>\n<|im_start|>assistant\n"},
    /*
     * A user message wrapped in <tool_response> is no query, so the answer before it is after
     * the last query and keeps its reasoning.
     */
    {"qwen3 tool response as user",
     &rnd1,
     {MSG("user", "q"), MSG("assistant", "<think>x</think>a"),
      MSG("user", "<tool_response>r</tool_response>")},
     3,
     "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\nx\n</think>\n\na"
     "<|im_end|>\n<|im_start|>user\n<tool_response>r</tool_response><|im_end|>\n"
     "<|im_start|>assistant\n"},
    {"qwen3 tool results",
     &rnd1,
     {MSG("user", "q"), MSG("tool", "r1"), MSG("tool", "r2")},
     3,
     "<|im_start|>user\nq<|im_end|>\n<|im_start|>user\n<tool_response>\nr1\n</tool_response>"
     "\n<tool_response>\nr2\n</tool_response><|im_end|>\n<|im_start|>assistant\n"},
};
#define N_RENDER (int)(sizeof render_cases / sizeof render_cases[0])

START_TEST(render)
{
    const struct render_case *c = &render_cases[_i];
    char *text;
    size_t len;
    struct dllm_error err;
    ck_assert_msg(dllm_chat_render(c->model->tmpl, c->msgs, c->n, &text, &len, &err) == DLLM_OK,
                  "%s: %s", c->name, err.text);
    ck_assert_uint_eq(len, strlen(text));
    ck_assert_msg(strcmp(text, c->want) == 0, "%s:\n got  '%s'\n want '%s'", c->name, text,
                  c->want);
    free(text);
}
END_TEST

START_TEST(formats)
{
    ck_assert_int_eq(dllm_chat_template_format(llada.tmpl), DLLM_CHAT_LLAMA3);
    ck_assert_int_eq(dllm_chat_template_format(dream.tmpl), DLLM_CHAT_CHATML);
    ck_assert_str_eq(dllm_chat_format_name(DLLM_CHAT_LLAMA3), "llama3");
    ck_assert_str_eq(dllm_chat_format_name(DLLM_CHAT_CHATML), "chatml");
    ck_assert_int_eq(dllm_chat_template_format(moe.tmpl), DLLM_CHAT_LING);
    ck_assert_int_eq(dllm_chat_template_format(rnd1.tmpl), DLLM_CHAT_QWEN3);
    ck_assert_str_eq(dllm_chat_format_name(DLLM_CHAT_LING), "ling");
    ck_assert_str_eq(dllm_chat_format_name(DLLM_CHAT_QWEN3), "qwen3");
}
END_TEST

/* A file from the fixtures as a JSON document (flags: jansson's decoding flags). */
static json_t *read_json(const char *rel, size_t flags)
{
    char *path = fixture_path(rel);
    json_error_t jerr;
    json_t *j = json_load_file(path, flags, &jerr);
    ck_assert_msg(j, "%s: %s", rel, jerr.text);
    free(path);
    return j;
}

static void assert_ids(const int32_t *got, int64_t n, const int32_t *want, int64_t n_want)
{
    ck_assert_int_eq(n, n_want);
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(got[i] == want[i], "id %lld is %d, expected %d", (long long)i, got[i],
                      want[i]);
}

/*
 * LLaDA's prompt ids: the special tokens are those llada-hf/tokenizer_config.json gives ids
 * 126080 (BOS), 126346, 126347 and 126348, found in the synthetic vocabulary by their text;
 * the text between them is byte-level BPE with that vocabulary's 8 merges ("er" is one).
 * There is exactly one BOS: the template's.
 */
START_TEST(llada_ids)
{
    /* Its model_max_length is 1e30, beyond jansson's integers. */
    json_t *cfg = read_json("tokenizer/llada-hf/tokenizer_config.json", JSON_DECODE_INT_AS_REAL);
    json_t *added = json_object_get(cfg, "added_tokens_decoder");
    const char *names[4];
    static const char *const keys[] = {"126080", "126346", "126347", "126348"};
    for (int i = 0; i < 4; i++)
        names[i] = json_string_value(json_object_get(json_object_get(added, keys[i]), "content"));
    ck_assert_str_eq(names[0], json_string_value(json_object_get(cfg, "bos_token")));
    const struct dllm_gguf *g = llada.gguf;
    int32_t bos = file_token(g, names[0]), sh = file_token(g, names[1]),
            eh = file_token(g, names[2]), eot = file_token(g, names[3]);
    ck_assert_int_eq(bos, dllm_vocab_special(llada.vocab, DLLM_SPECIAL_BOS));
    ck_assert_int_eq(eot, dllm_vocab_special(llada.vocab, DLLM_SPECIAL_EOT));
    int32_t nl = file_token(g, "Ċ"), er = file_token(g, "er");
#define B(c) file_token(g, c)
    const int32_t want[] = {bos,    sh,     B("u"), B("s"), er,     eh,     nl,     nl,
                            B("H"), B("i"), eot,    sh,     B("a"), B("s"), B("s"), B("i"),
                            B("s"), B("t"), B("a"), B("n"), B("t"), eh,     nl,     nl};
#undef B
    struct dllm_chat_message m = MSG("user", "Hi");
    int32_t *ids;
    int64_t n;
    struct dllm_error err;
    ck_assert_msg(dllm_chat_encode(llada.tmpl, &m, 1, &ids, &n, &err) == DLLM_OK, "%s", err.text);
    assert_ids(ids, n, want, sizeof want / sizeof *want);
    free(ids);
    json_decref(cfg);
}
END_TEST

/*
 * Dream's prompt ids with the real vocabulary: special tokens from dream-hf/added_tokens.json,
 * words from dream-hf/vocab.json (each of these words is one token; "Ġ" is a space, "Ċ" a
 * newline). No BOS.
 */
START_TEST(dream_ids)
{
    json_t *added = read_json("tokenizer/dream-hf/added_tokens.json", 0);
    json_t *vocab = read_json("tokenizer/dream-hf/vocab.json", 0);
    static const char *const pieces[] = {
        "<|im_start|>", "system", "Ċ",          "You", "Ġare",         "Ġa",        "Ġhelpful",
        "Ġassistant",   ".",      "<|im_end|>", "Ċ",   "<|im_start|>", "user",      "Ċ",
        "Hello",        "Ġworld", "<|im_end|>", "Ċ",   "<|im_start|>", "assistant", "Ċ",
    };
    enum { N = sizeof pieces / sizeof *pieces };
    int32_t want[N];
    for (int i = 0; i < N; i++) {
        json_t *id = json_object_get(pieces[i][0] == '<' ? added : vocab, pieces[i]);
        ck_assert_msg(json_is_integer(id), "%s has no id", pieces[i]);
        want[i] = (int32_t)json_integer_value(id);
    }
    struct dllm_chat_message m = MSG("user", "Hello world");
    int32_t *ids;
    int64_t n;
    struct dllm_error err;
    ck_assert_msg(dllm_chat_encode(dream.tmpl, &m, 1, &ids, &n, &err) == DLLM_OK, "%s", err.text);
    assert_ids(ids, n, want, N);
    free(ids);
    json_decref(added);
    json_decref(vocab);
}
END_TEST

/* How many times id occurs in ids[0 .. n-1]. */
static int count_id(const int32_t *ids, int64_t n, int32_t id)
{
    int c = 0;
    for (int64_t i = 0; i < n; i++)
        c += ids[i] == id;
    return c;
}

/* The id of a special token's text in a vocabulary. */
static int32_t special_id(const struct chat_model *m, const char *text)
{
    const int32_t id = dllm_vocab_find(m->vocab, text, strlen(text));
    ck_assert_msg(id >= 0, "%s is not in the vocabulary", text);
    return id;
}

/*
 * The MoE fixtures' prompts: each role tag and end marker is one special token (parsed, not
 * spelt out in bytes), where the rendered text has them, and no BOS is added.
 */
START_TEST(moe_ids)
{
    struct dllm_chat_message m = MSG("user", "Hi");
    int32_t *ids;
    int64_t n;
    struct dllm_error err;
    ck_assert_msg(dllm_chat_encode(moe.tmpl, &m, 1, &ids, &n, &err) == DLLM_OK, "%s", err.text);
    const int32_t role = special_id(&moe, "<role>"), end_role = special_id(&moe, "</role>"),
                  role_end = special_id(&moe, "<|role_end|>");
    ck_assert_int_eq(ids[0], role);
    ck_assert_int_eq(ids[n - 1], end_role);
    ck_assert_int_eq(count_id(ids, n, role), 3);
    ck_assert_int_eq(count_id(ids, n, end_role), 3);
    ck_assert_int_eq(count_id(ids, n, role_end), 2);
    free(ids);
    ck_assert_msg(dllm_chat_encode(rnd1.tmpl, &m, 1, &ids, &n, &err) == DLLM_OK, "%s", err.text);
    const int32_t start = special_id(&rnd1, "<|im_start|>"), end = special_id(&rnd1, "<|im_end|>");
    ck_assert_int_eq(ids[0], start);
    ck_assert_int_eq(count_id(ids, n, start), 2);
    ck_assert_int_eq(count_id(ids, n, end), 1);
    free(ids);
}
END_TEST

/* The template text of a model, from its GGUF file. */
static char *template_of(const struct chat_model *m)
{
    char *src;
    ck_assert(dllm_gguf_get_str(m->gguf, "tokenizer.chat_template", &src, NULL) == DLLM_OK);
    return src;
}

static enum dllm_status try_template(const char *src, const struct dllm_vocab *v,
                                     struct dllm_error *err)
{
    struct dllm_chat_template *t = (struct dllm_chat_template *)1;
    enum dllm_status st = dllm_chat_template_new(src, strlen(src), v, &t, err);
    if (st == DLLM_OK)
        dllm_chat_template_free(t);
    else
        ck_assert_ptr_null(t);
    return st;
}

/* Llama-3-Instruct's form, which only adds an add_generation_prompt condition, is LLAMA3. */
START_TEST(llama3_variant)
{
    char *src = template_of(&llada);
    static const char last[] = "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}";
    size_t head = strlen(src) - strlen(last);
    ck_assert_str_eq(src + head, last);
    char variant[4096];
    snprintf(variant, sizeof variant, "%.*s{%% if add_generation_prompt %%}%s{%% endif %%}",
             (int)head, src, last);
    struct dllm_chat_template *t;
    ck_assert(dllm_chat_template_new(variant, strlen(variant), llada.vocab, &t, NULL) == DLLM_OK);
    ck_assert_int_eq(dllm_chat_template_format(t), DLLM_CHAT_LLAMA3);
    dllm_chat_template_free(t);
    /* One more output statement is a different template. */
    snprintf(variant, sizeof variant, "%s{{ 'extra' }}", src);
    ck_assert_int_eq(try_template(variant, llada.vocab, NULL), DLLM_ERR_UNSUPPORTED);
    free(src);
}
END_TEST

START_TEST(errors)
{
    struct dllm_error err;
    ck_assert_int_eq(try_template("{{ messages }}", dream.vocab, &err), DLLM_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err.text, "unrecognised chat template"));

    /* The right template with a vocabulary that lacks its tokens. */
    char *path = fixture_path(GPT2);
    struct dllm_gguf *g;
    struct dllm_vocab *v;
    ck_assert(dllm_gguf_open(path, &g, NULL) == DLLM_OK);
    ck_assert(dllm_vocab_load(g, &v, NULL) == DLLM_OK);
    char *src = template_of(&dream);
    ck_assert_int_eq(try_template(src, v, &err), DLLM_ERR_FORMAT);
    ck_assert_str_eq(err.text, "the chat template uses <|im_start|>, which is not a token of "
                               "the vocabulary");
    free(src);
    /* The GPT-2 file has no template at all. */
    struct dllm_chat_template *t = (struct dllm_chat_template *)1;
    ck_assert_int_eq(dllm_chat_template_load(g, v, &t, &err), DLLM_ERR_MISSING);
    ck_assert_ptr_null(t);
    ck_assert_ptr_nonnull(strstr(err.text, "tokenizer.chat_template"));
    dllm_vocab_free(v);
    dllm_gguf_close(g);
    free(path);

    char *text = (char *)1;
    size_t len;
    ck_assert_int_eq(dllm_chat_render(dream.tmpl, NULL, 0, &text, &len, &err), DLLM_ERR_ARG);
    ck_assert_ptr_null(text);
    struct dllm_chat_message bad_role[] = {MSG("user", "a"), MSG("critic", "b")};
    ck_assert_int_eq(dllm_chat_render(dream.tmpl, bad_role, 2, &text, &len, &err), DLLM_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.text, "'critic'"));
    ck_assert_int_eq(dllm_chat_render(rnd1.tmpl, bad_role, 2, &text, &len, &err), DLLM_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.text, "'critic', which the Qwen3 template drops"));
    struct dllm_chat_message tool[] = {MSG("user", "a"), MSG("tool", "b")};
    ck_assert_int_eq(dllm_chat_render(moe.tmpl, tool, 2, &text, &len, &err), DLLM_ERR_ARG);
    ck_assert_str_eq(err.text, "message 1 has role 'tool', which the Ling template drops (roles: "
                               "system, user, assistant)");
    struct dllm_chat_message no_content[] = {MSG("user", NULL)};
    ck_assert_int_eq(dllm_chat_render(llada.tmpl, no_content, 1, &text, &len, &err), DLLM_ERR_ARG);
    int32_t *ids = (int32_t *)1;
    int64_t n = 7;
    ck_assert_int_eq(dllm_chat_encode(dream.tmpl, bad_role, 2, &ids, &n, &err), DLLM_ERR_ARG);
    ck_assert_ptr_null(ids);
    ck_assert_int_eq(n, 0);
}
END_TEST

/* Python's str.strip(): the whitespace set of str.isspace(), and nothing else. */
static const struct {
    const char *in, *out;
} trims[] = {
    {"", ""},
    {"   ", ""},
    {"\t\n\v\f\r x \x1c\x1d\x1e\x1f", "x"},
    {"\xc2\x85\xc2\xa0x\xe1\x9a\x80", "x"},                     /* U+0085, U+00A0, U+1680 */
    {"\xe2\x80\x80\xe2\x80\x8ax\xe2\x80\xa8\xe2\x80\xa9", "x"}, /* U+2000, 200A, 2028, 2029 */
    {"\xe2\x80\xafx\xe2\x81\x9f\xe3\x80\x80", "x"},             /* U+202F, U+205F, U+3000 */
    {"\xe2\x80\x8bx\xe2\x80\x8b", "\xe2\x80\x8bx\xe2\x80\x8b"}, /* U+200B is not whitespace */
    {"\xe1\xa0\x8ex", "\xe1\xa0\x8ex"},                         /* nor is U+180E */
    {" a b ", "a b"},
    {"\xff \x80", "\xff \x80"}, /* bytes that are not UTF-8 stay */
};

START_TEST(trim)
{
    size_t start, len = dllm_chat_trim(trims[_i].in, strlen(trims[_i].in), &start);
    ck_assert_uint_eq(len, strlen(trims[_i].out));
    ck_assert(memcmp(trims[_i].in + start, trims[_i].out, len) == 0);
}
END_TEST

static Suite *chat_suite(void)
{
    Suite *s = suite_create("chat");
    TCase *tc = tcase_create("render");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, render, 0, N_RENDER);
    tcase_add_test(tc, formats);
    tcase_add_test(tc, llama3_variant);
    suite_add_tcase(s, tc);

    tc = tcase_create("ids");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_add_test(tc, llada_ids);
    tcase_add_test(tc, dream_ids);
    tcase_add_test(tc, moe_ids);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_add_test(tc, errors);
    suite_add_tcase(s, tc);

    tc = tcase_create("trim");
    tcase_add_loop_test(tc, trim, 0, (int)(sizeof trims / sizeof trims[0]));
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    fixtures_dir();
    return test_run_suite(chat_suite());
}
