#!/usr/bin/env bash
# The main job, as far as it exists today: installs what is missing, builds,
# takes the example tensor-parallel MLP through the tensor-level pipeline
# (raise, reorder-chains, plan, decompose), bufferizes it and schedules it on
# two streams, and plans the MC² seed's worked example with the Planner
# (table, Chrome trace, timeline picture). It does not yet lower or run the
# program; see README.md ("What works today").
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${OVERLAP_BUILD_DIR:-$ROOT/build}
export OVERLAP_BUILD_DIR=$BUILD

"$ROOT/scripts/install-deps.sh"
"$ROOT/scripts/build.sh" overlap-opt overlap-plan

EXAMPLE=$ROOT/examples/mlp.mlir
OPT=$BUILD/bin/overlap-opt
# Remarks are the compiler's log; drop MLIR's "see current operation" notes.
remarks() { grep -E "remark|error" | grep -v "note:" || true; }

echo
echo "== 1. Parse and verify $EXAMPLE (tensor-parallel MLP, 4 ranks)"
"$OPT" "$EXAMPLE" -o "$BUILD/mlp.verified.mlir"
grep -E "overlap\.(all_gather_matmul|matmul_reduce_scatter)" "$BUILD/mlp.verified.mlir"

echo
echo "== 2. overlap-pipeline (raise, reorder-chains, plan, decompose) with the"
echo "      H100 datasheet profile and strategy=auto"
"$OPT" "$EXAMPLE" --overlap-pipeline="profile=h100-nvlink-datasheet strategy=auto" \
  -o "$BUILD/mlp.auto.mlir" 2>&1 | remarks
echo "-> $BUILD/mlp.auto.mlir"

echo
echo "== 3. The same with strategy=uniform:4, to show the decomposition"
"$OPT" "$EXAMPLE" --overlap-pipeline="profile=h100-nvlink-datasheet strategy=uniform:4" \
  -o "$BUILD/mlp.uniform4.mlir" 2>&1 | remarks
echo "per-tile collectives in $BUILD/mlp.uniform4.mlir:"
grep -oE "overlap\.(all_gather|reduce_scatter) .*" "$BUILD/mlp.uniform4.mlir" | sed 's/^/  /'

echo
echo "== 4. Bufferize and schedule the uniform:4 program on two streams"
"$OPT" "$BUILD/mlp.uniform4.mlir" \
  --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
  --cse --canonicalize --overlap-schedule-streams -o "$BUILD/mlp.streams.mlir"
echo "compute stream: $(sed -n '/overlap.stream compute/,/overlap.stream comm/p' "$BUILD/mlp.streams.mlir" | grep -cE 'linalg\.') linalg ops, $(grep -c 'overlap.wait' <(sed -n '/overlap.stream compute/,/overlap.stream comm/p' "$BUILD/mlp.streams.mlir")) waits"
echo "comm stream:    $(sed -n '/overlap.stream comm/,$p' "$BUILD/mlp.streams.mlir" | grep -cE 'overlap\.(all_gather|reduce_scatter)') collectives, $(sed -n '/overlap.stream comm/,$p' "$BUILD/mlp.streams.mlir" | grep -c 'overlap.wait') waits"
echo "-> $BUILD/mlp.streams.mlir"

echo
echo "== 5. Plan the MC² seed's example (M=4096 K=3072 N=8192 f16, 8 ranks, all-reduce)"
TRACE=$BUILD/mc2-example.trace.json
"$BUILD/bin/overlap-plan" matmul --collective all-reduce --m 4096 --n 8192 \
  --k 3072 --dtype f16 --ranks 8 --profile mc2-example --strategy mc2 \
  --trace "$TRACE"
echo "Chrome trace of the predicted timeline: $TRACE (open it in Perfetto)"
"$BUILD/bin/overlap-plan" matmul --collective all-reduce --m 4096 --n 8192 \
  --k 3072 --dtype f16 --ranks 8 --profile mc2-example --strategy mc2 \
  --json > "$BUILD/mc2-example.plan.json"
PY=$("$ROOT/scripts/python-env.sh" | tail -n 1)
MPLBACKEND=Agg "$PY" -m overlap.plot timeline "$TRACE" --plan "$BUILD/mc2-example.plan.json" \
  -o "$BUILD/mc2-example.timeline.png"
echo "Timeline picture of that plan: $BUILD/mc2-example.timeline.png"

echo
echo "Not yet: lowering the scheduled program to the runtime and running it on"
echo "N ranks (the host backend); see README.md."
