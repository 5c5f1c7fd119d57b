"""Data-parallel and FSDP weight gradients, the way flax and haiku programs
produce them (issue 51, item 2): `jax.grad` of a loss through Dense /
Linear layers inside `jax.shard_map`, then `lax.pmean` of the gradients
over 'data' (data parallel) or `lax.psum_scatter(..., scatter_dimension=0,
tiled=True)` of them (FSDP), and `x.T @ dy`, `dy.T @ x` and the einsum
over the tokens written alone with a psum.

The layers are our own programs of the form the libraries emit (neither
library is a dependency): flax.linen.Dense contracts the last dim of its
input with the kernel's first through `lax.dot_general` and adds the bias
reshaped to (1, ..., N); haiku.Linear is `jnp.dot(x, w) + b`. jax.grad
turns either into the kernel gradient dot(dy, x) over the token dims
([T] or [b, s]), transposed to the kernel's [K, N] layout, before the
collective: Overlap fuses it with the collective (one fused op per
kernel) and each tile reads its columns of the activations in place.

Each program runs through overlap.jax.run on 4 CPU devices against
jax.jit(f), f32 and bf16, and compiles for target="cuda".
Tolerances relative to the largest magnitude of JAX's output, as in
test_jax.py: f32 1e-4, bf16 2**-6 (an f32 sum that JAX and Overlap add in
a different order can round to a neighbouring bf16).
"""

import os

import numpy as np
import pytest

from conftest import cpu_mesh, require_jax

jax = require_jax()

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

ojax = pytest.importorskip("overlap.jax")
import overlap  # noqa: E402

pytestmark = pytest.mark.usefixtures("native_libraries")

TOLERANCE = {np.dtype(np.float32): 1e-4, np.dtype(jnp.bfloat16): 2.0 ** -6}
DTYPES = [np.float32, jnp.bfloat16]


@pytest.fixture(scope="module")
def mesh():
    return cpu_mesh("data")


def flax_dense(x, kernel, bias):
    """flax.linen.Dense's computation."""
    y = lax.dot_general(x, kernel, (((x.ndim - 1,), (0,)), ((), ())))
    return y + jnp.reshape(bias, (1,) * (y.ndim - 1) + (-1,))


def haiku_linear(x, w, b):
    """haiku.Linear's computation."""
    return jnp.dot(x, w) + b


DENSE = {"flax": flax_dense, "haiku": haiku_linear}


def mlp_loss(dense):
    """A 2-layer MLP's mean squared error: what a training step
    differentiates."""
    def loss(params, x, t):
        h = jax.nn.relu(dense(x, params["w1"], params["b1"]))
        y = dense(h, params["w2"], params["b2"])
        return jnp.mean((y - t) ** 2)
    return loss


def _rand(rng, shape, dtype, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


def _params(rng, dtype, k=32, h=64, n=16):
    return {"w1": _rand(rng, (k, h), dtype, 0.2),
            "b1": _rand(rng, (h,), dtype, 0.1),
            "w2": _rand(rng, (h, n), dtype, 0.2),
            "b2": _rand(rng, (n,), dtype, 0.1)}


def data_parallel(mesh, library, dtype, tokens=(64,), check_vma=True):
    """pmean of the gradients of a replicated MLP over the batch shards;
    `tokens` are the leading dims of x ([T] or [b, s], per rank the first
    one divided by 4)."""
    loss = mlp_loss(DENSE[library])

    def step(params, x, t):
        grads = jax.grad(loss)(params, x, t)
        return jax.tree.map(lambda g: lax.pmean(g, "data"), grads)

    f = jax.shard_map(step, mesh=mesh, in_specs=(P(), P("data"), P("data")),
                      out_specs=P(), check_vma=check_vma)
    rng = np.random.default_rng(1)
    shape = tuple(4 * t if i == 0 else t for i, t in enumerate(tokens))
    return f, (_params(rng, dtype), _rand(rng, shape + (32,), dtype),
               _rand(rng, shape + (16,), dtype))


def fsdp(mesh, library, dtype, explicit=True):
    """Fully sharded: each rank holds rows of every parameter, gathers them
    for the forward; the gradient is scattered back by rows. `explicit`:
    the program differentiates the gathered parameters and psum_scatters
    the gradients itself; otherwise jax.grad goes through the all_gather,
    whose transpose is the psum_scatter."""
    loss = mlp_loss(DENSE[library])

    def gather(params):
        return jax.tree.map(
            lambda p: lax.all_gather(p, "data", axis=0, tiled=True), params)

    def step(params, x, t):
        if explicit:
            grads = jax.grad(loss)(gather(params), x, t)
            return jax.tree.map(
                lambda g: lax.psum_scatter(g, "data", scatter_dimension=0,
                                           tiled=True), grads)
        return jax.grad(lambda p: loss(gather(p), x, t))(params)

    f = jax.shard_map(step, mesh=mesh, in_specs=(P("data"), P("data"),
                                                 P("data")),
                      out_specs=P("data"))
    rng = np.random.default_rng(2)
    return f, (_params(rng, dtype), _rand(rng, (64, 32), dtype),
               _rand(rng, (64, 16), dtype))


def alone(mesh, form, dtype):
    """A weight gradient written by hand, then psum."""
    def body(x, dy):
        if form == "xT_dy":
            g = x.T @ dy
        elif form == "dyT_x":
            g = dy.T @ x
        else:
            g = jnp.einsum("tk,tn->kn", x, dy)
        return lax.psum(g, "data")

    f = jax.shard_map(body, mesh=mesh, in_specs=(P("data"), P("data")),
                      out_specs=P())
    rng = np.random.default_rng(3)
    return f, (_rand(rng, (128, 48), dtype), _rand(rng, (128, 40), dtype))


PROGRAMS = {
    "dp-flax": lambda m, d: data_parallel(m, "flax", d),
    "dp-haiku": lambda m, d: data_parallel(m, "haiku", d),
    "dp-flax-bs": lambda m, d: data_parallel(m, "flax", d, tokens=(2, 8)),
    "dp-haiku-no-vma": lambda m, d: data_parallel(m, "haiku", d,
                                                  check_vma=False),
    "fsdp-flax": lambda m, d: fsdp(m, "flax", d),
    "fsdp-haiku-through-gather": lambda m, d: fsdp(m, "haiku", d,
                                                   explicit=False),
    "xT_dy": lambda m, d: alone(m, "xT_dy", d),
    "dyT_x": lambda m, d: alone(m, "dyT_x", d),
    "einsum": lambda m, d: alone(m, "einsum", d),
}

#: The fused op each program's weight gradients must become, and how many.
EXPECTED = {
    "dp-flax": ("overlap.matmul_all_reduce", 2),
    "dp-haiku": ("overlap.matmul_all_reduce", 2),
    "dp-flax-bs": ("overlap.matmul_all_reduce", 2),
    "dp-haiku-no-vma": ("overlap.matmul_all_reduce", 2),
    "fsdp-flax": ("overlap.matmul_reduce_scatter", 2),
    "fsdp-haiku-through-gather": ("overlap.matmul_reduce_scatter", 2),
    "xT_dy": ("overlap.matmul_all_reduce", 1),
    "dyT_x": ("overlap.matmul_all_reduce", 1),
    "einsum": ("overlap.matmul_all_reduce", 1),
}


def _check_plans(name, plans, mlir=""):
    op, count = EXPECTED[name]
    fused = [p for p in plans if p["op"] == op]
    assert len(fused) >= count, \
        f"{name}: {len(fused)} {op} planned, want {count}: {plans}\n{mlir}"
    for plan in fused:
        assert len(plan["tiles"]) == 2, plan


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "bf16"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_gradient_collective_is_overlapped(mesh, name, dtype):
    f, args = PROGRAMS[name](mesh, dtype)
    want = [np.asarray(w) for w in
            jax.tree_util.tree_leaves(jax.jit(f)(*args))]
    res = ojax.run(f, *args, strategy="uniform:2")
    assert len(res.outputs) == len(want)
    tol = TOLERANCE[np.dtype(dtype)]
    for i, (got, ref) in enumerate(zip(res.outputs, want)):
        assert got.shape == ref.shape and got.dtype == ref.dtype, \
            (i, got.shape, got.dtype, ref.shape, ref.dtype)
        scale = max(float(np.abs(ref.astype(np.float64)).max()), 1e-30)
        err = float(np.abs(got.astype(np.float64) -
                           ref.astype(np.float64)).max()) / scale
        assert err <= tol, f"{name} output {i}: max error {err:.3g}"
    _check_plans(name, res.plans, res.mlir)


def test_a_wrong_gradient_is_caught(mesh):
    """The comparison above can fail: the same data-parallel step whose
    oracle differentiates another loss does not match."""
    f, args = data_parallel(mesh, "flax", np.float32)
    res = ojax.run(f, *args, strategy="uniform:2")
    other = jax.tree_util.tree_leaves(jax.jit(f)(
        jax.tree.map(lambda p: p * 1.5, args[0]), *args[1:]))
    errs = [float(np.abs(g - np.asarray(w)).max()) for g, w in
            zip(res.outputs, other)]
    assert max(errs) > 1e-3


def random_gradient_program(mesh, seed):
    """A weight gradient over the tokens drawn from `seed`: the token dims
    ([T] or [b, s]), K and N, the dtype, how it is written (x.T @ dy,
    dy.T @ x transposed back, an einsum, dot_general over the tokens in
    either operand order, JAX's own dot(dy, x).T), the collective (psum,
    pmean, psum_scatter of the rows) and whether an SGD update follows.
    Returns (description, f, args, dtype, fused op)."""
    rng = np.random.default_rng(seed)
    dtype = [np.float32, jnp.bfloat16][int(rng.integers(2))]
    tokens = [(int(rng.choice([8, 16])),),
              (int(rng.choice([2, 4])), int(rng.choice([4, 8])))][
        int(rng.integers(2))]
    k = int(rng.choice([16, 24, 32, 48]))
    n = int(rng.choice([8, 16, 40]))
    form = str(rng.choice(["xT_dy", "dyT_x_T", "einsum", "dot_xdy",
                           "dot_dyx_T"]))
    collective = str(rng.choice(["psum", "pmean", "psum_scatter"]))
    update = bool(rng.integers(2))
    lead = "".join("bs"[:len(tokens)]) if len(tokens) == 2 else "t"
    contract = tuple(range(len(tokens)))

    def gradient(x, dy):
        if form == "xT_dy":
            return x.reshape(-1, k).T @ dy.reshape(-1, n)
        if form == "dyT_x_T":
            return (dy.reshape(-1, n).T @ x.reshape(-1, k)).T
        if form == "einsum":
            return jnp.einsum(f"{lead}k,{lead}n->kn", x, dy)
        if form == "dot_xdy":
            return lax.dot_general(x, dy, ((contract, contract), ((), ())))
        return lax.dot_general(dy, x, ((contract, contract), ((), ()))).T

    def body(w, x, dy):
        g = gradient(x, dy)
        if collective == "psum":
            g = lax.psum(g, "data")
        elif collective == "pmean":
            g = lax.pmean(g, "data")
        else:
            g = lax.psum_scatter(g, "data", scatter_dimension=0, tiled=True)
        return w - g.astype(w.dtype) * 0.5 if update else g

    w_spec = P("data") if collective == "psum_scatter" else P()
    f = jax.shard_map(body, mesh=mesh, in_specs=(w_spec, P("data"),
                                                 P("data")),
                      out_specs=w_spec)
    shape = (4 * tokens[0],) + tokens[1:]
    args = (_rand(rng, (k, n), dtype), _rand(rng, shape + (k,), dtype),
            _rand(rng, shape + (n,), dtype))
    op = ("overlap.matmul_reduce_scatter" if collective == "psum_scatter"
          else "overlap.matmul_all_reduce")
    desc = (f"seed {seed}: {form} over tokens {tokens}, K {k}, N {n}, "
            f"{np.dtype(dtype).name}, {collective}"
            f"{', SGD update' if update else ''}")
    return desc, f, args, dtype, op


@pytest.mark.parametrize("seed", range(8))  # 80 checked by hand
def test_random_gradient_forms(mesh, seed):
    """Drawn weight-gradient forms: equal to jax.jit and fused with their
    collective."""
    desc, f, args, dtype, op = random_gradient_program(mesh, seed)
    want = np.asarray(jax.jit(f)(*args))
    res = ojax.run(f, *args, strategy="uniform:2")
    got = res.outputs[0]
    assert got.shape == want.shape and got.dtype == want.dtype, desc
    scale = max(float(np.abs(want.astype(np.float64)).max()), 1e-30)
    err = float(np.abs(got.astype(np.float64) -
                       want.astype(np.float64)).max()) / scale
    assert err <= TOLERANCE[np.dtype(dtype)], f"{desc}: max error {err:.3g}"
    assert [p["op"] for p in res.plans] == [op], \
        f"{desc}: {res.plans}\n{res.missed}\n{res.mlir}"


@pytest.mark.parametrize("kind", ["dp", "fsdp"])
def test_gradients_are_overlapped_at_scale(mesh, kind):
    """At a real size (8192 tokens per rank, K = H = 4096, N = 2048, bf16)
    the Planner's own choice splits every kernel gradient's collective
    and predicts a gain: the training step comes out overlapped, and
    nothing is copied around the GEMMs."""
    k, h, n, tokens = 4096, 4096, 2048, 8192
    build = data_parallel if kind == "dp" else fsdp
    f, _ = build(mesh, "flax", jnp.bfloat16)

    def spec(shape):
        return jax.ShapeDtypeStruct(shape, jnp.bfloat16)
    params = {"w1": spec((k, h)), "b1": spec((h,)), "w2": spec((h, n)),
              "b2": spec((n,))}
    args = (params, spec((4 * tokens, k)), spec((4 * tokens, n)))
    prog = overlap.compile(ojax.lower(f, *args), strategy="auto",
                           emit="mlir")
    op = ("overlap.matmul_all_reduce" if kind == "dp"
          else "overlap.matmul_reduce_scatter")
    fused = [p for p in prog.plans if p["op"] == op]
    assert len(fused) == 2, prog.plans
    for plan in fused:
        assert len(plan["tiles"]) >= 2, plan
        assert plan["predicted_us"] < plan["serial_us"], plan


def _have_cuda_backend():
    return any((d / "liboverlap_runtime_cuda.so").is_file()
               for d in overlap.native.library_dirs())


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "bf16"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_gradient_compiles_for_cuda(mesh, name, dtype, tmp_path):
    """The same programs compile for the GPU (kernels, cuBLASLt and NCCL
    calls; object code, nothing runs here), the gradients still fused."""
    if not _have_cuda_backend():
        pytest.skip("the CUDA backend was not built "
                    "(no liboverlap_runtime_cuda.so)")
    f, args = PROGRAMS[name](mesh, dtype)
    prog = overlap.compile(ojax.lower(f, *args), target="cuda",
                           strategy="uniform:2", emit="obj",
                           output=tmp_path / f"{name}.o")
    assert os.path.getsize(prog.path) > 0
    _check_plans(name, prog.plans)
