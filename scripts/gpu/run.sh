#!/usr/bin/env bash
# Runs the CUDA checks and measurements on a GPU machine, from build outputs
# made elsewhere (the GPU machine builds nothing). Steps, in order:
#   tests      the CUDA unit tests (OverlapRuntimeCudaTests: GEMM of every
#              type pair against a reference, one-rank NCCL collectives and
#              splits, the three signal/wait modes, lost signals ending in
#              errors, pack/unpack at every access width, the mgpu* entry
#              points) and the host runtime tests;
#   calibrate  overlap-calibrate: a profile of this GPU (copy-engine leg,
#              curves for all three collectives);
#   bench      overlap-bench, copy-engine leg over 8 ranks, the 24-shape
#              sweep for each of all-reduce, reduce-scatter, all-gather and
#              all-to-all (dispatch, combine): planned with the profile,
#              then with 4 uniform tiles;
#   nccl       overlap-bench, nccl leg on one rank (a smoke test), the three
#              collectives on two shapes; with NCCL_NP=N (N >= 2 GPUs on
#              this machine) also N ranks, one process per GPU, started by
#              $LAUNCHER: overlap-calibrate --leg nccl (profile-nccl-N.json),
#              then the 24-shape sweep of the three collectives planned with
#              that profile and with 4 uniform tiles;
#   pack       overlap-bench --pack: the pack kernel's bandwidth against
#              cudaMemcpy2DAsync and a contiguous device-to-device copy;
#   knobs      each CUDA backend option on and off, to decide which
#              defaults to keep: overlap-bench (copy-engine leg, 8 ranks,
#              the three collectives, $KNOB_SHAPES, 4 uniform tiles) with
#              --comm-sms 0 and the profile's device.comm_sms,
#              --comm-priority high/normal, --flags device/host, --sync
#              memop/spin/event, --gemm-cache on/off, --gemm-autotune 1/4
#              (knob-<option>-<value>.csv, all of them in knobs.csv); the
#              tile GEMMs of reduce-scatter and all-gather batched vs
#              contiguous on the 24 shapes (tile-gemm.csv); and, where
#              allocation happens while a program runs (the compiled MLP;
#              the bench allocates before it times), --alloc pool vs sync
#              through OVERLAP_CUDA_ALLOC (knob-alloc.csv);
#   programs   the compiled programs of scripts/gpu/prepare.sh
#              (BUILD_DIR/gpu-programs: every integration program and the
#              MLP, --target=cuda; each plan against the one-tile cuda
#              build and against the one-tile host build run on the host
#              backend, and the MLP with each signal/wait implementation)
#              run by overlap-exec.
# Everything goes under $OUT (default ./gpu-out): logs, gtest XML, the
# profile, the tables (.txt) and CSVs, one pair per run.
#
# Usage: scripts/gpu/run.sh [BUILD_DIR]   (default: build-cuda)
# BUILD_DIR comes from scripts/gpu/prepare.sh (run where MLIR is): it holds
# lib/liboverlap_runtime_cuda.so, unittests/, bin/ and gpu-programs/;
# carry it to the machine.
# Environment:
#   STEPS="tests programs calibrate bench nccl pack knobs"  the steps to run (e.g. to split
#       a session into shorter commands; none of them has been timed);
#   PROFILE=FILE  the profile the planned sweeps use (default: the one the
#       calibrate step writes, $OUT/profile-copy-engine.json);
#   BENCH_FLAGS="--iters 10 --input-sets 1"  added to every overlap-bench
#       sweep (not to --pack);
#   KNOB_SHAPES=4096x8192x3072,1024x4096x1024,8192x8192x1024  the shapes
#       of the knobs step (compute-bound, small, comm-bound);
#   NCCL_NP=8  the nccl step also runs 8 ranks (needs 8 GPUs: a machine
#       with one GPU can only run the one-rank smoke test; two processes on
#       one GPU are refused by NCCL);
#   LAUNCHER="mpirun -np $NCCL_NP"  how those ranks are started (default;
#       e.g. "mpirun --allow-run-as-root -np 8", "srun -K -n 8
#       --gpus-per-task 1", "torchrun --nproc-per-node 8 --no-python"). The
#       tools need no MPI library (docs/cuda.md, "Several ranks"); each run
#       gets its own OVERLAP_BOOTSTRAP_KEY.
#
# STATUS: written without a GPU and NEVER RUN YET. Nothing it would produce
# has been measured; check its first run's logs before trusting the tables.
set -u -o pipefail

BUILD=${1:-build-cuda}
OUT=${OUT:-$PWD/gpu-out}
STEPS=${STEPS:-tests programs calibrate bench nccl pack knobs}
PROFILE=${PROFILE:-$OUT/profile-copy-engine.json}
read -r -a BENCH_FLAGS <<<"${BENCH_FLAGS:-}"
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$BUILD/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
status=0

step() { echo; echo "=== $*"; }
want() { [[ " $STEPS " == *" $1 "* ]]; }
run() { # name, command...: log to $OUT/name.txt, remember failures
  local name=$1
  shift
  step "$name: $*"
  "$@" 2>&1 | tee "$OUT/$name.txt"
  local rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] || { echo "*** $name failed (exit $rc)"; status=1; }
  return 0
}

for s in $STEPS; do
  case $s in
    tests|programs|calibrate|bench|nccl|pack|knobs) ;;
    *) echo "unknown step '$s' in STEPS (tests programs calibrate bench nccl pack knobs)"; exit 2 ;;
  esac
done
[[ "${NCCL_NP:-1}" =~ ^[0-9]+$ ]] || { echo "NCCL_NP must be a number of processes"; exit 2; }
for f in "$BUILD/lib/liboverlap_runtime_cuda.so" \
         "$BUILD/unittests/OverlapRuntimeCudaTests" \
         "$BUILD/bin/overlap-bench" "$BUILD/bin/overlap-calibrate" \
         "$BUILD/bin/overlap-exec"; do
  [ -e "$f" ] || { echo "missing $f: build with CUDA first (docs/cuda.md)"; exit 2; }
done

{ date -u; nvidia-smi || true; nvcc --version 2>/dev/null || true; } \
  > "$OUT/device.txt" 2>&1
head -20 "$OUT/device.txt"

# Tests. With a GPU nothing may be skipped: a skip means no device.
if want tests; then
  run cuda-tests "$BUILD/unittests/OverlapRuntimeCudaTests" \
    --gtest_output="xml:$OUT/cuda-tests.xml"
  if grep -q "SKIPPED" "$OUT/cuda-tests.txt"; then
    echo "*** CUDA tests skipped: no usable device?"; status=1
  fi
  [ -x "$BUILD/unittests/OverlapRuntimeTests" ] &&
    run host-tests "$BUILD/unittests/OverlapRuntimeTests"
fi

# Compiled programs on the GPU: plan vs one-tile references (cuda, host).
if want programs; then
  if [ -f "$BUILD/gpu-programs/programs.txt" ]; then
    export OVERLAP_EXEC="$BUILD/bin/overlap-exec"
    run programs "$(dirname "$0")/programs.sh" run "$BUILD/gpu-programs"
  else
    echo "*** no $BUILD/gpu-programs: run scripts/gpu/prepare.sh where MLIR is"
    status=1
  fi
fi

# Calibrate (the sweep's (N, K) pairs, f16, collectives over 8 ranks).
if want calibrate; then
  run calibrate "$BUILD/bin/overlap-calibrate" --dtype f16 --ranks 8 \
    --out "$OUT/profile-copy-engine.json"
fi

# The sweeps, one run per collective so that one failing run (a runtime
# error exits the tool) leaves the others' tables: planned with the profile,
# then 4 uniform tiles (for reduce-scatter and all-gather, multiples of 8).
sweep() { # name, overlap-bench arguments...: table name.txt, name.csv
  local name=$1
  shift
  run "$name" "$BUILD/bin/overlap-bench" "$@" --csv "$OUT/$name.csv" \
    ${BENCH_FLAGS[@]+"${BENCH_FLAGS[@]}"}
}
if want bench; then
  for coll in all-reduce reduce-scatter all-gather; do
    common=(--leg copy-engine --ranks 8 --dtype f16 --collective "$coll")
    if [ -f "$PROFILE" ]; then
      sweep "bench-planned-$coll" "${common[@]}" --profile "$PROFILE" \
        --strategy auto
    else
      echo "*** no profile $PROFILE: the planned $coll sweep is skipped"
      status=1
    fi
    sweep "bench-uniform4-$coll" "${common[@]}" --tiles 4
  done
  # Expert parallelism, one expert per rank: each exchange with 4 uniform
  # tiles and planned (the profile's all-to-all curve is calibrated).
  for side in dispatch combine; do
    common=(--leg copy-engine --ranks 8 --dtype f16 --collective all-to-all
      --side "$side")
    [ -f "$PROFILE" ] && sweep "bench-planned-all-to-all-$side" \
      "${common[@]}" --profile "$PROFILE" --strategy auto
    sweep "bench-uniform4-all-to-all-$side" "${common[@]}" --tiles 4
  done
fi

if want nccl; then
  sweep bench-nccl-1rank --leg nccl \
    --collective all-reduce,reduce-scatter,all-gather \
    --shapes 4096x8192x3072,1024x4096x1024 --tiles 4
  for side in dispatch combine; do
    sweep "bench-nccl-1rank-all-to-all-$side" --leg nccl \
      --collective all-to-all --side "$side" \
      --shapes 4096x8192x3072,1024x4096x1024 --tiles 4
  done
  np=${NCCL_NP:-1}
  if [ "$np" -gt 1 ]; then
    read -r -a launcher <<<"${LAUNCHER:-mpirun -np $np}"
    key() { echo "overlap-run-$$-$1-$(date +%s%N)"; }
    nccl_profile="$OUT/profile-nccl-$np.json"
    rm -f "$nccl_profile" # plan only with this run's profile
    run "calibrate-nccl-$np" env OVERLAP_BOOTSTRAP_KEY="$(key calibrate)" \
      "${launcher[@]}" "$BUILD/bin/overlap-calibrate" --leg nccl --dtype f16 \
      --out "$nccl_profile"
    all=(--leg nccl --dtype f16 \
      --collective all-reduce,reduce-scatter,all-gather)
    if [ -f "$nccl_profile" ]; then
      run "bench-nccl-$np-planned" env OVERLAP_BOOTSTRAP_KEY="$(key planned)" \
        "${launcher[@]}" "$BUILD/bin/overlap-bench" "${all[@]}" \
        --profile "$nccl_profile" --strategy auto \
        --csv "$OUT/bench-nccl-$np-planned.csv" \
        ${BENCH_FLAGS[@]+"${BENCH_FLAGS[@]}"}
    else
      echo "*** no profile $nccl_profile: the planned $np-rank sweep is skipped"
      status=1
    fi
    run "bench-nccl-$np-uniform4" env OVERLAP_BOOTSTRAP_KEY="$(key uniform4)" \
      "${launcher[@]}" "$BUILD/bin/overlap-bench" "${all[@]}" --tiles 4 \
      --csv "$OUT/bench-nccl-$np-uniform4.csv" \
      ${BENCH_FLAGS[@]+"${BENCH_FLAGS[@]}"}
  fi
fi

# The pack kernel: 2-D blocks of 2 B .. 16 KiB rows, 64 MiB each.
if want pack; then
  run pack "$BUILD/bin/overlap-bench" --pack --csv "$OUT/pack.csv"
fi

# The CUDA backend's options, each on and off; every CSV says its settings
# (the knobs column, and the runtime's description in its first line).
if want knobs; then
  kshapes=${KNOB_SHAPES:-4096x8192x3072,1024x4096x1024,8192x8192x1024}
  kcommon=(--leg copy-engine --ranks 8 --dtype f16 --tiles 4
    --collective all-reduce,reduce-scatter,all-gather --shapes "$kshapes")
  # The SMs a profile reserves for communication: the one in use, else the
  # datasheet profile's.
  profile_sms=""
  for p in "$PROFILE" "$(dirname "$0")/../../profiles/h100-nvlink-datasheet.json"; do
    [ -f "$p" ] || continue
    profile_sms=$(sed -n 's/.*"comm_sms": *\([0-9][0-9]*\).*/\1/p' "$p" | head -1)
    [ -n "$profile_sms" ] && break
  done
  settings=("comm-sms-0 --comm-sms 0")
  [ -n "$profile_sms" ] &&
    settings+=("comm-sms-$profile_sms --comm-sms $profile_sms")
  settings+=("comm-priority-high --comm-priority high"
    "comm-priority-normal --comm-priority normal"
    "flags-device --flags device" "flags-host --flags host"
    "sync-memop --sync memop" "sync-spin --sync spin"
    "sync-event --sync event"
    "gemm-cache-on --gemm-cache on" "gemm-cache-off --gemm-cache off"
    "gemm-autotune-1 --gemm-autotune 1" "gemm-autotune-4 --gemm-autotune 4")
  kfiles=()
  for setting in "${settings[@]}"; do
    read -r -a words <<<"$setting"
    sweep "knob-${words[0]}" "${kcommon[@]}" "${words[@]:1}"
    [ -f "$OUT/knob-${words[0]}.csv" ] && kfiles+=("$OUT/knob-${words[0]}.csv")
  done
  # One table of every setting: the first header, then every file's rows.
  [ ${#kfiles[@]} -gt 0 ] &&
    awk '/^#/ { next } /^leg,/ { if (seen++) next } { print }' \
      "${kfiles[@]}" >"$OUT/knobs.csv"
  # Tile GEMMs: G batched GEMMs of rows/G rows (what the decomposition runs)
  # vs one contiguous GEMM of the tile's rows.
  sweep tile-gemm --leg copy-engine --ranks 8 --dtype f16 --tiles 4 \
    --collective reduce-scatter,all-gather --input-sets 1 --tile-gemm both
  # Allocation: only a program that allocates while it runs can tell pool
  # from sync; the compiled MLP does (its fills, ReLU and tiles' buffers).
  if [ -f "$BUILD/gpu-programs/mlp.so" ]; then
    echo "alloc,program_ms" >"$OUT/knob-alloc.csv"
    for a in pool sync; do
      run "knob-alloc-$a" env OVERLAP_CUDA_ALLOC=$a "$BUILD/bin/overlap-exec" \
        "$BUILD/gpu-programs/mlp.so" --backend cuda --iters 20
      ms=$(sed -n 's/.*run: program \([0-9.]*\) ms.*/\1/p' \
        "$OUT/knob-alloc-$a.txt" | head -1)
      echo "$a,${ms:-}" >>"$OUT/knob-alloc.csv"
    done
  else
    echo "*** no $BUILD/gpu-programs/mlp.so: --alloc pool vs sync is skipped"
    status=1
  fi
fi

step "done (status $status); results in $OUT"
exit $status
