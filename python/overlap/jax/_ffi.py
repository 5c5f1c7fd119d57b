"""The XLA FFI handler of overlap.jax.jit: built on first use, registered
once.

``_ffi_handler.cc`` is compiled against the FFI headers of the jaxlib in
use (``jax.ffi.include_dir()``) with ``$CXX`` (default ``c++``) into a
cache directory (``$OVERLAP_JAX_FFI_CACHE``, default
``$XDG_CACHE_HOME/overlap/jax-ffi`` or ``~/.cache/overlap/jax-ffi``), one
file per (source, jaxlib) so a new jaxlib gets its own build.

The cache is code this process runs, so nothing in it is loaded unless
only this user could have put it there (docs/jax.md, "The handler's
cache"): the directory is made 0700; it must be a real directory (not a
symlink) owned by this user and writable by no one else, and so must each
directory above it be (owned by this user or root, and writable by no one
else unless sticky, as /tmp is); the library must be a regular file (not a
symlink) owned by this user and writable by no one else. The file is opened
once (O_NOFOLLOW), checked on that descriptor, and loaded through
/proc/self/fd, so the file checked is the file loaded. A build is made in a
fresh private directory and copied in under a new name, then renamed into
place. Anything else is refused with an error naming the path and what to
do.

The handler links nothing and calls no address it is given: a layer is
registered with it (``register_layer``: the step and the host C API's
functions) and a call names the layer by its unpredictable id
(``_ffi_handler.cc``).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
import threading
from pathlib import Path

TARGET = "overlap_layer"

#: Kinds of layer the handler runs (_ffi_handler.cc's Kind).
HOST_STEP, DEVICE_LAYER = 0, 1

_lock = threading.Lock()
_registered: set = set()
_library = None


class UnsafeCacheError(RuntimeError):
    """The handler's cache (a directory or the library in it) could have
    been written by someone else: nothing in it is loaded."""


def cache_dir() -> Path:
    given = os.environ.get("OVERLAP_JAX_FFI_CACHE")
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache")
    return Path(base) / "overlap" / "jax-ffi"


def library_name() -> str:
    """The cached library's file name: one per (handler source, jaxlib)."""
    import jax
    import jaxlib
    source = Path(__file__).with_name("_ffi_handler.cc")
    digest = hashlib.sha256()
    digest.update(source.read_bytes())
    digest.update(jaxlib.__version__.encode())
    digest.update(jax.ffi.include_dir().encode())
    return f"overlap_jax_ffi-{digest.hexdigest()[:16]}.so"


def _refuse(path, why: str, what: str = None) -> UnsafeCacheError:
    return UnsafeCacheError(
        f"overlap.jax.jit: the XLA FFI handler's cache {path} {why}, so "
        f"another user could have put code there; nothing is loaded from it. "
        + (what or f"Remove it, or set OVERLAP_JAX_FFI_CACHE to a directory "
                   f"of your own that no one else can write (mode 0700)."))


def _check_owner_mode(path, st, *, kind: str, allow_root: bool = False,
                      allow_sticky: bool = False) -> None:
    euid = os.geteuid()
    if st.st_uid != euid and not (allow_root and st.st_uid == 0):
        raise _refuse(path, f"is a {kind} owned by uid {st.st_uid}, not by "
                            f"this user (uid {euid})")
    if stat.S_ISLNK(st.st_mode):
        return
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o022 and not (allow_sticky and mode & stat.S_ISVTX):
        raise _refuse(
            path, f"is a {kind} that others can write (mode {mode:04o})",
            f"Remove it, or make it writable by you only (chmod go-w "
            f"{path}) if only you could have written it, or set "
            f"OVERLAP_JAX_FFI_CACHE to a directory of your own that no one "
            f"else can write (mode 0700).")


def _check_parents(directory: Path) -> None:
    """Every directory above `directory`, as written and as resolved:
    owned by this user or root, writable by no one else unless sticky
    (/tmp), and every symbolic link on the way owned by this user or root:
    else one could swap the cache directory for another."""
    kind = "directory above the cache"
    for d in [directory.parent, *directory.parent.parents]:
        st = os.lstat(d)
        if stat.S_ISLNK(st.st_mode):
            _check_owner_mode(d, st, kind="symbolic link above the cache",
                              allow_root=True, allow_sticky=True)
            # a link's own mode is always 0777: only its owner counts
        else:
            _check_owner_mode(d, st, kind=kind, allow_root=True,
                              allow_sticky=True)
    real = Path(os.path.realpath(directory.parent))
    for d in [real, *real.parents]:
        _check_owner_mode(d, os.stat(d), kind=kind, allow_root=True,
                          allow_sticky=True)


def _open_cache_dir(directory: Path) -> int:
    """A descriptor of the cache directory, made 0700 when missing, after
    the checks (module docstring)."""
    directory = Path(os.path.abspath(directory))
    if not os.path.lexists(directory):
        # Missing parents are made with mode 0700 too.
        os.makedirs(directory.parent, mode=0o700, exist_ok=True)
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            pass
    _check_parents(directory)
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as err:
        if os.path.islink(directory):
            raise _refuse(directory, "is a symbolic link (to "
                                     f"{os.readlink(directory)})") from None
        raise _refuse(directory, f"cannot be opened as a directory "
                                 f"({err.strerror})") from None
    try:
        _check_owner_mode(directory, os.fstat(fd), kind="directory")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_library(dir_fd: int, directory: Path, name: str):
    """A descriptor of the cached library `name`, checked (module
    docstring); None when there is none."""
    path = Path(directory) / name
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC,
                     dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as err:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        if stat.S_ISLNK(st.st_mode):
            raise _refuse(path, "is a symbolic link",
                          f"Remove it (overlap.jax.jit builds the handler "
                          f"again).") from None
        raise _refuse(path, f"cannot be opened ({err.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(path, "is not a regular file",
                          "Remove it (overlap.jax.jit builds the handler "
                          "again).")
        _check_owner_mode(path, st, kind="file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _compile(out: str) -> None:
    import jax
    source = Path(__file__).with_name("_ffi_handler.cc")
    cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") \
        or shutil.which("clang++")
    if not cxx:
        raise RuntimeError(
            "overlap.jax.jit builds its XLA FFI handler with a C++ compiler, "
            "and none was found: set CXX or install g++")
    cmd = [cxx, "-std=c++17", "-O2", "-shared", "-fPIC", "-isystem",
           jax.ffi.include_dir(), str(source), "-o", out]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(
            "overlap.jax.jit: building the XLA FFI handler failed:\n  " +
            " ".join(cmd) + "\n" + done.stderr.strip())


def _store(dir_fd: int, name: str) -> None:
    """Builds the handler in a fresh private directory and puts it in the
    cache as `name` (a new file, mode 0600, renamed into place)."""
    build = tempfile.mkdtemp(prefix="overlap-jax-ffi-")
    try:
        built = os.path.join(build, name)
        _compile(built)
        data = Path(built).read_bytes()
    finally:
        shutil.rmtree(build, ignore_errors=True)
    tmp = f".{name}.{os.getpid()}.{os.urandom(6).hex()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW |
                 os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise


def _load() -> ctypes.CDLL:
    """The handler library: from the cache after its checks, built into it
    first when missing."""
    directory = cache_dir()
    name = library_name()
    dir_fd = _open_cache_dir(directory)
    try:
        fd = _open_library(dir_fd, directory, name)
        if fd is None:
            _store(dir_fd, name)
            fd = _open_library(dir_fd, directory, name)
            if fd is None:
                raise RuntimeError(f"overlap.jax.jit: {directory / name} "
                                   f"vanished after it was built")
    finally:
        os.close(dir_fd)
    try:
        # The descriptor checked above is the file loaded.
        via = f"/proc/self/fd/{fd}"
        return ctypes.CDLL(via if os.path.exists(via)
                           else str(directory / name))
    finally:
        os.close(fd)


def library() -> ctypes.CDLL:
    """The handler library with its registry's prototypes (loaded once)."""
    global _library
    with _lock:
        if _library is None:
            lib = _load()
            lib.OverlapLayerRegister.argtypes = [
                ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                ctypes.c_void_p, ctypes.c_void_p,
                ctypes.POINTER(ctypes.c_int32), ctypes.c_size_t,
                ctypes.c_size_t]
            lib.OverlapLayerRegister.restype = ctypes.c_int64
            lib.OverlapLayerRelease.argtypes = [ctypes.c_int64]
            lib.OverlapLayerRelease.restype = ctypes.c_int
            lib.OverlapLayerCount.argtypes = []
            lib.OverlapLayerCount.restype = ctypes.c_int64
            _library = lib
        return _library


def register(platform: str = "cpu") -> None:
    """Builds (once per jaxlib) and registers the handler with XLA for
    `platform`: "cpu" (OverlapLayer: host ranks) or "CUDA"
    (OverlapLayerCuda: one GPU per process)."""
    lib = library()
    with _lock:
        if platform in _registered:
            return
        import jax
        symbol = "OverlapLayer" if platform == "cpu" else "OverlapLayerCuda"
        jax.ffi.register_ffi_target(
            TARGET, jax.ffi.pycapsule(getattr(lib, symbol)),
            platform=platform)
        _registered.add(platform)


#: XLA_FFI_DataType codes (xla/ffi/api/c_api.h: XLA's PrimitiveType) of
#: the element types a layer's buffers carry.
DATA_TYPES = {"bool": 1, "int8": 2, "int16": 3, "int32": 4, "int64": 5,
              "float16": 10, "float32": 11, "float64": 12, "bfloat16": 16}


def data_type(dtype) -> int:
    import numpy as np
    name = np.dtype(dtype).name
    if name not in DATA_TYPES:
        raise ValueError(f"overlap.jax.jit: no XLA FFI data type for {name}")
    return DATA_TYPES[name]


def register_layer(kind: int, obj: int, inputs=None, outputs=None) -> int:
    """Hands `obj` (an OverlapStep* for HOST_STEP, an OverlapDeviceLayer*
    for DEVICE_LAYER) to the handler's registry, with the host C API's
    functions that call, free and destroy it; returns its id, the one
    attribute of a call. `inputs` and `outputs` are the dtypes of its
    buffers (after the rank operand): a call with buffers of other element
    types is refused (the step checks their sizes only; an int32 buffer
    where the program takes float32 has the same size). The registry owns
    `obj` from then on (destroyed after release_layer and the last running
    call)."""
    from .. import native
    api = native.host_api()

    def address(fn):
        return ctypes.cast(fn, ctypes.c_void_p).value

    if kind == HOST_STEP:
        call, destroy = api.overlapStepCallInRun, api.overlapStepDestroy
    else:
        call, destroy = api.overlapDeviceLayerCall, \
            api.overlapDeviceLayerDestroy
    codes = [data_type(d) for d in list(inputs or []) + list(outputs or [])]
    types = (ctypes.c_int32 * max(1, len(codes)))(*codes)
    layer_id = library().OverlapLayerRegister(
        kind, obj, address(call), address(api.overlapFree), address(destroy),
        types if inputs is not None else None,
        len(inputs or []), len(outputs or []))
    if not layer_id:
        raise RuntimeError("overlap.jax.jit: the FFI handler refused a "
                           "layer (no object)")
    return layer_id


def release_layer(layer_id: int) -> None:
    """Forgets layer `layer_id`: calls naming it fail from now on; one
    running finishes first."""
    if _library is not None:
        _library.OverlapLayerRelease(layer_id)
