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

from ._emit import (Emitter, UnsupportedError, Value, _is_literal,
                    elem_type, origin_of, tensor_type)
from ._translate import SUPPORTED, unknown_primitives

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
    #: Per parameter of the entry: the index of f's argument (leaf) it takes.
    param_args: List[int]
    #: One PartitionSpec-like tuple per parameter and per result of the
    #: entry: per dim, a tuple of mesh axis names (empty: not split).
    in_specs: List[Tuple[Tuple[str, ...], ...]]
    out_specs: List[Tuple[Tuple[str, ...], ...]]
    #: Global shapes and dtypes of the entry's results.
    out_shapes: List[Tuple[int, ...]]
    out_dtypes: List[np.dtype]
    #: The shard_map's mesh, and the equation itself (its specs and
    #: check_vma), for overlap.jax.jit's call and backward.
    mesh: Any = None
    eqn: Any = None
    #: The per-device program that was imported: the shard_map's body cut
    #: to the results f returns (its outvars are the entry's results, in
    #: order), its consts, and per invar: ("arg", f's leaf) or ("const",
    #: value); with `body_in_specs`, the spec of each invar.
    body: Any = None
    body_consts: List[Any] = field(default_factory=list)
    operands: List[Any] = field(default_factory=list)
    body_in_specs: List[Tuple[Tuple[str, ...], ...]] = field(
        default_factory=list)
    #: Per leaf of f's result: ("result", index of the entry's result),
    #: ("arg", index of f's leaf: passed through unchanged) or ("const",
    #: value).
    outputs: List[Tuple[str, Any]] = field(default_factory=list)
    #: The dtype of each parameter (what run converts an argument to, as
    #: jax.jit does).
    param_dtypes: List[np.dtype] = field(default_factory=list)
    #: Per SSA name of the text, what wrote it (the primitive and the
    #: user's line): see importer_error.
    origins: Dict[str, str] = field(default_factory=dict)

    @property
    def ranks(self) -> int:
        return int(np.prod(self.sizes))


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


def _dce(body, used_outputs):
    """`body` cut to the outputs marked in `used_outputs` (and the
    equations and invars they need); the invars kept, as a mask."""
    try:
        from jax._src.interpreters import partial_eval as pe
        return pe.dce_jaxpr(body, list(used_outputs), instantiate=False)
    except Exception:  # pragma: no cover - private API moved: no cut
        outvars = [v for v, u in zip(body.outvars, used_outputs) if u]
        return body.replace(outvars=outvars), [True] * len(body.invars)


def _returned(top, body, specs_in, specs_out):
    """What f returns (`top.outputs`): a result of the shard_map, one of its
    own arguments, or a constant. A result that is an argument passed
    through the body unchanged, with the same spec in and out, is that
    argument (nnx.shard_map returns the module's state so). Returns the
    body outvar of each entry result, and Lowered.outputs."""
    invar_index = {v: j for j, v in enumerate(body.invars)}
    results: List[int] = []
    outputs: List[Tuple[str, Any]] = []
    for kind, what in top.outputs:
        if kind != "sm":
            # ("computed", name): refused at the top level already.
            outputs.append((kind, what) if kind != "computed" else
                           ("const", None))
            continue
        outvar = body.outvars[what]
        j = None if _is_literal(outvar) else invar_index.get(outvar)
        if j is not None and specs_in[j] == specs_out[what] and \
                top.operands[j][0] in ("arg", "const"):
            outputs.append(top.operands[j])
            continue
        if what not in results:
            results.append(what)
        outputs.append(("result", results.index(what)))
    return results, outputs


def _cut(body, results, read_outside):
    """`body` cut to the outvars `results` (in that order; also those f
    reads at its top level, which is refused, so that their equations are
    examined too), and the mask of the invars it keeps."""
    used = [False] * len(body.outvars)
    for i in list(results) + list(read_outside):
        used[i] = True
    cut, used_in = _dce(body, used)
    if results:
        # dce keeps outvars in the body's order.
        order = [i for i, u in enumerate(used) if u]
        cut = cut.replace(outvars=[cut.outvars[order.index(i)]
                                   for i in results])
    return cut, used_in


def lower_program(f, *args) -> Lowered:
    """lower() with the sharding facts run() needs. Every refusal the
    importer can know before compiling is collected and raised at once
    (_boundary.Refusals): one UnsupportedError listing them all."""
    import jax
    from ._boundary import (CollectingTranslator, Refusals, check_type,
                            leaf_paths, top_level)
    closed = jax.make_jaxpr(f)(*args)
    entry = _entry_name(f)
    refusals = Refusals()
    top = top_level(closed, refusals, entry)
    if top.eqn is None:
        raise refusals.error(entry)
    eqn = top.eqn
    mesh = eqn.params["mesh"]
    axes = [str(a) for a in mesh.axis_names]
    sizes = [int(mesh.shape[a]) for a in mesh.axis_names]
    closed_body = eqn.params["jaxpr"]
    body_consts = list(getattr(closed_body, "consts", []))
    body = getattr(closed_body, "jaxpr", closed_body)
    specs_in = [_spec_tuple(s, len(v.aval.shape))
                for s, v in zip(eqn.params["in_specs"], body.invars)]
    specs_out = [_spec_tuple(s, len(v.aval.shape))
                 for s, v in zip(eqn.params["out_specs"], eqn.outvars)]
    arg_paths = leaf_paths(args)
    # (An operand f computes is refused with the computation, top_level.)

    results, outputs = _returned(top, body, specs_in, specs_out)
    cut, used_in = _cut(body, results, top.read_outside)
    operands = [o for o, u in zip(top.operands, used_in) if u]
    body_in_specs = [s for s, u in zip(specs_in, used_in) if u]

    # The shard_map's operands: f's arguments, or constants f closes over
    # (replicated: the same on every device, so they become constants of
    # the program).
    const_vars, const_values = list(cut.constvars), list(body_consts)
    params_vars, param_args, in_specs = [], [], []
    for var, (kind, what), spec in zip(cut.invars, operands, body_in_specs):
        if kind == "const":
            if any(spec):
                refusals.add(
                    f"a constant the shard_map splits across devices "
                    f"({var.aval.str_short()})", top.where,
                    "pass it as an argument", kind="structure")
            const_vars.append(var)
            const_values.append(what)
            continue
        params_vars.append(var)
        param_args.append(what if kind == "arg" else -1)
        in_specs.append(spec)
    for name in unknown_primitives(cut):
        prim, _, rest = name.partition(" (from ")
        refusals.add(f"the primitive {prim}", rest[:-1] if rest else "",
                     "the importer does not translate it",
                     kind="primitive")
    grid = "_".join(axes)
    emitter = Emitter(grid, axes, sizes)
    translator = CollectingTranslator(emitter, refusals)
    params = []
    for i, (var, a) in enumerate(zip(params_vars, param_args)):
        shape = tuple(int(d) for d in var.aval.shape)
        path = arg_paths[a] if 0 <= a < len(arg_paths) else ""
        et = check_type(refusals,
                        f"argument {a} of {entry}" +
                        (f" ({path}, a leaf in jax.tree_util order)"
                         if path else ""),
                        top.where, var.aval, translator.refused_types)
        params.append(Value(f"%arg{i}", shape, et or "f32"))
    result_paths = list(getattr(getattr(body, "debug_info", None),
                                "result_paths", None) or [])
    out_ets = []
    for k, i in enumerate(results):
        var = eqn.outvars[i]
        path = result_paths[i] if i < len(result_paths) else ""
        out_ets.append(check_type(
            refusals, f"result {i} of the shard_map in {entry}" +
            (f" ({path})" if path else ""), top.where, var.aval,
            translator.refused_types))
    for var, value in zip(const_vars, const_values):
        emitter.prim = (f"a constant the shard_map closes over "
                        f"({var.aval.str_short()})")
        try:
            translator.write(var, emitter.constant(
                np.asarray(value), elem_type(var.aval.dtype)))
        except UnsupportedError as err:
            refusals.add(emitter.prim, top.where, str(err), kind="dtype")
            translator.write(var, Value("%refused", tuple(var.aval.shape),
                                        "f32"))
    emitter.prim = ""
    outs = translator.run(cut, [], [], params_vars=params_vars,
                          params=params)
    refusals.raise_if_any(entry)
    sig = ", ".join(f"{p.name}: {p.type}" for p in params)
    res = ", ".join(o.type for o in outs)
    text = [f"// Imported by overlap.jax from the jaxpr of {entry}.",
            f"shard.grid @{grid}(shape = {'x'.join(map(str, sizes))})",
            "", f"func.func @{entry}({sig}) -> ({res}) {{"]
    text += emitter.lines
    if outs:
        text.append(f"    return {', '.join(o.name for o in outs)} : {res}")
    else:
        text.append("    return")
    text.append("}")
    out_avals = [eqn.outvars[i].aval for i in results]
    return Lowered(
        mlir="\n".join(text) + "\n", entry=entry, axes=axes, sizes=sizes,
        param_args=param_args, in_specs=in_specs,
        out_specs=[specs_out[i] for i in results],
        out_shapes=[tuple(int(d) for d in a.shape) for a in out_avals],
        out_dtypes=[np.dtype(a.dtype) for a in out_avals],
        mesh=mesh, eqn=eqn, body=cut, body_consts=body_consts,
        operands=operands, body_in_specs=body_in_specs, outputs=outputs,
        param_dtypes=[np.dtype(v.aval.dtype) for v in params_vars],
        origins=emitter.origins)


def importer_error(low: Lowered, err: Exception) -> Optional[Exception]:
    """When the compiler could not parse (or verify) the importer's text,
    an error that says so and names the line, the primitive that wrote
    it and the user's line; else None. The importer's text is meant to
    parse: such an error is the importer's bug, not the program's."""
    from .. import compiler
    message = str(err)
    if "stage 'parse'" not in message:
        return None
    # The buffer's name is a path or `<overlap.compile text from F:L>`
    # (colons inside the angle brackets).
    found = re.search(r"^(?:<[^>\n]*>|[^\n:]*):(\d+):(\d+): error: (.*)$",
                      message, re.MULTILINE)
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

    def __repr__(self) -> str:
        """A summary (the fields hold the whole program text and every
        rank's arrays: print them one by one)."""
        outs = ", ".join(f"{np.dtype(o.dtype).name}{list(np.shape(o))}"
                         for o in self.outputs)
        tiles = "; ".join(f"{p.get('op', '?')} tiles {p.get('tiles')}"
                          for p in self.plans)
        return (f"JaxRun(outputs=[{outs}], plans={len(self.plans)}"
                + (f" ({tiles})" if tiles else "")
                + f", missed={len(self.missed)}, warnings="
                f"{len(self.warnings)}, ranks={len(self.rank_outputs)}, "
                f"mlir={len(self.mlir)} chars)")


def global_outputs(low: Lowered, results: Sequence[Any], leaves,
                   asarray=np.asarray) -> List[Any]:
    """f's result leaves from the entry's `results` (global arrays) and f's
    argument `leaves`, by `low.outputs`."""
    out = []
    for kind, what in low.outputs:
        if kind == "result":
            out.append(results[what])
        elif kind == "arg":
            out.append(leaves[what])
        else:
            out.append(asarray(what))
    return out


def _numpy_like(value, dtype):
    try:
        return np.array(value, dtype=dtype)
    except TypeError:  # an extended dtype (a PRNG key): jax.jit's own
        return value


def run(f, *args, strategy: str = "auto", profile: Optional[str] = None,
        ranks: Optional[int] = None, target: Optional[str] = None) -> JaxRun:
    """Lowers ``f`` (a shard_map), compiles it with Overlap, runs it on host
    ranks (one per mesh device) with each argument's shards, and returns the
    global outputs, the plans and the MLIR text. Arguments and results may
    be float32, float16, bfloat16, int32, int8, int16, int64 or bool arrays
    (the types the importer takes; unsigned ones are refused by name)."""
    from .. import compiler
    low = lower_program(f, *args)
    if ranks is not None and ranks != low.ranks:
        raise ValueError(f"ranks={ranks}, but the mesh has {low.ranks} "
                         f"devices ({dict(zip(low.axes, low.sizes))})")
    import jax
    # f's arguments may be pytrees (a params dict, a tuple): the jaxpr's
    # inputs, which param_args index, are their leaves in jax's order.
    arrays = jax.tree_util.tree_leaves(args)
    # Each argument as the program's parameter takes it: the dtype jax.jit
    # gives it too (without jax_enable_x64 an int64 array is int32 and a
    # float64 one float32).
    taken = {a: np.asarray(arrays[a], dtype=dt)
             for a, dt in zip(low.param_args, low.param_dtypes)}
    prog = None
    per_rank: List[List[np.ndarray]] = [[] for _ in range(low.ranks)]
    if low.out_shapes:
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
            inputs = [[np.array(shard(low, j, taken[a], r), order="C")
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
    # (Nothing to compile when f returns only its arguments and constants.)
    results = [assemble(low, i, [row[i] for row in per_rank])
               for i in range(len(low.out_shapes))]
    shapes, tree = jax.tree_util.tree_flatten(jax.eval_shape(f, *args))
    # (An argument f returns comes back as a new array of the dtype jax.jit
    # gives it; one numpy has no dtype for, a PRNG key, as it is.)
    outputs = [_numpy_like(o, s.dtype) for o, s in
               zip(global_outputs(low, results, arrays), shapes)]
    return JaxRun(outputs=outputs,
                  plans=prog.plans if prog else [],
                  warnings=prog.warnings if prog else [],
                  missed=prog.missed if prog else [],
                  mlir=low.mlir, rank_outputs=per_rank,
                  value=jax.tree_util.tree_unflatten(tree, outputs))


from ._call import Layer, jit  # noqa: E402  (needs lower_program above)
