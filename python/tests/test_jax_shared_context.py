"""overlap.jax.jit's GPU path without a GPU (issue 50, item 4): one device
context (streams, NCCL communicator, one NCCL-id exchange) per process and
mesh, shared by every layer, input shape and backward, instead of one per
compiled signature. The host C API's context functions are replaced by a
fake that counts creations and references as the C API does (each layer
holds one, the cache one); the layers are traced, not run (no GPU)."""

import ctypes
import gc
import itertools
import threading
import types

import numpy as np
import pytest

from conftest import require_jax

jax = require_jax()
import jax.numpy as jnp  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import overlap.jax as ojax  # noqa: E402
from overlap import compiler  # noqa: E402
from overlap.jax import _call, _ffi  # noqa: E402
from test_jax_gpu_layer import FakeKeyValueClient  # noqa: E402


class FakeNative:
    """NativeDeviceContexts as the C API behaves: a context lives while the
    cache's handle or a layer on it does; a failed one refuses new layers
    and fails the calls of the layers on it."""

    def __init__(self):
        self.contexts = {}  # handle -> {"refs", "failed", "ranks", "uid"}
        self.layers = {}  # layer -> its context's handle
        self.uids = 0
        self._next = 100

    def unique_id(self):
        self.uids += 1
        return bytes(range(128))

    def create(self, uid, ranks, rank, device, timeout_ms, init_timeout_ms):
        self._next += 1
        self.contexts[self._next] = {"refs": 1, "failed": None,
                                     "ranks": ranks, "uid": uid}
        return self._next

    def failure(self, handle):
        return self.contexts[handle]["failed"]

    def layer(self, handle, path):
        ctx = self.contexts[handle]
        assert ctx["refs"] > 0, "a layer on a destroyed context"
        if ctx["failed"]:
            raise RuntimeError(f"overlap: error: failed earlier: "
                               f"{ctx['failed']}")
        ctx["refs"] += 1
        self._next += 1
        self.layers[self._next] = handle
        return self._next

    def _unref(self, handle):
        ctx = self.contexts[handle]
        ctx["refs"] -= 1
        assert ctx["refs"] >= 0

    def release(self, handle):
        self._unref(handle)

    def destroy_layer(self, layer):
        self._unref(self.layers.pop(layer))

    def call(self, layer):
        """What overlapDeviceLayerCall needs of the context."""
        ctx = self.contexts[self.layers[layer]]
        assert ctx["refs"] > 0
        if ctx["failed"]:
            raise RuntimeError(ctx["failed"])

    def alive(self):
        return [h for h, c in self.contexts.items() if c["refs"] > 0]


def mesh2():
    from jax.sharding import Mesh
    return Mesh(np.array(jax.devices("cpu")[:2]), ("x",))


class Dev:
    def __init__(self, id, local_hardware_id=0):
        self.id = id
        self.local_hardware_id = local_hardware_id


_layer_ids = itertools.count(1000)


@pytest.fixture
def gpu(monkeypatch):
    """A CPU mesh that the layer takes for GPUs of `job["ranks"]`
    processes, this one `job["rank"]`; compile, the FFI handler and the C
    API faked. Yields (fake native, contexts, key-value client, job,
    registry: layer id -> device layer)."""
    fake = FakeNative()
    contexts = _call.DeviceContexts(fake, keys=_call.NcclIdKeys())
    client = FakeKeyValueClient()
    job = {"ranks": 2, "rank": 0}
    registry = {}
    ids = []

    def job_check(name, devices, process_count, process_index):
        devices = list(devices)
        return job["ranks"], job["rank"], Dev(devices[job["rank"]].id)

    def register_layer(kind, obj, inputs=None, outputs=None):
        assert kind == _ffi.DEVICE_LAYER
        # Ids unique across tests: a layer of an earlier test collected now
        # releases its own id, never one of this test's.
        layer_id = next(_layer_ids)
        ids.append(layer_id)
        registry[layer_id] = obj
        return layer_id

    def release_layer(layer_id):
        if layer_id in ids:  # not an earlier test's layer collected now
            fake.destroy_layer(registry.pop(layer_id))

    monkeypatch.setattr(_call, "_device_contexts", contexts)
    monkeypatch.setattr(_call, "mesh_platform", lambda devices: "gpu")
    monkeypatch.setattr(_call, "gpu_job_check", job_check)
    monkeypatch.setattr(_call, "_kv_client", lambda name, ranks: client)
    monkeypatch.setattr(compiler, "compile", lambda *a, **k:
                        types.SimpleNamespace(plans=[], missed=[]))
    monkeypatch.setattr(_ffi, "register", lambda platform="cpu": None)
    monkeypatch.setattr(_ffi, "register_layer", register_layer)
    monkeypatch.setattr(_ffi, "release_layer", release_layer)
    yield fake, contexts, client, job, registry
    # This test's dropped layers are released while the fakes are in place.
    gc.collect()


def two_layers_of_one_name(mesh):
    """Two different layers whose functions are both named `body`."""
    def body(x, w):
        return jax.lax.psum(x @ w, "x")

    first = ojax.jit(jax.shard_map(body, mesh=mesh, in_specs=(P("x"), P()),
                                   out_specs=P()))

    def body(x, w):  # noqa: F811 - the point: one name, another layer
        return jax.lax.psum(jnp.tanh(x) @ w, "x")

    second = ojax.jit(jax.shard_map(body, mesh=mesh, in_specs=(P("x"), P()),
                                    out_specs=P()))
    return first, second


def trace(first, second, n):
    """Both layers at rows `n`, and the first one's backward: traced (what
    jax.jit does before it runs anything), not run."""
    x = np.ones((n, 8), np.float32)
    w = np.ones((8, 8), np.float32)

    def loss(x, w):
        return jnp.sum(second(first(x, w), w) ** 2)

    jax.make_jaxpr(jax.grad(loss, argnums=1))(x, w)


def test_one_context_per_process_for_two_layers_three_shapes_and_backward(
        gpu):
    fake, contexts, client, job, registry = gpu
    first, second = two_layers_of_one_name(mesh2())
    for n in (4, 8, 16):
        trace(first, second, n)
    # 3 shapes x (2 forwards + 2 backwards: grad runs through both) = 12
    # device layers, every one on one context.
    assert first.compiles == 3 and second.compiles == 3
    assert len(registry) == 12
    assert contexts.created == 1 and len(fake.contexts) == 1
    (handle,) = fake.contexts
    assert set(fake.layers.values()) == {handle}
    assert fake.contexts[handle]["refs"] == 1 + 12
    # Rank 0's NCCL id: made and published once, under the context's key.
    assert fake.uids == 1
    assert len(client.sets) == 1
    assert client.sets[0].startswith("overlap.jax.jit/context/")
    assert client.sets[0].endswith("/0")


def test_every_process_derives_the_contexts_key_and_gets_rank_zeros_id():
    client = FakeKeyValueClient()
    natives = [FakeNative() for _ in range(3)]
    got = {}

    def process(rank):
        contexts = _call.DeviceContexts(natives[rank],
                                        keys=_call.NcclIdKeys())
        where = dict(platform="gpu", device_ids=[0, 1, 2], ranks=3,
                     rank=rank, device=0, timeout_ms=60000,
                     init_timeout_ms=5000, client=lambda: client)
        handles = {contexts.layer(f"layer{i}", "p.so", **where)
                   for i in range(5)}
        got[rank] = (contexts.created, natives[rank].layers, handles)

    threads = [threading.Thread(target=process, args=(r,)) for r in (2, 1, 0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(got) == [0, 1, 2]
    for rank, native in enumerate(natives):
        assert got[rank][0] == 1 and len(native.contexts) == 1
        assert len(got[rank][1]) == 5
        (ctx,) = native.contexts.values()
        assert ctx["uid"] == bytes(range(128))
    assert natives[0].uids == 1 and natives[1].uids == natives[2].uids == 0
    assert len(client.sets) == 1


def test_threads_share_one_creation():
    fake = FakeNative()
    contexts = _call.DeviceContexts(fake, keys=_call.NcclIdKeys())
    where = dict(platform="gpu", device_ids=[0], ranks=1, rank=0, device=0,
                 timeout_ms=60000, init_timeout_ms=5000)
    barrier = threading.Barrier(8)

    def one():
        barrier.wait()
        contexts.layer("body", "p.so", **where)

    threads = [threading.Thread(target=one) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert contexts.created == 1 and len(fake.layers) == 8


def test_another_mesh_or_wait_bound_is_another_context():
    fake = FakeNative()
    contexts = _call.DeviceContexts(fake, keys=_call.NcclIdKeys())
    where = dict(platform="gpu", device_ids=[0], ranks=1, rank=0, device=0,
                 timeout_ms=60000, init_timeout_ms=5000)
    a = contexts.acquire("body", **where)
    assert contexts.acquire("body", **where) == a
    assert contexts.acquire("body", **dict(where, timeout_ms=1000)) != a
    assert contexts.acquire("body", **dict(where, device_ids=[3])) != a
    assert contexts.created == 3


def test_layers_keep_working_after_another_layer_is_dropped(gpu):
    fake, contexts, client, job, registry = gpu
    first, second = two_layers_of_one_name(mesh2())
    trace(first, second, 4)
    kept = {i for i, layer in registry.items()
            if layer in _layer_objects(second)}
    assert kept
    # What dropping `first` does when it is collected (its finalizer and
    # its backward's: the FFI registry destroys their device layers once no
    # call runs them).
    drop(first)
    drop(first)  # once only
    assert set(registry) == kept | _registry_ids(second)
    (handle,) = fake.contexts
    assert fake.alive() == [handle]
    for layer in registry.values():
        fake.call(layer)
    # New shapes of the layer left: on the same context.
    trace_second(second, 8)
    assert contexts.created == 1
    assert set(fake.layers.values()) == {handle}
    # At exit the cache's reference goes; the context goes with the last
    # layer.
    contexts.release_all()
    assert fake.alive() == [handle]
    drop(second)
    assert registry == {} and fake.layers == {}, fake.layers
    assert fake.alive() == []


def drop(layer):
    layer._finalizer()
    for c in layer._cache.values():
        if c.backward is not None:
            drop(c.backward)


def _layer_objects(layer):
    """The device layers a Layer (and its backward) made."""
    out = set()
    for c in layer._cache.values():
        out.add(c.step)
        if c.backward is not None:
            out |= _layer_objects(c.backward)
    return out


def _registry_ids(layer):
    ids = set(layer._handles)
    for c in layer._cache.values():
        if c.backward is not None:
            ids |= _registry_ids(c.backward)
    return ids


def trace_second(second, n):
    x = np.ones((n, 8), np.float32)
    w = np.ones((8, 8), np.float32)
    jax.make_jaxpr(second)(x, w)


def test_a_failed_context_of_several_processes_is_refused_with_the_reason(
        gpu):
    fake, contexts, client, job, registry = gpu
    first, second = two_layers_of_one_name(mesh2())
    trace_second(first, 4)
    (handle,) = fake.contexts
    why = ("OVERLAP_ERROR_TIMEOUT: rank 0 stream 1 waited 60000 ms for "
           "flag 3")
    fake.contexts[handle]["failed"] = why
    for _ in range(2):  # and stays refused
        with pytest.raises(RuntimeError) as err:
            trace_second(second, 4)
        text = str(err.value)
        assert why in text and "restart the job" in text
        assert "rank 0 of 2" in text
    assert contexts.created == 1 and len(fake.contexts) == 1
    assert fake.uids == 1 and len(client.sets) == 1


def test_a_failed_context_alone_on_its_device_is_replaced(gpu):
    fake, contexts, client, job, registry = gpu
    job["ranks"] = 1
    first, second = two_layers_of_one_name(mesh2())
    trace_second(first, 4)
    (old,) = fake.contexts
    old_layers = [layer for layer, h in fake.layers.items() if h == old]
    fake.contexts[old]["failed"] = "OVERLAP_ERROR_NCCL: unhandled cuda error"
    trace_second(second, 4)
    assert contexts.created == 2
    new = max(fake.contexts)
    assert new != old
    # The new layer is on the new context; the cache no longer holds the
    # old one, whose layers keep failing with its error.
    assert fake.layers[max(fake.layers)] == new
    assert fake.contexts[old]["refs"] == len(old_layers)
    with pytest.raises(RuntimeError, match="unhandled cuda error"):
        fake.call(old_layers[0])
    trace_second(first, 8)  # a new shape of the first: the new context too
    assert contexts.created == 2
    assert fake.uids == 0 and client.sets == []


def test_a_context_that_could_not_be_made_refuses_later_layers(gpu):
    fake, contexts, client, job, registry = gpu
    job["rank"] = 1  # rank 0 never publishes: the wait runs out
    first, second = two_layers_of_one_name(mesh2())
    for layer in (first, second):
        layer.init_timeout_ms = 100
    with pytest.raises(RuntimeError, match="waited"):
        trace_second(first, 4)
    with pytest.raises(RuntimeError, match="could not be made"):
        trace_second(second, 4)
    assert contexts.created == 0 and fake.contexts == {}


# -- the C API without a CUDA backend ----------------------------------------

def test_c_api_without_a_device(host_api):
    api = host_api
    messages = ctypes.c_void_p()
    status = ctypes.c_int(-1)
    made = api.overlapDeviceContextsCreated()
    if api.overlapCudaUniqueId((ctypes.c_uint8 * 128)(),
                               ctypes.byref(messages)) == 0:
        pytest.skip("this machine has a CUDA device")
    api.overlapFree(messages)
    handle = api.overlapDeviceContextCreate(None, 1, 0, 0, 0, 0,
                                            ctypes.byref(status),
                                            ctypes.byref(messages))
    assert not handle and status.value == 3
    assert b"CUDA" in ctypes.string_at(messages.value)
    api.overlapFree(messages)
    assert api.overlapDeviceContextsCreated() == made
    layer = api.overlapDeviceLayerCreateOn(None, b"p.so", ctypes.byref(status),
                                           ctypes.byref(messages))
    assert not layer and status.value == 2
    assert b"no context" in ctypes.string_at(messages.value)
    api.overlapFree(messages)
    assert api.overlapDeviceContextStatus(None, ctypes.byref(messages)) == 2
    api.overlapFree(messages)
    api.overlapDeviceContextRelease(None)
