"""Which arguments get a name first, so that moved or repeated evaluations stay invisible.

The old call evaluated each argument once, left to right, before doing any work. The new code
uses some arguments several times (the compiler specs go to the context, the passes and the
partitioner) and evaluates them in its own order. An argument is written inline where that
changes nothing; otherwise it is bound to a name: before the new statements (statement form),
or with ``:=`` at its first use (expression form). Arguments with side effects keep their
relative order; where an expression cannot keep it, the site is reported, not guessed.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import libcst as cst

from qnn_migrate.codemods import findings
from qnn_migrate.codemods.call_binding import BoundCall
from qnn_migrate.codemods.expressions import is_duplicable, is_reference, is_side_effect_free
from qnn_migrate.codemods.targets.site import OrderCannotBeKept, References, Site

# Names for hoisted arguments, where the parameter's own name would read oddly.
HOIST_NAMES = {"module": "model", "inputs": "example_inputs"}


@dataclass(frozen=True)
class ArgumentPlan:
    """Parameters bound to a name before the new code, and those bound with ``:=``."""

    hoisted: tuple[str, ...]  # in the order the call evaluated them
    walrus: tuple[str, ...]


def _repeatable(node: cst.BaseExpression) -> bool:
    """Fine to write more than once: a name or literal, or a short one-line immutable value
    of those (no attribute access: it may run code)."""
    if is_reference(node, attributes=False):
        return True
    if not is_duplicable(node, attributes=False):
        return False  # checked first: printing a large argument costs more
    code = cst.Module(body=[]).code_for_node(node)
    return len(code) <= 30 and "\n" not in code


def plan_arguments(
    bound: BoundCall,
    *,
    order: Sequence[str],
    uses: Mapping[str, int],
    statements: bool,
    work_starts: int,
) -> ArgumentPlan:
    """Plan the arguments of ``bound`` for code that first evaluates them in ``order``.

    ``uses`` counts how often the new code writes each parameter (default 1).
    ``work_starts``: the new code starts doing visible work (exporting, setting up the SDK)
    once it has evaluated the first ``work_starts`` parameters of ``order``. The old call
    evaluated every argument before any work, so an argument with side effects that the new
    code would evaluate later is bound first (statement form) or reported (expression form).
    """
    passed = list(bound.args)
    values = {p: bound.args[p].value for p in passed}
    must_bind = {p for p in passed if uses.get(p, 1) > 1 and not _repeatable(values[p])}
    # An attribute access or a subscript may run code (a property, ``__getitem__``): only
    # names and literals are free to move or repeat.
    effectful = [p for p in passed if not is_side_effect_free(values[p], attributes=False)]
    position = {p: i for i, p in enumerate(order)}
    late = {p for p in effectful if position[p] >= work_starts}

    def in_order(params: Sequence[str]) -> bool:
        return all(position[a] < position[b] for a, b in itertools.pairwise(params))

    if not statements:
        if late or not in_order(effectful):
            # Name exactly the arguments that move: those evaluated after the work starts,
            # and those the new code evaluates in another order than the call did.
            swapped = {
                p
                for a, b in itertools.combinations(effectful, 2)
                if position[a] > position[b]
                for p in (a, b)
            }
            moved = tuple(p for p in effectful if p in late or p in swapped)
            names = ", ".join(f"`{p}`" for p in moved)
            raise OrderCannotBeKept(findings.ORDER.format(names=names), moved)
        return ArgumentPlan(hoisted=(), walrus=tuple(p for p in passed if p in must_bind))

    # The shortest prefix of the effectful arguments to hoist so that the rest, written
    # inline, still run in the order the call ran them, and before any work.
    j = 0
    while j < len(effectful) and (
        any(p in must_bind or p in late for p in effectful[j:]) or not in_order(effectful[j:])
    ):
        j += 1
    hoist = must_bind | set(effectful[:j])
    return ArgumentPlan(hoisted=tuple(p for p in passed if p in hoist), walrus=())


def bind_arguments(site: Site, plan: ArgumentPlan) -> tuple[References, list[str]]:
    """Name the planned arguments in ``site``'s scope.

    Returns the references to use in the new code and the ``name = value`` statements that
    bind the hoisted arguments (with the user's comments for them), in evaluation order.
    """
    refs = References(site)
    statements = []
    for param in plan.hoisted:
        name = site.names.fresh(HOIST_NAMES.get(param, param))
        refs.bound[param] = name
        passed = site.bound.args[param]
        head = f"{name} = "
        value = site.printer.render(
            site.sources[param], "", site.block_column + len(head), site.block_column
        )
        tail = "" if passed.trailing_comment is None else f"  {passed.trailing_comment}"
        lines = [*passed.comments_before, f"{head}{value}{tail}"]
        statements.append(site.printer.newline.join(lines))
    for param in plan.walrus:
        refs.walrus[param] = site.names.fresh(HOIST_NAMES.get(param, param))
    return refs, statements
