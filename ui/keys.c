/* Keys, their names, and the key table. */
#include "config.h"

#include "format.h"
#include "keys.h"
#include "utf8.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define ALL  ((1u << UI_FOCUS_COUNT) - 1)
#define IN   (1u << UI_FOCUS_INPUT)
#define CONV (1u << UI_FOCUS_CONVERSATION)
#define SET  (1u << UI_FOCUS_SETTINGS)
#define TIME (1u << UI_FOCUS_TIMING)

struct binding {
    unsigned panes; /* bit i: bound while pane i has the focus */
    uint32_t key;
    enum ui_action action;
    const char *help;
};

/* Looked up in order: the first binding for the key in the focused pane wins. */
static const struct binding table[] = {
    {ALL, UI_KEY_F1, UI_ACT_HELP, "show or close this help"},
    {ALL, UI_KEY_CTRL('c'), UI_ACT_INTERRUPT,
     "cancel the generation (keeps the partial answer); twice within 1 s: quit"},
    {ALL, UI_KEY_ESC, UI_ACT_CANCEL, "cancel the generation; close the help; end a search"},
    {IN, UI_KEY_TAB, UI_ACT_COMPLETE_OR_FOCUS,
     "complete the /command, /set's setting or word value, or /save's or /load's file being "
     "typed; else focus the next pane"},
    {ALL, UI_KEY_TAB, UI_ACT_FOCUS_NEXT, "focus the next pane"},
    {ALL, UI_KEY_BTAB, UI_ACT_FOCUS_PREV, "focus the previous pane"},
    {ALL, UI_KEY_PGUP, UI_ACT_PAGE_UP,
     "scroll the focused pane up a page (the sliders: the selected one up 10)"},
    {ALL, UI_KEY_PGDN, UI_ACT_PAGE_DOWN,
     "scroll down a page (at the bottom it follows; the sliders: down 10)"},
    {ALL, UI_KEY_CTRL('l'), UI_ACT_REDRAW, "redraw the screen"},
    {ALL, UI_KEY_CTRL('z'), UI_ACT_SUSPEND, "suspend to the shell (fg comes back)"},
    {ALL, UI_KEY_F1 + 1, UI_ACT_RAW, "answers as written, or rendered as Markdown again"},
    {ALL, UI_KEY_F1 + 2, UI_ACT_COPY, "copy the last answer to the clipboard (as /copy)"},
    {ALL, UI_KEY_F1 + 3, UI_ACT_MOUSE,
     "the mouse wheel on or off (while on, Shift+drag selects text in most terminals)"},
    {ALL, UI_KEY_WHEEL_UP, UI_ACT_WHEEL_UP, "scroll the conversation up 3 lines"},
    {ALL, UI_KEY_WHEEL_DOWN, UI_ACT_WHEEL_DOWN,
     "scroll the conversation down 3 lines (at the bottom it follows)"},

    {IN, UI_KEY_ENTER, UI_ACT_SEND, "send the message, or run the /command"},
    {IN, UI_KEY_ENTER | UI_KEY_ALT, UI_ACT_NEWLINE, "insert a newline"},
    {IN, UI_KEY_CTRL('j'), UI_ACT_NEWLINE, "insert a newline"},
    {IN, UI_KEY_UP, UI_ACT_UP, "line up; on the first line, the previous message sent"},
    {IN, UI_KEY_CTRL('p'), UI_ACT_UP, "line up; on the first line, the previous message sent"},
    {IN, UI_KEY_DOWN, UI_ACT_DOWN, "line down; on the last line, the next message sent"},
    {IN, UI_KEY_CTRL('n'), UI_ACT_DOWN, "line down; on the last line, the next message sent"},
    {IN, UI_KEY_LEFT, UI_ACT_LEFT, "character left"},
    {IN, UI_KEY_CTRL('b'), UI_ACT_LEFT, "character left"},
    {IN, UI_KEY_RIGHT, UI_ACT_RIGHT, "character right"},
    {IN, UI_KEY_CTRL('f'), UI_ACT_FIND_OR_RIGHT,
     "character right; on an empty input, search the conversation (/find)"},
    {IN, UI_KEY_CTRL_LEFT, UI_ACT_WORD_LEFT, "word left"},
    {IN, 'b' | UI_KEY_ALT, UI_ACT_WORD_LEFT, "word left"},
    {IN, UI_KEY_CTRL_RIGHT, UI_ACT_WORD_RIGHT, "word right"},
    {IN, 'f' | UI_KEY_ALT, UI_ACT_WORD_RIGHT, "word right"},
    {IN, UI_KEY_HOME, UI_ACT_HOME, "start of the line"},
    {IN, UI_KEY_CTRL('a'), UI_ACT_HOME, "start of the line"},
    {IN, UI_KEY_END, UI_ACT_END, "end of the line"},
    {IN, UI_KEY_CTRL('e'), UI_ACT_END, "end of the line"},
    {IN, UI_KEY_BACKSPACE, UI_ACT_BACKSPACE, "delete the character before the cursor"},
    {IN, UI_KEY_DELETE, UI_ACT_DELETE, "delete the character at the cursor"},
    {IN, UI_KEY_CTRL('d'), UI_ACT_EOF_OR_DELETE,
     "quit when the input is empty (an unsaved conversation asks first), else delete"},
    {IN, UI_KEY_CTRL('k'), UI_ACT_KILL_END, "delete to the end of the line"},
    {IN, UI_KEY_CTRL('u'), UI_ACT_KILL_START, "delete to the start of the line"},
    {IN, UI_KEY_CTRL('w'), UI_ACT_KILL_WORD, "delete the word before the cursor"},
    {IN, UI_KEY_CTRL('r'), UI_ACT_HISTORY_SEARCH,
     "search the messages sent before: type part of one (Ctrl+R again: an older one; Enter "
     "takes it; Esc drops the search)"},
    {IN, UI_KEY_CTRL('o'), UI_ACT_EDIT_EXTERNAL,
     "edit the input in $VISUAL or $EDITOR (else vi); Enter then sends it"},
    {IN, '?', UI_ACT_HELP_IF_EMPTY, "this help, when the input is empty"},

    {CONV, UI_KEY_UP, UI_ACT_SCROLL_UP, "scroll up a line"},
    {CONV, UI_KEY_DOWN, UI_ACT_SCROLL_DOWN, "scroll down a line"},
    {CONV, UI_KEY_HOME, UI_ACT_SCROLL_TOP, "to the start of the conversation"},
    {CONV, UI_KEY_END, UI_ACT_SCROLL_BOTTOM, "to the end (and follow new text)"},
    {CONV, UI_KEY_CTRL('f'), UI_ACT_FIND, "search the conversation (/find)"},
    {CONV, 'n', UI_ACT_FIND_NEXT, "the next match of the search"},
    {CONV, 'N', UI_ACT_FIND_PREV, "the previous match of the search"},

    {SET, UI_KEY_LEFT, UI_ACT_SLIDER_PREV, "select the slider to the left"},
    {SET, UI_KEY_RIGHT, UI_ACT_SLIDER_NEXT, "select the slider to the right"},
    {SET, UI_KEY_UP, UI_ACT_SLIDER_INC, "raise the selected slider a notch"},
    {SET, '+', UI_ACT_SLIDER_INC, "raise the selected slider a notch"},
    {SET, UI_KEY_DOWN, UI_ACT_SLIDER_DEC, "lower the selected slider a notch"},
    {SET, '-', UI_ACT_SLIDER_DEC, "lower the selected slider a notch"},
    {SET, UI_KEY_ENTER, UI_ACT_SLIDER_APPLY,
     "apply the value typed into the selected slider (digits, '.'; 0 is off; Esc drops it)"},

    {TIME, UI_KEY_UP, UI_ACT_SCROLL_UP, "scroll the steps up a line"},
    {TIME, UI_KEY_DOWN, UI_ACT_SCROLL_DOWN, "scroll the steps down a line"},
    {TIME, UI_KEY_HOME, UI_ACT_SCROLL_TOP, "to the first step"},
    {TIME, UI_KEY_END, UI_ACT_SCROLL_BOTTOM, "to the latest step (and follow)"},
    {CONV | SET | TIME, '?', UI_ACT_HELP, "this help"},
};
static const size_t n_table = sizeof table / sizeof table[0];

enum ui_action ui_keys_lookup(enum ui_focus focus, uint32_t key)
{
    for (size_t i = 0; i < n_table; i++)
        if ((table[i].panes & (1u << focus)) && table[i].key == key)
            return table[i].action;
    return UI_ACT_NONE;
}

/* Names of the UI_KEY_* codes from UI_KEY_ENTER to UI_KEY_CTRL_RIGHT, in order. */
static const char *const special[] = {
    "Enter", "Tab",   "S-Tab", "Esc", "Backspace", "Delete", "Insert", "Up",      "Down",
    "Left",  "Right", "Home",  "End", "PgUp",      "PgDn",   "C-Left", "C-Right",
};
static const size_t n_special = sizeof special / sizeof special[0];

/* Parses a name without the Alt prefix. */
static bool parse_plain(const char *name, uint32_t *key)
{
    if (strcasecmp(name, "Shift+Tab") == 0 || strcasecmp(name, "BTab") == 0) {
        *key = UI_KEY_BTAB;
        return true;
    }
    if (strcasecmp(name, "Ctrl+Left") == 0 || strcasecmp(name, "Ctrl+Right") == 0) {
        *key = name[5] == 'L' || name[5] == 'l' ? UI_KEY_CTRL_LEFT : UI_KEY_CTRL_RIGHT;
        return true;
    }
    if (strcasecmp(name, "WheelUp") == 0 || strcasecmp(name, "WheelDown") == 0) {
        *key = name[5] == 'U' || name[5] == 'u' ? UI_KEY_WHEEL_UP : UI_KEY_WHEEL_DOWN;
        return true;
    }
    for (size_t i = 0; i < n_special; i++) {
        if (strcasecmp(name, special[i]) == 0) {
            *key = UI_KEY_ENTER + (uint32_t)i;
            return true;
        }
    }
    if (strcasecmp(name, "Space") == 0) {
        *key = ' ';
        return true;
    }
    if ((name[0] == 'F' || name[0] == 'f') && name[1] >= '1' && name[1] <= '9') {
        int n = name[1] - '0';
        if (name[2] >= '0' && name[2] <= '9' && !name[3])
            n = n * 10 + (name[2] - '0');
        else if (name[2])
            return false;
        if (n < 1 || n > 12)
            return false;
        *key = UI_KEY_F1 + (uint32_t)(n - 1);
        return true;
    }
    const char *rest = NULL;
    if (strncmp(name, "C-", 2) == 0)
        rest = name + 2;
    else if (strncasecmp(name, "Ctrl+", 5) == 0)
        rest = name + 5;
    if (rest) {
        char c = rest[0];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) || rest[1])
            return false;
        *key = UI_KEY_CTRL(c);
        return true;
    }
    uint32_t cp;
    size_t n = strlen(name);
    if (n == 0 || ui_utf8_decode(name, n, &cp) != n || cp == UI_REPLACEMENT || cp < 0x20 ||
        cp == 0x7F)
        return false;
    *key = cp;
    return true;
}

bool ui_key_parse(const char *name, uint32_t *key)
{
    uint32_t alt = 0;
    if (strncmp(name, "M-", 2) == 0 && name[2]) {
        alt = UI_KEY_ALT;
        name += 2;
    } else if (strncasecmp(name, "Alt+", 4) == 0 && name[4]) {
        alt = UI_KEY_ALT;
        name += 4;
    }
    if (!parse_plain(name, key))
        return false;
    *key |= alt;
    return true;
}

void ui_key_name(uint32_t key, char *buf, size_t size)
{
    const char *alt = key & UI_KEY_ALT ? "Alt+" : "";
    uint32_t k = key & ~UI_KEY_ALT;
    if (k == UI_KEY_BTAB) {
        snprintf(buf, size, "%sShift+Tab", alt);
    } else if (k == UI_KEY_CTRL_LEFT || k == UI_KEY_CTRL_RIGHT) {
        snprintf(buf, size, "%sCtrl+%s", alt, k == UI_KEY_CTRL_LEFT ? "Left" : "Right");
    } else if (k == UI_KEY_WHEEL_UP || k == UI_KEY_WHEEL_DOWN) {
        snprintf(buf, size, "%sWheel%s", alt, k == UI_KEY_WHEEL_UP ? "Up" : "Down");
    } else if (k >= UI_KEY_ENTER && k < UI_KEY_ENTER + n_special) {
        snprintf(buf, size, "%s%s", alt, special[k - UI_KEY_ENTER]);
    } else if (k >= UI_KEY_F1 && k <= UI_KEY_F12) {
        snprintf(buf, size, "%sF%u", alt, k - UI_KEY_F1 + 1);
    } else if (k >= 1 && k <= 26) {
        snprintf(buf, size, "%sCtrl+%c", alt, 'A' + (int)k - 1);
    } else if (k == ' ') {
        snprintf(buf, size, "%sSpace", alt);
    } else if (k < 0x110000) {
        char enc[5] = {0};
        ui_utf8_encode(k, enc);
        snprintf(buf, size, "%s%s", alt, enc);
    } else {
        snprintf(buf, size, "%s?", alt);
    }
}

/* Whether a binding is listed in the help section of panes (ALL: "Everywhere"). */
static bool in_section(const struct binding *b, unsigned panes)
{
    return panes == ALL ? b->panes == ALL : (b->panes & panes) && b->panes != ALL;
}

/* Appends the section of the bindings of panes to buf: one line per action. */
static void help_section(char *buf, size_t size, const char *title, unsigned panes)
{
    ui_addf(buf, size, "%s\n", title);
    for (size_t i = 0; i < n_table; i++) {
        if (!in_section(&table[i], panes))
            continue;
        bool seen = false; /* listed with an earlier binding of the same action */
        for (size_t j = 0; j < i && !seen; j++)
            seen = table[j].action == table[i].action && in_section(&table[j], panes);
        if (seen)
            continue;
        char keys[64] = "";
        for (size_t j = i; j < n_table; j++) {
            if (table[j].action != table[i].action || !in_section(&table[j], panes))
                continue;
            char name[24];
            ui_key_name(table[j].key, name, sizeof name);
            ui_addf(keys, sizeof keys, "%s%s", keys[0] ? ", " : "", name);
        }
        ui_addf(buf, size, "  %-*s %s\n", UI_KEYS_HELP_COLUMN - 3, keys, table[i].help);
    }
}

void ui_keys_help(char *buf, size_t size)
{
    buf[0] = '\0';
    help_section(buf, size, "Everywhere", ALL);
    help_section(buf, size, "Input box", IN);
    help_section(buf, size, "Conversation", CONV);
    help_section(buf, size, "Settings", SET);
    help_section(buf, size, "Timing", TIME);
}
