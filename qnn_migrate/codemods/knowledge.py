"""What can be shown about a value without running the code: is it (never) a dict?

Used by both targets to pick the short single-method (or known-methods) form only when the
source proves that ``module`` is not a dict (a literal, a call of a known module factory or of a
class defined in the file that derives from ``torch.nn.Module``, a parameter annotated as a
module, a name assigned exactly once from one of those, or assigned one of those by the
statement right before, as ``m = convert_pt2e(m)``), and that a value is a dict (a dict
display, ``dict(...)``, a parameter annotated ``Dict[...]``), and which keys a dict has (a
display, or a name assigned a display once whose other uses only read it). No proof means
"unknown", and the target then emits code that decides at run time. The known callables are data
(``[evidence]`` in ``data/deprecations.toml``).
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst
from libcst.metadata import Assignment, GlobalScope, Scope

from qnn_migrate.codemods.deprecations import Evidence

_DICT_FACTORIES = frozenset(
    {"builtins.dict", "collections.OrderedDict", "collections.defaultdict", "typing.OrderedDict"}
)
_MAX_DEPTH = 6  # name -> assignment -> name ... chains longer than this count as unknown


class Knowledge:
    """Answers ``is_dict``/``is_not_dict`` from a module's scopes.

    ``qualified(node)`` gives the qualified names of a Name/Attribute, ``scope(node)`` the
    scope a node is in, ``parent(node)`` its parent: the rule's metadata, passed in.
    """

    def __init__(
        self,
        evidence: Evidence,
        qualified: Callable[[cst.CSTNode], set[str]],
        scope: Callable[[cst.CSTNode], Scope | None],
        parent: Callable[[cst.CSTNode], cst.CSTNode | None],
        keeps_arguments: frozenset[str] = frozenset(),
    ) -> None:
        """``keeps_arguments``: qualified names of callables that change none of their
        arguments (the deprecated function: a value passed to it is still what it was)."""
        self.evidence = evidence
        self._keeps_arguments = keeps_arguments
        self._qualified = qualified
        self._scope = scope
        self._parent = parent
        # Module-level names whose dict keys were read from their assignment: code elsewhere
        # in the file (a function an excerpt leaves out) could change those keys.
        self.followed: set[str] = set()

    def _single_binding(self, name: cst.Name) -> Assignment | None:
        """The binding of ``name`` when exactly one is visible, else None."""
        scope = self._scope(name)
        if scope is None:
            return None
        found = list(scope[name.value])
        if len(found) != 1 or not isinstance(found[0], Assignment):
            return None
        return found[0]

    def _single_assignment(self, name: cst.Name) -> cst.CSTNode | None:
        """The node that binds ``name`` when exactly one binding is visible, else None."""
        binding = self._single_binding(name)
        if binding is None:
            return None
        node = binding.node
        assert isinstance(node, cst.CSTNode)
        return node

    def _assigned_value(self, target: cst.CSTNode) -> cst.BaseExpression | None:
        """For ``x = value`` (one plain target) the value, else None."""
        parent = self._parent(target)
        if isinstance(parent, cst.AssignTarget):
            statement = self._parent(parent)
            if isinstance(statement, cst.Assign) and len(statement.targets) == 1:
                return statement.value
        if isinstance(parent, cst.AnnAssign) and parent.target is target:
            return parent.value
        return None

    def is_dict(self, node: cst.BaseExpression, depth: int = 0) -> bool:
        """True if the value is always a dict."""
        if depth > _MAX_DEPTH:
            return False
        if isinstance(node, cst.Dict | cst.DictComp):
            return True
        if isinstance(node, cst.Call):
            names = self._qualified(node.func)
            return bool(names) and names <= _DICT_FACTORIES
        if isinstance(node, cst.Name):
            binding = self._single_assignment(node)
            if isinstance(binding, cst.Param):
                return self._annotated(binding, self.evidence.dict_annotations)
            value = self._value_of(node, binding)
            return value is not None and self.is_dict(value, depth + 1)
        return False

    def dict_keys(self, node: cst.BaseExpression, depth: int = 0) -> frozenset[str] | None:
        """The keys of a dict display with string-literal keys, followed through names
        assigned once (or right before); None when the source does not show them.

        A dict changes its keys without being bound again (``d["k"] = v``, ``d.update(...)``,
        or any code it is handed to), so a name assigned once counts only when every other
        use of it only reads it (:func:`_reads_only`).
        """
        if depth > _MAX_DEPTH:
            return None
        if isinstance(node, cst.Name):
            binding = self._single_binding(node)
            if binding is not None:
                if not all(_reads_only(a.node, node, self._parent) for a in binding.references):
                    return None
                if isinstance(binding.scope, GlobalScope):
                    self.followed.add(node.value)
            target = binding.node if binding is not None else None
            assert target is None or isinstance(target, cst.CSTNode)
            value = self._value_of(node, target)
            return None if value is None else self.dict_keys(value, depth + 1)
        return literal_keys(node)

    def never_dumps(self, node: cst.BaseExpression, depth: int = 0) -> bool:
        """True if the value is compiler specs that a known factory made without turning
        intermediate dumps on (``[[evidence.dump_switches]]``), directly or through a name
        assigned once whose other uses cannot change the list: reads, or arguments of
        ``keeps_arguments``' calls."""
        if depth > _MAX_DEPTH:
            return False
        if isinstance(node, cst.Name):
            binding = self._single_binding(node)
            if binding is None or not all(
                _reads_only(a.node, node, self._parent) or self._old_call_argument(a.node)
                for a in binding.references
            ):
                return False
            if isinstance(binding.scope, GlobalScope):
                self.followed.add(node.value)
            target = binding.node
            assert isinstance(target, cst.CSTNode)
            value = self._assigned_value(target)
            return value is not None and self.never_dumps(value, depth + 1)
        if not isinstance(node, cst.Call):
            return False
        names = self._qualified(node.func)
        switches = {(p, i) for f, p, i in self.evidence.dump_switches if f in names}
        if (
            not names
            or len(switches) != 1
            or not names <= {f for f, _, _ in self.evidence.dump_switches}
        ):
            return False
        ((parameter, position),) = switches
        positional = 0
        for arg in node.args:
            if arg.star:
                return False
            if arg.keyword is None:
                if positional == position and not _is_false(arg.value):
                    return False
                positional += 1
            elif arg.keyword.value == parameter and not _is_false(arg.value):
                return False
        return True

    def _old_call_argument(self, use: cst.CSTNode) -> bool:
        """``use`` is an argument of a call of a function in ``keeps_arguments``."""
        arg = self._parent(use)
        call = self._parent(arg) if isinstance(arg, cst.Arg) else None
        if not isinstance(call, cst.Call):
            return False
        names = self._qualified(call.func)
        return bool(names) and names <= self._keeps_arguments

    def _value_of(self, name: cst.Name, binding: cst.CSTNode | None) -> cst.BaseExpression | None:
        """The value ``name`` holds where it is read: its only assignment's, or else the
        value the statement right before assigns it (``m = convert_pt2e(m)``, the usual
        post-training quantization step before lowering)."""
        if binding is not None:
            return self._assigned_value(binding)
        statement: cst.CSTNode | None = name
        while statement is not None and not isinstance(
            self._parent(statement), cst.IndentedBlock | cst.Module
        ):
            statement = self._parent(statement)
        block = self._parent(statement) if statement is not None else None
        if not isinstance(block, cst.IndentedBlock | cst.Module):
            return None
        body = list(block.body)
        at = next((i for i, s in enumerate(body) if s is statement), 0)
        previous = body[at - 1] if at > 0 else None
        if not isinstance(previous, cst.SimpleStatementLine) or len(previous.body) != 1:
            return None
        assign = previous.body[0]
        if (
            isinstance(assign, cst.Assign)
            and len(assign.targets) == 1
            and isinstance(assign.targets[0].target, cst.Name)
            and assign.targets[0].target.value == name.value
        ):
            return assign.value
        return None

    def _annotated(self, param: cst.Param, annotations: frozenset[str]) -> bool:
        """True if ``param`` is annotated with one of ``annotations`` (qualified names)."""
        if param.annotation is None:
            return False
        hint = param.annotation.annotation
        if isinstance(hint, cst.Subscript):
            hint = hint.value
        names = self._qualified(hint)
        return bool(names) and names <= annotations

    def is_not_dict(self, node: cst.BaseExpression, depth: int = 0) -> bool:
        """True if the value is never a dict."""
        if depth > _MAX_DEPTH:
            return False
        literal = (
            cst.Tuple,
            cst.List,
            cst.Set,
            cst.ListComp,
            cst.SetComp,
            cst.GeneratorExp,
            cst.BaseNumber,
            cst.BaseString,
            cst.Lambda,
        )
        if isinstance(node, literal):
            return True
        if isinstance(node, cst.Name) and node.value in ("None", "True", "False"):
            return True
        if isinstance(node, cst.Call):
            return self._call_is_not_dict(node, depth)
        if isinstance(node, cst.Name):
            return self._name_is_not_dict(node, depth)
        return False

    def _call_is_not_dict(self, call: cst.Call, depth: int) -> bool:
        names = self._qualified(call.func)
        if names and all(self.evidence.is_not_dict_result(n) for n in names):
            return True
        if isinstance(call.func, cst.Name):
            binding = self._single_assignment(call.func)
            if isinstance(binding, cst.ClassDef):
                return self._is_module_class(binding, depth + 1)
        if (
            isinstance(call.func, cst.Attribute)
            and call.func.attr.value in self.evidence.not_dict_methods
        ):
            return self.is_not_dict(call.func.value, depth + 1)
        return False

    def _name_is_not_dict(self, name: cst.Name, depth: int) -> bool:
        binding = self._single_assignment(name)
        if isinstance(binding, cst.ClassDef | cst.FunctionDef):
            return True  # a class or function object is not a dict
        if isinstance(binding, cst.Param):
            return self._annotated(binding, self.evidence.not_dict_annotations)
        value = self._value_of(name, binding)
        return value is not None and self.is_not_dict(value, depth + 1)

    def _is_module_class(self, cls: cst.ClassDef, depth: int) -> bool:
        """A class defined in this file that derives from a torch module class."""
        if depth > _MAX_DEPTH:
            return False
        bases = [b.value for b in cls.bases if b.keyword is None]
        return bool(bases) and all(self._is_module_base(b, depth) for b in bases)

    def _is_module_base(self, base: cst.BaseExpression, depth: int) -> bool:
        names = self._qualified(base)
        if names and names <= self.evidence.module_bases:
            return True
        if isinstance(base, cst.Name):
            binding = self._single_assignment(base)
            return isinstance(binding, cst.ClassDef) and self._is_module_class(binding, depth + 1)
        return False


# Methods of a dict that leave its keys as they are.
_READING_METHODS = frozenset({"keys", "values", "items", "get", "copy"})
# Where a subscript, or a tuple of targets holding one, is stored to or deleted.
_STORES = (
    cst.AssignTarget,
    cst.AugAssign,
    cst.AnnAssign,
    cst.Del,
    cst.For,
    cst.CompFor,
    cst.AsName,
)


def _reads_only(
    use: cst.CSTNode,
    asked: cst.CSTNode,
    parent: Callable[[cst.CSTNode], cst.CSTNode | None],
) -> bool:
    """True if ``use`` (a use of a dict's name) cannot change the dict's keys: the use asked
    about, an item read (``d["k"]``), a reading method (``d.items()``), a membership test or
    an iteration. Anything else (an item stored or deleted, another method, the dict passed
    to a call or bound to another name) might."""
    if use is asked:
        return True
    above = parent(use)
    match above:
        case cst.Subscript(value=value) if value is use:
            walk: cst.CSTNode | None = parent(above)
            while isinstance(walk, cst.Element | cst.StarredElement | cst.Tuple | cst.List):
                walk = parent(walk)  # `a, d["k"] = ...` stores too
            return not isinstance(walk, _STORES)
        case cst.Attribute(value=value, attr=attr) if value is use:
            call = parent(above)
            return (
                attr.value in _READING_METHODS and isinstance(call, cst.Call) and call.func is above
            )
        case cst.ComparisonTarget(comparator=value) if value is use:
            return True
        case cst.For(iter=value) | cst.CompFor(iter=value) if value is use:
            return True
    return False


def _is_false(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"


def literal_keys(node: cst.BaseExpression) -> frozenset[str] | None:
    """The keys of a dict display whose keys are all string literals, else None."""
    if not isinstance(node, cst.Dict):
        return None
    keys = []
    for element in node.elements:
        if not isinstance(element, cst.DictElement) or not isinstance(
            element.key, cst.SimpleString
        ):
            return None
        key = element.key.evaluated_value
        if not isinstance(key, str):
            return None
        keys.append(key)
    return frozenset(keys)
