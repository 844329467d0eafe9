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

# need_python3 WHAT: SKIP (exit 77) without python3, naming what needs it; with CI=true that is
# a failure.
need_python3() {
    if ! command -v python3 >/dev/null; then
        echo "SKIP: python3 is needed for $1"
        if [ "${CI:-}" = true ]; then echo "FAIL: CI=true, where a missing python3 is a failure"; exit 1; fi
        exit 77
    fi
}

ok() { passed=$((passed + 1)); echo "ok: $1"; }
not_ok() { failed=$((failed + 1)); echo "FAIL: $1"; }

# run_to STDOUT NAME EXPECTED_STATUS CMD...: runs CMD with stdout into STDOUT and stderr in
# $TMP/err, and checks its exit status.
run_to() {
    local target=$1 name=$2 want=$3
    shift 3
    "$@" >"$target" 2>"$TMP/err"
    local got=$?
    if [ "$got" -eq "$want" ]; then ok "$name (exit $got)"; else
        not_ok "$name: exit $got, expected $want"; sed 's/^/  stderr: /' "$TMP/err" | head -5
    fi
}
# run NAME EXPECTED_STATUS CMD...: runs CMD with stdout in $TMP/out and stderr in $TMP/err.
run() { run_to "$TMP/out" "$@"; }
# run_full NAME EXPECTED_STATUS CMD...: the same with stdout on /dev/full (a full disk).
run_full() { run_to /dev/full "$@"; }

# expect_out NAME PATTERN / expect_err NAME PATTERN: grep -E in the last run's output.
expect_out() { if grep -Eq -- "$2" "$TMP/out"; then ok "$1"; else not_ok "$1: stdout lacks /$2/"; head -5 "$TMP/out" | sed 's/^/  stdout: /'; fi; }
expect_err() { if grep -Eq -- "$2" "$TMP/err"; then ok "$1"; else not_ok "$1: stderr lacks /$2/"; head -5 "$TMP/err" | sed 's/^/  stderr: /'; fi; }
# expect_lines FILE N NAME: stderr (or FILE) has exactly N lines.
expect_err_lines() { local n; n=$(wc -l <"$TMP/err"); if [ "$n" -eq "$2" ]; then ok "$1"; else not_ok "$1: stderr has $n lines, expected $2"; fi; }

finish() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}

# start_fake_hub [--serve REPO:FILE=PATH ...]: runs tests/fake_hub.py on 127.0.0.1 (stopped on
# exit) and points HF_ENDPOINT at it, HF_HOME and XDG_CACHE_HOME into $TMP; sets PORT and CACHE
# (the hub cache). SKIP (exit 77) without python3; with CI=true that is a failure.
start_fake_hub() {
    need_python3 "the fake hub"
    python3 "${DLLM_TESTS_SRC:-$(dirname "$0")}/fake_hub.py" --port-file "$TMP/port" --idle 60 "$@" &
    HUB=$!
    trap 'kill $HUB 2>/dev/null; rm -rf "$TMP"' EXIT
    i=0
    while [ ! -s "$TMP/port" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
    PORT=$(cat "$TMP/port" 2>/dev/null)
    if [ -z "$PORT" ]; then echo "FAIL: the fake hub did not start"; exit 1; fi
    export HF_ENDPOINT="http://127.0.0.1:$PORT" HF_HOME="$TMP/hf" XDG_CACHE_HOME="$TMP/xdg"
    export DLLM_HUB_RETRY_BASE_MS=10 DLLM_HUB_STALL_SECONDS=1
    unset HF_HUB_CACHE HUGGINGFACE_HUB_CACHE HF_TOKEN HUGGING_FACE_HUB_TOKEN HF_HUB_OFFLINE
    CACHE="$TMP/hf/hub"
}

# ctl PATH: a control request to the fake hub (/_fault, /_log, /_files, /_reset); its answer
# on stdout.
ctl() {
    python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode())' \
        "http://127.0.0.1:$PORT$1"
}
