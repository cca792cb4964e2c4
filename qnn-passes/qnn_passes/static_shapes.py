"""Refuse a program with dynamic input sizes: QNN's HTP builds static shapes, and lowering one anyway gives an error deep inside ExecuTorch or a program QNN takes no part in.

Measured with QNN 2.51 (SM8650) through ExecuTorch 1.5.1, a sequence length from
``torch.export.Dim``:

* ``nn.Linear`` or ``nn.RMSNorm`` on ``[1, S, 16]``: QNN's validation refuses every op
  ("Tensor can only have static dimensions"; a Reshape: "Dynamically shaped output requires
  presence of in[1]", error 3110), while QNN's partitioner has asked to-edge to keep
  ``aten.linear`` / ``aten.rms_norm`` whole for it, so the lowering stops with "... was not
  decomposed or delegated" (a real decoder stops the same way);
* ``arange(S).unsqueeze(-1)``: ExecuTorch's ExpandBroadcastTensorShape fails on the symbol;
* a dynamic batch into a conv, or ``x * arange(S)``: lowers, with no QNN delegate at all.

So :func:`check_static` stops ``qnn_transform_passes`` before any work, with a
:class:`QnnConfigError` naming the method, the input, the dimension and its range, and what to
do instead: export with static sizes, one method per size the application needs (bucketed
static shapes, padding the input up to the next bucket).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from torch.export.graph_signature import InputKind
from torch.fx.experimental.symbolic_shapes import free_symbols

from qnn_passes.errors import QnnConfigError

if TYPE_CHECKING:
    from torch.export import ExportedProgram

BUCKETS_HINT = (
    "QNN's HTP builds static shapes only (QNN 2.51 refuses a dynamic dimension on linear, "
    "reshape and norm ops, and ExecuTorch's QNN passes do not handle one). Export with static "
    "sizes instead: for several sizes, export one method per size (bucketed static shapes) "
    "and lower them together, e.g. programs = {'forward_8': torch.export.export(model, "
    "inputs_of_length_8), 'forward_16': ...}, then the same qnn_transform_passes / "
    "qnn_partitioners / to_edge_transform_and_lower calls with that dict; at run time pad the "
    "input up to the next size and call that method."
)


def dynamic_inputs(program: ExportedProgram) -> list[tuple[str, int, str]]:
    """``(input, dimension, size)`` for every dimension of a user input that is symbolic."""
    user_inputs = {
        spec.arg.name
        for spec in program.graph_signature.input_specs
        if spec.kind == InputKind.USER_INPUT and hasattr(spec.arg, "name")
    }
    found = []
    for node in program.graph.nodes:
        if node.op != "placeholder" or node.name not in user_inputs:
            continue
        val = node.meta.get("val")
        shape = getattr(val, "shape", None)
        if shape is None:
            continue
        for dim, size in enumerate(shape):
            if free_symbols(size):
                found.append((node.name, dim, _describe(program, size)))
    return found


def _describe(program: ExportedProgram, size: object) -> str:
    symbols = sorted(free_symbols(size), key=str)
    ranges = []
    for symbol in symbols:
        bounds = program.range_constraints.get(symbol)
        if bounds is not None:
            ranges.append(f"{symbol} in [{bounds.lower}, {bounds.upper}]")
    return f"{size}" + (f" ({', '.join(ranges)})" if ranges else "")


def check_static(
    program: ExportedProgram, method: str, where: str = "qnn_transform_passes"
) -> None:
    """Raise :class:`QnnConfigError` if ``program`` has a user input with a dynamic size."""
    dynamic = dynamic_inputs(program)
    if not dynamic:
        return
    listed = ", ".join(f"input '{name}' dimension {dim} = {size}" for name, dim, size in dynamic)
    raise QnnConfigError(
        f"{where}: method '{method}' was exported with dynamic sizes ({listed}), which QNN "
        f"cannot lower. {BUCKETS_HINT}"
    )
