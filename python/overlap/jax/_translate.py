"""jaxpr equations to MLIR ops, one handler per primitive (_emit.Emitter)."""

from __future__ import annotations

from typing import Dict, List, Sequence

import numpy as np

from . import _control, _dynamic, _gather, _scans
from ._emit import (Body, CALL_PRIMITIVES, Emitter, UnsupportedError, Value,
                    _CALL_PARAMS,
                    _FLOATS, _is_literal, _location, _map, _source, elem_type,
                    tensor_type)

def _logistic(b: Body, x: str) -> str:
    """1 / (1 + exp(-x)), in f32."""
    one = b.const(1.0, "f32")
    e = b(f"math.exp {b(f'arith.negf {x} : f32')} : f32")
    return b(f"arith.divf {one}, {b(f'arith.addf {one}, {e} : f32')} : f32")


# Float primitives: (f32 op on x[, y]) built in a Body, computed in f32.
_UNARY_F = {
    "neg": lambda b, x: b(f"arith.negf {x} : f32"),
    "exp": lambda b, x: b(f"math.exp {x} : f32"),
    "exp2": lambda b, x: b(f"math.exp2 {x} : f32"),
    "log": lambda b, x: b(f"math.log {x} : f32"),
    "log1p": lambda b, x: b(f"math.log1p {x} : f32"),
    "expm1": lambda b, x: b(f"math.expm1 {x} : f32"),
    "tanh": lambda b, x: b(f"math.tanh {x} : f32"),
    "sqrt": lambda b, x: b(f"math.sqrt {x} : f32"),
    "rsqrt": lambda b, x: b(f"math.rsqrt {x} : f32"),
    "abs": lambda b, x: b(f"math.absf {x} : f32"),
    "erf": lambda b, x: b(f"math.erf {x} : f32"),
    "sin": lambda b, x: b(f"math.sin {x} : f32"),
    "cos": lambda b, x: b(f"math.cos {x} : f32"),
    "square": lambda b, x: b(f"arith.mulf {x}, {x} : f32"),
    "logistic": lambda b, x: _logistic(b, x),
}
_BINARY_F = {
    # add_any: the sum of cotangents jax.grad writes.
    "add": "arith.addf", "add_any": "arith.addf", "sub": "arith.subf", "mul": "arith.mulf",
    "div": "arith.divf", "max": "arith.maximumf", "min": "arith.minimumf",
    "pow": "math.powf", "rem": "arith.remf",
}
_BINARY_I = {
    "add": "arith.addi", "add_any": "arith.addi", "sub": "arith.subi", "mul": "arith.muli",
    "div": "arith.divsi", "rem": "arith.remsi", "max": "arith.maxsi",
    "min": "arith.minsi", "and": "arith.andi", "or": "arith.ori",
    "xor": "arith.xori",
}
_CMP_F = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt",
          "ge": "oge"}
_CMP_I = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt",
          "ge": "sge"}
# Loops and branches (_control): scf ops whose bodies are translated once.
_CONTROL = ("scan", "while", "cond")
# Primitives that change nothing in a per-device program.
_IDENTITY = ("pvary", "pbroadcast", "stop_gradient", "copy", "copy_p",
             "optimization_barrier", "reduce_precision_identity")

#: Every primitive the importer translates (docs/jax.md lists them).
SUPPORTED = sorted(set(_UNARY_F) | set(_BINARY_F) | set(_BINARY_I) |
                   set(_CMP_F) | set(_IDENTITY) | {
                       "integer_pow", "not", "select_n", "convert_element_type",
                       "dot_general", "broadcast_in_dim", "reshape", "squeeze",
                       "expand_dims", "transpose", "slice", "split",
                       "concatenate", "reduce_sum", "reduce_max",
                       "reduce_min", "iota", "axis_index", "psum",
                       "psum_invariant", "pmax", "pmin", "all_gather",
                       "reduce_scatter", "all_to_all", "clamp", "ppermute",
                       "dynamic_slice", "dynamic_update_slice", "cumsum",
                       "cumprod", "cummax", "cummin", "argmax", "argmin",
                       "gather", "scatter-add", "pad", "top_k", "is_finite",
                       "sign", "reduce_and", "reduce_or"} |
                   set(CALL_PRIMITIVES) | set(_CONTROL))


def unknown_primitives(jaxpr) -> List[str]:
    """Every primitive of `jaxpr` (and of the sub-jaxprs of the calls,
    loops and branches it translates) that the importer does not, each once
    with the first source line that uses it: a program is refused with all
    of them at once, not one per attempt."""
    found: Dict[str, str] = {}

    def walk(j, outer):
        j = getattr(j, "jaxpr", j)
        for eqn in j.eqns:
            name = eqn.primitive.name
            # Inside a library's jit (jnp.cumsum) the user's line is the
            # call's.
            where = _source(eqn) or outer
            if name not in SUPPORTED:
                found.setdefault(name, where)
                continue
            for key in _CALL_PARAMS + ("body_jaxpr", "cond_jaxpr"):
                if key in eqn.params:
                    walk(eqn.params[key], where)
            for branch in eqn.params.get("branches", ()):
                walk(branch, where)
    walk(jaxpr, "")
    return [f"'{n}'" + (f" (from {w})" if w else "")
            for n, w in found.items()]


class Translator:
    def __init__(self, emitter: Emitter):
        self.e = emitter
        self.env: Dict[object, Value] = {}

    # -- values ------------------------------------------------------------

    def read(self, v) -> Value:
        if _is_literal(v):
            aval = v.aval
            return self.e.constant(np.asarray(v.val), elem_type(aval.dtype))
        return self.env[v]

    def write(self, var, value: Value) -> None:
        if type(var).__name__ == "DropVar":
            return
        self.env[var] = value

    def out_of(self, eqn, i=0):
        aval = eqn.outvars[i].aval
        return tuple(int(d) for d in aval.shape), elem_type(aval.dtype)

    # -- the walk ----------------------------------------------------------

    def run(self, jaxpr, consts: Sequence, args: Sequence[Value],
            params_vars=None, params=None) -> List[Value]:
        """Translates `jaxpr` with its constvars bound to `consts` and its
        invars to `args` (or, with `params_vars`, only those vars to
        `params`: the others are bound already)."""
        for var, c in zip(jaxpr.constvars, consts):
            self.write(var, self.e.constant(np.asarray(c),
                                            elem_type(var.aval.dtype)))
        if params_vars is not None:
            args, invars = params, params_vars
        else:
            invars = jaxpr.invars
        for var, a in zip(invars, args):
            self.write(var, a)
        for eqn in jaxpr.eqns:
            self.equation(eqn)
        return [self.read(v) for v in jaxpr.outvars]

    def equation(self, eqn) -> None:
        name = eqn.primitive.name
        outer_loc, outer_where = self.e.loc, self.e.where
        outer_prim = self.e.prim
        self.e.loc = _location(eqn) or outer_loc
        self.e.where = _source(eqn) or outer_where
        self.e.prim = f"the primitive '{name}'"
        try:
            carried = [p for p in _CALL_PARAMS if p in eqn.params]
            if carried and name not in CALL_PRIMITIVES + _CONTROL:
                raise self.e.error(
                    f"the importer does not translate the primitive "
                    f"'{name}': it carries a sub-jaxpr ('{carried[0]}') "
                    f"that is not a plain call (a loop or a branch); only "
                    f"{', '.join(CALL_PRIMITIVES)} are inlined")
            for p in _CALL_PARAMS:
                if p in eqn.params and name not in _CONTROL:
                    inner = eqn.params[p]
                    jaxpr = getattr(inner, "jaxpr", inner)
                    consts = getattr(inner, "consts", [])
                    outs = self.run(jaxpr, consts,
                                    [self.read(v) for v in eqn.invars])
                    for var, val in zip(eqn.outvars, outs):
                        self.write(var, val)
                    return
            handler = getattr(self, "p_" + name.replace("-", "_"), None)
            if name in _IDENTITY:
                handler = self.p_identity
            elif name in _UNARY_F:
                handler = self.p_unary
            elif name in _BINARY_F or name in _BINARY_I or name in _CMP_F:
                handler = handler or self.p_binary
            if handler is None:
                raise self.e.error(
                    f"the importer does not translate the primitive "
                    f"'{name}' (it translates: {', '.join(SUPPORTED)})")
            handler(eqn)
        finally:
            self.e.loc, self.e.where = outer_loc, outer_where
            self.e.prim = outer_prim

    # -- loops and branches ------------------------------------------------

    p_scan = _control.scan
    p_while = _control.while_
    p_cond = _control.cond

    # -- elementwise -------------------------------------------------------

    def p_identity(self, eqn):
        for var, v in zip(eqn.outvars, eqn.invars):
            self.write(var, self.read(v))

    def p_unary(self, eqn):
        x = self.read(eqn.invars[0])
        shape, et = self.out_of(eqn)
        if et not in _FLOATS:
            if eqn.primitive.name == "neg":
                return self._int_neg(eqn, x)
            raise self.e.error(f"'{eqn.primitive.name}' of {et}")
        fn = _UNARY_F[eqn.primitive.name]
        self.write(eqn.outvars[0], self.e.elementwise(
            [x], shape, et,
            lambda a, b: b.from_f32(fn(b, b.to_f32(a[0], x.et)), et)))

    def _int_neg(self, eqn, x):
        shape, et = self.out_of(eqn)
        self.write(eqn.outvars[0], self.e.elementwise(
            [x], shape, et,
            lambda a, b: b(f"arith.subi {b.const(0, et)}, {a[0]} : {et}")))

    def p_binary(self, eqn):
        name = eqn.primitive.name
        x, y = (self.read(v) for v in eqn.invars)
        shape, et = self.out_of(eqn)
        src = x.et
        if name in _CMP_F:
            if src in _FLOATS:
                fn = lambda a, b: b(
                    f"arith.cmpf {_CMP_F[name]}, {b.to_f32(a[0], src)}, "
                    f"{b.to_f32(a[1], src)} : f32")
            else:
                fn = lambda a, b: b(f"arith.cmpi {_CMP_I[name]}, {a[0]}, "
                                    f"{a[1]} : {src}")
        elif src in _FLOATS:
            if name not in _BINARY_F:
                raise self.e.error(f"'{name}' of {src}")
            op = _BINARY_F[name]
            # lax.pow(x, n) with an integer n (optax's b1 ** count): JAX
            # converts n to the result's type, then takes the float power.
            ysrc = y.et
            if ysrc not in _FLOATS and name != "pow":
                raise self.e.error(f"'{name}' of {src} and {ysrc}")
            fn = lambda a, b: b.from_f32(b(
                f"{op} {b.to_f32(a[0], src)}, "
                f"{b.to_f32(b.convert(a[1], ysrc, et), et)} : f32"), et)
        else:
            if name not in _BINARY_I:
                raise self.e.error(f"'{name}' of {src}")
            op = _BINARY_I[name]
            if name in ("div", "rem") and src != "i1":
                fn = lambda a, b: b.int_div_rem(a[0], a[1], src,
                                                rem=name == "rem")
            else:
                fn = lambda a, b: b(f"{op} {a[0]}, {a[1]} : {src}")
        self.write(eqn.outvars[0], self.e.elementwise([x, y], shape, et, fn))

    def p_not(self, eqn):
        x = self.read(eqn.invars[0])
        shape, et = self.out_of(eqn)
        ones = -1 if et != "i1" else True
        self.write(eqn.outvars[0], self.e.elementwise(
            [x], shape, et,
            lambda a, b: b(f"arith.xori {a[0]}, {b.const(ones, et)} : {et}")))

    def p_is_finite(self, eqn):
        """Neither inf nor NaN: |x| compared ordered-and-unequal to inf."""
        x = self.read(eqn.invars[0])
        shape, et = self.out_of(eqn)
        if x.et not in _FLOATS:
            raise self.e.error(f"'is_finite' of {x.et}")

        def fn(a, b):
            inf = b.const(np.inf, "f32")
            v = b(f"math.absf {b.to_f32(a[0], x.et)} : f32")
            return b(f"arith.cmpf one, {v}, {inf} : f32")
        self.write(eqn.outvars[0], self.e.elementwise([x], shape, et, fn))

    def p_sign(self, eqn):
        """-1, 0 or 1; for floats -0.0, +0.0 and NaN stay themselves (XLA's
        sign)."""
        x = self.read(eqn.invars[0])
        shape, et = self.out_of(eqn)
        if et == "i1":
            raise self.e.error("'sign' of booleans")

        def fn(a, b):
            if et in _FLOATS:
                v = b.to_f32(a[0], et)
                z = b.const(0.0, "f32")
                pos = b(f"arith.cmpf ogt, {v}, {z} : f32")
                neg = b(f"arith.cmpf olt, {v}, {z} : f32")
                zero = a[0]  # NaN, -0.0 and +0.0 stay
            else:
                zero = b.const(0, et)
                pos = b(f"arith.cmpi sgt, {a[0]}, {zero} : {et}")
                neg = b(f"arith.cmpi slt, {a[0]}, {zero} : {et}")
            rest = b.select(neg, b.const(-1, et), zero, et)
            return b.select(pos, b.const(1, et), rest, et)
        self.write(eqn.outvars[0], self.e.elementwise([x], shape, et, fn))

    def p_integer_pow(self, eqn):
        x = self.read(eqn.invars[0])
        shape, et = self.out_of(eqn)
        y = int(eqn.params["y"])
        if et not in _FLOATS:
            raise self.e.error(f"'integer_pow' of {et}")

        def body(a, b):
            v = b.to_f32(a[0], x.et)
            acc = b.const(1.0, "f32")
            base, n = v, abs(y)
            while n:  # square and multiply: XLA's expansion
                if n & 1:
                    acc = b(f"arith.mulf {acc}, {base} : f32")
                n >>= 1
                if n:
                    base = b(f"arith.mulf {base}, {base} : f32")
            if y < 0:
                acc = b(f"arith.divf {b.const(1.0, 'f32')}, {acc} : f32")
            return b.from_f32(acc, et)
        self.write(eqn.outvars[0], self.e.elementwise([x], shape, et, body))

    def p_select_n(self, eqn):
        pred, *cases = (self.read(v) for v in eqn.invars)
        shape, et = self.out_of(eqn)
        if len(cases) != 2 or pred.et != "i1":
            raise self.e.error("'select_n' with an integer selector or more "
                               "than two cases")
        self.write(eqn.outvars[0], self.e.elementwise(
            [pred] + cases, shape, et,
            lambda a, b: b(f"arith.select {a[0]}, {a[2]}, {a[1]} : {et}")))

    def p_clamp(self, eqn):
        """XLA's clamp(lo, x, hi): min(max(x, lo), hi), NaN propagating
        for floats (lax.switch clamps its index with it)."""
        lo, x, hi = (self.read(v) for v in eqn.invars)
        shape, et = self.out_of(eqn)
        if et in _FLOATS:
            def fn(a, b):
                v = [b.to_f32(n, et) for n in a[:3]]
                m = b(f"arith.maximumf {v[1]}, {v[0]} : f32")
                return b.from_f32(b(f"arith.minimumf {m}, {v[2]} : f32"), et)
        else:
            def fn(a, b):
                m = b(f"arith.maxsi {a[1]}, {a[0]} : {et}")
                return b(f"arith.minsi {m}, {a[2]} : {et}")
        self.write(eqn.outvars[0],
                   self.e.elementwise([lo, x, hi], shape, et, fn))

    def p_convert_element_type(self, eqn):
        x = self.read(eqn.invars[0])
        shape, et = self.out_of(eqn)
        if et == x.et:
            self.write(eqn.outvars[0], x)
            return
        self.write(eqn.outvars[0], self.e.elementwise(
            [x], shape, et, lambda a, b: b.convert(a[0], x.et, et)))

    # -- contraction -------------------------------------------------------

    def p_dot_general(self, eqn):
        lhs, rhs = (self.read(v) for v in eqn.invars)
        (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
        lc, rc, lb, rb = (list(map(int, d)) for d in (lc, rc, lb, rb))
        shape, et = self.out_of(eqn)
        for v in (lhs, rhs):
            if v.et not in _FLOATS:
                raise self.e.error(f"'dot_general' of {v.et}")
        # Accumulate in f32 unless both operands and the result are f32
        # already; round once at the end (XLA on CPU).
        acc_et = "f32"
        lf = [d for d in range(len(lhs.shape)) if d not in lc and d not in lb]
        rf = [d for d in range(len(rhs.shape)) if d not in rc and d not in rb]
        nb, nl, nr, nc = len(lb), len(lf), len(rf), len(lc)
        loops = nb + nl + nr + nc

        def operand_map(rank, batch, contract, free, free_base):
            res = []
            for d in range(rank):
                if d in batch:
                    res.append(f"d{batch.index(d)}")
                elif d in contract:
                    res.append(f"d{nb + nl + nr + contract.index(d)}")
                else:
                    res.append(f"d{free_base + free.index(d)}")
            return _map(loops, res)

        if (lb, rb, lc, rc) == ([0], [0], [2], [1]) and len(lhs.shape) == 3 \
                and len(rhs.shape) == 3:
            # [B, M, K] x [B, K, N]: the named op the expert forms raise.
            init = self.e.fill(0.0, shape, acc_et)
            name = self.e.fresh("bmm")
            t = tensor_type(shape, acc_et)
            self.e.op(f"{name} = linalg.batch_matmul ins({lhs.name}, "
                      f"{rhs.name} : {lhs.type}, {rhs.type}) outs({init} : "
                      f"{t}) -> {t}")
            out = Value(name, shape, acc_et)
            if et != acc_et:
                out = self.e.elementwise(
                    [out], shape, et, lambda a, b: b.convert(a[0], acc_et, et))
            self.write(eqn.outvars[0], out)
            return
        maps = [operand_map(len(lhs.shape), lb, lc, lf, nb),
                operand_map(len(rhs.shape), rb, rc, rf, nb + nl)]
        out_map = _map(loops, [f"d{i}" for i in range(nb + nl + nr)])
        iters = ["parallel"] * (nb + nl + nr) + ["reduction"] * nc
        init = self.e.fill(0.0, shape, acc_et)

        def body(a, b):
            x = a[0] if lhs.et == acc_et else b(
                f"arith.extf {a[0]} : {lhs.et} to {acc_et}")
            y = a[1] if rhs.et == acc_et else b(
                f"arith.extf {a[1]} : {rhs.et} to {acc_et}")
            m = b(f"arith.mulf {x}, {y} : {acc_et}")
            return b(f"arith.addf {a[2]}, {m} : {acc_et}")
        out = self.e.generic([lhs, rhs], maps, shape, acc_et, out_map, iters,
                             body, init=init)
        if et != acc_et:
            out = self.e.elementwise([out], shape, et,
                                     lambda a, b: b.convert(a[0], acc_et, et))
        self.write(eqn.outvars[0], out)

    # -- shapes ------------------------------------------------------------

    def p_broadcast_in_dim(self, eqn):
        x = self.read(eqn.invars[0])
        shape, et = self.out_of(eqn)
        dims = [int(d) for d in eqn.params["broadcast_dimensions"]]
        if len(eqn.invars) > 1:
            raise self.e.error("'broadcast_in_dim' with dynamic shapes")
        # Unit dims that are broadcast: dropped first (a collapse_shape), so
        # that the input map is a projection.
        keep = [i for i, d in enumerate(dims)
                if not (x.shape[i] == 1 and shape[d] != 1)]
        if len(keep) != len(dims):
            x = self.e.reshape(x, [x.shape[i] for i in keep])
        rank = len(shape)
        out = self.e.generic(
            [x], [_map(rank, [f"d{dims[i]}" for i in keep])], shape, et,
            _map(rank, [f"d{i}" for i in range(rank)]), ["parallel"] * rank,
            lambda a, b: a[0])
        self.write(eqn.outvars[0], out)

    def p_reshape(self, eqn):
        if eqn.params.get("dimensions") not in (None, ()):
            raise self.e.error("'reshape' with dimensions (a transposing "
                               "reshape)")
        shape, _ = self.out_of(eqn)
        self.write(eqn.outvars[0],
                   self.e.reshape(self.read(eqn.invars[0]), shape))

    def p_squeeze(self, eqn):
        shape, _ = self.out_of(eqn)
        self.write(eqn.outvars[0],
                   self.e.reshape(self.read(eqn.invars[0]), shape))

    p_expand_dims = p_squeeze

    def p_transpose(self, eqn):
        self.write(eqn.outvars[0], self.e.transpose(
            self.read(eqn.invars[0]), eqn.params["permutation"]))

    def p_slice(self, eqn):
        x = self.read(eqn.invars[0])
        shape, _ = self.out_of(eqn)
        strides = eqn.params.get("strides") or [1] * len(shape)
        self.write(eqn.outvars[0], self.e.extract(
            x, eqn.params["start_indices"], shape, strides))

    def p_pad(self, eqn):
        """lax.pad (the transpose of a slice under jax.grad): a tensor of
        the padding value in the result's shape, into which the operand's
        elements that land inside it (negative low or high padding cuts
        some off) are inserted with a stride of interior + 1. The result
        is a fresh tensor, never a view."""
        x, pv = (self.read(v) for v in eqn.invars)
        shape, et = self.out_of(eqn)
        if _is_literal(eqn.invars[1]):
            out = Value(self.e.fill(np.asarray(eqn.invars[1].val), shape,
                                    et), tuple(shape), et)
        else:
            out = self.e.elementwise([pv], shape, et, lambda a, b: a[0])
        first, count, at, step = [], [], [], []
        for n, size, dim in zip(x.shape, shape, eqn.params["padding_config"]):
            lo, _, interior = (int(c) for c in dim)
            s = interior + 1
            # Element k lands at lo + k * s: those in [0, size) stay.
            k0 = max(0, -(lo // s))
            k1 = min(n - 1, (size - 1 - lo) // s) if size else -1
            first.append(k0)
            count.append(max(k1 - k0 + 1, 0))
            at.append(lo + k0 * s)
            step.append(s)
        if all(count):
            part = x if count == list(x.shape) else \
                self.e.extract(x, first, count)
            name = self.e.fresh("pad")
            j = lambda xs: ", ".join(str(int(v)) for v in xs)
            self.e.op(f"{name} = tensor.insert_slice {part.name} into "
                      f"{out.name}[{j(at)}] [{j(count)}] [{j(step)}] : "
                      f"{part.type} into {out.type}")
            out = Value(name, out.shape, et)
        self.write(eqn.outvars[0], out)

    def p_split(self, eqn):
        x = self.read(eqn.invars[0])
        axis = int(eqn.params["axis"])
        start = 0
        for var, size in zip(eqn.outvars, eqn.params["sizes"]):
            starts = [0] * len(x.shape)
            starts[axis] = start
            sizes = list(x.shape)
            sizes[axis] = int(size)
            self.write(var, self.e.extract(x, starts, sizes))
            start += int(size)

    def p_concatenate(self, eqn):
        parts = [self.read(v) for v in eqn.invars]
        shape, et = self.out_of(eqn)
        axis = int(eqn.params["dimension"])
        acc = self.e.empty(shape, et)
        offset = 0
        for p in parts:
            offsets = [0] * len(shape)
            offsets[axis] = offset
            acc = self.e.insert(p, acc, shape, et, offsets)
            offset += p.shape[axis]
        self.write(eqn.outvars[0], Value(acc, shape, et))

    def _reduce(self, eqn, init_value, combine_f, combine_i):
        x = self.read(eqn.invars[0])
        shape, et = self.out_of(eqn)
        axes = [int(a) for a in eqn.params["axes"]]
        rank = len(x.shape)
        kept = [d for d in range(rank) if d not in axes]
        # Ordered so that the reduced loops come last.
        order = kept + axes
        in_map = _map(rank, [f"d{order.index(d)}" for d in range(rank)])
        out_map = _map(rank, [f"d{i}" for i in range(len(kept))])
        iters = ["parallel"] * len(kept) + ["reduction"] * len(axes)
        acc_et = "f32" if et in _FLOATS else et
        init = self.e.fill(init_value(acc_et), shape, acc_et)
        if et in _FLOATS:
            fn = lambda a, b: b(f"{combine_f} {a[1]}, "
                                f"{b.to_f32(a[0], x.et)} : f32")
        else:
            fn = lambda a, b: b(f"{combine_i} {a[1]}, {a[0]} : {et}")
        out = self.e.generic([x], [in_map], shape, acc_et, out_map, iters, fn,
                             init=init)
        if acc_et != et:
            out = self.e.elementwise([out], shape, et,
                                     lambda a, b: b.from_f32(a[0], et))
        self.write(eqn.outvars[0], out)

    def p_reduce_sum(self, eqn):
        self._reduce(eqn, lambda et: 0, "arith.addf", "arith.addi")

    # The identities of max and min are the type's own extremes (int8's
    # -128, int64's -2**63); a bool's max is `or` from false, its min `and`
    # from true (maxsi on i1 would take true, -1, for the smaller).
    def p_reduce_max(self, eqn):
        if self.out_of(eqn)[1] == "i1":
            return self._reduce(eqn, lambda et: 0, None, "arith.ori")
        lowest = lambda et: (-np.inf if et in _FLOATS
                             else -2 ** (int(et[1:]) - 1))
        self._reduce(eqn, lowest, "arith.maximumf", "arith.maxsi")

    def p_reduce_min(self, eqn):
        if self.out_of(eqn)[1] == "i1":
            return self._reduce(eqn, lambda et: 1, None, "arith.andi")
        highest = lambda et: (np.inf if et in _FLOATS
                              else 2 ** (int(et[1:]) - 1) - 1)
        self._reduce(eqn, highest, "arith.minimumf", "arith.minsi")

    # jnp.all and jnp.any (optax's apply_if_finite: all(isfinite(g))).
    def p_reduce_and(self, eqn):
        self._reduce(eqn, lambda et: -1 if et != "i1" else 1, None,
                     "arith.andi")

    def p_reduce_or(self, eqn):
        self._reduce(eqn, lambda et: 0, None, "arith.ori")

    def p_iota(self, eqn):
        shape, et = self.out_of(eqn)
        dim = int(eqn.params["dimension"])
        rank = len(shape)

        def body(a, b):
            i = b(f"linalg.index {dim} : index")
            if et in _FLOATS:
                n = b(f"arith.index_cast {i} : index to i64")
                return b.convert(b(f"arith.sitofp {n} : i64 to f32"), "f32",
                                 et)
            return b(f"arith.index_cast {i} : index to {et}")
        self.write(eqn.outvars[0], self.e.generic(
            [], [], shape, et, _map(rank, [f"d{i}" for i in range(rank)]),
            ["parallel"] * rank, body))

    # -- collectives -------------------------------------------------------

    def grid_axes(self, eqn, key="axes"):
        names = eqn.params.get(key, eqn.params.get("axis_name"))
        if isinstance(names, str):
            names = (names,)
        if eqn.params.get("axis_index_groups") is not None:
            raise self.e.error(f"'{eqn.primitive.name}' with "
                               "axis_index_groups")
        idx = []
        for n in names:
            if n not in self.e.axes:
                raise self.e.error(f"'{eqn.primitive.name}' over axis {n!r}, "
                                   f"not a mesh axis ({self.e.axes})")
            idx.append(self.e.axes.index(n))
        # In the order the program names them: the rank within the group is
        # row-major over these axes, so sorting them would permute blocks.
        return "[" + ", ".join(map(str, idx)) + "]", \
            int(np.prod([self.e.sizes[i] for i in idx]))

    def _all_reduce(self, eqn, kind):
        outs = []
        for var, v in zip(eqn.outvars, eqn.invars):
            x = self.read(v)
            axes, _ = self.grid_axes(eqn)
            name = self.e.fresh("ar")
            red = "" if kind == "sum" else f" reduction = {kind}"
            self.e.op(f"{name} = shard.all_reduce {x.name} on @{self.e.grid} "
                      f"grid_axes = {axes}{red} : {x.type} -> {x.type}")
            self.write(var, Value(name, x.shape, x.et))

    def p_psum(self, eqn):
        self._all_reduce(eqn, "sum")

    p_psum_invariant = p_psum

    def p_pmax(self, eqn):
        self._all_reduce(eqn, "max")

    def p_pmin(self, eqn):
        self._all_reduce(eqn, "min")

    def p_all_gather(self, eqn):
        x = self.read(eqn.invars[0])
        shape, et = self.out_of(eqn)
        axes, g = self.grid_axes(eqn, "axis_name")
        dim = int(eqn.params["all_gather_dimension"])
        if not eqn.params.get("tiled", False):
            # [.., G, ..] from [.., ..]: gather along a unit dim.
            unit = list(x.shape)
            unit.insert(dim, 1)
            x = self.e.reshape(x, unit)
        self._resize_along(eqn, x, shape, et, dim, dim_size=x.shape[dim] * g,
                           prefix="ag", op="all_gather", axis="gather_axis",
                           axes=axes)

    def p_reduce_scatter(self, eqn):
        x = self.read(eqn.invars[0])
        shape, et = self.out_of(eqn)
        axes, g = self.grid_axes(eqn, "axis_name")
        dim = int(eqn.params["scatter_dimension"])
        self._resize_along(eqn, x, shape, et, dim, dim_size=x.shape[dim] // g,
                           prefix="rs", op="reduce_scatter",
                           axis="scatter_axis", axes=axes)

    def _resize_along(self, eqn, x, shape, et, dim, dim_size, prefix, op, axis,
                      axes):
        """Emits `shard.<op>` of x whose dim `dim` becomes dim_size (the
        all-gather's and reduce-scatter's common part), then reshapes to the
        output's shape."""
        resized = list(x.shape)
        resized[dim] = dim_size
        name = self.e.fresh(prefix)
        t = tensor_type(resized, et)
        self.e.op(f"{name} = shard.{op} {x.name} on @{self.e.grid} "
                  f"grid_axes = {axes} {axis} = {dim} : {x.type} -> {t}")
        self.write(eqn.outvars[0],
                   self.e.reshape(Value(name, tuple(resized), et), shape))

    def p_all_to_all(self, eqn):
        x = self.read(eqn.invars[0])
        shape, et = self.out_of(eqn)
        axes, _ = self.grid_axes(eqn, "axis_name")
        split = int(eqn.params["split_axis"])
        concat = int(eqn.params["concat_axis"])
        name = self.e.fresh("a2a")
        self.e.op(f"{name} = shard.all_to_all {x.name} on @{self.e.grid} "
                  f"grid_axes = {axes} split_axis = {split} concat_axis = "
                  f"{concat} : {x.type} -> {tensor_type(shape, et)}")
        self.write(eqn.outvars[0], Value(name, shape, et))

    # -- rank-dependent and dynamic (_dynamic) -----------------------------

    p_axis_index = _dynamic.axis_index
    p_ppermute = _dynamic.ppermute
    p_dynamic_slice = _dynamic.dynamic_slice
    p_dynamic_update_slice = _dynamic.dynamic_update_slice

    # -- gather and scatter-add, any dimension numbers (_gather) -----------

    p_gather = _gather.gather
    p_scatter_add = _gather.scatter_add

    # -- cumulative and arg reductions (_scans) -----------------------------

    p_cumsum = p_cumprod = p_cummax = p_cummin = _scans.cumulative
    p_argmax = p_argmin = _scans.arg_best
    p_top_k = _scans.top_k
