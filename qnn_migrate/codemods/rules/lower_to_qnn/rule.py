"""The rule's entry point: a module tree in, a :class:`RuleResult` out.

:meth:`LowerToQnn.run` finds the sites (``mentions``, ``sites``), plans each one
(``shapes``), plans the imports (``imports``), then applies it all in one pass
(:class:`~qnn_migrate.codemods.rewrite_plan.ApplyPlan`). Nothing is printed or written; the
result carries the new module, the report and what the engine needs to know to trust a run
on an excerpt of the file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

from qnn_migrate.codemods import findings
from qnn_migrate.codemods.call_binding import BoundCall
from qnn_migrate.codemods.deprecations import Deprecation, TargetSpec, catalog, lower_to_qnn
from qnn_migrate.codemods.rewrite_plan import ApplyPlan, RewritePlan
from qnn_migrate.codemods.rules.lower_to_qnn import sites
from qnn_migrate.codemods.rules.lower_to_qnn.context import FileContext, RuleOptions
from qnn_migrate.codemods.rules.lower_to_qnn.helper import plan_helper
from qnn_migrate.codemods.rules.lower_to_qnn.imports import (
    plan_availability,
    plan_imports,
    plan_unused_imports,
)
from qnn_migrate.codemods.rules.lower_to_qnn.mentions import Mentions, find_mentions
from qnn_migrate.codemods.rules.lower_to_qnn.patches import EXPORT, LOST, find_patches, patchable
from qnn_migrate.codemods.rules.lower_to_qnn.shapes import SiteWriter
from qnn_migrate.codemods.targets.executorch import ExecutorchTarget
from qnn_migrate.codemods.targets.qnn_passes import QnnPassesTarget
from qnn_migrate.codemods.targets.site import Target

# The code behind each target the data file names (``[[deprecation.target]]``).
_IMPLEMENTATIONS: dict[str, Callable[[TargetSpec, Deprecation], Target | ExecutorchTarget]] = {
    "qnn-passes": QnnPassesTarget,
    "executorch": ExecutorchTarget,
}


@dataclass(frozen=True)
class Footprint:
    """What the rewrite touched beyond the sites themselves.

    The engine runs the rule on an excerpt of a big file; it trusts that run only when none
    of these could interact with the code it left out.
    """

    class_level_sites: bool = False  # a rewritten call sits directly in a class body
    removed_names: frozenset[str] = frozenset()  # names whose import the rewrite removed
    import_names: frozenset[str] = frozenset()  # names new imports bind unless taken
    # module-level dicts whose keys the rewrite relied on (code elsewhere could change them)
    keys_read: frozenset[str] = frozenset()
    # names that, written in code the excerpt left out, could change the outcome (a patch
    # of a pass the wrapper runs: see ``patches.py``)
    watched: frozenset[str] = frozenset()


@dataclass(frozen=True)
class RuleResult:
    """The outcome of the rule on one module, as LibCST's ``TransformResult``.

    ``module`` is None when nothing changes; ``skipped`` then says why.
    """

    module: cst.Module | None
    report: findings.Report
    footprint: Footprint = Footprint()
    skipped: str | None = None


class LowerToQnn:
    """Rewrite to_edge_transform_and_lower_to_qnn calls to executorch's to_edge_transform_and_lower."""

    def __init__(self, options: RuleOptions | str | None = None) -> None:
        """``options``: a :class:`RuleOptions`, or just a target name."""
        self.deprecation = lower_to_qnn()
        if options is None:
            options = RuleOptions(self.deprecation.targets[0].name)
        elif isinstance(options, str):
            options = RuleOptions(options)
        spec = self.deprecation.target(options.target)
        self.options = options
        self.target = _IMPLEMENTATIONS[spec.name](spec, self.deprecation)

    def run(
        self,
        tree: cst.Module,
        *,
        filename: str | None = None,
        module_text: str | None = None,
        source: str | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> RuleResult:
        """Rewrite ``tree``; ``tree`` itself is never changed (a new tree is built).

        ``filename``: the module's path, if it has one (a re-exporting module keeps its
        import). ``module_text``: the whole file, when ``tree`` is an excerpt of it (see
        ``codemods/excerpt.py``); names the rewrite introduces at module or class level avoid
        every identifier-like word in it. ``source``: the exact text ``tree`` was parsed
        from, if the caller has it (saves printing the tree again). ``progress``: told what
        the rule is doing, in words, for a long file.
        """
        tell = progress or _silent
        ctx = FileContext(
            tree,
            catalog(),
            self.deprecation,
            self.options,
            filename=filename,
            module_text=module_text,
            source=source,
        )
        found = find_mentions(ctx.index, self.deprecation.name)
        if found.definition is not None:
            ctx.leave(found.definition, findings.DEFINING_MODULE)
            return RuleResult(None, ctx.report, skipped="defines the deprecated function")
        for string in found.strings:
            sites.report_string(ctx, string)

        tell(f"resolving {len(found.mentions)} mentions of the name")
        calls = [c for c in (sites.classify(ctx, m) for m in found.mentions) if c is not None]
        calls = _keep_patches(ctx, self.target.name, calls)
        if isinstance(self.target, ExecutorchTarget):
            writer = SiteWriter(ctx, None, set())
            plan = RewritePlan()
            helper = plan_helper(ctx, self.target, writer, calls, plan)
            return self._finish(ctx, tree, found, writer, plan, helper, tell)
        calls = sites.drop_nested(ctx, calls)
        per_statement: dict[cst.CSTNode, int] = {}
        wheres: dict[cst.Call, sites.Where] = {}
        for call, _ in calls:
            where = sites.where(ctx, call)
            if isinstance(where, findings.Reason):
                ctx.leave(call, where)
                continue
            wheres[call] = where
            per_statement[where.small] = per_statement.get(where.small, 0) + 1
        scopes = {scope for call in wheres for scope in sites.scopes_around(ctx, call)}
        assert not isinstance(self.target, ExecutorchTarget)
        writer = SiteWriter(ctx, self.target, scopes)
        plan = RewritePlan()
        step = max(len(calls) // 10, 1)
        for done, (call, bound) in enumerate(calls):
            if done % step == 0:
                tell(f"rewriting call {done + 1} of {len(calls)}")
            if call not in wheres:
                continue
            where = wheres[call]
            if per_statement[where.small] > 1 and where.statement_form:
                # Two calls in one statement: each stays an expression, in its place.
                scope = sites.walrus_scope(ctx, call)
                if isinstance(scope, findings.Reason):
                    ctx.leave(call, scope)
                    continue
                where = sites.Where(
                    where.statement, where.small, scope, False, False, "a statement with two calls"
                )
            writer.plan_site(call, bound, where, plan)

        return self._finish(ctx, tree, found, writer, plan, None, tell)

    def _finish(
        self,
        ctx: FileContext,
        tree: cst.Module,
        found: Mentions,
        writer: SiteWriter,
        plan: RewritePlan,
        helper: str | None,
        tell: Callable[[str], None],
    ) -> RuleResult:
        """Plan the imports, then apply the plan (``helper``: the name of a generated
        module-level function, which binds a name as the new imports do)."""
        bases = frozenset(writer.imports.bases | ({helper} if helper else set()))
        footprint = Footprint(
            class_level_sites=writer.class_level_sites,
            import_names=bases,
            keys_read=frozenset(writer.knowledge.followed),
            watched=patchable().words(),
        )
        plan_unused_imports(ctx, found.mentions, found.exported, plan)
        if plan.is_empty():
            for check in ctx.availability_checks:
                ctx.leave(check, findings.AVAILABILITY_CHECK)
            ctx.report.unfixable.sort()
            return RuleResult(None, ctx.report, footprint, skipped="nothing to rewrite")
        plan_availability(ctx, writer.imports, writer.rewritten_funcs, plan)
        removed = plan_imports(ctx, writer.imports, writer.rewritten_funcs, found.exported, plan)
        ctx.report.unfixable.sort()
        footprint = Footprint(
            writer.class_level_sites,
            removed,
            bases,
            frozenset(writer.knowledge.followed),
            patchable().words(),
        )
        tell("writing the new code")
        paths: set[cst.CSTNode] = set()
        for target in plan.targets():
            walk: cst.CSTNode | None = ctx.parent(target)
            while walk is not None and walk not in paths:
                paths.add(walk)
                walk = ctx.parent(walk)
        applied = tree.visit(ApplyPlan(plan, tree, paths, width=self.options.line_length))
        return RuleResult(applied, ctx.report, footprint)


def _keep_patches(
    ctx: FileContext, target: str, calls: list[tuple[cst.Call, BoundCall]]
) -> list[tuple[cst.Call, BoundCall]]:
    """The calls to rewrite, given the file's patches of what the wrapper runs
    (``patches.py``): none when the new code would lose a patch (each call reported with
    the first such patch); with the qnn_export flow when only that keeps a patch applying."""
    if not calls:
        return calls
    found = find_patches(ctx, target)
    lost = [p for p in found if p.effect == LOST]
    if lost:
        first = min(lost, key=lambda p: ctx.line(p.node))
        # The patch's own code, not its line: the rule may run on an excerpt of the file,
        # whose line numbers are not the file's.
        code = " ".join(ctx.tree.code_for_node(first.node).split())
        code = code if len(code) <= 60 else code[:57] + "..."
        reason = findings.PATCH_LOST.format(code=code, patched=first.patched, ways=first.ways)
        for call, _ in calls:
            ctx.leave(call, reason)
            ctx.left_calls.append(call)
        return []
    exported = [p for p in found if p.effect == EXPORT]
    for patch in exported:
        ctx.note(patch.node, findings.PATCH_EXPORTED.format(patched=patch.patched))
    if exported:
        ctx.options = dataclasses.replace(ctx.options, flow="qnn-export")
    return calls


def check_targets() -> None:
    """Every target the data names has code behind it, and no code lacks a name in the data."""
    named = {t.name for t in lower_to_qnn().targets}
    if named != set(_IMPLEMENTATIONS):
        raise RuntimeError(
            f"deprecations.toml names targets {sorted(named)}; the rule implements "
            f"{sorted(_IMPLEMENTATIONS)}"
        )


def _silent(_: str) -> None:
    """No progress to tell."""
