"""pr/report.py's reading of one run: the dispatched list split into the PR's shards and the
merge base's, and refused when it is not one run's (the report job's input check)."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from qnn_migrate_tests.bot.support import SHA, planned_shards

from qnn_migrate.bot.catalog import Catalog
from qnn_migrate.bot.model import At, RunsOn
from qnn_migrate.bot.pr.report import ReportInputError, RunShards


def test_the_merge_base_shards_are_kept_apart(catalog: Catalog) -> None:
    head = planned_shards(catalog)
    base = [
        replace(s, id=f"sim-base-{s.id}", sha="b" * 40, at=At.MERGE_BASE, runs_on=RunsOn.SIMULATOR)
        for s in head[:2]
    ]
    run = RunShards.of([*head, *base], "shards.json")
    assert (run.planned, run.at_base) == (tuple(head), tuple(base))
    assert run.every == (*head, *base)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"sha": "d" * 40}, "the shards are at 2 commit(s) of 1 PR(s)"),
        ({"pr": 8}, "the shards are at 1 commit(s) of 2 PR(s)"),
        ({"at": At.MERGE_BASE, "sha": "d" * 40}, None),  # control: a merge base's own commit
    ],
)
def test_a_list_that_is_not_one_runs_is_refused_saying_what_to_pass(
    catalog: Catalog, change: dict[str, object], words: str | None
) -> None:
    first, *rest = planned_shards(catalog)
    odd = replace(first, runs_on=RunsOn.SIMULATOR, **change)  # type: ignore[arg-type]
    if words is None:
        assert RunShards.of([odd, *rest], "shards.json").at_base == (odd,)
        return
    with pytest.raises(ReportInputError, match=re.escape(words)) as caught:
        RunShards.of([odd, *rest], "shards.json")
    assert str(caught.value).startswith("shards.json: ")
    assert "pass the list the run was dispatched with" in str(caught.value)


def test_two_merge_bases_are_not_one_run(catalog: Catalog) -> None:
    head = planned_shards(catalog)
    base = [
        replace(s, sha=sha, at=At.MERGE_BASE, runs_on=RunsOn.SIMULATOR)
        for s, sha in zip(head[:2], ("b" * 40, "c" * 40), strict=True)
    ]
    with pytest.raises(ReportInputError):
        RunShards.of([*head[2:], *base], "x")
    assert {s.sha for s in head} == {SHA}
