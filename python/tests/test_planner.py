"""overlap.plan / overlap.chain against the real overlap-plan binary, and
fitted profiles accepted by it (skipped when the binary is not built)."""

import json
import subprocess

import numpy as np
import pytest

import overlap
from conftest import assert_picture, run_fit
from overlap.fit import FitOptions, build_profile, fit_measurements
from overlap.measurements import parse_measurements
from overlap.plot import plot_sweep, plot_timeline, read_sweep
from overlap.sweep import predict_sweep, write_sweep
from overlap.trace import load_timeline

MC2 = dict(m=4096, n=8192, k=3072, ranks=8, collective="all-reduce")


def test_plan_round_trip_mc2_example(overlap_plan, tmp_path):
    trace = tmp_path / "trace.json"
    p = overlap.plan(**MC2, profile="mc2-example", strategy="mc2",
                     trace=trace, binary=overlap_plan)
    assert p.tiles == [512, 896, 896, 896, 896]
    assert p.strategy == "mc2" and p.bound == "comm"
    assert p.serial_us == pytest.approx(1733.943, abs=1e-3)
    assert p.ideal_us == pytest.approx(930.943, abs=1e-3)
    assert p.extra["mc2"]["balance_us"] == pytest.approx(163.563, abs=1e-3)
    assert [t.rows for t in p.tasks] == p.tiles
    assert p.tasks[-1].comm_end_us == pytest.approx(p.predicted_us)
    # The trace and the plan describe the same schedule.
    tl = load_timeline(trace)
    assert tl.makespan_us == pytest.approx(p.predicted_us, rel=1e-6)
    assert [b.rows for b in tl.stream("compute")] == p.tiles
    out = plot_timeline(tl, tmp_path / "tl.png", serial_us=p.serial_us,
                        ideal_us=p.ideal_us)
    assert_picture(out)


def test_plan_json_is_drawable_with_serial_and_ideal(overlap_plan, tmp_path):
    proc = subprocess.run(
        [overlap_plan, "matmul", "--collective", "all-reduce", "--m", "4096",
         "--n", "8192", "--k", "3072", "--ranks", "8", "--profile",
         "mc2-example", "--strategy", "optimal", "--json"],
        capture_output=True, text=True, check=True)
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(proc.stdout)
    tl = load_timeline(plan_path)
    assert tl.serial_us == pytest.approx(1733.943, abs=1e-3)
    assert tl.makespan_us == pytest.approx(json.loads(proc.stdout)
                                           ["predicted_us"], rel=1e-6)


def test_plan_error_carries_stderr(overlap_plan):
    with pytest.raises(overlap.PlanError) as info:
        overlap.plan(**MC2, profile="no-such-profile", binary=overlap_plan)
    assert info.value.returncode == 2
    assert "--profile" in info.value.stderr
    with pytest.raises(overlap.PlanError, match="--strategy"):
        overlap.plan(**MC2, profile="mc2-example", strategy="bogus",
                     binary=overlap_plan)


def test_in_process_errors_name_the_request_fields():
    """In process (no binary) the Planner's errors name the request's
    fields, not overlap-plan's flags ("--strategy" before)."""
    try:
        overlap.native.host_api()
    except overlap.NativeNotFound as err:
        pytest.skip(str(err))
    with pytest.raises(overlap.PlanError) as info:
        overlap.plan(**MC2, profile="mc2-example", strategy="bogus")
    assert info.value.returncode == 2
    assert '"strategy": expected none, uniform:n' in str(info.value)
    assert "--strategy" not in str(info.value)
    with pytest.raises(overlap.PlanError, match='"strategy": uniform:n: '
                                                'expected a tile count'):
        overlap.plan(**MC2, profile="mc2-example", strategy="uniform:5000")


def test_extreme_profile_is_an_error_not_an_inf_plan(overlap_plan, tmp_path):
    # A valid curve taken far outside its data: the plan's times are not
    # numbers, which overlap-plan refuses instead of printing a bare inf
    # that json.loads cannot read.
    profile = {
        "gemm": {"curves": [{"n": 8192, "k": 3072, "dtype": "f16",
                             "curve": {"table": [[0, 0], [4096, 400]]}}]},
        "collectives": {"all-reduce": [{
            "ranks": 8, "x_unit": "MiB",
            "curve": {"pieces": [{"from": 0, "to": None,
                                  "coeffs": [0, 1e308, 1e308]}]}}]},
    }
    path = tmp_path / "extreme.json"
    path.write_text(json.dumps(profile))
    for strategy in ("none", "auto"):
        with pytest.raises(overlap.PlanError) as info:
            overlap.plan(**MC2, profile=path, strategy=strategy,
                         binary=overlap_plan)
        assert info.value.returncode == 1
        assert "not a time within 1e+15 us" in info.value.stderr


def test_missing_binary_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("OVERLAP_PLAN", str(tmp_path / "nope"))
    with pytest.raises(overlap.PlannerNotFound, match="OVERLAP_PLAN"):
        overlap.find_overlap_plan()


def test_chain_round_trip(overlap_plan):
    c = overlap.chain([936, 1008, 552, 368, 1016, 616, 544], 65536,
                      binary=overlap_plan)
    assert c.order == "((A1 (A2 A3)) ((A4 A5) A6))"
    node = [n for n in c.nodes if (n.i, n.j) == (1, 3)][0]
    assert node.right_fuse == 3072693 and node.decision == "right"


def seed_measurements():
    """What MC² would measure on its machine: its CostMM line and CostComm
    fit, sampled at 32-row tiles (x in bytes, as benchmarks report it)."""
    lines = ["kind,collective,ranks,dtype,m,n,k,bytes,time_us"]
    for m in range(128, 4097, 128):
        lines.append(f"gemm,,,f16,{m},8192,3072,,{803 * m / 4096!r}")
    for m in range(32, 4097, 32):
        x = m * 8192 * 2 / 2 ** 20
        t = (-0.9698202 * x * x + 27.0622573 * x + 14.769 if x < 8
             else 13.58491263 * x + 61.508333)
        lines.append(f"comm,all-reduce,8,f16,,,,{m * 8192 * 2},{t!r}")
    return "\n".join(lines) + "\n"


def test_fitted_profile_is_accepted_and_reproduces_mc2(overlap_plan,
                                                        tmp_path):
    out = tmp_path / "mc2-fitted.json"
    proc = run_fit(tmp_path / "mc2.csv", seed_measurements(), out)
    assert proc.returncode == 0, proc.stderr
    for strategy in ("mc2", "optimal"):
        fitted = overlap.plan(**MC2, profile=out, strategy=strategy,
                              binary=overlap_plan)
        shipped = overlap.plan(**MC2, profile="mc2-example",
                               strategy=strategy, binary=overlap_plan)
        assert fitted.tiles == shipped.tiles
        assert fitted.predicted_us == pytest.approx(shipped.predicted_us,
                                                    rel=1e-6)
    assert fitted.profile == "mc2-fitted"


def test_fitted_table_and_base_profile_are_accepted(overlap_plan, tmp_path,
                                                    repo_root):
    rng = np.random.default_rng(0)
    lines = ["kind,collective,ranks,m,n,k,bytes,time_us"]
    for m in range(256, 8193, 256):  # wave-quantised GEMM, noisy
        waves = np.ceil(np.ceil(m / 128) * 32 / 116)
        lines.append(f"gemm,,,{m},8192,4096,,"
                     f"{(8 + 30 * waves) * (1 + 0.02 * rng.standard_normal())}")
    for e in range(16, 31):
        lines.append(f"comm,reduce-scatter,8,,,,{2 ** e},"
                     f"{(12 + 2.2 * 2 ** e / 2 ** 20) * (1 + 0.02 * rng.standard_normal())}")
    base = json.loads((repo_root / "profiles" /
                       "h100-nvlink-datasheet.json").read_text())
    for mode in ("auto", "table"):
        results = fit_measurements(parse_measurements("\n".join(lines)),
                                   FitOptions(curve=mode))
        prof = build_profile(results, name="h100-fit", source="x.csv",
                             base=base, base_name="h100-nvlink-datasheet")
        path = tmp_path / f"h100-{mode}.json"
        path.write_text(json.dumps(prof))
        for coll in ("reduce-scatter", "all-reduce"):
            p = overlap.plan(m=4096, n=8192, k=4096, ranks=8,
                             collective=coll, profile=path,
                             strategy="optimal", binary=overlap_plan)
            assert sum(p.tiles) == 4096 and p.predicted_us > 0


def test_predicted_sweep_csv_is_plottable(overlap_plan, tmp_path):
    rows = predict_sweep([4096], [8192], [256, 1024, 4096, 16384], ranks=8,
                         profile="h100-nvlink-datasheet",
                         strategies=["optimal", "none"], binary=overlap_plan)
    for r in rows:
        assert r["serial_us"] == pytest.approx(r["compute_us"] + r["comm_us"])
    path = tmp_path / "bench.csv"
    write_sweep(rows, path)
    parsed = read_sweep(path)
    assert {r.leg for r in parsed} == {"optimal", "none"}
    assert all(r.speedup("predicted") == pytest.approx(1.0)
               for r in parsed if r.leg == "none")
    assert_picture(plot_sweep(parsed, tmp_path / "sweep.png"), min_h=500)
