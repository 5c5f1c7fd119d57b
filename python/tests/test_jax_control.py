"""Loops and branches of a shard_map body, translated as scf ops
(overlap/jax/_control.py) and run on host ranks against jax.jit on 4 CPU
devices: lax.scan (carries, stacked inputs and outputs, reverse, consts),
fori_loop with static and traced bounds, while_loop, cond and switch (an
index out of range runs the last branch), collectives inside loop bodies
and branches, and a scan over layers whose body is compiled once with its
matmul + all-reduce tiled and overlapped in each iteration."""

import numpy as np
import pytest

from conftest import check_against_jit as _check, require_jax

jax = require_jax()

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

ojax = pytest.importorskip("overlap.jax")

pytestmark = pytest.mark.usefixtures("native_libraries")


def _rand(*shape, seed=0, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) *
            scale).astype(np.float32)


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_with_consts_stacked_inputs_and_outputs(mesh, reverse):
    def body(x, xs, w):
        def step(c, xt):
            c = jnp.tanh(c @ w + xt)
            return c, c * 2.0 - xt
        return lax.scan(step, x, xs, reverse=reverse)

    f = jax.shard_map(body, mesh=mesh,
                      in_specs=(P("tp"), P(None, "tp"), P()),
                      out_specs=(P("tp"), P(None, "tp")))
    res = _check(f, _rand(8, 4), _rand(3, 8, 4, seed=1),
                 _rand(4, 4, seed=2, scale=0.5))
    assert res.mlir.count("scf.for") == 1


def test_scan_over_layers_compiles_its_body_once_and_overlaps(mesh):
    """A stack of 4 MLP layers: one scf.for, one copy of each contraction,
    the matmul + all-reduce of each step planned and split."""
    def body(x, w1, w2):
        def layer(h, w):
            a, b = w
            return lax.psum(jnp.tanh(h @ a) @ b, "tp") + h, None
        return lax.scan(layer, x, (w1, w2))[0]

    f = jax.shard_map(body, mesh=mesh,
                      in_specs=(P(), P(None, None, "tp"), P(None, "tp", None)),
                      out_specs=P())
    args = (_rand(256, 64, scale=0.1), _rand(4, 64, 128, seed=1, scale=0.1),
            _rand(4, 128, 64, seed=2, scale=0.1))
    res = _check(f, *args, strategy="uniform:2", atol=1e-5)
    assert res.mlir.count("scf.for") == 1
    assert res.mlir.count('"reduction"') == 2  # one per contraction
    assert len(res.plans) == 1 and len(res.plans[0]["tiles"]) == 2, res.plans


def test_fori_loop_static_and_traced_bounds(mesh):
    def body(x):
        a = lax.fori_loop(0, 3, lambda i, c: c * 0.5 + i.astype(c.dtype), x)
        n = (jnp.sum(x) > 1e30).astype(jnp.int32) + 2  # traced: a while
        b = lax.fori_loop(0, n, lambda i, c: jnp.sin(c) + 1.0, a)
        return lax.psum(b, "tp")

    f = jax.shard_map(body, mesh=mesh, in_specs=P("tp"), out_specs=P())
    res = _check(f, _rand(8, 4))
    assert "scf.while" in res.mlir and "scf.for" in res.mlir


def test_while_loop_with_a_data_dependent_trip_count(mesh):
    """Each rank runs its own number of steps (no collective inside)."""
    def body(x):
        def cond(s):
            return jnp.max(jnp.abs(s[1])) < 100.0

        def step(s):
            return s[0] + 1, s[1] * 3.0 + 0.25
        i, v = lax.while_loop(cond, step, (jnp.int32(0), x))
        return v + i.astype(v.dtype)

    f = jax.shard_map(body, mesh=mesh, in_specs=P("tp"), out_specs=P("tp"))
    x = _rand(8, 4)
    x[:2] *= 30.0  # the first rank stops sooner
    _check(f, x)


def test_cond_and_switch(mesh):
    def body(x):
        a = lax.cond(jnp.sum(x) > 0, lambda v: v + 1.0, lambda v: v * -2.0, x)
        # lax.switch clamps its index into range: 5 and -3 run the last
        # and the first branch.
        branches = [lambda v: v, lambda v: jnp.exp(v), lambda v: v - 7.0]
        b = lax.switch(jnp.int32(5), branches, a)
        c = lax.switch(jnp.int32(-3), branches, b)
        k = (jnp.max(x) > 0.5).astype(jnp.int32) + (jnp.min(x) > -0.5)
        return lax.switch(k, branches, c)

    f = jax.shard_map(body, mesh=mesh, in_specs=P("tp"), out_specs=P("tp"))
    _check(f, _rand(8, 4, seed=5))


def test_cond_without_operands_and_with_collectives(mesh):
    """Branches that take no operand, and a mesh-wide predicate (a psum)
    whose branches hold collectives, which every rank then runs."""
    def body(x):
        p = lax.psum(jnp.sum(x), "tp") > 0
        c = lax.cond(p, lambda: jnp.float32(2.0), lambda: jnp.float32(-1.0))
        return lax.cond(p, lambda v: lax.psum(v, "tp"),
                        lambda v: lax.pmax(v, "tp"), x * c)

    f = jax.shard_map(body, mesh=mesh, in_specs=P("tp"), out_specs=P())
    _check(f, _rand(8, 4, seed=6))
    _check(f, -np.abs(_rand(8, 4, seed=7)))


def test_loops_nest(mesh):
    def body(x, xs):
        def step(c, xt):
            c = lax.cond(jnp.sum(c) > 0, lambda v: v * 0.5,
                         lambda v: lax.fori_loop(0, 2, lambda i, u: u + 1.0,
                                                 v), c + xt)
            return c, None
        return lax.scan(step, x, xs)[0]

    f = jax.shard_map(body, mesh=mesh, in_specs=(P("tp"), P(None, "tp")),
                      out_specs=P("tp"))
    _check(f, _rand(8, 4), _rand(5, 8, 4, seed=3))
