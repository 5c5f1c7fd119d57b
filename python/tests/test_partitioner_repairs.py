"""What the compile repairs in programs from upstream's partitioner, and
tosa.matmul with zero points given at run time, against numpy.

- A `!shard.sharding` result (upstream's partition tests return one from
  shard.get_sharding) is dropped from the compiled signature with a
  warning; a sharding argument the body uses is refused with the
  function and the position.
- MLIR 22's shard-partition splits the operands of a sharded tosa.matmul
  and keeps its unsplit result type; the result takes the operands'
  shape (so does the entry's result), with a warning.
- tosa.matmul's zero points as arguments: (A - a_zp) x (B - b_zp), as
  TOSA defines it (upstream's tosa-to-linalg-named takes constants only).
"""

import numpy as np
import pytest

import overlap

pytestmark = pytest.mark.usefixtures("native_libraries")


def _run(src, inputs, tmp_path, ranks):
    prog = overlap.compile(src, output=tmp_path / "p.so", strategy="none")
    res = overlap.run(prog.path, inputs=[list(x) for x in inputs])
    assert res.status == 0, res.messages
    assert res.output_names[0] == "result0"
    assert "result1" not in res.output_names, res.output_names
    return prog, [list(o) for o in res.outputs]


def test_sharding_result_dropped(tmp_path):
    src = """
shard.grid @g(shape = 2)
func.func @f(%a: tensor<4xf32>) -> (tensor<2xf32>, !shard.sharding) {
  %s = shard.sharding @g split_axes = [[0]] : !shard.sharding
  %r = shard.all_slice %a on @g grid_axes = [0] slice_axis = 0
      : tensor<4xf32> -> tensor<2xf32>
  return %r, %s : tensor<2xf32>, !shard.sharding
}"""
    xs = [np.arange(4, dtype=np.float32) * (r + 1) for r in range(2)]
    prog, out = _run(src, [[x] for x in xs], tmp_path, 2)
    assert any("dropped from the compiled signature" in w and "result 1" in w
               for w in prog.warnings), prog.warnings
    for r in range(2):
        np.testing.assert_array_equal(out[r][0], xs[r][2 * r:2 * r + 2])


def test_used_sharding_argument_refused(tmp_path):
    src = """
shard.grid @g(shape = 2)
func.func @f(%a: tensor<4xf32>, %s: !shard.sharding) -> tensor<4xf32> {
  %0 = shard.shard %a to %s : tensor<4xf32>
  return %0 : tensor<4xf32>
}"""
    with pytest.raises(overlap.CompileError,
                       match=r"@f has a !shard.sharding as argument 1, "
                             r"which the body uses"):
        overlap.compile(src, output=tmp_path / "p.so")


def _normal(seed, *shapes):
    """f32 arrays of `shapes`, standard normal, drawn in turn from one
    generator seeded with `seed`."""
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for shape in shapes]


def test_tosa_zero_points_float(tmp_path):
    src = """
func.func @f(%a: tensor<2x5x3xf32>, %b: tensor<2x3x4xf32>, %zp: tensor<1xf32>) -> tensor<2x5x4xf32> {
  %c = tosa.matmul %a, %b, %zp, %zp : (tensor<2x5x3xf32>, tensor<2x3x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x5x4xf32>
  return %c : tensor<2x5x4xf32>
}"""
    a, b = _normal(1, (2, 5, 3), (2, 3, 4))
    zp = np.zeros(1, np.float32)
    _, out = _run(src, [[a, b, zp]], tmp_path, 1)
    np.testing.assert_allclose(out[0][0], a @ b, rtol=1e-6, atol=1e-6)


def test_tosa_zero_points_int8(tmp_path):
    """Non-zero integer zero points, widened to i32 before they are
    subtracted: an i8 subtraction would wrap."""
    src = """
func.func @f(%a: tensor<1x4x8xi8>, %b: tensor<1x8x3xi8>, %azp: tensor<1xi8>, %bzp: tensor<1xi8>) -> tensor<1x4x3xi32> {
  %c = tosa.matmul %a, %b, %azp, %bzp : (tensor<1x4x8xi8>, tensor<1x8x3xi8>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x4x3xi32>
  return %c : tensor<1x4x3xi32>
}"""
    rng = np.random.default_rng(2)
    a = rng.integers(-128, 128, (1, 4, 8), dtype=np.int8)
    b = rng.integers(-128, 128, (1, 8, 3), dtype=np.int8)
    azp = np.array([-128], np.int8)
    bzp = np.array([127], np.int8)
    _, out = _run(src, [[a, b, azp, bzp]], tmp_path, 1)
    want = (a.astype(np.int32) - int(azp[0])) @ (b.astype(np.int32) -
                                                int(bzp[0]))
    np.testing.assert_array_equal(out[0][0], want)


def test_tosa_matmul_unsplit_result_repaired(tmp_path):
    """The form upstream's shard-partition writes for a tosa.matmul whose
    result is split [[0], [1]] on a 2 x 2 grid: each rank's block of the
    batched product."""
    src = """
shard.grid @g(shape = 2x2)
func.func @f(%a: tensor<1x2x3xf32>, %b: tensor<1x3x4xf32>) -> tensor<2x4x4xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %c = tosa.matmul %a, %b, %zp, %zp : (tensor<1x2x3xf32>, tensor<1x3x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x4xf32>
  return %c : tensor<2x4x4xf32>
}"""
    a, b = _normal(3, (2, 4, 3), (2, 3, 4))
    ins = []
    for r in range(4):
        i, j = divmod(r, 2)
        ins.append([a[i:i + 1, 2 * j:2 * j + 2], b[i:i + 1]])
    prog, out = _run(src, ins, tmp_path, 4)
    assert any("contradicts the operands" in w and
               "tensor<1x2x4xf32>" in w for w in prog.warnings), prog.warnings
    want = a @ b
    for r in range(4):
        i, j = divmod(r, 2)
        assert out[r][0].shape == (1, 2, 4)
        np.testing.assert_allclose(out[r][0], want[i:i + 1, 2 * j:2 * j + 2],
                                   rtol=1e-6, atol=1e-6)
