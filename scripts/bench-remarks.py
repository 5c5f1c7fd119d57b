#!/usr/bin/env python3
"""Compile time of Overlap's tensor passes against upstream's partitioning.

Generates a tensor-parallel model of L layers (default 96), each with two
column- then row-parallel matmul pairs (attention's output projection and
the MLP), annotated with upstream `shard.sharding`/`shard.shard`; runs
upstream's own `sharding-propagation, shard-partition, canonicalize` on it
(Debian's mlir-opt), then Overlap's `overlap-raise, overlap-plan,
overlap-decompose` on the partitioned output (overlap-opt), with default
flags (remarks off) and with every remark on (--remarks-filter=overlap).
Prints the best wall time of each over several runs, and the ratio to
upstream's partition time (the target: at most 4x with default flags).

    scripts/bench-remarks.py [--layers 96] [--runs 3] [--build build]
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LLVM = os.environ.get("LLVM_PREFIX", "/usr/lib/llvm-22")


def model(layers, m=512, d=64, h=256):
    """The annotated (unpartitioned) module: 2 blocks per layer."""
    blocks = 2 * layers
    args = ["%x: tensor<{m}x{d}xf32>".format(m=m, d=d)]
    for b in range(blocks):
        args.append(f"%w{b}a: tensor<{d}x{h}xf32>")
        args.append(f"%w{b}b: tensor<{h}x{d}xf32>")
    out = ["shard.grid @tp(shape = 4)",
           f"func.func @model({', '.join(args)}) -> tensor<{m}x{d}xf32> {{",
           "  %cst = arith.constant 0.000000e+00 : f32",
           "  %sr = shard.sharding @tp split_axes = [[]] : !shard.sharding",
           "  %scol = shard.sharding @tp split_axes = [[], [0]] : "
           "!shard.sharding",
           "  %srow = shard.sharding @tp split_axes = [[0]] : !shard.sharding",
           f"  %y_in = shard.shard %x to %sr : tensor<{m}x{d}xf32>"]
    prev = "%y_in"
    for b in range(blocks):
        out += [
            f"  %a{b} = shard.shard %w{b}a to %scol : tensor<{d}x{h}xf32>",
            f"  %e{b} = tensor.empty() : tensor<{m}x{h}xf32>",
            f"  %f{b} = linalg.fill ins(%cst : f32) outs(%e{b} : "
            f"tensor<{m}x{h}xf32>) -> tensor<{m}x{h}xf32>",
            f"  %h{b} = linalg.matmul ins({prev}, %a{b} : tensor<{m}x{d}xf32>, "
            f"tensor<{d}x{h}xf32>) outs(%f{b} : tensor<{m}x{h}xf32>) -> "
            f"tensor<{m}x{h}xf32>",
            f"  %b{b} = shard.shard %w{b}b to %srow : tensor<{h}x{d}xf32>",
            f"  %g{b} = tensor.empty() : tensor<{m}x{d}xf32>",
            f"  %z{b} = linalg.fill ins(%cst : f32) outs(%g{b} : "
            f"tensor<{m}x{d}xf32>) -> tensor<{m}x{d}xf32>",
            f"  %o{b} = linalg.matmul ins(%h{b}, %b{b} : tensor<{m}x{h}xf32>, "
            f"tensor<{h}x{d}xf32>) outs(%z{b} : tensor<{m}x{d}xf32>) -> "
            f"tensor<{m}x{d}xf32>",
            f"  %y{b} = shard.shard %o{b} to %sr : tensor<{m}x{d}xf32>"]
        prev = f"%y{b}"
    out += [f"  return {prev} : tensor<{m}x{d}xf32>", "}"]
    return "\n".join(out) + "\n"


def best(cmd, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if proc.returncode != 0:
            sys.exit(f"bench-remarks: {' '.join(cmd)} failed:\n{proc.stderr}")
    return min(times), proc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=96)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--build", default=os.environ.get(
        "OVERLAP_BUILD_DIR", os.path.join(ROOT, "build")))
    a = ap.parse_args()
    overlap_opt = os.path.join(a.build, "bin", "overlap-opt")
    mlir_opt = os.path.join(LLVM, "bin", "mlir-opt")
    with tempfile.TemporaryDirectory() as tmp:
        annotated = os.path.join(tmp, "model.mlir")
        partitioned = os.path.join(tmp, "partitioned.mlir")
        with open(annotated, "w") as f:
            f.write(model(a.layers))
        upstream = [mlir_opt, annotated, "--pass-pipeline=builtin.module("
                    "func.func(sharding-propagation,shard-partition,"
                    "canonicalize))", "-o", partitioned]
        t_up, _ = best(upstream, a.runs)
        with open(partitioned) as f:
            pairs = f.read().count("shard.all_reduce")
        passes = ["--overlap-raise", "--overlap-plan", "--overlap-decompose"]
        ours = [overlap_opt, partitioned, *passes, "-o", os.devnull]
        t_default, _ = best(ours, a.runs)
        t_remarks, proc = best(ours + ["--remarks-filter=overlap"], a.runs)
        remarks = proc.stderr.count("remark:")
    print(f"model: {a.layers} layers, {pairs} matmul + all-reduce pairs "
          f"after shard-partition (4 ranks)")
    print(f"upstream sharding-propagation + shard-partition + canonicalize "
          f"(mlir-opt): {t_up:.3f} s")
    print(f"overlap raise + plan + decompose (overlap-opt), default flags: "
          f"{t_default:.3f} s = {t_default / t_up:.2f}x upstream "
          f"(target <= 4x)")
    print(f"the same with --remarks-filter=overlap ({remarks} remarks "
          f"printed): {t_remarks:.3f} s = {t_remarks / t_up:.2f}x upstream")
    print(f"best of {a.runs} runs each, wall clock including parsing and "
          f"printing, on this machine ({os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
