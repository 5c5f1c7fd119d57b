"""Compile and run Overlap programs from Python, in process.

    >>> import overlap
    >>> prog = overlap.compile(open("examples/mlp.mlir").read(),
    ...                        strategy="uniform:4", output="mlp.so")
    >>> [p["tiles"] for p in prog.plans]
    ['[256, 256, 256, 256]', '[256, 256, 256, 256]']
    >>> ref = overlap.compile(open("examples/mlp.mlir").read(),
    ...                       strategy="none", output="ref.so")
    >>> overlap.run(prog.path, reference=ref.path).ok
    True

``compile`` calls the driver through ``overlapCompile`` (overlap-c/
Compiler.h): the same pipeline and defaults as ``overlap-compile``.
``run`` calls ``overlapRun`` (overlap-c/Loader.h): what ``overlap-exec``
does, on host ranks (threads) or a CUDA device.
"""

from __future__ import annotations

import ctypes
import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Union

from . import native

__all__ = ["CompileError", "Compiled", "RunResult", "compile", "run"]

_EMIT = {"mlir": 0, "llvm": 1, "obj": 2, "so": 3}
_SUFFIX = {"mlir": ".mlir", "llvm": ".ll", "obj": ".o", "so": ".so"}


class CompileError(RuntimeError):
    """The compilation failed; the message names the stage and carries the
    diagnostics with their locations."""


@dataclass
class Compiled:
    #: The file written (a shared library for emit="so").
    path: str
    #: One dict per fused op the Planner planned: "location", "summary" and
    #: the metrics "tiles", "strategy", "bound", "predicted_us", "serial_us".
    plans: List[Dict[str, Any]] = field(default_factory=list)

    def read_bytes(self) -> bytes:
        with open(self.path, "rb") as f:
            return f.read()


def compile(module: str, *, target: Optional[str] = None,
            strategy: Optional[str] = None,
            profile: Optional[Union[str, os.PathLike]] = None,
            emit: str = "so", entry: Optional[str] = None,
            opt_level: Optional[int] = None,
            output: Optional[Union[str, os.PathLike]] = None) -> Compiled:
    """Compiles the MLIR text ``module`` (linalg + shard, or overlap ops) to
    ``emit`` ("so", "obj", "llvm" or "mlir") for ``target`` ("host" or
    "cuda"). Options left as None take the compiler's defaults. Without
    ``output`` the result goes to a new temporary file."""
    if emit not in _EMIT:
        raise ValueError(f"emit={emit!r}: expected one of {', '.join(_EMIT)}")
    lib = native.compiler_api()
    options = lib.overlapCompileOptionsDefault()
    keep = []  # the encoded strings must outlive the call

    def text(value):
        b = os.fspath(value).encode()
        keep.append(b)
        return b

    if target is not None:
        options.target = text(target)
    if strategy is not None:
        options.strategy = text(strategy)
    if profile is not None:
        options.profile = text(profile)
    if entry is not None:
        options.entry = text(entry)
    if opt_level is not None:
        options.optLevel = int(opt_level)
    options.emit = _EMIT[emit]
    if output is None:
        fd, output = tempfile.mkstemp(prefix="overlap-", suffix=_SUFFIX[emit])
        os.close(fd)
    source = module.encode()
    out = os.fspath(output).encode()
    result = lib.overlapCompile(native.MlirStringRef.of(source),
                                native.MlirStringRef.of(out),
                                ctypes.byref(options))
    try:
        if not lib.overlapCompileResultSucceeded(result):
            raise CompileError(lib.overlapCompileResultError(result).text())
        plans = json.loads(lib.overlapCompileResultPlansJSON(result).text())
    finally:
        lib.overlapCompileResultDestroy(result)
    return Compiled(path=os.fspath(output), plans=plans)


@dataclass
class RunResult:
    #: overlap-exec's exit status: 0 match (or ran, without a reference),
    #: 1 mismatch, 2 error, 3 no CUDA device.
    status: int
    #: overlap-exec's report: the outputs' comparison (or checksums), the
    #: timing line and the verdict.
    report: str
    #: Errors and warnings.
    messages: str

    @property
    def ok(self) -> bool:
        return self.status == 0


def run(program: Union[str, os.PathLike], *,
        reference: Optional[Union[str, os.PathLike]] = None,
        ranks: int = 0, seed: int = 1, iterations: int = 1,
        rtol: float = 0.0, atol: float = 0.0,
        backend: Optional[str] = None) -> RunResult:
    """Runs the shared library ``program`` (from ``compile``) with seeded
    inputs on ``ranks`` host ranks (0: the program's grid) or, with
    backend="cuda", one CUDA device; with ``reference`` compares every
    output of every rank."""
    lib = native.host_api()
    options = lib.overlapRunOptionsDefault()
    keep = [os.fspath(program).encode()]
    options.program = keep[0]
    if reference is not None:
        keep.append(os.fspath(reference).encode())
        options.reference = keep[-1]
    if backend is not None:
        keep.append(backend.encode())
        options.backend = keep[-1]
    options.ranks = ranks
    options.seed = seed
    options.iterations = iterations
    options.rtol = rtol
    options.atol = atol
    report, messages = ctypes.c_void_p(), ctypes.c_void_p()
    status = lib.overlapRun(ctypes.byref(options), ctypes.byref(report),
                            ctypes.byref(messages))
    report_text, message_text = native.take_strings(lib, report, messages)
    return RunResult(status=status, report=report_text or "",
                     messages=message_text or "")
