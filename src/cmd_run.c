/*
 * dllm run (and dllm-tui --batch): one generation for scripts. The answer goes to stdout,
 * everything else to stderr; --json and --trace give machine-readable records.
 */
#include "config.h"

#include "commands.h"
#include "gen_options.h"
#include "jsonl.h"
#include "model_ref.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char cmd_run_usage[] =
    "usage: dllm run [-m MODEL] -p TEXT [options]\n"
    "       dllm-tui --batch -m MODEL -p TEXT [options]\n"
    "\n"
    "Generates one answer and prints it on stdout; status goes to stderr, with a progress\n"
    "line (step s of N) when stderr is a terminal. Ctrl+C stops inside the running step,\n"
    "prints the partial answer and exits 130. Without -m, the default model\n"
    "(" DLLM_HUB_DEFAULT_MODEL "), downloaded on first use.\n"
    "\n"
    "options:\n" GEN_OPTIONS_HELP
    "  --json               print one JSON document instead of the text\n"
    "  --trace FILE         write one JSON line per step: what was committed and why\n"
    "  --cache-check        with --cache: also run the exact pass at each cached step and\n"
    "                       report how far the cached logits are (--json cache_checks,\n"
    "                       --trace check); the answer is the cached run's\n"
    "  --show-canvas        show each step: the canvas redrawn when stdout is a terminal,\n"
    "                       else one JSON line per step (its commits) before the answer\n"
    "  --verbose            print the model, settings, sizes and every step's time\n"
    "  -h, --help           this help\n";

/* What the event callback needs and collects. */
struct run_state {
    struct dllm_session *session;
    FILE *trace;
    int trace_errno; /* the first failed write to trace, 0 for none */
    bool progress, verbose;
    bool show_canvas, show_tty; /* --show-canvas, on a terminal (else JSON lines) */
    int32_t mask_id;
    double *step_ms;
    int64_t n_step_ms, cap_step_ms;
    json_t *computed;      /* positions each step's passes computed */
    json_t *refresh_steps; /* the steps that refreshed the K/V cache */
    json_t *checks;        /* --cache-check: each checked step's figures */
    int64_t cache_bytes;
    enum dllm_cache_type cache_type;
    int64_t n_prompt, canvas_len, n_steps;
    double start_ms; /* cli_now_ms() when the generation started */
    char *text;
    json_t *gaps; /* byte offsets in text (as printed) where a cancelled run left masks */
    json_t *tokens;
    int64_t steps_run;
    bool stopped_early, cancelled, failed;
    double total_ms;
    char error[DLLM_ERROR_TEXT_MAX];
};

/* Set by SIGINT: the weights' preparation and the generation stop at their next check. */
static atomic_bool interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    atomic_store(&interrupted, true);
}

/* The text as a JSON string, each byte that is not part of a UTF-8 character as U+FFFD. */
static json_t *json_text(const char *text)
{
    size_t n = strlen(text), o = 0;
    char *buf = malloc(3 * n + 1);
    if (!buf)
        cli_fail("out of memory");
    for (size_t i = 0; i < n;) {
        size_t k = dllm_utf8_char_len(text + i, n - i);
        if (k) {
            memcpy(buf + o, text + i, k);
            o += k;
            i += k;
        } else {
            memcpy(buf + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        }
    }
    json_t *j = json_stringn(buf, o);
    free(buf);
    return j;
}

/*
 * The bytes of json_text(text) that the first `bytes` bytes of text become (each byte outside
 * a UTF-8 character a 3-byte U+FFFD), so that an offset points into the string as printed.
 */
static json_int_t json_text_offset(const char *text, size_t bytes)
{
    size_t n = strlen(text), out = 0;
    for (size_t i = 0; i < bytes && i < n;) {
        size_t k = dllm_utf8_char_len(text + i, n - i);
        out += k ? k : 3;
        i += k ? k : 1;
    }
    return (json_int_t)out;
}

/* A checked step's figures (--cache-check): the cached rows against the exact pass's. */
static json_t *check_json(const struct dllm_event *ev)
{
    return json_pack("{s:I, s:f, s:f, s:I, s:I, s:f}", "step", (json_int_t)ev->step, "cos_min",
                     ev->check_cos_min, "rel_max", ev->check_rel_max, "argmax_same",
                     (json_int_t)ev->check_argmax_same, "rows", (json_int_t)ev->check_rows,
                     "exact_ms", ev->check_ms);
}

/*
 * One JSON line of the trace for a step, elapsed_ms after the generation started; the errno
 * value of a failed write, or 0.
 */
static int write_trace(FILE *f, const struct dllm_event *ev, double elapsed_ms)
{
    json_t *committed = json_array();
    for (int64_t i = 0; i < ev->n_committed; i++)
        json_array_append_new(committed,
                              json_pack("{s:I, s:I, s:f}", "pos", (json_int_t)ev->committed[i].pos,
                                        "token", (json_int_t)ev->committed[i].token, "conf",
                                        ev->committed[i].conf));
    json_t *line =
        json_pack("{s:I, s:I, s:o, s:o, s:I, s:f, s:f, s:I, s:I, s:f}", "step",
                  (json_int_t)ev->step, "block", (json_int_t)ev->block, "committed", committed,
                  "best_left_conf", ev->has_best_left ? json_real(ev->best_left_conf) : json_null(),
                  "masks_left", (json_int_t)ev->masks_left, "forward_ms", ev->forward_ms,
                  "sample_ms", ev->sample_ms, "refreshes", (json_int_t)ev->refreshes, "computed",
                  (json_int_t)ev->computed, "elapsed_ms", elapsed_ms);
    if (ev->checked)
        json_object_set_new(line, "check", check_json(ev));
    json_dumpf(line, f, JSON_COMPACT | JSON_PRESERVE_ORDER);
    fputc('\n', f);
    errno = 0;
    const int failed = fflush(f) != 0; /* each line as its step ends: tail -f follows the run */
    json_decref(line);
    return failed ? (errno ? errno : EIO) : 0;
}

/* The bytes of ids[0 .. n-1] decoded, appended to *buf (malloc'd); false when out of memory. */
static bool append_decoded(const struct dllm_vocab *vocab, const int32_t *ids, int64_t n,
                           char **buf, size_t *len)
{
    char *text = NULL;
    size_t k = 0;
    if (dllm_vocab_decode(vocab, ids, n, 0, &text, &k, NULL) != DLLM_OK)
        return false;
    char *grown = realloc(*buf, *len + k + 1);
    if (grown) {
        memcpy(grown + *len, text, k);
        *len += k;
        grown[*len] = '\0';
        *buf = grown;
    }
    free(text);
    return grown != NULL;
}

/*
 * --show-canvas on a terminal: the screen cleared and the step's canvas drawn, each run of
 * committed tokens decoded and each masked position as a light shade.
 */
static void show_canvas(const struct run_state *st, const struct dllm_event *ev)
{
    const struct dllm_vocab *vocab = dllm_session_vocab(st->session);
    char *text = NULL;
    size_t len = 0;
    for (int64_t i = ev->n_prompt; i < ev->canvas_len;) {
        const bool mask = ev->canvas[i] == st->mask_id;
        int64_t j = i;
        while (j < ev->canvas_len && (ev->canvas[j] == st->mask_id) == mask)
            j++;
        for (int64_t k = i; mask && k < j; k++) {
            char *grown = realloc(text, len + 4);
            if (!grown)
                break;
            text = grown;
            memcpy(text + len, "\xe2\x96\x91", 4);
            len += 3;
        }
        if (!mask && !append_decoded(vocab, ev->canvas + i, j - i, &text, &len))
            break;
        i = j;
    }
    printf("\033[H\033[2Jstep %lld of %lld, %lld masks left\n\n%s\n", (long long)ev->step + 1,
           (long long)(st->n_steps ? st->n_steps : ev->step + 1), (long long)ev->masks_left,
           text ? text : "");
    fflush(stdout);
    free(text);
}

/* --show-canvas on a pipe: one JSON line of the step's commits, each with its token's text. */
static void show_commits(const struct run_state *st, const struct dllm_event *ev)
{
    const struct dllm_vocab *vocab = dllm_session_vocab(st->session);
    json_t *committed = json_array();
    for (int64_t i = 0; i < ev->n_committed; i++) {
        char *piece = NULL;
        size_t len = 0;
        append_decoded(vocab, &ev->committed[i].token, 1, &piece, &len);
        json_array_append_new(committed,
                              json_pack("{s:I, s:I, s:o}", "pos", (json_int_t)ev->committed[i].pos,
                                        "token", (json_int_t)ev->committed[i].token, "text",
                                        json_text(piece ? piece : "")));
        free(piece);
    }
    json_t *line = json_pack("{s:I, s:I, s:o}", "step", (json_int_t)ev->step, "masks_left",
                             (json_int_t)ev->masks_left, "committed", committed);
    json_dumpf(line, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
    putchar('\n');
    fflush(stdout);
    json_decref(line);
}

static void on_event(const struct dllm_event *ev, void *user)
{
    struct run_state *st = user;
    switch (ev->kind) {
    case DLLM_EVENT_START:
        st->start_ms = cli_now_ms();
        st->n_prompt = ev->n_prompt;
        st->canvas_len = ev->canvas_len;
        st->n_steps = ev->n_steps;
        st->cache_bytes = ev->cache_bytes;
        if (st->verbose)
            fprintf(stderr, "prompt %lld tokens, canvas %lld, %lld steps%s\n",
                    (long long)ev->n_prompt, (long long)ev->canvas_len, (long long)ev->n_steps,
                    ev->n_steps ? "" : " (threshold: blocks run until full)");
        if (st->verbose && ev->cache_bytes)
            fprintf(stderr, "K/V cache: %.1f MB (%s)\n", (double)ev->cache_bytes / 1e6,
                    dllm_cache_type_name(st->cache_type));
        break;
    case DLLM_EVENT_NOTICE: fprintf(stderr, "dllm: %s\n", ev->message); break;
    case DLLM_EVENT_STEP: {
        double ms = ev->forward_ms + ev->sample_ms;
        if (st->n_step_ms == st->cap_step_ms) {
            st->cap_step_ms = st->cap_step_ms ? 2 * st->cap_step_ms : 256;
            double *p = realloc(st->step_ms, (size_t)st->cap_step_ms * sizeof *p);
            if (!p)
                break;
            st->step_ms = p;
        }
        st->step_ms[st->n_step_ms++] = ms;
        json_array_append_new(st->computed, json_integer(ev->computed));
        if (ev->checked)
            json_array_append_new(st->checks, check_json(ev));
        if (ev->refreshes)
            json_array_append_new(st->refresh_steps, json_integer(ev->step));
        if (st->trace && !st->trace_errno)
            st->trace_errno = write_trace(st->trace, ev, cli_now_ms() - st->start_ms);
        if (st->show_canvas && st->show_tty)
            show_canvas(st, ev);
        else if (st->show_canvas)
            show_commits(st, ev);
        if (st->verbose && ev->n_committed == 0 && ev->computed == 0)
            fprintf(stderr, "step %lld: quota 0, no pass, %lld masks left\n", (long long)ev->step,
                    (long long)ev->masks_left);
        else if (st->verbose)
            fprintf(stderr,
                    "step %lld: %lld committed, %lld masks left, %.1f ms forward, %.2f ms "
                    "sampling\n",
                    (long long)ev->step, (long long)ev->n_committed, (long long)ev->masks_left,
                    ev->forward_ms, ev->sample_ms);
        else if (st->progress)
            fprintf(stderr, "\rstep %lld of %lld, %lld masks left ", (long long)ev->step + 1,
                    (long long)(st->n_steps ? st->n_steps : ev->step + 1),
                    (long long)ev->masks_left);
        break;
    }
    case DLLM_EVENT_DONE:
        st->text = strdup(ev->text);
        st->gaps = json_array();
        for (int64_t i = 0; i < ev->n_gaps; i++)
            json_array_append_new(st->gaps, json_integer(json_text_offset(ev->text, ev->gaps[i])));
        st->tokens = json_array();
        for (int64_t i = 0; i < ev->n_tokens; i++)
            json_array_append_new(st->tokens, json_integer(ev->tokens[i]));
        st->steps_run = ev->steps_run;
        st->stopped_early = ev->stopped_early;
        st->cancelled = ev->cancelled;
        st->total_ms = ev->total_ms;
        break;
    case DLLM_EVENT_ERROR:
        st->failed = true;
        snprintf(st->error, sizeof st->error, "%s", ev->message);
        break;
    }
}

/*
 * The tokens the prompt takes on the canvas: the messages through the model's chat template,
 * or the raw prompt with --no-chat. A model without a usable template fails here, before the
 * weights are prepared.
 */
static int64_t prompt_tokens(const struct dllm_model *model, bool no_chat,
                             const struct dllm_chat_message *msgs, size_t n_msgs)
{
    struct dllm_error err;
    struct dllm_vocab *vocab;
    enum dllm_status st = dllm_vocab_load(dllm_model_gguf(model), &vocab, &err);
    if (st)
        cli_fail("%s%s", err.text, model_ref_fix(st));
    int32_t *ids = NULL;
    int64_t n = 0;
    if (no_chat) {
        const char *text = msgs[n_msgs - 1].content;
        st = dllm_vocab_encode(vocab, text, strlen(text), DLLM_ENCODE_ADD_SPECIAL, &ids, &n, &err);
    } else {
        struct dllm_chat_template *tmpl;
        if (dllm_chat_template_load(dllm_model_gguf(model), vocab, &tmpl, &err))
            cli_fail("%s; --no-chat feeds the prompt as raw text", err.text);
        st = dllm_chat_encode(tmpl, msgs, n_msgs, &ids, &n, &err);
        dllm_chat_template_free(tmpl);
    }
    dllm_vocab_free(vocab);
    free(ids);
    if (st)
        cli_fail("%s", err.text);
    return n;
}

/*
 * The settings of a run: the sampler's as dllm-tui's conversation files write them (so /load
 * reads them back), with the threads and whether the chat template was applied.
 */
static json_t *settings_json(const struct dllm_sampler_params *p, int threads, bool chat)
{
    json_t *s = ui_jsonl_settings(p);
    json_object_set_new(s, "threads", json_integer(threads));
    json_object_set_new(s, "chat", json_boolean(chat));
    return s;
}

static void print_json(const struct run_state *st, const struct dllm_sampler_params *p, int threads,
                       bool chat, double load_ms, const char *model_path)
{
    json_t *ms = json_array();
    for (int64_t i = 0; i < st->n_step_ms; i++)
        json_array_append_new(ms, json_real(st->step_ms[i]));
    json_t *settings = settings_json(p, threads, chat);
    json_t *doc =
        json_pack("{s:o, s:O, s:I, s:b, s:b, s:o, s:f, s:f, s:f, s:O, s:o}", "text",
                  json_text(st->text), "tokens", st->tokens, "steps", (json_int_t)st->steps_run,
                  "stopped_early", st->stopped_early, "cancelled", st->cancelled, "step_ms", ms,
                  "load_ms", load_ms, "total_ms", st->total_ms, "peak_rss_mb", cli_peak_rss_mb(),
                  "seed", json_object_get(settings, "seed"), "settings", settings);
    /* The model, the prompt's size and the speed, as a reader of one record needs them. */
    json_object_set_new(doc, "model", json_text(model_path));
    json_object_set_new(doc, "prompt_tokens", json_integer(st->n_prompt));
    json_object_set(doc, "gaps", st->gaps);
    json_object_set_new(doc, "tokens_per_s",
                        json_real(st->total_ms > 0
                                      ? (double)json_array_size(st->tokens) / (st->total_ms / 1000)
                                      : 0.0));
    json_object_set(doc, "step_computed", st->computed);
    json_object_set(doc, "refresh_steps", st->refresh_steps);
    json_object_set_new(doc, "cache_bytes", json_integer(st->cache_bytes));
    if (json_array_size(st->checks))
        json_object_set(doc, "cache_checks", st->checks);
    json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    putchar('\n');
    json_decref(doc);
}

enum { OPT_JSON = 512, OPT_TRACE, OPT_VERBOSE, OPT_CACHE_CHECK, OPT_SHOW_CANVAS };

const struct option cmd_run_options[] = {{"json", no_argument, NULL, OPT_JSON},
                                         {"trace", required_argument, NULL, OPT_TRACE},
                                         {"verbose", no_argument, NULL, OPT_VERBOSE},
                                         {"cache-check", no_argument, NULL, OPT_CACHE_CHECK},
                                         {"show-canvas", no_argument, NULL, OPT_SHOW_CANVAS},
                                         {0}};

int cmd_run(const struct cli_command *cmd, int argc, char **argv)
{
    struct option opts[64];
    size_t n = 0;
    for (size_t i = 0; gen_long_options[i].name; i++)
        opts[n++] = gen_long_options[i];
    for (size_t i = 0; cmd_run_options[i].name; i++)
        opts[n++] = cmd_run_options[i];
    opts[n] = (struct option){0};
    struct gen_options o = {.threads = (int)sysconf(_SC_NPROCESSORS_ONLN)};
    bool json = false, verbose = false, cache_check = false, show = false;
    const char *trace_path = NULL;
    int c;
    while ((c = cli_getopt(cmd, argc, argv, "m:p:t:", opts)) != -1) {
        if (gen_options_handle(cmd, &o, c, optarg))
            continue;
        if (c == OPT_JSON)
            json = true;
        else if (c == OPT_TRACE)
            trace_path = optarg;
        else if (c == OPT_VERBOSE)
            verbose = true;
        else if (c == OPT_CACHE_CHECK)
            cache_check = true;
        else if (c == OPT_SHOW_CANVAS)
            show = true;
    }
    if (optind != argc)
        cli_usage_error(cmd, "unexpected argument '%s'%s", argv[optind],
                        o.prompt ? "" : ": a prompt goes after -p, as in -p 'TEXT'");
    if (!o.prompt)
        cli_usage_error(cmd, "-p/--prompt is missing (use -p - to read standard input)");
    if (cache_check && (!o.has_cache || o.set.cache == DLLM_CACHE_NONE))
        cli_usage_error(cmd, "--cache-check needs --cache prefix or dual");

    char *prompt = strcmp(o.prompt, "-") == 0 ? cli_read_stdin() : strdup(o.prompt);
    if (!prompt)
        cli_fail("out of memory");
    if (strcmp(o.prompt, "-") == 0 && !*prompt)
        cli_usage_error(cmd, "the prompt on standard input is empty");
    char *path = model_ref_path(o.model, o.offline);
    double t0 = cli_now_ms();
    struct dllm_error err;
    struct dllm_model *model = model_ref_open(path, verbose);
    double load_ms = cli_now_ms() - t0;
    struct dllm_chat_message msgs[2];
    size_t n_msgs = 0;
    if (o.system)
        msgs[n_msgs++] = (struct dllm_chat_message){"system", o.system};
    msgs[n_msgs++] = (struct dllm_chat_message){"user", prompt};
    const int64_t n_prompt = prompt_tokens(model, o.no_chat, msgs, n_msgs);
    struct dllm_sampler_params sp;
    gen_options_sampler(cmd, &o, model, n_prompt, verbose, &sp);
    struct dllm_session *session;
    struct dllm_session_params session_params;
    dllm_session_params_init(&session_params);
    session_params.threads = o.threads;
    session_params.kernels = cli_kernels();
    /* The context is sized for this request: its canvas, and a block's rows a pass. */
    session_params.max_canvas = n_prompt + sp.gen_length < 2 ? 2 : n_prompt + sp.gen_length;
    session_params.max_rows = sp.block_length ? sp.block_length : sp.gen_length;
    char device[300];
    struct dllm_forward_params fp;
    dllm_forward_params_init(&fp);
    fp.max_tokens = session_params.max_canvas;
    fp.max_rows = session_params.max_rows;
    device_choose(cmd, &o.device, model, fp.max_tokens, fp.max_rows,
                  dllm_request_cache_bytes(model, fp.max_tokens, &sp), &fp, device, sizeof device);
    session_params.backend = fp.backend;
    session_params.device = fp.device;
    session_params.gpu_resident = fp.gpu_resident;
    session_params.progress = model_ref_progress;
    session_params.progress_user = model_ref_progress_user(verbose);
    session_params.cancel = &interrupted;
    struct sigaction sa = {.sa_handler = on_sigint};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    if (dllm_session_new(model, &session_params, &session, &err))
        cli_fail("%s%s", err.text, session_params.backend ? ": use --device cpu" : "");
    if (verbose) {
        const struct dllm_sampler_params *p = &sp;
        const struct dllm_model_experts x = dllm_model_experts(model);
        char experts[96] = "";
        if (x.n_expert)
            snprintf(experts, sizeof experts, ", experts %lld, used %lld, expert ffn %lld",
                     (long long)x.n_expert, (long long)x.n_used, (long long)x.ff);
        fprintf(stderr,
                "model %s: %s, %lld layers, d_model %lld, vocab %lld%s; %s sampler, logit "
                "shift %s; device %s, %d threads; loaded in %.0f ms\n"
                "settings: max-tokens %lld, steps %lld, block-length %lld, temperature %g, "
                "threshold %g, seed %llu, early stop %s, cache %s (%s)\n",
                path, dllm_model_arch(model), (long long)dllm_model_n_layer(model),
                (long long)dllm_model_n_embd(model), (long long)dllm_model_n_vocab(model), experts,
                p->kind == DLLM_SAMPLER_LLADA ? "LLaDA" : "Dream",
                dllm_model_shift_logits(model) ? "on" : "off", device, o.threads, load_ms,
                (long long)p->gen_length, (long long)p->steps, (long long)p->block_length,
                p->temperature, p->threshold, (unsigned long long)p->seed,
                p->early_stop ? "on" : "off", dllm_cache_mode_name(p->cache),
                dllm_cache_type_name(p->cache_type));
        if (fp.backend)
            fprintf(stderr,
                    "gpu memory: %.2f GB planned for a canvas of %lld and %lld logits rows\n",
                    (double)dllm_gpu_bytes(model, &fp) / 1e9, (long long)fp.max_tokens,
                    (long long)fp.max_rows);
        if (p->threshold > 0)
            fprintf(stderr, "note: with --threshold each block runs until it is full; --steps "
                            "does not apply\n");
    }
    struct run_state st = {.session = session,
                           .verbose = verbose,
                           .progress = isatty(STDERR_FILENO) && !verbose && !show,
                           .show_canvas = show,
                           .show_tty = isatty(STDOUT_FILENO),
                           .mask_id = dllm_model_mask_id(model),
                           .cache_type = sp.cache_type,
                           .computed = json_array(),
                           .refresh_steps = json_array(),
                           .checks = json_array()};
    if (trace_path && !(st.trace = fopen(trace_path, "w")))
        cli_fail("cannot write the trace file %s: %s", trace_path, strerror(errno));
    struct dllm_request req = {.messages = msgs,
                               .n_messages = n_msgs,
                               .raw_prompt = o.no_chat ? prompt : NULL,
                               .sampler = sp,
                               .cancel = &interrupted,
                               .check_cache = cache_check};
    if (dllm_session_generate(session, &req, on_event, &st, &err))
        cli_fail("%s", err.text);
    dllm_session_wait(session);
    if (st.progress)
        fputs("\r\033[K", stderr);
    if (show && st.show_tty)
        fputs("\033[H\033[2J", stdout); /* the last canvas gives way to the answer */
    if (st.trace && fclose(st.trace) != 0 && !st.trace_errno)
        st.trace_errno = errno;
    if (st.failed)
        cli_fail("%s", st.error);
    if (json) {
        print_json(&st, &sp, o.threads, !o.no_chat, load_ms, path);
    } else {
        fputs(st.text, stdout);
        putchar('\n');
    }
    if (verbose)
        fprintf(stderr, "%lld steps%s, %.0f ms in all, peak RSS %.0f MB\n", (long long)st.steps_run,
                st.stopped_early ? " (stopped early: the answer was final)" : "", st.total_ms,
                cli_peak_rss_mb());
    if (st.cancelled)
        fprintf(stderr, "dllm: stopped after %lld steps; the answer above is partial\n",
                (long long)st.steps_run);
    if (st.trace_errno) /* after the answer, which is whole */
        cli_fail("cannot write the trace file %s: %s", trace_path, strerror(st.trace_errno));
    dllm_session_free(session);
    dllm_model_close(model);
    json_decref(st.tokens);
    json_decref(st.gaps);
    free(st.text);
    free(st.step_ms);
    json_decref(st.computed);
    json_decref(st.refresh_steps);
    json_decref(st.checks);
    free(prompt);
    free(path);
    return st.cancelled ? 130 : CLI_EXIT_OK;
}
