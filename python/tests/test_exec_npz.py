"""overlap-exec --inputs / --outputs: the caller's inputs from a NumPy .npz
(np.savez and np.savez_compressed), every output of every rank written to
one, checked bit for bit against overlap.run(inputs=...) (the C API's
overlapRunInputs) and against numpy computing what examples/mlp.mlir
computes. Skipped, saying where they were looked for, when the native
libraries or overlap-exec are not built."""

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import overlap
from overlap import native

ROOT = Path(__file__).resolve().parents[2]


def _negation(value, elem):
    """%r<value>, the elementwise negation of the 4x8 tensor %<value>."""
    t = f"tensor<4x8x{elem}>"
    return f"""  %e{value} = tensor.empty() : {t}
  %r{value} = linalg.generic {{
      indexing_maps = [affine_map<(i, j) -> (i, j)>,
                       affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}}
      ins(%{value} : {t}) outs(%e{value} : {t}) {{
    ^bb0(%in: {elem}, %out: {elem}):
      %r = arith.negf %in : {elem}
      linalg.yield %r : {elem}
  }} -> {t}"""


#: One bf16 and one f16 argument on a grid of 2, each result the negation
#: (bf16 arithmetic beyond a sign flip needs compiler-rt's conversions).
HALF = f"""
shard.grid @g(shape = 2)

func.func @half(%a: tensor<4x8xbf16>, %b: tensor<4x8xf16>)
    -> (tensor<4x8xbf16>, tensor<4x8xf16>) {{
{_negation("a", "bf16")}
{_negation("b", "f16")}
  return %ra, %rb : tensor<4x8xbf16>, tensor<4x8xf16>
}}
"""


def find_overlap_exec():
    dirs = []
    if os.environ.get("OVERLAP_BUILD_DIR"):
        dirs.append(Path(os.environ["OVERLAP_BUILD_DIR"]))
    dirs.append(ROOT / "build")
    tried = [d / "bin" / "overlap-exec" for d in dirs]
    for path in tried:
        if os.access(path, os.X_OK):
            return str(path)
    pytest.skip("overlap-exec not found; looked at " +
                ", ".join(map(str, tried)))


@pytest.fixture(scope="module")
def overlap_exec():
    return find_overlap_exec()


@pytest.fixture(scope="module")
def apis():
    try:
        return native.compiler_api(), native.host_api()
    except native.NativeNotFound as err:
        pytest.skip(str(err))


@pytest.fixture(scope="module")
def mlp_so(apis, tmp_path_factory):
    text = (ROOT / "examples" / "mlp.mlir").read_text()
    out = tmp_path_factory.mktemp("mlp") / "mlp.so"
    return overlap.compile(text, strategy="uniform:2", output=out).path


@pytest.fixture(scope="module")
def mlp_inputs(mlp_so):
    """arg0 and arg1 one row per rank ([ranks, ...]), arg2 the same on
    every rank (its own shape)."""
    sig = overlap.signature(mlp_so)
    assert sig.ranks == 4
    assert [a.shape for a in sig.args] == [(256, 512), (512, 512), (512, 512)]
    rng = np.random.default_rng(2024)
    x = rng.uniform(-1, 1, (4, 256, 512)).astype(np.float32)
    w1 = rng.uniform(-1, 1, (4, 512, 512)).astype(np.float32)
    w2 = rng.uniform(-1, 1, (512, 512)).astype(np.float32)
    return dict(arg0=x, arg1=w1, arg2=w2)


def run_exec(overlap_exec, program, *args):
    return subprocess.run([overlap_exec, str(program), *map(str, args)],
                          capture_output=True, text=True)


def poisoned(path):
    """`path` holding junk, so that a run that does not write it fails."""
    Path(path).write_bytes(b"not written by overlap-exec")
    return path


def mlp_numpy(x, w1, w2):
    """examples/mlp.mlir in float64: X gathered from the ranks' rows,
    relu(X @ W1_r) @ W2_r summed over the ranks and scattered by rows."""
    ranks = x.shape[0]
    gathered = x.astype(np.float64).reshape(-1, x.shape[-1])
    y = sum(np.maximum(gathered @ w1[r].astype(np.float64), 0) @
            w2.astype(np.float64) for r in range(ranks))
    return y.reshape(ranks, -1, y.shape[-1])


def test_inputs_and_outputs_match_run_and_numpy(overlap_exec, mlp_so,
                                                mlp_inputs, tmp_path):
    inputs = tmp_path / "in.npz"
    np.savez(inputs, **mlp_inputs)
    out = poisoned(tmp_path / "out.npz")
    proc = run_exec(overlap_exec, mlp_so, "--inputs", inputs, "--outputs",
                    out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"inputs {inputs}" in proc.stdout.splitlines()[0]

    with np.load(out) as npz:
        got = {k: npz[k] for k in npz.files}
    assert list(got) == ["result0", "arg0", "arg1", "arg2"]
    assert {k: (v.shape, v.dtype.str) for k, v in got.items()} == {
        "result0": ((4, 256, 512), "<f4"), "arg0": ((4, 256, 512), "<f4"),
        "arg1": ((4, 512, 512), "<f4"), "arg2": ((4, 512, 512), "<f4")}

    # The same inputs through the C API: the same bits.
    x, w1, w2 = mlp_inputs["arg0"], mlp_inputs["arg1"], mlp_inputs["arg2"]
    res = overlap.run(mlp_so, inputs=[[x[r], w1[r], w2] for r in range(4)])
    assert res.ok, res.report + res.messages
    assert res.output_names == list(got)
    for r in range(4):
        for i, name in enumerate(res.output_names):
            assert np.array_equal(got[name][r].view(np.uint32),
                                  res.outputs[r][i].view(np.uint32)), \
                f"rank {r} {name}"

    # What the program computes, in float64.
    want = mlp_numpy(x, w1, w2)
    result = got["result0"].astype(np.float64)
    assert np.isfinite(result).all() and np.abs(want).max() > 1
    err = np.abs(result - want).max()
    assert err <= 1e-4 * np.abs(want).max(), err
    # Row r is rank r's own: rows swapped would not match.
    assert np.abs(result[::-1] - want).max() > 1e-2 * np.abs(want).max()


def test_compressed_inputs(overlap_exec, mlp_so, mlp_inputs, tmp_path):
    stored, compressed = tmp_path / "in.npz", tmp_path / "in-z.npz"
    np.savez(stored, **mlp_inputs)
    np.savez_compressed(compressed, **mlp_inputs)
    out_stored = poisoned(tmp_path / "out.npz")
    out_compressed = poisoned(tmp_path / "out-z.npz")
    proc = run_exec(overlap_exec, mlp_so, "--inputs", stored, "--outputs",
                    out_stored)
    assert proc.returncode == 0, proc.stderr
    proc = run_exec(overlap_exec, mlp_so, "--inputs", compressed,
                    "--outputs", out_compressed)
    if proc.returncode == 2 and "has no zlib" in proc.stderr:
        assert "in-z.npz: entry 'arg0.npy': compressed" in proc.stderr
        pytest.skip("this build has no zlib: " + proc.stderr.strip())
    assert proc.returncode == 0, proc.stderr
    # The writer is deterministic: the same outputs, the same bytes.
    assert out_compressed.read_bytes() == out_stored.read_bytes()


def test_errors_name_the_file_and_the_array(overlap_exec, mlp_so, mlp_inputs,
                                            tmp_path):
    x, w1, w2 = mlp_inputs["arg0"], mlp_inputs["arg1"], mlp_inputs["arg2"]
    cases = {
        "missing": (dict(arg0=x, arg2=w2),
                    ["no array 'arg1'", "'<f4' of shape (4, 512, 512)",
                     "or (512, 512)", "the file has arg0, arg2"]),
        "shape": (dict(arg0=x, arg1=w1[:3], arg2=w2),
                  ["array 'arg1'", "expected shape (4, 512, 512)",
                   "found (3, 512, 512)"]),
        "dtype": (dict(arg0=x.astype(np.float64), arg1=w1, arg2=w2),
                  ["array 'arg0'", "expected dtype '<f4'", "found '<f8'"]),
        "extra": (dict(arg0=x, arg1=w1, arg2=w2, bias=w2[0]),
                  ["array 'bias' is not an argument of @mlp",
                   "arg0, arg1, arg2"]),
        "fortran": (dict(arg0=x, arg1=w1, arg2=np.asfortranarray(w2)),
                    ["array 'arg2'", "Fortran-order"]),
    }
    for name, (arrays, needles) in cases.items():
        path = tmp_path / f"{name}.npz"
        np.savez(path, **arrays)
        out = poisoned(tmp_path / f"{name}-out.npz")
        proc = run_exec(overlap_exec, mlp_so, "--inputs", path, "--outputs",
                        out)
        assert proc.returncode == 2, (name, proc.stdout, proc.stderr)
        assert f"overlap-exec: error: {path}: " in proc.stderr, proc.stderr
        for needle in needles:
            assert needle in proc.stderr, (name, needle, proc.stderr)
        assert out.read_bytes() == b"not written by overlap-exec"
    # Not an .npz at all, and a file that is not there.
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"PK" + bytes(100))
    proc = run_exec(overlap_exec, mlp_so, "--inputs", junk)
    assert proc.returncode == 2 and "not a zip archive" in proc.stderr
    proc = run_exec(overlap_exec, mlp_so, "--inputs", tmp_path / "none.npz")
    assert proc.returncode == 2 and "cannot read" in proc.stderr
    # A damaged entry: one bit of arg2's data flipped.
    path = tmp_path / "in.npz"
    np.savez(path, **mlp_inputs)
    data = bytearray(path.read_bytes())
    data[-40000] ^= 1
    path.write_bytes(bytes(data))
    proc = run_exec(overlap_exec, mlp_so, "--inputs", path)
    assert proc.returncode == 2 and "CRC-32 mismatch" in proc.stderr, \
        proc.stderr


def test_half_types(overlap_exec, apis, tmp_path):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    prog = overlap.compile(HALF, output=tmp_path / "half.so").path
    rng = np.random.default_rng(7)
    a = rng.uniform(-2, 2, (2, 4, 8)).astype(ml_dtypes.bfloat16)
    b = rng.uniform(-2, 2, (4, 8)).astype(np.float16)
    res = overlap.run(prog, inputs=[[a[0], b], [a[1], b]])
    assert res.ok, res.report + res.messages
    # bf16 as ml_dtypes writes it ('<V2') and as its bits in 2-byte ints.
    for form in (a, a.view("<u2"), a.view("<i2")):
        inputs, out = tmp_path / "h.npz", poisoned(tmp_path / "h-out.npz")
        np.savez(inputs, arg0=form, arg1=b)
        proc = run_exec(overlap_exec, prog, "--inputs", inputs, "--outputs",
                        out)
        assert proc.returncode == 0, proc.stderr
        with np.load(out) as npz:
            assert npz.files == ["result0", "result1", "arg0", "arg1"]
            assert npz["result0"].dtype.str == "<u2"
            assert npz["result1"].dtype.str == "<f2"
            r0 = npz["result0"].view(ml_dtypes.bfloat16)
            r1 = npz["result1"]
        assert np.array_equal(r0.view("<u2"), (-a).view("<u2"))
        assert np.array_equal(r1, np.stack([-b, -b]))
        for r in range(2):
            assert np.array_equal(r0[r].view("<u2"),
                                  res.outputs[r][0].view("<u2"))
            assert np.array_equal(r1[r], res.outputs[r][1])
    # f16 values are not bf16 bits.
    inputs = tmp_path / "f16.npz"
    np.savez(inputs, arg0=a.astype(np.float16), arg1=b)
    proc = run_exec(overlap_exec, prog, "--inputs", inputs)
    assert proc.returncode == 2
    assert "array 'arg0' (4x8xbf16 on 2 ranks): expected dtype '<u2'" in \
        proc.stderr and "found '<f2'" in proc.stderr, proc.stderr


def lying_npz(path, declared):
    """A .npz of one small deflated entry 'arg0.npy' whose central
    directory declares `declared` uncompressed bytes (through a zip64 extra
    field): what a damaged or hostile file can say."""
    import io
    import struct
    import zipfile
    buf = io.BytesIO()
    np.save(buf, np.zeros((4,), np.float32))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("arg0.npy", buf.getvalue())
    data = bytearray(Path(path).read_bytes())
    cd = data.rfind(b"PK\x01\x02")
    name_len, extra_len = struct.unpack_from("<HH", data, cd + 28)
    struct.pack_into("<I", data, cd + 24, 0xFFFFFFFF)  # the size: in zip64
    struct.pack_into("<H", data, cd + 30, extra_len + 12)
    at = cd + 46 + name_len + extra_len
    data[at:at] = struct.pack("<HHQ", 1, 8, declared)
    eocd = data.rfind(b"PK\x05\x06")
    dir_size = struct.unpack_from("<I", data, eocd + 12)[0]
    struct.pack_into("<I", data, eocd + 12, dir_size + 12)
    Path(path).write_bytes(bytes(data))
    return path


def test_a_directory_that_lies_about_sizes_is_refused_before_inflating(
        overlap_exec, mlp_so, tmp_path):
    """A 200-byte file that declares 2^62 bytes once aborted overlap-exec
    (std::bad_alloc), and one that declared 20 GiB made it allocate and
    zero 20 GiB before it failed; now both end in a one-line error before
    anything is allocated."""
    huge = lying_npz(tmp_path / "huge.npz", 1 << 62)
    proc = run_exec(overlap_exec, mlp_so, "--inputs", huge)
    assert proc.returncode == 2, proc.stderr
    assert (f"{huge}: entry 'arg0.npy': {1 << 62} bytes by the directory, "
            "more than the") in proc.stderr, proc.stderr
    assert "that any array read from it can use" in proc.stderr
    # Within what the arguments could use (4 MiB), but not from 71 bytes.
    ratio = lying_npz(tmp_path / "ratio.npz", 4_000_000)
    proc = run_exec(overlap_exec, mlp_so, "--inputs", ratio)
    if proc.returncode == 2 and "has no zlib" in proc.stderr:
        pytest.skip("this build has no zlib: " + proc.stderr.strip())
    assert proc.returncode == 2, proc.stderr
    assert "more than deflate can produce" in proc.stderr, proc.stderr
    # A few bytes too many: inflated, then the count disagrees.
    near = lying_npz(tmp_path / "near.npz", 140)
    proc = run_exec(overlap_exec, mlp_so, "--inputs", near)
    assert proc.returncode == 2, proc.stderr
    assert "inflates to 144 bytes, not the 140" in proc.stderr, proc.stderr


def test_a_failed_write_of_outputs_removes_nothing_but_its_own(
        overlap_exec, mlp_so, tmp_path):
    """A failed --outputs write once removed its target: as root,
    `--outputs /dev/full` deleted the device node. Now a device is written
    in place and never removed, and a regular file is written beside the
    target and renamed over it, so a failed write leaves the old file and
    no partial one."""
    import resource
    import signal
    import stat
    if os.path.exists("/dev/full"):
        proc = run_exec(overlap_exec, mlp_so, "--outputs", "/dev/full")
        assert proc.returncode == 2, proc.stderr
        assert "cannot write /dev/full: No space left on device" in \
            proc.stderr, proc.stderr
        assert stat.S_ISCHR(os.stat("/dev/full").st_mode), \
            "/dev/full is no longer a device"
    old = poisoned(tmp_path / "old.npz")

    def small_files():
        # Writes past 64 KiB fail with EFBIG instead of killing the tool.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 16, 1 << 16))

    proc = subprocess.run([overlap_exec, str(mlp_so), "--outputs", str(old)],
                          capture_output=True, text=True,
                          preexec_fn=small_files)
    assert proc.returncode == 2, proc.stderr
    assert f"cannot write {old}: File too large" in proc.stderr, proc.stderr
    assert old.read_bytes() == b"not written by overlap-exec"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.npz"]
    # And without the limit the same command replaces it.
    proc = run_exec(overlap_exec, mlp_so, "--outputs", old)
    assert proc.returncode == 0, proc.stderr
    assert sorted(np.load(old).files) == ["arg0", "arg1", "arg2", "result0"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.npz"]


def test_inputs_that_are_not_regular_files_are_refused(overlap_exec, mlp_so,
                                                       tmp_path):
    """--inputs a FIFO once blocked for ever (waiting for a writer) and
    /dev/zero grew the buffer without end; like program files, an .npz must
    be a regular file."""
    fifo = tmp_path / "in.npz"
    os.mkfifo(fifo)
    cases = {fifo: "a FIFO", tmp_path: "a directory",
             Path("/dev/zero"): "a character device"}
    for path, kind in cases.items():
        if not path.exists():
            continue
        proc = subprocess.run([overlap_exec, str(mlp_so), "--inputs",
                               str(path)], capture_output=True, text=True,
                              timeout=60)
        assert proc.returncode == 2, (path, proc.stderr)
        assert f"cannot read {path}: {kind}, not an .npz archive" in \
            proc.stderr, proc.stderr
