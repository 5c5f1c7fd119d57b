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

make_loop: the same steps inside a scan (forwards or reversed, over
stacked inputs), a fori_loop (static or traced bound), a while_loop, a
cond, a switch, or a cond inside a scan. make_typed: the float steps in
bfloat16 or float16.
"""

import numpy as np

UNARY = ["exp", "log", "log1p", "expm1", "tanh", "sqrt", "rsqrt", "abs",
         "neg", "sin", "cos", "erf", "logistic", "square"]
BINARY = ["add", "sub", "mul", "div", "max", "min"]
EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-7, -1e-7, 1e30,
                  -1e30, -3.0, 100.0, 0.5], np.float32)


def _draw(rng, kind, names, steps):
    """Appends one step of `kind` to `steps`, drawn from `rng`."""
    if kind == "unary":
        name = str(rng.choice(UNARY))
        # XLA's simplifier rewrites sqrt(square(x)) as abs(x),
        # log(rsqrt(x)) as -log(x) / 2 and log(exp(x)) as x, which are
        # not IEEE where x * x or exp(x) overflows or x is -0.0
        # (Overlap gives inf or NaN there, JAX the rewritten value):
        # not programs to compare on.
        # So is log(square(exp(x))): exp(x) * exp(x) becomes exp(2x) and
        # the log of it 2x.
        rewritten = {("square", "sqrt"), ("rsqrt", "log"), ("exp", "log")}

        def rewrites(name):
            if steps and steps[-1][0] == "unary" and \
                    (steps[-1][1], name) in rewritten:
                return True
            return name == "log" and len(steps) > 1 and \
                steps[-1] == ("unary", "square") and \
                steps[-2] == ("unary", "exp")
        while rewrites(name):
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


def _apply(jax, step, v, wv, tame=False):
    """`step` (drawn by _draw) applied to the f32 block `v`. `tame` (loop
    bodies, which iterate a step up to 4 times) keeps each step from
    amplifying a last-ulp difference of libm and XLA: sin and cos of
    tanh(v) (not 10 tanh(v), a slope of 10 per step), and integer
    conversions of 3.3 v + 0.25, whose truncation no saturated value (erf
    or tanh at +-1, exactly or 1 ulp short) sits next to."""
    import jax.numpy as jnp
    from jax import lax
    if step[0] == "unary":
        fn = {"logistic": jax.nn.sigmoid, "rsqrt": lax.rsqrt,
              "neg": jnp.negative}.get(step[1]) or \
            getattr(jnp, step[1], None) or getattr(lax, step[1])
        if step[1] in ("sin", "cos"):
            # XLA's sin and cos reduce huge arguments (1e29)
            # differently from libm: bounded arguments only.
            v = jnp.tanh(v) * (1.0 if tame else 10.0)
        return fn(v)
    if step[0] == "binary":
        c = jnp.float32(step[2])
        return getattr(lax, step[1])(v, jnp.full_like(v, c))
    if step[0] == "int":
        dt = getattr(jnp, step[1])
        i = (v * 3.3 + 0.25 if tame else v).astype(dt)
        j = jnp.full_like(i, step[3])
        op = {"div": lax.div, "rem": lax.rem, "max": lax.max,
              "min": lax.min, "add": lax.add, "mul": lax.mul}[step[2]]
        return op(i, j).astype(jnp.float32)
    if step[0] == "reduce":
        red = {"sum": jnp.sum, "max": jnp.max, "min": jnp.min}[step[1]]
        return v + red(v, axis=1, keepdims=True)
    if step[0] == "dot":
        return v @ wv
    return getattr(lax, step[1])(v, step[2])


def _mesh_and_block(rng, unit, hole_rate):
    """(two_d, mesh axis names, the axes rows are sharded over in a random
    order, x [rows, cols] with edge values in a `hole_rate` of its
    elements, w [cols, cols]), drawn from `rng` in this order."""
    two_d = bool(rng.integers(2))
    names = ("a", "b") if two_d else ("tp",)
    shard_axes = tuple(rng.permutation(names)) if two_d else names
    rows, cols = unit * int(rng.integers(1, 3)), 4 * int(rng.integers(1, 3))
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    holes = rng.random(x.shape) < hole_rate
    x[holes] = rng.choice(EDGES, size=int(holes.sum()))
    w = (rng.standard_normal((cols, cols)) * 0.3).astype(np.float32)
    return two_d, names, shard_axes, x, w


def _steps_program(jax, two_d, names, shard_axes, steps, args, tame=False):
    """(f, args): a shard_map of `steps` (_apply) on the block x sharded by
    rows over `shard_axes`, with the weight w replicated."""
    from jax.sharding import Mesh, PartitionSpec as P

    devices = np.array(jax.devices()[:4])
    mesh = Mesh(devices.reshape(2, 2) if two_d else devices, names)

    def body(v, wv):
        for step in steps:
            v = _apply(jax, step, v, wv, tame=tame)
        return v

    f = jax.shard_map(body, mesh=mesh, in_specs=(P(shard_axes), P()),
                      out_specs=P(shard_axes), check_vma=False)
    return f, args


def make(seed):
    """(description, build(jax) -> (f, args)) of program `seed`."""
    rng = np.random.default_rng(seed)
    two_d, names, shard_axes, x, w = _mesh_and_block(rng, 8, 0.15)
    steps = []
    for _ in range(int(rng.integers(3, 8))):
        kind = rng.choice(["unary", "binary", "int", "reduce", "dot",
                           "collective"], p=[.3, .2, .15, .1, .1, .15])
        _draw(rng, kind, names, steps)
    desc = (f"seed {seed}: mesh {names} rows over {shard_axes}, "
            f"x {x.shape}, steps {steps}")

    def build(jax):
        return _steps_program(jax, two_d, names, shard_axes, steps, (x, w))

    return desc, build


#: The loops and branches of make_loop: lax.scan (forwards, backwards,
#: over stacked inputs), fori_loop with static bounds (a scan) and with a
#: traced bound (a while), while_loop with a data-dependent condition,
#: cond and switch on a per-rank or a mesh-wide predicate, and a scan
#: whose body holds a cond.
LOOPS = ["scan", "scan-reverse", "fori", "fori-traced", "while", "cond",
         "switch", "nested"]


def make_loop(seed):
    """(description, build(jax) -> (f, args)) of loop program `seed`: a
    block of x carried through one of LOOPS whose bodies are steps of
    make's kinds (collectives only where every rank takes the same path)."""
    rng = np.random.default_rng([seed, 7])
    two_d = bool(rng.integers(2))
    names = ("a", "b") if two_d else ("tp",)
    shard_axes = tuple(rng.permutation(names)) if two_d else names
    rows, cols = 8 * int(rng.integers(1, 3)), 4 * int(rng.integers(1, 3))
    length = int(rng.integers(1, 5))
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    holes = rng.random(x.shape) < 0.1
    x[holes] = rng.choice(EDGES, size=int(holes.sum()))
    xs = rng.standard_normal((length, rows, cols)).astype(np.float32)
    w = (rng.standard_normal((cols, cols)) * 0.3).astype(np.float32)
    loop = str(rng.choice(LOOPS))
    # A branch on a per-rank predicate, or a while whose condition reads
    # the data, runs a different number of collectives on each rank (a
    # hang in JAX as in Overlap): collectives only on uniform paths.
    uniform = bool(rng.integers(2))
    per_rank = loop in ("while", "nested") or (
        loop in ("cond", "switch") and not uniform)
    kinds = ["unary", "binary", "int", "reduce", "dot", "collective"]
    p = [.3, .2, .1, .15, .1, .15]
    if per_rank:
        kinds, p = kinds[:-1], [.35, .2, .1, .2, .15]

    def draw():
        steps = []
        for _ in range(int(rng.integers(1, 4))):
            _draw(rng, rng.choice(kinds, p=p), names, steps)
        return steps
    bodies = [draw() for _ in range(3)]
    desc = (f"loop seed {seed}: {loop} (length {length}, "
            f"{'uniform' if uniform else 'per-rank'} predicate), mesh "
            f"{names} rows over {shard_axes}, x {x.shape}, bodies {bodies}")

    def build(jax):
        import jax.numpy as jnp
        from jax import lax
        from jax.sharding import Mesh, PartitionSpec as P

        devices = np.array(jax.devices()[:4])
        mesh = Mesh(devices.reshape(2, 2) if two_d else devices, names)

        def run(k, v, wv):
            for step in bodies[k]:
                v = _apply(jax, step, v, wv, tame=True)
            return v

        def predicate(v):
            # A count (exact in f32), not a sum of the values: +-1e30 and
            # small values sum differently in another order (so would the
            # branch taken).
            s = jnp.sum((v > 0).astype(jnp.float32)) * 2 - v.size
            return lax.psum(s, names) > 0 if uniform else s > 0

        def body(v, vs, wv):
            if loop in ("scan", "scan-reverse"):
                def step(c, xt):
                    c = run(0, c + xt, wv)
                    return c, run(1, c * 0.5, wv)
                c, ys = lax.scan(step, v, vs, reverse=loop == "scan-reverse")
                return c + jnp.sum(ys, axis=0)
            if loop == "fori":
                return lax.fori_loop(
                    0, length,
                    lambda i, c: run(0, c, wv) + i.astype(jnp.float32), v)
            if loop == "fori-traced":
                # A bound the tracer cannot see: a while loop.
                n = jnp.int32(length) + (jnp.sum(vs) > 1e30).astype(
                    jnp.int32)
                return lax.fori_loop(0, n, lambda i, c: run(0, c, wv) * 0.5,
                                     v)
            if loop == "while":
                def cond(s):
                    i, c = s
                    return (i < length) & (jnp.max(jnp.abs(c)) < 1e4)
                return lax.while_loop(
                    cond, lambda s: (s[0] + 1, run(0, s[1], wv) + 1.0),
                    (jnp.int32(0), v))[1]
            if loop == "cond":
                return lax.cond(predicate(v), lambda c: run(0, c, wv),
                                lambda c: run(1, c, wv), v)
            if loop == "switch":
                i = predicate(v).astype(jnp.int32) + \
                    predicate(vs[0] - 1.0).astype(jnp.int32)
                return lax.switch(i, [lambda c, k=k: run(k, c, wv)
                                      for k in range(3)], v)
            # nested: a cond in a scan's body
            def step(c, xt):
                c = lax.cond(predicate(c), lambda a: run(0, a, wv),
                             lambda a: run(1, a, wv), c + xt)
                return c, None
            return lax.scan(step, v, vs)[0]

        f = jax.shard_map(body, mesh=mesh,
                          in_specs=(P(shard_axes), P(None, shard_axes), P()),
                          out_specs=P(shard_axes), check_vma=False)
        return f, (x, xs, w)

    return desc, build


def make_typed(seed):
    """(description, dtype name, build(jax) -> (f, args)) of typed program
    `seed`: make's float steps (no integer conversions) computed in
    bfloat16 or float16, arguments and result of that type."""
    rng = np.random.default_rng([seed, 16])
    dtype = str(rng.choice(["bfloat16", "float16"]))
    two_d, names, shard_axes, x, w = _mesh_and_block(rng, 8, 0.1)
    steps = []
    for _ in range(int(rng.integers(2, 6))):
        kind = rng.choice(["unary", "binary", "reduce", "dot", "collective"],
                          p=[.35, .25, .1, .15, .15])
        _draw(rng, kind, names, steps)
    desc = (f"typed seed {seed}: {dtype}, mesh {names} rows over "
            f"{shard_axes}, x {x.shape}, steps {steps}")

    def build(jax):
        import jax.numpy as jnp
        dt = getattr(jnp, dtype)
        # Tame: one bf16 ulp is 0.4 %; times 10 before a sin it is a
        # different argument.
        return _steps_program(jax, two_d, names, shard_axes, steps,
                              (np.asarray(jnp.asarray(x, dt)),
                               np.asarray(jnp.asarray(w, dt))), tame=True)

    return desc, dtype, build


#: make_shapes' steps: collectives that move blocks (all_gather, tiled
#: psum_scatter, all_to_all, ppermute) and layout primitives (slice,
#: strided slice, concatenate, split, transpose, reshape, broadcast, iota,
#: axis_index, dynamic_slice and dynamic_update_slice with clamped
#: starts), each giving back a block of the same shape.
SHAPES = ["gather", "scatter", "all_to_all", "roll", "stride", "split",
          "transpose", "broadcast", "iota", "axis_index", "ppermute",
          "dynamic_slice"]


def make_shapes(seed):
    """(description, build(jax) -> (f, args)) of layout program `seed`."""
    rng = np.random.default_rng([seed, 23])
    two_d, names, shard_axes, x, w = _mesh_and_block(rng, 32, 0.05)
    steps = []
    for _ in range(int(rng.integers(2, 7))):
        if rng.random() < 0.3:
            _draw(rng, rng.choice(["unary", "binary", "dot"]), names, steps)
            continue
        k = int(rng.integers(1, len(names) + 1))
        kind = str(rng.choice(SHAPES))
        axes = tuple(str(a) for a in rng.permutation(names)[:k])
        extra = ()
        if kind == "ppermute":
            # A permutation of the group, some pairs dropped (a rank no
            # one sends to gets zeros).
            g = 4 if not two_d else 2 ** k
            dst = rng.permutation(g)
            extra = tuple((int(s_), int(d)) for s_, d in enumerate(dst)
                          if rng.random() > 0.25)
        steps.append(("shape", kind, axes) + extra)
    desc = (f"shapes seed {seed}: mesh {names} rows over {shard_axes}, "
            f"x {x.shape}, steps {steps}")

    def build(jax):
        import jax.numpy as jnp
        from jax import lax
        from jax.sharding import Mesh, PartitionSpec as P

        devices = np.array(jax.devices()[:4])
        mesh = Mesh(devices.reshape(2, 2) if two_d else devices, names)

        def shape_step(kind, axes, v, perm=()):
            r, c = v.shape
            if kind == "gather":
                g = lax.all_gather(v, axes, axis=1, tiled=True)
                return g[:, :c] * 0.5 + g[:, -c:]
            if kind == "scatter":
                s = lax.psum_scatter(v, axes, scatter_dimension=0, tiled=True)
                return lax.all_gather(s * 2.0, axes, axis=0, tiled=True)
            if kind == "all_to_all":
                return lax.all_to_all(v, axes, 1, 1, tiled=True)
            if kind == "roll":
                return jnp.concatenate([v[:, 1:], v[:, :1]], axis=1)
            if kind == "stride":
                return jnp.concatenate([v[1::2], v[::2]], axis=0)
            if kind == "split":
                a, b = jnp.split(v, 2, axis=1)
                return jnp.concatenate([b, a * -1.0], axis=1)
            if kind == "transpose":
                t = v.reshape(r // 2, 2, c).transpose(1, 0, 2)
                return t.reshape(r, c)
            if kind == "broadcast":
                return v + v[:1] + jnp.max(v, axis=0, keepdims=True)
            if kind == "iota":
                return v + lax.broadcasted_iota(jnp.float32, (r, c), 0) - \
                    lax.broadcasted_iota(jnp.float32, (r, c), 1)
            if kind == "ppermute":
                return lax.ppermute(v, axes, list(perm))
            if kind == "dynamic_slice":
                # A start past the end on some ranks: clamped.
                i = lax.axis_index(axes) * (r // 2) - 1
                half = lax.dynamic_slice(v, (i, 0), (r // 2, c))
                return lax.dynamic_update_slice(v, half * -2.0, (r - i, 0))
            return v + lax.axis_index(axes).astype(jnp.float32)

        def body(v, wv):
            for step in steps:
                if step[0] == "shape":
                    v = shape_step(step[1], step[2], v, step[3:])
                else:
                    v = _apply(jax, step, v, wv, tame=True)
            return v

        f = jax.shard_map(body, mesh=mesh, in_specs=(P(shard_axes), P()),
                          out_specs=P(shard_axes), check_vma=False)
        return f, (x, w)

    return desc, build


#: make_scalars' steps: reshapes to and from rank 0 (an element of the
#: block times the block, x[i] of a vector with a traced i, squeeze to a
#: scalar, reshape(()), expand_dims of a scalar) and dynamic_slice /
#: dynamic_update_slice whose traced starts (from axis_index) fall before
#: the block, inside it or past its end (JAX clamps them), with sizes from
#: 1 x 1 (a scalar after reshape) to the whole block.
SCALARS = ["element", "index", "squeeze", "reshape0", "expand",
           "dynamic_slice", "dynamic_update_slice", "dynamic_index"]


def make_scalars(seed):
    """(description, build(jax) -> (f, args)) of rank-0 program `seed`."""
    rng = np.random.default_rng([seed, 31])
    two_d, names, shard_axes, x, w = _mesh_and_block(rng, 8, 0.05)
    r, c = x.shape[0] // 4, x.shape[1]  # the block: rows over 4 ranks
    steps = []
    for _ in range(int(rng.integers(2, 6))):
        if rng.random() < 0.25:
            _draw(rng, rng.choice(["unary", "binary", "reduce"]), names,
                  steps)
            continue
        kind = str(rng.choice(SCALARS))
        k = int(rng.integers(1, len(names) + 1))
        axes = tuple(str(a) for a in rng.permutation(names)[:k])
        # Starts from -3 to past the end, sizes from 1 to the block's.
        start = (int(rng.integers(-3, r + 3)), int(rng.integers(-3, c + 3)))
        size = (int(rng.integers(1, r + 1)), int(rng.integers(1, c + 1)))
        steps.append(("scalar", kind, axes, start, size))
    desc = (f"scalars seed {seed}: mesh {names} rows over {shard_axes}, "
            f"x {x.shape}, steps {steps}")

    def build(jax):
        import jax.numpy as jnp
        from jax import lax
        from jax.sharding import Mesh, PartitionSpec as P

        devices = np.array(jax.devices()[:4])
        mesh = Mesh(devices.reshape(2, 2) if two_d else devices, names)

        def scalar_step(kind, axes, start, size, v):
            rr, cc = v.shape
            me = lax.axis_index(axes)
            i = me * 2 + start[0]
            j = me + start[1]
            if kind == "element":
                return v * v[rr - 1, 0]
            if kind == "index":
                return v + v[:, cc - 1][me % rr]
            if kind == "squeeze":
                return v + jnp.squeeze(v[:1, :1])
            if kind == "reshape0":
                return v - v[rr - 1:, cc - 1:].reshape(())
            if kind == "expand":
                return v + jnp.expand_dims(jnp.max(v), 0)
            if kind == "dynamic_slice":
                s = lax.dynamic_slice(v, (i, j), size)
                return v + jnp.sum(s) * 0.25 + s[0, 0]
            if kind == "dynamic_update_slice":
                s = lax.dynamic_slice(v, (j, i), size) * -1.5
                return lax.dynamic_update_slice(v, s, (i, j))
            # dynamic_index: one element at traced (clamped) coordinates,
            # a 1 x 1 dynamic_slice reshaped to a scalar.
            return v * lax.dynamic_index_in_dim(
                lax.dynamic_index_in_dim(v, i, 0, keepdims=False), j, 0,
                keepdims=False)

        def body(v, wv):
            for step in steps:
                if step[0] == "scalar":
                    v = scalar_step(*step[1:], v)
                else:
                    v = _apply(jax, step, v, wv, tame=True)
            return v

        f = jax.shard_map(body, mesh=mesh, in_specs=(P(shard_axes), P()),
                          out_specs=P(shard_axes), check_vma=False)
        return f, (x, w)

    return desc, build


#: make_indexed's steps: the primitives gradients and training code bring
#: (issue 51): lax.pad (low, high, interior, negative; a literal or a
#: computed padding value) and slices under jax.grad (their transpose is a
#: pad), sign (float and int) and isfinite with all/any, .at[ids].add in
#: each of jnp's forms and modes (rows, elements, a window of columns,
#: repeats and ids out of range), the gradients of jnp.take and
#: take_along_axis (scatter-adds), take_along_axis and x[ids] (gathers)
#: along either axis and mode, top_k (values and indices).
INDEXED = ["pad", "pad_grad", "sign", "isfinite", "at_add", "take_grad",
           "take_along", "take_along_grad", "top_k"]
#: .at[].add's modes: None is jnp's default (drop, as "drop").
SCATTER_MODES = [None, "clip", "drop", "promise_in_bounds"]


def make_indexed(seed):
    """(description, dtype name, build(jax) -> (f, args)) of indexed
    program `seed`: steps of INDEXED among make's float steps, in float32
    or bfloat16. Indices and signs are computed from the input block
    itself (exact in both: x * 4 converted to int32), values from the
    block the steps computed, so that a last-ulp difference of a step
    never moves an index or flips a sign."""
    rng = np.random.default_rng([seed, 41])
    dtype = str(rng.choice(["float32", "bfloat16"], p=[.7, .3]))
    two_d, names, shard_axes, x, w = _mesh_and_block(rng, 32, 0.08)
    r, c = x.shape[0] // 4, x.shape[1]  # the block: rows over 4 ranks
    steps = []
    for _ in range(int(rng.integers(2, 6))):
        if rng.random() < 0.3:
            _draw(rng, rng.choice(["unary", "binary", "dot", "collective"],
                                  p=[.3, .3, .2, .2]), names, steps)
            continue
        kind = str(rng.choice(INDEXED))
        if kind == "pad":
            # Low and high from -1 (a cut) to 3, interior 0 to 2: never an
            # empty dim.
            extra = (tuple((int(rng.integers(-1, 4)), int(rng.integers(-1, 4)),
                            int(rng.integers(0, 3))) for _ in range(2)),
                     str(rng.choice(["literal", "max", "element"])))
        elif kind == "pad_grad":
            extra = (int(rng.integers(0, 2)), int(rng.integers(1, 3)))
        elif kind == "at_add":
            extra = (str(rng.choice(["rows", "elements", "window",
                                     "vector"])),
                     SCATTER_MODES[int(rng.integers(len(SCATTER_MODES)))],
                     int(rng.integers(-3, 3)))
        elif kind in ("take_along", "take_grad", "take_along_grad"):
            extra = (int(rng.integers(2)),
                     str(rng.choice(["fill", "clip", "promise_in_bounds"])),
                     int(rng.integers(-3, 3)))
        elif kind == "top_k":
            extra = (int(rng.integers(1, c + 1)),)
        else:
            extra = (int(rng.integers(2)),)
        steps.append(("indexed", kind) + extra)
    desc = (f"indexed seed {seed}: {dtype}, mesh {names} rows over "
            f"{shard_axes}, x {x.shape}, steps {steps}")

    def build(jax):
        import jax.numpy as jnp
        from jax import lax
        from jax.sharding import Mesh, PartitionSpec as P

        dt = getattr(jnp, dtype)
        devices = np.array(jax.devices()[:4])
        mesh = Mesh(devices.reshape(2, 2) if two_d else devices, names)

        def ids_of(x0, col, n, off, mode):
            """int32 indices from the input's column `col`: some past
            either end of [0, n) (repeats too), in range for
            promise_in_bounds."""
            i = (x0[:, col % c].astype(jnp.float32) * 4.0).astype(
                jnp.int32) + off
            return i % n if mode == "promise_in_bounds" else i

        def fit(p):
            """p cut or zero-padded back to the block's [r, c]: a pad,
            negative where p is larger (a fresh array, where a slice
            would be a view of p)."""
            return lax.pad(p, jnp.zeros((), p.dtype),
                           [(0, r - p.shape[0], 0), (0, c - p.shape[1], 0)])

        def step(kind, extra, v, x0):
            if kind == "pad":
                config, value = extra
                pv = {"literal": jnp.asarray(1.5, v.dtype),
                      "max": jnp.max(v), "element": v[r - 1, 0]}[value]
                return fit(lax.pad(v, pv, list(config)))
            if kind == "pad_grad":
                start, stride = extra
                return jax.grad(lambda t: jnp.sum(
                    jnp.sin(t[start:, ::stride].astype(jnp.float32))))(v)
            if kind == "sign":
                s = jnp.sign(x0) if extra[0] else jnp.sign(
                    (x0.astype(jnp.float32) * 4.0).astype(jnp.int32)
                ).astype(v.dtype)
                return v * s + s
            if kind == "isfinite":
                ok = jnp.isfinite(v)
                rows = (jnp.all(ok, axis=1, keepdims=True) if extra[0] else
                        jnp.any(~ok, axis=1, keepdims=True))
                return jnp.where(ok, v, jnp.asarray(-7.0, v.dtype)) + \
                    rows.astype(v.dtype)
            if kind == "at_add":
                form, mode, off = extra
                kw = {} if mode is None else {"mode": mode}
                ids = ids_of(x0, 0, r, off, mode)
                if form == "rows":
                    rolled = jnp.concatenate([v[1:], v[:1]], axis=0)
                    return v.at[ids].add(rolled * 2, **kw)
                if form == "elements":
                    cols = ids_of(x0, 1, c, -off, mode)
                    return v.at[ids, cols].add(v[:, 1], **kw)
                if form == "window":
                    return v.at[ids, 1:3].add(v[:, :2], **kw)
                col = v[:, 0].at[ids].add(v[:, 2], **kw)
                return jnp.concatenate([col[:, None], v[:, 1:]], axis=1)
            if kind == "top_k":
                # The values of the computed block, the indices of the
                # input's (exact: no tie moved by an ulp). top_k orders NaN
                # by its sign bit (-NaN last), which arithmetic does not
                # define (x86's cos(inf) is -NaN in XLA, +NaN in libm): the
                # block's NaNs become inf first (XLA folds a where that
                # makes them +NaN into nothing).
                k = extra[0]
                vals = lax.top_k(jnp.where(jnp.isnan(v), jnp.inf, v), k)[0]
                idx = lax.top_k(x0, k)[1].astype(v.dtype)
                return fit(jnp.concatenate([vals, idx, v], axis=1))
            axis, mode, off = extra
            n = v.shape[axis]
            if kind == "take_grad":
                # jnp.take has no promise_in_bounds: its "wrap" (ids % n).
                ids = ids_of(x0, 2, n, off, None)
                take_mode = "wrap" if mode == "promise_in_bounds" else mode
                return jax.grad(lambda t: jnp.sum(jnp.sin(jnp.take(
                    t, ids, axis=axis, mode=take_mode).astype(
                        jnp.float32))))(v)
            idx = (x0.astype(jnp.float32) * 4.0).astype(jnp.int32) + off
            if mode == "promise_in_bounds":
                idx = idx % n
            if axis == 1:
                idx = idx[:, :2]
            if kind == "take_along":
                g = jnp.take_along_axis(v, idx, axis=axis, mode=mode)
                return fit(jnp.concatenate([g, v], axis=1))
            # take_along_grad
            return jax.grad(lambda t: jnp.sum(jnp.take_along_axis(
                t, idx, axis=axis, mode=mode).astype(jnp.float32) ** 2))(v)

        def body(v, wv):
            x0 = v
            for s in steps:
                if s[0] == "indexed":
                    v = step(s[1], s[2:], v, x0)
                else:
                    v = _apply(jax, s, v, wv, tame=True)
            return v

        f = jax.shard_map(body, mesh=mesh, in_specs=(P(shard_axes), P()),
                          out_specs=P(shard_axes), check_vma=False)
        return f, (np.asarray(jnp.asarray(x, dt)),
                   np.asarray(jnp.asarray(w, dt)))

    return desc, dtype, build
