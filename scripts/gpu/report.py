#!/usr/bin/env python3
"""Summarizes a GPU session's results (scripts/gpu/run.sh's RESULTS) as
Markdown, for docs/performance.md.

    report.py RESULTS_DIR [--copy-csv DIR]
              [--write-prediction-error PROFILE [--leg LEG]]

Reads what run.sh wrote: device.txt and preflight.txt (device, driver,
CUDA, NCCL), steps.csv (every command's status and seconds; what
DEADLINE cut or skipped apart from what failed), the first checks'
verdicts (cuda-tests.txt's gtest summary, device-layer.txt,
process-tcp.txt, bench-rank-major-check-*.csv), programs-*.txt and
programs.txt (the programs' last line), bench-*.csv (overlap-bench
sweeps), pack.csv and knobs.csv. Sets the variants of each of a session's
questions side by side, eta (tiles) per shape: forced tile counts against
the plan, rank-major against interleaved, the timing gate on and off,
dispatch's and the sm-copy leg's SM budgets. Prints, per sweep, every shape (serial, overlapped, ideal,
predicted, speedup, eta, prediction error, the check) and a summary: eta
median and best, |prediction error| mean, median and max, the shapes
slower than serial and the tiles a planned sweep chose for them; the
planned sweep against 4 uniform tiles shape by shape; the pack kernel
against the device-to-device copy (goal: >= 80 % on strided rows); each
knob setting's median overlapped time. Figures are taken from the CSVs as
overlap-bench computed them (eta = (serial - overlapped) / (serial -
ideal); prediction error = (predicted - overlapped) / overlapped), not
recomputed. With --copy-csv, the CSVs are copied there (docs/perf/).
With --write-prediction-error, the mean |prediction error| of each
collective over the planned sweeps' rows (bench-planned-*.csv, checks
passed; all-to-all dispatch and combine together) is written into PROFILE
as its "prediction_error" (docs/profiles.md), a fraction per collective,
the collectives not measured left as they were; the rows must come from
one leg (--leg picks it when the results hold several), the leg PROFILE
was calibrated on.
Standard library only: it runs on the GPU machine too (run.sh ends with
it). Exit status 0, 2 when RESULTS_DIR is not a directory.
"""

import csv
import json
import math
import shutil
import statistics
import sys
from pathlib import Path


def read_csv(path):
    """Rows of a CSV whose comment lines start with '#'; [] if unreadable."""
    try:
        lines = [line for line in path.read_text().splitlines()
                 if line and not line.startswith("#")]
    except OSError:
        return []
    return list(csv.DictReader(lines))


def num(row, key):
    try:
        v = float(row.get(key, ""))
    except ValueError:
        return math.nan
    return v


def finite(values):
    return [v for v in values if not math.isnan(v) and not math.isinf(v)]


def fmt(v, digits=1):
    return "-" if math.isnan(v) else f"{v:.{digits}f}"


def pct(v):
    return "-" if math.isnan(v) else f"{100 * v:+.1f} %"


def median(values):
    values = finite(values)
    return statistics.median(values) if values else math.nan


def header(lines, title):
    lines += ["", f"## {title}", ""]


def device_section(results, lines):
    header(lines, "Device")
    dev = results / "device.txt"
    text = dev.read_text().splitlines() if dev.exists() else []
    keep = [t.strip() for t in text
            if "NVIDIA" in t or "Driver Version" in t or "release" in t
            or t[:4].isdigit() or "UTC" in t]
    pre = results / "preflight.txt"
    if pre.exists():
        keep += [t.strip() for t in pre.read_text().splitlines()
                 if t.startswith("preflight: NCCL")
                 or t.startswith("preflight: loads")]
    # The runtime's line (settings and driver, CUDA, NCCL, cuBLASLt
    # versions) from the first CSV that has one.
    for path in sorted(results.glob("*.csv")):
        first = path.read_text(errors="replace").split("\n", 1)[0]
        if first.startswith("# runtime: "):
            keep.append(first[2:])
            break
    lines += [f"    {t}" for t in keep] or ["(no device.txt)"]


def steps_section(results, lines):
    rows = read_csv(results / "steps.csv")
    if not rows:
        return
    header(lines, "Steps")
    lines += ["| command | exit | seconds | bound |", "| --- | --- | --- | --- |"]
    lines += [f"| {r['command']} | {r['exit']} | {r['seconds']} | {r['bound']} |"
              for r in rows]
    total = sum(int(r["seconds"]) for r in rows if r["seconds"].isdigit())
    lines += ["", f"{len(rows)} commands, {total} s in all."]
    # DEADLINE's doing (run.sh: "cut" stopped, "skipped" never started)
    # apart from the commands that failed.
    for verdict, what in (("cut", "cut by DEADLINE"),
                          ("skipped", "skipped (no time left)")):
        names = [r["command"] for r in rows if r["exit"] == verdict]
        if names:
            lines.append(f"{what}: {len(names)} ({', '.join(names[:8])}"
                         f"{', ...' if len(names) > 8 else ''}).")
    failed = [f"{r['command']} (exit {r['exit']})" for r in rows
              if r["exit"] not in ("0", "cut", "skipped")]
    if failed:
        lines.append("failed: " + ", ".join(failed) + ".")


def programs_section(results, lines):
    """The core programs' step (programs-core.txt) and the rest's."""
    done = False
    for name in ("programs-core.txt", "programs-jax.txt",
                 "programs-llama.txt", "programs.txt"):
        path = results / name
        if not path.exists():
            continue
        text = path.read_text().splitlines()
        last = [t for t in text if t.startswith("programs: ")]
        failed = [t[4:] for t in text if t.startswith("*** ")]
        if not done:
            header(lines, "Compiled programs")
            done = True
        lines.append(f"{name[:-4]}: " + (last[-1] if last else
                     "(no summary line: the step was cut)"))
        lines += [f"- {t}" for t in failed]


def last_line(path, prefixes):
    """The last line of PATH starting with one of PREFIXES, else None."""
    if not path.exists():
        return None
    found = [t.strip() for t in path.read_text(errors="replace").splitlines()
             if t.strip().startswith(prefixes)]
    return found[-1] if found else None


def checks_section(results, lines):
    """The session's first checks: the CUDA unit tests (gtest's summary),
    the device layer's stream order, one process over TCP, the rank-major
    tiles' first runs."""
    found = []
    for name, prefixes in (
            ("cuda-tests", ("[  PASSED  ]", "[  FAILED  ]", "[  SKIPPED ]")),
            ("cuda-tests-two-processes", ("[  PASSED  ]", "[  FAILED  ]")),
            ("device-layer", ("device layer check:", "call ", "error")),
            ("process-tcp", ("OK", "MISMATCH", "overlap-exec: error"))):
        path = results / f"{name}.txt"
        if path.exists():
            found.append((name, last_line(path, prefixes)
                          or "(no verdict: the command was cut or died)"))
    for path in sorted(results.glob("bench-rank-major-check-*.csv")):
        rows = sweep_rows(path)
        checks = sorted({r.get("check", "") for r in rows}) or ["(no rows)"]
        found.append((path.stem, f"{len(rows)} runs, check: "
                      + "; ".join(checks)))
    if not found:
        return
    header(lines, "First checks")
    lines += ["| command | result |", "| --- | --- |"]
    lines += [f"| {n} | {v} |" for n, v in found]


def pivot(lines, title, columns):
    """One row per (collective, M, N, K), one column per (label, CSV): eta
    and the tiles run, to set the variants of one question side by side."""
    data = [(label, {(r["collective"], r["M"], r["N"], r["K"]): r
                     for r in sweep_rows(path)})
            for label, path in columns if path.exists()]
    data = [(label, rows) for label, rows in data if rows]
    if len(data) < 2:
        return
    keys = []
    for _, rows in data:
        keys += [k for k in rows if k not in keys]
    lines += ["", f"### {title}", "", "η (tiles) per variant.", "",
              "| collective | M | N | K | " + " | ".join(l for l, _ in data)
              + " |", "| --- | ---: | ---: | ---: |"
              + " ---: |" * len(data)]
    for k in keys:
        cells = []
        for _, rows in data:
            r = rows.get(k)
            cells.append(f"{fmt(num(r, 'eta'), 3)} ({r['tiles']})" if r
                         else "")
        lines.append(f"| {' | '.join(k)} | " + " | ".join(cells) + " |")


def questions_section(results, lines):
    """Issue 49's questions, each variant beside the others."""
    r = results
    tiles = sorted(r.glob("bench-tiles-*-copy-engine.csv"),
                   key=lambda p: int(p.stem.split("-")[2])
                   if p.stem.split("-")[2].isdigit() else 0)
    sms = sorted(r.glob("bench-comm-sms-*-sm-copy.csv"),
                 key=lambda p: int(p.stem.split("-")[3])
                 if p.stem.split("-")[3].isdigit() else 0)
    dispatch = sorted(r.glob("bench-dispatch-comm-sms-*-sm-copy.csv"))
    start = len(lines)
    pivot(lines, "Forced tile counts against the plan (copy-engine)",
          [("plan", r / "bench-planned-short-copy-engine.csv")]
          + [(f"{p.stem.split('-')[2]} tiles", p) for p in tiles])
    pivot(lines, "Rank-major against interleaved (copy-engine, planned)",
          [("rank-major", r / "bench-layout-rank-major-short-copy-engine.csv"),
           ("interleaved",
            r / "bench-layout-interleaved-short-copy-engine.csv")])
    pivot(lines, "The timing gate on and off (copy-engine, planned)",
          [("gate on", r / "bench-planned-short-copy-engine.csv"),
           ("gate off", r / "bench-nogate-planned-short-copy-engine.csv")])
    pivot(lines, "Dispatch: SM budget (sm-copy, planned)",
          [(f"comm_sms {p.stem.split('-')[4]}", p) for p in dispatch])
    pivot(lines, "The sm-copy leg's SM budget (planned)",
          [("profile's", r / "bench-planned-short-sm-copy.csv")]
          + [(f"comm_sms {p.stem.split('-')[3]}", p) for p in sms])
    if len(lines) > start:
        lines[start:start] = ["", "## Questions"]


def sweep_rows(path):
    return [r for r in read_csv(path) if r.get("M")]


def sweep_table(name, rows, lines):
    lines += ["", f"### {name}", "",
              "| collective | M | N | K | tiles | serial µs | overlapped µs "
              "| ideal µs | predicted µs | speedup | η | pred. error | check |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
              "| ---: | ---: | ---: | --- |"]
    for r in rows:
        lines.append(
            f"| {r['collective']} | {r['M']} | {r['N']} | {r['K']} "
            f"| {r['tiles']} | {fmt(num(r, 'serial_us'))} "
            f"| {fmt(num(r, 'overlapped_us'))} | {fmt(num(r, 'ideal_us'))} "
            f"| {fmt(num(r, 'predicted_us'))} | {fmt(num(r, 'speedup'), 3)} "
            f"| {fmt(num(r, 'eta'), 3)} | {pct(num(r, 'prediction_error'))} "
            f"| {r.get('check', '')} |")


def summary(rows):
    """eta and |prediction error| statistics of a sweep's rows."""
    etas = finite([num(r, "eta") for r in rows])
    errs = finite([abs(num(r, "prediction_error")) for r in rows])
    slower = [r for r in rows if num(r, "speedup") < 1.0]
    bad = [r for r in rows if r.get("check", "").strip().lower()
           not in ("ok", "")]
    return {
        "shapes": len(rows),
        "eta_median": median(etas), "eta_best": max(etas, default=math.nan),
        "err_mean": statistics.fmean(errs) if errs else math.nan,
        "err_median": median(errs), "err_max": max(errs, default=math.nan),
        "slower": slower, "failed": bad,
    }


def sweeps_section(results, lines):
    sweeps = [(p.stem, sweep_rows(p))
              for p in sorted(results.glob("bench-*.csv"))]
    sweeps = [(name, rows) for name, rows in sweeps if rows]
    if not sweeps:
        return
    header(lines, "Sweeps")
    lines += ["| sweep | shapes | η median | η best | pred. error mean "
              "| median | max | slower than serial | check failures |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    notes = []
    for name, rows in sweeps:
        s = summary(rows)
        lines.append(
            f"| {name} | {s['shapes']} | {fmt(s['eta_median'], 3)} "
            f"| {fmt(s['eta_best'], 3)} | {fmt(100 * s['err_mean'])} % "
            f"| {fmt(100 * s['err_median'])} % | {fmt(100 * s['err_max'])} % "
            f"| {len(s['slower'])} | {len(s['failed'])} |")
        if s["slower"]:
            notes.append(
                f"- {name}: slower than serial at " + ", ".join(
                    f"{r['M']}x{r['N']}x{r['K']} ({r['tiles']} tiles, "
                    f"speedup {fmt(num(r, 'speedup'), 3)})"
                    for r in s["slower"]))
    if notes:
        lines += [""] + notes
    planned_vs_uniform(results, lines)
    for name, rows in sweeps:
        sweep_table(name, rows, lines)


def planned_vs_uniform(results, lines):
    pairs = []
    for planned in sorted(results.glob("bench-planned-*.csv")):
        uniform = results / planned.name.replace("bench-planned-",
                                                 "bench-uniform4-")
        if uniform.exists():
            pairs.append((planned, uniform))
    if not pairs:
        return
    lines += ["", "### The plan against 4 uniform tiles", "",
              "| sweep | M | N | K | plan tiles | plan µs | 4 tiles µs "
              "| plan / 4 tiles |", "| --- | ---: | ---: | ---: | ---: | ---: "
              "| ---: | ---: |"]
    for planned, uniform in pairs:
        u = {(r["M"], r["N"], r["K"]): r for r in sweep_rows(uniform)}
        for r in sweep_rows(planned):
            o = u.get((r["M"], r["N"], r["K"]))
            if not o:
                continue
            a, b = num(r, "overlapped_us"), num(o, "overlapped_us")
            lines.append(
                f"| {planned.stem[len('bench-planned-'):]} | {r['M']} "
                f"| {r['N']} | {r['K']} | {r['tiles']} | {fmt(a)} | {fmt(b)} "
                f"| {fmt(a / b if b else math.nan, 3)} |")


def pack_section(results, lines):
    rows = read_csv(results / "pack.csv")
    if not rows:
        return
    header(lines, "Pack kernel")
    lines += ["| rows | row bytes | stride bytes | pack GB/s | unpack GB/s "
              "| memcpy2D GB/s | d2d GB/s | pack / d2d | check |",
              "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    strided = []
    for r in rows:
        ratio = num(r, "pack_over_d2d")
        if r["stride_bytes"] != r["row_bytes"]:
            strided.append(ratio)
        lines.append(
            f"| {r['rows']} | {r['row_bytes']} | {r['stride_bytes']} "
            f"| {fmt(num(r, 'pack_gbps'))} | {fmt(num(r, 'unpack_gbps'))} "
            f"| {fmt(num(r, 'memcpy2d_gbps'))} | {fmt(num(r, 'd2d_gbps'))} "
            f"| {fmt(ratio, 2)} | {r.get('check', '')} |")
    ok = [v for v in finite(strided) if v >= 0.8]
    lines += ["", f"Strided rows: pack / d2d median {fmt(median(strided), 2)}, "
              f"{len(ok)} of {len(finite(strided))} blocks at >= 0.80 "
              "(goal)."]


def knobs_section(results, lines):
    rows = read_csv(results / "knobs.csv")
    if not rows:
        return
    header(lines, "Knobs")
    by = {}
    for r in rows:
        by.setdefault(r.get("knobs", ""), []).append(num(r, "overlapped_us"))
    lines += ["| setting | runs | median overlapped µs |", "| --- | ---: | ---: |"]
    for k, v in sorted(by.items(), key=lambda kv: median(kv[1])):
        lines.append(f"| {k} | {len(v)} | {fmt(median(v))} |")


def prediction_errors(results, leg=None):
    """{collective: mean |prediction error|} over the planned sweeps' rows
    whose check passed, and the legs they came from."""
    errs, legs = {}, set()
    for path in sorted(results.glob("bench-planned-*.csv")):
        for r in sweep_rows(path):
            if r.get("check", "").strip().lower() not in ("ok", ""):
                continue
            if leg and r.get("leg") != leg:
                continue
            e = abs(num(r, "prediction_error"))
            if math.isnan(e) or math.isinf(e):
                continue
            coll = r.get("collective", "")
            if coll.startswith("all-to-all"):
                coll = "all-to-all"
            legs.add(r.get("leg", ""))
            errs.setdefault(coll, []).append(e)
    return {c: statistics.fmean(v) for c, v in errs.items()}, legs


def write_prediction_error(results, profile, leg):
    """Writes the measured errors into PROFILE; a message on failure."""
    errs, legs = prediction_errors(results, leg)
    if len(legs) > 1:
        return (f"the planned sweeps hold the legs {', '.join(sorted(legs))}: "
                "name the profile's with --leg")
    if not errs:
        return "no planned sweep row with a prediction error"
    try:
        data = json.loads(profile.read_text())
    except (OSError, ValueError) as e:
        return f"cannot read {profile}: {e}"
    if not isinstance(data, dict):
        return f"{profile}: not a profile (a JSON object)"
    merged = dict(data.get("prediction_error") or {})
    # The profile takes fractions in [0, 1].
    merged.update({c: round(min(e, 1.0), 4) for c, e in sorted(errs.items())})
    data["prediction_error"] = merged
    profile.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    print(f"report.py: wrote prediction_error {json.dumps(merged)} "
          f"(leg {', '.join(sorted(legs))}) into {profile}", file=sys.stderr)
    return None


def main(argv):
    args = argv[1:]
    copy_to = None
    if "--copy-csv" in args:
        i = args.index("--copy-csv")
        if i + 1 >= len(args):
            print("report.py: --copy-csv wants a directory", file=sys.stderr)
            return 2
        copy_to = Path(args[i + 1])
        del args[i:i + 2]
    options = {}
    for flag in ("--write-prediction-error", "--leg"):
        if flag in args:
            i = args.index(flag)
            if i + 1 >= len(args):
                print(f"report.py: {flag} wants a value", file=sys.stderr)
                return 2
            options[flag] = args[i + 1]
            del args[i:i + 2]
    if len(args) != 1 or not Path(args[0]).is_dir():
        print("usage: report.py RESULTS_DIR [--copy-csv DIR] "
              "[--write-prediction-error PROFILE [--leg LEG]]",
              file=sys.stderr)
        return 2
    results = Path(args[0])
    lines = [f"# GPU session results ({results})"]
    for section in (device_section, steps_section, checks_section,
                    programs_section, questions_section, sweeps_section,
                    pack_section, knobs_section):
        section(results, lines)
    print("\n".join(lines))
    if copy_to:
        copy_to.mkdir(parents=True, exist_ok=True)
        for path in sorted(results.glob("*.csv")):
            shutil.copy(path, copy_to / path.name)
    if "--write-prediction-error" in options:
        failed = write_prediction_error(
            results, Path(options["--write-prediction-error"]),
            options.get("--leg"))
        if failed:
            print(f"report.py: --write-prediction-error: {failed}",
                  file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
