"""Program fingerprints: strict reading of what PR code wrote, and the comparison with a baseline."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from qnn_migrate_tests.bot.support import output_doc, program_doc, programs_file

from qnn_migrate.bot.model import ModelError
from qnn_migrate.bot.programs import (
    TOLERANT_BLOCKS,
    ProgramVerdict,
    TestPrograms,
    compare,
    entry_to_dict,
    parse_programs,
    parse_test,
)

T = "TestQNNFloatingPointOperator.test_qnn_backend_conv1d"
PAYLOAD = bytes(range(256)) * 40  # 10 KiB: 40 blocks of 256 bytes


def entry(*programs: dict[str, Any]) -> TestPrograms:
    return parse_test(T, {"programs": list(programs), "dropped": 0})


def verdict(base: dict[str, Any], head: dict[str, Any]) -> tuple[ProgramVerdict, tuple[str, ...]]:
    got = compare(entry(base), entry(head), T)
    return got.verdict, got.changes


def test_a_program_read_back_from_its_json_form_is_identical() -> None:
    doc = program_doc(payloads=(PAYLOAD,), outputs=[output_doc("a", "inf")])
    first = entry(doc)
    assert first.problem is None and first.programs[0].outputs is not None
    again = parse_test(T, entry_to_dict(first))
    assert again == first
    assert compare(first, again, T).verdict is ProgramVerdict.IDENTICAL


@pytest.mark.parametrize(
    ("change", "what"),
    [
        (lambda d: d["methods"][0]["inputs"].append(["b_w", "float32", [3]]), "signature: inputs"),
        (lambda d: d["methods"][0]["outputs"][0].__setitem__(1, "float16"), "signature: outputs"),
        (lambda d: d["methods"][0].__setitem__("constants", [1, 12]), "constant inputs 0"),
        (lambda d: d["methods"][0]["delegates"].append(d["methods"][0]["delegates"][0]), "count"),
        (lambda d: d["methods"][0]["outside"].__setitem__("aten::add.out", 1), "ops outside"),
        (
            lambda d: d["outputs"].__setitem__(0, output_doc("b", 21.5)),
            "output 0 SNR 60.0 dB → 21.5",
        ),
    ],
)
def test_each_kind_of_change_is_named(change: Any, what: str) -> None:
    base = program_doc(payloads=(PAYLOAD,), outputs=[output_doc("a")])
    head = copy.deepcopy(base)
    change(head)
    got, changes = verdict(base, head)
    assert got is ProgramVerdict.CHANGED and len(changes) == 1 and what in changes[0], changes
    # Control: the unchanged copy compares identical.
    assert verdict(base, copy.deepcopy(base))[0] is ProgramVerdict.IDENTICAL


def test_payloads_differing_in_a_few_blocks_are_the_same_program_and_more_are_not() -> None:
    def edited(blocks: int) -> bytes:
        data = bytearray(PAYLOAD)
        for b in range(blocks):
            data[b * 256 + 7] ^= 0xFF  # one byte in each of the first ``blocks`` blocks
        return bytes(data)

    base = program_doc(payloads=(PAYLOAD,))
    near = program_doc(payloads=(edited(TOLERANT_BLOCKS),))
    far = program_doc(payloads=(edited(TOLERANT_BLOCKS + 1),))
    assert verdict(base, near) == (ProgramVerdict.IDENTICAL, ())
    got, changes = verdict(base, far)
    assert got is ProgramVerdict.CHANGED
    assert changes == (
        f"delegate 1 (QnnBackend) payload: 10240 → 10240 bytes, {TOLERANT_BLOCKS + 1} of 40 "
        "blocks differ (one size: may be QNN's process-wide counters only)",
    )
    # Another backend's payload has no such counters: no "may be".
    other = verdict(
        program_doc(payloads=(PAYLOAD,), backend="XnnpackBackend"),
        program_doc(payloads=(edited(TOLERANT_BLOCKS + 1),), backend="XnnpackBackend"),
    )
    assert other[1] == (
        f"delegate 1 (XnnpackBackend) payload: 10240 → 10240 bytes, {TOLERANT_BLOCKS + 1} of 40 "
        "blocks differ",
    )
    # A payload of another size is never within tolerance.
    got, changes = verdict(base, program_doc(payloads=(PAYLOAD + b"\0",)))
    assert got is ProgramVerdict.CHANGED and "10240 → 10241 bytes" in changes[0]


def test_the_qnn_context_timestamp_is_masked() -> None:
    import struct

    def context(stamp: int) -> bytes:
        body = b"\x07" * 500
        return struct.pack("<IQQ", 0x5678ABCD, stamp, len(body)) + body

    a, b = program_doc(payloads=(context(1),)), program_doc(payloads=(context(2),))
    assert a["methods"][0]["delegates"][0]["sha256"] == b["methods"][0]["delegates"][0]["sha256"]
    # Control: the same bytes after the header differ when the body does.
    c = program_doc(payloads=(context(1)[:-1] + b"\x08",))
    assert a["methods"][0]["delegates"][0]["sha256"] != c["methods"][0]["delegates"][0]["sha256"]


def test_new_no_program_and_not_fingerprinted() -> None:
    head = entry(program_doc())
    assert compare(None, head, T).verdict is ProgramVerdict.NEW_PROGRAM
    assert compare(entry(program_doc()), entry(), T).verdict is ProgramVerdict.NO_PROGRAM
    assert compare(entry(), entry(), T).note == "no program recorded"
    missing = compare(entry(program_doc()), None, T, "no programs.json")
    assert (missing.verdict, missing.note) == (ProgramVerdict.NOT_FINGERPRINTED, "no programs.json")
    failed = parse_test(T, {"programs": [{"subtest": "", "error": "KeyError: 'x'"}], "dropped": 0})
    got = compare(entry(program_doc()), failed, T)
    assert got.verdict is ProgramVerdict.NOT_FINGERPRINTED and "KeyError" in got.note
    over = parse_test(T, {"programs": [program_doc()], "dropped": 3})
    assert compare(over, over, T).verdict is ProgramVerdict.NOT_FINGERPRINTED


FORGERIES: list[tuple[str, Any]] = [
    ("an extra field", lambda d: d.__setitem__("verdict", "IDENTICAL")),
    ("a short hash", lambda d: d["methods"][0]["delegates"][0].__setitem__("sha256", "ab")),
    ("markup in an op", lambda d: d["methods"][0]["outside"].__setitem__("<img src=x>", 1)),
    ("a negative size", lambda d: d["methods"][0]["delegates"][0].__setitem__("size", -1)),
    ("blocks not covering", lambda d: d["methods"][0]["delegates"][0].__setitem__("size", 99999)),
    ("a bool count", lambda d: d["methods"][0].__setitem__("constants", [True, 0])),
    ("a string snr", lambda d: d.__setitem__("outputs", [output_doc("a", "high")])),
    ("no methods", lambda d: d.__setitem__("methods", [])),
    ("a huge shape", lambda d: d["methods"][0]["inputs"][0].__setitem__(2, [1] * 99)),
]


@pytest.mark.parametrize(("what", "forge"), FORGERIES, ids=[f[0] for f in FORGERIES])
def test_a_malformed_fingerprint_is_not_fingerprinted_never_identical(
    what: str, forge: Any
) -> None:
    good = program_doc(payloads=(PAYLOAD,))
    bad = copy.deepcopy(good)
    forge(bad)
    got = compare(entry(good), entry(bad), T)
    assert got.verdict is ProgramVerdict.NOT_FINGERPRINTED, what
    assert got.note.startswith("malformed fingerprint: ")
    assert compare(entry(good), entry(copy.deepcopy(good)), T).verdict is ProgramVerdict.IDENTICAL


def test_the_file_keeps_only_expected_tests_and_refuses_another_shape() -> None:
    doc = programs_file({T: [program_doc()], "TestX.test_not_asked": [program_doc()]})
    assert set(parse_programs(doc, [T, "TestX.test_absent"])) == {T}
    for broken in ({"schema": 2, "tests": {}}, {"schema": 1}, [], {"schema": 1, "tests": []}):
        with pytest.raises(ModelError):
            parse_programs(broken, [T])
    with pytest.raises(ModelError, match="could not start"):
        parse_programs({"schema": 1, "tests": {}, "failed": "ImportError: x"}, [T])


def test_an_output_that_became_nan_is_changed_never_a_perfect_200_db() -> None:
    """``min(200, nan)`` is 200: a program whose output is now NaN read as IDENTICAL against
    an exact baseline (SNR inf, counted as 200 dB)."""
    exact = program_doc(outputs=[output_doc("run 1", "inf")])
    for nan in ("nan", float("nan")):  # as the recorder writes it now, and a bare NaN
        now = program_doc(outputs=[output_doc("run 2", nan)])
        got, changes = verdict(exact, now)
        assert got is ProgramVerdict.CHANGED, nan
        assert changes == ("outputs: output 0 SNR inf dB → NaN (the output holds NaN)",)
        got, _ = verdict(program_doc(outputs=[output_doc("run 0", 73.9)]), now)
        assert got is ProgramVerdict.CHANGED
    # NaN before and after is no change; and the "nan" the recorder writes reads back.
    both = program_doc(outputs=[output_doc("run 3", "nan")])
    assert verdict(both, program_doc(outputs=[output_doc("run 4", "nan")]))[0] is (
        ProgramVerdict.IDENTICAL
    )
    again = parse_test(T, entry_to_dict(entry(both)))
    assert compare(entry(both), again, T).verdict is ProgramVerdict.IDENTICAL
    # The control: an exact output against the exact baseline is identical.
    assert verdict(exact, program_doc(outputs=[output_doc("run 5", "inf")]))[0] is (
        ProgramVerdict.IDENTICAL
    )


def test_outputs_are_compared_by_snr_not_by_hash() -> None:
    # The harness draws its inputs at random: the same program's outputs hash differently.
    base = program_doc(outputs=[output_doc("run 1", 73.9)])
    again = program_doc(outputs=[output_doc("run 2", 75.0)])
    assert verdict(base, again) == (ProgramVerdict.IDENTICAL, ())
    # Control: the patched-pass run's SNR fell by 60 dB.
    worse = program_doc(outputs=[output_doc("run 2", 6.4)])
    assert verdict(base, worse) == (
        ProgramVerdict.CHANGED,
        ("outputs: output 0 SNR 73.9 dB → 6.4 dB",),
    )
