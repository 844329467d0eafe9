#!/bin/sh
# dllm tokenize: raw and chat prompts against ids from llama.cpp's vectors and the models'
# published vocabularies, JSON output, detokenizing, and exit codes on bad input and flags.
. "${DLLM_TESTS_SRC:-$(dirname "$0")}/lib.sh"
need_fixtures
DREAM=$FIX/tokenizer/dream-vocab.gguf
LLADA=$FIX/models/llada-tiny-q4km.gguf
GPT2=$FIX/tokenizer/llamacpp-tests/ggml-vocab-gpt-2.gguf

# llama.cpp's vectors: "Hello world" is 9707 1879 with the Qwen2 vocabulary.
run "raw prompt" 0 "$DLLM" tokenize -m "$DREAM" -p "Hello world" --no-chat
expect_out "raw ids" '^9707 1879$'

# The chat prompt, with ids from dream-hf's added_tokens.json and vocab.json.
want=$(python3 - "$FIX/tokenizer/dream-hf" <<'PY'
import json, sys
d = sys.argv[1]
added = json.load(open(d + "/added_tokens.json"))
vocab = json.load(open(d + "/vocab.json"))
pieces = ["<|im_start|>", "system", "Ċ", "You", "Ġare", "Ġa", "Ġhelpful", "Ġassistant", ".",
          "<|im_end|>", "Ċ", "<|im_start|>", "user", "Ċ", "Hello", "Ġworld", "<|im_end|>", "Ċ",
          "<|im_start|>", "assistant", "Ċ"]
print(" ".join(str(added[p] if p.startswith("<|") else vocab[p]) for p in pieces))
PY
)
run "chat prompt" 0 "$DLLM" tokenize -m "$DREAM" -p "Hello world"
if [ "$(cat "$TMP/out")" = "$want" ]; then ok "chat ids"; else
    not_ok "chat ids: got '$(cat "$TMP/out")', expected '$want'"; fi
run "prompt without -p" 2 "$DLLM" tokenize -m "$DREAM" "Hello world"
expect_err "says where the prompt goes" "^dllm tokenize: unexpected argument 'Hello world': a prompt goes after -p, as in -p 'TEXT'$"

# The MoE fixtures' chat prompts: their role tags and ChatML markers as single special ids
# (the ids tokenizer.ggml.tokens gives them), rendered as their Jinja templates do.
for m in llada-moe-tiny-q4km rnd1-tiny-q4km; do
    run "$m chat prompt" 0 "$DLLM" tokenize -m "$FIX/models/$m.gguf" -p "Hi" --json
    if python3 - "$TMP/out" "$m" <<'PY'
import json, sys
pieces = [t["piece"] for t in json.load(open(sys.argv[1]))]
want = ({"<role>": 3, "</role>": 3, "<|role_end|>": 2} if sys.argv[2].startswith("llada-moe")
        else {"<|im_start|>": 2, "<|im_end|>": 1})
assert all(pieces.count(p) == n for p, n in want.items()), pieces
assert pieces[0] == ("<role>" if sys.argv[2].startswith("llada-moe") else "<|im_start|>")
assert "".join(pieces).endswith("<role>ASSISTANT</role>" if sys.argv[2].startswith("llada-moe")
                                else "<|im_start|>assistant\n"), pieces
PY
    then ok "$m special tokens"; else not_ok "$m special tokens"; fi
done

run "chat prompt with a system message" 0 "$DLLM" tokenize -m "$DREAM" -p "Hi" -s "Be brief."
expect_out "own system message replaces the default" '^151644 8948 198 '
run "detokenize the chat prompt" 0 "$DLLM" tokenize -m "$DREAM" \
    --detokenize "$(cat "$TMP/out")"
printf '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n\n' >"$TMP/want"
if cmp -s "$TMP/out" "$TMP/want"; then ok "detokenized chat text"; else not_ok "detokenized chat text"; fi

run "detokenize with commas" 0 "$DLLM" tokenize -m "$DREAM" --detokenize "9707,1879"
expect_out "text" '^Hello world$'

run "special text is plain by default" 0 "$DLLM" tokenize -m "$DREAM" -p "<|im_end|>" --no-chat
if grep -q '151645' "$TMP/out"; then not_ok "no special id without --parse-special"; else
    ok "no special id without --parse-special"; fi
run "--parse-special" 0 "$DLLM" tokenize -m "$DREAM" -p "<|im_end|>" --no-chat --parse-special
expect_out "special id" '^151645$'

# LLaDA's file sets add_bos_token: BOS (its bos_token_id) leads a raw prompt and a chat prompt,
# once.
bos=$("$DLLM" inspect --json "$LLADA" | python3 -c \
    'import json,sys; print(json.load(sys.stdin)["metadata"]["tokenizer.ggml.bos_token_id"]["value"])')
run "raw prompt with BOS" 0 "$DLLM" tokenize -m "$LLADA" -p "hi" --no-chat
expect_out "BOS first" "^$bos [0-9]+ [0-9]+$"
run "LLaDA chat prompt" 0 "$DLLM" tokenize -m "$LLADA" -p "hi"
expect_out "one BOS" "^$bos [0-9 ]+$"
if [ "$(grep -o "\\b$bos\\b" "$TMP/out" | wc -l)" -eq 1 ]; then ok "BOS once"; else not_ok "BOS once"; fi

# JSON: a piece per id, bytes exact even where a piece splits a UTF-8 character.
run "--json" 0 "$DLLM" tokenize -m "$GPT2" -p "日本 ok" --no-chat --json
if python3 - "$TMP/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert all(set(t) == {"id", "piece", "bytes"} for t in d)
assert b"".join(bytes.fromhex(t["bytes"]) for t in d) == "日本 ok".encode()
assert any("\ufffd" in t["piece"] for t in d), "GPT-2 splits these characters"
assert d[-1]["piece"] == " ok" and d[-1]["bytes"] == "206f6b"
PY
then ok "JSON pieces and bytes"; else not_ok "JSON pieces and bytes"; fi
run "--detokenize --json" 0 "$DLLM" tokenize -m "$DREAM" --detokenize 151644 --json
expect_out "control token piece" '"piece": "<\|im_start\|>"'

run "no chat template" 1 "$DLLM" tokenize -m "$GPT2" -p "hi"
expect_err "names the key and --no-chat" '^dllm: error: .*tokenizer.chat_template.*--no-chat'
expect_err_lines "error is one line" 1
run "id out of range" 1 "$DLLM" tokenize -m "$DREAM" --detokenize "9707 152064"
expect_err "out of range message" '^dllm: error: token id 152064 .*outside the vocabulary of 152064 tokens'
run "missing file" 1 "$DLLM" tokenize -m "$TMP/none.gguf" -p "hi"
expect_err "missing file message" '^dllm: error: .*none.gguf: cannot open'

run "no model" 2 "$DLLM" tokenize -p "hi"
run "no prompt" 2 "$DLLM" tokenize -m "$DREAM"
run "prompt and detokenize" 2 "$DLLM" tokenize -m "$DREAM" -p "hi" --detokenize 1
run "--parse-special without --no-chat" 2 "$DLLM" tokenize -m "$DREAM" -p "hi" --parse-special
run "--system with --no-chat" 2 "$DLLM" tokenize -m "$DREAM" -p "hi" --no-chat -s x
run "bad id" 2 "$DLLM" tokenize -m "$DREAM" --detokenize "12,x"
run "negative id" 2 "$DLLM" tokenize -m "$DREAM" --detokenize "-1"
run "empty id list" 2 "$DLLM" tokenize -m "$DREAM" --detokenize ","
run "stray argument" 2 "$DLLM" tokenize -m "$DREAM" -p "hi" extra
run "unknown flag" 2 "$DLLM" tokenize --bogus
run "tokenize --help" 0 "$DLLM" tokenize --help
expect_out "usage text" '^usage: dllm tokenize'
run "dllm --help" 0 "$DLLM" --help
expect_out "command list" '^  tokenize '
# -p - reads the prompt from standard input; an empty one is a usage error.
L_TOK=$FIX/models/llada-tiny-q4km.gguf
printf 'Hello' | "$DLLM" tokenize -m "$L_TOK" --no-chat -p - >"$TMP/stdin-ids"
"$DLLM" tokenize -m "$L_TOK" --no-chat -p Hello >"$TMP/arg-ids"
if cmp -s "$TMP/stdin-ids" "$TMP/arg-ids"; then ok "tokenize -p - reads stdin"; else not_ok "tokenize -p -"; fi
printf '' | "$DLLM" tokenize -m "$L_TOK" -p - >/dev/null 2>&1
[ $? -eq 2 ] && ok "an empty prompt on stdin exits 2" || not_ok "tokenize: empty stdin"
finish
