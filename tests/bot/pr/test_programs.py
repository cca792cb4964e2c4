"""pr/programs.py: the Programs section from shard artifacts and baselines, golden and at the cap."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path

import pytest
from qnn_migrate_tests.bot.pr.support import LINKS, reported_state
from qnn_migrate_tests.bot.support import (
    GOLDEN,
    REGEN,
    ROOT,
    SHA,
    baseline_for,
    check_golden,
    output_doc,
    program_doc,
    programs_file,
    results_for,
)
from qnn_migrate_tests.bot.support import planned_shards as _shards

from qnn_migrate.bot.catalog import Catalog
from qnn_migrate.bot.model import Baseline, RunsOn, Shard, ShardResult, Status, Suite, TestResult
from qnn_migrate.bot.nightly import program_baseline
from qnn_migrate.bot.pr.plan import PlanRequest, Selection, plan
from qnn_migrate.bot.pr.programs import (
    BUDGET,
    ProgramGroup,
    gather,
    render_section,
    stale_note,
    summary_line,
)
from qnn_migrate.bot.pr.render import COMMENT_LIMIT, render_report
from qnn_migrate.bot.pr.summary import summarize
from qnn_migrate.bot.pr.verbs import VERBS
from qnn_migrate.bot.programs import Comparison, ProgramVerdict, parse_test

NIGHTLY = "abc1234" + "0" * 33
PAYLOAD = bytes(range(256)) * 8


def _head_programs(shard: Shard) -> dict[str, list[dict[str, object]]]:
    """What the PR run recorded: mostly the baseline's programs, some changed on purpose."""
    out: dict[str, list[dict[str, object]]] = {}
    for i, test in enumerate(shard.tests):
        doc = program_doc(payloads=(PAYLOAD,), outputs=[output_doc(test)])
        if shard.soc == "SM8650" and i == 0:  # the shared lift: one more input
            doc["methods"][0]["inputs"].append(["b__frozen_param0", "float32", [3]])  # type: ignore[index]
        if shard.soc == "SM8650" and i == 1:  # a pass moved an op out of the delegate
            doc = program_doc(payloads=(PAYLOAD[:-256],), outputs=[output_doc(test, 48.25)])
            doc["methods"][0]["outside"] = {"aten::add.out": 1}  # type: ignore[index]
        if shard.soc == "SM8650" and i == 2:
            doc["methods"][0]["outside"] = {"aten::<b>@here</b>.out": 1}  # type: ignore[index]
        if shard.soc == "SM8650" and i == 3:
            out[test] = []  # lowered nothing
            continue
        if shard.soc == "SM8750" and i == 3:
            doc = {"subtest": "", "error": "RuntimeError: <script> @maintainers"}
        out[test] = [doc]
    return out


def _write(results: Path, baselines: Path, shards: list[Shard]) -> None:
    for shard in shards:
        folder = results / f"qnn-result-{shard.id}" / "attempt-1"
        folder.mkdir(parents=True)
        if shard.soc == "SM8750" and shard.id.endswith("-2"):
            continue  # a shard whose recorder wrote nothing
        (folder / "programs.json").write_text(json.dumps(programs_file(_head_programs(shard))))
    for soc in ("SM8650", "SM8750"):
        tests = {
            t: parse_test(
                t,
                {
                    "programs": [program_doc(payloads=(PAYLOAD,), outputs=[output_doc(t)])],
                    "dropped": 0,
                },
            )
            for s in shards
            if s.soc == soc
            for t in s.tests[:4] + s.tests[5:]  # the fifth test of each shard is new
        }
        base = program_baseline.ProgramBaseline(soc, False).updated(NIGHTLY, tests)
        program_baseline.save(baselines, base)


def test_the_programs_section_golden(catalog: Catalog, tmp_path: Path) -> None:
    shards = _shards(catalog)
    _write(tmp_path / "results", tmp_path / "baselines", shards)
    groups, warnings = gather(shards, tmp_path / "results", tmp_path / "baselines")
    assert warnings == []
    groups[0] = replace(
        groups[0], stale=stale_note(NIGHTLY, "f" * 40, ["exir/program/_program.py"])
    )
    section = render_section(groups)
    summary = summarize(results_for(shards), baseline_for(shards, catalog))
    body = render_report(
        summary,
        reported_state(catalog),
        LINKS,
        catalog,
        baseline_label="nightly at `babe11111111`",
        programs=section,
        command_text=VERBS.describe(reported_state(catalog).command),
    )
    check_golden("programs-report.md", body)
    assert section in body
    assert "programs on SM8650: 6 identical to main's nightly (run at `abc1234`), 4 changed" in body
    assert "@here" not in body and "<b>" not in body and "<script>" not in body
    assert (
        "signature: inputs (x: float32\\[1, 3, 16\\]) → (x: float32\\[1, 3, 16\\]; b\\_\\_frozen"
        in body
    )
    # Control: with the baseline's own programs, every test of a shard is IDENTICAL.
    same = program_baseline.load(tmp_path / "baselines", program_baseline.Place("SM8650", False))
    assert same is not None
    checks = [Comparison(t, ProgramVerdict.IDENTICAL) for t in same.tests]
    group = ProgramGroup("SM8650", False, NIGHTLY, tuple(checks))
    assert summary_line(group).endswith(
        f"{len(checks)} identical to main's nightly (run at `abc1234`), 0 changed"
    )


def test_stale_note_only_for_files_that_shape_programs() -> None:
    assert stale_note(NIGHTLY, "f" * 40, ["docs/x.md", "backends/arm/a.py"]) == ""
    assert stale_note(NIGHTLY, NIGHTLY, ["exir/a.py"]) == ""
    note = stale_note(NIGHTLY, "f" * 40, ["backends/qualcomm/a.py", "exir/b.py", "README.md"])
    assert "in 2 file(s)" in note and "--compare base" in note


@pytest.mark.parametrize(
    "path",
    [
        "backends/test/harness/tester.py",  # the harness the tests lower through
        "backends/transforms/decompose_sdpa.py",  # transforms every backend may run
        "export/export.py",  # the export API
        "torch_pin.py",  # the torch pin: torch's export makes the graphs
        ".ci/docker/ci_commit_pins/pytorch.txt",
        "install_requirements.py",
    ],
)
def test_stale_note_counts_shared_lowering_code_and_the_torch_pin(path: str) -> None:
    note = stale_note(NIGHTLY, "f" * 40, [path, "docs/x.md"])
    assert "in 1 file(s)" in note, "a stale baseline went unnoted"
    # The control: the same change one folder over shapes no program.
    assert stale_note(NIGHTLY, "f" * 40, [f"docs/{path}"]) == ""


def test_every_test_changed_on_six_socs_folds_to_the_cap(catalog: Catalog) -> None:
    ids = sorted(catalog.test_ids)
    socs = list(catalog.socs)[:6]  # [limits] socs
    the_plan = plan(
        PlanRequest({s: [Selection("all", tuple(ids))] for s in socs}, "htp", 1126, SHA, 7),
        catalog=catalog,
    )
    change = "signature: inputs (x: float32[1, 3, 16]) → (" + "y: float32[1], " * 40 + ")"
    groups = [
        ProgramGroup(
            soc,
            False,
            NIGHTLY,
            tuple(Comparison(t, ProgramVerdict.CHANGED, (change,) * 20) for t in ids),
        )
        for soc in socs
    ]
    section = render_section(groups)
    assert len(section.encode("utf-8")) <= BUDGET
    assert "more tests whose program is not identical" in section
    check_golden("programs-at-the-cap.md", section)
    results = [
        ShardResult.complete(
            p.shard,
            [
                TestResult(t, Status.FAIL, 3.0, "AssertionError: " + "x " * 150)
                for t in p.shard.tests
            ],
        )
        for p in the_plan.shards
    ]
    body = render_report(
        summarize(results, Baseline()),
        reported_state(catalog),
        LINKS,
        catalog,
        baseline_label="no nightly baseline",
        programs=section,
        command_text=VERBS.describe(reported_state(catalog).command),
    )
    assert len(body.encode("utf-8")) <= COMMENT_LIMIT
    assert section in body and "more failures; see the logs" in body
    # Control: unfolded, a tenth of one SoC's rows is already over the budget.
    few = [replace(groups[0], comparisons=groups[0].comparisons[:60])]
    assert len(render_section(few, budget=10**9).encode("utf-8")) > BUDGET


def test_a_shard_without_programs_is_not_fingerprinted(catalog: Catalog, tmp_path: Path) -> None:
    shards = _shards(catalog)[:1]
    (tmp_path / f"qnn-result-{shards[0].id}").mkdir()
    # Nothing recorded and nothing to compare with: the comment says nothing of programs.
    assert gather(shards, tmp_path, None) == ([], [])
    program_baseline.save(tmp_path / "b", program_baseline.ProgramBaseline(shards[0].soc, False))
    groups, _ = gather(shards, tmp_path, tmp_path / "b")
    verdicts = {c.verdict for c in groups[0].comparisons}
    assert verdicts == {ProgramVerdict.NOT_FINGERPRINTED}
    assert "no programs.json" in groups[0].comparisons[0].note
    # A retry's file wins over the first attempt's for the tests it ran again.
    test = shards[0].tests[0]
    first = programs_file({test: [{"subtest": "", "error": "boom"}]})
    second = programs_file({test: [program_doc()]})
    for attempt, doc in (("attempt-1", first), ("attempt-2", second)):
        folder = tmp_path / f"qnn-result-{shards[0].id}" / attempt
        folder.mkdir()
        (folder / "programs.json").write_text(json.dumps(doc))
    groups, _ = gather(shards, tmp_path, None)
    assert groups[0].comparisons[0].verdict is ProgramVerdict.NEW_PROGRAM
    assert copy.copy(groups[0].comparisons[1].note).startswith("the test did not run")


DOCS = ROOT / "docs" / "bot.md"
SAMPLE_BEGIN = (
    "<!-- sample: the Programs section of tests/bot/golden/programs-report.md; "
    "regenerated with QNN_REGEN_GOLDEN=1 -->"
)
SAMPLE_END = "<!-- end of sample -->"


def test_docs_show_the_programs_section_of_the_golden_comment() -> None:
    comment = (GOLDEN / "programs-report.md").read_text(encoding="utf-8")
    section = "### Programs" + comment.split("\n### Programs", 1)[1].split("\n**Rerun:**", 1)[0]
    block = f"{SAMPLE_BEGIN}\n\n````markdown\n{section.strip()}\n````\n\n{SAMPLE_END}"
    docs = DOCS.read_text(encoding="utf-8")
    head, rest = docs.split(SAMPLE_BEGIN, 1)
    tail = rest.split(SAMPLE_END, 1)[1]
    if REGEN:
        DOCS.write_text(head + block + tail, encoding="utf-8")
        docs = DOCS.read_text(encoding="utf-8")
    assert docs == head + block + tail, f"{DOCS}: the sample differs from the golden's section"


def test_other_backends_programs_have_their_own_place_and_baseline(
    catalog: Catalog, tmp_path: Path
) -> None:
    """The other-backends matrix runs on the simulator hosts: its programs were counted in the
    QNN simulator's summary line, rows and baseline file ("SM8650 (x86 simulator)")."""
    qnn_test = "TestQNNFloatingPointOperator.test_qnn_backend_conv1d"
    xnn_test = "TestConv1d.test_fp32_conv1d"
    on_sim = PlanRequest({}, "htp", 1126, SHA, 7, runs_on=RunsOn.SIMULATOR)
    work = {"SM8650": [Selection("canonicalize_conv", (qnn_test,))]}
    qnn = plan(replace(on_sim, work=work), catalog=catalog).shards[0].shard
    work = {"SM8650": [Selection("other_backends", (xnn_test,))]}
    other = plan(replace(on_sim, work=work, runs_on=RunsOn.PHONE), catalog=catalog).shards[0].shard
    assert (qnn.soc, qnn.runs_on) == (other.soc, other.runs_on)
    assert (other.suite, qnn.suite) == (Suite.OTHER_BACKENDS, Suite.QNN)
    assert Shard.from_dict(other.to_dict()) == other and qnn.to_dict()["suite"] == "qnn"
    results = tmp_path / "results"
    for shard, test in ((qnn, qnn_test), (other, xnn_test)):
        folder = results / f"qnn-result-{shard.id}" / "attempt-1"
        folder.mkdir(parents=True)
        doc = programs_file({test: [program_doc(payloads=(PAYLOAD,))]})
        (folder / "programs.json").write_text(json.dumps(doc))
    baselines = tmp_path / "baselines"
    assert program_baseline.record_night(baselines, [qnn, other], results, NIGHTLY) == []
    assert sorted(p.name for p in (baselines / "programs").iterdir()) == [
        "SM8650-simulator.json",
        "other-backends-SM8650-simulator.json",
    ]
    stored = program_baseline.load(baselines, program_baseline.Place("SM8650", True, True))
    assert stored is not None and set(stored.tests) == {xnn_test} and stored.other_backends
    groups, warnings = gather([qnn, other], results, baselines)
    assert warnings == []
    assert [(g.place, [c.test_id for c in g.comparisons]) for g in groups] == [
        ("SM8650 (x86 simulator)", [qnn_test]),
        ("other backends (x86 simulator host)", [xnn_test]),
    ]
    assert all(c.verdict is ProgramVerdict.IDENTICAL for g in groups for c in g.comparisons)
    # Control: a shard not marked as the other backends' falls in with the QNN simulator's.
    unmarked = replace(other, suite=Suite.QNN)
    (groups,) = [gather([qnn, unmarked], results, baselines)[0]]
    assert [g.place for g in groups] == ["SM8650 (x86 simulator)"]


def test_a_baseline_file_with_a_suite_other_than_other_backends_is_refused() -> None:
    import pytest

    from qnn_migrate.bot.artifacts import ArtifactError

    base = program_baseline.ProgramBaseline("SM8650", True, other_backends=True)
    text = program_baseline.dumps(base)
    assert '"suite":"other-backends"' in text
    assert program_baseline.parse(text, "x").other_backends
    plain = text.replace('"suite":"other-backends",', "")
    assert not program_baseline.parse(plain, "x").other_backends  # the control: QNN's
    with pytest.raises(ArtifactError, match="suite must be"):
        program_baseline.parse(text.replace('"other-backends"', '"qnn"'), "x")
