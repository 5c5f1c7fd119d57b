"""Shared fixtures: the overlap-plan binary (tests that need it are skipped,
saying where it was looked for, when it is not built) and PNG checks."""

import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

# overlap.jax's tests run JAX itself as the oracle on 4 CPU devices; the flag
# must be set before jax is first imported.
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS",
                                                                 ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               " --xla_force_host_platform_device_count=4"
                               ).strip()

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))  # also without `pip install -e`

from overlap.planner import PlannerNotFound, find_overlap_plan  # noqa: E402


@pytest.fixture(scope="session")
def overlap_plan():
    try:
        return find_overlap_plan()
    except PlannerNotFound as err:
        pytest.skip(str(err))


def _native(*loaders):
    """What overlap.native's `loaders` load, the last one's result (the test
    skipped, saying why, when a library is not built)."""
    from overlap import native
    try:
        for name in loaders:
            result = getattr(native, name)()
        return result
    except native.NativeNotFound as err:
        pytest.skip(str(err))


@pytest.fixture(scope="module")
def native_libraries():
    """libOverlapCAPI.so and libOverlapHostCAPI.so (skipped, saying why,
    when they are not built): a test module that compiles and runs programs
    in process uses it (pytestmark = pytest.mark.usefixtures(...))."""
    _native("compiler_api", "host_api")


@pytest.fixture(scope="session")
def repo_root():
    return ROOT


@pytest.fixture(scope="session")
def compiler_api():
    """libOverlapCAPI.so (skipped, saying why, when it is not built)."""
    return _native("compiler_api")


@pytest.fixture(scope="session")
def host_api():
    """libOverlapHostCAPI.so (skipped, saying why, when it is not built)."""
    return _native("host_api")


def run_fit(csv_path, text, out, *more):
    """Writes `text` to `csv_path` and runs `python -m overlap.fit` on it
    with the arguments `more` and `-o out`: the finished process."""
    csv_path.write_text(text)
    return subprocess.run([sys.executable, "-m", "overlap.fit", str(csv_path),
                           *more, "-o", str(out)],
                          capture_output=True, text=True)


def png_size(path):
    """(width, height) from the PNG header; fails if it is not a PNG."""
    data = Path(path).read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


def assert_picture(path, min_bytes=10_000, min_w=600, min_h=300):
    assert os.path.getsize(path) > min_bytes, \
        f"{path}: {os.path.getsize(path)} bytes, expected a real picture"
    w, h = png_size(path)
    assert w >= min_w and h >= min_h, f"{path}: {w}x{h}"
    return w, h


@pytest.fixture(autouse=True, scope="session")
def _temporary_files_under_pytest(tmp_path_factory):
    """What the library writes to the temporary directory when a test
    gives no path (overlap.compile's default output, overlap.jax's
    libraries) goes under pytest's base temp, which pytest prunes, not
    into /tmp, where it stayed."""
    import tempfile
    old = tempfile.tempdir
    tempfile.tempdir = str(tmp_path_factory.mktemp("tempfile"))
    yield
    tempfile.tempdir = old


def require_jax():
    """jax, imported; the calling test module is skipped when it is missing,
    or fails when OVERLAP_REQUIRE_JAX is set (scripts/test-python.sh sets
    it)."""
    if os.environ.get("OVERLAP_REQUIRE_JAX"):
        import jax
        return jax
    return pytest.importorskip("jax")


def cpu_mesh(*names, shape=(4,)):
    """A mesh of 4 of JAX's CPU devices (the oracle of the JAX tests;
    XLA_FLAGS above makes them) with axes `names` of sizes `shape`."""
    import jax
    import numpy as np
    from jax.sharding import Mesh
    devices = jax.devices()
    assert len(devices) >= 4, ("XLA_FLAGS needs "
                               "--xla_force_host_platform_device_count=4")
    return Mesh(np.array(devices[:4]).reshape(shape), names)


def tp_mesh():
    """A 1-D mesh "tp" of 4 of JAX's CPU devices."""
    return cpu_mesh("tp")


@pytest.fixture(scope="module")
def mesh():
    """tp_mesh(), for the JAX tests (a module may define its own)."""
    return tp_mesh()


def check_against_jit(f, *args, strategy="none", rtol=1e-5, atol=1e-5):
    """Runs `f` with overlap.jax and checks each output against jax.jit's;
    returns overlap.jax's result."""
    import jax
    import numpy as np
    from overlap import jax as ojax
    res = ojax.run(f, *args, strategy=strategy)
    want = jax.tree_util.tree_leaves(jax.jit(f)(*args))
    assert len(res.outputs) == len(want)
    for got, ref in zip(res.outputs, want):
        np.testing.assert_allclose(got, np.asarray(ref), rtol=rtol, atol=atol)
    return res
