"""The kinds of program JAX's own shard_map material (the shard_map
notebook, shard_map_test.py) and users' layers exercise, written here, one
function each, through overlap.jax.run against jax.jit on 4 CPU devices
and compiled for --target=cuda. A kind Overlap does not take yet is an
xfail with its reason (strict: when it starts to work, the test says so).
docs/jax.md gives the counts."""

import functools

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

KINDS = {}


def kind(name, *, xfail=None):
    def register(build):
        KINDS[name] = (build, xfail)
        return build
    return register


def _rng(seed=0):
    return np.random.default_rng(seed)


def _r(*shape, seed=0, scale=1.0, dtype=np.float32):
    return (_rng(seed).standard_normal(shape) * scale).astype(dtype)


def _m1():
    return cpu_mesh("x")


def _m2():
    return cpu_mesh("dp", "tp", shape=(2, 2))


def sm(f, mesh, i, o, **kw):
    return jax.shard_map(f, mesh=mesh, in_specs=i, out_specs=o, **kw)


@kind("row-parallel matmul + psum")
def _():
    f = sm(lambda x, w: lax.psum(x @ w, "x"), _m1(), (P(None, "x"), P("x")),
           P())
    return f, (_r(256, 64), _r(64, 32, seed=1))


@kind("all_gather + matmul (column parallel)")
def _():
    f = sm(lambda x, w: lax.all_gather(x, "x", tiled=True) @ w, _m1(),
           (P("x"), P(None, "x")), P(None, "x"))
    return f, (_r(512, 32), _r(32, 64, seed=1))


@kind("matmul + psum_scatter")
def _():
    f = sm(lambda x, w: lax.psum_scatter(x @ w, "x", tiled=True), _m1(),
           (P(None, "x"), P("x")), P("x"))
    return f, (_r(512, 64), _r(64, 32, seed=1))


@kind("all_gather untiled and psum over a tuple of axes")
def _():
    def body(x):
        g = lax.all_gather(x, ("dp", "tp"))
        return lax.psum(g.sum(0), ("dp", "tp"))
    return sm(body, _m2(), P(("dp", "tp")), P()), (_r(8, 4),)


@kind("pmax, pmin, pmean")
def _():
    def body(x):
        return lax.pmax(x, "x") - lax.pmin(x, "x") + lax.pmean(x, "x")
    return sm(body, _m1(), P("x"), P()), (_r(8, 4),)


@kind("all_to_all")
def _():
    f = sm(lambda x: lax.all_to_all(x, "x", 0, 1, tiled=True), _m1(),
           P("x"), P("x"))
    return f, (_r(16, 8),)


@kind("ppermute ring shift")
def _():
    f = sm(lambda x: lax.ppermute(x, "x", [(i, (i + 1) % 4)
                                           for i in range(4)]),
           _m1(), P("x"), P("x"))
    return f, (_r(8, 4),)


@kind("collective matmul by ppermute in a fori_loop (notebook)")
def _():
    def body(lhs, rhs):
        idx = lax.axis_index("x")
        rows = lhs.shape[0]
        out = jnp.zeros((rows * 4, rhs.shape[1]), lhs.dtype)

        def step(i, carry):
            out, b = carry
            out = lax.dynamic_update_slice(out, b @ rhs,
                                           (((idx + i) % 4) * rows, 0))
            return out, lax.ppermute(b, "x", [(j, (j - 1) % 4)
                                              for j in range(4)])
        return lax.fori_loop(0, 4, step, (out, lhs))[0]
    f = sm(body, _m1(), (P("x"), P(None, "x")), P(None, "x"),
           check_vma=False)
    return f, (_r(16, 8), _r(8, 16, seed=1))


@kind("reduce-scatter matmul by ppermute (notebook, bidirectional sum)")
def _():
    def body(lhs, rhs):
        idx = lax.axis_index("x")
        chunk = lhs.shape[0] // 4
        acc = jnp.zeros((chunk, rhs.shape[1]), lhs.dtype)

        def step(i, acc):
            acc = lax.ppermute(acc, "x", [(j, (j + 1) % 4)
                                          for j in range(4)])
            rows = lax.dynamic_slice_in_dim(
                lhs, ((idx - i - 1) % 4) * chunk, chunk)
            return acc + rows @ rhs
        return lax.fori_loop(0, 4, step, acc)
    f = sm(body, _m1(), (P(None, "x"), P("x")), P("x"), check_vma=False)
    return f, (_r(16, 8), _r(8, 8, seed=1))


@kind("axis_index select")
def _():
    def body(x):
        i = lax.axis_index("x")
        return jnp.where(i % 2 == 0, x * 2.0, -x)
    return sm(body, _m1(), P("x"), P("x")), (_r(8, 4),)


@kind("nested jit and remat")
def _():
    inner = jax.jit(lambda v: jnp.tanh(v) * 2.0)
    body = jax.checkpoint(lambda x: inner(inner(x)))
    return sm(body, _m1(), P("x"), P("x")), (_r(8, 4),)


@kind("scan over stacked layers")
def _():
    def body(x, w):
        def layer(h, wl):
            g = lax.all_gather(jnp.tanh(h @ wl), "x", axis=1, tiled=True)
            return g * 0.5 + h, None
        return lax.scan(layer, x, w)[0]
    f = sm(body, _m1(), (P(), P(None, None, "x")), P(), check_vma=False)
    return f, (_r(16, 32, scale=0.2), _r(3, 32, 32, seed=1, scale=0.2))


@kind("while_loop and cond")
def _():
    def body(x):
        x = lax.while_loop(lambda v: jnp.max(jnp.abs(v)) < 50.0,
                           lambda v: v * 2.0 + 0.1, x)
        return lax.cond(jnp.sum(x) > 0, jnp.sin, jnp.cos, x)
    return sm(body, _m1(), P("x"), P("x")), (_r(8, 4),)


@kind("2-D mesh: data parallel x tensor parallel MLP")
def _():
    def body(x, w1, w2):
        h = jax.nn.relu(x @ w1)
        return lax.psum(h @ w2, "tp")
    f = sm(body, _m2(), (P("dp"), P(None, "tp"), P("tp")), P("dp"))
    return f, (_r(256, 32), _r(32, 64, seed=1), _r(64, 32, seed=2))


@kind("GPT-2 MLP block (gelu, residual, bias)")
def _():
    def body(x, w1, b1, w2):
        h = jax.nn.gelu(x @ w1 + b1, approximate=True)
        return x + lax.psum(h @ w2, "x")
    f = sm(body, _m1(), (P(), P(None, "x"), P("x"), P("x")), P())
    return f, (_r(128, 32), _r(32, 64, seed=1, scale=0.2),
               _r(64, seed=2), _r(64, 32, seed=3, scale=0.2))


@kind("Llama block: RMSNorm, SwiGLU")
def _():
    def body(x, g, wg, wu, wd):
        n = x * lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6) * g
        h = jax.nn.silu(n @ wg) * (n @ wu)
        return x + lax.psum(h @ wd, "x")
    f = sm(body, _m1(), (P(), P(), P(None, "x"), P(None, "x"), P("x")), P())
    return f, (_r(128, 32), _r(32, seed=4), _r(32, 64, seed=1, scale=0.2),
               _r(32, 64, seed=2, scale=0.2), _r(64, 32, seed=3, scale=0.2))


@kind("attention heads: softmax, causal mask (iota, compare, select)")
def _():
    def body(q, k, v):
        s = jnp.einsum("hqd,hkd->hqk", q, k) / np.sqrt(q.shape[-1])
        n = s.shape[-1]
        mask = lax.broadcasted_iota(jnp.int32, (n, n), 0) >= \
            lax.broadcasted_iota(jnp.int32, (n, n), 1)
        s = jnp.where(mask, s, -1e9)
        p = jnp.exp(s - jnp.max(s, -1, keepdims=True))
        p = p / jnp.sum(p, -1, keepdims=True)
        return jnp.einsum("hqk,hkd->hqd", p, v)
    f = sm(body, _m1(), (P("x"), P("x"), P("x")), P("x"))
    return f, (_r(8, 16, 8), _r(8, 16, 8, seed=1), _r(8, 16, 8, seed=2))


@kind("layer norm")
def _():
    def body(x):
        mu = jnp.mean(x, -1, keepdims=True)
        var = jnp.mean((x - mu) ** 2, -1, keepdims=True)
        return (x - mu) * lax.rsqrt(var + 1e-5)
    return sm(body, _m1(), P("x"), P("x")), (_r(16, 32),)


@kind("rotary embedding (sin, cos, slices, concatenate)")
def _():
    def body(x):
        half = x.shape[-1] // 2
        pos = lax.broadcasted_iota(jnp.float32, x.shape[:-1] + (half,), 0)
        ang = pos * 0.1
        a, b = x[..., :half], x[..., half:]
        return jnp.concatenate([a * jnp.cos(ang) - b * jnp.sin(ang),
                                a * jnp.sin(ang) + b * jnp.cos(ang)], -1)
    return sm(body, _m1(), P("x"), P("x")), (_r(16, 8),)


@kind("MoE: all_to_all dispatch, expert GEMMs, all_to_all combine")
def _():
    def body(x, w):
        t = lax.all_to_all(x, "x", 0, 0, tiled=True)
        h = jnp.einsum("etd,edf->etf", t.reshape(w.shape[0], -1, x.shape[-1]),
                       w)
        return lax.all_to_all(h.reshape(x.shape[0], -1), "x", 0, 0,
                              tiled=True)
    f = sm(body, _m1(), (P("x"), P("x")), P("x"))
    return f, (_r(64, 16), _r(4, 16, 16, seed=1))


@kind("MoE written x @ w[0] after all_to_all")
def _():
    def body(x, w):
        t = lax.all_to_all(x, "x", 0, 0, tiled=True)
        return lax.all_to_all(t @ w[0], "x", 0, 0, tiled=True)
    f = sm(body, _m1(), (P("x"), P("x")), P("x"))
    return f, (_r(64, 16), _r(4, 16, 16, seed=1))


@kind("bf16 layer")
def _():
    def body(x, w):
        return lax.psum(x @ w, "x")
    f = sm(body, _m1(), (P(None, "x"), P("x")), P())
    return f, (np.asarray(jnp.asarray(_r(256, 64), jnp.bfloat16)),
               np.asarray(jnp.asarray(_r(64, 32, seed=1), jnp.bfloat16)))


@kind("pytree of parameters")
def _():
    def body(x, params):
        return lax.psum(jnp.tanh(x @ params["w"]) @ params["v"], "x")
    f = sm(body, _m1(), (P(), {"w": P(None, "x"), "v": P("x")}), P())
    return f, (_r(64, 16), {"w": _r(16, 32, seed=1), "v": _r(32, 8, seed=2)})


@kind("dynamic_slice of this rank's chunk")
def _():
    def body(x, table):
        i = lax.axis_index("x")
        return x + lax.dynamic_slice_in_dim(table, i * 2, 2)
    f = sm(body, _m1(), (P("x"), P()), P("x"))
    return f, (_r(8, 4), _r(8, 4, seed=1))


@kind("vocab-parallel embedding lookup (take)")
def _():
    def body(ids, emb):
        i = lax.axis_index("x")
        local = ids - i * emb.shape[0]
        ok = (local >= 0) & (local < emb.shape[0])
        rows = jnp.take(emb, jnp.clip(local, 0, emb.shape[0] - 1), axis=0)
        return lax.psum(jnp.where(ok[:, None], rows, 0.0), "x")
    # run() takes float arrays: the ids travel as f32 and are converted.
    f = sm(lambda ids, emb: body(ids.astype(jnp.int32), emb), _m1(),
           (P(), P("x")), P())
    ids = _rng(3).integers(0, 32, size=(8,)).astype(np.float32)
    return f, (ids, _r(32, 4))


@kind("cumsum")
def _():
    return sm(lambda x: jnp.cumsum(x, 0), _m1(), P("x"), P("x")), \
        (_r(8, 4),)


@kind("argmax")
def _():
    f = sm(lambda x: jnp.argmax(x, -1).astype(jnp.float32), _m1(), P("x"),
           P("x"))
    return f, (_r(8, 4),)


@kind("scatter-add: .at[ids].add and the gradient of an embedding take")
def _():
    def body(idsf, emb, u):
        ids = idsf.astype(jnp.int32)
        # .at[].add with repeats and ids past the table (dropped).
        hist = emb.at[ids % 12].add(u)
        # jnp.take's transpose under jax.grad: the rows' cotangents added
        # into a zero table.
        g = jax.grad(lambda e: jnp.sum(jnp.tanh(jnp.take(e, ids, axis=0))))(
            emb)
        return hist + g
    f = sm(body, _m1(), (P(), P("x"), P()), P("x"))
    ids = _rng(5).integers(0, 16, size=(12,)).astype(np.float32)
    ids[:3] = 2.0
    return f, (ids, _r(16, 4), _r(12, 4, seed=1))


@kind("pad: the gradient of rotary embedding's halves")
def _():
    def body(x):
        def loss(x):
            half = x.shape[-1] // 2
            ang = lax.broadcasted_iota(jnp.float32, x.shape[:-1] + (half,),
                                       0) * 0.1
            a, b = x[..., :half], x[..., half:]
            y = jnp.concatenate([a * jnp.cos(ang) - b * jnp.sin(ang),
                                 a * jnp.sin(ang) + b * jnp.cos(ang)], -1)
            return jnp.sum(y ** 3)
        return jax.grad(loss)(x)
    return sm(body, _m1(), P("x"), P("x")), (_r(16, 8),)


@kind("top_k routing (MoE gate) and its gradient")
def _():
    def body(x, wg):
        def gate(wg):
            probs = jax.nn.softmax(x @ wg, axis=-1)
            top, idx = lax.top_k(probs, 2)
            return jnp.sum(top ** 2), idx
        (_, idx), g = jax.value_and_grad(gate, has_aux=True)(wg)
        return idx.astype(jnp.float32), lax.psum(g, "x")
    f = sm(body, _m1(), (P("x"), P()), (P("x"), P()))
    return f, (_r(16, 8), _r(8, 4, seed=1))


@kind("vocab-parallel cross-entropy (take_along_axis) and its gradient")
def _():
    def body(logits, labelsf):
        def loss(logits):
            vl = logits.shape[-1]
            local = labelsf.astype(jnp.int32) - lax.axis_index("x") * vl
            ok = (local >= 0) & (local < vl)
            m = lax.pmax(lax.stop_gradient(jnp.max(logits, -1)), "x")
            lse = jnp.log(lax.psum(jnp.sum(jnp.exp(logits - m[:, None]),
                                           -1), "x")) + m
            picked = jnp.take_along_axis(
                logits, jnp.where(ok, local, 0)[:, None], axis=-1)[:, 0]
            return jnp.mean(lse - lax.psum(jnp.where(ok, picked, 0.0), "x"))
        return jax.grad(loss)(logits)
    f = sm(body, _m1(), (P(None, "x"), P()), P(None, "x"))
    labels = _rng(6).integers(0, 32, size=(8,)).astype(np.float32)
    return f, (_r(8, 32), labels)


@kind("optax-style update: isfinite, all, sign")
def _():
    def body(w, g):
        ok = jnp.all(jnp.isfinite(g))
        g = jnp.where(jnp.isfinite(g), g, 0.0)
        return jnp.where(ok, w - 0.01 * jnp.sign(g), w - 0.1 * g)
    g = _r(8, 4, seed=1)
    g[1, 2], g[5, 0] = np.inf, np.nan
    return sm(body, _m1(), (P("x"), P("x")), P("x")), (_r(8, 4), g)


# From the patterns of JAX's shard_map_test.py (written here).

@kind("psum_scatter over one axis and over a tuple of axes")
def _():
    def body(a, b):
        c = a @ b
        return (lax.psum_scatter(c, "tp", scatter_dimension=0, tiled=True),
                lax.psum_scatter(c, ("dp", "tp"), scatter_dimension=0,
                                 tiled=True))
    f = sm(body, _m2(), (P("dp", "tp"), P("tp", None)),
           (P(("dp", "tp")), P(("dp", "tp"))))
    return f, (_r(8, 8), _r(8, 8, seed=1))


@kind("optimization_barrier around an operand")
def _():
    def body(a, w):
        w2, _ = lax.optimization_barrier((w, a))
        return jnp.dot(a, w2.T)
    return sm(body, _m1(), (P("x"), P()), P("x")), (_r(8, 4), _r(3, 4, seed=1))


@kind("all_to_all tiled, split 1 concat 0")
def _():
    f = sm(lambda a: lax.all_to_all(a, "x", 1, 0, tiled=True), _m1(), P("x"),
           P("x"))
    return f, (_r(8, 8),)


@kind("pmean over both axes of a 2-D mesh, replicated out")
def _():
    f = sm(lambda a: lax.pmean(a, ("dp", "tp")), _m2(), P("dp", "tp"), P())
    return f, (_r(4, 4),)


@kind("psum of an integer count")
def _():
    f = sm(lambda a: lax.psum((a > 0).astype(jnp.int32), "x")
           .astype(jnp.float32), _m1(), P("x"), P())
    return f, (_r(8, 4),)


@kind("jax.grad inside the shard_map (add_any)")
def _():
    def body(w, x):
        g = jax.grad(lambda w: jnp.sum(jnp.tanh(x @ w)))(w)
        return lax.psum(g, "x")
    return sm(body, _m1(), (P(), P("x")), P()), (_r(4, 3), _r(8, 4, seed=1))


@kind("vmap inside the shard_map")
def _():
    f = sm(lambda a, b: jax.vmap(lambda u, v: u @ v)(a, b), _m1(),
           (P("x"), P("x")), P("x"))
    return f, (_r(4, 3, 5), _r(4, 5, 2, seed=1))


@kind("batched einsum + psum over the contraction")
def _():
    f = sm(lambda a, b: lax.psum(jnp.einsum("bij,bjk->bik", a, b), "x"),
           _m1(), (P(None, None, "x"), P(None, "x", None)), P())
    return f, (_r(2, 3, 8), _r(2, 8, 4, seed=1))


@kind("all_gather with axis_index_groups",
      xfail="axis_index_groups (sub-groups of a mesh axis) are not "
            "translated; JAX's own shard_map refuses them for psum")
def _():
    f = sm(lambda a: lax.all_gather(a, "x", axis_index_groups=((0, 1), (2, 3)),
                                    axis=-1, tiled=True), _m1(),
           P(None, "x"), P(None, "x"))
    return f, (_r(4, 8),)


@kind("random numbers", xfail="random primitives are not translated")
def _():
    def body(x):
        k = jax.random.key(0)
        return x + jax.random.normal(k, x.shape)
    return sm(body, _m1(), P("x"), P("x")), (_r(8, 4),)


def _run(name):
    build, _ = KINDS[name]
    f, args = build()
    res = ojax.run(f, *args, strategy="auto")
    want = jax.tree_util.tree_leaves(jax.jit(f)(*args))
    assert len(res.outputs) == len(want)
    for got, ref in zip(res.outputs, want):
        ref = np.asarray(ref).astype(np.float64)
        # bf16: a few ulps of the largest magnitude (a psum of bf16
        # partial products is summed in f32 here, in bf16 steps by XLA).
        scale = max(float(np.abs(ref).max()), 1.0)
        tol = 1e-2 * scale if np.asarray(got).dtype.name == "bfloat16" \
            else 2e-4 * scale
        np.testing.assert_allclose(np.asarray(got, np.float64), ref,
                                   rtol=0, atol=tol)
    return res


def _params():
    out = []
    for name, (_, why) in KINDS.items():
        marks = [pytest.mark.xfail(reason=why, strict=True)] if why else []
        out.append(pytest.param(name, marks=marks, id=name))
    return out


@pytest.mark.parametrize("name", _params())
def test_kind_matches_jax(name):
    _run(name)


@pytest.mark.parametrize("name", _params())
def test_kind_compiles_for_cuda(name, tmp_path):
    build, _ = KINDS[name]
    f, args = build()
    overlap.compile(ojax.lower(f, *args), target="cuda",
                    output=tmp_path / "k.so")
