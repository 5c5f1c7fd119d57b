"""The importer's text parses (issue 51, item 5): forms real model code
writes that once gave MLIR the compiler could not parse, each inside a
jax.shard_map against jax.jit, and a parse error of the importer's text
traced back to the primitive and the user's line that wrote it."""

import numpy as np
import pytest

from conftest import check_against_jit, require_jax

jax = require_jax()

import jax.numpy as jnp  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

ojax = pytest.importorskip("overlap.jax")
from overlap import compiler  # noqa: E402
from overlap.jax import _translate  # noqa: E402

pytestmark = pytest.mark.usefixtures("native_libraries")


def _rand(*shape, seed=0, low=-2.0, high=2.0):
    return np.random.default_rng(seed).uniform(low, high, shape).astype(
        np.float32)


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16])
def test_float_to_a_traced_integer_power(mesh, dtype):
    """optax.adam's bias correction `1 - b1 ** count`, count an int32
    traced from the inputs: lax.pow of a float and an integer (JAX
    converts the exponent to the base's type). Exponents 0 to 12 and
    negative ones, bases of both signs."""
    def body(x, c):
        count = (c * 4.0).astype(jnp.int32)  # -8 .. 12
        bias = 1.0 - jnp.asarray(0.9, x.dtype) ** count
        return x ** count + bias, (x * 0 + 0.999) ** count[0, 0]

    f = jax.shard_map(body, mesh=mesh, in_specs=(P("tp"), P("tp")),
                      out_specs=(P("tp"), P("tp")))
    x = jnp.asarray(_rand(16, 8, seed=1, low=-1.5, high=1.5), dtype)
    c = jnp.asarray(_rand(16, 8, seed=2, low=-2.0, high=3.0), dtype)
    text = ojax.lower(f, x, c)
    assert "math.powf" in text
    tol = 1e-6 if dtype == jnp.float32 else 2.0 ** -7
    res = ojax.run(f, x, c, strategy="none")
    want = jax.jit(f)(x, c)
    for got, ref in zip(res.outputs, want):
        got = np.asarray(got, np.float32)
        ref = np.asarray(ref, np.float32)
        assert np.isfinite(ref).any()
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("shape", [(8, 8), (2, 4, 4)])
def test_a_captured_boolean_mask_of_rank_two_or_more(mesh, shape):
    """A causal mask built outside the model and closed over
    (`jnp.tril(jnp.ones((S, S), bool))`), and a rank-3 one: a dense
    literal of the mask's shape, not a flat list."""
    mask = jnp.tril(jnp.ones(shape[-2:], bool))
    mask = jnp.broadcast_to(mask, shape) if len(shape) == 3 else mask
    if len(shape) == 3:
        mask = mask.at[1].set(~mask[1])  # not the same in every slice

    def body(x):
        return jnp.where(mask, x, -1e9)

    spec = P(None, "tp") if len(shape) == 3 else P("tp")
    full = (shape[0], 4 * shape[1]) + shape[2:] if len(shape) == 3 \
        else (4 * shape[0], shape[1])
    f = jax.shard_map(body, mesh=mesh, in_specs=(spec,), out_specs=spec)
    x = _rand(*full, seed=3)
    text = ojax.lower(f, x)
    assert "tensor<" + "x".join(map(str, shape)) + "xi1>" in text
    res = check_against_jit(f, x, rtol=0, atol=0)
    assert (res.outputs[0] == -1e9).any() and (res.outputs[0] != -1e9).any()


def _misprinted_max(mesh, monkeypatch):
    """A shard_map whose `max` the importer is made to write as an op that
    does not exist."""
    monkeypatch.setitem(_translate._BINARY_F, "max", "arith.no_such_op")

    def body(x):
        return jnp.maximum(x, 0.5) * 2.0

    return jax.shard_map(body, mesh=mesh, in_specs=(P("tp"),),
                         out_specs=P("tp"))


def test_a_parse_error_names_the_primitive_and_the_line(mesh, monkeypatch):
    """Were the importer to write text that does not parse, the error says
    it is the importer's, with the line of the text, the primitive that
    wrote it and the user's line (not only the compiler's parse error)."""
    f = _misprinted_max(mesh, monkeypatch)
    with pytest.raises(compiler.CompileError) as err:
        ojax.run(f, _rand(16, 4), strategy="none")
    message = str(err.value)
    assert "the importer wrote MLIR that does not parse" in message
    assert "arith.no_such_op" in message
    assert "the primitive 'max'" in message
    assert "test_jax_imported_text.py" in message


def test_jit_gives_the_same_parse_error(mesh, monkeypatch):
    """overlap.jax.jit compiles through its own path (a layer per shape):
    it says the same, not only the compiler's parse error."""
    f = _misprinted_max(mesh, monkeypatch)
    with pytest.raises(compiler.CompileError) as err:
        ojax.jit(f, strategy="none")(_rand(16, 4))
    message = str(err.value)
    assert "the importer wrote MLIR that does not parse" in message
    assert "the primitive 'max'" in message
