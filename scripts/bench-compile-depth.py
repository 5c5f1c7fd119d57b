#!/usr/bin/env python3
"""Compile time of deep scf.for nests and long elementwise chains.

Two program families, each compiled by `overlap-compile` (to the end of
the bufferize stage, and with --full to a host shared library); each line
gives the wall time of that one process (the best of --repeat runs) and,
with --upstream, the time of upstream's `mlir-opt --one-shot-bufferize`
(the options the bufferize stage uses) on the tensor stage's output:

  nest K    K nested scf.for loops carrying a tensor iter_arg, an
            elementwise linalg.generic (the JAX importer's form: a
            tensor.empty destination) innermost;
  chain N   N elementwise ops on tensors (arith.addf/mulf/subf, as a
            program or upstream's partitioning writes them), which
            convert-elementwise-to-linalg turns into linalg.generics that
            reuse an input as their destination;
  jchain N  N elementwise linalg.generics in the JAX importer's form.

    python3 scripts/bench-compile-depth.py                 # the defaults
    python3 scripts/bench-compile-depth.py --nest 8 16 24 --chain 500 2000
    python3 scripts/bench-compile-depth.py --emit nest 24 > nest24.mlir

Prints numbers; asserts nothing (docs/performance.md, "Compile time").
--timeout S gives up on one compile after S seconds (printed as >S).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAP1 = "affine_map<(d0) -> (d0)>"
MAP2 = "affine_map<(d0, d1) -> (d0, d1)>"


def nest(k: int, size: int = 8, trips: int = 4) -> str:
    t = f"tensor<{size}xf32>"
    out = [f"func.func @main(%x: {t}) -> {t} {{",
           "  %c0 = arith.constant 0 : index",
           "  %c1 = arith.constant 1 : index",
           f"  %cn = arith.constant {trips} : index"]
    cur = "%x"
    for d in range(k):
        out.append("  " * (d + 1) + f"%r{d} = scf.for %i{d} = %c0 to %cn "
                   f"step %c1 iter_args(%t{d} = {cur}) -> ({t}) {{")
        cur = f"%t{d}"
    ind = "  " * (k + 1)
    out += [f"{ind}%e = tensor.empty() : {t}",
            f"{ind}%g = linalg.generic {{indexing_maps = [{MAP1}, {MAP1}], "
            f"iterator_types = [\"parallel\"]}} ins({cur} : {t}) "
            f"outs(%e : {t}) {{",
            f"{ind}^bb0(%a: f32, %o: f32):",
            f"{ind}  %s = arith.addf %a, %a : f32",
            f"{ind}  linalg.yield %s : f32",
            f"{ind}}} -> {t}"]
    inner = "%g"
    for d in reversed(range(k)):
        out.append("  " * (d + 2) + f"scf.yield {inner} : {t}")
        out.append("  " * (d + 1) + "}")
        inner = f"%r{d}"
    out += [f"  return %r0 : {t}", "}"]
    return "\n".join(out) + "\n"


def chain(n: int) -> str:
    t = "tensor<8x16xf32>"
    out = [f"func.func @main(%x: {t}, %y: {t}) -> {t} {{"]
    cur = "%x"
    for i in range(n):
        op = ("arith.addf", "arith.mulf", "arith.subf")[i % 3]
        other = "%y" if i % 2 else "%x"
        out.append(f"  %v{i} = {op} {cur}, {other} : {t}")
        cur = f"%v{i}"
    out += [f"  return {cur} : {t}", "}"]
    return "\n".join(out) + "\n"


def jchain(n: int) -> str:
    t = "tensor<8x16xf32>"
    out = [f"func.func @main(%x: {t}, %y: {t}) -> {t} {{"]
    cur = "%x"
    for i in range(n):
        op = ("arith.addf", "arith.mulf", "arith.subf")[i % 3]
        other = "%y" if i % 2 else "%x"
        out += [f"  %e{i} = tensor.empty() : {t}",
                f"  %v{i} = linalg.generic {{indexing_maps = [{MAP2}, {MAP2}, "
                f"{MAP2}], iterator_types = [\"parallel\", \"parallel\"]}} "
                f"ins({cur}, {other} : {t}, {t}) outs(%e{i} : {t}) {{",
                "  ^bb0(%a: f32, %b: f32, %o: f32):",
                f"    %s = {op} %a, %b : f32",
                "    linalg.yield %s : f32",
                f"  }} -> {t}"]
        cur = f"%v{i}"
    out += [f"  return {cur} : {t}", "}"]
    return "\n".join(out) + "\n"


FAMILIES = {"nest": nest, "chain": chain, "jchain": jchain}


def timed(cmd, timeout: float, repeat: int) -> str:
    best = None
    for _ in range(repeat):
        start = time.perf_counter()
        try:
            r = subprocess.run(cmd, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, timeout=timeout)
        except subprocess.TimeoutExpired:
            return f">{timeout:.0f}"
        took = time.perf_counter() - start
        if r.returncode != 0:
            return "error: " + r.stderr.decode(errors="replace")[:200]
        best = took if best is None else min(best, took)
    return f"{best:.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--nest", type=int, nargs="*", default=[8, 12, 16, 20, 24])
    ap.add_argument("--chain", type=int, nargs="*",
                    default=[100, 250, 500, 1000, 2000])
    ap.add_argument("--jchain", type=int, nargs="*", default=[500, 2000])
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--full", action="store_true",
                    help="also compile to a shared library (--emit=so)")
    ap.add_argument("--upstream", action="store_true",
                    help="also time mlir-opt --one-shot-bufferize")
    ap.add_argument("--emit", nargs=2, metavar=("FAMILY", "SIZE"),
                    help="print one program and exit")
    ap.add_argument("--compiler", default=str(ROOT / "build/bin/overlap-compile"))
    ap.add_argument("--mlir-opt", default="/usr/lib/llvm-22/bin/mlir-opt")
    args = ap.parse_args()
    if args.emit:
        sys.stdout.write(FAMILIES[args.emit[0]](int(args.emit[1])))
        return 0
    bufferize = ("--one-shot-bufferize=bufferize-function-boundaries "
                 "allow-return-allocs-from-loops "
                 "function-boundary-type-conversion=identity-layout-map")
    with tempfile.TemporaryDirectory() as tmp:
        for family in ("nest", "chain", "jchain"):
            for size in getattr(args, family):
                src = Path(tmp) / f"{family}{size}.mlir"
                src.write_text(FAMILIES[family](size))
                line = [f"{family} {size:5d}"]
                line.append("bufferize stage " + timed(
                    [args.compiler, str(src), "--stop-after-stage=bufferize",
                     "-o", os.devnull], args.timeout, args.repeat) + " s")
                if args.full:
                    line.append("to .so " + timed(
                        [args.compiler, str(src), "--emit=so", "-o",
                         str(Path(tmp) / "out.so")], args.timeout,
                        args.repeat) + " s")
                if args.upstream:
                    tensor = Path(tmp) / f"{family}{size}.tensor.mlir"
                    subprocess.run([args.compiler, str(src),
                                    "--stop-after-stage=tensor", "-o",
                                    str(tensor)], check=True)
                    line.append("upstream one-shot-bufferize " + timed(
                        [args.mlir_opt, str(tensor), bufferize, "-o",
                         os.devnull], args.timeout, args.repeat) + " s")
                print(", ".join(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
