#!/bin/sh
# dllm doctor: the report's lines and exit status with an empty cache, with the default model
# pulled from the fake hub (tests/fake_hub.py serving a fixture model under its name), after
# the verified memo is lost, with the model's file gone, a bad DLLM_KERNELS, and with and
# without an nvidia-smi on PATH. Doctor never uses the network.
. "${DLLM_TESTS_SRC:-$(dirname "$0")}/lib.sh"
need_fixtures
M=$FIX/models
DEFAULT_REPO=mradermacher/LLaDA-8B-Instruct-GGUF
DEFAULT_FILE=LLaDA-8B-Instruct.Q4_K_M.gguf
start_fake_hub --serve "$DEFAULT_REPO:$DEFAULT_FILE=$M/llada-tiny-q4km.gguf" \
    --serve "test/llada-GGUF:llada-tiny.Q8_0.gguf=$M/llada-tiny-q80.gguf"
unset DLLM_KERNELS

# Programs on PATH for doctor: none, or an nvidia-smi stand-in.
mkdir -p "$TMP/nobin" "$TMP/gpu" "$TMP/nodriver"
printf '#!/bin/sh\necho "NVIDIA H200, 143771, 570.86.15"\n' >"$TMP/gpu/nvidia-smi"
printf '#!/bin/sh\necho "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver."\nexit 9\n' \
    >"$TMP/nodriver/nvidia-smi"
chmod +x "$TMP/gpu/nvidia-smi" "$TMP/nodriver/nvidia-smi"

# fixes_named NAME: every line of the last report that is not ok names a command in quotes.
fixes_named() {
    if grep -E '^(warn|FAIL) ' "$TMP/out" | grep -v "'" >"$TMP/bad"; then
        not_ok "$1: $(head -1 "$TMP/bad")"; else ok "$1"; fi
}

HF_HUB_CACHE="$TMP/empty" run "empty cache" 1 env PATH="$TMP/nobin" "$DLLM" doctor
expect_out "cpu line" '^(ok|warn) +cpu +'
expect_out "kernels line" '^ok +kernels +(ref|avx2|avxvnni|avx512), the fastest variant this CPU runs$'
expect_out "cores line" '^ok +cores +[0-9]+ online'
expect_out "memory line" '^ok +memory +[0-9.]+ [kMGT]B, [0-9.]+ [kMGT]B available$'
# The pages line follows the kernel's transparent huge page mode, read here apart from dllm.
THP=/sys/kernel/mm/transparent_hugepage/enabled
mode=$(sed -n 's/.*\[\([a-z]*\)\].*/\1/p' "$THP" 2>/dev/null)
case $mode in
"") expect_out "pages line: unknown" "^ok +pages +transparent huge pages unknown \\(no $THP\\)\$" ;;
never) expect_out "pages line: off" "^warn +pages +transparent huge pages are off, .*'echo madvise > $THP'\$" ;;
*) expect_out "pages line: $mode" "^ok +pages +transparent huge pages: $mode \\(dllm asks for them" ;;
esac
expect_out "no GPU" '^ok +gpu +no NVIDIA GPU found \(nvidia-smi is not installed\)'
expect_out "build line" '^(ok|warn) +build +dllm [0-9.]+, cuda=(yes|no) debug=(yes|no)'
expect_out "library versions" '^ok +libraries +libcurl [0-9.]+ .*OpenSSL .*jansson [0-9.]+, PCRE2 [0-9.]+.*, ncurses [0-9.]+'
expect_out "cache line" "^ok +cache +$TMP/empty: 0 GGUF models, 0 B; .* free\$"
expect_out "default model missing" "^FAIL +default +$DEFAULT_REPO:Q4_K_M is not in the cache: run 'dllm pull'\$"
expect_out "summary" "^1 problem: run the command named on the FAIL line, then 'dllm doctor' again\$"
fixes_named "every problem names its fix"

run "GPU found" 1 env PATH="$TMP/gpu" "$DLLM" doctor
expect_out "GPU line" '^ok +gpu +NVIDIA H200, 150.8 GB, driver 570.86.15$'
# The CUDA line comes from the library: the build without CUDA, the runtime's reason for no
# GPU (on a machine without a driver: the driver), or each GPU it finds.
expect_out "cuda line" '^ok +cuda +(this build has no CUDA backend|the CUDA backend is built but finds no GPU: no (usable NVIDIA driver|CUDA GPU): |GPU 0: .*, compute capability [0-9]+\.[0-9]+, )'
run "nvidia-smi without a driver" 1 env PATH="$TMP/nodriver" "$DLLM" doctor
expect_out "driver message" '^ok +gpu +no NVIDIA GPU found \(nvidia-smi: NVIDIA-SMI has failed'

run "pull the default model" 0 "$DLLM" pull -q
run "model in place" 0 "$DLLM" doctor
expect_out "model listed" "^ok +model +$DEFAULT_REPO:$DEFAULT_FILE, 1.6 MB, verified\$"
expect_out "default model ready" "^ok +default +$DEFAULT_REPO:Q4_K_M: $DEFAULT_FILE, 1.6 MB, verified, loads \\(llada, 2 layers\\)\$"
expect_out "memory enough" '^ok +memory +.*, enough for the default model$'
expect_out "ready" "^ready: "
expect_out "cache counts the file" '^ok +cache +.*: 1 GGUF model, 1.6 MB;'

ctl /_reset >/dev/null
run "pull another model" 0 "$DLLM" pull -q test/llada-GGUF:Q8_0
rm "$XDG_CACHE_HOME/dllm/verified.json"
ctl /_reset >/dev/null
run "memo lost" 0 "$DLLM" doctor
expect_err "the default model is hashed again" "^dllm: $DEFAULT_FILE: checking the SHA-256"
expect_out "and verified" "^ok +default +.*verified, loads"
expect_out "other model unchecked" "^warn +model +test/llada-GGUF:llada-tiny.Q8_0.gguf, 2.6 MB, unchecked: .*'dllm pull test/llada-GGUF:llada-tiny.Q8_0.gguf'\$"
fixes_named "warnings name their fix"
if ctl /_log | python3 -c '
import json, sys
sys.exit(any(not e["path"].startswith("/_") for e in json.load(sys.stdin)))'; then
    ok "no request to the hub"; else not_ok "doctor used the network"; fi

DLLM_KERNELS=bogus run "bad DLLM_KERNELS" 1 "$DLLM" doctor
expect_out "kernels fail" "^FAIL +kernels +DLLM_KERNELS: unknown kernel variant 'bogus'.*: run 'unset DLLM_KERNELS'\$"

rm "$CACHE/models--mradermacher--LLaDA-8B-Instruct-GGUF/blobs/"*
run "the model's file gone" 1 "$DLLM" doctor
expect_out "broken listed" "^warn +model +$DEFAULT_REPO:$DEFAULT_FILE, broken: .*'dllm pull $DEFAULT_REPO:$DEFAULT_FILE'"
expect_out "default fails" "^FAIL +default +.*dllm pull"
fixes_named "every problem names its fix, file gone"

run "doctor with an argument" 2 "$DLLM" doctor extra
run "doctor --help" 0 "$DLLM" doctor --help
expect_out "usage" '^usage: dllm doctor'
run "dllm --help lists doctor" 0 "$DLLM" --help
expect_out "command list" '^  doctor '
finish
