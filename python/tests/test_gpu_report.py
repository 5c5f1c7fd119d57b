"""scripts/gpu/report.py on a results directory laid out as run.sh writes it
(CSV headers as overlap-bench writes them): the summary figures are the
statistics of the CSVs' own columns, a shape slower than serial and a
failed check are named, the plan is set against 4 uniform tiles shape by
shape, the pack kernel's strided blocks against the 80 % goal, and
--copy-csv copies every CSV."""

import math
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REPORT = ROOT / "scripts" / "gpu" / "report.py"

BENCH_HEADER = ("leg,collective,ranks,dtype,M,N,K,size_bytes,wire_bytes,"
                "tiles,gemm_us,comm_us,serial_us,overlapped_us,ideal_us,"
                "predicted_us,speedup,eta,prediction_error,tile_rows,"
                "tile_batch,tile_batched_us,tile_contiguous_us,knobs,check")
PACK_HEADER = ("device,rows,row_bytes,stride_bytes,elem_bytes,access_bytes,"
               "bytes,pack_us,unpack_us,memcpy2d_us,d2d_us,pack_gbps,"
               "unpack_gbps,memcpy2d_gbps,d2d_gbps,pack_over_d2d,check")


def bench_row(m, tiles, serial, over, ideal, pred, check="ok", knobs=""):
    eta = (serial - over) / (serial - ideal)
    err = (pred - over) / over
    return (f"copy-engine,all-reduce,8,bf16,{m},8192,3072,1,1,{tiles},"
            f"1,1,{serial},{over},{ideal},{pred},{serial / over},{eta},{err},"
            f"0,0,0,0,\"{knobs}\",\"{check}\"")


RUNTIME = ("# runtime: sms 132, comm_sms 16; driver 13.0, CUDA runtime "
           "13.0, NCCL 2.28.9 (built with 2.28.3), cuBLASLt 13.1.0")


def write(path, header, rows):
    path.write_text(RUNTIME + "\n" + header + "\n" + "\n".join(rows)
                    + "\n")


def run(*args):
    return subprocess.run([sys.executable, str(REPORT), *map(str, args)],
                          capture_output=True, text=True)


def test_report(tmp_path):
    res = tmp_path / "results"
    res.mkdir()
    (res / "device.txt").write_text(
        "| NVIDIA H200  On | Driver Version: 580.159.03 |\n")
    (res / "steps.csv").write_text(
        "command,exit,seconds,bound\ncuda-tests,0,41,100\n"
        "programs,skipped,0,0\n")
    planned = [bench_row(128, 1, 100.0, 110.0, 60.0, 104.0),
               bench_row(4096, 4, 1000.0, 700.0, 650.0, 690.0),
               bench_row(8192, 6, 2000.0, 1300.0, 1250.0, 1330.0,
                         check="FAIL rank 3: overlapped: NaN")]
    write(res / "bench-planned-all-reduce.csv", BENCH_HEADER, planned)
    write(res / "bench-uniform4-all-reduce.csv", BENCH_HEADER,
          [bench_row(128, 4, 100.0, 130.0, 60.0, 120.0),
           bench_row(4096, 4, 1000.0, 700.0, 650.0, 690.0),
           bench_row(8192, 4, 2000.0, 1400.0, 1250.0, 1380.0)])
    write(res / "pack.csv", PACK_HEADER,
          ['"H200",64,256,512,2,16,16384,1,1,1,1,900,900,800,1000,0.9,"ok"',
           '"H200",64,256,1024,2,16,16384,1,1,1,1,700,700,800,1000,0.7,"ok"',
           '"H200",64,256,256,2,16,16384,1,1,1,1,990,990,800,1000,0.99,"ok"'])
    proc = run(res, "--copy-csv", tmp_path / "perf")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout

    etas = [(100 - 110) / 40, (1000 - 700) / 350, (2000 - 1300) / 750]
    errs = [abs(104 / 110 - 1), abs(690 / 700 - 1), abs(1330 / 1300 - 1)]
    row = [line for line in out.splitlines()
           if line.startswith("| bench-planned-all-reduce |")][0]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "3"
    assert cells[2] == f"{statistics.median(etas):.3f}"
    assert cells[3] == f"{max(etas):.3f}"
    assert cells[4] == f"{100 * statistics.fmean(errs):.1f} %"
    assert cells[5] == f"{100 * statistics.median(errs):.1f} %"
    assert cells[6] == f"{100 * max(errs):.1f} %"
    assert cells[7] == "1" and cells[8] == "1", cells
    assert "slower than serial at 128x8192x3072 (1 tiles" in out
    # The plan against 4 uniform tiles, per shape.
    assert f"| all-reduce | 8192 | 8192 | 3072 | 6 | 1300.0 | 1400.0 | " \
        f"{1300 / 1400:.3f} |" in out
    assert "FAIL rank 3: overlapped: NaN" in out
    # Two strided blocks (0.9 and 0.7), the contiguous one left out.
    assert "pack / d2d median 0.80, 1 of 2 blocks at >= 0.80" in out
    assert "| programs | skipped | 0 | 0 |" in out
    assert "Driver Version: 580.159.03" in out
    assert "    runtime: sms 132, comm_sms 16; driver 13.0, CUDA runtime " \
        "13.0, NCCL 2.28.9" in out
    assert sorted(p.name for p in (tmp_path / "perf").iterdir()) == [
        "bench-planned-all-reduce.csv", "bench-uniform4-all-reduce.csv",
        "pack.csv", "steps.csv"]


def test_report_without_results(tmp_path):
    proc = run(tmp_path / "missing")
    assert proc.returncode == 2 and "usage: report.py" in proc.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = run(empty)
    assert proc.returncode == 0 and "(no device.txt)" in proc.stdout


def test_write_prediction_error(tmp_path):
    """--write-prediction-error: the mean |prediction error| of each
    collective's planned rows (failed checks left out, all-to-all's two
    sides together) goes into the profile's "prediction_error"; the
    collectives not measured keep their value; several legs need --leg."""
    import json
    res = tmp_path / "results"
    res.mkdir()
    write(res / "bench-planned-all-reduce.csv", BENCH_HEADER,
          [bench_row(4096, 4, 1000.0, 700.0, 650.0, 690.0),
           bench_row(8192, 6, 2000.0, 1300.0, 1250.0, 1365.0),
           bench_row(128, 1, 100.0, 100.0, 60.0, 150.0, check="FAIL")])
    a2a = [bench_row(4096, 4, 1000.0, 800.0, 650.0, 720.0)
           .replace("all-reduce", "all-to-all-dispatch"),
           bench_row(4096, 4, 1000.0, 800.0, 650.0, 840.0)
           .replace("all-reduce", "all-to-all-combine")]
    write(res / "bench-planned-all-to-all-dispatch.csv", BENCH_HEADER, a2a)
    write(res / "bench-uniform4-all-reduce.csv", BENCH_HEADER,
          [bench_row(4096, 4, 1000.0, 500.0, 650.0, 100.0)])
    profile = tmp_path / "p.json"
    base = json.loads((ROOT / "profiles" / "h100-nvlink-datasheet.json")
                      .read_text())
    base["prediction_error"] = {"all-gather": 0.05, "all-reduce": 0.9}
    profile.write_text(json.dumps(base))
    proc = run(res, "--write-prediction-error", profile)
    assert proc.returncode == 0, proc.stderr
    written = json.loads(profile.read_text())
    assert written["prediction_error"] == {
        "all-gather": 0.05,
        "all-reduce": round((10 / 700 + 65 / 1300) / 2, 4),
        "all-to-all": round((0.1 + 0.05) / 2, 4)}
    # Everything else as it was.
    del written["prediction_error"], base["prediction_error"]
    assert written == base

    # Two legs: refused unless --leg names one.
    write(res / "bench-planned-short-sm-copy.csv", BENCH_HEADER,
          [bench_row(4096, 4, 1000.0, 700.0, 650.0, 350.0)
           .replace("copy-engine", "sm-copy")])
    proc = run(res, "--write-prediction-error", profile)
    assert proc.returncode == 1 and "--leg" in proc.stderr
    proc = run(res, "--write-prediction-error", profile, "--leg", "sm-copy")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(profile.read_text())["prediction_error"][
        "all-reduce"] == 0.5


def test_report_session_questions(tmp_path):
    """The session's first checks and its questions: gtest's summary, the
    device layer's and the TCP run's verdicts, the rank-major check's
    rows, what DEADLINE cut or skipped apart from what failed, and the
    variants of a question side by side per shape."""
    res = tmp_path / "results"
    res.mkdir()
    (res / "steps.csv").write_text(
        "command,exit,seconds,bound\ncuda-tests,0,22,60\n"
        "process-tcp,1,3,40\nbench-tiles-8-copy-engine,cut,13,13\n"
        "bench-tiles-16-copy-engine,skipped,0,0\n")
    (res / "cuda-tests.txt").write_text(
        "[==========] 61 tests ran.\n[  PASSED  ] 61 tests.\n")
    (res / "device-layer.txt").write_text(
        "call 0: 0 of 65536 outputs wrong\ndevice layer check: passed\n")
    (res / "process-tcp.txt").write_text(
        "overlap-exec: error: no CUDA device\n")
    write(res / "bench-rank-major-check-sm-copy.csv", BENCH_HEADER,
          [bench_row(1024, 2, 100.0, 80.0, 60.0, 82.0)])
    write(res / "bench-planned-short-copy-engine.csv", BENCH_HEADER,
          [bench_row(4096, 6, 1000.0, 700.0, 650.0, 690.0)])
    for t, over in ((2, 800.0), (8, 690.0)):
        write(res / f"bench-tiles-{t}-copy-engine.csv", BENCH_HEADER,
              [bench_row(4096, t, 1000.0, over, 650.0, 690.0)])
    out = run(res)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "| cuda-tests | [  PASSED  ] 61 tests. |" in text
    assert "| device-layer | device layer check: passed |" in text
    assert "| process-tcp | overlap-exec: error: no CUDA device |" in text
    assert "| bench-rank-major-check-sm-copy | 1 runs, check: ok |" in text
    assert "cut by DEADLINE: 1 (bench-tiles-8-copy-engine)." in text
    assert "skipped (no time left): 1 (bench-tiles-16-copy-engine)." in text
    assert "failed: process-tcp (exit 1)." in text
    assert "### Forced tile counts against the plan (copy-engine)" in text
    eta = {t: (1000.0 - o) / (1000.0 - 650.0)
           for t, o in ((6, 700.0), (2, 800.0), (8, 690.0))}
    assert (f"| all-reduce | 4096 | 8192 | 3072 | {eta[6]:.3f} (6) "
            f"| {eta[2]:.3f} (2) | {eta[8]:.3f} (8) |") in text
    # One variant alone is no comparison.
    assert "Rank-major against interleaved" not in text
