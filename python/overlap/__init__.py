"""Overlap's Python side (docs/python.md).

- ``overlap.plan`` / ``overlap.chain``: run the ``overlap-plan`` Planner CLI
  and get plain dataclasses back (``overlap.planner``).
- ``python -m overlap.fit``: fit a hardware profile from measurements.
- ``python -m overlap.plot timeline|sweep``: Gantt charts and speedup sweeps.

The fitting and plotting modules need only numpy and matplotlib, not a build.
"""

from .planner import (ChainNode, ChainPlan, Plan, PlanError, PlannerNotFound,
                      Task, chain, find_overlap_plan, plan)

__version__ = "0.1.0"

__all__ = ["ChainNode", "ChainPlan", "Plan", "PlanError", "PlannerNotFound",
           "Task", "chain", "find_overlap_plan", "plan", "__version__"]
