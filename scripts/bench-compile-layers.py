#!/usr/bin/env python3
"""Compile time and peak memory of a tensor-parallel stack of N layers.

Each layer is an attention output projection ([s, h] x [h, h], the
activations split along h) and an MLP ([s, h] x [h, f], column split, then
[s, f] x [f, h], row split), bf16, on one grid of `--ranks` devices: two
matmul + all-reduce pairs per layer once upstream's `sharding-propagation`
and `shard-partition` (stock mlir-opt) have partitioned it. The partitioned
module goes through `overlap-compile` to a host shared library and to a
cuda object; each line gives the wall time and the peak resident memory of
that one process (from wait4's rusage).

    python3 scripts/bench-compile-layers.py                  # 12 24 48 96
    python3 scripts/bench-compile-layers.py --layers 8 32 --targets host
    python3 scripts/bench-compile-layers.py --check-growth 8 32 4.5

--check-growth A B F prints how compiling B layers for the host grows
over A layers in time (the best of three runs each) and exits 1 when it
is more than F times.

--check-ir-growth A B F is the deterministic check the test suite runs
(test/Tools/overlap-compile/compile-scale.test; a test does not assert
timings): the operations of the host program as it goes to LLVM (the
LLVM dialect, before LLVM's optimizations), B layers over A, must grow by
at most F (linear is B/A; the pairwise deallocation checks this guards
against grew them by about B^2/A^2).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def layers_module(n: int, s: int, h: int, f: int, ranks: int,
                  elem: str = "bf16") -> str:
    def t(a, b):
        return f"tensor<{a}x{b}x{elem}>"

    args = ["%x: " + t(s, h)]
    for i in range(n):
        args += [f"%wo{i}: {t(h, h)}", f"%wu{i}: {t(h, f)}",
                 f"%wd{i}: {t(f, h)}"]
    out = [f"shard.grid @tp(shape = {ranks})",
           f"func.func @model({', '.join(args)}) -> {t(s, h)} {{",
           "  %rep = shard.sharding @tp split_axes = [[]] : !shard.sharding",
           "  %col = shard.sharding @tp split_axes = [[], [0]] : "
           "!shard.sharding",
           "  %row = shard.sharding @tp split_axes = [[0]] : !shard.sharding",
           f"  %z = arith.constant 0.0 : {elem}",
           f"  %x0 = shard.shard %x to %rep : {t(s, h)}"]

    def matmul(name, a, b, m, k, n_, b_type):
        out.extend([
            f"  %{name}e = tensor.empty() : {t(m, n_)}",
            f"  %{name}f = linalg.fill ins(%z : {elem}) outs(%{name}e : "
            f"{t(m, n_)}) -> {t(m, n_)}",
            f"  %{name} = linalg.matmul ins({a}, {b} : {t(m, k)}, {b_type}) "
            f"outs(%{name}f : {t(m, n_)}) -> {t(m, n_)}"])

    cur = "%x0"
    for i in range(n):
        out += [f"  %wo{i}s = shard.shard %wo{i} to %row : {t(h, h)}",
                f"  %wu{i}s = shard.shard %wu{i} to %col : {t(h, f)}",
                f"  %wd{i}s = shard.shard %wd{i} to %row : {t(f, h)}",
                f"  %a{i} = shard.shard {cur} to %col annotate_for_users : "
                f"{t(s, h)}"]
        matmul(f"o{i}", f"%a{i}", f"%wo{i}s", s, h, h, t(h, h))
        out.append(f"  %o{i}r = shard.shard %o{i} to %rep : {t(s, h)}")
        matmul(f"u{i}", f"%o{i}r", f"%wu{i}s", s, h, f, t(h, f))
        out.append(f"  %u{i}c = shard.shard %u{i} to %col : {t(s, f)}")
        matmul(f"d{i}", f"%u{i}c", f"%wd{i}s", s, f, h, t(f, h))
        out.append(f"  %d{i}r = shard.shard %d{i} to %rep : {t(s, h)}")
        cur = f"%d{i}r"
    out += [f"  return {cur} : {t(s, h)}", "}"]
    return "\n".join(out) + "\n"


def measured(cmd) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of one process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace")
    proc.stdout.close()
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed:\n{err}")
    return wall, usage.ru_maxrss / 1024.0


def tools():
    build = Path(os.environ.get("OVERLAP_BUILD_DIR", ROOT / "build"))
    compile_tool = build / "bin" / "overlap-compile"
    opt = os.environ.get("MLIR_OPT") or shutil.which("mlir-opt") or \
        "/usr/lib/llvm-22/bin/mlir-opt"
    for tool in (compile_tool, Path(opt)):
        if not os.access(tool, os.X_OK):
            sys.exit(f"bench-compile-layers: {tool} not found")
    cuda = any((build / d / "liboverlap_runtime_cuda.so").is_file()
               for d in ("lib", "bin"))
    return str(compile_tool), opt, cuda


def partitioned(n, args, work: Path, opt: str) -> Path:
    src = work / f"layers{n}.mlir"
    src.write_text(layers_module(n, args.s, args.h, args.f, args.ranks))
    part = work / f"layers{n}.part.mlir"
    measured([opt, str(src), "--pass-pipeline=builtin.module(func.func("
              "sharding-propagation,shard-partition))", "-o", str(part)])
    return part


def compile_cmd(compile_tool, part: Path, target: str, work: Path):
    if target == "host":
        return [compile_tool, str(part), "--emit=so", "-o",
                str(work / (part.stem + ".so"))]
    return [compile_tool, str(part), "--target=cuda", "--emit=obj", "-o",
            str(work / (part.stem + ".cuda.o"))]


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", type=int, nargs="+", default=[12, 24, 48, 96])
    p.add_argument("--targets", nargs="+", default=["host", "cuda"],
                   choices=["host", "cuda"])
    p.add_argument("--s", type=int, default=4096, help="sequence rows")
    p.add_argument("--h", type=int, default=8192, help="hidden size")
    p.add_argument("--f", type=int, default=8192, help="MLP size")
    p.add_argument("--ranks", type=int, default=8)
    p.add_argument("--check-growth", nargs=3, metavar=("A", "B", "F"))
    p.add_argument("--check-ir-growth", nargs=3, metavar=("A", "B", "F"))
    args = p.parse_args(argv)
    compile_tool, opt, cuda = tools()
    with tempfile.TemporaryDirectory(prefix="overlap-bench-layers-") as d:
        work = Path(d)
        def growth(spec, cost, what, unit, after_a, after_b):
            """cost(partitioned module) for A and B layers; exits 1 when
            B's is more than F times A's."""
            a, b, limit = int(spec[0]), int(spec[1]), float(spec[2])
            got = {n: cost(partitioned(n, args, work, opt)) for n in (a, b)}
            ratio = got[b] / got[a]
            print(f"{what}: {a} layers {got[a]:{unit}}{after_a}, {b} "
                  f"layers {got[b]:{unit}}{after_b}: {ratio:.2f}x (linear "
                  f"{b / a:.1f}x, limit {limit}x)")
            return 0 if ratio <= limit else 1

        def ops(part):
            out = work / (part.stem + ".llvm.mlir")
            measured([compile_tool, str(part), "--emit=mlir", "-o", str(out)])
            return sum(1 for line in out.read_text().splitlines()
                       if " = " in line or line.strip().startswith(
                           ("llvm.", "func.")))

        def seconds(part):
            return min(measured(compile_cmd(compile_tool, part, "host",
                                            work))[0] for _ in range(3))

        if args.check_ir_growth:
            return growth(args.check_ir_growth, ops, "host LLVM dialect",
                          "d", " ops", "")
        if args.check_growth:
            return growth(args.check_growth, seconds, "host compile", ".2f",
                          " s", " s")
        print("| layers | target | wall (s) | peak memory (MB) |")
        print("|---|---|---|---|")
        for n in args.layers:
            part = partitioned(n, args, work, opt)
            for target in args.targets:
                if target == "cuda" and not cuda:
                    print(f"| {n} | cuda | - | - (no CUDA backend built) |")
                    continue
                wall, mb = measured(compile_cmd(compile_tool, part, target,
                                                work))
                print(f"| {n} | {target} | {wall:.2f} | {mb:.0f} |",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
