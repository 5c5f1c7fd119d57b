"""A buffer whose size comes from the inputs and that cannot be allocated
ends the run with an error that names it (issue 48, item 6): n = 2^40 f32
elements (4 TiB: malloc gave null, the program wrote through it, SIGSEGV
or, in the loader, an uncaught std::bad_alloc), n = -1, and n = 2^62 + 1
(whose byte count wraps around 2^64 to a small block the program would
write past). overlap-check-allocations checks every host allocation's sizes
and block; a failed check fails the rank, and the process lives on to run
the same library right (numpy's value) with a small n."""

import subprocess

import numpy as np
import pytest

import overlap
from test_exec_npz import find_overlap_exec

pytestmark = pytest.mark.usefixtures("native_libraries")

SRC = """
shard.grid @g(shape = 2)
func.func @f(%n: index, %x: tensor<3xf32>) -> tensor<?xf32> {
  %e = tensor.empty(%n) : tensor<?xf32>
  %s = tensor.extract %x[%c0] : tensor<3xf32>
  %f = linalg.fill ins(%s : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %r = shard.all_reduce %f on @g grid_axes = [0] : tensor<?xf32> -> tensor<?xf32>
  return %r : tensor<?xf32>
}
""".replace("func.func @f(%n: index, %x: tensor<3xf32>) -> tensor<?xf32> {",
            "func.func @f(%n: index, %x: tensor<3xf32>) -> tensor<?xf32> {\n"
            "  %c0 = arith.constant 0 : index")

XS = [np.array([1.5, 0, 0], np.float32), np.array([-4.25, 0, 0], np.float32)]


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    out = tmp_path_factory.mktemp("alloc") / "p.so"
    return overlap.compile(SRC, output=out, strategy="none").path


@pytest.mark.parametrize("n, why", [
    (2**40, "out of memory"),
    (-1, "a size from the inputs is negative or the buffer would be larger "
         "than 2^62 bytes"),
    (2**62 + 1, "a size from the inputs is negative or the buffer would be "
                "larger than 2^62 bytes"),
])
def test_unallocatable_size_is_an_error_naming_the_buffer(program, n, why):
    res = overlap.run(program, inputs=[[np.int64(n), x] for x in XS],
                      wait_timeout_ms=600000)
    assert res.status != 0
    text = str(res.messages)
    assert "run-time check failed: cannot allocate memref<?xf32> at " in text
    assert why in text, text
    # The library still runs, right, with a size that fits.
    res = overlap.run(program, inputs=[[np.int64(5), x] for x in XS])
    assert res.status == 0, res.messages
    for row in res.outputs:
        np.testing.assert_array_equal(row[0], np.full(5, XS[0][0] + XS[1][0],
                                                      np.float32))


def test_overlap_exec_says_which_buffer(program, tmp_path):
    """The tool: exit status 2 and the message, not a signal."""
    exe = find_overlap_exec()
    inputs = tmp_path / "in.npz"
    np.savez(inputs, arg0=np.int64(2**40), arg1=np.stack(XS))
    run = subprocess.run([str(exe), str(program), "--inputs", str(inputs)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 2, (run.returncode, run.stderr)
    assert "cannot allocate memref<?xf32> at " in run.stderr, run.stderr
    assert "out of memory" in run.stderr, run.stderr
