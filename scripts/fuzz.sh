#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (docs/testing.md) and runs each one:
# first on every committed input (fuzz/corpus/NAME, the seeds, and
# fuzz/regressions/NAME, inputs that once crashed), then fuzzing for SECONDS
# from them. Writes a JUnit report, one testcase per target (a crash, a
# sanitizer report, a timeout or running out of memory fails it, with the
# report and the path of the input), that scripts/summarize.py counts.
#
#   scripts/fuzz.sh [SECONDS] [NAME...]           short run (default 10 s
#       per target), from the committed inputs only: what CI runs
#   scripts/fuzz.sh --campaign SECONDS [NAME...]  long run: the corpus grows
#       in <build>/fuzz-corpus/NAME and is kept, so runs add up
#
# NAME is a target without `overlap-` and `-fuzzer` (profile, plan-request,
# loader, npz, plan-attr, pipeline, pipeline-text); all of them by default.
#
# Environment: OVERLAP_FUZZ_BUILD_DIR (default build-fuzz/ in the source
# tree), OVERLAP_FUZZ_REPORT (default <build>/test-reports/fuzz.xml),
# OVERLAP_FUZZ_TIMEOUT (seconds one input may take, default 60),
# OVERLAP_FUZZ_ARGS (more libFuzzer flags, e.g. -jobs=2 -workers=2 for a
# campaign on two cores). Exit status: 0 when no target failed.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/configure-clang.sh
. "$ROOT/scripts/configure-clang.sh"
BUILD=${OVERLAP_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}
LLVM_PREFIX=${LLVM_PREFIX:-/usr/lib/llvm-22}
REPORT=${OVERLAP_FUZZ_REPORT:-$BUILD/test-reports/fuzz.xml}
TIMEOUT=${OVERLAP_FUZZ_TIMEOUT:-60}
ALL_TARGETS=(profile plan-request loader npz tcp-frame plan-attr pipeline pipeline-text)

campaign=0
if [ "${1:-}" = "--campaign" ]; then
  campaign=1
  shift
  [ $# -ge 1 ] || { echo "fuzz.sh: --campaign needs SECONDS" >&2; exit 2; }
fi
seconds=10
if [ $# -ge 1 ] && [[ $1 =~ ^[0-9]+$ ]]; then
  seconds=$1
  shift
fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${ALL_TARGETS[@]}")
for t in "${targets[@]}"; do
  [ -d "$ROOT/fuzz/corpus/$t" ] || {
    echo "fuzz.sh: no target '$t' (${ALL_TARGETS[*]})" >&2
    exit 2
  }
done

mkdir -p "$(dirname "$REPORT")"
cases=$(mktemp)
trap 'rm -f "$cases"' EXIT
finish() {
  python3 "$ROOT/scripts/junit.py" "$REPORT" fuzz <"$cases"
  echo "fuzz.sh: report in $REPORT"
}

# Configure once (clang, ASan+UBSan, coverage: cmake/Sanitizers.cmake) and
# build only the fuzz targets and what they link.
if [ ! -f "$BUILD/build.ninja" ]; then
  configure_clang "$BUILD" -DLLVM_EXTERNAL_LIT="$LLVM_PREFIX/bin/lit" \
    -DOVERLAP_BUILD_FUZZERS=ON || {
    printf 'build\tfail\tconfiguring %s failed\t%s\n' "$BUILD" \
      "$BUILD.configure.log" >>"$cases"
    finish
    exit 1
  }
fi
if ! ninja -C "$BUILD" -j "${OVERLAP_JOBS:-$(nproc)}" overlap-fuzzers \
  overlap-profiles >"$BUILD/fuzz-build.log" 2>&1; then
  printf 'build\tfail\tbuilding the fuzz targets failed\t%s\n' \
    "$BUILD/fuzz-build.log" >>"$cases"
  finish
  exit 1
fi

# Leaks are findings too; libFuzzer stops at the first report of any kind.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# The targets run in an empty directory: a plan request may name a profile
# relative to it (fuzz/PlanRequestFuzzer.cpp).
artifacts=$BUILD/fuzz-artifacts
logs=$BUILD/fuzz-logs
mkdir -p "$artifacts" "$logs"
failed=0
for t in "${targets[@]}"; do
  bin=$BUILD/fuzz/overlap-$t-fuzzer
  seeds=$ROOT/fuzz/corpus/$t
  regressions=$ROOT/fuzz/regressions/$t
  dict=$ROOT/fuzz/dicts/$t.dict
  flags=(-timeout="$TIMEOUT" -rss_limit_mb=4096 -print_final_stats=1)
  [ -f "$dict" ] && flags+=(-dict="$dict")
  scratch=$BUILD/fuzz-scratch/$t
  rm -rf "$scratch" && mkdir -p "$scratch"

  # 1. Every committed input, once.
  inputs=()
  while IFS= read -r -d '' f; do inputs+=("$f"); done < <(
    find "$seeds" "$regressions" -type f ! -name 'README*' -print0 2>/dev/null |
      sort -z)
  log=$logs/$t.replay.log
  echo "== fuzz $t: ${#inputs[@]} committed inputs"
  if ! (cd "$scratch" && "$bin" "${flags[@]}" "${inputs[@]}") >"$log" 2>&1; then
    printf '%s\tfail\tan input of fuzz/corpus/%s or fuzz/regressions/%s fails (first lines of the log name it)\t%s\n' \
      "$t" "$t" "$t" "$log" >>"$cases"
    echo "fuzz.sh: $t: a committed input fails; see $log"
    failed=$((failed + 1))
    continue
  fi

  # 2. Fuzzing. New inputs go to the first directory, never to the
  # committed seeds.
  if [ $campaign -eq 1 ]; then
    work=$BUILD/fuzz-corpus/$t
  else
    work=$BUILD/fuzz-work/$t
    rm -rf "$work"
  fi
  mkdir -p "$work"
  seedDirs=("$seeds")
  [ -d "$regressions" ] && seedDirs+=("$regressions")
  log=$logs/$t.fuzz.log
  echo "== fuzz $t: ${seconds}s"
  # shellcheck disable=SC2086 # OVERLAP_FUZZ_ARGS is a list of flags.
  (cd "$scratch" && "$bin" "${flags[@]}" -max_total_time="$seconds" \
    -artifact_prefix="$artifacts/$t-" ${OVERLAP_FUZZ_ARGS:-} "$work" \
    "${seedDirs[@]}") >"$log" 2>&1
  rc=$?
  execs=$(grep -h 'stat::number_of_executed_units' "$log" |
    awk '{s += $2} END {print s + 0}')
  corpus=$(find "$work" -type f | wc -l)
  # Slow inputs are written too (slow-unit-*), and are no failure.
  artifact=$(grep -ho 'Test unit written to .*' "$log" | grep -v slow-unit- |
    head -1 | sed 's/Test unit written to //')
  if [ $rc -ne 0 ]; then
    printf '%s\tfail\tfuzzing found a failure after %s executions (exit %s); input: %s\t%s\n' \
      "$t" "$execs" "$rc" "${artifact:-none written}" "$log" >>"$cases"
    echo "fuzz.sh: $t: FAILED after $execs executions; input ${artifact:-?}; see $log"
    failed=$((failed + 1))
  else
    printf '%s\tpass\t%s committed inputs; %s executions in %ss; corpus %s inputs\n' \
      "$t" "${#inputs[@]}" "$execs" "$seconds" "$corpus" >>"$cases"
    echo "fuzz $t: ok, $execs executions, corpus $corpus"
  fi
  rm -rf "$scratch"
done
finish
[ $failed -eq 0 ]
