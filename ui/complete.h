/*
 * Tab completion in the input box: the name of the /command being typed, and after "/set " the
 * name of the setting.
 */
#ifndef DLLM_UI_COMPLETE_H
#define DLLM_UI_COMPLETE_H

#include "dllm.h"

#include <stdbool.h>
#include <stddef.h>

#define UI_COMPLETE_MAX 256

struct ui_completion {
    bool setting;                /* a setting's name (after "/set "), else a command's */
    size_t n;                    /* how many names start with what was typed */
    char line[UI_COMPLETE_MAX];  /* the input, its name completed as far as those names agree,
                                    with a space after it when only one does */
    char names[UI_COMPLETE_MAX]; /* those names, two spaces between them ("/save  /set") */
};

/*
 * Completes input, the whole text of the input box with the cursor at its end, when it is "/"
 * and the start of a command's name, or "/set " and the start of the name of a setting the
 * sampler s takes (blanks before either are kept). False when it is neither, or too long to
 * complete: Tab then moves the focus.
 */
bool ui_complete(const char *input, const struct dllm_sampler_params *s, struct ui_completion *out);

#endif
