"""The simulator tier on ephemeral runners from actions-runner-controller (issue 27, item 7).

``.github/adopt/arc/qnn-simulator-values.yaml`` (the gha-runner-scale-set chart's values)
and ``qnn-runner.toml`` (the host config its image carries) are what docs/runners.md,
"Scale-out", tells an adopter to deploy. No cluster here: the values are checked against
``values.schema.json`` (what the bot needs of them, written for this project), their
labels against the bot config, and the host config with the bot's own reader. Each rule of
the schema has a control: the same values, broken in that one way, are refused.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from qnn_migrate_tests.bot.lab.support import ROOT
from ruamel.yaml import YAML

from qnn_migrate.bot import catalog
from qnn_migrate.bot.lab import host_config

ARC = ROOT / ".github" / "adopt" / "arc"


def values() -> dict[str, Any]:
    doc: dict[str, Any] = YAML(typ="safe").load((ARC / "qnn-simulator-values.yaml").read_text())
    return doc


def problems(doc: dict[str, Any]) -> list[str]:
    schema = json.loads((ARC / "values.schema.json").read_text())
    Draft202012Validator.check_schema(schema)
    return [e.message for e in Draft202012Validator(schema).iter_errors(doc)]


def runner(doc: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = doc["template"]["spec"]["containers"][0]
    return found


def test_the_values_give_the_bot_what_it_needs() -> None:
    doc = values()
    assert problems(doc) == []
    sim = catalog.load().simulator
    assert sim is not None and set(sim.runner_labels) <= set(doc["scaleSetLabels"])
    (config_var,) = [e for e in runner(doc)["env"] if e["name"] == "QNN_RUNNER_CONFIG"]
    assert config_var["value"] == "/etc/qnn-runner.toml"


def test_the_images_host_config_is_an_ephemeral_two_user_simulator_host() -> None:
    path = ARC / "qnn-runner.toml"
    config = host_config.loads(path.read_text(), str(path))
    assert config.simulator and config.lifetime == host_config.EPHEMERAL
    assert config.isolation == host_config.JOB_USER
    assert config.job_users is not None and config.job_users.switch == "sudo"
    uid = runner(values())["securityContext"]["runAsUser"]
    assert uid != 0, "the supervisor is the image's runner user, not root"


def _set(path: str, value: object) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = doc
        for key in parents:
            node = node[int(key)] if key.isdigit() else node[key]
        node[last] = value

    return change


@pytest.mark.parametrize(
    ("name", "breakage"),
    [
        ("docker-in-docker", _set("containerMode", {"type": "dind"})),
        ("a service account token", _set("template.spec.automountServiceAccountToken", True)),
        (
            "no setuid for sudo",
            _set("template.spec.containers.0.securityContext.allowPrivilegeEscalation", False),
        ),
        ("root as supervisor", _set("template.spec.containers.0.securityContext.runAsUser", 0)),
        ("no host config", _set("template.spec.containers.0.env", [])),
        ("an image by tag", _set("template.spec.containers.0.image", "ghcr.io/x/y:latest")),
        ("the wrong labels", _set("scaleSetLabels", ["self-hosted", "qnn"])),
        ("the default group", _set("runnerGroup", "default")),
        ("a token in the file", _set("githubConfigSecret", {"github_token": "ghp_x"})),
        ("the host's network", _set("template.spec.hostNetwork", True)),
        (
            "a privileged sidecar",
            lambda d: d["template"]["spec"]["containers"].append(
                {"name": "side", "image": "x", "securityContext": {"privileged": True}}
            ),
        ),
    ],
)
def test_each_thing_the_bot_needs_is_checked(
    name: str, breakage: Callable[[dict[str, Any]], None]
) -> None:
    doc = copy.deepcopy(values())
    breakage(doc)
    assert problems(doc), f"{name} passed the schema"


def test_the_files_the_docs_name_exist() -> None:
    docs = (ROOT / "docs" / "runners.md").read_text()
    for path in sorted(ARC.iterdir()):
        assert f".github/adopt/arc/{path.name}" in docs, path.name
