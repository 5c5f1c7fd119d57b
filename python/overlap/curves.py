"""Cost curves in the Planner's profile format (docs/profiles.md).

A curve is either piecewise polynomials ``{"pieces": [{"from", "to",
"coeffs"}, ...]}`` (ascending powers; the last ``to`` may be ``None``, i.e.
open-ended) or a monotone table ``{"table": [[x, y], ...]}`` interpolated
linearly. Evaluation follows the Planner: below the first range the first
piece is used, above the last the last one; tables extend their end
segments; values are clamped at 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

import numpy as np


@dataclass
class Piece:
    start: float
    end: Optional[float]  # None: open-ended (only the last piece)
    coeffs: List[float]  # ascending powers

    def __call__(self, x):
        return np.polynomial.polynomial.polyval(np.asarray(x, dtype=float),
                                                self.coeffs)

    @property
    def degree(self) -> int:
        d = len(self.coeffs) - 1
        while d > 0 and self.coeffs[d] == 0:
            d -= 1
        return d

    def to_json(self) -> Dict[str, Any]:
        return {"from": _num(self.start),
                "to": None if self.end is None else _num(self.end),
                "coeffs": [_num(c) for c in self.coeffs]}


@dataclass
class Curve:
    """Time in µs vs x (rows for GEMMs, bytes in ``x_unit`` for collectives)."""

    pieces: List[Piece] = field(default_factory=list)
    table: Optional[List[List[float]]] = None

    def __call__(self, x):
        x = np.asarray(x, dtype=float)
        if self.table is not None:
            y = _interp_extended(x, self.table)
        else:
            y = np.empty_like(x)
            flat_x, flat_y = x.reshape(-1), y.reshape(-1)
            for i, xv in enumerate(flat_x):
                flat_y[i] = self.piece_at(float(xv))(xv)
        return np.maximum(y, 0.0)

    def piece_at(self, x: float) -> Piece:
        for piece in self.pieces:
            if piece.end is None or x < piece.end:
                return piece
        return self.pieces[-1]

    @property
    def kind(self) -> str:
        return "table" if self.table is not None else "pieces"

    def describe(self) -> str:
        if self.table is not None:
            return f"monotone table of {len(self.table)} points"
        names = {0: "const", 1: "linear", 2: "quadratic"}
        parts = []
        for p in self.pieces:
            end = "inf" if p.end is None else _fmt(p.end)
            parts.append(f"{names.get(p.degree, f'deg {p.degree}')} "
                         f"[{_fmt(p.start)}, {end})")
        return ", ".join(parts)

    def to_json(self) -> Dict[str, Any]:
        if self.table is not None:
            return {"table": [[_num(x), _num(y)] for x, y in self.table]}
        return {"pieces": [p.to_json() for p in self.pieces]}

    @classmethod
    def from_json(cls, obj: Dict[str, Any]) -> "Curve":
        if "table" in obj:
            return cls(table=[[float(x), float(y)] for x, y in obj["table"]])
        pieces = [Piece(float(p["from"]),
                        None if p.get("to") is None else float(p["to"]),
                        [float(c) for c in p["coeffs"]])
                  for p in obj["pieces"]]
        return cls(pieces=pieces)

    def check_monotone(self) -> Optional[str]:
        """None when the Planner would accept the curve's monotonicity, else
        a sentence saying where it fails (mirrors lib/Planner/Profile.cpp)."""
        if self.table is not None:
            for (x0, y0), (x1, y1) in zip(self.table, self.table[1:]):
                if not x1 > x0:
                    return f"table x not increasing at {x1}"
                if y1 < y0:
                    return f"table drops at x = {x1}"
            return None
        for i, p in enumerate(self.pieces):
            if not poly_nondecreasing(p.coeffs, p.start,
                                      math.inf if p.end is None else p.end):
                return f"piece {i} decreases on [{p.start}, {p.end})"
            if i:
                prev = self.pieces[i - 1]
                left, right = prev(p.start), p(p.start)
                if right < left - 1e-9 * max(1.0, abs(left)):
                    return (f"curve drops at x = {p.start} "
                            f"({float(left)} -> {float(right)})")
        return None


def poly_nondecreasing(coeffs: Sequence[float], lo: float, hi: float,
                       rel_tol: float = 1e-12) -> bool:
    """Whether the polynomial (degree <= 2) does not decrease on [lo, hi]."""
    c = list(coeffs) + [0.0] * (3 - len(coeffs))
    if len(coeffs) > 3:
        raise ValueError("only polynomials up to degree 2 are checked here")
    c0, c1, c2 = c[:3]
    # The derivative c1 + 2 c2 x is linear: checking both ends suffices.
    scale = max(abs(c1), abs(2 * c2 * lo), 1e-300)
    if c1 + 2 * c2 * lo < -rel_tol * scale:
        return False
    if math.isinf(hi):
        return c2 >= 0
    scale = max(abs(c1), abs(2 * c2 * hi), 1e-300)
    return c1 + 2 * c2 * hi >= -rel_tol * scale


def _interp_extended(x: np.ndarray, table: Sequence[Sequence[float]]):
    xs = np.array([p[0] for p in table], dtype=float)
    ys = np.array([p[1] for p in table], dtype=float)
    if len(xs) == 1:
        return np.full_like(x, ys[0])
    y = np.interp(x, xs, ys)
    lo, hi = x < xs[0], x > xs[-1]
    y[lo] = ys[0] + (x[lo] - xs[0]) * (ys[1] - ys[0]) / (xs[1] - xs[0])
    y[hi] = ys[-1] + (x[hi] - xs[-1]) * (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
    return y


def _num(v: float):
    """JSON number: integers stay integers, floats keep full precision."""
    v = float(v)
    if v == 0:
        return 0
    if v.is_integer() and abs(v) < 2 ** 53:
        return int(v)
    return v


def _fmt(v: float) -> str:
    return f"{v:.6g}"
