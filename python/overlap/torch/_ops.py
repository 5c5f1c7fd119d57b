"""One handler per aten op the torch frontend translates (``OPS``).

Each takes the `Translator` and the fx node and returns the node's `Item`
(value and layout). The ops are those ``torch.export`` leaves in the graph
of an ``nn.Module`` built from Linear, norms, activations, views and
attention (its default, undecomposed IR), plus the core-aten forms of a
Linear (addmm, mm, t, permute, bmm).
"""

from __future__ import annotations

import math
from typing import Callable, Dict, List

import numpy as np

from ._aten import Item, Translator
from ._layout import Layout


def _arg(node, i: int, name: str, default=None):
    if len(node.args) > i:
        return node.args[i]
    return node.kwargs.get(name, default)


def _erf_gelu(b, x):
    """0.5 x (1 + erf(x / sqrt 2)): torch's exact GELU."""
    half = b.const(0.5, "f32")
    s = b(f"arith.mulf {x}, {b.const(1 / math.sqrt(2.0), 'f32')} : f32")
    one = b(f"arith.addf {b.const(1.0, 'f32')}, "
            f"{b(f'math.erf {s} : f32')} : f32")
    return b(f"arith.mulf {b(f'arith.mulf {half}, {x} : f32')}, {one} : f32")


def _tanh_gelu(b, x):
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    x3 = b(f"arith.mulf {x}, {b(f'arith.mulf {x}, {x} : f32')} : f32")
    c = b.const(0.044715, "f32")
    inner = b(f"arith.addf {x}, {b(f'arith.mulf {x3}, {c} : f32')} : f32")
    inner = b(f"arith.mulf {inner}, "
              f"{b.const(math.sqrt(2.0 / math.pi), 'f32')} : f32")
    one = b(f"arith.addf {b.const(1.0, 'f32')}, "
            f"{b(f'math.tanh {inner} : f32')} : f32")
    half = b(f"arith.mulf {b.const(0.5, 'f32')}, {x} : f32")
    return b(f"arith.mulf {half}, {one} : f32")


def _sigmoid(b, x):
    one = b.const(1.0, "f32")
    e = b(f"math.exp {b(f'arith.negf {x} : f32')} : f32")
    return b(f"arith.divf {one}, {b(f'arith.addf {one}, {e} : f32')} : f32")


_UNARY: Dict[str, Callable] = {
    "aten.silu.default": lambda b, x: b(f"arith.mulf {x}, "
                                        f"{_sigmoid(b, x)} : f32"),
    "aten.sigmoid.default": _sigmoid,
    "aten.relu.default": lambda b, x: b(
        f"arith.maximumf {x}, {b.const(0.0, 'f32')} : f32"),
    "aten.tanh.default": lambda b, x: b(f"math.tanh {x} : f32"),
    "aten.exp.default": lambda b, x: b(f"math.exp {x} : f32"),
    "aten.log.default": lambda b, x: b(f"math.log {x} : f32"),
    "aten.neg.default": lambda b, x: b(f"arith.negf {x} : f32"),
    "aten.rsqrt.default": lambda b, x: b(f"math.rsqrt {x} : f32"),
    "aten.sqrt.default": lambda b, x: b(f"math.sqrt {x} : f32"),
    "aten.abs.default": lambda b, x: b(f"math.absf {x} : f32"),
    "aten.erf.default": lambda b, x: b(f"math.erf {x} : f32"),
    "aten.sin.default": lambda b, x: b(f"math.sin {x} : f32"),
    "aten.cos.default": lambda b, x: b(f"math.cos {x} : f32"),
    "aten.reciprocal.default": lambda b, x: b(
        f"arith.divf {b.const(1.0, 'f32')}, {x} : f32"),
}

_BINARY = {"add": "arith.addf", "sub": "arith.subf", "mul": "arith.mulf",
           "div": "arith.divf", "maximum": "arith.maximumf",
           "minimum": "arith.minimumf"}


def _operand(t: Translator, a):
    """A tensor operand's item, or a Python number as it is."""
    if isinstance(a, (int, float, bool)):
        return float(a)
    return t.item(a)


def unary(t: Translator, node) -> Item:
    shape, et = t.out_meta()
    fn = _UNARY[str(node.target)]
    return t.elementwise([t.item(node.args[0])], shape, et,
                         lambda b, xs: fn(b, xs[0]))


def gelu(t: Translator, node) -> Item:
    shape, et = t.out_meta()
    approx = _arg(node, 1, "approximate", "none")
    if approx not in ("none", "tanh"):
        raise t.error(f"GELU with approximate={approx!r}")
    fn = _erf_gelu if approx == "none" else _tanh_gelu
    return t.elementwise([t.item(node.args[0])], shape, et,
                         lambda b, xs: fn(b, xs[0]))


def binary(t: Translator, node) -> Item:
    shape, et = t.out_meta()
    target = str(node.target)
    name = target.split(".")[1]
    if name == "div" and _arg(node, 2, "rounding_mode") is not None:
        raise t.error("a division with a rounding_mode")
    a, c = _operand(t, node.args[0]), _operand(t, node.args[1])
    alpha = _arg(node, 2, "alpha", 1) if name in ("add", "sub") else 1
    if name == "rsub":  # other - alpha * self
        a, c, name = c, a, "sub"
    op = _BINARY[name]

    def fn(b, xs):
        y = xs[1]
        if alpha != 1:
            y = b(f"arith.mulf {y}, {b.const(float(alpha), 'f32')} : f32")
        return b(f"{op} {xs[0]}, {y} : f32")
    return t.elementwise([a, c], shape, et, fn)


def pow_scalar(t: Translator, node) -> Item:
    shape, et = t.out_meta()
    p = node.args[1]
    if not isinstance(p, (int, float)):
        raise t.error("pow with a tensor exponent")

    def fn(b, xs):
        x = xs[0]
        if float(p) == int(p) and 0 <= int(p) <= 8:
            acc = b.const(1.0, "f32")
            for _ in range(int(p)):
                acc = b(f"arith.mulf {acc}, {x} : f32")
            return acc
        return b(f"math.powf {x}, {b.const(float(p), 'f32')} : f32")
    return t.elementwise([t.item(node.args[0])], shape, et, fn)


def identity(t: Translator, node) -> Item:
    return t.item(node.args[0])


def convert(t: Translator, node) -> Item:
    shape, et = t.out_meta()
    x = t.item(node.args[0])
    if x[0].et == et:
        return x
    return t.elementwise([x], shape, et, lambda b, xs: xs[0])


def dropout(t: Translator, node) -> Item:
    p, train = _arg(node, 1, "p", 0.5), _arg(node, 2, "train", True)
    if train and p:
        raise t.error(f"dropout with p={p} in training mode (random): call "
                      f"module.eval() first")
    return t.item(node.args[0])


def view(t: Translator, node) -> Item:
    shape, _ = t.out_meta()
    return t.reshape(t.item(node.args[0]), shape)


def expand(t: Translator, node) -> Item:
    shape, et = t.out_meta()
    x = t.item(node.args[0])
    if tuple(x[1].shape) == tuple(shape):
        return x
    return t.elementwise([x], shape, et, lambda b, xs: xs[0])


def transpose(t: Translator, node) -> Item:
    x = t.item(node.args[0])
    rank = len(x[1].shape)
    if rank < 2:
        return x
    perm = list(range(rank))
    if str(node.target) == "aten.t.default":
        d0, d1 = 0, 1
    else:
        d0, d1 = int(node.args[1]) % rank, int(node.args[2]) % rank
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return t.transpose(x, perm)


def permute(t: Translator, node) -> Item:
    return t.transpose(t.item(node.args[0]), node.args[1])


def linear(t: Translator, node) -> Item:
    _, et = t.out_meta()
    x, w = t.item(node.args[0]), t.item(node.args[1])
    b = _arg(node, 2, "bias")
    wt = t.transpose(w, [1, 0])
    return t.linear(x, wt, t.item(b) if b is not None else None, et)


def addmm(t: Translator, node) -> Item:
    _, et = t.out_meta()
    beta, alpha = _arg(node, 3, "beta", 1), _arg(node, 4, "alpha", 1)
    if alpha != 1:
        raise t.error(f"addmm with alpha={alpha}")
    return t.linear(t.item(node.args[1]), t.item(node.args[2]),
                    t.item(node.args[0]), et, float(beta))


def matmul(t: Translator, node) -> Item:
    _, et = t.out_meta()
    a, b = t.item(node.args[0]), t.item(node.args[1])
    if len(b[1].shape) == 2 and len(a[1].shape) > 2:
        return t.linear(a, b, None, et)
    return t.finish(t.contract(a, b), et)


def _dims_arg(node, rank: int, i: int = 1) -> List[int]:
    dims = _arg(node, i, "dim")
    if dims is None or (isinstance(dims, (list, tuple)) and not dims):
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    return sorted(int(d) % rank for d in dims)


def reduction(t: Translator, node) -> Item:
    shape, et = t.out_meta()
    x = t.item(node.args[0])
    rank = len(x[1].shape)
    target = str(node.target)
    dims = _dims_arg(node, rank) if not target.endswith(".default") or \
        "amax" in target else list(range(rank))
    kind = "max" if "amax" in target else "sum"
    v, lay = t.reduce(x, dims, kind)
    if "mean" in target:
        count = float(np.prod([x[1].shape[d] for d in dims]))
        v, lay = t.elementwise([(v, lay)], lay.shape, "f32",
                               lambda b, xs: b(f"arith.divf {xs[0]}, "
                                               f"{b.const(count, 'f32')} : f32"))
    out = t.finish((v, lay), et)
    return t.reshape(out, shape)


def softmax(t: Translator, node) -> Item:
    shape, et = t.out_meta()
    x = t.item(node.args[0])
    return t.softmax(x, int(node.args[1]), et)


def layer_norm(t: Translator, node) -> Item:
    shape, et = t.out_meta()
    x = t.item(node.args[0])
    k = len(node.args[1])
    w, bias = _arg(node, 2, "weight"), _arg(node, 3, "bias")
    eps = float(_arg(node, 4, "eps", 1e-5))
    return t.norm(x, k, et, t.item(w) if w is not None else None,
                  t.item(bias) if bias is not None else None, eps, rms=False)


def native_layer_norm(t: Translator, node):
    """(y, mean, rstd): LayerNorm with its statistics, each of the shape
    of x with the normalized dims kept as 1 (core aten's form, in a
    make_fx trace)."""
    val = node.meta["val"]
    x = t.item(node.args[0])
    k = len(node.args[1])
    w, bias = _arg(node, 2, "weight"), _arg(node, 3, "bias")
    eps = float(_arg(node, 4, "eps", 1e-5))
    et = t.out_et(val[0])
    y = t.norm(x, k, et, t.item(w) if w is not None else None,
               t.item(bias) if bias is not None else None, eps, rms=False)
    mean, rstd = t.moments(x, k, eps)
    stats = []
    for v, meta in ((mean, val[1]), (rstd, val[2])):
        if t.out_et(meta) != "f32":
            v = t.elementwise([v], v[1].shape, t.out_et(meta),
                              lambda b, xs: xs[0])
        stats.append(t.reshape(v, tuple(int(d) for d in meta.shape)))
    return [y] + stats


def getitem(t: Translator, node) -> Item:
    items = t.env.get(node.args[0])
    if not isinstance(items, list):
        raise t.error("an element of a value that is not a tuple")
    return items[int(node.args[1])]


def rms_norm(t: Translator, node) -> Item:
    shape, et = t.out_meta()
    x = t.item(node.args[0])
    k = len(node.args[1])
    w = _arg(node, 2, "weight")
    eps = _arg(node, 3, "eps")
    # torch's default: the epsilon of the type it computes in (f32).
    eps = float(np.finfo(np.float32).eps) if eps is None else float(eps)
    return t.norm(x, k, et, t.item(w) if w is not None else None, None,
                  eps, rms=True)


def sdpa(t: Translator, node) -> Item:
    _, et = t.out_meta()
    q, k, v = (t.item(a) for a in node.args[:3])
    mask = _arg(node, 3, "attn_mask")
    p = _arg(node, 4, "dropout_p", 0.0)
    causal = bool(_arg(node, 5, "is_causal", False))
    scale = _arg(node, 6, "scale")
    gqa = _arg(node, 7, "enable_gqa", False)
    if mask is not None:
        raise t.error("scaled_dot_product_attention with an attn_mask (the "
                      "frontend takes is_causal=True or no mask)")
    if p:
        raise t.error(f"scaled_dot_product_attention with dropout_p={p}")
    if gqa:
        raise t.error("scaled_dot_product_attention with enable_gqa=True")
    e = q[1].shape[-1]
    scale = 1.0 / math.sqrt(e) if scale is None else float(scale)
    return t.attention(q, k, v, et, scale, causal)


def filled(t: Translator, node) -> Item:
    """full_like(x, v), full(shape, v), zeros_like, ones_like: the value as
    a 0-d constant, which broadcasts against a value split any way (a
    tensor of the global shape would not: 1 - sigmoid(h) in SiLU's
    backward, with h split)."""
    _, et = t.out_meta()
    target = str(node.target)
    if "zeros" in target:
        value = 0.0
    elif "ones" in target:
        value = 1.0
    else:
        value = node.args[1]
    if not isinstance(value, (int, float)):
        raise t.error(f"a fill with {value!r}")
    return t.e.constant(np.asarray(value), et), Layout.replicated(())


def empty(t: Translator, node) -> Item:
    """A tensor whose values nothing reads (make_fx's input of full_like):
    a 0-d zero."""
    for user in node.users:
        if str(user.target) != "aten.full_like.default":
            raise t.error("an uninitialized tensor read by "
                          f"{user.target}")
    _, et = t.out_meta()
    return t.e.constant(np.asarray(0.0), et), Layout.replicated(())


_CMP = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt",
        "ge": "oge"}


def compare(t: Translator, node) -> Item:
    """x < y (and the others) of floats: an i1 mask."""
    shape, et = t.out_meta()
    pred = _CMP[str(node.target).split(".")[1]]
    a, c = _operand(t, node.args[0]), _operand(t, node.args[1])
    for x in (a, c):
        if isinstance(x, tuple) and x[0].et == "i1":
            raise t.error("a comparison of booleans")
    return t.elementwise(
        [a, c], shape, et,
        lambda b, xs: b(f"arith.cmpf {pred}, {xs[0]}, {xs[1]} : f32"),
        bools=True)


def where(t: Translator, node) -> Item:
    """where(cond, a, b): a where cond, else b (ReLU's backward)."""
    shape, et = t.out_meta()
    cond = t.item(node.args[0])
    if cond[0].et != "i1":
        raise t.error("where with a condition that is not boolean")
    a, c = _operand(t, node.args[1]), _operand(t, node.args[2])
    return t.elementwise(
        [cond, a, c], shape, et,
        lambda b, xs: b.select(xs[0], xs[1], xs[2], "f32"), bools=True)


def scalar_tensor(t: Translator, node) -> Item:
    _, et = t.out_meta()
    return t.e.constant(np.asarray(float(node.args[0])), et), \
        Layout.replicated(())


def _table() -> Dict[str, Callable]:
    ops: Dict[str, Callable] = {name: unary for name in _UNARY}
    for name in ("add.Tensor", "sub.Tensor", "mul.Tensor", "div.Tensor",
                 "add.Scalar", "sub.Scalar", "mul.Scalar", "div.Scalar",
                 "rsub.Scalar", "rsub.Tensor", "maximum.default",
                 "minimum.default"):
        ops["aten." + name] = binary
    for name in ("contiguous.default", "clone.default", "alias.default",
                 "detach.default", "lift_fresh_copy.default"):
        ops["aten." + name] = identity
    for name in ("_to_copy.default", "to.dtype", "to.dtype_layout",
                 "type_as.default"):
        ops["aten." + name] = convert
    for name in ("view.default", "reshape.default", "_unsafe_view.default",
                 "flatten.using_ints", "unsqueeze.default", "squeeze.dim",
                 "view_copy.default",
                 "squeeze.dims", "squeeze.default", "unflatten.int"):
        ops["aten." + name] = view
    for name in ("sum.dim_IntList", "sum.default", "mean.dim",
                 "mean.default", "amax.default"):
        ops["aten." + name] = reduction
    for name in ("full_like.default", "full.default", "zeros_like.default",
                 "ones_like.default"):
        ops["aten." + name] = filled
    for name in _CMP:
        ops[f"aten.{name}.Scalar"] = ops[f"aten.{name}.Tensor"] = compare
    ops.update({
        "aten.where.self": where,
        "aten.scalar_tensor.default": scalar_tensor,
        "aten.empty_permuted.default": empty,
        "aten.empty_like.default": empty,
        "aten.gelu.default": gelu,
        "aten.pow.Tensor_Scalar": pow_scalar,
        "aten.dropout.default": dropout,
        "aten.expand.default": expand,
        "aten.t.default": transpose,
        "aten.transpose.int": transpose,
        "aten.permute.default": permute,
        "aten.linear.default": linear,
        "aten.addmm.default": addmm,
        "aten.mm.default": matmul,
        "aten.bmm.default": matmul,
        "aten.matmul.default": matmul,
        "aten.softmax.int": softmax,
        "aten._softmax.default": softmax,
        "aten.layer_norm.default": layer_norm,
        "aten.native_layer_norm.default": native_layer_norm,
        "<built-in function getitem>": getitem,
        "aten.rms_norm.default": rms_norm,
        "aten.scaled_dot_product_attention.default": sdpa,
    })
    return ops


#: aten op (as str(node.target)) -> handler.
OPS = _table()
