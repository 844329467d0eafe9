#!/bin/sh
# The whole CUDA backend on the host: a bundle as tests/gpu/prepare.sh makes one, but with
# tests/libdllm-emu as its libdllm.so.0 (cuda/backend-cuda.c over tests/cuda-emu's stand-in
# runtime, whose device memory is checked, and a host cuBLAS) and kernel_check_emu --small as
# its kernel_check. tests/gpu/run.sh's check stage runs on it with --device gpu as on a GPU
# (kernels, every fixture's logits against float64, generation replayed step by step), then
# dllm run on the emulated GPU in every mode against the CPU: the exact pass (default and
# --gpu-resident) must commit the same tokens; with a K/V cache, whose approximation can bring
# rows close to a tie, the first block must; --device gpu and auto on an emulated GPU too small;
# and dllm-tui on it in tmux. Needs no GPU and no CUDA.
. "${DLLM_TESTS_SRC:-$(dirname "$0")}/lib.sh"
need_fixtures
BUILD=$(cd "$(dirname "$DLLM")/.." && pwd)
GPU=${DLLM_TESTS_SRC:-$(dirname "$0")}/gpu
FIX=$(cd "$FIX" && pwd)
if [ ! -f "$BUILD/tests/.libs/libdllm-emu.so.0" ]; then
    echo "SKIP: no shared tests/libdllm-emu in $BUILD (a --disable-shared build)"
    exit 77
fi
B=$TMP/bundle
mkdir -p "$B/bin" "$B/lib"
cp "$BUILD/src/.libs/dllm" "$BUILD/src/.libs/dllm-tui" "$B/bin/"
cp -L "$BUILD/tests/.libs/libdllm-emu.so.0" "$B/lib/libdllm.so.0"
cp -L "$BUILD/hub/.libs/libdllm-hub.so.0" "$B/lib/"
printf '#!/bin/sh\nexec "%s" --small "$@"\n' "$BUILD/tests/kernel_check_emu" >"$B/bin/kernel_check"
chmod +x "$B/bin/kernel_check"
ln -s "$FIX" "$B/fixtures"

# emu ARGS...: the bundle's dllm, on the emulated GPU where ARGS ask for one.
emu() { LD_LIBRARY_PATH="$B/lib" "$B/bin/dllm" "$@"; }

run "--device auto finds the emulated GPU" 0 emu logits -m "$FIX/models/llada-tiny-q4km.gguf" \
    --tokens 1,2,3 --rows all --out "$TMP/l.f32" --device auto
expect_err "and says so" 'running on GPU 0 \(host emulation \(tests/cuda-emu\)\)'
run "--device gpu:1: there is one GPU" 1 emu logits -m "$FIX/models/llada-tiny-q4km.gguf" \
    --tokens 1,2,3 --rows all --out "$TMP/l.f32" --device gpu:1
expect_err "says how many" 'there is no GPU 1: this machine has 1'

run "run.sh check on the emulated GPU" 0 env GPU_BUNDLE="$B" OUT="$TMP/res" WORK="$TMP/work" \
    "$GPU/run.sh" check
expect_out "the stage passed" '^== check exit 0$'
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["pass"] and len(d["checks"]) >= 80 else 1)' "$TMP/res/kernels.json"; then
    ok "kernels.json: every kernel check passed"
else not_ok "kernels.json: $(head -c 300 "$TMP/res/kernels.json")"; fi
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["failed"] == 0 and len(d["cases"]) >= 10 and all(c["device"] == "gpu" for c in d["cases"]) else 1)' "$TMP/res/check-gpu.json"; then
    ok "check-gpu.json: every fixture case within llama.cpp's distance, MoE refused"
else not_ok "check-gpu.json: $(head -c 300 "$TMP/res/check-gpu.json")"; fi
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["failed"] == 0 and len(d["models"]) == 2 and all(m["comparable"] >= 0.8 for m in d["models"]) else 1)' "$TMP/res/gen-gpu.json"; then
    ok "gen-gpu.json: the replayed steps commit what the CPU commits"
else not_ok "gen-gpu.json: $(head -c 300 "$TMP/res/gen-gpu.json")"; fi

# tokens MODEL ARGS...: the token ids dllm run generates (32 in blocks of 8, 16 steps, greedy).
tokens() {
    model=$1
    shift
    emu run -m "$model" --no-chat -p "The quick brown fox" --max-tokens 32 --steps 16 \
        --block-length 8 --temperature 0 --json "$@" 2>"$TMP/err" |
        python3 -c 'import json,sys; print(" ".join(map(str, json.load(sys.stdin)["tokens"])))'
}
for arch in llada dream; do
    m=$TMP/$arch-f16.gguf
    emu synth --arch "$arch" --preset tiny --type F16 --quiet --out "$m" >/dev/null ||
        not_ok "dllm synth --arch $arch --type F16"
    cpu=$(tokens "$m" --device cpu)
    for mode in "" "--gpu-resident"; do
        gpu=$(tokens "$m" --device gpu $mode)
        if [ -n "$cpu" ] && [ "$gpu" = "$cpu" ]; then ok "$arch ${mode:-default}: the CPU's tokens"
        else not_ok "$arch ${mode:-default}: $gpu, the CPU $cpu; $(head -c 300 "$TMP/err")"; fi
    done
    for cache in "dual" "prefix" "dual --cache-type f32" "prefix --cache-type f32"; do
        cpu=$(tokens "$m" --device cpu --cache $cache | cut -d' ' -f1-8)
        gpu=$(tokens "$m" --device gpu --cache $cache | cut -d' ' -f1-8)
        if [ -n "$cpu" ] && [ "$gpu" = "$cpu" ]; then ok "$arch --cache $cache: the CPU's first block"
        else not_ok "$arch --cache $cache: $gpu, the CPU $cpu; $(head -c 300 "$TMP/err")"; fi
    done
done
# A GPU too small (DLLM_EMU_GPU_MB): 64 tiny layers over a canvas of 4002 need about 0.5 GB,
# and 0.5 GB more for a float32 K/V cache, which --device auto counts before it chooses.
m=$TMP/layers64.gguf
emu synth --arch llada --preset tiny --layers 64 --quiet --out "$m" >/dev/null ||
    not_ok "dllm synth --layers 64"
long="--no-chat -p hi --max-tokens 4000 --block-length 4000 --steps 1"
run "--device gpu on a GPU too small" 1 env DLLM_EMU_GPU_MB=100 \
    LD_LIBRARY_PATH="$B/lib" "$B/bin/dllm" run -m "$m" $long --device gpu
expect_err "says how much is needed and free" \
    'needs [0-9.]+ GB of GPU memory on GPU 0 but 0\.1 GB is free: use --device cpu$'
run "--device gpu without room for the K/V cache" 1 env DLLM_EMU_GPU_MB=760 \
    LD_LIBRARY_PATH="$B/lib" "$B/bin/dllm" run -m "$m" $long --cache dual --cache-type f32 --device gpu
expect_err "counts the cache" \
    'needs [0-9.]+ GB of GPU memory with its K/V cache on GPU 0 but 0\.8 GB is free: use --device cpu$'
# auto runs on the CPU then: stopped after 3 s (Ctrl+C, exit 130), or done (0) on a fast machine
DLLM_EMU_GPU_MB=760 LD_LIBRARY_PATH="$B/lib" timeout --preserve-status -s INT 3 "$B/bin/dllm" run \
    -m "$m" $long --cache dual --cache-type f32 --device auto >/dev/null 2>"$TMP/err"
got=$?
if [ "$got" -eq 0 ] || [ "$got" -eq 130 ]; then ok "--device auto without room for the cache (exit $got)"
else not_ok "--device auto without room for the cache: exit $got"; fi
expect_err "falls back to the CPU, saying why" 'not on GPU 0: the model needs [0-9.]+ GB of GPU memory with its K/V cache'
expect_err "and where it runs" '^dllm run: running on the CPU$'
# The primary context (the stand-in reports its state at exit with DLLM_EMU_CONTEXTS): one a
# probe made on a GPU that is then refused or only described is destroyed again; the one on
# the GPU a run uses stays.
ctx() { env DLLM_EMU_CONTEXTS=1 LD_LIBRARY_PATH="$B/lib" "$@"; }
run "--device auto with a GPU too small for the model" 0 ctx env DLLM_EMU_GPU_MB=1 "$B/bin/dllm" \
    logits -m "$FIX/models/llada-tiny-q4km.gguf" --tokens 1,2,3 --rows all --out "$TMP/l.f32" \
    --device auto
expect_err "runs on the CPU" '^dllm logits: running on the CPU$'
expect_err "leaving no context on the GPU it refused" '^cuda-emu: primary context inactive$'
run "dllm doctor (no model in an empty cache: exit 1)" 1 ctx env HF_HOME="$TMP/empty-hf" \
    "$B/bin/dllm" doctor
expect_out "describes the emulated GPU" '^ok +cuda +GPU 0: host emulation'
expect_err "leaving no context on it" '^cuda-emu: primary context inactive$'
run "--device auto with room on the GPU" 0 ctx "$B/bin/dllm" logits \
    -m "$FIX/models/llada-tiny-q4km.gguf" --tokens 1,2,3 --rows all --out "$TMP/l.f32" --device auto
expect_err "keeps the context it ran in" '^cuda-emu: primary context active$'
run "dllm bench on the emulated GPU" 0 emu bench -m "$TMP/dream-f16.gguf" --device gpu \
    --canvas 24 --rows 8 --reps 5 --json
expect_out "its kernel is cuBLAS" '"kernel": "cublas"'
# The GPU's phases are timed by events on its stream, read once the pass is done (the stand-in
# refuses an event's time before its stream is synchronised; the phases would then be zeros),
# in a pass of their own after each timed one: every phase took time, and the phases of the
# quickest phase pass add up to about the quickest timed pass (within half of one; the least
# of five is what the pass costs when no other test on this machine takes the cores from it).
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); s=min(sum(p.values()) for p in d["phases_ms"]); t=min(d["pass_ms"]); sys.exit(0 if all(v > 0 for p in d["phases_ms"] for v in p.values()) and 0.5 * t <= s <= 1.5 * t else 1)' "$TMP/out"; then
    ok "its phases, timed on the GPU's stream, add up to about a pass"
else not_ok "phases_ms: $(tr -d ' \n' < "$TMP/out" | grep -oE '"(pass|phases)_ms":\[[^]]*\]')"; fi

# dllm-tui on the emulated GPU in a real terminal: its session's worker thread runs the passes.
if ! command -v tmux >/dev/null; then
    if [ "${CI:-}" = true ]; then not_ok "tmux is not installed (Debian package tmux)"
    else echo "skipped: dllm-tui on the emulated GPU (no tmux)"; fi
    finish
    exit $?
fi
SOCK=dllm-emu-$$
trap 'tmux -L "$SOCK" kill-server 2>/dev/null; rm -rf "$TMP"' EXIT
tmux -L "$SOCK" -f /dev/null new-session -d -s tui -x 100 -y 30 \
    "env LANG=C.UTF-8 TERM=xterm-256color XDG_STATE_HOME='$TMP/state' LD_LIBRARY_PATH='$B/lib' \
     '$B/bin/dllm-tui' -m '$TMP/dream-f16.gguf' --device gpu --max-tokens 16 --steps 8 \
     --no-early-stop; echo \"exit status \$?\"; sleep 60"
# pane NAME PATTERN: waits up to 60 s for the pane to show PATTERN (grep -E).
pane() {
    i=0
    while [ $i -lt 600 ]; do
        tmux -L "$SOCK" capture-pane -p -t tui >"$TMP/pane" 2>/dev/null
        if grep -Eq -- "$2" "$TMP/pane"; then ok "$1"; return 0; fi
        sleep 0.1
        i=$((i + 1))
    done
    not_ok "$1: the pane never showed /$2/"
    sed 's/^/  | /' "$TMP/pane"
}
pane "dllm-tui starts on the emulated GPU" ' · gpu:0 host emulation'
tmux -L "$SOCK" send-keys -t tui -l "hello"
tmux -L "$SOCK" send-keys -t tui Enter
pane "an answer completes" '^dllm · 8 steps'
tmux -L "$SOCK" send-keys -t tui C-c C-c
pane "and it quits with status 0" '^exit status 0$'
tmux -L "$SOCK" kill-server 2>/dev/null
finish
