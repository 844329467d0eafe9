#!/bin/sh
# dllm synth: tiny models of both architectures that dllm inspects, tokenizes and runs, the
# same bytes for the same seed, progress on stderr, exit 2 for every bad flag (nothing
# written) and exit 1 with one line for a missing folder and a full disk.
. "${DLLM_TESTS_SRC:-$(dirname "$0")}/lib.sh"
need_fixtures

run "llada tiny" 0 "$DLLM" synth --arch llada --preset tiny --out "$TMP/l.gguf"
expect_out "summary" '^llada Q4_K_M: 2 layers, d_model 256, 4/4 heads, ffn 512, vocab 2048, seed 0: 1\.6 MB written to '
expect_err "progress lines without a terminal" "^writing $TMP/l.gguf: 100% \(1\.5 of 1\.5 MB\)$"
if [ -s "$TMP/l.gguf" ] && [ ! -e "$TMP/l.gguf.tmp" ]; then ok "file written, no temporary left"
else not_ok "file written, no temporary left"; fi

run "inspect it" 0 "$DLLM" inspect "$TMP/l.gguf"
expect_out "header" '^GGUF version 3: 27 metadata keys, 21 tensors, alignment 32'
expect_out "type mix" '^  Q6_K +3$'
run "run it" 0 "$DLLM" run -m "$TMP/l.gguf" -p "Hello" --max-tokens 16 --steps 8
run "tokenize a chat prompt" 0 "$DLLM" tokenize -m "$TMP/l.gguf" -p "the winter"
expect_out "BOS and headers as single ids" '^1664 1930 117 115 261 1931 '

run "dream tiny, Q8_0, quiet, seed 9" 0 "$DLLM" synth -a dream -p tiny -t q8_0 --seed 9 -q -o "$TMP/d.gguf"
if [ ! -s "$TMP/err" ]; then ok "--quiet prints nothing on stderr"; else not_ok "--quiet printed"; fi
expect_out "summary" '^dream Q8_0: 2 layers, d_model 256, 4/2 heads, ffn 768, vocab 2048, seed 9: '
run "run dream" 0 "$DLLM" run -m "$TMP/d.gguf" -p "Hi" --max-tokens 16 --steps 8
"$DLLM" synth -a dream -p tiny -t Q8_0 --seed 9 -q -o "$TMP/d2.gguf" >/dev/null
"$DLLM" synth -a dream -p tiny -t Q8_0 --seed 10 -q -o "$TMP/d3.gguf" >/dev/null
if cmp -s "$TMP/d.gguf" "$TMP/d2.gguf"; then ok "same seed, same bytes"; else not_ok "same seed, other bytes"; fi
if ! cmp -s "$TMP/d.gguf" "$TMP/d3.gguf"; then ok "another seed, other bytes"; else not_ok "seed ignored"; fi
run "the largest seed" 0 "$DLLM" synth -a dream -p tiny -t q8_0 --seed 18446744073709551615 -q -o "$TMP/d4.gguf"
expect_out "says it" ', seed 18446744073709551615: '

run "layer and vocabulary overrides" 0 "$DLLM" synth -a llada -p tiny --layers 3 --vocab 1000 -q -o "$TMP/o.gguf"
expect_out "overrides in the summary" '^llada Q4_K_M: 3 layers, d_model 256, 4/4 heads, ffn 512, vocab 1000, '
run "inspect overrides" 0 "$DLLM" inspect "$TMP/o.gguf"
expect_out "mask id keeps its distance from the top" 'tokenizer.ggml.mask_token_id  uint32  872$'

run "a tiny MoE model" 0 "$DLLM" synth -a rnd1 -p tiny -q -o "$TMP/moe.gguf"
expect_out "MoE summary" '^rnd1 Q4_K_M: 2 layers, d_model 256, 4/2 heads, ffn 768, vocab 2048, '
run "inspect the MoE model" 0 "$DLLM" inspect "$TMP/moe.gguf"
expect_out "its experts" '^experts 8, used 2, expert ffn 128, router F32$'
run "it generates" 0 "$DLLM" run -m "$TMP/moe.gguf" -p hi --max-tokens 8 --steps 8 -t 1

# Usage errors: exit 2, nothing written.
run "no --arch" 2 "$DLLM" synth --preset tiny --out "$TMP/x.gguf"
expect_err "names --arch" '--arch is missing'
run "no --out" 2 "$DLLM" synth --arch llada
expect_err "names --out" '--out is missing'
run "unknown arch" 2 "$DLLM" synth --arch gpt2 --out "$TMP/x.gguf"
expect_err "lists the architectures" "unknown architecture 'gpt2' \(synthetic models: llada, dream, llada-moe, rnd1\)"
run "preset of the other arch" 2 "$DLLM" synth --arch llada --preset 7b --out "$TMP/x.gguf"
expect_err "lists the presets" "unknown llada preset '7b' \(presets: 8b, tiny\)"
# The low-bit mixes: Q3_K and Q2_K matrices beside other K-quants, and the model runs.
for t in Q3_K_M Q2_K; do
    run "synth $t" 0 "$DLLM" synth -a dream -p tiny -t $t -o "$TMP/$t.gguf" -q
    run "inspect $t" 0 "$DLLM" inspect --json "$TMP/$t.gguf"
    if python3 - "$TMP/out" "$t" <<'PY'
import json, sys
d, mix = json.load(open(sys.argv[1])), sys.argv[2]
types = {t["name"]: t["type"] for t in d["tensors"]}
low = "Q3_K" if mix == "Q3_K_M" else "Q2_K"
assert types["blk.0.ffn_gate.weight"] == low and types["blk.1.attn_q.weight"] == low, types
assert types["output.weight"] == "Q6_K", types
assert types["blk.0.attn_v.weight"] == ("Q5_K" if mix == "Q3_K_M" else "Q3_K"), types
assert types["blk.1.ffn_down.weight"] == ("Q4_K" if mix == "Q3_K_M" else "Q3_K"), types
assert d["metadata"]["general.file_type"]["value"] == (12 if mix == "Q3_K_M" else 10)
PY
    then ok "$t: the mix's types"; else not_ok "$t: the mix's types"; fi
    run "run $t" 0 "$DLLM" run -m "$TMP/$t.gguf" -p hi --max-tokens 16 --steps 4
done
run "unknown type" 2 "$DLLM" synth -a llada -p tiny -t IQ4_XS -o "$TMP/x.gguf"
expect_err "lists the types" "--type takes Q4_K_M, Q5_K_M, Q6_K, Q8_0, Q3_K_M, Q2_K or F16, not 'IQ4_XS'"
run "vocabulary too small" 2 "$DLLM" synth -a dream -p tiny --vocab 600 -o "$TMP/x.gguf"
expect_err "says how small it may be" 'dream needs at least 685'
run "zero layers" 2 "$DLLM" synth -a llada -p tiny --layers 0 -o "$TMP/x.gguf"
run "bad seed" 2 "$DLLM" synth -a llada -p tiny --seed -1 -o "$TMP/x.gguf"
run "stray argument" 2 "$DLLM" synth -a llada -p tiny -o "$TMP/x.gguf" extra
run "unknown option" 2 "$DLLM" synth --bogus
if [ ! -e "$TMP/x.gguf" ] && [ ! -e "$TMP/x.gguf.tmp" ]; then ok "usage errors write nothing"
else not_ok "usage errors wrote a file"; fi
# An empty --out names no file: refused before anything is written (it once wrote ./.tmp,
# replacing a file of that name, then failed to rename it).
mkdir "$TMP/cwd" && echo precious >"$TMP/cwd/.tmp"
(cd "$TMP/cwd" && "$DLLM" synth -a llada -p tiny -q -o "") >"$TMP/out" 2>"$TMP/err"
got=$?
if [ $got -eq 2 ]; then ok "empty --out (exit 2)"; else not_ok "empty --out: exit $got, expected 2"; fi
expect_err "names --out" '--out takes a file name'
if [ "$(cat "$TMP/cwd/.tmp")" = precious ]; then ok "empty --out touched nothing"
else not_ok "empty --out overwrote ./.tmp"; fi
run "help" 0 "$DLLM" synth --help
expect_out "synopsis" '^usage: dllm synth --arch llada\|dream\|llada-moe\|rnd1 \[--preset NAME\] --out FILE'

# Other errors: exit 1 with one line.
run "missing folder" 1 "$DLLM" synth -a llada -p tiny -q -o "$TMP/no/such/dir/x.gguf"
expect_err "names the file" "^dllm: error: cannot create $TMP/no/such/dir/x.gguf.tmp: No such file or directory$"
expect_err_lines "one line" 1
run "full disk" 1 "$DLLM" synth -a llada -p tiny -q -o /dev/full
expect_err "disk full" '^dllm: error: cannot write /dev/full: No space left on device'
expect_err_lines "one line" 1
# Stopped by a signal while writing: nothing is left behind. Ctrl+C (SIGINT) exits 130 with
# one line; SIGTERM and SIGHUP remove the temporary too, then end the program by the signal.
# interrupt SIG: starts writing the 8B shape, sends SIG once its temporary has data; sets got.
interrupt() {
    "$DLLM" synth -a llada -p 8b -q -o "$TMP/s.gguf" >"$TMP/out" 2>"$TMP/err" &
    pid=$!
    i=0
    while [ ! -s "$TMP/s.gguf.tmp" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
    kill -"$1" $pid
    wait $pid
    got=$?
}
for sig in TERM HUP INT; do
    interrupt $sig
    case $sig in INT) want=130 ;; TERM) want=143 ;; HUP) want=129 ;; esac
    if [ $got -eq $want ]; then ok "SIG$sig while writing (exit $got)"
    else not_ok "SIG$sig while writing: exit $got, expected $want"; fi
    if [ ! -e "$TMP/s.gguf" ] && [ ! -e "$TMP/s.gguf.tmp" ]; then ok "SIG$sig leaves nothing"
    else not_ok "SIG$sig left a file"; rm -f "$TMP/s.gguf" "$TMP/s.gguf.tmp"; fi
done
expect_err "Ctrl+C names the file not written" "^dllm: cancelled: $TMP/s.gguf was not written$"
expect_err_lines "one line" 1
finish
