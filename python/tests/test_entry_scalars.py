"""Entries as upstream's Shard tests write them: scalar arguments and
results (f32, i8, index), a grid with a dynamic extent that the run sets
from its number of ranks, and shard.grid_shape with no process index
beside it. Each failed before: "overlap-run handles statically shaped
tensors", "grid @g has a dynamic extent; overlap-run needs static grids",
and the grid left for LLVM translation ("missing
LLVMTranslationDialectInterface ... shard.grid")."""

import subprocess

import numpy as np
import pytest

import overlap
import shard_corpus

pytestmark = pytest.mark.usefixtures("native_libraries")

SCALARS = """
shard.grid @g(shape = 2)
func.func @f(%x: tensor<4xf32>, %s: f32, %k: i8, %i: index)
    -> (tensor<4xf32>, i8, index) {
  %e = tensor.empty() : tensor<4xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>,
                                        affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %p = arith.mulf %a, %s : f32
    linalg.yield %p : f32
  } -> tensor<4xf32>
  %r = shard.all_reduce %m on @g grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  %k2 = arith.muli %k, %k : i8
  %c3 = arith.constant 3 : index
  %i2 = arith.muli %i, %c3 : index
  return %r, %k2, %i2 : tensor<4xf32>, i8, index
}
"""


def test_scalar_arguments_and_results(tmp_path):
    prog = overlap.compile(SCALARS, output=tmp_path / "s.so",
                           strategy="none")
    xs = [np.arange(4, dtype=np.float32) + r for r in range(2)]
    ks = [np.int8(7), np.int8(-12)]
    res = overlap.run(prog.path, inputs=[[xs[r], np.float32(2.5), ks[r],
                                          np.int64(-5 + r)]
                                         for r in range(2)])
    assert res.status == 0, res.messages
    for r in range(2):
        out = res.outputs[r]
        np.testing.assert_array_equal(out[0], (xs[0] + xs[1]) * 2.5)
        # i8 wraps as the machine does (49, and 144 - 256 = -112).
        assert out[1].dtype == np.int8 and out[1].shape == ()
        assert int(out[1]) == (int(ks[r]) ** 2 + 128) % 256 - 128
        # index comes back as i64.
        assert out[2].dtype == np.int64 and int(out[2]) == 3 * (-5 + r)


def test_scalars_run_in_overlap_run(tmp_path):
    try:
        run = shard_corpus.tools()["overlap-run"]
    except FileNotFoundError as err:
        pytest.skip(str(err))
    src = tmp_path / "s.mlir"
    src.write_text(SCALARS)
    # No --ranks: the entry's grid says 2.
    r = subprocess.run([run, str(src)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert "bit-identical: yes" in r.stdout


DYNAMIC = """
shard.grid @g(shape = ?)
shard.grid @h(shape = 2x?)
func.func @f() -> (index, index, index, index, index) {
  %n = shard.grid_shape @g : index
  %a:2 = shard.grid_shape @h : index, index
  %r = shard.process_linear_index on @g : index
  %m:2 = shard.process_multi_index on @h : index, index
  %x = arith.addi %m#0, %m#1 : index
  return %n, %a#1, %r, %m#1, %x : index, index, index, index, index
}
"""


@pytest.mark.parametrize("ranks", [2, 6])
def test_dynamic_extent_from_the_rank_count(ranks, tmp_path):
    prog = overlap.compile(DYNAMIC, output=tmp_path / "d.so")
    assert overlap.signature(prog.path).grids == [("g", (-1,)),
                                                  ("h", (2, -1))]
    res = overlap.run(prog.path, ranks=ranks, inputs=[[]] * ranks)
    assert res.status == 0, res.messages
    for r in range(ranks):
        n, h1, lin, col, both = (int(v) for v in res.outputs[r][:5])
        assert (n, h1, lin) == (ranks, ranks // 2, r)
        # @h is 2 x (ranks / 2), row-major.
        assert col == r % (ranks // 2)
        assert both == r // (ranks // 2) + r % (ranks // 2)


def test_dynamic_extent_needs_a_multiple(tmp_path):
    prog = overlap.compile(DYNAMIC, output=tmp_path / "d.so")
    res = overlap.run(prog.path, ranks=3, inputs=[[]] * 3)
    assert res.status != 0
    assert "must be a multiple of" in res.messages


def test_grid_shape_alone(tmp_path):
    src = """
shard.grid @g(shape = 2x3)
func.func @f() -> (index, index) {
  %0:2 = shard.grid_shape @g axes = [1, 0] : index, index
  return %0#0, %0#1 : index, index
}"""
    prog = overlap.compile(src, output=tmp_path / "g.so")
    res = overlap.run(prog.path, inputs=[[]] * 6)
    assert res.status == 0, res.messages
    assert len(res.outputs) == 6
    assert [int(v) for v in res.outputs[5]] == [3, 2]
