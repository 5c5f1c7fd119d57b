"""Tensor-parallel layers written in JAX with jax.shard_map, the way a JAX
user writes them: what examples/jax/run.py and python/tests/test_jax.py
compile with Overlap and compare against JAX itself.

Each builder takes the mesh (one axis) and returns (f, args, dtype): f is
the shard_map, args the global inputs (numpy, seeded), dtype the compute
type. Sizes are small enough to run on host ranks in a second.
"""

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec as P


def _rand(rng, shape, scale=1.0, dtype=np.float32):
    return (rng.standard_normal(shape) * scale).astype(dtype)


def megatron_mlp(mesh, seed=0):
    """Column-parallel up projection, GELU, row-parallel down projection and
    a psum: the Megatron MLP in f32."""
    ax = mesh.axis_names[0]

    def body(x, w1, w2):
        h = jax.nn.gelu(x @ w1)
        return lax.psum(h @ w2, ax)

    f = jax.shard_map(body, mesh=mesh, in_specs=(P(), P(None, ax), P(ax)),
                      out_specs=P())
    rng = np.random.default_rng(seed)
    return f, (_rand(rng, (256, 64)), _rand(rng, (64, 128), 0.1),
               _rand(rng, (128, 64), 0.1)), np.float32


def sequence_parallel_mlp(mesh, seed=0):
    """Sequence parallelism on bf16 [b, s, h]: all_gather of the sequence
    before the column-parallel matmul, psum_scatter of the sequence after
    the row-parallel one; PyTorch-layout ([out, in]) weights."""
    ax = mesh.axis_names[0]

    def body(x, w1, w2):
        xg = lax.all_gather(x, ax, axis=1, tiled=True)
        h = jnp.einsum("bsh,fh->bsf", xg, w1)
        h = jax.nn.relu(h)
        y = jnp.einsum("bsf,hf->bsh", h, w2)
        return lax.psum_scatter(y, ax, scatter_dimension=1, tiled=True)

    f = jax.shard_map(body, mesh=mesh,
                      in_specs=(P(None, ax), P(ax), P(None, ax)),
                      out_specs=P(None, ax))
    rng = np.random.default_rng(seed)
    bf16 = jnp.bfloat16
    return f, (_rand(rng, (2, 128, 64), 1.0, bf16),
               _rand(rng, (128, 64), 0.1, bf16),
               _rand(rng, (64, 128), 0.1, bf16)), bf16


def gated_mlp_rmsnorm(mesh, seed=0):
    """RMSNorm, then gate and up projections (column-parallel), SiLU(gate) *
    up, the down projection (row-parallel) and a psum, on [b, s, h]."""
    ax = mesh.axis_names[0]

    def body(x, g, wg, wu, wd):
        n = x * lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6) * g
        h = jax.nn.silu(n @ wg) * (n @ wu)
        return lax.psum(h @ wd, ax)

    f = jax.shard_map(body, mesh=mesh,
                      in_specs=(P(), P(), P(None, ax), P(None, ax), P(ax)),
                      out_specs=P())
    rng = np.random.default_rng(seed)
    return f, (_rand(rng, (2, 128, 64)), 1.0 + _rand(rng, (64,), 0.1),
               _rand(rng, (64, 128), 0.1), _rand(rng, (64, 128), 0.1),
               _rand(rng, (128, 64), 0.1)), np.float32


def attention(mesh, seed=0, heads=8, head_dim=16):
    """QKV column-parallel (each device its heads), softmax attention on the
    local heads, the output projection row-parallel and a psum."""
    ax = mesh.axis_names[0]
    g = mesh.shape[ax]
    local = heads // g

    def body(x, wq, wk, wv, wo):
        b, s, _ = x.shape
        q = (x @ wq).reshape(b, s, local, head_dim)
        k = (x @ wk).reshape(b, s, local, head_dim)
        v = (x @ wv).reshape(b, s, local, head_dim)
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(head_dim)
        p = jax.nn.softmax(scores, axis=-1)
        o = jnp.einsum("bhqk,bkhd->bqhd", p, v).reshape(b, s, local * head_dim)
        return lax.psum(o @ wo, ax)

    hid = heads * head_dim
    f = jax.shard_map(body, mesh=mesh,
                      in_specs=(P(), P(None, ax), P(None, ax), P(None, ax),
                                P(ax)),
                      out_specs=P())
    rng = np.random.default_rng(seed)
    return f, (_rand(rng, (2, 128, hid)), _rand(rng, (hid, hid), 0.1),
               _rand(rng, (hid, hid), 0.1), _rand(rng, (hid, hid), 0.1),
               _rand(rng, (hid, hid), 0.1)), np.float32


def expert_parallel(mesh, seed=0, experts_per_device=2, capacity=64):
    """Expert parallelism (GShard's layout): each device holds its tokens
    grouped by destination expert, [E, C, h]; all_to_all dispatches them
    (split the experts, concatenate the senders' tokens: [E / G, G * C,
    h]), the local experts' two GEMMs run, all_to_all combines."""
    ax = mesh.axis_names[0]

    def body(x, w1, w2):
        t = lax.all_to_all(x, ax, 0, 1, tiled=True)
        h = jax.nn.relu(jnp.einsum("ech,ehf->ecf", t, w1))
        y = jnp.einsum("ecf,efh->ech", h, w2)
        return lax.all_to_all(y, ax, 1, 0, tiled=True)

    f = jax.shard_map(body, mesh=mesh, in_specs=(P(ax), P(ax), P(ax)),
                      out_specs=P(ax))
    e = mesh.shape[ax] * experts_per_device
    rng = np.random.default_rng(seed)
    return f, (_rand(rng, (mesh.shape[ax] * e, capacity, 64)),
               _rand(rng, (e, 64, 128), 0.1),
               _rand(rng, (e, 128, 64), 0.1)), np.float32


LAYERS = {
    "megatron_mlp": megatron_mlp,
    "sequence_parallel_mlp": sequence_parallel_mlp,
    "gated_mlp_rmsnorm": gated_mlp_rmsnorm,
    "attention": attention,
    "expert_parallel": expert_parallel,
}


def max_error(got, want):
    """max |got - want| / max |want|, in f64."""
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    scale = max(np.abs(want).max(), np.finfo(np.float64).tiny)
    return float(np.abs(got - want).max() / scale)
