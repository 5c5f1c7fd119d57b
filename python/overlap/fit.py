"""Fit GEMM and collective cost curves from measurements, the MC² way, and
write a profile the Planner reads (docs/profiles.md, docs/python.md).

    python -m overlap.fit MEASUREMENTS.csv -o PROFILE.json [--base NAME|PATH]

Each curve (GEMM time vs rows for one (N, K, dtype); collective time vs
bytes for one (collective, ranks)) is fitted as 1 to ``max_pieces``
polynomial pieces of degree 0 to 2, by weighted least squares on the
*relative* error (timings span orders of magnitude). Breakpoints are chosen
by dynamic programming over the measured sizes; the number of pieces and
their degrees by the Bayesian information criterion, with relative errors
below ``resolution`` counted as exact so that a clean curve gets the fewest
parameters. Every piece is nondecreasing on its range and the curve never
drops at a breakpoint (the Planner inverts curves and relies on it); a fit
whose worst point is off by more than ``max_error`` is replaced by a monotone
table (isotonic regression of the measured means).
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .curves import Curve, Piece, poly_nondecreasing
from .measurements import (CommKey, GemmKey, Key, MeasurementError, Series,
                           read_measurements)

UNIT_BYTES = {"B": 1.0, "KiB": 1024.0, "MiB": 1024.0 ** 2, "GiB": 1024.0 ** 3}


#: What a breakpoint costs in the information criterion, in coefficients.
#: Breakpoints are searched over every size, so they buy more fit than a
#: coefficient does; 3 keeps noisy lines in one piece (tested on synthetic
#: noise of 0.2-3 %) and still finds MC²'s two pieces.
_BP_PARAMS = 3


class FitError(ValueError):
    """A series that cannot be fitted (e.g. fewer than two sizes)."""


@dataclass
class FitOptions:
    max_pieces: int = 4
    max_degree: int = 2
    #: Relative RMS error treated as exact when comparing models.
    resolution: float = 1e-3
    #: A piecewise fit whose worst relative error exceeds this becomes a table.
    max_error: float = 0.10
    #: "auto" (pieces, table if they fit badly), "pieces" or "table".
    curve: str = "auto"


@dataclass
class Residuals:
    max_rel: float
    mean_rel: float
    worst_x: float

    @classmethod
    def of(cls, curve: Curve, x: Sequence[float], t: Sequence[float]):
        x, t = np.asarray(x, float), np.asarray(t, float)
        rel = np.abs(curve(x) - t) / t
        i = int(np.argmax(rel))
        return cls(float(rel[i]), float(rel.mean()), float(x[i]))


@dataclass
class FitResult:
    key: Optional[Key]
    curve: Curve
    residuals: Residuals
    points: int
    sizes: int
    x_unit: str = ""
    notes: List[str] = field(default_factory=list)

    def summary(self) -> str:
        r = self.residuals
        return (f"{self.describe_curve()}; {self.points} points; "
                f"max rel err {100 * r.max_rel:.2f}% (at x = {r.worst_x:.6g}), "
                f"mean {100 * r.mean_rel:.2f}%")

    def describe_curve(self) -> str:
        return self.curve.describe()


# --------------------------------------------------------------------------
# One curve.


def fit_curve(x: Sequence[float], t: Sequence[float],
              options: Optional[FitOptions] = None) -> FitResult:
    """Fit time ``t`` (µs, > 0) vs size ``x`` (> 0); see the module doc."""
    opts = options or FitOptions()
    if opts.curve not in ("auto", "pieces", "table"):
        raise ValueError(f"curve: expected auto, pieces or table, "
                         f"got {opts.curve!r}")
    x = np.asarray(x, dtype=float)
    t = np.asarray(t, dtype=float)
    if x.shape != t.shape or x.ndim != 1:
        raise FitError("x and t must be 1-D arrays of the same length")
    if np.any(~np.isfinite(x)) or np.any(x <= 0) or np.any(~np.isfinite(t)) \
            or np.any(t <= 0):
        raise FitError("sizes and times must be finite and positive")
    order = np.argsort(x, kind="stable")
    x, t = x[order], t[order]
    xd, starts = np.unique(x, return_index=True)
    if len(xd) < 2:
        raise FitError(f"need at least 2 distinct sizes, got {len(xd)}")
    notes: List[str] = []

    curve = None
    if opts.curve != "table":
        curve = _fit_pieces(x, t, xd, np.append(starts, len(x)), opts, notes)
        res = Residuals.of(curve, x, t)
        if opts.curve == "auto" and res.max_rel > opts.max_error:
            notes.append(f"piecewise fit off by {100 * res.max_rel:.1f}% "
                         f"(> {100 * opts.max_error:.1f}%): using a table")
            curve = None
    if curve is None:
        curve = monotone_table(x, t)
    return FitResult(None, curve, Residuals.of(curve, x, t), len(x), len(xd),
                     notes=notes)


def _fit_pieces(x, t, xd, bounds, opts: FitOptions, notes) -> Curve:
    n = len(xd)
    npts = len(x)
    # A piece needs more sizes than coefficients (a residual to be judged
    # by); with fewer than 4 sizes one piece interpolates them.
    few = n < 4
    min_extra = 1 if few else 2
    max_deg = max(0, min(opts.max_degree, 2))
    max_pieces = 1 if few else max(1, opts.max_pieces)
    sse, coeffs = _segment_fits(x, t, xd, bounds, max_deg, min_extra)

    # best[p, j, K]: least SSE of the first j sizes cut into p pieces with K
    # parameters (coefficients and breakpoints); back[...] = (i, degree).
    kmax = max_pieces * (max_deg + 1 + _BP_PARAMS)
    best = np.full((max_pieces + 1, n + 1, kmax + 1), math.inf)
    back = np.zeros((max_pieces + 1, n + 1, kmax + 1, 2), dtype=int)
    for d in range(max_deg + 1):
        col = sse[d, 0, :]
        better = col < best[1, :, d + 1]
        best[1, better, d + 1] = col[better]
        back[1, better, d + 1] = (0, d)
    for p in range(2, max_pieces + 1):
        for j in range(2, n + 1):
            prev = best[p - 1, 1:j, :]  # (i = 1..j-1, K)
            for d in range(max_deg + 1):
                seg = sse[d, 1:j, j]  # (i,)
                tot = prev + seg[:, None]
                i_best = np.argmin(tot, axis=0)  # per K_prev
                val = tot[i_best, np.arange(kmax + 1)]
                step = d + 1 + _BP_PARAMS
                cand = val[:kmax + 1 - step]
                cur = best[p, j, step:]
                better = cand < cur
                cur[better] = cand[better]
                ks = np.nonzero(better)[0]
                back[p, j, ks + step, 0] = i_best[ks] + 1
                back[p, j, ks + step, 1] = d

    candidates = []
    log_n = math.log(max(npts, 2))
    for p in range(1, max_pieces + 1):
        for k in np.nonzero(np.isfinite(best[p, n]))[0]:
            score = npts * math.log(best[p, n, k] / npts + opts.resolution ** 2)
            candidates.append((score + k * log_n, int(k), p))
    if not candidates:  # a constant piece always fits: not expected
        raise FitError("no monotone piecewise fit")
    _, k, p = min(candidates)

    cuts: List[Tuple[int, int, int]] = []  # (start size index, end, degree)
    j = n
    while p > 0:
        i, d = (int(v) for v in back[p, j, k])
        cuts.append((i, j, d))
        k -= d + 1 + (_BP_PARAMS if p > 1 else 0)
        j, p = i, p - 1
    cuts.reverse()

    pieces: List[Piece] = []
    for idx, (i, j, d) in enumerate(cuts):
        start = 0.0 if i == 0 else float(xd[i])
        pieces.append(Piece(start, None,
                            [float(c) for c in coeffs[d, i, j, :d + 1]]))
        if idx:
            pieces[idx - 1].end = start
    _place_breakpoints(pieces, [float(xd[i - 1]) for i, _, _ in cuts[1:]],
                       notes)
    curve = Curve(pieces=pieces)
    tidy = Curve(pieces=[_tidy(p, float(xd[-1])) for p in pieces])
    if tidy.check_monotone() is None:
        curve = tidy
    problem = curve.check_monotone()
    if problem:  # not expected: every piece was checked on a wider range
        notes.append(f"piecewise fit not monotone ({problem}): using a table")
        return monotone_table(x, t)
    return curve


def _tidy(piece: Piece, x_max: float) -> Piece:
    """Round away least-squares noise: 12 significant digits, and zero for
    a term that adds less than 1e-12 of the piece's value at its far end
    (an intercept of 1e-13 µs, an x² of -1e-18)."""
    end = x_max if piece.end is None else max(piece.end, piece.start)
    scale = max(abs(float(piece(end))), abs(float(piece(piece.start))), 1e-300)
    coeffs = []
    for power, c in enumerate(piece.coeffs):
        if abs(c) * max(end, 1.0) ** power < 1e-12 * scale:
            c = 0.0
        coeffs.append(float(f"{c:.12g}"))
    while len(coeffs) > 1 and coeffs[-1] == 0:
        coeffs.pop()
    return Piece(piece.start, piece.end, coeffs)


def _solve_each(gram, rhs):
    """gram[s] @ sol[s] = rhs[s] for every s; a singular system (times or
    sizes so far apart that the normal equations lose their rank, or not
    finite) gets NaNs, which make its segment infeasible."""
    try:
        return np.linalg.solve(gram, rhs[..., None])[..., 0]
    except np.linalg.LinAlgError:
        sol = np.full(rhs.shape, math.nan)
        for k in range(len(gram)):
            try:
                sol[k] = np.linalg.solve(gram[k], rhs[k])
            except np.linalg.LinAlgError:
                pass
        return sol


def _segment_fits(x, t, xd, bounds, max_deg, min_extra):
    """Fit every run of sizes [i, j) with every degree, batched per start i.

    Least squares on the relative error, with x centred and scaled per
    segment (the conditioning of x² over MiB or rows). A fit is infeasible
    (SSE = inf) unless it is nondecreasing on [x_{i-1}, x_j] (0 and inf at
    the ends), the widest range the piece can end up covering.
    Returns sse[d, i, j] and coeffs[d, i, j, :] (ascending powers of x).
    """
    n = len(xd)
    sse = np.full((max_deg + 1, n + 1, n + 1), math.inf)
    coeffs = np.zeros((max_deg + 1, n + 1, n + 1, 3))
    for i in range(n):
        js = np.arange(i + 1, n + 1)
        lo_raw, hi_raw = bounds[i], bounds[js]  # raw rows [lo_raw, hi_raw)
        xs, ts = x[lo_raw:], t[lo_raw:]
        length = hi_raw - lo_raw
        mask = np.arange(len(xs))[None, :] < length[:, None]  # (S, L)
        first, last = x[lo_raw], x[hi_raw - 1]
        mid = 0.5 * (first + last)
        half = np.where(last > first, 0.5 * (last - first), 1.0)
        u = (xs[None, :] - mid[:, None]) / half[:, None]
        w = np.where(mask, 1.0 / ts[None, :], 0.0)
        lo_x = 0.0 if i == 0 else xd[i - 1]
        hi_x = np.append(xd[js[:-1]], math.inf)
        for d in range(max_deg + 1):
            ok = (js - i) >= d + min_extra
            if not ok.any():
                continue
            s = np.nonzero(ok)[0]
            design = np.stack([u[s] ** p for p in range(d + 1)], axis=-1)
            a = design * w[s, :, None]
            gram = np.einsum("slp,slq->spq", a, a)
            rhs = np.einsum("slp,sl->sp", a, (ts[None, :] * w[s]))
            sol = _solve_each(gram, rhs)
            # Back to powers of x: u = alpha + beta x.
            beta, alpha = 1.0 / half[s], -mid[s] / half[s]
            c = np.zeros((len(s), 3))
            for power in range(d + 1):
                for r in range(power + 1):
                    c[:, r] += (sol[:, power] * math.comb(power, r)
                                * alpha ** (power - r) * beta ** r)
            pred = np.einsum("slp,sp->sl", design, sol)
            rel = (np.maximum(pred, 0.0) - ts[None, :]) * w[s]
            err = np.einsum("sl,sl->s", rel, rel)
            for idx, sj in enumerate(s):
                if not np.isfinite(err[idx]):
                    continue  # singular or overflowed: infeasible
                if d >= 1 and not poly_nondecreasing(c[idx, :d + 1], lo_x,
                                                     hi_x[sj]):
                    continue
                sse[d, i, js[sj]] = err[idx]
                coeffs[d, i, js[sj]] = c[idx]
    return sse, coeffs


def _place_breakpoints(pieces: List[Piece], prev_x: List[float],
                       notes: List[str]) -> None:
    """Put each breakpoint where the curve does not drop.

    The default is the first size of the right piece (the seed's "x >= 8 MB
    uses the linear fit"). If the left piece is higher there, move the
    breakpoint back towards the left piece's last size to where the two
    cross; if they do not cross in that gap, raise the right piece.
    """
    for idx in range(1, len(pieces)):
        left, right = pieces[idx - 1], pieces[idx]
        hi, lo = right.start, prev_x[idx - 1]

        def gap(xv):
            return float(right(xv) - left(xv))

        def tol(xv):
            return 1e-9 * max(1.0, abs(float(left(xv))))

        if gap(hi) >= -tol(hi):
            continue
        if gap(lo) >= 0:
            a, b = lo, hi  # gap(a) >= 0 > gap(b)
            for _ in range(100):
                m = 0.5 * (a + b)
                a, b = (m, b) if gap(m) >= 0 else (a, m)
            right.start = left.end = a
            continue
        lift = -gap(hi)
        right.coeffs[0] += lift
        notes.append(f"piece {idx} raised by {lift:.4g} us so that the curve "
                     f"does not drop at x = {hi:.6g}")


def monotone_table(x: Sequence[float], t: Sequence[float]) -> Curve:
    """Isotonic (pool-adjacent-violators) regression of the mean time per
    size, as a Planner table."""
    x = np.asarray(x, float)
    t = np.asarray(t, float)
    xd, inv, counts = np.unique(x, return_inverse=True, return_counts=True)
    means = np.bincount(inv, weights=t) / counts
    blocks: List[List[float]] = []  # [value, weight, count of sizes]
    for v, wgt in zip(means, counts):
        blocks.append([float(v), float(wgt), 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            v2, w2, c2 = blocks.pop()
            v1, w1, c1 = blocks.pop()
            blocks.append([(v1 * w1 + v2 * w2) / (w1 + w2), w1 + w2, c1 + c2])
    ys: List[float] = []
    for v, _, c in blocks:
        ys.extend([v] * c)
    return Curve(table=[[float(a), float(b)] for a, b in zip(xd, ys)])


# --------------------------------------------------------------------------
# A measurements file.


def fit_measurements(series: Dict[Key, Series],
                     options: Optional[FitOptions] = None,
                     comm_unit: str = "MiB") -> List[FitResult]:
    """Fit every series; collective sizes are expressed in ``comm_unit``."""
    if comm_unit not in UNIT_BYTES:
        raise ValueError(f"comm unit: expected one of {', '.join(UNIT_BYTES)}")
    results = []
    for key in sorted(series, key=_sort_key):
        s = series[key]
        scale = UNIT_BYTES[comm_unit] if isinstance(key, CommKey) else 1.0
        xs = [v / scale for v in s.x]
        try:
            r = fit_curve(xs, s.t, options)
        except FitError as err:
            raise FitError(f"{key} (lines {s.lines[0]}..{s.lines[-1]}): "
                           f"{err}") from None
        r.key = key
        r.x_unit = comm_unit if isinstance(key, CommKey) else "rows"
        results.append(r)
    return results


def _sort_key(key: Key):
    if isinstance(key, GemmKey):
        return (0, key.n, key.k, key.dtype, "")
    return (1, key.ranks, 0, "", key.collective)


def build_profile(results: Sequence[FitResult], *, name: str, source: str,
                  base: Optional[dict] = None,
                  base_name: Optional[str] = None) -> dict:
    """The profile JSON (docs/profiles.md) holding the fitted curves, on top
    of ``base`` (device figures, roofline, contention, other curves)."""
    gemm_entries = []
    comm_entries: Dict[str, List[dict]] = {}
    for r in results:
        note = f"fitted: {r.summary()}"
        if r.notes:
            note += "; " + "; ".join(r.notes)
        if isinstance(r.key, GemmKey):
            gemm_entries.append({"n": r.key.n, "k": r.key.k,
                                 "dtype": r.key.dtype,
                                 "curve": r.curve.to_json(), "note": note})
        else:
            comm_entries.setdefault(r.key.collective, []).append({
                "ranks": r.key.ranks, "x_unit": r.x_unit, "latency_us": 0,
                "curve": r.curve.to_json(),
                "note": note + " (the intercept is the per-call latency)"})

    npoints = sum(r.points for r in results)
    profile = json.loads(json.dumps(base)) if base else {}
    profile["name"] = name
    if base:
        profile["description"] = (
            f"Curves fitted by overlap.fit from {source} ({npoints} points); "
            f"everything else from the profile {base_name}.")
        profile["provenance"] = (f"fitted from measurements ({source}) on top "
                                 f"of {base_name} "
                                 f"({base.get('provenance', 'no provenance')})")
    else:
        profile["description"] = (f"Curves fitted by overlap.fit from {source} "
                                  f"({npoints} points).")
        profile["provenance"] = f"fitted from measurements ({source})"

    gemm = profile.setdefault("gemm", {})
    # Fitted curves are of single GEMMs (batch 1): they replace the base's
    # batch-1 curve of the same shape and keep its batched ones.
    curves = [c for c in gemm.get("curves", [])
              if c.get("batch", 1) != 1 or
              not any((c.get("n"), c.get("k"), c.get("dtype", "f16")) ==
                      (e["n"], e["k"], e["dtype"]) for e in gemm_entries)]
    if curves or gemm_entries:
        gemm["curves"] = curves + gemm_entries
    gemm.setdefault("latency_us", 0)
    if not gemm.get("curves") and "roofline" not in gemm:
        raise FitError("no GEMM measurements and no base profile with a "
                       "roofline: the Planner needs GEMM curves (kind=gemm "
                       "rows) or --base")
    colls = profile.setdefault("collectives", {})
    for coll, entries in comm_entries.items():
        ranks = {e["ranks"] for e in entries}
        kept = [e for e in colls.get(coll, []) if e.get("ranks") not in ranks]
        colls[coll] = sorted(kept + entries, key=lambda e: e["ranks"])
    # Field order as in the shipped profiles, for people diffing them.
    order = ["name", "description", "provenance", "device", "gemm",
             "collectives", "contention", "alignment", "ficco"]
    return {k: profile[k] for k in order + list(profile) if k in profile}


def profiles_dir() -> Optional[Path]:
    env = os.environ.get("OVERLAP_PROFILES_DIR")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent.parent.parent / "profiles"
    return here if here.is_dir() else None


def resolve_profile(name_or_path: str) -> Path:
    """A path as given, or a bare name in the repository's profiles/ (as
    overlap-plan resolves --profile)."""
    p = Path(name_or_path)
    if p.is_file():
        return p
    d = profiles_dir()
    if d and "/" not in name_or_path:
        q = d / (name_or_path if p.suffix else name_or_path + ".json")
        if q.is_file():
            return q
    # The wording of the tools (planner::unknownProfileMessage).
    names = sorted(q.stem for q in d.glob("*.json")) if d else []
    message = f"no file '{name_or_path}' and no shipped profile of that name"
    near = difflib.get_close_matches(p.stem, names, n=1, cutoff=0.75) or [
        n for n in names if all(w in n for w in p.stem.split("-") if w)][:1]
    if near:
        message += f"; did you mean '{near[0]}'?"
    if names:
        message += f" (shipped: {', '.join(names)}, in {d})"
    raise FileNotFoundError(message)


def format_report(results: Sequence[FitResult]) -> str:
    lines = []
    for r in results:
        unit = "rows" if r.x_unit == "rows" else r.x_unit
        lines.append(f"{r.key}: {r.points} points at {r.sizes} sizes "
                     f"(x in {unit})")
        curve = r.curve
        if curve.table is not None:
            lines.append(f"  {curve.describe()}")
        for p in curve.pieces:
            end = "inf" if p.end is None else f"{p.end:.6g}"
            terms = _poly_text(p.coeffs)
            lines.append(f"  [{p.start:.6g}, {end}): t = {terms}")
        lines.append(f"  residuals: max {100 * r.residuals.max_rel:.3f}% "
                     f"(at x = {r.residuals.worst_x:.6g}), mean "
                     f"{100 * r.residuals.mean_rel:.3f}%")
        for note in r.notes:
            lines.append(f"  note: {note}")
    return "\n".join(lines)


def _poly_text(coeffs: Sequence[float]) -> str:
    text = ""
    for power, c in enumerate(coeffs):
        mono = "" if power == 0 else " x" if power == 1 else f" x^{power}"
        if not text:
            text = f"{c:.12g}{mono}"
        else:
            text += f" {'-' if c < 0 else '+'} {abs(c):.12g}{mono}"
    return text


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m overlap.fit",
        description="Fit GEMM and collective cost curves from measurements "
                    "and write a Planner profile (docs/python.md).")
    ap.add_argument("measurements", help="CSV (schema in docs/python.md)")
    ap.add_argument("-o", "--output", required=True, help="profile to write")
    ap.add_argument("--base", help="profile (name in profiles/ or path) whose "
                    "device, roofline, contention and other curves to keep")
    ap.add_argument("--name", help="profile name (default: output's stem)")
    ap.add_argument("--comm-unit", default="MiB", choices=list(UNIT_BYTES),
                    help="x unit of collective curves (default MiB, as MC²)")
    ap.add_argument("--max-pieces", type=int, default=4)
    ap.add_argument("--max-degree", type=int, default=2, choices=[0, 1, 2])
    ap.add_argument("--resolution", type=float, default=1e-3,
                    help="relative RMS error counted as exact (default 1e-3)")
    ap.add_argument("--max-error", type=float, default=0.10,
                    help="worst relative error of the pieces above which "
                    "--curve auto writes a table instead (default 0.10)")
    ap.add_argument("--curve", default="auto",
                    choices=["auto", "pieces", "table"])
    args = ap.parse_args(argv)
    if args.max_pieces < 1:
        ap.error("--max-pieces: expected an integer >= 1")
    opts = FitOptions(max_pieces=args.max_pieces, max_degree=args.max_degree,
                      resolution=args.resolution, max_error=args.max_error,
                      curve=args.curve)
    try:
        series = read_measurements(args.measurements)
        results = fit_measurements(series, opts, args.comm_unit)
        base = base_name = None
        if args.base:
            base_path = resolve_profile(args.base)
            with open(base_path, encoding="utf-8") as f:
                base = json.load(f)
            base_name = base.get("name") or base_path.stem
        out = Path(args.output)
        profile = build_profile(results, name=args.name or out.stem,
                                source=os.path.basename(args.measurements),
                                base=base, base_name=base_name)
    except (MeasurementError, FitError, FileNotFoundError,
            json.JSONDecodeError) as err:
        print(f"overlap.fit: error: {err}", file=sys.stderr)
        return 1
    except RecursionError:
        print(f"overlap.fit: error: {args.base}: JSON nested too deeply",
              file=sys.stderr)
        return 1
    except np.linalg.LinAlgError as err:  # a last resort: _solve_each
        print(f"overlap.fit: error: the fit failed: {err}", file=sys.stderr)
        return 1
    print(format_report(results))
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(profile, f, indent=2)
        f.write("\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
