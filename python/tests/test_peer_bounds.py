"""shard.send / shard.recv peers checked axis by axis (issue 48, item 5).

A peer is an in-group multi-index; the lowering turns it into a rank
row-major over the axes, so [0, 2] on a 2 x 2 grid became rank 2 and the
run handed rank 2 another rank's block and exited 0. Dynamic entries (from
the inputs here) are now checked at run time against their axis' extent,
constant ones at compile time. The oracle is numpy: the block each rank
sent to the receiver, by ShardOps.td's definition of the peer."""

import subprocess

import numpy as np
import pytest

import overlap
from test_exec_npz import find_overlap_exec

pytestmark = pytest.mark.usefixtures("native_libraries")

T = "tensor<3x4xf32>"

# Every rank sends its %x to [%p, %q] and receives from whichever rank
# sent to it.
SRC = f"""
shard.grid @g(shape = 2x2)
func.func @f(%x: {T}, %p: index, %q: index) -> {T} {{
  %a = shard.send %x on @g grid_axes = [0, 1] destination = [%p, %q]
    : ({T}, index, index) -> {T}
  %b = shard.recv %x on @g grid_axes = [0, 1] : ({T}) -> {T}
  return %b : {T}
}}"""


def _blocks():
    rng = np.random.default_rng(48)
    return [rng.standard_normal((3, 4)).astype(np.float32) for _ in range(4)]


def test_dynamic_peers_in_range(tmp_path):
    xs = _blocks()
    dests = [(0, 1), (0, 0), (1, 1), (1, 0)]
    prog = overlap.compile(SRC, output=tmp_path / "p.so", strategy="none")
    res = overlap.run(prog.path, inputs=[
        [xs[r], np.array(p, np.int64), np.array(q, np.int64)]
        for r, (p, q) in enumerate(dests)])
    assert res.status == 0, res.messages
    for sender, (p, q) in enumerate(dests):
        np.testing.assert_array_equal(res.outputs[p * 2 + q][0], xs[sender])


@pytest.mark.parametrize("dests,entry,axis", [
    # Rank 0 names [0, 2]: row-major that is rank 2, which then receives
    # exactly one block (what every other rank's destination leaves), so
    # the run exited 0 with rank 0's block at rank 2.
    ([(0, 2), (0, 0), (0, 1), (1, 1)], 1, 1),
    # [2, 0] is rank 4: outside the group.
    ([(2, 0), (0, 0), (0, 1), (1, 1)], 0, 0),
    # -1 on axis 1 with 1 on axis 0: row-major rank 1.
    ([(1, -1), (0, 0), (0, 1), (1, 1)], 1, 1),
])
def test_dynamic_peer_outside_an_axis_stops_the_run(tmp_path, dests, entry,
                                                    axis):
    xs = _blocks()
    prog = overlap.compile(SRC, output=tmp_path / "p.so", strategy="none")
    np.savez(tmp_path / "in.npz", arg0=np.stack(xs),
             arg1=np.array([p for p, _ in dests], np.int64),
             arg2=np.array([q for _, q in dests], np.int64))
    r = subprocess.run([find_overlap_exec(), prog.path, "--inputs",
                        str(tmp_path / "in.npz")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0, r.stdout
    assert (f"shard.send at " in r.stderr and
            f"its destination [?, ?] has entry {entry} outside grid axis "
            f"{axis} of @g (extent 2)" in r.stderr), r.stderr


def test_constant_peer_outside_an_axis_is_refused(tmp_path):
    src = f"""
shard.grid @g(shape = 2x2)
func.func @f(%x: {T}) -> {T} {{
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %a = shard.send %x on @g grid_axes = [0, 1] destination = [%c0, %c2]
    : ({T}, index, index) -> {T}
  %b = shard.recv %x on @g grid_axes = [0, 1] : ({T}) -> {T}
  return %b : {T}
}}"""
    with pytest.raises(overlap.CompileError,
                       match=r"destination \[\?, \?\] has entry 1 = 2 "
                             r"outside grid axis 1 of @g \(extent 2\)"
                             r"|Out of bounds coordinate 1"):
        overlap.compile(src, output=tmp_path / "p.so", strategy="none")
