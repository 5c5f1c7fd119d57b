#!/usr/bin/env python3
"""Time per call of an overlap.jax.jit layer against jax.jit(f) on 4 CPU
devices (docs/jax.md, "Calling Overlap from JAX", Cost). Prints numbers;
asserts nothing. Run with the project's venv: build/venv/bin/python."""
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
import os, time
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import PartitionSpec as P, Mesh
import overlap.jax as ojax
mesh = Mesh(np.array(jax.devices()[:4]), ("x",))
def body(x, w1, w2):
    h = jax.lax.all_gather(x, "x", axis=0, tiled=True) @ w1
    return jax.lax.psum_scatter(h @ w2, "x", scatter_dimension=0, tiled=True)
f = jax.shard_map(body, mesh=mesh, in_specs=(P("x", None), P(None, "x"), P("x", None)), out_specs=P("x", None))
for m in (256, 1024):
    x = np.ones((m, 256), np.float32); w1 = np.ones((256, 512), np.float32)*0.01; w2 = np.ones((512, 256), np.float32)*0.01
    layer = ojax.jit(f, strategy="uniform:2")
    g = jax.jit(layer); r = jax.jit(f)
    g(x, w1, w2).block_until_ready(); r(x, w1, w2).block_until_ready()
    t = time.perf_counter(); [g(x, w1, w2).block_until_ready() for _ in range(10)]; a = (time.perf_counter()-t)/10
    t = time.perf_counter(); [r(x, w1, w2).block_until_ready() for _ in range(10)]; b = (time.perf_counter()-t)/10
    print(f"M={m}: overlap layer {a*1e3:.1f} ms/call, jax.jit(f) {b*1e3:.1f} ms/call")
