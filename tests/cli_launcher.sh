#!/bin/sh
# The checkout launcher ./dllm: a missing dependency in a non-interactive run without --yes
# installs nothing, prints the exact command and exits 3; bad words and flags exit 2.
. "${DLLM_TESTS_SRC:-$(dirname "$0")}/lib.sh"
LAUNCHER="$DLLM_TESTS_SRC/../dllm"

# A PATH that has every program of this machine except tmux, one of the dependencies.
mkdir "$TMP/bin"
for d in /usr/local/bin /usr/bin /bin; do
    for f in "$d"/*; do
        name=${f##*/}
        [ "$name" = tmux ] || [ -e "$TMP/bin/$name" ] || ln -s "$f" "$TMP/bin/$name"
    done
done
PATH="$TMP/bin" run "setup with a missing dependency, not a terminal, no --yes" 3 \
    env DLLM_BUILD_DIR="$TMP/build" bash "$LAUNCHER" setup --no-model </dev/null
expect_err "names what is missing" "missing build dependencies: .*tmux"
expect_err "prints the exact command" "apt-get install -y .*tmux|dnf install -y .*tmux"
if [ -e "$TMP/build" ]; then not_ok "nothing is built"; else ok "nothing is built"; fi
PATH="$TMP/bin" run "chat on first use asks the same way" 3 \
    env DLLM_BUILD_DIR="$TMP/build" bash "$LAUNCHER" chat </dev/null
run "unknown setup flag" 2 bash "$LAUNCHER" setup --bogus
run "test takes no arguments" 2 bash "$LAUNCHER" test extra
run "no word" 2 bash "$LAUNCHER"
run "help" 0 bash "$LAUNCHER" --help
expect_out "documents exit 3" "exits 3"
finish
