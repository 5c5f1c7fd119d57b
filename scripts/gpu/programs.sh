#!/usr/bin/env bash
# The compiled programs the GPU checks run: every integration program
# (test/Integration: all-reduce, reduce-scatter and all-gather in f32, with
# bf16 inputs, with bf16 accumulators, M = 712, the upstream-partitioned
# form), the frontend forms of test/Integration/frontend-matrix.mlir
# (torch-layout weights, [b, s, h] contractions, casts before the
# collective), the expert-parallel layers (all-to-all), the MLP, MoE and
# Llama FFN of examples/, and the JAX layers of examples/jax (as
# overlap.jax imports them), on one-rank grids (one GPU; NCCL puts
# one rank per GPU), each compiled with --target=cuda as a plan and as the
# one-tile reference, and with --target=host as the one-tile host
# reference. The JAX layers also carry JAX's own inputs and outputs
# (examples/jax/export.py --oracle; needs a Python with jax, $JAX_PYTHON,
# default build/venv/bin/python from scripts/python-env.sh).
#
#   scripts/gpu/programs.sh compile DIR   here: needs overlap-compile
#                                         ($OVERLAP_COMPILE, else PATH)
#   scripts/gpu/programs.sh run DIR       on a GPU: needs overlap-exec
#                                         ($OVERLAP_EXEC, else PATH), and
#                                         python3 with numpy for the JAX
#                                         oracle
#
# `compile` writes DIR/<name>.so, DIR/<name>.ref.so, DIR/<name>.host.so
# and DIR/programs.txt (name, tolerances and, for a JAX layer, the
# tolerance against JAX); carry DIR. `run` compares
# every plan on the GPU (overlap-exec --backend cuda) twice: with its
# one-tile CUDA reference on the GPU, which isolates what tiling changes,
# and with its host reference on one host rank (--ref-backend host), which
# shares none of the CUDA lowering (kernels, the GEMM call, device memory),
# so a bug there cannot cancel out; a JAX layer a third time, run on JAX's
# inputs and held against JAX's outputs (scripts/gpu/compare-npz.py), which
# shares nothing with Overlap at all. Then it runs the MLP again with each
# signal/wait implementation (OVERLAP_CUDA_SYNC) and with the other setting
# of each performance knob (docs/cuda.md), prints one report per
# run and a last line "programs: N passed, N failed"; exit 1 on any
# failure. cuBLASLt may choose different kernels for different tile
# heights, and sums in another order than the host, so outputs are
# compared with tolerances, not bit for bit (bf16 outputs: about two bf16
# ulps).
#
# `run` takes these from the environment, to split the runs between the
# steps of a session (scripts/gpu/run.sh):
#   PROGRAMS_ONLY=REGEX  run only the programs whose name matches REGEX
#                        (extended, whole name; default: every one);
#   PROGRAMS_SKIP=REGEX  leave out those whose name matches it;
#   PROGRAMS_VARIANTS=0  leave out the MLP's signal/wait and knob runs.
#
# STATUS: `compile` runs here (and in lit: test/Integration/cuda-compile);
# `run` ran on one H200 on 2026-11-27: 64 of 80 passed (docs/performance.md).
set -u -o pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
mode=${1:-}
DIR=${2:-}
[ -n "$mode" ] && [ -n "$DIR" ] || {
  echo "usage: $0 compile|run DIR" >&2
  exit 2
}

F32_TOL="1e-4 1e-4"
BF16_TOL="1.6e-2 1e-2"
SLOW="$ROOT/test/Integration/Inputs/slow-link.json"

# name  source  entry  strategy  profile  rtol atol
programs() {
  local f p e
  for f in all-reduce:mar reduce-scatter:mrs all-gather:agm; do
    p=${f#*:}
    f=${f%%:*}
    for e in "${p}_f32" "${p}_uneven" upstream; do
      echo "$f-$e $f $e uniform:3 - $F32_TOL"
    done
    echo "$f-${p}_f32-optimal $f ${p}_f32 optimal $SLOW $F32_TOL"
    for e in "${p}_bf16" "${p}_bf16_acc"; do
      echo "$f-$e $f $e uniform:3 - $BF16_TOL"
    done
  done
  for e in ar_f32 rs_f32 ag_f32; do
    echo "frontend-$e frontend-matrix $e uniform:3 - $F32_TOL"
  done
  for e in ar_bf16 rs_bf16 ag_bf16; do
    echo "frontend-$e frontend-matrix $e uniform:3 - $BF16_TOL"
  done
  echo "mlp mlp mlp uniform:4 - $F32_TOL"
  echo "all-to-all-moe_one all-to-all moe_one uniform:3 - $F32_TOL"
  echo "moe moe moe uniform:3 - $F32_TOL"
  echo "llama-mlp llama-mlp llama_mlp uniform:3 - $BF16_TOL"
  # The JAX layers export.py wrote (stem, entry, dtype); the last column is
  # the tolerance against JAX (python/tests/test_jax.py's).
  [ -f "$DIR/jax.txt" ] || return 0
  local stem entry dtype strategy
  while read -r stem entry dtype; do
    # One device's expert layer has 128 rows: one 128-row block.
    strategy=uniform:2
    [ "$stem" = jax-expert_parallel ] && strategy=auto
    if [ "$dtype" = bfloat16 ]; then
      echo "$stem $stem $entry $strategy - $BF16_TOL 0.015625"
    else
      echo "$stem $stem $entry $strategy - $F32_TOL 1e-4"
    fi
  done <"$DIR/jax.txt"
}

case $mode in
compile)
  COMPILE=${OVERLAP_COMPILE:-overlap-compile}
  mkdir -p "$DIR"
  for f in all-reduce reduce-scatter all-gather; do
    sed -e 's/@R@/1/' -e 's/@Q1024@/1024/g' -e 's/@Q712@/712/g' \
      "$ROOT/test/Integration/$f.mlir" >"$DIR/$f.mlir"
  done
  sed -e 's/shape = 4/shape = 1/' -e 's/256x512/1024x512/g' \
    "$ROOT/examples/mlp.mlir" >"$DIR/mlp.mlir"
  # Expert parallelism on one rank: the all-to-all is a copy, the tiles and
  # the experts' GEMMs are as on many.
  sed -e 's/@R@/1/g' -e 's/@T@/512/g' -e 's/@E2@/2/g' -e 's/@T64@/64/g' \
    -e 's/@E3@/3/g' "$ROOT/test/Integration/all-to-all.mlir" \
    >"$DIR/all-to-all.mlir"
  sed -e 's/shape = 4/shape = 1/' -e 's/8x64x64/2x256x64/g' \
    "$ROOT/examples/moe.mlir" >"$DIR/moe.mlir"
  # The frontend-written Llama FFN (docs/forms.md) on one rank, 768 rows:
  # torch-layout weights, merged gate/up, the bf16 rounding per tile.
  sed -e 's/shape = 8/shape = 1/' -e 's/512x2x/384x2x/g' -e 's/4096x2x/384x2x/g' \
    -e 's/8192/256/g' -e 's/3584/128/g' \
    "$ROOT/examples/llama-mlp.mlir" >"$DIR/llama-mlp.mlir"
  # The frontend forms on one rank: 768 rows of [2, 768, 64] (R = 1).
  sed -e 's/@R@/1/g' -e 's/@SR2@/1536/g' -e 's/@SR@/768/g' \
    "$ROOT/test/Integration/frontend-matrix.mlir" >"$DIR/frontend-matrix.mlir"
  # The JAX layers on one device, with JAX's inputs and outputs.
  JAX_PYTHON=${JAX_PYTHON:-$ROOT/build/venv/bin/python}
  rm -f "$DIR/jax.txt"
  if "$JAX_PYTHON" -c 'import jax' 2>/dev/null; then
    "$JAX_PYTHON" "$ROOT/examples/jax/export.py" --oracle "$DIR" \
      >"$DIR/jax.txt" || {
      echo "*** cannot export the JAX layers (examples/jax/export.py)" >&2
      exit 1
    }
  else
    echo "programs: no Python with jax ($JAX_PYTHON; scripts/python-env.sh" \
      "makes one): the JAX layers are left out" >&2
  fi
  : >"$DIR/programs.txt"
  programs | while read -r name src entry strategy profile rtol atol oracle; do
    args=("$DIR/$src.mlir" --entry "$entry" --emit=so)
    [ "$profile" = - ] || args+=(--profile "$profile")
    "$COMPILE" "${args[@]}" --target=cuda --strategy="$strategy" \
      -o "$DIR/$name.so" &&
      "$COMPILE" "${args[@]}" --target=cuda --strategy=none \
        -o "$DIR/$name.ref.so" &&
      "$COMPILE" "${args[@]}" --target=host --strategy=none \
        -o "$DIR/$name.host.so" || {
      echo "*** cannot compile $name" >&2
      exit 1
    }
    echo "$name $rtol $atol${oracle:+ $oracle}" >>"$DIR/programs.txt"
    echo "compiled $name"
  done || exit 1
  rm -f "$DIR"/*.mlir
  ;;
run)
  EXEC=${OVERLAP_EXEC:-overlap-exec}
  [ -f "$DIR/programs.txt" ] || {
    echo "no $DIR/programs.txt: run '$0 compile $DIR' where MLIR is" >&2
    exit 2
  }
  passed=0 failed=0
  check() { # label, overlap-exec arguments...
    local label=$1
    shift
    check_cmd "$label" "$EXEC" "$@"
  }
  check_cmd() { # label, command...
    local label=$1 rc=0
    shift
    echo "=== $label"
    "$@" || rc=$?
    if [ "$rc" -eq 0 ]; then passed=$((passed + 1)); else
      echo "*** $label failed (exit $rc)"
      failed=$((failed + 1))
    fi
    # overlap-exec (or a library) missing: every other run would fail alike.
    if [ "$rc" -eq 126 ] || [ "$rc" -eq 127 ]; then
      echo "programs: stopped: $1 cannot run (exit $rc)"
      exit 2
    fi
  }
  # vs_jax NAME TOL: the plan on JAX's inputs, its outputs held against
  # JAX's (compare-npz.py).
  vs_jax() {
    local got="${TMPDIR:-/tmp}/programs-$$-$1.npz" rc=0
    "$EXEC" "$DIR/$1.so" --backend cuda --inputs "$DIR/$1.in.npz" \
      --outputs "$got" >/dev/null &&
      "$PYTHON" "$ROOT/scripts/gpu/compare-npz.py" "$got" \
        "$DIR/$1.want.npz" "$2" || rc=$?
    rm -f "$got"
    return "$rc"
  }
  # The JAX oracle needs python3 with numpy (the GPU machine's has it).
  PYTHON=${PYTHON:-python3}
  have_numpy=0
  "$PYTHON" -c 'import numpy' 2>/dev/null && have_numpy=1
  only=${PROGRAMS_ONLY:-.*} skip=${PROGRAMS_SKIP:-}
  while read -r name rtol atol oracle; do
    [[ "$name" =~ ^($only)$ ]] || continue
    [ -n "$skip" ] && [[ "$name" =~ ^($skip)$ ]] && continue
    check "$name" "$DIR/$name.so" --ref "$DIR/$name.ref.so" --backend cuda \
      --rtol "$rtol" --atol "$atol"
    check "$name-vs-host" "$DIR/$name.so" --ref "$DIR/$name.host.so" \
      --backend cuda --ref-backend host --rtol "$rtol" --atol "$atol"
    [ -n "${oracle:-}" ] || continue
    if [ "$have_numpy" -eq 0 ]; then
      echo "*** $name-vs-jax: no $PYTHON with numpy"
      failed=$((failed + 1))
      continue
    fi
    check_cmd "$name-vs-jax" vs_jax "$name" "$oracle"
  done <"$DIR/programs.txt"
  if [ "${PROGRAMS_VARIANTS:-1}" != 0 ] && grep -q '^mlp ' "$DIR/programs.txt"; then
    for sync in memop spin event; do
      OVERLAP_CUDA_SYNC=$sync check "mlp-$sync" "$DIR/mlp.so" \
        --ref "$DIR/mlp.ref.so" --backend cuda --rtol 1e-4 --atol 1e-4
    done
    # The knobs' other settings must not change results (docs/cuda.md,
    # "Performance knobs"): host-mapped flags, cudaMalloc instead of the
    # pool, no SM budget, normal priority, no descriptor cache, autotune.
    for knob in OVERLAP_CUDA_FLAGS=host OVERLAP_CUDA_ALLOC=sync \
      OVERLAP_COMM_SMS=0 OVERLAP_COMM_PRIORITY=normal \
      OVERLAP_GEMM_CACHE=off OVERLAP_GEMM_AUTOTUNE=4; do
      export "${knob?}"
      check "mlp-$knob" "$DIR/mlp.so" --ref "$DIR/mlp.ref.so" \
        --backend cuda --rtol 1e-4 --atol 1e-4
      unset "${knob%%=*}"
    done
  fi
  echo "programs: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  ;;
*)
  echo "usage: $0 compile|run DIR" >&2
  exit 2
  ;;
esac
