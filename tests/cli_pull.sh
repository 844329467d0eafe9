#!/bin/sh
# dllm pull, ls and rm against the fake hub (tests/fake_hub.py) on 127.0.0.1: output on a
# pipe, exit codes, offline use, tokens, Ctrl+C then resume, a full disk (the ENOSPC shim, and a
# real 16 MB tmpfs where one can be mounted), SIGKILL then resume, four pulls of one file at
# once, and usage errors.
. "${DLLM_TESTS_SRC:-$(dirname "$0")}/lib.sh"
start_fake_hub

# sha FILE: the SHA-256 the fake hub gives for a file of test/tiny-GGUF.
sha() {
    ctl "/_files?repo=test/tiny-GGUF" | python3 -c '
import json, sys
print([f["sha256"] for f in json.load(sys.stdin)["files"] if f["path"] == sys.argv[1]][0])' "$1"
}

run "pull the default quant" 0 "$DLLM" pull test/tiny-GGUF
expect_out "prints the snapshot path" "^$CACHE/models--test--tiny-GGUF/snapshots/[0-9a-f]{40}/tiny.Q4_K_M.gguf\$"
expect_err "log line when done" '^dllm: tiny.Q4_K_M.gguf: verified, 262.1 kB$'
Q4=$(cat "$TMP/out")
if [ "$(sha256sum "$Q4" | cut -d' ' -f1)" = "$(sha tiny.Q4_K_M.gguf)" ]; then ok "content matches the hub's SHA-256"; else not_ok "content hash"; fi
if [ -L "$Q4" ] && readlink "$Q4" | grep -q '^\.\./\.\./blobs/[0-9a-f]\{64\}$'; then ok "relative link into blobs/"; else not_ok "snapshot link: $(readlink "$Q4")"; fi

run "pull again" 0 "$DLLM" pull test/tiny-GGUF:Q4_K_M
expect_err "already cached" 'test/tiny-GGUF:tiny.Q4_K_M.gguf is in the cache'
expect_out "same path" "^$Q4\$"

run "ls" 0 "$DLLM" ls
expect_out "ls header" '^MODEL +SIZE +STATE +COMMIT$'
expect_out "ls entry" '^test/tiny-GGUF:tiny.Q4_K_M.gguf +0.3 MB +verified +[0-9a-f]{7}$'
run "ls --paths" 0 "$DLLM" ls --paths
expect_out "ls path" "verified +$Q4\$"

ctl "/_fault?where=cdn&kind=drop&times=1" >/dev/null
run "pull through a dropped connection" 0 "$DLLM" pull test/tiny-GGUF:Q8_0
expect_err "retry said" '^dllm: tiny.Q8_0.gguf: the connection closed at byte 65536 of 131072; retrying in 0.0 s$'

run "pull a split model" 0 "$DLLM" pull test/split-GGUF
expect_out "part 1 path" 'big-Q4_K_M-00001-of-00003.gguf$'
if [ "$(ls "$CACHE"/models--test--split-GGUF/snapshots/*/big-Q4_K_M-0000[123]-of-00003.gguf | wc -l)" -eq 3 ]
then ok "every part linked"; else not_ok "not every part in the snapshot"; fi
run "ls a split model" 0 "$DLLM" ls
if [ "$(grep -c '^test/split-GGUF:' "$TMP/out")" -eq 1 ]; then ok "one line for its parts"
else not_ok "a line per part"; fi
expect_out "named by part 1, verified" '^test/split-GGUF:big-Q4_K_M-00001-of-00003.gguf +0\.[12] MB +verified '
mv "$CACHE"/models--test--split-GGUF/snapshots/*/big-Q4_K_M-00003-of-00003.gguf "$TMP/part3"
run "ls, a part gone" 0 "$DLLM" ls
expect_out "broken" '^test/split-GGUF:big-Q4_K_M-00001-of-00003.gguf .* broken '
mv "$TMP/part3" "$(dirname "$(ls "$CACHE"/models--test--split-GGUF/snapshots/*/big-Q4_K_M-00001-of-00003.gguf)")/"

run "unknown quant" 1 "$DLLM" pull test/tiny-GGUF:Q6_K
expect_err "lists the GGUF files" '^dllm: error: test/tiny-GGUF has no GGUF file for quant Q6_K; its GGUF files: .*tiny.Q4_K_M.gguf'
expect_err_lines "one error line" 1
run "a name with control characters from the hub" 1 "$DLLM" pull test/tiny-GGUF:IQ4_XS
expect_err "not offered" 'has no GGUF file for quant IQ4_XS'
if LC_ALL=C grep -q '[[:cntrl:]]' "$TMP/out" "$TMP/err"; then not_ok "a control character printed"; else ok "no control character printed"; fi
run "unknown repo" 1 "$DLLM" pull nobody/nothing
expect_err "repo not found" '^dllm: error: nobody/nothing: no such repo on http://127.0.0.1'
run "default model" 1 "$DLLM" pull -q
expect_err "default model named" 'mradermacher/LLaDA-8B-Instruct-GGUF: no such repo'
# A revision that cannot name a branch, tag or commit is a usage error, asking no server.
for rev in "" "../x" "a//b"; do
    ctl /_reset >/dev/null
    run "--revision '$rev'" 2 "$DLLM" pull --revision "$rev" test/tiny-GGUF
    expect_err "names it" "^dllm pull: invalid revision '$rev': a branch, tag or commit"
    if ! ctl /_log | grep -q '"path": "/api'; then ok "no request for '$rev'"; else not_ok "requests for '$rev'"; fi
done

run "offline, not cached" 1 "$DLLM" pull --offline test/q8-only
expect_err "names the pull command" "run 'dllm pull test/q8-only' while online"
HF_HUB_OFFLINE=1 HF_ENDPOINT=http://127.0.0.1:9 run "HF_HUB_OFFLINE=1 from the cache" 0 "$DLLM" pull test/tiny-GGUF
expect_out "offline path" "^$Q4\$"
HF_ENDPOINT=http://127.0.0.1:1 run "hub unreachable" 0 "$DLLM" pull test/tiny-GGUF
expect_err "warns and uses the cache" '^dllm: warning: the hub cannot be reached .*; using the cached snapshot [0-9a-f]{7}$'

run "gated without a token" 1 "$DLLM" pull test/gated
expect_err "says what to do" 'HTTP 401 .*accept its licence at .* and set HF_TOKEN'
HF_TOKEN=hf_wrong_secret_42 run "gated with a wrong token" 1 "$DLLM" pull test/gated
if grep -q hf_wrong_secret_42 "$TMP/out" "$TMP/err"; then not_ok "the token was printed"; else ok "the token is never printed"; fi
HF_TOKEN="hf_bad secret_7" run "a token with a space" 1 "$DLLM" pull test/gated
expect_err "says what is wrong and where" '^dllm: error: test/gated: the access token \(HF_TOKEN, HUGGING_FACE_HUB_TOKEN or the token file\) has a space or control character in it: set it to the token alone$'
if grep -q secret_7 "$TMP/out" "$TMP/err"; then not_ok "the bad token was printed"; else ok "the bad token is not printed"; fi
HF_TOKEN=hf_test_token_123 run "gated with the token" 0 "$DLLM" pull -q test/gated
if ctl /_log | python3 -c '
import json, sys
log = json.load(sys.stdin)
cdn = [e for e in log if e["path"].startswith("/cdn/")]
assert cdn and all(e["authorization"] is None and e["host"].startswith("localhost:") for e in cdn)
assert any(e["authorization"] == "Bearer hf_test_token_123" for e in log)'; then
    ok "token sent to the hub, never to the CDN"; else not_ok "token and CDN"; fi

# pull_interrupted SIGNAL DIR: pulls tiny-F16.gguf from a trickling CDN into the cache DIR
# and sends the pull SIGNAL once its partial download exists; the pull's exit status.
pull_interrupted() {
    local sig=$1 dir=$2 pid i=0
    ctl "/_reset" >/dev/null
    ctl "/_fault?where=cdn&kind=trickle&times=1" >/dev/null
    HF_HUB_CACHE=$dir "$DLLM" pull test/tiny-GGUF:F16 >"$TMP/out" 2>"$TMP/err" &
    pid=$!
    while ! ls "$dir"/models--test--tiny-GGUF/blobs/*.incomplete >/dev/null 2>&1 && [ $i -lt 250 ]; do
        sleep 0.02; i=$((i + 1))
    done
    sleep 0.1
    kill -"$sig" $pid
    wait $pid
}

# Ctrl+C during a slow download leaves a partial file that the next run resumes.
pull_interrupted INT "$CACHE"
st=$?
if [ $st -eq 1 ]; then ok "Ctrl+C exits 1"; else not_ok "Ctrl+C: exit $st"; fi
expect_err "interrupted message" 'interrupted; run the same command again to resume$'
if ls "$CACHE"/models--test--tiny-GGUF/blobs/*.incomplete >/dev/null 2>&1; then ok "partial kept"; else not_ok "no partial file"; fi
run "resume after Ctrl+C" 0 "$DLLM" pull test/tiny-GGUF:F16
expect_err "checks the partial first" 'tiny-F16.gguf: checking the SHA-256'
if ctl /_log | grep -q '"range": "bytes=[1-9]'; then ok "resumed with Range"; else not_ok "no Range request"; fi

# cache_valid DIR: every snapshot entry is a link to a blob whose content hashes to its name
# (SHA-256, or the git blob SHA-1), and no partial download is linked.
cache_valid() {
    python3 - "$1" <<'PY'
import hashlib, os, sys
bad = []
for top, dirs, files in os.walk(sys.argv[1]):
    if "/snapshots" not in top:
        continue
    for name in files:
        path = os.path.join(top, name)
        blob = os.path.realpath(path)
        etag = os.path.basename(blob)
        data = open(blob, "rb").read()
        sha1 = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        if not os.path.islink(path) or "/blobs/" not in blob or etag not in (hashlib.sha256(data).hexdigest(), sha1):
            bad.append(path)
sys.exit("unverified: " + " ".join(bad) if bad else 0)
PY
}

# A full disk, without privileges: tests/enospc.c preloaded makes writes to files fail with
# ENOSPC after DLLM_ENOSPC_AFTER bytes and statvfs report that much space (never skipped).
SHIM=$(cd "$(dirname "$DLLM")/.." && pwd)/tests/.libs/libenospc.so
if [ ! -f "$SHIM" ]; then not_ok "the ENOSPC shim $SHIM is not built"; fi
FULL=$TMP/full
# enospc AFTER REPORT COMMAND...: runs COMMAND on the cache $FULL under the shim.
enospc() {
    local after=$1 report=$2
    shift 2
    env DLLM_ENOSPC_AFTER="$after" DLLM_ENOSPC_REPORT="$report" HF_HUB_CACHE="$FULL" \
        LD_PRELOAD="$SHIM" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" "$@"
}
run "a disk with 100 kB free" 1 enospc 100000 100000 "$DLLM" pull test/tiny-GGUF:Q8_0
expect_err "says what is short" '^dllm: error: test/tiny-GGUF:Q8_0: not enough free space for tiny.Q8_0.gguf: it needs 0.1 MB more, .* has 0.1 MB free; free some space or point HF_HUB_CACHE at another disk$'
if cache_valid "$FULL"; then ok "cache valid after the space check"; else not_ok "cache invalid after the space check"; fi
ctl "/_reset" >/dev/null
run "the disk fills mid-file" 1 enospc 100000 100000000 "$DLLM" pull test/tiny-GGUF:Q8_0
expect_err "names the full disk" "^dllm: error: test/tiny-GGUF:Q8_0: the disk holding $FULL is full \\(No space left on device\\): free some space; the partial download is kept and the next attempt resumes it\$"
if cache_valid "$FULL" && ! ls "$FULL"/models--test--tiny-GGUF/snapshots/*/tiny.Q8_0.gguf >/dev/null 2>&1; then
    ok "nothing unverified linked"; else not_ok "a link after ENOSPC"; fi
PART=$(ls "$FULL"/models--test--tiny-GGUF/blobs/*.incomplete 2>/dev/null)
if [ -n "$PART" ] && [ "$(wc -c <"$PART")" -gt 0 ] && [ "$(wc -c <"$PART")" -le 100000 ]; then
    ok "the partial download is kept ($(wc -c <"$PART") bytes)"; else not_ok "partial: '$PART'"; fi
run "resumed with space" 0 env HF_HUB_CACHE="$FULL" "$DLLM" pull test/tiny-GGUF:Q8_0
if ctl /_log | grep -q '"range": "bytes=[1-9]'; then ok "resumed with Range"; else not_ok "no Range request after ENOSPC"; fi
if [ "$(sha256sum "$(cat "$TMP/out")" | cut -d' ' -f1)" = "$(sha tiny.Q8_0.gguf)" ] && cache_valid "$FULL"; then
    ok "resumed file verified, cache valid"; else not_ok "resumed file or cache after ENOSPC"; fi

# A full disk on a real file system: a 16 MB tmpfs in a private mount namespace (unshare -m,
# or -rm without the privilege). A filler file leaves 100 kB for a 128 kB file; then another
# file takes the rest while a download runs; then, with space again, the download resumes.
TMPFS=$TMP/tmpfs
TMPFS_OUT=$TMP/tmpfs-out
mkdir -p "$TMPFS" "$TMPFS_OUT"
cat >"$TMP/tmpfs.sh" <<'SH'
mount -t tmpfs -o size=16m tmpfs "$TMPFS" || exit 3
blobs=$TMPFS/hub/models--test--tiny-GGUF/blobs
head -c $((16 * 1024 * 1024 - 100 * 1024)) /dev/zero >"$TMPFS/filler" 2>/dev/null
HF_HUB_CACHE=$TMPFS/hub "$DLLM" pull test/tiny-GGUF:Q8_0 >"$TMPFS_OUT/out1" 2>"$TMPFS_OUT/err1"
echo $? >"$TMPFS_OUT/rc1"
rm -f "$TMPFS/filler"
HF_HUB_CACHE=$TMPFS/hub "$DLLM" pull test/tiny-GGUF:F16 >"$TMPFS_OUT/out2" 2>"$TMPFS_OUT/err2" &
pid=$! i=0
until [ "$(cat "$blobs"/*.incomplete 2>/dev/null | wc -c)" -gt 0 ] || [ $i -ge 250 ]; do
    sleep 0.02; i=$((i + 1))
done
head -c $((16 * 1024 * 1024)) /dev/zero >"$TMPFS/filler" 2>/dev/null
wait $pid
echo $? >"$TMPFS_OUT/rc2"
cat "$blobs"/*.incomplete 2>/dev/null | wc -c >"$TMPFS_OUT/partial2"
ls "$TMPFS"/hub/models--test--tiny-GGUF/snapshots/*/tiny-F16.gguf >"$TMPFS_OUT/linked2" 2>/dev/null
rm -f "$TMPFS/filler"
HF_HUB_CACHE=$TMPFS/hub "$DLLM" pull test/tiny-GGUF:F16 >"$TMPFS_OUT/out3" 2>"$TMPFS_OUT/err3"
echo $? >"$TMPFS_OUT/rc3"
sha256sum "$(cat "$TMPFS_OUT/out3")" | cut -d' ' -f1 >"$TMPFS_OUT/sha3"
cp -a "$TMPFS/hub" "$TMPFS_OUT/cache"
umount "$TMPFS"
SH
NS=
for ns in "unshare -m" "unshare -rm"; do
    if why=$($ns sh -c 'mount -t tmpfs -o size=16m tmpfs "$1"' sh "$TMPFS" 2>&1); then NS=$ns; break; fi
done
if [ -n "$NS" ]; then
    ctl "/_reset" >/dev/null
    ctl "/_fault?where=cdn&kind=trickle&times=1&file=F16" >/dev/null
    TMPFS=$TMPFS TMPFS_OUT=$TMPFS_OUT DLLM=$DLLM $NS sh "$TMP/tmpfs.sh"
    if [ "$(cat "$TMPFS_OUT/rc1")" = 1 ] && grep -q 'not enough free space for tiny.Q8_0.gguf' "$TMPFS_OUT/err1"; then
        ok "a 16 MB tmpfs with 100 kB free: the 128 kB file is refused"; else not_ok "tmpfs space check: $(cat "$TMPFS_OUT/err1")"; fi
    if [ "$(cat "$TMPFS_OUT/rc2")" = 1 ] && grep -q 'is full (No space left on device)' "$TMPFS_OUT/err2" &&
        [ "$(cat "$TMPFS_OUT/partial2")" -gt 0 ] && [ ! -s "$TMPFS_OUT/linked2" ]; then
        ok "the tmpfs fills mid-file: named, partial kept ($(cat "$TMPFS_OUT/partial2") bytes), nothing linked"
    else not_ok "tmpfs full mid-file: $(cat "$TMPFS_OUT/err2")"; fi
    if [ "$(cat "$TMPFS_OUT/rc3")" = 0 ] && [ "$(cat "$TMPFS_OUT/sha3")" = "$(sha tiny-F16.gguf)" ] &&
        cache_valid "$TMPFS_OUT/cache" && ctl /_log | grep -q '"range": "bytes=[1-9]'; then
        ok "resumed on the tmpfs with Range, verified, cache valid"; else not_ok "tmpfs resume: $(cat "$TMPFS_OUT/err3")"; fi
elif [ "${CI:-}" = true ]; then
    ok "a full disk: the ENOSPC shim cases above stand for the tmpfs, which cannot be mounted here ($why)"
else
    echo "SKIP: a full 16 MB tmpfs: cannot mount one here ($why); the ENOSPC shim cases cover the full disk"
fi

# SIGKILL mid-file (no chance to clean up): the partial stays, unlinked; the next pull checks
# it and resumes.
KILLED=$TMP/killed
pull_interrupted KILL "$KILLED"
if [ $? -eq 137 ] && cache_valid "$KILLED" && ls "$KILLED"/models--test--tiny-GGUF/blobs/*.incomplete >/dev/null 2>&1 &&
    ! ls "$KILLED"/models--test--tiny-GGUF/snapshots/*/tiny-F16.gguf >/dev/null 2>&1; then
    ok "SIGKILL mid-file: partial kept, nothing linked"; else not_ok "after SIGKILL"; fi
run "resume after SIGKILL" 0 env HF_HUB_CACHE="$KILLED" "$DLLM" pull test/tiny-GGUF:F16
expect_err "checks the killed partial" 'tiny-F16.gguf: checking the SHA-256'
if ctl /_log | grep -q '"range": "bytes=[1-9]' && cache_valid "$KILLED" &&
    [ "$(sha256sum "$(cat "$TMP/out")" | cut -d' ' -f1)" = "$(sha tiny-F16.gguf)" ]; then
    ok "resumed with Range, verified"; else not_ok "resume after SIGKILL"; fi

# Four processes pulling one file at once: one downloads, the others wait for its lock and use
# its blob; one GET of the content in all.
FOUR=$TMP/four
ctl "/_reset" >/dev/null
ctl "/_fault?where=cdn&kind=trickle&times=1" >/dev/null
for k in 1 2 3 4; do
    HF_HUB_CACHE=$FOUR "$DLLM" pull test/tiny-GGUF:F16 >"$TMP/out$k" 2>"$TMP/err$k" &
    eval "P$k=\$!"
done
st=0
for k in 1 2 3 4; do eval "wait \$P$k" || st=1; done
if [ $st -eq 0 ] && [ "$(sort -u "$TMP/out1" "$TMP/out2" "$TMP/out3" "$TMP/out4" | wc -l)" -eq 1 ]; then
    ok "four pulls at once all succeed with one path"; else not_ok "four pulls: $(cat "$TMP/err1" "$TMP/err2" "$TMP/err3" "$TMP/err4" | grep error)"; fi
if [ "$(ctl /_log | grep -o '"path": "/cdn/' | wc -l)" -eq 1 ] && cache_valid "$FOUR"; then
    ok "one download for four pulls, cache valid"; else not_ok "four pulls: $(ctl /_log | grep -o '"path": "/cdn/' | wc -l) downloads"; fi

run "rm a quant" 0 "$DLLM" rm test/tiny-GGUF:Q8_0
expect_out "rm summary" '^removed test/tiny-GGUF:Q8_0: 1 file, 0.1 MB freed$'
run "ls after rm" 0 "$DLLM" ls
if grep -q Q8_0 "$TMP/out"; then not_ok "Q8_0 still listed"; else ok "Q8_0 gone"; fi
run "rm a repo" 0 "$DLLM" rm test/split-GGUF
run "rm again" 1 "$DLLM" rm test/split-GGUF
expect_err "not cached" '^dllm: error: test/split-GGUF is not in the cache'

run "pull a path" 2 "$DLLM" pull ./x.gguf
run "pull a bad repo id" 2 "$DLLM" pull a/b/c
expect_err "repo id message" 'invalid hub repo id'
run "pull two models" 2 "$DLLM" pull a/b c/d
run "pull unknown flag" 2 "$DLLM" pull --bogus
run "rm without a model" 2 "$DLLM" rm
run "ls with an argument" 2 "$DLLM" ls extra
run "pull --help" 0 "$DLLM" pull --help
expect_out "pull usage" '^usage: dllm pull'
run "dllm --help lists pull" 0 "$DLLM" --help
expect_out "command list" '^  pull '
finish
