"""overlap.jax against JAX itself: each layer of examples/jax/layers.py is
a jax.shard_map that JAX runs on 4 CPU devices (the oracle) and Overlap
imports, compiles and runs on 4 host ranks.

Tolerances, relative to the largest magnitude of JAX's output:
- f32: 1e-4. Both sides compute in f32; they differ only in summation order
  and in math-library approximations (tanh, exp), a few f32 ulps.
- bf16: 2**-6, four bf16 ulps at the largest magnitude. Both accumulate
  contractions in f32 and round once, but a bf16 rounding of a value that
  lies near a rounding boundary can go either way when the f32 sums differ
  in their last bits, and one flip is 2**-8 of the value; an elementwise
  chain after it can carry a couple of such flips.

When OVERLAP_REQUIRE_JAX is set (scripts/test-python.sh sets it), a missing
jax is a failure, not a skip.
"""

import os
import sys

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
import overlap  # noqa: E402

TOLERANCE = {np.dtype(np.float32): 1e-4, np.dtype(jnp.bfloat16): 2.0 ** -6}
STRATEGIES = ["none", "uniform:2", "auto"]


pytestmark = pytest.mark.usefixtures("native_libraries")


def reference(f, args):
    out = jax.jit(f)(*args)
    return [np.asarray(o) for o in (out if isinstance(out, (list, tuple))
                                    else [out])]


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("layer", sorted(layers.LAYERS))
def test_layer_matches_jax(mesh, layer, strategy):
    f, args, dtype = layers.LAYERS[layer](mesh)
    want = reference(f, args)
    res = ojax.run(f, *args, strategy=strategy)
    assert len(res.outputs) == len(want)
    for got, ref in zip(res.outputs, want):
        assert got.shape == ref.shape and got.dtype == ref.dtype
        err = layers.max_error(got, ref)
        assert err <= TOLERANCE[np.dtype(dtype)], \
            f"{layer} ({strategy}): max error {err:.3g} relative to max |JAX|"
    # Every layer has a matmul beside a collective: it must be planned.
    assert res.plans, f"{layer}: no fused op was planned\n{res.mlir}"
    for plan in res.plans:
        assert set(plan) >= {"tiles", "strategy", "predicted_us", "serial_us"}
        assert all(isinstance(t, int) for t in plan["tiles"]), plan
        assert sum(plan["tiles"]) > 0
        if strategy == "uniform:2":
            assert len(plan["tiles"]) >= 2, plan
        if strategy == "none":
            assert len(plan["tiles"]) == 1, plan


def test_sequence_parallel_mlp_is_overlapped_at_scale(mesh):
    """At a real size (b 4, s 4096, h 4096, f 16384, bf16) the Planner's own
    choice splits both fused ops and predicts a gain: the JAX program comes
    out overlapped, not merely compiled."""
    f, _, _ = layers.sequence_parallel_mlp(mesh)
    b, s, h, ff = 4, 4096, 4096, 16384
    shapes = [jax.ShapeDtypeStruct((b, s, h), jnp.bfloat16),
              jax.ShapeDtypeStruct((ff, h), jnp.bfloat16),
              jax.ShapeDtypeStruct((h, ff), jnp.bfloat16)]
    text = ojax.lower(f, *shapes)
    prog = overlap.compile(text, strategy="auto", emit="mlir")
    assert sorted(p["op"] for p in prog.plans) == [
        "overlap.all_gather_matmul", "overlap.matmul_reduce_scatter"], \
        prog.plans
    for plan in prog.plans:
        assert len(plan["tiles"]) >= 2, plan
        assert plan["predicted_us"] < plan["serial_us"], plan


def test_many_primitives_match_jax(mesh):
    """iota, axis_index, split/concatenate, compare/select, reductions,
    integer arithmetic, unary math, pmax, a non-tiled all_gather and
    all_to_all, against JAX."""
    def body(x, y):
        i = lax.axis_index("tp")
        a, b = jnp.split(x, 2, axis=1)
        s = jax.nn.softmax(a, axis=-1) * i.astype(jnp.float32)
        w = jnp.where(b > 0, jnp.tanh(b), jnp.exp(b) - 1.0)
        c = jnp.concatenate([s, w, jax.nn.sigmoid(a) + jnp.sqrt(jnp.abs(a))],
                            axis=1)
        r = jnp.arange(8, dtype=jnp.int32) * (i + 1)
        m = lax.pmax(jnp.max(x, axis=0), "tp")
        g = lax.all_gather(y, "tp", axis=0, tiled=False)
        t = lax.all_to_all(x, "tp", 0, 1, tiled=True)
        v = jnp.log1p(jnp.abs(x[:, :4] ** 3)) / 2.0 - jnp.minimum(x[:, 4:8], 0.5)
        return c, r.astype(jnp.float32), m, g, t, v

    f = jax.shard_map(body, mesh=mesh, in_specs=(P("tp"), P()),
                      out_specs=(P("tp"), P("tp"), P(), P(), P("tp"),
                                 P("tp")),
                      check_vma=False)
    rng = np.random.default_rng(3)
    args = (rng.standard_normal((32, 16)).astype(np.float32),
            rng.standard_normal((3, 5)).astype(np.float32))
    want = reference(f, args)
    res = ojax.run(f, *args, strategy="none")
    for k, (got, ref) in enumerate(zip(res.outputs, want)):
        assert got.shape == ref.shape, k
        assert layers.max_error(got, ref) <= 1e-4, (k, got, ref)


def test_two_dimensional_mesh(mesh):
    """A 2 x 2 mesh: rows split over 'dp', the Megatron MLP over 'tp'."""
    mesh2 = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("dp", "tp"))

    def body(x, w1, w2):
        return lax.psum(jax.nn.relu(x @ w1) @ w2, "tp")

    f = jax.shard_map(body, mesh=mesh2,
                      in_specs=(P("dp"), P(None, "tp"), P("tp")),
                      out_specs=P("dp"))
    rng = np.random.default_rng(4)
    args = (rng.standard_normal((512, 64)).astype(np.float32),
            (rng.standard_normal((64, 128)) * 0.1).astype(np.float32),
            (rng.standard_normal((128, 64)) * 0.1).astype(np.float32))
    want = reference(f, args)
    for strategy in ("none", "uniform:2"):
        res = ojax.run(f, *args, strategy=strategy)
        assert layers.max_error(res.outputs[0], want[0]) <= 1e-4
        assert "shard.grid @dp_tp(shape = 2x2)" in res.mlir
        assert res.plans and all(
            len(p["tiles"]) == (2 if strategy == "uniform:2" else 1)
            for p in res.plans), res.plans


def test_unsupported_primitive_names_it_and_the_source(mesh):
    def body(x):
        return lax.psum(jnp.sort(x, axis=0), "tp")

    f = jax.shard_map(body, mesh=mesh, in_specs=P("tp"), out_specs=P())
    with pytest.raises(ojax.UnsupportedError) as info:
        ojax.lower(f, np.ones((8, 4), np.float32))
    message = str(info.value)
    assert "'sort'" in message and "test_jax.py" in message, message


def test_not_a_shard_map_is_refused():
    with pytest.raises(ojax.UnsupportedError, match="one jax.shard_map"):
        ojax.lower(lambda x: x * 2, np.ones((4,), np.float32))


def test_ranks_must_match_the_mesh(mesh):
    f, args, _ = layers.megatron_mlp(mesh)
    with pytest.raises(ValueError, match="mesh has 4 devices"):
        ojax.run(f, *args, ranks=2)


def test_run_with_inputs_checks_them(tmp_path):
    prog = overlap.compile((ROOT / "examples" / "mlp.mlir").read_text(),
                           strategy="none", output=tmp_path / "mlp.so")
    sig = overlap.signature(prog.path)
    good = [[np.zeros(b.shape, b.dtype) for b in sig.args]] * sig.ranks
    with pytest.raises(ValueError, match="inputs for 2 ranks"):
        overlap.run(prog.path, inputs=good[:2])
    bad = [row[:] for row in good]
    bad[1][2] = np.zeros((3, 3), np.float32)
    with pytest.raises(ValueError, match="rank 1: arg2 is 512x512xf32"):
        overlap.run(prog.path, inputs=bad)


def _have_cuda_backend():
    return any((d / "liboverlap_runtime_cuda.so").is_file()
               for d in overlap.native.library_dirs())


@pytest.mark.parametrize("layer", sorted(layers.LAYERS))
def test_layer_compiles_for_cuda(mesh, layer, tmp_path):
    """The imported programs also compile for the GPU target (kernels,
    cuBLASLt and NCCL calls; object code, nothing runs here)."""
    if not _have_cuda_backend():
        pytest.skip("the CUDA backend was not built "
                    "(no liboverlap_runtime_cuda.so)")
    f, args, _ = layers.LAYERS[layer](mesh)
    prog = overlap.compile(ojax.lower(f, *args), target="cuda",
                           strategy="uniform:2", emit="obj",
                           output=tmp_path / f"{layer}.o")
    assert os.path.getsize(prog.path) > 0
    assert prog.plans and all(len(p["tiles"]) == 2
                              for p in prog.plans), prog.plans


def test_captured_constants(mesh):
    """Arrays the body closes over (jaxpr constants passed to the shard_map
    as replicated operands) become constants of the program."""
    bias = np.linspace(-1, 1, 64, dtype=np.float32)
    scale = np.float32(0.5)

    def body(x, w):
        return lax.psum((x @ w + bias) * scale, "tp")

    f = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=(P(None, "tp"),
                                                         P("tp")),
                              out_specs=P()))
    rng = np.random.default_rng(5)
    args = (rng.standard_normal((256, 64)).astype(np.float32),
            rng.standard_normal((64, 64)).astype(np.float32))
    want = reference(f, args)
    res = ojax.run(f, *args, strategy="none")
    assert layers.max_error(res.outputs[0], want[0]) <= 1e-4
    assert "arith.constant dense<\"0x" in res.mlir


def test_missed_overlaps_are_said_in_python(mesh):
    """A collective Overlap does not fuse (a psum of an elementwise result)
    comes back in run(...).missed with the user's line and the reason; a
    fused one in plans (they were only remarks a Python user never saw)."""
    def body(x, w):
        y = lax.psum(jnp.tanh(x), "tp")      # nothing to overlap with
        return lax.psum(y @ w, "tp")         # a matmul + all-reduce

    f = jax.shard_map(body, mesh=mesh, in_specs=(P(None, "tp"), P("tp")),
                      out_specs=P())
    x = np.random.default_rng(0).standard_normal((256, 64)).astype(
        np.float32)
    w = np.random.default_rng(1).standard_normal((64, 32)).astype(
        np.float32)
    res = ojax.run(f, x, w, strategy="uniform:2")
    assert len(res.plans) == 1
    assert res.missed, res.missed
    first = res.missed[0]
    assert "test_jax.py" in first["location"], first
    assert first["name"] == "not-overlapped" and first["reason"], first


@pytest.mark.parametrize("batch", [1, 2, 3])
@pytest.mark.parametrize("consumers", [2, 3])
def test_bsh_gather_feeding_several_contractions_is_fused(mesh, batch,
                                                          consumers):
    """One [b, s, h] all-gather along s feeding gate/up (2) or Q/K/V (3):
    one fused all-gather + matmul (weights side by side) for every b; it
    was fused only for b = 1 (the transposes normalization inserts per
    contraction kept the gather from being shared)."""
    def body(x, *ws):
        g = lax.all_gather(x, "tp", axis=1, tiled=True)
        return tuple(g @ w for w in ws)

    f = jax.shard_map(body, mesh=mesh,
                      in_specs=(P(None, "tp"),) + (P(None, "tp"),) * consumers,
                      out_specs=(P(None, None, "tp"),) * consumers)
    rng = np.random.default_rng(batch)
    x = rng.standard_normal((batch, 512, 64)).astype(np.float32)
    ws = [rng.standard_normal((64, 128)).astype(np.float32)
          for _ in range(consumers)]
    res = ojax.run(f, x, *ws, strategy="uniform:2")
    assert len(res.plans) == 1 and len(res.plans[0]["tiles"]) == 2, \
        (res.plans, res.missed)
    assert res.plans[0]["op"] == "overlap.all_gather_matmul"
    for got, want in zip(res.outputs, jax.jit(f)(x, *ws)):
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-4,
                                   atol=1e-4)
