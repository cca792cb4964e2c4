"""The to-edge QNN pass pipeline as data, solved into an order with its invariants checked.

Four tables, all by pass class name, describe the pipeline for each backend variant that
ExecuTorch's pass-manager classes define (``QnnPassManager`` = "base", ``QnnHtpPassManager``,
``QnnGpuPassManager``, ``QnnLpaiPassManager``):

* ``ACTIVATIONS`` - every pass with its default on/off state; the list order breaks ties;
* ``RUNS_AFTER`` - pass -> the passes that must run before it;
* ``MUST_BE_LAST`` - passes that must end the active list, in this order;
* ``SUBSTITUTES`` - ExecuTorch passes that run as this package's implementation instead.

They reproduce ExecuTorch 1.5.1's ``get_default_pass_activations()`` and
``get_passes_dependency_for_capture_program()`` exactly (a test compares them), so the solved
order is the one ExecuTorch's ``get_to_edge_transform_passes`` produces. The solver is the same
algorithm as ``torch.fx.passes.infra.pass_manager`` (Kahn's algorithm, first-in first-out,
ties broken by activation-list order); inactive passes take part in ordering, as upstream.

Users edit pass jobs and dependency tables keyed by ExecuTorch's classes (from
``QnnPassManager.get_capture_program_passes()``); :func:`plan` accepts those, swaps in the
substitutes, and never mutates what it is given (upstream flips ``ConvertLinearToConv2d`` on
in the caller's dict and writes the program into its kwargs dicts).

Invariants checked on every plan, with an error naming the method and what to change:
every pass named in a table is known (in the job, or an ExecuTorch QNN pass), the table has no
cycle, the must-be-last passes are last, and ``AnnotateGetAttr`` runs after every pass that
rebuilds the graph (``REBUILDS_GRAPH``), because a rebuild drops the quantization attributes
it writes on ``get_attr`` nodes.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from qnn_passes.annotate_get_attr import AnnotateGetAttr
from qnn_passes.broadcast_static_operands import BroadcastStaticOperands
from qnn_passes.canonicalize_conv import CanonicalizeConv
from qnn_passes.convert_linear_to_conv2d import ConvertLinearToConv2d
from qnn_passes.errors import PassOrderError, QnnConfigError
from qnn_passes.flatten_rms_norm import FlattenRmsNorm
from qnn_passes.reshape_scalar_select import ReshapeScalarSelect

if TYPE_CHECKING:
    from executorch.exir.backend.compile_spec_schema import CompileSpec
    from executorch.exir.pass_base import ExportedProgramPassBase
    from executorch.exir.pass_manager import PassType
    from torch.export import ExportedProgram

    # A pass of the pipeline: ExecuTorch's graph-module passes, or ExportedProgram passes
    # (this package's, which edit the signature).
    QnnPass: TypeAlias = PassType | ExportedProgramPassBase

K = TypeVar("K", bound=Hashable)

VARIANTS = ("base", "htp", "gpu", "lpai")

# ExecuTorch's keys in a passes_job entry (executorch.backends.qualcomm.utils.constants).
ACTIVATE_KEY = "activate"
KWARGS_KEY = "args_kwargs_defaults"

_BASE_ACTIVATIONS: tuple[tuple[str, bool], ...] = (
    ("AnnotateAvgPool1D", True),
    ("AnnotateGetAttr", True),
    ("AnnotateQuantAttrs", True),
    ("AnnotateStack", True),
    ("AnnotateUnbind", True),
    ("CanonicalizeConv", True),
    ("ConvertBmmToMatmul", False),
    ("ConvertLinearToConv2d", False),
    ("DecomposeAcos", True),
    ("DecomposeAddmm", True),
    ("DecomposeAny", True),
    ("DecomposeAtan2", True),
    ("DecomposeColIm", True),
    ("DecomposePDist", True),
    ("DecomposeDiagonal", True),
    ("DecomposeDivMode", True),
    ("DecomposeHyperbolicVariants", True),
    ("DecomposeLogVariants", True),
    ("DecomposeMaxPool3d", True),
    ("DecomposeMinMaxDim", True),
    ("DecomposePad", True),
    ("DecomposeRemainder", True),
    ("DecomposeTan", True),
    ("DecomposeTrunc", True),
    ("ExpandBroadcastTensorShape", True),
    ("FixedLinearKeepDim", True),
    ("FoldQDQ", True),
    ("I64toI32", True),
    ("InsertCastForFpActQuantizedWeight", True),
    ("LayoutTransform", True),
    ("RecomposePadMaxPool2d", True),
    ("RecomposePixelUnshuffle", True),
    ("RecomposeRmsNorm", True),
    ("Remove0DTensor", True),
    ("RemoveRedundancy", True),
    ("TagQuantIO", False),
    ("ResolveDebugHandle", True),
)

ACTIVATIONS: Mapping[str, tuple[tuple[str, bool], ...]] = {
    "base": _BASE_ACTIVATIONS,
    "htp": (*_BASE_ACTIVATIONS, ("DecomposeReciprocal", True)),
    "gpu": (*_BASE_ACTIVATIONS, ("DecomposeReciprocal", True)),
    "lpai": (
        *_BASE_ACTIVATIONS,
        ("DecomposeHardsigmoid", True),
        ("DecomposeReciprocal", True),
        ("LpaiPartitionFallbackSupport", True),
    ),
}

_BASE_RUNS_AFTER: dict[str, tuple[str, ...]] = {
    "AnnotateAvgPool1D": ("RemoveRedundancy",),
    "AnnotateGetAttr": ("CanonicalizeConv", "ConvertLinearToConv2d", "I64toI32", "LayoutTransform"),
    "AnnotateQuantAttrs": ("ConvertBmmToMatmul", "RecomposePixelUnshuffle", "RemoveRedundancy"),
    "AnnotateStack": ("RemoveRedundancy",),
    "AnnotateUnbind": ("RemoveRedundancy",),
    "CanonicalizeConv": ("FoldQDQ",),
    "ConvertBmmToMatmul": ("RecomposePixelUnshuffle",),
    "ConvertLinearToConv2d": ("FoldQDQ",),
    "DecomposeAcos": ("RemoveRedundancy",),
    "DecomposeAddmm": ("RemoveRedundancy",),
    "DecomposeAny": ("RemoveRedundancy",),
    "DecomposeAtan2": ("RemoveRedundancy",),
    "DecomposeColIm": ("FoldQDQ",),
    "DecomposePDist": ("RemoveRedundancy",),
    "DecomposeDiagonal": ("RemoveRedundancy",),
    "DecomposeDivMode": ("RemoveRedundancy",),
    "DecomposeFill": ("RemoveRedundancy",),
    "DecomposeHyperbolicVariants": ("RemoveRedundancy",),
    "DecomposeLogVariants": ("RemoveRedundancy",),
    "DecomposeMaxPool3d": ("RemoveRedundancy",),
    "DecomposePad": ("RemoveRedundancy",),
    "DecomposeRemainder": ("RemoveRedundancy",),
    "DecomposeTan": ("RemoveRedundancy",),
    "DecomposeTrunc": ("RemoveRedundancy",),
    "ExpandBroadcastTensorShape": ("FoldQDQ",),
    "FixedLinearKeepDim": ("FoldQDQ",),
    "FoldQDQ": ("AnnotateQuantAttrs", "AnnotateStack", "AnnotateUnbind"),
    "I64toI32": ("LiftConstantScalarOperands", "RemoveRedundancy"),
    "InsertCastForFpActQuantizedWeight": ("FoldQDQ", "LayoutTransform"),
    "LayoutTransform": ("AnnotateQuantAttrs", "ExpandBroadcastTensorShape", "FixedLinearKeepDim"),
    "RecomposePadMaxPool2d": ("DecomposeMaxPool3d", "FoldQDQ"),
    "RecomposePixelUnshuffle": ("RemoveRedundancy",),
    "RecomposeRmsNorm": ("RemoveRedundancy",),
    "TagQuantIO": ("LayoutTransform",),
    "ResolveDebugHandle": ("TagQuantIO",),
}

RUNS_AFTER: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    "base": _BASE_RUNS_AFTER,
    "htp": {**_BASE_RUNS_AFTER, "DecomposeReciprocal": ("RemoveRedundancy",)},
    "gpu": {**_BASE_RUNS_AFTER, "DecomposeReciprocal": ("RemoveRedundancy",)},
    "lpai": {
        **_BASE_RUNS_AFTER,
        "DecomposeHardsigmoid": ("RemoveRedundancy",),
        "DecomposeReciprocal": ("RemoveRedundancy",),
        "LpaiPartitionFallbackSupport": ("TagQuantIO",),
        "ResolveDebugHandle": ("LpaiPartitionFallbackSupport",),
    },
}

MUST_BE_LAST: Mapping[str, tuple[str, ...]] = {
    "base": ("ResolveDebugHandle",),
    "htp": ("ResolveDebugHandle",),
    "gpu": ("ResolveDebugHandle",),
    "lpai": ("LpaiPartitionFallbackSupport", "ResolveDebugHandle"),
}

# Passes that rebuild the graph through ExportPass.call; a rebuild keeps only "val" in a
# get_attr node's meta, so AnnotateGetAttr has to run after all of them.
REBUILDS_GRAPH: tuple[str, ...] = ("I64toI32", "LayoutTransform")
REANNOTATES_GET_ATTR = "AnnotateGetAttr"

# ExecuTorch pass -> the implementation in this package that runs in its place.
SUBSTITUTES: Mapping[str, type] = {
    "AnnotateGetAttr": AnnotateGetAttr,
    "CanonicalizeConv": CanonicalizeConv,
    "ConvertLinearToConv2d": ConvertLinearToConv2d,
}


@dataclass(frozen=True)
class OwnPass:
    """A pass of this package that ExecuTorch's pipeline does not have, and where it runs.

    It joins every plan of ``variants`` (active, unless a user's job lists it as inactive),
    after the passes of ``runs_after`` and before those of ``runs_before`` (names in the
    tables above), so the tables that reproduce ExecuTorch's stay as they are.
    """

    cls: type
    runs_after: tuple[str, ...]
    runs_before: tuple[str, ...]
    variants: tuple[str, ...]
    why: str

    @property
    def name(self) -> str:
        return self.cls.__name__


OWN_PASSES: tuple[OwnPass, ...] = (
    OwnPass(
        ReshapeScalarSelect,
        (),
        ("Remove0DTensor",),
        VARIANTS,
        "Remove0DTensor replaces a 0-d select by the whole tensor selected from: wrong values "
        "for an n-element tensor (a prefill's cache_position[0]), and a [1] value where a 0-d "
        "buffer or a copy into one needs 0-d (static-cache decoders)",
    ),
    OwnPass(
        FlattenRmsNorm,
        ("RecomposeRmsNorm", "FoldQDQ"),
        ("LayoutTransform",),
        ("htp",),
        "QNN 2.51's HTP RmsNorm is wrong over the last dimension of a tensor with two or more "
        "leading dimensions larger than 1 (Qwen3's q/k norm); it is right on 2-D",
    ),
    OwnPass(
        BroadcastStaticOperands,
        ("RecomposeRmsNorm", "FoldQDQ"),
        ("LayoutTransform",),
        ("htp",),
        "QNN 2.51's HTP folds an elementwise op of static operands wrongly when one is "
        "broadcast (weight normalization's norm ** 0.5: 16 dB; (p * 2 - 1).sum(): no context "
        "binary); with every operand at the output's shape it is right",
    ),
)


def own_passes(variant: str) -> tuple[OwnPass, ...]:
    """The entries of ``OWN_PASSES`` that join the plans of ``variant``."""
    return tuple(p for p in OWN_PASSES if variant in p.variants)


# Where the table names above are ExecuTorch classes (qnn_passes.executorch_compat checks
# that each still is), and the other ExecuTorch passes a user's dep_table may name. These stay
# names, not imports: an ExecuTorch that no longer has one is drift, which that check reports.
EXECUTORCH_PASSES = "executorch.backends.qualcomm._passes"
ALSO_KNOWN: tuple[str, ...] = (
    "executorch.backends.transforms.decompose_sdpa:DecomposeScaledDotProductAttention",
)


# -- the solver (pure) ---------------------------------------------------------------------
def solve_order(passes: Sequence[K], runs_after: Mapping[K, Iterable[K]]) -> list[K]:
    """Order ``passes`` so each runs after those ``runs_after`` lists for it.

    Same result as torch.fx's PassManager.solve_constraints: Kahn's algorithm with a FIFO
    queue seeded and fed in list order. Entries naming passes outside ``passes`` are ignored.
    Raises :class:`PassOrderError` on a cycle, naming it.
    """
    members = set(passes)
    deps = {
        p: [q for q in dict.fromkeys(runs_after.get(p, ())) if q in members and q != p]
        for p in passes
    }
    users: dict[K, list[K]] = {p: [] for p in passes}
    indegree = {p: 0 for p in passes}
    for a in passes:
        for b in passes:
            if b in deps[a]:
                users[b].append(a)
                indegree[a] += 1
    queue = [p for p in passes if indegree[p] == 0]
    order: list[K] = []
    head = 0
    while head < len(queue):
        p = queue[head]
        head += 1
        order.append(p)
        for user in users[p]:
            indegree[user] -= 1
            if indegree[user] == 0:
                queue.append(user)
    if len(order) != len(passes):
        raise PassOrderError(f"dependency cycle: {_describe_cycle(passes, deps, set(order))}")
    return order


def _describe_cycle(passes: Sequence[K], deps: Mapping[K, list[K]], done: set[K]) -> str:
    left = [p for p in passes if p not in done]
    # Walk "runs after" edges inside the unsolved rest until a pass repeats: that is a cycle.
    path: list[K] = [left[0]]
    seen = {left[0]: 0}
    while True:
        nxt = next(q for q in deps[path[-1]] if q not in done)
        if nxt in seen:
            cycle = [*path[seen[nxt] :], nxt]
            return " -> ".join(_name(p) for p in cycle) + " (each must run after the next)"
        seen[nxt] = len(path)
        path.append(nxt)


def _name(p: object) -> str:
    return getattr(p, "__name__", None) or str(p)


# -- resolving names to classes ------------------------------------------------------------
def _import(path: str) -> Any:
    """The ExecuTorch class named ``"module:Class"`` (``ALSO_KNOWN``)."""
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


def executorch_pass(name: str) -> type:
    """ExecuTorch's QNN pass class called ``name``."""
    cls = getattr(importlib.import_module(EXECUTORCH_PASSES), name, None)
    if not isinstance(cls, type):
        raise QnnConfigError(
            f"qnn_passes: the pipeline tables name '{name}', which "
            f"{EXECUTORCH_PASSES} does not define in this ExecuTorch; qnn_passes is built "
            "against executorch 1.5.1."
        )
    return cls


def substitutes() -> dict[type, type]:
    """ExecuTorch class -> our class, for every entry of ``SUBSTITUTES``."""
    return {executorch_pass(name): ours for name, ours in SUBSTITUTES.items()}


def resolve(name: str) -> type:
    """The class that runs for table name ``name``: our substitute, else ExecuTorch's pass."""
    return SUBSTITUTES[name] if name in SUBSTITUTES else executorch_pass(name)


def known_pass_classes() -> set[type]:
    """Every ExecuTorch QNN pass class plus ours: what a table may name without adding it to the job."""
    module = importlib.import_module(EXECUTORCH_PASSES)
    known = {c for c in getattr(module, "__all__", ()) if isinstance(c, type)}
    known |= {c for c in vars(module).values() if isinstance(c, type)}
    known |= {_import(path) for path in ALSO_KNOWN}
    known |= set(substitutes().values())
    known |= {p.cls for p in OWN_PASSES}
    return known


def _is_pass_class(obj: object) -> bool:
    if not isinstance(obj, type):
        return False
    from executorch.exir.pass_base import ExportedProgramPassBase
    from torch.fx.passes.infra.pass_base import PassBase

    return issubclass(obj, (PassBase, ExportedProgramPassBase)) or callable(
        getattr(obj, "call", None)
    )


# -- defaults as ExecuTorch-style tables ---------------------------------------------------
def _check_variant(variant: str) -> None:
    if variant not in VARIANTS:
        raise QnnConfigError(
            f"qnn_passes: unknown backend variant '{variant}'; choose one of {list(VARIANTS)}."
        )


def default_passes_job(variant: str) -> OrderedDict[type, dict[str, Any]]:
    """ExecuTorch-style passes_job for ``variant``, keyed by the classes that will run (ours substituted)."""
    _check_variant(variant)
    job: OrderedDict[type, dict[str, Any]] = OrderedDict()
    for name, active in ACTIVATIONS[variant]:
        cls = resolve(name)
        job[cls] = {ACTIVATE_KEY: active, KWARGS_KEY: _init_defaults(cls)}
    return job


def default_dep_table(variant: str) -> dict[type, list[type]]:
    """ExecuTorch-style dependency table for ``variant`` (ours substituted)."""
    _check_variant(variant)
    return {resolve(k): [resolve(v) for v in vs] for k, vs in RUNS_AFTER[variant].items()}


def _init_defaults(cls: type) -> dict[str, Any]:
    params = inspect.signature(cls).parameters
    return {
        k: (None if v.default is inspect.Parameter.empty else v.default)
        for k, v in params.items()
        if k != "self" and v.kind not in (v.VAR_POSITIONAL, v.VAR_KEYWORD)
    }


# -- planning ----------------------------------------------------------------------------
@dataclass(frozen=True)
class PlannedPass:
    """One pass of a solved plan: the class that runs, whether it runs, what it replaces."""

    cls: type
    active: bool
    kwargs: Mapping[str, Any]
    replaces: type | None = None

    @property
    def name(self) -> str:
        return self.cls.__name__


@dataclass(frozen=True)
class Plan:
    """A solved pipeline for one method: every pass of the job in order, active or not."""

    method: str
    variant: str
    passes: tuple[PlannedPass, ...]

    @property
    def active(self) -> tuple[PlannedPass, ...]:
        return tuple(p for p in self.passes if p.active)


def _where(method: str) -> str:
    return f"method '{method}'"


def _copy_job(
    passes_job: Mapping[Any, Any], method: str, known: set[type]
) -> OrderedDict[type, dict[str, Any]]:
    job: OrderedDict[type, dict[str, Any]] = OrderedDict()
    known_names = sorted({c.__name__ for c in known})
    for key, entry in passes_job.items():
        if not _is_pass_class(key):
            label = key if isinstance(key, str) else getattr(key, "__name__", repr(key))
            close = difflib.get_close_matches(str(label), known_names, n=1)
            hint = f" Did you mean {close[0]}?" if close else ""
            raise QnnConfigError(
                f"qnn_passes: passes_job for {_where(method)} names an unknown pass "
                f"{key!r} ({type(key).__name__}); keys must be pass classes, as in "
                f"QnnPassManager.get_capture_program_passes().{hint}"
            )
        if not isinstance(entry, Mapping) or ACTIVATE_KEY not in entry:
            raise QnnConfigError(
                f"qnn_passes: passes_job[{key.__name__}] for {_where(method)} must be a dict "
                f"with '{ACTIVATE_KEY}' (bool) and '{KWARGS_KEY}' (dict of __init__ kwargs), "
                f"got {entry!r}."
            )
        kwargs = entry.get(KWARGS_KEY) or {}
        if not isinstance(kwargs, Mapping):
            raise QnnConfigError(
                f"qnn_passes: passes_job[{key.__name__}]['{KWARGS_KEY}'] for {_where(method)} "
                f"must be a dict, got {type(kwargs).__name__}."
            )
        job[key] = {ACTIVATE_KEY: bool(entry[ACTIVATE_KEY]), KWARGS_KEY: dict(kwargs)}
    return job


def _copy_dep_table(dep_table: Mapping[Any, Any], method: str) -> dict[type, list[type]]:
    table: dict[type, list[type]] = {}
    for key, values in dep_table.items():
        if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
            raise QnnConfigError(
                f"qnn_passes: dep_table[{_name(key)}] for {_where(method)} must be a list of "
                f"pass classes that run before it, got {values!r}."
            )
        table[key] = list(values)
    return table


def _splice(order: list[type], cls: type, entry: OwnPass, method: str) -> list[type]:
    """``order`` with ``cls`` just before the first of ``entry.runs_before`` (else after the
    last of ``entry.runs_after``), leaving every other pass where it was.

    Raises :class:`PassOrderError` if a pass it must run after comes later than that.
    """
    names = [c.__name__ for c in order]
    later = [names.index(n) for n in entry.runs_before if n in names]
    earlier = [names.index(n) for n in entry.runs_after if n in names]
    at = min(later) if later else (max(earlier) + 1 if earlier else 0)
    late = [names[i] for i in earlier if i >= at]
    if late:
        raise PassOrderError(
            f"qnn_passes: for {_where(method)} {entry.name} must run after {late} and before "
            f"{names[at]}, but the solved order runs {names[at]} first; change dep_table so "
            f"that {late} run before {names[at]}."
        )
    return [*order[:at], cls, *order[at:]]


def plan(
    variant: str,
    passes_job: Mapping[Any, Any] | None = None,
    dep_table: Mapping[Any, Any] | None = None,
    *,
    convert_linear_to_conv2d: bool = False,
    method: str = "forward",
) -> Plan:
    """Solve the pipeline for one method; ``passes_job``/``dep_table`` may use ExecuTorch's classes."""
    _check_variant(variant)
    swap = substitutes()
    replaced_by = {ours: theirs for theirs, ours in swap.items()}
    known = known_pass_classes()

    raw_job = (
        default_passes_job(variant) if passes_job is None else _copy_job(passes_job, method, known)
    )
    job: OrderedDict[type, dict[str, Any]] = OrderedDict()
    for cls, entry in raw_job.items():
        target = swap.get(cls, cls)
        if target in job:
            raise QnnConfigError(
                f"qnn_passes: passes_job for {_where(method)} lists both "
                f"{replaced_by[target].__module__}.{target.__name__} and its replacement "
                f"{target.__module__}.{target.__name__}; keep one of them."
            )
        job[target] = entry
    linear_to_conv = swap.get(executorch_pass("ConvertLinearToConv2d"))
    if convert_linear_to_conv2d and linear_to_conv is not None and linear_to_conv in job:
        job[linear_to_conv][ACTIVATE_KEY] = True

    raw_deps = (
        default_dep_table(variant) if dep_table is None else _copy_dep_table(dep_table, method)
    )
    deps: dict[type, list[type]] = {}
    for key, values in raw_deps.items():
        for p in (key, *values):
            if p not in job and p not in known:
                raise PassOrderError(
                    f"qnn_passes: dep_table for {_where(method)} names {_name(p)!s}, which is "
                    "neither in passes_job nor an ExecuTorch QNN pass; add it to passes_job "
                    "or remove it from dep_table."
                )
        deps.setdefault(swap.get(key, key), []).extend(swap.get(v, v) for v in values)

    try:
        order = solve_order(list(job), deps)
    except PassOrderError as err:
        raise PassOrderError(
            f"qnn_passes: dep_table for {_where(method)} has a {err}; remove one of these entries."
        ) from None

    for own in own_passes(variant):
        cls = own.cls
        if cls not in job:
            order = _splice(order, cls, own, method)
            job[cls] = {ACTIVATE_KEY: True, KWARGS_KEY: _init_defaults(cls)}

    solved = Plan(
        method=method,
        variant=variant,
        passes=tuple(
            PlannedPass(
                cls=cls,
                active=job[cls][ACTIVATE_KEY],
                kwargs=job[cls][KWARGS_KEY],
                replaces=replaced_by.get(cls),
            )
            for cls in order
        ),
    )
    check_invariants(solved)
    return solved


def check_invariants(solved: Plan) -> None:
    """Must-be-last passes last; AnnotateGetAttr after every graph rebuild. Raises PassOrderError."""
    names = [p.name for p in solved.active]
    last = [n for n in MUST_BE_LAST[solved.variant] if n in names]
    if last and names[-len(last) :] != last:
        raise PassOrderError(
            f"qnn_passes: for {_where(solved.method)} the {solved.variant} pipeline must end "
            f"with {last}, but the solved order ends with {names[-len(last) :]}; make "
            f"{last[-1]} depend on the passes that now run after it in dep_table."
        )
    if REANNOTATES_GET_ATTR in names:
        at = names.index(REANNOTATES_GET_ATTR)
        late = [n for n in names[at + 1 :] if n in REBUILDS_GRAPH]
        if late:
            raise PassOrderError(
                f"qnn_passes: for {_where(solved.method)} {late} rebuild the graph after "
                f"{REANNOTATES_GET_ATTR}, which drops the quantization attributes it writes on "
                f"get_attr nodes; add them to dep_table[{REANNOTATES_GET_ATTR}]."
            )


def instantiate(
    solved: Plan,
    *,
    program: ExportedProgram,
    compiler_specs: list[CompileSpec],
    skip_node_id_set: set[str] | None = None,
    skip_node_op_set: set[str] | None = None,
) -> list[QnnPass]:
    """Build the active passes, filling the kwargs ExecuTorch's manager fills (on copies)."""
    available = {
        "edge_program": program,
        "compiler_specs": compiler_specs,
        "skip_node_id_set": skip_node_id_set,
        "skip_node_op_set": skip_node_op_set,
    }
    built = []
    for p in solved.active:
        kwargs = dict(p.kwargs)
        for key, value in available.items():
            if key in kwargs:
                kwargs[key] = value
        if p.replaces is not None:
            # Our passes read the program they run on, so ExecuTorch's edge_program kwarg
            # has no use here; anything else it does not take is a mistake to report.
            accepted = set(_init_defaults(p.cls))
            kwargs.pop("edge_program", None)
            extra = sorted(set(kwargs) - accepted)
            if extra:
                raise QnnConfigError(
                    f"qnn_passes: passes_job[{p.replaces.__name__}] for "
                    f"{_where(solved.method)} passes {extra} to {p.cls.__module__}."
                    f"{p.name}, which accepts {sorted(accepted) or 'no arguments'}."
                )
        built.append(p.cls(**kwargs))
    return built
