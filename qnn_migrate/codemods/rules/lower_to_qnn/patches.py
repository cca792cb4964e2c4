"""Patches of what the wrapper runs: ExecuTorch's QNN passes, its pass managers, its module's names.

A file may replace a method of one of ExecuTorch's QNN pass classes before it calls the
wrapper (``DecomposeFloorDivide.call = patched``, ``setattr(...)``, ``mock.patch(...)``,
``mock.patch.object(...)``, ``monkeypatch.setattr(...)``). The wrapper runs that class, so
the patch applies; new code that no longer runs it would lower another graph without a
word. What each target's new code still runs is data (``data/patchable.toml``); for each
patch found, :func:`find_patches` says whether the new code keeps it (``KEPT``), keeps it
only when it exports through ``qnn_passes.qnn_export``, which runs ExecuTorch's export stage
(``EXPORT``), or loses it (``LOST``: the file's calls are left, each reported with the patch
and the ways out).

What a patch made in another module does is for the run: ``qnn_transform_passes`` refuses a
replaced pass method it would not run (``qnn_passes/patched_passes.py``).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources

import libcst as cst

from qnn_migrate.codemods.rules.lower_to_qnn.context import FileContext

KEPT = "kept"  # the new code runs what the patch replaced
EXPORT = "export"  # it does when it exports with qnn_export (the qnn-passes target)
LOST = "lost"  # it does not

DATA_FILE = "patchable.toml"


@dataclass(frozen=True)
class Patchable:
    """``data/patchable.toml``: what the wrapper runs that a file may patch."""

    packages: tuple[str, ...]
    export_stage: frozenset[str]
    replaced_to_edge: Mapping[str, str]  # ExecuTorch class -> module of qnn_passes' own
    managers: frozenset[str]
    export_methods: frozenset[str]
    to_edge_methods: frozenset[str]
    wrapper_module: str
    homes: Mapping[
        str, Mapping[str, str]
    ]  # target -> wrapper-module name -> where new code reads it

    def words(self) -> frozenset[str]:
        """Every name that a patch of something here spells (for the engine's excerpt check)."""
        names = {n for home in self.homes.values() for n in home}
        return frozenset(
            {*self.export_stage, *self.replaced_to_edge, *self.managers, *names}
            | {"setattr", "patch"}
        )


@cache
def patchable() -> Patchable:
    """The data, read once."""
    text = resources.files("qnn_migrate.codemods").joinpath("data", DATA_FILE).read_text("utf-8")
    data = tomllib.loads(text)
    classes, managers, wrapper = data["classes"], data["pass_managers"], data["wrapper_module"]
    return Patchable(
        packages=tuple(classes["packages"]),
        export_stage=frozenset(classes["export_stage"]),
        replaced_to_edge=dict(classes["replaced_to_edge"]),
        managers=frozenset(managers["classes"]),
        export_methods=frozenset(managers["export_methods"]),
        to_edge_methods=frozenset(managers["to_edge_methods"]),
        wrapper_module=wrapper["module"],
        homes={k: dict(v) for k, v in wrapper.items() if isinstance(v, dict)},
    )


@dataclass(frozen=True)
class Patch:
    """One patch in the file and what it means for one target."""

    node: cst.CSTNode  # where it is written
    patched: str  # what it replaces, in words (``DecomposeFloorDivide.call``)
    effect: str  # KEPT, EXPORT or LOST
    ways: str = ""  # LOST: what the user can do instead


def find_patches(ctx: FileContext, target: str) -> list[Patch]:
    """Every patch in the module of something the wrapper runs, with its effect on
    ``target``'s new code (KEPT ones left out)."""
    data = patchable()
    found: list[Patch] = []
    for node in ctx.index.nodes:
        for owner, attribute in _patch_targets(ctx, node):
            patch = _classify(data, target, node, owner, attribute)
            if patch is not None and patch.effect != KEPT:
                found.append(patch)
    return found


def _patch_targets(ctx: FileContext, node: cst.CSTNode) -> list[tuple[set[str] | str, str | None]]:
    """What ``node`` patches: (the qualified names of the object, or a dotted string, and the
    attribute; None when it is not a literal)."""
    targets: list[cst.BaseExpression] = []
    if isinstance(node, cst.Assign):
        targets = [t.target for t in node.targets]
    elif isinstance(node, cst.AugAssign | cst.AnnAssign | cst.Del):
        targets = [node.target]
    elif isinstance(node, cst.Call):
        return _patch_call(ctx, node)
    found: list[tuple[set[str] | str, str | None]] = []
    while targets:
        target = targets.pop()
        if isinstance(target, cst.Tuple | cst.List):
            targets += [e.value for e in target.elements]
        elif isinstance(target, cst.Attribute):
            found.append((_names(ctx, target.value), target.attr.value))
    return found


def _patch_call(ctx: FileContext, call: cst.Call) -> list[tuple[set[str] | str, str | None]]:
    """``setattr(obj, "attr", f)``, ``patch("a.b.C.attr")``, ``patch.object(obj, "attr")``,
    ``monkeypatch.setattr(obj, "attr", f)`` or ``monkeypatch.setattr("a.b.C.attr", f)``."""
    args = [a.value for a in call.args if a.keyword is None and not a.star]
    if not args:
        return []
    qualified = {q.name for q in ctx.qualified(call.func)}
    patchers = ctx.catalog.patchers
    method = call.func.attr.value if isinstance(call.func, cst.Attribute) else None
    by_string = bool(qualified & {p for p in patchers if not p.endswith(".object")})
    by_object = "builtins.setattr" in qualified or bool(
        qualified & {p for p in patchers if p.endswith(".object")}
    )
    if method == "setattr" and not by_object:  # pytest's monkeypatch, or the like
        by_string = isinstance(_text(args[0]), str)
        by_object = not by_string
    if by_string:
        text = _text(args[0])
        return [(text, None)] if text is not None else []
    if by_object and len(args) >= 2:
        return [(_names(ctx, args[0]), _text(args[1]))]
    return []


def _text(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString | cst.ConcatenatedString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _names(ctx: FileContext, node: cst.BaseExpression) -> set[str]:
    return (
        {q.name for q in ctx.qualified(node)}
        if isinstance(node, cst.Name | cst.Attribute)
        else set()
    )


def _classify(
    data: Patchable,
    target: str,
    node: cst.CSTNode,
    owner: set[str] | str,
    attribute: str | None,
) -> Patch | None:
    """The patch of ``owner.attribute`` for ``target``, or None when the wrapper does not run
    it. A string ``owner`` is a patch target path, attribute included."""
    candidates: list[tuple[str, str | None]] = []
    if isinstance(owner, str):
        head, _, tail = owner.rpartition(".")
        candidates = [(head, tail), (owner, None)]
    else:
        candidates = [(name, attribute) for name in owner]
    for dotted, attr in candidates:
        if dotted == data.wrapper_module and attr is not None:
            return _wrapper_name(node, data, target, attr)
        if not any(dotted == p or dotted.startswith(p + ".") for p in data.packages):
            continue
        cls = dotted.rsplit(".", 1)[-1]
        what = f"{cls}.{attr}" if attr else cls
        if target != "qnn-passes":
            return None  # --target executorch runs ExecuTorch's pass manager: kept
        if cls in data.export_stage:
            return Patch(node, what, EXPORT)
        if cls in data.replaced_to_edge:
            home = f"{data.replaced_to_edge[cls]}.{cls}"
            return Patch(node, what, LOST, _class_ways(home))
        if cls in data.managers:
            if attr in data.export_methods:
                return Patch(node, what, EXPORT)
            if attr is None or attr in data.to_edge_methods:
                return Patch(node, what, LOST, _class_ways("qnn_passes.qnn_transform_passes"))
    return None


def _class_ways(home: str) -> str:
    return (
        "Rewrite this file with --target executorch, whose helper runs ExecuTorch's pass "
        f"manager (so the patch applies), or move the patch to what the new code runs "
        f"(`{home}`)"
    )


def _wrapper_name(node: cst.CSTNode, data: Patchable, target: str, name: str) -> Patch | None:
    home = data.homes.get(target, {}).get(name)
    if home is None:
        return None  # not read from the wrapper's module, or still read there when it runs
    what = f"{data.wrapper_module}.{name}"
    if home == data.wrapper_module:
        ways = f"Patch `{name}` before this file imports it (the new code binds it at import)"
    else:
        ways = f"Patch `{home}.{name}`, which the new code calls, instead"
        if target == "qnn-passes" and home.startswith("executorch"):
            ways += " (--target executorch reads it from there too)"
    return Patch(node, what, LOST, ways)
