#!/bin/sh
# -m with hub models in dllm tokenize, logits and run, against the fake hub (tests/fake_hub.py)
# serving the fixture models: the download and its log lines, the cache on the next run,
# --offline, the default model when dllm run has no -m, split models and errors.
. "${DLLM_TESTS_SRC:-$(dirname "$0")}/lib.sh"
need_fixtures
M=$FIX/models
DEFAULT_REPO=mradermacher/LLaDA-8B-Instruct-GGUF
# A split model on the hub: the fixture cut in 3 parts, as llama.cpp's gguf-split cuts one.
python3 "${DLLM_TESTS_SRC:-$(dirname "$0")}/gguf_split.py" --split-max-tensors 10 \
    "$M/dream-tiny-q4km.gguf" "$TMP/dream-tiny.Q4_K_M"
P=dream-tiny.Q4_K_M-0000
start_fake_hub --serve "test/dream-split-GGUF:${P}1-of-00003.gguf=$TMP/${P}1-of-00003.gguf" \
    --serve "test/dream-split-GGUF:${P}2-of-00003.gguf=$TMP/${P}2-of-00003.gguf" \
    --serve "test/dream-split-GGUF:${P}3-of-00003.gguf=$TMP/${P}3-of-00003.gguf" \
    --serve "test/llada-GGUF:llada-tiny.Q4_K_M.gguf=$M/llada-tiny-q4km.gguf" \
    --serve "test/llada-GGUF:llada-tiny.Q8_0.gguf=$M/llada-tiny-q80.gguf" \
    --serve "test/dream-GGUF:dream-tiny.Q4_K_M.gguf=$M/dream-tiny-q4km.gguf" \
    --serve "$DEFAULT_REPO:LLaDA-8B-Instruct.Q4_K_M.gguf=$M/llada-tiny-q4km.gguf"
G="--max-tokens 8 --steps 8"

# same NAME FILE: the last run's stdout equals FILE.
same() { if cmp -s "$TMP/out" "$2"; then ok "$1"; else not_ok "$1: stdout differs from $2"; fi; }

"$DLLM" tokenize -m "$M/llada-tiny-q4km.gguf" -p "Hello" >"$TMP/ids" 2>"$TMP/err"
run "tokenize -m org/repo" 0 "$DLLM" tokenize -m test/llada-GGUF -p "Hello"
same "the same ids as the local file" "$TMP/ids"
expect_err "download said" '^dllm: llada-tiny.Q4_K_M.gguf: downloading 1.6 MB$'
expect_err "verified said" '^dllm: llada-tiny.Q4_K_M.gguf: verified, 1.6 MB$'
if [ -L "$CACHE/models--test--llada-GGUF/snapshots/"*/llada-tiny.Q4_K_M.gguf ]; then
    ok "linked into the cache"; else not_ok "no snapshot link"; fi
run "tokenize again" 0 "$DLLM" tokenize -m test/llada-GGUF:Q4_K_M -p "Hello"
same "same ids from the cache" "$TMP/ids"
expect_err_lines "a cached model is used silently" 0
run "tokenize --offline" 0 "$DLLM" tokenize --offline -m test/llada-GGUF -p "Hello"
same "same ids offline" "$TMP/ids"
HF_HUB_OFFLINE=1 HF_ENDPOINT=http://127.0.0.1:9 run "HF_HUB_OFFLINE=1" 0 "$DLLM" tokenize \
    -m test/llada-GGUF -p "Hello"
same "same ids with HF_HUB_OFFLINE" "$TMP/ids"
run "offline, not cached" 1 "$DLLM" tokenize --offline -m test/dream-GGUF -p "Hello"
expect_err "names the pull command" "^dllm: error: .*run 'dllm pull test/dream-GGUF' while online\$"
expect_err_lines "one error line" 1
if [ -d "$CACHE/models--test--dream-GGUF/blobs" ] && ls "$CACHE/models--test--dream-GGUF/blobs/"* >/dev/null 2>&1; then
    not_ok "offline downloaded something"; else ok "offline downloads nothing"; fi

"$DLLM" logits -m "$M/llada-tiny-q80.gguf" --tokens 1,2,3,4 --rows all --out "$TMP/want.f32" >/dev/null 2>&1
run "logits -m org/repo:FILE.gguf" 0 "$DLLM" logits -m test/llada-GGUF:llada-tiny.Q8_0.gguf \
    --tokens 1,2,3,4 --rows all --out "$TMP/got.f32"
if cmp -s "$TMP/want.f32" "$TMP/got.f32"; then ok "the same logits as the local file"; else not_ok "logits differ"; fi
run "logits --offline" 0 "$DLLM" logits --offline -m test/llada-GGUF:Q8_0 --tokens 1,2,3,4 \
    --rows all --out "$TMP/got.f32"

"$DLLM" run -m "$M/dream-tiny-q4km.gguf" -p "Hi" $G >"$TMP/dream" 2>"$TMP/err"
run "run -m org/repo" 0 "$DLLM" run -m test/dream-GGUF -p "Hi" $G
same "the same answer as the local file" "$TMP/dream"
"$DLLM" run -m "$M/llada-tiny-q4km.gguf" -p "Hello" $G >"$TMP/llada" 2>"$TMP/err"
run "run --offline without -m, default not cached" 1 "$DLLM" run --offline -p "Hello" $G
expect_err "names the pull command" "run 'dllm pull $DEFAULT_REPO:Q4_K_M' while online\$"
run "run without -m: the default model" 0 "$DLLM" run -p "Hello" $G
same "the default model's answer" "$TMP/llada"
expect_err "the default model is downloaded" '^dllm: LLaDA-8B-Instruct.Q4_K_M.gguf: downloading 1.6 MB$'
run "run --offline without -m" 0 "$DLLM" run --offline -p "Hello" $G
same "the same answer offline" "$TMP/llada"

run "run a split model" 0 "$DLLM" run -m test/dream-split-GGUF -p "Hi" $G
same "the whole file's answer" "$TMP/dream"
expect_err "every part downloaded" "^dllm: ${P}3-of-00003.gguf: verified"
run "unknown repo" 1 "$DLLM" tokenize -m nobody/nothing -p "Hi"
expect_err "no such repo" '^dllm: error: nobody/nothing: no such repo'
run "neither a file nor a model" 1 "$DLLM" run -m nothing.gguf -p "Hi"
expect_err "says so" "^dllm: error: 'nothing.gguf' is neither an existing file nor a hub model"
run "bad repo id" 1 "$DLLM" logits -m a/b/c --tokens 1 --rows all --out "$TMP/x.f32"
expect_err "repo id message" '^dllm: error: invalid hub repo id'
run "missing local file" 1 "$DLLM" tokenize -m "$TMP/none.gguf" -p "Hi"
expect_err "cannot open" '^dllm: error: .*none.gguf: cannot open'

run "run --help" 0 "$DLLM" run --help
expect_out "run: -m forms" 'org/repo\[:QUANT\|:FILE.gguf\]'
expect_out "run: --offline" '^  --offline '
run "tokenize --help" 0 "$DLLM" tokenize --help
expect_out "tokenize: --offline" '^  --offline '
run "logits --help" 0 "$DLLM" logits --help
expect_out "logits: --offline" '^      --offline '
finish
