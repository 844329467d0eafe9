/* Tab completion of command and setting names. */
#include "config.h"

#include "commands.h"
#include "complete.h"
#include "settings.h"

#include <stdio.h>
#include <string.h>

/* The name of candidate i: command i, or setting i of the sampler s. */
static const char *candidate(bool setting, const struct dllm_sampler_params *s, size_t i)
{
    return setting ? ui_settings_name(s, i) : ui_command_name(i);
}

/* Whether word[0 .. len-1] holds no blank, as the name being typed must not. */
static bool one_word(const char *word, size_t len)
{
    return strcspn(word, " \t\r\n") >= len;
}

bool ui_complete(const char *input, const struct dllm_sampler_params *s, struct ui_completion *out)
{
    const size_t len = strlen(input);
    size_t at = strspn(input, " \t"); /* where the command's '/' stands */
    if (len + 32 >= UI_COMPLETE_MAX || input[at] != '/' || input[at + 1] == '/') /* 32: a name */
        return false;
    at++;
    *out = (struct ui_completion){0};
    if (strncmp(input + at, "set", 3) == 0 && (input[at + 3] == ' ' || input[at + 3] == '\t')) {
        out->setting = true;
        at += 3 + strspn(input + at + 3, " \t");
    }
    const char *word = input + at;
    const size_t typed = len - at;
    if (!one_word(word, typed))
        return false;

    size_t common = 0; /* the length the candidates agree on */
    const char *first = NULL;
    for (size_t i = 0; candidate(out->setting, s, i); i++) {
        const char *name = candidate(out->setting, s, i);
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
                 out->setting ? "" : "/", name);
        out->n++;
    }
    memcpy(out->line, input, at);
    if (first)
        memcpy(out->line + at, first, common);
    else
        memcpy(out->line + at, word, typed);
    size_t end = at + (first ? common : typed);
    if (out->n == 1 && end + 1 < sizeof out->line)
        out->line[end++] = ' ';
    out->line[end] = '\0';
    return true;
}
