/*
 * Replacing a file whole: the content goes to a temporary file beside it, which is renamed
 * over it only once it is completely written, so a failed save leaves the old file as it was
 * and never a half-written one.
 */
#ifndef DLLM_UI_SAVEFILE_H
#define DLLM_UI_SAVEFILE_H

#include <stdbool.h>
#include <stdio.h>

/* Writes a file's content to f; false when that failed (errno set). */
typedef bool (*ui_save_fn)(FILE *f, const void *ctx);

/*
 * Creates or replaces path with what write(f, ctx) writes. False with errno set when the file
 * could not be written; the temporary file is removed then.
 */
bool ui_save_file(const char *path, ui_save_fn write, const void *ctx);

#endif
