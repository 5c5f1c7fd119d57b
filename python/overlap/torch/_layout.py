"""How a value of the per-rank program relates to the module's global one.

The torch frontend emits the partitioned per-rank program directly (like the
body of a ``jax.shard_map``), so every value it emits carries a `Layout`: per
dim of the global tensor, the factors its size is made of (a view may merge
or split dims) and which factor, at most one per value, is split into R
contiguous blocks over the ranks of the 1-D tensor-parallel grid; or the
value is a partial sum (a contraction over a split dim) that an all-reduce
makes whole. The local shape follows from it; sharding a global argument and
reassembling a global result (numpy) too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np

#: One factor of a dim: (global size, split over the ranks?).
Factor = Tuple[int, bool]


class LayoutError(ValueError):
    """A view or an op the layout cannot follow (the caller says where)."""


@dataclass(frozen=True)
class Layout:
    dims: Tuple[Tuple[Factor, ...], ...]
    partial: bool = False
    #: The weight of a ColwiseParallel(output_layouts=Replicate()) Linear
    #: (and its views): the contraction it splits is all-gathered after.
    gather: bool = False
    #: The weight of a RowwiseParallel(output_layouts=Shard(1)) Linear: the
    #: partial sum it makes is reduce-scattered over the sequence.
    scatter: bool = False

    # -- construction ------------------------------------------------------

    @staticmethod
    def replicated(shape: Sequence[int]) -> "Layout":
        return Layout(tuple(((int(d), False),) for d in shape))

    @staticmethod
    def split(shape: Sequence[int], dim: int, gather: bool = False,
              scatter: bool = False) -> "Layout":
        dims = [((int(d), False),) for d in shape]
        dims[dim] = ((int(shape[dim]), True),)
        return Layout(tuple(dims), gather=gather, scatter=scatter)

    # -- queries -----------------------------------------------------------

    @property
    def shape(self) -> Tuple[int, ...]:
        return tuple(int(np.prod([f for f, _ in d], dtype=np.int64))
                     for d in self.dims)

    def local_shape(self, ranks: int) -> Tuple[int, ...]:
        return tuple(int(np.prod([f // ranks if s else f for f, s in d],
                                 dtype=np.int64)) for d in self.dims)

    def split_dim(self) -> Optional[int]:
        for i, d in enumerate(self.dims):
            if any(s for _, s in d):
                return i
        return None

    @property
    def is_replicated(self) -> bool:
        return self.split_dim() is None and not self.partial

    def dim_key(self, i: int) -> Tuple[Factor, ...]:
        """Dim `i` normalized (unit factors dropped, each whole factor
        merged into the one before it): two dims hold the same blocks on
        every rank iff their keys are equal."""
        out: List[List] = []
        for f, s in self.dims[i]:
            if f == 1:
                continue
            # A whole factor after another (split or not) merges into it:
            # R contiguous blocks of the outer factor are R contiguous
            # blocks of the product.
            if out and not s:
                out[-1][0] *= f
            else:
                out.append([f, s])
        return tuple((f, s) for f, s in out)

    def dim_is_split(self, i: int) -> bool:
        return any(s for _, s in self.dims[i])

    def describe(self) -> str:
        if self.partial:
            return "a partial sum"
        d = self.split_dim()
        if d is None:
            return "replicated"
        return f"split on dim {d} of {list(self.shape)}"

    # -- transformations ---------------------------------------------------

    def permute(self, perm: Sequence[int]) -> "Layout":
        return Layout(tuple(self.dims[p] for p in perm), self.partial,
                      self.gather, self.scatter)

    def with_dims(self, dims) -> "Layout":
        return Layout(tuple(tuple(d) for d in dims), self.partial,
                      self.gather, self.scatter)

    def reshape(self, shape: Sequence[int], ranks: int) -> "Layout":
        """The layout after a view to the global `shape`: the factors are
        regrouped; a split factor cut in two keeps its split on the outer
        part, which must hold a multiple of `ranks` (else a rank's block is
        not contiguous in the new shape)."""
        factors = [f for d in self.dims for f in d if f[0] != 1]
        out: List[Tuple[Factor, ...]] = []
        k = 0
        for size in shape:
            size = int(size)
            got: List[Factor] = []
            prod = 1
            while prod < size:
                if k >= len(factors):
                    raise LayoutError(f"a view to {list(shape)}")
                f, s = factors[k]
                if prod * f <= size:
                    got.append((f, s))
                    prod *= f
                    k += 1
                    continue
                need = size // prod
                if size % prod or f % need:
                    raise LayoutError(
                        f"a view to {list(shape)} that cuts a dim of "
                        f"{list(self.shape)} unevenly")
                if s and need % ranks:
                    raise LayoutError(
                        f"a view to {list(shape)} that cuts the split dim "
                        f"({f}) into {need} x {f // need}: {need} is not a "
                        f"multiple of the {ranks} ranks, so a rank's block "
                        f"is not one piece of it")
                got.append((need, s))
                factors[k] = (f // need, False)
                prod *= need
            if prod != size:
                raise LayoutError(f"a view to {list(shape)}")
            out.append(tuple(got) or ((1, False),))
        if any(f != 1 for f, _ in factors[k:]):
            raise LayoutError(f"a view to {list(shape)}")
        return Layout(tuple(out), self.partial, self.gather, self.scatter)

    # -- host side ---------------------------------------------------------

    def _factor_shapes(self, ranks: int):
        full = [f for d in self.dims for f, _ in d]
        local = [f // ranks if s else f for d in self.dims for f, s in d]
        axis = None
        for i, (_, s) in enumerate(f for d in self.dims for f in d):
            if s:
                axis = i
        return full, local, axis

    def shard(self, value: np.ndarray, rank: int, ranks: int) -> np.ndarray:
        """Rank `rank`'s block of the global `value`."""
        full, local, axis = self._factor_shapes(ranks)
        if axis is None:
            return np.ascontiguousarray(value)
        v = value.reshape(full)
        index = [slice(None)] * len(full)
        index[axis] = slice(rank * local[axis], (rank + 1) * local[axis])
        return np.ascontiguousarray(v[tuple(index)]).reshape(
            self.local_shape(ranks))

    def assemble(self, blocks: Sequence[np.ndarray], ranks: int
                 ) -> np.ndarray:
        """The global value from every rank's block (a replicated value is
        rank 0's)."""
        full, local, axis = self._factor_shapes(ranks)
        if axis is None:
            return np.asarray(blocks[0]).reshape(self.shape)
        out = np.empty(full, dtype=np.asarray(blocks[0]).dtype)
        for r, block in enumerate(blocks):
            index = [slice(None)] * len(full)
            index[axis] = slice(r * local[axis], (r + 1) * local[axis])
            out[tuple(index)] = np.asarray(block).reshape(local)
        return out.reshape(self.shape)
