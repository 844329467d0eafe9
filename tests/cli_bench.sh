#!/bin/sh
# dllm bench on the fixture models: the JSON document's schema and arithmetic (parameter
# counts from the fixtures' published shapes), the text report, and exit codes on bad flags.
# Nothing here asserts a speed.
. "${DLLM_TESTS_SRC:-$(dirname "$0")}/lib.sh"
need_fixtures

L=$FIX/models/llada-tiny-q4km.gguf
D=$FIX/models/dream-tiny-q4km.gguf

# check_json FILE CANVAS ROWS REPS THREADS PROMPT WEIGHTS TAIL OUTPUT: the document has every
# field with its type, the requested sizes, per-pass times whose median it reports, and gops
# equal to 2 x (WEIGHTS x CANVAS + (TAIL + OUTPUT) x ROWS) / median (TAIL: the last block's
# attention output and FFN, which the CPU computes for the logits rows alone). WEIGHTS, TAIL
# and OUTPUT come from the shapes in the fixtures' README, not from the program. Each pass's
# phases_ms are non-negative and add up to at most its time and at least 80% of it less 5 ms;
# with a tenth argument (a threads list, e.g. 1,2) threads_sweep holds the same for each of
# those numbers of threads.
check_json() {
    python3 - "$@" <<'PY'
import json, statistics, sys
path, canvas, rows, reps, threads, prompt, weights, tail, output = sys.argv[1:10]
sweep = [int(t) for t in sys.argv[10].split(",")] if len(sys.argv) > 10 else []
d = json.load(open(path))

def check_passes(t, name):
    assert len(t["pass_ms"]) == int(reps) and all(p > 0 for p in t["pass_ms"]), t["pass_ms"]
    assert len(t["cpu_ms"]) == int(reps) and all(c > 0 for c in t["cpu_ms"]), t["cpu_ms"]
    assert abs(t["median_ms"] - statistics.median(t["pass_ms"])) < 1e-6, t["median_ms"]
    assert len(t["phases_ms"]) == int(reps), (name, t["phases_ms"])
    for ph, p in zip(t["phases_ms"], t["pass_ms"]):
        assert sorted(ph) == ["attention", "gemm", "norms_rope", "output"], (name, ph)
        assert all(isinstance(v, float) and v >= 0 for v in ph.values()), (name, ph)
        total = sum(ph.values())
        # 5 ms of slack below: on a busy machine the pass may lose its core in a gap
        # between the phases' clock readings (a progress callback, the argument checks).
        assert 0.8 * p - 5.0 <= total <= p, "%s: phases add up to %.3f ms of a %.3f ms pass" % (
            name, total, p)

check_passes(d, "passes")
assert ("threads_sweep" in d) == bool(sweep), d.keys()
for t, want in zip(d.get("threads_sweep", []), sweep):
    assert t["threads"] == want, (t["threads"], want)
    check_passes(t, "%d threads" % want)
assert len(d.get("threads_sweep", [])) == len(sweep), d.get("threads_sweep")
types = {"load_ms": float, "pass_ms": list, "median_ms": float, "canvas": int, "rows": int,
         "threads": int, "kernel": str, "gops": float, "peak_rss_mb": float, "model": str,
         "arch": str, "file_type": str, "prompt_tokens": int, "weight_params": int,
         "tail_params": int, "output_params": int, "cpu_ms": list, "phases_ms": list,
         "load_user_ms": float, "load_sys_ms": float}
for k, t in types.items():
    assert isinstance(d.get(k), t), "%s: %r is not %s" % (k, d.get(k), t.__name__)
assert d["canvas"] == int(canvas) and d["rows"] == int(rows), (d["canvas"], d["rows"])
assert d["threads"] == int(threads), d["threads"]
assert d["prompt_tokens"] == int(prompt), d["prompt_tokens"]
assert d["weight_params"] == int(weights), d["weight_params"]
assert d["tail_params"] == int(tail), d["tail_params"]
assert d["output_params"] == int(output), d["output_params"]
assert d["kernel"] in ("ref", "avx2", "avxvnni", "avx512"), d["kernel"]
assert d["file_type"] == "Q4_K_M", d["file_type"]
gops = 2 * (int(weights) * int(canvas) + (int(tail) + int(output)) * int(rows)) / \
    (d["median_ms"] * 1e6)
assert abs(d["gops"] - gops) <= 1e-6 * gops, (d["gops"], gops)
assert d["load_ms"] > 0 and d["peak_rss_mb"] > 1, (d["load_ms"], d["peak_rss_mb"])
# the load's CPU time: no part negative, and no more than its threads (the pool's and the
# caller) could spend in its wall time, with 10 ms for the clocks' granularity
user, sys_ = d["load_user_ms"], d["load_sys_ms"]
assert user >= 0 and sys_ >= 0, (user, sys_)
assert user + sys_ <= (int(threads) + 1) * d["load_ms"] + 10, (user, sys_, d["load_ms"])
PY
}

# LLaDA tiny: 2 layers of q, k, v, o (256 x 256) and gate, up, down (256 x 512); output 2048 x 256.
# The tail: the second layer's o and FFN.
LT=$((256 * 256 + 3 * 256 * 512))
LW=$((2 * (4 * 256 * 256 + 3 * 256 * 512) - LT))
# Dream tiny: q, o 256 x 256, k, v 128 x 256 (2 kv heads of 64), ffn 3 x 256 x 768.
DT=$((256 * 256 + 3 * 256 * 768))
DW=$((2 * (2 * 256 * 256 + 2 * 128 * 256 + 3 * 256 * 768) - DT))
OUT=$((2048 * 256))

run "llada --json" 0 "$DLLM" bench -m "$L" --canvas 160 --rows 32 --reps 3 --threads 2 --json
if check_json "$TMP/out" 160 32 3 2 32 $LW $LT $OUT; then ok "llada JSON schema and gops"; else
    not_ok "llada JSON schema and gops"; fi
run "dream --json, short flags" 0 "$DLLM" bench -m "$D" -L 200 -r 8 -n 2 -t 1 --json
if check_json "$TMP/out" 200 8 2 1 72 $DW $DT $OUT; then ok "dream JSON schema and gops"; else
    not_ok "dream JSON schema and gops"; fi
run "--threads-sweep 1,2" 0 "$DLLM" bench -m "$L" -L 160 -n 2 -t 2 --threads-sweep 1,2 --json
if check_json "$TMP/out" 160 32 2 2 32 $LW $LT $OUT 1,2; then ok "threads sweep JSON"; else
    not_ok "threads sweep JSON"; fi
run "canvas under 128: all masks, rows default to the canvas" 0 "$DLLM" bench -m "$L" -L 20 \
    -n 1 -t 1 --json
if check_json "$TMP/out" 20 20 1 1 0 $LW $LT $OUT; then ok "short canvas"; else
    not_ok "short canvas"; fi

run "DLLM_KERNELS=ref names the kernel" 0 env DLLM_KERNELS=ref "$DLLM" bench -m "$L" -L 130 -n 1 \
    -t 1 --json
expect_out "kernel ref" '"kernel": "ref"'

run "text report" 0 "$DLLM" bench --model "$L" --canvas 140 --reps 2 --threads 2
expect_out "model line" "^model .*llada-tiny-q4km.gguf: llada Q4_K_M, kernel [a-z0-9]+, 2 threads$"
expect_out "load line" '^load: [0-9]+ ms \(CPU [0-9]+ ms user, [0-9]+ ms system\)$'
expect_out "canvas line" \
    '^canvas 140 tokens \(12 prompt, 128 masks\), logits for the last 32 rows$'
expect_out "first pass" '^pass 1: [0-9.]+ ms \(CPU [0-9.]+ ms\)$'
expect_out "second pass" '^pass 2: [0-9.]+ ms \(CPU [0-9.]+ ms\)$'
expect_out "median line" '^median: [0-9.]+ ms, [0-9.]+ GOPS, peak RSS [0-9]+ MB$'
expect_out "phases line" \
    '^phases: median [0-9.]+ ms; phases gemm [0-9.]+, attention [0-9.]+, norms_rope [0-9.]+, out'
run "text report with a sweep" 0 "$DLLM" bench -m "$L" -L 140 -n 1 -t 1 --threads-sweep 2
expect_out "sweep line" '^threads 2: median [0-9.]+ ms; phases gemm [0-9.]+, attention'

# Usage errors: exit 2, nothing on stdout, the flag named.
bad() {
    local name=$1 pattern=$2
    shift 2
    run "$name" 2 "$DLLM" bench "$@"
    expect_err "$name: message" "$pattern"
    if [ -s "$TMP/out" ]; then not_ok "$name: stdout not empty"; else ok "$name: stdout empty"; fi
}
bad "no model" "--model is missing" --canvas 160
bad "canvas 0" "--canvas takes a whole number from 1" -m "$L" --canvas 0
bad "canvas not a number" "--canvas takes a whole number" -m "$L" --canvas 1x
bad "canvas beyond the context" "longer than the model's context: use 1 to 4096" -m "$L" -L 5000
bad "rows 0" "--rows takes a whole number from 1" -m "$L" --rows 0
bad "rows beyond the canvas" "--rows 50 is more than the canvas: use 1 to 40" -m "$L" -L 40 -r 50
bad "reps 0" "--reps takes a whole number from 1 to 1000" -m "$L" --reps 0
bad "threads 0" "--threads takes a whole number from 1 to 1024" -m "$L" --threads 0
bad "threads-sweep 0" \
    "--threads-sweep takes comma-separated whole numbers from 1 to 1024, not '1,0'" -m "$L" \
    --threads-sweep 1,0
bad "threads-sweep not a list" "--threads-sweep takes comma-separated whole numbers" -m "$L" \
    --threads-sweep 1:2
bad "unknown flag" "unknown option --fast" -m "$L" --fast
bad "missing value" "option --reps needs a value" -m "$L" --reps
bad "extra argument" "unexpected argument 'extra'" -m "$L" extra

# Other errors: exit 1 with one 'dllm: error:' line.
run "missing file" 1 "$DLLM" bench -m "$TMP/none.gguf"
expect_err "missing file: message" '^dllm: error: '
run "unknown DLLM_KERNELS" 1 env DLLM_KERNELS=bogus "$DLLM" bench -m "$L" -L 10 -n 1
expect_err "unknown DLLM_KERNELS: message" '^dllm: error: .*bogus'

finish
