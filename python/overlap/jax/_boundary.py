"""What overlap.jax takes at its boundary, and every refusal of a program
at once.

The top level (``top_level``): ``f`` runs one ``jax.shard_map`` over its
arguments (or constants), optionally under ``jax.jit``, and returns some of
its results, in any order, beside its own arguments or constants. That is
also the form of flax's ``nnx.shard_map``: its shard_map takes the module's
state leaves beside the inputs and returns the state again (identical or
updated) beside the outputs; the wrapper keeps the outputs (and writes the
state back into the module outside the trace). Results ``f`` drops cost
nothing (the body is cut to what ``f`` returns), and a result that is an
argument passed through unchanged (the same spec in and out) is that
argument, not a copy through the compiled program.

The refusals (``Refusals``): everything the importer can know before
compiling — the primitives it does not translate, each with the first line
of the user's code that uses it; the forms a primitive it translates does
not take (a gather's or scatter's dimension numbers, ...); arguments and
results of element types a compiled program does not carry; what ``f``
does outside the shard_map — collected in one pass and raised as one
``UnsupportedError`` that lists them all, each with what, where (the
user's line) and why. The error's ``refusals`` attribute holds them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ._emit import (Refusal, UnsupportedError, Value, _is_literal,
                    _source, elem_type)
from ._translate import SUPPORTED, Translator

#: Calls at the top level that are looked into (jax.jit of f, nested).
TOP_CALLS = ("jit", "pjit", "closed_call", "core_call")

#: The one-line example of differentiating through a shard_map layer.
GRAD_EXAMPLE = ("layer = overlap.jax.jit(sm); "
                "jax.grad(lambda x, w: jnp.sum(layer(x, w) ** 2), "
                "argnums=1)(x, w)")


class Refusals:
    """The refusals of one program, each once (by what and why)."""

    def __init__(self):
        self.items: List[Refusal] = []
        self._seen = set()

    def __bool__(self) -> bool:
        return bool(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def add(self, what: str, where: str, why: str, kind: str = "form",
            key: Any = None) -> None:
        key = key if key is not None else (what, why)
        if key in self._seen:
            return
        self._seen.add(key)
        self.items.append(Refusal(what, where, why, kind))

    def error(self, entry: str) -> UnsupportedError:
        """One error listing every refusal (its `refusals` attribute holds
        them)."""
        items = self.items
        unknown = [r for r in items if r.kind == "primitive"]
        tail = ""
        if unknown:
            names = ", ".join(f"{r.what[len('the primitive '):]}" +
                              (f" (from {r.where})" if r.where else "")
                              for r in unknown)
            tail = (f"the importer does not translate {len(unknown)} "
                    f"primitive{'s' if len(unknown) > 1 else ''} of this "
                    f"program: {names} (it translates: "
                    f"{', '.join(SUPPORTED)})")
        if len(items) == len(unknown):
            err = UnsupportedError(tail)
        elif len(items) == 1:
            err = UnsupportedError(f"overlap.jax: {items[0]}")
        else:
            lines = [f"overlap.jax: {entry} is refused for {len(items)} "
                     f"reasons, all known before compiling (nothing was "
                     f"compiled):"]
            lines += [f"  {i}. {r}" for i, r in enumerate(items, 1)]
            if unknown:
                lines.append(f"(The importer translates: "
                             f"{', '.join(SUPPORTED)}.)")
            err = UnsupportedError("\n".join(lines))
        err.refusals = list(items)
        return err

    def raise_if_any(self, entry: str) -> None:
        if self.items:
            raise self.error(entry)


# -- the top level -------------------------------------------------------------

@dataclass
class TopLevel:
    """What f does around its shard_map."""
    #: The shard_map equation (None: f has none, or several).
    eqn: Any = None
    #: Per operand of the shard_map: ("arg", index of f's leaf) or
    #: ("const", value); ("computed", primitive) when f computes it.
    operands: List[Tuple[str, Any]] = None
    #: Per leaf of f's result: ("sm", index of the shard_map's result),
    #: ("arg", index of f's leaf), ("const", value) or ("computed", name).
    outputs: List[Tuple[str, Any]] = None
    #: The user's line of the shard_map's call.
    where: str = ""
    #: Results of the shard_map that f's own top-level computation reads
    #: (refused): the body is examined for them too.
    read_outside: Tuple[int, ...] = ()


def _func_of(eqn) -> str:
    """'body at model.py:12' of a shard_map equation's function, or ''."""
    body = eqn.params.get("jaxpr")
    info = getattr(getattr(body, "jaxpr", body), "debug_info", None)
    return str(getattr(info, "func_src_info", "") or "")


def top_level(closed, refusals: Refusals, entry: str) -> TopLevel:
    """The shard_map of `closed` (f's jaxpr) and what f takes into it and
    returns of it; what else f does at its top level is added to
    `refusals`."""
    maps: List[Tuple[Any, List[Tuple[str, Any]], str]] = []
    others: Dict[str, str] = {}
    read = set()

    def bound(v, env):
        if _is_literal(v):
            return ("const", v.val)
        return env.get(v, ("computed", "?"))

    def walk(jaxpr, env, outer_where):
        for eqn in jaxpr.eqns:
            name = eqn.primitive.name
            where = _source(eqn) or outer_where
            if name in TOP_CALLS:
                inner = eqn.params.get("jaxpr") or eqn.params.get(
                    "call_jaxpr")
                body = getattr(inner, "jaxpr", inner)
                new = {v: ("const", c) for v, c in
                       zip(body.constvars, getattr(inner, "consts", []))}
                for v, operand in zip(body.invars, eqn.invars):
                    new[v] = bound(operand, env)
                for v, out in zip(eqn.outvars, walk(body, new, where)):
                    env[v] = out
            elif name == "shard_map":
                k = len(maps)
                maps.append((eqn, [bound(v, env) for v in eqn.invars],
                             where))
                for i, v in enumerate(eqn.outvars):
                    env[v] = ("sm", (k, i))
            else:
                others.setdefault(name, where)
                read.update(what for kind, what in
                            (bound(v, env) for v in eqn.invars)
                            if kind == "sm" and what[0] == 0)
                for v in eqn.outvars:
                    env[v] = ("computed", name)
        return [bound(v, env) for v in jaxpr.outvars]

    top = closed.jaxpr
    env = {v: ("arg", i) for i, v in enumerate(top.invars)}
    env.update({v: ("const", c)
                for v, c in zip(top.constvars, closed.consts)})
    outs = walk(top, env, "")

    if not maps:
        names = ", ".join(others) or "nothing"
        refusals.add(
            f"{entry}", "",
            f"overlap.jax compiles a function whose body is one "
            f"jax.shard_map over its arguments (optionally under jax.jit); "
            f"this one computes {names} at the top level and calls no "
            f"shard_map", kind="structure")
        return TopLevel()
    if len(maps) > 1:
        # jax.grad (value_and_grad, vjp) of a loss through a shard_map: the
        # forward and its transpose are two shard_maps of one function, the
        # second taking results (residuals) of the first.
        funcs = [_func_of(e) for e, _, _ in maps]
        fed = any(kind in ("sm", "computed")
                  for _, operands, _ in maps[1:] for kind, _ in operands)
        lines = ", ".join(w or "?" for _, _, w in maps)
        if fed or len(set(funcs)) < len(funcs):
            why = (f"{entry} runs {len(maps)} shard_maps (at {lines}), the "
                   f"later ones taking results of the earlier: that is what "
                   f"jax.grad, jax.value_and_grad or jax.vjp of a function "
                   f"through a shard_map makes (its forward, the top-level "
                   f"math of the loss, and its transpose). overlap.jax.run "
                   f"compiles one shard_map as written; to differentiate "
                   f"through it, call it as an overlap.jax.jit layer, whose "
                   f"backward Overlap compiles too: {GRAD_EXAMPLE}")
            refusals.add(f"{entry}", maps[0][2], why, kind="structure")
            return TopLevel()
        refusals.add(
            f"{entry}", maps[1][2],
            f"it runs {len(maps)} shard_maps (at {lines}): overlap.jax "
            f"compiles a function whose body is one jax.shard_map; make each "
            f"its own overlap.jax.jit layer (or run them one at a time)",
            kind="structure")
    for name, where in others.items():
        refusals.add(
            f"'{name}' at the top level of {entry}", where,
            f"overlap.jax compiles a function whose body is one "
            f"jax.shard_map over its arguments (optionally under jax.jit) "
            f"and returns its results; move this computation into the "
            f"shard_map's function (or out of {entry}, into the caller)",
            kind="structure")
    eqn, operands, where = maps[0]
    outputs = []
    for kind, what in outs:
        if kind == "sm":
            k, i = what
            outputs.append(("sm", i) if k == 0 else ("computed", "shard_map"))
        else:
            outputs.append((kind, what))
    return TopLevel(eqn=eqn, operands=operands, outputs=outputs, where=where,
                    read_outside=tuple(sorted(i for _, i in read)))


# -- the body, every refusal at once ----------------------------------------

def placeholder_type(aval) -> str:
    try:
        return elem_type(aval.dtype)
    except Exception:
        return "f32"


class CollectingTranslator(Translator):
    """A Translator that, instead of stopping at the first equation it
    refuses, adds the refusal to `refusals`, stands a placeholder for that
    equation's results (the shape and type JAX gives them) and goes on, so
    that the refusals of every equation are known at once. Its text is
    never compiled when anything was refused. A primitive the importer does
    not translate at all is skipped silently (unknown_primitives lists each
    once, with its first line)."""

    def __init__(self, emitter, refusals: Refusals):
        super().__init__(emitter)
        self.refusals = refusals
        self._held = set()
        #: Element types refused at the boundary (an argument's): the
        #: translation's own refusal of them is the same problem.
        self.refused_types = set()

    def _hold(self, eqn) -> None:
        for var in eqn.outvars:
            aval = var.aval
            name = self.e.fresh("refused")
            self._held.add(name)
            self.write(var, Value(name, tuple(int(d) for d in aval.shape),
                                  placeholder_type(aval)))

    def _reads_held(self, eqn) -> bool:
        for v in eqn.invars:
            if _is_literal(v):
                continue
            value = self.env.get(v)
            if value is not None and value.name in self._held:
                return True
        return False

    def equation(self, eqn) -> None:
        name = eqn.primitive.name
        where = _source(eqn) or self.e.where
        if name not in SUPPORTED:
            self._hold(eqn)
            return
        try:
            super().equation(eqn)
        except UnsupportedError as err:
            why = str(err)
            suffix = f" (from {where})"
            if where and why.endswith(suffix):
                why = why[:-len(suffix)]
            if not any(why.startswith(f"element type {t}")
                       for t in self.refused_types):
                # One entry per distinct reason (the first line).
                self.refusals.add(f"the primitive '{name}'", where, why,
                                  kind="dtype" if why.startswith(
                                      "element type") else "form",
                                  key=("translate", why))
            self._hold(eqn)
        except Exception:
            # A consequence of a placeholder read (its name is no value of
            # the text): the refusal that made it says what to change.
            if not self._reads_held(eqn):
                raise
            self._hold(eqn)


def leaf_paths(tree) -> List[str]:
    """jax.tree_util's key path of each leaf of `tree` ("[0]['w']")."""
    import jax
    try:
        flat, _ = jax.tree_util.tree_flatten_with_path(tree)
        return [jax.tree_util.keystr(p) for p, _ in flat]
    except Exception:  # pragma: no cover - older jax
        return [f"[{i}]" for i in range(len(jax.tree_util.tree_leaves(tree)))]


def check_type(refusals: Refusals, what: str, where: str, aval,
               held: Optional[set] = None) -> Optional[str]:
    """The MLIR element type of `aval`, or None with a refusal naming
    `what` (an argument or a result) and its dtype."""
    try:
        return elem_type(aval.dtype)
    except (UnsupportedError, TypeError) as err:
        name = str(aval.dtype)
        if isinstance(err, TypeError):  # an extended dtype: a PRNG key
            err = f"element type {name} (the importer takes arrays of " \
                  f"numbers and booleans)"
        if held is not None:
            held.add(name)
        refusals.add(what, where,
                     f"{err} (a compiled program's arguments and results "
                     f"are arrays of the types the importer takes)",
                     kind="dtype")
        return None
