"""Compile and run Overlap programs from Python, in process.

    >>> import overlap
    >>> prog = overlap.compile(open("examples/mlp.mlir").read(),
    ...                        strategy="uniform:4", output="mlp.so")
    >>> [p["tiles"] for p in prog.plans]
    [[256, 256, 256, 256], [256, 256, 256, 256]]
    >>> ref = overlap.compile(open("examples/mlp.mlir").read(),
    ...                       strategy="none", output="ref.so")
    >>> overlap.run(prog.path, reference=ref.path).ok
    True

``compile`` calls the driver through ``overlapCompile`` (overlap-c/
Compiler.h): the same pipeline and defaults as ``overlap-compile``.
``run`` calls ``overlapRun`` (overlap-c/Loader.h): what ``overlap-exec``
does, on host ranks (threads) or a CUDA device. With ``inputs`` (numpy
arrays, [rank][argument]) it runs with those instead of seeded inputs
(``overlapRunInputs``) and returns every rank's outputs:

    >>> sig = overlap.signature(prog.path)
    >>> res = overlap.run(prog.path, inputs=[[x, w1, w2]] * 4)
    >>> res.outputs[rank][0]     # result0 of that rank, a numpy array
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import native

__all__ = ["Buffer", "CompileError", "CompileWarning", "Compiled", "RunResult", "Signature",
           "compile", "run", "signature"]

_EMIT = {"mlir": 0, "llvm": 1, "obj": 2, "so": 3}
_SUFFIX = {"mlir": ".mlir", "llvm": ".ll", "obj": ".o", "so": ".so"}


def _checked_int(name: str, value, low: int, high: int) -> int:
    """`value` as an int in [low, high]; ctypes would wrap it silently."""
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            import operator
            value = operator.index(value)
        except TypeError:
            raise TypeError(f"{name} must be an integer, got "
                            f"{type(value).__name__}") from None
    if not low <= value <= high:
        raise ValueError(f"{name}={value} is out of range [{low}, {high}]")
    return int(value)


class CompileError(RuntimeError):
    """The compilation failed; the message names the stage and carries the
    diagnostics with their locations, then any warning the compiler gave
    before it failed (also in ``warnings``)."""

    def __init__(self, message: str, warnings: Sequence[str] = ()):
        self.warnings = list(warnings)
        if self.warnings:
            message = (message.rstrip() + "\nwarnings before it:\n" +
                       "\n".join(self.warnings))
        super().__init__(message)


class CompileWarning(UserWarning):
    """The compilation succeeded with a warning (Compiled.warnings)."""


@dataclass
class Compiled:
    #: The file written (a shared library for emit="so").
    path: str
    #: One dict per fused op the Planner planned, in the order of the ops:
    #: the Planner's document of its plan, as ``overlap.plan_json`` returns
    #: it ("tiles" a list of ints, "strategy", "bound", "predicted_us" and
    #: the other times as numbers, "problem", "tasks", ...; so
    #: ``overlap.Plan.from_json`` reads it), plus "location", "op" and
    #: "summary" (the plan remark's text).
    plans: List[Dict[str, Any]] = field(default_factory=list)
    #: What the compiler had to say about a compile that succeeded (e.g. no
    #: signature could be embedded, so ``run`` cannot run the output); each
    #: is also issued as a ``warnings.warn`` (CompileWarning).
    warnings: List[str] = field(default_factory=list)
    #: Why an op was not overlapped, one dict per missed remark of
    #: Overlap's passes: "location" (file:line:col, the user's line for a
    #: program from overlap.jax), "pass", "name" and "reason" (what
    #: --remarks-filter=overlap prints). Empty plans and no missed remark:
    #: the program has no collective.
    missed: List[Dict[str, Any]] = field(default_factory=list)

    def read_bytes(self) -> bytes:
        with open(self.path, "rb") as f:
            return f.read()


def _text_name() -> str:
    """Where text given to compile came from: the first caller outside the
    overlap package, so that a location reads
    ``<overlap.compile text from layer.py:12>:3:5`` rather than a bare
    ``input:3:5``."""
    here = os.path.dirname(os.path.abspath(__file__))
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(
            frame.f_code.co_filename).startswith(here + os.sep):
        frame = frame.f_back
    if frame is None:
        return "<overlap.compile text>"
    return (f"<overlap.compile text from "
            f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}>")


def compile(module: Union[str, os.PathLike], *, target: Optional[str] = None,
            strategy: Optional[str] = None,
            profile: Optional[Union[str, os.PathLike]] = None,
            emit: str = "so", entry: Optional[str] = None,
            opt_level: Optional[int] = None,
            output: Optional[Union[str, os.PathLike]] = None,
            source_name: Optional[str] = None,
            **pipeline_options: Any) -> Compiled:
    """Compiles the MLIR text ``module`` (linalg + shard, or overlap ops), or
    the file at the path ``module`` (a ``pathlib.Path`` or other
    ``os.PathLike``; a ``str`` is always text), to ``emit`` ("so", "obj",
    "llvm" or "mlir") for ``target`` ("host" or "cuda"). Options left as
    None take the compiler's defaults. Without ``output`` the result goes to
    a new temporary file. Errors locate lines in ``source_name`` (default:
    the file's path, or for text ``<overlap.compile text from F:L>``, F:L
    the caller's line outside this package). Every other option of the
    pipeline is a keyword named as overlap-compile's flag with "_" for "-"
    (``gpu_chip="sm_80"``, ``testing_drop_waits=True``): the library reports
    them (CompileOptions.def), so none is declared here."""
    if isinstance(module, os.PathLike):
        path = os.fspath(module)
        with open(path, encoding="utf-8") as f:
            module = f.read()
        if source_name is None:
            source_name = path
    if emit not in _EMIT:
        raise ValueError(f"emit={emit!r}: expected one of {', '.join(_EMIT)}")
    if source_name is None:
        source_name = _text_name()
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
        options.optLevel = _checked_int("opt_level", opt_level, 0, 3)
    if source_name is not None:
        options.sourceName = text(source_name)
    flags = type(options).flags
    for key, value in pipeline_options.items():
        field = flags.get(key.replace("_", "-"))
        if field is None or key.replace("_", "-") in (
                "entry", "emit", "O", "mcpu", "source-name"):
            known = sorted(f.replace("-", "_") for f, (_, kind) in
                           flags.items() if kind in ("string", "bool") and
                           f not in ("entry", "source-name"))
            raise TypeError(f"compile() got an unexpected option {key!r} "
                            f"(pipeline options: {', '.join(known)})")
        name, kind = field
        if kind == "bool":
            if not isinstance(value, bool):
                raise TypeError(f"{key}={value!r}: expected True or False")
            setattr(options, name, value)
        else:
            setattr(options, name, text(value))
    options.emit = _EMIT[emit]
    if output is None:
        fd, output = tempfile.mkstemp(prefix="overlap-", suffix=_SUFFIX[emit])
        os.close(fd)
    source = module.encode()
    out = os.fspath(output).encode()
    result, messages = ctypes.c_void_p(), ctypes.c_void_p()
    status = lib.overlapCompile(source, len(source), out,
                                ctypes.byref(options), ctypes.byref(result),
                                ctypes.byref(messages))
    (why,) = native.take_strings(lib, messages)
    if status != 0:
        raise CompileError(why or f"overlapCompile: status {status}", [])
    try:
        notes = lib.overlapCompileResultWarnings(result).decode().splitlines()
        plans = json.loads(lib.overlapCompileResultPlansJSON(result).decode())
        missed = json.loads(
            lib.overlapCompileResultMissedJSON(result).decode())
    finally:
        lib.overlapCompileResultDestroy(result)
    for note in notes:
        warnings.warn(note, CompileWarning, stacklevel=2)
    return Compiled(path=os.fspath(output), plans=plans, warnings=notes,
                    missed=missed)


def _numpy_dtype(elem: str) -> np.dtype:
    if elem == "f32":
        return np.dtype(np.float32)
    if elem == "f16":
        return np.dtype(np.float16)
    if elem == "bf16":
        try:
            import ml_dtypes
        except ImportError as e:  # pragma: no cover - a dependency
            raise ImportError("bf16 buffers need the ml_dtypes package "
                              "(pip install ml_dtypes)") from e
        return np.dtype(ml_dtypes.bfloat16)
    # MLIR's signless integers as numpy's signed ones; i1 as bool (one
    # byte each, as LLVM stores it).
    exact = {"f64": np.float64, "i1": np.bool_, "i8": np.int8,
             "i16": np.int16, "i32": np.int32, "i64": np.int64}
    if elem in exact:
        return np.dtype(exact[elem])
    raise ValueError(f"unknown element type {elem!r}")


@dataclass
class Buffer:
    """One argument or result of a compiled entry."""
    name: str
    #: "256x512xf32" ("f32" for a scalar).
    type: str
    inout: bool = False

    @property
    def shape(self) -> Tuple[int, ...]:
        """The sizes; -1 for a dynamic one ("?": the inputs give it)."""
        parts = self.type.split("x")
        return tuple(-1 if p == "?" else int(p) for p in parts[:-1])

    @property
    def dtype(self) -> np.dtype:
        return _numpy_dtype(self.type.split("x")[-1])


@dataclass
class Signature:
    """The signature embedded in a compiled library (overlapProgramSignature)."""
    entry: str
    target: str
    #: (name, shape) of each shard.grid; -1 for the extent a run sets
    #: from its number of ranks.
    grids: List[Tuple[str, Tuple[int, ...]]]
    args: List[Buffer]
    results: List[Buffer]

    @property
    def ranks(self) -> int:
        """The default rank count (as the C++ run::defaultRanks): the
        first static grid's size; with dynamic grids only, the first with
        its dynamic extent 2; 1 without a grid."""
        def size(shape):
            return int(np.prod([d for d in shape if d != -1]))
        for _, shape in self.grids:
            if -1 not in shape:
                return size(shape)
        return 2 * size(self.grids[0][1]) if self.grids else 1


def signature(program: Union[str, os.PathLike]) -> Signature:
    """The entry signature of the shared library ``program``."""
    lib = native.host_api()
    text, messages = ctypes.c_void_p(), ctypes.c_void_p()
    status = lib.overlapProgramSignature(os.fspath(program).encode(),
                                         ctypes.byref(text),
                                         ctypes.byref(messages))
    text, messages = native.take_strings(lib, text, messages)
    if status != 0:
        raise RuntimeError((messages or "").strip())
    sig = Signature(entry="", target="host", grids=[], args=[], results=[])
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] == "entry":
            sig.entry = words[1]
        elif words[0] == "target":
            sig.target = words[1]
        elif words[0] == "grid":
            sig.grids.append((words[1], tuple(
                -1 if d == "?" else int(d)
                for d in (words[2].split("x") if len(words) > 2 else []))))
        elif words[0] in ("arg", "result"):
            buf = Buffer(words[1], words[2], "inout" in words[3:])
            (sig.args if words[0] == "arg" else sig.results).append(buf)
    return sig


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
    #: With ``inputs``: every output of every rank, [rank][output], the
    #: entry's results first, then its arguments (numpy arrays).
    outputs: List[List[np.ndarray]] = field(default_factory=list)
    #: The names of ``outputs``' columns ("result0", ..., "arg0", ...).
    output_names: List[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == 0


def _check_inputs(sig: Signature, inputs, ranks: int) -> List[np.ndarray]:
    """The caller's inputs, checked against ``sig`` and made contiguous."""
    if len(inputs) != ranks:
        raise ValueError(f"inputs for {len(inputs)} ranks, but @{sig.entry} "
                         f"runs on {ranks}")
    flat = []
    for r, row in enumerate(inputs):
        if len(row) != len(sig.args):
            raise ValueError(f"rank {r}: {len(row)} inputs, but @{sig.entry} "
                             f"takes {len(sig.args)} arguments")
        for i, (spec, value) in enumerate(zip(sig.args, row)):
            a = np.asarray(value)
            # A dynamic size ("?", -1) takes the array's, the same on every
            # rank (rank 0's).
            want = tuple(np.asarray(inputs[0][i]).shape[d] if s == -1 else s
                         for d, s in enumerate(spec.shape)) \
                if a.ndim == len(spec.shape) else spec.shape
            if a.shape != want or a.dtype != spec.dtype:
                raise ValueError(
                    f"rank {r}: {spec.name} is {spec.type}"
                    f"{' (' + 'x'.join(map(str, want)) + ' on rank 0)' if want != spec.shape else ''}"
                    f", got an array of shape {a.shape} and dtype {a.dtype}")
            flat.append(np.ascontiguousarray(a))
    return flat


# The C range of each integer kind of overlapRunOptionsLayout.
_INT_RANGES = {"int": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1),
               "uint64": (0, 2**64 - 1)}


def _snake(field: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in field)


def run_option_names() -> List[str]:
    """The keyword arguments of ``run`` besides ``inputs``: the rows of
    RunOptions.def (overlap-exec's flags), by field name in snake case."""
    lib = native.host_api()
    return [_snake(f) for f in lib.RunOptions.kinds
            if f not in ("size", "program")]


def _run_options(lib, program, given: Dict[str, Any]):
    """The C OverlapRunOptions of ``given`` (keyword -> value; None keeps
    the default) and the bytes objects its strings point into. The values
    are checked by the library against RunOptions.def (status 2, naming the
    field); here only what ctypes would wrap or cannot hold."""
    options = lib.overlapRunOptionsDefault()
    keep = [os.fspath(program).encode()]
    options.program = keep[0]
    fields = {_snake(f): f for f in lib.RunOptions.kinds
              if f not in ("size", "program")}
    for key, value in given.items():
        if value is None:
            continue
        field = fields.get(key)
        if field is None:
            import difflib
            near = difflib.get_close_matches(key, list(fields), n=1)
            raise TypeError(
                f"run() has no option '{key}'"
                + (f"; did you mean '{near[0]}'?" if near else "")
                + f" (the options: {', '.join(fields)})")
        kind = lib.RunOptions.kinds[field]
        if kind == "string":
            if isinstance(value, bool):
                raise TypeError(f"{key} must be a string, got a bool")
            text = os.fspath(value) if isinstance(value, (str, os.PathLike)) \
                else str(_checked_int(key, value, 0, 2**64 - 1))
            keep.append(text.encode())
            value = keep[-1]
        elif kind in _INT_RANGES:
            value = _checked_int(key, value, *_INT_RANGES[kind])
        elif kind == "double":
            value = float(value)
        elif kind == "bool":
            value = bool(value)
        setattr(options, field, value)
    return options, keep


def run(program: Union[str, os.PathLike], *,
        reference: Optional[Union[str, os.PathLike]] = None,
        ranks: int = 0, seed: int = 1, iterations: int = 1,
        rtol: float = 0.0, atol: float = 0.0,
        backend: Optional[str] = None,
        inputs: Optional[Sequence[Sequence[Any]]] = None,
        **options: Any) -> RunResult:
    """Runs the shared library ``program`` (from ``compile``) with seeded
    inputs on ``ranks`` host ranks (0: the program's grid) or, with
    backend="cuda", one CUDA device; with ``reference`` compares every
    output of every rank. With ``inputs`` ([rank][argument] numpy arrays of
    the signature's shapes and dtypes) it runs once with those and returns
    every rank's outputs in ``RunResult.outputs``. ``options``: the other
    rows of RunOptions.def, overlap-exec's flags, by field name in snake
    case (``wait_timeout_ms``, ``chaos``, ``chaos_max_us``, ``ranks_as``,
    ``device``, ``verbose``, ...: ``run_option_names()``); a bad value is
    refused by the library with status 2, naming it."""
    lib = native.host_api()
    options, keep = _run_options(lib, program, dict(
        options, reference=reference, ranks=ranks, seed=seed,
        iterations=iterations, rtol=rtol, atol=atol, backend=backend))
    report, messages = ctypes.c_void_p(), ctypes.c_void_p()
    if inputs is None:
        status = lib.overlapRun(ctypes.byref(options), ctypes.byref(report),
                                ctypes.byref(messages))
        report_text, message_text = native.take_strings(lib, report,
                                                        messages)
        return RunResult(status=status, report=report_text or "",
                         messages=message_text or "")
    sig = signature(program)
    flat = _check_inputs(sig, inputs, ranks or sig.ranks)
    pointers = (ctypes.c_void_p * max(1, len(flat)))(
        *[a.ctypes.data for a in flat])
    handle = ctypes.c_void_p()
    if any(-1 in spec.shape for spec in sig.args):
        # The dynamic sizes: each argument's shape on rank 0.
        shapes = [np.asarray(a.shape, dtype=np.int64)
                  for a in flat[:len(sig.args)]]
        shape_ptrs = (ctypes.c_void_p * max(1, len(shapes)))(
            *[s.ctypes.data for s in shapes])
        status = lib.overlapRunInputsShaped(
            ctypes.byref(options), pointers, len(flat), shape_ptrs,
            len(shapes), ctypes.byref(handle), ctypes.byref(report),
            ctypes.byref(messages))
    else:
        status = lib.overlapRunInputs(
            ctypes.byref(options), pointers, len(flat), ctypes.byref(handle),
            ctypes.byref(report), ctypes.byref(messages))
    report_text, message_text = native.take_strings(lib, report, messages)
    result = RunResult(status=status, report=report_text or "",
                       messages=message_text or "")
    try:
        count = lib.overlapOutputsCount(handle)
        specs = [Buffer(lib.overlapOutputsName(handle, i).decode(),
                        lib.overlapOutputsType(handle, i).decode())
                 for i in range(count)]
        result.output_names = [b.name for b in specs]
        for r in range(lib.overlapOutputsRanks(handle)):
            row = []
            for i, spec in enumerate(specs):
                nbytes = lib.overlapOutputsBytes(handle, i)
                raw = ctypes.string_at(lib.overlapOutputsData(handle, r, i),
                                       nbytes)
                row.append(np.frombuffer(raw, dtype=spec.dtype)
                           .reshape(spec.shape).copy())
            result.outputs.append(row)
    finally:
        lib.overlapOutputsDestroy(handle)
    return result
