"""The Planner from Python (docs/planner.md), in process.

    >>> import overlap
    >>> p = overlap.plan(m=4096, n=8192, k=3072, ranks=8,
    ...                  profile="mc2-example", strategy="mc2")
    >>> p.tiles
    [512, 896, 896, 896, 896]

``plan`` and ``chain`` call the Planner in this process through the C API
(``overlapPlanJSON`` in libOverlapHostCAPI.so, overlap/native.py), which
returns the document of ``overlap-plan ... --json``; with ``binary=`` (or
``trace=``) they run that CLI instead. Results are plain dataclasses; fields
the Planner adds later land in ``extra``, and ``raw`` keeps the whole
object.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

from . import native


class PlannerNotFound(FileNotFoundError):
    """No Planner: neither the native library (overlap/native.py) nor an
    overlap-plan binary (OVERLAP_PLAN) is built or installed."""


class PlanError(RuntimeError):
    """Planning failed. ``stderr`` holds the Planner's message (naming the
    field or flag), ``returncode`` the status (2: a bad request, flag or
    value; 1: the profile cannot price the problem), ``cmd`` the
    overlap-plan command, or ``["overlapPlanJSON", request]`` in process.
    The message is the Planner's; only a CLI run adds its exit status."""

    def __init__(self, cmd: Sequence[str], returncode: int, stderr: str,
                 *, in_process: bool = False):
        self.cmd = list(cmd)
        self.returncode = returncode
        self.stderr = stderr.strip()
        self.in_process = in_process
        message = self.stderr or "(no message)"
        if in_process:
            super().__init__(f"{message}\n  request: "
                             f"{' '.join(self.cmd[1:])}")
        else:
            super().__init__(f"overlap-plan exited with {returncode}: "
                             f"{message}\n  command: {' '.join(self.cmd)}")


def find_overlap_plan() -> str:
    """The overlap-plan binary: $OVERLAP_PLAN, else
    $OVERLAP_BUILD_DIR/bin/overlap-plan, else <repo>/build/bin/overlap-plan,
    else one on PATH."""
    tried = []
    env = os.environ.get("OVERLAP_PLAN")
    if env:
        if os.access(env, os.X_OK):
            return env
        raise PlannerNotFound(f"OVERLAP_PLAN={env} is not an executable")
    dirs = []
    if os.environ.get("OVERLAP_BUILD_DIR"):
        dirs.append(Path(os.environ["OVERLAP_BUILD_DIR"]))
    dirs.append(Path(__file__).resolve().parent.parent.parent / "build")
    for d in dirs:
        cand = d / "bin" / "overlap-plan"
        tried.append(str(cand))
        if os.access(cand, os.X_OK):
            return str(cand)
    on_path = shutil.which("overlap-plan")
    if on_path:
        return on_path
    raise PlannerNotFound("overlap-plan not found (set OVERLAP_PLAN, or build "
                          "it with ./scripts/build.sh; looked at "
                          + ", ".join(tried) + " and PATH)")


@dataclass
class Task:
    """One tile: its rows, stream durations (contended) and start/end."""

    tile: int
    rows: int
    compute_us: float
    comm_us: float
    compute_start_us: float
    compute_end_us: float
    comm_start_us: float
    comm_end_us: float


@dataclass
class Plan:
    strategy: str
    tiles: List[int]
    bound: str
    predicted_us: float
    serial_us: float
    ideal_us: float
    efficiency: float
    lower_bound_us: Optional[float]
    problem: Dict[str, Any]
    profile: str
    tasks: List[Task]
    #: mc2 / waves / ficco / candidates / selected_by ... where they apply.
    extra: Dict[str, Any] = field(default_factory=dict)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def speedup(self) -> float:
        return self.serial_us / self.predicted_us

    @classmethod
    def from_json(cls, obj: Dict[str, Any]) -> "Plan":
        known = {"strategy", "tiles", "bound", "predicted_us", "serial_us",
                 "ideal_us", "efficiency", "lower_bound_us", "problem",
                 "profile", "tasks"}
        tasks = [Task(**{f: t[f] for f in Task.__dataclass_fields__})
                 for t in obj.get("tasks", [])]
        return cls(strategy=obj["strategy"], tiles=list(obj["tiles"]),
                   bound=obj["bound"], predicted_us=obj["predicted_us"],
                   serial_us=obj["serial_us"], ideal_us=obj["ideal_us"],
                   efficiency=obj["efficiency"],
                   lower_bound_us=obj.get("lower_bound_us"),
                   problem=dict(obj.get("problem", {})),
                   profile=obj.get("profile", ""), tasks=tasks,
                   extra={k: v for k, v in obj.items() if k not in known},
                   raw=obj)


@dataclass
class ChainNode:
    i: int
    j: int
    k: int
    no_fuse: int
    left_fuse: Optional[int]
    right_fuse: Optional[int]
    decision: str
    tile: List[int]
    final: int


@dataclass
class ChainPlan:
    order: str
    scalar_mults: int
    total_transfers: int
    nodes: List[ChainNode]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, obj: Dict[str, Any]) -> "ChainPlan":
        nodes = [ChainNode(**{f: n.get(f) for f in
                              ChainNode.__dataclass_fields__})
                 for n in obj.get("nodes", [])]
        return cls(order=obj["order"], scalar_mults=obj["scalar_mults"],
                   total_transfers=obj["total_transfers"], nodes=nodes,
                   raw=obj)


def run_json(args: Sequence[str], binary: Optional[str] = None,
             timeout: float = 120) -> Dict[str, Any]:
    """Run ``overlap-plan ARGS`` (which must include --json); parse stdout."""
    exe = binary or find_overlap_plan()
    cmd = [exe, *map(str, args)]
    proc = subprocess.run(cmd, capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        raise PlanError(cmd, proc.returncode, proc.stderr or proc.stdout)
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError as err:
        raise PlanError(cmd, proc.returncode,
                        f"output is not JSON ({err}): {proc.stdout[:200]}") \
            from None


def plan_json(request: Dict[str, Any]) -> Dict[str, Any]:
    """Plans ``request`` in process (``overlapPlanJSON``): {"kind":
    "matmul", "collective", "m", "n", "k", "ranks", "dtype", "profile",
    "strategy", and for "all-to-all" "side" and "experts"} or {"kind":
    "chain", "dims", "fast_memory"}. A field the request kind does not
    have (a misspelt "dtpye") is an error naming it. Raises PlanError
    (returncode 2: a bad request; 1: planning failed)."""
    try:
        lib = native.host_api()
    except native.NativeNotFound as err:
        raise PlannerNotFound(str(err)) from None
    result, error = ctypes.c_void_p(), ctypes.c_void_p()
    text = json.dumps(request)
    status = lib.overlapPlanJSON(text.encode(), ctypes.byref(result),
                                 ctypes.byref(error))
    document, message = native.take_strings(lib, result, error)
    if status != 0:
        raise PlanError(["overlapPlanJSON", text], status, message or "",
                        in_process=True)
    return json.loads(document)


def plan(m: int, n: int, k: int, *, ranks: int,
         profile: Optional[Union[str, os.PathLike]] = None,
         collective: str = "all-reduce", dtype: str = "f16",
         strategy: str = "auto", side: Optional[str] = None,
         experts: Optional[int] = None,
         trace: Optional[Union[str, os.PathLike]] = None,
         binary: Optional[str] = None) -> Plan:
    """``overlap-plan matmul ... --json``: split a fused matmul + collective.

    ``profile`` is a shipped name (``"mc2-example"``) or a path; None plans
    with the default profile (``h100-nvlink-datasheet``), as every entry
    point does. ``side`` ("dispatch" or "combine") and ``experts`` (per
    rank) are for ``collective="all-to-all"`` (docs/expert-parallelism.md);
    None keeps the Planner's defaults (dispatch, one expert). ``trace``
    also writes the Chrome trace there (through the CLI). Raises PlanError
    with the Planner's message on failure, PlannerNotFound without a
    Planner.
    """
    if binary is None and trace is None:
        request = {"kind": "matmul", "collective": collective, "m": int(m),
                   "n": int(n), "k": int(k), "ranks": int(ranks),
                   "dtype": dtype, "strategy": strategy}
        if profile is not None:
            request["profile"] = os.fspath(profile)
        if side is not None:
            request["side"] = side
        if experts is not None:
            request["experts"] = int(experts)
        return Plan.from_json(plan_json(request))
    args = ["matmul", "--collective", collective, "--m", m, "--n", n,
            "--k", k, "--dtype", dtype, "--ranks", ranks,
            "--strategy", strategy, "--json"]
    if profile is not None:
        args += ["--profile", os.fspath(profile)]
    if side is not None:
        args += ["--side", side]
    if experts is not None:
        args += ["--experts", int(experts)]
    if trace is not None:
        args += ["--trace", os.fspath(trace)]
    return Plan.from_json(run_json(args, binary))


def chain(dims: Sequence[int], fast_memory: int, *,
          binary: Optional[str] = None) -> ChainPlan:
    """``overlap-plan chain --dims ... --fast-memory ... --json``, in
    process unless ``binary`` names the CLI."""
    if binary is None:
        return ChainPlan.from_json(plan_json(
            {"kind": "chain", "dims": [int(d) for d in dims],
             "fast_memory": fast_memory}))
    args = ["chain", "--dims", ",".join(str(int(d)) for d in dims),
            "--fast-memory", fast_memory, "--json"]
    return ChainPlan.from_json(run_json(args, binary))
