"""A failed run-time check of a compiled program ends the run with an error
the caller sees, not the process (issue 48, item 8).

Checks lowered to abort(): `overlap.run` from Python (or any embedding of
overlapRunInputs) died with SIGABRT. Now the loader calls each entry inside
the runtime's overlap_context_call_guarded, and the program's
overlap_check_failed fails that rank with the check's message and returns
there; the other ranks' waits on it fail too. This test process itself
surviving a failed check is part of what is checked."""

import subprocess

import numpy as np
import pytest

import overlap
from test_exec_npz import find_overlap_exec
from test_slice_bounds import ROWS

pytestmark = pytest.mark.usefixtures("native_libraries")

# Rank 1's size is out of range while rank 0 waits for it in an all-reduce.
REDUCED = ROWS.replace(
    "  return %o : tensor<8x4xf32>",
    "  %r = shard.all_reduce %o on @g grid_axes = [0] : tensor<8x4xf32> -> "
    "tensor<8x4xf32>\n  return %r : tensor<8x4xf32>")
assert REDUCED != ROWS


def _xs():
    rng = np.random.default_rng(8)
    return [rng.standard_normal((8, 4)).astype(np.float32) for _ in range(2)]


def test_overlap_run_reports_a_failed_check_and_the_process_lives(tmp_path):
    prog = overlap.compile(ROWS, output=tmp_path / "p.so", strategy="none")
    xs = _xs()
    res = overlap.run(prog.path,
                      inputs=[[x, np.array(9, np.int64)] for x in xs])
    assert res.status != 0
    text = str(res.messages)
    assert "run-time check failed" in text, text
    assert "reaches outside its source (its extent 8)" in text, text
    # The same loaded library runs again, right, after the failure.
    res = overlap.run(prog.path,
                      inputs=[[x, np.array(3, np.int64)] for x in xs])
    assert res.status == 0, res.messages
    for r, x in enumerate(xs):
        want = np.zeros_like(x)
        want[:3] = x[:3]
        np.testing.assert_array_equal(res.outputs[r][0], want)


def test_a_rank_that_fails_a_check_ends_the_others_waits(tmp_path):
    prog = overlap.compile(REDUCED, output=tmp_path / "p.so",
                           strategy="none")
    xs = _xs()
    res = overlap.run(prog.path, inputs=[[xs[0], np.array(4, np.int64)],
                                         [xs[1], np.array(-1, np.int64)]],
                      wait_timeout_ms=600000)
    assert res.status != 0
    text = str(res.messages)
    assert "rank 1: run-time check failed" in text, text
    assert "the size is negative" in text, text


def test_overlap_exec_exits_2_not_sigabrt(tmp_path):
    # 2: the run refused its input (the exit-status convention, docs/tools.md).
    prog = overlap.compile(ROWS, output=tmp_path / "p.so", strategy="none")
    np.savez(tmp_path / "in.npz", arg0=np.stack(_xs()),
             arg1=np.array([9, 9], np.int64))
    r = subprocess.run([find_overlap_exec(), prog.path, "--inputs",
                        str(tmp_path / "in.npz")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert ("the program run failed: OVERLAP_ERROR_INVALID_ARGUMENT: rank 0: "
            "run-time check failed: tensor.extract_slice") in r.stderr, r.stderr
