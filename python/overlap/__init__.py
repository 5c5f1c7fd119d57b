"""Overlap's Python side (docs/python.md).

- ``overlap.compile`` / ``overlap.run``: the compiler and the loader in
  process, through Overlap's C API (``overlap.compiler``, ``overlap.native``).
- ``overlap.plan`` / ``overlap.chain``: the Planner in process, plain
  dataclasses back (``overlap.planner``).
- ``python -m overlap.fit``: fit a hardware profile from measurements.
- ``python -m overlap.plot timeline|sweep``: Gantt charts and speedup sweeps.

The fitting and plotting modules need only numpy and matplotlib, not a build.
"""

from .compiler import (Buffer, CompileError, CompileWarning, Compiled,
                       RunResult, Signature, compile, run, signature)
from .native import NativeNotFound
from .planner import (ChainNode, ChainPlan, Plan, PlanError, PlannerNotFound,
                      Task, chain, find_overlap_plan, plan, plan_json)

__version__ = "0.1.0"

__all__ = ["Buffer", "Signature", "signature", "ChainNode", "ChainPlan", "CompileError", "CompileWarning", "Compiled",
           "NativeNotFound", "Plan", "PlanError", "PlannerNotFound",
           "RunResult", "Task", "chain", "compile", "find_overlap_plan",
           "plan", "plan_json", "run", "__version__"]
