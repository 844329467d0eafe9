#!/bin/sh
# Q2_K and Q3_K end to end, which the fixtures' float64 logits do not cover: dllm's logits on
# `dllm synth` files of the Q2_K and Q3_K_M mixes (LLaDA and Dream, every kernel variant this
# CPU runs) against a float64 forward pass written apart from dllm's C code
# (tests/f64_forward.py), each no farther from it than llama.cpp's logits on the same file.
# The reference earns its place first: its decoders give the values of
# tests/golden_kquants.h (from ggml) bit for bit, and on two fixture models (Q4_K, Q5_K, Q6_K,
# biases, both RoPE layouts, grouped-query attention) it gives the fixtures' float64 logits.
. "${DLLM_TESTS_SRC:-$(dirname "$0")}/lib.sh"
need_fixtures
need_python3 "the float64 reference"
SRC=${DLLM_TESTS_SRC:-$(dirname "$0")}
REF="python3 $SRC/f64_forward.py"

run "reference decoders: ggml's Q2_K and Q3_K values" 0 $REF --golden "$SRC/golden_kquants.h"
for m in llada-tiny-q5km dream-tiny-q4km; do
    ids=$(python3 -c 'import json, sys; print(*json.load(open(sys.argv[1]))[0]["ids"], sep=",")' \
        "$FIX/logits/$m.cases.json")
    $REF "$FIX/models/$m.gguf" "$ids" "$TMP/$m.f64"
    run "reference on $m: the fixture's float64 logits" 0 \
        $REF --compare "$TMP/$m.f64" "$FIX/logits/$m.case0.f64ref.f32" 2048 1e-6
done

# The synth files (the same seed and options give the same bytes), their SHA-256, and the
# largest relative L2 distance of llama.cpp's logits from this reference on them over IDS:
# libllama (commit c392e509, built outside this tree, AVX-512) on a copy whose architecture
# is renamed to the autoregressive one with the same tensors (llada -> llama, dream -> qwen2),
# with llama_set_causal_attn(ctx, false), 2026-12-06.
IDS=469,113,336,1078,273,812,1290,786,1286,483,155,146,433,886,992,916,1051,1211,658,226,722,806
IDS=$IDS,1109,1,658,1920,1439,1920,1920,1920,1920,1920,1920,1920,1920,1920,1920,1920,1920,1920
while read -r arch type sha llamacpp; do
    f=$TMP/$arch-$type.gguf
    "$DLLM" synth --arch "$arch" --preset tiny --type "$type" --out "$f" --quiet
    if [ "$(sha256sum "$f" | cut -d' ' -f1)" = "$sha" ]; then
        ok "$arch $type: the file llama.cpp was measured on"
    else
        not_ok "$arch $type: dllm synth wrote other bytes than llama.cpp was measured on: measure again"
        continue
    fi
    $REF "$f" "$IDS" "$TMP/$arch-$type.f64"
    for k in ref avx2 avxvnni avx512; do
        if ! DLLM_KERNELS=$k "$DLLM" logits -m "$f" --tokens "$IDS" --rows all \
            --out "$TMP/got.f32" 2>"$TMP/err"; then
            if grep -q 'which this CPU lacks' "$TMP/err"; then ok "$arch $type $k: not on this CPU"
            else not_ok "$arch $type $k: dllm logits failed"; sed 's/^/  stderr: /' "$TMP/err"; fi
            continue
        fi
        run "$arch $type $k: no farther from float64 than llama.cpp ($llamacpp)" 0 \
            $REF --compare "$TMP/got.f32" "$TMP/$arch-$type.f64" 2048 "$llamacpp"
        sed 's/^/  /' "$TMP/out"
    done
done <<'EOF'
llada Q2_K c1749ded5c5c2be7b259809a524e5a70c70d2b76d9d072bd6527722c7dd3371a 0.02969
llada Q3_K_M 4602dbccceb8b0322807665ac5b45791ef65a63011681e96a91ce5f11fe682f9 0.04000
dream Q2_K 7c2e10ea7635bd9294fe6c8927ad17ba336b910a0bdee9ae31891d0da2f8a9c8 0.02821
dream Q3_K_M b891b7f764f568299cfa21cd016e0a30f7a5e3d371bd90ef730683bc459dc3d3 0.03323
EOF
finish
