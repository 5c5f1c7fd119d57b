"""The primitives that gradients and training code bring (issue 51, items
6 and 7): ``pad`` (the transpose of a slice: RoPE halves under
jax.grad), ``scatter-add`` (the transpose of an embedding's ``take``,
``take_along_axis``'s and ``top_k``'s; ``x.at[ids].add``), ``top_k``
(MoE routing), ``is_finite`` and ``sign`` (optax-style updates), the
``gather`` of ``jnp.take_along_axis`` (vocab-parallel cross-entropy),
``reduce_and`` / ``reduce_or`` (``jnp.all(jnp.isfinite(g))``): each
alone, then inside the layer that has it, through overlap.jax.run on 4
CPU devices against jax.jit(f) in f32 and bf16, through overlap.jax.jit
in a training step against pure JAX, and compiled for target="cuda".

Integer indices come as int32 arguments (token ids, labels) or are
computed inside the shard_map (from a float argument, argmax)."""

import os
import tempfile

import numpy as np
import pytest

from conftest import cpu_mesh, require_jax

jax = require_jax()

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import overlap  # noqa: E402

ojax = pytest.importorskip("overlap.jax")

os.environ.setdefault("OVERLAP_JAX_FFI_CACHE",
                      tempfile.mkdtemp(prefix="overlap-jax-ffi-test-"))

pytestmark = pytest.mark.usefixtures("native_libraries")

BF16 = jnp.bfloat16
#: Relative to the output's largest magnitude: f32 (contractions summed in
#: another order), bf16 (a few ulps: XLA's CPU may keep f32 between
#: primitives where Overlap rounds after each).
TOLERANCE = {"float32": 1e-4, "bfloat16": 3e-2}


@pytest.fixture(scope="module")
def mesh():
    return cpu_mesh("x")


def sm(mesh, f, i, o):
    return jax.shard_map(f, mesh=mesh, in_specs=i, out_specs=o,
                         check_vma=False)


def rand(*shape, seed=0, scale=1.0, dtype=np.float32):
    x = np.random.default_rng(seed).standard_normal(shape) * scale
    return np.array(jnp.asarray(x.astype(np.float32), dtype))


def compare(got, want, dtype=None):
    """NaN for NaN, inf for inf, finite values within the dtype's
    tolerance of the largest finite magnitude."""
    want = np.asarray(want)
    tol = TOLERANCE[np.dtype(dtype or want.dtype).name]
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    inf = np.isinf(want)
    np.testing.assert_array_equal(got[inf], want[inf])
    finite = np.isfinite(want)
    np.testing.assert_array_equal(np.isfinite(got), finite)
    if finite.any():
        scale = max(np.abs(want[finite]).max(), 1e-30)
        np.testing.assert_allclose(got[finite], want[finite], rtol=0,
                                   atol=tol * scale)


def check(f, *args, exact=False):
    """overlap.jax.run(f) against jax.jit(f): `exact` outputs bit for bit
    (data movement, selections), else within TOLERANCE."""
    res = ojax.run(f, *args, strategy="none")
    want = jax.tree_util.tree_leaves(jax.jit(f)(*args))
    assert len(res.outputs) == len(want)
    for got, ref in zip(res.outputs, want):
        if exact:
            np.testing.assert_array_equal(
                np.asarray(got, np.float64), np.asarray(ref, np.float64))
        else:
            compare(got, ref)
    return res


def compiles_for_cuda(f, *args, tmp_path):
    overlap.compile(ojax.lower(f, *args), target="cuda",
                    output=tmp_path / "layer.so")


DTYPES = [np.float32, BF16]
IDS = ["f32", "bf16"]


# -- pad ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_pad_low_high_interior_and_negative(mesh, dtype):
    """lax.pad as it allows: low, high and interior padding, negative low
    and high padding that cut into the operand (and into its interior
    padding), a padding value that is a literal or computed."""
    def body(x):
        a = lax.pad(x, jnp.asarray(1.5, x.dtype), [(1, -2, 1), (-1, 2, 0)])
        b = lax.pad(x, jnp.max(x), [(0, 0, 0), (2, 3, 2)])
        c = lax.pad(x, jnp.asarray(0, x.dtype), [(-3, -1, 2), (0, -5, 1)])
        return a, b, c
    f = sm(mesh, body, P("x"), (P("x"), P("x"), P("x")))
    check(f, rand(16, 8, dtype=dtype), exact=True)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_grad_of_slices_is_pad(mesh, dtype):
    """RoPE's halves and a strided slice under jax.grad: their transposes
    are pads of the cotangent with zeros."""
    def body(x):
        def loss(x):
            h = x.shape[-1] // 2
            a, b = x[..., :h], x[..., h:]
            y = jnp.concatenate([a * 2.0 - b, a + b * 3.0], -1)
            return jnp.sum(jnp.tanh(y) ** 2) + jnp.sum(x[1::3, ::2] ** 3)
        return jax.grad(loss)(x)
    f = sm(mesh, body, P("x"), P("x"))
    x = rand(32, 8, dtype=dtype)
    assert "pad" in str(jax.make_jaxpr(f)(x))
    check(f, x)


def rope(x, base=10000.0):
    """Rotary embedding of [s, h, d] by halves (GPT-NeoX and Llama as
    users write it: slices, not a reshape into pairs)."""
    s, _, d = x.shape
    half = d // 2
    freq = base ** (-jnp.arange(half, dtype=jnp.float32) / half)
    ang = jnp.arange(s, dtype=jnp.float32)[:, None] * freq[None, :]
    cos = jnp.cos(ang)[:, None, :].astype(x.dtype)
    sin = jnp.sin(ang)[:, None, :].astype(x.dtype)
    x1, x2 = x[..., :half], x[..., half:]
    return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)


def rope_attention(x, wq, wk, wv, wo):
    """Causal attention over the device's heads with RoPE, then the
    row-parallel output projection: [s, m] -> [s, m]."""
    s = x.shape[0]
    d = 8
    q = (x @ wq).reshape(s, -1, d)
    k = (x @ wk).reshape(s, -1, d)
    v = (x @ wv).reshape(s, -1, d)
    q, k = rope(q), rope(k)
    sc = jnp.einsum("qhd,khd->hqk", q, k) / np.sqrt(d).astype(x.dtype)
    mask = jnp.arange(s)[:, None] >= jnp.arange(s)[None, :]
    sc = jnp.where(mask, sc, jnp.asarray(-1e9, sc.dtype))
    p = jax.nn.softmax(sc, axis=-1)
    o = jnp.einsum("hqk,khd->qhd", p, v).reshape(s, -1)
    return lax.psum(o @ wo, "x")


def rope_args(dtype, seed=0):
    m = 32
    return (rand(16, m, seed=seed, dtype=dtype),
            rand(m, m, seed=seed + 1, scale=0.2, dtype=dtype),
            rand(m, m, seed=seed + 2, scale=0.2, dtype=dtype),
            rand(m, m, seed=seed + 3, scale=0.2, dtype=dtype),
            rand(m, m, seed=seed + 4, scale=0.2, dtype=dtype))


ROPE_SPECS = (P(), P(None, "x"), P(None, "x"), P(None, "x"), P("x"))


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_rope_attention_under_grad(mesh, dtype):
    """Tensor-parallel RoPE attention (heads split over the mesh) and the
    gradient of a loss on it with respect to x and every weight."""
    def body(x, wq, wk, wv, wo):
        def loss(x, wq, wk, wv, wo):
            y = rope_attention(x, wq, wk, wv, wo)
            return jnp.mean(y.astype(jnp.float32) ** 2)
        return jax.grad(loss, argnums=(0, 1, 2, 3, 4))(x, wq, wk, wv, wo)
    f = sm(mesh, body, ROPE_SPECS, ROPE_SPECS)
    args = rope_args(dtype)
    assert "pad" in str(jax.make_jaxpr(f)(*args))
    check(f, *args)


# -- scatter-add --------------------------------------------------------------

def _ids(x, n):
    """Integer indices from a float block: ranges past [0, n) on both
    sides, with repeats."""
    return (x * n * 0.4 + n * 0.5).astype(jnp.int32)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("mode", [None, "clip", "drop", "promise_in_bounds"])
def test_at_add_forms(mesh, dtype, mode):
    """What jnp's .at[...].add writes, each mode: 1-D indices into rows, a
    scalar per element of a vector, 2-D indices (two index arrays), rows
    and a window of columns (an index array and a slice), a [n, m] array
    of row indices; repeated indices add up, out-of-range ones are dropped
    or clamped. promise_in_bounds only where the indices are in range."""
    def body(t, x):
        n = t.shape[0]
        ids = _ids(x[:, 0], n)
        cols = _ids(x[:, 1], t.shape[1])
        if mode == "promise_in_bounds":
            ids, cols = ids % n, cols % t.shape[1]
        u = x[:, 2:2 + t.shape[1]].astype(t.dtype)
        kw = {} if mode is None else {"mode": mode}
        a = t.at[ids].add(u, **kw)
        b = t[:, 0].at[ids].add(u[:, 0], **kw)
        c = t.at[ids, cols].add(u[:, 1], **kw)
        d = t.at[ids, 1:3].add(u[:, :2], **kw)
        e = t.at[ids.reshape(2, -1)].add(u.reshape(2, -1, t.shape[1]), **kw)
        return a, b, c, d, e
    f = sm(mesh, body, (P(), P("x")), (P("x"),) * 5)
    t = rand(8, 4, dtype=dtype)
    x = rand(32, 8, seed=1)
    jaxpr = str(jax.make_jaxpr(f)(t, x))
    assert jaxpr.count("scatter-add") == 5, jaxpr
    check(f, t, x)


def test_scatter_add_of_integers_and_batching_dims(mesh):
    """An int32 histogram (.at[].add of ones) and the scatter-add with
    operand batching dims that take_along_axis's gradient writes, called
    directly."""
    def body(x):
        ids = _ids(x[:, 0], 6)
        hist = jnp.zeros(6, jnp.int32).at[ids].add(1)
        pick = jnp.argmax(x, -1)[:, None]
        g = jax.grad(lambda x: jnp.sum(
            jnp.take_along_axis(x, pick, axis=-1) ** 2))(x)
        return hist.astype(jnp.float32), g
    f = sm(mesh, body, P("x"), (P("x"), P("x")))
    check(f, rand(32, 8))


def test_bf16_scatter_add_rounds_after_each_add(mesh):
    """256 bf16 rows added into 2: rounded to bf16 after each add, in the
    order of the updates, as XLA's CPU does (bit for bit; the exact sum
    differs by several ulps)."""
    def body(t, u):
        ids = (jnp.abs(u[:, 0].astype(jnp.float32)) * 3).astype(
            jnp.int32) % 2
        g = jax.grad(lambda e: jnp.sum(jnp.take(e, ids, axis=0).astype(
            jnp.float32) * u.astype(jnp.float32)))(t)
        return t.at[ids].add(u), g
    f = sm(mesh, body, (P(), P()), (P(), P()))
    u = rand(256, 4, scale=0.3, dtype=np.float32) + 1.0
    check(f, np.zeros((4, 4), BF16), np.asarray(jnp.asarray(u, BF16)),
          exact=True)


def test_gather_of_a_collective_result(mesh):
    """A gather of a psum's result (its generic reads the psum with
    tensor.extract in its body): it read the result before the all-reduce
    ended (a wrong result) until overlap-schedule-streams took reads in a
    linalg body into the op's footprint."""
    def body(x):
        v = lax.psum(x, "x")
        idx = (jnp.abs(x) * 4).astype(jnp.int32)[:, :2] % x.shape[1]
        return jnp.take_along_axis(v, idx, axis=1)
    check(sm(mesh, body, P("x"), P("x")), rand(16, 8), exact=True)


def embedding_loss(ids, emb, w):
    """A vocab-parallel embedding lookup (each device holds rows
    [r V/4, (r + 1) V/4), the ids outside them give zeros, psum), a
    projection and a loss: [t] ids (int32, or floats) -> scalar."""
    ids = ids.astype(jnp.int32)
    v = emb.shape[0]
    local = ids - lax.axis_index("x") * v
    ok = (local >= 0) & (local < v)
    rows = jnp.take(emb, jnp.where(ok, local, 0), axis=0)
    h = lax.psum(jnp.where(ok[:, None], rows, jnp.zeros_like(rows)), "x")
    y = jnp.tanh(h @ w)
    return jnp.mean(y.astype(jnp.float32) ** 2)


def embedding_args(dtype, seed=0, ids_dtype=np.int32):
    ids = np.random.default_rng(seed).integers(0, 64, size=(24,))
    ids[:4] = 5  # repeated tokens: their rows' gradients add up
    return (ids.astype(ids_dtype), rand(16, 8, seed=seed + 1, dtype=dtype),
            rand(8, 8, seed=seed + 2, scale=0.5, dtype=dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_embedding_lookup_under_grad(mesh, dtype):
    """The gradient of the table: a scatter-add of the rows' cotangents
    into zeros (jnp.take's transpose), and x[ids]'s."""
    def body(ids, emb, w):
        g = jax.grad(embedding_loss, argnums=(1, 2))(ids, emb, w)
        local = ids.astype(jnp.int32) % emb.shape[0]
        g2 = jax.grad(lambda e: jnp.sum(jnp.sin(e[local]) * 0.5))(emb)
        return g + (g2,)
    f = sm(mesh, body, (P(), P("x"), P()), (P("x"), P(), P("x")))
    # int32 token ids in f32, ids carried as floats in bf16.
    args = embedding_args(dtype, ids_dtype=np.int32 if dtype == np.float32
                          else np.float32)
    assert "scatter-add" in str(jax.make_jaxpr(f)(*args))
    check(f, *args)


# -- top_k --------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_top_k_values_indices_ties_and_nan(mesh, dtype):
    """Values and indices of the k largest along the last axis: equal
    values lowest index first (+0.0 above -0.0), NaN above inf, -NaN below
    -inf (XLA's order); along an inner axis too; int32 operands."""
    def body(x):
        v, i = lax.top_k(x, 3)
        w, j = lax.top_k(x, x.shape[-1])
        q, r = lax.top_k(jnp.swapaxes(x, 0, 1), 2)
        n, m = lax.top_k((x * 2).astype(jnp.int32), 4)
        return v, i, w, j, q, r, n, m
    f = sm(mesh, body, P("x"), (P("x"),) * 4 + (P(None, "x"),) * 2 +
           (P("x"),) * 2)
    x = np.array(rand(16, 8, dtype=dtype), np.float32)
    x[0] = [1, 1, 1, 0, -0.0, 0, 2, 2]
    x[1] = [np.nan, 1, np.inf, -np.inf, np.nan, -np.nan, 0, 3]
    x[5] = [-0.0, 0.0, -0.0, 0.0, -1, -1, np.inf, -np.inf]
    x = np.asarray(jnp.asarray(x, dtype))
    check(f, x, exact=True)


def moe_gate(x, wg, we):
    """A Mixtral-style router: softmax over the experts, the top 2, their
    weights renormalized, the experts' outputs picked with
    take_along_axis and mixed: [t, m] -> [t, f]."""
    probs = jax.nn.softmax((x @ wg).astype(jnp.float32), axis=-1)
    top, idx = lax.top_k(probs, 2)
    top = (top / jnp.sum(top, -1, keepdims=True)).astype(x.dtype)
    y = jnp.einsum("tm,emf->tef", x, we)
    picked = jnp.take_along_axis(y, idx[:, :, None], axis=1)
    return jnp.sum(top[:, :, None] * picked, axis=1)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_top_k_routing_in_a_moe_gate(mesh, dtype):
    """The gate's output, and its gradient with respect to x, the router
    and the experts (top_k's and take_along_axis's transposes are
    scatter-adds with batching dims); tokens split over the mesh."""
    def body(x, wg, we):
        out = moe_gate(x, wg, we)
        grads = jax.grad(lambda *a: jnp.sum(
            moe_gate(*a).astype(jnp.float32) ** 2),
            argnums=(0, 1, 2))(x, wg, we)
        return (out, grads[0], lax.psum(grads[1], "x"),
                lax.psum(grads[2], "x"))
    f = sm(mesh, body, (P("x"), P(), P()), (P("x"), P("x"), P(), P()))
    args = (rand(32, 16, dtype=dtype),
            rand(16, 4, seed=1, dtype=dtype),
            rand(4, 16, 8, seed=2, scale=0.3, dtype=dtype))
    jaxpr = str(jax.make_jaxpr(f)(*args))
    assert "top_k" in jaxpr and "scatter-add" in jaxpr
    check(f, *args)


# -- take_along_axis ----------------------------------------------------------

def cross_entropy(h, w, labels):
    """Vocab-parallel cross-entropy (Megatron's): each device holds a
    slice of the vocabulary's logits; the label's logit comes from the
    device that holds it (take_along_axis, then a psum). Labels int32 (or
    floats)."""
    logits = (h @ w).astype(jnp.float32)
    vl = logits.shape[-1]
    labels = labels.astype(jnp.int32)
    local = labels - lax.axis_index("x") * vl
    ok = (local >= 0) & (local < vl)
    m = lax.pmax(lax.stop_gradient(jnp.max(logits, -1, keepdims=True)), "x")
    lse = jnp.log(lax.psum(jnp.sum(jnp.exp(logits - m), -1), "x")) + m[:, 0]
    picked = jnp.take_along_axis(logits, jnp.where(ok, local, 0)[:, None],
                                 axis=-1)[:, 0]
    label_logit = lax.psum(jnp.where(ok, picked, 0.0), "x")
    return jnp.mean(lse - label_logit)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_take_along_axis_cross_entropy(mesh, dtype):
    def body(h, w, labels):
        loss, grads = jax.value_and_grad(cross_entropy, argnums=(0, 1))(
            h, w, labels)
        return loss, lax.psum(grads[0], "x"), grads[1]
    f = sm(mesh, body, (P(), P(None, "x"), P()), (P(), P(), P(None, "x")))
    labels = np.random.default_rng(4).integers(0, 64, size=(16,))
    args = (rand(16, 8, dtype=dtype), rand(8, 64, seed=1, dtype=dtype),
            labels.astype(np.int32))
    jaxpr = str(jax.make_jaxpr(f)(*args))
    assert "operand_batching_dims=(0,)" in jaxpr, jaxpr
    check(f, *args)


def test_take_along_axis_forms(mesh):
    """take_along_axis along each axis of a 3-D array, indices out of
    range (NaN: JAX's fill) and negative (from the end), and the gathers
    of x[ids, cols] and x[:, ids]."""
    def body(x):
        y = x.reshape(4, 2, 8)
        i = _ids(y[..., :1], 8)
        a = jnp.take_along_axis(y, i, axis=-1)
        b = jnp.take_along_axis(y, _ids(y[:1], 4) - 2, axis=0)
        c = jnp.take_along_axis(y, i % 2, axis=1)
        ids, cols = _ids(x[:, 0], 8) % 8, _ids(x[:, 1], 8) % 8
        return a, b, c, x[ids, cols], x[:, ids]
    f = sm(mesh, body, P("x"), (P("x"),) * 5)
    check(f, rand(32, 8), exact=True)


# -- is_finite, sign ----------------------------------------------------------

SPECIAL = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30,
                    -3.0, 2.5, 1e30], np.float32)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_is_finite_and_sign(mesh, dtype):
    """jnp.isfinite and jnp.sign at NaN, +-inf, +-0 and finite values,
    sign of int32 too; optax-style uses: zeroing non-finite gradients,
    apply_if_finite's all(isfinite), a sign-SGD step."""
    def body(g, w):
        finite = jnp.isfinite(g)
        clean = jnp.where(finite, g, jnp.zeros_like(g))
        ok = jnp.all(finite)
        bad = jnp.any(~finite, axis=-1)
        step = w - jnp.asarray(0.01, w.dtype) * jnp.sign(clean)
        step = jnp.where(ok, step, w)
        isign = jnp.sign((g * 4).astype(jnp.int32)).astype(jnp.float32)
        return (finite.astype(jnp.float32), jnp.sign(g), step,
                bad.astype(jnp.float32), isign)
    f = sm(mesh, body, (P("x"), P("x")), (P("x"),) * 5)
    g = np.array(rand(16, 10, dtype=dtype), np.float32)
    g[:4] = SPECIAL
    g[8:12] = SPECIAL[::-1]
    g = np.asarray(jnp.asarray(g, dtype))
    w = rand(16, 10, seed=1, dtype=dtype)
    res = check(f, g, w, exact=True)
    # -0.0 keeps its sign.
    assert np.signbit(np.asarray(res.outputs[1], np.float32)[0, 5])


# -- refusals -----------------------------------------------------------------

def test_refused_forms_are_listed_with_unknown_primitives(mesh):
    """A gather in a mode the importer does not take is refused with its
    mode, in the same message as an unknown primitive."""
    dn = lax.GatherDimensionNumbers(offset_dims=(1,),
                                    collapsed_slice_dims=(0,),
                                    start_index_map=(0,))

    def body(x):
        i = jnp.argmax(x, -1)[:, None]
        g = lax.gather(x, i, dn, (1, x.shape[1]), mode="one_hot")
        return g + jnp.round(x)
    f = sm(mesh, body, P("x"), P("x"))
    with pytest.raises(ojax.UnsupportedError) as err:
        ojax.lower(f, rand(16, 8))
    text = str(err.value)
    assert "'round'" in text and "'gather' in mode ONE_HOT" in text, text


# -- through overlap.jax.jit: training steps ----------------------------------

def _err(got, want):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))


def _train(mesh, layer_body, in_specs, args, trainable, steps=3, lr=0.1):
    """A few steps of sign-SGD with non-finite gradients zeroed (optax
    style) on `trainable` arguments of a loss layer, through
    overlap.jax.jit and through JAX: the losses and parameters after each
    step must agree; the layer and its backward compile once."""
    # check_vma=True (JAX's default): with False, the gradient through
    # overlap.jax.jit of a replicated result is the mesh size times JAX's
    # (its backward does not divide the unmapped cotangent as JAX's
    # shard_map transpose does), whatever primitives the layer has.
    f = jax.shard_map(layer_body, mesh=mesh, in_specs=in_specs,
                      out_specs=P())
    layer = ojax.jit(f, strategy="none")

    def make_step(fn):
        def step(*a):
            loss, grads = jax.value_and_grad(fn, argnums=trainable)(*a)
            new = list(a)
            for k, g in zip(trainable, grads):
                g = jnp.where(jnp.isfinite(g), g, jnp.zeros_like(g))
                # A sign-SGD part small enough that a sign flipped where
                # the gradient is ~0 stays within the tolerance.
                new[k] = a[k] - jnp.asarray(lr, a[k].dtype) * (
                    g + 1e-4 * jnp.sign(g))
            return loss, new
        return jax.jit(step)

    ours, theirs = make_step(layer), make_step(f)
    a, b = list(args), list(args)
    for s in range(steps):
        la, a = ours(*a)
        lb, b = theirs(*b)
        assert _err(la, lb) < 2e-3, (s, la, lb)
        for k in trainable:
            assert _err(a[k], b[k]) < 2e-3, (s, k)
    assert layer.compiles == 1
    assert layer._last.backward is not None
    assert layer._last.backward.compiles == 1
    return layer


def _backward_primitives(layer):
    """The primitives the backward's imported text was written for."""
    origins = layer._last.backward._last.low.origins.values()
    return {o.split("'")[1] for o in origins if o.startswith("the primitive")}


def test_rope_attention_trains_through_jit(mesh):
    """The backward of RoPE attention (pads of the halves' cotangents) as
    an Overlap program, in a training step."""
    def loss(x, wq, wk, wv, wo):
        y = rope_attention(x, wq, wk, wv, wo)
        return jnp.mean(y ** 2)
    layer = _train(mesh, loss, ROPE_SPECS, rope_args(np.float32),
                   trainable=(1, 2, 3, 4))
    assert "pad" in _backward_primitives(layer)


def test_embedding_trains_through_jit(mesh):
    """The backward of a vocab-parallel embedding (the table's gradient a
    scatter-add) as an Overlap program, in a training step."""
    layer = _train(mesh, embedding_loss, (P(), P("x"), P()),
                   embedding_args(np.float32), trainable=(1, 2))
    assert "scatter-add" in _backward_primitives(layer)


def test_moe_gate_and_cross_entropy_train_through_jit(mesh):
    """top_k routing and a vocab-parallel cross-entropy in one layer."""
    def loss(x, wg, we, w, labels):
        h = moe_gate(x, wg, we)
        return cross_entropy(h, w, labels)
    labels = np.random.default_rng(5).integers(0, 64, size=(16,))
    args = (rand(16, 16), rand(16, 4, seed=1), rand(4, 16, 8, seed=2,
                                                    scale=0.3),
            rand(8, 64, seed=3), labels.astype(np.int32))
    layer = _train(mesh, loss, (P(), P(), P(), P(None, "x"), P()), args,
                   trainable=(1, 2, 3))
    assert {"top_k", "gather", "scatter-add"} <= _backward_primitives(layer)


def test_optax_style_update_through_jit(mesh):
    """The optimizer's update as an Overlap layer in a training step
    (parameters and gradients split over the mesh): non-finite gradients
    zeroed, a sign-SGD part, the step skipped where any gradient was not
    finite (apply_if_finite: all(isfinite(g)) over the mesh); one step
    gets an inf."""
    def update(w, g):
        ok = lax.pmin(jnp.all(jnp.isfinite(g)).astype(jnp.float32), "x")
        g = jnp.where(jnp.isfinite(g), g, 0.0)
        return jnp.where(ok > 0, w - 0.1 * (g + 1e-3 * jnp.sign(g)), w)
    f = sm(mesh, update, (P("x"), P("x")), P("x"))
    layer = ojax.jit(f, strategy="none")
    x = rand(16, 8)

    def make_step(fn):
        @jax.jit
        def step(w, poison):
            g = jax.grad(lambda w: jnp.mean(jnp.tanh(x @ w) ** 2))(w)
            return fn(w, g.at[0, 0].multiply(poison))
        return step

    ours, theirs = make_step(layer), make_step(f)
    a = b = rand(8, 16, seed=1)
    for poison in (1.0, np.inf, 1.0):
        a, b = ours(a, poison), theirs(b, poison)
        assert _err(a, b) < 1e-5
    assert layer.compiles == 1
    origins = layer._last.low.origins.values()
    assert {"is_finite", "reduce_and", "sign"} <= {
        o.split("'")[1] for o in origins if o.startswith("the primitive")}


# -- target="cuda" ------------------------------------------------------------

CUDA_LAYERS = {
    "pad": (lambda m: sm(m, lambda x: lax.pad(x, jnp.max(x),
                                              [(1, -2, 1), (-1, 2, 2)]),
                         P("x"), P("x")),
            lambda: (rand(16, 8),)),
    "rope attention grad": (
        lambda m: sm(m, lambda *a: jax.grad(
            lambda *a: jnp.mean(rope_attention(*a) ** 2),
            argnums=(0, 1, 2, 3, 4))(*a), ROPE_SPECS, ROPE_SPECS),
        lambda: rope_args(BF16)),
    "embedding grad": (
        lambda m: sm(m, lambda *a: jax.grad(embedding_loss,
                                            argnums=(1, 2))(*a),
                     (P(), P("x"), P()), (P("x"), P())),
        lambda: embedding_args(np.float32)),
    "at add with a window": (
        lambda m: sm(m, lambda t, x: t.at[_ids(x[:, 0], 8), 1:3].add(
            x[:, :2]), (P(), P("x")), P("x")),
        lambda: (rand(8, 4), rand(32, 8, seed=1))),
    "moe gate grad": (
        lambda m: sm(m, lambda *a: jax.grad(
            lambda *a: jnp.sum(moe_gate(*a) ** 2), argnums=(0, 1, 2))(*a),
            (P("x"), P(), P()), (P("x"), P(), P())),
        lambda: (rand(32, 16), rand(16, 4, seed=1),
                 rand(4, 16, 8, seed=2))),
    "cross entropy grad": (
        lambda m: sm(m, lambda *a: jax.grad(cross_entropy,
                                            argnums=(0, 1))(*a),
                     (P(), P(None, "x"), P()), (P(), P(None, "x"))),
        lambda: (rand(16, 8), rand(8, 64, seed=1),
                 np.arange(16, dtype=np.int32) * 3)),
    "is_finite and sign": (
        lambda m: sm(m, lambda g: jnp.where(
            jnp.all(jnp.isfinite(g)), jnp.sign(g), g), P("x"), P("x")),
        lambda: (rand(16, 8, dtype=BF16),)),
}


@pytest.mark.parametrize("name", list(CUDA_LAYERS))
def test_compiles_for_cuda(mesh, name, tmp_path):
    build, args = CUDA_LAYERS[name]
    compiles_for_cuda(build(mesh), *args(), tmp_path=tmp_path)


@pytest.mark.parametrize("form", ["psum v[:, :2]", "psum v[1:3, 2:6]",
                                  "all_gather v[:, 1:3]",
                                  "psum_scatter v[:, :4]"])
def test_collective_of_a_strided_slice(mesh, form):
    """A collective of a slice that is not one block of memory (a pad's or
    a concatenate's cut folded into an extract_slice, or written so) was
    refused at the runtime lowering ("not a contiguous buffer"):
    overlap-lower-collectives copies it into one block first."""
    bodies = {
        "psum v[:, :2]": (lambda v: lax.psum(v[:, :2], "x"), P()),
        "psum v[1:3, 2:6]": (lambda v: lax.psum(v[1:3, 2:6], "x"), P()),
        "all_gather v[:, 1:3]": (
            lambda v: lax.all_gather(v[:, 1:3], "x", tiled=True), P("x")),
        "psum_scatter v[:, :4]": (
            lambda v: lax.psum_scatter(v[:, :4], "x", tiled=True), P("x")),
    }
    body, out = bodies[form]
    check(sm(mesh, body, P("x"), out), rand(32, 8), exact=True)
