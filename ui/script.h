/*
 * Key scripts for running dllm-tui headless (--script FILE): one command per line, blank lines
 * and lines starting with '#' ignored.
 *
 *   text STRING        types STRING (the rest of the line, as it is) one character at a time
 *   paste STRING       a bracketed paste of STRING, where \n, \t and \\ stand for a newline,
 *                      a tab and a backslash
 *   key NAME [COUNT]   presses a key COUNT times (default 1); NAME as ui_key_parse takes it:
 *                      a character, Enter, M-Enter, C-c, F1, PgUp, S-Tab, Space, ...
 *   resize COLSxROWS   the terminal changes size
 *   wait-idle          waits until no generation runs
 *   wait-step N        waits until the canvas has shown step N (counted from 1, as the status
 *                      bar does), or the generation has ended
 *   dump FILE          writes the screen as text to FILE now
 *   dump-styles FILE   writes the screen's styles to FILE, one letter per cell
 */
#ifndef DLLM_UI_SCRIPT_H
#define DLLM_UI_SCRIPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ui_script_op {
    UI_SCRIPT_TEXT,
    UI_SCRIPT_PASTE,
    UI_SCRIPT_KEY,
    UI_SCRIPT_RESIZE,
    UI_SCRIPT_WAIT_IDLE,
    UI_SCRIPT_WAIT_STEP,
    UI_SCRIPT_DUMP,
    UI_SCRIPT_DUMP_STYLES,
};

struct ui_script_cmd {
    enum ui_script_op op;
    int line;   /* in the script, from 1 */
    char *text; /* TEXT and PASTE: the characters (escapes decoded); DUMP: the file */
    size_t len;
    uint32_t key;   /* KEY */
    int count;      /* KEY: presses; WAIT_STEP: the step */
    int cols, rows; /* RESIZE */
};

struct ui_script {
    struct ui_script_cmd *cmds; /* [n] */
    size_t n;
};

/*
 * Parses a script. On failure returns false with the script unchanged and writes a message
 * such as "line 3: unknown key 'Entr'" to err (errno ENOMEM when memory ran out).
 */
bool ui_script_parse(const char *src, size_t len, struct ui_script *script, char *err, size_t size);

void ui_script_fini(struct ui_script *script);

#endif
