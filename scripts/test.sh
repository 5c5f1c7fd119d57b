#!/usr/bin/env bash
# Runs every test suite of Overlap from nothing: installs what is missing,
# builds, runs the lit suite, the unit tests and the Python tests, then the
# unit tests of the MLIR-free part under ASan+UBSan and the host runtime's
# under TSan (scripts/test-sanitizers.sh), and every fuzz target on its
# committed inputs and for a short run (scripts/fuzz.sh,
# $OVERLAP_FUZZ_SECONDS each, default 30), each in a build directory of its
# own beside $OVERLAP_BUILD_DIR (-asan, -tsan, -fuzz; docs/testing.md). It
# ends with one line `N passed, N failed` and exits non-zero on any failure
# or build error. On 2 cores: about 20 minutes to build from a clean tree,
# then about 25 minutes of suites (the sanitizer and fuzz builds the first
# time on top).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${OVERLAP_BUILD_DIR:-$ROOT/build}
export OVERLAP_BUILD_DIR=$BUILD
REPORTS=$BUILD/test-reports

if ! "$ROOT/scripts/install-deps.sh"; then
  echo "test.sh: installing dependencies failed"
  echo "0 passed, 1 failed"
  exit 1
fi
if ! "$ROOT/scripts/build.sh" all; then
  echo "test.sh: the build failed"
  echo "0 passed, 1 failed"
  exit 1
fi

rm -rf "$REPORTS" && mkdir -p "$REPORTS"
reports=()
echo "test.sh: lit, GoogleTest, pytest, ASan+UBSan and TSan unit tests, fuzz"
echo "         targets (${OVERLAP_FUZZ_SECONDS:-30} s each): about 25 minutes on 2 cores"

# lit: dialect, passes, tools.
echo "== lit"
"${LLVM_PREFIX:-/usr/lib/llvm-22}/bin/lit" -sv --xunit-xml-output "$REPORTS/lit.xml" "$BUILD/test"
reports+=("lit=$REPORTS/lit.xml")

# gtest: one executable per suite.
for exe in "$BUILD"/unittests/*; do
  [ -x "$exe" ] && [ -f "$exe" ] || continue
  name=$(basename "$exe")
  echo "== $name"
  "$exe" --gtest_brief=1 --gtest_output="xml:$REPORTS/$name.xml"
  reports+=("$name=$REPORTS/$name.xml")
done

# pytest: python/overlap (venv under the build directory).
echo "== pytest"
"$ROOT/scripts/test-python.sh" "$REPORTS/pytest.xml"
reports+=("pytest=$REPORTS/pytest.xml")

# Sanitizers: builds of their own (clang; the MLIR-free part only). Their
# reports, a failed build included, are asan-*.xml and tsan-*.xml.
echo "== sanitizers"
OVERLAP_ASAN_BUILD_DIR=${OVERLAP_ASAN_BUILD_DIR:-$BUILD-asan} \
OVERLAP_TSAN_BUILD_DIR=${OVERLAP_TSAN_BUILD_DIR:-$BUILD-tsan} \
  "$ROOT/scripts/test-sanitizers.sh" "$REPORTS"
for kind in asan tsan; do
  found=0
  for r in "$REPORTS/$kind"-*.xml; do
    [ -f "$r" ] || continue
    reports+=("$(basename "$r" .xml)=$r")
    found=1
  done
  # No report at all (the script could not start) is a failure too.
  [ $found -eq 1 ] || reports+=("$kind=$REPORTS/$kind-missing.xml")
done

# Fuzzing: every committed input, then a short run of each target.
echo "== fuzz"
OVERLAP_FUZZ_BUILD_DIR=${OVERLAP_FUZZ_BUILD_DIR:-$BUILD-fuzz} \
OVERLAP_FUZZ_REPORT=$REPORTS/fuzz.xml \
  "$ROOT/scripts/fuzz.sh" "${OVERLAP_FUZZ_SECONDS:-30}"
reports+=("fuzz=$REPORTS/fuzz.xml")

echo "== summary"
python3 "$ROOT/scripts/summarize.py" "${reports[@]}"
