#!/bin/sh
# Split models (NAME-00001-of-0000N.gguf, as llama.cpp's llama-gguf-split writes them; here
# tests/gguf_split.py cuts the fixture models the same way): loaded from part 1 with the same
# logits and answers as the whole file, shown whole by dllm inspect, and every wrong set of
# parts an error naming the part and the fix.
. "${DLLM_TESTS_SRC:-$(dirname "$0")}/lib.sh"
need_fixtures
M=$FIX/models
SPLIT="python3 ${DLLM_TESTS_SRC:-$(dirname "$0")}/gguf_split.py"
T="--tokens 1,2,3,4,5,6,7,8 --rows all"
G="--max-tokens 16 --steps 8"

# logits_same NAME WHOLE PART1: dllm logits of both, bit for bit.
logits_same() {
    "$DLLM" logits -m "$2" $T --out "$TMP/whole.f32" 2>/dev/null
    run "$1: logits" 0 "$DLLM" logits -m "$3" $T --out "$TMP/split.f32"
    if cmp -s "$TMP/whole.f32" "$TMP/split.f32"; then ok "$1: the whole file's logits, bit for bit"
    else not_ok "$1: logits differ from the whole file's"; fi
}

mkdir "$TMP/a" "$TMP/b" "$TMP/moe" "$TMP/one"
$SPLIT --split-max-tensors 7 "$M/llada-tiny-q4km.gguf" "$TMP/a/llada"
$SPLIT --split-max-tensors 10 "$M/llada-tiny-q4km.gguf" "$TMP/b/llada"
$SPLIT --split-max-tensors 9 --no-tensor-first-split "$M/llada-moe-tiny-q4km.gguf" "$TMP/moe/moe"
$SPLIT --split-max-tensors 1000 "$M/dream-tiny-q4km.gguf" "$TMP/one/dream"
A1=$TMP/a/llada-00001-of-00003.gguf
if [ -f "$A1" ] && [ -f "$TMP/a/llada-00003-of-00003.gguf" ] && [ ! -e "$TMP/a/llada-00004-of-00004.gguf" ]
then ok "21 tensors, 7 a part: 3 parts"; else not_ok "the split made $(ls "$TMP/a")"; fi

logits_same "3 parts" "$M/llada-tiny-q4km.gguf" "$A1"
logits_same "MoE, part 1 without tensors" "$M/llada-moe-tiny-q4km.gguf" "$TMP/moe/moe-00001-of-00004.gguf"
logits_same "one part" "$M/dream-tiny-q4km.gguf" "$TMP/one/dream-00001-of-00001.gguf"

"$DLLM" run -m "$M/llada-tiny-q4km.gguf" -p "Hello" $G >"$TMP/answer" 2>/dev/null
run "run on part 1" 0 "$DLLM" run -m "$A1" -p "Hello" $G
if cmp -s "$TMP/out" "$TMP/answer"; then ok "the whole file's answer"; else not_ok "a different answer"; fi

"$DLLM" inspect --json "$M/llada-tiny-q4km.gguf" >"$TMP/whole.json"
run "inspect part 1" 0 "$DLLM" inspect "$A1"
expect_out "says it is split" '^split into 3 parts, which hold the tensors \(each offset is in its part\)$'
run "inspect --json part 1" 0 "$DLLM" inspect --json "$A1"
if python3 - "$TMP/out" "$TMP/whole.json" <<'PY'
import json, sys
split, whole = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert split["parts"] == 3 and whole["parts"] == 1
key = lambda t: (t["name"], t["type"], t["shape"], t["size"])
assert sorted(map(key, split["tensors"])) == sorted(map(key, whole["tensors"]))
assert split["metadata"]["split.count"]["value"] == 3
assert [t["part"] for t in split["tensors"]] == [1] * 7 + [2] * 7 + [3] * 7
assert all(t["part"] == 1 for t in whole["tensors"])
PY
then ok "every part's tensors, as the whole file has them, each with its part"
else not_ok "inspect's tensors"; fi
run "inspect part 1, text" 0 "$DLLM" inspect "$A1"
expect_out "a tensor's part" '^  blk\.1\.ffn_up\.weight +Q4_K .* part 3$'


# The wrong part, a missing part, parts of two splits, a renamed part 1.
run "part 2 given" 1 "$DLLM" logits -m "$TMP/a/llada-00002-of-00003.gguf" $T --out "$TMP/x.f32"
expect_err "names part 1" "part 2 of 3 of a split model: open part 1, $TMP/a/llada-00001-of-00003.gguf\$"
expect_err_lines "in one line" 1
mv "$TMP/a/llada-00003-of-00003.gguf" "$TMP/part3"
run "part 3 missing" 1 "$DLLM" run -m "$A1" -p hi $G
expect_err "names the part and the fix" "part 3 of 3 of a split model, llada-00003-of-00003.gguf: cannot open: No such file or directory; all 3 parts must lie in the folder of part 1\$"
expect_err_lines "in one line" 1
cp "$TMP/b/llada-00003-of-00003.gguf" "$TMP/a/"
run "part 3 of another split" 1 "$DLLM" inspect "$A1"
expect_err "counts the tensors" "the 3 parts of this split model hold 15 tensors, but split.tensors.count says 21: a part is from another split"
mv "$TMP/part3" "$TMP/a/llada-00003-of-00003.gguf"
cp "$TMP/b/llada-00002-of-00003.gguf" "$TMP/a/"
run "part 2 of another split" 1 "$DLLM" inspect "$A1"
expect_err "names the part" "part [23] of 3 of a split model, llada-0000[23]-of-00003.gguf: "
cp "$TMP/b/llada-00001-of-00003.gguf" "$TMP/b/renamed.gguf"
run "part 1 renamed" 1 "$DLLM" inspect "$TMP/b/renamed.gguf"
expect_err "says how parts are found" "part 1 of 3 of a split model, but its name does not end in -00001-of-00003.gguf, by which the other parts are found"
finish
