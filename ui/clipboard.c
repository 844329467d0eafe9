/* OSC 52 clipboard requests. */
#include "config.h"

#include "clipboard.h"

#include <stdlib.h>
#include <string.h>

size_t ui_base64(const unsigned char *data, size_t len, char *out)
{
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        /* Three bytes (zeros past the end) make four 6-bit digits; '=' pads a short group. */
        const unsigned long v = (unsigned long)data[i] << 16 |
                                (i + 1 < len ? (unsigned long)data[i + 1] << 8 : 0) |
                                (i + 2 < len ? data[i + 2] : 0);
        out[o++] = digits[v >> 18 & 63];
        out[o++] = digits[v >> 12 & 63];
        out[o++] = i + 1 < len ? digits[v >> 6 & 63] : '=';
        out[o++] = i + 2 < len ? digits[v & 63] : '=';
    }
    out[o] = '\0';
    return o;
}

char *ui_clipboard_osc52(const char *text, size_t len)
{
    static const char head[] = "\033]52;c;", tail[] = "\a";
    char *seq = malloc(strlen(head) + 4 * ((len + 2) / 3) + strlen(tail) + 1);
    if (!seq)
        return NULL;
    strcpy(seq, head);
    size_t n = strlen(head) + ui_base64((const unsigned char *)text, len, seq + strlen(head));
    strcpy(seq + n, tail);
    return seq;
}
