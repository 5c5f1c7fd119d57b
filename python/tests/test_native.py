"""overlap.compile / overlap.run / overlap.plan in process, through the C
API (skipped, saying where they were looked for, when the native libraries
are not built)."""

import json
import subprocess

import pytest

import overlap
from overlap import native
from overlap.plot import read_sweep

MC2 = dict(m=4096, n=8192, k=3072, ranks=8, collective="all-reduce")






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


def test_in_process_plan_error_says_what_failed(host_api):
    # Issue 24: an in-process failure used to read "overlap-plan exited
    # with 2", the exit status of a tool that never ran.
    with pytest.raises(overlap.PlanError) as info:
        overlap.plan(**MC2, profile="mc2-example", strategy="bogus")
    message = str(info.value)
    assert "exited" not in message and "overlap-plan" not in message
    assert message.startswith(info.value.stderr), message
    assert "strategy" in info.value.stderr and "bogus" in info.value.stderr
    assert info.value.returncode == 2 and info.value.in_process


@pytest.mark.parametrize("misspelt,meant,value", [
    ("dtpye", "dtype", "f32"), ("stratgy", "strategy", "none"),
    ("profle", "profile", "mc2-example"), ("expert", "experts", 2)])
def test_plan_request_misspelt_field_is_named(host_api, misspelt, meant,
                                              value):
    # Each used to be ignored: f16, auto and the default profile planned.
    request = dict(kind="matmul", **MC2, profile="mc2-example")
    request.pop(meant, None)
    request[misspelt] = value
    with pytest.raises(overlap.PlanError) as info:
        overlap.plan_json(request)
    assert info.value.returncode == 2
    assert f'"{misspelt}": no such field (did you mean "{meant}"?)' in \
        info.value.stderr
    with pytest.raises(overlap.PlanError,
                       match='"fast_mem": no such field .*"fast_memory"'):
        overlap.plan_json({"kind": "chain", "dims": [10, 30, 5],
                           "fast_mem": 1024})
    with pytest.raises(overlap.PlanError,
                       match='"dtype": expected a string, got null'):
        overlap.plan_json(dict(kind="matmul", **MC2, dtype=None))


def test_plan_defaults_to_the_shared_profile(host_api):
    # As overlap-compile, the passes and overlap-plan: h100-nvlink-datasheet.
    p = overlap.plan(**MC2)
    assert p.profile == "h100-nvlink-datasheet"
    assert p.problem["dtype"] == "f16"
    assert p.raw == overlap.plan(**MC2, profile="h100-nvlink-datasheet").raw


def test_plan_all_to_all_side_and_experts(host_api):
    # docs/expert-parallelism.md: overlap.plan takes side and experts.
    shape = dict(m=3072, n=4096, k=4096, ranks=4, collective="all-to-all",
                 strategy="uniform:3")
    for side in ("dispatch", "combine"):
        p = overlap.plan(**shape, side=side, experts=3)
        assert (p.problem["side"], p.problem["experts"]) == (side, 3)
        assert all(t % 12 == 0 for t in p.tiles[:-1]), p.tiles
        assert p.raw == overlap.plan_json(dict(
            kind="matmul", side=side, experts=3, **shape))
    # Left out: dispatch and one expert, the Planner's defaults.
    p = overlap.plan(**shape)
    assert (p.problem["side"], p.problem["experts"]) == ("dispatch", 1)
    with pytest.raises(overlap.PlanError, match='"side"'):
        overlap.plan(**MC2, side="combine")


def test_sweep_all_to_all_side_and_experts(host_api, tmp_path):
    from overlap import sweep
    out = tmp_path / "moe.csv"
    args = ["--collective", "all-to-all", "--ranks", "4", "--m", "3072",
            "--n", "4096", "--k", "4096", "--strategy", "none", "-o"]
    assert sweep.main(args + [str(out), "--side", "combine",
                              "--experts", "3"]) == 0
    rows = read_sweep(out)
    p = overlap.plan(3072, 4096, 4096, ranks=4, collective="all-to-all",
                     side="combine", experts=3, strategy="none")
    assert [r.serial_us for r in rows] == [pytest.approx(p.serial_us)]
    # The fields reach the Planner: one expert's GEMM is not three's.
    one = overlap.plan(3072, 4096, 4096, ranks=4, collective="all-to-all",
                       side="combine", strategy="none")
    assert one.serial_us != pytest.approx(p.serial_us)
    # Experts of an all-reduce: the Planner's error, status 1.
    assert sweep.main(["--ranks", "4", "--m", "3072", "--n", "4096", "--k",
                       "4096", "--experts", "3", "-o",
                       str(tmp_path / "bad.csv")]) == 1
    assert not (tmp_path / "bad.csv").exists()


def test_chain_in_process(host_api):
    c = overlap.chain([936, 1008, 552, 368, 1016, 616, 544], 65536)
    assert c.order == "((A1 (A2 A3)) ((A4 A5) A6))"


def test_compile_run_against_reference(compiler_api, host_api, mlp, tmp_path):
    prog = overlap.compile(mlp, strategy="uniform:4",
                           output=tmp_path / "mlp.so")
    assert prog.path.endswith("mlp.so") and prog.read_bytes()[:4] == b"\x7fELF"
    assert [p["tiles"] for p in prog.plans] == [[256, 256, 256, 256]] * 2
    assert all(p["strategy"] == "uniform:4" for p in prog.plans)
    assert all(p["predicted_us"] > 0 for p in prog.plans)
    ref = overlap.compile(mlp, strategy="none", output=tmp_path / "ref.so")
    result = overlap.run(prog.path, reference=ref.path, ranks=4, seed=3)
    assert result.ok, result.report + result.messages
    assert "bit-identical: yes" in result.report
    # Without a reference: checksums and the timing line.
    alone = overlap.run(prog.path)
    assert alone.ok and "fnv1a" in alone.report


def test_compile_plans_are_the_planners_documents(compiler_api, host_api,
                                                  mlp):
    # Issue 24: one plan, one shape. compile used to give the remark's
    # metrics as text ("tiles": "[256, 256]"); now each plan is the document
    # overlap.plan_json returns for the same problem, plus where it is.
    prog = overlap.compile(mlp, strategy="uniform:2", emit="mlir")
    assert len(prog.plans) == 2
    for p in prog.plans:
        assert p["tiles"] == [512, 512]  # M = 1024 rows
        assert all(isinstance(t, int) for t in p["tiles"])
        assert isinstance(p["predicted_us"], float)
        assert p["location"].startswith(
            "<overlap.compile text from test_native.py:"), p["location"]
        assert p["op"] in ("overlap.matmul_all_reduce",
                           "overlap.matmul_reduce_scatter",
                           "overlap.all_gather_matmul")
        assert p["summary"].startswith("tiles [512, 512] (uniform:2, ")
        planned = overlap.plan_json(dict(kind="matmul", **p["problem"],
                                         strategy="uniform:2"))
        assert {k: v for k, v in p.items()
                if k not in ("location", "op", "summary")} == planned
        # So the Planner's reader reads it.
        assert overlap.Plan.from_json(p).tiles == [512, 512]


def test_run_errors_say_why(compiler_api, host_api, mlp, tmp_path):
    # The MLP's grid has 4 devices: 2 ranks is refused, with the reason.
    prog = overlap.compile(mlp, strategy="uniform:2",
                           output=tmp_path / "p.so")
    result = overlap.run(prog.path, ranks=2)
    assert result.status == 2
    assert "--ranks 2 but grid @tp has 4 devices" in result.messages
    missing = overlap.run(tmp_path / "none.so")
    assert missing.status == 2 and "cannot load" in missing.messages
    # Out-of-range integers are refused, not wrapped by ctypes (2**32 + 4
    # would run 4 ranks).
    with pytest.raises(ValueError, match=r"ranks=4294967300 is out of range"):
        overlap.run(prog.path, ranks=2**32 + 4)
    # The library checks every value against RunOptions.def, whichever front
    # end set it, and names the field with what its row accepts.
    bad = overlap.run(prog.path, iterations=0)
    assert bad.status == 2
    assert ("OverlapRunOptions.iterations 0: expected 1 to 1000000 "
            "iterations") in bad.messages
    bad = overlap.run(prog.path, wait_timeout_ms=-5)
    assert bad.status == 2 and ("OverlapRunOptions.waitTimeoutMs -5: "
                                "expected 0 (the runtime's default) to "
                                "1000000000 milliseconds") in bad.messages
    bad = overlap.run(prog.path, ranks_as="thread")
    assert bad.status == 2 and ("OverlapRunOptions.ranksAs 'thread': "
                                "expected auto, threads or processes"
                                ) in bad.messages
    with pytest.raises(TypeError, match="did you mean 'wait_timeout_ms'"):
        overlap.run(prog.path, wait_timeout=5)
    with pytest.raises(TypeError, match="seed must be an integer"):
        overlap.run(prog.path, seed=1.5)
    with pytest.raises(ValueError, match=r"opt_level=1099511627776"):
        overlap.compile(mlp, opt_level=2**40, output=tmp_path / "q.so")


def test_compile_errors_name_the_stage(compiler_api, mlp, tmp_path):
    with pytest.raises(overlap.CompileError, match="target"):
        overlap.compile(mlp, target="tpu", output=tmp_path / "x.so")
    with pytest.raises(overlap.CompileError, match="stage 'parse'"):
        overlap.compile("func.func @f(", output=tmp_path / "y.so")
    # A bad strategy is refused before anything is compiled (issue 37).
    with pytest.raises(overlap.CompileError,
                       match="uniform:n needs a positive integer n, got '0'"):
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


# Expert parallelism (issue 15).

#: A slow device and a slower link (invented numbers, as the integration
#: tests' slow-link profile), so that optimal and mc2 split into tiles.
SLOW_LINK = {
    "name": "slow-link", "description": "test profile, no hardware",
    "provenance": "invented for tests",
    "device": {"name": "host test device", "sm_count": 8, "comm_sms": 1,
               "gemm_tile": [128, 128],
               "peak_tflops": {"f16": 2.0, "bf16": 2.0, "f32": 1.0},
               "memory_bandwidth_gbps": 50},
    "gemm": {"latency_us": 5, "roofline": {"efficiency": 1.0}},
    "collectives": {"all-to-all": [{
        "ranks": 4, "x_unit": "MiB", "latency_us": 10,
        "curve": {"pieces": [{"from": 0, "to": None, "coeffs": [0, 400]}]}}]},
    "contention": 1.1, "alignment": 128,
}

A2A = dict(kind="matmul", collective="all-to-all", m=3072, n=4096, k=4096,
           ranks=4, dtype="f16")


@pytest.fixture(scope="module")
def moe(repo_root):
    return (repo_root / "examples" / "moe.mlir").read_text()


def test_plan_all_to_all_experts_in_process(host_api, tmp_path):
    profile = tmp_path / "slow-link.json"
    profile.write_text(json.dumps(SLOW_LINK))
    for experts in (2, 3):
        blocks = A2A["ranks"] * experts
        for side in ("dispatch", "combine"):
            for strategy in ("uniform:3", "optimal", "mc2"):
                p = overlap.Plan.from_json(overlap.plan_json(dict(
                    A2A, experts=experts, side=side, strategy=strategy,
                    profile=str(profile))))
                where = f"experts={experts} {side} {strategy}: {p.tiles}"
                assert p.problem["experts"] == experts, where
                assert p.problem["side"] == side, where
                assert sum(p.tiles) == A2A["m"], where
                assert all(t % blocks == 0 for t in p.tiles), where
            # A tile takes tiles[i] / (ranks x experts) tokens of every
            # block: several tiles, each a whole number of tokens per block.
            assert len(p.tiles) > 1, where
    # The field matters: three experts (12 blocks) align tiles to
    # lcm(128, 12) = 384 rows, which one expert's 128-row tiles are not.
    three = overlap.plan_json(dict(A2A, experts=3, strategy="uniform:3",
                                   profile="h100-nvlink-datasheet"))
    one = overlap.plan_json(dict(A2A, strategy="uniform:3",
                                 profile="h100-nvlink-datasheet"))
    assert all(t % 384 == 0 for t in three["tiles"][:-1]), three["tiles"]
    assert any(t % 12 for t in one["tiles"]), one["tiles"]
    assert one["problem"]["experts"] == 1


def test_plan_experts_errors_name_the_field(host_api):
    # Only all-to-all has experts: a bad request (2) naming the field.
    for collective in ("all-gather", "all-reduce"):
        with pytest.raises(overlap.PlanError, match='"experts"') as info:
            overlap.plan_json(dict(A2A, collective=collective, experts=2))
        assert info.value.returncode == 2
        assert "all-to-all" in info.value.stderr
    with pytest.raises(overlap.PlanError, match='"experts"'):
        overlap.plan_json(dict(A2A, experts=0))
    # M must split into ranks x experts equal blocks: 3004 rows split into
    # 4 ranks' blocks, not into 12.
    with pytest.raises(overlap.PlanError,
                       match="M divisible by ranks x experts") as info:
        overlap.plan_json(dict(A2A, m=3004, experts=3,
                               profile="h100-nvlink-datasheet"))
    assert "experts = 3" in info.value.stderr


def test_compile_run_moe_against_unsplit(compiler_api, host_api, moe,
                                         tmp_path):
    prog = overlap.compile(moe, strategy="uniform:2",
                           output=tmp_path / "moe.so")
    assert prog.read_bytes()[:4] == b"\x7fELF"
    # Dispatch and combine: M = 2 experts x 4 ranks x 64 tokens.
    assert [p["tiles"] for p in prog.plans] == [[256, 256]] * 2
    assert all(p["strategy"] == "uniform:2" for p in prog.plans)
    assert [(p["problem"]["side"], p["problem"]["experts"])
            for p in prog.plans] == [("dispatch", 2), ("combine", 2)]
    ref = overlap.compile(moe, strategy="none", output=tmp_path / "ref.so")
    assert [p["tiles"] for p in ref.plans] == [[512]] * 2
    result = overlap.run(prog.path, reference=ref.path, ranks=4, seed=5)
    assert result.ok, result.report + result.messages
    assert "bit-identical: yes" in result.report
    # The comparison can fail: the same layer with min instead of ReLU.
    other = moe.replace("arith.maximumf", "arith.minimumf")
    assert other != moe
    bad = overlap.compile(other, strategy="uniform:2",
                          output=tmp_path / "bad.so")
    mismatch = overlap.run(bad.path, reference=ref.path, ranks=4, seed=5)
    assert mismatch.status == 1, mismatch.report + mismatch.messages


def test_compile_moe_to_mlir_calls_all_to_all(compiler_api, moe):
    out = overlap.compile(moe, emit="mlir", strategy="uniform:2")
    text = open(out.path).read()
    # Two tiles of dispatch and two of combine: four exchanges.
    assert text.count("llvm.call @overlap_all_to_all(") == 4, text[-2000:]


def test_run_loads_a_program_recompiled_to_the_same_path(
        compiler_api, host_api, mlp, repo_root, tmp_path):
    # Issue 25: the loader used to dlopen a path once per process and keep
    # it, so a program recompiled to the same path ran the old code with the
    # old signature. Now each load maps a private copy of the file.
    mar = (repo_root / "test" / "Tools" / "overlap-exec" / "Inputs" /
           "mar.mlir").read_text().replace("@R@", "4")
    path = tmp_path / "same.so"
    overlap.compile(mlp, strategy="none", output=path)
    first = overlap.run(path, ranks=4)
    assert first.ok, first.report + first.messages
    assert "@mlp on 4 host ranks" in first.report
    assert "result0  256x512xf32" in first.report
    assert overlap.signature(path).entry == "mlp"
    overlap.compile(mar, strategy="none", output=path)
    second = overlap.run(path, ranks=4)
    assert second.ok, second.report + second.messages
    assert "@mar on 4 host ranks" in second.report
    assert "result0  512x128xf32" in second.report
    sig = overlap.signature(path)
    assert sig.entry == "mar" and len(sig.args) == 3
    # And back: the first program again, with its first checksums.
    overlap.compile(mlp, strategy="none", output=path)
    third = overlap.run(path, ranks=4)
    assert third.ok and third.report.splitlines()[1:-1] == \
        first.report.splitlines()[1:-1]
    # The private copies are unlinked once loaded.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["same.so"]


def test_run_takes_every_run_option(compiler_api, host_api, mlp, tmp_path):
    # RunOptions.def's rows are overlap.run's keywords (the struct's mirror
    # is built from the library's layout): chaos, its delay and the wait
    # timeout reach the run, and the report says so.
    assert {"chaos", "chaos_max_us", "wait_timeout_ms", "ranks_as",
            "device", "verbose", "ref_backend", "inputs_npz",
            "outputs_npz"} <= set(overlap.compiler.run_option_names())
    prog = overlap.compile(mlp, strategy="uniform:2",
                           output=tmp_path / "p.so")
    ref = overlap.compile(mlp, strategy="none", output=tmp_path / "r.so")
    result = overlap.run(prog.path, reference=ref.path, chaos=7,
                         chaos_max_us=50, wait_timeout_ms=60000,
                         ranks_as="threads")
    assert result.status == 0, result.messages
    assert "chaos 7" in result.report
    out = tmp_path / "out.npz"
    result = overlap.run(prog.path, outputs_npz=out)
    assert result.status == 0, result.messages
    import numpy as np
    with np.load(out) as saved:
        assert saved["result0"].shape[0] == 4
