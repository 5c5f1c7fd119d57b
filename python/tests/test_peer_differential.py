"""Random send/recv peers against numpy (issue 48: the coordinate checks in
a generator that draws them).

Each case draws a grid (2x2, 2x3, 3x2, 1x4, 4x1, 2x2x2), a permutation of
its ranks as every rank's destination, given as one index per axis from
the inputs, and in a third of the cases one entry moved outside its axis
(below 0 or past the extent, on a random rank and axis). A program in
range must hand each rank the block that numpy says was sent to it (the
peer of ShardOps.td: a multi-index in the group, row-major); one out of
range must stop the run (in this process: overlap.run, which a failed
check aborted before) naming the entry and the axis, never hand another
rank's block over. OVERLAP_DIFFERENTIAL_PEERS sets how many (default 40).
No code is shared with the lowering."""

import os

import numpy as np
import pytest

import overlap

COUNT = int(os.environ.get("OVERLAP_DIFFERENTIAL_PEERS", "40"))
SHAPES = [(2, 2), (2, 3), (3, 2), (1, 4), (4, 1), (2, 2, 2)]
T = "tensor<2x3xf32>"
pytestmark = pytest.mark.usefixtures("native_libraries")

_compiled = {}


def _program(shape, tmp_path_factory):
    if shape not in _compiled:
        axes = ", ".join(str(a) for a in range(len(shape)))
        ids = ", ".join(f"%p{a}" for a in range(len(shape)))
        params = ", ".join(f"%p{a}: index" for a in range(len(shape)))
        types = ", ".join("index" for _ in shape)
        src = f"""
shard.grid @g(shape = {"x".join(map(str, shape))})
func.func @f(%x: {T}, {params}) -> {T} {{
  %a = shard.send %x on @g grid_axes = [{axes}] destination = [{ids}]
    : ({T}, {types}) -> {T}
  %b = shard.recv %x on @g grid_axes = [{axes}] : ({T}) -> {T}
  return %b : {T}
}}"""
        out = tmp_path_factory.mktemp("peers") / "p.so"
        _compiled[shape] = overlap.compile(src, output=out, strategy="none")
    return _compiled[shape]


def _draw(seed):
    rng = np.random.default_rng(4800 + seed)
    shape = SHAPES[int(rng.integers(len(SHAPES)))]
    ranks = int(np.prod(shape))
    dest = rng.permutation(ranks)
    coords = [list(np.unravel_index(int(d), shape)) for d in dest]
    bad = None
    if rng.integers(3) == 0:
        rank = int(rng.integers(ranks))
        axis = int(rng.integers(len(shape)))
        value = int(rng.choice([-1 - int(rng.integers(3)),
                                shape[axis] + int(rng.integers(3))]))
        coords[rank][axis] = value
        bad = (axis, value)
    xs = [rng.standard_normal((2, 3)).astype(np.float32)
          for _ in range(ranks)]
    return shape, dest, coords, bad, xs


@pytest.mark.parametrize("seed", range(COUNT))
def test_random_peers_match_numpy(seed, tmp_path_factory):
    shape, dest, coords, bad, xs = _draw(seed)
    prog = _program(shape, tmp_path_factory)
    inputs = [[xs[r]] + [np.array(c, np.int64) for c in coords[r]]
              for r in range(len(xs))]
    res = overlap.run(prog.path, inputs=inputs, wait_timeout_ms=60000)
    if bad is None:
        assert res.status == 0, res.messages
        for sender, receiver in enumerate(dest):
            np.testing.assert_array_equal(res.outputs[int(receiver)][0],
                                          xs[sender])
        return
    axis, value = bad
    assert res.status != 0, f"out-of-range peer {value} on axis {axis} ran"
    text = str(res.messages)
    assert "run-time check failed" in text, text
    assert (f"outside grid axis {axis} of @g (extent {shape[axis]})"
            in text), text
