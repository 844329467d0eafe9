/* Resolving and loading -m models for the programs, with the download progress display. */
#include "config.h"

#include "model_ref.h"

#include "cli.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Set by SIGINT during a resolve; the library checks it and stops, keeping the partial file. */
static atomic_bool interrupted;

/* Cancels the resolve in progress. */
static void on_sigint(int sig)
{
    atomic_store(&interrupted, true);
    signal(sig, SIG_DFL); /* a second Ctrl+C ends the program at once */
}

/* How progress is shown: a redrawn bar on a terminal, else throttled log lines. */
struct view {
    bool tty;
    int width;
    double last_log;
    int last_file;  /* the file of the last line, -1 before any */
    int last_phase; /* an enum dllm_hub_phase */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

const char *model_ref_bytes(char buf[16], double bytes)
{
    static const char *const units[] = {"B", "kB", "MB", "GB", "TB"};
    int u = 0;
    while (bytes >= 1000 && u < 4) {
        bytes /= 1000;
        u++;
    }
    snprintf(buf, 16, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
    return buf;
}

const char *model_ref_state_name(enum dllm_hub_state state)
{
    switch (state) {
    case DLLM_HUB_STATE_VERIFIED: return "verified";
    case DLLM_HUB_STATE_UNCHECKED: return "unchecked";
    case DLLM_HUB_STATE_NO_HASH: return "no hash";
    case DLLM_HUB_STATE_BROKEN: return "broken";
    }
    return "?";
}

/* Seconds as m:ss or h:mm:ss, or "?" when unknown. */
static const char *clock_text(char buf[32], double s)
{
    if (!(s >= 0) || s > 359999) {
        snprintf(buf, 32, "?");
        return buf;
    }
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, 32, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, 32, "%ld:%02ld", t / 60, t % 60);
    return buf;
}

/* The file's name as shown: its base name, cut to 32 characters. */
static void short_name(char out[40], const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    if (n > 32)
        snprintf(out, 40, "%.14s...%s", base, base + n - 15);
    else
        snprintf(out, 40, "%s", base);
}

/* Redraws the terminal line: name, a bar that takes the room left, bytes, rate and ETA. */
static void draw_bar(struct view *v, const struct dllm_progress *p)
{
    char name[40], a[16], b[16], r[16], eta[32], right[160], line[512];
    int width = v->width > 20 ? v->width - 1 : 79;
    short_name(name, p->file);
    double frac = p->fraction < 1 ? p->fraction : 1;
    if (p->phase == DLLM_HUB_PHASE_WAIT) {
        snprintf(line, sizeof line, "%s  waiting for another download of this file", name);
    } else if (p->phase == DLLM_HUB_PHASE_CHECK) {
        snprintf(line, sizeof line, "%s  checking %3.0f%%  %s", name, 100 * frac,
                 model_ref_bytes(a, (double)p->done));
    } else {
        double left = p->phase == DLLM_HUB_PHASE_DONE ? 0
                      : p->rate > 0                   ? (double)(p->total - p->done) / p->rate
                                                      : -1;
        int n = snprintf(right, sizeof right, " %3.0f%%  %s/%s", 100 * frac,
                         model_ref_bytes(a, (double)p->done), model_ref_bytes(b, (double)p->total));
        if (p->rate > 0)
            snprintf(right + n, sizeof right - (size_t)n, "  %s/s  ETA %s",
                     model_ref_bytes(r, p->rate), clock_text(eta, left));
        /* Room for the rate and ETA is kept before they are known, so the bar keeps its size. */
        int room = width - (int)strlen(name) - (int)strlen(right) - (p->rate > 0 ? 4 : 26);
        int bar_len = room > 40 ? 40 : room;
        char bar[48] = "";
        if (bar_len >= 5) {
            int fill = (int)(frac * bar_len);
            bar[0] = '[';
            for (int i = 0; i < bar_len; i++)
                bar[i + 1] = i < fill ? '#' : '.';
            bar[bar_len + 1] = ']';
            bar[bar_len + 2] = 0;
        }
        snprintf(line, sizeof line, "%s  %s%s", name, bar, right);
    }
    fprintf(stderr, "\r%.*s\033[K", width, line);
    if (p->phase == DLLM_HUB_PHASE_DONE)
        fputc('\n', stderr);
    fflush(stderr);
}

/* Log lines for a log file: one at each change, and every 10 s while downloading. */
static void log_line(struct view *v, const struct dllm_progress *p)
{
    char a[16], b[16], r[16], eta[32];
    double t = now_s();
    bool fresh = p->file_index != v->last_file || p->phase != v->last_phase;
    if (p->phase == DLLM_HUB_PHASE_DOWNLOAD && !fresh && t - v->last_log < 10)
        return;
    if (p->phase != DLLM_HUB_PHASE_DOWNLOAD && !fresh)
        return;
    v->last_log = t;
    const char *file = p->file;
    switch ((enum dllm_hub_phase)p->phase) {
    case DLLM_HUB_PHASE_CHECK:
        fprintf(stderr, "dllm: %s: checking the SHA-256 of %s on disk\n", file,
                model_ref_bytes(a, (double)p->total));
        break;
    case DLLM_HUB_PHASE_WAIT:
        fprintf(stderr, "dllm: %s: waiting for another download of this file\n", file);
        break;
    case DLLM_HUB_PHASE_DOWNLOAD:
        if (fresh && p->done == 0) {
            fprintf(stderr, "dllm: %s: downloading %s\n", file,
                    model_ref_bytes(a, (double)p->total));
            break;
        }
        if (fresh) {
            fprintf(stderr, "dllm: %s: resuming at %s of %s\n", file,
                    model_ref_bytes(a, (double)p->done), model_ref_bytes(b, (double)p->total));
            break;
        }
        fprintf(stderr, "dllm: %s: %s of %s (%.0f%%), %s/s, ETA %s\n", file,
                model_ref_bytes(a, (double)p->done), model_ref_bytes(b, (double)p->total),
                p->total > 0 ? 100.0 * (double)p->done / (double)p->total : 0,
                model_ref_bytes(r, p->rate),
                clock_text(eta, p->rate > 0 ? (double)(p->total - p->done) / p->rate : -1));
        break;
    case DLLM_HUB_PHASE_RETRY: break;
    case DLLM_HUB_PHASE_DONE:
        fprintf(stderr, "dllm: %s: verified, %s\n", file, model_ref_bytes(a, (double)p->total));
        break;
    }
}

/*
 * The progress callback: retries are always said; the rest by bar or log line, except the
 * end of a file nothing was shown for (already in the cache and verified), which is silent.
 */
static void on_progress(const struct dllm_progress *p, void *user)
{
    struct view *v = user;
    if (p->phase == DLLM_HUB_PHASE_DONE && v->last_file != p->file_index)
        return;
    if (p->phase == DLLM_HUB_PHASE_RETRY) {
        if (v->tty && v->last_file >= 0)
            fputc('\n', stderr);
        fprintf(stderr, "dllm: %s%s%s; retrying in %.1f s\n", p->file, *p->file ? ": " : "", p->why,
                p->retry_in);
    } else if (v->tty) {
        draw_bar(v, p);
    } else {
        log_line(v, p);
    }
    v->last_file = p->phase == DLLM_HUB_PHASE_DONE ? -1 : p->file_index;
    v->last_phase = p->phase;
}

void model_ref_params(struct dllm_hub_params *params, struct dllm_hub_env *env)
{
    dllm_hub_params_init(params);
    struct dllm_error err = {0};
    if (dllm_hub_params_from_env(params, env, &err) != DLLM_OK)
        cli_fail("%s", err.text);
    const char *base = getenv("DLLM_HUB_RETRY_BASE_MS");
    const char *stall = getenv("DLLM_HUB_STALL_SECONDS");
    if (base && atoi(base) >= 0)
        params->retry_base_ms = atoi(base);
    if (stall && atoi(stall) > 0)
        params->stall_seconds = atoi(stall);
}

enum dllm_status model_ref_resolve(const char *ref, struct dllm_hub_params *params, bool quiet,
                                   struct dllm_hub_model **out, struct dllm_error *err)
{
    struct view view = {.tty = isatty(STDERR_FILENO), .last_file = -1};
    struct winsize ws;
    if (view.tty && ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0)
        view.width = ws.ws_col;
    params->progress = quiet ? NULL : on_progress;
    params->progress_user = &view;
    params->cancel = &interrupted;
    atomic_store(&interrupted, false);
    void (*previous)(int) = signal(SIGINT, on_sigint);
    enum dllm_status st = dllm_hub_resolve(ref, params, out, err);
    signal(SIGINT, previous);
    params->progress = NULL;
    params->progress_user = NULL;
    params->cancel = NULL;
    if (view.tty && view.last_file >= 0)
        fputc('\n', stderr);
    if (st == DLLM_ERR_CANCELLED && err)
        snprintf(err->text, sizeof err->text,
                 "download of %s interrupted; run the same command again to resume", ref);
    /* Offline, a file missing from the cache or found corrupt there (and deleted). */
    if (params->offline && (st == DLLM_ERR_MISSING || st == DLLM_ERR_FORMAT) && err) {
        size_t n = strlen(err->text);
        snprintf(err->text + n, sizeof err->text - n, ": run 'dllm pull %s' while online", ref);
    }
    if (st != DLLM_OK)
        return st;
    const struct dllm_hub_model *m = *out;
    if (dllm_hub_model_warning(m))
        fprintf(stderr, "dllm: warning: %s\n", dllm_hub_model_warning(m));
    return DLLM_OK;
}

char *model_ref_path(const char *ref, bool offline)
{
    struct dllm_hub_params params;
    struct dllm_hub_env env;
    model_ref_params(&params, &env);
    params.offline = params.offline || offline;
    struct dllm_error err = {0};
    struct dllm_hub_model *model;
    if (!ref)
        ref = DLLM_HUB_DEFAULT_MODEL;
    if (model_ref_resolve(ref, &params, false, &model, &err) != DLLM_OK)
        cli_fail("%s", err.text);
    char *path = strdup(dllm_hub_model_path(model));
    dllm_hub_model_free(model);
    if (!path)
        cli_fail("out of memory");
    return path;
}

/*
 * The bytes of the model at path: the file's, or for part 1 of a split model
 * (NAME-00001-of-0000N.gguf) all its parts'; negative when a file cannot be read.
 */
static double model_bytes(const char *path)
{
    size_t prefix_len;
    int part, count;
    if (!dllm_gguf_split_name(path, &prefix_len, &part, &count) || part != 1)
        count = 0;
    double bytes = 0;
    for (int k = count ? 1 : 0; k <= count; k++) { /* k 0: the one file */
        char *name = k ? dllm_gguf_split_part_path(path, prefix_len, k, count) : NULL;
        struct stat sb;
        const int st = k && !name ? -1 : stat(k ? name : path, &sb);
        free(name);
        if (st != 0)
            return -1;
        bytes += (double)sb.st_size;
    }
    return bytes;
}

void model_ref_announce(const char *path, bool verbose)
{
    if (verbose || isatty(STDERR_FILENO)) {
        char name[40], size[16] = "size unknown";
        short_name(name, path);
        const double bytes = model_bytes(path);
        if (bytes >= 0)
            model_ref_bytes(size, bytes);
        fprintf(stderr, "dllm: loading %s (%s)\n", name, size);
    }
}

void model_ref_progress(const struct dllm_progress *p, void *user)
{
    static double t0;
    if (p->kind != DLLM_PROGRESS_REPACK)
        return;
    const double fraction = p->fraction;
    if (fraction == 0.0)
        t0 = now_s();
    if (isatty(STDERR_FILENO)) {
        fprintf(stderr, "\rdllm: preparing the weights %3.0f%%\033[K%s", 100 * fraction,
                fraction >= 1.0 ? "\n" : "");
        fflush(stderr);
    } else if (fraction >= 1.0 && user && *(const bool *)user) {
        fprintf(stderr, "dllm: weights prepared in %.1f s\n", now_s() - t0);
    }
}

void *model_ref_progress_user(bool verbose)
{
    static const bool yes = true;
    return verbose ? (void *)&yes : NULL;
}

const char *model_ref_fix(enum dllm_status st)
{
    switch (st) {
    case DLLM_ERR_FORMAT:
        return "; the file is damaged, cut short or not a GGUF model: download it again, or "
               "convert the model with llama.cpp's convert_hf_to_gguf.py";
    case DLLM_ERR_MISSING:
    case DLLM_ERR_TYPE:
        return "; convert the model again with a current llama.cpp's convert_hf_to_gguf.py";
    default: return "";
    }
}

struct dllm_model *model_ref_open(const char *path, bool verbose)
{
    model_ref_announce(path, verbose);
    struct dllm_model *model;
    struct dllm_error err = {0};
    enum dllm_status st = dllm_model_open(path, NULL, &model, &err);
    if (st != DLLM_OK)
        cli_fail("%s%s", err.text, model_ref_fix(st));
    return model;
}
