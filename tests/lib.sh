# Shared by the CLI test scripts: assertions, a pass/fail count and the fixture lookup.
# Each script sources this, runs its checks and calls `finish`.

DLLM="${DLLM_BIN:-$(dirname "$0")/../src}/dllm"
passed=0
failed=0
TMP=$(mktemp -d "${TMPDIR:-/tmp}/dllm-cli-XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# The fixtures folder, or SKIP (exit 77) when absent; with CI=true absence is a failure.
need_fixtures() {
    if [ ! -d "${DLLM_FIXTURES:-}" ]; then
        echo "SKIP: reference fixtures not found at '${DLLM_FIXTURES:-}': set DLLM_FIXTURES to the shared fixtures folder"
        if [ "${CI:-}" = true ]; then echo "FAIL: CI=true, where missing fixtures are a failure"; exit 1; fi
        exit 77
    fi
    FIX=$DLLM_FIXTURES
}

ok() { passed=$((passed + 1)); echo "ok: $1"; }
not_ok() { failed=$((failed + 1)); echo "FAIL: $1"; }

# run NAME EXPECTED_STATUS CMD...: runs CMD with stdout in $TMP/out and stderr in $TMP/err.
run() {
    local name=$1 want=$2
    shift 2
    "$@" >"$TMP/out" 2>"$TMP/err"
    local got=$?
    if [ "$got" -eq "$want" ]; then ok "$name (exit $got)"; else
        not_ok "$name: exit $got, expected $want"; sed 's/^/  stderr: /' "$TMP/err" | head -5
    fi
}

# expect_out NAME PATTERN / expect_err NAME PATTERN: grep -E in the last run's output.
expect_out() { if grep -Eq -- "$2" "$TMP/out"; then ok "$1"; else not_ok "$1: stdout lacks /$2/"; head -5 "$TMP/out" | sed 's/^/  stdout: /'; fi; }
expect_err() { if grep -Eq -- "$2" "$TMP/err"; then ok "$1"; else not_ok "$1: stderr lacks /$2/"; head -5 "$TMP/err" | sed 's/^/  stderr: /'; fi; }
# expect_lines FILE N NAME: stderr (or FILE) has exactly N lines.
expect_err_lines() { local n; n=$(wc -l <"$TMP/err"); if [ "$n" -eq "$2" ]; then ok "$1"; else not_ok "$1: stderr has $n lines, expected $2"; fi; }

finish() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}
