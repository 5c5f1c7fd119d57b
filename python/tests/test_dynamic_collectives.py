"""Collectives on tensors of dynamic shape, against numpy.

Each program takes a static buffer and a size `n` (a 0-d argument), cuts
the first `n` rows of its input (a tensor<?x...> from then on), runs one
shard collective on the dynamic tensor and writes the result into a
zero-filled static output, so that the dynamic path (run-time sizes in
the transposes, the allocations, the runtime call's element count, the
divisibility check) is what runs, with a static signature around it.
Upstream's own Shard tests (all_gather_dynamic_dims_in_tensor,
unshard_dynamic_axis, move_split_dynamic_axis, ...) were refused before
("a shape is dynamic; the runtime's collectives take static element
counts")."""

import subprocess

import numpy as np
import pytest

import overlap
from test_exec_npz import find_overlap_exec

pytestmark = pytest.mark.usefixtures("native_libraries")

G = 4  # ranks: a 2 x 2 grid; the groups below are over one axis or both


def _coords(r):
    return divmod(r, 2)


def _group(r, axes):
    c = _coords(r)
    members = []
    for p in range(2 if len(axes) == 1 else 4):
        m = list(c)
        if len(axes) == 1:
            m[axes[0]] = p
        else:
            m[axes[0]], m[axes[1]] = divmod(p, 2)
        members.append(m[0] * 2 + m[1])
    return members


def _program(op, rows, cols, out_rows, out_cols, elem="f32"):
    """`op` maps %d (tensor<?x{cols}>) to %g0, of the type after its last
    "->", which is cast to %g (a tensor<?x?>)."""
    g0 = op.rsplit("-> ", 1)[1]
    return f"""
shard.grid @g(shape = 2x2)
func.func @f(%x: tensor<{rows}x{cols}x{elem}>, %n: index) -> tensor<{out_rows}x{out_cols}x{elem}> {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %d = tensor.extract_slice %x[0, 0] [%n, {cols}] [1, 1] : tensor<{rows}x{cols}x{elem}> to tensor<?x{cols}x{elem}>
  {op}
  %g = tensor.cast %g0 : {g0} to tensor<?x?x{elem}>
  %gr = tensor.dim %g, %c0 : tensor<?x?x{elem}>
  %gc = tensor.dim %g, %c1 : tensor<?x?x{elem}>
  %zero = arith.constant 0.0 : {elem}
  %e = tensor.empty() : tensor<{out_rows}x{out_cols}x{elem}>
  %z = linalg.fill ins(%zero : {elem}) outs(%e : tensor<{out_rows}x{out_cols}x{elem}>) -> tensor<{out_rows}x{out_cols}x{elem}>
  %r = tensor.insert_slice %g into %z[0, 0] [%gr, %gc] [1, 1] : tensor<?x?x{elem}> into tensor<{out_rows}x{out_cols}x{elem}>
  return %r : tensor<{out_rows}x{out_cols}x{elem}>
}}"""


def _run(src, xs, n, tmp_path, expect_ok=True):
    prog = overlap.compile(src, output=tmp_path / "p.so", strategy="none")
    res = overlap.run(prog.path,
                      inputs=[[x, np.array(n, np.int64)] for x in xs])
    if expect_ok:
        assert res.status == 0, res.messages
        return [o[0] for o in res.outputs]
    return res


def _inputs(shape, seed=5):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(G)]


def _placed(block, shape):
    out = np.zeros(shape, np.float32)
    out[:block.shape[0], :block.shape[1]] = block
    return out


@pytest.mark.parametrize("axes", [[0], [1], [0, 1]], ids=str)
@pytest.mark.parametrize("axis", [0, 1])
def test_all_gather(axes, axis, tmp_path):
    n, cols = 3, 5
    k = 2 if len(axes) == 1 else 4
    xs = _inputs((6, cols))
    op = (f"%g0 = shard.all_gather %d on @g grid_axes = {axes} "
          f"gather_axis = {axis} : tensor<?x{cols}xf32> -> "
          f"tensor<?x{cols if axis == 0 else '?'}xf32>")
    out_shape = (n * k, cols) if axis == 0 else (n, cols * k)
    got = _run(_program(op, 6, cols, 12, 20), xs, n, tmp_path)
    for r in range(G):
        want = np.concatenate([xs[m][:n] for m in _group(r, axes)],
                              axis=axis)
        assert want.shape == out_shape
        np.testing.assert_array_equal(got[r], _placed(want, (12, 20)))


@pytest.mark.parametrize("axes", [[0], [0, 1]], ids=str)
def test_reduce_scatter_rows(axes, tmp_path):
    k = 2 if len(axes) == 1 else 4
    n, cols = 8, 3
    xs = _inputs((8, cols))
    op = (f"%g0 = shard.reduce_scatter %d on @g grid_axes = {axes} "
          f"scatter_axis = 0 : tensor<?x{cols}xf32> -> tensor<?x{cols}xf32>")
    got = _run(_program(op, 8, cols, 8, cols), xs, n, tmp_path)
    for r in range(G):
        members = _group(r, axes)
        total = sum(xs[m][:n].astype(np.float64) for m in members)
        i = members.index(r)
        block = total[i * n // k:(i + 1) * n // k].astype(np.float32)
        np.testing.assert_allclose(got[r], _placed(block, (8, cols)),
                                   rtol=1e-6, atol=1e-6)


def test_all_to_all_dynamic_split(tmp_path):
    """Split the dynamic rows, concatenate along columns (upstream's
    move_split_dynamic_axis, the other way round)."""
    n, cols = 6, 3
    xs = _inputs((8, cols))
    op = (f"%g0 = shard.all_to_all %d on @g grid_axes = [1] split_axis = 0 "
          f"concat_axis = 1 : tensor<?x{cols}xf32> -> tensor<?x6xf32>")
    got = _run(_program(op, 8, cols, 8, 6), xs, n, tmp_path)
    for r in range(G):
        members = _group(r, [1])
        i = members.index(r)
        want = np.concatenate(
            [xs[m][:n][i * n // 2:(i + 1) * n // 2] for m in members], axis=1)
        np.testing.assert_array_equal(got[r], _placed(want, (8, 6)))


def test_all_slice_and_all_reduce(tmp_path):
    n, cols = 6, 4
    xs = _inputs((8, cols))
    op = (f"%s = shard.all_slice %d on @g grid_axes = [0] slice_axis = 0 "
          f": tensor<?x{cols}xf32> -> tensor<?x{cols}xf32>\n"
          f"  %g0 = shard.all_reduce %s on @g grid_axes = [1] "
          f": tensor<?x{cols}xf32> -> tensor<?x{cols}xf32>")
    got = _run(_program(op, 8, cols, 8, cols), xs, n, tmp_path)
    for r in range(G):
        i = _coords(r)[0]
        total = sum(xs[m][:n][i * n // 2:(i + 1) * n // 2]
                    for m in _group(r, [1]))
        np.testing.assert_allclose(got[r], _placed(total, (8, cols)),
                                   rtol=1e-6, atol=1e-6)


def test_not_divisible_at_run_time(tmp_path):
    """A dynamic size the group does not divide stops the run with the
    op and the reason, not with a wrong block. (In overlap-exec: a failed
    check aborts the process that runs the program.)"""
    xs = _inputs((8, 3))
    op = ("%g0 = shard.reduce_scatter %d on @g grid_axes = [0] "
          "scatter_axis = 0 : tensor<?x3xf32> -> tensor<?x3xf32>")
    prog = overlap.compile(_program(op, 8, 3, 8, 3), output=tmp_path / "p.so",
                           strategy="none")
    np.savez(tmp_path / "in.npz", arg0=np.stack(xs),
             arg1=np.array(5, np.int64))
    r = subprocess.run([find_overlap_exec(), prog.path, "--inputs",
                        str(tmp_path / "in.npz")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert "not divisible by the group size 2" in r.stderr + r.stdout, \
        r.stderr


# Entries whose own arguments and results are dynamic: the sizes come
# from the caller's inputs (overlap.run(inputs=), overlap-exec --inputs),
# or are 2 x the ranks in a seeded run; results take the returned sizes.
_DYNAMIC_ENTRY = """
shard.grid @g(shape = 2)
func.func @f(%x: tensor<?x3xf32>) -> tensor<?x3xf32> {
  %r = shard.all_gather %x on @g grid_axes = [0] gather_axis = 0 : tensor<?x3xf32> -> tensor<?x3xf32>
  return %r : tensor<?x3xf32>
}"""


@pytest.mark.parametrize("rows", [5, 1, 0])
def test_dynamic_entry_with_given_inputs(rows, tmp_path):
    prog = overlap.compile(_DYNAMIC_ENTRY, output=tmp_path / "p.so")
    sig = overlap.signature(prog.path)
    assert sig.args[0].type == "?x3xf32", sig.args[0].type
    rng = np.random.default_rng(rows)
    xs = [rng.standard_normal((rows, 3)).astype(np.float32) for _ in range(2)]
    res = overlap.run(prog.path, inputs=[[x] for x in xs])
    assert res.status == 0, res.messages
    want = np.concatenate(xs)
    for r in range(2):
        assert res.outputs[r][0].shape == (2 * rows, 3)
        np.testing.assert_array_equal(res.outputs[r][0], want)


def test_dynamic_entry_inputs_must_agree_with_the_static_sizes(tmp_path):
    prog = overlap.compile(_DYNAMIC_ENTRY, output=tmp_path / "p.so")
    with pytest.raises(ValueError, match=r"arg0 is \?x3xf32"):
        overlap.run(prog.path, inputs=[[np.zeros((4, 2), np.float32)]] * 2)


def test_dynamic_entry_from_the_command_line(tmp_path):
    """Seeded: the dynamic size is 2 x the ranks (4 rows of each rank, 8
    gathered); from an .npz: the array's rows."""
    prog = overlap.compile(_DYNAMIC_ENTRY, output=tmp_path / "p.so")
    ref = overlap.compile(_DYNAMIC_ENTRY, output=tmp_path / "r.so",
                          strategy="none")
    r = subprocess.run([find_overlap_exec(), prog.path, "--ref", ref.path],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr + r.stdout
    assert "result0  8x3xf32" in r.stdout, r.stdout
    rows = np.arange(2 * 3 * 3, dtype=np.float32).reshape(2, 3, 3)
    np.savez(tmp_path / "in.npz", arg0=rows)
    r = subprocess.run([find_overlap_exec(), prog.path, "--inputs",
                        str(tmp_path / "in.npz"), "--outputs",
                        str(tmp_path / "out.npz")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr + r.stdout
    out = np.load(tmp_path / "out.npz")
    assert out["result0"].shape == (2, 6, 3)
    for k in range(2):
        np.testing.assert_array_equal(out["result0"][k],
                                      rows.reshape(6, 3))
