/*
 * Tab completion in the input box: the name of the /command being typed, after "/set " the
 * name of the setting, after "/set NAME " the value of a setting that takes words, and after
 * "/save " or "/load " a file's name.
 */
#ifndef DLLM_UI_COMPLETE_H
#define DLLM_UI_COMPLETE_H

#include "dllm.h"

#include <stdbool.h>
#include <stddef.h>

#define UI_COMPLETE_MAX 1024

enum ui_complete_kind {
    UI_COMPLETE_COMMAND, /* "/" and the start of a command's name */
    UI_COMPLETE_SETTING, /* "/set " and the start of a setting's name */
    UI_COMPLETE_VALUE,   /* "/set NAME " and the start of one of the words NAME takes */
    UI_COMPLETE_FILE,    /* "/save " or "/load " and the start of a path */
};

struct ui_completion {
    enum ui_complete_kind kind;
    char setting[32];           /* UI_COMPLETE_VALUE: the setting's name */
    size_t n;                   /* how many names start with what was typed */
    char line[UI_COMPLETE_MAX]; /* the input, its last word completed as far as those names
                                   agree, with a space after it when only one does (not
                                   after a folder's '/') */
    char names[256];            /* those names, two spaces between them ("/save  /set"),
                                   ending in an ellipsis where more do not fit */
};

/*
 * Completes input, the whole text of the input box with the cursor at its end, when it is "/"
 * and the start of a command's name, "/set " and the start of the name of a setting the
 * sampler s takes, "/set NAME " and the start of a word NAME takes as its value, or "/save "
 * or "/load " and a path without blanks (a folder's entries sorted, hidden ones when the
 * name typed starts with '.', a folder's with a '/' after it; "~/" is $HOME). Blanks before
 * and between are kept. False when it is none of these (a number being typed, say), or too
 * long to complete: Tab then moves the focus.
 */
bool ui_complete(const char *input, const struct dllm_sampler_params *s, struct ui_completion *out);

#endif
