"""Calling a compiled module from torch: ``overlap.torch.jit`` (issue 54,
item 2, on CPU through host ranks).

``Layer(module, *example_args, plan=..., ranks=R)`` compiles the module's
forward (as ``overlap.torch.compile``) and, at its first backward, its
vector-Jacobian product: ``make_fx`` of ``torch.func.vjp`` of the module
(functionalized, core aten), the forward recomputed inside it, emitted per
rank under the same plan — a colwise weight's gradient split like the
weight, the input's gradient a contraction over the split dim followed by
its all-reduce, which Overlap overlaps too. Calling the layer runs the
forward program through the custom op ``overlap::layer`` (torch.library),
whose autograd formula runs the backward program: the module's parameters
get their ``.grad`` as under plain torch, so an optimizer trains it.
"""

from __future__ import annotations

import itertools
import math
import os
import shutil
import tempfile
import weakref
from typing import Optional, Sequence

_REGISTRY: "weakref.WeakValueDictionary[int, Layer]" = \
    weakref.WeakValueDictionary()
_NEXT = itertools.count(1)
_OP = None


def _op():
    """The custom op overlap::layer(handle, args) -> results, registered
    once, with its fake (shapes) and its autograd formula."""
    global _OP
    if _OP is not None:
        return _OP
    import torch

    # The schema spelled out: this module's annotations are strings.
    @torch.library.custom_op("overlap::layer", mutates_args=(),
                             schema="(int handle, Tensor[] args) -> Tensor[]")
    def layer(handle, args):
        return _layer(handle).run_forward(args)

    @layer.register_fake
    def _(handle, args):
        low = _layer(handle).program.lowered
        return [torch.empty(lay.shape, dtype=dt)
                for lay, dt in zip(low.out_layouts, low.out_dtypes)]

    def setup_context(ctx, inputs, output):
        handle, args = inputs
        ctx.handle = handle
        ctx.save_for_backward(*args)

    def backward(ctx, grads):
        return None, _layer(ctx.handle).run_backward(
            list(ctx.saved_tensors), list(grads))

    layer.register_autograd(backward, setup_context=setup_context)
    _OP = layer
    return _OP


def _layer(handle: int) -> "Layer":
    layer = _REGISTRY.get(handle)
    if layer is None:
        raise RuntimeError(f"overlap.torch: layer {handle} is gone")
    return layer


def _sdpa_math(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False,
               scale=None, enable_gqa=False):
    """scaled_dot_product_attention as matmuls and a softmax, the causal
    mask a constant of the trace (-inf above the diagonal): under make_fx
    torch would pick its fused CPU kernel and its backward, and build the
    mask from boolean ops; None where it takes no such form (a mask given,
    dropout, GQA)."""
    import torch
    from torch.fx.experimental.proxy_tensor import disable_proxy_modes_tracing
    if attn_mask is not None or dropout_p or enable_gqa:
        return None
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = torch.matmul(q, k.transpose(-2, -1)) * scale
    if is_causal:
        rows, cols = q.shape[-2], k.shape[-2]
        with disable_proxy_modes_tracing():
            mask = torch.full((rows, cols), float("-inf"),
                              dtype=s.dtype).triu(1)
        s = s + mask
    return torch.matmul(torch.softmax(s, dim=-1), v)


def _math_attention():
    """A TorchFunctionMode that computes F.scaled_dot_product_attention
    as _sdpa_math does."""
    import torch

    class MathAttention(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func is torch.nn.functional.scaled_dot_product_attention:
                out = _sdpa_math(*args, **kwargs)
                if out is not None:
                    return out
            return func(*args, **kwargs)
    return MathAttention()


def _joint(module, names: Sequence[str], args):
    """make_fx of the module's vjp: (params, inputs, cotangents) ->
    (grads of the inputs, grads of the params)."""
    import torch
    from torch._decomp import core_aten_decompositions
    from torch.fx.experimental.proxy_tensor import make_fx
    n_in = len(args)

    def vjp(params, inputs, cotangents):
        def f(*xs):
            return torch.func.functional_call(
                module, dict(zip(names, xs[n_in:])), tuple(xs[:n_in]))
        with _math_attention():
            out, pull = torch.func.vjp(f, *inputs, *params)
        if isinstance(out, (tuple, list)):
            return pull(type(out)(cotangents))
        return pull(cotangents[0])

    params = [p.detach() for _, p in module.named_parameters()]
    with torch.no_grad():
        out = module(*args)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    cot = [torch.zeros_like(o) for o in outs]
    return make_fx(torch.func.functionalize(vjp, remove="mutations_and_views"),
                   decomposition_table=core_aten_decompositions())(
        params, [a.detach() for a in args], cot)


class Layer:
    """``module`` compiled for ``ranks`` host ranks under ``plan``, callable
    on tensors of the example arguments' shapes and dtypes, differentiable
    (torch.autograd) through its compiled backward."""

    def __init__(self, module, *example_args, plan=None, ranks: int = 4,
                 strategy: Optional[str] = "auto",
                 profile: Optional[str] = None):
        from . import compile as compile_module
        self.module, self.plan, self.ranks = module, plan, ranks
        self.strategy, self.profile = strategy, profile
        self.example = tuple(a.detach() for a in example_args)
        self.names = [n for n, _ in module.named_parameters()]
        self._dir = tempfile.mkdtemp(prefix="overlap-torch-layer-")
        weakref.finalize(self, shutil.rmtree, self._dir, True)
        self.program = compile_module(
            module, *self.example, plan=plan, ranks=ranks, target="host",
            strategy=strategy, profile=profile,
            output=os.path.join(self._dir, "forward.so"))
        self.backward_program = None
        self.handle = next(_NEXT)
        _REGISTRY[self.handle] = self

    # -- calling ---------------------------------------------------------------

    def __call__(self, *inputs):
        import torch.utils._pytree as pytree
        params = [p for _, p in self.module.named_parameters()]
        outs = _op()(self.handle, list(inputs) + params)
        return pytree.tree_unflatten(list(outs),
                                     self.program.lowered.out_spec)

    def _values(self, low, args, cotangents=()):
        n_in = len(self.example)
        state = dict(self.module.named_buffers())
        values = []
        for kind, what in low.sources:
            if kind == "input":
                values.append(args[what])
            elif kind == "cotangent":
                values.append(cotangents[what])
            elif what in self.names:
                values.append(args[n_in + self.names.index(what)])
            else:
                values.append(state[what])
        return values

    def _run(self, path, low, values):
        from .. import compiler
        from . import to_numpy, to_torch
        inputs = [[lay.shard(to_numpy(v), r, self.ranks)
                   for v, lay in zip(values, low.arg_layouts)]
                  for r in range(self.ranks)]
        res = compiler.run(path, inputs=inputs)
        if res.status != 0 or not res.outputs:
            raise RuntimeError("overlap.torch: the run failed: " +
                               (res.messages or res.report).strip())
        return [to_torch(lay.assemble([row[i] for row in res.outputs],
                                      self.ranks), dt)
                for i, (lay, dt) in enumerate(zip(low.out_layouts,
                                                  low.out_dtypes))]

    def run_forward(self, args) -> list:
        low = self.program.lowered
        return self._run(self.program.path, low, self._values(low, args))

    def run_backward(self, args, grads) -> list:
        import torch
        prog = self.backward()
        low = prog.lowered
        outs = self.program.lowered
        grads = [g if g is not None else torch.zeros(lay.shape, dtype=dt)
                 for g, lay, dt in zip(grads, outs.out_layouts,
                                       outs.out_dtypes)]
        return self._run(prog.path, low, self._values(low, args, grads))

    # -- the backward program -----------------------------------------------

    def backward(self):
        """The compiled vjp (compiled at the first backward; its refusals
        raised then)."""
        if self.backward_program is None:
            self.backward_program = self._compile_backward()
        return self.backward_program

    def _compile_backward(self):
        from .. import compiler
        from . import (TorchProgram, _compile_error, _entry_name, bind,
                       emit_graph)
        from ._plan import Refusals, resolve
        refusals = Refusals()
        splits = resolve(self.module, self.plan, self.ranks, refusals)
        if splits.sequence or any(v[2] for v in splits.values()):
            refusals.add("the plan", "", "the backward of a sequence-"
                         "parallel plan (SequenceParallel, PrepareModuleInput,"
                         " RowwiseParallel(output_layouts=Shard(1))) is not "
                         "taken yet: overlap.torch.jit differentiates "
                         "Colwise/RowwiseParallel plans")
            refusals.raise_if_any(_entry_name(self.module) + "_backward")
        gm = _joint(self.module, self.names, self.example)
        fwd = self.program.lowered
        places = [n for n in gm.graph.nodes if n.op == "placeholder"]
        n_p, n_in = len(self.names), len(self.example)
        bound = []
        for i, node in enumerate(places):
            if i < n_p:
                name = self.names[i]
                b = bind(node, ("state", name), f"parameter {name}",
                         splits.get(name), refusals)
            elif i < n_p + n_in:
                b = bind(node, ("input", i - n_p), f"argument {i - n_p}",
                         None, refusals)
            else:
                j = i - n_p - n_in
                b = bind(node, ("cotangent", j), f"the cotangent of result "
                         f"{j}", None, refusals)
                if b is not None:  # laid out as the forward's result
                    b = (b[0], b[1], fwd.out_layouts[j], b[3])
            if b is not None:
                bound.append(b)
        entry = _entry_name(self.module) + "_backward"
        low = emit_graph(gm.graph, entry, self.ranks, bound, refusals,
                         "the vjp (make_fx of torch.func.vjp)")
        try:
            prog = compiler.compile(low.mlir, target="host",
                                    strategy=self.strategy,
                                    profile=self.profile,
                                    output=os.path.join(self._dir,
                                                        "backward.so"))
        except compiler.CompileError as err:
            better = _compile_error(low, err)
            if better is None:
                raise
            raise better from err
        return TorchProgram(path=prog.path, plans=prog.plans,
                            missed=prog.missed, warnings=prog.warnings,
                            lowered=low)


def jit(module, *example_args, plan=None, ranks: int = 4,
        strategy: Optional[str] = "auto",
        profile: Optional[str] = None) -> Layer:
    """``module`` compiled under ``plan`` for ``ranks`` host ranks, as a
    callable torch autograd differentiates (``Layer``)."""
    return Layer(module, *example_args, plan=plan, ranks=ranks,
                 strategy=strategy, profile=profile)
