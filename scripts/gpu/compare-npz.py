#!/usr/bin/env python3
"""Holds a program's outputs against an oracle's.

    compare-npz.py GOT.npz WANT.npz TOL

GOT comes from overlap-exec --outputs (result0, ... of shape [R, *shape];
float32, float16, or bf16 bit patterns as '<u2'), WANT from
examples/jax/export.py --oracle (result0, ... as float32, one device's).
For each result of WANT: rank 0's GOT, the largest |GOT - WANT| relative
to the largest |WANT| (layers.py's max_error), which must be at most TOL;
no element may be NaN or infinite. Prints one line per result and exits 1
on any failure, 2 on unreadable or mismatched files. Needs numpy only.
"""

import sys

import numpy as np


def as_f64(a):
    a = np.asarray(a)
    if a.dtype == np.uint16 or a.dtype == np.int16:  # bf16 bit patterns
        a = (a.astype(np.uint32) << 16).view(np.float32)
    return a.astype(np.float64)


def main(argv):
    if len(argv) != 4:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    try:
        got, want, tol = np.load(argv[1]), np.load(argv[2]), float(argv[3])
    except (OSError, ValueError) as e:
        print(f"compare-npz: {e}", file=sys.stderr)
        return 2
    names = sorted(k for k in want.files if k.startswith("result"))
    if not names:
        print(f"compare-npz: no result in {argv[2]}", file=sys.stderr)
        return 2
    failed = 0
    for k in names:
        if k not in got.files:
            print(f"compare-npz: {k} missing from {argv[1]}", file=sys.stderr)
            return 2
        g, w = as_f64(got[k]), as_f64(want[k])
        if g.shape[1:] == w.shape:
            g = g[0]  # rank 0 of [R, *shape]
        if g.shape != w.shape:
            print(f"compare-npz: {k}: shape {g.shape} against {w.shape}",
                  file=sys.stderr)
            return 2
        scale = max(np.abs(w).max(), np.finfo(np.float64).tiny)
        finite = bool(np.isfinite(g).all())
        err = float(np.abs(g - w).max() / scale) if finite else float("inf")
        ok = finite and err <= tol
        failed += not ok
        print(f"{k}: max |got - want| / max |want| = {err:.3g}"
              f" (tolerance {tol:g}){'' if finite else ', not finite'}"
              f": {'OK' if ok else 'FAILED'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
