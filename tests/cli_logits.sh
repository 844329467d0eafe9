#!/bin/sh
# dllm logits: the output file's layout (rows in the order asked, raw rows without Dream's
# shift) against the fixtures' float64 logits, and exit codes on bad flags and bad input.
. "${DLLM_TESTS_SRC:-$(dirname "$0")}/lib.sh"
need_fixtures

# ids CASES_JSON INDEX: the comma-separated token ids of a fixture case.
ids() {
    python3 -c 'import json,sys; print(",".join(map(str, json.load(open(sys.argv[1]))[int(sys.argv[2])]["ids"])))' "$1" "$2"
}

# compare OUT REF VOCAB ROWS [NEIGHBOURS]: each row i of OUT (float32) has cosine > 0.999 with
# row ROWS[i] of REF; with NEIGHBOURS, a clearly lower one with rows ROWS[i]-1 and ROWS[i]+1
# (positions whose tokens differ from their neighbours', unlike runs of masks).
compare() {
    python3 - "$@" <<'PY'
import math, struct, sys
out, ref, vocab, rows = sys.argv[1], sys.argv[2], int(sys.argv[3]), list(map(int, sys.argv[4].split(",")))
neighbours = len(sys.argv) > 5
a = open(out, "rb").read()
b = open(ref, "rb").read()
assert len(a) == 4 * vocab * len(rows), "size %d, expected %d" % (len(a), 4 * vocab * len(rows))
def row(buf, i):
    return struct.unpack_from("<%df" % vocab, buf, 4 * vocab * i)
def cos(x, y):
    return sum(p * q for p, q in zip(x, y)) / math.sqrt(sum(p * p for p in x) * sum(q * q for q in y))
n_ref = len(b) // (4 * vocab)
for i, r in enumerate(rows):
    x = row(a, i)
    c = cos(x, row(b, r))
    assert c > 0.999, "row %d (position %d): cosine %f" % (i, r, c)
    for other in (r - 1, r + 1) if neighbours else ():
        if 0 <= other < n_ref:
            assert cos(x, row(b, other)) < c - 0.01, "row %d matches position %d too" % (i, other)
PY
}

L=$FIX/models/llada-tiny-q4km.gguf
D=$FIX/models/dream-tiny-q4km.gguf
LIDS=$(ids "$FIX/logits/llada-tiny-q4km.cases.json" 0)
DIDS=$(ids "$FIX/logits/dream-tiny-q4km.cases.json" 0)

run "llada, all rows" 0 "$DLLM" logits --model "$L" --tokens "$LIDS" --rows all --out "$TMP/all.f32"
expect_out "summary line" '^llada: 40 tokens, 40 rows of 2048 float32 logits written to '
if compare "$TMP/all.f32" "$FIX/logits/llada-tiny-q4km.case0.f64ref.f32" 2048 \
    "$(seq -s, 0 39)"; then ok "all rows match the float64 logits"; else not_ok "all rows"; fi

run "llada, rows in any order" 0 "$DLLM" logits -m "$L" --tokens "$LIDS" -r 39,0,17,17 -o "$TMP/some.f32"
if compare "$TMP/some.f32" "$FIX/logits/llada-tiny-q4km.case0.f64ref.f32" 2048 39,0,17,17; then
    ok "requested rows in order"; else not_ok "requested rows in order"; fi
if python3 -c '
import sys
a = open(sys.argv[1], "rb").read(); b = open(sys.argv[2], "rb").read(); r = 8192
assert a[0:r] == b[39 * r:40 * r] and a[r:2 * r] == b[0:r] and a[2 * r:3 * r] == b[17 * r:18 * r]
' "$TMP/some.f32" "$TMP/all.f32"; then ok "rows equal the rows of the full pass"; else
    not_ok "rows equal the rows of the full pass"; fi

run "dream, raw rows" 0 "$DLLM" logits --model "$D" --tokens "$DIDS" --rows 5,12,33 \
    --out "$TMP/dream.f32" -t 2
if compare "$TMP/dream.f32" "$FIX/logits/dream-tiny-q4km.case0.f64ref.f32" 2048 5,12,33 \
    neighbours; then
    ok "dream rows are not shifted"; else not_ok "dream rows are not shifted"; fi

# Usage errors: exit 2, nothing written.
rm -f "$TMP/x.f32"
run "no --model" 2 "$DLLM" logits --tokens 1,2 --rows all --out "$TMP/x.f32"
expect_err "names the missing flag" '--model is missing'
run "no --rows" 2 "$DLLM" logits -m "$L" --tokens 1,2 --out "$TMP/x.f32"
expect_err "names --rows" '--rows is missing'
run "bad id list" 2 "$DLLM" logits -m "$L" --tokens 1,x,3 -r all -o "$TMP/x.f32"
expect_err "bad --tokens" "--tokens takes comma-separated whole numbers from 0 to 2147483647, not '1,x,3'"
run "empty id" 2 "$DLLM" logits -m "$L" --tokens 1,,3 -r all -o "$TMP/x.f32"
run "negative row" 2 "$DLLM" logits -m "$L" --tokens 1,2,3 -r -1 -o "$TMP/x.f32"
run "bad --threads" 2 "$DLLM" logits -m "$L" --tokens 1,2 -r all -o "$TMP/x.f32" --threads 0
expect_err "threads range" '--threads takes a whole number from 1 to 1024'
run "unknown option" 2 "$DLLM" logits --bogus
run "stray argument" 2 "$DLLM" logits -m "$L" --tokens 1 -r 0 -o "$TMP/x.f32" extra
# A row past the tokens is a usage error, found before the model loads (as bench's --rows).
run "row outside the pass" 2 "$DLLM" logits -m "$TMP/none.gguf" --tokens 1,2 -r 0,2 -o "$TMP/x.f32"
expect_err "row message" "^dllm logits: --rows 2 is outside the 2 positions of --tokens \(0 to 1\)$"
if [ ! -e "$TMP/x.f32" ]; then ok "usage errors write nothing"; else not_ok "usage errors wrote $TMP/x.f32"; fi
run "help" 0 "$DLLM" logits --help
expect_out "synopsis" '^usage: dllm logits --model MODEL --tokens IDS --rows POSITIONS\|all --out FILE'

# Other errors: exit 1 with one line.
run "id outside the vocabulary" 1 "$DLLM" logits -m "$L" --tokens 1,5000 -r all -o "$TMP/x.f32"
expect_err "vocabulary message" '^dllm: error: token id 5000 at position 1 is outside the vocabulary of 2048 tokens$'
expect_err_lines "one line" 1
run "more rows than tokens" 1 "$DLLM" logits -m "$L" --tokens 1,2 -r 0,1,1 -o "$TMP/x.f32"
expect_err "rows message" '^dllm: error: 3 logits rows: this forward context takes 0 to 2$'
run "missing model" 1 "$DLLM" logits -m "$TMP/none.gguf" --tokens 1 -r 0 -o "$TMP/x.f32"
expect_err "cannot open" "^dllm: error: $TMP/none.gguf: cannot open: No such file"
run "vocabulary-only file" 1 "$DLLM" logits -m "$FIX/tokenizer/dream-vocab.gguf" --tokens 1 -r 0 -o "$TMP/x.f32"
expect_err "no layers" 'dream-vocab.gguf: dream.block_count is 2 but the file has tensors for at most 0 layers; the file is damaged, cut short or not a GGUF model: download it again, or convert the model with llama.cpp.s convert_hf_to_gguf.py$'
run "unwritable output" 1 "$DLLM" logits -m "$L" --tokens 1 -r 0 -o "$TMP/no/dir/x.f32"
expect_err "cannot create" "^dllm: error: cannot create $TMP/no/dir/x.f32: No such file or directory$"

finish
