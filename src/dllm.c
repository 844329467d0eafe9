/* dllm: the command-line tools. Each command lives in src/cmd_<name>.c. */
#include "config.h"

#include "cli.h"
#include "commands.h"
#include "dllm.h"

#include <stdio.h>
#include <string.h>

static const struct cli_command commands[] = {
    {"inspect", "print a GGUF file's metadata and tensors", cmd_inspect_usage, cmd_inspect},
    {"tokenize", "print the token ids of a prompt, or the text of ids", cmd_tokenize_usage,
     cmd_tokenize},
    {"logits", "write the logits of one forward pass over token ids", cmd_logits_usage, cmd_logits},
    {"chat", "the interactive chat (runs dllm-tui)", cmd_chat_usage, cmd_chat},
    {"run", "generate one answer (text on stdout, or --json)", cmd_run_usage, cmd_run},
    {"doctor", "check this machine, the build and the model cache", cmd_doctor_usage, cmd_doctor},
    {"pull", "download a model from the Hugging Face hub, verified", cmd_pull_usage, cmd_pull},
    {"ls", "list the GGUF models in the Hugging Face cache", cmd_ls_usage, cmd_ls},
    {"rm", "remove a model from the Hugging Face cache", cmd_rm_usage, cmd_rm},
    {"synth", "write a model of the real layout with random weights", cmd_synth_usage, cmd_synth},
    {"bench", "time forward passes over a canvas: ms, GOPS, peak RSS", cmd_bench_usage, cmd_bench},
};
static const size_t n_commands = sizeof commands / sizeof commands[0];

/* The top-level usage: the synopsis and one line per command. */
static void print_usage(FILE *out)
{
    fputs("usage: dllm COMMAND [OPTIONS]\n"
          "       dllm help [COMMAND] | --help | --version\n\n"
          "Local inference for diffusion language models (LLaDA, Dream, LLaDA-MoE, RND1) from\n"
          "GGUF files.\n\n"
          "commands:\n",
          out);
    for (size_t i = 0; i < n_commands; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fputs("\nRun 'dllm COMMAND --help' for a command's options; 'man dllm' for the manual.\n", out);
}

static const struct cli_command *find_command(const char *name)
{
    for (size_t i = 0; i < n_commands; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

int main(int argc, char **argv)
{
    cli_check_output_at_exit();
    if (argc < 2) {
        print_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *word = argv[1];
    if (!strcmp(word, "--help") || !strcmp(word, "-h") || !strcmp(word, "help")) {
        if (!strcmp(word, "help") && argc > 2 && strcmp(argv[2], "help") != 0) {
            const struct cli_command *cmd = find_command(argv[2]);
            if (!cmd) {
                fprintf(stderr, "dllm: unknown command '%s' (dllm help lists them)\n", argv[2]);
                return CLI_EXIT_USAGE;
            }
            cli_help(cmd);
        }
        print_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (!strcmp(word, "--version") || !strcmp(word, "-V")) {
        printf("dllm %s (build: %s)\n", dllm_version(), DLLM_BUILD_CONFIG);
        return CLI_EXIT_OK;
    }
    const struct cli_command *cmd = find_command(word);
    if (!cmd) {
        fprintf(stderr, "dllm: unknown command '%s'\n\n", word);
        print_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    return cmd->run(cmd, argc - 1, argv + 1);
}
