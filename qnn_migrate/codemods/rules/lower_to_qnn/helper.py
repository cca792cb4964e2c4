"""Plan a file for a target that writes one helper per file (``--target executorch``).

Every call of the old function becomes a call of the helper, in place; the helper goes right
before the first module-level statement that holds a call. Its imports go where the file
imports ExecuTorch: with the module's leading imports (or next to a module-level old import,
in its ``try`` or ``if``) when that comes before the helper, else inside the helper's body
(the file imported ExecuTorch lazily, in a function: so does the helper). A file is
migrated whole or not at all: when any call of the function cannot be rewritten, none is,
and each is reported.
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from qnn_migrate.codemods import findings
from qnn_migrate.codemods.call_binding import BoundCall
from qnn_migrate.codemods.import_placement import ImportItem
from qnn_migrate.codemods.rewrite_plan import RewritePlan, import_lines
from qnn_migrate.codemods.rules.lower_to_qnn.context import FileContext
from qnn_migrate.codemods.rules.lower_to_qnn.imports import import_placement
from qnn_migrate.codemods.rules.lower_to_qnn.shapes import SiteWriter
from qnn_migrate.codemods.targets.executorch import HELPER, ExecutorchTarget, forward_value
from qnn_migrate.codemods.targets.site import NameAllocator, named_parameter


def plan_helper(
    ctx: FileContext,
    target: ExecutorchTarget,
    writer: SiteWriter,
    calls: list[tuple[cst.Call, BoundCall]],
    plan: RewritePlan,
) -> str | None:
    """Plan the calls and the helper; the helper's name, or None when nothing is rewritten."""
    if not calls:
        return None
    if ctx.left_calls:
        lines = ", ".join(str(n) for n in sorted({ctx.line(c) for c in ctx.left_calls}))
        for call, _ in calls:
            ctx.leave(call, findings.EXECUTORCH_NOT_WHOLE.format(lines=lines))
        return None
    name = NameAllocator(writer.words | set(writer.imports.names.values())).fresh(HELPER)
    facts = []
    for call, bound in calls:
        # A commented-out keyword argument in the call stays where it is: the helper takes
        # that parameter (with the wrapper's default), so uncommenting it still works.
        named = _commented_parameters(bound, ctx.deprecation.parameters)
        found = target.facts(bound, writer.knowledge)
        facts.append(dataclasses.replace(found, passed=found.passed | named))
        module = bound.args["module"].value
        unwrap = None
        if forward_value(module) is not None:
            unwrap = next(i for i, arg in enumerate(call.args) if arg.value is module)
        plan.renamed[call] = (name, unwrap)
        writer.rewritten_funcs.append(call.func)
        position = ctx.index.position(call)
        ctx.report.rewritten += 1
        ctx.report.rewritten_at.append((position.line, position.column))
        writer.note_comments(_statement(ctx, call))

    anchor = min((_top_level(ctx, call) for call, _ in calls), key=ctx.line)
    placements = {import_placement(ctx, call.func) for call, _ in calls}
    placement = next(iter(placements)) if len(placements) == 1 else None
    local = len(placements) > 1 or (
        placement is not None
        and (
            _in_function(ctx, placement) or ctx.line(_top_level(ctx, placement)) >= ctx.line(anchor)
        )
    )
    asked: list[ImportItem] = []

    def import_name(module: str, obj: str) -> str:
        local_name = writer.imports.name(module, obj)
        asked.append(ImportItem(module, obj, local_name))
        return local_name

    def local_imports() -> list[str]:
        items = {i for i in asked if not writer.imports.already_imported(*i)}
        unit = writer.printer.unit
        text = import_lines(items, writer.printer.newline, unit, writer.printer.width - len(unit))
        return text.splitlines()

    text = target.helper(name, facts, import_name, writer.printer, local_imports if local else None)
    if not local:
        for item in asked:
            writer.imports.record(item, placement)
    plan.definitions[anchor] = text
    return name


def _commented_parameters(bound: BoundCall, parameters: tuple[str, ...]) -> frozenset[str]:
    """The parameters that comments in the call name as commented-out keyword arguments."""
    comments = [*bound.dangling_comments]
    for passed in bound.args.values():
        comments += [*passed.comments_before, *filter(None, [passed.trailing_comment])]
    named = (named_parameter(c, parameters) for c in comments)
    return frozenset(p for p in named if p is not None)


def _statement(ctx: FileContext, node: cst.CSTNode) -> cst.BaseStatement:
    walk: cst.CSTNode | None = node
    while walk is not None and not isinstance(walk, cst.BaseStatement):
        walk = ctx.parent(walk)
    assert walk is not None, "a call outside any statement"
    return walk


def _top_level(ctx: FileContext, node: cst.CSTNode) -> cst.BaseStatement:
    """The module-level statement that holds ``node``."""
    walk = _statement(ctx, node)
    while not isinstance(ctx.parent(walk), cst.Module):
        parent = ctx.parent(walk)
        assert parent is not None
        walk = _statement(ctx, parent)
    return walk


def _in_function(ctx: FileContext, node: cst.CSTNode) -> bool:
    """True inside a ``def``, ``lambda`` or ``class`` body (not module-level code)."""
    walk = ctx.parent(node)
    while walk is not None:
        if isinstance(walk, cst.FunctionDef | cst.ClassDef | cst.Lambda):
            return True
        walk = ctx.parent(walk)
    return False
