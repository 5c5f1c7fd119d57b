"""XLA's ``gather`` and ``scatter-add`` with any dimension numbers, as one
``linalg.generic`` each.

``gather`` (``jnp.take``, ``x[ids]``, an embedding lookup,
``jnp.take_along_axis``, ``x[i, j]`` with arrays): a generic over the
result whose body reads each component of the index vector (the indices
passed once per component, each with a map that picks it) and then the
operand with ``tensor.extract`` at the coordinates XLA defines: per
operand dim, the clamped start plus the offset of the result's window
dims, or for a batching dim the result's matching batch coordinate.
Starts are clamped so that the whole slice is in range (``clip``,
``promise_in_bounds``: what XLA does) or, with ``fill``, a slice any part
of which is out of range gives the fill value (NaN for floats, the most
negative integer otherwise, true for booleans, as JAX's default).

``scatter-add`` (the transpose of a gather under ``jax.grad``: the
embedding's gradient, ``take_along_axis``'s, ``top_k``'s; and
``x.at[ids].add(u)``): a generic over the operand, its initial value, with
one reduction loop per scatter dim of the indices that is not a batching
dim. Each element adds, in the order of the scatter positions (XLA's CPU
adds them one after the other in that order), the update whose window
covers it; a window any part of which is out of range is dropped
(``fill``/``drop``, ``promise_in_bounds``: what XLA does) or moved into
range (``clip``). Cost: operand elements times scatter positions (the
gradient of an embedding of V rows for N tokens is V x D x N), where
XLA's loop is N x D.
"""

from __future__ import annotations

from typing import List, Optional

import numpy as np

from ._emit import Value, _map


def _mode(eqn) -> str:
    return str(eqn.params.get("mode", "")).rsplit(".", 1)[-1]


_MODES = ("CLIP", "FILL_OR_DROP", "PROMISE_IN_BOUNDS")


def _gather_dims(eqn):
    dn = eqn.params["dimension_numbers"]
    return (tuple(int(d) for d in dn.offset_dims),
            tuple(int(d) for d in dn.collapsed_slice_dims),
            tuple(int(d) for d in dn.start_index_map),
            tuple(int(d) for d in getattr(dn, "operand_batching_dims", ())),
            tuple(int(d) for d in
                  getattr(dn, "start_indices_batching_dims", ())))


def _scatter_dims(eqn):
    dn = eqn.params["dimension_numbers"]
    return (tuple(int(d) for d in dn.update_window_dims),
            tuple(int(d) for d in dn.inserted_window_dims),
            tuple(int(d) for d in dn.scatter_dims_to_operand_dims),
            tuple(int(d) for d in getattr(dn, "operand_batching_dims", ())),
            tuple(int(d) for d in
                  getattr(dn, "scatter_indices_batching_dims", ())))


def refusal(eqn) -> Optional[str]:
    """Why the importer does not translate this gather or scatter-add
    equation (naming its mode and dimension numbers), or None when it
    does."""
    name = eqn.primitive.name
    what = eqn.params["dimension_numbers"]
    mode = _mode(eqn)
    if mode not in _MODES:
        return (f"'{name}' in mode {mode} ({what}): the importer translates "
                f"{', '.join(m.lower() for m in _MODES)}")
    indices = eqn.invars[1].aval
    if not np.issubdtype(np.dtype(indices.dtype), np.integer):
        return (f"'{name}' with indices of "
                f"{np.dtype(indices.dtype).name} ({what})")
    if name == "gather":
        _, _, starts, obatch, ibatch = _gather_dims(eqn)
    else:
        _, _, starts, obatch, ibatch = _scatter_dims(eqn)
        body = eqn.params.get("update_jaxpr")
        body = getattr(body, "jaxpr", body)
        if eqn.params.get("update_consts") or (
                body is not None and [e.primitive.name for e in body.eqns]
                not in (["add"], ["add_any"])):
            return (f"'{name}' whose update computation is not one add "
                    f"({what})")
    shape = tuple(int(d) for d in indices.shape)
    if not shape or shape[-1] != len(starts) or len(obatch) != len(ibatch):
        return (f"'{name}' with indices of shape {shape} for {what} (the "
                f"importer takes an index vector as the last dimension of "
                f"the indices, one component per indexed operand dim)")
    return None


def _check(t, eqn) -> None:
    why = refusal(eqn)
    if why:
        raise t.e.error(why)


def _components(indices: Value, nloops: int, batch_vars: List[str]):
    """The ins and maps that give the body each component of the index
    vector at the loops' scatter (or batch) coordinates `batch_vars`."""
    k = indices.shape[-1]
    ins = [indices] * k
    maps = [_map(nloops, list(batch_vars) + [str(c)]) for c in range(k)]
    return ins, maps


def _clamp(b, raw: str, hi: int) -> str:
    lo = b("arith.constant 0 : index", "k")
    top = b(f"arith.constant {hi} : index", "k")
    return b(f"arith.minsi {b(f'arith.maxsi {raw}, {lo} : index')}, {top} "
             ": index")


def _in_range(b, raw: str, hi: int) -> str:
    """0 <= raw <= hi, an i1."""
    lo = b("arith.constant 0 : index", "k")
    top = b(f"arith.constant {hi} : index", "k")
    return b(f"arith.andi {b(f'arith.cmpi sge, {raw}, {lo} : index')}, "
             f"{b(f'arith.cmpi sle, {raw}, {top} : index')} : i1")


def _all(b, flags: List[str]) -> Optional[str]:
    acc = None
    for f in flags:
        acc = f if acc is None else b(f"arith.andi {acc}, {f} : i1")
    return acc


def gather(t, eqn) -> None:
    e = t.e
    _check(t, eqn)
    operand, indices = (t.read(v) for v in eqn.invars)
    shape, et = t.out_of(eqn)
    offsets, collapsed, starts, obatch, ibatch = _gather_dims(eqn)
    sizes = [int(s) for s in eqn.params["slice_sizes"]]
    rank, n = len(operand.shape), len(shape)
    fill = _mode(eqn) == "FILL_OR_DROP"
    # The result's batch positions, in order: indices dims 0, 1, ...
    batch_pos = [p for p in range(n) if p not in offsets]
    # The operand's window dims, in order: the result's offset dims.
    window = [d for d in range(rank) if d not in collapsed and d not in obatch]
    ins, maps = _components(indices, n, [f"d{p}" for p in batch_pos])
    out_map = _map(n, [f"d{p}" for p in range(n)])

    def body(args, b):
        raws, inside = {}, []
        for c, d in enumerate(starts):
            raws[d] = b(f"arith.index_cast {args[c]} : {indices.et} to "
                        "index")
            if fill:
                inside.append(_in_range(b, raws[d], operand.shape[d] -
                                        sizes[d]))
        coords = []
        for d in range(rank):
            if d in obatch:
                p = batch_pos[ibatch[obatch.index(d)]]
                coords.append(b(f"linalg.index {p} : index"))
                continue
            at = None
            if d in raws:
                at = _clamp(b, raws[d], operand.shape[d] - sizes[d])
            if d in window:
                off = b(f"linalg.index {offsets[window.index(d)]} : index")
                at = off if at is None else \
                    b(f"arith.addi {at}, {off} : index")
            coords.append(at if at is not None else
                          b("arith.constant 0 : index", "k"))
        v = b(f"tensor.extract {operand.name}[{', '.join(coords)}] : "
              f"{operand.type}")
        ok = _all(b, inside)
        if ok is None:
            return v
        value = eqn.params.get("fill_value")
        if value is None:
            value = np.nan if et in ("f32", "f16", "bf16") else \
                -2 ** (int(et[1:]) - 1)
        return b.select(ok, v, b.const(value, et), et)
    t.write(eqn.outvars[0],
            e.generic(ins, maps, shape, et, out_map, ["parallel"] * n, body))


def scatter_add(t, eqn) -> None:
    e = t.e
    _check(t, eqn)
    operand, indices, updates = (t.read(v) for v in eqn.invars)
    shape, et = t.out_of(eqn)
    uwin, inserted, starts, obatch, ibatch = _scatter_dims(eqn)
    rank = len(shape)
    clip = _mode(eqn) == "CLIP"
    # The operand's window dims, in order: the updates' window dims.
    window = [d for d in range(rank) if d not in inserted and d not in obatch]
    wsize = {d: 1 for d in range(rank)}
    for d, p in zip(window, uwin):
        wsize[d] = updates.shape[p]
    # Each scatter dim of the indices (all but the last) is a loop: the
    # operand's loop where it is a batching dim, else a reduction loop.
    nscatter = len(indices.shape) - 1
    reduced = [j for j in range(nscatter) if j not in ibatch]
    loops = rank + len(reduced)
    var = {j: (f"d{obatch[ibatch.index(j)]}" if j in ibatch else
               f"d{rank + reduced.index(j)}") for j in range(nscatter)}
    ins, maps = _components(indices, loops, [var[j] for j in
                                             range(nscatter)])
    upos = [p for p in range(len(updates.shape)) if p not in uwin]
    # The updates through a map where every window is whole and starts at
    # 0 (an embedding's rows, take_along_axis's and top_k's elements):
    # else read with tensor.extract at the element's place in its window.
    affine = all(d not in starts and wsize[d] == shape[d] for d in window)
    if affine:
        coords = [None] * len(updates.shape)
        for j, p in enumerate(upos):
            coords[p] = var[j]
        for d, p in zip(window, uwin):
            coords[p] = f"d{d}"
        ins = ins + [updates]
        maps = maps + [_map(loops, coords)]
    out_map = _map(loops, [f"d{d}" for d in range(rank)])
    iters = ["parallel"] * rank + ["reduction"] * len(reduced)
    floats = et in ("f32", "f16", "bf16")

    def body(args, b):
        acc = args[-1]
        idx = {}

        def index(d):
            if d not in idx:
                idx[d] = b(f"linalg.index {d} : index")
            return idx[d]
        raws, ok, hit, start = {}, [], [], {}
        for c, d in enumerate(starts):
            raw = b(f"arith.index_cast {args[c]} : {indices.et} to index")
            hi = shape[d] - wsize[d]
            if clip:
                start[d] = _clamp(b, raw, hi)
            else:
                ok.append(_in_range(b, raw, hi))
                start[d] = raw
        ucoords = [None] * len(updates.shape)
        for j, p in enumerate(upos):
            ucoords[p] = index(int(var[j][1:]))
        for d in range(rank):
            if d in obatch:
                continue
            o = index(d)
            if d in start and d not in window:
                # An inserted dim: the element is the one the index names.
                hit.append(b(f"arith.cmpi eq, {o}, {start[d]} : index"))
                continue
            if d not in window:
                # An inserted dim no index names: its start is 0.
                zero = b("arith.constant 0 : index", "k")
                hit.append(b(f"arith.cmpi eq, {o}, {zero} : index"))
                continue
            w = o if d not in start else \
                b(f"arith.subi {o}, {start[d]} : index")
            if d in start or wsize[d] < shape[d]:
                hit.append(_in_range(b, w, wsize[d] - 1))
            if not affine:
                ucoords[uwin[window.index(d)]] = _clamp(b, w, wsize[d] - 1)
        if affine:
            u = args[len(starts)]
        else:
            u = b(f"tensor.extract {updates.name}[{', '.join(ucoords)}] : "
                  f"{updates.type}")
        if floats:
            s = b.from_f32(b(f"arith.addf {b.to_f32(acc, et)}, "
                             f"{b.to_f32(u, et)} : f32"), et)
        elif et == "i1":
            s = b(f"arith.ori {acc}, {u} : i1")
        else:
            s = b(f"arith.addi {acc}, {u} : {et}")
        take = _all(b, ok + hit)
        return s if take is None else b.select(take, s, acc, et)
    t.write(eqn.outvars[0],
            e.generic(ins, maps, shape, et, out_map, iters, body,
                      init=operand.name))
