/* dllm chat: the interactive chat, dllm-tui, found beside this program. */
#include "config.h"

#include "cli.h"
#include "commands.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char cmd_chat_usage[] =
    "usage: dllm chat [dllm-tui OPTIONS]\n"
    "\n"
    "Starts the interactive chat: runs dllm-tui, which is installed beside dllm, with the same\n"
    "arguments (see 'dllm chat --help' for its options, and man dllm-tui).\n";

int cmd_chat(const struct cli_command *cmd, int argc, char **argv)
{
    (void)cmd;
    char self[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n < 0)
        cli_fail("cannot find the folder of this program (/proc/self/exe: %s)", strerror(errno));
    self[n] = '\0';
    char tui[PATH_MAX + 16];
    snprintf(tui, sizeof tui, "%s/dllm-tui", dirname(self));
    char **args = calloc((size_t)argc + 1, sizeof *args);
    if (!args)
        cli_fail("out of memory");
    args[0] = tui;
    for (int i = 1; i < argc; i++)
        args[i] = argv[i];
    execv(tui, args);
    cli_fail("cannot run %s: %s (dllm-tui is installed beside dllm)", tui, strerror(errno));
}
