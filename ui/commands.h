/*
 * Slash commands typed in the input box: /clear /regen /undo /save FILE /load FILE
 * /system [TEXT] /set [NAME VALUE] /copy [code] /help /quit. A line starting with "//" is a message
 * starting with
 * "/".
 */
#ifndef DLLM_UI_COMMANDS_H
#define DLLM_UI_COMMANDS_H

#include <stddef.h>

enum ui_cmd_kind {
    UI_CMD_MESSAGE, /* not a command: text to send */
    UI_CMD_CLEAR,   /* forget the conversation */
    UI_CMD_REGEN,   /* answer the last message again */
    UI_CMD_UNDO,    /* remove the last message and its answer */
    UI_CMD_SAVE,    /* write the transcript as Markdown to FILE and as JSON lines to FILE.jsonl */
    UI_CMD_LOAD,    /* read a conversation back from the JSON lines /save wrote */
    UI_CMD_SYSTEM,  /* set, show or remove the system prompt */
    UI_CMD_SET,     /* set a generation setting by name, or list them */
    UI_CMD_FIND,    /* search the conversation */
    UI_CMD_COPY,    /* copy the last answer, or its last code block, to the clipboard */
    UI_CMD_HELP,    /* show the help screen */
    UI_CMD_QUIT,    /* leave */
    UI_CMD_ERROR,   /* a malformed command: error says why */
};

struct ui_cmd {
    enum ui_cmd_kind kind;
    const char *arg; /* into the parsed line: the message, FILE or TEXT; "" when none */
    size_t arg_len;
    char error[128]; /* for UI_CMD_ERROR: "unknown command /foo: /help lists them" */
};

/*
 * Parses one input line. Leading and trailing white space around a command and its argument
 * is ignored; a message is kept as typed (less the escaping '/').
 */
void ui_command_parse(const char *line, struct ui_cmd *cmd);

/* The name of command i ("clear", "regen", ...), or NULL past the last. */
const char *ui_command_name(size_t i);

/*
 * One line per command ("/undo             remove the last message and its answer", what it
 * does from column UI_COMMANDS_HELP_COLUMN on), for the help screen, truncated to size - 1
 * bytes.
 */
#define UI_COMMANDS_HELP_COLUMN 18
void ui_commands_help(char *buf, size_t size);

#endif
