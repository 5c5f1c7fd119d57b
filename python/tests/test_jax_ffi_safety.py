"""overlap.jax.jit's XLA FFI handler as an attack surface (issue 48, items
2, 3, 4, 10; docs/jax.md, "The handler's cache" and "What a call names"):

- a planted handler library (a constructor that leaves a marker file) in
  a cache that someone else could have written: a world-writable or
  other-user's directory, a symlinked directory or file, an other-user's
  or world-writable file, a writable directory or an other-user's symlink
  above the cache. Each is refused, naming the path, and the planted code
  never runs (each in a fresh process: the handler loads once per
  process);
- a forged XLA program naming the `overlap_layer` target: with the old
  raw-address attributes (a callback that records being called) and with
  a made-up layer id; it fails and calls nothing;
- a compiled program called after its Layer is deleted, and a layer made
  inside jax.jit with differentiable=False;
- overlap.jax.jit's arguments: Python scalars, timeout_ms out of range.
"""

import ctypes
import gc
import hashlib
import math
import os
import stat
import subprocess
import sys
import tempfile
import weakref

import numpy as np
import pytest

from conftest import ROOT, require_jax

jax = require_jax()

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

ojax = pytest.importorskip("overlap.jax")
from overlap.jax import _ffi  # noqa: E402

os.environ.setdefault("OVERLAP_JAX_FFI_CACHE",
                      tempfile.mkdtemp(prefix="overlap-jax-ffi-test-"))

OTHER_UID = 65534  # nobody

needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="making files of another user needs root")


# -- item 2: the handler's cache --------------------------------------------

def predicted_name():
    """The cached library's name as anyone can compute it (the handler's
    source and the jaxlib in use): what an attacker plants."""
    import jaxlib
    source = ROOT / "python" / "overlap" / "jax" / "_ffi_handler.cc"
    digest = hashlib.sha256()
    digest.update(source.read_bytes())
    digest.update(jaxlib.__version__.encode())
    digest.update(jax.ffi.include_dir().encode())
    return f"overlap_jax_ffi-{digest.hexdigest()[:16]}.so"


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """A library whose constructor writes the file $PLANTED_MARKER."""
    d = tmp_path_factory.mktemp("planted")
    src = d / "planted.c"
    src.write_text(
        '#include <stdio.h>\n#include <stdlib.h>\n'
        '__attribute__((constructor)) static void planted(void) {\n'
        '  const char *m = getenv("PLANTED_MARKER");\n'
        '  FILE *f = m ? fopen(m, "w") : NULL;\n'
        '  if (f) { fputs("planted code ran\\n", f); fclose(f); }\n}\n')
    lib = d / "planted.so"
    cc = os.environ.get("CC") or "cc"
    subprocess.run([cc, "-shared", "-fPIC", str(src), "-o", str(lib)],
                   check=True)
    return lib.read_bytes()


LOAD = """
import sys
sys.path.insert(0, {python!r})
from overlap.jax import _ffi
try:
    _ffi.register("cpu")
except Exception as err:
    print(type(err).__name__ + ": " + str(err))
    sys.exit(3)
print("loaded", _ffi.cache_dir())
"""


def load_handler(cache, marker):
    """Loads and registers the handler from `cache` in a fresh process."""
    env = dict(os.environ, OVERLAP_JAX_FFI_CACHE=str(cache),
               PLANTED_MARKER=str(marker), JAX_PLATFORMS="cpu")
    return subprocess.run(
        [sys.executable, "-c", LOAD.format(python=str(ROOT / "python"))],
        env=env, capture_output=True, text=True, timeout=300)


def plant(directory, data, mode=0o600):
    path = directory / predicted_name()
    path.write_bytes(data)
    os.chmod(path, mode)
    return path


def world_writable_dir(tmp, data):
    cache = tmp / "cache"
    cache.mkdir()
    plant(cache, data)
    os.chmod(cache, 0o777)
    return cache, cache


def other_users_dir(tmp, data):
    cache = tmp / "cache"
    cache.mkdir(mode=0o755)
    path = plant(cache, data, 0o644)
    os.chown(path, OTHER_UID, OTHER_UID)
    os.chown(cache, OTHER_UID, OTHER_UID)
    return cache, cache


def symlinked_dir(tmp, data):
    real = tmp / "real"
    real.mkdir(mode=0o700)
    plant(real, data)
    cache = tmp / "cache"
    cache.symlink_to(real)
    return cache, cache


def symlinked_file(tmp, data):
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    target = elsewhere / "planted.so"
    target.write_bytes(data)
    cache = tmp / "cache"
    cache.mkdir(mode=0o700)
    (cache / predicted_name()).symlink_to(target)
    return cache, cache / predicted_name()


def other_users_file(tmp, data):
    cache = tmp / "cache"
    cache.mkdir(mode=0o700)
    path = plant(cache, data, 0o644)
    os.chown(path, OTHER_UID, OTHER_UID)
    return cache, path


def world_writable_file(tmp, data):
    cache = tmp / "cache"
    cache.mkdir(mode=0o700)
    path = plant(cache, data, 0o666)
    return cache, path


def writable_dir_above(tmp, data):
    shared = tmp / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)  # not sticky: anyone may rename `cache`
    cache = shared / "cache"
    cache.mkdir(mode=0o700)
    plant(cache, data)
    return cache, shared


def other_users_link_above(tmp, data):
    mine = tmp / "mine"
    (mine / "cache").mkdir(parents=True, mode=0o700)
    plant(mine / "cache", data)
    link = tmp / "link"
    link.symlink_to(mine)
    os.lchown(link, OTHER_UID, OTHER_UID)
    return link / "cache", link


@needs_root
@pytest.mark.parametrize("attack", [
    world_writable_dir, other_users_dir, symlinked_dir, symlinked_file,
    other_users_file, world_writable_file, writable_dir_above,
    other_users_link_above], ids=lambda f: f.__name__)
def test_a_planted_cache_is_refused(tmp_path, planted, attack):
    cache, culprit = attack(tmp_path, planted)
    marker = tmp_path / "marker"
    done = load_handler(cache, marker)
    assert not marker.exists(), \
        f"the planted library's code ran: {done.stdout}{done.stderr}"
    assert done.returncode == 3, done.stdout + done.stderr
    assert "UnsafeCacheError" in done.stdout, done.stdout + done.stderr
    assert str(culprit) in done.stdout, done.stdout


def test_a_fresh_cache_is_private_and_reused(tmp_path):
    cache = tmp_path / "new" / "cache"
    marker = tmp_path / "marker"
    done = load_handler(cache, marker)
    assert done.returncode == 0, done.stdout + done.stderr
    st = os.lstat(cache)
    assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700
    assert stat.S_IMODE(os.lstat(cache.parent).st_mode) == 0o700
    library = cache / predicted_name()
    st = os.lstat(library)
    assert stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid()
    assert stat.S_IMODE(st.st_mode) & 0o022 == 0
    assert sorted(os.listdir(cache)) == [predicted_name()]  # no leftovers
    # Loaded again, not built again.
    done = load_handler(cache, marker)
    assert done.returncode == 0, done.stdout + done.stderr
    again = os.lstat(library)
    assert (again.st_ino, again.st_mtime_ns) == (st.st_ino, st.st_mtime_ns)
    assert not marker.exists()


# -- item 3: a forged FFI call ----------------------------------------------

StepCallType = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
    ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)
FreeType = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def test_a_forged_ffi_call_calls_nothing():
    _ffi.register("cpu")
    called = []
    call = StepCallType(lambda *a: called.append("call") or 0)
    free = FreeType(lambda p: called.append("free"))

    def address(fn):
        return np.int64(ctypes.cast(fn, ctypes.c_void_p).value)

    x = jnp.arange(4, dtype=jnp.float32) + 1
    forged = jax.ffi.ffi_call(_ffi.TARGET,
                              jax.ShapeDtypeStruct((4,), jnp.float32))
    # The old attributes: addresses the handler would call.
    with pytest.raises(Exception) as raised:
        jax.block_until_ready(jax.jit(lambda r, x: forged(
            r, x, step=np.int64(0x1234), call=address(call),
            release=address(free)))(np.int32(0), x))
    assert called == []
    assert "attributes" in str(raised.value), raised.value  # XLA says
    # A made-up layer id: nothing of that id is registered.
    made_up = 0x5eed_1234_abcd
    with pytest.raises(Exception, match=f"layer={made_up} names no host "
                                        f"layer of this process"):
        jax.block_until_ready(jax.jit(lambda r, x: forged(
            r, x, layer=np.int64(made_up)))(np.int32(0), x))
    assert called == []


@pytest.mark.usefixtures("native_libraries")
def test_a_forged_call_with_a_live_id_and_other_sizes_calls_nothing(mesh):
    # The id of a live layer is in the text of every program that calls it:
    # a program naming it with buffers of other sizes must be refused
    # before the step reads or writes them (the compiled code would read
    # past a smaller input and write past a smaller output).
    f = psum_layer(mesh)
    x = np.arange(8, dtype=np.float32) + 1
    layer = ojax.jit(f, timeout_ms=5000)
    assert np.array_equal(layer(x), f(x))
    (compiled,) = layer._cache.values()
    steps = compiled.fn  # the layer keeps working after the forged calls
    forged = jax.ffi.ffi_call(_ffi.TARGET,
                              jax.ShapeDtypeStruct((64,), jnp.float32))
    with pytest.raises(Exception, match=r"input 0 has \d+ bytes per rank, "
                                        r"but the call's buffer has 4"):
        jax.block_until_ready(jax.jit(lambda r, y: forged(
            r, y, layer=np.int64(compiled.layer_id)))(
                np.int32(0), np.ones(1, np.float32)))
    per_rank = x.size // len(mesh.devices.flat)
    small = jax.ffi.ffi_call(_ffi.TARGET,
                             jax.ShapeDtypeStruct((1,), jnp.float32))
    with pytest.raises(Exception, match=r"output 0 has \d+ bytes per rank, "
                                        r"but the call's buffer has 4"):
        jax.block_until_ready(jax.jit(lambda r, y: small(
            r, y, layer=np.int64(compiled.layer_id)))(
                np.int32(0), np.ones(per_rank, np.float32)))
    assert np.array_equal(layer(x * 2), f(x * 2))
    del steps


# -- item 4: a layer's lifetime ---------------------------------------------

def psum_layer(mesh):
    return jax.shard_map(lambda x: lax.psum(x * 2.0, "tp"), mesh=mesh,
                         in_specs=P("tp"), out_specs=P())


@pytest.mark.usefixtures("native_libraries")
def test_a_program_called_after_its_layer_is_deleted(mesh):
    f = psum_layer(mesh)
    x = np.arange(8, dtype=np.float32) + 1
    layer = ojax.jit(f, timeout_ms=5000)
    comp = jax.jit(lambda x: layer(x)).lower(x).compile()
    assert np.array_equal(comp(x), f(x))
    alive = weakref.ref(layer)
    del layer
    gc.collect()
    assert alive() is None
    # The step is gone: every device's call says so at once (no garbage, no
    # wait for the others).
    with pytest.raises(Exception, match="names no host layer.*released"):
        jax.block_until_ready(comp(x))


@pytest.mark.usefixtures("native_libraries")
def test_a_layer_made_inside_jit_without_a_backward(mesh):
    f = psum_layer(mesh)
    run = jax.jit(lambda x: ojax.jit(f, differentiable=False,
                                     timeout_ms=5000)(x))
    for i in range(3):
        x = np.arange(8, dtype=np.float32) * (i + 1) - 3
        assert np.array_equal(run(x), f(x)), i
    # It still has no backward, and says so.
    g = jax.shard_map(lambda x: x * 3.0, mesh=mesh, in_specs=P("tp"),
                      out_specs=P("tp"))
    layer = ojax.jit(g, differentiable=False)
    with pytest.raises(TypeError, match="differentiable=False"):
        jax.grad(lambda x: jnp.sum(layer(x)))(np.ones(8, np.float32))


# -- item 10: arguments -----------------------------------------------------

@pytest.mark.usefixtures("native_libraries")
def test_python_scalars_as_jax_jit_takes_them(mesh):
    f = jax.shard_map(lambda x, s: lax.psum(x * s, "tp"), mesh=mesh,
                      in_specs=(P("tp"), P()), out_specs=P())
    layer = ojax.jit(f)
    x = np.arange(8, dtype=np.float32) - 2
    assert np.array_equal(layer(x, 2.5), jax.jit(f)(x, 2.5))
    assert np.array_equal(jax.jit(layer)(x, -1.5), jax.jit(f)(x, -1.5))
    # Weakly typed, as in JAX: a float scalar keeps a bf16 array bf16.
    xb = x.astype(jnp.bfloat16)
    got, want = layer(xb, 0.5), jax.jit(f)(xb, 0.5)
    assert got.dtype == want.dtype == jnp.bfloat16
    assert np.array_equal(np.asarray(got, np.float32),
                          np.asarray(want, np.float32))


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan, 2**64 + 1500,
                                 2**31, 0, -5, 1e300, "1000", True])
def test_timeout_ms_out_of_range_says_so(mesh, bad):
    f = psum_layer(mesh)
    with pytest.raises(ValueError, match=r"timeout_ms=.*2147483647"):
        ojax.jit(f, timeout_ms=bad)
    with pytest.raises(ValueError, match=r"timeout_ms=.*2147483647"):
        ojax.jit(timeout_ms=bad)  # the decorator form, at once


def test_timeout_ms_in_range(mesh):
    f = psum_layer(mesh)
    assert ojax.jit(f, timeout_ms=1500.25).timeout_ms == 1501
    assert ojax.jit(f, timeout_ms=np.int64(7)).timeout_ms == 7
    top = ojax.jit(f, timeout_ms=2**31 - 1).timeout_ms
    assert top == 2**31 - 1


def test_timeout_ms_none_is_the_default(mesh, monkeypatch):
    # None: $OVERLAP_JAX_TIMEOUT_MS, else 60000 (test_jax_gpu_layer.py
    # tests the variable).
    monkeypatch.delenv("OVERLAP_JAX_TIMEOUT_MS", raising=False)
    assert ojax.jit(psum_layer(mesh), timeout_ms=None).timeout_ms == 60000
