"""overlap.fit: the MC² seed's own curve comes back, fits are monotone,
tables are monotone, and the CLI writes a profile."""

import json

import numpy as np
import pytest

from conftest import run_fit
from overlap.curves import Curve
from overlap.fit import (FitError, FitOptions, build_profile, fit_curve,
                         fit_measurements, monotone_table)
from overlap.measurements import parse_measurements

# Seed 000's CostComm, x in MB (MiB), t in µs, exactly as printed.
SEED_QUAD = [14.769, 27.0622573, -0.9698202]
SEED_LIN = [61.508333, 13.58491263]


def seed_comm(x):
    x = np.asarray(x, float)
    return np.where(x < 8, np.polyval(SEED_QUAD[::-1], x),
                    np.polyval(SEED_LIN[::-1], x))


def assert_seed_pieces(curve, rel=1e-6, bp=(8.0, 8.0)):
    assert curve.table is None
    assert len(curve.pieces) == 2, curve.describe()
    quad, lin = curve.pieces
    assert quad.start == 0 and bp[0] <= quad.end <= bp[1]
    assert lin.start == quad.end and lin.end is None
    np.testing.assert_allclose(quad.coeffs, SEED_QUAD, rtol=rel)
    np.testing.assert_allclose(lin.coeffs, SEED_LIN, rtol=rel)


def test_seed_costcomm_coefficients_come_back():
    # Tiles of 32-row steps at N = 8192, f16: 0.5 MiB apart, 8 MiB included.
    x = np.arange(32, 4097, 32) * 8192 * 2 / 2 ** 20
    r = fit_curve(x, seed_comm(x))
    assert_seed_pieces(r.curve, rel=1e-9)
    assert r.residuals.max_rel < 1e-9


def test_seed_at_the_seeds_own_sizes():
    # 128-row tiles: 2, 4, 6 MiB below the break (one size short of a
    # quadratic with a residual): still two pieces, within 0.2 %.
    x = np.arange(128, 4097, 128) * 8192 * 2 / 2 ** 20
    r = fit_curve(x, seed_comm(x))
    assert len(r.curve.pieces) == 2
    np.testing.assert_allclose(r.curve.pieces[1].coeffs, SEED_LIN, rtol=1e-9)
    assert r.residuals.max_rel < 2e-3
    # Between 8 and 10 MiB no size tells where the break is; elsewhere in
    # the measured range the curve is the seed's within 1 %.
    dense = np.concatenate([np.linspace(2, 8, 200), np.linspace(10, 64, 300)])
    assert np.max(np.abs(r.curve(dense) / seed_comm(dense) - 1)) < 0.01


def test_seed_with_measurement_noise():
    rng = np.random.default_rng(7)
    x = np.repeat(np.arange(0.5, 64.01, 0.5), 3)
    t = seed_comm(x) * (1 + 0.003 * rng.standard_normal(len(x)))
    r = fit_curve(x, t)
    assert [p.degree for p in r.curve.pieces] == [2, 1], r.curve.describe()
    assert 5 <= r.curve.pieces[0].end <= 11
    np.testing.assert_allclose(r.curve.pieces[1].coeffs, SEED_LIN, rtol=0.02)
    dense = np.linspace(0.5, 64, 500)
    assert np.max(np.abs(r.curve(dense) / seed_comm(dense) - 1)) < 0.01


@pytest.mark.parametrize("noise", [0.0, 0.01])
def test_line_stays_one_piece(noise):
    rng = np.random.default_rng(1)
    m = np.arange(128, 8193, 128.0)
    t = (12.0 + 0.19 * m) * (1 + noise * rng.standard_normal(len(m)))
    r = fit_curve(m, t)
    assert len(r.curve.pieces) == 1 and r.curve.pieces[0].degree == 1
    np.testing.assert_allclose(r.curve.pieces[0].coeffs, [12.0, 0.19],
                               rtol=0.03 if noise else 1e-9)


def test_exact_line_through_origin_is_tidy():
    m = np.arange(128, 4097, 128.0)
    r = fit_curve(m, 803 * m / 4096)
    assert r.curve.pieces[0].coeffs == [0, 803 / 4096]


def dense_is_monotone(curve, hi):
    xs = np.linspace(0, hi, 20001)
    ys = curve(xs)
    return bool(np.all(np.diff(ys) >= -1e-9 * np.maximum(1, ys[:-1])))


@pytest.mark.parametrize("seed", range(6))
def test_fits_are_monotone_on_noisy_and_wavy_data(seed):
    rng = np.random.default_rng(seed)
    m = np.arange(128, 8193, 128.0)
    waves = np.ceil(np.ceil(m / 128) * 32 / 132)  # GEMM wave quantisation
    t = (5 + 40 * waves + 0.002 * m) * (1 + 0.02 * rng.standard_normal(len(m)))
    for mode in ("auto", "pieces", "table"):
        r = fit_curve(m, t, FitOptions(curve=mode))
        assert r.curve.check_monotone() is None, (mode, r.curve.describe())
        assert dense_is_monotone(r.curve, 10000), (mode, r.curve.describe())


def test_decreasing_data_still_gives_a_monotone_curve():
    x = np.arange(1, 21, 1.0)
    t = 100 - 2 * x  # a broken benchmark: must not yield a falling curve
    r = fit_curve(x, t)
    assert r.curve.check_monotone() is None and dense_is_monotone(r.curve, 30)


def test_monotone_table_pools_violators():
    c = monotone_table([1, 2, 3, 4, 4], [10, 30, 20, 40, 50])
    assert c.table == [[1, 10], [2, 25], [3, 25], [4, 45]]
    assert c.check_monotone() is None


def test_bad_fit_falls_back_to_table():
    x = np.arange(1, 41, 1.0)
    t = np.where(x % 10 < 5, 1.0, 3.0) * 100 + np.floor(x / 10) * 300
    r = fit_curve(x, t, FitOptions(max_pieces=1, max_error=0.05))
    assert r.curve.table is not None
    assert any("table" in n for n in r.notes)


def test_too_few_sizes():
    with pytest.raises(FitError, match="at least 2 distinct sizes"):
        fit_curve([4, 4, 4], [1, 2, 3])
    r = fit_curve([1, 2], [10, 20])  # two sizes: a line through them
    np.testing.assert_allclose(r.curve([1, 2, 3]), [10, 20, 30])


def test_curve_round_trips_json():
    x = np.arange(32, 4097, 32) * 8192 * 2 / 2 ** 20
    c = fit_curve(x, seed_comm(x)).curve
    again = Curve.from_json(json.loads(json.dumps(c.to_json())))
    np.testing.assert_allclose(again(x), c(x))


CSV = """# kind,collective,... (a comment)
kind,collective,ranks,dtype,m,n,k,bytes,time_us
gemm,,,f16,128,8192,3072,,25.09375
gemm,,,f16,1024,8192,3072,,200.75
gemm,,,f16,4096,8192,3072,,803
comm,all-reduce,8,f16,,,,4194304,{t4}
comm,all-reduce,8,f16,,,,33554432,{t32}
comm,all-reduce,8,f16,2048,8192,,,{t32}
comm,all-reduce,8,f16,,,,67108864,{t64}
"""


def small_csv():
    t = seed_comm([4, 32, 64])
    return CSV.format(t4=t[0], t32=t[1], t64=t[2])


def test_measurements_group_and_convert_units():
    series = parse_measurements(small_csv(), "m.csv")
    assert {str(k) for k in series} == {"gemm n=8192 k=3072 f16",
                                        "all-reduce ranks=8"}
    results = fit_measurements(series)
    comm = [r for r in results if r.x_unit == "MiB"][0]
    assert comm.points == 4 and comm.sizes == 3
    prof = build_profile(results, name="t", source="m.csv")
    entry = prof["collectives"]["all-reduce"][0]
    assert entry["ranks"] == 8 and entry["x_unit"] == "MiB"
    assert prof["gemm"]["curves"][0]["n"] == 8192


def test_base_profile_keeps_device_and_replaces_curves(repo_root):
    base = json.loads((repo_root / "profiles" /
                       "h100-nvlink-datasheet.json").read_text())
    results = fit_measurements(parse_measurements(small_csv()))
    prof = build_profile(results, name="h100-fitted", source="m.csv",
                         base=base, base_name="h100-nvlink-datasheet")
    assert prof["device"] == base["device"]
    assert prof["gemm"]["roofline"] == base["gemm"]["roofline"]
    assert len(prof["collectives"]["all-reduce"]) == 1  # replaced (ranks 8)
    assert "fitted" in prof["collectives"]["all-reduce"][0]["note"]
    assert prof["collectives"]["all-gather"] == base["collectives"]["all-gather"]
    assert list(prof)[:3] == ["name", "description", "provenance"]


def test_fitted_gemm_curve_keeps_the_base_batched_curves():
    results = fit_measurements(parse_measurements(small_csv()))
    batched = {"n": 8192, "k": 3072, "dtype": "f16", "batch": 8,
               "table": [[1024, 100.0], [4096, 380.0]]}
    single = {"n": 8192, "k": 3072, "dtype": "f16",
              "table": [[1024, 90.0], [4096, 350.0]]}
    base = {"name": "b", "gemm": {"curves": [single, batched]}}
    prof = build_profile(results, name="t", source="m.csv", base=base,
                         base_name="b")
    curves = prof["gemm"]["curves"]
    assert batched in curves          # a batch-8 curve is not replaced
    assert single not in curves       # the batch-1 curve of the shape is
    assert sum(c.get("batch", 1) == 1 and c["n"] == 8192 for c in curves) == 1


def test_no_gemm_and_no_base_is_an_error():
    text = "kind,collective,ranks,bytes,time_us\n" \
           "comm,all-reduce,8,1048576,40\ncomm,all-reduce,8,2097152,60\n"
    results = fit_measurements(parse_measurements(text))
    with pytest.raises(FitError, match="needs GEMM curves"):
        build_profile(results, name="x", source="x.csv")


def test_cli_writes_profile_and_reports_residuals(tmp_path):
    out = tmp_path / "prof.json"
    proc = run_fit(tmp_path / "meas.csv", small_csv(), out)
    assert proc.returncode == 0, proc.stderr
    assert "residuals: max" in proc.stdout and "all-reduce ranks=8" in proc.stdout
    prof = json.loads(out.read_text())
    assert prof["name"] == "prof"


def test_cli_names_the_bad_row(tmp_path):
    csv_path = tmp_path / "bad.csv"
    proc = run_fit(csv_path, "kind,m,n,k,time_us\ngemm,128,8192,3072,10\n"
                   "gemm,256,8192,3072,fast\n", tmp_path / "p.json")
    assert proc.returncode == 1
    assert f"{csv_path}:3: column 'time_us'" in proc.stderr
    assert not (tmp_path / "p.json").exists()


@pytest.mark.parametrize("times", [("1e-300", "1e300", "1e-300"),
                                   ("1e308", "1e308", "1e308")])
def test_cli_singular_fit_is_a_one_line_error(tmp_path, times):
    # Times so far apart (or so large) that the normal equations are
    # singular: numpy's LinAlgError ended the tool in a traceback.
    proc = run_fit(tmp_path / "singular.csv", "kind,m,n,k,time_us\n" + "".join(
        f"gemm,{m},8192,3072,{t}\n" for m, t in zip((128, 256, 512), times)),
        tmp_path / "p.json")
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 1), proc.stderr
    if proc.returncode == 1:
        assert proc.stderr.startswith("overlap.fit: error: gemm n=8192")
        assert len(proc.stderr.strip().splitlines()) == 1


def test_cli_deeply_nested_base_is_a_one_line_error(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100000 + "]" * 100000)
    proc = run_fit(tmp_path / "meas.csv", small_csv(), tmp_path / "p.json",
                   "--base", str(deep))
    assert proc.returncode == 1
    assert proc.stderr == f"overlap.fit: error: {deep}: JSON nested too deeply\n"
    assert not (tmp_path / "p.json").exists()
