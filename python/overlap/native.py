"""The native part of the package: Overlap's C API through ctypes.

Debian's MLIR is built without Python bindings, so the package binds
Overlap's own C API (include/overlap-c):

- ``libOverlapHostCAPI.so`` (no MLIR): the Planner in process
  (``overlapPlanJSON``) and the loader that runs compiled programs
  (``overlapRun``);
- ``libOverlapCAPI.so``: the compiler (``overlapCompile``).

The libraries are looked for in ``$OVERLAP_LIB_DIR``, then
``$OVERLAP_PREFIX/lib`` (an installation: ``cmake --install build --prefix
P``), then ``$OVERLAP_BUILD_DIR/lib``, then ``<repo>/build/lib``, then the
``lib/`` beside an ``overlap-compile`` on PATH (an installation's ``bin/``).
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
from pathlib import Path
from typing import Dict, List, Optional, Tuple

__all__ = ["NativeNotFound", "library_dirs", "host_api", "compiler_api"]


class NativeNotFound(FileNotFoundError):
    """The native library is not built or installed where it is looked for."""


def library_dirs() -> List[Path]:
    """Where the native libraries are looked for, in order."""
    dirs = []
    for var, sub in (("OVERLAP_LIB_DIR", ""), ("OVERLAP_PREFIX", "lib"),
                     ("OVERLAP_BUILD_DIR", "lib")):
        value = os.environ.get(var)
        if value:
            dirs.append(Path(value) / sub if sub else Path(value))
    dirs.append(Path(__file__).resolve().parent.parent.parent / "build" /
                "lib")
    tool = shutil.which("overlap-compile")
    if tool:
        dirs.append(Path(tool).resolve().parent.parent / "lib")
    return dirs


_loaded: Dict[str, ctypes.CDLL] = {}


def _load(name: str) -> ctypes.CDLL:
    if name in _loaded:
        return _loaded[name]
    tried = []
    for d in library_dirs():
        path = d / name
        tried.append(str(path))
        if path.is_file():
            lib = ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
            _loaded[name] = lib
            return lib
    raise NativeNotFound(
        f"{name} not found (build it with ./scripts/build.sh, or set "
        f"OVERLAP_LIB_DIR / OVERLAP_PREFIX / OVERLAP_BUILD_DIR); looked at "
        + ", ".join(tried))


# The ctypes type of each kind of field the layouts name
# (overlapCompileOptionsLayout, overlapRunOptionsLayout).
_OPTION_KINDS = {"size": ctypes.c_size_t, "string": ctypes.c_char_p,
                 "bool": ctypes.c_bool, "emit": ctypes.c_int,
                 "unsigned": ctypes.c_uint, "int": ctypes.c_int,
                 "int64": ctypes.c_int64, "uint64": ctypes.c_uint64,
                 "double": ctypes.c_double}


def _options_type(lib: ctypes.CDLL, layout_fn: str, name: str) -> type:
    """The ctypes mirror of an options struct, built from the layout the
    library reports (``layout_fn``), not declared here: a field added in C
    (a row of CompileOptions.def or RunOptions.def) cannot shift it
    silently. Its ``flags`` map the tool's flag names to (field, kind)."""
    fn = getattr(lib, layout_fn)
    fn.argtypes = []
    fn.restype = ctypes.c_char_p
    layout = json.loads(fn().decode())
    fields = layout["fields"]
    cls = type(name, (ctypes.Structure,), {
        "_fields_": [(f["field"], _OPTION_KINDS[f["kind"]]) for f in fields],
        "flags": {f["flag"]: (f["field"], f["kind"]) for f in fields
                  if f["flag"]},
        "kinds": {f["field"]: f["kind"] for f in fields},
    })
    for f in fields:
        if getattr(cls, f["field"]).offset != f["offset"]:
            raise RuntimeError(
                f"Overlap{name}.{f['field']}: ctypes puts it at "
                f"{getattr(cls, f['field']).offset}, the library at "
                f"{f['offset']}")
    if ctypes.sizeof(cls) != layout["size"]:
        raise RuntimeError(f"Overlap{name}: ctypes size "
                           f"{ctypes.sizeof(cls)}, the library's "
                           f"{layout['size']}")
    return cls


def host_api() -> ctypes.CDLL:
    """libOverlapHostCAPI.so with its prototypes."""
    lib = _load("libOverlapHostCAPI.so")
    if not hasattr(lib, "_overlap_ready"):
        out = ctypes.POINTER(ctypes.c_void_p)
        lib.overlapPlanJSON.argtypes = [ctypes.c_char_p, out, out]
        lib.overlapPlanJSON.restype = ctypes.c_int
        lib.overlapFree.argtypes = [ctypes.c_void_p]
        lib.overlapFree.restype = None
        RunOptions = _options_type(lib, "overlapRunOptionsLayout",
                                   "RunOptions")
        lib.RunOptions = RunOptions
        lib.overlapRunOptionsDefault.argtypes = []
        lib.overlapRunOptionsDefault.restype = RunOptions
        lib.overlapRun.argtypes = [ctypes.POINTER(RunOptions), out, out]
        lib.overlapRun.restype = ctypes.c_int
        lib.overlapProgramSignature.argtypes = [ctypes.c_char_p, out, out]
        lib.overlapProgramSignature.restype = ctypes.c_int
        lib.overlapRunInputs.argtypes = [
            ctypes.POINTER(RunOptions), ctypes.POINTER(ctypes.c_void_p),
            ctypes.c_size_t, out, out, out]
        lib.overlapRunInputs.restype = ctypes.c_int
        lib.overlapRunInputsShaped.argtypes = [
            ctypes.POINTER(RunOptions), ctypes.POINTER(ctypes.c_void_p),
            ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t,
            out, out, out]
        lib.overlapRunInputsShaped.restype = ctypes.c_int
        for fn in ("overlapOutputsRanks", "overlapOutputsCount"):
            getattr(lib, fn).argtypes = [ctypes.c_void_p]
            getattr(lib, fn).restype = ctypes.c_int
        for fn in ("overlapOutputsName", "overlapOutputsType"):
            getattr(lib, fn).argtypes = [ctypes.c_void_p, ctypes.c_int]
            getattr(lib, fn).restype = ctypes.c_char_p
        lib.overlapOutputsBytes.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.overlapOutputsBytes.restype = ctypes.c_size_t
        lib.overlapOutputsData.argtypes = [ctypes.c_void_p, ctypes.c_int,
                                           ctypes.c_int]
        lib.overlapOutputsData.restype = ctypes.c_void_p
        lib.overlapOutputsDestroy.argtypes = [ctypes.c_void_p]
        lib.overlapOutputsDestroy.restype = None
        # A layer called once per device and step (overlap.jax.jit).
        lib.overlapStepCreate.argtypes = [ctypes.POINTER(RunOptions),
                                          ctypes.c_int64, out]
        lib.overlapStepCreate.restype = ctypes.c_void_p
        lib.overlapStepLaunches.argtypes = [ctypes.c_void_p]
        lib.overlapStepLaunches.restype = ctypes.c_int64
        lib.overlapStepRanks.argtypes = [ctypes.c_void_p]
        lib.overlapStepRanks.restype = ctypes.c_int
        lib.overlapStepDestroy.argtypes = [ctypes.c_void_p]
        lib.overlapStepDestroy.restype = None
        # The same on GPUs: one rank per process (overlap.jax.jit).
        lib.overlapCudaUniqueId.argtypes = [ctypes.c_void_p, out]
        lib.overlapCudaUniqueId.restype = ctypes.c_int
        lib.overlapDeviceLayerCreate.argtypes = [
            ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
            ctypes.c_int, ctypes.c_int64, ctypes.c_int64,
            ctypes.POINTER(ctypes.c_int), out]
        lib.overlapDeviceLayerCreate.restype = ctypes.c_void_p
        lib.overlapDeviceLayerDestroy.argtypes = [ctypes.c_void_p]
        lib.overlapDeviceLayerDestroy.restype = None
        # One context per process and mesh that the layers share.
        lib.overlapDeviceContextCreate.argtypes = [
            ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int,
            ctypes.c_int64, ctypes.c_int64, ctypes.POINTER(ctypes.c_int), out]
        lib.overlapDeviceContextCreate.restype = ctypes.c_void_p
        lib.overlapDeviceContextStatus.argtypes = [ctypes.c_void_p, out]
        lib.overlapDeviceContextStatus.restype = ctypes.c_int
        lib.overlapDeviceLayerCreateOn.argtypes = [
            ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int),
            out]
        lib.overlapDeviceLayerCreateOn.restype = ctypes.c_void_p
        lib.overlapDeviceContextRelease.argtypes = [ctypes.c_void_p]
        lib.overlapDeviceContextRelease.restype = None
        lib.overlapDeviceContextsCreated.argtypes = []
        lib.overlapDeviceContextsCreated.restype = ctypes.c_int64
        lib._overlap_ready = True
    return lib


def compiler_api() -> ctypes.CDLL:
    """libOverlapCAPI.so with its prototypes."""
    lib = _load("libOverlapCAPI.so")
    if not hasattr(lib, "_overlap_ready"):
        options_type = _options_type(lib, "overlapCompileOptionsLayout",
                                     "CompileOptions")
        lib.CompileOptions = options_type
        lib.overlapCompileOptionsDefault.argtypes = []
        lib.overlapCompileOptionsDefault.restype = options_type
        out = ctypes.POINTER(ctypes.c_void_p)
        lib.overlapCompile.argtypes = [ctypes.c_char_p, ctypes.c_size_t,
                                       ctypes.c_char_p,
                                       ctypes.POINTER(options_type), out, out]
        lib.overlapCompile.restype = ctypes.c_int
        lib.overlapCompileOptionsSet.argtypes = [
            ctypes.POINTER(options_type), ctypes.c_char_p, ctypes.c_char_p,
            out]
        lib.overlapCompileOptionsSet.restype = ctypes.c_int
        lib.overlapFree.argtypes = [ctypes.c_void_p]
        lib.overlapFree.restype = None
        for fn in ("overlapCompileResultPlansJSON",
                   "overlapCompileResultMissedJSON",
                   "overlapCompileResultWarnings"):
            getattr(lib, fn).argtypes = [ctypes.c_void_p]
            getattr(lib, fn).restype = ctypes.c_char_p
        lib.overlapCompileResultDestroy.argtypes = [ctypes.c_void_p]
        lib.overlapCompileResultDestroy.restype = None
        lib._overlap_ready = True
    return lib


def take_strings(lib: ctypes.CDLL, *pointers: ctypes.c_void_p
                 ) -> Tuple[Optional[str], ...]:
    """The C strings the C API returned (then freed with overlapFree)."""
    texts = []
    for p in pointers:
        if p.value:
            texts.append(ctypes.string_at(p.value).decode())
            lib.overlapFree(p)
        else:
            texts.append(None)
    return tuple(texts)
