/* Shared by the dllm programs: the command table, option helpers and exit conventions. */
#ifndef DLLM_CLI_H
#define DLLM_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>

/* Exit codes: 0 success, 1 error, 2 usage error (nothing changed), 3 action needed. */
enum { CLI_EXIT_OK = 0, CLI_EXIT_ERROR = 1, CLI_EXIT_USAGE = 2 };

struct cli_command {
    const char *name;
    const char *summary; /* one line for `dllm help` */
    const char *usage;   /* the command's help text, starting with its synopsis */
    int (*run)(const struct cli_command *cmd, int argc, char **argv);
};

/* Prints "dllm: error: <message>" on stderr and exits 1. */
_Noreturn void cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints "dllm <cmd>: <message>" and a pointer to --help on stderr and exits 2. */
_Noreturn void cli_usage_error(const struct cli_command *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prints the command's usage on stdout and exits 0. */
_Noreturn void cli_help(const struct cli_command *cmd);

/*
 * getopt_long over argv with the command's options plus -h/--help. Returns the option
 * character, -1 at the end; a bad or incomplete option is a usage error.
 */
int cli_getopt(const struct cli_command *cmd, int argc, char **argv, const char *shortopts,
               const struct option *longopts);

/*
 * Whether text is written as a plain decimal number: digits, a '.' and an exponent after an
 * optional '-' ("2", "0.5", ".5", "1e-3"). No space, '+', hex or "inf" (which strtod would
 * take).
 */
bool cli_plain_number(const char *text);

/*
 * Makes the program check standard output as it exits, however it exits: a failed write (a
 * full disk) is said on stderr as "dllm: error: cannot write the output: ..." and the exit
 * status becomes 1. Called first in main.
 */
void cli_check_output_at_exit(void);

/* Parses a whole decimal integer in [min, max] for the named flag, or a usage error. */
long long cli_parse_int(const struct cli_command *cmd, const char *flag, const char *text,
                        long long min, long long max);

/* Parses a whole decimal number from 0 to 2^64-1 for the named flag, or a usage error. */
uint64_t cli_parse_u64(const struct cli_command *cmd, const char *flag, const char *text);

/*
 * Parses "a,b,c" into a new array of n whole numbers in [min, max], or a usage error naming
 * flag.
 */
int32_t *cli_parse_list(const struct cli_command *cmd, const char *flag, const char *text,
                        int32_t min, int32_t max, int64_t *n);

/* Parses a finite float in [min, max] for the named flag, or a usage error. */
double cli_parse_float(const struct cli_command *cmd, const char *flag, const char *text,
                       double min, double max);

/* Milliseconds on the monotonic clock, from an arbitrary start. */
double cli_now_ms(void);

/*
 * The kernel variant the user forces with the environment variable DLLM_KERNELS (ref, avx2,
 * avxvnni, avx512), or NULL for the fastest; an unknown or unusable one ends the program with
 * "dllm: error: DLLM_KERNELS: ...".
 */
const char *cli_kernels(void);

/* Milliseconds of CPU time the process has used, all threads. */
double cli_cpu_ms(void);

/* The same, split into time in the program (*user_ms) and in the kernel for it (*sys_ms). */
void cli_cpu_split_ms(double *user_ms, double *sys_ms);

/* The process's peak resident set size so far, in MB. */
double cli_peak_rss_mb(void);

/* All of standard input as a NUL-terminated string (-p -); out of memory is fatal. */
char *cli_read_stdin(void);

#endif
