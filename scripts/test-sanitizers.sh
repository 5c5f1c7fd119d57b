#!/usr/bin/env bash
# The unit tests of the MLIR-free part (OVERLAP_WITHOUT_MLIR: the Planner,
# the runtime, calibration, the launcher bootstrap) under sanitizers
# (docs/testing.md), each in a build of its own with clang:
#   ASan+UBSan  $OVERLAP_ASAN_BUILD_DIR (default build-asan/): every unit
#               test executable of that build
#   TSan        $OVERLAP_TSAN_BUILD_DIR (default build-tsan/): the host
#               runtime's tests (OverlapRuntimeTests) but those that race on
#               purpose (by name in unittests/Runtime/tsan-races.txt); then
#               those alone, where TSan must report their race
# Writes JUnit reports to REPORTS (the first argument, default
# build-asan/test-reports): asan-SUITE.xml and tsan-SUITE.xml from gtest,
# and a failed testcase in SUITE-exit.xml when a process exits non-zero
# after its tests passed (a sanitizer report at exit, e.g. a leak), or in
# asan-build.xml / tsan-build.xml when a build fails. Exit status 0 when all
# passed.
#
#   scripts/test-sanitizers.sh [REPORTS] [asan|tsan]...
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LLVM_PREFIX=${LLVM_PREFIX:-/usr/lib/llvm-22}
ASAN_BUILD=${OVERLAP_ASAN_BUILD_DIR:-$ROOT/build-asan}
TSAN_BUILD=${OVERLAP_TSAN_BUILD_DIR:-$ROOT/build-tsan}
REPORTS=${1:-$ASAN_BUILD/test-reports}
[ $# -gt 0 ] && shift
kinds=("$@")
[ ${#kinds[@]} -gt 0 ] || kinds=(asan tsan)
mkdir -p "$REPORTS"
failed=0

fail_case() { # REPORT-NAME CASE MESSAGE LOG
  printf '%s\tfail\t%s\t%s\n' "$2" "$3" "$4" |
    python3 "$ROOT/scripts/junit.py" "$REPORTS/$1.xml" "$1"
  failed=$((failed + 1))
}

build() { # PREFIX DIR SANITIZERS TARGET...
  local prefix=$1 dir=$2 sanitizers=$3
  shift 3
  if [ ! -f "$dir/build.ninja" ]; then
    cmake -G Ninja -S "$ROOT" -B "$dir" \
      -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_C_COMPILER="$LLVM_PREFIX/bin/clang" \
      -DCMAKE_CXX_COMPILER="$LLVM_PREFIX/bin/clang++" \
      -DMLIR_DIR="$LLVM_PREFIX/lib/cmake/mlir" \
      -DOVERLAP_ENABLE_CUDA=OFF \
      -DOVERLAP_WITHOUT_MLIR=ON \
      "-DOVERLAP_SANITIZERS=$sanitizers" >"$dir.configure.log" 2>&1 || {
      fail_case "$prefix-build" configure \
        "configuring $dir failed" "$dir.configure.log"
      return 1
    }
  fi
  ninja -C "$dir" -j "${OVERLAP_JOBS:-$(nproc)}" "$@" >"$dir/build.log" 2>&1 || {
    fail_case "$prefix-build" build "building $* in $dir failed" \
      "$dir/build.log"
    return 1
  }
}

run_suite() { # PREFIX EXE GTEST-FILTER [ENV=VALUE...]
  local prefix=$1 exe=$2 filter=$3 name report log rc
  shift 3
  name=$(basename "$exe")
  report=$REPORTS/$prefix-$name.xml
  log=$REPORTS/$prefix-$name.log
  echo "== $prefix $name"
  env "$@" "$exe" --gtest_brief=1 --gtest_filter="$filter" \
    --gtest_output="xml:$report" >"$log" 2>&1
  rc=$?
  tail -3 "$log"
  if [ $rc -ne 0 ] && ! grep -qs '<testsuites[^>]* failures="[1-9]' "$report"; then
    # A failed test is counted by the gtest report; this counts what it
    # cannot show: a crash that left no report, or a sanitizer report after
    # the tests passed (TSan exits 66 at the end, LeakSanitizer at exit).
    fail_case "$prefix-$name-exit" exit \
      "$name exited with status $rc under $prefix (a failed test, or a sanitizer report: see the log)" \
      "$log"
  fi
}

for kind in "${kinds[@]}"; do
  rm -f "$REPORTS/$kind-"*.xml "$REPORTS/$kind-"*.log
  case $kind in
  asan)
    # Every unit test of the MLIR-free build; a leak is a failure.
    if build asan "$ASAN_BUILD" "address;undefined" overlap-unittests; then
      for exe in "$ASAN_BUILD"/unittests/*; do
        [ -x "$exe" ] && [ -f "$exe" ] || continue
        run_suite asan "$exe" '*' \
          ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1 \
          UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
      done
    fi
    ;;
  tsan)
    # Every race is listed (no halt_on_error); the exit status says 66.
    if build tsan "$TSAN_BUILD" thread OverlapRuntimeTests; then
      exe=$TSAN_BUILD/unittests/OverlapRuntimeTests
      racy=$(grep -v '^#' "$ROOT/unittests/Runtime/tsan-races.txt" |
        grep . | paste -sd: -)
      run_suite tsan "$exe" "-$racy" \
        TSAN_OPTIONS=second_deadlock_stack=1
      # The tests that race on purpose: TSan must see their race (it stops
      # at the first report; what the test itself checks is the other
      # builds' business).
      log=$REPORTS/tsan-races.log
      echo "== tsan $racy (must race)"
      TSAN_OPTIONS=halt_on_error=1 "$exe" --gtest_brief=1 \
        --gtest_filter="$racy" >"$log" 2>&1
      if grep -q "WARNING: ThreadSanitizer: data race" "$log"; then
        printf 'reports the race of %s\tpass\tTSan reported it\n' "$racy" |
          python3 "$ROOT/scripts/junit.py" "$REPORTS/tsan-races.xml" tsan-races
      else
        fail_case tsan-races "reports the race of $racy" \
          "TSan reported no data race in a test that races on purpose (unittests/Runtime/tsan-races.txt)" \
          "$log"
      fi
    fi
    ;;
  *)
    echo "test-sanitizers.sh: unknown kind '$kind' (asan, tsan)" >&2
    exit 2
    ;;
  esac
done
[ $failed -eq 0 ]
