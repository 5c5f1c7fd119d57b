"""JAX in: compile ``jax.shard_map`` programs with Overlap (docs/jax.md).

    >>> import overlap.jax as ojax
    >>> text = ojax.lower(f, x, w1, w2)     # the per-device program, MLIR
    >>> res = ojax.run(f, x, w1, w2, strategy="auto")
    >>> res.outputs, res.plans, res.mlir
    >>> layer = ojax.jit(f, strategy="auto")  # callable inside jax.jit
    >>> y = jax.jit(lambda x: layer(x, w1, w2) * 2)(x)

``f`` is what ``jax.shard_map(body, mesh=..., in_specs=..., out_specs=...)``
returns, optionally under ``jax.jit``; ``args`` are global arrays. The
importer reads the jaxpr (``jax.make_jaxpr``): the shard_map equation's
body is the per-device program, with the mesh's axis names on every
collective, so no replica groups have to be decoded, and calls (``jit``,
``custom_jvp_call``) are inlined the same way wherever they appear.
``run`` compiles the text with the in-process compiler (``overlap.compile``),
gives each host rank (one per mesh device, row-major over the mesh axes) the
shard of each argument its ``in_spec`` names, runs once
(``overlap.run(inputs=...)``) and reassembles the outputs by ``out_specs``.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ._emit import (Emitter, UnsupportedError, Value, elem_type, origin_of,
                    tensor_type)
from ._translate import SUPPORTED, Translator, unknown_primitives

__all__ = ["JaxRun", "Layer", "Lowered", "UnsupportedError", "SUPPORTED",
           "jit", "lower", "lower_program", "run"]


@dataclass
class Lowered:
    """The importer's result: the MLIR text and how to shard and
    reassemble the global arrays."""
    mlir: str
    entry: str
    #: Mesh axis names and sizes, in the mesh's order.
    axes: List[str]
    sizes: List[int]
    #: Per parameter of the entry: the index of f's argument it takes.
    param_args: List[int]
    #: One PartitionSpec-like tuple per parameter and per output: per dim,
    #: a tuple of mesh axis names (empty: not split).
    in_specs: List[Tuple[Tuple[str, ...], ...]]
    out_specs: List[Tuple[Tuple[str, ...], ...]]
    #: Global shapes of the outputs.
    out_shapes: List[Tuple[int, ...]]
    out_dtypes: List[np.dtype]
    #: The shard_map's mesh, and the equation itself (its body, specs and
    #: operands), for overlap.jax.jit's call and backward.
    mesh: Any = None
    eqn: Any = None
    operands: List[Any] = field(default_factory=list)
    #: Per SSA name of the text, what wrote it (the primitive and the
    #: user's line): see importer_error.
    origins: Dict[str, str] = field(default_factory=dict)

    @property
    def ranks(self) -> int:
        return int(np.prod(self.sizes))


def _find_shard_map(jaxpr, binding):
    """The one shard_map equation of `jaxpr` (looking into jit wrappers),
    and what each of its operands is: ("arg", index of f's argument) or
    ("const", value), from `binding` (the same for `jaxpr`'s variables)."""
    from ._emit import _is_literal

    def bound(v):
        return ("const", v.val) if _is_literal(v) else binding.get(v)

    eqns = list(jaxpr.eqns)
    if len(eqns) == 1 and eqns[0].primitive.name in ("jit", "pjit",
                                                     "closed_call") and \
            list(eqns[0].outvars) == list(jaxpr.outvars):
        inner = eqns[0].params.get("jaxpr") or eqns[0].params.get(
            "call_jaxpr")
        body = getattr(inner, "jaxpr", inner)
        new = {v: ("const", c) for v, c in
               zip(body.constvars, getattr(inner, "consts", []))}
        for v, operand in zip(body.invars, eqns[0].invars):
            new[v] = bound(operand)
        return _find_shard_map(body, new)
    maps = [e for e in eqns if e.primitive.name == "shard_map"]
    if len(eqns) != 1 or len(maps) != 1:
        names = ", ".join(e.primitive.name for e in eqns) or "nothing"
        raise UnsupportedError(
            "overlap.jax compiles a function whose body is one jax.shard_map "
            "over its arguments (optionally under jax.jit); this one computes "
            f"{names} at the top level")
    eqn = maps[0]
    operands = [bound(v) for v in eqn.invars]
    if list(eqn.outvars) != list(jaxpr.outvars) or None in operands:
        raise UnsupportedError(
            "the shard_map must take the function's arguments (or "
            "constants) and return its results")
    return eqn, operands


def _spec_tuple(spec, rank: int) -> Tuple[Tuple[str, ...], ...]:
    entries = list(spec) if spec is not None else []
    out = []
    for d in range(rank):
        e = entries[d] if d < len(entries) else None
        if e is None:
            out.append(())
        elif isinstance(e, str):
            out.append((e,))
        else:
            out.append(tuple(e))
    return tuple(out)


def _entry_name(f) -> str:
    name = getattr(f, "__name__", None) or "main"
    name = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return name if name and not name[0].isdigit() else "f_" + name


def lower_program(f, *args) -> Lowered:
    """lower() with the sharding facts run() needs."""
    import jax
    closed = jax.make_jaxpr(f)(*args)
    top = closed.jaxpr
    binding = {v: ("arg", i) for i, v in enumerate(top.invars)}
    binding.update({v: ("const", c)
                    for v, c in zip(top.constvars, closed.consts)})
    eqn, operands = _find_shard_map(top, binding)
    mesh = eqn.params["mesh"]
    axes = [str(a) for a in mesh.axis_names]
    sizes = [int(mesh.shape[a]) for a in mesh.axis_names]
    body = eqn.params["jaxpr"]
    body_consts = list(getattr(body, "consts", []))
    body = getattr(body, "jaxpr", body)
    # The shard_map's operands: f's arguments, or constants f closes over
    # (replicated: the same on every device, so they become constants of
    # the program).
    const_vars, const_values = list(body.constvars), body_consts
    params_vars, param_args, in_specs = [], [], []
    for var, (kind, what), spec in zip(body.invars, operands,
                                       eqn.params["in_specs"]):
        rank = len(var.aval.shape)
        if kind == "const":
            if any(_spec_tuple(spec, rank)):
                raise UnsupportedError(
                    "a constant that the shard_map splits across devices; "
                    "pass it as an argument")
            const_vars.append(var)
            const_values.append(what)
            continue
        params_vars.append(var)
        param_args.append(what)
        in_specs.append(_spec_tuple(spec, rank))
    unknown = unknown_primitives(body)
    if unknown:
        raise UnsupportedError(
            f"the importer does not translate {len(unknown)} primitive"
            f"{'s' if len(unknown) > 1 else ''} of this program: "
            f"{', '.join(unknown)} (it translates: {', '.join(SUPPORTED)})")
    grid = "_".join(axes)
    emitter = Emitter(grid, axes, sizes)
    params = []
    for i, var in enumerate(params_vars):
        shape = tuple(int(d) for d in var.aval.shape)
        et = elem_type(var.aval.dtype)
        params.append(Value(f"%arg{i}", shape, et))
    translator = Translator(emitter)
    for var, value in zip(const_vars, const_values):
        emitter.prim = (f"a constant the shard_map closes over "
                        f"({var.aval.str_short()})")
        translator.write(var, emitter.constant(np.asarray(value),
                                               elem_type(var.aval.dtype)))
    emitter.prim = ""
    outs = translator.run(body, [], [], params_vars=params_vars,
                          params=params)
    entry = _entry_name(f)
    sig = ", ".join(f"{p.name}: {p.type}" for p in params)
    res = ", ".join(o.type for o in outs)
    text = [f"// Imported by overlap.jax from the jaxpr of {entry}.",
            f"shard.grid @{grid}(shape = {'x'.join(map(str, sizes))})",
            "", f"func.func @{entry}({sig}) -> ({res}) {{"]
    text += emitter.lines
    text.append(f"    return {', '.join(o.name for o in outs)} : {res}")
    text.append("}")
    out_avals = [v.aval for v in closed.jaxpr.outvars]
    return Lowered(
        mlir="\n".join(text) + "\n", entry=entry, axes=axes, sizes=sizes,
        param_args=param_args, in_specs=in_specs,
        out_specs=[_spec_tuple(s, len(a.shape))
                   for s, a in zip(eqn.params["out_specs"], out_avals)],
        out_shapes=[tuple(int(d) for d in a.shape) for a in out_avals],
        out_dtypes=[np.dtype(a.dtype) for a in out_avals],
        mesh=mesh, eqn=eqn, operands=operands, origins=emitter.origins)


def importer_error(low: Lowered, err: Exception) -> Optional[Exception]:
    """When the compiler could not parse (or verify) the importer's text,
    an error that says so and names the line, the primitive that wrote
    it and the user's line; else None. The importer's text is meant to
    parse: such an error is the importer's bug, not the program's."""
    from .. import compiler
    message = str(err)
    if "stage 'parse'" not in message:
        return None
    found = re.search(r"^[^\n:]*:(\d+):(\d+): error: (.*)$", message,
                      re.MULTILINE)
    if not found:
        return None
    line, why = int(found.group(1)), found.group(3)
    lines = low.mlir.split("\n")
    text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    origin = origin_of(low.mlir, line, low.origins)
    return compiler.CompileError(
        f"overlap.jax: the importer wrote MLIR that does not parse (a bug "
        f"of the importer, not of your program): {why}, at line {line} of "
        f"its text (`{text[:200]}`)" +
        (f", written for {origin}" if origin else "") +
        " (overlap.jax.lower gives the text)")


def lower(f, *args) -> str:
    """The per-device program of the shard_map ``f`` on ``args``, as MLIR
    text that LLVM/MLIR 22 parses: func + linalg/tensor/arith/math + shard
    collectives on a ``shard.grid`` named after the mesh axes."""
    return lower_program(f, *args).mlir


# -- sharding ----------------------------------------------------------------

def _coords(low: Lowered, rank: int) -> Dict[str, int]:
    """Mesh coordinates of host rank `rank` (row-major over the axes)."""
    idx = np.unravel_index(rank, low.sizes)
    return {a: int(i) for a, i in zip(low.axes, idx)}


def _block(low: Lowered, names: Tuple[str, ...], coords) -> Tuple[int, int]:
    """(block index, block count) of a dim split over mesh axes `names`."""
    index, count = 0, 1
    for n in names:
        size = low.sizes[low.axes.index(n)]
        index, count = index * size + coords[n], count * size
    return index, count


def shard(low: Lowered, param: int, value: np.ndarray, rank: int
          ) -> np.ndarray:
    """Rank `rank`'s block of the global argument of parameter `param`."""
    coords = _coords(low, rank)
    index = []
    for d, names in enumerate(low.in_specs[param]):
        b, n = _block(low, names, coords)
        size = value.shape[d] // n
        index.append(slice(b * size, (b + 1) * size))
    return value[tuple(index)]


def assemble(low: Lowered, out: int, blocks: Sequence[np.ndarray]
             ) -> np.ndarray:
    """The global output `out` from every rank's block (each rank writes its
    block; replicated dims take the ranks that agree, the first of them)."""
    shape = low.out_shapes[out]
    result = np.empty(shape, dtype=blocks[0].dtype)
    written = set()
    for rank, block in enumerate(blocks):
        coords = _coords(low, rank)
        index = []
        for d, names in enumerate(low.out_specs[out]):
            b, n = _block(low, names, coords)
            size = shape[d] // n
            index.append((b * size, (b + 1) * size))
        key = tuple(index)
        if key in written:
            continue
        written.add(key)
        result[tuple(slice(a, z) for a, z in index)] = block
    return result


# -- run ---------------------------------------------------------------------

@dataclass
class JaxRun:
    #: f's global outputs as numpy arrays, as jax.jit(f)(*args) returns them.
    outputs: List[np.ndarray]
    #: One dict per fused op the Planner planned, as ``overlap.compile``
    #: gives them: "tiles" (ints), "strategy", "predicted_us",
    #: "serial_us", "location", ... (``overlap.Compiled.plans``).
    plans: List[Dict[str, Any]] = field(default_factory=list)
    #: The text that was compiled.
    mlir: str = ""
    #: Every rank's outputs, [rank][output] (the per-device blocks).
    rank_outputs: List[List[np.ndarray]] = field(default_factory=list)
    #: What the compiler warned about (each also a CompileWarning).
    warnings: List[str] = field(default_factory=list)
    #: Why a collective was not overlapped: "location" (the line in f),
    #: "pass", "name", "reason" (``overlap.Compiled.missed``).
    missed: List[Dict[str, Any]] = field(default_factory=list)
    #: The outputs in f's own output structure (a pytree: a tuple, a dict,
    #: ...), as jax.jit(f)(*args) returns them; `outputs` is its leaves.
    value: Any = None


def run(f, *args, strategy: str = "auto", profile: Optional[str] = None,
        ranks: Optional[int] = None, target: Optional[str] = None) -> JaxRun:
    """Lowers ``f`` (a shard_map), compiles it with Overlap, runs it on host
    ranks (one per mesh device) with each argument's shards, and returns the
    global outputs, the plans and the MLIR text."""
    from .. import compiler
    low = lower_program(f, *args)
    # What a compiled program takes and returns (its entry signature):
    # f32, f16 and bf16 buffers. Said here, naming the array, rather than
    # as a library without a signature.
    runnable = ("float32", "float16", "bfloat16")
    for i, dt in enumerate(low.out_dtypes):
        if np.dtype(dt).name not in runnable:
            raise UnsupportedError(
                f"result {i} of {low.entry} is {np.dtype(dt).name}: "
                f"overlap.jax.run takes and returns float32, float16 and "
                f"bfloat16 arrays (a compiled program's arguments and "
                f"results); convert it inside the shard_map, e.g. "
                f".astype(jnp.float32)")
    if ranks is not None and ranks != low.ranks:
        raise ValueError(f"ranks={ranks}, but the mesh has {low.ranks} "
                         f"devices ({dict(zip(low.axes, low.sizes))})")
    import jax
    # f's arguments may be pytrees (a params dict, a tuple): the jaxpr's
    # inputs, which param_args index, are their leaves in jax's order.
    arrays = [np.asarray(a) for a in jax.tree_util.tree_leaves(args)]
    for j, a in enumerate(low.param_args):
        if arrays[a].dtype.name not in runnable:
            raise UnsupportedError(
                f"argument {a} of {low.entry} (a leaf of its arguments, in "
                f"jax.tree_util order) is {arrays[a].dtype.name}: "
                f"overlap.jax.run takes float32, float16 and bfloat16 "
                f"arrays; pass a float array and convert it inside the "
                f"shard_map")
    fd, path = tempfile.mkstemp(prefix="overlap-jax-", suffix=".so")
    os.close(fd)
    try:
        try:
            prog = compiler.compile(low.mlir, strategy=strategy,
                                    profile=profile, target=target,
                                    output=path)
        except compiler.CompileError as err:
            better = importer_error(low, err)
            if better is None:
                raise
            raise better from err
        # np.array(order="C"), not ascontiguousarray: that makes a 0-d
        # argument (a scalar) an array of shape (1,).
        inputs = [[np.array(shard(low, j, arrays[a], r), order="C")
                   for j, a in enumerate(low.param_args)]
                  for r in range(low.ranks)]
        res = compiler.run(prog.path, inputs=inputs)
        if res.status not in (0,) or not res.outputs:
            raise RuntimeError(
                "overlap.jax: the run failed: " +
                (res.messages or res.report).strip() +
                "".join(f"\n(the compiler warned: {w})"
                        for w in prog.warnings))
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
    n = len(low.out_shapes)
    per_rank = [row[:n] for row in res.outputs]
    outputs = [assemble(low, i, [row[i] for row in per_rank])
               for i in range(n)]
    tree = jax.tree_util.tree_structure(jax.eval_shape(f, *args))
    return JaxRun(outputs=outputs, plans=prog.plans, warnings=prog.warnings,
                  missed=prog.missed,
                  mlir=low.mlir, rank_outputs=per_rank,
                  value=jax.tree_util.tree_unflatten(tree, outputs))


from ._call import Layer, jit  # noqa: E402  (needs lower_program above)
