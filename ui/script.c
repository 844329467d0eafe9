/* Key scripts for headless runs. */
#include "config.h"

#include "keys.h"
#include "script.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ui_script_fini(struct ui_script *script)
{
    for (size_t i = 0; i < script->n; i++)
        free(script->cmds[i].text);
    free(script->cmds);
    *script = (struct ui_script){0};
}

/* A malloc'd copy of s[0 .. n-1], with \n \t \\ decoded when escapes is set. */
static char *copy_text(const char *s, size_t n, bool escapes, size_t *out_len)
{
    char *t = malloc(n + 1);
    if (!t)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (escapes && s[i] == '\\' && i + 1 < n && strchr("nt\\", s[i + 1])) {
            i++;
            t[k++] = s[i] == 'n' ? '\n' : s[i] == 't' ? '\t' : '\\';
        } else {
            t[k++] = s[i];
        }
    }
    t[k] = '\0';
    *out_len = k;
    return t;
}

/* Parses one line (without its newline) into cmd; false with err set when it is malformed. */
static bool parse_line(const char *line, size_t n, struct ui_script_cmd *cmd, char *err,
                       size_t size)
{
    size_t w = 0;
    while (w < n && line[w] != ' ')
        w++;
    const char *arg = w < n ? line + w + 1 : line + n;
    size_t alen = w < n ? n - w - 1 : 0;
    char word[32], rest[256];
    snprintf(word, sizeof word, "%.*s", (int)(w < 31 ? w : 31), line);
    snprintf(rest, sizeof rest, "%.*s", (int)(alen < 255 ? alen : 255), arg);
    int line_no = cmd->line;

    if (strcmp(word, "text") == 0 || strcmp(word, "paste") == 0) {
        cmd->op = word[0] == 't' ? UI_SCRIPT_TEXT : UI_SCRIPT_PASTE;
        cmd->text = copy_text(arg, alen, cmd->op == UI_SCRIPT_PASTE, &cmd->len);
        if (!cmd->text) {
            snprintf(err, size, "line %d: out of memory", line_no);
            return false;
        }
        return true;
    }
    if (strcmp(word, "key") == 0) {
        char name[64];
        int count = 1, got = sscanf(rest, "%63s %d", name, &count);
        char extra;
        if (got < 1 || (got == 2 && count < 1) || sscanf(rest, "%*s %*d %c", &extra) == 1) {
            snprintf(err, size, "line %d: use 'key NAME [COUNT]', not 'key %s'", line_no, rest);
            return false;
        }
        if (!ui_key_parse(name, &cmd->key)) {
            snprintf(err, size, "line %d: unknown key '%s'", line_no, name);
            return false;
        }
        cmd->op = UI_SCRIPT_KEY;
        cmd->count = count;
        return true;
    }
    if (strcmp(word, "resize") == 0) {
        char x, extra;
        if (sscanf(rest, "%d%c%d %c", &cmd->cols, &x, &cmd->rows, &extra) != 3 || x != 'x' ||
            cmd->cols < 1 || cmd->rows < 1 || cmd->cols > 1000 || cmd->rows > 1000) {
            snprintf(err, size, "line %d: use 'resize COLSxROWS', e.g. 'resize 100x30'", line_no);
            return false;
        }
        cmd->op = UI_SCRIPT_RESIZE;
        return true;
    }
    if (strcmp(word, "wait-idle") == 0) {
        if (alen > 0) {
            snprintf(err, size, "line %d: wait-idle takes no argument", line_no);
            return false;
        }
        cmd->op = UI_SCRIPT_WAIT_IDLE;
        return true;
    }
    if (strcmp(word, "wait-step") == 0) {
        char extra;
        if (sscanf(rest, "%d %c", &cmd->count, &extra) != 1 || cmd->count < 1) {
            snprintf(err, size, "line %d: use 'wait-step N' with N from 1", line_no);
            return false;
        }
        cmd->op = UI_SCRIPT_WAIT_STEP;
        return true;
    }
    if ((strcmp(word, "dump") == 0 || strcmp(word, "dump-styles") == 0) && alen > 0) {
        cmd->op = word[4] ? UI_SCRIPT_DUMP_STYLES : UI_SCRIPT_DUMP;
        cmd->text = copy_text(arg, alen, false, &cmd->len);
        if (!cmd->text) {
            snprintf(err, size, "line %d: out of memory", line_no);
            return false;
        }
        return true;
    }
    snprintf(err, size,
             "line %d: unknown command '%s' (known: text, paste, key, resize, wait-idle, "
             "wait-step, dump, dump-styles)",
             line_no, line[0] ? word : "");
    return false;
}

bool ui_script_parse(const char *src, size_t len, struct ui_script *script, char *err, size_t size)
{
    struct ui_script s = {0};
    size_t cap = 0;
    int line_no = 0;
    for (size_t i = 0; i < len;) {
        size_t end = i;
        while (end < len && src[end] != '\n')
            end++;
        size_t n = end - i;
        if (n > 0 && src[i + n - 1] == '\r')
            n--;
        line_no++;
        const char *line = src + i;
        i = end + 1;
        if (n == 0 || line[0] == '#')
            continue;
        if (s.n == cap) {
            cap = cap ? 2 * cap : 16;
            struct ui_script_cmd *cmds = realloc(s.cmds, cap * sizeof *cmds);
            if (!cmds) {
                snprintf(err, size, "line %d: out of memory", line_no);
                errno = ENOMEM;
                goto fail;
            }
            s.cmds = cmds;
        }
        struct ui_script_cmd *cmd = &s.cmds[s.n];
        *cmd = (struct ui_script_cmd){.line = line_no};
        if (!parse_line(line, n, cmd, err, size))
            goto fail;
        s.n++;
    }
    *script = s;
    return true;
fail:
    ui_script_fini(&s);
    return false;
}
