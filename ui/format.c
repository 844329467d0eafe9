/* Building text in fixed-size buffers. */
#include "config.h"

#include "format.h"

#include <stdarg.h>
#include <stdio.h>
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
