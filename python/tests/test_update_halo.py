"""shard.update_halo (what shard-partition emits for a sharding with
halo_sizes), written as gathers and slices by overlap-lower-collectives,
against numpy: each rank's lower halo holds the last rows of the core of
the rank below, its upper halo the first rows of the core of the rank
above; the first and last rank keep theirs. Halo sizes [1, 2] on 4 ranks,
f32 and i64, a split along dim 1, and two split dims on a 2 x 2 grid
(corners from the diagonal neighbour). It was refused ("not lowered by
Overlap")."""

import numpy as np
import pytest

import overlap

pytestmark = pytest.mark.usefixtures("native_libraries")


def _module(grid, shape, core, lo_hi, split, elem):
    """A module whose entry puts its argument (the core) into a tensor of
    -7s with room for the halos and updates them."""
    t = "x".join(map(str, shape)) + "x" + elem
    c = "x".join(map(str, core)) + "x" + elem
    fill = "-7.0" if elem.startswith("f") else "-7"
    offsets = [0] * len(shape)
    halo_list = []
    for d, lh in zip(split, lo_hi):
        offsets[d] = lh[0]
    for lh in lo_hi:
        halo_list += list(lh)
    split_axes = [[] for _ in shape]
    for axis, d in enumerate(split):
        split_axes[d] = [axis]
    while split_axes and not split_axes[-1]:
        split_axes.pop()
    sa = "[" + ", ".join("[" + ", ".join(map(str, a)) + "]"
                         for a in split_axes) + "]"
    return f"""
shard.grid @g(shape = {'x'.join(map(str, grid))})
func.func @f(%core: tensor<{c}>) -> tensor<{t}> {{
  %v = arith.constant {fill} : {elem}
  %e = tensor.empty() : tensor<{t}>
  %f = linalg.fill ins(%v : {elem}) outs(%e : tensor<{t}>) -> tensor<{t}>
  %i = tensor.insert_slice %core into %f[{', '.join(map(str, offsets))}] [{', '.join(map(str, core))}] [{', '.join(['1'] * len(core))}] : tensor<{c}> into tensor<{t}>
  %h = shard.update_halo %i on @g split_axes = {sa} halo_sizes = {halo_list} : tensor<{t}>
  return %h : tensor<{t}>
}}"""


def _expected(cores, grid, lo_hi, split, dtype):
    """numpy's update: rank coordinates row-major over the grid."""
    coords = list(np.ndindex(*grid))
    shape = list(cores[0].shape)
    for d, (lo, hi) in zip(split, lo_hi):
        shape[d] += lo + hi
    out = []
    for r, _ in enumerate(coords):
        t = np.full(shape, -7, dtype)
        sl = [slice(None)] * len(shape)
        for d, (lo, hi) in zip(split, lo_hi):
            sl[d] = slice(lo, lo + cores[r].shape[d])
        t[tuple(sl)] = cores[r]
        out.append(t)
    # Dimension by dimension, on the tensors as the previous dims left them.
    for axis, (d, (lo, hi)) in enumerate(zip(split, lo_hi)):
        prev = [t.copy() for t in out]
        for r, c in enumerate(coords):
            core = prev[r].shape[d] - lo - hi

            def neighbour(delta):
                n = list(c)
                n[axis] += delta
                if not 0 <= n[axis] < grid[axis]:
                    return None
                return coords.index(tuple(n))
            below, above = neighbour(-1), neighbour(+1)
            idx = [slice(None)] * len(shape)
            if lo and below is not None:
                src = list(idx)
                src[d] = slice(core, core + lo)
                dst = list(idx)
                dst[d] = slice(0, lo)
                out[r][tuple(dst)] = prev[below][tuple(src)]
            if hi and above is not None:
                src = list(idx)
                src[d] = slice(lo, lo + hi)
                dst = list(idx)
                dst[d] = slice(lo + core, lo + core + hi)
                out[r][tuple(dst)] = prev[above][tuple(src)]
    return out


@pytest.mark.parametrize("elem,dtype", [("f32", np.float32),
                                        ("i64", np.int64)])
@pytest.mark.parametrize("case", ["rows", "cols", "grid2d"])
def test_update_halo_matches_numpy(elem, dtype, case, tmp_path):
    if case == "rows":
        grid, core, lo_hi, split = (4,), (5, 3), [(1, 2)], [0]
    elif case == "cols":
        grid, core, lo_hi, split = (4,), (3, 5), [(2, 1)], [1]
    else:
        grid, core, lo_hi, split = (2, 2), (4, 5), [(1, 2), (2, 1)], [0, 1]
    shape = list(core)
    for d, (lo, hi) in zip(split, lo_hi):
        shape[d] += lo + hi
    ranks = int(np.prod(grid))
    rng = np.random.default_rng(7)
    cores = [(rng.standard_normal(core) * 100).astype(dtype)
             for _ in range(ranks)]
    prog = overlap.compile(_module(grid, shape, core, lo_hi, split, elem),
                           output=tmp_path / "h.so", strategy="none")
    res = overlap.run(prog.path, inputs=[[c] for c in cores])
    assert res.status == 0, res.messages
    want = _expected(cores, grid, lo_hi, split, dtype)
    for r in range(ranks):
        np.testing.assert_array_equal(res.outputs[r][0], want[r],
                                      err_msg=f"rank {r}")
