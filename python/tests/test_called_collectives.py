"""Collectives in functions the entry calls (a private func holding a shard
op, called once, twice, through another callee), inlined by
overlap-inline-collectives: only an entry point gets the run-time context.
They failed at translation before ("missing
`LLVMTranslationDialectInterface` registration for dialect for op:
shard.grid"). Against numpy, each rank's input its own."""

import numpy as np
import pytest

import overlap

pytestmark = pytest.mark.usefixtures("native_libraries")

RANKS = 4
T = "tensor<4x3xf32>"
G = "tensor<16x3xf32>"


def _inputs(seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((RANKS, 4, 3)).astype(np.float32)


def _run(src, xs, tmp_path):
    prog = overlap.compile(src, output=tmp_path / "p.so", strategy="none")
    res = overlap.run(prog.path, inputs=[[x] for x in xs])
    assert res.status == 0, res.messages
    return [row[0] for row in res.outputs]


def test_all_reduce_in_a_callee(tmp_path):
    src = f"""
shard.grid @g(shape = {RANKS})
func.func private @sum(%x: {T}) -> {T} {{
  %r = shard.all_reduce %x on @g grid_axes = [0] : {T} -> {T}
  return %r : {T}
}}
func.func @f(%x: {T}) -> {T} {{
  %r = func.call @sum(%x) : ({T}) -> {T}
  return %r : {T}
}}"""
    xs = _inputs(1)
    want = xs.sum(axis=0, dtype=np.float32)
    for got in _run(src, xs, tmp_path):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_callees_of_callees_called_twice(tmp_path):
    """@scaled multiplies by (rank + 1) (shard.process_linear_index) and
    gathers; @outer calls it twice, on x and on x + 1, and the entry calls
    @outer and a function without shard ops (kept as a call)."""
    src = f"""
shard.grid @g(shape = {RANKS})
func.func private @scaled(%x: {T}) -> {G} {{
  %i = shard.process_linear_index on @g : index
  %c1 = arith.constant 1 : index
  %j = arith.addi %i, %c1 : index
  %k = arith.index_cast %j : index to i64
  %s = arith.sitofp %k : i64 to f32
  %e = tensor.empty() : {T}
  %m = linalg.generic {{indexing_maps = [affine_map<(a, b) -> (a, b)>, affine_map<(a, b) -> (a, b)>], iterator_types = ["parallel", "parallel"]}} ins(%x : {T}) outs(%e : {T}) {{
  ^bb0(%v: f32, %o: f32):
    %w = arith.mulf %v, %s : f32
    linalg.yield %w : f32
  }} -> {T}
  %g = shard.all_gather %m on @g grid_axes = [0] gather_axis = 0 : {T} -> {G}
  return %g : {G}
}}
func.func private @plus1(%x: {T}) -> {T} {{
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : {T}
  %m = linalg.generic {{indexing_maps = [affine_map<(a, b) -> (a, b)>, affine_map<(a, b) -> (a, b)>], iterator_types = ["parallel", "parallel"]}} ins(%x : {T}) outs(%e : {T}) {{
  ^bb0(%v: f32, %o: f32):
    %w = arith.addf %v, %one : f32
    linalg.yield %w : f32
  }} -> {T}
  return %m : {T}
}}
func.func private @outer(%x: {T}) -> ({G}, {G}) {{
  %a = func.call @scaled(%x) : ({T}) -> {G}
  %y = func.call @plus1(%x) : ({T}) -> {T}
  %b = func.call @scaled(%y) : ({T}) -> {G}
  return %a, %b : {G}, {G}
}}
func.func @f(%x: {T}) -> ({G}, {G}) {{
  %a, %b = func.call @outer(%x) : ({T}) -> ({G}, {G})
  return %a, %b : {G}, {G}
}}"""
    xs = _inputs(2)
    prog = overlap.compile(src, output=tmp_path / "p.so", strategy="none")
    res = overlap.run(prog.path, inputs=[[x] for x in xs])
    assert res.status == 0, res.messages
    scale = np.arange(1, RANKS + 1, dtype=np.float32)[:, None, None]
    want_a = np.concatenate(list(xs * scale))
    want_b = np.concatenate(list((xs + np.float32(1)) * scale))
    for row in res.outputs:
        np.testing.assert_allclose(row[0], want_a, rtol=1e-6)
        np.testing.assert_allclose(row[1], want_b, rtol=1e-6)


def test_recursive_callee_is_refused(tmp_path):
    src = f"""
shard.grid @g(shape = {RANKS})
func.func private @loop(%x: {T}, %n: index) -> {T} {{
  %r = shard.all_reduce %x on @g grid_axes = [0] : {T} -> {T}
  %c0 = arith.constant 0 : index
  %done = arith.cmpi eq, %n, %c0 : index
  %o = scf.if %done -> {T} {{
    scf.yield %r : {T}
  }} else {{
    %c1 = arith.constant 1 : index
    %m = arith.subi %n, %c1 : index
    %s = func.call @loop(%r, %m) : ({T}, index) -> {T}
    scf.yield %s : {T}
  }}
  return %o : {T}
}}
func.func @f(%x: {T}) -> {T} {{
  %c2 = arith.constant 2 : index
  %r = func.call @loop(%x, %c2) : ({T}, index) -> {T}
  return %r : {T}
}}"""
    with pytest.raises(overlap.CompileError,
                       match=r"calls @loop, which holds shard ops, and it "
                             r"could not be inlined"):
        overlap.compile(src, output=tmp_path / "p.so", strategy="none")
