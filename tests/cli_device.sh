#!/bin/sh
# --device on every command that runs a model (dllm run, logits, bench, dllm-tui --batch):
# gpu where no usable GPU is exits 1 with one line that names the reason and --device cpu;
# auto runs on the CPU there and says why on stderr; cpu runs as before; a bad value exits 2.
# Where the CUDA runtime finds a GPU of capability 8.0 or newer, gpu must run instead.
. "${DLLM_TESTS_SRC:-$(dirname "$0")}/lib.sh"
need_fixtures
L=$FIX/models/llada-tiny-q4km.gguf
G="--max-tokens 8 --steps 4"
TUI=$(dirname "$DLLM")/dllm-tui

if "$DLLM" doctor 2>/dev/null | grep -Eq '^ok +cuda +GPU 0: .*dllm runs on it'; then
    has_gpu=yes; else has_gpu=no; fi
# one_line_gpu_error NAME: the last run's stderr is the one-line refusal of --device gpu.
one_line_gpu_error() {
    if [ "$(wc -l <"$TMP/err")" -eq 1 ] &&
        grep -Eq '^dllm: error: --device gpu:0: (no usable NVIDIA driver: |no CUDA GPU: |this libdllm was built without the CUDA backend).*: use --device cpu$' "$TMP/err"; then
        ok "$1: one line naming the reason and --device cpu"
    else not_ok "$1: stderr: $(head -3 "$TMP/err")"; fi
}

if [ "$has_gpu" = no ]; then
    run "run --device gpu without a GPU" 1 "$DLLM" run -m "$L" -p hi $G --device gpu
    one_line_gpu_error "run"
    run "logits --device gpu:0 without a GPU" 1 "$DLLM" logits -m "$L" --tokens 1,2,3 --rows all \
        --out "$TMP/logits" --device gpu:0
    one_line_gpu_error "logits"
    run "bench --device gpu without a GPU" 1 "$DLLM" bench -m "$L" --canvas 16 --reps 1 --device gpu
    one_line_gpu_error "bench"
    run "dllm-tui --batch --device gpu without a GPU" 1 "$TUI" --batch -m "$L" -p hi $G --device gpu
    one_line_gpu_error "dllm-tui --batch"
    run "run --device auto without a GPU" 0 "$DLLM" run -m "$L" -p hi $G --device auto
    expect_err "auto says it runs on the CPU and why" \
        '^dllm run: --device auto: running on the CPU \((no usable NVIDIA driver|no CUDA GPU|this libdllm was built without the CUDA backend)'
    cp "$TMP/out" "$TMP/auto"
    run "run --device cpu" 0 "$DLLM" run -m "$L" -p hi $G --device cpu
    if cmp -s "$TMP/out" "$TMP/auto"; then ok "auto and cpu give the same answer"
    else not_ok "auto and cpu differ"; fi
else
    run "run --device gpu on a GPU" 0 "$DLLM" run -m "$L" -p hi $G --device gpu
    run "run --device auto on a GPU" 0 "$DLLM" run -m "$L" -p hi $G --device auto
    expect_err "auto names the GPU" '^dllm run: running on GPU 0 \('
fi
run "run --verbose --device cpu names the device" 0 "$DLLM" run -m "$L" -p hi $G --device cpu --verbose
expect_err "verbose line" 'device cpu, '
run "bad --device" 2 "$DLLM" run -m "$L" -p hi --device tpu
expect_err "names the forms" "--device is auto, cpu, gpu or gpu:N, not 'tpu'"
run "bad gpu index" 2 "$DLLM" logits -m "$L" --tokens 1 --rows all --out "$TMP/x" --device gpu:x
run "run --help documents --device" 0 "$DLLM" run --help
expect_out "help" '--device D'
finish
