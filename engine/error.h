/* Error reporting inside the engine: fill a caller's struct dllm_error and return the status. */
#ifndef DLLM_ERROR_H
#define DLLM_ERROR_H

#include "dllm.h"

/* Records status and a printf-style message in err (which may be NULL); returns status. */
enum dllm_status dllm_error_set(struct dllm_error *err, enum dllm_status status, const char *fmt,
                                ...) __attribute__((format(printf, 3, 4)));

/* Prepends "prefix: " to the text already in err (which may be NULL). */
void dllm_error_prefix(struct dllm_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
