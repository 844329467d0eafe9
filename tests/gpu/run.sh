#!/bin/sh
# The GPU proof, run on the device machine from the bundle tests/gpu/prepare.sh made (.gpu/):
#   tests/gpu/run.sh [--device gpu|cpu] build|check|bench|all
# Each stage takes at most 5 minutes and writes its results under $OUT (default .gpu/out) as it
# ends, so a rerun repeats only what failed:
#   build  the bundle's dist tarball configured --with-cuda for sm_90 only and built there (the
#          fallback when the bundled binaries do not run);
#   check  kernel_check (every kernel against the CPU on random data of the real shapes) and
#          every fixture model's forward pass against the float64 logits (logits_check.py);
#   bench  dllm synth files of the LLaDA-8B and Dream-7B shapes, the median step_ms of dllm run
#          and dllm bench at canvas 160 and 512, with nvidia-smi's peak memory at 512 (JSON).
# It first prints ldd of the binaries, nvidia-smi and nvcc's version. --device cpu runs the same
# harness on the CPU backend (make check runs it so), with the tiny fixture in the bench.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DEVICE=gpu
case "${1:-}" in --device) DEVICE=$2; shift 2 ;; esac
INNER=
case "${1:-}" in --inner) INNER=1; shift ;; esac # a stage under timeout, run by stage()
STAGE=${1:-all}
case "$DEVICE" in gpu | cpu) ;; *) echo "run.sh: --device is gpu or cpu" >&2; exit 2 ;; esac
case "$STAGE" in build | check | bench | all) ;; *)
    echo "usage: tests/gpu/run.sh [--device gpu|cpu] build|check|bench|all" >&2; exit 2 ;; esac
BUNDLE=${GPU_BUNDLE:-$ROOT/.gpu}
OUT=${OUT:-$BUNDLE/out}
mkdir -p "$OUT"
[ -d "$BUNDLE/bin" ] || { echo "run.sh: no bundle in $BUNDLE: run tests/gpu/prepare.sh first" >&2; exit 1; }
BIN=$BUNDLE/bin
[ -x "$OUT/build/bin/dllm" ] && BIN=$OUT/build/bin # a rebuilt fallback wins
export LD_LIBRARY_PATH="$BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
FIX=$BUNDLE/fixtures
MODELS=${GPU_MODELS:-${TMPDIR:-/tmp}/dllm-gpu-models} # synth files (GBs): never under $OUT
mkdir -p "$MODELS"
LIMIT=300

failed=0

# stage NAME: runs the stage NAME for at most LIMIT seconds, its output into $OUT/NAME.log.
stage() {
    name=$1
    echo "== $name"
    timeout "$LIMIT" "$0" --device "$DEVICE" --inner "$name" >"$OUT/$name.log" 2>&1
    rc=$?
    cat "$OUT/$name.log"
    echo "$rc" >"$OUT/$name.rc"
    [ "$rc" -eq 0 ] || { echo "== $name FAILED (exit $rc)"; failed=1; }
}

build() {
    tar=$(ls "$BUNDLE"/dllm-*.tar.gz | head -1)
    rm -rf "$OUT/build" && mkdir -p "$OUT/build/src" "$OUT/build/bin"
    tar xzf "$tar" -C "$OUT/build/src" --strip-components=1 &&
        (cd "$OUT/build/src" && ./configure -q --with-cuda=yes CUDA_ARCHS=90 &&
            make -j"$(nproc)" src/dllm src/dllm-tui) &&
        cp "$OUT/build/src/src/.libs/dllm" "$OUT/build/src/src/.libs/dllm-tui" "$OUT/build/bin/" &&
        cp -P "$OUT/build/src/engine/.libs/"libdllm.so* "$OUT/build/src/hub/.libs/"libdllm-hub.so* \
            "$BUNDLE/lib/"
}

check() {
    if [ "$DEVICE" = gpu ]; then
        [ -x "$BIN/kernel_check" ] || { echo "kernel_check is not in the bundle"; return 1; }
        "$BIN/kernel_check" || return 1
    fi
    python3 "$HERE/logits_check.py" "$BIN/dllm" "$FIX" "$DEVICE" "$OUT/check-$DEVICE.json"
}

# median_step FILE.json: the median of dllm run --json's step_ms after the first (warm-up).
median_step() {
    python3 -c 'import json,sys,statistics; s=json.load(open(sys.argv[1]))["step_ms"][1:]; print(statistics.median(s))' "$1"
}

bench() {
    if [ "$DEVICE" = gpu ]; then
        models="llada:8b dream:7b"
    else
        models="llada:tiny"
    fi
    prompt=$(python3 -c 'print(" ".join(["word"] * 31))') # 32 tokens with BOS
    results="$OUT/bench-$DEVICE.json"
    echo "[" >"$results"
    sep=
    for m in $models; do
        arch=${m%%:*} preset=${m#*:}
        file=$MODELS/$arch-$preset.gguf
        [ -f "$file" ] || "$BIN/dllm" synth --arch "$arch" --preset "$preset" --out "$file" --quiet || return 1
        "$BIN/dllm" run -m "$file" --device "$DEVICE" --no-chat -p "$prompt" --max-tokens 128 \
            --steps 128 --block-length 32 --no-early-stop --json >"$OUT/run-$arch.json" || return 1
        step=$(median_step "$OUT/run-$arch.json")
        for canvas in 160 512; do
            peak=
            if [ "$DEVICE" = gpu ] && [ "$canvas" = 512 ]; then
                nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 \
                    >"$OUT/mem-$arch.txt" 2>/dev/null &
                smi=$!
            fi
            "$BIN/dllm" bench -m "$file" --device "$DEVICE" --canvas "$canvas" --rows 32 --json \
                >"$OUT/bench-$arch-$canvas.json" || return 1
            if [ -n "${smi:-}" ]; then
                kill "$smi"; wait "$smi" 2>/dev/null
                peak=$(sort -n "$OUT/mem-$arch.txt" | tail -1)
                smi=
            fi
            printf '%s{"arch": "%s", "preset": "%s", "device": "%s", "file_bytes": %s, "step_ms": %s, "canvas": %s, "bench": %s, "gpu_peak_mib": %s}\n' \
                "$sep" "$arch" "$preset" "$DEVICE" "$(stat -c %s "$file")" "$step" "$canvas" \
                "$(cat "$OUT/bench-$arch-$canvas.json")" "${peak:-null}" >>"$results"
            sep=,
        done
    done
    echo "]" >>"$results"
    python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$results" && cat "$results"
}

if [ -n "$INNER" ]; then
    "$STAGE"
    exit $?
fi
echo "== ldd $BIN/dllm"
ldd "$BIN/dllm"
echo "== nvidia-smi"
nvidia-smi 2>&1 || echo "(no nvidia-smi)"
echo "== nvcc --version"
nvcc --version 2>&1 || /usr/local/cuda/bin/nvcc --version 2>&1 || echo "(no nvcc)"
case "$STAGE" in
all)
    stage check
    stage bench
    ;;
*) stage "$STAGE" ;;
esac
exit "$failed"
