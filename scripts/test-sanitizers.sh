#!/usr/bin/env bash
# The unit tests of the MLIR-free part (OVERLAP_WITHOUT_MLIR: the Planner,
# the runtime, calibration, the launcher bootstrap) under sanitizers
# (docs/testing.md), each in a build of its own with clang:
#   ASan+UBSan  $OVERLAP_ASAN_BUILD_DIR (default build-asan/): every unit
#               test executable of that build; then the loader's
#               hostile-input tests (issue 25: the lit tests in
#               LOADER_TESTS below) with that build's overlap-exec and
#               libOverlapHostCAPI.so (through overlap-host-capi-test), the
#               programs they run made by the main build's overlap-compile
#               ($OVERLAP_BUILD_DIR, default build/, with its lit
#               configuration)
#   TSan        $OVERLAP_TSAN_BUILD_DIR (default build-tsan/): the host
#               runtime's tests (OverlapRuntimeTests) but those that race on
#               purpose (by name in unittests/Runtime/tsan-races.txt); then
#               those alone, where TSan must report their race
# Writes JUnit reports to REPORTS (the first argument, default
# build-asan/test-reports): asan-SUITE.xml and tsan-SUITE.xml from gtest,
# asan-loader.xml from lit and asan-loader-reports.xml (no sanitizer report
# in any process those tests started),
# and a failed testcase in SUITE-exit.xml when a process exits non-zero
# after its tests passed (a sanitizer report at exit, e.g. a leak), or in
# asan-build.xml / asan-loader-build.xml / tsan-build.xml when a build
# fails. Exit status 0 when all passed.
#
#   scripts/test-sanitizers.sh [REPORTS] [asan|tsan]...
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/configure-clang.sh
. "$ROOT/scripts/configure-clang.sh"
LLVM_PREFIX=${LLVM_PREFIX:-/usr/lib/llvm-22}
MAIN_BUILD=${OVERLAP_BUILD_DIR:-$ROOT/build}
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
    configure_clang "$dir" -DOVERLAP_WITHOUT_MLIR=ON \
      "-DOVERLAP_SANITIZERS=$sanitizers" || {
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
  elif [ $rc -ne 0 ]; then
    failed=$((failed + 1))
  fi
}

# The hostile inputs of issue 25 (docs/testing.md, "Untrusted programs"):
# what overlap-exec and the host C API read before they call code, run under
# ASan+UBSan. The compiler parts of that issue are not here: this build has
# no compiler (the fuzz build instruments it).
LOADER_TESTS=(
  Tools/overlap-exec/untrusted.test
  Tools/overlap-exec/program-file.test
  Tools/overlap-exec/errors.test
  Tools/overlap-exec/poison.test
  Tools/overlap-exec/nan-verdict.test
  CAPI/host-capi.test
  CAPI/host-capi-hostile.test
)

run_loader_tests() {
  local report=$REPORTS/asan-loader.xml log=$REPORTS/asan-loader.log
  local sanlogs=$REPORTS/asan-loader-sanitizer-logs
  echo "== asan loader (${#LOADER_TESTS[@]} lit tests)"
  if [ ! -f "$MAIN_BUILD/test/lit.site.cfg.py" ] ||
    [ ! -x "$MAIN_BUILD/bin/overlap-compile" ]; then
    fail_case asan-loader setup \
      "no main build in $MAIN_BUILD (its overlap-compile makes the programs of the loader's tests, its lit.site.cfg.py runs them): build it first (scripts/build.sh)" ""
    return
  fi
  rm -rf "$sanlogs" "$sanlogs.txt" && mkdir -p "$sanlogs"
  # lit's own --param TOOL=PATH puts this build's tools in place of the
  # main build's; everything else (overlap-compile, cc, FileCheck) is as
  # in the main suite. Sanitizer reports go to files, which catches one in
  # a process whose exit status a test ignores or inverts (`not`). A test
  # that hangs (a FIFO read) is stopped by the whole run's timeout.
  ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:log_path=$sanlogs/report \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$sanlogs/report \
    timeout "${OVERLAP_LOADER_TESTS_TIMEOUT:-900}" "$LLVM_PREFIX/bin/lit" -sv --xunit-xml-output "$report" \
    --param "overlap-exec=$ASAN_BUILD/bin/overlap-exec" \
    --param "overlap-host-capi-test=$ASAN_BUILD/bin/overlap-host-capi-test" \
    --param "overlap_exec_root=$ASAN_BUILD/loader-tests" \
    "${LOADER_TESTS[@]/#/$MAIN_BUILD/test/}" >"$log" 2>&1
  local rc=$?
  tail -4 "$log"
  if [ ! -s "$report" ]; then
    fail_case asan-loader-exit lit \
      "lit exited with status $rc and wrote no report for the loader's tests (124: it ran past the timeout)" "$log"
  elif [ $rc -ne 0 ]; then
    failed=$((failed + 1))
  fi
  local found
  found=$(find "$sanlogs" -type f | sort)
  if [ -n "$found" ]; then
    cat $found >"$sanlogs.txt"
    fail_case asan-loader-reports "no sanitizer report" \
      "a sanitizer reported in $(echo "$found" | wc -l) process(es) of the loader's tests (their reports: $sanlogs)" \
      "$sanlogs.txt"
  else
    printf 'no sanitizer report\tpass\tno process of the loader tests wrote an ASan, LSan or UBSan report\n' |
      python3 "$ROOT/scripts/junit.py" "$REPORTS/asan-loader-reports.xml" asan-loader-reports
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
    if build asan-loader "$ASAN_BUILD" "address;undefined" \
      overlap-exec OverlapHostCAPI overlap-host-capi-test; then
      run_loader_tests
    fi
    ;;
  tsan)
    # The TCP process transport: a reader thread per process beside the
    # callers' threads.
    if build tsan "$TSAN_BUILD" thread OverlapRuntimeTcpTests; then
      run_suite tsan "$TSAN_BUILD/unittests/OverlapRuntimeTcpTests" '*' \
        TSAN_OPTIONS=second_deadlock_stack=1
    fi
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
