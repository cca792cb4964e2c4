"""Lay out generated calls as source text the way a formatter would, around the user's own code.

Generated code is described as :class:`CallSpec` trees whose leaves are either short generated
text (:class:`Text`) or the user's original expressions (:class:`Source`, printed from their
syntax tree so their formatting and comments survive). A call goes on one line when it fits,
otherwise one argument per line with a trailing comma. A multi-line original expression is
re-indented as a block to its new place, by editing its whitespace nodes only, so string
contents are never touched.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

WIDTH = 88  # black's and ruff's default; generated lines stay readable in narrower projects


@dataclass(frozen=True)
class Text:
    """Generated code that fits on one line (a name, a literal, a short expression)."""

    text: str


@dataclass(frozen=True)
class Source:
    """One of the user's expressions, placed as written.

    ``indent`` is the indentation of the line it started on, relative to its statement's
    first line; multi-line expressions keep their shape relative to that line.
    """

    node: cst.BaseExpression
    indent: str = ""


@dataclass(frozen=True)
class ArgSpec:
    """An argument of a generated call, with the comments that travel with it."""

    value: Expr
    keyword: str | None = None
    comments_before: tuple[str, ...] = ()
    trailing_comment: str | None = None


@dataclass(frozen=True)
class CallSpec:
    """A generated call ``func(args...)``; ``dangling`` comments go before its ``)``."""

    func: str | Expr
    args: tuple[ArgSpec, ...] = ()
    dangling: tuple[str, ...] = ()
    suffix: str = ""  # text right after ")" on the same line, e.g. "()" or ".run"


@dataclass(frozen=True)
class Seq:
    """Several parts printed one after the other on the same line (``a := f(...)``)."""

    parts: tuple[Expr, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class Display:
    """A list, tuple, set or dict display: ``open`` items ``close``, items as :data:`Expr`."""

    open: str
    close: str
    items: tuple[Expr, ...]


@dataclass(frozen=True)
class Conditional:
    """``body if test else orelse``; split over lines inside parentheses when too long."""

    body: Expr
    test: Expr
    orelse: Expr


@dataclass(frozen=True)
class Join:
    """Parts joined by ``sep`` (`` and ``): on one line when they fit, else one per line,
    every line after the first starting with the separator, as ruff breaks a condition."""

    sep: str
    parts: tuple[Expr, ...]


Expr = Text | Source | CallSpec | Seq | Display | Conditional | Join


class _CommentFinder(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found = False

    def visit_Comment(self, node: cst.Comment) -> None:
        self.found = True


def has_comment(node: cst.CSTNode) -> bool:
    """True if a comment is written anywhere inside ``node``."""
    finder = _CommentFinder()
    node.visit(finder)
    return finder.found


class _Reindent(cst.CSTTransformer):
    """Move every continuation line of an expression from one indentation to another."""

    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def _move(self, ws: str) -> str:
        return self.new + ws[len(self.old) :] if ws.startswith(self.old) else ws

    def leave_ParenthesizedWhitespace(
        self, original_node: cst.ParenthesizedWhitespace, updated_node: cst.ParenthesizedWhitespace
    ) -> cst.ParenthesizedWhitespace:
        return updated_node.with_changes(
            last_line=cst.SimpleWhitespace(self._move(updated_node.last_line.value))
        )

    def leave_EmptyLine(
        self, original_node: cst.EmptyLine, updated_node: cst.EmptyLine
    ) -> cst.EmptyLine:
        if updated_node.comment is None:
            return updated_node
        return updated_node.with_changes(
            whitespace=cst.SimpleWhitespace(self._move(updated_node.whitespace.value))
        )


def _parts(src: Source) -> CallSpec | Display | None:
    """A one-line call or display the user wrote, as parts the printer can break over lines
    as ruff would (its arguments or items stay as written); None for anything else."""
    node = src.node
    if getattr(node, "lpar", ()):
        return None
    if isinstance(node, cst.Call):
        args = tuple(
            ArgSpec(
                Seq((Text(a.star), Source(a.value))) if a.star else Source(a.value),
                None if a.keyword is None else a.keyword.value,
            )
            for a in node.args
        )
        return CallSpec(Source(node.func), args) if args else None
    brackets = {cst.List: ("[", "]"), cst.Tuple: ("(", ")"), cst.Set: ("{", "}")}
    if type(node) in brackets and isinstance(node, cst.List | cst.Tuple | cst.Set):
        if len(node.elements) < 2 or any(isinstance(e, cst.StarredElement) for e in node.elements):
            return None  # a one-element tuple needs its comma
        open_, close = brackets[type(node)]
        return Display(open_, close, tuple(Source(e.value) for e in node.elements))
    if isinstance(node, cst.Dict) and node.elements:
        items: list[Expr] = []
        for element in node.elements:
            if not isinstance(element, cst.DictElement):
                return None
            items.append(Seq((Source(element.key), Text(": "), Source(element.value))))
        return Display("{", "}", tuple(items))
    return None


class Printer:
    """Prints :data:`Expr` trees with a module's indentation and newline."""

    def __init__(self, module: cst.Module, width: int = WIDTH) -> None:
        self.module = module
        self.unit = module.default_indent
        self.newline = module.default_newline
        self.width = width

    def source(self, src: Source, indent: str) -> str:
        """The user's expression printed to start on a line indented by ``indent``."""
        code = self.module.code_for_node(src.node)
        if "\n" not in code and "\r" not in code:
            return code
        if src.indent == indent:
            return code
        node = src.node.visit(_Reindent(src.indent, indent))
        assert isinstance(node, cst.BaseExpression)
        return self.module.code_for_node(node)

    def flat(self, expr: Expr) -> str | None:
        """The expression on a single line, or None if it cannot be (newlines, comments)."""
        if isinstance(expr, Text):
            return expr.text
        if isinstance(expr, Source):
            code = self.module.code_for_node(expr.node)
            multiline = "\n" in code or "\r" in code
            return None if multiline or ("#" in code and has_comment(expr.node)) else code
        if isinstance(expr, Seq | Display | Conditional | Join):
            parts = self._flat_all(
                expr.parts
                if isinstance(expr, Seq | Join)
                else expr.items
                if isinstance(expr, Display)
                else (expr.body, expr.test, expr.orelse)
            )
            if parts is None:
                return None
            if isinstance(expr, Seq):
                return "".join(parts)
            if isinstance(expr, Join):
                return expr.sep.join(parts)
            if isinstance(expr, Display):
                return f"{expr.open}{', '.join(parts)}{expr.close}"
            return f"{parts[0]} if {parts[1]} else {parts[2]}"
        if expr.dangling:
            return None
        func = expr.func if isinstance(expr.func, str) else self.flat(expr.func)
        if func is None:
            return None
        args = self._flat_args(expr.args)
        return None if args is None else f"{func}({args}){expr.suffix}"

    def _flat_all(self, exprs: tuple[Expr, ...]) -> list[str] | None:
        parts = [self.flat(e) for e in exprs]
        return None if any(p is None for p in parts) else [p or "" for p in parts]

    def _flat_args(self, args: tuple[ArgSpec, ...]) -> str | None:
        texts = []
        for arg in args:
            text = self.flat(arg.value)
            if text is None or arg.comments_before or arg.trailing_comment:
                return None
            texts.append(text if arg.keyword is None else f"{arg.keyword}={text}")
        return ", ".join(texts)

    def render(self, expr: Expr, indent: str, column: int, base: int = 0, reserve: int = 0) -> str:
        """Print ``expr`` starting at ``column`` of a line indented by ``indent``.

        ``base`` is the width of the indentation of the block the code goes in (``indent``
        is relative to it) and ``column`` the absolute column where ``expr`` starts: together
        they decide what fits in the line length. ``reserve``: characters that follow the
        expression on its last line (a comma, a colon).
        """
        flat = self.flat(expr)
        if flat is not None and column + len(flat) + reserve <= self.width:
            return flat
        if isinstance(expr, Text):
            return expr.text
        if isinstance(expr, Source):
            structured = _parts(expr) if flat is not None else None
            if structured is None:
                return self.source(expr, indent)
            return self.render(structured, indent, column, base, reserve)
        if isinstance(expr, Seq):
            out = ""
            for i, part in enumerate(expr.parts):
                # What follows this part on its last line: the later parts while they are
                # one-line text (the `)` of `(name := call(...))`), then ``reserve``.
                after = reserve
                for later in expr.parts[i + 1 :]:
                    text = self.flat(later) if isinstance(later, Text) else None
                    if text is None:
                        after = 0
                        break
                    after += len(text)
                # Lines after the first carry their own indentation, relative to ``base``.
                if self.newline in out:
                    at = base + len(out) - out.rfind(self.newline) - len(self.newline)
                else:
                    at = column + len(out)
                out += self.render(part, indent, at, base, after)
            return out
        if isinstance(expr, Join):
            lines = [self.render(expr.parts[0], indent, column, base)]
            lead = expr.sep.lstrip()
            for part in expr.parts[1:]:
                at = base + len(indent) + len(lead)
                lines.append(f"{indent}{lead}{self.render(part, indent, at, base)}")
            return self.newline.join(lines)
        inner = indent + self.unit
        room = self.width - base - len(inner)  # for a line of its own inside the brackets
        nl = self.newline
        if isinstance(expr, Conditional):
            if flat is not None and len(flat) <= room:
                return f"({nl}{inner}{flat}{nl}{indent})"
            parts = [
                self.render(expr.body, inner, base + len(inner), base),
                "if " + self.render(expr.test, inner, base + len(inner) + 3, base),
                "else " + self.render(expr.orelse, inner, base + len(inner) + 5, base),
            ]
            return f"({nl}" + "".join(f"{inner}{p}{nl}" for p in parts) + f"{indent})"
        if isinstance(expr, Display):
            items = self._flat_all(expr.items)
            body = None if items is None else ", ".join(items)
            if body is not None and len(body) <= room:
                return f"{expr.open}{nl}{inner}{body}{nl}{indent}{expr.close}"
            comma = "," if len(expr.items) > 1 else ""
            rendered = [
                self.render(i, inner, base + len(inner), base, len(comma)) for i in expr.items
            ]
            lines = [expr.open, *(f"{inner}{r}{comma}" for r in rendered), f"{indent}{expr.close}"]
            return nl.join(lines)
        func = (
            expr.func
            if isinstance(expr.func, str)
            else self.render(expr.func, indent, column, base)
        )
        body = None if expr.dangling else self._flat_args(expr.args)
        if body and len(body) <= room:
            # All arguments on one line of their own, as black does when they fit there.
            return f"{func}({nl}{inner}{body}{nl}{indent}){expr.suffix}"
        single = len(expr.args) == 1 and not expr.dangling
        lines = [f"{func}("]
        for arg in expr.args:
            lines += [f"{inner}{c}" for c in arg.comments_before]
            head = f"{inner}{'' if arg.keyword is None else arg.keyword + '='}"
            comma = "" if single and not arg.trailing_comment else ","
            text = self.render(arg.value, inner, base + len(head), base, len(comma))
            tail = "" if arg.trailing_comment is None else f"  {arg.trailing_comment}"
            lines.append(f"{head}{text}{comma}{tail}")
        lines += [f"{inner}{c}" for c in expr.dangling]
        lines.append(f"{indent}){expr.suffix}")
        return nl.join(lines)
