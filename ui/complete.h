/*
 * Tab completion in the input box: the name of the /command being typed, after "/set " the
 * name of the setting, and after "/set NAME " the value of a setting that takes words.
 */
#ifndef DLLM_UI_COMPLETE_H
#define DLLM_UI_COMPLETE_H

#include "dllm.h"

#include <stdbool.h>
#include <stddef.h>

#define UI_COMPLETE_MAX 256

enum ui_complete_kind {
    UI_COMPLETE_COMMAND, /* "/" and the start of a command's name */
    UI_COMPLETE_SETTING, /* "/set " and the start of a setting's name */
    UI_COMPLETE_VALUE,   /* "/set NAME " and the start of one of the words NAME takes */
};

struct ui_completion {
    enum ui_complete_kind kind;
    char setting[32];            /* UI_COMPLETE_VALUE: the setting's name */
    size_t n;                    /* how many names start with what was typed */
    char line[UI_COMPLETE_MAX];  /* the input, its last word completed as far as those names
                                    agree, with a space after it when only one does */
    char names[UI_COMPLETE_MAX]; /* those names, two spaces between them ("/save  /set") */
};

/*
 * Completes input, the whole text of the input box with the cursor at its end, when it is "/"
 * and the start of a command's name, "/set " and the start of the name of a setting the
 * sampler s takes, or "/set NAME " and the start of a word NAME takes as its value (blanks
 * before and between are kept). False when it is none of these (a number being typed, say),
 * or too long to complete: Tab then moves the focus.
 */
bool ui_complete(const char *input, const struct dllm_sampler_params *s, struct ui_completion *out);

#endif
