"""Reading schedules to draw: a Chrome trace (``overlap-plan --trace``, or a
measured run exported in the same format) or a plan (``overlap-plan
--json``). Both become a Timeline of bars on the compute and comm streams.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Union

STREAMS = ("compute", "comm")

# Words that place a trace thread / category / slice on a stream, tried in
# this order on the thread name, then the category, then the slice name.
_COMM_WORDS = ("comm", "nccl", "rccl", "hccl", "hcom", "all-reduce",
               "allreduce", "reduce-scatter", "reducescatter", "all-gather",
               "allgather", "memcpy", "collective")
_COMPUTE_WORDS = ("compute", "gemm", "matmul", "cutlass", "cublas", "mm")


class TraceError(ValueError):
    """A trace or plan file that cannot be drawn; the message says why."""


@dataclass
class Bar:
    stream: str  # "compute" or "comm"
    tile: int
    start_us: float
    dur_us: float
    rows: Optional[int] = None
    name: str = ""

    @property
    def end_us(self) -> float:
        return self.start_us + self.dur_us


@dataclass
class Timeline:
    bars: List[Bar]
    title: str = ""
    serial_us: Optional[float] = None
    ideal_us: Optional[float] = None
    meta: Dict[str, Any] = field(default_factory=dict)

    @property
    def makespan_us(self) -> float:
        return max((b.end_us for b in self.bars), default=0.0)

    def stream(self, name: str) -> List[Bar]:
        return [b for b in self.bars if b.stream == name]


def load_timeline(path: Union[str, os.PathLike]) -> Timeline:
    """A Timeline from a Chrome trace or an ``overlap-plan --json`` plan."""
    name = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            obj = json.load(f)
    except OSError as err:
        raise TraceError(f"{name}: cannot read: {err.strerror}") from None
    except json.JSONDecodeError as err:
        raise TraceError(f"{name}: not JSON: {err}") from None
    except RecursionError:
        raise TraceError(f"{name}: JSON nested too deeply") from None
    except UnicodeDecodeError as err:
        raise TraceError(f"{name}: not UTF-8 text: {err.reason}") from None
    return timeline_from_json(obj, name)


def timeline_from_json(obj: Any, name: str = "<trace>") -> Timeline:
    if isinstance(obj, dict) and "tasks" in obj:
        return _from_plan(obj, name)
    if isinstance(obj, dict) and "traceEvents" in obj:
        return _from_chrome(obj["traceEvents"], obj, name)
    if isinstance(obj, list):
        return _from_chrome(obj, {}, name)
    raise TraceError(f"{name}: neither a Chrome trace (traceEvents) nor an "
                     "overlap-plan --json plan (tasks)")


def plan_title(plan: Dict[str, Any]) -> str:
    p = plan.get("problem", {})
    if not p:
        return plan.get("strategy", "")
    return (f"{p.get('collective')} M={p.get('m')} N={p.get('n')} "
            f"K={p.get('k')} {p.get('dtype')} x{p.get('ranks')} "
            f"({plan.get('strategy')}, {plan.get('profile')})")


def _from_plan(plan: Dict[str, Any], name: str) -> Timeline:
    bars = []
    try:
        for t in plan["tasks"]:
            for s in STREAMS:
                start = float(t[f"{s}_start_us"])
                end = float(t[f"{s}_end_us"])
                bars.append(Bar(s, int(t["tile"]), start, end - start,
                                int(t["rows"]), f"{s} {t['tile']}"))
    except (KeyError, TypeError, ValueError) as err:
        raise TraceError(f"{name}: a plan task lacks or has a bad {err}") \
            from None
    return Timeline(bars, plan_title(plan), plan.get("serial_us"),
                    plan.get("ideal_us"),
                    {"predicted_us": plan.get("predicted_us")})


def _classify(*texts: str) -> Optional[str]:
    for text in texts:
        low = (text or "").lower()
        for w in _COMM_WORDS:
            if w in low:
                return "comm"
        for w in _COMPUTE_WORDS:
            if w in low:
                return "compute"
    return None


def _from_chrome(events: List[Any], top: Dict[str, Any],
                 name: str) -> Timeline:
    threads: Dict[Any, str] = {}
    title = ""
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "M":
            continue
        label = (e.get("args") or {}).get("name", "")
        if e.get("name") == "thread_name":
            threads[(e.get("pid"), e.get("tid"))] = label
        elif e.get("name") == "process_name" and not title:
            title = label
    bars: List[Bar] = []
    counters = {s: 0 for s in STREAMS}
    for idx, e in enumerate(events):
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        thread = threads.get((e.get("pid"), e.get("tid")), "")
        stream = _classify(thread, e.get("cat", ""), e.get("name", ""))
        if stream is None:
            raise TraceError(
                f"{name}: traceEvents[{idx}] ('{e.get('name', '')}'): cannot "
                "tell its stream; name its thread or category 'compute' or "
                "'comm'")
        try:
            ts, dur = float(e["ts"]), float(e.get("dur", 0.0))
        except (KeyError, TypeError, ValueError):
            raise TraceError(f"{name}: traceEvents[{idx}]: a complete event "
                             "needs numeric 'ts' and 'dur' (µs)") from None
        args = e.get("args") or {}
        tile = args.get("tile", counters[stream])
        counters[stream] += 1
        rows = args.get("rows")
        bars.append(Bar(stream, int(tile), ts, dur,
                        None if rows is None else int(rows),
                        str(e.get("name", ""))))
    if not bars:
        raise TraceError(f"{name}: no complete ('ph': 'X') events")
    t0 = min(b.start_us for b in bars)
    for b in bars:
        b.start_us -= t0
    meta = top.get("otherData") or top.get("metadata") or {}
    return Timeline(bars, title, meta.get("serial_us"), meta.get("ideal_us"),
                    dict(meta))
