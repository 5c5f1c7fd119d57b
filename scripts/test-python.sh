#!/usr/bin/env bash
# Runs the pytest suite of python/overlap: `scripts/test-python.sh JUNIT_XML`.
# Sets up the venv with scripts/python-env.sh, writes a JUnit report to
# JUNIT_XML and exits with pytest's status. Tests that need overlap-plan use
# $OVERLAP_PLAN or $OVERLAP_BUILD_DIR/bin/overlap-plan and are skipped, saying
# so, when neither exists.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export OVERLAP_BUILD_DIR=${OVERLAP_BUILD_DIR:-$ROOT/build}
JUNIT=${1:?usage: scripts/test-python.sh JUNIT_XML}

if ! PY=$("$ROOT/scripts/python-env.sh" | tail -n 1) || [ ! -x "$PY" ]; then
  echo "test-python.sh: setting up the Python environment failed" >&2
  exit 1
fi

mkdir -p "$(dirname "$JUNIT")"
export MPLBACKEND=Agg
# overlap.jax's tests fail, not skip, when jax is missing: the venv has it.
export OVERLAP_REQUIRE_JAX=1
cd "$ROOT/python"
"$PY" -m pytest -q -rs -p no:cacheprovider --junitxml="$JUNIT" "$ROOT/python/tests"
