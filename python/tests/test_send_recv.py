"""shard.send / shard.recv, against numpy (ShardOps.td: send "sends the
input tensor to device `destination`", recv "receives a tensor from device
`source`, ... the content of the input tensor is ignored"; both by the
peer's in-group multi-index). In one function the k-th send and the k-th
recv on a grid's axes pair up; the peers are computed from the process
index, as a ring writes them. Each was refused before ("every rank of an
SPMD program runs it with the same peer")."""

import subprocess

import numpy as np
import pytest

import overlap
from test_exec_npz import find_overlap_exec

pytestmark = pytest.mark.usefixtures("native_libraries")

T = "tensor<3x4xf32>"


def _ring(step, with_source=True, grid="4", axes="[0]"):
    """Each rank sends to (i + step) mod n and receives from (i - step)."""
    source = "source = [%src]" if with_source else ""
    return f"""
shard.grid @g(shape = {grid})
func.func @f(%x: {T}, %y: {T}) -> ({T}, {T}) {{
  %i = shard.process_linear_index on @g : index
  %n = arith.constant 4 : index
  %s = arith.constant {step} : index
  %nm = arith.subi %n, %s : index
  %ds = arith.addi %i, %s : index
  %dst = arith.remui %ds, %n : index
  %sr = arith.addi %i, %nm : index
  %src = arith.remui %sr, %n : index
  %a = shard.send %x on @g grid_axes = {axes} destination = [%dst] : ({T}, index) -> {T}
  %b = shard.recv %y on @g grid_axes = {axes} {source} : ({T}{", index" if with_source else ""}) -> {T}
  return %a, %b : {T}, {T}
}}"""


def _run(src, xs, ys, tmp_path):
    prog = overlap.compile(src, output=tmp_path / "p.so", strategy="none")
    res = overlap.run(prog.path, inputs=[[x, y] for x, y in zip(xs, ys)])
    assert res.status == 0, res.messages
    return res


def _inputs(seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((3, 4)).astype(np.float32) for _ in range(4)]


@pytest.mark.parametrize("step", [1, 3, 0])
@pytest.mark.parametrize("with_source", [True, False])
def test_ring(step, with_source, tmp_path):
    xs, ys = _inputs(1), _inputs(2)
    res = _run(_ring(step, with_source), xs, ys, tmp_path)
    for r in range(4):
        sent, got = res.outputs[r][0], res.outputs[r][1]
        np.testing.assert_array_equal(sent, xs[r])  # a send's result
        np.testing.assert_array_equal(got, xs[(r - step) % 4])


def _alone(op):
    """A program on a grid of 4 whose one op, `op` of %x, gives its
    result."""
    return f"""
shard.grid @g(shape = 4)
func.func @f(%x: {T}) -> {T} {{
  %a = {op} : ({T}) -> {T}
  return %a : {T}
}}"""


def test_send_alone(tmp_path):
    """Upstream's send_static_destination: nothing receives; the result is
    the input (a buffered send), said by a remark."""
    src = _alone("shard.send %x on @g grid_axes = [0] destination = [2]")
    xs = _inputs(3)
    prog = overlap.compile(src, output=tmp_path / "p.so", strategy="none")
    assert any("buffered send nobody reads" in m.get("reason", str(m))
               for m in prog.missed), prog.missed
    res = overlap.run(prog.path, inputs=[[x] for x in xs])
    assert res.status == 0, res.messages
    for r in range(4):
        np.testing.assert_array_equal(res.outputs[r][0], xs[r])


def test_recv_alone_refused(tmp_path):
    src = _alone("shard.recv %x on @g grid_axes = [0] source = [1]")
    with pytest.raises(overlap.CompileError,
                       match="no shard.send before it .* would wait forever"):
        overlap.compile(src, output=tmp_path / "p.so")


def test_source_that_did_not_send(tmp_path):
    """Every rank sends to rank 2 and receives from its left neighbour
    (i - 1): rank 3's source (2) sent to 2, not to 3, so the run stops
    with the ops' places instead of handing rank 3 a wrong block."""
    src = f"""
shard.grid @g(shape = 4)
func.func @f(%x: {T}, %y: {T}) -> {T} {{
  %i = shard.process_linear_index on @g : index
  %n = arith.constant 4 : index
  %c3 = arith.constant 3 : index
  %sr = arith.addi %i, %c3 : index
  %src = arith.remui %sr, %n : index
  %a = shard.send %x on @g grid_axes = [0] destination = [2] : ({T}) -> {T}
  %b = shard.recv %y on @g grid_axes = [0] source = [%src] : ({T}, index) -> {T}
  return %b : {T}
}}"""
    prog = overlap.compile(src, output=tmp_path / "p.so", strategy="none")
    xs = _inputs(4)
    np.savez(tmp_path / "in.npz", arg0=np.stack(xs), arg1=np.stack(xs))
    r = subprocess.run([find_overlap_exec(), prog.path, "--inputs",
                        str(tmp_path / "in.npz")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert "its source did not send to this rank" in r.stderr, r.stderr
