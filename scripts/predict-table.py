#!/usr/bin/env python3
"""Print Markdown tables of what the Planner predicts for a profile.

Every number comes from `overlap-plan matmul ... --json` (strategy auto) on
one profile (default h100-nvlink-datasheet): predicted serial, predicted
overlapped, ideal, speedup (serial / predicted), efficiency eta and the
plan's strategy and tiles. Nothing here is measured; the published
measurements in table (c) are copied from their sources, with links.

  (a) the session sweep's 22 shapes (scripts/gpu/run.sh SESSION_SHAPES,
      bf16, 8 ranks) for all-reduce, reduce-scatter and all-gather;
  (b) Llama-3-70B and Llama-3-405B tensor-parallel layers on 8 ranks at
      4k to 32k tokens, sequence parallel (all-gather + GEMM,
      GEMM + reduce-scatter) and without (GEMM + all-reduce);
  (c) the shapes of published fused GEMM + collective measurements, side
      by side with them.

  scripts/predict-table.py                       # build/bin/overlap-plan
  scripts/predict-table.py --plan PATH --profile b200-nvlink-datasheet
"""

import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
RANKS = 8


def session_shapes():
    """SESSION_SHAPES of scripts/gpu/run.sh, as (M, N, K)."""
    text = open(os.path.join(ROOT, "scripts", "gpu", "run.sh"), encoding="utf-8").read()
    shapes = []
    for m in re.finditer(r"^SESSION_SHAPES\+?=,?([0-9x,]+)", text, re.M):
        for s in m.group(1).split(","):
            if s:
                shapes.append(tuple(int(v) for v in s.split("x")))
    return shapes


# Llama-3 models: hidden, FFN, query heads, KV heads, head dim.
MODELS = {
    "Llama-3-70B": (8192, 28672, 64, 8, 128),
    "Llama-3-405B": (16384, 53248, 128, 8, 128),
}
TOKENS = (4096, 8192, 16384, 32768)


def llama_layers(model):
    """(layer, collective, N, K) per rank at TP = RANKS. QKV and the fused
    gate/up projection are column parallel (N split), the output and down
    projections row parallel (K split)."""
    hidden, ffn, heads, kv, hd = MODELS[model]
    qkv = (heads + 2 * kv) * hd // RANKS
    attn_k = heads * hd // RANKS
    up = 2 * ffn // RANKS
    down_k = ffn // RANKS
    return [
        ("QKV", "all-gather", qkv, hidden),
        ("attn out", "reduce-scatter", hidden, attn_k),
        ("FFN gate+up", "all-gather", up, hidden),
        ("FFN down", "reduce-scatter", hidden, down_k),
        ("attn out", "all-reduce", hidden, attn_k),
        ("FFN down", "all-reduce", hidden, down_k),
    ]


# FlagTree PR #861 (https://github.com/flagos-ai/FlagTree/pull/861): fused
# GEMM + all-reduce (multimem.ld_reduce) on 8x H800, float16, "average
# across all ranks"; (M, N, K per rank), FlagTree ms, PyTorch serial ms,
# speedup as printed.
FLAGTREE_861 = [
    ((1024, 8192, 1024), 0.2116, 0.2703, "1.277"),
    ((1024, 8192, 3584), 0.2462, 0.3205, "1.302"),
    ((2048, 8192, 1024), 0.3378, 0.4517, "1.337"),
    ((2048, 8192, 3584), 0.3739, 0.5786, "1.548"),
    ((8192, 8192, 1024), 1.1642, 1.4001, "1.203"),
    ((8192, 8192, 3584), 1.1931, 1.8684, "1.566"),
    ((16384, 8192, 1024), 2.2514, 2.7189, "1.208"),
    # The excerpt we could read ends before this row's speedup: it is
    # computed from the two times (3.6280 / 2.2778).
    ((16384, 8192, 3584), 2.2778, 3.6280, None),
]


def plan(binary, profile, collective, m, n, k, dtype):
    cmd = [binary, "matmul", "--collective", collective, "--m", str(m),
           "--n", str(n), "--k", str(k), "--dtype", dtype,
           "--ranks", str(RANKS), "--profile", profile, "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def tiles_text(tiles):
    if len(tiles) == 1:
        return "1"
    if len(set(tiles)) == 1:
        return f"{len(tiles)} × {tiles[0]}"
    if len(tiles) <= 6:
        return f"{len(tiles)}: " + ", ".join(str(t) for t in tiles)
    return f"{len(tiles)}: {tiles[0]} … {tiles[-1]}"


def cells(p):
    serial, pred, ideal = p["serial_us"], p["predicted_us"], p["ideal_us"]
    return [f"{serial:.1f}", f"{pred:.1f}", f"{ideal:.1f}",
            f"{serial / pred:.3f}", f"{p['efficiency']:.3f}",
            p["strategy"], tiles_text(p["tiles"])]


PLAN_HEAD = ["serial (pred.)", "predicted", "ideal (pred.)", "speedup (pred.)",
             "η (pred.)", "strategy", "tiles"]


def table(head, rows):
    right = [not h.startswith(("collective", "layer", "model", "strategy", "tiles"))
             for h in head]
    lines = ["| " + " | ".join(head) + " |",
             "| " + " | ".join("---:" if r else "---" for r in right) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def median(values):
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--plan", default=os.path.join(ROOT, "build", "bin", "overlap-plan"),
                    help="the overlap-plan binary (default build/bin/overlap-plan)")
    ap.add_argument("--profile", default="h100-nvlink-datasheet",
                    help="profile name or path (default h100-nvlink-datasheet)")
    args = ap.parse_args()
    run = lambda *a: plan(args.plan, args.profile, *a)
    prof = args.profile
    out = []

    # (a) the session sweep.
    shapes = session_shapes()
    out.append(f"### (a) The session sweep, predicted ({prof}, bf16, {RANKS} ranks)\n")
    rows, summary = [], []
    for coll in ("all-reduce", "reduce-scatter", "all-gather"):
        speedups, etas, split = [], [], 0
        for (m, n, k) in shapes:
            p = run(coll, m, n, k, "bf16")
            rows.append([coll, m, n, k] + cells(p))
            speedups.append(p["serial_us"] / p["predicted_us"])
            if len(p["tiles"]) > 1:
                split += 1
                etas.append(p["efficiency"])
        summary.append([coll, len(shapes), split,
                        f"{median(etas):.3f}" if etas else "—",
                        f"{median(speedups):.3f} ({min(speedups):.3f}, {max(speedups):.3f})"])
    out.append(table(["collective", "M", "N", "K"] + PLAN_HEAD, rows))
    out.append("\nSummary, predicted:\n")
    out.append(table(["collective", "shapes", "split (tiles > 1)",
                      "η median of split shapes (pred.)",
                      "speedup median (min, max) (pred.)"], summary))

    # (b) Llama layers.
    out.append(f"\n### (b) Llama-3 tensor-parallel layers, predicted ({prof}, bf16, TP = {RANKS})\n")
    dims = []
    for model in MODELS:
        hidden, ffn, heads, kv, hd = MODELS[model]
        per = ", ".join(f"{name} ({coll}) N = {n}, K = {k}"
                        for name, coll, n, k in llama_layers(model)[:4])
        dims.append(f"- {model} (hidden {hidden}, FFN {ffn}, {heads} heads, "
                    f"{kv} KV heads, head dim {hd}), per rank: {per}; the "
                    f"all-reduce forms have the reduce-scatter forms' N and K.")
    out.append("\n".join(dims) + "\n")
    rows = []
    for model in MODELS:
        for name, coll, n, k in llama_layers(model):
            for t in TOKENS:
                p = run(coll, t, n, k, "bf16")
                rows.append([model, f"{name} ({coll})", t, n, k] + cells(p))
    out.append(table(["model", "layer (collective)", "tokens M", "N", "K"] + PLAN_HEAD, rows))

    # (c) published measurements.
    out.append(f"\n### (c) Published measurements beside the prediction ({prof}, 8 ranks)\n")
    rows = []
    for (m, n, k), fused_ms, serial_ms, printed in FLAGTREE_861:
        p = run("all-reduce", m, n, k, "f16")
        measured = printed if printed else f"{serial_ms / fused_ms:.3f} (computed)"
        rows.append([m, n, k, f"{serial_ms * 1000:.1f}", f"{fused_ms * 1000:.1f}",
                     measured, f"{p['serial_us']:.1f}", f"{p['predicted_us']:.1f}",
                     f"{p['serial_us'] / p['predicted_us']:.3f}", p["strategy"],
                     tiles_text(p["tiles"])])
    out.append("FlagTree PR #861 (fused GEMM + all-reduce, 8x H800, f16; "
               "measured columns copied from "
               "https://github.com/flagos-ai/FlagTree/pull/861):\n")
    out.append(table(["M", "N", "K per rank", "serial (measured, µs)",
                      "fused (measured, µs)", "speedup (measured)",
                      "serial (pred.)", "predicted", "speedup (pred.)",
                      "strategy", "tiles"], rows))
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
