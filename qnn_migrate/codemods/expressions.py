"""What evaluating an expression does, as far as moving or repeating it is concerned.

The rewrite turns one call into several, so an argument may be evaluated at a different moment
or more than once. These predicates say when that is invisible:

- *duplicable*: evaluating it again yields the same object or an equal immutable one, with no
  side effect (names, attribute chains, literals, tuples of those, ``is``/``not`` tests);
- *side-effect free*: evaluating it earlier or later changes nothing, but a second evaluation
  would build a new mutable object (list/dict/set displays of side-effect-free parts).

Attribute access runs code when the attribute is a property or the object defines
``__getattr__``, so for the arguments of the call (``cfg.ops``, ``self.compiler_specs``) it is
not free: pass ``attributes=False`` and only names and literals count. Where the rewrite only
moves the *callee* or an assignment target (``self.check(f(...))``, ``self.edge = f(...)``),
attribute access is treated as side-effect free, as every reviewer of such code assumes.
"""

from __future__ import annotations

import libcst as cst


def is_duplicable(node: cst.BaseExpression, *, attributes: bool = True) -> bool:
    """True if the expression may be evaluated twice, or moved, without any visible change.

    ``attributes``: attribute access counts as free (see the module's docstring).
    """
    if isinstance(node, cst.Name | cst.BaseNumber | cst.SimpleString | cst.Ellipsis):
        return True
    if isinstance(node, cst.ConcatenatedString):
        return is_duplicable(node.left) and is_duplicable(node.right)
    if isinstance(node, cst.Attribute):
        return attributes and is_duplicable(node.value)
    if isinstance(node, cst.UnaryOperation):
        return is_duplicable(node.expression, attributes=attributes)
    if isinstance(node, cst.BooleanOperation):
        return is_duplicable(node.left, attributes=attributes) and is_duplicable(
            node.right, attributes=attributes
        )
    if isinstance(node, cst.Comparison):
        return is_duplicable(node.left, attributes=attributes) and all(
            isinstance(c.operator, cst.Is | cst.IsNot)
            and is_duplicable(c.comparator, attributes=attributes)
            for c in node.comparisons
        )
    if isinstance(node, cst.Tuple):
        return all(
            isinstance(e, cst.Element) and is_duplicable(e.value, attributes=attributes)
            for e in node.elements
        )
    return False


def is_reference(node: cst.BaseExpression, *, attributes: bool = True) -> bool:
    """A name, an attribute chain or a one-line literal: fine to write several times."""
    if isinstance(node, cst.Name | cst.BaseNumber | cst.SimpleString | cst.Ellipsis):
        return "\n" not in getattr(node, "value", "")
    if isinstance(node, cst.Attribute):
        return attributes and is_reference(node.value)
    return False


def is_side_effect_free(node: cst.BaseExpression, *, attributes: bool = True) -> bool:
    """True if evaluating the expression earlier or later than written changes nothing."""
    if is_duplicable(node, attributes=attributes):
        return True
    if isinstance(node, cst.List | cst.Set | cst.Tuple):
        return all(
            isinstance(e, cst.Element) and is_side_effect_free(e.value, attributes=attributes)
            for e in node.elements
        )
    if isinstance(node, cst.Dict):
        return all(
            isinstance(e, cst.DictElement)
            and is_side_effect_free(e.key, attributes=attributes)
            and is_side_effect_free(e.value, attributes=attributes)
            for e in node.elements
        )
    return False


def evaluated_before(parent: cst.CSTNode, child: cst.CSTNode) -> list[cst.CSTNode] | None:
    """The parts of ``parent`` that Python evaluates before ``child``.

    None when ``child`` may be evaluated conditionally, repeatedly or in another scope
    (short-circuit operands, conditional branches, lambdas, comprehensions, asserts, ...):
    moving such a child out of ``parent`` would change what runs.
    """
    match parent:
        case cst.Call(func=func, args=args):
            if child is func:
                return []
            for i, arg in enumerate(args):
                if child is arg:
                    return [func, *args[:i]]
            return None
        case cst.Arg() | cst.Element() | cst.StarredElement() | cst.Index() | cst.Await():
            return []
        case cst.Attribute(value=value):
            return [] if child is value else None
        case cst.Subscript(value=value, slice=slices):
            if child is value:
                return []
            for i, element in enumerate(slices):
                if child is element:
                    return [value, *slices[:i]]
            return None
        case cst.SubscriptElement():
            return []
        case cst.Slice(lower=lower, upper=upper, step=step):
            parts: list[cst.CSTNode] = [p for p in (lower, upper, step) if p is not None]
            return parts[: parts.index(child)] if child in parts else None
        case cst.BinaryOperation(left=left):
            return [] if child is left else [left]
        case cst.UnaryOperation():
            return []
        case cst.BooleanOperation(left=left):
            return [] if child is left else None
        case cst.Comparison(left=left, comparisons=comparisons):
            if child is left:
                return []
            if comparisons and child is comparisons[0]:
                return [left]
            return None
        case cst.ComparisonTarget():
            return []
        case cst.Tuple() | cst.List() | cst.Set() | cst.Dict():
            items: list[cst.CSTNode] = list(parent.elements)
            return items[: items.index(child)] if child in items else None
        case cst.DictElement(key=key):
            return [] if child is key else [key]
        case cst.StarredDictElement():
            return []
        case cst.NamedExpr(value=value):
            return [] if child is value else None
        case cst.Assign(value=value) | cst.AnnAssign(value=value):
            return [] if child is value else None
        case cst.AugAssign(value=value, target=target):
            return [target] if child is value else None
        case cst.Expr() | cst.Return():
            return []
        case cst.ListComp() | cst.SetComp() | cst.DictComp() | cst.GeneratorExp():
            # Only the first iterable is evaluated at once, in the enclosing scope.
            return [] if child is parent.for_in else None
        case cst.CompFor(iter=iterable):
            return [] if child is iterable else None
        case _:
            return None


def attribute_chain(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """``a.b.c`` as ``[a.b.c, a.b, a]``: the node, then each attribute's object, outermost
    first; the last is what the chain starts from (a name, or any other expression)."""
    chain = [node]
    while isinstance(node, cst.Attribute):
        node = node.value
        chain.append(node)
    return chain


def chain_root(node: cst.BaseExpression) -> cst.BaseExpression:
    """What an attribute chain starts from: ``a`` for ``a.b.c``, the node itself otherwise."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return node
