#!/usr/bin/env python3
"""overlap.jax.jit on N GPUs, one process per GPU, checked against jax.jit.

NOT YET RUN ON GPUs: written and checked where there is no GPU (the --cpu
mode below runs here); the first GPU run is the test. docs/jax.md,
"Running on N GPUs", gives the install and launch commands.

Each process (jax.distributed.initialize; rank r = process r, on its one
GPU) builds the same tensor-parallel layer of layers.py on a mesh of the
job's GPUs in process order, calls it through overlap.jax.jit inside
jax.jit and through jax.jit alone, and compares the two outputs on every
process. Exit status 0 when every process agrees within the layer's
tolerance.

    # Slurm: one task per GPU
    srun -N 1 -n 8 --gpus-per-task=1 python examples/jax/multi_gpu.py
    # Open MPI on one node
    mpirun -np 8 python examples/jax/multi_gpu.py
    # a plain launcher: one command per GPU
    for r in 0 1 2 3 4 5 6 7; do
      python examples/jax/multi_gpu.py --coordinator localhost:12355 \\
          --num-processes 8 --process-id $r --local-rank $r &
    done; wait
    # no GPU: the same script on 4 CPU devices in one process (host ranks)
    python examples/jax/multi_gpu.py --cpu 4
"""

import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent / "python"))


def local_rank(given):
    """This process's GPU on its node: --local-rank, else the launcher's."""
    if given is not None:
        return given
    for var in ("SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK",
                "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK",
                "LOCAL_RANK"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layer", default="megatron_mlp",
                        help="a layer of examples/jax/layers.py")
    parser.add_argument("--strategy", default="auto",
                        help="Planner strategy (auto, none, uniform:N, ...)")
    parser.add_argument("--coordinator", help="host:port of process 0 "
                        "(a plain launcher; Slurm and Open MPI need none)")
    parser.add_argument("--num-processes", type=int)
    parser.add_argument("--process-id", type=int)
    parser.add_argument("--local-rank", type=int,
                        help="this process's GPU on its node (default: the "
                             "launcher's local rank)")
    parser.add_argument("--init-timeout-ms", type=float, default=None,
                        help="bound on the layer's creation (NCCL id and "
                             "init); default $OVERLAP_JAX_INIT_TIMEOUT_MS "
                             "or 600000")
    parser.add_argument("--cpu", type=int, metavar="N",
                        help="no GPU: N CPU devices in this one process")
    args = parser.parse_args()

    if args.cpu:
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                                   f" --xla_force_host_platform_device_count"
                                   f"={args.cpu}")
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import numpy as np
    from jax.experimental import multihost_utils
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    import layers
    import overlap.jax as ojax

    if not args.cpu:
        # One GPU per process: local_device_ids keeps this process to its
        # own (Overlap refuses a process that holds several).
        rank = local_rank(args.local_rank)
        jax.distributed.initialize(
            coordinator_address=args.coordinator,
            num_processes=args.num_processes, process_id=args.process_id,
            local_device_ids=None if rank is None else [rank])
    # The mesh's devices in process order: rank r is process r.
    devices = sorted(jax.devices(), key=lambda d: (d.process_index, d.id))
    if args.cpu:
        devices = devices[:args.cpu]
    mesh = Mesh(np.array(devices), ("tp",))
    me = jax.process_index()
    print(f"process {me} of {jax.process_count()}: "
          f"{jax.local_devices()[0]} ({len(devices)} devices in the mesh)",
          flush=True)

    if args.layer not in layers.LAYERS:
        sys.exit(f"multi_gpu.py: unknown layer {args.layer!r} (of "
                 f"{', '.join(sorted(layers.LAYERS))})")
    f, inputs, dtype = layers.LAYERS[args.layer](mesh)
    # Every process made the same seeded inputs: global arrays, replicated
    # (the shard_map takes each rank's shard).
    replicated = NamedSharding(mesh, P())
    xs = [jax.make_array_from_callback(np.shape(x), replicated,
                                       lambda index, x=x: x[index])
          for x in inputs]

    layer = ojax.jit(f, strategy=args.strategy,
                     init_timeout_ms=args.init_timeout_ms)
    got = jax.jit(layer)(*xs)
    want = jax.jit(f)(*xs)
    got = got if isinstance(got, (list, tuple)) else [got]
    want = want if isinstance(want, (list, tuple)) else [want]
    worst = 0.0
    for g, w in zip(got, want):
        g = np.asarray(multihost_utils.process_allgather(g, tiled=True))
        w = np.asarray(multihost_utils.process_allgather(w, tiled=True))
        worst = max(worst, layers.max_error(g, w))
    tolerance = 1e-4 if np.dtype(dtype) == np.float32 else 2e-2
    ok = worst <= tolerance
    print(f"process {me}: {args.layer} ({np.dtype(dtype).name}, strategy "
          f"{args.strategy}): max |overlap - jax| / max |jax| = {worst:.3g} "
          f"(tolerance {tolerance:g}): {'ok' if ok else 'MISMATCH'}",
          flush=True)
    for p in layer.plans:
        if me == 0:
            print(f"  {p['op']}: tiles {p['tiles']}, predicted "
                  f"{p['predicted_us']:.1f} us, serial {p['serial_us']:.1f} us")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
