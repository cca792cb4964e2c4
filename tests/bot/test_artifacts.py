"""bot/artifacts.py: the one capped, strict reader of files from other jobs (shards, results)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from qnn_migrate_tests.bot.support import standin_env, string_scan_reads
from qnn_migrate_tests.github_standin.server import GitHubStandIn

from qnn_migrate.bot import artifacts
from qnn_migrate.bot.artifacts import ArtifactError
from qnn_migrate.bot.cli.main import bot
from qnn_migrate.bot.cli.nightly import nightly_group
from qnn_migrate.bot.model import Shard, ShardResult, Status, TestResult
from qnn_migrate.bot.nightly import baseline
from qnn_migrate.bot.pr.state import MARKER

SHA = "a" * 40
T1 = "TestQNNFloatingPointOperator.test_qnn_backend_abs"
T2 = "TestQNNFloatingPointOperator.test_qnn_backend_add"
ONE = Shard("sm8650-m-1", "m", "SM8650", "htp", 1126, (T1,), SHA, pr=7)
TWO = Shard("sm8650-m-2", "m", "SM8650", "htp", 1126, (T2,), SHA, pr=7)


def _passing(shard: Shard) -> dict[str, Any]:
    return ShardResult.complete(shard, [TestResult(t, Status.PASS) for t in shard.tests]).to_dict()


def _write(results: Path, folder: str, doc: object | str) -> Path:
    (results / folder).mkdir(parents=True, exist_ok=True)
    path = results / folder / "result.json"
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"attempts": None}, "'attempts' must be an integer, not null"),
        ({"log_url": 5}, "field 'log_url' has type int"),
        ({"command": "rm -rf /"}, "'command' must be a list of strings"),
        ({"command": [1, 2]}, "'command' must be a list of strings"),
        ({"device": ["x"]}, "field 'device' has type list"),
        ({"attempts": True}, "field 'attempts' has type bool"),
        ({"surprise": 1}, "unknown shard result field(s): surprise"),
    ],
)
def test_a_malformed_result_makes_its_shard_infra_with_the_reason(
    tmp_path: Path, change: dict[str, Any], reason: str
) -> None:
    path = _write(tmp_path, "qnn-result-sm8650-m-1", _passing(ONE) | change)
    _write(tmp_path, "qnn-result-sm8650-m-2", _passing(TWO))
    got = artifacts.collect_results(tmp_path, [ONE, TWO])
    first, second = got.results
    assert [r.status for r in first.results] == [Status.INFRA]
    assert first.infra_reason is not None and reason in first.infra_reason
    assert str(path) in first.infra_reason
    assert second.ok
    assert any(reason in w and "counts as INFRA" in w for w in got.warnings)


def test_deep_nesting_is_refused_before_parsing(tmp_path: Path) -> None:
    doc = json.dumps(_passing(ONE) | {"log_url": None})
    deep = doc.replace('"log_url": null', '"log_url": ' + _deep(200_000))
    _write(tmp_path, "qnn-result-sm8650-m-1", deep)
    (result,) = artifacts.collect_results(tmp_path, [ONE]).results
    assert result.infra_reason is not None and "nested 200001 deep" in result.infra_reason
    # Brackets inside strings are text, not nesting.
    assert artifacts.nesting_depth(json.dumps({"m": "[[[[[[" * 100, "n": ["]"]})) == 2
    with pytest.raises(ArtifactError, match="over the limit of 32"):
        artifacts.parse_json(_deep(33), "x.json")
    assert artifacts.parse_json(_deep(32), "x.json") == json.loads(_deep(32))


# Texts a job running PR code could write as its result.json: strings left open, long runs
# of escaped quotes or backslashes, deep nesting, and mixtures, repeated to the cap.
ADVERSARIAL_UNITS = ['\\"', "\\", '"', "[", "{", '{"a":', '["', '"\\"', "]", "}", " ", '"x"']
adversarial_text = st.builds(
    lambda head, unit: head + "".join(unit),
    st.sampled_from(["", '"', '["', '{"k": "', "[" * 40]),
    st.lists(st.sampled_from(ADVERSARIAL_UNITS), min_size=1, max_size=6),
)


def _at_cap(head_and_unit: str, size: int) -> str:
    return (head_and_unit * (size // len(head_and_unit) + 1))[:size]


@pytest.mark.parametrize(
    "text",
    [
        '"' + '\\"' * (artifacts.MAX_BYTES // 2),  # 16 s at 48 KiB before the fix
        '["' + "\\" * (artifacts.MAX_BYTES // 2),
        '{"a": "' + '\\"x' * (artifacts.MAX_BYTES // 3),
        "[" * artifacts.MAX_BYTES,
    ],
    ids=["escaped-quotes", "backslashes", "open-value", "brackets"],
)
def test_the_depth_check_reads_each_character_once_at_the_cap(text: str) -> None:
    text = text[: artifacts.MAX_BYTES]
    assert string_scan_reads(text, 2 * len(text)) <= len(text)
    with pytest.raises(ArtifactError) as caught:
        artifacts.parse_json(text, "results/qnn-result-x/result.json")
    assert str(caught.value).startswith("results/qnn-result-x/result.json: ")


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(unit=adversarial_text)
def test_adversarial_result_files_cost_linear_work(unit: str) -> None:
    """Property: any of these shapes costs the string scan at most one read per character
    (before the fix a string left open cost one read to the end per later quote), and the
    whole reader finishes on it at the cap, with the file's name on any error."""
    small = _at_cap(unit, 64 * 1024)
    assert string_scan_reads(small, 2 * len(small)) <= len(small)
    text = _at_cap(unit, artifacts.MAX_BYTES)
    try:
        doc = artifacts.parse_json(text.encode(), "result.json")
    except ArtifactError as error:
        assert str(error).startswith("result.json: ")
    else:
        assert doc == json.loads(text)
    over = text + " "
    with pytest.raises(ArtifactError, match=r"^result\.json: \d+ bytes, over the"):
        artifacts.parse_json(over, "result.json")


def test_the_depth_check_still_sees_nesting_around_strings() -> None:
    """Controls for the linear scan: escapes, strings left open, brackets in strings."""
    assert artifacts.nesting_depth('[["a\\"]"], [[["b"]]]]') == 4
    assert artifacts.nesting_depth('[{"a": [1, {"b": "}}}"}]}]') == 4
    assert artifacts.nesting_depth('[["\\\\"]]') == 2  # an escaped backslash closes nothing
    assert artifacts.nesting_depth('[["open [[[[') == 2  # left open: nothing after it nests
    assert artifacts.nesting_depth('[[["a\\') == 3  # a lone backslash at the end
    with pytest.raises(ArtifactError, match="not JSON"):
        artifacts.parse_json('[["open [[[[', "x.json")


def test_a_result_is_taken_only_from_its_own_artifact_folder(tmp_path: Path) -> None:
    # Another shard's artifact (and a stray folder) claim to be shard one, all green.
    _write(tmp_path, "qnn-result-sm8650-m-2", _passing(ONE))
    _write(tmp_path, "qnn-result-evil", _passing(ONE))
    got = artifacts.collect_results(tmp_path, [ONE, TWO])
    (second,) = got.results  # shard one has no artifact of its own: left to reconcile
    assert second.shard == TWO and [r.status for r in second.results] == [Status.INFRA]
    assert "holds the result of shard 'sm8650-m-1'" in (second.infra_reason or "")
    assert any("qnn-result-evil/result.json: ignored" in w for w in got.warnings)
    # Its own folder (the artifact name, or the bare id) is read.
    _write(tmp_path, "sm8650-m-1", _passing(ONE))
    assert [r.shard.id for r in artifacts.collect_results(tmp_path, [ONE]).results] == [ONE.id]


def test_shard_lists_in_every_form_and_their_errors(tmp_path: Path) -> None:
    planned = [{"shard": s.to_dict(), "runs_on": ["self-hosted", "qnn", "sm8650"]} for s in (ONE,)]
    assert artifacts.parse_shards(json.dumps(planned), "p") == [ONE]
    assert artifacts.parse_shards(json.dumps(ONE.to_dict()), "p") == [ONE]
    assert artifacts.parse_shards(json.dumps([ONE.to_dict(), TWO.to_dict()]), "p") == [ONE, TWO]
    assert artifacts.parse_planned(json.dumps(planned), "p")[0].runs_on[-1] == "sm8650"
    for bad, message in [
        ("[]", "no shards"),
        ("{", "not JSON"),
        (json.dumps([ONE.to_dict(), ONE.to_dict()]), "unique"),
        (json.dumps([{"shard": ONE.to_dict(), "runs_on": "x"}]), "'runs_on' must be a list"),
        (json.dumps({**ONE.to_dict(), "seed": "1"}), "field 'seed' has type str"),
    ]:
        with pytest.raises(ArtifactError, match=message) as caught:
            artifacts.parse_shards(bad, "shards.json")
        assert str(caught.value).startswith("shards.json: ")
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (artifacts.MAX_BYTES + 1))
    with pytest.raises(ArtifactError, match=f"{big}: the shard list is over the"):
        artifacts.read_shards(big)


def test_the_report_posts_when_a_result_file_is_malformed(
    github_standin: GitHubStandIn, tmp_path: Path
) -> None:
    gh = github_standin
    gh.add_pull(7, author="maint", head_sha=SHA)
    shards = tmp_path / "shards.json"
    shards.write_text(json.dumps([ONE.to_dict(), TWO.to_dict()]))
    results = tmp_path / "results"
    _write(results, "qnn-result-sm8650-m-1", _passing(ONE) | {"attempts": None})
    deep = json.dumps(_passing(TWO) | {"log_url": None})
    _write(results, "qnn-result-sm8650-m-2", deep.replace("null", _deep(100_000), 1))
    args = ["report", "--shards-file", str(shards), "--results-dir", str(results)]
    result = CliRunner().invoke(bot, args, env=standin_env(gh), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output.splitlines()[-1])
    assert (summary["state"], summary["ran"], summary["expected"]) == ("error", 0, 2), result.output
    (comment,) = [c for c in gh.comments(7) if MARKER in c.body]
    assert "malformed result artifact" in comment.body
    assert gh.statuses(SHA)[-1]["state"] == "error"


def test_the_nightly_records_a_malformed_result_as_infra(tmp_path: Path) -> None:
    shards = tmp_path / "shards.json"
    shards.write_text(json.dumps([ONE.to_dict(), TWO.to_dict()]))
    results = tmp_path / "results"
    _write(results, "qnn-result-sm8650-m-1", _passing(ONE) | {"command": [{"x": 1}]})
    _write(results, "qnn-result-sm8650-m-2", _passing(TWO))
    bdir = tmp_path / "baselines"
    args = [
        "record",
        *("--shards-file", str(shards), "--results-dir", str(results)),
        *("--baselines-dir", str(bdir), "--sha", SHA, "--date", "2026-11-02T02:00:00Z"),
        *("--issue-out", str(tmp_path / "issue.md")),
    ]
    result = CliRunner().invoke(nightly_group, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    recorded = baseline.loads((bdir / "SM8650.json").read_text())
    assert recorded.tests == {T1: (Status.INFRA,), T2: (Status.PASS,)}
