"""Cumulative reductions (``cumsum``, ``cumprod``, ``cummax``, ``cummin``),
``argmax`` / ``argmin`` and ``top_k`` as ``linalg.generic`` ops.

A cumulative op is one generic over the result's dims and one more
reduction loop j along the axis: element i folds the inputs j <= i (j >= i
with ``reverse``) from the op's identity, in the order j = 0, 1, ...; the
others contribute the identity. Quadratic in the axis length, and the sum
in sequential order where XLA's CPU uses a parallel prefix (the last bits
of a long f32 sum may differ).

``argmax`` / ``argmin`` carry the best value and its index in two outputs
of one generic: an element wins when it is greater (smaller), or when it is
NaN and the best is not, so that the first NaN wins and ties keep the
first index, as XLA's argmax does.

``top_k`` is k such reductions, each of the elements ranked after the
previous one's pick in XLA's order (top_k below).
"""

from __future__ import annotations

import numpy as np

from ._emit import _FLOATS, _hex_scalar, _map, tensor_type, Value

_CUMULATIVE = {
    # name: (float op, int op, identity for floats, identity for ints)
    "cumsum": ("arith.addf", "arith.addi", lambda et: 0, lambda et: 0),
    "cumprod": ("arith.mulf", "arith.muli", lambda et: 1, lambda et: 1),
    "cummax": ("arith.maximumf", "arith.maxsi", lambda et: -np.inf,
               lambda et: -2 ** (int(et[1:]) - 1)),
    "cummin": ("arith.minimumf", "arith.minsi", lambda et: np.inf,
               lambda et: 2 ** (int(et[1:]) - 1) - 1),
}


def cumulative(t, eqn) -> None:
    e = t.e
    name = eqn.primitive.name
    x = t.read(eqn.invars[0])
    shape, et = t.out_of(eqn)
    axis = int(eqn.params["axis"])
    reverse = bool(eqn.params.get("reverse", False))
    rank = len(shape)
    fop, iop, fid, iid = _CUMULATIVE[name]
    floats = et in _FLOATS
    if et == "i1":
        raise e.error(f"'{name}' of booleans")
    acc_et = "f32" if floats else et
    identity = (fid if floats else iid)(acc_et)
    # Loops: d0..d{rank-1} the result, d{rank} = j along the axis.
    ins = [f"d{d}" if d != axis else f"d{rank}" for d in range(rank)]
    in_map = _map(rank + 1, ins)
    out_map = _map(rank + 1, [f"d{d}" for d in range(rank)])
    iters = ["parallel"] * rank + ["reduction"]
    init = e.fill(identity, shape, acc_et)

    def body(a, b):
        i = b(f"linalg.index {axis} : index")
        j = b(f"linalg.index {rank} : index")
        pred = "sge" if reverse else "sle"
        take = b(f"arith.cmpi {pred}, {j}, {i} : index")
        v = b.to_f32(a[0], x.et) if floats else a[0]
        v = b.select(take, v, b.const(identity, acc_et), acc_et)
        op = fop if floats else iop
        return b(f"{op} {a[1]}, {v} : {acc_et}")
    out = e.generic([x], [in_map], shape, acc_et, out_map, iters, body,
                    init=init)
    if acc_et != et:
        out = e.elementwise([out], shape, et,
                            lambda a, b: b.from_f32(a[0], et))
    t.write(eqn.outvars[0], out)


def arg_best(t, eqn) -> None:
    e = t.e
    name = eqn.primitive.name
    x = t.read(eqn.invars[0])
    shape, it = t.out_of(eqn)
    axis = int(eqn.params["axes"][0])
    rank = len(x.shape)
    floats = x.et in _FLOATS
    if x.et == "i1":
        raise e.error(f"'{name}' of booleans")
    val_et = "f32" if floats else x.et
    greater = name == "argmax"
    if floats:
        worst = -np.inf if greater else np.inf
    else:
        bits = int(x.et[1:])
        worst = -2 ** (bits - 1) if greater else 2 ** (bits - 1) - 1
    kept = [d for d in range(rank) if d != axis]
    order = kept + [axis]
    in_map = _map(rank, [f"d{order.index(d)}" for d in range(rank)])
    out_map = _map(rank, [f"d{i}" for i in range(len(kept))])
    iters = ", ".join(['"parallel"'] * len(kept) + ['"reduction"'])
    best0 = e.fill(worst, shape, val_et)
    idx0 = e.fill(0, shape, it)
    vt, ixt = tensor_type(shape, val_et), tensor_type(shape, it)
    name_ = e.fresh("arg")
    e.op(f"{name_}:2 = linalg.generic {{indexing_maps = [{in_map}, {out_map}, "
         f"{out_map}], iterator_types = [{iters}]}} ins({x.name} : {x.type}) "
         f"outs({best0}, {idx0} : {vt}, {ixt}) {{", loc=False)
    e.lines.append(f"    ^bb0(%a0: {x.et}, %best: {val_et}, %at: {it}):")
    lines = []

    def op(text, hint="t"):
        n = e.fresh(hint)
        lines.append(f"{n} = {text}")
        return n
    v = "%a0" if not floats or x.et == "f32" else \
        op(f"arith.extf %a0 : {x.et} to f32")
    j = op(f"linalg.index {len(kept)} : index")
    jj = op(f"arith.index_cast {j} : index to {it}")
    if floats:
        cmp = op(f"arith.cmpf {'ogt' if greater else 'olt'}, {v}, %best : f32")
        vnan = op(f"arith.cmpf uno, {v}, {v} : f32")
        bnan = op("arith.cmpf uno, %best, %best : f32")
        notb = op(f"arith.xori {bnan}, {op('arith.constant true')} : i1")
        nanwin = op(f"arith.andi {vnan}, {notb} : i1")
        take = op(f"arith.ori {cmp}, {nanwin} : i1")
    else:
        take = op(f"arith.cmpi {'sgt' if greater else 'slt'}, {v}, %best : "
                  f"{val_et}")
    nb = op(f"arith.select {take}, {v}, %best : {val_et}")
    na = op(f"arith.select {take}, {jj}, %at : {it}")
    e.lines.extend("      " + line for line in lines)
    e.lines.append(f"      linalg.yield {nb}, {na} : {val_et}, {it}")
    e.lines.append(f"    }} -> ({vt}, {ixt})" + (" " + e.loc if e.loc else ""))
    t.write(eqn.outvars[0], Value(f"{name_}#1", tuple(shape), it))


def _order_key(op, v: str, et: str) -> str:
    """A signed integer that orders `v` as XLA's top_k does: floats by
    their total order (-NaN < -inf < ... < -0.0 < +0.0 < ... < inf <
    NaN), computed from the f32 bits; integers by value."""
    if et not in _FLOATS:
        return v
    f = v if et == "f32" else op(f"arith.extf {v} : {et} to f32")
    bits = op(f"arith.bitcast {f} : f32 to i32")
    sign = op(f"arith.shrsi {bits}, {op('arith.constant 31 : i32')} : i32")
    mask = op(f"arith.andi {sign}, {op('arith.constant 2147483647 : i32')} "
              ": i32")
    return op(f"arith.xori {bits}, {mask} : i32")


def top_k(t, eqn) -> None:
    """lax.top_k: the k largest along the axis, in decreasing order, and
    their indices; equal values lowest index first, NaN above inf and -NaN
    below -inf (XLA's order). k passes, each one generic that reduces the
    axis to the largest element ranked after the previous pass's pick
    (smaller, or equal at a higher index): k times the axis's length."""
    e = t.e
    x = t.read(eqn.invars[0])
    (shape, et), (_, it) = t.out_of(eqn, 0), t.out_of(eqn, 1)
    rank = len(x.shape)
    axis = int(eqn.params.get("axis", rank - 1)) % rank
    k = int(eqn.params["k"])
    if et == "i1":
        raise e.error("'top_k' of booleans")
    key_et = "i32" if et in _FLOATS else et
    kept = [d for d in range(rank) if d != axis]
    row = [x.shape[d] for d in kept]
    order = kept + [axis]
    in_map = _map(rank, [f"d{order.index(d)}" for d in range(rank)])
    row_map = _map(rank, [f"d{i}" for i in range(len(kept))])
    iters = ", ".join(['"parallel"'] * len(kept) + ['"reduction"'])
    vt, ixt = tensor_type(row, et), tensor_type(row, it)
    values = Value(e.empty(shape, et), tuple(shape), et)
    indices = Value(e.empty(shape, it), tuple(shape), it)
    prev = None
    for j in range(k):
        best0, at0 = e.fill(0, row, et), e.fill(-1, row, it)
        name = e.fresh("topk")
        ins = [x] + ([] if prev is None else list(prev))
        maps = [in_map] + [row_map] * (len(ins) - 1) + [row_map, row_map]
        e.op(f"{name}:2 = linalg.generic {{indexing_maps = "
             f"[{', '.join(maps)}], iterator_types = [{iters}]}} "
             f"ins({', '.join(v.name for v in ins)} : "
             f"{', '.join(v.type for v in ins)}) outs({best0}, {at0} : {vt}, "
             f"{ixt}) {{", loc=False)
        head = [f"%a0: {et}"] + ([] if prev is None else
                                 [f"%pv: {et}", f"%pi: {it}"])
        e.lines.append("    ^bb0(" + ", ".join(
            head + [f"%best: {et}", f"%at: {it}"]) + "):")
        lines = []

        def op(text, hint="t"):
            n = e.fresh(hint)
            lines.append(f"{n} = {text}")
            return n
        cmp = "arith.cmpi"  # on the order keys and the indices
        kv = _order_key(op, "%a0", et)
        kb = _order_key(op, "%best", et)
        i = op(f"arith.index_cast {op(f'linalg.index {len(kept)} : index')}"
               f" : index to {it}")
        none = op(f"{cmp} slt, %at, {op(f'arith.constant 0 : {it}')} : {it}")
        take = op(f"arith.ori {op(f'{cmp} sgt, {kv}, {kb} : {key_et}')}, "
                  f"{none} : i1")
        if prev is not None:
            kp = _order_key(op, "%pv", et)
            below = op(f"{cmp} slt, {kv}, {kp} : {key_et}")
            tie = op(f"arith.andi {op(f'{cmp} eq, {kv}, {kp} : {key_et}')}, "
                     f"{op(f'{cmp} sgt, {i}, %pi : {it}')} : i1")
            after = op(f"arith.ori {below}, {tie} : i1")
            take = op(f"arith.andi {take}, {after} : i1")
        nb = op(f"arith.select {take}, %a0, %best : {et}")
        na = op(f"arith.select {take}, {i}, %at : {it}")
        e.lines.extend("      " + line for line in lines)
        e.lines.append(f"      linalg.yield {nb}, {na} : {et}, {it}")
        e.lines.append(f"    }} -> ({vt}, {ixt})" +
                       (" " + e.loc if e.loc else ""))
        prev = (Value(f"{name}#0", tuple(row), et),
                Value(f"{name}#1", tuple(row), it))
        unit = list(shape)
        unit[axis] = 1
        offsets = [0] * rank
        offsets[axis] = j
        values, indices = (
            Value(e.insert(e.reshape(part, unit), into.name, shape, into.et,
                           offsets), tuple(shape), into.et)
            for part, into in zip(prev, (values, indices)))
    t.write(eqn.outvars[0], values)
    t.write(eqn.outvars[1], indices)
