"""Run a script that lowers (a codemod semantics scenario, as written or rewritten) in a fresh child.

The script's ``RESULT`` is an EdgeProgramManager or a list of them; each is serialized and every
method run on the HTP simulator with the script's example inputs (``inputs``, a dict by method,
or ``example_inputs``, one tuple for every method). The eager reference of each method is
taken where the script exports it: every ``torch.export.export`` in the child (the wrapper's,
``qnn_export``'s or the script's own) first runs a copy of the module on the same inputs, and a
method's reference is the output of the export that got the tensors it is run with (in the
order the exports happened, when several got the same ones).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from qnn_migrate_tests.qnn_htp.lowering import describe


@dataclass
class ScriptLowering:
    """One EdgeProgramManager a script produced, as plain data."""

    methods: list[str]
    delegates: dict[str, int]
    outside: dict[str, list[str]]
    payloads: list[bytes]
    pte: bytes
    outputs: dict[str, list[Any]]
    reference: dict[str, list[Any]]  # eager outputs, per method


def _recording_exports(torch: Any) -> list[tuple[tuple[int, ...], list[Any]]]:
    """Make ``torch.export.export`` record, per call, the ids of its input tensors and the eager
    outputs of a copy of the module on them (this child only; the script runs once)."""
    import copy

    export = torch.export.export
    records: list[tuple[tuple[int, ...], list[Any]]] = []

    def recording(module: Any, args: Any, *rest: Any, **kwargs: Any) -> Any:
        with torch.no_grad():
            out = copy.deepcopy(module)(*args)
        outs = out if isinstance(out, tuple | list) else (out,)
        records.append((tuple(id(a) for a in args), [o.detach().clone().numpy() for o in outs]))
        return export(module, args, *rest, **kwargs)

    torch.export.export = recording
    return records


def run_script(code: str, name: str) -> list[ScriptLowering]:
    import torch
    from executorch.extension.pybindings.portable_lib import _load_for_executorch_from_buffer

    exports = _recording_exports(torch)
    namespace: dict[str, Any] = {"__name__": f"scenario_{name}"}
    exec(compile(code, name, "exec"), namespace)
    result = namespace["RESULT"]
    managers = result if isinstance(result, list) else [result]
    lowered = []
    for manager in managers:
        delegates, outside = describe(manager)
        methods = sorted(manager.methods)
        program = manager.to_executorch()
        pte = bytes(program.buffer)
        payloads = [bytes(d.data) for d in program.executorch_program.backend_delegate_data]
        module = _load_for_executorch_from_buffer(pte)
        outputs, reference = {}, {}
        for method in methods:
            given = namespace.get("inputs")
            inputs = given[method] if isinstance(given, dict) else namespace["example_inputs"]
            outs = module.run_method(method, tuple(inputs))
            outputs[method] = [torch.as_tensor(t).clone().numpy() for t in outs]
            key = tuple(id(a) for a in inputs)
            at = next(i for i, (ids, _) in enumerate(exports) if ids == key)
            reference[method] = exports.pop(at)[1]
        del module
        lowered.append(
            ScriptLowering(methods, delegates, outside, payloads, pte, outputs, reference)
        )
    return lowered
