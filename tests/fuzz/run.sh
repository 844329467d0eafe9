#!/bin/sh
# Runs one fuzz target for a while on its corpus and committed seeds, from the build folder:
#   run.sh NAME SECONDS SRCDIR FIXTURES
# The corpus grows in fuzz-corpus/NAME, the log is fuzz-NAME.log; prints the runs and coverage,
# or the log's tail and exits 1 when the target found a crash.
set -u
name=$1 seconds=$2 srcdir=$3 fixtures=$4
corpus=fuzz-corpus/$name
mkdir -p "$corpus"
extra=
[ "$name" = gguf ] && extra="$fixtures/models $fixtures/tokenizer"
# shellcheck disable=SC2086 # extra is a list of folders
if ! "./tests/fuzz/fuzz_$name" -max_total_time="$seconds" -max_len=1048576 -rss_limit_mb=4096 \
    -print_final_stats=1 "$corpus" "$srcdir/tests/fuzz/seeds/$name" $extra \
    >"fuzz-$name.log" 2>&1; then
    echo "fuzz_$name failed:"
    tail -50 "fuzz-$name.log"
    exit 1
fi
{
    grep -E '^#[0-9]+[[:space:]]+DONE' "fuzz-$name.log"
    grep '^stat::number_of_executed_units' "fuzz-$name.log"
} | sed "s/^/  $name ($seconds s): /"
