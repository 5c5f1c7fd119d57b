#!/usr/bin/env bash
# Prepares what scripts/gpu/run.sh needs on a GPU machine that has CUDA but
# no LLVM/MLIR: run it here, then carry BUILD_DIR (default build-cuda,
# inside the repository so the device tool can carry it; under 64 MiB).
#   1. configures BUILD_DIR with CUDA and without MLIR (the runtime, its
#      tests, overlap-bench, overlap-calibrate, overlap-exec), Release;
#   2. builds those targets and overlap-device-layer-check;
#   3. compiles the GPU programs (scripts/gpu/programs.sh) with this
#      machine's overlap-compile (from the main build, $OVERLAP_BUILD_DIR or
#      build/) into BUILD_DIR/gpu-programs, with the JAX layers and JAX's
#      outputs from the main build's venv (made by scripts/python-env.sh
#      when it has no jax), and the device layer check's program
#      (gpu-programs/device-layer/mrs1.so).
# Usage: scripts/gpu/prepare.sh [BUILD_DIR]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build-cuda}
MAIN=${OVERLAP_BUILD_DIR:-$ROOT/build}
JOBS=${JOBS:-$(nproc)}
LLVM_PREFIX=${LLVM_PREFIX:-/usr/lib/llvm-22}

[ -x "$MAIN/bin/overlap-compile" ] || "$ROOT/scripts/build.sh"
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -G Ninja -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR="$LLVM_PREFIX/lib/cmake/mlir" \
    -DOVERLAP_WITHOUT_MLIR=ON -DOVERLAP_ENABLE_CUDA=ON
fi
# grep reads all of ninja's output (no -q): under pipefail an early exit
# would end ninja with SIGPIPE and fail the test although the target exists.
ninja -C "$BUILD" -t targets all | grep '^overlap_runtime_cuda:' >/dev/null || {
  echo "prepare: $BUILD has no CUDA backend (CMake found no nvcc, cuBLASLt or NCCL)" >&2
  exit 1
}
ninja -C "$BUILD" -j"$JOBS" overlap_runtime overlap_runtime_cuda \
  OverlapRuntimeTests OverlapRuntimeCudaTests overlap-bench \
  overlap-calibrate overlap-exec overlap-device-layer-check
"$MAIN/venv/bin/python" -c 'import jax' 2>/dev/null ||
  OVERLAP_BUILD_DIR="$MAIN" "$ROOT/scripts/python-env.sh" >/dev/null
rm -rf "$BUILD/gpu-programs"
JAX_PYTHON="$MAIN/venv/bin/python" OVERLAP_COMPILE="$MAIN/bin/overlap-compile" \
  "$ROOT/scripts/gpu/programs.sh" compile "$BUILD/gpu-programs" | tail -1
# The device layer's stream-order check (run.sh's layer step;
# test/Integration/device-layer-streams.test): its program apart, so that
# programs.txt lists only what programs.sh runs.
mkdir -p "$BUILD/gpu-programs/device-layer"
"$MAIN/bin/overlap-compile" "$ROOT/test/Tools/overlap-exec/Inputs/mrs1.mlir" \
  --target=cuda --emit=so --strategy=none \
  -o "$BUILD/gpu-programs/device-layer/mrs1.so"
echo "prepare: carry $(du -sh "$BUILD" | cut -f1) in $BUILD" \
  "(without CMakeFiles: $(du -sh --exclude=CMakeFiles "$BUILD" | cut -f1))"
