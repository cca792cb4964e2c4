"""One lowering on real QNN (run in a fresh child): subject -> .pte -> HTP simulator outputs.

:func:`lower` is what :class:`qnn_htp.fresh.FreshRunner` runs: it builds the subject by name,
lowers it through the named flow for SM8650 HTP, serializes the ``.pte``, runs every method
through ExecuTorch's portable runtime (whose QnnBackend runs the delegates on the HTP
simulator) and returns a :class:`Lowered`: plain data, picklable.
"""

from __future__ import annotations

import importlib
import resource
import time
from dataclasses import dataclass, field
from typing import Any

CALL_DELEGATE = "executorch_call_delegate"


@dataclass(frozen=True)
class LoweringSpec:
    """What to lower: ``build`` ("module:function") called with ``args``, then ``flow``."""

    build: str
    args: tuple[Any, ...]
    flow: str
    soc: str = "SM8650"
    kwargs: tuple[tuple[str, Any], ...] = ()  # overrides of the subject's lowering options

    @property
    def label(self) -> str:
        return f"{self.build.rsplit(':', 1)[-1]}{self.args}/{self.flow}"


@dataclass
class Lowered:
    """The result of one lowering, as plain data."""

    label: str
    pte: bytes
    payloads: list[bytes]  # delegate payloads (QNN context binaries with ExecuTorch's header)
    backends: list[str]  # backend id of each delegate
    delegates: dict[str, int]  # method -> number of delegate calls
    outside: dict[str, list[str]]  # method -> ops left outside the delegates, in graph order
    outputs: dict[str, list[Any]]  # method -> simulator outputs (numpy), of every call in order
    reference: dict[str, list[Any]]  # method -> eager / fake-quant outputs (numpy), alike
    seconds: float  # model -> .pte, QNN compile included (subject building excluded)
    max_rss_kb: int  # peak RSS of the child process
    bridged: bool  # whether the ABI bridge was in place
    extra: dict[str, Any] = field(default_factory=dict)


def _build(spec: LoweringSpec) -> Any:
    module, _, function = spec.build.partition(":")
    return getattr(importlib.import_module(module), function)(*spec.args)


def compiler_specs(quantized: bool, soc: str = "SM8650") -> list[Any]:
    from executorch.backends.qualcomm.serialization.qc_schema import QcomChipset
    from executorch.backends.qualcomm.utils.utils import (
        generate_htp_compiler_spec,
        generate_qnn_executorch_compiler_spec,
    )

    return generate_qnn_executorch_compiler_spec(
        soc_model=getattr(QcomChipset, soc),
        backend_options=generate_htp_compiler_spec(use_fp16=not quantized),
    )


def describe(edge: Any) -> tuple[dict[str, int], dict[str, list[str]]]:
    """Delegate calls and the ops outside them, per method of an EdgeProgramManager."""
    delegates: dict[str, int] = {}
    outside: dict[str, list[str]] = {}
    for method in edge.methods:
        graph = edge.exported_program(method).graph_module.graph
        calls = [n for n in graph.nodes if n.op == "call_function"]
        delegates[method] = sum(1 for n in calls if CALL_DELEGATE in str(n.target))
        outside[method] = [
            str(n.target)
            for n in calls
            if CALL_DELEGATE not in str(n.target) and "getitem" not in str(n.target)
        ]
    return delegates, outside


def output_steps(subject: Any) -> dict[str, list[float | None]]:
    """Per method, the quantization step (scale) of each output of a PT2E-converted model: the
    scale of the per-tensor dequantize that produces it (None where there is none), for the
    outputs of every call in order (as ``Lowered.outputs``)."""
    steps: dict[str, list[float | None]] = {}
    for method, (module, _) in subject.methods().items():
        graph = getattr(module, "graph", None)
        if graph is None:
            continue
        output = next(n for n in reversed(graph.nodes) if n.op == "output")
        values = output.args[0] if isinstance(output.args[0], tuple | list) else (output.args[0],)
        steps[method] = [
            float(v.args[1])
            if getattr(v, "op", None) == "call_function"
            and "dequantize_per_tensor" in str(v.target)
            and isinstance(v.args[1], float)
            else None
            for v in values
        ] * len(subject.calls(method))  # the outputs of every call, one after another
    return steps


def lower(spec: LoweringSpec) -> Lowered:
    """Build, lower, serialize and run ``spec`` in this process (meant for a fresh child)."""
    import torch
    from executorch.extension.pybindings.portable_lib import _load_for_executorch_from_buffer
    from qnn_migrate_tests.qnn_htp import server
    from qnn_migrate_tests.qnn_htp.flows import FLOWS

    subject = _build(spec)
    reference = subject.reference()
    options: dict[str, Any] = {
        "dynamic_shapes": subject.dynamic_shapes,
        "convert_linear_to_conv2d": subject.convert_linear_to_conv2d,
        **subject.lowering_kwargs,
        **dict(spec.kwargs),
    }
    specs = compiler_specs(subject.quantized, spec.soc)
    start = time.perf_counter()
    edge = FLOWS[spec.flow](subject.model, subject.inputs, specs, **options)
    delegates, outside = describe(edge)  # before to_executorch, which rewrites the graphs
    executorch_program = edge.to_executorch()
    pte = bytes(executorch_program.buffer)
    seconds = time.perf_counter() - start
    program = executorch_program.executorch_program
    payloads = [bytes(d.data) for d in program.backend_delegate_data]
    backends = [d.id for plan in program.execution_plan for d in plan.delegates]

    module = _load_for_executorch_from_buffer(pte)
    outputs = {}
    for method in subject.methods():
        outputs[method] = []
        for inputs in subject.calls(method):  # one loaded program: mutable state carries over
            result = module.run_method(method, tuple(inputs))
            outputs[method] += [torch.as_tensor(t).clone().numpy() for t in result]
    del module
    return Lowered(
        label=spec.label,
        pte=pte,
        payloads=payloads,
        backends=backends,
        delegates=delegates,
        outside=outside,
        outputs=outputs,
        reference=reference,
        seconds=seconds,
        max_rss_kb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        bridged=bool(server.STATE and server.STATE.bridged),
        extra={"output_steps": output_steps(subject) if subject.quantized else {}},
    )
