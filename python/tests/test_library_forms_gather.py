"""One sequence-parallel all-gather feeding several contractions, written as
model code writes it inside `jax.shard_map` (issue 51, item 3): the gate
and up projections of a Llama FFN, `silu(g @ w1) * (g @ w2)`, then the
row-parallel down projection and its psum or psum_scatter; the Q, K and V
projections of one gathered activation feeding multi-head attention with a
softmax; optionally an RMSnorm or a layernorm before the gather, and a
residual add of the gathered activation itself. x is [s, h] (b = 1) or
[b, s, h] (b = 2), gathered along s.

Each runs through overlap.jax.run against jax.jit(f) on 4 CPU devices and
must come out overlapped: the gather is fused with the projections (one
overlap.all_gather_matmul, the weights side by side) and split into 2
tiles. Each also compiles for target="cuda".

Tolerances as in test_jax.py: f32 1e-4, bf16 2**-6 of JAX's largest
magnitude.
"""

import os
import sys
import zlib

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

pytestmark = pytest.mark.usefixtures("native_libraries")

TOLERANCE = {np.dtype(np.float32): 1e-4, np.dtype(jnp.bfloat16): 2.0 ** -6}
S, H, F, HEADS, HEAD_DIM = 64, 64, 128, 8, 8


def rms_norm(x, scale):
    """What a Llama block does before its FFN: in f32, back to x's type."""
    x32 = x.astype(jnp.float32)
    var = jnp.mean(x32 * x32, axis=-1, keepdims=True)
    return (x32 * lax.rsqrt(var + 1e-6) * scale).astype(x.dtype)


def layer_norm(x, scale):
    x32 = x.astype(jnp.float32)
    mean = jnp.mean(x32, axis=-1, keepdims=True)
    var = jnp.mean((x32 - mean) ** 2, axis=-1, keepdims=True)
    return ((x32 - mean) * lax.rsqrt(var + 1e-5) * scale).astype(x.dtype)


def swiglu_ffn(x, scale, w1, w2, w3, norm, reduce):
    if norm:
        x = rms_norm(x, scale)
    axis = x.ndim - 2
    g = lax.all_gather(x, "tp", axis=axis, tiled=True)
    h = jax.nn.silu(g @ w1) * (g @ w2)
    if reduce == "psum":
        return lax.psum(h @ w3, "tp")
    return lax.psum_scatter(h @ w3, "tp", scatter_dimension=axis,
                            tiled=True)


def attention(x, scale, wq, wk, wv, norm, wo=None):
    if norm:
        x = layer_norm(x, scale)
    axis = x.ndim - 2
    g = lax.all_gather(x, "tp", axis=axis, tiled=True)
    heads = wq.shape[1] // HEAD_DIM
    split = g.shape[:-1] + (heads, HEAD_DIM)
    # Q scaled as soon as it is projected, K and V reshaped to heads.
    q = (g @ wq).reshape(split) * (HEAD_DIM ** -0.5)
    k = (g @ wk).reshape(split)
    v = (g @ wv).reshape(split)
    # Scores and softmax in f32 (as MaxText and most bf16 models do).
    s = jnp.einsum("...qhd,...khd->...hqk", q, k,
                   preferred_element_type=jnp.float32)
    p = jax.nn.softmax(s, axis=-1).astype(x.dtype)
    o = jnp.einsum("...hqk,...khd->...qhd", p, v)
    o = o.reshape(g.shape[:-1] + (heads * HEAD_DIM,))
    if wo is None:
        return o
    # The row-parallel output projection, summed, plus the residual: the
    # gathered activation itself is used again.
    return g + lax.psum(o @ wo, "tp")


def program(kind, b, norm, dtype, mesh, seed=None):
    rng = np.random.default_rng(
        zlib.crc32(f"{kind}-{b}-{norm}".encode()) if seed is None else seed)
    shape = (S, H) if b == 1 else (b, S, H)
    seq = P("tp") if b == 1 else P(None, "tp")
    cols = P(None, "tp") if b == 1 else P(None, None, "tp")
    x = rng.standard_normal(shape).astype(dtype)
    scale = (1.0 + 0.1 * rng.standard_normal((H,))).astype(np.float32)

    def weights(*shapes):
        return [(rng.standard_normal(s) / np.sqrt(s[0])).astype(dtype)
                for s in shapes]

    if kind.startswith("ffn"):
        reduce = "psum" if kind == "ffn-psum" else "psum_scatter"
        w1, w2, w3 = weights((H, F), (H, F), (F, H))

        def body(x, scale, w1, w2, w3):
            return swiglu_ffn(x, scale, w1, w2, w3, norm, reduce)

        out = P() if reduce == "psum" else seq
        f = jax.shard_map(body, mesh=mesh,
                          in_specs=(seq, P(), P(None, "tp"), P(None, "tp"),
                                    P("tp")),
                          out_specs=out)
        return f, (x, scale, w1, w2, w3)
    wq, wk, wv = weights(*[(H, HEADS * HEAD_DIM)] * 3)
    in_specs = (seq, P(), P(None, "tp"), P(None, "tp"), P(None, "tp"))
    if kind == "attn":
        def body(x, scale, wq, wk, wv):
            return attention(x, scale, wq, wk, wv, norm)

        f = jax.shard_map(body, mesh=mesh, in_specs=in_specs, out_specs=cols)
        return f, (x, scale, wq, wk, wv)
    (wo,) = weights((HEADS * HEAD_DIM, H))

    def body(x, scale, wq, wk, wv, wo):
        return attention(x, scale, wq, wk, wv, norm, wo)

    # JAX does not infer that a gathered value is the same on every rank.
    f = jax.shard_map(body, mesh=mesh, in_specs=in_specs + (P("tp"),),
                      out_specs=P(), check_vma=False)
    return f, (x, scale, wq, wk, wv, wo)


# The eight variants of the issue (gate/up FFN and Q/K/V attention, b = 1
# and 2, with and without a norm), the FFN's psum form, and the residual
# user of the gathered activation.
VARIANTS = [(kind, b, norm)
            for kind in ("ffn", "attn") for b in (1, 2) for norm in (False,
                                                                    True)]
VARIANTS += [("ffn-psum", 1, True), ("ffn-psum", 2, False),
             ("attn-residual", 1, False), ("attn-residual", 2, True)]
IDS = [f"{k}-b{b}{'-norm' if n else ''}" for k, b, n in VARIANTS]
DTYPES = [np.float32, jnp.bfloat16]


@pytest.fixture(scope="module")
def mesh():
    return Mesh(np.array(jax.devices()[:4]), ("tp",))


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "bf16"])
@pytest.mark.parametrize("kind,b,norm", VARIANTS, ids=IDS)
def test_gather_feeding_several_contractions_is_overlapped(mesh, kind, b,
                                                           norm, dtype):
    f, args = program(kind, b, norm, dtype, mesh)
    want = jax.jit(f)(*args)
    res = ojax.run(f, *args, strategy="uniform:2")
    got = res.outputs[0]
    assert got.shape == want.shape and got.dtype == want.dtype
    err = layers.max_error(got, np.asarray(want))
    assert err <= TOLERANCE[np.dtype(dtype)], f"max error {err:.3g}"
    gathers = [p for p in res.plans
               if p["op"] == "overlap.all_gather_matmul"]
    assert len(gathers) == 1, (res.plans, res.missed)
    assert len(gathers[0]["tiles"]) == 2, gathers
    if kind != "attn":
        # The down or output projection is fused with its collective too.
        assert any(p["op"] in ("overlap.matmul_reduce_scatter",
                               "overlap.matmul_all_reduce")
                   for p in res.plans), res.plans
    # The projections are merged and fused: nothing is said about the
    # gather being needed whole.
    assert not any("other users" in m["reason"] for m in res.missed), \
        res.missed


def _have_cuda_backend():
    return any((d / "liboverlap_runtime_cuda.so").is_file()
               for d in overlap.native.library_dirs())


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "bf16"])
@pytest.mark.parametrize("kind,b,norm", VARIANTS, ids=IDS)
def test_gather_feeding_several_contractions_compiles_for_cuda(
        mesh, kind, b, norm, dtype, tmp_path):
    if not _have_cuda_backend():
        pytest.skip("the CUDA backend was not built "
                    "(no liboverlap_runtime_cuda.so)")
    f, args = program(kind, b, norm, dtype, mesh)
    prog = overlap.compile(ojax.lower(f, *args), target="cuda",
                           strategy="uniform:2", emit="obj",
                           output=tmp_path / "layer.o")
    assert os.path.getsize(prog.path) > 0
    assert any(p["op"] == "overlap.all_gather_matmul" and
               len(p["tiles"]) == 2 for p in prog.plans), prog.plans
