"""i1 (bool) collectives beyond a top-level all_reduce / all_gather: the
ones written with all-gathers (send/recv, update_halo, broadcast, scatter,
shift), a dynamic shape, and the bool collectives JAX programs hold (a
tiled all_gather, whose conversions overlap-raise moved across it,
ppermute, all_to_all). Each moves bytes (overlap-lower-collectives). All
were refused before ("its element type i1 is not one the runtime's
collectives take"), though docs/forms.md said i1 collectives run on bytes.
Oracles: numpy from the ops' definitions (ShardOps.td), and jax.jit on 4
CPU devices for the JAX programs."""

import numpy as np
import pytest

import overlap
from conftest import cpu_mesh

pytestmark = pytest.mark.usefixtures("native_libraries")

RANKS = 4


def _bools(shape, seed):
    """Random booleans, rank by rank (each rank's differ)."""
    rng = np.random.default_rng(seed)
    xs = rng.integers(0, 2, size=(RANKS,) + shape).astype(np.bool_)
    assert xs.any() and not xs.all()
    return xs


def _run(src, inputs, tmp_path):
    prog = overlap.compile(src, output=tmp_path / "p.so", strategy="none")
    res = overlap.run(prog.path, inputs=inputs)
    assert res.status == 0, res.messages
    return res.outputs


@pytest.mark.parametrize("step", [1, 3])
def test_send_recv_ring(step, tmp_path):
    t = "tensor<3x4xi1>"
    src = f"""
shard.grid @g(shape = {RANKS})
func.func @f(%x: {t}, %y: {t}) -> ({t}, {t}) {{
  %i = shard.process_linear_index on @g : index
  %n = arith.constant {RANKS} : index
  %s = arith.constant {step} : index
  %nm = arith.subi %n, %s : index
  %ds = arith.addi %i, %s : index
  %dst = arith.remui %ds, %n : index
  %sr = arith.addi %i, %nm : index
  %src = arith.remui %sr, %n : index
  %a = shard.send %x on @g grid_axes = [0] destination = [%dst] : ({t}, index) -> {t}
  %b = shard.recv %y on @g grid_axes = [0] source = [%src] : ({t}, index) -> {t}
  return %a, %b : {t}, {t}
}}"""
    xs, ys = _bools((3, 4), 1), _bools((3, 4), 2)
    outs = _run(src, [[x, y] for x, y in zip(xs, ys)], tmp_path)
    for r in range(RANKS):
        assert outs[r][1].dtype == np.bool_
        np.testing.assert_array_equal(outs[r][0], xs[r])
        np.testing.assert_array_equal(outs[r][1], xs[(r - step) % RANKS],
                                      err_msg=f"rank {r}")


def test_update_halo(tmp_path):
    """Halo sizes [1, 2] along dim 0: the lower halo row from the rank
    below's last core row, the upper two from the rank above's first; the
    first and last rank keep their `true` fill."""
    lo, hi, rows, cols = 1, 2, 4, 3
    t = f"tensor<{lo + rows + hi}x{cols}xi1>"
    c = f"tensor<{rows}x{cols}xi1>"
    src = f"""
shard.grid @g(shape = {RANKS})
func.func @f(%core: {c}) -> {t} {{
  %v = arith.constant true
  %e = tensor.empty() : {t}
  %f = linalg.fill ins(%v : i1) outs(%e : {t}) -> {t}
  %i = tensor.insert_slice %core into %f[{lo}, 0] [{rows}, {cols}] [1, 1] : {c} into {t}
  %h = shard.update_halo %i on @g split_axes = [[0]] halo_sizes = [{lo}, {hi}] : {t}
  return %h : {t}
}}"""
    cores = _bools((rows, cols), 3)
    outs = _run(src, [[x] for x in cores], tmp_path)
    for r in range(RANKS):
        want = np.ones((lo + rows + hi, cols), np.bool_)
        want[lo:lo + rows] = cores[r]
        if r > 0:
            want[:lo] = cores[r - 1][rows - lo:]
        if r < RANKS - 1:
            want[lo + rows:] = cores[r + 1][:hi]
        np.testing.assert_array_equal(outs[r][0], want, err_msg=f"rank {r}")


@pytest.mark.parametrize("kind", ["broadcast", "scatter", "shift", "reduce"])
def test_rooted_and_shift(kind, tmp_path):
    t = "tensor<4x2xi1>"
    op, out = {
        "broadcast": (f"shard.broadcast %x on @g grid_axes = [0] root = [2] "
                      f": ({t}) -> {t}", t),
        "scatter": ("shard.scatter %x on @g grid_axes = [0] scatter_axis = 0 "
                    f"root = [1] : ({t}) -> tensor<1x2xi1>",
                    "tensor<1x2xi1>"),
        "shift": (f"shard.shift %x on @g grid_axes = [0] shift_axis = 0 "
                  f"offset = 1 rotate : {t} -> {t}", t),
        "reduce": (f"shard.reduce %x on @g grid_axes = [0] reduction = max "
                   f"root = [3] : ({t}) -> {t}", t),
    }[kind]
    src = f"""
shard.grid @g(shape = {RANKS})
func.func @f(%x: {t}) -> {out} {{
  %r = {op}
  return %r : {out}
}}"""
    xs = _bools((4, 2), 4)
    outs = _run(src, [[x] for x in xs], tmp_path)
    for r in range(RANKS):
        got = outs[r][0]
        if kind == "broadcast":
            np.testing.assert_array_equal(got, xs[2])
        elif kind == "scatter":
            np.testing.assert_array_equal(got, xs[1][r:r + 1])
        elif kind == "shift":
            np.testing.assert_array_equal(got, xs[(r - 1) % RANKS])
        elif r == 3:  # a rooted reduce's result is defined on the root
            np.testing.assert_array_equal(got, np.any(xs, axis=0))


def test_dynamic_all_gather(tmp_path):
    """An entry argument of run-time size: the bytes' sizes too."""
    src = f"""
shard.grid @g(shape = {RANKS})
func.func @f(%x: tensor<?x2xi1>) -> tensor<?x2xi1> {{
  %r = shard.all_gather %x on @g grid_axes = [0] gather_axis = 0
      : tensor<?x2xi1> -> tensor<?x2xi1>
  return %r : tensor<?x2xi1>
}}"""
    xs = _bools((3, 2), 5)
    outs = _run(src, [[x] for x in xs], tmp_path)
    for r in range(RANKS):
        np.testing.assert_array_equal(outs[r][0], np.concatenate(list(xs)))


# -- bool collectives from JAX, against jax.jit --------------------------------


def _jax():
    from conftest import require_jax
    jax = require_jax()
    ojax = pytest.importorskip("overlap.jax")
    return jax, ojax


@pytest.mark.parametrize("kind", ["all_gather0", "all_gather1", "ppermute",
                                  "all_to_all"])
def test_jax_bool_collectives(kind):
    jax, ojax = _jax()
    import jax.numpy as jnp
    from jax import lax
    from jax.sharding import PartitionSpec as P

    mesh = cpu_mesh("x")

    def body(x):
        m = x > 0
        if kind == "all_gather0":
            g = lax.all_gather(m, "x", axis=0, tiled=True)
        elif kind == "all_gather1":
            g = lax.all_gather(m, "x", axis=1, tiled=True)
        elif kind == "ppermute":
            g = lax.ppermute(m, "x", [(i, (i + 1) % RANKS)
                                      for i in range(RANKS)])
        else:
            g = lax.all_to_all(m, "x", 0, 1, tiled=True)
        # overlap.jax.run returns floats: the bools as 0/1, and a value
        # selected by them.
        return (g.astype(jnp.float32),
                jnp.where(g, x.sum(), -1.0).astype(jnp.float32))

    out = P() if kind.startswith("all_gather") else P("x")
    f = jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=(out, out),
                      check_vma=False)
    x = np.random.default_rng(6).standard_normal((16, 8)).astype(np.float32)
    want = [np.asarray(w) for w in jax.jit(f)(x)]
    assert want[0].any() and not want[0].all()
    res = ojax.run(f, x, strategy="none")
    np.testing.assert_array_equal(res.outputs[0], want[0])
    np.testing.assert_allclose(res.outputs[1], want[1], rtol=1e-5)
