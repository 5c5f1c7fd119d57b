#!/usr/bin/env python3
"""Compile time against the number of tiles.

For every collective and tile count, writes a fused matmul + collective on a
4-rank grid with M = tiles x 128 rows (N = K = 16: compile time does not
depend on them), forces `uniform:<tiles>` (the Planner aligns tiles to 128
rows, so that is exactly <tiles> tiles), and times overlap-compile:

  - per stage (tensor, bufferize, schedule, runtime, llvm): the difference
    between runs that stop after consecutive stages (--stop-after-stage);
  - total: one run through code generation (--emit=obj).

Prints a table of seconds. Numbers only; nothing is asserted.

  scripts/bench-compile-tiles.py [--build DIR] [--tiles 16,32,64,128,255]
      [--collectives all-reduce,reduce-scatter,all-gather] [--total-only]
      [--timeout SECONDS]

--build defaults to $OVERLAP_BUILD_DIR or build/. A run over --timeout is
shown as '>T'.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAGES = ["tensor", "bufferize", "schedule", "runtime", "llvm"]
N = K = 16
RANKS = 4
ALIGN = 128

OPS = {
    "all-reduce": "matmul_all_reduce",
    "reduce-scatter": "matmul_reduce_scatter",
    "all-gather": "all_gather_matmul",
}


def module(collective, m):
    """The fused op of `collective` with M = m rows of the full product."""
    a_rows = m // RANKS if collective == "all-gather" else m
    out_rows = m // RANKS if collective == "reduce-scatter" else m
    a = f"tensor<{a_rows}x{K}xf32>"
    b = f"tensor<{K}x{N}xf32>"
    c = f"tensor<{m}x{N}xf32>"
    r = f"tensor<{out_rows}x{N}xf32>"
    return (
        f"shard.grid @tp(shape = {RANKS})\n"
        f"func.func @bench(%a: {a}, %b: {b}, %c: {c}) -> {r} {{\n"
        f"  %r = overlap.{OPS[collective]} %a, %b, %c on @tp grid_axes = [0]\n"
        f"      : {a}, {b}, {c} -> {r}\n"
        f"  return %r : {r}\n"
        f"}}\n"
    )


def timed(cmd, timeout):
    """Seconds `cmd` took, or None past `timeout`. Exits on a failure."""
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    if proc.returncode != 0:
        sys.exit(f"bench-compile-tiles: {' '.join(cmd)} failed:\n{proc.stderr}")
    return time.monotonic() - start


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.environ.get(
        "OVERLAP_BUILD_DIR", os.path.join(ROOT, "build")))
    parser.add_argument("--tiles", default="16,32,64,128,255")
    parser.add_argument("--collectives", default=",".join(OPS))
    parser.add_argument("--total-only", action="store_true",
                        help="only the run through code generation")
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()

    compiler = os.path.join(args.build, "bin", "overlap-compile")
    if not os.access(compiler, os.X_OK):
        sys.exit(f"bench-compile-tiles: no {compiler}; build first or pass --build")
    tiles = [int(t) for t in args.tiles.split(",")]
    collectives = args.collectives.split(",")
    for collective in collectives:
        if collective not in OPS:
            sys.exit(f"bench-compile-tiles: unknown collective '{collective}' "
                     f"(expected {', '.join(OPS)})")

    columns = ([] if args.total_only else STAGES) + ["total"]
    print(f"overlap-compile {compiler}, {RANKS} ranks, N = K = {N}, "
          f"M = tiles x {ALIGN}, strategy uniform:<tiles>; seconds")
    print(f"{'collective':<15}{'tiles':>6}" +
          "".join(f"{c:>11}" for c in columns))
    with tempfile.TemporaryDirectory() as tmp:
        for collective in collectives:
            for count in tiles:
                path = os.path.join(tmp, f"{collective}-{count}.mlir")
                with open(path, "w") as f:
                    f.write(module(collective, count * ALIGN))
                base = [compiler, f"--strategy=uniform:{count}",
                        path]
                cells = []
                previous, dead = 0.0, False
                for stage in ([] if args.total_only else STAGES):
                    t = None if dead else timed(
                        base + ["--emit=mlir", f"--stop-after-stage={stage}",
                                "-o", os.devnull], args.timeout)
                    if t is None:
                        dead = True
                        cells.append(f">{args.timeout:g}")
                        continue
                    cells.append(f"{max(t - previous, 0.0):.2f}")
                    previous = t
                t = None if dead else timed(
                    base + ["--emit=obj", "-o", os.path.join(tmp, "out.o")],
                    args.timeout)
                cells.append(f">{args.timeout:g}" if t is None else f"{t:.2f}")
                print(f"{collective:<15}{count:>6}" +
                      "".join(f"{c:>11}" for c in cells), flush=True)


if __name__ == "__main__":
    main()
