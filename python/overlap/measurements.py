"""Reading the measurements CSV that ``overlap.fit`` fits (schema in
docs/python.md).

Every problem is reported as ``FILE:LINE: column 'NAME': expected ..., got
'...'`` so that a bad row in a thousand-line benchmark dump is found at once.
"""

from __future__ import annotations

import csv
import io
import math
import os
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Tuple, Union

ELEMENT_BYTES = {"f16": 2, "bf16": 2, "f32": 4}
COLLECTIVES = ("all-reduce", "reduce-scatter", "all-gather")
KINDS = ("gemm", "comm")
COLUMNS = ("kind", "collective", "ranks", "dtype", "m", "n", "k", "bytes",
           "time_us", "note")


class MeasurementError(ValueError):
    """A malformed measurements file; the message names file, line, column."""


@dataclass(frozen=True)
class GemmKey:
    n: int
    k: int
    dtype: str

    def __str__(self) -> str:
        return f"gemm n={self.n} k={self.k} {self.dtype}"


@dataclass(frozen=True)
class CommKey:
    collective: str
    ranks: int

    def __str__(self) -> str:
        return f"{self.collective} ranks={self.ranks}"


Key = Union[GemmKey, CommKey]


@dataclass
class Series:
    """The points of one curve to fit: x (rows, or bytes) and time in µs,
    with the CSV line of each point for error messages."""

    key: Key
    x: List[float]
    t: List[float]
    lines: List[int]


def read_measurements(path: Union[str, os.PathLike]) -> Dict[Key, Series]:
    """Parse a measurements CSV file into series keyed by GemmKey/CommKey."""
    name = os.fspath(path)
    try:
        with open(path, newline="", encoding="utf-8") as f:
            text = f.read()
    except OSError as err:
        raise MeasurementError(f"{name}: cannot read: {err.strerror}") \
            from None
    return parse_measurements(text, name)


def parse_measurements(text: str, name: str = "<measurements>"
                       ) -> Dict[Key, Series]:
    """Parse CSV text; ``name`` stands for the file in error messages."""
    rows = _rows(text, name)
    try:
        lineno, header = next(rows)
    except StopIteration:
        raise MeasurementError(f"{name}: empty file (expected a header line "
                               f"with columns {', '.join(COLUMNS[:-1])})") \
            from None
    header = [h.strip() for h in header]
    for col in header:
        if col not in COLUMNS:
            raise MeasurementError(
                f"{name}:{lineno}: column '{col}': unknown column (expected "
                f"some of {', '.join(COLUMNS)})")
    seen = set()
    for col in header:
        if col in seen:
            raise MeasurementError(f"{name}:{lineno}: column '{col}': "
                                   "appears twice")
        seen.add(col)
    for col in ("kind", "time_us"):
        if col not in header:
            raise MeasurementError(f"{name}:{lineno}: column '{col}': "
                                   "missing from the header (required)")

    series: Dict[Key, Series] = {}
    for lineno, cells in rows:
        if len(cells) != len(header):
            raise MeasurementError(
                f"{name}:{lineno}: expected {len(header)} fields (as in the "
                f"header), got {len(cells)}")
        row = {h: c.strip() for h, c in zip(header, cells)}
        key, x = _point(row, name, lineno)
        t = _number(row, "time_us", name, lineno, positive=True)
        s = series.setdefault(key, Series(key, [], [], []))
        s.x.append(x)
        s.t.append(t)
        s.lines.append(lineno)
    if not series:
        raise MeasurementError(f"{name}: no measurements after the header")
    return series


def _rows(text: str, name: str) -> Iterable[Tuple[int, List[str]]]:
    """(line number, cells) for each non-blank, non-comment line."""
    for lineno, line in enumerate(io.StringIO(text), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            yield lineno, next(csv.reader([line]))
        except csv.Error as err:
            raise MeasurementError(f"{name}:{lineno}: {err}") from None


def _point(row: Dict[str, str], name: str, lineno: int) -> Tuple[Key, float]:
    kind = row.get("kind", "")
    if kind not in KINDS:
        raise MeasurementError(f"{name}:{lineno}: column 'kind': expected "
                               f"'gemm' or 'comm', got '{kind}'")
    dtype = row.get("dtype") or "f16"
    if dtype not in ELEMENT_BYTES:
        raise MeasurementError(
            f"{name}:{lineno}: column 'dtype': expected one of "
            f"{', '.join(ELEMENT_BYTES)}, got '{dtype}'")
    if kind == "gemm":
        m = _integer(row, "m", name, lineno, required=True)
        n = _integer(row, "n", name, lineno, required=True)
        k = _integer(row, "k", name, lineno, required=True)
        return GemmKey(n, k, dtype), float(m)

    coll = row.get("collective", "")
    if coll not in COLLECTIVES:
        raise MeasurementError(
            f"{name}:{lineno}: column 'collective': expected one of "
            f"{', '.join(COLLECTIVES)}, got '{coll}'")
    ranks = _integer(row, "ranks", name, lineno, required=True, minimum=2)
    if row.get("bytes"):
        nbytes = _number(row, "bytes", name, lineno, positive=True)
    else:
        # nccl-tests' "size", as the Planner prices it (docs/planner.md).
        other = "k" if coll == "all-gather" else "n"
        m = _integer(row, "m", name, lineno, required=False)
        o = _integer(row, other, name, lineno, required=False)
        if m is None or o is None:
            raise MeasurementError(
                f"{name}:{lineno}: column 'bytes': a comm row needs 'bytes', "
                f"or 'm' and '{other}' (with 'dtype') to compute it")
        nbytes = float(m * o * ELEMENT_BYTES[dtype])
    return CommKey(coll, ranks), nbytes


def _cell(row, col, name, lineno, parse, ok, what, required, error):
    """Column `col` of a CSV row through `parse`, checked by `ok`; None when
    it is empty and not `required`. A bad cell raises `error` naming the
    file, line and column and saying `what` was expected."""
    raw = row.get(col, "")
    if raw == "" and not required:
        return None
    try:
        v = parse(raw)
    except ValueError:
        v = None
    if v is None or not ok(v):
        raise error(f"{name}:{lineno}: column '{col}': expected {what}, "
                    f"got '{raw}'")
    return v


def _number(row, col, name, lineno, positive=False, required=True, unit="",
            error=MeasurementError) -> Optional[float]:
    """A finite float (> 0 with `positive`); the sweep reader shares it."""
    what = ("a positive number" if positive else "a number") + unit
    return _cell(row, col, name, lineno, float,
                 lambda v: math.isfinite(v) and (v > 0 or not positive), what,
                 required, error)


def _integer(row, col, name, lineno, required, minimum=1) -> Optional[int]:
    return _cell(row, col, name, lineno, int, lambda v: v >= minimum,
                 f"an integer >= {minimum}", required, MeasurementError)
