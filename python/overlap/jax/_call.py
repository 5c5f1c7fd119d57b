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

import atexit
import ctypes
import functools
import hashlib
import math
import numbers
import os
import shutil
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from . import global_outputs, lower_program
from ._grad import (backward_function, differentiable,
                    pspec as _pspec, zero_cotangent)
from . import _ffi

#: The longest wait a layer's call may be given: the rendezvous adds it to
#: a steady clock counted in int64 nanoseconds, and jax.distributed's
#: key-value store takes it as an int32 of milliseconds (about 24.8 days).
MAX_TIMEOUT_MS = 2**31 - 1


#: The layer's step bound (``timeout_ms``) when none is given: how long a
#: device's call waits for the others of its step (CPU: the rendezvous; GPU:
#: each wait and drain of the rank's context).
DEFAULT_TIMEOUT_MS = 60000
#: The layer's creation bound on GPUs (``init_timeout_ms``) when none is
#: given: how long a process waits for rank 0's NCCL id in jax.distributed's
#: key-value store, and then for NCCL's init of the layer's communicator.
#: Generous: the other processes may still be compiling the same layer.
DEFAULT_INIT_TIMEOUT_MS = 600000
#: Environment variables that set the two bounds when the call gives none.
TIMEOUT_ENV = "OVERLAP_JAX_TIMEOUT_MS"
INIT_TIMEOUT_ENV = "OVERLAP_JAX_INIT_TIMEOUT_MS"


def _timeout_ms(value, name: str = "timeout_ms",
                what: str = "how long a device's call waits for the others "
                            "of its step") -> int:
    """`value` as the whole milliseconds the C API takes (a fraction
    rounds up), or a ValueError naming the argument and its range."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(
            f"{name}={value!r}: must be a number of milliseconds, "
            f"1 to {MAX_TIMEOUT_MS}")
    if not math.isfinite(value) or value <= 0 or value > MAX_TIMEOUT_MS:
        raise ValueError(
            f"{name}={value!r}: must be a number of milliseconds, "
            f"> 0 and at most {MAX_TIMEOUT_MS} (about 24.8 days: {what})")
    return max(1, math.ceil(value))


def resolve_timeouts(timeout_ms=None, init_timeout_ms=None) -> Tuple[int, int]:
    """The layer's (step, creation) bounds in ms: each the argument when
    given, else its environment variable (TIMEOUT_ENV, INIT_TIMEOUT_ENV),
    else its default (DEFAULT_TIMEOUT_MS, DEFAULT_INIT_TIMEOUT_MS). A bad
    value is a ValueError naming the argument or the variable."""
    def one(value, name, env, default, what):
        if value is not None:
            return _timeout_ms(value, name, what)
        text = os.environ.get(env, "").strip()
        if not text:
            return default
        try:
            number = float(text)
        except ValueError:
            number = text
        return _timeout_ms(number, env, what)
    return (one(timeout_ms, "timeout_ms", TIMEOUT_ENV, DEFAULT_TIMEOUT_MS,
                "how long a device's call waits for the others of its "
                "step"),
            one(init_timeout_ms, "init_timeout_ms", INIT_TIMEOUT_ENV,
                DEFAULT_INIT_TIMEOUT_MS,
                "how long a GPU layer's creation waits for rank 0's NCCL id "
                "and for NCCL's init"))


class NcclIdKeys:
    """The keys under which rank 0 publishes an NCCL id in jax.distributed's
    key-value store: one id per shared device context (DeviceContexts), not
    per layer. Every process must name the same context by the same key
    without talking to the others, and no two may share one: the key is
    ``overlap.jax.jit/context/{digest}/{n}``, the digest of what makes the
    context (context_digest: platform, the mesh's device ids, the wait
    bound; the same on every process of an SPMD program) and how many
    contexts with that digest this process made before. Processes that
    make their contexts in the same order (as SPMD programs do) derive the
    same keys. (``digest`` names what makes a layer.)"""

    PREFIX = "overlap.jax.jit"

    def __init__(self):
        self._lock = threading.Lock()
        self._made: Dict[str, int] = {}

    @staticmethod
    def digest(mlir: str, strategy, profile, axes, sizes, device_ids) -> str:
        h = hashlib.sha256()
        for part in (mlir, str(strategy), str(profile or ""),
                     ",".join(map(str, axes)), ",".join(map(str, sizes)),
                     ",".join(map(str, device_ids))):
            h.update(part.encode())
            h.update(b"\0")
        return h.hexdigest()[:16]

    @staticmethod
    def context_digest(platform: str, device_ids, timeout_ms: int) -> str:
        """What makes a shared device context (DeviceContexts): the mesh's
        devices in rank order, their platform and the wait bound, the same
        on every process of an SPMD program."""
        h = hashlib.sha256()
        for part in ("context", platform, ",".join(map(str, device_ids)),
                     str(timeout_ms)):
            h.update(part.encode())
            h.update(b"\0")
        return h.hexdigest()[:16]

    def next_key(self, name: str, digest: str) -> str:
        with self._lock:
            n = self._made.get(digest, 0)
            self._made[digest] = n + 1
        return f"{self.PREFIX}/{name}/{digest}/{n}"


#: This process's keys (one counter per process, as every process has).
_nccl_id_keys = NcclIdKeys()


def exchange_unique_id(client, key: str, rank: int, make_id,
                       timeout_ms: int, layer: str) -> bytes:
    """Rank 0's NCCL id for every rank of a GPU layer, through `client`
    (jax.distributed's key-value client: ``key_value_set`` raises on a key
    that exists, ``blocking_key_value_get(key, timeout_in_ms)`` raises at
    the bound). Rank 0 makes the id (`make_id()`, 128 bytes) and sets it
    under `key`; the others wait up to `timeout_ms` for it. A key that is
    already set is an error naming the layer (never an old id taken into
    NCCL's init), as is a rank that waited past the bound."""
    if rank == 0:
        uid = bytes(make_id())
        try:
            client.key_value_set(key, uid.hex())
        except Exception as err:
            raise RuntimeError(
                f"{layer}: cannot publish rank 0's NCCL id: the key {key!r} "
                f"is already set in jax.distributed's key-value store (or "
                f"the store refused it): another layer, or an earlier "
                f"making of this one, used it; the other ranks could take "
                f"its old id. Every process must make its layers in the same "
                f"order ({err})") from None
        return uid
    start = time.monotonic()
    try:
        text = client.blocking_key_value_get(key, timeout_ms)
    except Exception as err:
        waited = int((time.monotonic() - start) * 1000)
        raise RuntimeError(
            f"{layer}: rank {rank} waited {waited} ms (bound: "
            f"init_timeout_ms={timeout_ms}) for rank 0's NCCL id under the "
            f"key {key!r} in jax.distributed's key-value store and did not "
            f"get it: rank 0 failed before publishing it (its own error "
            f"says why), is later than the bound, or made its layers in "
            f"another order. Raise the bound with init_timeout_ms= or "
            f"{INIT_TIMEOUT_ENV} ({err})") from None
    uid = bytes.fromhex(text)
    if len(uid) != 128:
        raise RuntimeError(f"{layer}: the NCCL id under {key!r} has "
                           f"{len(uid)} bytes, not 128")
    return uid


def mesh_platform(devices) -> str:
    """The platform the layer runs on: its mesh's devices' (not JAX's
    default backend, which may be another), one platform for all."""
    platforms = sorted({d.platform for d in devices})
    if len(platforms) != 1:
        raise RuntimeError(f"the layer's mesh mixes platforms {platforms}")
    return platforms[0]


def gpu_job_check(name: str, devices, process_count: int,
                  process_index: int):
    """On GPUs a layer runs one rank per process and GPU: every process of
    the job holds exactly one of the mesh's devices, in process order
    (rank r = the device at row-major position r = process r). Returns
    (ranks, rank, this process's device); refuses with the reason, before
    anything is compiled."""
    devices = list(devices)
    mine = [d for d in devices if d.process_index == process_index]
    if len(mine) != 1:
        raise RuntimeError(
            f"{name}: on GPUs an Overlap layer runs one rank per process and "
            f"GPU (jax.distributed.initialize, one local device each: e.g. "
            f"CUDA_VISIBLE_DEVICES=<local rank> per process); this process "
            f"holds {len(mine)} of the mesh's {len(devices)} devices. Nothing "
            f"was compiled")
    order = [d.process_index for d in devices]
    if process_count != len(devices) or order != list(range(process_count)):
        raise RuntimeError(
            f"{name}: the mesh's devices must be the job's processes in "
            f"order (device of process r at row-major position r); the "
            f"job has {process_count} processes, the mesh holds processes "
            f"{order}. Nothing was compiled")
    return process_count, process_index, mine[0]


class NativeDeviceContexts:
    """The host C API's device contexts (overlapDeviceContext*,
    include/overlap-c/Loader.h): what DeviceContexts calls, and what a test
    without a GPU replaces."""

    @staticmethod
    def _api():
        from .. import native
        return native.host_api()

    @staticmethod
    def _text(api, messages) -> str:
        text = ctypes.string_at(messages.value).decode() \
            if messages.value else "?"
        api.overlapFree(messages)
        return text.strip()

    def unique_id(self) -> bytes:
        api = self._api()
        messages = ctypes.c_void_p()
        made = (ctypes.c_uint8 * 128)()
        if api.overlapCudaUniqueId(made, ctypes.byref(messages)):
            raise RuntimeError(self._text(api, messages))
        return bytes(made)

    def create(self, uid: Optional[bytes], ranks: int, rank: int,
               device: int, timeout_ms: int, init_timeout_ms: int) -> int:
        api = self._api()
        messages = ctypes.c_void_p()
        status = ctypes.c_int()
        buf = (ctypes.c_uint8 * 128).from_buffer_copy(uid) if uid else None
        handle = api.overlapDeviceContextCreate(
            buf, ranks, rank, device, timeout_ms, init_timeout_ms,
            ctypes.byref(status), ctypes.byref(messages))
        if not handle:
            raise RuntimeError(self._text(api, messages))
        return handle

    def failure(self, handle: int) -> Optional[str]:
        api = self._api()
        messages = ctypes.c_void_p()
        if api.overlapDeviceContextStatus(handle, ctypes.byref(messages)):
            return self._text(api, messages)
        return None

    def layer(self, handle: int, path: str) -> int:
        api = self._api()
        messages = ctypes.c_void_p()
        status = ctypes.c_int()
        layer = api.overlapDeviceLayerCreateOn(
            handle, path.encode(), ctypes.byref(status),
            ctypes.byref(messages))
        if not layer:
            raise RuntimeError(self._text(api, messages))
        return layer

    def release(self, handle: int) -> None:
        self._api().overlapDeviceContextRelease(handle)

    def created(self) -> int:
        return int(self._api().overlapDeviceContextsCreated())


@dataclass
class _SharedContext:
    handle: Optional[int]  # None: its creation failed (`error` says why)
    ranks: int
    rank: int
    device_ids: Tuple[int, ...]
    error: Optional[str] = None  # set once it failed


class DeviceContexts:
    """This process's device contexts, one per (platform, the mesh's
    devices in rank order, this process, wait bound): every layer, input
    shape and backward of overlap.jax.jit on that mesh is made on it, so a
    process has one set of streams and one NCCL communicator per mesh, and
    rank 0's NCCL id is exchanged once (NcclIdKeys: one key per context).
    The cache holds its reference until the process exits (release_all,
    at exit); each layer holds one of its own (the C API's), so a layer
    dropped leaves the others working. Never dropped earlier: a
    communicator of several processes must be made again by all of them
    alike, which a drop that depends on each process's garbage collection
    would not be.

    A context that failed (a wait past its bound, a failed collective or
    call: it stays failed, for every layer on it) is never handed to a new
    layer: alone on its device (one rank) a new one replaces it in the
    cache; of several processes the new layer is refused with the failure
    (the others may still use their ranks of the old communicator, and a
    new one needs every process), as is every later layer on a mesh whose
    context could not be made. Thread-safe."""

    def __init__(self, native=None, keys: Optional[NcclIdKeys] = None):
        self.native = native if native is not None else \
            NativeDeviceContexts()
        self.keys = keys if keys is not None else NcclIdKeys()
        self._lock = threading.Lock()
        self._entries: Dict[Any, _SharedContext] = {}
        #: Contexts this process made (each creation, also a remake).
        self.created = 0

    @staticmethod
    def key(platform: str, device_ids, process_index: int,
            timeout_ms: int):
        return (platform, tuple(device_ids), process_index, timeout_ms)

    def _refuse(self, name: str, entry: _SharedContext) -> RuntimeError:
        made = entry.handle is not None
        return RuntimeError(
            f"{name}: this process's GPU context for the mesh of devices "
            f"{list(entry.device_ids)} (rank {entry.rank} of {entry.ranks}) "
            + ("failed" if made else "could not be made")
            + f": {entry.error}. A communicator of several processes is "
            f"made again only by all of them together, so no layer is made "
            f"on this mesh any more in this process: restart the job "
            f"(every process)")

    def acquire(self, name: str, platform: str, device_ids, ranks: int,
                rank: int, device: int, timeout_ms: int,
                init_timeout_ms: int, client=None) -> int:
        """The shared context's handle for a layer named `name` (made now
        when there is none, collective over the `ranks` processes; rank 0's
        NCCL id through `client()`, jax.distributed's key-value client, when
        `ranks` > 1). Refused with the reason as the class says."""
        device_ids = tuple(device_ids)
        key = self.key(platform, device_ids, rank, timeout_ms)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.error is None:
                why = self.native.failure(entry.handle)
                if why is None:
                    return entry.handle
                entry.error = why
            if entry is not None:
                if entry.ranks > 1:
                    raise self._refuse(name, entry)
                # One rank alone: a new context replaces the failed one
                # (the layers still on it keep failing with its error).
                if entry.handle is not None:
                    self.native.release(entry.handle)
                del self._entries[key]
            uid = None
            if ranks > 1:
                digest = NcclIdKeys.context_digest(platform, device_ids,
                                                   timeout_ms)
                id_key = self.keys.next_key("context", digest)
                try:
                    uid = exchange_unique_id(
                        client(), id_key, rank, self.native.unique_id,
                        init_timeout_ms, name)
                    handle = self.native.create(uid, ranks, rank, device,
                                                timeout_ms, init_timeout_ms)
                except Exception as err:
                    # Every process failed or will fail at this creation
                    # (or waits out its bound): none makes another.
                    text = str(err).strip()
                    self._entries[key] = _SharedContext(
                        None, ranks, rank, device_ids, error=text)
                    raise RuntimeError(text if text.startswith(name)
                                       else f"{name}: {text}") from None
            else:
                handle = self.native.create(None, 1, 0, device, timeout_ms,
                                            init_timeout_ms)
            self.created += 1
            self._entries[key] = _SharedContext(handle, ranks, rank,
                                                device_ids)
            return handle

    def layer(self, name: str, path: str, **where) -> int:
        """A device layer of the program `path` on the shared context
        (acquire's arguments in `where`)."""
        handle = self.acquire(name, **where)
        return self.native.layer(handle, path)

    def release_all(self) -> None:
        """Drops the cache's references (at exit): each context goes with
        the last layer on it."""
        with self._lock:
            entries, self._entries = self._entries, {}
        for entry in entries.values():
            if entry.handle is not None:
                try:
                    self.native.release(entry.handle)
                except Exception:
                    pass


#: This process's shared device contexts.
_device_contexts = DeviceContexts(keys=_nccl_id_keys)
atexit.register(lambda: _device_contexts.release_all())


def _kv_client(name: str, ranks: int):
    """jax.distributed's key-value client, which carries rank 0's NCCL id
    to the other processes."""
    from jax._src import distributed
    client = distributed.global_state.client
    if client is None:
        raise RuntimeError(
            f"{name}: a GPU layer of {ranks} ranks needs "
            f"jax.distributed.initialize() first (its key-value store "
            f"carries rank 0's NCCL id)")
    return client


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
                 profile: Optional[str] = None,
                 timeout_ms: Optional[float] = None,
                 differentiable: bool = True,
                 init_timeout_ms: Optional[float] = None):
        self.timeout_ms, self.init_timeout_ms = resolve_timeouts(
            timeout_ms, init_timeout_ms)
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

    @property
    def backward(self) -> Optional["Layer"]:
        """The layer of the backward of the signature compiled or called
        last (its own shard_map, imported, compiled and planned the same
        way: ``layer.backward.plans``), once ``jax.grad`` has reached it;
        None before, or when the layer is not differentiable."""
        return self._last.backward if self._last else None

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
        return (tree,) + tuple((tuple(np.shape(a)), str(a.dtype),
                                _weak(a)) for a in leaves)

    def _compile(self, args) -> _Compiled:
        import jax
        from .. import compiler, native
        structs = jax.tree_util.tree_map(
            lambda a: jax.ShapeDtypeStruct(np.shape(a), a.dtype,
                                           weak_type=_weak(a)), args)
        # Every refusal (an argument of a type a compiled program does not
        # carry, ...) is raised here, all at once, before anything is made.
        low = lower_program(self.f, *structs)
        name = low.entry
        # The mesh's platform, not the default backend's.
        mesh_devices = list(low.mesh.devices.flat)
        platform = mesh_platform(mesh_devices)
        gpu = platform in ("gpu", "cuda")
        if not gpu and platform != "cpu":
            raise RuntimeError(f"{name}: an Overlap layer runs on CPU and "
                               f"CUDA devices, not {platform}")
        if gpu:
            # Before compiling: a job that cannot run the layer (8 GPUs in
            # one process) is refused at once, with the reason.
            gpu_job_check(name, mesh_devices, jax.process_count(),
                          jax.process_index())
        devices = jax.devices("cpu") if not gpu else mesh_devices
        if not gpu and len(devices) < low.ranks:
            raise RuntimeError(
                f"{name}: the layer's mesh has {low.ranks} devices "
                f"({dict(zip(low.axes, low.sizes))}) but JAX has "
                f"{len(devices)} CPU device(s): set XLA_FLAGS="
                f"--xla_force_host_platform_device_count={low.ranks} before "
                f"importing jax")
        out_tree = jax.tree_util.tree_structure(
            jax.eval_shape(self.f, *structs))
        if not low.out_shapes:
            # f returns only its arguments (and constants): nothing to
            # compile or call.
            compiled = _Compiled(low=low, plans=[], missed=[], path="",
                                 step=0, layer_id=0, out_tree=out_tree,
                                 gpu=gpu)
            self.compiles += 1
            return compiled
        # The handler first: a cache that is refused stops here, before a
        # step is made.
        _ffi.register("CUDA" if gpu else "cpu")
        path = os.path.join(self._dir, f"{name}-{len(self._cache)}.so")
        try:
            prog = compiler.compile(low.mlir, strategy=self.strategy,
                                    profile=self.profile, output=path,
                                    target="cuda" if gpu else None,
                                    source_name=getattr(self.f, "__name__",
                                                        None))
        except compiler.CompileError as err:
            # The importer's text that does not parse is the importer's
            # bug: say so, with its line and the primitive that wrote it.
            from . import importer_error
            better = importer_error(low, err)
            if better is None:
                raise
            raise better from err
        step = (self._device_layer(low, path) if gpu else
                self._host_step(low, path))
        layer_id = _ffi.register_layer(
            _ffi.DEVICE_LAYER if gpu else _ffi.HOST_STEP, step,
            inputs=low.param_dtypes, outputs=low.out_dtypes)
        self._handles.append(layer_id)
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, Layer._release, self._dir,
                                           list(self._handles))
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
        as jax.distributed starts them), a layer of `path` on the context
        that every layer of this process on the mesh shares
        (DeviceContexts: made by the first, rank 0's NCCL id through
        jax.distributed's key-value store once per context, within
        init_timeout_ms, which also bounds NCCL's init). Compiled, not yet
        run on a GPU (docs/jax.md)."""
        import jax
        name = low.entry
        devices = list(low.mesh.devices.flat)
        ranks, rank, device = gpu_job_check(
            name, devices, jax.process_count(), jax.process_index())
        contexts = _device_contexts
        try:
            return contexts.layer(
                name, path, platform=mesh_platform(devices),
                device_ids=[d.id for d in devices], ranks=ranks, rank=rank,
                device=device.local_hardware_id, timeout_ms=self.timeout_ms,
                init_timeout_ms=self.init_timeout_ms,
                client=lambda: _kv_client(name, ranks))
        except RuntimeError as err:
            text = str(err)
            raise RuntimeError(text if text.startswith("overlap.jax.jit")
                               else f"overlap.jax.jit: {text}") from None

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
        import jax.numpy as jnp
        low = c.low
        results = c.fn(*[leaves[a] for a in low.param_args]) if c.fn else ()
        # f's results: the entry's, and arguments f passes through (an
        # nnx.shard_map's state) as they are.
        return jax.tree_util.tree_unflatten(
            c.out_tree, global_outputs(low, list(results), leaves,
                                       asarray=jnp.asarray))

    # -- differentiate -------------------------------------------------------

    def _backward(self, c: _Compiled, leaves, cts):
        """The cotangents of f's leaves: the per-device vjp of the
        shard_map's body, in the same shard_map, compiled as a Layer. Only
        float arguments and results are differentiated: an integer or
        boolean leaf (token ids, labels, a step count) has a zero
        cotangent (float0, as JAX gives it)."""
        import jax
        import jax.numpy as jnp
        low = c.low
        ct_leaves = jax.tree_util.tree_leaves(cts)
        out = [zero_cotangent(x) for x in leaves]
        # Cotangents of the entry's results (summed where f returns one
        # twice); those of an argument f passes through go to it directly.
        result_cts: List[Any] = [None] * len(low.out_shapes)
        for (kind, what), ct in zip(low.outputs, ct_leaves):
            if not differentiable(getattr(ct, "dtype", None)):
                continue
            if kind == "result":
                result_cts[what] = ct if result_cts[what] is None else \
                    result_cts[what] + ct
            elif kind == "arg" and differentiable(leaves[what].dtype):
                out[what] = out[what] + ct if differentiable(
                    out[what].dtype) else ct
        wrt = [j for j, dt in enumerate(low.param_dtypes)
               if differentiable(dt)]
        through = [k for k, dt in enumerate(low.out_dtypes)
                   if differentiable(dt)]
        if wrt and through:
            if c.backward is None:
                c.backward = Layer(backward_function(low, wrt, through),
                                   strategy=self.strategy,
                                   profile=self.profile,
                                   timeout_ms=self.timeout_ms,
                                   init_timeout_ms=self.init_timeout_ms,
                                   differentiable=False)
            params = [leaves[a] for a in low.param_args]
            cts_in = [result_cts[k] if result_cts[k] is not None else
                      jnp.zeros(low.out_shapes[k], low.out_dtypes[k])
                      for k in through]
            grads = c.backward(*params, *cts_in)
            for j, g in zip(wrt, grads):
                a = low.param_args[j]
                out[a] = g if not differentiable(out[a].dtype) else \
                    out[a] + g
        return tuple(out)

def jit(f=None, *, strategy: str = "auto", profile: Optional[str] = None,
        timeout_ms: Optional[float] = None, differentiable: bool = True,
        init_timeout_ms: Optional[float] = None):
    """``f`` (a ``jax.shard_map`` layer) as a callable that works inside the
    user's ``jax.jit``-ed code: compiled by Overlap once per signature,
    run by Overlap's host backend (one rank per mesh device) through an XLA
    FFI call, or on GPUs one rank per process and GPU. ``timeout_ms``
    bounds how long a device's call waits for the other devices of its step
    (on GPUs: each wait and drain of the rank's context; default
    ``$OVERLAP_JAX_TIMEOUT_MS``, else 60000). ``init_timeout_ms`` bounds a
    GPU layer's creation: the wait for rank 0's NCCL id in jax.distributed's
    key-value store, and NCCL's init (default
    ``$OVERLAP_JAX_INIT_TIMEOUT_MS``, else 600000). Both in milliseconds,
    > 0 and at most ``MAX_TIMEOUT_MS``. Usable as a decorator
    (``@overlap.jax.jit(strategy="auto")``)."""
    resolve_timeouts(timeout_ms, init_timeout_ms)
    if f is None:
        return functools.partial(jit, strategy=strategy, profile=profile,
                                 timeout_ms=timeout_ms,
                                 differentiable=differentiable,
                                 init_timeout_ms=init_timeout_ms)
    return Layer(f, strategy=strategy, profile=profile,
                 timeout_ms=timeout_ms, differentiable=differentiable,
                 init_timeout_ms=init_timeout_ms)
