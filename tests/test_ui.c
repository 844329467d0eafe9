/*
 * Tests of the terminal UI's pure modules (ui/): UTF-8 glyphs, wrapping mixed-width text,
 * the line editor and its history, scrollback maths, canvas-to-cells rendering, the sliders,
 * slash commands, the key table, the transcript and its Markdown, the timing pane's sparkline
 * and the frame slot. Every expected value below was worked out by hand from the rules in the
 * modules' headers (widths from Unicode: CJK and emoji 2 columns, combining marks 0).
 */
#include "config.h"

#include "app.h"
#include "canvas.h"
#include "clipboard.h"
#include "commands.h"
#include "complete.h"
#include "editor.h"
#include "find.h"
#include "fixtures.h"
#include "frame.h"
#include "history.h"
#include "jsonl.h"
#include "keys.h"
#include "layout.h"
#include "markdown.h"
#include "screen.h"
#include "script.h"
#include "scrollback.h"
#include "settings.h"
#include "timing.h"
#include "transcript.h"
#include "ui_mock_engine.h"
#include "utf8.h"
#include "wrap.h"

#include <check.h>
#include <errno.h>
#include <locale.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- UTF-8 -------------------------------------------------------------------------------- */

static const struct {
    const char *bytes;
    size_t n;
    uint32_t cp;
    size_t len;
} decodes[] = {
    {"A", 1, 0x41, 1},
    {"\xc3\xa9", 2, 0xE9, 2},
    {"\xe4\xb8\x96", 3, 0x4E16, 3},
    {"\xf0\x9f\x98\x80", 4, 0x1F600, 4},
    {"\xc0\x80", 2, UI_REPLACEMENT, 1},         /* C0 never starts a sequence */
    {"\xe4\xb8", 2, UI_REPLACEMENT, 2},         /* truncated: both bytes are one bad unit */
    {"\xe4\x41", 2, UI_REPLACEMENT, 1},         /* the A after a lead byte is its own */
    {"\xed\xa0\x80", 3, UI_REPLACEMENT, 1},     /* a surrogate */
    {"\xf4\x90\x80\x80", 4, UI_REPLACEMENT, 1}, /* past U+10FFFF */
    {"\x80", 1, UI_REPLACEMENT, 1},
    {"\xf0\x9f\x98\x41", 4, UI_REPLACEMENT, 3},
    {"\xe0\x9f\x80", 3, UI_REPLACEMENT, 1}, /* overlong */
};

START_TEST(test_decode)
{
    uint32_t cp;
    size_t len = ui_utf8_decode(decodes[_i].bytes, decodes[_i].n, &cp);
    ck_assert_uint_eq(cp, decodes[_i].cp);
    ck_assert_uint_eq(len, decodes[_i].len);
}
END_TEST

START_TEST(test_encode)
{
    static const uint32_t cps[] = {0x41, 0xE9, 0x4E16, 0x1F600, 0x10FFFF};
    for (int i = 0; i < N_OF(cps); i++) {
        char buf[4];
        size_t n = ui_utf8_encode(cps[i], buf);
        uint32_t back;
        ck_assert_uint_eq(ui_utf8_decode(buf, n, &back), n);
        ck_assert_uint_eq(back, cps[i]);
    }
}
END_TEST

START_TEST(test_glyphs)
{
    struct ui_glyph g;
    /* e + COMBINING ACUTE: one glyph of 3 bytes, 1 column. */
    ck_assert_uint_eq(ui_glyph_next("e\xcc\x81x", 4, 0, &g), 3);
    ck_assert_uint_eq(g.ch[0], 'e');
    ck_assert_uint_eq(g.ch[1], 0x301);
    ck_assert_int_eq(g.width, 1);
    /* A tab at column 3 reaches the stop at 8. */
    ui_glyph_next("\t", 1, 3, &g);
    ck_assert_int_eq(g.width, 5);
    ck_assert(g.space);
    ck_assert_uint_eq(g.ch[0], ' ');
    /* CJK is two columns. */
    ui_glyph_next("\xe4\xb8\x96", 3, 0, &g);
    ck_assert_int_eq(g.width, 2);
    /* A control character shows as U+FFFD. */
    ui_glyph_next("\x01", 1, 0, &g);
    ck_assert_uint_eq(g.ch[0], UI_REPLACEMENT);
    ck_assert_int_eq(g.width, 1);
    /* A mark with no base sits on a space. */
    ui_glyph_next("\xcc\x81", 2, 0, &g);
    ck_assert_uint_eq(g.ch[0], ' ');
    ck_assert_uint_eq(g.ch[1], 0x301);
    ck_assert_int_eq(g.width, 1);
    /* A newline is zero columns and ends the row. */
    ui_glyph_next("\n", 1, 0, &g);
    ck_assert(g.newline);
    ck_assert_int_eq(g.width, 0);
    /* a, CJK, b, emoji, c: 1 + 2 + 1 + 2 + 1. */
    ck_assert_int_eq(ui_text_width("a\xe4\xb8\x96"
                                   "b\xf0\x9f\x98\x80"
                                   "c",
                                   10),
                     7);
}
END_TEST

/* ---- wrapping ----------------------------------------------------------------------------- */

#define CJK_SHI "\xe4\xb8\x96" /* 世, 2 columns */
#define CJK_JIE "\xe7\x95\x8c" /* 界, 2 columns */
#define E_ACUTE "e\xcc\x81"    /* e + combining acute, 1 column */

static const struct {
    const char *text;
    int cols, hang;
    size_t n;
    struct ui_row rows[4];
} wraps[] = {
    /* Breaks after the space; the space stays on the first row. */
    {"hello world", 8, 0, 2, {{0, 6, 6, 0}, {6, 11, 5, 0}}},
    /* A word longer than the row breaks inside. */
    {"abcdefghij", 4, 0, 3, {{0, 4, 4, 0}, {4, 8, 4, 0}, {8, 10, 2, 0}}},
    /* A wide character that would overflow moves, at the space before it. */
    {"ab " CJK_SHI CJK_JIE, 4, 0, 2, {{0, 3, 3, 0}, {3, 9, 4, 0}}},
    /* ... and with no space, where it stands. */
    {"a" CJK_SHI, 2, 0, 2, {{0, 1, 1, 0}, {1, 4, 2, 0}}},
    /* Newlines, including an empty line and a final one. */
    {"ab\n\ncd\n", 10, 0, 4, {{0, 2, 2, 0}, {3, 3, 0, 0}, {4, 6, 2, 0}, {7, 7, 0, 0}}},
    /* A space that overflows ends the row and is not drawn. */
    {"abcd efg", 4, 0, 2, {{0, 4, 4, 0}, {5, 8, 3, 0}}},
    /* Marks stay with their base. */
    {E_ACUTE E_ACUTE E_ACUTE, 2, 0, 2, {{0, 6, 2, 0}, {6, 9, 1, 0}}},
    {"", 5, 0, 1, {{0, 0, 0, 0}}},
    /* A tab from column 1 reaches column 8; in 5 columns it is cut at the row's end. */
    {"a\tb", 20, 0, 1, {{0, 3, 9, 0}}},
    {"a\tb", 5, 0, 2, {{0, 2, 5, 0}, {2, 3, 1, 0}}},
    /* A hanging indent: the rows that continue a line are 2 narrower and hang 2; a newline
       starts a line again. */
    {"aaaa bbbb cccc dddd eeee\nff", 18, 2, 3, {{0, 15, 15, 0}, {15, 24, 9, 2}, {25, 27, 2, 0}}},
    {"aaaa bbbb cccc dddd", 18, 2, 2, {{0, 15, 15, 0}, {15, 19, 4, 2}}},
    /* "eeee ffff gggg hhhh" would fit a row of 20, not one of 20 - 4 */
    {"aaaa bbbb cccc dddd eeee ffff gggg hhhh",
     20,
     4,
     3,
     {{0, 20, 20, 0}, {20, 35, 15, 4}, {35, 39, 4, 4}}},
    /* A hang that would leave fewer than UI_WRAP_HANG_MIN columns is dropped. */
    {"aaaa bbbb cccc", 10, 2, 2, {{0, 10, 10, 0}, {10, 14, 4, 0}}},
    /* UI_WRAP_HANG_ITEMS: a list item continues under its text, each line by its own marker;
       an indented line under its indent; "3.14" is no marker. */
    {"- aaaa bbbb cccc dddd eeee", 18, UI_WRAP_HANG_ITEMS, 2, {{0, 17, 17, 0}, {17, 26, 9, 2}}},
    {"1. aaaa bbbb cccc dddd\n  \u2022 eeee ffff gggg hhhh",
     20,
     UI_WRAP_HANG_ITEMS,
     4,
     {{0, 18, 18, 0}, {18, 22, 4, 3}, {23, 44, 19, 0}, {44, 48, 4, 4}}},
    {"    aaaa bbbb cccc dddd", 20, UI_WRAP_HANG_ITEMS, 2, {{0, 19, 19, 0}, {19, 23, 4, 4}}},
    {"3.14 aaaa bbbb cccc dddd", 18, UI_WRAP_HANG_ITEMS, 2, {{0, 15, 15, 0}, {15, 24, 9, 0}}},
    /* ... and like a fixed hang, not where that leaves fewer than UI_WRAP_HANG_MIN columns. */
    {"- aaaa bbbb cccc", 12, UI_WRAP_HANG_ITEMS, 2, {{0, 12, 12, 0}, {12, 16, 4, 0}}},
};

/* ui_wrap_chars: rows break where they fill; spaces are ordinary characters. */
START_TEST(test_wrap_chars)
{
    struct ui_row rows[4];
    const char *t = "a bcd";
    ck_assert_uint_eq(ui_wrap(t, 5, 3, rows, 4), 2);
    ck_assert_uint_eq(rows[0].end, 2); /* words: "a " then "bcd" */
    ck_assert_uint_eq(ui_wrap_chars(t, 5, 3, rows, 4), 2);
    ck_assert_uint_eq(rows[0].end, 3); /* characters: "a b" then "cd" */
    ck_assert_int_eq(rows[0].width, 3);
    ck_assert_uint_eq(rows[1].start, 3);
    /* A space at the end of a full row starts the next one instead of vanishing. */
    const char *u = "abc d";
    ck_assert_uint_eq(ui_wrap_chars(u, 5, 3, rows, 4), 2);
    ck_assert_uint_eq(rows[1].start, 3);
    ck_assert_int_eq(rows[1].width, 2);
    /* Wide characters still never split. */
    const char *v = "ab" CJK_SHI;
    ck_assert_uint_eq(ui_wrap_chars(v, strlen(v), 3, rows, 4), 2);
    ck_assert_uint_eq(rows[1].start, 2);
}
END_TEST

START_TEST(test_wrap)
{
    struct ui_row rows[8];
    const char *t = wraps[_i].text;
    size_t n = ui_wrap_hang(t, strlen(t), wraps[_i].cols, wraps[_i].hang, rows, 8);
    ck_assert_uint_eq(n, wraps[_i].n);
    for (size_t r = 0; r < n; r++) {
        const struct ui_row *want = &wraps[_i].rows[r];
        ck_assert_msg(rows[r].start == want->start && rows[r].end == want->end &&
                          rows[r].width == want->width && rows[r].hang == want->hang,
                      "row %zu: [%zu, %zu) width %d hang %d, expected [%zu, %zu) width %d hang %d",
                      r, rows[r].start, rows[r].end, rows[r].width, rows[r].hang, want->start,
                      want->end, want->width, want->hang);
    }
    /* Counting without rows gives the same number; with no hang, ui_wrap gives the same rows. */
    ck_assert_uint_eq(ui_wrap_hang(t, strlen(t), wraps[_i].cols, wraps[_i].hang, NULL, 0), n);
    if (wraps[_i].hang == 0)
        ck_assert_uint_eq(ui_wrap(t, strlen(t), wraps[_i].cols, NULL, 0), n);
}
END_TEST

START_TEST(test_wrap_locate)
{
    struct ui_row rows[4];
    int row, col;
    const char *a = "hello world";
    size_t n = ui_wrap(a, strlen(a), 8, rows, 4);
    ui_wrap_locate(a, rows, n, 8, 5, &row, &col);
    ck_assert_int_eq(row, 0);
    ck_assert_int_eq(col, 5);
    ui_wrap_locate(a, rows, n, 8, 6, &row, &col);
    ck_assert_int_eq(row, 1);
    ck_assert_int_eq(col, 0);
    ui_wrap_locate(a, rows, n, 8, 11, &row, &col);
    ck_assert_int_eq(row, 1);
    ck_assert_int_eq(col, 5);
    /* Before the swallowed space: the end of the first row. */
    const char *b = "abcd efg";
    n = ui_wrap(b, strlen(b), 4, rows, 4);
    ui_wrap_locate(b, rows, n, 4, 4, &row, &col);
    ck_assert_int_eq(row, 0);
    ck_assert_int_eq(col, 4);
    ui_wrap_locate(b, rows, n, 4, 5, &row, &col);
    ck_assert_int_eq(row, 1);
    ck_assert_int_eq(col, 0);
    /* After a wide character: two columns on. */
    const char *c = "x" CJK_SHI "y";
    n = ui_wrap(c, strlen(c), 10, rows, 4);
    ui_wrap_locate(c, rows, n, 10, 4, &row, &col);
    ck_assert_int_eq(col, 3);
}
END_TEST

START_TEST(test_cells)
{
    struct ui_cell cells[5];
    const char *t = "a" CJK_SHI "b";
    ck_assert_int_eq(ui_cells_fill(cells, 5, t, 0, strlen(t), NULL, UI_STYLE_USER), 4);
    ck_assert_uint_eq(cells[0].ch[0], 'a');
    ck_assert_uint_eq(cells[0].width, 1);
    ck_assert_uint_eq(cells[1].ch[0], 0x4E16);
    ck_assert_uint_eq(cells[1].width, 2);
    ck_assert_uint_eq(cells[2].ch[0], 0);
    ck_assert_uint_eq(cells[2].width, 0);
    ck_assert_uint_eq(cells[3].ch[0], 'b');
    ck_assert_uint_eq(cells[4].ch[0], ' ');
    for (int i = 0; i < 5; i++)
        ck_assert_uint_eq(cells[i].style, UI_STYLE_USER);
    /* A wide character that does not fit is left out, not split. */
    const char *u = "ab" CJK_SHI;
    ck_assert_int_eq(ui_cells_fill(cells, 3, u, 0, strlen(u), NULL, UI_STYLE_TEXT), 2);
    ck_assert_uint_eq(cells[2].ch[0], ' ');
    ck_assert_uint_eq(cells[2].width, 1);
    /* Marks travel with their base; a tab becomes blanks. */
    const char *v = E_ACUTE "\tz";
    ck_assert_int_eq(ui_cells_fill(cells, 5, v, 0, strlen(v), NULL, UI_STYLE_TEXT), 5);
    ck_assert_uint_eq(cells[0].ch[0], 'e');
    ck_assert_uint_eq(cells[0].ch[1], 0x301);
    ck_assert_uint_eq(cells[0].ch[2], 0);
    ck_assert_uint_eq(cells[1].ch[0], ' ');
    ck_assert_uint_eq(cells[4].ch[0], ' '); /* the tab from column 1 filled columns 1..4 */
}
END_TEST

/* ---- the line editor and its history ------------------------------------------------------ */

/* An editor holding text with the cursor at byte offset pos. */
static void editor_with(struct ui_editor *ed, struct ui_history *h, const char *text, size_t pos)
{
    ui_editor_init(ed, h);
    ck_assert(ui_editor_insert(ed, text, strlen(text)));
    ed->cursor = pos;
}

START_TEST(test_editor_chars)
{
    struct ui_editor ed;
    /* h é l l o: bytes h0 é1-2 l3 l4 o5. */
    editor_with(&ed, NULL, "h\xc3\xa9llo", 6);
    ui_editor_left(&ed);
    ui_editor_left(&ed);
    ck_assert_uint_eq(ed.cursor, 4);
    ui_editor_backspace(&ed);
    ck_assert_str_eq(ed.buf, "h\xc3\xa9lo");
    ck_assert_uint_eq(ed.cursor, 3);
    ui_editor_left(&ed);
    ck_assert_uint_eq(ed.cursor, 1);
    ui_editor_delete(&ed);
    ck_assert_str_eq(ed.buf, "hlo");
    ck_assert_uint_eq(ed.cursor, 1);
    ck_assert(ui_editor_insert_char(&ed, 0x4E16));
    ck_assert_str_eq(ed.buf, "h" CJK_SHI "lo");
    ck_assert_uint_eq(ed.cursor, 4);
    ui_editor_fini(&ed);

    /* A base and its mark move and delete as one. */
    editor_with(&ed, NULL, E_ACUTE "x", 4);
    ui_editor_left(&ed);
    ck_assert_uint_eq(ed.cursor, 3);
    ui_editor_left(&ed);
    ck_assert_uint_eq(ed.cursor, 0);
    ui_editor_right(&ed);
    ck_assert_uint_eq(ed.cursor, 3);
    ui_editor_backspace(&ed);
    ck_assert_str_eq(ed.buf, "x");
    ui_editor_fini(&ed);
}
END_TEST

START_TEST(test_editor_lines)
{
    struct ui_editor ed;
    editor_with(&ed, NULL, "ab\ncd", 5);
    ui_editor_home(&ed);
    ck_assert_uint_eq(ed.cursor, 3);
    ui_editor_left(&ed); /* over the newline to the end of the line above */
    ck_assert_uint_eq(ed.cursor, 2);
    ui_editor_home(&ed);
    ck_assert_uint_eq(ed.cursor, 0);
    ui_editor_end(&ed);
    ck_assert_uint_eq(ed.cursor, 2);
    ui_editor_fini(&ed);

    /* Up and Down keep the display column: "abcd" over "世x". */
    editor_with(&ed, NULL, "abcd\n" CJK_SHI "x", 9);
    ck_assert(ui_editor_up(&ed)); /* from column 3 (after x) to "abc|d" */
    ck_assert_uint_eq(ed.cursor, 3);
    ed.cursor = 1; /* column 1: inside 世 below, so its start */
    ck_assert(ui_editor_down(&ed));
    ck_assert_uint_eq(ed.cursor, 5);
    ed.cursor = 2; /* column 2: after 世 */
    ck_assert(ui_editor_down(&ed));
    ck_assert_uint_eq(ed.cursor, 8);
    ck_assert(!ui_editor_down(&ed)); /* last line, no history */
    ui_editor_fini(&ed);
}
END_TEST

START_TEST(test_editor_words)
{
    struct ui_editor ed;
    editor_with(&ed, NULL, "foo bar_baz  qux", 16);
    ui_editor_word_left(&ed);
    ck_assert_uint_eq(ed.cursor, 13);
    ui_editor_word_left(&ed);
    ck_assert_uint_eq(ed.cursor, 4);
    ed.cursor = 0;
    ui_editor_word_right(&ed);
    ck_assert_uint_eq(ed.cursor, 3);
    ui_editor_word_right(&ed);
    ck_assert_uint_eq(ed.cursor, 11);
    ui_editor_fini(&ed);

    editor_with(&ed, NULL, "foo bar ", 8);
    ui_editor_kill_word(&ed);
    ck_assert_str_eq(ed.buf, "foo ");
    ui_editor_fini(&ed);

    editor_with(&ed, NULL, "one two\nthree", 4);
    ui_editor_kill_end(&ed);
    ck_assert_str_eq(ed.buf, "one \nthree");
    ed.cursor = 7; /* "th|ree" */
    ui_editor_kill_start(&ed);
    ck_assert_str_eq(ed.buf, "one \nree");
    ck_assert_uint_eq(ed.cursor, 5);
    ui_editor_fini(&ed);
}
END_TEST

START_TEST(test_editor_paste)
{
    struct ui_editor ed;
    ui_editor_init(&ed, NULL);
    const char paste[] = "a\r\nb\rc\x01"
                         "d\te\x1b";
    ck_assert(ui_editor_paste(&ed, paste, sizeof paste - 1));
    ck_assert_str_eq(ed.buf, "a\nb\ncd\te");
    ck_assert_uint_eq(ed.cursor, 8);
    ui_editor_fini(&ed);
}
END_TEST

START_TEST(test_editor_history)
{
    struct ui_history h;
    ui_history_init(&h, 10);
    ck_assert(ui_history_add(&h, "one"));
    ck_assert(ui_history_add(&h, "two"));
    struct ui_editor ed;
    editor_with(&ed, &h, "draft", 5);
    ed.hist_pos = h.n;
    ck_assert(ui_editor_up(&ed));
    ck_assert_str_eq(ed.buf, "two");
    ck_assert_uint_eq(ed.cursor, 3);
    ck_assert(ui_editor_up(&ed));
    ck_assert_str_eq(ed.buf, "one");
    ck_assert(!ui_editor_up(&ed));
    ck_assert_str_eq(ed.buf, "one");
    ck_assert(ui_editor_down(&ed));
    ck_assert_str_eq(ed.buf, "two");
    ck_assert(ui_editor_down(&ed));
    ck_assert_str_eq(ed.buf, "draft");
    ck_assert(!ui_editor_down(&ed));

    /* Inside a multi-line text, Up moves between lines before it reaches the history. */
    ck_assert(ui_editor_set(&ed, "l1\nl2"));
    ck_assert(ui_editor_up(&ed));
    ck_assert_str_eq(ed.buf, "l1\nl2");
    ck_assert(ui_editor_up(&ed));
    ck_assert_str_eq(ed.buf, "two");

    /* Taking the text adds it once; empty texts and repeats are not added. */
    ck_assert(ui_editor_set(&ed, "three"));
    char *text = ui_editor_take(&ed);
    ck_assert_str_eq(text, "three");
    free(text);
    ck_assert_str_eq(ed.buf, "");
    text = ui_editor_take(&ed);
    free(text);
    ck_assert(ui_history_add(&h, "three"));
    ck_assert_uint_eq(h.n, 3);
    ck_assert_str_eq(h.items[2], "three");
    ui_editor_fini(&ed);
    /* ui_history_find: the newest entry before `before` holding the query, else h.n. */
    ck_assert_uint_eq(ui_history_find(&h, "t", h.n), 2);
    ck_assert_uint_eq(ui_history_find(&h, "t", 2), 1);
    ck_assert_uint_eq(ui_history_find(&h, "t", 1), h.n);
    ck_assert_uint_eq(ui_history_find(&h, "", h.n + 5), 2);
    ck_assert_uint_eq(ui_history_find(&h, "four", h.n), h.n);
    ui_history_fini(&h);
}
END_TEST

START_TEST(test_history_file)
{
    struct ui_history h;
    ui_history_init(&h, 3);
    const char *items[] = {"a", "b", "multi\nline", "back\\slash"};
    for (int i = 0; i < 4; i++)
        ck_assert(ui_history_add(&h, items[i]));
    ck_assert_uint_eq(h.n, 3); /* the cap dropped "a" */
    ck_assert_str_eq(h.items[0], "b");

    char *dir = test_tmpdir();
    char path[512];
    snprintf(path, sizeof path, "%s/state/dllm/history", dir);
    ck_assert_msg(ui_history_save(&h, path), "%s: %s", path, strerror(errno));
    FILE *f = fopen(path, "r");
    ck_assert(f != NULL);
    char got[256] = "";
    size_t n = fread(got, 1, sizeof got - 1, f);
    fclose(f);
    got[n] = '\0';
    ck_assert_str_eq(got, "b\nmulti\\nline\nback\\\\slash\n");
    struct stat st;
    snprintf(got, sizeof got, "%s/state/dllm", dir);
    ck_assert_int_eq(stat(got, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0700);

    struct ui_history back;
    ui_history_init(&back, 2);
    ck_assert(ui_history_load(&back, path));
    ck_assert_uint_eq(back.n, 2); /* the newest two of three */
    ck_assert_str_eq(back.items[0], "multi\nline");
    ck_assert_str_eq(back.items[1], "back\\slash");
    snprintf(got, sizeof got, "%s/missing", dir);
    ck_assert(ui_history_load(&back, got));
    ck_assert_uint_eq(back.n, 2);
    ui_history_fini(&back);
    ui_history_fini(&h);

    setenv("XDG_STATE_HOME", "/xdg", 1);
    char *p = ui_history_path();
    ck_assert_str_eq(p, "/xdg/dllm/history");
    free(p);
    setenv("XDG_STATE_HOME", "relative", 1); /* not absolute: ignored */
    setenv("HOME", "/home/u", 1);
    p = ui_history_path();
    ck_assert_str_eq(p, "/home/u/.local/state/dllm/history");
    free(p);
    free(dir);
}
END_TEST

/* ---- scrollback --------------------------------------------------------------------------- */

/* Ten one-row blocks "0" .. "9" plus `extra` more. */
static size_t digit_blocks(struct ui_sb_block *blocks, size_t extra)
{
    static const char digits[] = "0123456789abcdef";
    size_t n = 10 + extra;
    for (size_t i = 0; i < n; i++)
        blocks[i] = (struct ui_sb_block){digits + i, 1, UI_STYLE_TEXT, 0, NULL, 0};
    return n;
}

START_TEST(test_scroll_sticky)
{
    struct ui_scrollback sb;
    struct ui_sb_block blocks[16];
    ui_scrollback_init(&sb);
    ui_scrollback_set_view(&sb, 4);
    ck_assert(ui_scrollback_layout(&sb, blocks, digit_blocks(blocks, 0), 10));
    ck_assert_uint_eq(sb.n_rows, 10);
    ck_assert_uint_eq(sb.top, 6); /* following: the last 4 rows */
    ui_scrollback_scroll(&sb, -2);
    ck_assert_uint_eq(sb.top, 4);
    ck_assert(!sb.follow);
    /* A new row does not move a view that was scrolled up. */
    ck_assert(ui_scrollback_layout(&sb, blocks, digit_blocks(blocks, 1), 10));
    ck_assert_uint_eq(sb.top, 4);
    /* A page is the view less one row: 4 + 3 = 7, the bottom of 11 rows; following again. */
    ui_scrollback_page(&sb, 1);
    ck_assert_uint_eq(sb.top, 7);
    ck_assert(sb.follow);
    ck_assert(ui_scrollback_layout(&sb, blocks, digit_blocks(blocks, 2), 10));
    ck_assert_uint_eq(sb.top, 8);
    ui_scrollback_page(&sb, -1);
    ck_assert_uint_eq(sb.top, 5);
    ui_scrollback_scroll(&sb, -100);
    ck_assert_uint_eq(sb.top, 0);
    ui_scrollback_scroll(&sb, 100);
    ck_assert_uint_eq(sb.top, 8);
    ck_assert(sb.follow);
    ui_scrollback_home(&sb);
    ck_assert_uint_eq(sb.top, 0);
    ck_assert(!sb.follow);
    ui_scrollback_end(&sb);
    ck_assert_uint_eq(sb.top, 8);
    /* A taller view at the bottom shows more of the rows. */
    ui_scrollback_set_view(&sb, 20);
    ck_assert_uint_eq(sb.top, 0);
    ui_scrollback_fini(&sb);
}
END_TEST

START_TEST(test_scroll_rewrap)
{
    /* "aaaa bbbb cccc dddd" wraps to 4 rows at 5 columns and 2 at 10. */
    struct ui_sb_block blocks[2] = {{"x", 1, UI_STYLE_TEXT, 0, NULL, 0},
                                    {"aaaa bbbb cccc dddd", 19, UI_STYLE_TEXT, 0, NULL, 0}};
    struct ui_scrollback sb;
    ui_scrollback_init(&sb);
    ui_scrollback_set_view(&sb, 1);
    ck_assert(ui_scrollback_layout(&sb, blocks, 2, 5));
    ck_assert_uint_eq(sb.n_rows, 5);
    ck_assert_uint_eq(sb.rows[3].start, 10); /* "cccc " */
    ui_scrollback_scroll(&sb, -1);
    ck_assert_uint_eq(sb.top, 3);
    /* Wider: "cccc" now starts the second row of the block, row 2; it stays at the top. */
    ck_assert(ui_scrollback_layout(&sb, blocks, 2, 10));
    ck_assert_uint_eq(sb.n_rows, 3);
    ck_assert_uint_eq(sb.top, 2);
    ck_assert_uint_eq(sb.rows[2].start, 10);
    /* Narrower again: the row holding byte 10 is row 3. */
    ck_assert(ui_scrollback_layout(&sb, blocks, 2, 5));
    ck_assert_uint_eq(sb.top, 3);

    /* An indented block wraps at the width less the indent, and its cells start blank. */
    struct ui_sb_block ind = {"abcdef", 6, UI_STYLE_USER, 2, NULL, 0};
    ck_assert(ui_scrollback_layout(&sb, &ind, 1, 6));
    ck_assert_uint_eq(sb.n_rows, 2);
    struct ui_cell cells[6];
    ui_scrollback_cells(&sb, &ind, 1, cells, 6);
    ck_assert_uint_eq(cells[0].ch[0], ' ');
    ck_assert_uint_eq(cells[1].ch[0], ' ');
    ck_assert_uint_eq(cells[2].ch[0], 'e');
    ck_assert_uint_eq(cells[3].ch[0], 'f');
    ck_assert_uint_eq(cells[3].style, UI_STYLE_USER);

    /* A hanging block: the row that continues its line starts indent + hang columns in. */
    struct ui_sb_block hung = {"aaaa bbbb cccc dddd eeee", 24, UI_STYLE_TEXT, 1, NULL, 4};
    ck_assert(ui_scrollback_layout(&sb, &hung, 1, 22));
    ck_assert_uint_eq(sb.n_rows, 2);
    ck_assert_uint_eq(sb.rows[1].start, 20);
    struct ui_cell wide[22];
    ui_scrollback_cells(&sb, &hung, 0, wide, 22);
    ck_assert_uint_eq(wide[0].ch[0], ' ');
    ck_assert_uint_eq(wide[1].ch[0], 'a');
    ui_scrollback_cells(&sb, &hung, 1, wide, 22);
    for (int c = 0; c < 5; c++)
        ck_assert_uint_eq(wide[c].ch[0], ' ');
    ck_assert_uint_eq(wide[5].ch[0], 'e');
    ck_assert_uint_eq(wide[8].ch[0], 'e');
    ck_assert_uint_eq(wide[9].ch[0], ' ');
    ui_scrollback_fini(&sb);
}
END_TEST

/* ---- the canvas --------------------------------------------------------------------------- */

/* Token pieces for the canvas tests; id 7 stands for a control token without text. */
static const char *const pieces[] = {"Hel", "lo", " wor", "ld", "\xe4\xb8", "\x96", "!"};

static const char *test_piece(void *ctx, int32_t id, size_t *len)
{
    (void)ctx;
    if (id < 0 || id >= N_OF(pieces))
        return NULL;
    *len = strlen(pieces[id]);
    return pieces[id];
}

/* Fails unless ct's styles are, byte by byte, the letters of want (s settled, N new, ...). */
static void expect_styles(const struct ui_canvas_text *ct, const char *want)
{
    static const char letters[UI_STYLE_COUNT] = {[UI_STYLE_PROMPT] = 'p',
                                                 [UI_STYLE_MASK] = 'm',
                                                 [UI_STYLE_NEW] = 'N',
                                                 [UI_STYLE_SETTLED] = 's',
                                                 [UI_STYLE_DIM] = 'd'};
    char got[64] = "";
    for (size_t i = 0; i < ct->len && i < sizeof got - 1; i++)
        got[i] = letters[ct->styles[i]] ? letters[ct->styles[i]] : '?';
    ck_assert_str_eq(got, want);
}

START_TEST(test_canvas_runs)
{
    struct ui_canvas_text ct;
    ui_canvas_text_init(&ct);
    int32_t ids[] = {0, 1, 2, 3};
    uint8_t states[] = {UI_POS_SETTLED, UI_POS_NEW, UI_POS_MASKED, UI_POS_SETTLED};
    ck_assert(ui_canvas_render(&ct, ids, states, 0, 4, test_piece, NULL));
    ck_assert_uint_eq(ct.len, 10);
    ck_assert(memcmp(ct.text, "Hello" UI_MASK_GLYPH "ld", 10) == 0);
    expect_styles(&ct, "sssNNmmmss");

    /* A character split over two tokens is drawn whole, in the newer token's style. */
    int32_t split[] = {4, 5, 6};
    uint8_t st2[] = {UI_POS_SETTLED, UI_POS_NEW, UI_POS_SETTLED};
    ck_assert(ui_canvas_render(&ct, split, st2, 0, 3, test_piece, NULL));
    ck_assert(memcmp(ct.text, CJK_SHI "!", 4) == 0);
    expect_styles(&ct, "NNNs");
    struct ui_cell cells[4];
    ck_assert_int_eq(ui_cells_fill(cells, 4, ct.text, 0, ct.len, ct.styles, UI_STYLE_TEXT), 3);
    ck_assert_uint_eq(cells[0].ch[0], 0x4E16);
    ck_assert_uint_eq(cells[0].style, UI_STYLE_NEW);
    ck_assert_uint_eq(cells[2].ch[0], '!');
    ck_assert_uint_eq(cells[2].style, UI_STYLE_SETTLED);

    /* Its second half still masked: one U+FFFD, then the mask glyph, never merged. */
    uint8_t st3[] = {UI_POS_SETTLED, UI_POS_MASKED, UI_POS_SETTLED};
    ck_assert(ui_canvas_render(&ct, split, st3, 0, 3, test_piece, NULL));
    ck_assert_int_eq(ui_cells_fill(cells, 4, ct.text, 0, ct.len, ct.styles, UI_STYLE_TEXT), 3);
    ck_assert_uint_eq(cells[0].ch[0], UI_REPLACEMENT);
    ck_assert_uint_eq(cells[1].ch[0], 0x2591);
    ck_assert_uint_eq(cells[1].style, UI_STYLE_MASK);
    ck_assert_uint_eq(cells[2].ch[0], '!');

    /* From position 1 of a canvas whose position 0 is prompt; id 7 has no text. */
    int32_t withp[] = {0, 1, 7, 6};
    uint8_t st4[] = {UI_POS_PROMPT, UI_POS_PROMPT, UI_POS_SETTLED, UI_POS_NEW};
    ck_assert(ui_canvas_render(&ct, withp, st4, 1, 3, test_piece, NULL));
    ck_assert(memcmp(ct.text, "lo" UI_TEXTLESS_GLYPH "!", 5) == 0);
    expect_styles(&ct, "ppddN");

    /* Wrapped into rows of 3 columns: "lo·" and "!". */
    struct ui_row rows[4];
    ck_assert_uint_eq(ui_wrap(ct.text, ct.len, 3, rows, 4), 2);
    ck_assert_uint_eq(rows[1].start, 4);
    ui_canvas_text_fini(&ct);
}
END_TEST

/* ---- the sliders -------------------------------------------------------------------------- */

/* LLaDA-style settings: 128 tokens in blocks of 32, 64 steps, no threshold, temperature 0. */
static struct dllm_sampler_params base_settings(void)
{
    struct dllm_sampler_params s;
    dllm_sampler_params_init(&s, DLLM_SAMPLER_LLADA);
    s.gen_length = 128;
    s.block_length = 32;
    s.steps = 64;
    s.threshold = 0;
    s.temperature = 0;
    return s;
}

static const struct {
    const char *what;
    enum ui_slider slider;
    int dir;
    int64_t max, block, steps; /* before */
    double threshold, temperature;
    bool changed;
    int64_t want_max, want_block, want_steps;
    double want_threshold, want_temperature;
    const char *note;
} adjusts[] = {
    {"steps up by the 4 blocks", UI_SLIDER_STEPS, 1, 128, 32, 64, 0, 0, true, 128, 32, 68, 0, 0,
     "steps 68"},
    {"steps down", UI_SLIDER_STEPS, -1, 128, 32, 64, 0, 0, true, 128, 32, 60, 0, 0, "steps 60"},
    {"steps at the top", UI_SLIDER_STEPS, 1, 128, 32, 128, 0, 0, false, 128, 32, 128, 0, 0,
     "steps stays 128: its highest valid value"},
    {"steps at the bottom", UI_SLIDER_STEPS, -1, 128, 32, 4, 0, 0, false, 128, 32, 4, 0, 0,
     "steps stays 4: its lowest valid value"},
    {"steps under a threshold", UI_SLIDER_STEPS, 1, 128, 32, 64, 0.9, 0, true, 128, 32, 68, 0.9, 0,
     "steps 68; steps do not apply while a threshold is set"},
    {"block up to the next divisor", UI_SLIDER_BLOCK, 1, 128, 32, 64, 0, 0, true, 128, 64, 64, 0, 0,
     "block 64"},
    {"block past the largest: off", UI_SLIDER_BLOCK, 1, 128, 128, 64, 0, 0, true, 128, 0, 64, 0, 0,
     "block off"},
    {"block down from off", UI_SLIDER_BLOCK, -1, 128, 0, 64, 0, 0, true, 128, 128, 64, 0, 0,
     "block 128"},
    {"block down refits steps (tie upwards)", UI_SLIDER_BLOCK, -1, 128, 32, 4, 0, 0, true, 128, 16,
     8, 0, 0, "block 16; steps 4 -> 8 to fit 8 blocks"},
    {"block 48 of 96 down to 32", UI_SLIDER_BLOCK, -1, 96, 48, 64, 0, 0, true, 96, 32, 63, 0, 0,
     "block 32; steps 64 -> 63 to fit 3 blocks"},
    {"max up by the block", UI_SLIDER_MAX_TOKENS, 1, 128, 32, 64, 0, 0, true, 160, 32, 65, 0, 0,
     "max 160; steps 64 -> 65 to fit 5 blocks"},
    {"max at the cap", UI_SLIDER_MAX_TOKENS, 1, 256, 32, 64, 0, 0, false, 256, 32, 64, 0, 0,
     "max stays 256: its highest valid value"},
    {"max without blocks", UI_SLIDER_MAX_TOKENS, 1, 100, 0, 64, 0, 0, true, 112, 0, 64, 0, 0,
     "max 112"},
    {"max without blocks down", UI_SLIDER_MAX_TOKENS, -1, 100, 0, 64, 0, 0, true, 96, 0, 64, 0, 0,
     "max 96"},
    {"threshold on", UI_SLIDER_THRESHOLD, 1, 128, 32, 64, 0, 0, true, 128, 32, 64, 0.5, 0,
     "threshold 0.50"},
    {"threshold off", UI_SLIDER_THRESHOLD, -1, 128, 32, 64, 0.5, 0, true, 128, 32, 64, 0, 0,
     "threshold off"},
    {"threshold up", UI_SLIDER_THRESHOLD, 1, 128, 32, 64, 0.9, 0, true, 128, 32, 64, 0.95, 0,
     "threshold 0.95"},
    {"threshold at 1", UI_SLIDER_THRESHOLD, 1, 128, 32, 64, 1.0, 0, false, 128, 32, 64, 1.0, 0,
     "threshold stays 1.00: its highest valid value"},
    {"temperature up", UI_SLIDER_TEMPERATURE, 1, 128, 32, 64, 0, 0, true, 128, 32, 64, 0, 0.1,
     "temp 0.1"},
    {"temperature at 0", UI_SLIDER_TEMPERATURE, -1, 128, 32, 64, 0, 0, false, 128, 32, 64, 0, 0,
     "temp stays 0.0: its lowest valid value"},
    {"temperature at 2", UI_SLIDER_TEMPERATURE, 1, 128, 32, 64, 0, 2.0, false, 128, 32, 64, 0, 2.0,
     "temp stays 2.0: its highest valid value"},
    /* Lowering max below steps takes steps down with it (it stuck at 128 before). */
    {"max below steps", UI_SLIDER_MAX_TOKENS, -1, 32, 0, 32, 0, 0, true, 16, 0, 16, 0, 0,
     "max 16; steps 32 -> 16, at most max tokens"},
    {"max below steps, blocks", UI_SLIDER_MAX_TOKENS, -1, 64, 32, 64, 0, 0, true, 32, 32, 32, 0, 0,
     "max 32; steps 64 -> 32, at most max tokens"},
};

/*
 * The threshold slider on a Dream model whose confidence is entropy (its default) switches it to
 * maskgit_plus, which a threshold needs (every message was refused before); a probability-like
 * alg already set stays.
 */
START_TEST(test_slider_dream_threshold)
{
    struct dllm_sampler_params s;
    dllm_sampler_params_init(&s, DLLM_SAMPLER_DREAM);
    ck_assert_int_eq(s.alg, DLLM_ALG_ENTROPY);
    char note[160];
    ck_assert(ui_settings_adjust(&s, UI_SLIDER_THRESHOLD, 1, 256, false, note, sizeof note));
    ck_assert_double_eq_tol(s.threshold, 0.5, 1e-12);
    ck_assert_int_eq(s.alg, DLLM_ALG_MASKGIT_PLUS);
    ck_assert_str_eq(note, "threshold 0.50; alg maskgit_plus: a threshold needs a probability as "
                           "confidence");
    ck_assert(dllm_sampler_params_check(&s, NULL) == DLLM_OK);
    s.threshold = 0;
    s.alg = DLLM_ALG_TOPK_MARGIN;
    ck_assert(ui_settings_adjust(&s, UI_SLIDER_THRESHOLD, 1, 256, false, note, sizeof note));
    ck_assert_int_eq(s.alg, DLLM_ALG_TOPK_MARGIN);
    ck_assert_str_eq(note, "threshold 0.50");
}
END_TEST

START_TEST(test_slider)
{
    struct dllm_sampler_params s = base_settings();
    s.gen_length = adjusts[_i].max;
    s.block_length = adjusts[_i].block;
    s.steps = adjusts[_i].steps;
    s.threshold = adjusts[_i].threshold;
    s.temperature = adjusts[_i].temperature;
    char note[160];
    bool changed =
        ui_settings_adjust(&s, adjusts[_i].slider, adjusts[_i].dir, 256, false, note, sizeof note);
    ck_assert_msg(changed == adjusts[_i].changed, "%s", adjusts[_i].what);
    ck_assert_int_eq(s.gen_length, adjusts[_i].want_max);
    ck_assert_int_eq(s.block_length, adjusts[_i].want_block);
    ck_assert_int_eq(s.steps, adjusts[_i].want_steps);
    ck_assert_double_eq_tol(s.threshold, adjusts[_i].want_threshold, 1e-12);
    ck_assert_double_eq_tol(s.temperature, adjusts[_i].want_temperature, 1e-12);
    ck_assert_str_eq(note, adjusts[_i].note);
    /* Whatever the sliders do, the engine accepts the result. */
    ck_assert(dllm_sampler_params_check(&s, NULL) == DLLM_OK);
}
END_TEST

START_TEST(test_slider_busy)
{
    struct dllm_sampler_params s = base_settings();
    char note[160], value[16];
    ck_assert(ui_settings_adjust(&s, UI_SLIDER_BLOCK, 1, 4096, true, note, sizeof note));
    ck_assert_str_eq(note, "block 64; applies to the next generation");
    ui_slider_value(&s, UI_SLIDER_THRESHOLD, value, sizeof value);
    ck_assert_str_eq(value, "off");
    ck_assert_int_eq(ui_settings_blocks(&s), 2);
    ck_assert_str_eq(ui_slider_name(UI_SLIDER_MAX_TOKENS), "max");
    /* Every notch of every slider, up then down, keeps the settings runnable. */
    for (int k = 0; k < UI_SLIDER_COUNT; k++) {
        for (int i = 0; i < 40; i++) {
            ui_settings_adjust(&s, (enum ui_slider)k, i < 20 ? 1 : -1, 512, false, note,
                               sizeof note);
            ck_assert_msg(dllm_sampler_params_check(&s, NULL) == DLLM_OK, "after %s", note);
        }
    }
}
END_TEST

/* /set NAME VALUE on base_settings (LLaDA, 128 tokens in 4 blocks of 32, 64 steps), cap 4095. */
static const struct {
    enum dllm_sampler_kind kind;
    const char *name, *value;
    bool changed;
    const char *note;
} sets[] = {
    {DLLM_SAMPLER_LLADA, "steps", "32", true, "steps 32"},
    {DLLM_SAMPLER_LLADA, "steps", "30", false,
     "steps takes a multiple of the 4 blocks from 4 to 128 (max tokens), not '30'"},
    {DLLM_SAMPLER_LLADA, "steps", "132", false,
     "steps takes a multiple of the 4 blocks from 4 to 128 (max tokens), not '132'"},
    {DLLM_SAMPLER_LLADA, "steps", "-4", false,
     "steps takes a multiple of the 4 blocks from 4 to 128 (max tokens), not '-4'"},
    {DLLM_SAMPLER_LLADA, "steps", "", false,
     "/set steps needs a value: a multiple of the 4 blocks from 4 to 128 (max tokens)"},
    {DLLM_SAMPLER_LLADA, "steps", "64", false, "steps is 64 already"},
    {DLLM_SAMPLER_LLADA, "max", "64", true, "max 64"},
    {DLLM_SAMPLER_LLADA, "max", "32", true, "max 32; steps 64 -> 32, at most max tokens"},
    {DLLM_SAMPLER_LLADA, "max", "48", false,
     "max takes a multiple of the block length 32 from 32 to 4064, not '48'"},
    {DLLM_SAMPLER_LLADA, "max", "4096", false,
     "max takes a multiple of the block length 32 from 32 to 4064, not '4096'"},
    {DLLM_SAMPLER_LLADA, "block", "16", true, "block 16"},
    {DLLM_SAMPLER_LLADA, "block", "off", true, "block off"},
    {DLLM_SAMPLER_LLADA, "block", "0", true, "block off"},
    {DLLM_SAMPLER_LLADA, "block", "128", true, "block 128"},
    {DLLM_SAMPLER_LLADA, "block", "30", false,
     "block takes off (0) or a divisor of max tokens 128, not '30'"},
    {DLLM_SAMPLER_LLADA, "threshold", "0.9", true, "threshold 0.90"},
    {DLLM_SAMPLER_LLADA, "threshold", "1.5", false,
     "threshold takes off (0) or a number in (0, 1], not '1.5'"},
    {DLLM_SAMPLER_LLADA, "threshold", "off", false, "threshold is off already"},
    {DLLM_SAMPLER_LLADA, "temp", "0.7", true, "temp 0.7"},
    {DLLM_SAMPLER_LLADA, "temp", "2.5", false, "temp takes a number from 0 to 2, not '2.5'"},
    {DLLM_SAMPLER_LLADA, "temp", "nan", false, "temp takes a number from 0 to 2, not 'nan'"},
    {DLLM_SAMPLER_LLADA, "temp", "0x1p-1", false, "temp takes a number from 0 to 2, not '0x1p-1'"},
    {DLLM_SAMPLER_LLADA, "temp", "5e-1", true, "temp 0.5"},
    {DLLM_SAMPLER_LLADA, "cache", "dual", true, "cache dual"},
    {DLLM_SAMPLER_LLADA, "cache", "full", false, "cache takes none, prefix or dual, not 'full'"},
    {DLLM_SAMPLER_LLADA, "seed", "18446744073709551615", true, "seed 18446744073709551615"},
    {DLLM_SAMPLER_LLADA, "seed", "18446744073709551616", false,
     "seed takes a whole number from 0 to 18446744073709551615, not '18446744073709551616'"},
    {DLLM_SAMPLER_LLADA, "remasking", "random", true, "remasking random"},
    {DLLM_SAMPLER_LLADA, "remasking", "best", false,
     "remasking takes low_confidence or random, not 'best'"},
    {DLLM_SAMPLER_LLADA, "cfg", "1.5", true, "cfg 1.5"},
    {DLLM_SAMPLER_LLADA, "cfg", "-1", false, "cfg takes a number, 0 (off) or more, not '-1'"},
    {DLLM_SAMPLER_LLADA, "top-p", "0.9", false,
     "this model samples without the setting 'top-p': this model's are steps, max, block, "
     "threshold, temp, cache, seed, remasking, cfg, cache-type"},
    {DLLM_SAMPLER_LLADA, "speed", "9", false,
     "no setting 'speed': this model's are steps, max, block, threshold, temp, cache, seed, "
     "remasking, cfg, cache-type"},
    {DLLM_SAMPLER_DREAM, "alg", "maskgit_plus", true, "alg maskgit_plus"},
    {DLLM_SAMPLER_DREAM, "alg", "best", false,
     "alg takes origin, maskgit_plus, topk_margin or entropy, not 'best'"},
    {DLLM_SAMPLER_DREAM, "top-p", "0.5", true, "top-p 0.50"},
    {DLLM_SAMPLER_DREAM, "top-p", "0", false, "top-p takes a number in (0, 1] (1: off), not '0'"},
    {DLLM_SAMPLER_DREAM, "top-k", "40", true, "top-k 40"},
    {DLLM_SAMPLER_DREAM, "top-k", "4.5", false,
     "top-k takes a whole number, 0 (off) or more, not '4.5'"},
    /* Dream's entropy gives no probability: a threshold switches it to maskgit_plus. */
    {DLLM_SAMPLER_DREAM, "threshold", "0.8", true,
     "threshold 0.80; alg maskgit_plus: a threshold needs a probability as confidence"},
    {DLLM_SAMPLER_DREAM, "remasking", "random", false,
     "this model samples without the setting 'remasking': this model's are steps, max, block, "
     "threshold, temp, cache, seed, alg, top-p, top-k, cfg, cache-type"},
    {DLLM_SAMPLER_LLADA, "cache-type", "f32", true, "cache-type f32"},
    {DLLM_SAMPLER_LLADA, "cache-type", "f16", false, "cache-type is f16 already"},
    {DLLM_SAMPLER_LLADA, "cache-type", "q8_0", false, "cache-type takes f16 or f32, not 'q8_0'"},
};

START_TEST(test_settings_set)
{
    struct dllm_sampler_params s = base_settings(), before;
    if (sets[_i].kind == DLLM_SAMPLER_DREAM) {
        dllm_sampler_params_init(&s, DLLM_SAMPLER_DREAM);
        s.steps = 64;
    }
    before = s;
    char note[DLLM_ERROR_TEXT_MAX];
    bool changed =
        ui_settings_set(&s, sets[_i].name, sets[_i].value, 4095, false, note, sizeof note);
    ck_assert_msg(changed == sets[_i].changed, "/set %s %s: %s", sets[_i].name, sets[_i].value,
                  note);
    ck_assert_str_eq(note, sets[_i].note);
    if (!changed)
        ck_assert(memcmp(&s, &before, sizeof s) == 0);
    ck_assert(dllm_sampler_params_check(&s, NULL) == DLLM_OK);
}
END_TEST

/* The values /set wrote, and the note while a generation runs; /set alone lists them. */
START_TEST(test_settings_set_values)
{
    struct dllm_sampler_params s = base_settings();
    char note[DLLM_ERROR_TEXT_MAX];
    ck_assert(ui_settings_set(&s, "block", "16", 4095, true, note, sizeof note));
    ck_assert_str_eq(note, "block 16; applies to the next generation");
    ck_assert_int_eq(s.block_length, 16);
    /* 64 steps over 8 blocks still fit. */
    ck_assert_int_eq(s.steps, 64);
    ck_assert(ui_settings_set(&s, "block", "1", 4095, false, note, sizeof note));
    ck_assert_str_eq(note, "block 1; steps 64 -> 128 to fit 128 blocks");
    ck_assert(ui_settings_set(&s, "seed", "42", 4095, false, note, sizeof note));
    ck_assert_uint_eq(s.seed, 42);
    ck_assert(ui_settings_set(&s, "cfg", "2", 4095, false, note, sizeof note));
    ck_assert_double_eq_tol(s.cfg_scale, 2.0, 1e-12);
    ck_assert(ui_settings_set(&s, "threshold", ".95", 4095, false, note, sizeof note));
    ck_assert_double_eq_tol(s.threshold, 0.95, 1e-12);
    ck_assert(ui_settings_set(&s, "steps", "256", 4095, false, note, sizeof note) == false);
    ck_assert(ui_settings_set(&s, "max", "256", 4095, false, note, sizeof note));
    ck_assert_str_eq(note, "max 256; steps 128 -> 256 to fit 256 blocks");
    ck_assert(ui_settings_set(&s, "block", "32", 4095, false, note, sizeof note));
    ck_assert(ui_settings_set(&s, "steps", "128", 4095, false, note, sizeof note));
    ck_assert_str_eq(note, "steps 128; steps do not apply while a threshold is set");
    ui_settings_list(&s, note, sizeof note);
    ck_assert_str_eq(note, "steps 128, max 256, block 32, threshold 0.95, temp 0.0, cache none, "
                           "seed 42, remasking low_confidence, cfg 2, cache-type f16");
    ck_assert(ui_settings_set(&s, "cache-type", "f32", 4095, false, note, sizeof note));
    ck_assert_int_eq(s.cache_type, DLLM_CACHE_F32);
}
END_TEST

/* ---- slash commands ----------------------------------------------------------------------- */

static const struct {
    const char *line;
    enum ui_cmd_kind kind;
    const char *arg; /* or the error */
} commands[] = {
    {"hello", UI_CMD_MESSAGE, "hello"},
    {"  /clear ", UI_CMD_CLEAR, ""},
    {"/clear now", UI_CMD_ERROR, "/clear takes no argument"},
    {"/regen", UI_CMD_REGEN, ""},
    {"/undo", UI_CMD_UNDO, ""},
    {"/save", UI_CMD_ERROR, "/save needs FILE: /save FILE"},
    {"/save  notes.md ", UI_CMD_SAVE, "notes.md"},
    {"/load", UI_CMD_ERROR, "/load needs FILE: /load FILE"},
    {"/load notes.md.jsonl", UI_CMD_LOAD, "notes.md.jsonl"},
    {"/set steps 32", UI_CMD_SET, "steps 32"},
    {"/set", UI_CMD_SET, ""},
    {"/system be brief\n", UI_CMD_SYSTEM, "be brief"},
    {"/system", UI_CMD_SYSTEM, ""},
    {"/help", UI_CMD_HELP, ""},
    {"/quit", UI_CMD_QUIT, ""},
    {"//etc/passwd is a file", UI_CMD_MESSAGE, "/etc/passwd is a file"},
    {"/frob x", UI_CMD_ERROR, "unknown command /frob: /help lists them"},
    {"/", UI_CMD_ERROR, "unknown command /: /help lists them"},
    {"a /clear", UI_CMD_MESSAGE, "a /clear"},
};

START_TEST(test_command)
{
    struct ui_cmd cmd;
    ui_command_parse(commands[_i].line, &cmd);
    ck_assert_int_eq(cmd.kind, commands[_i].kind);
    if (cmd.kind == UI_CMD_ERROR) {
        ck_assert_str_eq(cmd.error, commands[_i].arg);
    } else {
        ck_assert_uint_eq(cmd.arg_len, strlen(commands[_i].arg));
        ck_assert(strncmp(cmd.arg, commands[_i].arg, cmd.arg_len) == 0);
    }
}
END_TEST

/* ui_complete: what the input becomes, how many names fit, and which; NULL line: no completion. */
#define CMD UI_COMPLETE_COMMAND
#define SET UI_COMPLETE_SETTING
#define VAL UI_COMPLETE_VALUE
static const struct {
    const char *input, *line;
    enum ui_complete_kind kind;
    size_t n;
    const char *names;
} completions[] = {
    {"/sa", "/save ", CMD, 1, "/save"},
    {"/s", "/s", CMD, 3, "/save  /system  /set"},
    {"  /he", "  /help ", CMD, 1, "/help"},
    {"/set", "/set ", CMD, 1, "/set"},
    {"/", "/", CMD, 11,
     "/clear  /regen  /undo  /save  /load  /system  /set  /find  /copy  /help  /quit"},
    {"/xy", "/xy", CMD, 0, ""},
    {"/set te", "/set temp ", SET, 1, "temp"},
    {"/set  c", "/set  c", SET, 3, "cache  cfg  cache-type"},
    {"/set cache", "/set cache", SET, 2, "cache  cache-type"},
    {"/set cache-", "/set cache-type ", SET, 1, "cache-type"},
    {"/set al", "/set al", SET, 0, ""}, /* Dream's alg: not LLaDA's */
    {"/set re", "/set remasking ", SET, 1, "remasking"},
    /* The words a setting takes, libdllm's names. */
    {"/set cache ", "/set cache ", VAL, 3, "none  prefix  dual"},
    {"/set cache  p", "/set cache  prefix ", VAL, 1, "prefix"},
    {"/set cache-type f", "/set cache-type f", VAL, 2, "f16  f32"},
    {"/set remasking l", "/set remasking low_confidence ", VAL, 1, "low_confidence"},
    {"/set block o", "/set block off ", VAL, 1, "off"},
    {"/set cache x", "/set cache x", VAL, 0, ""},
    {"hello", NULL, CMD, 0, NULL},
    {"//sa", NULL, CMD, 0, NULL},
    {"/save my notes", NULL, CMD, 0, NULL}, /* a path with a blank */
    {"/set steps 3", NULL, CMD, 0, NULL},   /* a number: nothing to complete */
    {"/set alg m", NULL, CMD, 0, NULL},     /* not LLaDA's */
    {"/set cache none x", NULL, CMD, 0, NULL},
    {"/set cache dual ", NULL, CMD, 0, NULL}, /* a value and its blank: Tab moves the focus */
    {"/save notes.md ", NULL, CMD, 0, NULL},
    {"/sa\nx", NULL, CMD, 0, NULL},
};
#undef CMD
#undef SET
#undef VAL

START_TEST(test_complete)
{
    struct dllm_sampler_params s = base_settings();
    struct ui_completion c;
    const bool done = ui_complete(completions[_i].input, &s, &c);
    ck_assert_msg(done == (completions[_i].line != NULL), "'%s'", completions[_i].input);
    if (!done)
        return;
    ck_assert_str_eq(c.line, completions[_i].line);
    ck_assert_uint_eq(c.n, completions[_i].n);
    ck_assert_str_eq(c.names, completions[_i].names);
    ck_assert_int_eq(c.kind, completions[_i].kind);
}
END_TEST

/* A file in folder dir, written empty. */
static void touch_file(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
}

/* /save and /load complete file names: a folder's entries, sorted, a folder's with '/'. */
START_TEST(test_complete_files)
{
    char dir[] = "/tmp/dllm-complete-XXXXXX", sub[64], in[256];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    touch_file(dir, "notes.md.jsonl");
    touch_file(dir, "notes.md");
    touch_file(dir, "other.txt");
    touch_file(dir, ".hidden");
    snprintf(sub, sizeof sub, "%s/chats", dir);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    touch_file(sub, "a.jsonl");
    struct dllm_sampler_params s = base_settings();
    struct ui_completion c;
    char want[256];

    snprintf(in, sizeof in, "/load %s/no", dir);
    ck_assert(ui_complete(in, &s, &c));
    ck_assert_int_eq(c.kind, UI_COMPLETE_FILE);
    ck_assert_uint_eq(c.n, 2);
    ck_assert_str_eq(c.names, "notes.md  notes.md.jsonl");
    snprintf(want, sizeof want, "/load %s/notes.md", dir);
    ck_assert_str_eq(c.line, want);
    snprintf(in, sizeof in, "/load  %s/c", dir); /* a folder: '/' after it, no space */
    ck_assert(ui_complete(in, &s, &c));
    snprintf(want, sizeof want, "/load  %s/chats/", dir);
    ck_assert_str_eq(c.line, want);
    ck_assert(ui_complete(want, &s, &c));
    snprintf(want, sizeof want, "/load  %s/chats/a.jsonl ", dir);
    ck_assert_str_eq(c.line, want);
    snprintf(in, sizeof in, "/save %s/", dir); /* hidden entries only for a '.' typed */
    ck_assert(ui_complete(in, &s, &c));
    ck_assert_str_eq(c.names, "chats/  notes.md  notes.md.jsonl  other.txt");
    snprintf(in, sizeof in, "/save %s/.h", dir);
    ck_assert(ui_complete(in, &s, &c));
    ck_assert_str_eq(c.names, ".hidden");
    snprintf(in, sizeof in, "/save %s/zz", dir);
    ck_assert(ui_complete(in, &s, &c));
    ck_assert_uint_eq(c.n, 0);
    snprintf(in, sizeof in, "/save %s/nope/x", dir);
    ck_assert(ui_complete(in, &s, &c));
    ck_assert_uint_eq(c.n, 0);
    char cwd[4096], home[4096] = "";
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    if (getenv("HOME"))
        snprintf(home, sizeof home, "%s", getenv("HOME"));
    setenv("HOME", dir, 1); /* "~/" is the home folder, kept as typed */
    ck_assert(ui_complete("/save ~/ot", &s, &c));
    ck_assert_str_eq(c.line, "/save ~/other.txt ");
    ck_assert(chdir(dir) == 0); /* no folder typed: the current one */
    ck_assert(ui_complete("/load ch", &s, &c));
    ck_assert_str_eq(c.line, "/load chats/");
    ck_assert(!ui_complete("/load my notes", &s, &c)); /* a blank: not completed */
    ck_assert(chdir(cwd) == 0);                        /* as they were, for a run without fork */
    if (home[0])
        setenv("HOME", home, 1);
    else
        unsetenv("HOME");

    snprintf(in, sizeof in, "rm -r '%s'", dir);
    ck_assert_int_eq(system(in), 0);
}
END_TEST

START_TEST(test_commands_help)
{
    char help[4096];
    ui_commands_help(help, sizeof help);
    ck_assert(strstr(help, "/save FILE        write the conversation as Markdown to FILE and as "
                           "JSON lines to FILE.jsonl (a FILE ending in .jsonl: only those)\n"));
    ck_assert(strstr(help,
                     "/system [TEXT]    set the system prompt (from the next answer on); alone, "
                     "show it; /system off removes it\n"));
    ck_assert(strstr(help, "/set [NAME VALUE] set a generation setting"));
    ck_assert(strstr(help, "/load FILE        read a conversation back"));
}
END_TEST

/* ---- keys --------------------------------------------------------------------------------- */

static const struct {
    const char *name;
    uint32_t key;
    const char *shown;
} key_names[] = {
    {"a", 'a', "a"},
    {"?", '?', "?"},
    {"\xc3\xa9", 0xE9, "\xc3\xa9"},
    {"Space", ' ', "Space"},
    {"Enter", UI_KEY_ENTER, "Enter"},
    {"M-Enter", UI_KEY_ENTER | UI_KEY_ALT, "Alt+Enter"},
    {"Alt+Enter", UI_KEY_ENTER | UI_KEY_ALT, "Alt+Enter"},
    {"C-c", 3, "Ctrl+C"},
    {"Ctrl+J", 10, "Ctrl+J"},
    {"C-j", 10, "Ctrl+J"},
    {"F1", UI_KEY_F1, "F1"},
    {"F12", UI_KEY_F12, "F12"},
    {"Esc", UI_KEY_ESC, "Esc"},
    {"Tab", UI_KEY_TAB, "Tab"},
    {"S-Tab", UI_KEY_BTAB, "Shift+Tab"},
    {"PgUp", UI_KEY_PGUP, "PgUp"},
    {"WheelUp", UI_KEY_WHEEL_UP, "WheelUp"},
    {"wheeldown", UI_KEY_WHEEL_DOWN, "WheelDown"},
    {"pgdn", UI_KEY_PGDN, "PgDn"},
    {"C-Left", UI_KEY_CTRL_LEFT, "Ctrl+Left"},
    {"M-b", 'b' | UI_KEY_ALT, "Alt+b"},
    {"Backspace", UI_KEY_BACKSPACE, "Backspace"},
};

START_TEST(test_key_names)
{
    uint32_t key;
    ck_assert_msg(ui_key_parse(key_names[_i].name, &key), "%s", key_names[_i].name);
    ck_assert_uint_eq(key, key_names[_i].key);
    char shown[32];
    ui_key_name(key, shown, sizeof shown);
    ck_assert_str_eq(shown, key_names[_i].shown);
}
END_TEST

START_TEST(test_key_table)
{
    uint32_t key;
    static const char *const bad[] = {"", "Entr", "F13", "F0", "C-1", "C-", "M-", "ab"};
    for (int i = 0; i < N_OF(bad); i++)
        ck_assert_msg(!ui_key_parse(bad[i], &key), "'%s' parsed", bad[i]);

    ck_assert_int_eq(ui_keys_lookup(UI_FOCUS_INPUT, UI_KEY_ENTER), UI_ACT_SEND);
    ck_assert_int_eq(ui_keys_lookup(UI_FOCUS_INPUT, UI_KEY_ENTER | UI_KEY_ALT), UI_ACT_NEWLINE);
    ck_assert_int_eq(ui_keys_lookup(UI_FOCUS_INPUT, 10), UI_ACT_NEWLINE);
    ck_assert_int_eq(ui_keys_lookup(UI_FOCUS_INPUT, 'x'), UI_ACT_NONE);
    ck_assert_int_eq(ui_keys_lookup(UI_FOCUS_INPUT, UI_KEY_UP), UI_ACT_UP);
    ck_assert_int_eq(ui_keys_lookup(UI_FOCUS_CONVERSATION, UI_KEY_UP), UI_ACT_SCROLL_UP);
    ck_assert_int_eq(ui_keys_lookup(UI_FOCUS_SETTINGS, '+'), UI_ACT_SLIDER_INC);
    ck_assert_int_eq(ui_keys_lookup(UI_FOCUS_SETTINGS, UI_KEY_LEFT), UI_ACT_SLIDER_PREV);
    ck_assert_int_eq(ui_keys_lookup(UI_FOCUS_TIMING, UI_KEY_END), UI_ACT_SCROLL_BOTTOM);
    for (int f = 0; f < UI_FOCUS_COUNT; f++) {
        ck_assert_int_eq(ui_keys_lookup((enum ui_focus)f, 3), UI_ACT_INTERRUPT);
        ck_assert_int_eq(ui_keys_lookup((enum ui_focus)f, UI_KEY_F1), UI_ACT_HELP);
        ck_assert_int_eq(ui_keys_lookup((enum ui_focus)f, UI_KEY_TAB),
                         f == UI_FOCUS_INPUT ? UI_ACT_COMPLETE_OR_FOCUS : UI_ACT_FOCUS_NEXT);
    }

    char help[8192];
    ui_keys_help(help, sizeof help);
    const char *start = "Everywhere\n  F1                     show or close this help\n";
    ck_assert(strncmp(help, start, strlen(start)) == 0);
    ck_assert(strstr(help, "\n  Alt+Enter, Ctrl+J      insert a newline\n"));
    ck_assert(strstr(help, "\n  Left, Ctrl+B           character left\n"));
    ck_assert(strstr(help, "\nSettings\n  Left                   select the slider to the left\n"));
    ck_assert(strstr(help, "\n  Up, +                  raise the selected slider a notch\n"));
    /* Each binding appears once: "insert a newline" once in the input box's section. */
    const char *first = strstr(help, "insert a newline");
    ck_assert(first && !strstr(first + 1, "insert a newline"));
}
END_TEST

/* ---- the transcript ----------------------------------------------------------------------- */

/* Two exchanges, the second answer stopped, with a system prompt. */
static void two_exchanges(struct ui_transcript *t)
{
    struct dllm_sampler_params s = base_settings();
    struct ui_timing_totals a = {
        .steps = 64, .forward_ms = 6400, .sample_ms = 128, .total_ms = 7000, .tokens = 3};
    struct ui_timing_totals b = {
        .steps = 10, .forward_ms = 1000, .sample_ms = 20, .total_ms = 1100, .tokens = 1};
    ui_transcript_init(t);
    ck_assert(ui_transcript_set_system(t, "Be brief."));
    ck_assert(ui_transcript_add(t, UI_ROLE_USER, "Hi"));
    ck_assert(ui_transcript_answer(t, "Hello there.", NULL, 0, false, &s, &a));
    ck_assert(ui_transcript_add(t, UI_ROLE_USER, "Again"));
    ck_assert(ui_transcript_answer(t, "Par", NULL, 0, true, &s, &b));
}

START_TEST(test_transcript_edits)
{
    struct ui_transcript t;
    two_exchanges(&t);
    struct dllm_chat_message msgs[8];
    ck_assert_uint_eq(ui_transcript_messages(&t, t.n, msgs, 8), 5);
    ck_assert_str_eq(msgs[0].role, "system");
    ck_assert_str_eq(msgs[0].content, "Be brief.");
    ck_assert_str_eq(msgs[1].role, "user");
    ck_assert_str_eq(msgs[2].role, "assistant");
    ck_assert_str_eq(msgs[4].content, "Par");

    /* A /regen sends the turns up to the last question; once its answer is in, the old goes. */
    ck_assert_uint_eq(ui_transcript_answer_start(&t), 3);
    ck_assert_str_eq(ui_transcript_last_answer(&t)->text, "Par");
    ck_assert_uint_eq(ui_transcript_messages(&t, 3, msgs, 8), 4);
    ck_assert_str_eq(msgs[3].content, "Again");
    ck_assert(ui_transcript_regen(&t));
    ck_assert_uint_eq(t.n, 3);
    ck_assert_str_eq(t.turns[2].text, "Again");
    ck_assert_ptr_null(ui_transcript_last_answer(&t));
    /* /undo removes the question too and hands it back. */
    char *text;
    ck_assert(ui_transcript_undo(&t, &text));
    ck_assert_str_eq(text, "Again");
    free(text);
    ck_assert_uint_eq(t.n, 2);
    ck_assert(ui_transcript_undo(&t, &text));
    free(text);
    ck_assert(!ui_transcript_undo(&t, &text));
    ck_assert(text == NULL);
    ck_assert(!ui_transcript_regen(&t));
    ck_assert_uint_eq(ui_transcript_answer_start(&t), 0);
    /* /system with no text removes it; /clear keeps it. */
    ck_assert(ui_transcript_set_system(&t, ""));
    ck_assert(t.system == NULL);
    ck_assert(ui_transcript_set_system(&t, "S"));
    ck_assert(ui_transcript_add(&t, UI_ROLE_USER, "x"));
    ui_transcript_clear(&t);
    ck_assert_uint_eq(t.n, 0);
    ck_assert_str_eq(t.system, "S");
    ui_transcript_fini(&t);
}
END_TEST

START_TEST(test_transcript_drop)
{
    struct ui_transcript t;
    two_exchanges(&t);
    ck_assert(ui_transcript_drop_oldest(&t, 2));
    ck_assert_uint_eq(t.n, 5);
    ck_assert(t.turns[0].dropped && t.turns[1].dropped && !t.turns[3].dropped);
    ck_assert_int_eq(t.turns[2].role, UI_ROLE_NOTICE);
    ck_assert_str_eq(t.turns[2].text,
                     "2 earlier messages no longer fit the model's context and are not sent to it");
    struct dllm_chat_message msgs[8];
    ck_assert_uint_eq(ui_transcript_messages(&t, t.n, msgs, 8), 3);
    ck_assert_str_eq(msgs[1].content, "Again");
    /* One more: the notice is singular and lands after the third message. */
    ck_assert(ui_transcript_drop_oldest(&t, 1));
    ck_assert_uint_eq(t.n, 6);
    ck_assert_str_eq(t.turns[4].text,
                     "1 earlier message no longer fits the model's context and is not sent to it");

    char headers[6][UI_HEADER_MAX];
    struct ui_sb_block blocks[3 * 7];
    size_t nb = ui_transcript_blocks(&t, false, headers, blocks);
    /* system (3) + 4 turns (3 each) + 2 notices (2 each) */
    ck_assert_uint_eq(nb, 19);
    ck_assert_str_eq(headers[0], "you \u00b7 not in context");
    ck_assert_str_eq(headers[1],
                     "dllm \u00b7 64 steps \u00b7 3 tokens \u00b7 7.00 s \u00b7 0.4 tok/s "
                     "\u00b7 not in context");
    ck_assert_str_eq(headers[5],
                     "dllm \u00b7 10 steps \u00b7 1 token \u00b7 1.10 s \u00b7 0.9 tok/s "
                     "\u00b7 stopped");
    ck_assert_uint_eq(blocks[3].style, UI_STYLE_HEADER);
    ck_assert_uint_eq(blocks[4].style, UI_STYLE_DIM); /* a dropped message */
    ck_assert_uint_eq(blocks[4].indent, 2);
    ck_assert_uint_eq(blocks[9].style, UI_STYLE_NOTICE);
    ui_transcript_fini(&t);
}
END_TEST

/* An answer's list items, Markdown or raw, wrap under their text in the conversation. */
START_TEST(test_transcript_list_hang)
{
    struct ui_transcript t;
    struct dllm_sampler_params s = base_settings();
    struct ui_timing_totals a = {.steps = 1, .total_ms = 1, .tokens = 1};
    ui_transcript_init(&t);
    ck_assert(ui_transcript_add(&t, UI_ROLE_USER, "List"));
    ck_assert(ui_transcript_answer(&t, "- aaaa bbbb cccc dddd eeee", NULL, 0, false, &s, &a));
    for (int raw = 0; raw < 2; raw++) {
        char headers[2][UI_HEADER_MAX];
        struct ui_sb_block blocks[3 * 3];
        size_t nb = ui_transcript_blocks(&t, raw, headers, blocks);
        struct ui_scrollback sb;
        ui_scrollback_init(&sb);
        ck_assert(ui_scrollback_layout(&sb, blocks, nb, 20)); /* the answer: 18 columns */
        size_t row = 0;
        while (row < sb.n_rows && sb.rows[row].block != 4)
            row++;
        ck_assert_uint_lt(row + 1, sb.n_rows);
        ck_assert_uint_eq(sb.rows[row + 1].block, 4);
        struct ui_cell cells[20];
        ui_scrollback_cells(&sb, blocks, row + 1, cells, 20);
        for (int c = 0; c < 4; c++) /* the answer's indent 2, then the marker's 2 */
            ck_assert_msg(cells[c].ch[0] == ' ', "raw %d: column %d is not blank", raw, c);
        ck_assert_msg(cells[4].ch[0] == 'd', "raw %d: the item continues at column 4", raw);
        ui_scrollback_fini(&sb);
    }
    ui_transcript_fini(&t);
}
END_TEST

START_TEST(test_transcript_markdown)
{
    struct ui_transcript t;
    two_exchanges(&t);
    ck_assert(ui_transcript_drop_oldest(&t, 2));
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    ck_assert(ui_transcript_write_markdown(&t, "tiny.gguf (Q4_K_M)", f));
    fclose(f);
    const char *settings = "steps 64, max tokens 128, block length 32, threshold off, "
                           "temperature 0.0, remasking low_confidence, seed 0";
    char want[2048];
    snprintf(want, sizeof want,
             "# dllm conversation\n\n"
             "Model: tiny.gguf (Q4_K_M)\n\n"
             "## System\n\nBe brief.\n\n"
             "## You (not in the model's context)\n\nHi\n\n"
             "## dllm (not in the model's context)\n\nHello there.\n\n"
             "> Settings: %s.  \n"
             "> Timings: 64 steps, 3 tokens in 7.00 s (0.4 tok/s); per step 100.0 ms forward + "
             "2.0 ms sample.\n\n"
             "*2 earlier messages no longer fit the model's context and are not sent to it.*\n\n"
             "## You\n\nAgain\n\n"
             "## dllm\n\nPar\n\n"
             "*Stopped before the answer was complete.*\n\n"
             "> Settings: %s.  \n"
             "> Timings: 10 steps, 1 token in 1.10 s (0.9 tok/s); per step 100.0 ms forward + "
             "2.0 ms sample.\n\n",
             settings, settings);
    ck_assert_str_eq(buf, want);
    free(buf);

    /* Saved to a file: the same bytes; an unwritable path fails with errno. */
    char *dir = test_tmpdir(), path[512];
    snprintf(path, sizeof path, "%s/chat.md", dir);
    ck_assert(ui_transcript_save(&t, "tiny.gguf (Q4_K_M)", path));
    FILE *in = fopen(path, "r");
    ck_assert(in != NULL);
    char saved[2048];
    size_t n = fread(saved, 1, sizeof saved, in);
    fclose(in);
    ck_assert_uint_eq(n, strlen(want));
    ck_assert(memcmp(saved, want, n) == 0);
    snprintf(path, sizeof path, "%s/no/such/dir/chat.md", dir);
    errno = 0;
    ck_assert(!ui_transcript_save(&t, NULL, path));
    ck_assert_int_eq(errno, ENOENT);
    free(dir);
    ui_transcript_fini(&t);
}
END_TEST

/* ---- timings ------------------------------------------------------------------------------ */

/* ---- the conversation as JSON lines ------------------------------------------------------- */

/* A file written by hand from jsonl.h's description (not by the code under test). */
static const char jsonl_golden[] =
    "{\"format\": \"dllm-chat\", \"version\": 1, \"model\": \"tiny.gguf\"}\n"
    "{\"role\": \"system\", \"text\": \"Be brief.\"}\n"
    "\n"
    "{\"role\": \"user\", \"text\": \"Hi \\u00e9\", \"dropped\": true}\r\n"
    "{\"role\": \"assistant\", \"text\": \"It \\u2026 x\", \"stopped\": true, \"gaps\": [2],"
    " \"settings\": {\"kind\": \"dream\", \"max_tokens\": 64, \"steps\": 32, \"threshold\": 0.9,"
    " \"alg\": \"maskgit_plus\", \"seed\": \"18446744073709551615\", \"cache\": \"dual\"},"
    " \"timings\": {\"steps\": 5, \"tokens\": 2, \"total_ms\": 250.5}}\n"
    "{\"role\": \"notice\", \"text\": \"system prompt from here on: x\"}\n";

START_TEST(test_jsonl_parse)
{
    struct ui_transcript t;
    char err[256] = "";
    ck_assert_msg(ui_jsonl_parse(jsonl_golden, strlen(jsonl_golden), &t, err, sizeof err), "%s",
                  err);
    ck_assert_str_eq(t.system, "Be brief.");
    ck_assert_uint_eq(t.n, 3);
    ck_assert_int_eq(t.turns[0].role, UI_ROLE_USER);
    ck_assert_str_eq(t.turns[0].text, "Hi \xc3\xa9");
    ck_assert(t.turns[0].dropped);
    const struct ui_turn *a = &t.turns[1];
    ck_assert_int_eq(a->role, UI_ROLE_ASSISTANT);
    ck_assert_str_eq(a->text, "It \xe2\x80\xa6 x");
    ck_assert(a->stopped && !a->dropped && a->has_stats);
    ck_assert_uint_eq(a->n_gaps, 1);
    ck_assert_uint_eq(a->gaps[0], 2);
    ck_assert_str_eq(a->context, "It"); /* the next turn's context stops at the gap */
    ck_assert_int_eq(a->settings.kind, DLLM_SAMPLER_DREAM);
    ck_assert_int_eq(a->settings.gen_length, 64);
    ck_assert_int_eq(a->settings.steps, 32);
    ck_assert_double_eq_tol(a->settings.threshold, 0.9, 1e-12);
    ck_assert_int_eq(a->settings.alg, DLLM_ALG_MASKGIT_PLUS);
    ck_assert_int_eq(a->settings.cache, DLLM_CACHE_DUAL);
    ck_assert_uint_eq(a->settings.seed, UINT64_MAX);
    ck_assert_double_eq_tol(a->settings.top_p, 0.95, 1e-12); /* Dream's default */
    ck_assert(a->settings.early_stop);
    ck_assert_int_eq(a->totals.steps, 5);
    ck_assert_int_eq(a->totals.tokens, 2);
    ck_assert_double_eq_tol(a->totals.total_ms, 250.5, 1e-12);
    ck_assert_int_eq(t.turns[2].role, UI_ROLE_NOTICE);
    ui_transcript_fini(&t);
}
END_TEST

/* Whether two settings are the same, member by member (memcmp would also read the padding). */
static bool settings_equal(const struct dllm_sampler_params *a, const struct dllm_sampler_params *b)
{
    return a->kind == b->kind && a->gen_length == b->gen_length && a->steps == b->steps &&
           a->block_length == b->block_length && a->temperature == b->temperature &&
           a->top_p == b->top_p && a->top_k == b->top_k && a->threshold == b->threshold &&
           a->remasking == b->remasking && a->alg == b->alg && a->alg_temp == b->alg_temp &&
           a->eps == b->eps && a->cfg_scale == b->cfg_scale && a->seed == b->seed &&
           a->early_stop == b->early_stop && a->cache == b->cache && a->cache_type == b->cache_type;
}

/* Written and read back, a conversation is the same: every turn, flag, setting and timing. */
START_TEST(test_jsonl_round_trip)
{
    struct ui_transcript t, back;
    two_exchanges(&t);
    struct dllm_sampler_params s = base_settings();
    s.seed = UINT64_MAX - 1;
    s.cache = DLLM_CACHE_PREFIX;
    s.cache_type = DLLM_CACHE_F32;
    s.temperature = 0.7;
    const struct ui_timing_totals totals = {.steps = 3,
                                            .forward_ms = 1.25,
                                            .sample_ms = 0.1,
                                            .total_ms = 7.5,
                                            .load_ms = 900,
                                            .tokens = 4};
    static const char gapped[] = "a \xe2\x80\xa6 b \xe2\x80\xa6 c \xe2\x80\xa6 ";
    static const size_t gaps[] = {1, 13};
    ck_assert(ui_transcript_add(&t, UI_ROLE_USER, "More \"quotes\"\n\ttab"));
    ck_assert(ui_transcript_answer(&t, gapped, gaps, 2, true, &s, &totals));
    ck_assert(ui_transcript_drop_oldest(&t, 1));
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    ck_assert(ui_jsonl_write(&t, "m.gguf (llada, Q4_K_M)", f));
    fclose(f);
    char err[256] = "";
    ck_assert_msg(ui_jsonl_parse(buf, size, &back, err, sizeof err), "%s", err);
    ck_assert_str_eq(back.system, t.system);
    ck_assert_uint_eq(back.n, t.n);
    for (size_t i = 0; i < t.n; i++) {
        const struct ui_turn *x = &t.turns[i], *y = &back.turns[i];
        ck_assert_int_eq(x->role, y->role);
        ck_assert_str_eq(x->text, y->text);
        ck_assert(x->stopped == y->stopped && x->dropped == y->dropped);
        ck_assert(x->has_stats == y->has_stats);
        ck_assert_uint_eq(x->n_gaps, y->n_gaps);
        for (size_t k = 0; k < x->n_gaps; k++)
            ck_assert_uint_eq(x->gaps[k], y->gaps[k]);
        if (x->has_stats) {
            ck_assert(settings_equal(&x->settings, &y->settings));
            ck_assert_int_eq(x->totals.steps, y->totals.steps);
            ck_assert_int_eq(x->totals.tokens, y->totals.tokens);
            ck_assert(x->totals.forward_ms == y->totals.forward_ms);
            ck_assert(x->totals.sample_ms == y->totals.sample_ms);
            ck_assert(x->totals.total_ms == y->totals.total_ms);
            ck_assert(x->totals.load_ms == y->totals.load_ms);
        }
    }
    /* The messages sent to the model are the same too (a stopped answer up to its gap). */
    struct dllm_chat_message m1[16], m2[16];
    const size_t n1 = ui_transcript_messages(&t, t.n, m1, 16);
    ck_assert_uint_eq(ui_transcript_messages(&back, back.n, m2, 16), n1);
    for (size_t i = 0; i < n1; i++)
        ck_assert_str_eq(m1[i].content, m2[i].content);
    ck_assert_str_eq(m1[n1 - 1].content, "a");
    free(buf);
    ui_transcript_fini(&t);
    ui_transcript_fini(&back);
}
END_TEST

/*
 * An answer whose pieces split a character (seen in tmux: /save failed) is saved with U+FFFD for
 * each invalid sequence, as JSON strings must be valid UTF-8; its gaps move along.
 */
START_TEST(test_jsonl_invalid_utf8)
{
    struct ui_transcript t, back;
    ui_transcript_init(&t);
    struct dllm_sampler_params s = base_settings();
    const struct ui_timing_totals totals = {.steps = 1};
    static const char text[] = "O\xff\xe4\xb8on \xe2\x80\xa6 x";
    static const size_t gaps[] = {6};
    ck_assert(ui_transcript_set_system(&t, "sys \xc3"));
    ck_assert(ui_transcript_answer(&t, text, gaps, 1, true, &s, &totals));
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    ck_assert(ui_jsonl_write(&t, NULL, f));
    fclose(f);
    char err[256] = "";
    ck_assert_msg(ui_jsonl_parse(buf, size, &back, err, sizeof err), "%s", err);
    ck_assert_str_eq(back.system, "sys \xef\xbf\xbd");
    ck_assert_str_eq(back.turns[0].text, "O\xef\xbf\xbd\xef\xbf\xbdon \xe2\x80\xa6 x");
    ck_assert_uint_eq(back.turns[0].gaps[0], 9);
    free(buf);
    ui_transcript_fini(&t);
    ui_transcript_fini(&back);
}
END_TEST

static const struct {
    const char *text, *err;
} bad_jsonl[] = {
    {"", "line 1: the file is empty: /save FILE writes a conversation to FILE.jsonl"},
    {"# dllm conversation\n", "line 1: not JSON: '[' or '{' expected near '#' (column 1)"},
    {"{\"role\": \"user\", \"text\": \"hi\"}\n",
     "line 1: not a dllm conversation: the first line has no \"format\": \"dllm-chat\" (/save "
     "writes FILE.jsonl)"},
    {"{\"format\": \"dllm-chat\", \"version\": 2}\n",
     "line 1: \"version\" must be 1, the version this dllm-tui reads"},
    {"{\"format\": \"dllm-chat\", \"version\": 1}\n[1]\n", "line 2: not a JSON object"},
    {"{\"format\": \"dllm-chat\", \"version\": 1}\n{\"role\": \"bot\", \"text\": \"x\"}\n",
     "line 2: \"role\" is \"bot\": use user, assistant, notice or system"},
    {"{\"format\": \"dllm-chat\", \"version\": 1}\n{\"role\": \"user\"}\n",
     "line 2: \"text\" is missing: it must be a string"},
    {"{\"format\": \"dllm-chat\", \"version\": 1}\n{\"role\": \"user\", \"text\": 3}\n",
     "line 2: \"text\" is not a string: it must be a string"},
    {"{\"format\": \"dllm-chat\", \"version\": 1}\n{\"role\": \"assistant\", \"text\": \"x\"}\n",
     "line 2: an answer needs \"settings\", an object"},
    {"{\"format\": \"dllm-chat\", \"version\": 1}\n{\"role\": \"assistant\", \"text\": \"x\", "
     "\"settings\": {\"kind\": \"gpt\"}}\n",
     "line 2: settings: \"kind\" must be llada or dream"},
    {"{\"format\": \"dllm-chat\", \"version\": 1}\n{\"role\": \"assistant\", \"text\": \"x\", "
     "\"settings\": {\"kind\": \"llada\", \"steps\": -1}}\n",
     "line 2: \"steps\" must be a whole number from 0 to 2147483647"},
    {"{\"format\": \"dllm-chat\", \"version\": 1}\n{\"role\": \"assistant\", \"text\": \"x\", "
     "\"settings\": {\"kind\": \"llada\", \"steps\": 30}}\n",
     "line 2: settings: steps 30 is not a multiple of the 4 blocks (gen length 128 / block "
     "length 32): use 28 or 32"},
    {"{\"format\": \"dllm-chat\", \"version\": 1}\n{\"role\": \"assistant\", \"text\": \"x\", "
     "\"settings\": {\"kind\": \"llada\", \"seed\": -1}}\n",
     "line 2: settings: \"seed\" must be a whole number from 0 to 18446744073709551615"},
    {"{\"format\": \"dllm-chat\", \"version\": 1}\n{\"role\": \"assistant\", \"text\": \"x\", "
     "\"settings\": {\"kind\": \"llada\", \"cache\": \"full\"}}\n",
     "line 2: settings: \"cache\" must be none, prefix or dual"},
    {"{\"format\": \"dllm-chat\", \"version\": 1}\n{\"role\": \"assistant\", \"text\": \"a b\", "
     "\"stopped\": true, \"gaps\": [1], \"settings\": {\"kind\": \"llada\"}}\n",
     "line 2: \"gaps\" must be offsets of \" \\u2026 \" marks in the text, ascending"},
    {"{\"format\": \"dllm-chat\", \"version\": 1}\n{\"role\": \"assistant\", \"text\": \"a b\", "
     "\"gaps\": [9], \"settings\": {\"kind\": \"llada\"}}\n",
     "line 2: \"gaps\" must be a list of byte offsets into the text"},
    {"{\"format\": \"dllm-chat\", \"version\": 1}\n{\"role\": \"user\", \"text\": \"a\", "
     "\"text\": \"b\"}\n",
     "line 2: not JSON: duplicate object key near '\"text\"' (column 36)"},
    {"{\"format\": \"dllm-chat\", \"version\": 1}\n{\"role\": \"user\", \"text\": \"\\u0000\"}\n",
     "line 2: not JSON: \\u0000 is not allowed without JSON_ALLOW_NUL near '\"\\u0000\"' "
     "(column 33)"},
};

START_TEST(test_jsonl_errors)
{
    struct ui_transcript t;
    char err[256] = "";
    ck_assert(!ui_jsonl_parse(bad_jsonl[_i].text, strlen(bad_jsonl[_i].text), &t, err, sizeof err));
    ck_assert_str_eq(err, bad_jsonl[_i].err);
    ck_assert_uint_eq(t.n, 0);
    ck_assert_ptr_null(t.system);
}
END_TEST

START_TEST(test_sparkline)
{
    char buf[64];
    const double v[] = {0, 1, 2, 4, 8};
    ck_assert_uint_eq(ui_sparkline(v, 5, buf, sizeof buf), 5);
    ck_assert_str_eq(buf, "\u2581\u2582\u2583\u2585\u2588");
    const double flat[] = {5, 5};
    ui_sparkline(flat, 2, buf, sizeof buf);
    ck_assert_str_eq(buf, "\u2588\u2588");
    ck_assert_uint_eq(ui_sparkline(v, 0, buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "");
    /* Room for two glyphs and the NUL only. */
    ck_assert_uint_eq(ui_sparkline(v, 5, buf, 7), 2);
    ck_assert_str_eq(buf, "\u2581\u2582");

    /* The pane's sparkline: the last two steps' forward + sample times, 10 and 40 ms. */
    struct ui_timing t;
    ui_timing_init(&t);
    struct ui_step_stat s = {.step = 0, .forward_ms = 90, .sample_ms = 10};
    ck_assert(ui_timing_add(&t, &s));
    s = (struct ui_step_stat){.step = 1, .forward_ms = 8, .sample_ms = 2};
    ck_assert(ui_timing_add(&t, &s));
    s = (struct ui_step_stat){.step = 2, .forward_ms = 35, .sample_ms = 5};
    ck_assert(ui_timing_add(&t, &s));
    ck_assert_uint_eq(ui_timing_sparkline(&t, 2, buf, sizeof buf), 2);
    ck_assert_str_eq(buf, "\u2583\u2588"); /* floor(8 * 10 / 40) = 2 */
    struct ui_timing_totals tot = {.total_ms = 200, .tokens = 4};
    ui_timing_sum(&t, &tot);
    ck_assert_int_eq(tot.steps, 3);
    ck_assert_double_eq_tol(tot.forward_ms, 133, 1e-9);
    ck_assert_double_eq_tol(tot.sample_ms, 17, 1e-9);
    ui_timing_fini(&t);
}
END_TEST

START_TEST(test_timing_text)
{
    char buf[200];
    struct ui_step_stat s = {3, 0, 812.4, 10.2, 4, 92, false};
    ui_timing_row(&s, buf, sizeof buf);
    ck_assert_str_eq(buf, "   3   812.4    10.2     4    92");
    ck_assert_uint_eq(strlen(buf), strlen(UI_TIMING_HEADER));
    /* A step with a quota of 0 ran no pass: said so, not a row of zeros. */
    struct ui_step_stat q = {4, 0, 0.0, 0.01, 0, 92, true};
    ui_timing_row(&q, buf, sizeof buf);
    ck_assert_str_eq(buf, "   4  quota 0, no pass        92");
    ck_assert_uint_eq(strlen(buf), strlen(UI_TIMING_HEADER));
    struct ui_timing_totals t = {.steps = 32,
                                 .forward_ms = 3840,
                                 .sample_ms = 256,
                                 .total_ms = 4100,
                                 .load_ms = 1200,
                                 .tokens = 128};
    ui_timing_format_totals(&t, buf, sizeof buf);
    ck_assert_str_eq(buf, "32 steps, 128 tokens in 4.10 s (31.2 tok/s); per step 120.0 ms "
                          "forward + 8.0 ms sample; load 1.20 s");
}
END_TEST

/*
 * Live speed: the median of the last 8 step times, tokens per second of step time, and the
 * planned steps left times that median (with a threshold, masks over the mean commits a step).
 */
START_TEST(test_timing_live)
{
    struct ui_timing t;
    ui_timing_init(&t);
    char buf[128];
    ui_timing_live(&t, 63, 100, true, buf, sizeof buf);
    ck_assert_str_eq(buf, "");
    /* Steps of 400, 500 and 600 ms, 2 tokens each: median 500 ms, 6 tokens in 1.5 s. */
    for (int i = 0; i < 3; i++)
        ck_assert(ui_timing_add(
            &t, &(struct ui_step_stat){i, 0, 390.0 + 100 * i, 10.0, 2, 100 - 2 * i, false}));
    ui_timing_live(&t, 63, 94, true, buf, sizeof buf);
    ck_assert_str_eq(buf, "500 ms/step \u00b7 4.0 tok/s \u00b7 ETA 30 s"); /* 60 x 500 ms */
    ui_timing_live(&t, 203, 94, false, buf, sizeof buf);
    ck_assert_str_eq(buf, "4.0 tok/s \u00b7 ETA 1m40s"); /* 200 x 500 ms */
    ui_timing_live(&t, 0, 100, true, buf, sizeof buf);
    ck_assert_str_eq(buf, "500 ms/step \u00b7 4.0 tok/s \u00b7 ETA ~25 s"); /* 100 / 2 x 500 */
    /* Only the last 8 steps count for the median: 8 steps of 1000 ms after them. */
    for (int i = 3; i < 11; i++)
        ck_assert(ui_timing_add(&t, &(struct ui_step_stat){i, 0, 990.0, 10.0, 2, 0, false}));
    ui_timing_live(&t, 12, 0, true, buf, sizeof buf);
    ck_assert_str_eq(buf, "1000 ms/step \u00b7 2.3 tok/s \u00b7 ETA 1.0 s"); /* 22 / 9.5 s */
    ui_timing_fini(&t);
}
END_TEST

/* ---- Markdown ----------------------------------------------------------------------------- */

/*
 * A settled answer's Markdown: a heading, strong, emphasis, a code span, a list item, a fenced
 * block (its fences gone, its lines code), and marks that do not close left as written.
 */
START_TEST(test_markdown)
{
    static const char src[] = "# Title\nSome **bold** and *it* with `x = 1`.\n- item one\n"
                              "```c\nint a;\n```\na * b_c end";
    char *out;
    uint8_t *styles;
    size_t len;
    ck_assert(ui_markdown_render(src, strlen(src), &out, &styles, &len));
    ck_assert_str_eq(out,
                     "Title\nSome bold and it with x = 1.\n\u2022 item one\nint a;\na * b_c end");
    ck_assert_uint_eq(len, strlen(out));
    /* h: heading, B: strong, i: emphasis, c: code, .: text (UI_STYLE_LETTERS). */
    static const char want[] = "hhhhh......BBBB.....ii......ccccc...............cccccc............";
    ck_assert_uint_eq(strlen(want), len);
    for (size_t i = 0; i < len; i++)
        ck_assert_msg(UI_STYLE_LETTERS[styles[i]] == want[i], "byte %zu: %c, expected %c", i,
                      UI_STYLE_LETTERS[styles[i]], want[i]);
    free(out);
    free(styles);
    ck_assert(ui_markdown_render("", 0, &out, &styles, &len));
    ck_assert_str_eq(out, "");
    free(out);
    free(styles);
}
END_TEST

/* RFC 4648's test vectors, and the OSC 52 request around them. */
START_TEST(test_clipboard)
{
    static const char *const vectors[][2] = {{"", ""},
                                             {"f", "Zg=="},
                                             {"fo", "Zm8="},
                                             {"foo", "Zm9v"},
                                             {"foob", "Zm9vYg=="},
                                             {"fooba", "Zm9vYmE="},
                                             {"foobar", "Zm9vYmFy"}};
    char out[16];
    for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++) {
        const char *in = vectors[i][0];
        ck_assert_uint_eq(ui_base64((const unsigned char *)in, strlen(in), out),
                          strlen(vectors[i][1]));
        ck_assert_str_eq(out, vectors[i][1]);
    }
    char *seq = ui_clipboard_osc52("foobar", 6);
    ck_assert_str_eq(seq, "\033]52;c;Zm9vYmFy\a");
    free(seq);
    /* The last fenced block's contents, without the fences. */
    static const char md[] = "a\n```\none\n```\nb\n```py\nx = 1\ny = 2\n```\nc";
    size_t start, end;
    ck_assert(ui_markdown_last_code(md, strlen(md), &start, &end));
    ck_assert_int_eq((int)(end - start), 11);
    ck_assert(strncmp(md + start, "x = 1\ny = 2", end - start) == 0);
    ck_assert(!ui_markdown_last_code("no code", 7, &start, &end));
}
END_TEST

/* ---- the frame slot ----------------------------------------------------------------------- */

/* A START event for a canvas of 2 prompt ids and 3 masks (id 99), 3 steps planned. */
static const int32_t start_canvas[] = {1, 2, 99, 99, 99};

static struct dllm_event start_event(void)
{
    return (struct dllm_event){.kind = DLLM_EVENT_START,
                               .canvas = start_canvas,
                               .canvas_len = 5,
                               .n_prompt = 2,
                               .n_steps = 3};
}

START_TEST(test_frame_events)
{
    struct ui_frame_slot slot;
    ck_assert(ui_frame_slot_init(&slot));
    struct ui_frame frame;
    ui_frame_init(&frame);
    struct ui_timing timing;
    ui_timing_init(&timing);
    struct ui_frame_news news = {0};

    ck_assert_int_eq(ui_frame_slot_take(&slot, &frame, &timing, &news), 0);
    struct dllm_event ev = start_event();
    ui_frame_slot_event(&slot, &ev);
    ck_assert_int_eq(ui_frame_slot_take(&slot, &frame, &timing, &news), UI_TAKE_CANVAS);
    ck_assert_uint_eq(frame.n, 5);
    ck_assert_uint_eq(frame.n_prompt, 2);
    ck_assert_int_eq(frame.step, -1);
    ck_assert_int_eq(frame.n_steps, 3);
    static const uint8_t laid_out[] = {UI_POS_PROMPT, UI_POS_PROMPT, UI_POS_MASKED, UI_POS_MASKED,
                                       UI_POS_MASKED};
    ck_assert(memcmp(frame.states, laid_out, 5) == 0);

    /* Two steps before the UI looks: it sees the second canvas and both steps' statistics. */
    int32_t c1[] = {1, 2, 99, 30, 99}, c2[] = {1, 2, 20, 30, 40};
    struct dllm_commit k1[] = {{3, 30, 0.9}}, k2[] = {{4, 40, 0.8}, {2, 20, 0.7}};
    ev = (struct dllm_event){.kind = DLLM_EVENT_STEP,
                             .canvas = c1,
                             .canvas_len = 5,
                             .n_prompt = 2,
                             .step = 0,
                             .committed = k1,
                             .n_committed = 1,
                             .masks_left = 2,
                             .forward_ms = 10,
                             .sample_ms = 1};
    ui_frame_slot_event(&slot, &ev);
    ev = (struct dllm_event){.kind = DLLM_EVENT_STEP,
                             .canvas = c2,
                             .canvas_len = 5,
                             .n_prompt = 2,
                             .step = 1,
                             .committed = k2,
                             .n_committed = 2,
                             .masks_left = 0,
                             .forward_ms = 12,
                             .sample_ms = 2};
    ui_frame_slot_event(&slot, &ev);
    ev = (struct dllm_event){
        .kind = DLLM_EVENT_NOTICE, .message = "dropped 2 messages", .dropped_messages = 2};
    ui_frame_slot_event(&slot, &ev);
    ev = (struct dllm_event){.kind = DLLM_EVENT_DONE,
                             .canvas = c2,
                             .canvas_len = 5,
                             .text = "abc",
                             .n_tokens = 3,
                             .steps_run = 2,
                             .total_ms = 25,
                             .dropped_messages = 2};
    ui_frame_slot_event(&slot, &ev);
    int got = ui_frame_slot_take(&slot, &frame, &timing, &news);
    ck_assert_int_eq(got, UI_TAKE_CANVAS | UI_TAKE_STEPS | UI_TAKE_NOTICE | UI_TAKE_DONE);
    static const uint8_t after[] = {UI_POS_PROMPT, UI_POS_PROMPT, UI_POS_NEW, UI_POS_SETTLED,
                                    UI_POS_NEW};
    ck_assert(memcmp(frame.states, after, 5) == 0);
    ck_assert(memcmp(frame.ids, c2, sizeof c2) == 0);
    ck_assert_int_eq(frame.step, 1);
    ck_assert_uint_eq(timing.n, 2);
    ck_assert_int_eq(timing.steps[0].committed, 1);
    ck_assert_int_eq(timing.steps[1].committed, 2);
    ck_assert_double_eq_tol(timing.steps[1].forward_ms, 12, 1e-12);
    ck_assert_int_eq(timing.steps[1].masks_left, 0);
    ck_assert_str_eq(news.notice, "dropped 2 messages");
    ck_assert_int_eq(news.dropped, 2);
    ck_assert_int_eq(news.result.end, UI_GEN_FINISHED);
    ck_assert_str_eq(news.result.text, "abc");
    ck_assert_int_eq(news.result.dropped, 2);
    ck_assert_int_eq(news.result.totals.tokens, 3);
    ck_assert_int_eq(news.result.totals.steps, 2);
    free(news.result.text);

    /* An error ends the next generation; a step with no START before it is ignored. */
    ev = (struct dllm_event){.kind = DLLM_EVENT_ERROR, .message = "prompt too long"};
    ui_frame_slot_event(&slot, &ev);
    ev = (struct dllm_event){.kind = DLLM_EVENT_STEP,
                             .canvas = c1,
                             .canvas_len = 5,
                             .step = 0,
                             .committed = k1,
                             .n_committed = 1};
    ui_frame_slot_event(&slot, &ev);
    ck_assert_int_eq(ui_frame_slot_take(&slot, &frame, &timing, &news), UI_TAKE_DONE);
    ck_assert_int_eq(news.result.end, UI_GEN_FAILED);
    ck_assert_str_eq(news.result.error, "prompt too long");
    free(news.result.text);

    ui_timing_fini(&timing);
    ui_frame_fini(&frame);
    ui_frame_slot_fini(&slot);
}
END_TEST

enum { WORKER_STEPS = 200 };

/* A worker publishing a generation of WORKER_STEPS steps as fast as it can, then DONE. */
static void *worker(void *arg)
{
    struct ui_frame_slot *slot = arg;
    int32_t canvas[2 + WORKER_STEPS];
    canvas[0] = canvas[1] = 1;
    for (int i = 0; i < WORKER_STEPS; i++)
        canvas[2 + i] = 99;
    struct dllm_event ev = {.kind = DLLM_EVENT_START,
                            .canvas = canvas,
                            .canvas_len = 2 + WORKER_STEPS,
                            .n_prompt = 2,
                            .n_steps = WORKER_STEPS};
    ui_frame_slot_event(slot, &ev);
    for (int i = 0; i < WORKER_STEPS; i++) {
        canvas[2 + i] = 1000 + i;
        struct dllm_commit k = {2 + i, 1000 + i, 1.0};
        ev = (struct dllm_event){.kind = DLLM_EVENT_STEP,
                                 .canvas = canvas,
                                 .canvas_len = 2 + WORKER_STEPS,
                                 .n_prompt = 2,
                                 .step = i,
                                 .committed = &k,
                                 .n_committed = 1,
                                 .masks_left = WORKER_STEPS - 1 - i,
                                 .forward_ms = i};
        ui_frame_slot_event(slot, &ev);
    }
    ev = (struct dllm_event){.kind = DLLM_EVENT_DONE, .text = "done", .steps_run = WORKER_STEPS};
    ui_frame_slot_event(slot, &ev);
    return NULL;
}

START_TEST(test_frame_thread)
{
    struct ui_frame_slot slot;
    ck_assert(ui_frame_slot_init(&slot));
    struct ui_frame frame;
    ui_frame_init(&frame);
    struct ui_timing timing;
    ui_timing_init(&timing);
    struct ui_frame_news news = {0};
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, worker, &slot), 0);
    /* The UI's loop: wait on the eventfd, take; canvases may be skipped, steps never. */
    int canvases = 0;
    for (;;) {
        struct pollfd pfd = {slot.wake_fd, POLLIN, 0};
        ck_assert_int_eq(poll(&pfd, 1, 10000), 1);
        int got = ui_frame_slot_take(&slot, &frame, &timing, &news);
        canvases += (got & UI_TAKE_CANVAS) != 0;
        if (got & UI_TAKE_DONE)
            break;
    }
    pthread_join(th, NULL);
    ck_assert_uint_eq(timing.n, WORKER_STEPS);
    for (int i = 0; i < WORKER_STEPS; i++)
        ck_assert_int_eq(timing.steps[i].step, i);
    ck_assert_int_eq(frame.step, WORKER_STEPS - 1);
    ck_assert_int_eq(frame.ids[2 + WORKER_STEPS - 1], 1000 + WORKER_STEPS - 1);
    ck_assert(canvases >= 1 && canvases <= WORKER_STEPS + 1);
    ck_assert_str_eq(news.result.text, "done");
    free(news.result.text);
    ui_timing_fini(&timing);
    ui_frame_fini(&frame);
    ui_frame_slot_fini(&slot);
}
END_TEST

/* ---- key scripts and the layout ----------------------------------------------------------- */

START_TEST(test_script_parse)
{
    const char src[] = "# a comment\n"
                       "\n"
                       "text hi there \n"
                       "paste a\\nb\\\\c\\q\r\n"
                       "key C-c 2\n"
                       "key M-Enter\n"
                       "resize 100x30\n"
                       "wait-idle\n"
                       "wait-step 3\n"
                       "dump out.txt\n"
                       "dump-styles s.txt";
    struct ui_script s;
    char err[160] = "";
    ck_assert_msg(ui_script_parse(src, strlen(src), &s, err, sizeof err), "%s", err);
    ck_assert_uint_eq(s.n, 9);
    ck_assert_int_eq(s.cmds[0].op, UI_SCRIPT_TEXT);
    ck_assert_int_eq(s.cmds[0].line, 3);
    ck_assert_str_eq(s.cmds[0].text, "hi there ");
    ck_assert_int_eq(s.cmds[1].op, UI_SCRIPT_PASTE);
    ck_assert_str_eq(s.cmds[1].text, "a\nb\\c\\q");
    ck_assert_uint_eq(s.cmds[1].len, 7);
    ck_assert_int_eq(s.cmds[2].op, UI_SCRIPT_KEY);
    ck_assert_uint_eq(s.cmds[2].key, 3);
    ck_assert_int_eq(s.cmds[2].count, 2);
    ck_assert_uint_eq(s.cmds[3].key, UI_KEY_ENTER | UI_KEY_ALT);
    ck_assert_int_eq(s.cmds[3].count, 1);
    ck_assert_int_eq(s.cmds[4].op, UI_SCRIPT_RESIZE);
    ck_assert_int_eq(s.cmds[4].cols, 100);
    ck_assert_int_eq(s.cmds[4].rows, 30);
    ck_assert_int_eq(s.cmds[5].op, UI_SCRIPT_WAIT_IDLE);
    ck_assert_int_eq(s.cmds[6].op, UI_SCRIPT_WAIT_STEP);
    ck_assert_int_eq(s.cmds[6].count, 3);
    ck_assert_int_eq(s.cmds[7].op, UI_SCRIPT_DUMP);
    ck_assert_str_eq(s.cmds[7].text, "out.txt");
    ck_assert_int_eq(s.cmds[8].op, UI_SCRIPT_DUMP_STYLES);
    ck_assert_int_eq(s.cmds[8].line, 11);
    ui_script_fini(&s);
}
END_TEST

static const struct {
    const char *src;
    const char *err;
} bad_scripts[] = {
    {"key Entr", "line 1: unknown key 'Entr'"},
    {"text ok\nresize 100", "line 2: use 'resize COLSxROWS', e.g. 'resize 100x30'"},
    {"resize 0x30", "line 1: use 'resize COLSxROWS', e.g. 'resize 100x30'"},
    {"key", "line 1: use 'key NAME [COUNT]', not 'key '"},
    {"key a 0", "line 1: use 'key NAME [COUNT]', not 'key a 0'"},
    {"key a 2 3", "line 1: use 'key NAME [COUNT]', not 'key a 2 3'"},
    {"wait-step 0", "line 1: use 'wait-step N' with N from 1"},
    {"wait-idle now", "line 1: wait-idle takes no argument"},
    {"dump", "line 1: unknown command 'dump' (known: text, paste, key, resize, wait-idle, "
             "wait-step, dump, dump-styles)"},
    {"\n\nfrob x", "line 3: unknown command 'frob' (known: text, paste, key, resize, wait-idle, "
                   "wait-step, dump, dump-styles)"},
};

START_TEST(test_script_errors)
{
    struct ui_script s = {0};
    char err[200] = "";
    ck_assert(
        !ui_script_parse(bad_scripts[_i].src, strlen(bad_scripts[_i].src), &s, err, sizeof err));
    ck_assert_str_eq(err, bad_scripts[_i].err);
    ck_assert_uint_eq(s.n, 0);
}
END_TEST

static const struct {
    int rows, cols, input, canvas;
    bool too_small;
    struct ui_rect conversation, canvas_r, timing, input_r, settings, status;
    int message;
    struct ui_rect message_r;
    int settings_rows;
} layouts[] = {
    /* 24 x 80: no room for the timing pane; the input 1 row under its title. */
    {24,
     80,
     1,
     0,
     false,
     {0, 0, 20, 80},
     {20, 0, 0, 0},
     {0, 0, 0, 0},
     {20, 0, 2, 80},
     {22, 0, 1, 80},
     {23, 0, 1, 80},
     0,
     {0, 0, 0, 0},
     1},
    /* 30 x 100: the timing pane takes the right 34 columns; a 5-row canvas plus its title. */
    {30,
     100,
     3,
     5,
     false,
     {0, 0, 18, 66},
     {18, 0, 6, 66},
     {0, 66, 24, 34},
     {24, 0, 4, 100},
     {28, 0, 1, 100},
     {29, 0, 1, 100},
     0,
     {0, 0, 0, 0},
     1},
    /* A long input stops at 6 rows (7 with the title), leaving 21 above it; a tall canvas
     * stops at two thirds of those, 14. */
    {30,
     100,
     10,
     100,
     false,
     {0, 0, 7, 66},
     {7, 0, 14, 66},
     {0, 66, 21, 34},
     {21, 0, 7, 100},
     {28, 0, 1, 100},
     {29, 0, 1, 100},
     0,
     {0, 0, 0, 0},
     1},
    {.rows = 11, .cols = 80, .input = 1, .too_small = true},
    {.rows = 12, .cols = 39, .input = 1, .too_small = true},
    {12,
     40,
     1,
     0,
     false,
     {0, 0, 8, 40},
     {8, 0, 0, 0},
     {0, 0, 0, 0},
     {8, 0, 2, 40},
     {10, 0, 1, 40},
     {11, 0, 1, 40},
     0,
     {0, 0, 0, 0},
     1},
    /* A message of 5 rows shows 3 above the input, full width; the panes above give way. */
    {24,
     100,
     1,
     4,
     false,
     {0, 0, 12, 66},
     {12, 0, 5, 66},
     {0, 66, 17, 34},
     {20, 0, 2, 100},
     {22, 0, 1, 100},
     {23, 0, 1, 100},
     5,
     {17, 0, 3, 100},
     1},
    /* 20 x 60: the slider bar wrapped over 2 rows pushes the input up one. */
    {20,
     60,
     1,
     0,
     false,
     {0, 0, 15, 60},
     {15, 0, 0, 0},
     {0, 0, 0, 0},
     {15, 0, 2, 60},
     {17, 0, 2, 60},
     {19, 0, 1, 60},
     0,
     {0, 0, 0, 0},
     2},
};

/* Fails unless two rectangles are equal. */
static void expect_rect(const char *what, struct ui_rect got, struct ui_rect want)
{
    ck_assert_msg(got.y == want.y && got.x == want.x && got.h == want.h && got.w == want.w,
                  "%s: {%d, %d, %d, %d}, expected {%d, %d, %d, %d}", what, got.y, got.x, got.h,
                  got.w, want.y, want.x, want.h, want.w);
}

START_TEST(test_layout)
{
    struct ui_layout l;
    ui_layout_compute(&l, layouts[_i].rows, layouts[_i].cols, layouts[_i].message,
                      layouts[_i].input, layouts[_i].canvas, layouts[_i].settings_rows);
    ck_assert_int_eq(l.too_small, layouts[_i].too_small);
    if (l.too_small)
        return;
    expect_rect("conversation", l.conversation, layouts[_i].conversation);
    expect_rect("canvas", l.canvas, layouts[_i].canvas_r);
    expect_rect("timing", l.timing, layouts[_i].timing);
    expect_rect("message", l.message, layouts[_i].message_r);
    expect_rect("input", l.input, layouts[_i].input_r);
    expect_rect("settings", l.settings, layouts[_i].settings);
    expect_rect("status", l.status, layouts[_i].status);
}
END_TEST

/* ---- the app: keys, commands and engine events, over the manual mock engine ---------------- */

struct app_fixture {
    struct ui_frame_slot slot;
    struct ui_engine *engine;
    struct ui_app app;
    double now; /* ms; each key advances it by 10 */
};

static void app_setup(struct app_fixture *f)
{
    ck_assert(ui_frame_slot_init(&f->slot));
    f->engine = mock_engine_manual(&f->slot);
    struct ui_engine_info info = {.model = "m.gguf",
                                  .arch = "llada",
                                  .quant = "Q4_K_M",
                                  .device = "cpu",
                                  .threads = 2,
                                  .n_ctx = 4096};
    struct dllm_sampler_params s = base_settings();
    ck_assert(ui_app_init(&f->app, f->engine, &f->slot, &info, &s, NULL));
    f->now = 1e6;
}

static void app_teardown(struct app_fixture *f)
{
    ui_app_fini(&f->app);
    ui_engine_close(f->engine);
    ui_frame_slot_fini(&f->slot);
}

/* Presses a key 10 ms after the previous one. */
static void press(struct app_fixture *f, uint32_t key)
{
    f->now += 10;
    ui_app_key(&f->app, key, f->now);
}

/* Types text, a key a character. */
static void type(struct app_fixture *f, const char *text)
{
    for (size_t i = 0; i < strlen(text);) {
        uint32_t cp;
        i += ui_utf8_decode(text + i, strlen(text) - i, &cp);
        press(f, cp);
    }
}

/* Types text and presses Enter. */
static void enter(struct app_fixture *f, const char *text)
{
    type(f, text);
    press(f, UI_KEY_ENTER);
}

/* The engine reports START (2 prompt ids, 3 masks), n steps, and optionally the end. */
static void engine_runs(struct app_fixture *f, int steps, const char *done_text, bool cancelled,
                        int dropped)
{
    struct dllm_event ev = start_event();
    ui_frame_slot_event(&f->slot, &ev);
    int32_t canvas[5] = {1, 2, 99, 99, 99};
    for (int i = 0; i < steps; i++) {
        canvas[2 + i] = 20 + i;
        struct dllm_commit k = {2 + i, 20 + i, 0.9};
        ev = (struct dllm_event){.kind = DLLM_EVENT_STEP,
                                 .canvas = canvas,
                                 .canvas_len = 5,
                                 .n_prompt = 2,
                                 .step = i,
                                 .committed = &k,
                                 .n_committed = 1,
                                 .masks_left = 2 - i,
                                 .forward_ms = 100,
                                 .sample_ms = 10};
        ui_frame_slot_event(&f->slot, &ev);
    }
    if (done_text) {
        ev = (struct dllm_event){.kind = DLLM_EVENT_DONE,
                                 .canvas = canvas,
                                 .canvas_len = 5,
                                 .text = done_text,
                                 .text_before_gap = strlen(done_text),
                                 .n_tokens = steps,
                                 .steps_run = steps,
                                 .cancelled = cancelled,
                                 .total_ms = 500,
                                 .dropped_messages = dropped};
        ui_frame_slot_event(&f->slot, &ev);
    }
    ui_app_poll(&f->app);
}

/*
 * The timing pane scrolls back at most until step 0 is its first row: Home showed nothing and
 * Down only step 0 when timing_back could run to the number of steps.
 */
/*
 * A cancelled answer with gaps of masks keeps its gaps on screen, but the next turn sends only
 * its text before the first gap (the glued tokens became context before). Only the gaps the
 * engine reports are dim: the model's own " \u2026 " after the first gap stays plain (every one
 * was dimmed before).
 */
START_TEST(test_app_gapped_answer)
{
    struct app_fixture f;
    app_setup(&f);
    enter(&f, "hi");
    struct dllm_event ev = start_event();
    ui_frame_slot_event(&f.slot, &ev);
    static const char text[] = "It is \u2026 far \u2026 x \u2026 ";
    static const size_t gaps[] = {5, 19};
    ev = (struct dllm_event){.kind = DLLM_EVENT_DONE,
                             .text = text,
                             .text_before_gap = 5,
                             .gaps = gaps,
                             .n_gaps = 2,
                             .n_tokens = 3,
                             .steps_run = 1,
                             .cancelled = true};
    ui_frame_slot_event(&f.slot, &ev);
    ui_app_poll(&f.app);
    ck_assert_str_eq(f.app.transcript.turns[1].text, text);
    struct dllm_chat_message msgs[4];
    ck_assert_uint_eq(ui_transcript_messages(&f.app.transcript, 2, msgs, 4), 2);
    ck_assert_str_eq(msgs[1].content, "It is");
    /* On screen "  It is … far … x … " on one row: the two gaps dim, the rest plain. */
    ck_assert(ui_app_layout_conversation(&f.app, 40, 10));
    size_t row = 0;
    while (row < f.app.conv.n_rows &&
           f.app.blocks[f.app.conv.rows[row].block].text != f.app.transcript.turns[1].text)
        row++;
    ck_assert_uint_lt(row, f.app.conv.n_rows);
    struct ui_cell cells[40];
    ui_scrollback_cells(&f.app.conv, f.app.blocks, row, cells, 40);
    static const char want[] = ".......ddd.......ddd";
    for (int c = 0; c < (int)sizeof want - 1; c++)
        ck_assert_msg(cells[c].style == (want[c] == 'd' ? UI_STYLE_DIM : UI_STYLE_TEXT),
                      "column %d has style %d", c, cells[c].style);
    ck_assert_uint_eq(cells[8].ch[0], 0x2026);
    ck_assert_uint_eq(cells[14].ch[0], 0x2026);
    /* A gap the text does not hold is refused, nothing added. */
    struct dllm_sampler_params s = base_settings();
    struct ui_timing_totals totals = {0};
    static const size_t bad[] = {3};
    const size_t n = f.app.transcript.n;
    errno = 0;
    ck_assert(!ui_transcript_answer(&f.app.transcript, text, bad, 1, true, &s, &totals));
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_uint_eq(f.app.transcript.n, n);
    app_teardown(&f);
}
END_TEST

START_TEST(test_app_timing_scroll)
{
    struct app_fixture f;
    app_setup(&f);
    enter(&f, "hi");
    engine_runs(&f, 3, NULL, false, 0);
    ck_assert_uint_eq(f.app.timing.n, 3);
    f.app.focus = UI_FOCUS_TIMING;
    f.app.timing_rows = 2; /* the pane shows two steps */
    press(&f, UI_KEY_HOME);
    ck_assert_uint_eq(f.app.timing_back, 1); /* steps 0 and 1 */
    press(&f, UI_KEY_UP);
    ck_assert_uint_eq(f.app.timing_back, 1);
    press(&f, UI_KEY_DOWN);
    ck_assert_uint_eq(f.app.timing_back, 0); /* steps 1 and 2, the newest */
    f.app.timing_rows = 10;                  /* all three fit: nothing to scroll */
    press(&f, UI_KEY_HOME);
    ck_assert_uint_eq(f.app.timing_back, 0);
    press(&f, UI_KEY_UP);
    ck_assert_uint_eq(f.app.timing_back, 0);
    app_teardown(&f);
}
END_TEST

/* PgUp/PgDn act on the focused pane: a page of timing rows, or a slider by 10 steps. */
START_TEST(test_app_page_keys)
{
    struct app_fixture f, g;
    app_setup(&f);
    f.app.focus = UI_FOCUS_TIMING;
    for (int i = 0; i < 10; i++)
        ck_assert(ui_timing_add(&f.app.timing, &(struct ui_step_stat){i, 0, 1, 1, 1, 0, false}));
    f.app.timing_rows = 4; /* pages of 3 rows; back at most 6 */
    press(&f, UI_KEY_PGUP);
    ck_assert_uint_eq(f.app.timing_back, 3);
    press(&f, UI_KEY_PGUP);
    press(&f, UI_KEY_PGUP);
    ck_assert_uint_eq(f.app.timing_back, 6);
    press(&f, UI_KEY_PGDN);
    ck_assert_uint_eq(f.app.timing_back, 3);
    press(&f, UI_KEY_PGDN);
    press(&f, UI_KEY_PGDN);
    ck_assert_uint_eq(f.app.timing_back, 0);
    /* The selected slider: PgDn is 10 presses of Down, PgUp 10 of Up. */
    app_setup(&g);
    f.app.focus = g.app.focus = UI_FOCUS_SETTINGS;
    f.app.slider = g.app.slider = UI_SLIDER_MAX_TOKENS;
    press(&f, UI_KEY_PGDN);
    for (int i = 0; i < 10; i++)
        press(&g, UI_KEY_DOWN);
    ck_assert_int_eq(f.app.settings.gen_length, g.app.settings.gen_length);
    ck_assert_int_lt(f.app.settings.gen_length, base_settings().gen_length);
    press(&f, UI_KEY_PGUP);
    for (int i = 0; i < 10; i++)
        press(&g, UI_KEY_UP);
    ck_assert_int_eq(f.app.settings.gen_length, g.app.settings.gen_length);
    app_teardown(&g);
    /* The mouse wheel scrolls the conversation UI_WHEEL_ROWS a notch, whatever has the focus
       (here the sliders); at the bottom it follows again. F4 switches the wheel. */
    for (int i = 0; i < 6; i++)
        ck_assert(ui_transcript_add(&f.app.transcript, UI_ROLE_USER, "a line"));
    f.app.conv_changed = true;
    ck_assert(ui_app_layout_conversation(&f.app, 40, 5));
    const size_t bottom = f.app.conv.top;
    ck_assert_uint_ge(bottom, 2 * UI_WHEEL_ROWS);
    press(&f, UI_KEY_WHEEL_UP);
    press(&f, UI_KEY_WHEEL_UP);
    ck_assert_uint_eq(f.app.conv.top, bottom - 2 * UI_WHEEL_ROWS);
    ck_assert(!f.app.conv.follow);
    ck_assert_int_eq(f.app.focus, UI_FOCUS_SETTINGS);
    press(&f, UI_KEY_WHEEL_DOWN);
    press(&f, UI_KEY_WHEEL_DOWN);
    ck_assert_uint_eq(f.app.conv.top, bottom);
    ck_assert(f.app.conv.follow);
    ck_assert(!f.app.mouse); /* the program turns it on, unless --no-mouse */
    press(&f, UI_KEY_F1 + 3);
    ck_assert(f.app.mouse);
    ck_assert_str_eq(f.app.note,
                     "mouse wheel on: it scrolls the conversation (Shift+drag selects text)");
    press(&f, UI_KEY_F1 + 3);
    ck_assert(!f.app.mouse);
    app_teardown(&f);
}
END_TEST

START_TEST(test_app_chat)
{
    struct app_fixture f;
    app_setup(&f);
    struct ui_app *app = &f.app;
    const struct mock_requests *req = mock_engine_requests(f.engine);
    char state[64];

    enter(&f, "hi");
    ck_assert_int_eq(req->starts, 1);
    ck_assert_uint_eq(req->n_messages, 1);
    ck_assert_str_eq(req->last_role, "user");
    ck_assert_str_eq(req->last_content, "hi");
    ck_assert(app->generating);
    ck_assert_uint_eq(app->editor.len, 0);
    ck_assert_str_eq(app->history.items[0], "hi");

    engine_runs(&f, 2, NULL, false, 0);
    ck_assert_uint_eq(app->frame.n, 5);
    ck_assert_uint_eq(app->timing.n, 2);
    ui_app_state_text(app, state, sizeof state);
    ck_assert_str_eq(state, "step 2 of 3");

    /* Typing while it runs is fine; sending is refused and the text stays. */
    enter(&f, "next");
    ck_assert_int_eq(req->starts, 1);
    ck_assert_str_eq(app->editor.buf, "next");
    ck_assert(app->note_error);

    /* The end: the answer joins the conversation with its settings and timings. */
    struct dllm_event ev = {
        .kind = DLLM_EVENT_DONE, .text = "Hello.", .n_tokens = 2, .steps_run = 2, .total_ms = 500};
    ui_frame_slot_event(&f.slot, &ev);
    ui_app_poll(app);
    ck_assert(!app->generating);
    ck_assert_uint_eq(app->frame.n, 0);
    ck_assert_uint_eq(app->transcript.n, 2);
    const struct ui_turn *a = &app->transcript.turns[1];
    ck_assert_str_eq(a->text, "Hello.");
    ck_assert(!a->stopped);
    ck_assert_int_eq(a->totals.steps, 2);
    ck_assert_double_eq_tol(a->totals.forward_ms, 200, 1e-9);
    ck_assert_double_eq_tol(a->totals.total_ms, 500, 1e-9);
    ck_assert_int_eq(a->settings.steps, 64);
    ui_app_state_text(app, state, sizeof state);
    ck_assert_str_eq(state, "idle");

    /* The second turn carries the whole conversation. */
    press(&f, UI_KEY_ENTER);
    ck_assert_int_eq(req->starts, 2);
    ck_assert_uint_eq(req->n_messages, 3);
    ck_assert_str_eq(req->last_content, "next");
    app_teardown(&f);
}
END_TEST

START_TEST(test_app_cancel)
{
    struct app_fixture f;
    app_setup(&f);
    struct ui_app *app = &f.app;
    const struct mock_requests *req = mock_engine_requests(f.engine);
    char state[64];
    enter(&f, "tell me");
    engine_runs(&f, 1, NULL, false, 0);
    /* Esc cancels once; the partial answer arrives marked as stopped. */
    press(&f, UI_KEY_ESC);
    press(&f, UI_KEY_ESC);
    ck_assert_int_eq(req->cancels, 1);
    ui_app_state_text(app, state, sizeof state);
    ck_assert_str_eq(state, "cancelling");
    struct dllm_event ev = {.kind = DLLM_EVENT_DONE,
                            .text = "Par",
                            .n_tokens = 1,
                            .steps_run = 1,
                            .cancelled = true,
                            .total_ms = 120};
    ui_frame_slot_event(&f.slot, &ev);
    ui_app_poll(app);
    ck_assert(!app->quit);
    ck_assert_uint_eq(app->transcript.n, 2);
    ck_assert(app->transcript.turns[1].stopped);
    ck_assert_str_eq(app->transcript.turns[1].text, "Par");
    ui_app_state_text(app, state, sizeof state);
    ck_assert_str_eq(state, "cancelled");

    /* Ctrl+C: the first cancels (or clears the input); a second within a second quits. */
    enter(&f, "again");
    f.now += 5000;
    press(&f, UI_KEY_CTRL('c'));
    ck_assert_int_eq(req->cancels, 2);
    ck_assert(!app->quit);
    f.now += 1500; /* too late to count as the second */
    press(&f, UI_KEY_CTRL('c'));
    ck_assert(!app->quit);
    press(&f, UI_KEY_CTRL('c'));
    ck_assert(app->quit);
    app_teardown(&f);
}
END_TEST

START_TEST(test_app_commands)
{
    struct app_fixture f;
    app_setup(&f);
    struct ui_app *app = &f.app;
    const struct mock_requests *req = mock_engine_requests(f.engine);
    enter(&f, "/system Be brief.");
    ck_assert_str_eq(app->transcript.system, "Be brief.");
    enter(&f, "q1");
    engine_runs(&f, 3, "a1", false, 0);
    ck_assert_uint_eq(req->n_messages, 2);
    ck_assert_str_eq(app->transcript.turns[1].text, "a1");

    /*
     * /regen asks again with the same question and the old answer's seed plus 1 (it reused the
     * seed and gave the same text); the old answer stays while the new one runs, a cancelled
     * /regen keeps it (it was lost), and a completed one replaces it.
     */
    const uint64_t seed = app->transcript.turns[1].settings.seed;
    enter(&f, "/regen");
    ck_assert_int_eq(req->starts, 2);
    ck_assert_str_eq(req->last_content, "q1");
    ck_assert_uint_eq(req->n_messages, 2);
    ck_assert_uint_eq(req->settings.seed, seed + 1);
    ck_assert_uint_eq(app->transcript.n, 2);
    ck_assert_str_eq(app->transcript.turns[1].text, "a1");
    engine_runs(&f, 1, "x", true, 0);
    ck_assert_uint_eq(app->transcript.n, 2);
    ck_assert_str_eq(app->transcript.turns[1].text, "a1");
    ck_assert_str_eq(app->note, "the new answer was cancelled: the previous one stays");
    enter(&f, "/regen");
    ck_assert_uint_eq(req->settings.seed, seed + 1);
    engine_runs(&f, 3, "a2", false, 0);
    ck_assert_uint_eq(app->transcript.n, 2);
    ck_assert_str_eq(app->transcript.turns[1].text, "a2");
    ck_assert_uint_eq(app->transcript.turns[1].settings.seed, seed + 1);

    /* /save writes the Markdown transcript. */
    char *dir = test_tmpdir(), line[600];
    snprintf(line, sizeof line, "/save %s/chat.md", dir);
    enter(&f, line);
    ck_assert_msg(!app->note_error, "%s", app->note);
    snprintf(line, sizeof line, "%s/chat.md", dir);
    FILE *in = fopen(line, "r");
    ck_assert(in != NULL);
    char md[4096];
    md[fread(md, 1, sizeof md - 1, in)] = '\0';
    fclose(in);
    ck_assert(strstr(md, "Model: m.gguf (llada, Q4_K_M)\n"));
    ck_assert(strstr(md, "## System\n\nBe brief.\n\n## You\n\nq1\n\n## dllm\n\na2\n\n"));
    ck_assert(strstr(md, "> Timings: 3 steps, 3 tokens in 0.50 s"));
    free(dir);

    /* /undo takes the exchange back and returns the question to the input. */
    enter(&f, "/undo");
    ck_assert_uint_eq(app->transcript.n, 0);
    ck_assert_str_eq(app->editor.buf, "q1");
    ui_editor_clear(&app->editor);
    enter(&f, "/regen");
    ck_assert_str_eq(app->note, "there is no message to answer again");
    enter(&f, "/undo");
    ck_assert(app->note_error);
    ck_assert_str_eq(app->note, "there is nothing to undo");
    ck_assert_uint_eq(app->editor.len, 0);

    /* A bad command leaves its text for correcting. */
    enter(&f, "/sav");
    ck_assert(app->note_error);
    ck_assert_str_eq(app->note, "unknown command /sav: /help lists them");
    ck_assert_str_eq(app->editor.buf, "/sav");
    ui_editor_clear(&app->editor);

    /* A /regen the engine refuses keeps the answer it would have replaced. */
    enter(&f, "q3");
    engine_runs(&f, 3, "a3", false, 0);
    mock_engine_fail_next(f.engine, "steps 30 is not a multiple of the 4 blocks");
    enter(&f, "/regen");
    ck_assert(app->note_error);
    ck_assert_uint_eq(app->transcript.n, 2);
    ck_assert_str_eq(app->transcript.turns[1].text, "a3");
    enter(&f, "/undo");
    ui_editor_clear(&app->editor);

    /* A start the engine refuses puts the message back. */
    mock_engine_fail_next(f.engine, "steps 30 is not a multiple of the 4 blocks");
    enter(&f, "q2");
    ck_assert_uint_eq(app->transcript.n, 0);
    ck_assert_str_eq(app->editor.buf, "q2");
    ck_assert_str_eq(app->note, "steps 30 is not a multiple of the 4 blocks");
    ui_editor_clear(&app->editor);

    /* /clear keeps the system prompt; /quit leaves. */
    enter(&f, "x");
    engine_runs(&f, 3, "y", false, 0);
    enter(&f, "/clear");
    ck_assert_uint_eq(app->transcript.n, 0);
    ck_assert_str_eq(app->transcript.system, "Be brief.");
    enter(&f, "/quit");
    ck_assert(app->quit);
    app_teardown(&f);
}
END_TEST

/*
 * /system after the conversation started is marked where it applies from (and so saved);
 * /system alone shows the current one; /system off removes it.
 */
START_TEST(test_app_system)
{
    struct app_fixture f;
    app_setup(&f);
    struct ui_app *app = &f.app;
    enter(&f, "/system");
    ck_assert_str_eq(app->note, "no system prompt (/system TEXT sets one)");
    enter(&f, "/system Be brief.");
    ck_assert_uint_eq(app->transcript.n, 0); /* before the first message: no mark */
    enter(&f, "q1");
    engine_runs(&f, 3, "a1", false, 0);
    enter(&f, "/system Answer in French.");
    ck_assert_uint_eq(app->transcript.n, 3);
    ck_assert_int_eq(app->transcript.turns[2].role, UI_ROLE_NOTICE);
    ck_assert_str_eq(app->transcript.turns[2].text,
                     "system prompt from here on: Answer in French.");
    enter(&f, "/system");
    ck_assert_str_eq(app->note, "system prompt: Answer in French.");
    char *dir = test_tmpdir(), line[600];
    snprintf(line, sizeof line, "%s/system.md", dir);
    ck_assert(ui_transcript_save(&app->transcript, NULL, line));
    FILE *in = fopen(line, "r");
    ck_assert(in != NULL);
    char md[4096];
    md[fread(md, 1, sizeof md - 1, in)] = '\0';
    fclose(in);
    ck_assert(strstr(md, "## dllm\n\na1\n\n"));
    ck_assert(strstr(md, "*system prompt from here on: Answer in French.*"));
    free(dir);
    enter(&f, "/system off");
    ck_assert_ptr_null(app->transcript.system);
    ck_assert_str_eq(app->transcript.turns[3].text, "system prompt removed from here on");
    app_teardown(&f);
}
END_TEST

/* Ctrl+D on an empty input asks first when the conversation is not saved. */
START_TEST(test_app_quit_unsaved)
{
    struct app_fixture f;
    app_setup(&f);
    struct ui_app *app = &f.app;
    press(&f, UI_KEY_CTRL('d')); /* nothing to lose: quits at once */
    ck_assert(app->quit);
    app->quit = false;
    enter(&f, "q1");
    engine_runs(&f, 3, "a1", false, 0);
    press(&f, UI_KEY_CTRL('d'));
    ck_assert(!app->quit);
    ck_assert_str_eq(app->note,
                     "the conversation is not saved: Ctrl+D again quits, /save FILE keeps it");
    press(&f, UI_KEY_TAB); /* another key: the question stands no more */
    press(&f, UI_KEY_BTAB);
    press(&f, UI_KEY_CTRL('d'));
    ck_assert(!app->quit);
    press(&f, UI_KEY_CTRL('d'));
    ck_assert(app->quit);
    /* Saved: Ctrl+D quits at once. */
    app->quit = false;
    char *dir = test_tmpdir(), line[600];
    snprintf(line, sizeof line, "/save %s/saved.md", dir);
    enter(&f, line);
    press(&f, UI_KEY_CTRL('d'));
    ck_assert(app->quit);
    free(dir);
    app_teardown(&f);
}
END_TEST

/* /copy and F3 hand the last answer, or its last code block, to the screen for OSC 52. */
START_TEST(test_app_copy)
{
    struct app_fixture f;
    app_setup(&f);
    struct ui_app *app = &f.app;
    enter(&f, "/copy");
    ck_assert(app->note_error);
    ck_assert_str_eq(app->note, "there is no answer to copy yet");
    enter(&f, "q1");
    engine_runs(&f, 3, "Try:\n```sh\nls -l\n```\nDone.", false, 0);
    enter(&f, "/copy");
    ck_assert_str_eq(app->copy, "Try:\n```sh\nls -l\n```\nDone.");
    ck_assert_str_eq(app->note, "copied the last answer (26 bytes) to the clipboard");
    enter(&f, "/copy code");
    ck_assert_str_eq(app->copy, "ls -l");
    free(app->copy);
    app->copy = NULL;
    press(&f, UI_KEY_F1 + 2);
    ck_assert_str_eq(app->copy, "Try:\n```sh\nls -l\n```\nDone.");
    enter(&f, "/copy all");
    ck_assert(app->note_error);
    /* An answer of more than 75000 bytes is not sent: terminals cut or drop such a request. */
    free(app->copy);
    app->copy = NULL;
    char *big = malloc(75002);
    memset(big, 'x', 75001);
    big[75001] = '\0';
    enter(&f, "q2");
    engine_runs(&f, 3, big, false, 0);
    enter(&f, "/copy");
    ck_assert(app->note_error);
    ck_assert_ptr_null(app->copy);
    ck_assert_str_eq(app->note, "the last answer is 75001 bytes, more than the 75000 a terminal "
                                "takes in one copy (OSC 52): /save FILE keeps it");
    big[75000] = '\0';
    enter(&f, "q3");
    engine_runs(&f, 3, big, false, 0);
    enter(&f, "/copy");
    ck_assert(!app->note_error);
    ck_assert_uint_eq(strlen(app->copy), 75000);
    free(big);
    app_teardown(&f);
}
END_TEST

START_TEST(test_app_sliders)
{
    struct app_fixture f;
    app_setup(&f);
    struct ui_app *app = &f.app;
    const struct mock_requests *req = mock_engine_requests(f.engine);
    app->timing_shown = false;
    /* Tab: input -> conversation -> settings (timing is skipped while it is not shown). */
    press(&f, UI_KEY_TAB);
    press(&f, UI_KEY_TAB);
    ck_assert_int_eq(app->focus, UI_FOCUS_SETTINGS);
    press(&f, UI_KEY_RIGHT); /* max tokens */
    press(&f, UI_KEY_RIGHT); /* block */
    press(&f, UI_KEY_DOWN);  /* 32 -> 16: 8 blocks */
    ck_assert_int_eq(app->settings.block_length, 16);
    ck_assert_str_eq(app->note, "block 16");
    press(&f, UI_KEY_TAB);
    ck_assert_int_eq(app->focus, UI_FOCUS_INPUT);
    /* Typing from the settings pane goes to the input too. */
    press(&f, UI_KEY_BTAB);
    press(&f, 'h');
    ck_assert_int_eq(app->focus, UI_FOCUS_INPUT);
    press(&f, UI_KEY_ENTER);
    ck_assert_int_eq(req->settings.block_length, 16);
    ck_assert_int_eq(req->settings.steps, 64);
    /* While it runs, a change applies to the next generation. */
    press(&f, UI_KEY_BTAB);
    press(&f, UI_KEY_UP);
    ck_assert_str_eq(app->note, "block 32; applies to the next generation");
    engine_runs(&f, 3, "done", false, 0);
    ck_assert_int_eq(app->transcript.turns[1].settings.block_length, 16);
    ck_assert_int_eq(app->settings.block_length, 32);
    app_teardown(&f);
}
END_TEST

/* /set NAME VALUE and a value typed into the focused slider (digits, Enter applies, Esc drops). */
START_TEST(test_app_set)
{
    struct app_fixture f;
    app_setup(&f);
    struct ui_app *app = &f.app;
    const struct mock_requests *req = mock_engine_requests(f.engine);
    enter(&f, "/set steps 32");
    ck_assert_int_eq(app->settings.steps, 32);
    ck_assert_str_eq(app->note, "steps 32");
    ck_assert(!app->note_error);
    enter(&f, "/set steps 30");
    ck_assert(app->note_error);
    ck_assert_int_eq(app->settings.steps, 32);
    enter(&f, "/set seed 7");
    enter(&f, "/set");
    ck_assert_str_eq(
        app->note,
        "steps 32, max 128, block 32, threshold off, temp 0.0, cache none, "
        "seed 7, remasking low_confidence, cfg 0, cache-type f16 (/set NAME VALUE changes "
        "one)");
    enter(&f, "hi");
    ck_assert_int_eq(req->settings.steps, 32);
    ck_assert_uint_eq(req->settings.seed, 7);
    engine_runs(&f, 3, "done", false, 0);

    app->timing_shown = false;
    press(&f, UI_KEY_TAB);
    press(&f, UI_KEY_TAB);
    ck_assert_int_eq(app->focus, UI_FOCUS_SETTINGS);
    ck_assert_int_eq(app->slider, UI_SLIDER_STEPS);
    press(&f, UI_KEY_ENTER);
    ck_assert(app->note_error);
    ck_assert_str_eq(app->note, "type a value for steps first (digits), then Enter");
    press(&f, '1');
    press(&f, '2');
    press(&f, '3');
    press(&f, UI_KEY_BACKSPACE);
    ck_assert_str_eq(app->typed, "12");
    press(&f, UI_KEY_ENTER);
    ck_assert_int_eq(app->settings.steps, 12);
    ck_assert_str_eq(app->note, "steps 12");
    ck_assert_str_eq(app->typed, "");
    ck_assert_int_eq(app->focus, UI_FOCUS_SETTINGS);
    /* Esc drops the typed value. */
    press(&f, '8');
    press(&f, UI_KEY_ESC);
    ck_assert_int_eq(app->settings.steps, 12);
    ck_assert_str_eq(app->note, "typed value dropped: steps stays 12");
    /* A value out of range is refused, naming the range. */
    press(&f, '3');
    press(&f, '0');
    press(&f, UI_KEY_ENTER);
    ck_assert(app->note_error);
    ck_assert_str_eq(app->note,
                     "steps takes a multiple of the 4 blocks from 4 to 128 (max tokens), not '30'");
    ck_assert_int_eq(app->settings.steps, 12);
    /* The threshold takes a decimal; another key (Right) drops a typed value. */
    press(&f, UI_KEY_RIGHT);
    press(&f, UI_KEY_RIGHT);
    press(&f, UI_KEY_RIGHT);
    ck_assert_int_eq(app->slider, UI_SLIDER_THRESHOLD);
    press(&f, '.');
    press(&f, '8');
    press(&f, UI_KEY_ENTER);
    ck_assert_double_eq_tol(app->settings.threshold, 0.8, 1e-12);
    press(&f, '0');
    press(&f, UI_KEY_LEFT);
    ck_assert_str_eq(app->typed, "");
    ck_assert_int_eq(app->slider, UI_SLIDER_BLOCK);
    ck_assert_double_eq_tol(app->settings.threshold, 0.8, 1e-12);
    /* Letters still go to the input. */
    press(&f, 'h');
    ck_assert_int_eq(app->focus, UI_FOCUS_INPUT);
    ck_assert_str_eq(app->editor.buf, "h");
    app_teardown(&f);
}
END_TEST

/*
 * /save FILE writes FILE (Markdown) and FILE.jsonl; /load FILE.jsonl brings the conversation
 * back (an unsaved one takes a second Enter); a bad file changes nothing.
 */
START_TEST(test_app_save_load)
{
    struct app_fixture f;
    app_setup(&f);
    struct ui_app *app = &f.app;
    char *dir = test_tmpdir(), cmd[600], path[512];
    enter(&f, "/system Be brief.");
    enter(&f, "q1");
    engine_runs(&f, 3, "**a1**", false, 0);
    snprintf(cmd, sizeof cmd, "/save %s/chat.md", dir);
    enter(&f, cmd);
    ck_assert_msg(!app->note_error, "%s", app->note);
    snprintf(path, sizeof path, "%s/chat.md.jsonl", dir);
    struct stat st;
    ck_assert(stat(path, &st) == 0);
    snprintf(path, sizeof path, "%s/chat.md", dir);
    ck_assert(stat(path, &st) == 0);
    /* A FILE ending in .jsonl gets only the JSON lines. */
    snprintf(cmd, sizeof cmd, "/save %s/only.jsonl", dir);
    enter(&f, cmd);
    snprintf(path, sizeof path, "%s/only.jsonl.jsonl", dir);
    ck_assert(stat(path, &st) != 0);
    snprintf(path, sizeof path, "%s/only.jsonl", dir);
    ck_assert(stat(path, &st) == 0);

    enter(&f, "q2");
    engine_runs(&f, 2, "a2", false, 0);
    ck_assert(app->unsaved);
    /* Unsaved: the first /load asks and keeps the command in the input. */
    snprintf(cmd, sizeof cmd, "/load %s/chat.md.jsonl", dir);
    enter(&f, cmd);
    ck_assert(app->note_error);
    ck_assert_uint_eq(app->transcript.n, 4);
    ck_assert_str_eq(app->editor.buf, cmd);
    press(&f, UI_KEY_ENTER);
    ck_assert_msg(!app->note_error, "%s", app->note);
    ck_assert_uint_eq(app->transcript.n, 2);
    ck_assert_str_eq(app->transcript.system, "Be brief.");
    ck_assert_str_eq(app->transcript.turns[1].text, "**a1**");
    ck_assert_str_eq(app->transcript.turns[1].shown, "a1"); /* rendered again */
    ck_assert(!app->unsaved);
    snprintf(cmd, sizeof cmd, "loaded 1 message and 1 answer from %s/chat.md.jsonl", dir);
    ck_assert_str_eq(app->note, cmd);
    /* The next message carries the loaded context. */
    const struct mock_requests *req = mock_engine_requests(f.engine);
    enter(&f, "q3");
    ck_assert_uint_eq(req->n_messages, 4);
    engine_runs(&f, 1, "a3", false, 0);

    /* A Markdown file is no conversation: one error line, nothing changes. */
    snprintf(cmd, sizeof cmd, "/save %s/after.jsonl", dir);
    enter(&f, cmd);
    snprintf(cmd, sizeof cmd, "/load %s/chat.md", dir);
    enter(&f, cmd);
    ck_assert(app->note_error);
    snprintf(path, sizeof path,
             "%s/chat.md line 1: not JSON: '[' or '{' expected near '#' (column 1)", dir);
    ck_assert_str_eq(app->note, path);
    ck_assert_uint_eq(app->transcript.n, 4);
    snprintf(cmd, sizeof cmd, "/load %s/none.jsonl", dir);
    enter(&f, cmd);
    snprintf(path, sizeof path, "cannot read %s/none.jsonl: No such file or directory", dir);
    ck_assert_str_eq(app->note, path);
    ck_assert_uint_eq(app->transcript.n, 4);

    /* /save asks before it replaces a file this chat did not save or load last: the command
       stays, Enter replaces; the files it saved last it replaces without asking, and another
       command in between asks again. */
    snprintf(cmd, sizeof cmd, "/save %s/chat.md", dir);
    enter(&f, cmd);
    snprintf(path, sizeof path, "%s/chat.md exists: Enter replaces it, /save OTHER-FILE keeps it",
             dir);
    ck_assert_str_eq(app->note, path);
    ck_assert_str_eq(app->editor.buf, cmd);
    press(&f, UI_KEY_ENTER);
    ck_assert_msg(!app->note_error, "%s", app->note);
    ck_assert_uint_eq(app->editor.len, 0);
    enter(&f, cmd);
    ck_assert_msg(!app->note_error, "%s", app->note);
    snprintf(cmd, sizeof cmd, "/save %s/only.jsonl", dir);
    enter(&f, cmd);
    ck_assert(app->note_error);
    ui_editor_clear(&app->editor);
    enter(&f, "/set");
    enter(&f, cmd);
    ck_assert(app->note_error); /* the /set in between: asked again */
    press(&f, UI_KEY_ENTER);
    ck_assert_msg(!app->note_error, "%s", app->note);
    /* A file /load read is the chat's own: saving back to it does not ask. */
    snprintf(cmd, sizeof cmd, "/load %s/after.jsonl", dir);
    enter(&f, cmd);
    ck_assert_msg(!app->note_error, "%s", app->note);
    snprintf(cmd, sizeof cmd, "/save %s/after.jsonl", dir);
    enter(&f, cmd);
    ck_assert_msg(!app->note_error, "%s", app->note);
    free(dir);
    app_teardown(&f);
}
END_TEST

/* The turn text's block in the laid-out conversation (the first block showing it). */
static const struct ui_sb_block *block_of(const struct ui_app *app, const char *text)
{
    for (size_t b = 0; b < app->n_blocks; b++)
        if (app->blocks[b].text == text)
            return &app->blocks[b];
    return NULL;
}

/*
 * /find TEXT highlights every match, shows the last and scrolls it into view; n and N move
 * through them (wrapping), Esc ends the search; Ctrl+F starts one from the conversation or an
 * empty input, and still moves right in a non-empty one.
 */
START_TEST(test_app_find)
{
    struct app_fixture f;
    app_setup(&f);
    struct ui_app *app = &f.app;
    enter(&f, "alpha one");
    engine_runs(&f, 3, "beta", false, 0);
    for (int i = 0; i < 10; i++) {
        enter(&f, "filler");
        engine_runs(&f, 3, "more filler", false, 0);
    }
    enter(&f, "second ALPHA");
    engine_runs(&f, 3, "delta", false, 0);
    ck_assert(ui_app_layout_conversation(app, 40, 8));
    enter(&f, "/find alpha");
    ck_assert_int_eq(app->focus, UI_FOCUS_CONVERSATION);
    ck_assert_uint_eq(app->find_n, 2);
    ck_assert_uint_eq(app->find_i, 1);
    ck_assert_str_eq(app->note,
                     "match 2 of 2 for 'alpha' (n, N: next, previous; Esc ends the search)");
    const struct ui_turn *last_q = &app->transcript.turns[app->transcript.n - 2];
    const struct ui_sb_block *b = block_of(app, last_q->text);
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_nonnull(b->styles);
    ck_assert_int_eq(b->styles[6], UI_STYLE_USER);
    for (int i = 7; i < 12; i++)
        ck_assert_int_eq(b->styles[i], UI_STYLE_SELECTED);
    /* n wraps to the first match, at the top of the conversation: scrolled into view. */
    press(&f, 'n');
    ck_assert_uint_eq(app->find_i, 0);
    ck_assert_str_eq(app->note,
                     "match 1 of 2 for 'alpha' (n, N: next, previous; Esc ends the search)");
    const struct ui_match first = {1, 0}; /* block 0 is the first header */
    ck_assert_ptr_eq(app->blocks[first.block].text, app->transcript.turns[0].text);
    const size_t row = ui_find_row(&app->conv, first);
    ck_assert_uint_lt(row, app->conv.n_rows);
    ck_assert(app->conv.top <= row && row < app->conv.top + app->conv.view);
    ck_assert(!app->conv.follow);
    press(&f, 'N');
    ck_assert_uint_eq(app->find_i, 1);
    /* Esc ends it: no highlight after the next layout. */
    press(&f, UI_KEY_ESC);
    ck_assert_str_eq(app->find, "");
    ck_assert(ui_app_layout_conversation(app, 40, 8));
    b = block_of(app, last_q->text);
    ck_assert(b->styles == NULL || b->styles[7] != UI_STYLE_SELECTED);
    press(&f, 'n');
    ck_assert(app->note_error);
    ck_assert_str_eq(app->note, "no search: /find TEXT or Ctrl+F starts one");
    enter(&f, "/find zzz");
    ck_assert(app->note_error);
    ck_assert_str_eq(app->note, "'zzz' is not in the conversation");
    /* Ctrl+F: from the conversation pane or an empty input, "/find " in the input. */
    app->focus = UI_FOCUS_CONVERSATION;
    press(&f, UI_KEY_CTRL('f'));
    ck_assert_int_eq(app->focus, UI_FOCUS_INPUT);
    ck_assert_str_eq(app->editor.buf, "/find ");
    ui_editor_clear(&app->editor);
    press(&f, UI_KEY_CTRL('f'));
    ck_assert_str_eq(app->editor.buf, "/find ");
    ui_editor_set(&app->editor, "ab");
    ui_editor_home(&app->editor);
    press(&f, UI_KEY_CTRL('f'));
    ck_assert_uint_eq(app->editor.cursor, 1);
    ck_assert_str_eq(app->editor.buf, "ab");
    app_teardown(&f);
}
END_TEST

/* The occurrences of a text in blocks: either case, not overlapping, in order. */
START_TEST(test_find)
{
    const struct ui_sb_block blocks[] = {
        {"aAa aa", 6, UI_STYLE_TEXT, 0, NULL, 0},
        {"", 0, UI_STYLE_TEXT, 0, NULL, 0},
        {"xAAx", 4, UI_STYLE_TEXT, 0, NULL, 0},
    };
    struct ui_match m[8];
    ck_assert_uint_eq(ui_find(blocks, 3, "aa", m, 8), 3);
    ck_assert(m[0].block == 0 && m[0].at == 0);
    ck_assert(m[1].block == 0 && m[1].at == 4);
    ck_assert(m[2].block == 2 && m[2].at == 1);
    ck_assert_uint_eq(ui_find(blocks, 3, "AA", m, 1), 3);
    ck_assert_uint_eq(ui_find(blocks, 3, "", m, 8), 0);
    ck_assert_uint_eq(ui_find(blocks, 3, "aaaaaaa", m, 8), 0);
    struct ui_scrollback sb;
    ui_scrollback_init(&sb);
    ck_assert(ui_scrollback_layout(&sb, blocks, 3, 3)); /* "aAa", "aa", "", "xAA", "x" */
    ck_assert_uint_eq(ui_find_row(&sb, (struct ui_match){0, 4}), 1);
    ck_assert_uint_eq(ui_find_row(&sb, (struct ui_match){2, 1}), sb.n_rows - 2);
    ck_assert_uint_eq(ui_find_row(&sb, (struct ui_match){5, 0}), sb.n_rows);
    ui_scrollback_fini(&sb);
}
END_TEST

START_TEST(test_app_input)
{
    struct app_fixture f;
    app_setup(&f);
    struct ui_app *app = &f.app;
    const struct mock_requests *req = mock_engine_requests(f.engine);
    /* A bracketed paste inserts newlines instead of sending. */
    press(&f, UI_KEY_PASTE_BEGIN);
    press(&f, 'a');
    press(&f, UI_KEY_ENTER);
    press(&f, UI_KEY_TAB);
    press(&f, 'b');
    press(&f, UI_KEY_PASTE_END);
    ck_assert_str_eq(app->editor.buf, "a\n\tb");
    ck_assert_int_eq(req->starts, 0);
    /* Alt+Enter and Ctrl+J insert a newline too. */
    press(&f, UI_KEY_ENTER | UI_KEY_ALT);
    press(&f, UI_KEY_CTRL('j'));
    ck_assert_str_eq(app->editor.buf, "a\n\tb\n\n");
    /* '?' types itself in a non-empty input, and shows the help in an empty one. */
    press(&f, '?');
    ck_assert(!app->help);
    for (int i = 0; i < 7; i++) /* "a\n\tb\n\n?" */
        press(&f, UI_KEY_BACKSPACE);
    ck_assert_uint_eq(app->editor.len, 0);
    press(&f, '?');
    ck_assert(app->help);
    ck_assert(strstr(app->help_text, "Commands\n/clear"));
    press(&f, UI_KEY_PGDN); /* scrolls the help, keeps it open */
    ck_assert(app->help);
    press(&f, 'q');
    ck_assert(!app->help);
    press(&f, UI_KEY_F1);
    ck_assert(app->help);
    press(&f, UI_KEY_F1);
    ck_assert(!app->help);
    /* Tab completes a /command's name, lists the choices where several fit, and moves the
       focus when nothing is being completed (or the cursor is not at the end). */
    type(&f, "/sy");
    press(&f, UI_KEY_TAB);
    ck_assert_str_eq(app->editor.buf, "/system ");
    ui_editor_clear(&app->editor);
    type(&f, "/s");
    press(&f, UI_KEY_TAB);
    ck_assert_str_eq(app->editor.buf, "/s");
    ck_assert_str_eq(app->note, "/save  /system  /set");
    press(&f, 'e');
    press(&f, UI_KEY_TAB);
    ck_assert_str_eq(app->editor.buf, "/set ");
    ck_assert_str_eq(app->note, "");
    type(&f, "thr");
    press(&f, UI_KEY_TAB);
    ck_assert_str_eq(app->editor.buf, "/set threshold ");
    type(&f, "x");
    press(&f, UI_KEY_TAB);
    ck_assert_str_eq(app->note,
                     "threshold takes no such word: Tab after 'threshold ' lists those it takes");
    press(&f, UI_KEY_BACKSPACE);
    press(&f, UI_KEY_TAB);
    ck_assert_str_eq(app->editor.buf, "/set threshold off ");
    ck_assert_int_eq(app->focus, UI_FOCUS_INPUT);
    ui_editor_clear(&app->editor);
    type(&f, "/zz");
    press(&f, UI_KEY_TAB);
    ck_assert_str_eq(app->note, "no command starts so: /help lists them");
    ck_assert_int_eq(app->focus, UI_FOCUS_INPUT);
    press(&f, UI_KEY_LEFT);
    press(&f, UI_KEY_TAB);
    ck_assert_int_eq(app->focus, UI_FOCUS_CONVERSATION);
    press(&f, UI_KEY_BTAB);
    ui_editor_clear(&app->editor);
    /* Ctrl+R searches the messages sent before, newest first; Ctrl+R again goes older;
       Backspace widens the query; Esc brings the input back; Enter takes the match; another
       key takes it and acts. */
    ck_assert(ui_history_add(&app->history, "tell me about cats"));
    ck_assert(ui_history_add(&app->history, "dogs or cats?"));
    ck_assert(ui_history_add(&app->history, "write a haiku"));
    type(&f, "draft");
    press(&f, UI_KEY_CTRL('r'));
    ck_assert_str_eq(app->note,
                     "history search: type part of a message sent before (Esc drops it)");
    type(&f, "cat");
    ck_assert_str_eq(app->editor.buf, "dogs or cats?");
    ck_assert_str_eq(app->note, "history search 'cat': Ctrl+R older, Enter takes it, Esc drops it");
    press(&f, UI_KEY_CTRL('r'));
    ck_assert_str_eq(app->editor.buf, "tell me about cats");
    press(&f, UI_KEY_CTRL('r'));
    ck_assert_str_eq(app->editor.buf, "tell me about cats");
    ck_assert_str_eq(app->note,
                     "history search 'cat': no older message sent holds it (Backspace, Esc)");
    type(&f, "z");
    ck_assert_str_eq(app->note, "history search 'catz': no message sent holds it (Backspace, Esc)");
    press(&f, UI_KEY_BACKSPACE);
    ck_assert_str_eq(app->editor.buf, "dogs or cats?");
    press(&f, UI_KEY_ESC);
    ck_assert_str_eq(app->editor.buf, "draft");
    ck_assert(!app->hsearch.active);
    press(&f, UI_KEY_CTRL('r'));
    type(&f, "\xc3\xa9"); /* é: in no message; Backspace takes the whole character */
    press(&f, UI_KEY_BACKSPACE);
    ck_assert_str_eq(app->hsearch.query, "");
    type(&f, "haiku");
    press(&f, UI_KEY_ENTER);
    ck_assert(!app->hsearch.active);
    ck_assert_str_eq(app->editor.buf, "write a haiku");
    ck_assert_int_eq(mock_engine_requests(f.engine)->starts, 0); /* taken, not sent */
    press(&f, UI_KEY_CTRL('r'));
    type(&f, "dogs");
    press(&f, UI_KEY_HOME); /* ends the search, the match kept, and moves the cursor */
    ck_assert(!app->hsearch.active);
    ck_assert_str_eq(app->editor.buf, "dogs or cats?");
    ck_assert_uint_eq(app->editor.cursor, 0);
    ui_editor_clear(&app->editor);

    /* Ctrl+O asks the program for the user's editor; what it made of the input comes back. */
    type(&f, "draft");
    press(&f, UI_KEY_CTRL('o'));
    ck_assert(app->edit_external);
    app->edit_external = false;
    ui_app_edited(app, NULL, "the editor 'false' failed (exit status 1): the input is as it was");
    ck_assert_str_eq(app->editor.buf, "draft");
    ck_assert(app->note_error);
    ui_app_edited(app, "draft\nedited", "");
    ck_assert_str_eq(app->editor.buf, "draft\nedited");
    ck_assert_uint_eq(app->editor.cursor, app->editor.len);
    ck_assert_str_eq(app->note, "the message as the editor left it: Enter sends it");
    ui_editor_clear(&app->editor);
    /* Ctrl+D quits on an empty input only. */
    press(&f, 'z');
    press(&f, UI_KEY_CTRL('d'));
    ck_assert(!app->quit);
    press(&f, UI_KEY_BACKSPACE);
    press(&f, UI_KEY_CTRL('d'));
    ck_assert(app->quit);
    app_teardown(&f);
}
END_TEST

START_TEST(test_app_dropped)
{
    struct app_fixture f;
    app_setup(&f);
    struct ui_app *app = &f.app;
    const struct mock_requests *req = mock_engine_requests(f.engine);
    enter(&f, "q1");
    engine_runs(&f, 3, "a1", false, 0);
    enter(&f, "q2");
    /* The engine left the first exchange out of the prompt. */
    struct dllm_event ev = {.kind = DLLM_EVENT_NOTICE,
                            .message = "2 oldest messages left out to fit the context",
                            .dropped_messages = 2};
    ui_frame_slot_event(&f.slot, &ev);
    engine_runs(&f, 3, "a2", false, 2);
    ck_assert_uint_eq(app->transcript.n, 5);
    ck_assert(app->transcript.turns[0].dropped);
    ck_assert(app->transcript.turns[1].dropped);
    ck_assert_int_eq(app->transcript.turns[2].role, UI_ROLE_NOTICE);
    enter(&f, "q3");
    ck_assert_uint_eq(req->n_messages, 3); /* q2, a2, q3 */
    ck_assert(ui_app_layout_conversation(app, 40, 10));
    ck_assert_uint_eq(app->n_blocks, 3 * 4 + 2 + 3);
    app_teardown(&f);
}
END_TEST

static Suite *ui_suite(void)
{
    Suite *s = suite_create("ui");
    TCase *tc = tcase_create("utf8");
    tcase_add_loop_test(tc, test_decode, 0, N_OF(decodes));
    tcase_add_test(tc, test_encode);
    tcase_add_test(tc, test_glyphs);
    suite_add_tcase(s, tc);

    tc = tcase_create("wrap");
    tcase_add_loop_test(tc, test_wrap, 0, N_OF(wraps));
    tcase_add_test(tc, test_wrap_chars);
    tcase_add_test(tc, test_wrap_locate);
    tcase_add_test(tc, test_cells);
    suite_add_tcase(s, tc);

    tc = tcase_create("editor");
    tcase_add_test(tc, test_editor_chars);
    tcase_add_test(tc, test_editor_lines);
    tcase_add_test(tc, test_editor_words);
    tcase_add_test(tc, test_editor_paste);
    tcase_add_test(tc, test_editor_history);
    tcase_add_test(tc, test_history_file);
    suite_add_tcase(s, tc);

    tc = tcase_create("scrollback");
    tcase_add_test(tc, test_scroll_sticky);
    tcase_add_test(tc, test_scroll_rewrap);
    suite_add_tcase(s, tc);

    tc = tcase_create("canvas");
    tcase_add_test(tc, test_canvas_runs);
    suite_add_tcase(s, tc);

    tc = tcase_create("settings");
    tcase_add_loop_test(tc, test_slider, 0, N_OF(adjusts));
    tcase_add_test(tc, test_slider_busy);
    tcase_add_test(tc, test_slider_dream_threshold);
    tcase_add_loop_test(tc, test_settings_set, 0, N_OF(sets));
    tcase_add_test(tc, test_settings_set_values);
    suite_add_tcase(s, tc);

    tc = tcase_create("commands");
    tcase_add_loop_test(tc, test_command, 0, N_OF(commands));
    tcase_add_test(tc, test_commands_help);
    tcase_add_loop_test(tc, test_complete, 0, N_OF(completions));
    tcase_add_test(tc, test_complete_files);
    suite_add_tcase(s, tc);

    tc = tcase_create("keys");
    tcase_add_loop_test(tc, test_key_names, 0, N_OF(key_names));
    tcase_add_test(tc, test_key_table);
    suite_add_tcase(s, tc);

    tc = tcase_create("transcript");
    tcase_add_test(tc, test_transcript_edits);
    tcase_add_test(tc, test_transcript_drop);
    tcase_add_test(tc, test_transcript_list_hang);
    tcase_add_test(tc, test_transcript_markdown);
    tcase_add_test(tc, test_jsonl_parse);
    tcase_add_test(tc, test_jsonl_round_trip);
    tcase_add_test(tc, test_jsonl_invalid_utf8);
    tcase_add_loop_test(tc, test_jsonl_errors, 0, N_OF(bad_jsonl));
    suite_add_tcase(s, tc);

    tc = tcase_create("timing");
    tcase_add_test(tc, test_sparkline);
    tcase_add_test(tc, test_timing_text);
    tcase_add_test(tc, test_timing_live);
    tcase_add_test(tc, test_markdown);
    tcase_add_test(tc, test_clipboard);
    suite_add_tcase(s, tc);

    tc = tcase_create("frame");
    tcase_add_test(tc, test_frame_events);
    tcase_add_test(tc, test_frame_thread);
    suite_add_tcase(s, tc);

    tc = tcase_create("script");
    tcase_add_test(tc, test_script_parse);
    tcase_add_loop_test(tc, test_script_errors, 0, N_OF(bad_scripts));
    tcase_add_loop_test(tc, test_layout, 0, N_OF(layouts));
    suite_add_tcase(s, tc);

    tc = tcase_create("app");
    tcase_add_test(tc, test_app_chat);
    tcase_add_test(tc, test_app_page_keys);
    tcase_add_test(tc, test_app_timing_scroll);
    tcase_add_test(tc, test_app_gapped_answer);
    tcase_add_test(tc, test_app_cancel);
    tcase_add_test(tc, test_app_commands);
    tcase_add_test(tc, test_app_system);
    tcase_add_test(tc, test_app_quit_unsaved);
    tcase_add_test(tc, test_app_copy);
    tcase_add_test(tc, test_app_sliders);
    tcase_add_test(tc, test_app_set);
    tcase_add_test(tc, test_app_save_load);
    tcase_add_test(tc, test_app_find);
    tcase_add_test(tc, test_find);
    tcase_add_test(tc, test_app_input);
    tcase_add_test(tc, test_app_dropped);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    /* Widths come from wcwidth, which needs a UTF-8 locale. */
    if (!setlocale(LC_ALL, "C.UTF-8")) {
        fprintf(stderr, "test_ui: the C.UTF-8 locale is missing\n");
        return EXIT_FAILURE;
    }
    return test_run_suite(ui_suite());
}
