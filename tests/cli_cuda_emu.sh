#!/bin/sh
# The CUDA kernels on the host: tests/kernel_check_emu is tests/gpu/kernel_check built over
# the kernels compiled with tests/cuda-emu's stand-in runtime (blocks run one after another,
# their threads as fibers), run with --small shapes. Every launcher must meet the same
# tolerances against the CPU as on a GPU; what this proves is the kernels' indexing,
# synchronisation and control flow (the maths is the host's). Needs no GPU and no CUDA.
. "${DLLM_TESTS_SRC:-$(dirname "$0")}/lib.sh"
BUILD=$(cd "$(dirname "$DLLM")/.." && pwd)
run "kernel_check --small over the emulated kernels" 0 "$BUILD/tests/kernel_check_emu" --small "$TMP/k.json"
expect_out "every check passed" '^[0-9]+ checks, all passed$'
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["pass"] and len(d["checks"]) >= 80 and all(c["pass"] for c in d["checks"]) else 1)' "$TMP/k.json"; then
    ok "results JSON: every check passed"
else not_ok "results JSON: $(head -c 300 "$TMP/k.json")"; fi
if python3 -c 'import json,sys; t=[x["what"].split()[0] for x in json.load(open(sys.argv[1]))["timings"]]; sys.exit(0 if t.count("dequant_f16") == 39 and t.count("attention") == 9 else 1)' "$TMP/k.json"; then
    ok "timings of every dequantization and attention checked"
else not_ok "timings: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("timings"))' "$TMP/k.json" | head -c 300)"; fi
kinds=$(python3 -c 'import json,sys; print(" ".join(sorted({c["kernel"].split()[0] for c in json.load(open(sys.argv[1]))["checks"]})))' "$TMP/k.json")
if [ "$kinds" = "add add_bias add_rms_norm argument attention dequant_f16 f32_to_f16 f32_to_f16_sat get_rows rms_norm rope row_stats swiglu" ]; then
    ok "every launcher checked"
else not_ok "launchers checked: $kinds"; fi
finish
