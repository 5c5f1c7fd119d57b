#!/usr/bin/env bash
# The main job: installs what is missing, builds, compiles the example
# tensor-parallel MLP (examples/mlp.mlir) through the whole pipeline and runs
# it on 4 ranks of the host backend (threads as ranks, no GPU needed), then
# the expert-parallel layer (examples/moe.mlir) the same way,
# checking it against the same program compiled without overlap, and last
# a Llama-class FFN written the way a frontend writes it (planned at full
# size, its predicted timeline drawn, the H200's measured rows of its GEMM
# shape printed beside it from docs/perf, run scaled down). Along the
# way it shows the Planner's decisions, the two-stream schedule, and the
# predicted timelines (Chrome traces and PNG pictures).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${OVERLAP_BUILD_DIR:-$ROOT/build}
export OVERLAP_BUILD_DIR=$BUILD

"$ROOT/scripts/install-deps.sh"
# The C API libraries too: the README's next command (examples/jax/run.py)
# reaches the compiler and the loader through them.
"$ROOT/scripts/build.sh" overlap-opt overlap-plan overlap-run overlap-compile \
  overlap-exec overlap_runtime OverlapCAPI OverlapHostCAPI
PY=$("$ROOT/scripts/python-env.sh" | tail -n 1)

EXAMPLE=$ROOT/examples/mlp.mlir
OPT=$BUILD/bin/overlap-opt
PLAN=$BUILD/bin/overlap-plan
# Remarks are the compiler's log (MLIR's remark framework, off unless
# --remarks-filter selects them); drop MLIR's "see current operation" notes.
remarks() { grep -E "remark|error" | grep -v "note:" || true; }
timeline() { # TRACE PLAN_JSON PNG
  MPLBACKEND=Agg "$PY" -m overlap.plot timeline "$1" --plan "$2" -o "$3" >/dev/null
  echo "timeline picture: $3"
}

# The H200's measured rows of the Llama FFN's down projection (N 8192,
# K 3584), read from the committed session data (docs/status.md).
measured_h200() {
  local dir=$ROOT/docs/perf/h200-2026-11-27/first
  local device
  device=$(grep -m1 -oE 'NVIDIA H[0-9]+' "$dir/device.txt" || echo "a GPU")
  echo "-- MEASURED, not predicted: one $device, 2026-11-27, the same GEMM"
  echo "   shape as the down projection (N 8192, K 3584) at M 4096, bf16, 8 ranks'"
  echo "   wire bytes on the copy-engine leg (one GPU standing in for the network:"
  echo "   not an 8-GPU number), planned with the profile measured there:"
  echo "   scripts/gpu/run.sh session, step short (overlap-bench --leg copy-engine"
  echo "   --ranks 8 --dtype bf16 --profile profile-copy-engine.json)"
  awk -F, 'NR > 2 && $6 == 8192 && $7 == 3584 {
             printf "   %-14s serial %7.1f us, overlapped %7.1f us (%s tiles): %.2fx measured; plan predicted %.1f us\n",
                    $2, $13, $14, $10, $17, $16 }' "$dir/bench-planned-short-copy-engine.csv"
  echo "   (docs/perf/h200-2026-11-27/first/bench-planned-short-copy-engine.csv;"
  echo "   docs/performance.md has every row)"
}

echo
echo "== 1. The example: $EXAMPLE"
echo "   (all_gather_matmul -> ReLU -> matmul_reduce_scatter over 4 ranks)"
"$OPT" "$EXAMPLE" -o /dev/null && echo "parsed and verified"

echo
echo "== 2. What the Planner decides for it (H100 datasheet profile, strategy=auto)"
"$OPT" "$EXAMPLE" --overlap-pipeline="profile=h100-nvlink-datasheet strategy=auto" \
  --remarks-filter=overlap -o "$BUILD/mlp.auto.mlir" 2>&1 | remarks
echo "(at this small size no split wins on that profile; step 3 forces 4 tiles)"

echo
echo "== 3. Compile with strategy=uniform:4 and run on 4 host ranks, against"
echo "      the reference (one matmul, then one collective, per op)"
"$BUILD/bin/overlap-run" --ranks 4 --strategy uniform:4 --remarks-filter=overlap \
  --profile h100-nvlink-datasheet "$EXAMPLE" 2>&1 | grep -v "note:" | grep -v "^ *\^\|^ *%" 

echo
echo "== 4. The two-stream program it ran (after bufferization and scheduling)"
"$OPT" "$EXAMPLE" --overlap-pipeline="profile=h100-nvlink-datasheet strategy=uniform:4" \
  --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
  --cse --canonicalize --overlap-schedule-streams -o "$BUILD/mlp.streams.mlir" 2>/dev/null
compute=$(sed -n '/overlap.stream compute/,/overlap.stream comm/p' "$BUILD/mlp.streams.mlir")
comm=$(sed -n '/overlap.stream comm/,$p' "$BUILD/mlp.streams.mlir")
echo "compute stream: $(grep -cE 'linalg\.' <<<"$compute") linalg ops, $(grep -c 'overlap.wait' <<<"$compute") waits"
echo "comm stream:    $(grep -cE 'overlap\.(all_gather|reduce_scatter)' <<<"$comm") collectives, $(grep -c 'overlap.wait' <<<"$comm") waits"
echo "-> $BUILD/mlp.streams.mlir"

echo
echo "== 5. Predicted timeline of the MLP's first op with that plan"
"$PLAN" matmul --collective all-gather --m 1024 --n 512 --k 512 --dtype f32 \
  --ranks 4 --profile h100-nvlink-datasheet --strategy uniform:4 \
  --trace "$BUILD/mlp.trace.json" --json > "$BUILD/mlp.plan.json"
echo "Chrome trace (open it in Perfetto): $BUILD/mlp.trace.json"
timeline "$BUILD/mlp.trace.json" "$BUILD/mlp.plan.json" "$BUILD/mlp.timeline.png"

echo
echo "== 6. The MC² seed's worked example (M=4096 K=3072 N=8192 f16, 8 ranks)"
"$PLAN" matmul --collective all-reduce --m 4096 --n 8192 --k 3072 --dtype f16 \
  --ranks 8 --profile mc2-example --strategy mc2 --trace "$BUILD/mc2-example.trace.json"
"$PLAN" matmul --collective all-reduce --m 4096 --n 8192 --k 3072 --dtype f16 \
  --ranks 8 --profile mc2-example --strategy mc2 --json > "$BUILD/mc2-example.plan.json"
echo "Chrome trace (open it in Perfetto): $BUILD/mc2-example.trace.json"
timeline "$BUILD/mc2-example.trace.json" "$BUILD/mc2-example.plan.json" "$BUILD/mc2-example.timeline.png"

echo
echo "== 7. Ahead of time: the same plan as a shared library, run with no MLIR"
COMPILE=$BUILD/bin/overlap-compile
"$COMPILE" "$EXAMPLE" --strategy=uniform:4 --emit=so -o "$BUILD/mlp.so"
"$COMPILE" "$EXAMPLE" --strategy=none --emit=so -o "$BUILD/mlp.ref.so"
"$BUILD/bin/overlap-exec" "$BUILD/mlp.so" --ref "$BUILD/mlp.ref.so" --ranks 4

echo
echo "== 8. For the GPU (--target=cuda): kernels for the fills and the ReLU,"
echo "      launched on the streams; cuBLASLt/NCCL calls; compiled, not run here"
if [ -f "$BUILD/lib/liboverlap_runtime_cuda.so" ]; then
  "$COMPILE" "$EXAMPLE" --target=cuda --strategy=uniform:4 --emit=mlir \
    --stop-after-stage=runtime -o "$BUILD/mlp.cuda.mlir"
  "$COMPILE" "$EXAMPLE" --target=cuda --strategy=uniform:4 --emit=so \
    -o "$BUILD/mlp.cuda.so"
  echo "kernels: $(grep -c 'gpu.func' "$BUILD/mlp.cuda.mlir")," \
    "launches on a context stream: $(grep -c 'gpu.launch_func async' "$BUILD/mlp.cuda.mlir")," \
    "GEMMs: $(grep -c 'call @overlap_gemm' "$BUILD/mlp.cuda.mlir")," \
    "collectives: $(grep -cE 'call @overlap_(all_gather|reduce_scatter)\(' "$BUILD/mlp.cuda.mlir")"
  echo "-> $BUILD/mlp.cuda.so (run it on a GPU: overlap-exec --backend cuda; docs/cuda.md)"
else
  echo "(skipped: the CUDA backend was not built; CMake found no nvcc/cuBLASLt/NCCL)"
fi

echo
echo "== 9. Expert parallelism: $ROOT/examples/moe.mlir, upstream shard.all_to_all"
echo "      + linalg.batch_matmul (dispatch -> 2 experts per rank -> combine)"
MOE=$ROOT/examples/moe.mlir
"$OPT" "$MOE" --overlap-pipeline="profile=h100-nvlink-datasheet strategy=auto" \
  --remarks-filter=overlap -o "$BUILD/moe.auto.mlir" 2>&1 | remarks
echo "(tiny again: no split wins; the runs below force 3 tiles, then let the Planner choose)"
for strategy in uniform:3 auto; do
  echo "-- run on 4 host ranks with strategy=$strategy against the reference"
  "$BUILD/bin/overlap-run" --ranks 4 --strategy "$strategy" \
    --profile h100-nvlink-datasheet "$MOE" 2>&1 | grep -v "note:"
done

echo
echo "== 10. A Llama-70B-class FFN on 8 ranks, written as a frontend writes it:"
echo "       $ROOT/examples/llama-mlp.mlir"
echo "       ([seq, batch, hidden] bf16 sharded along the sequence, PyTorch-layout"
echo "       weights, gate/up/down as linalg.generic contractions, SiLU, a bf16"
echo "       rounding before the reduce-scatter), planned at full size"
LLAMA=$ROOT/examples/llama-mlp.mlir
"$BUILD/bin/overlap-compile" "$LLAMA" --profile h100-nvlink-datasheet --strategy auto \
  --emit=mlir --stop-after-stage=schedule --remarks-filter=overlap \
  -o "$BUILD/llama-mlp.auto.mlir" 2>"$BUILD/llama-mlp.remarks.txt"
remarks <"$BUILD/llama-mlp.remarks.txt" | grep -oE '\[(Passed|Missed|Analysis)\].*Remark="[^"]*"' |
  grep -v '\] copy |' | sed -e 's/ | Category:[^|]*|//' -e 's/ Function=[a-z_]* |//' |
  awk '{ if (!c[$0]++) o[++n] = $0 } END { for (i = 1; i <= n; i++) print (c[o[i]] > 1 ? c[o[i]] "x " : "") o[i] }'
# The net figure: the copies outside the plan (overlap-copy-report) run in
# the serial program and in the overlapped one alike.
awk '/Analysis\] plan/ { split($0, a, "predicted_us="); split(a[2], b, ","); p += b[1]
                          split($0, c, "serial_us="); split(c[2], d, ","); s += d[1] }
     /Analysis\] copy-report/ { split($0, a, "copy_us="); split(a[2], b, ","); cu += b[1]
                                split($0, c, "written_bytes="); w += c[2] }
  END { if (p > 0) printf "PREDICTED, layer (H100 datasheet profile): serial %.1f us, predicted %.1f us; copies outside the plan %.1f MiB per call, %.1f us at the memory bandwidth; net %.2fx (%.1f%% faster)\n", s, p, w / 1048576, cu, (s + cu) / (p + cu), 100 * (s - p) / (s + cu) }' \
  "$BUILD/llama-mlp.remarks.txt"
echo "-- predicted timeline of its larger op, gate/up all-gather + GEMM (M 8192,"
echo "   N 7168, K 8192 bf16, 8 ranks), the plan the compile above chose"
"$PLAN" matmul --collective all-gather --m 8192 --n 7168 --k 8192 --dtype bf16 \
  --ranks 8 --profile h100-nvlink-datasheet --strategy auto \
  --trace "$BUILD/llama-ffn.trace.json" --json >"$BUILD/llama-ffn.plan.json"
timeline "$BUILD/llama-ffn.trace.json" "$BUILD/llama-ffn.plan.json" "$BUILD/llama-ffn.timeline.png"
measured_h200
echo "-- scaled down (64-token shards, hidden 32, FFN 16 per rank) and run on 8"
echo "   host ranks against the unsplit program"
sed -e 's/512x2x/64x2x/g' -e 's/4096x2x/512x2x/g' -e 's/8192/32/g' -e 's/3584/16/g' \
  "$LLAMA" >"$BUILD/llama-mlp.small.mlir"
for strategy in uniform:4 auto; do
  echo "-- strategy=$strategy"
  "$BUILD/bin/overlap-run" --ranks 8 --strategy "$strategy" \
    --profile h100-nvlink-datasheet "$BUILD/llama-mlp.small.mlir" 2>&1 |
    grep -E "bit-identical|^OK|MISMATCH|error"
done

echo
echo "Host ranks are threads: steps 3, 7, 9 and 10 check correctness, not speed."
echo "GPU runs (scripts/gpu/, docs/cuda.md) need a machine with a GPU."
