"""overlap.plot draws real pictures (size and dimensions checked) from
traces, plans and sweep CSVs, and rejects malformed inputs clearly."""

import json
import subprocess
import sys

import pytest

from conftest import assert_picture
from overlap.plot import SweepError, ideal_speedup, parse_sweep, plot_timeline
from overlap.trace import TraceError, load_timeline, timeline_from_json


def chrome_trace(tiles, gemm_us=100.0, comm_us=150.0, title="synthetic"):
    """A trace in overlap-plan's format, simulated without contention."""
    ev = [{"name": "process_name", "ph": "M", "pid": 1, "tid": 0,
           "args": {"name": title}},
          {"name": "thread_name", "ph": "M", "pid": 1, "tid": 1,
           "args": {"name": "compute"}},
          {"name": "thread_name", "ph": "M", "pid": 1, "tid": 2,
           "args": {"name": "comm"}}]
    g_end = c_end = 0.0
    for i, rows in enumerate(tiles):
        g = gemm_us * rows / 512
        c = comm_us * rows / 512
        ev.append({"name": f"gemm {i}", "ph": "X", "pid": 1, "tid": 1,
                   "ts": g_end, "dur": g, "args": {"tile": i, "rows": rows}})
        g_end += g
        start = max(g_end, c_end)
        ev.append({"name": f"comm {i}", "ph": "X", "pid": 1, "tid": 2,
                   "ts": start + 1000, "dur": c,
                   "args": {"tile": i, "rows": rows}})
        c_end = start + c
    return {"traceEvents": ev}


def test_timeline_from_chrome_trace(tmp_path):
    p = tmp_path / "t.json"
    p.write_text(json.dumps(chrome_trace([512, 1024, 1024])))
    tl = load_timeline(p)
    assert len(tl.stream("compute")) == 3 and len(tl.stream("comm")) == 3
    assert tl.title == "synthetic"
    assert [b.rows for b in tl.stream("comm")] == [512, 1024, 1024]
    out = plot_timeline(tl, tmp_path / "t.png", serial_us=1500, ideal_us=750)
    assert_picture(out)


def test_timeline_predicted_and_measured_cli(tmp_path):
    pred, meas = tmp_path / "pred.json", tmp_path / "meas.json"
    pred.write_text(json.dumps(chrome_trace([512] * 4)))
    meas.write_text(json.dumps(chrome_trace([512] * 4, gemm_us=110)))
    out = tmp_path / "tl.png"
    proc = subprocess.run(
        [sys.executable, "-m", "overlap.plot", "timeline", str(pred),
         "--measured", str(meas), "--serial", "1000", "--ideal", "600",
         "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    w, h = assert_picture(out)
    single = tmp_path / "single.png"
    plot_timeline(load_timeline(pred), single)
    assert h > assert_picture(single)[1]  # measured lanes make it taller


def test_trace_errors(tmp_path):
    with pytest.raises(TraceError, match="neither a Chrome trace"):
        timeline_from_json({"foo": 1}, "x.json")
    with pytest.raises(TraceError, match="no complete"):
        timeline_from_json({"traceEvents": []}, "x.json")
    with pytest.raises(TraceError, match=r"traceEvents\[0\] \('k'\): cannot "
                       "tell its stream"):
        timeline_from_json([{"name": "k", "ph": "X", "ts": 0, "dur": 1}])
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(TraceError, match="not JSON"):
        load_timeline(bad)


def test_ideal_speedup_is_the_bell():
    assert ideal_speedup(1.0) == 2.0
    assert ideal_speedup(0.25) == pytest.approx(1.25)
    assert ideal_speedup(4.0) == pytest.approx(1.25)


SWEEP = """shape,leg,compute_us,comm_us,serial_us,overlapped_us,ideal_us,predicted_us
4096x8192x512,mc2,100,400,500,460,400,450
4096x8192x1024,mc2,200,400,600,480,400,470
4096x8192x3072,mc2,600,400,1000,700,600,690
4096x8192x8192,mc2,1600,400,2000,1750,1600,1720
4096x8192x3072,uniform:4,600,400,1000,760,,
"""


def test_sweep_rows_and_metrics():
    rows = parse_sweep(SWEEP, "b.csv")
    r = rows[2]
    assert r.ratio == 1.5
    assert r.speedup("measured") == pytest.approx(1000 / 700)
    assert r.efficiency("measured") == pytest.approx(300 / 400)
    assert r.efficiency("predicted") == pytest.approx(310 / 400)
    u = rows[4]
    assert u.ideal_us == 600 and u.predicted_us is None  # defaults


def test_sweep_plot(tmp_path):
    p = tmp_path / "b.csv"
    p.write_text(SWEEP)
    out = tmp_path / "sweep.png"
    proc = subprocess.run([sys.executable, "-m", "overlap.plot", "sweep",
                           str(p), "-o", str(out)], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    assert_picture(out, min_h=500)


@pytest.mark.parametrize("text, expected", [
    ("compute_us,comm_us,overlapped_us\n1,2,x\n",
     "b.csv:2: column 'overlapped_us': expected a positive number (µs), "
     "got 'x'"),
    ("compute_us,comm_us,overlapped_us\n1,0,2\n",
     "b.csv:2: column 'comm_us': expected a positive number (µs), got '0'"),
    ("compute_us,comm_us,serial_us,overlapped_us\n1,2,inf,2\n",
     "b.csv:2: column 'serial_us': expected a positive number (µs), "
     "got 'inf'"),
    ("compute_us,comm_us,overlapped_us\n1,2\n", "b.csv:2: expected 3 fields"),
    ("compute_us,overlapped_us\n1,2\n", "column 'comm_us': missing"),
    ("compute_us,comm_us\n1,2\n", "needs overlapped_us or predicted_us"),
    ("compute_us,comm_us,overlapped_us,predicted_us\n1,2,,\n",
     "b.csv:2: column 'overlapped_us': empty"),
    ("compute_us,comm_us,speed\n", "column 'speed': unknown column"),
    ("compute_us,comm_us,overlapped_us\n", "no rows"),
])
def test_sweep_errors(text, expected):
    with pytest.raises(SweepError) as info:
        parse_sweep(text, "b.csv")
    assert expected in str(info.value)


def test_cli_deeply_nested_trace_is_a_one_line_error(tmp_path):
    # json's RecursionError ended the tool in a traceback.
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100000 + "]" * 100000)
    proc = subprocess.run([sys.executable, "-m", "overlap.plot", "timeline",
                           str(deep), "-o", str(tmp_path / "t.png")],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr == (f"overlap.plot: error: {deep}: JSON nested too "
                           "deeply\n")
    with pytest.raises(TraceError, match="nested too deeply"):
        load_timeline(deep)
