#!/bin/sh
# dllm inspect: text and JSON output on fixtures, exit codes on bad input and bad flags.
. "${DLLM_TESTS_SRC:-$(dirname "$0")}/lib.sh"
need_fixtures
M=$FIX/models/llada-tiny-q4km.gguf

run "inspect a Q4_K_M model" 0 "$DLLM" inspect "$M"
expect_out "version line" '^GGUF version 3: [0-9]+ metadata keys, 21 tensors'
expect_out "architecture key" '^  general.architecture  string  "llada"$'
expect_out "array summary" '^  tokenizer.ggml.tokens  array\[string\] \(2048\)  \[.*, \.\.\. 20[0-9]+ more\]$'
expect_out "type counts" '^  Q6_K +[0-9]+$'
expect_out "tensor line" '^  token_embd.weight +Q4_K +\[256, 2048\] +offset [0-9]+ +size 294912$'

run "inspect --json" 0 "$DLLM" inspect --json "$M"
if python3 - "$TMP/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["version"] == 3
assert d["metadata"]["general.architecture"] == {"type": "string", "value": "llada"}
tok = d["metadata"]["tokenizer.ggml.tokens"]
assert tok["type"] == "array" and tok["element_type"] == "string" and len(tok["value"]) == 2048
assert sum(d["tensor_type_counts"].values()) == len(d["tensors"]) == 21
t = [t for t in d["tensors"] if t["name"] == "token_embd.weight"][0]
assert t["type"] == "Q4_K" and t["shape"] == [256, 2048] and t["size"] == 2048 * 144
assert all(t["offset"] % 32 == 0 for t in d["tensors"])
PY
then ok "JSON document fields"; else not_ok "JSON document fields"; fi

MOE=$FIX/models/llada-moe-tiny-q4km.gguf
run "inspect a MoE model" 0 "$DLLM" inspect "$MOE"
expect_out "experts line" '^experts 8, used 2, expert ffn 128, router F32$'
expect_out "3-D expert tensor" '^  blk.0.ffn_gate_exps.weight +Q4_K +\[256, 128, 8\] '
run "inspect --json a MoE model" 0 "$DLLM" inspect --json "$FIX/models/rnd1-tiny-q80.gguf"
if python3 - "$TMP/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["moe"] == {"n_expert": 8, "n_expert_used": 2, "expert_ff": 128, "router_type": "F32"}
PY
then ok "JSON moe object"; else not_ok "JSON moe object"; fi
run "a dense model has no experts line" 0 "$DLLM" inspect "$M"
if grep -q '^experts ' "$TMP/out"; then not_ok "no experts line"; else ok "no experts line"; fi

run "vocab-only file" 0 "$DLLM" inspect "$FIX/tokenizer/dream-vocab.gguf"
expect_out "no tensors" '^GGUF version 3: [0-9]+ metadata keys, 0 tensors'

head -c 1000 "$M" >"$TMP/trunc.gguf"
run "truncated file" 1 "$DLLM" inspect "$TMP/trunc.gguf"
expect_err "one-line error naming the file" "^dllm: error: $TMP/trunc.gguf: truncated file"
expect_err "and the fix" "cut short or not a GGUF model: download it again, or convert the model with llama.cpp's convert_hf_to_gguf.py$"
expect_err_lines "error is one line" 1
run "missing file" 1 "$DLLM" inspect "$TMP/none.gguf"
expect_err "missing file message" "^dllm: error: .*none.gguf: cannot open: No such file"
printf 'GGUX' >"$TMP/magic.gguf"; head -c 100 "$M" | tail -c 96 >>"$TMP/magic.gguf"
run "bad magic" 1 "$DLLM" inspect "$TMP/magic.gguf"
expect_err "bad magic message" "not a GGUF file"

run "no path" 2 "$DLLM" inspect
run "two paths" 2 "$DLLM" inspect "$M" "$M"
run "unknown flag" 2 "$DLLM" inspect --bogus "$M"
run "inspect -n 0" 0 "$DLLM" inspect -n 0 "$M"
expect_out "-n 0: no items, no leading comma" '^  tokenizer.ggml.tokens  array\[string\] \(2048\)  \[\.\.\. 2048 more\]$'
run "bad -n" 2 "$DLLM" inspect -n x "$M"
run "inspect --help" 0 "$DLLM" inspect --help
expect_out "usage text" '^usage: dllm inspect'
run "help inspect" 0 "$DLLM" help inspect
run "dllm --help" 0 "$DLLM" --help
expect_out "command list" '^  inspect '
# output that cannot be written (a full disk) is an error, whatever the command and however
# it ends, help and version included
T="$(dirname "$DLLM")/dllm-tui"
for c in "$DLLM --help" "$DLLM --version" "$DLLM help run" "$DLLM run --help" "$DLLM inspect $M" \
         "$DLLM inspect --json $M" "$DLLM tokenize -m $M -p hello" "$T --help" "$T --version"; do
    run_full "stdout full: ${c#"$(dirname "$DLLM")/"}" 1 $c
    expect_err "says so" '^dllm: error: cannot write the (output|JSON document): No space left on device$'
    expect_err_lines "once" 1
done
run "dllm --version" 0 "$DLLM" --version
expect_out "version and build" '^dllm [0-9]+\.[0-9]+\.[0-9]+ \(build: .*cuda=(yes|no)'
run "dllm-tui --version" 0 "$(dirname "$DLLM")/dllm-tui" --version
expect_out "the same version and build" '^dllm-tui [0-9]+\.[0-9]+\.[0-9]+ \(build: .*cuda=(yes|no)'
run "help help" 0 "$DLLM" help help
expect_out "the command list" '^  inspect '
run "help of an unknown command" 2 "$DLLM" help frobnicate
expect_err "one line naming the list" "^dllm: unknown command 'frobnicate' \(dllm help lists them\)$"
expect_err_lines "one line" 1
run "no command" 2 "$DLLM"
run "unknown command" 2 "$DLLM" frobnicate
finish
