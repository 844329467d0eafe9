/*
 * Copying to the terminal's clipboard with OSC 52: the terminal (or tmux, with set-clipboard
 * on) takes "ESC ] 52 ; c ; <base64 of the text> BEL" as a request to set its clipboard, so
 * a copy works over ssh and needs no X or Wayland tool.
 */
#ifndef DLLM_UI_CLIPBOARD_H
#define DLLM_UI_CLIPBOARD_H

#include <stddef.h>

/*
 * The most text one copy sends: its base64 is 100000 bytes, about what terminals take in one
 * OSC 52 request (longer ones are dropped or cut by some, so the chat refuses them).
 */
#define UI_CLIPBOARD_MAX 75000

/*
 * The base64 (RFC 4648, with padding) of data[0 .. len-1] into out, which has room for
 * 4 * ((len + 2) / 3) + 1 bytes; returns the length written before the NUL.
 */
size_t ui_base64(const unsigned char *data, size_t len, char *out);

/* The OSC 52 sequence that sets the clipboard to text[0 .. len-1], malloc'd; NULL: no memory. */
char *ui_clipboard_osc52(const char *text, size_t len);

#endif
