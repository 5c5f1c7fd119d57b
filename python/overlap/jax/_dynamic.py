"""Values that depend on where a rank is or on data: ``axis_index``,
``ppermute``, ``dynamic_slice`` and ``dynamic_update_slice`` as MLIR ops.

``ppermute`` has no shard op Overlap lowers, so it is written with one it
does: every rank all-gathers the group's blocks and keeps the block of the
rank that sends to it (``perm``'s source for this rank), or zeros where no
rank sends to it, as JAX defines. That moves the group size times the data
a point-to-point exchange would, the price of being correct on every
runtime Overlap has.

``dynamic_slice`` and ``dynamic_update_slice`` read their start indices
(0-d integer arrays) with ``tensor.extract`` and clamp them as XLA does
(into ``[0, dim - size]``), then slice with dynamic offsets.
"""

from __future__ import annotations

from typing import List, Sequence

from ._emit import Value, tensor_type


def group_index(t, names: Sequence[str]) -> str:
    """An `index` SSA value: this rank's position in the group of the mesh
    axes `names`, row-major over them in the order given."""
    e = t.e
    idx = [e.axes.index(n) for n in names]
    lin = e.fresh("ix")
    e.op(f"{lin}:{len(e.axes)} = shard.process_multi_index on @{e.grid} : "
         "index" + ", index" * (len(e.axes) - 1))
    acc = None
    for i in idx:
        coord = f"{lin}#{i}" if len(e.axes) > 1 else lin
        if acc is None:
            acc = coord
            continue
        size = e.index(e.sizes[i])
        mul = e.fresh("m")
        e.op(f"{mul} = arith.muli {acc}, {size} : index")
        add = e.fresh("p")
        e.op(f"{add} = arith.addi {mul}, {coord} : index")
        acc = add
    return acc


def _names(eqn) -> tuple:
    names = eqn.params["axis_name"]
    return (names,) if isinstance(names, str) else tuple(names)


def axis_index(t, eqn) -> None:
    shape, et = t.out_of(eqn)
    acc = group_index(t, _names(eqn))
    cast = t.e.fresh("i")
    t.e.op(f"{cast} = arith.index_cast {acc} : index to {et}")
    t.write(eqn.outvars[0], Value(t.e.fill_with(cast, (), et), (), et))


def _select_index(e, idx: str, table: List[int]) -> str:
    """table[idx] for an `index` idx, as a chain of selects (no memory)."""
    out = e.index(table[-1])
    for k in range(len(table) - 2, -1, -1):
        if table[k] == table[-1]:
            continue
        hit = e.fresh("h")
        e.op(f"{hit} = arith.cmpi eq, {idx}, {e.index(k)} : index")
        sel = e.fresh("s")
        e.op(f"{sel} = arith.select {hit}, {e.index(table[k])}, {out} : "
             "index")
        out = sel
    return out


def ppermute(t, eqn) -> None:
    e = t.e
    x = t.read(eqn.invars[0])
    _, g = t.grid_axes(eqn, "axis_name")
    # perm's indices are over the named axes in the mesh's order, whatever
    # order the program names them in (unlike axis_index and the gathers:
    # JAX 0.10, checked against jax.jit on a 2 x 2 mesh).
    names = sorted(_names(eqn), key=e.axes.index)
    axes = "[" + ", ".join(str(e.axes.index(n)) for n in names) + "]"
    source = [-1] * g
    for src, dst in eqn.params["perm"]:
        source[int(dst)] = int(src)
    # [g, ...]: every rank's block, in group order.
    one = e.reshape(x, (1,) + x.shape)
    gathered = (g,) + x.shape
    ag = e.fresh("ag")
    e.op(f"{ag} = shard.all_gather {one.name} on @{e.grid} grid_axes = "
         f"{axes} gather_axis = 0 : {one.type} -> "
         f"{tensor_type(gathered, x.et)}")
    me = group_index(t, names)
    src = _select_index(e, me, [max(s, 0) for s in source])
    part = e.fresh("pp")
    zeros = ", ".join(["0"] * len(x.shape))
    e.op(f"{part} = tensor.extract_slice {ag}[{src}{', ' if zeros else ''}"
         f"{zeros}] [{', '.join(str(d) for d in one.shape)}] "
         f"[{', '.join(['1'] * len(gathered))}] : "
         f"{tensor_type(gathered, x.et)} to {one.type}")
    out = e.reshape(Value(part, one.shape, x.et), x.shape)
    if -1 in source:
        # A rank no one sends to gets zeros (JAX's ppermute).
        has = _select_index(e, me, [int(s >= 0) for s in source])
        flag = e.fresh("f")
        e.op(f"{flag} = arith.index_cast {has} : index to i1")
        out = e.elementwise(
            [Value(e.fill_with(flag, (), "i1"), (), "i1"), out], x.shape,
            x.et,
            lambda a, b: b.select(a[0], a[1], b.const(0, x.et), x.et))
    t.write(eqn.outvars[0], out)


def _starts(t, eqn, operand: Value, first: int, sizes) -> List[str]:
    """The clamped `index` start of each dim, from the 0-d operands that
    begin at eqn.invars[first]."""
    e = t.e
    starts = []
    for d, var in enumerate(eqn.invars[first:first + len(operand.shape)]):
        v = t.read(var)
        s = e.scalar(v)
        i = e.fresh("st")
        e.op(f"{i} = arith.index_cast {s} : {v.et} to index")
        lo = e.index(0)
        hi = e.index(operand.shape[d] - sizes[d])
        c = e.fresh("st")
        e.op(f"{c} = arith.maxsi {i}, {lo} : index")
        c2 = e.fresh("st")
        e.op(f"{c2} = arith.minsi {c}, {hi} : index")
        starts.append(c2)
    return starts


def dynamic_slice(t, eqn) -> None:
    e = t.e
    x = t.read(eqn.invars[0])
    sizes = [int(s) for s in eqn.params["slice_sizes"]]
    starts = _starts(t, eqn, x, 1, sizes)
    name = e.fresh("ds")
    out_t = tensor_type(sizes, x.et)
    e.op(f"{name} = tensor.extract_slice {x.name}[{', '.join(starts)}] "
         f"[{', '.join(map(str, sizes))}] [{', '.join(['1'] * len(sizes))}] "
         f": {x.type} to {out_t}")
    t.write(eqn.outvars[0], Value(name, tuple(sizes), x.et))


def dynamic_update_slice(t, eqn) -> None:
    e = t.e
    x = t.read(eqn.invars[0])
    u = t.read(eqn.invars[1])
    starts = _starts(t, eqn, x, 2, list(u.shape))
    name = e.fresh("dus")
    e.op(f"{name} = tensor.insert_slice {u.name} into {x.name}"
         f"[{', '.join(starts)}] [{', '.join(map(str, u.shape))}] "
         f"[{', '.join(['1'] * len(u.shape))}] : {u.type} into {x.type}")
    t.write(eqn.outvars[0], Value(name, x.shape, x.et))
