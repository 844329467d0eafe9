/* Building text in fixed-size buffers. */
#include "config.h"

#include "format.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ui_addf(char *buf, size_t size, const char *fmt, ...)
{
    size_t used = strnlen(buf, size);
    if (used + 1 >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, size - used, fmt, ap);
    va_end(ap);
}

void ui_file_path(const char *arg, size_t len, char *path, size_t size)
{
    const char *home = getenv("HOME");
    if (len >= 2 && arg[0] == '~' && arg[1] == '/' && home)
        snprintf(path, size, "%s%.*s", home, (int)(len - 1), arg + 1);
    else
        snprintf(path, size, "%.*s", (int)len, arg);
}
