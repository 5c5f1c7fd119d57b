"""overlap.jax.jit's GPU path without a GPU (issue 50, items 2, 3, 9): the
NCCL-id key of a layer in jax.distributed's key-value store, the id's
exchange through a fake key-value client with jaxlib's semantics
(``key_value_set`` raises on an existing key, ``blocking_key_value_get``
raises at its bound), the layer's bounds (options and environment), and
the checks that refuse a job before anything is compiled (8 GPUs in one
process; a mesh not in process order), the platform taken from the mesh.
"""

import threading
import time

import pytest

jax = pytest.importorskip("jax")

from overlap.jax import _call  # noqa: E402


class FakeKeyValueClient:
    """jax.distributed's client, as far as the id exchange uses it."""

    def __init__(self):
        self._values = {}
        self._cond = threading.Condition()
        self.sets = []

    def key_value_set(self, key, value, allow_overwrite=False):
        with self._cond:
            if key in self._values and not allow_overwrite:
                raise RuntimeError(f"ALREADY_EXISTS: key {key} already exists")
            self._values[key] = value
            self.sets.append(key)
            self._cond.notify_all()

    def blocking_key_value_get(self, key, timeout_in_ms):
        deadline = time.monotonic() + timeout_in_ms / 1000
        with self._cond:
            while key not in self._values:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError(
                        f"DEADLINE_EXCEEDED: key {key} not found within "
                        f"{timeout_in_ms} ms")
                self._cond.wait(left)
            return self._values[key]


UID = bytes(range(128))


def digest(mlir="module {}", **kw):
    args = dict(strategy="auto", profile=None, axes=["x"], sizes=[2],
                device_ids=[0, 1])
    args.update(kw)
    return _call.NcclIdKeys.digest(mlir, **args)


# -- item 2: one key per layer and call --------------------------------------

def test_two_layers_of_one_name_get_two_keys():
    keys = _call.NcclIdKeys()
    a = keys.next_key("body", digest("module { a }"))
    b = keys.next_key("body", digest("module { b }"))
    assert a != b
    # The same layer made again (a notebook cell run twice) too.
    again = keys.next_key("body", digest("module { a }"))
    assert again not in (a, b)


def test_what_makes_the_layer_makes_the_key():
    base = digest()
    assert digest(strategy="none") != base
    assert digest(profile="h100.json") != base
    assert digest(sizes=[4], device_ids=[0, 1, 2, 3]) != base
    assert digest(device_ids=[2, 3]) != base
    assert digest() == base


def test_every_process_derives_the_same_keys_in_order():
    # Each process has its own counter; making the same layers in the same
    # order gives the same keys, with no communication.
    order = [digest("module { a }"), digest("module { b }"),
             digest("module { a }")]
    per_process = []
    for _ in range(4):
        keys = _call.NcclIdKeys()
        per_process.append([keys.next_key("body", d) for d in order])
    assert all(p == per_process[0] for p in per_process)
    assert len(set(per_process[0])) == 3


def test_the_old_fixed_key_would_collide():
    # What the key was (overlap.jax.jit/{name}/{n}, n the layer's own
    # count of signatures): two new layers of one function both used
    # "overlap.jax.jit/body/0". The new keys differ.
    keys = _call.NcclIdKeys()
    first = keys.next_key("body", digest("module { a }"))
    second = keys.next_key("body", digest("module { b }"))
    assert first.rsplit("/", 1)[-1] == second.rsplit("/", 1)[-1] == "0"
    assert first != second


def test_a_set_on_an_existing_key_names_the_layer():
    client = FakeKeyValueClient()
    client.key_value_set("overlap.jax.jit/body/abc/0", "00" * 128)
    with pytest.raises(RuntimeError) as err:
        _call.exchange_unique_id(client, "overlap.jax.jit/body/abc/0", 0,
                                 lambda: UID, 1000, "mlp_body")
    text = str(err.value)
    assert "mlp_body" in text and "overlap.jax.jit/body/abc/0" in text
    assert "already set" in text


def test_rank_zero_publishes_and_the_others_read():
    client = FakeKeyValueClient()
    assert _call.exchange_unique_id(client, "k", 0, lambda: UID, 1000,
                                    "L") == UID
    for rank in (1, 2, 3):
        assert _call.exchange_unique_id(
            client, "k", rank, lambda: pytest.fail("only rank 0 makes it"),
            1000, "L") == UID
    assert client.sets == ["k"]


# -- item 3: bounds ----------------------------------------------------------

def test_a_late_rank_zero_within_the_bound_is_waited_for():
    client = FakeKeyValueClient()
    got = {}

    def rank1():
        got["uid"] = _call.exchange_unique_id(client, "late", 1, None, 5000,
                                              "L")

    t = threading.Thread(target=rank1)
    t.start()
    time.sleep(0.3)  # rank 0 is late, within the bound
    _call.exchange_unique_id(client, "late", 0, lambda: UID, 5000, "L")
    t.join(10)
    assert got["uid"] == UID


def test_past_the_bound_names_the_key_and_the_bound():
    client = FakeKeyValueClient()
    start = time.monotonic()
    with pytest.raises(RuntimeError) as err:
        _call.exchange_unique_id(client, "overlap.jax.jit/f/d/0", 2, None,
                                 200, "layer_f")
    assert time.monotonic() - start < 5
    text = str(err.value)
    assert "overlap.jax.jit/f/d/0" in text
    assert "init_timeout_ms=200" in text
    assert "rank 2" in text and "layer_f" in text
    assert _call.INIT_TIMEOUT_ENV in text


def test_bounds_default_option_and_environment(monkeypatch):
    monkeypatch.delenv(_call.TIMEOUT_ENV, raising=False)
    monkeypatch.delenv(_call.INIT_TIMEOUT_ENV, raising=False)
    assert _call.resolve_timeouts() == (60000, 600000)
    monkeypatch.setenv(_call.TIMEOUT_ENV, "120000")
    monkeypatch.setenv(_call.INIT_TIMEOUT_ENV, "900000")
    assert _call.resolve_timeouts() == (120000, 900000)
    # An argument wins over the environment.
    assert _call.resolve_timeouts(5000, 7000) == (5000, 7000)
    monkeypatch.setenv(_call.INIT_TIMEOUT_ENV, "soon")
    with pytest.raises(ValueError, match=_call.INIT_TIMEOUT_ENV):
        _call.resolve_timeouts()
    with pytest.raises(ValueError, match="init_timeout_ms=0"):
        _call.resolve_timeouts(1000, 0)


def test_jit_takes_init_timeout_ms(monkeypatch):
    monkeypatch.delenv(_call.INIT_TIMEOUT_ENV, raising=False)
    import overlap.jax as ojax
    layer = ojax.jit(lambda x: x, init_timeout_ms=1234)
    assert layer.init_timeout_ms == 1234 and layer.timeout_ms == 60000
    with pytest.raises(ValueError, match="init_timeout_ms"):
        ojax.jit(lambda x: x, init_timeout_ms=-1)


# -- item 9: refused before compiling; the mesh's platform -------------------

class Dev:
    def __init__(self, id, process_index, platform="gpu"):
        self.id = id
        self.process_index = process_index
        self.platform = platform


def test_eight_gpus_in_one_process_are_refused_with_the_reason():
    devices = [Dev(i, 0) for i in range(8)]
    with pytest.raises(RuntimeError) as err:
        _call.gpu_job_check("body", devices, 1, 0)
    text = str(err.value)
    assert "one rank per process and GPU" in text
    assert "holds 8 of the mesh's 8 devices" in text
    assert "Nothing was compiled" in text


def test_a_mesh_out_of_process_order_is_refused():
    devices = [Dev(0, 1), Dev(1, 0)]
    with pytest.raises(RuntimeError, match=r"processes \[1, 0\]"):
        _call.gpu_job_check("body", devices, 2, 0)


def test_one_gpu_per_process_passes():
    devices = [Dev(10 + r, r) for r in range(4)]
    ranks, rank, mine = _call.gpu_job_check("body", devices, 4, 2)
    assert (ranks, rank, mine.id) == (4, 2, 12)


def test_platform_is_the_meshs():
    assert _call.mesh_platform([Dev(0, 0, "cpu"), Dev(1, 0, "cpu")]) == "cpu"
    assert _call.mesh_platform([Dev(0, 0, "gpu")]) == "gpu"
    with pytest.raises(RuntimeError, match="mixes platforms"):
        _call.mesh_platform([Dev(0, 0, "cpu"), Dev(1, 0, "gpu")])


def test_gpu_refusal_comes_before_the_compile(monkeypatch):
    # A CPU mesh whose devices claim to be GPUs of one process: the layer
    # is refused before overlap.compiler.compile is called.
    import numpy as np
    from jax.sharding import Mesh, PartitionSpec as P
    import overlap.jax as ojax
    from overlap import compiler

    cpus = jax.devices("cpu")
    if len(cpus) < 2:
        pytest.skip("needs 2 CPU devices")
    mesh = Mesh(np.array(cpus[:2]), ("x",))

    def f(x):
        return jax.lax.psum(x, "x")

    layer = ojax.jit(jax.shard_map(f, mesh=mesh, in_specs=P("x"),
                                   out_specs=P()))
    compiled = []
    monkeypatch.setattr(compiler, "compile",
                        lambda *a, **k: compiled.append(1))
    monkeypatch.setattr(_call, "mesh_platform", lambda devices: "gpu")
    with pytest.raises(RuntimeError, match="one rank per process and GPU"):
        layer(np.ones((4, 8), np.float32))
    assert not compiled
