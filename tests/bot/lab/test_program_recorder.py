"""lab/program_recorder.py on real ExecuTorch lowerings: it records, and the program is unchanged.

Portable lowerings only (the XNNPACK partitioner's import alone costs more CPU than the
test); delegates are covered on the real QNN simulator by
tests/qnn_htp/test_scenario_real_harness.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from qnn_migrate.bot.lab import program_recorder
from qnn_migrate.bot.programs import ProgramVerdict, compare, parse_programs

pytestmark = pytest.mark.passes

T = "TestX.test_lowering"


def _lower(buffer: bool) -> Any:
    import torch
    from executorch.exir import to_edge_transform_and_lower

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(4, 3)
            if buffer:
                self.register_buffer("offset", torch.ones(3))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = torch.sin(self.linear(x))
            return y + self.offset if buffer else y

    torch.manual_seed(0)
    program = torch.export.export(Net().eval(), (torch.randn(2, 4),))
    return to_edge_transform_and_lower(program).to_executorch()


def test_recording_leaves_the_program_as_it_was_and_reads_back(tmp_path: Path) -> None:
    from executorch.exir.program._program import EdgeProgramManager

    plain = _lower(buffer=False).buffer
    recorder = program_recorder.Recorder(str(tmp_path / "programs.json"))
    shipped = EdgeProgramManager.to_executorch
    try:
        recorder.install(None)
        recorder.start(T, None)
        hooked = _lower(buffer=False)
        _lower(buffer=True)
        recorder.stop()
    finally:
        EdgeProgramManager.to_executorch = shipped  # type: ignore[method-assign]
    assert hooked.buffer == plain  # the hook returns what the harness would have got
    doc = json.loads((tmp_path / "programs.json").read_text())
    test = parse_programs(doc, [T])[T]
    assert test.problem is None and len(test.programs) == 2
    plain_print, buffered = (p.methods[0] for p in test.programs)
    assert [(t.dtype, t.shape) for t in plain_print.inputs] == [("float32", (2, 4))]
    assert [(t.dtype, t.shape) for t in plain_print.outputs] == [("float32", (2, 3))]
    assert plain_print.delegates == () and ("aten::sin.out", 1) in plain_print.outside
    assert ("aten::add.out", 1) in buffered.outside
    assert buffered.constants[0] == plain_print.constants[0] + 1
    # A program with one more constant input is named as a signature change.
    one, two = (parse_programs(doc, [T])[T] for _ in range(2))
    assert compare(one, two, T).verdict is ProgramVerdict.IDENTICAL
    first = type(one)(T, one.programs[:1])
    second = type(one)(T, (one.programs[1],))
    changed = compare(first, second, T)
    assert changed.verdict is ProgramVerdict.CHANGED
    assert any(c.startswith("signature: constant inputs") for c in changed.changes)


def test_a_fingerprint_that_cannot_be_taken_is_recorded_as_an_error(tmp_path: Path) -> None:
    class Broken:
        methods = ("forward",)

        def exported_program(self, name: str) -> Any:
            raise RuntimeError("no program here")

    recorder = program_recorder.Recorder(str(tmp_path / "programs.json"))
    recorder.start(T, None)
    recorder.on_program(Broken())
    recorder.stop()
    test = parse_programs(json.loads((tmp_path / "programs.json").read_text()), [T])[T]
    got = compare(test, test, T)
    assert got.verdict is ProgramVerdict.NOT_FINGERPRINTED
    assert "RuntimeError: no program here" in got.note


def test_a_harness_class_loaded_after_executorch_is_hooked_when_its_test_starts(
    tmp_path: Path,
) -> None:
    """The generic harness's Tester (other backends' tests) may be imported after ExecuTorch
    is: its compare is wrapped as the next test starts, not only when ExecuTorch is hooked."""
    import types

    import torch
    from executorch.exir.program._program import EdgeProgramManager

    script = types.ModuleType("test_script_double")
    seen: list[object] = []

    class LateTester:
        @staticmethod
        def _assert_outputs_equal(model_output: object, ref_output: object) -> None:
            seen.append(model_output)

    recorder = program_recorder.Recorder(str(tmp_path / "programs.json"))
    shipped = EdgeProgramManager.to_executorch
    try:
        recorder.install(script)  # ExecuTorch is imported: hooked now, no harness class yet
        assert recorder.hooked and program_recorder.NO_COMPARE in recorder.notes
        script.LateTester = LateTester  # type: ignore[attr-defined]
        # Control: not wrapped until a test starts.
        assert "assert_outputs_static" not in repr(
            LateTester.__dict__["_assert_outputs_equal"].__func__
        )
        recorder.start(T, None)
        recorder._add({"methods": []})  # a program of this test, so outputs attach to it
        LateTester._assert_outputs_equal([torch.ones(2)], [torch.ones(2)])
        recorder.stop()
    finally:
        EdgeProgramManager.to_executorch = shipped  # type: ignore[method-assign]
    assert len(seen) == 1  # the shipped compare still ran
    assert "outputs" in recorder.tests[T]["programs"][0]
    assert program_recorder.NO_COMPARE not in recorder.notes
