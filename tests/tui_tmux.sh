#!/usr/bin/env bash
# A smoke test of dllm-tui in a real terminal: tmux at a fixed size runs the real program on a
# Dream fixture model (256 steps over a canvas of about 280, so that the answer takes seconds
# and Esc lands mid-generation: 64 steps could end before it); the test sends keys, polls the captured pane for
# the expected text (no fixed sleeps), resizes the window, and checks that quitting restores
# the terminal (the shell's text from before comes back, the exit status is 0).
. "$(dirname "$0")/lib.sh"
need_fixtures
if ! command -v tmux >/dev/null; then
    echo "SKIP: tmux is not installed (Debian package tmux)"
    if [ "${CI:-}" = true ]; then
        echo "FAIL: CI=true, where a missing tmux is a failure"
        exit 1
    fi
    exit 77
fi
TUI=$DLLM_BIN/dllm-tui
MODEL=$FIX/models/dream-tiny-q4km.gguf
SOCK=dllm-tui-test-$$
T=(tmux -L "$SOCK" -f /dev/null)
trap '"${T[@]}" kill-server 2>/dev/null; rm -rf "$TMP"' EXIT

# Seconds to wait for a whole 256-step generation: under the sanitizers on a slow machine it
# takes 30 s or more (seen: 28.7 s for 217 steps under ASan).
WHOLE_RUN=300

# wait_for NAME PATTERN [SECONDS]: polls the pane (up to SECONDS, default 30) until grep -E
# finds PATTERN.
wait_for() {
    local deadline=$((SECONDS + ${3:-30}))
    while :; do
        "${T[@]}" capture-pane -p -t tui >"$TMP/pane" 2>/dev/null
        if grep -Eq -- "$2" "$TMP/pane"; then
            ok "$1"
            return 0
        fi
        ((SECONDS < deadline)) || break
        sleep 0.05
    done
    not_ok "$1: the pane never showed /$2/"
    sed 's/^/  | /' "$TMP/pane"
    return 1
}

# mouse_is NAME 0|1: whether the program in the pane asks for mouse reports (tmux's flag).
mouse_is() {
    local got
    got=$("${T[@]}" display -p -t tui '#{mouse_any_flag}')
    if [ "$got" = "$2" ]; then ok "$1"; else not_ok "$1: mouse_any_flag $got, expected $2"; fi
}

"${T[@]}" new-session -d -s tui -x 100 -y 30 \
    "printf 'before dllm-tui\n'; env LANG=C.UTF-8 TERM=xterm-256color \
     XDG_STATE_HOME='$TMP/state' '$TUI' -m '$MODEL' --max-tokens 256 --steps 256 \
     --no-early-stop; echo \"exit status \$?\"; sleep 60"
# The server stays when its only session is killed: a new-session sent while it was still
# shutting down failed with "server exited unexpectedly" (seen once, under TSan).
"${T[@]}" set -s exit-empty off
wait_for "starts" '─ message · Enter sends'
"${T[@]}" send-keys -t tui -l "hello tmux"
"${T[@]}" send-keys -t tui Enter
wait_for "the canvas shows masks mid-generation" '─ answer · step [0-9]+ of 256 · [0-9]+ masks left'
"${T[@]}" send-keys -t tui Escape
wait_for "Esc cancels, keeping the partial answer" '^stopped after [0-9]+ steps?: the partial answer is kept'
wait_for "the status line says cancelled" ' · cancelled *$'
"${T[@]}" send-keys -t tui -l "second"
"${T[@]}" send-keys -t tui Enter
wait_for "a second answer completes" '^dllm · 256 steps' $WHOLE_RUN
"${T[@]}" send-keys -t tui -l "line one"
"${T[@]}" send-keys -t tui M-Enter
"${T[@]}" send-keys -t tui -l "line two"
wait_for "Alt+Enter makes a second line" '^  line two'
"${T[@]}" set-buffer "pasted
text"
"${T[@]}" paste-buffer -p -t tui
wait_for "a bracketed paste stays in the input" '^  text'
"${T[@]}" resize-window -t tui -x 60 -y 20
wait_for "resize relayouts to 60 columns" '^─ conversation ─{45}$'
wait_for "at 60 columns the status line keeps the device and the state" ' · cpu · .*idle *$'
"${T[@]}" send-keys -t tui F1
wait_for "F1 shows the help" '^─ help · '
"${T[@]}" send-keys -t tui Escape
wait_for "Esc closes the help" '^─ conversation '
"${T[@]}" send-keys -t tui C-c C-c
wait_for "a second Ctrl+C quits with status 0" '^exit status 0$'
wait_for "the terminal is restored" '^before dllm-tui$'

# A terminal dllm-tui cannot draw on is refused before the model loads: with a model path that
# does not exist, the error is the terminal's (it was the model's, seconds of loading later).
for term in dumb no-such-terminal; do
    "${T[@]}" kill-session -t tui
    "${T[@]}" new-session -d -s tui -x 100 -y 30 \
        "env TERM=$term '$TUI' -m '$TMP/none.gguf'; echo \"exit status \$?\"; sleep 60"
    wait_for "TERM=$term is refused first" "TERM=$term (cannot move the cursor|is not in the terminfo)"
    wait_for "TERM=$term exits 1" '^exit status 1$'
done

# Settings that cannot run are refused before the weights are prepared (defect 8: they were
# refused after "preparing the weights 100%").
"${T[@]}" kill-session -t tui
"${T[@]}" new-session -d -s tui -x 100 -y 30 \
    "env TERM=xterm-256color '$TUI' -m '$MODEL' --steps 7 --max-tokens 64 --block-length 32; \
     echo \"exit status \$?\"; sleep 60"
wait_for "bad steps are a usage error" '^exit status 2$'
if grep -q "steps 7 is not a multiple" "$TMP/pane" && ! grep -q "preparing the weights" "$TMP/pane"
then ok "refused before the weights are prepared"
else not_ok "refused after preparing the weights"; sed 's/^/  | /' "$TMP/pane"; fi
# dllm run --show-canvas on a terminal redraws the canvas each step, masks as light shades.
"${T[@]}" kill-session -t tui
"${T[@]}" new-session -d -s tui -x 100 -y 30 \
    "env TERM=xterm-256color '$DLLM_BIN/dllm' run -m '$MODEL' -p hi --max-tokens 256 \
     --steps 256 --no-early-stop --show-canvas; echo \"exit status \$?\"; sleep 60"
wait_for "--show-canvas draws the step and the masks" '^step [0-9]+ of 256, [0-9]+ masks left'
# polled too: a capture can fall between the step line and the canvas drawn after it (seen
# once on a loaded machine)
wait_for "masks drawn as ░" '░'
wait_for "--show-canvas ends with the answer" '^exit status 0$' $WHOLE_RUN
# Ctrl+Z in an interactive shell: dllm-tui stops with the terminal restored (it was ignored,
# and the shell's fg then went out as a message); fg brings the screen back, fg is no message.
"${T[@]}" kill-session -t tui
"${T[@]}" new-session -d -s tui -x 100 -y 30 "env PS1='shell> ' bash --norc --noprofile -i"
wait_for "an interactive shell" '^shell>'
"${T[@]}" send-keys -t tui -l "env LANG=C.UTF-8 TERM=xterm-256color XDG_STATE_HOME='$TMP/state' '$TUI' -m '$MODEL'"
"${T[@]}" send-keys -t tui Enter
wait_for "dllm-tui starts in the shell" '─ message · Enter sends'
mouse_is "the chat asks for the mouse wheel" 1
"${T[@]}" send-keys -t tui C-z
wait_for "Ctrl+Z stops it and restores the terminal" 'Stopped'
mouse_is "... the mouse back to the terminal" 0
"${T[@]}" send-keys -t tui -l "fg"
"${T[@]}" send-keys -t tui Enter
wait_for "fg brings the screen back" '─ message · Enter sends'
mouse_is "... and the mouse wheel" 1
if grep -q '^  fg$' "$TMP/pane"; then not_ok "fg went out as a message"; else ok "fg is no message"; fi
"${T[@]}" send-keys -t tui C-c C-c
wait_for "quits back to the shell" '^shell> ?$'
mouse_is "quitting gives the mouse back" 0
# The mouse wheel (an xterm SGR report, as the terminal sends it) scrolls the conversation 3
# rows a notch, whatever pane has the focus; F4 hands the mouse to the terminal and takes it
# back; --no-mouse leaves it to the terminal from the start.
"${T[@]}" kill-session -t tui
"${T[@]}" new-session -d -s tui -x 80 -y 24 \
    "env LANG=C.UTF-8 TERM=xterm-256color XDG_STATE_HOME='$TMP/state' '$TUI' -m '$MODEL' \
     --max-tokens 64 --steps 4; sleep 60"
wait_for "starts for the wheel" '─ message · Enter sends'
for i in 1 2 3 4; do
    "${T[@]}" send-keys -t tui -l "question $i"
    "${T[@]}" send-keys -t tui Enter
    wait_for "question $i sent" "^  question $i *\$"
    wait_for "answer $i made" ' · idle *$' # shown with the question only once it is answered
done
"${T[@]}" send-keys -t tui -l $'\e[<64;10;5M'
wait_for "a notch up scrolls the conversation 3 rows" '─ conversation · 3 more rows below'
"${T[@]}" send-keys -t tui -l $'\e[<65;10;5M'
wait_for "a notch down scrolls back to the bottom" '─ conversation ──'
"${T[@]}" send-keys -t tui F4
wait_for "F4 turns the wheel off" '^mouse wheel off: the terminal selects text'
mouse_is "... giving the mouse to the terminal" 0
"${T[@]}" send-keys -t tui F4
wait_for "F4 turns it on again" '^mouse wheel on'
mouse_is "... taking the mouse back" 1
"${T[@]}" kill-session -t tui
"${T[@]}" new-session -d -s tui -x 80 -y 24 \
    "env LANG=C.UTF-8 TERM=xterm-256color XDG_STATE_HOME='$TMP/state' '$TUI' -m '$MODEL' --no-mouse; sleep 60"
wait_for "starts with --no-mouse" '─ message · Enter sends'
mouse_is "--no-mouse leaves the mouse to the terminal" 0
# Ctrl+O hands the terminal to the editor (here a script that asks for a line on the terminal
# and appends it to the file) and takes it back, the edited text in the input.
printf '#!/bin/sh\nprintf "editing %%s> " "$(basename "$1")"\nread -r line\nprintf "%%s\\n" "$line" >>"$1"\n' \
    >"$TMP/ask.sh"
chmod +x "$TMP/ask.sh"
"${T[@]}" kill-session -t tui
"${T[@]}" new-session -d -s tui -x 100 -y 30 \
    "env LANG=C.UTF-8 TERM=xterm-256color VISUAL='$TMP/ask.sh' XDG_STATE_HOME='$TMP/state' '$TUI' -m '$MODEL'; \
     echo \"exit status \$?\"; sleep 60"
wait_for "starts for the editor" '─ message · Enter sends'
"${T[@]}" send-keys -t tui -l "first line"
"${T[@]}" send-keys -t tui C-o
wait_for "Ctrl+O hands the terminal to the editor" '^editing dllm-message-[A-Za-z0-9]+\.md>'
"${T[@]}" send-keys -t tui -l "typed in the editor"
"${T[@]}" send-keys -t tui Enter
wait_for "the chat comes back with the edited input" '^  typed in the editor *$'
wait_for "... the first line kept" '^> first line *$'
"${T[@]}" send-keys -t tui C-c C-c
wait_for "quits after the editor" '^exit status 0$'
# NO_COLOR in a real terminal: attributes only, no colour escapes; without it, colours.
for nc in 1 ""; do
    "${T[@]}" kill-session -t tui
    "${T[@]}" new-session -d -s tui -x 80 -y 24 \
        "env NO_COLOR=$nc LANG=C.UTF-8 TERM=xterm-256color XDG_STATE_HOME='$TMP/state' '$TUI' -m '$MODEL'; sleep 60"
    wait_for "NO_COLOR='$nc': starts" '─ message · Enter sends'
    "${T[@]}" capture-pane -e -p -t tui >"$TMP/sgr"
    if grep -Eq $'\e\\[([0-9;]*;)?(3[0-7]|4[0-7]|38;5;[0-9]+)[;m]' "$TMP/sgr"; then colours=yes; else colours=no; fi
    want=$([ -n "$nc" ] && echo no || echo yes)
    if [ "$colours" = "$want" ]; then ok "NO_COLOR='$nc': colour escapes: $colours"
    else not_ok "NO_COLOR='$nc': colour escapes: $colours, expected $want"; fi
    grep -q $'\e\\[' "$TMP/sgr" && ok "NO_COLOR='$nc': attributes still drawn" || not_ok "no attributes at all"
done
# /copy through tmux with set-clipboard on: the OSC 52 request becomes tmux's buffer, which
# holds the answer as written (compared with /save's copy of it).
"${T[@]}" kill-session -t tui
"${T[@]}" new-session -d -s tui -x 100 -y 30 \
    "env LANG=C.UTF-8 TERM=xterm-256color XDG_STATE_HOME='$TMP/state' '$TUI' -m '$MODEL' \
     --max-tokens 16 --steps 16 --no-early-stop; sleep 60"
"${T[@]}" set -g set-clipboard on
wait_for "starts for /copy" '─ message · Enter sends'
"${T[@]}" send-keys -t tui -l "hello"
"${T[@]}" send-keys -t tui Enter
wait_for "an answer to copy" '^dllm · 16 steps'
"${T[@]}" send-keys -t tui -l "/copy"
"${T[@]}" send-keys -t tui Enter
wait_for "/copy says so" 'copied the last answer \([0-9]+ bytes\)'
"${T[@]}" send-keys -t tui -l "/save $TMP/copy.md"
"${T[@]}" send-keys -t tui Enter
wait_for "/save for the comparison" 'saved the conversation'
"${T[@]}" show-buffer >"$TMP/clip" 2>/dev/null
if python3 - "$TMP/copy.md" "$TMP/clip" <<'PY'
import sys
md = open(sys.argv[1], "rb").read()
answer = md.split(b"## dllm\n\n", 1)[1].split(b"\n\n> Settings:", 1)[0]
sys.exit(0 if open(sys.argv[2], "rb").read() == answer else 1)
PY
then ok "tmux's buffer holds the answer"; else not_ok "the clipboard differs from the answer"
    od -c "$TMP/clip" | head -5; fi
# /set and a typed slider value, /save's JSON lines and /load, in the real terminal.
"${T[@]}" send-keys -t tui -l "/set steps 8"
"${T[@]}" send-keys -t tui Enter
wait_for "/set steps 8 on the slider bar" '^steps 8  max 16'
"${T[@]}" send-keys -t tui -l "/set temp 3"
"${T[@]}" send-keys -t tui Enter
wait_for "/set refuses naming the range" '^temp takes a number from 0 to 2, not .3.'
"${T[@]}" send-keys -t tui Tab Tab
"${T[@]}" send-keys -t tui -l "4"
wait_for "a typed value on the slider" '◂ steps 4_ ▸'
"${T[@]}" send-keys -t tui Enter
wait_for "Enter applies it" '^steps 4$'
"${T[@]}" send-keys -t tui -l "/clear"
"${T[@]}" send-keys -t tui Enter
wait_for "cleared" '^conversation cleared'
"${T[@]}" send-keys -t tui -l "/load $TMP/copy.md.jsonl"
"${T[@]}" send-keys -t tui Enter
wait_for "/load brings the saved answer back" '^loaded 1 message and 1 answer from '
wait_for "the loaded answer on screen" '^dllm · 16 steps'
"${T[@]}" send-keys -t tui C-f
wait_for "Ctrl+F on an empty input starts /find" '^> /find'
"${T[@]}" send-keys -t tui -l "16 steps"
"${T[@]}" send-keys -t tui Enter
wait_for "/find shows the match" "^match 1 of 1 for '16 steps'"
"${T[@]}" send-keys -t tui Escape
"${T[@]}" resize-window -t tui -x 60 -y 20
wait_for "at 60 columns the slider bar wraps, cache on its second row" '^cache none'
finish
