#!/usr/bin/env bash
# Differential compile check: every public entry of every integration
# program (test/Integration, with the templates instantiated for 4 ranks)
# and of every example compiles for --target=host and, when the CUDA
# backend was built, --target=cuda (to an object: ptxas runs, nothing is
# linked). Prints one line per entry and target, then
# "both-targets: N compiled, N failed"; exit 1 on any failure.
#
#   scripts/compile-both-targets.sh DIR [cuda]
#
# Needs overlap-compile ($OVERLAP_COMPILE, else PATH) and, for inputs with
# sharding annotations (partitioned with upstream's sharding-propagation
# and shard-partition first), mlir-opt ($MLIR_OPT, else PATH). errors.mlir
# is left out: its programs are wrong on purpose.
set -u -o pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${1:?usage: $0 DIR [cuda]}
targets="host"
[ "${2:-}" = cuda ] && targets="host cuda"
COMPILE=${OVERLAP_COMPILE:-overlap-compile}
MLIR_OPT=${MLIR_OPT:-mlir-opt}
mkdir -p "$DIR"

compiled=0 failed=0
for src in "$ROOT"/test/Integration/*.mlir "$ROOT"/test/Integration/Inputs/*.mlir \
  "$ROOT"/examples/*.mlir; do
  name=$(basename "$src" .mlir)
  case $name in errors) continue ;; esac
  inst="$DIR/$name.mlir"
  sed -e 's/@R@/4/g' -e 's/@Q1024@/256/g' -e 's/@Q712@/178/g' \
    -e 's/@T@/512/g' -e 's/@E2@/8/g' -e 's/@T64@/256/g' -e 's/@E3@/12/g' \
    -e 's/@SR2@/384/g' -e 's/@SR@/192/g' \
    "$src" >"$inst"
  if grep -q 'shard\.sharding' "$inst"; then
    "$MLIR_OPT" "$inst" --pass-pipeline='builtin.module(func.func(sharding-propagation,shard-partition),canonicalize)' \
      -o "$inst.partitioned" && mv "$inst.partitioned" "$inst" || {
      failed=$((failed + 1))
      echo "*** cannot partition $name"
      continue
    }
  fi
  entries=$(sed -n 's/^ *func\.func @\([A-Za-z0-9_]*\)(.*/\1/p' "$inst")
  for entry in $entries; do
    for target in $targets; do
      if "$COMPILE" "$inst" --entry "$entry" --target="$target" --emit=obj \
        -o "$DIR/$name.$entry.$target.o" 2>"$DIR/$name.$entry.$target.err"; then
        compiled=$((compiled + 1))
        echo "compiled $name @$entry for $target"
      else
        failed=$((failed + 1))
        echo "*** cannot compile $name @$entry for $target:"
        head -5 "$DIR/$name.$entry.$target.err"
      fi
    done
  done
done
echo "both-targets: $compiled compiled, $failed failed"
[ "$failed" -eq 0 ]
