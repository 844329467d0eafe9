/* dllm ls: the GGUF models in the Hugging Face cache, with size and verification state. */
#include "config.h"

#include "cli.h"
#include "commands.h"
#include "dllm-hub.h"
#include "dllm.h"
#include "model_ref.h"

#include <stdio.h>
#include <string.h>

const char cmd_ls_usage[] =
    "usage: dllm ls [--paths]\n"
    "\n"
    "Lists the GGUF files in the Hugging Face cache (HF_HUB_CACHE, else $HF_HOME/hub, else\n"
    "~/.cache/huggingface/hub; shared with huggingface_hub and llama.cpp): the model as -m\n"
    "takes it (org/repo:FILE), its size, whether it was verified against the hub's SHA-256\n"
    "(verified; unchecked: it will be on first use; no hash: none is known; broken: the\n"
    "file is gone), and the commit. A split model is one line: part 1, the size of all its\n"
    "parts, the worst of their states.\n"
    "\n"
    "options:\n"
    "  -p, --paths   print each file's path in the cache instead of the commit\n"
    "  -h, --help    this help\n";

int cmd_ls(const struct cli_command *cmd, int argc, char **argv)
{
    static const struct option opts[] = {{"paths", no_argument, NULL, 'p'}, {0}};
    bool paths = false;
    int c;
    while ((c = cli_getopt(cmd, argc, argv, "p", opts)) != -1)
        if (c == 'p')
            paths = true;
    if (optind < argc)
        cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    struct dllm_hub_params params;
    struct dllm_hub_env env;
    model_ref_params(&params, &env);
    struct dllm_error err = {0};
    struct dllm_hub_list *list;
    if (dllm_hub_list(&params, &list, &err) != DLLM_OK)
        cli_fail("%s", err.text);
    int64_t n = dllm_hub_list_count(list);
    if (n == 0) {
        fprintf(stderr, "dllm: no GGUF models in %s; get one with 'dllm pull MODEL'\n",
                dllm_hub_list_cache_dir(list));
        dllm_hub_list_free(list);
        return CLI_EXIT_OK;
    }
    int w = 5;
    for (int64_t i = 0; i < n; i++) {
        const struct dllm_hub_entry *e = dllm_hub_list_get(list, i);
        int len = (int)(strlen(e->repo) + 1 + strlen(e->file));
        if (len > w)
            w = len;
    }
    printf("%-*s  %10s  %-9s  %s\n", w, "MODEL", "SIZE", "STATE", paths ? "PATH" : "COMMIT");
    for (int64_t i = 0; i < n; i++) {
        const struct dllm_hub_entry *e = dllm_hub_list_get(list, i);
        char model[512], size[32];
        snprintf(model, sizeof model, "%s:%s", e->repo, e->file);
        if (e->size < 0)
            snprintf(size, sizeof size, "-");
        else if (e->size >= 1000000000)
            snprintf(size, sizeof size, "%.2f GB", e->size / 1e9);
        else
            snprintf(size, sizeof size, "%.1f MB", e->size / 1e6);
        printf("%-*s  %10s  %-9s  %.*s\n", w, model, size, model_ref_state_name(e->state),
               paths ? 4096 : 7, paths ? e->path : e->commit);
    }
    dllm_hub_list_free(list);
    return CLI_EXIT_OK;
}
