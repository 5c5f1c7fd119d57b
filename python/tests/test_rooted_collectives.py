"""shard.broadcast, gather, scatter, reduce and shift, written with the
collectives the runtime has by overlap-expand-collectives, against numpy
on a 2 x 3 grid, for every grouping of its axes (one axis, both in either
order: the group rank is row-major over the axes as listed), static roots
anywhere in the group, and shifts with and without rotation. Each was
refused ("not lowered by Overlap") before.

numpy's side is written from the ops' definitions in upstream's
ShardOps.td: a rooted result is checked on the root only (the others' is
undefined there); shift moves data `offset` places up the axis."""

import itertools

import numpy as np
import pytest

import overlap

pytestmark = pytest.mark.usefixtures("native_libraries")

GRID = (2, 3)
COORDS = list(np.ndindex(*GRID))


def _group(rank, axes):
    """The ranks of `rank`'s group on `axes`, in group-rank order."""
    c = COORDS[rank]
    members = []
    for pos in itertools.product(*(range(GRID[a]) for a in axes)):
        m = list(c)
        for a, p in zip(axes, pos):
            m[a] = p
        members.append(COORDS.index(tuple(m)))
    return members


def _linear(root, axes):
    r = 0
    for a, c in zip(axes, root):
        r = r * GRID[a] + c
    return r


def _t(shape, elem):
    return "tensor<" + "x".join(map(str, shape)) + "x" + elem + ">"


def _run(body, in_shape, out_shape, elem, inputs, tmp_path, out_elem=None):
    src = f"""
shard.grid @g(shape = {GRID[0]}x{GRID[1]})
func.func @f(%x: {_t(in_shape, elem)}) -> {_t(out_shape, out_elem or elem)} {{
  %r = {body}
  return %r : {_t(out_shape, out_elem or elem)}
}}"""
    prog = overlap.compile(src, output=tmp_path / "c.so", strategy="none")
    res = overlap.run(prog.path, inputs=[[x] for x in inputs])
    assert res.status == 0, res.messages
    return [o[0] for o in res.outputs]


def _inputs(shape, dtype, seed=3):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(shape) * 50).astype(dtype)
            for _ in COORDS]


AXES = [[0], [1], [0, 1], [1, 0]]


@pytest.mark.parametrize("axes", AXES, ids=str)
@pytest.mark.parametrize("elem,dtype", [("f32", np.float32),
                                        ("i32", np.int32)])
def test_broadcast(axes, elem, dtype, tmp_path):
    root = [GRID[a] - 1 for a in axes]
    xs = _inputs((4, 5), dtype)
    got = _run(f"shard.broadcast %x on @g grid_axes = {axes} root = {root} "
               f": ({_t((4, 5), elem)}) -> {_t((4, 5), elem)}",
               (4, 5), (4, 5), elem, xs, tmp_path)
    for r in range(len(COORDS)):
        src = _group(r, axes)[_linear(root, axes)]
        np.testing.assert_array_equal(got[r], xs[src], err_msg=f"rank {r}")


@pytest.mark.parametrize("axes", AXES, ids=str)
@pytest.mark.parametrize("gather_axis", [0, 1])
def test_gather(axes, gather_axis, tmp_path):
    n = int(np.prod([GRID[a] for a in axes]))
    out = [4, 5]
    out[gather_axis] *= n
    root = [0 for _ in axes]
    xs = _inputs((4, 5), np.float32)
    got = _run(f"shard.gather %x on @g grid_axes = {axes} gather_axis = "
               f"{gather_axis} root = {root} : ({_t((4, 5), 'f32')}) -> "
               f"{_t(out, 'f32')}", (4, 5), out, "f32", xs, tmp_path)
    for r in range(len(COORDS)):
        group = _group(r, axes)
        if group[_linear(root, axes)] != r:
            continue  # undefined off the root
        want = np.concatenate([xs[m] for m in group], axis=gather_axis)
        np.testing.assert_array_equal(got[r], want, err_msg=f"rank {r}")


@pytest.mark.parametrize("axes", AXES, ids=str)
@pytest.mark.parametrize("scatter_axis", [0, 1])
def test_scatter(axes, scatter_axis, tmp_path):
    n = int(np.prod([GRID[a] for a in axes]))
    shape = [6 * (n if scatter_axis == 0 else 1),
             4 * (n if scatter_axis == 1 else 1)]
    out = list(shape)
    out[scatter_axis] //= n
    root = [1 if GRID[a] > 1 else 0 for a in axes]
    xs = _inputs(shape, np.float32)
    got = _run(f"shard.scatter %x on @g grid_axes = {axes} scatter_axis = "
               f"{scatter_axis} root = {root} : ({_t(shape, 'f32')}) -> "
               f"{_t(out, 'f32')}", shape, out, "f32", xs, tmp_path)
    for r in range(len(COORDS)):
        group = _group(r, axes)
        src = xs[group[_linear(root, axes)]]
        want = np.split(src, n, axis=scatter_axis)[group.index(r)]
        np.testing.assert_array_equal(got[r], want, err_msg=f"rank {r}")


@pytest.mark.parametrize("axes", AXES, ids=str)
@pytest.mark.parametrize("kind", ["sum", "max", "min"])
def test_reduce(axes, kind, tmp_path):
    root = [GRID[a] - 1 for a in axes]
    xs = _inputs((3, 4), np.int64)
    got = _run(f"shard.reduce %x on @g grid_axes = {axes} reduction = "
               f"{kind} root = {root} : ({_t((3, 4), 'i64')}) -> "
               f"{_t((3, 4), 'i64')}", (3, 4), (3, 4), "i64", xs, tmp_path)
    fn = {"sum": np.sum, "max": np.max, "min": np.min}[kind]
    for r in range(len(COORDS)):
        group = _group(r, axes)
        if group[_linear(root, axes)] != r:
            continue
        want = fn(np.stack([xs[m] for m in group]), axis=0)
        np.testing.assert_array_equal(got[r], want, err_msg=f"rank {r}")


def test_reduce_into_wider_type(tmp_path):
    """The accumulation type is the result's (f32 inputs summed in f64)."""
    xs = _inputs((3, 4), np.float32)
    got = _run(f"shard.reduce %x on @g grid_axes = [1] root = [0] : "
               f"({_t((3, 4), 'f32')}) -> {_t((3, 4), 'f64')}", (3, 4),
               (3, 4), "f32", xs, tmp_path, out_elem="f64")
    for r in range(len(COORDS)):
        group = _group(r, [1])
        if group[0] != r:
            continue
        want = np.sum(np.stack([xs[m].astype(np.float64) for m in group]),
                      axis=0)
        np.testing.assert_allclose(got[r], want, rtol=1e-12)


@pytest.mark.parametrize("offset", [1, -1, 2, 4])
@pytest.mark.parametrize("rotate", [True, False])
@pytest.mark.parametrize("axes,shift_axis", [([1], 1), ([0, 1], 1),
                                             ([0], 0)])
def test_shift(offset, rotate, axes, shift_axis, tmp_path):
    xs = _inputs((2, 3), np.float32)
    body = (f"shard.shift %x on @g grid_axes = {axes} shift_axis = "
            f"{shift_axis} offset = {offset}{' rotate' if rotate else ''} "
            f": {_t((2, 3), 'f32')} -> {_t((2, 3), 'f32')}")
    got = _run(body, (2, 3), (2, 3), "f32", xs, tmp_path)
    n = GRID[shift_axis]
    for r, c in enumerate(COORDS):
        s = c[shift_axis] - offset
        if rotate:
            s %= n
        elif not 0 <= s < n:
            np.testing.assert_array_equal(got[r], xs[r])  # keeps its own
            continue
        src = list(c)
        src[shift_axis] = s
        np.testing.assert_array_equal(got[r], xs[COORDS.index(tuple(src))],
                                      err_msg=f"rank {r}")


def test_recv_without_send_is_refused_with_its_reason(tmp_path):
    """(A send, and a recv paired with one, are lowered:
    test_send_recv.py.)"""
    src = f"""
shard.grid @g(shape = 2x3)
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {{
  %r = shard.recv %x on @g grid_axes = [1] source = [1]
      : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}}"""
    with pytest.raises(overlap.CompileError, match="would wait forever"):
        overlap.compile(src, output=tmp_path / "s.so")
