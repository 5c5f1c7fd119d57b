"""JAX out: an Overlap-compiled layer called from inside a JAX program.

    >>> layer = overlap.jax.jit(f, strategy="auto")
    >>> loss = jax.jit(lambda x, w1, w2: jnp.sum(layer(x, w1, w2) ** 2))
    >>> jax.grad(loss, argnums=1)(x, w1, w2)

``f`` is a ``jax.shard_map`` layer as ``overlap.jax.run`` takes it. The
layer is compiled once per signature (the leaves' shapes and dtypes: the
mesh is f's) and cached; each call lowers to a ``jax.shard_map`` whose
body is one XLA FFI custom call per device (``overlap_layer``,
``_ffi_handler.cc``): operand 0 the device's rank (``axis_index`` over the
mesh axes, row-major as Overlap numbers ranks), then its shards. On JAX's
CPU devices each device's call is one rank of Overlap's host backend: the
calls of one step meet in ``overlapStepCall`` (lib/Loader/
StepRendezvous.cpp), the last one runs the program on every rank, and each
device gets its blocks back. Differentiation: a ``custom_vjp`` whose
backward is the per-device vjp of f's body in the same shard_map,
imported and compiled by Overlap the same way (docs/jax.md, "Calling
Overlap from JAX").
"""

from __future__ import annotations

import ctypes
import functools
import math
import numbers
import os
import shutil
import tempfile
import weakref
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from . import UnsupportedError, lower_program
from . import _ffi

_RUNNABLE = ("float32", "float16", "bfloat16")

#: The longest wait a layer's call may be given: the rendezvous adds it to
#: a steady clock counted in int64 nanoseconds, and jax.distributed's
#: key-value store takes it as an int32 of milliseconds (about 24.8 days).
MAX_TIMEOUT_MS = 2**31 - 1


def _timeout_ms(value) -> int:
    """`timeout_ms` as the whole milliseconds the C API takes (a fraction
    rounds up), or a ValueError naming the argument and its range."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(
            f"timeout_ms={value!r}: must be a number of milliseconds, "
            f"1 to {MAX_TIMEOUT_MS}")
    if not math.isfinite(value) or value <= 0 or value > MAX_TIMEOUT_MS:
        raise ValueError(
            f"timeout_ms={value!r}: must be a number of milliseconds, "
            f"> 0 and at most {MAX_TIMEOUT_MS} (about 24.8 days: how long a "
            f"device's call waits for the others of its step)")
    return max(1, math.ceil(value))


def _weak(a) -> bool:
    """Whether `a` (an array or a tracer) is weakly typed, as a Python
    scalar made an array is: it then takes the other operand's dtype."""
    return bool(getattr(getattr(a, "aval", a), "weak_type", False))


def _as_arrays(args):
    """`args` with every leaf that is a Python scalar (bool, int, float,
    complex) made an array, as jax.jit does (weakly typed: a float is
    float32 unless jax_enable_x64)."""
    import jax
    import jax.numpy as jnp
    return jax.tree_util.tree_map(
        lambda a: a if hasattr(a, "dtype") else jnp.asarray(a), args)


def _pspec(spec):
    from jax.sharding import PartitionSpec as P
    return P(*[None if not names else
               (names[0] if len(names) == 1 else tuple(names))
               for names in spec])


def _local_shape(low, shape, spec) -> Tuple[int, ...]:
    out = []
    for d, names in zip(shape, spec):
        n = 1
        for name in names:
            n *= low.sizes[low.axes.index(name)]
        out.append(d // n)
    return tuple(out)


@dataclass
class _Compiled:
    low: Any
    plans: List[Dict[str, Any]]
    missed: List[Dict[str, Any]]
    path: str
    step: int  # the OverlapStep* (owned by the FFI handler's registry)
    layer_id: int  # its id in that registry: the FFI call's attribute
    out_tree: Any
    gpu: bool = False  # step is an OverlapDeviceLayer*, not an OverlapStep*
    fn: Any = None  # the shard_map that calls the handler
    backward: Any = None  # a Layer, when differentiable


class Layer:
    """What ``overlap.jax.jit(f)`` returns: callable like ``f`` inside
    ``jax.jit`` (and outside), compiled once per signature."""

    def __init__(self, f, *, strategy: str = "auto",
                 profile: Optional[str] = None, timeout_ms: float = 60000,
                 differentiable: bool = True):
        self.timeout_ms = _timeout_ms(timeout_ms)
        self.f = f
        self.strategy = strategy
        self.profile = profile
        self.differentiable = differentiable
        #: How many signatures were compiled (each once).
        self.compiles = 0
        self._cache: Dict[Any, _Compiled] = {}
        self._last: Optional[_Compiled] = None
        #: The FFI handler's ids of the compiled signatures' layers.
        self._handles: List[int] = []
        self._dir = tempfile.mkdtemp(prefix="overlap-jax-layer-")
        self._finalizer = weakref.finalize(self, Layer._release,
                                           self._dir, [])
        functools.update_wrapper(self, f, updated=())

    # -- what was compiled ---------------------------------------------------

    @property
    def plans(self) -> List[Dict[str, Any]]:
        """The plans of the signature compiled or called last, as
        ``overlap.jax.run`` gives them ("tiles", "strategy", ...)."""
        return list(self._last.plans) if self._last else []

    @property
    def missed(self) -> List[Dict[str, Any]]:
        return list(self._last.missed) if self._last else []

    @property
    def mlir(self) -> str:
        return self._last.low.mlir if self._last else ""

    def launches(self) -> int:
        """Steps the host ranks ran for the last signature."""
        if not self._last or self._last.gpu:
            return 0
        from .. import native
        return int(native.host_api().overlapStepLaunches(self._last.step))

    @staticmethod
    def _release(directory, handles):
        # The registry destroys each step once no call runs it; a program
        # compiled earlier that still names one gets an error saying so.
        try:
            for layer_id in handles:
                _ffi.release_layer(layer_id)
        except Exception:
            pass
        shutil.rmtree(directory, ignore_errors=True)

    # -- compile -------------------------------------------------------------

    def _key(self, args):
        import jax
        leaves, tree = jax.tree_util.tree_flatten(args)
        return (tree,) + tuple((tuple(np.shape(a)), str(np.dtype(a.dtype)),
                                _weak(a)) for a in leaves)

    def _compile(self, args) -> _Compiled:
        import jax
        from .. import compiler, native
        structs = jax.tree_util.tree_map(
            lambda a: jax.ShapeDtypeStruct(np.shape(a), a.dtype,
                                           weak_type=_weak(a)), args)
        low = lower_program(self.f, *structs)
        name = low.entry
        for i, dt in enumerate(low.out_dtypes):
            if np.dtype(dt).name not in _RUNNABLE:
                raise UnsupportedError(
                    f"result {i} of {name} is {np.dtype(dt).name}: an "
                    f"Overlap layer returns float32, float16 and bfloat16 "
                    f"arrays; convert it inside the shard_map")
        leaves = jax.tree_util.tree_leaves(structs)
        for a in low.param_args:
            if np.dtype(leaves[a].dtype).name not in _RUNNABLE:
                raise UnsupportedError(
                    f"argument {a} of {name} (a leaf, in jax.tree_util "
                    f"order) is {np.dtype(leaves[a].dtype).name}: an Overlap "
                    f"layer takes float32, float16 and bfloat16 arrays")
        devices = jax.devices()
        platform = devices[0].platform
        gpu = platform in ("gpu", "cuda")
        if not gpu and platform != "cpu":
            raise RuntimeError(f"{name}: an Overlap layer runs on CPU and "
                               f"CUDA devices, not {platform}")
        if not gpu and len(devices) < low.ranks:
            raise RuntimeError(
                f"{name}: the layer's mesh has {low.ranks} devices "
                f"({dict(zip(low.axes, low.sizes))}) but JAX has "
                f"{len(devices)} CPU device(s): set XLA_FLAGS="
                f"--xla_force_host_platform_device_count={low.ranks} before "
                f"importing jax")
        # The handler first: a cache that is refused stops here, before a
        # step is made.
        _ffi.register("CUDA" if gpu else "cpu")
        path = os.path.join(self._dir, f"{name}-{len(self._cache)}.so")
        prog = compiler.compile(low.mlir, strategy=self.strategy,
                                profile=self.profile, output=path,
                                target="cuda" if gpu else None,
                                source_name=getattr(self.f, "__name__",
                                                    None))
        step = (self._device_layer(low, path) if gpu else
                self._host_step(low, path))
        layer_id = _ffi.register_layer(
            _ffi.DEVICE_LAYER if gpu else _ffi.HOST_STEP, step)
        self._handles.append(layer_id)
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, Layer._release, self._dir,
                                           list(self._handles))
        out_tree = jax.tree_util.tree_structure(
            jax.eval_shape(self.f, *structs))
        compiled = _Compiled(low=low, plans=prog.plans, missed=prog.missed,
                             path=path, step=step, layer_id=layer_id,
                             out_tree=out_tree, gpu=gpu)
        compiled.fn = self._caller(compiled)
        self.compiles += 1
        return compiled

    @staticmethod
    def _failed(api, messages, what):
        text = ctypes.string_at(messages.value).decode() \
            if messages.value else "?"
        api.overlapFree(messages)
        return RuntimeError(f"overlap.jax.jit: {what}{text.strip()}")

    def _host_step(self, low, path) -> int:
        """The rendezvous of the devices' calls (host ranks)."""
        from .. import native
        api = native.host_api()
        options = api.overlapRunOptionsDefault()
        options.program = path.encode()
        options.ranks = low.ranks
        messages = ctypes.c_void_p()
        step = api.overlapStepCreate(ctypes.byref(options), self.timeout_ms,
                                     ctypes.byref(messages))
        if not step:
            raise self._failed(api, messages, "")
        return step

    def _device_layer(self, low, path) -> int:
        """This process's rank on its GPU (one process and GPU per rank,
        as jax.distributed starts them); rank 0's NCCL id goes to the
        others through jax.distributed's key-value store. Compiled, not yet
        run on a GPU (docs/jax.md)."""
        import jax
        from .. import native
        name = low.entry
        if jax.local_device_count() != 1:
            raise RuntimeError(
                f"{name}: on GPUs an Overlap layer runs one rank per process "
                f"and GPU (jax.distributed.initialize, one local device "
                f"each); this process has {jax.local_device_count()}")
        ranks, rank = jax.process_count(), jax.process_index()
        order = [d.process_index for d in low.mesh.devices.flat]
        if ranks != low.ranks or order != list(range(ranks)):
            raise RuntimeError(
                f"{name}: the mesh's devices must be the job's processes in "
                f"order (device of process r at row-major position r); the "
                f"job has {ranks} processes, the mesh holds processes "
                f"{order}")
        api = native.host_api()
        messages = ctypes.c_void_p()
        uid = None
        if ranks > 1:
            from jax._src import distributed
            client = distributed.global_state.client
            key = f"overlap.jax.jit/{name}/{len(self._handles)}"
            if rank == 0:
                uid = (ctypes.c_uint8 * 128)()
                if api.overlapCudaUniqueId(uid, ctypes.byref(messages)):
                    raise self._failed(api, messages, "")
                client.key_value_set(key, bytes(uid).hex())
            else:
                text = client.blocking_key_value_get(key, self.timeout_ms)
                uid = (ctypes.c_uint8 * 128).from_buffer_copy(
                    bytes.fromhex(text))
        status = ctypes.c_int()
        layer = api.overlapDeviceLayerCreate(
            path.encode(), uid, ranks, rank,
            jax.local_devices()[0].local_hardware_id, 0,
            ctypes.byref(status), ctypes.byref(messages))
        if not layer:
            raise self._failed(api, messages, "")
        return layer

    def _caller(self, c: _Compiled):
        """The shard_map whose body is the FFI call, over the program's
        parameters (global arrays)."""
        import jax
        import jax.numpy as jnp
        low = c.low
        _ffi.register("CUDA" if c.gpu else "cpu")
        outs = [jax.ShapeDtypeStruct(_local_shape(low, s, spec), dt)
                for s, spec, dt in zip(low.out_shapes, low.out_specs,
                                       low.out_dtypes)]
        # Under jax.vmap each device calls once per batch element, in the
        # same order on every device: every call is still one step.
        ffi = jax.ffi.ffi_call(_ffi.TARGET, outs, vmap_method="sequential")
        axes = tuple(low.axes)

        def per_device(*shards):
            rank = jax.lax.axis_index(axes).astype(jnp.int32)
            return tuple(ffi(rank, *shards, layer=np.int64(c.layer_id)))

        return jax.shard_map(
            per_device, mesh=low.mesh,
            in_specs=tuple(_pspec(s) for s in low.in_specs),
            out_specs=tuple(_pspec(s) for s in low.out_specs),
            check_vma=False)

    def compiled_for(self, *args) -> _Compiled:
        args = _as_arrays(args)
        key = self._key(args)
        c = self._cache.get(key)
        if c is None:
            c = self._compile(args)
            self._cache[key] = c
        self._last = c
        return c

    # -- call ----------------------------------------------------------------

    def __call__(self, *args):
        import jax
        args = _as_arrays(args)
        c = self.compiled_for(*args)
        leaves = jax.tree_util.tree_leaves(args)

        # Also without a backward, the call is a custom_vjp: its equation in
        # the traced program holds `apply`, and so this Layer and its
        # registered steps, as long as JAX keeps the program (a Layer made
        # inside jax.jit is otherwise collected when the trace ends, before
        # the program first runs).
        @jax.custom_vjp
        def apply(*xs):
            return self._apply(c, list(xs))

        def fwd(*xs):
            return apply(*xs), xs

        def bwd(xs, cts):
            if not self.differentiable:
                raise TypeError(
                    f"{c.low.entry}: this overlap.jax.jit layer was made "
                    f"with differentiable=False and has no backward; make "
                    f"it with differentiable=True to differentiate it")
            return self._backward(c, list(xs), cts)

        apply.defvjp(fwd, bwd)
        return apply(*leaves)

    def _apply(self, c: _Compiled, leaves):
        import jax
        outs = c.fn(*[leaves[a] for a in c.low.param_args])
        return jax.tree_util.tree_unflatten(c.out_tree, list(outs))

    # -- differentiate -------------------------------------------------------

    def _backward(self, c: _Compiled, leaves, cts):
        """The cotangents of f's leaves: the per-device vjp of the
        shard_map's body, in the same shard_map, compiled as a Layer."""
        import jax
        import jax.numpy as jnp
        low = c.low
        ct_leaves = jax.tree_util.tree_leaves(cts)
        if c.backward is None:
            c.backward = Layer(self._backward_function(low),
                               strategy=self.strategy, profile=self.profile,
                               timeout_ms=self.timeout_ms,
                               differentiable=False)
        params = [leaves[a] for a in low.param_args]
        grads = c.backward(*params, *ct_leaves)
        out = [jnp.zeros_like(x) for x in leaves]
        for j, a in enumerate(low.param_args):
            out[a] = out[a] + grads[j]
        return tuple(out)

    @staticmethod
    def _backward_function(low):
        import jax
        from jax.extend import core as jcore
        eqn = low.eqn
        body = eqn.params["jaxpr"]
        consts = list(getattr(body, "consts", []))
        body = getattr(body, "jaxpr", body)
        operands = low.operands
        n_params = len(low.param_args)

        run_body = jcore.jaxpr_as_fun(jcore.ClosedJaxpr(body, consts))

        def body_fun(*params):
            it = iter(params)
            vals = [next(it) if kind == "arg" else what
                    for kind, what in operands]
            return run_body(*vals)

        def per_device(*xs):
            params, cts = xs[:n_params], xs[n_params:]
            _, vjp = jax.vjp(body_fun, *params)
            return tuple(vjp(list(cts)))

        def backward(*xs):
            return jax.shard_map(
                per_device, mesh=low.mesh,
                in_specs=tuple(_pspec(s) for s in
                               list(low.in_specs) + list(low.out_specs)),
                out_specs=tuple(_pspec(s) for s in low.in_specs),
                check_vma=eqn.params.get("check_vma", True))(*xs)

        backward.__name__ = low.entry + "_backward"
        return backward


def jit(f=None, *, strategy: str = "auto", profile: Optional[str] = None,
        timeout_ms: float = 60000, differentiable: bool = True):
    """``f`` (a ``jax.shard_map`` layer) as a callable that works inside the
    user's ``jax.jit``-ed code: compiled by Overlap once per signature,
    run by Overlap's host backend (one rank per mesh device) through an XLA
    FFI call. ``timeout_ms`` bounds how long a device's call waits for the
    other devices of its step (milliseconds, > 0 and at most
    ``MAX_TIMEOUT_MS``). Usable as a decorator
    (``@overlap.jax.jit(strategy="auto")``)."""
    _timeout_ms(timeout_ms)
    if f is None:
        return functools.partial(jit, strategy=strategy, profile=profile,
                                 timeout_ms=timeout_ms,
                                 differentiable=differentiable)
    return Layer(f, strategy=strategy, profile=profile,
                 timeout_ms=timeout_ms, differentiable=differentiable)
