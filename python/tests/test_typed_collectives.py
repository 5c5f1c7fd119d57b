"""Collectives of every element type the runtime takes besides f32, f16
and bf16 (f64 and MLIR's signless i8, i16, i32, i64), compiled from shard
ops and run on 4 host ranks with given inputs, against numpy: sums and
products wrap around as two's complement (numpy's integer arithmetic does
too), max and min compare as signed, gathers and all-to-all move the bits.
Before, every such collective was refused ("its element type i32 is not
one the runtime's collectives take"), and so was most of upstream's Shard
tests (i8, i32, i64)."""

import numpy as np
import pytest

import overlap

pytestmark = pytest.mark.usefixtures("native_libraries")

TYPES = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
         "f64": np.float64}
RANKS = 4


def _inputs(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        # Extremes included, so that sums and products wrap.
        a = rng.integers(info.min, info.max, size=(RANKS,) + shape,
                         dtype=dtype, endpoint=True)
        a.flat[0] = info.min
        a.flat[1] = info.max
        return a
    return rng.standard_normal((RANKS,) + shape).astype(dtype)


def _run(mlir, inputs, tmp_path):
    prog = overlap.compile(mlir, output=tmp_path / "p.so", strategy="none")
    res = overlap.run(prog.path, inputs=[[x] for x in inputs])
    assert res.status == 0, res.messages
    return [row[0] for row in res.outputs]


@pytest.mark.parametrize("elem", sorted(TYPES))
@pytest.mark.parametrize("kind", ["sum", "max", "min", "product"])
def test_all_reduce(elem, kind, tmp_path):
    dtype = TYPES[elem]
    mlir = f"""
shard.grid @g(shape = {RANKS})
func.func @f(%a: tensor<3x5x{elem}>) -> tensor<3x5x{elem}> {{
  %r = shard.all_reduce %a on @g grid_axes = [0] reduction = {kind}
      : tensor<3x5x{elem}> -> tensor<3x5x{elem}>
  return %r : tensor<3x5x{elem}>
}}"""
    x = _inputs(dtype, (3, 5), 1)
    with np.errstate(over="ignore"):
        if kind == "sum":
            want = x[0].copy()
            for r in range(1, RANKS):
                want = (want + x[r]).astype(dtype)
        elif kind == "product":
            want = x[0].copy()
            for r in range(1, RANKS):
                want = (want * x[r]).astype(dtype)
        else:
            want = (np.max if kind == "max" else np.min)(x, axis=0)
    for got in _run(mlir, x, tmp_path):
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("elem", sorted(TYPES))
def test_all_gather_reduce_scatter_and_all_to_all(elem, tmp_path):
    dtype = TYPES[elem]
    mlir = f"""
shard.grid @g(shape = {RANKS})
func.func @f(%a: tensor<4x8x{elem}>) -> (tensor<16x8x{elem}>, tensor<1x8x{elem}>, tensor<16x2x{elem}>) {{
  %g = shard.all_gather %a on @g grid_axes = [0] gather_axis = 0
      : tensor<4x8x{elem}> -> tensor<16x8x{elem}>
  %s = shard.reduce_scatter %a on @g grid_axes = [0] scatter_axis = 0
      : tensor<4x8x{elem}> -> tensor<1x8x{elem}>
  %t = shard.all_to_all %a on @g grid_axes = [0] split_axis = 1 concat_axis = 0
      : tensor<4x8x{elem}> -> tensor<16x2x{elem}>
  return %g, %s, %t : tensor<16x8x{elem}>, tensor<1x8x{elem}>, tensor<16x2x{elem}>
}}"""
    x = _inputs(dtype, (4, 8), 2)
    prog = overlap.compile(mlir, output=tmp_path / "p.so", strategy="none")
    res = overlap.run(prog.path, inputs=[[v] for v in x])
    assert res.status == 0, res.messages
    with np.errstate(over="ignore"):
        total = x[0].copy()
        for r in range(1, RANKS):
            total = (total + x[r]).astype(dtype)
    for r, row in enumerate(res.outputs):
        g, s, t = row[:3]
        np.testing.assert_array_equal(g, np.concatenate(list(x)))
        np.testing.assert_array_equal(s, total[r:r + 1])
        np.testing.assert_array_equal(
            t, np.concatenate([x[p][:, 2 * r:2 * r + 2]
                               for p in range(RANKS)]))


def test_integer_matmul_compiles_unfused(tmp_path):
    """An i32 matmul before an all-reduce: no overlap_gemm (which takes
    floats), loops instead, and the result still equals numpy."""
    mlir = f"""
shard.grid @g(shape = {RANKS})
func.func @f(%a: tensor<8x4xi32>, %b: tensor<4x8xi32>) -> tensor<8x8xi32> {{
  %z = arith.constant 0 : i32
  %e = tensor.empty() : tensor<8x8xi32>
  %f = linalg.fill ins(%z : i32) outs(%e : tensor<8x8xi32>) -> tensor<8x8xi32>
  %m = linalg.matmul ins(%a, %b : tensor<8x4xi32>, tensor<4x8xi32>) outs(%f : tensor<8x8xi32>) -> tensor<8x8xi32>
  %r = shard.all_reduce %m on @g grid_axes = [0] : tensor<8x8xi32> -> tensor<8x8xi32>
  return %r : tensor<8x8xi32>
}}"""
    rng = np.random.default_rng(3)
    a = rng.integers(-9, 9, size=(RANKS, 8, 4), dtype=np.int32)
    b = rng.integers(-9, 9, size=(RANKS, 4, 8), dtype=np.int32)
    prog = overlap.compile(mlir, output=tmp_path / "p.so")
    assert prog.plans == []
    res = overlap.run(prog.path, inputs=[[a[r], b[r]] for r in range(RANKS)])
    assert res.status == 0, res.messages
    want = sum(a[r] @ b[r] for r in range(RANKS))
    for row in res.outputs:
        np.testing.assert_array_equal(row[0], want)


@pytest.mark.parametrize("kind", ["gather", "max", "min", "sum",
                                  "all_to_all", "reduce_scatter"])
def test_boolean_collectives_run_on_bytes(kind, tmp_path):
    """i1 (masks, JAX's booleans): the collective runs on bytes. max is
    or, min is and, a sum keeps its low bit (i1 arithmetic wraps: the
    parity); the others move the values. They were refused ("its element
    type i1 is not one the runtime's collectives take")."""
    rng = np.random.default_rng(11)
    xs = rng.integers(0, 2, size=(RANKS, 4, 2)).astype(np.bool_)
    t = "tensor<4x2xi1>"
    op = {
        "gather": (f"shard.all_gather %x on @g grid_axes = [0] gather_axis "
                   f"= 0 : {t} -> tensor<16x2xi1>"),
        "max": (f"shard.all_reduce %x on @g grid_axes = [0] reduction = max "
                f": {t} -> {t}"),
        "min": (f"shard.all_reduce %x on @g grid_axes = [0] reduction = min "
                f": {t} -> {t}"),
        "sum": f"shard.all_reduce %x on @g grid_axes = [0] : {t} -> {t}",
        "all_to_all": (f"shard.all_to_all %x on @g grid_axes = [0] "
                       f"split_axis = 0 concat_axis = 0 : {t} -> {t}"),
        "reduce_scatter": (f"shard.reduce_scatter %x on @g grid_axes = [0] "
                           f"reduction = max scatter_axis = 0 : {t} -> "
                           f"tensor<1x2xi1>"),
    }[kind]
    out = {"gather": "tensor<16x2xi1>",
           "reduce_scatter": "tensor<1x2xi1>"}.get(kind, t)
    mlir = f"""
shard.grid @g(shape = {RANKS})
func.func @f(%x: {t}) -> {out} {{
  %r = {op}
  return %r : {out}
}}"""
    got = _run(mlir, xs, tmp_path)
    for r in range(RANKS):
        want = {
            "gather": np.concatenate(xs, axis=0),
            "max": np.any(xs, axis=0),
            "min": np.all(xs, axis=0),
            "sum": (xs.sum(axis=0) % 2).astype(np.bool_),
            "all_to_all": np.concatenate([x[r:r + 1] for x in xs], axis=0),
            "reduce_scatter": np.any(xs, axis=0)[r:r + 1],
        }[kind]
        np.testing.assert_array_equal(got[r], want, err_msg=f"rank {r}")
