"""Predicted sweeps: run the Planner over shapes and write the sweep CSV
that ``python -m overlap.plot sweep`` draws (columns in docs/python.md).

    python -m overlap.sweep --profile h100-nvlink-datasheet --ranks 8 \\
        --m 4096 --n 8192 --k 256,1024,4096,16384 --strategy auto -o bench.csv
    python -m overlap.sweep --collective all-to-all --side combine \\
        --experts 2 --ranks 8 --m 8192 --n 4096 --k 4096 -o moe.csv

GEMM(M) and collective(M) come from the plan itself: ideal_us is the larger,
serial_us − ideal_us the smaller, and ``bound`` says which is which.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import os
import sys
from typing import Dict, List, Optional, Sequence, Union

from .planner import PlanError, PlannerNotFound, plan

FIELDS = ["shape", "leg", "compute_us", "comm_us", "serial_us", "ideal_us",
          "predicted_us"]


def predict_sweep(ms: Sequence[int], ns: Sequence[int], ks: Sequence[int], *,
                  ranks: int, profile: Optional[str] = None,
                  collective: str = "all-reduce", dtype: str = "f16",
                  strategies: Sequence[str] = ("auto",),
                  side: Optional[str] = None, experts: Optional[int] = None,
                  binary: Optional[str] = None) -> List[Dict[str, object]]:
    """One row per strategy and shape, planned by ``overlap.plan`` (profile
    None: the default profile; side and experts for all-to-all)."""
    rows = []
    for strategy, m, n, k in itertools.product(strategies, ms, ns, ks):
        p = plan(m, n, k, ranks=ranks, profile=profile,
                 collective=collective, dtype=dtype, strategy=strategy,
                 side=side, experts=experts, binary=binary)
        hidden = p.serial_us - p.ideal_us
        compute, comm = ((hidden, p.ideal_us) if p.bound == "comm"
                         else (p.ideal_us, hidden))
        rows.append({"shape": f"{m}x{n}x{k}", "leg": strategy,
                     "compute_us": compute, "comm_us": comm,
                     "serial_us": p.serial_us, "ideal_us": p.ideal_us,
                     "predicted_us": p.predicted_us})
    return rows


def write_sweep(rows: Sequence[Dict[str, object]],
                path: Union[str, os.PathLike]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)


def _ints(text: str) -> List[int]:
    return [int(v) for v in text.split(",") if v]


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m overlap.sweep",
                                 description="Predicted sweep CSV from "
                                 "overlap-plan (docs/python.md).")
    ap.add_argument("--profile", default=None,
                    help="a shipped profile's name or a path (default: "
                    "the Planner's, h100-nvlink-datasheet)")
    ap.add_argument("--collective", default="all-reduce")
    ap.add_argument("--side", choices=("dispatch", "combine"), default=None,
                    help="all-to-all: exchange the tokens before the "
                    "experts' GEMMs (dispatch, the default) or their "
                    "output after (combine)")
    ap.add_argument("--experts", type=int, default=None,
                    help="all-to-all: experts per rank (default 1)")
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--dtype", default="f16")
    ap.add_argument("--m", type=_ints, required=True, help="M values, a,b,c")
    ap.add_argument("--n", type=_ints, required=True)
    ap.add_argument("--k", type=_ints, required=True)
    ap.add_argument("--strategy", default="auto",
                    help="strategies, comma separated (one leg each)")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args(argv)
    try:
        rows = predict_sweep(args.m, args.n, args.k, ranks=args.ranks,
                             profile=args.profile, collective=args.collective,
                             dtype=args.dtype,
                             strategies=args.strategy.split(","),
                             side=args.side, experts=args.experts)
    except (PlanError, PlannerNotFound) as err:
        print(f"overlap.sweep: error: {err}", file=sys.stderr)
        return 1
    write_sweep(rows, args.output)
    print(f"wrote {args.output} ({len(rows)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
