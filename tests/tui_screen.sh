#!/usr/bin/env bash
# Headless screen tests of dllm-tui: key scripts in (--script), the virtual screen out as text
# (--dump-screen, and the script's dump / dump-styles). The program runs over the stand-in
# engine of tests/ui_mock_engine.c, which plays a fixed answer on a deterministic schedule with
# the real Dream tokenizer of the fixture model. What each check expects follows from that
# schedule: 32 tokens in 8 steps without blocks commit 4 positions a step.
. "$(dirname "$0")/lib.sh"
need_fixtures
TUI=${DLLM_TUI_MOCK:-$PWD/tests/dllm-tui-mock}
MODEL=$FIX/models/dream-tiny-realvocab-q4km.gguf
export LANG=C.UTF-8 TZ=UTC TERM=xterm-256color LINES=30 COLUMNS=100
export XDG_STATE_HOME=$TMP/state DLLM_MOCK_STEP_MS=1
unset NO_COLOR DLLM_MOCK_HOLD_AT DLLM_MOCK_CONTEXT
FLAGS=(-m "$MODEL" --max-tokens 32 --steps 8)

# tui NAME SCRIPT-TEXT [ARGS...]: runs a script, the final screen in $TMP/NAME.txt.
tui() {
    local name=$1 script=$2
    shift 2
    printf '%s\n' "$script" >"$TMP/$name.script"
    (cd "$TMP" && timeout 60 "$TUI" "${FLAGS[@]}" --script "$name.script" \
        --dump-screen "$name.txt" "$@") >"$TMP/out" 2>"$TMP/err"
    local rc=$?
    if [ "$rc" -eq 0 ]; then ok "$name runs (exit 0)"; else
        not_ok "$name: exit $rc"; sed 's/^/  stderr: /' "$TMP/err" | head -5
    fi
}
# has NAME FILE PATTERN / lacks NAME FILE PATTERN: grep -E in a dump.
has() {
    if grep -Eq -- "$3" "$TMP/$2"; then ok "$1"; else
        not_ok "$1: $2 lacks /$3/"
        sed 's/^/  | /' "$TMP/$2"
    fi
}
lacks() {
    if grep -Eq -- "$3" "$TMP/$2"; then
        not_ok "$1: $2 has /$3/"
        sed 's/^/  | /' "$TMP/$2"
    else ok "$1"; fi
}
# count FILE PATTERN: occurrences of a string in a file.
count() { grep -o -- "$2" "$TMP/$1" | wc -l; }
equal() { if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1: got '$2', expected '$3'"; fi; }

# ---- a two-turn chat -----------------------------------------------------------------------
tui chat 'text hello
key Enter
wait-idle
text and again
key Enter
wait-idle'
has "first question shown" chat.txt '^  hello +│'
has "first answer shown" chat.txt '^  You said: hello\. Diffusion fills every mask in parallel:'
has "second answer shown" chat.txt '^  You said: and again\.'
equal "two answer headers" "$(grep -c '^dllm · 8 steps' "$TMP/chat.txt")" 2
has "wide text drawn whole" chat.txt '日本語 ✓'
has "status bar idle" chat.txt ' · idle *$'
has "timing pane totals" chat.txt '│8 steps · '
has "history kept under XDG_STATE_HOME" state/dllm/history '^and again$'

# ---- the canvas mid-generation, then cancel keeping the partial answer ----------------------
DLLM_MOCK_HOLD_AT=3 tui cancel 'text tell me
key Enter
wait-step 3
dump mid.txt
dump-styles mid.styles
key Esc
wait-idle
dump-styles cancel.styles'
has "canvas title at step 3" mid.txt '─ answer · step 3 of 8 · 20 masks left '
canvas_masks=$(sed -n '/─ answer ·/,/─ message ·/p' "$TMP/mid.txt" | grep -o '░' | wc -l)
equal "20 masked positions drawn as ░" "$canvas_masks" 20
has "masks styled as masks" mid.styles 'm'
has "the latest step's tokens highlighted" mid.styles 'N'
has "earlier tokens settled" mid.styles 's'
has "status bar step 3 of 8" mid.txt ' · step 3 of 8 '
has "partial answer kept, marked stopped" cancel.txt '^dllm · 3 steps · .* · stopped +│'
has "status bar cancelled" cancel.txt ' · cancelled *$'
lacks "canvas gone after the end" cancel.txt '─ answer ·'
# Each run of masks the cancel left is one " … " in the answer, drawn dim, the text around it
# plain (the tokens on either side were glued together before).
gaps=$(python3 - "$TMP/cancel.txt" "$TMP/cancel.styles" <<'PY'
import sys, unicodedata
text = open(sys.argv[1], encoding="utf-8").read().split("\n")
styles = open(sys.argv[2]).read().split("\n")
found = bad = 0
for y, line in enumerate(text):
    col = 0
    for ch in line.split("\u2502")[0]:
        if ch == "\u2026":
            found += 1
            bad += styles[y][col - 1 : col + 2] != "ddd" or styles[y][2] != "."
        col += 2 if unicodedata.east_asian_width(ch) in "WF" else 1
print(found, bad)
PY
)
[ "${gaps% *}" -gt 0 ] && ok "the stopped answer marks its gaps ($gaps)" ||
    not_ok "no gap in the stopped answer: $gaps"
equal "each gap dim, the answer's text plain" "${gaps#* }" 0

# ---- the message line: refusals and errors whole above the input, the status line intact ------
# joined FILE: the dump's rows joined by single spaces (wrapped text reads as one line again).
joined() { tr '\n' ' ' <"$TMP/$1" | tr -s ' '; }
LONG="/nonexistent/one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen/chat.md"
for size in 120x35 80x24 60x20; do
    export COLUMNS=${size%x*} LINES=${size#*x}
    DLLM_MOCK_HOLD_AT=3 tui "busy-$size" 'text hello
key Enter
wait-step 3
text more
key Enter
dump busy.txt
key Esc
wait-idle'
    cp "$TMP/busy.txt" "$TMP/busy-$size.dump"
    if joined "busy-$size.dump" | grep -qF "a generation is running: wait for it, or cancel it with Esc"; then
        ok "$size: the refusal whole on screen"
    else not_ok "$size: the refusal cut"; sed 's/^/  | /' "$TMP/busy-$size.dump"; fi
    status=$(tail -n 1 "$TMP/busy-$size.dump")
    case $status in
    *"cpu · "*"step 3 of 8"*) ok "$size: the status line keeps the device and step 3 of 8" ;;
    *) not_ok "$size: the status line is '$status'" ;;
    esac
    # Live speed: the mock's steps take 10.5, 11.5 and 12.5 ms and commit 4 tokens each:
    # median 11.5 ms, 12 tokens in 34.5 ms, 5 planned steps left. In the status line without
    # the timing pane, in the pane's footer with it.
    if [ "$size" = 120x35 ]; then
        has "$size: live speed in the timing pane" "busy-$size.dump" '│347\.8 tok/s · ETA 0\.1 s'
    else
        case $status in
        *"12 ms/step · 347.8 tok/s · ETA 0.1 s"*) ok "$size: live speed in the status line" ;;
        *) not_ok "$size: no live speed in '$status'" ;;
        esac
    fi
    tui "save-$size" "text /save $LONG
key Enter
dump error.txt
key Tab
dump kept.txt
key F1
dump help.txt
key Esc
key Tab
key Tab
key x
dump typed.txt
key Backspace
text /regen
key Enter
dump regen.txt
key Esc"
    for f in error kept help typed regen; do cp "$TMP/$f.txt" "$TMP/$f-$size.dump"; done
    msg="cannot write $LONG: No such file or directory"
    if [ "$size" = 60x20 ]; then
        has "$size: a long error is cut at 3 rows" "error-$size.dump" '… F1 shows all$'
        if joined "help-$size.dump" | grep -qF "$msg"; then ok "$size: F1 shows the whole error"
        else not_ok "$size: F1 lacks the error"; sed 's/^/  | /' "$TMP/help-$size.dump"; fi
    elif joined "error-$size.dump" | grep -qF "$msg"; then ok "$size: the error whole on screen"
    else not_ok "$size: the error cut"; sed 's/^/  | /' "$TMP/error-$size.dump"; fi
    has "$size: the error stays after a key that does not edit" "kept-$size.dump" 'cannot write'
    lacks "$size: a typed key clears it" "typed-$size.dump" 'cannot write'
    has "$size: a refusal" "regen-$size.dump" 'there is no message to answer again'
    lacks "$size: Esc clears it" "save-$size.txt" 'there is no message to answer again'
done
export COLUMNS=100 LINES=30

# ---- Markdown: a settled answer rendered (the mock's answer repeats the message), F2 raw -------
tui markdown 'text **bold** and `code` and *it*
key Enter
wait-idle
dump md.txt
dump-styles md.styles
key F2
dump raw.txt' --max-tokens 64
has "Markdown marks gone" md.txt '^  You said: bold and code and it\. Diffusion'
row=$(grep -n '^  You said: bold and code' "$TMP/md.txt" | cut -d: -f1)
styles=$(sed -n "${row}p" "$TMP/md.styles")
equal "strong, code and emphasis styled" "$(printf '%s' "$styles" | cut -c13-32)" "BBBB.....cccc.....ii"
has "F2: the answer as written" raw.txt '^  You said: \*\*bold\*\* and `code` and \*it\*\.'

# ---- the layout at 120x35, 80x24 and 60x20, with and without NO_COLOR ---------------------------
# Mid-generation with a message: every pane where it belongs, nothing past the edge, and the
# same text whether colours are on or off (NO_COLOR changes attributes, not the layout).
for size in 120x35 80x24 60x20; do
    export COLUMNS=${size%x*} LINES=${size#*x}
    for nc in "" 1; do
        NO_COLOR=$nc DLLM_MOCK_HOLD_AT=3 tui "layout-$size-$nc" 'text hello
key Enter
wait-step 3
text /nosuch
key Enter
dump layout.txt
key Esc
wait-idle'
        cp "$TMP/layout.txt" "$TMP/layout-$size-nc$nc.dump"
    done
    f=layout-$size-nc.dump
    equal "$size: $LINES rows" "$(wc -l <"$TMP/$f")" "$LINES"
    widest=$(wc -L <"$TMP/$f")
    [ "$widest" -le "$COLUMNS" ] && ok "$size: no row past $COLUMNS columns" ||
        not_ok "$size: a row is $widest columns wide"
    has "$size: conversation title on the first row" "$f" '^─ conversation'
    has "$size: the canvas pane" "$f" '^─ answer · step 3 of 8 · '
    has "$size: the message above the input" "$f" '^unknown command /nosuch: /help lists them'
    case $(grep -A1 '^unknown command /nosuch' "$TMP/$f" | tail -n 1) in
    "─ message · "*) ok "$size: the input title under the message" ;;
    *) not_ok "$size: no input title under the message" ;; esac
    # The slider bar above the status line, whole: at 60 columns it wraps over two rows (it was
    # cut at the edge, "cache" lost).
    bar_rows=1; [ "$size" = 60x20 ] && bar_rows=2
    bar=$(sed -n "$((LINES - bar_rows)),$((LINES - 1))p" "$TMP/$f")
    equal "$size: the sliders start $bar_rows row(s) above the status" "$(printf '%s\n' "$bar" | head -n 1 | cut -c1-5)" "steps"
    for slider in 'steps 8' 'max 32' 'block off' 'threshold off' 'temp 0.2' 'cache none'; do
        case $bar in *"$slider"*) ok "$size: slider bar has '$slider'" ;;
        *) not_ok "$size: slider bar lacks '$slider'"; printf '%s\n' "$bar" | sed 's/^/  | /' ;; esac
    done
    case $(tail -n 1 "$TMP/$f") in *"step 3 of 8"*) ok "$size: the status line last" ;;
    *) not_ok "$size: the last row is not the status line" ;; esac
    if [ "$size" = 120x35 ]; then has "$size: the timing pane" "$f" '─ timing ─'
    else lacks "$size: no timing pane" "$f" '─ timing ─'; fi
    if cmp -s "$TMP/$f" "$TMP/layout-$size-nc1.dump"; then ok "$size: NO_COLOR, the same layout"
    else not_ok "$size: NO_COLOR changes the layout"; diff "$TMP/$f" "$TMP/layout-$size-nc1.dump" | head; fi
done
export COLUMNS=100 LINES=30

# ---- a slider change applies to the next generation ------------------------------------------
tui slider 'key Tab
key Tab
key Down
text hi
key Enter
wait-idle'
has "steps slider lowered to 7" slider.txt 'steps 7  max 32'
has "the answer used 7 steps" slider.txt '^dllm · 7 steps'

# ---- resize: rewrap, the timing pane goes, a minimum-size notice ----------------------------
tui resize 'text hello
key Enter
wait-idle
resize 60x20
dump narrow.txt
resize 30x10'
equal "narrow screen is 20 rows" "$(wc -l <"$TMP/narrow.txt")" 20
widest=$(wc -L <"$TMP/narrow.txt")
[ "$widest" -le 60 ] && ok "rows fit 60 columns" || not_ok "a row is $widest columns wide"
lacks "no timing pane under 96 columns" narrow.txt '│step'
has "answer rewrapped" narrow.txt '^  You said: hello\. Diffusion fills every mask in parallel:$'
has "its wide characters on the next row" narrow.txt '^  日本語 ✓$'
has "minimum-size notice" resize.txt '^The terminal is 30x10;$'
has "minimum-size notice, second row" resize.txt '^dllm-tui needs at least 40x12\.$'

# ---- help ------------------------------------------------------------------------------------
tui help 'key F1
dump help-open.txt
key Esc'
has "help lists the keys" help-open.txt '^ Everywhere$'
has "help lists Alt+Enter" help-open.txt 'Alt\+Enter, Ctrl\+J +insert a newline'
has "help title" help-open.txt '─ help · '
lacks "help closed by Esc" help.txt '─ help · '

# ---- /save -------------------------------------------------------------------------------------
tui save 'text hello
key Enter
wait-idle
text /save chat.md
key Enter'
has "saved note" save.txt 'saved the conversation to chat\.md'
has "transcript: the question" chat.md '^## You$'
has "transcript: the answer" chat.md '^You said: hello\.'
has "transcript: the settings" chat.md '^> Settings: steps 8, max tokens 32, block length off'

# ---- /save writes FILE.jsonl too, /load brings the conversation back ---------------------------
tui saveload 'text hello
key Enter
wait-idle
text /save saved.md
key Enter
text /clear
key Enter
text /load saved.md.jsonl
key Enter
dump loaded.txt
text /load saved.md
key Enter'
has "/save names both files" save.txt 'saved the conversation to chat\.md and chat\.md\.jsonl'
has "JSON lines: the header" saved.md.jsonl '^\{"format":"dllm-chat","version":1,"model":'
has "JSON lines: the answer with its settings and seed" saved.md.jsonl '^\{"role":"assistant","text":"You said: hello\..*"settings":\{"kind":"dream".*"seed":0'
has "/load says what it read" loaded.txt '^loaded 1 message and 1 answer from saved\.md\.jsonl'
has "/load: the answer is back" loaded.txt '^dllm · 8 steps'
has "a Markdown file is refused in one line" saveload.txt '^saved\.md line 1: not JSON'
has "the refused /load changed nothing" saveload.txt '^dllm · 8 steps'

# ---- /set and a value typed into a slider ------------------------------------------------------
tui set 'text /set steps 4
key Enter
dump set-steps.txt
text /set steps 40
key Enter
dump set-refused.txt
key Tab
key Tab
text 16
dump set-typing.txt
key Enter
text hi
key Enter
wait-idle'
has "/set steps 4 on the slider bar" set-steps.txt '^steps 4  max 32'
has "/set refuses, naming the range" set-refused.txt '^steps takes a whole number from 1 to 32 \(max tokens\), not .40.'
has "a typed value shows on the slider" set-typing.txt '◂ steps 16_ ▸'
has "the typed value was applied" set.txt '^dllm · 16 steps'

# ---- /find highlights the matches and says which is shown; Ctrl+F starts one --------------------
tui find 'text hello
key Enter
wait-idle
key C-f
text said
key Enter
dump find-open.txt
dump-styles find.styles
key Esc
dump find-ended.txt'
has "/find says which match" find-open.txt "^match 1 of 1 for 'said' \(n, N: next, previous; Esc ends the search\)"
row=$(grep -n '^  You said: hello' "$TMP/find-open.txt" | cut -d: -f1)
equal "the match is highlighted" "$(sed -n "${row}p" "$TMP/find.styles" | cut -c7-10)" "SSSS"
lacks "Esc ends the search" find-ended.txt '^match 1 of 1'

# ---- a bracketed paste is input, not a send ---------------------------------------------------
tui paste 'paste line one\nline two'
has "pasted first line" paste.txt '^> line one$'
has "pasted second line" paste.txt '^  line two$'
lacks "nothing sent" paste.txt '^you$'

# ---- turns that no longer fit the context ----------------------------------------------------
DLLM_MOCK_CONTEXT=100 tui dropped 'text first question
key Enter
wait-idle
text second question
key Enter
wait-idle'
has "notice of the dropped turn" dropped.txt "^1 earlier message no longer fits the model's context"
has "dropped turn marked" dropped.txt '^you · not in context +│'

# ---- Tab completes commands, settings and the words a setting takes --------------------------
tui complete 'text /se
key Tab
text ca
key Tab
dump complete-names.txt
text -
key Tab
text f3
key Tab'
has "a command and a setting completed" complete-names.txt '^> /set cache *$'
has "the choices named" complete-names.txt '^cache  cache-type *$'
has "a word value completed" complete.txt '^> /set cache-type f32 *$'

# ---- Ctrl+O: the input in the user's editor ---------------------------------------------------
# The editor gets the input as a file ending in a newline and its text comes back, less that
# newline; VISUAL comes before EDITOR; an editor that fails, or cannot be run, leaves the input
# as it was and says why.
printf '#!/bin/sh\nprintf "from the editor\\n" >>"$1"\ncp "$1" "%s/seen"\n' "$TMP" >"$TMP/append.sh"
chmod +x "$TMP/append.sh"
VISUAL="$TMP/append.sh" EDITOR=false tui editor 'text draft
key C-o
dump edited.txt
key Enter
wait-idle'
equal "the editor gets the input and a newline" "$(cat "$TMP/seen")" "$(printf 'draft\nfrom the editor')"
has "the edited text is in the input" edited.txt '^> draft$'
has "... its second line too" edited.txt '^  from the editor$'
has "the message line says so" edited.txt '^the message as the editor left it: Enter sends it'
has "Enter sends the edited text" editor.txt '^  You said: draft'
VISUAL= EDITOR=false tui editor-fails 'text kept
key C-o'
has "a failing editor is named" editor-fails.txt "^the editor 'false' failed \(exit status 1\): the input is as it was"
has "the input is kept" editor-fails.txt '^> kept$'
VISUAL= EDITOR="$TMP/no-such-editor" tui editor-missing 'key C-o'
has "a missing editor names the variables" editor-missing.txt \
    "^cannot run the editor '.*/no-such-editor': set VISUAL or EDITOR to one"

# ---- bad input ---------------------------------------------------------------------------------
printf 'key Entr\n' >"$TMP/bad.script"
run "unknown key in a script" 2 "$TUI" "${FLAGS[@]}" --script "$TMP/bad.script"
expect_err "script error names the line" "line 1: unknown key 'Entr'"
printf 'key Enter\n' >"$TMP/ok.script"
HF_HUB_CACHE="$TMP/empty-cache" run "without -m, the default model, not cached, offline" 1 \
    "$TUI" --offline --script "$TMP/ok.script"
expect_err "names the pull command" 'dllm pull'

run "bad --color" 2 "$TUI" "${FLAGS[@]}" --color sometimes
expect_err "bad --color message" '--color is auto, always or never'
run "no terminal without --script" 1 "$TUI" "${FLAGS[@]}" </dev/null
expect_err "no terminal message" 'needs a terminal'
# A headless screen is as large as LINES x COLUMNS say, within bounds: ncurses allocates each
# cell up front, and 20000 x 20000 ran for minutes.
for size in 20000x30 100x20000; do
    COLUMNS=${size%x*} LINES=${size#*x} run "a $size headless screen" 1 timeout 20 "$TUI" \
        "${FLAGS[@]}" --script "$TMP/ok.script"
    expect_err "names the variable and the bound" \
        '^dllm: error: (COLUMNS=20000|LINES=20000) is too large for a headless screen: use at most 1000$'
done
finish
