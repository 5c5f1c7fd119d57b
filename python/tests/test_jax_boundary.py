"""What overlap.jax takes and returns at its boundary (issue 51, items 7
and 8): integer and boolean arguments and results through overlap.jax.run
and overlap.jax.jit (token ids, labels, a step count, an axis_index, a
mask), every refusal of a program listed at once, the form flax's
nnx.shard_map gives (its shard_map takes the module's state leaves and
returns them beside the outputs), and jax.grad through run pointing to
overlap.jax.jit. Every result against jax.jit on 4 CPU devices: integers
and booleans exactly."""

import inspect
import re

import numpy as np
import pytest

from conftest import cpu_mesh, require_jax

jax = require_jax()

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

from overlap import compiler  # noqa: E402

ojax = pytest.importorskip("overlap.jax")

pytestmark = pytest.mark.usefixtures("native_libraries")


def _r(*shape, seed=0, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) *
            scale).astype(np.float32)


def _same(got, want, tol=1e-5):
    """Equal leaf by leaf: integers and booleans exactly, floats within
    `tol` of the largest magnitude; dtypes and shapes equal."""
    got_l, got_t = jax.tree_util.tree_flatten(got)
    want_l, want_t = jax.tree_util.tree_flatten(want)
    assert got_t == want_t, (got_t, want_t)
    for g, w in zip(got_l, want_l):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype,
                                                           g.shape, w.shape)
        if np.issubdtype(w.dtype, np.inexact):
            scale = max(1.0, float(np.max(np.abs(w))) if w.size else 1.0)
            assert np.max(np.abs(g - w), initial=0) <= tol * scale, (g, w)
        else:
            assert np.array_equal(g, w), (g, w)


def _line_of(fn, text):
    """The file line of the first line of `fn` containing `text`."""
    lines, first = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if text in line:
            return first + i
    raise AssertionError(f"{text!r} not in {fn.__name__}")


# -- integer and boolean arguments and results ---------------------------------

def _embedding_layer(mesh):
    """Token ids (int32, replicated) -> embedding rows (jnp.take) -> a
    row-parallel matmul + psum; also returns an int32 result computed from
    the ids and the ids' count of each parity (an integer psum)."""
    def body(ids, emb, w):
        h = jnp.take(emb, ids, axis=0)          # [b, s, d/4]
        y = lax.psum(h @ w, "x")                 # [b, s, n]
        shifted = (ids * 3 + 1) % 7
        return y, shifted, lax.psum(ids % 2, "x")

    return jax.shard_map(body, mesh=mesh,
                         in_specs=(P(), P(None, "x"), P("x", None)),
                         out_specs=(P(), P(), P()))


def _ids(shape, vocab, seed=5):
    return np.random.default_rng(seed).integers(
        0, vocab, size=shape).astype(np.int32)


def test_token_ids_through_an_embedding_matmul_and_psum():
    f = _embedding_layer(cpu_mesh("x"))
    args = (_ids((2, 8), 16), _r(16, 32, seed=1), _r(32, 8, seed=2))
    want = jax.jit(f)(*args)
    res = ojax.run(f, *args, strategy="none")
    _same(res.value, want)
    assert "tensor<2x8xi32>" in res.mlir  # the ids are the program's i32
    layer = ojax.jit(f, strategy="none")
    _same(jax.jit(layer)(*args), want)
    # Compiles for --target=cuda with the same signature (it cannot run
    # here): the i32 argument and results are buffers like the floats.
    low = ojax.lower_program(f, *args)
    prog = compiler.compile(low.mlir, strategy="none", target="cuda")
    sig = compiler.signature(prog.path)
    assert [a.type for a in sig.args][0] == "2x8xi32"
    assert [r.type for r in sig.results][1:] == ["2x8xi32", "2x8xi32"]


def _cross_entropy(mesh):
    """Vocab-parallel logits, integer labels, a one-hot cross-entropy (the
    labels' one-hot is built in the body) and the count of labels below
    4 returned as an int32."""
    def body(x, w, labels):
        logits = lax.psum(x @ w, "x")                       # [t, vocab]
        m = jnp.max(logits, axis=-1, keepdims=True)
        lse = jnp.log(jnp.sum(jnp.exp(logits - m), -1)) + m[:, 0]
        hot = jax.nn.one_hot(labels, logits.shape[-1], dtype=logits.dtype)
        loss = jnp.mean(lse - jnp.sum(hot * logits, -1))
        return loss, jnp.sum((labels < 4).astype(jnp.int32))

    return jax.shard_map(body, mesh=mesh,
                         in_specs=(P(None, "x"), P("x", None), P()),
                         out_specs=(P(), P()))


def test_integer_labels_cross_entropy_and_its_gradient():
    f = _cross_entropy(cpu_mesh("x"))
    x, w = _r(6, 16, seed=3), _r(16, 8, seed=4, scale=0.5)
    labels = np.array([1, 0, 7, 3, 2, 5], np.int32)
    want = jax.jit(f)(x, w, labels)
    _same(ojax.run(f, x, w, labels, strategy="none").value, want)
    layer = ojax.jit(f, strategy="none")
    _same(jax.jit(layer)(x, w, labels), want)
    # The gradient through the layer: the labels' cotangent is float0, as
    # JAX gives it; the floats' equal jax.grad of f.
    def loss(fn):
        return lambda x, w, labels: fn(x, w, labels)[0]
    grad = jax.grad(loss(layer), argnums=(0, 1, 2), allow_int=True)
    ref = jax.grad(loss(f), argnums=(0, 1, 2), allow_int=True)
    got, want_g = jax.jit(grad)(x, w, labels), jax.jit(ref)(x, w, labels)
    _same(got[:2], want_g[:2])
    assert got[2].dtype == want_g[2].dtype == jax.dtypes.float0


@pytest.mark.parametrize("check_vma", [True, False])
def test_gradient_through_jit_with_and_without_check_vma(check_vma):
    """Without check_vma JAX's transpose of a shard_map shares a replicated
    result's cotangent among the devices it is replicated on and sums a
    replicated argument's: the layer's backward does the same (it was 4x
    off on 4 devices, a silent wrong gradient)."""
    mesh = cpu_mesh("x")

    def body(x, w, b, labels):
        logits = lax.psum(x @ w, "x") + b
        m = jnp.max(logits, axis=-1, keepdims=True)
        lse = jnp.log(jnp.sum(jnp.exp(logits - m), -1)) + m[:, 0]
        hot = jax.nn.one_hot(labels, logits.shape[-1], dtype=logits.dtype)
        return jnp.mean(lse - jnp.sum(hot * logits, -1)), logits

    f = jax.shard_map(body, mesh=mesh,
                      in_specs=(P(None, "x"), P("x", None), P(), P()),
                      out_specs=(P(), P()), check_vma=check_vma)
    x, w, b = _r(6, 16, seed=24), _r(16, 8, seed=25, scale=0.5), _r(8)
    labels = np.array([1, 0, 7, 3, 2, 5], np.int32)
    layer = ojax.jit(f, strategy="none")

    def loss(fn):
        def of(x, w, b):
            value, logits = fn(x, w, b, labels)
            return value + 0.01 * jnp.sum(logits ** 2)
        return of

    got = jax.jit(jax.grad(loss(layer), argnums=(0, 1, 2)))(x, w, b)
    want = jax.jit(jax.grad(loss(f), argnums=(0, 1, 2)))(x, w, b)
    _same(got, want, tol=1e-4)


def test_int32_step_count_in_an_adam_like_update_under_jit():
    """An optimizer step inside the shard_map, as optax's adam writes it:
    the bias corrections raise b1 and b2 to the int32 step count, and the
    count comes back incremented."""
    mesh = cpu_mesh("x")
    b1, b2, lr, eps = 0.9, 0.999, 1e-2, 1e-8

    def body(w, m, v, count, x):
        g = lax.psum(x.T @ jnp.tanh(x @ w), "x")           # a gradient-like
        count = count + 1
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        mhat = m / (1 - b1 ** count)
        vhat = v / (1 - b2 ** count)
        return w - lr * mhat / (jnp.sqrt(vhat) + eps), m, v, count

    f = jax.shard_map(body, mesh=mesh,
                      in_specs=(P(), P(), P(), P(), P("x", None)),
                      out_specs=(P(), P(), P(), P()))
    w = _r(8, 8, seed=6, scale=0.3)
    m, v = np.zeros_like(w), np.zeros_like(w)
    x = _r(16, 8, seed=7)
    layer = ojax.jit(f, strategy="none")

    def steps(fn, n):
        state = (w, m, v, jnp.int32(0))
        for _ in range(n):
            state = jax.jit(fn)(*state, x)
        return state

    got, want = steps(layer, 3), steps(f, 3)
    _same(got, want)
    assert got[3].dtype == jnp.int32 and int(got[3]) == 3
    assert layer.compiles == 1  # the count is an argument, not a constant
    _same(ojax.run(f, w, m, v, np.int32(7), x, strategy="none").value,
          jax.jit(f)(w, m, v, np.int32(7), x))


def test_axis_index_results_returned():
    mesh2 = cpu_mesh("a", "b", shape=(2, 2))

    def body(x):
        a, b = lax.axis_index("a"), lax.axis_index("b")
        flat = lax.axis_index(("a", "b"))
        return (jnp.reshape(a * 10 + b, (1, 1)), jnp.reshape(flat, (1, 1)),
                x * (flat + 1).astype(x.dtype), jnp.reshape(a, (1,)))

    f = jax.shard_map(body, mesh=mesh2, in_specs=P("a", "b"),
                      out_specs=(P("a", "b"), P("a", "b"), P("a", "b"),
                                 P("a")))
    x = _r(4, 6, seed=8)
    want = jax.jit(f)(x)
    res = ojax.run(f, x, strategy="none")
    _same(res.value, want)
    assert res.outputs[0].tolist() == [[0, 1], [10, 11]]
    _same(jax.jit(ojax.jit(f, strategy="none"))(x), want)


def test_boolean_and_narrow_integer_arguments():
    mesh = cpu_mesh("x")

    def body(x, mask, small, wide):
        kept = jnp.where(mask, x, 0.0)
        total = lax.psum(jnp.sum(kept, axis=0, keepdims=True), "x")
        counts = small.astype(jnp.int32) + wide.astype(jnp.int32)
        return total, jnp.logical_not(mask), (small * 2).astype(jnp.int8), \
            counts

    f = jax.shard_map(body, mesh=mesh,
                      in_specs=(P("x"), P("x"), P("x"), P("x")),
                      out_specs=(P(), P("x"), P("x"), P("x")))
    x = _r(8, 4, seed=9)
    mask = np.random.default_rng(10).random((8, 4)) > 0.4
    small = np.arange(-16, 16, dtype=np.int8).reshape(8, 4)
    wide = (np.arange(32, dtype=np.int16) * 1000).reshape(8, 4)
    want = jax.jit(f)(x, mask, small, wide)
    res = ojax.run(f, x, mask, small, wide, strategy="none")
    _same(res.value, want)
    assert "tensor<2x4xi1>" in res.mlir and "tensor<2x4xi8>" in res.mlir
    _same(jax.jit(ojax.jit(f, strategy="none"))(x, mask, small, wide), want)
    low = ojax.lower_program(f, x, mask, small, wide)
    prog = compiler.compile(low.mlir, strategy="none", target="cuda")
    assert [a.type for a in compiler.signature(prog.path).args] == \
        ["2x4xf32", "2x4xi1", "2x4xi8", "2x4xi16"]


def test_int64_arguments_take_the_dtype_jax_gives_them():
    # Without jax_enable_x64 jax.jit makes an int64 array int32 (and a
    # float64 one float32); run converts them the same way.
    f = jax.shard_map(lambda i, x: (lax.psum(i * 2, "x"), x + 1.0),
                      mesh=cpu_mesh("x"), in_specs=(P("x"), P("x")),
                      out_specs=(P(), P("x")))
    i = np.arange(8, dtype=np.int64) - 3
    x = np.linspace(-1, 1, 8)
    _same(ojax.run(f, i, x, strategy="none").value, jax.jit(f)(i, x))


@pytest.mark.parametrize("dtype", [np.uint8, np.uint32])
def test_unsigned_arguments_are_still_refused_by_name(dtype):
    f = jax.shard_map(lambda i: lax.psum(i, "x"), mesh=cpu_mesh("x"),
                      in_specs=P("x"), out_specs=P())
    with pytest.raises(ojax.UnsupportedError,
                       match=f"argument 0 of .*element type "
                             f"{np.dtype(dtype).name}: the importer "
                             f"computes integers as signed"):
        ojax.run(f, np.arange(8, dtype=dtype))


# -- every refusal at once -------------------------------------------------------

def _many_problems():
    mesh = cpu_mesh("x")

    def body(x, ids):
        a = lax.cbrt(x)
        b = lax.lgamma(x)
        g = lax.all_gather(a, "x", axis_index_groups=[[0, 1], [2, 3]])
        return lax.psum(a + b, "x") + jnp.sum(g) + ids.astype(jnp.float32)

    sm = jax.shard_map(body, mesh=mesh, in_specs=(P(), P()), out_specs=P(),
                       check_vma=False)

    def f(x, ids):
        return sm(x, ids) * 2.0

    return f, body


def test_every_refusal_is_listed_at_once():
    f, body = _many_problems()
    x = _r(4, 4, seed=11)
    ids = np.arange(16, dtype=np.uint32).reshape(4, 4)
    with pytest.raises(ojax.UnsupportedError) as raised:
        ojax.lower(f, x, ids)
    text = str(raised.value)
    refusals = raised.value.refusals
    here = "test_jax_boundary.py"

    def at(what, fn, code):
        return re.search(rf"{re.escape(what)} \(from [^)]*{here}:"
                         rf"{_line_of(fn, code)}:", text)

    # The two primitives the importer does not translate, with their lines.
    assert at("the primitive 'cbrt'", body, "lax.cbrt"), text
    assert at("the primitive 'lgamma'", body, "lax.lgamma"), text
    # The form a translated primitive does not take, with its line.
    assert at("the primitive 'all_gather'", body, "lax.all_gather"), text
    assert "axis_index_groups" in text, text
    # The argument's dtype, named with its leaf.
    assert "argument 1 of f ([1], a leaf in jax.tree_util order)" in text
    assert "element type uint32" in text, text
    # What f does outside the shard_map, with its line.
    assert at("'mul' at the top level of f", f, "sm(x, ids) * 2.0"), text
    assert "5 reasons" in text, text
    assert sorted(r.kind for r in refusals) == [
        "dtype", "form", "primitive", "primitive", "structure"], refusals
    for r in refusals:
        assert r.what and r.why and here in r.where, r
    # overlap.jax.jit refuses the same, at once, before compiling anything.
    with pytest.raises(ojax.UnsupportedError, match="5 reasons"):
        ojax.jit(f)(x, ids)


def test_one_refusal_reads_as_one():
    f = jax.shard_map(lambda x: lax.psum(lax.cbrt(x), "x"),
                      mesh=cpu_mesh("x"), in_specs=P("x"), out_specs=P())
    with pytest.raises(ojax.UnsupportedError,
                       match=r"does not translate 1 primitive of this "
                             r"program: 'cbrt' \(from .*test_jax_boundary"):
        ojax.lower(f, _r(8, 4))


# -- nnx.shard_map's form: state in, state out ---------------------------------------

def _nnx_like(mesh):
    """The shard_map flax's nnx.shard_map builds (graph mode): its function
    takes the module's state (a pytree of arrays: kernels, a bias, a
    batch-stat-like running mean and an int32 counter) beside the inputs
    and returns (the state again, the keyword arguments' state (empty),
    the outputs): the parameters unchanged, the running mean and the
    counter updated. The wrapper keeps the outputs; the state goes back
    into the module outside the trace."""
    state_specs = {"w1": P(None, "x"), "w2": P("x", None), "b": P(),
                   "mean": P(), "count": P()}

    def module_call(state, x):
        h = jax.nn.relu(x @ state["w1"])
        y = lax.psum(h @ state["w2"], "x") + state["b"]
        new = dict(state)
        new["mean"] = 0.9 * state["mean"] + 0.1 * jnp.mean(y, axis=0)
        new["count"] = state["count"] + 1
        return new, {}, y

    sm = jax.shard_map(module_call, mesh=mesh,
                       in_specs=(state_specs, P()),
                       out_specs=(state_specs, P(), P()))

    def wrapper(state, x):        # what the user's call returns: outputs
        _, _, y = sm(state, x)
        return y

    def with_state(state, x):     # the updated state too, reordered
        new, _, y = sm(state, x)
        return y, new

    return wrapper, with_state


def _state():
    return {"w1": _r(16, 32, seed=12, scale=0.3),
            "w2": _r(32, 16, seed=13, scale=0.3),
            "b": _r(16, seed=14), "mean": np.zeros(16, np.float32),
            "count": np.int32(4)}


def test_nnx_shard_map_form_state_in_state_out():
    wrapper, with_state = _nnx_like(cpu_mesh("x"))
    state, x = _state(), _r(8, 16, seed=15)
    for fn in (wrapper, with_state, jax.jit(with_state)):
        want = jax.jit(fn)(state, x)
        res = ojax.run(fn, state, x, strategy="none")
        _same(res.value, want)
        layer = ojax.jit(fn, strategy="none")
        _same(jax.jit(layer)(state, x), want)
    # The parameters passed through unchanged are the arguments, not
    # results of the program; what the wrapper drops is not computed.
    low = ojax.lower_program(with_state, state, x)
    assert [k for k, _ in low.outputs] == [
        # y; then the state's leaves in key order: b, count, mean, w1, w2
        "result", "arg", "result", "result", "arg", "arg"], low.outputs
    assert len(low.out_shapes) == 3
    assert len(ojax.lower_program(wrapper, state, x).out_shapes) == 1
    assert "0x3F666666" not in ojax.lower(wrapper, state, x)  # 0.9: no mean


def test_nnx_shard_map_form_trains_through_jit():
    """jax.grad of a loss of the wrapper's output through overlap.jax.jit,
    the state leaves that are parameters differentiated, the counter
    (int32) with a float0 cotangent, the state passed through."""
    _, with_state = _nnx_like(cpu_mesh("x"))
    state, x = _state(), _r(8, 16, seed=16)
    layer = ojax.jit(with_state, strategy="none")

    def loss(fn):
        def of(state, x):
            y, new = fn(state, x)
            return jnp.sum(y ** 2) + jnp.sum(new["w1"]) + jnp.sum(new["mean"])
        return of

    got = jax.jit(jax.grad(loss(layer), allow_int=True))(state, x)
    want = jax.jit(jax.grad(loss(with_state), allow_int=True))(state, x)
    _same({k: v for k, v in got.items() if k != "count"},
          {k: v for k, v in want.items() if k != "count"}, tol=1e-4)
    assert got["count"].dtype == want["count"].dtype == jax.dtypes.float0


def test_nnx_rng_state_passed_through_is_returned_as_it_is():
    """An nnx module's Rngs state is a PRNG key and a uint32 count: types no
    compiled program carries, so they must not be parameters. Passed through
    the shard_map unchanged (a module that draws no random numbers), they
    come back as they are, through run and jit and under jax.grad."""
    mesh = cpu_mesh("x")
    specs = {"key": P(), "count": P(), "w": P("x", None)}

    def call(state, x):
        return state, {}, lax.psum(x @ state["w"], "x")

    sm = jax.shard_map(call, mesh=mesh, in_specs=(specs, P(None, "x")),
                       out_specs=(specs, P(), P()))

    def f(state, x):
        new, _, y = sm(state, x)
        return y, new

    state = {"key": jax.random.key(3), "count": jnp.uint32(7),
             "w": _r(16, 4, seed=22)}
    x = _r(6, 16, seed=23)
    want = jax.jit(f)(state, x)
    for got in (ojax.run(f, state, x, strategy="none").value,
                ojax.jit(f, strategy="none")(state, x)):
        _same(got[0], want[0])
        assert int(got[1]["count"]) == 7 and got[1]["count"].dtype == \
            np.uint32
        assert np.array_equal(jax.random.key_data(got[1]["key"]),
                              jax.random.key_data(want[1]["key"]))
    layer = ojax.jit(f, strategy="none")
    g = jax.grad(lambda w: jnp.sum(layer(dict(state, w=w), x)[0] ** 2))
    r = jax.grad(lambda w: jnp.sum(f(dict(state, w=w), x)[0] ** 2))
    _same(g(state["w"]), r(state["w"]), tol=1e-4)


def test_simple_mode_returns_only_the_updates():
    """nnx.shard_map with graph_updates off: the function returns (outputs,
    the updated state leaves only)."""
    mesh = cpu_mesh("x")

    def call(params, stats, x):
        y = lax.psum(x @ params["w"], "x")
        return y, {"seen": stats["seen"] + x.shape[0]}

    sm = jax.shard_map(call, mesh=mesh,
                       in_specs=({"w": P("x", None)}, {"seen": P()},
                                 P(None, "x")),
                       out_specs=(P(), {"seen": P()}))
    params, stats = {"w": _r(16, 4, seed=17)}, {"seen": np.int32(10)}
    x = _r(6, 16, seed=18)
    _same(ojax.run(sm, params, stats, x, strategy="none").value,
          jax.jit(sm)(params, stats, x))


def test_a_function_returning_only_its_arguments_compiles_nothing():
    sm = jax.shard_map(lambda s, x: (s, x), mesh=cpu_mesh("x"),
                       in_specs=(P(), P("x")), out_specs=(P(), P("x")))
    s, x = np.int32(3), _r(8, 2, seed=19)
    res = ojax.run(sm, s, x)
    _same(res.value, jax.jit(sm)(s, x))
    assert res.plans == [] and ojax.lower_program(sm, s, x).out_shapes == []
    layer = ojax.jit(sm)
    _same(layer(s, x), jax.jit(sm)(s, x))


# -- jax.grad through run --------------------------------------------------------

def test_grad_through_run_points_to_jit():
    mesh = cpu_mesh("x")
    sm = jax.shard_map(lambda x, w: lax.psum(jnp.tanh(x @ w), "x"),
                       mesh=mesh, in_specs=(P(None, "x"), P("x")),
                       out_specs=P())

    def loss(x, w):
        return jnp.sum(sm(x, w) ** 2)

    x, w = _r(4, 16, seed=20), _r(16, 8, seed=21, scale=0.3)
    for grad in (jax.grad(loss, argnums=1), jax.value_and_grad(loss),
                 jax.jit(jax.grad(loss))):
        with pytest.raises(ojax.UnsupportedError) as raised:
            ojax.run(grad, x, w)
        text = str(raised.value)
        assert "jax.grad" in text and "overlap.jax.jit" in text, text
        assert "layer = overlap.jax.jit(sm); jax.grad(" in text, text
    # ... and overlap.jax.jit does it.
    layer = ojax.jit(sm, strategy="none")
    got = jax.grad(lambda x, w: jnp.sum(layer(x, w) ** 2), argnums=1)(x, w)
    _same(got, jax.grad(loss, argnums=1)(x, w), tol=1e-4)


def test_two_unrelated_shard_maps_are_refused_saying_so():
    mesh = cpu_mesh("x")
    a = jax.shard_map(lambda x: lax.psum(x, "x"), mesh=mesh, in_specs=P("x"),
                      out_specs=P())
    b = jax.shard_map(lambda x: lax.pmax(x, "x"), mesh=mesh, in_specs=P("x"),
                      out_specs=P())
    with pytest.raises(ojax.UnsupportedError,
                       match="runs 2 shard_maps .*own overlap.jax.jit layer"):
        ojax.lower(lambda x: (a(x), b(x)), _r(8, 2))


# -- the FFI handler checks element types -------------------------------------------

def test_a_call_with_buffers_of_another_element_type_is_refused():
    """The step checks buffer sizes only: an int32 buffer where the
    program takes float32 has the same size, so the handler checks each
    buffer's element type against the layer's (registered with it) before
    anything is read or written."""
    from overlap.jax import _ffi
    mesh = cpu_mesh("x")
    f = jax.shard_map(lambda i, x: (lax.psum(x * 2.0, "x"), i + 1),
                      mesh=mesh, in_specs=(P("x"), P("x")),
                      out_specs=(P(), P("x")))
    i, x = np.arange(8, dtype=np.int32), np.arange(8, dtype=np.float32)
    layer = ojax.jit(f, timeout_ms=5000)
    _same(layer(i, x), jax.jit(f)(i, x))
    (compiled,) = layer._cache.values()
    swapped = jax.ffi.ffi_call(_ffi.TARGET,
                               (jax.ShapeDtypeStruct((2,), jnp.float32),
                                jax.ShapeDtypeStruct((2,), jnp.int32)))
    with pytest.raises(Exception, match="input 0 has element type 11 .*the "
                                        "layer takes 4"):
        jax.block_until_ready(jax.jit(lambda r, a, b: swapped(
            r, a, b, layer=np.int64(compiled.layer_id)))(
                np.int32(0), x[:2], x[:2]))
    _same(layer(i * 3, x), jax.jit(f)(i * 3, x))  # still works


# -- random integer programs at the boundary ----------------------------------------

_INT_STEPS = [
    lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b,
    lambda a, b: lax.div(a, b), lambda a, b: lax.rem(a, b),
    lambda a, b: lax.max(a, b), lambda a, b: lax.min(a, b),
    lambda a, b: a & b, lambda a, b: a | b, lambda a, b: a ^ b,
    lambda a, b: ~a, lambda a, b: -b,
    lambda a, b: jnp.where(a > b, a, b * 3),
    lambda a, b: jnp.clip(a, -7, 9),
    lambda a, b: a.astype(jnp.int8).astype(jnp.int32) + b,
    lambda a, b: (a * 977).astype(jnp.int16).astype(jnp.int32),
    lambda a, b: lax.psum(a, "x") - b,
]


def _int_program(seed):
    """A random program over int32 arguments (one split, one replicated),
    a bool mask and a float array, whose results are an int32 array, a
    bool array, an int32 scalar (a psum of a sum) and a float array (the
    mask applied): every argument and result type at the boundary."""
    rng = np.random.default_rng(seed)
    # Each step: which operation, on which two earlier values.
    picks = [(int(rng.integers(len(_INT_STEPS))), int(rng.integers(n + 2)),
              int(rng.integers(n + 2)))
             for n in range(int(rng.integers(3, 7)))]

    def body(i, j, mask, x):
        vals = [i, jnp.broadcast_to(j, i.shape)]
        for k, a, b in picks:
            vals.append(_INT_STEPS[k](vals[a], vals[b]))
        last = vals[-1]
        return (last, (last > 0) ^ mask,
                lax.psum(jnp.sum(last), "x"),
                jnp.where(mask, x * last.astype(x.dtype), -x))

    f = jax.shard_map(body, mesh=cpu_mesh("x"),
                      in_specs=(P("x"), P(), P("x"), P("x")),
                      out_specs=(P("x"), P("x"), P(), P("x")))
    args = (rng.integers(-60, 60, size=(8, 4)).astype(np.int32),
            rng.integers(-9, 9, size=(4,)).astype(np.int32),
            rng.random((8, 4)) > 0.5, _r(8, 4, seed=seed))
    return f, args, picks


@pytest.mark.parametrize("seed", range(12))
def test_random_integer_programs_equal_jax(seed):
    f, args, picks = _int_program(seed)
    want = jax.jit(f)(*args)
    try:
        got = ojax.run(f, *args, strategy="none").value
    except ojax.UnsupportedError as err:
        pytest.fail(f"steps {picks}: refused: {err}")
    _same(got, want)


@pytest.mark.parametrize("scalar", [2, 2.5, True, np.float32(2.0)],
                         ids=["int", "float", "bool", "np.float32"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_python_scalar_arguments_keep_jax_weak_types(scalar, dtype):
    """issue 52 item 6: a Python scalar argument of overlap.jax.jit, called
    eagerly and inside jax.jit, takes the dtype jax.jit gives it (a weak
    type: `x * 2.0` of a bf16 x stays bf16), where it used to fail eagerly
    ('float' has no attribute 'dtype') and turn the result float32."""
    mesh = cpu_mesh("x")
    f = jax.shard_map(lambda x, s: lax.psum(x * s, "x"), mesh=mesh,
                      in_specs=(P("x"), P()), out_specs=P())
    layer = ojax.jit(f)
    x = jnp.asarray(np.arange(32).reshape(8, 4) / 8, dtype=dtype)
    for got, want in ((layer(x, scalar), f(x, scalar)),
                      (jax.jit(lambda x: layer(x, scalar))(x),
                       jax.jit(lambda x: f(x, scalar))(x))):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got, np.float64),
                                      np.asarray(want, np.float64))
