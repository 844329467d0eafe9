/* Building text in fixed-size buffers. */
#ifndef DLLM_UI_FORMAT_H
#define DLLM_UI_FORMAT_H

#include <stddef.h>

/*
 * Appends printf-style text to the NUL-terminated string in buf (size bytes), truncating to
 * size - 1 bytes (possibly inside a UTF-8 sequence: keep such text ASCII or short).
 */
void ui_addf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A command's FILE argument arg[0 .. len-1] as a path in path (size bytes): "~/" stands for the
 * home folder ($HOME). */
void ui_file_path(const char *arg, size_t len, char *path, size_t size);

#endif
