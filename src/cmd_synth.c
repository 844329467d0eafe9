/* dllm synth: a GGUF model of a real supported layout (dense or MoE) with random weights. */
#include "config.h"

#include "cli.h"
#include "commands.h"
#include "dllm.h"
#include "synth.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char cmd_synth_usage[] =
    "usage: dllm synth --arch llada|dream|llada-moe|rnd1 [--preset NAME] --out FILE\n"
    "                  [--type Q4_K_M|Q5_K_M|Q6_K|Q8_0|Q3_K_M|Q2_K|F16] [--layers N] [--vocab N]\n"
    "                  [--seed N] [--quiet]\n"
    "\n"
    "Writes a GGUF model with random weights in the real layout of LLaDA-8B-Instruct,\n"
    "Dream-v0-Instruct-7B, LLaDA-MoE-7B-A1B-Instruct or RND1-30B-A3B: the tensors, shapes and\n"
    "metadata keys llama.cpp's converter writes,\n"
    "the tensor types llama-quantize picks for the type mix, a synthetic byte-level vocabulary\n"
    "with the model's special tokens, and the model's chat template. dllm and llama.cpp load\n"
    "it; its text is meaningless. For benchmarks and tests without a download.\n"
    "The data is generated while it is written (memory use stays small); FILE appears only\n"
    "once complete (it is written as FILE.tmp, then renamed), replacing any file of that name.\n"
    "Ctrl+C stops, leaves nothing behind and exits 130; SIGTERM and SIGHUP leave nothing either.\n"
    "\n"
    "options:\n"
    "  -a, --arch NAME     llada, dream, llada-moe or rnd1\n"
    "  -p, --preset NAME   the shape: 8b (llada, 4.9 GB as Q4_K_M), 7b (dream, 4.7 GB),\n"
    "                      7b-a1b (llada-moe, 4.5 GB) or 30b-a3b (rnd1, 18.6 GB), the default;\n"
    "                      tiny (any: 2 layers, d_model 256, vocab 2048; MoE: 8 experts of\n"
    "                      128, 2 used)\n"
    "  -o, --out FILE      the file to write\n"
    "  -t, --type TYPE     the tensor type mix: Q4_K_M (default), Q5_K_M, Q6_K, Q8_0,\n"
    "                      Q3_K_M, Q2_K or F16 (every matrix F16, as llama.cpp's converter\n"
    "                      writes)\n"
    "      --layers N      the number of layers instead of the preset's\n"
    "      --vocab N       the vocabulary size instead of the preset's; special tokens keep\n"
    "                      their real ids, or their distance from the top of the vocabulary\n"
    "      --seed N        the random seed, 0 to 2^64-1 (default 0): the same seed and\n"
    "                      options give the same file\n"
    "  -q, --quiet         no progress on stderr\n"
    "  -h, --help          this help\n";

/* Set by SIGINT, SIGTERM or SIGHUP; the library stops at its next check. */
static atomic_bool interrupted;
static volatile sig_atomic_t stop_signal; /* the signal that set it */

static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};

static void on_stop_signal(int sig)
{
    stop_signal = sig;
    atomic_store(&interrupted, true);
    signal(sig, SIG_DFL); /* a second one ends the program at once */
}

/* Catches the stop signals while the file is written (catch), or restores their default. */
static void catch_stop_signals(bool catch)
{
    struct sigaction sa = {.sa_handler = catch ? on_stop_signal : SIG_DFL};
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof stop_signals / sizeof *stop_signals; i++)
        sigaction(stop_signals[i], &sa, NULL);
}

/* How progress is shown: a redrawn percentage on a terminal, else a line every 10%. */
struct view {
    const char *path;
    bool tty;
    int last; /* the last percentage shown, -1 before any */
};

static void on_progress(const struct dllm_progress *p, void *user)
{
    struct view *v = user;
    const uint64_t done = (uint64_t)p->done, total = (uint64_t)p->total;
    int pct = total ? (int)(100 * done / total) : 100;
    if (v->tty ? pct != v->last : pct / 10 != v->last / 10 || v->last < 0) {
        fprintf(stderr, "%swriting %s: %3d%% (%.1f of %.1f MB)%s", v->tty ? "\r" : "", v->path, pct,
                (double)done / 1e6, (double)total / 1e6, v->tty ? "" : "\n");
        v->last = pct;
    }
}

int cmd_synth(const struct cli_command *cmd, int argc, char **argv)
{
    static const struct option opts[] = {
        {"arch", required_argument, NULL, 'a'},
        {"preset", required_argument, NULL, 'p'},
        {"out", required_argument, NULL, 'o'},
        {"type", required_argument, NULL, 't'},
        {"layers", required_argument, NULL, 'L'},
        {"vocab", required_argument, NULL, 'V'},
        {"seed", required_argument, NULL, 's'},
        {"quiet", no_argument, NULL, 'q'},
        {0},
    };
    const char *arch = NULL, *preset = NULL, *out = NULL, *type = NULL;
    long long layers = 0, vocab = 0;
    uint64_t seed = 0;
    bool quiet = false;
    int c;
    while ((c = cli_getopt(cmd, argc, argv, "a:p:o:t:q", opts)) != -1) {
        switch (c) {
        case 'a': arch = optarg; break;
        case 'p': preset = optarg; break;
        case 'o': out = optarg; break;
        case 't': type = optarg; break;
        case 'L': layers = cli_parse_int(cmd, "--layers", optarg, 1, 4096); break;
        case 'V': vocab = cli_parse_int(cmd, "--vocab", optarg, 1, INT32_MAX); break;
        case 's': seed = cli_parse_u64(cmd, "--seed", optarg); break;
        case 'q': quiet = true; break;
        }
    }
    if (optind != argc)
        cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    if (!arch || !out)
        cli_usage_error(cmd, "--%s is missing", !arch ? "arch" : "out");
    if (!*out)
        cli_usage_error(cmd, "--out takes a file name, not an empty one");
    /* The real shape of each architecture by default. */
    static const char *const real_shapes[][2] = {
        {"llada", "8b"}, {"dream", "7b"}, {"llada-moe", "7b-a1b"}, {"rnd1", "30b-a3b"}};
    for (size_t i = 0; !preset && i < sizeof real_shapes / sizeof *real_shapes; i++)
        if (strcmp(arch, real_shapes[i][0]) == 0)
            preset = real_shapes[i][1];

    struct dllm_synth_params params;
    struct dllm_error err;
    if (dllm_synth_params_init(&params, arch, preset, &err) != DLLM_OK)
        cli_usage_error(cmd, "%s", err.text);
    if (type && !dllm_synth_type_parse(type, &params.type))
        cli_usage_error(
            cmd, "--type takes Q4_K_M, Q5_K_M, Q6_K, Q8_0, Q3_K_M, Q2_K or F16, not '%s'", type);
    if (layers)
        params.n_layer = layers;
    if (vocab)
        params.n_vocab = vocab;
    params.seed = seed;
    if (dllm_synth_params_check(&params, &err) != DLLM_OK)
        cli_usage_error(cmd, "%s", err.text);

    struct view view = {.path = out, .tty = isatty(STDERR_FILENO), .last = -1};
    params.progress = quiet ? NULL : on_progress;
    params.progress_user = &view;
    params.cancel = &interrupted;
    catch_stop_signals(true);
    enum dllm_status st = dllm_synth_write(out, &params, &err);
    catch_stop_signals(false);
    if (view.tty && view.last >= 0)
        fputc('\n', stderr);
    if (st == DLLM_ERR_CANCELLED) {
        fprintf(stderr, "dllm: cancelled: %s was not written\n", out);
        if (stop_signal != SIGINT)
            raise(stop_signal); /* the temporary is gone: end as the signal asked */
        return 130;
    }
    if (st != DLLM_OK)
        cli_fail("%s", err.text);
    struct stat sb;
    double mb = stat(out, &sb) == 0 ? (double)sb.st_size / 1e6 : 0.0;
    printf("%s %s: %" PRId64 " layers, d_model %" PRId64 ", %" PRId64 "/%" PRId64
           " heads, ffn %" PRId64 ", vocab %" PRId64 ", seed %" PRIu64 ": %.1f MB written to %s\n",
           params.arch, dllm_synth_type_name(params.type), params.n_layer, params.n_embd,
           params.n_head, params.n_head_kv, params.n_ff, params.n_vocab, params.seed, mb, out);
    return CLI_EXIT_OK;
}
