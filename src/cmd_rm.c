/* dllm rm: a model out of the Hugging Face cache, with the blobs nothing else uses. */
#include "config.h"

#include "cli.h"
#include "commands.h"
#include "dllm-hub.h"
#include "dllm.h"
#include "model_ref.h"

#include <inttypes.h>
#include <stdio.h>

const char cmd_rm_usage[] =
    "usage: dllm rm MODEL\n"
    "\n"
    "Removes a model from the Hugging Face cache. org/repo:QUANT or org/repo:FILE.gguf\n"
    "removes those files (every part of a split model) from every snapshot of the repo, then\n"
    "the downloaded content no remaining file uses; org/repo removes everything cached for\n"
    "the repo, partial downloads included. See dllm ls for what the cache holds.\n"
    "\n"
    "options:\n"
    "  -h, --help    this help\n";

int cmd_rm(const struct cli_command *cmd, int argc, char **argv)
{
    while (cli_getopt(cmd, argc, argv, "", NULL) != -1) {
    }
    if (argc - optind != 1)
        cli_usage_error(cmd, argc - optind ? "one MODEL at a time" : "MODEL is missing");
    const char *ref = argv[optind];
    struct dllm_error err = {0};
    struct dllm_hub_params params;
    struct dllm_hub_env env;
    model_ref_params(&params, &env);
    struct dllm_hub_ref parsed;
    if (dllm_hub_ref_parse(ref, &params, &parsed, &err) != DLLM_OK)
        cli_usage_error(cmd, "%s", err.text);
    if (parsed.local)
        cli_usage_error(cmd, "'%s' is a local path: rm takes a hub model (org/repo[:QUANT])", ref);
    int64_t files, bytes;
    if (dllm_hub_remove(ref, &params, &files, &bytes, &err) != DLLM_OK)
        cli_fail("%s", err.text);
    printf("removed %s: %" PRId64 " file%s, %.1f MB freed\n", ref, files, files == 1 ? "" : "s",
           bytes / 1e6);
    return CLI_EXIT_OK;
}
