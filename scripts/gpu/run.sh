#!/usr/bin/env bash
# Runs the CUDA checks and measurements on a GPU machine, from build outputs
# made elsewhere (the GPU machine builds nothing).
#
# Usage: scripts/gpu/run.sh [session|bringup|sweep|knobs|all] [BUILD_DIR]
#   BUILD_DIR (default build-cuda) comes from scripts/gpu/prepare.sh (run
#   where MLIR is): lib/liboverlap_runtime_cuda.so, unittests/, bin/ and
#   gpu-programs/; carry it to the machine. Modes (docs/gpu.md, "On a GPU
#   machine"):
#     session  one prepared call of a session with 15 minutes of device
#              time (docs/gpu.md, "A session"), ending by DEADLINE (default
#              290 s), bf16: (a) what never ran on a GPU: tests, layer,
#              jax, rankmajor, llama, tcp; (b) what the goals need:
#              calibrate (both legs, from M = 128), short (planned only),
#              layout, gate, dispatch, tiles, commsms; (c) with the time
#              left: memcheck, programs, pack, nccl, knobs, bench; on a
#              machine with several GPUs (nvidia-smi -L) multi first,
#              NCCL_NP = the GPUs;
#     bringup  preflight, tests, programs, memcheck
#     sweep    preflight, calibrate, bench
#     knobs    preflight, knobs, pack, nccl
#     all      every step (longer than one 10-minute call; the default)
#
# Every mode starts with the preflight (scripts/gpu/preflight.sh): it finds
# libcudart.so.13, libcublasLt.so.13 and libnccl.so.2 (CUDA's directories
# first, then python3's pip packages nvidia/*/lib), sets LD_LIBRARY_PATH
# from where they are, runs ldd on every binary below and stops (exit 2)
# naming any library that is "not found", and prints the NCCL version that
# will be loaded.
#
# Steps:
#   tests      the CUDA unit tests (OverlapRuntimeCudaTests: GEMM of every
#              type pair against a reference, one-rank NCCL collectives and
#              splits, the three signal/wait modes, lost signals ending in
#              errors, pack/unpack at every access width, the mgpu* entry
#              points), then the two-process test alone (bounded apart);
#              a skipped test means no device and stops the run.
#              The host-only tests (OverlapRuntimeTests) run where the code
#              is built, not here;
#   core       the programs step for CORE_PROGRAMS alone (below), without
#              the MLP's variants;
#   layer      overlap-device-layer-check on gpu-programs/device-layer/
#              mrs1.so (test/Integration/device-layer-streams.test's check:
#              a spin kernel holds the legacy stream while the device layer
#              runs on a non-blocking stream; outputs read there at once);
#   jax        the programs step for the JAX layers alone (one-device mesh;
#              against the one-tile builds and JAX's own outputs);
#   llama      the programs step for the Llama FFN alone (torch-layout
#              weights: cuBLASLt's transposed operands);
#   tcp        the process executor as one process over TCP: overlap-exec
#              on the compiled MLP against its one-tile build, started by
#              the lit suite's torchrun stand-in, OVERLAP_PROCESS_TRANSPORT
#              =tcp, --ranks-as processes;
#   rankmajor  the rank-major tiles' first run: overlap-bench --layout
#              rank-major --chunks 2 --ranks 4, reduce-scatter and
#              all-gather on 1024x1024x1024, sm-copy then copy-engine;
#   layout     the planned short reduce-scatter and all-gather with
#              --layout rank-major, then interleaved (copy-engine);
#   dispatch   all-to-all dispatch planned on the sm-copy leg with
#              --comm-sms 0, then 16 (DISPATCH_COMM_SMS), on A2A_SHAPES;
#   tiles      uniform tiles, TILE_COUNTS (default 2 4 8 16), on
#              TILE_SHAPES (three shapes) and TILE_COLLECTIVES
#              (copy-engine);
#   commsms    the planned sm-copy sweep on COMM_SMS_SHAPES (three) with
#              --comm-sms each of COMM_SMS_VALUES (8 16 32) but the
#              profile's own when the short step ran it;
#   multi      N ranks over N GPUs (NCCL_NP): calibrate --leg nccl, then
#              MULTI_SHAPES planned, rank-major forced on reduce-scatter
#              and all-gather, and 4 uniform tiles (TIMEOUT_multi each);
#   short      overlap-bench on SHORT_SHAPES (four, compute- to comm-bound),
#              the three collectives, on the copy-engine and sm-copy legs,
#              planned with the profile and with 4 uniform tiles (a
#              session: planned only, SHORT_UNIFORM=0);
#   gate       the planned short sweep on the copy-engine leg again with
#              OVERLAP_TIMING_GATE=0 (not in a session's default steps);
#   programs   the compiled programs of scripts/gpu/prepare.sh (without
#              CORE_PROGRAMS when the core step is among the steps)
#              (BUILD_DIR/gpu-programs: every integration program, the
#              expert-parallel layers and the MLP, MoE and Llama FFN,
#              --target=cuda; each plan against its one-tile cuda build and
#              against its one-tile host build run on the host backend, the
#              MLP with each signal/wait implementation and knob) run by
#              overlap-exec;
#   memcheck   compute-sanitizer --tool memcheck over the CUDA unit tests
#              ($MEMCHECK_FILTER, default all but the two-process test), the
#              compiled MLP against its reference, and a small overlap-bench
#              run of the four collectives on the sm-copy leg (its kernel;
#              not in a session); --tool initcheck over the same tests;
#              then --tool racecheck over the spin-wait and pack tests
#              ($RACECHECK_FILTER; a session leaves it out: Overlap's
#              kernels use no shared memory);
#   calibrate  overlap-calibrate on leg $LEG (default copy-engine): a
#              profile of this GPU (profile-$LEG.json: GEMM curves, curves
#              for all four collectives, contention);
#   bench      overlap-bench on leg $LEG over 8 ranks, the 24-shape sweep for
#              each of all-reduce, reduce-scatter, all-gather and all-to-all
#              (dispatch, combine): planned with the profile, then with 4
#              uniform tiles;
#   nccl       overlap-bench, nccl leg on one rank (a smoke test), the
#              collectives on two shapes; with NCCL 2.30 or newer also
#              $SHARED_NP ranks on this one GPU (scripts/gpu/spawn.sh,
#              NCCL_MULTI_RANK_GPU_ENABLE=1), checked, not timed; with
#              NCCL_NP=N (N >= 2 GPUs on this machine) also N ranks, one
#              process per GPU, started by $LAUNCHER: overlap-calibrate
#              --leg nccl (profile-nccl-N.json), then the 24-shape sweep
#              planned with it and with 4 uniform tiles;
#   pack       overlap-bench --pack: the pack kernel's bandwidth against
#              cudaMemcpy2DAsync and a contiguous device-to-device copy;
#   knobs      each CUDA backend option on and off, to decide which
#              defaults to keep: overlap-bench (leg $KNOB_LEG, default
#              sm-copy, the one-GPU leg whose communication takes SMs and
#              follows the stream priority; 8 ranks, the three collectives,
#              $KNOB_SHAPES, 4 uniform tiles) with --comm-sms 0, the
#              profile's device.comm_sms and each of $KNOB_COMM_SMS,
#              --comm-priority high/normal, --flags device/host, --sync
#              memop/spin/event, --gemm-cache on/off, --gemm-autotune 1/4
#              (knob-<option>-<value>.csv, all of them in knobs.csv; with
#              KNOB_CONTRAST=1 also --comm-sms and --comm-priority on the
#              copy-engine leg, knob-copy-engine-*.csv); --nccl-cta-cap
#              on/off on the nccl leg (N ranks with NCCL_NP=N >= 2; on one
#              GPU only a one-rank smoke test, which cannot tell them apart);
#              --zero-sm-all-gather on/off likewise, all-gathers only;
#              the tile GEMMs of reduce-scatter and all-gather batched vs
#              contiguous (tile-gemm.csv); and --alloc pool vs sync on the
#              compiled MLP through OVERLAP_CUDA_ALLOC (knob-alloc.csv).
#
# A step that fails stops the run (exit 1), unless it is optional: the unit
# tests, the programs, memcheck and every sweep are (a failure is logged,
# the exit status is 1 at the end, and the next step runs; one failing
# collective leaves the others' tables); the preflight and calibrate are
# not. A command that cannot run at all (exit 126 or 127: a missing binary
# or library) stops the run whatever the step, since every later step
# would fail alike.
#
# Output: logs, gtest XML, profiles, tables (.txt) and CSVs go to $RESULTS
# (default $OUT, default ./gpu-out). When RESULTS is another directory, the
# whole of it is also packed into $OUT/<mode>-results.tar.gz after every
# step (the device tool returns at most 8 files from $OUT). At the end
# scripts/gpu/report.py writes report.md (a Markdown summary: steps,
# programs, sweeps with eta and prediction error, pack, knobs), copied to
# $OUT/<mode>-report.md.
#
# Environment:
#   STEPS="..."   the steps to run instead of the mode's;
#   STEP_TIMEOUT=S  stop any step after S seconds (timeout(1); 0: never);
#       TIMEOUT_<step>=S (TIMEOUT_tests, TIMEOUT_bench, ...) bounds each
#       command of that step instead; MEMCHECK_TIMEOUT (default 240) bounds
#       each memcheck run;
#   DEADLINE=S    the whole run ends within S seconds: each command gets at
#       most the time left (less 15 s to pack the results), and one that
#       would get under 10 s is skipped ("skipped: DEADLINE"; a skipped
#       required step ends the run). Every command's exit status ("cut"
#       when DEADLINE's bound stopped it, "skipped"; neither counts as a
#       failure), duration and bound go to $RESULTS/steps.csv, to plan the
#       next session;
#   TIME_SCALE=S  a dry run on stand-ins (test/Scripts/gpu/session.test):
#       the clock runs S times faster than the wall clock (bounds,
#       DEADLINE and steps.csv stay in the session's seconds; the
#       preflight's wall time counts once). Every command sees
#       OVERLAP_STEP (its name) and OVERLAP_STEP_START (epoch µs);
#   DTYPE=f16|bf16  the element type of calibrate, bench and knobs (f16;
#       session: bf16);
#   CALIBRATE_FLAGS="--step 256 --max-bytes 536870912 --warmup 3 --iters 10"
#       added to calibrate
#       (session's default; --nk always lists SWEEP_SHAPES' (N, K) pairs
#       when SWEEP_SHAPES is set);
#   A2A_SHAPES=MxNxK,...  the all-to-all sweeps' shapes (default
#       SWEEP_SHAPES; session: four of them);
#   LEG=copy-engine|sm-copy  the leg of calibrate and bench;
#   CALIBRATE_LEGS="copy-engine sm-copy"  the legs calibrate measures, each
#       into profile-<leg>.json (default LEG; session: both);
#   SHORT_LEGS="copy-engine sm-copy"  the short step's legs, each planned
#       with profile-<leg>.json when there is one, else PROFILE;
#   MEMCHECK_RUNS="tests initcheck mlp"  which sanitizer runs the memcheck
#       step makes (memcheck of the unit tests, initcheck of them, memcheck
#       of the compiled MLP);
#   PROFILE=FILE  the profile the planned sweeps use (default: the one the
#       calibrate step writes, $RESULTS/profile-$LEG.json);
#   BENCH_FLAGS="--iters 10 --input-sets 1"  added to every overlap-bench
#       sweep (not to --pack);
#   SWEEP_SHAPES=MxNxK,...  the shapes of the bench step and of the knobs
#       step's tile-GEMM sweep (default: the 24 of overlap-bench's sweep;
#       session: SESSION_SHAPES); TILE_GEMM_SHAPES the latter's instead
#       (session: KNOB_SHAPES);
#   KNOB_LEG=sm-copy, KNOB_SHAPES=4096x8192x3072,1024x4096x1024,8192x8192x1024
#       (compute-bound, small, comm-bound), KNOB_COMM_SMS="8 32" (more
#       budgets to try), KNOB_CONTRAST=0;
#   NCCL_NP=8  the nccl and knobs steps also run 8 ranks (needs 8 GPUs:
#       NCCL refuses two ranks on one GPU before 2.30, see SHARED_NP);
#   LAUNCHER="scripts/gpu/spawn.sh $NCCL_NP"  how those ranks are started
#       (the default needs no MPI; or e.g. "mpirun --allow-run-as-root -np
#       8", "srun -K -n 8 --gpus-per-task 1", "torchrun --nproc-per-node 8
#       --no-python"). The tools need no MPI library (docs/gpu.md, "Several
#       ranks"); each run gets its own OVERLAP_BOOTSTRAP_KEY;
#   SHARED_NP="2 4"  the nccl step's correctness runs of N ranks on ONE GPU
#       (scripts/gpu/spawn.sh, NCCL_MULTI_RANK_GPU_ENABLE=1): only when the
#       preflight found NCCL 2.30 or newer (older NCCL refuses it); the
#       three collectives and all-to-all on two shapes, checked, not timed
#       (the ranks share one GPU's SMs and memory). "" skips them.
#
# STATUS: run on one H200 on 2026-11-27 (docs/performance.md: the session
# mode, then its later steps again after fixes). The session's order of
# 2026-12 (steps layer, jax, rankmajor, llama, tcp, layout, dispatch,
# tiles, commsms, multi) has only been dry-run on stand-ins; the nccl step
# over several GPUs and the knobs step have not run yet.
set -u -o pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
MODE=all
case ${1:-} in
session | bringup | sweep | knobs | all)
  MODE=$1
  shift
  ;;
esac
BUILD=${1:-build-cuda}
OUT=${OUT:-$PWD/gpu-out}
RESULTS=${RESULTS:-$OUT}
# The issue's shapes (MxNxK): M from 128 to 8192 on GPT-class (8192, 3072),
# Llama-class (8192, 3584) and (28672, 1024) and compute-bound (4096,
# 16384) layers, and M 1024 on two of them.
SESSION_SHAPES=128x8192x3072,512x8192x3072,2048x8192x3072,4096x8192x3072,8192x8192x3072
SESSION_SHAPES+=,128x8192x3584,512x8192x3584,2048x8192x3584,4096x8192x3584,8192x8192x3584
SESSION_SHAPES+=,128x28672x1024,512x28672x1024,2048x28672x1024,4096x28672x1024,8192x28672x1024
SESSION_SHAPES+=,128x4096x16384,512x4096x16384,2048x4096x16384,4096x4096x16384,8192x4096x16384
SESSION_SHAPES+=,1024x8192x3072,1024x28672x1024
# The session's core programs (issue 38's list): the MLP, an all-reduce,
# the MoE layer and the expert-parallel exchange, one upstream-partitioned
# program, one frontend form, one JAX layer against JAX's own output.
CORE_PROGRAMS='mlp|all-reduce-mar_f32|moe|all-to-all-moe_one|all-reduce-upstream|frontend-ar_bf16|jax-megatron_mlp'
# The short bench: four shapes from compute- to comm-bound (MxNxK).
SHORT_SHAPES=8192x4096x16384,4096x8192x3072,4096x8192x3584,2048x28672x1024
# The session's three shapes of the forced tile counts and the sm-copy
# leg's SM budgets: compute-bound, the 4096x8192x3072 reference, comm-bound.
TRIO_SHAPES=8192x4096x16384,4096x8192x3072,2048x28672x1024
# GPUs on this machine (nvidia-smi -L; 0 when it cannot tell).
gpu_count() {
  timeout 20 nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true
}
case $MODE in
session)
  # One prepared call of a 15-minute session (docs/gpu.md, "A session";
  # issues 49 and 50): (a) what has never run on a GPU, (b) the
  # measurements the goals need, (c) the rest with the time left; on a
  # machine with several GPUs the multi-GPU steps first. Every command is
  # bounded and the whole call ends by DEADLINE, a step cut by it recorded
  # as cut. The expected times per command are in docs/gpu.md (from the
  # first H200 session's steps.csv).
  mode_steps="tests layer jax rankmajor llama tcp"
  mode_steps+=" calibrate short layout gate dispatch tiles commsms"
  mode_steps+=" memcheck programs pack nccl knobs bench"
  if [ -z "${NCCL_NP:-}" ]; then
    gpus=$(gpu_count)
    if [ "${gpus:-0}" -ge 2 ]; then
      NCCL_NP=$gpus
      mode_steps="multi $mode_steps"
    fi
  fi
  DEADLINE=${DEADLINE:-290}
  DTYPE=${DTYPE:-bf16}
  SWEEP_SHAPES=${SWEEP_SHAPES-$SESSION_SHAPES}
  A2A_SHAPES=${A2A_SHAPES-512x8192x3072,4096x8192x3072,2048x28672x1024,8192x4096x16384}
  BENCH_FLAGS=${BENCH_FLAGS-"--warmup 3 --iters 10 --input-sets 1"}
  # --step 128: the GEMM curves from M = 128 (the sessions' smallest M);
  # --max-bytes: the largest message of the shapes (8192 x 28672 bf16 =
  # 448 MiB) within the measured range.
  CALIBRATE_FLAGS=${CALIBRATE_FLAGS-"--step 128 --max-bytes 536870912 --warmup 3 --iters 10"}
  MEMCHECK_FILTER=${MEMCHECK_FILTER-"CudaDevice.Gemm*:CudaDevice.SignalWait*:CudaDevice.PackAndUnpack*"}
  MEMCHECK_RUNS=${MEMCHECK_RUNS-"tests mlp"}
  RACECHECK_FILTER=${RACECHECK_FILTER-}
  # Both one-GPU legs are calibrated (17 s each on an H200): each short
  # sweep plans with its own leg's profile.
  CALIBRATE_LEGS=${CALIBRATE_LEGS-"copy-engine sm-copy"}
  # The short step plans only: the tiles step forces uniform tiles.
  SHORT_UNIFORM=${SHORT_UNIFORM-0}
  MULTI_SHAPES=${MULTI_SHAPES-$SHORT_SHAPES}
  # The forced tile counts on all-reduce (any count) and reduce-scatter
  # (all-gather mirrors it on the stand-in legs).
  TILE_COLLECTIVES=${TILE_COLLECTIVES-all-reduce,reduce-scatter}
  KNOB_SHAPES=${KNOB_SHAPES-4096x8192x3072,512x8192x3584,8192x28672x1024}
  TILE_GEMM_SHAPES=${TILE_GEMM_SHAPES-$KNOB_SHAPES}
  # Each bound about twice the command's expected time (docs/gpu.md).
  : "${TIMEOUT_multi:=90}"
  : "${TIMEOUT_tests:=60}" "${TIMEOUT_layer:=30}" "${TIMEOUT_jax:=60}"
  : "${TIMEOUT_rankmajor:=30}" "${TIMEOUT_llama:=30}" "${TIMEOUT_tcp:=40}"
  : "${TIMEOUT_calibrate:=60}" "${TIMEOUT_short:=45}" "${TIMEOUT_layout:=40}"
  : "${TIMEOUT_gate:=45}" "${TIMEOUT_dispatch:=30}" "${TIMEOUT_tiles:=40}"
  : "${TIMEOUT_commsms:=40}" "${MEMCHECK_TIMEOUT:=50}"
  : "${TIMEOUT_programs:=120}" "${TIMEOUT_pack:=45}" "${TIMEOUT_nccl:=45}"
  : "${TIMEOUT_knobs:=30}" "${TIMEOUT_bench:=45}" "${TIMEOUT_core:=60}"
  ;;
bringup) mode_steps="tests programs memcheck" ;;
sweep) mode_steps="calibrate bench" ;;
knobs) mode_steps="knobs pack nccl" ;;
*) mode_steps="tests programs memcheck calibrate bench nccl pack knobs" ;;
esac
STEPS=${STEPS:-$mode_steps}
LEG=${LEG:-copy-engine}
PROFILE=${PROFILE:-$RESULTS/profile-$LEG.json}
STEP_TIMEOUT=${STEP_TIMEOUT:-0}
DEADLINE=${DEADLINE:-0}
DTYPE=${DTYPE:-f16}
read -r -a BENCH_FLAGS <<<"${BENCH_FLAGS:-}"
read -r -a CALIBRATE_FLAGS <<<"${CALIBRATE_FLAGS:-}"
TIME_SCALE=${TIME_SCALE:-1}
for v in STEP_TIMEOUT DEADLINE TIME_SCALE; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || {
    echo "$v must be a number of seconds, got '${!v}'"
    exit 2
  }
done
case $DTYPE in f16 | bf16) ;; *)
  echo "DTYPE must be f16 or bf16, got '$DTYPE'"
  exit 2
  ;;
esac
# The bound of each command of a step: TIMEOUT_<step>, else STEP_TIMEOUT.
limit_of() {
  local v="TIMEOUT_$1"
  echo "${!v:-$STEP_TIMEOUT}"
}
[ "$TIME_SCALE" -ge 1 ] || {
  echo "TIME_SCALE must be at least 1"
  exit 2
}
# The session's clock, in seconds since run.sh started. TIME_SCALE=S (a
# dry run on stand-ins, test/Scripts/gpu/session.test) makes it run S
# times faster than the wall clock: every bound and DEADLINE stay in the
# session's seconds, each command gets 1/S of its bound in wall time, and
# steps.csv records session seconds, so stand-ins that sleep a GPU
# session's times divided by S replay that session's timeline.
# tick: NOW, the session's clock (no subshell: cheap enough for every
# command's bookkeeping).
usec() {
  USEC=${EPOCHREALTIME:-}
  USEC=${USEC/[.,]/}
  [ -n "$USEC" ] || USEC=$((SECONDS * 1000000))
}
usec
CLOCK0=$USEC
tick() {
  usec
  NOW=$(((USEC - CLOCK0) * TIME_SCALE / 1000000))
}
# wall S: session seconds S as wall seconds for timeout(1) ("0.450").
wall() {
  local ms=$(($1 * 1000 / TIME_SCALE))
  printf '%d.%03d' $((ms / 1000)) $((ms % 1000))
}
mkdir -p "$OUT" "$RESULTS"
echo "command,exit,seconds,bound" >"$RESULTS/steps.csv"
status=0

step() { echo; echo "=== $*"; }
# The step running (step_<name> below), whose bounds apply (limit_of).
current=preflight
# Packs $RESULTS into $OUT when they differ (the device tool returns few
# files).
bundle() {
  [ "$(cd "$RESULTS" && pwd)" != "$(cd "$OUT" && pwd)" ] || return 0
  tar -czf "$OUT/$MODE-results.tar.gz" -C "$RESULTS" . 2>/dev/null || true
}
finish() { # exit status
  # The Markdown summary (report.py: sweeps, eta, prediction error, pack,
  # knobs), also beside the bundle in $OUT.
  if command -v "${PYTHON:-python3}" >/dev/null 2>&1; then
    "${PYTHON:-python3}" "$HERE/report.py" "$RESULTS" >"$RESULTS/report.md" 2>&1 &&
      [ "$(cd "$RESULTS" && pwd)" != "$(cd "$OUT" && pwd)" ] &&
      cp "$RESULTS/report.md" "$OUT/$MODE-report.md"
  fi
  tick
  step "done (status $1) at $NOW s (DEADLINE $DEADLINE s); results in $RESULTS"
  bundle
  exit "$1"
}
# run [--optional] [--timeout S] NAME COMMAND...: logs to $RESULTS/NAME.txt.
# The bound is S (default: the current step's, limit_of), at most what
# DEADLINE leaves. The command sees OVERLAP_STEP=NAME (its name in
# steps.csv) and OVERLAP_STEP_START (when it began, microseconds since the
# epoch): the dry run's stand-ins sleep NAME's time less what has passed.
# steps.csv's exit column: the status, "cut" when DEADLINE's bound stopped
# it, "skipped" when DEADLINE left no time to start it; neither is a
# failure (the step did not fail; the session ran out of time).
run() {
  local optional=0 limit
  limit=$(limit_of "$current")
  while [ $# -gt 0 ]; do
    case $1 in
    --optional) optional=1 ;;
    --timeout)
      limit=$2
      shift
      ;;
    *) break ;;
    esac
    shift
  done
  local name=$1 by_deadline=0
  shift
  tick
  if [ "$DEADLINE" -gt 0 ]; then
    local left=$((DEADLINE - NOW - 15))
    if [ "$left" -lt 10 ]; then
      step "$name: skipped: DEADLINE ($DEADLINE s; run.sh at $NOW s)"
      echo "$name,skipped,0,0" >>"$RESULTS/steps.csv"
      [ "$optional" -eq 1 ] && return 0
      finish 1
    fi
    if [ "$limit" -eq 0 ] || [ "$limit" -gt "$left" ]; then
      limit=$left
      by_deadline=1
    fi
  fi
  step "$name: $*"
  local -a bound=()
  [ "$limit" -gt 0 ] && bound=(timeout -k "$(wall 10)" "$(wall "$limit")")
  local began=$NOW
  OVERLAP_STEP=$name OVERLAP_STEP_START=$USEC ${bound[@]+"${bound[@]}"} "$@" 2>&1 |
    tee "$RESULTS/$name.txt"
  local rc=${PIPESTATUS[0]} took verdict
  tick
  took=$((NOW - began))
  verdict=$rc
  # timeout(1) says 124, or 137 after its KILL.
  if [ "$by_deadline" -eq 1 ] && { [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; }; then
    verdict="cut"
  fi
  # Every step's duration, to plan the next session's calls.
  echo "--- $name: exit $rc after $took s (run.sh at $NOW s)"
  echo "$name,$verdict,$took,$limit" >>"$RESULTS/steps.csv"
  bundle
  [ "$rc" -eq 0 ] && return 0
  if [ "$verdict" = cut ]; then
    echo "*** $name: cut by DEADLINE after $took s (recorded as cut, not failed)"
    return 0
  fi
  status=1
  [ "$rc" -eq 124 ] && [ "$limit" -gt 0 ] &&
    echo "*** $name: stopped after $limit s (timeout)"
  if [ "$rc" -eq 126 ] || [ "$rc" -eq 127 ]; then
    echo "*** $name could not run (exit $rc: a missing command or library); stopping"
    finish 2
  fi
  if [ "$optional" -eq 0 ]; then
    echo "*** $name failed (exit $rc); stopping"
    finish 1
  fi
  echo "*** $name failed (exit $rc); going on (optional step)"
  return 0
}

for s in $STEPS; do
  case $s in
  tests | layer | jax | rankmajor | llama | tcp | core | programs | memcheck | \
    calibrate | short | layout | gate | dispatch | tiles | commsms | bench | \
    multi | nccl | pack | knobs) ;;
  *)
    echo "unknown step '$s' in STEPS (tests layer jax rankmajor llama tcp core programs memcheck calibrate short layout gate dispatch tiles commsms bench multi nccl pack knobs)"
    exit 2
    ;;
  esac
done
case $LEG in copy-engine | sm-copy) ;; *)
  echo "LEG must be copy-engine or sm-copy (the one-process legs), got '$LEG'"
  exit 2
  ;;
esac
[[ "${NCCL_NP:-1}" =~ ^[0-9]+$ ]] || {
  echo "NCCL_NP must be a number of processes"
  exit 2
}
for f in "$BUILD/lib/liboverlap_runtime_cuda.so" \
  "$BUILD/unittests/OverlapRuntimeCudaTests" \
  "$BUILD/bin/overlap-bench" "$BUILD/bin/overlap-calibrate" \
  "$BUILD/bin/overlap-exec"; do
  [ -e "$f" ] || {
    echo "missing $f: build with CUDA first (scripts/gpu/prepare.sh, docs/cuda.md)"
    exit 2
  }
done

{ date -u; nvidia-smi || true; nvcc --version 2>/dev/null || true; } \
  >"$RESULTS/device.txt" 2>&1
head -20 "$RESULTS/device.txt"

# Preflight: LD_LIBRARY_PATH from where the libraries are; every binary
# must load (exit 2 otherwise).
# shellcheck source=preflight.sh
. "$HERE/preflight.sh"
step "preflight"
unset PREFLIGHT_NCCL_VERSION # the preflight's finding, not the caller's
preflight "$BUILD" >"$RESULTS/preflight.txt" 2>&1 # here: it exports
rc=$?
# The preflight runs the machine's own tools, not the stand-ins of a dry
# run: its wall time counts once, not TIME_SCALE times.
usec
CLOCK0=$((USEC - (USEC - CLOCK0) / TIME_SCALE))
cat "$RESULTS/preflight.txt"
[ "$rc" -eq 0 ] || finish 2

# Tests. With a GPU nothing may be skipped: a skip means no device.
# The two-process test (two ranks through the rendezvous file; on one GPU
# NCCL must refuse them) runs alone: if it hangs, its bound ends it, not
# the other tests' report.
step_tests() {
  local two=CudaLaunchedDevice.TwoProcesses
  run --optional cuda-tests "$BUILD/unittests/OverlapRuntimeCudaTests" \
    --gtest_filter="-$two" --gtest_output="xml:$RESULTS/cuda-tests.xml"
  if grep -q "SKIPPED" "$RESULTS/cuda-tests.txt"; then
    echo "*** CUDA tests skipped: no usable device?"
    status=1
    finish 1
  fi
  run --optional cuda-tests-two-processes \
    "$BUILD/unittests/OverlapRuntimeCudaTests" --gtest_filter="$two" \
    --gtest_output="xml:$RESULTS/cuda-tests-two-processes.xml"
}

# Compiled programs on the GPU: plan vs one-tile references (cuda, host).
# core: CORE_PROGRAMS alone; programs: the others (every one when the
# session's core step is not among STEPS) and the MLP's variants.
run_programs() { # name, then environment assignments for programs.sh
  local name=$1
  shift
  if [ -f "$BUILD/gpu-programs/programs.txt" ]; then
    run --optional "$name" env OVERLAP_EXEC="$BUILD/bin/overlap-exec" "$@" \
      "$HERE/programs.sh" run "$BUILD/gpu-programs"
  else
    echo "*** no $BUILD/gpu-programs: run scripts/gpu/prepare.sh where MLIR is"
    status=1
  fi
}
step_core() {
  run_programs programs-core PROGRAMS_ONLY="$CORE_PROGRAMS" PROGRAMS_VARIANTS=0
}
step_programs() {
  local skip=""
  [[ " $STEPS " == *" core "* ]] && skip+="|$CORE_PROGRAMS"
  [[ " $STEPS " == *" jax "* ]] && skip+="|jax-.*"
  [[ " $STEPS " == *" llama "* ]] && skip+="|llama-mlp"
  if [ -n "$skip" ]; then
    run_programs programs PROGRAMS_SKIP="${skip#|}"
  else
    run_programs programs
  fi
}

# What has never run on a GPU (issue 50): the device layer's stream order
# (test/Integration/device-layer-streams.test's check: a spin kernel holds
# the legacy stream while the layer runs on a non-blocking one), the JAX
# layers on a one-device mesh against JAX's own outputs, the Llama FFN
# (torch-layout weights: cuBLASLt's transposed operands), the process
# executor as one process over TCP.
step_layer() {
  local check=$BUILD/bin/overlap-device-layer-check
  local so=$BUILD/gpu-programs/device-layer/mrs1.so
  if [ -x "$check" ] && [ -f "$so" ]; then
    run --optional device-layer "$check" "$so"
  else
    echo "*** no $check or $so: run scripts/gpu/prepare.sh where MLIR is"
    status=1
  fi
}
# programs_named NAME REGEX: the compiled programs matching REGEX alone,
# without the MLP's variants; an error when none was compiled.
programs_named() {
  local list=$BUILD/gpu-programs/programs.txt
  if [ -f "$list" ] && ! awk '{print $1}' "$list" | grep -Eqx "$2"; then
    echo "*** no program matching '$2' in $list (prepare.sh needs jax for the JAX layers)"
    status=1
    return 0
  fi
  run_programs "$1" PROGRAMS_ONLY="$2" PROGRAMS_VARIANTS=0
}
step_jax() { programs_named programs-jax 'jax-.*'; }
step_llama() { programs_named programs-llama 'llama-mlp'; }
# The process executor, one process over TCP: torchrun's variables from
# the lit suite's stand-in (test/Tools/overlap-exec/Inputs/torchrun.py),
# the compiled MLP against its one-tile build.
step_tcp() {
  local dir=$BUILD/gpu-programs
  if [ ! -f "$dir/mlp.so" ]; then
    echo "*** no $dir/mlp.so: the TCP process run is skipped"
    status=1
    return 0
  fi
  run --optional process-tcp env OVERLAP_PROCESS_TRANSPORT=tcp \
    "${PYTHON:-python3}" "$HERE/../../test/Tools/overlap-exec/Inputs/torchrun.py" \
    --nproc-per-node 1 --timeout "$(limit_of tcp)" \
    "$BUILD/bin/overlap-exec" "$dir/mlp.so" --ref "$dir/mlp.ref.so" \
    --backend cuda --ranks-as processes --rtol 1e-4 --atol 1e-4
}

# compute-sanitizer memcheck: the unit tests, a compiled program and the
# bench's kernels (pack, sm-copy) on small shapes.
step_memcheck() {
  sanitizer=$(command -v compute-sanitizer ||
    ls "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer" 2>/dev/null)
  if [ -z "$sanitizer" ]; then
    echo "*** no compute-sanitizer on PATH or in CUDA_HOME/bin: memcheck skipped"
    status=1
  else
    mt=${MEMCHECK_TIMEOUT:-240}
    # --report-api-errors no: NCCL's own init probes kernels with
    # cudaFuncGetAttributes and gets cudaErrorNoKernelImageForDevice for
    # the architectures its library has no code for (56 such reports in
    # the first session, none of them a memory error); the memory errors
    # are what this step is for.
    mc=("$sanitizer" --tool memcheck --leak-check no --report-api-errors no
      --error-exitcode 9)
    runs=" ${MEMCHECK_RUNS:-tests initcheck mlp} "
    [[ "$runs" == *" tests "* ]] &&
      run --optional --timeout "$mt" memcheck-tests "${mc[@]}" \
        "$BUILD/unittests/OverlapRuntimeCudaTests" \
        --gtest_filter="${MEMCHECK_FILTER:--CudaLaunched*}"
    # initcheck: device memory read before anything wrote it.
    [[ "$runs" == *" initcheck "* ]] &&
      run --optional --timeout "$mt" initcheck-tests "$sanitizer" \
        --tool initcheck --report-api-errors no --error-exitcode 9 \
        "$BUILD/unittests/OverlapRuntimeCudaTests" \
        --gtest_filter="${MEMCHECK_FILTER:--CudaLaunched*}"
    if [[ "$runs" == *" mlp "* ]] && [ -f "$BUILD/gpu-programs/mlp.so" ]; then
      run --optional --timeout "$mt" memcheck-mlp "${mc[@]}" \
        "$BUILD/bin/overlap-exec" "$BUILD/gpu-programs/mlp.so" \
        --ref "$BUILD/gpu-programs/mlp.ref.so" --backend cuda \
        --rtol 1e-4 --atol 1e-4
    fi
    [ "$MODE" = session ] ||
      run --optional --timeout "$mt" memcheck-bench "${mc[@]}" \
        "$BUILD/bin/overlap-bench" --leg sm-copy --ranks 4 --tiles 4 \
        --collective all-reduce,reduce-scatter,all-gather,all-to-all \
        --shapes 512x256x256 --warmup 1 --iters 2 --input-sets 1
    # racecheck (shared-memory hazards) on Overlap's own kernels: the spin
    # wait and the pack kernel ($RACECHECK_FILTER; "" skips it).
    rf=${RACECHECK_FILTER-CudaDevice.SignalWaitSpin*:CudaDevice.PackAndUnpack*}
    if [ -n "$rf" ]; then
      run --optional --timeout "$mt" racecheck-tests "$sanitizer" \
        --tool racecheck --error-exitcode 9 \
        "$BUILD/unittests/OverlapRuntimeCudaTests" --gtest_filter="$rf"
    fi
  fi
}

# Calibrate (the sweep's (N, K) pairs, collectives over 8 ranks).
# nk_pairs SHAPES: the distinct (N, K) pairs of MxNxK,... as NxK,...
nk_pairs() {
  tr ',' '\n' <<<"$1" | sed -n 's/^[0-9]*x\([0-9]*x[0-9]*\)$/\1/p' |
    awk '!seen[$0]++' | paste -sd, -
}
step_calibrate() {
  nk=()
  if [ -n "${SWEEP_SHAPES:-}" ]; then
    pairs=$(nk_pairs "$SWEEP_SHAPES")
    [ -n "$pairs" ] && nk=(--nk "$pairs")
  fi
  # Required, except in a session: there the sweeps of 4 uniform tiles,
  # pack, nccl and the rest still run without a profile.
  cal=()
  [ "$MODE" = session ] && cal=(--optional)
  local leg name
  for leg in ${CALIBRATE_LEGS:-$LEG}; do
    name=calibrate
    [ "$leg" = "$LEG" ] || name=calibrate-$leg
    run ${cal[@]+"${cal[@]}"} "$name" "$BUILD/bin/overlap-calibrate" --leg "$leg" --dtype "$DTYPE" \
      --ranks 8 ${nk[@]+"${nk[@]}"} ${CALIBRATE_FLAGS[@]+"${CALIBRATE_FLAGS[@]}"} \
      --out "$RESULTS/profile-$leg.json"
  done
}

# The sweeps, one run per collective so that one failing run (a runtime
# error exits the tool) leaves the others' tables: planned with the profile,
# then 4 uniform tiles (for reduce-scatter and all-gather, multiples of 8).
sweep() { # name, overlap-bench arguments...: table name.txt, name.csv
  local name=$1
  shift
  run --optional "$name" "$BUILD/bin/overlap-bench" "$@" \
    --csv "$RESULTS/$name.csv" ${BENCH_FLAGS[@]+"${BENCH_FLAGS[@]}"}
}
# sweep_planned NAME PROFILE overlap-bench arguments...: NAME planned with
# PROFILE (skipped, saying so, without one).
sweep_planned() {
  local name=$1 profile=$2
  shift 2
  if [ -f "$profile" ]; then
    sweep "$name" "$@" --profile "$profile" --strategy auto
  else
    echo "*** no profile $profile: $name is skipped"
    status=1
  fi
}
# sweep_pair NAME PROFILE overlap-bench arguments...: bench-planned-NAME
# planned with PROFILE, then bench-uniform4-NAME with 4 uniform tiles
# (SHORT_UNIFORM=0 in a short step: planned only).
sweep_pair() {
  local name=$1 profile=$2
  shift 2
  sweep_planned "bench-planned-$name" "$profile" "$@"
  [ "$current" = short ] && [ "${SHORT_UNIFORM:-1}" = 0 ] && return 0
  sweep "bench-uniform4-$name" "$@" --tiles 4
}
# The profile of leg LEG: this run's calibration, else PROFILE.
leg_profile() {
  local p=$RESULTS/profile-$1.json
  [ -f "$p" ] || p=$PROFILE
  echo "$p"
}
shapes=()
[ -n "${SWEEP_SHAPES:-}" ] && shapes=(--shapes "$SWEEP_SHAPES")
step_bench() {
  for coll in all-reduce reduce-scatter all-gather; do
    sweep_pair "$coll" "$PROFILE" --leg "$LEG" --ranks 8 --dtype "$DTYPE" \
      --collective "$coll" ${shapes[@]+"${shapes[@]}"}
  done
  # Expert parallelism, one expert per rank: each exchange with 4 uniform
  # tiles and planned (the profile's all-to-all curve is calibrated).
  a2a=()
  if [ -n "${A2A_SHAPES:-}" ]; then a2a=(--shapes "$A2A_SHAPES"); else
    a2a=(${shapes[@]+"${shapes[@]}"}); fi
  for side in dispatch combine; do
    sweep_pair "all-to-all-$side" "$PROFILE" --leg "$LEG" --ranks 8 \
      --dtype "$DTYPE" --collective all-to-all --side "$side" \
      ${a2a[@]+"${a2a[@]}"}
  done
}

# The short bench: SHORT_SHAPES, the three collectives, on the copy-engine
# and the sm-copy legs, planned with the profile (when there is one) and
# with 4 uniform tiles; each run reports serial, overlapped and ideal
# times, eta, the prediction and its check.
step_short() {
  local leg profile
  for leg in ${SHORT_LEGS:-copy-engine sm-copy}; do
    # Each leg plans with its own calibration (the sm-copy leg's copies run
    # on SMs from HBM to HBM, far faster than the copy engines' to host),
    # else with PROFILE.
    profile=$RESULTS/profile-$leg.json
    [ -f "$profile" ] || profile=$PROFILE
    sweep_pair "short-$leg" "$profile" --leg "$leg" --ranks 8 \
      --dtype "$DTYPE" --shapes "$SHORT_SHAPES" \
      --collective all-reduce,reduce-scatter,all-gather
  done
}

# Issue 49's questions on the one-GPU legs.
# The rank-major tiles' first run: a small reduce-scatter and all-gather
# on each stand-in leg must say ok (the sum kernel bit for bit).
step_rankmajor() {
  local leg
  for leg in sm-copy copy-engine; do
    run --optional "bench-rank-major-check-$leg" "$BUILD/bin/overlap-bench" \
      --leg "$leg" --ranks 4 --collective reduce-scatter,all-gather \
      --layout rank-major --chunks 2 --shapes 1024x1024x1024 --input-sets 1 \
      --csv "$RESULTS/bench-rank-major-check-$leg.csv"
  done
}
# The new schedule against today's: the planned short reduce-scatter and
# all-gather with the layout forced, rank-major then interleaved
# (copy-engine leg).
step_layout() {
  local layout profile
  profile=$(leg_profile copy-engine)
  for layout in rank-major interleaved; do
    sweep_planned "bench-layout-$layout-short-copy-engine" "$profile" \
      --leg copy-engine --ranks 8 --dtype "$DTYPE" --shapes "$SHORT_SHAPES" \
      --collective reduce-scatter,all-gather --layout "$layout"
  done
}
# The expert-parallel dispatch (packs on the compute stream now) on the
# sm-copy leg, planned, with no SM budget against 16 SMs.
step_dispatch() {
  local sms profile
  profile=$(leg_profile sm-copy)
  for sms in ${DISPATCH_COMM_SMS:-0 16}; do
    sweep_planned "bench-dispatch-comm-sms-$sms-sm-copy" "$profile" \
      --leg sm-copy --ranks 8 --dtype "$DTYPE" --collective all-to-all \
      --side dispatch --shapes "${A2A_SHAPES:-$TRIO_SHAPES}" --comm-sms "$sms"
  done
}
# Forced uniform tiles (the Planner's tile counts against the measured
# best) on three shapes, the three collectives, copy-engine leg.
step_tiles() {
  local t
  for t in ${TILE_COUNTS:-2 4 8 16}; do
    sweep "bench-tiles-$t-copy-engine" --leg copy-engine --ranks 8 \
      --dtype "$DTYPE" --shapes "${TILE_SHAPES:-$TRIO_SHAPES}" \
      --collective "${TILE_COLLECTIVES:-all-reduce,reduce-scatter,all-gather}" \
      --tiles "$t"
  done
}
# The sm-copy leg's SM budget, planned on three shapes: each of
# COMM_SMS_VALUES but the profile's own budget, which the planned short
# sm-copy sweep ran (when the short step is among the steps).
step_commsms() {
  local sms profile own=""
  profile=$(leg_profile sm-copy)
  [[ " $STEPS " == *" short "* ]] && [ -f "$profile" ] &&
    own=$(sed -n 's/.*"comm_sms": *\([0-9][0-9]*\).*/\1/p' "$profile" | head -1)
  for sms in ${COMM_SMS_VALUES:-8 16 32}; do
    if [ "$sms" = "$own" ]; then
      echo "# --comm-sms $sms: the profile's own, bench-planned-short-sm-copy"
      continue
    fi
    sweep_planned "bench-comm-sms-$sms-sm-copy" "$profile" --leg sm-copy \
      --ranks 8 --dtype "$DTYPE" --shapes "${COMM_SMS_SHAPES:-$TRIO_SHAPES}" \
      --collective all-reduce,reduce-scatter,all-gather --comm-sms "$sms"
  done
}

# The timing gate's effect: the planned short sweep on the copy-engine leg
# again with OVERLAP_TIMING_GATE=0 (the start event recorded before the
# host enqueues the tiles, as before the gate).
step_gate() {
  local profile=$RESULTS/profile-copy-engine.json
  [ -f "$profile" ] || profile=$PROFILE
  if [ ! -f "$profile" ]; then
    echo "*** no profile $profile: the gate comparison is skipped"
    status=1
    return 0
  fi
  run --optional bench-nogate-planned-short-copy-engine env OVERLAP_TIMING_GATE=0 \
    "$BUILD/bin/overlap-bench" --leg copy-engine --ranks 8 --dtype "$DTYPE" \
    --shapes "$SHORT_SHAPES" --collective all-reduce,reduce-scatter,all-gather \
    --profile "$profile" --strategy auto \
    --csv "$RESULTS/bench-nogate-planned-short-copy-engine.csv" \
    ${BENCH_FLAGS[@]+"${BENCH_FLAGS[@]}"}
}

np=${NCCL_NP:-1}
read -r -a launcher <<<"${LAUNCHER:-$HERE/spawn.sh $np}"
key() { echo "overlap-run-$$-$1-$(date +%s%N)"; }
# nccl_at_least VERSION MAJOR MINOR: VERSION ("2.30.4") is at least
# MAJOR.MINOR; false for an empty or unreadable one.
nccl_at_least() {
  local major minor
  IFS=. read -r major minor _ <<<"$1"
  [[ "$major" =~ ^[0-9]+$ && "$minor" =~ ^[0-9]+$ ]] || return 1
  [ "$major" -gt "$2" ] || { [ "$major" -eq "$2" ] && [ "$minor" -ge "$3" ]; }
}

step_nccl() {
  sweep bench-nccl-1rank --leg nccl \
    --collective all-reduce,reduce-scatter,all-gather \
    --shapes 4096x8192x3072,1024x4096x1024 --tiles 4
  for side in dispatch combine; do
    sweep "bench-nccl-1rank-all-to-all-$side" --leg nccl \
      --collective all-to-all --side "$side" \
      --shapes 4096x8192x3072,1024x4096x1024 --tiles 4
  done
  # N ranks on this one GPU, for correctness (NCCL >= 2.30 allows it with
  # NCCL_MULTI_RANK_GPU_ENABLE=1): every rank's checks must pass.
  shared=${SHARED_NP-2 4}
  if [ -n "$shared" ]; then
    if nccl_at_least "${PREFLIGHT_NCCL_VERSION:-}" 2 30; then
      for n in $shared; do
        # label, collectives, overlap-bench's extra arguments
        for entry in "three all-reduce,reduce-scatter,all-gather" \
          "all-to-all-dispatch all-to-all --side dispatch" \
          "all-to-all-combine all-to-all --side combine"; do
          read -r label coll extra <<<"$entry"
          read -r -a extra <<<"$extra"
          run --optional "nccl-shared-$n-$label" \
            env NCCL_MULTI_RANK_GPU_ENABLE=1 \
            OVERLAP_BOOTSTRAP_KEY="$(key "shared-$n-$label")" \
            "$HERE/spawn.sh" "$n" "$BUILD/bin/overlap-bench" --leg nccl \
            --dtype "$DTYPE" --collective "$coll" ${extra[@]+"${extra[@]}"} \
            --shapes 1024x4096x1024,2048x8192x3072 --tiles 4 \
            --warmup 1 --iters 2 --input-sets 2 \
            --csv "$RESULTS/nccl-shared-$n-$label.csv"
        done
      done
    else
      echo "# SHARED_NP: NCCL ${PREFLIGHT_NCCL_VERSION:-of unknown version}" \
        "refuses several ranks on one GPU (2.30 or newer allows it);" \
        "only one-rank smoke tests here"
    fi
  fi
  # N ranks over N GPUs, unless the multi step runs them.
  [[ " $STEPS " == *" multi "* ]] || step_multi
}

# N ranks, one process per GPU (NCCL_NP=N; a session sets it to the GPUs
# it finds and runs this step first): overlap-calibrate --leg nccl, then
# the sweep (MULTI_SHAPES, default SWEEP_SHAPES) planned with that
# profile, rank-major forced on reduce-scatter and all-gather, and 4
# uniform tiles. Its bounds (TIMEOUT_multi) allow N processes' NCCL
# start-up beside the one-GPU steps' work.
step_multi() {
  [ "$np" -gt 1 ] || return 0
  local shp=${MULTI_SHAPES:-${SWEEP_SHAPES:-}}
  local -a mshapes=() mnk=()
  if [ -n "$shp" ]; then
    mshapes=(--shapes "$shp")
    mnk=(--nk "$(nk_pairs "$shp")")
  fi
  local nccl_profile="$RESULTS/profile-nccl-$np.json"
  rm -f "$nccl_profile" # plan only with this run's profile
  run --optional "calibrate-nccl-$np" \
    env OVERLAP_BOOTSTRAP_KEY="$(key calibrate)" \
    "${launcher[@]}" "$BUILD/bin/overlap-calibrate" --leg nccl --dtype "$DTYPE" \
    ${mnk[@]+"${mnk[@]}"} ${CALIBRATE_FLAGS[@]+"${CALIBRATE_FLAGS[@]}"} \
    --out "$nccl_profile"
  local -a all=(--leg nccl --dtype "$DTYPE" ${mshapes[@]+"${mshapes[@]}"})
  local three=all-reduce,reduce-scatter,all-gather
  # label, overlap-bench's arguments (the planned ones need the profile)
  local entry label
  for entry in "planned --collective $three --strategy auto" \
    "rank-major --collective reduce-scatter,all-gather --layout rank-major" \
    "uniform4 --collective $three --tiles 4"; do
    read -r label entry <<<"$entry"
    local -a extra
    read -r -a extra <<<"$entry"
    if [ "$label" != uniform4 ]; then
      if [ ! -f "$nccl_profile" ]; then
        echo "*** no profile $nccl_profile: the $label $np-rank sweep is skipped"
        status=1
        continue
      fi
      extra+=(--profile "$nccl_profile")
    fi
    run --optional "bench-nccl-$np-$label" \
      env OVERLAP_BOOTSTRAP_KEY="$(key "$label")" \
      "${launcher[@]}" "$BUILD/bin/overlap-bench" "${all[@]}" "${extra[@]}" \
      --csv "$RESULTS/bench-nccl-$np-$label.csv" \
      ${BENCH_FLAGS[@]+"${BENCH_FLAGS[@]}"}
  done
}

# The pack kernel: 2-D blocks of 2 B .. 16 KiB rows, 64 MiB each.
step_pack() {
  run --optional pack "$BUILD/bin/overlap-bench" --pack \
    --csv "$RESULTS/pack.csv"
}

# The CUDA backend's options, each on and off; every CSV says its settings
# (the knobs column, and the runtime's description in its first line).
step_knobs() {
  kshapes=${KNOB_SHAPES:-4096x8192x3072,1024x4096x1024,8192x8192x1024}
  kleg=${KNOB_LEG:-sm-copy}
  kcommon=(--ranks 8 --dtype "$DTYPE" --tiles 4
    --collective all-reduce,reduce-scatter,all-gather --shapes "$kshapes")
  # The SMs a profile reserves for communication: the one in use, else the
  # datasheet profile's.
  profile_sms=""
  for p in "$PROFILE" "$HERE/../../profiles/h100-nvlink-datasheet.json"; do
    [ -f "$p" ] || continue
    profile_sms=$(sed -n 's/.*"comm_sms": *\([0-9][0-9]*\).*/\1/p' "$p" | head -1)
    [ -n "$profile_sms" ] && break
  done
  # What the sm-copy leg is for first (no budget, the profile's budget,
  # both priorities), then more budgets, then the rest.
  read -r -a budgets <<<"0 $profile_sms ${KNOB_COMM_SMS:-8 32}"
  settings=()
  seen=" "
  for b in "${budgets[@]}"; do
    [[ "$seen" == *" $b "* ]] && continue
    seen+="$b "
    settings+=("comm-sms-$b --comm-sms $b")
    [ ${#settings[@]} -eq 2 ] &&
      settings+=("comm-priority-high --comm-priority high"
        "comm-priority-normal --comm-priority normal")
  done
  settings+=("flags-device --flags device" "flags-host --flags host"
    "sync-memop --sync memop" "sync-spin --sync spin"
    "sync-event --sync event"
    "gemm-cache-on --gemm-cache on" "gemm-cache-off --gemm-cache off"
    "gemm-autotune-1 --gemm-autotune 1" "gemm-autotune-4 --gemm-autotune 4")
  kfiles=()
  for setting in "${settings[@]}"; do
    read -r -a words <<<"$setting"
    sweep "knob-${words[0]}" --leg "$kleg" "${kcommon[@]}" "${words[@]:1}"
    [ -f "$RESULTS/knob-${words[0]}.csv" ] &&
      kfiles+=("$RESULTS/knob-${words[0]}.csv")
  done
  # The copy-engine leg cannot see the SM budget or the priority; with
  # KNOB_CONTRAST=1 show it.
  if [ "${KNOB_CONTRAST:-0}" = 1 ] && [ "$kleg" != copy-engine ]; then
    for setting in "comm-sms-0 --comm-sms 0" \
      "comm-sms-${profile_sms:-16} --comm-sms ${profile_sms:-16}" \
      "comm-priority-high --comm-priority high" \
      "comm-priority-normal --comm-priority normal"; do
      read -r -a words <<<"$setting"
      sweep "knob-copy-engine-${words[0]}" --leg copy-engine "${kcommon[@]}" \
        "${words[@]:1}"
      [ -f "$RESULTS/knob-copy-engine-${words[0]}.csv" ] &&
        kfiles+=("$RESULTS/knob-copy-engine-${words[0]}.csv")
    done
  fi
  # NCCL's CTA cap (maxCTAs = comm_sms) on and off: only NCCL's kernels
  # see it, so only the nccl leg over several GPUs can decide it.
  for cap in on off; do
    if [ "$np" -gt 1 ]; then
      run --optional "knob-nccl-cta-cap-$cap" \
        env OVERLAP_BOOTSTRAP_KEY="$(key "cap-$cap")" \
        "${launcher[@]}" "$BUILD/bin/overlap-bench" --leg nccl --dtype "$DTYPE" \
        --tiles 4 --collective all-reduce,reduce-scatter,all-gather \
        --shapes "$kshapes" --nccl-cta-cap "$cap" \
        --csv "$RESULTS/knob-nccl-cta-cap-$cap.csv" \
        ${BENCH_FLAGS[@]+"${BENCH_FLAGS[@]}"}
    else
      # One rank: a smoke test of both settings (NCCL copies; no channels).
      sweep "knob-nccl-cta-cap-$cap-1rank" --leg nccl --dtype "$DTYPE" --tiles 4 \
        --collective all-reduce --shapes 1024x4096x1024 --nccl-cta-cap "$cap"
    fi
    [ -f "$RESULTS/knob-nccl-cta-cap-$cap.csv" ] &&
      kfiles+=("$RESULTS/knob-nccl-cta-cap-$cap.csv")
  done
  [ "$np" -gt 1 ] ||
    echo "# --nccl-cta-cap on/off: one GPU here; NCCL_NP=N on N GPUs decides it"
  # The zero-SM all-gather (NCCL's copy engines, NCCL >= 2.28): only NCCL's
  # all-gathers see it, so again only the nccl leg over several GPUs can
  # decide it. The runtime line of each run says whether it fell back.
  for z in on off; do
    if [ "$np" -gt 1 ]; then
      run --optional "knob-zero-sm-all-gather-$z" \
        env OVERLAP_BOOTSTRAP_KEY="$(key "zsm-$z")" \
        "${launcher[@]}" "$BUILD/bin/overlap-bench" --leg nccl --dtype "$DTYPE" \
        --tiles 4 --collective all-gather \
        --shapes "$kshapes" --zero-sm-all-gather "$z" \
        --csv "$RESULTS/knob-zero-sm-all-gather-$z.csv" \
        ${BENCH_FLAGS[@]+"${BENCH_FLAGS[@]}"}
    else
      # One rank: a smoke test of both settings (and of the fallback).
      sweep "knob-zero-sm-all-gather-$z-1rank" --leg nccl --dtype "$DTYPE" \
        --tiles 4 --collective all-gather --shapes 1024x4096x1024 \
        --zero-sm-all-gather "$z"
    fi
    [ -f "$RESULTS/knob-zero-sm-all-gather-$z.csv" ] &&
      kfiles+=("$RESULTS/knob-zero-sm-all-gather-$z.csv")
  done
  # One table of every setting: the first header, then every file's rows.
  [ ${#kfiles[@]} -gt 0 ] &&
    awk '/^#/ { next } /^leg,/ { if (seen++) next } { print }' \
      "${kfiles[@]}" >"$RESULTS/knobs.csv"
  # Tile GEMMs: G batched GEMMs of rows/G rows (what the decomposition runs)
  # vs one contiguous GEMM of the tile's rows.
  tshapes=(${shapes[@]+"${shapes[@]}"})
  [ -n "${TILE_GEMM_SHAPES:-}" ] && tshapes=(--shapes "$TILE_GEMM_SHAPES")
  sweep tile-gemm --leg "$kleg" --ranks 8 --dtype "$DTYPE" --tiles 4 \
    --collective reduce-scatter,all-gather --input-sets 1 --tile-gemm both \
    ${tshapes[@]+"${tshapes[@]}"}
  # Allocation: only a program that allocates while it runs can tell pool
  # from sync; the compiled MLP does (its fills, ReLU and tiles' buffers).
  if [ -f "$BUILD/gpu-programs/mlp.so" ]; then
    echo "alloc,program_ms" >"$RESULTS/knob-alloc.csv"
    for a in pool sync; do
      run --optional "knob-alloc-$a" env OVERLAP_CUDA_ALLOC=$a \
        "$BUILD/bin/overlap-exec" "$BUILD/gpu-programs/mlp.so" \
        --backend cuda --iters 20
      ms=$(sed -n 's/.*run: program \([0-9.]*\) ms.*/\1/p' \
        "$RESULTS/knob-alloc-$a.txt" | head -1)
      echo "$a,${ms:-}" >>"$RESULTS/knob-alloc.csv"
    done
  else
    echo "*** no $BUILD/gpu-programs/mlp.so: --alloc pool vs sync is skipped"
    status=1
  fi
}

# The steps, in the order STEPS names them.
for s in $STEPS; do
  current=$s
  "step_$s"
done
finish "$status"
