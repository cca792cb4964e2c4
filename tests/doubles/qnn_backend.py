"""RecordingQnnBackend: a test double for the parts of ExecuTorch's QNN flow that need the QNN SDK.

There is no QNN SDK on CI machines. Everything in ExecuTorch's QNN flow runs on a CPU except
three things, and while a ``RecordingQnnBackend`` is active exactly those three are replaced
(nothing else is touched, nothing global stays changed after the ``with`` block):

1. ``QnnPartitioner.partition`` (its op-support checks start a QNN backend). The double records
   a :class:`Handoff` - the program ExecuTorch hands to the partitioner, the partitioner's
   compile specs and skip options - and returns the program untagged, so nothing is delegated.
2. ``QnnManagerContext`` (it starts one QNN backend per backend type), both where
   ``qnn_manager_lifecycle`` defines it and where the deprecated wrapper's module
   (``executorch.backends.qualcomm.utils.utils``) imported it. The double records the
   ``{method: compile specs}`` it is entered with and starts nothing.
3. The QNN backend behind ``QnnOperatorSupport`` (``get_current_qnn_manager`` as the
   partitioner module bound it). Once ``partition`` is replaced, only the LPAI pass
   ``LpaiPartitionFallbackSupport`` still asks it; the double answers ``supported`` for every
   op and counts the questions in ``support_queries``.

The same double serves the deprecated ``to_edge_transform_and_lower_to_qnn`` call and the
migrated code (``qnn_passes``), so a test can run both and compare what reached the partitioner::

    with RecordingQnnBackend() as qnn:
        to_edge_transform_and_lower_to_qnn(model, inputs, specs)
    program = qnn.handoffs[0].program          # ExportedProgram with real constant values
    qnn.contexts                               # [{"forward": specs}]

Handoffs are in the order ExecuTorch calls ``partition``: the order of the partitioner dict,
which both the wrapper and ``qnn_partitioners`` build in the order of the methods.
``programs()`` returns them as ``{method: ExportedProgram}`` when you name the methods.

Ending early: because nothing is delegated, ExecuTorch's final check in
``to_edge_transform_and_lower`` - every op ``QnnPartitioner.ops_to_not_decompose`` kept whole
(``aten.linear``, ``aten.hardswish``, ...) must have been delegated - fails with a
``RuntimeError("... was not decomposed or delegated ...")`` for models that contain such ops.
That check runs after every partition call, so all handoffs are recorded by then. With
``tolerate_undelegated=True`` (the default) the double swallows exactly that error when at
least one handoff was recorded, ends the ``with`` block there and keeps the error in
``stopped_by``; code after the lowering call inside the block does not run. Any other
error propagates.

Not thread-safe: it patches class and module attributes for the duration of the block.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any
from unittest import mock

UNDELEGATED_MARKER = "was not decomposed or delegated"


@dataclass
class Handoff:
    """One call of ``QnnPartitioner.partition``: what ExecuTorch handed to the QNN partitioner."""

    graph_module: Any  # torch.fx.GraphModule, deep-copied when partition() was called
    graph_signature: Any  # ExportGraphSignature, deep-copied
    # The dict object of the handed program's state dict. ExecuTorch hands partition() a
    # copy whose state dict holds FakeTensors and swaps in the real tensors right after
    # partition() returns (update_to_real_program), in this same dict; so the values are
    # read when ``program`` is built, not when partition() was called.
    state_dict_ref: dict[str, Any]
    constants: dict[str, Any]
    range_constraints: Any
    module_call_graph: Any
    verifiers: Any
    compile_specs: list[Any]
    skip_node_id_set: set[str]
    skip_node_op_set: set[str]
    skip_mutable_buffer: bool
    _program: Any = field(default=None, repr=False)

    @property
    def program(self) -> Any:
        """The handed program as an ExportedProgram with real (not fake) constant values."""
        if self._program is None:
            from torch._subclasses.fake_tensor import FakeTensor
            from torch.export import ExportedProgram

            state_dict = dict(self.state_dict_ref)
            fake = [k for k, v in state_dict.items() if isinstance(v, FakeTensor)]
            if fake:
                raise RuntimeError(
                    f"RecordingQnnBackend: the state dict entries {fake} are still fake; read "
                    "Handoff.program after partition() has returned (ExecuTorch fills in the "
                    "real tensors then)."
                )
            gm = copy.deepcopy(self.graph_module)
            self._program = ExportedProgram(
                root=gm,
                graph=gm.graph,
                graph_signature=copy.deepcopy(self.graph_signature),
                state_dict=state_dict,
                range_constraints=copy.deepcopy(self.range_constraints),
                module_call_graph=copy.deepcopy(self.module_call_graph),
                constants=dict(self.constants),
                verifiers=self.verifiers,
            )
        return self._program


class _AnsweringQnnManager:
    """Stands in for a PyQnnManager.QnnManager: answers op-support questions, starts nothing."""

    def __init__(self, owner: RecordingQnnBackend) -> None:
        self._owner = owner

    def IsNodeSupportedByBackend(self, op_wrappers: Sequence[Any]) -> bool:
        self._owner.support_queries += 1
        return self._owner.supported


class RecordingQnnBackend(contextlib.AbstractContextManager["RecordingQnnBackend"]):
    """Context manager replacing QnnPartitioner.partition, QnnManagerContext and the op-support backend.

    Args:
        tolerate_undelegated: end the block quietly on ExecuTorch's "not decomposed or
            delegated" check (see the module docstring); False lets that error propagate.
        supported: the answer given to every op-support question (LPAI fallback pass).
    """

    def __init__(self, *, tolerate_undelegated: bool = True, supported: bool = True) -> None:
        self.tolerate_undelegated = tolerate_undelegated
        self.supported = supported
        self.handoffs: list[Handoff] = []
        self.contexts: list[dict[str, list[Any]]] = []
        self.support_queries = 0
        self.stopped_by: BaseException | None = None
        self._stack: contextlib.ExitStack | None = None

    # -- what the double puts in place -------------------------------------------------
    def _partition(self, partitioner: Any, exported_program: Any) -> Any:
        from executorch.exir.backend.partitioner import PartitionResult

        self.handoffs.append(
            Handoff(
                graph_module=copy.deepcopy(exported_program.graph_module),
                graph_signature=copy.deepcopy(exported_program.graph_signature),
                state_dict_ref=exported_program.state_dict,
                constants=dict(exported_program.constants),
                range_constraints=exported_program.range_constraints,
                module_call_graph=exported_program.module_call_graph,
                verifiers=exported_program.verifiers,
                compile_specs=list(partitioner.compiler_specs_snapshot),
                skip_node_id_set=set(partitioner.skip_node_id_set),
                skip_node_op_set=set(partitioner.skip_node_op_set),
                skip_mutable_buffer=bool(partitioner.skip_mutable_buffer),
            )
        )
        return PartitionResult(tagged_exported_program=exported_program, partition_tags={})

    @contextlib.contextmanager
    def _manager_context(self, compile_specs: dict[str, list[Any]]) -> Iterator[None]:
        self.contexts.append({name: list(specs) for name, specs in compile_specs.items()})
        yield

    # -- context manager ---------------------------------------------------------------
    def __enter__(self) -> RecordingQnnBackend:
        if self._stack is not None:
            raise RuntimeError("RecordingQnnBackend is already active; use one block at a time.")
        from executorch.backends.qualcomm.partition import qnn_partitioner
        from executorch.backends.qualcomm.utils import qnn_manager_lifecycle
        from executorch.backends.qualcomm.utils import utils as qnn_utils

        double = self

        def partition(partitioner: Any, exported_program: Any) -> Any:
            return double._partition(partitioner, exported_program)

        stack = contextlib.ExitStack()
        stack.enter_context(
            mock.patch.object(qnn_partitioner.QnnPartitioner, "partition", partition)
        )
        for module in (qnn_manager_lifecycle, qnn_utils):
            stack.enter_context(
                mock.patch.object(module, "QnnManagerContext", self._manager_context)
            )
        stack.enter_context(
            mock.patch.object(
                qnn_partitioner,
                "get_current_qnn_manager",
                lambda backend_type, compile_specs: _AnsweringQnnManager(double),
            )
        )
        self._stack = stack
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        stack, self._stack = self._stack, None
        if stack is not None:
            stack.close()
        if (
            self.tolerate_undelegated
            and isinstance(exc, RuntimeError)
            and UNDELEGATED_MARKER in str(exc)
            and self.handoffs
        ):
            self.stopped_by = exc
            return True
        return False

    # -- reading the record ------------------------------------------------------------
    def programs(self, methods: Sequence[str]) -> dict[str, Any]:
        """``{method: handed program}``, pairing ``methods`` with the handoffs in call order."""
        if len(methods) != len(self.handoffs):
            raise AssertionError(
                f"RecordingQnnBackend: {len(self.handoffs)} partition call(s) recorded but "
                f"{len(methods)} method(s) named ({list(methods)})."
            )
        return {name: h.program for name, h in zip(methods, self.handoffs, strict=True)}
