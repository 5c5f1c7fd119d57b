#!/usr/bin/env bash
# The main job, as far as it exists today: installs what is missing, builds,
# then takes the example tensor-parallel MLP through what the compiler can do
# now (parse, verify, print), and plans the MC² seed's worked example with
# the Planner. It does not yet decompose, schedule, lower or run anything;
# see README.md ("What works today").
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${OVERLAP_BUILD_DIR:-$ROOT/build}
export OVERLAP_BUILD_DIR=$BUILD

"$ROOT/scripts/install-deps.sh"
"$ROOT/scripts/build.sh" overlap-opt overlap-plan

EXAMPLE=$ROOT/examples/mlp.mlir
echo
echo "== 1. Parse and verify $EXAMPLE (tensor-parallel MLP, 4 ranks)"
"$BUILD/bin/overlap-opt" "$EXAMPLE" -o "$BUILD/mlp.verified.mlir"
echo "verified; printed form written to $BUILD/mlp.verified.mlir"
grep -E "overlap\.(all_gather_matmul|matmul_reduce_scatter)" "$BUILD/mlp.verified.mlir"

echo
echo "== 2. Plan the MC² seed's example (M=4096 K=3072 N=8192 f16, 8 ranks, all-reduce)"
TRACE=$BUILD/mc2-example.trace.json
"$BUILD/bin/overlap-plan" matmul --collective all-reduce --m 4096 --n 8192 \
  --k 3072 --dtype f16 --ranks 8 --profile mc2-example --strategy mc2 \
  --trace "$TRACE"
echo "Chrome trace of the predicted timeline: $TRACE (open it in Perfetto)"

echo
echo "Not yet: decomposing, scheduling streams, lowering and running on N ranks."
