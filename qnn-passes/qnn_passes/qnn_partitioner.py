"""QnnEdgePartitioner: ExecuTorch's QnnPartitioner, keeping whole the ATen ops the migrated export-stage passes rewrite, and never handing QNN what it cannot build.

``to_edge_transform_and_lower`` asks every partitioner which ops to keep out of its ATen
decomposition (``ops_to_not_decompose``). QNN's answer is ``get_skip_decomp_table()`` with
its filter; this subclass adds :func:`qnn_passes.export_stage.keep_whole` (``aten.roll``,
``aten.linalg_vector_norm``), which to-edge would otherwise decompose into ops QNN cannot run,
so that DecomposeRoll and DecomposeLinalgVectorNorm see them on the edge program.

Partitioning is QnnPartitioner's, with two differences, each where QnnPartitioner would
otherwise fail the whole lowering (nothing in ExecuTorch is patched):

* **An op whose builder fails is declined.** QnnPartitioner asks each op's builder to build
  it (``is_node_supported``); a builder that raises (the ``arange`` builder with a symbolic
  end, under a dynamic sequence length: ``TypeError``) ends the lowering with a traceback from
  inside the partitioner. :class:`DeclineOnError` turns that into "not supported": the op stays
  on the CPU and the reason is logged (logger ``qnn_passes.qnn_partitioner``, level INFO).
* **An op is kept whole only if QNN can build it.** QNN asks to-edge to keep ``rms_norm``,
  ``instance_norm`` and ``prelu`` whole, but their builders take the weight (and bias) only as
  a constant; with a computed one (``F.rms_norm(x, (d,), w * s)``) QNN declines the op and the
  lowering stops with "... was not decomposed or delegated" (found by the semantics probes,
  tests/passes/arithmetic.py). Such an op is decomposed instead, into ops QNN builds.
* **A partition with no graph inputs is left to the CPU.** QNN cannot build a graph whose
  every input is a constant (an ``arange`` -> ``erf`` chain: "No graph inputs present", then
  "Failed to generate Qnn context binary"). :func:`graph_inputs` finds what a partition reads
  from outside; :func:`keep_fed_partitions` drops the partitions that read nothing but
  constants, and logs each one.

And one where QnnPartitioner lowers a program that then computes wrong values or cannot run:

* **A mutable buffer is handed to a QNN delegate only when that is safe**
  (:func:`untag_mutable_buffers`). A delegate that holds a buffer keeps it in memory QNN's
  runtime allocates and never initialises (the program's initial value is not used: a
  ``torch.full(..., 1.0)`` buffer reads back as zeros, a static KV cache's unwritten rows as
  whatever the memory held, up to 1.3e5 measured, which fp16 attention turns into NaN). So a
  buffer whose initial contents the program reads (a KV cache: ``index_copy_`` keeps the rows
  it does not write) stays a program input, as ``skip_mutable_buffer=True`` would keep it.
  So does a buffer the program writes but never reads (``buf.copy_(y)``: QnnPartitioner
  gives its placeholder to the last delegate as an unused constant, and the delegate then
  writes a buffer it holds no memory for: "clientBuf is null", QNN error 6004), and a buffer
  whose new value is written outside the delegate that reads it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from executorch.backends.qualcomm.partition.qnn_partitioner import (
    QnnOperatorSupport,
    QnnPartitioner,
)
from executorch.exir.backend.canonical_partitioners.pattern_op_partitioner import (
    generate_partitions_from_list_of_nodes,
)
from executorch.exir.backend.partitioner import PartitionResult
from torch.fx.passes.operator_support import OperatorSupportBase

from qnn_passes.export_stage import keep_whole

if TYPE_CHECKING:
    import torch
    from torch.export import ExportedProgram
    from torch.fx.passes.infra.partitioner import Partition

logger = logging.getLogger(__name__)


class DeclineOnError(OperatorSupportBase):
    """``inner``'s answer for each node, with an exception from ``inner`` read as "not supported".

    ``declined`` maps each declined node's name to the reason, for the caller to inspect;
    ``on_error`` (if given) runs after each declined node, e.g. to drop state ``inner`` left.
    """

    def __init__(
        self, inner: OperatorSupportBase, on_error: Callable[[], None] | None = None
    ) -> None:
        self.inner = inner
        self.on_error = on_error
        self.declined: dict[str, str] = {}

    def is_node_supported(
        self, submodules: Mapping[str, torch.nn.Module], node: torch.fx.Node
    ) -> bool:
        try:
            return bool(self.inner.is_node_supported(submodules, node))
        except Exception as err:  # any builder failure means QNN cannot take this op
            reason = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
            self.declined[node.name] = reason
            logger.info(
                "qnn_passes: QNN declines node '%s' (%s): its QNN op builder failed (%s); the "
                "op runs outside the QNN delegate.",
                node.name,
                getattr(node.target, "__name__", node.target),
                reason,
            )
            if self.on_error is not None:
                self.on_error()
            return False


def graph_inputs(nodes: Iterable[torch.fx.Node], program: ExportedProgram) -> list[torch.fx.Node]:
    """The nodes outside ``nodes`` that they read and that are not constants of ``program``.

    A constant is a placeholder of a parameter, a buffer no node mutates, or a lifted tensor
    constant; everything else a partition reads (a user input, a mutated buffer, another node's
    output) is a graph input of the QNN graph built from it.
    """
    signature = program.graph_signature
    mutated = set(signature.buffers_to_mutate.values())
    constants = {
        name
        for name, target in {
            **signature.inputs_to_parameters,
            **signature.inputs_to_buffers,
            **signature.inputs_to_lifted_tensor_constants,
        }.items()
        if target not in mutated
    }
    inside = set(nodes)
    found: dict[torch.fx.Node, None] = {}
    for node in inside:
        for arg in node.all_input_nodes:
            if arg in inside:
                continue
            if arg.op == "placeholder" and arg.name in constants:
                continue
            found[arg] = None
    return list(found)


def keep_fed_partitions(
    partitions: Sequence[Partition], program: ExportedProgram
) -> tuple[list[Partition], list[Partition]]:
    """``(kept, dropped)``: the partitions with at least one graph input, and those with none."""
    kept: list[Partition] = []
    dropped: list[Partition] = []
    for partition in partitions:
        (kept if graph_inputs(partition.nodes, program) else dropped).append(partition)
    for partition in dropped:
        names = sorted(n.name for n in partition.nodes)
        logger.info(
            "qnn_passes: QNN partition %s (%s) reads only constants; QNN cannot build a graph "
            "without inputs, so these ops run outside the QNN delegate.",
            partition.id,
            ", ".join(names),
        )
    return kept, dropped


def untag_split_buffers(program: ExportedProgram) -> list[str]:
    """Keep outside the delegates each mutated buffer whose new value is written outside its delegate.

    ``tag_mutated_buffer`` hands a mutated buffer to the delegate of its readers; when the op
    that writes its new value is not in that delegate (a static-cache position buffer: QNN
    reads it through a cast, the CPU copies the new position in), the buffer disappears from
    the program's inputs while the program still writes it, and ExecuTorch's signature check
    after ``to_backend`` fails ("Buffer output ... does not point to a buffer that exists").
    Such a buffer stays a program input (the delegate reads it as an input). Returns the names
    of the buffers untagged.
    """
    signature = program.graph_signature
    placeholders = {n.name: n for n in program.graph.nodes if n.op == "placeholder"}
    by_buffer = {target: name for name, target in signature.inputs_to_buffers.items()}
    values = program.graph.output_node().args[0]
    untagged = []
    for value, spec in zip(values, signature.output_specs, strict=False):
        name = getattr(spec.arg, "name", None)
        buffer = signature.buffers_to_mutate.get(name) if name is not None else None
        owner = placeholders.get(by_buffer.get(buffer, "")) if buffer is not None else None
        if owner is None or "delegation_tag" not in owner.meta:
            continue
        writer_tag = value.meta.get("delegation_tag") if hasattr(value, "meta") else None
        if writer_tag != owner.meta["delegation_tag"]:
            del owner.meta["delegation_tag"]
            untagged.append(str(buffer))
            logger.info(
                "qnn_passes: buffer '%s' is written outside the QNN delegate that reads it; it "
                "stays a program input.",
                buffer,
            )
    return untagged


# Ops that read only the shape and dtype of their first argument (a copy's destination).
_SHAPE_ONLY_FIRST_ARG = frozenset(
    {
        "aten::copy",
        "aten::copy_",
        "aten::empty_like",
        "aten::zeros_like",
        "aten::ones_like",
        "aten::full_like",
        "aten::sym_size",
    }
)
# Ops whose result is their input's values (cast, reshaped): a read through them is a read of
# the input only if the result is read.
_PASS_THROUGH = frozenset(
    {"aten::_to_copy", "dim_order_ops::_to_dim_order_copy", "aten::view_copy", "aten::clone"}
)


def _schema_name(node: torch.fx.Node) -> str:
    schema = getattr(node.target, "_schema", None)
    return str(schema.name) if schema is not None else str(node.target)


def reads_initial_contents(placeholder: torch.fx.Node) -> bool:
    """Whether the program reads the values ``placeholder`` (a buffer) holds when it starts.

    A use as a copy's destination (``copy(buf, src)``: its result is ``src``), or through a
    cast or view whose result is used only that way, reads the shape alone; every other use
    reads the values (conservatively, for any op not listed here).
    """
    pending = [placeholder]
    while pending:
        node = pending.pop()
        for user in node.users:
            if user.op != "call_function":
                return True  # a program output: the initial value leaves the program
            name = _schema_name(user)
            if name in _SHAPE_ONLY_FIRST_ARG and user.args and user.args[0] is node:
                if node not in user.args[1:] and node not in user.kwargs.values():
                    continue
            elif name in _PASS_THROUGH and user.args and user.args[0] is node:
                pending.append(user)
                continue
            return True
    return False


def untag_mutable_buffers(program: ExportedProgram) -> dict[str, str]:
    """Keep outside the QNN delegates each mutated buffer a delegate cannot hold right.

    Returns ``{buffer: why}`` for the buffers untagged (they stay program inputs, read and
    written through the delegate's ordinary inputs and outputs, as with
    ``skip_mutable_buffer=True``): a buffer whose initial contents the program reads (QNN's
    runtime holds a delegated buffer in memory it never initialises), and one the program
    writes but never reads (QnnPartitioner gives it to a delegate as an unused constant).
    """
    signature = program.graph_signature
    mutated = set(signature.buffers_to_mutate.values())
    untagged: dict[str, str] = {}
    for node in program.graph.nodes:
        buffer = signature.inputs_to_buffers.get(node.name) if node.op == "placeholder" else None
        if buffer not in mutated or "delegation_tag" not in node.meta:
            continue
        if not node.users:
            why = "the program writes it but never reads it"
        elif reads_initial_contents(node):
            why = (
                "the program reads its initial contents, and QNN's runtime holds a delegated "
                "buffer in memory it never initialises"
            )
        else:
            continue
        del node.meta["delegation_tag"]
        untagged[str(buffer)] = why
        logger.info(
            "qnn_passes: mutable buffer '%s' stays a program input, outside the QNN delegate: %s.",
            buffer,
            why,
        )
    return untagged


def _constant_arguments() -> dict[Any, tuple[int, ...]]:
    """ATen ops QNN asks to-edge to keep whole whose builder takes these arguments only as
    constants (``get_parameter``): given a computed one, it raises and QNN declines the op."""
    import torch

    aten = torch.ops.aten
    return {
        aten.rms_norm.default: (2,),  # weight
        aten.instance_norm.default: (1, 2),  # weight, bias
        aten.prelu.default: (1,),  # weight
    }


def _constants_where_needed(
    node: torch.fx.Node, program: ExportedProgram, needs: dict[Any, tuple[int, ...]]
) -> bool:
    """False if ``node`` is kept whole only for a builder that will refuse one of its arguments:
    kept whole and then declined, the op would stop the lowering ("... was not decomposed or
    delegated"); decomposed, it lowers as the ops it is made of."""
    for index in needs.get(node.target, ()):
        arg = node.args[index] if len(node.args) > index else None
        if arg is not None and not _static_weight(program, arg):
            return False
    return True


def _static_weight(program: ExportedProgram, arg: object) -> bool:
    """Whether ``arg`` is a constant as QNN's builders read one: a constant, or a constant
    through quantize/dequantize ops (a quantized model's weight: QNN takes it as a static
    tensor with its encoding, and FoldQDQ folds the ops away)."""
    import torch

    from qnn_passes.constant_inputs import is_constant
    from qnn_passes.quant_ops import is_qdq

    while isinstance(arg, torch.fx.Node) and arg.op == "call_function":
        if not is_qdq(arg.target) or not arg.args:
            break
        arg = arg.args[0]
    return is_constant(program, arg)


class QnnEdgePartitioner(QnnPartitioner):
    """QnnPartitioner that keeps the migrated passes' ops whole, declines ops whose builder fails,
    leaves partitions without graph inputs to the CPU and hands QNN only the mutable buffers it
    can hold right."""

    declined: dict[str, str]
    dropped: list[Partition]
    untagged_buffers: dict[str, str]

    def ops_to_not_decompose(
        self, ep: ExportedProgram
    ) -> tuple[list[torch._ops.OpOverload], Callable[[torch.fx.Node], bool] | None]:
        ops, qnn_filter = super().ops_to_not_decompose(ep)
        ours = [op for op in keep_whole() if op not in ops]
        needs_constants = _constant_arguments()

        def keep(node: torch.fx.Node) -> bool:
            if node.target in ours:
                return True
            if not _constants_where_needed(node, ep, needs_constants):
                return False
            return qnn_filter(node) if qnn_filter is not None else True

        return [*ops, *ours], keep

    def generate_partitions(self, edge_program: ExportedProgram) -> list[Any]:
        # As QnnPartitioner.generate_partitions, with the checker wrapped and the result filtered.
        self.op_support_checker = QnnOperatorSupport(
            edge_program,
            self.compiler_specs_snapshot,
            self.skip_node_id_set,
            self.skip_node_op_set,
        )
        checker = DeclineOnError(
            self.op_support_checker, on_error=self.op_support_checker.nodes_to_wrappers.clear
        )
        partitions = generate_partitions_from_list_of_nodes(
            edge_program.graph_module, op_support=checker
        )
        self.declined = checker.declined
        kept, self.dropped = keep_fed_partitions(partitions, edge_program)
        return kept

    def partition(self, edge_program: ExportedProgram) -> PartitionResult:
        result = super().partition(edge_program)
        self.untagged_buffers = untag_mutable_buffers(edge_program)
        for buffer in untag_split_buffers(edge_program):
            self.untagged_buffers[buffer] = "its new value is written outside the delegate"
        return result

    def tag_nodes(self, partitions: list[Partition], edge_program: ExportedProgram) -> None:
        # QnnPartitioner.tag_nodes reads the last partition's tag to give it the unused
        # constants; with no partition left it would raise UnboundLocalError.
        if partitions:
            super().tag_nodes(partitions, edge_program)
