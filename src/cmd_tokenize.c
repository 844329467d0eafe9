/* dllm tokenize: the token ids a prompt becomes (chat-formatted or raw), and back. */
#include "config.h"

#include "cli.h"
#include "commands.h"
#include "dllm.h"
#include "model_ref.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char cmd_tokenize_usage[] =
    "usage: dllm tokenize -m MODEL -p TEXT [--no-chat [--parse-special]] [--system TEXT]\n"
    "                     [--json] [--offline]\n"
    "       dllm tokenize -m MODEL --detokenize IDS [--json] [--offline]\n"
    "\n"
    "Prints the token ids that generation feeds the model for the prompt TEXT, on one line\n"
    "separated by spaces. By default the prompt is the user message of a conversation\n"
    "rendered with the model's chat template (tokenizer.chat_template: LLaDA's Llama-3 style\n"
    "or Dream's ChatML), whose special tokens become single ids.\n"
    "\n"
    "options:\n"
    "  -m, --model MODEL   a GGUF file with a tokenizer (a model or a vocabulary-only file),\n"
    "                      or a hub model org/repo[:QUANT|:FILE.gguf], downloaded if needed\n"
    "  --offline           hub models from the cache only, no network (also HF_HUB_OFFLINE=1)\n"
    "  -p, --prompt TEXT   the text to tokenize ('-': standard input)\n"
    "  -s, --system TEXT   a system message before the prompt (chat only)\n"
    "  --no-chat           tokenize TEXT as it is: BOS is added only when the model's\n"
    "                      tokenizer.ggml.add_bos_token says so, and special-token text is\n"
    "                      ordinary text\n"
    "  --parse-special     with --no-chat: special-token text such as <|im_end|> becomes\n"
    "                      that token\n"
    "  --detokenize IDS    print the text of the ids (separated by commas or spaces),\n"
    "                      special tokens included\n"
    "  --json              print [{\"id\", \"piece\", \"bytes\"}] instead: piece is the token's\n"
    "                      text (U+FFFD where it splits a UTF-8 character), bytes its exact\n"
    "                      bytes in hex\n"
    "  -h, --help          this help\n";

/* Parses a list of ids separated by commas and white space, or a usage error. */
static int32_t *parse_ids(const struct cli_command *cmd, const char *text, int64_t *n)
{
    size_t cap = strlen(text) / 2 + 1, count = 0;
    int32_t *ids = malloc(cap * sizeof *ids);
    char *copy = strdup(text);
    if (!ids || !copy)
        cli_fail("out of memory");
    for (char *save, *tok = strtok_r(copy, ", \t\n", &save); tok;
         tok = strtok_r(NULL, ", \t\n", &save))
        ids[count++] = (int32_t)cli_parse_int(cmd, "--detokenize", tok, 0, INT32_MAX);
    free(copy);
    if (count == 0)
        cli_usage_error(cmd, "--detokenize needs at least one token id");
    *n = (int64_t)count;
    return ids;
}

/* The bytes as a JSON string, with U+FFFD for each byte that is not part of a character. */
static json_t *json_piece(const char *s, size_t n)
{
    char *out = malloc(3 * n + 1);
    if (!out)
        cli_fail("out of memory");
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t k = dllm_utf8_char_len(s + i, n - i);
        if (k == 0) {
            memcpy(out + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        } else {
            memcpy(out + o, s + i, k);
            o += k;
            i += k;
        }
    }
    json_t *j = json_stringn(out, o);
    free(out);
    return j;
}

static void print_json(const struct dllm_vocab *vocab, const int32_t *ids, int64_t n)
{
    json_t *doc = json_array();
    for (int64_t i = 0; i < n; i++) {
        size_t len;
        const char *bytes = dllm_vocab_token_bytes(vocab, ids[i], &len);
        char *hex = malloc(2 * len + 1);
        if (!hex)
            cli_fail("out of memory");
        for (size_t k = 0; k < len; k++)
            snprintf(hex + 2 * k, 3, "%02x", (unsigned char)bytes[k]);
        hex[2 * len] = 0;
        json_array_append_new(doc, json_pack("{s:i, s:o, s:s}", "id", (json_int_t)ids[i], "piece",
                                             json_piece(bytes, len), "bytes", hex));
        free(hex);
    }
    errno = 0;
    if (json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0)
        cli_fail("cannot write the JSON document: %s", errno ? strerror(errno) : "write error");
    putchar('\n');
    json_decref(doc);
}

int cmd_tokenize(const struct cli_command *cmd, int argc, char **argv)
{
    enum { OPT_NO_CHAT = 256, OPT_PARSE_SPECIAL, OPT_JSON, OPT_DETOKENIZE, OPT_OFFLINE };
    static const struct option opts[] = {
        {"model", required_argument, NULL, 'm'},
        {"prompt", required_argument, NULL, 'p'},
        {"system", required_argument, NULL, 's'},
        {"no-chat", no_argument, NULL, OPT_NO_CHAT},
        {"parse-special", no_argument, NULL, OPT_PARSE_SPECIAL},
        {"json", no_argument, NULL, OPT_JSON},
        {"detokenize", required_argument, NULL, OPT_DETOKENIZE},
        {"offline", no_argument, NULL, OPT_OFFLINE},
        {0},
    };
    const char *path = NULL, *prompt = NULL, *system = NULL, *detok = NULL;
    bool no_chat = false, parse_special = false, json = false, offline = false;
    int c;
    while ((c = cli_getopt(cmd, argc, argv, "m:p:s:", opts)) != -1) {
        switch (c) {
        case 'm': path = optarg; break;
        case 'p': prompt = optarg; break;
        case 's': system = optarg; break;
        case OPT_NO_CHAT: no_chat = true; break;
        case OPT_PARSE_SPECIAL: parse_special = true; break;
        case OPT_JSON: json = true; break;
        case OPT_DETOKENIZE: detok = optarg; break;
        case OPT_OFFLINE: offline = true; break;
        }
    }
    if (optind != argc)
        cli_usage_error(cmd, "unexpected argument '%s'%s", argv[optind],
                        prompt || detok ? "" : ": a prompt goes after -p, as in -p 'TEXT'");
    if (!path)
        cli_usage_error(cmd, "--model MODEL is missing");
    if (!prompt == !detok)
        cli_usage_error(cmd, "give either --prompt TEXT or --detokenize IDS");
    if (detok && (no_chat || parse_special || system))
        cli_usage_error(cmd, "--detokenize takes no --no-chat, --parse-special or --system");
    if (parse_special && !no_chat)
        cli_usage_error(cmd, "--parse-special applies to --no-chat (chat prompts always parse "
                             "special tokens)");
    if (system && no_chat)
        cli_usage_error(cmd, "--system applies to chat prompts, not --no-chat");
    int64_t n = 0;
    int32_t *ids = detok ? parse_ids(cmd, detok, &n) : NULL;

    char *from_stdin = prompt && strcmp(prompt, "-") == 0 ? cli_read_stdin() : NULL;
    if (from_stdin && !*from_stdin)
        cli_usage_error(cmd, "the prompt on standard input is empty");
    if (from_stdin)
        prompt = from_stdin;
    char *file = model_ref_path(path, offline);
    struct dllm_error err;
    struct dllm_gguf *gguf;
    struct dllm_vocab *vocab;
    enum dllm_status st = dllm_gguf_open(file, &gguf, &err);
    if (st == DLLM_OK)
        st = dllm_vocab_load(gguf, &vocab, &err);
    if (st != DLLM_OK)
        cli_fail("%s: %s%s", path, err.text, model_ref_fix(st));
    if (prompt && no_chat) {
        unsigned flags = DLLM_ENCODE_ADD_SPECIAL | (parse_special ? DLLM_ENCODE_PARSE_SPECIAL : 0);
        if (dllm_vocab_encode(vocab, prompt, strlen(prompt), flags, &ids, &n, &err) != DLLM_OK)
            cli_fail("%s", err.text);
    } else if (prompt) {
        struct dllm_chat_template *tmpl;
        if (dllm_chat_template_load(gguf, vocab, &tmpl, &err) != DLLM_OK)
            cli_fail("%s: %s; use --no-chat to tokenize the prompt as raw text", path, err.text);
        struct dllm_chat_message msgs[2];
        size_t n_msgs = 0;
        if (system)
            msgs[n_msgs++] = (struct dllm_chat_message){"system", system};
        msgs[n_msgs++] = (struct dllm_chat_message){"user", prompt};
        if (dllm_chat_encode(tmpl, msgs, n_msgs, &ids, &n, &err) != DLLM_OK)
            cli_fail("%s", err.text);
        dllm_chat_template_free(tmpl);
    }

    if (json) {
        for (int64_t i = 0; i < n; i++)
            if (!dllm_vocab_token_bytes(vocab, ids[i], NULL))
                cli_fail("token id %d is outside the vocabulary of %d tokens", ids[i],
                         dllm_vocab_size(vocab));
        print_json(vocab, ids, n);
    } else if (detok) {
        char *text;
        size_t len;
        if (dllm_vocab_decode(vocab, ids, n, DLLM_DECODE_SPECIAL, &text, &len, &err) != DLLM_OK)
            cli_fail("%s", err.text);
        fwrite(text, 1, len, stdout);
        putchar('\n');
        free(text);
    } else {
        for (int64_t i = 0; i < n; i++)
            printf(i ? " %d" : "%d", ids[i]);
        putchar('\n');
    }
    free(ids);
    dllm_vocab_free(vocab);
    dllm_gguf_close(gguf);
    free(file);
    free(from_stdin);
    return CLI_EXIT_OK;
}
