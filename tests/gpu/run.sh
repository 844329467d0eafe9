#!/bin/sh
# The GPU proof, run on the device machine from the bundle tests/gpu/prepare.sh made (.gpu/):
#   tests/gpu/run.sh [--device gpu|cpu] build|check|bench|all
# Stages (each under a time limit, CHECK_LIMIT 200 s and BENCH_LIMIT 330 s by default, so that
# all fits in one 10-minute call of the device tool; each can also run alone):
#   build  the bundle's dist tarball configured --with-cuda for sm_90 only and built there, a
#          last resort when the bundled binaries do not run (it needs the -dev packages of
#          configure's dependencies, which a bare machine may lack);
#   check  kernel_check (every kernel against the CPU on random data of the real shapes),
#          every fixture model's forward pass against the float64 logits (logits_check.py) and
#          generation replayed step by step against the CPU's run (gen_check.py);
#   bench  dllm synth files of the LLaDA-8B and Dream-7B shapes (BENCH_MODELS, as ARCH:PRESET
#          words), in the default mode and --gpu-resident: the median step_ms of dllm run and
#          dllm bench at canvas 160 and 512, with nvidia-smi's peak memory at 512; a document
#          for bench/table.py (tests/gpu/bench_doc.py), rewritten after every entry; a
#          failure of one model, mode or canvas is recorded in its entry and the others run.
# A fault inside a kernel (an illegal address) is reported by a later call, whose name the error
# then carries: rerun the stage with CUDA_LAUNCH_BLOCKING=1 to have it named at its launch.
# It first writes env.txt: the CUDA libraries it had to look for (CUDA_SEARCH, default
# /usr/local /opt /usr/lib, where the toolkit's folders and the loader lack them), ldd of the
# binaries, nvidia-smi and nvcc's version. The device tool
# brings back at most 8 files of $OUT, so $OUT (default .gpu/out) gets at most these:
# env.txt, check.log, kernels.json, check-DEVICE.json, gen-DEVICE.json, bench.log,
# bench-DEVICE.json, build.log, and bench-DEVICE.json.tmp where the bench stage was cut short
# while writing its document (build runs alone: no call writes all nine); the stages' other
# files stay in $WORK (default $TMPDIR/dllm-gpu). --device cpu runs the same harness on the
# CPU backend (make check runs it so), with the tiny fixture in the bench.
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
WORK=${WORK:-${TMPDIR:-/tmp}/dllm-gpu}
export OUT WORK
mkdir -p "$OUT" "$WORK"
[ -d "$BUNDLE/bin" ] || { echo "run.sh: no bundle in $BUNDLE: run tests/gpu/prepare.sh first" >&2; exit 1; }
BIN=$BUNDLE/bin
[ -x "$WORK/build/bin/dllm" ] && BIN=$WORK/build/bin # a rebuilt fallback wins
# The bundle's libraries for dllm's programs alone (python3 and the system's tools keep the
# system's), then the device's CUDA runtime and cuBLAS where the toolkit keeps them.
LIBS=$BUNDLE/lib
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$d" ] && LIBS=$LIBS:$d
done

# missing_cuda: the CUDA runtime and cuBLAS libraries the programs need that neither those
# folders nor the loader's cache hold (ldd's "not found"), one name a line.
missing_cuda() {
    LD_LIBRARY_PATH=$LIBS ldd "$BIN/dllm" "$BUNDLE"/lib/libdllm.so* 2>/dev/null |
        awk '$2 == "=>" && $3 == "not" && $1 ~ /^libcu(dart|blas|blasLt)\.so/ {print $1}' | sort -u
}
# Where the device image keeps them elsewhere (another toolkit folder, or only a Python
# package's copies, as PyTorch's), found under CUDA_SEARCH and their folders added; libcublas
# needs libcublasLt, which the next round finds.
CUDA_FOUND=
for round in 1 2 3; do
    names=$(missing_cuda)
    [ -n "$names" ] || break
    for name in $names; do
        f=$(find ${CUDA_SEARCH:-/usr/local /opt /usr/lib} -name "$name" 2>/dev/null | head -1)
        [ -n "$f" ] && LIBS=$LIBS:$(dirname "$f") && CUDA_FOUND="$CUDA_FOUND $f"
    done
done
LIB_PATH=$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} # what dllm's programs run with
FIX=$BUNDLE/fixtures
MODELS=${GPU_MODELS:-$WORK/models} # synth files (GBs): never under $OUT
mkdir -p "$MODELS"

# dl PROGRAM ARGS...: one of the bundle's programs, with its libraries.
dl() {
    prog=$1
    shift
    LD_LIBRARY_PATH=$LIB_PATH "$BIN/$prog" "$@"
}

failed=0

# stage NAME LIMIT: runs the stage NAME for at most LIMIT seconds, its output and exit status
# into $OUT/NAME.log.
stage() {
    name=$1
    echo "== $name"
    timeout "$2" "$0" --device "$DEVICE" --inner "$name" >"$OUT/$name.log" 2>&1
    rc=$?
    echo "== $name exit $rc" >>"$OUT/$name.log"
    cat "$OUT/$name.log"
    [ "$rc" -eq 0 ] || { echo "== $name FAILED (exit $rc)"; failed=1; }
}

build() {
    tar=$(ls "$BUNDLE"/dllm-*.tar.gz | head -1)
    b=$WORK/build
    rm -rf "$b" && mkdir -p "$b/src" "$b/bin" "$b/lib"
    tar xzf "$tar" -C "$b/src" --strip-components=1 &&
        (cd "$b/src" && ./configure -q --with-cuda=yes CUDA_ARCHS=90 &&
            make -j"$(nproc)" src/dllm src/dllm-tui tests/gpu/kernel_check) &&
        cp "$b/src/src/.libs/dllm" "$b/src/src/.libs/dllm-tui" "$b/bin/" &&
        { cp "$b/src/tests/gpu/.libs/kernel_check" "$b/bin/" 2>/dev/null ||
            cp "$b/src/tests/gpu/kernel_check" "$b/bin/"; } &&
        cp -P "$b/src/engine/.libs/"libdllm.so* "$b/src/hub/.libs/"libdllm-hub.so* "$BUNDLE/lib/"
}

check() {
    rc=0
    if [ "$DEVICE" = gpu ]; then
        if [ -x "$BIN/kernel_check" ]; then
            dl kernel_check "$OUT/kernels.json" || rc=1
        else
            echo "kernel_check is not in the bundle"
            rc=1
        fi
    fi
    # the logits and the generation run whatever the kernels said: every result comes back
    DLLM_LIBS=$LIBS python3 "$HERE/logits_check.py" "$BIN/dllm" "$FIX" "$DEVICE" \
        "$OUT/check-$DEVICE.json" || rc=1
    DLLM_LIBS=$LIBS python3 "$HERE/gen_check.py" "$BIN/dllm" "$FIX" "$DEVICE" \
        "$OUT/gen-$DEVICE.json" || rc=1
    return $rc
}

# prompt_of FILE N: text that dllm run --no-chat feeds to FILE's model as exactly N tokens
# (bench/run.py's raw_prompt, with the bundle's programs); nothing when none was found.
prompt_of() {
    python3 - "$ROOT/bench" "$BIN/dllm" "$1" "$2" "$LIB_PATH" <<'EOF'
import os, sys
sys.path.insert(0, sys.argv[1])
import run
env = dict(os.environ, LD_LIBRARY_PATH=sys.argv[5])
try:
    sys.stdout.write(run.raw_prompt(sys.argv[2], sys.argv[3], int(sys.argv[4]), env=env))
except run.RunError as e:
    sys.exit(str(e))
EOF
}

# The nvidia-smi sampler of a bench, stopped on every way out of the stage.
smi=
stop_smi() {
    [ -n "$smi" ] && { kill "$smi" 2>/dev/null; wait "$smi" 2>/dev/null; }
    smi=
}

# Per model and mode (the default, dequantizing each matrix into a scratch before its product,
# and --gpu-resident, FP16 copies kept): dllm run's median step and its median forward and
# sampling times (--trace), then dllm bench at canvas 160
# and 512, with GPU 0's peak memory at 512 (nvidia-smi every 100 ms) and its use before; each
# entry added to the document in $OUT as it is measured (bench_doc.py).
bench() {
    trap stop_smi EXIT
    if [ "$DEVICE" = gpu ]; then
        models=${BENCH_MODELS:-llada:8b dream:7b}
    else
        models=${BENCH_MODELS:-llada:tiny}
    fi
    entries=$WORK/bench-entries.jsonl
    rm -f "$entries" "$OUT/bench-$DEVICE.json" "$OUT/bench-$DEVICE.json.tmp"
    rc=0
    for m in $models; do
        arch=${m%%:*} preset=${m#*:}
        file=$MODELS/$arch-$preset.gguf
        # made under another name first: a synth cut short leaves no file a rerun would take
        if [ ! -f "$file" ] &&
            dl dllm synth --arch "$arch" --preset "$preset" --out "$file.part" --quiet; then
            mv "$file.part" "$file"
        fi
        # a prompt of exactly 32 tokens for this model's vocabulary (synth's is byte-level: a
        # word is several tokens), so that the step's canvas is the bench's 160
        prompt=
        [ -f "$file" ] && prompt=$(prompt_of "$file" 32)
        for mode in default resident; do
            flag=
            [ "$mode" = resident ] && flag=--gpu-resident
            error=
            run=$WORK/run-$arch-$mode.json
            trace=$WORK/trace-$arch-$mode.jsonl
            if [ ! -f "$file" ]; then
                error="dllm synth failed"
            elif [ -z "$prompt" ]; then
                error="no 32-token prompt (dllm tokenize failed)"
            elif ! dl dllm run -m "$file" --device "$DEVICE" $flag --no-chat -p "$prompt" \
                --max-tokens 128 --steps 128 --block-length 32 --no-early-stop --json \
                --trace "$trace" >"$run"; then
                error="dllm run failed"
            fi
            for canvas in 160 512; do
                set -- --entries "$entries" --device "$DEVICE" --bundle "$BUNDLE" \
                    --out "$OUT/bench-$DEVICE.json" --arch "$arch" --preset "$preset" \
                    --mode "$mode" --model "$file" --canvas "$canvas"
                if [ -n "$error" ]; then
                    rc=1
                    python3 "$HERE/bench_doc.py" "$@" --error "$error" || rc=1
                    continue
                fi
                mem=$WORK/mem-$arch-$mode.txt
                rm -f "$mem"
                if [ "$DEVICE" = gpu ] && [ "$canvas" = 512 ]; then
                    set -- "$@" --mem "$mem" --idle "$(nvidia-smi -i 0 --query-gpu=memory.used \
                        --format=csv,noheader,nounits 2>/dev/null)"
                    nvidia-smi -i 0 --query-gpu=memory.used --format=csv,noheader,nounits \
                        -lms 100 >"$mem" 2>/dev/null &
                    smi=$!
                fi
                doc=$WORK/bench-$arch-$mode-$canvas.json
                dl dllm bench -m "$file" --device "$DEVICE" $flag --canvas "$canvas" --rows 32 \
                    --json >"$doc" || rc=1
                stop_smi
                python3 "$HERE/bench_doc.py" "$@" --run "$run" --trace "$trace" --bench "$doc" \
                    || rc=1
            done
        done
    done
    [ -f "$OUT/bench-$DEVICE.json" ] && cat "$OUT/bench-$DEVICE.json" || rc=1
    return $rc
}

if [ -n "$INNER" ]; then
    "$STAGE"
    exit $?
fi
{
    echo "== CUDA libraries found outside the toolkit's folders:${CUDA_FOUND:- none needed}"
    echo "== still missing: $(missing_cuda | tr '\n' ' ')"
    echo "== ldd $BIN/dllm"
    LD_LIBRARY_PATH=$LIB_PATH ldd "$BIN/dllm"
    echo "== nvidia-smi"
    nvidia-smi 2>&1 || echo "(no nvidia-smi)"
    echo "== nvcc --version"
    nvcc --version 2>&1 || /usr/local/cuda/bin/nvcc --version 2>&1 || echo "(no nvcc)"
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
case "$STAGE" in
all)
    stage check "${CHECK_LIMIT:-200}"
    stage bench "${BENCH_LIMIT:-330}"
    ;;
build) stage build "${BUILD_LIMIT:-500}" ;;
check) stage check "${CHECK_LIMIT:-200}" ;;
bench) stage bench "${BENCH_LIMIT:-330}" ;;
esac
exit "$failed"
