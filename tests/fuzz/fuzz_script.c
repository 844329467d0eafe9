/*
 * libFuzzer target: dllm-tui's --script language (ui/script.c, with key names through
 * ui/keys.c) on arbitrary bytes. A script that parses must describe commands whose fields are
 * in their documented ranges.
 */
#include "fuzz.h"
#include "script.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ui_script s;
    char err[256];
    if (!ui_script_parse((const char *)data, size, &s, err, sizeof err))
        return 0;
    fuzz_accepted++;
    int last = 0;
    for (size_t i = 0; i < s.n; i++) {
        const struct ui_script_cmd *c = &s.cmds[i];
        if (c->line <= last || (size_t)c->line > size)
            abort();
        last = c->line;
        switch (c->op) {
        case UI_SCRIPT_TEXT:
        case UI_SCRIPT_PASTE:
        case UI_SCRIPT_DUMP:
        case UI_SCRIPT_DUMP_STYLES:
            if (!c->text || c->len > size)
                abort();
            break;
        case UI_SCRIPT_KEY:
        case UI_SCRIPT_WAIT_STEP:
            if (c->count < 1)
                abort();
            break;
        case UI_SCRIPT_RESIZE:
            if (c->cols < 1 || c->rows < 1 || c->cols > 1000 || c->rows > 1000)
                abort();
            break;
        case UI_SCRIPT_WAIT_IDLE: break;
        default: abort();
        }
    }
    ui_script_fini(&s);
    return 0;
}
