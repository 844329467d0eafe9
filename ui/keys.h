/*
 * Keys and the key table. A key is a Unicode code point (typed text; Ctrl+A .. Ctrl+Z are
 * 1 .. 26) or one of the UI_KEY_* codes above Unicode, with UI_KEY_ALT added when Alt (or an
 * Esc prefix) was held. The table maps a key, in the pane that has the focus, to an action with
 * a description; the help screen is generated from it.
 */
#ifndef DLLM_UI_KEYS_H
#define DLLM_UI_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UI_KEY_ALT     0x40000000u /* added to a key pressed with Alt */
#define UI_KEY_CTRL(c) ((uint32_t)(c)&0x1F)

enum ui_key_code {
    UI_KEY_ENTER = 0x110000,
    UI_KEY_TAB,
    UI_KEY_BTAB, /* Shift+Tab */
    UI_KEY_ESC,
    UI_KEY_BACKSPACE,
    UI_KEY_DELETE,
    UI_KEY_INSERT,
    UI_KEY_UP,
    UI_KEY_DOWN,
    UI_KEY_LEFT,
    UI_KEY_RIGHT,
    UI_KEY_HOME,
    UI_KEY_END,
    UI_KEY_PGUP,
    UI_KEY_PGDN,
    UI_KEY_CTRL_LEFT,
    UI_KEY_CTRL_RIGHT,
    UI_KEY_F1,
    UI_KEY_F12 = UI_KEY_F1 + 11,
    UI_KEY_RESIZE,      /* the terminal changed size */
    UI_KEY_PASTE_BEGIN, /* bracketed paste: ESC [ 200 ~ */
    UI_KEY_PASTE_END,   /* ESC [ 201 ~ */
    UI_KEY_WHEEL_UP,    /* the mouse wheel, a notch up */
    UI_KEY_WHEEL_DOWN,
};

/* The panes that take the focus in turn (Tab). */
enum ui_focus {
    UI_FOCUS_INPUT,
    UI_FOCUS_CONVERSATION,
    UI_FOCUS_SETTINGS,
    UI_FOCUS_TIMING,
    UI_FOCUS_COUNT
};

enum ui_action {
    UI_ACT_NONE, /* not bound: typed text goes into the input */
    UI_ACT_HELP,
    UI_ACT_HELP_IF_EMPTY, /* help when the input is empty, else typed */
    UI_ACT_INTERRUPT,     /* cancel; a second press within a second quits */
    UI_ACT_CANCEL,
    UI_ACT_FOCUS_NEXT,
    UI_ACT_COMPLETE_OR_FOCUS, /* complete a /command's or setting's name, else UI_ACT_FOCUS_NEXT */
    UI_ACT_FOCUS_PREV,
    UI_ACT_PAGE_UP,
    UI_ACT_PAGE_DOWN,
    UI_ACT_REDRAW,
    UI_ACT_SUSPEND,        /* stop the program (Ctrl+Z): the shell's fg brings it back */
    UI_ACT_EDIT_EXTERNAL,  /* edit the input in the user's editor */
    UI_ACT_HISTORY_SEARCH, /* search the messages sent before (Ctrl+R) */
    UI_ACT_MOUSE,          /* the mouse wheel on or off (off: the terminal selects text) */
    UI_ACT_RAW,            /* answers as written or rendered as Markdown */
    UI_ACT_COPY,           /* copy the last answer to the clipboard */
    UI_ACT_SEND,
    UI_ACT_NEWLINE,
    UI_ACT_LEFT,
    UI_ACT_RIGHT,
    UI_ACT_WORD_LEFT,
    UI_ACT_WORD_RIGHT,
    UI_ACT_HOME,
    UI_ACT_END,
    UI_ACT_BACKSPACE,
    UI_ACT_DELETE,
    UI_ACT_EOF_OR_DELETE, /* quit when the input is empty, else delete */
    UI_ACT_KILL_END,
    UI_ACT_KILL_START,
    UI_ACT_KILL_WORD,
    UI_ACT_UP,
    UI_ACT_DOWN,
    UI_ACT_SCROLL_UP,
    UI_ACT_SCROLL_DOWN,
    UI_ACT_SCROLL_TOP,
    UI_ACT_SCROLL_BOTTOM,
    UI_ACT_WHEEL_UP, /* the conversation, UI_WHEEL_ROWS up */
    UI_ACT_WHEEL_DOWN,
    UI_ACT_SLIDER_PREV,
    UI_ACT_SLIDER_NEXT,
    UI_ACT_SLIDER_INC,
    UI_ACT_SLIDER_DEC,
    UI_ACT_SLIDER_APPLY,  /* apply the value typed into the selected slider */
    UI_ACT_FIND,          /* start a search: "/find " in the input */
    UI_ACT_FIND_OR_RIGHT, /* on an empty input UI_ACT_FIND, else UI_ACT_RIGHT */
    UI_ACT_FIND_NEXT,
    UI_ACT_FIND_PREV,
};

#define UI_WHEEL_ROWS 3 /* rows a notch of the mouse wheel scrolls */

/* The action of key in the focused pane, or UI_ACT_NONE. */
enum ui_action ui_keys_lookup(enum ui_focus focus, uint32_t key);

/*
 * Parses a key name: a single character ("a", "?", "é"), "Space", "Enter", "Tab", "Esc",
 * "Backspace", "Delete", "Insert", "Up", "Down", "Left", "Right", "Home", "End", "PgUp",
 * "PgDn", "F1" .. "F12", "S-Tab" (or "Shift+Tab"), "C-x" (or "Ctrl+x") for a letter x,
 * "C-Left" / "C-Right", or "WheelUp" / "WheelDown"; "M-" (or "Alt+") before any of them adds
 * Alt.
 */
bool ui_key_parse(const char *name, uint32_t *key);

/* The key's name as the help screen shows it: "Ctrl+C", "Alt+Enter", "PgUp", "?". */
void ui_key_name(uint32_t key, char *buf, size_t size);

/*
 * The help text: for each pane ("Everywhere" first) its keys, several keys for one action on
 * one line, with what they do from column UI_KEYS_HELP_COLUMN on. Truncated to size - 1 bytes.
 */
#define UI_KEYS_HELP_COLUMN 25
void ui_keys_help(char *buf, size_t size);

#endif
