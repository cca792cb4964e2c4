"""Refuse a patched ExecuTorch QNN pass that the canonical flow would not run.

A script (or a notebook, or a module it imports) may replace a method of one of ExecuTorch's
QNN pass classes: ``DecomposeFloorDivide.call = patched``. ExecuTorch's wrapper
``to_edge_transform_and_lower_to_qnn`` runs that class, so the patch applies. The canonical
flow runs some of those classes as this package's own implementations instead: the
export-stage passes (unless the program came from :func:`qnn_passes.qnn_export`, which runs
ExecuTorch's export stage), the to-edge passes of ``pipeline.SUBSTITUTES``, and none of the
pass manager's to-edge methods. A patch of one of those would silently stop applying, so
:func:`refuse_ignored_patches` (called by ``qnn_transform_passes`` for each method) raises
:class:`QnnConfigError` naming the class, the replacing function and the ways out.

A method counts as replaced when the function in the class's own ``__dict__`` was not
defined in that class's body: its code's qualified name (``co_qualname``, which
``functools.wraps`` does not copy) is not ``<Class>.<name>``, or it comes from another
module; a ``unittest.mock`` object counts too. A method a class inherits is not in its
``__dict__`` (it is checked on the base that defines it), so ExecuTorch's own inheritance is
never taken for a patch.
"""

from __future__ import annotations

import types
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from qnn_passes.errors import QnnConfigError

if TYPE_CHECKING:
    from executorch.backends.qualcomm.serialization.qc_schema import QnnExecuTorchBackendType

# Where ExecuTorch's QNN passes and pass managers live (a base outside, such as ExecuTorch's
# generic ExportPass or PassManager, serves this package's passes too: a patch there applies).
_EXECUTORCH_QNN = ("executorch.backends.qualcomm.", "executorch.backends.transforms.")
# The pass manager's methods the wrapper's export step runs (qnn_export runs them too) ...
EXPORT_METHODS = frozenset(
    {"transform_for_export_pipeline", "get_export_passes", "_instantiate_passes", "_transform"}
)
# ... and those of its to-edge step, which qnn_transform_passes replaces by its own pipeline.
TO_EDGE_METHODS = frozenset(
    {
        "get_to_edge_transform_passes",
        "get_capture_program_passes",
        "get_passes_dependency_for_capture_program",
        "get_default_pass_activations",
        "_validate_edge_passes",
        "_reset",
    }
)


def replaced_methods(cls: type, names: Iterable[str] | None = None) -> Iterator[tuple[str, Any]]:
    """(name, replacement) for each method in ``cls``'s own ``__dict__`` (only ``names``, when
    given) that its class body did not define."""
    own = vars(cls)
    for name in own if names is None else [n for n in names if n in own]:
        value = own[name]
        function = value.__func__ if isinstance(value, classmethod | staticmethod) else value
        if _foreign(cls, name, function):
            yield name, function


def _foreign(cls: type, name: str, function: object) -> bool:
    """True for a mock, or a function that ``cls``'s body did not define as ``name``."""
    if type(function).__module__ == "unittest.mock":
        return True
    return isinstance(function, types.FunctionType) and (
        function.__code__.co_qualname != f"{cls.__qualname__}.{name}"
        or function.__module__ != cls.__module__
    )


def _is_executorch_qnn(cls: type) -> bool:
    return cls.__module__.startswith(_EXECUTORCH_QNN)


def describe(replacement: Any) -> str:
    """The replacing function in words: its qualified name and where it is defined."""
    code = getattr(replacement, "__code__", None)
    if isinstance(code, types.CodeType):
        module = getattr(replacement, "__module__", None) or "?"
        return f"{module}.{code.co_qualname} ({code.co_filename}:{code.co_firstlineno})"
    return f"a {type(replacement).__module__}.{type(replacement).__qualname__} object"


def refuse_ignored_patches(
    backend: QnnExecuTorchBackendType, *, exported: bool, method: str
) -> None:
    """Raise :class:`QnnConfigError` if ExecuTorch's QNN passes for ``backend`` carry a patch
    that qnn_transform_passes would not run (``exported``: the program came from qnn_export,
    so ExecuTorch's export stage, patches included, already ran on it).

    Runs before the installed pass lists are compared with the known ones
    (:mod:`qnn_passes.executorch_compat`): a patched ``get_export_passes`` is a patch, not
    drift. ExecuTorch's to-edge passes that this package replaces are checked whether or not
    a pass table activates them (a patch of an inactive pass changes nothing in either flow,
    and is refused all the same: patch this package's class, or remove the patch)."""
    import importlib

    from executorch.backends.qualcomm._passes.qnn_pass_manager import get_qnn_pass_manager_cls

    from qnn_passes.pipeline import EXECUTORCH_PASSES, SUBSTITUTES

    manager = get_qnn_pass_manager_cls(backend)
    checks: list[tuple[type, Iterable[str] | None, str]] = []
    methods = TO_EDGE_METHODS if exported else TO_EDGE_METHODS | EXPORT_METHODS
    for cls in manager.__mro__:
        if _is_executorch_qnn(cls):
            checks.append((cls, methods, "pass manager"))
    if not exported:
        for cls in manager.get_export_passes():  # type: ignore[no-untyped-call]
            checks.append((cls, None, "export"))
    package = importlib.import_module(EXECUTORCH_PASSES)
    for name, ours in SUBSTITUTES.items():
        theirs = getattr(package, name, None)  # a missing one is drift, reported after this
        if isinstance(theirs, type):
            checks.append((theirs, None, f"to-edge:{ours.__module__}"))
    for cls, names, stage in checks:
        for name, replacement in replaced_methods(cls, names):
            raise QnnConfigError(_message(cls, name, replacement, stage, method))


def _message(cls: type, name: str, replacement: Any, stage: str, method: str) -> str:
    where = f"{cls.__module__}.{cls.__qualname__}.{name}"
    if stage == "export" or (stage == "pass manager" and name in EXPORT_METHODS):
        why = (
            "ExecuTorch's export stage, which runs it, did not run on this program "
            "(qnn_transform_passes runs qnn_passes' own export-stage passes instead)"
        )
        todo = (
            "export with qnn_export(model, example_inputs, compiler_specs=...), which runs "
            "ExecuTorch's export stage, patch included; or remove the patch"
        )
    elif stage == "pass manager":
        why = "qnn_transform_passes solves its own pipeline and never calls it"
        todo = (
            "lower with ExecuTorch's pass manager (`qnn-migrate rewrite --target "
            "executorch` writes that code), or remove the patch"
        )
    else:
        ours = stage.split(":", 1)[1]
        why = f"qnn_transform_passes runs {ours}.{cls.__name__} in its place"
        todo = (
            f"patch {ours}.{cls.__name__} instead, or lower with ExecuTorch's pass manager "
            "(`qnn-migrate rewrite --target executorch` writes that code)"
        )
    return (
        f"qnn_transform_passes: method '{method}': {where} was replaced by "
        f"{describe(replacement)}, but the patch would not apply: {why}. To keep it, {todo}."
    )
