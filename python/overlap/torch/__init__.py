"""PyTorch in: compile an ``nn.Module`` with its tensor-parallel plan
(docs/torch.md).

    >>> import overlap.torch as otorch
    >>> plan = {"fc1": ColwiseParallel(), "fc2": RowwiseParallel()}
    >>> res = otorch.run(mlp, x, plan=plan, ranks=4, strategy="uniform:2")
    >>> res.outputs[0], res.plans, res.missed
    >>> otorch.compile(mlp, x, plan=plan, ranks=4, target="cuda",
    ...                output="mlp.so")

``torch.export`` traces the unsharded module on CPU (no process group);
the frontend walks the exported aten graph itself and emits the per-rank
program (linalg/tensor/arith/math and ``shard.all_reduce`` on a 1-D grid
``@tp`` of ``ranks``) through the JAX frontend's emitter: the weights the
plan names are split (colwise on the output dim, rowwise on the input dim),
every other value follows (``_layout``), and a contraction over a split dim
is followed by its all-reduce: the pair Overlap tiles and overlaps.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..jax._emit import Emitter, UnsupportedError, Value, origin_of
from ._aten import Translator, torch_et, user_frame
from ._layout import Layout
from ._ops import OPS
from ._plan import COLWISE, ROWWISE, Refusals, resolve, style_of



def _import_export_first() -> None:
    """torch.export imports triton when it is installed, and triton's own
    LLVM crashes in its static initializers (a segfault) once Overlap's
    libraries are in the process: overlap.native loads them RTLD_GLOBAL, so
    their LLVM symbols interpose. So torch's export machinery is imported
    with this package, before anything is compiled; when Overlap's
    libraries were loaded first, triton is kept out of the process (torch
    exports and runs on CPU without it), with a warning, rather than crash
    it."""
    import importlib.util
    import sys
    import warnings
    from .. import native
    if native._loaded and "triton" not in sys.modules and \
            importlib.util.find_spec("triton") is not None:
        warnings.warn("overlap.torch: triton is kept out of this process "
                      "(importing it after Overlap's libraries crashes); "
                      "import overlap.torch before compiling anything to "
                      "keep it", RuntimeWarning, stacklevel=3)
        sys.modules["triton"] = None  # import triton: ImportError
    import torch.export._trace  # noqa: F401  (torch._dynamo, triton)


_import_export_first()

__all__ = ["Layer", "Lowered", "TorchRun", "TorchProgram",
           "UnsupportedError", "SUPPORTED", "compile", "jit", "lower",
           "lower_program", "run"]

#: The aten ops the frontend translates (docs/torch.md lists them).
SUPPORTED = sorted(OPS)

GRID = "tp"


@dataclass
class Lowered:
    """The per-rank program and how to shard its arguments and reassemble
    its results."""
    mlir: str
    entry: str
    ranks: int
    #: Per parameter of the entry: ("input", index of the user's argument)
    #: or ("state", "fc1.weight": a parameter, buffer or constant).
    sources: List[Tuple[str, Any]]
    #: The global value of each ("state", name) source.
    state: Dict[str, Any]
    arg_layouts: List[Layout]
    out_layouts: List[Layout]
    #: The torch dtype of each result.
    out_dtypes: List[Any]
    #: The module's output structure (torch.utils._pytree).
    out_spec: Any = None
    #: Per SSA name, the aten op and the user's line that wrote it.
    origins: Dict[str, str] = field(default_factory=dict)


def _entry_name(module) -> str:
    name = re.sub(r"[^A-Za-z0-9_]", "_", type(module).__name__) or "forward"
    return name if not name[0].isdigit() else "m_" + name


def _placeholders(ep, ranks, splits, refusals, entry):
    """Per placeholder of the exported graph: (node, source, layout, et)."""
    specs = {s.arg.name: s for s in ep.graph_signature.input_specs}
    bound, state = [], {}
    user = 0
    for node in ep.graph.nodes:
        if node.op != "placeholder":
            continue
        spec = specs.get(node.name)
        kind = spec.kind.name if spec is not None else "?"
        val = node.meta.get("val")
        what = (f"argument {user} of {entry}" if kind == "USER_INPUT" else
                f"{kind.lower()} {getattr(spec, 'target', node.name)}")
        if kind == "USER_INPUT":
            source = ("input", user)
            user += 1
        elif kind in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
            source = ("state", spec.target)
            value = ep.state_dict.get(spec.target)
            if value is None:
                value = ep.constants.get(spec.target)
            state[spec.target] = value
        else:
            refusals.add(what, "", f"an input of kind {kind} (the frontend "
                         f"takes tensors, parameters, buffers, constants)")
            continue
        split = splits.get(source[1]) if source[0] == "state" else None
        if source[0] == "input" and splits.sequence:
            # Sequence parallelism: the module's inputs come as each rank's
            # tokens (dim 1 of [b, s, h]), as SequenceParallel takes them.
            split = _sequence_split(val, what, splits, refusals)
        binding = bind(node, source, what, split, refusals)
        if binding is not None:
            bound.append(binding)
    return bound, state


def _sequence_split(val, what, splits, refusals):
    ranks = splits.ranks
    shape = tuple(getattr(val, "shape", ()))
    if len(shape) != 3 or shape[1] % ranks:
        refusals.add(what, "", f"an input of shape {list(shape)} under a "
                     f"sequence-parallel plan: the frontend splits the "
                     f"sequence dim of [b, s, h] over the {ranks} ranks")
        return None
    return (1, False, False)


def _gather_inputs(translator, node, splits) -> None:
    """The operands of `node` that enter a PrepareModuleInput module from
    outside it, all-gathered over the sequence (once per value and
    module)."""
    translator.override = {}
    if not splits.prepare:
        return
    inside = [v[0] for v in (node.meta.get("nn_module_stack") or {}).values()]
    for name in (n for n in inside if n in splits.prepare):
        for a in node.all_input_nodes:
            outer = [v[0] for v in
                     (a.meta.get("nn_module_stack") or {}).values()]
            item = translator.env.get(a)
            # Parameters are not the module's inputs; an activation split
            # over the sequence (dim 1) is.
            if name in outer or a in translator.state_nodes or \
                    not isinstance(item, tuple) or item[1].split_dim() != 1:
                continue
            if (a, name) not in translator.gathered:
                translator.gathered[(a, name)] = translator.all_gather(item)
            translator.override[a] = translator.gathered[(a, name)]


def bind(node, source, what: str, split, refusals):
    """(node, source, layout, et) of a placeholder: its global shape from
    the node's value, split as `split` says ((dim, gathered) from
    _plan.resolve; None: replicated)."""
    val = node.meta.get("val")
    if not hasattr(val, "shape"):
        refusals.add(what, "", f"a {type(val).__name__}: the frontend "
                     f"takes tensor arguments only")
        return None
    shape = tuple(int(d) for d in val.shape)
    try:
        et = torch_et(val.dtype)
    except UnsupportedError as err:
        refusals.add(what, "", str(err))
        et = "f32"
    layout = (Layout.split(shape, *split) if split is not None
              else Layout.replicated(shape))
    return node, source, layout, et


def _constant(graph, node, translator, refusals) -> None:
    value = getattr(graph.owning_module, node.target, None)
    try:
        et = torch_et(value.dtype)
        translator.env[node] = (
            translator.e.constant(to_numpy(value), et),
            Layout.replicated(tuple(value.shape)))
    except (UnsupportedError, AttributeError) as err:
        refusals.add(f"the constant {node.target}", "", str(err))


def _translate(graph, translator, emitter, refusals, splits=None) -> None:
    """Every call_function node, through OPS; the refused ones recorded
    (those that only use a refused value are skipped: one reason each)."""
    refused = set()
    for node in graph.nodes:
        if node.op == "get_attr":
            # A tensor the trace captured (make_fx's constants): whole on
            # every rank.
            _constant(graph, node, translator, refusals)
            continue
        if node.op != "call_function":
            continue
        if any(a in refused for a in node.all_input_nodes):
            refused.add(node)
            continue
        where, loc = user_frame(node)
        name = str(node.target)
        handler = OPS.get(name)
        if handler is None:
            why = "the torch frontend does not translate it"
            refusals.unknown = True
            refusals.add(f"the aten op {name}", where, why)
            refused.add(node)
            continue
        emitter.loc, emitter.where = loc, where
        emitter.prim = f"the aten op {name}"
        translator.node = node
        try:
            if splits is not None:
                _gather_inputs(translator, node, splits)
            translator.env[node] = handler(translator, node)
        except UnsupportedError as err:
            refusals.add(f"the aten op {name}", where, str(err))
            refused.add(node)
    emitter.loc = emitter.where = emitter.prim = ""


def lower_program(module, *args, plan: Optional[Dict[str, Any]] = None,
                  ranks: int = 4) -> Lowered:
    """Exports ``module`` on ``args`` and emits the per-rank program for
    ``ranks`` host ranks or GPUs under ``plan``. Every refusal known before
    compiling (aten ops it does not translate, plans it does not take,
    values split in ways it does not redistribute) is raised at once, one
    ``UnsupportedError`` listing each with the user's line and why."""
    import torch
    entry = _entry_name(module)
    refusals = Refusals()
    if not isinstance(ranks, int) or ranks < 1:
        raise ValueError(f"ranks={ranks!r}: expected a positive int")
    for i, a in enumerate(args):
        if not isinstance(a, torch.Tensor):
            refusals.add(f"argument {i} of {entry}", "",
                         f"a {type(a).__name__}: the frontend takes tensor "
                         f"arguments only")
    refusals.raise_if_any(entry)
    splits = resolve(module, plan, ranks, refusals)
    ep = torch.export.export(module, tuple(args))
    bound, state = _placeholders(ep, ranks, splits, refusals, entry)
    low = emit_graph(ep.graph, entry, ranks, bound, refusals,
                     "the exported graph", splits)
    low.state, low.out_spec = state, ep.call_spec.out_spec
    return low


def emit_graph(graph, entry: str, ranks: int, bound, refusals,
               what: str, splits=None) -> Lowered:
    """The per-rank program of the fx `graph` whose placeholders are
    `bound` ((node, source, layout, et) each), raising `refusals` (with
    those of the walk) if any."""
    emitter = Emitter(GRID, [GRID], [ranks])
    translator = Translator(emitter, ranks)
    params, sources, layouts = [], [], []
    for node, source, layout, et in bound:
        if source[0] == "state":
            translator.state_nodes.add(node)
        value = Value(f"%arg{len(params)}", layout.local_shape(ranks), et)
        translator.env[node] = (value, layout)
        params.append(value)
        sources.append(source)
        layouts.append(layout)
    _translate(graph, translator, emitter, refusals, splits)
    out_node = next(n for n in graph.nodes if n.op == "output")
    outs, out_layouts, out_dtypes = [], [], []
    results = out_node.args[0]
    for i, o in enumerate(results if isinstance(results, (list, tuple))
                          else [results]):
        item = translator.env.get(o)
        if item is None or not isinstance(item, tuple):
            if not refusals.items:
                refusals.add(f"result {i} of {entry}", "",
                             f"not a tensor the program computes ({o!r})")
            continue
        if item[1].partial:
            item = translator.all_reduce(item)
        outs.append(item[0])
        out_layouts.append(item[1])
        out_dtypes.append(o.meta["val"].dtype)
    refusals.raise_if_any(entry, "(The torch frontend translates: " +
                          ", ".join(SUPPORTED) + ".)"
                          if refusals.unknown else "")
    sig = ", ".join(f"{p.name}: {p.type}" for p in params)
    res = ", ".join(o.type for o in outs)
    text = [f"// Imported by overlap.torch from {what} of {entry}.",
            f"shard.grid @{GRID}(shape = {ranks})", "",
            f"func.func @{entry}({sig}) -> ({res}) {{"]
    text += emitter.lines
    text.append(f"    return {', '.join(o.name for o in outs)} : {res}")
    text.append("}")
    return Lowered(mlir="\n".join(text) + "\n", entry=entry, ranks=ranks,
                   sources=sources, state={}, arg_layouts=layouts,
                   out_layouts=out_layouts, out_dtypes=out_dtypes,
                   origins=emitter.origins)


def lower(module, *args, plan=None, ranks: int = 4) -> str:
    """The per-rank program of ``module`` on ``args`` under ``plan``, as MLIR
    text."""
    return lower_program(module, *args, plan=plan, ranks=ranks).mlir


# -- torch <-> numpy -------------------------------------------------------------

def to_numpy(t) -> np.ndarray:
    import torch
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        import ml_dtypes
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def to_torch(a: np.ndarray, dtype):
    import torch
    a = np.ascontiguousarray(a)
    if dtype == torch.bfloat16:
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(a.copy()).to(dtype)


def _compile_error(low: Lowered, err: Exception) -> Optional[Exception]:
    """A parse error of the frontend's text, traced to the aten op and the
    user's line that wrote it (a bug of the frontend), else None."""
    from .. import compiler
    # The source name may hold colons ("<... text from model.py:12>").
    found = re.search(r":(\d+):(\d+): error: (.*)$", str(err), re.MULTILINE)
    if "stage 'parse'" not in str(err) or not found:
        return None
    line = int(found.group(1))
    origin = origin_of(low.mlir, line, low.origins)
    return compiler.CompileError(
        f"overlap.torch: the frontend wrote MLIR that does not parse (a bug "
        f"of the frontend, not of your module): {found.group(3)}, at line "
        f"{line} of its text" + (f", written for {origin}" if origin else "")
        + " (overlap.torch.lower gives the text)")


@dataclass
class TorchProgram:
    """What ``compile`` wrote: the program (``path``), the Planner's plans
    and the missed remarks, and how its arguments are sharded."""
    path: str
    plans: List[Dict[str, Any]]
    missed: List[Dict[str, Any]]
    warnings: List[str]
    lowered: Lowered

    @property
    def mlir(self) -> str:
        return self.lowered.mlir


def compile(module, *args, plan=None, ranks: int = 4, target: str = "host",
            output=None, strategy: Optional[str] = None,
            profile: Optional[str] = None, **options) -> TorchProgram:
    """Compiles ``module`` under ``plan`` for ``ranks`` host ranks
    (target="host") or GPUs (target="cuda": one process per GPU under
    overlap-exec), writing the program to ``output`` (a temporary file
    without it). ``options`` go to ``overlap.compile`` (emit="obj", ...)."""
    from .. import compiler
    if target not in ("host", "cuda"):
        raise ValueError(f"target={target!r}: expected 'host' or 'cuda'")
    low = lower_program(module, *args, plan=plan, ranks=ranks)
    try:
        prog = compiler.compile(low.mlir, target=target, strategy=strategy,
                                profile=profile, output=output, **options)
    except compiler.CompileError as err:
        better = _compile_error(low, err)
        if better is None:
            raise
        raise better from err
    return TorchProgram(path=prog.path, plans=prog.plans, missed=prog.missed,
                        warnings=prog.warnings, lowered=low)


@dataclass
class TorchRun:
    #: The module's outputs (torch tensors), flat, as its forward returns
    #: them; ``value`` in its own structure.
    outputs: List[Any]
    value: Any
    #: One dict per fused op the Planner planned (overlap.Compiled.plans).
    plans: List[Dict[str, Any]] = field(default_factory=list)
    #: Why a collective was not overlapped, with the user's line
    #: (overlap.Compiled.missed).
    missed: List[Dict[str, Any]] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)
    mlir: str = ""
    #: Every rank's results, [rank][result] (numpy).
    rank_outputs: List[List[np.ndarray]] = field(default_factory=list)


def shard_inputs(low: Lowered, args) -> List[List[np.ndarray]]:
    """Per rank, the entry's arguments: each global value's block."""
    values = []
    for kind, what in low.sources:
        t = args[what] if kind == "input" else low.state[what]
        values.append(to_numpy(t))
    return [[lay.shard(v, r, low.ranks)
             for v, lay in zip(values, low.arg_layouts)]
            for r in range(low.ranks)]


def run(module, *args, plan=None, ranks: int = 4, strategy: str = "auto",
        profile: Optional[str] = None) -> TorchRun:
    """Exports ``module``, emits its per-rank program under ``plan``,
    compiles it with Overlap, runs it once on ``ranks`` host ranks and
    returns its outputs as torch tensors (equal to ``module(*args)``), the
    plans and the missed remarks."""
    from .. import compiler
    import torch.utils._pytree as pytree
    fd, path = tempfile.mkstemp(prefix="overlap-torch-", suffix=".so")
    os.close(fd)
    try:
        prog = compile(module, *args, plan=plan, ranks=ranks, target="host",
                       output=path, strategy=strategy, profile=profile)
        low = prog.lowered
        res = compiler.run(path, inputs=shard_inputs(low, args))
        if res.status != 0 or not res.outputs:
            raise RuntimeError("overlap.torch: the run failed: " +
                               (res.messages or res.report).strip())
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
    n = len(low.out_layouts)
    per_rank = [row[:n] for row in res.outputs]
    outputs = [to_torch(lay.assemble([row[i] for row in per_rank], ranks),
                        dtype)
               for i, (lay, dtype) in enumerate(zip(low.out_layouts,
                                                    low.out_dtypes))]
    value = pytree.tree_unflatten(outputs, low.out_spec)
    return TorchRun(outputs=outputs, value=value, plans=prog.plans,
                    missed=prog.missed, warnings=prog.warnings,
                    mlir=low.mlir, rank_outputs=per_rank)


from ._call import Layer, jit  # noqa: E402  (needs compile above)
