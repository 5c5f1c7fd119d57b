"""A generator of random jax.shard_map programs over the primitives
overlap.jax claims (docs/jax.md), for differential testing against
jax.jit (test_jax_differential.py). No code is shared with the importer:
a program is a list of steps drawn from a seeded numpy Generator, built
into a Python function that JAX traces.

Each program: a mesh (1-D of 4, or 2 x 2 with its axes named in either
order), an f32 input [rows, cols] sharded along rows over every mesh axis
(in a random order of the axes), a weight, edge values among the inputs
(0, -0, +-inf, NaN, tiny, huge, negative values for log and sqrt), then 3
to 7 steps of elementwise float math, integer arithmetic through a
conversion (division and remainder by zero included), reductions
broadcast back, a contraction with the weight, and collectives (psum,
pmax, pmin over a random subset of the axes, in a random order).
"""

import numpy as np

UNARY = ["exp", "log", "log1p", "expm1", "tanh", "sqrt", "rsqrt", "abs",
         "neg", "sin", "cos", "erf", "logistic", "square"]
BINARY = ["add", "sub", "mul", "div", "max", "min"]
EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-7, -1e-7, 1e30,
                  -1e30, -3.0, 100.0, 0.5], np.float32)


def make(seed):
    """(description, build(jax) -> (f, args)) of program `seed`."""
    rng = np.random.default_rng(seed)
    two_d = bool(rng.integers(2))
    names = ("a", "b") if two_d else ("tp",)
    shard_axes = tuple(rng.permutation(names)) if two_d else names
    rows, cols = 8 * int(rng.integers(1, 3)), 4 * int(rng.integers(1, 3))
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    holes = rng.random(x.shape) < 0.15
    x[holes] = rng.choice(EDGES, size=int(holes.sum()))
    w = (rng.standard_normal((cols, cols)) * 0.3).astype(np.float32)
    steps = []
    for _ in range(int(rng.integers(3, 8))):
        kind = rng.choice(["unary", "binary", "int", "reduce", "dot",
                           "collective"], p=[.3, .2, .15, .1, .1, .15])
        if kind == "unary":
            name = str(rng.choice(UNARY))
            # XLA's simplifier rewrites sqrt(square(x)) as abs(x),
            # log(rsqrt(x)) as -log(x) / 2 and log(exp(x)) as x, which are
            # not IEEE where x * x or exp(x) overflows or x is -0.0
            # (Overlap gives inf or NaN there, JAX the rewritten value):
            # not programs to compare on.
            rewritten = {("square", "sqrt"), ("rsqrt", "log"), ("exp", "log")}
            while steps and steps[-1][0] == "unary" and \
                    (steps[-1][1], name) in rewritten:
                name = str(rng.choice(UNARY))
            steps.append(("unary", name))
        elif kind == "binary":
            steps.append(("binary", str(rng.choice(BINARY)),
                          float(rng.choice([0.0, 2.0, -1.5, 3.0]))))
        elif kind == "int":
            op = str(rng.choice(["div", "rem", "max", "min", "add", "mul"]))
            # No multiplication by 0: XLA then folds the dividend of a later
            # remainder by 0 into a constant, and its CPU compiler dies of
            # SIGFPE folding it (jax 0.10.2; the oracle, not Overlap).
            consts = [0, 0, 3, -1, 7] if op != "mul" else [3, -1, 7]
            steps.append(("int", str(rng.choice(["int8", "int16", "int32"])),
                          op, int(rng.choice(consts))))
        elif kind == "reduce":
            steps.append(("reduce", str(rng.choice(["sum", "max", "min"]))))
        elif kind == "dot":
            steps.append(("dot",))
        else:
            k = int(rng.integers(1, len(names) + 1))
            axes = tuple(rng.permutation(names)[:k])
            steps.append(("collective", str(rng.choice(["psum", "pmax",
                                                         "pmin"])), axes))
    desc = (f"seed {seed}: mesh {names} rows over {shard_axes}, "
            f"x {x.shape}, steps {steps}")

    def build(jax):
        import jax.numpy as jnp
        from jax import lax
        from jax.sharding import Mesh, PartitionSpec as P

        devices = np.array(jax.devices()[:4])
        mesh = Mesh(devices.reshape(2, 2) if two_d else devices, names)

        def body(v, wv):
            for step in steps:
                if step[0] == "unary":
                    fn = {"logistic": jax.nn.sigmoid, "rsqrt": lax.rsqrt,
                          "neg": jnp.negative}.get(step[1]) or \
                        getattr(jnp, step[1], None) or getattr(lax, step[1])
                    if step[1] in ("sin", "cos"):
                        # XLA's sin and cos reduce huge arguments (1e29)
                        # differently from libm: bounded arguments only.
                        v = jnp.tanh(v) * 10.0
                    v = fn(v)
                elif step[0] == "binary":
                    c = jnp.float32(step[2])
                    v = getattr(lax, step[1])(v, jnp.full_like(v, c))
                elif step[0] == "int":
                    dt = getattr(jnp, step[1])
                    i = v.astype(dt)
                    j = jnp.full_like(i, step[3])
                    op = {"div": lax.div, "rem": lax.rem, "max": lax.max,
                          "min": lax.min, "add": lax.add,
                          "mul": lax.mul}[step[2]]
                    v = op(i, j).astype(jnp.float32)
                elif step[0] == "reduce":
                    red = {"sum": jnp.sum, "max": jnp.max,
                           "min": jnp.min}[step[1]]
                    v = v + red(v, axis=1, keepdims=True)
                elif step[0] == "dot":
                    v = v @ wv
                else:
                    v = getattr(lax, step[1])(v, step[2])
            return v

        f = jax.shard_map(body, mesh=mesh, in_specs=(P(shard_axes), P()),
                          out_specs=P(shard_axes), check_vma=False)
        return f, (x, w)

    return desc, build
