#!/bin/sh
# The GPU proof's harness on the CPU backend: tests/gpu/prepare.sh makes its bundle from this
# build (size checked by prepare.sh) and tests/gpu/run.sh --device cpu runs the check stage
# (every fixture's logits against float64 within llama.cpp's distance, generation replayed
# step by step against the CPU's run) and the bench stage (the tiny shape, both modes), each
# writing its JSON, and no more files than the device tool brings back; bench/table.py renders
# the bench stage's document, and its --cpu keeps the CPU tables to one CPU model.
# A build without CUDA cannot make the bundle: prepare.sh must refuse it.
. "${DLLM_TESTS_SRC:-$(dirname "$0")}/lib.sh"
need_fixtures
BUILD=$(cd "$(dirname "$DLLM")/.." && pwd)
GPU=$DLLM_TESTS_SRC/gpu
if ! grep -q 'cuda=yes' "$BUILD/config.h"; then
    run "prepare.sh refuses a build without CUDA" 1 env GPU_BUNDLE="$TMP/gpu" "$GPU/prepare.sh" "$BUILD"
    expect_err "says why" 'is not a --with-cuda build'
    finish
    exit $?
fi
run "prepare.sh makes the bundle" 0 env GPU_BUNDLE="$TMP/gpu" DLLM_FIXTURES="$FIX" "$GPU/prepare.sh" "$BUILD"
expect_out "its size" '^prepare.sh: .* is [0-9]+ MiB'
if [ ! -e "$TMP/gpu/fixtures/models/dream-tiny-realvocab-q4km.gguf" ] &&
    [ -f "$TMP/gpu/fixtures/models/llada-tiny-q4km.gguf" ] && ls "$TMP/gpu"/dllm-*.tar.gz >/dev/null &&
    [ -x "$TMP/gpu/bin/dllm" ]; then ok "bundle: binaries, tarball, fixtures but realvocab"
else not_ok "bundle contents: $(ls -R "$TMP/gpu" | head -20 | tr '\n' ' ')"; fi
run "run.sh --device cpu check" 0 env GPU_BUNDLE="$TMP/gpu" OUT="$TMP/res" WORK="$TMP/work" "$GPU/run.sh" --device cpu check
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["failed"] == 0 and len(d["cases"]) >= 10 else 1)' "$TMP/res/check-cpu.json"; then
    ok "every fixture case within llama.cpp's distance on the CPU"
else not_ok "check-cpu.json: $(head -c 300 "$TMP/res/check-cpu.json")"; fi
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["failed"] == 0 and len(d["models"]) == 2 and all(m["comparable"] == 1 for m in d["models"]) else 1)' "$TMP/res/gen-cpu.json"; then
    ok "generation replayed step by step commits what the run committed, every step"
else not_ok "gen-cpu.json: $(head -c 300 "$TMP/res/gen-cpu.json")"; fi
run "run.sh --device cpu bench" 0 env GPU_BUNDLE="$TMP/gpu" OUT="$TMP/res" WORK="$TMP/work" "$GPU/run.sh" --device cpu bench
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); e=d["gpu"]; sys.exit(0 if d["device"] == "cpu" and d["machine"]["cores"] > 0 and sorted((r["mode"], r["canvas"]) for r in e) == [("default", 160), ("default", 512), ("resident", 160), ("resident", 512)] and all(r["step_ms"] > 0 and r["step_canvas"] == 160 and 0 < r["forward_ms"] <= r["step_ms"] and r["sample_ms"] >= 0 and r["bench"]["median_ms"] > 0 and r["error"] is None for r in e) else 1)' "$TMP/res/bench-cpu.json"; then
    ok "bench-cpu.json: a step time on the bench's canvas, its pass and sampling times, and two canvases per mode"
else not_ok "bench-cpu.json: $(head -c 300 "$TMP/res/bench-cpu.json")"; fi
# A failure is an entry of the document, the other entries still measured: a model dllm synth
# cannot make fails its modes and canvases, the tiny one is measured, the stage exits 1.
run "run.sh bench: a model that cannot be made" 1 env GPU_BUNDLE="$TMP/gpu" OUT="$TMP/res2" \
    WORK="$TMP/work" BENCH_MODELS="nosuch:tiny llada:tiny" "$GPU/run.sh" --device cpu bench
if python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["gpu"]; bad=[r for r in e if r["arch"] == "nosuch"]; good=[r for r in e if r["arch"] == "llada"]; sys.exit(0 if len(bad) == 4 and all(r["error"] == "dllm synth failed" and r["bench"] is None and r["step_ms"] is None for r in bad) and len(good) == 4 and all(r["error"] is None and r["bench"]["median_ms"] > 0 for r in good) else 1)' "$TMP/res2/bench-cpu.json"; then
    ok "the failure is in its entries, the other model measured"
else not_ok "bench-cpu.json: $(head -c 300 "$TMP/res2/bench-cpu.json")"; fi
# A device whose cuBLAS lies outside the toolkit's folders and the loader's cache (a Python
# package's copy): run.sh finds it under CUDA_SEARCH and says so in env.txt. Here an ldd
# stand-in hides cuBLAS unless its copy's folder is on the library path.
REAL_LDD=$(command -v ldd)
CUBLAS=$(LD_LIBRARY_PATH="$TMP/gpu/lib" "$REAL_LDD" "$TMP/gpu/lib/libdllm.so.0" |
    awk '$1 ~ /^libcublas(Lt)?\.so\.[0-9]+$/ {print $3}')
mkdir -p "$TMP/fakebin" "$TMP/pkgs/nvidia/cublas/lib"
for f in $CUBLAS; do ln -s "$f" "$TMP/pkgs/nvidia/cublas/lib/"; done
cat >"$TMP/fakebin/ldd" <<EOF
#!/bin/sh
case "\$LD_LIBRARY_PATH" in *$TMP/pkgs/nvidia/cublas/lib*) exec "$REAL_LDD" "\$@" ;; esac
"$REAL_LDD" "\$@" | sed -E 's/^([[:space:]]*libcublas(Lt)?\.so\.[0-9]+) => .*/\1 => not found/'
EOF
chmod +x "$TMP/fakebin/ldd"
run "run.sh with cuBLAS in a package's folder" 1 env PATH="$TMP/fakebin:$PATH" \
    GPU_BUNDLE="$TMP/gpu" OUT="$TMP/res3" WORK="$TMP/work" CUDA_SEARCH="$TMP/pkgs" \
    BENCH_MODELS="nosuch:tiny" "$GPU/run.sh" --device cpu bench
if [ "$(echo "$CUBLAS" | wc -w)" -eq 2 ] &&
    grep -Eq "^== CUDA libraries found outside the toolkit's folders: .*pkgs/nvidia/cublas/lib/libcublas\.so\.[0-9]+" "$TMP/res3/env.txt" &&
    grep -Eq "libcublasLt\.so\.[0-9]+" "$TMP/res3/env.txt" && grep -q "^== still missing: *$" "$TMP/res3/env.txt"; then
    ok "finds cuBLAS and cuBLASLt there and says so"
else not_ok "env.txt: $(head -3 "$TMP/res3/env.txt" | tr '\n' ' ') (cuBLAS: $CUBLAS)"; fi
# bench/table.py renders the document as the README's GPU table: a row per model and mode.
mkdir -p "$TMP/results" && cp "$TMP/res/bench-cpu.json" "$TMP/results/"
run "bench/table.py renders the bench document" 0 python3 "$DLLM_TESTS_SRC/../bench/table.py" \
    --results "$TMP/results"
P='[0-9.]+ / [0-9.]+ / [0-9.]+ / [0-9.]+' # the phases
expect_out "the GPU table's default row" "^\\| llada tiny \\| default \\| [0-9.]+ \\| 160 \\| [0-9.]+ / [0-9.]+ \\| [0-9.]+ \\| $P \\| [0-9.]+ \\| $P \\| n/a \\| 0\\.0[0-9] \\| n/a \\|\$"
expect_out "its resident row" "^\\| llada tiny \\| resident \\| [0-9.]+ \\| 160 \\| [0-9.]+ / [0-9.]+ \\| [0-9.]+ \\| $P \\|"
expect_out "where it ran" "^_[0-9-]{10}, commit [^,]+, device cpu; host .*, [0-9]+ cores\._\$"
# --cpu keeps the CPU tables to one CPU model: a folder with none of its runs is an error.
run "bench/table.py --cpu with no run of that CPU" 1 python3 "$DLLM_TESTS_SRC/../bench/table.py" \
    --results "$TMP/results" --cpu 99:99
expect_err "it names the CPU" "no result file in .* was measured on CPU family 99 model 99"
run "bench/table.py --cpu not FAMILY:MODEL" 2 python3 "$DLLM_TESTS_SRC/../bench/table.py" \
    --results "$TMP/results" --cpu zen5
# The device tool brings back at most 8 files of $OUT, none more than two folders down.
n=$(find "$TMP/res" -type f | wc -l)
deep=$(find "$TMP/res" -mindepth 3 -type f | wc -l)
if [ "$n" -le 8 ] && [ "$deep" -eq 0 ] && [ -s "$TMP/res/env.txt" ] && [ -s "$TMP/res/bench.log" ]; then
    ok "\$OUT holds $n files, all within reach of the device tool"
else not_ok "\$OUT: $(find "$TMP/res" -type f | tr '\n' ' ')"; fi
if ls "$TMP/gpu/lib" | grep -q -e '^libstdc++' -e '^libgcc_s'; then
    not_ok "the bundle carries the C++ runtime: $(ls "$TMP/gpu/lib" | tr '\n' ' ')"
else ok "the bundle leaves the C++ runtime to the device"; fi
run "run.sh: a bad stage" 2 "$GPU/run.sh" --device cpu everything
# A GPU's wrong rows are failures in the JSON, not a crash that leaves none: a row of zeros
# (rows never copied) or with a NaN is as far from the reference as a row can be.
run "logits_check: zero and NaN rows" 0 python3 -c 'import math, sys; sys.path.insert(0, sys.argv[1]); from logits_check import row_error as e; assert e([0.0, 0.0], [1.0, 2.0]) == (0.0, math.inf); assert e([1.0, math.nan], [1.0, 2.0]) == (0.0, math.inf); c, r = e([1.0, 2.0], [1.0, 2.0]); assert abs(c - 1) < 1e-12 and r == 0' "$GPU"
finish
