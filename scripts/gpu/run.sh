#!/usr/bin/env bash
# Runs the CUDA checks and measurements on a GPU machine, from build outputs
# made elsewhere (the GPU machine builds nothing):
#   1. the CUDA unit tests (OverlapRuntimeCudaTests: GEMM of every type pair
#      against a reference, one-rank NCCL collectives and splits, the three
#      signal/wait modes, lost signals ending in errors, pack/unpack at every
#      access width, the mgpu* entry points) and the host runtime tests;
#   2. overlap-calibrate: a profile of this GPU (copy-engine leg);
#   3. overlap-bench: the 24-shape sweep, copy-engine leg, planned with the
#      fresh profile, then with 4 uniform tiles; a one-rank nccl smoke run.
# Everything goes under $OUT (default ./gpu-out): logs, gtest XML, the
# profile, the tables (.txt) and CSVs.
#
# Usage: scripts/gpu/run.sh [BUILD_DIR]   (default: build-cuda)
# BUILD_DIR must hold lib/liboverlap_runtime_cuda.so, unittests/ and bin/
# from a configure with CUDA (see docs/cuda.md); carry it to the machine.
#
# STATUS: written without a GPU and NEVER RUN YET. Nothing it would produce
# has been measured; check its first run's logs before trusting the tables.
set -u -o pipefail

BUILD=${1:-build-cuda}
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$BUILD/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
status=0

step() { echo; echo "=== $*"; }
run() { # name, command...: log to $OUT/name.txt, remember failures
  local name=$1
  shift
  step "$name: $*"
  "$@" 2>&1 | tee "$OUT/$name.txt"
  local rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] || { echo "*** $name failed (exit $rc)"; status=1; }
  return 0
}

for f in "$BUILD/lib/liboverlap_runtime_cuda.so" \
         "$BUILD/unittests/OverlapRuntimeCudaTests" \
         "$BUILD/bin/overlap-bench" "$BUILD/bin/overlap-calibrate"; do
  [ -e "$f" ] || { echo "missing $f: build with CUDA first (docs/cuda.md)"; exit 2; }
done

{ date -u; nvidia-smi || true; nvcc --version 2>/dev/null || true; } \
  > "$OUT/device.txt" 2>&1
head -20 "$OUT/device.txt"

# 1. Tests. With a GPU nothing may be skipped: a skip means no device.
run cuda-tests "$BUILD/unittests/OverlapRuntimeCudaTests" \
  --gtest_output="xml:$OUT/cuda-tests.xml"
if grep -q "SKIPPED" "$OUT/cuda-tests.txt"; then
  echo "*** CUDA tests skipped: no usable device?"; status=1
fi
[ -x "$BUILD/unittests/OverlapRuntimeTests" ] &&
  run host-tests "$BUILD/unittests/OverlapRuntimeTests"

# 2. Calibrate (the sweep's (N, K) pairs, f16, all-reduce over 8 ranks).
run calibrate "$BUILD/bin/overlap-calibrate" --dtype f16 --ranks 8 \
  --out "$OUT/profile-copy-engine.json"

# 3. The sweep: planned with the measured profile, then uniform tiles.
if [ -f "$OUT/profile-copy-engine.json" ]; then
  run bench-planned "$BUILD/bin/overlap-bench" --leg copy-engine --ranks 8 \
    --dtype f16 --profile "$OUT/profile-copy-engine.json" --strategy auto \
    --csv "$OUT/bench-planned.csv"
fi
run bench-uniform4 "$BUILD/bin/overlap-bench" --leg copy-engine --ranks 8 \
  --dtype f16 --tiles 4 --csv "$OUT/bench-uniform4.csv"
run bench-nccl-1rank "$BUILD/bin/overlap-bench" --leg nccl \
  --shapes 4096x8192x3072,1024x4096x1024 --tiles 4 \
  --csv "$OUT/bench-nccl-1rank.csv"

step "done (status $status); results in $OUT"
exit $status
