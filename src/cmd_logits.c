/* dllm logits: one forward pass over given token ids, the logits of chosen positions to a file. */
#include "config.h"

#include "cli.h"
#include "device.h"
#include "commands.h"
#include "dllm.h"
#include "model_ref.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char cmd_logits_usage[] =
    "usage: dllm logits --model MODEL --tokens IDS --rows POSITIONS|all --out FILE\n"
    "                   [--threads N] [--offline] [--device D] [--gpu-resident]\n"
    "\n"
    "Runs one bidirectional forward pass of a LLaDA, Dream, LLaDA-MoE or RND1 model over the\n"
    "token ids, at positions 0, 1, ..., and writes the logits of the requested positions to\n"
    "FILE as float32, row-major [rows, vocab], in the order the positions are given. These\n"
    "are the model's raw output rows: no Dream shift is applied (Dream's and RND1's row p\n"
    "predicts the token at p+1).\n"
    "\n"
    "options:\n"
    "  -m, --model MODEL       a LLaDA, Dream, LLaDA-MoE or RND1 GGUF file, or a hub model\n"
    "                          org/repo[:QUANT|:FILE.gguf], downloaded if needed\n"
    "      --offline           hub models from the cache only, no network\n"
    "      --tokens IDS        comma-separated token ids, e.g. 1,2048,126336\n"
    "  -r, --rows POSITIONS    comma-separated 0-based positions, or 'all'\n"
    "  -o, --out FILE          where to write the logits\n"
    "  -t, --threads N         worker threads, 1 to 1024 (default: one per core); the\n"
    "                          logits do not depend on it\n"
    "      --device D          auto (default), cpu or gpu[:N], as dllm run's\n"
    "      --gpu-resident      on a GPU, keep FP16 copies of the weights\n"
    "  -h, --help              this help\n";

int cmd_logits(const struct cli_command *cmd, int argc, char **argv)
{
    static const struct option opts[] = {
        {"model", required_argument, NULL, 'm'},
        {"tokens", required_argument, NULL, 'i'},
        {"rows", required_argument, NULL, 'r'},
        {"out", required_argument, NULL, 'o'},
        {"threads", required_argument, NULL, 't'},
        {"offline", no_argument, NULL, 'f'},
        {"device", required_argument, NULL, 'd'},
        {"gpu-resident", no_argument, NULL, 'g'},
        {0},
    };
    const char *model_path = NULL, *tokens = NULL, *rows_text = NULL, *out_path = NULL;
    bool offline = false;
    struct device_spec device = {0};
    int threads = 0, c;
    while ((c = cli_getopt(cmd, argc, argv, "m:r:o:t:", opts)) != -1) {
        switch (c) {
        case 'm': model_path = optarg; break;
        case 'i': tokens = optarg; break;
        case 'r': rows_text = optarg; break;
        case 'o': out_path = optarg; break;
        case 't': threads = (int)cli_parse_int(cmd, "--threads", optarg, 1, 1024); break;
        case 'f': offline = true; break;
        case 'd': device_parse(cmd, optarg, &device); break;
        case 'g': device.resident = true; break;
        }
    }
    if (optind != argc)
        cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    if (!model_path || !tokens || !rows_text || !out_path)
        cli_usage_error(cmd, "--%s is missing",
                        !model_path  ? "model"
                        : !tokens    ? "tokens"
                        : !rows_text ? "rows"
                                     : "out");
    int64_t n, n_rows;
    int32_t *ids = cli_parse_list(cmd, "--tokens", tokens, 0, INT32_MAX, &n);
    int32_t *rows;
    if (strcmp(rows_text, "all") == 0) {
        rows = malloc((size_t)n * sizeof *rows);
        if (!rows)
            cli_fail("out of memory");
        for (int64_t i = 0; i < n; i++)
            rows[i] = (int32_t)i;
        n_rows = n;
    } else {
        rows = cli_parse_list(cmd, "--rows", rows_text, 0, INT32_MAX, &n_rows);
        for (int64_t i = 0; i < n_rows; i++)
            if (rows[i] >= n)
                cli_usage_error(cmd,
                                "--rows %" PRId32 " is outside the %" PRId64
                                " positions of --tokens (0 to %" PRId64 ")",
                                rows[i], n, n - 1);
    }

    char *path = model_ref_path(model_path, offline);
    struct dllm_model *model = model_ref_open(path, false);
    struct dllm_forward_params fp;
    dllm_forward_params_init(&fp);
    fp.max_tokens = n;
    fp.max_rows = n_rows > n ? n : n_rows;
    fp.kernels = cli_kernels();
    fp.progress = model_ref_progress;
    char label[300];
    device_choose(cmd, &device, model, fp.max_tokens, fp.max_rows, 0, &fp, label, sizeof label);
    struct dllm_forward *fwd;
    struct dllm_error err;
    if (dllm_threadpool_new(threads, &fp.pool, &err) != DLLM_OK ||
        dllm_forward_new(model, &fp, &fwd, &err) != DLLM_OK)
        cli_fail("%s%s", err.text, fp.backend ? ": use --device cpu" : "");
    const int64_t n_vocab = dllm_model_n_vocab(model);
    float *logits = malloc((size_t)(n_rows * n_vocab) * sizeof *logits);
    if (!logits)
        cli_fail("out of memory for %" PRId64 " rows of %" PRId64 " logits", n_rows, n_vocab);
    const struct dllm_pass pass = {
        .ids = ids, .n_tokens = n, .rows = rows, .n_rows = n_rows, .logits = logits};
    if (dllm_forward_run(fwd, &pass, &err) != DLLM_OK)
        cli_fail("%s", err.text);

    FILE *f = fopen(out_path, "wb");
    if (!f)
        cli_fail("cannot create %s: %s", out_path, strerror(errno));
    const size_t count = (size_t)(n_rows * n_vocab);
    if (fwrite(logits, sizeof *logits, count, f) != count || fclose(f) != 0)
        cli_fail("cannot write %s: %s", out_path, strerror(errno));
    printf("%s: %" PRId64 " tokens, %" PRId64 " rows of %" PRId64 " float32 logits written to %s\n",
           dllm_model_arch(model), n, n_rows, n_vocab, out_path);
    free(logits);
    free(ids);
    free(rows);
    dllm_forward_free(fwd);
    dllm_threadpool_free(fp.pool);
    dllm_model_close(model);
    free(path);
    return CLI_EXIT_OK;
}
