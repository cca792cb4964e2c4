"""What a target needs to know about one call site, and what it gives back.

A *target* turns one bound call of the deprecated function into new code. The rule decides
where that code may go (statements of its own, or one expression) and hands the target a
:class:`Site`; the target returns a :class:`StatementRewrite` or the text of an expression,
or raises :class:`CannotRewrite` with the reason shown to the user.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

import libcst as cst

from qnn_migrate.codemods.call_binding import BoundCall
from qnn_migrate.codemods.findings import Reason
from qnn_migrate.codemods.layout import ArgSpec, Expr, Printer, Seq, Source, Text


class CannotRewrite(Exception):
    """The target cannot write this site, for ``reason`` (user-facing, with its code)."""

    def __init__(self, reason: Reason) -> None:
        super().__init__(reason.text)
        self.reason = reason


class OrderCannotBeKept(CannotRewrite):
    """One expression cannot evaluate the arguments ``params`` in the call's order."""

    def __init__(self, reason: Reason, params: tuple[str, ...]) -> None:
        super().__init__(reason)
        self.params = params


class NameAllocator:
    """Fresh names for one scope: never a name the scope (or anything nested in it) uses."""

    def __init__(self, taken: Iterable[str]) -> None:
        self._taken = set(taken)

    def reserve(self, names: Iterable[str]) -> None:
        """Never hand out ``names``."""
        self._taken.update(names)

    def fresh(self, base: str) -> str:
        """``base``, else ``base_1``, ``base_2``, ... whichever is free first; then reserved."""
        name, n = base, 0
        while name in self._taken:
            n += 1
            name = f"{base}_{n}"
        self._taken.add(name)
        return name


class Knowledge(Protocol):
    """What the rule can show about an argument's value without running the code."""

    def is_not_dict(self, node: cst.BaseExpression) -> bool:
        """True if the value is never a dict."""
        ...

    def is_dict(self, node: cst.BaseExpression) -> bool:
        """True if the value is always a dict."""
        ...

    def never_dumps(self, node: cst.BaseExpression) -> bool:
        """True if the value is compiler specs that cannot turn intermediate dumps on."""
        ...

    def dict_keys(self, node: cst.BaseExpression) -> frozenset[str] | None:
        """The keys of the dict the value always is, when the source shows them."""
        ...


@dataclass
class Site:
    """One call to rewrite: its bound arguments and the means to name things in its scope."""

    bound: BoundCall
    sources: dict[str, Source]  # parameter -> the user's expression, with its indentation
    names: NameAllocator
    import_name: Callable[[str, str], str]  # (module, object) -> local name; records the import
    printer: Printer
    knowledge: Knowledge
    flow: str = "canonical"  # the qnn-passes target's shape: "qnn-export" or "canonical"
    context: str = ""  # expression form: what the call is part of, in words
    indent: str = ""  # the call's line indentation relative to its statement's first line
    block_column: int = 0  # width of the statement's own indentation in the file
    call_column: int = 0  # where the call starts on its line, relative to ``block_column``
    one_method: bool = False  # ``module`` is the single method "forward" (see one_method())

    def passed(self, param: str) -> bool:
        """True if the call passes ``param`` (explicitly, possibly as None)."""
        return param in self.bound.args


@dataclass(frozen=True)
class StatementRewrite:
    """Statements to put before the site's statement, a context to wrap it in, and the call."""

    prelude: tuple[str, ...]  # complete statements, block-relative, in order
    context: str | None  # the `with` item (e.g. "qnn_manager_context(specs, programs)")
    call: str  # replaces the old call inside the statement, printed at ``Site.indent``


class Target(Protocol):
    """A way to write the replacement code."""

    name: str

    def statement(self, site: Site) -> StatementRewrite:
        """The rewrite when the call may get statements of its own."""
        ...

    def expression(self, site: Site) -> str:
        """The rewrite when the call must stay one expression (or raise CannotRewrite)."""
        ...


@dataclass
class References:
    """How each argument is written at its uses.

    Arguments bound to a name before the new code (``bound``) are written as that name; those
    bound inside the expression (``walrus``) as ``(name := value)`` at their first use and the
    name afterwards, so targets must ask in evaluation order; the rest as the user wrote them.
    """

    site: Site
    bound: dict[str, str] = field(default_factory=dict)
    walrus: dict[str, str] = field(default_factory=dict)
    _used: set[str] = field(default_factory=set)
    _commented: set[str] = field(default_factory=set)

    def expr(self, param: str) -> Expr:
        """The expression for ``param`` at its next use."""
        if param in self.bound:
            return Text(self.bound[param])
        if param in self.walrus:
            name = self.walrus[param]
            if param in self._used:
                return Text(name)
            self._used.add(param)
            return Seq((Text(f"({name} := "), self.site.sources[param], Text(")")))
        return self.site.sources[param]

    def arg(self, param: str, *, keyword: bool, comments: bool = False) -> ArgSpec:
        """``param`` as an argument; ``comments`` carries the user's comments for it.

        Comments go with the first use that asks for them; a hoisted argument's comments
        went with its ``name = value`` statement already.
        """
        before, trailing = self.take_comments(param) if comments else ((), None)
        return ArgSpec(
            value=self.expr(param),
            keyword=param if keyword else None,
            comments_before=before,
            trailing_comment=trailing,
        )

    def take_comments(self, param: str) -> tuple[tuple[str, ...], str | None]:
        """The user's comments for ``param``, the first time they are asked for."""
        if param in self.bound or param in self._commented or not self.site.passed(param):
            return (), None
        self._commented.add(param)
        passed = self.site.bound.args[param]
        return passed.comments_before, passed.trailing_comment

    def keywords(self, params: Iterable[str], *, comments: bool = False) -> list[ArgSpec]:
        """Keyword arguments for those of ``params`` the call passed, in that order."""
        return [self.arg(p, keyword=True, comments=comments) for p in params if self.site.passed(p)]


_NAMES_A_PARAMETER = re.compile(r"#\s*(\w+)\s*=(?!=)")


def named_parameter(comment: str, parameters: Iterable[str]) -> str | None:
    """The parameter a comment names as a commented-out keyword argument (``# skip_node_op_set
    ={...},``), when it is one of ``parameters``."""
    found = _NAMES_A_PARAMETER.match(comment)
    return found.group(1) if found is not None and found.group(1) in parameters else None


def lift_parameter_comments(
    site: Site, parameters: Iterable[str], stays: Callable[[str | None, str], bool]
) -> tuple[Site, list[str]]:
    """``site`` without the comments that name a parameter of the old call where they would
    land in a call that does not take it, and those comments (the caller puts them above the
    statement): uncommenting one there, as it invites, would be a TypeError.

    ``stays(param, named)``: True if the comments of the argument ``param`` (None: those
    after the last argument) go to a call that takes the parameter ``named``."""
    names = set(parameters)
    lifted: list[str] = []

    def keep(param: str | None, comments: Iterable[str]) -> tuple[str, ...]:
        kept: list[str] = []
        for comment in comments:
            named = named_parameter(comment, names)
            (lifted if named is not None and not stays(param, named) else kept).append(comment)
        return tuple(kept)

    args = {}
    for param, passed in site.bound.args.items():
        before = keep(param, passed.comments_before)
        trailing = passed.trailing_comment
        if trailing is not None and not keep(param, [trailing]):
            trailing = None
        args[param] = dataclasses.replace(passed, comments_before=before, trailing_comment=trailing)
    dangling = keep(None, site.bound.dangling_comments)
    if not lifted:
        return site, []
    bound = dataclasses.replace(site.bound, args=args, dangling_comments=dangling)
    return dataclasses.replace(site, bound=bound), lifted


def one_method(site: Site) -> Site | None:
    """``site`` with its ``module`` as the wrapper's single method "forward", when the source
    shows it: a value that is never a dict (the site itself), or ``X`` of a ``{"forward": X}``
    display, which the wrapper exports as the method "forward" just as it would ``X`` alone
    (the site with ``X`` as its module). None otherwise."""
    passed = site.bound.args["module"]
    if site.knowledge.is_not_dict(passed.value):
        return site
    node = passed.value
    if not (isinstance(node, cst.Dict) and len(node.elements) == 1):
        return None
    element = node.elements[0]
    if not (
        isinstance(element, cst.DictElement)
        and isinstance(element.key, cst.SimpleString)
        and element.key.evaluated_value == "forward"
    ):
        return None
    args = {**site.bound.args, "module": dataclasses.replace(passed, value=element.value)}
    source = Source(element.value, site.sources["module"].indent)
    return dataclasses.replace(
        site,
        bound=dataclasses.replace(site.bound, args=args),
        sources={**site.sources, "module": source},
        one_method=True,
    )
