/* Tab completion of command and setting names, a setting's words, and file names. */
#include "config.h"

#include "commands.h"
#include "complete.h"
#include "format.h"
#include "settings.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define BLANKS    " \t"
#define MAX_FILES 4096 /* a folder's entries looked at, at the most */

/* The names a word may complete to: from a function of an index, or a list of strings. */
struct candidates {
    const struct ui_completion *out;
    const struct dllm_sampler_params *s;
    char **files; /* UI_COMPLETE_FILE: the folder's entries, sorted, a folder's with a '/' */
    size_t n_files;
};

/* Candidate i, or NULL past the last. */
static const char *candidate(const struct candidates *c, size_t i)
{
    switch (c->out->kind) {
    case UI_COMPLETE_COMMAND: return ui_command_name(i);
    case UI_COMPLETE_SETTING: return ui_settings_name(c->s, i);
    case UI_COMPLETE_VALUE: return ui_settings_value_word(c->s, c->out->setting, i);
    default: return i < c->n_files ? c->files[i] : NULL;
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
    const size_t cmd = strcspn(input + i, BLANKS);
    if (input[i + cmd] && cmd == 3 && strncmp(input + i, "set", 3) == 0) {
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
    } else if (input[i + cmd] && cmd == 4 &&
               (strncmp(input + i, "save", 4) == 0 || strncmp(input + i, "load", 4) == 0)) {
        i += 4 + strspn(input + i + 4, BLANKS);
        out->kind = UI_COMPLETE_FILE;
    }
    *at = i;
    return input[i + strcspn(input + i, " \t\r\n")] == '\0'; /* one word, to the end */
}

/* The length of the folder part of the path word[0 .. len-1]: up to its last '/', or 0. */
static size_t dir_part(const char *word, size_t len)
{
    while (len > 0 && word[len - 1] != '/')
        len--;
    return len;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The entries of the folder dir[0 .. dir_len-1] (a path as typed, ending in '/'; empty: the
 * current folder) that start with base[0 .. base_len-1], sorted, a folder's name ending in '/';
 * hidden ones only when base starts with '.'. Into c->files; false when memory ran out.
 */
static bool list_files(struct candidates *c, const char *dir_typed, size_t dir_len,
                       const char *base, size_t base_len)
{
    char dir[UI_COMPLETE_MAX + 512];
    if (dir_len)
        ui_file_path(dir_typed, dir_len, dir, sizeof dir);
    else
        snprintf(dir, sizeof dir, "./");
    DIR *d = opendir(dir);
    if (!d)
        return true; /* nothing to list: no candidates */
    c->files = malloc(MAX_FILES * sizeof *c->files);
    struct dirent *e;
    while (c->files && c->n_files < MAX_FILES && (e = readdir(d))) {
        const char *name = e->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
            (name[0] == '.' && base[0] != '.') || strncmp(name, base, base_len) != 0)
            continue;
        char full[sizeof dir + 256];
        struct stat st;
        snprintf(full, sizeof full, "%s%s", dir, name);
        const bool folder = stat(full, &st) == 0 && S_ISDIR(st.st_mode);
        char *copy = malloc(strlen(name) + 2);
        if (!copy)
            break;
        sprintf(copy, "%s%s", name, folder ? "/" : "");
        c->files[c->n_files++] = copy;
    }
    closedir(d);
    if (c->files)
        qsort(c->files, c->n_files, sizeof *c->files, by_name);
    return c->files != NULL;
}

bool ui_complete(const char *input, const struct dllm_sampler_params *s, struct ui_completion *out)
{
    *out = (struct ui_completion){0};
    const size_t len = strlen(input);
    size_t at;
    if (len + 1 >= UI_COMPLETE_MAX || !parse(input, s, out, &at))
        return false;
    struct candidates c = {out, s, NULL, 0};
    const char *word = input + at;
    size_t typed = len - at;
    size_t keep = at; /* the input kept as typed; the candidates complete what follows */
    if (out->kind == UI_COMPLETE_FILE) {
        const size_t dir_len = dir_part(word, typed);
        if (!list_files(&c, word, dir_len, word + dir_len, typed - dir_len))
            return false;
        keep += dir_len;
        word += dir_len;
        typed -= dir_len;
    }
    size_t common = 0; /* the length the candidates agree on */
    const char *first = NULL;
    for (size_t i = 0; candidate(&c, i); i++) {
        const char *name = candidate(&c, i);
        if (strncmp(name, word, typed) != 0 || keep + strlen(name) + 2 > sizeof out->line)
            continue;
        if (!first) {
            first = name;
            common = strlen(name);
        }
        while (common > typed && strncmp(name, first, common) != 0)
            common--;
        const size_t used = strlen(out->names);
        if (used + strlen(name) + 4 < sizeof out->names)
            snprintf(out->names + used, sizeof out->names - used, "%s%s%s", used ? "  " : "",
                     out->kind == UI_COMPLETE_COMMAND ? "/" : "", name);
        else if (used + 6 <= sizeof out->names && !strstr(out->names, "\u2026"))
            strcat(out->names, "  \u2026");
        out->n++;
    }
    const size_t end = keep + (first ? common : typed);
    memcpy(out->line, input, keep);
    memcpy(out->line + keep, first ? first : word, end - keep);
    out->line[end] = '\0';
    if (out->n == 1 && out->line[end - 1] != '/')
        strcat(out->line, " ");
    for (size_t i = 0; i < c.n_files; i++)
        free(c.files[i]);
    free(c.files);
    return true;
}
