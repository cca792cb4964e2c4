"""The RecordingQnnBackend double itself: what it records, what it restores, what it lets through."""

from __future__ import annotations

import pytest
import torch
from executorch.backends.qualcomm.partition.qnn_partitioner import QnnPartitioner
from executorch.backends.qualcomm.utils import qnn_manager_lifecycle
from executorch.backends.qualcomm.utils import utils as qnn_utils
from executorch.backends.qualcomm.utils.utils import to_edge_transform_and_lower_to_qnn
from qnn_migrate_tests.doubles.qnn_backend import RecordingQnnBackend
from qnn_migrate_tests.passes import flows
from qnn_migrate_tests.passes.zoo import BY_NAME
from torch._subclasses.fake_tensor import FakeTensor


def test_records_and_restores() -> None:
    originals = (
        QnnPartitioner.partition,
        qnn_manager_lifecycle.QnnManagerContext,
        qnn_utils.QnnManagerContext,
    )
    record = flows.run_deprecated(BY_NAME["linear_2d"])
    assert (
        QnnPartitioner.partition,
        qnn_manager_lifecycle.QnnManagerContext,
        qnn_utils.QnnManagerContext,
    ) == originals
    # linear is kept whole for QNN and not delegated here: the double ended the block there.
    assert record.stopped_by is not None and "was not decomposed or delegated" in str(
        record.stopped_by
    )
    (handoff,) = record.handoffs
    program = handoff.program
    assert not any(isinstance(v, FakeTensor) for v in program.state_dict.values())
    assert [(s.key, s.value) for s in handoff.compile_specs] == [
        (s.key, s.value) for s in flows.specs()
    ]
    assert [list(c) for c in record.contexts] == [["forward"]]
    model, (x,) = BY_NAME["linear_2d"].model()
    torch.testing.assert_close(program.module()(x), model(x))


def test_other_errors_propagate() -> None:
    with pytest.raises(ValueError, match="boom"), RecordingQnnBackend():
        raise ValueError("boom")
    # Without a recorded handoff even the "not delegated" error is not the double's to swallow.
    with pytest.raises(RuntimeError, match="was not decomposed"), RecordingQnnBackend():
        raise RuntimeError("x was not decomposed or delegated")
    model, inputs = BY_NAME["linear_2d"].model()
    with (
        pytest.raises(RuntimeError, match="was not decomposed"),
        RecordingQnnBackend(tolerate_undelegated=False) as qnn,
    ):
        to_edge_transform_and_lower_to_qnn(model, inputs, flows.specs())
    assert len(qnn.handoffs) == 1


def test_programs_pairs_methods_with_handoffs() -> None:
    record = flows.migrated("multi_method")
    assert list(record.programs(["encode", "decode"])) == ["encode", "decode"]
    with pytest.raises(AssertionError, match="2 partition call"):
        record.programs(["forward"])


def test_one_block_at_a_time() -> None:
    double = RecordingQnnBackend()
    with double, pytest.raises(RuntimeError, match="already active"):
        double.__enter__()
