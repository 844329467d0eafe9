/* Tab completion of command and setting names, and of the words a setting takes. */
#include "config.h"

#include "commands.h"
#include "complete.h"
#include "settings.h"

#include <stdio.h>
#include <string.h>

#define BLANKS " \t"

/* Candidate i of what out completes: command i, setting i, or word i of the setting. */
static const char *candidate(const struct ui_completion *out, const struct dllm_sampler_params *s,
                             size_t i)
{
    switch (out->kind) {
    case UI_COMPLETE_COMMAND: return ui_command_name(i);
    case UI_COMPLETE_SETTING: return ui_settings_name(s, i);
    default: return ui_settings_value_word(s, out->setting, i);
    }
}

/*
 * What the input asks to complete: out->kind (and out->setting) and where its last word
 * starts, *at. False when it asks for nothing.
 */
static bool parse(const char *input, const struct dllm_sampler_params *s, struct ui_completion *out,
                  size_t *at)
{
    size_t i = strspn(input, BLANKS); /* where the command's '/' stands */
    if (input[i] != '/' || input[i + 1] == '/')
        return false;
    i++;
    out->kind = UI_COMPLETE_COMMAND;
    if (strncmp(input + i, "set", 3) == 0 && input[i + 3] && strchr(BLANKS, input[i + 3])) {
        i += 3 + strspn(input + i + 3, BLANKS);
        out->kind = UI_COMPLETE_SETTING;
        const size_t name = strcspn(input + i, BLANKS);
        if (input[i + name]) { /* the name is whole: its value is being typed */
            if (name >= sizeof out->setting)
                return false;
            memcpy(out->setting, input + i, name);
            out->setting[name] = '\0';
            if (!ui_settings_value_word(s, out->setting, 0))
                return false;
            i += name + strspn(input + i + name, BLANKS);
            out->kind = UI_COMPLETE_VALUE;
        }
    }
    *at = i;
    return input[i + strcspn(input + i, " \t\r\n")] == '\0'; /* one word, to the end */
}

bool ui_complete(const char *input, const struct dllm_sampler_params *s, struct ui_completion *out)
{
    *out = (struct ui_completion){0};
    const size_t len = strlen(input);
    size_t at;
    if (len + 32 >= UI_COMPLETE_MAX || !parse(input, s, out, &at)) /* 32: room for a name */
        return false;
    const char *word = input + at;
    const size_t typed = len - at;
    size_t common = 0; /* the length the candidates agree on */
    const char *first = NULL;
    for (size_t i = 0; candidate(out, s, i); i++) {
        const char *name = candidate(out, s, i);
        if (strncmp(name, word, typed) != 0)
            continue;
        if (!first) {
            first = name;
            common = strlen(name);
        }
        while (common > typed && strncmp(name, first, common) != 0)
            common--;
        const size_t used = strlen(out->names);
        snprintf(out->names + used, sizeof out->names - used, "%s%s%s", used ? "  " : "",
                 out->kind == UI_COMPLETE_COMMAND ? "/" : "", name);
        out->n++;
    }
    const size_t end = at + (first ? common : typed);
    memcpy(out->line, input, at);
    memcpy(out->line + at, first ? first : word, end - at);
    out->line[end] = '\0';
    if (out->n == 1)
        strcat(out->line, " ");
    return true;
}
