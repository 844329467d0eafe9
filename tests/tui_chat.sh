#!/bin/sh
# dllm-tui headless on the real engine: a two-turn chat with the real Dream tokenizer, /save,
# and Esc cancelling a running generation (key scripts in, screen dumps out).
. "${DLLM_TESTS_SRC:-$(dirname "$0")}/lib.sh"
need_fixtures
TUI="$DLLM_BIN/dllm-tui"
export LANG=C.UTF-8 XDG_STATE_HOME="$TMP/state"

cat >"$TMP/chat" <<EOS
text Hello there
key Enter
wait-idle
text And a second question?
key Enter
wait-idle
dump $TMP/two-turns
text /save $TMP/chat.md
key Enter
EOS
run "two-turn chat on the real engine" 0 "$TUI" -m "$FIX/models/dream-tiny-realvocab-q4km.gguf" \
    --max-tokens 8 --steps 4 --script "$TMP/chat" --dump-screen "$TMP/final"
if [ "$(grep -c '^you$' "$TMP/two-turns")" -eq 2 ] && [ "$(grep -c '^dllm · 4 steps · 8 tokens' "$TMP/two-turns")" -eq 2 ]
then ok "both turns and both answers on screen"; else not_ok "two turns"; sed 's/^/  | /' "$TMP/two-turns"; fi
expect_file() { if grep -Eq -- "$2" "$3"; then ok "$1"; else not_ok "$1: $3 lacks /$2/"; fi; }
expect_file "the screen shows the prompts" '^  And a second question\?$' "$TMP/two-turns"
expect_file "status bar names the model and quantization" 'dream-tiny-realvocab-q4km.gguf · Q4_K_M · cpu' "$TMP/two-turns"
expect_file "/save writes a Markdown transcript" '^# dllm conversation$' "$TMP/chat.md"
expect_file "the transcript has the second prompt" '^And a second question\?$' "$TMP/chat.md"
expect_file "the transcript records settings" '^> Settings: steps 4, max tokens 8' "$TMP/chat.md"

cat >"$TMP/cancel" <<EOS
text Count slowly
key Enter
wait-step 2
key Esc
wait-idle
dump $TMP/cancelled
EOS
run "Esc cancels on the real engine" 0 "$TUI" -m "$FIX/models/dream-tiny-q4km.gguf" \
    --max-tokens 256 --steps 256 --no-early-stop --script "$TMP/cancel"
expect_file "the partial answer is kept and marked" '^dllm · [0-9]+ steps · [0-9]+ tokens? · .* · stopped$' "$TMP/cancelled"
if grep -q '^dllm · 256 steps' "$TMP/cancelled"; then not_ok "the run was not cancelled"; else ok "the run stopped early"; fi
finish
