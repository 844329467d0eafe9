/* Slash commands. */
#include "config.h"

#include "commands.h"
#include "format.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

struct command {
    const char *name;
    enum ui_cmd_kind kind;
    const char *arg; /* NULL: takes none; otherwise its name, in brackets when optional */
    const char *help;
};

static const struct command commands[] = {
    {"clear", UI_CMD_CLEAR, NULL, "forget the conversation (the system prompt stays)"},
    {"regen", UI_CMD_REGEN, NULL, "answer the last message again"},
    {"undo", UI_CMD_UNDO, NULL, "remove the last message and its answer"},
    {"save", UI_CMD_SAVE, "FILE",
     "write the conversation as Markdown to FILE and as JSON lines to FILE.jsonl (a FILE "
     "ending in .jsonl: only those)"},
    {"load", UI_CMD_LOAD, "FILE",
     "read a conversation back from the FILE.jsonl /save wrote (it replaces this one)"},
    {"system", UI_CMD_SYSTEM, "[TEXT]",
     "set the system prompt (from the next answer on); alone, show it; /system off removes it"},
    {"set", UI_CMD_SET, "[NAME VALUE]",
     "set a generation setting (steps, max, block, threshold, temp, cache, seed, ...); alone, "
     "list them"},
    {"find", UI_CMD_FIND, "[TEXT]",
     "search the conversation for TEXT (n, N: next, previous; Esc ends); alone, end it"},
    {"copy", UI_CMD_COPY, "[code]",
     "copy the last answer (code: its last code block) to the clipboard (OSC 52)"},
    {"help", UI_CMD_HELP, NULL, "show the keys and commands"},
    {"quit", UI_CMD_QUIT, NULL, "leave (also Ctrl+D on an empty input)"},
};
static const size_t n_commands = sizeof commands / sizeof commands[0];

static bool blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

void ui_command_parse(const char *line, struct ui_cmd *cmd)
{
    *cmd = (struct ui_cmd){.kind = UI_CMD_MESSAGE, .arg = line, .arg_len = strlen(line)};
    const char *p = line;
    while (blank(*p))
        p++;
    if (*p != '/')
        return;
    if (p[1] == '/') {
        cmd->arg = p + 1;
        cmd->arg_len = strlen(p + 1);
        return;
    }
    const char *name = p + 1, *end = name;
    while (*end && !blank(*end))
        end++;
    const char *arg = end, *arg_end = end + strlen(end);
    while (blank(*arg))
        arg++;
    while (arg_end > arg && blank(arg_end[-1]))
        arg_end--;
    size_t len = (size_t)(end - name);
    for (size_t i = 0; i < n_commands; i++) {
        const struct command *c = &commands[i];
        if (strlen(c->name) != len || strncmp(c->name, name, len) != 0)
            continue;
        cmd->kind = c->kind;
        cmd->arg = arg;
        cmd->arg_len = (size_t)(arg_end - arg);
        if (!c->arg && cmd->arg_len > 0) {
            cmd->kind = UI_CMD_ERROR;
            snprintf(cmd->error, sizeof cmd->error, "/%s takes no argument", c->name);
        } else if (c->arg && c->arg[0] != '[' && cmd->arg_len == 0) {
            cmd->kind = UI_CMD_ERROR;
            snprintf(cmd->error, sizeof cmd->error, "/%s needs %s: /%s %s", c->name, c->arg,
                     c->name, c->arg);
        }
        return;
    }
    cmd->kind = UI_CMD_ERROR;
    cmd->arg = arg;
    cmd->arg_len = (size_t)(arg_end - arg);
    snprintf(cmd->error, sizeof cmd->error, "unknown command /%.*s: /help lists them",
             (int)(len > 40 ? 40 : len), name);
}

const char *ui_command_name(size_t i)
{
    return i < n_commands ? commands[i].name : NULL;
}

void ui_commands_help(char *buf, size_t size)
{
    buf[0] = '\0';
    for (size_t i = 0; i < n_commands; i++) {
        const struct command *c = &commands[i];
        char usage[32];
        snprintf(usage, sizeof usage, "/%s%s%s", c->name, c->arg ? " " : "", c->arg ? c->arg : "");
        ui_addf(buf, size, "%-*s%s\n", UI_COMMANDS_HELP_COLUMN, usage, c->help);
    }
}
