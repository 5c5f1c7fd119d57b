"""The JAX oracle of the GPU session (scripts/gpu/programs.sh), checked on
host ranks: examples/jax/export.py --oracle writes each JAX layer's
one-device MLIR, JAX's inputs and JAX's outputs; the layer compiled for the
host and run by overlap-exec on those inputs must match JAX within
test_jax.py's tolerances by scripts/gpu/compare-npz.py, and compare-npz.py
must refuse a wrong answer and a missing result. On the GPU machine the
same files are held against the --target=cuda build."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from test_exec_npz import find_overlap_exec

ROOT = Path(__file__).resolve().parents[2]
COMPARE = ROOT / "scripts" / "gpu" / "compare-npz.py"


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("jax-oracle")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "jax" / "export.py"),
         "--oracle", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    manifest = [line.split() for line in proc.stdout.splitlines()]
    return out, manifest


def compare(got, want, tol):
    return subprocess.run([sys.executable, str(COMPARE), str(got), str(want),
                           str(tol)], capture_output=True, text=True)


def test_manifest_names_every_layer(exported):
    out, manifest = exported
    stems = sorted(m[0] for m in manifest)
    assert stems == ["jax-attention", "jax-expert_parallel",
                     "jax-gated_mlp_rmsnorm", "jax-megatron_mlp",
                     "jax-sequence_parallel_mlp"], manifest
    for stem, entry, dtype in manifest:
        assert dtype in ("float32", "bfloat16")
        text = (out / f"{stem}.mlir").read_text()
        assert "shard.grid @tp(shape = 1)" in text
        assert f"func.func @{entry}(" in text
        assert (out / f"{stem}.in.npz").exists()
        assert (out / f"{stem}.want.npz").exists()


def test_host_build_matches_jax(exported):
    out, manifest = exported
    exe = find_overlap_exec()
    compiler = Path(exe).with_name("overlap-compile")
    for stem, entry, dtype in manifest:
        strategy = "auto" if stem == "jax-expert_parallel" else "uniform:2"
        lib = out / f"{stem}.host.so"
        subprocess.run([str(compiler), str(out / f"{stem}.mlir"), "--entry",
                        entry, "--target=host", f"--strategy={strategy}",
                        "--emit=so", "-o", str(lib)], check=True)
        got = out / f"{stem}.got.npz"
        subprocess.run([exe, str(lib), "--inputs", str(out / f"{stem}.in.npz"),
                        "--outputs", str(got)], check=True,
                       capture_output=True)
        tol = 2.0 ** -6 if dtype == "bfloat16" else 1e-4
        proc = compare(got, out / f"{stem}.want.npz", tol)
        assert proc.returncode == 0, (stem, proc.stdout, proc.stderr)
        assert "result0: " in proc.stdout and ": OK" in proc.stdout


def test_compare_refuses_wrong_and_missing(exported, tmp_path):
    out, _ = exported
    want = np.load(out / "jax-megatron_mlp.want.npz")["result0"]
    got = tmp_path / "got.npz"
    # overlap-exec's layout: [R, *shape].
    np.savez(got, result0=(want * 1.01)[None])
    proc = compare(got, out / "jax-megatron_mlp.want.npz", 1e-4)
    assert proc.returncode == 1 and "FAILED" in proc.stdout, proc.stdout
    nan = want.copy()
    nan[0, 0] = np.nan
    np.savez(got, result0=nan[None])
    proc = compare(got, out / "jax-megatron_mlp.want.npz", 1.0)
    assert proc.returncode == 1 and "not finite" in proc.stdout, proc.stdout
    np.savez(got, other=want[None])
    proc = compare(got, out / "jax-megatron_mlp.want.npz", 1e-4)
    assert proc.returncode == 2 and "result0 missing" in proc.stderr
    # bf16 bit patterns ('<u2') are read as bf16: the exact values pass.
    bits = (want.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    np.savez(got, result0=bits[None])
    proc = compare(got, out / "jax-megatron_mlp.want.npz", 2.0 ** -7)
    assert proc.returncode == 0, proc.stdout
