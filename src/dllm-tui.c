/*
 * dllm-tui: the interactive diffusion chat. One UI thread owns curses and polls standard input
 * beside the frame slot's eventfd; the engine generates on its own worker thread and hands
 * each step over through the slot. Frames are drawn at most about 30 times a second while the
 * timing pane still gets every step. With --script the keys come from a file and the screen
 * is virtual (no terminal needed); --dump-screen writes it out as text at the end.
 */
#include "config.h"

#include "app.h"
#include "cli.h"
#include "commands.h"
#include "edit_external.h"
#include "engine.h"
#include "frame.h"
#include "gen_options.h"
#include "model_ref.h"
#include "history.h"
#include "screen.h"
#include "script.h"
#include "utf8.h"

#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FRAME_MS       33.0    /* at most about 30 redraws a second */
#define SCRIPT_WAIT_MS 60000.0 /* a script's wait-idle or wait-step gives up after this */

static const char usage[] =
    "usage: dllm-tui [-m MODEL] [options]\n"
    "       dllm-tui --batch [-m MODEL] -p TEXT [options]\n"
    "\n"
    "The interactive chat: watch a diffusion model fill in its answer, step by step.\n"
    "Keys and commands: F1 (or ? on an empty input) inside; man dllm-tui. Without -m, the\n"
    "default model (" DLLM_HUB_DEFAULT_MODEL "), downloaded on first use.\n"
    "--batch generates one answer without the screen, as dllm run does (same options).\n"
    "\n"
    "options:\n" GEN_OPTIONS_HELP
    "  --batch              one answer on stdout without the screen: dllm run's options\n"
    "                       (dllm run --help), not the four below\n"
    "  --color WHEN         auto (default: colours unless NO_COLOR is set), always, never\n"
    "  --no-mouse           leave the mouse to the terminal (its own selection) instead of\n"
    "                       scrolling with the wheel; F4 switches it inside\n"
    "  --script FILE        run headless: read keys from FILE (see man dllm-tui), no terminal\n"
    "                       needed; the screen is LINES x COLUMNS (default 24 x 80, at most\n"
    "                       1000 each)\n"
    "  --dump-screen FILE   write the screen as text to FILE when leaving\n"
    "  --version            the version and build\n"
    "  -h, --help           this help\n";

static const struct cli_command command = {"chat", "the interactive chat", usage, NULL};

/* What the command line asked for beyond the generation flags. */
struct tui_options {
    struct gen_options gen;
    enum ui_color_mode color;
    bool no_mouse;
    const char *script;
    const char *dump;
};

/* The chat's own flags; the first four are the screen's, which --batch has not. */
enum { OPT_COLOR = 1024, OPT_NO_MOUSE, OPT_SCRIPT, OPT_DUMP, OPT_VERSION, OPT_BATCH, OPT_RUN };
static const struct option chat_options[] = {{"color", required_argument, NULL, OPT_COLOR},
                                             {"no-mouse", no_argument, NULL, OPT_NO_MOUSE},
                                             {"script", required_argument, NULL, OPT_SCRIPT},
                                             {"dump-screen", required_argument, NULL, OPT_DUMP},
                                             {"version", no_argument, NULL, OPT_VERSION},
                                             {0}};

/* Appends the options of `from` to opts at *n; with val not 0, each gets that id. */
static void append_options(struct option *opts, size_t *n, const struct option *from, int val)
{
    for (size_t i = 0; from[i].name; i++) {
        opts[*n] = from[i];
        if (val)
            opts[*n].val = val;
        ++*n;
    }
    opts[*n] = (struct option){0};
}

static void parse_options(int argc, char **argv, struct tui_options *o)
{
    struct option opts[64];
    size_t n = 0;
    append_options(opts, &n, gen_long_options, 0);
    append_options(opts, &n, chat_options, 0);
    int c;
    while ((c = cli_getopt(&command, argc, argv, "m:p:t:", opts)) != -1) {
        if (gen_options_handle(&command, &o->gen, c, optarg))
            continue;
        if (c == OPT_COLOR) {
            if (strcmp(optarg, "auto") == 0)
                o->color = UI_COLOR_AUTO;
            else if (strcmp(optarg, "always") == 0)
                o->color = UI_COLOR_ALWAYS;
            else if (strcmp(optarg, "never") == 0)
                o->color = UI_COLOR_NEVER;
            else
                cli_usage_error(&command, "--color is auto, always or never, not '%s'", optarg);
        } else if (c == OPT_NO_MOUSE) {
            o->no_mouse = true;
        } else if (c == OPT_SCRIPT) {
            o->script = optarg;
        } else if (c == OPT_DUMP) {
            o->dump = optarg;
        } else if (c == OPT_VERSION) {
            printf("dllm-tui %s (build: %s)\n", dllm_version(), DLLM_BUILD_CONFIG);
            exit(CLI_EXIT_OK);
        }
    }
    if (optind != argc)
        cli_usage_error(&command, "unexpected argument '%s'", argv[optind]);
    if (o->gen.prompt && strcmp(o->gen.prompt, "-") == 0)
        cli_usage_error(&command, "-p - (standard input) is for dllm run; here -p takes the "
                                  "first message itself");
}

/* ---- signals ------------------------------------------------------------------------------ */

static volatile sig_atomic_t got_signal;
static int signal_wake_fd = -1;

/* TERM, HUP, QUIT: leave through the normal path, which restores the terminal. INT (from
 * outside; Ctrl+C itself is a key) counts as a press of Ctrl+C. */
static void on_signal(int sig)
{
    got_signal = sig;
    uint64_t one = 1;
    ssize_t rc = write(signal_wake_fd, &one, sizeof one);
    (void)rc;
}

static void catch_signals(void)
{
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    const int sigs[] = {SIGTERM, SIGHUP, SIGQUIT, SIGINT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
}

/* The open screen, closed by exit() on any path that leaves while it is up. */
static struct ui_screen *open_screen;

static void close_screen(void)
{
    if (open_screen)
        ui_screen_close(open_screen);
    open_screen = NULL;
}

/* ---- scripts ------------------------------------------------------------------------------ */

/* Reads a whole file (a script) into a malloc'd buffer; NULL with errno set on failure. */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? 2 * cap : 4096;
            char *grown = realloc(buf, cap);
            if (!grown) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = grown;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        errno = EIO;
        return NULL;
    }
    *len = n;
    return buf;
}

/* A script being played: the next command, and since when it has been waiting. */
struct player {
    struct ui_script script;
    size_t next;
    double wait_since; /* < 0: not waiting */
};

/* Ctrl+O: the input in the user's editor, the terminal handed over to it meanwhile. */
static void edit_input(struct ui_app *app, struct ui_screen *scr)
{
    char why[DLLM_ERROR_TEXT_MAX] = "";
    ui_screen_leave(scr);
    char *text = edit_external(app->editor.buf ? app->editor.buf : "", why, sizeof why);
    ui_screen_return(scr);
    ui_app_edited(app, text, why);
    free(text);
}

/* A key to the app, and what it asks of the program: Ctrl+Z's stop, Ctrl+O's editor. */
static void press(struct ui_app *app, struct ui_screen *scr, uint32_t key, double now)
{
    ui_app_key(app, key, now);
    if (app->suspend) {
        app->suspend = false;
        ui_screen_suspend(scr);
    }
    if (app->edit_external) {
        app->edit_external = false;
        edit_input(app, scr);
    }
}

/* Types each character of text as a key (newline and tab as their keys). */
static void type_text(struct ui_app *app, struct ui_screen *scr, const char *text, size_t len,
                      double now)
{
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        i += ui_utf8_decode(text + i, len - i, &cp);
        press(app, scr, cp == '\n' ? UI_KEY_CTRL('j') : cp == '\t' ? UI_KEY_TAB : cp, now);
    }
}

/*
 * Plays script commands until one has to wait or the script ends. Returns false (err set)
 * when a wait timed out or a dump could not be written.
 */
static bool play(struct player *p, struct ui_app *app, struct ui_screen *scr, char *err,
                 size_t size)
{
    while (p->next < p->script.n && !app->quit) {
        const struct ui_script_cmd *cmd = &p->script.cmds[p->next];
        double now = cli_now_ms();
        bool wait = false;
        switch (cmd->op) {
        case UI_SCRIPT_TEXT: type_text(app, scr, cmd->text, cmd->len, now); break;
        case UI_SCRIPT_PASTE:
            press(app, scr, UI_KEY_PASTE_BEGIN, now);
            type_text(app, scr, cmd->text, cmd->len, now);
            press(app, scr, UI_KEY_PASTE_END, now);
            break;
        case UI_SCRIPT_KEY:
            for (int i = 0; i < cmd->count; i++)
                press(app, scr, cmd->key, now);
            break;
        case UI_SCRIPT_RESIZE:
            ui_screen_resize(scr, cmd->rows, cmd->cols);
            press(app, scr, UI_KEY_RESIZE, now);
            break;
        case UI_SCRIPT_WAIT_IDLE: wait = app->generating; break;
        case UI_SCRIPT_WAIT_STEP: wait = app->generating && app->frame.step + 1 < cmd->count; break;
        case UI_SCRIPT_DUMP:
        case UI_SCRIPT_DUMP_STYLES:
            ui_screen_draw(scr, app);
            if (!ui_screen_dump(scr, cmd->text, cmd->op == UI_SCRIPT_DUMP_STYLES)) {
                snprintf(err, size, "script line %d: cannot write %s: %s", cmd->line, cmd->text,
                         strerror(errno));
                return false;
            }
            break;
        }
        if (wait) {
            if (p->wait_since < 0)
                p->wait_since = now;
            if (now - p->wait_since > SCRIPT_WAIT_MS) {
                snprintf(err, size, "script line %d: still waiting after %.0f s", cmd->line,
                         SCRIPT_WAIT_MS / 1000);
                return false;
            }
            return true;
        }
        p->wait_since = -1;
        p->next++;
    }
    return true;
}

/* ---- the main loop ------------------------------------------------------------------------ */

/*
 * Runs the chat until it quits, a signal ends it or the script does. Draws when something
 * changed and a frame's time has passed since the last drawing. Returns false (err set) when
 * a script failed.
 */
static bool run(struct ui_app *app, struct ui_screen *scr, struct player *player, char *err,
                size_t size)
{
    double last_draw = -1e12;
    bool dirty = true;
    bool typed = false; /* keys came last time: curses may hold the start of a sequence */
    while (!app->quit && got_signal != SIGTERM && got_signal != SIGHUP && got_signal != SIGQUIT) {
        if (got_signal == SIGINT) {
            got_signal = 0;
            press(app, scr, UI_KEY_CTRL('c'), cli_now_ms());
            dirty = true;
        }
        if (player) {
            size_t before = player->next;
            if (!play(player, app, scr, err, size))
                return false;
            dirty |= player->next != before;
            if (player->next == player->script.n || app->quit)
                break;
        }
        double now = cli_now_ms();
        if (dirty && now - last_draw >= FRAME_MS) {
            ui_screen_draw(scr, app);
            last_draw = now;
            dirty = false;
        }
        int timeout = dirty ? (int)(FRAME_MS - (now - last_draw)) + 1 : -1;
        if ((player || typed) && (timeout < 0 || timeout > 20))
            timeout = 20; /* a script waiting on the engine, or a lone Esc, looks again soon */
        struct pollfd fds[2] = {{app->slot->wake_fd, POLLIN, 0}, {STDIN_FILENO, POLLIN, 0}};
        int rc = poll(fds, player ? 1 : 2, timeout);
        if (rc < 0 && errno != EINTR) {
            snprintf(err, size, "poll: %s", strerror(errno));
            return false;
        }
        if (rc > 0 && (fds[0].revents & POLLIN))
            dirty |= ui_app_poll(app);
        /* Keys; after EINTR too, as a resize (SIGWINCH) arrives as a key; and once more after
         * keys came, for an Esc that curses held back waiting to see if a sequence follows. */
        uint32_t key;
        bool look = !player && (rc < 0 || (fds[1].revents & POLLIN) || typed);
        typed = look && (fds[1].revents & POLLIN);
        while (look && ui_screen_read_key(scr, &key)) {
            press(app, scr, key, cli_now_ms());
            dirty = true;
        }
    }
    return true;
}

/* Makes sure text is measured as UTF-8, the terminal's encoding in practice. */
static void use_utf8(void)
{
    setlocale(LC_ALL, "");
    if (strcmp(nl_langinfo(CODESET), "UTF-8") != 0 && !setlocale(LC_CTYPE, "C.UTF-8"))
        cli_fail("dllm-tui needs a UTF-8 locale: set LANG=C.UTF-8 (or another UTF-8 locale)");
}

/*
 * Whether the command line asks for --batch, as getopt_long reads it with the chat's and dllm
 * run's flags together, so that a flag's value that reads "--batch" (-p --batch) is a value.
 * The words that are the flag become NULL in argv; a screen flag beside it is a usage error.
 */
static bool take_batch_flag(const struct cli_command *batch, int argc, char **argv)
{
    struct option opts[64];
    size_t n = 0;
    append_options(opts, &n, gen_long_options, 0);
    append_options(opts, &n, chat_options, 0);
    append_options(opts, &n, cmd_run_options, OPT_RUN);
    append_options(opts, &n, (const struct option[]){{"batch", no_argument, NULL, OPT_BATCH}, {0}},
                   0);
    char **words = malloc(((size_t)argc + 1) * sizeof *words); /* getopt_long reorders them */
    if (!words)
        cli_fail("out of memory");
    memcpy(words, argv, ((size_t)argc + 1) * sizeof *words);
    bool found = false;
    const char *screen_flag = NULL;
    int c, at;
    opterr = 0;
    optind = 0;
    while ((c = getopt_long(argc, words, ":hm:p:t:", opts, &at)) != -1) {
        if (c == OPT_BATCH) {
            found = true;
            for (int i = 1; i < argc; i++)
                if (argv[i] == words[optind - 1])
                    argv[i] = NULL;
        } else if (c >= OPT_COLOR && c <= OPT_DUMP && !screen_flag) {
            screen_flag = opts[at].name;
        }
    }
    optind = 0; /* the next parse starts afresh */
    free(words);
    if (found && screen_flag)
        cli_usage_error(batch, "--%s is for the chat screen; --batch has none", screen_flag);
    return found;
}

int main(int argc, char **argv)
{
    cli_check_output_at_exit();
    /* dllm-tui --batch ...: the one-shot generation of dllm run, with the same flags. */
    static const struct cli_command batch = {"chat --batch", "one-shot generation", cmd_run_usage,
                                             cmd_run};
    if (take_batch_flag(&batch, argc, argv)) {
        int n = 0;
        for (int i = 0; i < argc; i++)
            if (argv[i])
                argv[n++] = argv[i];
        argv[n] = NULL;
        return cmd_run(&batch, n, argv);
    }
    use_utf8();
    struct tui_options o = {.gen = {.threads = (int)sysconf(_SC_NPROCESSORS_ONLN)}};
    parse_options(argc, argv, &o);
    struct player player = {.wait_since = -1}, *play_it = NULL;
    char err_text[DLLM_ERROR_TEXT_MAX + 128];
    if (o.script) {
        size_t len;
        char *src = read_file(o.script, &len);
        if (!src)
            cli_fail("cannot read the script %s: %s", o.script, strerror(errno));
        bool ok = ui_script_parse(src, len, &player.script, err_text, sizeof err_text);
        free(src);
        if (!ok)
            cli_usage_error(&command, "%s: %s", o.script, err_text);
        play_it = &player;
    } else if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        cli_fail("dllm-tui needs a terminal on standard input and output: use dllm run for "
                 "scripts, or --script FILE for a headless run");
    } else if (!ui_screen_check_terminal(err_text, sizeof err_text)) {
        cli_fail("%s", err_text); /* before seconds of loading, not after */
    }

    struct ui_frame_slot slot;
    if (!ui_frame_slot_init(&slot))
        cli_fail("cannot create the frame slot: %s", strerror(errno));
    /* A hub model (or, without -m, the default one) is downloaded before the screen opens. */
    char *model_path = model_ref_path(o.gen.model, o.gen.offline);
    /*
     * The settings are checked against the model's metadata (mapping the file is quick) before
     * the engine prepares the weights, which takes seconds.
     */
    struct dllm_sampler_params settings;
    struct dllm_model *peek = model_ref_open(model_path, false);
    gen_options_sampler(&command, &o.gen, peek, 0, false, &settings);
    const int64_t canvas = dllm_model_n_ctx(peek) < DLLM_MAX_CANVAS_DEFAULT
                               ? dllm_model_n_ctx(peek)
                               : DLLM_MAX_CANVAS_DEFAULT;
    struct dllm_forward_params fp;
    dllm_forward_params_init(&fp);
    char device[300];
    device_choose(&command, &o.gen.device, peek, canvas, canvas,
                  dllm_request_cache_bytes(peek, canvas, &settings), &fp, device, sizeof device);
    dllm_model_close(peek);
    struct ui_engine_params params = {.model = model_path,
                                      .threads = o.gen.threads,
                                      .no_chat = o.gen.no_chat,
                                      .kernels = cli_kernels(),
                                      .backend = fp.backend,
                                      .device = fp.device,
                                      .gpu_resident = fp.gpu_resident,
                                      .device_label = device,
                                      .progress = model_ref_progress};
    struct ui_engine *engine;
    struct dllm_error err = {0};
    if (ui_engine_open(&params, &slot, &engine, &err) != DLLM_OK)
        cli_fail("%s", err.text);
    struct ui_engine_info info;
    ui_engine_info(engine, &info);

    char *history = ui_history_path();
    struct ui_app app;
    if (!ui_app_init(&app, engine, &slot, &info, &settings, history))
        cli_fail("out of memory");
    free(history);
    app.mouse = !o.no_mouse;
    if (o.gen.system && !ui_transcript_set_system(&app.transcript, o.gen.system))
        cli_fail("out of memory");

    struct ui_screen screen;
    if (!ui_screen_open(&screen, o.color, o.script != NULL, 0, 0, err_text, sizeof err_text))
        cli_fail("%s", err_text);
    open_screen = &screen;
    atexit(close_screen);
    signal_wake_fd = slot.wake_fd;
    catch_signals();

    if (o.gen.prompt) {
        ui_editor_set(&app.editor, o.gen.prompt);
        ui_app_key(&app, UI_KEY_ENTER, cli_now_ms());
    }
    bool ok = run(&app, &screen, play_it, err_text, sizeof err_text);
    if (ok && o.dump) {
        ui_screen_draw(&screen, &app);
        if (!ui_screen_dump(&screen, o.dump, false)) {
            snprintf(err_text, sizeof err_text, "cannot write %s: %s", o.dump, strerror(errno));
            ok = false;
        }
    }
    close_screen();
    ui_engine_close(engine);
    free(model_path);
    ui_app_fini(&app);
    ui_frame_slot_fini(&slot);
    ui_script_fini(&player.script);
    if (got_signal == SIGTERM || got_signal == SIGHUP || got_signal == SIGQUIT) {
        signal(got_signal, SIG_DFL);
        raise(got_signal);
    }
    if (!ok)
        cli_fail("%s", err_text);
    return CLI_EXIT_OK;
}
