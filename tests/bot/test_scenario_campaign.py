"""The migration campaign end to end, through the CLI the workflows run and the GitHub stand-in.

A fork-shaped repository (tests/bot/campaign/support.py: the harness's lowering helper and
an example call the old API, one call is left for a person, a vendored file is excluded by
``[tool.qnn-migrate]``) goes through every path of ``bot campaign``:

* ``run`` opens the PR: one commit on main's tip holding exactly what ``qnn-migrate
  rewrite`` makes of the same checkout, and a body with the counts, the site left (linked
  at its line) and the local command; ``--dry-run`` first lists those calls and sends none;
* ``prove`` dispatches ``/qnn test auto --sim --compare base --sha <commit>``: the PR's
  shards at the campaign's commit, the merge base's at main's; the device run is played
  by a double of the lab that writes the artifacts ``run-shard`` and the recorder write
  (the compare-base scenario's helpers), and ``bot report`` writes the results comment:
  golden ``campaign-proof-identical.md`` for a rewrite that keeps the programs, and
  ``campaign-proof-changed.md`` when the recorded programs plant a change of meaning;
* main moves: the branch is recreated on it; nothing moved: nothing is written;
* a person pushes: the campaign says so once, and never moves the branch again until the
  box is ticked;
* nothing is left to rewrite: the PR is closed with a note and its branch deleted; a
  merged PR reads "merged";
* GitHub refuses the dispatch: the PR says the proof did not run and how to ask for it;
* an organization's run over three repositories, one failing: one table (golden
  ``campaign-org-summary.md``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from qnn_migrate_tests.bot.campaign.support import BY_HAND, OLD, Fork
from qnn_migrate_tests.bot.support import (
    check_golden,
    output_doc,
    program_doc,
    programs_file,
    standin_env,
)
from qnn_migrate_tests.github_standin.fixtures import (
    BOT_LOGIN,
    DEVICE_WORKFLOW,
    DEVICE_WORKFLOW_INPUTS,
    REPO,
)
from qnn_migrate_tests.github_standin.server import GitHubStandIn

from qnn_migrate.bot.campaign.marker import STOPPED, read_marker
from qnn_migrate.bot.cli.main import bot
from qnn_migrate.bot.model import At, Shard, ShardResult, Status, TestResult
from qnn_migrate.bot.pr.plan import Plan
from qnn_migrate.bot.pr.state import MARKER as RESULTS_MARKER
from qnn_migrate.cli import main as qnn_migrate_cli

BRANCH = "qnn-migrate/campaign"
CONV1D = "TestQNNFloatingPointOperator.test_qnn_backend_conv1d"
REWRITTEN = ("backends/qualcomm/tests/utils.py", "examples/qualcomm/export_conv.py")


def _env(gh: GitHubStandIn, tmp: Path, repo: str = REPO, **more: str) -> dict[str, str]:
    return standin_env(gh) | {"GITHUB_REPOSITORY": repo, "GITHUB_OUTPUT": str(tmp / "out")} | more


def _last_json(text: str) -> dict[str, Any]:
    doc = json.loads(text.strip().splitlines()[-1])
    assert isinstance(doc, dict)
    return doc


def _run(
    gh: GitHubStandIn, fork: Fork, tmp: Path, *args: str, code: int = 0, **env: str
) -> dict[str, Any]:
    ran = CliRunner().invoke(
        bot,
        [
            *("campaign", "run", "--checkout", str(fork.checkout), "--base-sha", fork.base),
            *("--jobs", "1", *args),
        ],
        env=_env(gh, tmp, fork.repo, **env),
        catch_exceptions=False,
    )
    assert ran.exit_code == code, ran.output
    return _last_json(ran.stdout)


def _prove(
    gh: GitHubStandIn, fork: Fork, tmp: Path, pr: int, sha: str, code: int = 0
) -> dict[str, Any]:
    ran = CliRunner().invoke(
        bot,
        [
            *("campaign", "prove", "--pr", str(pr), "--sha", sha),
            *("--catalog", str(fork.config)),
        ],
        env=_env(gh, tmp, fork.repo),
        catch_exceptions=False,
    )
    assert ran.exit_code == code, ran.output
    return _last_json(ran.stdout)


def _pull(gh: GitHubStandIn, number: int, repo: str = REPO) -> Any:
    return next(p for p in gh.pulls(repo) if p.number == number)


def _local_rewrite(fork: Fork, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, bytes]:
    """What `qnn-migrate rewrite` (the PR's "reproduce locally" command) makes of a copy of
    the checkout: the files it changed, path -> bytes."""
    copy = tmp / "local"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(fork.checkout, copy)
    before = {p: p.read_bytes() for p in copy.rglob("*") if p.is_file()}
    monkeypatch.chdir(copy)
    ran = CliRunner().invoke(
        qnn_migrate_cli,
        [
            *("rewrite", "--target", "qnn-passes", "--flow", "canonical"),
            *("--no-cache", "-j", "1", "--", "."),
        ],
        catch_exceptions=False,
    )
    monkeypatch.undo()
    assert ran.exit_code == 0, ran.output
    return {
        p.relative_to(copy).as_posix(): p.read_bytes()
        for p, old in before.items()
        if p.read_bytes() != old
    }


# ------------------------------------------------------------------ the lab, a double


def lab_artifacts(root: Path, shards: list[Shard], *, planted: bool) -> Path:
    """A DOUBLE of the device lab: each shard's result.json and programs.json as run-shard and
    the recorder write them, every test passing. The programs are the same at the
    campaign's commit and at its merge base (a rewrite that keeps the meaning), unless
    ``planted``: then conv1d's program at the campaign's commit has another payload and a
    weight left behind as an input (the recorded shape of a change of meaning)."""
    shutil.rmtree(root, ignore_errors=True)
    for shard in shards:
        folder = root / f"qnn-result-{shard.id}"
        (folder / "attempt-1").mkdir(parents=True)
        result = ShardResult.complete(
            shard, [TestResult(t, Status.PASS, 2.0) for t in shard.tests], device="x86-sim-1"
        )
        (folder / "result.json").write_text(json.dumps(result.to_dict()))
        recorded = {}
        for test in shard.tests:
            changed = planted and test == CONV1D and shard.at is At.HEAD
            inputs: list[list[object]] = [["x", "float32", [1, 3, 16]]]
            if changed:
                inputs.append(["b__frozen_param0", "float32", [3]])
            recorded[test] = [
                program_doc(
                    inputs=inputs,
                    payloads=(b"\x07" * (1792 if changed else 2048),),
                    outputs=[output_doc(test)],
                )
            ]
        (folder / "attempt-1" / "programs.json").write_text(json.dumps(programs_file(recorded)))
    return root


def _report(gh: GitHubStandIn, fork: Fork, tmp: Path, planted: bool) -> str:
    (run,) = [r for r in gh.runs(fork.repo) if r.workflow == DEVICE_WORKFLOW][-1:]
    shards_file = tmp / "shards.json"
    shards_file.write_text(run.inputs["shards"])
    shards = [p.shard for p in Plan.from_json(run.inputs["shards"]).shards]
    results = lab_artifacts(tmp / "results", shards, planted=planted)
    (tmp / "baselines").mkdir(exist_ok=True)
    ran = CliRunner().invoke(
        bot,
        [
            *("report", "--shards-file", str(shards_file), "--results-dir", str(results)),
            *("--baseline-dir", str(tmp / "baselines"), "--catalog", str(fork.config)),
            *("--comment-id", run.inputs["comment_id"]),
        ],
        env=_env(gh, tmp, fork.repo),
        catch_exceptions=False,
    )
    assert ran.exit_code == 0, ran.output
    pr = int(run.inputs["pr"])
    (comment,) = [
        c for c in gh.comments(pr, fork.repo) if c.author == BOT_LOGIN and RESULTS_MARKER in c.body
    ]
    return comment.body


def _by_role(text: str, roles: dict[str, str]) -> str:
    """``text`` with each SHA in ``roles`` (full or as the 12-digit short form) named by role."""
    assert next(iter(roles)) in text  # the comment names the commit it reports on
    for sha, role in roles.items():
        text = text.replace(sha, role).replace(sha[:12], role)
    return text


# ----------------------------------------------------------------------- the scenario


@pytest.fixture
def fork(github_standin: GitHubStandIn, tmp_path: Path) -> Fork:
    return Fork(github_standin, tmp_path / "checkout", REPO)


def test_open_prove_update_and_leave_a_persons_work_alone(
    github_standin: GitHubStandIn, fork: Fork, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gh = github_standin
    main_at_start = fork.base

    # --dry-run: every call listed, no write sent.
    ran = CliRunner().invoke(
        bot,
        [
            *("campaign", "run", "--checkout", str(fork.checkout), "--base-sha", fork.base),
            *("--jobs", "1", "--dry-run"),
        ],
        env=_env(gh, tmp_path),
        catch_exceptions=False,
    )
    assert ran.exit_code == 0, ran.output
    assert gh.writes() == []
    listed = [line.split()[:2] for line in ran.stderr.splitlines() if line.startswith(("GET", "P"))]
    assert ["POST", f"/repos/{REPO}/pulls"] in listed
    assert _last_json(ran.stdout)["state"] == "opened"

    # Open: one commit on main's tip with exactly what the local command makes.
    opened = _run(gh, fork, tmp_path)
    assert (opened["state"], opened["action"], opened["prove"]) == ("opened", "open", True)
    pr, sha = opened["pr"], opened["commit"]
    pull = _pull(gh, pr)
    assert (pull.author, pull.head_ref, pull.base_ref, pull.head_sha) == (
        BOT_LOGIN,
        BRANCH,
        "main",
        sha,
    )
    on_branch = gh.branch_files(BRANCH)
    on_main = gh.branch_files("main")
    changed = {p: d for p, d in on_branch.items() if on_main.get(p) != d}
    assert sorted(changed) == list(REWRITTEN)
    assert changed == _local_rewrite(fork, tmp_path, monkeypatch)
    assert OLD.encode() in on_branch["third_party/vendored.py"]  # excluded by the config
    assert on_branch["examples/qualcomm/by_hand.py"] == BY_HAND.encode()  # left for a person
    assert gh.branch_log(BRANCH)[1] == "the fork"  # one commit, on main's tip
    body = pull.body
    assert read_marker(body) is not None and read_marker(body).head == sha  # type: ignore[union-attr]
    assert "**2 calls rewritten in 2 files; 1 site left for a person**" in body
    assert (
        f"- [ ] [`examples/qualcomm/by_hand.py:5`](https://github.com/{REPO}/blob/{main_at_start}"
        "/examples/qualcomm/by_hand.py#L5): QM101 "
    ) in body
    assert f"git checkout {main_at_start}\nqnn-migrate rewrite --diff --target qnn-passes" in body
    assert "Its link appears here once the run is dispatched." in body
    assert (tmp_path / "out").read_text().splitlines()[-4:] == [
        "state=opened",
        "prove=true",
        f"pr={pr}",
        f"sha={sha}",
    ]

    # Prove: the matrices the rewritten files select, at the commit and at the merge base.
    proved = _prove(gh, fork, tmp_path, pr, sha)
    assert proved["action"] == "dispatched", proved
    (run,) = gh.runs()
    assert set(run.inputs) == DEVICE_WORKFLOW_INPUTS and run.inputs["sha"] == sha
    shards = [p.shard for p in Plan.from_json(run.inputs["shards"]).shards]
    assert {(s.matrix, s.at, s.sha) for s in shards} == {
        ("lowering_helpers", At.HEAD, sha),
        ("lowering_helpers", At.MERGE_BASE, main_at_start),
    }
    request = next(c for c in gh.comments(pr) if c.id == int(run.inputs["comment_id"]))
    assert request.author == BOT_LOGIN
    assert f"/qnn test auto --sim --compare base --sha {sha}" in request.body
    body = _pull(gh, pr).body
    results_url = proved["results_url"]
    assert results_url and f"[results comment]({results_url})" in body
    assert "Its link appears here" not in body

    identical = _report(gh, fork, tmp_path, planted=False)
    assert "4 identical to the merge base" in identical and "CHANGED" not in identical
    # The commits' SHAs follow the rewritten files' bytes: the golden names them by role.
    roles = {sha: "<campaign-commit>", main_at_start: "<merge-base>"}
    check_golden("campaign-proof-identical.md", _by_role(identical, roles))
    planted = _report(gh, fork, tmp_path, planted=True)
    assert "3 identical to the merge base" in planted and "1 changed" in planted
    assert f"| SM8650 (x86 simulator) | `{CONV1D}` | 🔶 CHANGED |" in planted
    check_golden("campaign-proof-changed.md", _by_role(planted, roles))

    # Nothing moved: nothing is written.
    writes = len(gh.writes())
    again = _run(gh, fork, tmp_path)
    assert (again["state"], again["prove"]) == ("unchanged", False)
    assert len(gh.writes()) == writes

    # Main moves (and adds a call to a rewritten file): the branch is recreated on it.
    grown = (fork.checkout / "examples/qualcomm/export_conv.py").read_text() + (
        f"\n\ndef again(specs):\n    return {OLD}(Conv().eval(), (torch.randn(1, 3, 8),), specs)\n"
    )
    new_main = fork.move_main(
        {"examples/qualcomm/export_conv.py": grown.encode(), "README.md": b"# moved\n"},
        "main moves",
    )
    updated = _run(gh, fork, tmp_path)
    assert (updated["state"], updated["action"], updated["prove"]) == ("updated", "recreate", True)
    assert updated["pr"] == pr and updated["commit"] != sha
    assert gh.branch_log(BRANCH)[1:] == gh.branch_log("main")  # recreated on main's new tip
    assert gh.requests_to("PATCH", "/git/refs/heads/")[-1].body == {
        "sha": updated["commit"],
        "force": True,
    }
    body = _pull(gh, pr).body
    assert read_marker(body) is not None and read_marker(body).base == new_main  # type: ignore[union-attr]
    assert "**3 calls rewritten in 2 files" in body
    assert "Its link appears here once the run is dispatched." in body  # a new proof to run
    sha = updated["commit"]

    # A person pushes to the branch: the campaign says so once and stops.
    by_hand = gh.commit_on_branch(
        BRANCH, {"examples/qualcomm/by_hand.py": b"# rewritten by hand\n"}, "by hand"
    )
    stopped = _run(gh, fork, tmp_path)
    assert (stopped["state"], stopped["action"], stopped["prove"]) == ("unchanged", "stop", False)
    assert "someone pushed" in stopped["reason"]
    body = _pull(gh, pr).body
    assert body.count(STOPPED) == 1 and "The campaign stopped updating this PR" in body
    assert gh.branch_files(BRANCH)["examples/qualcomm/by_hand.py"] == b"# rewritten by hand\n"
    skipped = _prove(gh, fork, tmp_path, pr, sha)  # the old commit: not the PR's head any more
    assert skipped["action"] == "skipped" and len(gh.runs()) == 1
    writes = len(gh.writes())
    fork.move_main({"README.md": b"# moved again\n"}, "main moves again")
    writes = len(gh.writes())
    still = _run(gh, fork, tmp_path)
    assert still["action"] == "stop" and len(gh.writes()) == writes  # said once; branch kept
    assert gh.repos[REPO].refs[f"heads/{BRANCH}"] == by_hand

    # The box is ticked: the next run recreates the branch, dropping the pushed commit.
    _pull(gh, pr).body = body.replace(
        "- [ ] <!-- qnn-campaign:rebase -->", "- [x] <!-- qnn-campaign:rebase -->"
    )
    redone = _run(gh, fork, tmp_path)
    assert (redone["state"], redone["action"]) == ("updated", "recreate")
    assert gh.branch_files(BRANCH)["examples/qualcomm/by_hand.py"] == BY_HAND.encode()
    assert STOPPED not in _pull(gh, pr).body

    # Nothing left to rewrite (main took the rewrite): the PR is closed, its branch deleted.
    rewritten = gh.branch_files(BRANCH)
    fork.move_main({p: rewritten[p] for p in REWRITTEN}, "migrated on main")
    closed = _run(gh, fork, tmp_path)
    assert (closed["state"], closed["action"], closed["prove"]) == ("nothing to do", "close", False)
    pull = _pull(gh, pr)
    assert pull.state == "closed" and not pull.merged
    assert "Closed by the campaign: nothing is left to rewrite" in pull.body
    assert read_marker(pull.body).closed  # type: ignore[union-attr]
    assert f"heads/{BRANCH}" not in gh.repos[REPO].refs
    quiet = _run(gh, fork, tmp_path)
    assert (quiet["state"], quiet["action"]) == ("nothing to do", "nothing")
    assert not gh.violations


def test_a_merged_pr_reads_merged(
    github_standin: GitHubStandIn, fork: Fork, tmp_path: Path
) -> None:
    gh = github_standin
    opened = _run(gh, fork, tmp_path)
    gh.merge_pull(opened["pr"])
    fork.move_main(gh.branch_files("main"), "checked out after the merge")
    merged = _run(gh, fork, tmp_path)
    assert (merged["state"], merged["pr"]) == ("merged", opened["pr"])
    # Control: the same run before the merge keeps the open PR.
    assert opened["state"] == "opened"


def test_a_refused_dispatch_says_the_proof_did_not_run(
    github_standin: GitHubStandIn, fork: Fork, tmp_path: Path
) -> None:
    gh = github_standin
    opened = _run(gh, fork, tmp_path)
    gh.fail_next("POST", r"/actions/workflows/.*/dispatches$", 500, message="Server Error")
    failed = _prove(gh, fork, tmp_path, opened["pr"], opened["commit"], code=1)
    assert failed["action"] == "failed" and "refused to start" in failed["reason"]
    assert gh.runs() == []
    body = _pull(gh, opened["pr"]).body
    command = f"/qnn test auto --sim --compare base --sha {opened['commit']}"
    assert "⚠️ Not run: " in body and f"A maintainer can run it by commenting `{command}`" in body
    results = next(c for c in gh.comments(opened["pr"]) if RESULTS_MARKER in c.body)
    assert "did not start" in results.body
    request = next(c for c in gh.comments(opened["pr"]) if "does this migration keep" in c.body)
    assert gh.reactions(request.id).get("confused") == [BOT_LOGIN]
    # Control: once GitHub takes it, the same command dispatches.
    again = _prove(gh, fork, tmp_path, opened["pr"], opened["commit"])
    assert again["action"] == "dispatched" and len(gh.runs()) == 1


def test_an_organizations_run_over_three_repositories_one_failing(
    github_standin: GitHubStandIn, tmp_path: Path
) -> None:
    """As the organization's workflow runs it: one job per repository with the App's
    installation token (a bot login of its own), then one summary of their results."""
    gh = github_standin
    app_login, app_token = "qnn-campaign[bot]", "ghs_standin_installation"
    gh.add_token(app_token, app_login, "Bot")
    names = ["qnn-lab/alpha", "qnn-lab/beta", "qnn-lab/gamma"]
    forks = {}
    for name in names:
        gh.add_repo(name)
        gh.add_workflow(DEVICE_WORKFLOW, set(DEVICE_WORKFLOW_INPUTS), name)
        forks[name] = Fork(gh, tmp_path / name, name)
    # gamma's target is --target executorch, from its own [tool.qnn-migrate].
    pyproject = (forks[names[2]].checkout / "pyproject.toml").read_text()
    forks[names[2]].move_main(
        {
            "pyproject.toml": pyproject.replace(
                "[tool.qnn-migrate]\n", '[tool.qnn-migrate]\ntarget = "executorch"\n'
            ).encode()
        },
        "the executorch target",
    )
    # beta: GitHub fails the tree it writes; gamma: GitHub refuses to start its proof.
    gh.fail_next("POST", r"^/repos/qnn-lab/beta/git/trees$", 500, count=10)
    gh.fail_next("POST", r"^/repos/qnn-lab/gamma/actions/workflows/.*/dispatches$", 500)
    # The job's environment: the App's token and login; GITHUB_REPOSITORY is the automation
    # repository's (Actions does not let a step change it), so each command names --repo.
    env = standin_env(gh) | {
        "GITHUB_TOKEN": app_token,
        "QNN_BOT_LOGIN": app_login,
        "GITHUB_REPOSITORY": "qnn-lab/automation",
        "GITHUB_OUTPUT": str(tmp_path / "out"),
    }
    results = tmp_path / "results"
    for index, (name, fork) in enumerate(forks.items()):
        folder = results / f"qnn-campaign-{index}"
        ran = CliRunner().invoke(
            bot,
            [
                *("campaign", "run", "--repo", name, "--checkout", str(fork.checkout)),
                *(
                    "--base-sha",
                    fork.base,
                    "--jobs",
                    "1",
                    "--json-out",
                    str(folder / "campaign.json"),
                ),
            ],
            env=env,
            catch_exceptions=False,
        )
        assert ran.exit_code == (1 if name == names[1] else 0), ran.output
        doc = json.loads((folder / "campaign.json").read_text())
        if not doc["prove"]:
            continue
        ran = CliRunner().invoke(
            bot,
            [
                *("campaign", "prove", "--repo", name, "--pr", str(doc["pr"])),
                *("--sha", doc["commit"], "--catalog", str(fork.config)),
                *("--json-out", str(folder / "proof.json")),
            ],
            env=env,
            catch_exceptions=False,
        )
        assert ran.exit_code == (1 if name == names[2] else 0), ran.output
    assert [len(gh.runs(name)) for name in names] == [1, 0, 0]
    gamma = next(p for p in gh.pulls(names[2]))
    assert gamma.author == app_login
    assert "--target executorch --flow canonical" in (gamma.body or "")
    assert (
        "def _lower_to_qnn("
        in gh.branch_files(BRANCH, names[2])["backends/qualcomm/tests/utils.py"].decode()
    )
    ran = CliRunner().invoke(
        bot,
        ["campaign", "summary", str(results), "--expect-json", json.dumps(names)],
        catch_exceptions=False,
    )
    assert ran.exit_code == 0, ran.output
    table = ran.stdout
    assert (
        "| `qnn-lab/alpha` | [#1](https://github.com/qnn-lab/alpha/pull/1) | opened | [dispatched]("
        in table
    )
    assert (
        "| `qnn-lab/beta` | — | ❌ failed | — | GitHub API POST git/trees failed with HTTP 500"
        in table
    )
    assert (
        "| `qnn-lab/gamma` | [#1](https://github.com/qnn-lab/gamma/pull/1) | opened | ❌ [failed]("
        in table
    )
    check_golden("campaign-org-summary.md", table)
