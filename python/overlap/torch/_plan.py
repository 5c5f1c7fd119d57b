"""The tensor-parallel plan, as users give ``parallelize_module``, and the
refusals of one module collected at once.

A plan maps submodule names (fnmatch patterns, as ``parallelize_module``
takes them: "layers.*.mlp.up") to a style: ``ColwiseParallel()`` /
``RowwiseParallel()`` from ``torch.distributed.tensor.parallel``, or the
strings "colwise" / "rowwise". A colwise ``nn.Linear`` has its weight
[out, in] (and its bias) split on the output dim, a rowwise one its weight
on the input dim (its bias is added once, after the all-reduce). The styles'
default layouts are the ones taken: a colwise input replicated and its
output split on the last dim (kept local: ``use_local_output``), a rowwise
input split on the last dim and its output replicated.
"""

from __future__ import annotations

import fnmatch
from typing import Any, Dict, List, Optional, Tuple

from ..jax._emit import Refusal, UnsupportedError

COLWISE, ROWWISE = "colwise", "rowwise"
#: ColwiseParallel(output_layouts=Replicate()): its output all-gathered.
COLWISE_GATHERED = "colwise_gathered"
#: RowwiseParallel(output_layouts=Shard(1)): its output reduce-scattered
#: over the sequence dim of [b, s, h] (sequence parallelism).
ROWWISE_SCATTERED = "rowwise_scattered"
#: SequenceParallel() on a norm: it runs on each rank's tokens.
SEQUENCE = "sequence"
#: PrepareModuleInput(input_layouts=Shard(1), desired=Replicate()): the
#: module's inputs all-gathered over the sequence dim.
GATHER_INPUTS = "gather_inputs"


class Splits(dict):
    """Per state name ("fc1.weight"): (dim split over the ranks, gathered
    after its contraction, reduce-scattered after it); with the modules
    whose inputs are all-gathered over the sequence (`prepare`) and whether
    the module's inputs come split over the sequence (`sequence`)."""

    def __init__(self):
        super().__init__()
        self.prepare: set = set()
        self.sequence = False
        self.ranks = 1

#: Each style's default (input, output) layouts, as placements print.
_DEFAULTS = {COLWISE: ("Replicate()", "Shard(dim=-1)"),
             ROWWISE: ("Shard(dim=-1)", "Replicate()")}


class Refusals:
    """Every refusal of one module, each once; raised as one error."""

    def __init__(self):
        self.items: List[Refusal] = []
        #: Whether an op the frontend does not translate is among them.
        self.unknown = False

    def add(self, what: str, where: str, why: str) -> None:
        r = Refusal(what, where, why)
        if all((x.what, x.where, x.why) != (what, where, why)
               for x in self.items):
            self.items.append(r)

    def raise_if_any(self, entry: str, tail: str = "") -> None:
        """One UnsupportedError listing them all, `tail` after them."""
        if not self.items:
            return
        if len(self.items) == 1:
            lines = [f"overlap.torch: {self.items[0]}"]
        else:
            lines = [f"overlap.torch: {entry} is refused for "
                     f"{len(self.items)} reasons (nothing was compiled):"]
            lines += [f"  {i}. {r}" for i, r in enumerate(self.items, 1)]
        err = UnsupportedError("\n".join(lines + ([tail] if tail else [])))
        err.refusals = list(self.items)
        raise err


def _placement(p) -> str:
    name = type(p).__name__
    if name == "Shard":
        return f"Shard(dim={getattr(p, 'dim', '?')})"
    return f"{name}()"


def style_of(style: Any) -> Tuple[Optional[str], str]:
    """(COLWISE, COLWISE_GATHERED or ROWWISE, "") for a style the frontend
    takes, else (None, why)."""
    if isinstance(style, str):
        s = style.lower().replace("_", "")
        if s in ("colwise", "colwiseparallel"):
            return COLWISE, ""
        if s in ("rowwise", "rowwiseparallel"):
            return ROWWISE, ""
        return None, (f"the style {style!r} is not one the frontend takes "
                      f"('colwise', 'rowwise', or ColwiseParallel() / "
                      f"RowwiseParallel() objects)")
    cls = type(style).__name__
    seq = _sequence_style(style, cls)
    if seq is not None:
        return seq
    kind = {"ColwiseParallel": COLWISE, "RowwiseParallel": ROWWISE}.get(cls)
    if kind is None:
        return None, (f"{cls} is not taken yet: the frontend takes "
                      f"ColwiseParallel and RowwiseParallel with their "
                      f"default layouts (SequenceParallel, "
                      f"PrepareModuleInput/Output and loss parallel would "
                      f"need all-gathers and reduce-scatters it does not "
                      f"insert yet)")
    got = tuple(", ".join(_placement(p) for p in getattr(style, attr, ()))
                for attr in ("input_layouts", "output_layouts"))
    want = _DEFAULTS[kind]
    # A whole input of a rowwise Linear is cut to each rank's block, a
    # colwise output gathered whole: both taken.
    if kind == ROWWISE and got == ("Replicate()", want[1]):
        return kind, ""
    if kind == COLWISE and got == (want[0], "Replicate()"):
        return COLWISE_GATHERED, ""
    if kind == ROWWISE and got == (want[0], "Shard(dim=1)"):
        return ROWWISE_SCATTERED, ""
    if got != want:
        return None, (f"{cls}(input_layouts={got[0]}, output_layouts="
                      f"{got[1]}) is not taken yet: the frontend takes the "
                      f"default layouts (input {want[0]}, output {want[1]}); "
                      f"others need a collective it does not insert")
    return kind, ""


def _sequence_style(style, cls: str):
    """(kind, why) of SequenceParallel and PrepareModuleInput, None for
    other classes."""
    if cls == "SequenceParallel":
        got = ", ".join(_placement(p) for p in
                        getattr(style, "sequence_sharding", ()))
        if got != "Shard(dim=1)":
            return None, (f"SequenceParallel over {got}: the frontend "
                          f"takes the sequence dim 1 of [b, s, h]")
        return SEQUENCE, ""
    if cls == "PrepareModuleInput":
        got = tuple(", ".join(_placement(p) for p in (getattr(
            style, attr, None) or ())) for attr in ("input_layouts",
                                                     "desired_input_layouts"))
        if got != ("Shard(dim=1)", "Replicate()") or getattr(
                style, "input_kwarg_layouts", None):
            return None, (f"PrepareModuleInput(input_layouts={got[0]}, "
                          f"desired_input_layouts={got[1]}) is not taken: "
                          f"the frontend takes one positional input from "
                          f"Shard(1) to Replicate() (an all-gather over the "
                          f"sequence)")
        return GATHER_INPUTS, ""
    return None


def resolve(module, plan: Optional[Dict[str, Any]], ranks: int,
            refusals: Refusals) -> Splits:
    """How the plan splits the module's state and inputs (Splits)."""
    import torch
    splits = Splits()
    splits.ranks = ranks
    if plan is None:
        return splits
    if not isinstance(plan, dict):
        refusals.add("the plan", "", f"a {type(plan).__name__}: the plan is "
                     f"a dict of submodule name to style, as "
                     f"parallelize_module takes it")
        return splits
    names = [n for n, _ in module.named_modules() if n]
    linears = [n for n in names
               if isinstance(module.get_submodule(n), torch.nn.Linear)]
    for key, style in plan.items():
        what = f"the plan's entry {key!r}"
        kind, why = style_of(style)
        if kind is None:
            refusals.add(what, "", why)
            continue
        matched = [n for n in names if fnmatch.fnmatchcase(n, key)]
        if not matched:
            refusals.add(what, "", f"no submodule of {type(module).__name__}"
                         f" is named so (its Linear layers: "
                         f"{', '.join(linears) or 'none'})")
        for n in matched:
            m = module.get_submodule(n)
            if kind in (SEQUENCE, GATHER_INPUTS):
                splits.sequence = True
                if kind == GATHER_INPUTS:
                    splits.prepare.add(n)
                elif not isinstance(m, (torch.nn.LayerNorm, torch.nn.RMSNorm,
                                        torch.nn.Dropout)):
                    refusals.add(what, "", f"SequenceParallel on {n}, a "
                                 f"{type(m).__name__} (the frontend takes "
                                 f"it on LayerNorm, RMSNorm and Dropout)")
                continue
            if not isinstance(m, torch.nn.Linear):
                refusals.add(what, "", f"{n} is a {type(m).__name__}, not "
                             f"an nn.Linear (the frontend shards Linear "
                             f"weights only)")
                continue
            dim = 1 if kind in (ROWWISE, ROWWISE_SCATTERED) else 0
            size = m.weight.shape[dim]
            if size % ranks:
                refusals.add(what, "", f"{n}'s weight has {size} "
                             f"{'output' if dim == 0 else 'input'} features,"
                             f" not a multiple of the {ranks} ranks")
                continue
            splits[n + ".weight"] = (dim, kind == COLWISE_GATHERED,
                                     kind == ROWWISE_SCATTERED)
            # A gathered output takes its bias whole, after the gather.
            if m.bias is not None and kind == COLWISE:
                splits[n + ".bias"] = (0, False, False)
    return splits
