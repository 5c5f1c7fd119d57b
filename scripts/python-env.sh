#!/usr/bin/env bash
# Creates (once) the Python environment of python/overlap: a venv at
# $OVERLAP_BUILD_DIR/venv (default <repo>/build/venv) made with the system
# python3, with numpy, matplotlib, ml_dtypes, pytest, jax (CPU; for
# overlap.jax and its tests against JAX), torch (for overlap.torch; see its
# block below) and the package itself (editable) from PyPI. Prints the
# venv's python on its last line. Runs pip again only when
# python/pyproject.toml is newer than the stamp, or the stamp names another
# checkout (torch: when its stamp names another version range), so the
# second run takes milliseconds.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${OVERLAP_BUILD_DIR:-$ROOT/build}
VENV=$BUILD/venv
PYTHON=${OVERLAP_PYTHON:-python3}
STAMP=$VENV/.overlap-installed

log() { echo "python-env: $*" >&2; }

if [ ! -x "$VENV/bin/python" ]; then
  command -v "$PYTHON" >/dev/null || { log "no $PYTHON on PATH"; exit 1; }
  # Debian splits venv's pip bootstrap into python3-venv.
  if ! "$PYTHON" -c 'import venv, ensurepip' 2>/dev/null; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
      log "installing python3-venv"
      export DEBIAN_FRONTEND=noninteractive
      apt-get update -qq >&2
      apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
    else
      log "$PYTHON has no venv/ensurepip module; install python3-venv (as root)"
      exit 1
    fi
  fi
  log "creating $VENV"
  mkdir -p "$BUILD"
  if ! "$PYTHON" -m venv "$VENV" >&2; then
    rm -rf "$VENV"
    log "python3 -m venv failed"
    exit 1
  fi
fi

if [ ! -f "$STAMP" ] || [ "$ROOT/python/pyproject.toml" -nt "$STAMP" ] \
   || [ "$(cat "$STAMP")" != "$ROOT" ]; then
  log "installing numpy, matplotlib, pytest, jax and python/ into $VENV"
  # Bounded: jax and jaxlib are ~90 MB of wheels (~15 s on a fast link,
  # ~650 MB installed); a stalled download fails after 60 s, the whole
  # install after 15 minutes.
  timeout 900 "$VENV/bin/python" -m pip install -q \
    --disable-pip-version-check --timeout 60 --retries 3 \
    -e "$ROOT/python[test,jax]" >&2
  echo "$ROOT" > "$STAMP"
fi

# -- torch, for overlap.torch and its tests (docs/torch.md) ------------------
# PyPI's torch for Linux x86_64 is its CUDA build: libtorch_cuda.so links the
# nvidia-* / cuda-toolkit wheels, so the ~540 MB wheel does not even import
# on a CPU without its dependencies (~3 GB more; no CPU-only build is on
# PyPI). Measured on the 2-core machine: 2m40s, 5.4 GB installed. Checked with
# 2.15 (the exported aten IR the frontend walks); a new minor version is
# checked before it is allowed. Its own stamp: a venv made before it gets it
# on the next run. OVERLAP_NO_TORCH=1 leaves it out (the torch tests skip).
TORCH_SPEC="torch>=2.15,<2.16"
TORCH_STAMP=$VENV/.overlap-torch-installed
if [ -z "${OVERLAP_NO_TORCH:-}" ] && { [ ! -f "$TORCH_STAMP" ] ||
   [ "$(cat "$TORCH_STAMP")" != "$TORCH_SPEC" ]; }; then
  log "installing $TORCH_SPEC (CPU use of PyPI's CUDA build) into $VENV"
  # A stalled download fails after 60 s, the whole install after 25 minutes.
  timeout 1500 "$VENV/bin/python" -m pip install -q \
    --disable-pip-version-check --timeout 60 --retries 3 "$TORCH_SPEC" >&2
  echo "$TORCH_SPEC" > "$TORCH_STAMP"
fi

echo "$VENV/bin/python"
