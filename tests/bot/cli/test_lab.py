"""bot/cli/lab.py through click: run-shard with a host config, device check/list, device-matrix."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from click.testing import CliRunner

from qnn_migrate.bot import catalog as catalog_mod
from qnn_migrate.bot.cli import lab as device_cli
from qnn_migrate.bot.lab import quarantine
from qnn_migrate.bot.model import Shard, ShardResult, Status
from qnn_migrate.bot.pr import plan as plan_mod

from .conftest import FP, Lab


def host_toml(lab: Lab, **extra: str) -> Path:
    lines = [
        f'executorch_dir = "{lab.checkout}"',
        f'python = "{lab.host().python}"',
        f'state_dir = "{lab.state_dir}"',
        "lock_wait_s = 0.5",
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


CATALOG = catalog_mod.load()
WITH_BAD_LABELS = replace(
    CATALOG,
    socs={
        "SM8650": CATALOG.socs["SM8650"],
        "SM8550": replace(CATALOG.socs["SM8550"], runner_labels=("self-hosted", "qnn", "other")),
    },
)


def _shard(**kw: object) -> Shard:
    base: dict[str, object] = {
        "id": "sm8650-m-1",
        "matrix": "tests",
        "soc": "SM8650",
        "backend": "htp",
        "seed": 1126,
        "tests": (f"{FP}.test_qnn_backend_abs",),
        "sha": "a" * 40,
        "pr": 7,
    }
    return Shard(**(base | kw))  # type: ignore[arg-type]


def test_device_matrix_for_good_shards() -> None:
    m = plan_mod.device_matrix([_shard(), _shard(id="sm8650-m-2")], CATALOG, sha="a" * 40, pr=7)
    assert [(e["id"], e["soc"]) for e in m["include"]] == [
        ("sm8650-m-1", "sm8650"),
        ("sm8650-m-2", "sm8650"),
    ]
    assert m["include"][0]["shard"]["tests"] == [f"{FP}.test_qnn_backend_abs"]


def test_device_matrix_refuses_what_the_dispatcher_must_not_choose() -> None:
    bad = [
        _shard(sha="b" * 40),
        _shard(id="x", pr=8),
        _shard(id="Bad Id/..", device="PHONE_A", executorch_dir="/etc"),
        _shard(id="y", soc="SM8550"),
        _shard(id="z", soc="SM8750"),
        _shard(id="x"),
    ]
    try:
        plan_mod.device_matrix(bad, WITH_BAD_LABELS, sha="a" * 40, pr=7)
    except ValueError as exc:
        text = str(exc)
    else:
        raise AssertionError("accepted")
    for needle in (
        "pinned to bbbbbbbbbbbb",
        "for PR 8, not 7",
        "ids are lower-case",
        "executorch_dir, device belong to the runner host",
        "SoC SM8550 has runner_labels ['self-hosted', 'qnn', 'other']",
        "SoC SM8750 is not in the catalog",
        "shard ids must be unique",
    ):
        assert needle in text, needle


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
