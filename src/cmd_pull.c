/* dllm pull: a model from the Hugging Face hub into the shared cache, verified. */
#include "config.h"

#include "cli.h"
#include "commands.h"
#include "dllm-hub.h"
#include "dllm.h"
#include "model_ref.h"

#include <stdio.h>

const char cmd_pull_usage[] =
    "usage: dllm pull [--offline] [--revision REV] [--quiet] [MODEL]\n"
    "\n"
    "Downloads MODEL from the Hugging Face hub into the cache huggingface_hub and llama.cpp\n"
    "share (see dllm ls), checks its size and SHA-256 against the hub's, and prints the path\n"
    "of the file, which -m takes. MODEL is org/repo (its Q4_K_M GGUF, else Q8_0, else the\n"
    "first), org/repo:QUANT (Q5_K_M, ...) or org/repo:FILE.gguf; without one, the default\n"
    "model " DLLM_HUB_DEFAULT_MODEL ".\n"
    "A model already in the cache is only checked. An interrupted download (Ctrl+C, a lost\n"
    "connection) resumes where it stopped when the command runs again.\n"
    "\n"
    "options:\n"
    "  --offline         use the cache only, no network (also HF_HUB_OFFLINE=1)\n"
    "  --revision REV    a branch, tag or commit of the repo (default main)\n"
    "  -q, --quiet       no progress on stderr\n"
    "  -h, --help        this help\n"
    "\n"
    "environment: HF_ENDPOINT, HF_HOME, HF_HUB_CACHE, HF_TOKEN (for gated or private repos;\n"
    "else the file $HF_HOME/token), HF_HUB_OFFLINE, https_proxy\n";

int cmd_pull(const struct cli_command *cmd, int argc, char **argv)
{
    static const struct option opts[] = {{"offline", no_argument, NULL, 'o'},
                                         {"revision", required_argument, NULL, 'r'},
                                         {"quiet", no_argument, NULL, 'q'},
                                         {0}};
    struct dllm_hub_params params;
    struct dllm_hub_env env;
    model_ref_params(&params, &env);
    bool quiet = false;
    int c;
    while ((c = cli_getopt(cmd, argc, argv, "q", opts)) != -1) {
        switch (c) {
        case 'o': params.offline = true; break;
        case 'r': params.revision = optarg; break;
        case 'q': quiet = true; break;
        }
    }
    if (argc - optind > 1)
        cli_usage_error(cmd, "one MODEL at a time");
    const char *ref = optind < argc ? argv[optind] : DLLM_HUB_DEFAULT_MODEL;
    struct dllm_error err = {0};
    struct dllm_hub_ref parsed;
    if (dllm_hub_ref_parse(ref, &params, &parsed, &err) != DLLM_OK)
        cli_usage_error(cmd, "%s", err.text);
    if (parsed.local)
        cli_usage_error(cmd, "'%s' is a local path: pull takes a hub model (org/repo[:QUANT])",
                        ref);

    struct dllm_hub_model *model;
    if (model_ref_resolve(ref, &params, quiet, &model, &err) != DLLM_OK)
        cli_fail("%s", err.text);
    if (!quiet && dllm_hub_model_downloaded(model) == 0)
        fprintf(stderr, "dllm: %s:%s is in the cache (commit %.7s)\n", dllm_hub_model_repo(model),
                dllm_hub_model_file(model), dllm_hub_model_commit(model));
    printf("%s\n", dllm_hub_model_path(model));
    dllm_hub_model_free(model);
    return CLI_EXIT_OK;
}
