"""Loops and branches of a jaxpr as ``scf`` ops on tensors.

JAX's ``scan`` (and ``fori_loop`` with static bounds, which it lowers to a
scan) becomes one ``scf.for`` whose body is translated once: the carries
are its iteration arguments, each ``xs`` operand is sliced at the step's
index and each stacked output is written there (``reverse`` walks the
indices backwards, stacking in the original order, as JAX defines it).
``while`` (and ``fori_loop`` with traced bounds) becomes ``scf.while``, its
condition a 0-d boolean read with ``tensor.extract``. ``cond`` (``lax.cond``,
``lax.switch``) becomes ``scf.index_switch``; an index out of range runs the
last branch, as XLA's conditional does.

The ops of a body go into the loop's region; collectives in it stay there,
so each iteration's tiles overlap among themselves (the scheduling and the
runtime lowering handle the regions of scf ops).
"""

from __future__ import annotations

from typing import List, Sequence

from ._emit import Value, tensor_type


def _results(e, name: str, values: Sequence[Value]) -> List[Value]:
    """The results of a region op named `name` as Values like `values`."""
    if len(values) == 1:
        return [Value(name, values[0].shape, values[0].et)]
    return [Value(f"{name}#{i}", v.shape, v.et) for i, v in enumerate(values)]


def _lhs(name: str, n: int) -> str:
    if n == 0:
        return ""
    return f"{name} = " if n == 1 else f"{name}:{n} = "


def _body(t, closed, args: Sequence[Value]) -> List[Value]:
    jaxpr = getattr(closed, "jaxpr", closed)
    consts = getattr(closed, "consts", [])
    return t.run(jaxpr, consts, list(args))


def _yield(e, values: Sequence[Value], op: str = "scf.yield") -> None:
    if values:
        e.lines.append(f"    {op} " + ", ".join(v.name for v in values) +
                       " : " + ", ".join(v.type for v in values))
    else:
        e.lines.append(f"    {op}")


def _block_args(e, like: Sequence[Value], hint: str) -> List[Value]:
    return [Value(e.fresh(hint), v.shape, v.et) for v in like]


def scan(t, eqn) -> None:
    e = t.e
    p = eqn.params
    n_consts, n_carry = int(p["num_consts"]), int(p["num_carry"])
    length, reverse = int(p["length"]), bool(p["reverse"])
    ops = [t.read(v) for v in eqn.invars]
    consts = ops[:n_consts]
    init = ops[n_consts:n_consts + n_carry]
    xs = ops[n_consts + n_carry:]
    ys_like = []
    for var in eqn.outvars[n_carry:]:
        shape, et = t.out_of(eqn, eqn.outvars.index(var))
        ys_like.append(Value("", shape, et))
    ys_init = [Value(e.empty(v.shape, v.et), v.shape, v.et) for v in ys_like]
    lo, hi, one = e.index(0), e.index(length), e.index(1)
    last = e.index(length - 1) if reverse else None
    iv = e.fresh("iv")
    carries = _block_args(e, init, "carry")
    stacks = _block_args(e, ys_init, "ys")
    loop = e.fresh("scan")
    iters = list(zip(carries + stacks, init + ys_init))
    e.lines.append(
        f"    {_lhs(loop, len(iters))}scf.for {iv} = {lo} to {hi} step {one}"
        + (" iter_args(" + ", ".join(f"{a.name} = {v.name}"
                                     for a, v in iters) + ") -> ("
           + ", ".join(v.type for _, v in iters) + ")" if iters else "")
        + " {")
    step = iv
    if reverse:
        step = e.fresh("step")
        e.op(f"{step} = arith.subi {last}, {iv} : index", loc=False)
    xs_now = []
    for x in xs:
        rest = x.shape[1:]
        part = e.fresh("x")
        offsets = ", ".join([step] + ["0"] * len(rest))
        sizes = ", ".join(str(d) for d in (1,) + rest)
        strides = ", ".join(["1"] * len(x.shape))
        one_t = tensor_type((1,) + rest, x.et)
        e.op(f"{part} = tensor.extract_slice {x.name}[{offsets}] [{sizes}] "
             f"[{strides}] : {x.type} to {one_t}")
        xs_now.append(e.reshape(Value(part, (1,) + rest, x.et), rest))
    outs = _body(t, p["jaxpr"], consts + carries + xs_now)
    new_carries, ys = outs[:n_carry], outs[n_carry:]
    new_stacks = []
    for y, stack in zip(ys, stacks):
        y1 = e.reshape(y, (1,) + y.shape)
        name = e.fresh("ys")
        offsets = ", ".join([step] + ["0"] * len(y.shape))
        sizes = ", ".join(str(d) for d in y1.shape)
        strides = ", ".join(["1"] * len(y1.shape))
        e.op(f"{name} = tensor.insert_slice {y1.name} into {stack.name}"
             f"[{offsets}] [{sizes}] [{strides}] : {y1.type} into "
             f"{stack.type}")
        new_stacks.append(Value(name, stack.shape, stack.et))
    _yield(e, new_carries + new_stacks)
    e.lines.append("    }" + (" " + e.loc if e.loc else ""))
    for var, val in zip(eqn.outvars, _results(e, loop, init + ys_init)):
        t.write(var, val)


def while_(t, eqn) -> None:
    e = t.e
    p = eqn.params
    nc, nb = int(p["cond_nconsts"]), int(p["body_nconsts"])
    ops = [t.read(v) for v in eqn.invars]
    cond_consts, body_consts, init = ops[:nc], ops[nc:nc + nb], ops[nc + nb:]
    before = _block_args(e, init, "w")
    loop = e.fresh("while")
    types = ", ".join(v.type for v in init)
    e.lines.append(
        f"    {_lhs(loop, len(init))}scf.while ("
        + ", ".join(f"{a.name} = {v.name}" for a, v in zip(before, init))
        + f") : ({types}) -> ({types}) {{")
    pred, = _body(t, p["cond_jaxpr"], cond_consts + before)
    flag = e.scalar(pred)
    e.lines.append(f"    scf.condition({flag}) " +
                   ", ".join(a.name for a in before) +
                   (f" : {types}" if init else ""))
    after = _block_args(e, init, "b")
    e.lines.append("    } do {")
    e.lines.append("    ^bb0(" + ", ".join(f"{a.name}: {a.type}"
                                           for a in after) + "):")
    outs = _body(t, p["body_jaxpr"], body_consts + after)
    _yield(e, outs)
    e.lines.append("    }" + (" " + e.loc if e.loc else ""))
    for var, val in zip(eqn.outvars, _results(e, loop, init)):
        t.write(var, val)


def cond(t, eqn) -> None:
    e = t.e
    branches = eqn.params["branches"]
    index, *ops = (t.read(v) for v in eqn.invars)
    like = [Value("", *t.out_of(eqn, i)) for i in range(len(eqn.outvars))]
    which = e.scalar(index)
    if index.et == "i1":
        wide = e.fresh("p")
        e.op(f"{wide} = arith.extui {which} : i1 to i32")
        which, et = wide, "i32"
    else:
        et = index.et
    ix = e.fresh("p")
    e.op(f"{ix} = arith.index_cast {which} : {et} to index")
    name = e.fresh("cond")
    e.lines.append(f"    {_lhs(name, len(like))}scf.index_switch {ix}" +
                   (" -> " + ", ".join(v.type for v in like) if like else ""))
    for k, branch in enumerate(branches):
        # XLA: an index outside [0, N) runs branch N-1, the default.
        head = "default" if k == len(branches) - 1 else f"case {k}"
        e.lines.append(f"    {head} {{")
        _yield(e, _body(t, branch, ops))
        e.lines.append("    }")
    if e.loc:
        e.lines[-1] += " " + e.loc
    for var, val in zip(eqn.outvars, _results(e, name, like)):
        t.write(var, val)
