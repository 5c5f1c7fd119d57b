"""overlap.compile / overlap.run / overlap.plan in process, through the C
API (skipped, saying where they were looked for, when the native libraries
are not built)."""

import json
import subprocess

import pytest

import overlap
from overlap import native

MC2 = dict(m=4096, n=8192, k=3072, ranks=8, collective="all-reduce")


@pytest.fixture(scope="module")
def host_api():
    try:
        return native.host_api()
    except native.NativeNotFound as err:
        pytest.skip(str(err))


@pytest.fixture(scope="module")
def compiler_api():
    try:
        return native.compiler_api()
    except native.NativeNotFound as err:
        pytest.skip(str(err))


@pytest.fixture(scope="module")
def mlp(repo_root):
    return (repo_root / "examples" / "mlp.mlir").read_text()


def test_plan_in_process_matches_the_cli(host_api, overlap_plan):
    p = overlap.plan(**MC2, profile="mc2-example", strategy="mc2")
    assert p.tiles == [512, 896, 896, 896, 896]
    cli = subprocess.run(
        [overlap_plan, "matmul", "--collective", "all-reduce", "--m", "4096",
         "--n", "8192", "--k", "3072", "--ranks", "8", "--profile",
         "mc2-example", "--strategy", "mc2", "--json"],
        capture_output=True, text=True, check=True)
    assert p.raw == json.loads(cli.stdout)


def test_plan_in_process_errors_name_the_field(host_api):
    with pytest.raises(overlap.PlanError) as info:
        overlap.plan(**MC2, profile="no-such-profile")
    assert info.value.returncode == 2
    assert '"profile"' in info.value.stderr
    with pytest.raises(overlap.PlanError, match="strategy"):
        overlap.plan(**MC2, profile="mc2-example", strategy="bogus")
    with pytest.raises(overlap.PlanError, match='"collective"'):
        overlap.plan_json({"kind": "matmul", "collective": "all-to-some"})


def test_chain_in_process(host_api):
    c = overlap.chain([936, 1008, 552, 368, 1016, 616, 544], 65536)
    assert c.order == "((A1 (A2 A3)) ((A4 A5) A6))"


def test_compile_run_against_reference(compiler_api, host_api, mlp, tmp_path):
    prog = overlap.compile(mlp, strategy="uniform:4",
                           output=tmp_path / "mlp.so")
    assert prog.path.endswith("mlp.so") and prog.read_bytes()[:4] == b"\x7fELF"
    assert [p["tiles"] for p in prog.plans] == ["[256, 256, 256, 256]"] * 2
    assert all(p["strategy"] == "uniform:4" for p in prog.plans)
    assert all(float(p["predicted_us"]) > 0 for p in prog.plans)
    ref = overlap.compile(mlp, strategy="none", output=tmp_path / "ref.so")
    result = overlap.run(prog.path, reference=ref.path, ranks=4, seed=3)
    assert result.ok, result.report + result.messages
    assert "bit-identical: yes" in result.report
    # Without a reference: checksums and the timing line.
    alone = overlap.run(prog.path)
    assert alone.ok and "fnv1a" in alone.report


def test_run_errors_say_why(compiler_api, host_api, mlp, tmp_path):
    # The MLP's grid has 4 devices: 2 ranks is refused, with the reason.
    prog = overlap.compile(mlp, strategy="uniform:2",
                           output=tmp_path / "p.so")
    result = overlap.run(prog.path, ranks=2)
    assert result.status == 2
    assert "--ranks 2 but grid @tp has 4 devices" in result.messages
    missing = overlap.run(tmp_path / "none.so")
    assert missing.status == 2 and "cannot load" in missing.messages


def test_compile_errors_name_the_stage(compiler_api, mlp, tmp_path):
    with pytest.raises(overlap.CompileError, match="target"):
        overlap.compile(mlp, target="tpu", output=tmp_path / "x.so")
    with pytest.raises(overlap.CompileError, match="stage 'parse'"):
        overlap.compile("func.func @f(", output=tmp_path / "y.so")
    with pytest.raises(overlap.CompileError, match="input:"):
        overlap.compile(mlp, strategy="uniform:0", output=tmp_path / "z.so")


def test_compile_to_mlir_text(compiler_api, mlp, tmp_path):
    out = overlap.compile(mlp, emit="mlir", strategy="uniform:2")
    text = open(out.path).read()
    assert "llvm.call @overlap_all_gather" in text
    with pytest.raises(ValueError, match="emit"):
        overlap.compile(mlp, emit="exe")


def test_libraries_found_through_an_installation_on_path(monkeypatch, tmp_path):
    # An installation's bin/ on PATH: its lib/ is searched after the others.
    (tmp_path / "bin").mkdir()
    tool = tmp_path / "bin" / "overlap-compile"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert native.library_dirs()[-1] == tmp_path / "lib"
