#!/bin/sh
# Gathers what tests/gpu/run.sh needs on a device machine into .gpu/ (ignored, at most 60 MiB):
# bin/ (dllm, dllm-tui and kernel_check of a --with-cuda build), lib/ (libdllm, libdllm-hub
# and the shared libraries ldd names that are neither glibc's, the C++ runtime's nor CUDA's:
# the device uses its own CUDA runtime and cuBLAS), a make dist tarball for a fallback build
# there, the commit it was built from, and the fixtures but the realvocab model and the Q8_0
# mixture-of-experts models (the GPU refuses MoE models: one file of each MoE architecture
# proves the refusal); of the logits the cases and the float64 reference, not llama.cpp's
# rows, whose figures the cases hold, nor the tokenizer's or dequant's. Binaries and dllm's
# libraries lose their debug information.
#   tests/gpu/prepare.sh [BUILD_DIR]
# BUILD_DIR (default build-gpu, configured here --with-cuda=yes for CUDA_ARCHS, default 90) must
# be a CUDA build; the size is checked at the end.
set -eu
# A make of its own, even when a make (make check) runs this script: not its jobserver's client.
unset MAKEFLAGS MFLAGS MAKELEVEL
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "${1:-$ROOT/build-gpu}"
BUILD=$(cd "${1:-$ROOT/build-gpu}" && pwd)
BUNDLE=${GPU_BUNDLE:-$ROOT/.gpu}
FIX=${DLLM_FIXTURES:-$ROOT/../shared/fixtures}
MAX_BYTES=$((60 * 1024 * 1024))

if [ ! -f "$BUILD/Makefile" ]; then
    mkdir -p "$BUILD"
    (cd "$BUILD" && "$ROOT/configure" -q --with-cuda=yes CUDA_ARCHS="${CUDA_ARCHS:-90}")
fi
grep -q 'cuda=yes' "$BUILD/config.h" || { echo "prepare.sh: $BUILD is not a --with-cuda build" >&2; exit 1; }
make -C "$BUILD" -j2 src/dllm src/dllm-tui
make -C "$BUILD" -j2 tests/gpu/kernel_check 2>/dev/null || echo "prepare.sh: no kernel_check target in this build"
make -C "$BUILD" dist >/dev/null

rm -rf "$BUNDLE"
mkdir -p "$BUNDLE/bin" "$BUNDLE/lib" "$BUNDLE/fixtures/models" "$BUNDLE/fixtures/logits"
for p in src/dllm src/dllm-tui tests/gpu/kernel_check; do
    real=$BUILD/$(dirname "$p")/.libs/$(basename "$p")
    [ -f "$real" ] || real=$BUILD/$p
    [ -f "$real" ] && cp "$real" "$BUNDLE/bin/"
done
# Every library ldd resolves, but glibc's and CUDA's (and the dynamic loader).
for b in "$BUNDLE"/bin/*; do
    LD_LIBRARY_PATH="$BUILD/engine/.libs:$BUILD/hub/.libs" ldd "$b" | awk '$3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
    case "$name" in
    libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | libresolv.so* | libutil.so* | ld-linux*) ;;
    libcuda.so* | libcudart.so* | libcublas.so* | libcublasLt.so* | libnvrtc*) ;;
    libstdc++.so* | libgcc_s.so*) ;; # every system has them, the device's CUDA libraries need its own
    *) cp -L "$path" "$BUNDLE/lib/$name" ;;
    esac
done
strip -g "$BUNDLE"/bin/* "$BUNDLE"/lib/libdllm*
cp "$BUILD"/dllm-*.tar.gz "$BUNDLE/"
# The commit the bundle was built from, "dirty" after it when tracked files had changes: the
# bench stage's document names it.
{
    git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown
    [ -n "$(git -C "$ROOT" status --porcelain -uno 2>/dev/null)" ] && echo dirty
} | tr '\n' ' ' >"$BUNDLE/commit"
for f in "$FIX"/models/*.gguf; do
    case "$f" in *realvocab* | *moe*-q80* | *rnd1*-q80*) ;; *) cp "$f" "$BUNDLE/fixtures/models/" ;; esac
done
for f in "$FIX"/logits/*; do
    case "$f" in *realvocab* | *moe*-q80* | *rnd1*-q80* | *.llamacpp.f32) ;; *) cp "$f" "$BUNDLE/fixtures/logits/" ;; esac
done
bytes=$(du -sb "$BUNDLE" | cut -f1)
echo "prepare.sh: $BUNDLE is $((bytes / 1024 / 1024)) MiB ($(ls "$BUNDLE/lib" | tr '\n' ' '))"
if [ "$bytes" -gt "$MAX_BYTES" ]; then
    echo "prepare.sh: the bundle is over 60 MiB" >&2
    exit 1
fi
