/*
 * The commands of dllm, one in each src/cmd_<name>.c: each takes its own command's entry (for
 * its name in messages) and the arguments after the command word, and returns the exit status.
 */
#ifndef DLLM_COMMANDS_H
#define DLLM_COMMANDS_H

#include "cli.h"

int cmd_inspect(const struct cli_command *cmd, int argc, char **argv);
extern const char cmd_inspect_usage[];
int cmd_tokenize(const struct cli_command *cmd, int argc, char **argv);
extern const char cmd_tokenize_usage[];
int cmd_logits(const struct cli_command *cmd, int argc, char **argv);
extern const char cmd_logits_usage[];
int cmd_run(const struct cli_command *cmd, int argc, char **argv);
extern const char cmd_run_usage[];
/* dllm run's flags beyond gen_long_options (ids from 512 up). */
extern const struct option cmd_run_options[];
int cmd_chat(const struct cli_command *cmd, int argc, char **argv);
extern const char cmd_chat_usage[];
int cmd_doctor(const struct cli_command *cmd, int argc, char **argv);
extern const char cmd_doctor_usage[];
int cmd_pull(const struct cli_command *cmd, int argc, char **argv);
extern const char cmd_pull_usage[];
int cmd_ls(const struct cli_command *cmd, int argc, char **argv);
extern const char cmd_ls_usage[];
int cmd_rm(const struct cli_command *cmd, int argc, char **argv);
extern const char cmd_rm_usage[];
int cmd_synth(const struct cli_command *cmd, int argc, char **argv);
extern const char cmd_synth_usage[];
int cmd_bench(const struct cli_command *cmd, int argc, char **argv);
extern const char cmd_bench_usage[];

#endif
