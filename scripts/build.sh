#!/usr/bin/env bash
# Configures (once) and builds Overlap with Ninja into $OVERLAP_BUILD_DIR
# (default: build/ in the source tree). Extra arguments are ninja targets.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${OVERLAP_BUILD_DIR:-$ROOT/build}
LLVM_PREFIX=${LLVM_PREFIX:-/usr/lib/llvm-22}
JOBS=${OVERLAP_JOBS:-$(nproc)}

if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -G Ninja -S "$ROOT" -B "$BUILD" \
    -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE:-Release} \
    -DMLIR_DIR="$LLVM_PREFIX/lib/cmake/mlir" \
    -DLLVM_EXTERNAL_LIT="$LLVM_PREFIX/bin/lit" \
    ${OVERLAP_CMAKE_ARGS:-}
fi
ninja -C "$BUILD" -j "$JOBS" "$@"
