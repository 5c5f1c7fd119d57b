"""Grids with dynamic extents, against numpy: the first dynamic extent
takes the ranks the static extents leave, every other dynamic extent is
1 (docs/forms.md). Collectives on such grids, their process indices and
their shapes were refused before ("the group size is not static", "has
more than one dynamic extent")."""

import numpy as np
import pytest

import overlap

pytestmark = pytest.mark.usefixtures("native_libraries")


def _run(src, xs, tmp_path, ranks=None):
    prog = overlap.compile(src, output=tmp_path / "p.so", strategy="none")
    kw = {"ranks": ranks} if ranks else {}
    res = overlap.run(prog.path, inputs=[[x] for x in xs], **kw)
    assert res.status == 0, res.messages
    return [o[0] for o in res.outputs]


def _inputs(n, shape, seed=7):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(n)]


@pytest.mark.parametrize("ranks", [2, 4, 6])
def test_all_gather_one_dynamic_extent(ranks, tmp_path):
    """upstream's unshard_static_axis_on_dynamic_grid_axis: a 1-D grid of
    shape ?, the group size from the number of ranks."""
    src = """
shard.grid @g(shape = ?)
func.func @f(%x: tensor<2x3xf32>) -> tensor<?x3xf32> {
  %r = shard.all_gather %x on @g grid_axes = [0] gather_axis = 0 : tensor<2x3xf32> -> tensor<?x3xf32>
  return %r : tensor<?x3xf32>
}"""
    # The entry's result is dynamic: cast it to the size of this run.
    src = src.replace("-> tensor<?x3xf32> {", f"-> tensor<{2 * ranks}x3xf32> {{")
    src = src.replace("return %r : tensor<?x3xf32>",
                      f"%c = tensor.cast %r : tensor<?x3xf32> to "
                      f"tensor<{2 * ranks}x3xf32>\n"
                      f"  return %c : tensor<{2 * ranks}x3xf32>")
    xs = _inputs(ranks, (2, 3))
    got = _run(src, xs, tmp_path, ranks)
    want = np.concatenate(xs, axis=0)
    for r in range(ranks):
        np.testing.assert_array_equal(got[r], want)


def test_two_dynamic_extents(tmp_path):
    """A ?x? grid on 4 ranks runs as 4x1: a group over axis 0 is every
    rank, over axis 1 each rank alone; process_multi_index and grid_shape
    say so."""
    src = """
shard.grid @g(shape = ?x?)
func.func @f(%x: tensor<8x2xf32>) -> tensor<8x4xf32> {
  %a = shard.all_slice %x on @g grid_axes = [0] slice_axis = 0 : tensor<8x2xf32> -> tensor<?x2xf32>
  %b = shard.all_reduce %a on @g grid_axes = [1] : tensor<?x2xf32> -> tensor<?x2xf32>
  %s = tensor.cast %b : tensor<?x2xf32> to tensor<2x2xf32>
  %i:2 = shard.process_multi_index on @g : index, index
  %e:2 = shard.grid_shape @g : index, index
  %i0 = arith.index_cast %i#0 : index to i32
  %i1 = arith.index_cast %i#1 : index to i32
  %e0 = arith.index_cast %e#0 : index to i32
  %e1 = arith.index_cast %e#1 : index to i32
  %f0 = arith.sitofp %i0 : i32 to f32
  %f1 = arith.sitofp %i1 : i32 to f32
  %g0 = arith.sitofp %e0 : i32 to f32
  %g1 = arith.sitofp %e1 : i32 to f32
  %t = tensor.from_elements %f0, %f1, %g0, %g1 : tensor<4xf32>
  %z = arith.constant 0.0 : f32
  %o = tensor.empty() : tensor<8x4xf32>
  %o0 = linalg.fill ins(%z : f32) outs(%o : tensor<8x4xf32>) -> tensor<8x4xf32>
  %o1 = tensor.insert_slice %s into %o0[0, 0] [2, 2] [1, 1] : tensor<2x2xf32> into tensor<8x4xf32>
  %t2 = tensor.expand_shape %t [[0, 1]] output_shape [1, 4] : tensor<4xf32> into tensor<1x4xf32>
  %o2 = tensor.insert_slice %t2 into %o1[7, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<8x4xf32>
  return %o2 : tensor<8x4xf32>
}"""
    xs = _inputs(4, (8, 2))
    got = _run(src, xs, tmp_path, 4)
    for r in range(4):
        want = np.zeros((8, 4), np.float32)
        want[:2, :2] = xs[r][2 * r:2 * r + 2]
        want[7] = [r, 0, 4, 1]
        np.testing.assert_array_equal(got[r], want)


def test_static_and_dynamic_extents(tmp_path):
    """2x? on 6 ranks is 2x3: an all_to_all over the dynamic axis, its
    per-peer count from the group's size at run time, its received rows
    split by it (a memref.expand_shape that MLIR 22's
    expand-strided-metadata crashed on: overlap-expand-shape-views)."""
    src = """
shard.grid @g(shape = 2x?)
func.func @f(%x: tensor<6x2xf32>) -> tensor<2x6xf32> {
  %r = shard.all_to_all %x on @g grid_axes = [1] split_axis = 0 concat_axis = 1 : tensor<6x2xf32> -> tensor<?x?xf32>
  %c = tensor.cast %r : tensor<?x?xf32> to tensor<2x6xf32>
  return %c : tensor<2x6xf32>
}"""
    xs = _inputs(6, (6, 2))
    got = _run(src, xs, tmp_path, 6)
    for r in range(6):
        row, col = divmod(r, 3)
        members = [row * 3 + j for j in range(3)]
        want = np.concatenate([xs[m][2 * col:2 * col + 2] for m in members],
                              axis=1)
        np.testing.assert_array_equal(got[r], want)
