"""Per-method values: the rules the deprecated wrapper uses to turn one argument into one value per method.

The wrapper (``to_edge_transform_and_lower_to_qnn``) accepts most arguments either once for
every method or as a dict keyed by method name. Its rule (``ensure_graph_specific_dict``):

* ``None`` -> ``None`` for every method;
* a dict whose keys equal the method names -> used as is;
* anything else -> the same value for every method.

:func:`per_method` is that rule. :func:`per_method_specs` and :func:`per_method_table` are the
same rule with one deliberate difference each, because the wrapper's "anything else" branch
turns a mistyped method name into a confusing failure much later: compiler specs given as a
dict must name exactly the methods, and a pass table (``passes_job``, ``dep_table``) keyed by
strings - pass tables are keyed by pass classes - must be a per-method dict that names exactly
the methods. Both raise :class:`QnnConfigError` naming the unknown and the missing methods.

Pure: no torch import.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from qnn_passes.errors import QnnConfigError

T = TypeVar("T")

DEFAULT_METHOD = "forward"


def method_names(programs: object) -> list[str]:
    """Method names of a program or model argument: a dict's keys, else ``["forward"]``."""
    if isinstance(programs, dict):
        if not programs:
            raise QnnConfigError(
                "qnn_passes: the dict of methods is empty; pass at least one method, "
                "e.g. {'forward': model}."
            )
        bad = [k for k in programs if not isinstance(k, str)]
        if bad:
            raise QnnConfigError(
                f"qnn_passes: method names must be strings, got {bad!r}; key the dict by "
                "method name, e.g. {'forward': model}."
            )
        return list(programs)
    return [DEFAULT_METHOD]


def as_methods(programs: Any) -> dict[str, Any]:
    """``{method: value}``: a dict as given, anything else as the single method "forward"."""
    names = method_names(programs)
    return dict(programs) if isinstance(programs, dict) else {names[0]: programs}


def per_method(value: Any, names: Sequence[str]) -> dict[str, Any]:
    """The wrapper's rule: None -> None each; dict keyed exactly by ``names`` -> as is; else broadcast."""
    if value is None:
        return dict.fromkeys(names)
    if isinstance(value, dict) and set(value) == set(names) and len(value) == len(names):
        return {name: value[name] for name in names}
    return dict.fromkeys(names, value)


def _describe_keys(given: Sequence[object], names: Sequence[str]) -> str:
    unknown = [k for k in given if k not in names]
    missing = [n for n in names if n not in given]
    parts = []
    if unknown:
        parts.append(f"names method(s) {unknown!r} that do not exist")
    if missing:
        parts.append(f"has no entry for method(s) {missing!r}")
    return " and ".join(parts)


def per_method_specs(compiler_specs: Any, names: Sequence[str]) -> dict[str, list[Any]]:
    """Compiler specs per method; a dict must name exactly the methods (wrapper would broadcast it)."""
    if compiler_specs is None:
        raise QnnConfigError(
            "qnn_passes: compiler_specs is None; build them with "
            "generate_qnn_executorch_compiler_spec(...) and pass the list (or a dict of "
            f"lists keyed by method: {list(names)!r})."
        )
    if isinstance(compiler_specs, Mapping):
        if set(compiler_specs) != set(names):
            raise QnnConfigError(
                f"qnn_passes: compiler_specs {_describe_keys(list(compiler_specs), names)}; "
                f"the methods are {list(names)!r}. Key the dict by exactly these names, or "
                "pass one list of specs for every method."
            )
        return {name: list(compiler_specs[name]) for name in names}
    if isinstance(compiler_specs, (str, bytes)) or not isinstance(compiler_specs, Sequence):
        raise QnnConfigError(
            f"qnn_passes: compiler_specs must be a list of CompileSpec (or a dict of such "
            f"lists keyed by method), got {type(compiler_specs).__name__}."
        )
    shared = list(compiler_specs)
    return {name: shared for name in names}


def per_method_table(table: Any, names: Sequence[str], *, what: str) -> dict[str, Any]:
    """A pass table (``passes_job``/``dep_table``) per method, by the wrapper's rule.

    Pass tables are keyed by pass classes, so a dict keyed only by strings can only be meant
    as per-method; if its keys are not exactly the methods, that is a mistake to report.
    """
    if (
        isinstance(table, Mapping)
        and table
        and all(isinstance(k, str) for k in table)
        and set(table) != set(names)
    ):
        raise QnnConfigError(
            f"qnn_passes: {what} is keyed by strings {list(table)!r}, so it reads as one "
            f"table per method, but it {_describe_keys(list(table), names)}; the methods are "
            f"{list(names)!r}. Key it by exactly these names, or pass a single table keyed "
            "by pass class for every method."
        )
    return per_method(table, names)
