"""ppermute, dynamic_slice, dynamic_update_slice and the list of unknown
primitives (overlap/jax/_dynamic.py), against jax.jit on 4 CPU devices:
the hand-written collective matmul of JAX's shard_map notebook kind (a
fori_loop of ppermute and dynamic_update_slice), a permutation that leaves
a rank without a sender (zeros, as JAX), start indices clamped as XLA
clamps them, a 2-D mesh. Before, each was refused naming only the first
unknown primitive."""

import numpy as np
import pytest

from conftest import check_against_jit as _check, cpu_mesh, require_jax

jax = require_jax()

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import overlap  # noqa: E402

ojax = pytest.importorskip("overlap.jax")

pytestmark = pytest.mark.usefixtures("native_libraries")


@pytest.fixture(scope="module")
def mesh():
    return cpu_mesh("x")


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(
        np.float32)


def test_collective_matmul_by_ppermute(mesh, tmp_path):
    """All-gather matmul written by hand: each step multiplies the block it
    holds, writes it where it belongs and passes it on."""
    def body(lhs, rhs):
        size = 4
        idx = lax.axis_index("x")
        rows = lhs.shape[0]
        out = jnp.zeros((rows * size, rhs.shape[1]), lhs.dtype)

        def step(i, carry):
            out, block = carry
            out = lax.dynamic_update_slice(
                out, block @ rhs, (((idx + i) % size) * rows, 0))
            block = lax.ppermute(block, "x",
                                 [(j, (j - 1) % size) for j in range(size)])
            return out, block
        return lax.fori_loop(0, size, step, (out, lhs))[0]

    f = jax.shard_map(body, mesh=mesh, in_specs=(P("x"), P(None, "x")),
                      out_specs=P(None, "x"), check_vma=False)
    lhs, rhs = _rand(16, 8), _rand(8, 16, seed=1)
    res = _check(f, lhs, rhs)
    np.testing.assert_allclose(res.outputs[0], lhs @ rhs, rtol=1e-5,
                               atol=1e-5)
    # Both targets: the loop's indices are staged from device memory.
    overlap.compile(res.mlir, target="cuda", output=tmp_path / "cm.so")


def test_ppermute_partial_and_2d(mesh):
    def body(x):
        # Ranks 1 and 3 receive nothing: zeros.
        return lax.ppermute(x, "x", perm=[(0, 2), (2, 0), (3, 3)])

    f = jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P("x"),
                      check_vma=False)
    res = _check(f, _rand(8, 4))
    assert not res.outputs[0][2:4].any()

    mesh2 = cpu_mesh("a", "b", shape=(2, 2))
    g = jax.shard_map(
        lambda x: lax.ppermute(x, ("b", "a"), [(k, (k + 1) % 4)
                                                for k in range(4)]),
        mesh=mesh2, in_specs=P(("a", "b")), out_specs=P(("a", "b")),
        check_vma=False)
    _check(g, _rand(8, 4, seed=2))


def test_dynamic_slice_clamps_and_update(mesh):
    def body(x):
        i = lax.axis_index("x")
        # i*3 - 1 is -1 on rank 0 and 8 on rank 3: clamped into [0, 2].
        s = lax.dynamic_slice(x, (i * 3 - 1, 0), (2, 4))
        u = lax.dynamic_update_slice(x, s * 10.0, (i + 1, 1))
        return jnp.concatenate([s, s], 0), u

    f = jax.shard_map(body, mesh=mesh, in_specs=P("x"),
                      out_specs=(P("x"), P("x")), check_vma=False)
    _check(f, _rand(16, 8, seed=3))


def test_every_unknown_primitive_is_listed(mesh):
    def body(x):
        a = jnp.round(x)
        b = jnp.sort(x, axis=1)
        return a + b + jnp.floor(x)

    f = jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
    with pytest.raises(ojax.UnsupportedError) as err:
        ojax.lower(f, _rand(8, 4))
    text = str(err.value)
    assert "3 primitives" in text, text
    for name in ("round", "sort", "floor"):
        assert f"'{name}'" in text, text


def test_cumulative_and_arg_reductions(mesh):
    """cumsum, cumprod, cummax, cummin (either direction, f32 and int32),
    argmax and argmin: the first NaN wins, ties keep the first index."""
    def body(x):
        a = (jnp.cumsum(x, 0) + lax.cumprod(x * 0.1 + 1, 1, reverse=True) +
             lax.cummax(x, 0) - lax.cummin(x, 1, reverse=True))
        b = jnp.argmax(x, -1).astype(jnp.float32) + \
            jnp.argmin(x, 0).astype(jnp.float32).sum()
        i = (x * 3).astype(jnp.int32)
        c = jnp.cumsum(i, 0).astype(jnp.float32) + \
            jnp.argmax(i, 0).astype(jnp.float32).sum()
        return a, b, c

    f = jax.shard_map(body, mesh=mesh, in_specs=P("x"),
                      out_specs=(P("x"), P("x"), P("x")))
    x = _rand(16, 6, seed=5)
    x[3, 2] = np.nan
    x[5, :] = 1.0
    x[9, 1] = x[9, 4] = np.nan
    res = ojax.run(f, x, strategy="none")
    for got, want in zip(res.outputs, jax.jit(f)(x)):
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-5,
                                   atol=1e-5)


def test_gather_takes_rows_clamped_or_filled(mesh):
    """jnp.take along axis 0 (an embedding lookup, indices out of range
    giving NaN: JAX's default fill) and along axis 1 in clip mode."""
    def body(idsf, emb):
        ids = idsf.astype(jnp.int32) - lax.axis_index("x") * emb.shape[0]
        return (jnp.take(emb, ids, axis=0),
                jnp.take(emb, ids % 4 + 2, axis=1, mode="clip"))

    f = jax.shard_map(body, mesh=mesh, in_specs=(P(), P("x")),
                      out_specs=(P("x"), P("x")), check_vma=False)
    ids = np.random.default_rng(3).integers(0, 32, size=(8,)).astype(
        np.float32)
    _check_nan(f, ids, _rand(32, 4, seed=6))


def _check_nan(f, *args):
    res = ojax.run(f, *args, strategy="none")
    for got, want in zip(res.outputs, jax.jit(f)(*args)):
        np.testing.assert_array_equal(got, np.asarray(want))
