"""Bind the arguments of a call to the parameters of the deprecated function, as Python would.

Positional, keyword and mixed arguments; ``*`` of a tuple/list display and ``**`` of a dict
display with string keys are spliced (their contents are known). Anything else whose contents
are unknown is a :class:`BindError`, never a guess. Comments written between the arguments are
kept with the argument they sit next to, so the rewrite can put them back.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Literal

import libcst as cst


@dataclass(frozen=True)
class BoundArg:
    """One argument bound to a parameter."""

    param: str
    value: cst.BaseExpression
    order: int  # position in Python's left-to-right evaluation of the call's arguments
    comments_before: tuple[str, ...] = ()
    trailing_comment: str | None = None


@dataclass(frozen=True)
class BoundCall:
    """The arguments of one call, by parameter name, in evaluation order."""

    args: dict[str, BoundArg]
    dangling_comments: tuple[str, ...] = ()  # written after the last argument, before ")"

    def get(self, param: str) -> cst.BaseExpression | None:
        """The expression passed for ``param``, or None when it was not passed."""
        bound = self.args.get(param)
        return None if bound is None else bound.value


@dataclass(frozen=True)
class BindError:
    """Why a call's arguments cannot be bound; ``detail`` names the argument(s)."""

    kind: Literal["star", "unknown_keyword", "bad"]
    detail: str


@dataclass
class _Comments:
    before: list[str] = field(default_factory=list)
    trailing: list[str] = field(default_factory=list)


def _ws_comments(ws: cst.BaseParenthesizableWhitespace | None) -> list[str]:
    if isinstance(ws, cst.ParenthesizedWhitespace):
        found = [] if ws.first_line.comment is None else [ws.first_line.comment.value]
        return found + [e.comment.value for e in ws.empty_lines if e.comment is not None]
    return []


def _split_ws(
    ws: cst.BaseParenthesizableWhitespace | None,
) -> tuple[list[str], list[str]]:
    """(comment on the same line, comments on the lines after) of a whitespace node."""
    if isinstance(ws, cst.ParenthesizedWhitespace):
        same = [] if ws.first_line.comment is None else [ws.first_line.comment.value]
        return same, [e.comment.value for e in ws.empty_lines if e.comment is not None]
    return [], []


def _string_key(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString) and "b" not in node.prefix.lower():
        value = ast.literal_eval(node.value)
        return value if isinstance(value, str) else None
    return None


def bind_call(call: cst.Call, parameters: tuple[str, ...]) -> BoundCall | BindError:
    """Bind ``call``'s arguments to ``parameters`` (all positional-or-keyword)."""
    # (param or None for positional, value, comments) in evaluation order.
    flat: list[tuple[str | None, cst.BaseExpression, _Comments]] = []
    carried = _Comments()
    carried.before += _ws_comments(call.whitespace_before_args)
    dangling: list[str] = []
    for i, arg in enumerate(call.args):
        comments = carried
        carried = _Comments()
        for ws in (arg.whitespace_after_star, arg.whitespace_after_arg):
            same, after = _split_ws(ws)
            comments.trailing += same
            (dangling if i == len(call.args) - 1 else carried.before).extend(after)
        if isinstance(arg.equal, cst.AssignEqual):
            comments.trailing += _ws_comments(arg.equal.whitespace_before)
            comments.trailing += _ws_comments(arg.equal.whitespace_after)
        if isinstance(arg.comma, cst.Comma):
            comments.trailing += _ws_comments(arg.comma.whitespace_before)
            same, after = _split_ws(arg.comma.whitespace_after)
            comments.trailing += same
            (dangling if i == len(call.args) - 1 else carried.before).extend(after)

        if arg.star == "*":
            if not isinstance(arg.value, cst.Tuple | cst.List) or any(
                not isinstance(e, cst.Element) for e in arg.value.elements
            ):
                return BindError("star", "*" + _short(arg.value))
            for j, element in enumerate(arg.value.elements):
                flat.append((None, element.value, comments if j == 0 else _Comments()))
        elif arg.star == "**":
            if not isinstance(arg.value, cst.Dict):
                return BindError("star", "**" + _short(arg.value))
            for j, item in enumerate(arg.value.elements):
                key = _string_key(item.key) if isinstance(item, cst.DictElement) else None
                if key is None or not isinstance(item, cst.DictElement):
                    return BindError("star", "**" + _short(arg.value))
                flat.append((key, item.value, comments if j == 0 else _Comments()))
        elif arg.keyword is not None:
            flat.append((arg.keyword.value, arg.value, comments))
        else:
            flat.append((None, arg.value, comments))

    bound: dict[str, BoundArg] = {}
    positional = [item for item in flat if item[0] is None]
    if any(item[0] is None for item in flat[len(positional) :]):
        return BindError("bad", "a positional argument after a keyword argument")
    if len(positional) > len(parameters):
        return BindError(
            "bad", f"{len(positional)} positional arguments (at most {len(parameters)})"
        )
    unknown = [name for name, _, _ in flat if name is not None and name not in parameters]
    if unknown:
        return BindError("unknown_keyword", ", ".join(f"`{n}`" for n in unknown))
    for order, (name, value, comments) in enumerate(flat):
        param = parameters[order] if name is None else name
        if param in bound:
            return BindError("bad", f"`{param}` given twice")
        bound[param] = BoundArg(
            param=param,
            value=value,
            order=order,
            comments_before=tuple(comments.before),
            trailing_comment="  ".join(comments.trailing) or None,
        )
    return BoundCall(args=bound, dangling_comments=tuple(dangling + carried.before))


def _short(node: cst.BaseExpression) -> str:
    code = cst.Module(body=[]).code_for_node(node)
    return code if len(code) <= 40 else code[:37] + "..."
