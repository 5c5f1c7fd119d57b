#!/usr/bin/env python3
"""Compile JAX tensor-parallel layers with Overlap and check them against
JAX itself.

    ./scripts/python-env.sh            # once: the venv with jax (build/venv)
    build/venv/bin/python examples/jax/run.py [LAYER...] [--strategy S]

Each layer of layers.py is a jax.shard_map on 4 CPU devices. JAX runs it
(the oracle); overlap.jax imports its jaxpr, compiles it with Overlap and
runs it on 4 host ranks. Prints, per layer, the largest error relative to
the largest magnitude of JAX's output, and the plan of every fused op.
"""

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent / "python"))

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh  # noqa: E402

import layers  # noqa: E402
import overlap.jax as ojax  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("layers", nargs="*", default=sorted(layers.LAYERS),
                        help=f"of {', '.join(sorted(layers.LAYERS))}")
    parser.add_argument("--strategy", default="uniform:2",
                        help="Planner strategy (auto, none, uniform:N, ...)")
    parser.add_argument("--print-mlir", action="store_true",
                        help="print the imported MLIR of each layer")
    args = parser.parse_args()
    if len(jax.devices()) < 4:
        sys.exit("run.py: needs 4 JAX devices (XLA_FLAGS="
                 "--xla_force_host_platform_device_count=4)")
    mesh = Mesh(np.array(jax.devices()[:4]), ("tp",))
    worst = 0.0
    for name in args.layers:
        if name not in layers.LAYERS:
            sys.exit(f"run.py: unknown layer {name!r}")
        f, inputs, dtype = layers.LAYERS[name](mesh)
        want = jax.jit(f)(*inputs)
        want = want if isinstance(want, (list, tuple)) else [want]
        res = ojax.run(f, *inputs, strategy=args.strategy)
        err = max(layers.max_error(g, w) for g, w in zip(res.outputs, want))
        worst = max(worst, err) if np.dtype(dtype) == np.float32 else worst
        print(f"{name} ({np.dtype(dtype).name}, strategy {args.strategy}): "
              f"max |overlap - jax| / max |jax| = {err:.3g}")
        for p in res.plans:
            print(f"  {p['op']} at {p['location']}: tiles {p['tiles']}, "
                  f"predicted {p['predicted_us']:.1f} us, serial "
                  f"{p['serial_us']:.1f} us")
        if args.print_mlir:
            print(res.mlir)
    print(f"worst f32 error: {worst:.3g}")
    if args.strategy.startswith("uniform"):
        print(f"(--strategy {args.strategy} splits these toy shapes to show "
              "the tiles run right; at this size a split is predicted "
              "slower than serial, and --strategy auto keeps one tile. "
              "Real sizes: docs/jax.md, \"Overlap happens\"; measured: "
              "docs/status.md)")


if __name__ == "__main__":
    main()
