#!/usr/bin/env bash
# Stands in for `overlap-exec ... --backend cuda` where there is no GPU, so
# that scripts/gpu/programs.sh's run loop can be checked here: every library
# X.so or X.ref.so becomes X.host.so (the one-tile host build) and every
# backend the host; $REAL_EXEC runs it. The numbers say nothing of CUDA;
# the loop, the listing and the JAX oracle's files are what it checks.
args=()
while [ $# -gt 0 ]; do
  case $1 in
  --backend) args+=(--backend host) && shift ;;
  --ref-backend) shift ;;
  *.host.so) args+=("$1") ;;
  *.ref.so) args+=("${1%.ref.so}.host.so") ;;
  *.so) args+=("${1%.so}.host.so") ;;
  *) args+=("$1") ;;
  esac
  shift
done
exec "${REAL_EXEC:?the real overlap-exec}" "${args[@]}"
