"""MLIR text for one per-device jaxpr: the body of a ``jax.shard_map``.

Each jaxpr equation becomes ops of the upstream dialects that Overlap's
input takes (func, linalg, tensor, arith, math, shard): elementwise
primitives are ``linalg.generic``s whose bodies compute in f32 for f16 and
bf16 (one rounding per primitive, as XLA does on CPU), ``dot_general`` is a
``linalg.generic`` in the contraction form ``overlap-raise`` normalizes
(``acc + ext(a) * ext(b)``, accumulating in f32 for f16 and bf16 and
rounding once), collectives are ``shard`` ops on one grid named after the
mesh. Calls (``jit``, ``custom_jvp_call``, ...) are inlined; loops and
branches become scf ops (``_control``).

This module knows jaxprs and MLIR text only; ``overlap.jax`` drives it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

# The first SSA name a line of the text defines (`%v3 = ...`, `%w:2 = ...`).
_DEFINES = re.compile(r"\s*(%[\w.$-]+)(?::\d+)?\s*=")


def origin_of(text: str, line: int, origins: Dict[str, str]) -> str:
    """The primitive whose translation wrote line `line` (1-based) of
    `text`, or of the nearest op around it that defines a value (a line
    inside a linalg.generic's body belongs to the generic): "" if none."""
    lines = text.split("\n")
    for i in range(min(line, len(lines)) - 1, -1, -1):
        defined = _DEFINES.match(lines[i])
        if defined and defined.group(1) in origins:
            return origins[defined.group(1)]
    return ""


class UnsupportedError(NotImplementedError):
    """A jaxpr the importer does not translate: names the primitive (or the
    parameter) and the source line it came from."""


@dataclass
class Refusal:
    """One reason a frontend (overlap.jax, overlap.torch) refuses a program,
    as its error lists it; UnsupportedError.refusals holds them."""
    #: What is refused: "the primitive 'cbrt'", "argument 2 of body
    #: (state['n'])", "'mul' at the top level of f", "aten.cumsum".
    what: str
    #: The user's line ("model.py:12 (body)"), or "".
    where: str
    #: Why, and what to do.
    why: str
    #: "primitive" (one the importer does not translate), "form", "dtype",
    #: "structure".
    kind: str = "form"

    def __str__(self) -> str:
        return (self.what + (f" (from {self.where})" if self.where else "")
                + f": {self.why}")


_ELEM = {
    "float32": "f32", "bfloat16": "bf16", "float16": "f16",
    "int32": "i32", "bool": "i1", "int8": "i8", "int16": "i16",
    "int64": "i64",
}
_FLOATS = ("f32", "bf16", "f16")


def elem_type(dtype) -> str:
    name = np.dtype(dtype).name
    if name.startswith("uint"):
        # MLIR's integers are signless and the importer's ops (division,
        # remainder, compares, conversions, max/min) are the signed ones:
        # an unsigned array would be computed as signed, a silent wrong
        # result, so it is refused by name.
        raise UnsupportedError(
            f"element type {name}: the importer computes integers as "
            f"signed (arith.divsi, cmpi slt, sitofp), so unsigned arrays "
            f"are refused rather than computed wrong; use a signed type "
            f"(it takes {', '.join(sorted(_ELEM))})")
    if name not in _ELEM:
        raise UnsupportedError(f"element type {name} (the importer takes "
                               f"{', '.join(sorted(_ELEM))})")
    return _ELEM[name]


def tensor_type(shape: Sequence[int], et: str) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + et + ">"


@dataclass
class Value:
    name: str
    shape: Tuple[int, ...]
    et: str

    @property
    def type(self) -> str:
        return tensor_type(self.shape, self.et)


def _dims(n: int) -> str:
    return ", ".join(f"d{i}" for i in range(n))


def _map(n: int, results: Sequence[str]) -> str:
    return f"affine_map<({_dims(n)}) -> ({', '.join(results)})>"


def _hex_scalar(value, et: str) -> str:
    """An exact MLIR literal for a scalar of `et`."""
    if et == "f32":
        return "0x%08X" % int(np.array(value, np.float32).view(np.uint32))
    if et == "f16":
        return "0x%04X" % int(np.array(value, np.float16).view(np.uint16))
    if et == "bf16":
        import ml_dtypes
        return "0x%04X" % int(np.array(value, ml_dtypes.bfloat16)
                              .view(np.uint16))
    if et == "i1":
        # `arith.constant 1 : i1` (true), `0 : i1`: the typed form parses
        # where `false : i1` does not.
        return "1" if bool(value) else "0"
    return str(int(value))


def _source(eqn) -> str:
    """'file.py:12 (fn)' of the user's code that made `eqn`, or ''."""
    try:
        from jax._src import source_info_util
        return source_info_util.summarize(eqn.source_info)
    except Exception:  # pragma: no cover - private API moved
        return ""


def _location(eqn) -> str:
    """An MLIR location for `eqn`: the user's file and line."""
    try:
        from jax._src import source_info_util
        frame = source_info_util.user_frame(eqn.source_info.traceback)
        if frame is not None:
            name = frame.file_name.replace("\\", "\\\\").replace('"', '\\"')
            return f'loc("{name}":{frame.start_line}:0)'
    except Exception:  # pragma: no cover - private API moved
        pass
    return ""


def _is_literal(v) -> bool:
    try:
        from jax.extend.core import Literal
        return isinstance(v, Literal)
    except ImportError:  # pragma: no cover - older jax
        return type(v).__name__ == "Literal"


_CALL_PARAMS = ("jaxpr", "call_jaxpr", "fun_jaxpr")

#: The primitives whose sub-jaxpr is a plain call: run once, in place, with
#: the equation's operands. scan, while and cond are loops and branches
#: (_control.py); any other primitive that carries a jaxpr
#: (custom_linear_solve, ...) is refused by name: inlining it would compute
#: something else.
CALL_PRIMITIVES = ("jit", "pjit", "closed_call", "core_call",
                   "custom_jvp_call", "custom_vjp_call",
                   "custom_vjp_call_jaxpr", "remat", "remat2", "checkpoint")


class Emitter:
    """Emits one func.func for a per-device jaxpr on grid `grid` of
    `sizes` (one entry per mesh axis, named `axes`)."""

    def __init__(self, grid: str, axes: Sequence[str], sizes: Sequence[int]):
        self.grid = grid
        self.axes = list(axes)
        self.sizes = list(sizes)
        self.lines: List[str] = []
        self.count = 0
        self.loc = ""
        self.where = ""
        #: What is being translated ("the primitive 'pow'"), and per SSA
        #: name an op defines, that with the user's line: what a parse
        #: error of the text is traced back to (origin_of).
        self.prim = ""
        self.origins: Dict[str, str] = {}

    # -- plumbing ----------------------------------------------------------

    def fresh(self, hint: str = "v") -> str:
        self.count += 1
        return f"%{hint}{self.count}"

    def op(self, text: str, loc: bool = True) -> None:
        defined = _DEFINES.match(text)
        if defined and self.prim:
            self.origins[defined.group(1)] = (
                self.prim + (f" (from {self.where})" if self.where else ""))
        self.lines.append("    " + text +
                          (" " + self.loc if self.loc and loc else ""))

    def error(self, what: str) -> UnsupportedError:
        return UnsupportedError(what + (f" (from {self.where})"
                                        if self.where else ""))

    def empty(self, shape, et) -> str:
        e = self.fresh("e")
        self.op(f"{e} = tensor.empty() : {tensor_type(shape, et)}")
        return e

    def constant(self, array: np.ndarray, et: str) -> Value:
        array = np.asarray(array)
        shape = tuple(array.shape)
        name = self.fresh("c")
        if array.size == 1 or (array.size and (array == array.flat[0]).all()):
            lit = _hex_scalar(array.flat[0], et)
        elif et == "i1":
            # Nested as the type is: a flat list of a [S, S] mask does not
            # parse.
            def nested(a):
                if a.ndim == 0:
                    return "true" if a else "false"
                return "[" + ", ".join(nested(s) for s in a) + "]"
            lit = f"dense<{nested(array)}>"
        else:
            raw = np.ascontiguousarray(array).tobytes()
            lit = None
            self.op(f'{name} = arith.constant dense<"0x{raw.hex().upper()}"> '
                    f": {tensor_type(shape, et)}")
            return Value(name, shape, et)
        if not lit.startswith("dense"):
            lit = f"dense<{lit}>"
        self.op(f"{name} = arith.constant {lit} : {tensor_type(shape, et)}")
        return Value(name, shape, et)

    def fill(self, value, shape, et) -> str:
        """A tensor of `value` (a Python number)."""
        c = self.fresh("s")
        self.op(f"{c} = arith.constant {_hex_scalar(value, et)} : {et}")
        return self.fill_with(c, shape, et)

    def fill_with(self, scalar: str, shape, et) -> str:
        """A tensor of the SSA scalar `scalar`: a linalg.fill, which with
        target=cuda is a kernel (tensor.from_elements would be a store of
        the host thread into device memory)."""
        e = self.empty(shape, et)
        f = self.fresh("f")
        t = tensor_type(shape, et)
        self.op(f"{f} = linalg.fill ins({scalar} : {et}) outs({e} : {t}) "
                f"-> {t}")
        return f

    def index(self, value: int) -> str:
        """An `index` constant."""
        c = self.fresh("i")
        self.op(f"{c} = arith.constant {int(value)} : index", loc=False)
        return c

    def scalar(self, v: Value) -> str:
        """The element of a 0-d (or one-element) tensor `v`, as an SSA
        scalar (read by the host thread: staged with target=cuda)."""
        s = self.fresh("p")
        idx = ", ".join(self.index(0) for _ in v.shape)
        self.op(f"{s} = tensor.extract {v.name}[{idx}] : {v.type}")
        return s

    def generic(self, ins: Sequence[Value], in_maps: Sequence[str],
                out_shape, out_et: str, out_map: str, iterators: Sequence[str],
                body: Callable[[List[str], "Body"], str],
                init: Optional[str] = None) -> Value:
        """A linalg.generic; `body(args, b)` emits the region through `b` and
        returns the yielded scalar."""
        out_t = tensor_type(out_shape, out_et)
        if init is None:
            init = self.empty(out_shape, out_et)
        name = self.fresh()
        maps = ", ".join(list(in_maps) + [out_map])
        its = ", ".join(f'"{i}"' for i in iterators)
        ins_text = ""
        if ins:
            ins_text = (f"ins({', '.join(v.name for v in ins)} : "
                        f"{', '.join(v.type for v in ins)}) ")
        self.op(f"{name} = linalg.generic {{indexing_maps = [{maps}], "
                f"iterator_types = [{its}]}} {ins_text}outs({init} : {out_t}) "
                "{", loc=False)
        args = [f"%a{i}" for i in range(len(ins))] + ["%acc"]
        types = [v.et for v in ins] + [out_et]
        self.lines.append("    ^bb0(" + ", ".join(
            f"{a}: {t}" for a, t in zip(args, types)) + "):")
        b = Body(self)
        result = body(args, b)
        self.lines.extend("      " + line for line in b.lines)
        self.lines.append(f"      linalg.yield {result} : {out_et}")
        self.lines.append(f"    }} -> {out_t}" + (" " + self.loc
                                                  if self.loc else ""))
        return Value(name, tuple(out_shape), out_et)

    def elementwise(self, ins: Sequence[Value], out_shape, out_et: str,
                    body) -> Value:
        rank = len(out_shape)
        maps, operands = [], []
        for v in ins:
            if len(v.shape) != rank and len(v.shape) != 0:
                raise self.error(f"operands of shapes {v.shape} and "
                                 f"{out_shape} (an implicit broadcast)")
            # Unit dims broadcast against the result: dropped (a
            # collapse_shape) so that the map is a projection.
            keep = [d for d in range(len(v.shape))
                    if not (v.shape[d] == 1 and out_shape[d] != 1)]
            if len(keep) != len(v.shape):
                v = self.reshape(v, [v.shape[d] for d in keep])
            operands.append(v)
            maps.append(_map(rank, [f"d{d}" for d in keep]))
        return self.generic(operands, maps, out_shape, out_et,
                            _map(rank, [f"d{i}" for i in range(rank)]),
                            ["parallel"] * rank, body)

    # -- shapes ------------------------------------------------------------

    def reshape(self, v: Value, shape: Sequence[int]) -> Value:
        shape = tuple(int(d) for d in shape)
        if shape == v.shape:
            return v
        groups = _reshape_groups(v.shape, shape)
        if groups is None:
            raise self.error(f"reshape {v.shape} -> {shape}")
        if not shape or not v.shape:
            # To or from rank 0 (every other dim is 1): one op with the
            # empty reassociation; the grouped path would pass through a
            # tensor<1x..> and ask expand_shape for a lower rank.
            name = self.fresh()
            t = tensor_type(shape, v.et)
            if not shape:
                self.op(f"{name} = tensor.collapse_shape {v.name} [] : "
                        f"{v.type} into {t}")
            else:
                self.op(f"{name} = tensor.expand_shape {v.name} [] "
                        f"output_shape [{', '.join(map(str, shape))}] : "
                        f"{v.type} into {t}")
            return Value(name, shape, v.et)
        mid = tuple(int(np.prod([v.shape[i] for i in src], dtype=np.int64))
                    for src, _ in groups)
        cur = v
        if mid != v.shape:
            name = self.fresh()
            reassoc = "[" + ", ".join(
                "[" + ", ".join(map(str, src)) + "]" for src, _ in groups) + "]"
            t = tensor_type(mid, v.et)
            self.op(f"{name} = tensor.collapse_shape {v.name} {reassoc} : "
                    f"{v.type} into {t}")
            cur = Value(name, mid, v.et)
        if mid != shape:
            name = self.fresh()
            reassoc = "[" + ", ".join(
                "[" + ", ".join(map(str, dst)) + "]" for _, dst in groups) + "]"
            t = tensor_type(shape, v.et)
            self.op(f"{name} = tensor.expand_shape {cur.name} {reassoc} "
                    f"output_shape [{', '.join(map(str, shape))}] : "
                    f"{cur.type} into {t}")
            cur = Value(name, shape, v.et)
        return cur

    def transpose(self, v: Value, perm: Sequence[int]) -> Value:
        perm = [int(p) for p in perm]
        if perm == list(range(len(perm))):
            return v
        shape = tuple(v.shape[p] for p in perm)
        e = self.empty(shape, v.et)
        name = self.fresh()
        t = tensor_type(shape, v.et)
        self.op(f"{name} = linalg.transpose ins({v.name} : {v.type}) "
                f"outs({e} : {t}) permutation = [{', '.join(map(str, perm))}]")
        return Value(name, shape, v.et)

    def extract(self, v: Value, starts, sizes, strides=None) -> Value:
        strides = strides or [1] * len(starts)
        name = self.fresh()
        t = tensor_type(sizes, v.et)
        j = lambda xs: ", ".join(str(int(x)) for x in xs)
        self.op(f"{name} = tensor.extract_slice {v.name}[{j(starts)}] "
                f"[{j(sizes)}] [{j(strides)}] : {v.type} to {t}")
        return Value(name, tuple(int(s) for s in sizes), v.et)

    def insert(self, part: Value, into: str, shape, et, offsets) -> str:
        name = self.fresh()
        j = lambda xs: ", ".join(str(int(x)) for x in xs)
        self.op(f"{name} = tensor.insert_slice {part.name} into {into}"
                f"[{j(offsets)}] [{j(part.shape)}] [{j([1] * len(shape))}] : "
                f"{part.type} into {tensor_type(shape, et)}")
        return name


def _reshape_groups(src: Sequence[int], dst: Sequence[int]):
    """Pairs (source dims, target dims) of equal products, in order, that
    cover both shapes; None if the sizes differ."""
    if int(np.prod(src, dtype=np.int64)) != int(np.prod(dst, dtype=np.int64)):
        return None
    if not src or not dst:
        return [(list(range(len(src))), list(range(len(dst))))]
    groups = []
    i = j = 0
    while i < len(src) and j < len(dst):
        gs, gd = [i], [j]
        ps, pd = src[i], dst[j]
        i, j = i + 1, j + 1
        while ps != pd:
            if ps < pd:
                ps *= src[i]
                gs.append(i)
                i += 1
            else:
                pd *= dst[j]
                gd.append(j)
                j += 1
        groups.append((gs, gd))
    # Trailing unit dims join the last group.
    groups[-1][0].extend(range(i, len(src)))
    groups[-1][1].extend(range(j, len(dst)))
    return groups


class Body:
    """The scalar ops of one linalg.generic region."""

    def __init__(self, emitter: Emitter):
        self.e = emitter
        self.lines: List[str] = []

    def __call__(self, text: str, hint: str = "t") -> str:
        name = self.e.fresh(hint)
        self.lines.append(f"{name} = {text}")
        return name

    def const(self, value, et: str) -> str:
        return self(f"arith.constant {_hex_scalar(value, et)} : {et}", "k")

    def to_f32(self, x: str, et: str) -> str:
        return x if et == "f32" else self(f"arith.extf {x} : {et} to f32")

    def from_f32(self, x: str, et: str) -> str:
        return x if et == "f32" else self(f"arith.truncf {x} : f32 to {et}")

    def select(self, cond: str, a: str, b: str, et: str) -> str:
        return self(f"arith.select {cond}, {a}, {b} : {et}")

    def float_to_int(self, x: str, src: str, dst: str) -> str:
        """XLA's conversion: NaN is 0, a value beyond the type saturates
        (fptosi alone is poison there: INT_MIN on x86)."""
        bits = int(dst[1:])
        f = self.to_f32(x, src)
        top = self.const(2.0 ** (bits - 1), "f32")  # exact in f32
        bottom = self.const(-2.0 ** (bits - 1), "f32")
        big = self(f"arith.cmpf oge, {f}, {top} : f32")
        small = self(f"arith.cmpf olt, {f}, {bottom} : f32")
        nan = self(f"arith.cmpf uno, {f}, {f} : f32")
        zero_f = self.const(0.0, "f32")
        safe = self.select(self(f"arith.ori {big}, {small} : i1"), zero_f,
                           self.select(nan, zero_f, f, "f32"), "f32")
        out = self(f"arith.fptosi {safe} : f32 to {dst}")
        out = self.select(big, self.const(2 ** (bits - 1) - 1, dst), out, dst)
        return self.select(small, self.const(-2 ** (bits - 1), dst), out, dst)

    def int_div_rem(self, x: str, y: str, et: str, rem: bool) -> str:
        """XLA's integer division and remainder: x / 0 = -1, x % 0 = x,
        INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0 (divsi/remsi alone trap
        there: SIGFPE)."""
        bits = int(et[1:])
        zero, one = self.const(0, et), self.const(1, et)
        minus1 = self.const(-1, et)
        int_min = self.const(-2 ** (bits - 1), et)
        by_zero = self(f"arith.cmpi eq, {y}, {zero} : {et}")
        overflow = self(f"arith.andi "
                        f"{self(f'arith.cmpi eq, {x}, {int_min} : {et}')}, "
                        f"{self(f'arith.cmpi eq, {y}, {minus1} : {et}')} : i1")
        bad = self(f"arith.ori {by_zero}, {overflow} : i1")
        safe_y = self.select(bad, one, y, et)
        if rem:
            r = self(f"arith.remsi {x}, {safe_y} : {et}")
            return self.select(by_zero, x, self.select(overflow, zero, r, et),
                               et)
        q = self(f"arith.divsi {x}, {safe_y} : {et}")
        return self.select(by_zero, minus1,
                           self.select(overflow, int_min, q, et), et)

    def convert(self, x: str, src: str, dst: str) -> str:
        if src == dst:
            return x
        fs, fd = src in _FLOATS, dst in _FLOATS
        if fs and fd:
            if src == "f32":
                return self(f"arith.truncf {x} : f32 to {dst}")
            if dst == "f32":
                return self(f"arith.extf {x} : {src} to f32")
            return self.from_f32(self.to_f32(x, src), dst)
        if not fs and fd:
            op = "arith.uitofp" if src == "i1" else "arith.sitofp"
            return self(f"{op} {x} : {src} to {dst}")
        if fs and not fd:
            if dst == "i1":
                zero = self.const(0.0, src)
                return self(f"arith.cmpf une, {x}, {zero} : {src}")
            return self.float_to_int(x, src, dst)
        if dst == "i1":
            zero = self.const(0, src)
            return self(f"arith.cmpi ne, {x}, {zero} : {src}")
        ws, wd = int(src[1:]), int(dst[1:])
        if wd > ws:
            op = "arith.extui" if src == "i1" else "arith.extsi"
            return self(f"{op} {x} : {src} to {dst}")
        return self(f"arith.trunci {x} : {src} to {dst}")
