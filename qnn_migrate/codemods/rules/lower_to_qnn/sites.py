"""Which mentions are call sites to rewrite, and where each call sits.

:func:`classify` turns a mention of the name into a bound call, or reports why it is left
alone; :func:`where` decides whether the call can get statements of its own (statement form)
or must stay one expression (expression form), and in which scope new names are made.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import Assignment, QualifiedName, QualifiedNameSource

from qnn_migrate.codemods import findings
from qnn_migrate.codemods.call_binding import BindError, BoundCall, bind_call
from qnn_migrate.codemods.expressions import chain_root, evaluated_before, is_side_effect_free
from qnn_migrate.codemods.rules.lower_to_qnn.context import FileContext

_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


@dataclass(frozen=True)
class Where:
    """Where a call sits, as far as the rewrite is concerned."""

    statement: cst.BaseStatement  # the statement that contains the call
    small: cst.CSTNode  # the small statement (or compound statement) that contains it
    scope: cst.CSTNode  # the FunctionDef/Lambda/ClassDef/Module whose names the new names avoid
    statement_form: bool
    direct: bool  # statement form: the call is the whole value of the statement
    context: str  # expression form: what the call is part of, in words


# -- classification ---------------------------------------------------------------------------
def report_string(ctx: FileContext, node: cst.CSTNode) -> None:
    """A string naming the old API: a patch target, or prose. The docstring an earlier
    version of ``--target executorch`` gave its helper is the tool's own output, not
    reported."""
    if _old_helper_docstring(ctx, node):
        return
    parent = ctx.parent(node)
    while parent is not None and not isinstance(parent, cst.Call | cst.BaseStatement):
        parent = ctx.parent(parent)
    patch = isinstance(parent, cst.Call) and any(
        q.name in ctx.catalog.patchers for q in ctx.qualified(parent.func)
    )
    ctx.leave(node, findings.PATCH_STRING if patch else findings.STRING)


# The helper's docstring as ``--target executorch`` wrote it before it stopped naming the old
# function (it is now ``targets.executorch.helper_doc``).
_OLD_HELPER_DOC = re.compile(
    r'"""to_edge_transform_and_lower_to_qnn of ExecuTorch [0-9][0-9.]*'
    r'(?:, for this file\'s calls)?\."""'
)


def _old_helper_docstring(ctx: FileContext, node: cst.CSTNode) -> bool:
    """True for that docstring, as the first statement of a module-level function."""
    if not isinstance(node, cst.SimpleString) or not _OLD_HELPER_DOC.fullmatch(node.value):
        return False
    expr, line = ctx.parent(node), None
    if isinstance(expr, cst.Expr):
        line = ctx.parent(expr)
    block = ctx.parent(line) if isinstance(line, cst.SimpleStatementLine) else None
    function = ctx.parent(block) if isinstance(block, cst.IndentedBlock) else None
    return (
        isinstance(function, cst.FunctionDef)
        and isinstance(block, cst.IndentedBlock)
        and bool(block.body)
        and block.body[0] is line
        and isinstance(ctx.parent(function), cst.Module)
    )


def _is_binding(
    ctx: FileContext, node: cst.Name | cst.Attribute, parent: cst.CSTNode | None
) -> bool:
    """True where the mention names something being defined or imported, not used."""
    if isinstance(node, cst.Name):
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            return True  # seen as the Attribute itself
        if isinstance(parent, cst.FunctionDef | cst.ClassDef | cst.Param) and (parent.name is node):
            return True
        if isinstance(parent, cst.Arg) and parent.keyword is node:
            return True
        if isinstance(parent, cst.NameItem | cst.AsName):
            return True
        if isinstance(parent, cst.For | cst.CompFor) and parent.target is node:
            return True
    if isinstance(parent, cst.AssignTarget | cst.AnnAssign) and parent.target is node:
        return True
    walk: cst.CSTNode | None = parent
    while walk is not None and not isinstance(walk, cst.BaseStatement):
        if isinstance(walk, cst.Import | cst.ImportFrom):
            return True
        walk = ctx.parent(walk)
    return False


def star_imported(ctx: FileContext, name: str) -> str | None:
    """The qualified name ``name`` has through the module's star import, when that is its only
    star import and it imports a module that ExecuTorch's function is reachable from."""
    modules = []
    for statement in ctx.tree.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.ImportFrom) and isinstance(small.names, cst.ImportStar):
                    if small.relative or small.module is None:
                        return None
                    modules.append(ctx.tree.code_for_node(small.module))
    if len(modules) != 1:
        return None
    qualified = f"{modules[0]}.{name}"
    return qualified if qualified in ctx.deprecation.qualified_names else None


def classify(ctx: FileContext, node: cst.Name | cst.Attribute) -> tuple[cst.Call, BoundCall] | None:
    """A call site to rewrite, or None (after reporting it when it needs reporting)."""
    parent = ctx.parent(node)
    if _is_binding(ctx, node, parent):
        return None
    deprecation = ctx.deprecation
    qualified = ctx.qualified(node)
    ours = {q for q in qualified if q.name in deprecation.qualified_names}
    if not ours and module_object(ctx, node) is not None:
        ours = qualified  # `m = importlib.import_module("executorch...utils")`; `m.f(...)`
    if not qualified and isinstance(node, cst.Name):
        star = star_imported(ctx, node.value)
        if star is not None:  # `from executorch...utils import *`, the file's only one
            ours = qualified = {QualifiedName(star, QualifiedNameSource.IMPORT)}
    is_call = isinstance(parent, cst.Call) and parent.func is node
    if not ours:
        if not is_call:
            return None
        if isinstance(node, cst.Attribute):
            receiver = ctx.tree.code_for_node(node.value)
            ctx.leave(node, findings.OTHER_OBJECT.format(receiver=receiver))
        elif qualified:
            binding = _bound_at_run_time(ctx, node)
            if binding is not None:
                line, what = binding
                ctx.leave(node, findings.BOUND_AT_RUN_TIME.format(line=line, what=what))
            else:
                where = ", ".join(sorted(_describe(q) for q in qualified))
                ctx.leave(node, findings.OTHER_FUNCTION.format(where=where))
        else:
            ctx.leave(node, findings.UNRESOLVED)
        return None
    if qualified - ours:
        other = _other_binding(ctx, node)
        if other is not None:
            ctx.leave(node, findings.AMBIGUOUS.format(other=other))
            if is_call:
                ctx.left_calls.append(parent)  # type: ignore[arg-type]
            return None
    if not is_call:
        if isinstance(node, cst.Name) and _is_none_test(parent, node):
            ctx.availability_checks.append(node)  # decided once the calls are planned
        else:
            ctx.leave(node, findings.AS_VALUE.format(how=_how_used(parent, node)))
        return None
    assert isinstance(parent, cst.Call)
    bound = bind_call(parent, deprecation.parameters)
    if isinstance(bound, BindError) or any(
        p in deprecation.required and p not in bound.args for p in deprecation.parameters
    ):
        ctx.left_calls.append(parent)
    if isinstance(bound, BindError):
        if bound.kind == "star":
            ctx.leave(node, findings.STAR_ARGS)
        elif bound.kind == "unknown_keyword":
            ctx.leave(node, findings.UNKNOWN_KEYWORD.format(names=bound.detail))
        else:
            ctx.leave(node, findings.BAD_CALL.format(problem=bound.detail))
        return None
    missing = [
        p for p in deprecation.parameters if p in deprecation.required and p not in bound.args
    ]
    if missing:
        problem = "no " + ", ".join(f"`{p}`" for p in missing)
        ctx.leave(node, findings.BAD_CALL.format(problem=problem))
        return None
    if ctx.suppressed(node, findings.REWRITTEN.code):
        ctx.leave(node, findings.SUPPRESSED_REWRITE)  # a noqa comment on its line: not rewritten
        return None
    return parent, bound


def _is_none_test(parent: cst.CSTNode | None, node: cst.Name) -> bool:
    """``node is None`` or ``node is not None``: a test of whether an import succeeded."""
    return (
        isinstance(parent, cst.Comparison)
        and parent.left is node
        and len(parent.comparisons) == 1
        and isinstance(parent.comparisons[0].operator, cst.Is | cst.IsNot)
        and isinstance(parent.comparisons[0].comparator, cst.Name)
        and parent.comparisons[0].comparator.value == "None"
    )


def except_fallbacks(ctx: FileContext, name: cst.Name) -> list[cst.Name] | None:
    """The targets of ``<name> = None`` in ``except`` clauses that bind ``name`` besides its
    import; None when something else binds it too."""
    scope = ctx.scope_metadata(name)
    if scope is None:
        return None
    found = []
    for assignment in scope[name.value]:
        node = assignment.node if isinstance(assignment, Assignment) else None
        if isinstance(node, cst.Import | cst.ImportFrom):
            continue
        target = ctx.parent(node) if node is not None else None
        assign = ctx.parent(target) if isinstance(target, cst.AssignTarget) else None
        if not (
            isinstance(node, cst.Name)
            and isinstance(assign, cst.Assign)
            and isinstance(assign.value, cst.Name)
            and assign.value.value == "None"
            and ctx.inside(assign, cst.ExceptHandler)
        ):
            return None
        found.append(node)
    return found


def module_object(ctx: FileContext, node: cst.CSTNode) -> cst.Assign | None:
    """For ``m.<old name>`` where ``m`` is bound once, by ``m = importlib.import_module("M")``
    with a literal ExecuTorch module that provides the old name: that assignment."""
    if not (isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name)):
        return None
    scope = ctx.scope_metadata(node.value)
    if scope is None:
        return None
    assignments = list(scope[node.value.value])
    if len(assignments) != 1 or not isinstance(assignments[0], Assignment):
        return None
    target = ctx.parent(assignments[0].node)
    assign = ctx.parent(target) if isinstance(target, cst.AssignTarget) else None
    if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1):
        return None
    call = assign.value
    if not (isinstance(call, cst.Call) and len(call.args) == 1 and call.args[0].keyword is None):
        return None
    literal = call.args[0].value
    if not isinstance(literal, cst.SimpleString) or not isinstance(literal.evaluated_value, str):
        return None
    if not any(q.name == "importlib.import_module" for q in ctx.qualified(call.func)):
        return None
    if f"{literal.evaluated_value}.{node.attr.value}" not in ctx.deprecation.qualified_names:
        return None
    return assign


def _bound_at_run_time(ctx: FileContext, node: cst.Name | cst.Attribute) -> tuple[int, str] | None:
    """(line, what) when the name is bound in this file by an assignment rather than a
    ``def``/``class`` (``f = runtime["f"]``, ``a, f = helpers()``): nothing is defined here,
    the value is only known at run time."""
    if not isinstance(node, cst.Name):
        return None
    scope = ctx.scope_metadata(node)
    if scope is None:
        return None
    found: list[tuple[int, str]] = []
    for assignment in scope[node.value]:
        binder = assignment.node if isinstance(assignment, Assignment) else None
        if binder is None or isinstance(
            binder, cst.FunctionDef | cst.ClassDef | cst.Import | cst.ImportFrom
        ):
            return None  # defined or imported (or a builtin): the plain message fits
        found.append((ctx.line(binder), _what_binds(ctx, binder)))
    return min(found) if found else None


def _what_binds(ctx: FileContext, binder: cst.CSTNode) -> str:
    """In words, what gives a name its value: ``an item of `runtime```, ...."""
    walk = ctx.parent(binder)
    unpacked = False
    while isinstance(walk, cst.Tuple | cst.List | cst.Element | cst.StarredElement):
        unpacked = True
        walk = ctx.parent(walk)
    if isinstance(walk, cst.AssignTarget):
        walk = ctx.parent(walk)
    value = walk.value if isinstance(walk, cst.Assign | cst.AnnAssign) else None
    if value is None:
        return "a loop variable, parameter or other binding"
    code = _short(ctx.tree.code_for_node(value))
    if unpacked:
        return f"unpacked from `{code}`"
    if isinstance(value, cst.Subscript):
        return f"an item of `{_short(ctx.tree.code_for_node(value.value))}`"
    return f"the value of `{code}`"


def _short(code: str) -> str:
    code = " ".join(code.split())
    return code if len(code) <= 40 else code[:37] + "..."


def _other_binding(ctx: FileContext, node: cst.Name | cst.Attribute) -> str | None:
    """Describe a binding of the name that is neither the import nor an except fallback."""
    base = chain_root(node)
    if not isinstance(base, cst.Name):
        return "another value"
    scope = ctx.scope_metadata(base)
    if scope is None:
        return "another value"
    for assignment in scope[base.value]:
        if not isinstance(assignment, Assignment):
            return "a builtin"
        if isinstance(assignment.node, cst.Import | cst.ImportFrom):
            continue
        if not ctx.inside(assignment.node, cst.ExceptHandler):
            return f"what line {ctx.line(assignment.node)} binds"
    return None


def drop_nested(
    ctx: FileContext, calls: list[tuple[cst.Call, BoundCall]]
) -> list[tuple[cst.Call, BoundCall]]:
    """Leave alone (and report) calls that contain, or sit inside, another site."""
    sites = {call for call, _ in calls}
    nested: set[cst.Call] = set()
    for call, _ in calls:
        walk = ctx.parent(call)
        while walk is not None:
            if walk in sites:
                nested |= {call, walk}  # type: ignore[arg-type]
            walk = ctx.parent(walk)
    for call in nested:
        ctx.leave(call, findings.NESTED)
    return [(c, b) for c, b in calls if c not in nested]


# -- where a call sits ------------------------------------------------------------------------
def where(ctx: FileContext, call: cst.Call) -> Where | findings.Reason:
    """Where ``call`` sits, or the reason (a user-facing message) it cannot be rewritten."""
    node: cst.CSTNode = call
    context = ""  # why the call must stay an expression, for messages
    while True:
        parent = ctx.parent(node)
        if parent is None:
            raise AssertionError("a call outside any statement")
        if isinstance(parent, cst.FormattedStringExpression):
            return findings.FSTRING
        if isinstance(parent, cst.BaseSmallStatement | cst.BaseCompoundStatement):
            break
        before = evaluated_before(parent, node)
        if not context and (before is None or not all(_free(b) for b in before)):
            context = _context(parent, before)
        node = parent
    small = parent
    statement: cst.CSTNode | None = small
    while statement is not None and not isinstance(statement, cst.BaseStatement):
        statement = ctx.parent(statement)  # one-line blocks: up to their compound statement
    assert isinstance(statement, cst.BaseStatement)
    if isinstance(small, cst.BaseCompoundStatement):
        context = context or _context(small, None)
    else:
        before = evaluated_before(small, node)
        if not context and (before is None or not all(_free(b) for b in before)):
            context = _context(small, before)
    in_block = isinstance(statement, cst.SimpleStatementLine) and isinstance(
        ctx.parent(statement), cst.IndentedBlock | cst.Module
    )
    # `if x: y = call()` becomes a block; `a = 1; y = call()` separate lines.
    in_suite = isinstance(ctx.parent(small), cst.SimpleStatementSuite)
    if not context and (in_block or in_suite):
        scope = _block_scope(ctx, statement)
        return Where(statement, small, scope, True, _direct(small, call), "")
    scope_or_reason = walrus_scope(ctx, call)
    if isinstance(scope_or_reason, findings.Reason):
        return scope_or_reason
    return Where(statement, small, scope_or_reason, False, False, context or "a larger expression")


def _direct(small: cst.CSTNode, call: cst.Call) -> bool:
    """The call is the whole value of ``small`` and its targets are plain names."""
    match small:
        case cst.Expr(value=value) | cst.Return(value=value):
            return value is call
        case cst.Assign(value=value, targets=targets):
            return value is call and all(_plain_target(t.target) for t in targets)
        case cst.AnnAssign(value=value, target=target) | cst.AugAssign(value=value, target=target):
            return value is call and _plain_target(target)
    return False


def _block_scope(ctx: FileContext, statement: cst.CSTNode) -> cst.CSTNode:
    walk = ctx.parent(statement)
    while walk is not None:
        if isinstance(walk, cst.FunctionDef | cst.ClassDef | cst.Module):
            return walk
        walk = ctx.parent(walk)
    return ctx.tree


def walrus_scope(ctx: FileContext, call: cst.Call) -> cst.CSTNode | findings.Reason:
    """The scope a ``:=`` at the call binds in, or why Python forbids one there."""
    node: cst.CSTNode = call
    in_comprehension = False
    while True:
        parent = ctx.parent(node)
        if parent is None:
            return ctx.tree
        if isinstance(parent, _COMPREHENSIONS):
            in_comprehension = True
        if isinstance(parent, cst.CompFor) and node is parent.iter:
            return findings.COMPREHENSION_ITERABLE
        if isinstance(parent, cst.Lambda) and node is parent.body:
            return parent
        if isinstance(parent, cst.FunctionDef) and node is parent.body:
            return parent
        if isinstance(parent, cst.ClassDef) and node is parent.body:
            return findings.CLASS_COMPREHENSION if in_comprehension else parent
        if isinstance(parent, cst.Module):
            return parent
        node = parent


def scopes_around(ctx: FileContext, call: cst.Call) -> list[cst.CSTNode]:
    """The function, lambda and class nodes around a call, innermost first."""
    found: list[cst.CSTNode] = []
    walk = ctx.parent(call)
    while walk is not None:
        if isinstance(walk, cst.FunctionDef | cst.Lambda | cst.ClassDef):
            found.append(walk)
        walk = ctx.parent(walk)
    return found


def _plain_target(node: cst.BaseExpression) -> bool:
    """An assignment target whose evaluation has no side effects (``x``, ``a.b``, ``d[k]``)."""
    match node:
        case cst.Subscript(value=value, slice=slices):
            return is_side_effect_free(value) and all(_free(s) for s in slices)
        case cst.Tuple(elements=elements) | cst.List(elements=elements):
            return all(_plain_target(e.value) for e in elements)
    return is_side_effect_free(node)


def _free(node: cst.CSTNode) -> bool:
    """Side-effect free, for the wrapper nodes that appear between a call and its statement."""
    match node:
        case (
            cst.Arg(value=value) | cst.Element(value=value) | cst.ComparisonTarget(comparator=value)
        ):
            return is_side_effect_free(value)
        case cst.DictElement(key=key, value=value):
            return is_side_effect_free(key) and is_side_effect_free(value)
        case cst.SubscriptElement(slice=cst.Index(value=value)):
            return is_side_effect_free(value)
        case cst.BaseExpression():
            return is_side_effect_free(node)
    return False


def _context(parent: cst.CSTNode, before: list[cst.CSTNode] | None) -> str:
    """In words, what keeps a call inside ``parent`` from getting statements of its own."""
    if before is not None:
        return "an expression that first evaluates something with side effects"
    match parent:
        case (
            cst.ListComp()
            | cst.SetComp()
            | cst.DictComp()
            | cst.GeneratorExp()
            | (cst.CompFor() | cst.CompIf())
        ):
            return "a comprehension"
        case cst.Lambda():
            return "a lambda"
        case cst.IfExp():
            return "a conditional expression"
        case cst.BooleanOperation():
            return "an `and`/`or` operand"
        case cst.Assert():
            return "an assert"
        case cst.BaseCompoundStatement() | cst.Param() | cst.Decorator() | cst.WithItem():
            return "a compound statement's header (if/for/while/with/def/class)"
    return "a larger expression"


def _describe(name: QualifiedName) -> str:
    if name.source is QualifiedNameSource.LOCAL:
        return "defined in this file"
    return name.name


def _how_used(parent: cst.CSTNode | None, node: cst.CSTNode) -> str:
    """How a value is used, to complete "to_edge_transform_and_lower_to_qnn is ... here"."""
    match parent:
        case cst.Arg():
            return "passed as an argument"
        case cst.Assign() | cst.AnnAssign():
            return "assigned to a name"
        case cst.AssignTarget():
            return "replaced by an assignment"
        case cst.Element() | cst.DictElement():
            return "put in a collection"
        case cst.Return():
            return "returned"
        case cst.Attribute():
            return "read an attribute of"
        case cst.Param():
            return "a parameter's default value"
    return "used as a value"
