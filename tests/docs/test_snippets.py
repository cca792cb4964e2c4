"""The YAML a user copies: the README's pre-commit snippet, every yaml block of the docs, and
the adoption templates load as YAML and use the README's placeholders, ``<owner>`` and
``<sha>`` (707dc17's templates hard-coded an owner and "# qnn-migrate v0.1.0", a release that
does not exist, and the snippet lacked ``repos:``)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from qnn_migrate.bot import doctor

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = sorted((ROOT / ".github" / "adopt" / "workflows").glob("*.yml"))
CAMPAIGN_TEMPLATES = sorted((ROOT / ".github" / "adopt" / "campaign").glob("*.yml"))
PLACEHOLDERS = {"<owner>", "<sha>"}
YAML_BLOCK = re.compile(r"^```yaml\n(.*?)^```", re.S | re.M)


def _yaml_blocks(name: str) -> list[str]:
    return YAML_BLOCK.findall((ROOT / name).read_text(encoding="utf-8"))


def test_the_readme_uses_these_placeholders() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "`<owner>`: the GitHub owner" in readme and "`<sha>`: a full commit SHA" in readme


@pytest.mark.parametrize(
    "name", ["README.md", "docs/rewrite.md", "docs/adopting.md", "docs/bot.md"]
)
def test_every_yaml_block_of_the_docs_loads(name: str) -> None:
    for block in _yaml_blocks(name):
        yaml.safe_load(block)


@pytest.mark.parametrize("name", ["README.md", "docs/rewrite.md"])
def test_the_pre_commit_snippet_is_a_whole_config(name: str) -> None:
    (snippet,) = [b for b in _yaml_blocks(name) if "rev:" in b]
    config = yaml.safe_load(snippet)
    (repo,) = config["repos"]
    assert repo["repo"] == "https://github.com/<owner>/qnn-migrate" and repo["rev"] == "<sha>"
    hooks = {h["id"] for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert {h["id"] for h in repo["hooks"]} <= hooks


@pytest.mark.parametrize("template", TEMPLATES + CAMPAIGN_TEMPLATES, ids=lambda p: p.name)
def test_each_adoption_template_loads_and_uses_the_readmes_placeholders(template: Path) -> None:
    text = template.read_text(encoding="utf-8")
    assert isinstance(yaml.safe_load(text), dict)
    assert set(re.findall(r"<[a-z]+>", text)) == PLACEHOLDERS
    for gone in ("0" * 40, "qnn-lab", "v0.1.0"):
        assert gone not in text, gone


def test_doctor_fails_a_template_copied_without_its_placeholders_filled(tmp_path: Path) -> None:
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    for template in TEMPLATES:
        shutil.copy(template, workflows / template.name)
    checks, _ = doctor.local_checks(tmp_path, "<owner>/qnn-migrate")
    (pinned,) = [c for c in checks if c.name == "pinned version"]
    assert pinned.ok is False and "'<sha>'" in pinned.detail
