#!/usr/bin/env bash
# Starts N ranks of a command on this machine, with no MPI and no torchrun:
# the "by hand" launcher of docs/cuda.md (OVERLAP_RANK, OVERLAP_WORLD_SIZE,
# OVERLAP_LOCAL_RANK and one OVERLAP_BOOTSTRAP_KEY for the job), so that
# overlap-bench and overlap-calibrate --leg nccl run on any machine.
#
# Usage: scripts/gpu/spawn.sh N COMMAND [ARG...]
#
# Each rank's device is its local rank modulo the visible devices: N ranks
# on one GPU need NCCL >= 2.30 and NCCL_MULTI_RANK_GPU_ENABLE=1 (NCCL
# refuses two ranks on one device otherwise). Every rank's output goes to
# this script's stdout and stderr (the tools print on rank 0 only).
#
# Exit status: 0 when every rank exited 0; else the first failing rank's
# status. Once a rank has failed the others get SPAWN_GRACE seconds
# (default 30: the runtime's own wait timeouts end them sooner) and are then
# killed, so that a rank stuck in NCCL's initialization (which has no
# timeout) cannot hang the job. SIGTERM or SIGINT (timeout(1)) kills every
# rank. Status 2: bad arguments.
set -u

usage() {
  echo "usage: $0 N COMMAND [ARG...]  (N >= 1 ranks)" >&2
  exit 2
}
[ $# -ge 2 ] || usage
n=$1
shift
[[ "$n" =~ ^[1-9][0-9]*$ ]] || usage
grace=${SPAWN_GRACE:-30}
[[ "$grace" =~ ^[0-9]+$ ]] || {
  echo "spawn: SPAWN_GRACE must be a number of seconds, got '$grace'" >&2
  exit 2
}

export OVERLAP_WORLD_SIZE=$n
export OVERLAP_BOOTSTRAP_KEY=${OVERLAP_BOOTSTRAP_KEY:-spawn-$$-$(date +%s%N)}
pids=()
# Each rank in a process group of its own (job control), so that killing a
# rank kills what it started too.
set -m
kill_all() {
  local p
  for p in "${pids[@]}"; do
    kill -TERM -- "-$p" 2>/dev/null
  done
}
trap 'kill_all; exit 143' TERM INT

for ((r = 0; r < n; r++)); do
  OVERLAP_RANK=$r OVERLAP_LOCAL_RANK=$r "$@" </dev/null &
  pids+=($!)
done

declare -A ended=()
rc=0
failed_at=
killed=0
while [ ${#ended[@]} -lt "$n" ]; do
  for r in "${!pids[@]}"; do
    [ -n "${ended[$r]:-}" ] && continue
    kill -0 "${pids[$r]}" 2>/dev/null && continue
    wait "${pids[$r]}"
    s=$?
    ended[$r]=$s
    if [ "$s" -ne 0 ] && [ "$rc" -eq 0 ]; then
      rc=$s
      failed_at=$SECONDS
      echo "spawn: rank $r of $n exited with status $s" >&2
    fi
  done
  [ ${#ended[@]} -ge "$n" ] && break
  if [ -n "$failed_at" ] && [ "$killed" -eq 0 ] &&
    [ $((SECONDS - failed_at)) -ge "$grace" ]; then
    echo "spawn: killing the ranks still running ${grace} s after the" \
      "first failure" >&2
    kill_all
    killed=1
  fi
  sleep 0.2
done
exit "$rc"
