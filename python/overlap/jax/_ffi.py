"""The XLA FFI handler of overlap.jax.jit: built on first use, registered
once.

``_ffi_handler.cc`` is compiled against the FFI headers of the jaxlib in
use (``jax.ffi.include_dir()``) with ``$CXX`` (default ``c++``) into a
cache directory (``$OVERLAP_JAX_FFI_CACHE``, default
``$XDG_CACHE_HOME/overlap/jax-ffi`` or ``~/.cache/overlap/jax-ffi``), one
file per (source, jaxlib) so a new jaxlib gets its own build. The handler
links nothing: the host C API's ``overlapStepCall`` reaches it as an
attribute of each call (docs/jax.md, "Calling Overlap from JAX").
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

TARGET = "overlap_layer"

_lock = threading.Lock()
_registered: set = set()
_library = None


def cache_dir() -> Path:
    given = os.environ.get("OVERLAP_JAX_FFI_CACHE")
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache")
    return Path(base) / "overlap" / "jax-ffi"


def _build() -> Path:
    import jax
    import jaxlib
    source = Path(__file__).with_name("_ffi_handler.cc")
    include = jax.ffi.include_dir()
    cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") \
        or shutil.which("clang++")
    if not cxx:
        raise RuntimeError(
            "overlap.jax.jit builds its XLA FFI handler with a C++ compiler, "
            "and none was found: set CXX or install g++")
    digest = hashlib.sha256()
    digest.update(source.read_bytes())
    digest.update(jaxlib.__version__.encode())
    digest.update(include.encode())
    out = cache_dir() / f"overlap_jax_ffi-{digest.hexdigest()[:16]}.so"
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, suffix=".so.tmp")
    os.close(fd)
    cmd = [cxx, "-std=c++17", "-O2", "-shared", "-fPIC", "-isystem",
           include, str(source), "-o", tmp]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        os.unlink(tmp)
        raise RuntimeError(
            "overlap.jax.jit: building the XLA FFI handler failed:\\n  " +
            " ".join(cmd) + "\\n" + done.stderr.strip())
    os.replace(tmp, out)
    return out


def register(platform: str = "cpu") -> None:
    """Builds (once per jaxlib) and registers the handler with XLA for
    `platform`: "cpu" (OverlapLayer: host ranks) or "CUDA"
    (OverlapLayerCuda: one GPU per process)."""
    global _library
    with _lock:
        if platform in _registered:
            return
        import jax
        if _library is None:
            _library = ctypes.CDLL(str(_build()))
        symbol = "OverlapLayer" if platform == "cpu" else "OverlapLayerCuda"
        jax.ffi.register_ffi_target(
            TARGET, jax.ffi.pycapsule(getattr(_library, symbol)),
            platform=platform)
        _registered.add(platform)
