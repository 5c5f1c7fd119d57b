"""Pictures of overlap schedules (docs/python.md).

    python -m overlap.plot timeline TRACE.json -o timeline.png \\
        [--measured TRACE2.json] [--plan PLAN.json] [--serial US] [--ideal US]
    python -m overlap.plot sweep BENCH.csv -o sweep.png

``timeline`` draws the two streams as a Gantt chart, one bar per tile (the
same colour for a tile's GEMM and its collective), the predicted schedule
and, when given, the measured one below it on the same time axis, with the
serial and ideal times marked. TRACE may be a Chrome trace
(``overlap-plan --trace``) or a plan (``overlap-plan --json``, which also
carries serial and ideal).

``sweep`` draws speedup and efficiency η against the compute/comm time
ratio, with the ideal (Tc + Tm) / max(Tc, Tm), FiCCO's bell curve.

Figures are drawn with matplotlib's Agg canvas directly (no pyplot, no
display needed).
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import sys
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Union

from .measurements import _number
from .trace import STREAMS, Timeline, TraceError, load_timeline


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    return fig


# --------------------------------------------------------------------------
# Timeline.


def plot_timeline(predicted: Timeline, output: Union[str, os.PathLike],
                  measured: Optional[Timeline] = None,
                  serial_us: Optional[float] = None,
                  ideal_us: Optional[float] = None,
                  title: Optional[str] = None) -> str:
    """Draw the Gantt chart into ``output`` (format from its extension)."""
    from matplotlib import colormaps

    serial_us = serial_us if serial_us is not None else predicted.serial_us
    ideal_us = ideal_us if ideal_us is not None else predicted.ideal_us
    lanes = [("predicted", predicted)]
    if measured is not None:
        lanes.append(("measured", measured))

    rows = [(label, tl, s) for label, tl in lanes for s in STREAMS]
    fig = _figure(12, 1.5 + 0.75 * len(rows))
    ax = fig.add_subplot(1, 1, 1)
    cmap = colormaps["tab20"]
    tiles = sorted({b.tile for _, tl in lanes for b in tl.bars})
    colour = {t: cmap((2 * i) % 20 + (i // 10) % 2) for i, t in
              enumerate(tiles)}
    horizon = max([tl.makespan_us for _, tl in lanes] +
                  [v for v in (serial_us, ideal_us) if v])
    for y, (label, tl, stream) in enumerate(rows):
        ypos = len(rows) - 1 - y
        for b in tl.stream(stream):
            ax.barh(ypos, b.dur_us, left=b.start_us, height=0.7,
                    color=colour[b.tile], edgecolor="black", linewidth=0.6,
                    hatch="//" if stream == "comm" else None)
            if b.dur_us > 0.045 * horizon:
                text = f"{b.tile}" + (f": {b.rows}" if b.rows else "")
                ax.text(b.start_us + b.dur_us / 2, ypos, text, ha="center",
                        va="center", fontsize=8,
                        bbox=dict(boxstyle="round,pad=0.15", fc="white",
                                  ec="none", alpha=0.8))
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{label}\n{stream}"
                        for label, _, stream in reversed(rows)])
    if measured is not None:
        ax.axhline(1.5, color="grey", linewidth=0.8)

    marks = [("predicted", predicted.makespan_us, "black", "-")]
    if measured is not None:
        marks.append(("measured", measured.makespan_us, "tab:purple", "-"))
    if serial_us:
        marks.append(("serial", serial_us, "tab:red", "--"))
    if ideal_us:
        marks.append(("ideal", ideal_us, "tab:green", ":"))
    for name, x, col, style in marks:
        ax.axvline(x, color=col, linestyle=style, linewidth=1.6,
                   label=f"{name} {x:,.1f} µs")
    ax.set_xlim(0, horizon * 1.04)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_xlabel("time (µs)")
    ax.grid(axis="x", alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(marks),
               frameon=False)
    sub = []
    if serial_us:
        sub.append(f"speedup {serial_us / predicted.makespan_us:.2f}x "
                   "predicted")
        if measured is not None:
            sub.append(f"{serial_us / measured.makespan_us:.2f}x measured")
    head = title or predicted.title or "overlap timeline"
    ax.set_title(head + ("\n" + ", ".join(sub) if sub else ""), fontsize=10)
    fig.tight_layout(rect=(0, 0.5 / fig.get_figheight(), 1, 1))
    fig.savefig(output)
    return os.fspath(output)


# --------------------------------------------------------------------------
# Sweep.

SWEEP_COLUMNS = ("shape", "leg", "compute_us", "comm_us", "serial_us",
                 "overlapped_us", "ideal_us", "predicted_us", "note")


class SweepError(ValueError):
    """A malformed sweep CSV; the message names file, line and column."""


@dataclass
class SweepRow:
    line: int
    shape: str
    leg: str
    compute_us: float
    comm_us: float
    serial_us: float
    ideal_us: float
    overlapped_us: Optional[float]
    predicted_us: Optional[float]

    @property
    def ratio(self) -> float:
        return self.compute_us / self.comm_us

    def speedup(self, which: str) -> Optional[float]:
        t = self.overlapped_us if which == "measured" else self.predicted_us
        return None if t is None else self.serial_us / t

    def efficiency(self, which: str) -> Optional[float]:
        t = self.overlapped_us if which == "measured" else self.predicted_us
        if t is None or self.serial_us <= self.ideal_us:
            return None
        return (self.serial_us - t) / (self.serial_us - self.ideal_us)


def ideal_speedup(ratio: float) -> float:
    """(Tc + Tm) / max(Tc, Tm) as a function of r = Tc / Tm."""
    return (1.0 + ratio) / max(1.0, ratio)


def read_sweep(path: Union[str, os.PathLike]) -> List[SweepRow]:
    name = os.fspath(path)
    try:
        with open(path, newline="", encoding="utf-8") as f:
            text = f.read()
    except OSError as err:
        raise SweepError(f"{name}: cannot read: {err.strerror}") from None
    return parse_sweep(text, name)


def parse_sweep(text: str, name: str = "<sweep>") -> List[SweepRow]:
    lines = [(i, line) for i, line in enumerate(io.StringIO(text), start=1)
             if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise SweepError(f"{name}: empty file (expected a header with "
                         f"{', '.join(SWEEP_COLUMNS[:-1])})")
    hline, header_text = lines[0]
    header = [h.strip() for h in next(csv.reader([header_text]))]
    for col in header:
        if col not in SWEEP_COLUMNS:
            raise SweepError(f"{name}:{hline}: column '{col}': unknown column "
                             f"(expected some of {', '.join(SWEEP_COLUMNS)})")
    for col in ("compute_us", "comm_us"):
        if col not in header:
            raise SweepError(f"{name}:{hline}: column '{col}': missing from "
                             "the header (required)")
    if "overlapped_us" not in header and "predicted_us" not in header:
        raise SweepError(f"{name}:{hline}: column 'overlapped_us': missing "
                         "(a sweep needs overlapped_us or predicted_us)")
    rows = []
    for lineno, line in lines[1:]:
        cells = next(csv.reader([line]))
        if len(cells) != len(header):
            raise SweepError(f"{name}:{lineno}: expected {len(header)} fields "
                             f"(as in the header), got {len(cells)}")
        r = {h: c.strip() for h, c in zip(header, cells)}

        def num(col, required):
            return _number(r, col, name, lineno, positive=True,
                           required=required, unit=" (µs)", error=SweepError)

        tc, tm = num("compute_us", True), num("comm_us", True)
        serial = num("serial_us", False) or tc + tm
        ideal = num("ideal_us", False) or max(tc, tm)
        over, pred = num("overlapped_us", False), num("predicted_us", False)
        if over is None and pred is None:
            raise SweepError(f"{name}:{lineno}: column 'overlapped_us': "
                             "empty, and so is predicted_us (one is needed)")
        rows.append(SweepRow(lineno, r.get("shape", ""),
                             r.get("leg") or ("measured" if over else
                                              "predicted"),
                             tc, tm, serial, ideal, over, pred))
    if not rows:
        raise SweepError(f"{name}: no rows after the header")
    return rows


def plot_sweep(rows: Sequence[SweepRow], output: Union[str, os.PathLike],
               title: Optional[str] = None) -> str:
    """Speedup and η vs compute/comm ratio, with the ideal curve."""
    import numpy as np
    from matplotlib import colormaps

    fig = _figure(9, 8)
    ax_s = fig.add_subplot(2, 1, 1)
    ax_e = fig.add_subplot(2, 1, 2, sharex=ax_s)
    ratios = [r.ratio for r in rows]
    lo, hi = min(ratios) / 2, max(ratios) * 2
    lo, hi = min(lo, 0.25), max(hi, 4.0)
    grid = np.geomspace(lo, hi, 400)
    ax_s.plot(grid, [ideal_speedup(v) for v in grid], color="grey",
              linewidth=2, label="ideal (Tc+Tm)/max(Tc,Tm)")
    ax_s.axhline(1.0, color="black", linewidth=0.8)
    ax_e.axhline(1.0, color="grey", linewidth=2, label="ideal (η = 1)")
    ax_e.axhline(0.0, color="black", linewidth=0.8)

    legs: Dict[str, List[SweepRow]] = {}
    for r in rows:
        legs.setdefault(r.leg, []).append(r)
    cmap = colormaps["tab10"]
    for i, (leg, rs) in enumerate(legs.items()):
        rs = sorted(rs, key=lambda r: r.ratio)
        col = cmap(i % 10)
        for which, style, filled in (("measured", "-", True),
                                     ("predicted", "--", False)):
            pts = [(r.ratio, r.speedup(which), r.efficiency(which), r.shape)
                   for r in rs if r.speedup(which) is not None]
            if not pts:
                continue
            label = leg if which == "measured" or leg == "predicted" \
                else f"{leg} (predicted)"
            x = [p[0] for p in pts]
            kw = dict(color=col, linestyle=style, marker="o",
                      markerfacecolor=col if filled else "white",
                      markeredgecolor=col)
            ax_s.plot(x, [p[1] for p in pts], label=label, **kw)
            eff = [(p[0], p[2]) for p in pts if p[2] is not None]
            if eff:
                ax_e.plot([e[0] for e in eff], [e[1] for e in eff],
                          label=label, **kw)
            if i == 0 and len(pts) <= 16:  # shapes repeat across legs
                for xv, s, _, shape in pts:
                    if shape:
                        ax_s.annotate(shape, (xv, s), textcoords="offset "
                                      "points", xytext=(4, 4), fontsize=7,
                                      color=col)
    ax_s.set_xscale("log")
    ax_s.set_xlim(lo, hi)
    ax_s.set_ylabel("speedup over serial")
    ax_s.set_title(title or "overlap speedup vs compute/comm ratio")
    ax_s.grid(alpha=0.3, which="both")
    ax_s.legend(fontsize=8)
    ax_e.set_xlabel("compute / comm time (Tc / Tm)")
    ax_e.set_ylabel("efficiency η = (serial − t) / (serial − ideal)")
    ax_e.grid(alpha=0.3, which="both")
    ax_e.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(output)
    return os.fspath(output)


# --------------------------------------------------------------------------
# CLI.


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m overlap.plot",
                                 description="Draw overlap schedules "
                                 "(docs/python.md).")
    sub = ap.add_subparsers(dest="cmd", required=True)
    tl = sub.add_parser("timeline", help="Gantt chart of the two streams")
    tl.add_argument("trace", help="Chrome trace (overlap-plan --trace) or "
                    "plan (overlap-plan --json)")
    tl.add_argument("-o", "--output", required=True)
    tl.add_argument("--measured", help="a measured trace to draw below")
    tl.add_argument("--plan", help="overlap-plan --json output to take "
                    "serial and ideal from")
    tl.add_argument("--serial", type=float, help="serial time, µs")
    tl.add_argument("--ideal", type=float, help="ideal time, µs")
    tl.add_argument("--title")
    sw = sub.add_parser("sweep", help="speedup and η vs compute/comm ratio")
    sw.add_argument("bench", help="CSV (columns in docs/python.md)")
    sw.add_argument("-o", "--output", required=True)
    sw.add_argument("--title")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "timeline":
            pred = load_timeline(args.trace)
            if args.plan:
                plan = load_timeline(args.plan)
                pred.serial_us = pred.serial_us or plan.serial_us
                pred.ideal_us = pred.ideal_us or plan.ideal_us
                if not pred.title:
                    pred.title = plan.title
            meas = load_timeline(args.measured) if args.measured else None
            out = plot_timeline(pred, args.output, meas, args.serial,
                                args.ideal, args.title)
            if pred.serial_us is None and args.serial is None:
                print("overlap.plot: note: no serial/ideal time (pass --plan, "
                      "--serial/--ideal, or a plan as TRACE)", file=sys.stderr)
        else:
            out = plot_sweep(read_sweep(args.bench), args.output, args.title)
    except (TraceError, SweepError) as err:
        print(f"overlap.plot: error: {err}", file=sys.stderr)
        return 1
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
