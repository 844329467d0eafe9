#!/bin/sh
# dllm run: the answer alone on stdout, --json and --trace records, every bad flag exits 2.
. "${DLLM_TESTS_SRC:-$(dirname "$0")}/lib.sh"
need_fixtures
L=$FIX/models/llada-tiny-q4km.gguf
D=$FIX/models/dream-tiny-q4km.gguf
G="--max-tokens 16 --steps 8"

run "run on LLaDA" 0 "$DLLM" run -m "$L" -p "Hello" $G
if [ "$(wc -l <"$TMP/out")" -ge 1 ] && [ ! -s "$TMP/err" ]; then ok "only the answer, no status, without a terminal"
else not_ok "stdout/stderr split"; fi
cp "$TMP/out" "$TMP/first"
run "same seed again" 0 "$DLLM" run -m "$L" -p "Hello" $G
if cmp -s "$TMP/out" "$TMP/first"; then ok "deterministic"; else not_ok "same seed, different answer"; fi
echo "Hello" | "$DLLM" run -m "$L" -p - $G >"$TMP/stdin" 2>"$TMP/err"
if cmp -s "$TMP/stdin" "$TMP/first"; then ok "prompt from stdin"; else not_ok "prompt from stdin differs"; fi

run "--show-canvas on a pipe" 0 "$DLLM" run -m "$L" -p "Hello" $G --show-canvas
if python3 - "$TMP/out" "$TMP/first" <<'PY'
import json, sys
lines = open(sys.argv[1], "rb").read().split(b"\n")
answer = open(sys.argv[2], "rb").read()
steps = [json.loads(l) for l in lines[:-2]]
assert [s["step"] for s in steps] == list(range(len(steps))) and steps, lines
assert all(c["pos"] >= 0 and "text" in c for s in steps for c in s["committed"])
assert steps[-1]["masks_left"] <= steps[0]["masks_left"]
assert b"\n".join(lines[-2:]) == answer, (lines[-2:], answer)
PY
then ok "one JSON line per step, then the same answer"; else not_ok "--show-canvas JSON lines"; fi

run "run --json --trace on Dream" 0 "$DLLM" run -m "$D" -p "Hi" $G --temperature 0.5 --seed 7 --json --trace "$TMP/trace"
if python3 - "$TMP/out" "$TMP/trace" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("text", "tokens", "steps", "stopped_early", "step_ms", "load_ms", "total_ms",
          "peak_rss_mb", "seed", "settings"):
    assert k in d, k
assert d["seed"] == 7 and d["settings"]["kind"] == "dream" and d["settings"]["temperature"] == 0.5
# the settings as dllm-tui's conversation files write them, with threads and chat
assert set(d["settings"]) == {"kind", "max_tokens", "steps", "block_length", "temperature", "top_p",
                              "top_k", "threshold", "remasking", "alg", "alg_temp", "eps",
                              "cfg_scale", "seed", "early_stop", "cache", "cache_type", "threads",
                              "chat"}, sorted(d["settings"])
assert d["settings"]["seed"] == 7 and d["settings"]["alg"] == "entropy"
assert d["steps"] == len(d["step_ms"]) and 1 <= d["steps"] <= 8
assert d["gaps"] == [] and d["cancelled"] is False  # a finished run leaves no masks
assert all(isinstance(t, int) for t in d["tokens"]) and len(d["tokens"]) <= 16
lines = [json.loads(l) for l in open(sys.argv[2])]
assert len(lines) == d["steps"]
assert [l["step"] for l in lines] == list(range(len(lines)))
left, elapsed = 16, 0.0
for l in lines:
    assert set(l) == {"step", "block", "committed", "best_left_conf", "masks_left", "forward_ms", "sample_ms", "refreshes", "computed", "elapsed_ms"}
    assert l["refreshes"] == 0
    # the clock since the start covers this step's own work and never runs back
    assert l["elapsed_ms"] >= elapsed and l["elapsed_ms"] >= l["forward_ms"] + l["sample_ms"] - 1e-3
    elapsed = l["elapsed_ms"]
    left -= len(l["committed"])
    assert l["masks_left"] == left
    for c in l["committed"]:
        assert c["pos"] >= 16 - 16 and isinstance(c["token"], int)
assert elapsed <= d["total_ms"] + 1.0
PY
then ok "JSON document and trace lines"; else not_ok "JSON document and trace lines"; fi

# seeds: 0 to 2^64-1 as the chat's /set seed takes them; JSON numbers up to 2^63-1, above that
# strings of digits, as the chat's conversation files write them
run "the largest seed" 0 "$DLLM" run -m "$D" -p "Hi" $G --temperature 0.5 --seed 18446744073709551615 --json
if python3 - "$TMP/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["seed"] == "18446744073709551615" and d["settings"]["seed"] == d["seed"], d["seed"]
PY
then ok "a seed above 2^63-1 is a string of its digits"; else not_ok "a seed above 2^63-1 in JSON"; fi
run "seed 2^63-1" 0 "$DLLM" run -m "$D" -p "Hi" $G --seed 9223372036854775807 --json
if python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["seed"] == 2**63 - 1 and d["settings"]["seed"] == 2**63 - 1' "$TMP/out"
then ok "seed 2^63-1 is a number"; else not_ok "seed 2^63-1 in JSON"; fi
for bad_seed in 18446744073709551616 -1 " 1" 1e3 0x10; do
    run "seed '$bad_seed'" 2 "$DLLM" run -m "$D" -p "Hi" $G --seed "$bad_seed"
    expect_err "names the range" "^dllm run: --seed takes a whole number from 0 to 18446744073709551615, not '$bad_seed'\$"
done

run "threshold mode" 0 "$DLLM" run -m "$L" -p "Hi" --max-tokens 16 --threshold 0.5 --json
run "no chat" 0 "$DLLM" run -m "$L" -p "Hi" $G --no-chat
# A system message needs the chat template: with --no-chat it is refused, not dropped.
run "--system with --no-chat" 2 "$DLLM" run -m "$L" -p "Hi" $G --no-chat --system "Be brief"
expect_err "says why" '^dllm run: --system applies to chat prompts, not --no-chat$'
run "either order, and the TUI's" 2 "$DLLM" chat --system "Be brief" --no-chat
# dllm chat runs dllm-tui from the same folder with the same arguments; dllm help lists it.
run "dllm chat --help" 0 "$DLLM" chat --help
expect_out "is dllm-tui's help" '^usage: dllm-tui \[-m MODEL\] \[options\]$'
expect_out "documents --batch" '^       dllm-tui --batch \[-m MODEL\] -p TEXT \[options\]$'
run "dllm chat, a bad flag" 2 "$DLLM" chat --bogus
# --batch's usage errors name a command that exists, and the screen's own flags say they do
# not apply (they were "unknown options" of a "dllm tui --batch").
run "--batch, a bad flag" 2 "$DLLM" chat --batch -m "$L" -p hi --bogus
expect_err "names dllm chat --batch" "^dllm chat --batch: unknown option --bogus$"
expect_err "whose help exists" "^run 'dllm chat --batch --help' for usage$"
for f in "--color never" "--no-mouse" "--script $TMP/s" "--dump-screen $TMP/d" "--color=never"; do
    run "--batch with $f" 2 "$DLLM" chat --batch -m "$L" -p hi $f
    expect_err "$f is for the screen" "^dllm chat --batch: ${f%%[ =]*} is for the chat screen; --batch has none$"
done
# Which words are flags is getopt's reading: a value that reads like a flag is a value.
run "--batch, a prompt that reads --batch" 0 "$DLLM" chat --batch -m "$L" -p --batch $G
"$DLLM" run -m "$L" -p --batch $G >"$TMP/run_out" 2>/dev/null
if cmp -s "$TMP/out" "$TMP/run_out"; then ok "the prompt --batch, as dllm run answers it"
else not_ok "the prompt --batch answered differently"; fi
run "--batch, a prompt that reads --color" 0 "$DLLM" chat --batch -m "$L" -p --color $G
run "the chat, a system message that reads --batch" 2 "$DLLM" chat --system --batch --bogus
expect_err "is the chat's error" "^dllm chat: unknown option --bogus$"
run "a trace file named --batch is dllm run's flag, not the chat's" 2 "$DLLM" chat --trace --batch
expect_err "the chat has no --trace" "^dllm chat: unknown option --trace$"
run "dllm help" 0 "$DLLM" help
expect_out "lists chat" '^  chat +the interactive chat \(runs dllm-tui\)$'
# A threshold on the Dream sampler without --alg takes maskgit_plus (Fast-dLLM's Dream); an
# explicit entropy stays refused, naming maskgit_plus. RND1 runs the Dream sampler too.
for m in "$D" "$FIX/models/rnd1-tiny-q4km.gguf"; do
    run "Dream-sampler threshold ($(basename "$m"))" 0 "$DLLM" run -m "$m" -p "Hi" --max-tokens 16 --threshold 0.5 --json
    if python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["settings"]["alg"] == "maskgit_plus"' "$TMP/out"
    then ok "settings.alg is maskgit_plus"; else not_ok "settings.alg is not maskgit_plus"; fi
done
run "threshold with an explicit entropy" 2 "$DLLM" run -m "$D" -p hi --threshold 0.5 --alg entropy
expect_err "names maskgit_plus" "maskgit_plus"

HF_HUB_OFFLINE=1 HF_HUB_CACHE="$TMP/empty" run "no model: the default, not cached" 1 "$DLLM" run -p hi
expect_err "names the pull command" "run 'dllm pull .*' while online"
run "no prompt" 2 "$DLLM" run -m "$L"
run "steps not a multiple of blocks" 2 "$DLLM" run -m "$L" -p hi --max-tokens 64 --block-length 32 --steps 7
expect_err "says which steps work" "steps 7"
run "block length not dividing max tokens" 2 "$DLLM" run -m "$L" -p hi --max-tokens 64 --block-length 24 --steps 8
run "threshold out of range" 2 "$DLLM" run -m "$L" -p hi --threshold 1.5
expect_err "threshold 1.5: the one wording" "--threshold takes a number in \(0, 1\], such as 0.9, not '1.5'"
run "threshold zero" 2 "$DLLM" run -m "$L" -p hi --threshold 0
expect_err "threshold 0: the one wording" "--threshold takes a number in \(0, 1\], such as 0.9, not '0'"
for v in -1 0 1.5; do
    run "top-p $v" 2 "$DLLM" run -m "$D" -p hi --top-p $v
    expect_err "top-p $v: the one wording" "--top-p takes a number in \(0, 1\], such as 0.95, not '$v'"
done
# The canvas limit (4096 on the fixtures' context) less the prompt's tokens, as dllm tokenize
# counts them: both sides of the old split (4090 exited 1 after loading, 5000 exited 2).
n_prompt=$("$DLLM" tokenize -m "$L" -p hi | wc -w)
for mt in 4090 5000; do
    run "--max-tokens $mt beyond the canvas" 2 "$DLLM" run -m "$L" -p hi --max-tokens $mt
    expect_err "names the largest --max-tokens" "the largest --max-tokens this prompt allows is $((4096 - n_prompt))\$"
done
# LLaDA's blocks without --block-length: 32 when it divides --max-tokens, else the largest
# divisor from 8 to 32, else one block.
for case in "64 32" "40 20" "36 18" "22 22" "7 7"; do
    set -- $case
    run "LLaDA, --max-tokens $1 without --block-length" 0 "$DLLM" run -m "$L" -p hi --max-tokens $1 --json --verbose
    expect_out "blocks of $2" "\"block_length\": $2,"
done
expect_err "--verbose says one block" "one block of 7 tokens"
# --steps above --max-tokens: clamped with a note, for both samplers.
for m in "$L" "$D"; do
    run "steps above max tokens ($(basename "$m"))" 0 "$DLLM" run -m "$m" -p hi --max-tokens 8 --steps 16 --json
    expect_err "a note says so" "note: --steps 16 is more than --max-tokens 8: running 8 steps"
    expect_out "settings.steps is the steps run" '^    "steps": 8,$'
done
# Dream's schedule int(N(1 - s/t)) gives 8 tokens over 8 steps a quota of 0 at step 0 (as
# diffusion_generate does): --verbose says so instead of a row of zeros.
run "a step with a quota of 0" 0 "$DLLM" run -m "$D" -p hi --max-tokens 8 --steps 8 --no-early-stop --verbose
expect_err "marked as such" "^step 0: quota 0, no pass, 8 masks left$"
run "--json: model path, prompt tokens, tokens/s" 0 "$DLLM" run -m "$L" -p hi $G --json
expect_out "model path" "^  \"model\": \"$L\",$"
expect_out "prompt tokens" "^  \"prompt_tokens\": $n_prompt,$"
expect_out "tokens per second" '^  "tokens_per_s": [0-9.e+]+,$'
printf '' | "$DLLM" run -m "$L" -p - $G >"$TMP/out" 2>"$TMP/err"
[ $? -eq 2 ] && ok "an empty prompt on stdin exits 2" || not_ok "an empty prompt on stdin"
run "--trace to an unwritable path" 1 "$DLLM" run -m "$L" -p hi $G --trace "$TMP/no/such/dir/trace"
expect_err "says why" "cannot write the trace file .*: No such file or directory"
# --trace writes each line as its step ends: while a long run goes on, the file grows line by
# line (it came in 4 KB bursts); seen between 1 byte and 4 KB while the process is alive.
"$DLLM" run -m "$D" -p hi --max-tokens 256 --steps 256 --no-early-stop --trace "$TMP/live" \
    >/dev/null 2>&1 &
pid=$!
seen=0
i=0
while [ $i -lt 3000 ] && kill -0 $pid 2>/dev/null; do
    size=$( { wc -c <"$TMP/live"; } 2>/dev/null || echo 0) # the shell opens the file: quiet until it exists
    if [ "$size" -gt 0 ] && [ "$size" -lt 4096 ] && kill -0 $pid 2>/dev/null; then seen=1; break; fi
    sleep 0.01
    i=$((i + 1))
done
wait $pid
[ $seen -eq 1 ] && ok "--trace lines arrive as steps end" || not_ok "--trace came in bursts"
# Ctrl+C mid-run (once 3 steps are traced): the step in progress stops, the partial answer is
# printed, with --json as one document that says cancelled and where the masks left show
# (gaps: byte offsets of each " ... " in the UTF-8 text), and the exit status is 130.
"$DLLM" run -m "$D" -p hi --max-tokens 256 --steps 256 --no-early-stop --json \
    --trace "$TMP/int-trace" >"$TMP/out" 2>"$TMP/err" &
pid=$!
i=0
while [ $i -lt 3000 ] && kill -0 $pid 2>/dev/null &&
    [ "$( { wc -l <"$TMP/int-trace"; } 2>/dev/null || echo 0)" -lt 3 ]; do
    sleep 0.01
    i=$((i + 1))
done
kill -INT $pid
wait $pid
status=$?
[ $status -eq 130 ] && ok "Ctrl+C exits 130" || not_ok "Ctrl+C exited $status, expected 130"
expect_err "says the answer is partial" "^dllm: stopped after [0-9]+ steps?; the answer above is partial$"
if python3 - "$TMP/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["cancelled"] is True and 3 <= d["steps"] < 256, (d["cancelled"], d["steps"])
g, t = d["gaps"], d["text"].encode()
assert g and g == sorted(set(g)), g
assert all(t[i:i + 5] == " \u2026 ".encode() for i in g), [t[i:i + 5] for i in g]
PY
then ok "--json of a cancelled run: cancelled, gaps"; else not_ok "--json of a cancelled run"; fi
run "unknown alg" 2 "$DLLM" run -m "$D" -p hi --alg sideways
run "unknown remasking" 2 "$DLLM" run -m "$L" -p hi --remasking sometimes
run "Dream flag on LLaDA" 2 "$DLLM" run -m "$L" -p hi --alg entropy
run "canvas beyond the context" 2 "$DLLM" run -m "$L" -p hi --max-tokens 1000000 --block-length 0
run "bad number" 2 "$DLLM" run -m "$L" -p hi --steps many
# numbers are plain decimals: no space, '+', hex or inf, which strtoll and strtod would take
for a in "-t= 2" "-t=+2" "--steps=+8" "--temperature= 0.5" "--temperature=0x1p-1" \
         "--temperature=inf" "--top-p=0x1p-1" "--threshold=+0.5" "--max-tokens=0x10"; do
    run "number $a" 2 "$DLLM" run -m "$D" -p hi "${a%%=*}" "${a#*=}"
done
expect_err "names the flag and the text" "^dllm run: --max-tokens takes a whole number from 1 to [0-9]+, not '0x10'$"
run "decimals written plainly" 0 "$DLLM" run -m "$D" -p hi $G --temperature .5 --top-p 9e-1
# a trace that cannot be written: the answer still printed, then the error, exit 1
run "trace on a full disk" 1 "$DLLM" run -m "$L" -p hi $G --trace /dev/full
expect_err "names the trace file" '^dllm: error: cannot write the trace file /dev/full: No space left on device$'
if [ -s "$TMP/out" ]; then ok "the answer is printed"; else not_ok "no answer printed"; fi
run_full "answer on a full disk" 1 "$DLLM" run -m "$L" -p hi $G
expect_err "says so" '^dllm: error: cannot write the output: No space left on device$'
# a prompt without -p: the usage error says where it goes; with -p, the word is only extra
run "prompt without -p" 2 "$DLLM" run -m "$L" hello
expect_err "says where the prompt goes" "^dllm run: unexpected argument 'hello': a prompt goes after -p, as in -p 'TEXT'$"
run "an extra word after -p" 2 "$DLLM" run -m "$L" -p hi hello
expect_err "names the word alone" "^dllm run: unexpected argument 'hello'$"
run "missing model file" 1 "$DLLM" run -m "$TMP/none.gguf" -p hi
expect_err "one-line error" "^dllm: error: "
# a damaged file or one without the model's keys: the problem and the fix, on one line
head -c 3000 "$L" >"$TMP/cut.gguf"
run "a file cut short" 1 "$DLLM" run -m "$TMP/cut.gguf" -p hi
expect_err "names the fix" "^dllm: error: $TMP/cut.gguf: .*; the file is damaged, cut short or not a GGUF model: download it again"
expect_err_lines "on one line" 1
# a GGUF file with general.architecture alone (version 3, no tensors, one key)
python3 - "$TMP/arch-only.gguf" <<'PY'
import struct, sys
key, val = b"general.architecture", b"llada"
with open(sys.argv[1], "wb") as f:
    f.write(b"GGUF" + struct.pack("<IQQ", 3, 0, 1))
    f.write(struct.pack("<Q", len(key)) + key + struct.pack("<IQ", 8, len(val)) + val)
PY
run "a file without the model's keys" 1 "$DLLM" run -m "$TMP/arch-only.gguf" -p hi
expect_err "names the fix" "missing: .*; convert the model again with a current llama.cpp's convert_hf_to_gguf.py$"
run "tokenize a file cut short" 1 "$DLLM" tokenize -m "$TMP/cut.gguf" -p hi
expect_err "names the fix" "; the file is damaged, cut short or not a GGUF model: download it again"
# --cache: Dream without --block-length gets blocks of 32 and says so; the JSON names the mode,
# its storage type (f16 by default), the refresh steps (one per block), the positions each step
# computed and the cache's bytes.
run "dual cache on Dream" 0 "$DLLM" run -m "$D" -p "Hi" --max-tokens 64 --steps 16 --cache dual --json --no-early-stop
expect_err "says the block length it chose" "note: --cache dual without --block-length uses blocks of 32 tokens"
if python3 - "$TMP/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = d["settings"]
assert s["cache"] == "dual" and s["cache_type"] == "f16" and s["block_length"] == 32, s
assert d["refresh_steps"] == [0, 8], d["refresh_steps"]
canvas = max(d["step_computed"])
assert all(c == canvas for i, c in enumerate(d["step_computed"]) if i in d["refresh_steps"])
assert all(c == 33 for i, c in enumerate(d["step_computed"]) if i not in d["refresh_steps"]), d["step_computed"]
assert d["cache_bytes"] > 0
PY
then ok "cache settings, refresh steps and computed positions in --json"; else not_ok "cache fields in --json"; fi
cp "$TMP/out" "$TMP/f16.json"
run "float32 dual cache" 0 "$DLLM" run -m "$D" -p "Hi" --max-tokens 64 --steps 16 --cache dual --cache-type f32 --json --no-early-stop
if python3 - "$TMP/out" "$TMP/f16.json" <<'PY'
import json, sys
d, h = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert d["settings"]["cache_type"] == "f32", d["settings"]
assert d["cache_bytes"] == 2 * h["cache_bytes"], (d["cache_bytes"], h["cache_bytes"])
PY
then ok "--cache-type f32 in --json, twice the bytes of f16"; else not_ok "--cache-type f32"; fi
run "prefix cache on LLaDA, verbose" 0 "$DLLM" run -m "$L" -p "Hi" $G --cache prefix --verbose
expect_err "verbose names the cache's memory and type" "^K/V cache: [0-9.]+ MB \\(f16\\)"
# --cache-check: every step that read the cache is compared with the exact pass, and a step
# that recomputes the same canvas as its refresh agrees exactly (cosine 1).
run "cache check" 0 "$DLLM" run -m "$L" -p "Hi" --max-tokens 32 --steps 8 --block-length 16 --cache dual --cache-check --json --no-early-stop
if python3 - "$TMP/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
checks = d["cache_checks"]
steps = d["steps"]
assert [c["step"] for c in checks] == [s for s in range(steps) if s not in d["refresh_steps"]], checks
for c in checks:
    assert 0.9 < c["cos_min"] <= 1.0 + 1e-9 and c["rel_max"] >= 0 and 0 <= c["argmax_same"] <= c["rows"] and c["rows"] > 0, c
PY
then ok "cache_checks for every cached step"; else not_ok "cache_checks"; fi
run "cache check without a cache" 2 "$DLLM" run -m "$L" -p hi --cache-check
expect_err "names --cache" "--cache-check needs --cache prefix or dual"
run "unknown cache mode" 2 "$DLLM" run -m "$L" -p hi --cache all
expect_err "names the modes" "--cache is none, prefix or dual, not 'all'"
run "unknown cache type" 2 "$DLLM" run -m "$L" -p hi --cache dual --cache-type f64
expect_err "names the types" "--cache-type is f16 or f32, not 'f64'"
run "run --help" 0 "$DLLM" run --help
expect_out "documents --threshold" "--threshold T"
finish
