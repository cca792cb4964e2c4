"""The deprecations the rewrite knows, loaded from ``codemods/data/deprecations.toml``."""

from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

# How the qnn-passes target writes the export: "canonical" is the user's own
# torch.export.export(..., strict=True) wherever the source shows the module's shape;
# "qnn-export" always calls qnn_passes.qnn_export (the shape of qnn-migrate 0.1).
FLOWS = ("canonical", "qnn-export")
DEFAULT_FLOW = "canonical"

DATA_FILE = "deprecations.toml"


class DeprecationDataError(ValueError):
    """The deprecation data file is malformed; the message names the key and the file."""


@dataclass(frozen=True)
class TargetSpec:
    """One way of writing the replacement (``--target NAME``)."""

    name: str
    help: str
    first_use: tuple[str, ...]  # the order in which the new code first evaluates each parameter


@dataclass(frozen=True)
class Deprecation:
    """One deprecated callable: where it lives, its parameters and what replaces it."""

    name: str
    qualified_names: frozenset[str]
    defining_module: str
    replacement: str
    since: str
    reference: str
    parameters: tuple[str, ...]
    required: frozenset[str]
    per_method: frozenset[str]
    targets: tuple[TargetSpec, ...]  # the first is the default

    def target(self, name: str) -> TargetSpec:
        """The target called ``name``; ValueError naming the choices otherwise."""
        for spec in self.targets:
            if spec.name == name:
                return spec
        choices = ", ".join(t.name for t in self.targets)
        raise ValueError(f"unknown target {name!r}; choose one of {choices}")


@dataclass(frozen=True)
class Evidence:
    """What --target executorch may know about a value without running the code."""

    not_dict_results: tuple[str, ...]
    not_dict_methods: frozenset[str]
    not_dict_annotations: frozenset[str]
    dict_annotations: frozenset[str]
    module_bases: frozenset[str]
    # (compiler-spec factory's qualified name, its switch for intermediate dumps, position)
    dump_switches: tuple[tuple[str, str, int], ...] = ()

    def is_not_dict_result(self, qualified_name: str) -> bool:
        """True if calling ``qualified_name`` never returns a dict."""
        return any(fnmatch.fnmatchcase(qualified_name, p) for p in self.not_dict_results)


@dataclass(frozen=True)
class Catalog:
    """Everything in the data file."""

    deprecations: tuple[Deprecation, ...]
    patchers: frozenset[str]
    evidence: Evidence


def _strings(table: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = table.get(key)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DeprecationDataError(f"{DATA_FILE}: {where}.{key} must be a list of strings")
    return tuple(value)


def _string(table: dict[str, Any], key: str, where: str) -> str:
    value = table.get(key)
    if not isinstance(value, str) or not value:
        raise DeprecationDataError(f"{DATA_FILE}: {where}.{key} must be a non-empty string")
    return value


def parse_catalog(text: str) -> Catalog:
    """Build a :class:`Catalog` from the TOML text of a deprecations file."""
    data = tomllib.loads(text)
    deprecations = []
    for i, raw in enumerate(data.get("deprecation", [])):
        where = f"deprecation[{i}]"
        parameters = _strings(raw, "parameters", where)
        required = frozenset(_strings(raw, "required", where))
        per_method = frozenset(_strings(raw, "per_method", where))
        unknown = (required | per_method) - set(parameters)
        if unknown:
            raise DeprecationDataError(
                f"{DATA_FILE}: {where} names {sorted(unknown)} which are not in its parameters"
            )
        targets = []
        for j, target in enumerate(raw.get("target", [])):
            at = f"{where}.target[{j}]"
            # Optional: a target that calls a function with the user's own arguments (which
            # Python evaluates before the function runs) moves none of them.
            first_use = _strings(target, "first_use", at) if "first_use" in target else parameters
            if sorted(first_use) != sorted(parameters):
                raise DeprecationDataError(
                    f"{DATA_FILE}: {at}.first_use must name every parameter exactly once"
                )
            targets.append(
                TargetSpec(_string(target, "name", at), _string(target, "help", at), first_use)
            )
        if not targets:
            raise DeprecationDataError(f"{DATA_FILE}: {where} has no [[deprecation.target]]")
        deprecations.append(
            Deprecation(
                name=_string(raw, "name", where),
                qualified_names=frozenset(_strings(raw, "qualified_names", where)),
                defining_module=_string(raw, "defining_module", where),
                replacement=_string(raw, "replacement", where),
                since=_string(raw, "since", where),
                reference=_string(raw, "reference", where),
                parameters=parameters,
                required=required,
                per_method=per_method,
                targets=tuple(targets),
            )
        )
    if not deprecations:
        raise DeprecationDataError(f"{DATA_FILE}: no [[deprecation]] entries")
    evidence = data.get("evidence", {})
    return Catalog(
        deprecations=tuple(deprecations),
        patchers=frozenset(_strings(data.get("patchers", {}), "qualified_names", "patchers")),
        evidence=Evidence(
            not_dict_results=_strings(evidence, "not_dict_results", "evidence"),
            not_dict_methods=frozenset(_strings(evidence, "not_dict_methods", "evidence")),
            not_dict_annotations=frozenset(_strings(evidence, "not_dict_annotations", "evidence")),
            dict_annotations=frozenset(_strings(evidence, "dict_annotations", "evidence")),
            module_bases=frozenset(_strings(evidence, "module_bases", "evidence")),
            dump_switches=_dump_switches(evidence),
        ),
    )


def _dump_switches(evidence: dict[str, Any]) -> tuple[tuple[str, str, int], ...]:
    """``[[evidence.dump_switches]]``: factory, parameter, position."""
    found = []
    for i, raw in enumerate(evidence.get("dump_switches", [])):
        where = f"evidence.dump_switches[{i}]"
        position = raw.get("position") if isinstance(raw, dict) else None
        if not isinstance(position, int) or isinstance(position, bool) or position < 0:
            raise DeprecationDataError(f"{DATA_FILE}: {where}: `position` must be an integer >= 0")
        found.append((_string(raw, "factory", where), _string(raw, "parameter", where), position))
    return tuple(found)


@cache
def catalog() -> Catalog:
    """The bundled catalog (read once per process)."""
    # Next to this module (package data), read by path: robust to how the package is installed.
    text = (Path(__file__).parent / "data" / DATA_FILE).read_text(encoding="utf-8")
    return parse_catalog(text)


def lower_to_qnn() -> Deprecation:
    """The ``to_edge_transform_and_lower_to_qnn`` entry of the bundled catalog."""
    for deprecation in catalog().deprecations:
        if deprecation.name == "to_edge_transform_and_lower_to_qnn":
            return deprecation
    raise DeprecationDataError(f"{DATA_FILE}: no entry for to_edge_transform_and_lower_to_qnn")


def target_names() -> tuple[str, ...]:
    """The ``--target`` choices, the default first (from the bundled data)."""
    return tuple(t.name for t in lower_to_qnn().targets)


def default_target() -> str:
    """The target used when none is given."""
    return lower_to_qnn().targets[0].name
