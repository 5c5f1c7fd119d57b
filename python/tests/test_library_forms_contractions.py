"""Contractions as the layer libraries write them, beside a collective:
each program below is written in the form flax, equinox or JAX's einsum
emits (our own code of that form, not the libraries'), run through
overlap.jax.run on 4 CPU devices against jax.jit(f), asserted overlapped
(the expected fused ops planned, two tiles each under uniform:2), and
compiled for --target=cuda.

- Attention that keeps the heads as a tensor dim: the output projection
  `bshd,hdn->bsn` (flax DenseGeneral(axis=(-2, -1)), i.e. dot_general
  contracting ((2, 3), (0, 1)); nnx MultiHeadAttention; an einsum) before a
  psum (heads sharded) or the reduce-scatter of a sequence-parallel block,
  and the Q/K/V projection `bsn,nhd->bshd` of the all-gathered sequence.
  overlap-raise flattens the two contracted (or two free) dims into a 2-D
  GEMM: [b, s, h, d] -> [b*s, h*d], [h, d, n] -> [h*d, n].
- equinox's per-token `jax.vmap(linear)` with PyTorch-layout [out, in]
  weights: JAX writes `w @ t` vmapped as a product [out, tokens] and a
  transpose; after an all-gather of the tokens (sequence parallel) or an
  all-to-all dispatch to experts (`eqx.filter_vmap` experts: a vmap over
  experts of per-token vmapped linears), the tokens become the GEMM's rows.

Tolerances, relative to the largest |JAX| value: f32 1e-4 (summation
order and exp's approximation); bf16 2**-5 (both accumulate in f32 and
round once per primitive, but a rounding near a boundary can flip one bf16
ulp, 2**-8, and softmax then a product carry a few such flips).
"""

import os

import numpy as np
import pytest

from conftest import cpu_mesh, require_jax

jax = require_jax()

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import overlap  # noqa: E402

ojax = pytest.importorskip("overlap.jax")

pytestmark = pytest.mark.usefixtures("native_libraries")

TOLERANCE = {np.dtype(np.float32): 1e-4, np.dtype(jnp.bfloat16): 2.0 ** -5}
G = 4          # devices on the "tp" axis
S = 16         # sequence length (global)
N = 32         # model width
H = 8          # heads (global; two per device)
D = 8          # head dim
F = 64         # MLP width (global)

GATHER = "overlap.all_gather_matmul"
PSUM = "overlap.matmul_all_reduce"
SCATTER = "overlap.matmul_reduce_scatter"
DISPATCH = "overlap.all_to_all_matmul"
COMBINE = "overlap.matmul_all_to_all"


def _mesh():
    return cpu_mesh("tp")


def _r(rng, shape, dtype, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


def _attend(q, k, v):
    """Softmax attention over [b, s, h, d] that keeps the heads a dim
    (flax's dot_product_attention: logits 'bqhd,bkhd->bhqk')."""
    logits = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(q.shape[-1]).astype(
        q.dtype)
    weights = jax.nn.softmax(logits, axis=-1)
    return jnp.einsum("bhqk,bkhd->bqhd", weights, v)


def _dense_general_out(o, w):
    """flax DenseGeneral(features=n, axis=(-2, -1)) of [b, s, h, d] with a
    [h, d, n] kernel: lax.dot_general contracting ((2, 3), (0, 1))."""
    return lax.dot_general(o, w, (((2, 3), (0, 1)), ((), ())))


def _dense_general_in(x, w):
    """flax DenseGeneral(features=(h, d)) of [b, s, n] with an [n, h, d]
    kernel: the free dims of the weight kept."""
    return lax.dot_general(x, w, (((2,), (0,)), ((), ())))


def _linear(w, b=None):
    """An equinox Linear ([out, in] weight) applied to one token."""
    return (lambda t: w @ t) if b is None else (lambda t: w @ t + b)


def _per_token(fn, x):
    """equinox's jax.vmap(linear) over the tokens of [s, in], or of
    [b, s, in] with one more vmap over the batch."""
    mapped = jax.vmap(fn)
    return mapped(x) if x.ndim == 2 else jax.vmap(mapped)(x)


# Each builder returns (f, args, expected fused ops) for (dtype, b).

def flax_attention_psum(dtype, b):
    """Tensor-parallel attention, heads sharded: Q/K/V by DenseGeneral
    with kept heads, softmax, the output DenseGeneral(axis=(-2, -1)) and a
    psum of the partial sums."""
    mesh = _mesh()

    def body(x, wq, wk, wv, wo):
        q, k, v = (_dense_general_in(x, w) for w in (wq, wk, wv))
        return lax.psum(_dense_general_out(_attend(q, k, v), wo), "tp")

    f = jax.shard_map(body, mesh=mesh,
                      in_specs=(P(), P(None, "tp"), P(None, "tp"),
                                P(None, "tp"), P("tp")),
                      out_specs=P())
    rng = np.random.default_rng(1)
    args = (_r(rng, (b, S, N), dtype),
            *(_r(rng, (N, H, D), dtype, 0.3) for _ in range(3)),
            _r(rng, (H, D, N), dtype, 0.3))
    return f, args, [PSUM]


def einsum_attention_sequence_parallel(dtype, b):
    """A sequence-parallel attention block on [b, s, n] (s sharded in and
    out): the all-gathered sequence feeds one Q/K/V einsum whose weight
    has three free dims ('bsn,nthd->bsthd'), and the output einsum
    'bshd,hdn->bsn' is reduce-scattered back along s (scatter_dimension
    1)."""
    mesh = _mesh()

    def body(x, wqkv, wo):
        g = lax.all_gather(x, "tp", axis=1, tiled=True)
        qkv = jnp.einsum("bsn,nthd->bsthd", g, wqkv)
        o = _attend(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2])
        out = jnp.einsum("bshd,hdn->bsn", o, wo)
        return lax.psum_scatter(out, "tp", scatter_dimension=1, tiled=True)

    f = jax.shard_map(body, mesh=mesh,
                      in_specs=(P(None, "tp"), P(None, None, "tp"), P("tp")),
                      out_specs=P(None, "tp"))
    rng = np.random.default_rng(2)
    args = (_r(rng, (b, S, N), dtype), _r(rng, (N, 3, H, D), dtype, 0.3),
            _r(rng, (H, D, N), dtype, 0.3))
    return f, args, [GATHER, SCATTER]


def einsum_attention_sbh(dtype, b):
    """The same block in Megatron's [s, b, n] layout: gathered and
    reduce-scattered along dim 0 (scatter_dimension 0), heads kept in
    'sbn,nhd->sbhd' and 'sbhd,hdn->sbn'; Q, K and V from one weight
    [n, 3h, d] split after."""
    mesh = _mesh()

    def body(x, wqkv, wo):
        g = lax.all_gather(x, "tp", axis=0, tiled=True)
        qkv = jnp.einsum("sbn,nhd->sbhd", g, wqkv)
        q, k, v = (t.transpose(1, 0, 2, 3) for t in jnp.split(qkv, 3, axis=2))
        o = _attend(q, k, v).transpose(1, 0, 2, 3)
        out = jnp.einsum("sbhd,hdn->sbn", o, wo)
        return lax.psum_scatter(out, "tp", scatter_dimension=0, tiled=True)

    f = jax.shard_map(body, mesh=mesh,
                      in_specs=(P("tp"), P(None, "tp"), P("tp")),
                      out_specs=P("tp"))
    rng = np.random.default_rng(3)
    args = (_r(rng, (S, b, N), dtype), _r(rng, (N, 3 * H, D), dtype, 0.3),
            _r(rng, (H, D, N), dtype, 0.3))
    return f, args, [GATHER, SCATTER]


def equinox_attention_sequence_parallel(dtype, b):
    """equinox MultiheadAttention's shape, sequence parallel: per-token
    vmapped linears with [out, in] weights (one fused Q/K/V projection of
    the gathered tokens), heads by a reshape, attention vmapped over the
    heads (in_axes=1), the [s, h*d] reshape and the vmapped output
    projection reduce-scattered along the tokens."""
    mesh = _mesh()

    def attention(x, wqkv, wo):       # one example: x [s, n]
        qkv = _per_token(_linear(wqkv), x).reshape(x.shape[0], 3, -1, D)
        q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]

        def head(q, k, v):            # [s, d] each
            w = jax.nn.softmax(q @ k.T / np.sqrt(D).astype(q.dtype), axis=-1)
            return w @ v
        o = jax.vmap(head, in_axes=1, out_axes=1)(q, k, v)
        return _per_token(_linear(wo), o.reshape(x.shape[0], -1))

    def body(x, wqkv, wo):
        axis = x.ndim - 2
        g = lax.all_gather(x, "tp", axis=axis, tiled=True)
        out = attention(g, wqkv, wo) if g.ndim == 2 else \
            jax.vmap(attention, in_axes=(0, None, None))(g, wqkv, wo)
        return lax.psum_scatter(out, "tp", scatter_dimension=axis,
                                tiled=True)

    tokens = P("tp") if b == 1 else P(None, "tp")
    f = jax.shard_map(body, mesh=mesh,
                      in_specs=(tokens, P("tp"), P(None, "tp")),
                      out_specs=tokens)
    rng = np.random.default_rng(4)
    x = _r(rng, (S, N) if b == 1 else (b, S, N), dtype)
    # Rows of wqkv are [3, h, d] with the heads sharded: each device holds
    # its heads' rows of Q, K and V.
    wqkv = _r(rng, (3, H, D, N), dtype, 0.3).transpose(1, 0, 2, 3).reshape(
        3 * H * D, N)
    return f, (x, wqkv, _r(rng, (N, H * D), dtype, 0.3)), [GATHER, SCATTER]


def equinox_mlp_sequence_parallel(dtype, b):
    """equinox MLP, sequence parallel: gather the tokens, a vmapped Linear
    with bias ([f, n] weight, column parallel), gelu, a vmapped Linear
    without bias ([n, f], row parallel), reduce-scatter the tokens."""
    mesh = _mesh()

    def body(x, w1, b1, w2):
        axis = x.ndim - 2
        g = lax.all_gather(x, "tp", axis=axis, tiled=True)
        h = jax.nn.gelu(_per_token(_linear(w1, b1), g))
        return lax.psum_scatter(_per_token(_linear(w2), h), "tp",
                                scatter_dimension=axis, tiled=True)

    tokens = P("tp") if b == 1 else P(None, "tp")
    f = jax.shard_map(body, mesh=mesh,
                      in_specs=(tokens, P("tp"), P("tp"), P(None, "tp")),
                      out_specs=tokens)
    rng = np.random.default_rng(5)
    args = (_r(rng, (S, N) if b == 1 else (b, S, N), dtype),
            _r(rng, (F, N), dtype, 0.3), _r(rng, (F,), dtype, 0.1),
            _r(rng, (N, F), dtype, 0.3))
    return f, args, [GATHER, SCATTER]


def equinox_row_parallel_psum(dtype, b):
    """equinox's vmapped Linear, row parallel (input features sharded),
    then a psum: fused before, kept fused."""
    mesh = _mesh()

    def body(x, w):
        return lax.psum(_per_token(_linear(w), x), "tp")

    f = jax.shard_map(body, mesh=mesh,
                      in_specs=(P(*([None] * (1 if b == 1 else 2)), "tp"),
                                P(None, "tp")),
                      out_specs=P())
    rng = np.random.default_rng(6)
    return f, (_r(rng, (S, F) if b == 1 else (b, S, F), dtype),
               _r(rng, (N, F), dtype, 0.3)), [PSUM]


def equinox_experts(dtype, b):
    """Experts as eqx.filter_vmap writes them: tokens grouped by expert
    [E, C, n] dispatched by an all-to-all (split the experts, concatenate
    the senders' tokens), then jax.vmap over the experts of per-token
    vmapped Linears with [out, in] weights, relu, and the combine
    all-to-all. `b` scales the capacity. In bf16 the combine is not fused
    yet: the product is rounded to bf16 before the all-to-all, and the
    combine rule does not look through a rounding (flax's nn.vmap experts
    alike); the dispatch is."""
    mesh = _mesh()
    experts, capacity = 2 * G, 4 * b

    def experts_linear(w, x):
        return jax.vmap(lambda w_e, x_e: jax.vmap(lambda t: w_e @ t)(x_e))(
            w, x)

    def body(x, w1, w2):
        t = lax.all_to_all(x, "tp", 0, 1, tiled=True)
        h = jax.nn.relu(experts_linear(w1, t))
        return lax.all_to_all(experts_linear(w2, h), "tp", 1, 0, tiled=True)

    f = jax.shard_map(body, mesh=mesh, in_specs=(P("tp"), P("tp"), P("tp")),
                      out_specs=P("tp"))
    rng = np.random.default_rng(7)
    args = (_r(rng, (G * experts, capacity, N), dtype),
            _r(rng, (experts, F, N), dtype, 0.3),
            _r(rng, (experts, N, F), dtype, 0.3))
    return f, args, [DISPATCH] if dtype == jnp.bfloat16 else [DISPATCH,
                                                              COMBINE]


PROGRAMS = {p.__name__: p for p in (
    flax_attention_psum, einsum_attention_sequence_parallel,
    einsum_attention_sbh, equinox_attention_sequence_parallel,
    equinox_mlp_sequence_parallel, equinox_row_parallel_psum,
    equinox_experts)}
DTYPES = {"f32": np.float32, "bf16": jnp.bfloat16}


def _cases():
    return [pytest.param(name, dt, b, id=f"{name}-{dt}-b{b}")
            for name in PROGRAMS for dt in DTYPES for b in (1, 2)]


@pytest.mark.parametrize("name,dt,b", _cases())
def test_matches_jax_and_is_overlapped(name, dt, b):
    f, args, ops = PROGRAMS[name](DTYPES[dt], b)
    want = [np.asarray(o) for o in jax.tree_util.tree_leaves(
        jax.jit(f)(*args))]
    res = ojax.run(f, *args, strategy="uniform:2")
    assert len(res.outputs) == len(want)
    for got, ref in zip(res.outputs, want):
        assert got.shape == ref.shape and got.dtype == ref.dtype
        ref = ref.astype(np.float64)
        scale = max(float(np.abs(ref).max()), np.finfo(np.float64).tiny)
        np.testing.assert_allclose(
            np.asarray(got, np.float64), ref, rtol=0,
            atol=TOLERANCE[np.dtype(DTYPES[dt])] * scale)
    assert sorted(p["op"] for p in res.plans) == sorted(ops), \
        f"{name}: planned {res.plans}, missed {res.missed}"
    for plan in res.plans:
        assert len(plan["tiles"]) == 2, plan


def _have_cuda_backend():
    return any((d / "liboverlap_runtime_cuda.so").is_file()
               for d in overlap.native.library_dirs())


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("dt", sorted(DTYPES))
def test_compiles_for_cuda(name, dt, tmp_path):
    """The same programs (b = 2) compile for the GPU target, overlapped
    there too (object code; nothing runs here)."""
    if not _have_cuda_backend():
        pytest.skip("the CUDA backend was not built "
                    "(no liboverlap_runtime_cuda.so)")
    f, args, ops = PROGRAMS[name](DTYPES[dt], 2)
    prog = overlap.compile(ojax.lower(f, *args), target="cuda",
                           strategy="uniform:2", emit="obj",
                           output=tmp_path / f"{name}.o")
    assert os.path.getsize(prog.path) > 0
    assert sorted(p["op"] for p in prog.plans) == sorted(ops), prog.plans
    assert all(len(p["tiles"]) == 2 for p in prog.plans), prog.plans
