"""overlap.jax.jit's backward: the per-device vjp of the shard_map's body,
in the same shard_map, as a layer of its own (compiled by Overlap like
the forward). Only float arguments and results are differentiated;
integer and boolean ones have float0 cotangents, as JAX gives them."""

from __future__ import annotations

import numpy as np


def pspec(spec):
    from jax.sharding import PartitionSpec as P
    return P(*[None if not names else
               (names[0] if len(names) == 1 else tuple(names))
               for names in spec])


def backward_function(low, wrt, through):
    """The backward of `low` as a shard_map layer: takes every
    parameter and the cotangents of the results `through` (the float
    ones), returns the cotangents of the parameters `wrt` (the float
    ones)."""
    import jax
    from jax.extend import core as jcore
    eqn = low.eqn
    n_params = len(low.param_args)
    run_body = jcore.jaxpr_as_fun(jcore.ClosedJaxpr(low.body,
                                                    low.body_consts))

    def body_fun(*params):
        it = iter(params)
        vals = [next(it) if kind == "arg" else what
                for kind, what in low.operands]
        outs = run_body(*vals)
        return [outs[k] for k in through]

    check_vma = eqn.params.get("check_vma", True)

    def unmentioned(spec):
        named = {a for names in spec for a in names}
        return tuple(a for a in low.axes if a not in named)

    def size(axes):
        return int(np.prod([low.sizes[low.axes.index(a)] for a in axes]))

    def per_device(*xs):
        params, cts = list(xs[:n_params]), list(xs[n_params:])

        def of_floats(*floats):
            for j, v in zip(wrt, floats):
                params[j] = v
            return body_fun(*params)

        if not check_vma:
            # As JAX's transpose of a shard_map without check_vma: a
            # replicated result's cotangent is shared among the devices
            # it is replicated on, and a replicated argument's summed.
            cts = [ct / size(unmentioned(low.out_specs[k]))
                   if unmentioned(low.out_specs[k]) else ct
                   for k, ct in zip(through, cts)]
        _, vjp = jax.vjp(of_floats, *[params[j] for j in wrt])
        grads = list(vjp(cts))
        if not check_vma:
            grads = [jax.lax.psum(g, unmentioned(low.in_specs[j]))
                     if unmentioned(low.in_specs[j]) else g
                     for j, g in zip(wrt, grads)]
        return tuple(grads)

    def backward(*xs):
        return jax.shard_map(
            per_device, mesh=low.mesh,
            in_specs=tuple(pspec(s) for s in
                           list(low.in_specs) +
                           [low.out_specs[k] for k in through]),
            out_specs=tuple(pspec(low.in_specs[j]) for j in wrt),
            check_vma=check_vma)(*xs)

    backward.__name__ = low.entry + "_backward"
    return backward


def differentiable(dtype) -> bool:
    """Whether arrays of `dtype` have cotangents of their own (floats);
    integers and booleans have float0 ones."""
    if dtype is None:
        return False
    # jax's issubdtype knows its extended floats (bfloat16, float8):
    # numpy's calls bfloat16 a non-number, which gave a bf16 weight a float0
    # gradient.
    import jax
    try:
        return bool(jax.dtypes.issubdtype(np.dtype(dtype), np.inexact))
    except TypeError:
        return False


def zero_cotangent(x):
    """A zero cotangent for the leaf `x`: float0 for an integer or boolean
    one, as JAX's custom_vjp takes it."""
    import jax
    import jax.numpy as jnp
    if differentiable(x.dtype):
        return jnp.zeros_like(x)
    return np.zeros(np.shape(x), dtype=jax.dtypes.float0)
