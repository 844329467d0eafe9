#include "config.h"

#include "cli.h"
#include "dllm.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <time.h>

/* Whether cli_fail has said why the program ends (check_output then adds no second line). */
static bool failed;

void cli_fail(const char *fmt, ...)
{
    failed = true;
    va_list ap;
    va_start(ap, fmt);
    fputs("dllm: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(CLI_EXIT_ERROR);
}

/*
 * At exit: standard output flushed; where a write to it failed (a full disk), the failure said
 * on stderr (unless cli_fail has said why the program ends) and the exit status made 1, so
 * that no command reports success for lost output. exit() may not be called again here,
 * hence _exit.
 */
static void check_output(void)
{
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout))
        return;
    if (!failed)
        fprintf(stderr, "dllm: error: cannot write the output: %s\n",
                errno ? strerror(errno) : "a write to it failed");
    _exit(CLI_EXIT_ERROR);
}

void cli_check_output_at_exit(void)
{
    atexit(check_output);
}

void cli_usage_error(const struct cli_command *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "dllm %s: ", cmd->name);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nrun 'dllm %s --help' for usage\n", cmd->name);
    va_end(ap);
    exit(CLI_EXIT_USAGE);
}

void cli_help(const struct cli_command *cmd)
{
    fputs(cmd->usage, stdout);
    exit(CLI_EXIT_OK);
}

int cli_getopt(const struct cli_command *cmd, int argc, char **argv, const char *shortopts,
               const struct option *longopts)
{
    /* The caller's options plus --help, with ':' first so missing arguments are reported. */
    static struct option all[64];
    static char shorts[128];
    size_t n = 0;
    while (longopts && longopts[n].name && n < 62) {
        all[n] = longopts[n];
        n++;
    }
    all[n++] = (struct option){"help", no_argument, NULL, 'h'};
    all[n] = (struct option){0};
    snprintf(shorts, sizeof shorts, ":h%s", shortopts ? shortopts : "");
    opterr = 0;
    int c = getopt_long(argc, argv, shorts, all, NULL);
    if (c == 'h')
        cli_help(cmd);
    if (c == '?') {
        if (optopt)
            cli_usage_error(cmd, "unknown option -%c", optopt);
        cli_usage_error(cmd, "unknown option %s", argv[optind - 1]);
    }
    if (c == ':')
        cli_usage_error(cmd, "option %s needs a value", argv[optind - 1]);
    return c;
}

/* Whether a whole number starts at p: a digit after an optional '-' (no space, no '+'). */
static bool whole_starts(const char *p)
{
    p += *p == '-';
    return *p >= '0' && *p <= '9';
}

bool cli_plain_number(const char *text)
{
    const char *p = text + (*text == '-');
    return ((*p >= '0' && *p <= '9') || *p == '.') && p[strspn(p, "0123456789.eE+-")] == '\0';
}

long long cli_parse_int(const struct cli_command *cmd, const char *flag, const char *text,
                        long long min, long long max)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (!whole_starts(text) || errno || end == text || *end || v < min || v > max)
        cli_usage_error(cmd, "%s takes a whole number from %lld to %lld, not '%s'", flag, min, max,
                        text);
    return v;
}

uint64_t cli_parse_u64(const struct cli_command *cmd, const char *flag, const char *text)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (*text < '0' || *text > '9' || errno || *end)
        cli_usage_error(cmd, "%s takes a whole number from 0 to %llu, not '%s'", flag,
                        (unsigned long long)UINT64_MAX, text);
    return v;
}

int32_t *cli_parse_list(const struct cli_command *cmd, const char *flag, const char *text,
                        int32_t min, int32_t max, int64_t *n)
{
    size_t cap = 1;
    for (const char *p = text; *p; p++)
        cap += *p == ',';
    int32_t *v = malloc(cap * sizeof *v);
    if (!v)
        cli_fail("out of memory");
    *n = 0;
    const char *p = text;
    for (;;) {
        char *end;
        errno = 0;
        long long x = strtoll(p, &end, 10);
        if (!whole_starts(p) || end == p || errno || x < min || x > max || (*end && *end != ','))
            cli_usage_error(cmd, "%s takes comma-separated whole numbers from %d to %d, not '%s'",
                            flag, (int)min, (int)max, text);
        v[(*n)++] = (int32_t)x;
        if (!*end)
            return v;
        p = end + 1;
    }
}

double cli_parse_float(const struct cli_command *cmd, const char *flag, const char *text,
                       double min, double max)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (!cli_plain_number(text) || errno || end == text || *end || !isfinite(v) || v < min ||
        v > max)
        cli_usage_error(cmd, "%s takes a number from %g to %g, not '%s'", flag, min, max, text);
    return v;
}

/* The time of clock id in milliseconds. */
static double clock_ms(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

double cli_now_ms(void)
{
    return clock_ms(CLOCK_MONOTONIC);
}

double cli_cpu_ms(void)
{
    return clock_ms(CLOCK_PROCESS_CPUTIME_ID);
}

void cli_cpu_split_ms(double *user_ms, double *sys_ms)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    *user_ms = ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3;
    *sys_ms = ru.ru_stime.tv_sec * 1e3 + ru.ru_stime.tv_usec / 1e3;
}

double cli_peak_rss_mb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0;
}

const char *cli_kernels(void)
{
    const char *force = getenv("DLLM_KERNELS");
    const char *name;
    struct dllm_error err;
    if (dllm_kernels_name(force, &name, &err) != DLLM_OK)
        cli_fail("DLLM_KERNELS: %s", err.text);
    return force && *force ? force : NULL;
}

char *cli_read_stdin(void)
{
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, stdin)) > 0) {
        n += got;
        if (cap - n - 1 == 0) {
            char *p = realloc(buf, cap *= 2);
            if (!p)
                free(buf);
            buf = p;
        }
    }
    if (!buf)
        cli_fail("out of memory reading the prompt");
    buf[n] = 0;
    return buf;
}
