"""Run a script that lowers (a codemod semantics scenario, as written or rewritten) in a fresh child.

The script's ``RESULT`` is an EdgeProgramManager or a list of them; each is serialized and every
method run on the HTP simulator with the script's example inputs (``inputs``, a dict by method,
or ``example_inputs``, one tuple for every method).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from qnn_htp.lowering import describe


@dataclass
class ScriptLowering:
    """One EdgeProgramManager a script produced, as plain data."""

    methods: list[str]
    delegates: dict[str, int]
    outside: dict[str, list[str]]
    payloads: list[bytes]
    pte: bytes
    outputs: dict[str, list[Any]]


def run_script(code: str, name: str) -> list[ScriptLowering]:
    import torch
    from executorch.extension.pybindings.portable_lib import _load_for_executorch_from_buffer

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
        outputs = {}
        for method in methods:
            given = namespace.get("inputs")
            inputs = given[method] if isinstance(given, dict) else namespace["example_inputs"]
            outs = module.run_method(method, tuple(inputs))
            outputs[method] = [torch.as_tensor(t).clone().numpy() for t in outs]
        del module
        lowered.append(ScriptLowering(methods, delegates, outside, payloads, pte, outputs))
    return lowered
