#!/usr/bin/env bash
# Runs every test suite of Overlap from nothing: installs what is missing,
# builds, runs the lit suite, the unit tests and the Python tests, and ends
# with one line
# `N passed, N failed`. Exits non-zero on any failure or build error.
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

echo "== summary"
python3 "$ROOT/scripts/summarize.py" "${reports[@]}"
