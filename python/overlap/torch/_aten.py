"""The aten graph of ``torch.export`` to the per-rank MLIR program.

One handler per aten op (``OPS``) reads the node's operands from the
environment — each a `Value` of the per-rank program (local shape) with its
`Layout` (how it relates to the module's global tensor) — and emits
linalg/tensor/arith/math ops through the JAX frontend's emitter
(``overlap.jax._emit``: the same text forms, f32 bodies for bf16/f16 with
one rounding per op, contractions accumulating in f32). A contraction over a
split dim (the input of a rowwise Linear) is a partial sum that a
``shard.all_reduce`` right after it makes whole: the matmul-then-collective
pair Overlap tiles. Nothing is redistributed: operands split differently
are refused with why.
"""

from __future__ import annotations

import math
import os
import re
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..jax._emit import (Body, Emitter, UnsupportedError, Value, _map,
                         tensor_type)
from ._layout import Layout, LayoutError

_TORCH_ET = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}

#: A value of the program with its layout.
Item = Tuple[Value, Layout]


def torch_et(dtype, bools: bool = False) -> str:
    """The element type of a torch dtype; booleans (i1: the masks of a
    comparison, inside the program) only where `bools`."""
    name = str(dtype).replace("torch.", "")
    if bools and name == "bool":
        return "i1"
    if name not in _TORCH_ET:
        raise UnsupportedError(
            f"element type {name} (the torch frontend takes float32, "
            f"bfloat16 and float16 tensors)")
    return _TORCH_ET[name]


def user_frame(node) -> Tuple[str, str]:
    """(where, loc) of the user's line that made `node`: the innermost frame
    of its stack trace outside torch's own files ("model.py:12 (forward):
    return self.fc2(h)", 'loc("model.py":12:0)'), or ("", "")."""
    trace = node.meta.get("stack_trace") or ""
    frames = re.findall(r'File "([^"]+)", line (\d+), in ([^\n]+)\n'
                        r'(?:[ \t]+([^\n]*))?', trace)
    if not frames:
        return "", ""
    import torch
    # Frames of torch itself and of this package (the call of export) are
    # not the user's.
    inside = (os.path.dirname(torch.__file__),
              os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    user = [f for f in frames if not f[0].startswith(inside)]
    path, line, fn, code = (user or frames)[-1]
    name = path.replace("\\", "\\\\").replace('"', '\\"')
    where = f"{os.path.basename(path)}:{line} ({fn.strip()})"
    if code.strip():
        where += f": {code.strip()}"
    return where, f'loc("{name}":{line}:0)'


def _target_name(target) -> str:
    name = getattr(target, "__name__", None) or str(target)
    if hasattr(target, "_schema") or "." in name:
        return str(target)
    return name


class Translator:
    """Translates the call_function nodes of one exported graph."""

    def __init__(self, emitter: Emitter, ranks: int):
        self.e = emitter
        self.ranks = ranks
        self.env: Dict[Any, Any] = {}
        self.node = None
        #: Operands as the node being translated reads them (a module's
        #: inputs all-gathered over the sequence), and those gathers, made
        #: once per (value, module).
        self.override: Dict[Any, Item] = {}
        self.gathered: Dict[Any, Item] = {}
        #: The placeholders that are the module's parameters and buffers.
        self.state_nodes: set = set()

    # -- helpers -----------------------------------------------------------

    def error(self, why: str) -> UnsupportedError:
        return UnsupportedError(why)

    def item(self, arg) -> Item:
        if arg in self.override:
            return self.override[arg]
        if arg not in self.env:
            raise self.error(f"an operand that is not a tensor ({arg!r})")
        return self.env[arg]

    @staticmethod
    def out_et(val) -> str:
        return torch_et(val.dtype)

    def moments(self, item: Item, k: int, eps: float) -> Tuple[Item, Item]:
        """The mean and 1 / sqrt(variance + eps) over the last `k` dims, in
        f32, those dims dropped."""
        v, lay = item
        rank = len(v.shape)
        axes = list(range(rank - k, rank))
        if lay.partial or any(lay.dim_is_split(a) for a in axes):
            raise self.error(f"a LayerNorm over a value {lay.describe()}")
        n = float(np.prod([lay.shape[a] for a in axes]))
        red, full = list(range(rank - k)), list(range(rank))
        s1, slay = self.reduce(item, axes, "sum")
        mean = self.generic(
            [(s1, list(range(len(s1.shape))))], s1.shape, "f32",
            lambda a, b: b(f"arith.divf {a[0]}, {b.const(n, 'f32')} : f32"))

        def square(a, b):
            d = b(f"arith.subf {b.to_f32(a[0], v.et)}, {a[1]} : f32")
            return b(f"arith.mulf {d}, {d} : f32")
        d2 = self.generic([(v, full), (mean, red)], v.shape, "f32", square)
        s2, _ = self.reduce((d2, lay), axes, "sum")

        def rstd(a, b):
            var = b(f"arith.divf {a[0]}, {b.const(n, 'f32')} : f32")
            e = b.const(eps, "f32")
            return b(f"math.rsqrt {b(f'arith.addf {var}, {e} : f32')} : f32")
        r = self.generic([(s2, list(range(len(s2.shape))))], s2.shape,
                         "f32", rstd)
        return (mean, slay), (r, slay)

    def out_meta(self):
        val = self.node.meta.get("val")
        return tuple(int(d) for d in val.shape), torch_et(val.dtype, True)

    def local(self, layout: Layout) -> Tuple[int, ...]:
        return layout.local_shape(self.ranks)

    def reshape(self, item: Item, shape: Sequence[int]) -> Item:
        v, lay = item
        try:
            new = lay.reshape(shape, self.ranks)
        except LayoutError as err:
            raise self.error(f"{err} of a value {lay.describe()}")
        return self.e.reshape(v, self.local(new)), new

    def all_gather(self, item: Item) -> Item:
        """The whole value of one split in contiguous blocks on a dim (a
        ColwiseParallel(output_layouts=Replicate()) Linear's output)."""
        v, lay = item
        d = lay.split_dim()
        key = lay.dim_key(d)
        if len(key) != 1:
            raise self.error(f"an all-gather of a value {lay.describe()} "
                             f"in blocks that are not contiguous")
        shape = list(v.shape)
        shape[d] = lay.shape[d]
        name = self.e.fresh("ag")
        t = tensor_type(shape, v.et)
        self.e.op(f"{name} = shard.all_gather {v.name} on @{self.e.grid} "
                  f"grid_axes = [0] gather_axis = {d} : {v.type} -> {t}")
        return Value(name, tuple(shape), v.et), Layout.replicated(lay.shape)

    def all_reduce(self, item: Item, kind: str = "sum") -> Item:
        v, lay = item
        name = self.e.fresh("ar")
        red = "" if kind == "sum" else f" reduction = {kind}"
        self.e.op(f"{name} = shard.all_reduce {v.name} on @{self.e.grid} "
                  f"grid_axes = [0]{red} : {v.type} -> {v.type}")
        return Value(name, v.shape, v.et), Layout(lay.dims, False)

    def generic(self, ins: Sequence[Tuple[Value, List[int]]], out_shape,
                out_et: str, body, iters: Optional[List[str]] = None,
                init=None, loops: Optional[int] = None) -> Value:
        """A linalg.generic over `loops` dims (default: the output's); each
        input with, per dim, the loop it reads (dims that the result
        broadcasts, unit in the input, are dropped first)."""
        n = loops if loops is not None else len(out_shape)
        operands, maps = [], []
        for v, dims in ins:
            keep = [i for i, d in enumerate(dims) if d is not None]
            if len(keep) != len(v.shape):
                v = self.e.reshape(v, [v.shape[i] for i in keep])
            operands.append(v)
            maps.append(_map(n, [f"d{dims[i]}" for i in keep]))
        out_map = _map(n, [f"d{i}" for i in range(len(out_shape))])
        return self.e.generic(operands, maps, out_shape, out_et, out_map,
                              iters or ["parallel"] * n, body, init=init)

    def rank_index(self) -> str:
        """This rank's index on the grid, an `index` SSA value (emitted
        once per program, at its first use)."""
        if getattr(self, "_rank", None) is None:
            from ..jax._dynamic import group_index
            loc = self.e.loc
            self.e.loc = ""
            self._rank = group_index(self, [self.e.grid])
            self.e.loc = loc
        return self._rank

    def slice_to(self, item: Item, dim: int, factors) -> Optional[Item]:
        """This rank's block of the whole value `item` along `dim`, laid
        out as `factors` (a dim split in R contiguous blocks), or None when
        `item` is not whole or the blocks are not contiguous. A replicated
        operand meeting a split one is cut so, locally: what a
        RowwiseParallel Linear of a whole input computes."""
        v, lay = item
        key = Layout((tuple(factors),)).dim_key(0)
        if lay.partial or lay.split_dim() is not None or len(key) != 1 \
                or not key[0][1] or lay.shape[dim] != key[0][0]:
            return None
        block = lay.shape[dim] // self.ranks
        off = self.e.fresh("off")
        self.e.op(f"{off} = arith.muli {self.rank_index()}, "
                  f"{self.e.index(block)} : index")
        sizes = list(v.shape)
        sizes[dim] = block
        offsets = ["0"] * len(sizes)
        offsets[dim] = off
        name = self.e.fresh("cut")
        t = tensor_type(sizes, v.et)
        self.e.op(f"{name} = tensor.extract_slice {v.name}"
                  f"[{', '.join(offsets)}] [{', '.join(map(str, sizes))}] "
                  f"[{', '.join('1' for _ in sizes)}] : {v.type} to {t}")
        dims = list(lay.dims)
        dims[dim] = tuple(factors)
        return Value(name, tuple(sizes), v.et), Layout(tuple(dims))

    def align(self, items: Sequence[Any], shape) -> List[Any]:
        """`items` (tensors and numbers) with each whole tensor cut to the
        blocks of a split one where torch's broadcasting lines their dims
        up."""
        n = len(shape)
        split: Dict[int, Any] = {}
        for x in items:
            if isinstance(x, tuple) and x[1].split_dim() is not None:
                i = x[1].split_dim()
                j = n - len(x[1].shape) + i
                if x[1].shape[i] == shape[j]:
                    split.setdefault(j, x[1].dims[i])
        if not split:
            return list(items)
        out = []
        for x in items:
            if isinstance(x, tuple) and x[1].split_dim() is None:
                off = n - len(x[1].shape)
                for j, factors in split.items():
                    i = j - off
                    if i >= 0 and x[1].shape[i] == shape[j] != 1:
                        x = self.slice_to(x, i, factors) or x
            out.append(x)
        return out

    def broadcast_dims(self, items: Sequence[Item], shape) -> Tuple[
            List[List[Optional[int]]], Layout]:
        """Torch's broadcasting of `items` to the global `shape`: per item,
        the output dim each of its dims maps to (None: a unit dim the output
        broadcasts), and the output's layout. Items whose dims hold
        different blocks are refused."""
        n = len(shape)
        out_dims: List[Any] = [None] * n
        owner: List[Optional[str]] = [None] * n
        maps = []
        for k, (v, lay) in enumerate(items):
            off = n - len(lay.shape)
            dims = []
            for i, g in enumerate(lay.shape):
                j = off + i
                if g == 1 and shape[j] != 1:
                    dims.append(None)
                    continue
                dims.append(j)
                if out_dims[j] is None:
                    out_dims[j], owner[j] = lay.dims[i], lay.describe()
                elif Layout((out_dims[j],)).dim_key(0) != lay.dim_key(i):
                    raise self.error(
                        f"operands laid out differently: one is "
                        f"{owner[j]}, another {lay.describe()} (dim {j} of "
                        f"the result holds different blocks on each rank; "
                        f"the torch frontend does not redistribute)")
            maps.append(dims)
        dims = [d if d is not None else ((int(shape[j]), False),)
                for j, d in enumerate(out_dims)]
        layout = Layout(tuple(dims))
        if sum(1 for j in range(n) if layout.dim_is_split(j)) > 1:
            raise self.error("operands split on different dims")
        return maps, layout

    def elementwise(self, items: Sequence[Any], shape, et: str,
                    fn: Callable[[Body, List[str]], str],
                    bools: bool = False) -> Item:
        """`fn(b, xs)` on f32 scalars (one per item: tensors or Python
        numbers), its f32 result rounded to `et` once. With `bools`, i1
        operands stay i1 and an i1 result is fn's own (a comparison, a
        select); without, a boolean operand is refused."""
        items = self.align(items, shape)
        tensors = [x for x in items if isinstance(x, tuple)]
        for v, lay in tensors:
            if lay.partial:
                raise self.error("a partial sum used before its all-reduce")
            if v.et == "i1" and not bools:
                raise self.error("arithmetic on a boolean tensor")
        if et == "i1" and not bools:
            raise self.error("a boolean result of arithmetic")
        maps, layout = self.broadcast_dims(tensors, shape)
        local = self.local(layout)

        def body(a, b):
            xs, k = [], 0
            for x in items:
                if isinstance(x, tuple):
                    xs.append(a[k] if x[0].et == "i1" else
                              b.to_f32(a[k], x[0].et))
                    k += 1
                else:
                    xs.append(b.const(float(x), "f32"))
            out = fn(b, xs)
            return out if et == "i1" else b.from_f32(out, et)
        ins = [(v, m) for (v, _), m in zip(tensors, maps)]
        return self.generic(ins, local, et, body), layout

    def reduce(self, item: Item, axes: Sequence[int], kind: str) -> Item:
        """Sum ("sum") or max ("max") of `item` over `axes`, in f32 (the
        result f32, the axes dropped); over a split axis, the all-reduce
        that completes it follows."""
        v, lay = item
        rank = len(v.shape)
        axes = sorted(a % rank for a in axes)
        kept = [d for d in range(rank) if d not in axes]
        order = kept + axes
        out_local = [v.shape[d] for d in kept]
        out_lay = Layout(tuple(lay.dims[d] for d in kept))
        init_v = -np.inf if kind == "max" else 0.0
        init = self.e.fill(init_v, out_local, "f32")
        op = "arith.maximumf" if kind == "max" else "arith.addf"

        def body(a, b):
            x = b.to_f32(a[0], v.et)
            if kind == "sumsq":
                x = b(f"arith.mulf {x}, {x} : f32")
            return b(f"{op} {a[1]}, {x} : f32")
        out = self.generic(
            [(v, [order.index(d) for d in range(rank)])], out_local, "f32",
            body,
            iters=["parallel"] * len(kept) + ["reduction"] * len(axes),
            init=init, loops=rank)
        if any(lay.dim_is_split(a) for a in axes):
            return self.all_reduce((out, out_lay),
                                   "max" if kind == "max" else "sum")
        return out, out_lay

    # -- contractions ------------------------------------------------------

    def contract(self, lhs: Item, rhs: Item) -> Item:
        """lhs [..., M, K] x rhs [..., K, N] -> [..., M, N] in f32 (batch
        dims broadcast as torch.matmul does); partial when K is split."""
        (lv, ll), (rv, rl) = lhs, rhs
        for lay in (ll, rl):
            if lay.partial:
                raise self.error("a partial sum used before its all-reduce")
        if len(lv.shape) < 2 or len(rv.shape) < 2:
            raise self.error("a matmul of a 1-D operand")
        lk, rk = ll.dim_is_split(-1 + len(lv.shape)), rl.dim_is_split(
            len(rv.shape) - 2)
        # A whole operand against a split contraction dim: its block.
        if lk and not rk:
            cut = self.slice_to(rhs, len(rv.shape) - 2, ll.dims[-1])
            if cut is not None:
                (rv, rl), rk = cut, True
        elif rk and not lk:
            cut = self.slice_to(lhs, len(lv.shape) - 1, rl.dims[-2])
            if cut is not None:
                (lv, ll), lk = cut, True
        partial = False
        if lk or rk:
            if not (lk and rk) or ll.dim_key(len(lv.shape) - 1) != \
                    rl.dim_key(len(rv.shape) - 2):
                raise self.error(
                    f"a contraction whose dim is split on one operand only "
                    f"(lhs {ll.describe()}, rhs {rl.describe()}), the other "
                    f"split elsewhere or not in contiguous blocks: the "
                    f"torch frontend does not redistribute")
            partial = True
        # Batch dims (all but the last two), broadcast as torch does.
        lb, rb = ll.shape[:-2], rl.shape[:-2]
        nb = max(len(lb), len(rb))
        bshape = [max((lb[i - nb + len(lb)] if i - nb + len(lb) >= 0 else 1),
                      (rb[i - nb + len(rb)] if i - nb + len(rb) >= 0 else 1))
                  for i in range(nb)]
        bl = Layout(tuple(ll.dims[:-2]))
        br = Layout(tuple(rl.dims[:-2]))
        (bmap_l, bmap_r), blay = self.broadcast_dims(
            [(None, bl), (None, br)], bshape)
        m, n, k = nb, nb + 1, nb + 2
        dims = list(blay.dims) + [ll.dims[-2], rl.dims[-1]]
        out = Layout(tuple(dims), partial,
                     rl.gather and rl.dim_is_split(len(rv.shape) - 1),
                     partial and rl.scatter)
        if sum(1 for j in range(len(dims)) if out.dim_is_split(j)) > 1:
            raise self.error(
                f"a product of two split operands (lhs {ll.describe()}, rhs "
                f"{rl.describe()}): it would need an all-gather first")
        local = self.local(out)
        init = self.e.fill(0.0, local, "f32")

        def body(a, b):
            x = b.to_f32(a[0], lv.et)
            y = b.to_f32(a[1], rv.et)
            return b(f"arith.addf {a[2]}, {b(f'arith.mulf {x}, {y} : f32')}"
                     f" : f32")
        acc = self.generic(
            [(lv, bmap_l + [m, k]), (rv, bmap_r + [k, n])], local, "f32",
            body, iters=["parallel"] * (nb + 2) + ["reduction"], init=init,
            loops=nb + 3)
        return acc, out

    def finish(self, acc: Item, et: str, bias: Optional[Item] = None,
               beta: float = 1.0) -> Item:
        """The f32 result of a contraction as the op's `et`, with `bias`
        (times beta) added: one rounding; a partial sum is rounded, summed
        over the ranks (the all-reduce Overlap overlaps with the
        contraction) and the bias added after."""
        v, lay = acc
        if lay.gather:
            v, lay = self.all_gather((v, lay))
        if lay.partial:
            if et != "f32":
                v = self.elementwise([(v, Layout(lay.dims))], lay.shape, et,
                                     lambda b, x: x[0])[0]
            acc = self.all_reduce((v, lay))
            v, lay = acc
        if bias is None:
            if v.et == et:
                return v, lay
            return self.elementwise([(v, lay)], lay.shape, et,
                                    lambda b, x: x[0])
        if bias[1].partial:
            raise self.error("a partial sum used as a bias")
        def add(b, x):
            y = x[1]
            if beta != 1.0:
                y = b(f"arith.mulf {y}, {b.const(beta, 'f32')} : f32")
            return b(f"arith.addf {x[0]}, {y} : f32")
        return self.elementwise([(v, lay), bias], lay.shape, et, add)

    def linear(self, x: Item, wt: Item, bias: Optional[Item], et: str,
               beta: float = 1.0) -> Item:
        """x [..., K] @ wt [K, N] (+ bias): the leading dims of x folded
        into M (the [b, s] of a transformer: one 2-D matmul), unfolded
        after."""
        lead = x[1].shape[:-1]
        if len(lead) != 1:
            x = self.reshape(x, [int(np.prod(lead, dtype=np.int64)),
                                 x[1].shape[-1]])
        acc = self.contract(x, wt)
        if acc[1].scatter:
            return self.scattered(acc, lead, et, bias, beta)
        y = self.finish(acc, et, bias, beta)
        if len(lead) != 1:
            y = self.reshape(y, list(lead) + [y[1].shape[-1]])
        return y

    def scattered(self, acc: Item, lead, et: str, bias: Optional[Item],
                  beta: float) -> Item:
        """A RowwiseParallel(output_layouts=Shard(1)) Linear's partial sum
        [b*s, N]: rounded, unfolded to [b, s, N], reduce-scattered over s
        (each rank its tokens, summed over the ranks: the pair Overlap
        overlaps), then the bias added."""
        if len(lead) != 2:
            raise self.error(
                f"RowwiseParallel(output_layouts=Shard(1)) on an input of "
                f"shape {list(lead) + ['K']}: the frontend scatters the "
                f"sequence dim of [b, s, h]")
        if lead[1] % self.ranks:
            raise self.error(f"a sequence of {lead[1]} tokens, not a "
                             f"multiple of the {self.ranks} ranks")
        v, lay = acc
        if et != v.et:
            v = self.elementwise([(v, Layout(lay.dims))], lay.shape, et,
                                 lambda b, x: x[0])[0]
        v, lay = self.reshape((v, lay), list(lead) + [lay.shape[-1]])
        shape = list(v.shape)
        shape[1] //= self.ranks
        name = self.e.fresh("rs")
        t = tensor_type(shape, v.et)
        self.e.op(f"{name} = shard.reduce_scatter {v.name} on "
                  f"@{self.e.grid} grid_axes = [0] scatter_axis = 1 : "
                  f"{v.type} -> {t}")
        y = Value(name, tuple(shape), v.et), Layout.split(lay.shape, 1)
        if bias is None:
            return y

        def add(b, x):
            z = x[1]
            if beta != 1.0:
                z = b(f"arith.mulf {z}, {b.const(beta, 'f32')} : f32")
            return b(f"arith.addf {x[0]}, {z} : f32")
        return self.elementwise([y, bias], lay.shape, et, add)

    def transpose(self, item: Item, perm: Sequence[int]) -> Item:
        v, lay = item
        perm = [int(p) % max(len(v.shape), 1) for p in perm]
        return self.e.transpose(v, perm), lay.permute(perm)

    # -- softmax, norms, attention -------------------------------------------

    def softmax(self, item: Item, dim: int, et: str) -> Item:
        """exp(x - max) / sum over `dim`, in f32, rounded once to `et`."""
        v, lay = item
        rank = len(v.shape)
        dim %= rank
        if lay.partial or lay.dim_is_split(dim):
            raise self.error(f"a softmax over dim {dim} of a value "
                             f"{lay.describe()} (it needs the whole dim)")
        mx, _ = self.reduce(item, [dim], "max")
        red = [j for j in range(rank) if j != dim]
        full = list(range(rank))

        def shifted(a, b):
            x = b.to_f32(a[0], v.et)
            return b(f"math.exp {b(f'arith.subf {x}, {a[1]} : f32')} : f32")
        e = self.generic([(v, full), (mx, red)], v.shape, "f32", shifted)
        s, _ = self.reduce((e, lay), [dim], "sum")
        out = self.generic(
            [(e, full), (s, red)], v.shape, et,
            lambda a, b: b.from_f32(b(f"arith.divf {a[0]}, {a[1]} : f32"),
                                    et))
        return out, lay

    def norm(self, item: Item, k: int, et: str, w: Optional[Item],
             bias: Optional[Item], eps: float, rms: bool) -> Item:
        """LayerNorm (rms=False) or RMSNorm over the last `k` dims, the
        statistics in f32. LayerNorm rounds once; RMSNorm as torch computes
        it: x * rsqrt(mean(x^2) + eps) rounded, then times the weight."""
        v, lay = item
        rank = len(v.shape)
        axes = list(range(rank - k, rank))
        what = "RMSNorm" if rms else "LayerNorm"
        if lay.partial or any(lay.dim_is_split(a) for a in axes):
            raise self.error(f"a {what} over a value {lay.describe()} (it "
                             f"needs the whole normalized dims)")
        for p in (w, bias):
            if p is not None and not p[1].is_replicated:
                raise self.error(f"a {what} whose weight is "
                                 f"{p[1].describe()}")
        n = float(np.prod([lay.shape[a] for a in axes]))
        red, full = list(range(rank - k)), list(range(rank))
        if rms:
            ss, _ = self.reduce(item, axes, "sumsq")

            def scaled(a, b):
                ms = b(f"arith.divf {a[1]}, {b.const(n, 'f32')} : f32")
                e = b.const(eps, "f32")
                r = b(f"math.rsqrt {b(f'arith.addf {ms}, {e} : f32')} : f32")
                return b.from_f32(b(f"arith.mulf "
                                    f"{b.to_f32(a[0], v.et)}, {r} : f32"),
                                  et)
            y = self.generic([(v, full), (ss, red)], v.shape, et, scaled)
            if w is None:
                return y, lay
            return self.elementwise(
                [(y, lay), w], lay.shape, et,
                lambda b, xs: b(f"arith.mulf {xs[0]}, {xs[1]} : f32"))
        s1, _ = self.reduce(item, axes, "sum")

        def centered(b, x, s):
            mean = b(f"arith.divf {s}, {b.const(n, 'f32')} : f32")
            return b(f"arith.subf {b.to_f32(x, v.et)}, {mean} : f32")

        def square(a, b):
            d = centered(b, a[0], a[1])
            return b(f"arith.mulf {d}, {d} : f32")
        d2 = self.generic([(v, full), (s1, red)], v.shape, "f32", square)
        s2, _ = self.reduce((d2, lay), axes, "sum")
        ins = [(v, full), (s1, red), (s2, red)]
        ins += [(p[0], axes) for p in (w, bias) if p is not None]

        def out(a, b):
            var = b(f"arith.divf {a[2]}, {b.const(n, 'f32')} : f32")
            e = b.const(eps, "f32")
            r = b(f"math.rsqrt {b(f'arith.addf {var}, {e} : f32')} : f32")
            y = b(f"arith.mulf {centered(b, a[0], a[1])}, {r} : f32")
            k = 3
            if w is not None:
                y = b(f"arith.mulf {y}, {b.to_f32(a[k], w[0].et)} : f32")
                k += 1
            if bias is not None:
                y = b(f"arith.addf {y}, {b.to_f32(a[k], bias[0].et)} : f32")
            return b.from_f32(y, et)
        return self.generic(ins, v.shape, et, out), lay

    def attention(self, q: Item, k: Item, v: Item, et: str, scale: float,
                  causal: bool) -> Item:
        """softmax(q k^T * scale [causal]) v: the scores and the
        probabilities in f32, the result rounded once; heads split over the
        ranks stay split (each rank attends with its own heads)."""
        rank = len(k[0].shape)
        perm = list(range(rank))
        perm[-1], perm[-2] = perm[-2], perm[-1]
        sc, lay = self.contract(q, self.transpose(k, perm))
        if lay.partial:
            raise self.error("attention whose head dim is split")
        n = len(sc.shape)

        def body(a, b):
            s = b(f"arith.mulf {a[0]}, {b.const(scale, 'f32')} : f32")
            if not causal:
                return s
            i = b(f"linalg.index {n - 2} : index")
            j = b(f"linalg.index {n - 1} : index")
            above = b(f"arith.cmpi ugt, {j}, {i} : index")
            return b.select(above, b.const(-np.inf, "f32"), s, "f32")
        scores = self.generic([(sc, list(range(n)))], sc.shape, "f32", body)
        p = self.softmax((scores, lay), -1, "f32")
        return self.finish(self.contract(p, v), et)
