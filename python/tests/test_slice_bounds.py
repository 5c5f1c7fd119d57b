"""Dynamic slice sizes and offsets from the inputs checked against their
tensor at run time (issue 48, item 6; overlap-check-slice-bounds).

A size n from the inputs cutting the first n rows of an 8-row argument:
n = 9 read past both buffers and exited 0, n = -1 crashed (SIGSEGV) and
n = 2**40 ended in an uncaught std::bad_alloc. Each now stops the run with
a message that names the op, the dimension and the argument the value
came from; sizes in range still give numpy's slice."""

import subprocess

import numpy as np
import pytest

import overlap
from test_exec_npz import find_overlap_exec

pytestmark = pytest.mark.usefixtures("native_libraries")

ROWS = """
shard.grid @g(shape = 2)
func.func @f(%x: tensor<8x4xf32>, %n: index) -> tensor<8x4xf32> {
  %d = tensor.extract_slice %x[0, 0] [%n, 4] [1, 1] : tensor<8x4xf32> to tensor<?x4xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %o = tensor.insert_slice %d into %z[0, 0] [%n, 4] [1, 1] : tensor<?x4xf32> into tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}"""

# Two rows from row %k.
OFFSET = """
shard.grid @g(shape = 2)
func.func @f(%x: tensor<8x4xf32>, %k: index) -> tensor<2x4xf32> {
  %d = tensor.extract_slice %x[%k, 0] [2, 4] [1, 1] : tensor<8x4xf32> to tensor<2x4xf32>
  return %d : tensor<2x4xf32>
}"""


def _xs():
    rng = np.random.default_rng(6)
    return [rng.standard_normal((8, 4)).astype(np.float32) for _ in range(2)]


def _compile(src, tmp_path):
    return overlap.compile(src, output=tmp_path / "p.so", strategy="none")


@pytest.mark.parametrize("n", [0, 5, 8])
def test_sizes_in_range_match_numpy(tmp_path, n):
    xs = _xs()
    prog = _compile(ROWS, tmp_path)
    res = overlap.run(prog.path,
                      inputs=[[x, np.array(n, np.int64)] for x in xs])
    assert res.status == 0, res.messages
    for r, x in enumerate(xs):
        want = np.zeros_like(x)
        want[:n] = x[:n]
        np.testing.assert_array_equal(res.outputs[r][0], want)


@pytest.mark.parametrize("k", [0, 3, 6])
def test_offsets_in_range_match_numpy(tmp_path, k):
    xs = _xs()
    prog = _compile(OFFSET, tmp_path)
    res = overlap.run(prog.path,
                      inputs=[[x, np.array(k, np.int64)] for x in xs])
    assert res.status == 0, res.messages
    for r, x in enumerate(xs):
        np.testing.assert_array_equal(res.outputs[r][0], x[k:k + 2])


def _exec(prog, xs, value, tmp_path):
    np.savez(tmp_path / "in.npz", arg0=np.stack(xs),
             arg1=np.array([value] * len(xs), np.int64))
    return subprocess.run([find_overlap_exec(), prog.path, "--inputs",
                           str(tmp_path / "in.npz")],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("n,what", [
    (9, "reaches outside its source (its extent 8)"),
    (-1, "the size is negative"),
    (2 ** 40, "reaches outside its source (its extent 8)"),
])
def test_size_outside_the_argument_stops_the_run(tmp_path, n, what):
    prog = _compile(ROWS, tmp_path)
    r = _exec(prog, _xs(), n, tmp_path)
    assert r.returncode not in (0, -11, 139), (r.returncode, r.stderr)
    assert "tensor.extract_slice at " in r.stderr, r.stderr
    assert ("dimension 0 (offset 0, size ? (from argument #1 of @f), "
            "stride 1)") in r.stderr, r.stderr
    assert what in r.stderr, r.stderr
    assert "bad_alloc" not in r.stderr


@pytest.mark.parametrize("k", [7, -1, 2 ** 62])
def test_offset_outside_the_argument_stops_the_run(tmp_path, k):
    prog = _compile(OFFSET, tmp_path)
    r = _exec(prog, _xs(), k, tmp_path)
    assert r.returncode != 0, r.stdout
    assert ("tensor.extract_slice at " in r.stderr and
            "dimension 0 (offset ? (from argument #1 of @f), size 2, "
            "stride 1) reaches outside its source (its extent 8)"
            in r.stderr), r.stderr


# One element at a row from the inputs (tensor.extract at a dynamic index).
ELEMENT = """
shard.grid @g(shape = 2)
func.func @f(%x: tensor<8x4xf32>, %i: index) -> tensor<1xf32> {
  %c2 = arith.constant 2 : index
  %v = tensor.extract %x[%i, %c2] : tensor<8x4xf32>
  %t = tensor.from_elements %v : tensor<1xf32>
  return %t : tensor<1xf32>
}"""


@pytest.mark.parametrize("i", [0, 3, 7, 8, -1, 2 ** 40])
def test_an_element_at_a_row_from_the_inputs(tmp_path, i):
    xs = _xs()
    prog = _compile(ELEMENT, tmp_path)
    res = overlap.run(prog.path,
                      inputs=[[x, np.array(i, np.int64)] for x in xs])
    if 0 <= i < 8:
        assert res.status == 0, res.messages
        for r, x in enumerate(xs):
            np.testing.assert_array_equal(res.outputs[r][0], x[i, 2:3])
        return
    assert res.status != 0
    assert ("tensor.extract at " in str(res.messages) and
            "dimension 0 (offset ? (from argument #1 of @f), size 1, "
            "stride 1) reaches outside its source (its extent 8)"
            in str(res.messages)), res.messages
