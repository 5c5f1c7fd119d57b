"""overlap.jax.jit: an Overlap-compiled layer called from inside a user's
JAX program (XLA FFI; docs/jax.md, "Calling Overlap from JAX"), checked
against pure JAX on 4 CPU devices (the oracle): a model of plain JAX around
the layer inside one jax.jit, called again and again with new inputs; one
compile per signature; jax.grad through the layer; the layers of
examples/jax/layers.py; bad uses with errors that say what to change.
Tolerances as test_jax.py's."""

import os
import sys
import tempfile

import numpy as np
import pytest

from conftest import require_jax, ROOT

jax = require_jax()

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import Mesh, PartitionSpec as P  # noqa: E402

sys.path.insert(0, str(ROOT / "examples" / "jax"))
import layers  # noqa: E402

ojax = pytest.importorskip("overlap.jax")

# The FFI handler is built once per process into a fresh directory, not the
# user's cache.
os.environ.setdefault("OVERLAP_JAX_FFI_CACHE",
                      tempfile.mkdtemp(prefix="overlap-jax-ffi-test-"))

TOLERANCE = {np.dtype(np.float32): 1e-4, np.dtype(jnp.bfloat16): 2.0 ** -6}

pytestmark = pytest.mark.usefixtures("native_libraries")


def mlp(mesh):
    """All-gather + matmul, then matmul + reduce-scatter (sequence
    parallel), f32."""
    def body(x, w1, w2):
        h = lax.all_gather(x, "tp", axis=0, tiled=True) @ w1
        y = jax.nn.gelu(h) @ w2
        return lax.psum_scatter(y, "tp", scatter_dimension=0, tiled=True)
    return jax.shard_map(body, mesh=mesh,
                         in_specs=(P("tp", None), P(None, "tp"),
                                   P("tp", None)),
                         out_specs=P("tp", None))


def rand(rng, shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def err(got, want):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))


def test_model_around_the_layer_inside_one_jit(mesh):
    f = mlp(mesh)
    layer = ojax.jit(f, strategy="uniform:2")
    rng = np.random.default_rng(0)
    w1, w2 = rand(rng, (32, 64), 0.2), rand(rng, (64, 32), 0.2)
    bias = rand(rng, (32,))

    def model(layer_fn, x, w1, w2):
        h = layer_fn(jnp.tanh(x) + bias, w1, w2)
        return jnp.sum(jax.nn.relu(h) * 3.0, axis=1) - h[:, 0]

    ours = jax.jit(lambda x, w1, w2: model(layer, x, w1, w2))
    theirs = jax.jit(lambda x, w1, w2: model(f, x, w1, w2))
    for call in range(4):
        x = rand(rng, (64, 32))
        w1 = w1 * 1.1
        assert err(ours(x, w1, w2), theirs(x, w1, w2)) < 1e-4, call
    # One compile for the one signature; one launch of the host ranks per
    # call (the four devices' calls of a step met and ran once).
    assert layer.compiles == 1
    assert layer.launches() == 4
    assert [p["tiles"] for p in layer.plans] == [[32, 32], [32, 32]]
    # Outside jax.jit too, and a new signature compiles once more.
    x = rand(rng, (64, 32))
    assert err(layer(x, w1, w2), f(x, w1, w2)) < 1e-4
    assert layer.compiles == 1
    x2 = rand(rng, (128, 32))
    assert err(layer(x2, w1, w2), f(x2, w1, w2)) < 1e-4
    assert layer.compiles == 2
    assert layer(x2, w1, w2).shape == (128, 32) and layer.compiles == 2


def test_the_same_layer_twice_and_two_layers_in_one_step(mesh):
    f = mlp(mesh)
    a, b = ojax.jit(f, strategy="uniform:2"), ojax.jit(f, strategy="none")
    rng = np.random.default_rng(1)
    x = rand(rng, (64, 32))
    w1, w2 = rand(rng, (32, 64), 0.2), rand(rng, (64, 32), 0.2)

    def step(g, h):
        return lambda x: h(g(x, w1, w2) + x, w1, w2) + g(x * 2, w1, w2)

    got = jax.jit(step(a, b))(x)
    got2 = jax.jit(step(a, a))(x)
    want = jax.jit(step(f, f))(x)
    assert err(got, want) < 1e-4
    assert err(got2, want) < 1e-4
    assert a.launches() == 2 + 3 and b.launches() == 1


def test_grad_through_the_layer(mesh):
    f = mlp(mesh)
    layer = ojax.jit(f, strategy="uniform:2")
    rng = np.random.default_rng(2)
    x = rand(rng, (64, 32))
    w1, w2 = rand(rng, (32, 64), 0.2), rand(rng, (64, 32), 0.2)

    def loss(fn):
        return lambda x, w1, w2: jnp.mean(jnp.tanh(fn(x, w1, w2)) ** 2)

    ours = jax.jit(jax.grad(loss(layer), argnums=(0, 1, 2)))(x, w1, w2)
    theirs = jax.grad(loss(f), argnums=(0, 1, 2))(x, w1, w2)
    for got, want in zip(ours, theirs):
        assert got.shape == want.shape
        assert err(got, want) < 1e-4
    # The backward is itself an Overlap program: a shard_map imported and
    # compiled the same way, with its own plans.
    backward = layer.backward
    assert backward is not None and backward.compiles == 1
    assert any(len(p["tiles"]) >= 2 for p in backward.plans)
    # value_and_grad in a training-like loop: compiled once each.
    step = jax.jit(jax.value_and_grad(loss(layer), argnums=1))
    for _ in range(3):
        value, g = step(x, w1, w2)
        w1 = w1 - 0.1 * g
    assert layer.compiles == 1 and backward.compiles == 1


@pytest.mark.parametrize("name", ["megatron_mlp", "sequence_parallel_mlp",
                                  "gated_mlp_rmsnorm", "attention"])
def test_example_layers_called_from_jit(mesh, name):
    f, args, dtype = layers.LAYERS[name](mesh)
    layer = ojax.jit(f, strategy="uniform:2")
    want = jax.jit(f)(*args)
    got = jax.jit(layer)(*args)
    want = want if isinstance(want, (list, tuple)) else [want]
    got = got if isinstance(got, (list, tuple)) else [got]
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        assert err(g, w) < TOLERANCE[np.dtype(dtype)], name
    assert layer.compiles == 1
    assert any(len(p["tiles"]) >= 2 for p in layer.plans), layer.plans


def test_vmap_and_a_smaller_mesh(mesh):
    # Under jax.vmap every device calls the layer once per batch element,
    # in the same order: one step each.
    f = jax.shard_map(lambda x: lax.psum(x * 2.0, "tp"), mesh=mesh,
                      in_specs=P("tp"), out_specs=P())
    layer = ojax.jit(f)
    xs = np.arange(24, dtype=np.float32).reshape(3, 8)
    assert err(jax.vmap(layer)(xs), jax.vmap(f)(xs)) == 0
    assert layer.launches() == 3
    # A mesh of 2 of the 4 devices.
    small = Mesh(np.array(jax.devices()[:2]), ("y",))
    g = jax.shard_map(lambda x: lax.psum(x, "y"), mesh=small,
                      in_specs=P("y"), out_specs=P())
    assert err(ojax.jit(g)(xs[0]), g(xs[0])) == 0


def test_bad_uses_say_what_to_change(mesh):
    f = mlp(mesh)
    layer = ojax.jit(f)
    rng = np.random.default_rng(3)
    w1, w2 = rand(rng, (32, 64)), rand(rng, (64, 32))
    # A shape the mesh does not divide: JAX's own shard_map error.
    with pytest.raises(Exception, match="4 does not evenly divide 62"):
        jax.jit(layer)(rand(rng, (62, 32)), w1, w2)
    # Unsigned arrays are not what a compiled layer takes (the importer's
    # integer ops are the signed ones).
    g = jax.shard_map(lambda x: lax.psum(x, "tp"), mesh=mesh,
                      in_specs=P("tp"), out_specs=P())
    with pytest.raises(ojax.UnsupportedError, match="uint32"):
        ojax.jit(g)(np.arange(8, dtype=np.uint32))
    # Something that is not a shard_map layer.
    with pytest.raises(ojax.UnsupportedError, match="one jax.shard_map"):
        ojax.jit(lambda x: x * 2)(np.ones(4, np.float32))
    with pytest.raises(ValueError, match="timeout_ms"):
        ojax.jit(f, timeout_ms=0)


def test_the_gpu_path_says_no_device_here(tmp_path):
    # The GPU half (one process and GPU per rank) is compiled and reachable
    # through the C API; on a machine without a GPU it stops there, saying
    # so (status 3), before any NCCL bootstrap.
    import ctypes
    from overlap import native
    api = native.host_api()
    messages = ctypes.c_void_p()
    uid = (ctypes.c_uint8 * 128)()
    status = api.overlapCudaUniqueId(uid, ctypes.byref(messages))
    text = ctypes.string_at(messages.value).decode() if messages.value else ""
    api.overlapFree(messages)
    if status == 0:
        pytest.skip("this machine has a CUDA device")
    assert status == 3
    assert "CUDA" in text
    code = ctypes.c_int()
    layer = api.overlapDeviceLayerCreate(
        str(tmp_path / "missing.so").encode(), None, 1, 0, 0, 0, 0,
        ctypes.byref(code), ctypes.byref(messages))
    text = ctypes.string_at(messages.value).decode() if messages.value else ""
    api.overlapFree(messages)
    assert not layer and code.value == 3, text


def test_backward_plans_and_a_short_printed_run(mesh):
    """issue 52 item 9: the backward's plans are public (`layer.backward`),
    and printing a run is a summary, not the program and every array."""
    f = mlp(mesh)
    layer = ojax.jit(f, strategy="uniform:2")
    assert layer.backward is None
    rng = np.random.default_rng(3)
    x = rand(rng, (64, 32))
    w1, w2 = rand(rng, (32, 64), 0.2), rand(rng, (64, 32), 0.2)
    jax.grad(lambda w1: jnp.sum(layer(x, w1, w2) ** 2))(w1)
    assert layer.backward is not None and layer.backward.plans
    assert all(len(p["tiles"]) == 2 for p in layer.backward.plans)
    res = ojax.run(f, x, w1, w2, strategy="uniform:2")
    text = repr(res)
    assert len(text) < 400, text
    assert "plans=2" in text and "float32[64, 32]" in text, text
