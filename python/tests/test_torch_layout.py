"""overlap.torch's layouts (_layout.Layout): how a per-rank value relates
to the module's global tensor through views, and the host-side sharding
and reassembly, against numpy slicing of the global array."""

import numpy as np
import pytest

pytest.importorskip("torch")

from overlap.torch._layout import Layout, LayoutError  # noqa: E402

R = 4


def test_a_split_hidden_dim_viewed_as_heads_splits_the_heads():
    # [b, s, h] split on h (a colwise q projection), viewed [b, s, nh, hd]:
    # each rank holds nh / R whole heads.
    lay = Layout.split((2, 16, 64), 2).reshape((2, 16, 8, 8), R)
    assert lay.local_shape(R) == (2, 16, 2, 8)
    assert lay.split_dim() == 2
    # And back: [b, s, h] split on h again, the same blocks as the weight's.
    back = lay.reshape((2, 16, 64), R)
    assert back.dim_key(2) == Layout.split((64,), 0).dim_key(0)


def test_folding_b_and_s_keeps_the_split_of_h():
    lay = Layout.split((2, 16, 64), 2).reshape((32, 64), R)
    assert lay.local_shape(R) == (32, 16) and lay.split_dim() == 1


def test_a_view_that_cuts_a_rank_block_is_refused():
    # 8 heads of 8 split over 4 ranks, viewed [2, 4, 8]: the outer 2 is not
    # a multiple of 4, so a rank's block is not one piece of it.
    with pytest.raises(LayoutError, match="not a multiple of the 4 ranks"):
        Layout.split((64,), 0).reshape((2, 32), R)


def test_heads_folded_into_the_batch_shard_and_assemble_as_numpy():
    # [b, nh, s, hd] split on nh, folded to [b * nh, s, hd]: rank r's block
    # is its heads of every batch row (not a contiguous block of b * nh).
    g = np.arange(2 * 8 * 3 * 5, dtype=np.float32).reshape(2, 8, 3, 5)
    lay = Layout.split(g.shape, 1).reshape((16, 3, 5), R)
    flat = g.reshape(16, 3, 5)
    blocks = [lay.shard(flat, r, R) for r in range(R)]
    for r, block in enumerate(blocks):
        want = g[:, 2 * r:2 * r + 2].reshape(4, 3, 5)
        np.testing.assert_array_equal(block, want)
    np.testing.assert_array_equal(lay.assemble(blocks, R), flat)


def test_replicated_values_are_rank_zeros():
    lay = Layout.replicated((3, 4))
    x = np.ones((3, 4), np.float32)
    assert lay.is_replicated and lay.local_shape(R) == (3, 4)
    np.testing.assert_array_equal(lay.assemble([x, 2 * x, 3 * x, 4 * x], R),
                                  x)


def test_transposes_move_the_split():
    lay = Layout.split((2, 16, 8, 8), 2).permute([0, 2, 1, 3])
    assert lay.split_dim() == 1 and lay.local_shape(R) == (2, 2, 16, 8)
