#!/usr/bin/env python3
"""Write the per-device MLIR of JAX tensor-parallel layers, as overlap.jax
imports them, for compiling elsewhere.

    build/venv/bin/python examples/jax/export.py [--devices N] OUT [LAYER...]

Each layer of layers.py becomes OUT/<prefix><layer>.mlir (a shard.grid of
N devices, default 1: the one-GPU form that scripts/gpu/programs.sh
compiles for --target=cuda). One line per layer goes to stdout:
"<file stem> <entry> <dtype>" (dtype: float32 or bfloat16), the manifest
programs.sh reads.

With --oracle (one device only) JAX also runs each layer here, on CPU, and
OUT/<stem>.in.npz holds its inputs as overlap-exec --inputs reads them
(arg0, ...; bf16 as '<u2' bit patterns) and OUT/<stem>.want.npz JAX's
outputs (result0, ..., as float32): an oracle no one here wrote, for
scripts/gpu/compare-npz.py to hold a GPU run against.
"""

import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent / "python"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="directory for the .mlir files")
    parser.add_argument("layers", nargs="*", help="layers (default: all)")
    parser.add_argument("--devices", type=int, default=1,
                        help="devices of the mesh (default 1)")
    parser.add_argument("--prefix", default="jax-",
                        help="prefix of each file's name (default jax-)")
    parser.add_argument("--oracle", action="store_true",
                        help="also write inputs and JAX's outputs (.npz)")
    args = parser.parse_args()
    if args.devices < 1:
        sys.exit("export.py: --devices must be at least 1")
    if args.oracle and args.devices != 1:
        sys.exit("export.py: --oracle writes one device's inputs and "
                 "outputs: use --devices 1")
    os.environ.setdefault(
        "XLA_FLAGS", f"--xla_force_host_platform_device_count={args.devices}")
    os.environ.setdefault("JAX_PLATFORMS", "cpu")

    import jax
    import numpy as np
    from jax.sharding import Mesh

    import layers
    import overlap.jax as ojax

    if len(jax.devices()) < args.devices:
        sys.exit(f"export.py: {args.devices} devices asked for, JAX has "
                 f"{len(jax.devices())} (XLA_FLAGS was set before?)")
    mesh = Mesh(np.array(jax.devices()[:args.devices]), ("tp",))
    names = args.layers or sorted(layers.LAYERS)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in names:
        if name not in layers.LAYERS:
            sys.exit(f"export.py: unknown layer {name!r} (of "
                     f"{', '.join(sorted(layers.LAYERS))})")
        f, inputs, dtype = layers.LAYERS[name](mesh)
        low = ojax.lower_program(f, *inputs)
        stem = args.prefix + name
        (out / f"{stem}.mlir").write_text(low.mlir)
        if args.oracle:
            write_oracle(out / stem, f, inputs, np)
        print(stem, low.entry, np.dtype(dtype).name)


def write_oracle(stem, f, inputs, np):
    """<stem>.in.npz (the inputs, bf16 as bit patterns) and <stem>.want.npz
    (JAX's outputs as float32)."""
    import jax

    def exec_form(a):
        a = np.asarray(a)
        return a.view(np.uint16) if a.dtype.name == "bfloat16" else a

    want = jax.jit(f)(*inputs)
    want = want if isinstance(want, (list, tuple)) else [want]
    np.savez(f"{stem}.in.npz",
             **{f"arg{i}": exec_form(a) for i, a in enumerate(inputs)})
    np.savez(f"{stem}.want.npz",
             **{f"result{i}": np.asarray(w, np.float32)
                for i, w in enumerate(want)})


if __name__ == "__main__":
    main()
