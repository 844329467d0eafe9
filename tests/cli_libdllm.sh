#!/bin/sh
# libdllm as an embedder links it: a program linked against it alone runs a forward pass whose
# argmax rows match those of the float64 reference logits; the shared library needs none of
# the hub's libraries (libcurl, libssl, libcrypto, jansson) and exports only dllm_* symbols,
# none of them the tests' allocation-failure hook; its matrix kernels hold their prefetches.
. "${DLLM_TESTS_SRC:-$(dirname "$0")}/lib.sh"
need_fixtures
BUILD=$(cd "$(dirname "$DLLM")/.." && pwd)
LIB=$BUILD/engine/.libs/libdllm.so
ALONE=$BUILD/tests/libdllm_alone

CASES=$FIX/logits/llada-tiny-q80.cases.json
IDS=$(python3 -c 'import json,sys; print(",".join(map(str, json.load(open(sys.argv[1]))[0]["ids"])))' "$CASES")
run "a forward pass through libdllm alone" 0 "$ALONE" "$FIX/models/llada-tiny-q80.gguf" "$IDS"
# Random weights make near-ties common: most rows, not all, share the reference's argmax.
python3 - "$TMP/out" "$FIX/logits/llada-tiny-q80.case0.f64ref.f32" 2048 >"$TMP/agree" <<'PY'
import struct, sys
got = list(map(int, open(sys.argv[1]).read().split(",")))
ref = open(sys.argv[2], "rb").read()
V = int(sys.argv[3])
want = []
for r in range(len(got)):
    row = struct.unpack_from("<%df" % V, ref, 4 * V * r)
    want.append(max(range(V), key=row.__getitem__))
print(sum(g == w for g, w in zip(got, want)) / len(got))
PY
if python3 -c "import sys; sys.exit(0 if float(open('$TMP/agree').read()) >= 0.9 else 1)"; then
    ok "argmax agrees with float64 on $(cat "$TMP/agree") of the rows"
else
    not_ok "argmax agreement $(cat "$TMP/agree") below 0.9"
fi
if command -v readelf >/dev/null; then
    # libtool's wrapper script runs the real program from .libs/.
    REAL=$BUILD/tests/.libs/libdllm_alone
    [ -f "$REAL" ] || REAL=$ALONE
    readelf -d "$REAL" | grep NEEDED >"$TMP/needed"
    if grep -q 'libdllm\.so' "$TMP/needed" && ! grep -Eq 'libcurl|libssl|libcrypto|libjansson|libcheck|libdllm-hub' "$TMP/needed"; then
        ok "the program links libdllm alone"
    else not_ok "the program's libraries: $(grep -Eo '\[[^]]*' "$TMP/needed" | tr -d '[' | tr '\n' ' ')"; fi
    readelf -d "$LIB" >"$TMP/dyn"
    if grep -Eq 'NEEDED.*(libcurl|libssl|libcrypto|libjansson)' "$TMP/dyn"; then
        not_ok "libdllm.so needs $(grep -Eo '\[lib(curl|ssl|crypto|jansson)[^]]*' "$TMP/dyn" | tr '\n' ' ')"
    else ok "libdllm.so needs no hub library"; fi
else not_ok "readelf is missing (binutils)"; fi
if command -v nm >/dev/null; then
    nm -D --defined-only "$LIB" | awk '{print $3}' | grep -v '^dllm_' >"$TMP/foreign"
    if [ -s "$TMP/foreign" ]; then not_ok "libdllm.so exports $(head -5 "$TMP/foreign" | tr '\n' ' ')"
    else ok "libdllm.so exports only dllm_* symbols ($(nm -D --defined-only "$LIB" | wc -l))"; fi
    # The allocation-failure hook (tests/torture.h) lives in the tests' copy of the engine only.
    TORTURE=$BUILD/tests/test_torture
    if { nm "$LIB" 2>/dev/null; nm -D "$LIB"; } | grep -q dllm_torture; then
        not_ok "libdllm.so holds the torture hook"
    elif [ -f "$TORTURE" ] && ! nm "$TORTURE" | grep -q ' [Tt] dllm_torture_malloc$'; then
        not_ok "tests/test_torture lacks the hook: the check looks for the wrong name"
    else ok "libdllm.so has no torture hook"; fi
    # A build without the CUDA backend references no CUDA or cuBLAS symbol at all; one with it
    # needs the runtime and cuBLAS but never the driver (libcuda), so it loads without one.
    if "$DLLM" --version | grep -q 'cuda=no'; then
        if nm "$LIB" | grep -Eiq 'cuda|cublas'; then
            not_ok "a build without CUDA has CUDA symbols: $(nm "$LIB" | grep -Ei 'cuda|cublas' | head -3 | tr '\n' ' ')"
        else ok "a build without CUDA has no symbol naming cuda or cublas"; fi
    elif grep -Eq 'NEEDED.*libcuda\.so' "$TMP/dyn" || ! grep -Eq 'NEEDED.*libcudart' "$TMP/dyn"; then
        not_ok "a CUDA build should link libcudart, not libcuda: $(grep NEEDED "$TMP/dyn" | grep -Eo 'libcu[^]]*' | tr '\n' ' ')"
    else ok "a CUDA build links libcudart and libcublas, not the driver"; fi
else not_ok "nm is missing (binutils)"; fi
# The matrix kernels prefetch the weights they pack next: each SIMD variant's rows_kind holds a
# prefetcht0 and a prefetcht1 (GCC 12 once deleted them all, _mm_prefetch being all their loops
# did, and nothing else noticed).
if command -v objdump >/dev/null; then
    objdump -d --no-show-raw-insn "$LIB" | grep -Eo 'prefetcht[01]' | sort | uniq -c >"$TMP/prefetch"
    if [ "$(awk '$2 == "prefetcht0" && $1 >= 3 || $2 == "prefetcht1" && $1 >= 3' "$TMP/prefetch" | wc -l)" -eq 2 ]; then
        ok "the kernels prefetch ($(tr -s ' \n' ' ' <"$TMP/prefetch"))"
    else not_ok "libdllm.so lacks the kernels' prefetches: $(tr -s ' \n' ' ' <"$TMP/prefetch")"; fi
else not_ok "objdump is missing (binutils)"; fi
finish
