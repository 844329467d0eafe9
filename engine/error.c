#include "config.h"

#include "dllm.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum dllm_status dllm_error_set(struct dllm_error *err, enum dllm_status status, const char *fmt,
                                ...)
{
    if (!err)
        return status;
    err->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->text, sizeof err->text, fmt, ap);
    va_end(ap);
    return status;
}

void dllm_error_prefix(struct dllm_error *err, const char *fmt, ...)
{
    if (!err)
        return;
    char prefix[DLLM_ERROR_TEXT_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    char old[DLLM_ERROR_TEXT_MAX];
    memcpy(old, err->text, sizeof old);
    size_t n = strlen(prefix);
    if (n > sizeof err->text - 3)
        n = sizeof err->text - 3;
    memcpy(err->text, prefix, n);
    memcpy(err->text + n, ": ", 2);
    size_t room = sizeof err->text - n - 2;
    size_t m = strnlen(old, room - 1);
    memcpy(err->text + n + 2, old, m);
    err->text[n + 2 + m] = 0;
}

const char *dllm_status_str(enum dllm_status status)
{
    switch (status) {
    case DLLM_OK: return "ok";
    case DLLM_ERR_IO: return "input/output error";
    case DLLM_ERR_FORMAT: return "malformed input";
    case DLLM_ERR_UNSUPPORTED: return "unsupported";
    case DLLM_ERR_MISSING: return "missing";
    case DLLM_ERR_TYPE: return "wrong type";
    case DLLM_ERR_NOMEM: return "out of memory";
    case DLLM_ERR_ARG: return "invalid argument";
    case DLLM_ERR_CANCELLED: return "cancelled";
    case DLLM_ERR_DEVICE: return "GPU failure";
    }
    return "unknown status";
}

const char *dllm_version(void)
{
    return PACKAGE_VERSION;
}
